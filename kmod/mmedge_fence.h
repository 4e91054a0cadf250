/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mmedge: the channels' dma-fences.
 */
#ifndef _MMEDGE_FENCE_H
#define _MMEDGE_FENCE_H

#include <linux/dma-buf.h>
#include <linux/dma-fence.h>
#include <linux/spinlock.h>

struct sync_file;

/**
 * struct mmedge_fence - a fence of a channel's timeline
 * @base: the dma_fence.
 * @lock: its lock, owned by the fence: a fence lives on in sync_files
 *	and reservation objects after its channel and file are gone.
 *
 * An initialised fence holds a reference on the module, dropped by its
 * release, so the fence ops stay in memory while any fence lives.
 */
struct mmedge_fence {
	struct dma_fence base;
	/* The fence's own lock (dma_fence.lock). */
	spinlock_t lock;
};

struct mmedge_fence *mmedge_fence_alloc(gfp_t gfp);
struct dma_fence *mmedge_fence_init(struct mmedge_fence *f, u64 context,
				    u64 seqno);
long mmedge_fence_wait(struct dma_buf *dst, bool dst_written,
		       struct dma_buf *src, long timeout);
int mmedge_fence_publish(struct dma_buf *dst, bool dst_written,
			 struct dma_buf *src, u64 context, u64 *seqno,
			 struct mmedge_fence **fp, struct dma_fence **fence,
			 struct sync_file **sync);
struct dma_fence *mmedge_fence_rearm(struct dma_buf *buf, u64 context,
				     u64 *seqno, struct mmedge_fence **fp);

#endif /* _MMEDGE_FENCE_H */

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mmedge: the channels' dma-fences.
 */
#ifndef _MMEDGE_FENCE_H
#define _MMEDGE_FENCE_H

#include <linux/dma-buf.h>
#include <linux/dma-fence.h>
#include <linux/spinlock.h>

struct mmedge_chan;
struct mmedge_qb;
struct sync_file;
struct work_struct;

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
int mmedge_fence_publish(struct mmedge_chan *ch, struct mmedge_qb *qb,
			 bool dst_written, struct mmedge_fence **fp,
			 struct sync_file **sync);
void mmedge_chan_rearm_work(struct work_struct *work);

#endif /* _MMEDGE_FENCE_H */

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mmedge: the dmaengine back end of the DMA engine.
 */
#ifndef _MMEDGE_DMAENG_H
#define _MMEDGE_DMAENG_H

#include <linux/atomic.h>
#include <linux/completion.h>
#include <linux/dma-buf.h>
#include <linux/dmaengine.h>

/**
 * struct mmedge_dmaeng - a dmaengine channel that moves segments
 * @chan: the "memcpy" channel named in the device tree, or NULL (then
 *	the soft engine's CPU copies are used).
 * @bounce: where a virtual source's segment is produced before the DMA
 *	engine moves it (coherent, MMEDGE_SEGMENT_MAX bytes).
 * @bounce_dma: its DMA address for @chan.
 * @bounce_size: its size.
 * @pending: descriptors of the current segment not completed yet.
 * @done: completed when @pending drops to zero.
 */
struct mmedge_dmaeng {
	struct dma_chan *chan;
	void *bounce;
	dma_addr_t bounce_dma;
	size_t bounce_size;
	atomic_t pending;
	struct completion done;
};

int mmedge_dmaeng_init(struct mmedge_dmaeng *de, struct device *dev,
		       size_t bounce_size);
void mmedge_dmaeng_fini(struct mmedge_dmaeng *de);
struct device *mmedge_dmaeng_dev(struct mmedge_dmaeng *de);
int mmedge_dmaeng_copy(struct mmedge_dmaeng *de, struct sg_table *dst,
		       u64 dst_off, u32 len);

#endif /* _MMEDGE_DMAENG_H */

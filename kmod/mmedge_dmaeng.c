// SPDX-License-Identifier: GPL-2.0
/*
 * mmedge: the dmaengine back end.
 *
 * On a board whose mmedge node names a memory-to-memory DMA channel
 * ("dmas = <&dmac N>; dma-names = "memcpy";"), each segment the arbiter
 * picks is moved by that channel instead of the CPU: the source's bytes
 * are produced into a coherent bounce buffer and the DMA engine copies
 * them into the queued buffer, mapped for the DMA controller through a
 * dma-buf attachment. The arbiter in front is the same; the bus is real,
 * so the soft engine's bandwidth model is not applied. One segment is in
 * flight at a time, which is what the arbiter's bounds assume.
 */

#include <linux/dma-mapping.h>
#include <linux/dmaengine.h>
#include <linux/scatterlist.h>

#include "mmedge_dmaeng.h"
#include "mmedge_uapi.h"

#define MMEDGE_DMAENG_TIMEOUT_MS	1000

/**
 * mmedge_dmaeng_init() - find the instance's memcpy DMA channel
 * @de: filled in
 * @dev: the mmedge platform device
 * @bounce_size: bytes of the bounce buffer (the largest segment)
 *
 * Return: 0 with @de->chan set, 0 with @de->chan NULL when the device
 * has no usable channel (the soft engine is used), -EPROBE_DEFER while
 * the DMA controller is not there yet, or -ENOMEM.
 */
int mmedge_dmaeng_init(struct mmedge_dmaeng *de, struct device *dev,
		       size_t bounce_size)
{
	struct dma_chan *chan;

	de->chan = NULL;
	init_completion(&de->done);
	if (!dev->of_node)
		return 0;

	chan = dma_request_chan(dev, "memcpy");
	if (IS_ERR(chan)) {
		if (PTR_ERR(chan) == -EPROBE_DEFER)
			return -EPROBE_DEFER;
		return 0;
	}
	if (!dma_has_cap(DMA_MEMCPY, chan->device->cap_mask)) {
		dev_warn(dev, "DMA channel \"memcpy\" cannot copy memory; using the soft engine\n");
		dma_release_channel(chan);
		return 0;
	}
	de->bounce = dma_alloc_coherent(chan->device->dev, bounce_size,
					&de->bounce_dma, GFP_KERNEL);
	if (!de->bounce) {
		dma_release_channel(chan);
		return -ENOMEM;
	}
	de->bounce_size = bounce_size;
	de->chan = chan;
	dev_info(dev, "DMA engine: %s\n", dma_chan_name(chan));
	return 0;
}

void mmedge_dmaeng_fini(struct mmedge_dmaeng *de)
{
	if (!de->chan)
		return;
	dmaengine_terminate_sync(de->chan);
	dma_free_coherent(de->chan->device->dev, de->bounce_size, de->bounce,
			  de->bounce_dma);
	dma_release_channel(de->chan);
	de->chan = NULL;
}

/* The device buffers must be mapped for, or NULL without a channel. */
struct device *mmedge_dmaeng_dev(struct mmedge_dmaeng *de)
{
	return de->chan ? de->chan->device->dev : NULL;
}

static void mmedge_dmaeng_callback(void *arg)
{
	struct mmedge_dmaeng *de = arg;

	if (atomic_dec_and_test(&de->pending))
		complete(&de->done);
}

/**
 * mmedge_dmaeng_copy() - DMA @len bytes from the bounce buffer
 * @de: the back end
 * @dst: the destination, DMA-mapped for the channel's device
 * @dst_off: byte offset in @dst
 * @len: bytes, at most the bounce buffer's size
 *
 * Splits the copy at the destination's DMA segments, submits one
 * descriptor per piece and waits until all have completed.
 *
 * Return: 0, -EINVAL for a range outside @dst, -ENOMEM if a descriptor
 * cannot be prepared, -EIO if submission fails, -ETIMEDOUT.
 */
int mmedge_dmaeng_copy(struct mmedge_dmaeng *de, struct sg_table *dst,
		       u64 dst_off, u32 len)
{
	struct dma_async_tx_descriptor *tx;
	struct scatterlist *sg;
	u64 seg_start = 0, done = 0;
	unsigned int i;
	int ret = 0;

	if (len > de->bounce_size)
		return -EINVAL;
	reinit_completion(&de->done);
	atomic_set(&de->pending, 1);	/* a bias, dropped after submitting */
	for_each_sgtable_dma_sg(dst, sg, i) {
		struct mmedge_range r;

		r = mmedge_range_clip(seg_start, sg_dma_len(sg), dst_off, len);
		seg_start += sg_dma_len(sg);
		if (!r.len)
			continue;
		tx = dmaengine_prep_dma_memcpy(de->chan,
					       sg_dma_address(sg) + r.off,
					       de->bounce_dma + done, r.len,
					       DMA_PREP_INTERRUPT | DMA_CTRL_ACK);
		if (!tx) {
			ret = -ENOMEM;
			break;
		}
		tx->callback = mmedge_dmaeng_callback;
		tx->callback_param = de;
		atomic_inc(&de->pending);
		if (dma_submit_error(dmaengine_submit(tx))) {
			atomic_dec(&de->pending);
			ret = -EIO;
			break;
		}
		done += r.len;
	}
	if (!ret && done != len)
		ret = -EINVAL;
	if (ret) {
		dmaengine_terminate_sync(de->chan);
		return ret;
	}

	dma_async_issue_pending(de->chan);
	if (atomic_dec_and_test(&de->pending))
		complete(&de->done);
	if (!wait_for_completion_timeout(&de->done,
					 msecs_to_jiffies(MMEDGE_DMAENG_TIMEOUT_MS))) {
		dmaengine_terminate_sync(de->chan);
		return -ETIMEDOUT;
	}
	return 0;
}

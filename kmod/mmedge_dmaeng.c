// SPDX-License-Identifier: GPL-2.0
/*
 * mmedge: the dmaengine back end.
 *
 * On a board whose mmedge node names a memory-to-memory DMA channel
 * ("dmas = <&dmac N>; dma-names = "memcpy";"), each segment the arbiter
 * picks is moved by that channel instead of the CPU. The queued buffer is
 * mapped for the DMA controller through a dma-buf attachment. A copy
 * job's source buffer is mapped the same way and the DMA engine copies
 * from it straight into the destination; a source the CPU generates (a
 * capture channel's camera pattern or signal) is produced into a
 * coherent bounce buffer, which the DMA engine copies from. The arbiter
 * in front is the same; the bus is real, so the soft engine's bandwidth
 * model is not applied.
 *
 * Segments are asynchronous: the engine thread submits a segment into
 * one of MMEDGE_DMAENG_SLOTS slots (a ring, in submission order) and
 * moves on. The DMA callback, in the controller's completion context,
 * only stamps the slot with the counter, marks it done under @lock and
 * wakes the engine, which hands the done slots back in ring order
 * (mmedge_dmaeng_reap()) and completes the job of a job's last segment
 * through the soft engine's completion path, fences included. The
 * callback never takes the engine's lock and nobody waits while holding
 * @lock, so nothing the callback needs is held across a wait.
 */

#include <linux/dma-mapping.h>
#include <linux/dmaengine.h>
#include <linux/ktime.h>
#include <linux/scatterlist.h>

#include "mmedge_dmaeng.h"

static struct mmedge_dmaeng_slot *mmedge_dmaeng_at(struct mmedge_dmaeng *de,
						   unsigned int i)
{
	return &de->slot[(de->head + i) % MMEDGE_DMAENG_SLOTS];
}

static void mmedge_dmaeng_free_bounces(struct mmedge_dmaeng *de)
{
	unsigned int i;

	for (i = 0; i < MMEDGE_DMAENG_SLOTS; i++) {
		struct mmedge_dmaeng_slot *s = &de->slot[i];

		if (s->bounce)
			dma_free_coherent(de->chan->device->dev, de->bounce_size,
					  s->bounce, s->bounce_dma);
		s->bounce = NULL;
	}
}

/**
 * mmedge_dmaeng_init() - find the instance's memcpy DMA channel
 * @de: filled in
 * @dev: the mmedge platform device
 * @bounce_size: bytes of each bounce buffer (the largest segment)
 * @stamp: reads the counter completions are stamped with (any context)
 * @notify: called after a segment completed (any context)
 * @arg: for @stamp and @notify
 *
 * Return: 0 with @de->chan set, 0 with @de->chan NULL when the device
 * has no usable channel (the soft engine is used), -EPROBE_DEFER while
 * the DMA controller is not there yet, or -ENOMEM.
 */
int mmedge_dmaeng_init(struct mmedge_dmaeng *de, struct device *dev,
		       size_t bounce_size, u64 (*stamp)(void *arg),
		       void (*notify)(void *arg), void *arg)
{
	struct dma_chan *chan;
	unsigned int i;

	memset(de, 0, sizeof(*de));
	spin_lock_init(&de->lock);
	init_waitqueue_head(&de->wq);
	de->stamp = stamp;
	de->notify = notify;
	de->arg = arg;
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
	de->chan = chan;
	de->bounce_size = bounce_size;
	for (i = 0; i < MMEDGE_DMAENG_SLOTS; i++) {
		struct mmedge_dmaeng_slot *s = &de->slot[i];

		s->de = de;
		s->bounce = dma_alloc_coherent(chan->device->dev, bounce_size,
					       &s->bounce_dma, GFP_KERNEL);
		if (!s->bounce) {
			mmedge_dmaeng_free_bounces(de);
			dma_release_channel(chan);
			de->chan = NULL;
			return -ENOMEM;
		}
	}
	dev_info(dev, "DMA engine: %s, %u segments in flight\n",
		 dma_chan_name(chan), MMEDGE_DMAENG_SLOTS);
	return 0;
}

/**
 * mmedge_dmaeng_fini() - stop the channel and release it
 * @de: the back end; every slot has been handed back or abandoned
 */
void mmedge_dmaeng_fini(struct mmedge_dmaeng *de)
{
	if (!de->chan)
		return;
	dmaengine_terminate_sync(de->chan);
	mmedge_dmaeng_free_bounces(de);
	dma_release_channel(de->chan);
	de->chan = NULL;
}

/* The device buffers must be mapped for, or NULL without a channel. */
struct device *mmedge_dmaeng_dev(struct mmedge_dmaeng *de)
{
	return de->chan ? de->chan->device->dev : NULL;
}

/* Slot @s completed (its last descriptor, or an abort). */
static void mmedge_dmaeng_slot_done(struct mmedge_dmaeng *de,
				    struct mmedge_dmaeng_slot *s, u64 raw)
{
	lockdep_assert_held(&de->lock);
	s->state = MMEDGE_DMAENG_DONE;
	s->done_raw = raw;
	de->inflight--;
	de->starved = false;
	if (s->error) {
		de->errors++;
	} else {
		de->segments++;
		de->bytes += s->len;
		if (s->direct)
			de->direct_segments++;
	}
}

/*
 * The controller's completion context (a tasklet or an interrupt): stamp,
 * mark done, wake. No waiting and no lock but @de->lock.
 */
static void mmedge_dmaeng_callback(void *arg,
				   const struct dmaengine_result *res)
{
	struct mmedge_dmaeng_slot *s = arg;
	struct mmedge_dmaeng *de = s->de;
	u64 raw = de->stamp(de->arg);
	unsigned long flags;
	bool done = false;

	spin_lock_irqsave(&de->lock, flags);
	if (s->state == MMEDGE_DMAENG_BUSY) {
		if (res && res->result != DMA_TRANS_NOERROR && !s->error)
			s->error = -EIO;
		if (!--s->pending) {
			mmedge_dmaeng_slot_done(de, s, raw);
			done = true;
		}
	}
	spin_unlock_irqrestore(&de->lock, flags);
	if (done) {
		wake_up(&de->wq);
		de->notify(de->arg);
	}
}

/**
 * mmedge_dmaeng_slot_next() - the slot the next segment goes into
 * @de: the back end
 *
 * Return: a free slot whose bounce buffer the caller fills before
 * mmedge_dmaeng_submit(), or NULL while MMEDGE_DMAENG_SLOTS segments
 * are not handed back or the channel is out of descriptors.
 */
struct mmedge_dmaeng_slot *mmedge_dmaeng_slot_next(struct mmedge_dmaeng *de)
{
	struct mmedge_dmaeng_slot *s = NULL;
	unsigned long flags;

	spin_lock_irqsave(&de->lock, flags);
	if (de->count < MMEDGE_DMAENG_SLOTS && !de->starved)
		s = mmedge_dmaeng_at(de, de->count);
	spin_unlock_irqrestore(&de->lock, flags);
	return s;
}

/**
 * struct mmedge_dmaeng_walk - a cursor over DMA-mapped memory
 * @sg: the current DMA segment, or NULL for a contiguous range.
 * @left_sg: DMA segments after @sg.
 * @addr: the DMA address the cursor is at.
 * @left: bytes from @addr to the end of the current segment.
 */
struct mmedge_dmaeng_walk {
	struct scatterlist *sg;
	unsigned int left_sg;
	dma_addr_t addr;
	u64 left;
};

/* Step over empty segments. */
static void mmedge_dmaeng_walk_settle(struct mmedge_dmaeng_walk *w)
{
	while (!w->left && w->sg && w->left_sg) {
		w->sg = sg_next(w->sg);
		w->left_sg--;
		w->addr = sg_dma_address(w->sg);
		w->left = sg_dma_len(w->sg);
	}
}

/* @w at byte @off of @sgt's DMA segments (at their end if it is past). */
static void mmedge_dmaeng_walk_sgt(struct mmedge_dmaeng_walk *w,
				   struct sg_table *sgt, u64 off)
{
	struct scatterlist *sg;
	unsigned int i;

	memset(w, 0, sizeof(*w));
	for_each_sgtable_dma_sg(sgt, sg, i) {
		w->sg = sg;
		w->left_sg = sgt->nents - i - 1;
		if (off < sg_dma_len(sg)) {
			w->addr = sg_dma_address(sg) + off;
			w->left = sg_dma_len(sg) - off;
			break;
		}
		off -= sg_dma_len(sg);
		w->left_sg = 0;
	}
	mmedge_dmaeng_walk_settle(w);
}

static void mmedge_dmaeng_walk_advance(struct mmedge_dmaeng_walk *w, u64 n)
{
	w->addr += n;
	w->left -= n;
	mmedge_dmaeng_walk_settle(w);
}

/**
 * mmedge_dmaeng_submit() - start moving a segment
 * @de: the back end
 * @s: from mmedge_dmaeng_slot_next(); with @src NULL its bounce buffer
 *	holds the segment's bytes
 * @dst: the destination, DMA-mapped for the channel's device
 * @dst_off: byte offset in @dst
 * @src: the source, DMA-mapped for the channel's device (the segment
 *	goes straight from it to @dst, the slot's bounce unused), or NULL
 *	(from the bounce buffer)
 * @src_off: byte offset in @src
 * @len: bytes; from the bounce buffer at most its size
 * @ctx: the engine's channel, handed back with the slot
 * @job: the engine's job, handed back with the slot
 * @last: the segment completes @job
 *
 * Splits the copy where a DMA segment of the destination or of the
 * source ends, submits one descriptor per piece, issues them and returns
 * without waiting.
 *
 * Return: 0: submitted. -EAGAIN: the channel has no descriptor now and
 * segments are in flight; the slot was not used, try again after one
 * completes. Any other error: the slot was used and completes with that
 * error as @job's last segment (pieces already submitted finish first);
 * the caller submits nothing more for @job.
 */
int mmedge_dmaeng_submit(struct mmedge_dmaeng *de,
			 struct mmedge_dmaeng_slot *s, struct sg_table *dst,
			 u64 dst_off, struct sg_table *src, u64 src_off,
			 u32 len, void *ctx, void *job, bool last)
{
	struct mmedge_dmaeng_walk dw, sw;
	struct dma_async_tx_descriptor *tx;
	unsigned long flags;
	u64 done = 0;
	int ret = 0;

	if (!src && len > de->bounce_size)
		return -EINVAL;

	spin_lock_irqsave(&de->lock, flags);
	s->ctx = ctx;
	s->job = job;
	s->last = last;
	s->direct = !!src;
	s->len = len;
	s->pending = 1;		/* a bias, dropped after submitting */
	s->error = 0;
	s->submit_ns = ktime_get_ns();
	s->state = MMEDGE_DMAENG_BUSY;
	de->count++;
	de->inflight++;
	de->inflight_max = max(de->inflight_max, de->inflight);
	spin_unlock_irqrestore(&de->lock, flags);

	mmedge_dmaeng_walk_sgt(&dw, dst, dst_off);
	if (src) {
		mmedge_dmaeng_walk_sgt(&sw, src, src_off);
	} else {
		memset(&sw, 0, sizeof(sw));
		sw.addr = s->bounce_dma;
		sw.left = len;
	}
	while (done < len) {
		u64 n = min3((u64)len - done, dw.left, sw.left);

		if (!n) {
			/* A mapping ends before the segment does. */
			ret = -EINVAL;
			break;
		}
		tx = dmaengine_prep_dma_memcpy(de->chan, dw.addr, sw.addr, n,
					       DMA_PREP_INTERRUPT | DMA_CTRL_ACK);
		if (!tx) {
			ret = -ENOMEM;
			break;
		}
		tx->callback_result = mmedge_dmaeng_callback;
		tx->callback_param = s;
		spin_lock_irqsave(&de->lock, flags);
		s->pending++;
		spin_unlock_irqrestore(&de->lock, flags);
		if (dma_submit_error(dmaengine_submit(tx))) {
			spin_lock_irqsave(&de->lock, flags);
			s->pending--;
			spin_unlock_irqrestore(&de->lock, flags);
			ret = -EIO;
			break;
		}
		done += n;
		mmedge_dmaeng_walk_advance(&dw, n);
		mmedge_dmaeng_walk_advance(&sw, n);
	}

	spin_lock_irqsave(&de->lock, flags);
	if (ret == -ENOMEM && !done && de->inflight > 1) {
		/* Out of descriptors: retry once a segment in flight is done. */
		s->state = MMEDGE_DMAENG_FREE;
		de->count--;
		de->inflight--;
		de->starved = true;
		spin_unlock_irqrestore(&de->lock, flags);
		return -EAGAIN;
	}
	if (ret) {
		s->error = ret;
		s->last = true;
	}
	if (!--s->pending)
		mmedge_dmaeng_slot_done(de, s, de->stamp(de->arg));
	spin_unlock_irqrestore(&de->lock, flags);
	if (done)
		de->unissued = true;
	return ret;
}

/**
 * mmedge_dmaeng_issue() - start what mmedge_dmaeng_submit() queued
 * @de: the back end
 *
 * The engine fills every free slot it has work for, then tells the
 * controller once: the segments are in flight together and the
 * controller has the next one queued when one completes.
 */
void mmedge_dmaeng_issue(struct mmedge_dmaeng *de)
{
	if (!de->unissued)
		return;
	de->unissued = false;
	dma_async_issue_pending(de->chan);
}

/**
 * mmedge_dmaeng_reap() - hand back the oldest slot if it is done
 * @de: the back end
 * @d: filled in with what the slot moved and how
 *
 * Slots come back in submission order, so a job's segments come back in
 * order and its last one after all the others.
 *
 * Return: true if a slot was handed back.
 */
bool mmedge_dmaeng_reap(struct mmedge_dmaeng *de, struct mmedge_dmaeng_done *d)
{
	struct mmedge_dmaeng_slot *s;
	unsigned long flags;
	bool ret = false;

	spin_lock_irqsave(&de->lock, flags);
	s = mmedge_dmaeng_at(de, 0);
	if (de->count && s->state == MMEDGE_DMAENG_DONE) {
		d->ctx = s->ctx;
		d->job = s->job;
		d->last = s->last;
		d->error = s->error;
		d->done_raw = s->done_raw;
		s->state = MMEDGE_DMAENG_FREE;
		s->ctx = NULL;
		s->job = NULL;
		de->head = (de->head + 1) % MMEDGE_DMAENG_SLOTS;
		de->count--;
		ret = true;
	}
	spin_unlock_irqrestore(&de->lock, flags);
	return ret;
}

/**
 * mmedge_dmaeng_fail_job() - a segment of @job failed
 * @de: the back end
 * @job: the job
 * @error: why
 *
 * Every slot of @job not handed back yet fails with @error and the
 * newest of them becomes @job's last, so the job completes (with the
 * error) once the pieces in flight have finished.
 *
 * Return: false if no slot of @job is left: the caller completes it.
 */
bool mmedge_dmaeng_fail_job(struct mmedge_dmaeng *de, void *job, int error)
{
	struct mmedge_dmaeng_slot *s, *newest = NULL;
	unsigned long flags;
	unsigned int i;

	spin_lock_irqsave(&de->lock, flags);
	for (i = 0; i < de->count; i++) {
		s = mmedge_dmaeng_at(de, i);
		if (s->job != job)
			continue;
		if (!s->error)
			s->error = error;
		newest = s;
	}
	if (newest)
		newest->last = true;
	spin_unlock_irqrestore(&de->lock, flags);
	return newest;
}

/**
 * mmedge_dmaeng_busy() - does @job have a slot not handed back?
 * @de: the back end
 * @job: the job
 *
 * Return: true if so: its buffer must stay mapped.
 */
bool mmedge_dmaeng_busy(struct mmedge_dmaeng *de, void *job)
{
	unsigned long flags;
	unsigned int i;
	bool ret = false;

	spin_lock_irqsave(&de->lock, flags);
	for (i = 0; i < de->count && !ret; i++)
		ret = mmedge_dmaeng_at(de, i)->job == job;
	spin_unlock_irqrestore(&de->lock, flags);
	return ret;
}

/**
 * mmedge_dmaeng_settled() - can every slot of @ctx be handed back now?
 * @de: the back end
 * @ctx: a channel that submits nothing more
 *
 * Return: true if every slot up to the newest of @ctx is done, so that
 * mmedge_dmaeng_reap() hands back all of @ctx's slots.
 */
bool mmedge_dmaeng_settled(struct mmedge_dmaeng *de, void *ctx)
{
	unsigned long flags;
	unsigned int i, upto = 0;
	bool ret = true;

	spin_lock_irqsave(&de->lock, flags);
	for (i = 0; i < de->count; i++)
		if (mmedge_dmaeng_at(de, i)->ctx == ctx)
			upto = i + 1;
	for (i = 0; i < upto && ret; i++)
		ret = mmedge_dmaeng_at(de, i)->state == MMEDGE_DMAENG_DONE;
	spin_unlock_irqrestore(&de->lock, flags);
	return ret;
}

/**
 * mmedge_dmaeng_timed_out() - has a segment been in flight too long?
 * @de: the back end
 * @now: CLOCK_MONOTONIC, ns
 *
 * Return: true if a submitted slot has not completed within
 * MMEDGE_DMAENG_TIMEOUT_MS.
 */
bool mmedge_dmaeng_timed_out(struct mmedge_dmaeng *de, u64 now)
{
	u64 limit = (u64)MMEDGE_DMAENG_TIMEOUT_MS * NSEC_PER_MSEC;
	struct mmedge_dmaeng_slot *s;
	unsigned long flags;
	unsigned int i;
	bool ret = false;

	spin_lock_irqsave(&de->lock, flags);
	for (i = 0; i < de->count && !ret; i++) {
		s = mmedge_dmaeng_at(de, i);
		ret = s->state == MMEDGE_DMAENG_BUSY &&
		      (s64)(now - s->submit_ns) > (s64)limit;
	}
	spin_unlock_irqrestore(&de->lock, flags);
	return ret;
}

/**
 * mmedge_dmaeng_abort() - stop the channel; what is in flight fails
 * @de: the back end
 * @error: the error the slots in flight complete with
 *
 * Terminates the channel and waits for its callbacks to finish (so the
 * caller must hold nothing the callback takes: only @de->lock, which it
 * cannot hold here), then completes every slot still in flight with
 * @error. They are handed back by mmedge_dmaeng_reap() as usual.
 */
void mmedge_dmaeng_abort(struct mmedge_dmaeng *de, int error)
{
	struct mmedge_dmaeng_slot *s;
	u64 raw = de->stamp(de->arg);
	unsigned long flags;
	unsigned int i;

	dmaengine_terminate_sync(de->chan);
	spin_lock_irqsave(&de->lock, flags);
	for (i = 0; i < de->count; i++) {
		s = mmedge_dmaeng_at(de, i);
		if (s->state != MMEDGE_DMAENG_BUSY)
			continue;
		s->error = error;
		mmedge_dmaeng_slot_done(de, s, raw);
	}
	spin_unlock_irqrestore(&de->lock, flags);
	wake_up(&de->wq);
}

/**
 * mmedge_dmaeng_stats() - the back end's counters
 * @de: the back end
 * @segments: segments moved without error
 * @direct_segments: those of them moved straight from a source buffer,
 *	without a bounce
 * @inflight_max: the most segments that were in flight together
 */
void mmedge_dmaeng_stats(struct mmedge_dmaeng *de, u64 *segments,
			 u64 *direct_segments, unsigned int *inflight_max)
{
	unsigned long flags;

	spin_lock_irqsave(&de->lock, flags);
	*segments = de->segments;
	*direct_segments = de->direct_segments;
	*inflight_max = de->inflight_max;
	spin_unlock_irqrestore(&de->lock, flags);
}

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mmedge: the dmaengine back end of the DMA engine.
 */
#ifndef _MMEDGE_DMAENG_H
#define _MMEDGE_DMAENG_H

#include <linux/dma-buf.h>
#include <linux/dmaengine.h>
#include <linux/spinlock.h>
#include <linux/wait.h>

/*
 * Segments the back end keeps in flight at most (one slot each, with a
 * bounce buffer for the segments that need one).
 */
#define MMEDGE_DMAENG_SLOTS		4
/* A segment not completed after this long fails, and the channel is reset. */
#define MMEDGE_DMAENG_TIMEOUT_MS	1000

struct mmedge_dmaeng;

enum mmedge_dmaeng_state {
	MMEDGE_DMAENG_FREE,
	MMEDGE_DMAENG_BUSY,
	MMEDGE_DMAENG_DONE,
};

/**
 * struct mmedge_dmaeng_slot - one segment in flight
 * @de: the back end.
 * @bounce: where a segment's bytes are produced (coherent), unless it
 *	is moved straight from a source buffer.
 * @bounce_dma: its DMA address for the channel.
 * @ctx: the engine's channel the segment belongs to.
 * @job: the engine's job (the destination buffer).
 * @last: the segment completes its job.
 * @direct: the segment goes straight from a source buffer, not from
 *	@bounce.
 * @len: bytes.
 * @pending: descriptors not completed, plus one while submitting.
 * @error: 0, or why the segment failed.
 * @done_raw: the counter when its last descriptor completed.
 * @submit_ns: CLOCK_MONOTONIC when it was submitted.
 * @state: MMEDGE_DMAENG_*.
 *
 * Fields after @bounce_dma are under mmedge_dmaeng.lock once the slot is
 * submitted.
 */
struct mmedge_dmaeng_slot {
	struct mmedge_dmaeng *de;
	void *bounce;
	dma_addr_t bounce_dma;
	void *ctx;
	void *job;
	bool last;
	bool direct;
	u32 len;
	unsigned int pending;
	int error;
	u64 done_raw;
	u64 submit_ns;
	enum mmedge_dmaeng_state state;
};

/**
 * struct mmedge_dmaeng_done - a completed segment, handed to the engine
 * @ctx: its channel.
 * @job: its job.
 * @last: it completes the job.
 * @error: 0, or why it failed.
 * @done_raw: the counter stamped in the DMA callback.
 */
struct mmedge_dmaeng_done {
	void *ctx;
	void *job;
	bool last;
	int error;
	u64 done_raw;
};

/**
 * struct mmedge_dmaeng - a dmaengine channel that moves segments
 * @chan: the "memcpy" channel named in the device tree, or NULL (then
 *	the soft engine's CPU copies are used).
 * @bounce_size: bytes of each slot's bounce buffer (the largest segment).
 * @lock: protects the slots' state, the ring and the counters; taken by
 *	the DMA callback, so nothing waits while holding it.
 * @slot: the ring of segments, in submission order.
 * @head: the oldest slot not handed back to the engine.
 * @count: slots between @head and the next free one.
 * @inflight: submitted slots not completed yet.
 * @inflight_max: the most ever in flight together.
 * @starved: the channel had no descriptor for a new segment; set until
 *	one in flight completes.
 * @unissued: descriptors submitted since the controller was last told
 *	to start (mmedge_dmaeng_issue()); the engine thread's only.
 * @segments: segments moved without error.
 * @direct_segments: those of them moved straight from a source buffer.
 * @bytes: their bytes.
 * @errors: segments that failed.
 * @wq: woken when a slot completes.
 * @stamp: reads the counter a completion is stamped with.
 * @notify: tells the engine a slot completed (any context).
 * @arg: for @stamp and @notify.
 */
struct mmedge_dmaeng {
	struct dma_chan *chan;
	size_t bounce_size;
	/* The slots, the ring and the counters; the DMA callback takes it. */
	spinlock_t lock;
	struct mmedge_dmaeng_slot slot[MMEDGE_DMAENG_SLOTS];
	unsigned int head;
	unsigned int count;
	unsigned int inflight;
	unsigned int inflight_max;
	bool starved;
	bool unissued;
	u64 segments;
	u64 direct_segments;
	u64 bytes;
	u64 errors;
	wait_queue_head_t wq;
	u64 (*stamp)(void *arg);
	void (*notify)(void *arg);
	void *arg;
};

int mmedge_dmaeng_init(struct mmedge_dmaeng *de, struct device *dev,
		       size_t bounce_size, u64 (*stamp)(void *arg),
		       void (*notify)(void *arg), void *arg);
void mmedge_dmaeng_fini(struct mmedge_dmaeng *de);
struct device *mmedge_dmaeng_dev(struct mmedge_dmaeng *de);
struct mmedge_dmaeng_slot *mmedge_dmaeng_slot_next(struct mmedge_dmaeng *de);
int mmedge_dmaeng_submit(struct mmedge_dmaeng *de,
			 struct mmedge_dmaeng_slot *s, struct sg_table *dst,
			 u64 dst_off, struct sg_table *src, u64 src_off,
			 u32 len, void *ctx, void *job, bool last);
void mmedge_dmaeng_issue(struct mmedge_dmaeng *de);
bool mmedge_dmaeng_reap(struct mmedge_dmaeng *de,
			struct mmedge_dmaeng_done *d);
bool mmedge_dmaeng_fail_job(struct mmedge_dmaeng *de, void *job, int error);
bool mmedge_dmaeng_busy(struct mmedge_dmaeng *de, void *job);
bool mmedge_dmaeng_settled(struct mmedge_dmaeng *de, void *ctx);
bool mmedge_dmaeng_timed_out(struct mmedge_dmaeng *de, u64 now);
void mmedge_dmaeng_abort(struct mmedge_dmaeng *de, int error);
void mmedge_dmaeng_stats(struct mmedge_dmaeng *de, u64 *segments,
			 u64 *direct_segments, unsigned int *inflight_max);

#endif /* _MMEDGE_DMAENG_H */

// SPDX-License-Identifier: GPL-2.0
/*
 * mmedge: the DMA engine: its thread, the bus model, the adaptive
 * policy, and what ioctl and netlink ask of it: channel snapshots,
 * settings (mmedge_engine_apply()) and the bus bandwidth. The counter
 * that stamps frames is in mmedge_clock.c.
 *
 * A capture channel turns frames of a source into filled buffers. On a
 * virtual instance each source is paced by an hrtimer: at every period a
 * frame becomes due and is stamped (start of frame) with the free-running
 * counter. The engine thread then moves the frame into the channel's
 * next queued buffer in segments; the arbiter decides, segment by
 * segment, which channel goes next, and the soft engine paces the copies
 * to a modelled bus bandwidth so contention is real. When the last
 * segment lands, the frame is stamped again (end of frame), the in-band
 * record is written after the data, the buffer's fence signals and the
 * buffer waits for MMEDGE_IOC_DQBUF.
 *
 * Feed and copy channels have no timer: a job is due as soon as it is
 * queued. A feed job's bytes go, segment by segment, to a virtual sink
 * that reads them and keeps their CRC-32; a copy job's bytes go from its
 * source buffer into its destination, and the in-band record follows
 * them there. Arbitration, pacing, stats, fences, poll and destroy are
 * the same code for every direction.
 *
 * Fence signalling: the engine thread signals the jobs' fences, with
 * mmedge_engine.lock held, inside a dma_fence_begin_signalling() /
 * dma_fence_end_signalling() section around that lock. Nothing in the
 * section allocates memory (other than GFP_NOWAIT), takes a reservation
 * lock or waits for a fence, and so neither does anyone else while
 * holding mmedge_engine.lock. Netlink events are collected in the section
 * and sent after it; a DROP_OLDEST buffer gets its new fence in a work
 * item (mmedge_chan_rearm_work()). Every fence is bounded: the job at the
 * head of a channel that makes no progress for MMEDGE_JOB_TIMEOUT_MS plus
 * one frame period completes with -ETIMEDOUT, and when the instance goes
 * away every job completes with -ENODEV.
 */

#include <linux/crc32.h>
#include <linux/delay.h>
#include <linux/dma-buf.h>
#include <linux/dma-fence.h>
#include <linux/dma-mapping.h>
#include <linux/highmem.h>
#include <linux/ktime.h>
#include <linux/log2.h>
#include <linux/sched.h>
#include <linux/slab.h>

#include "mmedge_buf.h"
#include "mmedge_chan.h"
#include "mmedge_clock.h"
#include "mmedge_drv.h"
#include "mmedge_nl.h"
#include "mmedge_src.h"
#include "mmedge_uapi.h"

#define CREATE_TRACE_POINTS
#include "mmedge_trace.h"

#define MMEDGE_BUS_DEFAULT		(200ULL * 1000 * 1000)
#define MMEDGE_BURST_NS			(2 * NSEC_PER_MSEC)
#define MMEDGE_ANCHOR_NS		NSEC_PER_SEC
/* The engine sleeps once it is this far ahead of the modelled bus. */
#define MMEDGE_PACE_SLACK_NS		(500 * NSEC_PER_USEC)
/* A late wake-up within this of the bus going free loses no bus time. */
#define MMEDGE_PACE_CATCHUP_NS		(2 * NSEC_PER_MSEC)
/* At most 10 drop events per second per channel. */
#define MMEDGE_DROP_EVENT_NS		(100 * NSEC_PER_MSEC)
#define MMEDGE_JOB_TIMEOUT_NS		((u64)MMEDGE_JOB_TIMEOUT_MS * NSEC_PER_MSEC)

static unsigned long long bus_bandwidth = MMEDGE_BUS_DEFAULT;
module_param(bus_bandwidth, ullong, 0444);
MODULE_PARM_DESC(bus_bandwidth,
		 "Soft engine: modelled bus bandwidth at load, bytes/s (default 200000000)");

/* Fault injection for tests, like vivid's error-injection controls. */
static unsigned int inject_drop_every;
module_param(inject_drop_every, uint, 0644);
MODULE_PARM_DESC(inject_drop_every,
		 "Test: the source drops every Nth frame of each channel (0 = off)");

static unsigned int inject_error_every;
module_param(inject_error_every, uint, 0644);
MODULE_PARM_DESC(inject_error_every,
		 "Test: every Nth frame of each channel completes with a transfer error (0 = off)");

static unsigned int inject_corrupt_every;
module_param(inject_corrupt_every, uint, 0644);
MODULE_PARM_DESC(inject_corrupt_every,
		 "Test: every Nth frame of each channel is silently corrupted (0 = off)");

static unsigned int inject_stall_ms;
module_param(inject_stall_ms, uint, 0644);
MODULE_PARM_DESC(inject_stall_ms,
		 "Test: the engine stalls this long once, then the parameter resets to 0");

static bool adaptive;
module_param(adaptive, bool, 0644);
MODULE_PARM_DESC(adaptive,
		 "Adaptive arbitration: move camera channels' weights toward their measured demand (default off)");

static bool engine_rt;
module_param(engine_rt, bool, 0644);
MODULE_PARM_DESC(engine_rt,
		 "Engine thread runs SCHED_FIFO (lowest RT priority) for runs of up to 2 ms (default off)");

/*
 * With engine_rt, a run of the engine thread (from its last sleep) longer
 * than this continues under SCHED_NORMAL until the thread sleeps again.
 */
#define MMEDGE_RT_RUN_NS		(2 * NSEC_PER_MSEC)

#define MMEDGE_ADAPT_PERIOD_NS		(200 * NSEC_PER_MSEC)
#define MMEDGE_ADAPT_HYSTERESIS		25	/* permille */
#define MMEDGE_ADAPT_STEP		50	/* permille per period */

static bool mmedge_inject(unsigned int every, u64 seq)
{
	return every && (seq + 1) % every == 0;
}

static void mmedge_chan_info_fill(const struct mmedge_chan *ch,
				  struct mmedge_chan_info *ci)
{
	ci->id = ch->id;
	strscpy(ci->name, ch->name, sizeof(ci->name));
	ci->src_type = ch->src.type;
	ci->dir = ch->dir;
	ci->weight = ch->arb.weight;
	ci->class = ch->arb.class;
	ci->cap = ch->arb.cap;
	ci->bytes = ch->bytes;
	ci->segments = ch->segments;
	ci->frames = ch->frames;
	ci->dropped = ch->dropped;
	ci->errors = ch->errors;
	ci->bw = ch->bw_ewma;
	memcpy(ci->wait_hist, ch->wait_hist, sizeof(ci->wait_hist));
}

/* Work may be available: wake the engine thread. */
void mmedge_engine_kick(struct mmedge_engine *eng)
{
	unsigned long flags;

	spin_lock_irqsave(&eng->irq_lock, flags);
	eng->kick = true;
	spin_unlock_irqrestore(&eng->irq_lock, flags);
	wake_up(&eng->wq);
}

enum hrtimer_restart mmedge_chan_timer(struct hrtimer *t)
{
	struct mmedge_chan *ch = container_of(t, struct mmedge_chan, timer);
	struct mmedge_engine *eng = ch->eng;
	u64 raw = mmedge_counter_read(eng);
	unsigned long flags;
	u64 periods;

	/* Periods the timer ran late for are frames the source lost. */
	periods = hrtimer_forward_now(t, ns_to_ktime(ch->period_ns));

	spin_lock_irqsave(&eng->irq_lock, flags);
	/* The newest frame is the one delivered: it carries this stamp. */
	ch->due_raw = raw;
	ch->due_ns = ktime_get_ns();
	ch->frames_due += max_t(u64, periods, 1);
	eng->kick = true;
	spin_unlock_irqrestore(&eng->irq_lock, flags);
	wake_up(&eng->wq);
	return HRTIMER_RESTART;
}

static void mmedge_chan_stats_segment(struct mmedge_chan *ch, u64 len,
				      u64 wait_ns, u64 now)
{
	unsigned int b = 0;

	if (wait_ns >= 1024)
		b = min_t(unsigned int, ilog2(wait_ns) - 9,
			  MMEDGE_WAIT_BUCKETS - 1);
	ch->wait_hist[b]++;
	ch->bytes += len;
	ch->segments++;
	trace_mmedge_segment(ch, len, wait_ns);

	ch->bw_bytes += len;
}

/* Fold the last window into the bandwidth EWMA (idle windows count). */
static void mmedge_chan_stats_bw(struct mmedge_chan *ch, u64 now)
{
	u64 inst;

	if (now - ch->bw_start_ns < 100 * NSEC_PER_MSEC)
		return;
	inst = mul_u64_u64_div_u64(ch->bw_bytes, NSEC_PER_SEC,
				   now - ch->bw_start_ns);
	ch->bw_ewma = ch->bw_ewma ? (ch->bw_ewma * 7 + inst) / 8 : inst;
	ch->bw_bytes = 0;
	ch->bw_start_ns = now;
}

/*
 * The CPU wrote [off, off + len) of @qb's buffer through the kernel
 * mapping: write it back before the fence tells devices to read it. This
 * runs in the fence signalling path, so a foreign exporter's
 * dma_buf_end_cpu_access() (which may take the reservation lock) cannot
 * be called: for a foreign buffer only the kernel mapping and the
 * engine's own dmaengine mapping are cleaned.
 */
static void mmedge_qb_cpu_written(struct mmedge_engine *eng,
				  struct mmedge_qb *qb, u64 off, u64 len)
{
	if (!len)
		return;
	flush_kernel_vmap_range(qb->map.vaddr + off, len);
	/* An mmedge buffer: every device mapping (lock free for fences). */
	mmedge_buf_written(qb->dmabuf, off, len);
	/* The dmaengine mapping: make the CPU's writes visible to it. */
	if (qb->dsgt)
		dma_sync_sgtable_for_device(mmedge_dmaeng_dev(&eng->dmaeng),
					    qb->dsgt, DMA_BIDIRECTIONAL);
}

/* A job at the head completes, or fails: the next one starts its clock. */
static void mmedge_chan_job_done(struct mmedge_chan *ch, struct mmedge_qb *qb,
				 int error)
{
	struct mmedge_engine *eng = ch->eng;

	lockdep_assert_held(&eng->lock);

	list_add_tail(&qb->node, &ch->done);
	ch->frames++;
	if (error) {
		ch->errors++;
		dma_fence_set_error(qb->fence, error);
	}
	trace_mmedge_frame_done(ch, qb, error);
	dma_fence_signal(qb->fence);
	trace_mmedge_fence_signal(ch, qb->fence);
	ch->progress_ns = ktime_get_ns();
	atomic_inc(&ch->mf->done_events);
	wake_up_interruptible(&eng->done_wq);
}

/*
 * @ch's current frame is complete (@flags MMEDGE_FRAME_*; with
 * MMEDGE_FRAME_ERROR the fence's error is @error), its end stamped with
 * counter value @eof_raw.
 */
static void mmedge_chan_complete_at(struct mmedge_chan *ch, u32 flags,
				    int error, u64 eof_raw)
{
	struct mmedge_engine *eng = ch->eng;
	struct mmedge_qb *qb = ch->cur;
	struct mmedge_frame_meta *meta;
	u64 meta_off;

	lockdep_assert_held(&eng->lock);

	qb->flags = flags;
	if (ch->dir == MMEDGE_CHAN_CAPTURE)
		qb->flags |= MMEDGE_FRAME_TS_SOF_SOURCE;
	if (ch->drop_mark)
		qb->flags |= MMEDGE_FRAME_DROPPED_BEFORE;
	qb->sequence = ch->cur_seq;
	qb->bytesused = ch->cur_off;
	qb->ts.sof_raw = ch->cur_sof_raw;
	qb->ts.eof_raw = eof_raw;
	qb->ts.sof_mono = mmedge_ts_to_ns(&eng->tc_mono, ch->cur_sof_raw);
	qb->ts.eof_mono = mmedge_ts_to_ns(&eng->tc_mono, eof_raw);
	qb->ts.sof_boot = qb->ts.sof_mono + eng->boot_offset;
	qb->ts.eof_boot = qb->ts.eof_mono + eng->boot_offset;
	if (ch->dir == MMEDGE_CHAN_CAPTURE) {
		qb->flags |= MMEDGE_FRAME_TS_SENSOR;
		qb->sensor_sof = mmedge_clock_sensor_at(eng, &ch->sclk, qb->ts.sof_raw);
		qb->sensor_eof = mmedge_clock_sensor_at(eng, &ch->sclk, qb->ts.eof_raw);
	}
	qb->dropped = ch->dropped;
	if (ch->dir == MMEDGE_CHAN_FEED) {
		qb->crc = ~qb->crc;
		goto done;
	}

	/* The soft engine wrote the data through the kernel mapping. */
	if (!qb->dsgt)
		mmedge_qb_cpu_written(eng, qb, 0, qb->bytesused);
	meta_off = ch->dir == MMEDGE_CHAN_COPY ? ALIGN(qb->len, 64) :
						 ch->meta_offset;
	meta = qb->map.vaddr + meta_off;
	memset(meta, 0, sizeof(*meta));
	meta->magic = MMEDGE_META_MAGIC;
	meta->version = MMEDGE_META_VERSION;
	meta->size = sizeof(*meta);
	meta->chan = ch->id;
	meta->flags = qb->flags;
	meta->sequence = qb->sequence;
	meta->bytesused = qb->bytesused;
	meta->ts = qb->ts;
	meta->dropped = qb->dropped;
	meta->sensor_sof = qb->sensor_sof;
	meta->sensor_eof = qb->sensor_eof;
	mmedge_qb_cpu_written(eng, qb, meta_off, sizeof(*meta));

done:
	ch->cur = NULL;
	ch->frame_pending = false;
	ch->drop_mark = false;
	mmedge_arb_set_backlogged(&eng->arb, &ch->arb, false);
	mmedge_chan_job_done(ch, qb, flags & MMEDGE_FRAME_ERROR ?
				     (error ? error : -EIO) : 0);
}

/* @ch's current frame is complete now (see mmedge_chan_complete_at()). */
static void mmedge_chan_complete(struct mmedge_chan *ch, u32 flags, int error)
{
	mmedge_chan_complete_at(ch, flags, error, mmedge_counter_read(ch->eng));
}

/*
 * A queued job that never got its frame or its turn completes with
 * @error: MMEDGE_FRAME_ERROR, no data.
 */
static void mmedge_chan_fail_job(struct mmedge_chan *ch, struct mmedge_qb *qb,
				 int error)
{
	qb->flags = MMEDGE_FRAME_ERROR;
	qb->sequence = 0;
	qb->bytesused = 0;
	memset(&qb->ts, 0, sizeof(qb->ts));
	qb->sensor_sof = 0;
	qb->sensor_eof = 0;
	qb->dropped = ch->dropped;
	qb->crc = 0;
	mmedge_chan_job_done(ch, qb, error);
}

/*
 * The fence bound: the job at the head of @ch (in flight, or first in
 * line) that made no progress for MMEDGE_JOB_TIMEOUT_MS plus a frame
 * period completes with -ETIMEDOUT. Jobs complete in queue order, so
 * fences signal in seqno order.
 */
static void mmedge_chan_watchdog(struct mmedge_chan *ch, u64 now)
{
	struct mmedge_qb *qb;

	lockdep_assert_held(&ch->eng->lock);

	if (now - ch->progress_ns <= MMEDGE_JOB_TIMEOUT_NS + ch->period_ns ||
	    (s64)(now - ch->progress_ns) < 0)
		return;
	/* Segments in flight: the dmaengine back end's timeout ends them. */
	if (ch->cur && ch->cur->dsgt &&
	    mmedge_dmaeng_busy(&ch->eng->dmaeng, ch->cur))
		return;
	if (ch->cur) {
		mmedge_chan_complete(ch, MMEDGE_FRAME_ERROR, -ETIMEDOUT);
		return;
	}
	qb = list_first_entry_or_null(&ch->queued, struct mmedge_qb, node);
	if (!qb)
		return;
	list_del(&qb->node);
	mmedge_chan_fail_job(ch, qb, -ETIMEDOUT);
}

/* Feed, copy: the oldest queued job, if none is in progress, is next. */
static void mmedge_chan_take_job(struct mmedge_chan *ch, u64 now)
{
	struct mmedge_qb *qb;

	lockdep_assert_held(&ch->eng->lock);
	if (ch->cur || list_empty(&ch->queued))
		return;
	qb = list_first_entry(&ch->queued, struct mmedge_qb, node);
	list_del(&qb->node);
	qb->crc = ~0U;
	ch->cur = qb;
	ch->frame_pending = true;
	ch->cur_seq = ch->seq_next++;
	ch->cur_sof_raw = 0;
	ch->seg_ready_ns = qb->queued_ns;
	ch->cur_off = 0;
	ch->progress_ns = now;
}

/* Capture: a frame is pending and has no buffer; find it one. */
static void mmedge_chan_give_buffer(struct mmedge_chan *ch, u64 now)
{
	struct mmedge_qb *qb;

	lockdep_assert_held(&ch->eng->lock);

	if (!list_empty(&ch->queued)) {
		qb = list_first_entry(&ch->queued, struct mmedge_qb, node);
		list_del(&qb->node);
		ch->cur = qb;
		ch->progress_ns = now;
	} else if (ch->rearm) {
		/* The oldest done buffer is getting its new fence. */
	} else if (ch->overrun == MMEDGE_OVERRUN_DROP_OLDEST &&
		   !list_empty(&ch->done)) {
		/* Its new fence allocates: not here (mmedge_chan.c). */
		qb = list_first_entry(&ch->done, struct mmedge_qb, node);
		list_del(&qb->node);
		ch->rearm = qb;
		queue_work(system_wq, &ch->rearm_work);
	} else {
		mmedge_chan_drop(ch, 1);
		ch->drop_mark = true;
		ch->frame_pending = false;
	}
}

/* Bytes of @ch's current frame or job. */
static u64 mmedge_chan_cur_len(const struct mmedge_chan *ch)
{
	return ch->dir == MMEDGE_CHAN_CAPTURE ? ch->frame_bytes : ch->cur->len;
}

/*
 * @ch has a segment to move: a current frame not all handed to the bus
 * (the dmaengine back end's last segments may still be in flight).
 */
static bool mmedge_chan_wants_bus(const struct mmedge_chan *ch)
{
	return ch->cur && ch->cur_off < mmedge_chan_cur_len(ch);
}

/*
 * Take frames the timers made due, give each pending frame a buffer,
 * time out stuck jobs and collect the drop events.
 */
static void mmedge_engine_absorb(struct mmedge_engine *eng, u64 now)
{
	struct mmedge_engine_events *ev = eng->ev;
	struct mmedge_chan *ch;

	lockdep_assert_held(&eng->lock);

	list_for_each_entry(ch, &eng->chans, node) {
		unsigned int due;
		u64 due_raw, due_ns;

		mmedge_chan_watchdog(ch, now);
		if (ch->dir != MMEDGE_CHAN_CAPTURE) {
			mmedge_chan_take_job(ch, now);
			mmedge_arb_set_backlogged(&eng->arb, &ch->arb,
						  mmedge_chan_wants_bus(ch));
			mmedge_chan_stats_bw(ch, now);
			continue;
		}

		spin_lock_irq(&eng->irq_lock);
		due = ch->frames_due;
		due_raw = ch->due_raw;
		due_ns = ch->due_ns;
		ch->frames_due = 0;
		spin_unlock_irq(&eng->irq_lock);

		if (due && ch->frame_pending) {
			/* Still moving the last frame: the new ones are lost. */
			mmedge_chan_drop(ch, due);
			ch->seq_next += due;
			ch->drop_mark = true;
		} else if (due) {
			mmedge_chan_drop(ch, due - 1);
			ch->seq_next += due - 1;
			ch->drop_mark |= due > 1;
			ch->frame_pending = true;
			ch->cur_seq = ch->seq_next++;
			ch->cur_sof_raw = due_raw;
			ch->seg_ready_ns = due_ns;
			ch->cur_off = 0;
			if (mmedge_inject(READ_ONCE(inject_drop_every),
					  ch->cur_seq)) {
				mmedge_chan_drop(ch, 1);
				ch->drop_mark = true;
				ch->frame_pending = false;
			}
		}

		if (ch->frame_pending && !ch->cur)
			mmedge_chan_give_buffer(ch, now);
		mmedge_arb_set_backlogged(&eng->arb, &ch->arb,
					  mmedge_chan_wants_bus(ch));
		mmedge_chan_stats_bw(ch, now);

		if (ch->dropped != ch->drops_reported &&
		    now - ch->drop_event_ns >= MMEDGE_DROP_EVENT_NS &&
		    ev->n_drop < MMEDGE_MAX_CHANS) {
			ev->drop_id[ev->n_drop] = ch->id;
			strscpy(ev->drop_name[ev->n_drop], ch->name,
				MMEDGE_NAME_LEN);
			ev->drop_n[ev->n_drop] = ch->dropped - ch->drops_reported;
			ev->n_drop++;
			ch->drops_reported = ch->dropped;
			ch->drop_event_ns = now;
		}
	}
}

/*
 * Adaptive mode: the camera channels' share of the weights moves toward
 * clamp(0.3 + 0.7 x their bandwidth share, 0.2, 0.8), by at most
 * MMEDGE_ADAPT_STEP per period and only past MMEDGE_ADAPT_HYSTERESIS.
 * Latency-class channels are left alone. The changes are announced after
 * the signalling section.
 */
static void mmedge_engine_adapt(struct mmedge_engine *eng)
{
	u64 img_bw = 0, tot_bw = 0, w_img = 0, w_oth = 0, w_new;
	struct mmedge_engine_events *ev = eng->ev;
	struct mmedge_chan *ch;
	u32 cur, target, next;

	lockdep_assert_held(&eng->lock);

	list_for_each_entry(ch, &eng->chans, node) {
		if (!ch->streaming || ch->arb.class != MMEDGE_CLASS_BEST_EFFORT)
			continue;
		tot_bw += ch->bw_ewma;
		if (ch->src.type == MMEDGE_SRC_CAMERA) {
			img_bw += ch->bw_ewma;
			w_img += ch->arb.weight;
		} else {
			w_oth += ch->arb.weight;
		}
	}
	if (!w_img || !w_oth)
		return;
	cur = div64_u64(w_img * 1000, w_img + w_oth);
	target = mmedge_arb_adapt_share(img_bw, tot_bw);
	next = mmedge_arb_adapt_step(cur, target, MMEDGE_ADAPT_HYSTERESIS,
				     MMEDGE_ADAPT_STEP);
	if (next == cur)
		return;
	w_new = div64_u64((u64)next * w_oth, 1000 - next);
	list_for_each_entry(ch, &eng->chans, node) {
		if (!ch->streaming || ch->arb.class != MMEDGE_CLASS_BEST_EFFORT ||
		    ch->src.type != MMEDGE_SRC_CAMERA)
			continue;
		u32 old = ch->arb.weight;

		mmedge_arb_set(&ch->arb,
			       clamp_t(u64, div64_u64(old * w_new, w_img),
				       MMEDGE_WEIGHT_MIN, MMEDGE_WEIGHT_MAX),
			       ch->arb.class, ch->arb.cap);
		if (ch->arb.weight == old || ev->n_changed >= MMEDGE_MAX_CHANS)
			continue;
		mmedge_chan_info_fill(ch, &ev->changed[ev->n_changed]);
		ev->old_weight[ev->n_changed] = old;
		ev->n_changed++;
	}
}

/* Outside the signalling section: send what the engine collected. */
static void mmedge_engine_send_events(struct mmedge_engine *eng)
{
	struct mmedge_engine_events *ev = eng->ev;
	unsigned int i;

	for (i = 0; i < ev->n_drop; i++)
		mmedge_nl_chan_drop(eng->mdev, ev->drop_id[i], ev->drop_name[i],
				    ev->drop_n[i]);
	for (i = 0; i < ev->n_changed; i++)
		mmedge_nl_chan_changed(eng->mdev, &ev->changed[i],
				       ev->old_weight[i], true);
	ev->n_drop = 0;
	ev->n_changed = 0;
}

/*
 * Feed, copy: move one segment out of memory: to the virtual sink, which
 * reads it and folds it into the job's CRC-32, or into the destination.
 */
static void mmedge_engine_move(struct mmedge_engine *eng,
			       struct mmedge_chan *ch, u64 len)
{
	struct mmedge_qb *qb = ch->cur;
	u64 off = ch->cur_off;

	lockdep_assert_held(&eng->lock);

	if (!off)
		ch->cur_sof_raw = mmedge_counter_read(eng);
	if (ch->dir == MMEDGE_CHAN_FEED) {
		qb->crc = crc32_le(qb->crc, qb->map.vaddr + off, len);
		return;
	}
	memcpy(qb->map.vaddr + off, qb->src_map.vaddr + off, len);
}

/*
 * The last segment of @ch's current frame landed at counter value
 * @eof_raw: complete it (with the fault injection of the tests).
 */
static void mmedge_chan_frame_end(struct mmedge_chan *ch, u64 eof_raw)
{
	u64 total = mmedge_chan_cur_len(ch);

	/* A feed's buffer is the user's data: the device never writes it. */
	if (ch->dir != MMEDGE_CHAN_FEED &&
	    mmedge_inject(READ_ONCE(inject_corrupt_every), ch->cur_seq))
		memset(ch->cur->map.vaddr, 0xa5, min_t(u64, total, 64));
	mmedge_chan_complete_at(ch, mmedge_inject(READ_ONCE(inject_error_every),
						  ch->cur_seq) ?
				MMEDGE_FRAME_ERROR : 0, -EIO, eof_raw);
}

/*
 * dmaengine back end: submit @len bytes of @ch's current frame in a free
 * slot. A copy job's segment goes straight from its source buffer
 * (mapped for the controller at QBUF, after the source's writers'
 * fences signalled) into the destination; a capture source's bytes are
 * produced into the slot's bounce buffer first. The engine does not
 * wait: the DMA callback stamps the segment and mmedge_engine_dma_reap()
 * completes the frame.
 * Return: as mmedge_dmaeng_submit().
 */
static int mmedge_engine_dma_segment(struct mmedge_engine *eng,
				     struct mmedge_chan *ch, u64 len,
				     u64 total)
{
	struct mmedge_dmaeng_slot *s = mmedge_dmaeng_slot_next(&eng->dmaeng);
	struct mmedge_qb *qb = ch->cur;
	u64 off = ch->cur_off;

	lockdep_assert_held(&eng->lock);

	if (!s)
		return -EAGAIN;
	if (ch->dir == MMEDGE_CHAN_COPY) {
		if (!off)
			ch->cur_sof_raw = mmedge_counter_read(eng);
		return mmedge_dmaeng_submit(&eng->dmaeng, s, qb->dsgt, off,
					    qb->src_sgt, off, len, ch, qb,
					    off + len == total);
	}
	mmedge_src_fill(&ch->src, ch->cur_seq, off, s->bounce, len);
	return mmedge_dmaeng_submit(&eng->dmaeng, s, qb->dsgt, off, NULL, 0,
				    len, ch, qb, off + len == total);
}

/*
 * dmaengine back end: take back the segments the DMA callbacks completed,
 * in submission order, and complete the frames whose last segment they
 * were, stamped when the callback ran. A segment in flight too long
 * resets the channel and fails. Runs in the fence signalling section
 * (engine thread, channel destroy); the callback takes no lock of ours
 * but the back end's spinlock, so terminating the channel here waits for
 * nothing it needs.
 */
static void mmedge_engine_dma_reap(struct mmedge_engine *eng, u64 now)
{
	struct mmedge_dmaeng *de = &eng->dmaeng;
	struct mmedge_dmaeng_done d;

	lockdep_assert_held(&eng->lock);

	if (!de->chan)
		return;
	if (mmedge_dmaeng_timed_out(de, now)) {
		dev_warn_ratelimited(&eng->mdev->dev,
				     "DMA engine: a segment took over %u ms; resetting the channel\n",
				     MMEDGE_DMAENG_TIMEOUT_MS);
		mmedge_dmaeng_abort(de, -ETIMEDOUT);
	}
	while (mmedge_dmaeng_reap(de, &d)) {
		struct mmedge_chan *ch = d.ctx;

		/* A destroyed channel's frame is cancelled, not completed. */
		if (ch->dead || ch->cur != d.job)
			continue;
		ch->progress_ns = now;
		if (d.error && !d.last) {
			/* Nothing more of this frame goes to the bus. */
			ch->cur_off = mmedge_chan_cur_len(ch);
			if (mmedge_dmaeng_fail_job(de, d.job, d.error))
				continue;
			d.last = true;
		}
		if (!d.last)
			continue;
		dma_sync_sgtable_for_cpu(mmedge_dmaeng_dev(de), ch->cur->dsgt,
					 DMA_BIDIRECTIONAL);
		if (d.error)
			mmedge_chan_complete_at(ch, MMEDGE_FRAME_ERROR, d.error,
						d.done_raw);
		else
			mmedge_chan_frame_end(ch, d.done_raw);
	}
}

/*
 * Can the engine hand a segment to the bus? The dmaengine back end takes
 * one while it has a free slot.
 */
static bool mmedge_engine_bus_room(struct mmedge_engine *eng)
{
	return !eng->dmaeng.chan || mmedge_dmaeng_slot_next(&eng->dmaeng);
}

/**
 * mmedge_engine_dma_drain() - a destroyed channel's segments come back
 * @eng: the engine
 * @ch: the channel, unlinked: the engine submits nothing more for it
 *
 * Called without the engine lock before the channel's jobs are released:
 * waits until the DMA callbacks have completed every segment of @ch
 * (bounded by MMEDGE_DMAENG_TIMEOUT_MS, then the channel is reset) and
 * takes them back, so no buffer is unmapped while the DMA engine writes
 * it.
 */
void mmedge_engine_dma_drain(struct mmedge_engine *eng, struct mmedge_chan *ch)
{
	struct mmedge_dmaeng *de = &eng->dmaeng;
	bool settled, cookie;

	if (!de->chan)
		return;
	settled = wait_event_timeout(de->wq, mmedge_dmaeng_settled(de, ch),
				     msecs_to_jiffies(MMEDGE_DMAENG_TIMEOUT_MS));
	cookie = dma_fence_begin_signalling();
	mutex_lock(&eng->lock);
	if (!settled && !mmedge_dmaeng_settled(de, ch))
		mmedge_dmaeng_abort(de, -ETIMEDOUT);
	mmedge_engine_dma_reap(eng, ktime_get_ns());
	mutex_unlock(&eng->lock);
	dma_fence_end_signalling(cookie);
}

/* Move one segment of @ch's current frame. */
static void mmedge_engine_serve(struct mmedge_engine *eng,
				struct mmedge_chan *ch, u64 now)
{
	u64 total = mmedge_chan_cur_len(ch);
	u64 len = min_t(u64, ch->segment, total - ch->cur_off);
	u64 start = max(now, eng->bus_free_ns);
	u64 t0;

	/* engine_rt at work: the policy the segment was moved under. */
	if (current->policy == SCHED_FIFO)
		atomic64_inc(&eng->rt_segments);

	/*
	 * The engine thread woke late from a pacing sleep while the bus was
	 * busy: keep the modelled bus back to back instead of losing the
	 * time to the scheduler.
	 */
	if (eng->bus_free_ns < now &&
	    now - eng->bus_free_ns <= MMEDGE_PACE_CATCHUP_NS)
		start = clamp(ch->seg_ready_ns, eng->bus_free_ns, now);

	bool dma = ch->cur->dsgt;
	int ret = 0;

	lockdep_assert_held(&eng->lock);

	if (dma) {
		/* dmaengine back end: submit (a bounce filled first), move on. */
		ret = mmedge_engine_dma_segment(eng, ch, len, total);
		if (ret == -EAGAIN)
			return;
		eng->bus_free_ns = ktime_get_ns();
	} else if (ch->dir != MMEDGE_CHAN_CAPTURE) {
		mmedge_engine_move(eng, ch, len);
	} else {
		mmedge_src_fill(&ch->src, ch->cur_seq, ch->cur_off,
				ch->cur->map.vaddr + ch->cur_off, len);
	}
	t0 = ktime_get_ns();
	mmedge_arb_charge(&eng->arb, &ch->arb, len);
	eng->arb_ns += ktime_get_ns() - t0;
	mmedge_chan_stats_segment(ch, len, start > ch->seg_ready_ns ?
				  start - ch->seg_ready_ns : 0, now);

	if (!dma)
		eng->bus_free_ns = start + div64_u64(len * NSEC_PER_SEC,
						     eng->bandwidth);
	ch->seg_ready_ns = eng->bus_free_ns;
	ch->cur_off += len;
	ch->progress_ns = now;
	if (dma) {
		/* A failed segment is the frame's last; it completes it. */
		if (ret)
			ch->cur_off = total;
		if (ch->cur_off >= total)
			mmedge_arb_set_backlogged(&eng->arb, &ch->arb, false);
		return;
	}
	if (ch->cur_off < total)
		return;
	mmedge_chan_frame_end(ch, mmedge_counter_read(eng));
}

/**
 * struct mmedge_engine_sched - the engine thread's scheduling policy
 * @nvcsw: the thread's voluntary context switches when last looked at
 * @run_start_ns: when the thread was first seen running after a sleep
 * @fallbacks: runs that went past MMEDGE_RT_RUN_NS under SCHED_FIFO
 * @rt: the thread is SCHED_FIFO
 * @held: the current run went past MMEDGE_RT_RUN_NS: SCHED_NORMAL until
 *	the thread sleeps
 */
struct mmedge_engine_sched {
	unsigned long nvcsw;
	u64 run_start_ns;
	unsigned long fallbacks;
	bool rt;
	bool held;
};

/**
 * mmedge_engine_sched() - follow engine_rt, with the starvation guard
 * @eng: the engine (its rt_fallbacks counter)
 * @s: the thread's policy state
 *
 * Called by the engine thread at the top of its loop, outside the engine
 * lock and the fence signalling section. With engine_rt set, the thread is
 * SCHED_FIFO at the lowest RT priority (sched_set_fifo_low(): the
 * administrator, not the driver, chooses RT priorities) so that a due
 * segment does not wait behind CFS tasks. A FIFO thread that never sleeps
 * would shut CFS tasks out of its CPU (cond_resched() does not yield to
 * them), so a run longer than MMEDGE_RT_RUN_NS since the last voluntary
 * sleep continues under SCHED_NORMAL until the next one.
 */
static void mmedge_engine_sched(struct mmedge_engine *eng,
				struct mmedge_engine_sched *s)
{
	u64 now = ktime_get_ns();
	bool want;

	if (current->nvcsw != s->nvcsw) {
		s->nvcsw = current->nvcsw;
		s->run_start_ns = now;
		s->held = false;
	} else if (s->rt && now - s->run_start_ns > MMEDGE_RT_RUN_NS) {
		s->held = true;
		s->fallbacks++;
		atomic64_inc(&eng->rt_fallbacks);
	}
	want = READ_ONCE(engine_rt) && !s->held;
	if (want == s->rt)
		return;
	if (want)
		sched_set_fifo_low(current);
	else
		sched_set_normal(current, 0);
	s->rt = want;
}

/*
 * dmaengine back end: after a segment was submitted, fill the other free
 * slots with what the arbiter picks next, then start them all with one
 * issue, so that the controller has several segments queued. Nothing is
 * left unissued when the engine lock is dropped. A slot is free only
 * while the channel has descriptors (mmedge_dmaeng_slot_next()).
 */
static void mmedge_engine_dma_fill(struct mmedge_engine *eng, u64 now,
				   u64 *wait)
{
	struct mmedge_arb_chan *ac;
	u64 t0;

	lockdep_assert_held(&eng->lock);

	while (mmedge_engine_bus_room(eng)) {
		t0 = ktime_get_ns();
		ac = mmedge_arb_pick(&eng->arb, now, wait);
		if (!ac)
			break;
		eng->arb_ns += ktime_get_ns() - t0;
		eng->arb_picks++;
		mmedge_engine_serve(eng, container_of(ac, struct mmedge_chan, arb),
				    now);
	}
	mmedge_dmaeng_issue(&eng->dmaeng);
}

static int mmedge_engine_thread(void *data)
{
	struct mmedge_engine *eng = data;
	u64 last_anchor = 0, last_adapt = 0;
	struct mmedge_engine_sched sched = {
		.nvcsw = current->nvcsw,
		.run_start_ns = ktime_get_ns(),
		.rt = current->policy == SCHED_FIFO,
	};

	while (!kthread_should_stop()) {
		struct mmedge_arb_chan *ac;
		u64 now, t0, wait = 0, ahead = 0;
		bool cookie;

		mmedge_engine_sched(eng, &sched);

		spin_lock_irq(&eng->irq_lock);
		eng->kick = false;
		spin_unlock_irq(&eng->irq_lock);

		if (READ_ONCE(inject_stall_ms)) {
			unsigned int ms = xchg(&inject_stall_ms, 0);

			msleep(ms);
			mmedge_nl_engine_stall(eng->mdev, (u64)ms * NSEC_PER_MSEC);
			continue;
		}

		/* Fences signal in here: no allocation, resv lock or wait. */
		cookie = dma_fence_begin_signalling();
		mutex_lock(&eng->lock);
		now = ktime_get_ns();
		if (now - last_anchor >= MMEDGE_ANCHOR_NS) {
			mmedge_clock_anchor(eng);
			last_anchor = now;
		}
		if (READ_ONCE(adaptive) &&
		    now - last_adapt >= MMEDGE_ADAPT_PERIOD_NS) {
			mmedge_engine_adapt(eng);
			last_adapt = now;
		}
		mmedge_engine_dma_reap(eng, now);
		mmedge_engine_absorb(eng, now);
		t0 = ktime_get_ns();
		/* The dmaengine back end's callbacks kick when a slot frees. */
		ac = mmedge_engine_bus_room(eng) ?
		     mmedge_arb_pick(&eng->arb, now, &wait) : NULL;
		if (ac) {
			/* The arbiter's own cost: pick and charge. */
			eng->arb_ns += ktime_get_ns() - t0;
			eng->arb_picks++;
		}
		if (ac) {
			mmedge_engine_serve(eng, container_of(ac, struct mmedge_chan,
							      arb), now);
			if (eng->bus_free_ns > now + MMEDGE_PACE_SLACK_NS)
				ahead = eng->bus_free_ns - now;
		}
		if (ac && eng->dmaeng.chan)
			mmedge_engine_dma_fill(eng, now, &wait);
		mutex_unlock(&eng->lock);
		dma_fence_end_signalling(cookie);

		mmedge_engine_send_events(eng);

		if (ac) {
			/* Keep pace with the modelled bus. */
			if (ahead) {
				ktime_t until = ns_to_ktime(now + ahead);

				set_current_state(TASK_INTERRUPTIBLE);
				schedule_hrtimeout_range(&until, 50 * NSEC_PER_USEC,
							 HRTIMER_MODE_ABS);
			}
			cond_resched();
			continue;
		}
		/*
		 * A capped channel's budget refills at ns resolution; the
		 * fence bound is checked at least every 100 ms.
		 */
		wait = wait ? min_t(u64, wait, NSEC_PER_SEC / 10) :
			      NSEC_PER_SEC / 10;
		wait_event_interruptible_hrtimeout(eng->wq,
						   READ_ONCE(eng->kick) ||
						   kthread_should_stop(),
						   ns_to_ktime(wait));
	}
	if (sched.fallbacks)
		dev_dbg(&eng->mdev->dev,
			"engine: %lu SCHED_FIFO runs went past %u us\n",
			sched.fallbacks,
			(unsigned int)(MMEDGE_RT_RUN_NS / NSEC_PER_USEC));
	return 0;
}

/* The dmaengine back end's completion stamp and wake-up (any context). */
static u64 mmedge_engine_dma_stamp(void *arg)
{
	return mmedge_counter_read(arg);
}

static void mmedge_engine_dma_notify(void *arg)
{
	mmedge_engine_kick(arg);
}

int mmedge_engine_init(struct mmedge_engine *eng, struct mmedge_dev *mdev)
{
	int ret;

	eng->mdev = mdev;
	mutex_init(&eng->lock);
	spin_lock_init(&eng->irq_lock);
	init_waitqueue_head(&eng->wq);
	init_waitqueue_head(&eng->done_wq);
	INIT_LIST_HEAD(&eng->chans);
	atomic_set(&eng->freeing, 0);
	atomic64_set(&eng->rt_segments, 0);
	atomic64_set(&eng->rt_fallbacks, 0);
	mmedge_arb_init(&eng->arb, MMEDGE_BURST_NS);
	eng->bandwidth = clamp_t(u64, bus_bandwidth, MMEDGE_BUS_MIN_BW,
				 MMEDGE_BUS_MAX_BW);
	eng->ev = kzalloc(sizeof(*eng->ev), GFP_KERNEL);
	if (!eng->ev)
		return -ENOMEM;
	mmedge_clock_calibrate(eng);
	mutex_lock(&eng->lock);
	mmedge_clock_anchor(eng);
	mutex_unlock(&eng->lock);

	ret = mmedge_dmaeng_init(&eng->dmaeng, mdev->dma_dev,
				 MMEDGE_SEGMENT_MAX, mmedge_engine_dma_stamp,
				 mmedge_engine_dma_notify, eng);
	if (ret)
		goto err_free;

	eng->thread = kthread_create(mmedge_engine_thread, eng, "mmedge%d-eng",
				     mdev->id);
	if (IS_ERR(eng->thread)) {
		ret = PTR_ERR(eng->thread);
		mmedge_dmaeng_fini(&eng->dmaeng);
		goto err_free;
	}
	if (READ_ONCE(engine_rt))
		sched_set_fifo_low(eng->thread);
	wake_up_process(eng->thread);
	return 0;

err_free:
	kfree(eng->ev);
	eng->ev = NULL;
	return ret;
}

/*
 * The next channel of the instance the engine has not stopped yet,
 * referenced and marked dead, or NULL.
 */
static struct mmedge_chan *mmedge_engine_next_live(struct mmedge_engine *eng)
{
	struct mmedge_chan *ch;

	lockdep_assert_held(&eng->lock);
	list_for_each_entry(ch, &eng->chans, node) {
		if (!ch->dead) {
			ch->dead = true;
			kref_get(&ch->ref);
			return ch;
		}
	}
	return NULL;
}

/**
 * mmedge_engine_fini() - the instance goes: stop the engine
 * @eng: the engine
 *
 * Wakes every waiter, stops the engine thread, stops every channel (its
 * timer, its DROP_OLDEST work) and completes all its jobs with -ENODEV:
 * their fences signal with that error and their buffers are released, so
 * no fence waits for the files to close. The channels themselves stay,
 * dead, until their files close. Then the dmaengine back end, which no
 * buffer is mapped for any more, is released.
 */
void mmedge_engine_fini(struct mmedge_engine *eng)
{
	struct mmedge_chan *ch;
	LIST_HEAD(jobs);

	WRITE_ONCE(eng->dying, true);
	wake_up_all(&eng->done_wq);
	kthread_stop(eng->thread);

	mutex_lock(&eng->lock);
	eng->dead = true;
	/* The DMA engine stops before any buffer it writes is released. */
	if (eng->dmaeng.chan) {
		mmedge_dmaeng_abort(&eng->dmaeng, -ENODEV);
		mmedge_engine_dma_reap(eng, ktime_get_ns());
	}
	mutex_unlock(&eng->lock);
	for (;;) {
		mutex_lock(&eng->lock);
		ch = mmedge_engine_next_live(eng);
		mutex_unlock(&eng->lock);
		if (!ch)
			break;
		cancel_work_sync(&ch->rearm_work);
		hrtimer_cancel(&ch->timer);
		mutex_lock(&eng->lock);
		mmedge_chan_cancel_jobs(ch, &jobs);
		mutex_unlock(&eng->lock);
		mmedge_qb_free_list(&jobs, -ENODEV);
		mmedge_chan_put(ch);
	}
	/* Channels being destroyed by a close may still unmap buffers. */
	wait_event(eng->done_wq, !atomic_read(&eng->freeing));
	mmedge_dmaeng_fini(&eng->dmaeng);
	kfree(eng->ev);
	eng->ev = NULL;
}

void mmedge_engine_wake_waiters(struct mmedge_engine *eng)
{
	WRITE_ONCE(eng->dying, true);
	wake_up_all(&eng->done_wq);
}

u64 mmedge_engine_get_bus(struct mmedge_engine *eng)
{
	u64 bw;

	mutex_lock(&eng->lock);
	bw = eng->bandwidth;
	mutex_unlock(&eng->lock);
	return bw;
}

/* The caller checked the range and the privilege. */
void mmedge_engine_set_bus(struct mmedge_engine *eng, u64 bandwidth)
{
	mutex_lock(&eng->lock);
	eng->bandwidth = bandwidth;
	mutex_unlock(&eng->lock);
}

/* Mean time the arbiter takes per segment (pick + charge), ns. */
u64 mmedge_engine_arb_ns(struct mmedge_engine *eng)
{
	u64 ns;

	mutex_lock(&eng->lock);
	ns = eng->arb_picks ? div64_u64(eng->arb_ns, eng->arb_picks) : 0;
	mutex_unlock(&eng->lock);
	return ns;
}

/**
 * mmedge_engine_chan_info() - snapshot a channel's config and stats
 * @eng: the engine
 * @pos: take the @pos-th channel (for dumps) if @id is 0 and @name NULL
 * @id: channel id, or 0
 * @name: channel name, or NULL
 * @ci: filled in
 *
 * The one source of channel config and stats for ioctl and netlink.
 *
 * Return: 0, or -ENOENT.
 */
int mmedge_engine_chan_info(struct mmedge_engine *eng, unsigned int pos,
			    u32 id, const char *name,
			    struct mmedge_chan_info *ci)
{
	struct mmedge_chan *ch, *found = NULL;
	unsigned int i = 0;

	mutex_lock(&eng->lock);
	list_for_each_entry(ch, &eng->chans, node) {
		if (id ? ch->id == id : name ? !strcmp(ch->name, name) :
		    i++ == pos) {
			found = ch;
			break;
		}
	}
	if (found)
		mmedge_chan_info_fill(found, ci);
	mutex_unlock(&eng->lock);
	return found ? 0 : -ENOENT;
}

unsigned int mmedge_engine_nr_chans(struct mmedge_engine *eng)
{
	struct mmedge_chan *ch;
	unsigned int n = 0;

	mutex_lock(&eng->lock);
	list_for_each_entry(ch, &eng->chans, node)
		n++;
	mutex_unlock(&eng->lock);
	return n;
}

static int mmedge_setting_check(struct mmedge_engine *eng,
				struct mmedge_chan_setting *st,
				const struct mmedge_chan_perm *perm,
				struct mmedge_chan **out, const char **why)
{
	struct mmedge_chan *ch;
	u32 weight, class;
	u64 cap;

	lockdep_assert_held(&eng->lock);

	ch = st->id ? mmedge_chan_find(eng, st->id) :
		      mmedge_chan_find_name(eng, st->name);
	if (!ch) {
		*why = "no such channel";
		return -ENOENT;
	}
	if (st->set & ~MMEDGE_CHAN_SET_VALID) {
		*why = "unknown settings";
		return -EINVAL;
	}
	weight = st->set & MMEDGE_CHAN_SET_WEIGHT ? st->weight : ch->arb.weight;
	class = st->set & MMEDGE_CHAN_SET_CLASS ? st->class : ch->arb.class;
	cap = st->set & MMEDGE_CHAN_SET_CAP ? st->cap : ch->arb.cap;
	/* The same check as CHAN_CREATE's; the message says which part. */
	if (mmedge_arb_check_config(weight, class, cap)) {
		if (weight < MMEDGE_WEIGHT_MIN || weight > MMEDGE_WEIGHT_MAX)
			*why = "weight out of range 1..10000";
		else if (class != MMEDGE_CLASS_BEST_EFFORT &&
			 class != MMEDGE_CLASS_LATENCY)
			*why = "unknown class";
		else if (class == MMEDGE_CLASS_LATENCY && !cap)
			*why = "the latency class needs a rate cap";
		else
			*why = "rate cap above 100 GB/s";
		return -EINVAL;
	}
	if (st->set && perm->owner && ch->mf != perm->owner &&
	    !perm->can_other) {
		*why = "need CAP_NET_ADMIN or CAP_SYS_NICE to change another file's channel";
		return -EPERM;
	}
	/* Only raising needs the privilege, not keeping a raise. */
	if (!perm->can_nice && weight > MMEDGE_WEIGHT_DEFAULT &&
	    weight > ch->arb.weight) {
		*why = "need CAP_SYS_NICE to raise a weight above 100";
		return -EPERM;
	}
	if (!perm->can_nice && class == MMEDGE_CLASS_LATENCY &&
	    (ch->arb.class != MMEDGE_CLASS_LATENCY || cap > ch->arb.cap)) {
		*why = "need CAP_SYS_NICE for the latency class or to raise its cap";
		return -EPERM;
	}
	st->weight = weight;
	st->class = class;
	st->cap = cap;
	*out = ch;
	return 0;
}

/**
 * mmedge_engine_apply() - change several channels' settings atomically
 * @eng: the engine
 * @st: the settings; on success each holds the channel's new values
 * @n: entries in @st
 * @perm: what the caller may do
 * @bad: on failure, the index of the entry at fault
 * @why: on failure, a message for the operator
 *
 * All entries are checked before any is applied: all or nothing. Changes
 * apply from the next segment and are announced on the "events" group.
 *
 * Return: 0, -ENOENT (no such channel), -EINVAL, -EPERM, -ENOMEM.
 */
int mmedge_engine_apply(struct mmedge_engine *eng,
			struct mmedge_chan_setting *st, unsigned int n,
			const struct mmedge_chan_perm *perm, unsigned int *bad,
			const char **why)
{
	struct mmedge_chan **chs;
	struct mmedge_chan_info *ci;
	u32 *old;
	unsigned int i;
	int ret = 0;

	chs = kcalloc(n, sizeof(*chs), GFP_KERNEL);
	ci = kcalloc(n, sizeof(*ci), GFP_KERNEL);
	old = kcalloc(n, sizeof(*old), GFP_KERNEL);
	if (!chs || !ci || !old) {
		ret = -ENOMEM;
		*why = "out of memory";
		goto out;
	}
	mutex_lock(&eng->lock);
	for (i = 0; i < n; i++) {
		ret = mmedge_setting_check(eng, &st[i], perm, &chs[i], why);
		if (ret) {
			*bad = i;
			break;
		}
	}
	for (i = 0; !ret && i < n; i++) {
		struct mmedge_chan *ch = chs[i];

		old[i] = ch->arb.weight;
		if (!st[i].set)
			continue;
		mmedge_arb_set(&ch->arb, st[i].weight, st[i].class, st[i].cap);
		mmedge_chan_info_fill(ch, &ci[i]);
	}
	mutex_unlock(&eng->lock);
	/* The events allocate: after the engine's lock. */
	for (i = 0; !ret && i < n; i++)
		if (st[i].set)
			mmedge_nl_chan_changed(eng->mdev, &ci[i], old[i], false);
out:
	kfree(old);
	kfree(ci);
	kfree(chs);
	return ret;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * mmedge: channels, the soft DMA engine, hardware timestamps and fences.
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
 */

#include <linux/crc32.h>
#include <linux/delay.h>
#include <linux/dma-buf.h>
#include <linux/dma-fence.h>
#include <linux/dma-resv.h>
#include <linux/file.h>
#include <linux/ktime.h>
#include <linux/log2.h>
#include <linux/poll.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/sync_file.h>
#include <linux/timekeeping.h>
#include <linux/timex.h>
#ifdef CONFIG_X86_TSC
#include <asm/tsc.h>
#endif

#include "mmedge_chan.h"
#include "mmedge_drv.h"
#include "mmedge_nl.h"
#include "mmedge_src.h"
#include "mmedge_uapi.h"

#define MMEDGE_SEGMENT_DEFAULT		4096
#define MMEDGE_SEGMENT_MIN		64
#define MMEDGE_SEGMENT_MAX		SZ_1M
#define MMEDGE_BUS_DEFAULT		(200ULL * 1000 * 1000)
#define MMEDGE_BURST_NS			(2 * NSEC_PER_MSEC)
#define MMEDGE_ANCHOR_NS		NSEC_PER_SEC
/* The engine sleeps once it is this far ahead of the modelled bus. */
#define MMEDGE_PACE_SLACK_NS		(500 * NSEC_PER_USEC)
/* A late wake-up within this of the bus going free loses no bus time. */
#define MMEDGE_PACE_CATCHUP_NS		(2 * NSEC_PER_MSEC)
/* At most 10 drop events per second per channel. */
#define MMEDGE_DROP_EVENT_NS		(100 * NSEC_PER_MSEC)

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

#define MMEDGE_ADAPT_PERIOD_NS		(200 * NSEC_PER_MSEC)
#define MMEDGE_ADAPT_HYSTERESIS		25	/* permille */
#define MMEDGE_ADAPT_STEP		50	/* permille per period */

static bool mmedge_inject(unsigned int every, u64 seq)
{
	return every && (seq + 1) % every == 0;
}

/**
 * struct mmedge_qb - a buffer queued on a channel
 * @node: in the channel's queued or done list.
 * @dmabuf: the buffer (referenced).
 * @map: its kernel mapping.
 * @cookie: userspace's tag.
 * @fence: signalled when the buffer is filled (feed: consumed).
 * @src: copy: the source buffer (referenced); else NULL.
 * @src_map: its kernel mapping.
 * @len: feed, copy: bytes to move; capture: 0.
 * @queued_ns: when the job was queued (feed, copy: its first segment is
 *	ready then).
 * @crc: feed: running CRC-32 of what the sink read, then the final one.
 * @flags: MMEDGE_FRAME_* of the frame it holds.
 * @sequence: frame number.
 * @bytesused: bytes of data.
 * @ts: the frame's timestamps.
 * @dropped: the channel's drop count when the frame completed.
 * @att: attachment to the dmaengine back end's device, if there is one.
 * @dsgt: the buffer mapped for it.
 */
struct mmedge_qb {
	struct list_head node;
	struct dma_buf *dmabuf;
	struct iosys_map map;
	u64 cookie;
	struct dma_fence *fence;
	struct dma_buf *src;
	struct iosys_map src_map;
	u64 len;
	u64 queued_ns;
	u32 crc;
	u32 flags;
	u64 sequence;
	u64 bytesused;
	struct mmedge_timestamps ts;
	u64 dropped;
	struct dma_buf_attachment *att;
	struct sg_table *dsgt;
};

/**
 * struct mmedge_chan - a channel
 * @eng: the engine it belongs to.
 * @mf: the file that created it (not referenced: it dies with the file).
 * @id: channel id, unique in the instance.
 * @name: channel name, unique in the instance.
 * @node: in mmedge_engine.chans.
 * @dir: MMEDGE_CHAN_*.
 * @src: the source configuration (capture).
 * @frame_bytes: data bytes per frame (capture).
 * @meta_offset: where the in-band record goes.
 * @segment: bytes per arbitration segment.
 * @overrun: MMEDGE_OVERRUN_*.
 * @period_ns: time between frames.
 * @arb: the arbiter's view.
 * @queued: empty buffers, in order.
 * @done: filled buffers waiting for dequeue.
 * @cur: the buffer being filled.
 * @cur_off: bytes of the current frame moved so far.
 * @cur_seq: the current frame's number.
 * @cur_sof_raw: its start-of-frame counter value.
 * @frame_pending: a frame is due or in progress.
 * @seg_ready_ns: when the next segment became ready (for the wait
 *	histogram).
 * @seq_next: number of the next frame.
 * @drop_mark: frames were dropped since the last completed one.
 * @streaming: the timer runs (started by the first queued buffer).
 * @timer: paces the virtual source.
 * @frames_due: frames the timer produced that the engine has not taken
 *	(under mmedge_engine.irq_lock).
 * @due_raw: counter value when the first of them became due.
 * @due_ns: CLOCK_MONOTONIC then.
 * @fence_lock: the fences' lock.
 * @fence_ctx: the channel's dma-fence context.
 * @fence_seqno: last fence seqno.
 * @bytes: stats: bytes moved.
 * @segments: stats: segments moved.
 * @frames: stats: frames completed.
 * @dropped: stats: frames dropped.
 * @errors: stats: frames completed with an error.
 * @bw_ewma: stats: achieved bandwidth.
 * @bw_bytes: bytes since @bw_start_ns.
 * @bw_start_ns: start of the current bandwidth window.
 * @wait_hist: stats: segment queue-wait histogram.
 * @drops_reported: drops announced on netlink so far.
 * @drop_event_ns: when the last drop event went out.
 */
struct mmedge_chan {
	struct mmedge_engine *eng;
	struct mmedge_file *mf;
	u32 id;
	char name[MMEDGE_NAME_LEN];
	struct list_head node;
	u32 dir;
	struct mmedge_src_config src;
	u64 frame_bytes;
	u32 meta_offset;
	u32 segment;
	u32 overrun;
	u64 period_ns;
	struct mmedge_arb_chan arb;

	struct list_head queued;
	struct list_head done;
	struct mmedge_qb *cur;
	u64 cur_off;
	u64 cur_seq;
	u64 cur_sof_raw;
	bool frame_pending;
	u64 seg_ready_ns;
	u64 seq_next;
	bool drop_mark;
	bool streaming;

	struct hrtimer timer;
	unsigned int frames_due;
	u64 due_raw;
	u64 due_ns;

	/* Protects the fences' state (dma_fence's own lock). */
	spinlock_t fence_lock;
	u64 fence_ctx;
	u64 fence_seqno;

	u64 bytes;
	u64 segments;
	u64 frames;
	u64 dropped;
	u64 errors;
	u64 bw_ewma;
	u64 bw_bytes;
	u64 bw_start_ns;
	u64 wait_hist[MMEDGE_WAIT_BUCKETS];
	u64 drops_reported;
	u64 drop_event_ns;
};

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

static u64 mmedge_counter_read(const struct mmedge_engine *eng)
{
	if (!eng->counter_hz || eng->counter_hz == NSEC_PER_SEC)
		return ktime_get_raw_ns();
	return get_cycles();
}

/* Anchor the counter conversion on a (mono, counter, mono) sandwich. */
static void mmedge_engine_anchor(struct mmedge_engine *eng)
{
	u64 before, raw, after;

	lockdep_assert_held(&eng->lock);
	before = ktime_get_ns();
	raw = mmedge_counter_read(eng);
	after = ktime_get_ns();
	mmedge_ts_anchor(&eng->tc_mono, raw, before + (after - before) / 2);
	eng->boot_offset = ktime_to_ns(ktime_mono_to_any(0, TK_OFFS_BOOT));
}

/*
 * The cycle counter is only a timestamp source if it is one clock for all
 * CPUs. On x86 the kernel finds out at boot (and from its clocksource
 * watchdog) whether the TSCs are synchronised; a guest whose vCPUs' TSCs
 * drift apart gets "Marking TSC unstable" and so does this driver.
 */
static bool mmedge_cycles_usable(void)
{
#ifdef CONFIG_X86_TSC
	return !check_tsc_unstable();
#else
	return true;
#endif
}

static void mmedge_engine_calibrate(struct mmedge_engine *eng)
{
	u64 t0, r0, t1, r1, hz = 0;

	eng->counter_hz = 0;
	if (mmedge_cycles_usable()) {
		r0 = get_cycles();
		t0 = ktime_get_raw_ns();
		usleep_range(20000, 21000);
		r1 = get_cycles();
		t1 = ktime_get_raw_ns();
		hz = r1 > r0 ? mmedge_ts_hz(r1 - r0, t1 - t0) : 0;
	}
	if (!hz || mmedge_ts_calc(&eng->tc_mono, hz, 64)) {
		/* No usable cycle counter: use the raw monotonic clock. */
		hz = NSEC_PER_SEC;
		mmedge_ts_calc(&eng->tc_mono, hz, 64);
	}
	eng->counter_hz = hz;
}

static const char *mmedge_fence_driver_name(struct dma_fence *fence)
{
	return "mmedge";
}

static const char *mmedge_fence_timeline_name(struct dma_fence *fence)
{
	return "mmedge-chan";
}

static const struct dma_fence_ops mmedge_fence_ops = {
	.get_driver_name = mmedge_fence_driver_name,
	.get_timeline_name = mmedge_fence_timeline_name,
};

static int mmedge_resv_add(struct dma_buf *dmabuf, struct dma_fence *fence,
			   enum dma_resv_usage usage)
{
	int ret;

	ret = dma_resv_lock_interruptible(dmabuf->resv, NULL);
	if (ret)
		return ret;
	ret = dma_resv_reserve_fences(dmabuf->resv, 1);
	if (!ret)
		dma_resv_add_fence(dmabuf->resv, fence, usage);
	dma_resv_unlock(dmabuf->resv);
	return ret;
}

/*
 * Give @qb a new unsignalled fence, added to the buffer the engine writes
 * as a write fence, and to a buffer it only reads (a feed's buffer, a
 * copy's source) as a read fence.
 */
static int mmedge_qb_arm_fence(struct mmedge_chan *ch, struct mmedge_qb *qb)
{
	struct dma_fence *fence;
	int ret;

	fence = kzalloc(sizeof(*fence), GFP_KERNEL);
	if (!fence)
		return -ENOMEM;
	dma_fence_init(fence, &mmedge_fence_ops, &ch->fence_lock,
		       ch->fence_ctx, ++ch->fence_seqno);

	ret = mmedge_resv_add(qb->dmabuf, fence, ch->dir == MMEDGE_CHAN_FEED ?
			      DMA_RESV_USAGE_READ : DMA_RESV_USAGE_WRITE);
	if (!ret && qb->src)
		ret = mmedge_resv_add(qb->src, fence, DMA_RESV_USAGE_READ);
	if (ret) {
		/* Already in a reservation object: it must not stay pending. */
		dma_fence_set_error(fence, ret);
		dma_fence_signal(fence);
		goto err_put;
	}

	if (qb->fence)
		dma_fence_put(qb->fence);
	qb->fence = fence;
	return 0;

err_put:
	dma_fence_put(fence);
	return ret;
}

static void mmedge_qb_free(struct mmedge_qb *qb, int error)
{
	if (qb->fence) {
		if (!dma_fence_is_signaled(qb->fence)) {
			dma_fence_set_error(qb->fence, error);
			dma_fence_signal(qb->fence);
		}
		dma_fence_put(qb->fence);
	}
	if (qb->dsgt)
		dma_buf_unmap_attachment(qb->att, qb->dsgt, DMA_FROM_DEVICE);
	if (qb->att)
		dma_buf_detach(qb->dmabuf, qb->att);
	if (qb->map.vaddr)
		dma_buf_vunmap(qb->dmabuf, &qb->map);
	if (qb->src_map.vaddr)
		dma_buf_vunmap(qb->src, &qb->src_map);
	if (qb->src)
		dma_buf_put(qb->src);
	dma_buf_put(qb->dmabuf);
	kfree(qb);
}

static struct mmedge_chan *mmedge_chan_find(struct mmedge_engine *eng, u32 id)
{
	struct mmedge_chan *ch;

	lockdep_assert_held(&eng->lock);
	list_for_each_entry(ch, &eng->chans, node)
		if (ch->id == id)
			return ch;
	return NULL;
}

static struct mmedge_chan *mmedge_chan_find_name(struct mmedge_engine *eng,
						 const char *name)
{
	struct mmedge_chan *ch;

	lockdep_assert_held(&eng->lock);
	list_for_each_entry(ch, &eng->chans, node)
		if (!strcmp(ch->name, name))
			return ch;
	return NULL;
}

static struct mmedge_chan *mmedge_chan_find_own(struct mmedge_file *mf, u32 id)
{
	struct mmedge_chan *ch = mmedge_chan_find(&mf->mdev->eng, id);

	return ch && ch->mf == mf ? ch : NULL;
}

static enum hrtimer_restart mmedge_chan_timer(struct hrtimer *t)
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

static void mmedge_chan_complete(struct mmedge_chan *ch, u32 flags)
{
	struct mmedge_engine *eng = ch->eng;
	struct mmedge_qb *qb = ch->cur;
	struct mmedge_frame_meta *meta;
	u64 eof_raw = mmedge_counter_read(eng);

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
	qb->dropped = ch->dropped;
	if (ch->dir == MMEDGE_CHAN_FEED) {
		qb->crc = ~qb->crc;
		goto done;
	}

	meta = qb->map.vaddr + (ch->dir == MMEDGE_CHAN_COPY ?
				ALIGN(qb->len, 64) : ch->meta_offset);
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

done:
	list_add_tail(&qb->node, &ch->done);
	ch->frames++;
	if (flags & MMEDGE_FRAME_ERROR)
		ch->errors++;
	if (flags & MMEDGE_FRAME_ERROR)
		dma_fence_set_error(qb->fence, -EIO);
	dma_fence_signal(qb->fence);

	ch->cur = NULL;
	ch->frame_pending = false;
	ch->drop_mark = false;
	mmedge_arb_set_backlogged(&eng->arb, &ch->arb, false);
	atomic_inc(&ch->mf->done_events);
	wake_up_interruptible(&eng->done_wq);
}

/* Feed, copy: the oldest queued job, if none is in progress, is next. */
static void mmedge_chan_take_job(struct mmedge_chan *ch)
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
}

/* Take frames the timers made due; give each pending frame a buffer. */
static void mmedge_engine_absorb(struct mmedge_engine *eng, u64 now)
{
	struct mmedge_chan *ch;

	lockdep_assert_held(&eng->lock);

	list_for_each_entry(ch, &eng->chans, node) {
		unsigned int due;
		u64 due_raw, due_ns;

		if (ch->dir != MMEDGE_CHAN_CAPTURE) {
			mmedge_chan_take_job(ch);
			mmedge_arb_set_backlogged(&eng->arb, &ch->arb, ch->cur);
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
			ch->dropped += due;
			ch->seq_next += due;
			ch->drop_mark = true;
		} else if (due) {
			ch->dropped += due - 1;
			ch->seq_next += due - 1;
			ch->drop_mark |= due > 1;
			ch->frame_pending = true;
			ch->cur_seq = ch->seq_next++;
			ch->cur_sof_raw = due_raw;
			ch->seg_ready_ns = due_ns;
			ch->cur_off = 0;
			if (mmedge_inject(READ_ONCE(inject_drop_every),
					  ch->cur_seq)) {
				ch->dropped++;
				ch->drop_mark = true;
				ch->frame_pending = false;
			}
		}

		if (ch->frame_pending && !ch->cur) {
			struct mmedge_qb *qb = NULL;

			if (!list_empty(&ch->queued)) {
				qb = list_first_entry(&ch->queued,
						      struct mmedge_qb, node);
			} else if (ch->overrun == MMEDGE_OVERRUN_DROP_OLDEST &&
				   !list_empty(&ch->done)) {
				qb = list_first_entry(&ch->done,
						      struct mmedge_qb, node);
				if (mmedge_qb_arm_fence(ch, qb)) {
					qb = NULL;
				} else {
					ch->dropped++;
					ch->drop_mark = true;
				}
			}
			if (qb) {
				list_del(&qb->node);
				ch->cur = qb;
			} else {
				ch->dropped++;
				ch->drop_mark = true;
				ch->frame_pending = false;
			}
		}
		mmedge_arb_set_backlogged(&eng->arb, &ch->arb, ch->cur);
		mmedge_chan_stats_bw(ch, now);

		if (ch->dropped != ch->drops_reported &&
		    now - ch->drop_event_ns >= MMEDGE_DROP_EVENT_NS) {
			mmedge_nl_chan_drop(eng->mdev, ch->id, ch->name,
					    ch->dropped - ch->drops_reported);
			ch->drops_reported = ch->dropped;
			ch->drop_event_ns = now;
		}
	}
}

/*
 * Adaptive mode: the camera channels' share of the weights moves toward
 * clamp(0.3 + 0.7 x their bandwidth share, 0.2, 0.8), by at most
 * MMEDGE_ADAPT_STEP per period and only past MMEDGE_ADAPT_HYSTERESIS.
 * Latency-class channels are left alone.
 */
static void mmedge_engine_adapt(struct mmedge_engine *eng)
{
	u64 img_bw = 0, tot_bw = 0, w_img = 0, w_oth = 0, w_new;
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
		struct mmedge_chan_info ci;

		ch->arb.weight = clamp_t(u64, div64_u64(ch->arb.weight * w_new,
							w_img),
					 MMEDGE_WEIGHT_MIN, MMEDGE_WEIGHT_MAX);
		if (ch->arb.weight == old)
			continue;
		mmedge_chan_info_fill(ch, &ci);
		mmedge_nl_chan_changed(eng->mdev, &ci, old, true);
	}
}

/* Bytes of @ch's current frame or job. */
static u64 mmedge_chan_cur_len(const struct mmedge_chan *ch)
{
	return ch->dir == MMEDGE_CHAN_CAPTURE ? ch->frame_bytes : ch->cur->len;
}

/*
 * Feed, copy: move one segment out of memory: to the virtual sink, which
 * reads it and folds it into the job's CRC-32, or into the destination.
 * Return: MMEDGE_FRAME_ERROR if the dmaengine back end failed, else 0.
 */
static u32 mmedge_engine_move(struct mmedge_engine *eng, struct mmedge_chan *ch,
			      u64 len)
{
	struct mmedge_qb *qb = ch->cur;
	u64 off = ch->cur_off;

	lockdep_assert_held(&eng->lock);

	if (!off)
		ch->cur_sof_raw = mmedge_counter_read(eng);
	if (ch->dir == MMEDGE_CHAN_FEED) {
		qb->crc = crc32_le(qb->crc, qb->map.vaddr + off, len);
		return 0;
	}
	if (qb->dsgt) {
		memcpy(eng->dmaeng.bounce, qb->src_map.vaddr + off, len);
		return mmedge_dmaeng_copy(&eng->dmaeng, qb->dsgt, off, len) ?
		       MMEDGE_FRAME_ERROR : 0;
	}
	memcpy(qb->map.vaddr + off, qb->src_map.vaddr + off, len);
	return 0;
}

/* Move one segment of @ch's current frame. */
static void mmedge_engine_serve(struct mmedge_engine *eng,
				struct mmedge_chan *ch, u64 now)
{
	u64 total = mmedge_chan_cur_len(ch);
	u64 len = min_t(u64, ch->segment, total - ch->cur_off);
	u64 start = max(now, eng->bus_free_ns);
	u64 t0;

	/*
	 * The engine thread woke late from a pacing sleep while the bus was
	 * busy: keep the modelled bus back to back instead of losing the
	 * time to the scheduler.
	 */
	if (eng->bus_free_ns < now &&
	    now - eng->bus_free_ns <= MMEDGE_PACE_CATCHUP_NS)
		start = clamp(ch->seg_ready_ns, eng->bus_free_ns, now);

	u32 error = 0;

	lockdep_assert_held(&eng->lock);

	if (ch->dir != MMEDGE_CHAN_CAPTURE) {
		error = mmedge_engine_move(eng, ch, len);
		if (ch->cur->dsgt)
			eng->bus_free_ns = ktime_get_ns();
	} else if (ch->cur->dsgt) {
		/* dmaengine back end: produce, then let the DMA engine move it. */
		mmedge_src_fill(&ch->src, ch->cur_seq, ch->cur_off,
				eng->dmaeng.bounce, len);
		if (mmedge_dmaeng_copy(&eng->dmaeng, ch->cur->dsgt, ch->cur_off,
				       len))
			error = MMEDGE_FRAME_ERROR;
		eng->bus_free_ns = ktime_get_ns();
	} else {
		mmedge_src_fill(&ch->src, ch->cur_seq, ch->cur_off,
				ch->cur->map.vaddr + ch->cur_off, len);
	}
	t0 = ktime_get_ns();
	mmedge_arb_charge(&eng->arb, &ch->arb, len);
	eng->arb_ns += ktime_get_ns() - t0;
	mmedge_chan_stats_segment(ch, len, start > ch->seg_ready_ns ?
				  start - ch->seg_ready_ns : 0, now);

	if (!ch->cur->dsgt)
		eng->bus_free_ns = start + div64_u64(len * NSEC_PER_SEC,
						     eng->bandwidth);
	ch->seg_ready_ns = eng->bus_free_ns;
	ch->cur_off += len;
	if (error) {
		mmedge_chan_complete(ch, error);
		return;
	}
	if (ch->cur_off < total)
		return;
	/* A feed's buffer is the user's data: the device never writes it. */
	if (ch->dir != MMEDGE_CHAN_FEED &&
	    mmedge_inject(READ_ONCE(inject_corrupt_every), ch->cur_seq))
		memset(ch->cur->map.vaddr, 0xa5, min_t(u64, total, 64));
	mmedge_chan_complete(ch, mmedge_inject(READ_ONCE(inject_error_every),
					       ch->cur_seq) ?
			     MMEDGE_FRAME_ERROR : 0);
}

static int mmedge_engine_thread(void *data)
{
	struct mmedge_engine *eng = data;
	u64 last_anchor = 0, last_adapt = 0;

	while (!kthread_should_stop()) {
		struct mmedge_arb_chan *ac;
		u64 now, t0, wait = 0, ahead = 0;

		spin_lock_irq(&eng->irq_lock);
		eng->kick = false;
		spin_unlock_irq(&eng->irq_lock);

		if (READ_ONCE(inject_stall_ms)) {
			unsigned int ms = xchg(&inject_stall_ms, 0);

			msleep(ms);
			mmedge_nl_engine_stall(eng->mdev, (u64)ms * NSEC_PER_MSEC);
			continue;
		}

		mutex_lock(&eng->lock);
		now = ktime_get_ns();
		if (now - last_anchor >= MMEDGE_ANCHOR_NS) {
			mmedge_engine_anchor(eng);
			last_anchor = now;
		}
		if (READ_ONCE(adaptive) &&
		    now - last_adapt >= MMEDGE_ADAPT_PERIOD_NS) {
			mmedge_engine_adapt(eng);
			last_adapt = now;
		}
		mmedge_engine_absorb(eng, now);
		t0 = ktime_get_ns();
		ac = mmedge_arb_pick(&eng->arb, now, &wait);
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
		mutex_unlock(&eng->lock);

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
		/* A capped channel's budget refills at ns resolution. */
		wait_event_interruptible_hrtimeout(eng->wq,
						   READ_ONCE(eng->kick) ||
						   kthread_should_stop(),
						   ns_to_ktime(wait ? wait :
							       NSEC_PER_SEC / 10));
	}
	return 0;
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
	mmedge_arb_init(&eng->arb, MMEDGE_BURST_NS);
	eng->bandwidth = clamp_t(u64, bus_bandwidth, MMEDGE_BUS_MIN_BW,
				 MMEDGE_BUS_MAX_BW);
	mmedge_engine_calibrate(eng);
	mutex_lock(&eng->lock);
	mmedge_engine_anchor(eng);
	mutex_unlock(&eng->lock);

	ret = mmedge_dmaeng_init(&eng->dmaeng, mdev->dma_dev,
				 MMEDGE_SEGMENT_MAX);
	if (ret)
		return ret;

	eng->thread = kthread_run(mmedge_engine_thread, eng, "mmedge%d-eng",
				  mdev->id);
	if (IS_ERR(eng->thread)) {
		mmedge_dmaeng_fini(&eng->dmaeng);
		return PTR_ERR(eng->thread);
	}
	return 0;
}

/* The instance goes: wake every waiter and stop the engine thread. */
void mmedge_engine_fini(struct mmedge_engine *eng)
{
	WRITE_ONCE(eng->dying, true);
	wake_up_all(&eng->done_wq);
	kthread_stop(eng->thread);
	mmedge_dmaeng_fini(&eng->dmaeng);
}

void mmedge_engine_wake_waiters(struct mmedge_engine *eng)
{
	WRITE_ONCE(eng->dying, true);
	wake_up_all(&eng->done_wq);
}

static void mmedge_chan_destroy(struct mmedge_chan *ch)
{
	struct mmedge_engine *eng = ch->eng;
	struct mmedge_qb *qb, *tmp;

	lockdep_assert_held(&eng->lock);

	mmedge_nl_chan_event(eng->mdev, MMEDGE_CMD_CHAN_DEL, ch->id, ch->name,
			     ch->src.type, ch->dir);
	hrtimer_cancel(&ch->timer);
	mmedge_arb_remove(&eng->arb, &ch->arb);
	list_del(&ch->node);
	if (ch->cur) {
		ch->errors++;
		mmedge_qb_free(ch->cur, -ECANCELED);
	}
	list_for_each_entry_safe(qb, tmp, &ch->queued, node)
		mmedge_qb_free(qb, -ECANCELED);
	list_for_each_entry_safe(qb, tmp, &ch->done, node)
		mmedge_qb_free(qb, -ECANCELED);
	atomic_inc(&ch->mf->done_events);
	kfree(ch);
	wake_up_interruptible(&eng->done_wq);
}

void mmedge_file_destroy_chans(struct mmedge_file *mf)
{
	struct mmedge_engine *eng = &mf->mdev->eng;
	struct mmedge_chan *ch, *tmp;

	mutex_lock(&eng->lock);
	list_for_each_entry_safe(ch, tmp, &eng->chans, node)
		if (ch->mf == mf)
			mmedge_chan_destroy(ch);
	mutex_unlock(&eng->lock);
}

__poll_t mmedge_chan_poll(struct mmedge_file *mf, struct file *file,
			  poll_table *wait)
{
	struct mmedge_engine *eng = &mf->mdev->eng;
	struct mmedge_chan *ch;
	__poll_t mask = 0;

	poll_wait(file, &eng->done_wq, wait);
	if (READ_ONCE(eng->dying))
		return EPOLLERR;
	mutex_lock(&eng->lock);
	list_for_each_entry(ch, &eng->chans, node)
		if (ch->mf == mf && !list_empty(&ch->done))
			mask |= EPOLLIN | EPOLLRDNORM;
	mutex_unlock(&eng->lock);
	return mask;
}

/* Weight above the default and the latency class need CAP_SYS_NICE. */
static int mmedge_chan_check_perm(u32 weight, u32 class)
{
	if ((weight > MMEDGE_WEIGHT_DEFAULT || class == MMEDGE_CLASS_LATENCY) &&
	    !capable(CAP_SYS_NICE))
		return -EPERM;
	return 0;
}

/*
 * MMEDGE_IOC_CHAN_CREATE: create a channel: capture (on a source), feed
 * (to the virtual sink) or copy (memory to memory).
 *
 * Errors:
 *  -EINVAL: unknown dir or flags, bad source config (feed, copy: not all
 *	     zero), weight/class/cap out of range (latency without a cap),
 *	     bad segment or overrun (feed, copy: not zero), reserved set.
 *  -EPERM:  weight above the default or latency class without
 *	     CAP_SYS_NICE.
 *  -ENOSPC: the instance has MMEDGE_MAX_CHANS channels.
 *  -EEXIST: another channel of the instance has that name.
 *  -ENOMEM: out of memory.
 */
int mmedge_ioctl_chan_create(struct mmedge_file *mf, void *data,
			     struct mmedge_ioctl_ctx *ctx)
{
	struct mmedge_engine *eng = &mf->mdev->eng;
	struct mmedge_chan_create *c = data;
	struct mmedge_chan *ch, *o;
	u32 weight = c->weight ? c->weight : MMEDGE_WEIGHT_DEFAULT;
	u32 segment = c->segment ? c->segment : MMEDGE_SEGMENT_DEFAULT;
	u64 id_mask = 0;
	int ret;

	if (c->dir > MMEDGE_CHAN_COPY || c->flags || c->pad ||
	    c->reserved[0] || c->reserved[1])
		return -EINVAL;
	ret = mmedge_name_check(c->name, sizeof(c->name));
	if (ret)
		return ret;
	if (c->dir == MMEDGE_CHAN_CAPTURE)
		ret = mmedge_src_check(&c->src);
	else if (memchr_inv(&c->src, 0, sizeof(c->src)) || c->overrun)
		ret = -EINVAL;
	if (ret)
		return ret;
	ret = mmedge_arb_check_config(weight, c->class, c->cap);
	if (ret)
		return ret;
	if (segment < MMEDGE_SEGMENT_MIN || segment > MMEDGE_SEGMENT_MAX ||
	    segment % 64)
		return -EINVAL;
	if (c->overrun > MMEDGE_OVERRUN_DROP_OLDEST)
		return -EINVAL;
	ret = mmedge_chan_check_perm(weight, c->class);
	if (ret)
		return ret;

	ch = kzalloc(sizeof(*ch), GFP_KERNEL_ACCOUNT);
	if (!ch)
		return -ENOMEM;
	ch->eng = eng;
	ch->mf = mf;
	ch->dir = c->dir;
	ch->src = c->src;
	if (ch->dir == MMEDGE_CHAN_CAPTURE) {
		ch->frame_bytes = mmedge_src_frame_bytes(&c->src);
		ch->meta_offset = ALIGN(ch->frame_bytes, 64);
		ch->period_ns = mmedge_src_period_ns(&c->src);
	}
	ch->segment = segment;
	ch->overrun = c->overrun;
	ch->arb.weight = weight;
	ch->arb.class = c->class;
	ch->arb.cap = c->cap;
	INIT_LIST_HEAD(&ch->queued);
	INIT_LIST_HEAD(&ch->done);
	spin_lock_init(&ch->fence_lock);
	ch->fence_ctx = dma_fence_context_alloc(1);
	hrtimer_init(&ch->timer, CLOCK_MONOTONIC, HRTIMER_MODE_REL_SOFT);
	ch->timer.function = mmedge_chan_timer;

	mutex_lock(&eng->lock);
	list_for_each_entry(o, &eng->chans, node)
		id_mask |= BIT_ULL(o->id - 1);
	if (id_mask == U64_MAX) {
		mutex_unlock(&eng->lock);
		kfree(ch);
		return -ENOSPC;
	}
	ch->id = ffz(id_mask) + 1;
	if (c->name[0]) {
		strscpy(ch->name, c->name, sizeof(ch->name));
	} else {
		static const char * const kind[] = {
			[MMEDGE_SRC_CAMERA] = "camera",
			[MMEDGE_SRC_MIC] = "mic",
			[MMEDGE_SRC_IMU] = "imu",
		};
		const char *base = c->dir == MMEDGE_CHAN_FEED ? "feed" :
				   c->dir == MMEDGE_CHAN_COPY ? "copy" :
				   kind[c->src.type];
		unsigned int n = 0;

		do {
			snprintf(ch->name, sizeof(ch->name), "%s%u", base, n++);
		} while (mmedge_chan_find_name(eng, ch->name));
	}
	if (mmedge_chan_find_name(eng, ch->name)) {
		mutex_unlock(&eng->lock);
		kfree(ch);
		return -EEXIST;
	}
	ch->bw_start_ns = ktime_get_ns();
	mmedge_arb_add(&eng->arb, &ch->arb, ch->bw_start_ns);
	list_add_tail(&ch->node, &eng->chans);
	mutex_unlock(&eng->lock);

	c->weight = weight;
	c->segment = segment;
	c->id = ch->id;
	c->frame_size = ch->frame_bytes;
	c->meta_offset = ch->meta_offset;
	strscpy(c->name, ch->name, sizeof(c->name));
	mmedge_nl_chan_event(eng->mdev, MMEDGE_CMD_CHAN_NEW, ch->id, ch->name,
			     ch->src.type, ch->dir);
	return 0;
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
				struct mmedge_chan_setting *st, bool can_nice,
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
	if (weight < MMEDGE_WEIGHT_MIN || weight > MMEDGE_WEIGHT_MAX) {
		*why = "weight out of range 1..10000";
		return -EINVAL;
	}
	if (class != MMEDGE_CLASS_BEST_EFFORT && class != MMEDGE_CLASS_LATENCY) {
		*why = "unknown class";
		return -EINVAL;
	}
	if (class == MMEDGE_CLASS_LATENCY && !cap) {
		*why = "the latency class needs a rate cap";
		return -EINVAL;
	}
	/* Only raising needs the privilege, not keeping a raise. */
	if (!can_nice && weight > MMEDGE_WEIGHT_DEFAULT &&
	    weight > ch->arb.weight) {
		*why = "need CAP_SYS_NICE to raise a weight above 100";
		return -EPERM;
	}
	if (!can_nice && class == MMEDGE_CLASS_LATENCY &&
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
 * @can_nice: the caller has CAP_SYS_NICE
 * @bad: on failure, the index of the entry at fault
 * @why: on failure, a message for the operator
 *
 * All entries are checked before any is applied: all or nothing. Changes
 * apply from the next segment and are announced on the "events" group.
 *
 * Return: 0, -ENOENT (no such channel), -EINVAL, -EPERM.
 */
int mmedge_engine_apply(struct mmedge_engine *eng,
			struct mmedge_chan_setting *st, unsigned int n,
			bool can_nice, unsigned int *bad, const char **why)
{
	struct mmedge_chan **chs;
	struct mmedge_chan_info *ci;
	unsigned int i;
	int ret = 0;

	chs = kcalloc(n, sizeof(*chs), GFP_KERNEL);
	ci = kzalloc(sizeof(*ci), GFP_KERNEL);
	if (!chs || !ci) {
		ret = -ENOMEM;
		*why = "out of memory";
		goto out;
	}
	mutex_lock(&eng->lock);
	for (i = 0; i < n; i++) {
		ret = mmedge_setting_check(eng, &st[i], can_nice, &chs[i], why);
		if (ret) {
			*bad = i;
			goto unlock;
		}
	}
	for (i = 0; i < n; i++) {
		struct mmedge_chan *ch = chs[i];
		u32 old = ch->arb.weight;

		if (!st[i].set)
			continue;
		if (st[i].cap != ch->arb.cap)
			ch->arb.budget = min_t(s64, ch->arb.budget, 0);
		ch->arb.weight = st[i].weight;
		ch->arb.class = st[i].class;
		ch->arb.cap = st[i].cap;
		mmedge_chan_info_fill(ch, ci);
		mmedge_nl_chan_changed(eng->mdev, ci, old, false);
	}
unlock:
	mutex_unlock(&eng->lock);
out:
	kfree(ci);
	kfree(chs);
	return ret;
}

/*
 * MMEDGE_IOC_CHAN_CONFIG: read or change a channel's weight, class and
 * cap. Any file of the instance may do it (the operator's tool tunes
 * channels it did not create); changes apply from the next segment.
 *
 * Errors:
 *  -ENOENT: no channel with that id.
 *  -EINVAL: unknown set bits, value out of range, latency without cap,
 *	     reserved set.
 *  -EPERM:  raising the weight above 100, or switching to the latency
 *	     class, without CAP_SYS_NICE.
 */
int mmedge_ioctl_chan_config(struct mmedge_file *mf, void *data,
			     struct mmedge_ioctl_ctx *ctx)
{
	struct mmedge_chan_config *c = data;
	struct mmedge_chan_setting st = {
		.id = c->id, .set = c->set, .weight = c->weight,
		.class = c->class, .cap = c->cap,
	};
	const char *why;
	unsigned int bad;
	int ret;

	if (c->reserved[0] || c->reserved[1] || !c->id)
		return c->id ? -EINVAL : -ENOENT;
	ret = mmedge_engine_apply(&mf->mdev->eng, &st, 1, capable(CAP_SYS_NICE),
				  &bad, &why);
	if (ret)
		return ret;
	c->weight = st.weight;
	c->class = st.class;
	c->cap = st.cap;
	return 0;
}

/*
 * MMEDGE_IOC_CHAN_DESTROY: destroy a channel of this file; its buffers
 * complete with an error and their fences signal with -ECANCELED.
 *
 * Errors:
 *  -ENOENT: no channel with that id in this file.
 *  -EINVAL: flags or reserved set.
 */
int mmedge_ioctl_chan_destroy(struct mmedge_file *mf, void *data,
			      struct mmedge_ioctl_ctx *ctx)
{
	struct mmedge_engine *eng = &mf->mdev->eng;
	struct mmedge_chan_destroy *d = data;
	struct mmedge_chan *ch;
	int ret = 0;

	if (d->flags || d->reserved)
		return -EINVAL;
	mutex_lock(&eng->lock);
	ch = mmedge_chan_find_own(mf, d->id);
	if (ch)
		mmedge_chan_destroy(ch);
	else
		ret = -ENOENT;
	mutex_unlock(&eng->lock);
	return ret;
}

static bool mmedge_chan_holds(struct mmedge_engine *eng, struct dma_buf *db)
{
	struct mmedge_chan *ch;
	struct mmedge_qb *qb;

	lockdep_assert_held(&eng->lock);
	list_for_each_entry(ch, &eng->chans, node) {
		if (ch->cur && (ch->cur->dmabuf == db || ch->cur->src == db))
			return true;
		list_for_each_entry(qb, &ch->queued, node)
			if (qb->dmabuf == db || qb->src == db)
				return true;
		list_for_each_entry(qb, &ch->done, node)
			if (qb->dmabuf == db || qb->src == db)
				return true;
	}
	return false;
}

/*
 * MMEDGE_IOC_QBUF: queue a buffer on a channel of this file: capture, an
 * empty buffer to fill (the first one starts the source); feed, a filled
 * buffer for the device to read; copy, a job (MMEDGE_QBUF_SRC: src_fd's
 * first bytesused bytes into fd). Feed and copy jobs are due at once.
 *
 * Errors:
 *  -ENOENT: no channel with that id in this file.
 *  -EBADF:  fd (or src_fd) is not open.
 *  -EINVAL: not a dma-buf, or a foreign one this file did not import;
 *	     unknown flags, reserved set; a buffer without a CPU mapping;
 *	     capture: bytesused or MMEDGE_QBUF_SRC set; feed: MMEDGE_QBUF_SRC
 *	     set; copy: MMEDGE_QBUF_SRC missing, the source is the
 *	     destination; feed, copy: bytesused 0 or past the end of the
 *	     (source) buffer; src_fd set without MMEDGE_QBUF_SRC.
 *  -ENOSPC: capture: the buffer is smaller than meta_offset + the in-band
 *	     record; copy: the destination is smaller than
 *	     ALIGN(bytesused, 64) + the in-band record.
 *  -EBUSY:  the buffer (or source) is already queued, in flight, or
 *	     done and not dequeued.
 *  -ENOMEM, -EMFILE: no memory or fd for the fence.
 */
int mmedge_ioctl_qbuf(struct mmedge_file *mf, void *data,
		      struct mmedge_ioctl_ctx *ctx)
{
	struct mmedge_engine *eng = &mf->mdev->eng;
	struct mmedge_qbuf *q = data;
	struct sync_file *sync = NULL;
	bool has_src = q->flags & MMEDGE_QBUF_SRC;
	struct mmedge_chan *ch;
	struct dma_buf *dmabuf;
	struct mmedge_qb *qb;
	bool is_copy, is_capture;
	int ret, fd = -1;
	u32 dir;

	q->fence_fd = -1;
	if (q->flags & ~MMEDGE_QBUF_FLAGS_VALID || q->reserved ||
	    (!has_src && q->src_fd))
		return -EINVAL;
	dmabuf = dma_buf_get(q->fd);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);
	if (!mmedge_buf_usable(mf, dmabuf)) {
		dma_buf_put(dmabuf);
		return -EINVAL;
	}

	/* The direction decides what is checked and how buffers are mapped. */
	mutex_lock(&eng->lock);
	ch = mmedge_chan_find_own(mf, q->chan);
	dir = ch ? ch->dir : 0;
	mutex_unlock(&eng->lock);
	is_copy = dir == MMEDGE_CHAN_COPY;
	is_capture = dir == MMEDGE_CHAN_CAPTURE;
	/* Copy needs a source; capture takes no length, the others need one. */
	ret = !ch ? -ENOENT :
	      has_src != is_copy || !q->bytesused != is_capture ? -EINVAL : 0;
	if (ret) {
		dma_buf_put(dmabuf);
		return ret;
	}

	qb = kzalloc(sizeof(*qb), GFP_KERNEL_ACCOUNT);
	if (!qb) {
		dma_buf_put(dmabuf);
		return -ENOMEM;
	}
	qb->dmabuf = dmabuf;
	qb->cookie = q->cookie;
	qb->len = q->bytesused;
	ret = dma_buf_vmap(dmabuf, &qb->map);
	if (ret) {
		iosys_map_clear(&qb->map);
		dma_buf_put(dmabuf);
		kfree(qb);
		return ret;
	}
	if (qb->map.is_iomem) {
		ret = -EINVAL;
		goto err_free;
	}
	if (has_src) {
		qb->src = dma_buf_get(q->src_fd);
		if (IS_ERR(qb->src)) {
			ret = PTR_ERR(qb->src);
			qb->src = NULL;
			goto err_free;
		}
		if (qb->src == dmabuf || !mmedge_buf_usable(mf, qb->src)) {
			ret = -EINVAL;
			goto err_free;
		}
		ret = dma_buf_vmap(qb->src, &qb->src_map);
		if (ret) {
			iosys_map_clear(&qb->src_map);
			goto err_free;
		}
		if (qb->src_map.is_iomem) {
			ret = -EINVAL;
			goto err_free;
		}
	}
	if (dir == MMEDGE_CHAN_FEED ? q->bytesused > dmabuf->size :
	    has_src && q->bytesused > qb->src->size) {
		ret = -EINVAL;
		goto err_free;
	}
	/* A feed's buffer is only read, by the CPU-side virtual sink. */
	if (mmedge_dmaeng_dev(&eng->dmaeng) && dir != MMEDGE_CHAN_FEED) {
		qb->att = dma_buf_attach(dmabuf, mmedge_dmaeng_dev(&eng->dmaeng));
		if (IS_ERR(qb->att)) {
			ret = PTR_ERR(qb->att);
			qb->att = NULL;
			goto err_free;
		}
		qb->dsgt = dma_buf_map_attachment(qb->att, DMA_FROM_DEVICE);
		if (IS_ERR(qb->dsgt)) {
			ret = PTR_ERR(qb->dsgt);
			qb->dsgt = NULL;
			goto err_free;
		}
	}

	mutex_lock(&eng->lock);
	ch = mmedge_chan_find_own(mf, q->chan);
	/* Destroyed meanwhile (and the id maybe reused): no such channel. */
	if (!ch || ch->dir != dir) {
		ret = -ENOENT;
		goto err_unlock;
	}
	if ((dir == MMEDGE_CHAN_CAPTURE &&
	     dmabuf->size < ch->meta_offset + sizeof(struct mmedge_frame_meta)) ||
	    (dir == MMEDGE_CHAN_COPY &&
	     dmabuf->size < ALIGN((u64)q->bytesused, 64) +
			    sizeof(struct mmedge_frame_meta))) {
		ret = -ENOSPC;
		goto err_unlock;
	}
	if (mmedge_chan_holds(eng, dmabuf) ||
	    (qb->src && mmedge_chan_holds(eng, qb->src))) {
		ret = -EBUSY;
		goto err_unlock;
	}
	ret = mmedge_qb_arm_fence(ch, qb);
	if (ret)
		goto err_unlock;
	if (q->flags & MMEDGE_QBUF_FENCE) {
		fd = get_unused_fd_flags(O_CLOEXEC);
		if (fd < 0) {
			ret = fd;
			goto err_unlock;
		}
		sync = sync_file_create(qb->fence);
		if (!sync) {
			put_unused_fd(fd);
			ret = -ENOMEM;
			goto err_unlock;
		}
	}
	qb->queued_ns = ktime_get_ns();
	list_add_tail(&qb->node, &ch->queued);
	if (!ch->streaming) {
		ch->streaming = true;
		if (dir == MMEDGE_CHAN_CAPTURE)
			hrtimer_start(&ch->timer, ns_to_ktime(ch->period_ns),
				      HRTIMER_MODE_REL_SOFT);
	}
	mutex_unlock(&eng->lock);

	spin_lock_irq(&eng->irq_lock);
	eng->kick = true;
	spin_unlock_irq(&eng->irq_lock);
	wake_up(&eng->wq);

	if (sync) {
		q->fence_fd = fd;
		ctx->install_file = sync->file;
		ctx->install_fd = fd;
	}
	return 0;

err_unlock:
	mutex_unlock(&eng->lock);
err_free:
	mmedge_qb_free(qb, -ECANCELED);
	return ret;
}

static struct mmedge_qb *mmedge_chan_take_done(struct mmedge_file *mf, u32 id,
					       int *err)
{
	struct mmedge_engine *eng = &mf->mdev->eng;
	struct mmedge_chan *ch;
	struct mmedge_qb *qb = NULL;

	mutex_lock(&eng->lock);
	ch = mmedge_chan_find_own(mf, id);
	if (!ch) {
		*err = -ENOENT;
	} else if (!list_empty(&ch->done)) {
		qb = list_first_entry(&ch->done, struct mmedge_qb, node);
		list_del(&qb->node);
	} else {
		*err = -EAGAIN;
	}
	mutex_unlock(&eng->lock);
	return qb;
}

/*
 * After DQBUF's copy to userspace: the frame is released, or, if the copy
 * failed (-EFAULT), put back at the head of its channel's done list, so
 * the next DQBUF returns it. Gone with its channel or the instance, it is
 * released.
 */
static void mmedge_dqbuf_finish(struct mmedge_file *mf,
				struct mmedge_ioctl_ctx *ctx, bool copied)
{
	struct mmedge_dev *mdev = mf->mdev;
	struct mmedge_engine *eng = &mdev->eng;
	struct mmedge_qb *qb = ctx->finish_obj;
	struct mmedge_chan *ch;

	if (!copied) {
		down_read(&mdev->lock);
		if (mdev->alive) {
			mutex_lock(&eng->lock);
			ch = mmedge_chan_find_own(mf, ctx->finish_id);
			if (ch) {
				list_add(&qb->node, &ch->done);
				qb = NULL;
			}
			mutex_unlock(&eng->lock);
		}
		up_read(&mdev->lock);
		if (!qb) {
			atomic_inc(&mf->done_events);
			wake_up_interruptible(&eng->done_wq);
			return;
		}
	}
	mmedge_qb_free(qb, copied ? 0 : -ECANCELED);
}

/*
 * MMEDGE_IOC_DQBUF: dequeue the oldest filled buffer (feed, copy: finished
 * job) of a channel of this file, with its sequence number and
 * timestamps, and for a feed the CRC-32 of what the sink read.
 *
 * Errors:
 *  -ENOENT:    no channel with that id in this file (or it was destroyed
 *		while waiting).
 *  -EINVAL:    unknown flags, pad or reserved set.
 *  -EAGAIN:    MMEDGE_DQBUF_NONBLOCK and nothing filled.
 *  -ETIMEDOUT: nothing filled within timeout_ms.
 *  -ERESTARTSYS: a signal arrived.
 *  -ENODEV:    the instance went away while waiting.
 *  -EFAULT:    the result could not be written; the frame stays first in
 *		line for the next DQBUF.
 */
int mmedge_ioctl_dqbuf(struct mmedge_file *mf, void *data,
		       struct mmedge_ioctl_ctx *ctx)
{
	struct mmedge_engine *eng = &mf->mdev->eng;
	struct mmedge_dqbuf *d = data;
	struct mmedge_qb *qb;
	long left;
	int err = 0;

	if (d->flags & ~MMEDGE_DQBUF_FLAGS_VALID || d->pad || d->reserved)
		return -EINVAL;

	left = d->timeout_ms ? msecs_to_jiffies(d->timeout_ms) :
			       MAX_SCHEDULE_TIMEOUT;
	for (;;) {
		/* Read before looking, so a completion in between is seen. */
		int seen = atomic_read(&mf->done_events);

		qb = mmedge_chan_take_done(mf, d->chan, &err);
		if (qb || err != -EAGAIN || d->flags & MMEDGE_DQBUF_NONBLOCK)
			break;
		left = wait_event_interruptible_timeout(eng->done_wq,
							READ_ONCE(eng->dying) ||
							atomic_read(&mf->done_events) != seen,
							left);
		if (left < 0)
			return left;
		if (READ_ONCE(eng->dying))
			return -ENODEV;
		if (!left)
			return -ETIMEDOUT;
	}
	if (!qb)
		return err;

	d->frame_flags = qb->flags;
	d->cookie = qb->cookie;
	d->sequence = qb->sequence;
	d->bytesused = qb->bytesused;
	d->ts = qb->ts;
	d->dropped = qb->dropped;
	d->checksum = qb->len && !qb->src ? qb->crc : 0;
	/* Released once the result reached userspace (mmedge_dqbuf_finish). */
	ctx->finish = mmedge_dqbuf_finish;
	ctx->finish_obj = qb;
	ctx->finish_id = d->chan;
	return 0;
}

/*
 * MMEDGE_IOC_CHAN_STATS: a channel's counters (any channel of the
 * instance).
 *
 * Errors:
 *  -ENOENT: no channel with that id.
 *  -EINVAL: flags or reserved set.
 */
int mmedge_ioctl_chan_stats(struct mmedge_file *mf, void *data,
			    struct mmedge_ioctl_ctx *ctx)
{
	struct mmedge_chan_stats *st = data;
	struct mmedge_chan_info *ci;
	int ret;

	if (st->flags || st->reserved[0])
		return -EINVAL;
	if (!st->id)
		return -ENOENT;
	ci = kzalloc(sizeof(*ci), GFP_KERNEL);
	if (!ci)
		return -ENOMEM;
	ret = mmedge_engine_chan_info(&mf->mdev->eng, 0, st->id, NULL, ci);
	if (!ret) {
		st->bytes = ci->bytes;
		st->segments = ci->segments;
		st->frames = ci->frames;
		st->dropped = ci->dropped;
		st->errors = ci->errors;
		st->bw_ewma = ci->bw;
		st->weight = ci->weight;
		st->class = ci->class;
		st->cap = ci->cap;
		memcpy(st->wait_hist, ci->wait_hist, sizeof(st->wait_hist));
	}
	kfree(ci);
	return ret;
}

/*
 * MMEDGE_IOC_BUS_CONFIG: read or set the soft engine's modelled bus
 * bandwidth.
 *
 * Errors:
 *  -EINVAL: set not 0/1, bandwidth out of range, flags/reserved set.
 *  -EPERM:  setting without CAP_SYS_ADMIN.
 */
int mmedge_ioctl_bus_config(struct mmedge_file *mf, void *data,
			    struct mmedge_ioctl_ctx *ctx)
{
	struct mmedge_engine *eng = &mf->mdev->eng;
	struct mmedge_bus_config *b = data;

	if (b->set > 1 || b->flags || b->reserved[0] || b->reserved[1])
		return -EINVAL;
	if (b->set) {
		if (b->bandwidth < MMEDGE_BUS_MIN_BW || b->bandwidth > MMEDGE_BUS_MAX_BW)
			return -EINVAL;
		if (!capable(CAP_SYS_ADMIN))
			return -EPERM;
	}
	if (b->set)
		mmedge_engine_set_bus(eng, b->bandwidth);
	b->bandwidth = mmedge_engine_get_bus(eng);
	return 0;
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

/*
 * MMEDGE_IOC_XTS: cross-timestamp the hardware counter against
 * CLOCK_MONOTONIC (and BOOTTIME through boot_offset).
 *
 * Errors:
 *  -EINVAL: n_samples 0 or above MMEDGE_XTS_MAX_SAMPLES, flags/reserved
 *	     set.
 */
int mmedge_ioctl_xts(struct mmedge_file *mf, void *data,
		     struct mmedge_ioctl_ctx *ctx)
{
	struct mmedge_engine *eng = &mf->mdev->eng;
	struct mmedge_xts *x = data;
	unsigned int i;

	if (!x->n_samples || x->n_samples > MMEDGE_XTS_MAX_SAMPLES ||
	    x->flags || x->pad || x->reserved[0] || x->reserved[1])
		return -EINVAL;
	x->counter_hz = eng->counter_hz;
	x->mult = eng->tc_mono.mult;
	x->shift = eng->tc_mono.shift;
	x->counter_bits = 64;
	for (i = 0; i < x->n_samples; i++) {
		struct mmedge_xts_sample *s = &x->samples[i];
		unsigned long flags;

		local_irq_save(flags);
		s->sys_before = ktime_get_ns();
		s->raw = mmedge_counter_read(eng);
		s->sys_after = ktime_get_ns();
		local_irq_restore(flags);
		s->boot_offset = ktime_to_ns(ktime_mono_to_any(0, TK_OFFS_BOOT));
	}
	return 0;
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

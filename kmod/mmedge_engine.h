/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mmedge: the DMA engine: the thread that moves frames through the
 * arbiter, the bus model and the dmaengine back end, signals fences, and
 * owns the instance's channels list and its counter conversion.
 *
 * mmedge_engine.c has the thread and what ioctl and netlink ask of the
 * engine (channel snapshots, settings, the bus model), mmedge_clock.c
 * the counter, its calibration and cross-timestamps. The channel itself
 * is in mmedge_chan.h.
 */
#ifndef _MMEDGE_ENGINE_H
#define _MMEDGE_ENGINE_H

#include <linux/atomic.h>
#include <linux/hrtimer.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/mmedge.h>

#include "mmedge_arb.h"
#include "mmedge_dmaeng.h"
#include "mmedge_ts.h"
#include "mmedge_uapi.h"

#define MMEDGE_MAX_CHANS		64
/*
 * The fence bound: the job at the head of a channel that makes no
 * progress (no segment moved) for this long plus one frame period
 * completes with -ETIMEDOUT. QBUF waits at most this long for a buffer's
 * earlier fences.
 */
#define MMEDGE_JOB_TIMEOUT_MS		2000

struct mmedge_chan;
struct mmedge_dev;
struct mmedge_file;
struct task_struct;

/**
 * struct mmedge_chan_info - snapshot of a channel's config and stats
 * @id: channel id.
 * @name: channel name.
 * @src_type: MMEDGE_SRC_*.
 * @dir: MMEDGE_CHAN_*.
 * @weight: weight.
 * @class: MMEDGE_CLASS_*.
 * @cap: rate cap, bytes/s.
 * @bytes: bytes moved.
 * @segments: segments moved.
 * @frames: frames completed.
 * @dropped: frames dropped.
 * @errors: frames completed with an error.
 * @bw: achieved bandwidth (EWMA), bytes/s.
 * @wait_hist: segment queue-wait histogram.
 */
struct mmedge_chan_info {
	u32 id;
	char name[MMEDGE_NAME_LEN];
	u32 src_type;
	u32 dir;
	u32 weight;
	u32 class;
	u64 cap;
	u64 bytes;
	u64 segments;
	u64 frames;
	u64 dropped;
	u64 errors;
	u64 bw;
	u64 wait_hist[MMEDGE_WAIT_BUCKETS];
};

/**
 * struct mmedge_chan_setting - a change to one channel
 * @id: channel id, or 0 to name it by @name.
 * @name: channel name when @id is 0.
 * @set: MMEDGE_CHAN_SET_* bits.
 * @weight: new weight; out: the weight after the change.
 * @class: new class; out: the class after.
 * @cap: new cap; out: the cap after.
 */
struct mmedge_chan_setting {
	u32 id;
	const char *name;
	u32 set;
	u32 weight;
	u32 class;
	u64 cap;
};

/**
 * struct mmedge_chan_perm - what the caller of mmedge_engine_apply() may do
 * @owner: the file asking (ioctl): changing a channel of another file
 *	needs @can_other; NULL for netlink, whose CHAN_SET needs
 *	CAP_NET_ADMIN.
 * @can_other: CAP_NET_ADMIN or CAP_SYS_NICE.
 * @can_nice: CAP_SYS_NICE: raise a weight above the default, use the
 *	latency class, raise a latency channel's cap.
 */
struct mmedge_chan_perm {
	const struct mmedge_file *owner;
	bool can_other;
	bool can_nice;
};

/**
 * struct mmedge_engine_events - events to send after the signalling section
 * @drop_id: channel of each drop event.
 * @drop_name: its name.
 * @drop_n: frames dropped since the channel's last event.
 * @n_drop: drop events collected.
 * @changed: snapshot of each channel whose weight the adaptive policy
 *	changed.
 * @old_weight: its weight before.
 * @n_changed: weight changes collected.
 *
 * The netlink events allocate, which the engine must not do while it can
 * signal fences; it collects them here and sends them afterwards.
 */
struct mmedge_engine_events {
	u32 drop_id[MMEDGE_MAX_CHANS];
	char drop_name[MMEDGE_MAX_CHANS][MMEDGE_NAME_LEN];
	u64 drop_n[MMEDGE_MAX_CHANS];
	unsigned int n_drop;
	struct mmedge_chan_info changed[MMEDGE_MAX_CHANS];
	u32 old_weight[MMEDGE_MAX_CHANS];
	unsigned int n_changed;
};

/**
 * struct mmedge_engine - one instance's DMA engine (the soft engine)
 * @mdev: the instance.
 * @thread: the kthread moving segments.
 * @lock: see below.
 * @arb: the arbiter over all channels of the instance.
 * @chans: all channels (struct mmedge_chan.node).
 * @bandwidth: modelled bus bandwidth, bytes/s.
 * @bus_free_ns: when the modelled bus finishes what it was given.
 * @irq_lock: see below.
 * @kick: work may be available (a frame became due, a buffer queued).
 * @wq: the engine thread waits here.
 * @done_wq: dequeuers and pollers wait here.
 * @dying: the instance is going away; waiters give up.
 * @tc_mono: counter to CLOCK_MONOTONIC.
 * @boot_offset: CLOCK_BOOTTIME - CLOCK_MONOTONIC at the last anchor.
 * @counter_hz: calibrated counter frequency.
 * @arb_ns: time spent in the arbiter (pick and charge), ns.
 * @arb_picks: segments the arbiter picked.
 * @rt_segments: segments the engine thread moved while SCHED_FIFO
 *	(engine_rt); read without a lock.
 * @rt_fallbacks: SCHED_FIFO runs that went past MMEDGE_RT_RUN_NS and
 *	went on under SCHED_NORMAL; read without a lock.
 * @dmaeng: the dmaengine back end; without a channel the soft engine's
 *	CPU copies and bus model are used.
 * @dead: the engine was stopped (unbind): every job completed with
 *	-ENODEV, no new one is taken (under @lock).
 * @freeing: channels being destroyed that may still release buffers
 *	mapped for the dmaengine back end; mmedge_engine_fini() waits for
 *	them (on @done_wq) before releasing it.
 * @ev: netlink events the engine thread collected under @lock, sent
 *	once it has released the lock (engine thread only).
 */
struct mmedge_engine {
	struct mmedge_dev *mdev;
	struct task_struct *thread;

	/* Protects @arb, @chans, @bandwidth, @bus_free_ns, every channel's
	 * queues and current frame, and @tc_mono / @boot_offset.
	 */
	struct mutex lock;
	struct mmedge_arb arb;
	struct list_head chans;
	u64 bandwidth;
	u64 bus_free_ns;

	/* Protects the due-frame handoff from hrtimers (frames_due etc.). */
	spinlock_t irq_lock;
	bool kick;
	wait_queue_head_t wq;
	wait_queue_head_t done_wq;
	bool dying;

	struct mmedge_tsconv tc_mono;
	u64 boot_offset;
	u64 counter_hz;
	u64 arb_ns;
	u64 arb_picks;
	atomic64_t rt_segments;
	atomic64_t rt_fallbacks;
	struct mmedge_dmaeng dmaeng;
	bool dead;
	atomic_t freeing;
	struct mmedge_engine_events *ev;
};

int mmedge_engine_init(struct mmedge_engine *eng, struct mmedge_dev *mdev);
void mmedge_engine_fini(struct mmedge_engine *eng);
int mmedge_engine_chan_info(struct mmedge_engine *eng, unsigned int pos,
			    u32 id, const char *name,
			    struct mmedge_chan_info *ci);
unsigned int mmedge_engine_nr_chans(struct mmedge_engine *eng);
int mmedge_engine_apply(struct mmedge_engine *eng,
			struct mmedge_chan_setting *st, unsigned int n,
			const struct mmedge_chan_perm *perm, unsigned int *bad,
			const char **why);
u64 mmedge_engine_get_bus(struct mmedge_engine *eng);
u64 mmedge_engine_arb_ns(struct mmedge_engine *eng);
void mmedge_engine_set_bus(struct mmedge_engine *eng, u64 bandwidth);

void mmedge_engine_wake_waiters(struct mmedge_engine *eng);
void mmedge_engine_kick(struct mmedge_engine *eng);
void mmedge_engine_dma_drain(struct mmedge_engine *eng,
			     struct mmedge_chan *ch);
enum hrtimer_restart mmedge_chan_timer(struct hrtimer *t);

#endif /* _MMEDGE_ENGINE_H */

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mmedge: channels, the soft DMA engine, timestamps and fences.
 */
#ifndef _MMEDGE_CHAN_H
#define _MMEDGE_CHAN_H

#include <linux/dma-fence.h>
#include <linux/hrtimer.h>
#include <linux/iosys-map.h>
#include <linux/kthread.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/poll.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/mmedge.h>

#include "mmedge_arb.h"
#include "mmedge_dmaeng.h"
#include "mmedge_ts.h"

#define MMEDGE_MAX_CHANS		64
#define MMEDGE_BUS_MIN_BW		(1000ULL * 1000)
#define MMEDGE_BUS_MAX_BW		(100ULL * 1000 * 1000 * 1000)

/**
 * struct mmedge_chan_info - snapshot of a channel's config and stats
 * @id: channel id.
 * @name: channel name.
 * @src_type: MMEDGE_SRC_*.
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

struct mmedge_dev;
struct mmedge_file;

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
 * @dmaeng: the dmaengine back end; without a channel the soft engine's
 *	CPU copies and bus model are used.
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
	struct mmedge_dmaeng dmaeng;
};

int mmedge_engine_init(struct mmedge_engine *eng, struct mmedge_dev *mdev);
void mmedge_engine_fini(struct mmedge_engine *eng);
void mmedge_file_destroy_chans(struct mmedge_file *mf);
int mmedge_engine_chan_info(struct mmedge_engine *eng, unsigned int pos,
			    u32 id, const char *name,
			    struct mmedge_chan_info *ci);
unsigned int mmedge_engine_nr_chans(struct mmedge_engine *eng);
int mmedge_engine_apply(struct mmedge_engine *eng,
			struct mmedge_chan_setting *st, unsigned int n,
			bool can_nice, unsigned int *bad, const char **why);
u64 mmedge_engine_get_bus(struct mmedge_engine *eng);
u64 mmedge_engine_arb_ns(struct mmedge_engine *eng);
void mmedge_engine_set_bus(struct mmedge_engine *eng, u64 bandwidth);
__poll_t mmedge_chan_poll(struct mmedge_file *mf, struct file *file,
			  poll_table *wait);

#endif /* _MMEDGE_CHAN_H */

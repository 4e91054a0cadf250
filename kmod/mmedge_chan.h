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
 * @fence_ctx: dma-fence context base; one context per channel id.
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
	u64 fence_ctx;
	struct mmedge_dmaeng dmaeng;
};

int mmedge_engine_init(struct mmedge_engine *eng, struct mmedge_dev *mdev);
void mmedge_engine_fini(struct mmedge_engine *eng);
void mmedge_file_destroy_chans(struct mmedge_file *mf);
__poll_t mmedge_chan_poll(struct mmedge_file *mf, struct file *file,
			  poll_table *wait);

#endif /* _MMEDGE_CHAN_H */

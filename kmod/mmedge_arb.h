/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mmedge: the DMA arbiter.
 *
 * Pure logic, no device or DMA calls: the engine asks it which channel's
 * next segment to move and tells it what was moved.
 */
#ifndef _MMEDGE_ARB_H
#define _MMEDGE_ARB_H

#include <linux/list.h>
#include <linux/types.h>

#define MMEDGE_WEIGHT_MIN	1
#define MMEDGE_WEIGHT_DEFAULT	100
#define MMEDGE_WEIGHT_MAX	10000
/*
 * The largest rate cap, bytes/s: the fastest modelled bus. It keeps every
 * cap x time / NSEC_PER_SEC product of the token bucket far below 2^64
 * (mul_u64_u64_div_u64() traps when its quotient does not fit).
 */
#define MMEDGE_ARB_CAP_MAX	(100ULL * 1000 * 1000 * 1000)

enum mmedge_arb_class {
	MMEDGE_ARB_BEST_EFFORT = 0,
	MMEDGE_ARB_LATENCY = 1,
};

/**
 * struct mmedge_arb_chan - the arbiter's view of one channel
 * @weight: share among best-effort service, MMEDGE_WEIGHT_MIN..MAX.
 * @class: enum mmedge_arb_class.
 * @cap: rate cap in bytes per second; 0 = none (best effort only). A
 *	channel that used up its budget is not served until it refills,
 *	whatever its class: so a latency channel, served before every
 *	best-effort one, cannot take more than its cap.
 * @vtime: virtual time of the channel: bytes served scaled by 1/weight.
 * @budget: bytes it may still send under its cap (token bucket).
 * @refill_ns: when @budget was last refilled.
 * @backlogged: has a segment waiting.
 * @bytes: bytes served in total.
 * @segments: segments served in total.
 * @node: entry in mmedge_arb.chans.
 */
struct mmedge_arb_chan {
	u32 weight;
	u32 class;
	u64 cap;
	u64 vtime;
	s64 budget;
	u64 refill_ns;
	bool backlogged;
	u64 bytes;
	u64 segments;
	struct list_head node;
};

/**
 * struct mmedge_arb - weighted fair queueing over channels
 * @chans: all channels.
 * @vtime: system virtual time: the smallest vtime among backlogged
 *	channels at the last pick; an idle channel that becomes
 *	backlogged starts here, so idleness earns no credit.
 * @burst_ns: how much budget a capped channel may bank, in time at its
 *	cap (bounds the burst after an idle period).
 */
struct mmedge_arb {
	struct list_head chans;
	u64 vtime;
	u64 burst_ns;
};

void mmedge_arb_init(struct mmedge_arb *arb, u64 burst_ns);
void mmedge_arb_set(struct mmedge_arb_chan *ch, u32 weight, u32 class,
		    u64 cap);
void mmedge_arb_add(struct mmedge_arb *arb, struct mmedge_arb_chan *ch,
		    u64 now_ns);
void mmedge_arb_remove(struct mmedge_arb *arb, struct mmedge_arb_chan *ch);
void mmedge_arb_set_backlogged(struct mmedge_arb *arb,
			       struct mmedge_arb_chan *ch, bool backlogged);
struct mmedge_arb_chan *mmedge_arb_pick(struct mmedge_arb *arb, u64 now_ns,
					u64 *wait_ns);
void mmedge_arb_charge(struct mmedge_arb *arb, struct mmedge_arb_chan *ch,
		       u32 bytes);
int mmedge_arb_check_config(u32 weight, u32 class, u64 cap);
u32 mmedge_arb_adapt_share(u64 img_bw, u64 total_bw);
u32 mmedge_arb_adapt_step(u32 cur, u32 target, u32 hysteresis, u32 max_step);

#endif /* _MMEDGE_ARB_H */

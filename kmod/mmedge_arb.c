// SPDX-License-Identifier: GPL-2.0
/*
 * mmedge: the DMA arbiter - weighted fair queueing over channels.
 *
 * Each channel has a virtual time that grows by bytes / weight for every
 * segment it is served. The arbiter serves the backlogged channel with
 * the smallest virtual time (start-time fair queueing), so over any busy
 * period each channel gets bytes in proportion to its weight, whatever
 * its segment size, and the bus never idles while an eligible segment
 * waits (work conserving). A channel that becomes backlogged after being
 * idle starts at the system virtual time: idleness earns no credit.
 *
 * Latency-class channels are served before best-effort ones, but only
 * out of a token bucket refilled at their rate cap; a best-effort channel
 * with a cap is also held to it. See Documentation/arbiter.rst for the
 * bounds this gives.
 *
 * Pure logic: callers hold whatever lock protects the arbiter and pass
 * the time in.
 */

#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/math64.h>
#include <linux/minmax.h>
#include <linux/time64.h>

#include <linux/mmedge.h>

#include "mmedge_arb.h"

static_assert(MMEDGE_ARB_CAP_MAX == MMEDGE_RATE_CAP_MAX);

/* vtime advances by bytes * SCALE / weight: weight 10000 moves 1 per byte. */
#define MMEDGE_ARB_SCALE	MMEDGE_WEIGHT_MAX

void mmedge_arb_init(struct mmedge_arb *arb, u64 burst_ns)
{
	INIT_LIST_HEAD(&arb->chans);
	arb->vtime = 0;
	arb->burst_ns = burst_ns;
}

/**
 * mmedge_arb_check_config() - validate a channel's arbitration settings
 * @weight: MMEDGE_WEIGHT_MIN..MMEDGE_WEIGHT_MAX
 * @class: enum mmedge_arb_class
 * @cap: bytes per second, 0 for none, at most MMEDGE_ARB_CAP_MAX; a
 *	latency channel must have one
 *
 * Return: 0 or -EINVAL.
 */
int mmedge_arb_check_config(u32 weight, u32 class, u64 cap)
{
	if (weight < MMEDGE_WEIGHT_MIN || weight > MMEDGE_WEIGHT_MAX)
		return -EINVAL;
	if (cap > MMEDGE_ARB_CAP_MAX)
		return -EINVAL;
	if (class != MMEDGE_ARB_BEST_EFFORT && class != MMEDGE_ARB_LATENCY)
		return -EINVAL;
	if (class == MMEDGE_ARB_LATENCY && !cap)
		return -EINVAL;
	return 0;
}

static s64 mmedge_arb_burst(const struct mmedge_arb *arb,
			    const struct mmedge_arb_chan *ch)
{
	/* At least one byte, so a tiny cap still makes progress. */
	return max_t(s64, mul_u64_u64_div_u64(ch->cap, arb->burst_ns,
					      NSEC_PER_SEC), 1);
}

static void mmedge_arb_refill(const struct mmedge_arb *arb,
			      struct mmedge_arb_chan *ch, u64 now_ns)
{
	u64 need, dt;
	s64 burst;

	if (!ch->cap || now_ns <= ch->refill_ns)
		return;
	burst = mmedge_arb_burst(arb, ch);
	dt = now_ns - ch->refill_ns;
	ch->refill_ns = now_ns;
	if (ch->budget >= burst) {
		ch->budget = burst;
		return;
	}
	/*
	 * Past the time that fills the bucket the budget is simply full; below
	 * it cap x dt / NSEC_PER_SEC is less than @need, so the product never
	 * overflows, however long the channel was idle.
	 */
	need = burst - ch->budget;
	if (dt >= div64_u64(need * NSEC_PER_SEC + ch->cap - 1, ch->cap))
		ch->budget = burst;
	else
		ch->budget += mul_u64_u64_div_u64(ch->cap, dt, NSEC_PER_SEC);
}

/**
 * mmedge_arb_set() - set a channel's weight, class and cap
 * @ch: the channel
 * @weight: its new weight
 * @class: its new class, enum mmedge_arb_class
 * @cap: its new rate cap, bytes per second; 0 for none
 *
 * The one writer of a channel's arbitration settings, at creation and at
 * every change (ioctl, netlink, adaptive mode); the caller checked them
 * with mmedge_arb_check_config() and holds the arbiter's lock. Changes
 * apply from the next pick. A changed cap starts from an empty bucket:
 * budget banked under the old cap is dropped, a debt is kept.
 */
void mmedge_arb_set(struct mmedge_arb_chan *ch, u32 weight, u32 class,
		    u64 cap)
{
	if (cap != ch->cap)
		ch->budget = min_t(s64, ch->budget, 0);
	ch->weight = weight;
	ch->class = class;
	ch->cap = cap;
}

/**
 * mmedge_arb_add() - start arbitrating a channel
 * @arb: the arbiter
 * @ch: the channel, with weight, class and cap set (mmedge_arb_set())
 * @now_ns: current time
 *
 * A capped channel starts with a full burst budget.
 */
void mmedge_arb_add(struct mmedge_arb *arb, struct mmedge_arb_chan *ch,
		    u64 now_ns)
{
	ch->vtime = arb->vtime;
	ch->refill_ns = now_ns;
	ch->budget = ch->cap ? mmedge_arb_burst(arb, ch) : 0;
	ch->backlogged = false;
	list_add_tail(&ch->node, &arb->chans);
}

void mmedge_arb_remove(struct mmedge_arb *arb, struct mmedge_arb_chan *ch)
{
	list_del_init(&ch->node);
}

/**
 * mmedge_arb_set_backlogged() - a channel got work, or ran out of it
 * @arb: the arbiter
 * @ch: the channel
 * @backlogged: it has a segment waiting
 */
void mmedge_arb_set_backlogged(struct mmedge_arb *arb,
			       struct mmedge_arb_chan *ch, bool backlogged)
{
	if (backlogged && !ch->backlogged)
		ch->vtime = max(ch->vtime, arb->vtime);
	ch->backlogged = backlogged;
}

static bool mmedge_arb_eligible(const struct mmedge_arb_chan *ch)
{
	return ch->backlogged && (!ch->cap || ch->budget > 0);
}

/**
 * mmedge_arb_pick() - choose whose segment moves next
 * @arb: the arbiter
 * @now_ns: current time
 * @wait_ns: if nothing can move now but a capped channel waits for
 *	budget, set to the time until it can; else 0
 *
 * Return: the channel, or NULL if no channel is eligible.
 */
struct mmedge_arb_chan *mmedge_arb_pick(struct mmedge_arb *arb, u64 now_ns,
					u64 *wait_ns)
{
	struct mmedge_arb_chan *ch, *lat = NULL, *be = NULL;
	u64 wait = U64_MAX;

	list_for_each_entry(ch, &arb->chans, node) {
		mmedge_arb_refill(arb, ch, now_ns);
		if (!ch->backlogged)
			continue;
		if (!mmedge_arb_eligible(ch)) {
			/* Time until the budget is positive again. */
			u64 need = (u64)(1 - ch->budget);

			wait = min(wait, div64_u64(need * NSEC_PER_SEC +
						   ch->cap - 1, ch->cap));
			continue;
		}
		if (ch->class == MMEDGE_ARB_LATENCY) {
			if (!lat || ch->vtime < lat->vtime)
				lat = ch;
		} else if (!be || ch->vtime < be->vtime) {
			be = ch;
		}
	}

	*wait_ns = 0;
	if (lat)
		return lat;
	if (be) {
		arb->vtime = max(arb->vtime, be->vtime);
		return be;
	}
	if (wait != U64_MAX)
		*wait_ns = wait;
	return NULL;
}

/**
 * mmedge_arb_charge() - account a segment that was moved
 * @arb: the arbiter
 * @ch: the channel served
 * @bytes: the segment's size
 *
 * The channel's weight is read here, so a weight change takes effect
 * from the next segment on.
 */
void mmedge_arb_charge(struct mmedge_arb *arb, struct mmedge_arb_chan *ch,
		       u32 bytes)
{
	ch->vtime += div_u64((u64)bytes * MMEDGE_ARB_SCALE,
			     clamp_t(u32, ch->weight, MMEDGE_WEIGHT_MIN,
				     MMEDGE_WEIGHT_MAX));
	if (ch->cap)
		ch->budget -= bytes;
	ch->bytes += bytes;
	ch->segments++;
}

/**
 * mmedge_arb_adapt_share() - target bus share of an image stream
 * @img_bw: measured bandwidth of the image channel(s), bytes/s
 * @total_bw: measured bandwidth of all channels, bytes/s
 *
 * The rule of thumb of adaptive multimodal DMA scheduling: an image
 * stream's share is 0.3 + 0.7 x its bandwidth share, kept within
 * [0.2, 0.8] so neither images nor the rest can be shut out.
 *
 * Return: the share in permille, 200..800.
 */
u32 mmedge_arb_adapt_share(u64 img_bw, u64 total_bw)
{
	u64 frac = 0;

	if (total_bw)
		frac = mul_u64_u64_div_u64(min(img_bw, total_bw), 1000,
					   total_bw);
	return clamp_t(u32, 300 + div_u64(frac * 7, 10), 200, 800);
}

/**
 * mmedge_arb_adapt_step() - move a value toward a target, with hysteresis
 * @cur: current value
 * @target: where it wants to be
 * @hysteresis: differences up to this are ignored (no flapping)
 * @max_step: largest move in one step
 *
 * Return: the new value.
 */
u32 mmedge_arb_adapt_step(u32 cur, u32 target, u32 hysteresis, u32 max_step)
{
	u32 diff = cur > target ? cur - target : target - cur;

	if (diff <= hysteresis)
		return cur;
	diff = min(diff, max_step);
	return cur > target ? cur - diff : cur + diff;
}

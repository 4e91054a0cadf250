// SPDX-License-Identifier: GPL-2.0
/*
 * mmedge: hardware counter to nanoseconds with a calibrated mult/shift.
 *
 * The counter (TSC on x86, the arch timer on arm64, or a device counter)
 * is free-running and may be narrower than 64 bits, so deltas are taken
 * modulo its width: a stamp taken after a wrap still converts right as
 * long as it is less than one wrap period after the anchor. Counter
 * values before the anchor (a frame's start stamped just before a
 * re-anchor) convert to times before base_ns.
 */

#include <linux/bits.h>
#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/math64.h>
#include <linux/time64.h>

#include "mmedge_ts.h"

/**
 * mmedge_ts_calc() - choose mult and shift for a counter frequency
 * @tc: filled in (the anchor is left alone)
 * @hz: counter frequency, 1 Hz .. 4 GHz
 * @bits: counter width, 1..64
 *
 * The conversion multiplies with a 128-bit intermediate
 * (mul_u64_u32_shr()), so any delta within the counter range converts
 * without overflow; the largest shift whose mult fits 32 bits gives the
 * best precision.
 *
 * Return: 0, or -EINVAL for a frequency or width out of range.
 */
int mmedge_ts_calc(struct mmedge_tsconv *tc, u64 hz, unsigned int bits)
{
	u64 mult = 0;
	int shift;

	if (!hz || hz > 4ULL * NSEC_PER_SEC || !bits || bits > 64)
		return -EINVAL;
	for (shift = 32; shift >= 0; shift--) {
		mult = div64_u64((NSEC_PER_SEC << shift) + hz / 2, hz);
		if (mult <= U32_MAX)
			break;
	}
	if (shift < 0 || !mult)
		return -EINVAL;
	tc->mult = mult;
	tc->shift = shift;
	tc->mask = bits == 64 ? U64_MAX : BIT_ULL(bits) - 1;
	return 0;
}

/**
 * mmedge_ts_hz() - counter frequency from a measured interval
 * @raw_delta: counter ticks over the interval
 * @ns_delta: the interval on the reference clock, ns
 *
 * Return: Hz, rounded; 0 if @ns_delta is 0.
 */
u64 mmedge_ts_hz(u64 raw_delta, u64 ns_delta)
{
	if (!ns_delta)
		return 0;
	return mul_u64_u64_div_u64(raw_delta, NSEC_PER_SEC, ns_delta);
}

void mmedge_ts_anchor(struct mmedge_tsconv *tc, u64 raw, u64 ns)
{
	tc->base_raw = raw & tc->mask;
	tc->base_ns = ns;
}

/**
 * mmedge_ts_to_ns() - convert a counter value
 * @tc: the conversion
 * @raw: counter value
 *
 * A value up to half the counter range before the anchor is taken as
 * being in the past.
 *
 * Return: time in ns on the anchor's clock.
 */
u64 mmedge_ts_to_ns(const struct mmedge_tsconv *tc, u64 raw)
{
	u64 delta = (raw - tc->base_raw) & tc->mask;
	u64 back;

	if (delta > tc->mask / 2) {
		back = (tc->base_raw - raw) & tc->mask;
		back = mul_u64_u32_shr(back, tc->mult, tc->shift);
		return tc->base_ns > back ? tc->base_ns - back : 0;
	}
	return tc->base_ns + mul_u64_u32_shr(delta, tc->mult, tc->shift);
}

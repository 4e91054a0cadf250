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
 *
 * Sensor clocks: every capture source has its own counter, derived from
 * the SoC counter with an offset and a drift (struct mmedge_sclk), in
 * integer arithmetic userspace can repeat bit for bit.
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

/**
 * mmedge_sclk_check() - validate a sensor clock's parameters
 * @offset_ns: offset, ns
 * @drift_ppb: drift, parts per billion
 *
 * Return: 0, or -EINVAL for |@offset_ns| > MMEDGE_SENSOR_OFFSET_MAX or
 * |@drift_ppb| > MMEDGE_SENSOR_DRIFT_MAX.
 */
int mmedge_sclk_check(s64 offset_ns, s32 drift_ppb)
{
	if (offset_ns < -MMEDGE_SENSOR_OFFSET_MAX ||
	    offset_ns > MMEDGE_SENSOR_OFFSET_MAX)
		return -EINVAL;
	if (drift_ppb < -MMEDGE_SENSOR_DRIFT_MAX ||
	    drift_ppb > MMEDGE_SENSOR_DRIFT_MAX)
		return -EINVAL;
	return 0;
}

/**
 * mmedge_ts_soc_ns() - the SoC counter on its own ns timeline
 * @tc: the conversion (only mult and shift are used, not the anchor)
 * @raw: counter value
 *
 * (@raw * mult) >> shift with a 128-bit product: @raw itself for a 1 GHz
 * counter (mult = 2^shift), and no overflow for any 64-bit @raw of a
 * counter at 1 GHz or faster.
 *
 * Return: ns, modulo 2^64.
 */
u64 mmedge_ts_soc_ns(const struct mmedge_tsconv *tc, u64 raw)
{
	return mul_u64_u32_shr(raw, tc->mult, tc->shift);
}

/**
 * mmedge_sclk_from_soc() - a sensor clock's reading at a SoC counter time
 * @sc: the sensor clock (parameters checked by mmedge_sclk_check())
 * @soc_ns: the SoC counter in ns (mmedge_ts_soc_ns())
 *
 * @soc_ns + offset + trunc(drift * (@soc_ns - epoch) / 10^9), the
 * difference taken as signed 64-bit, the quotient truncated toward zero
 * and the sum modulo 2^64. The product has 96 bits (mul_u64_u32_div()),
 * and with |drift| <= 10^6 the correction is at most |@soc_ns - epoch| /
 * 1000: no overflow for any 64-bit input.
 *
 * Return: the sensor counter, ns.
 */
u64 mmedge_sclk_from_soc(const struct mmedge_sclk *sc, u64 soc_ns)
{
	s64 d = soc_ns - sc->epoch_ns;
	u64 mag = d < 0 ? -(u64)d : (u64)d;
	u32 ppb = sc->drift_ppb < 0 ? -(s64)sc->drift_ppb : sc->drift_ppb;
	u64 corr = mul_u64_u32_div(mag, ppb, NSEC_PER_SEC);
	bool back = d < 0, slow = sc->drift_ppb < 0;

	if (back != slow)
		corr = -corr;
	return soc_ns + (u64)sc->offset_ns + corr;
}

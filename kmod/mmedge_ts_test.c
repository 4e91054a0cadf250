// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for mmedge's counter-to-ns conversion: mult/shift choice,
 * accuracy, wrap-around of narrow counters, stamps before the anchor;
 * the sensor clocks derived from the SoC counter.
 */

#include <kunit/test.h>
#include <linux/limits.h>
#include <linux/math64.h>
#include <linux/time64.h>

#include "mmedge_ts.h"

struct mmedge_ts_case {
	const char *desc;
	u64 hz;
	unsigned int bits;
};

static const struct mmedge_ts_case mmedge_ts_cases[] = {
	{ "x86 TSC 2.9 GHz", 2900000000ULL, 64 },
	{ "arm64 arch timer 24 MHz, 56 bits", 24000000, 56 },
	{ "1 GHz", 1000000000, 64 },
	{ "device counter 19.2 MHz, 32 bits", 19200000, 32 },
	{ "32768 Hz RTC-like, 32 bits", 32768, 32 },
};

static void mmedge_ts_case_desc(const struct mmedge_ts_case *c, char *desc)
{
	strscpy(desc, c->desc, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(mmedge_ts, mmedge_ts_cases, mmedge_ts_case_desc);

/* Error of converting whole seconds of ticks: below 1 ppm. */
static void mmedge_ts_test_accuracy(struct kunit *test)
{
	const struct mmedge_ts_case *c = test->param_value;
	struct mmedge_tsconv tc;
	u64 sec, ns, want;

	KUNIT_ASSERT_EQ(test, mmedge_ts_calc(&tc, c->hz, c->bits), 0);
	mmedge_ts_anchor(&tc, 1000, 5 * NSEC_PER_SEC);
	for (sec = 1; sec <= 100; sec *= 10) {
		u64 ticks = c->hz * sec;

		if (ticks > tc.mask / 2)
			break;
		ns = mmedge_ts_to_ns(&tc, 1000 + ticks);
		want = 5 * NSEC_PER_SEC + sec * NSEC_PER_SEC;
		KUNIT_EXPECT_LE_MSG(test, abs((s64)(ns - want)),
				    (s64)(sec * 1000 + 1), "%llu s", sec);
	}
	/* One tick is 1e9/hz ns, rounded down by at most 1. */
	ns = mmedge_ts_to_ns(&tc, 1000 + 1) - 5 * NSEC_PER_SEC;
	KUNIT_EXPECT_LE(test, abs((s64)ns - (s64)div64_u64(NSEC_PER_SEC, c->hz)), 1);
}

/* vivid's time_wrap idea: start just before the counter wraps. */
static void mmedge_ts_test_wrap(struct kunit *test)
{
	struct mmedge_tsconv tc;
	u64 base = 0xffffffffULL - 1000, ns;

	KUNIT_ASSERT_EQ(test, mmedge_ts_calc(&tc, 1000000, 32), 0);	/* 1 us/tick */
	mmedge_ts_anchor(&tc, base, 1000000000);
	/* 2000 ticks later the counter has wrapped to 999. */
	ns = mmedge_ts_to_ns(&tc, (base + 2000) & 0xffffffffULL);
	KUNIT_EXPECT_EQ(test, ns, 1000000000ULL + 2000 * 1000);
	/* The same for a 64-bit counter at its top. */
	KUNIT_ASSERT_EQ(test, mmedge_ts_calc(&tc, 1000000, 64), 0);
	mmedge_ts_anchor(&tc, U64_MAX - 10, 7000);
	KUNIT_EXPECT_EQ(test, mmedge_ts_to_ns(&tc, 9), 7000 + 20 * 1000);
}

/* A start-of-frame stamp taken just before a re-anchor. */
static void mmedge_ts_test_before_anchor(struct kunit *test)
{
	struct mmedge_tsconv tc;

	KUNIT_ASSERT_EQ(test, mmedge_ts_calc(&tc, 1000000, 32), 0);
	mmedge_ts_anchor(&tc, 5000, 1000000000);
	KUNIT_EXPECT_EQ(test, mmedge_ts_to_ns(&tc, 4000), 1000000000ULL - 1000000);
	/* Across the wrap, backwards. */
	mmedge_ts_anchor(&tc, 10, 1000000000);
	KUNIT_EXPECT_EQ(test, mmedge_ts_to_ns(&tc, 0xfffffff6ULL),
			1000000000ULL - 20 * 1000);
	/* Never below zero. */
	mmedge_ts_anchor(&tc, 5000, 10);
	KUNIT_EXPECT_EQ(test, mmedge_ts_to_ns(&tc, 4000), 0);
}

static void mmedge_ts_test_monotonic(struct kunit *test)
{
	struct mmedge_tsconv tc;
	u64 raw, prev = 0, ns;

	KUNIT_ASSERT_EQ(test, mmedge_ts_calc(&tc, 2900000000ULL, 64), 0);
	mmedge_ts_anchor(&tc, 123456789, 42);
	for (raw = 123456789; raw < 123456789 + 100000; raw += 37) {
		ns = mmedge_ts_to_ns(&tc, raw);
		KUNIT_EXPECT_GE(test, ns, prev);
		prev = ns;
	}
}

static void mmedge_ts_test_hz(struct kunit *test)
{
	struct mmedge_tsconv tc;

	KUNIT_EXPECT_EQ(test, mmedge_ts_hz(2900000, 1000000), 2900000000ULL);
	KUNIT_EXPECT_EQ(test, mmedge_ts_hz(24, 1000), 24000000);
	KUNIT_EXPECT_EQ(test, mmedge_ts_hz(1, 0), 0);
	KUNIT_EXPECT_EQ(test, mmedge_ts_calc(&tc, 0, 64), -EINVAL);
	KUNIT_EXPECT_EQ(test, mmedge_ts_calc(&tc, 1000, 0), -EINVAL);
	KUNIT_EXPECT_EQ(test, mmedge_ts_calc(&tc, 1000, 65), -EINVAL);
	KUNIT_EXPECT_EQ(test, mmedge_ts_calc(&tc, 5000000000ULL, 64), -EINVAL);
}

/*
 * The drift term by another route: d = q * 10^9 + r with q and r of d's
 * sign, so trunc(drift * d / 10^9) = drift * q + trunc(drift * r / 10^9)
 * (the first term is exact, both parts truncate the same way).
 */
static s64 mmedge_sclk_ref_corr(s32 drift, s64 d)
{
	s32 r;
	s64 q = div_s64_rem(d, NSEC_PER_SEC, &r);

	return drift * q + div_s64((s64)drift * r, NSEC_PER_SEC);
}

static u64 mmedge_sclk_at(s64 offset, s32 drift, u64 epoch, u64 soc)
{
	struct mmedge_sclk sc = {
		.offset_ns = offset, .drift_ppb = drift, .epoch_ns = epoch,
	};

	return mmedge_sclk_from_soc(&sc, soc);
}

/* 0/0 is the SoC timeline itself, wrap included. */
static void mmedge_sclk_test_identity(struct kunit *test)
{
	static const u64 v[] = { 0, 1, 999999999, 5000000000ULL, S64_MAX,
				 (u64)S64_MAX + 1, U64_MAX };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(v); i++) {
		KUNIT_EXPECT_EQ(test, mmedge_sclk_at(0, 0, 0, v[i]), v[i]);
		KUNIT_EXPECT_EQ(test, mmedge_sclk_at(0, 0, v[i], 77), 77ULL);
	}
	/* The offset alone wraps modulo 2^64 like any counter. */
	KUNIT_EXPECT_EQ(test, mmedge_sclk_at(-5, 0, 0, 3), U64_MAX - 1);
	KUNIT_EXPECT_EQ(test, mmedge_sclk_at(3, 0, 0, U64_MAX), 2ULL);
}

/* The sources: +3 ms/+50 ppm, -2 ms/-30 ppm. */
static void mmedge_sclk_test_values(struct kunit *test)
{
	u64 e = 7 * NSEC_PER_SEC;

	/* 1 s after the epoch: 50 us of drift. */
	KUNIT_EXPECT_EQ(test, mmedge_sclk_at(3000000, 50000, e, e + NSEC_PER_SEC),
			e + NSEC_PER_SEC + 3000000 + 50000);
	/* 60 s: 3 ms of drift. */
	KUNIT_EXPECT_EQ(test, mmedge_sclk_at(3000000, 50000, e,
					     e + 60 * NSEC_PER_SEC),
			e + 60 * NSEC_PER_SEC + 3000000 + 3000000);
	KUNIT_EXPECT_EQ(test, mmedge_sclk_at(-2000000, -30000, e,
					     e + 60 * NSEC_PER_SEC),
			e + 60 * NSEC_PER_SEC - 2000000 - 1800000);
	/* At the epoch only the offset counts. */
	KUNIT_EXPECT_EQ(test, mmedge_sclk_at(-2000000, -30000, e, e),
			e - 2000000);
	/* Before the epoch the drift term changes sign. */
	KUNIT_EXPECT_EQ(test, mmedge_sclk_at(0, 50000, e, e - NSEC_PER_SEC),
			e - NSEC_PER_SEC - 50000);
	KUNIT_EXPECT_EQ(test, mmedge_sclk_at(0, -30000, e, e - NSEC_PER_SEC),
			e - NSEC_PER_SEC + 30000);
}

/* Truncation toward zero, for both signs of drift and of the interval. */
static void mmedge_sclk_test_trunc(struct kunit *test)
{
	u64 e = 1000 * NSEC_PER_SEC;

	/* 1 ppb over 999999999 ns is 0.999999999 ns: 0, either sign. */
	KUNIT_EXPECT_EQ(test, mmedge_sclk_at(0, 1, e, e + 999999999), e + 999999999);
	KUNIT_EXPECT_EQ(test, mmedge_sclk_at(0, -1, e, e + 999999999), e + 999999999);
	KUNIT_EXPECT_EQ(test, mmedge_sclk_at(0, 1, e, e - 999999999), e - 999999999);
	KUNIT_EXPECT_EQ(test, mmedge_sclk_at(0, -1, e, e - 999999999), e - 999999999);
	/* -30 ppm over 1 s + 1 ns: -30000.00003 -> -30000. */
	KUNIT_EXPECT_EQ(test, mmedge_sclk_at(0, -30000, e, e + NSEC_PER_SEC + 1),
			e + NSEC_PER_SEC + 1 - 30000);
	/* +1 ppb over -1 s exactly: -1. */
	KUNIT_EXPECT_EQ(test, mmedge_sclk_at(0, 1, e, e - NSEC_PER_SEC),
			e - NSEC_PER_SEC - 1);
}

/* The largest drift over the largest intervals: no overflow. */
static void mmedge_sclk_test_extremes(struct kunit *test)
{
	const s32 dmax = MMEDGE_SENSOR_DRIFT_MAX;
	/* Ten years of uptime, in ns. */
	const u64 years = 10ULL * 365 * 24 * 3600 * NSEC_PER_SEC;

	KUNIT_EXPECT_EQ(test, mmedge_sclk_at(0, dmax, 0, years),
			years + years / 1000);
	KUNIT_EXPECT_EQ(test, mmedge_sclk_at(0, -dmax, 0, years),
			years - years / 1000);
	/* The whole signed range of the interval. */
	KUNIT_EXPECT_EQ(test, mmedge_sclk_at(0, dmax, 0, S64_MAX),
			(u64)S64_MAX + (u64)S64_MAX / 1000);
	KUNIT_EXPECT_EQ(test, mmedge_sclk_at(0, -dmax, 0, S64_MAX),
			(u64)S64_MAX - (u64)S64_MAX / 1000);
	/* d = S64_MIN: |d| = 2^63 does not fit s64, still exact. */
	KUNIT_EXPECT_EQ(test, mmedge_sclk_at(0, dmax, (u64)S64_MAX + 1, 0),
			0 - div_u64(1ULL << 63, 1000));
	KUNIT_EXPECT_EQ(test, mmedge_sclk_at(0, -dmax, (u64)S64_MAX + 1, 0),
			div_u64(1ULL << 63, 1000));
	/* Largest offsets. */
	KUNIT_EXPECT_EQ(test, mmedge_sclk_at(MMEDGE_SENSOR_OFFSET_MAX, dmax,
					     0, years),
			years + years / 1000 + MMEDGE_SENSOR_OFFSET_MAX);
	KUNIT_EXPECT_EQ(test, mmedge_sclk_at(-MMEDGE_SENSOR_OFFSET_MAX, -dmax,
					     0, years),
			years - years / 1000 - MMEDGE_SENSOR_OFFSET_MAX);
}

/* Against the reference over a spread of values, both signs. */
static void mmedge_sclk_test_reference(struct kunit *test)
{
	static const s32 drifts[] = { 1, -1, 50000, -30000, 999999, -999999,
				      MMEDGE_SENSOR_DRIFT_MAX,
				      -MMEDGE_SENSOR_DRIFT_MAX, 123457 };
	u64 x = 0x9e3779b97f4a7c15ULL;
	unsigned int i, k;

	for (i = 0; i < ARRAY_SIZE(drifts); i++) {
		for (k = 0; k < 200; k++) {
			u64 epoch, soc;
			s64 d;

			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
			epoch = x >> (k % 40);
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
			soc = x >> (k % 23);
			d = soc - epoch;
			KUNIT_EXPECT_EQ_MSG(test,
					    mmedge_sclk_at(-17, drifts[i], epoch, soc),
					    soc - 17 + (u64)mmedge_sclk_ref_corr(drifts[i], d),
					    "drift %d soc %llu epoch %llu", drifts[i],
					    soc, epoch);
		}
	}
}

/* A sensor clock never runs backwards (its rate is 1 +- 0.001). */
static void mmedge_sclk_test_monotonic(struct kunit *test)
{
	u64 e = 50 * NSEC_PER_SEC, soc, prev = 0, v;
	int sign;

	for (sign = -1; sign <= 1; sign += 2) {
		prev = 0;
		for (soc = e - 5000; soc < e + 5000; soc += 7) {
			v = mmedge_sclk_at(0, sign * MMEDGE_SENSOR_DRIFT_MAX, e, soc);
			KUNIT_EXPECT_GE(test, v, prev);
			prev = v;
		}
	}
}

static void mmedge_sclk_test_check(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, mmedge_sclk_check(0, 0), 0);
	KUNIT_EXPECT_EQ(test, mmedge_sclk_check(MMEDGE_SENSOR_OFFSET_MAX,
						MMEDGE_SENSOR_DRIFT_MAX), 0);
	KUNIT_EXPECT_EQ(test, mmedge_sclk_check(-MMEDGE_SENSOR_OFFSET_MAX,
						-MMEDGE_SENSOR_DRIFT_MAX), 0);
	KUNIT_EXPECT_EQ(test, mmedge_sclk_check(MMEDGE_SENSOR_OFFSET_MAX + 1, 0),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, mmedge_sclk_check(-MMEDGE_SENSOR_OFFSET_MAX - 1, 0),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, mmedge_sclk_check(S64_MIN, 0), -EINVAL);
	KUNIT_EXPECT_EQ(test, mmedge_sclk_check(0, MMEDGE_SENSOR_DRIFT_MAX + 1),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, mmedge_sclk_check(0, -MMEDGE_SENSOR_DRIFT_MAX - 1),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, mmedge_sclk_check(0, S32_MIN), -EINVAL);
}

/* The SoC counter's ns timeline: the raw value at 1 GHz, exact. */
static void mmedge_sclk_test_soc_ns(struct kunit *test)
{
	struct mmedge_tsconv tc;
	u64 ns;

	KUNIT_ASSERT_EQ(test, mmedge_ts_calc(&tc, NSEC_PER_SEC, 64), 0);
	KUNIT_EXPECT_EQ(test, mmedge_ts_soc_ns(&tc, 0), 0ULL);
	KUNIT_EXPECT_EQ(test, mmedge_ts_soc_ns(&tc, 123456789123ULL),
			123456789123ULL);
	KUNIT_EXPECT_EQ(test, mmedge_ts_soc_ns(&tc, U64_MAX), U64_MAX);
	/* A 2.9 GHz TSC at the top of its range: a 128-bit product. */
	KUNIT_ASSERT_EQ(test, mmedge_ts_calc(&tc, 2900000000ULL, 64), 0);
	ns = mmedge_ts_soc_ns(&tc, U64_MAX);
	KUNIT_EXPECT_LE(test, abs((s64)(ns - div_u64(U64_MAX, 29) * 10)),
			(s64)div_u64(U64_MAX, 1000000000));
	/* The anchor does not move it. */
	mmedge_ts_anchor(&tc, 12345, 999);
	KUNIT_EXPECT_EQ(test, mmedge_ts_soc_ns(&tc, 2900000000ULL),
			mul_u64_u32_shr(2900000000ULL, tc.mult, tc.shift));
}

static struct kunit_case mmedge_ts_test_cases[] = {
	KUNIT_CASE_PARAM(mmedge_ts_test_accuracy, mmedge_ts_gen_params),
	KUNIT_CASE(mmedge_ts_test_wrap),
	KUNIT_CASE(mmedge_ts_test_before_anchor),
	KUNIT_CASE(mmedge_ts_test_monotonic),
	KUNIT_CASE(mmedge_ts_test_hz),
	KUNIT_CASE(mmedge_sclk_test_identity),
	KUNIT_CASE(mmedge_sclk_test_values),
	KUNIT_CASE(mmedge_sclk_test_trunc),
	KUNIT_CASE(mmedge_sclk_test_extremes),
	KUNIT_CASE(mmedge_sclk_test_reference),
	KUNIT_CASE(mmedge_sclk_test_monotonic),
	KUNIT_CASE(mmedge_sclk_test_check),
	KUNIT_CASE(mmedge_sclk_test_soc_ns),
	{}
};

static struct kunit_suite mmedge_ts_suite = {
	.name = "mmedge_ts",
	.test_cases = mmedge_ts_test_cases,
};

kunit_test_suite(mmedge_ts_suite);

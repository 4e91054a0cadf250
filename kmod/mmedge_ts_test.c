// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for mmedge's counter-to-ns conversion: mult/shift choice,
 * accuracy, wrap-around of narrow counters, stamps before the anchor.
 */

#include <kunit/test.h>
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

static struct kunit_case mmedge_ts_test_cases[] = {
	KUNIT_CASE_PARAM(mmedge_ts_test_accuracy, mmedge_ts_gen_params),
	KUNIT_CASE(mmedge_ts_test_wrap),
	KUNIT_CASE(mmedge_ts_test_before_anchor),
	KUNIT_CASE(mmedge_ts_test_monotonic),
	KUNIT_CASE(mmedge_ts_test_hz),
	{}
};

static struct kunit_suite mmedge_ts_suite = {
	.name = "mmedge_ts",
	.test_cases = mmedge_ts_test_cases,
};

kunit_test_suite(mmedge_ts_suite);

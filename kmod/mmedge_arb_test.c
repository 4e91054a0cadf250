// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for the mmedge arbiter: fairness, work conservation, the
 * latency class and its cap, weight changes, adaptive-mode bounds.
 *
 * The bus is simulated: each served segment takes bytes / bandwidth.
 */

#include <kunit/test.h>
#include <linux/math64.h>

#include "mmedge_arb.h"

#define BUS_BPS		(200ULL * 1000 * 1000)	/* 200 MB/s */
#define BURST_NS	(2 * NSEC_PER_MSEC)

struct sim {
	struct mmedge_arb arb;
	struct mmedge_arb_chan ch[4];
	u32 seg[4];
	u64 now;
	unsigned int n;
};

static void sim_init(struct sim *s, unsigned int n)
{
	memset(s, 0, sizeof(*s));
	mmedge_arb_init(&s->arb, BURST_NS);
	s->n = n;
}

static void sim_add(struct sim *s, unsigned int i, u32 weight, u32 class,
		    u64 cap, u32 seg)
{
	mmedge_arb_set(&s->ch[i], weight, class, cap);
	s->seg[i] = seg;
	mmedge_arb_add(&s->arb, &s->ch[i], s->now);
}

/* Serve one segment; returns its channel index, or -1 if the bus idled. */
static int sim_step(struct sim *s)
{
	struct mmedge_arb_chan *ch;
	u64 wait;
	int i;

	ch = mmedge_arb_pick(&s->arb, s->now, &wait);
	if (!ch) {
		s->now += wait ? wait : 1000;
		return -1;
	}
	i = ch - s->ch;
	mmedge_arb_charge(&s->arb, ch, s->seg[i]);
	s->now += div_u64((u64)s->seg[i] * NSEC_PER_SEC, BUS_BPS);
	return i;
}

static void sim_backlog_all(struct sim *s)
{
	unsigned int i;

	for (i = 0; i < s->n; i++)
		mmedge_arb_set_backlogged(&s->arb, &s->ch[i], true);
}

static u64 sim_total(struct sim *s)
{
	u64 t = 0;
	unsigned int i;

	for (i = 0; i < s->n; i++)
		t += s->ch[i].bytes;
	return t;
}

/* Share of channel i in permille x 10 (0.01 % units). */
static u64 share(struct sim *s, unsigned int i)
{
	return div64_u64(s->ch[i].bytes * 10000, sim_total(s));
}

static void mmedge_arb_test_weights_532(struct kunit *test)
{
	struct sim *s = kunit_kzalloc(test, sizeof(*s), GFP_KERNEL);
	unsigned int k;

	KUNIT_ASSERT_NOT_NULL(test, s);
	sim_init(s, 3);
	sim_add(s, 0, 500, MMEDGE_ARB_BEST_EFFORT, 0, 4096);
	sim_add(s, 1, 300, MMEDGE_ARB_BEST_EFFORT, 0, 4096);
	sim_add(s, 2, 200, MMEDGE_ARB_BEST_EFFORT, 0, 4096);
	sim_backlog_all(s);
	for (k = 0; k < 20000; k++)
		KUNIT_ASSERT_GE(test, sim_step(s), 0);
	/* 50 %, 30 %, 20 % within +-1 % (absolute). */
	KUNIT_EXPECT_LE(test, abs((s64)share(s, 0) - 5000), 100);
	KUNIT_EXPECT_LE(test, abs((s64)share(s, 1) - 3000), 100);
	KUNIT_EXPECT_LE(test, abs((s64)share(s, 2) - 2000), 100);
}

/* Fair in bytes, not in segments: sizes differ by 1000x. */
static void mmedge_arb_test_segment_sizes(struct kunit *test)
{
	struct sim *s = kunit_kzalloc(test, sizeof(*s), GFP_KERNEL);
	unsigned int k;

	KUNIT_ASSERT_NOT_NULL(test, s);
	sim_init(s, 3);
	sim_add(s, 0, 100, MMEDGE_ARB_BEST_EFFORT, 0, 65536);	/* camera */
	sim_add(s, 1, 100, MMEDGE_ARB_BEST_EFFORT, 0, 640);	/* audio */
	sim_add(s, 2, 100, MMEDGE_ARB_BEST_EFFORT, 0, 64);	/* IMU */
	sim_backlog_all(s);
	for (k = 0; k < 200000; k++)
		sim_step(s);
	KUNIT_EXPECT_LE(test, abs((s64)share(s, 0) - 3333), 100);
	KUNIT_EXPECT_LE(test, abs((s64)share(s, 1) - 3333), 100);
	KUNIT_EXPECT_LE(test, abs((s64)share(s, 2) - 3333), 100);
}

static void mmedge_arb_test_work_conserving(struct kunit *test)
{
	struct sim *s = kunit_kzalloc(test, sizeof(*s), GFP_KERNEL);
	unsigned int k;

	KUNIT_ASSERT_NOT_NULL(test, s);
	sim_init(s, 3);
	sim_add(s, 0, 10000, MMEDGE_ARB_BEST_EFFORT, 0, 4096);
	sim_add(s, 1, 1, MMEDGE_ARB_BEST_EFFORT, 0, 4096);
	sim_add(s, 2, 100, MMEDGE_ARB_BEST_EFFORT, 0, 4096);
	/* Only the lightest channel has work: it gets the whole bus. */
	mmedge_arb_set_backlogged(&s->arb, &s->ch[1], true);
	for (k = 0; k < 1000; k++)
		KUNIT_ASSERT_EQ(test, sim_step(s), 1);
	/* Nothing backlogged: nothing picked, and no wait reported. */
	mmedge_arb_set_backlogged(&s->arb, &s->ch[1], false);
	{
		u64 wait = 1;

		KUNIT_EXPECT_NULL(test, mmedge_arb_pick(&s->arb, s->now, &wait));
		KUNIT_EXPECT_EQ(test, wait, 0);
	}
}

/* A channel idle for a long time gets no credit for it. */
static void mmedge_arb_test_no_idle_credit(struct kunit *test)
{
	struct sim *s = kunit_kzalloc(test, sizeof(*s), GFP_KERNEL);
	unsigned int k, got1 = 0;

	KUNIT_ASSERT_NOT_NULL(test, s);
	sim_init(s, 2);
	sim_add(s, 0, 100, MMEDGE_ARB_BEST_EFFORT, 0, 4096);
	sim_add(s, 1, 100, MMEDGE_ARB_BEST_EFFORT, 0, 4096);
	mmedge_arb_set_backlogged(&s->arb, &s->ch[0], true);
	for (k = 0; k < 5000; k++)
		sim_step(s);
	mmedge_arb_set_backlogged(&s->arb, &s->ch[1], true);
	for (k = 0; k < 100; k++)
		got1 += sim_step(s) == 1;
	KUNIT_EXPECT_GE(test, got1, 49);
	KUNIT_EXPECT_LE(test, got1, 51);
}

static void mmedge_arb_test_weight_change(struct kunit *test)
{
	struct sim *s = kunit_kzalloc(test, sizeof(*s), GFP_KERNEL);
	u64 b0, b1;
	unsigned int k;

	KUNIT_ASSERT_NOT_NULL(test, s);
	sim_init(s, 2);
	sim_add(s, 0, 100, MMEDGE_ARB_BEST_EFFORT, 0, 4096);
	sim_add(s, 1, 100, MMEDGE_ARB_BEST_EFFORT, 0, 4096);
	sim_backlog_all(s);
	for (k = 0; k < 10000; k++)
		sim_step(s);
	KUNIT_EXPECT_LE(test, abs((s64)share(s, 0) - 5000), 100);

	/* 3:1 from the next segment on. */
	mmedge_arb_set(&s->ch[0], 300, MMEDGE_ARB_BEST_EFFORT, 0);
	b0 = s->ch[0].bytes;
	b1 = s->ch[1].bytes;
	for (k = 0; k < 10000; k++)
		sim_step(s);
	b0 = s->ch[0].bytes - b0;
	b1 = s->ch[1].bytes - b1;
	KUNIT_EXPECT_LE(test, abs((s64)div64_u64(b0 * 10000, b0 + b1) - 7500),
			100);
}

/*
 * A latency channel flooding the bus gets no more than its cap; while
 * under the cap it goes first, so its wait is at most one segment of the
 * best-effort traffic in flight.
 */
static void mmedge_arb_test_latency_cap(struct kunit *test)
{
	struct sim *s = kunit_kzalloc(test, sizeof(*s), GFP_KERNEL);
	u64 cap = BUS_BPS / 10, elapsed, start;
	unsigned int k;

	KUNIT_ASSERT_NOT_NULL(test, s);
	sim_init(s, 2);
	sim_add(s, 0, 100, MMEDGE_ARB_BEST_EFFORT, 0, 65536);
	sim_add(s, 1, 100, MMEDGE_ARB_LATENCY, cap, 640);
	sim_backlog_all(s);
	start = s->now;
	for (k = 0; k < 200000; k++)
		sim_step(s);
	elapsed = s->now - start;
	/* Within 2 % of the cap over the run (plus its initial burst). */
	KUNIT_EXPECT_LE(test, s->ch[1].bytes,
			mul_u64_u64_div_u64(cap, elapsed, NSEC_PER_SEC) * 102 / 100 +
			mul_u64_u64_div_u64(cap, BURST_NS, NSEC_PER_SEC));
	KUNIT_EXPECT_GE(test, s->ch[1].bytes,
			mul_u64_u64_div_u64(cap, elapsed, NSEC_PER_SEC) * 98 / 100);
	/* The rest went to the best-effort channel: the bus never idled. */
	KUNIT_EXPECT_GT(test, s->ch[0].bytes, s->ch[1].bytes * 8);
}

static void mmedge_arb_test_latency_first(struct kunit *test)
{
	struct sim *s = kunit_kzalloc(test, sizeof(*s), GFP_KERNEL);
	unsigned int k;

	KUNIT_ASSERT_NOT_NULL(test, s);
	sim_init(s, 2);
	sim_add(s, 0, 10000, MMEDGE_ARB_BEST_EFFORT, 0, 65536);
	sim_add(s, 1, 1, MMEDGE_ARB_LATENCY, BUS_BPS / 10, 640);
	mmedge_arb_set_backlogged(&s->arb, &s->ch[0], true);
	for (k = 0; k < 100; k++) {
		KUNIT_ASSERT_EQ(test, sim_step(s), 0);
		/* An audio period arrives: it is next, whatever the weights. */
		mmedge_arb_set_backlogged(&s->arb, &s->ch[1], true);
		KUNIT_ASSERT_EQ(test, sim_step(s), 1);
		mmedge_arb_set_backlogged(&s->arb, &s->ch[1], false);
	}
}

/* A capped best-effort channel alone: the arbiter says how long to wait. */
static void mmedge_arb_test_cap_wait(struct kunit *test)
{
	struct sim *s = kunit_kzalloc(test, sizeof(*s), GFP_KERNEL);
	struct mmedge_arb_chan *ch;
	u64 wait;

	KUNIT_ASSERT_NOT_NULL(test, s);
	sim_init(s, 1);
	sim_add(s, 0, 100, MMEDGE_ARB_BEST_EFFORT, 1000000, 4096);
	sim_backlog_all(s);
	/* Spend the burst (2 ms at 1 MB/s = 2000 bytes): one segment. */
	KUNIT_ASSERT_EQ(test, sim_step(s), 0);
	ch = mmedge_arb_pick(&s->arb, s->now, &wait);
	KUNIT_EXPECT_NULL(test, ch);
	KUNIT_EXPECT_GT(test, wait, 0);
	/* After the wait it is eligible again. */
	KUNIT_EXPECT_PTR_EQ(test, mmedge_arb_pick(&s->arb, s->now + wait, &wait),
			    &s->ch[0]);
}

static void mmedge_arb_test_check_config(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, mmedge_arb_check_config(100, 0, 0), 0);
	KUNIT_EXPECT_EQ(test, mmedge_arb_check_config(1, 0, 0), 0);
	KUNIT_EXPECT_EQ(test, mmedge_arb_check_config(10000, 1, 1), 0);
	KUNIT_EXPECT_EQ(test, mmedge_arb_check_config(0, 0, 0), -EINVAL);
	KUNIT_EXPECT_EQ(test, mmedge_arb_check_config(10001, 0, 0), -EINVAL);
	KUNIT_EXPECT_EQ(test, mmedge_arb_check_config(100, 2, 0), -EINVAL);
	/* Latency without a cap could starve everyone else. */
	KUNIT_EXPECT_EQ(test, mmedge_arb_check_config(100, 1, 0), -EINVAL);
	/* An unbounded cap would overflow the token bucket's arithmetic. */
	KUNIT_EXPECT_EQ(test, mmedge_arb_check_config(100, 0, MMEDGE_ARB_CAP_MAX), 0);
	KUNIT_EXPECT_EQ(test, mmedge_arb_check_config(100, 1, MMEDGE_ARB_CAP_MAX), 0);
	KUNIT_EXPECT_EQ(test, mmedge_arb_check_config(100, 0, MMEDGE_ARB_CAP_MAX + 1),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, mmedge_arb_check_config(100, 1, 1ULL << 63), -EINVAL);
	KUNIT_EXPECT_EQ(test, mmedge_arb_check_config(100, 0, U64_MAX), -EINVAL);
}

/*
 * The largest cap after a long idle time: the refill's cap x time product
 * stays in range (a quotient past 2^64 traps in mul_u64_u64_div_u64()).
 */
static void mmedge_arb_test_cap_max_idle(struct kunit *test)
{
	struct mmedge_arb arb;
	struct mmedge_arb_chan ch = {
		.weight = MMEDGE_WEIGHT_DEFAULT,
		.class = MMEDGE_ARB_LATENCY,
		.cap = MMEDGE_ARB_CAP_MAX,
	};
	u64 wait;

	mmedge_arb_init(&arb, 2 * NSEC_PER_MSEC);
	mmedge_arb_add(&arb, &ch, 0);
	mmedge_arb_set_backlogged(&arb, &ch, true);
	mmedge_arb_charge(&arb, &ch, 1 << 20);
	/* Ten years idle. */
	KUNIT_EXPECT_PTR_EQ(test, mmedge_arb_pick(&arb, 10ULL * 365 * 86400 *
						  NSEC_PER_SEC, &wait), &ch);
	KUNIT_EXPECT_EQ(test, ch.budget, (s64)(MMEDGE_ARB_CAP_MAX / 500));
}

static void mmedge_arb_test_adapt_bounds(struct kunit *test)
{
	u64 img;

	KUNIT_EXPECT_EQ(test, mmedge_arb_adapt_share(0, 0), 300);
	KUNIT_EXPECT_EQ(test, mmedge_arb_adapt_share(0, 1000), 300);
	KUNIT_EXPECT_EQ(test, mmedge_arb_adapt_share(500, 1000), 650);
	KUNIT_EXPECT_EQ(test, mmedge_arb_adapt_share(1000, 1000), 800);
	KUNIT_EXPECT_EQ(test, mmedge_arb_adapt_share(U64_MAX, 1000), 800);
	for (img = 0; img <= 1000; img += 7) {
		u32 sh = mmedge_arb_adapt_share(img * 1000000, 1000000000);

		KUNIT_EXPECT_GE(test, sh, 200);
		KUNIT_EXPECT_LE(test, sh, 800);
	}
	/* Hysteresis: small differences do not move; large ones are capped. */
	KUNIT_EXPECT_EQ(test, mmedge_arb_adapt_step(500, 520, 25, 50), 500);
	KUNIT_EXPECT_EQ(test, mmedge_arb_adapt_step(500, 700, 25, 50), 550);
	KUNIT_EXPECT_EQ(test, mmedge_arb_adapt_step(500, 300, 25, 50), 450);
	KUNIT_EXPECT_EQ(test, mmedge_arb_adapt_step(500, 530, 25, 50), 530);
}

/*
 * mmedge_arb_set(): a changed cap drops banked budget but keeps a debt;
 * a change that keeps the cap keeps the budget.
 */
static void mmedge_arb_test_set(struct kunit *test)
{
	struct mmedge_arb_chan ch = { };

	mmedge_arb_set(&ch, 200, MMEDGE_ARB_LATENCY, 1000000);
	KUNIT_EXPECT_EQ(test, ch.weight, 200);
	KUNIT_EXPECT_EQ(test, ch.class, MMEDGE_ARB_LATENCY);
	KUNIT_EXPECT_EQ(test, ch.cap, 1000000);

	ch.budget = 5000;
	mmedge_arb_set(&ch, 50, MMEDGE_ARB_LATENCY, 1000000);
	KUNIT_EXPECT_EQ(test, ch.weight, 50);
	KUNIT_EXPECT_EQ(test, ch.budget, 5000);

	mmedge_arb_set(&ch, 50, MMEDGE_ARB_LATENCY, 2000000);
	KUNIT_EXPECT_EQ(test, ch.cap, 2000000);
	KUNIT_EXPECT_EQ(test, ch.budget, 0);

	ch.budget = -300;
	mmedge_arb_set(&ch, 50, MMEDGE_ARB_BEST_EFFORT, 0);
	KUNIT_EXPECT_EQ(test, ch.class, MMEDGE_ARB_BEST_EFFORT);
	KUNIT_EXPECT_EQ(test, ch.cap, 0);
	KUNIT_EXPECT_EQ(test, ch.budget, -300);
}

static struct kunit_case mmedge_arb_cases[] = {
	KUNIT_CASE(mmedge_arb_test_weights_532),
	KUNIT_CASE(mmedge_arb_test_segment_sizes),
	KUNIT_CASE(mmedge_arb_test_work_conserving),
	KUNIT_CASE(mmedge_arb_test_no_idle_credit),
	KUNIT_CASE(mmedge_arb_test_weight_change),
	KUNIT_CASE(mmedge_arb_test_latency_cap),
	KUNIT_CASE(mmedge_arb_test_latency_first),
	KUNIT_CASE(mmedge_arb_test_cap_wait),
	KUNIT_CASE(mmedge_arb_test_check_config),
	KUNIT_CASE(mmedge_arb_test_cap_max_idle),
	KUNIT_CASE(mmedge_arb_test_adapt_bounds),
	KUNIT_CASE(mmedge_arb_test_set),
	{}
};

static struct kunit_suite mmedge_arb_suite = {
	.name = "mmedge_arb",
	.test_cases = mmedge_arb_cases,
};

kunit_test_suite(mmedge_arb_suite);

// SPDX-License-Identifier: MIT
/*
 * Host tests of the sensor clock formula and the clock fit: synthetic
 * (sensor, SoC, CLOCK_MONOTONIC) triples of a sensor 3 ms ahead and 50 ppm
 * fast, with jitter, preempted samples and corrupt ones, over 60 s of
 * virtual time; the fit must align frames within 100 us, where taking the
 * sensor clock as monotonic is more than 3 ms off.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mmhal.h"
#include "tests/tap.h"

/* A small deterministic generator (xorshift64*). */
static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ULL;
}

static uint64_t rng_below(uint64_t n)
{
	return rng() % n;
}

/* The virtual sensor: mono -> sensor, 3 ms ahead, 50 ppm fast. */
#define T0		1000000000000ULL	/* mono at the start: 1000 s */
#define OFFSET_NS	3000000
#define DRIFT_PPB	50000

static uint64_t sensor_at(uint64_t mono)
{
	int64_t d = (int64_t)(mono - T0);

	/* |d| < 2^37 over the test: the product fits. */
	return mono + OFFSET_NS + (uint64_t)(d * DRIFT_PPB / 1000000000);
}

/*
 * One XTS call at mono time t: 8 sandwiches. Each is 0.3..20 us wide with
 * the counter read anywhere inside; 1 in 10 is preempted (1..3 ms wide,
 * read near one end). With @corrupt, every sample of the call is wide and
 * skewed, and one in three carries a sensor value 5 ms off.
 */
static void make_xts(uint64_t t, int corrupt, struct mmhal_sensor_xts *x)
{
	unsigned int i;

	memset(x, 0, sizeof(*x));
	x->n_samples = 8;
	for (i = 0; i < x->n_samples; i++) {
		uint64_t w = 300 + rng_below(20000), at;

		if (corrupt || rng_below(10) == 0)
			w = 1000000 + rng_below(2000000);
		at = corrupt ? w - rng_below(w / 20 + 1) : rng_below(w + 1);
		x->samples[i].sys_before = t;
		x->samples[i].raw = t + at;
		x->samples[i].sys_after = t + w;
		x->samples[i].sensor = sensor_at(t + at);
		if (corrupt && i % 3 == 0)
			x->samples[i].sensor += 5000000;
		t += w + 1000;
	}
}

static uint64_t absdiff(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
}

/*
 * 60 s of virtual time: an XTS call every 500 ms (5% corrupt), a 30-point
 * window; after each call, frames over the next 500 ms (camera at 30 fps)
 * are mapped before the next call, i.e. extrapolated as an application
 * would. Error = |mapped - true mono|.
 */
static void test_alignment_60s(void)
{
	struct mmhal_clock_fit *fit = NULL;
	struct mmhal_clock_fit_info info;
	struct mmhal_sensor_xts x;
	uint64_t t, f, mono, unc, err, raw_err;
	uint64_t max_err = 0, min_raw = UINT64_MAX, max_raw = 0, max_unc = 0;
	uint64_t last_err = 0, one_point_err = 0, one_point_off = 0;
	unsigned int calls = 0, corrupt = 0, frames = 0, warm = 0;
	double sum_err = 0;
	int have_one_point = 0;

	CHECK_INT(mmhal_clock_fit_create(30, &fit), 0);
	if (!fit)
		return;
	for (t = T0; t < T0 + 60000000000ULL; t += 500000000ULL) {
		int bad = rng_below(20) == 0;

		make_xts(t, bad, &x);
		corrupt += bad;
		calls++;
		CHECK_INT(mmhal_clock_fit_add_xts(fit, &x), 0);
		if (!have_one_point) {
			/* Offset-only correction from the first call. */
			one_point_off = x.samples[0].sensor -
					(x.samples[0].sys_before +
					 (x.samples[0].sys_after -
					  x.samples[0].sys_before) / 2);
			have_one_point = 1;
		}
		if (calls < 3)
			continue;
		for (f = t + 20000000; f < t + 500000000ULL; f += 33333333) {
			uint64_t s = sensor_at(f);

			/* Early on a corrupt call may leave < 3 agreeing points. */
			if (mmhal_clock_fit_map(fit, s, &mono, &unc)) {
				CHECK(t < T0 + 5000000000ULL);
				continue;
			}
			err = absdiff(mono, f);
			raw_err = absdiff(s, f);
			frames++;
			if (t >= T0 + 5000000000ULL) {
				warm++;
				if (err > max_err)
					max_err = err;
				sum_err += (double)err;
				if (unc > max_unc)
					max_unc = unc;
			}
			if (raw_err < min_raw)
				min_raw = raw_err;
			if (raw_err > max_raw)
				max_raw = raw_err;
			last_err = err;
			one_point_err = absdiff(s - one_point_off, f);
		}
	}
	CHECK_INT(mmhal_clock_fit_info(fit, &info), 0);
	tap_diag("alignment over 60 s: %u XTS calls (%u corrupt), %u frames mapped",
		 calls, corrupt, frames);
	tap_diag("with the fit (after 5 s): max error %" PRIu64 " ns, mean %.0f ns, last %" PRIu64
		 " ns, largest reported uncertainty %" PRIu64 " ns",
		 max_err, warm ? sum_err / warm : 0.0, last_err, max_unc);
	tap_diag("fit: rate %.1f ppb (true %.1f), %u/%u inliers, residual rms %.0f ns, max %.0f ns",
		 info.rate_ppb, -1e9 * DRIFT_PPB / (1e9 + DRIFT_PPB),
		 info.inliers, info.points, info.residual_rms_ns,
		 info.residual_max_ns);
	tap_diag("without correction: error %" PRIu64 "..%" PRIu64
		 " ns; offset-only from the first call: %" PRIu64 " ns at 60 s",
		 min_raw, max_raw, one_point_err);
	CHECK(warm > 1000);
	CHECK(max_err < 100000);
	CHECK(min_raw > 3000000);
	CHECK(one_point_err > 2500000);
	/* The drift estimate is within 1 ppm of the truth. */
	CHECK(info.rate_ppb < -49000 && info.rate_ppb > -51000);
	/* The corrupt calls were rejected, not averaged in. */
	CHECK(info.residual_max_ns < 30000);
	mmhal_clock_fit_destroy(fit);
}

/* Identity clocks map to themselves; offset-only clocks are exact. */
static void test_fit_exact_line(void)
{
	struct mmhal_clock_fit *fit = NULL;
	uint64_t mono = 0, unc = 0;
	unsigned int i;

	CHECK_INT(mmhal_clock_fit_create(8, &fit), 0);
	for (i = 0; i < 20; i++)
		CHECK_INT(mmhal_clock_fit_add(fit, 5000000000ULL + i * 1000000000ULL - 2000000,
					      5000000000ULL + i * 1000000000ULL,
					      5000000000ULL + i * 1000000000ULL), 0);
	CHECK_INT(mmhal_clock_fit_map(fit, 30000000000ULL, &mono, &unc), 0);
	CHECK_INT(mono, 30002000000ULL);
	CHECK_INT(unc, 1);
	mmhal_clock_fit_destroy(fit);
}

static void test_fit_bad_inputs(void)
{
	struct mmhal_clock_fit *fit = (void *)1;
	struct mmhal_clock_fit_info info;
	struct mmhal_sensor_xts x;
	uint64_t mono = 7, unc = 7;

	CHECK_INT(mmhal_clock_fit_create(2, &fit), -EINVAL);
	CHECK(fit == NULL);
	CHECK_INT(mmhal_clock_fit_create(MMHAL_CLOCK_FIT_MAX + 1, &fit), -EINVAL);
	CHECK_INT(mmhal_clock_fit_create(3, NULL), -EINVAL);
	mmhal_clock_fit_destroy(NULL);

	CHECK_INT(mmhal_clock_fit_create(3, &fit), 0);
	/* Nothing yet: no mapping. */
	CHECK_INT(mmhal_clock_fit_map(fit, 1, &mono, &unc), -EAGAIN);
	CHECK_INT(mono, 0);
	CHECK_INT(unc, 0);
	CHECK_INT(mmhal_clock_fit_info(fit, &info), -EAGAIN);
	CHECK_INT(mmhal_clock_fit_map(NULL, 1, &mono, NULL), -EINVAL);
	CHECK_INT(mmhal_clock_fit_map(fit, 1, NULL, NULL), -EINVAL);
	CHECK_INT(mmhal_clock_fit_info(NULL, &info), -EINVAL);
	CHECK_INT(mmhal_clock_fit_info(fit, NULL), -EINVAL);
	/* Sandwiches inside out or wider than 1 s. */
	CHECK_INT(mmhal_clock_fit_add(NULL, 1, 1, 2), -EINVAL);
	CHECK_INT(mmhal_clock_fit_add(fit, 1, 10, 9), -EINVAL);
	CHECK_INT(mmhal_clock_fit_add(fit, 1, 0, 1000000001), -EINVAL);
	/* Sensor stamps must move forward. */
	CHECK_INT(mmhal_clock_fit_add(fit, 1000, 100, 200), 0);
	CHECK_INT(mmhal_clock_fit_add(fit, 1000, 300, 400), -EINVAL);
	CHECK_INT(mmhal_clock_fit_add(fit, 999, 300, 400), -EINVAL);
	CHECK_INT(mmhal_clock_fit_add(fit, 1000 + (1ULL << 63), 300, 400), -EINVAL);
	CHECK_INT(mmhal_clock_fit_add(fit, 2000, 1100, 1200), 0);
	CHECK_INT(mmhal_clock_fit_map(fit, 1, &mono, NULL), -EAGAIN);
	CHECK_INT(mmhal_clock_fit_add(fit, 3000, 2100, 2200), 0);
	CHECK_INT(mmhal_clock_fit_map(fit, 4000, &mono, NULL), 0);
	CHECK_INT(mono, 3150);
	/* XTS sets without samples, or with only inside-out ones. */
	memset(&x, 0, sizeof(x));
	CHECK_INT(mmhal_clock_fit_add_xts(fit, &x), -EINVAL);
	x.n_samples = MMHAL_XTS_MAX_SAMPLES + 1;
	CHECK_INT(mmhal_clock_fit_add_xts(fit, &x), -EINVAL);
	x.n_samples = 1;
	x.samples[0].sys_before = 10;
	x.samples[0].sys_after = 5;
	CHECK_INT(mmhal_clock_fit_add_xts(fit, &x), -EINVAL);
	CHECK_INT(mmhal_clock_fit_add_xts(NULL, &x), -EINVAL);
	CHECK_INT(mmhal_clock_fit_add_xts(fit, NULL), -EINVAL);
	mmhal_clock_fit_destroy(fit);
}

/* The driver's formula: exact, truncating toward zero, modulo 2^64. */
static void test_sensor_formula(void)
{
	struct mmhal_sensor_clock c = { 3000000, 50000, 0, 7000000000ULL };
	const int64_t max = MMHAL_SENSOR_DRIFT_MAX;

	CHECK_INT(mmhal_sensor_from_soc(NULL, 42), 42);
	CHECK(mmhal_sensor_from_soc(&c, 67000000000ULL) ==
	      67000000000ULL + 3000000 + 3000000);
	c.offset_ns = -2000000;
	c.drift_ppb = -30000;
	CHECK(mmhal_sensor_from_soc(&c, 67000000000ULL) ==
	      67000000000ULL - 2000000 - 1800000);
	/* -30000.00003 truncates to -30000; before the epoch the sign flips. */
	CHECK(mmhal_sensor_from_soc(&c, 8000000001ULL) ==
	      8000000001ULL - 2000000 - 30000);
	CHECK(mmhal_sensor_from_soc(&c, 6000000000ULL) ==
	      6000000000ULL - 2000000 + 30000);
	c.offset_ns = 0;
	c.drift_ppb = 1;
	CHECK(mmhal_sensor_from_soc(&c, c.epoch + 999999999) ==
	      c.epoch + 999999999);
	CHECK(mmhal_sensor_from_soc(&c, c.epoch - 999999999) ==
	      c.epoch - 999999999);
	/* Extremes: the whole signed interval at +-1000 ppm. */
	c.epoch = 0;
	c.drift_ppb = (int32_t)max;
	CHECK(mmhal_sensor_from_soc(&c, INT64_MAX) ==
	      (uint64_t)INT64_MAX + (uint64_t)INT64_MAX / 1000);
	c.epoch = 1ULL << 63;
	CHECK(mmhal_sensor_from_soc(&c, 0) == 0 - (1ULL << 63) / 1000);
	c.drift_ppb = (int32_t)-max;
	CHECK(mmhal_sensor_from_soc(&c, 0) == (1ULL << 63) / 1000);
	/* Offset wraps modulo 2^64. */
	c.drift_ppb = 0;
	c.offset_ns = -5;
	CHECK(mmhal_sensor_from_soc(&c, 3) == UINT64_MAX - 1);
	/* soc_ns: identity at 1 GHz (mult 2^31, shift 31), 128-bit product. */
	CHECK(mmhal_soc_ns(1U << 31, 31, UINT64_MAX) == UINT64_MAX);
	CHECK(mmhal_soc_ns(1U << 31, 31, 12345) == 12345);
	CHECK(mmhal_soc_ns(3U << 30, 31, 1ULL << 62) == 3ULL << 61);
}

static void test_sensor_xts_bad_args(void)
{
	struct mmhal_sensor_xts x;
	struct mmhal_sensor_clock c;

	memset(&x, 0xff, sizeof(x));
	CHECK_INT(mmhal_dev_sensor_xts(NULL, 1, 1, &x), -EINVAL);
	CHECK_INT(x.n_samples, 0);
	CHECK_INT(mmhal_dev_sensor_xts(NULL, 1, 1, NULL), -EINVAL);
	memset(&c, 0xff, sizeof(c));
	CHECK_INT(mmhal_chan_sensor_clock(NULL, &c), -EINVAL);
	CHECK_INT(c.epoch, 0);
	CHECK_INT(mmhal_chan_sensor_clock(NULL, NULL), -EINVAL);
}

static const struct tap_test tests[] = {
	TAP_TEST(test_alignment_60s),
	TAP_TEST(test_fit_exact_line),
	TAP_TEST(test_fit_bad_inputs),
	TAP_TEST(test_sensor_formula),
	TAP_TEST(test_sensor_xts_bad_args),
};

int main(void)
{
	return tap_run(tests, TAP_COUNT(tests));
}

// SPDX-License-Identifier: MIT
/*
 * Host tests of mmhal_align_window(): pairing audio windows with camera
 * exposures. Synthetic clocks over 60 s of virtual time: a microphone
 * whose sensor clock is 3 ms ahead of CLOCK_MONOTONIC and 50 ppm fast, a
 * camera 2 ms behind and 30 ppm slow, each sampled by jittered
 * cross-timestamps every 0.5 s and fitted. Windows placed 1 ms from
 * exposure edges must pair with exactly the frames they overlap (the
 * truth is computed on CLOCK_MONOTONIC directly); taking the sensor
 * stamps as CLOCK_MONOTONIC must get those edges wrong.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mmhal.h"
#include "tests/tap.h"

/* A small deterministic generator (xorshift64*). */
static uint64_t rng_state = 0x2545f4914f6cdd1dULL;

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

#define T0		1000000000000ULL	/* mono at the start: 1000 s */
#define RUN_NS		60000000000ULL		/* 60 s */
#define XTS_EVERY	500000000ULL		/* 0.5 s */
#define PERIOD		33333333ULL		/* camera: 30 fps */
#define EXPOSURE	20000000ULL		/* 20 ms of each period */
#define NFRAMES		(RUN_NS / PERIOD + 2)
#define EDGE		1000000ULL		/* windows 1 ms from an edge */

struct sclock {
	int64_t offset_ns;
	int64_t drift_ppb;
};

static const struct sclock mic_clk = { 3000000, 50000 };
static const struct sclock cam_clk = { -2000000, -30000 };

/* mono -> the sensor's clock. */
static uint64_t sensor_at(const struct sclock *c, uint64_t mono)
{
	int64_t d = (int64_t)(mono - T0);

	/* |d| < 2^37 over the test: the product fits. */
	return mono + (uint64_t)c->offset_ns +
	       (uint64_t)(d * c->drift_ppb / 1000000000);
}

/* One XTS call at mono time t: 8 jittered sandwiches, 1 in 10 preempted. */
static void make_xts(const struct sclock *c, uint64_t t,
		     struct mmhal_sensor_xts *x)
{
	unsigned int i;

	memset(x, 0, sizeof(*x));
	x->n_samples = 8;
	for (i = 0; i < x->n_samples; i++) {
		uint64_t w = 300 + rng_below(20000), at;

		if (rng_below(10) == 0)
			w = 1000000 + rng_below(2000000);
		x->samples[i].sys_before = t + i * 50000;
		x->samples[i].sys_after = x->samples[i].sys_before + w;
		at = x->samples[i].sys_before + rng_below(w + 1);
		x->samples[i].sensor = sensor_at(c, at);
	}
}

static uint64_t exp_start(uint64_t k)
{
	return T0 + 1000000 + k * PERIOD;
}

static uint64_t exp_end(uint64_t k)
{
	return exp_start(k) + EXPOSURE;
}

static uint64_t absdiff(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
}

/* The truth on CLOCK_MONOTONIC: first and last frame [s, e] overlaps. */
static int truth(uint64_t s, uint64_t e, uint64_t *first, uint64_t *last,
		 uint64_t *first_ov, uint64_t *last_ov)
{
	uint64_t k;
	int n = 0;

	for (k = 0; k < NFRAMES; k++) {
		uint64_t lo = exp_start(k) > s ? exp_start(k) : s;
		uint64_t hi = exp_end(k) < e ? exp_end(k) : e;

		if (hi <= lo)
			continue;
		if (!n++) {
			*first = k;
			*first_ov = hi - lo;
		}
		*last = k;
		*last_ov = hi - lo;
	}
	return n;
}

static void test_pairing_60s(void)
{
	static struct mmhal_align_frame frames[NFRAMES];
	struct mmhal_clock_fit *mic = NULL, *cam = NULL;
	struct mmhal_align_overlap ov[8];
	struct mmhal_align_result r, raw;
	struct mmhal_sensor_xts x;
	uint64_t t, k, max_edge_err = 0, max_ov_err = 0, max_unc = 0;
	unsigned int windows = 0, right = 0, raw_wrong = 0, checked = 0;
	unsigned int random_windows = 0, random_right = 0;

	CHECK_INT(mmhal_clock_fit_create(30, &mic), 0);
	CHECK_INT(mmhal_clock_fit_create(30, &cam), 0);
	if (!mic || !cam)
		FAIL("no fits");
	for (k = 0; k < NFRAMES; k++) {
		frames[k].sequence = k;
		frames[k].start = sensor_at(&cam_clk, exp_start(k));
		frames[k].end = sensor_at(&cam_clk, exp_end(k));
	}

	for (t = T0; t < T0 + RUN_NS; t += XTS_EVERY) {
		uint64_t j, n_have, s, e, first, last, fov, lov;
		int late;

		make_xts(&mic_clk, t, &x);
		CHECK_INT(mmhal_clock_fit_add_xts(mic, &x), 0);
		make_xts(&cam_clk, t + 100000, &x);
		CHECK_INT(mmhal_clock_fit_add_xts(cam, &x), 0);
		if (t < T0 + 4 * XTS_EVERY)
			continue;
		/* The frames exposed by now (the camera's ring). */
		n_have = (t - exp_start(0)) / PERIOD + 1;
		if (n_have > NFRAMES)
			n_have = NFRAMES;

		/*
		 * Windows over the last half second, each 1 ms from its
		 * edges: "early" ones start 1 ms before frame j's exposure
		 * ends and end 1 ms after frame j + 3's starts (both in);
		 * "late" ones start 1 ms after j's ends and end 1 ms before
		 * j + 3's starts (both out).
		 */
		for (j = n_have - 15; j + 4 < n_have; j += 5) {
			for (late = 0; late < 2; late++) {
				s = late ? exp_end(j) + EDGE : exp_end(j) - EDGE;
				e = late ? exp_start(j + 3) - EDGE :
					   exp_start(j + 3) + EDGE;
				if (truth(s, e, &first, &last, &fov, &lov) < 1)
					FAIL("no truth");
				windows++;
				CHECK_INT(mmhal_align_window(mic,
					sensor_at(&mic_clk, s),
					sensor_at(&mic_clk, e), cam, frames,
					n_have, ov, 8, &r), 0);
				CHECK_INT(mmhal_align_window(NULL,
					sensor_at(&mic_clk, s),
					sensor_at(&mic_clk, e), NULL, frames,
					n_have, NULL, 0, &raw), 0);
				if (r.n_overlap && r.seq_first == first &&
				    r.seq_last == last &&
				    r.n_overlap == last - first + 1)
					right++;
				if (raw.seq_first != first ||
				    raw.seq_last != last)
					raw_wrong++;
				if (absdiff(r.win_start, s) > max_edge_err)
					max_edge_err = absdiff(r.win_start, s);
				if (absdiff(r.win_end, e) > max_edge_err)
					max_edge_err = absdiff(r.win_end, e);
				if (r.uncert_ns > max_unc)
					max_unc = r.uncert_ns;
				if (r.n_overlap >= 2) {
					uint64_t d1 = absdiff(ov[0].overlap_ns, fov);
					uint64_t d2 = absdiff(ov[r.n_overlap - 1].overlap_ns, lov);

					checked++;
					if (d1 > max_ov_err)
						max_ov_err = d1;
					if (d2 > max_ov_err)
						max_ov_err = d2;
					CHECK(fabs(ov[0].frame_fraction -
						   (double)fov / EXPOSURE) < 0.001);
					CHECK(fabs(ov[0].window_fraction -
						   (double)fov / (double)(e - s)) < 0.001);
				}
			}
		}

		/* Random windows (10..300 ms), away from edges by > 20 us. */
		for (j = 0; j < 4; j++) {
			uint64_t k0, margin = UINT64_MAX;

			e = t - rng_below(100000000);
			s = e - 10000000 - rng_below(290000000);
			for (k0 = 0; k0 < n_have; k0++) {
				uint64_t m1 = absdiff(exp_start(k0), s);
				uint64_t m2 = absdiff(exp_end(k0), s);
				uint64_t m3 = absdiff(exp_start(k0), e);
				uint64_t m4 = absdiff(exp_end(k0), e);

				m1 = m1 < m2 ? m1 : m2;
				m3 = m3 < m4 ? m3 : m4;
				m1 = m1 < m3 ? m1 : m3;
				if (m1 < margin)
					margin = m1;
			}
			if (margin < 20000 || s < exp_start(0))
				continue;
			if (truth(s, e, &first, &last, &fov, &lov) < 1)
				continue;
			random_windows++;
			CHECK_INT(mmhal_align_window(mic, sensor_at(&mic_clk, s),
						     sensor_at(&mic_clk, e), cam,
						     frames, n_have, NULL, 0,
						     &r), 0);
			if (r.seq_first == first && r.seq_last == last)
				random_right++;
			else
				tap_diag("random window [%" PRIu64 ", %" PRIu64
					 "]: frames %" PRIu64 "..%" PRIu64
					 ", want %" PRIu64 "..%" PRIu64,
					 (uint64_t)(s - T0), (uint64_t)(e - T0), r.seq_first,
					 r.seq_last, first, last);
		}
	}
	tap_diag("edge windows: %u, paired right with the fits: %u, wrong without: %u",
		 windows, right, raw_wrong);
	tap_diag("window edge error %" PRIu64 " ns max, edge overlap error %" PRIu64
		 " ns max (%u windows), reported uncertainty %" PRIu64 " ns max",
		 max_edge_err, max_ov_err, checked, max_unc);
	tap_diag("random windows: %u, paired right: %u", random_windows,
		 random_right);
	CHECK(windows > 600);
	CHECK_INT(right, windows);
	CHECK_INT(raw_wrong, windows);
	CHECK(checked > 600);
	CHECK(max_edge_err < 100000);
	CHECK(max_ov_err < 100000);
	CHECK(random_windows > 150);
	CHECK_INT(random_right, random_windows);
	mmhal_clock_fit_destroy(mic);
	mmhal_clock_fit_destroy(cam);
}

/* Overlap rules on one timeline (NULL fits), exactly. */
static void test_overlap_rules(void)
{
	static const struct mmhal_align_frame f[] = {
		{ 10, 1000, 2000 },
		{ 11, 3000, 4000 },
		{ 12, 5000, 5000 },	/* an exposure of length 0 */
		{ 13, 6000, 8000 },
	};
	struct mmhal_align_overlap ov[4];
	struct mmhal_align_result r;

	/* Inside one exposure. */
	CHECK_INT(mmhal_align_window(NULL, 1200, 1700, NULL, f, 4, ov, 4, &r), 0);
	CHECK_INT(r.n_overlap, 1);
	CHECK_INT(r.seq_first, 10);
	CHECK_INT(r.seq_last, 10);
	CHECK_INT(ov[0].overlap_ns, 500);
	CHECK(fabs(ov[0].frame_fraction - 0.5) < 1e-12);
	CHECK(fabs(ov[0].window_fraction - 1.0) < 1e-12);
	CHECK(fabs(r.coverage - 1.0) < 1e-12);
	CHECK_INT(r.win_start, 1200);
	CHECK_INT(r.win_end, 1700);
	CHECK_INT(r.uncert_ns, 0);

	/* Across a gap: two frames, half the window covered. */
	CHECK_INT(mmhal_align_window(NULL, 1500, 3500, NULL, f, 4, ov, 4, &r), 0);
	CHECK_INT(r.n_overlap, 2);
	CHECK_INT(r.first_index, 0);
	CHECK_INT(r.last_index, 1);
	CHECK_INT(ov[0].overlap_ns, 500);
	CHECK_INT(ov[1].overlap_ns, 500);
	CHECK_INT(ov[1].index, 1);
	CHECK_INT(ov[1].sequence, 11);
	CHECK(fabs(r.coverage - 0.5) < 1e-12);

	/* Touching ends: no overlap of positive length, not paired. */
	CHECK_INT(mmhal_align_window(NULL, 2000, 3000, NULL, f, 4, ov, 4, &r), 0);
	CHECK_INT(r.n_overlap, 0);
	CHECK(r.coverage == 0);
	/* A window of length 0 on an exposure's end is inside it. */
	CHECK_INT(mmhal_align_window(NULL, 2000, 2000, NULL, f, 4, ov, 4, &r), 0);
	CHECK_INT(r.n_overlap, 1);
	CHECK_INT(r.seq_first, 10);
	CHECK(fabs(ov[0].window_fraction - 1.0) < 1e-12);
	/* An exposure of length 0 inside the window. */
	CHECK_INT(mmhal_align_window(NULL, 4500, 6500, NULL, f, 4, ov, 4, &r), 0);
	CHECK_INT(r.n_overlap, 2);
	CHECK_INT(r.seq_first, 12);
	CHECK_INT(r.seq_last, 13);
	CHECK(fabs(ov[0].frame_fraction - 1.0) < 1e-12);
	CHECK_INT(ov[0].overlap_ns, 0);
	/* All four; only two fit the caller's array, all are counted. */
	CHECK_INT(mmhal_align_window(NULL, 0, 10000, NULL, f, 4, ov, 2, &r), 0);
	CHECK_INT(r.n_overlap, 4);
	CHECK_INT(r.seq_first, 10);
	CHECK_INT(r.seq_last, 13);
	CHECK_INT(r.last_index, 3);
	CHECK(fabs(r.coverage - 0.4) < 1e-12);
	/* Before and after everything. */
	CHECK_INT(mmhal_align_window(NULL, 0, 999, NULL, f, 4, ov, 4, &r), 0);
	CHECK_INT(r.n_overlap, 0);
	CHECK_INT(mmhal_align_window(NULL, 8001, 9000, NULL, f, 4, ov, 4, &r), 0);
	CHECK_INT(r.n_overlap, 0);
	CHECK_INT(mmhal_align_window(NULL, 5, 9, NULL, NULL, 0, NULL, 0, &r), 0);
	CHECK_INT(r.n_overlap, 0);
}

static void test_bad_inputs(void)
{
	struct mmhal_align_frame f[2] = { { 1, 1000, 2000 }, { 2, 3000, 4000 } };
	struct mmhal_clock_fit *fit = NULL;
	struct mmhal_align_overlap ov[2];
	struct mmhal_align_result r;

	memset(&r, 0x5a, sizeof(r));
	CHECK_INT(mmhal_align_window(NULL, 0, 10, NULL, f, 2, ov, 2, NULL),
		  -EINVAL);
	CHECK_INT(mmhal_align_window(NULL, 10, 9, NULL, f, 2, ov, 2, &r),
		  -EINVAL);
	CHECK_INT(r.n_overlap, 0);
	CHECK_INT(r.win_end, 0);
	CHECK_INT(mmhal_align_window(NULL, 0, 10, NULL, NULL, 2, ov, 2, &r),
		  -EINVAL);
	CHECK_INT(mmhal_align_window(NULL, 0, 10, NULL, f, 2, NULL, 2, &r),
		  -EINVAL);
	f[1].end = 2999;	/* ends before it starts */
	CHECK_INT(mmhal_align_window(NULL, 0, 10, NULL, f, 2, ov, 2, &r),
		  -EINVAL);
	f[1].start = 900;	/* out of order */
	f[1].end = 4000;
	CHECK_INT(mmhal_align_window(NULL, 0, 10, NULL, f, 2, ov, 2, &r),
		  -EINVAL);
	f[1].start = 3000;
	/* A fit with no points cannot map yet, on either side. */
	CHECK_INT(mmhal_clock_fit_create(8, &fit), 0);
	CHECK_INT(mmhal_align_window(fit, 0, 10, NULL, f, 2, ov, 2, &r),
		  -EAGAIN);
	CHECK_INT(mmhal_align_window(NULL, 1500, 3500, fit, f, 2, ov, 2, &r),
		  -EAGAIN);
	CHECK_INT(r.n_overlap, 0);
	/* Three points on an exact line: a 1 ms offset, mapped exactly. */
	CHECK_INT(mmhal_clock_fit_add(fit, 10000000, 11000000, 11000000), 0);
	CHECK_INT(mmhal_clock_fit_add(fit, 20000000, 21000000, 21000000), 0);
	CHECK_INT(mmhal_clock_fit_add(fit, 30000000, 31000000, 31000000), 0);
	f[0].start = 10000000;	/* camera clock: mono - 1 ms */
	f[0].end = 10500000;
	f[1].start = 11000000;
	f[1].end = 11500000;
	CHECK_INT(mmhal_align_window(NULL, 11250000, 11750000, fit, f, 2, ov, 2,
				     &r), 0);
	CHECK_INT(r.n_overlap, 1);
	CHECK_INT(r.seq_first, 1);
	CHECK_INT(ov[0].overlap_ns, 250000);
	mmhal_clock_fit_destroy(fit);
}

static const struct tap_test tests[] = {
	TAP_TEST(test_pairing_60s),
	TAP_TEST(test_overlap_rules),
	TAP_TEST(test_bad_inputs),
};

int main(void)
{
	return tap_run(tests, TAP_COUNT(tests));
}

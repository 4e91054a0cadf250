// SPDX-License-Identifier: MIT
/*
 * route_test - the session's routing measures (mmhal_route.c) on
 * synthetic data: scene signatures of GREY, RGB24 and NV12 frames against
 * a per-pixel double-precision reference, static and noisy scenes
 * against moving ones (the virtual camera's pattern), the voice activity
 * detector on silence, a DC offset, tones and a tone in a few frames,
 * IMU motion from little-endian records, nearest-rank percentiles, and
 * the bad arguments of each. Prints TAP.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mmhal_session.h"
#include "session/mmhal_route.h"
#include "tests/tap.h"

struct frame {
	uint32_t w, h, fmt;
	uint8_t *p;
	struct mmhal_image img;
};

static void frame_init(struct frame *f, uint32_t w, uint32_t h, uint32_t fmt)
{
	size_t bpp = fmt == MMHAL_IMAGE_RGB24 ? 3 : 1;
	size_t size = (size_t)w * h * bpp +
		      (fmt == MMHAL_IMAGE_NV12 ? (size_t)w * h / 2 : 0);

	f->w = w;
	f->h = h;
	f->fmt = fmt;
	f->p = calloc(1, size);
	memset(&f->img, 0, sizeof(f->img));
	f->img.format = fmt;
	f->img.width = w;
	f->img.height = h;
	f->img.plane[0] = f->p;
	f->img.stride[0] = w * bpp;
	if (fmt == MMHAL_IMAGE_NV12) {
		f->img.plane[1] = f->p + (size_t)w * h;
		f->img.stride[1] = w;
	}
}

/* The virtual camera's luma: every line starts with the frame number. */
static void fill_pattern(struct frame *f, uint64_t seq)
{
	size_t lb = f->img.stride[0];

	for (uint32_t y = 0; y < f->h; y++)
		for (size_t x = 0; x < lb; x++)
			f->p[y * lb + x] = x < 8 ? (uint8_t)(seq >> (8 * x)) :
					   (uint8_t)(x + y + seq);
}

/* Reference: every pixel of each cell, in double precision. */
static void ref_signature(const struct frame *f, uint8_t *sig)
{
	for (uint32_t r = 0; r < 16; r++)
		for (uint32_t c = 0; c < 16; c++) {
			uint32_t y0 = r * f->h / 16, y1 = (r + 1) * f->h / 16;
			uint32_t x0 = c * f->w / 16, x1 = (c + 1) * f->w / 16;
			double sum = 0;

			for (uint32_t y = y0; y < y1; y++)
				for (uint32_t x = x0; x < x1; x++) {
					const uint8_t *q;

					if (f->fmt != MMHAL_IMAGE_RGB24) {
						sum += f->p[(size_t)y * f->w + x];
						continue;
					}
					q = f->p + ((size_t)y * f->w + x) * 3;
					sum += floor((77.0 * q[0] + 150.0 * q[1] +
						      29.0 * q[2] + 128) / 256);
				}
			sig[r * 16 + c] = (uint8_t)floor(sum / ((y1 - y0) *
							      (x1 - x0)) + 0.5);
		}
}

static uint32_t rng = 12345;

static uint32_t rnd(void)
{
	rng = rng * 1103515245u + 12345u;
	return rng >> 8;
}

static void test_signature_matches_reference(void)
{
	static const uint32_t fmts[] = { MMHAL_IMAGE_GREY, MMHAL_IMAGE_RGB24,
					 MMHAL_IMAGE_NV12 };
	/* cells of 1..16 pixels: every pixel is sampled */
	static const uint32_t sizes[][2] = { { 16, 16 }, { 64, 48 },
					     { 250, 100 }, { 256, 256 } };

	for (size_t i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++)
		for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
			struct frame f;
			uint8_t sig[MMHAL_SIG_CELLS], ref[MMHAL_SIG_CELLS];
			size_t n;

			frame_init(&f, sizes[k][0], sizes[k][1], fmts[i]);
			n = f.img.stride[0] * f.h;
			for (size_t j = 0; j < n; j++)
				f.p[j] = (uint8_t)rnd();
			CHECK_INT(mmhal_scene_signature(&f.img, sig), 0);
			ref_signature(&f, ref);
			for (int c = 0; c < MMHAL_SIG_CELLS; c++)
				if (sig[c] != ref[c]) {
					tap_diag("fmt %zu %ux%u cell %d: %u, want %u",
						 i, f.w, f.h, c, sig[c], ref[c]);
					tap_cur_failed = 1;
					break;
				}
			CHECK(mmhal_scene_diff(sig, ref) == 0);
			free(f.p);
		}
}

static void test_signature_luma_and_chroma(void)
{
	struct frame g, rgb, nv;
	uint8_t sg[MMHAL_SIG_CELLS], sr[MMHAL_SIG_CELLS], sn[MMHAL_SIG_CELLS];
	uint8_t s2[MMHAL_SIG_CELLS];

	frame_init(&g, 64, 32, MMHAL_IMAGE_GREY);
	frame_init(&rgb, 64, 32, MMHAL_IMAGE_RGB24);
	frame_init(&nv, 64, 32, MMHAL_IMAGE_NV12);
	for (uint32_t i = 0; i < 64 * 32; i++) {
		uint8_t v = (uint8_t)rnd();

		g.p[i] = nv.p[i] = v;
		/* grey RGB: luma = v exactly (77 + 150 + 29 = 256) */
		rgb.p[3 * i] = rgb.p[3 * i + 1] = rgb.p[3 * i + 2] = v;
	}
	CHECK_INT(mmhal_scene_signature(&g.img, sg), 0);
	CHECK_INT(mmhal_scene_signature(&rgb.img, sr), 0);
	CHECK_INT(mmhal_scene_signature(&nv.img, sn), 0);
	CHECK(!memcmp(sg, sr, sizeof(sg)));
	CHECK(!memcmp(sg, sn, sizeof(sg)));
	/* NV12's chroma is not part of it */
	memset(nv.p + 64 * 32, 0x55, 64 * 16);
	CHECK_INT(mmhal_scene_signature(&nv.img, s2), 0);
	CHECK(mmhal_scene_diff(sn, s2) == 0);
	/* pure red: luma (77 * 255 + 128) >> 8 = 77 */
	for (uint32_t i = 0; i < 64 * 32; i++) {
		rgb.p[3 * i] = 255;
		rgb.p[3 * i + 1] = rgb.p[3 * i + 2] = 0;
	}
	CHECK_INT(mmhal_scene_signature(&rgb.img, sr), 0);
	CHECK_INT(sr[0], 77);
	CHECK_INT(sr[255], 77);
	free(g.p);
	free(rgb.p);
	free(nv.p);
}

/* A padded stride, and a large frame that is sampled, not read whole. */
static void test_signature_stride_and_sampling(void)
{
	struct frame f, big;
	uint8_t a[MMHAL_SIG_CELLS], b[MMHAL_SIG_CELLS];
	uint8_t *pad = calloc(48, 100);

	frame_init(&f, 32, 48, MMHAL_IMAGE_GREY);
	for (uint32_t y = 0; y < 48; y++)
		for (uint32_t x = 0; x < 32; x++) {
			f.p[y * 32 + x] = (uint8_t)(x * 7 + y);
			pad[y * 100 + x] = (uint8_t)(x * 7 + y);
			pad[y * 100 + 32 + x] = 0xff;	/* past the line */
		}
	CHECK_INT(mmhal_scene_signature(&f.img, a), 0);
	f.img.plane[0] = pad;
	f.img.stride[0] = 100;
	CHECK_INT(mmhal_scene_signature(&f.img, b), 0);
	CHECK(!memcmp(a, b, sizeof(a)));
	free(pad);

	/* 1920x1080: cells of 120x67 pixels, sampled every 8th and 5th;
	 * a uniform frame and one bright 200x200 square in it */
	frame_init(&big, 1920, 1080, MMHAL_IMAGE_GREY);
	memset(big.p, 40, (size_t)1920 * 1080);
	CHECK_INT(mmhal_scene_signature(&big.img, a), 0);
	for (int c = 0; c < MMHAL_SIG_CELLS; c++)
		CHECK_INT(a[c], 40);
	for (uint32_t y = 400; y < 600; y++)
		memset(big.p + (size_t)y * 1920 + 900, 240, 200);
	CHECK_INT(mmhal_scene_signature(&big.img, b), 0);
	/* cells 7..8 across x (840..1080) and 5..8 down (337..607) */
	CHECK(b[6 * 16 + 7] > 100);
	CHECK_INT(b[0], 40);
	CHECK_INT(b[15 * 16 + 15], 40);
	CHECK(mmhal_scene_diff(a, b) > 3.0);
	free(f.p);
	free(big.p);
}

/* Static + sensor noise: unchanged; the moving pattern: changed. */
static void test_static_noisy_and_moving_scenes(void)
{
	struct frame f0, f1;
	uint8_t a[MMHAL_SIG_CELLS], b[MMHAL_SIG_CELLS];
	const double thr = 3.0;
	double d;

	frame_init(&f0, 224, 224, MMHAL_IMAGE_GREY);
	frame_init(&f1, 224, 224, MMHAL_IMAGE_GREY);
	for (uint32_t y = 0; y < 224; y++)
		for (uint32_t x = 0; x < 224; x++)
			f0.p[y * 224 + x] = (uint8_t)(128 + 100 *
				sin(x / 17.0) * cos(y / 23.0));
	/* the same scene with +-4 levels of noise on every pixel */
	for (uint32_t i = 0; i < 224 * 224; i++) {
		int v = f0.p[i] + (int)(rnd() % 9) - 4;

		f1.p[i] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
	}
	CHECK_INT(mmhal_scene_signature(&f0.img, a), 0);
	CHECK_INT(mmhal_scene_signature(&f1.img, b), 0);
	d = mmhal_scene_diff(a, b);
	tap_diag("static scene with +-4 noise: diff %.3f", d);
	CHECK(d < 1.0);
	CHECK(d <= thr);
	/* the scene shifted by 8 pixels: changed */
	for (uint32_t y = 0; y < 224; y++)
		for (uint32_t x = 0; x < 224; x++)
			f1.p[y * 224 + x] = (uint8_t)(128 + 100 *
				sin((x + 8) / 17.0) * cos(y / 23.0));
	CHECK_INT(mmhal_scene_signature(&f1.img, b), 0);
	d = mmhal_scene_diff(a, b);
	tap_diag("scene moved by 8 px: diff %.3f", d);
	CHECK(d > thr);

	/* the virtual camera: the same frame twice, then 30 frames on */
	free(f0.p);
	free(f1.p);
	frame_init(&f0, 64, 48, MMHAL_IMAGE_NV12);
	frame_init(&f1, 64, 48, MMHAL_IMAGE_NV12);
	fill_pattern(&f0, 1000);
	fill_pattern(&f1, 1000);
	CHECK_INT(mmhal_scene_signature(&f0.img, a), 0);
	CHECK_INT(mmhal_scene_signature(&f1.img, b), 0);
	CHECK(mmhal_scene_diff(a, b) == 0);
	fill_pattern(&f1, 1030);
	CHECK_INT(mmhal_scene_signature(&f1.img, b), 0);
	d = mmhal_scene_diff(a, b);
	tap_diag("virtual camera, 30 frames apart: diff %.3f", d);
	CHECK(d > thr);
	fill_pattern(&f1, 1001);
	CHECK_INT(mmhal_scene_signature(&f1.img, b), 0);
	tap_diag("virtual camera, 1 frame apart: diff %.3f",
		 mmhal_scene_diff(a, b));
	CHECK(mmhal_scene_diff(a, b) > 0);
	free(f0.p);
	free(f1.p);
}

static void test_signature_bad_args(void)
{
	struct frame f;
	uint8_t sig[MMHAL_SIG_CELLS];

	frame_init(&f, 16, 16, MMHAL_IMAGE_GREY);
	CHECK_INT(mmhal_scene_signature(NULL, sig), -EINVAL);
	CHECK_INT(mmhal_scene_signature(&f.img, NULL), -EINVAL);
	CHECK_INT(mmhal_scene_signature(&f.img, sig), 0);
	f.img.width = 15;
	CHECK_INT(mmhal_scene_signature(&f.img, sig), -EINVAL);
	f.img.width = 16;
	f.img.height = 15;
	CHECK_INT(mmhal_scene_signature(&f.img, sig), -EINVAL);
	f.img.height = 16;
	f.img.stride[0] = 15;
	CHECK_INT(mmhal_scene_signature(&f.img, sig), -EINVAL);
	f.img.stride[0] = 16;
	f.img.format = MMHAL_FMT_S16LE;
	CHECK_INT(mmhal_scene_signature(&f.img, sig), -EINVAL);
	f.img.format = MMHAL_IMAGE_RGB24;	/* a line is 48 bytes */
	CHECK_INT(mmhal_scene_signature(&f.img, sig), -EINVAL);
	f.img.format = MMHAL_IMAGE_GREY;
	f.img.plane[0] = NULL;
	CHECK_INT(mmhal_scene_signature(&f.img, sig), -EINVAL);
	free(f.p);
}

/* amplitude * sin(2 pi f t), in frames [from, to) of 10 ms, else zero */
static void tone(int16_t *pcm, size_t n, double amp, double hz, size_t from,
		 size_t to)
{
	for (size_t i = 0; i < n; i++) {
		size_t fr = i / 160;

		pcm[i] = fr >= from && fr < to ?
			 (int16_t)lrint(amp * sin(2 * M_PI * hz * i / 16000)) :
			 0;
	}
}

static void test_vad(void)
{
	enum { N = 8000 };	/* 500 ms at 16 kHz: 50 frames */
	int16_t *pcm = calloc(N, sizeof(*pcm));
	struct mmhal_vad v;
	double want;

	CHECK_INT(mmhal_vad(pcm, N, 16000, -40, 0.1f, &v), 0);
	CHECK_INT(v.n_frames, 50);
	CHECK_INT(v.n_speech, 0);
	CHECK_INT(v.speech, 0);
	CHECK(v.max_dbfs == MMHAL_VAD_FLOOR_DBFS);
	/* the virtual microphone's 1 kHz tone at 8000 */
	tone(pcm, N, 8000, 1000, 0, 50);
	CHECK_INT(mmhal_vad(pcm, N, 16000, -40, 0.1f, &v), 0);
	want = 10 * log10(8000.0 * 8000.0 / 2 / (32768.0 * 32768.0));
	tap_diag("tone at 8000: %.2f dBFS (sine's %.2f)", v.max_dbfs, want);
	CHECK(fabs(v.max_dbfs - want) < 0.05);
	CHECK_INT(v.n_speech, 50);
	CHECK_INT(v.speech, 1);
	CHECK(v.speech_frac == 1.0f);
	/* above the tone's energy: not speech */
	CHECK_INT(mmhal_vad(pcm, N, 16000, -10, 0.1f, &v), 0);
	CHECK_INT(v.speech, 0);
	/* a quiet tone (amplitude 100, -53 dBFS): below -40 */
	tone(pcm, N, 100, 300, 0, 50);
	CHECK_INT(mmhal_vad(pcm, N, 16000, -40, 0.1f, &v), 0);
	CHECK_INT(v.n_speech, 0);
	/* an offset is not sound */
	for (int i = 0; i < N; i++)
		pcm[i] = 10000;
	CHECK_INT(mmhal_vad(pcm, N, 16000, -40, 0.1f, &v), 0);
	CHECK_INT(v.n_speech, 0);
	CHECK(v.max_dbfs == MMHAL_VAD_FLOOR_DBFS);
	/* 4 loud frames of 50 (8 %): below min_speech 0.1; 5 (10 %): at */
	tone(pcm, N, 8000, 440, 10, 14);
	CHECK_INT(mmhal_vad(pcm, N, 16000, -40, 0.1f, &v), 0);
	CHECK_INT(v.n_speech, 4);
	CHECK_INT(v.speech, 0);
	tone(pcm, N, 8000, 440, 10, 15);
	CHECK_INT(mmhal_vad(pcm, N, 16000, -40, 0.1f, &v), 0);
	CHECK_INT(v.n_speech, 5);
	CHECK_INT(v.speech, 1);
	/* min_speech 0: one frame is enough, none is not */
	tone(pcm, N, 8000, 440, 3, 4);
	CHECK_INT(mmhal_vad(pcm, N, 16000, -40, 0, &v), 0);
	CHECK_INT(v.speech, 1);
	memset(pcm, 0, N * sizeof(*pcm));
	CHECK_INT(mmhal_vad(pcm, N, 16000, -40, 0, &v), 0);
	CHECK_INT(v.speech, 0);
	/* the virtual microphone's buffer index in the first 4 samples of
	 * a silent buffer: one loud frame of 50 */
	pcm[0] = -32768;
	pcm[1] = 32767;
	pcm[2] = 5;
	CHECK_INT(mmhal_vad(pcm, N, 16000, -40, 0.1f, &v), 0);
	CHECK_INT(v.n_speech, 1);
	CHECK_INT(v.speech, 0);
	/* a window shorter than a frame is one frame; a tail is left out */
	tone(pcm, N, 8000, 1000, 0, 50);
	CHECK_INT(mmhal_vad(pcm, 100, 16000, -40, 0.1f, &v), 0);
	CHECK_INT(v.n_frames, 1);
	CHECK_INT(v.speech, 1);
	CHECK_INT(mmhal_vad(pcm, 479, 16000, -40, 0.1f, &v), 0);
	CHECK_INT(v.n_frames, 2);
	/* bad arguments */
	CHECK_INT(mmhal_vad(NULL, N, 16000, -40, 0.1f, &v), -EINVAL);
	CHECK_INT(mmhal_vad(pcm, 0, 16000, -40, 0.1f, &v), -EINVAL);
	CHECK_INT(mmhal_vad(pcm, N, 99, -40, 0.1f, &v), -EINVAL);
	CHECK_INT(mmhal_vad(pcm, N, 16000, -40, 1.5f, &v), -EINVAL);
	CHECK_INT(mmhal_vad(pcm, N, 16000, -40, -0.1f, &v), -EINVAL);
	CHECK_INT(mmhal_vad(pcm, N, 16000, NAN, 0.1f, &v), -EINVAL);
	CHECK_INT(mmhal_vad(pcm, N, 16000, -40, NAN, &v), -EINVAL);
	CHECK_INT(mmhal_vad(pcm, N, 16000, -40, 0.1f, NULL), -EINVAL);
	free(pcm);
}

/* One IMU6 record in little-endian bytes. */
static void imu_rec(uint8_t *p, uint64_t index, int ax, int ay, int az,
		    int gx, int gy, int gz)
{
	int v[6] = { ax, ay, az, gx, gy, gz };

	memset(p, 0, 24);
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(index >> (8 * i));
	for (int i = 0; i < 6; i++) {
		p[8 + 2 * i] = (uint8_t)((uint16_t)v[i] & 0xff);
		p[9 + 2 * i] = (uint8_t)((uint16_t)v[i] >> 8);
	}
}

static void test_imu_motion(void)
{
	uint8_t rec[8 * 24];
	struct mmhal_imu_motion m;

	CHECK_INT(sizeof(struct mmhal_imu_sample), 24);
	memset(&m, 0, sizeof(m));
	CHECK_INT(mmhal_imu_moved(&m, 1000, 1638), 0);	/* nothing seen */
	/* at rest: 1 g on z, a little jitter */
	for (int k = 0; k < 8; k++)
		imu_rec(rec + 24 * k, (uint64_t)k, k % 3 - 1, 2, 16384 + k,
			-3, 4, k);
	CHECK_INT(mmhal_imu_motion_add(&m, rec, 8), 0);
	CHECK_INT(m.n, 8);
	CHECK_INT(m.ref[2], 16384);
	CHECK(m.gyro_max < 10);
	CHECK(m.accel_change_max < 10);
	CHECK_INT(mmhal_imu_moved(&m, 1000, 1638), 0);
	/* a turn: gyro (-600, 800, 0), magnitude 1000: at the threshold,
	 * not above; (-600, 801, 0) is above */
	imu_rec(rec, 8, 0, 0, 16384, -600, 800, 0);
	CHECK_INT(mmhal_imu_motion_add(&m, rec, 1), 0);
	CHECK(fabs(m.gyro_max - 1000) < 1e-3);
	CHECK_INT(mmhal_imu_moved(&m, 1000, 1638), 0);
	imu_rec(rec, 9, 0, 0, 16384, -600, 801, 0);
	CHECK_INT(mmhal_imu_motion_add(&m, rec, 1), 0);
	CHECK_INT(mmhal_imu_moved(&m, 1000, 1638), 1);
	/* a push: 0.2 g on x against the first record's acceleration
	 * (-1, 2, 16384) */
	memset(&m, 0, sizeof(m));
	imu_rec(rec, 0, -1, 2, 16384, 0, 0, 0);
	imu_rec(rec + 24, 1, 3276, 2, 16384, 0, 0, 0);
	CHECK_INT(mmhal_imu_motion_add(&m, rec, 2), 0);
	CHECK(fabs(m.accel_change_max - 3277) < 1e-3);
	CHECK_INT(mmhal_imu_moved(&m, 1000, 1638), 1);
	CHECK_INT(mmhal_imu_moved(&m, 1000, 4000), 0);
	/* negative values decode as signed */
	memset(&m, 0, sizeof(m));
	imu_rec(rec, 0, 0, 0, -16384, -2048, 0, 0);
	CHECK_INT(mmhal_imu_motion_add(&m, rec, 1), 0);
	CHECK_INT(m.ref[2], -16384);
	CHECK(fabs(m.gyro_max - 2048) < 1e-3);
	CHECK_INT(mmhal_imu_motion_add(NULL, rec, 1), -EINVAL);
	CHECK_INT(mmhal_imu_motion_add(&m, NULL, 1), -EINVAL);
	CHECK_INT(mmhal_imu_motion_add(&m, NULL, 0), 0);
	CHECK_INT(mmhal_imu_moved(NULL, 1, 1), 0);
}

static void test_percentiles(void)
{
	double v[100], out[4];
	const double pct[4] = { 50, 95, 99, 100 };

	for (int i = 0; i < 100; i++)
		v[i] = (double)((i * 37) % 100 + 1);	/* 1..100 shuffled */
	CHECK_INT(mmhal_percentiles(v, 100, pct, out, 4), 0);
	CHECK(out[0] == 50 && out[1] == 95 && out[2] == 99 && out[3] == 100);
	for (int i = 1; i < 100; i++)
		CHECK(v[i - 1] <= v[i]);
	/* 10 values: p50 the 5th, p95 and p99 the 10th */
	for (int i = 0; i < 10; i++)
		v[i] = 10.0 * (10 - i);
	CHECK_INT(mmhal_percentiles(v, 10, pct, out, 3), 0);
	CHECK(out[0] == 50 && out[1] == 100 && out[2] == 100);
	v[0] = 7;
	CHECK_INT(mmhal_percentiles(v, 1, pct, out, 3), 0);
	CHECK(out[0] == 7 && out[2] == 7);
	CHECK_INT(mmhal_percentiles(v, 0, pct, out, 1), -EINVAL);
	CHECK_INT(mmhal_percentiles(v, 1, (const double[]){ 101 }, out, 1),
		  -EINVAL);
	CHECK_INT(mmhal_percentiles(NULL, 1, pct, out, 1), -EINVAL);
}

static void test_route_names(void)
{
	CHECK_STR(mmhal_route_name(MMHAL_ROUTE_NONE), "none");
	CHECK_STR(mmhal_route_name(MMHAL_ROUTE_UNCHANGED), "unchanged");
	CHECK_STR(mmhal_route_name(MMHAL_ROUTE_SILENCE), "silence");
	CHECK_STR(mmhal_route_name(MMHAL_ROUTE_ALWAYS), "always");
	CHECK_STR(mmhal_route_name(MMHAL_ROUTE_N), "?");
	for (uint32_t r = 0; r < MMHAL_ROUTE_N; r++)
		CHECK(mmhal_route_name(r) != NULL);
}

static const struct tap_test tests[] = {
	TAP_TEST(test_signature_matches_reference),
	TAP_TEST(test_signature_luma_and_chroma),
	TAP_TEST(test_signature_stride_and_sampling),
	TAP_TEST(test_static_noisy_and_moving_scenes),
	TAP_TEST(test_signature_bad_args),
	TAP_TEST(test_vad),
	TAP_TEST(test_imu_motion),
	TAP_TEST(test_percentiles),
	TAP_TEST(test_route_names),
};

int main(void)
{
	return tap_run(tests, TAP_COUNT(tests));
}

// SPDX-License-Identifier: MIT
/*
 * mmhal_route.c - the measures a session routes by (mmhal_session.h):
 * a frame's luma thumbnail, voice activity in a PCM window, IMU motion,
 * and the percentiles of the SLO summary. Pure functions on memory.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mmhal_route.h"
#include "mmhal_session.h"

/* Luma of pixel x of a line. */
static unsigned int luma_at(uint32_t fmt, const uint8_t *line, uint32_t x)
{
	if (fmt == MMHAL_IMAGE_RGB24) {
		const uint8_t *p = line + 3 * (size_t)x;

		/* BT.601 weights in 1/256 */
		return (77u * p[0] + 150u * p[1] + 29u * p[2] + 128u) >> 8;
	}
	return line[x];	/* GREY, NV12's Y plane */
}

int mmhal_scene_signature(const struct mmhal_image *img,
			  uint8_t sig[MMHAL_SIG_CELLS])
{
	const uint32_t side = MMHAL_SIG_SIDE;
	size_t line_bytes;

	if (!img || !sig || !img->plane[0])
		return -EINVAL;
	if (img->format != MMHAL_IMAGE_GREY && img->format != MMHAL_IMAGE_RGB24 &&
	    img->format != MMHAL_IMAGE_NV12)
		return -EINVAL;
	if (img->width < side || img->height < side)
		return -EINVAL;
	line_bytes = (size_t)img->width *
		     (img->format == MMHAL_IMAGE_RGB24 ? 3 : 1);
	if (img->stride[0] < line_bytes)
		return -EINVAL;
	for (uint32_t r = 0; r < side; r++) {
		uint32_t y0 = (uint32_t)((uint64_t)r * img->height / side);
		uint32_t y1 = (uint32_t)((uint64_t)(r + 1) * img->height / side);
		uint32_t sy = (y1 - y0 + MMHAL_SIG_SAMPLES - 1) /
			      MMHAL_SIG_SAMPLES;

		for (uint32_t c = 0; c < side; c++) {
			uint32_t x0 = (uint32_t)((uint64_t)c * img->width / side);
			uint32_t x1 = (uint32_t)((uint64_t)(c + 1) * img->width /
						 side);
			uint32_t sx = (x1 - x0 + MMHAL_SIG_SAMPLES - 1) /
				      MMHAL_SIG_SAMPLES;
			uint64_t sum = 0, n = 0;

			for (uint32_t y = y0; y < y1; y += sy) {
				const uint8_t *line = (const uint8_t *)
					img->plane[0] + (size_t)y * img->stride[0];

				for (uint32_t x = x0; x < x1; x += sx) {
					sum += luma_at(img->format, line, x);
					n++;
				}
			}
			sig[r * side + c] = (uint8_t)((sum + n / 2) / n);
		}
	}
	return 0;
}

double mmhal_scene_diff(const uint8_t a[MMHAL_SIG_CELLS],
			const uint8_t b[MMHAL_SIG_CELLS])
{
	unsigned int sum = 0;

	for (int i = 0; i < MMHAL_SIG_CELLS; i++)
		sum += (unsigned int)abs((int)a[i] - (int)b[i]);
	return (double)sum / MMHAL_SIG_CELLS;
}

int mmhal_vad(const int16_t *pcm, size_t n, uint32_t rate,
	      float threshold_dbfs, float min_speech, struct mmhal_vad *out)
{
	size_t fl, n_frames;
	uint32_t need;

	if (!pcm || !n || !out || rate < 100 || !(min_speech >= 0) ||
	    min_speech > 1 || !isfinite(threshold_dbfs))
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	fl = rate / 100;			/* 10 ms */
	n_frames = n < fl ? 1 : n / fl;		/* a short tail is left out */
	if (n < fl)
		fl = n;
	if (n_frames > UINT32_MAX)
		return -EINVAL;
	out->max_dbfs = MMHAL_VAD_FLOOR_DBFS;
	for (size_t f = 0; f < n_frames; f++) {
		const int16_t *p = pcm + f * fl;
		double mean = 0, e = 0, db;

		for (size_t i = 0; i < fl; i++)
			mean += p[i];
		mean /= (double)fl;
		/* energy about the frame's mean: an offset is not sound */
		for (size_t i = 0; i < fl; i++)
			e += (p[i] - mean) * (p[i] - mean);
		e /= (double)fl * 32768.0 * 32768.0;
		db = e > 0 ? 10 * log10(e) : MMHAL_VAD_FLOOR_DBFS;
		if (db < MMHAL_VAD_FLOOR_DBFS)
			db = MMHAL_VAD_FLOOR_DBFS;
		if (db > out->max_dbfs)
			out->max_dbfs = (float)db;
		if (db >= threshold_dbfs)
			out->n_speech++;
	}
	out->n_frames = (uint32_t)n_frames;
	out->speech_frac = (float)out->n_speech / (float)out->n_frames;
	/* min_speech is a float: 0.1f * 50 is 5.0000001, not above 5 */
	need = (uint32_t)ceil((double)min_speech * (double)n_frames - 1e-4);
	if (need < 1)
		need = 1;
	out->speech = out->n_speech >= need;
	return 0;
}

static int16_t le_s16(const uint8_t *p)
{
	return (int16_t)(uint16_t)(p[0] | (p[1] << 8));
}

int mmhal_imu_motion_add(struct mmhal_imu_motion *m, const void *records,
			 size_t n)
{
	const uint8_t *p = records;

	if (!m || (n && !records))
		return -EINVAL;
	for (size_t k = 0; k < n; k++, p += sizeof(struct mmhal_imu_sample)) {
		/* index (8 bytes), ax ay az gx gy gz (s16 LE) */
		int32_t a[3], g[3];
		double gm, da;

		for (int i = 0; i < 3; i++) {
			a[i] = le_s16(p + 8 + 2 * i);
			g[i] = le_s16(p + 14 + 2 * i);
		}
		if (!m->n)
			memcpy(m->ref, a, sizeof(a));
		m->n++;
		gm = sqrt((double)g[0] * g[0] + (double)g[1] * g[1] +
			  (double)g[2] * g[2]);
		da = sqrt((double)(a[0] - m->ref[0]) * (a[0] - m->ref[0]) +
			  (double)(a[1] - m->ref[1]) * (a[1] - m->ref[1]) +
			  (double)(a[2] - m->ref[2]) * (a[2] - m->ref[2]));
		if (gm > m->gyro_max)
			m->gyro_max = (float)gm;
		if (da > m->accel_change_max)
			m->accel_change_max = (float)da;
	}
	return 0;
}

int mmhal_imu_moved(const struct mmhal_imu_motion *m, float gyro_threshold,
		    float accel_threshold)
{
	return m && m->n && (m->gyro_max > gyro_threshold ||
			     m->accel_change_max > accel_threshold);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int mmhal_percentiles(double *v, size_t n, const double *pct, double *out,
		      int n_pct)
{
	if (!v || !n || !pct || !out || n_pct < 0)
		return -EINVAL;
	qsort(v, n, sizeof(*v), cmp_double);
	for (int i = 0; i < n_pct; i++) {
		/* nearest rank: the smallest value with at least pct % of
		 * the values at or below it */
		double r = ceil(pct[i] / 100.0 * (double)n);
		size_t k;

		if (!(pct[i] >= 0 && pct[i] <= 100))
			return -EINVAL;
		k = r < 1 ? 1 : (size_t)r;
		out[i] = v[k - 1];
	}
	return 0;
}

const char *mmhal_route_name(uint32_t reason)
{
	static const char *const names[MMHAL_ROUTE_N] = {
		[MMHAL_ROUTE_NONE] = "none",
		[MMHAL_ROUTE_FIRST] = "first",
		[MMHAL_ROUTE_CHANGED] = "changed",
		[MMHAL_ROUTE_MOTION] = "motion",
		[MMHAL_ROUTE_UNCHANGED] = "unchanged",
		[MMHAL_ROUTE_SPEECH] = "speech",
		[MMHAL_ROUTE_SILENCE] = "silence",
		[MMHAL_ROUTE_ALWAYS] = "always",
	};

	return reason < MMHAL_ROUTE_N ? names[reason] : "?";
}

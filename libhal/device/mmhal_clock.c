// SPDX-License-Identifier: MIT
/*
 * mmhal_clock.c - sensor clocks: the driver's formula, and a robust
 * sliding-window fit from a sensor clock to CLOCK_MONOTONIC.
 *
 * The fit works on differences from the newest point, in int64 ns, so the
 * doubles hold small numbers: x = sensor - sensor_ref and
 * z = (mono - mono_ref) - x, fitted as z = a + c * x (c is the rate error,
 * ~1e-5, a the offset change). Theil-Sen gives c (the median of the
 * pairwise slopes; a breakdown point of 29%), the median of z - c * x
 * gives a; points further than 3.5 robust sigmas from that line are
 * dropped and the rest fitted by least squares, whose spread is the
 * uncertainty.
 *
 * mmhal_align_window() pairs an audio window with camera exposures on
 * the common timeline the fits give.
 */
#include <errno.h>
#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mmhal.h"

/* Points wider than this (preempted between the clock reads) are refused. */
#define MMHAL_FIT_MAX_WIDTH	1000000000ULL
/* Residual rejection: k robust sigmas, and a floor. */
#define MMHAL_FIT_REJECT_K	3.5
#define MMHAL_FIT_REJECT_MIN	2000.0
#define MMHAL_FIT_MAD_SIGMA	1.4826

struct mmhal_fit_point {
	uint64_t sensor;
	uint64_t mono;		/* midpoint of the sandwich */
};

struct mmhal_clock_fit {
	unsigned int window;
	unsigned int n;		/* points held */
	unsigned int head;	/* index of the oldest */
	struct mmhal_fit_point *pts;
	int dirty;
	int valid;
	/* The fit, relative to @ref. */
	struct mmhal_fit_point ref;
	double a, c;
	double xbar, sxx, rms, rmax;
	unsigned int inliers;
	/* Scratch: window^2 / 2 slopes, window residuals. */
	double *slopes;
	double *tmp;
	double *x, *z;
	unsigned char *in;
};

uint64_t mmhal_soc_ns(uint32_t mult, uint32_t shift, uint64_t raw)
{
	return (uint64_t)(((unsigned __int128)raw * mult) >> (shift & 127));
}

uint64_t mmhal_sensor_from_soc(const struct mmhal_sensor_clock *clk,
			       uint64_t soc_ns)
{
	__int128 corr;
	int64_t d;

	if (!clk)
		return soc_ns;
	d = (int64_t)(soc_ns - clk->epoch);
	/* C's division truncates toward zero, as the driver does. */
	corr = (__int128)clk->drift_ppb * d / 1000000000;
	return soc_ns + (uint64_t)clk->offset_ns + (uint64_t)(int64_t)corr;
}

int mmhal_clock_fit_create(unsigned int window, struct mmhal_clock_fit **out)
{
	struct mmhal_clock_fit *f;
	size_t pairs;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (window < 3 || window > MMHAL_CLOCK_FIT_MAX)
		return -EINVAL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	pairs = (size_t)window * (window - 1) / 2;
	f->window = window;
	f->pts = calloc(window, sizeof(*f->pts));
	f->slopes = calloc(pairs, sizeof(*f->slopes));
	f->tmp = calloc(window, sizeof(*f->tmp));
	f->x = calloc(window, sizeof(*f->x));
	f->z = calloc(window, sizeof(*f->z));
	f->in = calloc(window, 1);
	if (!f->pts || !f->slopes || !f->tmp || !f->x || !f->z || !f->in) {
		mmhal_clock_fit_destroy(f);
		return -ENOMEM;
	}
	*out = f;
	return 0;
}

void mmhal_clock_fit_destroy(struct mmhal_clock_fit *fit)
{
	if (!fit)
		return;
	free(fit->pts);
	free(fit->slopes);
	free(fit->tmp);
	free(fit->x);
	free(fit->z);
	free(fit->in);
	free(fit);
}

static const struct mmhal_fit_point *mmhal_fit_at(const struct mmhal_clock_fit *f,
						  unsigned int i)
{
	return &f->pts[(f->head + i) % f->window];
}

int mmhal_clock_fit_add(struct mmhal_clock_fit *fit, uint64_t sensor,
			uint64_t mono_before, uint64_t mono_after)
{
	struct mmhal_fit_point p;
	int64_t d;

	if (!fit || mono_after < mono_before ||
	    mono_after - mono_before > MMHAL_FIT_MAX_WIDTH)
		return -EINVAL;
	if (fit->n) {
		d = (int64_t)(sensor - mmhal_fit_at(fit, fit->n - 1)->sensor);
		if (d <= 0 || d > (INT64_C(1) << 62))
			return -EINVAL;
	}
	p.sensor = sensor;
	p.mono = mono_before + (mono_after - mono_before) / 2;
	if (fit->n < fit->window) {
		fit->pts[(fit->head + fit->n) % fit->window] = p;
		fit->n++;
	} else {
		fit->pts[fit->head] = p;
		fit->head = (fit->head + 1) % fit->window;
	}
	fit->dirty = 1;
	return 0;
}

int mmhal_clock_fit_add_xts(struct mmhal_clock_fit *fit,
			    const struct mmhal_sensor_xts *xts)
{
	unsigned int i, best = 0;
	uint64_t w, best_w = UINT64_MAX;

	if (!fit || !xts || !xts->n_samples ||
	    xts->n_samples > MMHAL_XTS_MAX_SAMPLES)
		return -EINVAL;
	for (i = 0; i < xts->n_samples; i++) {
		if (xts->samples[i].sys_after < xts->samples[i].sys_before)
			continue;
		w = xts->samples[i].sys_after - xts->samples[i].sys_before;
		if (w < best_w) {
			best_w = w;
			best = i;
		}
	}
	if (best_w == UINT64_MAX)
		return -EINVAL;
	return mmhal_clock_fit_add(fit, xts->samples[best].sensor,
				   xts->samples[best].sys_before,
				   xts->samples[best].sys_after);
}

static int mmhal_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double mmhal_median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), mmhal_cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int mmhal_fit_solve(struct mmhal_clock_fit *f)
{
	unsigned int i, j, n = f->n, k;
	size_t np = 0;
	double mad, thr, sx = 0, sz = 0, sxz = 0, sxx = 0, r, ss = 0;

	f->dirty = 0;
	f->valid = 0;
	if (n < 3)
		return -EAGAIN;
	f->ref = *mmhal_fit_at(f, n - 1);
	for (i = 0; i < n; i++) {
		const struct mmhal_fit_point *p = mmhal_fit_at(f, i);
		int64_t x = (int64_t)(p->sensor - f->ref.sensor);
		int64_t y = (int64_t)(p->mono - f->ref.mono);

		f->x[i] = (double)x;
		f->z[i] = (double)(y - x);
	}
	/* Theil-Sen slope and median intercept. */
	for (i = 0; i < n; i++)
		for (j = i + 1; j < n; j++)
			if (f->x[j] != f->x[i])
				f->slopes[np++] = (f->z[j] - f->z[i]) /
						  (f->x[j] - f->x[i]);
	if (!np)
		return -EAGAIN;
	f->c = mmhal_median(f->slopes, np);
	for (i = 0; i < n; i++)
		f->tmp[i] = f->z[i] - f->c * f->x[i];
	f->a = mmhal_median(f->tmp, n);
	/* Reject by the median absolute residual. */
	for (i = 0; i < n; i++)
		f->tmp[i] = fabs(f->z[i] - f->a - f->c * f->x[i]);
	memcpy(f->slopes, f->tmp, n * sizeof(*f->tmp));
	mad = mmhal_median(f->slopes, n);
	thr = MMHAL_FIT_REJECT_K * MMHAL_FIT_MAD_SIGMA * mad;
	if (thr < MMHAL_FIT_REJECT_MIN)
		thr = MMHAL_FIT_REJECT_MIN;
	k = 0;
	for (i = 0; i < n; i++) {
		f->in[i] = f->tmp[i] <= thr;
		if (f->in[i]) {
			k++;
			sx += f->x[i];
			sz += f->z[i];
		}
	}
	if (k < 3)
		return -EAGAIN;
	/* Least squares on the inliers, centred. */
	f->xbar = sx / k;
	for (i = 0; i < n; i++) {
		if (!f->in[i])
			continue;
		sxx += (f->x[i] - f->xbar) * (f->x[i] - f->xbar);
		sxz += (f->x[i] - f->xbar) * (f->z[i] - sz / k);
	}
	if (sxx > 0) {
		f->c = sxz / sxx;
		f->a = sz / k - f->c * f->xbar;
	}
	f->sxx = sxx;
	f->rmax = 0;
	for (i = 0; i < n; i++) {
		if (!f->in[i])
			continue;
		r = fabs(f->z[i] - f->a - f->c * f->x[i]);
		ss += r * r;
		if (r > f->rmax)
			f->rmax = r;
	}
	f->rms = sqrt(ss / k);
	f->inliers = k;
	f->valid = 1;
	return 0;
}

static int mmhal_fit_ready(struct mmhal_clock_fit *f)
{
	if (f->dirty)
		mmhal_fit_solve(f);
	return f->valid ? 0 : -EAGAIN;
}

int mmhal_clock_fit_map(struct mmhal_clock_fit *fit, uint64_t sensor,
			uint64_t *mono, uint64_t *uncert_ns)
{
	double x, z, se, dx;
	int64_t xi;
	int ret;

	if (mono)
		*mono = 0;
	if (uncert_ns)
		*uncert_ns = 0;
	if (!fit || !mono)
		return -EINVAL;
	ret = mmhal_fit_ready(fit);
	if (ret)
		return ret;
	xi = (int64_t)(sensor - fit->ref.sensor);
	x = (double)xi;
	z = fit->a + fit->c * x;
	*mono = fit->ref.mono + (uint64_t)xi + (uint64_t)(int64_t)llround(z);
	if (uncert_ns) {
		dx = x - fit->xbar;
		se = fit->rms * sqrt(1.0 / fit->inliers +
				     (fit->sxx > 0 ? dx * dx / fit->sxx : 0));
		*uncert_ns = se < 1 ? 1 : (uint64_t)ceil(se);
	}
	return 0;
}

int mmhal_clock_fit_info(struct mmhal_clock_fit *fit,
			 struct mmhal_clock_fit_info *out)
{
	int ret;

	if (!out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if (!fit)
		return -EINVAL;
	ret = mmhal_fit_ready(fit);
	out->points = fit->n;
	if (ret)
		return ret;
	out->inliers = fit->inliers;
	out->rate_ppb = fit->c * 1e9;
	out->offset_ns = (double)(int64_t)(fit->ref.mono - fit->ref.sensor) +
			 fit->a;
	out->residual_rms_ns = fit->rms;
	out->residual_max_ns = fit->rmax;
	return 0;
}

/* @sensor on CLOCK_MONOTONIC through @fit (NULL: as it is). */
static int mmhal_align_map(struct mmhal_clock_fit *fit, uint64_t sensor,
			   uint64_t *mono, uint64_t *max_unc)
{
	uint64_t unc;
	int ret;

	if (!fit) {
		*mono = sensor;
		return 0;
	}
	ret = mmhal_clock_fit_map(fit, sensor, mono, &unc);
	if (ret)
		return ret;
	if (unc > *max_unc)
		*max_unc = unc;
	return 0;
}

int mmhal_align_window(struct mmhal_clock_fit *mic, uint64_t mic_first,
		       uint64_t mic_last, struct mmhal_clock_fit *cam,
		       const struct mmhal_align_frame *frames, size_t n_frames,
		       struct mmhal_align_overlap *ov, size_t max_ov,
		       struct mmhal_align_result *out)
{
	uint64_t mic_unc = 0, cam_unc = 0, ws, we, fs, fe, lo, hi, len, wlen;
	double covered = 0;
	size_t i;
	int ret;

	if (!out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if ((!frames && n_frames) || (!ov && max_ov) || n_frames > UINT32_MAX ||
	    (int64_t)(mic_last - mic_first) < 0)
		return -EINVAL;
	for (i = 0; i < n_frames; i++) {
		if ((int64_t)(frames[i].end - frames[i].start) < 0 ||
		    (i && (int64_t)(frames[i].start - frames[i - 1].start) < 0))
			return -EINVAL;
	}

	ret = mmhal_align_map(mic, mic_first, &ws, &mic_unc);
	if (!ret)
		ret = mmhal_align_map(mic, mic_last, &we, &mic_unc);
	if (ret)
		return ret;
	/* Positions relative to the window's start: no wrap to care about. */
	wlen = (int64_t)(we - ws) > 0 ? we - ws : 0;

	for (i = 0; i < n_frames; i++) {
		struct mmhal_align_overlap *o;
		int64_t a, b;

		ret = mmhal_align_map(cam, frames[i].start, &fs, &cam_unc);
		if (!ret)
			ret = mmhal_align_map(cam, frames[i].end, &fe, &cam_unc);
		if (ret) {
			memset(out, 0, sizeof(*out));
			return ret;
		}
		a = (int64_t)(fs - ws);
		b = (int64_t)(fe - ws);
		if (b < a)		/* a fit bent a tiny exposure */
			b = a;
		lo = a > 0 ? (uint64_t)a : 0;
		hi = (uint64_t)b < wlen ? (uint64_t)b : wlen;
		if (b < 0 || (a > 0 && (uint64_t)a > wlen))
			continue;	/* apart, not even touching */
		len = hi - lo;
		/* Touching ends overlap only where one side is a point. */
		if (!len && a != b && wlen)
			continue;
		if (!out->n_overlap) {
			out->first_index = (uint32_t)i;
			out->seq_first = frames[i].sequence;
		}
		out->last_index = (uint32_t)i;
		out->seq_last = frames[i].sequence;
		if (out->n_overlap < max_ov) {
			o = &ov[out->n_overlap];
			memset(o, 0, sizeof(*o));
			o->index = (uint32_t)i;
			o->sequence = frames[i].sequence;
			o->overlap_ns = len;
			o->frame_fraction = a == b ? 1.0 :
					    (double)len / (double)(b - a);
			o->window_fraction = wlen ? (double)len / (double)wlen :
						    1.0;
		}
		out->n_overlap++;
		covered += wlen ? (double)len / (double)wlen : 1.0;
	}
	out->win_start = ws;
	out->win_end = ws + wlen;
	out->uncert_ns = (uint64_t)ceil(sqrt((double)mic_unc * (double)mic_unc +
					     (double)cam_unc * (double)cam_unc));
	out->coverage = covered > 1.0 ? 1.0 : covered;
	return 0;
}

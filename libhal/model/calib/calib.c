// SPDX-License-Identifier: MIT
/*
 * calib.c - INT8 calibration of the mmproj encoders (see calib.h).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calib.h"
#include "encoder.h"
#include "gguf.h"
#include "mhash.h"
#include "quant.h"
#include "quant_kern.h"

/* ---- methods ----------------------------------------------------------- */

const char *mm_cal_method_name(int method)
{
	switch (method) {
	case MM_CAL_MINMAX:
		return "minmax";
	case MM_CAL_PERCENTILE:
		return "percentile";
	case MM_CAL_KL:
		return "kl";
	}
	return NULL;
}

int mm_cal_method_parse(const char *s, int *method)
{
	for (int m = MM_CAL_MINMAX; m <= MM_CAL_KL; m++)
		if (s && !strcmp(s, mm_cal_method_name(m))) {
			*method = m;
			return 0;
		}
	return -EINVAL;
}

/* ---- histograms -------------------------------------------------------- */

void mm_cal_hist_add(struct mm_cal_hist *h, const float *x, size_t n,
		     float scale)
{
	double amax = 0;

	for (size_t i = 0; i < n; i++) {
		double v = fabs((double)(x[i] * scale));

		if (v > amax)	/* NaN compares false: counted as 0 */
			amax = v;
	}
	if (amax > h->amax)
		h->amax = amax;
	/* just above the first nonzero batch's max, so that every value
	 * stays below the range (no clamping: merged bins are exact) */
	if (amax > 0 && h->range == 0)
		h->range = amax * (1 + 1.0 / 1048576);
	/* widen: range doubles, bins 2i and 2i + 1 become bin i */
	while (amax >= h->range) {
		for (int i = 0; i < MM_CAL_BINS / 2; i++)
			h->bin[i] = h->bin[2 * i] + h->bin[2 * i + 1];
		memset(h->bin + MM_CAL_BINS / 2, 0,
		       MM_CAL_BINS / 2 * sizeof(h->bin[0]));
		h->range *= 2;
	}
	for (size_t i = 0; i < n; i++) {
		double v = fabs((double)(x[i] * scale));
		int64_t b = 0;

		if (v > 0 && h->range > 0) {	/* NaN: bin 0 */
			b = (int64_t)floor(v * MM_CAL_BINS / h->range);
			if (b >= MM_CAL_BINS)
				b = MM_CAL_BINS - 1;
		}
		h->bin[b]++;
	}
	h->count += n;
}

/* KL of candidate i: P the first i bins (the tail added to bin i - 1),
 * Q P's bins quantized to MM_CAL_QLEVELS levels (from the bins without
 * the tail; level j holds i / 128 bins, the last one the remainder), each
 * level's mass spread evenly over the level's bins where P is nonzero.
 * Both normalized; where P > 0 and Q = 0, Q counts as 1e-12. */
double mm_cal_kl_divergence(const struct mm_cal_hist *h, int i)
{
	const int nm = i / MM_CAL_QLEVELS;
	double tail = 0, psum = 0, qsum = 0, kl = 0;
	double q[MM_CAL_BINS];

	if (i < MM_CAL_QLEVELS || i > MM_CAL_BINS)
		return INFINITY;
	for (int b = i; b < MM_CAL_BINS; b++)
		tail += (double)h->bin[b];
	for (int j = 0; j < MM_CAL_QLEVELS; j++) {
		const int b0 = j * nm, b1 = j == MM_CAL_QLEVELS - 1 ? i : b0 + nm;
		double mass = 0;
		int nz = 0;

		for (int b = b0; b < b1; b++) {
			double p = (double)h->bin[b] + (b == i - 1 ? tail : 0);

			mass += (double)h->bin[b];
			nz += p > 0;
		}
		for (int b = b0; b < b1; b++) {
			double p = (double)h->bin[b] + (b == i - 1 ? tail : 0);

			q[b] = p > 0 && nz ? mass / nz : 0;
			qsum += q[b];
		}
	}
	psum = tail;
	for (int b = 0; b < i; b++)
		psum += (double)h->bin[b];
	if (psum <= 0 || qsum <= 0)
		return INFINITY;
	for (int b = 0; b < i; b++) {
		double p = ((double)h->bin[b] + (b == i - 1 ? tail : 0)) / psum;
		double qq = q[b] / qsum;

		if (p > 0)
			kl += p * log(p / (qq > 0 ? qq : 1e-12));
	}
	return kl;
}

double mm_cal_threshold(const struct mm_cal_hist *h, int method, double pct)
{
	const double w = h->range / MM_CAL_BINS;
	double thr = 0;

	if (!h->count || h->amax <= 0)
		return 0;
	switch (method) {
	case MM_CAL_MINMAX:
		thr = h->amax;
		break;
	case MM_CAL_PERCENTILE: {
		const double want = pct * (double)h->count;
		double cum = 0;
		int b;

		for (b = 0; b < MM_CAL_BINS - 1; b++) {
			cum += (double)h->bin[b];
			if (cum >= want)
				break;
		}
		thr = (b + 1) * w;
		break;
	}
	case MM_CAL_KL: {
		double best = INFINITY;
		int bi = MM_CAL_BINS;

		for (int i = MM_CAL_QLEVELS; i <= MM_CAL_BINS; i++) {
			double d = mm_cal_kl_divergence(h, i);

			if (d < best) {
				best = d;
				bi = i;
			}
		}
		thr = bi * w;
		break;
	}
	default:
		return 0;
	}
	return thr < h->amax ? thr : h->amax;
}

/* ---- points ------------------------------------------------------------ */

static int cal_add(struct mm_calib *c, int *cap, const char *name,
		   const struct mm_mmproj_w *w, int64_t m, int64_t k, int hist)
{
	struct mm_cal_point *pt;

	if (!name || strlen(name) >= MM_CAL_NAME)
		return -EINVAL;
	if (c->n == *cap) {
		int nc = *cap ? 2 * *cap : 64;
		struct mm_cal_point *np = realloc(c->pt, (size_t)nc * sizeof(*np));

		if (!np)
			return -ENOMEM;
		c->pt = np;
		*cap = nc;
	}
	pt = &c->pt[c->n];
	memset(pt, 0, sizeof(*pt));
	snprintf(pt->name, sizeof(pt->name), "%s", name);
	pt->w = w;
	pt->m = m;
	pt->k = k;
	pt->kp = (k + MM_QK - 1) / MM_QK * MM_QK;
	if (hist) {
		pt->hist = calloc(1, sizeof(*pt->hist));
		if (!pt->hist)
			return -ENOMEM;
	}
	c->n++;
	return 0;
}

/* a weight as the GEMM sees it: ne[last] rows of the rest */
static int cal_add_w(struct mm_calib *c, int *cap,
		     const struct mm_mmproj_w *w, int hist)
{
	int64_t k = 1;

	if (!w->name || w->n_dims < 2)
		return -EINVAL;
	for (uint32_t d = 0; d + 1 < w->n_dims; d++)
		k *= w->ne[d];
	return cal_add(c, cap, w->name, w, w->ne[w->n_dims - 1], k, hist);
}

static int cal_add_blocks(struct mm_calib *c, int *cap,
			  const struct mm_mmproj_block *blk, uint32_t n_layer,
			  uint32_t n_embd, uint32_t n_head, int hist)
{
	static const char *const op[4] = { "q", "k", "p", "v" };
	int ret = 0;

	for (uint32_t l = 0; l < n_layer && !ret; l++) {
		const struct mm_mmproj_block *b = &blk[l];
		const char *q = b->q_w.name, *t = q ? strstr(q, "attn_q") : NULL;
		char nm[MM_CAL_NAME];

		ret = cal_add_w(c, cap, &b->q_w, hist);
		if (!ret)
			ret = cal_add_w(c, cap, &b->k_w, hist);
		if (!ret)
			ret = cal_add_w(c, cap, &b->v_w, hist);
		if (!ret && n_head && n_embd / n_head % MM_QK == 0 && t &&
		    t - q < 40)
			for (int i = 0; i < 4 && !ret; i++) {
				snprintf(nm, sizeof(nm), "%.*sattn.%s",
					 (int)(t - q), q, op[i]);
				ret = cal_add(c, cap, nm, NULL, 0, 0, hist);
			}
		if (!ret)
			ret = cal_add_w(c, cap, &b->o_w, hist);
		if (!ret)
			ret = cal_add_w(c, cap, &b->up_w, hist);
		if (!ret)
			ret = cal_add_w(c, cap, &b->down_w, hist);
	}
	return ret;
}

int mm_cal_create(const struct mm_mmproj *p, int hist, struct mm_calib **out,
		  char *err, size_t errlen)
{
	const struct mm_mmproj_vision *v = p ? mm_mmproj_vision(p) : NULL;
	const struct mm_mmproj_audio *a = p ? mm_mmproj_audio(p) : NULL;
	struct mm_calib *c;
	int cap = 0, ret = 0;

	*out = NULL;
	if (!v && !a)
		return mm_errf(-EINVAL, err, errlen,
			       "calibration: the mmproj has no encoder");
	c = calloc(1, sizeof(*c));
	if (!c)
		return mm_errf(-ENOMEM, err, errlen, "calibration: out of memory");
	c->p = p;
	if (v) {
		ret = cal_add_w(c, &cap, &v->patch_w, hist);
		if (!ret)
			ret = cal_add_blocks(c, &cap, v->blk, v->n_run,
					     v->n_embd, v->n_head, hist);
		if (!ret && v->proj == MM_MMPROJ_IDEFICS3)
			ret = cal_add_w(c, &cap, &v->fc, hist);
		if (!ret && v->proj == MM_MMPROJ_MLP) {
			ret = cal_add_w(c, &cap, &v->mm0_w, hist);
			if (!ret)
				ret = cal_add_w(c, &cap, &v->mm2_w, hist);
		}
	}
	if (!ret && a) {
		ret = cal_add_w(c, &cap, &a->conv1_w, hist);
		if (!ret)
			ret = cal_add_w(c, &cap, &a->conv2_w, hist);
		if (!ret)
			ret = cal_add_blocks(c, &cap, a->blk, a->n_layer,
					     a->n_embd, a->n_head, hist);
		if (!ret)
			ret = cal_add_w(c, &cap, &a->mlp1_w, hist);
		if (!ret)
			ret = cal_add_w(c, &cap, &a->mlp2_w, hist);
	}
	if (ret) {
		mm_cal_free(c);
		return mm_errf(ret, err, errlen, ret == -ENOMEM ?
			       "calibration: out of memory" :
			       "calibration: a weight of the mmproj cannot be a quantization point");
	}
	*out = c;
	return 0;
}

void mm_cal_free(struct mm_calib *c)
{
	if (!c)
		return;
	for (int i = 0; i < c->n; i++) {
		free(c->pt[i].hist);
		free(c->pt[i].wq);
	}
	free(c->pt);
	free(c);
}

struct mm_cal_point *mm_cal_find(const struct mm_calib *c, const char *name)
{
	if (!c || !name)
		return NULL;
	for (int i = 0; i < c->n; i++)
		if (!strcmp(c->pt[i].name, name))
			return &c->pt[i];
	return NULL;
}

int mm_cal_compute(struct mm_calib *c, int method, double pct, char *err,
		   size_t errlen)
{
	if (!mm_cal_method_name(method))
		return mm_errf(-EINVAL, err, errlen, "calibration: unknown method %d",
			       method);
	if (method == MM_CAL_PERCENTILE && !(pct > 0 && pct <= 1))
		return mm_errf(-EINVAL, err, errlen,
			       "calibration: percentile %g is not in (0, 1]", pct);
	for (int i = 0; i < c->n; i++) {
		struct mm_cal_point *pt = &c->pt[i];
		double t;

		if (!pt->hist)
			return mm_errf(-EINVAL, err, errlen,
				       "calibration: point %s has no histogram",
				       pt->name);
		if (!pt->hist->count)
			return mm_errf(-EINVAL, err, errlen,
				       "calibration: point %s saw no data (captures for its encoder are needed)",
				       pt->name);
		t = mm_cal_threshold(pt->hist, method, pct);
		/* the unnormalized softmax is exp(s - row max): in (0, 1], 1
		 * in every row, and that largest weight matters most: its
		 * range is known, not measured */
		if (strlen(pt->name) > 7 &&
		    !strcmp(pt->name + strlen(pt->name) - 7, ".attn.p"))
			t = 1;
		if (!(t > 0))
			t = 1;	/* all zero: any scale quantizes it exactly */
		if (t < MM_CAL_THR_MIN)
			t = MM_CAL_THR_MIN;
		if (t > MM_CAL_THR_MAX)
			t = MM_CAL_THR_MAX;
		pt->thr = (float)t;
	}
	c->method = method;
	c->pct = method == MM_CAL_PERCENTILE ? (float)pct : 0;
	return 0;
}

/* f16 scale of a threshold: thr / 127, within f16's positive range */
static float cal_scale(float thr)
{
	float s = thr / 127.0f;

	if (!(s >= 5.9604645e-8f))
		s = 5.9604645e-8f;	/* smallest f16 subnormal */
	if (s > 65504.0f)
		s = 65504.0f;
	return mm_f16_to_f32(mm_f32_to_f16(s));
}

float mm_cal_scale(const struct mm_calib *c, const char *name)
{
	const struct mm_cal_point *pt = mm_cal_find(c, name);

	return pt && pt->thr > 0 ? cal_scale(pt->thr) : 0;
}

#if defined(__x86_64__)
#include <immintrin.h>

/* 32 values: q = round-to-nearest-even(x * id) clipped to +-127, as the
 * scalar loop below (finite x) */
__attribute__((target("avx2")))
static void cal_quant32_avx2(const float *x, float id, int8_t *q)
{
	const __m256 v = _mm256_set1_ps(id), lo = _mm256_set1_ps(-127),
		     hi = _mm256_set1_ps(127);
	__m256i r[4];

	for (int t = 0; t < 4; t++) {
		__m256 a = _mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + 8 * t), v),
					   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);

		r[t] = _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(a, lo), hi));
	}
	_mm256_storeu_si256((__m256i *)q, _mm256_permutevar8x32_epi32(
		_mm256_packs_epi16(_mm256_packs_epi32(r[0], r[1]),
				   _mm256_packs_epi32(r[2], r[3])),
		_mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
}

static int cal_avx2(void)
{
	static int has = -1;

	if (has < 0) {
		__builtin_cpu_init();
		has = __builtin_cpu_supports("avx2") ? 1 : 0;
	}
	return has;
}
#endif

void mm_cal_quant_row(const float *x, float s, void *y, int64_t k)
{
	struct mm_block_q8_0 *b = y;
	const uint16_t d = mm_f32_to_f16(s);
	const float id = s > 0 ? 1.0f / s : 0;

	for (int64_t j = 0; j < k / MM_QK; j++) {
		b[j].d = d;
#if defined(__x86_64__)
		if (cal_avx2()) {
			cal_quant32_avx2(x + j * MM_QK, id, b[j].qs);
			continue;
		}
#endif
		for (int t = 0; t < MM_QK; t++) {
			float q = nearbyintf(x[j * MM_QK + t] * id);

			q = q > 127 ? 127 : q < -127 ? -127 : q;
			b[j].qs[t] = (int8_t)(q == q ? q : 0);
		}
	}
}

/* a row of k floats zero-padded to kp, quantized with scale s */
static void cal_quant_row_pad(const float *x, int64_t k, float s, void *y,
			      int64_t kp, float *tmp)
{
	if (k == kp) {
		mm_cal_quant_row(x, s, y, k);
		return;
	}
	memcpy(tmp, x, (size_t)k * sizeof(float));
	memset(tmp + k, 0, (size_t)(kp - k) * sizeof(float));
	mm_cal_quant_row(tmp, s, y, kp);
}

int mm_cal_prepare(struct mm_calib *c, char *err, size_t errlen)
{
	for (int i = 0; i < c->n; i++) {
		struct mm_cal_point *pt = &c->pt[i];
		const size_t rb = mm_row_bytes(MM_TYPE_Q8_0, pt->kp);
		float *row;

		if (!pt->w || pt->wq)
			continue;
		pt->wq = malloc((size_t)pt->m * rb);
		row = malloc((size_t)pt->kp * sizeof(float));
		if (!pt->wq || !row) {
			free(row);
			return mm_errf(-ENOMEM, err, errlen,
				       "calibration: out of memory for the int8 weights of %s",
				       pt->name);
		}
		/* per output row: s_w = max |w| / 127 (f16), as an NPU's
		 * per-channel weight scale */
		for (int64_t r = 0; r < pt->m; r++) {
			const enum mm_type t = (enum mm_type)pt->w->type;
			float amax = 0, s;

			mm_dequantize_row(t, (const uint8_t *)pt->w->data +
					  r * mm_row_bytes(t, pt->k), row, pt->k);
			memset(row + pt->k, 0,
			       (size_t)(pt->kp - pt->k) * sizeof(float));
			for (int64_t j = 0; j < pt->k; j++)
				amax = fabsf(row[j]) > amax ? fabsf(row[j]) : amax;
			s = amax > 0 ? cal_scale(amax) : 1;
			mm_cal_quant_row(row, s, pt->wq + (size_t)r * rb, pt->kp);
		}
		free(row);
	}
	c->prepared = 1;
	return 0;
}

/* ---- products ---------------------------------------------------------- */

struct cal_mm {
	const struct mm_kernels *kern;
	const uint8_t *W;
	size_t ws;
	const float *X;
	int64_t k, kp;
	float sx;
	uint8_t *xq, *xp;
	size_t xs, xps;
	float *Y;
	int64_t m, n, npanel, ncu;
	int fail;
};

static void cal_mm_quant(int64_t begin, int64_t end, void *arg)
{
	struct cal_mm *j = arg;
	float *tmp = j->k == j->kp ? NULL :
		     malloc((size_t)j->kp * sizeof(float));

	if (j->k != j->kp && !tmp) {
		__atomic_store_n(&j->fail, 1, __ATOMIC_RELAXED);
		return;
	}
	for (int64_t i = begin; i < end; i++) {
		cal_quant_row_pad(j->X + i * j->k, j->k, j->sx,
				  j->xq + i * j->xs, j->kp, tmp);
		if (j->xp)
			j->kern->xprep[MM_TYPE_Q8_0](j->kp, j->xq + i * j->xs,
						     j->xp + i * j->xps);
	}
	free(tmp);
}

static void cal_mm_units(int64_t begin, int64_t end, void *arg)
{
	struct cal_mm *j = arg;
	mm_gemm_fn gemm = j->xp ? j->kern->gemm[MM_TYPE_Q8_0] : NULL;
	void *scratch = gemm ? aligned_alloc(64, MM_GEMM_SCRATCH) : NULL;

	if (gemm && !scratch) {
		__atomic_store_n(&j->fail, 1, __ATOMIC_RELAXED);
		return;
	}
	for (int64_t u = begin; u < end; u++) {
		const int64_t jc = u / j->npanel * j->ncu, p = u % j->npanel;
		const int64_t ic = p * MM_GEMM_MC;
		const int64_t nc = j->n - jc < j->ncu ? j->n - jc : j->ncu;
		const int64_t mc = j->m - ic < MM_GEMM_MC ? j->m - ic : MM_GEMM_MC;

		if (gemm) {
			gemm(j->kp, j->W + ic * j->ws, j->ws, j->xp + jc * j->xps,
			     j->xps, j->Y + jc * j->m + ic, (size_t)j->m, mc, nc,
			     scratch);
			continue;
		}
		for (int64_t jj = 0; jj < nc; jj++)
			j->kern->gemv[MM_TYPE_Q8_0](j->kp, j->W + ic * j->ws, j->ws,
						    j->xq + (jc + jj) * j->xs,
						    j->Y + (jc + jj) * j->m + ic,
						    mc);
	}
	free(scratch);
}

/* Y[n][m] = X[n][k] . W^T, W m rows of kp (>= k) Q8_0, X zero-padded */
static int cal_mm(struct mm_enc *s, const void *W, int64_t kp, const float *X,
		  int64_t k, float sx, float *Y, int64_t m, int64_t n)
{
	struct cal_mm j = { .W = W, .X = X, .k = k, .kp = kp, .sx = sx, .Y = Y,
			    .m = m, .n = n };
	const int nth = mm_ctx_threads(s->ctx);
	uint8_t *buf;

	if (m <= 0 || n <= 0)
		return 0;
	j.kern = mm_kernels_select(mm_ctx_kernels(s->ctx));
	if (!j.kern)
		j.kern = mm_kernels_select(NULL);
	j.ws = mm_row_bytes(MM_TYPE_Q8_0, kp);
	j.xs = (j.ws + 63) & ~(size_t)63;
	if (j.kern->gemm[MM_TYPE_Q8_0] && n > 1)
		j.xps = (j.kern->xprep_bytes(kp) + 63) & ~(size_t)63;
	buf = aligned_alloc(64, (j.xs + j.xps) * (size_t)n);
	if (!buf)
		return -ENOMEM;
	j.xq = buf;
	j.xp = j.xps ? buf + j.xs * n : NULL;
	mm_parallel_for(s->ctx, n, cal_mm_quant, &j);
	j.npanel = (m + MM_GEMM_MC - 1) / MM_GEMM_MC;
	{
		const int64_t want = 8 * (int64_t)nth;
		const int64_t ncj = j.npanel >= want ? 1 :
				    (want + j.npanel - 1) / j.npanel;
		const int64_t a = (n + ncj - 1) / ncj, b = n < 16 ? n : 16;

		j.ncu = a > b ? a : b;
	}
	if (!j.fail)
		mm_parallel_for(s->ctx, j.npanel * ((n + j.ncu - 1) / j.ncu),
				cal_mm_units, &j);
	free(buf);
	return j.fail ? -ENOMEM : 0;
}

int mm_cal_matmul_q8(struct mm_enc *s, const void *W, const float *X,
		     float sx, float *Y, int64_t m, int64_t k, int64_t n)
{
	return cal_mm(s, W, k, X, k, sx, Y, m, n);
}

void mm_cal_observe(struct mm_calib *c, const char *name, const float *x,
		    size_t n, float scale)
{
	struct mm_cal_point *pt = mm_cal_find(c, name);

	if (pt && pt->hist)
		mm_cal_hist_add(pt->hist, x, n, scale);
}

int mm_cal_linear(struct mm_enc *s, const struct mm_mmproj_w *w,
		  const float *X, float *Y, int64_t m, int64_t k, int64_t n)
{
	const enum mm_type t = (enum mm_type)w->type;
	const size_t need = (size_t)(m * k);

	if (s->cal_mode == MM_CAL_STATIC) {
		const struct mm_cal_point *pt = mm_cal_find(s->cal, w->name);

		if (!pt || !pt->wq || pt->m != m || pt->k != k)
			return -ENOENT;
		return cal_mm(s, pt->wq, pt->kp, X, k, cal_scale(pt->thr), Y, m,
			      n);
	}
	if (s->cal_mode == MM_CAL_OBSERVE)
		mm_cal_observe(s->cal, w->name, X, (size_t)(n * k), 1);
	if (t == MM_TYPE_F32) {
		mm_enc_matmul(s, t, w->data, X, Y, m, k, n);
		return 0;
	}
	if (need > s->cal_fw_n) {
		free(s->cal_fw);
		s->cal_fw = malloc(need * sizeof(float));
		s->cal_fw_n = s->cal_fw ? need : 0;
		if (!s->cal_fw)
			return -ENOMEM;
	}
	mm_dequantize_row(t, w->data, s->cal_fw, (int64_t)need);
	mm_enc_matmul(s, MM_TYPE_F32, s->cal_fw, X, Y, m, k, n);
	return 0;
}

const struct mm_enc_cal_hooks mm_cal_enc_hooks = {
	.linear = mm_cal_linear,
	.observe = mm_cal_observe,
	.scale = mm_cal_scale,
	.quant_row = mm_cal_quant_row,
	.matmul_q8 = mm_cal_matmul_q8,
};

/* ---- the calibration file ---------------------------------------------- */

#define CAL_ARCH	"mmcalib"

int mm_cal_save(const struct mm_calib *c, const char *path, char *err,
		size_t errlen)
{
	struct mm_gguf_writer *w;
	const char **names = NULL;
	float *thr = NULL;
	char hex[MM_HASH_HEX];
	int64_t ne[1] = { c->n };
	int ret = -ENOMEM;

	if (!mm_cal_method_name(c->method) || c->version < 1 ||
	    c->n_samples < 1 || c->n_samples > MM_CAL_MAX_SAMPLES || c->n < 1)
		return mm_errf(-EINVAL, err, errlen,
			       "calibration: nothing valid to save (method, version, samples or points unset)");
	w = mm_gguf_writer_new(32);
	names = malloc((size_t)c->n * sizeof(*names));
	thr = malloc((size_t)c->n * sizeof(*thr));
	if (!w || !names || !thr)
		goto out;
	for (int i = 0; i < c->n; i++) {
		names[i] = c->pt[i].name;
		thr[i] = c->pt[i].thr;
		if (!(thr[i] >= MM_CAL_THR_MIN && thr[i] <= MM_CAL_THR_MAX)) {
			ret = mm_errf(-EINVAL, err, errlen,
				      "calibration: point %s has no threshold",
				      c->pt[i].name);
			goto out;
		}
	}
	mm_hash_hex(c->hash, hex);
	ret = mm_gguf_w_str(w, "general.architecture", CAL_ARCH);
	if (!ret)
		ret = mm_gguf_w_u32(w, CAL_ARCH ".format_version", MM_CAL_FORMAT);
	if (!ret)
		ret = mm_gguf_w_str(w, CAL_ARCH ".method",
				    mm_cal_method_name(c->method));
	if (!ret && c->method == MM_CAL_PERCENTILE)
		ret = mm_gguf_w_f32(w, CAL_ARCH ".percentile", c->pct);
	if (!ret)
		ret = mm_gguf_w_str(w, CAL_ARCH ".model_hash", hex);
	if (!ret)
		ret = mm_gguf_w_u64(w, CAL_ARCH ".version", c->version);
	if (!ret)
		ret = mm_gguf_w_u64(w, CAL_ARCH ".n_samples", c->n_samples);
	if (!ret)
		ret = mm_gguf_w_arr_str(w, CAL_ARCH ".points", names, NULL,
					(uint64_t)c->n);
	if (!ret)
		ret = mm_gguf_w_tensor(w, "thresholds", MM_TYPE_F32, 1, ne, thr);
	if (ret) {
		ret = mm_errf(ret, err, errlen, "calibration %s: %s", path,
			      strerror(-ret));
		goto out;
	}
	ret = mm_gguf_w_write_file(w, path, err, errlen);
out:
	if (ret == -ENOMEM)
		mm_errf(ret, err, errlen, "calibration: out of memory");
	free(names);
	free(thr);
	mm_gguf_writer_free(w);
	return ret;
}

static int cal_key_err(int ret, const char *path, const char *key,
		       const char *want, char *err, size_t errlen)
{
	return mm_errf(ret, err, errlen, "calibration %s: key %s %s", path, key,
		       ret == -ENOENT ? "is missing" : want);
}

int mm_cal_load(const struct mm_mmproj *p, const uint8_t hash[MM_CAL_HASH],
		const char *path, struct mm_calib **out, char *err,
		size_t errlen)
{
	struct mm_gguf *g = NULL;
	struct mm_calib *c = NULL;
	const struct mm_gguf_kv *kv;
	const struct mm_gguf_tensor *t;
	const char *s;
	size_t len;
	uint32_t u32, et;
	uint64_t n;
	char *seen = NULL;
	int ret;

	*out = NULL;
	ret = mm_gguf_open(path, &g, err, errlen);
	if (ret)
		return ret;
	ret = mm_gguf_get_str(g, "general.architecture", &s, &len);
	if (ret || strcmp(s, CAL_ARCH)) {
		ret = mm_errf(ret ? ret : -EINVAL, err, errlen,
			      "calibration %s: general.architecture is %s%s%s, not \"" CAL_ARCH "\"",
			      path, ret ? "missing" : "\"", ret ? "" : s,
			      ret ? "" : "\"");
		goto out;
	}
	ret = mm_gguf_get_u32(g, CAL_ARCH ".format_version", &u32);
	if (ret) {
		ret = cal_key_err(ret, path, CAL_ARCH ".format_version",
				  "is not an unsigned integer", err, errlen);
		goto out;
	}
	if (u32 != MM_CAL_FORMAT) {
		ret = mm_errf(-EINVAL, err, errlen,
			      "calibration %s: format version %u, this runtime reads %u",
			      path, u32, MM_CAL_FORMAT);
		goto out;
	}
	ret = mm_cal_create(p, 0, &c, err, errlen);
	if (ret)
		goto out;
	ret = mm_gguf_get_str(g, CAL_ARCH ".method", &s, &len);
	if (ret) {
		ret = cal_key_err(ret, path, CAL_ARCH ".method",
				  "is not a string", err, errlen);
		goto out;
	}
	if (mm_cal_method_parse(s, &c->method)) {
		ret = mm_errf(-EINVAL, err, errlen,
			      "calibration %s: method \"%.32s\" is not minmax, percentile or kl",
			      path, s);
		goto out;
	}
	if (c->method == MM_CAL_PERCENTILE) {
		ret = mm_gguf_get_f32(g, CAL_ARCH ".percentile", &c->pct);
		if (ret) {
			ret = cal_key_err(ret, path, CAL_ARCH ".percentile",
					  "is not an f32", err, errlen);
			goto out;
		}
		if (!(c->pct > 0 && c->pct <= 1)) {
			ret = mm_errf(-EINVAL, err, errlen,
				      "calibration %s: percentile %g is not in (0, 1]",
				      path, c->pct);
			goto out;
		}
	}
	ret = mm_gguf_get_str(g, CAL_ARCH ".model_hash", &s, &len);
	if (ret) {
		ret = cal_key_err(ret, path, CAL_ARCH ".model_hash",
				  "is not a string", err, errlen);
		goto out;
	}
	if (len != 2 * MM_HASH_BYTES || mm_hash_parse_hex(s, c->hash)) {
		ret = mm_errf(-EINVAL, err, errlen,
			      "calibration %s: model_hash is not 64 hex digits",
			      path);
		goto out;
	}
	if (memcmp(c->hash, hash, MM_CAL_HASH)) {
		char want[MM_HASH_HEX];

		mm_hash_hex(hash, want);
		ret = mm_errf(-ESTALE, err, errlen,
			      "calibration %s was made for the mmproj with BLAKE2b-256 %.64s, this mmproj's is %s",
			      path, s, want);
		goto out;
	}
	ret = mm_gguf_get_u64(g, CAL_ARCH ".version", &c->version);
	if (ret) {
		ret = cal_key_err(ret, path, CAL_ARCH ".version",
				  "is not an unsigned integer", err, errlen);
		goto out;
	}
	if (c->version < 1) {
		ret = mm_errf(-EINVAL, err, errlen,
			      "calibration %s: version 0 (versions start at 1)",
			      path);
		goto out;
	}
	ret = mm_gguf_get_u64(g, CAL_ARCH ".n_samples", &c->n_samples);
	if (ret) {
		ret = cal_key_err(ret, path, CAL_ARCH ".n_samples",
				  "is not an unsigned integer", err, errlen);
		goto out;
	}
	if (c->n_samples < 1 || c->n_samples > MM_CAL_MAX_SAMPLES) {
		ret = mm_errf(-EINVAL, err, errlen,
			      "calibration %s: n_samples %llu out of range (1..2^32)",
			      path, (unsigned long long)c->n_samples);
		goto out;
	}
	kv = mm_gguf_find(g, CAL_ARCH ".points");
	ret = kv ? mm_gguf_arr(kv, &et, &n) : -ENOENT;
	if (!ret && et != MM_GGUF_STR)
		ret = -EPROTO;
	if (ret) {
		ret = cal_key_err(ret, path, CAL_ARCH ".points",
				  "is not an array of strings", err, errlen);
		goto out;
	}
	if (n != (uint64_t)c->n) {
		ret = mm_errf(-EINVAL, err, errlen,
			      "calibration %s: %llu points, the mmproj has %d",
			      path, (unsigned long long)n, c->n);
		goto out;
	}
	t = mm_gguf_tensor(g, "thresholds");
	if (!t) {
		ret = mm_errf(-ENOENT, err, errlen,
			      "calibration %s: tensor thresholds is missing", path);
		goto out;
	}
	if (t->type != MM_TYPE_F32 || t->n_dims != 1 ||
	    t->ne[0] != (int64_t)n) {
		ret = mm_errf(-EINVAL, err, errlen,
			      "calibration %s: tensor thresholds is %s [%lld], not f32 [%llu]",
			      path, mm_gguf_type_name(t->type) ?
			      mm_gguf_type_name(t->type) : "?",
			      (long long)t->ne[0], (unsigned long long)n);
		goto out;
	}
	seen = calloc((size_t)c->n, 1);
	if (!seen) {
		ret = mm_errf(-ENOMEM, err, errlen, "calibration: out of memory");
		goto out;
	}
	for (uint64_t i = 0; i < n; i++) {
		struct mm_cal_point *pt;
		float v;

		char name[MM_CAL_NAME];

		ret = mm_gguf_arr_str(kv, i, &s, &len);
		if (ret || !len || len >= MM_CAL_NAME || memchr(s, 0, len)) {
			ret = mm_errf(-EINVAL, err, errlen,
				      "calibration %s: point name %llu is not a name of 1 to %d bytes",
				      path, (unsigned long long)i, MM_CAL_NAME - 1);
			goto out;
		}
		memcpy(name, s, len);
		name[len] = 0;
		s = name;
		pt = mm_cal_find(c, s);
		if (!pt) {
			ret = mm_errf(-EINVAL, err, errlen,
				      "calibration %s: point %s is not a quantization point of this mmproj",
				      path, s);
			goto out;
		}
		if (seen[pt - c->pt]++) {
			ret = mm_errf(-EINVAL, err, errlen,
				      "calibration %s: point %s appears twice",
				      path, s);
			goto out;
		}
		memcpy(&v, (const uint8_t *)t->data + 4 * i, 4);
		if (!(v >= MM_CAL_THR_MIN && v <= MM_CAL_THR_MAX)) {
			ret = mm_errf(-EINVAL, err, errlen,
				      "calibration %s: threshold of %s is %g, not in [%g, %g]",
				      path, s, v, MM_CAL_THR_MIN, MM_CAL_THR_MAX);
			goto out;
		}
		pt->thr = v;
	}
	/* n names, each a distinct point of the n: all are there */
	ret = mm_cal_prepare(c, err, errlen);
out:
	free(seen);
	mm_gguf_close(g);
	if (ret)
		mm_cal_free(c);
	else
		*out = c;
	return ret;
}

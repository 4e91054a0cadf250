// SPDX-License-Identifier: MIT
/*
 * llama_attn.c - causal attention of the decoder over a session's KV
 * cache.
 *
 * Attention runs over (token, KV head) pairs with mm_parallel_for; each
 * pair serves the query heads of one KV head, so each K and V row is read
 * (and converted) once for all of them. K and V rows are stored in the
 * cache (F16 or Q8_0) before attention reads them, so a token attends to
 * itself through the cache's precision, as in llama.cpp. With an F16
 * cache and a SIMD kernel (vec.h's attn_h) K/V are read in place, for
 * prefill and decode alike, so a prompt and the same tokens one by one
 * give the same bits; decode then splits long caches over positions
 * (flash-decoding) so that few KV heads still fill the threads.
 */
#include <math.h>
#include <string.h>

#include "llama_int.h"

struct mm_attn_job {
	struct mmhal_ctx *c;
	int layer, n;
	int staged;	/* K/V rows of the layer are in kf/vf */
};

/* A head's KV cache row (head_dim elements) to f32. */
static void mm_kv_row(const struct mmhal_ctx *c, const uint8_t *row,
		      float *dst)
{
	if (c->kv_type == MMHAL_KV_F16)
		c->vec->f16_row(row, dst, c->model->hp.head_dim);
	else
		mm_dequantize_row((enum mm_type)c->kv_type, row, dst,
				  c->model->hp.head_dim);
}

/* KV rows [begin, end) of a layer to f32 (kf, vf): prefill stages them
 * once, as n tokens then read every row. */
static void mm_kv_stage_task(int64_t begin, int64_t end, void *arg)
{
	struct mm_attn_job *j = arg;
	struct mmhal_ctx *c = j->c;
	const int hd = c->model->hp.head_dim;

	for (int64_t t = begin; t < end; t++)
		for (int h = 0; h < c->model->hp.n_head_kv; h++) {
			const size_t at = mm_kv_at(c, j->layer, h, t);

			mm_kv_row(c, c->kv_k + at, c->kf + t * c->kv_dim + h * hd);
			mm_kv_row(c, c->kv_v + at, c->vf + t * c->kv_dim + h * hd);
		}
}

/* Row t of K (v = 0) or V (v = 1), KV head kvh, as f32: from the staged
 * copy, or converted into buf straight from the cache (decode). */
static const float *mm_attn_row(const struct mm_attn_job *j, int v, int t,
				int kvh, float *buf)
{
	const struct mmhal_ctx *c = j->c;
	const int hd = c->model->hp.head_dim;

	if (j->staged)
		return (v ? c->vf : c->kf) + (size_t)t * c->kv_dim +
		       (size_t)kvh * hd;
	mm_kv_row(c, (v ? c->kv_v : c->kv_k) + mm_kv_at(c, j->layer, kvh, t),
		  buf);
	return buf;
}

/* F16 cache and a SIMD kernel: attention reads K/V in place, prefill and
 * decode alike (so both give the same bits). */
static int mm_attn_fast(const struct mmhal_ctx *c)
{
	return c->kv_type == MMHAL_KV_F16 && c->vec->attn_h &&
	       c->model->hp.head_dim % 8 == 0;
}

/*
 * (token, KV head) pairs [begin, end): causal softmax(q.K^T * scale) V for
 * the grp query heads that share the KV head, so each K and V row is
 * read (and, in decode, converted) once for all of them.
 */
static void mm_attn_task(int64_t begin, int64_t end, void *arg)
{
	struct mm_attn_job *j = arg;
	struct mmhal_ctx *c = j->c;
	const int hd = c->model->hp.head_dim, nh = c->model->hp.n_head, nkv = c->model->hp.n_head_kv;
	const int grp = nh / nkv, nctx = c->n_ctx;
	const float scale = 1.0f / sqrtf((float)hd);
	int slot = __atomic_fetch_add(&c->slot, 1, __ATOMIC_RELAXED);
	float *sc = c->scratch + (size_t)slot * c->scratch_stride;
	float *buf = sc + (size_t)grp * nctx;	/* hd floats */
	float *mx = buf + hd, *sum = mx + grp;	/* grp floats each */

	for (int64_t it = begin; it < end; it++) {
		const int i = (int)(it / nkv), kvh = (int)(it % nkv);
		const int pos = c->n_past + i;
		const float *q = c->q + (size_t)i * nh * hd + (size_t)kvh * grp * hd;
		float *o = c->att + (size_t)i * nh * hd + (size_t)kvh * grp * hd;
		/* decode with an F16 cache: K/V read in place, converted in
		 * the dot/axpy (h16 = this layer's K rows at head kvh) */
		const size_t hoff = mm_kv_at(c, j->layer, kvh, 0);
		const uint8_t *h16 = !j->staged && c->kv_type == MMHAL_KV_F16 ?
				     c->kv_k + hoff : NULL;	/* in place */
		const uint8_t *v16 = h16 ? c->kv_v + hoff : NULL;

		if (h16 && mm_attn_fast(c)) {
			c->vec->attn_h(q, grp, hd, h16, v16, c->kv_rs, pos + 1, scale,
				  sc, nctx, o, NULL);
			continue;
		}
		for (int g = 0; g < grp; g++)
			mx[g] = -INFINITY;
		for (int t = 0; t <= pos; t++) {
			const void *kh = h16 ? h16 + (size_t)t * c->kv_rs : NULL;
			const float *kr = kh ? NULL : mm_attn_row(j, 0, t, kvh, buf);

			for (int g = 0; g < grp; g++) {
				const float *qg = q + (size_t)g * hd;
				float s = (kh ? c->vec->dot_h(qg, kh, hd) :
					   c->vec->dot(qg, kr, hd)) * scale;

				sc[(size_t)g * nctx + t] = s;
				if (s > mx[g])
					mx[g] = s;
			}
		}
		for (int g = 0; g < grp; g++) {
			float *sg = sc + (size_t)g * nctx;

			sum[g] = 0;
			for (int t = 0; t <= pos; t++) {
				sg[t] = expf(sg[t] - mx[g]);
				sum[g] += sg[t];
			}
			sum[g] = 1.0f / sum[g];
		}
		memset(o, 0, (size_t)grp * hd * sizeof(float));
		for (int t = 0; t <= pos; t++) {
			const void *vh = v16 ? v16 + (size_t)t * c->kv_rs : NULL;
			const float *vr = vh ? NULL : mm_attn_row(j, 1, t, kvh, buf);

			for (int g = 0; g < grp; g++) {
				float *og = o + (size_t)g * hd;
				const float a = sc[(size_t)g * nctx + t] * sum[g];

				if (vh)
					c->vec->axpy_h(og, a, vh, hd);
				else
					c->vec->axpy(og, a, vr, hd);
			}
		}
	}
}

/*
 * Decode attention split over positions (flash-decoding): unit u is KV
 * head u / nseg over segment u % nseg of the cache rows; each writes its
 * grp unnormalized outputs and (max, sum) pairs to c->apart, and
 * mm_attn_merge() rescales them to a common max. With fewer KV heads than
 * a few per thread (SmolLM2: 3 heads on 2 threads), whole heads left a
 * thread idle for a third of the attention.
 */
struct mm_attn_seg_job {
	struct mmhal_ctx *c;
	int layer, nseg, npos;
};

static float *mm_attn_part(const struct mmhal_ctx *c, int64_t u)
{
	const int grp = c->model->hp.n_head / c->model->hp.n_head_kv;

	return c->apart + (size_t)u * grp * (c->model->hp.head_dim + 2);
}

static void mm_attn_seg_task(int64_t begin, int64_t end, void *arg)
{
	const struct mm_attn_seg_job *j = arg;
	struct mmhal_ctx *c = j->c;
	const int hd = c->model->hp.head_dim, grp = c->model->hp.n_head / c->model->hp.n_head_kv;
	int slot = __atomic_fetch_add(&c->slot, 1, __ATOMIC_RELAXED);
	float *sc = c->scratch + (size_t)slot * c->scratch_stride;

	for (int64_t u = begin; u < end; u++) {
		const int kvh = (int)(u / j->nseg), s = (int)(u % j->nseg);
		const int t0 = (int)((int64_t)j->npos * s / j->nseg);
		const int t1 = (int)((int64_t)j->npos * (s + 1) / j->nseg);
		const size_t off = mm_kv_at(c, j->layer, kvh, t0);
		float *o = mm_attn_part(c, u);

		c->vec->attn_h(c->q + (size_t)kvh * grp * hd, grp, hd,
			  c->kv_k + off, c->kv_v + off, c->kv_rs, t1 - t0,
			  1.0f / sqrtf((float)hd), sc, c->n_ctx, o,
			  o + (size_t)grp * hd);
	}
}

static void mm_attn_merge(struct mmhal_ctx *c, int nseg)
{
	const int hd = c->model->hp.head_dim, nkv = c->model->hp.n_head_kv;
	const int grp = c->model->hp.n_head / nkv;

	for (int kvh = 0; kvh < nkv; kvh++) {
		for (int g = 0; g < grp; g++) {
			float *o = c->att + ((size_t)kvh * grp + g) * hd;
			float mx = -INFINITY, sum = 0;

			for (int s = 0; s < nseg; s++) {
				const float *st = mm_attn_part(c, (int64_t)kvh * nseg + s) +
						  (size_t)grp * hd;

				mx = st[2 * g] > mx ? st[2 * g] : mx;
			}
			memset(o, 0, hd * sizeof(float));
			for (int s = 0; s < nseg; s++) {
				const float *p = mm_attn_part(c, (int64_t)kvh * nseg + s);
				const float *st = p + (size_t)grp * hd;
				const float f = expf(st[2 * g] - mx);

				sum += st[2 * g + 1] * f;
				c->vec->axpy(o, f, p + (size_t)g * hd, hd);
			}
			for (int d = 0; d < hd; d++)
				o[d] /= sum;
		}
	}
}

/* Segments per KV head for one decode step over npos rows: enough units
 * for two per thread, none shorter than MM_ATTN_SEG_MIN rows; 1 = whole
 * heads. */
#define MM_ATTN_SEG_MIN 16
int mm_llama_attn_nseg(const struct mmhal_ctx *c, int npos)
{
	const int nkv = c->model->hp.n_head_kv;
	int nseg = (2 * c->n_threads + nkv - 1) / nkv;

	nseg = nseg < c->aseg_max ? nseg : c->aseg_max;
	nseg = nseg < npos / MM_ATTN_SEG_MIN ? nseg : npos / MM_ATTN_SEG_MIN;
	return nseg > 1 && mm_attn_fast(c) ? nseg : 1;
}


void mm_llama_attention(struct mmhal_ctx *c, int layer, int n, int nseg)
{
	const struct mm_llama_hp *hp = &c->model->hp;
	const int64_t work = (int64_t)n * hp->n_head * (c->n_past + n) *
			     hp->head_dim;
	struct mm_attn_job aj = { .c = c, .layer = layer, .n = n };

	/* An F16 cache is read in place by the SIMD kernel. Else prefill
	 * stages the layer's K/V rows to f32 once (all n tokens read each)
	 * and decode converts each row where it is used. Tiny attention runs
	 * on this thread (no wake-up). */
	c->slot = 0;
	aj.staged = n > 1 && !mm_attn_fast(c);
	if (aj.staged)
		mm_parallel_for(c->mm, c->n_past + n, mm_kv_stage_task, &aj);
	if (work < (1 << 14)) {
		mm_attn_task(0, (int64_t)n * hp->n_head_kv, &aj);
	} else if (nseg > 1) {
		struct mm_attn_seg_job sj = {
			.c = c, .layer = layer, .nseg = nseg,
			.npos = c->n_past + 1,
		};

		mm_parallel_for(c->mm, (int64_t)hp->n_head_kv * nseg,
				mm_attn_seg_task, &sj);
		mm_attn_merge(c, nseg);
	} else {
		mm_parallel_for(c->mm, (int64_t)n * hp->n_head_kv,
				mm_attn_task, &aj);
	}
}

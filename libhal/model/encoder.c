// SPDX-License-Identifier: MIT
/*
 * encoder.c - the operations shared by the mmproj encoders (see encoder.h).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "encoder.h"
#include "gguf.h"
#include "quant.h"

int mm_enc_init(struct mm_enc *s, int n_threads, int64_t wide,
		const char *what, char *err, size_t errlen)
{
	int ret;

	memset(s, 0, sizeof(*s));
	ret = mm_ctx_create(n_threads, &s->ctx);
	if (ret)
		return mm_errf(ret, err, errlen, "%s: thread pool: %s", what,
			       strerror(-ret));
	s->wide = wide;
	s->tmp = malloc((size_t)(2 * wide) * sizeof(float));
	if (!s->tmp) {
		mm_ctx_destroy(s->ctx);
		s->ctx = NULL;
		return mm_errf(-ENOMEM, err, errlen, "%s: out of memory", what);
	}
	return 0;
}

void mm_enc_fini(struct mm_enc *s)
{
	free(s->tmp);
	s->tmp = NULL;
	mm_ctx_destroy(s->ctx);
	s->ctx = NULL;
}

void mm_enc_vec(const struct mm_mmproj_w *w, float *y, int64_t n)
{
	if (!w->name)
		memset(y, 0, (size_t)n * sizeof(float));
	else
		mm_dequantize_row((enum mm_type)w->type, w->data, y, n);
}

void mm_enc_row(const struct mm_mmproj_w *w, int64_t r, float *y, int64_t n)
{
	mm_dequantize_row((enum mm_type)w->type, (const uint8_t *)w->data +
			  r * mm_row_bytes((enum mm_type)w->type, n), y, n);
}

void mm_enc_bias(struct mm_enc *s, const struct mm_mmproj_w *b, float *Y,
		 int64_t n, int64_t m)
{
	if (!b || !b->name)
		return;
	mm_enc_vec(b, s->tmp, m);
	for (int64_t i = 0; i < n; i++)
		for (int64_t j = 0; j < m; j++)
			Y[i * m + j] += s->tmp[j];
}

void mm_enc_linear(struct mm_enc *s, const struct mm_mmproj_w *w,
		   const struct mm_mmproj_w *b, const float *X, float *Y,
		   int64_t n)
{
	int64_t k = w->ne[0], m = w->ne[1];

	mm_matmul(s->ctx, (enum mm_type)w->type, w->data, X, Y, m, k, n);
	mm_enc_bias(s, b, Y, n, m);
}

/* ---- row-parallel elementwise ops ------------------------------------- */

struct enc_rows {
	const float *X;
	float *Y;
	const float *g, *b;	/* NULL: 1 / 0 */
	int64_t e;
	float eps;
	enum mm_mmproj_act act;
};

static void enc_ln_fn(int64_t begin, int64_t end, void *arg)
{
	const struct enc_rows *a = arg;
	const int64_t e = a->e;

	for (int64_t i = begin; i < end; i++) {
		const float *x = a->X + i * e;
		float *y = a->Y + i * e;
		double mean = 0, var = 0;

		for (int64_t j = 0; j < e; j++)
			mean += x[j];
		mean /= (double)e;
		for (int64_t j = 0; j < e; j++)
			var += (x[j] - mean) * (x[j] - mean);
		var /= (double)e;
		float r = (float)(1.0 / sqrt(var + a->eps));

		for (int64_t j = 0; j < e; j++)
			y[j] = (float)(x[j] - mean) * r * (a->g ? a->g[j] : 1.0f) +
			       (a->b ? a->b[j] : 0.0f);
	}
}

void mm_enc_layernorm(struct mm_enc *s, const struct mm_mmproj_w *g,
		      const struct mm_mmproj_w *b, const float *X, float *Y,
		      int64_t n, int64_t e, float eps)
{
	struct enc_rows a = { .X = X, .Y = Y, .e = e, .eps = eps };

	if (g && g->name) {
		mm_enc_vec(g, s->tmp, e);
		a.g = s->tmp;
	}
	if (b && b->name) {
		mm_enc_vec(b, s->tmp + e, e);
		a.b = s->tmp + e;
	}
	mm_parallel_for(s->ctx, n, enc_ln_fn, &a);
}

static void enc_rms_fn(int64_t begin, int64_t end, void *arg)
{
	const struct enc_rows *a = arg;
	const int64_t e = a->e;

	for (int64_t i = begin; i < end; i++) {
		const float *x = a->X + i * e;
		float *y = a->Y + i * e;
		double ss = 0;

		for (int64_t j = 0; j < e; j++)
			ss += (double)x[j] * x[j];
		float r = (float)(1.0 / sqrt(ss / (double)e + a->eps));

		for (int64_t j = 0; j < e; j++)
			y[j] = x[j] * r * (a->g ? a->g[j] : 1.0f);
	}
}

void mm_enc_rmsnorm(struct mm_enc *s, const struct mm_mmproj_w *g,
		    const float *X, float *Y, int64_t n, int64_t e, float eps)
{
	struct enc_rows a = { .X = X, .Y = Y, .e = e, .eps = eps };

	if (g && g->name) {
		mm_enc_vec(g, s->tmp, e);
		a.g = s->tmp;
	}
	mm_parallel_for(s->ctx, n, enc_rms_fn, &a);
}

float mm_enc_act1(enum mm_mmproj_act act, float a)
{
	switch (act) {
	case MM_MMPROJ_ACT_GELU:
		return 0.5f * a * (1.0f + tanhf(0.7978845608028654f *
				(a + 0.044715f * a * a * a)));
	case MM_MMPROJ_ACT_GELU_ERF:
		return 0.5f * a * (1.0f + erff(a * 0.7071067811865476f));
	case MM_MMPROJ_ACT_SILU:
		return a / (1.0f + expf(-a));
	case MM_MMPROJ_ACT_GELU_QUICK:
	default:
		return a / (1.0f + expf(-1.702f * a));
	}
}

#define ENC_ACT_BLOCK 4096	/* floats per parallel_for unit */

static void enc_act_fn(int64_t begin, int64_t end, void *arg)
{
	const struct enc_rows *a = arg;
	float *x = a->Y;

	for (int64_t i = begin * ENC_ACT_BLOCK; i < end * ENC_ACT_BLOCK &&
	     i < a->e; i++)
		x[i] = mm_enc_act1(a->act, x[i]);
}

void mm_enc_act(struct mm_enc *s, enum mm_mmproj_act act, float *x, int64_t n)
{
	struct enc_rows a = { .Y = x, .e = n, .act = act };

	mm_parallel_for(s->ctx, (n + ENC_ACT_BLOCK - 1) / ENC_ACT_BLOCK,
			enc_act_fn, &a);
}

/* ---- attention -------------------------------------------------------- */

struct enc_att {
	const float *Q, *K, *V;
	float *O;
	float *qh, *kh, *vt, *S, *oh;
	int64_t n, e, d, h;
	float scale;
};

/* gathers head h: qh, kh [n][d] and vt [d][n] */
static void enc_gather_fn(int64_t begin, int64_t end, void *arg)
{
	const struct enc_att *a = arg;
	const int64_t d = a->d, o = a->h * d;

	for (int64_t i = begin; i < end; i++) {
		memcpy(a->qh + i * d, a->Q + i * a->e + o,
		       (size_t)d * sizeof(float));
		memcpy(a->kh + i * d, a->K + i * a->e + o,
		       (size_t)d * sizeof(float));
		for (int64_t c = 0; c < d; c++)
			a->vt[c * a->n + i] = a->V[i * a->e + o + c];
	}
}

static void enc_softmax_fn(int64_t begin, int64_t end, void *arg)
{
	const struct enc_att *a = arg;

	for (int64_t i = begin; i < end; i++) {
		float *sc = a->S + i * a->n;
		float mx = -INFINITY, sum = 0;

		for (int64_t j = 0; j < a->n; j++)
			if (sc[j] > mx)
				mx = sc[j];
		/* scale > 0: max(s * scale) = max(s) * scale */
		for (int64_t j = 0; j < a->n; j++) {
			sc[j] = expf((sc[j] - mx) * a->scale);
			sum += sc[j];
		}
		const float r = 1.0f / sum;

		for (int64_t j = 0; j < a->n; j++)
			sc[j] *= r;
	}
}

static void enc_scatter_fn(int64_t begin, int64_t end, void *arg)
{
	const struct enc_att *a = arg;

	for (int64_t i = begin; i < end; i++)
		memcpy(a->O + i * a->e + a->h * a->d, a->oh + i * a->d,
		       (size_t)a->d * sizeof(float));
}

int mm_enc_attention(struct mm_enc *s, const float *Q, const float *K,
		     const float *V, float *O, int64_t n, int64_t e,
		     int64_t n_head)
{
	struct enc_att a = { .Q = Q, .K = K, .V = V, .O = O, .n = n, .e = e,
			     .d = e / n_head };
	float *buf;

	a.scale = 1.0f / sqrtf((float)a.d);
	buf = malloc(((size_t)n * a.d * 4 + (size_t)n * n) * sizeof(float));
	if (!buf)
		return -ENOMEM;
	a.qh = buf;
	a.kh = a.qh + n * a.d;
	a.vt = a.kh + n * a.d;
	a.oh = a.vt + n * a.d;
	a.S = a.oh + n * a.d;
	for (a.h = 0; a.h < n_head; a.h++) {
		mm_parallel_for(s->ctx, n, enc_gather_fn, &a);
		/* S[i][j] = q_i . k_j: K's rows as the weight */
		mm_matmul(s->ctx, MM_TYPE_F32, a.kh, a.qh, a.S, n, a.d, n);
		mm_parallel_for(s->ctx, n, enc_softmax_fn, &a);
		/* oh[i][c] = sum_j P[i][j] v_j[c]: V^T's rows as the weight */
		mm_matmul(s->ctx, MM_TYPE_F32, a.vt, a.S, a.oh, a.d, n, n);
		mm_parallel_for(s->ctx, n, enc_scatter_fn, &a);
	}
	free(buf);
	return 0;
}

/* ---- block ------------------------------------------------------------ */

static void enc_add(float *x, const float *y, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		x[i] += y[i];
}

int mm_enc_block(struct mm_enc *s, const struct mm_mmproj_block *b, float *x,
		 int64_t n, int64_t e, int64_t f, int64_t n_head,
		 enum mm_mmproj_act act, float eps,
		 const struct mm_enc_bufs *w)
{
	int ret;

	mm_enc_layernorm(s, &b->ln1_w, &b->ln1_b, x, w->big, n, e, eps);
	if (b->q_w.type == b->k_w.type && b->q_w.type == b->v_w.type &&
	    b->q_w.ne[1] == e && b->k_w.ne[1] == e && b->v_w.ne[1] == e) {
		/* one job: the activations are quantized once */
		const struct mm_mv mv[3] = {
			{ (enum mm_type)b->q_w.type, b->q_w.data, w->q, e },
			{ (enum mm_type)b->k_w.type, b->k_w.data, w->k, e },
			{ (enum mm_type)b->v_w.type, b->v_w.data, w->v, e },
		};

		mm_matmul_n(s->ctx, mv, 3, w->big, e, n);
		mm_enc_bias(s, &b->q_b, w->q, n, e);
		mm_enc_bias(s, &b->k_b, w->k, n, e);
		mm_enc_bias(s, &b->v_b, w->v, n, e);
	} else {
		mm_enc_linear(s, &b->q_w, &b->q_b, w->big, w->q, n);
		mm_enc_linear(s, &b->k_w, &b->k_b, w->big, w->k, n);
		mm_enc_linear(s, &b->v_w, &b->v_b, w->big, w->v, n);
	}
	ret = mm_enc_attention(s, w->q, w->k, w->v, w->h, n, e, n_head);
	if (ret)
		return ret;
	mm_enc_linear(s, &b->o_w, &b->o_b, w->h, w->q, n);
	enc_add(x, w->q, n * e);

	mm_enc_layernorm(s, &b->ln2_w, &b->ln2_b, x, w->h, n, e, eps);
	mm_enc_linear(s, &b->up_w, &b->up_b, w->h, w->big, n);
	mm_enc_act(s, act, w->big, n * f);
	mm_enc_linear(s, &b->down_w, &b->down_b, w->big, w->q, n);
	enc_add(x, w->q, n * e);
	return 0;
}

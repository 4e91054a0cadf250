// SPDX-License-Identifier: MIT
/*
 * ref_llama.c - plain f32 reference of the "llama" decoder, for tests.
 *
 * Deliberately a different code path from llama.c: all weights are
 * dequantized to f32 at load, every product is a naive double-accumulated
 * loop, tokens are processed one at a time, the KV cache is f32, RoPE
 * angles are computed in double from the keys each time.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"
#include "ref_llama.h"

struct ref_layer {
	float *an, *fn, *wq, *wk, *wv, *wo, *wg, *wu, *wd;
};

struct ref_llama {
	int V, E, L, H, HKV, F, D, rot, n_ctx, pos;
	double eps, base;
	float *emb, *out, *onorm;
	struct ref_layer *ly;
	float *kc, *vc;	/* [L][n_ctx][HKV*D] */
};

static float *ref_tensor(const struct mm_gguf *g, const char *name,
			 int64_t ne0, int64_t ne1, char *err, size_t errlen)
{
	const struct mm_gguf_tensor *t = mm_gguf_tensor(g, name);
	size_t rs;
	float *f;

	if (!t || t->ne[0] != ne0 || t->ne[1] != ne1) {
		snprintf(err, errlen, "ref: tensor %s missing or misshapen", name);
		return NULL;
	}
	rs = mm_row_bytes((enum mm_type)t->type, ne0);
	f = malloc(sizeof(float) * ne0 * ne1);
	if (!f)
		return NULL;
	for (int64_t r = 0; r < ne1; r++)
		mm_dequantize_row((enum mm_type)t->type,
				  (const uint8_t *)t->data + r * rs,
				  f + r * ne0, ne0);
	return f;
}

void ref_llama_free(struct ref_llama *r)
{
	if (!r)
		return;
	for (int l = 0; r->ly && l < r->L; l++) {
		struct ref_layer *y = &r->ly[l];

		free(y->an); free(y->fn); free(y->wq); free(y->wk);
		free(y->wv); free(y->wo); free(y->wg); free(y->wu);
		free(y->wd);
	}
	free(r->ly);
	if (r->out != r->emb)
		free(r->out);
	free(r->emb);
	free(r->onorm);
	free(r->kc);
	free(r->vc);
	free(r);
}

int ref_llama_load(const char *path, int n_ctx, struct ref_llama **out,
		   char *err, size_t errlen)
{
	struct mm_gguf *g;
	struct ref_llama *r;
	uint32_t u;
	float f;
	char nm[64];
	int ret = mm_gguf_open(path, &g, err, errlen);

	if (ret)
		return ret;
	r = calloc(1, sizeof(*r));
	if (!r) {
		mm_gguf_close(g);
		return -ENOMEM;
	}
#define U(key, dst) do { if (mm_gguf_get_u32(g, key, &u)) { \
		snprintf(err, errlen, "ref: key %s", key); ret = -EINVAL; \
		goto out; } dst = (int)u; } while (0)
	U("llama.block_count", r->L);
	U("llama.embedding_length", r->E);
	U("llama.feed_forward_length", r->F);
	U("llama.attention.head_count", r->H);
	U("llama.attention.head_count_kv", r->HKV);
#undef U
	r->D = r->E / r->H;
	r->rot = mm_gguf_get_u32(g, "llama.rope.dimension_count", &u) ?
		r->D : (int)u;
	r->eps = mm_gguf_get_f32(g, "llama.attention.layer_norm_rms_epsilon",
				 &f) ? 1e-5 : f;
	r->base = mm_gguf_get_f32(g, "llama.rope.freq_base", &f) ? 10000.0 : f;
	r->V = (int)mm_gguf_tensor(g, "token_embd.weight")->ne[1];
	r->n_ctx = n_ctx;
	ret = -ENOMEM;
	r->emb = ref_tensor(g, "token_embd.weight", r->E, r->V, err, errlen);
	r->out = mm_gguf_tensor(g, "output.weight") ?
		ref_tensor(g, "output.weight", r->E, r->V, err, errlen) : r->emb;
	r->onorm = ref_tensor(g, "output_norm.weight", r->E, 1, err, errlen);
	r->ly = calloc(r->L, sizeof(*r->ly));
	r->kc = calloc((size_t)r->L * n_ctx * r->HKV * r->D, sizeof(float));
	r->vc = calloc((size_t)r->L * n_ctx * r->HKV * r->D, sizeof(float));
	if (!r->emb || !r->out || !r->onorm || !r->ly || !r->kc || !r->vc)
		goto out;
	for (int l = 0; l < r->L; l++) {
		struct ref_layer *y = &r->ly[l];
		int qd = r->H * r->D, kd = r->HKV * r->D;

#define T(field, n, a, b) do { snprintf(nm, sizeof(nm), "blk.%d.%s.weight", \
		l, n); y->field = ref_tensor(g, nm, a, b, err, errlen); \
		if (!y->field) goto out; } while (0)
		T(an, "attn_norm", r->E, 1);
		T(fn, "ffn_norm", r->E, 1);
		T(wq, "attn_q", r->E, qd);
		T(wk, "attn_k", r->E, kd);
		T(wv, "attn_v", r->E, kd);
		T(wo, "attn_output", qd, r->E);
		T(wg, "ffn_gate", r->E, r->F);
		T(wu, "ffn_up", r->E, r->F);
		T(wd, "ffn_down", r->F, r->E);
#undef T
	}
	ret = 0;
out:
	mm_gguf_close(g);
	if (ret)
		ref_llama_free(r);
	else
		*out = r;
	return ret;
}

int ref_llama_n_vocab(const struct ref_llama *r)
{
	return r->V;
}

void ref_llama_reset(struct ref_llama *r)
{
	r->pos = 0;
}

/* y[m] = W[m][k] x[k] */
static void ref_mv(const float *W, const float *x, float *y, int m, int k)
{
	for (int i = 0; i < m; i++) {
		double s = 0;

		for (int j = 0; j < k; j++)
			s += (double)W[(size_t)i * k + j] * x[j];
		y[i] = (float)s;
	}
}

static void ref_norm(const float *x, const float *w, float *y, int n,
		     double eps)
{
	double s = 0;

	for (int i = 0; i < n; i++)
		s += (double)x[i] * x[i];
	s = 1.0 / sqrt(s / n + eps);
	for (int i = 0; i < n; i++)
		y[i] = (float)(x[i] * s * w[i]);
}

static void ref_rope(const struct ref_llama *r, float *v, int pos)
{
	for (int i = 0; i < r->rot; i += 2) {
		double th = pos * pow(r->base, -(double)i / r->rot);
		double a = v[i], b = v[i + 1];

		v[i] = (float)(a * cos(th) - b * sin(th));
		v[i + 1] = (float)(a * sin(th) + b * cos(th));
	}
}

/* One position whose input row (n_embd floats) is in; logits after it. */
static int ref_forward(struct ref_llama *r, const float *in, float *logits)
{
	int E = r->E, D = r->D, qd = r->H * D, kd = r->HKV * D, F = r->F;
	int pos = r->pos, grp = r->H / r->HKV;
	float *x, *xn, *q, *att, *o, *g, *u, *sc;

	if (pos >= r->n_ctx)
		return -ENOSPC;
	x = malloc(sizeof(float) * E);
	xn = malloc(sizeof(float) * (E > qd ? E : qd));
	q = malloc(sizeof(float) * qd);
	att = malloc(sizeof(float) * qd);
	o = malloc(sizeof(float) * E);
	g = malloc(sizeof(float) * F);
	u = malloc(sizeof(float) * F);
	sc = malloc(sizeof(float) * r->n_ctx);
	memcpy(x, in, sizeof(float) * E);
	for (int l = 0; l < r->L; l++) {
		const struct ref_layer *y = &r->ly[l];
		float *kc = r->kc + (size_t)l * r->n_ctx * kd;
		float *vc = r->vc + (size_t)l * r->n_ctx * kd;

		ref_norm(x, y->an, xn, E, r->eps);
		ref_mv(y->wq, xn, q, qd, E);
		ref_mv(y->wk, xn, kc + (size_t)pos * kd, kd, E);
		ref_mv(y->wv, xn, vc + (size_t)pos * kd, kd, E);
		for (int h = 0; h < r->H; h++)
			ref_rope(r, q + h * D, pos);
		for (int h = 0; h < r->HKV; h++)
			ref_rope(r, kc + (size_t)pos * kd + h * D, pos);
		for (int h = 0; h < r->H; h++) {
			int kh = h / grp;
			double mx = -1e300, sum = 0;

			for (int t = 0; t <= pos; t++) {
				double d = 0;

				for (int c = 0; c < D; c++)
					d += (double)q[h * D + c] *
					     kc[(size_t)t * kd + kh * D + c];
				sc[t] = (float)(d / sqrt((double)D));
				if (sc[t] > mx)
					mx = sc[t];
			}
			for (int t = 0; t <= pos; t++)
				sum += exp(sc[t] - mx);
			for (int c = 0; c < D; c++) {
				double a = 0;

				for (int t = 0; t <= pos; t++)
					a += exp(sc[t] - mx) / sum *
					     vc[(size_t)t * kd + kh * D + c];
				att[h * D + c] = (float)a;
			}
		}
		ref_mv(y->wo, att, o, E, qd);
		for (int i = 0; i < E; i++)
			x[i] += o[i];
		ref_norm(x, y->fn, xn, E, r->eps);
		ref_mv(y->wg, xn, g, F, E);
		ref_mv(y->wu, xn, u, F, E);
		for (int i = 0; i < F; i++)
			g[i] = (float)(g[i] / (1.0 + exp(-(double)g[i])) * u[i]);
		ref_mv(y->wd, g, o, E, F);
		for (int i = 0; i < E; i++)
			x[i] += o[i];
	}
	ref_norm(x, r->onorm, xn, E, r->eps);
	if (logits)
		ref_mv(r->out, xn, logits, r->V, E);
	r->pos++;
	free(x); free(xn); free(q); free(att); free(o); free(g); free(u);
	free(sc);
	return 0;
}

int ref_llama_step(struct ref_llama *r, int32_t tok, float *logits)
{
	if (tok < 0 || tok >= r->V)
		return -EINVAL;
	return ref_forward(r, r->emb + (size_t)tok * r->E, logits);
}

int ref_llama_n_embd(const struct ref_llama *r)
{
	return r->E;
}

int ref_llama_step_embd(struct ref_llama *r, const float *embd, float *logits)
{
	return ref_forward(r, embd, logits);
}

/* ---- quantizer -------------------------------------------------------- */

struct ref_q {
	const struct mm_gguf *g;
	enum mm_type want;
};

static uint32_t ref_qtype(const struct mm_gguf_tensor *t, enum mm_type want,
			  int *fallback)
{
	if (t->n_dims < 2)
		return t->type;
	if (t->ne[0] % (int64_t)mm_type_block_elems(want) == 0)
		return want;
	(*fallback)++;
	if (want == MM_TYPE_Q4_K && t->ne[0] % MM_QK == 0)
		return MM_TYPE_Q5_0;	/* as llama.cpp */
	return t->type;
}

static int ref_qfill(void *arg, const char *name, void *dst, uint64_t size)
{
	struct ref_q *q = arg;
	const struct mm_gguf_tensor *t = mm_gguf_tensor(q->g, name);
	int dummy = 0;
	uint32_t ty;
	int64_t rows;
	size_t srs, drs;
	float *tmp;

	if (!t)
		return -ENOENT;
	ty = ref_qtype(t, q->want, &dummy);
	rows = t->ne[1] * t->ne[2] * t->ne[3];
	srs = mm_row_bytes((enum mm_type)t->type, t->ne[0]);
	drs = mm_row_bytes((enum mm_type)ty, t->ne[0]);
	if (drs * rows != size)
		return -EINVAL;
	tmp = malloc(sizeof(float) * t->ne[0]);
	if (!tmp)
		return -ENOMEM;
	for (int64_t r = 0; r < rows; r++) {
		mm_dequantize_row((enum mm_type)t->type,
				  (const uint8_t *)t->data + r * srs, tmp,
				  t->ne[0]);
		mm_quantize_row((enum mm_type)ty, tmp, (uint8_t *)dst + r * drs,
				t->ne[0]);
	}
	free(tmp);
	return 0;
}

int ref_quantize_file(const char *src, const char *dst, enum mm_type type,
		      int *n_fallback, char *err, size_t errlen)
{
	struct mm_gguf *g;
	struct mm_gguf_writer *w;
	struct ref_q q;
	int ret = mm_gguf_open(src, &g, err, errlen), fb = 0;
	uint32_t ftype = type == MM_TYPE_Q8_0 ? 7 : type == MM_TYPE_Q4_0 ? 2 :
		type == MM_TYPE_Q4_K ? 15 : 0;

	if (ret)
		return ret;
	w = mm_gguf_writer_new(mm_gguf_alignment(g));
	if (!w) {
		mm_gguf_close(g);
		return -ENOMEM;
	}
	q.g = g;
	q.want = type;
	for (uint64_t i = 0; !ret && i < mm_gguf_n_kv(g); i++) {
		const struct mm_gguf_kv *kv = mm_gguf_kv_at(g, i);

		if (!strcmp(kv->key, "general.file_type") ||
		    !strcmp(kv->key, "general.alignment"))
			continue;
		ret = mm_gguf_w_kv(w, kv);
	}
	if (!ret)
		ret = mm_gguf_w_u32(w, "general.file_type", ftype);
	for (uint64_t i = 0; !ret && i < mm_gguf_n_tensors(g); i++) {
		const struct mm_gguf_tensor *t = mm_gguf_tensor_at(g, i);

		ret = mm_gguf_w_tensor_cb(w, t->name, ref_qtype(t, type, &fb),
					  t->n_dims, t->ne, ref_qfill, &q);
	}
	if (ret)
		snprintf(err, errlen, "quantize %s: building: %s", src,
			 strerror(-ret));
	else
		ret = mm_gguf_w_write_file(w, dst, err, errlen);
	mm_gguf_writer_free(w);
	mm_gguf_close(g);
	if (n_fallback)
		*n_fallback = fb;
	return ret;
}

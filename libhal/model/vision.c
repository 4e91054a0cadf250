// SPDX-License-Identifier: MIT
/*
 * vision.c - the vision encoder and its projector on the CPU (see vision.h).
 *
 * Activations are row-major [token][channel] f32. Linear layers go through
 * mm_matmul() with the weight in the file's type (ggml's {in, out} shape is
 * out rows of in). The graph follows llama.cpp's clip.cpp (build_siglip /
 * build_llava): patch conv + bias, [class token], + position embeddings,
 * [pre-LN], blocks, [post-LN], projector.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"
#include "quant.h"
#include "vision.h"

size_t mm_vision_n_tokens(const struct mm_mmproj *p)
{
	const struct mm_mmproj_vision *v = p ? mm_mmproj_vision(p) : NULL;

	return v ? v->n_tokens : 0;
}

size_t mm_vision_n_embd_out(const struct mm_mmproj *p)
{
	const struct mm_mmproj_vision *v = p ? mm_mmproj_vision(p) : NULL;

	return v ? v->n_out : 0;
}

size_t mm_vision_n_pixels(const struct mm_mmproj *p)
{
	const struct mm_mmproj_vision *v = p ? mm_mmproj_vision(p) : NULL;

	return v ? (size_t)3 * v->image_size * v->image_size : 0;
}

/* A 1-D weight (bias, norm) as n floats; zeros when absent. */
static void vis_vec(const struct mm_mmproj_w *w, float *y, int64_t n)
{
	if (!w->name)
		memset(y, 0, (size_t)n * sizeof(float));
	else
		mm_dequantize_row((enum mm_type)w->type, w->data, y, n);
}

struct vis {
	struct mm_ctx *ctx;
	const struct mm_mmproj_vision *v;
	float *tmp;	/* scratch vector, the widest bias */
};

/* Y[n][m] = X[n][k] . W^T + b */
static void vis_linear(struct vis *s, const struct mm_mmproj_w *w,
		       const struct mm_mmproj_w *b, const float *X, float *Y,
		       int64_t n)
{
	int64_t k = w->ne[0], m = w->ne[1];

	mm_matmul(s->ctx, (enum mm_type)w->type, w->data, X, Y, m, k, n);
	if (b && b->name) {
		vis_vec(b, s->tmp, m);
		for (int64_t i = 0; i < n; i++)
			for (int64_t j = 0; j < m; j++)
				Y[i * m + j] += s->tmp[j];
	}
}

/* Y = LayerNorm(X) * g + b over rows of e. */
static void vis_layernorm(struct vis *s, const struct mm_mmproj_w *g,
			  const struct mm_mmproj_w *b, const float *X, float *Y,
			  int64_t n, int64_t e)
{
	float *gv = s->tmp, *bv = s->tmp + e;

	vis_vec(g, gv, e);
	vis_vec(b, bv, e);
	for (int64_t i = 0; i < n; i++) {
		const float *x = X + i * e;
		float *y = Y + i * e;
		double mean = 0, var = 0;

		for (int64_t j = 0; j < e; j++)
			mean += x[j];
		mean /= (double)e;
		for (int64_t j = 0; j < e; j++)
			var += (x[j] - mean) * (x[j] - mean);
		var /= (double)e;
		float r = (float)(1.0 / sqrt(var + s->v->eps));

		for (int64_t j = 0; j < e; j++)
			y[j] = (float)(x[j] - mean) * r * (g->name ? gv[j] : 1.0f) +
			       bv[j];
	}
}

static void vis_act(enum mm_mmproj_act act, float *x, int64_t n)
{
	for (int64_t i = 0; i < n; i++) {
		float a = x[i];

		switch (act) {
		case MM_MMPROJ_ACT_GELU:
			x[i] = 0.5f * a * (1.0f + tanhf(0.7978845608028654f *
					(a + 0.044715f * a * a * a)));
			break;
		case MM_MMPROJ_ACT_GELU_ERF:
			x[i] = 0.5f * a * (1.0f + erff(a * 0.7071067811865476f));
			break;
		case MM_MMPROJ_ACT_SILU:
			x[i] = a / (1.0f + expf(-a));
			break;
		case MM_MMPROJ_ACT_GELU_QUICK:
		default:
			x[i] = a / (1.0f + expf(-1.702f * a));
			break;
		}
	}
}

/* Bidirectional attention: Q, K, V, O are [n][e], n_head heads of d. */
struct vis_att {
	const float *Q, *K, *V;
	float *O;
	int64_t n, e, d;
	float *scores;	/* n floats per (head, query) job slot */
};

static void vis_att_fn(int64_t begin, int64_t end, void *arg)
{
	struct vis_att *a = arg;
	float scale = 1.0f / sqrtf((float)a->d);
	/* each range uses the score row of its first job: ranges are
	 * disjoint, so are their rows */
	float *sc = a->scores + begin * a->n;

	for (int64_t job = begin; job < end; job++) {
		int64_t h = job / a->n, i = job % a->n;
		const float *q = a->Q + i * a->e + h * a->d;
		float *o = a->O + i * a->e + h * a->d;
		float mx = -INFINITY, sum = 0;

		for (int64_t j = 0; j < a->n; j++) {
			const float *k = a->K + j * a->e + h * a->d;
			float dot = 0;

			for (int64_t c = 0; c < a->d; c++)
				dot += q[c] * k[c];
			sc[j] = dot * scale;
			if (sc[j] > mx)
				mx = sc[j];
		}
		for (int64_t j = 0; j < a->n; j++) {
			sc[j] = expf(sc[j] - mx);
			sum += sc[j];
		}
		for (int64_t c = 0; c < a->d; c++)
			o[c] = 0;
		for (int64_t j = 0; j < a->n; j++) {
			const float *vv = a->V + j * a->e + h * a->d;
			float pw = sc[j] / sum;

			for (int64_t c = 0; c < a->d; c++)
				o[c] += pw * vv[c];
		}
	}
}

int mm_vision_encode(const struct mm_mmproj *p, const float *pixels,
		     size_t n_pixels, float *out, size_t n_out, int n_threads,
		     char *err, size_t errlen)
{
	const struct mm_mmproj_vision *v = p ? mm_mmproj_vision(p) : NULL;
	struct vis s = { 0 };
	int ret = 0;

	if (err && errlen)
		err[0] = 0;
	if (!v) {
		mm_errf(0, err, errlen, "the mmproj has no vision encoder");
		return p ? -ENOENT : -EINVAL;
	}
	if (!pixels || !out) {
		mm_errf(0, err, errlen, "vision encode: NULL %s",
			pixels ? "output" : "pixels");
		return -EINVAL;
	}
	if (n_pixels != mm_vision_n_pixels(p)) {
		mm_errf(0, err, errlen,
			"vision encode: %zu input floats, the encoder takes 3 x %u x %u = %zu",
			n_pixels, v->image_size, v->image_size,
			mm_vision_n_pixels(p));
		return -EINVAL;
	}
	if (n_out != (size_t)v->n_tokens * v->n_out) {
		mm_errf(0, err, errlen,
			"vision encode: output of %zu floats, the encoder gives %u tokens x %u = %zu",
			n_out, v->n_tokens, v->n_out,
			(size_t)v->n_tokens * v->n_out);
		return -EINVAL;
	}

	const int64_t S = v->image_size, P = v->patch_size, side = S / P;
	const int64_t np = v->n_patches, e = v->n_embd, f = v->n_ff;
	const int64_t cls = v->class_embd.name ? 1 : 0, n = np + cls;
	const int64_t kp = 3 * P * P, nh = v->n_head, d = e / nh;
	int64_t wide = e * 2, nx = kp > f ? kp : f;
	float *x = NULL, *h = NULL, *q = NULL, *k = NULL, *vv = NULL;
	float *big = NULL, *sc = NULL, *pe = NULL;

	if (v->n_mm_hidden > nx)
		nx = v->n_mm_hidden;
	if (e * v->scale_factor * v->scale_factor > nx)
		nx = e * v->scale_factor * v->scale_factor;
	if (nx > wide)
		wide = nx;
	if ((int64_t)v->n_out > wide)
		wide = v->n_out;
	ret = mm_ctx_create(n_threads, &s.ctx);
	if (ret) {
		mm_errf(0, err, errlen, "vision encode: thread pool: %s",
			strerror(-ret));
		return ret;
	}
	s.v = v;
	x = malloc((size_t)n * e * sizeof(float));
	h = malloc((size_t)n * e * sizeof(float));
	q = malloc((size_t)n * e * sizeof(float));
	k = malloc((size_t)n * e * sizeof(float));
	vv = malloc((size_t)n * e * sizeof(float));
	big = malloc((size_t)n * nx * sizeof(float));
	sc = malloc((size_t)nh * n * n * sizeof(float));
	pe = malloc((size_t)e * sizeof(float));
	s.tmp = malloc((size_t)wide * sizeof(float));
	if (!x || !h || !q || !k || !vv || !big || !sc || !pe || !s.tmp) {
		mm_errf(0, err, errlen, "vision encode: out of memory");
		ret = -ENOMEM;
		goto out;
	}

	/* patch embedding: unfold each patch as the conv weight's row
	 * (c, ky, kx), then one GEMM; patch t (row-major) is token cls + t */
	for (int64_t py = 0; py < side; py++)
		for (int64_t px = 0; px < side; px++) {
			float *u = big + (py * side + px) * kp;

			for (int64_t c = 0; c < 3; c++)
				for (int64_t ky = 0; ky < P; ky++)
					memcpy(u + (c * P + ky) * P,
					       pixels + c * S * S +
					       (py * P + ky) * S + px * P,
					       (size_t)P * sizeof(float));
		}
	mm_matmul(s.ctx, (enum mm_type)v->patch_w.type, v->patch_w.data, big,
		  x + cls * e, e, kp, np);
	vis_vec(&v->patch_b, s.tmp, e);
	for (int64_t t = 0; t < np; t++)
		for (int64_t j = 0; j < e; j++)
			x[(cls + t) * e + j] += s.tmp[j];
	if (cls)
		vis_vec(&v->class_embd, x, e);
	for (int64_t t = 0; t < n; t++) {
		mm_dequantize_row((enum mm_type)v->pos.type,
				  (const uint8_t *)v->pos.data +
				  t * mm_row_bytes((enum mm_type)v->pos.type, e),
				  pe, e);
		for (int64_t j = 0; j < e; j++)
			x[t * e + j] += pe[j];
	}
	if (v->pre_ln_w.name)
		vis_layernorm(&s, &v->pre_ln_w, &v->pre_ln_b, x, x, n, e);

	for (uint32_t l = 0; l < v->n_layer; l++) {
		const struct mm_mmproj_block *b = &v->blk[l];
		struct vis_att a = { q, k, vv, h, n, e, d, sc };

		vis_layernorm(&s, &b->ln1_w, &b->ln1_b, x, big, n, e);
		vis_linear(&s, &b->q_w, &b->q_b, big, q, n);
		vis_linear(&s, &b->k_w, &b->k_b, big, k, n);
		vis_linear(&s, &b->v_w, &b->v_b, big, vv, n);
		mm_parallel_for(s.ctx, nh * n, vis_att_fn, &a);
		vis_linear(&s, &b->o_w, &b->o_b, h, q, n);
		for (int64_t i = 0; i < n * e; i++)
			x[i] += q[i];

		vis_layernorm(&s, &b->ln2_w, &b->ln2_b, x, h, n, e);
		vis_linear(&s, &b->up_w, &b->up_b, h, big, n);
		vis_act(v->act, big, n * f);
		vis_linear(&s, &b->down_w, &b->down_b, big, q, n);
		for (int64_t i = 0; i < n * e; i++)
			x[i] += q[i];
	}
	if (v->post_ln_w.name)
		vis_layernorm(&s, &v->post_ln_w, &v->post_ln_b, x, x, n, e);

	if (v->proj == MM_MMPROJ_IDEFICS3) {
		/* clip.cpp's build_patch_merge_permute: merged token
		 * (yb, xb) holds patch (yb*s + dy, xb*s + dx) at channels
		 * (dy*s + dx)*e.. */
		const int64_t sf = v->scale_factor, ms = side / sf;
		const int64_t ke = e * sf * sf;

		for (int64_t yb = 0; yb < ms; yb++)
			for (int64_t xb = 0; xb < ms; xb++)
				for (int64_t dy = 0; dy < sf; dy++)
					for (int64_t dx = 0; dx < sf; dx++)
						memcpy(big + (yb * ms + xb) * ke +
						       (dy * sf + dx) * e,
						       x + (cls + (yb * sf + dy) *
							    side + xb * sf + dx) * e,
						       (size_t)e * sizeof(float));
		vis_linear(&s, &v->fc, NULL, big, out, ms * ms);
	} else if (v->proj == MM_MMPROJ_MLP) {
		/* the class token is dropped (clip.cpp: get_rows of the
		 * patches); GELU is ggml_gelu (tanh form) */
		vis_linear(&s, &v->mm0_w, &v->mm0_b, x + cls * e, big, np);
		vis_act(MM_MMPROJ_ACT_GELU, big, np * v->n_mm_hidden);
		vis_linear(&s, &v->mm2_w, &v->mm2_b, big, out, np);
	} else {
		mm_errf(0, err, errlen, "vision encode: projector %s not supported",
			mm_mmproj_type_name(v->proj));
		ret = -ENOTSUP;
	}
out:
	free(x);
	free(h);
	free(q);
	free(k);
	free(vv);
	free(big);
	free(sc);
	free(pe);
	free(s.tmp);
	mm_ctx_destroy(s.ctx);
	return ret;
}

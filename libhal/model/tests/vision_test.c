// SPDX-License-Identifier: MIT
/*
 * vision_test.c - the vision encoder and projectors (vision.c) against a
 * naive double-precision reference written here: plain loops over weights
 * dequantized whole with mm_dequantize_row(), the conv read straight from
 * the CHW image, and the idefics3 pixel shuffle emulated as clip.cpp's
 * ggml reshape/permute/cont sequence (flat-index arithmetic), on
 * mmgguf gen's tiny/tiny-mlp/micro towers at F32, F16, Q8_0 and Q4_K;
 * plus thread-count agreement and the error cases.
 *
 * Tolerances (max |out - ref| / max |ref|): F32 and F16 weights run in f32
 * arithmetic: 1e-5 (measured ~3e-7). Q8_0 and Q4_K weights make the
 * kernels quantize each activation row to 8 bits (Q8_0 / Q8_K) before
 * every matmul, so the error is that rounding accumulated over the
 * blocks: 5e-2 (measured 1.0e-2 to 1.8e-2).
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"
#include "mmproj.h"
#include "quant.h"
#include "tap.h"
#include "vision.h"

static void *gen_mem(const char *vision, const char *audio, uint32_t type,
		     size_t *size)
{
	struct mm_gen_mmproj_params p = {
		.vision = vision, .audio = audio, .type = type, .seed = 3,
	};
	char err[256];
	void *buf = NULL;

	if (mm_gen_mmproj_mem(&p, &buf, size, err, sizeof(err))) {
		tap_diag("gen %s/%s: %s", vision ? vision : "-",
			 audio ? audio : "-", err);
		return NULL;
	}
	return buf;
}

/* ---- reference ---------------------------------------------------------- */

/* All of a weight as doubles, ne[0] per row. */
static double *ref_w(const struct mm_mmproj_w *w)
{
	int64_t k = w->ne[0], rows = w->ne[1] * w->ne[2] * w->ne[3];
	size_t rb = mm_row_bytes((enum mm_type)w->type, k);
	double *d = malloc((size_t)(k * rows) * sizeof(double));
	float *row = malloc((size_t)k * sizeof(float));

	for (int64_t r = 0; r < rows; r++) {
		mm_dequantize_row((enum mm_type)w->type,
				  (const uint8_t *)w->data + r * rb, row, k);
		for (int64_t i = 0; i < k; i++)
			d[r * k + i] = row[i];
	}
	free(row);
	return d;
}

/* y[n][m] = x[n][k] W^T (+ b) */
static void ref_lin(const struct mm_mmproj_w *w, const struct mm_mmproj_w *b,
		    const double *x, double *y, int64_t n)
{
	int64_t k = w->ne[0], m = w->ne[1];
	double *W = ref_w(w), *B = b && b->name ? ref_w(b) : NULL;

	for (int64_t i = 0; i < n; i++)
		for (int64_t o = 0; o < m; o++) {
			double acc = B ? B[o] : 0;

			for (int64_t j = 0; j < k; j++)
				acc += x[i * k + j] * W[o * k + j];
			y[i * m + o] = acc;
		}
	free(W);
	free(B);
}

static void ref_ln(const struct mm_mmproj_w *g, const struct mm_mmproj_w *b,
		   double *x, int64_t n, int64_t e, double eps)
{
	double *G = ref_w(g), *B = ref_w(b);

	for (int64_t i = 0; i < n; i++) {
		double m = 0, v = 0;

		for (int64_t j = 0; j < e; j++)
			m += x[i * e + j];
		m /= e;
		for (int64_t j = 0; j < e; j++)
			v += (x[i * e + j] - m) * (x[i * e + j] - m);
		v /= e;
		for (int64_t j = 0; j < e; j++)
			x[i * e + j] = (x[i * e + j] - m) / sqrt(v + eps) *
				       G[j] + B[j];
	}
	free(G);
	free(B);
}

static double ref_act(enum mm_mmproj_act a, double x)
{
	switch (a) {
	case MM_MMPROJ_ACT_GELU:
		return 0.5 * x * (1 + tanh(sqrt(2 / M_PI) *
					   (x + 0.044715 * x * x * x)));
	case MM_MMPROJ_ACT_GELU_ERF:
		return 0.5 * x * (1 + erf(x / sqrt(2)));
	case MM_MMPROJ_ACT_SILU:
		return x / (1 + exp(-x));
	default:
		return x / (1 + exp(-1.702 * x));
	}
}

static double *ref_encode(const struct mm_mmproj_vision *v, const float *px)
{
	int64_t S = v->image_size, P = v->patch_size, side = S / P;
	int64_t e = v->n_embd, f = v->n_ff, cls = v->class_embd.name ? 1 : 0;
	int64_t n = side * side + cls, nh = v->n_head, d = e / nh;
	double *x = calloc((size_t)(n * e), sizeof(double));
	double *h = malloc((size_t)(n * e) * sizeof(double));
	double *q = malloc((size_t)(n * e) * sizeof(double));
	double *k = malloc((size_t)(n * e) * sizeof(double));
	double *vv = malloc((size_t)(n * e) * sizeof(double));
	double *att = malloc((size_t)(n * e) * sizeof(double));
	double *ff = malloc((size_t)(n * f) * sizeof(double));
	double *sc = malloc((size_t)n * sizeof(double));
	double *out, *W, *B;

	/* conv2d, stride = kernel = P; weight [o][c][ky][kx] */
	W = ref_w(&v->patch_w);
	B = ref_w(&v->patch_b);
	for (int64_t py = 0; py < side; py++)
		for (int64_t pxx = 0; pxx < side; pxx++)
			for (int64_t o = 0; o < e; o++) {
				double acc = B[o];

				for (int c = 0; c < 3; c++)
					for (int64_t ky = 0; ky < P; ky++)
						for (int64_t kx = 0; kx < P; kx++)
							acc += W[((o * 3 + c) * P + ky) * P + kx] *
							       px[(c * S + py * P + ky) * S +
								  pxx * P + kx];
				x[(cls + py * side + pxx) * e + o] = acc;
			}
	free(W);
	free(B);
	if (cls) {
		W = ref_w(&v->class_embd);
		memcpy(x, W, (size_t)e * sizeof(double));
		free(W);
	}
	W = ref_w(&v->pos);
	for (int64_t i = 0; i < n * e; i++)
		x[i] += W[i];
	free(W);
	if (v->pre_ln_w.name)
		ref_ln(&v->pre_ln_w, &v->pre_ln_b, x, n, e, v->eps);
	for (uint32_t l = 0; l < v->n_layer; l++) {
		const struct mm_mmproj_block *b = &v->blk[l];

		memcpy(h, x, (size_t)(n * e) * sizeof(double));
		ref_ln(&b->ln1_w, &b->ln1_b, h, n, e, v->eps);
		ref_lin(&b->q_w, &b->q_b, h, q, n);
		ref_lin(&b->k_w, &b->k_b, h, k, n);
		ref_lin(&b->v_w, &b->v_b, h, vv, n);
		for (int64_t hd = 0; hd < nh; hd++)
			for (int64_t i = 0; i < n; i++) {
				double mx = -INFINITY, sum = 0;

				for (int64_t j = 0; j < n; j++) {
					double dot = 0;

					for (int64_t c = 0; c < d; c++)
						dot += q[i * e + hd * d + c] *
						       k[j * e + hd * d + c];
					sc[j] = dot / sqrt((double)d);
					mx = fmax(mx, sc[j]);
				}
				for (int64_t j = 0; j < n; j++)
					sum += sc[j] = exp(sc[j] - mx);
				for (int64_t c = 0; c < d; c++) {
					double acc = 0;

					for (int64_t j = 0; j < n; j++)
						acc += sc[j] / sum *
						       vv[j * e + hd * d + c];
					att[i * e + hd * d + c] = acc;
				}
			}
		ref_lin(&b->o_w, &b->o_b, att, h, n);
		for (int64_t i = 0; i < n * e; i++)
			x[i] += h[i];
		memcpy(h, x, (size_t)(n * e) * sizeof(double));
		ref_ln(&b->ln2_w, &b->ln2_b, h, n, e, v->eps);
		ref_lin(&b->up_w, &b->up_b, h, ff, n);
		for (int64_t i = 0; i < n * f; i++)
			ff[i] = ref_act(v->act, ff[i]);
		ref_lin(&b->down_w, &b->down_b, ff, h, n);
		for (int64_t i = 0; i < n * e; i++)
			x[i] += h[i];
	}
	if (v->post_ln_w.name)
		ref_ln(&v->post_ln_w, &v->post_ln_b, x, n, e, v->eps);

	out = malloc((size_t)v->n_tokens * v->n_out * sizeof(double));
	if (v->proj == MM_MMPROJ_IDEFICS3) {
		/* clip.cpp, on ggml's ne[] (ne0 fastest), no class token:
		 *  reshape (e*s, W/s, H); permute(0,2,1,3); cont;
		 *  reshape (e*s*s, H/s, W/s); permute(0,2,1,3); cont;
		 *  reshape (e*s*s, seq/s^2).
		 * A cont of permute(0,2,1,3) of (a, b, c) is the (a, c, b)
		 * tensor with dst[i0 + a*(i2 + c*i1)] = src[i0 + a*(i1 + b*i2)]. */
		int64_t s = v->scale_factor, a0, b0, c0, tot = n * e;
		double *t1 = malloc((size_t)tot * sizeof(double));
		double *t2 = malloc((size_t)tot * sizeof(double));

		a0 = e * s; b0 = side / s; c0 = side;
		for (int64_t i2 = 0; i2 < c0; i2++)
			for (int64_t i1 = 0; i1 < b0; i1++)
				for (int64_t i0 = 0; i0 < a0; i0++)
					t1[i0 + a0 * (i2 + c0 * i1)] =
						x[i0 + a0 * (i1 + b0 * i2)];
		a0 = e * s * s; b0 = side / s; c0 = side / s;
		for (int64_t i2 = 0; i2 < c0; i2++)
			for (int64_t i1 = 0; i1 < b0; i1++)
				for (int64_t i0 = 0; i0 < a0; i0++)
					t2[i0 + a0 * (i2 + c0 * i1)] =
						t1[i0 + a0 * (i1 + b0 * i2)];
		ref_lin(&v->fc, NULL, t2, out, v->n_tokens);
		free(t1);
		free(t2);
	} else {
		double *m = malloc((size_t)v->n_tokens * v->n_mm_hidden *
				   sizeof(double));

		ref_lin(&v->mm0_w, &v->mm0_b, x + cls * e, m, v->n_tokens);
		for (int64_t i = 0; i < (int64_t)v->n_tokens * v->n_mm_hidden; i++)
			m[i] = ref_act(MM_MMPROJ_ACT_GELU, m[i]);
		ref_lin(&v->mm2_w, &v->mm2_b, m, out, v->n_tokens);
		free(m);
	}
	free(x);
	free(h);
	free(q);
	free(k);
	free(vv);
	free(att);
	free(ff);
	free(sc);
	return out;
}

/* ---- tests -------------------------------------------------------------- */

static float *make_pixels(size_t n, uint64_t seed)
{
	float *px = malloc(n * sizeof(float));

	for (size_t i = 0; i < n; i++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		px[i] = (float)((double)(seed >> 11) / (double)(1ull << 53) *
				2.0 - 1.0);
	}
	return px;
}

static void test_against_ref(const char *shape, uint32_t type, double tol)
{
	struct mm_mmproj *p = NULL;
	const struct mm_mmproj_vision *v;
	char err[256] = "";
	size_t size = 0, np, no;
	void *buf = gen_mem(shape, NULL, type, &size);
	float *px, *out, *out1;
	double *ref, amax = 0, emax = 0, dthr = 0;
	int ret;

	if (!buf || mm_mmproj_load_mem(buf, size, &p, err, sizeof(err))) {
		tap_ok(0, "%s %s: load: %s", shape, mm_type_name(type), err);
		free(buf);
		return;
	}
	v = mm_mmproj_vision(p);
	np = mm_vision_n_pixels(p);
	no = mm_vision_n_tokens(p) * mm_vision_n_embd_out(p);
	px = make_pixels(np, 42);
	out = calloc(no, sizeof(float));
	out1 = calloc(no, sizeof(float));
	ret = mm_vision_encode(p, px, np, out, no, 3, err, sizeof(err));
	if (!ret)
		ret = mm_vision_encode(p, px, np, out1, no, 1, err,
				       sizeof(err));
	ref = ref_encode(v, px);
	for (size_t i = 0; i < no; i++) {
		amax = fmax(amax, fabs(ref[i]));
		emax = fmax(emax, fabs(out[i] - ref[i]));
		dthr = fmax(dthr, fabs((double)out[i] - out1[i]));
	}
	tap_ok(!ret && amax > 0 && emax / amax <= tol,
	       "%s (%s, %u tokens x %u) %s: max |err| %.3g of max |ref| %.3g = %.2e <= %.0e%s%s",
	       shape, mm_mmproj_type_name(v->proj), v->n_tokens, v->n_out,
	       mm_type_name(type), emax, amax, amax > 0 ? emax / amax : 0,
	       tol, ret ? ": " : "", ret ? err : "");
	tap_ok(!ret && dthr <= 1e-6 * amax,
	       "%s %s: 1 and 3 threads agree (max diff %.2e)", shape,
	       mm_type_name(type), dthr);
	free(ref);
	free(px);
	free(out);
	free(out1);
	mm_mmproj_free(p);
	free(buf);
}

static void test_errors(void)
{
	struct mm_mmproj *p = NULL;
	char err[256] = "";
	size_t size = 0, np, no;
	void *buf = gen_mem("micro", NULL, MM_TYPE_F32, &size);
	float *px, *out;
	int ret;

	if (!buf || mm_mmproj_load_mem(buf, size, &p, err, sizeof(err))) {
		tap_ok(0, "micro: load: %s", err);
		free(buf);
		return;
	}
	np = mm_vision_n_pixels(p);
	no = mm_vision_n_tokens(p) * mm_vision_n_embd_out(p);
	tap_ok(np == 3 * 16 * 16 && mm_vision_n_tokens(p) == 1 &&
	       mm_vision_n_embd_out(p) == 32,
	       "micro: 3x16x16 floats in, 1 token x 32 out");
	px = make_pixels(np + 1, 1);
	out = calloc(no + 1, sizeof(float));
	ret = mm_vision_encode(p, px, np - 1, out, no, 1, err, sizeof(err));
	tap_ok(ret == -EINVAL &&
	       strstr(err, "767 input floats, the encoder takes 3 x 16 x 16 = 768"),
	       "short input rejected: \"%s\"", err);
	ret = mm_vision_encode(p, px, np + 1, out, no, 1, err, sizeof(err));
	tap_ok(ret == -EINVAL && strstr(err, "769 input floats"),
	       "long input rejected: \"%s\"", err);
	ret = mm_vision_encode(p, px, np, out, no + 1, 1, err, sizeof(err));
	tap_ok(ret == -EINVAL &&
	       strstr(err, "output of 33 floats, the encoder gives 1 tokens x 32 = 32"),
	       "wrong output size rejected: \"%s\"", err);
	ret = mm_vision_encode(p, NULL, np, out, no, 1, err, sizeof(err));
	tap_ok(ret == -EINVAL && strstr(err, "NULL pixels"),
	       "NULL pixels rejected: \"%s\"", err);
	mm_mmproj_free(p);
	free(buf);

	p = NULL;
	buf = gen_mem(NULL, "micro", MM_TYPE_F32, &size);
	if (!buf || mm_mmproj_load_mem(buf, size, &p, err, sizeof(err))) {
		tap_ok(0, "audio micro: load: %s", err);
	} else {
		ret = mm_vision_encode(p, px, np, out, no, 1, err,
				       sizeof(err));
		tap_ok(ret == -ENOENT && mm_vision_n_tokens(p) == 0 &&
		       mm_vision_n_pixels(p) == 0 &&
		       strstr(err, "no vision encoder"),
		       "audio-only mmproj: -ENOENT, 0 tokens: \"%s\"", err);
	}
	mm_mmproj_free(p);
	free(buf);
	free(px);
	free(out);
}

int main(void)
{
	static const char *const shapes[] = { "micro", "tiny", "tiny-mlp" };

	for (size_t i = 0; i < 3; i++) {
		test_against_ref(shapes[i], MM_TYPE_F32, 1e-5);
		test_against_ref(shapes[i], MM_TYPE_F16, 1e-5);
		test_against_ref(shapes[i], MM_TYPE_Q8_0, 5e-2);
		test_against_ref(shapes[i], MM_TYPE_Q4_K, 5e-2);
	}
	test_errors();
	return tap_done("vision");
}

// SPDX-License-Identifier: MIT
/*
 * ref_mm.c - double-precision references of the mmproj encoders and their
 * preprocessing, for tests (see ref_mm.h). Written for clarity, not
 * speed: every weight is dequantized whole, every product a plain loop.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mmproj.h"
#include "quant.h"
#include "ref_mm.h"

/* All of a weight as doubles, ne[0] per row (zeros for an absent one). */
static double *ref_w(const struct mm_mmproj_w *w)
{
	int64_t k = w->ne[0], rows = w->ne[1] * w->ne[2] * w->ne[3];
	size_t rb = mm_row_bytes((enum mm_type)w->type, k);
	double *d = calloc((size_t)(k * rows), sizeof(double));
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

/* Pre-LN transformer blocks with bidirectional attention on x[n][e]. */
static void ref_blocks(const struct mm_mmproj_block *blk, uint32_t n_layer,
		       enum mm_mmproj_act act, double eps, double *x,
		       int64_t n, int64_t e, int64_t f, int64_t nh)
{
	int64_t d = e / nh;
	double *h = malloc((size_t)(n * e) * sizeof(double));
	double *q = malloc((size_t)(n * e) * sizeof(double));
	double *k = malloc((size_t)(n * e) * sizeof(double));
	double *vv = malloc((size_t)(n * e) * sizeof(double));
	double *att = malloc((size_t)(n * e) * sizeof(double));
	double *ff = malloc((size_t)(n * f) * sizeof(double));
	double *sc = malloc((size_t)n * sizeof(double));

	for (uint32_t l = 0; l < n_layer; l++) {
		const struct mm_mmproj_block *b = &blk[l];

		memcpy(h, x, (size_t)(n * e) * sizeof(double));
		ref_ln(&b->ln1_w, &b->ln1_b, h, n, e, eps);
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
		ref_ln(&b->ln2_w, &b->ln2_b, h, n, e, eps);
		ref_lin(&b->up_w, &b->up_b, h, ff, n);
		for (int64_t i = 0; i < n * f; i++)
			ff[i] = ref_act(act, ff[i]);
		ref_lin(&b->down_w, &b->down_b, ff, h, n);
		for (int64_t i = 0; i < n * e; i++)
			x[i] += h[i];
	}
	free(h);
	free(q);
	free(k);
	free(vv);
	free(att);
	free(ff);
	free(sc);
}

double *ref_mm_vision(const struct mm_mmproj_vision *v, const float *px)
{
	int64_t S = v->image_size, P = v->patch_size, side = S / P;
	int64_t e = v->n_embd, f = v->n_ff, cls = v->class_embd.name ? 1 : 0;
	int64_t n = side * side + cls, nh = v->n_head;
	double *x = calloc((size_t)(n * e), sizeof(double));
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
				x[(py * side + pxx) * e + o] = acc;
			}
	free(W);
	free(B);
	/* clip.cpp's llava graph: the class embedding after the patches,
	 * position rows in that order; the projector takes rows 1..np (the
	 * first patch dropped, the class token kept) */
	if (cls) {
		W = ref_w(&v->class_embd);
		memcpy(x + (n - 1) * e, W, (size_t)e * sizeof(double));
		free(W);
	}
	W = ref_w(&v->pos);
	for (int64_t i = 0; i < n * e; i++)
		x[i] += W[i];
	free(W);
	if (v->pre_ln_w.name)
		ref_ln(&v->pre_ln_w, &v->pre_ln_b, x, n, e, v->eps);
	ref_blocks(v->blk, v->n_run, v->act, v->eps, x, n, e, f, nh);
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
	return out;
}


/* ---- image -------------------------------------------------------------- */

static uint8_t ref_clamp8(int v)
{
	return v < 0 ? 0 : v > 255 ? 255 : (uint8_t)v;
}

/* The whole frame as RGB bytes, w x h x 3 (malloc'd). */
static uint8_t *ref_rgb(uint32_t fmt, uint32_t w, uint32_t h,
			const uint8_t *const plane[2], const size_t stride[2])
{
	uint8_t *rgb = malloc((size_t)w * h * 3);

	if (!rgb)
		return NULL;
	for (uint32_t y = 0; y < h; y++)
		for (uint32_t x = 0; x < w; x++) {
			uint8_t *o = rgb + ((size_t)y * w + x) * 3;

			if (fmt == 0x59455247u) {		/* GREY */
				o[0] = o[1] = o[2] = plane[0][y * stride[0] + x];
			} else if (fmt == 0x33424752u) {	/* RGB3 */
				memcpy(o, plane[0] + y * stride[0] + 3 * x, 3);
			} else {				/* NV12 */
				int c = plane[0][y * stride[0] + x] - 16;
				int u = plane[1][(y / 2) * stride[1] + (x / 2) * 2] - 128;
				int v = plane[1][(y / 2) * stride[1] + (x / 2) * 2 + 1] - 128;

				o[0] = ref_clamp8((298 * c + 409 * v + 128) >> 8);
				o[1] = ref_clamp8((298 * c - 100 * u - 208 * v + 128) >> 8);
				o[2] = ref_clamp8((298 * c + 516 * u + 128) >> 8);
			}
		}
	return rgb;
}

/* clip.cpp's bilinear resize of rgb (w x h) to ow x oh bytes. */
static void ref_bilinear(const uint8_t *rgb, uint32_t w, uint32_t h,
			 uint32_t ow, uint32_t oh, uint8_t *out)
{
	float xr = (float)(w - 1) / (float)ow, yr = (float)(h - 1) / (float)oh;

	for (uint32_t y = 0; y < oh; y++)
		for (uint32_t x = 0; x < ow; x++) {
			float fx = xr * (float)x, fy = yr * (float)y;
			uint32_t x0 = (uint32_t)floorf(fx), y0 = (uint32_t)floorf(fy);
			uint32_t x1 = x0 + 1 < w ? x0 + 1 : w - 1;
			uint32_t y1 = y0 + 1 < h ? y0 + 1 : h - 1;
			float dx = fx - (float)x0, dy = fy - (float)y0;

			for (int c = 0; c < 3; c++) {
				float p00 = rgb[((size_t)y0 * w + x0) * 3 + c];
				float p01 = rgb[((size_t)y0 * w + x1) * 3 + c];
				float p10 = rgb[((size_t)y1 * w + x0) * 3 + c];
				float p11 = rgb[((size_t)y1 * w + x1) * 3 + c];
				float top = p00 + (p01 - p00) * dx;
				float bot = p10 + (p11 - p10) * dx;

				out[((size_t)y * ow + x) * 3 + c] =
					(uint8_t)(top + (bot - top) * dy);
			}
		}
}

int ref_mm_image(const struct mm_mmproj_vision *v, uint32_t fmt, uint32_t w,
		 uint32_t h, const uint8_t *const plane[2],
		 const size_t stride[2], float *out)
{
	uint32_t S = v->image_size;
	uint8_t *rgb = ref_rgb(fmt, w, h, plane, stride);
	uint8_t *sq = malloc((size_t)S * S * 3);

	if (!rgb || !sq) {
		free(rgb);
		free(sq);
		return -ENOMEM;
	}
	if (w == S && h == S) {
		memcpy(sq, rgb, (size_t)S * S * 3);
	} else if (v->proj == MM_MMPROJ_IDEFICS3) {
		ref_bilinear(rgb, w, h, S, S, sq);
	} else {
		/* LLaVA: fit inside S x S, centred on the mean colour */
		static const uint8_t fill[3] = { 122, 116, 104 };
		float sc = fminf((float)S / (float)w, (float)S / (float)h);
		uint32_t cw = (uint32_t)ceilf((float)w * sc);
		uint32_t ch = (uint32_t)ceilf((float)h * sc);
		uint8_t *in;

		cw = cw < S ? cw : S;
		ch = ch < S ? ch : S;
		in = malloc((size_t)cw * ch * 3);
		if (!in) {
			free(rgb);
			free(sq);
			return -ENOMEM;
		}
		ref_bilinear(rgb, w, h, cw, ch, in);
		for (size_t i = 0; i < (size_t)S * S; i++)
			memcpy(sq + i * 3, fill, 3);
		for (uint32_t y = 0; y < ch; y++)
			memcpy(sq + ((size_t)(y + (S - ch) / 2) * S + (S - cw) / 2) * 3,
			       in + (size_t)y * cw * 3, (size_t)cw * 3);
		free(in);
	}
	for (int c = 0; c < 3; c++)
		for (size_t i = 0; i < (size_t)S * S; i++)
			out[c * (size_t)S * S + i] =
				((float)sq[i * 3 + c] / 255.0f - v->mean[c]) /
				v->std[c];
	free(rgb);
	free(sq);
	return 0;
}

/* ---- audio -------------------------------------------------------------- */

static double ref_hz_to_mel(double f)
{
	/* Slaney: linear below 1 kHz, logarithmic above */
	return f < 1000.0 ? f * 3.0 / 200.0 :
	       15.0 + log(f / 1000.0) / (log(6.4) / 27.0);
}

static double ref_mel_to_hz(double m)
{
	return m < 15.0 ? m * 200.0 / 3.0 :
	       1000.0 * exp((m - 15.0) * (log(6.4) / 27.0));
}

double *ref_mm_mel(int n_mel, const int16_t *pcm, size_t n, int exact,
		   size_t *n_frames)
{
	const int nfft = 400, hop = 160, nb = nfft / 2 + 1;
	/* exact (mtmd): at least 31 s, frames of whole 400-sample windows,
	 * the maximum over all of them, whole 3000-frame chunks kept */
	size_t N = exact && n < 496000 ? 496000 : n;
	size_t nf = exact ? (N - nfft) / hop + 1 : (n + hop - 1) / hop;
	size_t kept = exact ? nf / 3000 * 3000 : nf;
	double *fb = calloc((size_t)n_mel * nb, sizeof(double));
	double *pts = malloc((size_t)(n_mel + 2) * sizeof(double));
	double *mel = malloc(nf * n_mel * sizeof(double));
	double *fr = malloc(nfft * sizeof(double));
	double *pw = malloc(nb * sizeof(double));
	double *tc = malloc(nfft * sizeof(double));
	double *ts = malloc(nfft * sizeof(double));
	double mx = -INFINITY;

	/* librosa.filters.mel(sr 16000, n_fft 400, htk False, norm slaney) */
	for (int i = 0; i < n_mel + 2; i++)
		pts[i] = ref_mel_to_hz(ref_hz_to_mel(8000.0) * i / (n_mel + 1));
	for (int m = 0; m < n_mel; m++)
		for (int k = 0; k < nb; k++) {
			double f = k * 16000.0 / nfft;
			double lo = (f - pts[m]) / (pts[m + 1] - pts[m]);
			double hi = (pts[m + 2] - f) / (pts[m + 2] - pts[m + 1]);
			double wgt = fmax(0.0, fmin(lo, hi));

			fb[m * nb + k] = wgt * 2.0 / (pts[m + 2] - pts[m]);
		}
	for (int j = 0; j < nfft; j++) {
		tc[j] = cos(2 * M_PI * j / nfft);
		ts[j] = sin(2 * M_PI * j / nfft);
	}
	for (size_t t = 0; t < nf; t++) {
		int zero = 1;

		for (int j = 0; j < nfft; j++) {
			long s = (long)(t * hop) + j - nfft / 2;
			double x = 0;

			if (s < 0)
				s = -s;		/* reflect */
			if ((size_t)s < n)
				x = pcm[s] / 32768.0;
			fr[j] = x * 0.5 * (1 - cos(2 * M_PI * j / nfft));
			zero &= fr[j] == 0;
		}
		for (int k = 0; k < nb; k++) {
			double re = 0, im = 0;

			for (int j = 0; !zero && j < nfft; j++) {
				re += fr[j] * tc[(j * k) % nfft];
				im -= fr[j] * ts[(j * k) % nfft];
			}
			pw[k] = re * re + im * im;
		}
		for (int m = 0; m < n_mel; m++) {
			double s = 0;

			for (int k = 0; k < nb; k++)
				s += fb[m * nb + k] * pw[k];
			s = log10(fmax(s, 1e-10));
			mel[t * n_mel + m] = s;
			mx = fmax(mx, s);
		}
	}
	for (size_t i = 0; i < kept * n_mel; i++)
		mel[i] = (fmax(mel[i], mx - 8.0) + 4.0) / 4.0;
	free(fb);
	free(pts);
	free(fr);
	free(pw);
	free(tc);
	free(ts);
	*n_frames = kept;
	return mel;
}

static double ref_gelu_erf(double x)
{
	return 0.5 * x * (1 + erf(x / sqrt(2)));
}

/* conv1d, kernel 3, padding 1: in[n][ci] -> out[(n + s - 1) / s][co] */
static double *ref_conv(const struct mm_mmproj_w *w, const struct mm_mmproj_w *b,
			const double *in, int64_t n, int64_t ci, int64_t co,
			int64_t stride, int64_t *n_out)
{
	double *W = ref_w(w), *B = ref_w(b);
	int64_t no = (n + stride - 1) / stride;
	double *out = malloc((size_t)(no * co) * sizeof(double));

	for (int64_t p = 0; p < no; p++)
		for (int64_t o = 0; o < co; o++) {
			double acc = B[o];

			for (int64_t t = 0; t < 3; t++) {
				int64_t s = p * stride + t - 1;

				if (s < 0 || s >= n)
					continue;
				for (int64_t c = 0; c < ci; c++)
					acc += W[(o * ci + c) * 3 + t] *
					       in[s * ci + c];
			}
			out[p * co + o] = ref_gelu_erf(acc);
		}
	free(W);
	free(B);
	*n_out = no;
	return out;
}

/* x[n][e] = rmsnorm(x) * g, eps 1e-6 */
static void ref_rms(const struct mm_mmproj_w *g, double *x, int64_t n,
		    int64_t e)
{
	double *G = ref_w(g);

	for (int64_t i = 0; i < n; i++) {
		double s = 0;

		for (int64_t j = 0; j < e; j++)
			s += x[i * e + j] * x[i * e + j];
		s = 1.0 / sqrt(s / e + 1e-6);
		for (int64_t j = 0; j < e; j++)
			x[i * e + j] *= s * G[j];
	}
	free(G);
}

double *ref_mm_audio(const struct mm_mmproj_audio *a, const double *mel,
		     size_t n_frames, int exact, size_t *n_tok)
{
	int64_t e = a->n_embd, n1, n2, sf = a->stack_factor, nt, in;
	int64_t hid = a->n_mm_hidden, mid = a->n_mm_mid;
	double *h1, *x, *P, *st, *m1, *m2, *out;

	h1 = ref_conv(&a->conv1_w, &a->conv1_b, mel, (int64_t)n_frames,
		      a->n_mel, e, 1, &n1);
	x = ref_conv(&a->conv2_w, &a->conv2_b, h1, n1, e, e, 2, &n2);
	free(h1);
	P = ref_w(&a->pos);
	for (int64_t i = 0; i < n2 * e; i++)
		x[i] += P[i];
	free(P);
	ref_blocks(a->blk, a->n_layer, a->act, a->eps, x, n2, e, a->n_ff,
		   a->n_head);
	ref_ln(&a->post_ln_w, &a->post_ln_b, x, n2, e, a->eps);

	/*
	 * ultravox: stack sf positions per row. How many rows: latency,
	 * every position (the last row zero-padded); exact, llama.cpp's
	 * clip_n_output_tokens() on the mel width: n_frames rounded up to
	 * a multiple of sf, / sf, / 2 (rounded down). Positions past the
	 * rows kept are dropped; a row past the positions is zero.
	 */
	if (exact)
		nt = ((int64_t)n_frames + sf - 1) / sf * sf / sf / 2;
	else
		nt = (n2 + sf - 1) / sf;
	in = e * sf;
	st = calloc((size_t)(nt * in), sizeof(double));
	memcpy(st, x, (size_t)(n2 * e < nt * in ? n2 * e : nt * in) *
	       sizeof(double));
	free(x);
	ref_rms(&a->norm_pre, st, nt, in);
	m1 = malloc((size_t)(nt * hid) * sizeof(double));
	ref_lin(&a->mlp1_w, NULL, st, m1, nt);
	free(st);
	m2 = malloc((size_t)(nt * mid) * sizeof(double));
	for (int64_t i = 0; i < nt; i++)
		for (int64_t j = 0; j < mid; j++) {
			if (a->swiglu) {
				double g = m1[i * hid + mid + j];

				m2[i * mid + j] = g / (1 + exp(-g)) *
						  m1[i * hid + j];
			} else {
				m2[i * mid + j] = ref_gelu_erf(m1[i * hid + j]);
			}
		}
	free(m1);
	ref_rms(&a->norm_mid, m2, nt, mid);
	out = malloc((size_t)(nt * a->n_out) * sizeof(double));
	ref_lin(&a->mlp2_w, NULL, m2, out, nt);
	free(m2);
	*n_tok = (size_t)nt;
	return out;
}

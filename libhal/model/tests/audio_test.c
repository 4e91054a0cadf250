// SPDX-License-Identifier: MIT
/*
 * audio_test.c - the log-mel front end and the audio encoder (audio.c)
 * against references written here in double precision:
 *
 *  - mel: the input padded into an explicit array as mtmd-audio.cpp does
 *    (reflection of 200 samples in front, zeros behind, 31 s minimum in
 *    exact mode), a naive DFT per 400-sample frame, a Slaney mel bank
 *    built the way librosa writes it (fftfreqs, mel points, ramps, slaney
 *    enorm), log10 / max - 8 / (x + 4) / 4; on tones, a two-tone mix, a
 *    chirp, a short input and silence, in both framings. Tolerance
 *    2e-4 in normalized log-mel units (f32 FFT and power against double:
 *    measured up to 3.2e-5; values below max - 8 are clamped, so the f32 error
 *    of the weakest bins does not count).
 *  - encoder + ultravox projector: a plain-loop forward (direct conv1d
 *    sums, softmax attention, LayerNorm/RMS norm, SwiGLU, frame stacking
 *    by index) over weights dequantized whole, on mmgguf gen's micro and
 *    tiny audio towers at F32, F16, Q8_0 and Q4_K. Tolerances (max |err| /
 *    max |ref|): F32/F16 weights 1e-5 (f32 arithmetic); Q8_0/Q4_K 5e-2
 *    (activations quantized to 8 bits before each matmul; measured 1.5e-2
 *    to 2.9e-2).
 *  - token counts of the exact and latency framings (whisper-tiny shape),
 *    latency frames equal to the exact mode's first frames, chunking, and
 *    bad inputs rejected with their messages.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "audio.h"
#include "gen.h"
#include "mmproj.h"
#include "quant.h"
#include "tap.h"

#define MEL_TOL 2e-4

static struct mm_mmproj *load(const char *vision, const char *audio,
			      uint32_t type, void **buf)
{
	struct mm_gen_mmproj_params gp = {
		.vision = vision, .audio = audio, .type = type, .seed = 5,
	};
	struct mm_mmproj *p = NULL;
	char err[256];
	size_t size;

	*buf = NULL;
	if (mm_gen_mmproj_mem(&gp, buf, &size, err, sizeof(err)) ||
	    mm_mmproj_load_mem(*buf, size, &p, err, sizeof(err))) {
		tap_diag("mmproj %s/%s type %u: %s", vision ? vision : "-",
			 audio ? audio : "-", type, err);
		free(*buf);
		*buf = NULL;
		return NULL;
	}
	return p;
}

/* ---- mel reference ---------------------------------------------------- */

static double r_hz_to_mel(double f)
{
	const double f_sp = 200.0 / 3, min_log_hz = 1000.0;
	const double min_log_mel = min_log_hz / f_sp;
	const double logstep = log(6.4) / 27.0;

	return f >= min_log_hz ? min_log_mel + log(f / min_log_hz) / logstep :
	       f / f_sp;
}

static double r_mel_to_hz(double m)
{
	const double f_sp = 200.0 / 3, min_log_hz = 1000.0;
	const double min_log_mel = min_log_hz / f_sp;
	const double logstep = log(6.4) / 27.0;

	return m >= min_log_mel ? min_log_hz * exp(logstep * (m - min_log_mel)) :
	       f_sp * m;
}

/* librosa.filters.mel(sr=16000, n_fft=400, n_mels, htk=False,
 * norm="slaney"): weights[m][k] */
static double *r_melbank(int n_mel)
{
	const int nb = 201;
	double *w = calloc((size_t)n_mel * nb, sizeof(double));
	double *pts = malloc((size_t)(n_mel + 2) * sizeof(double));
	double lo = r_hz_to_mel(0), hi = r_hz_to_mel(8000);

	for (int i = 0; i < n_mel + 2; i++)
		pts[i] = r_mel_to_hz(lo + (hi - lo) * i / (n_mel + 1));
	for (int m = 0; m < n_mel; m++) {
		double enorm = 2.0 / (pts[m + 2] - pts[m]);

		for (int k = 0; k < nb; k++) {
			double f = k * 16000.0 / 400;
			double lower = (f - pts[m]) / (pts[m + 1] - pts[m]);
			double upper = (pts[m + 2] - f) / (pts[m + 2] - pts[m + 1]);
			double v = fmin(lower, upper);

			w[m * nb + k] = (v > 0 ? v : 0) * enorm;
		}
	}
	free(pts);
	return w;
}

/*
 * The reference log-mel: frames [n_frames][n_mel] (the kept ones), as
 * doubles. exact: mtmd's padding and chunk rule.
 */
static double *r_mel(const int16_t *pcm, size_t n, int exact, int n_mel,
		     size_t *n_frames)
{
	size_t N = n, padded, all, kept;
	double *x, *P, *bank, *out, *tc, *ts, vmax = -1e300;

	if (exact && N < 496000)
		N = 496000;
	/* zero-extended: the reflection reads x[1..200] */
	x = calloc(N > 201 ? N : 201, sizeof(double));
	for (size_t i = 0; i < n; i++)
		x[i] = pcm[i] / 32768.0;
	padded = N + (exact ? 480000 : 0) + 400;
	P = calloc(padded, sizeof(double));
	memcpy(P + 200, x, N * sizeof(double));
	for (int i = 0; i < 200; i++)
		P[i] = x[200 - i];	/* reverse of x[1..200] */
	if (exact) {
		all = (N - 400) / 160 + 1;
		kept = all / 3000 * 3000;
	} else {
		all = kept = (n + 159) / 160;
	}
	bank = r_melbank(n_mel);
	out = malloc(all * n_mel * sizeof(double));
	tc = malloc(400 * sizeof(double));
	ts = malloc(400 * sizeof(double));
	for (int j = 0; j < 400; j++) {
		tc[j] = cos(2 * M_PI * j / 400);
		ts[j] = sin(2 * M_PI * j / 400);
	}
	for (size_t i = 0; i < all; i++) {
		double fr[400], pw[201];
		int zero = 1;

		for (int j = 0; j < 400; j++) {
			double w = 0.5 - 0.5 * cos(2 * M_PI * j / 400);

			fr[j] = w * P[i * 160 + j];
			zero &= fr[j] == 0;
		}
		for (int k = 0; k < 201; k++) {
			double re = 0, im = 0;

			for (int j = 0; !zero && j < 400; j++) {
				re += fr[j] * tc[(j * k) % 400];
				im -= fr[j] * ts[(j * k) % 400];
			}
			pw[k] = re * re + im * im;
		}
		for (int m = 0; m < n_mel; m++) {
			double s = 0;

			for (int k = 0; k < 201; k++)
				s += pw[k] * bank[m * 201 + k];
			out[i * n_mel + m] = log10(s > 1e-10 ? s : 1e-10);
			if (out[i * n_mel + m] > vmax)
				vmax = out[i * n_mel + m];
		}
	}
	for (size_t i = 0; i < kept * n_mel; i++)
		out[i] = ((out[i] < vmax - 8 ? vmax - 8 : out[i]) + 4) / 4;
	free(x);
	free(P);
	free(bank);
	free(tc);
	free(ts);
	*n_frames = kept;
	return out;
}

static int16_t *sig(const char *kind, size_t n)
{
	int16_t *s = calloc(n ? n : 1, sizeof(int16_t));

	for (size_t i = 0; i < n; i++) {
		double t = i / 16000.0, v = 0;

		if (!strcmp(kind, "tone"))
			v = 0.5 * sin(2 * M_PI * 440 * t);
		else if (!strcmp(kind, "two-tone"))
			v = 0.3 * sin(2 * M_PI * 3000 * t) +
			    0.2 * sin(2 * M_PI * 7000 * t + 1);
		else if (!strcmp(kind, "chirp"))	/* 100 Hz .. 7.9 kHz in 2 s */
			v = 0.6 * sin(2 * M_PI * (100 * t + 1950 * t * t));
		else if (!strcmp(kind, "quiet"))
			v = 1e-3 * sin(2 * M_PI * 1000 * t);
		else if (!strcmp(kind, "ends"))		/* tone, gap, tone */
			v = t < 2 || t > 60 ? 0.4 * sin(2 * M_PI * 600 * t) : 0;
		s[i] = (int16_t)lrint(v * 32767);
	}
	return s;
}

static void test_mel(const struct mm_mmproj *p, const char *kind, size_t n,
		     int exact)
{
	const int n_mel = (int)mm_mmproj_audio(p)->n_mel;
	int16_t *s = sig(kind, n);
	size_t nf = 0, rn = 0;
	float *mel = NULL;
	double *ref, emax = 0;
	char err[256];
	int ret;

	ret = mm_audio_mel(p, s, n, exact, &mel, &nf, err, sizeof(err));
	ref = r_mel(s, n, exact, n_mel, &rn);
	for (size_t i = 0; !ret && nf == rn && i < nf * n_mel; i++)
		emax = fmax(emax, fabs(mel[i] - ref[i]));
	tap_ok(!ret && nf == rn && nf == mm_audio_n_frames(p, n, exact) &&
	       emax <= MEL_TOL,
	       "log-mel %s, %zu samples, %s: %zu frames (ref %zu), max |err| %.2e <= %g%s%s",
	       kind, n, exact ? "exact" : "latency", nf, rn, emax, MEL_TOL,
	       ret ? ": " : "", ret ? err : "");
	free(mel);
	free(ref);
	free(s);
}

/* latency frames are the exact mode's first frames, bit for bit */
static void test_prefix(const struct mm_mmproj *p)
{
	int16_t *s = sig("chirp", 32000);
	float *a = NULL, *b = NULL;
	size_t na = 0, nb = 0, n_mel = mm_mmproj_audio(p)->n_mel;
	int ret;

	ret = mm_audio_mel(p, s, 32000, 0, &a, &na, NULL, 0);
	ret |= mm_audio_mel(p, s, 32000, 1, &b, &nb, NULL, 0);
	tap_ok(!ret && na == 200 && nb == 3000 &&
	       !memcmp(a, b, na * n_mel * sizeof(float)),
	       "2 s chirp: the 200 latency frames equal the first of the exact mode's %zu",
	       nb);
	free(a);
	free(b);
	free(s);
}

/* ---- encoder reference ------------------------------------------------ */

static double *r_w(const struct mm_mmproj_w *w)
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
static void r_lin(const struct mm_mmproj_w *w, const struct mm_mmproj_w *b,
		  const double *x, double *y, int64_t n)
{
	int64_t k = w->ne[0], m = w->ne[1];
	double *W = r_w(w), *B = b && b->name ? r_w(b) : NULL;

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

static void r_ln(const struct mm_mmproj_w *g, const struct mm_mmproj_w *b,
		 double *x, int64_t n, int64_t e, double eps)
{
	double *G = r_w(g), *B = r_w(b);

	for (int64_t i = 0; i < n; i++) {
		double mu = 0, var = 0, *r = x + i * e;

		for (int64_t j = 0; j < e; j++)
			mu += r[j] / e;
		for (int64_t j = 0; j < e; j++)
			var += (r[j] - mu) * (r[j] - mu) / e;
		for (int64_t j = 0; j < e; j++)
			r[j] = (r[j] - mu) / sqrt(var + eps) * G[j] + B[j];
	}
	free(G);
	free(B);
}

static void r_rms(const struct mm_mmproj_w *g, double *x, int64_t n, int64_t e)
{
	double *G = g->name ? r_w(g) : NULL;

	for (int64_t i = 0; i < n; i++) {
		double ss = 0, *r = x + i * e;

		for (int64_t j = 0; j < e; j++)
			ss += r[j] * r[j];
		for (int64_t j = 0; j < e; j++)
			r[j] = r[j] / sqrt(ss / e + 1e-6) * (G ? G[j] : 1);
	}
	free(G);
}

static double r_gelu(double v)
{
	return 0.5 * v * (1 + erf(v / sqrt(2.0)));
}

/* conv1d k 3, pad 1, stride st: in [T][ci] -> out [To][co]; W {3, ci, co} */
static void r_conv(const struct mm_mmproj_w *w, const struct mm_mmproj_w *b,
		   const double *in, int64_t T, int64_t ci, int64_t st,
		   double *out, int64_t To)
{
	int64_t co = w->ne[2];
	double *W = r_w(w), *B = r_w(b);

	for (int64_t t = 0; t < To; t++)
		for (int64_t o = 0; o < co; o++) {
			double acc = B[o];

			for (int64_t c = 0; c < ci; c++)
				for (int64_t k = 0; k < 3; k++) {
					int64_t s = t * st + k - 1;

					if (s >= 0 && s < T)
						acc += W[(o * ci + c) * 3 + k] *
						       in[s * ci + c];
				}
			out[t * co + o] = r_gelu(acc);
		}
	free(W);
	free(B);
}

static double *r_encode(const struct mm_mmproj_audio *a, const float *mel,
			int64_t T, int64_t *n_tok)
{
	const int64_t nm = a->n_mel, e = a->n_embd, f = a->n_ff;
	const int64_t Pn = (T - 1) / 2 + 1, sf = a->stack_factor;
	const int64_t G = (Pn + sf - 1) / sf, H = a->n_mm_hidden;
	const int64_t M = a->n_mm_mid, nh = a->n_head, d = e / nh;
	double *in = malloc((size_t)(T * nm) * sizeof(double));
	double *c1 = malloc((size_t)(T * e) * sizeof(double));
	double *x = malloc((size_t)(Pn * e) * sizeof(double));
	double *t1 = malloc((size_t)(Pn * e) * sizeof(double));
	double *q = malloc((size_t)(Pn * e) * sizeof(double));
	double *k = malloc((size_t)(Pn * e) * sizeof(double));
	double *v = malloc((size_t)(Pn * e) * sizeof(double));
	double *att = malloc((size_t)(Pn * e) * sizeof(double));
	double *ff = malloc((size_t)(Pn * f) * sizeof(double));
	double *sc = malloc((size_t)Pn * sizeof(double));
	double *st = calloc((size_t)(G * sf * e), sizeof(double));
	double *hid = malloc((size_t)(G * H) * sizeof(double));
	double *mid = malloc((size_t)(G * M) * sizeof(double));
	double *out = malloc((size_t)(G * a->n_out) * sizeof(double));
	double *pos = r_w(&a->pos);

	for (int64_t i = 0; i < T * nm; i++)
		in[i] = mel[i];
	r_conv(&a->conv1_w, &a->conv1_b, in, T, nm, 1, c1, T);
	r_conv(&a->conv2_w, &a->conv2_b, c1, T, e, 2, x, Pn);
	for (int64_t i = 0; i < Pn * e; i++)
		x[i] += pos[i];
	for (uint32_t l = 0; l < a->n_layer; l++) {
		const struct mm_mmproj_block *b = &a->blk[l];

		memcpy(t1, x, (size_t)(Pn * e) * sizeof(double));
		r_ln(&b->ln1_w, &b->ln1_b, t1, Pn, e, a->eps);
		r_lin(&b->q_w, &b->q_b, t1, q, Pn);
		r_lin(&b->k_w, &b->k_b, t1, k, Pn);
		r_lin(&b->v_w, &b->v_b, t1, v, Pn);
		for (int64_t h = 0; h < nh; h++)
			for (int64_t i = 0; i < Pn; i++) {
				double mx = -1e300, sum = 0;

				for (int64_t j = 0; j < Pn; j++) {
					double dot = 0;

					for (int64_t c = 0; c < d; c++)
						dot += q[i * e + h * d + c] *
						       k[j * e + h * d + c];
					sc[j] = dot / sqrt((double)d);
					mx = fmax(mx, sc[j]);
				}
				for (int64_t j = 0; j < Pn; j++)
					sum += sc[j] = exp(sc[j] - mx);
				for (int64_t c = 0; c < d; c++) {
					double o = 0;

					for (int64_t j = 0; j < Pn; j++)
						o += sc[j] / sum *
						     v[j * e + h * d + c];
					att[i * e + h * d + c] = o;
				}
			}
		r_lin(&b->o_w, &b->o_b, att, t1, Pn);
		for (int64_t i = 0; i < Pn * e; i++)
			x[i] += t1[i];
		memcpy(t1, x, (size_t)(Pn * e) * sizeof(double));
		r_ln(&b->ln2_w, &b->ln2_b, t1, Pn, e, a->eps);
		r_lin(&b->up_w, &b->up_b, t1, ff, Pn);
		for (int64_t i = 0; i < Pn * f; i++)
			ff[i] = r_gelu(ff[i]);
		r_lin(&b->down_w, &b->down_b, ff, t1, Pn);
		for (int64_t i = 0; i < Pn * e; i++)
			x[i] += t1[i];
	}
	r_ln(&a->post_ln_w, &a->post_ln_b, x, Pn, e, a->eps);
	/* stacked row g, column j: position g sf + j / e, channel j % e */
	for (int64_t g = 0; g < G; g++)
		for (int64_t j = 0; j < sf * e; j++) {
			int64_t ps = g * sf + j / e;

			st[g * sf * e + j] = ps < Pn ? x[ps * e + j % e] : 0;
		}
	r_rms(&a->norm_pre, st, G, sf * e);
	r_lin(&a->mlp1_w, NULL, st, hid, G);
	for (int64_t g = 0; g < G; g++)
		for (int64_t j = 0; j < M; j++) {
			if (M * 2 == H) {
				double b2 = hid[g * H + M + j];

				mid[g * M + j] = b2 / (1 + exp(-b2)) *
						 hid[g * H + j];
			} else {
				mid[g * M + j] = r_gelu(hid[g * H + j]);
			}
		}
	r_rms(&a->norm_mid, mid, G, M);
	r_lin(&a->mlp2_w, NULL, mid, out, G);
	free(in); free(c1); free(x); free(t1); free(q); free(k); free(v);
	free(att); free(ff); free(sc); free(st); free(hid); free(mid);
	free(pos);
	*n_tok = G;
	return out;
}

static const char *tname(uint32_t t)
{
	return mm_type_name((enum mm_type)t);
}

static void test_encode(const char *shape, uint32_t type, size_t n_samples,
			double tol)
{
	void *buf;
	struct mm_mmproj *p = load(NULL, shape, type, &buf);
	const struct mm_mmproj_audio *a = p ? mm_mmproj_audio(p) : NULL;
	int16_t *s = sig("chirp", n_samples);
	float *mel = NULL, *out = NULL, *out3 = NULL;
	size_t nf = 0, nt, no;
	double *ref = NULL, emax = 0, amax = 0, d3 = 0;
	int64_t rt = 0;
	char err[256] = "";
	int ret = -1;

	if (!a) {
		tap_ok(0, "audio %s %s: no mmproj", shape, tname(type));
		tap_ok(0, "audio %s %s: threads", shape, tname(type));
		goto done;
	}
	ret = mm_audio_mel(p, s, n_samples, 0, &mel, &nf, err, sizeof(err));
	nt = mm_audio_n_tokens(p, nf);
	no = nt * mm_audio_n_embd_out(p);
	out = malloc((no ? no : 1) * sizeof(float));
	out3 = malloc((no ? no : 1) * sizeof(float));
	if (!ret)
		ret = mm_audio_encode(p, mel, nf, out, no, 1, err, sizeof(err));
	if (!ret)
		ret = mm_audio_encode(p, mel, nf, out3, no, 3, err, sizeof(err));
	if (!ret) {
		ref = r_encode(a, mel, (int64_t)nf, &rt);
		for (size_t i = 0; rt == (int64_t)nt && i < no; i++) {
			emax = fmax(emax, fabs(out[i] - ref[i]));
			amax = fmax(amax, fabs(ref[i]));
			d3 = fmax(d3, fabs(out[i] - out3[i]));
		}
	}
	tap_ok(!ret && nt && rt == (int64_t)nt && amax > 0 &&
	       emax / amax <= tol,
	       "audio %s (%zu frames, %zu tokens x %u, %s) %s: max |err| %.3g of max |ref| %.3g = %.2e <= %g%s%s",
	       shape, nf, nt, a->n_out, a->swiglu ? "SwiGLU" : "GELU",
	       tname(type), emax, amax, amax > 0 ? emax / amax : 0, tol,
	       ret ? ": " : "", ret ? err : "");
	tap_ok(!ret && d3 == 0, "audio %s %s: 1 and 3 threads agree (max diff %.2e)",
	       shape, tname(type), d3);
done:
	free(ref);
	free(out);
	free(out3);
	free(mel);
	free(s);
	mm_mmproj_free(p);
	free(buf);
}

/* ---- counts and errors ------------------------------------------------ */

static void test_counts(void)
{
	void *buf;
	struct mm_mmproj *p = load(NULL, "whisper-tiny", MM_TYPE_F16, &buf);
	const struct mm_mmproj_audio *a = p ? mm_mmproj_audio(p) : NULL;
	/* mtmd: N = max(n, 31 s); (N - 400) / 160 + 1 frames; whole 3000s */
	size_t n2 = 2 * 16000, n61 = 61 * 16000, n59 = 59 * 16000;
	size_t e2 = (496000 - 400) / 160 + 1, e61 = (n61 - 400) / 160 + 1;
	size_t sf = a ? a->stack_factor : 1;

	if (!a) {
		tap_ok(0, "whisper-tiny mmproj");
		return;
	}
	tap_ok(mm_audio_n_frames(p, n2, 1) == e2 / 3000 * 3000 &&
	       mm_audio_n_frames(p, n59, 1) == 3000 &&
	       mm_audio_n_frames(p, n61, 1) == e61 / 3000 * 3000 &&
	       mm_audio_n_chunks(mm_audio_n_frames(p, n61, 1)) == 2,
	       "exact frames: 2 s -> %zu, 59 s -> %zu (one chunk, as mtmd), 61 s -> %zu (%zu chunks)",
	       mm_audio_n_frames(p, n2, 1), mm_audio_n_frames(p, n59, 1),
	       mm_audio_n_frames(p, n61, 1),
	       mm_audio_n_chunks(mm_audio_n_frames(p, n61, 1)));
	tap_ok(mm_audio_n_frames(p, n2, 0) == 200 &&
	       mm_audio_n_frames(p, 1, 0) == 1 &&
	       mm_audio_n_frames(p, 161, 0) == 2 &&
	       mm_audio_n_frames(p, n61, 0) == 6100 &&
	       mm_audio_n_chunks(6100) == 3,
	       "latency frames: ceil(n / 160): 2 s -> 200, 1 sample -> 1, 161 -> 2, 61 s -> 6100 (3 chunks)");
	tap_ok(mm_audio_n_tokens(p, 3000) == (1500 + sf - 1) / sf &&
	       mm_audio_n_tokens(p, 200) == (100 + sf - 1) / sf &&
	       mm_audio_n_tokens(p, 201) == (101 + sf - 1) / sf &&
	       mm_audio_n_tokens(p, 1) == 1 &&
	       mm_audio_n_tokens(p, 3001) == 0 && mm_audio_n_tokens(p, 0) == 0,
	       "whisper-tiny tokens (stack %zu): exact 30 s window %zu, latency 2 s %zu, 201 frames %zu, 3001 frames 0",
	       sf, mm_audio_n_tokens(p, 3000), mm_audio_n_tokens(p, 200),
	       mm_audio_n_tokens(p, 201));
	{
		float dummy[1];
		const float *c = NULL;
		size_t n0 = mm_audio_chunk(p, dummy, 6100, 0, &c);
		size_t n2c = mm_audio_chunk(p, dummy, 6100, 2, &c);
		const float *c2 = c;
		size_t n3 = mm_audio_chunk(p, dummy, 6100, 3, &c);

		tap_ok(n0 == 3000 && n2c == 100 &&
		       c2 == dummy + 6000 * a->n_mel && n3 == 0 && !c,
		       "chunks of 6100 frames: 3000, ..., 100 at frame 6000; chunk 3 none");
	}
	mm_mmproj_free(p);
	free(buf);
}

static void test_errors(void)
{
	void *buf, *vbuf;
	struct mm_mmproj *p = load(NULL, "micro", MM_TYPE_F32, &buf);
	struct mm_mmproj *v = load("micro", NULL, MM_TYPE_F32, &vbuf);
	int16_t pcm[320] = { 0 };
	float mel[8 * 40] = { 0 }, out[64 * 32];
	float *m = NULL;
	size_t nf = 0;
	char err[256];
	int ret;

	if (!p || !v) {
		tap_ok(0, "micro mmprojs");
		goto out;
	}
	ret = mm_audio_mel(NULL, pcm, 320, 1, &m, &nf, err, sizeof(err));
	tap_ok(ret == -EINVAL && err[0], "mel: NULL mmproj: \"%s\"", err);
	ret = mm_audio_mel(v, pcm, 320, 1, &m, &nf, err, sizeof(err));
	tap_ok(ret == -ENOENT && strstr(err, "no audio encoder") &&
	       !mm_audio_n_frames(v, 320, 1) && !mm_audio_n_tokens(v, 10),
	       "mel: vision-only mmproj: -ENOENT: \"%s\"", err);
	ret = mm_audio_mel(p, NULL, 320, 1, &m, &nf, err, sizeof(err));
	tap_ok(ret == -EINVAL && strstr(err, "NULL samples"),
	       "mel: NULL samples: \"%s\"", err);
	ret = mm_audio_mel(p, pcm, 0, 0, &m, &nf, err, sizeof(err));
	tap_ok(ret == -EINVAL && strstr(err, "no samples") && !m && !nf,
	       "mel: 0 samples: \"%s\"", err);
	ret = mm_audio_mel(p, pcm, 320, 0, NULL, &nf, err, sizeof(err));
	tap_ok(ret == -EINVAL && strstr(err, "NULL mel"),
	       "mel: NULL output: \"%s\"", err);

	ret = mm_audio_encode(v, mel, 10, out, 32, 1, err, sizeof(err));
	tap_ok(ret == -ENOENT && strstr(err, "no audio encoder"),
	       "encode: vision-only mmproj: \"%s\"", err);
	ret = mm_audio_encode(p, NULL, 10, out, 96, 1, err, sizeof(err));
	tap_ok(ret == -EINVAL && strstr(err, "NULL mel"),
	       "encode: NULL mel: \"%s\"", err);
	ret = mm_audio_encode(p, mel, 10, NULL, 96, 1, err, sizeof(err));
	tap_ok(ret == -EINVAL && strstr(err, "NULL output"),
	       "encode: NULL output: \"%s\"", err);
	ret = mm_audio_encode(p, mel, 0, out, 0, 1, err, sizeof(err));
	tap_ok(ret == -EINVAL && strstr(err, "0 mel frames"),
	       "encode: 0 frames: \"%s\"", err);
	ret = mm_audio_encode(p, mel, 33, out, 64 * 32, 1, err, sizeof(err));
	tap_ok(ret == -EINVAL && strstr(err, "33 mel frames"),
	       "encode: 33 frames for 16 positions: \"%s\"", err);
	ret = mm_audio_encode(p, mel, 10, out, 97, 1, err, sizeof(err));
	tap_ok(ret == -EINVAL && strstr(err, "output of 97 floats"),
	       "encode: wrong output size: \"%s\"", err);
out:
	mm_mmproj_free(p);
	mm_mmproj_free(v);
	free(buf);
	free(vbuf);
}

int main(void)
{
	void *buf;
	struct mm_mmproj *p = load(NULL, "whisper-tiny", MM_TYPE_F16, &buf);
	static const uint32_t types[] = { MM_TYPE_F32, MM_TYPE_F16,
					  MM_TYPE_Q8_0, MM_TYPE_Q4_K };

	if (p) {
		test_mel(p, "tone", 32000, 0);
		test_mel(p, "tone", 32000, 1);
		test_mel(p, "two-tone", 24000, 0);
		test_mel(p, "chirp", 32000, 0);
		test_mel(p, "chirp", 32000, 1);
		test_mel(p, "quiet", 16000, 0);
		test_mel(p, "silence", 16000, 0);
		test_mel(p, "silence", 16000, 1);
		test_mel(p, "tone", 100, 0);	/* shorter than the reflection */
		test_mel(p, "ends", 61 * 16000, 1);	/* two chunks */
		test_prefix(p);
		mm_mmproj_free(p);
		free(buf);
	} else {
		tap_ok(0, "whisper-tiny mmproj for the mel tests");
	}
	{	/* another bank size: micro's 8 mel bins */
		void *b2;
		struct mm_mmproj *q = load(NULL, "micro", MM_TYPE_F32, &b2);

		if (q)
			test_mel(q, "chirp", 8000, 0);
		else
			tap_ok(0, "micro mmproj");
		mm_mmproj_free(q);
		free(b2);
	}
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		double tol = types[i] == MM_TYPE_F32 || types[i] == MM_TYPE_F16 ?
			     1e-5 : 5e-2;

		/* micro: 16 positions, 31 frames; tiny: 64, 101 frames (odd:
		 * a short last stack group) */
		test_encode("micro", types[i], 31 * 160, tol);
		test_encode("tiny", types[i], 101 * 160, tol);
	}
	test_counts();
	test_errors();
	return tap_done("audio");
}

// SPDX-License-Identifier: MIT
/*
 * audio.c - the log-mel front end and the Whisper-style audio encoder with
 * its ultravox projector (see audio.h).
 *
 * The FFT is FFTW3's single-precision real-to-complex transform of 400
 * points: one plan made once (FFTW's planner is not thread-safe, so under
 * pthread_once), run with fftwf_execute_dft_r2c() on per-call arrays from
 * fftwf_malloc() (the alignment the plan was made for), which FFTW allows
 * from any number of threads at once.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <fftw3.h>

#include "audio.h"
#include "calib.h"
#include "encoder.h"
#include "gguf.h"
#include "quant.h"

#define AU_BINS		(MM_AUDIO_N_FFT / 2 + 1)
#define AU_PAD		(MM_AUDIO_N_FFT / 2)	/* centre: 200 samples */
#define AU_LOG_FLOOR	1e-10
#define AU_RMS_EPS	1e-6f	/* ultravox projector norms (clip.cpp) */

/* ---- sizes ------------------------------------------------------------ */

static const struct mm_mmproj_audio *au_get(const struct mm_mmproj *p)
{
	return p ? mm_mmproj_audio(p) : NULL;
}

/* Frames computed (normalized together) for n samples. */
static size_t au_frames_all(size_t n, int exact)
{
	if (!n)
		return 0;
	if (!exact)
		return (n + MM_AUDIO_HOP - 1) / MM_AUDIO_HOP;
	if (n < MM_AUDIO_EXACT_MIN)
		n = MM_AUDIO_EXACT_MIN;
	return (n - MM_AUDIO_N_FFT) / MM_AUDIO_HOP + 1;
}

/* Frames kept: exact mode drops an incomplete last chunk (mtmd). */
static size_t au_frames_kept(size_t n, int exact)
{
	size_t all = au_frames_all(n, exact);

	return exact ? all / MM_AUDIO_CHUNK_FRAMES * MM_AUDIO_CHUNK_FRAMES :
		       all;
}

size_t mm_audio_n_frames(const struct mm_mmproj *p, size_t n, int exact)
{
	return au_get(p) && n <= INT_MAX ? au_frames_kept(n, exact) : 0;
}

size_t mm_audio_n_chunks(size_t n_frames)
{
	return (n_frames + MM_AUDIO_CHUNK_FRAMES - 1) / MM_AUDIO_CHUNK_FRAMES;
}

size_t mm_audio_chunk(const struct mm_mmproj *p, const float *mel,
		      size_t n_frames, size_t k, const float **chunk)
{
	const struct mm_mmproj_audio *a = au_get(p);
	size_t f0 = k * MM_AUDIO_CHUNK_FRAMES;

	if (chunk)
		*chunk = NULL;
	if (!a || !mel || k >= mm_audio_n_chunks(n_frames))
		return 0;
	if (chunk)
		*chunk = mel + f0 * a->n_mel;
	return n_frames - f0 < MM_AUDIO_CHUNK_FRAMES ? n_frames - f0 :
	       MM_AUDIO_CHUNK_FRAMES;
}

static size_t au_n_pos(size_t n_frames)
{
	return (n_frames + 1) / 2;	/* conv k 3, stride 2, pad 1 */
}

size_t mm_audio_n_tokens(const struct mm_mmproj *p, size_t n_frames,
			 int exact)
{
	const struct mm_mmproj_audio *a = au_get(p);
	size_t np = au_n_pos(n_frames), sf;

	if (!a || !n_frames || np > a->n_pos)
		return 0;
	sf = a->stack_factor;
	/* exact: clip_n_output_tokens(), on the frames before the conv */
	if (exact)
		return (n_frames + sf - 1) / sf / 2;
	return (np + sf - 1) / sf;
}

size_t mm_audio_n_embd_out(const struct mm_mmproj *p)
{
	const struct mm_mmproj_audio *a = au_get(p);

	return a ? a->n_out : 0;
}

/* ---- front end -------------------------------------------------------- */

static pthread_once_t au_plan_once = PTHREAD_ONCE_INIT;
static fftwf_plan au_plan;

static void au_plan_make(void)
{
	float *in = fftwf_malloc(MM_AUDIO_N_FFT * sizeof(float));
	fftwf_complex *out = fftwf_malloc(AU_BINS * sizeof(fftwf_complex));

	if (in && out)
		au_plan = fftwf_plan_dft_r2c_1d(MM_AUDIO_N_FFT, in, out,
						FFTW_ESTIMATE);
	fftwf_free(in);
	fftwf_free(out);
}

/* One mel filter: weights w[0..k1-k0) over FFT bins [k0, k1). */
struct au_filt {
	int k0, k1;
	float w[AU_BINS];
};

static double au_hz_to_mel(double f)
{
	/* Slaney: linear below 1 kHz, logarithmic above */
	return f < 1000.0 ? f * 3.0 / 200.0 :
	       15.0 + log(f / 1000.0) / (log(6.4) / 27.0);
}

static double au_mel_to_hz(double m)
{
	return m < 15.0 ? m * 200.0 / 3.0 :
	       1000.0 * exp((m - 15.0) * (log(6.4) / 27.0));
}

/*
 * librosa.filters.mel(sr 16000, n_fft 400, n_mels, htk=False,
 * norm="slaney"), as mtmd-audio.cpp builds it: n_mel + 2 edges evenly
 * spaced in mel from 0 Hz to 8 kHz, triangles over the bin frequencies
 * k * 40 Hz, scaled by 2 / (right - left).
 */
static void au_filters(struct au_filt *fb, int n_mel)
{
	const double mhi = au_hz_to_mel(MM_AUDIO_RATE / 2.0);

	for (int m = 0; m < n_mel; m++) {
		double fl = au_mel_to_hz(mhi * m / (n_mel + 1));
		double fc = au_mel_to_hz(mhi * (m + 1) / (n_mel + 1));
		double fr = au_mel_to_hz(mhi * (m + 2) / (n_mel + 1));
		double dl = fmax(1e-30, fc - fl), dr = fmax(1e-30, fr - fc);
		double en = 2.0 / fmax(1e-30, fr - fl);
		struct au_filt *f = &fb[m];

		f->k0 = AU_BINS;
		f->k1 = 0;
		for (int k = 0; k < AU_BINS; k++) {
			double hz = k * (double)MM_AUDIO_RATE / MM_AUDIO_N_FFT;
			double w = 0;

			if (hz >= fl && hz <= fc)
				w = (hz - fl) / dl;
			else if (hz > fc && hz <= fr)
				w = (fr - hz) / dr;
			if (w > 0) {
				if (k < f->k0)
					f->k0 = k;
				f->k1 = k + 1;
			}
			f->w[k] = (float)(w * en);
		}
		if (f->k0 > f->k1)
			f->k0 = f->k1;
		/* weights relative to k0 */
		memmove(f->w, f->w + f->k0,
			(size_t)(f->k1 - f->k0) * sizeof(float));
	}
}

/* The front end on S16 (pcm) or float (f32, already x) samples. */
static int au_mel(const struct mm_mmproj *p, const int16_t *pcm,
		  const float *f32, size_t n, int exact, float **mel,
		  size_t *n_frames, char *err, size_t errlen)
{
	const struct mm_mmproj_audio *a = au_get(p);
	struct au_filt *fb = NULL;
	float *in = NULL, *data = NULL, hann[MM_AUDIO_N_FFT], pw[AU_BINS];
	fftwf_complex *out = NULL;
	size_t all, kept, n_mel;
	float vmax = -INFINITY;
	int ret = 0;

	if (err && errlen)
		err[0] = 0;
	if (mel)
		*mel = NULL;
	if (n_frames)
		*n_frames = 0;
	if (!a)
		return mm_errf(p ? -ENOENT : -EINVAL, err, errlen,
			       p ? "the mmproj has no audio encoder" :
			       "audio mel: NULL mmproj");
	if ((!pcm && !f32) || !mel || !n_frames)
		return mm_errf(-EINVAL, err, errlen, "audio mel: NULL %s",
			       !pcm && !f32 ? "samples" : !mel ? "mel" :
			       "n_frames");
	if (!n)
		return mm_errf(-EINVAL, err, errlen, "audio mel: no samples");
	if (n > INT_MAX)
		return mm_errf(-EINVAL, err, errlen,
			       "audio mel: %zu samples, at most %d", n, INT_MAX);
	pthread_once(&au_plan_once, au_plan_make);
	if (!au_plan)
		return mm_errf(-ENOMEM, err, errlen,
			       "audio mel: FFTW could not plan a %d-point transform",
			       MM_AUDIO_N_FFT);

	n_mel = a->n_mel;
	all = au_frames_all(n, exact);
	kept = au_frames_kept(n, exact);
	fb = malloc((size_t)n_mel * sizeof(*fb));
	in = fftwf_malloc(MM_AUDIO_N_FFT * sizeof(float));
	out = fftwf_malloc(AU_BINS * sizeof(fftwf_complex));
	data = malloc(all * n_mel * sizeof(float));
	if (!fb || !in || !out || !data) {
		ret = mm_errf(-ENOMEM, err, errlen, "audio mel: out of memory");
		goto fail;
	}
	au_filters(fb, (int)n_mel);
	for (int j = 0; j < MM_AUDIO_N_FFT; j++)	/* periodic Hann */
		hann[j] = (float)(0.5 * (1.0 - cos(2.0 * M_PI * j /
						   MM_AUDIO_N_FFT)));

	for (size_t i = 0; i < all; i++) {
		/* frame i covers samples 160 i - 200 .. 160 i + 199 */
		const long s0 = (long)(i * MM_AUDIO_HOP) - AU_PAD;
		float *row = data + i * n_mel;

		if (s0 >= (long)n) {
			/* all zero: the power is 0, the floor is taken */
			for (size_t m = 0; m < n_mel; m++)
				row[m] = (float)log10(AU_LOG_FLOOR);
			if (row[0] > vmax)
				vmax = row[0];
			continue;
		}
		for (int j = 0; j < MM_AUDIO_N_FFT; j++) {
			long s = s0 + j;
			float v;

			if (s < 0)	/* reflection of x[1..200] */
				s = -s;
			v = s >= (long)n ? 0.0f : pcm ? pcm[s] / 32768.0f :
			    f32[s];
			in[j] = hann[j] * v;
		}
		fftwf_execute_dft_r2c(au_plan, in, out);
		for (int k = 0; k < AU_BINS; k++)
			pw[k] = out[k][0] * out[k][0] + out[k][1] * out[k][1];
		for (size_t m = 0; m < n_mel; m++) {
			const struct au_filt *f = &fb[m];
			double sum = 0;

			for (int k = f->k0; k < f->k1; k++)
				sum += (double)pw[k] * f->w[k - f->k0];
			row[m] = (float)log10(fmax(sum, AU_LOG_FLOOR));
			if (row[m] > vmax)
				vmax = row[m];
		}
	}
	/* clamp to max - 8 over every frame computed, then (x + 4) / 4 */
	{
		const double lo = (double)vmax - 8.0;

		for (size_t i = 0; i < kept * n_mel; i++) {
			double v = data[i] < lo ? lo : data[i];

			data[i] = (float)((v + 4.0) / 4.0);
		}
	}
	if (!kept) {
		ret = mm_errf(-EINVAL, err, errlen,
			      "audio mel: %zu samples give no complete 30 s chunk",
			      n);
		goto fail;
	}
	if (kept < all) {
		float *t = realloc(data, kept * n_mel * sizeof(float));

		if (t)
			data = t;
	}
	*mel = data;
	*n_frames = kept;
	data = NULL;
fail:
	free(fb);
	fftwf_free(in);
	fftwf_free(out);
	free(data);
	return ret;
}

int mm_audio_mel(const struct mm_mmproj *p, const int16_t *pcm, size_t n,
		 int exact, float **mel, size_t *n_frames, char *err,
		 size_t errlen)
{
	return au_mel(p, pcm, NULL, n, exact, mel, n_frames, err, errlen);
}

int mm_audio_mel_f32(const struct mm_mmproj *p, const float *x, size_t n,
		     int exact, float **mel, size_t *n_frames, char *err,
		     size_t errlen)
{
	return au_mel(p, NULL, x, n, exact, mel, n_frames, err, errlen);
}

/* ---- encoder ---------------------------------------------------------- */

static int64_t au_max(int64_t a, int64_t b)
{
	return a > b ? a : b;
}

int mm_audio_encode(const struct mm_mmproj *p, const float *mel,
		    size_t n_frames, int exact, float *out, size_t n_out,
		    int n_threads, char *err, size_t errlen)
{
	return mm_audio_encode_cal(p, NULL, 0, mel, n_frames, exact, out,
				   n_out, n_threads, err, errlen);
}

int mm_audio_encode_cal(const struct mm_mmproj *p, struct mm_calib *cal,
			int mode, const float *mel, size_t n_frames,
			int exact, float *out, size_t n_out, int n_threads,
			char *err, size_t errlen)
{
	return mm_audio_encode_dev(p, cal, mode, NULL, mel, n_frames, exact,
				   out, n_out, n_threads, err, errlen);
}

int mm_audio_encode_dev(const struct mm_mmproj *p, struct mm_calib *cal,
			int mode, const struct mm_enc_dev *dev,
			const float *mel, size_t n_frames, int exact,
			float *out, size_t n_out, int n_threads, char *err,
			size_t errlen)
{
	const struct mm_mmproj_audio *a = au_get(p);
	struct mm_enc s = { 0 };
	struct mm_enc_bufs bufs;
	size_t n_tok;
	int ret;

	if (err && errlen)
		err[0] = 0;
	if (!a)
		return mm_errf(p ? -ENOENT : -EINVAL, err, errlen,
			       p ? "the mmproj has no audio encoder" :
			       "audio encode: NULL mmproj");
	if (!mel || !out)
		return mm_errf(-EINVAL, err, errlen, "audio encode: NULL %s",
			       mel ? "output" : "mel");
	if (!n_frames || au_n_pos(n_frames) > a->n_pos)
		return mm_errf(-EINVAL, err, errlen,
			       "audio encode: %zu mel frames, the encoder takes 1 to %u (tensor a.position_embd.weight has %u positions)",
			       n_frames, 2 * a->n_pos, a->n_pos);
	n_tok = mm_audio_n_tokens(p, n_frames, exact);
	if (!n_tok)
		return mm_errf(-EINVAL, err, errlen,
			       "audio encode: %zu mel frames give no token in exact mode (stack factor %u)",
			       n_frames, a->stack_factor);
	if (n_out != n_tok * a->n_out)
		return mm_errf(-EINVAL, err, errlen,
			       "audio encode: output of %zu floats, %zu frames give %zu tokens x %u = %zu",
			       n_out, n_frames, n_tok, a->n_out,
			       n_tok * a->n_out);

	const int64_t T = (int64_t)n_frames, P = (int64_t)au_n_pos(n_frames);
	const int64_t nm = a->n_mel, e = a->n_embd, f = a->n_ff;
	const int64_t sf = a->stack_factor, G = (int64_t)n_tok;
	const int64_t H = a->n_mm_hidden, M = a->n_mm_mid, no = a->n_out;
	const int64_t ncol = au_max(T * 3 * nm, P * 3 * e);
	int64_t wide = au_max(au_max(e, f), au_max(sf * e, au_max(H, no)));
	float *col = NULL, *c1 = NULL, *x = NULL, *hid = NULL;

	ret = mm_enc_init(&s, n_threads, wide, "audio encode", err, errlen);
	if (ret)
		return ret;
	s.cal = cal;
	s.cal_hooks = &mm_cal_enc_hooks;
	s.cal_mode = mode;
	s.dev = mode ? NULL : dev;
	col = malloc((size_t)ncol * sizeof(float));
	c1 = malloc((size_t)(T * e) * sizeof(float));
	/* P rows for the encoder, G * sf for the stacking: exact mode may
	 * keep fewer positions than it computed */
	x = calloc((size_t)(au_max(P, G * sf) * e), sizeof(float));
	hid = malloc((size_t)(G * H) * sizeof(float));
	bufs.h = malloc((size_t)(P * e) * sizeof(float));
	bufs.q = malloc((size_t)(P * e) * sizeof(float));
	bufs.k = malloc((size_t)(P * e) * sizeof(float));
	bufs.v = malloc((size_t)(P * e) * sizeof(float));
	bufs.big = malloc((size_t)(P * au_max(e, f)) * sizeof(float));
	if (!col || !c1 || !x || !hid || !bufs.h || !bufs.q || !bufs.k ||
	    !bufs.v || !bufs.big) {
		ret = mm_errf(-ENOMEM, err, errlen, "audio encode: out of memory");
		goto out;
	}

	/* conv1 (k 3, pad 1) as im2col + GEMM: the weight {3, n_mel, e}
	 * is e rows of (channel, tap) */
	for (int64_t t = 0; t < T; t++)
		for (int64_t c = 0; c < nm; c++)
			for (int64_t k = 0; k < 3; k++) {
				int64_t src = t + k - 1;

				col[t * 3 * nm + c * 3 + k] =
					src >= 0 && src < T ? mel[src * nm + c] : 0;
			}
	mm_enc_matmul_w(&s, &a->conv1_w, col, c1, e, 3 * nm, T);
	mm_enc_bias(&s, &a->conv1_b, c1, T, e);
	mm_enc_act(&s, MM_MMPROJ_ACT_GELU_ERF, c1, T * e);

	/* conv2 (k 3, stride 2, pad 1) */
	for (int64_t q = 0; q < P; q++)
		for (int64_t c = 0; c < e; c++)
			for (int64_t k = 0; k < 3; k++) {
				int64_t src = 2 * q + k - 1;

				col[q * 3 * e + c * 3 + k] =
					src >= 0 && src < T ? c1[src * e + c] : 0;
			}
	mm_enc_matmul_w(&s, &a->conv2_w, col, x, e, 3 * e, P);
	mm_enc_bias(&s, &a->conv2_b, x, P, e);
	mm_enc_act(&s, MM_MMPROJ_ACT_GELU_ERF, x, P * e);

	/* + position embeddings 0..P-1 (fewer than the file's in latency
	 * mode, as whisper.cpp's audio_ctx) */
	for (int64_t t = 0; t < P; t++) {
		mm_enc_row(&a->pos, t, s.tmp, e);
		for (int64_t j = 0; j < e; j++)
			x[t * e + j] += s.tmp[j];
	}

	for (uint32_t l = 0; l < a->n_layer && !ret; l++)
		ret = mm_enc_block(&s, &a->blk[l], x, P, e, f, a->n_head, a->act,
				   a->eps, &bufs);
	if (ret) {
		mm_errf(0, err, errlen, ret == -ENOENT ?
			"audio encode: the calibration lacks an attention point" :
			"audio encode: out of memory");
		goto out;
	}
	if (a->post_ln_w.name)
		mm_enc_layernorm(&s, &a->post_ln_w, &a->post_ln_b, x, x, P, e,
				 a->eps);

	/* ultravox: stack sf positions per row: rows G * sf .. P - 1 are
	 * not read (exact mode's dropped positions), rows P .. G * sf - 1
	 * are the zero padding of the last group */
	if (G * sf > P)
		memset(x + P * e, 0,
		       (size_t)((G * sf - P) * e) * sizeof(float));
	mm_enc_rmsnorm(&s, &a->norm_pre, x, x, G, sf * e, AU_RMS_EPS);
	mm_enc_linear(&s, &a->mlp1_w, NULL, x, hid, G);
	if (a->swiglu) {
		/* silu of the second half times the first half, rows
		 * compacted in place to M = H / 2 */
		for (int64_t g = 0; g < G; g++)
			for (int64_t j = 0; j < M; j++)
				hid[g * M + j] = mm_enc_act1(MM_MMPROJ_ACT_SILU,
							     hid[g * H + M + j]) *
						 hid[g * H + j];
	} else {
		mm_enc_act(&s, MM_MMPROJ_ACT_GELU_ERF, hid, G * H);
	}
	mm_enc_rmsnorm(&s, &a->norm_mid, hid, hid, G, M, AU_RMS_EPS);
	mm_enc_linear(&s, &a->mlp2_w, NULL, hid, out, G);
	if (s.cal_err)
		ret = mm_errf(s.cal_err, err, errlen, s.cal_err == -ENOENT ?
			      "audio encode: a weight is not a point of the calibration" :
			      "audio encode: out of memory");
out:
	free(col);
	free(c1);
	free(x);
	free(hid);
	free(bufs.h);
	free(bufs.q);
	free(bufs.k);
	free(bufs.v);
	free(bufs.big);
	mm_enc_fini(&s);
	return ret;
}

// SPDX-License-Identifier: MIT
/*
 * audio_test.c - the log-mel front end and the audio encoder (audio.c)
 * against the double-precision references of tests/ref_mm.c:
 *
 *  - mel: the input framed as mtmd-audio.cpp does (reflection of 200
 *    samples in front, zeros behind, 31 s minimum in exact mode), a naive
 *    DFT per 400-sample frame, a Slaney mel bank
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
#include "tests/tap.h"

#include "ref_mm.c"

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
	ref = ref_mm_mel(n_mel, s, n, exact, &rn);
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

static const char *tname(uint32_t t)
{
	return mm_type_name((enum mm_type)t);
}

/*
 * Encodes the first window of n_samples of a chirp in one framing against
 * the double reference; exact: the 3000-frame window, stacked as llama.cpp
 * counts (clip_n_output_tokens()).
 */
static void test_encode(const char *shape, uint32_t type, size_t n_samples,
			int exact, double tol)
{
	void *buf;
	struct mm_mmproj *p = load(NULL, shape, type, &buf);
	const struct mm_mmproj_audio *a = p ? mm_mmproj_audio(p) : NULL;
	int16_t *s = sig("chirp", n_samples);
	float *mel = NULL, *out = NULL, *out3 = NULL;
	size_t nf = 0, nt, no, rt = 0;
	double *ref = NULL, *dmel = NULL, emax = 0, amax = 0, d3 = 0;
	char err[256] = "";
	int ret = -1;

	if (!a) {
		tap_ok(0, "audio %s %s: no mmproj", shape, tname(type));
		tap_ok(0, "audio %s %s: threads", shape, tname(type));
		goto done;
	}
	ret = mm_audio_mel(p, s, n_samples, exact, &mel, &nf, err,
			   sizeof(err));
	if (nf > MM_AUDIO_CHUNK_FRAMES)
		nf = MM_AUDIO_CHUNK_FRAMES;	/* the first window */
	nt = mm_audio_n_tokens(p, nf, exact);
	no = nt * mm_audio_n_embd_out(p);
	out = malloc((no ? no : 1) * sizeof(float));
	out3 = malloc((no ? no : 1) * sizeof(float));
	if (!ret)
		ret = mm_audio_encode(p, mel, nf, exact, out, no, 1, err,
				      sizeof(err));
	if (!ret)
		ret = mm_audio_encode(p, mel, nf, exact, out3, no, 3, err,
				      sizeof(err));
	if (!ret) {
		dmel = malloc(nf * a->n_mel * sizeof(double));
		for (size_t i = 0; i < nf * a->n_mel; i++)
			dmel[i] = mel[i];
		ref = ref_mm_audio(a, dmel, nf, exact, &rt);
		for (size_t i = 0; rt == nt && i < no; i++) {
			emax = fmax(emax, fabs(out[i] - ref[i]));
			amax = fmax(amax, fabs(ref[i]));
			d3 = fmax(d3, fabs(out[i] - out3[i]));
		}
	}
	tap_ok(!ret && nt && rt == nt && amax > 0 &&
	       emax / amax <= tol,
	       "audio %s %s (%zu frames, %zu tokens x %u, stack %u, %s) %s: max |err| %.3g of max |ref| %.3g = %.2e <= %g%s%s",
	       shape, exact ? "exact" : "latency", nf, nt, a->n_out,
	       a->stack_factor, a->swiglu ? "SwiGLU" : "GELU", tname(type),
	       emax, amax, amax > 0 ? emax / amax : 0, tol, ret ? ": " : "",
	       ret ? err : "");
	tap_ok(!ret && d3 == 0, "audio %s %s %s: 1 and 3 threads agree (max diff %.2e)",
	       shape, exact ? "exact" : "latency", tname(type), d3);
done:
	free(ref);
	free(dmel);
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
	/* exact: clip_n_output_tokens(): align the frames up to the stack
	 * factor, / stack factor, / 2 (the conv's stride), rounded down */
	tap_ok(mm_audio_n_tokens(p, 3000, 1) == (3000 + sf - 1) / sf * sf /
						sf / 2 &&
	       mm_audio_n_tokens(p, 3000, 1) < (1500 + sf - 1) / sf &&
	       mm_audio_n_tokens(p, 3001, 1) == 0 &&
	       mm_audio_n_tokens(p, 0, 1) == 0 &&
	       mm_audio_n_tokens(p, sf, 1) == 0,
	       "whisper-tiny exact tokens (stack %zu): 30 s window %zu as mtmd (not the %zu groups of 1500 positions the last one zero-padded), 3001 frames 0, %zu frames 0",
	       sf, mm_audio_n_tokens(p, 3000, 1), (1500 + sf - 1) / sf, sf);
	tap_ok(mm_audio_n_tokens(p, 3000, 0) == (1500 + sf - 1) / sf &&
	       mm_audio_n_tokens(p, 200, 0) == (100 + sf - 1) / sf &&
	       mm_audio_n_tokens(p, 201, 0) == (101 + sf - 1) / sf &&
	       mm_audio_n_tokens(p, 1, 0) == 1 &&
	       mm_audio_n_tokens(p, 3001, 0) == 0 &&
	       mm_audio_n_tokens(p, 0, 0) == 0,
	       "whisper-tiny latency tokens (stack %zu, every position, the last group zero-padded): 3000 frames %zu, 2 s %zu, 201 frames %zu, 3001 frames 0",
	       sf, mm_audio_n_tokens(p, 3000, 0), mm_audio_n_tokens(p, 200, 0),
	       mm_audio_n_tokens(p, 201, 0));
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
	       !mm_audio_n_frames(v, 320, 1) && !mm_audio_n_tokens(v, 10, 0),
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

	ret = mm_audio_encode(v, mel, 10, 0, out, 32, 1, err, sizeof(err));
	tap_ok(ret == -ENOENT && strstr(err, "no audio encoder"),
	       "encode: vision-only mmproj: \"%s\"", err);
	ret = mm_audio_encode(p, NULL, 10, 0, out, 96, 1, err, sizeof(err));
	tap_ok(ret == -EINVAL && strstr(err, "NULL mel"),
	       "encode: NULL mel: \"%s\"", err);
	ret = mm_audio_encode(p, mel, 10, 0, NULL, 96, 1, err, sizeof(err));
	tap_ok(ret == -EINVAL && strstr(err, "NULL output"),
	       "encode: NULL output: \"%s\"", err);
	ret = mm_audio_encode(p, mel, 0, 0, out, 0, 1, err, sizeof(err));
	tap_ok(ret == -EINVAL && strstr(err, "0 mel frames"),
	       "encode: 0 frames: \"%s\"", err);
	ret = mm_audio_encode(p, mel, 33, 0, out, 64 * 32, 1, err, sizeof(err));
	tap_ok(ret == -EINVAL && strstr(err, "33 mel frames"),
	       "encode: 33 frames for 16 positions: \"%s\"", err);
	ret = mm_audio_encode(p, mel, 10, 0, out, 97, 1, err, sizeof(err));
	tap_ok(ret == -EINVAL && strstr(err, "output of 97 floats"),
	       "encode: wrong output size: \"%s\"", err);
	/* exact mode: micro's stack 2, 2 frames -> ceil(2 / 2) / 2 = 0 */
	ret = mm_audio_encode(p, mel, 2, 1, out, 32, 1, err, sizeof(err));
	tap_ok(ret == -EINVAL && strstr(err, "no token in exact mode"),
	       "encode: exact mode, 2 frames at stack 2: no token: \"%s\"",
	       err);
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
		test_encode("micro", types[i], 31 * 160, 0, tol);
		test_encode("tiny", types[i], 101 * 160, 0, tol);
	}
	/* exact mode: a 1 s clip padded to a 30 s window, 1500 positions:
	 * stack 8 keeps 187 groups (the last 4 positions dropped), stack 9
	 * keeps 167 (the last group zero-padded), as mtmd */
	test_encode("tiny-30s", MM_TYPE_F32, 16000, 1, 1e-5);
	test_encode("tiny-30s", MM_TYPE_F16, 16000, 1, 1e-5);
	test_encode("tiny-30s-s9", MM_TYPE_F32, 16000, 1, 1e-5);
	test_counts();
	test_errors();
	return tap_done("audio");
}

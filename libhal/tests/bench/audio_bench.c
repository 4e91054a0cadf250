// SPDX-License-Identifier: MIT
/*
 * audio_bench.c - the audio front end and encoder on a Whisper-tiny-shaped
 * mmproj (mmgguf gen --audio whisper-tiny: 80 mel bins, 384 wide, 4
 * blocks, ultravox stack 8, SwiGLU into 576) at Q8_0 (override with
 * -t TYPE), generated in memory: seconds per window and real-time factor
 * (encode time / audio time; < 1 is faster than real time) for a 2 s
 * window in latency mode and a 30 s window in exact mode, and the mel
 * front end alone. Median of -r runs (default 5; 3 for 30 s). Then the
 * latency mode's difference from the exact mode on the same 2 s. One line
 * per figure.
 *
 *   audio_bench [-t f32|f16|q8_0|q4_K] [-j THREADS] [-r RUNS]
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "audio.h"
#include "gen.h"
#include "mmproj.h"
#include "quant.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(double), cmp);
	return v[n / 2];
}

/* speech-like test signal: a gliding harmonic tone with a 4 Hz envelope */
static int16_t *signal_make(size_t n)
{
	int16_t *s = malloc(n * sizeof(int16_t));

	for (size_t i = 0; i < n; i++) {
		double t = i / 16000.0, f0 = 120 + 40 * sin(2 * M_PI * 0.5 * t);
		double v = 0;

		for (int h = 1; h <= 8; h++)
			v += sin(2 * M_PI * f0 * h * t) / h;
		v *= 0.2 * (0.6 + 0.4 * sin(2 * M_PI * 4 * t));
		s[i] = (int16_t)lrint(v * 32767 * 0.5);
	}
	return s;
}

static int run(const struct mm_mmproj *p, const char *label, double secs,
	       int exact, int nth, int runs)
{
	size_t n = (size_t)(secs * 16000), nf = 0;
	int16_t *pcm = signal_make(n);
	double tm[16], te[16];
	size_t nt = 0, no;
	char err[256];
	int ret = 0;

	for (int r = 0; r < runs && !ret; r++) {
		float *mel = NULL, *out;
		double t0 = now(), t1;

		ret = mm_audio_mel(p, pcm, n, exact, &mel, &nf, err, sizeof(err));
		t1 = now();
		if (ret)
			break;
		/* the first chunk: 30 s (exact) or the whole 2 s window */
		nf = nf > MM_AUDIO_CHUNK_FRAMES ? MM_AUDIO_CHUNK_FRAMES : nf;
		nt = mm_audio_n_tokens(p, nf, exact);
		no = nt * mm_audio_n_embd_out(p);
		out = malloc(no * sizeof(float));
		ret = mm_audio_encode(p, mel, nf, exact, out, no, nth, err,
				      sizeof(err));
		tm[r] = t1 - t0;
		te[r] = now() - t1;
		free(out);
		free(mel);
	}
	if (ret) {
		fprintf(stderr, "audio_bench: %s: %s\n", label, err);
		free(pcm);
		return 1;
	}
	double m = median(tm, runs), e = median(te, runs);

	printf("audio %s mel front end: %.2f ms (%zu frames)\n", label,
	       m * 1e3, nf);
	printf("audio %s encode: %.3f s per window (%zu frames -> %zu tokens)\n",
	       label, e, nf, nt);
	printf("audio %s real-time factor (mel + encode) / audio: %.3f\n",
	       label, (m + e) / secs);
	free(pcm);
	return 0;
}

/*
 * Latency vs exact on the same 2 s of audio: the latency window's tokens
 * against the first tokens of the exact mode's 30 s window (the same
 * audio, then zero padding the latency mode does not attend to).
 */
static int compare(const struct mm_mmproj *p, int nth)
{
	size_t n = 2 * 16000, nl = 0, nx = 0, d = mm_audio_n_embd_out(p);
	int16_t *pcm = signal_make(n);
	float *ml = NULL, *mx = NULL, *ol = NULL, *ox = NULL;
	size_t tl = 0, tx = 0;
	double emax = 0, amax = 0, cmin = 1, csum = 0;
	char err[256] = "";
	int ret;

	ret = mm_audio_mel(p, pcm, n, 0, &ml, &nl, err, sizeof(err));
	if (!ret)
		ret = mm_audio_mel(p, pcm, n, 1, &mx, &nx, err, sizeof(err));
	if (!ret) {
		nx = MM_AUDIO_CHUNK_FRAMES;
		tl = mm_audio_n_tokens(p, nl, 0);
		tx = mm_audio_n_tokens(p, nx, 1);
		ol = malloc(tl * d * sizeof(float));
		ox = malloc(tx * d * sizeof(float));
		ret = mm_audio_encode(p, ml, nl, 0, ol, tl * d, nth, err,
				      sizeof(err));
	}
	if (!ret)
		ret = mm_audio_encode(p, mx, nx, 1, ox, tx * d, nth, err,
				      sizeof(err));
	for (size_t t = 0; !ret && t < tl; t++) {
		double dot = 0, na = 0, nb = 0;

		for (size_t j = 0; j < d; j++) {
			double a = ol[t * d + j], b = ox[t * d + j];

			dot += a * b;
			na += a * a;
			nb += b * b;
			emax = fmax(emax, fabs(a - b));
			amax = fmax(amax, fabs(b));
		}
		dot /= sqrt(na * nb);
		cmin = fmin(cmin, dot);
		csum += dot;
	}
	if (ret)
		fprintf(stderr, "audio_bench: latency vs exact: %s\n", err);
	else
		printf("audio latency vs exact, 2 s: %zu tokens vs the first %zu of %zu: max |diff| / max |exact| %.3f, cosine mean %.4f min %.4f\n",
		       tl, tl, tx, emax / amax, csum / tl, cmin);
	free(pcm);
	free(ml);
	free(mx);
	free(ol);
	free(ox);
	return ret ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct mm_gen_mmproj_params gp = { .audio = "whisper-tiny",
					   .type = MM_TYPE_Q8_0, .seed = 1 };
	struct mm_mmproj *p = NULL;
	int nth = 0, runs = 5, rc = 0;
	void *buf = NULL;
	size_t size;
	char err[256];

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "-j"))
			nth = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "-r"))
			runs = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "-t")) {
			const char *t = argv[i + 1];

			gp.type = !strcmp(t, "f32") ? MM_TYPE_F32 :
				  !strcmp(t, "f16") ? MM_TYPE_F16 :
				  !strcmp(t, "q4_K") ? MM_TYPE_Q4_K : MM_TYPE_Q8_0;
		}
	}
	if (runs < 1 || runs > 15)
		runs = 5;
	if (mm_gen_mmproj_mem(&gp, &buf, &size, err, sizeof(err)) ||
	    mm_mmproj_load_mem(buf, size, &p, err, sizeof(err))) {
		fprintf(stderr, "audio_bench: whisper-tiny mmproj: %s\n", err);
		return 1;
	}
	if (nth > 0)
		printf("audio whisper-tiny %s, %d threads\n",
		       mm_type_name((enum mm_type)gp.type), nth);
	else
		printf("audio whisper-tiny %s, all online CPUs\n",
		       mm_type_name((enum mm_type)gp.type));
	rc |= run(p, "2 s latency", 2.0, 0, nth, runs);
	rc |= run(p, "30 s exact", 30.0, 1, nth, runs < 3 ? runs : 3);
	rc |= compare(p, nth);
	mm_mmproj_free(p);
	free(buf);
	return rc;
}

// SPDX-License-Identifier: MIT
/*
 * mm_bench.c - the multimodal path end to end, as a camera + microphone
 * caller runs it: a 224x224 NV12 frame and 2 s of 16 kHz audio encoded,
 * then a chat prompt with both and 32 tokens of text evaluated, to the
 * first token; P50/P95 over the runs, where the time goes, peak RSS.
 *
 *   mm_bench DIR [-t threads] [-r runs] [-g path/to/mmgguf]
 *
 * DIR holds the generated files, made when missing (with mmgguf when -g
 * is given, else in process) and reused:
 *   smolvlm-llm-f16.gguf   SmolLM2-135M shape, vocab with SmolVLM's image
 *                          tokens (mmgguf gen --tokenizer smolvlm)
 *   smolvlm-llm-q8_0.gguf  its Q8_0 quantization (mmgguf quantize)
 *   mmproj-smolvlm224-whisper-tiny-q8_0.gguf  SigLIP-B/16 at 224 px
 *                          (idefics3, 49 tokens) + Whisper-tiny audio
 *                          (ultravox), Q8_0
 * Audio is measured both ways: the latency mode (the 2 s window at its own
 * length) and the exact mode (mtmd's 30 s window). Each configuration
 * runs in a forked child so that its ru_maxrss is its own.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gen.h"
#include "mmhal_model.h"
#include "quant.h"
#include "ref_llama.h"

#define MAX_RUNS 200

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int exists(const char *p)
{
	struct stat sb;

	return !stat(p, &sb) && sb.st_size > 0;
}

static int run_tool(char **argv)
{
	int st;
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (!pid) {
		execv(argv[0], argv);
		perror(argv[0]);
		_exit(127);
	}
	if (waitpid(pid, &st, 0) < 0)
		return -errno;
	return WIFEXITED(st) && !WEXITSTATUS(st) ? 0 : -EIO;
}

/* In process, in a child (the generator's memory stays out of our RSS). */
static int make_in_child(const char *what, const char *src, const char *dst)
{
	int st;
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (!pid) {
		char err[256] = "";
		int r, fb = 0;

		if (!strcmp(what, "llm")) {
			struct mm_gen_params gp = {
				.shape = "smollm2-135m", .tokenizer = "smolvlm",
				.type = MM_TYPE_F16, .seed = 1,
			};

			r = mm_gen_model(&gp, dst, err, sizeof(err));
		} else if (!strcmp(what, "q8")) {
			r = ref_quantize_file(src, dst, MM_TYPE_Q8_0, &fb, err,
					      sizeof(err));
		} else {
			struct mm_gen_mmproj_params mp = {
				.vision = "smolvlm-224", .audio = "whisper-tiny",
				.type = MM_TYPE_Q8_0, .seed = 1,
			};

			r = mm_gen_mmproj(&mp, dst, err, sizeof(err));
		}
		if (r)
			fprintf(stderr, "mm_bench: %s: %s\n", dst, err);
		_exit(r ? 1 : 0);
	}
	if (waitpid(pid, &st, 0) < 0)
		return -errno;
	return WIFEXITED(st) && !WEXITSTATUS(st) ? 0 : -EIO;
}

static int make_files(const char *dir, const char *mmgguf, char *llm,
		      char *proj, size_t cap)
{
	char f16[512];
	double t0;
	int r = 0;

	snprintf(f16, sizeof(f16), "%s/smolvlm-llm-f16.gguf", dir);
	snprintf(llm, cap, "%s/smolvlm-llm-q8_0.gguf", dir);
	snprintf(proj, cap, "%s/mmproj-smolvlm224-whisper-tiny-q8_0.gguf", dir);
	if (!exists(llm)) {
		if (!exists(f16)) {
			char *gen[] = { (char *)mmgguf, "gen", "--shape",
					"smollm2-135m", "--tokenizer", "smolvlm",
					"--type", "f16", "-o", f16, NULL };

			t0 = now_ms();
			r = mmgguf ? run_tool(gen) : make_in_child("llm", NULL, f16);
			printf("# made %s in %.1f s\n", f16, (now_ms() - t0) / 1e3);
		}
		if (!r) {
			char *qz[] = { (char *)mmgguf, "quantize", f16, llm,
				       "--type", "q8_0", NULL };

			t0 = now_ms();
			r = mmgguf ? run_tool(qz) : make_in_child("q8", f16, llm);
			printf("# made %s in %.1f s\n", llm, (now_ms() - t0) / 1e3);
		}
	}
	if (!r && !exists(proj)) {
		char *gen[] = { (char *)mmgguf, "gen", "--vision", "smolvlm-224",
				"--audio", "whisper-tiny", "--type", "q8_0",
				"-o", proj, NULL };

		t0 = now_ms();
		r = mmgguf ? run_tool(gen) : make_in_child("proj", NULL, proj);
		printf("# made %s in %.1f s\n", proj, (now_ms() - t0) / 1e3);
	}
	return r;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* nearest-rank percentile */
static double pct(const double *v, int n, double p)
{
	double s[MAX_RUNS];
	int k;

	memcpy(s, v, (size_t)n * sizeof(double));
	qsort(s, (size_t)n, sizeof(double), cmp_d);
	k = (int)ceil(p / 100.0 * n) - 1;
	return s[k < 0 ? 0 : k];
}

struct cfg {
	const char *llm, *proj;
	int threads, runs, exact;
};

struct res {
	double ttft[MAX_RUNS];
	double pre_img, pre_aud, enc_img, enc_aud, prefill, sample, decode;
	int n_pos, img_rows, aud_rows, text_tokens;
	double peak_rss_mb, load_ms;
	uint64_t file_bytes, kv_bytes;
	int ok;
};

static int argmax(const float *x, int n)
{
	int b = 0;

	for (int i = 1; i < n; i++)
		if (x[i] > x[b])
			b = i;
	return b;
}

/* A prompt text of exactly n tokens: the first n tokens of some English,
 * decoded (checked by encoding it again). */
static char *text_of(const struct mmhal_model *m, int n)
{
	static const char src[] =
		"Describe the picture and the sound in one short sentence, "
		"then say what the speaker wants from us and whether the "
		"room in the picture is the one where the sound was "
		"recorded, and how sure you are about it.";
	int32_t ids[256];
	size_t cap = 4096, len;
	char *s = malloc(cap);
	int k = 0;

	if (!s || mmhal_model_tokenize(m, src, strlen(src), 0, 1, ids, 256, &k) ||
	    k < n || mmhal_model_detokenize(m, ids, n, s, cap, &len) ||
	    mmhal_model_tokenize(m, s, len, 0, 1, ids, 256, &k) || k != n) {
		free(s);
		return NULL;
	}
	return s;
}

static void run_cfg(const struct cfg *c, struct res *r)
{
	struct mmhal_model_params mp = mmhal_model_default_params();
	struct mmhal_mmproj_params pp = mmhal_mmproj_default_params();
	struct mmhal_model *m = NULL;
	struct mmhal_mmproj *p = NULL;
	struct mmhal_model_info mi;
	struct mmhal_mmproj_info pi = { .size = sizeof(pi) };
	struct mmhal_ctx *ctx;
	char err[256] = "", *text = NULL, user[4096], prompt[8192];
	uint8_t *y = NULL, *uv = NULL;
	int16_t *pcm = NULL;
	float *lg = NULL;
	size_t len;
	const size_t n_pcm = 32000;
	struct rusage ru;
	double t0;
	int32_t ids[64];
	int n;

	memset(r, 0, sizeof(*r));
	mp.n_threads = c->threads;
	mp.n_ctx = 1024;
	pp.n_threads = c->threads;
	pp.audio_exact = c->exact;
	t0 = now_ms();
	if (mmhal_model_load(c->llm, &mp, &m, err, sizeof(err)) ||
	    mmhal_mmproj_load(c->proj, m, &pp, &p, err, sizeof(err))) {
		fprintf(stderr, "mm_bench: %s\n", err);
		goto out;
	}
	r->load_ms = now_ms() - t0;
	mmhal_model_info(m, &mi);
	mmhal_mmproj_info(p, &pi);
	r->file_bytes = mi.file_bytes + pi.file_bytes;
	r->kv_bytes = mi.kv_bytes;
	lg = malloc(sizeof(float) * mi.n_vocab);

	/* a 224x224 NV12 frame and 2 s of speech-like tones */
	y = malloc(224 * 224);
	uv = malloc(224 * 112);
	pcm = malloc(n_pcm * sizeof(int16_t));
	for (int i = 0; i < 224 * 224; i++)
		y[i] = (uint8_t)(16 + (i % 224) * 200 / 224 + (i / 224) % 17);
	for (int i = 0; i < 224 * 112; i++)
		uv[i] = (uint8_t)(128 + (i % 37) - 18);
	for (size_t i = 0; i < n_pcm; i++) {
		double t = i / 16000.0;

		pcm[i] = (int16_t)(8000 * sin(2 * M_PI * (180 + 60 * sin(3 * t)) * t) *
				   (0.6 + 0.4 * sin(2 * M_PI * 4 * t)));
	}
	text = text_of(m, 32);
	if (!text || !lg || !y || !uv || !pcm)
		goto out;
	mmhal_model_tokenize(m, text, strlen(text), 0, 1, ids, 64,
			     &r->text_tokens);
	snprintf(user, sizeof(user), "%s%s\n%s", MMHAL_MEDIA_MARKER,
		 MMHAL_MEDIA_MARKER, text);
	if (mmhal_model_chat_format(m, &(struct mmhal_chat_msg){ "user", user },
				    1, 1, prompt, sizeof(prompt), &len)) {
		fprintf(stderr, "mm_bench: chat template failed\n");
		goto out;
	}
	ctx = mmhal_model_ctx(m);
	for (int run = -1; run < c->runs; run++) {
		struct mmhal_image img = {
			.format = MMHAL_IMAGE_NV12, .width = 224, .height = 224,
			.plane = { y, uv }, .stride = { 224, 224 },
		};
		struct mmhal_audio au = { pcm, n_pcm, 16000 };
		struct mmhal_chunk *ch[2] = { NULL, NULL };
		struct mmhal_chunk_info ci = { .size = sizeof(ci) };
		struct mmhal_chunk_info ca = { .size = sizeof(ca) };
		double ts, tp, tq, tf, td;
		int32_t tok;

		mmhal_ctx_reset(ctx);
		ts = now_ms();
		if (mmhal_encode_image(p, &img, &ch[0], err, sizeof(err)) ||
		    mmhal_encode_audio(p, &au, &ch[1], err, sizeof(err))) {
			fprintf(stderr, "mm_bench: %s\n", err);
			mmhal_chunk_free(ch[0]);
			goto out;
		}
		tp = now_ms();
		if (mmhal_ctx_eval_prompt(ctx, prompt,
					  (const struct mmhal_chunk *const *)ch,
					  2, 0, lg)) {
			fprintf(stderr, "mm_bench: prompt: %s\n",
				mmhal_ctx_error(ctx));
			mmhal_chunk_free(ch[0]);
			mmhal_chunk_free(ch[1]);
			goto out;
		}
		tq = now_ms();
		tok = argmax(lg, mi.n_vocab);
		tf = now_ms();
		n = mmhal_ctx_eval(ctx, &tok, 1, lg);
		td = now_ms();
		mmhal_chunk_info(ch[0], &ci);
		mmhal_chunk_info(ch[1], &ca);
		mmhal_chunk_free(ch[0]);
		mmhal_chunk_free(ch[1]);
		if (n)
			goto out;
		if (run < 0)
			continue;	/* warm-up */
		r->ttft[run] = tf - ts;
		r->pre_img += ci.preprocess_ms / c->runs;
		r->pre_aud += ca.preprocess_ms / c->runs;
		r->enc_img += ci.encode_ms / c->runs;
		r->enc_aud += ca.encode_ms / c->runs;
		r->prefill += (tq - tp) / c->runs;
		r->sample += (tf - tq) / c->runs;
		r->decode += (td - tf) / c->runs;
		r->n_pos = mmhal_ctx_n_past(ctx) - 1;
		r->img_rows = ci.n_embd_rows;
		r->aud_rows = ca.n_embd_rows;
	}
	getrusage(RUSAGE_SELF, &ru);
	r->peak_rss_mb = ru.ru_maxrss / 1024.0;
	r->ok = 1;
out:
	free(text);
	free(lg);
	free(y);
	free(uv);
	free(pcm);
	mmhal_mmproj_free(p);
	mmhal_model_free(m);
}

static int in_child(const struct cfg *c, struct res *r)
{
	int fd[2], st;
	pid_t pid;
	ssize_t got = 0, k;

	if (pipe(fd))
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (!pid) {
		close(fd[0]);
		run_cfg(c, r);
		for (size_t o = 0; o < sizeof(*r);) {
			ssize_t w = write(fd[1], (char *)r + o, sizeof(*r) - o);

			if (w <= 0)
				_exit(1);
			o += (size_t)w;
		}
		_exit(0);
	}
	close(fd[1]);
	while ((size_t)got < sizeof(*r) &&
	       (k = read(fd[0], (char *)r + got, sizeof(*r) - (size_t)got)) > 0)
		got += k;
	close(fd[0]);
	waitpid(pid, &st, 0);
	return (size_t)got == sizeof(*r) && r->ok ? 0 : -EIO;
}

int main(int argc, char **argv)
{
	const char *dir = NULL, *mmgguf = NULL;
	char llm[512], proj[512];
	struct cfg c = { .threads = 0, .runs = 20 };
	static struct res r;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-t") && i + 1 < argc)
			c.threads = atoi(argv[++i]);
		else if (!strcmp(argv[i], "-r") && i + 1 < argc)
			c.runs = atoi(argv[++i]);
		else if (!strcmp(argv[i], "-g") && i + 1 < argc)
			mmgguf = argv[++i];
		else if (argv[i][0] != '-' && !dir)
			dir = argv[i];
		else
			dir = NULL, i = argc;
	}
	if (!dir || c.runs < 1 || c.runs > MAX_RUNS) {
		fprintf(stderr, "usage: mm_bench DIR [-t threads] [-r runs (1..%d)] [-g mmgguf]\n",
			MAX_RUNS);
		return 2;
	}
	if (make_files(dir, mmgguf, llm, proj, sizeof(llm)))
		return 1;
	c.llm = llm;
	c.proj = proj;
	printf("# mm_bench: %s + %s, %d threads (%ld CPUs online), %d runs after 1 warm-up\n",
	       llm, proj, c.threads > 0 ? c.threads : (int)ncpu, ncpu, c.runs);
	for (int exact = 0; exact < 2; exact++) {
		c.exact = exact;
		if (in_child(&c, &r)) {
			printf("not ok - %s audio: the run failed\n",
			       exact ? "exact" : "latency");
			return 1;
		}
		printf("%s audio (2 s %s): image 224 px NV12 (%d embeddings) + audio (%d embeddings) + %d text tokens = %d positions\n",
		       exact ? "exact" : "latency",
		       exact ? "in mtmd's 30 s window" : "at its own length",
		       r.img_rows, r.aud_rows, r.text_tokens, r.n_pos);
		printf("  first token: P50 %.1f ms, P95 %.1f ms (min %.1f, max %.1f)\n",
		       pct(r.ttft, c.runs, 50), pct(r.ttft, c.runs, 95),
		       pct(r.ttft, c.runs, 0), pct(r.ttft, c.runs, 100));
		printf("  where (mean ms): image preprocess %.2f, vision encode %.1f, audio mel %.2f, audio encode %.1f, prefill %.1f, sample %.2f; then first decode %.1f\n",
		       r.pre_img, r.enc_img, r.pre_aud, r.enc_aud, r.prefill,
		       r.sample, r.decode);
		printf("  peak RSS %.1f MB (files %.1f MB, KV cache %.1f MB allocated for 1024 positions), load %.0f ms\n",
		       r.peak_rss_mb * 1.048576, r.file_bytes / 1e6,
		       r.kv_bytes / 1e6, r.load_ms);
	}
	return 0;
}

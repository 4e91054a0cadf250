// SPDX-License-Identifier: MIT
/*
 * mm_bench.c - the multimodal path end to end as a session asks about a
 * camera and a microphone (mmhal_session.h), with frames from a file:
 * an NV12 640x480 frame and a 2 s window of 16 kHz audio, read in place
 * in read-only mappings, encoded, the chat prompt evaluated in a context
 * that keeps its cache across asks (the common prefix is kept), and the
 * answer's first tokens generated. Three asks per run, as the session's
 * routing makes them: a new frame with speech (both encoders), the same
 * frame with a new speech window (the image's encoding and positions
 * reused), the same frame with silence (no audio, only the text after the
 * image evaluated). Per ask: arrival -> first token P50/P95/P99, where the
 * time goes, the positions kept; peak RSS, and the seeds' SLO (P95 <
 * 350 ms, peak < 800 MB) against the new-frame ask. The routing measures
 * themselves (a 16x16 thumbnail, the VAD's energies: libmmhal) are not
 * in these times; the device's exposure and transfer (eof - sof) neither.
 *
 *   mm_bench DIR [-t threads] [-r runs] [-g path/to/mmgguf] [-q question]
 *
 * DIR holds the generated files, made when missing (with mmgguf when -g
 * is given, else in process) and reused:
 *   smolvlm-llm-f16.gguf   SmolLM2-135M shape, vocab with SmolVLM's image
 *                          tokens (mmgguf gen --tokenizer smolvlm)
 *   smolvlm-llm-q8_0.gguf  its Q8_0 quantization (mmgguf quantize)
 *   mmproj-smolvlm224-whisper-tiny-q8_0.gguf  SigLIP-B/16 at 224 px
 *                          (idefics3, 49 tokens) + Whisper-tiny audio
 *                          (ultravox), Q8_0
 *   frames-640x480-nv12.raw  4 frames (a bar moving a quarter of the width
 *                          from one to the next)
 *   speech-8s-16k-s16le.raw  4 windows of 2 s of speech-like tones
 * Audio is measured both ways: the latency mode (the 2 s window at its own
 * length) and the exact mode (mtmd's 30 s window). Each configuration
 * runs in a forked child so that its ru_maxrss is its own.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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

/*
 * The sensor data, from files in DIR mapped read-only as a dequeued
 * buffer is: N_FRAMES NV12 frames of the virtual camera's size and
 * N_WIN 2 s windows of 16 kHz S16LE speech-like tones.
 */
#define CAM_W		640
#define CAM_H		480
#define FRAME_BYTES	(CAM_W * CAM_H * 3 / 2)
#define N_FRAMES	4
#define WIN_SAMPLES	32000
#define N_WIN		4

static int write_all(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	int r;

	if (!f)
		return -errno;
	r = fwrite(p, 1, n, f) == n ? 0 : -EIO;
	if (fclose(f) && !r)
		r = -EIO;
	return r;
}

static int make_media(const char *frames, const char *audio)
{
	uint8_t *f;
	int16_t *a;
	int r = 0;

	if (!exists(frames)) {
		f = malloc((size_t)N_FRAMES * FRAME_BYTES);
		if (!f)
			return -ENOMEM;
		for (int k = 0; k < N_FRAMES; k++) {
			uint8_t *y = f + (size_t)k * FRAME_BYTES;
			uint8_t *uv = y + CAM_W * CAM_H;

			/* a gradient with a bar that moves by a quarter of
			 * the width from frame to frame */
			for (int i = 0; i < CAM_W * CAM_H; i++) {
				int x = i % CAM_W, yy = i / CAM_W;
				int bar = (x - k * CAM_W / 4 + CAM_W) % CAM_W < 80;

				y[i] = (uint8_t)(bar ? 235 : 16 + x * 150 / CAM_W +
						 (yy % 32) * 2);
			}
			for (int i = 0; i < CAM_W * CAM_H / 2; i++)
				uv[i] = (uint8_t)(128 + ((i / CAM_W + k * 9) % 61) - 30);
		}
		r = write_all(frames, f, (size_t)N_FRAMES * FRAME_BYTES);
		free(f);
	}
	if (!r && !exists(audio)) {
		a = malloc((size_t)N_WIN * WIN_SAMPLES * sizeof(int16_t));
		if (!a)
			return -ENOMEM;
		for (size_t i = 0; i < (size_t)N_WIN * WIN_SAMPLES; i++) {
			double t = i / 16000.0;
			double f0 = 140 + 40 * (int)(t / 2) + 60 * sin(3 * t);

			a[i] = (int16_t)(8000 * sin(2 * M_PI * f0 * t) *
					 (0.6 + 0.4 * sin(2 * M_PI * 4 * t)));
		}
		r = write_all(audio, a, (size_t)N_WIN * WIN_SAMPLES *
			      sizeof(int16_t));
		free(a);
	}
	return r;
}

static const void *map_ro(const char *path, size_t want)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat sb;
	void *p;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &sb) || (size_t)sb.st_size != want) {
		fprintf(stderr, "mm_bench: %s: want %zu bytes\n", path, want);
		close(fd);
		return NULL;
	}
	p = mmap(NULL, want, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0);
	close(fd);
	return p == MAP_FAILED ? NULL : p;
}

struct cfg {
	const char *llm, *proj, *frames, *audio, *question;
	int threads, runs, exact;
};

/*
 * The asks of one run, as a session routes them:
 *  NEW    a new frame (the scene changed) and a speech window: both
 *         encoders, the prompt from the image on;
 *  SAME   the same frame (scene unchanged: the encoded image is used
 *         again, its positions kept) and a new speech window;
 *  QUIET  the same frame and a silent window (not encoded, not in the
 *         prompt): only the text after the image is evaluated.
 */
enum { ASK_NEW, ASK_SAME, ASK_QUIET, N_ASK };

static const char *const ask_name[N_ASK] = {
	"new frame + speech (both encoders)",
	"same frame + new speech (image reused)",
	"same frame + silence (image reused, no audio)",
};

struct ask_res {
	double ttft[MAX_RUNS];
	double pre_img, enc_img, pre_aud, enc_aud, prefill, sample, decode;
	double kept;
	int n_pos;
};

struct res {
	struct ask_res a[N_ASK];
	int img_rows, aud_rows, text_tokens;
	double peak_rss_mb, load_ms;
	uint64_t file_bytes, kv_bytes;
	int n_ctx, ok;
};

struct tok_times {
	double t[2];
	int n;
};

static int on_tok(int32_t tok, const char *piece, size_t len, void *arg)
{
	struct tok_times *g = arg;

	(void)tok;
	(void)piece;
	(void)len;
	if (g->n < 2)
		g->t[g->n] = now_ms();
	g->n++;
	return 0;
}

/* The chat prompt of a session's ask: n_media markers, then the text. */
static int chat(const struct mmhal_model *m, int n_media, const char *q,
		char *out, size_t cap)
{
	char user[1024];
	size_t len;

	snprintf(user, sizeof(user), "%s%s%s%s", n_media > 0 ?
		 MMHAL_MEDIA_MARKER : "", n_media > 1 ? MMHAL_MEDIA_MARKER : "",
		 n_media ? "\n" : "", q);
	return mmhal_model_chat_format(m, &(struct mmhal_chat_msg){ "user", user },
				       1, 1, out, cap, &len);
}

/*
 * One ask from the data's arrival: encode what the route says, evaluate
 * the prompt keeping the cache's common prefix, generate 2 tokens.
 */
static int ask(struct mmhal_ctx *ctx, const struct mmhal_mmproj *p,
	       const char *prompt, const struct mmhal_image *img,
	       struct mmhal_chunk **img_chunk, const int16_t *pcm,
	       struct ask_res *ar, int run, int runs)
{
	struct mmhal_chunk_info ci = { .size = sizeof(ci) };
	struct mmhal_chunk_info ca = { .size = sizeof(ca) };
	struct mmhal_chunk *aud = NULL, *ch[2];
	struct mmhal_model_stats ms;
	struct tok_times g = { { 0, 0 }, 0 };
	char err[256];
	int64_t kept0;
	double t0, tp, tq, tend;
	int n = 0, nc = 0, r;

	mmhal_ctx_stats(ctx, &ms);
	kept0 = ms.reused_positions;
	t0 = now_ms();		/* the frame and window are in memory */
	if (img && mmhal_encode_image(p, img, img_chunk, err, sizeof(err))) {
		fprintf(stderr, "mm_bench: image: %s\n", err);
		return -EIO;
	}
	if (pcm && mmhal_encode_audio(p, (struct mmhal_audio[]){
				      mmhal_audio_s16(pcm, WIN_SAMPLES,
						      16000) },
				      &aud, err, sizeof(err))) {
		fprintf(stderr, "mm_bench: audio: %s\n", err);
		return -EIO;
	}
	tp = now_ms();
	ch[nc++] = *img_chunk;
	if (aud)
		ch[nc++] = aud;
	r = mmhal_ctx_eval_prompt(ctx, prompt,
				  (const struct mmhal_chunk *const *)ch, nc, 0,
				  NULL);
	tq = now_ms();
	if (!r)
		r = mmhal_ctx_generate(ctx, NULL, 0, 2, NULL, 0, NULL, on_tok,
				       &g, &n);
	tend = now_ms();
	if (r) {
		fprintf(stderr, "mm_bench: prompt/generate: %s\n",
			mmhal_ctx_error(ctx));
		mmhal_chunk_free(aud);
		return r;
	}
	if (!g.n)
		g.t[0] = tend;	/* end of turn at once: as the session */
	if (img)
		mmhal_chunk_info(*img_chunk, &ci);
	if (aud)
		mmhal_chunk_info(aud, &ca);
	mmhal_chunk_free(aud);
	if (run < 0)
		return 0;	/* warm-up */
	mmhal_ctx_stats(ctx, &ms);
	ar->ttft[run] = g.t[0] - t0;
	ar->pre_img += ci.preprocess_ms / runs;
	ar->enc_img += ci.encode_ms / runs;
	ar->pre_aud += ca.preprocess_ms / runs;
	ar->enc_aud += ca.encode_ms / runs;
	ar->prefill += (tq - tp) / runs;
	ar->sample += (g.t[0] - tq) / runs;
	ar->decode += (g.n > 1 ? g.t[1] - g.t[0] : 0) / runs;
	ar->kept += (double)(ms.reused_positions - kept0) / runs;
	ar->n_pos = mmhal_ctx_n_past(ctx) - (g.n > 1 ? 1 : 0);
	return 0;
}

static void run_cfg(const struct cfg *c, struct res *r)
{
	struct mmhal_model_params mp = mmhal_model_default_params();
	struct mmhal_mmproj_params pp = mmhal_mmproj_default_params();
	struct mmhal_ctx_params cp = mmhal_ctx_default_params();
	struct mmhal_model *m = NULL;
	struct mmhal_mmproj *p = NULL;
	struct mmhal_ctx *ctx = NULL;
	struct mmhal_model_info mi;
	struct mmhal_mmproj_info pi = { .size = sizeof(pi) };
	struct mmhal_model_stats ms;
	char err[256] = "", p2[4096], p1[4096];
	const uint8_t *frames = NULL;
	const int16_t *pcm = NULL;
	struct rusage ru;
	int32_t ids[256];
	double t0;

	memset(r, 0, sizeof(*r));
	/* as mmrun --device: the model's defaults, the session's context */
	mp.n_threads = c->threads;
	pp.n_threads = c->threads;
	pp.audio_exact = c->exact;
	cp.n_threads = c->threads;
	t0 = now_ms();
	if (mmhal_model_load(c->llm, &mp, &m, err, sizeof(err)) ||
	    mmhal_mmproj_load(c->proj, m, &pp, &p, err, sizeof(err)) ||
	    mmhal_ctx_create(m, &cp, &ctx, err, sizeof(err))) {
		fprintf(stderr, "mm_bench: %s\n", err);
		goto out;
	}
	r->load_ms = now_ms() - t0;
	mmhal_model_info(m, &mi);
	mmhal_mmproj_info(p, &pi);
	r->file_bytes = mi.file_bytes + pi.file_bytes;
	if (!mmhal_ctx_stats(ctx, &ms)) {
		r->n_ctx = ms.n_ctx;
		r->kv_bytes = ms.kv_bytes;
	}
	frames = map_ro(c->frames, (size_t)N_FRAMES * FRAME_BYTES);
	pcm = map_ro(c->audio, (size_t)N_WIN * WIN_SAMPLES * sizeof(int16_t));
	if (!frames || !pcm || chat(m, 2, c->question, p2, sizeof(p2)) ||
	    chat(m, 1, c->question, p1, sizeof(p1)))
		goto out;
	mmhal_model_tokenize(m, c->question, strlen(c->question), 0, 0, ids,
			     256, &r->text_tokens);
	for (int run = -1; run < c->runs; run++) {
		int k = (run + 1) % N_FRAMES, w = (run + 1) % N_WIN;
		const uint8_t *y = frames + (size_t)k * FRAME_BYTES;
		struct mmhal_image img = {
			.format = MMHAL_IMAGE_NV12, .width = CAM_W,
			.height = CAM_H, .plane = { y, y + CAM_W * CAM_H },
			.stride = { CAM_W, CAM_W },
		};
		struct mmhal_chunk *ic = NULL;
		struct mmhal_chunk_info ci = { .size = sizeof(ci) };
		struct mmhal_chunk_info ca = { .size = sizeof(ca) };
		int e;

		e = ask(ctx, p, p2, &img, &ic, pcm + (size_t)w * WIN_SAMPLES,
			&r->a[ASK_NEW], run, c->runs);
		if (!e)
			e = ask(ctx, p, p2, NULL, &ic,
				pcm + (size_t)((w + 1) % N_WIN) * WIN_SAMPLES,
				&r->a[ASK_SAME], run, c->runs);
		if (!e)
			e = ask(ctx, p, p1, NULL, &ic, NULL, &r->a[ASK_QUIET],
				run, c->runs);
		if (!e && run < 0) {
			struct mmhal_chunk *ac = NULL;

			mmhal_chunk_info(ic, &ci);
			if (!mmhal_encode_audio(p, (struct mmhal_audio[]){
					mmhal_audio_s16(pcm, WIN_SAMPLES,
							16000) }, &ac, err,
					sizeof(err)))
				mmhal_chunk_info(ac, &ca);
			mmhal_chunk_free(ac);
			r->img_rows = ci.n_embd_rows;
			r->aud_rows = ca.n_embd_rows;
		}
		mmhal_chunk_free(ic);
		if (e)
			goto out;
	}
	getrusage(RUSAGE_SELF, &ru);
	r->peak_rss_mb = ru.ru_maxrss / 1024.0;
	r->ok = 1;
out:
	if (frames)
		munmap((void *)frames, (size_t)N_FRAMES * FRAME_BYTES);
	if (pcm)
		munmap((void *)pcm, (size_t)N_WIN * WIN_SAMPLES * sizeof(int16_t));
	mmhal_ctx_free(ctx);
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

static void print_ask(const struct ask_res *a, int runs, const char *name)
{
	printf("  %s: %d positions, %.0f kept from the previous ask\n", name,
	       a->n_pos, a->kept);
	printf("    arrival -> first token: P50 %.1f ms, P95 %.1f ms, P99 %.1f ms (min %.1f, max %.1f)\n",
	       pct(a->ttft, runs, 50), pct(a->ttft, runs, 95),
	       pct(a->ttft, runs, 99), pct(a->ttft, runs, 0),
	       pct(a->ttft, runs, 100));
	printf("    where (mean ms): image preprocess %.2f, vision encode %.1f, audio mel %.2f, audio encode %.1f, prefill %.1f, first token %.2f; then a decode step %.1f\n",
	       a->pre_img, a->enc_img, a->pre_aud, a->enc_aud, a->prefill,
	       a->sample, a->decode);
}

int main(int argc, char **argv)
{
	const char *dir = NULL, *mmgguf = NULL;
	char llm[512], proj[512], frames[512], audio[512];
	struct cfg c = { .threads = 0, .runs = 30,
			 .question = "What is happening?" };
	static struct res r;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-t") && i + 1 < argc)
			c.threads = atoi(argv[++i]);
		else if (!strcmp(argv[i], "-r") && i + 1 < argc)
			c.runs = atoi(argv[++i]);
		else if (!strcmp(argv[i], "-g") && i + 1 < argc)
			mmgguf = argv[++i];
		else if (!strcmp(argv[i], "-q") && i + 1 < argc)
			c.question = argv[++i];
		else if (argv[i][0] != '-' && !dir)
			dir = argv[i];
		else
			dir = NULL, i = argc;
	}
	if (!dir || c.runs < 1 || c.runs > MAX_RUNS || strlen(c.question) > 512) {
		fprintf(stderr, "usage: mm_bench DIR [-t threads] [-r runs (1..%d)] [-g mmgguf] [-q question (<= 512 bytes)]\n",
			MAX_RUNS);
		return 2;
	}
	snprintf(frames, sizeof(frames), "%s/frames-%dx%d-nv12.raw", dir, CAM_W,
		 CAM_H);
	snprintf(audio, sizeof(audio), "%s/speech-%ds-16k-s16le.raw", dir,
		 N_WIN * WIN_SAMPLES / 16000);
	if (make_files(dir, mmgguf, llm, proj, sizeof(llm)))
		return 1;
	if (make_media(frames, audio)) {
		fprintf(stderr, "mm_bench: cannot write %s or %s\n", frames, audio);
		return 1;
	}
	c.llm = llm;
	c.proj = proj;
	c.frames = frames;
	c.audio = audio;
	printf("# mm_bench: %s + %s, %d threads (%ld CPUs online), %d runs of 3 asks after 1 warm-up run\n",
	       llm, proj, c.threads > 0 ? c.threads : (int)ncpu, ncpu, c.runs);
	printf("# sensor data from files mapped read-only (as a dequeued buffer): %s (%d NV12 %dx%d frames), %s (%d 2 s windows); the time runs from their arrival (in memory) to the first token: in the device the exposure and transfer (eof - sof) come before it\n",
	       frames, N_FRAMES, CAM_W, CAM_H, audio, N_WIN);
	for (int exact = 0; exact < 2; exact++) {
		const struct ask_res *a = r.a;
		double p95 = 0;

		c.exact = exact;
		if (in_child(&c, &r)) {
			printf("not ok - %s audio: the run failed\n",
			       exact ? "exact" : "latency");
			return 1;
		}
		p95 = pct(a[ASK_NEW].ttft, c.runs, 95);
		printf("%s audio (2 s %s): frame NV12 %dx%d -> 224 px (%d embeddings), audio (%d embeddings), \"%s\" (%d tokens); KV cache %d positions\n",
		       exact ? "exact" : "latency",
		       exact ? "in mtmd's 30 s window" : "at its own length",
		       CAM_W, CAM_H, r.img_rows, r.aud_rows, c.question,
		       r.text_tokens, r.n_ctx);
		for (int k = 0; k < N_ASK; k++)
			print_ask(&a[k], c.runs, ask_name[k]);
		printf("  routing: first token P50 same frame / new frame %.2f (speech), %.2f (silence)%s\n",
		       pct(a[ASK_SAME].ttft, c.runs, 50) /
		       pct(a[ASK_NEW].ttft, c.runs, 50),
		       pct(a[ASK_QUIET].ttft, c.runs, 50) /
		       pct(a[ASK_NEW].ttft, c.runs, 50),
		       c.runs < 100 ? "; P99 is the max below 100 runs" : "");
		printf("  peak RSS %.1f MB (files %.1f MB, KV cache %.1f MB allocated), load %.0f ms\n",
		       r.peak_rss_mb * 1.048576, r.file_bytes / 1e6,
		       r.kv_bytes / 1e6, r.load_ms);
		printf("  SLO (P95 < 350 ms, peak < 800 MB): new frame P95 %.1f ms = %.0f%% of the budget (%s by %.1f ms); peak RSS %.1f MB (%s)\n",
		       p95, 100 * p95 / 350, p95 < 350 ? "met" : "missed",
		       fabs(350 - p95), r.peak_rss_mb * 1.048576,
		       r.peak_rss_mb * 1.048576 < 800 ? "met" : "missed");
	}
	return 0;
}

// SPDX-License-Identifier: MIT
/*
 * model_bench.c - SmolLM2-135M-shaped model end to end: prefill tokens/s
 * for a 256-token prompt, decode tokens/s (mean and median token; each
 * step picks its token with the library's greedy sampler, as a caller
 * would), decode against the memory bandwidth roofline measured in the
 * same run,
 * peak RSS against file size + KV cache.
 *
 *   model_bench DIR [-t threads] [-p prompt_tokens] [-n decode_tokens]
 *               [-g path/to/mmgguf]
 *
 * DIR holds the generated models (smollm2-135m-{f32,q8_0,q4_K}.gguf);
 * missing ones are generated/quantized there (with mmgguf gen/quantize
 * when -g is given: llama.cpp-like mixes; else in process with
 * ref_quantize_file(): every matrix at the type), existing ones reused. Each
 * measurement runs in a forked child so that ru_maxrss is its own.
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

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "gen.h"
#include "mmhal_model.h"
#include "quant.h"
#include "ref_llama.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int exists(const char *p)
{
	struct stat sb;

	return !stat(p, &sb) && sb.st_size > 0;
}

/* Runs fn in a child; copies its result (size bytes) back. */
static int in_child(int (*fn)(void *res, const void *arg), const void *arg,
		    void *res, size_t size)
{
	int fd[2], st;
	pid_t pid;
	ssize_t got = 0;

	if (pipe(fd))
		return -errno;
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (!pid) {
		int r;

		close(fd[0]);
		r = fn(res, arg);
		if (!r && write(fd[1], res, size) != (ssize_t)size)
			r = -EIO;
		_exit(r ? 1 : 0);
	}
	close(fd[1]);
	while ((size_t)got < size) {
		ssize_t r = read(fd[0], (char *)res + got, size - got);

		if (r <= 0)
			break;
		got += r;
	}
	close(fd[0]);
	waitpid(pid, &st, 0);
	return WIFEXITED(st) && !WEXITSTATUS(st) && (size_t)got == size ?
		0 : -EIO;
}

/* ---- model files ------------------------------------------------------ */

struct mk_arg {
	const char *src, *dst;
	enum mm_type type;
	const char *mmgguf;	/* the tool, or NULL: in-process */
};

static int run_tool(char *const argv[])
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

static int mk_model(void *res, const void *varg)
{
	const struct mk_arg *a = varg;
	char err[256] = "";
	int r, fb = 0;
	double t0 = now_s();

	if (a->mmgguf) {
		char *gen[] = { (char *)a->mmgguf, "gen", "--shape",
				"smollm2-135m", "--tokenizer", "gpt2", "--type",
				"f32", "-o", (char *)a->dst, NULL };
		char *qz[] = { (char *)a->mmgguf, "quantize", (char *)a->src,
			       (char *)a->dst, "--type",
			       a->type == MM_TYPE_Q8_0 ? "q8_0" : "q4_k", NULL };

		r = run_tool(a->type == MM_TYPE_F32 ? gen : qz);
		if (!r)
			printf("# made %s with %s in %.1f s\n", a->dst,
			       a->mmgguf, now_s() - t0);
		else
			fprintf(stderr, "model_bench: %s failed\n", a->mmgguf);
		*(int *)res = r;
		return r;
	}
	if (a->type == MM_TYPE_F32) {
		struct mm_gen_params gp = {
			.shape = "smollm2-135m", .tokenizer = "gpt2",
			.type = MM_TYPE_F32, .seed = 1,
		};

		r = mm_gen_model(&gp, a->dst, err, sizeof(err));
	} else {
		r = ref_quantize_file(a->src, a->dst, a->type, &fb, err,
				      sizeof(err));
	}
	if (r)
		fprintf(stderr, "model_bench: %s: %s\n", a->dst, err);
	else
		printf("# made %s in %.1f s%s\n", a->dst, now_s() - t0,
		       fb ? " (tensors with rows not a multiple of 256 fell back to q5_0)" :
		       "");
	*(int *)res = r;
	return r;
}

/* ---- bandwidth -------------------------------------------------------- */

struct bw_job {
	const uint64_t *buf;
	int64_t n;		/* uint64 words per chunk */
	uint64_t sum[64];
	int slot;
};

#if defined(__x86_64__)
__attribute__((target("avx2")))
static uint64_t sum_avx2(const uint64_t *p, int64_t n)
{
	__m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;

	for (int64_t i = 0; i + 16 <= n; i += 16) {
		a = _mm256_add_epi64(a, _mm256_load_si256((const void *)(p + i)));
		b = _mm256_add_epi64(b, _mm256_load_si256((const void *)(p + i + 4)));
		c = _mm256_add_epi64(c, _mm256_load_si256((const void *)(p + i + 8)));
		d = _mm256_add_epi64(d, _mm256_load_si256((const void *)(p + i + 12)));
	}
	a = _mm256_add_epi64(_mm256_add_epi64(a, b), _mm256_add_epi64(c, d));
	return (uint64_t)_mm256_extract_epi64(a, 0) +
	       (uint64_t)_mm256_extract_epi64(a, 1) +
	       (uint64_t)_mm256_extract_epi64(a, 2) +
	       (uint64_t)_mm256_extract_epi64(a, 3);
}
#endif

static uint64_t sum_plain(const uint64_t *p, int64_t n)
{
	uint64_t a = 0, b = 0, c = 0, d = 0;

	for (int64_t i = 0; i + 4 <= n; i += 4) {
		a += p[i];
		b += p[i + 1];
		c += p[i + 2];
		d += p[i + 3];
	}
	return a + b + c + d;
}

static void bw_task(int64_t begin, int64_t end, void *arg)
{
	struct bw_job *j = arg;
	int slot = __atomic_fetch_add(&j->slot, 1, __ATOMIC_RELAXED) & 63;
	uint64_t s = 0;

	for (int64_t c = begin; c < end; c++) {
		const uint64_t *p = j->buf + c * j->n;
#if defined(__x86_64__)
		s += __builtin_cpu_supports("avx2") ? sum_avx2(p, j->n) :
			sum_plain(p, j->n);
#else
		s += sum_plain(p, j->n);
#endif
	}
	j->sum[slot] += s;
}

struct bw_res {
	double gbs;
	int threads;
};

static int measure_bw(void *vres, const void *varg)
{
	struct bw_res *res = vres;
	const int *threads = varg;
	const size_t bytes = (size_t)1 << 30, chunk = (size_t)1 << 20;
	struct mm_ctx *ctx;
	struct bw_job j = { 0 };
	uint64_t *buf = aligned_alloc(4096, bytes);
	double best = 0;

	if (!buf || mm_ctx_create(*threads, &ctx))
		return -ENOMEM;
	for (size_t i = 0; i < bytes / 8; i++)
		buf[i] = i;
	j.buf = buf;
	j.n = chunk / 8;
	for (int rep = 0; rep < 6; rep++) {
		double t0 = now_s(), t;

		j.slot = 0;
		mm_parallel_for(ctx, bytes / chunk, bw_task, &j);
		t = now_s() - t0;
		if (rep && bytes / t / 1e9 > best)	/* first: warm-up */
			best = bytes / t / 1e9;
	}
	res->gbs = best;
	res->threads = mm_ctx_threads(ctx);
	mm_ctx_destroy(ctx);
	free(buf);
	return 0;
}

/* ---- model run -------------------------------------------------------- */

struct run_arg {
	const char *path;
	int threads, n_prompt, n_decode, kv_type, repack;
};

struct run_res {
	struct mmhal_model_info info;
	struct mmhal_model_stats st;
	double prefill_tps, decode_tps, decode_median_tps;
	int32_t first[8];
};

static int cmp_double(const void *a, const void *b)
{
	const double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static int run_model(void *vres, const void *varg)
{
	const struct run_arg *a = varg;
	struct run_res *res = vres;
	struct mmhal_model_params p = mmhal_model_default_params();
	struct mmhal_sampler_params sp = mmhal_sampler_default_params();
	struct mmhal_sampler *greedy = NULL;
	struct mmhal_model *m;
	char err[256];
	int32_t *prompt, tok;
	float *lg;
	double t0, *tt;
	int r;

	memset(res, 0, sizeof(*res));
	p.n_threads = a->threads;
	p.n_ctx = a->n_prompt + a->n_decode + 16;
	p.kv_type = a->kv_type;
	p.repack = a->repack;
	r = mmhal_model_load(a->path, &p, &m, err, sizeof(err));
	if (r) {
		fprintf(stderr, "model_bench: %s\n", err);
		return r;
	}
	mmhal_model_info(m, &res->info);
	prompt = malloc(sizeof(int32_t) * a->n_prompt);
	lg = malloc(sizeof(float) * res->info.n_vocab);
	tt = malloc(sizeof(double) * a->n_decode);
	/* each token picked as a caller would: the library's greedy sampler */
	sp.temperature = 0;
	if (!prompt || !lg || !tt || mmhal_sampler_create(&sp, &greedy)) {
		fprintf(stderr, "model_bench: out of memory\n");
		free(prompt);
		free(lg);
		free(tt);
		mmhal_model_free(m);
		return -1;
	}
	for (int i = 0; i < a->n_prompt; i++)
		prompt[i] = (int32_t)((i * 7919u + 13) % res->info.n_vocab);
	/* warm-up: fault the weights in, wake the threads */
	r = mmhal_model_eval(m, prompt, 16, NULL);
	mmhal_model_reset(m);
	mmhal_model_stats_reset(m);

	t0 = now_s();
	r |= mmhal_model_eval(m, prompt, a->n_prompt, lg);
	res->prefill_tps = a->n_prompt / (now_s() - t0);
	t0 = now_s();
	for (int i = 0; i < a->n_decode && !r; i++) {
		const double ti = now_s();

		tok = mmhal_sampler_sample(greedy, lg, res->info.n_vocab, NULL, 0);
		if (i < 8)
			res->first[i] = tok;
		r = mmhal_model_eval(m, &tok, 1, lg);
		tt[i] = now_s() - ti;
	}
	res->decode_tps = a->n_decode / (now_s() - t0);
	/* the median token: a neighbour's burst on this shared machine
	 * lengthens a few tokens by up to 10x and moves the mean */
	qsort(tt, a->n_decode, sizeof(*tt), cmp_double);
	res->decode_median_tps = 1 / (a->n_decode % 2 ? tt[a->n_decode / 2] :
				      (tt[a->n_decode / 2 - 1] + tt[a->n_decode / 2]) / 2);
	mmhal_model_stats(m, &res->st);
	if (r)
		fprintf(stderr, "model_bench: eval: %s\n", mmhal_model_error(m));
	mmhal_sampler_free(greedy);
	free(prompt);
	free(lg);
	free(tt);
	mmhal_model_free(m);
	return r;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *suffix;
		enum mm_type type;
	} types[] = {
		{ "q8_0", MM_TYPE_Q8_0 },
		{ "q4_K", MM_TYPE_Q4_K },
	};
	const char *dir = argc > 1 ? argv[1] : ".", *tool = NULL;
	int threads = 0, n_prompt = 256, n_decode = 64, repack = 1, opt;
	char f32[512], qp[2][512];
	struct bw_res bw;
	struct run_res rr[2];
	int ok[2] = { 0, 0 }, res, fails = 0;

	optind = 2;
	while ((opt = getopt(argc, argv, "t:p:n:g:r:")) != -1) {
		switch (opt) {
		case 'r': repack = atoi(optarg); break;
		case 'g': tool = optarg; break;
		case 't': threads = atoi(optarg); break;
		case 'p': n_prompt = atoi(optarg); break;
		case 'n': n_decode = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: model_bench DIR [-t threads] [-p prompt] [-n decode] [-g mmgguf] [-r 0|1 repack]\n");
			return 2;
		}
	}
	if (n_prompt < 16 || n_decode < 1) {
		fprintf(stderr, "model_bench: -p must be >= 16, -n >= 1\n");
		return 2;
	}
	snprintf(f32, sizeof(f32), "%s/smollm2-135m-f32.gguf", dir);
	for (int i = 0; i < 2; i++) {
		snprintf(qp[i], sizeof(qp[i]), "%s/smollm2-135m-%s.gguf", dir,
			 types[i].suffix);
		if (exists(qp[i]))
			continue;
		if (!exists(f32)) {
			struct mk_arg a = { NULL, f32, MM_TYPE_F32, tool };

			if (in_child(mk_model, &a, &res, sizeof(res))) {
				unlink(f32);
				return 1;
			}
		}
		{
			struct mk_arg a = { f32, qp[i], types[i].type, tool };

			if (in_child(mk_model, &a, &res, sizeof(res))) {
				unlink(qp[i]);
				return 1;
			}
		}
	}

	if (in_child(measure_bw, &threads, &bw, sizeof(bw))) {
		fprintf(stderr, "model_bench: bandwidth measurement failed\n");
		return 1;
	}
	printf("# streaming read bandwidth: %.2f GB/s (%d threads, 1 GiB, best of 5)\n",
	       bw.gbs, bw.threads);
	for (int i = 0; i < 2; i++) {
		struct run_arg a = { qp[i], threads, n_prompt, n_decode,
				     MMHAL_KV_F16, repack };

		ok[i] = !in_child(run_model, &a, &rr[i], sizeof(rr[i]));
		fails += !ok[i];
	}

	printf("\nSmolLM2-135M shape (30 layers, 576 embd, 9/3 heads, FFN 1536, vocab 49152, tied), "
	       "prompt %d, decode %d, KV F16, %d threads, kernels %s\n\n",
	       n_prompt, n_decode, bw.threads, ok[0] ? rr[0].info.kernels : "?");
	printf("%-6s %-22s %8s %9s %10s %10s %10s %8s %9s %8s %9s %11s\n", "model",
	       "weight types (MB)", "file MB", "MB/token", "prefill/s",
	       "decode/s", "roofline/s", "of roof", "median/s", "of roof",
	       "peak RSS", "file+KV MB");
	for (int i = 0; i < 2; i++) {
		const struct mmhal_model_info *in = &rr[i].info;
		char wt[64] = "";
		double roof;

		if (!ok[i]) {
			printf("%-6s FAILED\n", types[i].suffix);
			continue;
		}
		for (int k = 0, o = 0; k < in->n_wtypes && k < 3; k++)
			o += snprintf(wt + o, sizeof(wt) - o, "%s%s:%.0f",
				      k ? " " : "", in->wtype_name[k],
				      in->wtype_bytes[k] / 1e6);
		roof = bw.gbs * 1e9 / in->weight_bytes_per_token;
		printf("%-6s %-22s %8.1f %9.1f %10.1f %10.1f %10.1f %7.1f%% %9.1f %7.1f%% %9.1f %11.1f\n",
		       types[i].suffix, wt, in->file_bytes / 1e6,
		       in->weight_bytes_per_token / 1e6, rr[i].prefill_tps,
		       rr[i].decode_tps, roof,
		       100.0 * rr[i].decode_tps / roof,
		       rr[i].decode_median_tps,
		       100.0 * rr[i].decode_median_tps / roof,
		       rr[i].st.peak_rss_bytes / 1e6,
		       (in->file_bytes + in->kv_bytes) / 1e6);
	}
	printf("\n");
	for (int i = 0; i < 2; i++) {
		const struct mmhal_model_stats *st = &rr[i].st;

		if (!ok[i])
			continue;
		printf("# %s: load %.1f ms (%.1f MB repacked); prefill %lld tokens in %.1f ms; decode %lld tokens, "
		       "per token mean %.2f min %.2f max %.2f ms; KV %.1f MB; own allocations peak %.1f MB; "
		       "greedy %d %d %d %d\n",
		       types[i].suffix, st->load_ms, rr[i].info.repacked_bytes / 1e6,
		       (long long)st->prefill_tokens,
		       st->prefill_ms, (long long)st->decode_tokens,
		       st->decode_ms / (st->decode_tokens ? st->decode_tokens : 1),
		       st->decode_min_ms, st->decode_max_ms, st->kv_bytes / 1e6,
		       st->alloc_peak_bytes / 1e6, rr[i].first[0],
		       rr[i].first[1], rr[i].first[2], rr[i].first[3]);
	}
	printf("# roofline = bandwidth / weight bytes read per token (every matrix once + one embedding row; "
	       "KV reads not counted)\n");
	printf("# decode/s = tokens / wall time of the whole decode (the mean); median/s = 1 / the median token's time\n");
	return fails ? 1 : 0;
}

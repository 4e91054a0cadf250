// SPDX-License-Identifier: MIT
/*
 * tier_bench.c - precision tiers of the SmolLM2-135M-shaped model: the
 * Q4_K file with Q8_0 and F16 tiers (mmhal_model_add_tier()), greedy
 * decoding of a test set (P prompts of 16 random tokens, K tokens each)
 * by confidence (mmhal_ctx_params.tier_mode, thresholds 0.92 / 0.75)
 * against the F16 tier alone: the share of steps kept at each tier, the
 * recomputes, the token agreement with the F16 run (positions equal, and
 * positions before the first difference), and the decode speed of each
 * tier alone and of the confidence mode.
 *
 *   tier_bench DIR [-t threads] [-n prompts] [-k tokens] [-s scale]...
 *
 * DIR holds smollm2-135m-f16.gguf (generated) and its Q8_0 / Q4_K copies
 * (ref_quantize_file(): every matrix at the type), reused when present.
 * Each -s scale (default 1) also runs a copy whose output_norm weights are
 * multiplied by scale (the logits scale by it: above 1 sharper, below 1
 * flatter distributions), quantized the same way.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gen.h"
#include "gguf.h"
#include "mmhal_model.h"
#include "quant.h"
#include "ref_llama.h"

#define N_PROMPT 16

static int exists(const char *p)
{
	struct stat sb;

	return !stat(p, &sb) && sb.st_size > 0;
}

/* dst: a copy of src with output_norm.weight (F32) times scale */
static int scaled_copy(const char *src, const char *dst, double scale)
{
	const struct mm_gguf_tensor *t;
	struct mm_gguf *g = NULL;
	char err[256], cmd[1024];
	uint64_t off;
	float *w;
	int fd, ret;

	ret = mm_gguf_open(src, &g, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "%s\n", err);
		return ret;
	}
	t = mm_gguf_tensor(g, "output_norm.weight");
	if (!t || t->type != MM_TYPE_F32) {
		mm_gguf_close(g);
		fprintf(stderr, "%s: no F32 output_norm.weight\n", src);
		return -EINVAL;
	}
	off = mm_gguf_data_offset(g) + t->offset;
	w = malloc(t->size);
	if (!w) {
		mm_gguf_close(g);
		return -ENOMEM;
	}
	for (uint64_t i = 0; i < t->size / 4; i++)
		w[i] = (float)(((const float *)t->data)[i] * scale);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s.tmp'", src, dst);
	ret = system(cmd) ? -EIO : 0;
	snprintf(cmd, sizeof(cmd), "%s.tmp", dst);
	fd = ret ? -1 : open(cmd, O_WRONLY);
	if (!ret && (fd < 0 || pwrite(fd, w, t->size, (off_t)off) !=
		     (ssize_t)t->size))
		ret = -EIO;
	if (fd >= 0)
		close(fd);
	if (!ret && rename(cmd, dst))
		ret = -errno;
	free(w);
	mm_gguf_close(g);
	return ret;
}

/* DIR/smollm2-135m[-xS]-{f16,q8_0,q4_K}.gguf, made when missing */
static int models(const char *dir, double scale, char path[3][512])
{
	static const char *const tn[3] = { "q4_K", "q8_0", "f16" };
	static const enum mm_type tt[2] = { MM_TYPE_Q4_K, MM_TYPE_Q8_0 };
	char tag[32] = "", err[256];
	int ret = 0, fb;

	if (scale != 1)
		snprintf(tag, sizeof(tag), "-x%g", scale);
	for (int i = 0; i < 3; i++)
		snprintf(path[i], 512, "%s/smollm2-135m%s-%s.gguf", dir, tag,
			 tn[i]);
	if (!exists(path[2])) {
		char base[512];

		snprintf(base, sizeof(base), "%s/smollm2-135m-f16.gguf", dir);
		if (!exists(base)) {
			struct mm_gen_params gp = {
				.shape = "smollm2-135m", .tokenizer = "gpt2",
				.type = MM_TYPE_F16, .seed = 1,
			};

			printf("# generating %s\n", base);
			fflush(stdout);
			ret = mm_gen_model(&gp, base, err, sizeof(err));
			if (ret) {
				fprintf(stderr, "gen: %s\n", err);
				return ret;
			}
		}
		if (scale != 1)
			ret = scaled_copy(base, path[2], scale);
		if (ret)
			return ret;
	}
	for (int i = 0; i < 2 && !ret; i++)
		if (!exists(path[i])) {
			printf("# quantizing %s\n", path[i]);
			fflush(stdout);
			ret = ref_quantize_file(path[2], path[i], tt[i], &fb, err,
						sizeof(err));
			if (ret)
				fprintf(stderr, "quantize: %s\n", err);
		}
	return ret;
}

struct run {
	int32_t *tok;		/* prompts x k */
	double tok_s;		/* decode tokens/s */
	struct mmhal_model_stats st;
};

static int run_set(struct mmhal_model *m, int mode, int tier, int threads,
		   int np, int k, struct run *r)
{
	struct mmhal_ctx_params p = mmhal_ctx_default_params();
	struct mmhal_ctx *c = NULL;
	struct mmhal_model_info in;
	char err[256];
	int ret;

	if (mmhal_model_info(m, &in) || in.n_vocab < 1)
		return -EINVAL;
	p.n_ctx = N_PROMPT + k + 8;
	p.n_threads = threads;
	p.tier_mode = mode;
	p.tier = tier;
	ret = mmhal_ctx_create(m, &p, &c, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "ctx: %s\n", err);
		return ret;
	}
	for (int i = 0; i < np && !ret; i++) {
		int32_t pr[N_PROMPT];
		uint64_t s = 0x9e3779b97f4a7c15ull * (i + 1);
		int n = 0;

		for (int j = 0; j < N_PROMPT; j++) {
			s ^= s << 13;
			s ^= s >> 7;
			s ^= s << 17;
			pr[j] = (int32_t)(s % (uint64_t)in.n_vocab);
		}
		mmhal_ctx_reset(c);
		ret = mmhal_ctx_generate(c, pr, N_PROMPT, k, NULL,
					 MMHAL_GEN_IGNORE_EOG,
					 r->tok + (size_t)i * k, NULL, NULL, &n);
		if (!ret && n != k)
			ret = -EIO;
	}
	if (!ret)
		ret = mmhal_ctx_stats(c, &r->st);
	r->tok_s = r->st.decode_ms > 0 ?
		r->st.decode_tokens / (r->st.decode_ms / 1e3) : 0;
	if (ret)
		fprintf(stderr, "run: %d %s\n", ret, mmhal_ctx_error(c));
	mmhal_ctx_free(c);
	return ret;
}

/* positions equal, and positions before each sequence's first difference */
static void agree(const struct run *a, const struct run *ref, int np, int k,
		  double *same, double *prefix)
{
	long eq = 0, pre = 0;

	for (int i = 0; i < np; i++) {
		int first = k;

		for (int j = 0; j < k; j++)
			if (a->tok[(size_t)i * k + j] == ref->tok[(size_t)i * k + j])
				eq++;
			else if (first == k)
				first = j;
		pre += first;
	}
	*same = (double)eq / ((double)np * k);
	*prefix = (double)pre / ((double)np * k);
}

static int bench(const char *dir, double scale, int threads, int np, int k)
{
	char path[3][512], err[256];
	struct mmhal_model_params mp = mmhal_model_default_params();
	struct mmhal_model *m = NULL;
	struct run r[4];	/* tier 0, 1, 2 alone; confidence */
	const char *name[4] = { "Q4_K alone", "Q8_0 alone", "F16 alone",
				"confidence" };
	int ret = models(dir, scale, path);

	if (ret)
		return ret;
	mp.n_threads = threads;
	mp.n_ctx = N_PROMPT + k + 8;
	ret = mmhal_model_load(path[0], &mp, &m, err, sizeof(err));
	for (int i = 1; i < 3 && !ret; i++)
		ret = mmhal_model_add_tier(m, path[i], err, sizeof(err));
	if (ret) {
		fprintf(stderr, "load: %s\n", err);
		mmhal_model_free(m);
		return ret;
	}
	printf("\nscale %g (output_norm x%g): %d prompts x %d tokens, %d threads\n",
	       scale, scale, np, k, threads);
	for (int i = 0; i < 4 && !ret; i++) {
		r[i].tok = calloc((size_t)np * k, sizeof(int32_t));
		if (!r[i].tok) {
			ret = -ENOMEM;
			break;
		}
		ret = i < 3 ? run_set(m, MMHAL_TIER_FIXED, i, threads, np, k, &r[i]) :
			run_set(m, MMHAL_TIER_CONFIDENCE, 0, threads, np, k, &r[i]);
	}
	if (!ret) {
		const struct mmhal_model_stats *s = &r[3].st;
		double n = (double)s->decode_tokens;

		printf("  %-11s %9s %9s %9s %9s %9s\n", "run", "tok/s",
		       "agree", "prefix", "", "");
		for (int i = 0; i < 4; i++) {
			double same, pre;

			agree(&r[i], &r[2], np, k, &same, &pre);
			printf("  %-11s %9.1f %8.1f%% %8.1f%%\n", name[i],
			       r[i].tok_s, 100 * same, 100 * pre);
		}
		printf("  confidence: steps kept at Q4_K %.1f%%, Q8_0 %.1f%%, F16 %.1f%%; forward passes per step %.2f (%lld recomputes)\n",
		       100 * s->tier_steps[0] / n, 100 * s->tier_steps[1] / n,
		       100 * s->tier_steps[2] / n,
		       (double)(s->tier_evals[0] + s->tier_evals[1] +
				s->tier_evals[2]) / n,
		       (long long)s->tier_recomputes);
	}
	for (int i = 0; i < 4; i++)
		free(r[i].tok);
	mmhal_model_free(m);
	return ret;
}

int main(int argc, char **argv)
{
	double scales[8];
	int ns = 0, threads = 2, np = 20, k = 32, ret = 0;
	const char *dir;

	if (argc < 2) {
		fprintf(stderr, "usage: %s DIR [-t threads] [-n prompts] [-k tokens] [-s scale]...\n",
			argv[0]);
		return 2;
	}
	dir = argv[1];
	for (int i = 2; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "-t"))
			threads = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "-n"))
			np = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "-k"))
			k = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "-s") && ns < 8)
			scales[ns++] = atof(argv[i + 1]);
		else
			return fprintf(stderr, "bad option %s\n", argv[i]), 2;
	}
	if (threads < 1 || np < 1 || k < 1 || k > 4096)
		return fprintf(stderr, "bad -t/-n/-k\n"), 2;
	if (!ns)
		scales[ns++] = 1;
	for (int i = 0; i < ns && !ret; i++) {
		if (!(scales[i] > 0 && isfinite(scales[i])))
			return fprintf(stderr, "bad -s %g\n", scales[i]), 2;
		ret = bench(dir, scales[i], threads, np, k);
	}
	return ret ? 1 : 0;
}

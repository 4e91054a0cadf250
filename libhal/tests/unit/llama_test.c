// SPDX-License-Identifier: MIT
/*
 * llama_test.c - decoder, sampler and accounting tests (TAP).
 *
 * Builds the "tiny" model (2 layers, 256 embd, 4 heads / 2 KV heads, FFN
 * 512, vocab 300) with the generator at F32, quantizes it to Q8_0, Q4_0
 * and Q4_K, and checks the decoder against the f32 reference of
 * ref_llama.c run on the dequantized weights of the same file.
 *
 * Tolerances (max |logit - ref| / (max ref logit - min ref logit)):
 *   F32   1e-3   only the F16 KV cache and f32 summation order differ
 *   Q8_0  3e-2   + activations quantized to Q8_0 on the fly (ggml does)
 *   Q4_0  3e-2   same activation quantization (Q8_0)
 *   Q4_K  3e-2   activations quantized to Q8_K
 *   KV cache Q8_0 vs F16 (Q8_0 weights): 3e-2
 * The quantization of the weights themselves is not counted: the
 * reference uses the same (dequantized) weights.
 *
 * Sessions (mmhal_ctx) are checked against each other: a session's
 * logits depend only on what was evaluated in it, so runs that should
 * agree are compared bit for bit (same thread count, same batches).
 *
 * Context shift: on the one-layer gqa4 model a position's K/V rows depend
 * only on its token and position, so after a shift the logits must equal
 * a fresh session's on the kept tokens (F32 KV 1e-5, F16 KV 2e-3 of the
 * range); on tiny (two layers) the moved rows are checked against the old
 * rows rotated here in double (F16, Q8_0 within their rounding). State
 * files: a loaded session continues bit for bit; damaged files refused.
 *
 * Precision tiers: the Q4_K file with Q8_0 and F16 (generated at F16)
 * tiers. A pass at a tier is a pass of that file alone, so runs are
 * compared bit for bit with each file loaded alone: thresholds 0 keep every
 * step at Q4_K, thresholds 2 recompute every step up to F16, fixed tiers;
 * with thresholds at quantiles of a Q4_K run's top-1 probabilities each
 * step's tier is checked against its kept logits, and the counts against
 * each other. Files of another shape, vocabulary or architecture refused.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gen.h"
#include "gguf.h"
#include "llama_int.h"
#include "mmhal_model.h"
#include "ref_llama.h"

#include "tests/tap.h"

/* [4]: the "gqa4" shape (4 query heads on one KV head of 24 dimensions)
 * at F32, for the attention kernel's other head groupings */
#define GQA4 4
/* [5]: Q5_0, the type llama.cpp's Q4_K files fall back to */
#define Q5 5
static char dir[256];
static char path[6][300];
static const char *tname[6] = { "f32", "q8_0", "q4_0", "q4_K", "gqa4 f32",
				"q5_0" };
static const enum mm_type ttype[6] = { MM_TYPE_F32, MM_TYPE_Q8_0,
				       MM_TYPE_Q4_0, MM_TYPE_Q4_K,
				       MM_TYPE_F32, MM_TYPE_Q5_0 };
static const double ttol[6] = { 1e-3, 3e-2, 3e-2, 3e-2, 1e-3, 3e-2 };
static const int32_t prompt[8] = { 1, 17, 42, 99, 150, 201, 7, 250 };
static int32_t long_prompt[40];
static int load_threads = 2;	/* threads of the next load() */
static char tier_path[4][300];	/* f16, smolvlm vocab, gqa4 f16, clip */

static int argmax(const float *x, int n)
{
	int b = 0;

	for (int i = 1; i < n; i++)
		if (x[i] > x[b])
			b = i;
	return b;
}

/* max |a - r| / range(r) */
static double reldiff(const float *a, const float *r, int n)
{
	float mn = r[0], mx = r[0];
	double d = 0;

	for (int i = 0; i < n; i++) {
		if (r[i] < mn)
			mn = r[i];
		if (r[i] > mx)
			mx = r[i];
		if (fabs((double)a[i] - r[i]) > d)
			d = fabs((double)a[i] - r[i]);
	}
	return d / (mx - mn > 1e-6 ? mx - mn : 1e-6);
}

static struct mmhal_model *load(int t, int n_ctx, int kv, int n_batch,
				int mmap)
{
	struct mmhal_model_params p = mmhal_model_default_params();
	struct mmhal_model *m = NULL;
	char err[256];
	int ret;

	p.n_ctx = n_ctx;
	p.kv_type = kv;
	p.n_threads = load_threads;
	if (n_batch)
		p.n_batch = n_batch;
	p.use_mmap = mmap;
	ret = mmhal_model_load(t < 0 ? tier_path[-1 - t] : path[t], &p, &m,
			       err, sizeof(err));
	if (ret)
		printf("# load %s: %d %s\n", t < 0 ? tier_path[-1 - t] : path[t],
		       ret, err);
	return m;
}

/* decoder vs reference: prefill 8, 8 decode steps, then greedy 32 */
static void test_vs_ref(int t)
{
	struct mmhal_model *m = load(t, 64, MMHAL_KV_F16, 0, 1);
	struct ref_llama *r = NULL;
	char err[256];
	float *lm, *lr;
	double worst = 0, d;
	int V, ret, same = 1, nsteps = 0, first_diff = -1;
	int32_t sm[32], sr[32];

	if (!m || ref_llama_load(path[t], 64, &r, err, sizeof(err))) {
		printf("# %s\n", err);
		tap_ok(0, "%s: logits vs f32 reference", tname[t]);
		if (t < 2 || t == GQA4)
			tap_ok(0, "%s: greedy 32 steps identical to reference",
			   tname[t]);
		mmhal_model_free(m);
		ref_llama_free(r);
		return;
	}
	V = ref_llama_n_vocab(r);
	lm = malloc(sizeof(float) * V);
	lr = malloc(sizeof(float) * V);
	ret = mmhal_model_eval(m, prompt, 8, lm);
	for (int i = 0; i < 8; i++)
		ret |= ref_llama_step(r, prompt[i], lr);
	worst = reldiff(lm, lr, V);
	for (int s = 0; s < 8 && !ret; s++) {
		int32_t tok = argmax(lr, V);

		ret = mmhal_model_eval(m, &tok, 1, lm);
		ret |= ref_llama_step(r, tok, lr);
		d = reldiff(lm, lr, V);
		if (d > worst)
			worst = d;
		nsteps++;
	}
	/* a 40-token prefill takes the threaded attention path */
	mmhal_model_reset(m);
	ref_llama_reset(r);
	ret |= mmhal_model_eval(m, long_prompt, 40, lm);
	for (int i = 0; i < 40; i++)
		ret |= ref_llama_step(r, long_prompt[i], lr);
	d = reldiff(lm, lr, V);
	if (d > worst)
		worst = d;
	tap_ok(!ret && worst <= ttol[t],
	   "%s: logits vs f32 reference, prefill 8 + %d steps, prefill 40: max diff %.2e of range (tol %.0e)",
	   tname[t], nsteps, worst, ttol[t]);

	if (t < 2 || t == GQA4) {
		mmhal_model_reset(m);
		ref_llama_reset(r);
		ret = mmhal_model_eval(m, prompt, 8, lm);
		for (int i = 0; i < 8; i++)
			ret |= ref_llama_step(r, prompt[i], lr);
		for (int s = 0; s < 32 && !ret; s++) {
			sm[s] = argmax(lm, V);
			sr[s] = argmax(lr, V);
			if (sm[s] != sr[s] && first_diff < 0) {
				first_diff = s;
				same = 0;
			}
			ret = mmhal_model_eval(m, &sm[s], 1, lm);
			ret |= ref_llama_step(r, sr[s], lr);
		}
		if (!same)
			printf("# first difference at step %d\n", first_diff);
		tap_ok(!ret && same, "%s: greedy 32 steps identical to reference",
		   tname[t]);
	}
	free(lm);
	free(lr);
	mmhal_model_free(m);
	ref_llama_free(r);
}

/* A vocabulary with a pre-tokenizer this runtime does not have refuses
 * the model, naming the value (the F32 file with its "gpt-2" value
 * rewritten in place). */
static void test_unknown_pre(void)
{
	static const char key[] = "tokenizer.ggml.pre";
	char bad[sizeof(path[0]) + 16], err[512] = "";
	struct mmhal_model *m = NULL;
	unsigned char *buf = NULL, *k;
	FILE *f = fopen(path[0], "rb");
	long n = -1;
	int r = -1;

	if (f && !fseek(f, 0, SEEK_END))
		n = ftell(f);
	if (n > 0 && !fseek(f, 0, SEEK_SET))
		buf = malloc(n);
	if (buf && fread(buf, 1, n, f) == (size_t)n &&
	    (k = memmem(buf, n, key, sizeof(key) - 1)) &&
	    k + sizeof(key) - 1 + 4 + 8 + 5 <= buf + n &&
	    !memcmp(k + sizeof(key) - 1 + 12, "gpt-2", 5)) {
		FILE *o;

		memcpy(k + sizeof(key) - 1 + 12, "zzz9z", 5);
		snprintf(bad, sizeof(bad), "%s.pre", path[0]);
		o = fopen(bad, "wb");
		if (o && fwrite(buf, 1, n, o) == (size_t)n && !fclose(o))
			r = mmhal_model_load(bad, NULL, &m, err, sizeof(err));
		else if (o)
			fclose(o);
		unlink(bad);
	}
	if (f)
		fclose(f);
	free(buf);
	tap_ok(r == -ENOTSUP && !m && strstr(err, "'zzz9z'") &&
	   strstr(err, "tokenizer.ggml.pre"),
	   "unknown tokenizer.ggml.pre refuses the model: %d \"%s\"", r, err);
	mmhal_model_free(m);
}

static void test_prefill_vs_steps(void)
{
	for (int t = 0; t < 4; t += 1) {
		struct mmhal_model *a = load(t, 64, MMHAL_KV_F16, 0, 1);
		struct mmhal_model *b = load(t, 64, MMHAL_KV_F16, 3, 1);
		float la[300], lb[300], lc[300];
		int ret = !a || !b;
		double d1 = 1, d2 = 1;

		if (!ret) {
			/* 40 at once: threaded attention; one by one: inline */
			ret = mmhal_model_eval(a, long_prompt, 40, la);
			for (int i = 0; i < 40 && !ret; i++)
				ret = mmhal_model_eval(b, long_prompt + i, 1, lb);
			mmhal_model_reset(b);	/* n_batch 3: chunks of 3 */
			ret |= mmhal_model_eval(b, long_prompt, 40, lc);
			d1 = reldiff(lb, la, 300);
			d2 = reldiff(lc, la, 300);
		}
		if (t == 0 || t == 3)
			tap_ok(!ret && d1 < 1e-4 && d2 < 1e-4,
			   "%s: prefill(40) == 40 single evals (%.1e) == chunked prefill (%.1e)",
			   tname[t], d1, d2);
		mmhal_model_free(a);
		mmhal_model_free(b);
	}
}

/* Decode attention split over cache positions (2-3 threads, 150 rows:
 * segments of a KV head run on different threads and are merged) gives
 * the logits of a prefill over the same tokens (whole heads). */
static void test_attn_split(void)
{
	int32_t toks[150];

	for (int i = 0; i < 150; i++)
		toks[i] = (int32_t)((i * 37 + 11) % 300);
	for (int thr = 2; thr <= 3; thr++) {
		struct mmhal_model *a, *b;
		float la[300], lb[300];
		double d = 1;
		int ret;

		load_threads = thr;
		a = load(0, 256, MMHAL_KV_F16, 0, 1);
		b = load(0, 256, MMHAL_KV_F16, 0, 1);
		load_threads = 2;
		ret = !a || !b;
		if (!ret)
			ret = mmhal_model_eval(a, toks, 150, la);
		for (int i = 0; i < 150 && !ret; i++)
			ret = mmhal_model_eval(b, toks + i, 1, lb);
		if (!ret)
			d = reldiff(lb, la, 300);
		tap_ok(!ret && d < 1e-4,
		   "f32, %d threads: 150 decode steps (attention split over positions) == prefill(150) (%.1e)",
		   thr, d);
		mmhal_model_free(a);
		mmhal_model_free(b);
	}
}

static void test_kv_q8(void)
{
	struct mmhal_model *a = load(1, 64, MMHAL_KV_F16, 0, 1);
	struct mmhal_model *b = load(1, 64, MMHAL_KV_Q8_0, 0, 1);
	struct mmhal_model_info ia, ib;
	float la[300], lb[300];
	double worst = 0, d;
	int ret = !a || !b;

	if (!ret) {
		ret = mmhal_model_eval(a, prompt, 8, la);
		ret |= mmhal_model_eval(b, prompt, 8, lb);
		worst = reldiff(lb, la, 300);
		for (int s = 0; s < 8 && !ret; s++) {
			int32_t tok = argmax(la, 300);

			ret = mmhal_model_eval(a, &tok, 1, la);
			ret |= mmhal_model_eval(b, &tok, 1, lb);
			d = reldiff(lb, la, 300);
			if (d > worst)
				worst = d;
		}
		mmhal_model_info(a, &ia);
		mmhal_model_info(b, &ib);
		tap_ok(ia.kv_bytes == 2ull * 2 * 64 * 128 * 2 &&
		   ib.kv_bytes == 2ull * 2 * 64 * 4 * 34,
		   "KV cache sizes: F16 %llu, Q8_0 %llu bytes",
		   (unsigned long long)ia.kv_bytes,
		   (unsigned long long)ib.kv_bytes);
	} else {
		tap_ok(0, "KV cache sizes");
	}
	tap_ok(!ret && worst < 3e-2, "KV Q8_0 vs F16: max diff %.2e of range",
	   worst);
	mmhal_model_free(a);
	mmhal_model_free(b);
}

static void test_ctx_limit(void)
{
	struct mmhal_model *m = load(0, 16, MMHAL_KV_F16, 0, 1);
	float l1[300], l2[300];
	int32_t toks[17];
	int r1, r2, r3, r4, r5;

	for (int i = 0; i < 17; i++)
		toks[i] = (i * 37 + 5) % 300;
	if (!m) {
		tap_ok(0, "context limit");
		tap_ok(0, "truncate");
		return;
	}
	r1 = mmhal_model_eval(m, toks, 10, NULL);
	r2 = mmhal_model_eval(m, toks + 10, 7, NULL);
	tap_ok(r1 == 0 && r2 == -ENOSPC && mmhal_model_n_past(m) == 10 &&
	   strstr(mmhal_model_error(m), "context full"),
	   "eval past n_ctx returns -ENOSPC, state kept: \"%s\"",
	   mmhal_model_error(m));
	r3 = mmhal_model_eval(m, toks + 10, 6, l1);	/* fills to 16 */
	r4 = mmhal_model_eval(m, toks, 1, NULL);
	r5 = mmhal_model_truncate(m, 15);
	r5 |= mmhal_model_eval(m, toks + 15, 1, l2);
	tap_ok(r3 == 0 && r4 == -ENOSPC && r5 == 0 && reldiff(l2, l1, 300) < 1e-6 &&
	   mmhal_model_truncate(m, 17) == -EINVAL,
	   "full context: -ENOSPC; truncate(15) + same token gives the same logits");
	{
		/* the last cache row of every head (n_ctx - 1) against the
		 * reference: a row past a head's rows would land on the next
		 * head's first one */
		struct ref_llama *r = NULL;
		char err[256];
		float lr[300];
		int rr = ref_llama_load(path[0], 16, &r, err, sizeof(err));

		for (int i = 0; i < 16 && !rr; i++)
			rr = ref_llama_step(r, toks[i], lr);
		tap_ok(!rr && reldiff(l1, lr, 300) <= ttol[0],
		   "full context (16 of 16 rows) logits vs f32 reference: %.2e (tol %.0e)",
		   rr ? -1.0 : reldiff(l1, lr, 300), ttol[0]);
		ref_llama_free(r);
	}
	mmhal_model_reset(m);
	tap_ok(mmhal_model_n_past(m) == 0 && !mmhal_model_logits(m) &&
	   mmhal_model_eval(m, toks, 16, NULL) == 0 &&
	   mmhal_model_eval(m, (int32_t[]){ 3 }, 1, NULL) == -ENOSPC,
	   "reset empties the cache");
	mmhal_model_reset(m);
	tap_ok(mmhal_model_eval(m, (int32_t[]){ 300 }, 1, NULL) == -EINVAL &&
	   mmhal_model_eval(m, (int32_t[]){ -1 }, 1, NULL) == -EINVAL &&
	   mmhal_model_eval(m, toks, 0, NULL) == -EINVAL &&
	   mmhal_model_n_past(m) == 0,
	   "bad token ids / counts: -EINVAL, nothing evaluated");
	mmhal_model_free(m);
}

/* resident set of this process, kB */
static long rss_kb(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	long size = 0, res = -1;

	if (f) {
		if (fscanf(f, "%ld %ld", &size, &res) != 2)
			res = -1;
		fclose(f);
	}
	return res < 0 ? -1 : res * (sysconf(_SC_PAGESIZE) / 1024);
}

/* The KV cache (and the other large buffers) become resident as they are
 * written, not at load: a 8192-token context (8.4 MB of F16 KV for the
 * tiny model, as much again of f32 staging) adds under a quarter of the
 * cache to the resident set at load; 8 tokens then add the weights they
 * read (mapped from the file) and under a quarter of the cache more. */
static void test_lazy_kv(void)
{
	struct mmhal_model_info in;
	struct mmhal_model *m;
	long r0, r1, r2 = -1;
	float l[300];

	r0 = rss_kb();
	m = load(0, 8192, MMHAL_KV_F16, 0, 1);
	r1 = rss_kb();
	if (m && !mmhal_model_info(m, &in) && !mmhal_model_eval(m, prompt, 8, l))
		r2 = rss_kb();
	printf("# rss: %ld kB before load, +%ld at load, +%ld after 8 tokens; KV %llu kB\n",
	       r0, r1 - r0, r2 - r1, m ? (unsigned long long)in.kv_bytes / 1024 : 0);
	tap_ok(m && r0 > 0 && r2 > 0 && in.kv_bytes >= (8u << 20) &&
	   (unsigned long long)(r1 - r0) < in.kv_bytes / 1024 / 4 &&
	   (unsigned long long)(r2 - r1) < (in.weight_bytes + in.kv_bytes / 4) / 1024,
	   "KV cache resident as used: load +%ld kB, 8 tokens +%ld kB of a %llu kB cache",
	   r1 - r0, r2 - r1, m ? (unsigned long long)in.kv_bytes / 1024 : 0);
	mmhal_model_free(m);
}

/* FNV-1a of a whole file (0 if it cannot be read) */
static uint64_t file_hash(const char *fn)
{
	FILE *f = fopen(fn, "rb");
	uint64_t h = 1469598103934665603ull;
	int c;

	if (!f)
		return 0;
	while ((c = getc(f)) != EOF)
		h = (h ^ (uint8_t)c) * 1099511628211ull;
	fclose(f);
	return h;
}

/* 1 if every mapping of file fn in this process is read-only (and
 * there is one) */
static int maps_read_only(const char *fn)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512], perms[8];
	int n = 0, ro = 1;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (!strstr(line, fn) || sscanf(line, "%*s %7s", perms) != 1)
			continue;
		n++;
		ro &= perms[1] != 'w';
	}
	fclose(f);
	return n > 0 && ro;
}

/*
 * params.repack: the Q4_0, Q5_0, Q8_0 or Q4_K model (t) gives the same logits
 * bit for bit with its matrices rearranged at load and as stored, mapped
 * and read, over a prefill and 4 decode steps (the tied token_embd is
 * rearranged too, so its rows are looked up in the layout); the kernel
 * sets with the layout (x86; Q8_0: avx2 only) rearrange them (and say how
 * many bytes), the others leave them; the file is not changed and its
 * mapping is read-only again after the rewrite.
 */
static void test_repack(int t)
{
	const uint64_t h0 = file_hash(path[t]);
	int same = 1, counted = 1, ro = 1;

	for (int mapped = 1; mapped >= 0; mapped--) {
		struct mmhal_model *m[2] = { NULL, NULL };
		struct mmhal_model_info in;
		float la[300], lb[300];
		int32_t tok;
		char err[256];

		for (int r = 0; r < 2; r++) {
			struct mmhal_model_params p = mmhal_model_default_params();

			p.n_ctx = 64;
			p.n_threads = 2;
			p.use_mmap = mapped;
			p.repack = !r;
			if (mmhal_model_load(path[t], &p, &m[r], err, sizeof(err)))
				printf("# load %s: %s\n", path[t], err);
		}
		if (!m[0] || !m[1]) {
			same = 0;
		} else {
			same &= !mmhal_model_eval(m[0], prompt, 8, la) &&
				!mmhal_model_eval(m[1], prompt, 8, lb) &&
				!memcmp(la, lb, sizeof(la));
			for (int step = 0; step < 4 && same; step++) {
				tok = argmax(la, 300);
				same &= !mmhal_model_eval(m[0], &tok, 1, la) &&
					!mmhal_model_eval(m[1], &tok, 1, lb) &&
					!memcmp(la, lb, sizeof(la));
			}
			if (mapped)
				ro &= maps_read_only(path[t]);
			mmhal_model_info(m[0], &in);
			if (!strcmp(in.kernels, "avx2") ||
			    (!strcmp(in.kernels, "avx512vnni") && ttype[t] != MM_TYPE_Q8_0))
				counted &= in.repacked_bytes > in.weight_bytes / 2;
			else
				counted &= in.repacked_bytes == 0;
			printf("# %s, %s: %llu of %llu weight bytes repacked\n",
			       mapped ? "mapped" : "read", in.kernels,
			       (unsigned long long)in.repacked_bytes,
			       (unsigned long long)in.weight_bytes);
			mmhal_model_info(m[1], &in);
			counted &= in.repacked_bytes == 0;
		}
		mmhal_model_free(m[0]);
		mmhal_model_free(m[1]);
	}
	tap_ok(same, "%s: repack 1 == repack 0 bitwise, mapped and read, prefill + 4 decode steps",
	   tname[t]);
	tap_ok(counted, "%s: repacked bytes: most weights on kernel sets with the layout, none elsewhere or with repack 0",
	   tname[t]);
	tap_ok(h0 && file_hash(path[t]) == h0 && ro,
	   "%s: the file is unchanged after loads that repack, and mapped read-only (%s)",
	   tname[t], ro ? "yes" : "no");
}

static void test_load_misc(void)
{
	struct mmhal_model *m = NULL, *a, *b;
	struct mmhal_model_params p = mmhal_model_default_params();
	struct mmhal_model_info in;
	struct mmhal_model_stats st;
	char err[256] = "";
	char bad[320];
	float la[300], lb[300];
	int ret;

	snprintf(bad, sizeof(bad), "%s/nonexistent.gguf", dir);
	ret = mmhal_model_load(bad, &p, &m, err, sizeof(err));
	tap_ok(ret == -ENOENT && !m && err[0], "missing file: -ENOENT \"%s\"",
	   err);
	p.kv_type = 3;
	ret = mmhal_model_load(path[0], &p, &m, err, sizeof(err));
	tap_ok(ret == -EINVAL && !m, "bad kv_type: -EINVAL \"%s\"", err);

	a = load(3, 0, MMHAL_KV_F16, 0, 1);
	b = load(3, 0, MMHAL_KV_F16, 0, 0);
	ret = !a || !b;
	if (!ret) {
		ret = mmhal_model_eval(a, prompt, 8, la);
		ret |= mmhal_model_eval(b, prompt, 8, lb);
	}
	tap_ok(!ret && !memcmp(la, lb, sizeof(la)), "use_mmap 0 == use_mmap 1");
	ret = a ? mmhal_model_info(a, &in) : -1;
	tap_ok(!ret && in.n_vocab == 300 && in.n_embd == 256 && in.n_layer == 2 &&
	   in.n_head == 4 && in.n_head_kv == 2 && in.n_ff == 512 &&
	   in.n_ctx == 512 && in.n_ctx_train == 512 && in.tied_output &&
	   in.n_threads == 2 && in.file_bytes > in.weight_bytes &&
	   in.n_wtypes >= 1 && in.weight_bytes_per_token > 0,
	   "info: vocab %d embd %d layers %d heads %d/%d ff %d ctx %d/%d tied %d, %s %llu bytes, kernels %s",
	   in.n_vocab, in.n_embd, in.n_layer, in.n_head, in.n_head_kv, in.n_ff,
	   in.n_ctx, in.n_ctx_train, in.tied_output, in.wtype_name[0],
	   (unsigned long long)in.wtype_bytes[0], in.kernels);
	if (a) {
		int32_t t = 5;

		mmhal_model_eval(a, &t, 1, NULL);
		mmhal_model_eval(a, &t, 1, NULL);
	}
	ret = a ? mmhal_model_stats(a, &st) : -1;
	tap_ok(!ret && st.load_ms > 0 && st.prefill_tokens == 8 &&
	   st.prefill_calls == 1 && st.decode_tokens == 2 &&
	   st.prefill_ms > 0 && st.decode_ms > 0 &&
	   st.decode_min_ms <= st.decode_max_ms &&
	   st.kv_bytes == in.kv_bytes && st.alloc_peak_bytes > st.kv_bytes &&
	   st.peak_rss_bytes > st.alloc_peak_bytes && st.n_past == 10,
	   "stats: load %.2f ms, prefill %lld tok %.2f ms, decode %lld tok %.2f ms, kv %llu, alloc peak %llu, rss %llu",
	   st.load_ms, (long long)st.prefill_tokens, st.prefill_ms,
	   (long long)st.decode_tokens, st.decode_ms,
	   (unsigned long long)st.kv_bytes,
	   (unsigned long long)st.alloc_peak_bytes,
	   (unsigned long long)st.peak_rss_bytes);
	mmhal_model_free(a);
	mmhal_model_free(b);
}

/* ---- sessions --------------------------------------------------------- */

static struct mmhal_ctx *ctx_new(struct mmhal_model *m, int n_ctx,
				 int n_batch, mmhal_abort_cb cb, void *arg)
{
	struct mmhal_ctx_params p = mmhal_ctx_default_params();
	struct mmhal_ctx *c = NULL;
	char err[256];
	int ret;

	if (!m)
		return NULL;
	p.n_ctx = n_ctx;
	p.n_threads = 2;
	if (n_batch)
		p.n_batch = n_batch;
	p.abort_cb = cb;
	p.abort_arg = arg;
	ret = mmhal_ctx_create(m, &p, &c, err, sizeof(err));
	if (ret)
		printf("# ctx_create: %d %s\n", ret, err);
	return c;
}

/* A prompt, then SCRIPT_STEPS greedy decode steps; logits[k] after call k */
#define SCRIPT_STEPS 6
struct script {
	const int32_t *prompt;
	int n_prompt;
	float logits[SCRIPT_STEPS + 1][300];
	int32_t toks[SCRIPT_STEPS];
};

static int script_step(struct mmhal_ctx *c, struct script *sc, int k)
{
	if (!k)
		return mmhal_ctx_eval(c, sc->prompt, sc->n_prompt, sc->logits[0]);
	sc->toks[k - 1] = argmax(sc->logits[k - 1], 300);
	return mmhal_ctx_eval(c, &sc->toks[k - 1], 1, sc->logits[k]);
}

static int script_run(struct mmhal_ctx *c, struct script *sc)
{
	int ret = 0;

	for (int k = 0; k <= SCRIPT_STEPS && !ret; k++)
		ret = script_step(c, sc, k);
	return ret;
}

static void script_init(struct script *sc, const int32_t *p, int n)
{
	memset(sc, 0, sizeof(*sc));
	sc->prompt = p;
	sc->n_prompt = n;
}

/*
 * Two sessions of one model (Q8_0, repacked) interleaved call by call give
 * the logits each gives alone in a third session, and session a's those
 * of the model's default session; each keeps its own cache and stats.
 */
static void test_sessions(void)
{
	static struct script sa, sb, ra, rb, rd;
	struct mmhal_model *m = load(1, 64, MMHAL_KV_F16, 0, 1);
	struct mmhal_ctx *a = ctx_new(m, 64, 0, NULL, NULL);
	struct mmhal_ctx *b = ctx_new(m, 64, 0, NULL, NULL);
	struct mmhal_ctx *c = ctx_new(m, 64, 0, NULL, NULL);
	struct mmhal_model_stats st, sd, sb2;
	struct mmhal_model_info in;
	int ret = !a || !b || !c;

	script_init(&sa, prompt, 8);
	script_init(&ra, prompt, 8);
	script_init(&rd, prompt, 8);
	script_init(&sb, long_prompt, 20);
	script_init(&rb, long_prompt, 20);
	for (int k = 0; k <= SCRIPT_STEPS && !ret; k++)
		ret = script_step(a, &sa, k) || script_step(b, &sb, k);
	if (!ret) {
		ret = script_run(c, &ra);
		mmhal_ctx_reset(c);
		ret |= script_run(c, &rb);
		ret |= script_run(mmhal_model_ctx(m), &rd);
	}
	tap_ok(!ret && !memcmp(sa.logits, ra.logits, sizeof(sa.logits)) &&
	   !memcmp(sb.logits, rb.logits, sizeof(sb.logits)) &&
	   !memcmp(sa.logits, rd.logits, sizeof(sa.logits)) &&
	   memcmp(sa.logits, sb.logits, sizeof(sa.logits)),
	   "two sessions of one model interleaved == each alone == the default session (bitwise, prefill + %d steps)",
	   SCRIPT_STEPS);
	tap_ok(!ret && mmhal_ctx_n_past(a) == 8 + SCRIPT_STEPS &&
	   mmhal_ctx_n_past(b) == 20 + SCRIPT_STEPS &&
	   mmhal_ctx_tokens(a)[8] == sa.toks[0] &&
	   mmhal_ctx_tokens(b)[19] == long_prompt[19] &&
	   mmhal_ctx_model(a) == m && mmhal_model_ctx(m) &&
	   mmhal_model_ctx(m) != a &&
	   mmhal_model_n_past(m) == 8 + SCRIPT_STEPS &&
	   mmhal_ctx_logits(a) && !memcmp(mmhal_ctx_logits(a),
					  sa.logits[SCRIPT_STEPS], sizeof(sa.logits[0])),
	   "each session keeps its own cache, tokens and logits (n_past %d, %d)",
	   mmhal_ctx_n_past(a), mmhal_ctx_n_past(b));
	ret |= mmhal_ctx_stats(a, &st) | mmhal_model_stats(m, &sd) |
	       mmhal_model_info(m, &in);
	mmhal_ctx_stats_reset(a);
	ret |= mmhal_ctx_stats(b, &sb2);
	tap_ok(!ret && st.prefill_tokens == 8 && st.prefill_calls == 1 &&
	   st.decode_tokens == SCRIPT_STEPS && sb2.prefill_tokens == 20 &&
	   sd.prefill_tokens == 8 && sd.decode_tokens == SCRIPT_STEPS &&
	   st.load_ms > 0 && st.load_ms == sd.load_ms &&
	   st.kv_bytes == in.kv_bytes && st.alloc_bytes >= st.kv_bytes &&
	   sd.alloc_bytes > st.alloc_bytes && st.n_past == 8 + SCRIPT_STEPS &&
	   st.n_ctx == 64 && mmhal_ctx_stats(a, &st) == 0 &&
	   st.decode_tokens == 0 && st.prefill_tokens == 0 &&
	   mmhal_ctx_stats(b, &sb2) == 0 && sb2.decode_tokens == SCRIPT_STEPS,
	   "stats per session (prefill %lld/%lld tokens, KV %llu), model-level load_ms; reset touches one session",
	   (long long)sd.prefill_tokens, (long long)sb2.prefill_tokens,
	   (unsigned long long)st.kv_bytes);
	mmhal_ctx_free(a);
	mmhal_ctx_free(b);
	mmhal_ctx_free(c);
	mmhal_model_free(m);
}

/* Rows of token_embd.weight for toks, dequantized as the file stores them
 * (the GGUF reader and mm_dequantize_row, not the model's layout). */
static float *embd_rows(const char *fn, const int32_t *toks, int n,
			int *n_embd)
{
	const struct mm_gguf_tensor *t;
	struct mm_gguf *g = NULL;
	float *rows = NULL;
	char err[256];

	if (mm_gguf_open(fn, &g, err, sizeof(err))) {
		printf("# %s: %s\n", fn, err);
		return NULL;
	}
	t = mm_gguf_tensor(g, "token_embd.weight");
	if (t) {
		const size_t rs = mm_row_bytes((enum mm_type)t->type, t->ne[0]);

		rows = malloc(sizeof(float) * n * t->ne[0]);
		for (int i = 0; rows && i < n; i++)
			mm_dequantize_row((enum mm_type)t->type,
					  (const uint8_t *)t->data + toks[i] * rs,
					  rows + (size_t)i * t->ne[0], t->ne[0]);
		*n_embd = (int)t->ne[0];
	}
	mm_gguf_close(g);
	return rows;
}

/*
 * mmhal_ctx_eval_embd() with the token_embd rows of tokens gives the
 * logits of mmhal_ctx_eval() of the tokens: a prefill of 8 and 4 decode
 * steps bit for bit (same batches); tokens then embeddings in one cache
 * within the chunked-prefill tolerance. Positions advance, tokens[] says
 * MMHAL_TOKEN_EMBD, and generation with a repetition penalty runs over
 * such a history.
 */
static void test_eval_embd(int t)
{
	struct mmhal_model *m = load(t, 64, MMHAL_KV_F16, 0, 1);
	struct mmhal_ctx *a = ctx_new(m, 64, 0, NULL, NULL);
	struct mmhal_ctx *b = ctx_new(m, 64, 0, NULL, NULL);
	struct mmhal_ctx *c = ctx_new(m, 64, 0, NULL, NULL);
	struct mmhal_sampler_params sp = mmhal_sampler_default_params();
	struct mmhal_sampler *s = NULL;
	float la[300], lb[300], l8[300], lc[300];
	int e = 0, ret = !a || !b || !c, same = 1, recorded = 1, ng = 0;
	float *rows = embd_rows(path[t], prompt, 8, &e);
	double d = 1;

	ret |= !rows;
	if (!ret) {
		ret = mmhal_ctx_eval(a, prompt, 8, la) |
		      mmhal_ctx_eval_embd(b, rows, 8, e, lb);
		same = !memcmp(la, lb, sizeof(la));
		memcpy(l8, la, sizeof(l8));
	}
	for (int step = 0; step < 4 && !ret && same; step++) {
		int32_t tok = argmax(la, 300);
		float *row = embd_rows(path[t], &tok, 1, &e);

		ret = !row || mmhal_ctx_eval(a, &tok, 1, la) ||
		      mmhal_ctx_eval_embd(b, row, 1, e, lb);
		same &= !memcmp(la, lb, sizeof(la));
		free(row);
	}
	tap_ok(!ret && same,
	   "%s: eval_embd of token_embd rows == eval of the tokens, bitwise (prefill 8, 4 decode steps)",
	   tname[t]);
	if (!ret) {
		ret = mmhal_ctx_eval(c, prompt, 4, NULL) |
		      mmhal_ctx_eval_embd(c, rows + 4 * e, 4, e, lc);
		d = reldiff(lc, l8, 300);
		for (int i = 0; i < 12; i++)
			recorded &= mmhal_ctx_tokens(b)[i] == MMHAL_TOKEN_EMBD;
		recorded &= mmhal_ctx_n_past(b) == 12 &&
			    mmhal_ctx_n_past(c) == 8 &&
			    mmhal_ctx_tokens(c)[3] == prompt[3] &&
			    mmhal_ctx_tokens(c)[4] == MMHAL_TOKEN_EMBD;
		sp.repeat_penalty = 1.3f;
		sp.seed = 3;
		ret |= mmhal_sampler_create(&sp, &s);
		if (!ret)
			ret = mmhal_ctx_generate(b, NULL, 0, 4, s,
						 MMHAL_GEN_IGNORE_EOG, NULL,
						 NULL, NULL, &ng);
	}
	tap_ok(!ret && d < 1e-4 && recorded && ng == 4 &&
	   mmhal_ctx_n_past(b) == 16,
	   "%s: 4 tokens + 4 embedding rows == prefill of the 8 tokens (%.1e); tokens[] records MMHAL_TOKEN_EMBD; generate over it",
	   tname[t], d);
	mmhal_sampler_free(s);
	free(rows);
	mmhal_ctx_free(a);
	mmhal_ctx_free(b);
	mmhal_ctx_free(c);
	mmhal_model_free(m);
}

struct abort_arg {
	int calls, stop_at;	/* stop_at > 0: non-zero from that call on */
};

static int on_abort(void *p)
{
	struct abort_arg *a = p;

	a->calls++;
	return a->stop_at > 0 && a->calls >= a->stop_at;
}

/* The abort callback stops an evaluation between layers (-ECANCELED);
 * the batches done before stay, and the rest evaluated afterwards gives
 * the logits of an uninterrupted run (same batches of 4). */
static void test_abort(void)
{
	struct mmhal_model *m = load(0, 64, MMHAL_KV_F16, 0, 1);
	struct abort_arg ab = { 0, 0 };
	struct mmhal_ctx *c = ctx_new(m, 64, 4, on_abort, &ab);
	struct mmhal_ctx *r = ctx_new(m, 64, 4, NULL, NULL);
	float lr[300], lc[300];
	int ret = !c || !r, r1 = 0, r2 = 0, r3 = 0;

	if (!ret)
		ret = mmhal_ctx_eval(r, long_prompt, 12, lr);
	if (!ret) {
		/* 2 layers: polls 1-2 are batch 1's, 4 is batch 2's second */
		ab.stop_at = 4;
		r1 = mmhal_ctx_eval(c, long_prompt, 12, lc);
	}
	tap_ok(!ret && r1 == -ECANCELED && ab.calls == 4 &&
	   mmhal_ctx_n_past(c) == 4 && !mmhal_ctx_logits(c) &&
	   strstr(mmhal_ctx_error(c), "abort"),
	   "abort callback: -ECANCELED between layers, the first batch kept (n_past %d): \"%s\"",
	   c ? mmhal_ctx_n_past(c) : -1, c ? mmhal_ctx_error(c) : "");
	if (!ret) {
		ab.stop_at = 0;
		r2 = mmhal_ctx_eval(c, long_prompt + 4, 8, lc);
	}
	tap_ok(!ret && !r2 && mmhal_ctx_n_past(c) == 12 &&
	   !memcmp(lc, lr, sizeof(lc)),
	   "after -ECANCELED, the rest of the prompt gives the uninterrupted logits (bitwise)");
	if (!ret) {
		ab.calls = 0;
		ab.stop_at = 1;
		r3 = mmhal_ctx_eval(c, long_prompt + 12, 1, NULL);
	}
	tap_ok(!ret && r3 == -ECANCELED && ab.calls == 1 &&
	   mmhal_ctx_n_past(c) == 12 && mmhal_ctx_logits(c) &&
	   !memcmp(mmhal_ctx_logits(c), lr, sizeof(lr)),
	   "abort at the first layer: nothing evaluated, the logits kept");
	mmhal_ctx_free(c);
	mmhal_ctx_free(r);
	mmhal_model_free(m);
}

/* r is expect, with a message, and no session made */
static int rejected(int r, int expect, const char *err,
		    const struct mmhal_ctx *c, const char *what)
{
	printf("# %s: %d \"%s\"\n", what, r, err);
	return r == expect && err[0] && !c;
}

static void test_ctx_params(void)
{
	struct mmhal_model *m = load(0, 64, MMHAL_KV_F16, 0, 1);
	struct mmhal_model *g4 = load(GQA4, 64, MMHAL_KV_F16, 0, 1);
	union {
		struct mmhal_ctx_params p;
		uint8_t b[sizeof(struct mmhal_ctx_params) + 16];
	} big;
	struct mmhal_ctx_params p;
	struct mmhal_model_stats st;
	struct mmhal_ctx *c = NULL;
	char err[256] = "";
	float row[257], l[300];
	int good = !!m && !!g4, r;

	/* NULL arguments */
	r = mmhal_ctx_create(NULL, NULL, &c, err, sizeof(err));
	good &= rejected(r, -EINVAL, err, c, "NULL model");
	err[0] = 0;
	r = m ? mmhal_ctx_create(m, NULL, NULL, err, sizeof(err)) : 0;
	good &= rejected(r, -EINVAL, err, NULL, "NULL out");
	tap_ok(good, "mmhal_ctx_create: NULL model or out: -EINVAL with a message");

	/* size and reserved */
	good = !!m;
	p = mmhal_ctx_default_params();
	p.size = 0;
	r = m ? mmhal_ctx_create(m, &p, &c, err, sizeof(err)) : 0;
	good &= rejected(r, -EINVAL, err, c, "size 0");
	p.size = offsetof(struct mmhal_ctx_params, abort_cb) + 4;
	r = m ? mmhal_ctx_create(m, &p, &c, err, sizeof(err)) : 0;
	good &= rejected(r, -EINVAL, err, c, "size inside abort_cb");
	p.size = 6;
	r = m ? mmhal_ctx_create(m, &p, &c, err, sizeof(err)) : 0;
	good &= rejected(r, -EINVAL, err, c, "size 6");
	memset(&big, 0, sizeof(big));
	big.p = mmhal_ctx_default_params();
	big.p.size = sizeof(big);
	big.b[sizeof(p) + 5] = 1;
	r = m ? mmhal_ctx_create(m, &big.p, &c, err, sizeof(err)) : 0;
	good &= rejected(r, -EINVAL, err, c, "larger size, unknown field set");
	p = mmhal_ctx_default_params();
	p.reserved[1] = 1;
	r = m ? mmhal_ctx_create(m, &p, &c, err, sizeof(err)) : 0;
	good &= rejected(r, -EINVAL, err, c, "reserved[1] set");
	tap_ok(good, "params.size 0, 6 or inside a pointer, unknown trailing fields set, reserved set: -EINVAL with a message");

	/* sizes accepted: larger with zeros past ours, an older header's
	 * smaller one (fields past it are not read: abort_cb garbage here),
	 * NULL params (defaults: n_ctx min(512, 4096)) */
	good = !!m;
	big.b[sizeof(p) + 5] = 0;
	big.p.n_ctx = 32;
	r = m ? mmhal_ctx_create(m, &big.p, &c, err, sizeof(err)) : -1;
	good &= !r && c && !mmhal_ctx_stats(c, &st) && st.n_ctx == 32;
	mmhal_ctx_free(c);
	c = NULL;
	p = mmhal_ctx_default_params();
	p.size = offsetof(struct mmhal_ctx_params, abort_cb);
	p.abort_cb = (mmhal_abort_cb)(uintptr_t)1;	/* past size: unread */
	r = m ? mmhal_ctx_create(m, &p, &c, err, sizeof(err)) : -1;
	good &= !r && c && !mmhal_ctx_eval(c, prompt, 8, l);
	mmhal_ctx_free(c);
	c = NULL;
	r = m ? mmhal_ctx_create(m, NULL, &c, err, sizeof(err)) : -1;
	good &= !r && c && !mmhal_ctx_stats(c, &st) && st.n_ctx == 512 &&
		!err[0];
	mmhal_ctx_free(c);
	c = NULL;
	tap_ok(good, "params: a larger size with zeros past ours, an older (smaller) size, NULL (defaults) accepted");

	/* values */
	good = !!m && !!g4;
	p = mmhal_ctx_default_params();
	p.kv_type = 3;
	r = m ? mmhal_ctx_create(m, &p, &c, err, sizeof(err)) : 0;
	good &= rejected(r, -EINVAL, err, c, "kv_type 3");
	p.kv_type = MMHAL_KV_Q8_0;
	r = g4 ? mmhal_ctx_create(g4, &p, &c, err, sizeof(err)) : 0;
	good &= rejected(r, -ENOTSUP, err, c, "Q8_0 KV, head dim 24");
	p = mmhal_ctx_default_params();
	p.n_ctx = 1 << 21;
	r = m ? mmhal_ctx_create(m, &p, &c, err, sizeof(err)) : 0;
	good &= rejected(r, -EINVAL, err, c, "n_ctx 2^21");
	p = mmhal_ctx_default_params();
	p.n_threads = 5000;
	r = m ? mmhal_ctx_create(m, &p, &c, err, sizeof(err)) : 0;
	good &= rejected(r, -EINVAL, err, c, "n_threads 5000");
	tap_ok(good, "kv_type 3, n_ctx 2^21, n_threads 5000: -EINVAL; Q8_0 KV with head dim 24: -ENOTSUP");

	/* eval_embd arguments */
	good = !!m;
	c = ctx_new(m, 64, 0, NULL, NULL);
	for (int i = 0; i < 257; i++)
		row[i] = (float)i / 257.0f;
	if (c) {
		r = mmhal_ctx_eval_embd(c, row, 1, 255, NULL);
		good &= r == -EINVAL && strstr(mmhal_ctx_error(c), "255") &&
			strstr(mmhal_ctx_error(c), "256");
		printf("# n_embd 255: %d \"%s\"\n", r, mmhal_ctx_error(c));
		good &= mmhal_ctx_eval_embd(c, NULL, 1, 256, NULL) == -EINVAL;
		good &= mmhal_ctx_eval_embd(c, row, 0, 256, NULL) == -EINVAL;
		row[100] = NAN;
		r = mmhal_ctx_eval_embd(c, row, 1, 256, NULL);
		good &= r == -EINVAL && strstr(mmhal_ctx_error(c), "finite");
		printf("# NaN: %d \"%s\"\n", r, mmhal_ctx_error(c));
		good &= mmhal_ctx_n_past(c) == 0 && !mmhal_ctx_logits(c);
	} else {
		good = 0;
	}
	good &= mmhal_ctx_eval_embd(NULL, row, 1, 256, NULL) == -EINVAL &&
		mmhal_ctx_eval(NULL, prompt, 1, NULL) == -EINVAL &&
		mmhal_ctx_stats(NULL, &st) == -EINVAL &&
		!strcmp(mmhal_ctx_error(NULL), "") && !mmhal_ctx_model(NULL) &&
		!mmhal_model_ctx(NULL);
	mmhal_ctx_free(NULL);
	tap_ok(good, "eval_embd: n_embd 255 (model 256), NULL rows, 0 rows, NaN: -EINVAL, nothing evaluated; NULL session: -EINVAL");
	mmhal_ctx_free(c);
	mmhal_model_free(m);
	mmhal_model_free(g4);
}

struct thr_job {
	struct mmhal_ctx *c;
	struct script *sc;
	int ret;
};

static void *thr_run(void *p)
{
	struct thr_job *j = p;

	mmhal_ctx_reset(j->c);
	j->ret = script_run(j->c, j->sc);
	return NULL;
}

/* Two sessions of one model (Q4_K) on two threads at once, 3 rounds,
 * agree bit for bit with the same scripts run one after the other. */
static void test_threads(void)
{
	static struct script ref[2], run[2];
	struct mmhal_model *m = load(3, 64, MMHAL_KV_F16, 0, 1);
	struct mmhal_ctx *c[2] = { ctx_new(m, 64, 0, NULL, NULL),
				   ctx_new(m, 64, 0, NULL, NULL) };
	int ret = !c[0] || !c[1], same = 1, rounds = 0;

	script_init(&ref[0], prompt, 8);
	script_init(&ref[1], long_prompt, 40);
	ret = ret || script_run(c[0], &ref[0]);
	if (!ret) {
		mmhal_ctx_reset(c[0]);
		ret = script_run(c[0], &ref[1]);
	}
	for (int round = 0; round < 3 && !ret; round++) {
		struct thr_job j[2];
		pthread_t th[2];

		for (int i = 0; i < 2; i++) {
			script_init(&run[i], ref[i].prompt, ref[i].n_prompt);
			j[i] = (struct thr_job){ .c = c[i ^ (round & 1)],
						 .sc = &run[i] };
			if (pthread_create(&th[i], NULL, thr_run, &j[i]))
				ret = 1;
		}
		for (int i = 0; i < 2; i++) {
			if (!ret)
				pthread_join(th[i], NULL);
			ret |= j[i].ret;
			same &= !memcmp(run[i].logits, ref[i].logits,
					sizeof(ref[i].logits));
		}
		rounds++;
	}
	tap_ok(!ret && same && rounds == 3,
	   "q4_K: two sessions on two threads at once == one after the other (bitwise, 3 rounds)");
	mmhal_ctx_free(c[0]);
	mmhal_ctx_free(c[1]);
	mmhal_model_free(m);
}

/* mmhal_model_load()'s params follow the one size-versioning rule */
static void test_model_params_size(void)
{
	struct mmhal_model_params p = mmhal_model_default_params();
	struct mmhal_model *m = NULL;
	char e0[256] = "", e1[256] = "";
	int r0, r1, r2;

	p.size = 2;
	r0 = mmhal_model_load(path[0], &p, &m, e0, sizeof(e0));
	p = mmhal_model_default_params();
	p.reserved[3] = 1;
	r1 = mmhal_model_load(path[0], &p, &m, e1, sizeof(e1));
	p = mmhal_model_default_params();
	p.size = offsetof(struct mmhal_model_params, reserved);
	p.n_threads = load_threads;
	r2 = mmhal_model_load(path[0], &p, &m, NULL, 0);
	mmhal_model_free(m);
	tap_ok(r0 == -EINVAL && strstr(e0, "model params.size 2") &&
	       r1 == -EINVAL && strstr(e1, "reserved") && !r2,
	       "model params by size: size 2 (%s), a reserved word (%s) refused; the struct without its reserved words loads (%d)",
	       e0, e1, r2);
}

static void test_sampler(void)
{
	struct mmhal_sampler_params p = mmhal_sampler_default_params();
	struct mmhal_sampler *s = NULL, *s2 = NULL;
	float lg[300];
	int32_t a[64], b[64];
	int same, diff, cnt[4] = { 0 };
	uint64_t st = 12345;

	for (int i = 0; i < 300; i++) {
		st = st * 6364136223846793005ull + 1442695040888963407ull;
		lg[i] = (float)((st >> 40) / 16777216.0 * 4.0 - 2.0);
	}
	p.temperature = 0;
	mmhal_sampler_create(&p, &s);
	tap_ok(s && mmhal_sampler_sample(s, lg, 300, NULL, 0) == argmax(lg, 300),
	   "temperature 0: greedy = argmax (%d)", argmax(lg, 300));
	{
		/* the blocked scan against the plain one: sizes around its
		 * 64-logit blocks and a 49152 vocabulary; few distinct values
		 * (ties: the first wins), the largest in the last block or
		 * the tail, NaN (never larger; at 0 it stays the pick), -inf */
		enum { NV = 49152 };
		static const int ns[] = { 1, 2, 63, 64, 65, 66, 127, 129, 300, NV };
		float *v = malloc(sizeof(float) * NV);
		int bad = -1;

		for (int c = 0; c < 60 && bad < 0 && v; c++) {
			const int n = ns[c % 10];

			for (int i = 0; i < n; i++) {
				st = st * 6364136223846793005ull + 1442695040888963407ull;
				v[i] = c % 3 ? (float)((st >> 40) % 7) : (float)(st >> 40);
			}
			if (c % 4 == 1)
				v[n - 1] = 1e30f;
			if (c % 5 == 2)
				v[(n - 1) / 2] = NAN;
			if (c % 6 == 3)
				v[0] = NAN;
			if (c % 7 == 4)
				v[n / 3] = INFINITY;
			if (c % 8 == 5)
				for (int i = 0; i < n; i++)
					v[i] = -INFINITY;
			if (mmhal_sampler_sample(s, v, n, NULL, 0) != argmax(v, n))
				bad = c;
		}
		tap_ok(v && bad < 0, "greedy = a plain scan: 60 vectors of 1-49152 logits, ties, NaN, inf (first bad %d)",
		   bad);
		free(v);
	}
	mmhal_sampler_free(s);

	p = mmhal_sampler_default_params();
	p.temperature = 1.0f;
	p.top_k = 0;
	p.top_p = 1.0f;
	p.seed = 42;
	mmhal_sampler_create(&p, &s);
	mmhal_sampler_create(&p, &s2);
	same = 1;
	diff = 0;
	for (int i = 0; i < 64; i++) {
		a[i] = mmhal_sampler_sample(s, lg, 300, NULL, 0);
		b[i] = mmhal_sampler_sample(s2, lg, 300, NULL, 0);
		same &= a[i] == b[i];
		diff += a[i] != a[0];
	}
	mmhal_sampler_reseed(s2, 43);
	for (int i = 0, d2 = 0; i < 64; i++) {
		d2 += mmhal_sampler_sample(s2, lg, 300, NULL, 0) != a[i];
		if (i == 63)
			diff = diff && d2;
	}
	tap_ok(same && diff, "seeded sampling reproducible, another seed differs");
	mmhal_sampler_free(s);
	mmhal_sampler_free(s2);

	p.top_k = 1;
	mmhal_sampler_create(&p, &s);
	same = 1;
	for (int i = 0; i < 32; i++)
		same &= mmhal_sampler_sample(s, lg, 300, NULL, 0) ==
			argmax(lg, 300);
	tap_ok(same, "top-k 1 equals greedy");
	mmhal_sampler_free(s);

	/* probabilities 0.5, 0.3, 0.15, 0.05 */
	{
		float l4[4] = { logf(0.5f), logf(0.3f), logf(0.15f),
				logf(0.05f) };

		p.top_k = 0;
		p.top_p = 0.9f;
		p.temperature = 1.0f;
		mmhal_sampler_create(&p, &s);
		for (int i = 0; i < 2000; i++)
			cnt[mmhal_sampler_sample(s, l4, 4, NULL, 0)]++;
		tap_ok(cnt[3] == 0 && cnt[0] > cnt[1] && cnt[1] > cnt[2] &&
		   cnt[2] > 0 && fabs(cnt[0] / 2000.0 - 0.5 / 0.95) < 0.05,
		   "top-p 0.9 drops the 5%% tail, keeps the rest in proportion (%d %d %d %d)",
		   cnt[0], cnt[1], cnt[2], cnt[3]);
		mmhal_sampler_free(s);
		p.top_p = 0.4f;
		mmhal_sampler_create(&p, &s);
		same = 1;
		for (int i = 0; i < 200; i++)
			same &= mmhal_sampler_sample(s, l4, 4, NULL, 0) == 0;
		tap_ok(same, "top-p 0.4 keeps only the top token");
		mmhal_sampler_free(s);
	}

	/* repetition penalty */
	{
		float l3[4] = { 1.0f, 1.2f, -0.5f, -0.6f };
		int32_t hist[3] = { 1, 2, 1 };
		float l5[2] = { -0.5f, -0.6f };
		int32_t h5[1] = { 0 };
		int g1, g2, g3, g4;

		p = mmhal_sampler_default_params();
		p.temperature = 0;
		p.repeat_penalty = 1.5f;
		mmhal_sampler_create(&p, &s);
		g1 = mmhal_sampler_sample(s, l3, 4, NULL, 0);
		g2 = mmhal_sampler_sample(s, l3, 4, hist, 3);
		g3 = mmhal_sampler_sample(s, l5, 2, NULL, 0);
		g4 = mmhal_sampler_sample(s, l5, 2, h5, 1);
		mmhal_sampler_free(s);
		p.repeat_last_n = 1;	/* only the last token (1) counts */
		mmhal_sampler_create(&p, &s);
		tap_ok(g1 == 1 && g2 == 0 && g3 == 0 && g4 == 1 &&
		   mmhal_sampler_sample(s, l3, 4, (int32_t[]){ 1, 0 }, 2) == 1 &&
		   l3[1] == 1.2f,
		   "repetition penalty lowers repeated tokens (positive and negative logits, window)");
		/* embedding positions in the history: neither penalised nor
		 * counted in the window of 1 (token 1 is still its last) */
		tap_ok(mmhal_sampler_sample(s, l3, 4, (int32_t[]){ 1, MMHAL_TOKEN_EMBD,
			MMHAL_TOKEN_EMBD }, 3) == 0 &&
		   mmhal_sampler_sample(s, l3, 4, (int32_t[]){ MMHAL_TOKEN_EMBD }, 1) == 1,
		   "repetition penalty skips MMHAL_TOKEN_EMBD entries (window counts token ids)");
		mmhal_sampler_free(s);
	}
	tap_ok(mmhal_sampler_create(&(struct mmhal_sampler_params){
		.size = sizeof(struct mmhal_sampler_params),
		.temperature = NAN, .top_p = 1, .repeat_penalty = 1 }, &s) ==
	   -EINVAL && !s, "bad sampler params: -EINVAL");
	{
		/* the size-versioning rule: no size, a reserved word, a
		 * larger struct with a set tail: -EINVAL; a larger one with
		 * a zero tail and an older one (defaults after it): accepted */
		struct {
			struct mmhal_sampler_params p;
			uint32_t tail;
		} big = { .p = mmhal_sampler_default_params() };
		struct mmhal_sampler_params sp = mmhal_sampler_default_params();
		int r0, r1, r2, r3, r4;

		sp.size = 0;
		r0 = mmhal_sampler_create(&sp, &s);
		sp = mmhal_sampler_default_params();
		sp.reserved[0] = 1;
		r1 = mmhal_sampler_create(&sp, &s);
		big.p.size = sizeof(big);
		big.tail = 7;
		r2 = mmhal_sampler_create(&big.p, &s);
		big.tail = 0;
		r3 = mmhal_sampler_create(&big.p, &s);
		mmhal_sampler_free(s);
		sp = mmhal_sampler_default_params();
		sp.size = offsetof(struct mmhal_sampler_params, reserved);
		r4 = mmhal_sampler_create(&sp, &s);
		mmhal_sampler_free(s);
		s = NULL;
		tap_ok(r0 == -EINVAL && r1 == -EINVAL && r2 == -EINVAL &&
		       !r3 && !r4,
		       "sampler params by size: none %d, reserved %d, set tail %d -EINVAL; zero tail %d, older %d accepted",
		       r0, r1, r2, r3, r4);
	}
}

struct gen_cb {
	char text[2048];
	size_t len;
	int n;
};

static int on_token(int32_t tok, const char *piece, size_t len, void *arg)
{
	struct gen_cb *g = arg;

	(void)tok;
	if (g->len + len < sizeof(g->text)) {
		memcpy(g->text + g->len, piece, len);
		g->len += len;
		g->text[g->len] = 0;
	}
	g->n++;
	return 0;
}

static void test_chat(void)
{
	struct mmhal_model *m = load(1, 256, MMHAL_KV_F16, 0, 1);
	struct mmhal_chat_msg msgs[2] = {
		{ "system", "You are a helpful assistant." },
		{ "user", "What is the capital of France?" },
	};
	struct mmhal_sampler_params sp = mmhal_sampler_default_params();
	struct mmhal_sampler *s = NULL;
	struct gen_cb cb = { .len = 0 };
	char buf[1024], text[2048];
	int32_t ids[256], out[32];
	size_t len = 0, tl = 0;
	int n = 0, ng = 0, ret;

	if (!m) {
		tap_ok(0, "chat path");
		tap_ok(0, "generate stats");
		return;
	}
	ret = mmhal_model_chat_format(m, msgs, 2, 1, buf, sizeof(buf), &len);
	if (!ret)
		ret = mmhal_model_tokenize(m, buf, len, 0, 1, ids, 256, &n);
	printf("# chat: %zu bytes -> %d tokens (ret %d)\n", len, n, ret);
	sp.seed = 7;
	sp.repeat_penalty = 1.1f;
	if (!ret)
		ret = mmhal_sampler_create(&sp, &s);
	if (!ret)
		ret = mmhal_model_generate(m, ids, n, 16, s,
					   MMHAL_GEN_IGNORE_EOG, out, on_token,
					   &cb, &ng);
	if (!ret)
		ret = mmhal_model_detokenize(m, out, ng, text, sizeof(text),
					     &tl);
	printf("# generated %d tokens: \"%s\"\n", ng, ret ? "" : text);
	tap_ok(!ret && len > 0 && strstr(buf, "<|im_start|>assistant\n") &&
	   n > 10 && ng == 16 && tl > 0 && cb.n == 16 && cb.len > 0,
	   "chat path: chat_format -> tokenize -> generate -> detokenize gives text (%zu bytes)",
	   tl);
	{
		struct mmhal_model_stats st;

		mmhal_model_stats(m, &st);
		tap_ok(st.prefill_tokens == n && st.decode_tokens == 16 &&
		   st.sample_tokens == 16 && mmhal_model_n_past(m) == n + 16,
		   "generate accounting: prefill %lld, decode %lld, sampled %lld",
		   (long long)st.prefill_tokens, (long long)st.decode_tokens,
		   (long long)st.sample_tokens);
	}
	mmhal_sampler_free(s);
	mmhal_model_free(m);
}


/* ---- context shift ---------------------------------------------------- */

static struct mmhal_ctx *shift_ctx(struct mmhal_model *m, int n_ctx, int kv,
				   int shift, int n_keep)
{
	struct mmhal_ctx_params p = mmhal_ctx_default_params();
	struct mmhal_ctx *c = NULL;
	char err[256];
	int ret;

	if (!m)
		return NULL;
	p.n_ctx = n_ctx;
	p.n_threads = 2;
	p.kv_type = kv;
	p.ctx_shift = shift;
	p.n_keep = n_keep;
	ret = mmhal_ctx_create(m, &p, &c, err, sizeof(err));
	if (ret)
		printf("# ctx_create: %d %s\n", ret, err);
	return c;
}

/*
 * One layer (gqa4): a position's K/V rows depend only on its token and
 * position, so after a shift the cache must be the one a fresh session
 * builds from the kept tokens at their new positions, and the next
 * logits equal. F32 KV: only the rotation's rounding differs (tol 1e-5
 * of the logit range); F16 KV: the shifted keys are rounded to F16 twice
 * (tol 2e-3).
 */
static void test_shift_exact(int kv, double tol)
{
	struct mmhal_model *m = load(GQA4, 64, MMHAL_KV_F16, 0, 1);
	struct mmhal_ctx *a = shift_ctx(m, 32, kv, 1, 4);
	struct mmhal_ctx *b = shift_ctx(m, 32, kv, 0, 0);
	struct mmhal_model_stats st;
	float la[300], lb[300];
	int32_t toks[40], kept[32];
	int ret = !a || !b, n = 0;
	double d = -1;

	for (int i = 0; i < 40; i++)
		toks[i] = (i * 53 + 11) % 300;
	if (!ret)
		ret = mmhal_ctx_eval(a, toks, 30, NULL);
	/* 5 more do not fit: keep 4, discard max(13, 3) = 13 */
	if (!ret)
		ret = mmhal_ctx_eval(a, toks + 30, 5, la);
	if (!ret) {
		n = mmhal_ctx_n_past(a);
		memcpy(kept, mmhal_ctx_tokens(a), n * sizeof(int32_t));
		ret = mmhal_ctx_eval(b, kept, n, lb);
		d = reldiff(la, lb, 300);
	}
	mmhal_ctx_stats(a, &st);
	tap_ok(!ret && n == 22 && st.shifts == 1 && st.shift_discarded == 13 &&
	   kept[3] == toks[3] && kept[4] == toks[17] && kept[21] == toks[34] &&
	   d <= tol,
	   "context shift (KV %s): n_past %d, shifts %lld, discarded %lld; logits vs a fresh session on the kept tokens %.2e (tol %.0e)",
	   kv == MMHAL_KV_F32 ? "F32" : "F16", n, (long long)st.shifts,
	   (long long)st.shift_discarded, d, tol);
	/* and again, by decode steps (the 1-token path) */
	for (int s = 0; s < 20 && !ret; s++) {
		int32_t t = argmax(la, 300);

		ret = mmhal_ctx_eval(a, &t, 1, la);
	}
	if (!ret) {
		n = mmhal_ctx_n_past(a);
		memcpy(kept, mmhal_ctx_tokens(a), n * sizeof(int32_t));
		mmhal_ctx_reset(b);
		ret = mmhal_ctx_eval(b, kept, n, lb);
		d = reldiff(la, lb, 300);
	}
	mmhal_ctx_stats(a, &st);
	tap_ok(!ret && st.shifts >= 2 && d <= tol,
	   "decode steps through %lld shifts: logits vs fresh %.2e",
	   (long long)st.shifts, d);
	mmhal_ctx_free(a);
	mmhal_ctx_free(b);
	mmhal_model_free(m);
}

/*
 * Two layers (tiny): the later layers' rows depend on the discarded
 * context, so the cache is checked row by row: each moved V row is the
 * same bytes, each moved K row the old row rotated back by the distance
 * (computed here in double from the file's rope base) within the cache
 * type's rounding: F16 2^-10 relative + 1e-6, Q8_0 one step of its
 * block (max |x| / 127) + 1e-6.
 */
static double rot_ref_err(const struct mmhal_ctx *c, const float *old,
			  int k0, int k1, int n_old)
{
	const struct mm_llama_hp *hp = &c->model->hp;
	const int hd = hp->head_dim;
	double worst = 0;
	float *row = malloc(hd * sizeof(float));

	for (int l = 0; l < hp->n_layer; l++)
		for (int h = 0; h < hp->n_head_kv; h++)
			for (int t = k1; t < n_old; t++) {
				const float *o = old + ((((size_t)l * hp->n_head_kv + h) *
							 n_old + t) * hd);
				size_t at = mm_kv_at(c, l, h, t - (k1 - k0));
				double amax = 0;

				mm_dequantize_row((enum mm_type)c->kv_type,
						  c->kv_k + at, row, hd);
				for (int i = 0; i < hd; i++)
					amax = fabs(o[i]) > amax ? fabs(o[i]) : amax;
				for (int i = 0; i < hd; i += 2) {
					double f = pow(10000.0, -(double)i / hp->n_rot);
					double th = -(double)(k1 - k0) * f;
					double a = o[i], b = o[i + 1];
					double ra = i < hp->n_rot ? a * cos(th) - b * sin(th) : a;
					double rb = i < hp->n_rot ? a * sin(th) + b * cos(th) : b;
					double lim = c->kv_type == MMHAL_KV_Q8_0 ?
						amax / 127 + 1e-6 :
						fabs(ra) / 1024 + 1e-6;
					double e0 = fabs(row[i] - ra) / lim;
					double e1 = fabs(row[i + 1] - rb) /
						(c->kv_type == MMHAL_KV_Q8_0 ? lim :
						 fabs(rb) / 1024 + 1e-6);

					worst = e0 > worst ? e0 : worst;
					worst = e1 > worst ? e1 : worst;
				}
			}
	free(row);
	return worst;
}

static void test_shift_rows(int kv)
{
	struct mmhal_model *m = load(1, 64, MMHAL_KV_F16, 0, 1);
	struct mmhal_ctx *a = shift_ctx(m, 32, kv, 1, 4);
	const char *kn = kv == MMHAL_KV_Q8_0 ? "Q8_0" : "F16";
	int32_t toks[32];
	float *old = NULL;
	uint8_t *oldv = NULL;
	int ret = !a, vsame = 0, n_old = 0;
	double worst = -1;

	for (int i = 0; i < 32; i++)
		toks[i] = (i * 29 + 5) % 300;
	if (!ret)
		ret = mmhal_ctx_eval(a, toks, 32, NULL);	/* full */
	if (!ret) {
		const struct mm_llama_hp *hp = &m->hp;
		size_t nrow = (size_t)hp->n_layer * hp->n_head_kv * 32;

		n_old = 32;
		old = malloc(nrow * hp->head_dim * sizeof(float));
		oldv = malloc(nrow * a->kv_rs);
		for (int l = 0; l < hp->n_layer; l++)
			for (int h = 0; h < hp->n_head_kv; h++)
				for (int t = 0; t < 32; t++) {
					size_t r = ((size_t)l * hp->n_head_kv + h) * 32 + t;

					mm_dequantize_row((enum mm_type)kv,
							  a->kv_k + mm_kv_at(a, l, h, t),
							  old + r * hp->head_dim,
							  hp->head_dim);
					memcpy(oldv + r * a->kv_rs,
					       a->kv_v + mm_kv_at(a, l, h, t),
					       a->kv_rs);
				}
		/* one more: keep 4, discard 14 of 28 */
		ret = mmhal_ctx_eval(a, toks, 1, NULL);
	}
	if (!ret) {
		const struct mm_llama_hp *hp = &m->hp;

		worst = rot_ref_err(a, old, 4, 18, n_old);
		vsame = mmhal_ctx_n_past(a) == 19;
		for (int l = 0; l < hp->n_layer; l++)
			for (int h = 0; h < hp->n_head_kv; h++)
				for (int t = 0; t < 32; t++) {
					size_t r = ((size_t)l * hp->n_head_kv + h) * 32 + t;
					int nt = t < 4 ? t : t - 14;

					if (t >= 4 && t < 18)
						continue;
					vsame &= !memcmp(oldv + r * a->kv_rs,
							 a->kv_v + mm_kv_at(a, l, h, nt),
							 a->kv_rs);
				}
	}
	tap_ok(!ret && vsame && worst >= 0 && worst <= 1,
	   "context shift (tiny, KV %s): V rows moved bit for bit, K rows = old rotated by -14 within %.2f of the rounding bound",
	   kn, worst);
	free(old);
	free(oldv);
	mmhal_ctx_free(a);
	mmhal_model_free(m);
}

/* generate runs for 3 x n_ctx tokens with the shift on (the first n_keep
 * positions stay); -ENOSPC at n_ctx with it off; n_keep bounds */
static void test_shift_generate(void)
{
	struct mmhal_model *m = load(1, 64, MMHAL_KV_F16, 0, 1);
	struct mmhal_ctx *a = shift_ctx(m, 32, MMHAL_KV_Q8_0, 1, 5);
	struct mmhal_ctx *b = shift_ctx(m, 32, MMHAL_KV_F16, 0, 0);
	struct mmhal_ctx *bad = NULL;
	struct mmhal_ctx_params p = mmhal_ctx_default_params();
	struct mmhal_model_stats st;
	static int32_t out[96];
	char err[256];
	int ret = !a || !b, n = 0, nb = 0, rb = 0, good = 1;

	if (!ret)
		ret = mmhal_ctx_generate(a, prompt, 8, 96, NULL,
					 MMHAL_GEN_IGNORE_EOG, out, NULL, NULL,
					 &n);
	mmhal_ctx_stats(a, &st);
	tap_ok(!ret && n == 96 && st.shifts >= 3 && mmhal_ctx_n_past(a) <= 32 &&
	   !memcmp(mmhal_ctx_tokens(a), prompt, 5 * sizeof(int32_t)) &&
	   st.n_past + st.shift_discarded == 8 + 96,
	   "generate 96 tokens in n_ctx 32 (KV Q8_0, n_keep 5): ret %d, %d tokens, %lld shifts, %lld discarded, n_past %d",
	   ret, n, (long long)st.shifts, (long long)st.shift_discarded,
	   st.n_past);
	if (b)
		rb = mmhal_ctx_generate(b, prompt, 8, 96, NULL,
					MMHAL_GEN_IGNORE_EOG, NULL, NULL, NULL,
					&nb);
	tap_ok(rb == -ENOSPC && nb == 25 &&
	   mmhal_ctx_n_past(b) == 32,
	   "shift off (default): generate stops with -ENOSPC at n_ctx (%d tokens, %d)",
	   nb, rb);
	/* n_keep bounds */
	p.n_ctx = 32;
	p.n_threads = 1;
	p.ctx_shift = 1;
	p.n_keep = 32;
	good &= rejected(mmhal_ctx_create(m, &p, &bad, err, sizeof(err)),
			 -EINVAL, err, bad, "n_keep 32 of n_ctx 32");
	p.n_keep = -1;
	good &= rejected(mmhal_ctx_create(m, &p, &bad, err, sizeof(err)),
			 -EINVAL, err, bad, "n_keep -1");
	p.n_keep = 0;
	p.ctx_shift = 2;
	good &= rejected(mmhal_ctx_create(m, &p, &bad, err, sizeof(err)),
			 -EINVAL, err, bad, "ctx_shift 2");
	/* n_keep 31 of 32: an eval of 2 never fits; nothing evaluated */
	p.ctx_shift = 1;
	p.n_keep = 31;
	if (mmhal_ctx_create(m, &p, &bad, err, sizeof(err))) {
		good = 0;
	} else {
		int r1 = mmhal_ctx_eval(bad, long_prompt, 31, NULL);
		int r2 = mmhal_ctx_eval(bad, long_prompt, 2, NULL);
		int named = strstr(mmhal_ctx_error(bad), "n_keep") != NULL;
		int r3 = mmhal_ctx_eval(bad, long_prompt, 1, NULL);
		int r4 = mmhal_ctx_eval(bad, long_prompt, 1, NULL);

		printf("# n_keep 31: %d %d %d %d\n", r1, r2, r3, r4);
		good &= !r1 && r2 == -ENOSPC && r3 == 0 && r4 == 0 &&
			mmhal_ctx_n_past(bad) == 32 && named;
		mmhal_ctx_free(bad);
	}
	tap_ok(good, "n_keep n_ctx / -1, ctx_shift 2: -EINVAL; n_keep 31: an eval of 2 -ENOSPC, of 1 shifts out the one position after n_keep");
	mmhal_ctx_free(a);
	mmhal_ctx_free(b);
	mmhal_model_free(m);
}

/*
 * Embedding runs are not cut: a discard end or an n_keep inside a run
 * moves to its end; one id's runs a few marker tokens apart count as one.
 */
static int shift_layout(struct mmhal_ctx *c, const float *rows, int ne,
			const int *lay, int nl, const uint64_t *ids)
{
	int ret = 0, t = 0;

	for (int i = 0; i < nl && !ret; i++) {
		if (lay[i] > 0) {
			ret = mmhal_ctx_eval(c, long_prompt + t, lay[i], NULL);
			t += lay[i];
		} else {
			ret = mmhal_ctx_eval_embd_id(c, rows, -lay[i], ne,
						     ids[i], NULL);
		}
	}
	return ret;
}

static void test_shift_runs(void)
{
	struct mmhal_model *m = load(0, 64, MMHAL_KV_F16, 0, 1);
	int ne = 0;
	float *rows = embd_rows(path[0], long_prompt, 10, &ne);
	/* counts: > 0 tokens, < 0 embedding rows */
	static const int lay1[] = { 12, -10, 6 };	/* run at 12 .. 21 */
	static const int lay2[] = { 12, -4, 2, -4, 6 };	/* one id, 2 markers */
	static const int lay3[] = { 12, -4, 2, -4, 6 };	/* two ids */
	static const int lay4[] = { 2, -4, 22 };	/* run at 2 .. 5 */
	const uint64_t id1[] = { 0, 0, 0 }, id2[] = { 0, 9, 0, 9, 0 };
	const uint64_t id3[] = { 0, 9, 0, 8, 0 }, id4[] = { 0, 5, 0 };
	struct mmhal_model_stats st[4];
	int ret = !m || !rows, embd_left[4] = { 0 };
	const struct { const int *lay; int nl, n_keep; const uint64_t *ids; } cs[4] = {
		{ lay1, 3, 2, id1 }, { lay2, 5, 2, id2 }, { lay3, 5, 2, id3 },
		{ lay4, 3, 3, id4 },
	};

	for (int k = 0; k < 4 && !ret; k++) {
		struct mmhal_ctx *c = shift_ctx(m, 32, MMHAL_KV_F16, 1, cs[k].n_keep);

		ret = !c || shift_layout(c, rows, ne, cs[k].lay, cs[k].nl, cs[k].ids);
		/* 28 in the cache; 6 more: discard from n_keep max(13, 2) */
		if (!ret)
			ret = mmhal_ctx_eval(c, long_prompt + 30, 6, NULL);
		mmhal_ctx_stats(c, &st[k]);
		for (int i = 0; !ret && i < st[k].n_past; i++)
			embd_left[k] += mmhal_ctx_tokens(c)[i] == MMHAL_TOKEN_EMBD;
		mmhal_ctx_free(c);
	}
	/* 1: 2 + 13 = 15 inside 12..21: to 22 (20 discarded, no rows left);
	 * 2: the same with one id's two runs and markers between (20);
	 * 3: two ids: the cut at 15 moves to the end of the first (16: 14);
	 * 4: n_keep 3 inside the run at 2..5 keeps it: 6 + max(11, 2) = 17 */
	tap_ok(!ret && st[0].shift_discarded == 20 && embd_left[0] == 0 &&
	   st[1].shift_discarded == 20 && embd_left[1] == 0 &&
	   st[2].shift_discarded == 14 && embd_left[2] == 4 &&
	   st[3].shift_discarded == 11 && embd_left[3] == 4,
	   "shift never cuts an embedding run: discarded %lld/%lld/%lld/%lld, rows left %d/%d/%d/%d",
	   (long long)st[0].shift_discarded, (long long)st[1].shift_discarded,
	   (long long)st[2].shift_discarded, (long long)st[3].shift_discarded,
	   embd_left[0], embd_left[1], embd_left[2], embd_left[3]);
	free(rows);
	mmhal_model_free(m);
}

/* ---- state files ------------------------------------------------------ */

static int file_copy(const char *src, const char *dst, long cut, long flip)
{
	FILE *a = fopen(src, "rb"), *b = fopen(dst, "wb");
	long n = 0, size;
	int ch, ret = !a || !b;

	if (!ret) {
		fseek(a, 0, SEEK_END);
		size = ftell(a);
		fseek(a, 0, SEEK_SET);
		while ((ch = fgetc(a)) != EOF && n < size - cut) {
			fputc(n == flip ? ch ^ 0x10 : ch, b);
			n++;
		}
	}
	if (a)
		fclose(a);
	if (b)
		fclose(b);
	return ret;
}

/* Writes the 32-bit word at byte off of a copy of src. */
static int file_poke(const char *src, const char *dst, long off, uint32_t v)
{
	FILE *f;

	if (file_copy(src, dst, 0, -1))
		return 1;
	f = fopen(dst, "r+b");
	if (!f)
		return 1;
	fseek(f, off, SEEK_SET);
	fwrite(&v, 4, 1, f);
	fclose(f);
	return 0;
}

/*
 * A session saved and loaded into a new one continues identically (same
 * tokens, ids, logits, then the same next-step logits bit for bit, for
 * F16 and Q8_0 caches); truncated, corrupted, other-model, other-KV-type
 * and too-long files are refused with the field named, leaving the
 * session as it was.
 */
static void test_state(int kv)
{
	struct mmhal_model *m = load(1, 64, MMHAL_KV_F16, 0, 1);
	struct mmhal_model *m0 = load(0, 64, MMHAL_KV_F16, 0, 1);
	struct mmhal_ctx *a = shift_ctx(m, 64, kv, 0, 0);
	struct mmhal_ctx *b = shift_ctx(m, 64, kv, 0, 0);
	const char *kn = kv == MMHAL_KV_Q8_0 ? "Q8_0" : "F16";
	char fn[400], bad[420], tmpn[420];
	float la[300], lb[300];
	int ne = 0, ret = !a || !b, same = 0;
	float *rows = embd_rows(path[1], long_prompt, 3, &ne);

	snprintf(fn, sizeof(fn), "%s/state-%s.bin", dir, kn);
	snprintf(bad, sizeof(bad), "%s.bad", fn);
	snprintf(tmpn, sizeof(tmpn), "%s.tmp", fn);
	if (!ret)
		ret = mmhal_ctx_eval(a, prompt, 8, NULL);
	if (!ret)
		ret = mmhal_ctx_eval_embd_id(a, rows, 3, ne, 0xabcdefull, NULL);
	if (!ret)
		ret = mmhal_ctx_eval(a, long_prompt, 5, la);
	if (!ret)
		ret = mmhal_ctx_state_save(a, fn);
	if (!ret)
		ret = mmhal_ctx_state_load(b, fn);
	if (!ret) {
		same = mmhal_ctx_n_past(b) == 16 &&
			!memcmp(mmhal_ctx_tokens(a), mmhal_ctx_tokens(b), 16 * 4) &&
			!memcmp(mmhal_ctx_ids(a), mmhal_ctx_ids(b), 16 * 8) &&
			mmhal_ctx_ids(b)[9] == 0xabcdefull && mmhal_ctx_logits(b) &&
			!memcmp(mmhal_ctx_logits(b), la, sizeof(la));
		ret = mmhal_ctx_eval(a, (int32_t[]){ 77 }, 1, la);
		ret |= mmhal_ctx_eval(b, (int32_t[]){ 77 }, 1, lb);
		same &= !memcmp(la, lb, sizeof(la));
	}
	tap_ok(!ret && same && access(tmpn, F_OK) != 0,
	   "state (KV %s): saved and loaded into a new session: tokens, ids, logits and the next step's logits bit for bit (%s)",
	   kn, ret ? mmhal_ctx_error(b) : "");
	{
		/* refusals: b holds 17 positions, which must stay */
		struct mmhal_ctx *o = shift_ctx(m0, 64, kv, 0, 0);
		struct mmhal_ctx *q = shift_ctx(m, 64, kv == MMHAL_KV_F16 ?
						 MMHAL_KV_Q8_0 : MMHAL_KV_F16, 0, 0);
		struct mmhal_ctx *sm = shift_ctx(m, 12, kv, 0, 0);
		int good = o && q && sm, r;
		const struct { const char *what, *field; long cut, flip, poke;
			       uint32_t v; int err; } cs[] = {
			{ "truncated by 10", "truncated", 10, -1, -1, 0, -EINVAL },
			{ "header only", "size", 0, -1, 0, 0, -EINVAL },
			{ "a payload byte flipped", "checksum", 0, 200, -1, 0, -EINVAL },
			{ "magic", "magic", 0, 1, -1, 0, -EINVAL },
			{ "version 9", "version", 0, -1, 8, 9, -EINVAL },
			{ "n_layer 3", "n_layer", 0, -1, 16, 3, -EINVAL },
			{ "n_past > n_ctx", "n_past", 0, -1, 48, 1000, -EINVAL },
			{ "has_logits 2", "has_logits", 0, -1, 52, 2, -EINVAL },
		};

		for (size_t i = 0; good && i < sizeof(cs) / sizeof(cs[0]); i++) {
			if (cs[i].poke > 0)
				file_poke(fn, bad, cs[i].poke, cs[i].v);
			else if (cs[i].poke == 0)
				file_copy(fn, bad, 0, -1), truncate(bad, 80);
			else
				file_copy(fn, bad, cs[i].cut, cs[i].flip);
			r = mmhal_ctx_state_load(b, bad);
			printf("# %s: %d \"%s\"\n", cs[i].what, r, mmhal_ctx_error(b));
			good &= r == cs[i].err &&
				strstr(mmhal_ctx_error(b), cs[i].field) != NULL &&
				mmhal_ctx_n_past(b) == 17;
		}
		r = good ? mmhal_ctx_state_load(o, fn) : 0;
		printf("# other model: %d \"%s\"\n", r, o ? mmhal_ctx_error(o) : "");
		good &= r == -EINVAL && strstr(mmhal_ctx_error(o), "model_hash") &&
			mmhal_ctx_n_past(o) == 0;
		r = good ? mmhal_ctx_state_load(q, fn) : 0;
		printf("# other kv_type: %d \"%s\"\n", r, q ? mmhal_ctx_error(q) : "");
		good &= r == -EINVAL && strstr(mmhal_ctx_error(q), "kv_type");
		r = good ? mmhal_ctx_state_load(sm, fn) : 0;
		printf("# n_ctx 12: %d \"%s\"\n", r, sm ? mmhal_ctx_error(sm) : "");
		good &= r == -ENOSPC && strstr(mmhal_ctx_error(sm), "n_ctx");
		r = mmhal_ctx_state_load(b, bad);	/* still refused */
		good &= mmhal_ctx_eval(b, (int32_t[]){ 5 }, 1, lb) == 0 &&
			mmhal_ctx_eval(a, (int32_t[]){ 5 }, 1, la) == 0 &&
			!memcmp(la, lb, sizeof(la));
		tap_ok(good, "state (KV %s): truncated, corrupted, other model / KV type / too long refused, naming the field; the session unchanged",
		   kn);
		mmhal_ctx_free(o);
		mmhal_ctx_free(q);
		mmhal_ctx_free(sm);
	}
	unlink(fn);
	unlink(bad);
	free(rows);
	mmhal_ctx_free(a);
	mmhal_ctx_free(b);
	mmhal_model_free(m);
	mmhal_model_free(m0);
}

/* ---- precision tiers -------------------------------------------------- */

static struct mmhal_ctx *tier_ctx(struct mmhal_model *m, int mode, int tier,
				  float t0, float t1)
{
	struct mmhal_ctx_params p = mmhal_ctx_default_params();
	struct mmhal_ctx *c = NULL;
	char err[256];
	int ret;

	if (!m)
		return NULL;
	p.n_ctx = 64;
	p.n_threads = 2;
	p.tier_mode = mode;
	p.tier = tier;
	p.tier_threshold[0] = t0;
	p.tier_threshold[1] = t1;
	ret = mmhal_ctx_create(m, &p, &c, err, sizeof(err));
	if (ret)
		printf("# tier ctx_create: %d %s\n", ret, err);
	return c;
}

/* The tiny model with Q8_0 and F16 tiers added to its Q4_K file. */
static struct mmhal_model *tier_model(void)
{
	struct mmhal_model *m = load(3, 64, MMHAL_KV_F16, 0, 1);
	char err[256];
	int ret;

	if (!m)
		return NULL;
	ret = mmhal_model_add_tier(m, path[1], err, sizeof(err));
	if (!ret)
		ret = mmhal_model_add_tier(m, tier_path[0], err, sizeof(err));
	if (ret) {
		printf("# add_tier: %d %s\n", ret, err);
		mmhal_model_free(m);
		return NULL;
	}
	return m;
}

/* greedy: n_prompt tokens, then n steps; logits after each step in
 * lg[k * 300], tokens in out */
static int tier_run(struct mmhal_ctx *c, const int32_t *p, int n_prompt,
		    int n, int32_t *out, float *lg)
{
	int ret = mmhal_ctx_eval(c, p, n_prompt, lg);

	for (int k = 0; k < n && !ret; k++) {
		out[k] = argmax(lg + (size_t)k * 300, 300);
		ret = mmhal_ctx_eval(c, &out[k], 1, lg + (size_t)(k + 1) * 300);
	}
	return ret;
}

static double top1(const float *l, int n)
{
	double mx = l[argmax(l, n)], s = 0;

	for (int i = 0; i < n; i++)
		s += exp(l[i] - mx);
	return 1 / s;
}

#define TIER_STEPS 24

/*
 * Tiers of the tiny model: Q4_K (base), Q8_0, F16. Thresholds 0: every
 * step kept at Q4_K, so a run from a one-token prompt equals the Q4_K
 * file alone, bitwise; thresholds 2: every step climbs to F16 and equals
 * the F16 file alone, bitwise (the recomputes rewrite the K/V rows); the
 * default thresholds: each kept step's top-1 probability meets its tier's
 * threshold, the ones recomputed did not, and the counts add up.
 */
static void test_tiers(void)
{
	static float lg[4][(TIER_STEPS + 1) * 300];
	static int32_t tk[4][TIER_STEPS];
	struct mmhal_model *m = tier_model(), *q4 = load(3, 64, MMHAL_KV_F16, 0, 1);
	struct mmhal_model *f16 = NULL;
	struct mmhal_tier_info ti[3];
	struct mmhal_model_stats st;
	struct mmhal_ctx *c, *r;
	const char *want[3] = { "q4_k", "q8_0", "f16" };
	int good = !!m, ret;

	for (int i = 0; i < 3; i++) {
		good &= !mmhal_model_tier_info(m, i, &ti[i]) &&
			!strcmp(ti[i].wtype, want[i]) && ti[i].base == !i;
		printf("# tier %d: %s %.2f bits/weight, %llu bytes%s\n", i,
		       ti[i].wtype, ti[i].bits_per_weight,
		       (unsigned long long)ti[i].matrix_bytes,
		       ti[i].base ? " (base)" : "");
	}
	good &= mmhal_model_n_tiers(m) == 3 &&
		ti[0].bits_per_weight < ti[1].bits_per_weight &&
		ti[1].bits_per_weight < ti[2].bits_per_weight &&
		mmhal_model_tier_info(m, 3, &ti[0]) == -EINVAL &&
		ti[0].matrix_bytes == 0;
	tap_ok(good, "add_tier: Q4_K base + Q8_0 + F16: 3 tiers in order of bits per weight");

	/* thresholds 0: all at Q4_K == the Q4_K file alone */
	c = tier_ctx(m, MMHAL_TIER_CONFIDENCE, 0, 0, 0);
	r = tier_ctx(q4, MMHAL_TIER_TOP, 0, 0.92f, 0.75f);
	ret = c && r ? tier_run(c, prompt, 1, TIER_STEPS, tk[0], lg[0]) : -1;
	ret = ret || tier_run(r, prompt, 1, TIER_STEPS, tk[1], lg[1]);
	good = !ret && !mmhal_ctx_stats(c, &st);
	good &= st.tier_steps[0] == TIER_STEPS + 1 && !st.tier_steps[1] &&
		!st.tier_steps[2] && st.tier_evals[0] == TIER_STEPS + 1 &&
		!st.tier_evals[1] && !st.tier_evals[2] && !st.tier_recomputes;
	good &= !memcmp(lg[0], lg[1], sizeof(lg[0])) &&
		!memcmp(tk[0], tk[1], sizeof(tk[0]));
	tap_ok(good, "confidence, thresholds 0: %lld/%lld steps at Q4_K, no recompute, logits == the Q4_K file alone (bitwise)",
	   (long long)st.tier_steps[0], (long long)st.decode_tokens);
	mmhal_ctx_free(c);
	mmhal_ctx_free(r);

	/* thresholds 2: all climb to F16 == the F16 file alone */
	f16 = load(-1, 64, MMHAL_KV_F16, 0, 1);
	c = tier_ctx(m, MMHAL_TIER_CONFIDENCE, 0, 2, 2);
	r = tier_ctx(f16, MMHAL_TIER_TOP, 0, 0.92f, 0.75f);
	ret = c && r ? tier_run(c, prompt, 8, TIER_STEPS, tk[0], lg[0]) : -1;
	ret = ret || tier_run(r, prompt, 8, TIER_STEPS, tk[1], lg[1]);
	good = !ret && !mmhal_ctx_stats(c, &st);
	good &= !st.tier_steps[0] && !st.tier_steps[1] &&
		st.tier_steps[2] == TIER_STEPS && st.tier_evals[0] == TIER_STEPS &&
		st.tier_evals[1] == TIER_STEPS && st.tier_evals[2] == TIER_STEPS &&
		st.tier_recomputes == 2 * TIER_STEPS;
	good &= !memcmp(lg[0], lg[1], sizeof(lg[0])) &&
		!memcmp(tk[0], tk[1], sizeof(tk[0]));
	tap_ok(good, "confidence, thresholds 2: %lld/%d steps at F16 after %lld recomputes, tokens and logits == the F16 file alone (bitwise)",
	   (long long)st.tier_steps[2], TIER_STEPS,
	   (long long)st.tier_recomputes);
	mmhal_ctx_free(c);
	mmhal_ctx_free(r);

	/* fixed tiers: F16 == the F16 file, Q4_K (prefill too) == Q4_K */
	c = tier_ctx(m, MMHAL_TIER_FIXED, 2, 0, 0);
	ret = c ? tier_run(c, prompt, 8, 4, tk[2], lg[2]) : -1;
	good = !ret && !memcmp(lg[2], lg[1], 5 * 300 * sizeof(float));
	mmhal_ctx_free(c);
	c = tier_ctx(m, MMHAL_TIER_FIXED, 0, 0, 0);
	r = tier_ctx(q4, MMHAL_TIER_TOP, 0, 0.92f, 0.75f);
	ret = c && r ? tier_run(c, prompt, 8, 4, tk[2], lg[2]) : -1;
	ret = ret || tier_run(r, prompt, 8, 4, tk[3], lg[3]);
	good &= !ret && !memcmp(lg[2], lg[3], 5 * 300 * sizeof(float)) &&
		memcmp(lg[2], lg[1], 300 * sizeof(float));
	tap_ok(good, "fixed tier 2 == the F16 file, fixed tier 0 == the Q4_K file (prefill and decode, bitwise), and they differ");
	mmhal_ctx_free(c);
	mmhal_ctx_free(r);

	/* thresholds at the 2/3 and 1/3 quantiles of the top-1
	 * probabilities of a Q4_K run (this model's are sharper than the
	 * defaults): each step kept where its top-1 probability met the
	 * threshold; counts add up */
	{
		int64_t kept[3] = { 0 }, bad = 0;
		struct mmhal_model_stats s0, s1;
		double pq[TIER_STEPS];
		float th[2];

		c = tier_ctx(m, MMHAL_TIER_FIXED, 0, 0, 0);
		ret = c ? tier_run(c, long_prompt, 8, TIER_STEPS, tk[2], lg[2]) : -1;
		mmhal_ctx_free(c);
		for (int k = 0; k < TIER_STEPS; k++) {
			double p = top1(lg[2] + (size_t)(k + 1) * 300, 300);
			int j = k;

			for (; j > 0 && pq[j - 1] > p; j--)
				pq[j] = pq[j - 1];
			pq[j] = p;
		}
		th[0] = (float)pq[2 * TIER_STEPS / 3];
		th[1] = (float)pq[TIER_STEPS / 3];
		printf("# top-1 probabilities of the Q4_K run: %.4f .. %.4f; thresholds %.4f, %.4f\n",
		       pq[0], pq[TIER_STEPS - 1], th[0], th[1]);
		c = ret ? NULL : tier_ctx(m, MMHAL_TIER_CONFIDENCE, 0, th[0], th[1]);
		good = !!c && !mmhal_ctx_eval(c, long_prompt, 8, lg[0]);
		for (int k = 0; good && k < TIER_STEPS; k++) {
			int32_t t = argmax(lg[0], 300);
			int tier;
			double p;

			good &= !mmhal_ctx_stats(c, &s0) &&
				!mmhal_ctx_eval(c, &t, 1, lg[0]) &&
				!mmhal_ctx_stats(c, &s1);
			for (tier = 0; tier < 2 &&
			     s1.tier_steps[tier] == s0.tier_steps[tier]; tier++)
				;
			p = top1(lg[0], 300);
			kept[tier]++;
			/* kept at tier < 2: p >= threshold; climbed past 0:
			 * tier 0's logits were below 0.92 (not seen here) */
			if ((tier < 2 && p < th[tier]) ||
			    s1.tier_evals[0] - s0.tier_evals[0] != 1 ||
			    s1.tier_recomputes - s0.tier_recomputes != tier)
				bad++;
		}
		good &= !bad && !mmhal_ctx_stats(c, &st) && kept[0] &&
			kept[1] && kept[2];
		good &= st.tier_steps[0] == kept[0] &&
			st.tier_steps[1] == kept[1] &&
			st.tier_steps[2] == kept[2] &&
			st.tier_steps[0] + st.tier_steps[1] + st.tier_steps[2] ==
			st.decode_tokens &&
			st.tier_evals[0] == st.decode_tokens &&
			st.tier_evals[1] == st.decode_tokens - st.tier_steps[0] &&
			st.tier_evals[2] == st.tier_steps[2] &&
			st.tier_recomputes == st.tier_evals[1] + st.tier_evals[2];
		tap_ok(good, "confidence, thresholds at quantiles: steps Q4_K %lld, Q8_0 %lld, F16 %lld, recomputes %lld; kept logits meet their tier's threshold; counts consistent",
		   (long long)st.tier_steps[0], (long long)st.tier_steps[1],
		   (long long)st.tier_steps[2],
		   (long long)st.tier_recomputes);
		mmhal_ctx_stats_reset(c);
		good = !mmhal_ctx_stats(c, &st) && !st.tier_steps[0] &&
			!st.tier_steps[1] && !st.tier_steps[2] &&
			!st.tier_evals[0] && !st.tier_recomputes;
		tap_ok(good, "stats_reset zeroes the tier counts");
		mmhal_ctx_free(c);
	}
	mmhal_model_free(m);
	mmhal_model_free(q4);
	mmhal_model_free(f16);
}

static int tier_refused(struct mmhal_model *m, const char *fn, int expect,
			const char *needle, const char *what)
{
	char err[256] = "";
	int r = m ? mmhal_model_add_tier(m, fn, err, sizeof(err)) : 0;

	printf("# %s: %d \"%s\"\n", what, r, err);
	return m && r == expect && strstr(err, needle) &&
		mmhal_model_n_tiers(m) == (expect == -ENOSPC ? 3 : 1);
}

/* Files that are not the same model, a second tier of one precision, a
 * fourth tier, sessions alive, bad session params: refused, the model
 * unchanged and still running. */
static void test_tier_refused(void)
{
	struct mmhal_model *m = load(3, 64, MMHAL_KV_F16, 0, 1);
	struct mmhal_ctx_params p = mmhal_ctx_default_params();
	struct mmhal_ctx *c = NULL;
	char err[256];
	float l[300];
	int good, r;

	good = tier_refused(m, tier_path[2], -EINVAL, "llama.", "gqa4 shape");
	good &= tier_refused(m, tier_path[1], -EINVAL, "tokenizer.ggml.",
			     "smolvlm vocabulary");
	good &= tier_refused(m, tier_path[3], -EINVAL, "general.architecture",
			     "clip file");
	good &= tier_refused(m, path[3], -EINVAL, "one precision",
			     "Q4_K again");
	good &= tier_refused(m, "/nonexistent.gguf", -ENOENT, "",
			     "missing file");
	tap_ok(good, "add_tier: another shape, vocabulary, architecture, the same precision: -EINVAL naming it; the model keeps 1 tier");

	c = ctx_new(m, 64, 0, NULL, NULL);
	good = !!c && tier_refused(m, path[1], -EBUSY, "sessions", "session alive");
	mmhal_ctx_free(c);
	good &= m && !mmhal_model_add_tier(m, path[1], err, sizeof(err)) &&
		!mmhal_model_add_tier(m, tier_path[0], err, sizeof(err));
	good &= tier_refused(m, path[2], -ENOSPC, "at most", "fourth tier");
	good &= m && !mmhal_model_eval(m, prompt, 8, l);
	tap_ok(good, "add_tier: -EBUSY while a session exists, accepted once freed; a fourth tier: -ENOSPC; the default session runs on");

	good = !!m;
	p.tier_mode = 3;
	r = m ? mmhal_ctx_create(m, &p, &c, err, sizeof(err)) : 0;
	good &= rejected(r, -EINVAL, err, c, "tier_mode 3");
	p = mmhal_ctx_default_params();
	p.tier_mode = MMHAL_TIER_FIXED;
	p.tier = 3;
	r = m ? mmhal_ctx_create(m, &p, &c, err, sizeof(err)) : 0;
	good &= rejected(r, -EINVAL, err, c, "fixed tier 3 of 3");
	p = mmhal_ctx_default_params();
	p.tier_threshold[1] = NAN;
	r = m ? mmhal_ctx_create(m, &p, &c, err, sizeof(err)) : 0;
	good &= rejected(r, -EINVAL, err, c, "threshold NaN");
	p.tier_threshold[1] = -0.5f;
	r = m ? mmhal_ctx_create(m, &p, &c, err, sizeof(err)) : 0;
	good &= rejected(r, -EINVAL, err, c, "threshold -0.5");
	tap_ok(good, "params: tier_mode 3, tier 3 of 3 tiers, a NaN or negative threshold: -EINVAL");
	mmhal_model_free(m);
}

int main(void)
{
	struct mm_gen_params gp = {
		.shape = "tiny", .tokenizer = "gpt2", .type = MM_TYPE_F32,
		.seed = 1,
	};
	const char *tmp = getenv("TMPDIR");
	char err[256];
	int ret, fb;

	for (int i = 0; i < 40; i++)
		long_prompt[i] = (i * 71 + 3) % 300;
	snprintf(dir, sizeof(dir), "%s/llama_test.XXXXXX", tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	for (int t = 0; t < 4; t++)
		snprintf(path[t], sizeof(path[t]), "%s/tiny-%s.gguf", dir,
			 tname[t]);
	snprintf(path[Q5], sizeof(path[Q5]), "%s/tiny-q5_0.gguf", dir);
	snprintf(path[GQA4], sizeof(path[GQA4]), "%s/gqa4-f32.gguf", dir);
	ret = mm_gen_model(&gp, path[0], err, sizeof(err));
	tap_ok(!ret, "generate tiny model at F32%s%s", ret ? ": " : "",
	   ret ? err : "");
	for (int t = 1; t <= Q5; t++) {
		if (t == GQA4)
			continue;
		ret = ref_quantize_file(path[0], path[t], ttype[t], &fb, err,
					sizeof(err));
		tap_ok(!ret && !fb, "quantize tiny to %s%s%s", tname[t],
		   ret ? ": " : "", ret ? err : "");
	}
	for (int t = 0; t < 4; t++)
		test_vs_ref(t);
	test_vs_ref(Q5);
	gp.shape = "gqa4";
	ret = mm_gen_model(&gp, path[GQA4], err, sizeof(err));
	tap_ok(!ret, "generate gqa4 model at F32%s%s", ret ? ": " : "",
	   ret ? err : "");
	test_vs_ref(GQA4);
	test_prefill_vs_steps();
	test_unknown_pre();
	test_attn_split();
	test_kv_q8();
	test_ctx_limit();
	test_lazy_kv();
	test_repack(1);
	test_repack(2);
	test_repack(Q5);
	test_repack(3);
	test_load_misc();
	test_model_params_size();
	test_sampler();
	test_chat();
	test_sessions();
	test_eval_embd(0);
	test_eval_embd(1);
	test_abort();
	test_ctx_params();
	test_threads();
	test_shift_exact(MMHAL_KV_F32, 1e-5);
	test_shift_exact(MMHAL_KV_F16, 2e-3);
	test_shift_rows(MMHAL_KV_F16);
	test_shift_rows(MMHAL_KV_Q8_0);
	test_shift_generate();
	test_shift_runs();
	test_state(MMHAL_KV_F16);
	test_state(MMHAL_KV_Q8_0);
	{
		struct mm_gen_mmproj_params mp = { .vision = "micro",
						   .type = MM_TYPE_F32,
						   .seed = 1 };
		const char *const tk[3] = { "gpt2", "smolvlm", "gpt2" };
		const char *const sh[3] = { "tiny", "tiny", "gqa4" };

		gp.type = MM_TYPE_F16;
		ret = 0;
		for (int i = 0; i < 4; i++)
			snprintf(tier_path[i], sizeof(tier_path[i]),
				 "%s/tier%d.gguf", dir, i);
		for (int i = 0; i < 3 && !ret; i++) {
			gp.shape = sh[i];
			gp.tokenizer = tk[i];
			ret = mm_gen_model(&gp, tier_path[i], err, sizeof(err));
		}
		if (!ret)
			ret = mm_gen_mmproj(&mp, tier_path[3], err, sizeof(err));
		tap_ok(!ret, "generate tiny at F16, with SmolVLM's vocabulary, gqa4 at F16, a clip file%s%s",
		   ret ? ": " : "", ret ? err : "");
		test_tiers();
		test_tier_refused();
		for (int i = 0; i < 4; i++)
			unlink(tier_path[i]);
	}

	for (int t = 0; t < 6; t++)
		unlink(path[t]);
	rmdir(dir);
	return tap_done("llama");
}

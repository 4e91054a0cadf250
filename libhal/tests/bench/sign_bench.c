// SPDX-License-Identifier: MIT
/*
 * sign_bench.c - what verifying a signed model costs at load.
 *
 *   sign_bench DIR MMGGUF [REPEATS]
 *
 * Generates (once, kept in DIR) a SmolLM2-135M-shaped model at F16 and its
 * Q8_0 quantization with MMGGUF, signs each with a fresh key and measures,
 * the file in the page cache (warm; the median of REPEATS, default 5):
 *   hash    mm_verify_file(): signature + one read() pass hashing the file
 *   load    mmhal_model_load() without a key, mapped (weights used in
 *           place: the mapping is not read at load) and read (use_mmap 0)
 *   +key    the same with params.trusted_key: either way the file is read
 *           into a private copy, hashed, and only that copy is parsed and
 *           used (sign.h, mm_sig_load_copy())
 *   RSS     the resident set's growth over a load: mapped (the weights
 *           are not touched until used), read, and the verified copy
 *           (every byte resident, anonymous memory not shared with the
 *           page cache)
 *   +token  load and one decoded token (every weight read once), without
 *           and with the key: the time to a first result
 *   verity  where DIR's file system has fs-verity: the file signed with
 *           its fs-verity digest (format 2) and `fsverity enable`d, the
 *           same loads with the key take the fs-verity path (the digest
 *           measured, the file mapped, each page checked by the kernel as
 *           it is read in); elsewhere said and skipped (the VM's scratch
 *           disk has it: scripts/guest-bench.sh's step verity)
 * and prints each figure and the ratios. The copy figures come first,
 * from a format 1 signature (which never takes the fs-verity path), so a
 * file left with fs-verity on by an earlier run measures the same.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "mmhal_model.h"
#include "sign.h"
#include "sign_verity.h"

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_d);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* resident set size of this process, in MB (VmRSS) */
static double rss_mb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	double kb = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %lf kB", &kb) == 1)
			break;
	fclose(f);
	return kb / 1e3;
}

/*
 * ms of one load (and one decoded token when token), or < 0 on failure;
 * *rss (if not NULL) gets the growth of the resident set over it, MB
 */
static double time_load_how(const char *path, const uint8_t *pk,
			    int use_mmap, int token, double *rss, int *how)
{
	struct mmhal_model_verify v = { .size = sizeof(v) };
	struct mmhal_model_params p = mmhal_model_default_params();
	struct mmhal_model *m = NULL;
	char err[512];
	int32_t tok = 1;
	double r0 = rss_mb(), t0 = now_ms(), t;

	p.n_ctx = 64;
	p.use_mmap = use_mmap;
	p.trusted_key = pk;
	if (mmhal_model_load(path, &p, &m, err, sizeof(err))) {
		fprintf(stderr, "sign_bench: load %s: %s\n", path, err);
		return -1;
	}
	if (token && mmhal_model_eval(m, &tok, 1, NULL)) {
		fprintf(stderr, "sign_bench: eval: %s\n", mmhal_model_error(m));
		mmhal_model_free(m);
		return -1;
	}
	t = now_ms() - t0;
	if (rss)
		*rss = rss_mb() - r0;
	if (how)
		*how = mmhal_model_verification(m, &v) ? -1 : v.how;
	mmhal_model_free(m);
	return t;
}

static double time_load(const char *path, const uint8_t *pk, int use_mmap,
			int token, double *rss)
{
	return time_load_how(path, pk, use_mmap, token, rss, NULL);
}

/* the fs-verity path's figures for path (signed again as format 2) */
static int bench_verity(const char *path, const char *type,
			const uint8_t *sk, const uint8_t *pk, int reps,
			double copy_ms, double copy_rss, double map_rss)
{
	double lv[50], rv[50], tv[50];
	char err[512];
	int ret, how = 0;
	double t0 = now_ms(), en;

	ret = mm_verity_enable(path);
	if (ret == -EEXIST)	/* on since an earlier run */
		ret = 0;
	en = now_ms() - t0;
	if (ret == -EOPNOTSUPP || ret == -ENOTTY) {
		printf("  fs-verity: not on this file system (%s); the VM's scratch disk has it (scripts/guest-bench.sh, step verity)\n",
		       strerror(-ret));
		return 0;
	}
	if (!ret && mm_sign_file_verity(path, sk, NULL, 1, NULL, NULL, err,
					sizeof(err)))
		ret = -EIO;
	if (ret) {
		fprintf(stderr, "sign_bench: fs-verity on %s: %s\n", path,
			ret == -EIO ? err : strerror(-ret));
		return ret;
	}
	for (int r = 0; r < reps; r++) {
		lv[r] = time_load_how(path, pk, 1, 0, &rv[r], &how);
		tv[r] = time_load(path, pk, 1, 1, NULL);
		if (lv[r] < 0 || tv[r] < 0 || how != MMHAL_VERIFY_VERITY) {
			fprintf(stderr, "sign_bench: %s: not loaded through fs-verity (%d)\n",
				path, how);
			return -EIO;
		}
	}
	printf("  fs-verity    load %7.1f ms (copy %.1f ms, x%.3f), +token %.1f ms, RSS %.1f MB (copy %.1f, mapped %.1f); enable %.0f ms\n",
	       median(lv, reps), copy_ms, median(lv, reps) / copy_ms,
	       median(tv, reps), median(rv, reps), copy_rss, map_rss, en);
	printf("RESULT sign-bench-verity %s load_ms %.1f token_ms %.1f rss_mb %.1f\n",
	       type, median(lv, reps), median(tv, reps), median(rv, reps));
	return 0;
}

static int ensure(const char *path, const char *cmd)
{
	struct stat st;

	if (!stat(path, &st))
		return 0;
	fprintf(stderr, "sign_bench: %s\n", cmd);
	return system(cmd) ? -EIO : 0;
}

int main(int argc, char **argv)
{
	const char *types[] = { "f16", "q8_0" };
	uint8_t pk[MM_KEY_PUB_BYTES], sk[MM_KEY_SEC_BYTES];
	int reps = argc > 3 ? atoi(argv[3]) : 5;
	char f16[512], path[512], cmd[4096], err[512];

	if (argc < 3 || reps < 1 || reps > 50 || strlen(argv[1]) > 400 ||
	    strlen(argv[2]) > 1000) {
		fprintf(stderr, "usage: sign_bench DIR MMGGUF [REPEATS]\n");
		return 2;
	}
	if (mm_key_generate(pk, sk))
		return 1;
	snprintf(f16, sizeof(f16), "%s/smollm2-135m-f16.gguf", argv[1]);
	snprintf(cmd, sizeof(cmd),
		 "%s gen --shape smollm2-135m --tokenizer gpt2 --type f16 -o %s.tmp && mv %s.tmp %s",
		 argv[2], f16, f16, f16);
	if (ensure(f16, cmd))
		return 1;
	for (int ti = 0; ti < 2; ti++) {
		double hash[50], lm[50], lmk[50], lr[50], lrk[50], tm[50], tmk[50];
		double rm[50], rmk[50], rr[50];
		struct mm_manifest man;
		double h, a, b, c, d, e, f;

		snprintf(path, sizeof(path), "%s/smollm2-135m-%s.gguf",
			 argv[1], types[ti]);
		if (ti) {
			snprintf(cmd, sizeof(cmd),
				 "%s quantize %s %s.tmp --type %s > /dev/null && mv %s.tmp %s",
				 argv[2], f16, path, types[ti], path, path);
			if (ensure(path, cmd))
				return 1;
		}
		if (mm_sign_file(path, sk, NULL, 1, NULL, &man, err,
				 sizeof(err))) {
			fprintf(stderr, "sign_bench: %s\n", err);
			return 1;
		}
		/* warm the page cache */
		time_load(path, NULL, 1, 1, NULL);
		for (int r = 0; r < reps; r++) {
			double t0 = now_ms();

			if (mm_verify_file(path, pk, 0, NULL, err,
					   sizeof(err))) {
				fprintf(stderr, "sign_bench: %s\n", err);
				return 1;
			}
			hash[r] = now_ms() - t0;
			lm[r] = time_load(path, NULL, 1, 0, &rm[r]);
			lmk[r] = time_load(path, pk, 1, 0, &rmk[r]);
			lr[r] = time_load(path, NULL, 0, 0, &rr[r]);
			lrk[r] = time_load(path, pk, 0, 0, NULL);
			tm[r] = time_load(path, NULL, 1, 1, NULL);
			tmk[r] = time_load(path, pk, 1, 1, NULL);
			if (lm[r] < 0 || lmk[r] < 0 || lr[r] < 0 ||
			    lrk[r] < 0 || tm[r] < 0 || tmk[r] < 0)
				return 1;
		}
		h = median(hash, reps);
		a = median(lm, reps);
		b = median(lmk, reps);
		c = median(lr, reps);
		d = median(lrk, reps);
		e = median(tm, reps);
		f = median(tmk, reps);
		printf("verify %s %.1f MB: hash %.1f ms (%.0f MB/s)\n",
		       types[ti], man.size / 1e6, h, man.size / 1e3 / h);
		printf("  load mapped  %7.1f ms, with key %7.1f ms (+%.1f ms, x%.2f)\n",
		       a, b, b - a, b / a);
		printf("  load read    %7.1f ms, with key %7.1f ms (+%.1f ms, x%.2f)\n",
		       c, d, d - c, d / c);
		printf("  load+token   %7.1f ms, with key %7.1f ms (+%.1f ms, x%.2f)\n",
		       e, f, f - e, f / e);
		printf("  RSS after load: mapped %.1f MB, read %.1f MB, verified copy %.1f MB\n",
		       median(rm, reps), median(rr, reps), median(rmk, reps));
		printf("RESULT sign-bench %s hash_ms %.1f load_ms %.1f load_key_ms %.1f read_ms %.1f read_key_ms %.1f token_ms %.1f token_key_ms %.1f rss_mapped_mb %.1f rss_key_mb %.1f\n",
		       types[ti], h, a, b, c, d, e, f, median(rm, reps),
		       median(rmk, reps));
		if (bench_verity(path, types[ti], sk, pk, reps, b,
				 median(rmk, reps), median(rm, reps)))
			return 1;
	}
	return 0;
}

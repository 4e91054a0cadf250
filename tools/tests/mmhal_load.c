// SPDX-License-Identifier: GPL-2.0
/*
 * mmhal_load.c - loads a signed model with a trusted key, as an
 * application does (mmhal_model_load()), and says how it was verified and
 * what the load cost; for the fs-verity test in the VM
 * (tools/tests/verity_guest.sh).
 *
 *   mmhal-load [--key KEY.pub] [--token] [--repeat N] FILE
 *
 * Prints one line:
 *   how fs-verity|copy|none version N load_ms T rss_mb R
 * (none: without --key, a plain mapped load that verifies nothing)
 * (rss_mb: the resident set's growth over the load, and the decode of one
 * token with --token; with --repeat, the medians of N loads, 1 to 15). Exit status: 0 loaded, 1 refused (the message on
 * stderr), 2 usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mmhal_model.h>
#include <mmhal_store.h>

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* VmRSS of this process, MB */
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

int main(int argc, char **argv)
{
	struct mmhal_model_params p = mmhal_model_default_params();
	struct mmhal_model_verify v = { .size = sizeof(v) };
	const char *key = NULL, *file = NULL;
	struct mmhal_model *m = NULL;
	unsigned char pk[32];
	char err[512];
	int token = 0, reps = 1;
	int32_t tok = 1;
	double r0, t0, tv[15], rv[15];

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--key") && i + 1 < argc)
			key = argv[++i];
		else if (!strcmp(argv[i], "--token"))
			token = 1;
		else if (!strcmp(argv[i], "--repeat") && i + 1 < argc)
			reps = atoi(argv[++i]);
		else if (argv[i][0] != '-' && !file)
			file = argv[i];
		else
			file = NULL, key = NULL, i = argc;
	}
	if (!file || reps < 1 || reps > 15) {
		fprintf(stderr, "usage: mmhal-load [--key KEY.pub] [--token] [--repeat N] FILE\n");
		return 2;
	}
	if (key && mmhal_store_read_key(key, pk, err, sizeof(err))) {
		fprintf(stderr, "mmhal-load: %s\n", err);
		return 1;
	}
	p.trusted_key = key ? pk : NULL;
	p.n_ctx = 64;
	for (int r = 0; r < reps; r++) {
		if (m)
			mmhal_model_free(m);
		m = NULL;
		r0 = rss_mb();
		t0 = now_ms();
		if (mmhal_model_load(file, &p, &m, err, sizeof(err))) {
			fprintf(stderr, "mmhal-load: %s\n", err);
			return 1;
		}
		if (token && mmhal_model_eval(m, &tok, 1, NULL)) {
			fprintf(stderr, "mmhal-load: eval: %s\n",
				mmhal_model_error(m));
			mmhal_model_free(m);
			return 1;
		}
		tv[r] = now_ms() - t0;
		rv[r] = rss_mb() - r0;
	}
	if (mmhal_model_verification(m, &v)) {
		fprintf(stderr, "mmhal-load: no verification record\n");
		mmhal_model_free(m);
		return 1;
	}
	printf("how %s version %llu load_ms %.1f rss_mb %.1f\n", v.how_name,
	       (unsigned long long)v.version, median(tv, reps),
	       median(rv, reps));
	mmhal_model_free(m);
	return 0;
}

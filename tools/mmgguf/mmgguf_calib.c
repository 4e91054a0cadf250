// SPDX-License-Identifier: MIT
/*
 * mmgguf_calib.c - the calibration commands of mmgguf (calib.h):
 *
 *   mmgguf calib --mmproj M --captures DIR|FILE [...] --method minmax|percentile|kl
 *                [--percentile P] [--heldout DIR|FILE ...] [--all]
 *                [--version N] [--threads N] -o CAL
 *   mmgguf capgen --kind image|audio [--style scene|noise]
 *                 [--format nv12|rgb24|grey] [--size WxH] [--ms N]
 *                 [-n COUNT] [--seed S] -o DIR
 *
 * calib runs the encoders in the float reference over the captures
 * (capture files, or every *.cap of a directory), collecting the
 * histograms, computes the thresholds by the method and writes the
 * calibration file bound to the mmproj's BLAKE2b-256. With --heldout it
 * reports the agreement (cosine of each output row with the float
 * reference, mean and min) and the encode time of the static int8 mode
 * and of the dynamic per-block Q8_0 mode; --all adds the other methods'
 * static rows (the file is the chosen method's).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "calib.h"
#include "gguf.h"
#include "imgproc.h"
#include "mhash.h"
#include "mmgguf_calib.h"
#include "mmproj.h"

struct caps {
	struct mm_cal_capture *c;
	int n, cap;
	int n_img, n_aud;
};

static void caps_free(struct caps *s)
{
	for (int i = 0; i < s->n; i++)
		mm_cal_capture_free(&s->c[i]);
	free(s->c);
	memset(s, 0, sizeof(*s));
}

static int caps_add_file(struct caps *s, const char *path)
{
	char err[256];
	int ret;

	if (s->n == s->cap) {
		int nc = s->cap ? 2 * s->cap : 16;
		struct mm_cal_capture *n = realloc(s->c, (size_t)nc * sizeof(*n));

		if (!n)
			return -ENOMEM;
		s->c = n;
		s->cap = nc;
	}
	ret = mm_cal_capture_read(path, &s->c[s->n], err, sizeof(err));
	if (ret) {
		fprintf(stderr, "mmgguf calib: %s\n", err);
		return ret;
	}
	if (s->c[s->n].kind == MM_CAL_CAP_IMAGE)
		s->n_img++;
	else
		s->n_aud++;
	s->n++;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* a capture file, or the *.cap files of a directory in name order */
static int caps_add(struct caps *s, const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	char **names = NULL;
	size_t n = 0, cap = 0;
	int ret = 0;

	if (!d)
		return errno == ENOTDIR ? caps_add_file(s, path) :
		       (fprintf(stderr, "mmgguf calib: %s: %s\n", path,
				strerror(errno)), -errno);
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);

		if (l < 5 || strcmp(e->d_name + l - 4, ".cap"))
			continue;
		if (n == cap) {
			char **nn = realloc(names, (cap = cap ? 2 * cap : 32) *
					    sizeof(*nn));

			if (!nn) {
				ret = -ENOMEM;
				break;
			}
			names = nn;
		}
		names[n] = malloc(strlen(path) + l + 2);
		if (!names[n]) {
			ret = -ENOMEM;
			break;
		}
		sprintf(names[n], "%s/%s", path, e->d_name);
		n++;
	}
	closedir(d);
	if (!ret) {
		qsort(names, n, sizeof(*names), cmp_str);
		for (size_t i = 0; i < n && !ret; i++)
			ret = caps_add_file(s, names[i]);
		if (!ret && !n) {
			fprintf(stderr, "mmgguf calib: %s has no .cap files\n", path);
			ret = -ENOENT;
		}
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return ret;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void usage_calib(void)
{
	fprintf(stderr,
		"usage: mmgguf calib --mmproj M --captures DIR|FILE [...] --method minmax|percentile|kl\n"
		"                    [--percentile P] [--heldout DIR|FILE ...] [--all]\n"
		"                    [--version N] [--threads N] -o CAL\n");
}

static void report_row(const char *what, const struct mm_cal_agree *a, int n)
{
	printf("  %-22s cos mean %.6f  min %.6f  (%llu rows)  %8.2f ms/capture  (float %8.2f)\n",
	       what, a->cos_mean, a->cos_min, (unsigned long long)a->rows,
	       a->ms / n, a->ms_float / n);
}

int mmgguf_calib(int argc, char **argv)
{
	const char *mmproj = NULL, *out = NULL;
	struct caps cal = { 0 }, ho = { 0 };
	struct mm_mmproj *p = NULL;
	struct mm_calib *c = NULL;
	uint8_t hash[MM_HASH_BYTES];
	char err[512];
	int method = 0, all = 0, threads = 0, ret = 0;
	double pct = 0.9999, t0;
	unsigned long long version = 1;

	for (int i = 0; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		char *end;

		if (!strcmp(a, "--all")) {
			all = 1;
			continue;
		}
		if (!v)
			goto usage;
		i++;
		if (!strcmp(a, "--mmproj")) {
			mmproj = v;
		} else if (!strcmp(a, "-o")) {
			out = v;
		} else if (!strcmp(a, "--method")) {
			if (mm_cal_method_parse(v, &method)) {
				fprintf(stderr, "mmgguf calib: --method must be minmax, percentile or kl\n");
				return 2;
			}
		} else if (!strcmp(a, "--percentile")) {
			pct = strtod(v, &end);
			if (*end || !(pct > 0 && pct <= 100)) {
				fprintf(stderr, "mmgguf calib: --percentile must be in (0, 100]\n");
				return 2;
			}
			pct /= 100;
		} else if (!strcmp(a, "--version")) {
			version = strtoull(v, &end, 10);
			if (*end || !version || *v == '-') {
				fprintf(stderr, "mmgguf calib: --version must be a positive integer\n");
				return 2;
			}
		} else if (!strcmp(a, "--threads")) {
			threads = (int)strtol(v, &end, 10);
			if (*end || threads < 0 || threads > 1024) {
				fprintf(stderr, "mmgguf calib: --threads must be 0..1024\n");
				return 2;
			}
		} else if (!strcmp(a, "--captures") || !strcmp(a, "--heldout")) {
			struct caps *s = a[2] == 'c' ? &cal : &ho;

			/* DIR|FILE, then more until the next option */
			for (;;) {
				ret = caps_add(s, v);
				if (ret)
					goto out;
				if (i + 1 >= argc || argv[i + 1][0] == '-')
					break;
				v = argv[++i];
			}
		} else {
			goto usage;
		}
	}
	if (!mmproj || !out || !method || !cal.n)
		goto usage;
	ret = mm_mmproj_load(mmproj, &p, err, sizeof(err));
	if (!ret)
		ret = mm_hash_file(mmproj, hash, NULL, err, sizeof(err));
	if (!ret)
		ret = mm_cal_create(p, 1, &c, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "mmgguf calib: %s\n", err);
		goto out;
	}
	t0 = now_ms();
	for (int i = 0; i < cal.n && !ret; i++) {
		float *y;
		size_t nr, ne;

		ret = mm_cal_encode(p, c, MM_CAL_OBSERVE, &cal.c[i], threads, &y,
				    &nr, &ne, err, sizeof(err));
		if (!ret)
			free(y);
	}
	if (ret) {
		fprintf(stderr, "mmgguf calib: %s\n", err);
		goto out;
	}
	printf("calibration of %s: %d points, %d images + %d audio windows observed in %.1f ms\n",
	       mmproj, c->n, cal.n_img, cal.n_aud, now_ms() - t0);
	ret = mm_cal_prepare(c, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "mmgguf calib: %s\n", err);
		goto out;
	}
	if (ho.n) {
		struct mm_cal_agree ag;
		float **refs = calloc((size_t)ho.n, sizeof(*refs));
		double ms_float = 0;

		if (!refs) {
			ret = 1;
			fprintf(stderr, "mmgguf calib: out of memory\n");
			goto out;
		}
		printf("held-out: %d images + %d audio windows (agreement with the float reference)\n",
		       ho.n_img, ho.n_aud);
		for (int m = MM_CAL_MINMAX; m <= MM_CAL_KL && !ret; m++) {
			char what[48];

			if (!all && m != method)
				continue;
			t0 = now_ms();
			ret = mm_cal_compute(c, m, pct, err, sizeof(err));
			if (ret)
				break;
			snprintf(what, sizeof(what), "static int8 %s", mm_cal_method_name(m));
			if (m == MM_CAL_PERCENTILE)
				snprintf(what, sizeof(what), "static int8 p%.4g",
					 pct * 100);
			ret = mm_cal_agreement(p, c, MM_CAL_STATIC, ho.c, ho.n,
					       threads, refs, &ag, err, sizeof(err));
			if (!ret && ag.ms_float > 0)
				ms_float = ag.ms_float;
			ag.ms_float = ms_float;
			if (!ret)
				report_row(what, &ag, ho.n);
		}
		if (!ret)
			ret = mm_cal_agreement(p, NULL, MM_CAL_DYNAMIC, ho.c, ho.n,
					       threads, refs, &ag, err, sizeof(err));
		ag.ms_float = ms_float;
		if (!ret)
			report_row("dynamic Q8_0 blocks", &ag, ho.n);
		for (int i = 0; i < ho.n; i++)
			free(refs[i]);
		free(refs);
		if (ret) {
			fprintf(stderr, "mmgguf calib: %s\n", err);
			goto out;
		}
	}
	ret = mm_cal_compute(c, method, pct, err, sizeof(err));
	if (!ret) {
		memcpy(c->hash, hash, sizeof(hash));
		c->version = version;
		c->n_samples = (uint64_t)cal.n;
		ret = mm_cal_save(c, out, err, sizeof(err));
	}
	if (ret) {
		fprintf(stderr, "mmgguf calib: %s\n", err);
		goto out;
	}
	printf("wrote %s: method %s, version %llu, %d thresholds\n", out,
	       mm_cal_method_name(method), version, c->n);
out:
	mm_cal_free(c);
	mm_mmproj_free(p);
	caps_free(&cal);
	caps_free(&ho);
	return ret ? 1 : 0;
usage:
	usage_calib();
	ret = 2;
	caps_free(&cal);
	caps_free(&ho);
	return ret;
}

static void usage_capgen(void)
{
	fprintf(stderr,
		"usage: mmgguf capgen --kind image|audio [--style scene|noise]\n"
		"                     [--format nv12|rgb24|grey] [--size WxH] [--ms N]\n"
		"                     [-n COUNT] [--seed S] -o DIR\n");
}

int mmgguf_capgen(int argc, char **argv)
{
	const char *kind = NULL, *dir = NULL;
	uint32_t fmt = MM_IMAGE_NV12, w = 640, h = 480;
	unsigned long ms = 1000, count = 1, seed = 1;
	int style = 0;
	char err[256];

	for (int i = 0; i + 1 < argc; i += 2) {
		const char *a = argv[i], *v = argv[i + 1];
		char *end;

		if (!strcmp(a, "--kind") && (!strcmp(v, "image") ||
					     !strcmp(v, "audio"))) {
			kind = v;
		} else if (!strcmp(a, "--style") && (!strcmp(v, "scene") ||
						      !strcmp(v, "noise"))) {
			style = !strcmp(v, "noise");
		} else if (!strcmp(a, "--format")) {
			if (!strcmp(v, "nv12"))
				fmt = MM_IMAGE_NV12;
			else if (!strcmp(v, "rgb24"))
				fmt = MM_IMAGE_RGB24;
			else if (!strcmp(v, "grey"))
				fmt = MM_IMAGE_GREY;
			else
				goto usage;
		} else if (!strcmp(a, "--size")) {
			if (sscanf(v, "%ux%u", &w, &h) != 2)
				goto usage;
		} else if (!strcmp(a, "--ms")) {
			ms = strtoul(v, &end, 10);
			if (*end || !ms || ms > 30000)
				goto usage;
		} else if (!strcmp(a, "-n")) {
			count = strtoul(v, &end, 10);
			if (*end || !count || count > 10000)
				goto usage;
		} else if (!strcmp(a, "--seed")) {
			seed = strtoul(v, &end, 10);
			if (*end)
				goto usage;
		} else if (!strcmp(a, "-o")) {
			dir = v;
		} else {
			goto usage;
		}
	}
	if (argc % 2 || !kind || !dir)
		goto usage;
	for (unsigned long i = 0; i < count; i++) {
		struct mm_cal_capture c;
		char path[4096];
		int ret;

		ret = kind[0] == 'i' ?
		      mm_cal_synth_image(&c, fmt, w, h, style, seed + i) :
		      mm_cal_synth_audio(&c, ms * 16, style, seed + i);
		if (ret) {
			fprintf(stderr, "mmgguf capgen: %s\n", ret == -EINVAL ?
				"bad size (1..4096 a side, even for NV12)" :
				strerror(-ret));
			return 1;
		}
		snprintf(path, sizeof(path), "%s/%s-%s-%03lu.cap", dir, kind,
			 style ? "noise" : "scene", seed + i);
		ret = mm_cal_capture_write(path, &c, err, sizeof(err));
		mm_cal_capture_free(&c);
		if (ret) {
			fprintf(stderr, "mmgguf capgen: %s\n", err);
			return 1;
		}
	}
	return 0;
usage:
	usage_capgen();
	return 2;
}

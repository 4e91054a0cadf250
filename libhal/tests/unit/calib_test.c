// SPDX-License-Identifier: MIT
/*
 * calib_test.c - INT8 calibration of the encoders (calib.h), TAP:
 *  - histograms against a double-precision binning of the same samples
 *    (Gaussian and Laplace, added in batches that widen the range);
 *  - thresholds: minmax against the samples' max, percentile against the
 *    sorted samples (within a bin), KL against an independent double
 *    implementation of TensorRT's entropy calibration (every candidate's
 *    divergence and the argmin), and the shape of the result on known
 *    distributions (uniform: no clipping; Gaussian with rare outliers:
 *    clipped well below the max);
 *  - the static int8 product against int64 sums of the int8 values;
 *  - captures: file round trip, refusal of bad headers;
 *  - calibration file: round trip, refusal of a file made for another
 *    mmproj (-ESTALE), of corrupt values and missing keys, of a truncated
 *    file;
 *  - agreement with the float reference on the tiny generated vision +
 *    audio mmproj (Q8_0) for each method and for the dynamic path;
 *  - the API: set_calibration, install into a store, refusal of a bad
 *    calibration, rollback to calib.prev when the agreement drops, back
 *    to dynamic when nothing agrees;
 *  - the mmgguf calib / capgen commands (argv[1] the tool, argv[2] a
 *    scratch directory).
 * Last line "RESULT calib <passed> <failed>".
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mmhal_model.h"
#include "calib.h"
#include "encoder.h"
#include "gen.h"
#include "gguf.h"
#include "mhash.h"
#include "mmproj.h"
#include "quant.h"
#include "tests/tap.h"

static uint64_t rng = 88172645463325252ull;

static double urand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return ((rng >> 11) + 0.5) / 9007199254740992.0;
}

static double gauss(void)
{
	return sqrt(-2 * log(urand())) * cos(2 * M_PI * urand());
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* ---- reference KL (double, written from TensorRT's description) ------- */

static double ref_kl(const uint64_t *bin, int i)
{
	double *p = calloc((size_t)i, sizeof(double));
	double *q = calloc((size_t)i, sizeof(double));
	double ps = 0, qs = 0, kl = 0, outl = 0;
	int per = i / 128;

	for (int b = 0; b < i; b++)
		p[b] = (double)bin[b];
	for (int b = i; b < MM_CAL_BINS; b++)
		outl += (double)bin[b];
	p[i - 1] += outl;
	for (int lv = 0; lv < 128; lv++) {
		int lo = lv * per, hi = lv == 127 ? i : lo + per, cnt = 0;
		double sum = 0;

		for (int b = lo; b < hi; b++) {
			sum += (double)bin[b];
			if (p[b] != 0)
				cnt++;
		}
		for (int b = lo; b < hi; b++)
			if (p[b] != 0)
				q[b] = sum / cnt;
	}
	for (int b = 0; b < i; b++) {
		ps += p[b];
		qs += q[b];
	}
	for (int b = 0; b < i; b++) {
		if (p[b] == 0)
			continue;
		double pn = p[b] / ps, qn = q[b] / qs;

		kl += pn * log(pn / (qn == 0 ? 1e-12 : qn));
	}
	free(p);
	free(q);
	return kl;
}

static void test_hist(void)
{
	const int n = 200000;
	double *v = malloc(n * sizeof(double));
	float *f = malloc(n * sizeof(float));
	struct mm_cal_hist *h = calloc(1, sizeof(*h));
	uint64_t *ref = calloc(MM_CAL_BINS, sizeof(uint64_t));
	double amax = 0, a1 = 0, rr;
	int same = 1, bad_kl = 0, best_ref = 0, j;

	for (int dist = 0; dist < 2; dist++) {
		memset(h, 0, sizeof(*h));
		memset(ref, 0, MM_CAL_BINS * sizeof(uint64_t));
		amax = a1 = 0;
		for (int i = 0; i < n; i++) {
			/* Gaussian, or Laplace; the second half 3x wider
			 * (the histogram's range must double to hold it) */
			double x = dist ? -log(urand()) * (urand() < 0.5 ? -1 : 1) :
				   gauss();

			f[i] = (float)(x * (i >= n / 2 ? 3 : 1));
			v[i] = fabs((double)f[i]);
			if (v[i] > amax)
				amax = v[i];
			if (i < n / 2 && v[i] > a1)
				a1 = v[i];
		}
		mm_cal_hist_add(h, f, n / 2, 1);
		mm_cal_hist_add(h, f + n / 2, n - n / 2, 1);
		/* range: the first batch's max doubled until it holds all */
		rr = a1 * (1 + 1.0 / 1048576);
		while (rr <= amax)
			rr *= 2;
		for (int i = 0; i < n; i++) {
			ref[(int)floor(v[i] * MM_CAL_BINS / rr)]++;
		}
		same = h->range == rr && h->amax == amax && h->count == (uint64_t)n &&
		       !memcmp(h->bin, ref, MM_CAL_BINS * sizeof(uint64_t));
		tap_ok(same, "%s: 2048-bin histogram in two batches (range %.4f doubled from %.4f) equals the double binning of the samples",
		       dist ? "Laplace" : "Gaussian", rr, a1);
		tap_ok(mm_cal_threshold(h, MM_CAL_MINMAX, 0) == amax,
		       "%s: minmax threshold is the max |x| %.5f", dist ? "Laplace" : "Gaussian",
		       amax);
		qsort(v, n, sizeof(double), cmp_d);
		{
			double t = mm_cal_threshold(h, MM_CAL_PERCENTILE, 0.999);
			double qv = v[(int)ceil(0.999 * n) - 1];

			tap_ok(fabs(t - qv) <= rr / MM_CAL_BINS + 1e-12,
			       "%s: 99.9th percentile threshold %.5f within a bin (%.5f) of the sorted samples' %.5f",
			       dist ? "Laplace" : "Gaussian", t, rr / MM_CAL_BINS, qv);
		}
		/* KL: every candidate against the reference, and the argmin */
		{
			double best = INFINITY, worst_rel = 0;

			for (j = 128; j <= MM_CAL_BINS; j++) {
				double a = mm_cal_kl_divergence(h, j), b = ref_kl(h->bin, j);
				double rel = fabs(a - b) / (fabs(b) > 1e-300 ? fabs(b) : 1);

				if (rel > worst_rel)
					worst_rel = rel;
				if (rel > 1e-9)
					bad_kl++;
				if (b < best) {
					best = b;
					best_ref = j;
				}
			}
			double t = mm_cal_threshold(h, MM_CAL_KL, 0);
			double want = best_ref * (rr / MM_CAL_BINS);

			if (want > amax)
				want = amax;
			tap_ok(!bad_kl && t == want,
			       "%s: KL divergence of all 1921 candidates within %.1e of the double reference, threshold %.4f = reference argmin %d bins (max %.4f)",
			       dist ? "Laplace" : "Gaussian", worst_rel, t, best_ref, amax);
			/* the tail is clipped, the bulk kept */
			double p999 = mm_cal_threshold(h, MM_CAL_PERCENTILE, 0.999);

			tap_ok(t < amax && t > p999,
			       "%s: KL clips the tail but not the bulk (99.9th percentile %.3f < %.3f < max %.3f)",
			       dist ? "Laplace" : "Gaussian", p999, t, amax);
		}
	}
	/* uniform |x| on [0, 1]: nothing to clip, KL keeps ~all */
	memset(h, 0, sizeof(*h));
	for (int i = 0; i < n; i++)
		f[i] = (float)(urand() * 2 - 1);
	mm_cal_hist_add(h, f, n, 1);
	{
		double t = mm_cal_threshold(h, MM_CAL_KL, 0);

		tap_ok(t > 0.9 * h->amax,
		       "uniform: KL threshold %.4f keeps at least 0.9 of the max %.4f", t,
		       h->amax);
	}
	/* scale and NaN */
	memset(h, 0, sizeof(*h));
	f[0] = NAN;
	f[1] = -2;
	f[2] = 1;
	mm_cal_hist_add(h, f, 3, 0.5f);
	tap_ok(h->amax == 1 && h->count == 3 && h->bin[0] == 1 &&
	       h->bin[MM_CAL_BINS - 1] == 1 && h->bin[MM_CAL_BINS / 2 - 1] == 1,
	       "scaled values, NaN counted in bin 0");
	memset(h, 0, sizeof(*h));
	tap_ok(mm_cal_threshold(h, MM_CAL_KL, 0) == 0 &&
	       mm_cal_threshold(h, MM_CAL_PERCENTILE, 0.99) == 0,
	       "empty histogram: threshold 0");
	free(v);
	free(f);
	free(h);
	free(ref);
}

/* ---- static int8 product ----------------------------------------------- */

static void test_matmul(void)
{
	const int64_t m = 70, k = 96, n = 19;
	const size_t rb = mm_row_bytes(MM_TYPE_Q8_0, k);
	float *X = malloc(n * k * sizeof(float)), *W = malloc(m * k * sizeof(float));
	float *Y = malloc(n * m * sizeof(float)), *sw = malloc(m * sizeof(float));
	uint8_t *Wq = malloc(m * rb);
	struct mm_enc s;
	char err[128];
	double worst = 0;
	int ret;

	for (int64_t i = 0; i < n * k; i++)
		X[i] = (float)(gauss() * 2);
	X[5] = 100;	/* clipped to +127 */
	for (int64_t r = 0; r < m; r++) {
		sw[r] = mm_f16_to_f32(mm_f32_to_f16(0.01f + 0.001f * (float)r));
		for (int64_t j = 0; j < k; j++)
			W[r * k + j] = (float)(gauss() * sw[r] * 40);
		mm_cal_quant_row(W + r * k, sw[r], Wq + r * rb, k);
	}
	ret = mm_enc_init(&s, 2, 64, "test", err, sizeof(err));
	const float sx = mm_f16_to_f32(mm_f32_to_f16(4.0f / 127));

	if (!ret)
		ret = mm_cal_matmul_q8(&s, Wq, X, sx, Y, m, k, n);
	for (int64_t i = 0; !ret && i < n; i++)
		for (int64_t r = 0; r < m; r++) {
			int64_t acc = 0;

			for (int64_t j = 0; j < k; j++) {
				long qx = lrint(X[i * k + j] / sx), qw = lrint(W[r * k + j] / sw[r]);

				qx = qx > 127 ? 127 : qx < -127 ? -127 : qx;
				qw = qw > 127 ? 127 : qw < -127 ? -127 : qw;
				acc += qx * qw;
			}
			double want = (double)sx * sw[r] * (double)acc;
			double e = fabs(Y[i * m + r] - want) / (fabs(want) + sx * sw[r] * 100);

			if (e > worst)
				worst = e;
		}
	tap_ok(!ret && worst < 1e-5,
	       "static int8 product (%s kernels, 70 x 96 x 19): s_x s_w sum(q_x q_w) of the int8 values within %.1e",
	       ret ? "?" : mm_ctx_kernels(s.ctx), worst);
	mm_enc_fini(&s);
	free(X);
	free(W);
	free(Y);
	free(sw);
	free(Wq);
}

/* ---- files --------------------------------------------------------------- */

static char dir[1024];

static char *path_in(const char *name)
{
	static char buf[8][1200];
	static int k;

	k = (k + 1) % 8;
	snprintf(buf[k], sizeof(buf[k]), "%s/%s", dir, name);
	return buf[k];
}

static int write_bytes(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	int ok = f && fwrite(p, 1, n, f) == n;

	if (f && fclose(f))
		ok = 0;
	return ok ? 0 : -EIO;
}

static void *read_bytes(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	void *p = NULL;
	long sz;

	if (!f)
		return NULL;
	if (!fseek(f, 0, SEEK_END) && (sz = ftell(f)) > 0 && !fseek(f, 0, SEEK_SET)) {
		p = malloc((size_t)sz);
		if (p && fread(p, 1, (size_t)sz, f) != (size_t)sz) {
			free(p);
			p = NULL;
		}
		*n = (size_t)sz;
	}
	fclose(f);
	return p;
}

static void test_captures(void)
{
	struct mm_cal_capture a, b;
	char err[256];
	int ret;
	size_t n;
	uint8_t *raw;

	ret = mm_cal_synth_image(&a, MM_IMAGE_NV12, 64, 48, 0, 3);
	if (!ret)
		ret = mm_cal_capture_write(path_in("i.cap"), &a, err, sizeof(err));
	if (!ret)
		ret = mm_cal_capture_read(path_in("i.cap"), &b, err, sizeof(err));
	tap_ok(!ret && b.kind == MM_CAL_CAP_IMAGE && b.im.format == MM_IMAGE_NV12 &&
	       b.im.width == 64 && b.im.height == 48 && b.bytes == a.bytes &&
	       !memcmp(a.data, b.data, a.bytes) && b.im.plane[1] ==
	       (const uint8_t *)b.data + 64 * 48,
	       "NV12 capture file round trip");
	mm_cal_capture_free(&b);
	raw = read_bytes(path_in("i.cap"), &n);
	if (raw) {
		raw[16] = 63;	/* odd width for NV12 */
		write_bytes(path_in("bad.cap"), raw, n);
		ret = mm_cal_capture_read(path_in("bad.cap"), &b, err, sizeof(err));
		tap_ok(ret == -EINVAL && strstr(err, "NV12"), "odd NV12 width refused: %s", err);
		raw[16] = 64;
		write_bytes(path_in("bad.cap"), raw, n - 1);
		ret = mm_cal_capture_read(path_in("bad.cap"), &b, err, sizeof(err));
		tap_ok(ret == -EINVAL && strstr(err, "header says"),
		       "truncated capture refused: %s", err);
		raw[0] = 'X';
		write_bytes(path_in("bad.cap"), raw, n);
		ret = mm_cal_capture_read(path_in("bad.cap"), &b, err, sizeof(err));
		tap_ok(ret == -EINVAL, "bad magic refused: %s", err);
		free(raw);
	}
	mm_cal_capture_free(&a);
	ret = mm_cal_synth_audio(&a, 16000, 1, 2);
	if (!ret)
		ret = mm_cal_capture_write(path_in("a.cap"), &a, err, sizeof(err));
	if (!ret)
		ret = mm_cal_capture_read(path_in("a.cap"), &b, err, sizeof(err));
	tap_ok(!ret && b.kind == MM_CAL_CAP_AUDIO && b.n_samples == 16000 &&
	       !memcmp(a.pcm, b.pcm, 32000), "audio capture file round trip");
	mm_cal_capture_free(&a);
	mm_cal_capture_free(&b);
}

/* ---- the tiny models ---------------------------------------------------- */

#define N_CAL	6
#define N_HO	5
static struct mm_cal_capture cal[N_CAL], ho[N_HO], noise[4];

static int make_caps(void)
{
	int ret = 0;

	/* calibration: NV12 and RGB frames, tones; held out: other seeds,
	 * sizes and formats; noise: unlike both */
	for (int i = 0; i < N_CAL && !ret; i++)
		ret = i < 4 ? mm_cal_synth_image(&cal[i], i % 2 ? MM_IMAGE_RGB24 :
						 MM_IMAGE_NV12, 96, 72, 0, (uint64_t)i) :
			      mm_cal_synth_audio(&cal[i], 12000, 0, (uint64_t)i);
	for (int i = 0; i < N_HO && !ret; i++)
		ret = i < 3 ? mm_cal_synth_image(&ho[i], i == 2 ? MM_IMAGE_GREY :
						 MM_IMAGE_NV12, 80, 64, 0,
						 (uint64_t)(20 + i)) :
			      mm_cal_synth_audio(&ho[i], 10000, 0, (uint64_t)(20 + i));
	for (int i = 0; i < 4 && !ret; i++)
		ret = i < 2 ? mm_cal_synth_image(&noise[i], MM_IMAGE_RGB24, 64, 64, 1,
						 (uint64_t)(40 + i)) :
			      mm_cal_synth_audio(&noise[i], 8000, 1, (uint64_t)(40 + i));
	return ret;
}

static struct mm_calib *calibrate(struct mm_mmproj *p, const uint8_t *hash,
				  struct mm_cal_capture *caps, int n, int method,
				  uint64_t version)
{
	struct mm_calib *c = NULL;
	char err[256];
	int ret = mm_cal_create(p, 1, &c, err, sizeof(err));

	for (int i = 0; i < n && !ret; i++) {
		float *y;
		size_t a, b;

		ret = mm_cal_encode(p, c, MM_CAL_OBSERVE, &caps[i], 2, &y, &a, &b,
				    err, sizeof(err));
		if (!ret)
			free(y);
	}
	if (!ret)
		ret = mm_cal_compute(c, method, 0.9999, err, sizeof(err));
	if (!ret)
		ret = mm_cal_prepare(c, err, sizeof(err));
	if (ret) {
		tap_diag("calibrate: %s", err);
		mm_cal_free(c);
		return NULL;
	}
	memcpy(c->hash, hash, MM_HASH_BYTES);
	c->version = version;
	c->n_samples = (uint64_t)n;
	return c;
}

/* a calibration file with one key left out or changed */
enum { MUT_NONE, MUT_NO_METHOD, MUT_VERSION0, MUT_FORMAT, MUT_NAN, MUT_DUP,
       MUT_UNKNOWN, MUT_TYPE, MUT_HASHSTR };

static int write_mutant(const struct mm_calib *c, int mut, const char *path)
{
	struct mm_gguf_writer *w = mm_gguf_writer_new(32);
	const char **names = malloc((size_t)c->n * sizeof(*names));
	float *thr = malloc((size_t)c->n * sizeof(float));
	char hex[MM_HASH_HEX], err[256];
	int64_t ne[1] = { c->n };
	int ret = 0;

	for (int i = 0; i < c->n; i++) {
		names[i] = c->pt[i].name;
		thr[i] = c->pt[i].thr;
	}
	if (mut == MUT_NAN)
		thr[3] = NAN;
	if (mut == MUT_DUP)
		names[2] = names[1];
	if (mut == MUT_UNKNOWN)
		names[0] = "v.blk.99.ffn_up.weight";
	mm_hash_hex(c->hash, hex);
	ret |= mm_gguf_w_str(w, "general.architecture", "mmcalib");
	ret |= mm_gguf_w_u32(w, "mmcalib.format_version", mut == MUT_FORMAT ? 2 : 1);
	if (mut != MUT_NO_METHOD)
		ret |= mm_gguf_w_str(w, "mmcalib.method", "minmax");
	ret |= mm_gguf_w_str(w, "mmcalib.model_hash", mut == MUT_HASHSTR ? "12zz" : hex);
	if (mut == MUT_TYPE)
		ret |= mm_gguf_w_str(w, "mmcalib.version", "one");
	else
		ret |= mm_gguf_w_u64(w, "mmcalib.version", mut == MUT_VERSION0 ? 0 : 1);
	ret |= mm_gguf_w_u64(w, "mmcalib.n_samples", 4);
	ret |= mm_gguf_w_arr_str(w, "mmcalib.points", names, NULL, (uint64_t)c->n);
	ret |= mm_gguf_w_tensor(w, "thresholds", MM_TYPE_F32, 1, ne, thr);
	if (!ret)
		ret = mm_gguf_w_write_file(w, path, err, sizeof(err));
	mm_gguf_writer_free(w);
	free(names);
	free(thr);
	return ret;
}

static void test_files(struct mm_mmproj *p, const uint8_t *hash,
		       struct mm_calib *c)
{
	struct mm_calib *l = NULL;
	uint8_t other[MM_HASH_BYTES];
	char err[512];
	int ret, same = 1;
	static const struct {
		int mut, want;
		const char *what, *msg;
	} muts[] = {
		{ MUT_NO_METHOD, -ENOENT, "missing method key", "mmcalib.method is missing" },
		{ MUT_VERSION0, -EINVAL, "version 0", "version 0" },
		{ MUT_FORMAT, -EINVAL, "format version 2", "format version 2" },
		{ MUT_NAN, -EINVAL, "NaN threshold", "threshold of" },
		{ MUT_DUP, -EINVAL, "duplicated point", "appears twice" },
		{ MUT_UNKNOWN, -EINVAL, "unknown point", "not a quantization point" },
		{ MUT_TYPE, -EPROTO, "version of the wrong type", "mmcalib.version" },
		{ MUT_HASHSTR, -EINVAL, "malformed hash", "64 hex digits" },
	};

	ret = mm_cal_save(c, path_in("a.cal"), err, sizeof(err));
	if (!ret)
		ret = mm_cal_load(p, hash, path_in("a.cal"), &l, err, sizeof(err));
	for (int i = 0; !ret && i < c->n; i++)
		same &= !strcmp(l->pt[i].name, c->pt[i].name) &&
			l->pt[i].thr == c->pt[i].thr;
	tap_ok(!ret && same && l->method == c->method && l->version == c->version &&
	       l->n_samples == c->n_samples && l->prepared &&
	       !memcmp(l->hash, hash, MM_HASH_BYTES),
	       "calibration file round trip (%d points, method %s)%s%s", c->n,
	       mm_cal_method_name(c->method), ret ? ": " : "", ret ? err : "");
	mm_cal_free(l);
	memcpy(other, hash, sizeof(other));
	other[31] ^= 1;
	ret = mm_cal_load(p, other, path_in("a.cal"), &l, err, sizeof(err));
	tap_ok(ret == -ESTALE && !l && strstr(err, "made for the mmproj"),
	       "a calibration of another mmproj file refused (-ESTALE): %s", err);
	for (size_t i = 0; i < sizeof(muts) / sizeof(muts[0]); i++) {
		ret = write_mutant(c, muts[i].mut, path_in("m.cal"));
		if (!ret)
			ret = mm_cal_load(p, hash, path_in("m.cal"), &l, err, sizeof(err));
		tap_ok(ret == muts[i].want && !l && strstr(err, muts[i].msg),
		       "%s refused (%d): %s", muts[i].what, ret, err);
		mm_cal_free(l);
		l = NULL;
	}
	{
		size_t n;
		uint8_t *raw = read_bytes(path_in("a.cal"), &n);

		ret = raw ? write_bytes(path_in("t.cal"), raw, n - 9) : -EIO;
		if (!ret)
			ret = mm_cal_load(p, hash, path_in("t.cal"), &l, err, sizeof(err));
		tap_ok(ret < 0 && !l, "truncated calibration file refused: %s", err);
		free(raw);
	}
}

static double agree(struct mm_mmproj *p, struct mm_calib *c, int mode,
		    struct mm_cal_agree *ag)
{
	char err[256];
	int ret = mm_cal_agreement(p, c, mode, ho, N_HO, 2, NULL, ag, err,
				   sizeof(err));

	if (ret) {
		tap_diag("agreement: %s", err);
		ag->cos_mean = ag->cos_min = -2;
	}
	return ag->cos_mean;
}

/* ---- API: store and rollback ------------------------------------------ */

static void cap_images(struct mm_cal_capture *caps, int n, struct mmhal_image *im,
		       struct mmhal_audio *au, int *ni, int *na)
{
	*ni = *na = 0;
	for (int i = 0; i < n; i++) {
		if (caps[i].kind == MM_CAL_CAP_IMAGE) {
			struct mmhal_image *x = &im[(*ni)++];

			x->format = caps[i].im.format;
			x->width = caps[i].im.width;
			x->height = caps[i].im.height;
			x->plane[0] = caps[i].im.plane[0];
			x->plane[1] = caps[i].im.plane[1];
			x->stride[0] = caps[i].im.stride[0];
			x->stride[1] = caps[i].im.stride[1];
		} else {
			au[(*na)++] = mmhal_audio_s16(caps[i].pcm,
						      caps[i].n_samples, 16000);
		}
	}
}

static int exists(const char *path)
{
	return access(path, F_OK) == 0;
}

static void test_api(const char *lpath, const char *ppath, const char *ppath2,
		     struct mm_calib *good)
{
	struct mmhal_model *m = NULL;
	struct mmhal_mmproj *mp = NULL;
	struct mmhal_image im[N_HO];
	struct mmhal_audio au[N_HO];
	struct mmhal_calib_heldout h = { .size = sizeof(h), .min_cos_mean = 0.99,
					 .min_cos = 0.95 };
	struct mmhal_calib_report r = { .size = sizeof(r) };
	struct mm_calib *bad = NULL;
	char err[512], store[1200];
	int ret, ni, na;

	snprintf(store, sizeof(store), "%s/store", dir);
	mkdir(store, 0755);
	cap_images(ho, N_HO, im, au, &ni, &na);
	h.images = im;
	h.n_images = ni;
	h.audio = au;
	h.n_audio = na;
	ret = mmhal_model_load(lpath, NULL, &m, err, sizeof(err));
	if (!ret)
		ret = mmhal_mmproj_load(ppath, m, NULL, &mp, err, sizeof(err));
	if (!tap_ok(!ret, "load the tiny LLM and mmproj through the API%s%s",
		    ret ? ": " : "", ret ? err : ""))
		goto out;
	/* encode: calibrated rows differ from the dynamic ones, and agree */
	{
		struct mmhal_chunk *c0 = NULL, *c1 = NULL;
		struct mmhal_chunk_info inf = { .size = sizeof(inf) };
		double ab = 0, aa = 0, bb = 0;

		ret = mmhal_encode_image(mp, &im[0], &c0, err, sizeof(err));
		if (!ret)
			ret = mmhal_mmproj_set_calibration(mp, path_in("v1.cal"), err,
							   sizeof(err));
		if (!ret)
			ret = mmhal_encode_image(mp, &im[0], &c1, err, sizeof(err));
		if (!ret)
			ret = mmhal_chunk_info(c0, &inf);
		for (int i = 0; !ret && i < inf.n_embd_rows * inf.n_embd; i++) {
			double x = mmhal_chunk_embd(c0)[i], y = mmhal_chunk_embd(c1)[i];

			ab += x * y;
			aa += x * x;
			bb += y * y;
		}
		tap_ok(!ret && ab < sqrt(aa * bb) * (1 - 1e-9) &&
		       ab > 0.99 * sqrt(aa * bb),
		       "mmhal_encode_image with a calibration set runs static int8 (cos to dynamic %.6f)%s%s",
		       ret ? 0 : ab / sqrt(aa * bb), ret ? ": " : "", ret ? err : "");
		mmhal_chunk_free(c0);
		mmhal_chunk_free(c1);
	}
	ret = mmhal_mmproj_set_calibration(mp, path_in("other.cal"), err, sizeof(err));
	tap_ok(ret == -ESTALE, "set_calibration refuses another mmproj's calibration: %s",
	       err);
	ret = mmhal_mmproj_set_calibration(mp, NULL, err, sizeof(err));
	/* install v1, then v2 */
	ret = mmhal_mmproj_calib_update(mp, store, path_in("v1.cal"), &h, &r, err,
					sizeof(err));
	tap_ok(!ret && r.version == 1 && r.cos_mean >= 0.99 &&
	       exists(path_in("store/calib.cur")) && !exists(path_in("store/calib.prev")),
	       "install v1 into an empty store (cos mean %.5f min %.5f)%s%s", r.cos_mean,
	       r.cos_min, ret ? ": " : "", ret ? err : "");
	ret = mmhal_mmproj_calib_update(mp, store, path_in("v2.cal"), &h, &r, err,
					sizeof(err));
	tap_ok(!ret && r.version == 2 && exists(path_in("store/calib.prev")),
	       "install v2: v1 kept as calib.prev%s%s", ret ? ": " : "", ret ? err : "");
	/* a deliberately bad calibration (every threshold / 50) is refused */
	bad = good;
	{
		float *keep = malloc((size_t)good->n * sizeof(float));

		for (int i = 0; i < good->n; i++) {
			keep[i] = good->pt[i].thr;
			good->pt[i].thr /= 50;
		}
		good->version = 3;
		mm_cal_save(good, path_in("bad.cal"), err, sizeof(err));
		/* v4: only the vision points clipped (x 0.2): good on audio
		 * alone, bad once images are held out */
		for (int i = 0; i < good->n; i++)
			good->pt[i].thr = keep[i] * (good->pt[i].name[0] == 'v' ?
						     0.2f : 1);
		good->version = 4;
		mm_cal_save(good, path_in("v4.cal"), err, sizeof(err));
		for (int i = 0; i < good->n; i++)
			good->pt[i].thr = keep[i];
		free(keep);
	}
	(void)bad;
	ret = mmhal_mmproj_calib_update(mp, store, path_in("bad.cal"), &h, &r, err,
					sizeof(err));
	tap_ok(ret == -EDOM && r.version == 2 && strstr(err, "refused"),
	       "a bad calibration (thresholds / 50) refused, v2 kept: %s", err);
	/* v4 installed on an audio-only held-out set */
	{
		struct mmhal_calib_heldout ha = h;

		ha.n_images = 0;
		ret = mmhal_mmproj_calib_update(mp, store, path_in("v4.cal"), &ha, &r,
						err, sizeof(err));
		tap_ok(!ret && r.version == 4,
		       "v4 (vision thresholds x 0.2) installed on audio-only held-out captures (cos mean %.5f)%s%s",
		       r.cos_mean, ret ? ": " : "", ret ? err : "");
	}
	/* images arrive: v4's agreement drops, v2 (calib.prev) restored */
	ret = mmhal_mmproj_calib_update(mp, store, NULL, &h, &r, err, sizeof(err));
	tap_ok(ret == 1 && r.rolled_back && r.version == 2 &&
	       exists(path_in("store/calib.bad")) && !exists(path_in("store/calib.prev")),
	       "agreement dropped with images held out: rolled back to v2 (cos mean %.5f)%s%s",
	       r.cos_mean, ret != 1 ? ": " : "", ret != 1 ? err : "");
	ret = mmhal_mmproj_calib_update(mp, store, NULL, &h, &r, err, sizeof(err));
	tap_ok(ret == 0 && r.version == 2, "re-check: v2 still agrees");
	/* nothing left that agrees: back to dynamic */
	h.min_cos_mean = 1.0;
	h.min_cos = 1.0;
	ret = mmhal_mmproj_calib_update(mp, store, NULL, &h, &r, err, sizeof(err));
	tap_ok(ret == -EDOM && r.version == 0 && strstr(err, "dynamic"),
	       "no calibration agrees (threshold 1.0): back to dynamic: %s", err);
	h.size = 3;
	ret = mmhal_mmproj_calib_update(mp, store, NULL, &h, &r, err, sizeof(err));
	tap_ok(ret == -EINVAL, "bad held-out size refused: %s", err);
	(void)ppath2;
out:
	mmhal_mmproj_free(mp);
	mmhal_model_free(m);
}

/* ---- the tool ---------------------------------------------------------- */

__attribute__((format(printf, 1, 2)))
static int sh(const char *fmt, ...)
{
	char *cmd = NULL;
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&cmd, fmt, ap);
	va_end(ap);
	if (r < 0)
		return -1;
	r = system(cmd);
	free(cmd);
	return WIFEXITED(r) ? WEXITSTATUS(r) : -1;
}

static void test_tool(const char *tool, const char *ppath,
		      struct mm_mmproj *p, const uint8_t *hash)
{
	struct mm_calib *l = NULL;
	char err[512], d[1200];
	int ret;

	snprintf(d, sizeof(d), "%s/tool", dir);
	mkdir(d, 0755);
	ret = sh("%s capgen --kind image --format nv12 --size 96x64 -n 3 -o %s && "
		 "%s capgen --kind audio --ms 700 -n 2 --seed 9 -o %s", tool, d, tool, d);
	tap_ok(ret == 0, "mmgguf capgen writes image and audio captures");
	ret = sh("%s calib --mmproj %s --captures %s --method percentile --percentile 99.99 --heldout %s/audio-scene-010.cap --version 7 --threads 2 -o %s/t.cal > %s/calib.out",
		 tool, ppath, d, d, d, d);
	if (!ret)
		ret = mm_cal_load(p, hash, path_in("tool/t.cal"), &l, err, sizeof(err));
	tap_ok(!ret && l && l->version == 7 && l->method == MM_CAL_PERCENTILE &&
	       fabsf(l->pct - 0.9999f) < 1e-6f && l->n_samples == 5,
	       "mmgguf calib writes a calibration this mmproj loads (v7, percentile 99.99, 5 samples)%s%s",
	       ret ? ": " : "", ret ? err : "");
	mm_cal_free(l);
	ret = sh("grep -q 'dynamic Q8_0 blocks *cos mean' %s/tool/calib.out", dir);
	tap_ok(ret == 0, "mmgguf calib reports the agreement of static and dynamic");
	ret = sh("%s calib --mmproj %s --method kl -o /dev/null 2>/dev/null", tool, ppath);
	tap_ok(ret == 2, "mmgguf calib without captures: usage error (2)");
	ret = sh("%s calib --mmproj %s --captures /nonexistent --method kl -o x.cal 2>/dev/null",
		 tool, ppath);
	tap_ok(ret == 1, "mmgguf calib with missing captures fails (1)");
}

int main(int argc, char **argv)
{
	struct mm_gen_mmproj_params pp = { .vision = "tiny", .audio = "tiny",
					   .type = MM_TYPE_Q8_0, .seed = 1 };
	struct mm_gen_params gp = { .shape = "tiny", .tokenizer = "smolvlm",
				    .type = 0, .seed = 1 };
	struct mm_mmproj *p = NULL;
	struct mm_calib *c[4] = { NULL }, *cn = NULL, *other = NULL;
	struct mm_cal_agree ag;
	uint8_t hash[MM_HASH_BYTES], hash2[MM_HASH_BYTES];
	char err[512], ppath[1200], ppath2[1200], lpath[1200];
	int ret;

	snprintf(dir, sizeof(dir), "%s", argc > 2 ? argv[2] : "/tmp");
	mkdir(dir, 0755);
	test_hist();
	test_matmul();
	test_captures();

	snprintf(ppath, sizeof(ppath), "%s/tiny-q8.gguf", dir);
	snprintf(ppath2, sizeof(ppath2), "%s/tiny-q8-seed2.gguf", dir);
	snprintf(lpath, sizeof(lpath), "%s/llm.gguf", dir);
	ret = mm_gen_mmproj(&pp, ppath, err, sizeof(err));
	pp.seed = 2;
	if (!ret)
		ret = mm_gen_mmproj(&pp, ppath2, err, sizeof(err));
	if (!ret)
		ret = mm_gen_model(&gp, lpath, err, sizeof(err));
	if (!ret)
		ret = mm_mmproj_load(ppath, &p, err, sizeof(err));
	if (!ret)
		ret = mm_hash_file(ppath, hash, NULL, err, sizeof(err));
	if (!ret)
		ret = mm_hash_file(ppath2, hash2, NULL, err, sizeof(err));
	if (!ret)
		ret = make_caps() ? -ENOMEM : 0;
	if (!tap_ok(!ret, "tiny vision + audio mmproj (Q8_0), LLM and captures%s%s",
		    ret ? ": " : "", ret ? err : ""))
		goto out;
	for (int m = MM_CAL_MINMAX; m <= MM_CAL_KL; m++) {
		c[m] = calibrate(p, hash, cal, N_CAL, m, 1);
		agree(p, c[m], MM_CAL_STATIC, &ag);
		tap_ok(c[m] && ag.cos_mean >= 0.99 && ag.cos_min >= 0.95,
		       "static int8 %s: held-out agreement with the float reference cos mean %.5f min %.5f (>= 0.99 / 0.95) over %llu rows",
		       mm_cal_method_name(m), ag.cos_mean, ag.cos_min,
		       (unsigned long long)ag.rows);
	}
	agree(p, NULL, MM_CAL_DYNAMIC, &ag);
	tap_ok(ag.cos_mean >= 0.99 && ag.cos_min >= 0.95,
	       "dynamic Q8_0: cos mean %.5f min %.5f", ag.cos_mean, ag.cos_min);
	/* calibrated on noise, held out on scenes: worse than on scenes */
	cn = calibrate(p, hash, noise, 4, MM_CAL_MINMAX, 1);
	{
		struct mm_cal_agree a0, a1;

		agree(p, c[MM_CAL_MINMAX], MM_CAL_STATIC, &a0);
		agree(p, cn, MM_CAL_STATIC, &a1);
		tap_ok(cn && a1.cos_mean < a0.cos_mean,
		       "calibrated on noise captures: held-out agreement %.5f below the scene calibration's %.5f",
		       a1.cos_mean, a0.cos_mean);
	}
	if (c[MM_CAL_MINMAX])
		test_files(p, hash, c[MM_CAL_MINMAX]);
	/* files for the API test */
	other = calibrate(p, hash2, cal, N_CAL, MM_CAL_MINMAX, 1);
	ret = !c[MM_CAL_PERCENTILE] || !other;
	if (!ret)
		ret = mm_cal_save(c[MM_CAL_PERCENTILE], path_in("v1.cal"), err, sizeof(err)) ||
		      mm_cal_save(other, path_in("other.cal"), err, sizeof(err));
	if (!ret) {
		c[MM_CAL_PERCENTILE]->version = 2;
		ret = mm_cal_save(c[MM_CAL_PERCENTILE], path_in("v2.cal"), err, sizeof(err));
	}
	if (tap_ok(!ret, "calibration files for the API test"))
		test_api(lpath, ppath, ppath2, c[MM_CAL_PERCENTILE]);
	if (argc > 1)
		test_tool(argv[1], ppath, p, hash);
out:
	for (int i = 0; i < 4; i++)
		mm_cal_free(c[i]);
	mm_cal_free(cn);
	mm_cal_free(other);
	for (int i = 0; i < N_CAL; i++)
		mm_cal_capture_free(&cal[i]);
	for (int i = 0; i < N_HO; i++)
		mm_cal_capture_free(&ho[i]);
	for (int i = 0; i < 4; i++)
		mm_cal_capture_free(&noise[i]);
	mm_mmproj_free(p);
	return tap_done("calib");
}

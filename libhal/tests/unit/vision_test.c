// SPDX-License-Identifier: MIT
/*
 * vision_test.c - the vision encoder and projectors (vision.c) against the
 * naive double-precision reference of tests/ref_mm.c: plain loops over
 * weights dequantized whole with mm_dequantize_row(), the conv read
 * straight from the CHW image, and the idefics3 pixel shuffle emulated as
 * clip.cpp's ggml reshape/permute/cont sequence (flat-index arithmetic), on
 * mmgguf gen's tiny/tiny-mlp/micro towers at F32, F16, BF16, Q8_0 and
 * Q4_K; plus thread-count agreement, the error cases and the float-weight
 * GEMM's x86 tiles against each other (test_enc_gemm) and the repacking
 * of F16 weights to Q8_0 (test_repack).
 *
 * Tolerances (max |out - ref| / max |ref|): F32, F16 and BF16 weights run in f32
 * arithmetic: 1e-5 (measured ~3e-7). Q8_0 and Q4_K weights make the
 * kernels quantize each activation row to 8 bits (Q8_0 / Q8_K) before
 * every matmul, so the error is that rounding accumulated over the
 * blocks: 5e-2 (measured 1.0e-2 to 1.8e-2).
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"
#include "mmproj.h"
#include "quant.h"
#include "tests/tap.h"
#include "vision.h"
#include "encoder.h"

/* the reference, compiled into this test (gguf.mk builds each test from
 * its one source file) */
#include "ref_mm.c"

static void *gen_mem(const char *vision, const char *audio, uint32_t type,
		     size_t *size)
{
	struct mm_gen_mmproj_params p = {
		.vision = vision, .audio = audio, .type = type, .seed = 3,
	};
	char err[256];
	void *buf = NULL;

	if (mm_gen_mmproj_mem(&p, &buf, size, err, sizeof(err))) {
		tap_diag("gen %s/%s: %s", vision ? vision : "-",
			 audio ? audio : "-", err);
		return NULL;
	}
	return buf;
}

/* ---- tests -------------------------------------------------------------- */

static float *make_pixels(size_t n, uint64_t seed)
{
	float *px = malloc(n * sizeof(float));

	for (size_t i = 0; i < n; i++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		px[i] = (float)((double)(seed >> 11) / (double)(1ull << 53) *
				2.0 - 1.0);
	}
	return px;
}

static void test_against_ref(const char *shape, uint32_t type, double tol)
{
	struct mm_mmproj *p = NULL;
	const struct mm_mmproj_vision *v;
	char err[256] = "";
	size_t size = 0, np, no;
	void *buf = gen_mem(shape, NULL, type, &size);
	float *px, *out, *out1;
	double *ref, amax = 0, emax = 0, dthr = 0;
	int ret;

	if (!buf || mm_mmproj_load_mem(buf, size, &p, err, sizeof(err))) {
		tap_ok(0, "%s %s: load: %s", shape, mm_type_name(type), err);
		free(buf);
		return;
	}
	v = mm_mmproj_vision(p);
	np = mm_vision_n_pixels(p);
	no = mm_vision_n_tokens(p) * mm_vision_n_embd_out(p);
	px = make_pixels(np, 42);
	out = calloc(no, sizeof(float));
	out1 = calloc(no, sizeof(float));
	ret = mm_vision_encode(p, px, np, out, no, 3, err, sizeof(err));
	if (!ret)
		ret = mm_vision_encode(p, px, np, out1, no, 1, err,
				       sizeof(err));
	ref = ref_mm_vision(v, px);
	for (size_t i = 0; i < no; i++) {
		amax = fmax(amax, fabs(ref[i]));
		emax = fmax(emax, fabs(out[i] - ref[i]));
		dthr = fmax(dthr, fabs((double)out[i] - out1[i]));
	}
	tap_ok(!ret && amax > 0 && emax / amax <= tol,
	       "%s (%s, %u tokens x %u) %s: max |err| %.3g of max |ref| %.3g = %.2e <= %.0e%s%s",
	       shape, mm_mmproj_type_name(v->proj), v->n_tokens, v->n_out,
	       mm_type_name(type), emax, amax, amax > 0 ? emax / amax : 0,
	       tol, ret ? ": " : "", ret ? err : "");
	tap_ok(!ret && dthr <= 1e-6 * amax,
	       "%s %s: 1 and 3 threads agree (max diff %.2e)", shape,
	       mm_type_name(type), dthr);
	free(ref);
	free(px);
	free(out);
	free(out1);
	mm_mmproj_free(p);
	free(buf);
}

static void test_errors(void)
{
	struct mm_mmproj *p = NULL;
	char err[256] = "";
	size_t size = 0, np, no;
	void *buf = gen_mem("micro", NULL, MM_TYPE_F32, &size);
	float *px, *out;
	int ret;

	if (!buf || mm_mmproj_load_mem(buf, size, &p, err, sizeof(err))) {
		tap_ok(0, "micro: load: %s", err);
		free(buf);
		return;
	}
	np = mm_vision_n_pixels(p);
	no = mm_vision_n_tokens(p) * mm_vision_n_embd_out(p);
	tap_ok(np == 3 * 16 * 16 && mm_vision_n_tokens(p) == 1 &&
	       mm_vision_n_embd_out(p) == 32,
	       "micro: 3x16x16 floats in, 1 token x 32 out");
	px = make_pixels(np + 1, 1);
	out = calloc(no + 1, sizeof(float));
	ret = mm_vision_encode(p, px, np - 1, out, no, 1, err, sizeof(err));
	tap_ok(ret == -EINVAL &&
	       strstr(err, "767 input floats, the encoder takes 3 x 16 x 16 = 768"),
	       "short input rejected: \"%s\"", err);
	ret = mm_vision_encode(p, px, np + 1, out, no, 1, err, sizeof(err));
	tap_ok(ret == -EINVAL && strstr(err, "769 input floats"),
	       "long input rejected: \"%s\"", err);
	ret = mm_vision_encode(p, px, np, out, no + 1, 1, err, sizeof(err));
	tap_ok(ret == -EINVAL &&
	       strstr(err, "output of 33 floats, the encoder gives 1 tokens x 32 = 32"),
	       "wrong output size rejected: \"%s\"", err);
	ret = mm_vision_encode(p, NULL, np, out, no, 1, err, sizeof(err));
	tap_ok(ret == -EINVAL && strstr(err, "NULL pixels"),
	       "NULL pixels rejected: \"%s\"", err);
	mm_mmproj_free(p);
	free(buf);

	p = NULL;
	buf = gen_mem(NULL, "micro", MM_TYPE_F32, &size);
	if (!buf || mm_mmproj_load_mem(buf, size, &p, err, sizeof(err))) {
		tap_ok(0, "audio micro: load: %s", err);
	} else {
		ret = mm_vision_encode(p, px, np, out, no, 1, err,
				       sizeof(err));
		tap_ok(ret == -ENOENT && mm_vision_n_tokens(p) == 0 &&
		       mm_vision_n_pixels(p) == 0 &&
		       strstr(err, "no vision encoder"),
		       "audio-only mmproj: -ENOENT, 0 tokens: \"%s\"", err);
	}
	mm_mmproj_free(p);
	free(buf);
	free(px);
	free(out);
}

/*
 * mm_mmproj_repack() of an F16 tower to Q8_0: the matmul weights change
 * type (not the patch embedding), the encode matches the reference on
 * the repacked weights at the Q8_0 tolerance and stays close to the F16
 * encode (cosine >= 0.999); other target types are -EINVAL.
 */
static void test_repack(const char *shape)
{
	struct mm_mmproj *p = NULL;
	const struct mm_mmproj_vision *v;
	char err[256] = "";
	size_t size = 0, np, no, cnt = 0;
	void *buf = gen_mem(shape, NULL, MM_TYPE_F16, &size);
	float *px = NULL, *outf = NULL, *outq = NULL;
	double *ref = NULL, amax = 0, emax = 0, dot = 0, nf = 0, nq = 0, cosv;
	uint32_t patch_type;
	int ret;

	if (!buf || mm_mmproj_load_mem(buf, size, &p, err, sizeof(err))) {
		tap_ok(0, "%s repack: load: %s", shape, err);
		free(buf);
		return;
	}
	v = mm_mmproj_vision(p);
	np = mm_vision_n_pixels(p);
	no = mm_vision_n_tokens(p) * mm_vision_n_embd_out(p);
	px = make_pixels(np, 7);
	outf = calloc(no, sizeof(float));
	outq = calloc(no, sizeof(float));
	patch_type = v->patch_w.type;	/* the converter's: F32 or F16 */
	ret = mm_vision_encode(p, px, np, outf, no, 2, err, sizeof(err));
	tap_ok(mm_mmproj_repack(p, MM_TYPE_Q4_K, NULL, err, sizeof(err)) ==
	       -EINVAL && v->blk[0].q_w.type == MM_TYPE_F16,
	       "%s repack to q4_k: -EINVAL, weights kept: \"%s\"", shape, err);
	if (!ret)
		ret = mm_mmproj_repack(p, MM_TYPE_Q8_0, &cnt, err, sizeof(err));
	if (!ret)
		ret = mm_vision_encode(p, px, np, outq, no, 2, err, sizeof(err));
	if (!ret) {
		ref = ref_mm_vision(v, px);
		for (size_t i = 0; i < no; i++) {
			amax = fmax(amax, fabs(ref[i]));
			emax = fmax(emax, fabs(outq[i] - ref[i]));
			dot += (double)outf[i] * outq[i];
			nf += (double)outf[i] * outf[i];
			nq += (double)outq[i] * outq[i];
		}
	}
	cosv = nf > 0 && nq > 0 ? dot / sqrt(nf * nq) : 0;
	tap_ok(!ret && cnt == 6 * (size_t)v->n_layer +
	       (v->proj == MM_MMPROJ_IDEFICS3 ? 1 : 2) &&
	       v->blk[0].q_w.type == MM_TYPE_Q8_0 &&
	       v->blk[0].down_w.type == MM_TYPE_Q8_0 &&
	       v->patch_w.type == patch_type && amax > 0 &&
	       emax / amax <= 5e-2 && cosv >= 0.999,
	       "%s repack f16 -> q8_0: %zu weights, max |err| vs the reference %.2e <= 5e-2, cosine to the f16 encode %.6f >= 0.999%s%s",
	       shape, cnt, amax > 0 ? emax / amax : 0, cosv, ret ? ": " : "",
	       ret ? err : "");
	free(ref);
	free(px);
	free(outf);
	free(outq);
	mm_mmproj_free(p);
	free(buf);
}

/*
 * The float-weight GEMM of mm_enc_matmul() (encoder.c) on shapes with
 * every tail (k not a multiple of 16 or 32, m not of 16 or 48, n not of
 * 6 or 8, more than one row block): each x86 tile in turn (simd 1: AVX2
 * 6 x 16, simd 2: AVX-512 8 x 48 with the transposing pack, where the
 * CPU has them) against a double reference at 1e-5 of max |ref|, and
 * the two tiles bit for bit (the same operations per output lane).
 */
static void test_enc_gemm(void)
{
	static const enum mm_type types[] = { MM_TYPE_F32, MM_TYPE_F16,
					      MM_TYPE_BF16 };
	static const int64_t shapes[][3] = {	/* m, k, n */
		{ 100, 77, 13 }, { 96, 64, 200 }, { 48, 32, 8 }, { 17, 5, 2 },
		{ 160, 129, 97 },
	};
	char err[256];

	for (size_t ti = 0; ti < 3; ti++) {
		for (size_t si = 0; si < sizeof(shapes) / sizeof(shapes[0]); si++) {
			const enum mm_type t = types[ti];
			const int64_t m = shapes[si][0], k = shapes[si][1],
				      n = shapes[si][2];
			const size_t rs = mm_row_bytes(t, k);
			uint8_t *w = malloc(rs * (size_t)m);
			float *x = malloc(sizeof(float) * (size_t)(n * k));
			float *wf = malloc(sizeof(float) * (size_t)(m * k));
			float *y[3];
			double emax[3] = { 0, 0, 0 }, amax = 0;
			struct mm_enc s;
			int have[3] = { 1, 0, 0 }, ok = 1, same = 1;

			for (int v = 0; v < 3; v++)
				y[v] = calloc((size_t)(n * m), sizeof(float));
			if (!w || !x || !wf || !y[0] || !y[1] || !y[2] ||
			    mm_enc_init(&s, 2, 16, "test", err, sizeof(err))) {
				tap_ok(0, "enc gemm: setup");
				goto next;
			}
			for (int64_t i = 0; i < m * k; i++)
				wf[i] = (float)((i * 7919 + 13) % 2003) / 1001.0f - 1.0f;
			for (int64_t j = 0; j < m; j++) {
				mm_quantize_row(t, wf + j * k, w + (size_t)j * rs, k);
				mm_dequantize_row(t, w + (size_t)j * rs, wf + j * k, k);
			}
			for (int64_t i = 0; i < n * k; i++)
				x[i] = (float)((i * 4099 + 7) % 1999) / 999.0f - 1.0f;
			{
				const int top = s.simd;

				/* v 0: mm_matmul (simd 0); 1: AVX2; 2: AVX-512 */
				for (int v = 0; v < 3; v++) {
					if (v > top)
						break;
					have[v] = 1;
					s.simd = v;
					mm_enc_matmul(&s, t, w, x, y[v], m, k, n);
				}
				s.simd = top;
			}
			for (int64_t i = 0; i < n; i++)
				for (int64_t j = 0; j < m; j++) {
					double r = 0;

					for (int64_t kk = 0; kk < k; kk++)
						r += (double)x[i * k + kk] * wf[j * k + kk];
					if (fabs(r) > amax)
						amax = fabs(r);
					for (int v = 0; v < 3; v++)
						if (have[v] && fabs(y[v][i * m + j] - r) > emax[v])
							emax[v] = fabs(y[v][i * m + j] - r);
					if (have[1] && have[2] &&
					    memcmp(&y[1][i * m + j], &y[2][i * m + j],
						   sizeof(float)))
						same = 0;
				}
			for (int v = 0; v < 3; v++)
				if (have[v] && !(emax[v] <= 1e-5 * amax))
					ok = 0;
			tap_ok(ok && same,
			       "enc gemm %s m %lld k %lld n %lld: err/max %.1e (mm_matmul) %.1e (avx2%s) %.1e (avx512%s), avx2 == avx512 bit for bit: %s",
			       mm_type_name(t), (long long)m, (long long)k,
			       (long long)n, emax[0] / amax, emax[1] / amax,
			       have[1] ? "" : ": absent", emax[2] / amax,
			       have[2] ? "" : ": absent",
			       have[1] && have[2] ? (same ? "yes" : "NO") : "n/a");
			mm_enc_fini(&s);
next:
			for (int v = 0; v < 3; v++)
				free(y[v]);
			free(w);
			free(x);
			free(wf);
		}
	}
}

int main(void)
{
	static const char *const shapes[] = { "micro", "tiny", "tiny-mlp" };

	for (size_t i = 0; i < 3; i++) {
		test_against_ref(shapes[i], MM_TYPE_F32, 1e-5);
		test_against_ref(shapes[i], MM_TYPE_F16, 1e-5);
		test_against_ref(shapes[i], MM_TYPE_BF16, 1e-5);
		test_against_ref(shapes[i], MM_TYPE_Q8_0, 5e-2);
		test_against_ref(shapes[i], MM_TYPE_Q4_K, 5e-2);
	}
	test_errors();
	test_repack("tiny");
	test_repack("tiny-mlp");
	test_enc_gemm();
	return tap_done("vision");
}

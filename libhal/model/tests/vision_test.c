// SPDX-License-Identifier: MIT
/*
 * vision_test.c - the vision encoder and projectors (vision.c) against the
 * naive double-precision reference of tests/ref_mm.c: plain loops over
 * weights dequantized whole with mm_dequantize_row(), the conv read
 * straight from the CHW image, and the idefics3 pixel shuffle emulated as
 * clip.cpp's ggml reshape/permute/cont sequence (flat-index arithmetic), on
 * mmgguf gen's tiny/tiny-mlp/micro towers at F32, F16, Q8_0 and Q4_K;
 * plus thread-count agreement and the error cases.
 *
 * Tolerances (max |out - ref| / max |ref|): F32 and F16 weights run in f32
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
#include "../../tests/tap.h"
#include "vision.h"

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

int main(void)
{
	static const char *const shapes[] = { "micro", "tiny", "tiny-mlp" };

	for (size_t i = 0; i < 3; i++) {
		test_against_ref(shapes[i], MM_TYPE_F32, 1e-5);
		test_against_ref(shapes[i], MM_TYPE_F16, 1e-5);
		test_against_ref(shapes[i], MM_TYPE_Q8_0, 5e-2);
		test_against_ref(shapes[i], MM_TYPE_Q4_K, 5e-2);
	}
	test_errors();
	return tap_done("vision");
}

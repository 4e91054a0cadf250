// SPDX-License-Identifier: MIT
/*
 * quant_test.c - types, quantizers and kernels of libhal/model (TAP).
 *
 * Tolerances:
 *  - quantize -> dequantize: relative RMS error per type (table below),
 *    from the type's step size on uniform [-1, 1] data;
 *  - every kernel set vs the scalar reference (same quantized
 *    activations, same integer block sums): |y - ref| <= 2e-5 * S + 1e-6
 *    where S = sum |w_deq * x| over the row (f32 summation order only);
 *  - scalar reference vs f32 math on dequantized weights: the activation
 *    quantization error, |y - W_deq.x| <= S_w * max|x| / 100 (Q8 steps are
 *    max|x|/127 per block) and 1e-5 * S for F32/F16/BF16.
 */
#include "gguf.h"
#include "quant.h"
#include "quant_kern.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/tap.h"

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static float frand(void)	/* uniform [-1, 1) */
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (float)((rng_state >> 40) / 8388608.0) - 1.0f;
}

static void fill(float *x, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		x[i] = frand();
}

/* A tie for a quantizer with scale 1: an integer in (-125, 125) +- 0.5 */
static float frand_tie(void)
{
	return (float)((int)(frand() * 125)) + (frand() < 0 ? -0.5f : 0.5f);
}

static const enum mm_type all_types[] = {
	MM_TYPE_F32, MM_TYPE_F16, MM_TYPE_BF16, MM_TYPE_Q8_0, MM_TYPE_Q4_0,
	MM_TYPE_Q4_1, MM_TYPE_Q5_0, MM_TYPE_Q4_K, MM_TYPE_Q6_K,
};
#define NTYPES (sizeof(all_types) / sizeof(all_types[0]))

/* ---- type table and golden layouts ----------------------------------- */

static void test_type_table(void)
{
	int good = 1;

	good &= mm_type_block_bytes(MM_TYPE_Q4_0) == 18 &&
		mm_type_block_bytes(MM_TYPE_Q4_1) == 20 &&
		mm_type_block_bytes(MM_TYPE_Q5_0) == 22 &&
		mm_type_block_elems(MM_TYPE_Q5_0) == 32 &&
		mm_type_block_bytes(MM_TYPE_Q8_0) == 34 &&
		mm_type_block_bytes(MM_TYPE_Q4_K) == 144 &&
		mm_type_block_bytes(MM_TYPE_Q6_K) == 210 &&
		mm_type_block_bytes(MM_TYPE_Q8_K) == 292 &&
		mm_type_block_bytes(MM_TYPE_F16) == 2 &&
		mm_type_block_bytes(MM_TYPE_BF16) == 2;
	good &= mm_type_block_elems(MM_TYPE_Q4_K) == 256 &&
		mm_type_block_elems(MM_TYPE_Q8_0) == 32 &&
		mm_type_block_elems(MM_TYPE_F32) == 1;
	good &= mm_row_bytes(MM_TYPE_Q8_0, 4096) == 128 * 34 &&
		mm_row_bytes(MM_TYPE_Q8_0, 33) == 0 &&
		mm_row_bytes(MM_TYPE_Q4_K, 512) == 288;
	good &= mm_type_valid(MM_TYPE_Q4_K) && mm_type_valid(MM_TYPE_Q5_0) &&
		!mm_type_valid(MM_TYPE_Q8_K) && !mm_type_valid(9) &&
		!mm_type_valid(7) && !mm_type_valid(31);
	good &= !strcmp(mm_type_name(MM_TYPE_Q4_K), "q4_k") &&
		!strcmp(mm_type_name(MM_TYPE_Q8_0), "q8_0") &&
		!strcmp(mm_type_name(MM_TYPE_Q5_0), "q5_0") &&
		!strcmp(mm_type_name(MM_TYPE_Q4_K), mm_gguf_type_name(12)) &&
		!strcmp(mm_type_name(MM_TYPE_Q4_K_R8), "q4_k_r8") &&
		!strcmp(mm_type_name((enum mm_type)200), "?");
	/* the interleaved layouts keep their type's blocks */
	good &= mm_type_block_bytes(MM_TYPE_Q4_K_R8) ==
			mm_type_block_bytes(MM_TYPE_Q4_K) &&
		mm_type_block_elems(MM_TYPE_Q8_0_R8) == 32 &&
		mm_type_block_bytes(MM_TYPE_Q8_0_R8) == 34;
	tap_ok(good, "type table: block sizes, row bytes, names, validity");
}

static void test_f16_bf16(void)
{
	static const struct { float f; uint16_t h; } f16[] = {
		{ 1.0f, 0x3C00 }, { -2.0f, 0xC000 }, { 0.1f, 0x2E66 },
		{ 65504.f, 0x7BFF }, { 65520.f, 0x7C00 }, { 0.0f, 0x0000 },
		{ 5.9604645e-8f, 0x0001 }, { 6.1035156e-5f, 0x0400 },
		{ 1.00048828125f, 0x3C00 },	/* tie: to even */
		{ 1.00146484375f, 0x3C02 },	/* tie: to even (up) */
	};
	int good = 1;

	for (size_t i = 0; i < sizeof(f16) / sizeof(f16[0]); i++) {
		if (mm_f32_to_f16(f16[i].f) != f16[i].h) {
			printf("# f16(%g) = %04x, want %04x\n", f16[i].f,
			       mm_f32_to_f16(f16[i].f), f16[i].h);
			good = 0;
		}
	}
	for (uint32_t h = 0; h < 0x7C00; h++)	/* all finite positives */
		if (mm_f32_to_f16(mm_f16_to_f32(h)) != h)
			good = 0;
	tap_ok(good, "f16: known values, round to nearest even, round trip");

	uint32_t u[] = { 0x3F800000, 0x3F808000, 0x3F818000, 0x3F80C000 };
	uint16_t want[] = { 0x3F80, 0x3F80, 0x3F82, 0x3F81 };
	good = 1;
	for (int i = 0; i < 4; i++) {
		float f;

		memcpy(&f, &u[i], 4);
		if (mm_f32_to_bf16(f) != want[i])
			good = 0;
	}
	good &= mm_bf16_to_f32(0x3F80) == 1.0f && mm_bf16_to_f32(0xC000) == -2.0f;
	tap_ok(good, "bf16: round to nearest even, decode");
}

static void test_golden(void)
{
	float x[32];
	uint8_t got[34], want[34];

	/* Q8_0: amax 127 -> d = 1.0 (f16 0x3C00), q = x exactly. */
	for (int j = 0; j < 32; j++)
		x[j] = j - 16;
	x[0] = -127;
	mm_quantize_row(MM_TYPE_Q8_0, x, got, 32);
	want[0] = 0x00;
	want[1] = 0x3C;
	for (int j = 0; j < 32; j++)
		want[2 + j] = (uint8_t)(int8_t)x[j];
	tap_ok(!memcmp(got, want, 34), "golden: q8_0 block bytes");

	/* Q4_0: max by |x| is x[0] = -8 -> d = -8/-8 = 1.0,
	 * q = (int8)(x + 8.5) = j % 16; byte j = q[j] | q[j+16] << 4. */
	for (int j = 0; j < 32; j++)
		x[j] = (j % 16) - 8;
	mm_quantize_row(MM_TYPE_Q4_0, x, got, 32);
	want[0] = 0x00;
	want[1] = 0x3C;
	for (int j = 0; j < 16; j++)
		want[2 + j] = (uint8_t)(j | (j << 4));
	tap_ok(!memcmp(got, want, 18), "golden: q4_0 block bytes");

	/* Q4_1: min -4, max 11 -> d = 1.0, m = -4 (f16 0xC400), q = x + 4. */
	for (int j = 0; j < 32; j++)
		x[j] = (j % 16) - 4;
	mm_quantize_row(MM_TYPE_Q4_1, x, got, 32);
	uint8_t w41[20] = { 0x00, 0x3C, 0x00, 0xC4 };
	for (int j = 0; j < 16; j++)
		w41[4 + j] = (uint8_t)(j | (j << 4));
	tap_ok(!memcmp(got, w41, 20), "golden: q4_1 block bytes");

	/* Q5_0: max by |x| is x[0] = -16 -> d = 1.0, q = (int8)(x + 16.5) =
	 * j; qs byte j = low 4 bits of q[j] | of q[j+16] << 4, qh bit j = bit
	 * 4 of q[j] (little-endian): elements 16-31 have it. */
	for (int j = 0; j < 32; j++)
		x[j] = j - 16;
	mm_quantize_row(MM_TYPE_Q5_0, x, got, 32);
	uint8_t w50[22] = { 0x00, 0x3C, 0x00, 0x00, 0xFF, 0xFF };
	for (int j = 0; j < 16; j++)
		w50[6 + j] = (uint8_t)(j | (j << 4));
	tap_ok(!memcmp(got, w50, 22), "golden: q5_0 block bytes");
	{
		float back[32];
		int same = 1;

		mm_dequantize_row(MM_TYPE_Q5_0, w50, back, 32);
		for (int j = 0; j < 32; j++)
			same &= back[j] == x[j];
		tap_ok(same, "golden: q5_0 block decodes to -16..15");
	}

	/* Q4_K: hand-built block, d = 1, dmin = 0.5; sub-block j has
	 * scale j+1 and min 2j+40 (6 bits, high bits packed as ggml does);
	 * element l of sub-block j has q = l % 16. */
	struct mm_block_q4_k bk;
	float y[256];
	int good = 1;

	memset(&bk, 0, sizeof(bk));
	bk.d = 0x3C00;
	bk.dmin = 0x3800;
	for (int j = 0; j < 8; j++) {
		int sc = j + 1, m = 2 * j + 40;

		if (j < 4) {
			bk.scales[j] = sc;
			bk.scales[j + 4] = m;
		} else {
			bk.scales[j + 4] = (sc & 0xF) | ((m & 0xF) << 4);
			bk.scales[j - 4] |= (sc >> 4) << 6;
			bk.scales[j] |= (m >> 4) << 6;
		}
	}
	for (int g = 0; g < 4; g++)
		for (int l = 0; l < 32; l++)
			bk.qs[32 * g + l] = (l % 16) | ((l % 16) << 4);
	mm_dequantize_row(MM_TYPE_Q4_K, &bk, y, 256);
	for (int j = 0; j < 8; j++)
		for (int l = 0; l < 32; l++)
			if (y[32 * j + l] != (float)((j + 1) * (l % 16)) - 0.5f * (2 * j + 40))
				good = 0;
	tap_ok(good, "golden: q4_K layout (6-bit scales/mins, nibble order)");

	/* Q6_K: d = 1, scale of sub-block s = s - 8; q6 of element e is
	 * (e * 7) % 64 stored as ggml's ql/qh interleave. */
	struct mm_block_q6_k b6;
	int8_t L[256];

	memset(&b6, 0, sizeof(b6));
	b6.d = 0x3C00;
	for (int s = 0; s < 16; s++)
		b6.scales[s] = s - 8;
	for (int e = 0; e < 256; e++)
		L[e] = (e * 7) % 64;
	for (int h = 0; h < 2; h++) {
		for (int l = 0; l < 32; l++) {
			const int8_t *Lh = L + 128 * h;

			b6.ql[64 * h + l] = (Lh[l] & 15) | ((Lh[l + 64] & 15) << 4);
			b6.ql[64 * h + l + 32] = (Lh[l + 32] & 15) | ((Lh[l + 96] & 15) << 4);
			b6.qh[32 * h + l] = (Lh[l] >> 4) | ((Lh[l + 32] >> 4) << 2) |
					    ((Lh[l + 64] >> 4) << 4) | ((Lh[l + 96] >> 4) << 6);
		}
	}
	mm_dequantize_row(MM_TYPE_Q6_K, &b6, y, 256);
	good = 1;
	for (int e = 0; e < 256; e++)
		if (y[e] != (float)((e / 16 - 8) * (L[e] - 32)))
			good = 0;
	tap_ok(good, "golden: q6_K layout (ql/qh interleave, 16 scales)");

	/* Q6_K and Q4_K quantizers reproduce exactly representable data. */
	float xs[256], z[256];
	uint8_t buf[210];

	for (int e = 0; e < 256; e++)
		xs[e] = (float)((e / 16 - 8) * (L[e] - 32));
	mm_quantize_row(MM_TYPE_Q6_K, xs, buf, 256);
	mm_dequantize_row(MM_TYPE_Q6_K, buf, z, 256);
	float err = 0, mx = 0;
	for (int e = 0; e < 256; e++) {
		err = fmaxf(err, fabsf(z[e] - xs[e]));
		mx = fmaxf(mx, fabsf(xs[e]));
	}
	tap_ok(err <= mx * 0.02f, "q6_K quantizer on near-representable data (max err %g of %g)", err, mx);
}

/* ---- quantize -> dequantize error ------------------------------------ */

static void test_roundtrip(void)
{
	static const struct { enum mm_type t; float rel; } tab[] = {
		{ MM_TYPE_F32, 0 }, { MM_TYPE_F16, 5e-4f },
		{ MM_TYPE_BF16, 4e-3f }, { MM_TYPE_Q8_0, 6e-3f },
		{ MM_TYPE_Q4_0, 0.12f }, { MM_TYPE_Q4_1, 0.09f },
		{ MM_TYPE_Q5_0, 0.06f },
		{ MM_TYPE_Q4_K, 0.09f }, { MM_TYPE_Q6_K, 0.025f },
		{ MM_TYPE_Q8_K, 6e-3f },
	};
	const int64_t n = 4096;
	float *x = malloc(n * 4), *y = malloc(n * 4);
	void *q = malloc(n * 4);

	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++) {
		double se = 0, sx = 0;

		fill(x, n);
		/* vary the scale per block and add a zero block */
		for (int64_t e = 0; e < n; e++)
			x[e] *= (e >= 256 && e < 512) ? 0 : 1 + (e / 256) % 7;
		mm_quantize_row(tab[i].t, x, q, n);
		mm_dequantize_row(tab[i].t, q, y, n);
		for (int64_t e = 0; e < n; e++) {
			se += (double)(y[e] - x[e]) * (y[e] - x[e]);
			sx += (double)x[e] * x[e];
		}
		int zero_ok = 1;
		for (int64_t e = 256; e < 512; e++)
			if (y[e] != 0)
				zero_ok = 0;
		double rel = sqrt(se / sx);

		tap_ok(rel <= tab[i].rel && zero_ok,
		   "%s quantize/dequantize: relative rms error %.2e <= %.1e, zeros kept",
		   mm_type_name(tab[i].t), rel, tab[i].rel);
	}
	free(x);
	free(y);
	free(q);
}

/* ---- kernels ---------------------------------------------------------- */

struct shape { int64_t m, k, n; };

/*
 * ext = 0: random W and X. ext = +-1: the range limits, where integer
 * sums are largest: every block of W is -1 then +1s (the 4-bit types
 * store 0 then 15, the 8-bit ones -127 then 127), X is all ext (127 or
 * -127 after quantization).
 */
static void fill_ext(float *x, int64_t n, int ext, int w)
{
	if (!ext) {
		fill(x, n);
		return;
	}
	for (int64_t i = 0; i < n; i++)
		x[i] = w ? (i % 32 ? 1.0f : -1.0f) : (float)ext;
}

static int check_kernels(const char *kset, enum mm_type t, int matmul,
			 int nthreads, struct mm_ctx *ref, const struct shape *s,
			 int ext, double *worst)
{
	struct mm_ctx *ctx;
	int64_t m = s->m, k = s->k, n = matmul ? s->n : 1;
	size_t rb = mm_row_bytes(t, k);
	uint8_t *W = malloc(rb * m);
	float *Wd = malloc(sizeof(float) * m * k);
	float *X = malloc(sizeof(float) * n * k);
	float *Y = malloc(sizeof(float) * n * m);
	float *R = malloc(sizeof(float) * n * m);
	float *tmp = malloc(sizeof(float) * k);
	int good = 1;

	if (mm_ctx_create_with(nthreads, kset, &ctx)) {
		printf("# cannot create ctx %s\n", kset);
		return 0;
	}
	for (int64_t i = 0; i < m; i++) {
		fill_ext(tmp, k, ext, 1);
		mm_quantize_row(t, tmp, W + i * rb, k);
		mm_dequantize_row(t, W + i * rb, Wd + i * k, k);
	}
	fill_ext(X, n * k, ext, 0);
	for (int64_t i = 0; i < n * m; i++)
		Y[i] = NAN;
	if (matmul) {
		mm_matmul(ctx, t, W, X, Y, m, k, n);
		mm_matmul(ref, t, W, X, R, m, k, n);
	} else {
		mm_matvec(ctx, t, W, X, Y, m, k);
		mm_matvec(ref, t, W, X, R, m, k);
	}
	for (int64_t j = 0; j < n; j++) {
		for (int64_t i = 0; i < m; i++) {
			double S = 0, Sw = 0, f = 0, xmax = 0;

			for (int64_t l = 0; l < k; l++) {
				S += fabs(Wd[i * k + l] * X[j * k + l]);
				Sw += fabs(Wd[i * k + l]);
				f += (double)Wd[i * k + l] * X[j * k + l];
				xmax = fmax(xmax, fabs(X[j * k + l]));
			}
			double y = Y[j * m + i], r = R[j * m + i];
			double d = fabs(y - r), tol = 2e-5 * S + 1e-6;
			int isf = t == MM_TYPE_F32 || t == MM_TYPE_F16 || t == MM_TYPE_BF16;
			double tol2 = isf ? 1e-5 * S + 1e-6 : Sw * xmax / 100;

			/* at the limits the 4-bit types clamp 1 to 7/8: no f32 bound */
			if (!(d <= tol) || (!ext && !(fabs(r - f) <= tol2))) {
				if (good)
					printf("# %s %s m=%lld k=%lld n=%lld thr=%d: [%lld,%lld] y=%g ref=%g f32=%g\n",
					       kset, mm_type_name(t), (long long)m, (long long)k,
					       (long long)n, nthreads, (long long)j, (long long)i, y, r, f);
				good = 0;
			}
			if (S > 0 && d / S > *worst)
				*worst = d / S;
		}
	}
	mm_ctx_destroy(ctx);
	free(W);
	free(Wd);
	free(X);
	free(Y);
	free(R);
	free(tmp);
	return good;
}

static void test_kernels(void)
{
	static const char *const sets[] = { "scalar", "avx2", "avx512vnni", "neon",
					    "neon-i8mm" };
	struct mm_ctx *ref;

	if (mm_ctx_create_with(1, "scalar", &ref)) {
		tap_ok(0, "scalar reference ctx");
		return;
	}
	for (size_t s = 0; s < sizeof(sets) / sizeof(sets[0]); s++) {
		if (!mm_kernels_available(sets[s])) {
			tap_skip("%s kernels: not on this CPU", sets[s]);
			continue;
		}
		for (size_t ti = 0; ti < NTYPES; ti++) {
			enum mm_type t = all_types[ti];
			int64_t be = mm_type_block_elems(t) == 256 ? 256 : 32;
			const struct shape shapes[] = {
				{ 1, be, 2 }, { 5, be, 3 }, { 13, 3 * be, 7 },
				{ 37, 8 * be, 5 }, { 9, 5 * be, 65 },
				{ 19, 3 * be, 150 },	/* > one packed X chunk */
				{ 70, (be == 256 ? 4 : 40) * be, 4 },
			};

			/* float rows have no blocks: k past the SIMD steps */
			const struct shape odd_k[] = { { 7, 37, 3 }, { 5, 45, 2 }, { 3, 3, 2 } };
			const int isf = mm_type_block_elems(t) == 1;

			for (int mm = 0; mm < 2; mm++) {
				int good = 1;
				double worst = 0;

				for (size_t si = 0; si < sizeof(shapes) / sizeof(shapes[0]); si++)
					for (int thr = 1; thr <= 3; thr++)
						good &= check_kernels(sets[s], t, mm, thr, ref,
								      &shapes[si], 0, &worst);
				for (size_t si = 0; isf && si < sizeof(odd_k) / sizeof(odd_k[0]); si++)
					good &= check_kernels(sets[s], t, mm, 2, ref, &odd_k[si], 0,
							      &worst);
				tap_ok(good, "%s %s %s vs scalar, odd shapes%s, 1-3 threads (worst |d|/S %.1e)",
				   sets[s], mm_type_name(t), mm ? "matmul" : "matvec",
				   isf ? " (k = 3, 37, 45 too)" : "", worst);
			}
			if (t == MM_TYPE_F32 || t == MM_TYPE_F16 || t == MM_TYPE_BF16)
				continue;
			{
				/* 8-row groups and a tail, matvec and matmul */
				const struct shape lim = { 29, 8 * be, 5 };
				int good = 1;
				double worst = 0;

				for (int mm = 0; mm < 2; mm++)
					for (int ext = -1; ext <= 1; ext += 2)
						good &= check_kernels(sets[s], t, mm, 2, ref,
								      &lim, ext, &worst);
				tap_ok(good, "%s %s at the range limits (|q| max, x = +-127) vs scalar (worst |d|/S %.1e)",
				   sets[s], mm_type_name(t), worst);
			}
		}
	}
	mm_ctx_destroy(ref);
}

/* mm_matvec_n: mixed types sharing x give the bits of separate calls. */
static void test_matvec_n(void)
{
	static const enum mm_type sets[][MM_MV_MAX] = {
		{ MM_TYPE_Q8_0, MM_TYPE_Q4_0, MM_TYPE_Q4_K, MM_TYPE_F16 },
		{ MM_TYPE_Q4_0, MM_TYPE_Q6_K, MM_TYPE_Q4_K, MM_TYPE_Q8_0 },
		{ MM_TYPE_Q4_1, MM_TYPE_BF16, MM_TYPE_F32, MM_TYPE_Q4_0 },
		{ MM_TYPE_Q5_0, MM_TYPE_Q4_0, MM_TYPE_Q6_K, MM_TYPE_Q8_0 },
	};
	static const int64_t ms[MM_MV_MAX] = { 70, 19, 0, 13 };
	const int64_t k = 512;
	float *x = malloc(sizeof(float) * k), *tmp = malloc(sizeof(float) * k);
	int good = 1;

	fill(x, k);
	for (size_t si = 0; si < sizeof(sets) / sizeof(sets[0]); si++) {
		struct mm_mv mv[MM_MV_MAX];
		uint8_t *w[MM_MV_MAX];
		float *y[MM_MV_MAX], *r[MM_MV_MAX];

		for (int i = 0; i < MM_MV_MAX; i++) {
			size_t rb = mm_row_bytes(sets[si][i], k);

			w[i] = malloc(rb * (size_t)(ms[i] + 1));
			y[i] = malloc(sizeof(float) * (size_t)(ms[i] + 1));
			r[i] = malloc(sizeof(float) * (size_t)(ms[i] + 1));
			for (int64_t row = 0; row < ms[i]; row++) {
				fill(tmp, k);
				mm_quantize_row(sets[si][i], tmp, w[i] + row * rb, k);
			}
			mv[i] = (struct mm_mv){ .t = sets[si][i], .W = w[i],
						.y = y[i], .m = ms[i] };
		}
		for (int thr = 1; thr <= 3; thr++) {
			struct mm_ctx *ctx;

			if (mm_ctx_create(thr, &ctx)) {
				good = 0;
				continue;
			}
			for (int n = 1; n <= MM_MV_MAX; n++) {
				for (int i = 0; i < n; i++) {
					for (int64_t row = 0; row < ms[i]; row++)
						y[i][row] = NAN;
					mm_matvec(ctx, sets[si][i], w[i], x, r[i],
						  ms[i], k);
				}
				mm_matvec_n(ctx, mv, n, x, k);
				for (int i = 0; i < n; i++)
					if (ms[i] && memcmp(y[i], r[i],
							    sizeof(float) * ms[i])) {
						if (good)
							printf("# matvec_n set %zu n=%d thr=%d: matrix %d (%s) differs\n",
							       si, n, thr, i,
							       mm_type_name(sets[si][i]));
						good = 0;
					}
			}
			mm_ctx_destroy(ctx);
		}
		for (int i = 0; i < MM_MV_MAX; i++) {
			free(w[i]);
			free(y[i]);
			free(r[i]);
		}
	}
	tap_ok(good, "matvec_n: 1-4 matrices of mixed types (one empty) = separate matvecs, bitwise, 1-3 threads");
	free(x);
	free(tmp);
}

/* ---- pool, env -------------------------------------------------------- */

static void pfor_fn(int64_t b, int64_t e, void *arg)
{
	int *hits = arg;

	for (int64_t i = b; i < e; i++)
		__atomic_fetch_add(&hits[i], 1, __ATOMIC_RELAXED);
}

static void test_pool(void)
{
	int good = 1;

	for (int thr = 1; thr <= 3; thr++) {
		struct mm_ctx *ctx;

		if (mm_ctx_create_with(thr, "scalar", &ctx)) {
			good = 0;
			continue;
		}
		good &= mm_ctx_threads(ctx) == thr;
		for (int64_t n = 0; n <= 100; n += (n < 5 ? 1 : 19)) {
			for (int rep = 0; rep < 50; rep++) {
				int hits[101] = { 0 };

				mm_parallel_for(ctx, n, pfor_fn, hits);
				for (int64_t i = 0; i < 101; i++)
					if (hits[i] != (i < n))
						good = 0;
			}
		}
		mm_ctx_destroy(ctx);
	}
	tap_ok(good, "thread pool: parallel_for covers [0,n) once, 1-3 threads, repeated");
}

static void test_env(void)
{
	struct mm_ctx *ctx = NULL;
	int good = 1, err;

	setenv("MMHAL_KERNELS", "scalar", 1);
	err = mm_ctx_create(2, &ctx);
	good &= !err && !strcmp(mm_ctx_kernels(ctx), "scalar");
	mm_ctx_destroy(ctx);
	setenv("MMHAL_KERNELS", "nonsense", 1);
	good &= mm_ctx_create(2, &ctx) == -ENOTSUP;
	unsetenv("MMHAL_KERNELS");
	ctx = NULL;
	err = mm_ctx_create(0, &ctx);
	good &= !err && mm_ctx_threads(ctx) >= 1;
	if (!err)
		printf("# default kernels: %s, %d threads\n", mm_ctx_kernels(ctx),
		       mm_ctx_threads(ctx));
	mm_ctx_destroy(ctx);
	tap_ok(good, "MMHAL_KERNELS forces a set, rejects unknown; default = online CPUs");
}

/* Q8_0 quantization (SIMD where the CPU has it) against a plain roundf
 * version written here, bit for bit, with exact .5 ties and zero blocks,
 * for rows of 1-64 blocks (the SIMD code takes 8 blocks at a time); and
 * the activation rows of Q4_0 weights: the same blocks, then 8 * sum(qs)
 * per block. */
static void test_q8_0_bits(void)
{
	const int n = 32 * 64;
	const int lens[] = { 64, 1, 7, 9, 13, 17, 23 };
	float *x = malloc(sizeof(float) * n);
	struct mm_block_q8_0 *y = malloc(sizeof(*y) * (n / 32));
	uint8_t *a = malloc(mm_act_row_bytes(MM_TYPE_Q4_0, n));
	int bad = -1, bad_act = -1;

	fill(x, n);
	for (int b = 0; b < 8; b++)	/* ties: amax 127 -> id 1, k + 0.5 */
		for (int j = 0; j < 32; j++)
			x[b * 32 + j] = j == 0 ? 127.0f : frand_tie();
	for (int j = 0; j < 32; j++)
		x[8 * 32 + j] = 0;
	for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
		const int nb = lens[l];
		/* a row starting at block 64 - nb: ties, zeros or random */
		const float *xr = x + (64 - nb) * 32 * (l % 2);
		const struct mm_block_q8_0 *ab = (const void *)a;
		const float *as = (const float *)(a + mm_act_row_bytes(MM_TYPE_Q4_0, nb * 32) -
						  sizeof(float) * nb);

		mm_quantize_row(MM_TYPE_Q8_0, xr, y, nb * 32);
		mm_quantize_act(MM_TYPE_Q4_0, xr, a, nb * 32);
		for (int b = 0; b < nb && bad < 0; b++) {
			float amax = 0;
			int sum = 0;

			for (int j = 0; j < 32; j++)
				amax = fmaxf(amax, fabsf(xr[b * 32 + j]));
			const float d = amax / 127.0f, id = d ? 1.0f / d : 0.0f;

			if (y[b].d != mm_f32_to_f16(d))
				bad = b;
			for (int j = 0; j < 32; j++) {
				if (y[b].qs[j] != (int8_t)roundf(xr[b * 32 + j] * id))
					bad = b;
				sum += y[b].qs[j];
			}
			if (memcmp(&ab[b], &y[b], sizeof(y[b])) || as[b] != 8.0f * (float)sum)
				bad_act = b;
		}
	}
	tap_ok(bad < 0, "q8_0 quantize (kernel) == roundf reference bit for bit, ties and zeros, 1-64 blocks (first bad block %d)",
	   bad);
	tap_ok(bad_act < 0, "q8_0 activation rows for q4_0: the same blocks, then 8 * sum(qs) (first bad block %d)",
	   bad_act);
	free(x);
	free(y);
	free(a);
}

/* mm_matmul_n(): 1-4 matrices of one type (one empty, row counts across
 * and below the 64-row panels, W apart in memory) = separate mm_matmul()
 * calls bit for bit, at n = 2, 37 and 100, 1-3 threads; and each output
 * row equals the matvec of that X row within the kernel tolerance. */
static void test_matmul_n(void)
{
	static const enum mm_type types[] = { MM_TYPE_Q8_0, MM_TYPE_Q4_0,
					      MM_TYPE_Q4_K, MM_TYPE_Q6_K };
	static const int64_t ms[MM_MV_MAX] = { 130, 64, 0, 13 };
	static const int64_t ns[] = { 2, 37, 100 };
	const int64_t k = 512, nmax = 100;
	float *x = malloc(sizeof(float) * k * nmax), *tmp = malloc(sizeof(float) * k);
	float *v = malloc(sizeof(float) * 130);
	int good = 1, close = 1;

	fill(x, k * nmax);
	for (size_t ti = 0; ti < sizeof(types) / sizeof(types[0]); ti++) {
		const enum mm_type t = types[ti];
		const size_t rb = mm_row_bytes(t, k);
		struct mm_mv mv[MM_MV_MAX];
		uint8_t *w[MM_MV_MAX];
		float *y[MM_MV_MAX], *r[MM_MV_MAX];

		for (int i = 0; i < MM_MV_MAX; i++) {
			w[i] = malloc(rb * (size_t)(ms[i] + 1));
			y[i] = malloc(sizeof(float) * (size_t)(ms[i] * nmax + 1));
			r[i] = malloc(sizeof(float) * (size_t)(ms[i] * nmax + 1));
			for (int64_t row = 0; row < ms[i]; row++) {
				fill(tmp, k);
				mm_quantize_row(t, tmp, w[i] + row * rb, k);
			}
			mv[i] = (struct mm_mv){ .t = t, .W = w[i], .y = y[i],
						.m = ms[i] };
		}
		for (int thr = 1; thr <= 3; thr++) {
			struct mm_ctx *ctx;

			if (mm_ctx_create(thr, &ctx)) {
				good = 0;
				continue;
			}
			for (size_t ni = 0; ni < sizeof(ns) / sizeof(ns[0]); ni++) {
				const int64_t n = ns[ni];

				for (int nmv = 1; nmv <= MM_MV_MAX; nmv++) {
					for (int i = 0; i < nmv; i++) {
						for (int64_t e = 0; e < ms[i] * n; e++)
							y[i][e] = NAN;
						mm_matmul(ctx, t, w[i], x, r[i], ms[i], k, n);
					}
					mm_matmul_n(ctx, mv, nmv, x, k, n);
					for (int i = 0; i < nmv; i++)
						if (ms[i] && memcmp(y[i], r[i], sizeof(float) *
								    (size_t)(ms[i] * n))) {
							if (good)
								printf("# matmul_n %s n=%lld nmv=%d thr=%d: matrix %d differs\n",
								       mm_type_name(t), (long long)n,
								       nmv, thr, i);
							good = 0;
						}
				}
				/* last X row of matrix 0 against the matvec */
				mm_matvec(ctx, t, w[0], x + (n - 1) * k, v, ms[0], k);
				for (int64_t row = 0; row < ms[0]; row++)
					if (fabsf(v[row] - y[0][(n - 1) * ms[0] + row]) >
					    1e-3f * (1 + fabsf(v[row])))
						close = 0;
			}
			mm_ctx_destroy(ctx);
		}
		for (int i = 0; i < MM_MV_MAX; i++) {
			free(w[i]);
			free(y[i]);
			free(r[i]);
		}
	}
	tap_ok(good && close, "matmul_n: 1-4 matrices (one empty, 13-130 rows) = separate matmuls bitwise (%s), rows = matvec (%s), n = 2/37/100, 1-3 threads",
	   good ? "yes" : "no", close ? "yes" : "no");
	free(x);
	free(tmp);
	free(v);
}

/*
 * to (Q4_0_R8, Q5_0_R8, Q8_0_R8, Q4_K_R8), the load-time layout of from
 * (Q4_0, Q5_0, Q8_0, Q4_K): on each kernel set that has it, a repacked matrix gives
 * the bits of the rows it came from, in matvec, matmul, matvec_n (mixed
 * with another type on one x: Q8_0, for Q8_0 Q4_0) and matmul_n, for row
 * counts with and without a tail past the last group of 8, 1-3 threads;
 * mm_layout_row() reads each row back as mm_dequantize_row() reads the
 * stored one; the tail rows are left as they were; sets without it (vnni: 0, the
 * avx512vnni set lacks the layout), short matrices and other types are
 * not repacked; bad pairs are refused.
 */
static void test_repack(enum mm_type from, enum mm_type to, int vnni)
{
	static const char *const sets[] = { "avx2", "avx512vnni" };
	/* the mixed-in matrix's type (11 rows, as stored) */
	const enum mm_type ot = from == MM_TYPE_Q8_0 ? MM_TYPE_Q4_0 : MM_TYPE_Q8_0;
	static const int64_t ms[] = { 8, 13, 29, 64, 70, 136 };
	static const int64_t ks_32[] = { 32, 96, 576 }, ks_256[] = { 256, 768 };
	const int kq = from == MM_TYPE_Q4_K;	/* k in 256-element blocks */
	const int64_t *ks = kq ? ks_256 : ks_32;
	const size_t nks = kq ? 2 : 3;
	const int64_t nmax = 70;
	struct mm_ctx *sc;
	int refused = 1;

	if (mm_ctx_create_with(1, "scalar", &sc)) {
		tap_ok(0, "scalar ctx");
		return;
	}
	refused &= mm_repack_type(sc, from, 64, 64) == from;
	refused &= mm_repack(MM_TYPE_Q4_1, to, NULL, 8, 32) == -EINVAL;
	refused &= mm_repack(from, to, NULL, 8, 48) == -EINVAL;
	refused &= mm_repack(from, from, NULL, 8, 48) == 0;
	refused &= mm_repack(MM_TYPE_Q4_0, MM_TYPE_Q5_0_R8, NULL, 8, 32) == -EINVAL;
	refused &= mm_repack(MM_TYPE_Q5_0, MM_TYPE_Q4_0_R8, NULL, 8, 32) == -EINVAL;
	refused &= mm_repack(MM_TYPE_Q8_0, MM_TYPE_Q4_0_R8, NULL, 8, 32) == -EINVAL;
	refused &= mm_repack(MM_TYPE_Q4_0, MM_TYPE_Q8_0_R8, NULL, 8, 32) == -EINVAL;
	refused &= mm_repack(MM_TYPE_Q4_K, MM_TYPE_Q4_0_R8, NULL, 8, 256) == -EINVAL;
	refused &= mm_repack(MM_TYPE_Q4_0, MM_TYPE_Q4_K_R8, NULL, 8, 256) == -EINVAL;
	refused &= mm_repack(MM_TYPE_Q4_K, MM_TYPE_Q4_K_R8, NULL, 8, 128) == -EINVAL;
	refused &= !mm_type_valid(to);
	mm_ctx_destroy(sc);
	for (size_t s = 0; s < sizeof(sets) / sizeof(sets[0]); s++) {
		int good = refused, tail = 1, rows = 1;

		if (!mm_kernels_available(sets[s])) {
			tap_skip("%s kernels: not on this CPU", sets[s]);
			continue;
		}
		if (s == 1 && !vnni) {
			struct mm_ctx *ctx;

			good &= !mm_ctx_create_with(1, sets[s], &ctx);
			if (good) {
				good &= mm_repack_type(ctx, from, 64, 64) == from;
				mm_ctx_destroy(ctx);
			}
			tap_ok(good, "%s has no %s layout: %s matrices stay as stored",
			   sets[s], mm_type_name(to), mm_type_name(from));
			continue;
		}
		for (int thr = 1; thr <= 3; thr++) {
			struct mm_ctx *ctx;

			if (mm_ctx_create_with(thr, sets[s], &ctx)) {
				good = 0;
				continue;
			}
			good &= mm_repack_type(ctx, from, 7, 32) == from;
			good &= mm_repack_type(ctx, MM_TYPE_Q4_1, 64, 32) == MM_TYPE_Q4_1;
			good &= mm_repack_type(ctx, MM_TYPE_Q6_K, 64, 256) == MM_TYPE_Q6_K;
			good &= mm_repack_type(ctx, MM_TYPE_Q4_K, 64, 96) == MM_TYPE_Q4_K;
			for (size_t ki = 0; ki < nks; ki++) {
				const int64_t k = ks[ki];
				const size_t rb = mm_row_bytes(from, k);
				const size_t rq = mm_row_bytes(ot, k);
				uint8_t *w[2], *r8[2], *q8 = malloc(rq * 11);
				float *x = malloc(sizeof(float) * k * nmax);
				float *tmp = malloc(sizeof(float) * k);
				float *y[3], *z[3];

				fill(x, k * nmax);
				for (int64_t row = 0; row < 11; row++) {
					fill(tmp, k);
					mm_quantize_row(ot, tmp, q8 + row * rq, k);
				}
				for (int i = 0; i < 3; i++) {
					y[i] = malloc(sizeof(float) * 136 * nmax);
					z[i] = malloc(sizeof(float) * 136 * nmax);
				}
				for (size_t mi = 0; mi < sizeof(ms) / sizeof(ms[0]); mi++) {
					const int64_t m = ms[mi], m2 = ms[(mi + 2) % 6];
					const int64_t mm[2] = { m, m2 };
					struct mm_mv a[3], b[3];

					for (int i = 0; i < 2; i++) {
						w[i] = malloc(rb * mm[i]);
						r8[i] = malloc(rb * mm[i]);
						for (int64_t row = 0; row < mm[i]; row++) {
							fill(tmp, k);
							mm_quantize_row(from, tmp, w[i] + row * rb, k);
						}
						memcpy(r8[i], w[i], rb * mm[i]);
						good &= mm_repack_type(ctx, from, mm[i], k) == to;
						good &= !mm_repack(from, to, r8[i], mm[i], k);
						tail &= !memcmp(r8[i] + mm[i] / 8 * 8 * rb,
								w[i] + mm[i] / 8 * 8 * rb,
								mm[i] % 8 * rb);
					}
					/* every row read back, as stored and
					 * rearranged */
					for (int64_t row = 0; row < m; row++) {
						mm_dequantize_row(from, w[0] + row * rb, y[1], k);
						mm_layout_row(to, r8[0], m, k, row, z[1]);
						rows &= !memcmp(y[1], z[1], sizeof(float) * k);
						mm_layout_row(from, w[0], m, k, row, z[1]);
						rows &= !memcmp(y[1], z[1], sizeof(float) * k);
					}
					/* matvec and matmul of one matrix */
					mm_matvec(ctx, from, w[0], x, y[0], m, k);
					mm_matvec(ctx, to, r8[0], x, z[0], m, k);
					good &= !memcmp(y[0], z[0], sizeof(float) * m);
					for (int64_t n = 5; n <= nmax; n += nmax - 5) {
						mm_matmul(ctx, from, w[0], x, y[0], m, k, n);
						mm_matmul(ctx, to, r8[0], x, z[0], m, k, n);
						good &= !memcmp(y[0], z[0], sizeof(float) * m * n);
					}
					/* matvec_n: R8, ot, R8 / from, ot, from */
					a[0] = (struct mm_mv){ from, w[0], y[0], m };
					a[1] = (struct mm_mv){ ot, q8, y[1], 11 };
					a[2] = (struct mm_mv){ from, w[1], y[2], m2 };
					b[0] = (struct mm_mv){ to, r8[0], z[0], m };
					b[1] = (struct mm_mv){ ot, q8, z[1], 11 };
					b[2] = (struct mm_mv){ to, r8[1], z[2], m2 };
					mm_matvec_n(ctx, a, 3, x, k);
					mm_matvec_n(ctx, b, 3, x, k);
					for (int i = 0; i < 3; i++)
						good &= !memcmp(y[i], z[i], sizeof(float) * a[i].m);
					/* matmul_n of two R8 matrices */
					a[1] = a[2];
					b[1] = b[2];
					mm_matmul_n(ctx, a, 2, x, k, 37);
					mm_matmul_n(ctx, b, 2, x, k, 37);
					for (int i = 0; i < 2; i++)
						good &= !memcmp(y[i == 0 ? 0 : 2], z[i == 0 ? 0 : 2],
								sizeof(float) * a[i].m * 37);
					for (int i = 0; i < 2; i++) {
						free(w[i]);
						free(r8[i]);
					}
				}
				if (!good)
					printf("# %s thr=%d k=%lld: repacked result differs\n",
					       sets[s], thr, (long long)k);
				for (int i = 0; i < 3; i++) {
					free(y[i]);
					free(z[i]);
				}
				free(q8);
				free(x);
				free(tmp);
			}
			mm_ctx_destroy(ctx);
		}
		tap_ok(good && tail && rows, "%s %s = %s bitwise in matvec/matmul/matvec_n/matmul_n (%s), rows read back by mm_layout_row (%s), 8-136 rows, tail rows kept (%s), 1-3 threads; scalar, short and other types not repacked",
		   sets[s], mm_type_name(to), mm_type_name(from), good ? "yes" : "no",
		   rows ? "yes" : "no", tail ? "yes" : "no");
	}
}

/* ggml's Q8_K, written plainly here: d = max / -127 with max the first
 * element of the largest magnitude, q = nearest_int(x * -127 / max)
 * (round half to even by the 1.5 * 2^23 addition), at most 127, stored as
 * its low byte; 16-element sums of q. */
static void ref_q8_k(const float *x, struct mm_block_q8_k *y)
{
	float max = 0, amax = 0;

	memset(y, 0, sizeof(*y));
	for (int j = 0; j < MM_QK_K; j++)
		if (fabsf(x[j]) > amax) {
			amax = fabsf(x[j]);
			max = x[j];
		}
	if (amax == 0)
		return;
	const float iscale = -127.f / max;

	for (int j = 0; j < MM_QK_K; j++) {
		const float r = iscale * x[j] + 12582912.f;
		uint32_t u;
		int v;

		memcpy(&u, &r, 4);
		v = (int)(u & 0x007fffff) - 0x00400000;
		y->qs[j] = (int8_t)(uint8_t)(v < 127 ? v : 127);
		y->bsums[j / 16] += y->qs[j];
	}
	y->d = 1 / iscale;
}

/* Q8_K quantization (SIMD where the CPU has it) against ref_q8_k() bit
 * for bit: random blocks, exact ties, a zero block, equal magnitudes of
 * both signs (the first wins), NaN and inf elements, tiny values. */
static void test_q8_k_bits(void)
{
	enum { NB = 12 };
	float *x = malloc(sizeof(float) * MM_QK_K * NB);
	struct mm_block_q8_k *y = malloc(sizeof(*y) * NB), r;
	int bad = -1;

	fill(x, MM_QK_K * NB);
	for (int j = 0; j < MM_QK_K; j++) {	/* ties: iscale -1 */
		x[MM_QK_K + j] = j == 0 ? 127.0f : frand_tie();
		x[2 * MM_QK_K + j] = 0;
		x[3 * MM_QK_K + j] *= 2.9f;	/* |x| < 3 */
		x[6 * MM_QK_K + j] *= 1e-39f;	/* subnormal: iscale inf */
	}
	x[3 * MM_QK_K + 5] = -3.0f;
	x[3 * MM_QK_K + 200] = 3.0f;
	x[4 * MM_QK_K + 7] = NAN;
	x[4 * MM_QK_K + 100] = -NAN;
	{	/* a payload: nearest_int gives 0x1234, clamped to 127 */
		const uint32_t u = 0x7fc01234;

		memcpy(&x[4 * MM_QK_K + 9], &u, 4);
	}
	x[5 * MM_QK_K + 50] = INFINITY;
	for (int j = 0; j < MM_QK_K; j++)	/* scales from 1e-6 to 1e6 */
		for (int b = 7; b < NB; b++)
			x[b * MM_QK_K + j] *= powf(10.0f, (float)(3 * b - 27));
	mm_quantize_row(MM_TYPE_Q8_K, x, y, MM_QK_K * NB);
	for (int b = 0; b < NB && bad < 0; b++) {
		ref_q8_k(x + b * MM_QK_K, &r);
		if (memcmp(&r, &y[b], sizeof(r)))
			bad = b;
	}
	tap_ok(bad < 0, "q8_K quantize (kernel) == ggml's definition bit for bit, ties, zeros, equal magnitudes, NaN/inf, tiny (first bad block %d)",
	   bad);
	free(x);
	free(y);
}

/* F16 rows (F16C where the CPU has it) against mm_f32_to_f16() bit for
 * bit: a sweep of all f32 bit patterns (stride 4099), every f16 value and
 * the ties half-way between neighbours, both signs; NaN stays NaN. */
static void test_f16_row_bits(void)
{
	const int64_t n = (1 << 20) + 3 * 0x7C00 + 5;	/* odd: scalar tail */
	float *x = malloc(sizeof(float) * n);
	uint16_t *y = malloc(sizeof(uint16_t) * n);
	int64_t i = 0, bad = -1;

	for (uint64_t u = 0; u < (1ull << 32) && i < (1 << 20); u += 4099, i++) {
		const uint32_t v = (uint32_t)u;

		memcpy(&x[i], &v, 4);
	}
	for (uint32_t h = 0; h < 0x7C00; h++) {
		const float a = mm_f16_to_f32((uint16_t)h);
		const float b = mm_f16_to_f32((uint16_t)(h + 1));

		x[i++] = a;
		x[i++] = -(a + (b - a) / 2);	/* the tie, negative */
		x[i++] = (a + b) / 2;
	}
	while (i < n)
		x[i++] = 65520.0f;	/* rounds to inf */
	mm_quantize_row(MM_TYPE_F16, x, y, n);
	for (i = 0; i < n && bad < 0; i++) {
		const uint16_t want = mm_f32_to_f16(x[i]);

		if (x[i] != x[i] ? (y[i] & 0x7C00) != 0x7C00 || !(y[i] & 0x3FF) :
		    y[i] != want)
			bad = i;
	}
	tap_ok(bad < 0, "f16 rows (kernel) == mm_f32_to_f16 bit for bit, sweep, ties, subnormals, overflow (first bad %lld)",
	   (long long)bad);
	free(x);
	free(y);
}

int main(void)
{
	test_type_table();
	test_f16_bf16();
	test_golden();
	test_roundtrip();
	test_q8_0_bits();
	test_f16_row_bits();
	test_q8_k_bits();
	test_pool();
	test_env();
	test_kernels();
	test_matvec_n();
	test_matmul_n();
	test_repack(MM_TYPE_Q4_0, MM_TYPE_Q4_0_R8, 1);
	test_repack(MM_TYPE_Q5_0, MM_TYPE_Q5_0_R8, 1);
	test_repack(MM_TYPE_Q8_0, MM_TYPE_Q8_0_R8, 0);
	test_repack(MM_TYPE_Q4_K, MM_TYPE_Q4_K_R8, 1);
	return tap_done("quant");
}

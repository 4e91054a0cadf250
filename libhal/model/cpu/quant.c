// SPDX-License-Identifier: MIT
/*
 * quant.c - tensor types (ggml layouts), f16/bf16 conversion, the
 * reference quantize/dequantize of every type and the activations'
 * quantization.
 *
 * The quantizers follow ggml's quantize_row_*_ref (ggml-quants.c) step by
 * step, including the scale searches of Q4_K (make_qkx2_quants) and Q6_K
 * (make_qx_quants), so files we write match llama.cpp's bit layout and
 * nearly its rounding.
 */
#include "gguf.h"
#include "quant.h"
#include "quant_kern.h"
#include "threadpool.h"

#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__aarch64__)
#include <sys/auxv.h>
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20)
#endif
#ifndef HWCAP2_I8MM
#define HWCAP2_I8MM (1 << 13)
#endif
#endif

/* ---- f16 / bf16 ------------------------------------------------------ */

static inline uint32_t mm_f2u(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	return u;
}

static inline float mm_u2f(uint32_t u)
{
	float f;

	memcpy(&f, &u, 4);
	return f;
}

float mm_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	uint32_t exp = (h >> 10) & 0x1f;
	uint32_t mant = h & 0x3ff;

	if (exp == 0x1f)	/* inf / nan */
		return mm_u2f(sign | 0x7f800000 | (mant << 13));
	if (exp == 0) {		/* zero / subnormal: mant * 2^-24 */
		float f = (float)mant * (1.0f / 16777216.0f);

		return sign ? -f : f;
	}
	return mm_u2f(sign | ((exp + 112) << 23) | (mant << 13));
}

/* Round to nearest even (F. Giesen's float_to_half_fast3_rtne). */
uint16_t mm_f32_to_f16(float f)
{
	uint32_t x = mm_f2u(f);
	uint32_t sign = (x >> 16) & 0x8000;
	uint32_t ax = x & 0x7fffffff;

	if (ax >= 0x47800000)	/* >= 65536, inf, nan */
		return sign | (ax > 0x7f800000 ? 0x7e00 : 0x7c00);
	if (ax < 0x38800000) {	/* half subnormal or zero */
		float g = mm_u2f(ax) + 0.5f;

		return sign | (uint16_t)(mm_f2u(g) - 0x3f000000);
	}
	ax += 0xc8000fffu + ((ax >> 13) & 1);
	return sign | (uint16_t)(ax >> 13);
}

float mm_bf16_to_f32(uint16_t h)
{
	return mm_u2f((uint32_t)h << 16);
}

uint16_t mm_f32_to_bf16(float f)
{
	uint32_t x = mm_f2u(f);

	if ((x & 0x7fffffff) > 0x7f800000)	/* nan: keep it quiet */
		return (x >> 16) | 64;
	return (x + 0x7fff + ((x >> 16) & 1)) >> 16;
}

/* ---- type table ------------------------------------------------------ */

int mm_type_valid(uint32_t t)
{
	switch (t) {
	case MM_TYPE_F32: case MM_TYPE_F16: case MM_TYPE_BF16:
	case MM_TYPE_Q4_0: case MM_TYPE_Q4_1: case MM_TYPE_Q5_0:
	case MM_TYPE_Q8_0: case MM_TYPE_Q4_K: case MM_TYPE_Q6_K:
		return 1;
	default:
		return 0;
	}
}

/*
 * The names and block sizes of the types ggml defines come from the one
 * table of them, gguf.c's; only the load-time layouts (_r8: rows
 * interleaved by 8, blocks unchanged) are this file's.
 */
static enum mm_type mm_type_stored(enum mm_type t)
{
	switch (t) {
	case MM_TYPE_Q4_0_R8: return MM_TYPE_Q4_0;
	case MM_TYPE_Q5_0_R8: return MM_TYPE_Q5_0;
	case MM_TYPE_Q8_0_R8: return MM_TYPE_Q8_0;
	case MM_TYPE_Q4_K_R8: return MM_TYPE_Q4_K;
	default: return t;
	}
}

const char *mm_type_name(enum mm_type t)
{
	const char *name;

	switch (t) {
	case MM_TYPE_Q4_0_R8: return "q4_0_r8";
	case MM_TYPE_Q5_0_R8: return "q5_0_r8";
	case MM_TYPE_Q8_0_R8: return "q8_0_r8";
	case MM_TYPE_Q4_K_R8: return "q4_k_r8";
	default:
		name = mm_gguf_type_name(t);
		return name ? name : "?";
	}
}

size_t mm_type_block_elems(enum mm_type t)
{
	uint32_t elems;

	return mm_gguf_type_block(mm_type_stored(t), &elems, NULL) ? 0 : elems;
}

size_t mm_type_block_bytes(enum mm_type t)
{
	uint32_t bytes;

	return mm_gguf_type_block(mm_type_stored(t), NULL, &bytes) ? 0 : bytes;
}

size_t mm_row_bytes(enum mm_type t, int64_t n)
{
	size_t be = mm_type_block_elems(t);

	if (!be || n < 0 || n % (int64_t)be)
		return 0;
	return (size_t)(n / (int64_t)be) * mm_type_block_bytes(t);
}

/* ---- reference quantizers -------------------------------------------- */

/* ggml's nearest_int: round half to even via the 1.5*2^23 trick. */
static inline int mm_nearest_int(float fval)
{
	float val = fval + 12582912.f;
	int i;

	memcpy(&i, &val, 4);
	return (i & 0x007fffff) - 0x00400000;
}

#define MM_GROUP_MAX_EPS 1e-15f

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>

/*
 * F16C, read with cpuid: __builtin_cpu_supports() has no "f16c" in
 * clang 14. Its callers check "avx" too (the OS saves the YMM state).
 */
int mm_cpu_f16c(void)
{
	unsigned int a, b, c, d;

	if (!__get_cpuid(1, &a, &b, &c, &d))
		return 0;
	return !!(c & bit_F16C);
}

/* The largest of the 8 lanes of m (the AVX2 quantizers' block maximum) */
__attribute__((target("avx2")))
static inline float mm_hmax8(__m256 m)
{
	__m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m),
			       _mm256_extractf128_ps(m, 1));

	m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
	return _mm_cvtss_f32(_mm_max_ss(m4, _mm_movehdup_ps(m4)));
}

/* 32 s32 values in s8 range (q[0..3]) stored as s8 in element order at
 * dst (packs work per 128-bit lane) */
__attribute__((target("avx2")))
static inline void mm_store_s32_s8(int8_t *dst, const __m256i q[4])
{
	const __m256i w = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]),
					     _mm256_packs_epi32(q[2], q[3]));

	_mm256_storeu_si256((__m256i *)dst, _mm256_permutevar8x32_epi32(
		w, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
}

/* pairwise maxima of a and b: [max(a0,a1), max(a2,a3), max(b0,b1),
 * max(b2,b3)] in each 128-bit lane */
__attribute__((target("avx2")))
static inline __m256 mm_pmax8(__m256 a, __m256 b)
{
	return _mm256_max_ps(_mm256_shuffle_ps(a, b, 0x88), _mm256_shuffle_ps(a, b, 0xdd));
}

/*
 * AVX2 Q8_0 block quantizer, bit-identical to the scalar one (the same
 * amax, d, 1/d and products; roundf's half-away-from-zero done as
 * trunc + (|frac| >= 0.5 ? sign : 0)). Activations are quantized by this
 * on every matvec, before its job starts. Eight blocks at a time: their
 * maxima are reduced into one vector, so d and 1/d are one division each
 * and one conversion to f16 for the 8 (per block, the scalar chain of a
 * horizontal max and two divisions made it ~45 cycles a block). sums
 * (may be NULL) gets 8 * sum(qs) of each block (mm_q4_0_act_sums()).
 */
__attribute__((target("avx2,f16c")))
static void mm_quantize_q8_0_avx2(const float *x, struct mm_block_q8_0 *y,
				  int64_t n, float *sums)
{
	const __m256 sign = _mm256_set1_ps(-0.0f), half = _mm256_set1_ps(0.5f);
	const __m256 one = _mm256_set1_ps(1.0f);
	const int64_t nb = n / MM_QK;

	for (int64_t i0 = 0; i0 < nb; i0 += 8) {
		const int nc = (int)MM_MIN(8, nb - i0);
		__m256 m[8], d8, id8;
		__m256i s[8];
		float id[8];
		uint16_t dh[8];

#pragma GCC unroll 8
		for (int b = 0; b < 8; b++) {
			const float *xb = x + (i0 + (b < nc ? b : 0)) * MM_QK;

			/* past the row's end: block 0 again, not used */
			m[b] = _mm256_andnot_ps(sign, _mm256_loadu_ps(xb));
#pragma GCC unroll 3
			for (int j = 1; j < 4; j++)
				m[b] = _mm256_max_ps(m[b], _mm256_andnot_ps(sign,
							_mm256_loadu_ps(xb + 8 * j)));
		}
		/* lane b: block b's amax */
		{
			const __m256 p0 = mm_pmax8(mm_pmax8(m[0], m[1]), mm_pmax8(m[2], m[3]));
			const __m256 p1 = mm_pmax8(mm_pmax8(m[4], m[5]), mm_pmax8(m[6], m[7]));

			d8 = _mm256_max_ps(_mm256_permute2f128_ps(p0, p1, 0x20),
					   _mm256_permute2f128_ps(p0, p1, 0x31));
		}
		d8 = _mm256_div_ps(d8, _mm256_set1_ps(127.0f));
		id8 = _mm256_and_ps(_mm256_cmp_ps(d8, _mm256_setzero_ps(), _CMP_NEQ_OQ),
				    _mm256_div_ps(one, d8));
		_mm256_storeu_ps(id, id8);
		/* F16C rounds to nearest even, as mm_f32_to_f16() */
		_mm_storeu_si128((__m128i *)dh, _mm256_cvtps_ph(d8, _MM_FROUND_TO_NEAREST_INT));

#pragma GCC unroll 8
		for (int b = 0; b < 8; b++) {
			const int64_t i = i0 + b;
			const __m256 vid = _mm256_broadcast_ss(&id[b]);
			__m256i q[4];

			if (b >= nc) {	/* past the row's end: lane b unused */
				s[b] = _mm256_setzero_si256();
				continue;
			}

			y[i].d = dh[b];
#pragma GCC unroll 4
			for (int j = 0; j < 4; j++) {
				const __m256 p = _mm256_mul_ps(_mm256_loadu_ps(x + i * MM_QK + 8 * j),
							       vid);
				const __m256 t = _mm256_round_ps(p, _MM_FROUND_TO_ZERO |
								    _MM_FROUND_NO_EXC);
				const __m256 f = _mm256_andnot_ps(sign, _mm256_sub_ps(p, t));
				const __m256 up = _mm256_and_ps(_mm256_cmp_ps(f, half, _CMP_GE_OQ),
								_mm256_or_ps(one, _mm256_and_ps(sign, p)));

				q[j] = _mm256_cvttps_epi32(_mm256_add_ps(t, up));
			}
			mm_store_s32_s8(y[i].qs, q);
			s[b] = _mm256_add_epi32(_mm256_add_epi32(q[0], q[1]),
						_mm256_add_epi32(q[2], q[3]));
		}
		if (sums) {	/* lane b: block b's sum, exact in s32 and float */
			const __m256i h0 = _mm256_hadd_epi32(_mm256_hadd_epi32(s[0], s[1]),
							     _mm256_hadd_epi32(s[2], s[3]));
			const __m256i h1 = _mm256_hadd_epi32(_mm256_hadd_epi32(s[4], s[5]),
							     _mm256_hadd_epi32(s[6], s[7]));
			const __m256 sf = _mm256_mul_ps(_mm256_set1_ps(8.0f), _mm256_cvtepi32_ps(
				_mm256_add_epi32(_mm256_permute2x128_si256(h0, h1, 0x20),
						 _mm256_permute2x128_si256(h0, h1, 0x31))));

			if (nc == 8) {
				_mm256_storeu_ps(sums + i0, sf);
			} else {
				float t[8];

				_mm256_storeu_ps(t, sf);
				memcpy(sums + i0, t, sizeof(float) * nc);
			}
		}
	}
}
#endif

#if defined(__x86_64__)
/* The CPU runs mm_quantize_q8_0_avx2() */
static int mm_q8_0_avx2_ok(void)
{
	return __builtin_cpu_supports("avx2") && mm_cpu_f16c();
}
#endif

static void mm_quantize_q8_0(const float *x, struct mm_block_q8_0 *y,
			     int64_t n)
{
#if defined(__x86_64__)
	if (mm_q8_0_avx2_ok()) {
		mm_quantize_q8_0_avx2(x, y, n, NULL);
		return;
	}
#endif
	for (int64_t i = 0; i < n / MM_QK; i++, x += MM_QK) {
		float amax = 0.0f;

		for (int j = 0; j < MM_QK; j++)
			amax = MM_MAX(amax, fabsf(x[j]));
		const float d = amax / 127.0f;
		const float id = d ? 1.0f / d : 0.0f;

		y[i].d = mm_f32_to_f16(d);
		for (int j = 0; j < MM_QK; j++)
			y[i].qs[j] = (int8_t)roundf(x[j] * id);
	}
}

/* The block's value of largest magnitude, with its sign (the first of
 * equal magnitudes), as ggml's Q4_0 and Q5_0 quantizers pick it */
static float mm_block_signed_max(const float *x)
{
	float amax = 0.0f, max = 0.0f;

	for (int j = 0; j < MM_QK; j++) {
		if (amax < fabsf(x[j])) {
			amax = fabsf(x[j]);
			max = x[j];
		}
	}
	return max;
}

static void mm_quantize_q4_0(const float *x, struct mm_block_q4_0 *y,
			     int64_t n)
{
	for (int64_t i = 0; i < n / MM_QK; i++, x += MM_QK) {
		const float d = mm_block_signed_max(x) / -8;
		const float id = d ? 1.0f / d : 0.0f;

		y[i].d = mm_f32_to_f16(d);
		for (int j = 0; j < MM_QK / 2; j++) {
			const uint8_t x0 = MM_MIN(15, (int8_t)(x[j] * id + 8.5f));
			const uint8_t x1 = MM_MIN(15, (int8_t)(x[j + MM_QK / 2] * id + 8.5f));

			y[i].qs[j] = x0 | (x1 << 4);
		}
	}
}

/* As ggml's reference Q5_0 quantizer: Q4_0's rule with 5 bits */
static void mm_quantize_q5_0(const float *x, struct mm_block_q5_0 *y,
			     int64_t n)
{
	for (int64_t i = 0; i < n / MM_QK; i++, x += MM_QK) {
		const float d = mm_block_signed_max(x) / -16;
		const float id = d ? 1.0f / d : 0.0f;
		uint32_t qh = 0;

		y[i].d = mm_f32_to_f16(d);
		for (int j = 0; j < MM_QK / 2; j++) {
			const uint8_t x0 = MM_MIN(31, (int8_t)(x[j] * id + 16.5f));
			const uint8_t x1 = MM_MIN(31, (int8_t)(x[j + MM_QK / 2] * id + 16.5f));

			y[i].qs[j] = (x0 & 15) | ((x1 & 15) << 4);
			qh |= (uint32_t)(x0 >> 4) << j;
			qh |= (uint32_t)(x1 >> 4) << (j + MM_QK / 2);
		}
		memcpy(y[i].qh, &qh, 4);
	}
}

static void mm_quantize_q4_1(const float *x, struct mm_block_q4_1 *y,
			     int64_t n)
{
	for (int64_t i = 0; i < n / MM_QK; i++, x += MM_QK) {
		float min = INFINITY, max = -INFINITY;

		for (int j = 0; j < MM_QK; j++) {
			min = MM_MIN(min, x[j]);
			max = MM_MAX(max, x[j]);
		}
		const float d = (max - min) / 15;
		const float id = d ? 1.0f / d : 0.0f;

		y[i].d = mm_f32_to_f16(d);
		y[i].m = mm_f32_to_f16(min);
		for (int j = 0; j < MM_QK / 2; j++) {
			const uint8_t x0 = MM_MIN(15, (int8_t)((x[j] - min) * id + 0.5f));
			const uint8_t x1 = MM_MIN(15, (int8_t)((x[j + MM_QK / 2] - min) * id + 0.5f));

			y[i].qs[j] = x0 | (x1 << 4);
		}
	}
}

/* ggml's make_qkx2_quants (use_mad = false). */
static float mm_make_qkx2_quants(int n, int nmax, const float *x,
				 const float *weights, uint8_t *L,
				 float *the_min, uint8_t *Laux, float rmin,
				 float rdelta, int nstep)
{
	float min = x[0], max = x[0];
	float sum_w = weights[0], sum_x = sum_w * x[0];

	for (int i = 1; i < n; i++) {
		if (x[i] < min)
			min = x[i];
		if (x[i] > max)
			max = x[i];
		sum_w += weights[i];
		sum_x += weights[i] * x[i];
	}
	if (min > 0)
		min = 0;
	if (max == min) {
		memset(L, 0, n);
		*the_min = -min;
		return 0.f;
	}
	float iscale = nmax / (max - min);
	float scale = 1 / iscale;
	float best_error = 0;

	for (int i = 0; i < n; i++) {
		int l = mm_nearest_int(iscale * (x[i] - min));

		L[i] = MM_MAX(0, MM_MIN(nmax, l));
		float diff = scale * L[i] + min - x[i];

		best_error += weights[i] * diff * diff;
	}
	for (int is = 0; is <= nstep; is++) {
		float sum_l = 0, sum_l2 = 0, sum_xl = 0;

		iscale = (rmin + rdelta * is + nmax) / (max - min);
		for (int i = 0; i < n; i++) {
			int l = mm_nearest_int(iscale * (x[i] - min));

			l = MM_MAX(0, MM_MIN(nmax, l));
			Laux[i] = l;
			float w = weights[i];

			sum_l += w * l;
			sum_l2 += w * l * l;
			sum_xl += w * l * x[i];
		}
		float D = sum_w * sum_l2 - sum_l * sum_l;

		if (D > 0) {
			float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
			float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;

			if (this_min > 0) {
				this_min = 0;
				this_scale = sum_xl / sum_l2;
			}
			float cur_error = 0;

			for (int i = 0; i < n; i++) {
				float diff = this_scale * Laux[i] + this_min - x[i];

				cur_error += weights[i] * diff * diff;
			}
			if (cur_error < best_error) {
				memcpy(L, Laux, n);
				best_error = cur_error;
				scale = this_scale;
				min = this_min;
			}
		}
	}
	*the_min = -min;
	return scale;
}

static void mm_quantize_q4_k(const float *x, struct mm_block_q4_k *y,
			     int64_t n)
{
	uint8_t L[MM_QK_K], Laux[32];
	float weights[32], mins[8], scales[8];

	for (int64_t i = 0; i < n / MM_QK_K; i++, x += MM_QK_K) {
		float max_scale = 0, max_min = 0;

		for (int j = 0; j < 8; j++) {
			float sum_x2 = 0;

			for (int l = 0; l < 32; l++)
				sum_x2 += x[32 * j + l] * x[32 * j + l];
			float av_x = sqrtf(sum_x2 / 32);

			for (int l = 0; l < 32; l++)
				weights[l] = av_x + fabsf(x[32 * j + l]);
			scales[j] = mm_make_qkx2_quants(32, 15, x + 32 * j,
							weights, L + 32 * j,
							&mins[j], Laux, -1.f,
							0.1f, 20);
			max_scale = MM_MAX(max_scale, scales[j]);
			max_min = MM_MAX(max_min, mins[j]);
		}
		float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
		float inv_min = max_min > 0 ? 63.f / max_min : 0.f;

		memset(y[i].scales, 0, sizeof(y[i].scales));
		for (int j = 0; j < 8; j++) {
			uint8_t ls = MM_MIN(63, mm_nearest_int(inv_scale * scales[j]));
			uint8_t lm = MM_MIN(63, mm_nearest_int(inv_min * mins[j]));

			if (j < 4) {
				y[i].scales[j] = ls;
				y[i].scales[j + 4] = lm;
			} else {
				y[i].scales[j + 4] = (ls & 0xF) | ((lm & 0xF) << 4);
				y[i].scales[j - 4] |= ((ls >> 4) << 6);
				y[i].scales[j - 0] |= ((lm >> 4) << 6);
			}
		}
		y[i].d = mm_f32_to_f16(max_scale / 63.f);
		y[i].dmin = mm_f32_to_f16(max_min / 63.f);
		for (int j = 0; j < 8; j++) {
			uint8_t sc, m;

			mm_q4k_scale_min(j, y[i].scales, &sc, &m);
			const float d = mm_f16_to_f32(y[i].d) * sc;

			if (!d)
				continue;
			const float dm = mm_f16_to_f32(y[i].dmin) * m;

			for (int ii = 0; ii < 32; ii++) {
				int l = mm_nearest_int((x[32 * j + ii] + dm) / d);

				L[32 * j + ii] = MM_MAX(0, MM_MIN(15, l));
			}
		}
		uint8_t *q = y[i].qs;

		for (int j = 0; j < MM_QK_K; j += 64, q += 32)
			for (int l = 0; l < 32; l++)
				q[l] = L[j + l] | (L[j + l + 32] << 4);
	}
}

/* ggml's make_qx_quants with rmse_type 1 and no importance weights. */
static float mm_make_qx_quants(int n, int nmax, const float *x, int8_t *L)
{
	float max = 0, amax = 0;

	for (int i = 0; i < n; i++) {
		float ax = fabsf(x[i]);

		if (ax > amax) {
			amax = ax;
			max = x[i];
		}
	}
	if (amax < MM_GROUP_MAX_EPS) {
		memset(L, 0, n);
		return 0.f;
	}
	float iscale = -nmax / max;
	float sumlx = 0, suml2 = 0;

	for (int i = 0; i < n; i++) {
		int l = mm_nearest_int(iscale * x[i]);

		l = MM_MAX(-nmax, MM_MIN(nmax - 1, l));
		L[i] = l + nmax;
		float w = x[i] * x[i];

		sumlx += w * x[i] * l;
		suml2 += w * l * l;
	}
	float scale = suml2 ? sumlx / suml2 : 0.0f;
	float best = scale * sumlx;

	for (int is = -9; is <= 9; is++) {
		if (is == 0)
			continue;
		iscale = -(nmax + 0.1f * is) / max;
		sumlx = suml2 = 0;
		for (int i = 0; i < n; i++) {
			int l = mm_nearest_int(iscale * x[i]);

			l = MM_MAX(-nmax, MM_MIN(nmax - 1, l));
			float w = x[i] * x[i];

			sumlx += w * x[i] * l;
			suml2 += w * l * l;
		}
		if (suml2 > 0 && sumlx * sumlx > best * suml2) {
			for (int i = 0; i < n; i++) {
				int l = mm_nearest_int(iscale * x[i]);

				L[i] = nmax + MM_MAX(-nmax, MM_MIN(nmax - 1, l));
			}
			scale = sumlx / suml2;
			best = scale * sumlx;
		}
	}
	return scale;
}

static void mm_quantize_q6_k(const float *x, struct mm_block_q6_k *y,
			     int64_t n)
{
	int8_t L[MM_QK_K];
	float scales[MM_QK_K / 16];

	for (int64_t i = 0; i < n / MM_QK_K; i++, x += MM_QK_K) {
		float max_scale = 0, max_abs_scale = 0;

		for (int ib = 0; ib < MM_QK_K / 16; ib++) {
			const float scale = mm_make_qx_quants(16, 32, x + 16 * ib,
							      L + 16 * ib);

			scales[ib] = scale;
			const float abs_scale = fabsf(scale);

			if (abs_scale > max_abs_scale) {
				max_abs_scale = abs_scale;
				max_scale = scale;
			}
		}
		if (max_abs_scale < MM_GROUP_MAX_EPS) {
			memset(&y[i], 0, sizeof(y[i]));
			y[i].d = mm_f32_to_f16(0.f);
			continue;
		}
		float iscale = -128.f / max_scale;

		y[i].d = mm_f32_to_f16(1 / iscale);
		for (int ib = 0; ib < MM_QK_K / 16; ib++)
			y[i].scales[ib] = MM_MIN(127, mm_nearest_int(iscale * scales[ib]));
		for (int j = 0; j < MM_QK_K / 16; j++) {
			float d = mm_f16_to_f32(y[i].d) * y[i].scales[j];

			if (!d)
				continue;
			for (int ii = 0; ii < 16; ii++) {
				int l = mm_nearest_int(x[16 * j + ii] / d);

				l = MM_MAX(-32, MM_MIN(31, l));
				L[16 * j + ii] = l + 32;
			}
		}
		uint8_t *ql = y[i].ql, *qh = y[i].qh;

		for (int j = 0; j < MM_QK_K; j += 128, ql += 64, qh += 32) {
			for (int l = 0; l < 32; l++) {
				const uint8_t q1 = L[j + l + 0] & 0xF;
				const uint8_t q2 = L[j + l + 32] & 0xF;
				const uint8_t q3 = L[j + l + 64] & 0xF;
				const uint8_t q4 = L[j + l + 96] & 0xF;

				ql[l + 0] = q1 | (q3 << 4);
				ql[l + 32] = q2 | (q4 << 4);
				qh[l] = (L[j + l] >> 4) |
					((L[j + l + 32] >> 4) << 2) |
					((L[j + l + 64] >> 4) << 4) |
					((L[j + l + 96] >> 4) << 6);
			}
		}
	}
}

#if defined(__x86_64__)
/*
 * AVX2 Q8_K block quantizer, bit-identical to the scalar one below: the
 * same max (the first element of the largest magnitude, NaNs ignored),
 * the same products iscale * x rounded by the same 1.5 * 2^23 addition
 * (target avx2 without fma, so the multiply and add stay apart), the low
 * byte of each. The activations of every K-quant matrix-vector product
 * go through this (1.3-1.5% of a Q4_K-mix decode step when scalar).
 */
__attribute__((target("avx2")))
static void mm_quantize_q8_k_avx2(const float *x, struct mm_block_q8_k *y,
				  int64_t n)
{
	const __m256 sign = _mm256_set1_ps(-0.0f);
	const __m256 magic = _mm256_set1_ps(12582912.f);

	for (int64_t i = 0; i < n / MM_QK_K; i++, x += MM_QK_K) {
		__m256 m = _mm256_setzero_ps();
		float max = 0;
		int j;

		/* max(v, m) returns m for a NaN v, as the scalar > skips it */
		for (j = 0; j < MM_QK_K; j += 8)
			m = _mm256_max_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(x + j)), m);

		const float amax = mm_hmax8(m);

		if (!amax) {
			memset(&y[i], 0, sizeof(y[i]));
			continue;
		}
		for (j = 0; j < MM_QK_K; j++)	/* the first of magnitude amax */
			if (fabsf(x[j]) == amax) {
				max = x[j];
				break;
			}

		const float iscale = -127.f / max;
		const __m256 vis = _mm256_set1_ps(iscale);

		for (j = 0; j < MM_QK_K; j += 32) {
			__m256i q[4];

			for (int k = 0; k < 4; k++) {
				const __m256 v = _mm256_add_ps(_mm256_mul_ps(vis,
					_mm256_loadu_ps(x + j + 8 * k)), magic);
				const __m256i b = _mm256_sub_epi32(_mm256_and_si256(
					_mm256_castps_si256(v), _mm256_set1_epi32(0x007fffff)),
					_mm256_set1_epi32(0x00400000));

				/* the scalar store keeps the low byte (only a
				 * non-finite x gets out of [-127, 127]) */
				q[k] = _mm256_srai_epi32(_mm256_slli_epi32(
					_mm256_min_epi32(b, _mm256_set1_epi32(127)), 24), 24);
			}
			/* bsums: 16 elements are q[0..1] (or q[2..3]) */
			for (int h = 0; h < 2; h++) {
				__m256i s = _mm256_add_epi32(q[2 * h], q[2 * h + 1]);
				__m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s),
							   _mm256_extracti128_si256(s, 1));

				s4 = _mm_hadd_epi32(s4, s4);
				s4 = _mm_hadd_epi32(s4, s4);
				y[i].bsums[j / 16 + h] = (int16_t)_mm_cvtsi128_si32(s4);
			}
			mm_store_s32_s8(y[i].qs + j, q);
		}
		y[i].d = 1 / iscale;
	}
}
#endif

static void mm_quantize_q8_k(const float *x, struct mm_block_q8_k *y,
			     int64_t n)
{
#if defined(__x86_64__)
	if (__builtin_cpu_supports("avx2")) {
		mm_quantize_q8_k_avx2(x, y, n);
		return;
	}
#endif
	for (int64_t i = 0; i < n / MM_QK_K; i++, x += MM_QK_K) {
		float max = 0, amax = 0;

		for (int j = 0; j < MM_QK_K; j++) {
			float ax = fabsf(x[j]);

			if (ax > amax) {
				amax = ax;
				max = x[j];
			}
		}
		if (!amax) {
			memset(&y[i], 0, sizeof(y[i]));
			continue;
		}
		const float iscale = -127.f / max;

		for (int j = 0; j < MM_QK_K; j++) {
			int v = mm_nearest_int(iscale * x[j]);

			y[i].qs[j] = MM_MIN(127, v);
		}
		for (int j = 0; j < MM_QK_K / 16; j++) {
			int sum = 0;

			for (int ii = 0; ii < 16; ii++)
				sum += y[i].qs[j * 16 + ii];
			y[i].bsums[j] = sum;
		}
		y[i].d = 1 / iscale;
	}
}

static void mm_quantize_q8_1(const float *x, struct mm_block_q8_1 *y,
			     int64_t n)
{
	for (int64_t i = 0; i < n / MM_QK; i++, x += MM_QK) {
		float amax = 0.0f;
		int sum = 0;

		for (int j = 0; j < MM_QK; j++)
			amax = MM_MAX(amax, fabsf(x[j]));
		const float d = amax / 127.0f;
		const float id = d ? 1.0f / d : 0.0f;

		for (int j = 0; j < MM_QK; j++) {
			y[i].qs[j] = (int8_t)roundf(x[j] * id);
			sum += y[i].qs[j];
		}
		y[i].d = d;
		y[i].s = d * (float)sum;
	}
}

#if defined(__x86_64__)
/*
 * F16 rows by F16C: vcvtps2ph rounds to nearest even as mm_f32_to_f16()
 * does, so the bits are the same (a NaN stays a NaN, its payload may
 * differ). The decoder stores two such rows per layer and token (the F16
 * KV cache), where the scalar form took ~1 us per layer.
 */
__attribute__((target("avx,f16c")))
static void mm_f32_to_f16_row_f16c(const float *x, uint16_t *y, int64_t n)
{
	int64_t i = 0;

	for (; i + 8 <= n; i += 8)
		_mm_storeu_si128((__m128i *)(y + i),
				 _mm256_cvtps_ph(_mm256_loadu_ps(x + i),
						 _MM_FROUND_TO_NEAREST_INT |
						 _MM_FROUND_NO_EXC));
	for (; i < n; i++)
		y[i] = mm_f32_to_f16(x[i]);
}
#endif

void mm_quantize_row(enum mm_type t, const float *x, void *y, int64_t n)
{
	switch (t) {
	case MM_TYPE_F32:
		memcpy(y, x, n * sizeof(float));
		break;
	case MM_TYPE_F16:
#if defined(__x86_64__)
		if (__builtin_cpu_supports("avx") &&
		    mm_cpu_f16c()) {
			mm_f32_to_f16_row_f16c(x, y, n);
			break;
		}
#endif
		for (int64_t i = 0; i < n; i++)
			((uint16_t *)y)[i] = mm_f32_to_f16(x[i]);
		break;
	case MM_TYPE_BF16:
		for (int64_t i = 0; i < n; i++)
			((uint16_t *)y)[i] = mm_f32_to_bf16(x[i]);
		break;
	case MM_TYPE_Q4_0: mm_quantize_q4_0(x, y, n); break;
	case MM_TYPE_Q4_1: mm_quantize_q4_1(x, y, n); break;
	case MM_TYPE_Q5_0: mm_quantize_q5_0(x, y, n); break;
	case MM_TYPE_Q8_0: mm_quantize_q8_0(x, y, n); break;
	case MM_TYPE_Q4_K: mm_quantize_q4_k(x, y, n); break;
	case MM_TYPE_Q6_K: mm_quantize_q6_k(x, y, n); break;
	case MM_TYPE_Q8_K: mm_quantize_q8_k(x, y, n); break;
	case MM_TYPE_Q4_0_R8: case MM_TYPE_Q5_0_R8: case MM_TYPE_Q8_0_R8:
	case MM_TYPE_Q4_K_R8:
		abort();	/* caller bug: a layout of 8-row groups */
	}
}

void mm_dequantize_row(enum mm_type t, const void *vx, float *y, int64_t n)
{
	switch (t) {
	case MM_TYPE_F32:
		memcpy(y, vx, n * sizeof(float));
		break;
	case MM_TYPE_F16:
		for (int64_t i = 0; i < n; i++)
			y[i] = mm_f16_to_f32(((const uint16_t *)vx)[i]);
		break;
	case MM_TYPE_BF16:
		for (int64_t i = 0; i < n; i++)
			y[i] = mm_bf16_to_f32(((const uint16_t *)vx)[i]);
		break;
	case MM_TYPE_Q4_0: {
		const struct mm_block_q4_0 *x = vx;

		for (int64_t i = 0; i < n / MM_QK; i++, y += MM_QK) {
			const float d = mm_f16_to_f32(x[i].d);

			for (int j = 0; j < MM_QK / 2; j++) {
				y[j] = ((x[i].qs[j] & 15) - 8) * d;
				y[j + 16] = ((x[i].qs[j] >> 4) - 8) * d;
			}
		}
		break;
	}
	case MM_TYPE_Q5_0: {
		const struct mm_block_q5_0 *x = vx;

		for (int64_t i = 0; i < n / MM_QK; i++, y += MM_QK) {
			const float d = mm_f16_to_f32(x[i].d);

			for (int j = 0; j < MM_QK; j++)
				y[j] = (mm_q5_0_q(&x[i], j) - 16) * d;
		}
		break;
	}
	case MM_TYPE_Q4_1: {
		const struct mm_block_q4_1 *x = vx;

		for (int64_t i = 0; i < n / MM_QK; i++, y += MM_QK) {
			const float d = mm_f16_to_f32(x[i].d);
			const float m = mm_f16_to_f32(x[i].m);

			for (int j = 0; j < MM_QK / 2; j++) {
				y[j] = (x[i].qs[j] & 15) * d + m;
				y[j + 16] = (x[i].qs[j] >> 4) * d + m;
			}
		}
		break;
	}
	case MM_TYPE_Q8_0: {
		const struct mm_block_q8_0 *x = vx;

		for (int64_t i = 0; i < n / MM_QK; i++, y += MM_QK) {
			const float d = mm_f16_to_f32(x[i].d);

			for (int j = 0; j < MM_QK; j++)
				y[j] = x[i].qs[j] * d;
		}
		break;
	}
	case MM_TYPE_Q4_K: {
		const struct mm_block_q4_k *x = vx;

		for (int64_t i = 0; i < n / MM_QK_K; i++) {
			const uint8_t *q = x[i].qs;
			const float d = mm_f16_to_f32(x[i].d);
			const float min = mm_f16_to_f32(x[i].dmin);
			int is = 0;
			uint8_t sc, m;

			for (int j = 0; j < MM_QK_K; j += 64, q += 32) {
				mm_q4k_scale_min(is + 0, x[i].scales, &sc, &m);
				const float d1 = d * sc, m1 = min * m;

				mm_q4k_scale_min(is + 1, x[i].scales, &sc, &m);
				const float d2 = d * sc, m2 = min * m;

				for (int l = 0; l < 32; l++)
					*y++ = d1 * (q[l] & 0xF) - m1;
				for (int l = 0; l < 32; l++)
					*y++ = d2 * (q[l] >> 4) - m2;
				is += 2;
			}
		}
		break;
	}
	case MM_TYPE_Q6_K: {
		const struct mm_block_q6_k *x = vx;

		for (int64_t i = 0; i < n / MM_QK_K; i++) {
			const float d = mm_f16_to_f32(x[i].d);
			const uint8_t *ql = x[i].ql, *qh = x[i].qh;
			const int8_t *sc = x[i].scales;

			for (int nn = 0; nn < MM_QK_K; nn += 128) {
				for (int l = 0; l < 32; l++) {
					int is = l / 16;
					const int8_t q1 = (int8_t)((ql[l + 0] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
					const int8_t q2 = (int8_t)((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
					const int8_t q3 = (int8_t)((ql[l + 0] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
					const int8_t q4 = (int8_t)((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;

					y[l + 0] = d * sc[is + 0] * q1;
					y[l + 32] = d * sc[is + 2] * q2;
					y[l + 64] = d * sc[is + 4] * q3;
					y[l + 96] = d * sc[is + 6] * q4;
				}
				y += 128;
				ql += 64;
				qh += 32;
				sc += 8;
			}
		}
		break;
	}
	case MM_TYPE_Q8_K: {
		const struct mm_block_q8_k *x = vx;

		for (int64_t i = 0; i < n / MM_QK_K; i++)
			for (int j = 0; j < MM_QK_K; j++)
				*y++ = x[i].d * x[i].qs[j];
		break;
	}
	case MM_TYPE_Q4_0_R8: case MM_TYPE_Q5_0_R8: case MM_TYPE_Q8_0_R8:
	case MM_TYPE_Q4_K_R8:
		abort();	/* caller bug: a layout of 8-row groups */
	}
}

/* ---- activations ----------------------------------------------------- */

enum mm_type mm_act_type(enum mm_type wt)
{
	switch (mm_stored_type(wt)) {
	case MM_TYPE_Q4_0: case MM_TYPE_Q5_0: case MM_TYPE_Q8_0:
		return MM_TYPE_Q8_0;
	case MM_TYPE_Q4_1:
		return MM_ACT_Q8_1;
	case MM_TYPE_Q4_K: case MM_TYPE_Q6_K:
		return MM_TYPE_Q8_K;
	default:
		return MM_TYPE_F32;
	}
}

size_t mm_act_row_bytes(enum mm_type wt, int64_t k)
{
	enum mm_type at = mm_act_type(wt);

	if (at == MM_ACT_Q8_1)
		return (size_t)(k / MM_QK) * sizeof(struct mm_block_q8_1);
	if (mm_act_has_sums(wt))
		/* blocks, then a float per block */
		return mm_q4_0_act_sums_off(k) +
		       (size_t)(k / MM_QK) * sizeof(float);
	return mm_row_bytes(at, k);
}

void mm_quantize_act(enum mm_type wt, const float *x, void *xq, int64_t k)
{
	enum mm_type at = mm_act_type(wt);

#if defined(__x86_64__)
	/* decode quantizes x before each matvec job: one pass for both */
	if (at == MM_TYPE_Q8_0 && mm_act_has_sums(wt) && mm_q8_0_avx2_ok()) {
		mm_quantize_q8_0_avx2(x, xq, k, (float *)((uint8_t *)xq +
				      mm_q4_0_act_sums_off(k)));
		return;
	}
#endif
	if (at == MM_ACT_Q8_1)
		mm_quantize_q8_1(x, xq, k);
	else
		mm_quantize_row(at, x, xq, k);
	if (mm_act_has_sums(wt)) {
		const struct mm_block_q8_0 *b = xq;
		float *s = (float *)((uint8_t *)xq + mm_q4_0_act_sums_off(k));

		for (int64_t i = 0; i < k / MM_QK; i++) {
			int sum = 0;

			for (int j = 0; j < MM_QK; j++)
				sum += b[i].qs[j];
			s[i] = 8.0f * (float)sum;
		}
	}
}

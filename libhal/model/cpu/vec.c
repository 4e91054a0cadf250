// SPDX-License-Identifier: MIT
/*
 * vec.c - f32 row helpers and the F16 attention kernel of the model
 * runtime (see vec.h): AVX2/FMA/F16C versions built with target
 * attributes (this file has no ISA flags), NEON on arm64, portable loops.
 * mm_vec_select() picks a table from the kernel set quant.c chose.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "quant.h"
#include "quant_kern.h"
#include "vec.h"

static float mm_dot_c(const float *a, const float *b, int n)
{
	float s[8] = { 0 };
	int i;

	for (i = 0; i + 8 <= n; i += 8)
		for (int k = 0; k < 8; k++)
			s[k] += a[i + k] * b[i + k];
	for (; i < n; i++)
		s[0] += a[i] * b[i];
	return ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]));
}

static void mm_axpy_c(float *y, float a, const float *x, int n)
{
	for (int i = 0; i < n; i++)
		y[i] += a * x[i];
}

static void mm_f16_row_c(const void *src, float *dst, int n)
{
	mm_dequantize_row(MM_TYPE_F16, src, dst, n);
}

/* g[i] = silu(g[i]) * u[i] */
static void mm_silu_mul_c(float *g, const float *u, int n)
{
	for (int i = 0; i < n; i++)
		g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

static float mm_dot_h_c(const float *a, const void *b, int n)
{
	const uint16_t *h = b;
	float s = 0;

	for (int i = 0; i < n; i++)
		s += a[i] * mm_f16_to_f32(h[i]);
	return s;
}

static void mm_axpy_h_c(float *y, float a, const void *x, int n)
{
	const uint16_t *h = x;

	for (int i = 0; i < n; i++)
		y[i] += a * mm_f16_to_f32(h[i]);
}

/* decode attention: K rows prefetched this far ahead (see below) */
#define MM_ATTN_PF 16

/*
 * The end of a head's softmax in the attention kernels: exp of the scores
 * [u, npos) the SIMD loop left, then the factor that scales the V sums:
 * 1 / sum, or for a segment (st: its max and sum of exp, merged later) 1.
 */
static inline float mm_attn_finish(float *sg, int u, int npos, float mx,
				   float sum, float *st)
{
	for (; u < npos; u++) {
		sg[u] = expf(sg[u] - mx);
		sum += sg[u];
	}
	if (st) {
		st[0] = mx;
		st[1] = sum;
		return 1.0f;
	}
	return 1.0f / sum;
}

/*
 * mm_attn_h_<isa>(): attention of grp query heads over npos F16 K/V rows
 * of one KV head, in groups of up to 3 heads (hg: that ISA's
 * mm_attn_hg_<isa>(), a constant group size each so that each size gets
 * its own code). hd is a multiple of 8. sc: grp rows of scs floats. With
 * stats, o is left unnormalized and stats gets each query head's (max,
 * sum of exp).
 */
#define MM_DEF_ATTN_H(name, hg)						\
static void name(const float *q, int grp, int hd, const uint8_t *k,	\
		 const uint8_t *v, size_t rs, int npos, float scale,	\
		 float *sc, size_t scs, float *o, float *stats)		\
{									\
	for (int u = 0; u < npos && u < MM_ATTN_PF; u++)		\
		for (int c = 0; c < hd * 2; c += 64)			\
			__builtin_prefetch(k + (size_t)u * rs + c, 0, 3); \
	for (int g = 0, n; g < grp; g += n) {				\
		const size_t go = (size_t)g * hd;			\
		float *st = stats ? stats + 2 * g : NULL;		\
									\
		n = grp - g >= 3 ? 3 : grp - g;				\
		if (n == 3)						\
			hg(3, q + go, hd, k, v, rs, npos, scale,	\
			   sc + g * scs, scs, o + go, st, g == 0);	\
		else if (n == 2)					\
			hg(2, q + go, hd, k, v, rs, npos, scale,	\
			   sc + g * scs, scs, o + go, st, g == 0);	\
		else							\
			hg(1, q + go, hd, k, v, rs, npos, scale,	\
			   sc + g * scs, scs, o + go, st, g == 0);	\
	}								\
}

#if defined(__x86_64__)
#include <immintrin.h>

__attribute__((target("avx2,fma")))
static float mm_dot_avx2(const float *a, const float *b, int n)
{
	__m256 s0 = _mm256_setzero_ps(), s1 = s0;
	__m128 h;
	int i;
	float r;

	for (i = 0; i + 16 <= n; i += 16) {
		s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i),
				     _mm256_loadu_ps(b + i), s0);
		s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8),
				     _mm256_loadu_ps(b + i + 8), s1);
	}
	for (; i + 8 <= n; i += 8)
		s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i),
				     _mm256_loadu_ps(b + i), s0);
	s0 = _mm256_add_ps(s0, s1);
	h = _mm_add_ps(_mm256_castps256_ps128(s0),
		       _mm256_extractf128_ps(s0, 1));
	h = _mm_add_ps(h, _mm_movehl_ps(h, h));
	h = _mm_add_ss(h, _mm_movehdup_ps(h));
	r = _mm_cvtss_f32(h);
	for (; i < n; i++)
		r += a[i] * b[i];
	return r;
}

__attribute__((target("avx2,fma")))
static void mm_axpy_avx2(float *y, float a, const float *x, int n)
{
	__m256 va = _mm256_set1_ps(a);
	int i;

	for (i = 0; i + 8 <= n; i += 8)
		_mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i),
						       _mm256_loadu_ps(y + i)));
	for (; i < n; i++)
		y[i] += a * x[i];
}

__attribute__((target("avx2,f16c")))
static void mm_f16_row_f16c(const void *src, float *dst, int n)
{
	const uint16_t *h = src;
	int i;

	for (i = 0; i + 8 <= n; i += 8)
		_mm256_storeu_ps(dst + i, _mm256_cvtph_ps(
			_mm_loadu_si128((const __m128i *)(h + i))));
	for (; i < n; i++)
		dst[i] = mm_f16_to_f32(h[i]);
}


/* exp(x) on 8 lanes for x <= 0 (softmax): 2^n * p(r), |r| <= ln2/2,
 * degree-6 Taylor p (relative error < 2e-7); below -87 it flushes to 0. */
__attribute__((target("avx2,fma")))
static inline __m256 mm_exp_neg_avx2(__m256 x)
{
	const __m256 lo = _mm256_set1_ps(-87.0f);
	const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504f)),
					 _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	__m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145752f), x);
	__m256 p;

	r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.42860677e-6f), r);
	p = _mm256_set1_ps(1.0f / 720);
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
	p = _mm256_mul_ps(p, _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(
		_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23)));
	return _mm256_and_ps(p, _mm256_cmp_ps(x, lo, _CMP_GE_OQ));
}

/* g[i] = silu(g[i]) * u[i], silu(g) = g * sigmoid(g) with sigmoid from
 * e = exp(-|g|) <= 1: 1 / (1 + e) for g >= 0, e / (1 + e) below. */
__attribute__((target("avx2,fma")))
static void mm_silu_mul_avx2(float *g, const float *u, int n)
{
	const __m256 sign = _mm256_set1_ps(-0.0f), one = _mm256_set1_ps(1.0f);
	int i;

	for (i = 0; i + 8 <= n; i += 8) {
		const __m256 x = _mm256_loadu_ps(g + i);
		const __m256 e = mm_exp_neg_avx2(_mm256_or_ps(x, sign));
		const __m256 num = _mm256_blendv_ps(one, e, x);	/* x < 0: e */

		_mm256_storeu_ps(g + i, _mm256_mul_ps(_mm256_mul_ps(x,
			_mm256_div_ps(num, _mm256_add_ps(one, e))),
			_mm256_loadu_ps(u + i)));
	}
	mm_silu_mul_c(g + i, u + i, n - i);
}

/*
 * The cache rows of a head are hd * 2 bytes every rs bytes (rs = hd * 2:
 * contiguous, see mm_kv_at()), and in decode they come from DRAM (the
 * weights streamed since the last token evicted them); without help the
 * stream starts each call with latency-bound misses. While the first
 * query head scores rows t..t+3, this fetches the K rows MM_ATTN_PF
 * further and the V rows t..t+3 (read after the softmax).
 */
/* always inlined: as an out-of-line candidate, GCC's pure-const pass finds
 * no effect in a function of prefetches and deletes its calls */
static inline __attribute__((always_inline)) void
mm_attn_prefetch(const uint8_t *k, const uint8_t *v, size_t rs, int hd, int t,
		 int npos)
{
	for (int u = t; u < t + 4; u++) {
		for (int c = 0; c < hd * 2; c += 64) {
			if (u + MM_ATTN_PF < npos)
				_mm_prefetch((const char *)k +
					     (size_t)(u + MM_ATTN_PF) * rs + c,
					     _MM_HINT_T0);
			_mm_prefetch((const char *)v + (size_t)u * rs + c,
				     _MM_HINT_T1);
		}
	}
}

/*
 * Attention of G <= 3 query heads that share one KV head, over npos F16
 * K/V rows (rs bytes apart, read in place). Each K and V chunk of 8 is
 * converted once for all G heads: vcvtph2ps (one per 2 cycles on Zen 3)
 * was the bound when each head converted the rows again. Each head keeps
 * its sums in the order of the one-head form (scores: 4 rows a step, 8
 * lanes over the dimensions, one horizontal reduction per 4 rows; V:
 * even and odd rows apart per 8 dimensions), so G does not change the
 * bits. pf: also prefetch (the first group of a call).
 */
__attribute__((target("avx2,fma,f16c")))
static inline __attribute__((always_inline)) void
mm_attn_hg_avx2(const int G, const float *q, int hd, const uint8_t *k,
		const uint8_t *v, size_t rs, int npos, float scale, float *sc,
		size_t scs, float *o, float *stats, int pf)
{
/* 8 f16 values of cache row t of p (k or v) from dimension c, as f32 */
#define MM_F16X8(p, t, c) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)	\
		((p) + (size_t)(t) * rs + (size_t)(c) * 2)))
	__m128 mx4[3];
	float mx[3], sum[3];
	int t = 0;

#pragma GCC unroll 3
	for (int g = 0; g < G; g++)
		mx4[g] = _mm_set1_ps(-INFINITY);
	for (; t + 4 <= npos; t += 4) {
		__m256 a[3][4];	/* scalarised by GCC: no stack in the loop */

		if (pf)
			mm_attn_prefetch(k, v, rs, hd, t, npos);
#pragma GCC unroll 3
		for (int g = 0; g < G; g++)
#pragma GCC unroll 4
			for (int r = 0; r < 4; r++)
				a[g][r] = _mm256_setzero_ps();
		for (int c = 0; c < hd; c += 8) {
#pragma GCC unroll 4
			for (int r = 0; r < 4; r++) {
				const __m256 kv = MM_F16X8(k, t + r, c);

#pragma GCC unroll 3
				for (int g = 0; g < G; g++)
					a[g][r] = _mm256_fmadd_ps(
						_mm256_loadu_ps(q + (size_t)g * hd + c),
						kv, a[g][r]);
			}
		}
#pragma GCC unroll 3
		for (int g = 0; g < G; g++) {
			const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a[g][0], a[g][1]),
							_mm256_hadd_ps(a[g][2], a[g][3]));
			const __m128 s4 = _mm_mul_ps(_mm_add_ps(_mm256_castps256_ps128(h),
								_mm256_extractf128_ps(h, 1)),
						     _mm_set1_ps(scale));

			_mm_storeu_ps(sc + (size_t)g * scs + t, s4);
			mx4[g] = _mm_max_ps(mx4[g], s4);
		}
	}
	for (int g = 0; g < G; g++) {
		const float *qg = q + (size_t)g * hd;
		float *sg = sc + (size_t)g * scs;
		__m128 m4 = _mm_max_ps(mx4[g], _mm_movehl_ps(mx4[g], mx4[g]));
		__m256 sum8 = _mm256_setzero_ps();
		int u;

		m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
		mx[g] = t > 0 ? _mm_cvtss_f32(m4) : -INFINITY;
		for (u = t; u < npos; u++) {	/* the last npos % 4 rows */
			__m256 a0 = _mm256_setzero_ps();
			__m128 r;

			for (int c = 0; c < hd; c += 8)
				a0 = _mm256_fmadd_ps(_mm256_loadu_ps(qg + c),
						     MM_F16X8(k, u, c), a0);
			r = _mm_add_ps(_mm256_castps256_ps128(a0), _mm256_extractf128_ps(a0, 1));
			r = _mm_add_ps(r, _mm_movehl_ps(r, r));
			r = _mm_add_ss(r, _mm_movehdup_ps(r));
			sg[u] = _mm_cvtss_f32(r) * scale;
			mx[g] = sg[u] > mx[g] ? sg[u] : mx[g];
		}
		/* softmax: sg = exp(sg - mx), normalised below */
		for (u = 0; u + 8 <= npos; u += 8) {
			const __m256 e = mm_exp_neg_avx2(_mm256_sub_ps(_mm256_loadu_ps(sg + u),
								       _mm256_set1_ps(mx[g])));

			_mm256_storeu_ps(sg + u, e);
			sum8 = _mm256_add_ps(sum8, e);
		}
		{
			float s8[8];

			_mm256_storeu_ps(s8, sum8);
			sum[g] = ((s8[0] + s8[4]) + (s8[1] + s8[5])) +
				 ((s8[2] + s8[6]) + (s8[3] + s8[7]));
		}
		sum[g] = mm_attn_finish(sg, u, npos, mx[g], sum[g],
					stats ? stats + 2 * g : NULL);
	}
	/*
	 * V: 16 dimensions (8 at the end when hd % 16 == 8) x 2 rows a
	 * step, even rows summed in a, odd ones in b: 4 * G independent
	 * FMA chains, no stores in the loop.
	 */
	for (int c = 0; c < hd; c += 16) {
		const int two = c + 16 <= hd;
		__m256 a[3][2], b[3][2];

#pragma GCC unroll 3
		for (int g = 0; g < G; g++) {
			a[g][0] = _mm256_setzero_ps();
			a[g][1] = a[g][0];
			b[g][0] = a[g][0];
			b[g][1] = a[g][0];
		}
		for (t = 0; t < npos; t += 2) {
			const __m256 v0 = MM_F16X8(v, t, c);
			const __m256 v1 = two ? MM_F16X8(v, t, c + 8) : v0;

#pragma GCC unroll 3
			for (int g = 0; g < G; g++) {
				const __m256 p = _mm256_set1_ps(sc[(size_t)g * scs + t]);

				a[g][0] = _mm256_fmadd_ps(p, v0, a[g][0]);
				a[g][1] = _mm256_fmadd_ps(p, v1, a[g][1]);
			}
			if (t + 1 == npos)
				break;
			const __m256 w0 = MM_F16X8(v, t + 1, c);
			const __m256 w1 = two ? MM_F16X8(v, t + 1, c + 8) : w0;

#pragma GCC unroll 3
			for (int g = 0; g < G; g++) {
				const __m256 p = _mm256_set1_ps(sc[(size_t)g * scs + t + 1]);

				b[g][0] = _mm256_fmadd_ps(p, w0, b[g][0]);
				b[g][1] = _mm256_fmadd_ps(p, w1, b[g][1]);
			}
		}
#pragma GCC unroll 3
		for (int g = 0; g < G; g++) {
			float *og = o + (size_t)g * hd + c;
			const __m256 s = _mm256_set1_ps(sum[g]);

			_mm256_storeu_ps(og, _mm256_mul_ps(_mm256_add_ps(a[g][0], b[g][0]), s));
			if (two)
				_mm256_storeu_ps(og + 8, _mm256_mul_ps(_mm256_add_ps(a[g][1],
										  b[g][1]), s));
		}
	}
#undef MM_F16X8
}

__attribute__((target("avx2,fma,f16c")))
MM_DEF_ATTN_H(mm_attn_h_avx2, mm_attn_hg_avx2)

/* a . b and y += a * x with b, x in f16 (the KV cache, read in place) */
__attribute__((target("avx2,fma,f16c")))
static float mm_dot_h_avx2(const float *a, const void *b, int n)
{
	const uint16_t *h = b;
	__m256 s0 = _mm256_setzero_ps(), s1 = s0;
	__m128 r4;
	int i;
	float r;

	for (i = 0; i + 16 <= n; i += 16) {
		s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_cvtph_ps(
			_mm_loadu_si128((const __m128i *)(h + i))), s0);
		s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_cvtph_ps(
			_mm_loadu_si128((const __m128i *)(h + i + 8))), s1);
	}
	for (; i + 8 <= n; i += 8)
		s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_cvtph_ps(
			_mm_loadu_si128((const __m128i *)(h + i))), s0);
	s0 = _mm256_add_ps(s0, s1);
	r4 = _mm_add_ps(_mm256_castps256_ps128(s0), _mm256_extractf128_ps(s0, 1));
	r4 = _mm_add_ps(r4, _mm_movehl_ps(r4, r4));
	r4 = _mm_add_ss(r4, _mm_movehdup_ps(r4));
	r = _mm_cvtss_f32(r4);
	for (; i < n; i++)
		r += a[i] * mm_f16_to_f32(h[i]);
	return r;
}

__attribute__((target("avx2,fma,f16c")))
static void mm_axpy_h_avx2(float *y, float a, const void *x, int n)
{
	const uint16_t *h = x;
	const __m256 va = _mm256_set1_ps(a);
	int i;

	for (i = 0; i + 8 <= n; i += 8)
		_mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_cvtph_ps(
			_mm_loadu_si128((const __m128i *)(h + i))),
			_mm256_loadu_ps(y + i)));
	for (; i < n; i++)
		y[i] += a * mm_f16_to_f32(h[i]);
}
#endif

#if defined(__aarch64__)
#include <arm_neon.h>

/*
 * arm64: the same helpers on 4 NEON lanes (NEON and the f16 conversions
 * are part of the base AArch64 ISA, so there is no run-time choice).
 * The portable loops converted each F16 cache value with a call.
 */

/* 4 f16 values at h as f32 (fcvtl) */
static inline float32x4_t mm_h4(const void *h)
{
	return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(h)));
}

/* element i of an f32 (f16 = 0) or f16 row, and 4 from i */
static inline float mm_ld1(const void *x, int i, const int f16)
{
	return f16 ? mm_f16_to_f32(((const uint16_t *)x)[i]) : ((const float *)x)[i];
}

static inline float32x4_t mm_ld4(const void *x, int i, const int f16)
{
	return f16 ? mm_h4((const uint16_t *)x + i) : vld1q_f32((const float *)x + i);
}

static inline __attribute__((always_inline)) float
mm_dot_neon_any(const float *a, const void *b, int n, const int f16)
{
	float32x4_t s0 = vdupq_n_f32(0), s1 = s0;
	int i;
	float r;

	for (i = 0; i + 8 <= n; i += 8) {
		s0 = vfmaq_f32(s0, vld1q_f32(a + i), mm_ld4(b, i, f16));
		s1 = vfmaq_f32(s1, vld1q_f32(a + i + 4), mm_ld4(b, i + 4, f16));
	}
	r = vaddvq_f32(vaddq_f32(s0, s1));
	for (; i < n; i++)
		r += a[i] * mm_ld1(b, i, f16);
	return r;
}

static inline __attribute__((always_inline)) void
mm_axpy_neon_any(float *y, float a, const void *x, int n, const int f16)
{
	int i;

	for (i = 0; i + 4 <= n; i += 4)
		vst1q_f32(y + i, vfmaq_n_f32(vld1q_f32(y + i), mm_ld4(x, i, f16), a));
	for (; i < n; i++)
		y[i] += a * mm_ld1(x, i, f16);
}

static float mm_dot_neon(const float *a, const float *b, int n)
{
	return mm_dot_neon_any(a, b, n, 0);
}

static float mm_dot_h_neon(const float *a, const void *b, int n)
{
	return mm_dot_neon_any(a, b, n, 1);
}

static void mm_axpy_neon(float *y, float a, const float *x, int n)
{
	mm_axpy_neon_any(y, a, x, n, 0);
}

static void mm_axpy_h_neon(float *y, float a, const void *x, int n)
{
	mm_axpy_neon_any(y, a, x, n, 1);
}

static void mm_f16_row_neon(const void *src, float *dst, int n)
{
	int i;

	for (i = 0; i + 4 <= n; i += 4)
		vst1q_f32(dst + i, mm_h4((const uint16_t *)src + i));
	for (; i < n; i++)
		dst[i] = mm_ld1(src, i, 1);
}

/* exp(x) on 4 lanes for x <= 0, as mm_exp_neg_avx2() */
static inline float32x4_t mm_exp_neg_neon(float32x4_t x)
{
	const float32x4_t n = vrndnq_f32(vmulq_n_f32(x, 1.44269504f));
	float32x4_t r = vfmsq_n_f32(x, n, 0.693145752f);
	float32x4_t p = vdupq_n_f32(1.0f / 720);
	int32x4_t e;

	r = vfmsq_n_f32(r, n, 1.42860677e-6f);
	p = vfmaq_f32(vdupq_n_f32(1.0f / 120), p, r);
	p = vfmaq_f32(vdupq_n_f32(1.0f / 24), p, r);
	p = vfmaq_f32(vdupq_n_f32(1.0f / 6), p, r);
	p = vfmaq_f32(vdupq_n_f32(0.5f), p, r);
	p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
	p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
	e = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23);
	p = vmulq_f32(p, vreinterpretq_f32_s32(e));
	return vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(p),
					       vcgeq_f32(x, vdupq_n_f32(-87.0f))));
}

/* as mm_silu_mul_avx2() */
static void mm_silu_mul_neon(float *g, const float *u, int n)
{
	const float32x4_t one = vdupq_n_f32(1.0f);
	int i;

	for (i = 0; i + 4 <= n; i += 4) {
		const float32x4_t x = vld1q_f32(g + i);
		const float32x4_t e = mm_exp_neg_neon(vnegq_f32(vabsq_f32(x)));
		const float32x4_t num = vbslq_f32(vcltq_f32(x, vdupq_n_f32(0)), e, one);

		vst1q_f32(g + i, vmulq_f32(vmulq_f32(x, vdivq_f32(num, vaddq_f32(one, e))),
					   vld1q_f32(u + i)));
	}
	mm_silu_mul_c(g + i, u + i, n - i);
}

/*
 * Attention of G <= 3 query heads that share one KV head over npos F16
 * rows, the plan of mm_attn_hg_avx2() on 4 lanes: each K and V chunk
 * converted once for the group; scores 4 rows a step with one pairwise
 * reduction per 4 rows; V 8 dimensions x 2 rows a step, even and odd rows
 * in separate sums. Each head's sums keep the one-head order, so G does
 * not change the bits. pf: prefetch K rows ahead and the V rows passed.
 */
static inline __attribute__((always_inline)) void
mm_attn_hg_neon(const int G, const float *q, int hd, const uint8_t *k,
		const uint8_t *v, size_t rs, int npos, float scale, float *sc,
		size_t scs, float *o, float *stats, int pf)
{
#define MM_H4(p, t, c) mm_h4((p) + (size_t)(t) * rs + (size_t)(c) * 2)
	float32x4_t mx4[3];
	float mx[3], sum[3];
	int t = 0;

#pragma GCC unroll 3
	for (int g = 0; g < G; g++)
		mx4[g] = vdupq_n_f32(-INFINITY);
	for (; t + 4 <= npos; t += 4) {
		float32x4_t a[3][4];

		if (pf)
			for (int u = t; u < t + 4; u++)
				for (int c = 0; c < hd * 2; c += 64) {
					if (u + MM_ATTN_PF < npos)
						__builtin_prefetch(k + (size_t)(u + MM_ATTN_PF) * rs + c, 0, 3);
					__builtin_prefetch(v + (size_t)u * rs + c, 0, 2);
				}
#pragma GCC unroll 3
		for (int g = 0; g < G; g++)
#pragma GCC unroll 4
			for (int r = 0; r < 4; r++)
				a[g][r] = vdupq_n_f32(0);
		for (int c = 0; c < hd; c += 4) {
#pragma GCC unroll 4
			for (int r = 0; r < 4; r++) {
				const float32x4_t kv = MM_H4(k, t + r, c);

#pragma GCC unroll 3
				for (int g = 0; g < G; g++)
					a[g][r] = vfmaq_f32(a[g][r], vld1q_f32(q + (size_t)g * hd + c), kv);
			}
		}
#pragma GCC unroll 3
		for (int g = 0; g < G; g++) {
			const float32x4_t s4 = vmulq_n_f32(vpaddq_f32(vpaddq_f32(a[g][0], a[g][1]),
								      vpaddq_f32(a[g][2], a[g][3])),
							   scale);

			vst1q_f32(sc + (size_t)g * scs + t, s4);
			mx4[g] = vmaxq_f32(mx4[g], s4);
		}
	}
	for (int g = 0; g < G; g++) {
		const float *qg = q + (size_t)g * hd;
		float *sg = sc + (size_t)g * scs;
		float32x4_t sum4 = vdupq_n_f32(0);
		int u;

		mx[g] = t > 0 ? vmaxvq_f32(mx4[g]) : -INFINITY;
		for (u = t; u < npos; u++) {	/* the last npos % 4 rows */
			float32x4_t a0 = vdupq_n_f32(0);

			for (int c = 0; c < hd; c += 4)
				a0 = vfmaq_f32(a0, vld1q_f32(qg + c), MM_H4(k, u, c));
			sg[u] = vaddvq_f32(a0) * scale;
			mx[g] = sg[u] > mx[g] ? sg[u] : mx[g];
		}
		/* softmax: sg = exp(sg - mx), normalised below */
		for (u = 0; u + 4 <= npos; u += 4) {
			const float32x4_t e = mm_exp_neg_neon(vsubq_f32(vld1q_f32(sg + u),
									vdupq_n_f32(mx[g])));

			vst1q_f32(sg + u, e);
			sum4 = vaddq_f32(sum4, e);
		}
		sum[g] = vaddvq_f32(sum4);
		sum[g] = mm_attn_finish(sg, u, npos, mx[g], sum[g],
					stats ? stats + 2 * g : NULL);
	}
	for (int c = 0; c < hd; c += 8) {
		float32x4_t a[3][2], b[3][2];

#pragma GCC unroll 3
		for (int g = 0; g < G; g++)
			a[g][0] = a[g][1] = b[g][0] = b[g][1] = vdupq_n_f32(0);
		for (t = 0; t < npos; t += 2) {
			const float32x4_t v0 = MM_H4(v, t, c), v1 = MM_H4(v, t, c + 4);

#pragma GCC unroll 3
			for (int g = 0; g < G; g++) {
				const float p = sc[(size_t)g * scs + t];

				a[g][0] = vfmaq_n_f32(a[g][0], v0, p);
				a[g][1] = vfmaq_n_f32(a[g][1], v1, p);
			}
			if (t + 1 == npos)
				break;
			const float32x4_t w0 = MM_H4(v, t + 1, c), w1 = MM_H4(v, t + 1, c + 4);

#pragma GCC unroll 3
			for (int g = 0; g < G; g++) {
				const float p = sc[(size_t)g * scs + t + 1];

				b[g][0] = vfmaq_n_f32(b[g][0], w0, p);
				b[g][1] = vfmaq_n_f32(b[g][1], w1, p);
			}
		}
#pragma GCC unroll 3
		for (int g = 0; g < G; g++) {
			float *og = o + (size_t)g * hd + c;

			vst1q_f32(og, vmulq_n_f32(vaddq_f32(a[g][0], b[g][0]), sum[g]));
			vst1q_f32(og + 4, vmulq_n_f32(vaddq_f32(a[g][1], b[g][1]), sum[g]));
		}
	}
#undef MM_H4
}

MM_DEF_ATTN_H(mm_attn_h_neon, mm_attn_hg_neon)
#endif

static const struct mm_vec mm_vec_c = {
	.name = "c",
	.dot = mm_dot_c,
	.dot_h = mm_dot_h_c,
	.axpy = mm_axpy_c,
	.axpy_h = mm_axpy_h_c,
	.f16_row = mm_f16_row_c,
	.silu_mul = mm_silu_mul_c,
	.attn_h = NULL,
};

#if defined(__x86_64__)
static const struct mm_vec mm_vec_avx2 = {
	.name = "avx2",
	.dot = mm_dot_avx2,
	.dot_h = mm_dot_h_avx2,
	.axpy = mm_axpy_avx2,
	.axpy_h = mm_axpy_h_avx2,
	.f16_row = mm_f16_row_f16c,
	.silu_mul = mm_silu_mul_avx2,
	.attn_h = mm_attn_h_avx2,
};
#endif

#if defined(__aarch64__)
static const struct mm_vec mm_vec_neon = {
	.name = "neon",
	.dot = mm_dot_neon,
	.dot_h = mm_dot_h_neon,
	.axpy = mm_axpy_neon,
	.axpy_h = mm_axpy_h_neon,
	.f16_row = mm_f16_row_neon,
	.silu_mul = mm_silu_mul_neon,
	.attn_h = mm_attn_h_neon,
};
#endif

/*
 * The kernel sets of quant.c need at least what these helpers use (x86:
 * "avx2" = AVX2 + FMA + F16C; "avx512vnni" includes it), so the choice
 * made there (CPU features, MMHAL_KERNELS) is the only one. On arm64 the
 * "scalar" set is the C helpers only when it was asked for on a CPU that
 * has the NEON kernels (MMHAL_KERNELS=scalar); a CPU without the
 * dot-product instructions still gets the NEON helpers (base ISA).
 */
const struct mm_vec *mm_vec_select(const char *kernels)
{
	if (!kernels)
		return &mm_vec_c;
#if defined(__x86_64__)
	if (!strcmp(kernels, "avx2") || !strcmp(kernels, "avx512vnni"))
		return &mm_vec_avx2;
#endif
#if defined(__aarch64__)
	if (strcmp(kernels, "scalar") || !mm_kernels_available("neon"))
		return &mm_vec_neon;
#endif
	return &mm_vec_c;
}

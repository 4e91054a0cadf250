// SPDX-License-Identifier: MIT
/*
 * kern_avx2.c - x86-64 AVX2 + FMA + F16C kernels (built with
 * -mavx2 -mfma -mf16c; only called when cpuid says so).
 *
 * Int8 dot products use ggml's trick: vpmaddubsw(|x|, sign(y, x)) then
 * vpmaddwd with ones (exact: |x| <= 128, |y| <= 127, pair sums fit s16).
 * Q8_0 x Q8_0 matmul tiles 4 W rows x 2 X rows in registers so each
 * loaded block is used 2 or 4 times. Q4_1 and Q6_K use the scalar code.
 */
#include "quant_kern.h"

#include <immintrin.h>
#include <string.h>

/* kern_avx512.c includes this file with MM_VNNI set: the u8 x s8 dot
 * becomes vpdpbusd (AVX-512 VNNI, VL encoding on ymm). */
#ifdef MM_VNNI
#define MM_KERNELS_NAME mm_kernels_avx512vnni
#define MM_KERNELS_STR "avx512vnni"
#else
#define MM_KERNELS_NAME mm_kernels_avx2
#define MM_KERNELS_STR "avx2"
#endif

/* s32 lanes: sum of 4 u8 x s8 products each. */
static inline __m256i mm_dpbusd(__m256i u, __m256i s)
{
#ifdef MM_VNNI
	return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s);
#else
	return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s),
				 _mm256_set1_epi16(1));
#endif
}

static inline float mm_hsum(__m256 v)
{
	__m128 s = _mm_add_ps(_mm256_castps256_ps128(v),
			      _mm256_extractf128_ps(v, 1));

	s = _mm_add_ps(s, _mm_movehl_ps(s, s));
	s = _mm_add_ss(s, _mm_movehdup_ps(s));
	return _mm_cvtss_f32(s);
}

static inline float mm_h2f(uint16_t h)
{
	return _cvtsh_ss(h);
}

/* s32 lanes of sum(x*y) over byte pairs/quads, x and y signed bytes. */
static inline __m256i mm_dot_i8(__m256i x, __m256i y)
{
	const __m256i ax = _mm256_sign_epi8(x, x);
	const __m256i sy = _mm256_sign_epi8(y, x);

	return mm_dpbusd(ax, sy);
}

static inline __m256i mm_nibbles(const uint8_t *p)
{
	const __m128i t = _mm_loadu_si128((const __m128i *)p);
	const __m256i b = _mm256_set_m128i(_mm_srli_epi16(t, 4), t);

	return _mm256_and_si256(b, _mm256_set1_epi8(0x0F));
}

/* ---- f32 / f16 / bf16 ------------------------------------------------- */

static void mm_avx2_gemv_f32(int64_t k, const void *w, size_t ws,
			     const void *xq, float *y, int64_t nr)
{
	const float *x = xq;

	for (int64_t r = 0; r < nr; r++) {
		const float *row = (const float *)((const uint8_t *)w + r * ws);
		__m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
		int64_t i = 0;
		float s;

		for (; i + 16 <= k; i += 16) {
			a0 = _mm256_fmadd_ps(_mm256_loadu_ps(row + i),
					     _mm256_loadu_ps(x + i), a0);
			a1 = _mm256_fmadd_ps(_mm256_loadu_ps(row + i + 8),
					     _mm256_loadu_ps(x + i + 8), a1);
		}
		s = mm_hsum(_mm256_add_ps(a0, a1));
		for (; i < k; i++)
			s += row[i] * x[i];
		y[r] = s;
	}
}

static void mm_avx2_gemv_f16(int64_t k, const void *w, size_t ws,
			     const void *xq, float *y, int64_t nr)
{
	const float *x = xq;

	for (int64_t r = 0; r < nr; r++) {
		const uint16_t *row = (const uint16_t *)((const uint8_t *)w + r * ws);
		__m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
		int64_t i = 0;
		float s;

		for (; i + 16 <= k; i += 16) {
			__m256 w0 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(row + i)));
			__m256 w1 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(row + i + 8)));

			a0 = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x + i), a0);
			a1 = _mm256_fmadd_ps(w1, _mm256_loadu_ps(x + i + 8), a1);
		}
		s = mm_hsum(_mm256_add_ps(a0, a1));
		for (; i < k; i++)
			s += mm_h2f(row[i]) * x[i];
		y[r] = s;
	}
}

static void mm_avx2_gemv_bf16(int64_t k, const void *w, size_t ws,
			      const void *xq, float *y, int64_t nr)
{
	const float *x = xq;

	for (int64_t r = 0; r < nr; r++) {
		const uint16_t *row = (const uint16_t *)((const uint8_t *)w + r * ws);
		__m256 a0 = _mm256_setzero_ps();
		int64_t i = 0;
		float s;

		for (; i + 8 <= k; i += 8) {
			__m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(row + i)));
			__m256 w0 = _mm256_castsi256_ps(_mm256_slli_epi32(h, 16));

			a0 = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x + i), a0);
		}
		s = mm_hsum(a0);
		for (; i < k; i++)
			s += mm_bf16_to_f32(row[i]) * x[i];
		y[r] = s;
	}
}

/* ---- Q8_0 / Q4_0 ------------------------------------------------------ */

/*
 * Decode dot products, 8 blocks per step: the 8 per-block s32 vectors are
 * reduced with vphaddd to one vector of 8 block sums, so the f16 scales,
 * int->float conversion and FMA are paid once per 8 blocks, not per block.
 * x's sign is moved onto w (vpsignb(w, x)) and |x| is the unsigned side.
 * Q4_0 uses vpmaddubsw(q, x) with q in 0..15 and subtracts 8*sum(x_b).
 */
static inline __m256i mm_reduce8(const __m256i s[8])
{
	const __m256i t0 = _mm256_hadd_epi32(s[0], s[1]);
	const __m256i t1 = _mm256_hadd_epi32(s[2], s[3]);
	const __m256i t2 = _mm256_hadd_epi32(s[4], s[5]);
	const __m256i t3 = _mm256_hadd_epi32(s[6], s[7]);
	const __m256i u0 = _mm256_hadd_epi32(t0, t1);
	const __m256i u1 = _mm256_hadd_epi32(t2, t3);

	return _mm256_add_epi32(_mm256_permute2x128_si256(u0, u1, 0x20),
				_mm256_permute2x128_si256(u0, u1, 0x31));
}

#define MM_D8(b, stride)						\
	_mm256_cvtph_ps(_mm_set_epi16(					\
		*(const short *)((const uint8_t *)(b) + 7 * (stride)),	\
		*(const short *)((const uint8_t *)(b) + 6 * (stride)),	\
		*(const short *)((const uint8_t *)(b) + 5 * (stride)),	\
		*(const short *)((const uint8_t *)(b) + 4 * (stride)),	\
		*(const short *)((const uint8_t *)(b) + 3 * (stride)),	\
		*(const short *)((const uint8_t *)(b) + 2 * (stride)),	\
		*(const short *)((const uint8_t *)(b) + 1 * (stride)),	\
		*(const short *)((const uint8_t *)(b) + 0 * (stride))))

/* 16 nibbles -> 32 bytes (low nibbles, then high) via a 64-bit shift. */
static inline __m256i mm_nibbles_bc(const uint8_t *p)
{
	const __m256i b = _mm256_broadcastsi128_si256(
		_mm_loadu_si128((const __m128i *)p));

	return _mm256_and_si256(_mm256_srlv_epi64(b, _mm256_set_epi64x(4, 4, 0, 0)),
				_mm256_set1_epi8(0x0F));
}

#define MM_MAXNB 8192	/* k <= 262144 on the fast path */

static void mm_avx2_gemv_q8_0(int64_t k, const void *w, size_t ws,
			      const void *xq, float *y, int64_t nr)
{
	const struct mm_block_q8_0 *x = xq;
	const int64_t nb = k / MM_QK, nb8 = nb & ~7;
	float xd[MM_MAXNB];

	if (nb > MM_MAXNB) {
		mm_scalar_gemv_q8_0(k, w, ws, xq, y, nr);
		return;
	}
	for (int64_t i = 0; i < nb; i++)
		xd[i] = mm_h2f(x[i].d);
	for (int64_t r = 0; r < nr; r++) {
		const struct mm_block_q8_0 *b =
			(const void *)((const uint8_t *)w + r * ws);
		__m256 acc = _mm256_setzero_ps();
		float tail = 0;

		for (int64_t g = 0; g < nb8; g += 8) {
			__m256i s[8];

			for (int u = 0; u < 8; u++) {
				const __m256i xv = _mm256_loadu_si256((const __m256i *)x[g + u].qs);
				const __m256i wv = _mm256_loadu_si256((const __m256i *)b[g + u].qs);

				s[u] = mm_dpbusd(_mm256_abs_epi8(xv),
						 _mm256_sign_epi8(wv, xv));
			}
			const __m256 sc = _mm256_mul_ps(MM_D8(&b[g].d, sizeof(*b)),
							_mm256_loadu_ps(xd + g));

			acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(mm_reduce8(s)), sc, acc);
		}
		for (int64_t i = nb8; i < nb; i++) {
			__m256i p = mm_dot_i8(_mm256_loadu_si256((const __m256i *)b[i].qs),
					      _mm256_loadu_si256((const __m256i *)x[i].qs));

			tail += mm_hsum(_mm256_cvtepi32_ps(p)) * (mm_h2f(b[i].d) * xd[i]);
		}
		y[r] = mm_hsum(acc) + tail;
	}
}

static void mm_avx2_gemv_q4_0(int64_t k, const void *w, size_t ws,
			      const void *xq, float *y, int64_t nr)
{
	const struct mm_block_q8_0 *x = xq;
	const int64_t nb = k / MM_QK, nb8 = nb & ~7;
	float xd[MM_MAXNB];
	int32_t xs8[MM_MAXNB];

	if (nb > MM_MAXNB) {
		mm_scalar_gemv_q4_0(k, w, ws, xq, y, nr);
		return;
	}
	for (int64_t i = 0; i < nb; i++) {
		int s = 0;

		for (int j = 0; j < MM_QK; j++)
			s += x[i].qs[j];
		xd[i] = mm_h2f(x[i].d);
		xs8[i] = 8 * s;
	}
	for (int64_t r = 0; r < nr; r++) {
		const struct mm_block_q4_0 *b =
			(const void *)((const uint8_t *)w + r * ws);
		__m256 acc = _mm256_setzero_ps();
		float tail = 0;

		for (int64_t g = 0; g < nb8; g += 8) {
			__m256i s[8];

			for (int u = 0; u < 8; u++)
				s[u] = mm_dpbusd(mm_nibbles_bc(b[g + u].qs),
					_mm256_loadu_si256((const __m256i *)x[g + u].qs));
			const __m256i v = _mm256_sub_epi32(mm_reduce8(s),
				_mm256_loadu_si256((const __m256i *)(xs8 + g)));
			const __m256 sc = _mm256_mul_ps(MM_D8(&b[g].d, sizeof(*b)),
							_mm256_loadu_ps(xd + g));

			acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(v), sc, acc);
		}
		for (int64_t i = nb8; i < nb; i++) {
			__m256i q = _mm256_sub_epi8(mm_nibbles(b[i].qs), _mm256_set1_epi8(8));
			__m256i p = mm_dot_i8(q, _mm256_loadu_si256((const __m256i *)x[i].qs));

			tail += mm_hsum(_mm256_cvtepi32_ps(p)) * (mm_h2f(b[i].d) * xd[i]);
		}
		y[r] = mm_hsum(acc) + tail;
	}
}

/*
 * Register tile: MR W rows x NR X rows. W blocks are loaded once per tile
 * (as |w| and kept), X blocks once per tile; the sign of w moves onto x.
 */
#define MM_TILE_MR 4
#define MM_TILE_NR 2

#define MM_DEF_GEMM_TILE(fname, WT, LOADW)				\
static inline void fname(int64_t nb, const uint8_t *w, size_t ws,	\
			 const uint8_t *xq, size_t xs, float *Y,		\
			 size_t ldy, int mr, int nr)				\
{									\
	__m256 acc[MM_TILE_MR][MM_TILE_NR];				\
	const WT *wb[MM_TILE_MR];					\
	const struct mm_block_q8_0 *xb[MM_TILE_NR];			\
									\
	for (int i = 0; i < MM_TILE_MR; i++) {				\
		wb[i] = (const void *)(w + (i < mr ? i : 0) * ws);	\
		for (int j = 0; j < MM_TILE_NR; j++)			\
			acc[i][j] = _mm256_setzero_ps();			\
	}								\
	for (int j = 0; j < MM_TILE_NR; j++)				\
		xb[j] = (const void *)(xq + (j < nr ? j : 0) * xs);	\
	for (int64_t b = 0; b < nb; b++) {				\
		__m256i xv[MM_TILE_NR];					\
		float dx[MM_TILE_NR];					\
									\
		for (int j = 0; j < MM_TILE_NR; j++) {			\
			xv[j] = _mm256_loadu_si256((const __m256i *)xb[j][b].qs); \
			dx[j] = mm_h2f(xb[j][b].d);			\
		}							\
		for (int i = 0; i < MM_TILE_MR; i++) {			\
			const __m256i wv = LOADW(wb[i][b].qs);		\
			const __m256i aw = _mm256_sign_epi8(wv, wv);	\
			const float dw = mm_h2f(wb[i][b].d);		\
									\
			for (int j = 0; j < MM_TILE_NR; j++) {		\
				__m256i p = mm_dpbusd(aw,		\
					_mm256_sign_epi8(xv[j], wv));	\
				acc[i][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), \
					_mm256_set1_ps(dw * dx[j]), acc[i][j]); \
			}						\
		}							\
	}								\
	for (int i = 0; i < mr; i++)					\
		for (int j = 0; j < nr; j++)				\
			Y[j * ldy + i] = mm_hsum(acc[i][j]);		\
}

#define MM_LOAD_Q8(p) _mm256_loadu_si256((const __m256i *)(p))
#define MM_LOAD_Q4(p) _mm256_sub_epi8(mm_nibbles(p), _mm256_set1_epi8(8))

MM_DEF_GEMM_TILE(mm_avx2_tile_q8_0, struct mm_block_q8_0, MM_LOAD_Q8)
MM_DEF_GEMM_TILE(mm_avx2_tile_q4_0, struct mm_block_q4_0, MM_LOAD_Q4)

static void mm_avx2_gemm_q8_0(int64_t k, const void *w, size_t ws,
			      const void *xq, size_t xs, float *Y, size_t ldy,
			      int64_t mr, int64_t nc)
{
	for (int64_t j = 0; j < nc; j += MM_TILE_NR)
		for (int64_t i = 0; i < mr; i += MM_TILE_MR)
			mm_avx2_tile_q8_0(k / MM_QK, (const uint8_t *)w + i * ws, ws,
					  (const uint8_t *)xq + j * xs, xs,
					  Y + j * ldy + i, ldy,
					  mr - i < MM_TILE_MR ? (int)(mr - i) : MM_TILE_MR,
					  nc - j < MM_TILE_NR ? (int)(nc - j) : MM_TILE_NR);
}

static void mm_avx2_gemm_q4_0(int64_t k, const void *w, size_t ws,
			      const void *xq, size_t xs, float *Y, size_t ldy,
			      int64_t mr, int64_t nc)
{
	for (int64_t j = 0; j < nc; j += MM_TILE_NR)
		for (int64_t i = 0; i < mr; i += MM_TILE_MR)
			mm_avx2_tile_q4_0(k / MM_QK, (const uint8_t *)w + i * ws, ws,
					  (const uint8_t *)xq + j * xs, xs,
					  Y + j * ldy + i, ldy,
					  mr - i < MM_TILE_MR ? (int)(mr - i) : MM_TILE_MR,
					  nc - j < MM_TILE_NR ? (int)(nc - j) : MM_TILE_NR);
}

/* ---- Q4_K x Q8_K ------------------------------------------------------ */

static void mm_avx2_gemv_q4_k(int64_t k, const void *w, size_t ws,
			      const void *xq, float *y, int64_t nr)
{
	const struct mm_block_q8_k *x = xq;
	const int64_t nb = k / MM_QK_K;
	const uint32_t kmask1 = 0x3f3f3f3f, kmask2 = 0x0f0f0f0f,
		       kmask3 = 0x03030303;
	const __m256i m4 = _mm256_set1_epi8(0xF);

	for (int64_t r = 0; r < nr; r++) {
		const struct mm_block_q4_k *b =
			(const void *)((const uint8_t *)w + r * ws);
		__m256 acc = _mm256_setzero_ps();
		__m128 acc_m = _mm_setzero_ps();

		for (int64_t i = 0; i < nb; i++) {
			const float d = x[i].d * mm_h2f(b[i].d);
			const float dmin = -x[i].d * mm_h2f(b[i].dmin);
			uint32_t utmp[4];

			memcpy(utmp, b[i].scales, 12);
			utmp[3] = ((utmp[2] >> 4) & kmask2) | (((utmp[1] >> 6) & kmask3) << 4);
			const uint32_t uaux = utmp[1] & kmask1;
			utmp[1] = (utmp[2] & kmask2) | (((utmp[0] >> 6) & kmask3) << 4);
			utmp[2] = uaux;
			utmp[0] &= kmask1;

			const __m256i mins_and_scales = _mm256_cvtepu8_epi16(
				_mm_loadu_si128((const __m128i *)utmp));
			const __m256i q8sums = _mm256_loadu_si256((const __m256i *)x[i].bsums);
			const __m128i q8s = _mm_hadd_epi16(_mm256_castsi256_si128(q8sums),
							   _mm256_extracti128_si256(q8sums, 1));
			const __m128i prod = _mm_madd_epi16(
				_mm256_extracti128_si256(mins_and_scales, 1), q8s);

			acc_m = _mm_fmadd_ps(_mm_set1_ps(dmin), _mm_cvtepi32_ps(prod), acc_m);

			const uint8_t *sc = (const uint8_t *)utmp;
			const uint8_t *q4 = b[i].qs;
			const int8_t *q8 = x[i].qs;
			__m256i sumi = _mm256_setzero_si256();

			for (int j = 0; j < MM_QK_K / 64; j++) {
				const __m256i scale_l = _mm256_set1_epi16(sc[2 * j]);
				const __m256i scale_h = _mm256_set1_epi16(sc[2 * j + 1]);
				const __m256i q4bits = _mm256_loadu_si256((const __m256i *)q4);
				const __m256i q4l = _mm256_and_si256(q4bits, m4);
				const __m256i q4h = _mm256_and_si256(_mm256_srli_epi16(q4bits, 4), m4);
				const __m256i q8l = _mm256_loadu_si256((const __m256i *)q8);
				const __m256i q8h = _mm256_loadu_si256((const __m256i *)(q8 + 32));
				__m256i p16l = _mm256_maddubs_epi16(q4l, q8l);
				__m256i p16h = _mm256_maddubs_epi16(q4h, q8h);

				p16l = _mm256_madd_epi16(scale_l, p16l);
				p16h = _mm256_madd_epi16(scale_h, p16h);
				sumi = _mm256_add_epi32(sumi, _mm256_add_epi32(p16l, p16h));
				q4 += 32;
				q8 += 64;
			}
			acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
		}
		acc_m = _mm_add_ps(acc_m, _mm_movehl_ps(acc_m, acc_m));
		acc_m = _mm_add_ss(acc_m, _mm_movehdup_ps(acc_m));
		y[r] = mm_hsum(acc) + _mm_cvtss_f32(acc_m);
	}
}

const struct mm_kernels MM_KERNELS_NAME = {
	.name = MM_KERNELS_STR,
	.gemv = {
		[MM_TYPE_F32] = mm_avx2_gemv_f32,
		[MM_TYPE_F16] = mm_avx2_gemv_f16,
		[MM_TYPE_BF16] = mm_avx2_gemv_bf16,
		[MM_TYPE_Q8_0] = mm_avx2_gemv_q8_0,
		[MM_TYPE_Q4_0] = mm_avx2_gemv_q4_0,
		[MM_TYPE_Q4_1] = mm_scalar_gemv_q4_1,
		[MM_TYPE_Q4_K] = mm_avx2_gemv_q4_k,
		[MM_TYPE_Q6_K] = mm_scalar_gemv_q6_k,
	},
	.gemm = {
		[MM_TYPE_Q8_0] = mm_avx2_gemm_q8_0,
		[MM_TYPE_Q4_0] = mm_avx2_gemm_q4_0,
	},
};

/* SPDX-License-Identifier: MIT */
/*
 * kern_x86.h - the x86-64 kernel sets, written once: kern_avx2.c
 * includes it as the AVX2 + FMA + F16C set, kern_avx512.c with MM_VNNI
 * defined as the AVX-512 VNNI set; each object is built with its ISA's
 * flags and only called when cpuid says so. Nothing else includes it.
 *
 * Int8 dot products use ggml's trick: vpmaddubsw(|x|, sign(y, x)) then
 * vpmaddwd with ones (exact: |x| <= 128, |y| <= 127, pair sums fit s16).
 * Q8_0/Q4_0 decode runs 4 (Q4_0: 8) W rows at a time sharing the
 * activation loads, one float sum per row (Q4_0: one per 8 rows, the
 * block's integer sums reduced horizontally first), with
 * a linear software prefetch of the next group; Q4_K/Q6_K decode a row at
 * a time (ggml's layout handling with fewer vector ops per block),
 * prefetching MM_PF_ROWS rows ahead.
 * Prefill runs packed GEMMs over W panels (below).
 * Q4_1 decode shares the Q4_0 8-row loop (mm_q4_rows8()); its prefill
 * runs that decode kernel per X row.
 */
#include "quant_kern.h"

#include <immintrin.h>
#include <string.h>

/* With MM_VNNI (kern_avx512.c) the u8 x s8 dot becomes vpdpbusd
 * (AVX-512 VNNI, VL encoding on ymm). */
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
 * Decode: 4 W rows at a time share each activation block (and |x|); each
 * row keeps its own 8-lane float sum, so a block costs per row one u8 x s8
 * dot (x's sign moved onto w, |x| unsigned), one conversion and one FMA
 * with the scale dw*dx taken by one in-lane shuffle from the 4 rows'
 * scales converted together (11% faster in cache than a scalar f16
 * conversion and broadcast per row). Measured on Zen 3, this
 * is 2.3x faster than reducing 4 rows x 2 blocks with vphaddd and
 * building scale vectors with lane permutes: cross-lane permutes in the
 * block loop were the bottleneck (llvm-mca does not model it). Rows are
 * horizontally summed once at the end. Q4_0 uses vpmaddubsw(q, x) with q
 * in 0..15; the -8 offset is one FMA per block for the 4 rows with the
 * activation row's 8 * sum(x_b) (mm_q4_0_act_sums()). While a group runs,
 * the next group's bytes are prefetched.
 */
#ifndef MM_PF_HINT
#define MM_PF_HINT _MM_HINT_T1
#endif
#ifndef MM_PF_GROUPS
#define MM_PF_GROUPS 1	/* prefetch distance in row groups (0: none) */
#endif
/*
 * n bytes from p, a line at a time. Always inlined: GCC's pure-const pass
 * takes a function holding only prefetches for one without effects and
 * deletes the calls that it has not inlined yet (the Q4_0 loop lost its
 * prefetch that way).
 */
static inline __attribute__((always_inline)) void
mm_pf_span(const char *p, size_t n)
{
	for (size_t o = 0; o < n; o += 64)
		_mm_prefetch(p + o, MM_PF_HINT);
}

/* Groups of g rows (ws apart: contiguous), in step with block i: the same
 * g rows x 1 block of the group MM_PF_GROUPS after the one at next - g ws */
#define MM_PF_NEXT(next, i, bs, g) do {					\
	if (MM_PF_GROUPS)						\
		mm_pf_span((const char *)(next) + (i) * (g) * (bs) +	\
			   (MM_PF_GROUPS - 1) * (g) * ws, (g) * (bs));	\
} while (0)

/* Single-row kernels: block i of the row MM_PF_ROWS rows further */
#ifndef MM_PF_ROWS
#define MM_PF_ROWS 4
#endif
#define MM_PF_ROW(rowp, i, bs) do {					\
	if (MM_PF_ROWS)							\
		mm_pf_span((const char *)(rowp) + MM_PF_ROWS * ws +	\
			   (i) * (bs), (bs));				\
} while (0)

/* At the start of a call: the first bytes of its rows, all at once (the
 * in-loop prefetch only reaches a group ahead). */
#ifndef MM_PF_START
#define MM_PF_START 8192
#endif
static inline __attribute__((always_inline)) void
mm_pf_start(const void *w, size_t bytes)
{
	const char *p = w;

	bytes = bytes < MM_PF_START ? bytes : MM_PF_START;
	for (size_t o = 0; o < bytes; o += 64)
		_mm_prefetch(p + o, _MM_HINT_T0);
}

/*
 * Kernels that read one stream (the 8-row layouts): each line once, those
 * that start in the n bytes at p, MM_PF_AHEAD bytes on. Measured on Zen 3
 * with Q8_0_R8 (model-runtime.rst): 1-3 KiB all beat no prefetch, 1.5 KiB
 * best; a span per block (re-prefetching the lines it shares with the
 * next) or one line in two was worse.
 */
#ifndef MM_PF_AHEAD
#define MM_PF_AHEAD 1536
#endif
static inline __attribute__((always_inline)) void
mm_pf_ahead(const uint8_t *p, size_t n)
{
	const uintptr_t a = (uintptr_t)p + MM_PF_AHEAD;

	for (uintptr_t o = (a + 63) & ~(uintptr_t)63; o < a + n; o += 64)
		_mm_prefetch((const char *)o, MM_PF_HINT);
}

/* f16 scales of 4 rows at block i, packed in a general register */
#define MM_D4(r0, r1, r2, r3, i)					\
	((uint64_t)(r0)[i].d | (uint64_t)(r1)[i].d << 16 |		\
	 (uint64_t)(r2)[i].d << 32 | (uint64_t)(r3)[i].d << 48)

/* y[0..3] = the sums of a0..a3, minus c */
static inline void mm_store_rows4(float *y, __m256 a0, __m256 a1, __m256 a2,
				  __m256 a3, __m128 c)
{
	const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1),
					_mm256_hadd_ps(a2, a3));

	_mm_storeu_ps(y, _mm_sub_ps(_mm_add_ps(_mm256_castps256_ps128(h),
					       _mm256_extractf128_ps(h, 1)), c));
}

/*
 * One Q8_0 row-block: acc + float(w . x) * s, the dot as |x| . sign(w, x)
 * (u8 x s8). The file-layout and Q8_0_R8 kernels both take this step, so
 * a matrix gives the same bits in either layout.
 */
static inline __m256 mm_q8_step(__m256 acc, __m256i ax, __m256i xv,
				const void *q, __m256 s)
{
	return _mm256_fmadd_ps(_mm256_cvtepi32_ps(mm_dpbusd(ax, _mm256_sign_epi8(
		_mm256_loadu_si256((const __m256i *)q), xv))), s, acc);
}

static void mm_avx2_gemv_q8_0(int64_t k, const void *w, size_t ws,
			      const void *xq, float *y, int64_t nr)
{
	const struct mm_block_q8_0 *x = xq;
	const int64_t nb = k / MM_QK;
	int64_t r = 0;

	mm_pf_start(w, nr * ws);
	for (; r + 4 <= nr; r += 4) {
		const uint8_t *row = (const uint8_t *)w + r * ws;
		const struct mm_block_q8_0 *b0 = (const void *)row;
		const struct mm_block_q8_0 *b1 = (const void *)(row + ws);
		const struct mm_block_q8_0 *b2 = (const void *)(row + 2 * ws);
		const struct mm_block_q8_0 *b3 = (const void *)(row + 3 * ws);
		__m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;

		for (int64_t i = 0; i < nb; i++) {
			const __m256i xv = _mm256_loadu_si256((const __m256i *)x[i].qs);
			const __m256i ax = _mm256_sign_epi8(xv, xv);
			/* the 4 rows' dw * dx in both lanes, one shuffle each */
			const __m128 s4 = _mm_mul_ps(_mm_cvtph_ps(_mm_cvtsi64_si128(
				(long long)MM_D4(b0, b1, b2, b3, i))),
				_mm_set1_ps(mm_h2f(x[i].d)));
			const __m256 s8 = _mm256_set_m128(s4, s4);

			MM_PF_NEXT(row + 4 * ws, i, sizeof(*b0), 4);
#define MM_Q8R(acc, bb, n)						\
	acc = mm_q8_step(acc, ax, xv, (bb)[i].qs, _mm256_shuffle_ps(s8, s8, (n) * 0x55))
			MM_Q8R(a0, b0, 0);
			MM_Q8R(a1, b1, 1);
			MM_Q8R(a2, b2, 2);
			MM_Q8R(a3, b3, 3);
#undef MM_Q8R
		}
		mm_store_rows4(y + r, a0, a1, a2, a3, _mm_setzero_ps());
	}
	for (; r < nr; r++) {
		const struct mm_block_q8_0 *b =
			(const void *)((const uint8_t *)w + r * ws);
		__m256 acc = _mm256_setzero_ps();

		for (int64_t i = 0; i < nb; i++) {
			__m256i p = mm_dot_i8(_mm256_loadu_si256((const __m256i *)b[i].qs),
					      _mm256_loadu_si256((const __m256i *)x[i].qs));

			acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p),
					      _mm256_set1_ps(mm_h2f(b[i].d) * mm_h2f(x[i].d)), acc);
		}
		y[r] = mm_hsum(acc);
	}
}

#ifndef MM_VNNI
/*
 * Q8_0_R8 decode (the layout in quant.h, made at load by mm_repack();
 * AVX2 set only until it is measured on a VNNI machine): the float steps
 * of mm_avx2_gemv_q8_0() in the same order, so the same bits, 8 rows at a
 * time. The gain is in the reads: a group is one stream, where the file's
 * rows are 4 streams ws apart, and the 8 scales are one load
 * (mm_pf_ahead() keeps the stream's prefetch ahead of the loop). Cold,
 * 2 threads on Zen 3 (3 alternating rounds): 0.94 MB matrices 28-29 ->
 * 32-34 GB/s, 4096 x 4096 26-33 -> 34-37 GB/s, with a streaming read of
 * about 35-37.
 */
static void mm_avx2_gemv_q8_0_r8(int64_t k, const void *w, size_t ws,
				 const void *xq, float *y, int64_t nr)
{
	const struct mm_block_q8_0 *x = xq;
	const int64_t nb = k / MM_QK;
	const size_t bs = 8 * sizeof(struct mm_block_q8_0);	/* 272 */
	int64_t r = 0;

	mm_pf_start(w, nr * ws);
	for (; r + 8 <= nr; r += 8) {
		const uint8_t *grp = (const uint8_t *)w + r * ws;
		__m256 a[8];

#pragma GCC unroll 8
		for (int j = 0; j < 8; j++)
			a[j] = _mm256_setzero_ps();
		for (int64_t i = 0; i < nb; i++) {
			const uint8_t *blk = grp + i * bs;
			const __m256i xv = _mm256_loadu_si256((const __m256i *)x[i].qs);
			const __m256i ax = _mm256_sign_epi8(xv, xv);
			/* the 8 rows' dw * dx; rows 0-3, 4-7 in both lanes */
			const __m256 s8 = _mm256_mul_ps(
				_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)blk)),
				_mm256_set1_ps(mm_h2f(x[i].d)));
			const __m256 sv[2] = { _mm256_permute2f128_ps(s8, s8, 0x00),
					       _mm256_permute2f128_ps(s8, s8, 0x11) };

			mm_pf_ahead(blk, bs);
#define MM_Q8R8(j)							\
	a[j] = mm_q8_step(a[j], ax, xv, blk + mm_r8_qbase(MM_TYPE_Q8_0_R8) + MM_QK * (j), \
			  _mm256_shuffle_ps(sv[(j) / 4], sv[(j) / 4], ((j) % 4) * 0x55))
			MM_Q8R8(0);
			MM_Q8R8(1);
			MM_Q8R8(2);
			MM_Q8R8(3);
			MM_Q8R8(4);
			MM_Q8R8(5);
			MM_Q8R8(6);
			MM_Q8R8(7);
#undef MM_Q8R8
		}
		mm_store_rows4(y + r, a[0], a[1], a[2], a[3], _mm_setzero_ps());
		mm_store_rows4(y + r + 4, a[4], a[5], a[6], a[7], _mm_setzero_ps());
	}
	if (r < nr)	/* the rows past the last full group are Q8_0 rows */
		mm_avx2_gemv_q8_0(k, (const uint8_t *)w + r * ws, ws, xq, y + r,
				  nr - r);
}
#endif

/* ---- Q5_0 x Q8_0 ------------------------------------------------------ */

/* Bit 4 (0x10) of 32 Q5_0 values: byte j of a lane takes byte sel[j] of
 * src's lane (qh words), keeps bit j % 8 and turns it into 0x10 or 0. */
static inline __m256i mm_q5_bits(__m256i src, __m256i sel)
{
	const __m256i bit = _mm256_set1_epi64x(0x8040201008040201LL);
	const __m256i b = _mm256_and_si256(_mm256_shuffle_epi8(src, sel), bit);

	return _mm256_and_si256(_mm256_cmpeq_epi8(b, bit), _mm256_set1_epi8(0x10));
}

/* The 5-bit values q (0..31) of a Q5_0 block (nibbles qs, bits qh), in
 * element order: byte j takes qh byte j / 8 */
static inline __m256i mm_q5_values(const uint8_t *qs, const uint8_t *qh)
{
	uint32_t h;

	memcpy(&h, qh, 4);
	return _mm256_or_si256(mm_nibbles(qs), mm_q5_bits(
		_mm256_set1_epi32((int)h),
		_mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
				 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3)));
}

/* 16 nibbles -> 32 bytes (low nibbles, then high) via a 64-bit shift. */
static inline __m256i mm_nibbles_bc(const uint8_t *p)
{
	const __m256i b = _mm256_broadcastsi128_si256(
		_mm_loadu_si128((const __m128i *)p));

	return _mm256_and_si256(_mm256_srlv_epi64(b, _mm256_set_epi64x(4, 4, 0, 0)),
				_mm256_set1_epi8(0x0F));
}

/*
 * One pair of row-blocks: u1 . s1 + u2 . s2 per lane (u unsigned <= 15,
 * s = x in [-127, 127]). AVX2 leaves the sums as s16 (8 per lane, each
 * |v| <= 2 * 2 * 15 * 127 = 7620); VNNI as s32 (4 per lane).
 */
#ifdef MM_VNNI
static inline __m256i mm_q4_pair(__m256i u1, __m256i s1, __m256i u2,
				 __m256i s2)
{
	return _mm256_dpbusd_epi32(_mm256_dpbusd_epi32(_mm256_setzero_si256(),
						       u1, s1), u2, s2);
}

/* pairs (r0 | r4), (r1 | r5), (r2 | r6), (r3 | r7) -> s32 r0..r7 */
static inline __m256i mm_q4_rows_sum(__m256i p0, __m256i p1, __m256i p2,
				     __m256i p3)
{
	return _mm256_hadd_epi32(_mm256_hadd_epi32(p0, p1),
				 _mm256_hadd_epi32(p2, p3));
}
#else
static inline __m256i mm_q4_pair(__m256i u1, __m256i s1, __m256i u2,
				 __m256i s2)
{
	return _mm256_add_epi16(_mm256_maddubs_epi16(u1, s1),
				_mm256_maddubs_epi16(u2, s2));
}

/*
 * pairs (r0 | r4), (r1 | r5), (r2 | r6), (r3 | r7) -> s32 r0..r7. Two
 * vphaddw levels stay in s16 (4 * 7620 = 30480 < 32768); vpmaddwd makes
 * the last one s32. Before, each pair took its own vpmaddwd, conversion
 * and FMA.
 */
static inline __m256i mm_q4_rows_sum(__m256i p0, __m256i p1, __m256i p2,
				     __m256i p3)
{
	return _mm256_madd_epi16(_mm256_hadd_epi16(_mm256_hadd_epi16(p0, p1),
						   _mm256_hadd_epi16(p2, p3)),
				 _mm256_set1_epi16(1));
}
#endif

/* the 16-bit field at p (unaligned) */
static inline uint16_t mm_u16_at(const uint8_t *p)
{
	uint16_t h;

	memcpy(&h, p, 2);
	return h;
}

/* the 32-bit field at p (unaligned) */
static inline uint32_t mm_u32_at(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

/* 16-bit fields at byte offset off of 8 rows (ws apart) */
static inline __m128i mm_h8(const uint8_t *row, size_t ws, size_t off)
{
	__m128i v = _mm_cvtsi32_si128(mm_u16_at(row + off));

	v = _mm_insert_epi16(v, mm_u16_at(row + ws + off), 1);
	v = _mm_insert_epi16(v, mm_u16_at(row + 2 * ws + off), 2);
	v = _mm_insert_epi16(v, mm_u16_at(row + 3 * ws + off), 3);
	v = _mm_insert_epi16(v, mm_u16_at(row + 4 * ws + off), 4);
	v = _mm_insert_epi16(v, mm_u16_at(row + 5 * ws + off), 5);
	v = _mm_insert_epi16(v, mm_u16_at(row + 6 * ws + off), 6);
	return _mm_insert_epi16(v, mm_u16_at(row + 7 * ws + off), 7);
}

/*
 * Q4_0 decode: 8 rows per step, two per vector: row p's 16 bytes in the
 * low lane, row p + 4's in the high one, so one mask and one shift make
 * both rows' nibbles, and the low nibbles meet x 0-15, the high ones
 * x 16-31, broadcast to both lanes from memory. A pair of row-blocks
 * costs 2 vpmaddubsw and an add; the four pairs of a block are reduced
 * horizontally in the integer domain to one s32 per row (rows in order),
 * so a block of 8 rows takes one conversion and one FMA with its 8
 * scales. In cache: 0.88x the time of one conversion and FMA per pair,
 * which was 0.93x the time of the 4-row one-per-vector form, which
 * remains for a 4-row tail.
 *
 * y[0..8) for 8 rows of Q4_0 (q41 = 0) or Q4_1 (q41 = 1) weights; q41 is
 * a constant, so each caller gets its own loop. The nibbles are used
 * unsigned (0..15) and one FMA per block for the 8 rows adds the offset:
 * Q4_0 subtracts dw * dx * 8 * sum(x) (xs8, see mm_q4_0_act_sums()),
 * Q4_1 adds mw * s with Q8_1's s = dx * sum(x).
 */
static inline __attribute__((always_inline)) void
mm_q4_rows8(int64_t nb, const uint8_t *row, size_t ws, const void *xq,
	    const float *xs8, float *y, const int q41)
{
	const size_t bs = q41 ? sizeof(struct mm_block_q4_1) :
				sizeof(struct mm_block_q4_0);
	const size_t qo = q41 ? offsetof(struct mm_block_q4_1, qs) :
				offsetof(struct mm_block_q4_0, qs);
	const __m256i m4 = _mm256_set1_epi8(0x0F);
	__m256 acc = _mm256_setzero_ps();	/* rows 0..7 */
	__m256 c = _mm256_setzero_ps();	/* the 8 rows' offset terms */

	for (int64_t i = 0; i < nb; i++) {
		const struct mm_block_q8_0 *x0 = (const struct mm_block_q8_0 *)xq + i;
		const struct mm_block_q8_1 *x1 = (const struct mm_block_q8_1 *)xq + i;
		const int8_t *xqs = q41 ? x1->qs : x0->qs;
		const __m256i xl = _mm256_broadcastsi128_si256(
			_mm_loadu_si128((const __m128i *)xqs));
		const __m256i xh = _mm256_broadcastsi128_si256(
			_mm_loadu_si128((const __m128i *)(xqs + 16)));
		const uint8_t *blk = row + i * bs;
		/* the 8 rows' dw * dx */
		const __m256 s8 = _mm256_mul_ps(_mm256_cvtph_ps(mm_h8(blk, ws, 0)),
			_mm256_set1_ps(q41 ? x1->d : mm_h2f(x0->d)));

		if (q41)	/* + mw * s */
			c = _mm256_fmadd_ps(_mm256_cvtph_ps(mm_h8(blk, ws, 2)),
					    _mm256_broadcast_ss(&x1->s), c);
		else		/* - dw * dx * 8 * sum(x), subtracted below */
			c = _mm256_fmadd_ps(s8, _mm256_broadcast_ss(&xs8[i]), c);
		MM_PF_NEXT(row + 8 * ws, i, bs, 8);
#define MM_Q4P(p) ({						\
	const __m256i v_ = _mm256_loadu2_m128i(				\
		(const __m128i *)(blk + ((p) + 4) * ws + qo),		\
		(const __m128i *)(blk + (p) * ws + qo));		\
	mm_q4_pair(_mm256_and_si256(v_, m4), xl,			\
		   _mm256_and_si256(_mm256_srli_epi16(v_, 4), m4), xh);	\
})
		acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(mm_q4_rows_sum(
			MM_Q4P(0), MM_Q4P(1), MM_Q4P(2), MM_Q4P(3))), s8, acc);
#undef MM_Q4P
	}
	_mm256_storeu_ps(y, q41 ? _mm256_add_ps(acc, c) : _mm256_sub_ps(acc, c));
}

static void mm_avx2_gemv_q4_0(int64_t k, const void *w, size_t ws,
			      const void *xq, float *y, int64_t nr)
{
	const struct mm_block_q8_0 *x = xq;
	const float *xs8 = mm_q4_0_act_sums(xq, k);	/* 8 * sum(x.qs) */
	const int64_t nb = k / MM_QK;
	int64_t r = 0;

	mm_pf_start(w, nr * ws);
	for (; r + 8 <= nr; r += 8)
		mm_q4_rows8(nb, (const uint8_t *)w + r * ws, ws, xq, xs8, y + r, 0);
	for (; r + 4 <= nr; r += 4) {
		const uint8_t *row = (const uint8_t *)w + r * ws;
		const struct mm_block_q4_0 *b0 = (const void *)row;
		const struct mm_block_q4_0 *b1 = (const void *)(row + ws);
		const struct mm_block_q4_0 *b2 = (const void *)(row + 2 * ws);
		const struct mm_block_q4_0 *b3 = (const void *)(row + 3 * ws);
		__m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
		__m128 c = _mm_setzero_ps();

		for (int64_t i = 0; i < nb; i++) {
			const __m256i xv = _mm256_loadu_si256((const __m256i *)x[i].qs);
			const __m128 s4 = _mm_mul_ps(_mm_cvtph_ps(_mm_cvtsi64_si128(
				(long long)MM_D4(b0, b1, b2, b3, i))),
				_mm_set1_ps(mm_h2f(x[i].d)));
			const __m256 s8 = _mm256_set_m128(s4, s4);

			c = _mm_fmadd_ps(s4, _mm_broadcast_ss(&xs8[i]), c);
#define MM_Q4R(acc, bb, n)						\
	acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(mm_dpbusd(			\
		mm_nibbles_bc((bb)[i].qs), xv)),				\
		_mm256_shuffle_ps(s8, s8, (n) * 0x55), acc)
			MM_Q4R(a0, b0, 0);
			MM_Q4R(a1, b1, 1);
			MM_Q4R(a2, b2, 2);
			MM_Q4R(a3, b3, 3);
#undef MM_Q4R
		}
		mm_store_rows4(y + r, a0, a1, a2, a3, c);
	}
	for (; r < nr; r++) {
		const struct mm_block_q4_0 *b =
			(const void *)((const uint8_t *)w + r * ws);
		__m256 acc = _mm256_setzero_ps();

		for (int64_t i = 0; i < nb; i++) {
			__m256i q = _mm256_sub_epi8(mm_nibbles(b[i].qs), _mm256_set1_epi8(8));
			__m256i p = mm_dot_i8(q, _mm256_loadu_si256((const __m256i *)x[i].qs));

			acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p),
					      _mm256_set1_ps(mm_h2f(b[i].d) * mm_h2f(x[i].d)), acc);
		}
		y[r] = mm_hsum(acc);
	}
}


/*
 * Bit 4 (0x10) of the 32 values of Q5_0_R8 quant vector t, low (h = 0)
 * or high nibbles: plane bit n = 2t + h of each byte (quant.h), moved to
 * bit 4 by one 16-bit shift; the and keeps each byte's own bit 4.
 */
static inline __m256i mm_r8_hbits(__m256i planes, const int n)
{
	const __m256i b4 = _mm256_set1_epi8(0x10);

	return n <= 4 ? _mm256_and_si256(_mm256_slli_epi16(planes, 4 - n), b4) :
			_mm256_and_si256(_mm256_srli_epi16(planes, n - 4), b4);
}

/*
 * Quant vector t (v) of a Q4_0_R8, Q5_0_R8 or Q4_K_R8 group-block as
 * unsigned values q (0..15, 0..31): h = 0 its low nibbles (Q4_0: the
 * rows' elements 4t..4t+3), h = 1 its high ones (16 + 4t..), with Q5_0's
 * bit 4 from its planes (q5). The decode loops and the prefill packer
 * all read it so.
 */
static inline __m256i mm_r8_vals(__m256i v, __m256i planes, const int t,
				 const int h, const int q5)
{
	const __m256i u = _mm256_and_si256(h ? _mm256_srli_epi16(v, 4) : v,
					   _mm256_set1_epi8(0x0F));

	return q5 ? _mm256_or_si256(u, mm_r8_hbits(planes, 2 * t + h)) : u;
}

/*
 * The 8 rows' s32 sums of a block from its 4 vector sums (lane r: row
 * r). AVX2 adds s16: a Q4_0 vector sum is at most 2 * 2 * 15 * 127 =
 * 7620, so 4 fit (30480); a Q5_0 one 15748, so 2 fit.
 */
static inline __m256i mm_r8_sum(__m256i p0, __m256i p1, __m256i p2,
				__m256i p3, const int q5)
{
#ifdef MM_VNNI
	(void)q5;
	return _mm256_add_epi32(_mm256_add_epi32(p0, p1), _mm256_add_epi32(p2, p3));
#else
	const __m256i one = _mm256_set1_epi16(1);

	if (q5)
		return _mm256_add_epi32(_mm256_madd_epi16(_mm256_add_epi16(p0, p1), one),
					_mm256_madd_epi16(_mm256_add_epi16(p2, p3), one));
	return _mm256_madd_epi16(_mm256_add_epi16(_mm256_add_epi16(p0, p1),
						  _mm256_add_epi16(p2, p3)), one);
#endif
}

/*
 * 8 rows of Q4_0_R8 or (q5) Q5_0_R8 (quant.h). Each 32-bit lane of a
 * quant vector is one row, so x comes as 4 bytes broadcast to all lanes
 * (a load), the dots need no horizontal adds, and the lanes end as the
 * rows' sums. Q5_0's bit 4 is one shift and an and per 32 values from
 * its planes. q stays unsigned (0..15, 0..31) and the - 8 or - 16 is one
 * FMA per block for the 8 rows. Per row, the float steps are those of
 * mm_q4_rows8() and mm_q5_rows4() (one conversion and FMA per block of
 * the row's exact integer sum), so each layout gives the bits of the
 * file's rows. In cache on one Zen 3 core: 1.15x (Q4_0) and 1.54x (Q5_0)
 * the speed of the layout before, whose row pairs shared a vector.
 */
static inline __attribute__((always_inline)) void
mm_r8_rows8(int64_t nb, const uint8_t *grp, const void *xq,
	    const float *xs8, float *y, const int q5)
{
	const size_t bs = 8 * (q5 ? sizeof(struct mm_block_q5_0) :
			       sizeof(struct mm_block_q4_0));	/* 176, 144 */
	const size_t qo = mm_r8_qbase(q5 ? MM_TYPE_Q5_0_R8 : MM_TYPE_Q4_0_R8);
	__m256 acc = _mm256_setzero_ps();	/* rows 0..7 */
	__m256 c = _mm256_setzero_ps();	/* their offset terms */

	for (int64_t i = 0; i < nb; i++) {
		const struct mm_block_q8_0 *x0 = (const struct mm_block_q8_0 *)xq + i;
		const uint8_t *blk = grp + i * bs;
		const __m256i qh = q5 ? _mm256_loadu_si256((const __m256i *)(blk + MM_R8_PLANES)) :
					_mm256_setzero_si256();
		const __m256 s8 = _mm256_mul_ps(
			_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)blk)),
			_mm256_set1_ps(mm_h2f(x0->d)));

		c = _mm256_fmadd_ps(s8, _mm256_broadcast_ss(&xs8[i]), c);
		mm_pf_ahead(blk, bs);
		/* vector t: elements 4t..4t+3 (low nibbles), 16 + 4t.. (high) */
#define MM_R8X(e) _mm256_set1_epi32((int)mm_u32_at((const uint8_t *)x0->qs + (e)))
#define MM_R8T(t) ({						\
	const __m256i v_ = _mm256_loadu_si256(				\
		(const __m256i *)(blk + qo + 32 * (t)));		\
	mm_q4_pair(mm_r8_vals(v_, qh, t, 0, q5), MM_R8X(4 * (t)),	\
		   mm_r8_vals(v_, qh, t, 1, q5), MM_R8X(16 + 4 * (t)));	\
})
		acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(mm_r8_sum(
			MM_R8T(0), MM_R8T(1), MM_R8T(2), MM_R8T(3), q5)), s8, acc);
#undef MM_R8T
#undef MM_R8X
	}
	/* - dw * dx * 8 * sum(x) (Q5_0: 16 * sum(x)) */
	_mm256_storeu_ps(y, _mm256_fnmadd_ps(c, _mm256_set1_ps(q5 ? 2 : 1), acc));
}

/*
 * Q4_0_R8 decode (the layout in quant.h, made at load by mm_repack()):
 * the arithmetic of mm_q4_rows8() in the same order, so the same bits,
 * without its two costs: the 8 scales are one 16-byte load instead of 8
 * 16-bit loads and 7 inserts, and each row pair is one 32-byte load
 * instead of a load and an insert. In cache on Zen 3: 0.77-0.82x the
 * time of the Q4_0 rows; cold, one thread: 0.78-0.90x.
 */
static void mm_avx2_gemv_q4_0_r8(int64_t k, const void *w, size_t ws,
				 const void *xq, float *y, int64_t nr)
{
	const float *xs8 = mm_q4_0_act_sums(xq, k);
	const int64_t nb = k / MM_QK;
	int64_t r = 0;

	mm_pf_start(w, nr * ws);
	for (; r + 8 <= nr; r += 8)
		mm_r8_rows8(nb, (const uint8_t *)w + r * ws, xq, xs8, y + r, 0);
	if (r < nr)	/* the rows past the last full group are Q4_0 rows */
		mm_avx2_gemv_q4_0(k, (const uint8_t *)w + r * ws, ws, xq, y + r,
				  nr - r);
}

/*
 * Q5_0 in the file's layout, 4 rows at a time: each row-block is one u8 x
 * s8 dot of q (0..31) with x into 8 lanes, and the four rows' lanes are
 * reduced to one exact s32 each (3 vphaddd and a lane add) before one
 * conversion and FMA with the 4 rows' dw * dx: the float steps of
 * mm_r8_rows8().
 */
static inline __attribute__((always_inline)) void
mm_q5_rows4(int64_t nb, const uint8_t *row, size_t ws, const void *xq,
	    const float *xs8, float *y)
{
	const struct mm_block_q8_0 *x = xq;
	const struct mm_block_q5_0 *b0 = (const void *)row;
	const struct mm_block_q5_0 *b1 = (const void *)(row + ws);
	const struct mm_block_q5_0 *b2 = (const void *)(row + 2 * ws);
	const struct mm_block_q5_0 *b3 = (const void *)(row + 3 * ws);
	__m128 acc = _mm_setzero_ps(), c = _mm_setzero_ps();

	for (int64_t i = 0; i < nb; i++) {
		const __m256i xv = _mm256_loadu_si256((const __m256i *)x[i].qs);
		const __m128 s4 = _mm_mul_ps(_mm_cvtph_ps(_mm_cvtsi64_si128(
			(long long)MM_D4(b0, b1, b2, b3, i))),
			_mm_set1_ps(mm_h2f(x[i].d)));
		const __m256i h = _mm256_hadd_epi32(
			_mm256_hadd_epi32(mm_dpbusd(mm_q5_values(b0[i].qs, b0[i].qh), xv),
					  mm_dpbusd(mm_q5_values(b1[i].qs, b1[i].qh), xv)),
			_mm256_hadd_epi32(mm_dpbusd(mm_q5_values(b2[i].qs, b2[i].qh), xv),
					  mm_dpbusd(mm_q5_values(b3[i].qs, b3[i].qh), xv)));

		c = _mm_fmadd_ps(s4, _mm_broadcast_ss(&xs8[i]), c);
		MM_PF_NEXT(row + 4 * ws, i, sizeof(*b0), 4);
		acc = _mm_fmadd_ps(_mm_cvtepi32_ps(_mm_add_epi32(
			_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1))),
			s4, acc);
	}
	_mm_storeu_ps(y, _mm_fnmadd_ps(c, _mm_set1_ps(2), acc));
}

/*
 * Q5_0 decode: 4-row groups, then the scalar code. Q5_0_R8 (r8): 8-row
 * groups in the layout, then the rows past the last full group, which
 * are Q5_0 rows.
 */
static void mm_avx2_gemv_q5_0(int64_t k, const void *w, size_t ws,
			      const void *xq, float *y, int64_t nr);

static inline __attribute__((always_inline)) void
mm_gemv_q5(int64_t k, const void *w, size_t ws, const void *xq, float *y,
	   int64_t nr, const int r8)
{
	const int64_t nb = k / MM_QK, g = r8 ? 8 : 4;
	const float *xs8 = mm_q4_0_act_sums(xq, k);
	int64_t r = 0;

	mm_pf_start(w, nr * ws);
	for (; r + g <= nr; r += g) {
		if (r8)
			mm_r8_rows8(nb, (const uint8_t *)w + r * ws, xq, xs8, y + r, 1);
		else
			mm_q5_rows4(nb, (const uint8_t *)w + r * ws, ws, xq, xs8, y + r);
	}
	/* (through the Q5_0 function: an always_inline function calling
	 * itself does not build at -O0) */
	if (r < nr && r8)
		mm_avx2_gemv_q5_0(k, (const uint8_t *)w + r * ws, ws, xq, y + r,
				  nr - r);
	else if (r < nr)
		mm_kernels_scalar.gemv[MM_TYPE_Q5_0](k, (const uint8_t *)w + r * ws,
						     ws, xq, y + r, nr - r);
}

static void mm_avx2_gemv_q5_0(int64_t k, const void *w, size_t ws,
			      const void *xq, float *y, int64_t nr)
{
	mm_gemv_q5(k, w, ws, xq, y, nr, 0);
}

static void mm_avx2_gemv_q5_0_r8(int64_t k, const void *w, size_t ws,
				 const void *xq, float *y, int64_t nr)
{
	mm_gemv_q5(k, w, ws, xq, y, nr, 1);
}

/* Q4_1: 8-row groups as Q4_0; the rest of the rows by the scalar code */
static void mm_avx2_gemv_q4_1(int64_t k, const void *w, size_t ws,
			      const void *xq, float *y, int64_t nr)
{
	const int64_t nb = k / MM_QK;
	int64_t r = 0;

	mm_pf_start(w, nr * ws);
	for (; r + 8 <= nr; r += 8)
		mm_q4_rows8(nb, (const uint8_t *)w + r * ws, ws, xq, NULL, y + r, 1);
	if (r < nr)
		mm_kernels_scalar.gemv[MM_TYPE_Q4_1](k, (const uint8_t *)w + r * ws,
						     ws, xq, y + r, nr - r);
}

/*
 * Prefill: packed GEMM for Q8_0, Q4_0, Q5_0, Q4_K and Q6_K weights (and
 * the Q4_0_R8 and Q5_0_R8 layouts).
 *
 * Each call (mr <= MM_GEMM_MC W rows, any nc X rows) walks k in panels
 * of MM_PK_KB blocks and packs the W panel in the caller's scratch; X
 * rows were put in the kernel's form once per product (xprep). Lanes are
 * W rows, so there are no horizontal sums: per block, one FMA per 8 rows
 * x 1 X row applies dw[0..7] * dx, and results store as 8 consecutive
 * floats of Y. The register tile is 16 W rows x 4 X rows. Two forms:
 *
 * s16 (Q8_0 without VNNI): both operands widened to s16. W: 8 rows
 * interleaved by k pairs, one ymm = rows 0-7 x (k, k+1); X: a k pair is a
 * 32-bit broadcast. A step is one vpmaddwd + vpaddd per 16 MACs: 8 s32
 * sums, 2 W loads and 4 broadcasts per 8 multiplies. Exact, since |w| <=
 * 128 and |x| <= 127 make every pair sum fit s32. On Zen 3 this form runs at most ~0.69x the
 * vpmaddubsw + vpmaddwd + vpaddd peak (a microbenchmark of the bare
 * sequence): 4 vector ops per 32 MACs against 3.
 *
 * u8 (Q4_0, Q4_K: |w| <= 8 after q - 8): X is stored as x + 128 (u8),
 * W as int8, one ymm = rows 0-7 x 4 consecutive k. A step is one
 * vpmaddubsw (x + 128, w) + vpaddw per 32 MACs into s16 sums; a pair sum
 * is at most 2 * 255 * 8 = 4080, so the s16 sums hold the 8 steps of a
 * block (32640), then one vpmaddwd turns them to s32 and 128 * sum(w),
 * made when W is packed, is taken off. Q4_K's q - 8 moves 8 * d into its
 * min. Q5_0 (|q - 16| <= 16, pair sums up to 8160): the s16 sums hold 4
 * steps, so a block is two runs of 4. Q6_K (|q - 32| <= 32, pair sums up
 * to 16320): runs of 2 steps, each widened by vpmaddwd with the half
 * block's int8 scales (each row's twice) instead of ones. With VNNI a
 * step is one vpdpbusd, Q8_0 and Q6_K take the u8 form too, W is the u8
 * side (mm_pk_off()) and the tile is on zmm (mm_pkz_tile()).
 */
#define MM_PK_KB 16	/* blocks of k per panel */
#define MM_PK_NT 4	/* X rows per register tile */
#define MM_PK_RG 2	/* groups of 8 W rows per register tile */

/*
 * The u8 form and the per-row values are kept by pairs of 8-row groups
 * (the 16 rows of a register tile): a step of a block is rows 0-7 then
 * rows 8-15 of the pair, 64 bytes, one zmm for the VNNI tile.
 */
struct mm_pk {
	union {
		int16_t w[MM_GEMM_MC / 8][MM_PK_KB][16][8][2];	/* s16 form */
		struct {
			int8_t w8[MM_GEMM_MC / 16][MM_PK_KB][8][2][8][4];	/* u8 form */
			/* AVX2 Q6_K: the scale of each row twice, per half */
			int16_t sc[MM_GEMM_MC / 8][MM_PK_KB][2][16];
		};
	};
#ifndef MM_VNNI	/* with VNNI the sums start at -off * sum(x) instead */
	int32_t ws[MM_GEMM_MC / 16][MM_PK_KB][16];	/* u8: -128 * sum(w) */
#endif
	float wd[MM_GEMM_MC / 16][MM_PK_KB][16];	/* scale per row, block */
	float wm[MM_GEMM_MC / 16][MM_PK_KB][16];	/* Q4_K: min per row, block */
};
/* group g's 8 rows in the pair layout: u8 step s of block b, per-row
 * values of block b */
#define MM_PK_W8(pk, g, b, s) ((pk)->w8[(g) / 2][b][s][(g) % 2])
#define MM_PK_ROWS(arr, g, b) ((arr)[(g) / 2][b] + (g) % 2 * 8)
_Static_assert(sizeof(struct mm_pk) <= MM_GEMM_SCRATCH, "gemm scratch");
_Static_assert(MM_GEMM_MC % (8 * MM_PK_RG) == 0 && MM_PK_RG == 2,
	       "row groups per tile: the pair layout");

/* The u8 form (see above): 1 for 4-bit weights (|w| <= 8), 2 for 5-bit
 * ones, 3 for Q6_K (|q - 32| <= 32, its scales applied per run of 2
 * steps by vpmaddwd); 0: the s16 form. With VNNI, Q8_0 and Q6_K too: vpdpbusd sums
 * into s32 with no s16 stage, so |w| <= 128 is exact (4 x 255 x 128 per
 * lane and step); Q6_K's sub-block scales apply per half block, in
 * float. */
static inline int mm_pk_u8(enum mm_type t)
{
	if (t == MM_TYPE_Q4_0 || t == MM_TYPE_Q4_0_R8 || t == MM_TYPE_Q4_K ||
	    t == MM_TYPE_Q4_K_R8)
		return 1;
#ifdef MM_VNNI
	if (t == MM_TYPE_Q8_0 || t == MM_TYPE_Q6_K)
		return 1;
#else
	if (t == MM_TYPE_Q6_K)
		return 3;
#endif
	return t == MM_TYPE_Q5_0 || t == MM_TYPE_Q5_0_R8 ? 2 : 0;
}

/* The VNNI tile (mm_pkz_tile()): 2 zmm of 16 W rows x 6 X rows (on 2
 * threads 32 x 6 >= 32 x 4 >= 16 x 8 > 16 x 6 > 16 x 4, see
 * model-runtime.rst) */
#define MM_PKZ_ZR 2
#define MM_PKZ_NT 6

/* 8-row groups per register tile of type t's gemm */
static inline int mm_pk_gpt(enum mm_type t)
{
	(void)t;
#ifdef MM_VNNI
	return 2 * MM_PKZ_ZR;
#else
	return MM_PK_RG;
#endif
}

#ifdef MM_VNNI
#define MM_PK_X_S8 1	/* the u8 form with W as the u8 side, X as s8 */
#else
#define MM_PK_X_S8 0
#endif

/*
 * With VNNI the u8 form is turned around: W is the u8 side, as w + off
 * (Q8_0: q + 128; Q4_0, Q5_0, Q6_K: the stored q; Q4_K: q, its min
 * apart) and X the s8 one, so an X broadcast is vpdpbusd's memory operand
 * ({1to16}, one fused uop) and the sums start at -off * sum(x), a value
 * per X row and block (Q6_K: per half block) made once by xprep: no
 * per-row sums of W when packing.
 */
#ifdef MM_VNNI
static inline int mm_pk_off(enum mm_type t)
{
	switch (t) {
	case MM_TYPE_Q8_0:
		return 128;
	case MM_TYPE_Q4_0: case MM_TYPE_Q4_0_R8:
		return 8;
	case MM_TYPE_Q5_0: case MM_TYPE_Q5_0_R8:
		return 16;
	case MM_TYPE_Q6_K:
		return 32;
	default:
		return 0;
	}
}
#endif

/* Q4_0/Q5_0 values q (0..15, 0..31) as W's side of the u8 form: q - 8
 * (16), and for VNNI + mm_pk_off() (as MM_PK_TR() makes them) */
static inline __m256i mm_pk_u8_w(__m256i q, enum mm_type t)
{
	const int z = mm_stored_type(t) == MM_TYPE_Q5_0 ? 16 : 8;

#ifdef MM_VNNI
	return _mm256_add_epi8(q, _mm256_set1_epi8((char)(mm_pk_off(t) - z)));
#else
	return _mm256_sub_epi8(q, _mm256_set1_epi8((char)z));
#endif
}

/*
 * The 32- and 64-bit stages of an 8x8 dword transpose, in each 128-bit
 * lane: r[i] = dwords of row i -> u[j] = dword j (low lane: of the
 * rows' low lanes) of rows 0-7... as 2 x 4 rows: rows 0-3 in the low
 * 64 bits of each lane, rows 4-7 in the high ones.
 */
static inline __attribute__((always_inline)) void
mm_tr_32_64(const __m256i r[8], __m256i u[8])
{
	__m256i t[8];

#pragma GCC unroll 4
	for (int i = 0; i < 4; i++) {
		t[2 * i] = _mm256_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
		t[2 * i + 1] = _mm256_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
	}
#pragma GCC unroll 2
	for (int i = 0; i < 2; i++) {
		u[4 * i] = _mm256_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
		u[4 * i + 1] = _mm256_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
		u[4 * i + 2] = _mm256_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
		u[4 * i + 3] = _mm256_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
	}
}

/* r[i] = 8 dwords of row i -> out[j * 2] = dword j of rows 0-7 (every
 * other vector: the pair layout) */
static inline __attribute__((always_inline)) void
mm_tr8x8(const __m256i r[8], __m256i *out)
{
	__m256i u[8];

	mm_tr_32_64(r, u);
#pragma GCC unroll 4
	for (int i = 0; i < 4; i++) {
		_mm256_store_si256(out + 2 * i,
				   _mm256_permute2x128_si256(u[i], u[i + 4], 0x20));
		_mm256_store_si256(out + 2 * (i + 4),
				   _mm256_permute2x128_si256(u[i], u[i + 4], 0x31));
	}
}

/*
 * The row sums of the u8 form (below) from its transposed vectors
 * out[2 * s] (rows 0-7 x elements 4s..4s+3): ws[r] = row r's sums over
 * elements 0-15 and 16-31 times the s16 lanes of m0 and m1.
 */
static inline __attribute__((always_inline)) void
mm_pk_u8_sums(const __m256i *out, int32_t *ws, __m256i m0, __m256i m1)
{
	const __m256i one8 = _mm256_set1_epi8(1);
	__m256i sum[2];

#pragma GCC unroll 2
	for (int h = 0; h < 2; h++) {
		sum[h] = _mm256_maddubs_epi16(one8, out[8 * h]);
#pragma GCC unroll 4
		for (int i = 1; i < 4; i++)
			sum[h] = _mm256_add_epi16(sum[h], _mm256_maddubs_epi16(one8,
						  out[8 * h + 2 * i]));
	}
	_mm256_store_si256((__m256i *)ws, _mm256_add_epi32(_mm256_madd_epi16(sum[0], m0),
							   _mm256_madd_epi16(sum[1], m1)));
}

/*
 * u8 form of eight W rows of one block, AVX2 (values |v| <= 8, 16 for
 * Q5_0, 32 for Q6_K): out[2 * s] = rows 0-7 x elements 4s..4s+3, and
 * ws[r] = the sums of row r's values over elements 0-15 and 16-31 times
 * the s16 lanes of m0 and m1 (-128, for Q6_K -128 * its scales), which
 * the tile adds since X comes as x + 128.
 */
static inline __attribute__((always_inline)) void
mm_pk_tr8_u8(const __m256i v[8], __m256i *out, int32_t *ws, __m256i m0,
	     __m256i m1)
{
	mm_tr8x8(v, out);
	mm_pk_u8_sums(out, ws, m0, m1);
}

/*
 * Eight W rows of one block, as int8 values v[r] (elements 0-31 of row r),
 * transposed and widened in registers: out[p] = rows 0-7 x elements
 * (2p, 2p + 1) as s16. Three stages of in-lane unpacks (16-, 32-, 64-bit)
 * leave pair j of all 8 rows in the low 128-bit lane of one vector and
 * pair j + 8 in its high lane; each lane is then one vpmovsxbw. All in
 * registers: the s16 8x8 transpose this replaces went through the stack.
 */
static inline __attribute__((always_inline)) void
mm_pk_tr8(const __m256i v[8], __m256i *out)
{
	__m256i a[8], u[8];

	/* word pairs of rows (0, 1), (2, 3), ...: low halves, then high */
#pragma GCC unroll 4
	for (int i = 0; i < 4; i++) {
		a[i] = _mm256_unpacklo_epi16(v[2 * i], v[2 * i + 1]);
		a[i + 4] = _mm256_unpackhi_epi16(v[2 * i], v[2 * i + 1]);
	}
	mm_tr_32_64(a, u);
#pragma GCC unroll 8
	for (int j = 0; j < 8; j++) {
		_mm256_store_si256(out + j, _mm256_cvtepi8_epi16(_mm256_castsi256_si128(u[j])));
		_mm256_store_si256(out + j + 8,
				   _mm256_cvtepi8_epi16(_mm256_extracti128_si256(u[j], 1)));
	}
}

/*
 * 32-element block sb of a W row (for the K-quants, sub-block sb % 8 of
 * super-block sb / 8) as 32 int8 values, so that w = d * sc * value - m,
 * where sc (Q6_K only: its int8 scales of elements 0-15 and 16-31) is
 * applied by the tile and is 1 for the other types.
 */
static inline __attribute__((always_inline)) __m256i
mm_pk_wblock(enum mm_type t, const uint8_t *row, int64_t sb, float *d,
	     float *m, int16_t *sc)
{
	const __m256i m4 = _mm256_set1_epi8(0x0F);

	*m = 0;
	switch (t) {
	case MM_TYPE_Q8_0: {
		const struct mm_block_q8_0 *b = (const void *)row;

		*d = mm_h2f(b[sb].d);
		return _mm256_loadu_si256((const __m256i *)b[sb].qs);
	}
	case MM_TYPE_Q4_0: {
		const struct mm_block_q4_0 *b = (const void *)row;

		*d = mm_h2f(b[sb].d);
		return _mm256_sub_epi8(mm_nibbles(b[sb].qs), _mm256_set1_epi8(8));
	}
	case MM_TYPE_Q5_0: {
		const struct mm_block_q5_0 *b = (const void *)row;

		*d = mm_h2f(b[sb].d);
		return _mm256_sub_epi8(mm_q5_values(b[sb].qs, b[sb].qh),
				       _mm256_set1_epi8(16));
	}
	case MM_TYPE_Q4_K: {
		const struct mm_block_q4_k *b = (const struct mm_block_q4_k *)row + sb / 8;
		const int j = (int)(sb % 8);
		const __m256i q = _mm256_loadu_si256((const __m256i *)(b->qs + (j / 2) * 32));
		uint8_t s, mn;

		mm_q4k_scale_min(j, b->scales, &s, &mn);
		*d = mm_h2f(b->d) * s;
		*m = mm_h2f(b->dmin) * mn;
		return _mm256_and_si256(j & 1 ? _mm256_srli_epi16(q, 4) : q, m4);
	}
	case MM_TYPE_Q6_K: {
		const struct mm_block_q6_k *b = (const struct mm_block_q6_k *)row + sb / 8;
		const int j = (int)(sb % 8), h = j / 4, jj = j % 4;
		const __m256i l = _mm256_loadu_si256((const __m256i *)(b->ql + 64 * h + (jj & 1) * 32));
		const __m256i qh = _mm256_loadu_si256((const __m256i *)(b->qh + 32 * h));
		const __m256i low = _mm256_and_si256(jj < 2 ? l : _mm256_srli_epi16(l, 4), m4);
		const __m256i high = _mm256_and_si256(
			_mm256_slli_epi16(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * jj)), 4),
			_mm256_set1_epi8(0x30));

		sc[0] = b->scales[8 * h + 2 * jj];
		sc[1] = b->scales[8 * h + 2 * jj + 1];
		*d = mm_h2f(b->d);
		return _mm256_sub_epi8(_mm256_or_si256(low, high), _mm256_set1_epi8(32));
	}
	default:
		*d = 0;
		return _mm256_setzero_si256();
	}
}

/*
 * The 8 rows' 6-bit scales and mins of a Q4_K_R8 group-block, a byte each
 * in a row's lane: s[0] scales 0-3, s[1] scales 4-7, s[2] mins 0-3, s[3]
 * mins 4-7 (ggml's masks on the 3 scale vectors, all rows at once).
 */
static inline __attribute__((always_inline)) void
mm_q4k_r8_scales(const uint8_t *blk, __m256i s[4])
{
	const __m256i k1 = _mm256_set1_epi32(0x3f3f3f3f);
	const __m256i k2 = _mm256_set1_epi32(0x0f0f0f0f);
	const __m256i k3 = _mm256_set1_epi32(0x03030303);
	const __m256i u0 = _mm256_loadu_si256((const __m256i *)(blk + MM_R8_KSCALES));
	const __m256i u1 = _mm256_loadu_si256((const __m256i *)(blk + MM_R8_KSCALES + 32));
	const __m256i u2 = _mm256_loadu_si256((const __m256i *)(blk + MM_R8_KSCALES + 64));

	s[0] = _mm256_and_si256(u0, k1);
	s[1] = _mm256_or_si256(_mm256_and_si256(u2, k2), _mm256_slli_epi32(
		_mm256_and_si256(_mm256_srli_epi32(u0, 6), k3), 4));
	s[2] = _mm256_and_si256(u1, k1);
	s[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(u2, 4), k2),
			       _mm256_slli_epi32(_mm256_and_si256(
				       _mm256_srli_epi32(u1, 6), k3), 4));
}

/*
 * Sub-block j of the 8 rows of a Q4_K_R8 group-block (quant.h) in the
 * u8 form, as MM_PK_TR() makes it from mm_pk_wblock()'s rows: the quant
 * vector of bytes 4t..4t+3 is already rows 0-7 x elements 4t..4t+3 of the
 * sub-block (out[2 * t]); the rows' scales and mins come from
 * mm_q4k_r8_scales(), a lane each.
 */
static inline __attribute__((always_inline)) void
mm_pk_q4k_r8(const uint8_t *blk, int j, __m256i *o8, float *wd, float *wm)
{
	const uint8_t *qs = blk + mm_r8_qbase(MM_TYPE_Q4_K_R8) + 256 * (j / 2);
	const __m128i sh = _mm_cvtsi32_si128(8 * (j % 4));
	const __m256i ff = _mm256_set1_epi32(0xff);
	__m256i sm[4];
	__m256 d, m;

	mm_q4k_r8_scales(blk, sm);
	d = _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)blk)),
			  _mm256_cvtepi32_ps(_mm256_and_si256(
				  _mm256_srl_epi32(sm[j / 4], sh), ff)));
	m = _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(blk + MM_R8_KDMIN))),
			  _mm256_cvtepi32_ps(_mm256_and_si256(
				  _mm256_srl_epi32(sm[2 + j / 4], sh), ff)));
#ifndef MM_VNNI
	/* q - 8: 8 * d moves into the min (MM_PK_TR()) */
	m = _mm256_sub_ps(m, _mm256_mul_ps(_mm256_set1_ps(8), d));
#endif
	_mm256_storeu_ps(wd, d);
	_mm256_storeu_ps(wm, m);
#pragma GCC unroll 8
	for (int t = 0; t < 8; t++) {
		__m256i q = mm_r8_vals(_mm256_loadu_si256((const __m256i *)(qs + 32 * t)),
				       _mm256_setzero_si256(), t, j & 1, 0);

#ifndef MM_VNNI
		q = _mm256_sub_epi8(q, _mm256_set1_epi8(8));
#endif
		_mm256_store_si256(o8 + 2 * t, q);
	}
}

/*
 * Prefetch W row r's bytes of the panel [b, b + kb) (of a full group of
 * an 8-row layout, an eighth of the group's): the 64 rows of a call are
 * 64 streams a row apart, more than the hardware prefetcher follows.
 */
static inline __attribute__((always_inline)) void
mm_pk_pf_row(enum mm_type t, const uint8_t *w, size_t ws, int mr, int r,
	     int64_t b, int kb)
{
	const enum mm_type st = mm_stored_type(t);
	const size_t be = mm_type_block_elems(st) / MM_QK;	/* 1 or 8 */
	const size_t bb = mm_type_block_bytes(st);
	const size_t off = (size_t)b / be * bb;
	const size_t len = ((size_t)(b + kb) + be - 1) / be * bb - off;

	if (t != st && r / 8 * 8 + 8 <= mr)
		mm_pf_span((const char *)w + (size_t)(r / 8) * 8 * ws + 8 * off +
			   (size_t)(r % 8) * len, len);
	else
		mm_pf_span((const char *)w + (size_t)r * ws + off, len);
}

/* Q6_K's int8 scales of 8 rows (half h of a block: sc[r][h]) as s16
 * lanes (row, pair): each row's scale twice, out[h] */
static inline void mm_pk_q6k_sc(const int16_t sc[8][2], int16_t out[2][16])
{
	for (int h = 0; h < 2; h++)
		for (int r = 0; r < 8; r++)
			out[h][2 * r] = out[h][2 * r + 1] = sc[r][h];
}

static inline __attribute__((always_inline)) void
mm_pk_pack_w(struct mm_pk *pk, enum mm_type t, const uint8_t *w, size_t ws,
	     int mr, int64_t b0, int kb)
{
	const int gpt = mm_pk_gpt(t);	/* groups per tile: zeros past mr */
	const int ng = (mr + 8 * gpt - 1) / (8 * gpt) * gpt;

#ifdef MM_VNNI
	/* W as the u8 side: w + off */
#define MM_PK_TR(v) do {						\
		for (int r_ = 0; r_ < 8; r_++)				\
			v[r_] = _mm256_add_epi8(v[r_],			\
				_mm256_set1_epi8((char)mm_pk_off(t)));	\
		mm_tr8x8(v, (__m256i *)MM_PK_W8(pk, g, b, 0));		\
	} while (0)
#else
	/* Q4_K in the u8 form: q - 8, and 8 * d moves into the min */
#define MM_PK_TR(v) do {						\
		if (!mm_pk_u8(t)) {					\
			mm_pk_tr8(v, (__m256i *)pk->w[g][b][0]);	\
			break;						\
		}							\
		if (mm_stored_type(t) == MM_TYPE_Q4_K) {		\
			for (int r_ = 0; r_ < 8; r_++) {		\
				v[r_] = _mm256_sub_epi8(v[r_], _mm256_set1_epi8(8)); \
				wm[r_] -= 8 * wd[r_];			\
			}						\
		}							\
		if (t == MM_TYPE_Q6_K) {				\
			mm_pk_q6k_sc(sc, pk->sc[g][b]);			\
			mm_pk_tr8_u8(v, (__m256i *)MM_PK_W8(pk, g, b, 0), \
				MM_PK_ROWS(pk->ws, g, b),		\
				_mm256_mullo_epi16(_mm256_load_si256(	\
					(const __m256i *)pk->sc[g][b][0]), \
					_mm256_set1_epi16(-128)),	\
				_mm256_mullo_epi16(_mm256_load_si256(	\
					(const __m256i *)pk->sc[g][b][1]), \
					_mm256_set1_epi16(-128)));	\
			break;						\
		}							\
		mm_pk_tr8_u8(v, (__m256i *)MM_PK_W8(pk, g, b, 0),	\
			     MM_PK_ROWS(pk->ws, g, b),			\
			     _mm256_set1_epi16(-128), _mm256_set1_epi16(-128)); \
	} while (0)
#endif

	for (int g = 0; g < ng; g++) {
		const int full = g * 8 + 8 <= mr;

		/* the first panel: a group ahead (later panels were
		 * prefetched while the previous one was multiplied) */
		if (b0 == 0)
			for (int r = (g + 1) * 8; r < (g + 2) * 8 && r < mr; r++)
				mm_pk_pf_row(t, w, ws, mr, r, b0, kb);

		for (int b = 0; b < kb; b++) {
			__m256i v[8];
			int16_t sc[8][2] = { { 0 } };
			float *wd = MM_PK_ROWS(pk->wd, g, b),
			      *wm = MM_PK_ROWS(pk->wm, g, b);

			if (t == MM_TYPE_Q4_K_R8 && full) {
				__m256i *o8 = (__m256i *)MM_PK_W8(pk, g, b, 0);

				mm_pk_q4k_r8(w + (size_t)g * 8 * ws +
					     (size_t)(b0 + b) / 8 * 8 *
					     sizeof(struct mm_block_q4_k),
					     (int)((b0 + b) % 8), o8, wd, wm);
#ifndef MM_VNNI
				mm_pk_u8_sums(o8, MM_PK_ROWS(pk->ws, g, b),
					      _mm256_set1_epi16(-128), _mm256_set1_epi16(-128));
#endif
			} else if (t != mm_stored_type(t) && full) {
				/* block b0 + b of the group's 8 rows in the
				 * layout (quant.h): 8 f16 scales, Q5_0's high-bit
				 * planes, the quant vectors (Q8_0: the rows) */
				const int q5 = t == MM_TYPE_Q5_0_R8;
				const int q8 = t == MM_TYPE_Q8_0_R8;
				const uint8_t *blk = w + (size_t)g * 8 * ws + (size_t)(b0 + b) * 8 *
					mm_type_block_bytes(mm_stored_type(t));
				const uint8_t *qs = blk + mm_r8_qbase(t);

#pragma GCC unroll 8
				for (int r = 0; r < 8; r++) {
					wd[r] = mm_h2f(mm_u16_at(blk + 2 * r));
					wm[r] = 0;
				}
				if (q8) {
#pragma GCC unroll 8
					for (int r = 0; r < 8; r++)
						v[r] = _mm256_loadu_si256((const __m256i *)(qs + MM_QK * r));
					MM_PK_TR(v);
				} else {
					/* vector j's lanes are the rows' elements
					 * 4j.. (low nibbles) and 16 + 4j.. (high):
					 * the u8 form's out[2 * j], out[2 * (j + 4)] */
					const __m256i qh = q5 ? _mm256_loadu_si256((const __m256i *)(blk + MM_R8_PLANES)) :
								_mm256_setzero_si256();
					__m256i *o8 = (__m256i *)MM_PK_W8(pk, g, b, 0);

#pragma GCC unroll 4
					for (int j = 0; j < 4; j++) {
						const __m256i q = _mm256_loadu_si256((const __m256i *)(qs + 32 * j));

						/* q - 8 (16), as W's u8 side (VNNI: + the
						 * offset) */
						_mm256_store_si256(o8 + 2 * j,
								   mm_pk_u8_w(mm_r8_vals(q, qh, j, 0, q5), t));
						_mm256_store_si256(o8 + 2 * (j + 4),
								   mm_pk_u8_w(mm_r8_vals(q, qh, j, 1, q5), t));
					}
#ifndef MM_VNNI
					mm_pk_u8_sums(o8, MM_PK_ROWS(pk->ws, g, b),
						      _mm256_set1_epi16(-128), _mm256_set1_epi16(-128));
#endif
				}
			} else if (full) {
#pragma GCC unroll 8
				for (int r = 0; r < 8; r++)
					v[r] = mm_pk_wblock(mm_stored_type(t),
							    w + (size_t)(g * 8 + r) * ws,
							    b0 + b, wd + r, wm + r, sc[r]);
				MM_PK_TR(v);
			} else {
				/* the last rows (Q4_0_R8: Q4_0 rows past the
				 * last full group), zeros after them */
				for (int r = 0; r < 8; r++) {
					const int row = g * 8 + r;

					if (row < mr) {
						v[r] = mm_pk_wblock(mm_stored_type(t),
								    w + (size_t)row * ws,
								    b0 + b, wd + r, wm + r,
								    sc[r]);
					} else {
						v[r] = _mm256_setzero_si256();
						wd[r] = wm[r] = 0;
					}
				}
				MM_PK_TR(v);
			}
			if (t == MM_TYPE_Q6_K && MM_PK_X_S8) {
				/* VNNI: d * sc of each half block, in float
				 * (wm holds the second half's: no mins) */
				for (int r = 0; r < 8; r++) {
					wm[r] = wd[r] * sc[r][1];
					wd[r] *= sc[r][0];
				}
			}
		}
	}
#undef MM_PK_TR
}

/*
 * X rows in the gemm's form, made once per row for a whole product (not
 * per call: a call is 64 W rows, so X would be widened again for every 64
 * rows of W): 64 bytes per 32-element block (the values as s16, or in the
 * u8 form as x + 128 in the first 32; with VNNI as x, and from byte 32 *
 * nb the sums' start -off * sum(x) of every block, of every half block
 * for Q6_K, see mm_pk_off()),
 * then dx of every block, then dx * sum(x) of every block (Q4_K's mins).
 */
struct mm_xrow {
	const int16_t *x;
	const int32_t *c;
	const float *d, *s;
};

static size_t mm_avx2_xprep_bytes(int64_t k)
{
	return (size_t)(k / MM_QK) * (MM_QK * sizeof(int16_t) + 2 * sizeof(float));
}

static inline struct mm_xrow mm_xrow_at(const uint8_t *xp, int64_t nb)
{
	return (struct mm_xrow){
		.x = (const int16_t *)xp,
		.c = (const int32_t *)(xp + nb * MM_QK),
		.d = (const float *)(xp + nb * MM_QK * sizeof(int16_t)),
		.s = (const float *)(xp + nb * MM_QK * sizeof(int16_t)) + nb,
	};
}

/*
 * An X row in the gemm's form: from Q8_0 blocks (Q8_0, Q4_0, Q5_0
 * weights) or Q8_K (K-quants), as s16 or, for the u8 form (mm_pk_u8()),
 * x + 128 (VNNI: x, and -off * sum(x)).
 */
static inline __attribute__((always_inline)) void
mm_xprep(int64_t k, const void *xq, void *xp, const int q8k, const int u8,
	 const int off)
{
	const int64_t nb = k / MM_QK;
	const struct mm_xrow o = mm_xrow_at(xp, nb);

	for (int64_t b = 0; b < nb; b++) {
		const int8_t *q;
		float d, sum;
		int32_t isum = 0;

		if (q8k) {
			const struct mm_block_q8_k *x = (const struct mm_block_q8_k *)xq + b / 8;
			const int j = (int)(b % 8);

			q = x->qs + 32 * j;
			d = x->d;
			isum = x->bsums[2 * j] + x->bsums[2 * j + 1];
			sum = x->d * (float)isum;
		} else {
			const struct mm_block_q8_0 *x = (const struct mm_block_q8_0 *)xq + b;

			q = x->qs;
			d = mm_h2f(x->d);
			sum = 0;
			if (off)
				for (int i = 0; i < MM_QK; i++)
					isum += q[i];
		}
		if (u8 && MM_PK_X_S8 && q8k && off) {	/* Q6_K: per half */
			const struct mm_block_q8_k *x = (const struct mm_block_q8_k *)xq + b / 8;

			memcpy((uint8_t *)o.x + b * MM_QK, q, MM_QK);
			((int32_t *)o.c)[2 * b] = -off * x->bsums[2 * (b % 8)];
			((int32_t *)o.c)[2 * b + 1] = -off * x->bsums[2 * (b % 8) + 1];
		} else if (u8 && MM_PK_X_S8) {
			memcpy((uint8_t *)o.x + b * MM_QK, q, MM_QK);
			((int32_t *)o.c)[b] = -off * isum;
		} else if (u8) {
			_mm256_storeu_si256((__m256i *)((uint8_t *)o.x + b * MM_QK),
					    _mm256_xor_si256(_mm256_set1_epi8((char)0x80),
							     _mm256_loadu_si256((const __m256i *)q)));
		} else {
			__m256i *out = (__m256i *)(o.x + b * MM_QK);

			_mm256_storeu_si256(out, _mm256_cvtepi8_epi16(
				_mm_loadu_si128((const __m128i *)q)));
			_mm256_storeu_si256(out + 1, _mm256_cvtepi8_epi16(
				_mm_loadu_si128((const __m128i *)(q + 16))));
		}
		((float *)o.d)[b] = d;
		((float *)o.s)[b] = sum;
	}
}

#define MM_DEF_XPREP(name, q8k, u8, off)				\
static void name(int64_t k, const void *xq, void *xp)			\
{									\
	mm_xprep(k, xq, xp, q8k, u8, off);				\
}

#ifdef MM_VNNI	/* X as s8, the sums' starts for W's offset */
MM_DEF_XPREP(mm_vnni_xprep_q8_0, 0, 1, 128)	/* Q8_0 */
MM_DEF_XPREP(mm_vnni_xprep_q4_0, 0, 1, 8)	/* Q4_0, Q4_0_R8 */
MM_DEF_XPREP(mm_vnni_xprep_q5_0, 0, 1, 16)	/* Q5_0, Q5_0_R8 */
MM_DEF_XPREP(mm_vnni_xprep_q6_k, 1, 1, 32)	/* Q6_K */
#else
MM_DEF_XPREP(mm_avx2_xprep_q8_0, 0, 0, 0)	/* Q8_0 */
MM_DEF_XPREP(mm_avx2_xprep_q8_0_u8, 0, 1, 0)	/* Q4_0, Q5_0 and their layouts */
#endif
MM_DEF_XPREP(mm_avx2_xprep_q8_k_u8, 1, 1, 0)	/* Q4_K (AVX2: and Q6_K) */

/* The nt X rows of a tile from row c0 (past ncol: row c0 again, its sums
 * not stored), at block b0: values (xb bytes per block), sums' starts
 * (VNNI; cpb per block), dx, dx * sum(x). */
static inline __attribute__((always_inline)) void
mm_pk_xrows(const uint8_t *X, size_t xs, int64_t nb, int64_t b0, int c0,
	    int ncol, size_t xb, const int cpb, const int nt,
	    const uint8_t **xr, const int32_t **xc, const float **xd,
	    const float **xsum)
{
#pragma GCC unroll 8
	for (int c = 0; c < nt; c++) {
		const int i = c0 + (c < ncol ? c : 0);
		const struct mm_xrow r = mm_xrow_at(X + (size_t)i * xs, nb);

		xr[c] = (const uint8_t *)r.x + b0 * xb;
		xc[c] = r.c + b0 * cpb;
		xd[c] = r.d + b0;
		xsum[c] = r.s + b0;
	}
}

#ifdef MM_VNNI
/*
 * The u8 form on zmm (VNNI): a tile is MM_PKZ_ZR pairs of groups from
 * g (16 W rows each, one zmm per step) x up to MM_PKZ_NT X rows. Intel
 * cores with two 512-bit FMA ports run vpdpbusd zmm at twice the ymm
 * rate (Zen 4 runs both at the same MACs per cycle). Per block, zmm and
 * X row: 8 vpdpbusd (W u8, 4 X bytes broadcast from memory) on sums that
 * start at -off * sum(x), then one conversion, one scale product and one
 * FMA.
 */

/* a + the u8 x s8 products of w and the 4 bytes at p in every lane, the
 * broadcast as vpdpbusd's memory operand (GCC 12 does not fold it) */
static inline __m512i mm_dpbusd_bcst(__m512i a, __m512i w, const void *p)
{
	__asm__("vpdpbusd %2%{1to16%}, %1, %0"
		: "+v"(a) : "v"(w), "m"(*(const int32_t *)p));
	return a;
}

/* f[z][c] += a[z][c] * scale rows sc (of pair g + 2z) * dx of X row c */
#define MM_PKZ_FOLD(sc) do {						\
	_Pragma("GCC unroll 2")						\
	for (int z = 0; z < MM_PKZ_ZR; z++) {				\
		const __m512 dw = _mm512_load_ps(MM_PK_ROWS(sc, g + 2 * z, b)); \
									\
		_Pragma("GCC unroll 8")					\
		for (int c = 0; c < MM_PKZ_NT; c++)			\
			f[z][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(a[z][c]), \
				_mm512_mul_ps(dw, _mm512_set1_ps(xd[c][b])), f[z][c]); \
	}								\
} while (0)

/* a[z][c] = the sums' start at index i of X row c */
#define MM_PKZ_START(i) do {						\
	_Pragma("GCC unroll 8")						\
	for (int c = 0; c < MM_PKZ_NT; c++)				\
		_Pragma("GCC unroll 2")					\
		for (int z = 0; z < MM_PKZ_ZR; z++)			\
			a[z][c] = _mm512_set1_epi32(xc[c][i]);		\
} while (0)

/* halves (Q6_K): the block's two halves are summed and scaled apart (wd,
 * then wm) */
static inline __attribute__((always_inline)) void
mm_pkz_tile(const struct mm_pk *pk, int g, const uint8_t *X, size_t xs,
	    int64_t nb, int64_t b0, int c0, int ncol, int mr, int kb,
	    float *Y, size_t ldy, int add, const int mins, const int halves)
{
	const uint8_t *xr[MM_PKZ_NT];	/* block b0 of the X rows (s8) */
	const int32_t *xc[MM_PKZ_NT];
	const float *xd[MM_PKZ_NT], *xsum[MM_PKZ_NT];
	__m512 f[MM_PKZ_ZR][MM_PKZ_NT];

	mm_pk_xrows(X, xs, nb, b0, c0, ncol, MM_QK, halves ? 2 : 1, MM_PKZ_NT,
		    xr, xc, xd, xsum);
#pragma GCC unroll 16
	for (int i = 0; i < MM_PKZ_ZR * MM_PKZ_NT; i++)
		f[i / MM_PKZ_NT][i % MM_PKZ_NT] = _mm512_setzero_ps();
	for (int b = 0; b < kb; b++) {
		__m512i a[MM_PKZ_ZR][MM_PKZ_NT];

		MM_PKZ_START(halves ? 2 * b : b);
#pragma GCC unroll 8
		for (int s = 0; s < 8; s++) {
			__m512i w[MM_PKZ_ZR];

			if (halves && s == 4) {
				MM_PKZ_FOLD(pk->wd);
				MM_PKZ_START(2 * b + 1);
			}
#pragma GCC unroll 2
			for (int z = 0; z < MM_PKZ_ZR; z++)
				w[z] = _mm512_load_si512(MM_PK_W8(pk, g + 2 * z, b, s));
#pragma GCC unroll 8
			for (int c = 0; c < MM_PKZ_NT; c++)
#pragma GCC unroll 2
				for (int z = 0; z < MM_PKZ_ZR; z++)
					a[z][c] = mm_dpbusd_bcst(a[z][c], w[z],
								 xr[c] + b * MM_QK + 4 * s);
		}
		if (halves)
			MM_PKZ_FOLD(pk->wm);
		else
			MM_PKZ_FOLD(pk->wd);
		if (mins) {	/* - m[r] * dx * sum(x) */
#pragma GCC unroll 2
			for (int z = 0; z < MM_PKZ_ZR; z++) {
				const __m512 wm = _mm512_load_ps(MM_PK_ROWS(pk->wm, g + 2 * z, b));

#pragma GCC unroll 8
				for (int c = 0; c < MM_PKZ_NT; c++)
					f[z][c] = _mm512_fnmadd_ps(wm, _mm512_set1_ps(xsum[c][b]),
								   f[z][c]);
			}
		}
	}

	for (int z = 0; z < MM_PKZ_ZR; z++) {
		const int r0 = (g + 2 * z) * 8, nrow = mr - r0 < 16 ? mr - r0 : 16;
		const __mmask16 m = (__mmask16)((1u << (nrow > 0 ? nrow : 0)) - 1);

		for (int c = 0; c < ncol && nrow > 0; c++) {
			float *y = Y + (size_t)(c0 + c) * ldy + r0;

			_mm512_mask_storeu_ps(y, m, add ? _mm512_add_ps(
				_mm512_maskz_loadu_ps(m, y), f[z][c]) : f[z][c]);
		}
	}
}
#undef MM_PKZ_FOLD
#undef MM_PKZ_START
#else	/* the AVX2 tile */

static inline __m256i mm_bcast32(const void *p)
{
	int32_t v;

	memcpy(&v, p, 4);
	return _mm256_set1_epi32(v);
}

/*
 * One step of a block: a[h][c] (first: = instead of +=) the products of
 * W vector w and X broadcast x. s16 form: k pairs, s32 sums. u8 form:
 * 4 consecutive k, s16 sums.
 */
static inline __m256i mm_pk_step(__m256i a, __m256i w, __m256i x,
				 int first, const int u8)
{
	const __m256i p = u8 ? _mm256_maddubs_epi16(x, w) : _mm256_madd_epi16(w, x);

	if (first)
		return p;
	return u8 ? _mm256_add_epi16(a, p) : _mm256_add_epi32(a, p);
}

/*
 * Block b of the tile into s32 sums a: 16 steps of k pairs (s16 form) or
 * 8 steps of 4 k (u8 form). The u8 form's s16 sums hold the 8 steps of
 * 4-bit weights (|2 * 255 * 8| * 8 = 32640) or 4 of 5-bit ones (8160 *
 * 4), so those take two runs, the first kept as s32; then one vpmaddwd
 * turns each to s32 and 128 * sum(w) is taken off.
 */
static inline __attribute__((always_inline)) void
mm_pk_block(const struct mm_pk *pk, int g, int b,
	    const uint8_t *const xr[MM_PK_NT], __m256i a[MM_PK_RG][MM_PK_NT],
	    const int u8)
{
	const int ns = u8 ? 8 : 16, xstep = u8 ? 4 : 2 * sizeof(int16_t);
	const int run = u8 == 3 ? 2 : u8 == 2 ? 4 : ns;	/* steps per s16 run */
	__m256i t[MM_PK_RG][MM_PK_NT];	/* the runs' sums, s32 */

#pragma GCC unroll 16
	for (int s = 0; s < ns; s++) {
		__m256i w[MM_PK_RG];

#pragma GCC unroll 2
		for (int h = 0; h < MM_PK_RG; h++)
			w[h] = _mm256_load_si256(u8 ? (const __m256i *)MM_PK_W8(pk, g + h, b, s) :
						 (const __m256i *)pk->w[g + h][b][s]);
#pragma GCC unroll 8
		for (int c = 0; c < MM_PK_NT; c++) {
			const __m256i xv = mm_bcast32(xr[c] + xstep * s);

#pragma GCC unroll 2
			for (int h = 0; h < MM_PK_RG; h++) {
				a[h][c] = mm_pk_step(a[h][c], w[h], xv, s % run == 0, u8);
				/* keep one chain per sum: GCC would regroup
				 * the adds and spill */
				__asm__("" : "+x"(a[h][c]));
			}
		}
		if (run < ns && s % run == run - 1 && s < ns - 1)
#pragma GCC unroll 2
			for (int h = 0; h < MM_PK_RG; h++) {
				/* Q6_K: its scales of the half, else 1 */
				const __m256i m = u8 == 3 ? _mm256_load_si256(
					(const __m256i *)pk->sc[g + h][b][s / 4]) :
					_mm256_set1_epi16(1);

#pragma GCC unroll 8
				for (int c = 0; c < MM_PK_NT; c++) {
					const __m256i p = _mm256_madd_epi16(a[h][c], m);

					t[h][c] = s == run - 1 ? p : _mm256_add_epi32(t[h][c], p);
				}
			}
	}
	if (!u8)
		return;
#pragma GCC unroll 2
	for (int h = 0; h < MM_PK_RG; h++) {
		const __m256i ws = _mm256_load_si256((const __m256i *)
						     MM_PK_ROWS(pk->ws, g + h, b));

#pragma GCC unroll 8
		for (int c = 0; c < MM_PK_NT; c++) {
			a[h][c] = _mm256_madd_epi16(a[h][c], u8 == 3 ?
				_mm256_load_si256((const __m256i *)pk->sc[g + h][b][1]) :
				_mm256_set1_epi16(1));
			if (run < ns)
				a[h][c] = _mm256_add_epi32(a[h][c], t[h][c]);
			a[h][c] = _mm256_add_epi32(a[h][c], ws);
		}
	}
}

/*
 * MM_PK_RG groups of 8 W rows (from group g) x up to MM_PK_NT X rows
 * (from c0), kb blocks. The s32 sums stay in registers; the float sums
 * are touched once per block.
 */
static inline __attribute__((always_inline)) void
mm_pk_tile(const struct mm_pk *pk, int g, const uint8_t *X, size_t xs,
	   int64_t nb, int64_t b0, int c0, int ncol, int mr, int kb,
	   float *Y, size_t ldy, int add, const int mins, const int u8)
{
	const uint8_t *xr[MM_PK_NT];	/* block b0 of the X rows */
	const int32_t *xc[MM_PK_NT];
	const float *xd[MM_PK_NT], *xsum[MM_PK_NT];
	const size_t xb = u8 ? MM_QK : MM_QK * sizeof(int16_t);	/* bytes per block */
	__m256 f[MM_PK_RG][MM_PK_NT];

	mm_pk_xrows(X, xs, nb, b0, c0, ncol, xb, 1, MM_PK_NT, xr, xc, xd, xsum);
#pragma GCC unroll 8
	for (int c = 0; c < MM_PK_NT; c++)
#pragma GCC unroll 2
		for (int h = 0; h < MM_PK_RG; h++)
			f[h][c] = _mm256_setzero_ps();
	for (int b = 0; b < kb; b++) {
		__m256i a[MM_PK_RG][MM_PK_NT];
		const uint8_t *xbl[MM_PK_NT];

#pragma GCC unroll 8
		for (int c = 0; c < MM_PK_NT; c++)
			xbl[c] = xr[c] + b * xb;
		mm_pk_block(pk, g, b, xbl, a, u8);
#pragma GCC unroll 2
		for (int h = 0; h < MM_PK_RG; h++) {
			const __m256 dw = _mm256_load_ps(MM_PK_ROWS(pk->wd, g + h, b));

#pragma GCC unroll 8
			for (int c = 0; c < MM_PK_NT; c++)
				f[h][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(a[h][c]),
					_mm256_mul_ps(dw, _mm256_set1_ps(xd[c][b])),
					f[h][c]);
			if (mins) {	/* - m[r] * dx * sum(x) */
				const __m256 wm = _mm256_load_ps(MM_PK_ROWS(pk->wm, g + h, b));

#pragma GCC unroll 8
				for (int c = 0; c < MM_PK_NT; c++)
					f[h][c] = _mm256_fnmadd_ps(wm,
						_mm256_set1_ps(xsum[c][b]), f[h][c]);
			}
		}
	}
	for (int h = 0; h < MM_PK_RG; h++) {
		const int r0 = (g + h) * 8, nrow = mr - r0 < 8 ? mr - r0 : 8;

		for (int c = 0; c < ncol; c++) {
			float *y = Y + (size_t)(c0 + c) * ldy + r0;
			float t[8];

			if (nrow == 8) {
				_mm256_storeu_ps(y, add ? _mm256_add_ps(_mm256_loadu_ps(y),
									f[h][c]) : f[h][c]);
				continue;
			}
			_mm256_storeu_ps(t, f[h][c]);
			for (int r = 0; r < nrow; r++)
				y[r] = add ? y[r] + t[r] : t[r];
		}
	}
}
#endif

/* One register tile of the gemm: with VNNI every gemm type has the u8
 * form and takes the zmm tile, else mm_pk_tile(). */
static inline __attribute__((always_inline)) void
mm_pk_tile_for(enum mm_type t, const struct mm_pk *pk, int g,
	       const uint8_t *X, size_t xs, int64_t nb, int64_t b0, int c0,
	       int ncol, int mr, int kb, float *Y, size_t ldy, int add,
	       const int mins)
{
#ifdef MM_VNNI
	mm_pkz_tile(pk, g, X, xs, nb, b0, c0, ncol, mr, kb, Y, ldy, add, mins,
		    t == MM_TYPE_Q6_K);
#else
	mm_pk_tile(pk, g, X, xs, nb, b0, c0, ncol, mr, kb, Y, ldy, add, mins,
		   mm_pk_u8(t));
#endif
}

/* X rows per register tile of type t's gemm */
static inline int mm_pk_nt(enum mm_type t)
{
	(void)t;
#ifdef MM_VNNI
	return MM_PKZ_NT;
#else
	return MM_PK_NT;
#endif
}

static inline __attribute__((always_inline)) void
mm_avx2_gemm_pk(enum mm_type t, int64_t k, const uint8_t *w, size_t ws,
		const uint8_t *xp, size_t xs, float *Y, size_t ldy, int mr,
		int nc, void *scratch, const int mins)
{
	struct mm_pk *pk = scratch;
	const int64_t nb = k / MM_QK;

	const int64_t pkb = mm_gemm_panel_blocks(nb, MM_PK_KB);

	for (int64_t b0 = 0; b0 < nb; b0 += pkb) {
		const int kb = (int)(nb - b0 < pkb ? nb - b0 : pkb);

		/* W panel packed once, used by every X chunk */
		mm_pk_pack_w(pk, t, w, ws, mr, b0, kb);
		for (int j0 = 0; j0 < nc; j0 += MM_GEMM_NC) {
			const int nj = nc - j0 < MM_GEMM_NC ? nc - j0 : MM_GEMM_NC;

			/* the next panel's rows, spread over the tiles */
			const int nt = mm_pk_nt(t);
			const int gpt = mm_pk_gpt(t);
			const int ntile = (mr + 8 * gpt - 1) / (8 * gpt) *
					  ((nj + nt - 1) / nt);
			const int prt = j0 == 0 && b0 + pkb < nb ?
					(mr + ntile - 1) / ntile : 0;
			const int nkb = (int)(nb - b0 - pkb < pkb ? nb - b0 - pkb : pkb);
			int pr = 0;

			for (int g = 0; g < (mr + 7) / 8; g += gpt)
				for (int c0 = 0; c0 < nj; c0 += nt) {
					for (int i = 0; i < prt && pr < mr; i++)
						mm_pk_pf_row(t, w, ws, mr, pr++, b0 + pkb, nkb);
					mm_pk_tile_for(t, pk, g, xp + (size_t)j0 * xs, xs,
						       nb, b0, c0, nj - c0 < nt ? nj - c0 : nt,
						       mr, kb, Y + (size_t)j0 * ldy, ldy,
						       b0 > 0, mins);
				}
		}
	}
}

#define MM_DEF_GEMM(name, type, mins)					\
static void name(int64_t k, const void *w, size_t ws, const void *xp,	\
		 size_t xs, float *Y, size_t ldy, int64_t mr, int64_t nc,	\
		 void *scratch)						\
{									\
	mm_avx2_gemm_pk(type, k, w, ws, xp, xs, Y, ldy, (int)mr, (int)nc,	\
			scratch, mins);					\
}

MM_DEF_GEMM(mm_avx2_gemm_q8_0, MM_TYPE_Q8_0, 0)
MM_DEF_GEMM(mm_avx2_gemm_q4_0, MM_TYPE_Q4_0, 0)
MM_DEF_GEMM(mm_avx2_gemm_q4_0_r8, MM_TYPE_Q4_0_R8, 0)
MM_DEF_GEMM(mm_avx2_gemm_q5_0, MM_TYPE_Q5_0, 0)
MM_DEF_GEMM(mm_avx2_gemm_q5_0_r8, MM_TYPE_Q5_0_R8, 0)
MM_DEF_GEMM(mm_avx2_gemm_q4_k, MM_TYPE_Q4_K, 1)
MM_DEF_GEMM(mm_avx2_gemm_q4_k_r8, MM_TYPE_Q4_K_R8, 1)
MM_DEF_GEMM(mm_avx2_gemm_q6_k, MM_TYPE_Q6_K, 0)
#ifndef MM_VNNI
MM_DEF_GEMM(mm_avx2_gemm_q8_0_r8, MM_TYPE_Q8_0_R8, 0)
#endif

/* ---- Q4_K x Q8_K ------------------------------------------------------ */

/*
 * Decode, a row at a time (ggml's scheme, fewer vector ops): the 6-bit
 * scales and mins are unpacked with scalar ops (integer ALUs, off the
 * vector pipes, which bound this loop) into 16 bytes that are broadcast to
 * both 128-bit lanes; from there one vpshufb with a constant mask makes
 * each 32-element scale vector (s16) and the mins paired with the 16
 * bsums of x. Measured in cache on Zen 3: 1.5x ggml's form (vpbroadcastw
 * per scale, vphaddw of bsums). On x86 the loader rearranges Q4_K into
 * Q4_K_R8 (below, twice the speed in cache); this kernel then runs the
 * rows past its last full group.
 */
static void mm_avx2_gemv_q4_k(int64_t k, const void *w, size_t ws,
			      const void *xq, float *y, int64_t nr)
{
	const struct mm_block_q8_k *x = xq;
	const int64_t nb = k / MM_QK_K;
	const uint32_t kmask1 = 0x3f3f3f3f, kmask2 = 0x0f0f0f0f,
		       kmask3 = 0x03030303;
	const __m256i m4 = _mm256_set1_epi8(0xF);
	/* s16 lanes: min j for bsums 2j and 2j + 1 (bytes 8-15 hold mins) */
	const __m256i mins_sel = _mm256_setr_epi8(
		8, -128, 8, -128, 9, -128, 9, -128,
		10, -128, 10, -128, 11, -128, 11, -128,
		12, -128, 12, -128, 13, -128, 13, -128,
		14, -128, 14, -128, 15, -128, 15, -128);

	mm_pf_start(w, nr * ws);
	for (int64_t r = 0; r < nr; r++) {
		const struct mm_block_q4_k *b =
			(const void *)((const uint8_t *)w + r * ws);
		__m128 acc = _mm_setzero_ps();

		for (int64_t i = 0; i < nb; i++) {
			/* d and dmin of the block times dx */
			const __m128 dd = _mm_mul_ps(_mm_cvtph_ps(_mm_cvtsi32_si128(
				(int)((uint32_t)b[i].d | (uint32_t)b[i].dmin << 16))),
				_mm_set1_ps(x[i].d));
			uint32_t utmp[4];

			MM_PF_ROW(b, i, sizeof(*b));
			memcpy(utmp, b[i].scales, 12);
			utmp[3] = ((utmp[2] >> 4) & kmask2) | (((utmp[1] >> 6) & kmask3) << 4);
			const uint32_t uaux = utmp[1] & kmask1;
			utmp[1] = (utmp[2] & kmask2) | (((utmp[0] >> 6) & kmask3) << 4);
			utmp[2] = uaux;
			utmp[0] &= kmask1;

			/* bytes: scale 0..7, min 0..7, in both lanes */
			const __m256i sm = _mm256_broadcastsi128_si256(
				_mm_loadu_si128((const __m128i *)utmp));
			const __m256i prod = _mm256_madd_epi16(
				_mm256_shuffle_epi8(sm, mins_sel),
				_mm256_loadu_si256((const __m256i *)x[i].bsums));
			const uint8_t *q4 = b[i].qs;
			const int8_t *q8 = x[i].qs;
			__m256i sumi = _mm256_setzero_si256();

#pragma GCC unroll 4
			for (int j = 0; j < MM_QK_K / 64; j++) {
				/* scale 2j / 2j + 1 in every s16 lane */
				const __m256i scale_l = _mm256_shuffle_epi8(sm,
					_mm256_set1_epi16((short)(0x8000 | 2 * j)));
				const __m256i scale_h = _mm256_shuffle_epi8(sm,
					_mm256_set1_epi16((short)(0x8000 | (2 * j + 1))));
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
			/* the block's exact sums (scales, mins) of the row,
			 * then the float steps of mm_q4k_r8_rows8() */
			const __m256i h = _mm256_hadd_epi32(sumi, prod);
			const __m128i s2 = _mm_add_epi32(_mm256_castsi256_si128(h),
							 _mm256_extracti128_si256(h, 1));
			const __m128 f = _mm_cvtepi32_ps(_mm_hadd_epi32(s2, s2));

			acc = _mm_fmadd_ss(dd, f, acc);
			acc = _mm_fnmadd_ss(_mm_movehdup_ps(dd), _mm_movehdup_ps(f), acc);
		}
		y[r] = _mm_cvtss_f32(acc);
	}
}

/*
 * 8 rows of Q4_K_R8 (quant.h), a row per 32-bit lane as in mm_r8_rows8():
 * per super-block the 8 rows' 6-bit scales and mins are unpacked at once
 * from the 3 scale vectors (ggml's masks, on vectors); per 32-element
 * sub-block the products of 8 quant vectors with 4 bytes of x broadcast
 * add up in s16 (8 * 2 * 15 * 127 < 32768) and one vpmaddwd applies the
 * rows' scales; the mins meet x's 32-element sums (Q8_K's bsums in pairs)
 * in 4 vpmaddwd. Per row the sums are the exact integers of
 * mm_avx2_gemv_q4_k(), and the float steps the same, so the same bits.
 */
static inline __attribute__((always_inline)) void
mm_q4k_r8_rows8(int64_t nb, const uint8_t *grp,
		const struct mm_block_q8_k *x, float *y)
{
	const size_t bs = 8 * sizeof(struct mm_block_q4_k);	/* 1152 */
	const __m256i lo16 = _mm256_set1_epi32(0x00ff00ff);
	/* dwords of x's sub-block sums: (0 | 2 << 16) in the low lane and
	 * (4 | 6 << 16) in the high one; (1 | 3), (5 | 7) */
	const __m256i even = _mm256_setr_epi8(0, 1, 4, 5, 0, 1, 4, 5, 0, 1, 4, 5,
					      0, 1, 4, 5, 0, 1, 4, 5, 0, 1, 4, 5,
					      0, 1, 4, 5, 0, 1, 4, 5);
	const __m256i odd = _mm256_add_epi8(even, _mm256_set1_epi8(2));
	__m256 acc = _mm256_setzero_ps();

	for (int64_t i = 0; i < nb; i++) {
		const uint8_t *blk = grp + i * bs;
		const uint8_t *qs = blk + mm_r8_qbase(MM_TYPE_Q4_K_R8);
		const __m256 dx = _mm256_set1_ps(x[i].d);
		const __m256 dv = _mm256_mul_ps(_mm256_cvtph_ps(
			_mm_loadu_si128((const __m128i *)blk)), dx);
		const __m256 mv = _mm256_mul_ps(_mm256_cvtph_ps(
			_mm_loadu_si128((const __m128i *)(blk + MM_R8_KDMIN))), dx);
		__m256i sc[4];	/* scales 0-3, 4-7, mins 0-3, 4-7 */

		mm_q4k_r8_scales(blk, sc);
		const __m256i mn03 = sc[2], mn47 = sc[3];
		/* x's 32-element sums s0..s3 (low lane), s4..s7 (high), twice */
		const __m256i xs = _mm256_hadd_epi16(
			_mm256_loadu_si256((const __m256i *)x[i].bsums),
			_mm256_loadu_si256((const __m256i *)x[i].bsums));
		const __m256i xe = _mm256_shuffle_epi8(xs, even);
		const __m256i xo = _mm256_shuffle_epi8(xs, odd);
		/* sum_j min_j * s_j, per lane */
		const __m256i p = _mm256_add_epi32(
			_mm256_add_epi32(
				_mm256_madd_epi16(_mm256_and_si256(mn03, lo16),
						  _mm256_permute2x128_si256(xe, xe, 0x00)),
				_mm256_madd_epi16(_mm256_srli_epi16(mn03, 8),
						  _mm256_permute2x128_si256(xo, xo, 0x00))),
			_mm256_add_epi32(
				_mm256_madd_epi16(_mm256_and_si256(mn47, lo16),
						  _mm256_permute2x128_si256(xe, xe, 0x11)),
				_mm256_madd_epi16(_mm256_srli_epi16(mn47, 8),
						  _mm256_permute2x128_si256(xo, xo, 0x11))));
		__m256i sumi = _mm256_setzero_si256();

#pragma GCC unroll 4
		for (int jp = 0; jp < 4; jp++) {
			/* sub-blocks 2 jp (low nibbles) and 2 jp + 1 (high) */
			const int8_t *xl = x[i].qs + 64 * jp;
			__m256i pl = _mm256_setzero_si256(), ph = pl;

			mm_pf_ahead(blk + bs / 4 * jp, bs / 4);
#pragma GCC unroll 8
			for (int t = 0; t < 8; t++) {
				const __m256i v = _mm256_loadu_si256(
					(const __m256i *)(qs + 32 * (8 * jp + t)));

				pl = _mm256_add_epi16(pl, _mm256_maddubs_epi16(
					mm_r8_vals(v, _mm256_setzero_si256(), t, 0, 0),
					_mm256_set1_epi32((int)mm_u32_at((const uint8_t *)xl + 4 * t))));
				ph = _mm256_add_epi16(ph, _mm256_maddubs_epi16(
					mm_r8_vals(v, _mm256_setzero_si256(), t, 1, 0),
					_mm256_set1_epi32((int)mm_u32_at((const uint8_t *)xl + 32 + 4 * t))));
			}
			/* scale 2 jp and 2 jp + 1 of each lane, as s16 pairs */
#define MM_K_SC(s) _mm256_shuffle_epi8(sc[(s) / 4], _mm256_setr_epi8(	\
		(s) % 4, -128, (s) % 4, -128, 4 + (s) % 4, -128, 4 + (s) % 4, -128, \
		8 + (s) % 4, -128, 8 + (s) % 4, -128, 12 + (s) % 4, -128, 12 + (s) % 4, -128, \
		(s) % 4, -128, (s) % 4, -128, 4 + (s) % 4, -128, 4 + (s) % 4, -128, \
		8 + (s) % 4, -128, 8 + (s) % 4, -128, 12 + (s) % 4, -128, 12 + (s) % 4, -128))
			sumi = _mm256_add_epi32(sumi, _mm256_add_epi32(
				_mm256_madd_epi16(pl, MM_K_SC(2 * jp)),
				_mm256_madd_epi16(ph, MM_K_SC(2 * jp + 1))));
#undef MM_K_SC
		}
		acc = _mm256_fmadd_ps(dv, _mm256_cvtepi32_ps(sumi), acc);
		acc = _mm256_fnmadd_ps(mv, _mm256_cvtepi32_ps(p), acc);
	}
	_mm256_storeu_ps(y, acc);
}

/* Q4_K_R8 decode: 8-row groups, then the rows past the last full group,
 * which are Q4_K rows. */
static void mm_avx2_gemv_q4_k_r8(int64_t k, const void *w, size_t ws,
				 const void *xq, float *y, int64_t nr)
{
	const int64_t nb = k / MM_QK_K;
	int64_t r = 0;

	mm_pf_start(w, nr * ws);
	for (; r + 8 <= nr; r += 8)
		mm_q4k_r8_rows8(nb, (const uint8_t *)w + r * ws, xq, y + r);
	if (r < nr)
		mm_avx2_gemv_q4_k(k, (const uint8_t *)w + r * ws, ws, xq, y + r,
				  nr - r);
}

/* ---- Q6_K x Q8_K ------------------------------------------------------ */

/*
 * Decode, a row at a time: 6-bit q (0..63) from ql nibbles and qh pairs,
 * vpmaddubsw(q, x) per 32 elements, vpmaddwd with the two int8 scales of
 * its 16-element halves, picked by one vpshufb from scales already
 * widened to s16 once per block (ggml widens per 32 elements). The -32
 * offset is applied once per super-block from the activation block sums:
 * 32 * sum_j scale_j * bsums_j. In cache on Zen 3: 1.3x the ggml form.
 */
static void mm_avx2_gemv_q6_k(int64_t k, const void *w, size_t ws,
			      const void *xq, float *y, int64_t nr)
{
	const struct mm_block_q8_k *x = xq;
	const int64_t nb = k / MM_QK_K;
	const __m256i m4 = _mm256_set1_epi8(0xF);
	const __m256i m30 = _mm256_set1_epi8(0x30);

	mm_pf_start(w, nr * ws);
	for (int64_t r = 0; r < nr; r++) {
		const struct mm_block_q6_k *b =
			(const void *)((const uint8_t *)w + r * ws);
		__m256 acc = _mm256_setzero_ps();

		for (int64_t i = 0; i < nb; i++) {
			const float d = x[i].d * mm_h2f(b[i].d);
			const uint8_t *ql = b[i].ql, *qh = b[i].qh;
			const int8_t *q8 = x[i].qs;
			/* the 16 int8 scales as s16; scales 0-7 and 8-15 each
			 * in both 128-bit lanes for vpshufb */
			const __m256i sc16 = _mm256_cvtepi8_epi16(
				_mm_loadu_si128((const __m128i *)b[i].scales));
			const __m256i sch[2] = {
				_mm256_permute2x128_si256(sc16, sc16, 0x00),
				_mm256_permute2x128_si256(sc16, sc16, 0x11),
			};
			/* offset: 32 * sum_j scale_j * bsums_j */
			const __m256i corr = _mm256_madd_epi16(sc16,
				_mm256_loadu_si256((const __m256i *)x[i].bsums));
			__m256i sumi = _mm256_sub_epi32(_mm256_setzero_si256(),
							_mm256_slli_epi32(corr, 5));

			MM_PF_ROW(b, i, sizeof(*b));
#pragma GCC unroll 2
			for (int j = 0; j < MM_QK_K / 128; j++) {
				const __m256i qb1 = _mm256_loadu_si256((const __m256i *)ql);
				const __m256i qb2 = _mm256_loadu_si256((const __m256i *)(ql + 32));
				const __m256i qbh = _mm256_loadu_si256((const __m256i *)qh);
				__m256i q[4];

				/* low nibbles | 2 high bits moved to bits 4-5
				 * (16-bit shifts: the 0x30 mask keeps each
				 * byte's own bits) */
				q[0] = _mm256_or_si256(_mm256_and_si256(qb1, m4),
					_mm256_and_si256(_mm256_slli_epi16(qbh, 4), m30));
				q[1] = _mm256_or_si256(_mm256_and_si256(qb2, m4),
					_mm256_and_si256(_mm256_slli_epi16(qbh, 2), m30));
				q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(qb1, 4), m4),
					_mm256_and_si256(qbh, m30));
				q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(qb2, 4), m4),
					_mm256_and_si256(_mm256_srli_epi16(qbh, 2), m30));
#pragma GCC unroll 4
				for (int u = 0; u < 4; u++) {
					/* scales 2u, 2u + 1 of this half: s16
					 * element 2u in the low lane, 2u + 1 in
					 * the high one */
					const __m256i sc = _mm256_shuffle_epi8(sch[j],
						_mm256_setr_epi8(
							4 * u, 4 * u + 1, 4 * u, 4 * u + 1,
							4 * u, 4 * u + 1, 4 * u, 4 * u + 1,
							4 * u, 4 * u + 1, 4 * u, 4 * u + 1,
							4 * u, 4 * u + 1, 4 * u, 4 * u + 1,
							4 * u + 2, 4 * u + 3, 4 * u + 2, 4 * u + 3,
							4 * u + 2, 4 * u + 3, 4 * u + 2, 4 * u + 3,
							4 * u + 2, 4 * u + 3, 4 * u + 2, 4 * u + 3,
							4 * u + 2, 4 * u + 3, 4 * u + 2, 4 * u + 3));
					const __m256i p = _mm256_maddubs_epi16(q[u],
						_mm256_loadu_si256((const __m256i *)(q8 + 32 * u)));

					sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(sc, p));
				}
				ql += 64;
				qh += 32;
				q8 += 128;
			}
			acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
		}
		y[r] = mm_hsum(acc);
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
		[MM_TYPE_Q4_0_R8] = mm_avx2_gemv_q4_0_r8,
		[MM_TYPE_Q4_1] = mm_avx2_gemv_q4_1,
		[MM_TYPE_Q5_0] = mm_avx2_gemv_q5_0,
		[MM_TYPE_Q5_0_R8] = mm_avx2_gemv_q5_0_r8,
		[MM_TYPE_Q4_K] = mm_avx2_gemv_q4_k,
		[MM_TYPE_Q4_K_R8] = mm_avx2_gemv_q4_k_r8,
		[MM_TYPE_Q6_K] = mm_avx2_gemv_q6_k,
#ifndef MM_VNNI
		[MM_TYPE_Q8_0_R8] = mm_avx2_gemv_q8_0_r8,
#endif
	},
	.gemm = {
		[MM_TYPE_Q8_0] = mm_avx2_gemm_q8_0,
		[MM_TYPE_Q4_0] = mm_avx2_gemm_q4_0,
		[MM_TYPE_Q4_0_R8] = mm_avx2_gemm_q4_0_r8,
		[MM_TYPE_Q5_0] = mm_avx2_gemm_q5_0,
		[MM_TYPE_Q5_0_R8] = mm_avx2_gemm_q5_0_r8,
		[MM_TYPE_Q4_K] = mm_avx2_gemm_q4_k,
		[MM_TYPE_Q4_K_R8] = mm_avx2_gemm_q4_k_r8,
		[MM_TYPE_Q6_K] = mm_avx2_gemm_q6_k,
#ifndef MM_VNNI
		[MM_TYPE_Q8_0_R8] = mm_avx2_gemm_q8_0_r8,
#endif
	},
	.xprep = {
#ifdef MM_VNNI
		[MM_TYPE_Q8_0] = mm_vnni_xprep_q8_0,
		[MM_TYPE_Q4_0] = mm_vnni_xprep_q4_0,
		[MM_TYPE_Q4_0_R8] = mm_vnni_xprep_q4_0,
		[MM_TYPE_Q5_0] = mm_vnni_xprep_q5_0,
		[MM_TYPE_Q5_0_R8] = mm_vnni_xprep_q5_0,
#else
		[MM_TYPE_Q8_0] = mm_avx2_xprep_q8_0,
		[MM_TYPE_Q8_0_R8] = mm_avx2_xprep_q8_0,
		[MM_TYPE_Q4_0] = mm_avx2_xprep_q8_0_u8,
		[MM_TYPE_Q4_0_R8] = mm_avx2_xprep_q8_0_u8,
		[MM_TYPE_Q5_0] = mm_avx2_xprep_q8_0_u8,
		[MM_TYPE_Q5_0_R8] = mm_avx2_xprep_q8_0_u8,
#endif
		[MM_TYPE_Q4_K] = mm_avx2_xprep_q8_k_u8,
		[MM_TYPE_Q4_K_R8] = mm_avx2_xprep_q8_k_u8,
#ifdef MM_VNNI
		[MM_TYPE_Q6_K] = mm_vnni_xprep_q6_k,
#else
		[MM_TYPE_Q6_K] = mm_avx2_xprep_q8_k_u8,
#endif
	},
	.xprep_bytes = mm_avx2_xprep_bytes,
};

// SPDX-License-Identifier: MIT
/*
 * kern_neon.c - arm64 NEON + dot-product (sdot) kernels: decode (gemv)
 * for every weight type, prefill (packed gemm) for Q8_0, Q4_0, Q5_0, Q4_K
 * and Q6_K (built with -march=armv8.2-a+dotprod, used when HWCAP_ASIMDDP
 * is set); the "neon-i8mm" set replaces that gemm with one on smmla
 * (HWCAP2_I8MM). The other types' matmul runs gemv per X row.
 */
#include "quant_kern.h"

#include <string.h>

#if defined(__aarch64__)
#include <arm_neon.h>

/* f16 -> f32 in one fcvt (AArch64's __fp16 is IEEE half); the portable
 * mm_f16_to_f32() is a call, twice per block in the decode loops */
static inline float mm_h2f(uint16_t h)
{
	__fp16 f;

	memcpy(&f, &h, sizeof(f));
	return (float)f;
}

static void mm_neon_gemv_q8_0(int64_t k, const void *w, size_t ws,
			      const void *xq, float *y, int64_t nr)
{
	const struct mm_block_q8_0 *x = xq;
	const int64_t nb = k / MM_QK;

	for (int64_t r = 0; r < nr; r++) {
		const struct mm_block_q8_0 *b =
			(const void *)((const uint8_t *)w + r * ws);
		float32x4_t acc = vdupq_n_f32(0);

		for (int64_t i = 0; i < nb; i++) {
			int32x4_t p = vdupq_n_s32(0);

			p = vdotq_s32(p, vld1q_s8(b[i].qs), vld1q_s8(x[i].qs));
			p = vdotq_s32(p, vld1q_s8(b[i].qs + 16), vld1q_s8(x[i].qs + 16));
			acc = vmlaq_n_f32(acc, vcvtq_f32_s32(p),
					  mm_h2f(b[i].d) * mm_h2f(x[i].d));
		}
		y[r] = vaddvq_f32(acc);
	}
}

/*
 * F32, F16 and BF16 rows against an f32 x: four 4-lane sums per row (16
 * elements a step), the tail in scalar code. F16 widens with fcvtl,
 * BF16 with a 16-bit shift.
 */
static inline __attribute__((always_inline)) float32x4_t
mm_neon_wf32(const void *row, int64_t i, const int t)
{
	if (t == MM_TYPE_F32)
		return vld1q_f32((const float *)row + i);
	if (t == MM_TYPE_F16)
		return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16((const uint16_t *)row + i)));
	return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16((const uint16_t *)row + i), 16));
}

static inline __attribute__((always_inline)) void
mm_neon_gemv_float(int64_t k, const void *w, size_t ws, const void *xq,
		   float *y, int64_t nr, const int t)
{
	const float *x = xq;

	for (int64_t r = 0; r < nr; r++) {
		const uint8_t *row = (const uint8_t *)w + r * ws;
		float32x4_t a[4] = { vdupq_n_f32(0), vdupq_n_f32(0),
				     vdupq_n_f32(0), vdupq_n_f32(0) };
		int64_t i = 0;
		float s;

		for (; i + 16 <= k; i += 16)
#pragma GCC unroll 4
			for (int j = 0; j < 4; j++)
				a[j] = vfmaq_f32(a[j], mm_neon_wf32(row, i + 4 * j, t),
						 vld1q_f32(x + i + 4 * j));
		for (; i + 4 <= k; i += 4)
			a[0] = vfmaq_f32(a[0], mm_neon_wf32(row, i, t), vld1q_f32(x + i));
		s = vaddvq_f32(vaddq_f32(vaddq_f32(a[0], a[1]), vaddq_f32(a[2], a[3])));
		for (; i < k; i++) {
			const uint16_t h = ((const uint16_t *)row)[i];

			s += (t == MM_TYPE_F32 ? ((const float *)row)[i] :
			      t == MM_TYPE_F16 ? mm_h2f(h) : mm_bf16_to_f32(h)) * x[i];
		}
		y[r] = s;
	}
}

static void mm_neon_gemv_f32(int64_t k, const void *w, size_t ws,
			     const void *xq, float *y, int64_t nr)
{
	mm_neon_gemv_float(k, w, ws, xq, y, nr, MM_TYPE_F32);
}

static void mm_neon_gemv_f16(int64_t k, const void *w, size_t ws,
			     const void *xq, float *y, int64_t nr)
{
	mm_neon_gemv_float(k, w, ws, xq, y, nr, MM_TYPE_F16);
}

static void mm_neon_gemv_bf16(int64_t k, const void *w, size_t ws,
			      const void *xq, float *y, int64_t nr)
{
	mm_neon_gemv_float(k, w, ws, xq, y, nr, MM_TYPE_BF16);
}

/* Q4_1 x Q8_1: the nibbles q (0..15) as they are, d_w * d_x per block
 * and the min m_w times the activation block's d_x * sum(x) */
static void mm_neon_gemv_q4_1(int64_t k, const void *w, size_t ws,
			      const void *xq, float *y, int64_t nr)
{
	const struct mm_block_q8_1 *x = xq;
	const int64_t nb = k / MM_QK;
	const uint8x16_t m4 = vdupq_n_u8(0x0F);

	for (int64_t r = 0; r < nr; r++) {
		const struct mm_block_q4_1 *b =
			(const void *)((const uint8_t *)w + r * ws);
		float32x4_t acc = vdupq_n_f32(0);
		float mins = 0;

		for (int64_t i = 0; i < nb; i++) {
			const uint8x16_t q = vld1q_u8(b[i].qs);
			int32x4_t p = vdupq_n_s32(0);

			p = vdotq_s32(p, vreinterpretq_s8_u8(vandq_u8(q, m4)),
				      vld1q_s8(x[i].qs));
			p = vdotq_s32(p, vreinterpretq_s8_u8(vshrq_n_u8(q, 4)),
				      vld1q_s8(x[i].qs + 16));
			acc = vmlaq_n_f32(acc, vcvtq_f32_s32(p), mm_h2f(b[i].d) * x[i].d);
			mins += mm_h2f(b[i].m) * x[i].s;
		}
		y[r] = vaddvq_f32(acc) + mins;
	}
}

/* Bit 4 of 16 elements: bytes 0-7 from qh byte a, 8-15 from byte b */
static inline uint8x16_t mm_neon_bit4(uint8_t a, uint8_t b)
{
	static const uint8_t bits[16] = { 1, 2, 4, 8, 16, 32, 64, 128,
					  1, 2, 4, 8, 16, 32, 64, 128 };

	return vandq_u8(vtstq_u8(vcombine_u8(vdup_n_u8(a), vdup_n_u8(b)),
				 vld1q_u8(bits)), vdupq_n_u8(0x10));
}

/* Q4_0 (q5 = 0) or Q5_0 rows: nibbles (and Q5_0's bit 4) less 8 or 16 */
static inline __attribute__((always_inline)) void
mm_neon_gemv_q4(int64_t k, const void *w, size_t ws, const void *xq,
		float *y, int64_t nr, const int q5)
{
	const struct mm_block_q8_0 *x = xq;
	const int64_t nb = k / MM_QK;
	const size_t bs = q5 ? sizeof(struct mm_block_q5_0) : sizeof(struct mm_block_q4_0);
	const uint8x16_t m4 = vdupq_n_u8(0x0F);
	const int8x16_t off = vdupq_n_s8(q5 ? 16 : 8);

	for (int64_t r = 0; r < nr; r++) {
		const uint8_t *row = (const uint8_t *)w + r * ws;
		float32x4_t acc = vdupq_n_f32(0);

		for (int64_t i = 0; i < nb; i++) {
			const uint8_t *blk = row + i * bs;
			const struct mm_block_q5_0 *b5 = (const void *)blk;
			uint16_t d;
			uint8x16_t l, h;

			memcpy(&d, blk, 2);
			if (q5) {
				const uint8x16_t q = vld1q_u8(b5->qs);

				l = vorrq_u8(vandq_u8(q, m4), mm_neon_bit4(b5->qh[0], b5->qh[1]));
				h = vorrq_u8(vshrq_n_u8(q, 4), mm_neon_bit4(b5->qh[2], b5->qh[3]));
			} else {
				const uint8x16_t q = vld1q_u8(blk + 2);

				l = vandq_u8(q, m4);
				h = vshrq_n_u8(q, 4);
			}
			int32x4_t p = vdupq_n_s32(0);

			p = vdotq_s32(p, vsubq_s8(vreinterpretq_s8_u8(l), off),
				      vld1q_s8(x[i].qs));
			p = vdotq_s32(p, vsubq_s8(vreinterpretq_s8_u8(h), off),
				      vld1q_s8(x[i].qs + 16));
			acc = vmlaq_n_f32(acc, vcvtq_f32_s32(p),
					  mm_h2f(d) * mm_h2f(x[i].d));
		}
		y[r] = vaddvq_f32(acc);
	}
}

static void mm_neon_gemv_q4_0(int64_t k, const void *w, size_t ws,
			      const void *xq, float *y, int64_t nr)
{
	mm_neon_gemv_q4(k, w, ws, xq, y, nr, 0);
}

static void mm_neon_gemv_q5_0(int64_t k, const void *w, size_t ws,
			      const void *xq, float *y, int64_t nr)
{
	mm_neon_gemv_q4(k, w, ws, xq, y, nr, 1);
}

/*
 * Q4_K x Q8_K, a row at a time: the 6-bit scales and mins unpacked with
 * scalar code, two sdot per 32-element sub-block (q 0..15 signed is
 * exact), each sub-block's s32 lanes scaled by its scale into one s32
 * accumulator (|sum| < 2^25 per super-block) and reduced once.
 */
static void mm_neon_gemv_q4_k(int64_t k, const void *w, size_t ws,
			      const void *xq, float *y, int64_t nr)
{
	const struct mm_block_q8_k *x = xq;
	const int64_t nb = k / MM_QK_K;
	const uint8x16_t m4 = vdupq_n_u8(0x0F);

	for (int64_t r = 0; r < nr; r++) {
		const struct mm_block_q4_k *b =
			(const void *)((const uint8_t *)w + r * ws);
		float s = 0;

		for (int64_t i = 0; i < nb; i++) {
			const int8_t *q8 = x[i].qs;
			int32x4_t acc = vdupq_n_s32(0);
			int summ = 0;

			for (int jp = 0; jp < 4; jp++) {
				const uint8x16_t q0 = vld1q_u8(b[i].qs + 32 * jp);
				const uint8x16_t q1 = vld1q_u8(b[i].qs + 32 * jp + 16);
				uint8_t sc[2], mn[2];
				int32x4_t lo = vdupq_n_s32(0), hi = vdupq_n_s32(0);

				for (int h = 0; h < 2; h++) {
					mm_q4k_scale_min(2 * jp + h, b[i].scales, &sc[h], &mn[h]);
					summ += mn[h] * (x[i].bsums[4 * jp + 2 * h] +
							 x[i].bsums[4 * jp + 2 * h + 1]);
				}
				lo = vdotq_s32(lo, vreinterpretq_s8_u8(vandq_u8(q0, m4)),
					       vld1q_s8(q8 + 64 * jp));
				lo = vdotq_s32(lo, vreinterpretq_s8_u8(vandq_u8(q1, m4)),
					       vld1q_s8(q8 + 64 * jp + 16));
				hi = vdotq_s32(hi, vreinterpretq_s8_u8(vshrq_n_u8(q0, 4)),
					       vld1q_s8(q8 + 64 * jp + 32));
				hi = vdotq_s32(hi, vreinterpretq_s8_u8(vshrq_n_u8(q1, 4)),
					       vld1q_s8(q8 + 64 * jp + 48));
				acc = vmlaq_n_s32(acc, lo, sc[0]);
				acc = vmlaq_n_s32(acc, hi, sc[1]);
			}
			s += x[i].d * mm_h2f(b[i].d) * (float)vaddvq_s32(acc) -
			     x[i].d * mm_h2f(b[i].dmin) * (float)summ;
		}
		y[r] = s;
	}
}

/*
 * Q6_K x Q8_K, a row at a time: per 32 positions l of a 128-element half,
 * the four 6-bit values (low nibbles of ql[l], ql[l + 32], their high
 * nibbles; two bits each from qh[l]) less 32, one sdot each per 16, and
 * each 16's s32 lanes scaled by its int8 scale (|sum| < 2^28).
 */
static void mm_neon_gemv_q6_k(int64_t k, const void *w, size_t ws,
			      const void *xq, float *y, int64_t nr)
{
	const struct mm_block_q8_k *x = xq;
	const int64_t nb = k / MM_QK_K;
	const uint8x16_t m4 = vdupq_n_u8(0x0F), m3 = vdupq_n_u8(0x30);
	const int8x16_t s32 = vdupq_n_s8(32);

	for (int64_t r = 0; r < nr; r++) {
		const struct mm_block_q6_k *b =
			(const void *)((const uint8_t *)w + r * ws);
		float s = 0;

		for (int64_t i = 0; i < nb; i++) {
			int32x4_t acc = vdupq_n_s32(0);

			for (int n = 0; n < 2; n++) {
				const uint8_t *ql = b[i].ql + 64 * n, *qh = b[i].qh + 32 * n;
				const int8_t *sc = b[i].scales + 8 * n;
				const int8_t *q8 = x[i].qs + 128 * n;

				for (int l = 0; l < 32; l += 16) {
					const int is = l / 16;
					const uint8x16_t a = vld1q_u8(ql + l);
					const uint8x16_t c = vld1q_u8(ql + l + 32);
					const uint8x16_t h = vld1q_u8(qh + l);
#define MM_Q6V(lo4, hbits) vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(lo4,	\
		vandq_u8(hbits, m3))), s32)
					const int8x16_t v1 = MM_Q6V(vandq_u8(a, m4), vshlq_n_u8(h, 4));
					const int8x16_t v2 = MM_Q6V(vandq_u8(c, m4), vshlq_n_u8(h, 2));
					const int8x16_t v3 = MM_Q6V(vshrq_n_u8(a, 4), h);
					const int8x16_t v4 = MM_Q6V(vshrq_n_u8(c, 4), vshrq_n_u8(h, 2));
#undef MM_Q6V
					const int32x4_t z = vdupq_n_s32(0);

					acc = vmlaq_n_s32(acc, vdotq_s32(z, v1, vld1q_s8(q8 + l)),
							  sc[is + 0]);
					acc = vmlaq_n_s32(acc, vdotq_s32(z, v2, vld1q_s8(q8 + l + 32)),
							  sc[is + 2]);
					acc = vmlaq_n_s32(acc, vdotq_s32(z, v3, vld1q_s8(q8 + l + 64)),
							  sc[is + 4]);
					acc = vmlaq_n_s32(acc, vdotq_s32(z, v4, vld1q_s8(q8 + l + 96)),
							  sc[is + 6]);
				}
			}
			s += x[i].d * mm_h2f(b[i].d) * (float)vaddvq_s32(acc);
		}
		y[r] = s;
	}
}

/* ---- prefill: packed GEMM ------------------------------------------- */

/*
 * Matrix x matrix for Q8_0, Q4_0, Q5_0, Q4_K and Q6_K weights.
 *
 * Each call (mr <= MM_GEMM_MC W rows, any nc X rows) walks k in panels of
 * MM_NPK_KB 32-element blocks and packs the W panel in the caller's
 * scratch as int8 values, four rows interleaved by 4 k: one 16-byte
 * vector holds elements 4s..4s+3 of rows 0-3. One sdot by lane (the four
 * bytes 4s..4s+3 of an X row) then adds four products to each of the
 * rows' s32 lanes, so there are no horizontal sums and one X vector
 * serves four steps. The register tile is 8 W rows x 4 X rows: per step
 * 2 W loads for 8 sdot; per block the s32 sums take one FMA per 4 rows
 * x 1 X row with dw[0..3] * dx (Q6_K: per 16 elements, its scales being
 * per 16). Values are the type's signed q (Q4_0: q - 8, Q5_0: q - 16,
 * Q6_K: q - 32, Q4_K: q and a min, taken off with the X row's
 * dx * sum(x) per block), so every product is exact in s32.
 *
 * X rows are prepared once per product (xprep): the int8 values of each
 * block, 32 bytes, then dx of every block, then dx * sum(x).
 */
#define MM_NPK_KB 16	/* blocks of k per panel */
#define MM_NPK_NT 4	/* X rows per register tile */

struct mm_npk {
	int8_t w[MM_GEMM_MC / 4][MM_NPK_KB][8][16];	/* rows x 4 k per step */
	float wd[MM_GEMM_MC / 4][MM_NPK_KB][2][4];	/* scale per half block */
	float wm[MM_GEMM_MC / 4][MM_NPK_KB][4];	/* Q4_K: min */
};
_Static_assert(sizeof(struct mm_npk) <= MM_GEMM_SCRATCH, "gemm scratch");

static size_t mm_neon_xprep_bytes(int64_t k)
{
	return (size_t)(k / MM_QK) * (MM_QK + 2 * sizeof(float));
}

static inline __attribute__((always_inline)) void
mm_neon_xprep(int64_t k, const void *xq, void *xp, const int q8k)
{
	const int64_t nb = k / MM_QK;
	int8_t *o = xp;
	float *od = (float *)(o + nb * MM_QK), *os = od + nb;

	for (int64_t b = 0; b < nb; b++) {
		const int8_t *q;

		if (q8k) {
			const struct mm_block_q8_k *x = (const struct mm_block_q8_k *)xq + b / 8;
			const int j = (int)(b % 8);

			q = x->qs + 32 * j;
			od[b] = x->d;
			os[b] = x->d * (float)(x->bsums[2 * j] + x->bsums[2 * j + 1]);
		} else {
			const struct mm_block_q8_0 *x = (const struct mm_block_q8_0 *)xq + b;

			q = x->qs;
			od[b] = mm_h2f(x->d);
			os[b] = 0;
		}
		vst1q_s8(o + b * MM_QK, vld1q_s8(q));
		vst1q_s8(o + b * MM_QK + 16, vld1q_s8(q + 16));
	}
}

static void mm_neon_xprep_q8_0(int64_t k, const void *xq, void *xp)
{
	mm_neon_xprep(k, xq, xp, 0);
}

static void mm_neon_xprep_q8_k(int64_t k, const void *xq, void *xp)
{
	mm_neon_xprep(k, xq, xp, 1);
}

/*
 * 32-element block sb of a W row (K-quants: sub-block sb % 8 of
 * super-block sb / 8) as signed values v[0..1], with w = d[h] * v - m
 * (d[0] for elements 0-15, d[1] for 16-31; the same but for Q6_K).
 */
static inline __attribute__((always_inline)) void
mm_neon_wblock(enum mm_type t, const uint8_t *row, int64_t sb, int8x16_t v[2],
	       float d[2], float *m)
{
	const uint8x16_t m4 = vdupq_n_u8(0x0F);
	uint8x16_t l, h;

	*m = 0;
	switch (t) {
	case MM_TYPE_Q8_0: {
		const struct mm_block_q8_0 *b = (const struct mm_block_q8_0 *)row + sb;

		d[0] = d[1] = mm_h2f(b->d);
		v[0] = vld1q_s8(b->qs);
		v[1] = vld1q_s8(b->qs + 16);
		return;
	}
	case MM_TYPE_Q4_0: {
		const struct mm_block_q4_0 *b = (const struct mm_block_q4_0 *)row + sb;
		const uint8x16_t q = vld1q_u8(b->qs);

		d[0] = d[1] = mm_h2f(b->d);
		v[0] = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(q, m4)), vdupq_n_s8(8));
		v[1] = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(q, 4)), vdupq_n_s8(8));
		return;
	}
	case MM_TYPE_Q5_0: {
		const struct mm_block_q5_0 *b = (const struct mm_block_q5_0 *)row + sb;
		const uint8x16_t q = vld1q_u8(b->qs);

		d[0] = d[1] = mm_h2f(b->d);
		l = vorrq_u8(vandq_u8(q, m4), mm_neon_bit4(b->qh[0], b->qh[1]));
		h = vorrq_u8(vshrq_n_u8(q, 4), mm_neon_bit4(b->qh[2], b->qh[3]));
		v[0] = vsubq_s8(vreinterpretq_s8_u8(l), vdupq_n_s8(16));
		v[1] = vsubq_s8(vreinterpretq_s8_u8(h), vdupq_n_s8(16));
		return;
	}
	case MM_TYPE_Q4_K: {
		const struct mm_block_q4_k *b = (const struct mm_block_q4_k *)row + sb / 8;
		const int j = (int)(sb % 8);
		const uint8_t *qs = b->qs + (j / 2) * 32;
		uint8_t sc, mn;

		mm_q4k_scale_min(j, b->scales, &sc, &mn);
		d[0] = d[1] = mm_h2f(b->d) * sc;
		*m = mm_h2f(b->dmin) * mn;
#pragma GCC unroll 4
		for (int i = 0; i < 2; i++) {
			const uint8x16_t q = vld1q_u8(qs + 16 * i);

			v[i] = vreinterpretq_s8_u8(j & 1 ? vshrq_n_u8(q, 4) : vandq_u8(q, m4));
		}
		return;
	}
	case MM_TYPE_Q6_K: {
		const struct mm_block_q6_k *b = (const struct mm_block_q6_k *)row + sb / 8;
		const int j = (int)(sb % 8), hf = j / 4, jj = j % 4;
		const uint8_t *ql = b->ql + 64 * hf + (jj & 1) * 32, *qh = b->qh + 32 * hf;
		const float dd = mm_h2f(b->d);

		/* bits 2 jj, 2 jj + 1 of qh as bits 4-5 */
		const int8x16_t sh = vdupq_n_s8((int8_t)(4 - 2 * jj));

#pragma GCC unroll 4
		for (int i = 0; i < 2; i++) {
			const uint8x16_t q = vld1q_u8(ql + 16 * i);

			l = jj < 2 ? vandq_u8(q, m4) : vshrq_n_u8(q, 4);
			h = vandq_u8(vshlq_u8(vld1q_u8(qh + 16 * i), sh), vdupq_n_u8(0x30));
			v[i] = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(l, h)), vdupq_n_s8(32));
			d[i] = dd * b->scales[8 * hf + 2 * jj + i];
		}
		return;
	}
	default:
		d[0] = d[1] = 0;
		v[0] = v[1] = vdupq_n_s8(0);
		return;
	}
}

/* out[s] = elements 4s..4s+3 of rows 0-3 (v[r]: 16 elements of row r) */
static inline __attribute__((always_inline)) void
mm_neon_tr4(const int8x16_t v[4], int8_t *out)
{
	const int32x4_t r0 = vreinterpretq_s32_s8(v[0]), r1 = vreinterpretq_s32_s8(v[1]);
	const int32x4_t r2 = vreinterpretq_s32_s8(v[2]), r3 = vreinterpretq_s32_s8(v[3]);
	const int64x2_t t0 = vreinterpretq_s64_s32(vtrn1q_s32(r0, r1));
	const int64x2_t t1 = vreinterpretq_s64_s32(vtrn2q_s32(r0, r1));
	const int64x2_t t2 = vreinterpretq_s64_s32(vtrn1q_s32(r2, r3));
	const int64x2_t t3 = vreinterpretq_s64_s32(vtrn2q_s32(r2, r3));

	vst1q_s8(out, vreinterpretq_s8_s64(vtrn1q_s64(t0, t2)));
	vst1q_s8(out + 16, vreinterpretq_s8_s64(vtrn1q_s64(t1, t3)));
	vst1q_s8(out + 32, vreinterpretq_s8_s64(vtrn2q_s64(t0, t2)));
	vst1q_s8(out + 48, vreinterpretq_s8_s64(vtrn2q_s64(t1, t3)));
}

/* W rows [0, mr) of blocks [b0, b0 + kb) into pk; rows past mr, up to
 * whole 8-row tiles, are zeros */
static inline __attribute__((always_inline)) void
mm_neon_pack_w(struct mm_npk *pk, enum mm_type t, const uint8_t *w, size_t ws,
	       int mr, int64_t b0, int kb)
{
	const int ng = (mr + 7) / 8 * 2;

	for (int g = 0; g < ng; g++)
		for (int b = 0; b < kb; b++) {
			int8x16_t v[4][2], lo[4], hi[4];
			float d[4][2], m[4];

#pragma GCC unroll 4
			for (int r = 0; r < 4; r++) {
				if (g * 4 + r < mr) {
					mm_neon_wblock(t, w + (size_t)(g * 4 + r) * ws, b0 + b,
						       v[r], d[r], &m[r]);
				} else {
					v[r][0] = v[r][1] = vdupq_n_s8(0);
					d[r][0] = d[r][1] = m[r] = 0;
				}
				lo[r] = v[r][0];
				hi[r] = v[r][1];
				pk->wd[g][b][0][r] = d[r][0];
				pk->wd[g][b][1][r] = d[r][1];
				pk->wm[g][b][r] = m[r];
			}
			mm_neon_tr4(lo, pk->w[g][b][0]);
			mm_neon_tr4(hi, pk->w[g][b][4]);
		}
}

/* a[h][c] += the four steps s0..s0+3 of X vector x[c] (lanes) */
#define MM_NSTEP(s, lane, xi)						\
	do {								\
		const int8x16_t w0_ = vld1q_s8(pk->w[g][b][s]);		\
		const int8x16_t w1_ = vld1q_s8(pk->w[g + 1][b][s]);	\
		_Pragma("GCC unroll 8")					\
		for (int c_ = 0; c_ < MM_NPK_NT; c_++) {		\
			a[0][c_] = vdotq_laneq_s32(a[0][c_], w0_, x[c_][xi], lane); \
			a[1][c_] = vdotq_laneq_s32(a[1][c_], w1_, x[c_][xi], lane); \
		}							\
	} while (0)

/* f += a * dw[half] * dx, a = 0 */
static inline __attribute__((always_inline)) void
mm_neon_fold(const struct mm_npk *pk, int g, int b, int hf,
	     const float *const xd[MM_NPK_NT], int bx,
	     int32x4_t a[2][MM_NPK_NT], float32x4_t f[2][MM_NPK_NT])
{
#pragma GCC unroll 4
	for (int h = 0; h < 2; h++) {
		const float32x4_t dw = vld1q_f32(pk->wd[g + h][b][hf]);

#pragma GCC unroll 4
		for (int c = 0; c < MM_NPK_NT; c++) {
			f[h][c] = vfmaq_f32(f[h][c], vcvtq_f32_s32(a[h][c]),
					    vmulq_n_f32(dw, xd[c][bx]));
			a[h][c] = vdupq_n_s32(0);
		}
	}
}

/*
 * Block b0 of a tile's 4 X rows c0.. in the prepared form: the values,
 * dx and dx * sum(x). Rows past ncol repeat the first (computed, not
 * stored).
 */
static inline __attribute__((always_inline)) void
mm_neon_xrows(const uint8_t *X, size_t xs, int64_t nb, int64_t b0, int c0,
	      int ncol, const int8_t *xr[4], const float *xd[4],
	      const float *xsum[4])
{
#pragma GCC unroll 4
	for (int c = 0; c < 4; c++) {
		const uint8_t *row = X + (size_t)(c0 + (c < ncol ? c : 0)) * xs;

		xr[c] = (const int8_t *)row + b0 * MM_QK;
		xd[c] = (const float *)(row + nb * MM_QK) + b0;
		xsum[c] = xd[c] + nb;
	}
}

/* nrow (<= 4; none if <= 0) rows of a Y column from v: stored, or added
 * to what an earlier panel stored */
static inline __attribute__((always_inline)) void
mm_neon_store4(float *y, float32x4_t v, int nrow, int add)
{
	float t[4];

	if (nrow == 4) {
		vst1q_f32(y, add ? vaddq_f32(vld1q_f32(y), v) : v);
		return;
	}
	vst1q_f32(t, v);
	for (int r = 0; r < nrow; r++)
		y[r] = add ? y[r] + t[r] : t[r];
}

/*
 * Rows 8g8..8g8+7 x X rows c0..c0+ncol-1 (ncol <= MM_NPK_NT; the missing
 * ones repeat the first and are not stored), kb blocks from b0.
 */
static inline __attribute__((always_inline)) void
mm_neon_tile(const struct mm_npk *pk, int g8, const uint8_t *X, size_t xs,
	     int64_t nb, int64_t b0, int c0, int ncol, int mr, int kb,
	     float *Y, size_t ldy, int add, const int halves, const int mins)
{
	const int g = 2 * g8;	/* the first of the two 4-row groups */
	const int8_t *xr[MM_NPK_NT];
	const float *xd[MM_NPK_NT], *xsum[MM_NPK_NT];
	float32x4_t f[2][MM_NPK_NT];
	int32x4_t a[2][MM_NPK_NT];

	mm_neon_xrows(X, xs, nb, b0, c0, ncol, xr, xd, xsum);
#pragma GCC unroll 4
	for (int c = 0; c < MM_NPK_NT; c++) {
#pragma GCC unroll 4
		for (int h = 0; h < 2; h++) {
			f[h][c] = vdupq_n_f32(0);
			a[h][c] = vdupq_n_s32(0);
		}
	}
	for (int b = 0; b < kb; b++) {
		int8x16_t x[MM_NPK_NT][2];

#pragma GCC unroll 4
		for (int c = 0; c < MM_NPK_NT; c++) {
			x[c][0] = vld1q_s8(xr[c] + b * MM_QK);
			x[c][1] = vld1q_s8(xr[c] + b * MM_QK + 16);
		}
		MM_NSTEP(0, 0, 0);
		MM_NSTEP(1, 1, 0);
		MM_NSTEP(2, 2, 0);
		MM_NSTEP(3, 3, 0);
		if (halves)
			mm_neon_fold(pk, g, b, 0, xd, b, a, f);
		MM_NSTEP(4, 0, 1);
		MM_NSTEP(5, 1, 1);
		MM_NSTEP(6, 2, 1);
		MM_NSTEP(7, 3, 1);
		mm_neon_fold(pk, g, b, halves, xd, b, a, f);
		if (mins)	/* - m[r] * dx * sum(x) */
#pragma GCC unroll 4
			for (int h = 0; h < 2; h++) {
				const float32x4_t wm = vld1q_f32(pk->wm[g + h][b]);

#pragma GCC unroll 4
				for (int c = 0; c < MM_NPK_NT; c++)
					f[h][c] = vfmsq_n_f32(f[h][c], wm, xsum[c][b]);
			}
	}
#pragma GCC unroll 4
	for (int h = 0; h < 2; h++) {
		const int r0 = (g + h) * 4, nrow = mr - r0 < 4 ? mr - r0 : 4;

		/* constant indices keep f in registers */
#pragma GCC unroll 4
		for (int c = 0; c < MM_NPK_NT; c++) {
			if (c >= ncol)
				break;
			mm_neon_store4(Y + (size_t)(c0 + c) * ldy + r0, f[h][c], nrow, add);
		}
	}
}
#undef MM_NSTEP

/*
 * The GEMM of a NEON form (pfx: mm_neon with struct mm_npk, mm_i8mm with
 * struct mm_mpk): per panel, W packed by pfx##_pack_w, then pfx##_tile
 * over 8 W rows x 4 X rows; and its entry points per weight type.
 */
#define MM_DEF_NEON_GEMM(pfx, pkt)					\
static inline __attribute__((always_inline)) void			\
pfx##_gemm(enum mm_type t, int64_t k, const uint8_t *w, size_t ws,	\
	   const uint8_t *xp, size_t xs, float *Y, size_t ldy, int mr,	\
	   int nc, void *scratch)					\
{									\
	pkt *pk = scratch;						\
	const int64_t nb = k / MM_QK;					\
	const int64_t pkb = mm_gemm_panel_blocks(nb, MM_NPK_KB);	\
									\
	for (int64_t b0 = 0; b0 < nb; b0 += pkb) {			\
		const int kb = (int)(nb - b0 < pkb ? nb - b0 : pkb);	\
									\
		pfx##_pack_w(pk, t, w, ws, mr, b0, kb);			\
		for (int g8 = 0; g8 < (mr + 7) / 8; g8++)		\
			for (int c0 = 0; c0 < nc; c0 += 4)		\
				pfx##_tile(pk, g8, xp, xs, nb, b0, c0,	\
					   nc - c0 < 4 ? nc - c0 : 4, mr, kb, \
					   Y, ldy, b0 > 0, t == MM_TYPE_Q6_K, \
					   t == MM_TYPE_Q4_K);		\
	}								\
}									\
MM_DEF_NEON_GEMM_TYPE(pfx, q8_0, MM_TYPE_Q8_0)				\
MM_DEF_NEON_GEMM_TYPE(pfx, q4_0, MM_TYPE_Q4_0)				\
MM_DEF_NEON_GEMM_TYPE(pfx, q5_0, MM_TYPE_Q5_0)				\
MM_DEF_NEON_GEMM_TYPE(pfx, q4_k, MM_TYPE_Q4_K)				\
MM_DEF_NEON_GEMM_TYPE(pfx, q6_k, MM_TYPE_Q6_K)

#define MM_DEF_NEON_GEMM_TYPE(pfx, sfx, type)				\
static void pfx##_gemm_##sfx(int64_t k, const void *w, size_t ws,	\
			     const void *xp, size_t xs, float *Y,	\
			     size_t ldy, int64_t mr, int64_t nc,	\
			     void *scratch)				\
{									\
	pfx##_gemm(type, k, w, ws, xp, xs, Y, ldy, (int)mr, (int)nc,	\
		   scratch);						\
}

MM_DEF_NEON_GEMM(mm_neon, struct mm_npk)

/* ---- prefill with the int8 matrix multiply (i8mm) ------------------ */

/*
 * Armv8.6 (optional from 8.2) adds smmla: a 2x8 by 8x2 int8 product into
 * a 2x2 s32 block, 32 multiply-adds an instruction against sdot's 16.
 * Same plan as above (panels of MM_NPK_KB blocks, W packed per call, X
 * prepared once per product), with W packed as row pairs interleaved by
 * 8 k (one 16-byte vector: 8 values of row 2p, then 8 of row 2p + 1) and
 * X pairs put together in the tile the same way. The register tile is 8
 * W rows (4 pairs) x 4 X rows (2 pairs): per 8 k, 4 W and 2 X vectors
 * for 8 smmla. A sum's lanes are (r, c) = (0,0) (0,1) (1,0) (1,1), so the
 * scales apply as a row vector (dw0, dw0, dw1, dw1) times (dx0, dx1, dx0,
 * dx1); Q6_K's halves are steps 0-1 and 2-3. The set "neon-i8mm" is this
 * gemm with the neon set's other kernels, chosen when HWCAP2_I8MM is set.
 */
#pragma GCC push_options
#pragma GCC target("+i8mm")

struct mm_mpk {
	int8_t w[MM_GEMM_MC / 8][MM_NPK_KB][4][4][16];	/* pair, step */
	float wd[MM_GEMM_MC / 8][MM_NPK_KB][2][4][4];	/* half, pair: lanes */
	float wm[MM_GEMM_MC / 8][MM_NPK_KB][4][4];	/* Q4_K: min, lanes */
};
_Static_assert(sizeof(struct mm_mpk) <= MM_GEMM_SCRATCH, "gemm scratch");

static inline __attribute__((always_inline)) void
mm_i8mm_pack_w(struct mm_mpk *pk, enum mm_type t, const uint8_t *w, size_t ws,
	       int mr, int64_t b0, int kb)
{
	for (int g = 0; g < (mr + 7) / 8; g++)
		for (int b = 0; b < kb; b++) {
			int8x16_t v[8][2];
			float d[8][2], m[8];

			for (int r = 0; r < 8; r++) {
				if (g * 8 + r < mr) {
					mm_neon_wblock(t, w + (size_t)(g * 8 + r) * ws, b0 + b,
						       v[r], d[r], &m[r]);
				} else {
					v[r][0] = v[r][1] = vdupq_n_s8(0);
					d[r][0] = d[r][1] = m[r] = 0;
				}
			}
#pragma GCC unroll 4
			for (int p = 0; p < 4; p++) {
				const int r0 = 2 * p, r1 = 2 * p + 1;

#pragma GCC unroll 2
				for (int i = 0; i < 2; i++) {
					const int64x2_t a = vreinterpretq_s64_s8(v[r0][i]);
					const int64x2_t c = vreinterpretq_s64_s8(v[r1][i]);

					vst1q_s8(pk->w[g][b][p][2 * i],
						 vreinterpretq_s8_s64(vzip1q_s64(a, c)));
					vst1q_s8(pk->w[g][b][p][2 * i + 1],
						 vreinterpretq_s8_s64(vzip2q_s64(a, c)));
					pk->wd[g][b][i][p][0] = pk->wd[g][b][i][p][1] = d[r0][i];
					pk->wd[g][b][i][p][2] = pk->wd[g][b][i][p][3] = d[r1][i];
				}
				pk->wm[g][b][p][0] = pk->wm[g][b][p][1] = m[r0];
				pk->wm[g][b][p][2] = pk->wm[g][b][p][3] = m[r1];
			}
		}
}

/* f[p][q] += a[p][q] * dw(half) * dx, a = 0 */
static inline __attribute__((always_inline)) void
mm_i8mm_fold(const struct mm_mpk *pk, int g, int b, int hf,
	     const float32x4_t dx[2], int32x4_t a[4][2], float32x4_t f[4][2])
{
#pragma GCC unroll 4
	for (int p = 0; p < 4; p++) {
		const float32x4_t dw = vld1q_f32(pk->wd[g][b][hf][p]);

#pragma GCC unroll 2
		for (int q = 0; q < 2; q++) {
			f[p][q] = vfmaq_f32(f[p][q], vcvtq_f32_s32(a[p][q]), vmulq_f32(dw, dx[q]));
			a[p][q] = vdupq_n_s32(0);
		}
	}
}

/* a[p][q] += W pairs x X pairs for step s (elements 8s..8s+7) of block b */
static inline __attribute__((always_inline)) void
mm_i8mm_step(const struct mm_mpk *pk, int g, int b, int s,
	     const int8_t *const xb[4], int32x4_t a[4][2])
{
	int8x16_t x[2];

#pragma GCC unroll 2
	for (int q = 0; q < 2; q++)
		x[q] = vcombine_s8(vld1_s8(xb[2 * q] + 8 * s), vld1_s8(xb[2 * q + 1] + 8 * s));
#pragma GCC unroll 4
	for (int p = 0; p < 4; p++) {
		const int8x16_t wv = vld1q_s8(pk->w[g][b][p][s]);

#pragma GCC unroll 2
		for (int q = 0; q < 2; q++)
			a[p][q] = vmmlaq_s32(a[p][q], wv, x[q]);
	}
}

/* rows 8g..8g+7 x X rows c0..c0+ncol-1 (ncol <= 4; the missing ones
 * repeat the first and are not stored), kb blocks from b0 */
static inline __attribute__((always_inline)) void
mm_i8mm_tile(const struct mm_mpk *pk, int g, const uint8_t *X, size_t xs,
	     int64_t nb, int64_t b0, int c0, int ncol, int mr, int kb,
	     float *Y, size_t ldy, int add, const int halves, const int mins)
{
	const int8_t *xr[4];
	const float *xd[4], *xsum[4];
	float32x4_t f[4][2];
	int32x4_t a[4][2];

	mm_neon_xrows(X, xs, nb, b0, c0, ncol, xr, xd, xsum);
#pragma GCC unroll 4
	for (int p = 0; p < 4; p++)
#pragma GCC unroll 2
		for (int q = 0; q < 2; q++) {
			f[p][q] = vdupq_n_f32(0);
			a[p][q] = vdupq_n_s32(0);
		}
	for (int b = 0; b < kb; b++) {
		const int8_t *xb[4];
		float32x4_t dx[2];

#pragma GCC unroll 4
		for (int c = 0; c < 4; c++)
			xb[c] = xr[c] + b * MM_QK;
#pragma GCC unroll 2
		for (int q = 0; q < 2; q++) {
			const float32x2_t d2 = { xd[2 * q][b], xd[2 * q + 1][b] };

			dx[q] = vcombine_f32(d2, d2);
		}
		mm_i8mm_step(pk, g, b, 0, xb, a);
		mm_i8mm_step(pk, g, b, 1, xb, a);
		if (halves)
			mm_i8mm_fold(pk, g, b, 0, dx, a, f);
		mm_i8mm_step(pk, g, b, 2, xb, a);
		mm_i8mm_step(pk, g, b, 3, xb, a);
		mm_i8mm_fold(pk, g, b, halves, dx, a, f);
		if (mins)	/* - m[r] * dx * sum(x) */
#pragma GCC unroll 2
			for (int q = 0; q < 2; q++) {
				const float32x2_t s2 = { xsum[2 * q][b], xsum[2 * q + 1][b] };
				const float32x4_t sx = vcombine_f32(s2, s2);

#pragma GCC unroll 4
				for (int p = 0; p < 4; p++)
					f[p][q] = vfmsq_f32(f[p][q], vld1q_f32(pk->wm[g][b][p]), sx);
			}
	}
	/* lanes (r, c) -> columns of 4 rows: uzp1 takes c even, uzp2 c odd */
#pragma GCC unroll 2
	for (int h = 0; h < 2; h++) {
		const int r0 = g * 8 + 4 * h, nrow = mr - r0 < 4 ? mr - r0 : 4;

#pragma GCC unroll 4
		for (int c = 0; c < 4; c++) {
			const float32x4_t col = c % 2 ?
				vuzp2q_f32(f[2 * h][c / 2], f[2 * h + 1][c / 2]) :
				vuzp1q_f32(f[2 * h][c / 2], f[2 * h + 1][c / 2]);

			if (c >= ncol)
				break;
			mm_neon_store4(Y + (size_t)(c0 + c) * ldy + r0, col, nrow, add);
		}
	}
}

MM_DEF_NEON_GEMM(mm_i8mm, struct mm_mpk)

#pragma GCC pop_options

#define MM_NEON_GEMV {						\
	[MM_TYPE_F32] = mm_neon_gemv_f32,				\
	[MM_TYPE_F16] = mm_neon_gemv_f16,				\
	[MM_TYPE_BF16] = mm_neon_gemv_bf16,				\
	[MM_TYPE_Q8_0] = mm_neon_gemv_q8_0,				\
	[MM_TYPE_Q4_0] = mm_neon_gemv_q4_0,				\
	[MM_TYPE_Q4_1] = mm_neon_gemv_q4_1,				\
	[MM_TYPE_Q5_0] = mm_neon_gemv_q5_0,				\
	[MM_TYPE_Q4_K] = mm_neon_gemv_q4_k,				\
	[MM_TYPE_Q6_K] = mm_neon_gemv_q6_k,				\
}
#define MM_NEON_XPREP {						\
	[MM_TYPE_Q8_0] = mm_neon_xprep_q8_0,				\
	[MM_TYPE_Q4_0] = mm_neon_xprep_q8_0,				\
	[MM_TYPE_Q5_0] = mm_neon_xprep_q8_0,				\
	[MM_TYPE_Q4_K] = mm_neon_xprep_q8_k,				\
	[MM_TYPE_Q6_K] = mm_neon_xprep_q8_k,				\
}

const struct mm_kernels mm_kernels_neon = {
	.name = "neon-dotprod",
	.gemv = MM_NEON_GEMV,
	.gemm = {
		[MM_TYPE_Q8_0] = mm_neon_gemm_q8_0,
		[MM_TYPE_Q4_0] = mm_neon_gemm_q4_0,
		[MM_TYPE_Q5_0] = mm_neon_gemm_q5_0,
		[MM_TYPE_Q4_K] = mm_neon_gemm_q4_k,
		[MM_TYPE_Q6_K] = mm_neon_gemm_q6_k,
	},
	.xprep = MM_NEON_XPREP,
	.xprep_bytes = mm_neon_xprep_bytes,
};

const struct mm_kernels mm_kernels_neon_i8mm = {
	.name = "neon-i8mm",
	.gemv = MM_NEON_GEMV,
	.gemm = {
		[MM_TYPE_Q8_0] = mm_i8mm_gemm_q8_0,
		[MM_TYPE_Q4_0] = mm_i8mm_gemm_q4_0,
		[MM_TYPE_Q5_0] = mm_i8mm_gemm_q5_0,
		[MM_TYPE_Q4_K] = mm_i8mm_gemm_q4_k,
		[MM_TYPE_Q6_K] = mm_i8mm_gemm_q6_k,
	},
	.xprep = MM_NEON_XPREP,
	.xprep_bytes = mm_neon_xprep_bytes,
};
#endif

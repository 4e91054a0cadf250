// SPDX-License-Identifier: MIT
/*
 * kern_neon.c - arm64 NEON + dot-product (sdot) kernels for Q8_0, Q4_0,
 * Q5_0, Q4_K and Q6_K
 * (built with -march=armv8.2-a+dotprod, used when HWCAP_ASIMDDP is set).
 * Other types use the scalar code. matmul falls back to gemv per X row.
 */
#include "quant_kern.h"

#include <string.h>

#if defined(__aarch64__)
#include <arm_neon.h>

static inline float mm_h2f(uint16_t h)
{
	return mm_f16_to_f32(h);
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

const struct mm_kernels mm_kernels_neon = {
	.name = "neon-dotprod",
	.gemv = {
		[MM_TYPE_F32] = mm_scalar_gemv_f32,
		[MM_TYPE_F16] = mm_scalar_gemv_f16,
		[MM_TYPE_BF16] = mm_scalar_gemv_bf16,
		[MM_TYPE_Q8_0] = mm_neon_gemv_q8_0,
		[MM_TYPE_Q4_0] = mm_neon_gemv_q4_0,
		[MM_TYPE_Q4_1] = mm_scalar_gemv_q4_1,
		[MM_TYPE_Q5_0] = mm_neon_gemv_q5_0,
		[MM_TYPE_Q4_K] = mm_neon_gemv_q4_k,
		[MM_TYPE_Q6_K] = mm_neon_gemv_q6_k,
	},
};
#endif

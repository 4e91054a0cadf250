// SPDX-License-Identifier: MIT
/*
 * kern_neon.c - arm64 NEON + dot-product (sdot) kernels for Q8_0, Q4_0
 * and Q5_0
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
		[MM_TYPE_Q4_K] = mm_scalar_gemv_q4_k,
		[MM_TYPE_Q6_K] = mm_scalar_gemv_q6_k,
	},
};
#endif

// SPDX-License-Identifier: MIT
/*
 * kern_neon.c - arm64 NEON + dot-product (sdot) kernels for Q8_0 and Q4_0
 * (built with -march=armv8.2-a+dotprod, used when HWCAP_ASIMDDP is set).
 * Other types use the scalar code. matmul falls back to gemv per X row.
 */
#include "quant_kern.h"

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

static void mm_neon_gemv_q4_0(int64_t k, const void *w, size_t ws,
			      const void *xq, float *y, int64_t nr)
{
	const struct mm_block_q8_0 *x = xq;
	const int64_t nb = k / MM_QK;
	const uint8x16_t m4 = vdupq_n_u8(0x0F);
	const int8x16_t s8 = vdupq_n_s8(8);

	for (int64_t r = 0; r < nr; r++) {
		const struct mm_block_q4_0 *b =
			(const void *)((const uint8_t *)w + r * ws);
		float32x4_t acc = vdupq_n_f32(0);

		for (int64_t i = 0; i < nb; i++) {
			const uint8x16_t q = vld1q_u8(b[i].qs);
			const int8x16_t lo = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(q, m4)), s8);
			const int8x16_t hi = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(q, 4)), s8);
			int32x4_t p = vdupq_n_s32(0);

			p = vdotq_s32(p, lo, vld1q_s8(x[i].qs));
			p = vdotq_s32(p, hi, vld1q_s8(x[i].qs + 16));
			acc = vmlaq_n_f32(acc, vcvtq_f32_s32(p),
					  mm_h2f(b[i].d) * mm_h2f(x[i].d));
		}
		y[r] = vaddvq_f32(acc);
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
		[MM_TYPE_Q4_K] = mm_scalar_gemv_q4_k,
		[MM_TYPE_Q6_K] = mm_scalar_gemv_q6_k,
	},
};
#endif

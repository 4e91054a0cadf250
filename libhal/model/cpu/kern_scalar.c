// SPDX-License-Identifier: MIT
/*
 * kern_scalar.c - portable reference kernels for every weight type.
 *
 * Each block's integer dot product is exact; block results are scaled and
 * summed in f32, in block order, like ggml's scalar vec_dot. F32/F16/BF16
 * rows are summed in f32 too. These are the reference the SIMD sets are
 * tested against.
 */
#include "quant_kern.h"

#include <string.h>

static float mm_dot_f32(int64_t k, const float *w, const float *x)
{
	float s = 0;

	for (int64_t i = 0; i < k; i++)
		s += w[i] * x[i];
	return s;
}

static float mm_dot_f16(int64_t k, const uint16_t *w, const float *x)
{
	float s = 0;

	for (int64_t i = 0; i < k; i++)
		s += mm_f16_to_f32(w[i]) * x[i];
	return s;
}

static float mm_dot_bf16(int64_t k, const uint16_t *w, const float *x)
{
	float s = 0;

	for (int64_t i = 0; i < k; i++)
		s += mm_bf16_to_f32(w[i]) * x[i];
	return s;
}

static float mm_dot_q8_0(int64_t k, const struct mm_block_q8_0 *w,
			 const struct mm_block_q8_0 *x)
{
	float s = 0;

	for (int64_t b = 0; b < k / MM_QK; b++) {
		int isum = 0;

		for (int j = 0; j < MM_QK; j++)
			isum += w[b].qs[j] * x[b].qs[j];
		s += isum * (mm_f16_to_f32(w[b].d) * mm_f16_to_f32(x[b].d));
	}
	return s;
}

static float mm_dot_q4_0(int64_t k, const struct mm_block_q4_0 *w,
			 const struct mm_block_q8_0 *x)
{
	float s = 0;

	for (int64_t b = 0; b < k / MM_QK; b++) {
		int isum = 0;

		for (int j = 0; j < MM_QK / 2; j++) {
			isum += ((w[b].qs[j] & 15) - 8) * x[b].qs[j];
			isum += ((w[b].qs[j] >> 4) - 8) * x[b].qs[j + 16];
		}
		s += isum * (mm_f16_to_f32(w[b].d) * mm_f16_to_f32(x[b].d));
	}
	return s;
}

static float mm_dot_q5_0(int64_t k, const struct mm_block_q5_0 *w,
			 const struct mm_block_q8_0 *x)
{
	float s = 0;

	for (int64_t b = 0; b < k / MM_QK; b++) {
		int isum = 0;

		for (int j = 0; j < MM_QK; j++)
			isum += (mm_q5_0_q(&w[b], j) - 16) * x[b].qs[j];
		s += isum * (mm_f16_to_f32(w[b].d) * mm_f16_to_f32(x[b].d));
	}
	return s;
}

static float mm_dot_q4_1(int64_t k, const struct mm_block_q4_1 *w,
			 const struct mm_block_q8_1 *x)
{
	float s = 0;

	for (int64_t b = 0; b < k / MM_QK; b++) {
		int isum = 0;

		for (int j = 0; j < MM_QK / 2; j++) {
			isum += (w[b].qs[j] & 15) * x[b].qs[j];
			isum += (w[b].qs[j] >> 4) * x[b].qs[j + 16];
		}
		s += isum * (mm_f16_to_f32(w[b].d) * x[b].d) +
		     mm_f16_to_f32(w[b].m) * x[b].s;
	}
	return s;
}

static float mm_dot_q4_k(int64_t k, const struct mm_block_q4_k *w,
			 const struct mm_block_q8_k *x)
{
	float s = 0;

	for (int64_t b = 0; b < k / MM_QK_K; b++) {
		const uint8_t *q = w[b].qs;
		const int8_t *y = x[b].qs;
		int sumi = 0, summ = 0;

		for (int j = 0; j < 8; j++) {
			uint8_t sc, m;
			int d = 0;

			mm_q4k_scale_min(j, w[b].scales, &sc, &m);
			summ += m * (x[b].bsums[2 * j] + x[b].bsums[2 * j + 1]);
			for (int l = 0; l < 32; l++) {
				int v = (j & 1) ? q[(j / 2) * 32 + l] >> 4
						: q[(j / 2) * 32 + l] & 15;

				d += v * y[32 * j + l];
			}
			sumi += sc * d;
		}
		s += x[b].d * mm_f16_to_f32(w[b].d) * sumi -
		     x[b].d * mm_f16_to_f32(w[b].dmin) * summ;
	}
	return s;
}

static float mm_dot_q6_k(int64_t k, const struct mm_block_q6_k *w,
			 const struct mm_block_q8_k *x)
{
	float s = 0;

	for (int64_t b = 0; b < k / MM_QK_K; b++) {
		const uint8_t *ql = w[b].ql, *qh = w[b].qh;
		const int8_t *sc = w[b].scales, *y = x[b].qs;
		int sumi = 0;

		for (int n = 0; n < MM_QK_K; n += 128) {
			int d[8] = { 0 };

			for (int l = 0; l < 32; l++) {
				int is = l / 16;
				int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
				int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
				int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
				int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;

				d[is + 0] += q1 * y[l];
				d[is + 2] += q2 * y[l + 32];
				d[is + 4] += q3 * y[l + 64];
				d[is + 6] += q4 * y[l + 96];
			}
			for (int i = 0; i < 8; i++)
				sumi += sc[i] * d[i];
			y += 128;
			ql += 64;
			qh += 32;
			sc += 8;
		}
		s += x[b].d * mm_f16_to_f32(w[b].d) * sumi;
	}
	return s;
}

void mm_scalar_gemv_any(enum mm_type t, int64_t k, const void *w, size_t ws,
			const void *xq, float *y, int64_t nr)
{
	const uint8_t *row = w;

	for (int64_t r = 0; r < nr; r++, row += ws) {
		switch (t) {
		case MM_TYPE_F32: y[r] = mm_dot_f32(k, (const void *)row, xq); break;
		case MM_TYPE_F16: y[r] = mm_dot_f16(k, (const void *)row, xq); break;
		case MM_TYPE_BF16: y[r] = mm_dot_bf16(k, (const void *)row, xq); break;
		case MM_TYPE_Q8_0: y[r] = mm_dot_q8_0(k, (const void *)row, xq); break;
		case MM_TYPE_Q4_0: y[r] = mm_dot_q4_0(k, (const void *)row, xq); break;
		case MM_TYPE_Q4_1: y[r] = mm_dot_q4_1(k, (const void *)row, xq); break;
		case MM_TYPE_Q5_0: y[r] = mm_dot_q5_0(k, (const void *)row, xq); break;
		case MM_TYPE_Q4_K: y[r] = mm_dot_q4_k(k, (const void *)row, xq); break;
		case MM_TYPE_Q6_K: y[r] = mm_dot_q6_k(k, (const void *)row, xq); break;
		default: y[r] = 0; break;
		}
	}
}

#define MM_SCALAR_GEMV(name, type)					\
	void name(int64_t k, const void *w, size_t ws,			\
		  const void *xq, float *y, int64_t nr)			\
	{								\
		mm_scalar_gemv_any(type, k, w, ws, xq, y, nr);		\
	}

MM_SCALAR_GEMV(mm_scalar_gemv_f32, MM_TYPE_F32)
MM_SCALAR_GEMV(mm_scalar_gemv_f16, MM_TYPE_F16)
MM_SCALAR_GEMV(mm_scalar_gemv_bf16, MM_TYPE_BF16)
MM_SCALAR_GEMV(mm_scalar_gemv_q8_0, MM_TYPE_Q8_0)
MM_SCALAR_GEMV(mm_scalar_gemv_q4_0, MM_TYPE_Q4_0)
MM_SCALAR_GEMV(mm_scalar_gemv_q4_1, MM_TYPE_Q4_1)
MM_SCALAR_GEMV(mm_scalar_gemv_q5_0, MM_TYPE_Q5_0)
MM_SCALAR_GEMV(mm_scalar_gemv_q4_k, MM_TYPE_Q4_K)
MM_SCALAR_GEMV(mm_scalar_gemv_q6_k, MM_TYPE_Q6_K)

const struct mm_kernels mm_kernels_scalar = {
	.name = "scalar",
	.gemv = {
		[MM_TYPE_F32] = mm_scalar_gemv_f32,
		[MM_TYPE_F16] = mm_scalar_gemv_f16,
		[MM_TYPE_BF16] = mm_scalar_gemv_bf16,
		[MM_TYPE_Q8_0] = mm_scalar_gemv_q8_0,
		[MM_TYPE_Q4_0] = mm_scalar_gemv_q4_0,
		[MM_TYPE_Q4_1] = mm_scalar_gemv_q4_1,
		[MM_TYPE_Q5_0] = mm_scalar_gemv_q5_0,
		[MM_TYPE_Q4_K] = mm_scalar_gemv_q4_k,
		[MM_TYPE_Q6_K] = mm_scalar_gemv_q6_k,
	},
};

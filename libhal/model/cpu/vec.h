/* SPDX-License-Identifier: MIT */
/*
 * vec.h - f32 row helpers of the model runtime (internal): dot products,
 * axpy, F16 rows, SiLU gating and the F16 attention kernel, in AVX2/FMA/
 * F16C (x86-64), NEON (arm64) and portable C versions.
 *
 * The version follows the kernel set of a struct mm_ctx (quant.c's one
 * CPU dispatch, MMHAL_KERNELS included): mm_vec_select(mm_ctx_kernels())
 * gives the AVX2 helpers for the "avx2" and "avx512vnni" sets, NEON for
 * the arm64 sets (NEON is part of the base ISA, so also for "scalar" when
 * the CPU lacks the dot-product kernels), C otherwise. The tables are
 * constant; every function is pure and thread-safe.
 */
#ifndef MM_VEC_H
#define MM_VEC_H

#include <stddef.h>
#include <stdint.h>

/*
 * attn_h(): attention of grp query heads (q: grp rows of hd floats, hd a
 * multiple of 8) over npos F16 K/V rows of one KV head (k, v: row t at
 * byte t * rs), scores scaled by scale. sc: grp rows of scs floats of
 * scratch (scs >= npos). o: grp rows of hd outputs. stats NULL: o is
 * softmax(q.K^T) V; else o is left unnormalized and stats gets each
 * head's (max score, sum of exp(score - max)) to merge segments.
 */
typedef void (*mm_attn_h_fn)(const float *q, int grp, int hd,
			     const uint8_t *k, const uint8_t *v, size_t rs,
			     int npos, float scale, float *sc, size_t scs,
			     float *o, float *stats);

struct mm_vec {
	const char *name;	/* "avx2", "neon" or "c" */
	/* a . b */
	float (*dot)(const float *a, const float *b, int n);
	/* a . b, b in f16 */
	float (*dot_h)(const float *a, const void *b, int n);
	/* y += a * x */
	void (*axpy)(float *y, float a, const float *x, int n);
	/* y += a * x, x in f16 */
	void (*axpy_h)(float *y, float a, const void *x, int n);
	/* n f16 values to f32 */
	void (*f16_row)(const void *src, float *dst, int n);
	/* g[i] = silu(g[i]) * u[i] */
	void (*silu_mul)(float *g, const float *u, int n);
	mm_attn_h_fn attn_h;	/* NULL in the C set */
};

/* The helpers for kernel set name (mm_ctx_kernels()); never NULL. */
const struct mm_vec *mm_vec_select(const char *kernels);

#endif /* MM_VEC_H */

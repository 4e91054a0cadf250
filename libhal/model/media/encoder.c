// SPDX-License-Identifier: MIT
/*
 * encoder.c - the operations shared by the mmproj encoders (see encoder.h).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "encoder.h"
#include "gguf.h"
#include "quant.h"

int mm_enc_init(struct mm_enc *s, int n_threads, int64_t wide,
		const char *what, char *err, size_t errlen)
{
	int ret;

	memset(s, 0, sizeof(*s));
	ret = mm_ctx_create(n_threads, &s->ctx);
	if (ret)
		return mm_errf(ret, err, errlen, "%s: thread pool: %s", what,
			       strerror(-ret));
	s->wide = wide;
	s->simd = !strcmp(mm_ctx_kernels(s->ctx), "avx2") ||
		  !strcmp(mm_ctx_kernels(s->ctx), "avx512vnni");
	/* the AVX-512 f32 tile with the AVX-512 kernel set (it implies
	 * AVX-512F); MMHAL_ENC_GEMM=avx2 keeps the AVX2 tile (benches) */
	if (s->simd && !strcmp(mm_ctx_kernels(s->ctx), "avx512vnni")) {
		const char *e = getenv("MMHAL_ENC_GEMM");

		if (!e || strcmp(e, "avx2"))
			s->simd = 2;
	}
	s->tmp = malloc((size_t)(2 * wide) * sizeof(float));
	if (!s->tmp) {
		mm_ctx_destroy(s->ctx);
		s->ctx = NULL;
		return mm_errf(-ENOMEM, err, errlen, "%s: out of memory", what);
	}
	return 0;
}

void mm_enc_fini(struct mm_enc *s)
{
	free(s->tmp);
	s->tmp = NULL;
	free(s->att);
	s->att = NULL;
	s->att_bytes = 0;
	free(s->cal_fw);
	s->cal_fw = NULL;
	s->cal_fw_n = 0;
	mm_ctx_destroy(s->ctx);
	s->ctx = NULL;
}

void mm_enc_vec(const struct mm_mmproj_w *w, float *y, int64_t n)
{
	if (!w->name)
		memset(y, 0, (size_t)n * sizeof(float));
	else
		mm_dequantize_row((enum mm_type)w->type, w->data, y, n);
}

void mm_enc_row(const struct mm_mmproj_w *w, int64_t r, float *y, int64_t n)
{
	mm_dequantize_row((enum mm_type)w->type, (const uint8_t *)w->data +
			  r * mm_row_bytes((enum mm_type)w->type, n), y, n);
}

struct enc_rowop {
	float *Y;
	const float *b;		/* [m]: added to each row, or NULL */
	const float *X;		/* [n][m]: added to Y, or NULL */
	int64_t m;
};

static void enc_rowop_fn(int64_t begin, int64_t end, void *arg)
{
	const struct enc_rowop *a = arg;
	const int64_t m = a->m;

	for (int64_t i = begin; i < end; i++) {
		float *y = a->Y + i * m;

		if (a->b)
			for (int64_t j = 0; j < m; j++)
				y[j] += a->b[j];
		else
			for (int64_t j = 0; j < m; j++)
				y[j] += a->X[i * m + j];
	}
}

void mm_enc_bias(struct mm_enc *s, const struct mm_mmproj_w *b, float *Y,
		 int64_t n, int64_t m)
{
	struct enc_rowop a = { .Y = Y, .b = s->tmp, .m = m };

	if (!b || !b->name)
		return;
	mm_enc_vec(b, s->tmp, m);
	mm_parallel_for(s->ctx, n, enc_rowop_fn, &a);
}

/* ---- f32 / f16 / bf16 weights: a register-tiled f32 GEMM -------------- */

#if defined(__x86_64__)
#include <immintrin.h>

#define ENC_FG_NR 6	/* X rows per tile (AVX2) */
#define ENC_FG_NC 16	/* W rows (outputs) per tile and packed panel (AVX2) */
#define ENC_FZ_NR 8	/* X rows per tile (AVX-512) */
#define ENC_FZ_NC 48	/* outputs per tile and panel (AVX-512: 3 zmm) */
#define ENC_FG_RB 96	/* X rows per unit (a multiple of both NR) */
#define ENC_FG_KC 32	/* k per register-summed chunk */

struct enc_fgemm {
	enum mm_type t;
	const uint8_t *W;
	size_t ws;
	const float *X;
	float *Y;
	int64_t m, k, n, nrb;	/* nrb: row blocks of ENC_FG_RB */
	int nc;			/* panel width: ENC_FG_NC or ENC_FZ_NC */
	int fail;		/* a unit could not get its panel memory */
};

/* W row j (k elements of type t) as f32 in row */
__attribute__((target("avx2,fma,f16c")))
static void enc_fg_row(const struct enc_fgemm *g, const uint8_t *w, float *row)
{
	int64_t kk = 0;

	if (g->t == MM_TYPE_F16) {
		for (; kk + 8 <= g->k; kk += 8)
			_mm256_storeu_ps(row + kk, _mm256_cvtph_ps(
				_mm_loadu_si128((const __m128i *)(w + 2 * kk))));
		for (; kk < g->k; kk++) {
			uint16_t h;

			memcpy(&h, w + 2 * kk, 2);
			row[kk] = mm_f16_to_f32(h);
		}
	} else if (g->t == MM_TYPE_BF16) {
		/* exact: a bf16 is the top half of its f32 */
		for (; kk + 8 <= g->k; kk += 8)
			_mm256_storeu_ps(row + kk, _mm256_castsi256_ps(
				_mm256_slli_epi32(_mm256_cvtepu16_epi32(
					_mm_loadu_si128((const __m128i *)(w + 2 * kk))), 16)));
		for (; kk < g->k; kk++) {
			uint16_t h;

			memcpy(&h, w + 2 * kk, 2);
			row[kk] = mm_bf16_to_f32(h);
		}
	} else {
		memcpy(row, w, (size_t)g->k * sizeof(float));
	}
}

/* 16 elements of type t at w (16 k of one W row) as f32 */
__attribute__((target("avx512f")))
static inline __m512 enc_fz_load16(enum mm_type t, const uint8_t *w)
{
	if (t == MM_TYPE_F16)
		return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)w));
	if (t == MM_TYPE_BF16)
		return _mm512_castsi512_ps(_mm512_slli_epi32(
			_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)w)), 16));
	return _mm512_loadu_ps((const float *)w);
}

/*
 * W rows [j0 + jj0, + 16) (all below m), k [0, k16) (k16 a multiple of
 * 16) into p[kk][ENC_FZ_NC] at column jj0: 16 x 16 blocks converted and
 * transposed in registers (unpack, shuffle_ps, twice shuffle_f32x4),
 * the same values as the scalar transposition.
 */
__attribute__((target("avx512f")))
static void enc_fz_pack16(const struct enc_fgemm *g, int64_t j, int jj0,
			  int64_t k16, float *p)
{
	const size_t es = g->t == MM_TYPE_F32 ? 4 : 2;

	for (int64_t k0 = 0; k0 < k16; k0 += 16) {
		__m512 r[16], u[16];

#pragma GCC unroll 16
		for (int i = 0; i < 16; i++)
			r[i] = enc_fz_load16(g->t, g->W + (size_t)(j + i) * g->ws +
					     (size_t)k0 * es);
#pragma GCC unroll 4
		for (int q = 0; q < 16; q += 4) {
			u[q] = _mm512_unpacklo_ps(r[q], r[q + 1]);
			u[q + 1] = _mm512_unpackhi_ps(r[q], r[q + 1]);
			u[q + 2] = _mm512_unpacklo_ps(r[q + 2], r[q + 3]);
			u[q + 3] = _mm512_unpackhi_ps(r[q + 2], r[q + 3]);
		}
#pragma GCC unroll 4
		for (int q = 0; q < 16; q += 4) {
			r[q] = _mm512_shuffle_ps(u[q], u[q + 2], 0x44);
			r[q + 1] = _mm512_shuffle_ps(u[q], u[q + 2], 0xEE);
			r[q + 2] = _mm512_shuffle_ps(u[q + 1], u[q + 3], 0x44);
			r[q + 3] = _mm512_shuffle_ps(u[q + 1], u[q + 3], 0xEE);
		}
#pragma GCC unroll 4
		for (int c = 0; c < 4; c++) {
			u[c] = _mm512_shuffle_f32x4(r[c], r[c + 4], 0x88);
			u[c + 4] = _mm512_shuffle_f32x4(r[c], r[c + 4], 0xDD);
			u[c + 8] = _mm512_shuffle_f32x4(r[c + 8], r[c + 12], 0x88);
			u[c + 12] = _mm512_shuffle_f32x4(r[c + 8], r[c + 12], 0xDD);
		}
#pragma GCC unroll 8
		for (int c = 0; c < 8; c++) {
			_mm512_storeu_ps(p + (k0 + c) * ENC_FZ_NC + jj0,
					 _mm512_shuffle_f32x4(u[c], u[c + 8], 0x88));
			_mm512_storeu_ps(p + (k0 + c + 8) * ENC_FZ_NC + jj0,
					 _mm512_shuffle_f32x4(u[c], u[c + 8], 0xDD));
		}
	}
}

/* W rows [j0, j0 + nc) (past m: 0) as f32 in p[kk][nc] */
static void enc_fg_pack(const struct enc_fgemm *g, int64_t j0, float *p,
			float *row)
{
	const int nc = g->nc;
	int64_t jj = 0;

	/* AVX-512: whole groups of 16 rows by the transposing blocks,
	 * their k tail and the rest below */
	if (nc == ENC_FZ_NC) {
		const int64_t k16 = g->k & ~(int64_t)15;

		for (; jj + 16 <= nc && j0 + jj + 16 <= g->m; jj += 16) {
			enc_fz_pack16(g, j0 + jj, (int)jj, k16, p);
			for (int64_t i = 0; i < 16 && k16 < g->k; i++) {
				enc_fg_row(g, g->W + (size_t)(j0 + jj + i) * g->ws, row);
				for (int64_t kk = k16; kk < g->k; kk++)
					p[kk * nc + jj + i] = row[kk];
			}
		}
	}
	for (; jj < nc; jj++) {
		const int64_t j = j0 + jj;

		if (j >= g->m) {
			for (int64_t kk = 0; kk < g->k; kk++)
				p[kk * nc + jj] = 0;
			continue;
		}
		enc_fg_row(g, g->W + (size_t)j * g->ws, row);
		for (int64_t kk = 0; kk < g->k; kk++)
			p[kk * nc + jj] = row[kk];
	}
}

/* Y rows [i0, i0 + nr) (nr <= ENC_FG_NR) x outputs [j0, j0 + ENC_FG_NC)
 * (stores stop at m), k in order with one FMA chain per output */
__attribute__((target("avx2,fma")))
static void enc_fg_tile(const struct enc_fgemm *g, const float *p,
			int64_t i0, int nr, int64_t j0)
{
	const float *x[ENC_FG_NR];
	const int64_t k = g->k;
	float t[ENC_FG_NR][ENC_FG_NC];

#pragma GCC unroll 6
	for (int r = 0; r < ENC_FG_NR; r++) {
		x[r] = g->X + (i0 + (r < nr ? r : 0)) * k;
		_mm256_storeu_ps(t[r], _mm256_setzero_ps());
		_mm256_storeu_ps(t[r] + 8, _mm256_setzero_ps());
	}
	/* chunks of ENC_FG_KC summed in registers, then into t (the
	 * rounding error grows with the chunk, not with k) */
	for (int64_t k0 = 0; k0 < k; k0 += ENC_FG_KC) {
		const int64_t k1 = k0 + ENC_FG_KC < k ? k0 + ENC_FG_KC : k;
		__m256 a[ENC_FG_NR][2];

#pragma GCC unroll 6
		for (int r = 0; r < ENC_FG_NR; r++)
			a[r][0] = a[r][1] = _mm256_setzero_ps();
		for (int64_t kk = k0; kk < k1; kk++) {
			const __m256 w0 = _mm256_loadu_ps(p + kk * ENC_FG_NC);
			const __m256 w1 = _mm256_loadu_ps(p + kk * ENC_FG_NC + 8);

#pragma GCC unroll 6
			for (int r = 0; r < ENC_FG_NR; r++) {
				const __m256 xv = _mm256_broadcast_ss(x[r] + kk);

				a[r][0] = _mm256_fmadd_ps(xv, w0, a[r][0]);
				a[r][1] = _mm256_fmadd_ps(xv, w1, a[r][1]);
			}
		}
		/* constant indices only, so a[][] stays in registers */
#pragma GCC unroll 6
		for (int r = 0; r < ENC_FG_NR; r++) {
			_mm256_storeu_ps(t[r], _mm256_add_ps(_mm256_loadu_ps(t[r]),
							     a[r][0]));
			_mm256_storeu_ps(t[r] + 8, _mm256_add_ps(_mm256_loadu_ps(t[r] + 8),
								 a[r][1]));
		}
	}
	const int64_t nc = g->m - j0 < ENC_FG_NC ? g->m - j0 : ENC_FG_NC;

	for (int r = 0; r < nr; r++)
		memcpy(g->Y + (i0 + r) * g->m + j0, t[r], (size_t)nc * sizeof(float));
}

/*
 * The AVX-512 tile: Y rows [i0, i0 + nr) (nr <= ENC_FZ_NR) x outputs
 * [j0, j0 + ENC_FZ_NC), 8 x 3 zmm accumulators (24 of the 32 registers),
 * one broadcast of x per 3 FMAs. Every output lane runs the same
 * operations in the same order as enc_fg_tile() (an FMA chain per chunk
 * of ENC_FG_KC, the chunks added in order), so the two agree bit for bit.
 */
__attribute__((target("avx512f")))
static void enc_fz_tile(const struct enc_fgemm *g, const float *p,
			int64_t i0, int nr, int64_t j0)
{
	const float *x[ENC_FZ_NR];
	const int64_t k = g->k;
	__m512 t[ENC_FZ_NR][3];

#pragma GCC unroll 8
	for (int r = 0; r < ENC_FZ_NR; r++) {
		x[r] = g->X + (i0 + (r < nr ? r : 0)) * k;
		t[r][0] = t[r][1] = t[r][2] = _mm512_setzero_ps();
	}
	for (int64_t k0 = 0; k0 < k; k0 += ENC_FG_KC) {
		const int64_t k1 = k0 + ENC_FG_KC < k ? k0 + ENC_FG_KC : k;
		__m512 a[ENC_FZ_NR][3];

#pragma GCC unroll 8
		for (int r = 0; r < ENC_FZ_NR; r++)
			a[r][0] = a[r][1] = a[r][2] = _mm512_setzero_ps();
		for (int64_t kk = k0; kk < k1; kk++) {
			const float *pk = p + kk * ENC_FZ_NC;
			const __m512 w0 = _mm512_loadu_ps(pk);
			const __m512 w1 = _mm512_loadu_ps(pk + 16);
			const __m512 w2 = _mm512_loadu_ps(pk + 32);

#pragma GCC unroll 8
			for (int r = 0; r < ENC_FZ_NR; r++) {
				const __m512 xv = _mm512_set1_ps(x[r][kk]);

				a[r][0] = _mm512_fmadd_ps(xv, w0, a[r][0]);
				a[r][1] = _mm512_fmadd_ps(xv, w1, a[r][1]);
				a[r][2] = _mm512_fmadd_ps(xv, w2, a[r][2]);
			}
		}
		/* t lives in memory-backed registers: the compiler spills
		 * what it must; the adds are once per chunk */
#pragma GCC unroll 8
		for (int r = 0; r < ENC_FZ_NR; r++) {
			t[r][0] = _mm512_add_ps(t[r][0], a[r][0]);
			t[r][1] = _mm512_add_ps(t[r][1], a[r][1]);
			t[r][2] = _mm512_add_ps(t[r][2], a[r][2]);
		}
	}
	const int64_t nc = g->m - j0 < ENC_FZ_NC ? g->m - j0 : ENC_FZ_NC;

	for (int r = 0; r < nr; r++) {
		float *y = g->Y + (i0 + r) * g->m + j0;

		if (nc == ENC_FZ_NC) {
			_mm512_storeu_ps(y, t[r][0]);
			_mm512_storeu_ps(y + 16, t[r][1]);
			_mm512_storeu_ps(y + 32, t[r][2]);
		} else {
			float b[ENC_FZ_NC];

			_mm512_storeu_ps(b, t[r][0]);
			_mm512_storeu_ps(b + 16, t[r][1]);
			_mm512_storeu_ps(b + 32, t[r][2]);
			memcpy(y, b, (size_t)nc * sizeof(float));
		}
	}
}

/* units u: panel u / nrb (nc outputs) x row block u % nrb */
static void enc_fg_fn(int64_t begin, int64_t end, void *arg)
{
	struct enc_fgemm *g = arg;
	const int nc = g->nc, nr = nc == ENC_FZ_NC ? ENC_FZ_NR : ENC_FG_NR;
	float *p = malloc((size_t)g->k * (size_t)(nc + 1) * sizeof(float));
	int64_t packed = -1;

	if (!p) {
		__atomic_store_n(&g->fail, 1, __ATOMIC_RELAXED);
		return;
	}
	for (int64_t u = begin; u < end; u++) {
		const int64_t pj = u / g->nrb, rb = u % g->nrb;
		const int64_t i1 = (rb + 1) * ENC_FG_RB < g->n ?
				   (rb + 1) * ENC_FG_RB : g->n;

		if (pj != packed) {
			enc_fg_pack(g, pj * nc, p, p + g->k * nc);
			packed = pj;
		}
		for (int64_t i = rb * ENC_FG_RB; i < i1; i += nr) {
			const int r = (int)(i1 - i < nr ? i1 - i : nr);

			if (nc == ENC_FZ_NC)
				enc_fz_tile(g, p, i, r, pj * nc);
			else
				enc_fg_tile(g, p, i, r, pj * nc);
		}
	}
	free(p);
}
#endif

void mm_enc_matmul(struct mm_enc *s, enum mm_type t, const void *W,
		   const float *X, float *Y, int64_t m, int64_t k, int64_t n)
{
#if defined(__x86_64__)
	if (s->simd && (t == MM_TYPE_F16 || t == MM_TYPE_BF16 ||
			t == MM_TYPE_F32) && n > 1 && k > 0 && m > 0) {
		struct enc_fgemm g = {
			.t = t, .W = W, .ws = mm_row_bytes(t, k), .X = X, .Y = Y,
			.m = m, .k = k, .n = n,
			.nrb = (n + ENC_FG_RB - 1) / ENC_FG_RB,
			.nc = s->simd > 1 ? ENC_FZ_NC : ENC_FG_NC,
		};

		mm_parallel_for(s->ctx, (m + g.nc - 1) / g.nc * g.nrb,
				enc_fg_fn, &g);
		if (!g.fail)
			return;
		/* out of memory for a panel: the kernels' path below */
	}
#endif
	mm_matmul(s->ctx, t, W, X, Y, m, k, n);
}

void mm_enc_matmul_w(struct mm_enc *s, const struct mm_mmproj_w *w,
		     const float *X, float *Y, int64_t m, int64_t k, int64_t n)
{
	if (s->cal_mode != MM_CAL_DYNAMIC) {
		int ret = s->cal_hooks->linear(s, w, X, Y, m, k, n);

		if (ret && !s->cal_err)
			s->cal_err = ret;
		return;
	}
	if (s->dev) {
		const struct mm_mv mv = { (enum mm_type)w->type, w->data, Y, m };

		if (s->dev->matmul_n(s->dev, &mv, 1, X, k, n))
			return;
	}
	mm_enc_matmul(s, (enum mm_type)w->type, w->data, X, Y, m, k, n);
}

void mm_enc_linear(struct mm_enc *s, const struct mm_mmproj_w *w,
		   const struct mm_mmproj_w *b, const float *X, float *Y,
		   int64_t n)
{
	int64_t k = w->ne[0], m = w->ne[1];

	mm_enc_matmul_w(s, w, X, Y, m, k, n);
	mm_enc_bias(s, b, Y, n, m);
}

/* ---- row-parallel elementwise ops ------------------------------------- */

struct enc_rows {
	const float *X;
	float *Y;
	const float *g, *b;	/* NULL: 1 / 0 */
	int64_t e;
	float eps;
	enum mm_mmproj_act act;
	int simd;
};

static void enc_ln_fn(int64_t begin, int64_t end, void *arg)
{
	const struct enc_rows *a = arg;
	const int64_t e = a->e;

	for (int64_t i = begin; i < end; i++) {
		const float *x = a->X + i * e;
		float *y = a->Y + i * e;
		double mean = 0, var = 0;

		for (int64_t j = 0; j < e; j++)
			mean += x[j];
		mean /= (double)e;
		for (int64_t j = 0; j < e; j++)
			var += (x[j] - mean) * (x[j] - mean);
		var /= (double)e;
		float r = (float)(1.0 / sqrt(var + a->eps));

		for (int64_t j = 0; j < e; j++)
			y[j] = (float)(x[j] - mean) * r * (a->g ? a->g[j] : 1.0f) +
			       (a->b ? a->b[j] : 0.0f);
	}
}

void mm_enc_layernorm(struct mm_enc *s, const struct mm_mmproj_w *g,
		      const struct mm_mmproj_w *b, const float *X, float *Y,
		      int64_t n, int64_t e, float eps)
{
	struct enc_rows a = { .X = X, .Y = Y, .e = e, .eps = eps };

	if (g && g->name) {
		mm_enc_vec(g, s->tmp, e);
		a.g = s->tmp;
	}
	if (b && b->name) {
		mm_enc_vec(b, s->tmp + e, e);
		a.b = s->tmp + e;
	}
	mm_parallel_for(s->ctx, n, enc_ln_fn, &a);
}

static void enc_rms_fn(int64_t begin, int64_t end, void *arg)
{
	const struct enc_rows *a = arg;
	const int64_t e = a->e;

	for (int64_t i = begin; i < end; i++) {
		const float *x = a->X + i * e;
		float *y = a->Y + i * e;
		double ss = 0;

		for (int64_t j = 0; j < e; j++)
			ss += (double)x[j] * x[j];
		float r = (float)(1.0 / sqrt(ss / (double)e + a->eps));

		for (int64_t j = 0; j < e; j++)
			y[j] = x[j] * r * (a->g ? a->g[j] : 1.0f);
	}
}

void mm_enc_rmsnorm(struct mm_enc *s, const struct mm_mmproj_w *g,
		    const float *X, float *Y, int64_t n, int64_t e, float eps)
{
	struct enc_rows a = { .X = X, .Y = Y, .e = e, .eps = eps };

	if (g && g->name) {
		mm_enc_vec(g, s->tmp, e);
		a.g = s->tmp;
	}
	mm_parallel_for(s->ctx, n, enc_rms_fn, &a);
}

float mm_enc_act1(enum mm_mmproj_act act, float a)
{
	switch (act) {
	case MM_MMPROJ_ACT_GELU:
		return 0.5f * a * (1.0f + tanhf(0.7978845608028654f *
				(a + 0.044715f * a * a * a)));
	case MM_MMPROJ_ACT_GELU_ERF:
		return 0.5f * a * (1.0f + erff(a * 0.7071067811865476f));
	case MM_MMPROJ_ACT_SILU:
		return a / (1.0f + expf(-a));
	case MM_MMPROJ_ACT_GELU_QUICK:
	default:
		return a / (1.0f + expf(-1.702f * a));
	}
}

/* ---- SIMD helpers (x86-64 AVX2/FMA; the kernel set decides) ----------- */

#if defined(__x86_64__)

/*
 * exp(x) on 8 lanes: 2^n * p(r), n = round(x / ln2), r = x - n ln2 in two
 * parts, |r| <= ln2 / 2, degree-7 Taylor p (relative error ~1.5e-7). x is
 * clamped to [-87.3, 88.3] (the result stays a normal float; exp(-87.3)
 * = 1.2e-38 stands in for anything smaller).
 */
__attribute__((target("avx2,fma")))
static inline __m256 enc_exp8(__m256 x)
{
	x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3f)),
			  _mm256_set1_ps(88.3f));
	const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504f)),
					 _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	__m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145752f), x);
	__m256 p;

	r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.42860677e-6f), r);
	p = _mm256_set1_ps(1.0f / 5040);
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
	return _mm256_mul_ps(p, _mm256_castsi256_ps(_mm256_slli_epi32(
		_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)),
		23)));
}

/*
 * 1 + erf(x) on 8 lanes: Abramowitz & Stegun 7.1.26, erf(|x|) = 1 -
 * t (a1 + t (a2 + ...)) exp(-x^2), t = 1 / (1 + p |x|) (absolute error
 * <= 1.5e-7), taken as 2 - q for x >= 0 and q below, so the tail keeps
 * its relative precision.
 */
__attribute__((target("avx2,fma")))
static inline __m256 enc_1p_erf8(__m256 x)
{
	const __m256 ax = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x);
	const __m256 one = _mm256_set1_ps(1.0f);
	const __m256 t = _mm256_div_ps(one, _mm256_fmadd_ps(
		_mm256_set1_ps(0.3275911f), ax, one));
	__m256 q = _mm256_set1_ps(1.061405429f);

	q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(-1.453152027f));
	q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(1.421413741f));
	q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(-0.284496736f));
	q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(0.254829592f));
	q = _mm256_mul_ps(_mm256_mul_ps(q, t),
			  enc_exp8(_mm256_mul_ps(_mm256_sub_ps(_mm256_setzero_ps(), ax), ax)));
	return _mm256_blendv_ps(_mm256_sub_ps(_mm256_set1_ps(2.0f), q), q, x);
}

/* x[0..n) = act(x) (n a multiple of 8): the sigmoid forms as x / (1 +
 * exp(-c u)) (GELU tanh: 0.5 x (1 + tanh(u)) = x sigmoid(2u)). */
__attribute__((target("avx2,fma")))
static void enc_act_avx2(enum mm_mmproj_act act, float *x, int64_t n)
{
	const __m256 one = _mm256_set1_ps(1.0f);

	for (int64_t i = 0; i < n; i += 8) {
		const __m256 a = _mm256_loadu_ps(x + i);
		__m256 y;

		if (act == MM_MMPROJ_ACT_GELU_ERF) {
			y = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), a),
					  enc_1p_erf8(_mm256_mul_ps(a,
						_mm256_set1_ps(0.7071067811865476f))));
		} else {
			__m256 z;	/* -c u */

			if (act == MM_MMPROJ_ACT_GELU)
				z = _mm256_mul_ps(_mm256_set1_ps(-1.5957691216057308f),
						  _mm256_fmadd_ps(_mm256_mul_ps(_mm256_set1_ps(0.044715f),
										a),
								  _mm256_mul_ps(a, a), a));
			else if (act == MM_MMPROJ_ACT_SILU)
				z = _mm256_sub_ps(_mm256_setzero_ps(), a);
			else
				z = _mm256_mul_ps(_mm256_set1_ps(-1.702f), a);
			y = _mm256_div_ps(a, _mm256_add_ps(one, enc_exp8(z)));
		}
		_mm256_storeu_ps(x + i, y);
	}
}

/* s[j] = exp(s[j] - max) for j < n, 0 up to np; returns 1 / sum */
__attribute__((target("avx2,fma")))
static float enc_softmax_avx2(float *s, int64_t n, int64_t np)
{
	__m256 mx = _mm256_set1_ps(-INFINITY), sum = _mm256_setzero_ps();
	float m = -INFINITY, tot;
	int64_t j;

	for (j = 0; j + 8 <= n; j += 8)
		mx = _mm256_max_ps(mx, _mm256_loadu_ps(s + j));
	{
		float v[8];

		_mm256_storeu_ps(v, mx);
		for (int u = 0; u < 8; u++)
			m = v[u] > m ? v[u] : m;
	}
	for (; j < n; j++)
		m = s[j] > m ? s[j] : m;
	const __m256 ms = _mm256_set1_ps(m);

	for (j = 0; j + 8 <= n; j += 8) {
		const __m256 e = enc_exp8(_mm256_sub_ps(_mm256_loadu_ps(s + j), ms));

		_mm256_storeu_ps(s + j, e);
		sum = _mm256_add_ps(sum, e);
	}
	{
		float v[8];

		_mm256_storeu_ps(v, sum);
		tot = ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7]));
	}
	for (; j < n; j++) {
		s[j] = expf(s[j] - m);
		tot += s[j];
	}
	for (; j < np; j++)
		s[j] = 0;
	return 1.0f / tot;
}

/*
 * The unnormalized softmax of a row straight to Q8_0 (np / 32 blocks at
 * y): exp(s[j] - max) for j < n, 0 up to np, never stored as f32; each
 * block d = amax / 127 (f16), q = round-to-nearest-even(x 127 / amax).
 * s[n..np) must be readable. Returns 1 / sum of the f32 exps.
 */
__attribute__((target("avx2,fma,f16c")))
static float enc_softmax_q8_avx2(const float *s, int64_t n, int64_t np,
				 uint8_t *y)
{
	__m256 mx = _mm256_set1_ps(-INFINITY), sum = _mm256_setzero_ps();
	const __m256i perm = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
	float m = -INFINITY, v[8];
	int64_t j;

	for (j = 0; j + 8 <= n; j += 8)
		mx = _mm256_max_ps(mx, _mm256_loadu_ps(s + j));
	_mm256_storeu_ps(v, mx);
	for (int u = 0; u < 8; u++)
		m = v[u] > m ? v[u] : m;
	for (; j < n; j++)
		m = s[j] > m ? s[j] : m;
	const __m256 ms = _mm256_set1_ps(m);

	for (j = 0; j < np; j += MM_QK, y += sizeof(struct mm_block_q8_0)) {
		__m256 e[4], am;
		__m256i q[4];

		for (int t = 0; t < 4; t++) {
			const int64_t j0 = j + 8 * t;

			e[t] = enc_exp8(_mm256_sub_ps(_mm256_loadu_ps(s + j0), ms));
			if (j0 + 8 > n) {	/* lanes at n and past: 0 */
				const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
				const __m256i lim = _mm256_set1_epi32((int)(n - j0 > 0 ? n - j0 : 0));

				e[t] = _mm256_and_ps(e[t], _mm256_castsi256_ps(
					_mm256_cmpgt_epi32(lim, lane)));
			}
			sum = _mm256_add_ps(sum, e[t]);
		}
		am = _mm256_max_ps(_mm256_max_ps(e[0], e[1]), _mm256_max_ps(e[2], e[3]));
		am = _mm256_max_ps(am, _mm256_permute2f128_ps(am, am, 1));
		am = _mm256_max_ps(am, _mm256_shuffle_ps(am, am, 0x4e));
		am = _mm256_max_ps(am, _mm256_shuffle_ps(am, am, 0xb1));
		const float amax = _mm256_cvtss_f32(am);
		const float d = amax * (1.0f / 127);
		const __m256 id = _mm256_set1_ps(amax > 0 ? 127.0f / amax : 0.0f);
		const uint16_t dh = (uint16_t)_cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT);

		for (int t = 0; t < 4; t++)
			q[t] = _mm256_cvtps_epi32(_mm256_mul_ps(e[t], id));
		memcpy(y, &dh, 2);
		_mm256_storeu_si256((__m256i *)(y + 2), _mm256_permutevar8x32_epi32(
			_mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]),
					   _mm256_packs_epi32(q[2], q[3])), perm));
	}
	_mm256_storeu_ps(v, sum);
	return 1.0f / (((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7])));
}
#endif

static float enc_softmax_c(float *s, int64_t n, int64_t np)
{
	float mx = -INFINITY, sum = 0;

	for (int64_t j = 0; j < n; j++)
		if (s[j] > mx)
			mx = s[j];
	for (int64_t j = 0; j < n; j++) {
		s[j] = expf(s[j] - mx);
		sum += s[j];
	}
	for (int64_t j = n; j < np; j++)
		s[j] = 0;
	return 1.0f / sum;
}

/*
 * The unnormalized softmax of a row of scores s[0..n) (already scaled):
 * s[j] = exp(s[j] - max), s[n..np) = 0; returns 1 / sum(s), by which the
 * caller scales the row's output (P V's rows are linear in P's).
 */
static float enc_softmax(int simd, float *s, int64_t n, int64_t np)
{
#if defined(__x86_64__)
	if (simd)
		return enc_softmax_avx2(s, n, np);
#endif
	(void)simd;
	return enc_softmax_c(s, n, np);
}

#define ENC_ACT_BLOCK 4096	/* floats per parallel_for unit */

static void enc_act_fn(int64_t begin, int64_t end, void *arg)
{
	const struct enc_rows *a = arg;
	float *x = a->Y;
	int64_t i = begin * ENC_ACT_BLOCK, hi = end * ENC_ACT_BLOCK;

	if (hi > a->e)
		hi = a->e;
#if defined(__x86_64__)
	if (a->simd && hi - i >= 8) {
		const int64_t n8 = (hi - i) & ~(int64_t)7;

		enc_act_avx2(a->act, x + i, n8);
		i += n8;
	}
#endif
	for (; i < hi; i++)
		x[i] = mm_enc_act1(a->act, x[i]);
}

void mm_enc_act(struct mm_enc *s, enum mm_mmproj_act act, float *x, int64_t n)
{
	struct enc_rows a = { .Y = x, .e = n, .act = act, .simd = s->simd };

	mm_parallel_for(s->ctx, (n + ENC_ACT_BLOCK - 1) / ENC_ACT_BLOCK,
			enc_act_fn, &a);
}

/* ---- attention -------------------------------------------------------- */

/*
 * Both paths first gather Q per head (times 1 / sqrt(d)) into qh[h][n][d]
 * and finally scatter the heads' outputs into O; per head, S = qh K^T,
 * softmax by rows, then P V, each product one mm_matmul() over the thread
 * pool (f32: mm_enc_matmul(), the register-tiled GEMM on x86).
 *
 * f32: K rows (kh[h][n][d]) and V^T (vt[h][d][n]) as F32 weights; oh is
 * [h][n][d].
 * int8 (np = n rounded up to 32): K rows of each head quantized to Q8_0
 * (kq[h][np][d], rows past n zero) as the weight of S [n][np]; the
 * softmax quantizes each row of P to Q8_0 (pq[n][np], columns past n
 * zero), which is the weight of O^T = V^T P^T, and V^T (vt[h][d][np], f32,
 * positions past n zero) the activations, quantized by mm_matmul(): 64
 * rows per head instead of n rows of P. oh is O^T, [h][d][n].
 */
struct enc_att {
	const float *Q, *K, *V;
	float *O;
	float *qh, *oh, *S, *vt;
	float *rs;		/* [h][n]: 1 / the softmax sums */
	int64_t h;		/* the head of the softmax */
	float *kh;		/* f32 */
	uint8_t *kq, *pq;	/* int8 */
	size_t krb, prb;	/* Q8_0 row bytes: d, np elements */
	int64_t n, np, e, d, nh;
	float scale;
	int simd;
	/* calibrated static int8 (calib.c, through hooks): K and P
	 * quantized with these per-tensor scales instead of per block;
	 * 0: not */
	float sk, sp;
	const struct mm_enc_cal_hooks *hooks;
};

#define ENC_TR 16	/* rows per step of a transposition */

/* rows [i0, i1) of Q, K, V (i < np; past n: the int8 path's zero
 * padding), in steps of ENC_TR rows (V^T: ENC_TR floats per column) */
static void enc_att_gather_fn(int64_t begin, int64_t end, void *arg)
{
	const struct enc_att *a = arg;
	const int64_t d = a->d, n = a->n, e = a->e, np = a->np;

	for (int64_t i0 = begin * ENC_TR; i0 < end * ENC_TR && i0 < np;
	     i0 += ENC_TR) {
		const int64_t i1 = i0 + ENC_TR < np ? i0 + ENC_TR : np;
		const int64_t iv = i1 < n ? i1 : n;	/* rows of V */

		for (int64_t c = 0; c < e; c++) {
			float *vt = a->vt + c * np;
			int64_t i;

			for (i = i0; i < iv; i++)
				vt[i] = a->V[i * e + c];
			for (; i < i1; i++)
				vt[i] = 0;
		}
		for (int64_t i = i0; i < i1; i++)
			for (int64_t h = 0; h < a->nh; h++) {
				const float *q = a->Q + i * e + h * d;
				float *qh = a->qh + (h * n + i) * d;

				if (i >= n) {
					memset(a->kq + (size_t)(h * np + i) * a->krb,
					       0, a->krb);
					continue;
				}
				for (int64_t c = 0; c < d; c++)
					qh[c] = q[c] * a->scale;
				if (a->kq && a->sk > 0)
					a->hooks->quant_row(a->K + i * e + h * d,
							    a->sk,
							    a->kq + (size_t)(h * np + i) *
							    a->krb, d);
				else if (a->kq)
					mm_quantize_row(MM_TYPE_Q8_0,
							a->K + i * e + h * d,
							a->kq + (size_t)(h * np + i) *
							a->krb, d);
				else
					memcpy(a->kh + (h * n + i) * d,
					       a->K + i * e + h * d,
					       (size_t)d * sizeof(float));
			}
	}
}

static void enc_att_softmax_fn(int64_t begin, int64_t end, void *arg)
{
	const struct enc_att *a = arg;

	for (int64_t i = begin; i < end; i++) {
		float *s = a->S + i * a->np;
		float *r = a->rs + a->h * a->n + i;

		if (a->pq && a->sp > 0) {
			*r = enc_softmax(a->simd, s, a->n, a->np);
			a->hooks->quant_row(s, a->sp,
					    a->pq + (size_t)i * a->prb, a->np);
			continue;
		}
#if defined(__x86_64__)
		if (a->pq && a->simd) {
			*r = enc_softmax_q8_avx2(s, a->n, a->np,
						 a->pq + (size_t)i * a->prb);
			continue;
		}
#endif
		*r = enc_softmax(a->simd, s, a->n, a->np);
		if (a->pq)
			mm_quantize_row(MM_TYPE_Q8_0, s, a->pq + (size_t)i * a->prb,
					a->np);
	}
}

/* O's rows [i0, i1) from oh times the softmax's 1 / sum, in steps of
 * ENC_TR rows (int8: ENC_TR floats of each oh row) */
static void enc_att_scatter_fn(int64_t begin, int64_t end, void *arg)
{
	const struct enc_att *a = arg;
	const int64_t d = a->d, n = a->n, e = a->e;

	for (int64_t i0 = begin * ENC_TR; i0 < end * ENC_TR && i0 < n;
	     i0 += ENC_TR) {
		const int64_t i1 = i0 + ENC_TR < n ? i0 + ENC_TR : n;

		for (int64_t h = 0; h < a->nh; h++) {
			const float *r = a->rs + h * n;

			if (a->pq) {	/* oh[h][c][i] */
				for (int64_t c = 0; c < d; c++) {
					const float *oh = a->oh + (h * d + c) * n;

					for (int64_t i = i0; i < i1; i++)
						a->O[i * e + h * d + c] = oh[i] * r[i];
				}
			} else {	/* oh[h][i][c] */
				for (int64_t i = i0; i < i1; i++) {
					const float *oh = a->oh + (h * n + i) * d;
					float *o = a->O + i * e + h * d;

					for (int64_t c = 0; c < d; c++)
						o[c] = oh[c] * r[i];
				}
			}
		}
	}
}

static void *enc_scratch(struct mm_enc *s, size_t bytes)
{
	if (bytes > s->att_bytes) {
		free(s->att);
		s->att = malloc(bytes);
		s->att_bytes = s->att ? bytes : 0;
	}
	return s->att;
}

int mm_enc_attention(struct mm_enc *s, const float *Q, const float *K,
		     const float *V, float *O, int64_t n, int64_t e,
		     int64_t n_head, int int8)
{
	struct enc_att a = { .Q = Q, .K = K, .V = V, .O = O, .n = n, .e = e,
			     .nh = n_head, .d = e / n_head, .simd = s->simd,
			     .hooks = s->cal_hooks };
	size_t fl, bytes;
	uint8_t *buf;
	float sq = 0, sv = 0;
	char nm[4][sizeof(s->cal_blk) + 8];

	a.scale = 1.0f / sqrtf((float)a.d);
	if (s->cal_mode != MM_CAL_DYNAMIC) {
		static const char *const op[4] = { "q", "k", "p", "v" };

		for (int i = 0; i < 4; i++)
			snprintf(nm[i], sizeof(nm[i]), "%sattn.%s", s->cal_blk,
				 op[i]);
		int8 = 0;
	}
	if (s->cal_mode == MM_CAL_OBSERVE) {
		s->cal_hooks->observe(s->cal, nm[0], Q, (size_t)(n * e),
				      a.scale);
		s->cal_hooks->observe(s->cal, nm[1], K, (size_t)(n * e), 1);
		s->cal_hooks->observe(s->cal, nm[3], V, (size_t)(n * e), 1);
	} else if (s->cal_mode == MM_CAL_STATIC && a.d % MM_QK == 0) {
		sq = s->cal_hooks->scale(s->cal, nm[0]);
		a.sk = s->cal_hooks->scale(s->cal, nm[1]);
		a.sp = s->cal_hooks->scale(s->cal, nm[2]);
		sv = s->cal_hooks->scale(s->cal, nm[3]);
		if (!(sq > 0 && a.sk > 0 && a.sp > 0 && sv > 0))
			return -ENOENT;
		int8 = 1;
	}
	int8 = int8 && a.d % MM_QK == 0;
	a.np = int8 ? (n + MM_QK - 1) / MM_QK * MM_QK : n;
	/* qh, oh, S, vt (+ kh at f32) floats; kq, pq bytes at int8 */
	fl = (size_t)n * e * 2 + (size_t)n * a.np + (size_t)a.np * e +
	     (size_t)n * n_head + (int8 ? 0 : (size_t)n * e);
	bytes = fl * sizeof(float);
	if (int8) {
		a.krb = mm_row_bytes(MM_TYPE_Q8_0, a.d);
		a.prb = mm_row_bytes(MM_TYPE_Q8_0, a.np);
		bytes += (size_t)n_head * a.np * a.krb + (size_t)n * a.prb;
	}
	buf = enc_scratch(s, bytes);
	if (!buf)
		return -ENOMEM;
	a.qh = (float *)buf;
	a.oh = a.qh + n * e;
	a.S = a.oh + n * e;
	a.vt = a.S + n * a.np;
	a.rs = a.vt + a.np * e;
	if (int8) {
		a.kq = (uint8_t *)(a.rs + n * n_head);
		a.pq = a.kq + (size_t)n_head * a.np * a.krb;
	} else {
		a.kh = a.rs + n * n_head;
	}
	mm_parallel_for(s->ctx, (a.np + ENC_TR - 1) / ENC_TR, enc_att_gather_fn,
			&a);
	for (int64_t h = 0; h < n_head; h++) {
		const float *qh = a.qh + h * n * a.d, *vt = a.vt + h * a.d * a.np;
		float *oh = a.oh + h * n * a.d;

		/* S[i][j] = q_i . k_j: K's rows as the weight */
		if (int8 && sq > 0) {
			int ret = s->cal_hooks->matmul_q8(s, a.kq + (size_t)h *
							  a.np * a.krb, qh,
							  sq, a.S, a.np, a.d,
							  n);

			if (ret)
				return ret;
		} else if (int8)
			mm_matmul(s->ctx, MM_TYPE_Q8_0,
				  a.kq + (size_t)h * a.np * a.krb, qh, a.S,
				  a.np, a.d, n);
		else	/* f32: the register-tiled GEMM where there is one */
			mm_enc_matmul(s, MM_TYPE_F32, a.kh + h * n * a.d, qh,
				      a.S, n, a.d, n);
		a.h = h;
		mm_parallel_for(s->ctx, n, enc_att_softmax_fn, &a);
		if (s->cal_mode == MM_CAL_OBSERVE)
			s->cal_hooks->observe(s->cal, nm[2], a.S, (size_t)(n * a.np), 1);
		if (int8 && sv > 0) {
			int ret = s->cal_hooks->matmul_q8(s, a.pq, vt, sv, oh,
							  n, a.np, a.d);

			if (ret)
				return ret;
		} else if (int8)	/* oh[c][i] = sum_j v_j[c] P[i][j]: P the weight */
			mm_matmul(s->ctx, MM_TYPE_Q8_0, a.pq, vt, oh, n, a.np,
				  a.d);
		else		/* oh[i][c] = sum_j P[i][j] v_j[c]: V^T the weight */
			mm_enc_matmul(s, MM_TYPE_F32, vt, a.S, oh, a.d, n, n);
	}
	mm_parallel_for(s->ctx, (n + ENC_TR - 1) / ENC_TR, enc_att_scatter_fn,
			&a);
	return 0;
}

/* ---- block ------------------------------------------------------------ */

/* x[n][m] += y[n][m] */
static void enc_add(struct mm_enc *s, float *x, const float *y, int64_t n,
		    int64_t m)
{
	struct enc_rowop a = { .Y = x, .X = y, .m = m };

	mm_parallel_for(s->ctx, n, enc_rowop_fn, &a);
}

/* a weight type whose matmuls quantize the activations (not F32/F16/BF16) */
static int enc_quantized(uint32_t t)
{
	return t != MM_TYPE_F32 && t != MM_TYPE_F16 && t != MM_TYPE_BF16;
}

int mm_enc_block(struct mm_enc *s, const struct mm_mmproj_block *b, float *x,
		 int64_t n, int64_t e, int64_t f, int64_t n_head,
		 enum mm_mmproj_act act, float eps,
		 const struct mm_enc_bufs *w)
{
	int ret, fused, done = 0;

	mm_enc_layernorm(s, &b->ln1_w, &b->ln1_b, x, w->big, n, e, eps);
	if (s->cal_mode != MM_CAL_DYNAMIC) {
		/* "v.blk.3.attn_q.weight" -> "v.blk.3." */
		const char *q = b->q_w.name, *t = q ? strstr(q, "attn_q") : NULL;
		size_t len = t ? (size_t)(t - q) : 0;

		if (len >= sizeof(s->cal_blk))
			len = 0;
		memcpy(s->cal_blk, q, len);
		s->cal_blk[len] = 0;
	}
	/*
	 * Q, K and V in one job (the activations quantized once) on the
	 * device, or for quantized weights, or without the x86 kernel sets;
	 * float weights on the CPU take the register-tiled GEMM of
	 * mm_enc_matmul() per projection (mm_matmul_n's gemv kernels reread
	 * each weight row per few rows of X). A device that fails falls back
	 * to exactly what the CPU backend runs.
	 */
	fused = s->cal_mode == MM_CAL_DYNAMIC && b->q_w.type == b->k_w.type &&
		b->q_w.type == b->v_w.type && b->q_w.ne[1] == e &&
		b->k_w.ne[1] == e && b->v_w.ne[1] == e;
	if (fused) {
		const struct mm_mv mv[3] = {
			{ (enum mm_type)b->q_w.type, b->q_w.data, w->q, e },
			{ (enum mm_type)b->k_w.type, b->k_w.data, w->k, e },
			{ (enum mm_type)b->v_w.type, b->v_w.data, w->v, e },
		};

		if (s->dev && s->dev->matmul_n(s->dev, mv, 3, w->big, e, n))
			done = 1;
		else if (enc_quantized(b->q_w.type) || !s->simd) {
			mm_matmul_n(s->ctx, mv, 3, w->big, e, n);
			done = 1;
		}
	}
	if (done) {
		mm_enc_bias(s, &b->q_b, w->q, n, e);
		mm_enc_bias(s, &b->k_b, w->k, n, e);
		mm_enc_bias(s, &b->v_b, w->v, n, e);
	} else {
		mm_enc_linear(s, &b->q_w, &b->q_b, w->big, w->q, n);
		mm_enc_linear(s, &b->k_w, &b->k_b, w->big, w->k, n);
		mm_enc_linear(s, &b->v_w, &b->v_b, w->big, w->v, n);
	}
	ret = mm_enc_attention(s, w->q, w->k, w->v, w->h, n, e, n_head,
			       enc_quantized(b->q_w.type) &&
			       enc_quantized(b->k_w.type) &&
			       enc_quantized(b->v_w.type));
	if (ret)
		return ret;
	mm_enc_linear(s, &b->o_w, &b->o_b, w->h, w->q, n);
	enc_add(s, x, w->q, n, e);

	mm_enc_layernorm(s, &b->ln2_w, &b->ln2_b, x, w->h, n, e, eps);
	mm_enc_linear(s, &b->up_w, &b->up_b, w->h, w->big, n);
	mm_enc_act(s, act, w->big, n * f);
	mm_enc_linear(s, &b->down_w, &b->down_b, w->big, w->q, n);
	enc_add(s, x, w->q, n, e);
	return 0;
}

// SPDX-License-Identifier: MIT
/*
 * matmul.c - kernel-set selection (the one CPU dispatch), the context
 * (kernels, pool, scratch) and the matvec/matmul drivers that split rows
 * over the pool's threads.
 */
#include "quant.h"
#include "quant_kern.h"
#include "threadpool.h"

#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__aarch64__)
#include <sys/auxv.h>
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20)
#endif
#ifndef HWCAP2_I8MM
#define HWCAP2_I8MM (1 << 13)
#endif
#endif


/* ---- kernel sets ----------------------------------------------------- */

static int mm_cpu_has(const char *name)
{
	if (!strcmp(name, "scalar"))
		return 1;
#if defined(__x86_64__)
	__builtin_cpu_init();
	if (!strcmp(name, "avx2"))
		return __builtin_cpu_supports("avx2") &&
		       __builtin_cpu_supports("fma") && mm_cpu_f16c();
	if (!strcmp(name, "avx512vnni"))
		return mm_cpu_has("avx2") &&
		       __builtin_cpu_supports("avx512f") &&
		       __builtin_cpu_supports("avx512bw") &&
		       __builtin_cpu_supports("avx512vl") &&
		       __builtin_cpu_supports("avx512vnni");
#endif
#if defined(__aarch64__)
	if (!strcmp(name, "neon") || !strcmp(name, "neon-dotprod"))
		return !!(getauxval(AT_HWCAP) & HWCAP_ASIMDDP);
	if (!strcmp(name, "neon-i8mm"))
		return mm_cpu_has("neon") && (getauxval(AT_HWCAP2) & HWCAP2_I8MM);
#endif
	return 0;
}

int mm_kernels_available(const char *name)
{
	return mm_cpu_has(name);
}

const struct mm_kernels *mm_kernels_select(const char *name)
{
	if (!name || !*name) {
#if defined(__x86_64__)
		if (mm_cpu_has("avx512vnni"))
			return &mm_kernels_avx512vnni;
		if (mm_cpu_has("avx2"))
			return &mm_kernels_avx2;
#endif
#if defined(__aarch64__)
		if (mm_cpu_has("neon-i8mm"))
			return &mm_kernels_neon_i8mm;
		if (mm_cpu_has("neon"))
			return &mm_kernels_neon;
#endif
		return &mm_kernels_scalar;
	}
	if (!mm_cpu_has(name))
		return NULL;
	if (!strcmp(name, "scalar"))
		return &mm_kernels_scalar;
#if defined(__x86_64__)
	if (!strcmp(name, "avx2"))
		return &mm_kernels_avx2;
	if (!strcmp(name, "avx512vnni"))
		return &mm_kernels_avx512vnni;
#endif
#if defined(__aarch64__)
	if (!strcmp(name, "neon") || !strcmp(name, "neon-dotprod"))
		return &mm_kernels_neon;
	if (!strcmp(name, "neon-i8mm"))
		return &mm_kernels_neon_i8mm;
#endif
	return NULL;
}

/* ---- context and drivers --------------------------------------------- */


int mm_ctx_create_with(int nthreads, const char *kernels,
		       struct mm_ctx **out)
{
	struct mm_ctx *ctx;
	int err;

	if (nthreads <= 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		nthreads = n > 0 ? (int)n : 1;
	}
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return -ENOMEM;
	ctx->kern = mm_kernels_select(kernels);
	if (!ctx->kern) {
		free(ctx);
		return -ENOTSUP;
	}
	err = mm_pool_create(nthreads, &ctx->pool);
	if (err) {
		free(ctx);
		return err;
	}
	*out = ctx;
	return 0;
}

int mm_ctx_create(int nthreads, struct mm_ctx **out)
{
	return mm_ctx_create_with(nthreads, getenv("MMHAL_KERNELS"), out);
}

void mm_ctx_destroy(struct mm_ctx *ctx)
{
	if (!ctx)
		return;
	mm_pool_destroy(ctx->pool);
	free(ctx->scratch);
	free(ctx);
}

const char *mm_ctx_kernels(const struct mm_ctx *ctx)
{
	return ctx->kern->name;
}

int mm_ctx_threads(const struct mm_ctx *ctx)
{
	return mm_pool_threads(ctx->pool);
}

static void *mm_ctx_scratch(struct mm_ctx *ctx, size_t size)
{
	if (size > ctx->scratch_size) {
		void *p = NULL;

		size = (size + 4095) & ~(size_t)4095;
		if (posix_memalign(&p, 64, size))
			abort();	/* out of memory for activations */
		free(ctx->scratch);
		ctx->scratch = p;
		ctx->scratch_size = size;
	}
	return ctx->scratch;
}

struct mm_job {
	const struct mm_kernels *kern;
	enum mm_type t;
	size_t ws;		/* W row bytes */
	const float *X;
	uint8_t *xq;
	size_t xs;		/* quantized X row bytes */
	uint8_t *xp;		/* matmul: X rows in the gemm's form */
	size_t xps;		/* their bytes */
	int64_t k, n;
	int nout;		/* matmul: the matrices, each its own W and Y */
	struct mm_mm_out {
		const uint8_t *W;
		float *Y;	/* n rows of m */
		int64_t m;
		int64_t p0;	/* its first W panel among all matrices' */
	} out[MM_MV_MAX];
	int64_t npanel;		/* matmul: W panels (MM_MC rows) in all */
	int64_t next;		/* next unit to claim (atomic) */
	int64_t qnext;		/* matmul: next X row to quantize (atomic) */
	int64_t qdone;		/* matmul: X rows quantized (atomic) */
	uint8_t *gscratch;	/* matmul: MM_GEMM_SCRATCH per thread */
	int64_t ncu;		/* matmul: X rows per unit */
};

/*
 * Work is claimed dynamically, a unit at a time, from an atomic counter:
 * a worker that is descheduled (2 cores shared with other jobs) only
 * delays the unit it holds, and the pool lets the caller finish alone if
 * a worker never shows up (threadpool.c).
 */
static inline int64_t mm_claim(int64_t *next)
{
	return __atomic_fetch_add(next, 1, __ATOMIC_RELAXED);
}

#define MM_CHUNK_BYTES (16 << 10)	/* least W bytes per matvec unit */

/* Several matrices sharing one input x, run as one job (decode). */
struct mm_mv_job {
	int64_t k;
	int nmv;
	struct mm_mv_part {
		mm_gemv_fn gemv;
		const uint8_t *W;
		size_t ws;		/* W row bytes */
		const uint8_t *xq;	/* x in the type's activation format */
		float *y;
		int64_t r0, m;		/* rows [r0, r0 + m) of the job */
		int64_t chunk;		/* least rows per claimed unit */
	} mv[MM_MV_MAX];
	int64_t rows;			/* all matrices' rows */
	int64_t next;			/* next row to claim (atomic) */
};

/*
 * Guided claiming over the rows of all matrices in turn: a unit is 1/nth
 * of the rows still unclaimed (a multiple of 8, at least the matrix's
 * chunk, never past its end), so early units are long streams and the
 * last ones are short: the caller waits at most ~16 KiB of work for the
 * slowest thread at the end. Each unit is a new stream whose first lines
 * miss: units of 1/(2 nth) read 2-5 points less of the bandwidth on the
 * 0.5-1 MB matrices (model-runtime.rst, tenth session).
 */
static void mm_matvec_task(int tid, int nth, void *arg)
{
	struct mm_mv_job *j = arg;

	(void)tid;
	for (;;) {
		int64_t r0 = __atomic_load_n(&j->next, __ATOMIC_RELAXED), n;
		const struct mm_mv_part *p;

		do {
			if (r0 >= j->rows)
				return;
			p = j->mv;
			while (r0 >= p->r0 + p->m)
				p++;
			n = ((j->rows - r0) / nth) & ~(int64_t)7;
			n = MM_MIN(MM_MAX(n, p->chunk), p->r0 + p->m - r0);
		} while (!__atomic_compare_exchange_n(&j->next, &r0, r0 + n, 1,
						      __ATOMIC_RELAXED,
						      __ATOMIC_RELAXED));
		p->gemv(j->k, p->W + (r0 - p->r0) * p->ws, p->ws, p->xq,
			p->y + (r0 - p->r0), n);
	}
}

static void mm_kernel_gemv_check(const struct mm_kernels *kern,
				 enum mm_type t)
{
	if ((unsigned int)t >= MM_NTYPES || !kern->gemv[t])
		abort();	/* caller passed a type we do not support */
}

/* The weight type whose activation format x is quantized to for t: Q8_0
 * and Q5_0 weights read the Q4_0 format (the same blocks, then sums that
 * Q8_0 ignores), so Q8_0, Q4_0 and Q5_0 matrices share one quantized x. */
static enum mm_type mm_act_key(enum mm_type t)
{
	t = mm_stored_type(t);
	return t == MM_TYPE_Q8_0 || t == MM_TYPE_Q5_0 ? MM_TYPE_Q4_0 : t;
}

static int mm_act_shared(enum mm_type a, enum mm_type b)
{
	a = mm_act_key(a);
	b = mm_act_key(b);
	return a == b || (a != MM_TYPE_Q4_0 && b != MM_TYPE_Q4_0 &&
			  mm_act_type(a) == mm_act_type(b));
}

void mm_matvec_n(struct mm_ctx *ctx, const struct mm_mv *mv, int nmv,
		 const float *x, int64_t k)
{
	struct mm_mv_job j = { .k = k };
	const int nth = mm_pool_threads(ctx->pool);
	size_t off[MM_MV_MAX], total = 0;
	int fresh[MM_MV_MAX];	/* x not yet quantized to mv[i]'s format */
	uint8_t *scratch;

	if (nmv < 1 || nmv > MM_MV_MAX)
		abort();	/* caller bug: see MM_MV_MAX */
	for (int i = 0; i < nmv; i++)
		mm_kernel_gemv_check(ctx->kern, mv[i].t);
	if (k <= 0)
		return;
	/* one quantized x per activation format */
	for (int i = 0; i < nmv; i++) {
		int s = 0;

		while (s < i && !mm_act_shared(mv[s].t, mv[i].t))
			s++;
		fresh[i] = s == i;
		if (s < i) {
			off[i] = off[s];
			continue;
		}
		off[i] = total;
		total += (mm_act_row_bytes(mm_act_key(mv[i].t), k) + 63) &
			 ~(size_t)63;
	}
	scratch = mm_ctx_scratch(ctx, total);
	for (int i = 0; i < nmv; i++) {
		struct mm_mv_part *p = &j.mv[j.nmv];
		int64_t c;

		if (fresh[i])
			mm_quantize_act(mm_act_key(mv[i].t), x, scratch + off[i],
					k);
		if (mv[i].m <= 0)
			continue;
		p->gemv = ctx->kern->gemv[mv[i].t];
		p->W = mv[i].W;
		p->ws = mm_row_bytes(mv[i].t, k);
		p->xq = scratch + off[i];
		p->y = mv[i].y;
		p->r0 = j.rows;
		p->m = mv[i].m;
		/* The smallest unit: ~16 KiB of W, a multiple of 8 rows (the
		 * SIMD kernels do 4 or 8 rows at a time), at most 1/4 of a
		 * thread's share of this matrix. */
		c = MM_MAX(8, (int64_t)(MM_CHUNK_BYTES / p->ws)) & ~(int64_t)7;
		c = MM_MIN(c, ((p->m + 4 * nth - 1) / (4 * nth) + 7) &
			   ~(int64_t)7);
		p->chunk = MM_MAX(8, c);
		j.rows += p->m;
		j.nmv++;
	}
	if (nth == 1 || (j.nmv == 1 && j.rows <= j.mv[0].chunk)) {
		for (int i = 0; i < j.nmv; i++)
			j.mv[i].gemv(k, j.mv[i].W, j.mv[i].ws, j.mv[i].xq,
				     j.mv[i].y, j.mv[i].m);
		return;
	}
	if (j.nmv)
		mm_pool_run(ctx->pool, mm_matvec_task, &j);
}

void mm_matvec(struct mm_ctx *ctx, enum mm_type t, const void *W,
	       const float *x, float *y, int64_t m, int64_t k)
{
	const struct mm_mv mv = { .t = t, .W = W, .y = y, .m = m };

	mm_matvec_n(ctx, &mv, 1, x, k);
}

#define MM_MC MM_GEMM_MC	/* W rows per unit (packed panel in L2) */

static void mm_matmul_task(int tid, int nth, void *arg)
{
	struct mm_job *j = arg;
	mm_gemm_fn gemm = j->kern->gemm[j->t];
	const int64_t units = j->npanel * ((j->n + j->ncu - 1) / j->ncu);

	(void)nth;
	/* Quantize X, a row per claim; then wait until all rows are done
	 * (only threads that claimed a row are waited for). */
	for (;;) {
		int64_t i = mm_claim(&j->qnext);

		if (i >= j->n)
			break;
		mm_quantize_act(j->t, j->X + i * j->k, j->xq + i * j->xs, j->k);
		if (gemm)
			j->kern->xprep[j->t](j->k, j->xq + i * j->xs,
					     j->xp + i * j->xps);
		__atomic_fetch_add(&j->qdone, 1, __ATOMIC_RELEASE);
	}
	for (int spin = 0; __atomic_load_n(&j->qdone, __ATOMIC_ACQUIRE) < j->n;
	     spin++) {
		if (spin > 1000)
			sched_yield();
	}
	for (;;) {
		int64_t u = mm_claim(&j->next);

		if (u >= units)
			break;
		const int64_t jc = u / j->npanel * j->ncu, p = u % j->npanel;
		const struct mm_mm_out *o = j->out;

		while (p >= o->p0 + (o->m + MM_MC - 1) / MM_MC)
			o++;

		const int64_t ic = (p - o->p0) * MM_MC;
		const int64_t nc = MM_MIN(j->ncu, j->n - jc);
		const int64_t mc = MM_MIN(MM_MC, o->m - ic);
		const uint8_t *W = o->W + ic * j->ws;
		float *Y = o->Y + jc * o->m + ic;

		if (gemm) {
			gemm(j->k, W, j->ws, j->xp + jc * j->xps, j->xps, Y, o->m,
			     mc, nc, j->gscratch + (size_t)tid * MM_GEMM_SCRATCH);
			continue;
		}
		for (int64_t jj = 0; jj < nc; jj++)
			j->kern->gemv[j->t](j->k, W, j->ws,
					    j->xq + (jc + jj) * j->xs,
					    Y + jj * o->m, mc);
	}
}

void mm_matmul_n(struct mm_ctx *ctx, const struct mm_mv *mv, int nmv,
		 const float *X, int64_t k, int64_t n)
{
	struct mm_job j = { .kern = ctx->kern, .X = X, .k = k, .n = n };

	if (nmv < 1 || nmv > MM_MV_MAX)
		abort();	/* caller bug: see MM_MV_MAX */
	for (int i = 0; i < nmv; i++)
		if (mv[i].t != mv[0].t)
			abort();	/* caller bug: one type per job */
	mm_kernel_gemv_check(ctx->kern, mv[0].t);
	if (k <= 0 || n <= 0)
		return;
	if (n == 1) {
		mm_matvec_n(ctx, mv, nmv, X, k);
		return;
	}
	j.t = mv[0].t;
	j.ws = mm_row_bytes(j.t, k);
	for (int i = 0; i < nmv; i++) {
		if (mv[i].m <= 0)
			continue;
		j.out[j.nout] = (struct mm_mm_out){ .W = mv[i].W, .Y = mv[i].y,
						    .m = mv[i].m,
						    .p0 = j.npanel };
		j.npanel += (mv[i].m + MM_MC - 1) / MM_MC;
		j.nout++;
	}
	if (!j.nout)
		return;
	j.xs = mm_act_row_bytes(j.t, k);
	j.xs = (j.xs + 63) & ~(size_t)63;
	if (ctx->kern->gemm[j.t])
		j.xps = (ctx->kern->xprep_bytes(k) + 63) & ~(size_t)63;
	j.xq = mm_ctx_scratch(ctx, (j.xs + j.xps) * n +
			      (size_t)mm_pool_threads(ctx->pool) * MM_GEMM_SCRATCH);
	j.xp = j.xq + j.xs * n;
	j.gscratch = j.xp + j.xps * n;
	/* A unit is MM_MC W rows of one matrix x ncu X rows: all of X (each
	 * W panel is packed once) unless that leaves fewer than ~8 units per
	 * thread. */
	{
		const int64_t want = 8 * (int64_t)mm_pool_threads(ctx->pool);
		const int64_t ncj = j.npanel >= want ? 1 :
				    (want + j.npanel - 1) / j.npanel;

		j.ncu = MM_MAX((n + ncj - 1) / ncj, MM_MIN(n, 16));
	}
	mm_pool_run(ctx->pool, mm_matmul_task, &j);
}

void mm_matmul(struct mm_ctx *ctx, enum mm_type t, const void *W,
	       const float *X, float *Y, int64_t m, int64_t k, int64_t n)
{
	const struct mm_mv mv = { .t = t, .W = W, .y = Y, .m = m };

	mm_matmul_n(ctx, &mv, 1, X, k, n);
}

/* nth contiguous ranges, each claimed by one thread (the caller does the
 * ones no worker took): at most nth calls of fn in all. */
struct mm_pfor {
	int64_t n;
	int64_t next;	/* atomic */
	int nth;
	void (*fn)(int64_t, int64_t, void *);
	void *arg;
};

static void mm_pfor_task(int tid, int nth, void *arg)
{
	struct mm_pfor *p = arg;

	(void)tid;
	(void)nth;
	for (;;) {
		int64_t r = mm_claim(&p->next), b, e;

		if (r >= p->nth)
			break;
		b = p->n * r / p->nth;
		e = p->n * (r + 1) / p->nth;
		if (e > b)
			p->fn(b, e, p->arg);
	}
}

void mm_parallel_for(struct mm_ctx *ctx, int64_t n,
		     void (*fn)(int64_t begin, int64_t end, void *arg),
		     void *arg)
{
	struct mm_pfor p = { .n = n, .fn = fn, .arg = arg };

	if (n <= 0)
		return;
	p.nth = (int)MM_MIN(n, mm_pool_threads(ctx->pool));
	if (p.nth == 1) {
		fn(0, n, arg);
		return;
	}
	mm_pool_run(ctx->pool, mm_pfor_task, &p);
}

// SPDX-License-Identifier: MIT
/*
 * kbench.c - kernel benchmark of libhal/model against limits measured in
 * the same run:
 *  - streaming read bandwidth: all threads sum a 1 GiB buffer (AVX2 loads
 *    where available), best of 3;
 *  - int8 dot-product peak: vpdpbusd zmm (if AVX-512 VNNI; 10 chains in
 *    assembly, and the same on ymm for comparison) and the AVX2 sequence
 *    vpmaddubsw + vpmaddwd + vpaddd (what this kernel set uses for a dot
 *    without VNNI; 8 per iteration into 4 sums), all threads;
 *  - decode matvec: weight bytes / s over the read bandwidth of the same
 *    W bytes, timed in alternate rounds; W copies are rotated so the set
 *    read exceeds the L3 (cold weights, as in decode). The bar is against
 *    one streaming pass; the last two columns are against the same bytes
 *    read a W copy per job, split among the threads as a matvec call is
 *    (what the hand-off and the start of each call cost a read alone);
 *  - prefill matmul: 2*m*k*n int8 ops / s over the dot peak, timed in
 *    alternate rounds.
 * q4_0_r8, q5_0_r8, q8_0_r8, q4_K_r8 rows: those weights in the layout the model
 * loader makes for the x86 kernels (mm_repack(); q8_0_r8: AVX2 set only),
 * the same bytes rearranged.
 * Each bar ratio is best / best over the same rounds: the machines are
 * shared, and a neighbour's load then moves both sides.
 *
 *   kbench [-t threads] [-f substring] [-w]   (MMHAL_KERNELS picks the kernel
 *   set; -f runs only the kernel rows whose "type shape" label contains
 *   the substring, e.g. -f q8_0 or -f m=4096; -w keeps one copy of W, so
 *   matvec runs from cache: the kernels' compute rate, not a bar figure)
 */
#include "quant.h"
#include "quant_kern.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *xalloc(size_t n)
{
	void *p = NULL;

	if (posix_memalign(&p, 2 << 20, n)) {
		fprintf(stderr, "kbench: out of memory (%zu bytes)\n", n);
		exit(1);
	}
	return p;
}

/* ---- bandwidth -------------------------------------------------------- */

struct bw_arg {
	const uint8_t *buf;
	size_t chunk;
	double sums[64];
};

#if defined(__x86_64__)
__attribute__((target("avx2")))
static double bw_sum_avx2(const uint8_t *p, size_t n)
{
	__m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;

	for (size_t i = 0; i + 128 <= n; i += 128) {
		a0 = _mm256_add_epi64(a0, _mm256_load_si256((const __m256i *)(p + i)));
		a1 = _mm256_add_epi64(a1, _mm256_load_si256((const __m256i *)(p + i + 32)));
		a2 = _mm256_add_epi64(a2, _mm256_load_si256((const __m256i *)(p + i + 64)));
		a3 = _mm256_add_epi64(a3, _mm256_load_si256((const __m256i *)(p + i + 96)));
	}
	a0 = _mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3));
	return (double)_mm256_extract_epi64(a0, 0) + _mm256_extract_epi64(a0, 3);
}
#endif

static void bw_fn(int64_t b, int64_t e, void *varg)
{
	struct bw_arg *a = varg;

	for (int64_t i = b; i < e; i++) {
		const uint8_t *p = a->buf + i * a->chunk;
#if defined(__x86_64__)
		if (__builtin_cpu_supports("avx2")) {
			a->sums[i % 64] += bw_sum_avx2(p, a->chunk);
			continue;
		}
#endif
		const uint64_t *q = (const uint64_t *)p;
		uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;

		for (size_t j = 0; j + 4 <= a->chunk / 8; j += 4) {
			s0 += q[j];
			s1 += q[j + 1];
			s2 += q[j + 2];
			s3 += q[j + 3];
		}
		a->sums[i % 64] += (double)(s0 + s1 + s2 + s3);
	}
}

static double measure_bw(struct mm_ctx *ctx)
{
	const size_t size = 1ull << 30;
	uint8_t *buf = xalloc(size);
	struct bw_arg a = { .buf = buf };
	int nth = mm_ctx_threads(ctx);
	double best = 0;

	memset(buf, 1, size);
	a.chunk = size / nth;
	for (int rep = 0; rep < 3; rep++) {
		double t0 = now();

		mm_parallel_for(ctx, nth, bw_fn, &a);
		double t = now() - t0;

		if (size / t > best)
			best = size / t;
	}
	free(buf);
	return best;
}

/* ---- int8 dot peak ---------------------------------------------------- */

static long peak_iters = 20000000L;	/* per thread and measurement */

struct peak_arg {
	int vnni;
	double sink[64];
};

#if defined(__x86_64__)
/*
 * 10 independent vpdpbusd chains on one vector width (pfx: _mm512 or
 * _mm256); lane 0 of their sum is returned so nothing is dropped. The
 * loop body is assembly: written with the intrinsic, GCC merged the
 * chains (equal starts) into one, which timed one chain's latency, and
 * with distinct starts it added two register moves per vpdpbusd.
 */
#define MM_PEAK_DPBUSD(name, tgt, vt, pfx, lane0)				\
__attribute__((target(tgt)))							\
static double name(void)							\
{										\
	const vt a = pfx##_set1_epi8(3), b = pfx##_set1_epi8(5);		\
	vt c0 = pfx##_set1_epi32(0), c1 = c0, c2 = c0, c3 = c0, c4 = c0,	\
	   c5 = c0, c6 = c0, c7 = c0, c8 = c0, c9 = c0;			\
										\
	for (long i = 0; i < peak_iters; i++)					\
		__asm__ volatile("vpdpbusd %11, %10, %0\n\t"			\
				 "vpdpbusd %11, %10, %1\n\t"			\
				 "vpdpbusd %11, %10, %2\n\t"			\
				 "vpdpbusd %11, %10, %3\n\t"			\
				 "vpdpbusd %11, %10, %4\n\t"			\
				 "vpdpbusd %11, %10, %5\n\t"			\
				 "vpdpbusd %11, %10, %6\n\t"			\
				 "vpdpbusd %11, %10, %7\n\t"			\
				 "vpdpbusd %11, %10, %8\n\t"			\
				 "vpdpbusd %11, %10, %9"			\
				 : "+v"(c0), "+v"(c1), "+v"(c2), "+v"(c3),	\
				   "+v"(c4), "+v"(c5), "+v"(c6), "+v"(c7),	\
				   "+v"(c8), "+v"(c9)				\
				 : "v"(a), "v"(b));				\
	c0 = pfx##_add_epi32(pfx##_add_epi32(pfx##_add_epi32(c0, c1),		\
					     pfx##_add_epi32(c2, c3)),		\
			     pfx##_add_epi32(pfx##_add_epi32(c4, c5),		\
					     pfx##_add_epi32(c6, c7)));		\
	c0 = pfx##_add_epi32(c0, pfx##_add_epi32(c8, c9));			\
	return (double)lane0(c0);						\
}

/* zmm: 10 x 64 MACs per iteration */
MM_PEAK_DPBUSD(peak_vnni, "avx512f,avx512bw,avx512vnni", __m512i, _mm512,
	       _mm512_cvtsi512_si32)
/* The same on ymm (the VL encoding of the AVX2 kernels built with VNNI):
 * 10 x 32 MACs per iteration. Zen 4 runs zmm as two halves, so there the
 * two peaks match; Intel cores with two 512-bit FMA ports run zmm at
 * twice the ymm rate. */
MM_PEAK_DPBUSD(peak_vnni_ymm, "avx512f,avx512bw,avx512vl,avx512vnni", __m256i,
	       _mm256, _mm256_cvtsi256_si32)

/* vpmaddubsw + vpmaddwd + vpaddd: 32 u8 x s8 MACs into 8 s32 lanes. */
__attribute__((target("avx2")))
static double peak_avx2(void)
{
	__m256i a = _mm256_set1_epi8(3), b0 = _mm256_set1_epi8(5),
		b1 = _mm256_set1_epi8(6), b2 = _mm256_set1_epi8(7),
		b3 = _mm256_set1_epi8(9);
	const __m256i one = _mm256_set1_epi16(1);
	__m256i c0 = _mm256_setzero_si256(), c1 = c0, c2 = c0, c3 = c0;

	/* 4 independent chains, operands opaque to the compiler each
	 * iteration so nothing is hoisted or merged. */
	for (long i = 0; i < peak_iters; i++) {
		__asm__ volatile("" : "+x"(a), "+x"(b0), "+x"(b1), "+x"(b2), "+x"(b3));
#define PK(c, b) c = _mm256_add_epi32(c, _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), one))
		PK(c0, b0); PK(c1, b1); PK(c2, b2); PK(c3, b3);
		__asm__ volatile("" : "+x"(a), "+x"(b0), "+x"(b1), "+x"(b2), "+x"(b3));
		PK(c0, b1); PK(c1, b2); PK(c2, b3); PK(c3, b0);
#undef PK
	}
	c0 = _mm256_add_epi32(_mm256_add_epi32(c0, c1), _mm256_add_epi32(c2, c3));
	return (double)_mm256_extract_epi32(c0, 0);
}
#endif

static void peak_fn(int64_t b, int64_t e, void *varg)
{
	struct peak_arg *a = varg;

	for (int64_t i = b; i < e; i++) {
#if defined(__x86_64__)
		a->sink[i % 64] += a->vnni == 2 ? peak_vnni_ymm() :
				   a->vnni ? peak_vnni() : peak_avx2();
#endif
	}
}

/* int8 ops/s (2 per MAC) on all threads; 0 if not measurable here.
 * vnni: 0 the AVX2 sequence, 1 vpdpbusd zmm, 2 vpdpbusd ymm. */
static double measure_peak(struct mm_ctx *ctx, int vnni, int reps)
{
#if defined(__x86_64__)
	struct peak_arg a = { .vnni = vnni };
	int nth = mm_ctx_threads(ctx);
	double best = 0;

	if (vnni && !mm_kernels_available("avx512vnni"))
		return 0;
	if (!vnni && !mm_kernels_available("avx2"))
		return 0;
	for (int rep = 0; rep < reps; rep++) {
		double t0 = now();

		mm_parallel_for(ctx, nth, peak_fn, &a);
		double t = now() - t0;
		/* zmm: 10 x 64 MACs per iter; ymm: 10 x 32; avx2: 8 x 32 */
		double macs = (double)peak_iters * nth *
			      (vnni == 1 ? 640 : vnni ? 320 : 256);

		if (2 * macs / t > best)
			best = 2 * macs / t;
	}
	return best;
#else
	(void)ctx;
	(void)vnni;
	(void)reps;
	return 0;
#endif
}

/* ---- weights ---------------------------------------------------------- */

static uint64_t rs = 88172645463325252ull;

static uint64_t rnd(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return rs;
}

/* Random bytes with sane f16 scales in every block (fast, no search). */
static void fill_weights(enum mm_type t, uint8_t *w, size_t rows, size_t rb)
{
	size_t total = rows * rb, bb = mm_type_block_bytes(t);

	for (size_t i = 0; i + 8 <= total; i += 8) {
		uint64_t v = rnd();

		memcpy(w + i, &v, 8);
	}
	for (size_t off = 0; off < total; off += bb) {
		uint16_t d = mm_f32_to_f16(0.001f);

		switch (t) {
		case MM_TYPE_Q8_0: case MM_TYPE_Q4_0: case MM_TYPE_Q5_0:
			memcpy(w + off, &d, 2);
			break;
		case MM_TYPE_Q4_K:
			memcpy(w + off, &d, 2);
			memcpy(w + off + 2, &d, 2);
			break;
		case MM_TYPE_Q6_K:
			memcpy(w + off + 208, &d, 2);
			break;
		default:
			break;
		}
	}
}

/* W for type t: random rows of the stored type, repacked in place for
 * Q4_0_R8, Q5_0_R8, Q8_0_R8 and Q4_K_R8 (the load-time layouts, one
 * matrix of m rows at a time). */
static void make_weights(enum mm_type t, uint8_t *w, size_t copies,
			 int64_t m, int64_t k)
{
	size_t rb = mm_row_bytes(t, k);

	fill_weights(mm_stored_type(t), w, m * copies, rb);
	for (size_t c = 0; t != mm_stored_type(t) && c < copies; c++)
		if (mm_repack(mm_stored_type(t), t, w + c * rb * m, m, k)) {
			fprintf(stderr, "kbench: cannot repack\n");
			exit(1);
		}
}

/* layout rows only where the kernel set has that layout */
static int has_layout(const struct mm_ctx *ctx, enum mm_type t)
{
	return t == mm_stored_type(t) ||
	       mm_repack_type(ctx, mm_stored_type(t), 64, 256) == t;
}

static int warm_only;	/* -w: one W copy (cache-warm; kernel compute rate) */

/*
 * Decode: W copies (> 256 MiB in all) are read in turn, so weights come
 * from memory as in decode. Each round times one pass of the streaming
 * read over those same bytes and one pass of matvecs over them; the bar
 * ratio is best matvec pass / best read pass of the same rounds, so a
 * neighbour's load on this shared machine moves both sides.
 */
static double bench_matvec(struct mm_ctx *ctx, enum mm_type t, int64_t m,
			   int64_t k, double *bytes_out, double *bw_out,
			   double *cr_out)
{
	size_t rb = mm_row_bytes(t, k), wbytes = rb * m;
	size_t copies = warm_only ? 1 : (256u << 20) / wbytes + 2;
	uint8_t *w = xalloc(wbytes * copies);
	float *x = malloc(k * 4), *y = malloc(m * 4);
	int passes = warm_only ? 64 : 1;
	double best_mv = 1e30, best_bw = 1e30, best_cr = 1e30;
	struct bw_arg a = { .buf = w }, ca = { 0 };
	int nth = mm_ctx_threads(ctx);

	make_weights(t, w, copies, m, k);
	for (int64_t i = 0; i < k; i++)
		x[i] = (float)(rnd() % 2001) / 1000.0f - 1.0f;
	for (size_t c = 0; c < copies; c++)	/* warm up, touch all */
		mm_matvec(ctx, t, w + c * wbytes, x, y, m, k);
	a.chunk = (wbytes * copies / nth) & ~(size_t)127;
	/* per-call read: each W copy read as one job split among the
	 * threads, as a matvec call is (bases 128-byte aligned down) */
	ca.chunk = (wbytes / nth) & ~(size_t)127;
	for (int round = 0; round < 7; round++) {
		double t0 = now();

		for (int p = 0; p < passes; p++)
			mm_parallel_for(ctx, nth, bw_fn, &a);
		double t1 = now();

		for (int p = 0; p < passes; p++)
			for (size_t c = 0; c < copies; c++)
				mm_matvec(ctx, t, w + c * wbytes, x, y, m, k);
		double t2 = now();

		for (int p = 0; p < passes; p++)
			for (size_t c = 0; c < copies; c++) {
				ca.buf = (const uint8_t *)((uintptr_t)(w + c * wbytes) &
							   ~(uintptr_t)127);
				mm_parallel_for(ctx, nth, bw_fn, &ca);
			}
		double t3 = now();

		best_bw = t1 - t0 < best_bw ? t1 - t0 : best_bw;
		best_mv = t2 - t1 < best_mv ? t2 - t1 : best_mv;
		best_cr = t3 - t2 < best_cr ? t3 - t2 : best_cr;
	}
	*bytes_out = (double)wbytes;
	*bw_out = (double)a.chunk * nth * passes / best_bw;
	*cr_out = (double)ca.chunk * nth * copies * passes / best_cr;
	free(w);
	free(x);
	free(y);
	return (double)wbytes * copies * passes / best_mv;
}

/*
 * Prefill: each of 7 rounds times a short int8 peak probe (the same one
 * as the limit) and one matmul; the bar ratio is best matmul / best probe
 * of the same rounds, so a neighbour's load moves both sides.
 */
static double bench_matmul(struct mm_ctx *ctx, enum mm_type t, int64_t m,
			   int64_t k, int64_t n, int vnni, double *pk_out)
{
	size_t rb = mm_row_bytes(t, k);
	uint8_t *w = xalloc(rb * m);
	float *X = malloc(sizeof(float) * n * k), *Y = malloc(sizeof(float) * n * m);
	double best = 1e30, pk = 0;
	long saved = peak_iters;

	make_weights(t, w, 1, m, k);
	for (int64_t i = 0; i < n * k; i++)
		X[i] = (float)(rnd() % 2001) / 1000.0f - 1.0f;
	mm_matmul(ctx, t, w, X, Y, m, k, n);
	peak_iters = 2000000L;
	for (int rep = 0; rep < 7; rep++) {
		double p = measure_peak(ctx, vnni, 1);
		double t0 = now();

		mm_matmul(ctx, t, w, X, Y, m, k, n);
		double dt = now() - t0;

		if (dt < best)
			best = dt;
		if (p > pk)
			pk = p;
	}
	peak_iters = saved;
	*pk_out = pk;
	free(w);
	free(X);
	free(Y);
	return 2.0 * m * k * n / best;
}

int main(int argc, char **argv)
{
	struct mm_ctx *ctx;
	int nth = 0, opt;
	const char *filt = NULL;
	char label[128];

	while ((opt = getopt(argc, argv, "t:f:w")) != -1) {
		if (opt == 't') {
			nth = atoi(optarg);
		} else if (opt == 'w') {
			warm_only = 1;
		} else if (opt == 'f') {
			filt = optarg;
		} else {
			fprintf(stderr, "usage: kbench [-t threads] [-f substring]\n");
			return 2;
		}
	}
	if (mm_ctx_create(nth, &ctx)) {
		fprintf(stderr, "kbench: cannot create context (MMHAL_KERNELS?)\n");
		return 1;
	}
	printf("kbench: kernels %s, %d threads\n", mm_ctx_kernels(ctx),
	       mm_ctx_threads(ctx));

	double bw = measure_bw(ctx);
	double pk_vnni = measure_peak(ctx, 1, 2);
	double pk_ymm = measure_peak(ctx, 2, 2);
	double pk_avx2 = measure_peak(ctx, 0, 2);
	const char *pk_name = pk_vnni > 0 ? "vpdpbusd zmm" :
			      "vpmaddubsw+vpmaddwd ymm (no VNNI on this CPU)";

	printf("\nlimits (measured now)\n");
	printf("  streaming read bandwidth, 1 GiB, all threads: %8.2f GB/s\n", bw / 1e9);
	if (pk_vnni > 0)
		printf("  int8 peak vpdpbusd zmm:                       %8.1f Gop/s\n", pk_vnni / 1e9);
	if (pk_ymm > 0)
		printf("  int8 peak vpdpbusd ymm:                       %8.1f Gop/s\n", pk_ymm / 1e9);
	else
		printf("  int8 peak vpdpbusd:                           n/a (CPU lacks AVX-512 VNNI)\n");
	if (pk_avx2 > 0)
		printf("  int8 peak vpmaddubsw+vpmaddwd ymm:            %8.1f Gop/s\n", pk_avx2 / 1e9);

	static const struct { enum mm_type t; int64_t m, k; const char *what; } mv[] = {
		{ MM_TYPE_Q8_0, 4096, 4096, "attn 4096x4096" },
		{ MM_TYPE_Q8_0, 14336, 4096, "ffn_up 14336x4096" },
		{ MM_TYPE_Q8_0, 4096, 14336, "ffn_down 4096x14336" },
		{ MM_TYPE_Q8_0, 1536, 576, "small ffn_up 1536x576" },
		{ MM_TYPE_Q8_0, 576, 1536, "small ffn_down 576x1536" },
		{ MM_TYPE_Q8_0_R8, 4096, 4096, "attn 4096x4096" },
		{ MM_TYPE_Q8_0_R8, 14336, 4096, "ffn_up 14336x4096" },
		{ MM_TYPE_Q8_0_R8, 4096, 14336, "ffn_down 4096x14336" },
		{ MM_TYPE_Q8_0_R8, 1536, 576, "small ffn_up 1536x576" },
		{ MM_TYPE_Q8_0_R8, 576, 1536, "small ffn_down 576x1536" },
		{ MM_TYPE_Q4_0, 4096, 4096, "attn 4096x4096" },
		{ MM_TYPE_Q4_0, 14336, 4096, "ffn_up 14336x4096" },
		{ MM_TYPE_Q4_0, 4096, 14336, "ffn_down 4096x14336" },
		{ MM_TYPE_Q4_0, 1536, 576, "small ffn_up 1536x576" },
		{ MM_TYPE_Q4_0, 576, 1536, "small ffn_down 576x1536" },
		{ MM_TYPE_Q4_0_R8, 4096, 4096, "attn 4096x4096" },
		{ MM_TYPE_Q4_0_R8, 14336, 4096, "ffn_up 14336x4096" },
		{ MM_TYPE_Q4_0_R8, 4096, 14336, "ffn_down 4096x14336" },
		{ MM_TYPE_Q4_0_R8, 1536, 576, "small ffn_up 1536x576" },
		{ MM_TYPE_Q4_0_R8, 576, 1536, "small ffn_down 576x1536" },
		{ MM_TYPE_Q5_0, 4096, 4096, "attn 4096x4096" },
		{ MM_TYPE_Q5_0, 1536, 576, "small ffn_up 1536x576" },
		{ MM_TYPE_Q5_0_R8, 4096, 4096, "attn 4096x4096" },
		{ MM_TYPE_Q5_0_R8, 1536, 576, "small ffn_up 1536x576" },
		{ MM_TYPE_Q5_0_R8, 576, 1536, "small ffn_down 576x1536" },
		{ MM_TYPE_Q4_K, 4096, 4096, "attn 4096x4096" },
		{ MM_TYPE_Q4_K, 14336, 4096, "ffn_up 14336x4096" },
		{ MM_TYPE_Q4_K, 1536, 768, "small 1536x768" },
		{ MM_TYPE_Q4_K_R8, 4096, 4096, "attn 4096x4096" },
		{ MM_TYPE_Q4_K_R8, 14336, 4096, "ffn_up 14336x4096" },
		{ MM_TYPE_Q4_K_R8, 1536, 768, "small 1536x768" },
		{ MM_TYPE_Q6_K, 4096, 4096, "attn 4096x4096" },
		{ MM_TYPE_Q6_K, 14336, 4096, "ffn_up 14336x4096" },
		{ MM_TYPE_Q6_K, 576, 1536, "small ffn_down 576x1536" },
	};
	printf("\ndecode matvec (y = W.x, %s weights)    W.x GB/s  read GB/s  of read  goal   per-call read GB/s, of it\n",
	       warm_only ? "WARM (-w)" : "cold");
	for (size_t i = 0; i < sizeof(mv) / sizeof(mv[0]); i++) {
		snprintf(label, sizeof(label), "%s %s", mm_type_name(mv[i].t), mv[i].what);
		if ((filt && !strstr(label, filt)) || !has_layout(ctx, mv[i].t))
			continue;
		double bytes, rbw, crbw, r = bench_matvec(ctx, mv[i].t, mv[i].m,
							  mv[i].k, &bytes, &rbw,
							  &crbw);

		printf("  %-7s %-26s %7.2f MB %7.2f %7.2f  %5.1f%%  %5s  %7.2f  %5.1f%%\n",
		       mm_type_name(mv[i].t), mv[i].what, bytes / 1e6, r / 1e9,
		       rbw / 1e9, 100 * r / rbw,
		       mm_stored_type(mv[i].t) == MM_TYPE_Q8_0 ||
		       mm_stored_type(mv[i].t) == MM_TYPE_Q4_0 ? ">=90%" : "",
		       crbw / 1e9, 100 * r / crbw);
		fflush(stdout);
	}

	static const struct { enum mm_type t; int64_t m, k, n; } mmv[] = {
		{ MM_TYPE_Q8_0, 4096, 4096, 64 },
		{ MM_TYPE_Q8_0, 4096, 4096, 128 },
		{ MM_TYPE_Q8_0, 4096, 4096, 256 },
		{ MM_TYPE_Q8_0, 4096, 4096, 512 },
		{ MM_TYPE_Q8_0, 1536, 576, 256 },
		{ MM_TYPE_Q8_0_R8, 4096, 4096, 256 },
		{ MM_TYPE_Q4_0, 4096, 4096, 256 },
		{ MM_TYPE_Q4_0_R8, 4096, 4096, 256 },
		{ MM_TYPE_Q5_0, 4096, 4096, 256 },
		{ MM_TYPE_Q5_0_R8, 4096, 4096, 256 },
		{ MM_TYPE_Q4_K, 4096, 4096, 256 },
		{ MM_TYPE_Q4_K_R8, 4096, 4096, 256 },
		{ MM_TYPE_Q6_K, 4096, 4096, 256 },
	};
	printf("\nprefill matmul (Y = X.W^T)  peak: %s\n", pk_name);
	printf("                                 Gop/s  peak Gop/s  of peak\n");
	for (size_t i = 0; i < sizeof(mmv) / sizeof(mmv[0]); i++) {
		snprintf(label, sizeof(label), "%s m=%lld k=%lld n=%lld",
			 mm_type_name(mmv[i].t), (long long)mmv[i].m,
			 (long long)mmv[i].k, (long long)mmv[i].n);
		if ((filt && !strstr(label, filt)) || !has_layout(ctx, mmv[i].t))
			continue;
		double rpk, r = bench_matmul(ctx, mmv[i].t, mmv[i].m, mmv[i].k,
					     mmv[i].n, pk_vnni > 0, &rpk);

		printf("  %-7s m=%-5lld k=%-5lld n=%-4lld   %8.1f %8.1f   %5.1f%%%s\n",
		       mm_type_name(mmv[i].t), (long long)mmv[i].m, (long long)mmv[i].k,
		       (long long)mmv[i].n, r / 1e9, rpk / 1e9, 100 * r / rpk,
		       mmv[i].t == MM_TYPE_Q8_0 && mmv[i].m == 4096 ? "   goal >=50%" : "");
	}
	mm_ctx_destroy(ctx);
	return 0;
}

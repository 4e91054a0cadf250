// SPDX-License-Identifier: MIT
/*
 * vision_bench.c - the vision encoder against the int8 peak measured in
 * the same run. For each mmproj given (SigLIP-B/16 at 224 and 512 px,
 * Q8_0, as `make vision-bench` generates them):
 *  - preprocess: a 640x480 NV12 frame (the camera's format) to the
 *    overview image, seconds per image (best of the rounds);
 *  - encode: mm_vision_encode() of that image, seconds per image (best);
 *  - GEMM throughput: 2 x the multiply-adds of every weight matmul (patch
 *    embedding, Q/K/V/O, FFN up/down, projector) per encode second, as a
 *    fraction of the int8 dot-product peak (vpdpbusd zmm with the
 *    AVX-512 VNNI kernel set, which the prefill GEMM uses; else the AVX2
 *    vpmaddubsw + vpmaddwd + vpaddd sequence), on all threads. Each round
 *    times a short peak probe and one encode; the ratio is best encode
 *    over best probe of the same rounds (the machines are shared).
 *    The attention products (Q.K^T, P.V, f32) are counted apart;
 *  - float weights (F32, F16, BF16; `make vision-bench` adds the 224 px
 *    tower at F16 and BF16): each round also encodes with the AVX2 6x16
 *    tile (MMHAL_ENC_GEMM=avx2) and probes the f32 FMA zmm peak (12
 *    vfmadd231ps chains), with the AVX-512 kernel set; the weight GEMMs'
 *    f32 flop/s as a fraction of that peak, both tiles; and a second copy
 *    repacked to Q8_0 at load (mm_mmproj_repack()): its encode time and
 *    the cosine of its embeddings to the float path's;
 *  - where the time goes: each weight matmul shape timed alone with
 *    mm_matmul() on layer 0's weights (float weights: mm_enc_matmul(), as
 *    the encoder runs them, against the FMA peak; same n, threads and
 *    kernels), times its count per image; the rest of the encode is
 *    attention, norms, activations, residuals and pixel shuffle.
 *
 *   vision_bench [-t threads] [-r rounds] MMPROJ...
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "encoder.h"
#include "imgproc.h"
#include "mmproj.h"
#include "quant.h"
#include "vision.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- int8 peak ---------------------------------------------------------- */

static long probe_iters = 2000000L;

#if defined(__x86_64__)
/* 10 independent vpdpbusd zmm chains (64 MACs each) per iteration; the
 * body is assembly so the compiler cannot merge the chains. */
__attribute__((target("avx512f,avx512bw,avx512vnni")))
static double peak_zmm(long iters)
{
	const __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(5);
	__m512i c0 = _mm512_setzero_si512(), c1 = c0, c2 = c0, c3 = c0, c4 = c0,
		c5 = c0, c6 = c0, c7 = c0, c8 = c0, c9 = c0;

	for (long i = 0; i < iters; i++)
		__asm__ volatile("vpdpbusd %11, %10, %0\n\t"
				 "vpdpbusd %11, %10, %1\n\t"
				 "vpdpbusd %11, %10, %2\n\t"
				 "vpdpbusd %11, %10, %3\n\t"
				 "vpdpbusd %11, %10, %4\n\t"
				 "vpdpbusd %11, %10, %5\n\t"
				 "vpdpbusd %11, %10, %6\n\t"
				 "vpdpbusd %11, %10, %7\n\t"
				 "vpdpbusd %11, %10, %8\n\t"
				 "vpdpbusd %11, %10, %9"
				 : "+v"(c0), "+v"(c1), "+v"(c2), "+v"(c3),
				   "+v"(c4), "+v"(c5), "+v"(c6), "+v"(c7),
				   "+v"(c8), "+v"(c9)
				 : "v"(a), "v"(b));
	c0 = _mm512_add_epi32(_mm512_add_epi32(_mm512_add_epi32(c0, c1),
					       _mm512_add_epi32(c2, c3)),
			      _mm512_add_epi32(_mm512_add_epi32(c4, c5),
					       _mm512_add_epi32(c6, c7)));
	c0 = _mm512_add_epi32(c0, _mm512_add_epi32(c8, c9));
	return (double)_mm512_cvtsi512_si32(c0);
}

/* vpmaddubsw + vpmaddwd + vpaddd, 8 per iteration (32 MACs each) into 4
 * chains, operands opaque to the compiler. */
__attribute__((target("avx2")))
static double peak_avx2(long iters)
{
	__m256i a = _mm256_set1_epi8(3), b0 = _mm256_set1_epi8(5),
		b1 = _mm256_set1_epi8(6), b2 = _mm256_set1_epi8(7),
		b3 = _mm256_set1_epi8(9);
	const __m256i one = _mm256_set1_epi16(1);
	__m256i c0 = _mm256_setzero_si256(), c1 = c0, c2 = c0, c3 = c0;

	for (long i = 0; i < iters; i++) {
		__asm__ volatile("" : "+x"(a), "+x"(b0), "+x"(b1), "+x"(b2),
				 "+x"(b3));
#define VB_PK(c, b) c = _mm256_add_epi32(c, _mm256_madd_epi16(		\
				_mm256_maddubs_epi16(a, b), one))
		VB_PK(c0, b0); VB_PK(c1, b1); VB_PK(c2, b2); VB_PK(c3, b3);
		__asm__ volatile("" : "+x"(a), "+x"(b0), "+x"(b1), "+x"(b2),
				 "+x"(b3));
		VB_PK(c0, b1); VB_PK(c1, b2); VB_PK(c2, b3); VB_PK(c3, b0);
#undef VB_PK
	}
	c0 = _mm256_add_epi32(_mm256_add_epi32(c0, c1), _mm256_add_epi32(c2, c3));
	return (double)_mm256_extract_epi32(c0, 0);
}

/* 12 independent vfmadd231ps zmm chains (16 MACs each) per iteration,
 * assembly so the compiler keeps them apart: the f32 FMA peak that the
 * float-weight GEMM (encoder.c, AVX-512 tile) runs against */
__attribute__((target("avx512f")))
static double peak_fma_zmm(long iters)
{
	const __m512 a = _mm512_set1_ps(1.0f), b = _mm512_set1_ps(1e-9f);
	__m512 c0 = _mm512_setzero_ps(), c1 = c0, c2 = c0, c3 = c0, c4 = c0,
	       c5 = c0, c6 = c0, c7 = c0, c8 = c0, c9 = c0, c10 = c0, c11 = c0;

	for (long i = 0; i < iters; i++)
		__asm__ volatile("vfmadd231ps %13, %12, %0\n\t"
				 "vfmadd231ps %13, %12, %1\n\t"
				 "vfmadd231ps %13, %12, %2\n\t"
				 "vfmadd231ps %13, %12, %3\n\t"
				 "vfmadd231ps %13, %12, %4\n\t"
				 "vfmadd231ps %13, %12, %5\n\t"
				 "vfmadd231ps %13, %12, %6\n\t"
				 "vfmadd231ps %13, %12, %7\n\t"
				 "vfmadd231ps %13, %12, %8\n\t"
				 "vfmadd231ps %13, %12, %9\n\t"
				 "vfmadd231ps %13, %12, %10\n\t"
				 "vfmadd231ps %13, %12, %11"
				 : "+v"(c0), "+v"(c1), "+v"(c2), "+v"(c3),
				   "+v"(c4), "+v"(c5), "+v"(c6), "+v"(c7),
				   "+v"(c8), "+v"(c9), "+v"(c10), "+v"(c11)
				 : "v"(a), "v"(b));
	c0 = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(c0, c1), _mm512_add_ps(c2, c3)),
			   _mm512_add_ps(_mm512_add_ps(c4, c5), _mm512_add_ps(c6, c7)));
	c0 = _mm512_add_ps(c0, _mm512_add_ps(_mm512_add_ps(c8, c9),
					     _mm512_add_ps(c10, c11)));
	return (double)_mm512_cvtss_f32(c0);
}
#endif

struct probe {
	int zmm;	/* 1: vpdpbusd zmm; 0: the AVX2 int8 sequence; 2: FMA zmm */
	double sink[64];
};

static void probe_fn(int64_t b, int64_t e, void *varg)
{
	struct probe *p = varg;

	for (int64_t i = b; i < e; i++) {
#if defined(__x86_64__)
		p->sink[i % 64] += p->zmm == 2 ? peak_fma_zmm(probe_iters) :
				   p->zmm ? peak_zmm(probe_iters) :
				   peak_avx2(probe_iters);
#endif
	}
}

/* int8 ops/s (zmm 0, 1), f32 flop/s (zmm 2), 2 per MAC, on all of ctx's
 * threads; 0 if not measurable */
static double probe_peak(struct mm_ctx *ctx, int zmm)
{
#if defined(__x86_64__)
	struct probe p = { .zmm = zmm };
	int nth = mm_ctx_threads(ctx);
	double t0 = now(), t;

	mm_parallel_for(ctx, nth, probe_fn, &p);
	t = now() - t0;
	return 2.0 * (double)probe_iters * nth *
	       (zmm == 2 ? 192 : zmm ? 640 : 256) / t;
#else
	(void)ctx;
	(void)zmm;
	return 0;
#endif
}

/* ---- the model's matmuls ------------------------------------------------ */

struct gemm {
	const char *what;
	const struct mm_mmproj_w *w;
	int64_t n;		/* rows of X */
	double count;		/* per image */
};

static int64_t w_in(const struct mm_mmproj_w *w)
{
	return w->ne[0] * w->ne[1] * w->ne[2] * w->ne[3] /
	       w->ne[w->n_dims - 1];
}

static int64_t w_out(const struct mm_mmproj_w *w)
{
	return w->ne[w->n_dims - 1];
}

/* the weight matmuls of one image; returns how many */
static int list_gemms(const struct mm_mmproj_vision *v, struct gemm *g)
{
	const struct mm_mmproj_block *b = &v->blk[0];
	int64_t n = v->n_pos;
	int k = 0;

	g[k++] = (struct gemm){ "patch embedding", &v->patch_w, v->n_patches, 1 };
	g[k++] = (struct gemm){ "attn q/k/v/o", &b->q_w, n, 4.0 * v->n_run };
	g[k++] = (struct gemm){ "ffn up", &b->up_w, n, v->n_run };
	g[k++] = (struct gemm){ "ffn down", &b->down_w, n, v->n_run };
	if (v->proj == MM_MMPROJ_IDEFICS3) {
		g[k++] = (struct gemm){ "projector fc", &v->fc, v->n_tokens, 1 };
	} else {
		g[k++] = (struct gemm){ "projector mm.0", &v->mm0_w, v->n_tokens, 1 };
		g[k++] = (struct gemm){ "projector mm.2", &v->mm2_w, v->n_tokens, 1 };
	}
	return k;
}

static double macs_of(const struct gemm *g)
{
	return (double)g->n * (double)w_in(g->w) * (double)w_out(g->w) *
	       g->count;
}

/* best seconds of one mm_matmul of g's shape over rounds; float weights
 * (enc non-NULL) by mm_enc_matmul(), as the encoder runs them */
static double time_gemm(struct mm_ctx *ctx, struct mm_enc *enc,
			const struct gemm *g, int rounds)
{
	int64_t k = w_in(g->w), m = w_out(g->w);
	float *x = malloc(sizeof(float) * (size_t)(g->n * k));
	float *y = malloc(sizeof(float) * (size_t)(g->n * m));
	double best = 1e30;

	if (!x || !y) {
		free(x);
		free(y);
		return 0;
	}
	for (int64_t i = 0; i < g->n * k; i++)
		x[i] = (float)((i * 7919) % 2001) / 1000.0f - 1.0f;
	for (int r = -1; r < rounds; r++) {
		double t0 = now();

		if (enc)
			mm_enc_matmul(enc, (enum mm_type)g->w->type, g->w->data,
				      x, y, m, k, g->n);
		else
			mm_matmul(ctx, (enum mm_type)g->w->type, g->w->data, x,
				  y, m, k, g->n);
		t0 = now() - t0;
		if (r >= 0 && t0 < best)
			best = t0;
	}
	free(x);
	free(y);
	return best;
}

/* ---- one mmproj --------------------------------------------------------- */

static int bench(const char *path, struct mm_ctx *ctx, int nth, int rounds,
		 int zmm)
{
	const struct mm_mmproj_vision *v;
	struct mm_mmproj *p = NULL;
	struct gemm g[8];
	uint32_t fw = 640, fh = 480;
	uint8_t *y = NULL, *uv = NULL;
	float *pix = NULL, *out = NULL;
	double t_pre = 1e30, t_enc = 1e30, pk = 0, macs = 0, att, t_g = 0;
	double t_old = 1e30, pkf = 0;	/* float weights: AVX2 tile, FMA peak */
	double t_q8 = 1e30, cosq = 0;	/* and repacked to Q8_0 */
	struct mm_mmproj *pq = NULL;
	float *outq = NULL;
	struct mm_enc enc, *encp = NULL;
	int fw16 = 0, fwt = 0;
	size_t npix, nout;
	char err[256] = "";
	int ng, ret;

	ret = mm_mmproj_load(path, &p, err, sizeof(err));
	if (ret || !(v = mm_mmproj_vision(p))) {
		fprintf(stderr, "vision_bench: %s: %s\n", path,
			ret ? err : "no vision encoder");
		mm_mmproj_free(p);
		return 1;
	}
	npix = mm_vision_n_pixels(p);
	nout = mm_vision_n_tokens(p) * mm_vision_n_embd_out(p);
	y = malloc((size_t)fw * fh);
	uv = malloc((size_t)fw * fh / 2);
	pix = malloc(sizeof(float) * npix);
	out = malloc(sizeof(float) * nout);
	if (!y || !uv || !pix || !out) {
		ret = -ENOMEM;
		goto done;
	}
	for (size_t i = 0; i < (size_t)fw * fh; i++)
		y[i] = (uint8_t)(16 + (i * 2654435761u >> 24) % 220);
	for (size_t i = 0; i < (size_t)fw * fh / 2; i++)
		uv[i] = (uint8_t)(64 + (i * 40503u >> 8) % 128);
	{
		struct mm_image im = {
			.format = MM_IMAGE_NV12, .width = fw, .height = fh,
			.plane = { y, uv }, .stride = { fw, fw },
		};

		for (int r = 0; r < rounds; r++) {
			double t0 = now();

			ret = mm_image_preprocess(p, &im, pix, npix, err,
						  sizeof(err));
			t0 = now() - t0;
			if (ret)
				goto done;
			if (t0 < t_pre)
				t_pre = t0;
		}
	}
	/* float weights with the AVX-512 kernel set: each round also times
	 * the encode with the AVX2 tile (MMHAL_ENC_GEMM=avx2, read when the
	 * encode starts) and probes the f32 FMA zmm peak */
	{
		const uint32_t wt = v->blk[0].q_w.type;

		fwt = wt == MM_TYPE_F32 || wt == MM_TYPE_F16 ||
		     wt == MM_TYPE_BF16;
		fw16 = zmm && fwt;
	}
	/* float weights: a second copy repacked to Q8_0 at load */
	if (fwt) {
		outq = malloc(sizeof(float) * nout);
		if (!outq || mm_mmproj_load(path, &pq, err, sizeof(err)) ||
		    mm_mmproj_repack(pq, MM_TYPE_Q8_0, NULL, err, sizeof(err))) {
			ret = outq ? -EINVAL : -ENOMEM;
			goto done;
		}
	}
	/* warm-up, then rounds of (probe, encode) */
	ret = mm_vision_encode(p, pix, npix, out, nout, nth, err, sizeof(err));
	for (int r = 0; !ret && r < rounds; r++) {
		double pr = probe_peak(ctx, zmm), t0;

		if (pr > pk)
			pk = pr;
		t0 = now();
		ret = mm_vision_encode(p, pix, npix, out, nout, nth, err,
				       sizeof(err));
		t0 = now() - t0;
		if (t0 < t_enc)
			t_enc = t0;
		if (!ret && pq) {
			t0 = now();
			ret = mm_vision_encode(pq, pix, npix, outq, nout, nth,
					       err, sizeof(err));
			t0 = now() - t0;
			if (t0 < t_q8)
				t_q8 = t0;
		}
		if (ret || !fw16)
			continue;
		pr = probe_peak(ctx, 2);
		if (pr > pkf)
			pkf = pr;
		setenv("MMHAL_ENC_GEMM", "avx2", 1);
		t0 = now();
		ret = mm_vision_encode(p, pix, npix, out, nout, nth, err,
				       sizeof(err));
		t0 = now() - t0;
		unsetenv("MMHAL_ENC_GEMM");
		if (t0 < t_old)
			t_old = t0;
	}
	if (ret)
		goto done;
	ng = list_gemms(v, g);
	for (int i = 0; i < ng; i++)
		macs += macs_of(&g[i]);
	/* Q.K^T and P.V over all heads: 2 x n^2 x E per layer */
	att = 2.0 * (double)v->n_pos * v->n_pos * v->n_embd * v->n_run;
	printf("\n%s: %s %ux%u px, patch %u, %u wide, %u blocks, %u positions, %u tokens out, weights %s\n",
	       path, mm_mmproj_type_name(v->proj), v->image_size,
	       v->image_size, v->patch_size, v->n_embd, v->n_layer, v->n_pos,
	       v->n_tokens, mm_type_name((enum mm_type)v->blk[0].q_w.type));
	printf("  preprocess NV12 %ux%u -> %u px: %9.5f s/image\n", fw, fh,
	       v->image_size, t_pre);
	printf("  encode:                          %9.4f s/image (best of %d)\n",
	       t_enc, rounds);
	printf("  weight GEMMs: %.2f GMAC/image = %.1f Gop/s int8 = %.3f of the peak (%.1f Gop/s, same rounds); attention %.2f GMAC f32 apart\n",
	       macs / 1e9, 2 * macs / t_enc / 1e9,
	       pk > 0 ? 2 * macs / t_enc / pk : 0, pk / 1e9, att / 1e9);
	if (pq) {
		double dot = 0, na = 0, nb = 0;

		for (size_t i = 0; i < nout; i++) {
			dot += (double)out[i] * outq[i];
			na += (double)out[i] * out[i];
			nb += (double)outq[i] * outq[i];
		}
		cosq = na > 0 && nb > 0 ? dot / sqrt(na * nb) : 0;
		printf("  repacked to Q8_0 at load (mm_mmproj_repack): %9.4f s/image, %.2fx the %s encode (same rounds); embeddings' cosine to the %s path %.6f\n",
		       t_q8, t_enc / t_q8,
		       mm_type_name((enum mm_type)v->blk[0].q_w.type),
		       mm_type_name((enum mm_type)v->blk[0].q_w.type), cosq);
	}
	if (fw16) {
		printf("  encode with the AVX2 6x16 tile (MMHAL_ENC_GEMM=avx2): %9.4f s/image; AVX-512 8x48 tile %.2fx faster (same rounds)\n",
		       t_old, t_old / t_enc);
		printf("  weight GEMMs in f32: %.1f Gflop/s = %.3f of the f32 FMA zmm peak (%.1f Gflop/s, same rounds); AVX2 tile %.3f\n",
		       2 * macs / t_enc / 1e9, 2 * macs / t_enc / pkf,
		       pkf / 1e9, 2 * macs / t_old / pkf);
		if (!mm_enc_init(&enc, nth, 16, "vision_bench", err,
				 sizeof(err)))
			encp = &enc;
	}
	printf("  all matmuls (weights + attention): %.1f Gop/s\n",
	       2 * (macs + att) / t_enc / 1e9);
	printf("  where the time goes (each shape alone with %s, x its count):\n",
	       encp ? "mm_enc_matmul" : "mm_matmul");
	for (int i = 0; i < ng; i++) {
		double t = time_gemm(ctx, encp, &g[i], rounds) * g[i].count;
		double mc = macs_of(&g[i]);
		double pp = encp ? pkf : pk;

		t_g += t;
		printf("    %-16s n %5lld k %5lld m %5lld x%4.0f: %8.4f s (%5.1f%%), %.3f of peak\n",
		       g[i].what, (long long)g[i].n, (long long)w_in(g[i].w),
		       (long long)w_out(g[i].w), g[i].count, t,
		       100 * t / t_enc, pp > 0 && t > 0 ? 2 * mc / t / pp : 0);
	}
	printf("    %-16s %44s %8.4f s (%5.1f%%): attention, norms, activations, residuals\n",
	       "rest", "", t_enc - t_g, 100 * (t_enc - t_g) / t_enc);
	if (encp)
		mm_enc_fini(encp);
done:
	if (ret)
		fprintf(stderr, "vision_bench: %s: %s\n", path,
			ret == -ENOMEM ? "out of memory" : err);
	free(y);
	free(uv);
	free(pix);
	free(out);
	free(outq);
	mm_mmproj_free(pq);
	mm_mmproj_free(p);
	return ret ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct mm_ctx *ctx;
	int nth = 0, rounds = 3, opt, rc = 0, zmm;

	while ((opt = getopt(argc, argv, "t:r:")) != -1) {
		if (opt == 't') {
			nth = atoi(optarg);
		} else if (opt == 'r') {
			rounds = atoi(optarg);
		} else {
			fprintf(stderr, "usage: vision_bench [-t threads] [-r rounds] MMPROJ...\n");
			return 2;
		}
	}
	if (optind >= argc || rounds < 1) {
		fprintf(stderr, "usage: vision_bench [-t threads] [-r rounds] MMPROJ...\n");
		return 2;
	}
	if (mm_ctx_create(nth, &ctx)) {
		fprintf(stderr, "vision_bench: cannot create context\n");
		return 1;
	}
	nth = mm_ctx_threads(ctx);
	zmm = !strcmp(mm_ctx_kernels(ctx), "avx512vnni");
#if defined(__x86_64__)
	printf("vision_bench: kernels %s, %d threads; peak probe: %s\n",
	       mm_ctx_kernels(ctx), nth,
	       zmm ? "vpdpbusd zmm (the prefill GEMM's instruction)" :
	       "vpmaddubsw+vpmaddwd+vpaddd ymm");
#else
	printf("vision_bench: kernels %s, %d threads; no int8 peak probe on this architecture\n",
	       mm_ctx_kernels(ctx), nth);
#endif
	for (int i = optind; i < argc; i++)
		rc |= bench(argv[i], ctx, nth, rounds, zmm);
	mm_ctx_destroy(ctx);
	return rc;
}

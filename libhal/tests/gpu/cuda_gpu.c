// SPDX-License-Identifier: MIT
/*
 * cuda_gpu.c - the CUDA back end on a machine with an NVIDIA GPU: each
 * kernel against the CPU back end on random data, the decoder with
 * backend cuda against backend cpu, then the bench (scripts/gpu-check.sh
 * runs it). Exits 77 with a message when no device is usable.
 *
 *   cuda_gpu [-m MODEL.gguf] [-P PEAK_TOPS] [-B PEAK_GBS] [-n]
 *
 * Tolerances (the GPU and the CPU compute the same integer block sums;
 * they differ in f32 summation order, in a rare activation rounding tie
 * and in libm's cosf/sinf/expf):
 *   matrix products  |gpu - cpu| <= 1e-4 * max|cpu| of the product + 1e-6
 *   rmsnorm, softmax relative 1e-5
 *   rope             absolute 1e-4 (angles up to pos * 1 rad)
 *   attention        |gpu - ref| <= 1e-4 * max|ref| (double reference)
 *   decoder logits   |cuda - cpu| <= 2e-2 of the logits' range
 *   f16/f32 gemm     as the matrix products (f32 fmaf chains in another
 *                    order than the CPU's; k 1000 and 1152, edges of the
 *                    64 x 64 tiles)
 *   encoders         mmproj backend cuda vs cpu (tiny vision + audio,
 *                    F16 and Q8_0 weights): image and audio embeddings
 *                    |cuda - cpu| <= 1e-3 (F16) / 2e-2 (Q8_0) of max|cpu|;
 *                    the image also from a mapping declared with
 *                    mmhal_mmproj_map_frames() (the device preprocessing
 *                    and patch embedding), same limit
 *   preprocessing    mm_pre_overview on random NV12/GREY/RGB24 frames
 *                    read through a registered mapping vs imgproc.c's
 *                    mm_image_preprocess_tile(-1) (tiny: idefics3
 *                    bilinear overview, tiny-mlp: LLaVA pad to square,
 *                    and frames already S x S): the same integer
 *                    conversion and float expressions, so a value may
 *                    differ only where the host compiler contracted a
 *                    lerp into an fma (arm64): at most one 8-bit level
 *                    (1/255/std + 1e-6) on at most 0.5% of the values;
 *                    on x86-64 0 values differ
 *   im2col           mm_im2col vs the CPU's unfold (vision.c's loop) of
 *                    the device's own image: bit-identical
 * Bench: the int8 GEMM (Q8_0 weights x Q8_0 activations, dp4a) in TOPS
 * as a fraction of PEAK_TOPS (default: 1979, the H100/H200 SXM dense int8
 * tensor peak), cuBLASLt's int8 GEMM (dlopen libcublasLt.so) on the same
 * shape when present, and decode tokens/s of MODEL (backend cuda) against
 * the roofline weight_bytes_per_token / PEAK_GBS (default 4800, H200
 * HBM3e). The encoders' f32 GEMM (F16 weights, 4304 x 1152 x 1024,
 * SigLIP's FFN) in TFLOP/s as a fraction of PEAK_F16 (-F, default 989,
 * the H100/H200 SXM dense F16 tensor peak: the kernel uses f32 FMA, not
 * the tensor cores). -n: the kernel tests only.
 */
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "cuda_be.h"
#include "cuda_enc.h"
#include "gen.h"
#include "imgproc.h"
#include "mmhal_model.h"
#include "quant.h"
#include "tests/tap.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static float frand(void)	/* [-1, 1) */
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (float)((rng >> 40) / 8388608.0 - 1.0);
}

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void test_matmul(struct mm_cuda *cu, struct mm_ctx *mm,
			enum mm_type t, int64_t m, int64_t k, int64_t n)
{
	const size_t rs = mm_row_bytes(t, k);
	uint8_t *W = malloc(rs * m);
	float *row = malloc(k * sizeof(float));
	float *X = malloc(n * k * sizeof(float));
	float *yc = malloc(n * m * sizeof(float)), *yg = malloc(n * m * sizeof(float));
	struct mm_cuda_mat mat = { .t = t, .m = m, .y = yg };
	char err[256] = "";
	double mx = 0, md = 0;
	int ret;

	for (int64_t r = 0; r < m; r++) {
		for (int64_t i = 0; i < k; i++)
			row[i] = frand() * (1 + (r % 7));
		mm_quantize_row(t, row, W + r * rs, k);
	}
	for (int64_t i = 0; i < n * k; i++)
		X[i] = frand() * (1 + (i % 13 == 0) * 4);
	if (n == 1)
		mm_matvec(mm, t, W, X, yc, m, k);
	else
		mm_matmul(mm, t, W, X, yc, m, k, n);
	ret = mm_cuda_alloc(cu, rs * m, &mat.dev, err, sizeof(err));
	if (!ret)
		ret = mm_cuda_put(cu, mat.dev, W, rs * m, err, sizeof(err));
	if (!ret)
		ret = mm_cuda_matmul_n(cu, &mat, 1, X, k, n, err, sizeof(err));
	for (int64_t i = 0; !ret && i < n * m; i++) {
		mx = fmax(mx, fabs(yc[i]));
		md = fmax(md, fabs((double)yg[i] - yc[i]));
	}
	tap_ok(!ret && md <= 1e-4 * mx + 1e-6,
	       "%s %s %lld x %lld, n %lld: max |gpu - cpu| %.3g of max %.3g %s",
	       n == 1 ? "gemv" : "gemm", mm_type_name(t), (long long)m,
	       (long long)k, (long long)n, md, mx, err);
	mm_cuda_free(cu, mat.dev);
	free(W), free(row), free(X), free(yc), free(yg);
}

static void test_rows(struct mm_cuda *cu)
{
	enum { R = 5, N = 576, H = 9, HKV = 3, HD = 64, NP = 1000 };
	static float x[R * N], w[N], y[R * N], q[H * HD], out[H * HD];
	static uint16_t kh[HKV * NP * HD], vh[HKV * NP * HD];
	static float inv[HD / 2], rx[H * HD];
	char err[256] = "";
	double md = 0;
	int ret;

	for (int i = 0; i < R * N; i++)
		x[i] = frand() * 3;
	for (int i = 0; i < N; i++)
		w[i] = frand();
	ret = mm_cuda_rmsnorm(cu, x, w, y, R, N, 1e-5f, err, sizeof(err));
	for (int r = 0; !ret && r < R; r++) {
		double ss = 0;

		for (int i = 0; i < N; i++)
			ss += (double)x[r * N + i] * x[r * N + i];
		const double s = 1.0 / sqrt(ss / N + 1e-5);

		for (int i = 0; i < N; i++) {
			const double ref = x[r * N + i] * s * w[i];

			md = fmax(md, fabs(y[r * N + i] - ref) / (fabs(ref) + 1e-6));
		}
	}
	tap_ok(!ret && md <= 1e-5, "rmsnorm %d x %d: max rel diff %.3g %s", R,
	       N, md, err);

	for (int i = 0; i < HD / 2; i++)
		inv[i] = (float)pow(10000.0, -2.0 * i / HD);
	for (int i = 0; i < H * HD; i++)
		rx[i] = q[i] = frand();
	ret = mm_cuda_rope(cu, q, H, HD, HD, 777, inv, err, sizeof(err));
	md = 0;
	for (int h = 0; !ret && h < H; h++)
		for (int i = 0; i < HD / 2; i++) {
			const double th = (double)(777.0f * inv[i]);
			const double a = rx[h * HD + 2 * i], b = rx[h * HD + 2 * i + 1];

			md = fmax(md, fabs(q[h * HD + 2 * i] - (a * cos(th) - b * sin(th))));
			md = fmax(md, fabs(q[h * HD + 2 * i + 1] - (a * sin(th) + b * cos(th))));
		}
	tap_ok(!ret && md <= 1e-4, "rope %d heads of %d at 777: max diff %.3g %s",
	       H, HD, md, err);

	memcpy(y, x, sizeof(x));
	ret = mm_cuda_softmax(cu, y, R, N, err, sizeof(err));
	md = 0;
	for (int r = 0; !ret && r < R; r++) {
		double mxv = -INFINITY, s = 0;

		for (int i = 0; i < N; i++)
			mxv = fmax(mxv, x[r * N + i]);
		for (int i = 0; i < N; i++)
			s += exp(x[r * N + i] - mxv);
		for (int i = 0; i < N; i++) {
			const double ref = exp(x[r * N + i] - mxv) / s;

			md = fmax(md, fabs(y[r * N + i] - ref) / ref);
		}
	}
	tap_ok(!ret && md <= 1e-5, "softmax %d x %d: max rel diff %.3g %s", R,
	       N, md, err);

	for (int i = 0; i < HKV * NP * HD; i++) {
		kh[i] = mm_f32_to_f16(frand());
		vh[i] = mm_f32_to_f16(frand());
	}
	for (int i = 0; i < H * HD; i++)
		q[i] = frand() * 2;
	ret = mm_cuda_attn(cu, q, kh, vh, out, H, HKV, HD, NP, err, sizeof(err));
	md = 0;
	{
		double mxo = 0;
		static double sc[NP];

		for (int h = 0; !ret && h < H; h++) {
			const int g = h / (H / HKV);
			double mxs = -INFINITY, s = 0;

			for (int p = 0; p < NP; p++) {
				double d = 0;

				for (int i = 0; i < HD; i++)
					d += q[h * HD + i] *
					     mm_f16_to_f32(kh[((size_t)g * NP + p) * HD + i]);
				sc[p] = d / sqrt(HD);
				mxs = fmax(mxs, sc[p]);
			}
			for (int p = 0; p < NP; p++)
				s += (sc[p] = exp(sc[p] - mxs));
			for (int i = 0; i < HD; i++) {
				double o = 0;

				for (int p = 0; p < NP; p++)
					o += sc[p] * mm_f16_to_f32(vh[((size_t)g * NP + p) * HD + i]);
				o /= s;
				mxo = fmax(mxo, fabs(o));
				md = fmax(md, fabs(out[h * HD + i] - o));
			}
		}
		tap_ok(!ret && md <= 1e-4 * mxo + 1e-6,
		       "attention %d heads / %d KV, %d positions: max diff %.3g of %.3g %s",
		       H, HKV, NP, md, mxo, err);
	}
}

/* The decoder: backend cuda against backend cpu on MODEL. */
static void test_model(const char *path, double peak_gbs)
{
	static float lc[2][65536], lg[2][65536];
	struct mmhal_model_params p = mmhal_model_default_params();
	const int32_t prompt[16] = { 1, 5, 9, 200, 17, 3, 8, 44, 91, 12, 7, 6, 5, 4, 3, 2 };
	struct mmhal_model *m = NULL;
	struct mmhal_model_info in;
	char err[256] = "";
	double range = 0, md = 0;
	int nv = 0, ret;

	for (int b = 0; b < 2; b++) {
		p.backend = b ? MMHAL_BACKEND_CUDA : MMHAL_BACKEND_CPU;
		ret = mmhal_model_load(path, &p, &m, err, sizeof(err));
		if (!tap_ok(!ret, "load %s backend %s %s", path, b ? "cuda" : "cpu", err))
			return;
		mmhal_model_info(m, &in);
		nv = in.n_vocab;
		if (nv > 65536) {
			mmhal_model_free(m);
			return;
		}
		tap_diag("backend %s: %s", in.backend, in.backend_note);
		ret = mmhal_model_eval(m, prompt, 16, b ? lg[0] : lc[0]);
		if (!ret)
			ret = mmhal_model_eval(m, prompt + 3, 1, b ? lg[1] : lc[1]);
		tap_ok(!ret && !strcmp(in.backend, b ? "cuda" : "cpu"),
		       "backend %s: prefill 16 + decode 1", in.backend);
		if (b && !ret) {
			/* decode speed: 128 steps */
			int32_t tok = 10;
			double t0 = now_ms(), ms;

			for (int i = 0; i < 128 && !ret; i++, tok = (tok * 31 + 7) % nv)
				ret = mmhal_model_eval(m, &tok, 1, NULL);
			ms = (now_ms() - t0) / 128;
			printf("BENCH decode %.1f tokens/s (%.3f ms/token), roofline %.0f tokens/s "
			       "(%.1f MB/token at %.0f GB/s): %.2f%% of roof\n",
			       1e3 / ms, ms, peak_gbs * 1e9 / in.weight_bytes_per_token,
			       in.weight_bytes_per_token / 1e6, peak_gbs,
			       100.0 * (1e3 / ms) / (peak_gbs * 1e9 / in.weight_bytes_per_token));
		}
		mmhal_model_free(m);
	}
	for (int s = 0; s < 2; s++) {
		float lo = lc[s][0], hi = lc[s][0];

		for (int i = 0; i < nv; i++) {
			lo = fminf(lo, lc[s][i]);
			hi = fmaxf(hi, lc[s][i]);
			md = fmax(md, fabs(lg[s][i] - lc[s][i]));
		}
		range = fmax(range, hi - lo);
	}
	tap_ok(md <= 2e-2 * range, "decoder logits cuda vs cpu: max diff %.3g of range %.3g",
	       md, range);
}

/* cuBLASLt's int8 GEMM (C int32 = A^T B, A k x m, B k x n), ms per call. */
static double cublaslt_ms(struct mm_cuda *cu, int64_t m, int64_t k, int64_t n,
			  int iters)
{
	void *lt = dlopen("libcublasLt.so", RTLD_NOW), *h = NULL, *desc = NULL;
	void *la = NULL, *lb = NULL, *lc = NULL, *drv = dlopen("libcuda.so.1", RTLD_NOW);
	uint64_t A = 0, B = 0, C = 0, ws = 0;
	int (*create)(void **), (*dcreate)(void **, int, int),
	    (*dset)(void *, int, const void *, size_t),
	    (*lcreate)(void **, int, uint64_t, uint64_t, int64_t),
	    (*mm)(void *, void *, const void *, const void *, void *,
		  const void *, void *, const void *, const void *, void *,
		  void *, void *, const void *, uint64_t, size_t, void *);
	int (*sync)(void *);
	const int opT = 1, one = 1, zero = 0;
	const size_t wsb = 32 << 20;
	char err[256];
	double t0, ms = -1;

	if (!lt)
		lt = dlopen("libcublasLt.so.13", RTLD_NOW);
	if (!lt)
		lt = dlopen("libcublasLt.so.12", RTLD_NOW);
	if (!lt || !drv) {
		printf("# cuBLASLt: not found (%s)\n", dlerror());
		return -1;
	}
	*(void **)&create = dlsym(lt, "cublasLtCreate");
	*(void **)&dcreate = dlsym(lt, "cublasLtMatmulDescCreate");
	*(void **)&dset = dlsym(lt, "cublasLtMatmulDescSetAttribute");
	*(void **)&lcreate = dlsym(lt, "cublasLtMatrixLayoutCreate");
	*(void **)&mm = dlsym(lt, "cublasLtMatmul");
	*(void **)&sync = dlsym(drv, "cuStreamSynchronize");
	if (!create || !dcreate || !dset || !lcreate || !mm || !sync)
		return -1;
	if (mm_cuda_alloc(cu, k * m, &A, err, sizeof(err)) ||
	    mm_cuda_alloc(cu, k * n, &B, err, sizeof(err)) ||
	    mm_cuda_alloc(cu, m * n * 4, &C, err, sizeof(err)) ||
	    mm_cuda_alloc(cu, wsb, &ws, err, sizeof(err)))
		goto out;
	/* CUBLAS_COMPUTE_32I 72, CUDA_R_32I 10, CUDA_R_8I 3, TRANSA 3 */
	if (create(&h) || dcreate(&desc, 72, 10) ||
	    dset(desc, 3, &opT, sizeof(opT)) ||
	    lcreate(&la, 3, k, m, k) || lcreate(&lb, 3, k, n, k) ||
	    lcreate(&lc, 10, m, n, m)) {
		printf("# cuBLASLt: setup failed\n");
		goto out;
	}
	if (mm(h, desc, &one, (void *)A, la, (void *)B, lb, &zero, (void *)C,
	       lc, (void *)C, lc, NULL, ws, wsb, NULL) || sync(NULL)) {
		printf("# cuBLASLt: int8 matmul failed\n");
		goto out;
	}
	t0 = now_ms();
	for (int i = 0; i < iters; i++)
		mm(h, desc, &one, (void *)A, la, (void *)B, lb, &zero, (void *)C,
		   lc, (void *)C, lc, NULL, ws, wsb, NULL);
	sync(NULL);
	ms = (now_ms() - t0) / iters;
out:
	mm_cuda_free(cu, A), mm_cuda_free(cu, B), mm_cuda_free(cu, C);
	mm_cuda_free(cu, ws);
	return ms;
}

static void bench_gemm(struct mm_cuda *cu, double peak_tops)
{
	const int64_t m = 8192, k = 8192, n = 512;
	const size_t rs = mm_row_bytes(MM_TYPE_Q8_0, k);
	uint8_t *W = calloc(m, rs);
	float *row = malloc(k * sizeof(float));
	uint64_t dev = 0;
	char err[256] = "";
	double ms, lt;

	for (int64_t r = 0; r < m; r++) {
		for (int64_t i = 0; i < k; i++)
			row[i] = frand();
		mm_quantize_row(MM_TYPE_Q8_0, row, W + r * rs, k);
	}
	if (mm_cuda_alloc(cu, rs * m, &dev, err, sizeof(err)) ||
	    mm_cuda_put(cu, dev, W, rs * m, err, sizeof(err)) ||
	    mm_cuda_bench_gemm(cu, MM_TYPE_Q8_0, dev, m, k, n, 20, &ms, err,
			       sizeof(err))) {
		printf("# bench: %s\n", err);
	} else {
		const double tops = 2.0 * m * n * k / (ms * 1e-3) / 1e12;

		printf("BENCH int8 gemm q8_0 %lldx%lldx%lld (dp4a): %.3f ms, %.1f TOPS = %.2f%% of %.0f TOPS peak\n",
		       (long long)m, (long long)k, (long long)n, ms, tops,
		       100 * tops / peak_tops, peak_tops);
		lt = cublaslt_ms(cu, m, k, n, 20);
		if (lt > 0) {
			const double lts = 2.0 * m * n * k / (lt * 1e-3) / 1e12;

			printf("BENCH cuBLASLt int8 gemm same shape: %.3f ms, %.1f TOPS = %.2f%% of peak; ours %.2fx of cuBLASLt\n",
			       lt, lts, 100 * lts / peak_tops, lts ? tops / lts : 0);
		}
	}
	mm_cuda_free(cu, dev);
	free(W), free(row);
}

/* ---- the encoders --------------------------------------------------- */

struct enc_run {
	int ret;
	char err[256];
	struct mmhal_mmproj_info info;
	float *e[3];	/* image, audio embedding rows; backend cuda: the
			 * image from a declared mapping */
	size_t n[3];
};

static float *rows_of(struct mmhal_chunk *c, size_t *n)
{
	struct mmhal_chunk_info ci = { .size = sizeof(ci) };
	const float *e;
	float *o;

	*n = 0;
	if (!c || mmhal_chunk_info(c, &ci) || !(e = mmhal_chunk_embd(c)))
		return NULL;
	*n = (size_t)ci.n_embd_rows * ci.n_embd;
	o = malloc(*n * sizeof(float) + 1);
	if (o)
		memcpy(o, e, *n * sizeof(float));
	return o;
}

static void enc_run(const struct mmhal_model *llm, const char *proj,
		    int backend, struct enc_run *r)
{
	struct mmhal_mmproj_params pp = mmhal_mmproj_default_params();
	static uint8_t rgb[64 * 48 * 3];
	static int16_t pcm[32000];
	struct mmhal_image im = { .format = MMHAL_IMAGE_RGB24, .width = 64,
				  .height = 48, .plane = { rgb },
				  .stride = { 64 * 3 } };
	struct mmhal_audio au = mmhal_audio_s16(pcm, 32000, 16000);
	struct mmhal_mmproj *p = NULL;
	struct mmhal_chunk *c = NULL;

	memset(r, 0, sizeof(*r));
	for (size_t i = 0; i < sizeof(rgb); i++)
		rgb[i] = (uint8_t)(i * 37 + i / 97);
	for (size_t i = 0; i < 32000; i++)
		pcm[i] = (int16_t)(((i * 7919) % 20011) - 10005);
	pp.backend = backend;
	r->ret = mmhal_mmproj_load(proj, llm, &pp, &p, r->err, sizeof(r->err));
	if (r->ret)
		return;
	r->ret = mmhal_encode_image(p, &im, &c, r->err, sizeof(r->err));
	r->e[0] = rows_of(c, &r->n[0]);
	mmhal_chunk_free(c);
	c = NULL;
	if (!r->ret)
		r->ret = mmhal_encode_audio(p, &au, &c, r->err, sizeof(r->err));
	r->e[1] = rows_of(c, &r->n[1]);
	mmhal_chunk_free(c);
	c = NULL;
	if (!r->ret && backend == MMHAL_BACKEND_CUDA) {
		/* the frame in a declared mapping: read in place */
		const size_t len = 4 * (size_t)sysconf(_SC_PAGESIZE);
		uint8_t *map = mmap(NULL, len, PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		r->ret = map == MAP_FAILED ? -ENOMEM :
			 mmhal_mmproj_map_frames(p, map, len);
		if (!r->ret) {
			memcpy(map + 64, rgb, sizeof(rgb));
			im.plane[0] = map + 64;
			r->ret = mmhal_encode_image(p, &im, &c, r->err,
						    sizeof(r->err));
			r->e[2] = rows_of(c, &r->n[2]);
			mmhal_chunk_free(c);
			mmhal_mmproj_unmap_frames(p, map, len);
		}
		if (map != MAP_FAILED)
			munmap(map, len);
	}
	r->info.size = sizeof(r->info);
	mmhal_mmproj_info(p, &r->info);
	mmhal_mmproj_free(p);
}

static void test_encoders(void)
{
	char dir[] = "/tmp/mmhal-cuda-gpu-XXXXXX", lp[600], pp[600];
	char err[256] = "";
	struct mm_gen_params gp = { .shape = "tiny", .tokenizer = "smolvlm",
				    .type = 0, .seed = 3 };
	struct mm_gen_mmproj_params mp = { .vision = "tiny", .audio = "tiny",
					   .seed = 4 };
	static const uint32_t types[2] = { MM_TYPE_F16, MM_TYPE_Q8_0 };
	struct mmhal_model *llm = NULL;
	static struct enc_run cpu, gpu;
	int ret;

	if (!mkdtemp(dir))
		return;
	snprintf(lp, sizeof(lp), "%s/llm.gguf", dir);
	ret = mm_gen_model(&gp, lp, err, sizeof(err));
	if (!ret)
		ret = mmhal_model_load(lp, NULL, &llm, err, sizeof(err));
	if (!tap_ok(!ret, "encoders: tiny LLM %s", err))
		goto out;
	for (int t = 0; t < 2; t++) {
		const double tol = types[t] == MM_TYPE_F16 ? 1e-3 : 2e-2;

		snprintf(pp, sizeof(pp), "%s/mmproj-%d.gguf", dir, t);
		mp.type = types[t];
		if (!tap_ok(!mm_gen_mmproj(&mp, pp, err, sizeof(err)),
			    "encoders: tiny mmproj %s %s",
			    mm_type_name(types[t]), err))
			continue;
		enc_run(llm, pp, MMHAL_BACKEND_CPU, &cpu);
		enc_run(llm, pp, MMHAL_BACKEND_CUDA, &gpu);
		tap_ok(!gpu.ret && !strcmp(gpu.info.backend, "cuda") &&
		       gpu.info.cuda_products > 0 && !gpu.info.cuda_failed,
		       "encoders %s: backend cuda: %s (%llu products on the device, %llu failed) %s",
		       mm_type_name(types[t]), gpu.info.backend_note,
		       (unsigned long long)gpu.info.cuda_products,
		       (unsigned long long)gpu.info.cuda_failed, gpu.err);
		for (int j = 0; j < 3; j++) {
			const int jc = j == 2 ? 0 : j;	/* cpu: the image */
			double mx = 0, md = 0;
			int ok = !cpu.ret && !gpu.ret && cpu.e[jc] &&
				 gpu.e[j] && cpu.n[jc] == gpu.n[j] && cpu.n[jc];

			for (size_t i = 0; ok && i < cpu.n[jc]; i++) {
				mx = fmax(mx, fabs(cpu.e[jc][i]));
				md = fmax(md, fabs((double)gpu.e[j][i] - cpu.e[jc][i]));
			}
			tap_ok(ok && md <= tol * mx,
			       "encoders %s %s: max |cuda - cpu| %.3g of max %.3g (limit %.0e of it)",
			       mm_type_name(types[t]), j == 2 ?
			       "image from a declared mapping (device preprocessing)" :
			       j ? "audio" : "image", md, mx, tol);
		}
		for (int j = 0; j < 3; j++) {
			free(cpu.e[j]);
			free(gpu.e[j]);
		}
		unlink(pp);
	}
out:
	mmhal_model_free(llm);
	unlink(lp);
	rmdir(dir);
}

/* ---- frames: the device preprocessing and im2col ---------------------- */

static void frame_case(struct mm_cuda *cu, const struct mm_mmproj *p,
		       const char *shape, uint32_t fmt, uint32_t w,
		       uint32_t h)
{
	const struct mm_mmproj_vision *v = mm_mmproj_vision(p);
	const size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	const uint32_t S = v->image_size, P = v->patch_size, side = S / P;
	const size_t npx = 3 * (size_t)S * S, kp = 3 * (size_t)P * P;
	const size_t np = (size_t)side * side;
	const char *fn = fmt == MM_IMAGE_NV12 ? "NV12" :
			 fmt == MM_IMAGE_GREY ? "GREY" : "RGB24";
	size_t line = (size_t)w * (fmt == MM_IMAGE_RGB24 ? 3 : 1) + 24;
	size_t bytes = line * h + (fmt == MM_IMAGE_NV12 ? line * h / 2 : 0);
	size_t len = (bytes + 100 + pg - 1) / pg * pg;
	float *cpu = malloc(npx * sizeof(float)), *gpu = malloc(npx * 4);
	float *u = malloc(np * kp * sizeof(float));
	struct mm_image im = { .format = fmt, .width = w, .height = h };
	struct mm_image_plan pl;
	struct mm_cuda_frame f;
	uint8_t *map = mmap(NULL, len, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uintptr_t lo, hi;
	uint64_t dev = 0;
	char err[256] = "";
	size_t nd = 0, bad = 0;
	double md = 0, lim;
	int ret;

	if (!cpu || !gpu || !u || map == MAP_FAILED) {
		tap_ok(0, "frames: out of memory");
		goto out;
	}
	for (size_t i = 0; i < len; i++)
		map[i] = (uint8_t)((rng = rng * 6364136223846793005ull +
					  1442695040888963407ull) >> 56);
	/* planes at an unaligned offset, strides longer than a line */
	im.plane[0] = map + 100;
	im.stride[0] = line;
	if (fmt == MM_IMAGE_NV12) {
		im.plane[1] = map + 100 + line * h;
		im.stride[1] = line;
	}
	ret = mm_image_plan(p, w, h, 0, &pl, err, sizeof(err));
	if (!ret)
		ret = mm_image_preprocess_tile(p, &im, &pl, -1, cpu, npx, err,
					       sizeof(err));
	if (!ret)
		ret = mm_cuda_host_register(cu, map, len, &dev, err,
					    sizeof(err));
	if (!ret) {
		mm_cuda_frame_span(&im, &lo, &hi);
		ret = mm_cuda_frame_of(p, &im, &pl, dev + (lo - (uintptr_t)map),
				       &f);
	}
	if (!ret)
		ret = mm_cuda_image(cu, &f, gpu, u, NULL, err, sizeof(err));
	if (dev)
		mm_cuda_host_unregister(cu, map, err, sizeof(err));
	for (size_t i = 0; !ret && i < npx; i++) {
		const double d = fabs((double)gpu[i] - cpu[i]);

		lim = 1.0 / 255 / v->std[i / ((size_t)S * S)] + 1e-6;
		md = fmax(md, d);
		nd += d > 0;
		bad += d > lim;
	}
	tap_ok(!ret && !bad && nd <= npx / 200,
	       "preprocess %s %s %ux%u -> %u: %zu of %zu values differ (max %.3g, at most one level) %s",
	       shape, fn, w, h, S, nd, npx, md, err);
	/* the unfold of the device's own image, as vision.c does it */
	for (size_t t = 0; !ret && t < np && !bad; t++) {
		const size_t py = t / side, px = t % side;

		for (size_t c = 0; c < 3; c++)
			for (size_t ky = 0; ky < P; ky++)
				for (size_t kx = 0; kx < P; kx++)
					bad += memcmp(&u[t * kp + (c * P + ky) * P + kx],
						      &gpu[c * S * S + (py * P + ky) * S + px * P + kx],
						      sizeof(float)) != 0;
	}
	tap_ok(!ret && !bad, "im2col %s %s %ux%u: %zu x %zu bit-identical to the unfold",
	       shape, fn, w, h, np, kp);
out:
	if (map != MAP_FAILED)
		munmap(map, len);
	free(cpu);
	free(gpu);
	free(u);
}

static void test_frames(struct mm_cuda *cu)
{
	static const char *const shapes[] = { "tiny", "tiny-mlp" };
	static const uint32_t fmts[] = { MM_IMAGE_NV12, MM_IMAGE_GREY,
					 MM_IMAGE_RGB24 };
	char path[] = "/tmp/mmhal-cuda-frames-XXXXXX", err[256] = "";
	int fd = mkstemp(path);

	if (fd >= 0)
		close(fd);
	if (!tap_ok(fd >= 0, "frames: temporary file"))
		return;
	for (int s = 0; s < 2; s++) {
		struct mm_gen_mmproj_params mp = { .vision = shapes[s],
						   .type = MM_TYPE_F16,
						   .seed = 9 };
		struct mm_mmproj *p = NULL;
		uint32_t S;

		if (!tap_ok(!mm_gen_mmproj(&mp, path, err, sizeof(err)) &&
			    !mm_mmproj_load(path, &p, err, sizeof(err)),
			    "frames: %s mmproj %s", shapes[s], err))
			continue;
		S = mm_mmproj_vision(p)->image_size;
		for (int i = 0; i < 3; i++) {
			frame_case(cu, p, shapes[s], fmts[i], 640, 480);
			frame_case(cu, p, shapes[s], fmts[i], 50, 122);
			if (fmts[i] != MM_IMAGE_NV12 || !(S & 1))
				frame_case(cu, p, shapes[s], fmts[i], S, S);
			frame_case(cu, p, shapes[s], fmts[i], 2 * S + 6, S / 2 * 2);
		}
		mm_mmproj_free(p);
	}
	unlink(path);
}

static void bench_fgemm(struct mm_cuda *cu, double peak_f16)
{
	const int64_t m = 4304, k = 1152, n = 1024;
	uint16_t *W = malloc(m * k * sizeof(uint16_t));
	uint64_t dev = 0;
	char err[256] = "";
	double ms;

	for (int64_t i = 0; i < m * k; i++)
		W[i] = mm_f32_to_f16(frand());
	if (mm_cuda_alloc(cu, m * k * 2, &dev, err, sizeof(err)) ||
	    mm_cuda_put(cu, dev, W, m * k * 2, err, sizeof(err)) ||
	    mm_cuda_bench_gemm(cu, MM_TYPE_F16, dev, m, k, n, 20, &ms, err,
			       sizeof(err))) {
		printf("# bench f16: %s\n", err);
	} else {
		const double tf = 2.0 * m * n * k / (ms * 1e-3) / 1e12;

		printf("BENCH encoder gemm f16 weights %lldx%lldx%lld (f32 fma): %.3f ms, %.2f TFLOP/s = %.2f%% of %.0f TFLOP/s f16 peak\n",
		       (long long)m, (long long)k, (long long)n, ms, tf,
		       100 * tf / peak_f16, peak_f16);
	}
	mm_cuda_free(cu, dev);
	free(W);
}

int main(int argc, char **argv)
{
	const char *model = NULL;
	double peak_tops = 1979, peak_gbs = 4800, peak_f16 = 989;
	int kernels_only = 0, opt, ret;
	struct mm_cuda *cu = NULL;
	struct mm_ctx *mm = NULL;
	char err[256] = "";

	while ((opt = getopt(argc, argv, "m:P:B:F:n")) != -1) {
		if (opt == 'F')
			peak_f16 = atof(optarg);
		else if (opt == 'm')
			model = optarg;
		else if (opt == 'P')
			peak_tops = atof(optarg);
		else if (opt == 'B')
			peak_gbs = atof(optarg);
		else if (opt == 'n')
			kernels_only = 1;
		else
			return 2;
	}
	ret = mm_cuda_open(&cu, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "cuda_gpu: no usable CUDA device: %s\n", err);
		return 77;
	}
	printf("# device: %s\n", mm_cuda_describe(cu));
	if (mm_ctx_create(0, &mm))
		return 1;
	printf("# cpu kernels: %s\n", mm_ctx_kernels(mm));
	{
		static const enum mm_type ts[] = { MM_TYPE_Q8_0, MM_TYPE_Q4_0,
						   MM_TYPE_Q4_K };

		for (int i = 0; i < 3; i++) {
			test_matmul(cu, mm, ts[i], 1031, 2048, 1);
			test_matmul(cu, mm, ts[i], 1031, 2048, 77);
			test_matmul(cu, mm, ts[i], 576, 1536, 512);
		}
		/* the encoders' f32 GEMM: any k, tile edges */
		test_matmul(cu, mm, MM_TYPE_F16, 1031, 1000, 77);
		test_matmul(cu, mm, MM_TYPE_F16, 768, 1152, 729);
		test_matmul(cu, mm, MM_TYPE_F32, 1031, 1000, 77);
		test_matmul(cu, mm, MM_TYPE_F32, 64, 1152, 2);
	}
	test_rows(cu);
	test_frames(cu);
	test_encoders();
	if (!kernels_only) {
		bench_gemm(cu, peak_tops);
		bench_fgemm(cu, peak_f16);
		if (model)
			test_model(model, peak_gbs);
	}
	mm_ctx_destroy(mm);
	mm_cuda_close(cu);
	return tap_done("cuda-gpu");
}

// SPDX-License-Identifier: MIT
/*
 * cuda_kern.cu - device kernels of the CUDA back end (cuda.c), compiled
 * to PTX by nvcc at build time and loaded with cuModuleLoadData. No CUDA
 * runtime: plain extern "C" kernels, launched through the driver API.
 *
 * Weight blocks are read in the file's layout (quant.h, ggml's):
 *   Q8_0  34 bytes: f16 d, 32 x int8                    x = d * q
 *   Q4_0  18 bytes: f16 d, 16 bytes, byte j = x[j] | x[j+16] << 4,
 *                   x = d * (q - 8)
 *   Q4_K  144 bytes per 256: f16 d, f16 dmin, 12 bytes of 6-bit
 *                   (scale, min) pairs, 128 nibble bytes: chunk c (64
 *                   elements) is bytes 32c..32c+31, low nibbles the
 *                   first 32 (sub-block 2c), high the next (2c + 1);
 *                   x = d * sc * q - dmin * m
 * Q8_0 and Q4_0 blocks are only 2-byte aligned: read as 16-bit halves.
 *
 * Activations are quantized on the device into one form for all weight
 * types: per row, int8 qs[k], and per 32-element sub-block a float scale
 * xd and the int sum of its qs xs. Q8_0 mode (Q8_0/Q4_0 weights) is
 * mm_quantize_row(Q8_0): d = amax / 127 rounded to f16, q = roundf(x / d);
 * Q8_K mode (Q4_K) is mm_quantize_row(Q8_K) per 256: the element of
 * largest |x| (the first of equals) gives iscale = -127 / max, q =
 * min(127, rint(iscale * x)), d = 1 / iscale for its 8 sub-blocks.
 * A sub-block of weights is decoded into 8 words of 4 int8 and a, b with
 * W.x = a * xd * dot(q, xq) + b * xd * xs: the same integer block sums as
 * the CPU kernels.
 */
#include <cuda_fp16.h>
#include <stdint.h>

#define QK 32
#define QK_K 256

enum { T_Q4_0 = 2, T_Q8_0 = 8, T_Q4_K = 12 };

__device__ __forceinline__ float h2f(const uint8_t *p)
{
	const uint16_t h = *(const uint16_t *)p;

	return __half2float(__ushort_as_half(h));
}

__device__ __forceinline__ int ld32_2(const uint8_t *p)
{
	const uint16_t *h = (const uint16_t *)p;

	return (int)((uint32_t)h[0] | (uint32_t)h[1] << 16);
}

/* Sub-block sb (32 elements) of a weight row in type T: 8 words, a, b. */
template <int T>
__device__ __forceinline__ void decode(const uint8_t *row, int sb, int *w,
				       float *a, float *b)
{
	if (T == T_Q8_0) {
		const uint8_t *p = row + (size_t)sb * 34;

		*a = h2f(p);
		*b = 0.0f;
#pragma unroll
		for (int i = 0; i < 8; i++)
			w[i] = ld32_2(p + 2 + 4 * i);
	} else if (T == T_Q4_0) {
		const uint8_t *p = row + (size_t)sb * 18;
		const float d = h2f(p);

		*a = d;
		*b = -8.0f * d;
#pragma unroll
		for (int i = 0; i < 4; i++) {
			const int v = ld32_2(p + 2 + 4 * i);

			w[i] = v & 0x0F0F0F0F;
			w[i + 4] = (v >> 4) & 0x0F0F0F0F;
		}
	} else {	/* Q4_K */
		const uint8_t *p = row + (size_t)(sb >> 3) * 144;
		const int j = sb & 7, c = j >> 1;
		const uint8_t *s = p + 4;
		const int *q = (const int *)(p + 16 + 32 * c);
		int sc, mn;

		if (j < 4) {
			sc = s[j] & 63;
			mn = s[j + 4] & 63;
		} else {
			sc = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
			mn = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
		}
		*a = h2f(p) * (float)sc;
		*b = -h2f(p + 2) * (float)mn;
#pragma unroll
		for (int i = 0; i < 8; i++)
			w[i] = (q[i] >> (4 * (j & 1))) & 0x0F0F0F0F;
	}
}

__device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
	for (int o = 16; o; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

__device__ __forceinline__ int warp_isum(int v)
{
#pragma unroll
	for (int o = 16; o; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

/* ---- activation quantization ----------------------------------------- */

/* Q8_0 mode: a warp per 32-element block; nblk blocks of x. */
extern "C" __global__ void mm_quant_q8_0(const float *x, int8_t *qs,
					 float *xd, int *xs, int nblk)
{
	const int blk = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
	const int lane = threadIdx.x & 31;

	if (blk >= nblk)
		return;
	const float v = x[(size_t)blk * QK + lane];
	float amax = fabsf(v);

#pragma unroll
	for (int o = 16; o; o >>= 1)
		amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
	const float d = __fdiv_rn(amax, 127.0f);
	const float id = d != 0.0f ? __fdiv_rn(1.0f, d) : 0.0f;
	const int q = (int)roundf(__fmul_rn(v, id));

	qs[(size_t)blk * QK + lane] = (int8_t)q;
	const int s = warp_isum(q);

	if (!lane) {
		xd[blk] = __half2float(__float2half_rn(d));
		xs[blk] = s;
	}
}

/* Q8_K mode: a block of 256 threads per 256 elements. */
extern "C" __global__ void mm_quant_q8_k(const float *x, int8_t *qs,
					 float *xd, int *xs, int nsup)
{
	__shared__ float sa[8];
	__shared__ int si[8];
	__shared__ int ssum[8];
	const int sup = blockIdx.x, t = threadIdx.x, lane = t & 31, wp = t >> 5;

	if (sup >= nsup)
		return;
	const float v = x[(size_t)sup * QK_K + t];
	float ax = fabsf(v);
	int ix = t;

	/* largest |x|, the lowest index among equals */
#pragma unroll
	for (int o = 16; o; o >>= 1) {
		const float oa = __shfl_xor_sync(0xffffffffu, ax, o);
		const int oi = __shfl_xor_sync(0xffffffffu, ix, o);

		if (oa > ax || (oa == ax && oi < ix)) {
			ax = oa;
			ix = oi;
		}
	}
	if (!lane) {
		sa[wp] = ax;
		si[wp] = ix;
	}
	__syncthreads();
	ax = sa[0];
	ix = si[0];
	for (int i = 1; i < 8; i++)
		if (sa[i] > ax) {
			ax = sa[i];
			ix = si[i];
		}
	int q = 0;
	float d = 0.0f;

	if (ax != 0.0f) {
		const float mx = x[(size_t)sup * QK_K + ix];
		const float is = __fdiv_rn(-127.0f, mx);

		q = min(127, __float2int_rn(__fmul_rn(is, v)));
		d = __fdiv_rn(1.0f, is);
	}
	qs[(size_t)sup * QK_K + t] = (int8_t)q;
	const int s = warp_isum(q);

	if (!lane)
		ssum[wp] = s;
	__syncthreads();
	if (t < 8) {
		xd[(size_t)sup * 8 + t] = d;
		xs[(size_t)sup * 8 + t] = ssum[t];
	}
}

/* ---- matrix-vector: a warp per row, 8 rows per block ------------------ */

template <int T>
__device__ __forceinline__ void gemv(const uint8_t *W, size_t rs,
				     const int8_t *xq, const float *xd,
				     const int *xs, float *y, int m, int nsb)
{
	const int row = blockIdx.x * 8 + threadIdx.x / 32;
	const int lane = threadIdx.x & 31;
	float acc = 0.0f;

	if (row >= m)
		return;
	const uint8_t *r = W + (size_t)row * rs;

	for (int sb = lane; sb < nsb; sb += 32) {
		int w[8], dot = 0;
		float a, b;
		const int *xv = (const int *)(xq + (size_t)sb * QK);

		decode<T>(r, sb, w, &a, &b);
#pragma unroll
		for (int i = 0; i < 8; i++)
			dot = __dp4a(w[i], xv[i], dot);
		acc += xd[sb] * (a * (float)dot + b * (float)xs[sb]);
	}
	acc = warp_sum(acc);
	if (!lane)
		y[row] = acc;
}

#define GEMV(name, T)							\
extern "C" __global__ void name(const uint8_t *W, size_t rs,		\
				const int8_t *xq, const float *xd,	\
				const int *xs, float *y, int m, int nsb) \
{									\
	gemv<T>(W, rs, xq, xd, xs, y, m, nsb);				\
}
GEMV(mm_gemv_q8_0, T_Q8_0)
GEMV(mm_gemv_q4_0, T_Q4_0)
GEMV(mm_gemv_q4_k, T_Q4_K)

/* ---- int8 matrix-matrix (dp4a) ------------------------------------------
 * Y[n][m] = X[n][k] . W[m][k]^T: 64 weight rows x 64 tokens per block of
 * 256 threads, 4 x 4 outputs per thread, 32 elements of k per step in
 * shared memory (weights decoded to int8 words with their a, b).
 */
#define TM 64
#define TN 64

template <int T>
__device__ __forceinline__ void gemm(const uint8_t *W, size_t rs,
				     const int8_t *xq, const float *xd,
				     const int *xs, float *Y, int m, int n,
				     int nsb)
{
	__shared__ int ws[TM][9], xw[TN][9];
	__shared__ float wa[TM], wb[TM], xds[TN], xss[TN];
	const int t = threadIdx.x;
	const int m0 = blockIdx.x * TM, n0 = blockIdx.y * TN;
	const int ty = t / 16, tx = t % 16;
	float acc[4][4] = { { 0 } };

	for (int sb = 0; sb < nsb; sb++) {
		/* 4 threads a row: thread t loads row t / 4, words 2(t % 4).. */
		const int lr = t / 4, lw = (t % 4) * 2;

		if (m0 + lr < m) {
			int w[8];
			float a, b;

			decode<T>(W + (size_t)(m0 + lr) * rs, sb, w, &a, &b);
			ws[lr][lw] = w[lw];
			ws[lr][lw + 1] = w[lw + 1];
			if (lw == 0) {
				wa[lr] = a;
				wb[lr] = b;
			}
		} else {
			ws[lr][lw] = ws[lr][lw + 1] = 0;
			if (lw == 0)
				wa[lr] = wb[lr] = 0.0f;
		}
		if (n0 + lr < n) {
			const size_t kb = (size_t)(n0 + lr) * nsb + sb;
			const int *xv = (const int *)(xq + kb * QK);

			xw[lr][lw] = xv[lw];
			xw[lr][lw + 1] = xv[lw + 1];
			if (lw == 0) {
				xds[lr] = xd[kb];
				xss[lr] = (float)xs[kb];
			}
		} else {
			xw[lr][lw] = xw[lr][lw + 1] = 0;
			if (lw == 0)
				xds[lr] = xss[lr] = 0.0f;
		}
		__syncthreads();
#pragma unroll
		for (int i = 0; i < 4; i++) {
			const int r = ty * 4 + i;
#pragma unroll
			for (int j = 0; j < 4; j++) {
				const int c = tx + 16 * j;
				int dot = 0;
#pragma unroll
				for (int u = 0; u < 8; u++)
					dot = __dp4a(ws[r][u], xw[c][u], dot);
				acc[i][j] += xds[c] * (wa[r] * (float)dot +
						       wb[r] * xss[c]);
			}
		}
		__syncthreads();
	}
#pragma unroll
	for (int i = 0; i < 4; i++)
#pragma unroll
		for (int j = 0; j < 4; j++) {
			const int r = m0 + ty * 4 + i, c = n0 + tx + 16 * j;

			if (r < m && c < n)
				Y[(size_t)c * m + r] = acc[i][j];
		}
}

#define GEMM(name, T)							\
extern "C" __global__ void name(const uint8_t *W, size_t rs,		\
				const int8_t *xq, const float *xd,	\
				const int *xs, float *Y, int m, int n,	\
				int nsb)				\
{									\
	gemm<T>(W, rs, xq, xd, xs, Y, m, n, nsb);			\
}
GEMM(mm_gemm_q8_0, T_Q8_0)
GEMM(mm_gemm_q4_0, T_Q4_0)
GEMM(mm_gemm_q4_k, T_Q4_K)

/* ---- f32 matrix-matrix for F16 / F32 weights (the encoders) -------------
 * Y[n][m] = X[n][k] . W[m][k]^T in f32 (F16 weights converted exactly to
 * f32): 64 weight rows x 64 tokens per block of 256 threads, 4 x 4
 * outputs per thread, k in steps of 16 through shared memory, each
 * output one fmaf chain in k order. Any m, n, k (edges padded with 0).
 */
#define FK 16

__device__ __forceinline__ float ldw(const uint16_t *W, size_t i)
{
	return __half2float(__ushort_as_half(W[i]));
}

__device__ __forceinline__ float ldw(const float *W, size_t i)
{
	return W[i];
}

template <typename WT>
__device__ __forceinline__ void gemm_f(const WT *W, const float *X, float *Y,
				       int m, int n, int k)
{
	/* [kk][row]: a thread's 4 rows are adjacent (+1 pad per line) */
	__shared__ float ws[FK][TM + 4], xs[FK][TN + 4];
	const int t = threadIdx.x;
	const int m0 = blockIdx.x * TM, n0 = blockIdx.y * TN;
	const int ty = t / 16, tx = t % 16;
	float acc[4][4] = { { 0 } };

	for (int k0 = 0; k0 < k; k0 += FK) {
		/* 64 x 16 of each: 1024 elements, 4 per thread; 16
		 * consecutive threads read 16 consecutive k of one row */
#pragma unroll
		for (int i = 0; i < 4; i++) {
			const int e = t + 256 * i, r = e / FK, c = e % FK;
			const int kc = k0 + c;

			ws[c][r] = m0 + r < m && kc < k ?
				   ldw(W, (size_t)(m0 + r) * k + kc) : 0.0f;
			xs[c][r] = n0 + r < n && kc < k ?
				   X[(size_t)(n0 + r) * k + kc] : 0.0f;
		}
		__syncthreads();
#pragma unroll
		for (int kk = 0; kk < FK; kk++) {
			float a[4], b[4];

#pragma unroll
			for (int i = 0; i < 4; i++) {
				a[i] = xs[kk][ty * 4 + i];
				b[i] = ws[kk][tx * 4 + i];
			}
#pragma unroll
			for (int i = 0; i < 4; i++)
#pragma unroll
				for (int j = 0; j < 4; j++)
					acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
		}
		__syncthreads();
	}
#pragma unroll
	for (int i = 0; i < 4; i++)
#pragma unroll
		for (int j = 0; j < 4; j++) {
			const int c = n0 + ty * 4 + i, r = m0 + tx * 4 + j;

			if (r < m && c < n)
				Y[(size_t)c * m + r] = acc[i][j];
		}
}

extern "C" __global__ void mm_gemm_f16(const uint16_t *W, const float *X,
				       float *Y, int m, int n, int k)
{
	gemm_f<uint16_t>(W, X, Y, m, n, k);
}

extern "C" __global__ void mm_gemm_f32(const float *W, const float *X,
				       float *Y, int m, int n, int k)
{
	gemm_f<float>(W, X, Y, m, n, k);
}

/* ---- row operations --------------------------------------------------- */

/* RMSNorm: a block of 256 per row; the sum of squares in double, as the
 * CPU's mm_rmsnorm(). */
extern "C" __global__ void mm_rmsnorm(const float *x, const float *w,
				      float *y, int n, float eps)
{
	__shared__ double part[256];
	const float *xr = x + (size_t)blockIdx.x * n;
	float *yr = y + (size_t)blockIdx.x * n;
	double s = 0;

	for (int i = threadIdx.x; i < n; i += blockDim.x)
		s += (double)xr[i] * xr[i];
	part[threadIdx.x] = s;
	__syncthreads();
	for (int o = blockDim.x / 2; o; o >>= 1) {
		if (threadIdx.x < o)
			part[threadIdx.x] += part[threadIdx.x + o];
		__syncthreads();
	}
	const float sc = (float)(1.0 / sqrt(part[0] / n + (double)eps));

	for (int i = threadIdx.x; i < n; i += blockDim.x)
		yr[i] = xr[i] * sc * w[i];
}

/* RoPE, llama.cpp's normal mode (the runtime's): adjacent pairs (2i,
 * 2i + 1) of the first n_rot elements of each head, angle pos *
 * inv_freq[i] (inv_freq already divided by rope_freqs). A thread a pair. */
extern "C" __global__ void mm_rope(float *x, int n_heads, int hd, int n_rot,
				   int pos, const float *inv_freq)
{
	const int idx = blockIdx.x * blockDim.x + threadIdx.x;
	const int np = n_rot / 2;

	if (idx >= n_heads * np)
		return;
	const int h = idx / np, i = idx % np;
	const float th = __fmul_rn((float)pos, inv_freq[i]);
	const float c = cosf(th), s = sinf(th);
	float *p = x + (size_t)h * hd + 2 * i;
	const float a = p[0], b = p[1];

	p[0] = a * c - b * s;
	p[1] = a * s + b * c;
}

__device__ float block_max(float v, float *sh)
{
#pragma unroll
	for (int o = 16; o; o >>= 1)
		v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
	if ((threadIdx.x & 31) == 0)
		sh[threadIdx.x / 32] = v;
	__syncthreads();
	v = sh[0];
	for (int i = 1; i < (int)blockDim.x / 32; i++)
		v = fmaxf(v, sh[i]);
	__syncthreads();
	return v;
}

__device__ float block_sum(float v, float *sh)
{
	v = warp_sum(v);
	if ((threadIdx.x & 31) == 0)
		sh[threadIdx.x / 32] = v;
	__syncthreads();
	v = 0.0f;
	for (int i = 0; i < (int)blockDim.x / 32; i++)
		v += sh[i];
	__syncthreads();
	return v;
}

/* Softmax of each row of n, in place: a block of 256 per row. */
extern "C" __global__ void mm_softmax(float *x, int n)
{
	__shared__ float sh[32];
	float *r = x + (size_t)blockIdx.x * n;
	float mx = -INFINITY, s = 0.0f;

	for (int i = threadIdx.x; i < n; i += blockDim.x)
		mx = fmaxf(mx, r[i]);
	mx = block_max(mx, sh);
	for (int i = threadIdx.x; i < n; i += blockDim.x) {
		const float e = expf(r[i] - mx);

		r[i] = e;
		s += e;
	}
	s = block_sum(s, sh);
	for (int i = threadIdx.x; i < n; i += blockDim.x)
		r[i] /= s;
}

/*
 * Attention of one query over npos cache positions: a block of 256 per
 * query head h (KV head h / (n_head / n_head_kv)). q: n_head x hd f32;
 * kh, vh: F16 rows, n_head_kv heads x npos x hd (each head's rows
 * contiguous, as the runtime's cache); sc: n_head x npos f32 scratch;
 * out: n_head x hd. softmax(q.K^T / sqrt(hd)) . V in f32.
 */
extern "C" __global__ void mm_attn_dec(const float *q, const __half *kh,
				       const __half *vh, float *sc,
				       float *out, int n_head, int n_head_kv,
				       int hd, int npos)
{
	__shared__ float sh[32];
	extern __shared__ float qs[];
	const int h = blockIdx.x, kvh = h / (n_head / n_head_kv);
	const __half *K = kh + (size_t)kvh * npos * hd;
	const __half *V = vh + (size_t)kvh * npos * hd;
	float *s = sc + (size_t)h * npos;
	const float scale = rsqrtf((float)hd);
	float mx = -INFINITY, sum = 0.0f;

	for (int i = threadIdx.x; i < hd; i += blockDim.x)
		qs[i] = q[(size_t)h * hd + i];
	__syncthreads();
	for (int p = threadIdx.x; p < npos; p += blockDim.x) {
		const __half *kr = K + (size_t)p * hd;
		float d = 0.0f;

		for (int i = 0; i < hd; i++)
			d += qs[i] * __half2float(kr[i]);
		d *= scale;
		s[p] = d;
		mx = fmaxf(mx, d);
	}
	mx = block_max(mx, sh);
	for (int p = threadIdx.x; p < npos; p += blockDim.x) {
		const float e = expf(s[p] - mx);

		s[p] = e;
		sum += e;
	}
	sum = block_sum(sum, sh);
	__syncthreads();
	for (int i = threadIdx.x; i < hd; i += blockDim.x) {
		float o = 0.0f;

		for (int p = 0; p < npos; p++)
			o += s[p] * __half2float(V[(size_t)p * hd + i]);
		out[(size_t)h * hd + i] = o / sum;
	}
}

/* ---- frames: the vision encoder's input -------------------------------- */

/* RGB of source pixel (x, y) of a frame read in place (imgproc.c's
 * fetch()): fmt 0 GREY, 1 RGB24, 2 NV12 (BT.601 limited range). */
__device__ static inline void pre_fetch(const unsigned char *p0,
					const unsigned char *p1,
					long long st0, long long st1, int fmt,
					int x, int y, int rgb[3])
{
	if (fmt == 0) {
		rgb[0] = rgb[1] = rgb[2] = p0[y * st0 + x];
	} else if (fmt == 1) {
		const unsigned char *s = p0 + y * st0 + 3LL * x;

		rgb[0] = s[0];
		rgb[1] = s[1];
		rgb[2] = s[2];
	} else {
		const int c = (int)p0[y * st0 + x] - 16;
		const unsigned char *s = p1 + (y / 2) * st1 + 2LL * (x / 2);
		const int d = (int)s[0] - 128, e = (int)s[1] - 128;

		rgb[0] = min(max((298 * c + 409 * e + 128) >> 8, 0), 255);
		rgb[1] = min(max((298 * c - 100 * d - 208 * e + 128) >> 8, 0),
			     255);
		rgb[2] = min(max((298 * c + 516 * d + 128) >> 8, 0), 255);
	}
}

/* imgproc.c's lerpf and norm, rounded as the host rounds (no fma) */
__device__ static inline float pre_lerp(float s, float e, float t)
{
	return __fadd_rn(s, __fmul_rn(__fsub_rn(e, s), t));
}

__device__ static inline float pre_norm(float u, float mean, float sd)
{
	return __fdiv_rn(__fsub_rn(__fdiv_rn(u, 255.0f), mean), sd);
}

/*
 * The overview image (imgproc.c's overview(), or copy_frame() when
 * same): out[3][s][s], the frame bilinear-resized to cw x ch at (cx, cy)
 * of an s x s field of the pad colour; nm = mean[3], std[3]. One thread
 * per output pixel.
 */
extern "C" __global__ void mm_pre_overview(const unsigned char *p0,
					   const unsigned char *p1,
					   long long st0, long long st1,
					   int fmt, int w, int h, int s,
					   int same, int cx, int cy, int cw,
					   int ch, float xr, float yr,
					   float m0, float m1, float m2,
					   float d0, float d1, float d2,
					   int pad, float *out)
{
	const long long ps = (long long)s * s;
	const long long o = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	const float mean[3] = { m0, m1, m2 }, sd[3] = { d0, d1, d2 };
	int x, y, a[3], b[3], c2[3], d[3];

	if (o >= ps)
		return;
	y = (int)(o / s);
	x = (int)(o % s);
	if (same) {
		pre_fetch(p0, p1, st0, st1, fmt, x, y, a);
		for (int c = 0; c < 3; c++)
			out[c * ps + o] = pre_norm((float)a[c], mean[c], sd[c]);
		return;
	}
	if (y < cy || y - cy >= ch || x < cx || x - cx >= cw) {
		for (int c = 0; c < 3; c++)
			out[c * ps + o] = pre_norm((float)((pad >> (8 * c)) &
							   0xff),
						   mean[c], sd[c]);
		return;
	}
	const float py = __fmul_rn(yr, (float)(y - cy));
	const int y0 = (int)py, y1 = y0 + 1 < h ? y0 + 1 : y0;
	const float ty = __fsub_rn(py, (float)y0);
	const float px = __fmul_rn(xr, (float)(x - cx));
	const int x0 = (int)px, x1 = x0 + 1 < w ? x0 + 1 : x0;
	const float tx = __fsub_rn(px, (float)x0);

	pre_fetch(p0, p1, st0, st1, fmt, x0, y0, a);
	pre_fetch(p0, p1, st0, st1, fmt, x1, y0, b);
	pre_fetch(p0, p1, st0, st1, fmt, x0, y1, c2);
	pre_fetch(p0, p1, st0, st1, fmt, x1, y1, d);
	for (int c = 0; c < 3; c++) {
		const float top = pre_lerp((float)a[c], (float)b[c], tx);
		const float bot = pre_lerp((float)c2[c], (float)d[c], tx);
		const unsigned char u = (unsigned char)pre_lerp(top, bot, ty);

		out[c * ps + o] = pre_norm((float)u, mean[c], sd[c]);
	}
}

/*
 * im2col of the patch embedding (vision.c's unfold): px[3][S][S] ->
 * u[side*side][3*P*P], patch t row-major, each row (c, ky, kx).
 */
extern "C" __global__ void mm_im2col(const float *px, float *u, int S,
				     int P)
{
	const int side = S / P, kp = 3 * P * P;
	const long long n = (long long)side * side * kp;
	const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= n)
		return;
	const int t = (int)(i / kp), r = (int)(i % kp);
	const int c = r / (P * P), ky = (r / P) % P, kx = r % P;
	const int py = t / side, pxx = t % side;

	u[i] = px[(long long)c * S * S + (long long)(py * P + ky) * S +
		  pxx * P + kx];
}

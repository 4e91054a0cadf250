/* SPDX-License-Identifier: MIT */
/*
 * cuda_be.h - the CUDA back end of the model runtime (internal).
 *
 * The NVIDIA driver is loaded at run time: dlopen("libcuda.so.1") (the
 * environment variable MMHAL_CUDA_LIB names another file, for tests), and
 * every driver entry point used is looked up with dlsym by its versioned
 * name (cuMemAlloc_v2, ...). libmmhal has no link-time dependency on the
 * driver. The kernels (cuda_kern.cu) are compiled to PTX by nvcc when the
 * build finds the CUDA toolkit, embedded in the library and loaded with
 * cuModuleLoadData; a build without the toolkit has no back end
 * (mm_cuda_open() says "built without CUDA").
 *
 * Errors: a negative errno and a one-line message naming the driver call
 * and its CUresult, e.g. "cuda: cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (out
 * of memory)".
 *
 * Threading: one struct mm_cuda may be used from several threads; the
 * calls that use the device are serialised by its mutex (one stream).
 *
 * Numerics of the matrix products: the activations are quantized on the
 * device in the CPU's formats (Q8_0 for Q8_0/Q4_0 weights, Q8_K for Q4_K:
 * the same scales and rounding as mm_quantize_row()), the block dot
 * products are exact integer sums (dp4a), and the results differ from the
 * CPU kernels only by f32 summation order.
 */
#ifndef MM_CUDA_BE_H
#define MM_CUDA_BE_H

#include <stddef.h>
#include <stdint.h>

#include "quant.h"

struct mm_cuda;

/* 1 when the library was built with the CUDA toolkit (the kernels are
 * embedded), else 0. */
int mm_cuda_built(void);

/* The embedded PTX of the kernels: i-th of mm_cuda_ptx_count() images,
 * NUL-terminated text, its target ("sm_80", "sm_90") in *target. NULL
 * past the last (or without the toolkit). */
int mm_cuda_ptx_count(void);
const char *mm_cuda_ptx(int i, const char **target);

/*
 * mm_cuda_open() - the driver, device 0 (or MMHAL_CUDA_DEVICE), its
 * primary context, the kernels and a stream.
 * Return: 0; -ENOTSUP built without CUDA; -ENOENT no driver library;
 * -ENOSYS an entry point missing (named); -ENODEV no usable device
 * (cuInit's or the device's error named); -ENOMEM; -EIO another
 * driver error (named).
 */
int mm_cuda_open(struct mm_cuda **out, char *err, size_t errlen);
void mm_cuda_close(struct mm_cuda *cu);
/* "NVIDIA H200 (sm_90, 141 GB)" */
const char *mm_cuda_describe(const struct mm_cuda *cu);
/* compute capability major * 10 + minor */
int mm_cuda_cc(const struct mm_cuda *cu);

/* Weight types the int8 kernels multiply (Q8_0, Q4_0, Q4_K). */
int mm_cuda_type_ok(enum mm_type t);
/* Weight types the f32 GEMM multiplies (F16, F32: the encoders'). */
int mm_cuda_ftype_ok(enum mm_type t);

/* Device memory. */
int mm_cuda_alloc(struct mm_cuda *cu, size_t bytes, uint64_t *dev,
		  char *err, size_t errlen);
void mm_cuda_free(struct mm_cuda *cu, uint64_t dev);
int mm_cuda_put(struct mm_cuda *cu, uint64_t dev, const void *host,
		size_t bytes, char *err, size_t errlen);
int mm_cuda_get(struct mm_cuda *cu, void *host, uint64_t dev, size_t bytes,
		char *err, size_t errlen);

/* A weight matrix on the device: m rows of k, in file type t. */
struct mm_cuda_mat {
	enum mm_type t;
	uint64_t dev;
	int64_t m;
	float *y;	/* the product's output, n rows of m floats */
};

/*
 * Y_i[n][m_i] = X[n][k] . W_i[m_i][k]^T for nmat (1..4) matrices of the
 * same k with one input (decode: n == 1, the matrix-vector kernels; else
 * the int8 tiled GEMM with dp4a; F16/F32 weights: the f32 tiled GEMM,
 * any k, one fmaf chain per output in k order). X is copied to the
 * device, quantized there once per activation format (not for F16/F32),
 * and each Y_i copied back. k must be a multiple of 32 (256 for Q4_K)
 * when an int8 type is among the matrices.
 */
int mm_cuda_matmul_n(struct mm_cuda *cu, const struct mm_cuda_mat *mats,
		     int nmat, const float *X, int64_t k, int64_t n,
		     char *err, size_t errlen);

/* The row operations, host arrays in and out (the GPU tests use them).
 * rmsnorm: y = x / sqrt(mean(x^2) + eps) * w, rows of n.
 * rope: adjacent pairs of the first n_rot elements of each of n_heads
 *   heads of hd at position pos, angle pos * inv_freq[i].
 * softmax: each of rows rows of n, in place.
 * attn: one query (n_head x hd) over npos positions of the F16 K/V rows
 *   kh/vh (n_head_kv heads x npos x hd, each head's rows contiguous),
 *   scale 1/sqrt(hd), grouped heads, into out (n_head x hd). */
int mm_cuda_rmsnorm(struct mm_cuda *cu, const float *x, const float *w,
		    float *y, int rows, int n, float eps, char *err,
		    size_t errlen);
int mm_cuda_rope(struct mm_cuda *cu, float *x, int n_heads, int hd,
		 int n_rot, int pos, const float *inv_freq, char *err,
		 size_t errlen);
int mm_cuda_softmax(struct mm_cuda *cu, float *x, int rows, int n,
		    char *err, size_t errlen);
int mm_cuda_attn(struct mm_cuda *cu, const float *q, const uint16_t *kh,
		 const uint16_t *vh, float *out, int n_head, int n_head_kv,
		 int hd, int npos, char *err, size_t errlen);

/* Times `iters` launches of the GEMM kernel of type t (int8 types or
 * F16/F32; m x k weights
 * already on the device, n tokens) with device events; ms per launch. */
int mm_cuda_bench_gemm(struct mm_cuda *cu, enum mm_type t, uint64_t W,
		       int64_t m, int64_t k, int64_t n, int iters,
		       double *ms, char *err, size_t errlen);

/*
 * Zero copy of frames: the mapping of an mmedge buffer (mmhal_buf_map())
 * registered with cuMemHostRegister(DEVICEMAP | READ_ONLY; READ_ONLY
 * only where the device reports READ_ONLY_HOST_REGISTER_SUPPORTED) and its
 * device address (cuMemHostGetDevicePointer) in *dev; the kernels then
 * read the sensor buffer in place. addr and bytes are rounded out to
 * pages. Unregister before unmapping.
 */
int mm_cuda_host_register(struct mm_cuda *cu, void *addr, size_t bytes,
			  uint64_t *dev, char *err, size_t errlen);
int mm_cuda_host_unregister(struct mm_cuda *cu, void *addr, char *err,
			    size_t errlen);
/* Waits until the buffer's sync_file (a fence fd of mmhal_chan_queue() /
 * _feed() / _copy()) signals, before a kernel reads the frame; -1: no
 * fence. Return: 0, -ETIME after timeout_ms (< 0: no limit), -EINVAL the
 * fence reports an error, or -errno of poll(2). */
int mm_cuda_fence_wait(int fence_fd, int timeout_ms, char *err,
		       size_t errlen);

/*
 * A frame for the device preprocessing: its planes' device addresses
 * (mm_cuda_host_register() of the frame's mapping), the overview's
 * geometry as imgproc.c's mm_image_plan() gives it, and the mmproj's
 * normalization. fmt: 0 GREY, 1 RGB24, 2 NV12 (BT.601 limited range).
 */
struct mm_cuda_frame {
	int fmt;
	uint32_t w, h;
	uint64_t plane[2];
	uint64_t stride[2];
	uint32_t s;		/* image_size: the output is 3 x s x s */
	uint32_t P;		/* patch_size (im2col) */
	int same;		/* the frame is s x s: taken as is */
	uint32_t cx, cy, cw, ch;	/* content box (bilinear) */
	float xr, yr;		/* (w - 1) / cw, (h - 1) / ch, in float */
	uint8_t pad[3];		/* pad colour (LLaVA) */
	float mean[3], std[3];
};

/*
 * mm_cuda_image() - the overview image of a frame on the device
 * (imgproc.c's per-pixel conversion and bilinear rule, same rounding),
 * optionally its im2col and the patch embedding's product:
 * @pixels: NULL, or 3 x s x s floats, the normalized image (host);
 * @unfold: NULL, or (s/P)^2 x 3P^2 floats, the im2col (host);
 * @patch: NULL, or the patch weight (F16/F32, m rows of 3P^2): Y =
 *   unfold . W^T into patch->y ((s/P)^2 x m), the GEMM reading the
 *   device im2col in place.
 * Return: 0, -EINVAL a bad frame or weight, the driver's error.
 */
int mm_cuda_image(struct mm_cuda *cu, const struct mm_cuda_frame *f,
		  float *pixels, float *unfold, const struct mm_cuda_mat *patch,
		  char *err, size_t errlen);

#endif /* MM_CUDA_BE_H */

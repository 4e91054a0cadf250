/* SPDX-License-Identifier: MIT */
/*
 * quant.h - quantized tensor types and CPU kernels of the model runtime.
 *
 * Types and block layouts are ggml's (ggml-common.h), so tensors of a GGUF
 * file written by llama.cpp are used in place. See
 * shared/docs/model-format.md for the table of types.
 *
 * Threading contract:
 *  - the type functions (mm_type_*, mm_row_bytes, mm_quantize_row,
 *    mm_dequantize_row, mm_f16_*, mm_bf16_*) are pure and thread-safe;
 *  - a struct mm_ctx owns a thread pool; mm_matvec, mm_matmul and
 *    mm_parallel_for on one ctx must be called from one thread at a time
 *    (they are not reentrant, and must not be called from inside an
 *    mm_parallel_for callback). Different ctxs are independent.
 *
 * Kernel choice: CPU features detected at run time (cpuid on x86,
 * getauxval(AT_HWCAP) on arm64); the environment variable MMHAL_KERNELS
 * (scalar | avx2 | avx512vnni | neon) forces a set, if the CPU has it.
 *
 * Numerics: matvec/matmul quantize the f32 activations on the fly (Q8_0 for
 * Q4_0/Q8_0 weights, a Q8_1-like format with block sums for Q4_1, Q8_K for
 * Q4_K/Q6_K); F32/F16/BF16 weights use f32 arithmetic. All kernel sets
 * compute the same integer block dot products; they differ from the scalar
 * reference only by f32 summation order (relative error ~1e-5 of the sum
 * of |w*x|).
 */
#ifndef MM_QUANT_H
#define MM_QUANT_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ggml type ids */
enum mm_type {
	MM_TYPE_F32 = 0,
	MM_TYPE_F16 = 1,
	MM_TYPE_Q4_0 = 2,
	MM_TYPE_Q4_1 = 3,
	MM_TYPE_Q5_0 = 6,
	MM_TYPE_Q8_0 = 8,
	MM_TYPE_Q4_K = 12,
	MM_TYPE_Q6_K = 14,
	MM_TYPE_Q8_K = 15,
	MM_TYPE_BF16 = 30,
	/* Not a file type (mm_type_valid() is 0): Q4_0 weights rearranged
	 * in place by mm_repack() for the x86 kernels. Each full group of
	 * 8 rows holds, per 32-element block, the 8 rows' f16 scales, then
	 * their nibble bytes (byte j holds elements j and j + 16) as 4
	 * vectors of 32 bytes: vector t holds bytes 4t..4t+3 of rows 0-7 in
	 * row order (144 bytes). So each 32-bit lane of a vector is one row.
	 * Rows past the last full group stay as Q4_0 rows. */
	MM_TYPE_Q4_0_R8 = 31,
	/* Not a file type either: Q5_0 weights rearranged the same way.
	 * Per full group of 8 rows and 32-element block: the 8 rows' f16
	 * scales, 32 bytes of high bits, then the nibbles as in Q4_0_R8
	 * (176 bytes). The high bits are planes in the nibbles' byte order:
	 * bit 4 of an element is bit 2t (elements 4t..4t+3) or 2t + 1
	 * (16 + 4t..) of byte 4r + (element % 4) for row r. */
	MM_TYPE_Q5_0_R8 = 32,
	/* Not a file type either: Q8_0 weights rearranged the same way
	 * (AVX2 kernel set). Per full group of 8 rows and 32-element block:
	 * the 8 rows' f16 scales, then their 32 quants in row order 0-7
	 * (272 bytes), so a group is read as one stream. */
	MM_TYPE_Q8_0_R8 = 33,
	/* Not a file type either: Q4_K weights rearranged the same way.
	 * Per full group of 8 rows and 256-element super-block (1152
	 * bytes): the 8 rows' f16 d, their f16 dmin, their 12 packed scale
	 * bytes as 3 vectors of 32 bytes (vector c: bytes 4c..4c+3 of rows
	 * 0-7), then their 128 nibble bytes as 32 vectors (vector t: bytes
	 * 4t..4t+3 of rows 0-7). Rows past the last full group stay Q4_K. */
	MM_TYPE_Q4_K_R8 = 34,
};

#define MM_QK 32	/* elements per Q4_0/Q4_1/Q5_0/Q8_0 block */
#define MM_QK_K 256	/* elements per K-quant super-block */
#define MM_K_SCALE_SIZE 12

/* Block layouts, byte for byte ggml's. f16 fields are raw IEEE halves. */
struct mm_block_q4_0 {
	uint16_t d;
	uint8_t qs[MM_QK / 2];	/* x[j] = low nibble of qs[j], x[j+16] = high */
};
static_assert(sizeof(struct mm_block_q4_0) == 18, "q4_0 block");

struct mm_block_q4_1 {
	uint16_t d;
	uint16_t m;
	uint8_t qs[MM_QK / 2];
};
static_assert(sizeof(struct mm_block_q4_1) == 20, "q4_1 block");

struct mm_block_q5_0 {
	uint16_t d;
	uint8_t qh[4];		/* bit j: bit 4 of x[j] (little-endian u32) */
	uint8_t qs[MM_QK / 2];	/* low 4 bits, as Q4_0; x = (q - 16) * d */
};
static_assert(sizeof(struct mm_block_q5_0) == 22, "q5_0 block");

struct mm_block_q8_0 {
	uint16_t d;
	int8_t qs[MM_QK];
};
static_assert(sizeof(struct mm_block_q8_0) == 34, "q8_0 block");

struct mm_block_q4_k {
	uint16_t d;
	uint16_t dmin;
	uint8_t scales[MM_K_SCALE_SIZE];	/* 8 x (6-bit scale, 6-bit min) */
	uint8_t qs[MM_QK_K / 2];
};
static_assert(sizeof(struct mm_block_q4_k) == 144, "q4_K block");

struct mm_block_q6_k {
	uint8_t ql[MM_QK_K / 2];
	uint8_t qh[MM_QK_K / 4];
	int8_t scales[MM_QK_K / 16];
	uint16_t d;
};
static_assert(sizeof(struct mm_block_q6_k) == 210, "q6_K block");

struct mm_block_q8_k {
	float d;
	int8_t qs[MM_QK_K];
	int16_t bsums[MM_QK_K / 16];
};
static_assert(sizeof(struct mm_block_q8_k) == 292, "q8_K block");

/* Activation format for Q4_1 weights (internal, not a file type): Q8_0
 * with f32 scale and s = d * sum(qs). */
struct mm_block_q8_1 {
	float d;
	float s;
	int8_t qs[MM_QK];
};
static_assert(sizeof(struct mm_block_q8_1) == 40, "q8_1 block");

/* 1 for the weight types we support (F32, F16, BF16, Q4_0, Q4_1, Q8_0,
 * Q4_K, Q6_K); 0 otherwise, Q8_K included (activations only). */
int mm_type_valid(uint32_t t);
/* The GGUF type table's names (gguf.c: "q4_0", "q4_k", ...), the
 * load-time layouts' own ("q4_k_r8"); "?" for an unknown id. */
const char *mm_type_name(enum mm_type t);
/* 1, 32 or 256; 0 for an unknown id. */
size_t mm_type_block_elems(enum mm_type t);
size_t mm_type_block_bytes(enum mm_type t);
/* Bytes of a row of n elements; n must be a multiple of the block size
 * (returns 0 otherwise, or for an unknown type). */
size_t mm_row_bytes(enum mm_type t, int64_t n);

/*
 * Reference quantization of one row of n floats (n a multiple of the block
 * size), like ggml's quantize_row_*_ref:
 *  Q8_0  d = amax/127, q = round(x/d)
 *  Q4_0  d = max/-8 (max = the element of largest |x|, signed),
 *        q = min(15, (int8)(x/d + 8.5))
 *  Q4_1  d = (max-min)/15, m = min, q = min(15, (int8)((x-min)/d + 0.5))
 *  Q4_K  ggml's make_qkx2_quants search per 32-element sub-block (weights
 *        |x| + rms, 20 steps), 6-bit scales/mins against f16 d/dmin
 *  Q6_K  ggml's make_qx_quants search (rmse_type 1) per 16-element
 *        sub-block, int8 scales against f16 d
 *  Q8_K  d = max/-127 (f32), bsums
 *  F16   round to nearest even; BF16 round to nearest even (NaN kept quiet)
 *  F32   copy
 */
void mm_quantize_row(enum mm_type t, const float *x, void *y, int64_t n);
void mm_dequantize_row(enum mm_type t, const void *x, float *y, int64_t n);

float mm_f16_to_f32(uint16_t h);
uint16_t mm_f32_to_f16(float f);
float mm_bf16_to_f32(uint16_t h);
uint16_t mm_f32_to_bf16(float f);

struct mm_ctx;	/* kernel set + thread pool */

/* nthreads <= 0: the number of online CPUs. Returns 0 or -errno. */
int mm_ctx_create(int nthreads, struct mm_ctx **out);
void mm_ctx_destroy(struct mm_ctx *ctx);
/* "scalar", "avx2", "avx512vnni" or "neon-dotprod" */
const char *mm_ctx_kernels(const struct mm_ctx *ctx);
int mm_ctx_threads(const struct mm_ctx *ctx);

/* y[m] = W[m][k] . x[k] (decode). W rows are mm_row_bytes(t, k) apart. */
void mm_matvec(struct mm_ctx *ctx, enum mm_type t, const void *W,
	       const float *x, float *y, int64_t m, int64_t k);
/* One matrix of mm_matvec_n(): y[m] = W[m][k] . x[k]. */
struct mm_mv {
	enum mm_type t;
	const void *W;
	float *y;
	int64_t m;
};
#define MM_MV_MAX 4
/* nmv (1..MM_MV_MAX) matrices of any types with the same k and input x
 * (attention Q/K/V, FFN gate/up): x is quantized once per activation
 * format, and all rows run as one job (one thread-pool hand-off). */
void mm_matvec_n(struct mm_ctx *ctx, const struct mm_mv *mv, int nmv,
		 const float *x, int64_t k);
/* Y[n][m] = X[n][k] . W[m][k]^T (prefill). */
void mm_matmul(struct mm_ctx *ctx, enum mm_type t, const void *W,
	       const float *X, float *Y, int64_t m, int64_t k, int64_t n);
/* nmv (1..MM_MV_MAX) matrices of one type with the same k and input X,
 * as one job: X is quantized once, and each matrix writes its own
 * Y[n][m] (mv[i].y). */
void mm_matmul_n(struct mm_ctx *ctx, const struct mm_mv *mv, int nmv,
		 const float *X, int64_t k, int64_t n);
/*
 * The layout ctx's kernels multiply fastest for a matrix of type t with m
 * rows of k (MM_TYPE_Q4_0_R8 for Q4_0, MM_TYPE_Q5_0_R8 for Q5_0 and
 * MM_TYPE_Q4_K_R8 for Q4_K with at least 8 rows on x86; MM_TYPE_Q8_0_R8
 * for Q8_0 with the AVX2 set), or t
 * itself. A matrix in that layout is used by mm_matvec*()/mm_matmul*()
 * of this kernel set only; its rows are read by mm_layout_row(), not
 * mm_dequantize_row().
 */
enum mm_type mm_repack_type(const struct mm_ctx *ctx, enum mm_type t,
			    int64_t m, int64_t k);
/* Rearranges W (m rows of k, type from) in place into layout to, as
 * given by mm_repack_type() (from == to: nothing to do). Returns 0,
 * -EINVAL for another pair or shape, -ENOMEM. */
int mm_repack(enum mm_type from, enum mm_type to, void *W, int64_t m,
	      int64_t k);
/* Row r (0 <= r < m) of W, m rows of k in type t (a file type or a
 * layout from mm_repack()), as k floats in y: the values
 * mm_dequantize_row() gives for the row as stored in the file. */
void mm_layout_row(enum mm_type t, const void *W, int64_t m, int64_t k,
		   int64_t r, float *y);

/* Splits [0, n) into at most one contiguous range per thread (nthreads
 * ranges at most) and runs fn(begin, end, arg) once for each, on the
 * caller's thread or a worker (the caller takes the ranges no worker
 * claimed, so a thread may run more than one); returns when all are
 * done. */
void mm_parallel_for(struct mm_ctx *ctx, int64_t n,
		     void (*fn)(int64_t begin, int64_t end, void *arg),
		     void *arg);

#ifdef __cplusplus
}
#endif

#endif /* MM_QUANT_H */

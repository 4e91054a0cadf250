/* SPDX-License-Identifier: MIT */
/*
 * quant_kern.h - internal interface between quant.c (types, drivers) and
 * the per-ISA kernel files kern_*.c.
 *
 * A kernel set provides, per weight type, a multi-row dot product (gemv)
 * and optionally a register-tiled block (gemm) with the X row form it
 * reads (xprep). Both take the activations already quantized to the
 * type's activation format (mm_act_type()):
 *
 *   gemv:  y[r] = dot(W row r, xq)                 r < nr
 *   xprep: xp = X row xq in the gemm's own form (at most xprep_bytes(k)
 *          bytes), made once per row for all the gemm calls of a product
 *   gemm:  Y[j*ldy + r] = dot(W row r, X row j)     r < mr, j < nc
 *
 * W rows are ws bytes apart, X rows (prepared) xs bytes apart, mr <=
 * MM_GEMM_MC (nc is not bounded: the kernel chunks X by MM_GEMM_NC);
 * scratch is MM_GEMM_SCRATCH bytes (64-byte aligned) owned by the calling
 * thread. A set with a gemm for a type has its xprep; a NULL gemm falls
 * back to gemv per X row.
 */
#ifndef MM_QUANT_KERN_H
#define MM_QUANT_KERN_H

#include "quant.h"

typedef void (*mm_gemv_fn)(int64_t k, const void *w, size_t ws,
			   const void *xq, float *y, int64_t nr);
typedef void (*mm_xprep_fn)(int64_t k, const void *xq, void *xp);
typedef void (*mm_gemm_fn)(int64_t k, const void *w, size_t ws,
			   const void *xp, size_t xs, float *Y, size_t ldy,
			   int64_t mr, int64_t nc, void *scratch);

#define MM_GEMM_MC 64			/* W rows per gemm call, at most */
#define MM_GEMM_NC 72			/* X rows per chunk */
#define MM_GEMM_SCRATCH (80 << 10)	/* per-thread gemm scratch bytes */

#define MM_NTYPES 35

/* Blocks per k panel of a gemm: panels of equal size, at most max blocks
 * (k = 576, max 16: 9 + 9, not 16 + 2). */
static inline int64_t mm_gemm_panel_blocks(int64_t nb, int64_t max)
{
	const int64_t npan = (nb + max - 1) / max;

	return (nb + npan - 1) / npan;
}

struct mm_kernels {
	const char *name;
	mm_gemv_fn gemv[MM_NTYPES];
	mm_gemm_fn gemm[MM_NTYPES];
	mm_xprep_fn xprep[MM_NTYPES];
	size_t (*xprep_bytes)(int64_t k);
};

/* Internal activation type (Q8_1 is not a ggml file type here). */
#define MM_ACT_Q8_1 ((enum mm_type)100)

enum mm_type mm_act_type(enum mm_type wt);
size_t mm_act_row_bytes(enum mm_type wt, int64_t k);
void mm_quantize_act(enum mm_type wt, const float *x, void *xq, int64_t k);

/*
 * An activation row for Q4_0 and Q5_0 weights is k / 32 Q8_0 blocks,
 * padded to 4 bytes, then one float per block: 8 * sum(qs) (exact). A
 * kernel that uses the nibbles q unsigned (0..15) takes the q - 8 offset
 * out of a block with dw * dx * that float (Q5_0: q - 16, twice it), so a
 * 4-row decode kernel pays one FMA per block for it instead of a
 * subtraction per row.
 */
static inline size_t mm_q4_0_act_sums_off(int64_t k)
{
	return ((size_t)(k / MM_QK) * sizeof(struct mm_block_q8_0) + 3) &
	       ~(size_t)3;
}


static inline const float *mm_q4_0_act_sums(const void *xq, int64_t k)
{
	return (const float *)((const uint8_t *)xq + mm_q4_0_act_sums_off(k));
}

/* 6-bit scale/min j of a Q4_K block (ggml's get_scale_min_k4). */
static inline void mm_q4k_scale_min(int j, const uint8_t *q, uint8_t *d,
				    uint8_t *m)
{
	if (j < 4) {
		*d = q[j] & 63;
		*m = q[j + 4] & 63;
	} else {
		*d = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
		*m = (q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4);
	}
}

/* The file type a weight layout is made from (Q4_0_R8: Q4_0, Q5_0_R8:
 * Q5_0, Q8_0_R8: Q8_0, Q4_K_R8: Q4_K); a file type itself. Activations,
 * block sizes and unpacking follow it. */
static inline enum mm_type mm_stored_type(enum mm_type t)
{
	return t == MM_TYPE_Q4_0_R8 ? MM_TYPE_Q4_0 :
	       t == MM_TYPE_Q5_0_R8 ? MM_TYPE_Q5_0 :
	       t == MM_TYPE_Q8_0_R8 ? MM_TYPE_Q8_0 :
	       t == MM_TYPE_Q4_K_R8 ? MM_TYPE_Q4_K : t;
}

/* Activation rows for wt carry the sums above (Q4_0, Q5_0, their layouts) */
static inline int mm_act_has_sums(enum mm_type wt)
{
	wt = mm_stored_type(wt);
	return wt == MM_TYPE_Q4_0 || wt == MM_TYPE_Q5_0;
}

/* Value j of a Q5_0 block, q in 0..31 (x = (q - 16) * d): the nibble of
 * qs[j % 16] (low for j < 16) and bit j of the little-endian qh word. */
static inline int mm_q5_0_q(const struct mm_block_q5_0 *b, int j)
{
	const uint32_t qh = (uint32_t)b->qh[0] | (uint32_t)b->qh[1] << 8 |
			    (uint32_t)b->qh[2] << 16 | (uint32_t)b->qh[3] << 24;

	return (j < 16 ? b->qs[j] & 15 : b->qs[j - 16] >> 4) | (int)(qh >> j & 1) << 4;
}

/*
 * A group-block of an 8-row layout (quant.h): the 8 rows' f16 scales at
 * 0, Q5_0_R8's high-bit planes (32 bytes) at MM_R8_PLANES, Q4_K_R8's
 * dmin at MM_R8_KDMIN and its packed 6-bit scales (96 bytes) at
 * MM_R8_KSCALES,
 * the quants at mm_r8_qbase(). The SIMD kernels and mm_repack() read
 * these.
 */
#define MM_R8_PLANES 16
#define MM_R8_KDMIN 16
#define MM_R8_KSCALES 32
static inline size_t mm_r8_qbase(enum mm_type t)
{
	return t == MM_TYPE_Q5_0_R8 ? MM_R8_PLANES + 32 :
	       t == MM_TYPE_Q4_K_R8 ? MM_R8_KSCALES + 96 : 16;
}

/*
 * Where row r (0..7) of a Q4_0_R8, Q5_0_R8 or Q4_K_R8 group-block keeps
 * its file block's parts (quant.h). Nibble byte j of its qs (Q4_0: 0..15,
 * holding elements j and j + 16; Q4_K: 0..127) lies at this offset from
 * the quants: the 8 rows' bytes 4t..4t+3 make the 32 bytes at 32 * t,
 * row r's at 4 * r. Q4_K's scale byte j (0..11) lies there from
 * MM_R8_KSCALES.
 */
static inline int mm_r8_qbyte(int r, int j)
{
	return 32 * (j / 4) + 4 * r + j % 4;
}

/*
 * Q5_0_R8: bit 4 of row r's element e (0..31), bit e of its qh word, is
 * bit mm_r8_hbit(e) of byte 4 * r + e % 4 of the 32 plane bytes: the byte
 * that holds its nibble in a 32-byte quant vector, and one bit per
 * vector (elements 4t..4t+3: bit 2t; 16 + 4t..: bit 2t + 1).
 */
static inline int mm_r8_hbit(int e)
{
	return 2 * (e % 16 / 4) + e / 16;
}

extern const struct mm_kernels mm_kernels_scalar;
#if defined(__x86_64__)
extern const struct mm_kernels mm_kernels_avx2;
extern const struct mm_kernels mm_kernels_avx512vnni;
#endif
#if defined(__aarch64__)
extern const struct mm_kernels mm_kernels_neon;
extern const struct mm_kernels mm_kernels_neon_i8mm;
#endif

/* Scalar single-row dots (used by other sets for types they lack). */
void mm_scalar_gemv_any(enum mm_type t, int64_t k, const void *w, size_t ws,
			const void *xq, float *y, int64_t nr);

void mm_scalar_gemv_f32(int64_t, const void *, size_t, const void *, float *, int64_t);
void mm_scalar_gemv_f16(int64_t, const void *, size_t, const void *, float *, int64_t);
void mm_scalar_gemv_bf16(int64_t, const void *, size_t, const void *, float *, int64_t);
void mm_scalar_gemv_q8_0(int64_t, const void *, size_t, const void *, float *, int64_t);
void mm_scalar_gemv_q4_0(int64_t, const void *, size_t, const void *, float *, int64_t);
void mm_scalar_gemv_q4_1(int64_t, const void *, size_t, const void *, float *, int64_t);
void mm_scalar_gemv_q5_0(int64_t, const void *, size_t, const void *, float *, int64_t);
void mm_scalar_gemv_q4_k(int64_t, const void *, size_t, const void *, float *, int64_t);
void mm_scalar_gemv_q6_k(int64_t, const void *, size_t, const void *, float *, int64_t);

/* Selects a kernel set by name ("scalar", "avx2", "avx512vnni", "neon",
 * "neon-i8mm"),
 * NULL name = best available. Returns NULL if the CPU lacks it. */
const struct mm_kernels *mm_kernels_select(const char *name);
/* 1 if the named set can run on this CPU. */
int mm_kernels_available(const char *name);

#define MM_MIN(a, b) ((a) < (b) ? (a) : (b))
#define MM_MAX(a, b) ((a) > (b) ? (a) : (b))

#if defined(__x86_64__)
/* F16C, read with cpuid (quant.c): __builtin_cpu_supports() has no
 * "f16c" in clang 14. Callers check "avx" too. */
int mm_cpu_f16c(void);
#endif

/* A CPU context: its kernel set, thread pool and the scratch that holds
 * quantized activations (matmul.c; repack.c reads the kernel set). */
struct mm_ctx {
	const struct mm_kernels *kern;
	struct mm_pool *pool;
	void *scratch;		/* quantized activations */
	size_t scratch_size;
};

/* Creates a ctx with an explicit kernel set (tests). */
int mm_ctx_create_with(int nthreads, const char *kernels,
		       struct mm_ctx **out);

#endif

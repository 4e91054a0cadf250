/* SPDX-License-Identifier: MIT */
/*
 * encoder.h - the operations the mmproj encoders (vision.c, audio.c) are
 * made of, on quant.h's kernels: linear layers with optional bias on
 * weights of any file type, LayerNorm, RMS norm, the FFN activations,
 * bidirectional multi-head attention and the pre-LN transformer block.
 * A new encoder is written from these. In-library interface.
 *
 * Activations are row-major [row][channel] f32. A linear layer's weight is
 * ggml's {in, out}: out rows of in, multiplied in the file's type by
 * mm_matmul() (Q8_0/K-quant weights quantize the f32 activations on the
 * fly; F32/F16/BF16 in f32 arithmetic). Norms, softmax, activations and
 * residuals are f32 and split by rows over the context's thread pool
 * (each row's arithmetic is the same whatever the thread count).
 *
 * Attention: per head, S = (Q / sqrt(d)) K^T, then P = exp(S - row max)
 * and O = P V times 1 / (row sum of P) (the normalization is applied to
 * O's rows, which are linear in P's), the products through mm_matmul(),
 * the softmax in f32 by rows over the pool. Two paths, chosen by the
 * block's Q/K/V weight types:
 *  - F32/F16/BF16 weights: f32 products (K and V^T gathered per head as
 *    F32 "weights"), so those files stay within 1e-5 of a double
 *    reference (vision_test/audio_test measure 1e-7 to 6e-7);
 *  - quantized weights (head size d a multiple of 32): the int8 GEMM. K
 *    of each head is a Q8_0 matrix (positions x d) and Q is quantized on
 *    the fly; the softmax writes each row of P straight to Q8_0 (blocks
 *    along positions, padded to 32 with zeros), which is the weight of
 *    O^T = V^T P^T with V^T (d rows) as the activations. This adds 8-bit
 *    rounding of Q, K, P and V to the weights' own: on the tests' 256-wide
 *    towers (d = 64) the error against the double reference goes from
 *    1.05e-2 / 1.13e-2 (Q8_0 idefics3 / mlp) to 1.47e-2 / 1.19e-2 and
 *    from 1.83e-2 / 1.55e-2 to 1.71e-2 / 1.74e-2 (Q4_K), audio within
 *    the same range (limit 5e-2).
 * The elementwise forms (GELU tanh = x sigmoid(2u), quick-GELU, SiLU,
 * GELU erf by Abramowitz-Stegun 7.1.26, |error of erf| <= 1.5e-7) and the
 * softmax's exp run on 8 lanes with the AVX2 kernel sets (exp relative
 * error ~2e-7), libm elsewhere; biases and residual adds by rows over the
 * pool.
 *
 * Threading: a struct mm_enc is used by one thread at a time (its mm_ctx
 * is not reentrant).
 */
#ifndef MM_ENCODER_H
#define MM_ENCODER_H

#include <stddef.h>
#include <stdint.h>

#include "mmproj.h"
#include "quant.h"

#ifdef __cplusplus
extern "C" {
#endif

struct mm_ctx;
struct mm_calib;
struct mm_enc;

/*
 * A device the weight products of the dynamic mode may run on (the CUDA
 * back end, cuda_enc.c). matmul_n: Y_i[n][m_i] = X[n][k] . W_i^T for
 * mv[0..nmv) (the host weights of the file, looked up by address): 1 when
 * the device computed every Y_i, 0 when the caller runs them on the CPU
 * (a weight not on the device, or the device failed). Attention's
 * products, the calibration modes, norms and activations stay on the CPU.
 */
struct mm_enc_dev {
	int (*matmul_n)(const struct mm_enc_dev *d, const struct mm_mv *mv,
			int nmv, const float *X, int64_t k, int64_t n);
};

/*
 * The calibration's hooks (calib.c fills them: mm_cal_enc_hooks). With
 * cal_mode other than MM_CAL_DYNAMIC every weight product goes through
 * linear(), named activations are shown to observe() (MM_CAL_OBSERVE),
 * and attention's int8 products (MM_CAL_STATIC) take their fixed scales
 * from scale(), quantize rows with quant_row() and multiply with
 * matmul_q8(). The encoder knows the calibration only through these.
 */
struct mm_enc_cal_hooks {
	int (*linear)(struct mm_enc *s, const struct mm_mmproj_w *w,
		      const float *X, float *Y, int64_t m, int64_t k,
		      int64_t n);
	void (*observe)(struct mm_calib *c, const char *name, const float *x,
			size_t n, float scale);
	float (*scale)(const struct mm_calib *c, const char *name);
	void (*quant_row)(const float *x, float s, void *y, int64_t k);
	int (*matmul_q8)(struct mm_enc *s, const void *W, const float *X,
			 float sx, float *Y, int64_t m, int64_t k, int64_t n);
};

/* The encoder's modes (cal_mode); calib.h describes each. */
enum mm_cal_mode {
	MM_CAL_DYNAMIC = 0,
	MM_CAL_FLOAT,
	MM_CAL_OBSERVE,
	MM_CAL_STATIC,
};

struct mm_enc {
	struct mm_ctx *ctx;
	float *tmp;	/* 2 * wide floats: bias / norm vectors */
	int64_t wide;
	int simd;	/* 1: the kernel set has AVX2/FMA (x86-64); 2: and
			 * AVX-512 (the f32 GEMM's 8 x 48 tile) */
	void *att;	/* attention work memory, att_bytes */
	size_t att_bytes;
	/* calibration (calib.h): cal_mode 0 (MM_CAL_DYNAMIC) is the path
	 * described above; the other modes route every matrix product
	 * through calib.c. cal_err keeps the first failure of a void op. */
	struct mm_calib *cal;
	const struct mm_enc_cal_hooks *cal_hooks;	/* set with cal */
	int cal_mode;
	int cal_err;
	char cal_blk[48];	/* the running block's name prefix ("v.blk.3.") */
	float *cal_fw;		/* a dequantized weight (FLOAT, OBSERVE) */
	size_t cal_fw_n;
	const struct mm_enc_dev *dev;	/* NULL: the CPU only */
};

/*
 * Creates the thread pool (n_threads <= 0: online CPUs) and the scratch
 * for vectors of up to wide floats. what names the encoder in messages.
 * Returns 0 or -ENOMEM / -errno with err set.
 */
int mm_enc_init(struct mm_enc *s, int n_threads, int64_t wide,
		const char *what, char *err, size_t errlen);
void mm_enc_fini(struct mm_enc *s);

/* A 1-D weight (bias, norm) as n floats; zeros when absent (name NULL). */
void mm_enc_vec(const struct mm_mmproj_w *w, float *y, int64_t n);
/* Row r of a float-typed 2-D weight {n, rows} (embeddings) as n floats. */
void mm_enc_row(const struct mm_mmproj_w *w, int64_t r, float *y, int64_t n);

/* Y[n][m] += b[m] for a present bias b (m <= wide). */
void mm_enc_bias(struct mm_enc *s, const struct mm_mmproj_w *b, float *Y,
		 int64_t n, int64_t m);
/*
 * Y[n][m] = X[n][k] . W[m][k]^T, as mm_matmul(): F32, F16 and BF16
 * weights (n > 1, x86 kernel sets) by a register-tiled f32 GEMM here, W
 * panels converted to f32 (exactly) once per 96 rows of X, k summed in
 * order by chunks of 32, the chunks' sums added in order: with the
 * AVX-512 kernel set (simd 2) 8 X rows x 48 outputs per tile (24 zmm
 * accumulators), the panel transposed 16 x 16 in registers; with AVX2
 * (simd 1, or MMHAL_ENC_GEMM=avx2 in the environment at mm_enc_init())
 * 6 x 16. Both run the same operations per output, so they agree bit
 * for bit. Other types, and simd 0, by mm_matmul().
 */
void mm_enc_matmul(struct mm_enc *s, enum mm_type t, const void *W,
		   const float *X, float *Y, int64_t m, int64_t k, int64_t n);
/* Y[n][m] = X[n][k] . W^T for the weight w seen as m rows of k (a
 * convolution's weight after im2col): mm_enc_matmul() in the dynamic mode,
 * mm_cal_linear() in the calibration modes. */
void mm_enc_matmul_w(struct mm_enc *s, const struct mm_mmproj_w *w,
		     const float *X, float *Y, int64_t m, int64_t k, int64_t n);
/* Y[n][m] = X[n][k] . W^T (+ b): W {k, m}, b {m} or NULL/absent; by
 * mm_enc_matmul_w(). */
void mm_enc_linear(struct mm_enc *s, const struct mm_mmproj_w *w,
		   const struct mm_mmproj_w *b, const float *X, float *Y,
		   int64_t n);
/* Y = (X - mean) / sqrt(var + eps) * g + b over rows of e (g, b absent:
 * 1, 0). Y may be X. */
void mm_enc_layernorm(struct mm_enc *s, const struct mm_mmproj_w *g,
		      const struct mm_mmproj_w *b, const float *X, float *Y,
		      int64_t n, int64_t e, float eps);
/* Y = X / sqrt(mean(X^2) + eps) * g over rows of e (g absent: 1). */
void mm_enc_rmsnorm(struct mm_enc *s, const struct mm_mmproj_w *g,
		    const float *X, float *Y, int64_t n, int64_t e, float eps);
/* x[i] = act(x[i]) for n floats. */
void mm_enc_act(struct mm_enc *s, enum mm_mmproj_act act, float *x, int64_t n);
/* One float through an activation (the elementwise rule of mm_enc_act). */
float mm_enc_act1(enum mm_mmproj_act act, float a);

/*
 * O[n][e] = multi-head attention of Q, K, V [n][e] (n_head heads of
 * e / n_head), no mask. int8: run the two products on the int8 kernels
 * (if e / n_head is a multiple of 32; see above). Returns 0 or -ENOMEM.
 * Calibration modes: FLOAT/OBSERVE take the f32 path (OBSERVE adds the
 * operands to the points s->cal_blk + "attn.q" / "k" / "p" / "v");
 * STATIC takes the int8 path with those points' per-tensor scales (-ENOENT
 * when the calibration lacks one).
 */
int mm_enc_attention(struct mm_enc *s, const float *Q, const float *K,
		     const float *V, float *O, int64_t n, int64_t e,
		     int64_t n_head, int int8);

/* Work buffers of mm_enc_block(): h, q, k, v of n * e floats, big of
 * n * f floats. */
struct mm_enc_bufs {
	float *h, *q, *k, *v, *big;
};

/*
 * One pre-LN block on x[n][e]: x += o(attn(LN1(x))); x += down(act(up(
 * LN2(x)))). Returns 0 or -ENOMEM.
 */
int mm_enc_block(struct mm_enc *s, const struct mm_mmproj_block *b, float *x,
		 int64_t n, int64_t e, int64_t f, int64_t n_head,
		 enum mm_mmproj_act act, float eps,
		 const struct mm_enc_bufs *w);

#ifdef __cplusplus
}
#endif

#endif /* MM_ENCODER_H */

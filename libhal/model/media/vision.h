/* SPDX-License-Identifier: MIT */
/*
 * vision.h - the vision encoder of an mmproj on the CPU: a SigLIP/CLIP ViT
 * (patch embedding as a GEMM over unfolded patches, position embeddings,
 * optional class token and pre-LN, pre-LN blocks with bidirectional
 * multi-head attention and a GELU/quick-GELU/SiLU FFN, optional post-LN)
 * and its projector: idefics3 (pixel shuffle by scale_factor, then
 * mm.model.fc) or mlp (mm.0, GELU, mm.2; class token dropped), as
 * llama.cpp's clip.cpp builds them. In-library interface (not installed).
 *
 * Weights are multiplied in their file type by quant.h's kernels (Q8_0 and
 * K-quant weights quantize the f32 activations on the fly); everything
 * else (norms, softmax, activations, residuals) is f32.
 *
 * Threading: mm_vision_encode() creates its own thread pool of n_threads
 * (<= 0: online CPUs) and only reads the mmproj, so several calls may run
 * at once on one loaded mmproj.
 */
#ifndef MM_VISION_H
#define MM_VISION_H

#include <stddef.h>

#include "mmproj.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Embeddings one image gives (0 when p has no vision encoder). */
MM_MODEL_API size_t mm_vision_n_tokens(const struct mm_mmproj *p);
/* Width of each embedding (the projector's output; 0 without vision). */
MM_MODEL_API size_t mm_vision_n_embd_out(const struct mm_mmproj *p);
/* Floats of input: 3 * image_size^2 (0 without vision). */
MM_MODEL_API size_t mm_vision_n_pixels(const struct mm_mmproj *p);

/*
 * pixels: n_pixels floats, normalized ((x - mean) / std), planar CHW
 * (channel c, row y, column x at c * S * S + y * S + x, S = image_size).
 * out: n_out floats, n_tokens rows of n_embd_out, token t = the row-major
 * position of its (merged) patch.
 * Returns 0, -ENOENT (no vision encoder), -EINVAL (a size does not match
 * or a NULL pointer), -ENOMEM; err receives one line.
 */
MM_MODEL_API int mm_vision_encode(const struct mm_mmproj *p,
				  const float *pixels, size_t n_pixels,
				  float *out, size_t n_out, int n_threads,
				  char *err, size_t errlen);

/*
 * mm_vision_encode() in a calibration mode (calib.h's enum mm_cal_mode;
 * 0 with cal NULL is mm_vision_encode()). -ENOENT also when a STATIC
 * calibration lacks a point the encoder reaches.
 */
struct mm_calib;
MM_MODEL_API int mm_vision_encode_cal(const struct mm_mmproj *p,
				      struct mm_calib *cal, int mode,
				      const float *pixels, size_t n_pixels,
				      float *out, size_t n_out, int n_threads,
				      char *err, size_t errlen);
/* mm_vision_encode_cal() with the weight products of the dynamic mode
 * offered to a device first (encoder.h's struct mm_enc_dev; NULL: the
 * CPU): the CUDA back end of mmhal_mmproj_load(). */
struct mm_enc_dev;
MM_MODEL_API int mm_vision_encode_dev(const struct mm_mmproj *p,
				      struct mm_calib *cal, int mode,
				      const struct mm_enc_dev *dev,
				      const float *pixels, size_t n_pixels,
				      float *out, size_t n_out, int n_threads,
				      char *err, size_t errlen);
/* The dynamic mode from the patch embedding's product pe (n_patches x
 * n_embd, before its bias) computed elsewhere (the CUDA back end's
 * device preprocessing, cuda_enc.h): the rest as mm_vision_encode_dev(). */
MM_MODEL_API int mm_vision_encode_pe(const struct mm_mmproj *p,
				     const struct mm_enc_dev *dev,
				     const float *pe, float *out,
				     size_t n_out, int n_threads, char *err,
				     size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* MM_VISION_H */

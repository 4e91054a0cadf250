/* SPDX-License-Identifier: MIT */
/*
 * ref_mm.h - naive double-precision references of the mmproj's encoders
 * and their inputs, for tests: a different code path from vision.c,
 * audio.c and imgproc.c (weights dequantized whole, plain loops, the conv
 * read straight from its input, a direct DFT, the frame converted to RGB
 * whole before it is resized).
 */
#ifndef REF_MM_H
#define REF_MM_H

#include <stddef.h>
#include <stdint.h>

#include "mmproj.h"

/*
 * Vision tower + projector: px is 3 x S x S normalized planar CHW floats;
 * returns n_tokens x n_out doubles (malloc'd).
 */
double *ref_mm_vision(const struct mm_mmproj_vision *v, const float *px);

/*
 * The overview image of a frame (imgproc.h's rules: idefics3 stretched
 * bilinear, mlp padded to square, an S x S frame as is), normalized, into
 * out (3 x S x S floats). fmt is a V4L2 fourcc (GREY, RGB3, NV12); planes
 * and strides as struct mm_image. Returns 0 or -EINVAL.
 */
int ref_mm_image(const struct mm_mmproj_vision *v, uint32_t fmt, uint32_t w,
		 uint32_t h, const uint8_t *const plane[2],
		 const size_t stride[2], float *out);

/*
 * Log-mel frames of n samples, frame-major n_frames x n_mel (malloc'd):
 * reflection before the start, zeros past the end. exact 0: the latency
 * framing of audio.h (ceil(n / 160) frames, no padding to 30 s); exact 1:
 * mtmd's (the input zero-padded to at least 31 s, (N - 400) / 160 + 1
 * frames, normalized to the maximum over all of them, whole 3000-frame
 * chunks kept).
 */
double *ref_mm_mel(int n_mel, const int16_t *pcm, size_t n, int exact,
		   size_t *n_frames);

/*
 * Whisper-style encoder + ultravox projector on n_frames mel frames
 * (frame-major doubles); returns *n_tok x n_out doubles (malloc'd).
 * exact: as many stacked rows as llama.cpp's clip_n_output_tokens()
 * gives (the positions past them dropped); 0: every position, the last
 * row zero-padded.
 */
double *ref_mm_audio(const struct mm_mmproj_audio *a, const double *mel,
		     size_t n_frames, int exact, size_t *n_tok);

#endif

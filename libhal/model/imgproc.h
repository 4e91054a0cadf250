/* SPDX-License-Identifier: MIT */
/*
 * imgproc.h - image preprocessing for the vision encoder: a camera frame
 * (NV12, GREY or RGB24, as mmedge buffers carry them) read in place,
 * converted to RGB per sampled pixel, resized to image_size x image_size
 * and normalized by image_mean/image_std into the planar CHW floats that
 * mm_vision_encode() takes.
 *
 * Resize: llama.cpp clip.cpp's bilinear rule (its idefics3 overview image:
 * stretched to image_size x image_size, aspect ratio not kept): output
 * pixel (x, y) samples source (x * (W - 1) / S, y * (H - 1) / S), lerps the
 * four 8-bit RGB neighbours in float, truncates to 8 bits, then
 * out = (v / 255 - mean[c]) / std[c]. The same rule is used for the mlp
 * (LLaVA) projector; clip.cpp's pad-to-square for non-square LLaVA inputs
 * is not done here.
 *
 * NV12: BT.601 limited range (Y 16..235, CbCr 16..240), the default of
 * V4L2 and vivid for YUV formats; fixed-point integer conversion,
 * R = (298 (Y-16) + 409 (V-128) + 128) >> 8, G = (298 (Y-16) - 100 (U-128)
 * - 208 (V-128) + 128) >> 8, B = (298 (Y-16) + 516 (U-128) + 128) >> 8,
 * clamped to 0..255; chroma sampled at (x/2, y/2) (no chroma filtering).
 * GREY: the byte replicated into R, G and B.
 *
 * Threading: no state; any number of calls may run at once.
 */
#ifndef MM_IMGPROC_H
#define MM_IMGPROC_H

#include <stddef.h>
#include <stdint.h>

#include "mmproj.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifndef MM_MODEL_API
#define MM_MODEL_API
#endif

/* V4L2 fourcc codes, equal to MMEDGE_FMT_* */
#define MM_IMAGE_GREY	0x59455247u	/* 'GREY' */
#define MM_IMAGE_RGB24	0x33424752u	/* 'RGB3' */
#define MM_IMAGE_NV12	0x3231564eu	/* 'NV12' */

/*
 * A frame described in place. GREY: plane[0] 1 byte per pixel. RGB24:
 * plane[0] 3 bytes per pixel, R G B. NV12: plane[0] Y (1 byte per pixel),
 * plane[1] interleaved U V at half resolution both ways (width and height
 * even). stride[i]: bytes from one line of plane i to the next, >= the
 * line's bytes. Unused planes/strides are ignored.
 */
struct mm_image {
	uint32_t format;	/* MM_IMAGE_* */
	uint32_t width, height;
	const uint8_t *plane[2];
	size_t stride[2];
};

/*
 * Fills out (n_out must be 3 * image_size^2 of p's vision tower) with the
 * normalized planar CHW pixels. Returns 0, or -EINVAL with a message in
 * err (bad format, sizes, strides, planes, n_out, no vision tower).
 */
MM_MODEL_API int mm_image_preprocess(const struct mm_mmproj *p,
				     const struct mm_image *img, float *out,
				     size_t n_out, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* MM_IMGPROC_H */

/* SPDX-License-Identifier: MIT */
/*
 * imgproc.h - image preprocessing for the vision encoder: a camera frame
 * (NV12, GREY or RGB24, as mmedge buffers carry them) read in place,
 * converted to RGB per sampled pixel, resized and normalized by
 * image_mean/image_std into the planar CHW floats, image_size x
 * image_size, that mm_vision_encode() takes. No RGB copy of the frame and
 * no intermediate image is made: every output pixel reads the source
 * pixels its interpolation needs straight from the planes (each output
 * image is one resize of the source, never a resize of a resize).
 *
 * The rules are those of llama.cpp's tools/mtmd clip.cpp
 * (clip_image_preprocess, img_tool::resize, llava_uhd::slice_image, as of
 * the revision where preprocessing lived in clip.cpp); S below is
 * clip.vision.image_size, L clip.vision.preproc_image_size.
 *
 * Plan (mm_image_plan()):
 * - idefics3 with L in the file and tiles requested: the refined size is
 *   the frame scaled (aspect kept) so that its longer side is L, each side
 *   then rounded UP to a multiple of S: scale = min(L / W, L / H) in
 *   double, refined_w = ceil(W * scale / S) * S (likewise h). (Computed in
 *   double as transformers' Idefics3ImageProcessor and current llama.cpp
 *   do: float32 turns 960x720 at L 2048, S 512 into 4x4 instead of 4x3.)
 *   The grid is refined_w / S columns by refined_h / S rows; the refined
 *   image is cut into S x S tiles, numbered row-major from the top left.
 *   Images of any size get tiles (small ones are upscaled), as in clip.cpp.
 *   Plus one overview image.
 * - otherwise (no L, tiles == 0, or the mlp projector): the overview only.
 *
 * Overview (tile -1):
 * - idefics3: stretched to S x S (aspect not kept), clip.cpp's bilinear
 *   rule: output (x, y) samples source (x * (W - 1) / S, y * (H - 1) / S)
 *   (ratios in float), lerps the four 8-bit RGB neighbours in float (x
 *   first), truncates to 8 bits.
 * - mlp (LLaVA-1.5, no image_grid_pinpoints): pad to square. scale =
 *   min(S / W, S / H) (float), content w' = min(ceil(W * scale), S) (h'
 *   likewise), the frame bilinear-resized (rule above, with w', h' for S)
 *   to w' x h', placed at ((S - w') / 2, (S - h') / 2) on a field of
 *   LLaVA's mean colour RGB (122, 116, 104).
 * - a frame already S x S is taken as is (no resampling), both projectors.
 *
 * Tiles (tile >= 0): clip.cpp's bicubic rule from the source straight to
 * the refined size (a frame already of the refined size is taken as is):
 * refined pixel (j, i) with tx = W / refined_w, ty = H / refined_h (float)
 * takes x = (int)(tx * j), dx = tx * j - x (likewise y, dy), and per
 * channel the 4x4 neighbourhood (x - 1 .. x + 2, y - 1 .. y + 2, clamped
 * to the frame): a cubic through each row at dx, then through the four
 * row values at dy, with clip.cpp's coefficients (a1 = -d0 / 3 + d2 -
 * d3 / 6, a2 = (d0 + d2) / 2, a3 = -d0 / 6 - d2 / 2 + d3 / 6, in the
 * same float/double mix), rounded and clamped to 0..255.
 *
 * Normalize: out = (v / 255 - mean[c]) / std[c], float.
 *
 * Not done: later llama.cpp revisions (tools/mtmd/mtmd-image.cpp) switch
 * idefics3 to other filters (bicubic overview, Pillow-style Lanczos);
 * the tile plan above is unchanged by that. LLaVA-1.6 anyres
 * (image_grid_pinpoints) is refused by the mmproj loader.
 *
 * NV12: BT.601 limited range (Y 16..235, CbCr 16..240), the default of
 * V4L2 and vivid for YUV formats; fixed-point integer conversion,
 * R = (298 (Y-16) + 409 (V-128) + 128) >> 8, G = (298 (Y-16) - 100 (U-128)
 * - 208 (V-128) + 128) >> 8, B = (298 (Y-16) + 516 (U-128) + 128) >> 8,
 * clamped to 0..255; chroma sampled at (x/2, y/2) (no chroma filtering).
 * GREY: the byte replicated into R, G and B.
 *
 * Memory: none beyond the caller's output (3 S^2 floats per image).
 *
 * Threading: no state; any number of calls may run at once (e.g. one per
 * tile of the same plan and frame).
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

/* Interpolations of the plan (clip.cpp's img_tool resize_algo). */
enum mm_image_resize {
	MM_IMAGE_BILINEAR = 0,
	MM_IMAGE_BICUBIC = 1,
};

/*
 * How one frame becomes encoder images: n_rows x n_cols tiles (row-major,
 * tile index r * n_cols + c) cut from the refined image, plus the
 * overview. Each image is tile_size x tile_size and encodes to the
 * vision tower's n_tokens embeddings.
 */
struct mm_image_plan {
	uint32_t width, height;		/* the frame's size */
	uint32_t tile_size;		/* S: side of every output image */
	uint32_t n_rows, n_cols;	/* 0, 0: overview only */
	uint32_t refined_w, refined_h;	/* n_cols * S x n_rows * S; 0, 0
					 * without tiles */
	uint32_t n_images;		/* n_rows * n_cols + 1 */
	/* overview content rectangle: S, S, 0, 0 unless padded to square */
	uint32_t content_w, content_h, content_x, content_y;
	uint8_t pad_rgb[3];		/* fill outside the content */
	uint8_t overview_resize;	/* enum mm_image_resize */
	uint8_t tile_resize;		/* enum mm_image_resize */
	uint8_t reserved0[3];
	uint32_t reserved[4];		/* zero */
};

/*
 * Fills *out for a width x height frame. tiles: 0 overview only; else the
 * tiles the file asks for (idefics3 with clip.vision.preproc_image_size),
 * overview only when it asks for none. Returns 0, or -EINVAL with a
 * message in err (no vision tower, size 0 or over 65536, a refined image
 * over 64 x 64 tiles).
 */
MM_MODEL_API int mm_image_plan(const struct mm_mmproj *p, uint32_t width,
			       uint32_t height, int tiles,
			       struct mm_image_plan *out, char *err,
			       size_t errlen);

/*
 * Fills out (n_out must be 3 * S * S) with image `tile` of the plan: -1
 * the overview, 0 .. n_rows * n_cols - 1 a tile (row-major). img must be
 * the frame the plan was made for (same width and height). Returns 0, or
 * -EINVAL with a message in err (bad format, sizes, strides, planes,
 * n_out, tile index, plan of another frame or tower).
 */
MM_MODEL_API int mm_image_preprocess_tile(const struct mm_mmproj *p,
					  const struct mm_image *img,
					  const struct mm_image_plan *plan,
					  int tile, float *out, size_t n_out,
					  char *err, size_t errlen);

/*
 * The overview alone: mm_image_plan(tiles 0) + mm_image_preprocess_tile(-1).
 */
MM_MODEL_API int mm_image_preprocess(const struct mm_mmproj *p,
				     const struct mm_image *img, float *out,
				     size_t n_out, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* MM_IMGPROC_H */

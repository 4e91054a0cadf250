// SPDX-License-Identifier: MIT
/*
 * imgproc.c - camera frame -> normalized CHW pixels for the vision
 * encoder: the tile plan and the overview/tile images (see imgproc.h for
 * the rules). Each output pixel reads the source pixels its interpolation
 * needs (2x2 bilinear, 4x4 bicubic) straight from the frame's planes; no
 * RGB copy of the frame and no intermediate image is made.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gguf.h"
#include "imgproc.h"

#define MM_IMAGE_MAX_SIDE	65536u
#define MM_IMAGE_MAX_GRID	64u

/* LLaVA's background: its image mean x 255 (clip.cpp's pad colour) */
static const uint8_t mm_llava_pad[3] = { 122, 116, 104 };

static inline uint8_t clamp8(int v)
{
	return v < 0 ? 0 : v > 255 ? 255 : (uint8_t)v;
}

/* RGB of source pixel (x, y) */
static inline void fetch(const struct mm_image *im, uint32_t x, uint32_t y,
			 uint8_t rgb[3])
{
	const uint8_t *s;
	int c, d, e;

	switch (im->format) {
	case MM_IMAGE_GREY:
		rgb[0] = rgb[1] = rgb[2] = im->plane[0][y * im->stride[0] + x];
		break;
	case MM_IMAGE_RGB24:
		s = im->plane[0] + y * im->stride[0] + 3 * (size_t)x;
		rgb[0] = s[0];
		rgb[1] = s[1];
		rgb[2] = s[2];
		break;
	default: /* NV12, BT.601 limited range */
		c = (int)im->plane[0][y * im->stride[0] + x] - 16;
		s = im->plane[1] + (y / 2) * im->stride[1] + 2 * (size_t)(x / 2);
		d = (int)s[0] - 128;
		e = (int)s[1] - 128;
		rgb[0] = clamp8((298 * c + 409 * e + 128) >> 8);
		rgb[1] = clamp8((298 * c - 100 * d - 208 * e + 128) >> 8);
		rgb[2] = clamp8((298 * c + 516 * d + 128) >> 8);
		break;
	}
}

static inline float lerpf(float s, float e, float t)
{
	return s + (e - s) * t;
}

static int check_image(const struct mm_image *img, char *err, size_t errlen)
{
	uint32_t w, h;

	if (!img)
		return mm_errf(-EINVAL, err, errlen, "image is NULL");
	w = img->width;
	h = img->height;
	if (!w || !h || w > MM_IMAGE_MAX_SIDE || h > MM_IMAGE_MAX_SIDE)
		return mm_errf(-EINVAL, err, errlen, "image size %ux%u out of range",
			       w, h);
	switch (img->format) {
	case MM_IMAGE_GREY:
	case MM_IMAGE_RGB24:
		if (!img->plane[0])
			return mm_errf(-EINVAL, err, errlen, "plane 0 is NULL");
		if (img->stride[0] <
		    (size_t)w * (img->format == MM_IMAGE_RGB24 ? 3 : 1))
			return mm_errf(-EINVAL, err, errlen,
				       "stride %zu < line of %u pixels",
				       img->stride[0], w);
		break;
	case MM_IMAGE_NV12:
		if ((w | h) & 1)
			return mm_errf(-EINVAL, err, errlen,
				       "NV12 needs even width and height, not %ux%u",
				       w, h);
		if (!img->plane[0] || !img->plane[1])
			return mm_errf(-EINVAL, err, errlen, "NV12 plane %d is NULL",
				       img->plane[0] ? 1 : 0);
		if (img->stride[0] < w || img->stride[1] < w)
			return mm_errf(-EINVAL, err, errlen,
				       "NV12 strides %zu/%zu < width %u",
				       img->stride[0], img->stride[1], w);
		break;
	default:
		return mm_errf(-EINVAL, err, errlen, "unsupported pixel format 0x%08x",
			       img->format);
	}
	return 0;
}

int mm_image_plan(const struct mm_mmproj *p, uint32_t width, uint32_t height,
		  int tiles, struct mm_image_plan *out, char *err,
		  size_t errlen)
{
	const struct mm_mmproj_vision *v = p ? mm_mmproj_vision(p) : NULL;
	uint32_t s;

	if (!v)
		return mm_errf(-EINVAL, err, errlen, "mmproj has no vision encoder");
	if (!out)
		return mm_errf(-EINVAL, err, errlen, "plan is NULL");
	if (!width || !height || width > MM_IMAGE_MAX_SIDE ||
	    height > MM_IMAGE_MAX_SIDE)
		return mm_errf(-EINVAL, err, errlen, "image size %ux%u out of range",
			       width, height);
	s = v->image_size;
	if (!s)
		return mm_errf(-EINVAL, err, errlen, "vision image_size is 0");
	memset(out, 0, sizeof(*out));
	out->width = width;
	out->height = height;
	out->tile_size = s;
	out->content_w = s;
	out->content_h = s;
	out->overview_resize = MM_IMAGE_BILINEAR;
	out->tile_resize = MM_IMAGE_BICUBIC;
	if (v->proj == MM_MMPROJ_MLP && (width != s || height != s)) {
		/* clip.cpp img_tool::resize with padding, in float */
		float sw = (float)s / (float)width, sh = (float)s / (float)height;
		float sc = sw < sh ? sw : sh;
		float cw = ceilf((float)width * sc), ch = ceilf((float)height * sc);

		out->content_w = cw < (float)s ? (uint32_t)cw : s;
		out->content_h = ch < (float)s ? (uint32_t)ch : s;
		out->content_x = (s - out->content_w) / 2;
		out->content_y = (s - out->content_h) / 2;
		if (out->content_w < s || out->content_h < s)
			memcpy(out->pad_rgb, mm_llava_pad, 3);
	}
	if (tiles && v->proj == MM_MMPROJ_IDEFICS3 && v->preproc_image_size) {
		double l = v->preproc_image_size;
		double sx = l / width, sy = l / height, sc = sx < sy ? sx : sy;
		double cols = ceil(width * sc / s), rows = ceil(height * sc / s);

		if (cols > MM_IMAGE_MAX_GRID || rows > MM_IMAGE_MAX_GRID)
			return mm_errf(-EINVAL, err, errlen,
				       "image %ux%u at preproc_image_size %u: %.0fx%.0f tiles of %u, over %u per side",
				       width, height, v->preproc_image_size,
				       cols, rows, s, MM_IMAGE_MAX_GRID);
		out->n_cols = cols < 1 ? 1 : (uint32_t)cols;
		out->n_rows = rows < 1 ? 1 : (uint32_t)rows;
		out->refined_w = out->n_cols * s;
		out->refined_h = out->n_rows * s;
	}
	out->n_images = out->n_rows * out->n_cols + 1;
	return 0;
}

/* the normalized value of 8-bit level u in channel c */
static inline float norm(const struct mm_mmproj_vision *v, int c, uint8_t u)
{
	return ((float)u / 255.0f - v->mean[c]) / v->std[c];
}

/* out: S x S with the frame taken as is (already S x S) */
static void copy_frame(const struct mm_mmproj_vision *v,
		       const struct mm_image *img, float *out)
{
	uint32_t s = v->image_size, x, y;
	size_t ps = (size_t)s * s;
	uint8_t rgb[3];

	for (y = 0; y < s; y++)
		for (x = 0; x < s; x++) {
			fetch(img, x, y, rgb);
			for (int c = 0; c < 3; c++)
				out[c * ps + (size_t)y * s + x] = norm(v, c, rgb[c]);
		}
}

/*
 * The overview: the frame bilinear-resized (clip.cpp's rule) to
 * cw x ch at (cx, cy) of an S x S field of pad.
 */
static void overview(const struct mm_mmproj_vision *v,
		     const struct mm_image *img, const struct mm_image_plan *pl,
		     float *out)
{
	uint32_t w = img->width, h = img->height, s = v->image_size;
	uint32_t cw = pl->content_w, ch = pl->content_h, x, y;
	float xr = (float)(w - 1) / (float)cw;
	float yr = (float)(h - 1) / (float)ch;
	size_t ps = (size_t)s * s;
	float padv[3];
	int c;

	for (c = 0; c < 3; c++)
		padv[c] = norm(v, c, pl->pad_rgb[c]);
	for (y = 0; y < s; y++) {
		int row_in = y >= pl->content_y && y - pl->content_y < ch;
		float py = row_in ? yr * (float)(y - pl->content_y) : 0.0f;
		uint32_t y0 = (uint32_t)py;
		uint32_t y1 = y0 + 1 < h ? y0 + 1 : y0;
		float ty = py - (float)y0;

		for (x = 0; x < s; x++) {
			uint32_t rx;
			size_t o = (size_t)y * s + x;
			float px, tx, top, bot;
			uint32_t x0, x1;
			uint8_t a[3], b[3], cc[3], d[3];

			if (!row_in || x < pl->content_x ||
			    x - pl->content_x >= cw) {
				for (c = 0; c < 3; c++)
					out[c * ps + o] = padv[c];
				continue;
			}
			rx = x - pl->content_x;
			px = xr * (float)rx;
			x0 = (uint32_t)px;
			x1 = x0 + 1 < w ? x0 + 1 : x0;
			tx = px - (float)x0;
			fetch(img, x0, y0, a);
			fetch(img, x1, y0, b);
			fetch(img, x0, y1, cc);
			fetch(img, x1, y1, d);
			for (c = 0; c < 3; c++) {
				top = lerpf(a[c], b[c], tx);
				bot = lerpf(cc[c], d[c], tx);
				out[c * ps + o] =
					norm(v, c, (uint8_t)lerpf(top, bot, ty));
			}
		}
	}
}

/* clip.cpp's cubic through p[0..3] at t (its float/double mix) */
static inline float cubic(float p0, float p1, float p2, float p3, float t)
{
	float d0 = p0 - p1, d2 = p2 - p1, d3 = p3 - p1, a0 = p1;
	float a1 = (float)(-1.0 / 3 * d0 + d2 - 1.0 / 6 * d3);
	float a2 = (float)(1.0 / 2 * d0 + 1.0 / 2 * d2);
	float a3 = (float)(-1.0 / 6 * d0 - 1.0 / 2 * d2 + 1.0 / 6 * d3);

	return a0 + a1 * t + a2 * t * t + a3 * t * t * t;
}

static inline uint32_t clampi(int64_t v, uint32_t hi)
{
	return v < 0 ? 0 : v > (int64_t)hi ? hi : (uint32_t)v;
}

/* tile (r, c) of the refined image, bicubic from the frame */
static void tile_bicubic(const struct mm_mmproj_vision *v,
			 const struct mm_image *img,
			 const struct mm_image_plan *pl, uint32_t r, uint32_t c,
			 float *out)
{
	uint32_t w = img->width, h = img->height, s = v->image_size, i, j;
	float tx = (float)w / (float)pl->refined_w;
	float ty = (float)h / (float)pl->refined_h;
	int same = pl->refined_w == w && pl->refined_h == h;
	size_t ps = (size_t)s * s;

	for (i = 0; i < s; i++) {
		uint32_t gi = r * s + i;
		int y = (int)(ty * (float)gi);
		float dy = ty * (float)gi - (float)y;

		for (j = 0; j < s; j++) {
			uint32_t gj = c * s + j;
			int x = (int)(tx * (float)gj);
			float dx = tx * (float)gj - (float)x;
			size_t o = (size_t)i * s + j;
			uint8_t px[4][4][3];
			float row[4];
			int k, jj, ii;

			if (same) {
				fetch(img, gj, gi, px[0][0]);
				for (k = 0; k < 3; k++)
					out[k * ps + o] = norm(v, k, px[0][0][k]);
				continue;
			}
			for (jj = 0; jj < 4; jj++) {
				uint32_t yy = clampi((int64_t)y - 1 + jj, h - 1);

				for (ii = 0; ii < 4; ii++)
					fetch(img, clampi((int64_t)x - 1 + ii, w - 1),
					      yy, px[jj][ii]);
			}
			for (k = 0; k < 3; k++) {
				float cc;

				for (jj = 0; jj < 4; jj++)
					row[jj] = cubic(px[jj][0][k], px[jj][1][k],
							px[jj][2][k], px[jj][3][k],
							dx);
				cc = roundf(cubic(row[0], row[1], row[2], row[3],
						  dy));
				cc = cc < 0.0f ? 0.0f : cc > 255.0f ? 255.0f : cc;
				out[k * ps + o] = norm(v, k, (uint8_t)cc);
			}
		}
	}
}

int mm_image_preprocess_tile(const struct mm_mmproj *p,
			     const struct mm_image *img,
			     const struct mm_image_plan *plan, int tile,
			     float *out, size_t n_out, char *err, size_t errlen)
{
	const struct mm_mmproj_vision *v = p ? mm_mmproj_vision(p) : NULL;
	struct mm_image_plan pl;
	uint32_t n;
	int ret, c;

	if (!v)
		return mm_errf(-EINVAL, err, errlen, "mmproj has no vision encoder");
	if (!img || !out || !plan)
		return mm_errf(-EINVAL, err, errlen, "%s is NULL",
			       !img ? "image" : !out ? "output" : "plan");
	ret = check_image(img, err, errlen);
	if (ret)
		return ret;
	n = v->image_size;
	if (!n || n_out != 3 * (size_t)n * n)
		return mm_errf(-EINVAL, err, errlen, "n_out %zu, need 3 x %u x %u",
			       n_out, n, n);
	for (c = 0; c < 3; c++) {
		if (!(v->std[c] > 0))
			return mm_errf(-EINVAL, err, errlen, "image_std[%d] is not > 0",
				       c);
	}
	if (plan->width != img->width || plan->height != img->height)
		return mm_errf(-EINVAL, err, errlen,
			       "plan is for a %ux%u image, not %ux%u",
			       plan->width, plan->height, img->width,
			       img->height);
	/* the geometry comes from a plan made here, the caller's must match */
	ret = mm_image_plan(p, img->width, img->height, plan->n_rows != 0, &pl,
			    err, errlen);
	if (ret)
		return ret;
	if (memcmp(&pl, plan, sizeof(pl)))
		return mm_errf(-EINVAL, err, errlen,
			       "plan was not made by mm_image_plan() for this mmproj and image");
	if (tile < -1 || tile >= (int)(pl.n_rows * pl.n_cols))
		return mm_errf(-EINVAL, err, errlen, "tile %d out of range [-1, %u)",
			       tile, pl.n_rows * pl.n_cols);
	if (tile < 0) {
		if (img->width == n && img->height == n)
			copy_frame(v, img, out);
		else
			overview(v, img, &pl, out);
	} else {
		tile_bicubic(v, img, &pl, (uint32_t)tile / pl.n_cols,
			     (uint32_t)tile % pl.n_cols, out);
	}
	return 0;
}

int mm_image_preprocess(const struct mm_mmproj *p, const struct mm_image *img,
			float *out, size_t n_out, char *err, size_t errlen)
{
	struct mm_image_plan pl;
	int ret;

	if (!p || !mm_mmproj_vision(p))
		return mm_errf(-EINVAL, err, errlen, "mmproj has no vision encoder");
	if (!img || !out)
		return mm_errf(-EINVAL, err, errlen, "image or output is NULL");
	ret = check_image(img, err, errlen);
	if (!ret)
		ret = mm_image_plan(p, img->width, img->height, 0, &pl, err,
				    errlen);
	if (!ret)
		ret = mm_image_preprocess_tile(p, img, &pl, -1, out, n_out, err,
					       errlen);
	return ret;
}

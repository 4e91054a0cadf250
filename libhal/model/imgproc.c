// SPDX-License-Identifier: MIT
/*
 * imgproc.c - camera frame -> normalized CHW pixels for the vision
 * encoder (see imgproc.h for the rules). Each output pixel reads its four
 * source neighbours straight from the frame's planes; no RGB copy of the
 * frame is made.
 */
#include <errno.h>
#include <stdio.h>

#include "gguf.h"
#include "imgproc.h"

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

int mm_image_preprocess(const struct mm_mmproj *p, const struct mm_image *img,
			float *out, size_t n_out, char *err, size_t errlen)
{
	const struct mm_mmproj_vision *v = p ? mm_mmproj_vision(p) : NULL;
	uint32_t w, h, n, x, y;
	float xr, yr;
	size_t plane_sz;
	int c;

	if (!v)
		return mm_errf(-EINVAL, err, errlen, "mmproj has no vision encoder");
	if (!img || !out)
		return mm_errf(-EINVAL, err, errlen, "image or output is NULL");
	w = img->width;
	h = img->height;
	n = v->image_size;
	if (!w || !h || w > 65536 || h > 65536)
		return mm_errf(-EINVAL, err, errlen, "image size %ux%u out of range", w, h);
	if (!n || n_out != 3 * (size_t)n * n)
		return mm_errf(-EINVAL, err, errlen, "n_out %zu, need 3 x %u x %u", n_out,
			    n, n);
	switch (img->format) {
	case MM_IMAGE_GREY:
	case MM_IMAGE_RGB24:
		if (!img->plane[0])
			return mm_errf(-EINVAL, err, errlen, "plane 0 is NULL");
		if (img->stride[0] <
		    (size_t)w * (img->format == MM_IMAGE_RGB24 ? 3 : 1))
			return mm_errf(-EINVAL, err, errlen, "stride %zu < line of %u pixels",
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
	for (c = 0; c < 3; c++) {
		if (!(v->std[c] > 0))
			return mm_errf(-EINVAL, err, errlen, "image_std[%d] is not > 0", c);
	}
	/* clip.cpp resize_bilinear */
	xr = (float)(w - 1) / (float)n;
	yr = (float)(h - 1) / (float)n;
	plane_sz = (size_t)n * n;
	for (y = 0; y < n; y++) {
		float py = yr * (float)y;
		uint32_t y0 = (uint32_t)py;
		uint32_t y1 = y0 + 1 < h ? y0 + 1 : y0;
		float ty = py - (float)y0;

		for (x = 0; x < n; x++) {
			float px = xr * (float)x;
			uint32_t x0 = (uint32_t)px;
			uint32_t x1 = x0 + 1 < w ? x0 + 1 : x0;
			float tx = px - (float)x0;
			uint8_t a[3], b[3], cc[3], d[3];
			size_t o = (size_t)y * n + x;

			fetch(img, x0, y0, a);
			fetch(img, x1, y0, b);
			fetch(img, x0, y1, cc);
			fetch(img, x1, y1, d);
			for (c = 0; c < 3; c++) {
				float top = lerpf(a[c], b[c], tx);
				float bot = lerpf(cc[c], d[c], tx);
				uint8_t u = (uint8_t)lerpf(top, bot, ty);

				out[c * plane_sz + o] =
					((float)u / 255.0f - v->mean[c]) /
					v->std[c];
			}
		}
	}
	return 0;
}

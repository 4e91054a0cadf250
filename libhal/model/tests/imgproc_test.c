// SPDX-License-Identifier: MIT
/*
 * imgproc_test.c - mm_image_preprocess() against a double-precision
 * reference written here (whole frame first converted to a double RGB
 * image, NV12 by the BT.601 limited-range matrix in floating point
 * rounded to nearest; then clip.cpp's bilinear rule in double with the
 * 8-bit truncation; then (v/255 - mean)/std) on generated frames:
 * gradients, checkerboards and noise, odd sizes, upscaling and
 * downscaling, strides larger than the line with junk in the padding,
 * GREY/RGB24/NV12; GREY vs RGB24 of the same gray image bit-identical;
 * NV12 of known colours vs RGB24; the error cases.
 *
 * Tolerance in 8-bit levels before normalization: GREY/RGB24 1 level
 * (float vs double lerp may truncate either side of an integer), NV12 2
 * levels (the fixed-point conversion may differ by 1 from the rounded
 * floating-point one, plus the truncation).
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"
#include "imgproc.h"
#include "mmproj.h"
#include "quant.h"
#include "tap.h"

struct frame {
	struct mm_image im;
	uint8_t *buf[2];
};

static uint32_t rng = 12345;

static uint8_t rnd8(void)
{
	rng = rng * 1103515245u + 12345u;
	return (uint8_t)(rng >> 16);
}

/* pattern value of channel c at (x, y) */
static uint8_t pat(int kind, uint32_t x, uint32_t y, int c, uint32_t w,
		   uint32_t h)
{
	switch (kind) {
	case 0: /* gradients */
		return (uint8_t)((c == 0 ? x * 255 / (w > 1 ? w - 1 : 1) :
				  c == 1 ? y * 255 / (h > 1 ? h - 1 : 1) :
				  (x + y) * 7) & 255);
	case 1: /* checkerboard, 3-pixel squares */
		return ((x / 3 + y / 3) & 1) ? (uint8_t)(200 + 20 * c) :
					       (uint8_t)(10 + 30 * c);
	default:
		return rnd8();
	}
}

static void frame_free(struct frame *f)
{
	free(f->buf[0]);
	free(f->buf[1]);
	memset(f, 0, sizeof(*f));
}

/* pad: extra bytes per line, filled with junk */
static int frame_make(struct frame *f, uint32_t fmt, uint32_t w, uint32_t h,
		      size_t pad, int kind)
{
	size_t bpp = fmt == MM_IMAGE_RGB24 ? 3 : 1;
	size_t s0 = w * bpp + pad, s1 = w + pad;

	memset(f, 0, sizeof(*f));
	f->im.format = fmt;
	f->im.width = w;
	f->im.height = h;
	f->buf[0] = malloc(s0 * h);
	if (!f->buf[0])
		return -1;
	memset(f->buf[0], 0xA5, s0 * h);
	f->im.plane[0] = f->buf[0];
	f->im.stride[0] = s0;
	for (uint32_t y = 0; y < h; y++)
		for (uint32_t x = 0; x < w; x++)
			for (size_t c = 0; c < bpp; c++)
				f->buf[0][y * s0 + x * bpp + c] =
					pat(kind, x, y, (int)c, w, h);
	if (fmt == MM_IMAGE_NV12) {
		f->buf[1] = malloc(s1 * (h / 2));
		if (!f->buf[1])
			return -1;
		memset(f->buf[1], 0x5A, s1 * (h / 2));
		f->im.plane[1] = f->buf[1];
		f->im.stride[1] = s1;
		for (uint32_t y = 0; y < h / 2; y++)
			for (uint32_t x = 0; x < w / 2; x++) {
				f->buf[1][y * s1 + 2 * x] =
					pat(kind, x, y, 1, w / 2, h / 2);
				f->buf[1][y * s1 + 2 * x + 1] =
					pat(kind, x, y, 2, w / 2, h / 2);
			}
	}
	return 0;
}

static double clampd(double v)
{
	return v < 0 ? 0 : v > 255 ? 255 : v;
}

/* the whole frame as double RGB, HWC */
static double *ref_rgb(const struct mm_image *im)
{
	uint32_t w = im->width, h = im->height;
	double *rgb = malloc(sizeof(double) * 3 * w * h);

	for (uint32_t y = 0; rgb && y < h; y++)
		for (uint32_t x = 0; x < w; x++) {
			double *o = rgb + 3 * ((size_t)y * w + x);
			const uint8_t *l0 = im->plane[0] + y * im->stride[0];

			if (im->format == MM_IMAGE_GREY) {
				o[0] = o[1] = o[2] = l0[x];
			} else if (im->format == MM_IMAGE_RGB24) {
				o[0] = l0[3 * x];
				o[1] = l0[3 * x + 1];
				o[2] = l0[3 * x + 2];
			} else {
				const uint8_t *uv = im->plane[1] +
					(y / 2) * im->stride[1] + (x & ~1u);
				double Y = 255.0 / 219.0 * (l0[x] - 16.0);
				double U = 255.0 / 224.0 * (uv[0] - 128.0);
				double V = 255.0 / 224.0 * (uv[1] - 128.0);

				/* Kr 0.299, Kb 0.114 */
				o[0] = round(clampd(Y + 1.402 * V));
				o[1] = round(clampd(Y - 0.344136 * U -
						    0.714136 * V));
				o[2] = round(clampd(Y + 1.772 * U));
			}
		}
	return rgb;
}

/*
 * The overview: S x S, bilinear (clip.cpp's corner rule, 8-bit
 * truncation); mlp pads non-square frames to a square of LLaVA's mean
 * colour first (content: the longer side S, the shorter rounded up).
 */
static double *ref_pre(const struct mm_mmproj_vision *v,
		       const struct mm_image *im)
{
	static const double pad[3] = { 122, 116, 104 };
	uint32_t w = im->width, h = im->height, n = v->image_size;
	uint32_t cw = n, ch = n, cx = 0, cy = 0;
	double *rgb = ref_rgb(im);
	double *out = malloc(sizeof(double) * 3 * n * n);

	if (!rgb || !out) {
		free(rgb);
		free(out);
		return NULL;
	}
	if (v->proj == MM_MMPROJ_MLP && w != h) {
		if (w > h)
			ch = (uint32_t)(((uint64_t)h * n + w - 1) / w);
		else
			cw = (uint32_t)(((uint64_t)w * n + h - 1) / h);
		cx = (n - cw) / 2;
		cy = (n - ch) / 2;
	}
	for (uint32_t c = 0; c < 3; c++)
		for (uint32_t i = 0; i < n; i++)
			for (uint32_t j = 0; j < n; j++) {
				double val;

				if (w == n && h == n) {
					val = rgb[3 * ((size_t)i * w + j) + c];
				} else if (i < cy || i >= cy + ch || j < cx ||
					   j >= cx + cw) {
					val = pad[c];
				} else {
					double sy = (double)(h - 1) * (i - cy) / ch;
					double sx = (double)(w - 1) * (j - cx) / cw;
					long ya = (long)floor(sy), xa = (long)floor(sx);
					long yb = ya + 1 < (long)h ? ya + 1 : ya;
					long xb = xa + 1 < (long)w ? xa + 1 : xa;
					double fy = sy - ya, fx = sx - xa;
#define P(yy, xx) rgb[3 * ((size_t)(yy) * w + (size_t)(xx)) + c]
					val = (1 - fy) * ((1 - fx) * P(ya, xa) +
							  fx * P(ya, xb)) +
					      fy * ((1 - fx) * P(yb, xa) +
						    fx * P(yb, xb));
#undef P
					val = floor(val + 1e-9);
				}
				out[(size_t)c * n * n + (size_t)i * n + j] =
					(val / 255.0 - v->mean[c]) / v->std[c];
			}
	free(rgb);
	return out;
}

static const char *fmt_name(uint32_t f)
{
	return f == MM_IMAGE_GREY ? "GREY" : f == MM_IMAGE_RGB24 ? "RGB24" :
	       "NV12";
}

static void check_ref(const struct mm_mmproj *p, uint32_t fmt, uint32_t w,
		      uint32_t h, size_t pad, int kind)
{
	const struct mm_mmproj_vision *v = mm_mmproj_vision(p);
	size_t n = 3 * (size_t)v->image_size * v->image_size, exact = 0;
	double lv = fmt == MM_IMAGE_NV12 ? 2 : 1, worst = 0;
	float *out = malloc(n * sizeof(float));
	char err[256] = "";
	struct frame f;
	double *ref;
	int ret, ok = 1;

	if (frame_make(&f, fmt, w, h, pad, kind) || !out) {
		tap_ok(0, "alloc");
		goto done;
	}
	ret = mm_image_preprocess(p, &f.im, out, n, err, sizeof(err));
	ref = ref_pre(v, &f.im);
	if (ret || !ref) {
		tap_ok(0, "%s %ux%u: %s", fmt_name(fmt), w, h, err);
		free(ref);
		goto done;
	}
	for (size_t i = 0; i < n; i++) {
		size_t c = i / ((size_t)v->image_size * v->image_size);
		/* the difference in 8-bit levels */
		double d = fabs(out[i] - ref[i]) * v->std[c] * 255.0;

		if (d > worst)
			worst = d;
		if (d < 1e-3)
			exact++;
		if (d > lv + 1e-3)
			ok = 0;
	}
	tap_ok(ok, "%s %ux%u pad %zu pattern %d -> %u px: max %.3f levels "
	       "(<= %.0f), %.1f%% exact", fmt_name(fmt), w, h, pad, kind,
	       v->image_size, worst, lv, 100.0 * exact / n);
	free(ref);
done:
	free(out);
	frame_free(&f);
}

static void check_grey_rgb(const struct mm_mmproj *p)
{
	const struct mm_mmproj_vision *v = mm_mmproj_vision(p);
	size_t n = 3 * (size_t)v->image_size * v->image_size;
	float *a = malloc(n * sizeof(float)), *b = malloc(n * sizeof(float));
	struct frame g, r;
	uint32_t w = 45, h = 29;
	int ok = a && b && !frame_make(&g, MM_IMAGE_GREY, w, h, 7, 2) &&
		 !frame_make(&r, MM_IMAGE_RGB24, w, h, 5, 0);

	for (uint32_t y = 0; ok && y < h; y++)
		for (uint32_t x = 0; x < w; x++)
			memset(r.buf[0] + y * r.im.stride[0] + 3 * x,
			       g.buf[0][y * g.im.stride[0] + x], 3);
	ok = ok && !mm_image_preprocess(p, &g.im, a, n, NULL, 0) &&
	     !mm_image_preprocess(p, &r.im, b, n, NULL, 0) &&
	     !memcmp(a, b, n * sizeof(float));
	tap_ok(ok, "GREY and RGB24 of the same gray image: identical output");
	frame_free(&g);
	frame_free(&r);
	free(a);
	free(b);
}

/* a uniform NV12 frame (Y, U, V) vs a uniform RGB24 frame (r, g, b) */
static void check_color(const struct mm_mmproj *p, uint8_t Y, uint8_t U,
			uint8_t V, const uint8_t rgb[3], double tol)
{
	const struct mm_mmproj_vision *v = mm_mmproj_vision(p);
	size_t n = 3 * (size_t)v->image_size * v->image_size;
	float *a = malloc(n * sizeof(float)), *b = malloc(n * sizeof(float));
	struct frame y, r;
	double worst = 0;
	int ok = a && b && !frame_make(&y, MM_IMAGE_NV12, 20, 14, 4, 0) &&
		 !frame_make(&r, MM_IMAGE_RGB24, 20, 14, 0, 0);

	if (ok) {
		memset(y.buf[0], Y, y.im.stride[0] * 14);
		for (size_t i = 0; i < y.im.stride[1] * 7; i += 2) {
			y.buf[1][i] = U;
			y.buf[1][i + 1] = V;
		}
		for (size_t i = 0; i < 20 * 14; i++)
			memcpy(r.buf[0] + 3 * i, rgb, 3);
		ok = !mm_image_preprocess(p, &y.im, a, n, NULL, 0) &&
		     !mm_image_preprocess(p, &r.im, b, n, NULL, 0);
	}
	for (size_t i = 0; ok && i < n; i++) {
		size_t c = i / ((size_t)v->image_size * v->image_size);
		double d = fabs(a[i] - b[i]) * v->std[c] * 255.0;

		if (d > worst)
			worst = d;
	}
	tap_ok(ok && worst <= tol + 1e-3,
	       "NV12 Y %u U %u V %u == RGB %u,%u,%u (max %.3f levels, <= %.0f)",
	       Y, U, V, rgb[0], rgb[1], rgb[2], worst, tol);
	frame_free(&y);
	frame_free(&r);
	free(a);
	free(b);
}

static void check_errors(const struct mm_mmproj *p)
{
	const struct mm_mmproj_vision *v = mm_mmproj_vision(p);
	size_t n = 3 * (size_t)v->image_size * v->image_size;
	float *out = calloc(n, sizeof(float));
	struct frame f;
	struct mm_image im;
	char err[256];

#define EXPECT_ERR(im_, n_, what, needle) do {				\
		err[0] = 0;						\
		int r_ = mm_image_preprocess(p, im_, out, n_, err,	\
					     sizeof(err));		\
		tap_ok(r_ == -EINVAL && strstr(err, needle),		\
		       "rejects %s: %s", what, err);			\
	} while (0)

	if (!out || frame_make(&f, MM_IMAGE_NV12, 16, 16, 0, 0)) {
		tap_ok(0, "alloc");
		free(out);
		return;
	}
	im = f.im;
	im.width = 15;
	EXPECT_ERR(&im, n, "odd NV12 width", "even");
	im = f.im;
	im.height = 15;
	EXPECT_ERR(&im, n, "odd NV12 height", "even");
	im = f.im;
	im.plane[1] = NULL;
	EXPECT_ERR(&im, n, "NULL NV12 chroma plane", "NULL");
	im = f.im;
	im.plane[0] = NULL;
	EXPECT_ERR(&im, n, "NULL NV12 luma plane", "NULL");
	im = f.im;
	im.stride[0] = 15;
	EXPECT_ERR(&im, n, "NV12 luma stride < width", "stride");
	im = f.im;
	im.stride[1] = 8;
	EXPECT_ERR(&im, n, "NV12 chroma stride < width", "stride");
	EXPECT_ERR(&f.im, n - 1, "n_out one short", "n_out");
	EXPECT_ERR(&f.im, n + 3, "n_out too large", "n_out");
	im = f.im;
	im.format = MM_IMAGE_RGB24;
	im.stride[0] = 16 * 3 - 1;
	EXPECT_ERR(&im, n, "RGB24 stride < 3 x width", "stride");
	im.format = MM_IMAGE_GREY;
	im.stride[0] = 15;
	EXPECT_ERR(&im, n, "GREY stride < width", "stride");
	im.stride[0] = 16;
	im.plane[0] = NULL;
	EXPECT_ERR(&im, n, "NULL GREY plane", "NULL");
	im = f.im;
	im.format = 0x56595559; /* YUYV */
	EXPECT_ERR(&im, n, "unsupported format", "format");
	im = f.im;
	im.width = 0;
	EXPECT_ERR(&im, n, "zero width", "size");
	EXPECT_ERR(NULL, n, "NULL image", "NULL");
	err[0] = 0;
	tap_ok(mm_image_preprocess(p, &f.im, NULL, n, err, sizeof(err)) ==
	       -EINVAL, "rejects NULL output: %s", err);
	err[0] = 0;
	tap_ok(mm_image_preprocess(NULL, &f.im, out, n, err, sizeof(err)) ==
	       -EINVAL, "rejects NULL mmproj: %s", err);
#undef EXPECT_ERR
	frame_free(&f);
	free(out);
}

static void run_shape(const char *shape)
{
	struct mm_gen_mmproj_params gp = {
		.vision = shape, .type = MM_TYPE_F32, .seed = 3,
	};
	static const uint32_t sz[][2] = {
		{ 37, 23 }, { 5, 3 }, { 1, 1 }, { 1, 9 }, { 101, 77 },
		{ 640, 480 }, { 17, 64 },
	};
	static const uint32_t nv[][2] = {
		{ 38, 22 }, { 6, 4 }, { 2, 2 }, { 100, 78 }, { 640, 480 },
		{ 18, 64 },
	};
	struct mm_mmproj *p = NULL;
	char err[256] = "";
	void *buf = NULL;
	size_t size = 0;

	if (mm_gen_mmproj_mem(&gp, &buf, &size, err, sizeof(err)) ||
	    mm_mmproj_load_mem(buf, size, &p, err, sizeof(err))) {
		tap_ok(0, "%s: gen/load: %s", shape, err);
		free(buf);
		return;
	}
	tap_diag("%s: image_size %u mean %.4f %.4f %.4f std %.4f %.4f %.4f",
		 shape, mm_mmproj_vision(p)->image_size,
		 mm_mmproj_vision(p)->mean[0], mm_mmproj_vision(p)->mean[1],
		 mm_mmproj_vision(p)->mean[2], mm_mmproj_vision(p)->std[0],
		 mm_mmproj_vision(p)->std[1], mm_mmproj_vision(p)->std[2]);
	for (int k = 0; k < 3; k++) {
		for (size_t i = 0; i < sizeof(sz) / sizeof(sz[0]); i++) {
			check_ref(p, MM_IMAGE_GREY, sz[i][0], sz[i][1],
				  i & 1 ? 13 : 0, k);
			check_ref(p, MM_IMAGE_RGB24, sz[i][0], sz[i][1],
				  i & 1 ? 0 : 11, k);
		}
		for (size_t i = 0; i < sizeof(nv) / sizeof(nv[0]); i++)
			check_ref(p, MM_IMAGE_NV12, nv[i][0], nv[i][1],
				  i & 1 ? 9 : 0, k);
	}
	check_grey_rgb(p);
	{
		static const uint8_t black[3] = { 0, 0, 0 };
		static const uint8_t white[3] = { 255, 255, 255 };
		static const uint8_t gray[3] = { 128, 128, 128 };
		static const uint8_t red[3] = { 255, 0, 0 };
		static const uint8_t green[3] = { 0, 255, 1 };
		static const uint8_t blue[3] = { 0, 0, 255 };

		/* exact: full-range black, white, mid gray */
		check_color(p, 16, 128, 128, black, 0);
		check_color(p, 235, 128, 128, white, 0);
		check_color(p, 126, 128, 128, gray, 0);
		/* BT.601 limited-range primaries, within 1 level */
		check_color(p, 81, 90, 240, red, 1);
		check_color(p, 145, 54, 34, green, 1);
		check_color(p, 41, 240, 110, blue, 1);
	}
	check_errors(p);
	mm_mmproj_free(p);
	free(buf);
}

int main(void)
{
	run_shape("micro");
	run_shape("tiny");
	run_shape("tiny-mlp");
	return tap_done("imgproc");
}

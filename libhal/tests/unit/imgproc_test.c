// SPDX-License-Identifier: MIT
/*
 * imgproc_test.c - mm_image_preprocess() and the tile plan
 * (mm_image_plan(), mm_image_preprocess_tile()) against a double-precision
 * reference written here (whole frame first converted to a double RGB
 * image, NV12 by the BT.601 limited-range matrix in floating point
 * rounded to nearest; then clip.cpp's bilinear rule in double with the
 * 8-bit truncation; then (v/255 - mean)/std) on generated frames:
 * gradients, checkerboards and noise, odd sizes, upscaling and
 * downscaling, strides larger than the line with junk in the padding,
 * GREY/RGB24/NV12; GREY vs RGB24 of the same gray image bit-identical;
 * NV12 of known colours vs RGB24; the error cases.
 *
 * Tiles: mmprojs with clip.vision.preproc_image_size added; the plan's
 * grid vs the rule in exact integer arithmetic (longer side L, the other
 * ceil(short * L / long), both rounded up to multiples of S); every tile
 * vs a crop of the whole refined image computed in double by Lagrange
 * cubic interpolation through the 4x4 neighbours (the polynomial clip.cpp's
 * bicubic coefficients define), rounded once. Tolerance: GREY/RGB24 1
 * level, NV12 3 (the conversion's level scaled by the cubic's weights).
 * LLaVA (mlp) pad-to-square: content size by integer ceil, pad colour.
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
#include "gguf.h"
#include "imgproc.h"
#include "mmproj.h"
#include "quant.h"
#include "tests/tap.h"

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

/* ---- tiles -------------------------------------------------------------- */

/* buf with clip.vision.preproc_image_size = l (l 0: as is, the
 * generator's: image_size, the converter's default; NO_PREPROC: none) */
#define NO_PREPROC	UINT32_MAX
static void *with_preproc(const void *src, size_t n, uint32_t l,
			  size_t *size)
{
	struct mm_gguf_writer *w = mm_gguf_writer_new(MM_GGUF_DEFAULT_ALIGNMENT);
	struct mm_gguf *g = NULL;
	void *out = NULL;
	char err[256];
	int ret = !w ? -ENOMEM : mm_gguf_open_mem(src, n, &g, err, sizeof(err));

	for (uint64_t i = 0; !ret && i < mm_gguf_n_kv(g); i++) {
		const struct mm_gguf_kv *kv = mm_gguf_kv_at(g, i);

		if (!l || strcmp(kv->key, "clip.vision.preproc_image_size"))
			ret = mm_gguf_w_kv(w, kv);
	}
	if (!ret && l && l != NO_PREPROC)
		ret = mm_gguf_w_u32(w, "clip.vision.preproc_image_size", l);
	for (uint64_t i = 0; !ret && i < mm_gguf_n_tensors(g); i++) {
		const struct mm_gguf_tensor *t = mm_gguf_tensor_at(g, i);

		ret = mm_gguf_w_tensor(w, t->name, t->type, t->n_dims, t->ne,
				       t->data);
	}
	if (!ret)
		ret = mm_gguf_w_write_mem(w, &out, size, err, sizeof(err));
	mm_gguf_close(g);
	mm_gguf_writer_free(w);
	return ret ? NULL : out;
}

/* generated mmproj of shape with preproc_image_size l; *buf to free */
static struct mm_mmproj *load_shape(const char *shape, uint32_t l,
				    void **buf)
{
	struct mm_gen_mmproj_params gp = {
		.vision = shape, .type = MM_TYPE_F32, .seed = 3,
	};
	struct mm_mmproj *p = NULL;
	char err[256] = "";
	void *base = NULL;
	size_t n = 0, size = 0;

	*buf = NULL;
	if (mm_gen_mmproj_mem(&gp, &base, &n, err, sizeof(err)))
		return NULL;
	*buf = with_preproc(base, n, l, &size);
	free(base);
	if (!*buf || mm_mmproj_load_mem(*buf, size, &p, err, sizeof(err))) {
		tap_diag("%s + preproc %u: %s", shape, l, err);
		return NULL;
	}
	return p;
}

/* ceil(a / b) for integers */
static uint64_t cdiv(uint64_t a, uint64_t b)
{
	return (a + b - 1) / b;
}

/* the grid by the rule, in integers: cols x rows */
static void ref_grid(uint32_t w, uint32_t h, uint32_t l, uint32_t s,
		     uint32_t *cols, uint32_t *rows)
{
	/* the longer side -> l, the other side * l / longer; each rounded
	 * up to a multiple of s: ceil(side * l / (longer * s)) tiles */
	*cols = (uint32_t)(w >= h ? cdiv(l, s) :
			   cdiv((uint64_t)w * l, (uint64_t)h * s));
	*rows = (uint32_t)(h >= w ? cdiv(l, s) :
			   cdiv((uint64_t)h * l, (uint64_t)w * s));
}

/*
 * Plans on tiny (S 32). L 128 with S 32 is 2048 with 512 scaled by 2^-4:
 * the same floating-point roundings as SmolVLM's L 2048, S 512.
 */
static void check_plans(void)
{
	static const struct {
		uint32_t w, h, l;
	} c[] = {
		{ 960, 720, 128 },	/* 4 x 3, not 4 x 4 */
		{ 720, 960, 128 }, { 1920, 1080, 128 }, { 640, 480, 128 },
		{ 1000, 1, 128 }, { 1, 1000, 128 }, { 1, 1, 128 },
		{ 32, 32, 128 }, { 1279, 853, 128 }, { 65536, 65535, 128 },
		{ 37, 23, 96 }, { 23, 37, 96 }, { 64, 48, 96 },
		{ 48, 64, 100 }, { 333, 1000, 100 }, { 3, 2, 64 },
		{ 4000, 3000, 2048 }, { 3000, 4000, 2047 },
	};
	uint32_t last_l = 0, s = 32;
	struct mm_mmproj *p = NULL;
	void *buf = NULL;

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct mm_image_plan pl, p0;
		uint32_t cols, rows;
		char err[256] = "";
		int ret, ret0;

		if (c[i].l != last_l) {
			mm_mmproj_free(p);
			free(buf);
			p = load_shape("tiny", c[i].l, &buf);
			last_l = c[i].l;
		}
		if (!tap_ok(p != NULL, "tiny + preproc_image_size %u", c[i].l))
			continue;
		ref_grid(c[i].w, c[i].h, c[i].l, s, &cols, &rows);
		ret = mm_image_plan(p, c[i].w, c[i].h, 1, &pl, err, sizeof(err));
		ret0 = mm_image_plan(p, c[i].w, c[i].h, 0, &p0, NULL, 0);
		tap_ok(!ret && !ret0 && pl.n_cols == cols && pl.n_rows == rows &&
		       pl.refined_w == cols * s && pl.refined_h == rows * s &&
		       pl.n_images == cols * rows + 1 && pl.tile_size == s &&
		       pl.width == c[i].w && pl.height == c[i].h &&
		       pl.content_w == s && pl.content_x == 0 &&
		       pl.overview_resize == MM_IMAGE_BILINEAR &&
		       pl.tile_resize == MM_IMAGE_BICUBIC &&
		       p0.n_rows == 0 && p0.n_cols == 0 && p0.n_images == 1 &&
		       p0.refined_w == 0,
		       "plan %ux%u, L %u, S %u: %ux%u tiles (rule %ux%u), refined %ux%u; tiles 0: overview only %s",
		       c[i].w, c[i].h, c[i].l, s, pl.n_cols, pl.n_rows, cols,
		       rows, pl.refined_w, pl.refined_h, err);
	}
	mm_mmproj_free(p);
	free(buf);
}

/* Lagrange cubic through p[-1..2] (at -1, 0, 1, 2) at t */
static double lagrange(const double q[4], double t)
{
	return q[0] * (-t * (t - 1) * (t - 2) / 6) +
	       q[1] * ((t + 1) * (t - 1) * (t - 2) / 2) +
	       q[2] * (-(t + 1) * t * (t - 2) / 2) +
	       q[3] * ((t + 1) * t * (t - 1) / 6);
}

/* the whole refined image, 8-bit levels as doubles, CHW */
static double *ref_refined(const struct mm_image *im, uint32_t rw,
			   uint32_t rh)
{
	uint32_t w = im->width, h = im->height;
	double *rgb = ref_rgb(im);
	double *out = malloc(sizeof(double) * 3 * rw * rh);

	if (!rgb || !out) {
		free(rgb);
		free(out);
		return NULL;
	}
	for (uint32_t c = 0; c < 3; c++)
		for (uint32_t i = 0; i < rh; i++)
			for (uint32_t j = 0; j < rw; j++) {
				double sy = (double)h * i / rh, sx = (double)w * j / rw;
				long y = (long)floor(sy), x = (long)floor(sx);
				double q[4], col[4], val;

				if (rw == w && rh == h) {
					val = rgb[3 * ((size_t)i * w + j) + c];
					goto put;
				}
				for (int a = 0; a < 4; a++) {
					long yy = y - 1 + a;

					yy = yy < 0 ? 0 : yy >= (long)h ? (long)h - 1 : yy;
					for (int b = 0; b < 4; b++) {
						long xx = x - 1 + b;

						xx = xx < 0 ? 0 : xx >= (long)w ? (long)w - 1 : xx;
						q[b] = rgb[3 * ((size_t)yy * w + (size_t)xx) + c];
					}
					col[a] = lagrange(q, sx - x);
				}
				val = round(lagrange(col, sy - y));
				val = val < 0 ? 0 : val > 255 ? 255 : val;
put:
				out[((size_t)c * rh + i) * rw + j] = val;
			}
	free(rgb);
	return out;
}

static void check_tiles(const struct mm_mmproj *p, uint32_t fmt, uint32_t w,
			uint32_t h, size_t pad, int kind)
{
	const struct mm_mmproj_vision *v = mm_mmproj_vision(p);
	uint32_t s = v->image_size, cols, rows;
	size_t n = 3 * (size_t)s * s, exact = 0, total = 0;
	double lv = fmt == MM_IMAGE_NV12 ? 3 : 1, worst = 0;
	float *out = malloc(n * sizeof(float));
	struct mm_image_plan pl;
	double *ref = NULL;
	char err[256] = "";
	struct frame f;
	int ok = 1;

	if (frame_make(&f, fmt, w, h, pad, kind) || !out) {
		tap_ok(0, "alloc");
		goto done;
	}
	ref_grid(w, h, v->preproc_image_size, s, &cols, &rows);
	if (mm_image_plan(p, w, h, 1, &pl, err, sizeof(err)) ||
	    pl.n_cols != cols || pl.n_rows != rows) {
		tap_ok(0, "%s %ux%u plan: %s", fmt_name(fmt), w, h, err);
		goto done;
	}
	ref = ref_refined(&f.im, pl.refined_w, pl.refined_h);
	for (uint32_t t = 0; ref && t < rows * cols; t++) {
		uint32_t r = t / cols, cc = t % cols;

		if (mm_image_preprocess_tile(p, &f.im, &pl, (int)t, out, n, err,
					     sizeof(err))) {
			ok = 0;
			break;
		}
		for (uint32_t c = 0; c < 3; c++)
			for (uint32_t i = 0; i < s; i++)
				for (uint32_t j = 0; j < s; j++) {
					double e = ref[((size_t)c * pl.refined_h +
							r * s + i) * pl.refined_w +
						       cc * s + j];
					double got = out[((size_t)c * s + i) * s + j];
					double d = fabs(got - (e / 255.0 - v->mean[c]) /
							      v->std[c]) *
						   v->std[c] * 255.0;

					if (d > worst)
						worst = d;
					exact += d < 1e-3;
					total++;
					if (d > lv + 1e-3)
						ok = 0;
				}
	}
	tap_ok(ok && ref, "%s %ux%u pad %zu pattern %d: %ux%u tiles of %u (refined %ux%u): max %.3f levels (<= %.0f), %.1f%% exact %s",
	       fmt_name(fmt), w, h, pad, kind, cols, rows, s, pl.refined_w,
	       pl.refined_h, worst, lv, total ? 100.0 * exact / total : 0.0, err);
done:
	free(ref);
	free(out);
	frame_free(&f);
}

static void check_tile_errors(const struct mm_mmproj *p)
{
	const struct mm_mmproj_vision *v = mm_mmproj_vision(p);
	size_t n = 3 * (size_t)v->image_size * v->image_size;
	float *out = calloc(n, sizeof(float));
	struct mm_image_plan pl, bad;
	struct frame f;
	char err[256];
	int nt;

#define EXPECT_TERR(pl_, t_, needle) do {					\
		err[0] = 0;							\
		int r_ = mm_image_preprocess_tile(p, &f.im, pl_, t_, out, n,	\
						  err, sizeof(err));		\
		tap_ok(r_ == -EINVAL && strstr(err, needle),			\
		       "tile rejects %s: %s", #pl_ ", " #t_, err);		\
	} while (0)

	if (!out || frame_make(&f, MM_IMAGE_RGB24, 50, 30, 0, 0) ||
	    mm_image_plan(p, 50, 30, 1, &pl, NULL, 0)) {
		tap_ok(0, "alloc/plan");
		free(out);
		return;
	}
	nt = (int)(pl.n_rows * pl.n_cols);
	EXPECT_TERR(&pl, nt, "out of range");
	EXPECT_TERR(&pl, -2, "out of range");
	EXPECT_TERR(NULL, 0, "plan is NULL");
	bad = pl;
	bad.n_cols++;
	EXPECT_TERR(&bad, 0, "not made by mm_image_plan");
	bad = pl;
	bad.refined_w = 1u << 30;
	EXPECT_TERR(&bad, 0, "not made by mm_image_plan");
	bad = pl;
	bad.content_x = 5;
	EXPECT_TERR(&bad, -1, "not made by mm_image_plan");
	bad = pl;
	bad.width = 49;
	EXPECT_TERR(&bad, 0, "plan is for a 49x30 image");
	err[0] = 0;
	tap_ok(mm_image_preprocess_tile(p, &f.im, &pl, 0, out, n - 1, err,
					sizeof(err)) == -EINVAL &&
	       strstr(err, "n_out"), "tile rejects short n_out: %s", err);
	mm_image_plan(p, 50, 30, 0, &bad, NULL, 0);
	EXPECT_TERR(&bad, 0, "out of range");
	tap_ok(!mm_image_preprocess_tile(p, &f.im, &bad, -1, out, n, NULL, 0),
	       "overview-only plan: tile -1 works");
#undef EXPECT_TERR
	err[0] = 0;
	tap_ok(mm_image_plan(p, 0, 5, 1, &pl, err, sizeof(err)) == -EINVAL &&
	       strstr(err, "size"), "plan rejects width 0: %s", err);
	err[0] = 0;
	tap_ok(mm_image_plan(p, 5, 65537, 1, &pl, err, sizeof(err)) == -EINVAL &&
	       strstr(err, "size"), "plan rejects height 65537: %s", err);
	err[0] = 0;
	tap_ok(mm_image_plan(p, 5, 5, 1, NULL, err, sizeof(err)) == -EINVAL &&
	       strstr(err, "NULL"), "plan rejects NULL out: %s", err);
	err[0] = 0;
	tap_ok(mm_image_plan(NULL, 5, 5, 1, &pl, err, sizeof(err)) == -EINVAL,
	       "plan rejects NULL mmproj: %s", err);
	frame_free(&f);
	free(out);
}

static void run_tiles(void)
{
	static const uint32_t sz[][2] = {
		{ 37, 23 }, { 23, 37 }, { 1, 1 }, { 32, 32 }, { 96, 96 },
		{ 101, 77 }, { 5, 300 }, { 200, 150 },
	};
	static const uint32_t nv[][2] = {
		{ 38, 22 }, { 2, 2 }, { 96, 96 }, { 100, 78 }, { 64, 480 },
	};
	void *buf;
	struct mm_mmproj *p = load_shape("tiny", 96, &buf);
	struct mm_image_plan pl;
	char err[256] = "";

	if (!tap_ok(p && mm_mmproj_vision(p)->preproc_image_size == 96,
		    "tiny + preproc_image_size 96 loads"))
		goto out;
	for (int k = 0; k < 3; k++) {
		for (size_t i = 0; i < sizeof(sz) / sizeof(sz[0]); i++) {
			check_tiles(p, MM_IMAGE_GREY, sz[i][0], sz[i][1],
				    i & 1 ? 5 : 0, k);
			check_tiles(p, MM_IMAGE_RGB24, sz[i][0], sz[i][1],
				    i & 1 ? 0 : 7, k);
		}
		for (size_t i = 0; i < sizeof(nv) / sizeof(nv[0]); i++)
			check_tiles(p, MM_IMAGE_NV12, nv[i][0], nv[i][1],
				    i & 1 ? 3 : 0, k);
		/* the overview of a tiled file is the plain one */
		check_ref(p, MM_IMAGE_RGB24, 101, 77, 0, k);
	}
	check_tile_errors(p);
	mm_mmproj_free(p);
	free(buf);
	/* a grid over 64 per side is refused */
	p = load_shape("tiny", 65536, &buf);
	tap_ok(p && mm_image_plan(p, 100, 100, 1, &pl, err, sizeof(err)) ==
	       -EINVAL && strstr(err, "over 64"), "plan rejects 2048x2048 tiles: %s",
	       err);
	mm_mmproj_free(p);
	free(buf);
	/* mlp: never tiles; idefics3 without the key: overview only */
	p = load_shape("tiny-mlp", 0, &buf);
	if (p) {
		static const uint32_t m[][2] = {
			{ 64, 32 }, { 32, 64 }, { 37, 23 }, { 1, 1000 },
			{ 1000, 3 }, { 32, 32 }, { 100, 100 }, { 33, 31 },
		};

		for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
			uint32_t w = m[i][0], h = m[i][1], cw = 32, ch = 32;
			int r = mm_image_plan(p, w, h, 1, &pl, NULL, 0);

			if (w > h)
				ch = (uint32_t)cdiv((uint64_t)h * 32, w);
			if (h > w)
				cw = (uint32_t)cdiv((uint64_t)w * 32, h);
			tap_ok(!r && pl.n_images == 1 && pl.content_w == cw &&
			       pl.content_h == ch && pl.content_x == (32 - cw) / 2 &&
			       pl.content_y == (32 - ch) / 2 &&
			       (cw == 32 && ch == 32 ? pl.pad_rgb[0] == 0 :
				pl.pad_rgb[0] == 122 && pl.pad_rgb[1] == 116 &&
				pl.pad_rgb[2] == 104),
			       "mlp plan %ux%u: content %ux%u at %u,%u (rule %ux%u), pad %u,%u,%u",
			       w, h, pl.content_w, pl.content_h, pl.content_x,
			       pl.content_y, cw, ch, pl.pad_rgb[0], pl.pad_rgb[1],
			       pl.pad_rgb[2]);
		}
		check_ref(p, MM_IMAGE_NV12, 64, 20, 4, 2);
		check_ref(p, MM_IMAGE_GREY, 7, 90, 0, 0);
		check_ref(p, MM_IMAGE_RGB24, 32, 32, 0, 2);
	}
	mm_mmproj_free(p);
	free(buf);
	p = load_shape("tiny", NO_PREPROC, &buf);
	tap_ok(p && !mm_image_plan(p, 300, 100, 1, &pl, NULL, 0) &&
	       pl.n_images == 1 && pl.n_rows == 0,
	       "idefics3 without preproc_image_size: overview only");
	mm_mmproj_free(p);
	free(buf);
	/* the generator's file, as the converter's: preproc_image_size =
	 * image_size, so mtmd's grid is one tile whatever the frame */
	p = load_shape("tiny", 0, &buf);
	tap_ok(p && mm_mmproj_vision(p)->preproc_image_size == 32 &&
	       !mm_image_plan(p, 300, 100, 1, &pl, NULL, 0) &&
	       pl.n_images == 2 && pl.n_rows == 1 && pl.n_cols == 1 &&
	       pl.refined_w == 32 && pl.refined_h == 32,
	       "idefics3 as generated (preproc_image_size = image_size): one tile + overview");
	mm_mmproj_free(p);
	free(buf);
out:
	return;
}

int main(void)
{
	run_shape("micro");
	run_shape("tiny");
	run_shape("tiny-mlp");
	check_plans();
	run_tiles();
	return tap_done("imgproc");
}

// SPDX-License-Identifier: MIT
/*
 * calib_cap.c - the captures of the calibration (files, synthetic
 * generators) and the encoders run on them in each mode, with the
 * agreement of a mode with the float reference (see calib.h). Apart from
 * calib.c because it needs the audio front end (FFTW) and the image
 * preprocessing, which the encoders' own objects do not.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "audio.h"
#include "calib.h"
#include "gguf.h"
#include "imgproc.h"
#include "vision.h"

/* ---- captures ---------------------------------------------------------- */

#define CAP_HDR		32
static const uint8_t cap_magic[8] = { 'M', 'M', 'C', 'A', 'P', 0, 0, 1 };

static uint32_t cap_u32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static void cap_put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> 8 * i);
}

/* bytes of an image payload; 0 for a bad format or size */
static size_t cap_image_bytes(uint32_t fmt, uint32_t w, uint32_t h)
{
	if (!w || !h || w > 4096 || h > 4096)
		return 0;
	switch (fmt) {
	case MM_IMAGE_GREY:
		return (size_t)w * h;
	case MM_IMAGE_RGB24:
		return (size_t)w * h * 3;
	case MM_IMAGE_NV12:
		return (w | h) & 1 ? 0 : (size_t)w * h * 3 / 2;
	}
	return 0;
}

static void cap_image_planes(struct mm_cal_capture *c, uint32_t fmt,
			     uint32_t w, uint32_t h)
{
	c->kind = MM_CAL_CAP_IMAGE;
	c->im.format = fmt;
	c->im.width = w;
	c->im.height = h;
	c->im.plane[0] = c->data;
	c->im.stride[0] = (size_t)w * (fmt == MM_IMAGE_RGB24 ? 3 : 1);
	c->im.plane[1] = fmt == MM_IMAGE_NV12 ? (const uint8_t *)c->data +
			 (size_t)w * h : NULL;
	c->im.stride[1] = fmt == MM_IMAGE_NV12 ? w : 0;
}

void mm_cal_capture_free(struct mm_cal_capture *c)
{
	if (!c)
		return;
	free(c->data);
	memset(c, 0, sizeof(*c));
}

int mm_cal_capture_read(const char *path, struct mm_cal_capture *c,
			char *err, size_t errlen)
{
	uint8_t h[CAP_HDR];
	FILE *f;
	uint64_t bytes;
	uint32_t kind, fmt, a, b;
	long size = -1;
	int ret = 0;

	memset(c, 0, sizeof(*c));
	f = fopen(path, "rb");
	if (!f)
		return mm_errf(-errno, err, errlen, "capture %s: %s", path,
			       strerror(errno));
	if (fread(h, 1, CAP_HDR, f) != CAP_HDR ||
	    memcmp(h, cap_magic, sizeof(cap_magic))) {
		ret = mm_errf(-EINVAL, err, errlen,
			      "capture %s: not a capture file (no MMCAP v1 header)",
			      path);
		goto out;
	}
	kind = cap_u32(h + 8);
	fmt = cap_u32(h + 12);
	a = cap_u32(h + 16);
	b = cap_u32(h + 20);
	bytes = (uint64_t)cap_u32(h + 24) | (uint64_t)cap_u32(h + 28) << 32;
	if (kind == MM_CAL_CAP_IMAGE) {
		size_t want = cap_image_bytes(fmt, a, b);

		if (!want || bytes != want) {
			ret = mm_errf(-EINVAL, err, errlen,
				      "capture %s: image format 0x%08x %ux%u with %llu bytes (GREY/RGB24/NV12, 1..4096 a side, NV12 even, packed lines)",
				      path, fmt, a, b, (unsigned long long)bytes);
			goto out;
		}
	} else if (kind == MM_CAL_CAP_AUDIO) {
		if (fmt != 1 || a != MM_AUDIO_RATE || b != 1 || !bytes ||
		    bytes % 2 || bytes > (uint64_t)30 * MM_AUDIO_RATE * 2) {
			ret = mm_errf(-EINVAL, err, errlen,
				      "capture %s: audio format %u, %u Hz, %u channels, %llu bytes (S16LE=1, %u Hz, mono, 1 sample to 30 s)",
				      path, fmt, a, b, (unsigned long long)bytes,
				      MM_AUDIO_RATE);
			goto out;
		}
	} else {
		ret = mm_errf(-EINVAL, err, errlen,
			      "capture %s: kind %u is not 1 (image) or 2 (audio)",
			      path, kind);
		goto out;
	}
	if (fseek(f, 0, SEEK_END) || (size = ftell(f)) < 0 ||
	    (uint64_t)size != CAP_HDR + bytes) {
		ret = mm_errf(-EINVAL, err, errlen,
			      "capture %s: %ld bytes, the header says %llu",
			      path, size, (unsigned long long)(CAP_HDR + bytes));
		goto out;
	}
	c->data = malloc((size_t)bytes);
	if (!c->data) {
		ret = mm_errf(-ENOMEM, err, errlen, "capture %s: out of memory",
			      path);
		goto out;
	}
	c->bytes = (size_t)bytes;
	if (fseek(f, CAP_HDR, SEEK_SET) ||
	    fread(c->data, 1, c->bytes, f) != c->bytes) {
		ret = mm_errf(-EIO, err, errlen, "capture %s: short read", path);
		goto out;
	}
	if (kind == MM_CAL_CAP_IMAGE) {
		cap_image_planes(c, fmt, a, b);
	} else {
		c->kind = MM_CAL_CAP_AUDIO;
		c->pcm = c->data;
		c->n_samples = c->bytes / 2;
	}
out:
	fclose(f);
	if (ret)
		mm_cal_capture_free(c);
	return ret;
}

int mm_cal_capture_write(const char *path, const struct mm_cal_capture *c,
			 char *err, size_t errlen)
{
	uint8_t h[CAP_HDR] = { 0 };
	uint64_t bytes;
	FILE *f;
	int ret = 0;

	memcpy(h, cap_magic, sizeof(cap_magic));
	cap_put32(h + 8, (uint32_t)c->kind);
	if (c->kind == MM_CAL_CAP_IMAGE) {
		bytes = cap_image_bytes(c->im.format, c->im.width, c->im.height);
		cap_put32(h + 12, c->im.format);
		cap_put32(h + 16, c->im.width);
		cap_put32(h + 20, c->im.height);
		if (!bytes || bytes != c->bytes)
			return mm_errf(-EINVAL, err, errlen,
				       "capture %s: not a packed GREY/RGB24/NV12 image",
				       path);
	} else if (c->kind == MM_CAL_CAP_AUDIO) {
		bytes = (uint64_t)c->n_samples * 2;
		cap_put32(h + 12, 1);
		cap_put32(h + 16, MM_AUDIO_RATE);
		cap_put32(h + 20, 1);
		if (!c->n_samples)
			return mm_errf(-EINVAL, err, errlen,
				       "capture %s: no samples", path);
	} else {
		return mm_errf(-EINVAL, err, errlen, "capture %s: unknown kind",
			       path);
	}
	cap_put32(h + 24, (uint32_t)bytes);
	cap_put32(h + 28, (uint32_t)(bytes >> 32));
	f = fopen(path, "wb");
	if (!f)
		return mm_errf(-errno, err, errlen, "capture %s: %s", path,
			       strerror(errno));
	if (fwrite(h, 1, CAP_HDR, f) != CAP_HDR ||
	    fwrite(c->kind == MM_CAL_CAP_IMAGE ? c->data : (const void *)c->pcm,
		   1, (size_t)bytes, f) != bytes)
		ret = -EIO;
	if (fclose(f) && !ret)
		ret = -EIO;
	if (ret)
		mm_errf(ret, err, errlen, "capture %s: write failed", path);
	return ret;
}

static uint64_t cap_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

int mm_cal_synth_image(struct mm_cal_capture *c, uint32_t fmt, uint32_t w,
		       uint32_t h, int style, uint64_t seed)
{
	const size_t bytes = cap_image_bytes(fmt, w, h);
	uint64_t r = seed * 0x9e3779b97f4a7c15ull + 1;
	uint8_t *rgb, *d;
	const double cx = w * (0.3 + 0.4 * (seed % 7) / 6.0);
	const double cy = h * (0.3 + 0.4 * (seed % 5) / 4.0);
	const double rad = (w < h ? w : h) * (0.15 + 0.05 * (seed % 3));

	memset(c, 0, sizeof(*c));
	if (!bytes)
		return -EINVAL;
	rgb = malloc((size_t)w * h * 3);
	d = malloc(bytes);
	if (!rgb || !d) {
		free(rgb);
		free(d);
		return -ENOMEM;
	}
	for (uint32_t y = 0; y < h; y++)
		for (uint32_t x = 0; x < w; x++) {
			uint8_t *px = rgb + ((size_t)y * w + x) * 3;

			if (style) {	/* noise */
				uint64_t v = cap_rand(&r);

				px[0] = (uint8_t)v;
				px[1] = (uint8_t)(v >> 8);
				px[2] = (uint8_t)(v >> 16);
				continue;
			}
			/* a gradient, a bar that moves with the seed, a disc */
			double g = 40 + 150.0 * x / w + 30.0 * y / h;
			int bar = (x + seed * w / 5) % w < w / 8;
			double dx = x - cx, dy = y - cy;
			int disc = dx * dx + dy * dy < rad * rad;

			px[0] = (uint8_t)(bar ? 230 : disc ? 200 : g);
			px[1] = (uint8_t)(bar ? 220 : disc ? 60 : g * 0.8 + (y % 16) * 2);
			px[2] = (uint8_t)(bar ? 40 : disc ? 50 : 255 - g);
		}
	if (fmt == MM_IMAGE_RGB24) {
		memcpy(d, rgb, bytes);
	} else {
		/* BT.601 limited range, as a camera's NV12 */
		for (size_t i = 0; i < (size_t)w * h; i++) {
			const uint8_t *p = rgb + 3 * i;

			d[i] = (uint8_t)lrint(16 + (65.481 * p[0] + 128.553 * p[1] +
						     24.966 * p[2]) / 255);
		}
		if (fmt == MM_IMAGE_NV12)
			for (uint32_t y = 0; y < h / 2; y++)
				for (uint32_t x = 0; x < w / 2; x++) {
					const uint8_t *p = rgb + ((size_t)(2 * y) * w +
								  2 * x) * 3;
					uint8_t *uv = d + (size_t)w * h +
						      (size_t)y * w + 2 * x;

					uv[0] = (uint8_t)lrint(128 + (-37.797 * p[0] -
						74.203 * p[1] + 112.0 * p[2]) / 255);
					uv[1] = (uint8_t)lrint(128 + (112.0 * p[0] -
						93.786 * p[1] - 18.214 * p[2]) / 255);
				}
	}
	free(rgb);
	c->data = d;
	c->bytes = bytes;
	cap_image_planes(c, fmt, w, h);
	return 0;
}

int mm_cal_synth_audio(struct mm_cal_capture *c, size_t n_samples, int style,
		       uint64_t seed)
{
	int16_t *a;
	uint64_t r = seed * 0x9e3779b97f4a7c15ull + 7;

	memset(c, 0, sizeof(*c));
	if (!n_samples || n_samples > (size_t)30 * MM_AUDIO_RATE)
		return -EINVAL;
	a = malloc(n_samples * sizeof(*a));
	if (!a)
		return -ENOMEM;
	for (size_t i = 0; i < n_samples; i++) {
		double t = (double)i / MM_AUDIO_RATE, v;

		if (style) {	/* white noise, full scale */
			v = (double)(int16_t)(cap_rand(&r) >> 48);
		} else {	/* a sweeping tone and a second tone, modulated */
			double f0 = 140 + 30.0 * (seed % 5) + 60 * sin(3 * t);

			v = 6000 * sin(2 * M_PI * f0 * t) *
			    (0.6 + 0.4 * sin(2 * M_PI * 4 * t)) +
			    2500 * sin(2 * M_PI * (900 + 100.0 * (seed % 3)) * t);
		}
		a[i] = (int16_t)(v > 32767 ? 32767 : v < -32768 ? -32768 : v);
	}
	c->kind = MM_CAL_CAP_AUDIO;
	c->data = a;
	c->bytes = n_samples * sizeof(*a);
	c->pcm = a;
	c->n_samples = n_samples;
	return 0;
}

/* ---- encoding and agreement -------------------------------------------- */

int mm_cal_encode(const struct mm_mmproj *p, struct mm_calib *c, int mode,
		  const struct mm_cal_capture *cap, int n_threads,
		  float **out, size_t *n_rows, size_t *n_embd, char *err,
		  size_t errlen)
{
	float *o = NULL;
	int ret;

	*out = NULL;
	*n_rows = *n_embd = 0;
	if (mode == MM_CAL_STATIC && (!c || !c->prepared))
		return mm_errf(-EINVAL, err, errlen,
			       "static int8 mode without a prepared calibration");
	if (cap->kind == MM_CAL_CAP_IMAGE) {
		const size_t n_px = mm_vision_n_pixels(p);
		const size_t nt = mm_vision_n_tokens(p), ne = mm_vision_n_embd_out(p);
		float *px;

		if (!n_px)
			return mm_errf(-ENOENT, err, errlen,
				       "the mmproj has no vision encoder");
		px = malloc(n_px * sizeof(float));
		o = malloc(nt * ne * sizeof(float));
		if (!px || !o) {
			free(px);
			free(o);
			return mm_errf(-ENOMEM, err, errlen, "out of memory");
		}
		ret = mm_image_preprocess(p, &cap->im, px, n_px, err, errlen);
		if (!ret)
			ret = mm_vision_encode_cal(p, c, mode, px, n_px, o, nt * ne,
						   n_threads, err, errlen);
		free(px);
		if (ret) {
			free(o);
			return ret;
		}
		*out = o;
		*n_rows = nt;
		*n_embd = ne;
		return 0;
	}
	if (cap->kind != MM_CAL_CAP_AUDIO)
		return mm_errf(-EINVAL, err, errlen, "capture of unknown kind");
	{
		const size_t ne = mm_audio_n_embd_out(p);
		float *mel = NULL;
		size_t nf = 0, rows = 0;

		if (!ne)
			return mm_errf(-ENOENT, err, errlen,
				       "the mmproj has no audio encoder");
		ret = mm_audio_mel(p, cap->pcm, cap->n_samples, 0, &mel, &nf,
				   err, errlen);
		if (ret)
			return ret;
		for (size_t k = 0; k < mm_audio_n_chunks(nf) && !ret; k++) {
			const float *win;
			const size_t f = mm_audio_chunk(p, mel, nf, k, &win);
			const size_t nt = mm_audio_n_tokens(p, f, 0);
			float *no;

			if (!f)
				continue;
			if (!nt) {
				ret = mm_errf(-EINVAL, err, errlen,
					      "audio window of %zu mel frames is longer than the encoder takes",
					      f);
				break;
			}
			no = realloc(o, (rows + nt) * ne * sizeof(float));
			if (!no) {
				ret = mm_errf(-ENOMEM, err, errlen, "out of memory");
				break;
			}
			o = no;
			ret = mm_audio_encode_cal(p, c, mode, win, f, 0,
						  o + rows * ne, nt * ne,
						  n_threads, err, errlen);
			rows += nt;
		}
		free(mel);
		if (!ret && !rows)
			ret = mm_errf(-EINVAL, err, errlen,
				      "audio of %zu samples gives no encoder window",
				      cap->n_samples);
		if (ret) {
			free(o);
			return ret;
		}
		*out = o;
		*n_rows = rows;
		*n_embd = ne;
	}
	return 0;
}

static double cal_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int mm_cal_agreement(const struct mm_mmproj *p, struct mm_calib *c, int mode,
		     const struct mm_cal_capture *caps, int n_caps,
		     int n_threads, float **refs, struct mm_cal_agree *out,
		     char *err, size_t errlen)
{
	double sum = 0;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	out->cos_min = 1;
	if (mode != MM_CAL_STATIC && mode != MM_CAL_DYNAMIC)
		return mm_errf(-EINVAL, err, errlen,
			       "agreement: the mode must be static or dynamic");
	if (n_caps < 1)
		return mm_errf(-EINVAL, err, errlen, "agreement: no captures");
	for (int i = 0; i < n_caps && !ret; i++) {
		float *ref = refs ? refs[i] : NULL, *y = NULL;
		size_t nr = 0, ne = 0, nr2, ne2;
		double t0;

		t0 = cal_ms();
		ret = mm_cal_encode(p, c, mode, &caps[i], n_threads, &y, &nr2,
				    &ne2, err, errlen);
		out->ms += cal_ms() - t0;
		if (!ret && !ref) {
			t0 = cal_ms();
			ret = mm_cal_encode(p, NULL, MM_CAL_FLOAT, &caps[i],
					    n_threads, &ref, &nr, &ne, err, errlen);
			out->ms_float += cal_ms() - t0;
			if (!ret && refs)
				refs[i] = ref;
			if (!ret && (nr2 != nr || ne2 != ne))
				ret = mm_errf(-EINVAL, err, errlen,
					      "agreement: the modes give different shapes");
		}
		/* a kept reference is of the same capture: the same shape */
		nr = nr2;
		ne = ne2;
		for (size_t r = 0; !ret && r < nr; r++) {
			const float *a = ref + r * ne, *b = y + r * ne;
			double ab = 0, aa = 0, bb = 0, cs;

			for (size_t j = 0; j < ne; j++) {
				ab += (double)a[j] * b[j];
				aa += (double)a[j] * a[j];
				bb += (double)b[j] * b[j];
			}
			cs = aa > 0 && bb > 0 ? ab / sqrt(aa * bb) :
			     aa == bb ? 1 : 0;
			sum += cs;
			if (cs < out->cos_min)
				out->cos_min = cs;
			out->rows++;
		}
		if (!refs)
			free(ref);
		free(y);
	}
	if (!ret)
		out->cos_mean = out->rows ? sum / (double)out->rows : 0;
	return ret;
}

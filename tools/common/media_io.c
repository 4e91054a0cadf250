// SPDX-License-Identifier: MIT
/*
 * The tools' media input; see media_io.h. (Was mmrun's.)
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "media_io.h"

#ifdef MEDIA_IO_PNG
#include <png.h>
#endif

bool media_png(void)
{
#ifdef MEDIA_IO_PNG
	return true;
#else
	return false;
#endif
}

/* The message into @err; returns @ret. */
__attribute__((format(printf, 4, 5)))
static int media_fail(char *err, size_t errlen, int ret, const char *fmt, ...)
{
	va_list ap;

	if (errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return ret;
}

static int read_file(const char *path, uint8_t **buf, size_t *size,
		     char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	long n;
	int ret;

	*buf = NULL;
	if (!f) {
		ret = -errno;
		return media_fail(err, errlen, ret, "%s: %s", path,
				  strerror(-ret));
	}
	if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET)) {
		fclose(f);
		return media_fail(err, errlen, -EIO,
				  "%s: cannot size the file", path);
	}
	*buf = malloc(n ? (size_t)n : 1);
	if (!*buf || fread(*buf, 1, (size_t)n, f) != (size_t)n) {
		ret = *buf ? -EIO : -ENOMEM;
		fclose(f);
		free(*buf);
		*buf = NULL;
		return media_fail(err, errlen, ret, "%s: read failed", path);
	}
	fclose(f);
	*size = (size_t)n;
	return 0;
}

/* ---- images ------------------------------------------------------------- */

/* One PNM header number after whitespace and comments. */
static int pnm_num(const uint8_t *b, size_t n, size_t *i, uint32_t *v)
{
	uint64_t x = 0;
	size_t d = 0;

	for (;;) {
		while (*i < n && (b[*i] == ' ' || b[*i] == '\t' ||
				  b[*i] == '\n' || b[*i] == '\r'))
			(*i)++;
		if (*i < n && b[*i] == '#') {
			while (*i < n && b[*i] != '\n')
				(*i)++;
			continue;
		}
		break;
	}
	while (*i < n && b[*i] >= '0' && b[*i] <= '9' && d < 10) {
		x = x * 10 + (uint64_t)(b[*i] - '0');
		(*i)++;
		d++;
	}
	if (!d || x > 0xffffffffu || (*i < n && b[*i] >= '0' && b[*i] <= '9'))
		return -1;
	*v = (uint32_t)x;
	return 0;
}

static int read_pnm(const char *path, const uint8_t *b, size_t n,
		    struct media_image *img, char *err, size_t errlen)
{
	uint32_t w, h, maxv, ch;
	size_t i = 2, need;

	if (n < 2 || b[0] != 'P' || (b[1] != '5' && b[1] != '6'))
		return media_fail(err, errlen, -EINVAL,
				  "%s: not a binary PNM (P5/P6)%s", path,
				  media_png() ? " or PNG" :
				  " (PNG needs a build with libpng)");
	ch = b[1] == '6' ? 3 : 1;
	if (pnm_num(b, n, &i, &w) || pnm_num(b, n, &i, &h) ||
	    pnm_num(b, n, &i, &maxv))
		return media_fail(err, errlen, -EINVAL,
				  "%s: PNM header: bad width, height or maxval",
				  path);
	if (!w || !h || w > 65536 || h > 65536)
		return media_fail(err, errlen, -EINVAL,
				  "%s: PNM size %ux%u out of range (1..65536)",
				  path, w, h);
	if (maxv != 255)
		return media_fail(err, errlen, -EINVAL,
				  "%s: PNM maxval %u, only 255 (8 bits) is read",
				  path, maxv);
	if (i >= n || (b[i] != ' ' && b[i] != '\n' && b[i] != '\r' &&
		       b[i] != '\t'))
		return media_fail(err, errlen, -EINVAL,
				  "%s: PNM header: no whitespace before the pixels",
				  path);
	i++;
	need = (size_t)w * h * ch;
	if (n - i < need)
		return media_fail(err, errlen, -EINVAL,
				  "%s: PNM pixels: %zu bytes, %ux%u needs %zu",
				  path, n - i, w, h, need);
	img->pix = malloc(need);
	if (!img->pix)
		return media_fail(err, errlen, -ENOMEM, "%s: out of memory",
				  path);
	memcpy(img->pix, b + i, need);
	img->fourcc = ch == 3 ? MMHAL_IMAGE_RGB24 : MMHAL_IMAGE_GREY;
	img->width = w;
	img->height = h;
	img->stride = (size_t)w * ch;
	return 0;
}

#ifdef MEDIA_IO_PNG
static int read_png(const char *path, const uint8_t *b, size_t n,
		    struct media_image *img, char *err, size_t errlen)
{
	static const png_color black = { 0, 0, 0 };
	png_image im;

	memset(&im, 0, sizeof(im));
	im.version = PNG_IMAGE_VERSION;
	if (!png_image_begin_read_from_memory(&im, b, n))
		return media_fail(err, errlen, -EINVAL, "%s: PNG: %s", path,
				  im.message);
	if (!im.width || !im.height || im.width > 65536 || im.height > 65536) {
		png_image_free(&im);
		return media_fail(err, errlen, -EINVAL,
				  "%s: PNG size %ux%u out of range (1..65536)",
				  path, im.width, im.height);
	}
	/* alpha composited onto black; colour or grey as stored */
	im.format = im.format & PNG_FORMAT_FLAG_COLOR ? PNG_FORMAT_RGB :
							PNG_FORMAT_GRAY;
	img->pix = malloc(PNG_IMAGE_SIZE(im));
	if (!img->pix) {
		png_image_free(&im);
		return media_fail(err, errlen, -ENOMEM, "%s: out of memory",
				  path);
	}
	/*
	 * Without a background, libpng composites onto what the buffer
	 * holds: malloc()'s leftovers.
	 */
	if (!png_image_finish_read(&im, &black, img->pix, 0, NULL)) {
		free(img->pix);
		img->pix = NULL;
		return media_fail(err, errlen, -EINVAL, "%s: PNG: %s", path,
				  im.message);
	}
	img->fourcc = im.format == PNG_FORMAT_RGB ? MMHAL_IMAGE_RGB24 :
						    MMHAL_IMAGE_GREY;
	img->width = im.width;
	img->height = im.height;
	img->stride = PNG_IMAGE_ROW_STRIDE(im);
	return 0;
}
#endif

int media_read_image(const char *path, struct media_image *img, char *err,
		     size_t errlen)
{
	uint8_t *b;
	size_t n;
	int ret;

	memset(img, 0, sizeof(*img));
	ret = read_file(path, &b, &n, err, errlen);
	if (ret)
		return ret;
#ifdef MEDIA_IO_PNG
	if (n >= 8 && !memcmp(b, "\x89PNG\r\n\x1a\n", 8))
		ret = read_png(path, b, n, img, err, errlen);
	else
#endif
		ret = read_pnm(path, b, n, img, err, errlen);
	free(b);
	return ret;
}

void media_image_free(struct media_image *img)
{
	free(img->pix);
	img->pix = NULL;
}

/* ---- WAV -------------------------------------------------------------------- */

static uint32_t le32(const uint8_t *p)
{
	return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static uint16_t le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

/* The fmt chunk's fields (@sz bytes at @d): 0 if they are what we read. */
static int wav_fmt(const char *path, const uint8_t *d, uint32_t sz,
		   uint32_t rate, char *err, size_t errlen)
{
	uint16_t fmt, chn, bits;
	uint32_t sr;

	if (sz < 16)
		return media_fail(err, errlen, -EINVAL,
				  "%s: fmt chunk of %u bytes (< 16)", path, sz);
	fmt = le16(d);
	chn = le16(d + 2);
	sr = le32(d + 4);
	bits = le16(d + 14);
	if (fmt == 0xfffe && sz >= 40)
		fmt = le16(d + 24);	/* extensible: subformat */
	if (fmt != 1)
		return media_fail(err, errlen, -EINVAL,
				  "%s: fmt audio_format %u, only 1 (PCM) is read",
				  path, fmt);
	if (chn != 1)
		return media_fail(err, errlen, -EINVAL,
				  "%s: fmt num_channels %u, only mono is read",
				  path, chn);
	if (bits != 16)
		return media_fail(err, errlen, -EINVAL,
				  "%s: fmt bits_per_sample %u, only 16 is read",
				  path, bits);
	if (sr != rate)
		return media_fail(err, errlen, -EINVAL,
				  "%s: fmt sample_rate %u Hz, want %u Hz (resample it, e.g. sox in.wav -r %u -c 1 -b 16 out.wav)",
				  path, sr, rate, rate);
	return 0;
}

int media_read_wav(const char *path, uint32_t rate, int16_t **pcm, size_t *n_out,
		   char *err, size_t errlen)
{
	uint8_t *b;
	size_t n, i = 12;
	int have_fmt = 0, r;

	*pcm = NULL;
	*n_out = 0;
	r = read_file(path, &b, &n, err, errlen);
	if (r)
		return r;
	if (n < 12 || memcmp(b, "RIFF", 4) || memcmp(b + 8, "WAVE", 4)) {
		r = media_fail(err, errlen, -EINVAL,
			       "%s: not a RIFF WAVE file", path);
		goto out;
	}
	while (n - i >= 8) {
		uint32_t sz = le32(b + i + 4);
		const uint8_t *d = b + i + 8;

		if (sz > n - i - 8) {
			r = media_fail(err, errlen, -EINVAL,
				       "%s: chunk '%.4s' of %u bytes runs past the end of the file",
				       path, (const char *)(b + i), sz);
			goto out;
		}
		if (!memcmp(b + i, "fmt ", 4)) {
			r = wav_fmt(path, d, sz, rate, err, errlen);
			if (r)
				goto out;
			have_fmt = 1;
		} else if (!memcmp(b + i, "data", 4)) {
			if (!have_fmt) {
				r = media_fail(err, errlen, -EINVAL,
					       "%s: data chunk before the fmt chunk",
					       path);
				goto out;
			}
			if (sz < 2) {
				r = media_fail(err, errlen, -EINVAL,
					       "%s: data chunk has no samples",
					       path);
				goto out;
			}
			*pcm = malloc((size_t)(sz / 2) * sizeof(int16_t));
			if (!*pcm) {
				r = media_fail(err, errlen, -ENOMEM,
					       "%s: out of memory", path);
				goto out;
			}
			*n_out = sz / 2;
			for (size_t k = 0; k < *n_out; k++)
				(*pcm)[k] = (int16_t)le16(d + 2 * k);
			r = 0;
			goto out;
		}
		i += 8 + (size_t)sz + (sz & 1);
		if (i > n)
			break;
	}
	r = media_fail(err, errlen, -EINVAL, "%s: no %s chunk", path,
		       have_fmt ? "data" : "fmt");
out:
	free(b);
	return r;
}

// SPDX-License-Identifier: MIT
/*
 * Unit tests of the tools' media input (common/media_io.c): pictures and
 * WAV files that the test writes into a temporary directory.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef MEDIA_IO_PNG
#include <png.h>
#endif

#include "media_io.h"
#include "tap.h"

static char dir[] = "/tmp/media_io_test.XXXXXX";
static char path[sizeof(dir) + 32];
static char err[512];

/* @name in the temporary directory, holding @n bytes of @data. */
static const char *put(const char *name, const void *data, size_t n)
{
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(data, 1, n, f) != n || fclose(f))
		tap_diag("cannot write %s", path);
	return path;
}

#define CHECK_HAS(s, part) do {						\
	if (!strstr((s), (part))) {					\
		tap_diag("%s:%d: \"%s\" lacks \"%s\"", __FILE__,	\
			 __LINE__, (s), (part));			\
		tap_cur_failed = 1;					\
	}								\
} while (0)

static void test_pnm_rgb(void)
{
	static const char ppm[] = "P6\n# a comment\n2 2\n255\n"
				  "\x01\x02\x03\x04\x05\x06"
				  "\x07\x08\x09\x0a\x0b\x0c";
	struct media_image img;

	CHECK_INT(media_read_image(put("a.ppm", ppm, sizeof(ppm) - 1), &img,
				   err, sizeof(err)), 0);
	CHECK_INT(img.fourcc, MMHAL_IMAGE_RGB24);
	CHECK_INT(img.width, 2);
	CHECK_INT(img.height, 2);
	CHECK_INT(img.stride, 6);
	CHECK(img.pix && img.pix[0] == 1 && img.pix[11] == 12);
	media_image_free(&img);
	CHECK(!img.pix);
}

static void test_pnm_grey(void)
{
	static const char pgm[] = "P5 3 1 255 \x10\x20\x30";
	struct media_image img;

	CHECK_INT(media_read_image(put("a.pgm", pgm, sizeof(pgm) - 1), &img,
				   err, sizeof(err)), 0);
	CHECK_INT(img.fourcc, MMHAL_IMAGE_GREY);
	CHECK_INT(img.width, 3);
	CHECK_INT(img.height, 1);
	CHECK_INT(img.stride, 3);
	CHECK(img.pix && img.pix[2] == 0x30);
	media_image_free(&img);
}

static void test_pnm_truncated(void)
{
	static const char ppm[] = "P6\n4 4\n255\n\x01\x02\x03";
	struct media_image img;
	const char *p = put("short.ppm", ppm, sizeof(ppm) - 1);

	CHECK_INT(media_read_image(p, &img, err, sizeof(err)), -EINVAL);
	CHECK_HAS(err, p);
	CHECK_HAS(err, "PNM pixels: 3 bytes, 4x4 needs 48");
	CHECK(!img.pix);
}

static void test_pnm_bad_header(void)
{
	struct media_image img;
	const char *p;

	p = put("deep.pgm", "P5 1 1 65535 \x01\x02", 15);
	CHECK_INT(media_read_image(p, &img, err, sizeof(err)), -EINVAL);
	CHECK_HAS(err, "PNM maxval 65535");
	p = put("text.txt", "hello", 5);
	CHECK_INT(media_read_image(p, &img, err, sizeof(err)), -EINVAL);
	CHECK_HAS(err, "text.txt: not a binary PNM");
	p = put("zero.pgm", "P5 0 1 255 ", 11);
	CHECK_INT(media_read_image(p, &img, err, sizeof(err)), -EINVAL);
	CHECK_HAS(err, "PNM size 0x1 out of range");
}

static void test_image_missing(void)
{
	struct media_image img;

	snprintf(path, sizeof(path), "%s/none.ppm", dir);
	CHECK_INT(media_read_image(path, &img, err, sizeof(err)), -ENOENT);
	CHECK_HAS(err, path);
}

static void test_png(void)
{
#ifdef MEDIA_IO_PNG
	/*
	 * RGBA: alpha 0 composites onto black (not onto the buffer's
	 * malloc() leftovers, which ASan fills with 0xbe), 255 keeps the
	 * colour.
	 */
	static const uint8_t rgba[] = { 200, 100, 50, 0, 10, 20, 30, 255 };
	struct media_image img;
	png_image im;

	snprintf(path, sizeof(path), "%s/a.png", dir);
	memset(&im, 0, sizeof(im));
	im.version = PNG_IMAGE_VERSION;
	im.width = 2;
	im.height = 1;
	im.format = PNG_FORMAT_RGBA;
	if (!png_image_write_to_file(&im, path, 0, rgba, 0, NULL))
		FAIL("cannot write %s: %s", path, im.message);
	CHECK_INT(media_read_image(path, &img, err, sizeof(err)), 0);
	CHECK_INT(img.fourcc, MMHAL_IMAGE_RGB24);
	CHECK_INT(img.width, 2);
	CHECK_INT(img.height, 1);
	CHECK_INT(img.stride, 6);
	CHECK(img.pix && !img.pix[0] && !img.pix[1] && !img.pix[2] &&
	      img.pix[3] == 10 && img.pix[4] == 20 && img.pix[5] == 30);
	media_image_free(&img);
#else
	CHECK(!media_png());
	SKIP("built without libpng");
#endif
}

/* A WAV file: RIFF header, a fmt chunk, a data chunk of @n_data bytes
 * claimed (@have of them present), samples 0, 1, 2, ... */
static size_t wav(uint8_t *b, uint16_t fmt, uint16_t ch, uint32_t rate,
		  uint16_t bits, uint32_t n_data, uint32_t have)
{
	uint8_t *p = b;

#define PUT16(v) do { *p++ = (uint8_t)(v); *p++ = (uint8_t)((v) >> 8); } while (0)
#define PUT32(v) do { PUT16((v) & 0xffff); PUT16((v) >> 16); } while (0)
	memcpy(p, "RIFF", 4), p += 4;
	PUT32(36 + n_data);
	memcpy(p, "WAVEfmt ", 8), p += 8;
	PUT32(16);
	PUT16(fmt);
	PUT16(ch);
	PUT32(rate);
	PUT32(rate * ch * bits / 8);
	PUT16(ch * bits / 8);
	PUT16(bits);
	memcpy(p, "data", 4), p += 4;
	PUT32(n_data);
	for (uint32_t i = 0; i < have / 2; i++)
		PUT16(i);
#undef PUT32
#undef PUT16
	return (size_t)(p - b);
}

static void test_wav_good(void)
{
	uint8_t b[256];
	int16_t *pcm;
	size_t n;

	CHECK_INT(media_read_wav(put("a.wav", b, wav(b, 1, 1, 16000, 16, 20, 20)),
				 16000, &pcm, &n, err, sizeof(err)), 0);
	CHECK_INT(n, 10);
	CHECK(pcm && pcm[0] == 0 && pcm[9] == 9);
	free(pcm);
}

/* A refused WAV: -EINVAL, the message names the file and @part. */
static void wav_refused(const uint8_t *b, size_t len, const char *part)
{
	int16_t *pcm;
	size_t n;
	const char *p = put("bad.wav", b, len);

	CHECK_INT(media_read_wav(p, 16000, &pcm, &n, err, sizeof(err)),
		  -EINVAL);
	CHECK_HAS(err, p);
	CHECK_HAS(err, part);
	CHECK(!pcm);
	CHECK_INT(n, 0);
}

static void test_wav_rate(void)
{
	uint8_t b[256];

	wav_refused(b, wav(b, 1, 1, 44100, 16, 20, 20),
		    "fmt sample_rate 44100 Hz, want 16000 Hz");
}

static void test_wav_format(void)
{
	uint8_t b[256];

	wav_refused(b, wav(b, 3, 1, 16000, 32, 20, 20), "fmt audio_format 3");
	wav_refused(b, wav(b, 1, 2, 16000, 16, 20, 20), "fmt num_channels 2");
	wav_refused(b, wav(b, 1, 1, 16000, 8, 20, 20),
		    "fmt bits_per_sample 8");
	wav_refused(b, 12, "no fmt chunk");
	wav_refused((const uint8_t *)"RIFX\0\0\0\0WAVE", 12,
		    "not a RIFF WAVE file");
}

static void test_wav_truncated(void)
{
	uint8_t b[256];

	wav_refused(b, wav(b, 1, 1, 16000, 16, 100, 20),
		    "chunk 'data' of 100 bytes runs past the end of the file");
	wav_refused(b, wav(b, 1, 1, 16000, 16, 0, 0),
		    "data chunk has no samples");
	wav_refused(b, wav(b, 1, 1, 16000, 16, 0, 0) - 8, "no data chunk");
}

static const struct tap_test tests[] = {
	TAP_TEST(test_pnm_rgb),
	TAP_TEST(test_pnm_grey),
	TAP_TEST(test_pnm_truncated),
	TAP_TEST(test_pnm_bad_header),
	TAP_TEST(test_image_missing),
	TAP_TEST(test_png),
	TAP_TEST(test_wav_good),
	TAP_TEST(test_wav_rate),
	TAP_TEST(test_wav_format),
	TAP_TEST(test_wav_truncated),
};

int main(void)
{
	char cmd[sizeof(dir) + 16];
	int ret;

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	ret = tap_run(tests, TAP_COUNT(tests));
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		tap_diag("cannot remove %s", dir);
	return ret;
}

/* SPDX-License-Identifier: MIT */
/*
 * The tools' media input: a picture file (binary PNM, P5 grey or P6 RGB
 * with maxval 255; PNG when built with libpng) into a pixel buffer, and a
 * WAV file (RIFF WAVE, PCM signed 16-bit little-endian, mono, at the rate
 * the caller takes) into samples. Errors are a negative errno and a
 * message in the caller's buffer that names the file and, for a bad
 * file, the field ("x.wav: fmt sample_rate 44100 Hz, want 16000 Hz").
 */
#ifndef TOOLS_MEDIA_IO_H
#define TOOLS_MEDIA_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mmhal_model.h"	/* MMHAL_IMAGE_* */

struct media_image {
	uint8_t *pix;		/* height lines of stride bytes */
	uint32_t fourcc;	/* MMHAL_IMAGE_GREY or MMHAL_IMAGE_RGB24 */
	uint32_t width;		/* 1..65536 */
	uint32_t height;	/* 1..65536 */
	size_t stride;		/* bytes from one line to the next */
};

/* Whether media_read_image() reads PNG (built with libpng). */
bool media_png(void);

/**
 * media_read_image() - read a picture file
 * @path: a PNM or (media_png()) PNG file.
 * @img: filled in on success; media_image_free() it.
 * @err: the message on failure (@errlen bytes, NUL-terminated).
 *
 * PNG: colour as RGB24, grey as GREY; alpha is composited onto black.
 * Return: 0, -errno if the file cannot be read, -EINVAL if it is not a
 * picture this reads, -ENOMEM.
 */
int media_read_image(const char *path, struct media_image *img, char *err,
		     size_t errlen);

void media_image_free(struct media_image *img);

/**
 * media_read_wav() - read a WAV file's samples
 * @path: the file.
 * @rate: the sample rate the caller takes: another is refused.
 * @pcm: on success, @n samples (malloc()ed; free() them).
 * @n: the number of samples, at least 1.
 * @err: the message on failure (@errlen bytes, NUL-terminated).
 *
 * Return: 0, -errno if the file cannot be read, -EINVAL if it is not
 * mono 16-bit PCM at @rate or a chunk is cut short, -ENOMEM.
 */
int media_read_wav(const char *path, uint32_t rate, int16_t **pcm, size_t *n,
		   char *err, size_t errlen);

#endif /* TOOLS_MEDIA_IO_H */

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The bytes mmedge's virtual sources produce, recomputed in userspace so
 * tests can check a dequeued frame. Keep in step with kmod/mmedge_src.c,
 * whose header comment states the patterns; all values little-endian.
 *
 *  camera, line y, byte x (luma plane for NV12; 3 * w bytes per RGB24 line):
 *	x < 8: byte x of seq (u64); x >= 8: (x + y + p) & 0xff
 *  NV12 chroma line y, byte x: ((x >> 1) + y + 2 * p + 128 * (x & 1)) & 0xff
 *	with p = seq (MMEDGE_PATTERN_MOVING) or 0 (MMEDGE_PATTERN_STATIC)
 *  microphone: the first 4 samples are n0 = seq * period (u64, low word
 *	first); sample i >= 4 is a 1 kHz tone, a 100 Hz..4 kHz one-second
 *	chirp of amplitude 8000 or noise (a hash of n, -8000..8000) at index
 *	n = n0 + i; silence is all zero, the first 4 samples included
 *  IMU: 24-byte records {u64 index, s16 ax, ay, az, gx, gy, gz, u32 0}
 *	with index n = seq * period + k for record k
 *
 * Everything is static inline: include it from any test.
 */
#ifndef _MMEDGE_SRC_PATTERN_H
#define _MMEDGE_SRC_PATTERN_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <linux/mmedge.h>

#define MMEDGE_PAT_CAM_HDR		8	/* bytes of seq per line */
#define MMEDGE_PAT_MIC_HDR		4	/* samples of n0 per buffer */
#define MMEDGE_PAT_MIC_AMPLITUDE	8000
#define MMEDGE_PAT_IMU_RECORD		24	/* bytes per IMU record */

static inline uint64_t mmedge_pat_le(const uint8_t *p, unsigned int bytes)
{
	uint64_t v = 0;

	while (bytes--)
		v = (v << 8) | p[bytes];
	return v;
}

/* Bytes per line of the image (of the luma plane for NV12). */
static inline uint32_t
mmedge_pat_line_bytes(const struct mmedge_src_config *cfg)
{
	return cfg->fourcc == MMEDGE_FMT_RGB24 ? 3 * cfg->width : cfg->width;
}

/* Bytes of data in a frame (mmedge_chan_create.frame_size); 0 if unknown. */
static inline uint64_t
mmedge_pat_frame_bytes(const struct mmedge_src_config *cfg)
{
	uint64_t bytes;

	switch (cfg->type) {
	case MMEDGE_SRC_CAMERA:
		bytes = (uint64_t)mmedge_pat_line_bytes(cfg) * cfg->height;
		if (cfg->fourcc == MMEDGE_FMT_NV12)
			bytes += (uint64_t)cfg->width * (cfg->height / 2);
		return bytes;
	case MMEDGE_SRC_MIC:
		return (uint64_t)cfg->period * 2;
	case MMEDGE_SRC_IMU:
		return (uint64_t)cfg->period * MMEDGE_PAT_IMU_RECORD;
	default:
		return 0;
	}
}

/* Byte @off of camera frame @seq. */
static inline uint8_t
mmedge_camera_byte(const struct mmedge_src_config *cfg, uint64_t seq,
		   uint64_t off)
{
	uint32_t lb = mmedge_pat_line_bytes(cfg);
	uint64_t luma = (uint64_t)lb * cfg->height;
	uint64_t p = cfg->signal == MMEDGE_PATTERN_STATIC ? 0 : seq;
	uint32_t x, y;

	if (off < luma) {
		y = off / lb;
		x = off % lb;
		if (x < MMEDGE_PAT_CAM_HDR)
			return seq >> (8 * x);
		return (uint8_t)(x + y + p);
	}
	off -= luma;
	y = off / cfg->width;
	x = off % cfg->width;
	return (uint8_t)((x >> 1) + y + 2 * p + 128 * (x & 1));
}

/* Describe a mismatch in @why (if not NULL); returns -1. */
static inline int __attribute__((format(printf, 3, 4)))
mmedge_pat_why(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;

	if (why && whylen) {
		va_start(ap, fmt);
		vsnprintf(why, whylen, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/**
 * mmedge_check_camera_frame() - compare a camera frame with its pattern
 * @cfg: the channel's source configuration
 * @seq: the frame's sequence number
 * @buf: the frame's data
 * @len: bytes in @buf (bytesused); must be the frame size
 * @why: where to describe the first mismatch, or NULL
 * @whylen: size of @why
 *
 * Return: 0 if every byte matches, -1 otherwise.
 */
static inline int
mmedge_check_camera_frame(const struct mmedge_src_config *cfg, uint64_t seq,
			  const uint8_t *buf, uint64_t len, char *why,
			  size_t whylen)
{
	uint64_t size = mmedge_pat_frame_bytes(cfg), off;
	uint8_t want;

	if (cfg->type != MMEDGE_SRC_CAMERA || !size)
		return mmedge_pat_why(why, whylen, "not a camera (type %u)",
				      cfg->type);
	if (len != size)
		return mmedge_pat_why(why, whylen,
				      "length %llu, frame size %llu",
				      (unsigned long long)len,
				      (unsigned long long)size);
	for (off = 0; off < len; off++) {
		want = mmedge_camera_byte(cfg, seq, off);
		if (buf[off] != want)
			return mmedge_pat_why(why, whylen,
					      "byte %llu is 0x%02x, want 0x%02x",
					      (unsigned long long)off, buf[off],
					      want);
	}
	return 0;
}

/* The first sample index of a microphone buffer (the first 8 bytes). */
static inline uint64_t mmedge_mic_first_index(const uint8_t *buf)
{
	return mmedge_pat_le(buf, 8);
}

/* The sample index of record @k of an IMU buffer. */
static inline uint64_t mmedge_imu_index(const uint8_t *buf, uint32_t k)
{
	return mmedge_pat_le(buf + (uint64_t)k * MMEDGE_PAT_IMU_RECORD, 8);
}

/* sin(2 * pi * phase / 2^32) in Q16, bit-exact with mmedge_src_sin16(). */
static inline int32_t mmedge_pat_sin16(uint32_t phase)
{
	uint32_t x = phase & ((1u << 30) - 1);
	int64_t t, t2, p;

	if (phase & (1u << 30))
		x = (1u << 30) - x;
	t = x >> 14;
	t2 = (t * t) >> 16;
	p = -307;
	p = 5223 + ((t2 * p) >> 16);
	p = -42334 + ((t2 * p) >> 16);
	p = 102954 + ((t2 * p) >> 16);
	p = (t * p) >> 16;
	return phase & (1u << 31) ? -p : p;
}

/* MMEDGE_SIGNAL_NOISE's sample of index @n, -8000..8000. */
static inline int16_t mmedge_mic_noise(uint64_t n)
{
	uint64_t x = n * 0x9e3779b97f4a7c15ULL;

	x ^= x >> 29;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 32;
	return (int32_t)((uint32_t)(x >> 32) %
			 (2 * MMEDGE_PAT_MIC_AMPLITUDE + 1)) -
	       MMEDGE_PAT_MIC_AMPLITUDE;
}

/*
 * Sample with global index @n (n >= first index + 4) of a microphone
 * (0 for silence).
 */
static inline int16_t mmedge_mic_sample(const struct mmedge_src_config *cfg,
					uint64_t n)
{
	uint64_t num, step, a, b;
	uint32_t phase, sweep, j;

	if (cfg->signal == MMEDGE_SIGNAL_SILENCE)
		return 0;
	if (cfg->signal == MMEDGE_SIGNAL_NOISE)
		return mmedge_mic_noise(n);
	if (cfg->signal == MMEDGE_SIGNAL_CHIRP) {
		sweep = cfg->rate_num / cfg->rate_den;
		a = (100ULL << 48) / sweep;
		b = (1950ULL << 48) / ((uint64_t)sweep * sweep);
		j = n % sweep;
		phase = ((uint64_t)j * a + (uint64_t)j * j * b) >> 16;
	} else {
		num = 1000ULL * cfg->rate_den;
		step = ((num / cfg->rate_num) << 32) +
		       ((num % cfg->rate_num) << 32) / cfg->rate_num;
		phase = (uint32_t)(n * step);
	}
	return (MMEDGE_PAT_MIC_AMPLITUDE * mmedge_pat_sin16(phase) + 32768) >> 16;
}

/**
 * mmedge_check_mic_frame() - compare a microphone buffer with its signal
 * @cfg, @seq, @buf, @len, @why, @whylen: as mmedge_check_camera_frame()
 *
 * Checks the index words (seq * period; 0 for silence), that every
 * sample lies within +-8000 and equals the tone, chirp, noise or silence
 * sample recomputed here.
 *
 * Return: 0 if the buffer matches, -1 otherwise.
 */
static inline int
mmedge_check_mic_frame(const struct mmedge_src_config *cfg, uint64_t seq,
		       const uint8_t *buf, uint64_t len, char *why,
		       size_t whylen)
{
	uint64_t n0 = seq * cfg->period, i;
	uint64_t want_n0 = cfg->signal == MMEDGE_SIGNAL_SILENCE ? 0 : n0;
	int16_t v, want;

	if (cfg->type != MMEDGE_SRC_MIC || len != mmedge_pat_frame_bytes(cfg))
		return mmedge_pat_why(why, whylen,
				      "type %u, length %llu, frame size %llu",
				      cfg->type, (unsigned long long)len,
				      (unsigned long long)mmedge_pat_frame_bytes(cfg));
	if (mmedge_mic_first_index(buf) != want_n0)
		return mmedge_pat_why(why, whylen,
				      "first index %llu, want %llu",
				      (unsigned long long)mmedge_mic_first_index(buf),
				      (unsigned long long)want_n0);
	for (i = MMEDGE_PAT_MIC_HDR; i < cfg->period; i++) {
		v = (int16_t)mmedge_pat_le(buf + 2 * i, 2);
		want = mmedge_mic_sample(cfg, n0 + i);
		if (v < -MMEDGE_PAT_MIC_AMPLITUDE ||
		    v > MMEDGE_PAT_MIC_AMPLITUDE || v != want)
			return mmedge_pat_why(why, whylen,
					      "sample %llu is %d, want %d",
					      (unsigned long long)i, v, want);
	}
	return 0;
}

/* Axis value @axis (0..5: ax, ay, az, gx, gy, gz) of IMU sample @n. */
static inline int16_t mmedge_imu_value(uint64_t n, unsigned int axis)
{
	uint32_t m = (uint32_t)n;

	switch (axis) {
	case 0:
		return (int32_t)((m * 7) & 0x7fff) - 16384;
	case 1:
		return (int32_t)((m * 13) & 0x7fff) - 16384;
	case 2:
		return 16384 + (int32_t)((m * 3) & 0xff) - 128;
	case 3:
		return (int32_t)((m * 5) & 0xfff) - 2048;
	case 4:
		return (int32_t)((m * 11) & 0xfff) - 2048;
	default:
		return (int32_t)((m * 17) & 0xfff) - 2048;
	}
}

/**
 * mmedge_check_imu_frame() - compare an IMU buffer with its records
 * @cfg, @seq, @buf, @len, @why, @whylen: as mmedge_check_camera_frame()
 *
 * Return: 0 if every record matches, -1 otherwise.
 */
static inline int
mmedge_check_imu_frame(const struct mmedge_src_config *cfg, uint64_t seq,
		       const uint8_t *buf, uint64_t len, char *why,
		       size_t whylen)
{
	const uint8_t *rec;
	uint64_t n;
	uint32_t k;
	unsigned int a;

	if (cfg->type != MMEDGE_SRC_IMU || len != mmedge_pat_frame_bytes(cfg))
		return mmedge_pat_why(why, whylen,
				      "type %u, length %llu, frame size %llu",
				      cfg->type, (unsigned long long)len,
				      (unsigned long long)mmedge_pat_frame_bytes(cfg));
	for (k = 0; k < cfg->period; k++) {
		rec = buf + (uint64_t)k * MMEDGE_PAT_IMU_RECORD;
		n = seq * cfg->period + k;
		if (mmedge_imu_index(buf, k) != n)
			return mmedge_pat_why(why, whylen,
					      "record %u index %llu, want %llu", k,
					      (unsigned long long)mmedge_imu_index(buf, k),
					      (unsigned long long)n);
		for (a = 0; a < 6; a++)
			if ((int16_t)mmedge_pat_le(rec + 8 + 2 * a, 2) !=
			    mmedge_imu_value(n, a))
				return mmedge_pat_why(why, whylen,
						      "record %u axis %u is wrong",
						      k, a);
		if (mmedge_pat_le(rec + 20, 4))
			return mmedge_pat_why(why, whylen,
					      "record %u reserved not zero", k);
	}
	return 0;
}

/* Any source: dispatch on cfg->type. 0 if the frame matches, else -1. */
static inline int mmedge_check_frame(const struct mmedge_src_config *cfg,
				     uint64_t seq, const uint8_t *buf,
				     uint64_t len, char *why, size_t whylen)
{
	switch (cfg->type) {
	case MMEDGE_SRC_CAMERA:
		return mmedge_check_camera_frame(cfg, seq, buf, len, why, whylen);
	case MMEDGE_SRC_MIC:
		return mmedge_check_mic_frame(cfg, seq, buf, len, why, whylen);
	case MMEDGE_SRC_IMU:
		return mmedge_check_imu_frame(cfg, seq, buf, len, why, whylen);
	default:
		return mmedge_pat_why(why, whylen, "unknown type %u",
				      cfg->type);
	}
}

#endif /* _MMEDGE_SRC_PATTERN_H */

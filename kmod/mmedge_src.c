// SPDX-License-Identifier: GPL-2.0
/*
 * mmedge: virtual sources - configuration checks, frame geometry and the
 * test patterns a virtual camera, microphone or IMU produces.
 *
 * Every byte of frame seq is a function of (config, seq, offset) only:
 * mmedge_src_fill() produces any byte range of a frame, in any order and
 * split, with the same result. All multi-byte values are little-endian.
 *
 * Camera. A line is w bytes (GREY, NV12 luma) or 3 * w bytes (RGB24).
 * Byte x of line y of the image (of the luma plane for NV12):
 *
 *	x < 8:	byte x of seq as a u64 ((seq >> 8 * x) & 0xff)
 *	x >= 8:	(x + y + seq) & 0xff
 *
 * NV12's chroma plane follows the luma plane: h / 2 lines of w bytes,
 * U at even x, V at odd x, no header. Byte x of chroma line y:
 *
 *	((x >> 1) + y + 2 * seq + 128 * (x & 1)) & 0xff
 *
 * That is signal MMEDGE_PATTERN_MOVING. With MMEDGE_PATTERN_STATIC the
 * formulas take p = 0 in place of seq, except the line headers (x < 8),
 * which still hold seq: frames differ in those 8 bytes per line only.
 *
 * Microphone (S16LE, "period" samples per buffer). Sample i of buffer seq
 * has the index n = seq * period + i (mod 2^64). Except for silence, the
 * first 4 samples hold the buffer's first index n0 = seq * period: sample
 * i < 4 is (n0 >> 16 * i) & 0xffff, i.e. the first 8 bytes are n0 as a
 * u64. For the tone and the chirp, sample i >= 4 is
 * mmedge_src_level(phase(n)), where phase is a u32 fraction of a cycle
 * and level() is 8000 * sin(2 * pi * phase / 2^32) in integer math (see
 * mmedge_src_sin16(); |sample| <= 8000). With rate = rate_num / rate_den:
 *
 *	tone:	phase(n) = (n * step) mod 2^32,
 *		step = floor(1000 * rate_den * 2^32 / rate_num)
 *	chirp:	L = floor(rate_num / rate_den) samples per sweep,
 *		j = n mod L,
 *		a = floor(100 * 2^48 / L), b = floor(1950 * 2^48 / L^2),
 *		phase(n) = ((j * a + j^2 * b) >> 16) mod 2^32
 *
 * so the chirp's frequency rises linearly from 100 Hz to 4 kHz over L
 * samples (one second) and starts again at 100 Hz with phase 0.
 *
 * Noise: sample i >= 4 is a function of n alone, uniform in -8000..8000:
 *
 *	x = n * 0x9e3779b97f4a7c15, x ^= x >> 29,
 *	x *= 0xbf58476d1ce4e5b9, x ^= x >> 32	(u64, mod 2^64)
 *	sample = ((x >> 32) mod 16001) - 8000
 *
 * Silence: every byte is 0, the first 4 samples included (no index).
 *
 * IMU (IMU6, "period" records of struct mmedge_imu_sample per buffer).
 * Record k of buffer seq has index n = seq * period + k and, with n taken
 * mod 2^32 and the results as s16:
 *
 *	ax = ((n * 7) & 0x7fff) - 16384		gx = ((n * 5) & 0xfff) - 2048
 *	ay = ((n * 13) & 0x7fff) - 16384	gy = ((n * 11) & 0xfff) - 2048
 *	az = 16384 + ((n * 3) & 0xff) - 128	gz = ((n * 17) & 0xfff) - 2048
 *	reserved = 0
 *
 * selftests/mmedge/mmedge_src_pattern.h recomputes all of this in
 * userspace.
 */

#include <linux/bits.h>
#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/math64.h>
#include <linux/minmax.h>
#include <linux/string.h>
#include <linux/time64.h>

#include "mmedge_src.h"

/* sin(pi / 2 * t) = t * (A1 + t^2 * (A3 + t^2 * (A5 + t^2 * A7))), Q16 */
#define MMEDGE_SRC_SIN_A1	102954
#define MMEDGE_SRC_SIN_A3	(-42334)
#define MMEDGE_SRC_SIN_A5	5223
#define MMEDGE_SRC_SIN_A7	(-307)

/* Chirp phase: cycles in units of 2^-48. */
#define MMEDGE_SRC_CHIRP_SHIFT	48
/* Chirp phase terms: 100 Hz start, (4000 - 100) / 2 Hz/s quadratic. */
#define MMEDGE_SRC_CHIRP_LIN	MMEDGE_SRC_CHIRP_START_HZ
#define MMEDGE_SRC_CHIRP_QUAD	((MMEDGE_SRC_CHIRP_END_HZ - \
				  MMEDGE_SRC_CHIRP_START_HZ) / 2)

/* min_num / min_den <= rate_num / rate_den <= max, without overflow */
static bool mmedge_src_rate_ok(const struct mmedge_src_config *cfg,
			       u32 min_num, u32 min_den, u32 max)
{
	if (!cfg->rate_num || !cfg->rate_den)
		return false;
	return (u64)cfg->rate_num * min_den >= (u64)min_num * cfg->rate_den &&
	       (u64)cfg->rate_num <= (u64)max * cfg->rate_den;
}

static int mmedge_src_check_camera(const struct mmedge_src_config *cfg)
{
	switch (cfg->fourcc) {
	case MMEDGE_FMT_GREY:
	case MMEDGE_FMT_RGB24:
		break;
	case MMEDGE_FMT_NV12:
		if ((cfg->width | cfg->height) & 1)
			return -EINVAL;
		break;
	default:
		return -EINVAL;
	}
	if (cfg->width < MMEDGE_SRC_CAM_MIN || cfg->width > MMEDGE_SRC_CAM_MAX ||
	    cfg->height < MMEDGE_SRC_CAM_MIN || cfg->height > MMEDGE_SRC_CAM_MAX)
		return -EINVAL;
	/* 1/60 .. 240 frames per second */
	if (!mmedge_src_rate_ok(cfg, 1, 60, 240))
		return -EINVAL;
	if (cfg->period)
		return -EINVAL;
	if (cfg->signal != MMEDGE_PATTERN_MOVING &&
	    cfg->signal != MMEDGE_PATTERN_STATIC)
		return -EINVAL;
	return 0;
}

static int mmedge_src_check_mic(const struct mmedge_src_config *cfg)
{
	if (cfg->fourcc != MMEDGE_FMT_S16LE)
		return -EINVAL;
	if (!mmedge_src_rate_ok(cfg, MMEDGE_SRC_MIC_RATE_MIN, 1,
				MMEDGE_SRC_MIC_RATE_MAX))
		return -EINVAL;
	if (cfg->period < MMEDGE_SRC_MIC_PERIOD_MIN ||
	    cfg->period > MMEDGE_SRC_MIC_PERIOD_MAX)
		return -EINVAL;
	switch (cfg->signal) {
	case MMEDGE_SIGNAL_TONE:
	case MMEDGE_SIGNAL_CHIRP:
	case MMEDGE_SIGNAL_SILENCE:
	case MMEDGE_SIGNAL_NOISE:
		break;
	default:
		return -EINVAL;
	}
	if (cfg->width || cfg->height)
		return -EINVAL;
	return 0;
}

static int mmedge_src_check_imu(const struct mmedge_src_config *cfg)
{
	if (cfg->fourcc != MMEDGE_FMT_IMU6)
		return -EINVAL;
	if (!mmedge_src_rate_ok(cfg, 1, 1, MMEDGE_SRC_IMU_RATE_MAX))
		return -EINVAL;
	if (!cfg->period || cfg->period > MMEDGE_SRC_IMU_PERIOD_MAX)
		return -EINVAL;
	if (cfg->width || cfg->height || cfg->signal)
		return -EINVAL;
	return 0;
}

/**
 * mmedge_src_check() - validate a source configuration
 * @cfg: the configuration, as userspace gave it
 *
 * Camera: GREY, RGB24 or NV12; 16..4096 pixels wide and high (even for
 * NV12); 1/60..240 frames per second; period 0; signal (the pattern)
 * MOVING or STATIC.
 * Microphone: S16LE; 8000..192000 Hz; 16..65536 samples per buffer;
 * signal TONE, CHIRP, SILENCE or NOISE; width and height 0.
 * IMU: IMU6; 1..8000 Hz; 1..4096 samples per buffer; width, height and
 * signal 0.
 * Rates are rate_num / rate_den with rate_den > 0, compared exactly.
 *
 * Return: 0, or -EINVAL for an unknown type or any field out of range.
 */
int mmedge_src_check(const struct mmedge_src_config *cfg)
{
	switch (cfg->type) {
	case MMEDGE_SRC_CAMERA:
		return mmedge_src_check_camera(cfg);
	case MMEDGE_SRC_MIC:
		return mmedge_src_check_mic(cfg);
	case MMEDGE_SRC_IMU:
		return mmedge_src_check_imu(cfg);
	default:
		return -EINVAL;
	}
}

/* Bytes per line of the image (of the luma plane for NV12). */
static u32 mmedge_src_line_bytes(const struct mmedge_src_config *cfg)
{
	return cfg->fourcc == MMEDGE_FMT_RGB24 ? 3 * cfg->width : cfg->width;
}

/**
 * mmedge_src_frame_bytes() - bytes of data in one frame
 * @cfg: a configuration that passed mmedge_src_check()
 *
 * Camera: w * h (GREY), w * h * 3 (RGB24), w * h * 3 / 2 (NV12).
 * Microphone: period * 2. IMU: period * sizeof(struct mmedge_imu_sample).
 *
 * Return: the size, or 0 for an unknown type.
 */
u64 mmedge_src_frame_bytes(const struct mmedge_src_config *cfg)
{
	u64 bytes;

	switch (cfg->type) {
	case MMEDGE_SRC_CAMERA:
		bytes = (u64)mmedge_src_line_bytes(cfg) * cfg->height;
		if (cfg->fourcc == MMEDGE_FMT_NV12)
			bytes += (u64)cfg->width * (cfg->height / 2);
		return bytes;
	case MMEDGE_SRC_MIC:
		return (u64)cfg->period * 2;
	case MMEDGE_SRC_IMU:
		return (u64)cfg->period * sizeof(struct mmedge_imu_sample);
	default:
		return 0;
	}
}

/**
 * mmedge_src_period_ns() - time between two frames
 * @cfg: a configuration that passed mmedge_src_check()
 *
 * Camera: rate_den / rate_num seconds. Microphone and IMU: period samples
 * at rate_num / rate_den Hz. Rounded down to a nanosecond.
 *
 * Return: the period in ns, or 0 for an unknown type or a zero rate.
 */
u64 mmedge_src_period_ns(const struct mmedge_src_config *cfg)
{
	u64 units;

	switch (cfg->type) {
	case MMEDGE_SRC_CAMERA:
		units = 1;
		break;
	case MMEDGE_SRC_MIC:
	case MMEDGE_SRC_IMU:
		units = cfg->period;
		break;
	default:
		return 0;
	}
	if (!cfg->rate_num)
		return 0;
	/* period * rate_den < 2^48; the product with 10^9 is 128-bit. */
	return mul_u64_u64_div_u64(units * cfg->rate_den, NSEC_PER_SEC,
				   cfg->rate_num);
}

/*
 * Line y of the image or luma plane, bytes [x, x + n): the header holds
 * seq, the levels follow p (seq, or 0 for a static pattern).
 */
static void mmedge_src_fill_luma(u8 *dst, u32 x, u32 n, u32 y, u64 seq,
				 u64 p)
{
	u8 v;

	for (; n && x < MMEDGE_SRC_CAM_HDR; n--, x++)
		*dst++ = seq >> (8 * x);
	v = x + y + p;
	while (n--)
		*dst++ = v++;
}

/* Line y of the NV12 chroma plane, bytes [x, x + n), levels of p. */
static void mmedge_src_fill_chroma(u8 *dst, u32 x, u32 n, u32 y, u64 p)
{
	u8 base = y + 2 * p;

	for (; n; n--, x++)
		*dst++ = base + (x >> 1) + ((x & 1) << 7);
}

static void mmedge_src_fill_camera(const struct mmedge_src_config *cfg,
				   u64 seq, u64 offset, u8 *dst, u32 len)
{
	u32 lb = mmedge_src_line_bytes(cfg);
	u64 luma = (u64)lb * cfg->height;
	u64 p = cfg->signal == MMEDGE_PATTERN_STATIC ? 0 : seq;
	u32 x, y, n;

	while (len) {
		if (offset < luma) {
			y = div_u64_rem(offset, lb, &x);
			n = min(len, lb - x);
			mmedge_src_fill_luma(dst, x, n, y, seq, p);
		} else {
			/* NV12 chroma lines are w bytes, as are luma lines. */
			y = div_u64_rem(offset - luma, lb, &x);
			n = min(len, lb - x);
			mmedge_src_fill_chroma(dst, x, n, y, p);
		}
		dst += n;
		offset += n;
		len -= n;
	}
}

/*
 * sin(2 * pi * phase / 2^32) in Q16, -65536..65536: a 7th-order odd
 * polynomial over the quarter wave, mirrored. Error below 1.2e-4;
 * |result| <= 65536 for every phase.
 */
static s32 mmedge_src_sin16(u32 phase)
{
	u32 x = phase & (BIT(30) - 1);
	s64 t, t2, p;

	if (phase & BIT(30))
		x = BIT(30) - x;
	t = x >> 14;			/* quarter turn = 65536 */
	t2 = (t * t) >> 16;
	p = MMEDGE_SRC_SIN_A7;
	p = MMEDGE_SRC_SIN_A5 + ((t2 * p) >> 16);
	p = MMEDGE_SRC_SIN_A3 + ((t2 * p) >> 16);
	p = MMEDGE_SRC_SIN_A1 + ((t2 * p) >> 16);
	p = (t * p) >> 16;
	return phase & BIT(31) ? -p : p;
}

/* The sample for a phase: -8000..8000. */
static s16 mmedge_src_level(u32 phase)
{
	return (MMEDGE_SRC_MIC_AMPLITUDE * mmedge_src_sin16(phase) + 32768) >> 16;
}

/* The noise sample of index n: a 64-bit mix of n, -8000..8000. */
static s16 mmedge_src_noise(u64 n)
{
	u64 x = n * MMEDGE_SRC_NOISE_MUL1;

	x ^= x >> 29;
	x *= MMEDGE_SRC_NOISE_MUL2;
	x ^= x >> 32;
	return (s32)((u32)(x >> 32) % (2 * MMEDGE_SRC_MIC_AMPLITUDE + 1)) -
	       MMEDGE_SRC_MIC_AMPLITUDE;
}

/* floor(num * 2^32 / den) for den > 0, num * 2^32 / den < 2^64 */
static u64 mmedge_src_frac32(u64 num, u32 den)
{
	u32 rem;
	u64 q = div_u64_rem(num, den, &rem);

	return (q << 32) + div_u64((u64)rem << 32, den);
}

static void mmedge_src_fill_mic(const struct mmedge_src_config *cfg,
				u64 seq, u64 offset, u8 *dst, u32 len)
{
	bool chirp = cfg->signal == MMEDGE_SIGNAL_CHIRP;
	bool noise = cfg->signal == MMEDGE_SIGNAL_NOISE;
	u64 first = seq * cfg->period;
	u64 i = offset >> 1;
	u64 n = first + i;
	bool high = offset & 1;
	u64 step = 0, a = 0, b = 0;
	u32 sweep = 0, j = 0;
	u32 phase;
	u16 v;

	if (cfg->signal == MMEDGE_SIGNAL_SILENCE) {
		memset(dst, 0, len);
		return;
	}
	if (chirp) {
		sweep = cfg->rate_num / cfg->rate_den;
		a = div_u64((u64)MMEDGE_SRC_CHIRP_LIN << MMEDGE_SRC_CHIRP_SHIFT,
			    sweep);
		b = div64_u64((u64)MMEDGE_SRC_CHIRP_QUAD << MMEDGE_SRC_CHIRP_SHIFT,
			      (u64)sweep * sweep);
		div_u64_rem(n, sweep, &j);
	} else if (!noise) {
		step = mmedge_src_frac32((u64)MMEDGE_SRC_TONE_HZ * cfg->rate_den,
					 cfg->rate_num);
	}

	while (len) {
		if (i < MMEDGE_SRC_MIC_HDR) {
			v = first >> (16 * i);
		} else {
			if (noise) {
				v = mmedge_src_noise(n);
			} else {
				if (chirp)
					phase = ((u64)j * a + (u64)j * j * b) >> 16;
				else
					phase = n * step;
				v = mmedge_src_level(phase);
			}
		}
		if (high) {
			*dst++ = v >> 8;
			len--;
			high = false;
		} else if (len >= 2) {
			*dst++ = v;
			*dst++ = v >> 8;
			len -= 2;
		} else {
			*dst++ = v;
			len--;
		}
		i++;
		n++;
		if (chirp && ++j == sweep)
			j = 0;
	}
}

static void mmedge_src_imu_record(struct mmedge_imu_sample *s, u64 index)
{
	u32 n = index;

	s->index = cpu_to_le64(index);
	s->ax = cpu_to_le16(((n * 7) & 0x7fff) - 16384);
	s->ay = cpu_to_le16(((n * 13) & 0x7fff) - 16384);
	s->az = cpu_to_le16(MMEDGE_SRC_IMU_1G + ((n * 3) & 0xff) - 128);
	s->gx = cpu_to_le16(((n * 5) & 0xfff) - 2048);
	s->gy = cpu_to_le16(((n * 11) & 0xfff) - 2048);
	s->gz = cpu_to_le16(((n * 17) & 0xfff) - 2048);
	s->reserved = 0;
}

static void mmedge_src_fill_imu(const struct mmedge_src_config *cfg,
				u64 seq, u64 offset, u8 *dst, u32 len)
{
	struct mmedge_imu_sample rec;
	u64 k;
	u32 skip, n;

	k = div_u64_rem(offset, sizeof(rec), &skip);
	while (len) {
		n = min_t(u32, len, sizeof(rec) - skip);
		mmedge_src_imu_record(&rec, seq * cfg->period + k);
		memcpy(dst, (u8 *)&rec + skip, n);
		dst += n;
		len -= n;
		skip = 0;
		k++;
	}
}

/**
 * mmedge_src_fill() - produce bytes of a frame
 * @cfg: the source's configuration
 * @seq: frame number
 * @offset: first byte of the frame to produce
 * @dst: where to write
 * @len: bytes to write
 *
 * Writes bytes [@offset, @offset + @len) of frame @seq (see the top of
 * this file for the patterns). The result depends only on (@cfg, @seq,
 * @offset), so a frame may be produced in pieces of any size and order.
 * Bytes past the end of the frame, and all bytes for a configuration
 * that fails mmedge_src_check(), are written as zero.
 */
void mmedge_src_fill(const struct mmedge_src_config *cfg, u64 seq, u64 offset,
		     u8 *dst, u32 len)
{
	u64 size = mmedge_src_frame_bytes(cfg);
	u32 n = 0;

	if (!mmedge_src_check(cfg) && offset < size)
		n = min_t(u64, len, size - offset);
	if (n) {
		switch (cfg->type) {
		case MMEDGE_SRC_CAMERA:
			mmedge_src_fill_camera(cfg, seq, offset, dst, n);
			break;
		case MMEDGE_SRC_MIC:
			mmedge_src_fill_mic(cfg, seq, offset, dst, n);
			break;
		case MMEDGE_SRC_IMU:
			mmedge_src_fill_imu(cfg, seq, offset, dst, n);
			break;
		}
	}
	memset(dst + n, 0, len - n);
}

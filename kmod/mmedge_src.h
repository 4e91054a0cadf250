/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mmedge: virtual sources - what a camera, microphone or IMU produces.
 *
 * Pure logic: configuration checks, frame geometry and the content
 * generators. The content of frame @seq is a function of (config, seq,
 * offset) only, so the engine can produce any byte range of a frame in
 * any segment order, and tests can recompute it.
 */
#ifndef _MMEDGE_SRC_H
#define _MMEDGE_SRC_H

#include <linux/build_bug.h>
#include <linux/types.h>
#include <linux/mmedge.h>

/* Camera geometry limits, in pixels. */
#define MMEDGE_SRC_CAM_MIN		16
#define MMEDGE_SRC_CAM_MAX		4096
/* Camera: bytes at the start of each line that hold the frame number. */
#define MMEDGE_SRC_CAM_HDR		8

/* Microphone: rate limits in Hz, samples per buffer. */
#define MMEDGE_SRC_MIC_RATE_MIN		8000
#define MMEDGE_SRC_MIC_RATE_MAX		192000
#define MMEDGE_SRC_MIC_PERIOD_MIN	16
#define MMEDGE_SRC_MIC_PERIOD_MAX	65536
/* Microphone: leading samples of a buffer that hold its first index. */
#define MMEDGE_SRC_MIC_HDR		4
/* Microphone: peak amplitude of the tone and the chirp. */
#define MMEDGE_SRC_MIC_AMPLITUDE	8000
#define MMEDGE_SRC_TONE_HZ		1000
#define MMEDGE_SRC_CHIRP_START_HZ	100
#define MMEDGE_SRC_CHIRP_END_HZ		4000
/* Microphone: the noise's mixing constants (mmedge_src.c). */
#define MMEDGE_SRC_NOISE_MUL1		0x9e3779b97f4a7c15ULL
#define MMEDGE_SRC_NOISE_MUL2		0xbf58476d1ce4e5b9ULL

/* IMU: rate limits in Hz, samples per buffer. */
#define MMEDGE_SRC_IMU_RATE_MAX		8000
#define MMEDGE_SRC_IMU_PERIOD_MAX	4096
/* IMU: +1 g on the accelerometer axes. */
#define MMEDGE_SRC_IMU_1G		16384

/* struct mmedge_imu_sample is in uapi/linux/mmedge.h. */
static_assert(sizeof(struct mmedge_imu_sample) == 24);

int mmedge_src_check(const struct mmedge_src_config *cfg);
u64 mmedge_src_frame_bytes(const struct mmedge_src_config *cfg);
u64 mmedge_src_period_ns(const struct mmedge_src_config *cfg);
void mmedge_src_fill(const struct mmedge_src_config *cfg, u64 seq, u64 offset,
		     u8 *dst, u32 len);

#endif /* _MMEDGE_SRC_H */

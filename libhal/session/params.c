// SPDX-License-Identifier: MIT
/*
 * params.c - the session's parameters: defaults, and every field checked
 * with an error that names it (mmhal_session.h).
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/mm_params.h"
#include "session_int.h"

struct mmhal_session_params mmhal_session_default_params(void)
{
	struct mmhal_session_params p;

	memset(&p, 0, sizeof(p));
	p.size = sizeof(p);
	p.listen_ms = DEF_LISTEN_MS;
	p.camera_bufs = DEF_CAM_BUFS;
	p.n_predict = DEF_N_PREDICT;
	p.scene_threshold = DEF_SCENE_THR;
	p.vad_threshold_dbfs = DEF_VAD_DBFS;
	p.vad_min_speech = DEF_VAD_MIN;
	p.imu_gyro_threshold = DEF_GYRO_THR;
	p.imu_accel_threshold = DEF_ACCEL_THR;
	p.imu_bufs = DEF_IMU_BUFS;
	p.slo_window = DEF_SLO_WINDOW;
	return p;
}

/* 0 (or absent) -> @def; else finite and in (lo, hi]. */
static int thr_param(float *v, float def, float lo, float hi)
{
	if (*v == 0)
		*v = def;
	return isfinite(*v) && *v > lo && *v <= hi ? 0 : -1;
}

/* Bytes of one frame of a camera source (the driver's layout). */
uint64_t sess_cam_frame_size(const struct mmhal_src *c)
{
	uint64_t px = (uint64_t)c->width * c->height;

	switch (c->fourcc) {
	case MMHAL_FMT_RGB24:
		return px * 3;
	case MMHAL_FMT_NV12:
		return px * 3 / 2;
	default:
		return px;
	}
}

int sess_check_params(const struct mmhal_session_params *in,
		      const struct mmhal_mmproj *proj,
		      struct mmhal_session_params *p, uint64_t *listen,
		      char *err, size_t errlen)
{
	struct mmhal_mmproj_info pi = { .size = sizeof(pi) };
	size_t min = offsetof(struct mmhal_session_params,
			      camera_sensor_offset_ns);
	int ret;

	*p = mmhal_session_default_params();
	ret = MM_PARAMS_IN(p, in, min, "params", err, errlen);
	if (ret)
		return ret;
	if (mmhal_mmproj_info(proj, &pi))
		return mm_errf(-EINVAL, err, errlen, "mmproj: no info");
	if (!p->camera.type && !p->mic.type)
		return mm_errf(-EINVAL, err, errlen,
				 "params: neither a camera nor a microphone");
	if (p->camera.type) {
		if (p->camera.type != MMHAL_SRC_CAMERA)
			return mm_errf(-EINVAL, err, errlen,
					 "params.camera.type %u is not MMHAL_SRC_CAMERA",
					 p->camera.type);
		if (p->camera.fourcc != MMHAL_FMT_GREY &&
		    p->camera.fourcc != MMHAL_FMT_RGB24 &&
		    p->camera.fourcc != MMHAL_FMT_NV12)
			return mm_errf(-EINVAL, err, errlen,
					 "params.camera.fourcc 0x%08x: GREY, RGB24 or NV12",
					 p->camera.fourcc);
		if (!pi.has_vision)
			return mm_errf(-ENOENT, err, errlen,
					 "mmproj: no vision encoder for the camera");
	} else if (p->camera_chan) {
		return mm_errf(-EINVAL, err, errlen,
				 "params.camera_chan given without params.camera");
	}
	if (p->mic.type) {
		if (p->mic.type != MMHAL_SRC_MIC)
			return mm_errf(-EINVAL, err, errlen,
					 "params.mic.type %u is not MMHAL_SRC_MIC",
					 p->mic.type);
		if (p->mic.fourcc != MMHAL_FMT_S16LE)
			return mm_errf(-EINVAL, err, errlen,
					 "params.mic.fourcc 0x%08x: S16LE only",
					 p->mic.fourcc);
		if (!pi.has_audio)
			return mm_errf(-ENOENT, err, errlen,
					 "mmproj: no audio encoder for the microphone");
		if (!p->mic.rate_den || !p->mic.rate_num ||
		    p->mic.rate_num % p->mic.rate_den ||
		    p->mic.rate_num / p->mic.rate_den != (uint32_t)pi.audio_rate)
			return mm_errf(-EINVAL, err, errlen,
					 "params.mic rate %u/%u Hz: the mmproj takes %d Hz",
					 p->mic.rate_num, p->mic.rate_den,
					 pi.audio_rate);
	} else if (p->mic_chan) {
		return mm_errf(-EINVAL, err, errlen,
				 "params.mic_chan given without params.mic");
	}
	if (!p->listen_ms)
		p->listen_ms = DEF_LISTEN_MS;
	if (p->listen_ms > MAX_LISTEN_MS)
		return mm_errf(-EINVAL, err, errlen,
				 "params.listen_ms %u: 1..%u", p->listen_ms,
				 MAX_LISTEN_MS);
	*listen = p->mic.type ? (uint64_t)p->listen_ms * (uint32_t)pi.audio_rate /
				1000 : 0;
	if (p->mic.type && !*listen)
		return mm_errf(-EINVAL, err, errlen,
				 "params.listen_ms %u: not one sample", p->listen_ms);
	if (!p->camera_bufs)
		p->camera_bufs = DEF_CAM_BUFS;
	if (p->camera_bufs < 2 || p->camera_bufs > MAX_CAM_BUFS)
		return mm_errf(-EINVAL, err, errlen,
				 "params.camera_bufs %u: 2..%u", p->camera_bufs,
				 MAX_CAM_BUFS);
	if (p->mic_bufs && (p->mic_bufs < 2 || p->mic_bufs > MAX_MIC_BUFS))
		return mm_errf(-EINVAL, err, errlen, "params.mic_bufs %u: 2..%u",
				 p->mic_bufs, MAX_MIC_BUFS);
	if (!p->wait_ms)
		p->wait_ms = 2000 + p->listen_ms;
	if (p->wait_ms > MAX_WAIT_MS)
		return mm_errf(-EINVAL, err, errlen, "params.wait_ms %u: 1..%u",
				 p->wait_ms, MAX_WAIT_MS);
	if (!p->n_predict)
		p->n_predict = DEF_N_PREDICT;
	if (p->n_predict < 1 || p->n_predict > MAX_N_PREDICT)
		return mm_errf(-EINVAL, err, errlen, "params.n_predict %d: 1..%d",
				 p->n_predict, MAX_N_PREDICT);
	if (p->n_ctx < 0 || p->n_threads < 0)
		return mm_errf(-EINVAL, err, errlen,
				 "params.n_ctx %d / n_threads %d: not negative",
				 p->n_ctx, p->n_threads);
	if (p->raw_prompt != 0 && p->raw_prompt != 1)
		return mm_errf(-EINVAL, err, errlen, "params.raw_prompt %d: 0 or 1",
				 p->raw_prompt);
	if (!(p->temperature == p->temperature))
		return mm_errf(-EINVAL, err, errlen, "params.temperature is NaN");
	if (p->route_off & ~MMHAL_ROUTE_ALL)
		return mm_errf(-EINVAL, err, errlen,
				 "params.route_off 0x%x: MMHAL_ROUTE_* bits only",
				 p->route_off);
	if (thr_param(&p->scene_threshold, DEF_SCENE_THR, 0, 255))
		return mm_errf(-EINVAL, err, errlen,
				 "params.scene_threshold %g: above 0, at most 255",
				 (double)p->scene_threshold);
	if (thr_param(&p->vad_threshold_dbfs, DEF_VAD_DBFS, MIN_VAD_DBFS, 0))
		return mm_errf(-EINVAL, err, errlen,
				 "params.vad_threshold_dbfs %g: -150..0 dBFS",
				 (double)p->vad_threshold_dbfs);
	if (thr_param(&p->vad_min_speech, DEF_VAD_MIN, 0, 1))
		return mm_errf(-EINVAL, err, errlen,
				 "params.vad_min_speech %g: above 0, at most 1",
				 (double)p->vad_min_speech);
	if (thr_param(&p->imu_gyro_threshold, DEF_GYRO_THR, 0, 1e6f) ||
	    thr_param(&p->imu_accel_threshold, DEF_ACCEL_THR, 0, 1e6f))
		return mm_errf(-EINVAL, err, errlen,
				 "params.imu_gyro_threshold %g / imu_accel_threshold %g: above 0",
				 (double)p->imu_gyro_threshold,
				 (double)p->imu_accel_threshold);
	if (p->imu.type) {
		if (p->imu.type != MMHAL_SRC_IMU ||
		    p->imu.fourcc != MMHAL_FMT_IMU6 || !p->imu.period)
			return mm_errf(-EINVAL, err, errlen,
					 "params.imu: an IMU6 source (mmhal_src_imu())");
	} else if (p->imu_chan) {
		return mm_errf(-EINVAL, err, errlen,
				 "params.imu_chan given without params.imu");
	}
	if (!p->imu_bufs)
		p->imu_bufs = DEF_IMU_BUFS;
	if (p->imu_bufs < 2 || p->imu_bufs > MAX_IMU_BUFS)
		return mm_errf(-EINVAL, err, errlen, "params.imu_bufs %u: 2..%u",
				 p->imu_bufs, MAX_IMU_BUFS);
	if (!p->slo_window)
		p->slo_window = DEF_SLO_WINDOW;
	if (p->slo_window > MAX_SLO_WINDOW)
		return mm_errf(-EINVAL, err, errlen, "params.slo_window %u: 1..%u",
				 p->slo_window, MAX_SLO_WINDOW);
	if (p->camera_copy_src && !p->camera_chan)
		return mm_errf(-EINVAL, err, errlen,
				 "params.camera_copy_src needs a copy channel as params.camera_chan");
	if (p->mic_copy_src && !p->mic_chan)
		return mm_errf(-EINVAL, err, errlen,
				 "params.mic_copy_src needs a copy channel as params.mic_chan");
	if (p->camera_sensor_offset_ns < -MMHAL_SENSOR_OFFSET_MAX ||
	    p->camera_sensor_offset_ns > MMHAL_SENSOR_OFFSET_MAX ||
	    p->mic_sensor_offset_ns < -MMHAL_SENSOR_OFFSET_MAX ||
	    p->mic_sensor_offset_ns > MMHAL_SENSOR_OFFSET_MAX)
		return mm_errf(-EINVAL, err, errlen,
				 "params.camera_sensor_offset_ns %lld / mic_sensor_offset_ns %lld: at most %lld ns either way",
				 (long long)p->camera_sensor_offset_ns,
				 (long long)p->mic_sensor_offset_ns,
				 (long long)MMHAL_SENSOR_OFFSET_MAX);
	if (p->camera_sensor_drift_ppb < -MMHAL_SENSOR_DRIFT_MAX ||
	    p->camera_sensor_drift_ppb > MMHAL_SENSOR_DRIFT_MAX ||
	    p->mic_sensor_drift_ppb < -MMHAL_SENSOR_DRIFT_MAX ||
	    p->mic_sensor_drift_ppb > MMHAL_SENSOR_DRIFT_MAX)
		return mm_errf(-EINVAL, err, errlen,
				 "params.camera_sensor_drift_ppb %d / mic_sensor_drift_ppb %d: at most %d ppb either way",
				 p->camera_sensor_drift_ppb, p->mic_sensor_drift_ppb,
				 MMHAL_SENSOR_DRIFT_MAX);
	if ((p->camera_chan && (p->camera_sensor_offset_ns ||
				p->camera_sensor_drift_ppb)) ||
	    (p->mic_chan && (p->mic_sensor_offset_ns ||
			     p->mic_sensor_drift_ppb)))
		return mm_errf(-EINVAL, err, errlen,
				 "params.%s_sensor_*: only for a channel the session creates (the caller's channel has its own clock)",
				 p->camera_chan && (p->camera_sensor_offset_ns ||
				 p->camera_sensor_drift_ppb) ?
				 "camera" : "mic");
	if (!p->clock_every_asks)
		p->clock_every_asks = 1;
	if (p->clock_every_asks > MAX_CLOCK_ASKS ||
	    p->clock_every_ms > MAX_CLOCK_MS)
		return mm_errf(-EINVAL, err, errlen,
				 "params.clock_every_asks %u / clock_every_ms %u: 1..%u / 0..%u",
				 p->clock_every_asks, p->clock_every_ms,
				 MAX_CLOCK_ASKS, MAX_CLOCK_MS);
	return 0;
}

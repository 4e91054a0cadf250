// SPDX-License-Identifier: MIT
/*
 * mmhal_session.c - the model asked about an mmedge device's camera and
 * microphone, reading their buffers in place (see mmhal_session.h).
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "mmhal.h"
#include "mmhal_model.h"
#include "mmhal_route.h"
#include "mmhal_session.h"

#define DEF_LISTEN_MS	1000
#define MAX_LISTEN_MS	30000
#define DEF_CAM_BUFS	3
#define MAX_CAM_BUFS	32
#define MAX_MIC_BUFS	256
#define DEF_N_PREDICT	64
#define MAX_N_PREDICT	65536
#define MAX_WAIT_MS	600000
#define MIC_PERIOD_MAX	65536	/* the driver's longest microphone period */
#define DEF_IMU_BUFS	8
#define MAX_IMU_BUFS	256
#define DEF_SLO_WINDOW	128
#define MAX_SLO_WINDOW	65536
#define DEF_SCENE_THR	3.0f
#define DEF_VAD_DBFS	(-40.0f)
#define MIN_VAD_DBFS	(-150.0f)
#define DEF_VAD_MIN	0.1f
#define DEF_GYRO_THR	1000.0f
#define DEF_ACCEL_THR	1638.0f		/* 0.1 g */
#define IMU_REC		24		/* sizeof(struct mmhal_imu_sample) */
#define MAX_CLOCK_ASKS	65536
#define MAX_CLOCK_MS	600000
#define CLOCK_WINDOW	32		/* points per clock fit */
#define CLOCK_SAMPLES	4		/* triples per sample (the tightest) */

/* A source, its channel, its buffers and the frames it holds dequeued. */
struct sess_src {
	const char *name;		/* "camera", "microphone" */
	struct mmhal_src src;
	struct mmhal_chan *chan;
	int own_chan;
	struct mmhal_buf **bufs;
	void **maps;
	uint32_t n_bufs;
	struct mmhal_frame *held;	/* by sequence, oldest first */
	uint32_t n_held;
	/* a copy channel: what each ask copies, and the next buffer */
	struct mmhal_buf *copy_src;
	uint64_t copy_bytes;
	uint32_t copy_next;
	/* the sensor clock of a channel the session creates */
	int64_t sensor_offset;
	int32_t sensor_drift;
	/* sensor -> CLOCK_MONOTONIC fit (NULL: no sensor clock) */
	struct mmhal_clock_fit *fit;
	uint32_t fit_points;
	uint32_t asks_since;
	uint64_t t_sample;
	uint64_t half_width;	/* of the newest point's sandwich */
};

struct mmhal_session {
	struct mmhal_dev *dev;
	struct mmhal_model *model;
	const struct mmhal_mmproj *proj;
	struct mmhal_session_params p;
	struct sess_src cam, mic, imu;
	uint64_t listen_samples;
	/* the last encoded frame: its chunk, signature and stamps */
	struct mmhal_chunk *img_chunk;
	uint8_t img_sig[MMHAL_SIG_CELLS];
	uint64_t img_seq, img_sof;
	struct mmhal_imu_motion motion;	/* since that frame */
	/* the last good camera frames dequeued: a ring, oldest at head */
	struct mmhal_session_frame frames[MMHAL_SESSION_FRAMES];
	uint32_t frames_n, frames_head;
	/* SLO: ring of the last slo_window asks */
	double *slo_first, *slo_last;
	uint32_t slo_n, slo_pos;
	uint64_t t_create;
	double cpu_create;
	struct mmhal_ctx *ctx;
	struct mmhal_sampler *smp;
	int16_t *pcm;			/* windows spanning buffers */
	char *text;
	size_t text_len, text_cap;
	int32_t *toks;
	int n_toks;
	struct mmhal_session_stats st;
	/* during a generation */
	mmhal_token_cb cb;
	void *cb_arg;
	uint64_t t_first, t_last;
	int gen_err;
	char err[512];
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* The process's CPU time, user + system, s. */
static double cpu_s(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static double ms_between(uint64_t a, uint64_t b)
{
	return b >= a ? (double)(b - a) / 1e6 : -(double)(a - b) / 1e6;
}

__attribute__((format(printf, 4, 5)))
static int errf(int ret, char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return ret;
}

#define SERR(s, ret, ...) errf((ret), (s)->err, sizeof((s)->err), __VA_ARGS__)

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
static uint64_t cam_frame_size(const struct mmhal_src *c)
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

static int check_params(const struct mmhal_session_params *in,
			const struct mmhal_mmproj *proj,
			struct mmhal_session_params *p, uint64_t *listen,
			char *err, size_t errlen)
{
	struct mmhal_mmproj_info pi = { .size = sizeof(pi) };
	size_t min = offsetof(struct mmhal_session_params,
			      camera_sensor_offset_ns);

	*p = mmhal_session_default_params();
	if (in->size < min || in->size > sizeof(*p))
		return errf(-EINVAL, err, errlen,
			    "params.size %u: want %zu..%zu (sizeof(struct mmhal_session_params))",
			    in->size, min, sizeof(*p));
	memcpy(p, in, in->size);
	p->size = sizeof(*p);
	for (size_t i = 0; i < sizeof(p->reserved) / sizeof(p->reserved[0]);
	     i++)
		if (p->reserved[i])
			return errf(-EINVAL, err, errlen,
				    "params.reserved[%zu] is not zero", i);
	if (mmhal_mmproj_info(proj, &pi))
		return errf(-EINVAL, err, errlen, "mmproj: no info");
	if (!p->camera.type && !p->mic.type)
		return errf(-EINVAL, err, errlen,
			    "params: neither a camera nor a microphone");
	if (p->camera.type) {
		if (p->camera.type != MMHAL_SRC_CAMERA)
			return errf(-EINVAL, err, errlen,
				    "params.camera.type %u is not MMHAL_SRC_CAMERA",
				    p->camera.type);
		if (p->camera.fourcc != MMHAL_FMT_GREY &&
		    p->camera.fourcc != MMHAL_FMT_RGB24 &&
		    p->camera.fourcc != MMHAL_FMT_NV12)
			return errf(-EINVAL, err, errlen,
				    "params.camera.fourcc 0x%08x: GREY, RGB24 or NV12",
				    p->camera.fourcc);
		if (!pi.has_vision)
			return errf(-ENOENT, err, errlen,
				    "mmproj: no vision encoder for the camera");
	} else if (p->camera_chan) {
		return errf(-EINVAL, err, errlen,
			    "params.camera_chan given without params.camera");
	}
	if (p->mic.type) {
		if (p->mic.type != MMHAL_SRC_MIC)
			return errf(-EINVAL, err, errlen,
				    "params.mic.type %u is not MMHAL_SRC_MIC",
				    p->mic.type);
		if (p->mic.fourcc != MMHAL_FMT_S16LE)
			return errf(-EINVAL, err, errlen,
				    "params.mic.fourcc 0x%08x: S16LE only",
				    p->mic.fourcc);
		if (!pi.has_audio)
			return errf(-ENOENT, err, errlen,
				    "mmproj: no audio encoder for the microphone");
		if (!p->mic.rate_den || !p->mic.rate_num ||
		    p->mic.rate_num % p->mic.rate_den ||
		    p->mic.rate_num / p->mic.rate_den != (uint32_t)pi.audio_rate)
			return errf(-EINVAL, err, errlen,
				    "params.mic rate %u/%u Hz: the mmproj takes %d Hz",
				    p->mic.rate_num, p->mic.rate_den,
				    pi.audio_rate);
	} else if (p->mic_chan) {
		return errf(-EINVAL, err, errlen,
			    "params.mic_chan given without params.mic");
	}
	if (!p->listen_ms)
		p->listen_ms = DEF_LISTEN_MS;
	if (p->listen_ms > MAX_LISTEN_MS)
		return errf(-EINVAL, err, errlen,
			    "params.listen_ms %u: 1..%u", p->listen_ms,
			    MAX_LISTEN_MS);
	*listen = p->mic.type ? (uint64_t)p->listen_ms * (uint32_t)pi.audio_rate /
				1000 : 0;
	if (p->mic.type && !*listen)
		return errf(-EINVAL, err, errlen,
			    "params.listen_ms %u: not one sample", p->listen_ms);
	if (!p->camera_bufs)
		p->camera_bufs = DEF_CAM_BUFS;
	if (p->camera_bufs < 2 || p->camera_bufs > MAX_CAM_BUFS)
		return errf(-EINVAL, err, errlen,
			    "params.camera_bufs %u: 2..%u", p->camera_bufs,
			    MAX_CAM_BUFS);
	if (p->mic_bufs && (p->mic_bufs < 2 || p->mic_bufs > MAX_MIC_BUFS))
		return errf(-EINVAL, err, errlen, "params.mic_bufs %u: 2..%u",
			    p->mic_bufs, MAX_MIC_BUFS);
	if (!p->wait_ms)
		p->wait_ms = 2000 + p->listen_ms;
	if (p->wait_ms > MAX_WAIT_MS)
		return errf(-EINVAL, err, errlen, "params.wait_ms %u: 1..%u",
			    p->wait_ms, MAX_WAIT_MS);
	if (!p->n_predict)
		p->n_predict = DEF_N_PREDICT;
	if (p->n_predict < 1 || p->n_predict > MAX_N_PREDICT)
		return errf(-EINVAL, err, errlen, "params.n_predict %d: 1..%d",
			    p->n_predict, MAX_N_PREDICT);
	if (p->n_ctx < 0 || p->n_threads < 0)
		return errf(-EINVAL, err, errlen,
			    "params.n_ctx %d / n_threads %d: not negative",
			    p->n_ctx, p->n_threads);
	if (p->raw_prompt != 0 && p->raw_prompt != 1)
		return errf(-EINVAL, err, errlen, "params.raw_prompt %d: 0 or 1",
			    p->raw_prompt);
	if (!(p->temperature == p->temperature))
		return errf(-EINVAL, err, errlen, "params.temperature is NaN");
	if (p->route_off & ~MMHAL_ROUTE_ALL)
		return errf(-EINVAL, err, errlen,
			    "params.route_off 0x%x: MMHAL_ROUTE_* bits only",
			    p->route_off);
	if (thr_param(&p->scene_threshold, DEF_SCENE_THR, 0, 255))
		return errf(-EINVAL, err, errlen,
			    "params.scene_threshold %g: above 0, at most 255",
			    (double)p->scene_threshold);
	if (thr_param(&p->vad_threshold_dbfs, DEF_VAD_DBFS, MIN_VAD_DBFS, 0))
		return errf(-EINVAL, err, errlen,
			    "params.vad_threshold_dbfs %g: -150..0 dBFS",
			    (double)p->vad_threshold_dbfs);
	if (thr_param(&p->vad_min_speech, DEF_VAD_MIN, 0, 1))
		return errf(-EINVAL, err, errlen,
			    "params.vad_min_speech %g: above 0, at most 1",
			    (double)p->vad_min_speech);
	if (thr_param(&p->imu_gyro_threshold, DEF_GYRO_THR, 0, 1e6f) ||
	    thr_param(&p->imu_accel_threshold, DEF_ACCEL_THR, 0, 1e6f))
		return errf(-EINVAL, err, errlen,
			    "params.imu_gyro_threshold %g / imu_accel_threshold %g: above 0",
			    (double)p->imu_gyro_threshold,
			    (double)p->imu_accel_threshold);
	if (p->imu.type) {
		if (p->imu.type != MMHAL_SRC_IMU ||
		    p->imu.fourcc != MMHAL_FMT_IMU6 || !p->imu.period)
			return errf(-EINVAL, err, errlen,
				    "params.imu: an IMU6 source (mmhal_src_imu())");
	} else if (p->imu_chan) {
		return errf(-EINVAL, err, errlen,
			    "params.imu_chan given without params.imu");
	}
	if (!p->imu_bufs)
		p->imu_bufs = DEF_IMU_BUFS;
	if (p->imu_bufs < 2 || p->imu_bufs > MAX_IMU_BUFS)
		return errf(-EINVAL, err, errlen, "params.imu_bufs %u: 2..%u",
			    p->imu_bufs, MAX_IMU_BUFS);
	if (!p->slo_window)
		p->slo_window = DEF_SLO_WINDOW;
	if (p->slo_window > MAX_SLO_WINDOW)
		return errf(-EINVAL, err, errlen, "params.slo_window %u: 1..%u",
			    p->slo_window, MAX_SLO_WINDOW);
	if (p->camera_copy_src && !p->camera_chan)
		return errf(-EINVAL, err, errlen,
			    "params.camera_copy_src needs a copy channel as params.camera_chan");
	if (p->mic_copy_src && !p->mic_chan)
		return errf(-EINVAL, err, errlen,
			    "params.mic_copy_src needs a copy channel as params.mic_chan");
	if (p->camera_sensor_offset_ns < -MMHAL_SENSOR_OFFSET_MAX ||
	    p->camera_sensor_offset_ns > MMHAL_SENSOR_OFFSET_MAX ||
	    p->mic_sensor_offset_ns < -MMHAL_SENSOR_OFFSET_MAX ||
	    p->mic_sensor_offset_ns > MMHAL_SENSOR_OFFSET_MAX)
		return errf(-EINVAL, err, errlen,
			    "params.camera_sensor_offset_ns %lld / mic_sensor_offset_ns %lld: at most %lld ns either way",
			    (long long)p->camera_sensor_offset_ns,
			    (long long)p->mic_sensor_offset_ns,
			    (long long)MMHAL_SENSOR_OFFSET_MAX);
	if (p->camera_sensor_drift_ppb < -MMHAL_SENSOR_DRIFT_MAX ||
	    p->camera_sensor_drift_ppb > MMHAL_SENSOR_DRIFT_MAX ||
	    p->mic_sensor_drift_ppb < -MMHAL_SENSOR_DRIFT_MAX ||
	    p->mic_sensor_drift_ppb > MMHAL_SENSOR_DRIFT_MAX)
		return errf(-EINVAL, err, errlen,
			    "params.camera_sensor_drift_ppb %d / mic_sensor_drift_ppb %d: at most %d ppb either way",
			    p->camera_sensor_drift_ppb, p->mic_sensor_drift_ppb,
			    MMHAL_SENSOR_DRIFT_MAX);
	if ((p->camera_chan && (p->camera_sensor_offset_ns ||
				p->camera_sensor_drift_ppb)) ||
	    (p->mic_chan && (p->mic_sensor_offset_ns ||
			     p->mic_sensor_drift_ppb)))
		return errf(-EINVAL, err, errlen,
			    "params.%s_sensor_*: only for a channel the session creates (the caller's channel has its own clock)",
			    p->camera_chan && (p->camera_sensor_offset_ns ||
					       p->camera_sensor_drift_ppb) ?
			    "camera" : "mic");
	if (!p->clock_every_asks)
		p->clock_every_asks = 1;
	if (p->clock_every_asks > MAX_CLOCK_ASKS ||
	    p->clock_every_ms > MAX_CLOCK_MS)
		return errf(-EINVAL, err, errlen,
			    "params.clock_every_asks %u / clock_every_ms %u: 1..%u / 0..%u",
			    p->clock_every_asks, p->clock_every_ms,
			    MAX_CLOCK_ASKS, MAX_CLOCK_MS);
	return 0;
}

/* Channel (created or checked), buffers allocated, mapped and queued. */
static int src_start(struct mmhal_session *s, struct sess_src *x,
		     struct mmhal_chan *given, struct mmhal_buf *copy_src,
		     uint32_t n_bufs, char *err, size_t errlen)
{
	uint64_t want = x->src.type == MMHAL_SRC_CAMERA ?
			cam_frame_size(&x->src) :
			x->src.type == MMHAL_SRC_IMU ?
			(uint64_t)x->src.period * IMU_REC :
			(uint64_t)x->src.period * 2;
	uint64_t buf_size;
	int ret;

	if (given && mmhal_chan_dir(given) == MMHAL_CHAN_COPY) {
		if (!copy_src)
			return errf(-EINVAL, err, errlen,
				    "%s channel: a copy channel needs a source buffer (params.%s_copy_src)",
				    x->name, x->src.type == MMHAL_SRC_CAMERA ?
				    "camera" : "mic");
		if (mmhal_buf_size(copy_src) < want)
			return errf(-EINVAL, err, errlen,
				    "%s: the copy source has %llu bytes, a frame %llu",
				    x->name,
				    (unsigned long long)mmhal_buf_size(copy_src),
				    (unsigned long long)want);
		x->chan = given;
		x->copy_src = copy_src;
		x->copy_bytes = want;
	} else if (copy_src) {
		return errf(-EINVAL, err, errlen,
			    "%s: a copy source buffer without a copy channel",
			    x->name);
	} else if (given) {
		if (mmhal_chan_dir(given) != MMHAL_CHAN_CAPTURE)
			return errf(-EINVAL, err, errlen,
				    "%s channel: a capture or copy channel, not a feed channel",
				    x->name);
		if (mmhal_chan_frame_size(given) != want)
			return errf(-EINVAL, err, errlen,
				    "%s channel: frames of %u bytes, the source's are %llu",
				    x->name, mmhal_chan_frame_size(given),
				    (unsigned long long)want);
		x->chan = given;
	} else {
		struct mmhal_chan_params cp = mmhal_chan_default_params();

		/* a filled buffer is reused for a new frame: the filled
		 * ones are always the newest */
		cp.overrun = MMHAL_OVERRUN_DROP_OLDEST;
		cp.sensor_offset_ns = x->sensor_offset;
		cp.sensor_drift_ppb = x->sensor_drift;
		ret = mmhal_chan_create(s->dev, &x->src, &cp, &x->chan);
		if (ret)
			return errf(ret, err, errlen, "%s channel: create: %s",
				    x->name, mmhal_strerror(ret));
		x->own_chan = 1;
	}
	x->bufs = calloc(n_bufs, sizeof(*x->bufs));
	x->maps = calloc(n_bufs, sizeof(*x->maps));
	x->held = calloc(n_bufs, sizeof(*x->held));
	if (!x->bufs || !x->maps || !x->held)
		return errf(-ENOMEM, err, errlen, "%s: out of memory", x->name);
	x->n_bufs = n_bufs;
	buf_size = x->copy_src ? mmhal_copy_buf_size(want) :
				 mmhal_chan_buf_size(x->chan);
	for (uint32_t i = 0; i < n_bufs; i++) {
		ret = mmhal_buf_alloc(s->dev, buf_size, NULL, &x->bufs[i]);
		if (ret)
			return errf(ret, err, errlen,
				    "%s: buffer %u of %llu bytes: %s", x->name,
				    i, (unsigned long long)buf_size,
				    mmhal_strerror(ret));
		ret = mmhal_buf_map(x->bufs[i], &x->maps[i]);
		if (ret)
			return errf(ret, err, errlen, "%s: map buffer %u: %s",
				    x->name, i, mmhal_strerror(ret));
	}
	/* a copy channel's buffers are given one per ask */
	for (uint32_t i = 0; !x->copy_src && i < n_bufs; i++) {
		ret = mmhal_chan_queue(x->chan, x->bufs[i], i, NULL);
		if (ret)
			return errf(ret, err, errlen, "%s: queue buffer %u: %s",
				    x->name, i, mmhal_strerror(ret));
	}
	return 0;
}

/* One (sensor, SoC, CLOCK_MONOTONIC) point into the source's fit. */
static int clock_sample(struct mmhal_session *s, struct sess_src *x,
			char *err, size_t errlen)
{
	struct mmhal_sensor_xts xts;
	int ret;

	ret = mmhal_dev_sensor_xts(s->dev, (uint32_t)mmhal_chan_id(x->chan),
				   CLOCK_SAMPLES, &xts);
	if (ret)
		return errf(ret, err, errlen, "%s: sensor clock sample: %s",
			    x->name, mmhal_strerror(ret));
	/* a sandwich the scheduler stretched past 1 s is left out */
	if (!mmhal_clock_fit_add_xts(x->fit, &xts)) {
		uint64_t w = UINT64_MAX;

		for (uint32_t i = 0; i < xts.n_samples; i++)
			if (xts.samples[i].sys_after >= xts.samples[i].sys_before &&
			    xts.samples[i].sys_after - xts.samples[i].sys_before < w)
				w = xts.samples[i].sys_after -
				    xts.samples[i].sys_before;
		x->half_width = (w + 1) / 2;
		x->fit_points++;
	}
	x->asks_since = 0;
	x->t_sample = now_ns();
	return 0;
}

/* The fit of a capture channel, with its first point; none for a copy
 * channel or a driver without sensor clocks. */
static int clock_start(struct mmhal_session *s, struct sess_src *x, char *err,
		       size_t errlen)
{
	struct mmhal_sensor_xts xts;
	int ret;

	if (x->copy_src || mmhal_chan_dir(x->chan) != MMHAL_CHAN_CAPTURE)
		return 0;
	ret = mmhal_dev_sensor_xts(s->dev, (uint32_t)mmhal_chan_id(x->chan), 1,
				   &xts);
	if (ret == -E2BIG)
		return 0;
	if (ret)
		return errf(ret, err, errlen, "%s: sensor clock sample: %s",
			    x->name, mmhal_strerror(ret));
	ret = mmhal_clock_fit_create(CLOCK_WINDOW, &x->fit);
	if (ret)
		return errf(ret, err, errlen, "%s: clock fit: %s", x->name,
			    mmhal_strerror(ret));
	return clock_sample(s, x, err, errlen);
}

static void src_stop(struct sess_src *x)
{
	mmhal_clock_fit_destroy(x->fit);
	if (x->own_chan)
		mmhal_chan_destroy(x->chan);
	for (uint32_t i = 0; x->bufs && i < x->n_bufs; i++)
		mmhal_buf_free(x->bufs[i]);
	free(x->bufs);
	free(x->maps);
	free(x->held);
	memset(x, 0, sizeof(*x));
}

void mmhal_session_destroy(struct mmhal_session *s)
{
	if (!s)
		return;
	for (uint32_t i = 0; s->cam.maps && i < s->cam.n_bufs; i++)
		if (s->cam.maps[i])
			mmhal_mmproj_unmap_frames(s->proj, s->cam.maps[i],
						  mmhal_buf_size(s->cam.bufs[i]));
	src_stop(&s->cam);
	src_stop(&s->mic);
	src_stop(&s->imu);
	mmhal_chunk_free(s->img_chunk);
	free(s->slo_first);
	free(s->slo_last);
	mmhal_sampler_free(s->smp);
	mmhal_ctx_free(s->ctx);
	free(s->pcm);
	free(s->text);
	free(s->toks);
	free(s);
}

int mmhal_session_create(struct mmhal_dev *dev, struct mmhal_model *model,
			 const struct mmhal_mmproj *proj,
			 const struct mmhal_session_params *params,
			 struct mmhal_session **out, char *err, size_t errlen)
{
	struct mmhal_ctx_params cp = mmhal_ctx_default_params();
	struct mmhal_session *s;
	uint32_t mic_bufs;
	int ret;

	if (err && errlen)
		err[0] = 0;
	if (out)
		*out = NULL;
	if (!dev || !model || !proj || !params || !out)
		return errf(-EINVAL, err, errlen,
			    "%s is NULL", !dev ? "dev" : !model ? "model" :
			    !proj ? "mmproj" : !params ? "params" : "out");
	s = calloc(1, sizeof(*s));
	if (!s)
		return errf(-ENOMEM, err, errlen, "out of memory");
	s->dev = dev;
	s->model = model;
	s->proj = proj;
	s->cam.name = "camera";
	s->mic.name = "microphone";
	s->imu.name = "IMU";
	s->st.size = sizeof(s->st);
	ret = check_params(params, proj, &s->p, &s->listen_samples, err,
			   errlen);
	if (ret)
		goto fail;
	s->toks = calloc((size_t)s->p.n_predict, sizeof(*s->toks));
	s->text_cap = 256;
	s->text = malloc(s->text_cap);
	s->slo_first = calloc(s->p.slo_window, sizeof(double));
	s->slo_last = calloc(s->p.slo_window, sizeof(double));
	if (!s->toks || !s->text || !s->slo_first || !s->slo_last) {
		ret = errf(-ENOMEM, err, errlen, "out of memory");
		goto fail;
	}
	s->text[0] = 0;

	cp.n_ctx = s->p.n_ctx;
	cp.n_threads = s->p.n_threads;
	cp.ctx_shift = s->p.ctx_shift;
	cp.n_keep = s->p.n_keep;
	cp.tier_mode = s->p.tier_mode;
	cp.tier = s->p.tier;
	/* 0, 0: the decoder's defaults; mmhal_ctx_create() checks them */
	if (s->p.tier_threshold[0] || s->p.tier_threshold[1]) {
		cp.tier_threshold[0] = s->p.tier_threshold[0];
		cp.tier_threshold[1] = s->p.tier_threshold[1];
	}
	ret = mmhal_ctx_create(model, &cp, &s->ctx, s->err, sizeof(s->err));
	if (ret) {
		errf(ret, err, errlen, "model session: %s", s->err);
		goto fail;
	}
	if (s->p.temperature > 0) {
		struct mmhal_sampler_params sp = mmhal_sampler_default_params();

		sp.temperature = s->p.temperature;
		sp.seed = s->p.seed;
		ret = mmhal_sampler_create(&sp, &s->smp);
		if (ret) {
			errf(ret, err, errlen, "sampler: temperature %g",
			     (double)s->p.temperature);
			goto fail;
		}
	}

	if (s->p.camera.type) {
		s->cam.src = s->p.camera;
		s->cam.sensor_offset = s->p.camera_sensor_offset_ns;
		s->cam.sensor_drift = s->p.camera_sensor_drift_ppb;
		ret = src_start(s, &s->cam, s->p.camera_chan,
				s->p.camera_copy_src, s->p.camera_bufs, err,
				errlen);
		if (ret)
			goto fail;
	}
	if (s->p.mic.type) {
		s->mic.src = s->p.mic;
		s->mic.sensor_offset = s->p.mic_sensor_offset_ns;
		s->mic.sensor_drift = s->p.mic_sensor_drift_ppb;
		if (s->p.mic_chan &&
		    mmhal_chan_dir(s->p.mic_chan) == MMHAL_CHAN_COPY) {
			/* one copy per window */
			s->mic.src.period = (uint32_t)s->listen_samples;
		} else if (!s->p.mic_chan) {
			/* one buffer per window when the driver allows it */
			uint64_t n = (s->listen_samples + MIC_PERIOD_MAX - 1) /
				     MIC_PERIOD_MAX;

			s->mic.src.period = (uint32_t)((s->listen_samples +
							n - 1) / n);
			if (s->mic.src.period < 16)
				s->mic.src.period = 16;
		}
		if (!s->mic.src.period) {
			ret = errf(-EINVAL, err, errlen,
				   "params.mic.period is 0");
			goto fail;
		}
		mic_bufs = s->p.mic_bufs;
		if (!mic_bufs) {
			uint64_t n = (s->listen_samples + s->mic.src.period - 1) /
				     s->mic.src.period + 2;

			if (n > MAX_MIC_BUFS) {
				ret = errf(-EINVAL, err, errlen,
					   "microphone: a %u ms window takes %llu buffers of %u samples (most %u)",
					   s->p.listen_ms,
					   (unsigned long long)n,
					   s->mic.src.period, MAX_MIC_BUFS);
				goto fail;
			}
			mic_bufs = (uint32_t)n;
		}
		if ((uint64_t)(mic_bufs - 1) * s->mic.src.period <
		    s->listen_samples) {
			ret = errf(-EINVAL, err, errlen,
				   "params.mic_bufs %u: a %u ms window needs %llu of %u samples and one more",
				   mic_bufs, s->p.listen_ms,
				   (unsigned long long)((s->listen_samples +
							 s->mic.src.period - 1) /
							s->mic.src.period),
				   s->mic.src.period);
			goto fail;
		}
		if (mic_bufs > 1 && (uint64_t)s->mic.src.period < s->listen_samples) {
			s->pcm = malloc(s->listen_samples * sizeof(int16_t));
			if (!s->pcm) {
				ret = errf(-ENOMEM, err, errlen,
					   "out of memory");
				goto fail;
			}
		}
		ret = src_start(s, &s->mic, s->p.mic_chan, s->p.mic_copy_src,
				mic_bufs, err, errlen);
		if (ret)
			goto fail;
	}
	if (s->p.imu.type) {
		s->imu.src = s->p.imu;
		ret = src_start(s, &s->imu, s->p.imu_chan, NULL, s->p.imu_bufs,
				err, errlen);
		if (ret)
			goto fail;
	}
	if (s->cam.chan)
		ret = clock_start(s, &s->cam, err, errlen);
	if (!ret && s->mic.chan)
		ret = clock_start(s, &s->mic, err, errlen);
	if (ret)
		goto fail;
	s->t_create = now_ns();
	s->cpu_create = cpu_s();
	s->err[0] = 0;
	*out = s;
	return 0;
fail:
	mmhal_session_destroy(s);
	return ret;
}

const char *mmhal_session_error(const struct mmhal_session *s)
{
	return s ? s->err : "session is NULL";
}

struct mmhal_ctx *mmhal_session_ctx(struct mmhal_session *s)
{
	return s ? s->ctx : NULL;
}

struct mmhal_chan *mmhal_session_chan(struct mmhal_session *s, uint32_t type)
{
	if (!s)
		return NULL;
	if (type == MMHAL_SRC_CAMERA)
		return s->cam.chan;
	if (type == MMHAL_SRC_MIC)
		return s->mic.chan;
	if (type == MMHAL_SRC_IMU)
		return s->imu.chan;
	return NULL;
}

int mmhal_session_slo(const struct mmhal_session *s,
		      struct mmhal_session_slo *out)
{
	static const double pct[3] = { 50, 95, 99 };
	struct mmhal_session_slo o;
	struct rusage ru;
	uint32_t size;
	double *v, q[3];

	if (!s || !out)
		return -EINVAL;
	size = out->size;
	if (size < offsetof(struct mmhal_session_slo, first_p50))
		return -EINVAL;
	memset(&o, 0, sizeof(o));
	o.size = sizeof(o);
	o.n = s->slo_n;
	if (s->slo_n) {
		v = malloc(s->slo_n * sizeof(*v));
		if (!v)
			return -ENOMEM;
		memcpy(v, s->slo_first, s->slo_n * sizeof(*v));
		mmhal_percentiles(v, s->slo_n, pct, q, 3);
		o.first_p50 = q[0];
		o.first_p95 = q[1];
		o.first_p99 = q[2];
		o.first_max = v[s->slo_n - 1];
		memcpy(v, s->slo_last, s->slo_n * sizeof(*v));
		mmhal_percentiles(v, s->slo_n, pct, q, 3);
		o.last_p50 = q[0];
		o.last_p95 = q[1];
		o.last_p99 = q[2];
		o.last_max = v[s->slo_n - 1];
		free(v);
	}
	if (!getrusage(RUSAGE_SELF, &ru))
		o.peak_rss_bytes = (uint64_t)ru.ru_maxrss * 1024;
	o.cpu_s = cpu_s() - s->cpu_create;
	o.wall_s = ms_between(s->t_create, now_ns()) / 1e3;
	memcpy(out, &o, size < sizeof(o) ? size : sizeof(o));
	out->size = size;
	return 0;
}

int mmhal_session_stats(const struct mmhal_session *s,
			struct mmhal_session_stats *out)
{
	uint32_t size;

	if (!s || !out)
		return -EINVAL;
	size = out->size;
	if (size < offsetof(struct mmhal_session_stats, asks) + sizeof(uint64_t))
		return -EINVAL;
	memcpy(out, &s->st, size < sizeof(s->st) ? size : sizeof(s->st));
	out->size = size;
	return 0;
}

/* ---- acquiring ---------------------------------------------------------- */

static int requeue(struct mmhal_session *s, struct sess_src *x,
		   const struct mmhal_frame *fr)
{
	int ret;

	if (!fr->buf || x->copy_src)
		return 0;	/* a copy channel's buffer is free once dequeued */
	ret = mmhal_chan_queue(x->chan, fr->buf, fr->cookie, NULL);
	if (ret)
		return SERR(s, ret, "%s: queue buffer %llu again: %s", x->name,
			    (unsigned long long)fr->cookie,
			    mmhal_strerror(ret));
	return 0;
}

static int release_held(struct mmhal_session *s, struct sess_src *x)
{
	int ret = 0;

	for (uint32_t i = 0; i < x->n_held; i++) {
		int r = requeue(s, x, &x->held[i]);

		if (r && !ret)
			ret = r;
	}
	x->n_held = 0;
	return ret;
}

/* Milliseconds to the deadline, at least 1; 0 once it has passed. */
static int left_ms(uint64_t deadline)
{
	uint64_t t = now_ns();

	if (t >= deadline)
		return 0;
	return (int)((deadline - t + 999999) / 1000000);
}

/* One filled buffer: 0, 1 if none is ready (non-blocking), or an error. */
static int dq(struct mmhal_session *s, struct sess_src *x, int wait,
	      uint64_t deadline, struct mmhal_frame *fr)
{
	int to = MMHAL_NONBLOCK, ret;

	if (wait) {
		to = left_ms(deadline);
		if (!to)
			return -ETIMEDOUT;
	}
	ret = mmhal_chan_dequeue(x->chan, to, fr);
	if (ret == -EAGAIN && !wait)
		return 1;
	if (ret == -ETIMEDOUT || ret == -EAGAIN)
		return -ETIMEDOUT;
	if (ret)
		return SERR(s, ret, "%s: dequeue: %s", x->name,
			    mmhal_strerror(ret));
	if (fr->cookie >= x->n_bufs || fr->buf != x->bufs[fr->cookie])
		return SERR(s, -EPROTO,
			    "%s: dequeued a buffer the session did not queue (cookie %llu)",
			    x->name, (unsigned long long)fr->cookie);
	return 0;
}

/* Nominal frame period of the camera, ns on its clock. */
static uint64_t cam_period_ns(const struct sess_src *x)
{
	return x->src.rate_num ? 1000000000ULL * x->src.rate_den /
				 x->src.rate_num : 0;
}

/* A good camera frame into the pairing's ring. */
static void frame_log(struct mmhal_session *s, const struct mmhal_frame *fr)
{
	struct mmhal_session_frame *f;
	uint32_t i;

	if (s->frames_n < MMHAL_SESSION_FRAMES) {
		i = (s->frames_head + s->frames_n++) % MMHAL_SESSION_FRAMES;
	} else {
		i = s->frames_head;
		s->frames_head = (s->frames_head + 1) % MMHAL_SESSION_FRAMES;
	}
	f = &s->frames[i];
	memset(f, 0, sizeof(*f));
	f->sequence = fr->sequence;
	f->flags = fr->flags;
	f->sof_mono = fr->ts.sof_mono;
	if (fr->flags & MMHAL_FRAME_TS_SENSOR) {
		f->sensor_sof = fr->sensor_sof;
		f->sensor_end = fr->sensor_sof + cam_period_ns(&s->cam);
	}
}

int mmhal_session_frames(const struct mmhal_session *s,
			 struct mmhal_session_frame *out, size_t max)
{
	size_t n;

	if (!s || (!out && max))
		return -EINVAL;
	n = s->frames_n < max ? s->frames_n : max;
	/* the newest n */
	for (size_t k = 0; k < n; k++)
		out[k] = s->frames[(s->frames_head + s->frames_n - n + k) %
				   MMHAL_SESSION_FRAMES];
	return (int)n;
}

/* The newest good camera frame, held. */
static int cam_acquire(struct mmhal_session *s, uint64_t deadline)
{
	struct sess_src *x = &s->cam;
	struct mmhal_frame fr;
	int ret;

	for (;;) {
		ret = dq(s, x, !x->n_held, deadline, &fr);
		if (ret == 1)
			return 0;
		if (ret == -ETIMEDOUT)
			return SERR(s, ret, "camera: no frame within %u ms",
				    s->p.wait_ms);
		if (ret)
			return ret;
		if ((fr.flags & MMHAL_FRAME_ERROR) ||
		    fr.bytesused < cam_frame_size(&x->src)) {
			s->st.frames_skipped++;
			ret = requeue(s, x, &fr);
			if (ret)
				return ret;
			continue;
		}
		if (x->n_held) {
			s->st.frames_skipped++;
			ret = requeue(s, x, &x->held[0]);
			if (ret)
				return ret;
		}
		frame_log(s, &fr);
		x->held[0] = fr;
		x->n_held = 1;
	}
}

static uint64_t held_samples(const struct sess_src *x)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < x->n_held; i++)
		n += x->held[i].bytesused / 2;
	return n;
}

/* The newest buffers of consecutive sequence numbers holding the window. */
static int mic_acquire(struct mmhal_session *s, uint64_t deadline)
{
	struct sess_src *x = &s->mic;
	uint64_t need = s->listen_samples;
	struct mmhal_frame fr;
	int ret;

	for (;;) {
		uint64_t have = held_samples(x);

		ret = dq(s, x, have < need, deadline, &fr);
		if (ret == 1)
			return 0;
		if (ret == -ETIMEDOUT)
			return SERR(s, ret,
				    "microphone: %llu of %llu samples (%u ms) within %u ms",
				    (unsigned long long)have,
				    (unsigned long long)need, s->p.listen_ms,
				    s->p.wait_ms);
		if (ret)
			return ret;
		if ((fr.flags & MMHAL_FRAME_ERROR) || fr.bytesused < 2 ||
		    fr.bytesused > mmhal_chan_frame_size(x->chan)) {
			s->st.mic_bufs_skipped++;
			ret = requeue(s, x, &fr);
			if (ret)
				return ret;
			continue;
		}
		/* a gap: the samples before it are not in this window */
		if (x->n_held &&
		    fr.sequence != x->held[x->n_held - 1].sequence + 1) {
			s->st.mic_bufs_skipped += x->n_held;
			ret = release_held(s, x);
			if (ret)
				return ret;
		}
		if (x->n_held == x->n_bufs)
			return SERR(s, -EPROTO,
				    "microphone: more buffers dequeued than queued");
		x->held[x->n_held++] = fr;
		/* drop the oldest while the rest still hold the window */
		while (x->n_held > 1 &&
		       held_samples(x) - x->held[0].bytesused / 2 >= need) {
			s->st.mic_bufs_skipped++;
			ret = requeue(s, x, &x->held[0]);
			if (ret)
				return ret;
			memmove(x->held, x->held + 1,
				(x->n_held - 1) * sizeof(*x->held));
			x->n_held--;
		}
	}
}

/* A copy channel: the caller's buffer copied into a session buffer, held. */
static int copy_acquire(struct mmhal_session *s, struct sess_src *x,
			uint64_t deadline)
{
	uint32_t i = x->copy_next++ % x->n_bufs;
	struct mmhal_frame fr;
	int ret;

	ret = mmhal_chan_copy(x->chan, x->bufs[i], x->copy_src, x->copy_bytes,
			      i, NULL);
	if (ret)
		return SERR(s, ret, "%s: copy into buffer %u: %s", x->name, i,
			    mmhal_strerror(ret));
	for (;;) {
		ret = dq(s, x, 1, deadline, &fr);
		if (ret == -ETIMEDOUT)
			return SERR(s, ret, "%s: the copy took over %u ms",
				    x->name, s->p.wait_ms);
		if (ret)
			return ret;
		if (fr.cookie == i)	/* else an earlier ask's late copy */
			break;
	}
	if ((fr.flags & MMHAL_FRAME_ERROR) || fr.bytesused != x->copy_bytes)
		return SERR(s, -EIO, "%s: the copy failed (%llu of %llu bytes)",
			    x->name, (unsigned long long)fr.bytesused,
			    (unsigned long long)x->copy_bytes);
	x->held[0] = fr;
	x->n_held = 1;
	return 0;
}

static int check_meta(struct mmhal_session *s, struct sess_src *x,
		      const struct mmhal_frame *fr);

/* The IMU's filled buffers: their records after the encoded frame's start
 * go into the motion measure; all are queued again. */
static int imu_drain(struct mmhal_session *s, struct mmhal_session_result *r)
{
	struct sess_src *x = &s->imu;
	struct mmhal_frame fr;
	int ret, r2;

	for (;;) {
		ret = dq(s, x, 0, 0, &fr);
		if (ret == 1)
			return 0;
		if (ret)
			return ret;
		if (!(fr.flags & MMHAL_FRAME_ERROR) && fr.bytesused >= IMU_REC &&
		    fr.bytesused <= mmhal_chan_frame_size(x->chan) &&
		    fr.ts.eof_mono > s->img_sof) {
			ret = mmhal_buf_begin_cpu(fr.buf, MMHAL_SYNC_READ);
			if (ret)
				return SERR(s, ret,
					    "IMU: buffer %llu: begin CPU access: %s",
					    (unsigned long long)fr.sequence,
					    mmhal_strerror(ret));
			ret = check_meta(s, x, &fr);
			if (!ret) {
				mmhal_imu_motion_add(&s->motion,
						     x->maps[fr.cookie],
						     fr.bytesused / IMU_REC);
				s->st.imu_records += fr.bytesused / IMU_REC;
				r->flags |= MMHAL_RESULT_IMU;
			}
			r2 = mmhal_buf_end_cpu(fr.buf, MMHAL_SYNC_READ);
			if (!ret && r2)
				ret = SERR(s, r2,
					   "IMU: buffer %llu: end CPU access: %s",
					   (unsigned long long)fr.sequence,
					   mmhal_strerror(r2));
			if (ret) {
				requeue(s, x, &fr);
				return ret;
			}
		}
		ret = requeue(s, x, &fr);
		if (ret)
			return ret;
	}
}

/* The in-band record of a held buffer says what its dequeue said. */
static int check_meta(struct mmhal_session *s, struct sess_src *x,
		      const struct mmhal_frame *fr)
{
	const struct mmhal_frame_meta *m;
	int ret = mmhal_frame_record(x->chan, fr, &m);

	if (ret)
		return SERR(s, ret, "%s: frame %llu: in-band record: %s",
			    x->name, (unsigned long long)fr->sequence,
			    mmhal_strerror(ret));
	if (m->sequence != fr->sequence || m->bytesused != fr->bytesused ||
	    memcmp(&m->ts, &fr->ts, sizeof(m->ts)))
		return SERR(s, -EBADMSG,
			    "%s: frame %llu: the in-band record (frame %llu) differs from the dequeue",
			    x->name, (unsigned long long)fr->sequence,
			    (unsigned long long)m->sequence);
	return 0;
}

/* ---- encoding ----------------------------------------------------------- */

static int route_frame(struct mmhal_session *s, struct mmhal_chunk **chunk,
		       struct mmhal_session_result *r)
{
	struct sess_src *x = &s->cam;
	const struct mmhal_frame *fr = &x->held[0];
	const uint8_t *base = x->maps[fr->cookie];
	struct mmhal_chunk *enc = NULL;
	uint8_t sig[MMHAL_SIG_CELLS];
	struct mmhal_image img;
	/* set below before any use; gcc -O1 with ASan cannot tell that an
	 * early failure (goto out) never reaches the counting */
	uint32_t why = MMHAL_ROUTE_UNCHANGED;
	double diff = -1;
	int moved, ret, r2;
	char e[256];

	memset(&img, 0, sizeof(img));
	img.format = x->src.fourcc;
	img.width = x->src.width;
	img.height = x->src.height;
	img.plane[0] = base;
	img.stride[0] = (size_t)x->src.width *
			(x->src.fourcc == MMHAL_FMT_RGB24 ? 3 : 1);
	if (x->src.fourcc == MMHAL_FMT_NV12) {
		img.plane[1] = base + (size_t)x->src.width * x->src.height;
		img.stride[1] = x->src.width;
	}
	ret = mmhal_buf_begin_cpu(fr->buf, MMHAL_SYNC_READ);
	if (ret)
		return SERR(s, ret, "camera: frame %llu: begin CPU access: %s",
			    (unsigned long long)fr->sequence,
			    mmhal_strerror(ret));
	ret = check_meta(s, x, fr);
	if (!ret) {
		ret = mmhal_scene_signature(&img, sig);
		if (ret)
			SERR(s, ret, "camera: frame %llu: signature of a %ux%u frame",
			     (unsigned long long)fr->sequence, img.width,
			     img.height);
	}
	if (ret)
		goto out;
	if (s->img_chunk)
		diff = mmhal_scene_diff(sig, s->img_sig);
	moved = s->imu.chan && !(s->p.route_off & MMHAL_ROUTE_IMU) &&
		mmhal_imu_moved(&s->motion, s->p.imu_gyro_threshold,
				s->p.imu_accel_threshold);
	if (s->p.route_off & MMHAL_ROUTE_SCENE)
		why = MMHAL_ROUTE_ALWAYS;
	else if (!s->img_chunk)
		why = MMHAL_ROUTE_FIRST;
	else if (moved)
		why = MMHAL_ROUTE_MOTION;
	else if (diff > s->p.scene_threshold)
		why = MMHAL_ROUTE_CHANGED;
	else
		why = MMHAL_ROUTE_UNCHANGED;
	if (why != MMHAL_ROUTE_UNCHANGED) {
		/* the buffer's mapping, declared once (the CUDA back end
		 * reads it in place; undeclared at destroy). The frame is
		 * dequeued (written) and begun for reading: no fence left. */
		mmhal_mmproj_map_frames(s->proj, base, mmhal_buf_size(fr->buf));
		ret = mmhal_encode_image(s->proj, &img, &enc, e, sizeof(e));
		if (ret)
			SERR(s, ret, "image encoder: frame %llu: %s",
			     (unsigned long long)fr->sequence, e);
	}
out:
	r2 = mmhal_buf_end_cpu(fr->buf, MMHAL_SYNC_READ);
	if (!ret && r2)
		ret = SERR(s, r2, "camera: frame %llu: end CPU access: %s",
			   (unsigned long long)fr->sequence,
			   mmhal_strerror(r2));
	if (ret) {
		mmhal_chunk_free(enc);
		return ret;
	}
	r->image_route = why;
	r->scene_diff = (float)diff;
	r->imu_gyro_max = s->motion.gyro_max;
	r->imu_accel_change = s->motion.accel_change_max;
	s->st.image_route[why]++;
	if (enc) {
		mmhal_chunk_free(s->img_chunk);
		s->img_chunk = enc;
		memcpy(s->img_sig, sig, sizeof(sig));
		s->img_seq = fr->sequence;
		s->img_sof = fr->ts.sof_mono;
		memset(&s->motion, 0, sizeof(s->motion));
		s->st.frames_used++;
		s->st.encoder_runs++;
		s->st.image_bytes_read_in_place += cam_frame_size(&x->src);
		r->encoders_run++;
	} else {
		s->st.encoder_runs_avoided++;
		r->flags |= MMHAL_RESULT_IMAGE_REUSED;
	}
	*chunk = s->img_chunk;
	r->image_frame_sequence = s->img_seq;
	r->flags |= MMHAL_RESULT_IMAGE;
	r->frame_sequence = fr->sequence;
	r->frame_flags = fr->flags;
	r->frame_ts = fr->ts;
	if (fr->flags & MMHAL_FRAME_TS_SENSOR) {
		r->frame_sensor_sof = fr->sensor_sof;
		r->frame_sensor_eof = fr->sensor_eof;
	}
	if ((fr->flags & MMHAL_FRAME_TS_SENSOR) && x->fit &&
	    !mmhal_clock_fit_map(x->fit, fr->sensor_sof, &r->frame_mono_sof,
				 &r->frame_uncert_ns) &&
	    !mmhal_clock_fit_map(x->fit, fr->sensor_eof, &r->frame_mono_eof,
				 NULL)) {
		r->frame_uncert_ns += x->half_width;
		r->flags |= MMHAL_RESULT_FRAME_MAPPED;
	}
	r->frame_buf = fr->buf;
	r->image_plane[0] = img.plane[0];
	r->image_plane[1] = img.plane[1];
	r->image_stride[0] = img.stride[0];
	r->image_stride[1] = img.stride[1];
	return 0;
}

/* @n samples at the microphone's nominal rate, ns on its clock. */
static uint64_t samples_ns(const struct sess_src *x, uint64_t n)
{
	unsigned __int128 t = (unsigned __int128)n * 1000000000ULL *
			      x->src.rate_den;

	return (uint64_t)((t + x->src.rate_num / 2) / x->src.rate_num);
}

/* The held window's ends on the microphone's clock, and mapped. */
static void window_stamps(struct mmhal_session *s, uint64_t skip,
			  struct mmhal_session_result *r)
{
	struct sess_src *x = &s->mic;
	const struct mmhal_frame *last = &x->held[x->n_held - 1];
	uint64_t u1 = 0, u2 = 0;

	for (uint32_t i = 0; i < x->n_held; i++)
		if (!(x->held[i].flags & MMHAL_FRAME_TS_SENSOR))
			return;
	r->audio_sensor_start = x->held[0].sensor_sof + samples_ns(x, skip);
	r->audio_sensor_end = last->sensor_sof +
			      samples_ns(x, last->bytesused / 2 - 1);
	if (x->fit &&
	    !mmhal_clock_fit_map(x->fit, r->audio_sensor_start,
				 &r->audio_mono_start, &u1) &&
	    !mmhal_clock_fit_map(x->fit, r->audio_sensor_end,
				 &r->audio_mono_end, &u2)) {
		r->audio_uncert_ns = (u1 > u2 ? u1 : u2) + x->half_width;
		r->flags |= MMHAL_RESULT_AUDIO_MAPPED;
	}
}

/* The audio window against the recent camera frames, both mapped. */
static void pair_window(struct mmhal_session *s,
			struct mmhal_session_result *r)
{
	struct mmhal_align_frame fr[MMHAL_SESSION_FRAMES];
	struct mmhal_align_result ar;
	size_t n = 0;

	if (!(r->flags & MMHAL_RESULT_AUDIO_MAPPED) || !s->cam.fit)
		return;
	for (uint32_t k = 0; k < s->frames_n; k++) {
		const struct mmhal_session_frame *f =
			&s->frames[(s->frames_head + k) % MMHAL_SESSION_FRAMES];

		if (!(f->flags & MMHAL_FRAME_TS_SENSOR))
			continue;
		/* in order of start: a clock that went back starts over */
		if (n && (int64_t)(f->sensor_sof - fr[n - 1].start) < 0)
			n = 0;
		fr[n].sequence = f->sequence;
		fr[n].start = f->sensor_sof;
		fr[n].end = f->sensor_end;
		n++;
	}
	if (mmhal_align_window(s->mic.fit, r->audio_sensor_start,
			       r->audio_sensor_end, s->cam.fit, fr, n, NULL, 0,
			       &ar))
		return;
	r->flags |= MMHAL_RESULT_PAIRED;
	r->pair_n_overlap = ar.n_overlap;
	r->pair_seq_first = ar.seq_first;
	r->pair_seq_last = ar.seq_last;
	r->pair_coverage = ar.coverage;
	r->pair_uncert_ns = ar.uncert_ns + (s->cam.half_width >
					    s->mic.half_width ?
					    s->cam.half_width :
					    s->mic.half_width);
	r->pair_frame_used = ar.n_overlap && (r->flags & MMHAL_RESULT_IMAGE) &&
			     r->frame_sequence >= ar.seq_first &&
			     r->frame_sequence <= ar.seq_last;
}

/* Clock points: while a fit cannot map (@before), or when one is due. */
static int clock_due(struct mmhal_session *s, int before)
{
	struct sess_src *xs[2] = { &s->cam, &s->mic };
	uint64_t t = now_ns();
	int ret;

	for (int i = 0; i < 2; i++) {
		struct sess_src *x = xs[i];

		if (!x->fit)
			continue;
		if (before ? x->fit_points >= 3 :
		    ++x->asks_since < s->p.clock_every_asks &&
		    (!s->p.clock_every_ms ||
		     t - x->t_sample < (uint64_t)s->p.clock_every_ms * 1000000))
			continue;
		ret = clock_sample(s, x, s->err, sizeof(s->err));
		if (ret)
			return ret;
	}
	return 0;
}

static int route_window(struct mmhal_session *s, struct mmhal_chunk **chunk,
			 struct mmhal_session_result *r)
{
	struct sess_src *x = &s->mic;
	uint64_t need = s->listen_samples;
	uint64_t skip = held_samples(x) - need;	/* of the first buffer */
	struct mmhal_audio au;
	struct mmhal_vad vad;
	uint32_t begun = 0, why = MMHAL_ROUTE_ALWAYS;
	char e[256];
	int ret = 0;

	for (; begun < x->n_held; begun++) {
		ret = mmhal_buf_begin_cpu(x->held[begun].buf, MMHAL_SYNC_READ);
		if (ret) {
			SERR(s, ret,
			     "microphone: buffer %llu: begin CPU access: %s",
			     (unsigned long long)x->held[begun].sequence,
			     mmhal_strerror(ret));
			goto out;
		}
		ret = check_meta(s, x, &x->held[begun]);
		if (ret) {
			begun++;
			goto out;
		}
	}
	au.n_samples = need;
	au.rate = (uint32_t)(x->src.rate_num / x->src.rate_den);
	if (x->n_held == 1) {
		/* the window lies in one buffer: read in place */
		au.samples = (const int16_t *)x->maps[x->held[0].cookie] + skip;
		s->st.audio_bytes_read_in_place += need * 2;
	} else {
		/* one contiguous copy: the encoder takes one array */
		uint64_t at = 0;

		for (uint32_t i = 0; i < x->n_held; i++) {
			const int16_t *p = x->maps[x->held[i].cookie];
			uint64_t n = x->held[i].bytesused / 2, from = 0;

			if (!i)
				from = skip;
			memcpy(s->pcm + at, p + from, (n - from) * 2);
			at += n - from;
		}
		au.samples = s->pcm;
		s->st.audio_bytes_copied += need * 2;
		s->st.bytes_copied += need * 2;
		r->bytes_copied += need * 2;
		r->flags |= MMHAL_RESULT_AUDIO_COPIED;
	}
	why = MMHAL_ROUTE_ALWAYS;
	if (!(s->p.route_off & MMHAL_ROUTE_VAD)) {
		ret = mmhal_vad(au.samples, au.n_samples, au.rate,
				s->p.vad_threshold_dbfs, s->p.vad_min_speech,
				&vad);
		if (ret) {
			SERR(s, ret, "microphone: voice activity: %s",
			     mmhal_strerror(ret));
			goto out;
		}
		why = vad.speech ? MMHAL_ROUTE_SPEECH : MMHAL_ROUTE_SILENCE;
		r->vad_speech_frac = vad.speech_frac;
		r->vad_max_dbfs = vad.max_dbfs;
	}
	if (why != MMHAL_ROUTE_SILENCE) {
		ret = mmhal_encode_audio(s->proj, &au, chunk, e, sizeof(e));
		if (ret)
			SERR(s, ret, "audio encoder: buffers %llu..%llu: %s",
			     (unsigned long long)x->held[0].sequence,
			     (unsigned long long)x->held[x->n_held - 1].sequence,
			     e);
	}
out:
	for (uint32_t i = 0; i < begun; i++) {
		int r2 = mmhal_buf_end_cpu(x->held[i].buf, MMHAL_SYNC_READ);

		if (!ret && r2)
			ret = SERR(s, r2,
				   "microphone: buffer %llu: end CPU access: %s",
				   (unsigned long long)x->held[i].sequence,
				   mmhal_strerror(r2));
	}
	if (ret)
		return ret;
	s->st.mic_bufs_used += x->n_held;
	r->audio_route = why;
	s->st.audio_route[why]++;
	if (why == MMHAL_ROUTE_SILENCE) {
		r->flags |= MMHAL_RESULT_AUDIO_SKIPPED;
		s->st.encoder_runs_avoided++;
	} else {
		r->flags |= MMHAL_RESULT_AUDIO;
		s->st.encoder_runs++;
		r->encoders_run++;
	}
	r->audio_first_sequence = x->held[0].sequence;
	r->audio_last_sequence = x->held[x->n_held - 1].sequence;
	r->audio_first_ts = x->held[0].ts;
	r->audio_last_ts = x->held[x->n_held - 1].ts;
	r->audio_last_buf = x->held[x->n_held - 1].buf;
	r->audio_samples = au.samples;
	r->audio_n_samples = need;
	r->audio_n_bufs = x->n_held;
	window_stamps(s, skip, r);
	return 0;
}

/* ---- polling -------------------------------------------------------------- */

/* The held frame's routing, no encoding. */
static int poll_frame(struct mmhal_session *s, struct mmhal_session_poll *o)
{
	struct sess_src *x = &s->cam;
	const struct mmhal_frame *fr = &x->held[0];
	const uint8_t *base = x->maps[fr->cookie];
	uint8_t sig[MMHAL_SIG_CELLS];
	struct mmhal_image img;
	int ret, r2;

	memset(&img, 0, sizeof(img));
	img.format = x->src.fourcc;
	img.width = x->src.width;
	img.height = x->src.height;
	img.plane[0] = base;
	img.stride[0] = (size_t)x->src.width *
			(x->src.fourcc == MMHAL_FMT_RGB24 ? 3 : 1);
	ret = mmhal_buf_begin_cpu(fr->buf, MMHAL_SYNC_READ);
	if (ret)
		return SERR(s, ret, "camera: frame %llu: begin CPU access: %s",
			    (unsigned long long)fr->sequence,
			    mmhal_strerror(ret));
	ret = check_meta(s, x, fr);
	if (!ret) {
		ret = mmhal_scene_signature(&img, sig);
		if (ret)
			SERR(s, ret, "camera: frame %llu: signature of a %ux%u frame",
			     (unsigned long long)fr->sequence, img.width,
			     img.height);
	}
	r2 = mmhal_buf_end_cpu(fr->buf, MMHAL_SYNC_READ);
	if (!ret && r2)
		ret = SERR(s, r2, "camera: frame %llu: end CPU access: %s",
			   (unsigned long long)fr->sequence, mmhal_strerror(r2));
	if (ret)
		return ret;
	o->frame_sequence = fr->sequence;
	o->scene_diff = s->img_chunk ? (float)mmhal_scene_diff(sig, s->img_sig) :
				       -1.0f;
	if (s->p.route_off & MMHAL_ROUTE_SCENE)
		o->image_route = MMHAL_ROUTE_ALWAYS;
	else if (!s->img_chunk)
		o->image_route = MMHAL_ROUTE_FIRST;
	else if (s->imu.chan && !(s->p.route_off & MMHAL_ROUTE_IMU) &&
		 mmhal_imu_moved(&s->motion, s->p.imu_gyro_threshold,
				 s->p.imu_accel_threshold))
		o->image_route = MMHAL_ROUTE_MOTION;
	else if (o->scene_diff > s->p.scene_threshold)
		o->image_route = MMHAL_ROUTE_CHANGED;
	else
		o->image_route = MMHAL_ROUTE_UNCHANGED;
	return 0;
}

/* The held window's voice activity, no encoding. */
static int poll_window(struct mmhal_session *s, struct mmhal_session_poll *o)
{
	struct sess_src *x = &s->mic;
	uint64_t need = s->listen_samples, skip = held_samples(x) - need;
	const int16_t *pcm;
	struct mmhal_vad vad;
	uint32_t begun = 0;
	int ret = 0;

	o->audio_last_sequence = x->held[x->n_held - 1].sequence;
	if (s->p.route_off & MMHAL_ROUTE_VAD) {
		o->audio_route = MMHAL_ROUTE_ALWAYS;
		return 0;
	}
	for (; begun < x->n_held; begun++) {
		ret = mmhal_buf_begin_cpu(x->held[begun].buf, MMHAL_SYNC_READ);
		if (ret) {
			SERR(s, ret,
			     "microphone: buffer %llu: begin CPU access: %s",
			     (unsigned long long)x->held[begun].sequence,
			     mmhal_strerror(ret));
			goto out;
		}
	}
	if (x->n_held == 1) {
		pcm = (const int16_t *)x->maps[x->held[0].cookie] + skip;
	} else {
		uint64_t at = 0;

		for (uint32_t i = 0; i < x->n_held; i++) {
			const int16_t *p = x->maps[x->held[i].cookie];
			uint64_t n = x->held[i].bytesused / 2, from = i ? 0 : skip;

			memcpy(s->pcm + at, p + from, (n - from) * 2);
			at += n - from;
		}
		pcm = s->pcm;
		s->st.audio_bytes_copied += need * 2;
		s->st.bytes_copied += need * 2;
	}
	ret = mmhal_vad(pcm, need, (uint32_t)(x->src.rate_num / x->src.rate_den),
			s->p.vad_threshold_dbfs, s->p.vad_min_speech, &vad);
	if (ret) {
		SERR(s, ret, "microphone: voice activity: %s",
		     mmhal_strerror(ret));
		goto out;
	}
	o->audio_route = vad.speech ? MMHAL_ROUTE_SPEECH : MMHAL_ROUTE_SILENCE;
	o->vad_speech_frac = vad.speech_frac;
	o->vad_max_dbfs = vad.max_dbfs;
out:
	for (uint32_t i = 0; i < begun; i++) {
		int r2 = mmhal_buf_end_cpu(x->held[i].buf, MMHAL_SYNC_READ);

		if (!ret && r2)
			ret = SERR(s, r2,
				   "microphone: buffer %llu: end CPU access: %s",
				   (unsigned long long)x->held[i].sequence,
				   mmhal_strerror(r2));
	}
	return ret;
}

/*
 * The newest data of every channel: the microphone first (it may wait for
 * a window to fill, and the frame is then the newest after that wait),
 * then the camera, then what the IMU recorded.
 */
static int acquire_all(struct mmhal_session *s, uint64_t deadline,
		       struct mmhal_session_result *r)
{
	int ret;

	if (s->mic.chan) {
		ret = s->mic.copy_src ? copy_acquire(s, &s->mic, deadline) :
					mic_acquire(s, deadline);
		if (ret)
			return ret;
	}
	if (s->cam.chan) {
		ret = s->cam.copy_src ? copy_acquire(s, &s->cam, deadline) :
					cam_acquire(s, deadline);
		if (ret)
			return ret;
	}
	return s->imu.chan ? imu_drain(s, r) : 0;
}

int mmhal_session_poll(struct mmhal_session *s, struct mmhal_session_poll *out)
{
	struct mmhal_session_result r;
	struct mmhal_session_poll o;
	uint64_t deadline;
	uint32_t size;
	int ret;

	if (!s)
		return -EINVAL;
	s->err[0] = 0;
	if (!out)
		return SERR(s, -EINVAL, "poll result is NULL");
	size = out->size;
	if (size < offsetof(struct mmhal_session_poll, frame_sequence))
		return SERR(s, -EINVAL,
			    "poll.size %u: set it to sizeof(struct mmhal_session_poll)",
			    size);
	memset(&o, 0, sizeof(o));
	o.size = sizeof(o);
	o.scene_diff = -1.0f;
	memset(&r, 0, sizeof(r));
	ret = release_held(s, &s->cam);
	if (!ret)
		ret = release_held(s, &s->mic);
	if (ret)
		return ret;
	deadline = now_ns() + (uint64_t)s->p.wait_ms * 1000000;
	ret = acquire_all(s, deadline, &r);
	if (!ret && s->mic.chan)
		ret = poll_window(s, &o);
	if (ret)
		return ret;
	if (s->cam.chan) {
		ret = poll_frame(s, &o);
		if (ret)
			return ret;
	}
	o.changed = (o.image_route != MMHAL_ROUTE_NONE &&
		     o.image_route != MMHAL_ROUTE_UNCHANGED) ||
		    o.audio_route == MMHAL_ROUTE_SPEECH ||
		    o.audio_route == MMHAL_ROUTE_ALWAYS;
	s->st.polls++;
	s->st.polls_changed += o.changed;
	memcpy(out, &o, size < sizeof(o) ? size : sizeof(o));
	out->size = size;
	return 0;
}

/* ---- asking --------------------------------------------------------------- */

static int on_token(int32_t tok, const char *piece, size_t len, void *arg)
{
	struct mmhal_session *s = arg;
	uint64_t t = now_ns();

	if (!s->n_toks)
		s->t_first = t;
	s->t_last = t;
	if (s->n_toks < s->p.n_predict)
		s->toks[s->n_toks++] = tok;
	if (s->text_len + len + 1 > s->text_cap) {
		size_t cap = (s->text_len + len + 1) * 2;
		char *p = realloc(s->text, cap);

		if (!p) {
			s->gen_err = -ENOMEM;
			return 1;
		}
		s->text = p;
		s->text_cap = cap;
	}
	memcpy(s->text + s->text_len, piece, len);
	s->text_len += len;
	s->text[s->text_len] = 0;
	return s->cb ? s->cb(tok, piece, len, s->cb_arg) : 0;
}

static int count_markers(const char *t)
{
	int n = 0;

	while ((t = strstr(t, MMHAL_MEDIA_MARKER))) {
		n++;
		t += strlen(MMHAL_MEDIA_MARKER);
	}
	return n;
}

/* The prompt as evaluated: media markers, then the chat template. @n_src
 * sources (image first), of which source @drop (-1: none) is not in the
 * prompt: its marker, if the prompt places them, is left out. */
static int build_prompt(struct mmhal_session *s, const char *prompt,
			int n_src, int drop, char **out)
{
	const size_t ml = strlen(MMHAL_MEDIA_MARKER);
	int n_mark = count_markers(prompt), n_chunks = n_src - (drop >= 0);
	size_t cap = strlen(prompt) + (size_t)n_src * ml + 2, len = 0;
	struct mmhal_chat_msg msg;
	char *user, *p;
	int ret;

	*out = NULL;
	if (n_mark && n_mark != n_src)
		return SERR(s, -EINVAL,
			    "prompt: %d media markers, the session has %d source%s",
			    n_mark, n_src, n_src == 1 ? "" : "s");
	user = malloc(cap);
	if (!user)
		return SERR(s, -ENOMEM, "prompt: out of memory");
	user[0] = 0;
	if (!n_mark) {
		for (int i = 0; i < n_chunks; i++)
			strcat(user, MMHAL_MEDIA_MARKER);
		if (n_chunks)
			strcat(user, "\n");
		strcat(user, prompt);
	} else {
		const char *t = prompt, *m;
		char *u = user;

		for (int k = 0; (m = strstr(t, MMHAL_MEDIA_MARKER)); k++) {
			size_t n = (size_t)(m - t) + (k == drop ? 0 : ml);

			memcpy(u, t, n);
			u += n;
			t = m + ml;
		}
		strcpy(u, t);
	}
	if (s->p.raw_prompt) {
		*out = user;
		return 0;
	}
	msg.role = "user";
	msg.content = user;
	ret = mmhal_model_chat_format(s->model, &msg, 1, 1, NULL, 0, &len);
	if (ret && ret != -ENOSPC) {
		free(user);
		return SERR(s, ret,
			    "prompt: the model's chat template is not supported (%s); use raw_prompt",
			    mmhal_strerror(ret));
	}
	p = malloc(len + 1);
	if (!p) {
		free(user);
		return SERR(s, -ENOMEM, "prompt: out of memory");
	}
	ret = mmhal_model_chat_format(s->model, &msg, 1, 1, p, len + 1, &len);
	free(user);
	if (ret) {
		free(p);
		return SERR(s, ret, "prompt: chat template: %s",
			    mmhal_strerror(ret));
	}
	*out = p;
	return 0;
}

int mmhal_session_ask(struct mmhal_session *s, const char *prompt,
		      mmhal_token_cb cb, void *arg,
		      struct mmhal_session_result *out)
{
	struct mmhal_chunk *chunks[2] = { NULL, NULL };
	struct mmhal_chunk *encoded[2] = { NULL, NULL };
	struct mmhal_chunk *audio = NULL;
	struct mmhal_session_result r;
	struct mmhal_model_stats ms;
	uint64_t t0, t1, t2, t3, deadline, sof;
	int64_t reused0 = 0;
	char *text = NULL;
	uint32_t size;
	int n_chunks = 0, n_src = 0, drop = -1, n_gen = 0, n_mark, n_have, ret;

	if (!s)
		return -EINVAL;
	s->err[0] = 0;
	if (!out)
		return SERR(s, -EINVAL, "result is NULL");
	size = out->size;
	if (size < offsetof(struct mmhal_session_result, frame_sequence))
		return SERR(s, -EINVAL,
			    "result.size %u: set it to sizeof(struct mmhal_session_result)",
			    size);
	memset(out, 0, size < sizeof(r) ? size : sizeof(r));
	out->size = size;
	if (!prompt)
		return SERR(s, -EINVAL, "prompt is NULL");
	memset(&r, 0, sizeof(r));
	r.size = sizeof(r);
	s->text_len = 0;
	s->text[0] = 0;
	s->n_toks = 0;

	/* give back what the last answer kept */
	ret = release_held(s, &s->cam);
	if (!ret)
		ret = release_held(s, &s->mic);
	if (ret)
		return ret;

	/* a prompt that cannot be built fails before anything is acquired,
	 * encoded or routed (the scene cache stays as it was) */
	n_mark = count_markers(prompt);
	n_have = !!s->cam.chan + !!s->mic.chan;
	if (n_mark && n_mark != n_have)
		return SERR(s, -EINVAL,
			    "prompt: %d media markers, the session has %d source%s",
			    n_mark, n_have, n_have == 1 ? "" : "s");

	t0 = now_ns();
	r.ask_mono = t0;
	deadline = t0 + (uint64_t)s->p.wait_ms * 1000000;
	ret = clock_due(s, 1);
	if (ret)
		return ret;
	ret = acquire_all(s, deadline, &r);
	if (ret)
		return ret;
	ret = clock_due(s, 0);
	if (ret)
		return ret;
	t1 = now_ns();
	r.acquire_ms = ms_between(t0, t1);

	if (s->cam.chan) {
		ret = route_frame(s, &chunks[n_chunks], &r);
		if (ret)
			goto out;
		if (!(r.flags & MMHAL_RESULT_IMAGE_REUSED))
			encoded[n_chunks] = chunks[n_chunks];
		n_chunks++;
		n_src++;
	}
	if (s->mic.chan) {
		ret = route_window(s, &audio, &r);
		if (ret)
			goto out;
		if (audio) {
			chunks[n_chunks++] = audio;
			encoded[n_chunks - 1] = audio;
		} else {
			drop = n_src;
		}
		n_src++;
	}
	if (s->cam.chan && s->mic.chan)
		pair_window(s, &r);
	for (int i = 0; i < n_chunks; i++) {
		struct mmhal_chunk_info ci = { .size = sizeof(ci) };

		if (encoded[i] && !mmhal_chunk_info(encoded[i], &ci)) {
			r.preprocess_ms += ci.preprocess_ms;
			r.encode_ms += ci.encode_ms;
		}
	}

	ret = build_prompt(s, prompt, n_src, drop, &text);
	if (ret)
		goto out;
	/* the cache is kept: eval_prompt evaluates what differs from it */
	if (!mmhal_ctx_stats(s->ctx, &ms))
		reused0 = ms.reused_positions;
	t2 = now_ns();
	ret = mmhal_ctx_eval_prompt(s->ctx, text,
				    (const struct mmhal_chunk *const *)chunks,
				    n_chunks, s->p.raw_prompt, NULL);
	if (ret) {
		SERR(s, ret, "prompt: %s", mmhal_ctx_error(s->ctx));
		goto out;
	}
	if (!mmhal_ctx_stats(s->ctx, &ms) && ms.reused_positions >= reused0)
		r.reused_positions = (int)(ms.reused_positions - reused0);
	s->st.reused_positions += (uint64_t)r.reused_positions;
	t3 = now_ns();
	r.prefill_ms = ms_between(t2, t3);
	r.n_prompt = mmhal_ctx_n_past(s->ctx);

	s->cb = cb;
	s->cb_arg = arg;
	s->gen_err = 0;
	ret = mmhal_ctx_generate(s->ctx, NULL, 0, s->p.n_predict, s->smp, 0,
				 NULL, on_token, s, &n_gen);
	s->cb = NULL;
	if (!ret)
		ret = s->gen_err;
	if (ret) {
		SERR(s, ret, "generate: %s", s->gen_err ?
		     "out of memory" : mmhal_ctx_error(s->ctx));
		goto out;
	}
	if (!s->n_toks)
		s->t_first = s->t_last = now_ns();
	r.decode_ms = ms_between(t3, now_ns());
	r.text = s->text;
	r.text_len = s->text_len;
	r.tokens = s->toks;
	r.n_tokens = s->n_toks;
	r.first_token_mono = s->t_first;
	r.last_token_mono = s->t_last;
	sof = r.flags & MMHAL_RESULT_IMAGE ? r.frame_ts.sof_mono :
					     r.audio_first_ts.sof_mono;
	r.sof_to_first_token_ms = ms_between(sof, s->t_first);
	r.sof_to_last_token_ms = ms_between(sof, s->t_last);
	s->slo_first[s->slo_pos] = r.sof_to_first_token_ms;
	s->slo_last[s->slo_pos] = r.sof_to_last_token_ms;
	s->slo_pos = (s->slo_pos + 1) % s->p.slo_window;
	if (s->slo_n < s->p.slo_window)
		s->slo_n++;
	s->st.asks++;
	memcpy(out, &r, size < sizeof(r) ? size : sizeof(r));
	out->size = size;
out:
	free(text);
	mmhal_chunk_free(audio);	/* the image's is kept for the next */
	return ret;
}

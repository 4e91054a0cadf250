/* SPDX-License-Identifier: MIT */
/*
 * session_int.h - what the session's parts share (libhal/session/):
 *
 *   params.c    defaults and the checks of struct mmhal_session_params
 *   acquire.c   channels and buffers of each source; dequeue, hold,
 *               requeue; the copy channel; the IMU's records
 *   route.c     the routing decisions (one per medium, for ask and poll)
 *               and the encoders run on the held buffers in place
 *   timeline.c  sensor clock points and fits; a window's and a frame's
 *               stamps on CLOCK_MONOTONIC
 *   slo.c       the SLO ring and its percentiles, the counters
 *   session.c   create, destroy, poll, ask: the steps in order
 */
#ifndef MMHAL_SESSION_INT_H
#define MMHAL_SESSION_INT_H

#include <stdint.h>
#include <sys/resource.h>
#include <time.h>

#include "common/mm_err.h"
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

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* The process's CPU time, user + system, s. */
static inline double cpu_s(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static inline double ms_between(uint64_t a, uint64_t b)
{
	return b >= a ? (double)(b - a) / 1e6 : -(double)(a - b) / 1e6;
}

#define SERR(s, ret, ...) \
	mm_errf((ret), (s)->err, sizeof((s)->err), __VA_ARGS__)

/* params.c */
uint64_t sess_cam_frame_size(const struct mmhal_src *c);
int sess_check_params(const struct mmhal_session_params *in,
		      const struct mmhal_mmproj *proj,
		      struct mmhal_session_params *p, uint64_t *listen,
		      char *err, size_t errlen);

/* acquire.c */
int sess_src_start(struct mmhal_session *s, struct sess_src *x,
		   struct mmhal_chan *given, struct mmhal_buf *copy_src,
		   uint32_t n_bufs, char *err, size_t errlen);
void sess_src_stop(struct sess_src *x);
int sess_release_held(struct mmhal_session *s, struct sess_src *x);
uint64_t sess_held_samples(const struct sess_src *x);
int sess_check_meta(struct mmhal_session *s, struct sess_src *x,
		    const struct mmhal_frame *fr);
int sess_acquire_all(struct mmhal_session *s, uint64_t deadline,
		     struct mmhal_session_result *r);

/* timeline.c */
int sess_clock_start(struct mmhal_session *s, struct sess_src *x, char *err,
		     size_t errlen);
void sess_window_stamps(struct mmhal_session *s, uint64_t skip,
			struct mmhal_session_result *r);
void sess_pair_window(struct mmhal_session *s,
		      struct mmhal_session_result *r);
int sess_clock_due(struct mmhal_session *s, int before);

/* route.c */
int sess_route_frame(struct mmhal_session *s, struct mmhal_chunk **chunk,
		     struct mmhal_session_result *r);
int sess_route_window(struct mmhal_session *s, struct mmhal_chunk **chunk,
		      struct mmhal_session_result *r);
int sess_poll_frame(struct mmhal_session *s, struct mmhal_session_poll *o);
int sess_poll_window(struct mmhal_session *s, struct mmhal_session_poll *o);

#endif /* MMHAL_SESSION_INT_H */

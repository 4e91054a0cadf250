// SPDX-License-Identifier: MIT
/*
 * route.c - the session's routing: whether the held frame or window
 * needs its encoder (one decision per medium, for mmhal_session_ask()
 * and mmhal_session_poll()), and the encoders run on the held buffers
 * in place.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session_int.h"

/* ---- the camera ---------------------------------------------------------- */

/*
 * The held frame as an image of its buffer's mapping: plane 0 at the
 * start, an NV12 frame's chroma plane after the luma lines (the
 * driver's layout, mmedge_src.c).
 */
static void frame_image(const struct sess_src *x, const uint8_t *base,
			struct mmhal_image *img)
{
	memset(img, 0, sizeof(*img));
	img->format = x->src.fourcc;
	img->width = x->src.width;
	img->height = x->src.height;
	img->plane[0] = base;
	img->stride[0] = (size_t)x->src.width *
			 (x->src.fourcc == MMHAL_FMT_RGB24 ? 3 : 1);
	if (x->src.fourcc == MMHAL_FMT_NV12) {
		img->plane[1] = base + (size_t)x->src.width * x->src.height;
		img->stride[1] = x->src.width;
	}
}

/*
 * Begins CPU access to the held frame, checks its in-band record and
 * takes its signature. On success the caller ends the access
 * (frame_end()); on failure it is ended here.
 */
static int frame_begin(struct mmhal_session *s, const struct mmhal_frame *fr,
		       struct mmhal_image *img, uint8_t *sig)
{
	struct sess_src *x = &s->cam;
	int ret;

	frame_image(x, x->maps[fr->cookie], img);
	ret = mmhal_buf_begin_cpu(fr->buf, MMHAL_SYNC_READ);
	if (ret)
		return SERR(s, ret, "camera: frame %llu: begin CPU access: %s",
			    (unsigned long long)fr->sequence,
			    mmhal_strerror(ret));
	ret = sess_check_meta(s, x, fr);
	if (!ret) {
		ret = mmhal_scene_signature(img, sig);
		if (ret)
			SERR(s, ret, "camera: frame %llu: signature of a %ux%u frame",
			     (unsigned long long)fr->sequence, img->width,
			     img->height);
	}
	if (ret)
		(void)mmhal_buf_end_cpu(fr->buf, MMHAL_SYNC_READ);
	return ret;
}

/* Ends the access frame_begin() began; @ret is the step's result so far. */
static int frame_end(struct mmhal_session *s, const struct mmhal_frame *fr,
		     int ret)
{
	int r2 = mmhal_buf_end_cpu(fr->buf, MMHAL_SYNC_READ);

	if (!ret && r2)
		ret = SERR(s, r2, "camera: frame %llu: end CPU access: %s",
			   (unsigned long long)fr->sequence,
			   mmhal_strerror(r2));
	return ret;
}

/*
 * The one decision for a frame of signature @sig: the encoder runs
 * unless scene routing is on, a frame was encoded before, the IMU saw no
 * motion since, and the scene differs from that frame's by at most the
 * threshold. *@diff: the difference (-1 with no encoded frame).
 */
static uint32_t frame_route(const struct mmhal_session *s, const uint8_t *sig,
			    double *diff)
{
	*diff = s->img_chunk ? mmhal_scene_diff(sig, s->img_sig) : -1;
	if (s->p.route_off & MMHAL_ROUTE_SCENE)
		return MMHAL_ROUTE_ALWAYS;
	if (!s->img_chunk)
		return MMHAL_ROUTE_FIRST;
	if (s->imu.chan && !(s->p.route_off & MMHAL_ROUTE_IMU) &&
	    mmhal_imu_moved(&s->motion, s->p.imu_gyro_threshold,
			    s->p.imu_accel_threshold))
		return MMHAL_ROUTE_MOTION;
	if (*diff > s->p.scene_threshold)
		return MMHAL_ROUTE_CHANGED;
	return MMHAL_ROUTE_UNCHANGED;
}

int sess_route_frame(struct mmhal_session *s, struct mmhal_chunk **chunk,
		     struct mmhal_session_result *r)
{
	struct sess_src *x = &s->cam;
	const struct mmhal_frame *fr = &x->held[0];
	struct mmhal_chunk *enc = NULL;
	uint8_t sig[MMHAL_SIG_CELLS];
	struct mmhal_image img;
	uint32_t why;
	double diff;
	char e[256];
	int ret;

	ret = frame_begin(s, fr, &img, sig);
	if (ret)
		return ret;
	why = frame_route(s, sig, &diff);
	if (why != MMHAL_ROUTE_UNCHANGED) {
		/* the buffer's mapping, declared once (the CUDA back end
		 * reads it in place; undeclared at destroy). The frame is
		 * dequeued (written) and begun for reading: no fence left. */
		mmhal_mmproj_map_frames(s->proj, img.plane[0],
					mmhal_buf_size(fr->buf));
		ret = mmhal_encode_image(s->proj, &img, &enc, e, sizeof(e));
		if (ret)
			SERR(s, ret, "image encoder: frame %llu: %s",
			     (unsigned long long)fr->sequence, e);
	}
	ret = frame_end(s, fr, ret);
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
		s->st.image_bytes_read_in_place += sess_cam_frame_size(&x->src);
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

/* The held frame's routing, no encoding. */
int sess_poll_frame(struct mmhal_session *s, struct mmhal_session_poll *o)
{
	const struct mmhal_frame *fr = &s->cam.held[0];
	uint8_t sig[MMHAL_SIG_CELLS];
	struct mmhal_image img;
	double diff;
	int ret;

	ret = frame_begin(s, fr, &img, sig);
	if (ret)
		return ret;
	o->image_route = frame_route(s, sig, &diff);
	o->scene_diff = (float)diff;
	o->frame_sequence = fr->sequence;
	return frame_end(s, fr, 0);
}

/* ---- the microphone ------------------------------------------------------ */

/*
 * Begins CPU access to every held buffer of the window and checks their
 * in-band records; *@begun: how many were begun (end them with
 * window_end(), also on failure).
 */
static int window_begin(struct mmhal_session *s, uint32_t *begun)
{
	struct sess_src *x = &s->mic;
	int ret;

	for (*begun = 0; *begun < x->n_held; (*begun)++) {
		ret = mmhal_buf_begin_cpu(x->held[*begun].buf, MMHAL_SYNC_READ);
		if (ret)
			return SERR(s, ret,
				    "microphone: buffer %llu: begin CPU access: %s",
				    (unsigned long long)x->held[*begun].sequence,
				    mmhal_strerror(ret));
		ret = sess_check_meta(s, x, &x->held[*begun]);
		if (ret) {
			(*begun)++;
			return ret;
		}
	}
	return 0;
}

static int window_end(struct mmhal_session *s, uint32_t begun, int ret)
{
	struct sess_src *x = &s->mic;

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
 * The window's samples: in place when one buffer holds them, else one
 * contiguous copy into the session's array (the detector and the encoder
 * take one array). Returns the bytes copied.
 */
static uint64_t window_pcm(struct mmhal_session *s, uint64_t skip,
			   const int16_t **pcm)
{
	struct sess_src *x = &s->mic;
	uint64_t need = s->listen_samples, at = 0;

	if (x->n_held == 1) {
		*pcm = (const int16_t *)x->maps[x->held[0].cookie] + skip;
		return 0;
	}
	for (uint32_t i = 0; i < x->n_held; i++) {
		const int16_t *p = x->maps[x->held[i].cookie];
		uint64_t n = x->held[i].bytesused / 2, from = i ? 0 : skip;

		memcpy(s->pcm + at, p + from, (n - from) * 2);
		at += n - from;
	}
	*pcm = s->pcm;
	s->st.audio_bytes_copied += need * 2;
	s->st.bytes_copied += need * 2;
	return need * 2;
}

/*
 * The one decision for a window: the encoder runs unless voice routing
 * is on and the detector finds no speech. *@vad is filled when the
 * detector ran.
 */
static int window_route(struct mmhal_session *s, const int16_t *pcm,
			uint32_t *why, struct mmhal_vad *vad)
{
	const struct sess_src *x = &s->mic;
	int ret;

	*why = MMHAL_ROUTE_ALWAYS;
	if (s->p.route_off & MMHAL_ROUTE_VAD)
		return 0;
	ret = mmhal_vad(pcm, s->listen_samples,
			(uint32_t)(x->src.rate_num / x->src.rate_den),
			s->p.vad_threshold_dbfs, s->p.vad_min_speech, vad);
	if (ret)
		return SERR(s, ret, "microphone: voice activity: %s",
			    mmhal_strerror(ret));
	*why = vad->speech ? MMHAL_ROUTE_SPEECH : MMHAL_ROUTE_SILENCE;
	return 0;
}

int sess_route_window(struct mmhal_session *s, struct mmhal_chunk **chunk,
		      struct mmhal_session_result *r)
{
	struct sess_src *x = &s->mic;
	uint64_t need = s->listen_samples;
	uint64_t skip = sess_held_samples(x) - need;	/* of the first buffer */
	uint32_t begun, why = MMHAL_ROUTE_ALWAYS;
	struct mmhal_vad vad = { 0 };
	struct mmhal_audio au;
	const int16_t *pcm = NULL;
	uint64_t copied;
	char e[256];
	int ret;

	memset(&au, 0, sizeof(au));
	ret = window_begin(s, &begun);
	if (ret)
		goto out;
	au = mmhal_audio_s16(NULL, need,
			     (uint32_t)(x->src.rate_num / x->src.rate_den));
	copied = window_pcm(s, skip, &pcm);
	au.samples = pcm;
	if (copied) {
		r->bytes_copied += copied;
		r->flags |= MMHAL_RESULT_AUDIO_COPIED;
	} else {
		s->st.audio_bytes_read_in_place += need * 2;
	}
	ret = window_route(s, au.samples, &why, &vad);
	if (ret)
		goto out;
	if (why != MMHAL_ROUTE_ALWAYS) {
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
	ret = window_end(s, begun, ret);
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
	sess_window_stamps(s, skip, r);
	return 0;
}

/* The held window's voice activity, no encoding. */
int sess_poll_window(struct mmhal_session *s, struct mmhal_session_poll *o)
{
	struct sess_src *x = &s->mic;
	uint64_t skip = sess_held_samples(x) - s->listen_samples;
	uint32_t begun, why = MMHAL_ROUTE_ALWAYS;
	struct mmhal_vad vad = { 0 };
	const int16_t *pcm;
	int ret;

	o->audio_last_sequence = x->held[x->n_held - 1].sequence;
	if (s->p.route_off & MMHAL_ROUTE_VAD) {
		o->audio_route = MMHAL_ROUTE_ALWAYS;
		return 0;
	}
	ret = window_begin(s, &begun);
	if (!ret) {
		(void)window_pcm(s, skip, &pcm);
		ret = window_route(s, pcm, &why, &vad);
	}
	if (!ret) {
		o->audio_route = why;
		o->vad_speech_frac = vad.speech_frac;
		o->vad_max_dbfs = vad.max_dbfs;
	}
	return window_end(s, begun, ret);
}

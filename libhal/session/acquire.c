// SPDX-License-Identifier: MIT
/*
 * acquire.c - the session's sources: each one's channel (created, or
 * the caller's), buffers mapped and queued; the newest frame or window
 * dequeued and held, the rest queued again; a copy channel's copy; the
 * IMU's records drained into the motion measure.
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

/* Channel (created or checked), buffers allocated, mapped and queued. */
int sess_src_start(struct mmhal_session *s, struct sess_src *x,
		   struct mmhal_chan *given, struct mmhal_buf *copy_src,
		   uint32_t n_bufs, char *err, size_t errlen)
{
	uint64_t want = x->src.type == MMHAL_SRC_CAMERA ?
			sess_cam_frame_size(&x->src) :
			x->src.type == MMHAL_SRC_IMU ?
			(uint64_t)x->src.period * IMU_REC :
			(uint64_t)x->src.period * 2;
	uint64_t buf_size;
	int ret;

	if (given && mmhal_chan_dir(given) == MMHAL_CHAN_COPY) {
		if (!copy_src)
			return mm_errf(-EINVAL, err, errlen,
					 "%s channel: a copy channel needs a source buffer (params.%s_copy_src)",
					 x->name, x->src.type == MMHAL_SRC_CAMERA ?
					 "camera" : "mic");
		if (mmhal_buf_size(copy_src) < want)
			return mm_errf(-EINVAL, err, errlen,
					 "%s: the copy source has %llu bytes, a frame %llu",
					 x->name,
					 (unsigned long long)mmhal_buf_size(copy_src),
					 (unsigned long long)want);
		x->chan = given;
		x->copy_src = copy_src;
		x->copy_bytes = want;
	} else if (copy_src) {
		return mm_errf(-EINVAL, err, errlen,
				 "%s: a copy source buffer without a copy channel",
				 x->name);
	} else if (given) {
		if (mmhal_chan_dir(given) != MMHAL_CHAN_CAPTURE)
			return mm_errf(-EINVAL, err, errlen,
					 "%s channel: a capture or copy channel, not a feed channel",
					 x->name);
		if (mmhal_chan_frame_size(given) != want)
			return mm_errf(-EINVAL, err, errlen,
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
			return mm_errf(ret, err, errlen, "%s channel: create: %s",
					 x->name, mmhal_strerror(ret));
		x->own_chan = 1;
	}
	x->bufs = calloc(n_bufs, sizeof(*x->bufs));
	x->maps = calloc(n_bufs, sizeof(*x->maps));
	x->held = calloc(n_bufs, sizeof(*x->held));
	if (!x->bufs || !x->maps || !x->held)
		return mm_errf(-ENOMEM, err, errlen, "%s: out of memory", x->name);
	x->n_bufs = n_bufs;
	buf_size = x->copy_src ? mmhal_copy_buf_size(want) :
				 mmhal_chan_buf_size(x->chan);
	for (uint32_t i = 0; i < n_bufs; i++) {
		ret = mmhal_buf_alloc(s->dev, buf_size, NULL, &x->bufs[i]);
		if (ret)
			return mm_errf(ret, err, errlen,
					 "%s: buffer %u of %llu bytes: %s", x->name,
					 i, (unsigned long long)buf_size,
					 mmhal_strerror(ret));
		ret = mmhal_buf_map(x->bufs[i], &x->maps[i]);
		if (ret)
			return mm_errf(ret, err, errlen, "%s: map buffer %u: %s",
					 x->name, i, mmhal_strerror(ret));
	}
	/* a copy channel's buffers are given one per ask */
	for (uint32_t i = 0; !x->copy_src && i < n_bufs; i++) {
		ret = mmhal_chan_queue(x->chan, x->bufs[i], i, NULL);
		if (ret)
			return mm_errf(ret, err, errlen, "%s: queue buffer %u: %s",
					 x->name, i, mmhal_strerror(ret));
	}
	return 0;
}

void sess_src_stop(struct sess_src *x)
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

static int sess_requeue(struct mmhal_session *s, struct sess_src *x,
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

int sess_release_held(struct mmhal_session *s, struct sess_src *x)
{
	int ret = 0;

	for (uint32_t i = 0; i < x->n_held; i++) {
		int r = sess_requeue(s, x, &x->held[i]);

		if (r && !ret)
			ret = r;
	}
	x->n_held = 0;
	return ret;
}

/* Milliseconds to the deadline, at least 1; 0 once it has passed. */
static int sess_left_ms(uint64_t deadline)
{
	uint64_t t = now_ns();

	if (t >= deadline)
		return 0;
	return (int)((deadline - t + 999999) / 1000000);
}

/* One filled buffer: 0, 1 if none is ready (non-blocking), or an error. */
static int sess_dq(struct mmhal_session *s, struct sess_src *x, int wait,
		   uint64_t deadline, struct mmhal_frame *fr)
{
	int to = MMHAL_NONBLOCK, ret;

	if (wait) {
		to = sess_left_ms(deadline);
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
static uint64_t sess_cam_period_ns(const struct sess_src *x)
{
	return x->src.rate_num ? 1000000000ULL * x->src.rate_den /
				 x->src.rate_num : 0;
}

/* A good camera frame into the pairing's ring. */
static void sess_frame_log(struct mmhal_session *s, const struct mmhal_frame *fr)
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
		f->sensor_end = fr->sensor_sof + sess_cam_period_ns(&s->cam);
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
static int sess_cam_acquire(struct mmhal_session *s, uint64_t deadline)
{
	struct sess_src *x = &s->cam;
	struct mmhal_frame fr;
	int ret;

	for (;;) {
		ret = sess_dq(s, x, !x->n_held, deadline, &fr);
		if (ret == 1)
			return 0;
		if (ret == -ETIMEDOUT)
			return SERR(s, ret, "camera: no frame within %u ms",
				    s->p.wait_ms);
		if (ret)
			return ret;
		if ((fr.flags & MMHAL_FRAME_ERROR) ||
		    fr.bytesused < sess_cam_frame_size(&x->src)) {
			s->st.frames_skipped++;
			ret = sess_requeue(s, x, &fr);
			if (ret)
				return ret;
			continue;
		}
		if (x->n_held) {
			s->st.frames_skipped++;
			ret = sess_requeue(s, x, &x->held[0]);
			if (ret)
				return ret;
		}
		sess_frame_log(s, &fr);
		x->held[0] = fr;
		x->n_held = 1;
	}
}

uint64_t sess_held_samples(const struct sess_src *x)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < x->n_held; i++)
		n += x->held[i].bytesused / 2;
	return n;
}

/* The newest buffers of consecutive sequence numbers holding the window. */
static int sess_mic_acquire(struct mmhal_session *s, uint64_t deadline)
{
	struct sess_src *x = &s->mic;
	uint64_t need = s->listen_samples;
	struct mmhal_frame fr;
	int ret;

	for (;;) {
		uint64_t have = sess_held_samples(x);

		ret = sess_dq(s, x, have < need, deadline, &fr);
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
			ret = sess_requeue(s, x, &fr);
			if (ret)
				return ret;
			continue;
		}
		/* a gap: the samples before it are not in this window */
		if (x->n_held &&
		    fr.sequence != x->held[x->n_held - 1].sequence + 1) {
			s->st.mic_bufs_skipped += x->n_held;
			ret = sess_release_held(s, x);
			if (ret)
				return ret;
		}
		if (x->n_held == x->n_bufs)
			return SERR(s, -EPROTO,
				    "microphone: more buffers dequeued than queued");
		x->held[x->n_held++] = fr;
		/* drop the oldest while the rest still hold the window */
		while (x->n_held > 1 &&
		       sess_held_samples(x) - x->held[0].bytesused / 2 >= need) {
			s->st.mic_bufs_skipped++;
			ret = sess_requeue(s, x, &x->held[0]);
			if (ret)
				return ret;
			memmove(x->held, x->held + 1,
				(x->n_held - 1) * sizeof(*x->held));
			x->n_held--;
		}
	}
}

/* A copy channel: the caller's buffer copied into a session buffer, held. */
static int sess_copy_acquire(struct mmhal_session *s, struct sess_src *x,
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
		ret = sess_dq(s, x, 1, deadline, &fr);
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

/* The IMU's filled buffers: their records after the encoded frame's start
 * go into the motion measure; all are queued again. */
static int sess_imu_drain(struct mmhal_session *s, struct mmhal_session_result *r)
{
	struct sess_src *x = &s->imu;
	struct mmhal_frame fr;
	int ret, r2;

	for (;;) {
		ret = sess_dq(s, x, 0, 0, &fr);
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
			ret = sess_check_meta(s, x, &fr);
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
				sess_requeue(s, x, &fr);
				return ret;
			}
		}
		ret = sess_requeue(s, x, &fr);
		if (ret)
			return ret;
	}
}

/* The in-band record of a held buffer says what its dequeue said. */
int sess_check_meta(struct mmhal_session *s, struct sess_src *x,
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

/*
 * The newest data of every channel: the microphone first (it may wait for
 * a window to fill, and the frame is then the newest after that wait),
 * then the camera, then what the IMU recorded.
 */
int sess_acquire_all(struct mmhal_session *s, uint64_t deadline,
		     struct mmhal_session_result *r)
{
	int ret;

	if (s->mic.chan) {
		ret = s->mic.copy_src ? sess_copy_acquire(s, &s->mic, deadline) :
					sess_mic_acquire(s, deadline);
		if (ret)
			return ret;
	}
	if (s->cam.chan) {
		ret = s->cam.copy_src ? sess_copy_acquire(s, &s->cam, deadline) :
					sess_cam_acquire(s, deadline);
		if (ret)
			return ret;
	}
	return s->imu.chan ? sess_imu_drain(s, r) : 0;
}

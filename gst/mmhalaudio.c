// SPDX-License-Identifier: MIT
/*
 * mmhalaudio.c - audio windows of mmhalinfer (see mmhalaudio.h)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <speex/speex_resampler.h>

#include "mmhal.h"
#include "mmhalaudio.h"

#define AWIN_BUFS	3
#define AWIN_WAIT_MS	5000
/* speexdsp's quality 0..10; 5 is its "desktop" default */
#define AWIN_QUALITY	5

enum { W_FREE, W_FILLING, W_READY, W_HELD };

struct awin_buf {
	struct mmhal_buf *buf;
	int16_t *pcm;
	int state;
	GstClockTime start, end;
	uint64_t sequence, sof_mono, eof_mono;
	uint32_t in_rate, in_channels;
};

struct awin {
	struct mmhal_dev *dev;
	struct mmhal_chan *chan;
	SpeexResamplerState *rs;
	uint32_t in_rate, in_channels, out_rate;
	size_t n_win;			/* samples per window */
	struct awin_buf w[AWIN_BUFS];
	int cur;			/* the FILLING one, or -1 */
	size_t fill;			/* samples in it */
	GstClockTime win_start;		/* PTS of its first sample */
	/* time base: the PTS of the first input frame after a discont and
	 * the output samples since then */
	GstClockTime base_pts;
	uint64_t out_since_base;
	int16_t *mono;			/* downmix of one push */
	size_t mono_cap;
	uint64_t samples, windows, jobs;
	/* Protects w[].state (awin_take()/_release() on another thread). */
	GMutex lock;
};

/* "audio: WHAT: the error" into err */
static void say(char *err, size_t errlen, const char *what, int ret)
{
	if (err && errlen)
		snprintf(err, errlen, "audio: %s: %s", what, mmhal_strerror(ret));
}

int awin_create(const char *dev_path, uint32_t out_rate, uint32_t listen_ms,
		uint32_t weight, struct awin **out, char *err, size_t errlen)
{
	struct mmhal_chan_params cp = mmhal_chan_default_params();
	struct awin *aw;
	uint64_t bytes;
	int ret, i;

	*out = NULL;
	if (!out_rate || !listen_ms)
		return -EINVAL;
	aw = calloc(1, sizeof(*aw));
	if (!aw)
		return -ENOMEM;
	g_mutex_init(&aw->lock);
	aw->out_rate = out_rate;
	aw->n_win = (size_t)out_rate * listen_ms / 1000;
	aw->cur = -1;
	aw->base_pts = GST_CLOCK_TIME_NONE;
	ret = mmhal_dev_open(dev_path, &aw->dev);
	if (ret) {
		say(err, errlen, dev_path, ret);
		goto fail;
	}
	cp.weight = weight;
	ret = mmhal_chan_create_dir(aw->dev, MMHAL_CHAN_FEED, &cp, &aw->chan);
	if (ret) {
		say(err, errlen, "feed channel", ret);
		goto fail;
	}
	bytes = aw->n_win * sizeof(int16_t);
	for (i = 0; i < AWIN_BUFS; i++) {
		void *addr;

		ret = mmhal_buf_alloc(aw->dev, bytes, NULL, &aw->w[i].buf);
		if (!ret)
			ret = mmhal_buf_map(aw->w[i].buf, &addr);
		if (ret) {
			say(err, errlen, "window buffer", ret);
			goto fail;
		}
		aw->w[i].pcm = addr;
	}
	*out = aw;
	return 0;
fail:
	awin_destroy(aw);
	return ret;
}

void awin_destroy(struct awin *aw)
{
	int i;

	if (!aw)
		return;
	if (aw->rs)
		speex_resampler_destroy(aw->rs);
	/* the channel first: it holds no job (each is dequeued at once) */
	mmhal_chan_destroy(aw->chan);
	for (i = 0; i < AWIN_BUFS; i++)
		mmhal_buf_free(aw->w[i].buf);
	mmhal_dev_close(aw->dev);
	free(aw->mono);
	g_mutex_clear(&aw->lock);
	free(aw);
}

int awin_set_format(struct awin *aw, uint32_t in_rate, uint32_t channels,
		    char *err, size_t errlen)
{
	int e = 0;

	if (!in_rate || !channels)
		return -EINVAL;
	if (aw->rs && in_rate == aw->in_rate && channels == aw->in_channels)
		return 0;
	if (aw->rs)
		speex_resampler_destroy(aw->rs);
	aw->rs = NULL;
	/* one resampler, also at equal rates: the path is the same */
	aw->rs = speex_resampler_init(1, in_rate, aw->out_rate, AWIN_QUALITY,
				      &e);
	if (!aw->rs) {
		if (err && errlen)
			snprintf(err, errlen, "audio: resampler %u -> %u Hz: %s",
				 in_rate, aw->out_rate,
				 speex_resampler_strerror(e));
		return -EINVAL;
	}
	speex_resampler_skip_zeros(aw->rs);
	aw->in_rate = in_rate;
	aw->in_channels = channels;
	awin_reset(aw);
	return 0;
}

void awin_reset(struct awin *aw)
{
	g_mutex_lock(&aw->lock);
	if (aw->cur >= 0)
		aw->w[aw->cur].state = W_FREE;
	aw->cur = -1;
	g_mutex_unlock(&aw->lock);
	aw->fill = 0;
	aw->base_pts = GST_CLOCK_TIME_NONE;
	aw->out_since_base = 0;
	if (aw->rs)
		speex_resampler_reset_mem(aw->rs);
}

/* The PTS of output sample @n since the time base. */
static GstClockTime out_pts(const struct awin *aw, uint64_t n)
{
	if (!GST_CLOCK_TIME_IS_VALID(aw->base_pts))
		return GST_CLOCK_TIME_NONE;
	return aw->base_pts + gst_util_uint64_scale(n, GST_SECOND, aw->out_rate);
}

/* A free buffer to fill (never the READY or HELD one). */
static int pick_free(struct awin *aw)
{
	int i, r = -1;

	g_mutex_lock(&aw->lock);
	for (i = 0; i < AWIN_BUFS; i++) {
		if (aw->w[i].state == W_FREE) {
			aw->w[i].state = W_FILLING;
			r = i;
			break;
		}
	}
	g_mutex_unlock(&aw->lock);
	return r;
}

/* The window is full: through the feed channel, then the newest. */
static int complete(struct awin *aw, char *err, size_t errlen)
{
	struct awin_buf *b = &aw->w[aw->cur];
	struct mmhal_frame f;
	int ret, i;

	ret = mmhal_buf_end_cpu(b->buf, MMHAL_SYNC_WRITE);
	if (!ret)
		ret = mmhal_chan_feed(aw->chan, b->buf,
				      aw->n_win * sizeof(int16_t), aw->jobs,
				      NULL);
	if (ret) {
		say(err, errlen, "feed", ret);
		return ret;
	}
	ret = mmhal_chan_dequeue(aw->chan, AWIN_WAIT_MS, &f);
	if (ret) {
		say(err, errlen, "feed dequeue", ret);
		return ret;
	}
	if (f.flags & MMHAL_FRAME_ERROR) {
		say(err, errlen, "feed job", -EIO);
		return -EIO;
	}
	aw->jobs++;
	b->sequence = f.sequence;
	b->sof_mono = f.ts.sof_mono;
	b->eof_mono = f.ts.eof_mono;
	b->start = aw->win_start;
	b->end = out_pts(aw, aw->out_since_base);
	b->in_rate = aw->in_rate;
	b->in_channels = aw->in_channels;
	g_mutex_lock(&aw->lock);
	for (i = 0; i < AWIN_BUFS; i++)
		if (aw->w[i].state == W_READY)
			aw->w[i].state = W_FREE;	/* superseded */
	b->state = W_READY;
	g_mutex_unlock(&aw->lock);
	aw->cur = -1;
	aw->fill = 0;
	aw->windows++;
	return 0;
}

int awin_push(struct awin *aw, const int16_t *data, size_t frames,
	      GstClockTime pts, gboolean discont, char *err, size_t errlen)
{
	size_t i, in_done = 0;
	uint32_t c, ch = aw->in_channels;
	int done = 0, ret;

	if (!aw->rs)
		return -EINVAL;
	if (discont || !GST_CLOCK_TIME_IS_VALID(aw->base_pts)) {
		if (discont)
			awin_reset(aw);
		/* skip_zeros() took the resampler's delay out: output
		 * sample 0 is input sample 0 */
		if (GST_CLOCK_TIME_IS_VALID(pts)) {
			aw->base_pts = pts;
			aw->out_since_base = 0;
		}
	}
	if (frames > aw->mono_cap) {
		int16_t *m = realloc(aw->mono, frames * sizeof(*m));

		if (!m)
			return -ENOMEM;
		aw->mono = m;
		aw->mono_cap = frames;
	}
	/* mono: the channels' mean (the resampler then runs once) */
	for (i = 0; i < frames; i++) {
		int32_t s = 0;

		for (c = 0; c < ch; c++)
			s += data[i * ch + c];
		aw->mono[i] = (int16_t)(s / (int32_t)ch);
	}
	while (in_done < frames) {
		spx_uint32_t in_len = frames - in_done, out_len;

		if (aw->cur < 0) {
			aw->cur = pick_free(aw);
			if (aw->cur < 0)
				return -EBUSY;	/* cannot happen: 3 buffers */
			aw->fill = 0;
			aw->win_start = out_pts(aw, aw->out_since_base);
			ret = mmhal_buf_begin_cpu(aw->w[aw->cur].buf,
						  MMHAL_SYNC_WRITE);
			if (ret) {
				say(err, errlen, "begin cpu",
				    ret);
				return ret;
			}
		}
		out_len = aw->n_win - aw->fill;
		/* written straight into the window's mmedge buffer */
		speex_resampler_process_int(aw->rs, 0, aw->mono + in_done,
					    &in_len,
					    aw->w[aw->cur].pcm + aw->fill,
					    &out_len);
		in_done += in_len;
		aw->fill += out_len;
		aw->out_since_base += out_len;
		aw->samples += out_len;
		if (aw->fill == aw->n_win) {
			ret = complete(aw, err, errlen);
			if (ret)
				return ret;
			done++;
		} else if (!in_len && !out_len) {
			break;
		}
	}
	return done;
}

int awin_take(struct awin *aw, struct awin_view *out)
{
	int i, r = -EAGAIN;

	g_mutex_lock(&aw->lock);
	for (i = 0; i < AWIN_BUFS; i++) {
		struct awin_buf *b = &aw->w[i];

		if (b->state != W_READY)
			continue;
		b->state = W_HELD;
		out->idx = i;
		out->pcm = b->pcm;
		out->n = aw->n_win;
		out->start = b->start;
		out->end = b->end;
		out->sequence = b->sequence;
		out->sof_mono = b->sof_mono;
		out->eof_mono = b->eof_mono;
		out->in_rate = b->in_rate;
		out->in_channels = b->in_channels;
		r = 0;
		break;
	}
	g_mutex_unlock(&aw->lock);
	return r;
}

void awin_release(struct awin *aw, int idx)
{
	g_mutex_lock(&aw->lock);
	if (idx >= 0 && idx < AWIN_BUFS && aw->w[idx].state == W_HELD)
		aw->w[idx].state = W_FREE;
	g_mutex_unlock(&aw->lock);
}

uint64_t awin_samples(const struct awin *aw)
{
	return aw->samples;
}

uint64_t awin_windows(const struct awin *aw)
{
	return aw->windows;
}

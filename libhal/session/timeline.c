// SPDX-License-Identifier: MIT
/*
 * timeline.c - the session's clocks: (sensor, SoC, CLOCK_MONOTONIC)
 * points into each source's fit, and the held window's and frames'
 * stamps mapped onto CLOCK_MONOTONIC.
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

/* One (sensor, SoC, CLOCK_MONOTONIC) point into the source's fit. */
static int sess_clock_sample(struct mmhal_session *s, struct sess_src *x,
			     char *err, size_t errlen)
{
	struct mmhal_sensor_xts xts;
	int ret;

	ret = mmhal_dev_sensor_xts(s->dev, (uint32_t)mmhal_chan_id(x->chan),
				   CLOCK_SAMPLES, &xts);
	if (ret)
		return mm_errf(ret, err, errlen, "%s: sensor clock sample: %s",
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
int sess_clock_start(struct mmhal_session *s, struct sess_src *x, char *err,
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
		return mm_errf(ret, err, errlen, "%s: sensor clock sample: %s",
				 x->name, mmhal_strerror(ret));
	ret = mmhal_clock_fit_create(CLOCK_WINDOW, &x->fit);
	if (ret)
		return mm_errf(ret, err, errlen, "%s: clock fit: %s", x->name,
				 mmhal_strerror(ret));
	return sess_clock_sample(s, x, err, errlen);
}

/* @n samples at the microphone's nominal rate, ns on its clock. */
static uint64_t sess_samples_ns(const struct sess_src *x, uint64_t n)
{
	unsigned __int128 t = (unsigned __int128)n * 1000000000ULL *
			      x->src.rate_den;

	return (uint64_t)((t + x->src.rate_num / 2) / x->src.rate_num);
}

/* The held window's ends on the microphone's clock, and mapped. */
void sess_window_stamps(struct mmhal_session *s, uint64_t skip,
			struct mmhal_session_result *r)
{
	struct sess_src *x = &s->mic;
	const struct mmhal_frame *last = &x->held[x->n_held - 1];
	uint64_t u1 = 0, u2 = 0;

	for (uint32_t i = 0; i < x->n_held; i++)
		if (!(x->held[i].flags & MMHAL_FRAME_TS_SENSOR))
			return;
	r->audio_sensor_start = x->held[0].sensor_sof + sess_samples_ns(x, skip);
	r->audio_sensor_end = last->sensor_sof +
			      sess_samples_ns(x, last->bytesused / 2 - 1);
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
void sess_pair_window(struct mmhal_session *s,
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
int sess_clock_due(struct mmhal_session *s, int before)
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
		ret = sess_clock_sample(s, x, s->err, sizeof(s->err));
		if (ret)
			return ret;
	}
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * mmhalaudio.h - mmhalinfer's audio windows
 *
 * Interleaved S16LE at the source's own rate and channel count (an ALSA
 * capture device's native format, from alsasrc) is averaged to mono and
 * resampled once, with speexdsp's resampler, to the mmproj's rate,
 * straight into mmedge buffers of one window (listen_ms) each. A full
 * window goes through a feed channel of its own device handle (the
 * arbiter, by its weight; mmedge stamps its job) and becomes the newest
 * window; the encoder reads it in place. Three buffers: one filling, one
 * ready, one held by an ask.
 *
 * Threading: awin_push() runs on the audio streaming thread and is the
 * only user of the window's device handle; awin_take() / awin_release()
 * may run on another thread (they take the window's lock).
 */
#ifndef MMHALAUDIO_H
#define MMHALAUDIO_H

#include <stddef.h>
#include <stdint.h>

#include <gst/gst.h>

struct awin;

/* A held window: its samples in place and where they came from. */
struct awin_view {
	int idx;			/* for awin_release() */
	const int16_t *pcm;		/* mono, at the output rate */
	size_t n;
	GstClockTime start, end;	/* PTS of the first and past the
					 * last sample */
	uint64_t sequence;		/* the feed job's */
	uint64_t sof_mono, eof_mono;	/* its mmedge stamps */
	uint32_t in_rate, in_channels;	/* what the source gave */
};

/* Opens @dev_path (a handle of its own), a feed channel of @weight and
 * three buffers of listen_ms samples at @out_rate. 0 or -errno; @err
 * says which step failed. */
int awin_create(const char *dev_path, uint32_t out_rate, uint32_t listen_ms,
		uint32_t weight, struct awin **out, char *err, size_t errlen);
void awin_destroy(struct awin *aw);

/* The source's format (again after a caps change: the resampler and
 * the partial window restart). 0 or -errno. */
int awin_set_format(struct awin *aw, uint32_t in_rate, uint32_t channels,
		    char *err, size_t errlen);

/* @frames interleaved frames whose first sample has PTS @pts (NONE: it
 * follows the previous buffer); @discont restarts the time base.
 * Returns the windows completed (>= 0) or -errno. */
int awin_push(struct awin *aw, const int16_t *data, size_t frames,
	      GstClockTime pts, gboolean discont, char *err, size_t errlen);

/* Drops the partial window (a flush). */
void awin_reset(struct awin *aw);

/* Holds the newest full window: 0, or -EAGAIN when none is ready. */
int awin_take(struct awin *aw, struct awin_view *out);
void awin_release(struct awin *aw, int idx);

/* Samples resampled so far, and windows completed. */
uint64_t awin_samples(const struct awin *aw);
uint64_t awin_windows(const struct awin *aw);

#endif /* MMHALAUDIO_H */

// SPDX-License-Identifier: MIT
/*
 * audio_in.c - the caller's PCM (struct mmhal_audio) as the audio front
 * end takes it: mono S16LE at MM_AUDIO_RATE in place; any other format,
 * channel count or rate in one pass.
 *
 * The pass reads the interleaved input a block at a time, averages the
 * channels into a mono float block (the down-mix, at the input's scale
 * s16 / 32768, s32 / 2^31, f32 as is) and, at a rate other than the
 * model's, gives the block to speexdsp's resampler (libspeexdsp, the
 * Xiph resampler PulseAudio and PipeWire use: a windowed-sinc filter
 * bank), writing the model-rate samples straight into the one output
 * buffer. Quality 5 (SPEEX_RESAMPLER_QUALITY_DESKTOP, speexdsp's choice
 * for desktop audio): its anti-alias filter rolls off just below the
 * 8 kHz Nyquist frequency of the model's rate, where the mel bank ends,
 * so only the top mel bins see the resampling; higher qualities cost
 * more filter taps for no change the encoder shows (mm_test measures the
 * agreement with audio made at 16 kHz).
 * The resampler's delay is removed (speex_resampler_skip_zeros()) and
 * its tail flushed with zeros, so output sample k is input time k / 16000
 * s, as the in-place path's.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <speex/speex_resampler.h>

#include "audio.h"
#include "common/mm_err.h"
#include "common/mm_params.h"
#include "mmhal_model.h"

#define AI_BLOCK	1024	/* frames down-mixed at a time */
#define AI_QUALITY	SPEEX_RESAMPLER_QUALITY_DESKTOP

_Static_assert(sizeof(struct mmhal_audio) == MMHAL_AUDIO_SIZE_VER0,
	       "struct mmhal_audio size");

MMHAL_API struct mmhal_audio mmhal_audio_s16(const int16_t *samples,
					     size_t n_frames, uint32_t rate)
{
	struct mmhal_audio a;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.format = MMHAL_AUDIO_S16LE;
	a.channels = 1;
	a.rate = rate;
	a.samples = samples;
	a.n_frames = n_frames;
	return a;
}

static size_t ai_sample_bytes(uint32_t format)
{
	return format == MMHAL_AUDIO_S16LE ? 2 : 4;
}

/* Frames [i0, i0 + n) of @a, down-mixed into out[0..n). */
static void ai_downmix(const struct mmhal_audio *a, size_t i0, size_t n,
		       float *out)
{
	const uint32_t ch = a->channels;
	const float inv = 1.0f / (float)ch;

	for (size_t i = 0; i < n; i++) {
		size_t k = (i0 + i) * ch;
		double sum = 0;

		for (uint32_t c = 0; c < ch; c++, k++) {
			switch (a->format) {
			case MMHAL_AUDIO_S16LE:
				sum += ((const int16_t *)a->samples)[k] /
				       32768.0;
				break;
			case MMHAL_AUDIO_S32LE:
				sum += ((const int32_t *)a->samples)[k] /
				       2147483648.0;
				break;
			default:
				sum += ((const float *)a->samples)[k];
				break;
			}
		}
		out[i] = (float)sum * inv;
	}
}

/* @a resampled from its rate to MM_AUDIO_RATE into out[0..n_out). */
static int ai_resample(const struct mmhal_audio *a, float *out, size_t n_out,
		       char *err, size_t errlen)
{
	SpeexResamplerState *st;
	float blk[AI_BLOCK];
	size_t done_in = 0, done_out = 0, zeros = 0, flush;
	int e = 0;

	st = speex_resampler_init(1, a->rate, MM_AUDIO_RATE, AI_QUALITY, &e);
	if (!st)
		return mm_errf(e == RESAMPLER_ERR_ALLOC_FAILED ? -ENOMEM :
			       -EINVAL, err, errlen,
			       "audio resampler %u -> %u Hz: %s", a->rate,
			       MM_AUDIO_RATE, speex_resampler_strerror(e));
	speex_resampler_skip_zeros(st);
	/* past the input: zeros until the filter has given its tail */
	flush = 2 * (size_t)speex_resampler_get_input_latency(st) + AI_BLOCK;
	while (done_out < n_out) {
		spx_uint32_t in_len, out_len;
		size_t n;

		if (done_in < a->n_frames) {
			n = a->n_frames - done_in;
			n = n < AI_BLOCK ? n : AI_BLOCK;
			ai_downmix(a, done_in, n, blk);
		} else if (zeros < flush) {
			n = AI_BLOCK;
			memset(blk, 0, sizeof(blk));
		} else {
			break;
		}
		/* a block may take more than one call when out fills */
		for (size_t used = 0; used < n && done_out < n_out;) {
			size_t room = n_out - done_out;

			in_len = (spx_uint32_t)(n - used);
			out_len = room > UINT32_MAX ? UINT32_MAX :
				  (spx_uint32_t)room;
			speex_resampler_process_float(st, 0, blk + used,
						      &in_len,
						      out + done_out,
						      &out_len);
			if (!in_len && !out_len)
				break;
			used += in_len;
			done_out += out_len;
		}
		if (done_in < a->n_frames)
			done_in += n;
		else
			zeros += n;
	}
	speex_resampler_destroy(st);
	/* the flush always gives the last samples; zero if it did not */
	if (done_out < n_out)
		memset(out + done_out, 0, (n_out - done_out) * sizeof(*out));
	return 0;
}

int mm_audio_input(const struct mmhal_audio *au, struct mm_audio_in *in,
		   char *err, size_t errlen)
{
	struct mmhal_audio a;
	uint64_t n_out;
	int ret;

	memset(in, 0, sizeof(*in));
	if (!au)
		return mm_errf(-EINVAL, err, errlen, "audio is NULL");
	memset(&a, 0, sizeof(a));
	ret = MM_PARAMS_IN(&a, au, MMHAL_AUDIO_SIZE_VER0, "audio", err,
			   errlen);
	if (ret)
		return ret;
	if (a.format < MMHAL_AUDIO_S16LE || a.format > MMHAL_AUDIO_F32LE)
		return mm_errf(-EINVAL, err, errlen,
			       "audio.format %u: want MMHAL_AUDIO_S16LE (1), _S32LE (2) or _F32LE (3)",
			       a.format);
	if (a.channels < 1 || a.channels > MMHAL_AUDIO_MAX_CHANNELS)
		return mm_errf(-EINVAL, err, errlen,
			       "audio.channels %u: want 1 to %d", a.channels,
			       MMHAL_AUDIO_MAX_CHANNELS);
	if (a.rate != 8000 && a.rate != 16000 && a.rate != 44100 &&
	    a.rate != 48000)
		return mm_errf(-EINVAL, err, errlen,
			       "audio.rate %u Hz: want 8000, 16000, 44100 or 48000 (the encoder's %u Hz for no conversion)",
			       a.rate, MM_AUDIO_RATE);
	if (!a.samples)
		return mm_errf(-EINVAL, err, errlen, "audio.samples is NULL");
	if (!a.n_frames)
		return mm_errf(-EINVAL, err, errlen, "audio.n_frames is 0");
	/* the decoder positions must stay countable in an int */
	n_out = a.rate == MM_AUDIO_RATE ? a.n_frames :
		(uint64_t)a.n_frames * MM_AUDIO_RATE / a.rate;
	if (a.n_frames > (size_t)1 << 31 || n_out > INT_MAX)
		return mm_errf(-EINVAL, err, errlen,
			       "audio.n_frames %zu is too long", a.n_frames);
	if (!n_out)
		return mm_errf(-EINVAL, err, errlen,
			       "audio.n_frames %zu at %u Hz is not one sample at %u Hz",
			       a.n_frames, a.rate, MM_AUDIO_RATE);

	if (a.format == MMHAL_AUDIO_S16LE && a.channels == 1 &&
	    a.rate == MM_AUDIO_RATE) {
		in->s16 = a.samples;	/* in place: no copy */
		in->n = a.n_frames;
		return 0;
	}
	in->f32 = malloc((size_t)n_out * sizeof(float));
	if (!in->f32)
		return mm_errf(-ENOMEM, err, errlen, "out of memory");
	if (a.rate == MM_AUDIO_RATE) {
		ai_downmix(&a, 0, a.n_frames, in->f32);
	} else {
		ret = ai_resample(&a, in->f32, (size_t)n_out, err, errlen);
		if (ret) {
			free(in->f32);
			in->f32 = NULL;
			return ret;
		}
	}
	in->n = (size_t)n_out;
	in->bytes = (uint64_t)a.n_frames * a.channels *
		    ai_sample_bytes(a.format);
	return 0;
}

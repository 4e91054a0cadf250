/* SPDX-License-Identifier: MIT */
/*
 * mmhal_session.h - ask a multimodal model about what an mmedge device's
 * camera and microphone capture, with the sensor timestamps of the data
 * the answer was computed from.
 *
 * A session (struct mmhal_session) holds a camera and a microphone
 * capture channel of an open device (created by the session, or the
 * caller's), buffers queued on them, a model and an mmproj loaded by the
 * caller (borrowed), and a model session (struct mmhal_ctx) of its own.
 * The channels stream from mmhal_session_create() on.
 * mmhal_session_ask() takes the newest camera frame and the newest
 * listen_ms of microphone samples, encodes them where the device put
 * them, evaluates the prompt with both and generates the answer.
 *
 * Zero copy: the image encoder reads the frame's planes (NV12, GREY or
 * RGB24, at the channel's layout: lines of width bytes, 3 * width for
 * RGB24, NV12's chroma plane right after its luma plane) in the dequeued
 * buffer's mapping, between mmhal_buf_begin_cpu() and _end_cpu(); the
 * audio front end reads the S16LE samples in the microphone buffer's
 * mapping. The window is in place when it lies in one buffer, which is
 * always so for a microphone channel the session creates (one buffer per
 * window: period = listen_ms of samples). A window spread over several
 * buffers (a caller's channel with a shorter period) is copied once into
 * one contiguous array, because the encoder takes one array and the
 * mel front end's 25 ms frames straddle the buffer boundaries; those
 * bytes are counted (mmhal_session_stats.audio_bytes_copied). Nothing
 * else of the payload is copied by the session.
 *
 * Conventions: as mmhal.h and mmhal_model.h. Functions return 0 or a
 * negative errno; the error message (mmhal_session_error(), or err of
 * mmhal_session_create()) names the step that failed ("camera: dequeue:
 * ...", "image encoder: ...", "prompt: ...").
 *
 * Threading:
 *
 *  - A session is used by one thread at a time; the caller serialises
 *    every call on it.
 *  - A session calls into its device handle (dequeue, queue, CPU-access
 *    brackets) during mmhal_session_create(), _ask() and _destroy(): by
 *    mmhal.h's rule nothing else may use that handle (or its buffers and
 *    channels) meanwhile. Sessions that should ask concurrently on
 *    several threads each open their own device handle.
 *  - The model and mmproj are only read (sessions of one model may ask
 *    concurrently, each on its own mmhal_ctx); they must outlive every
 *    session made with them.
 *  - The token callback runs on the calling thread, between decode
 *    steps; it must not call into the session.
 */
#ifndef MMHAL_SESSION_H
#define MMHAL_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "mmhal.h"
#include "mmhal_model.h"

#ifdef __cplusplus
extern "C" {
#endif

struct mmhal_session;

/**
 * struct mmhal_session_params - what a session captures and how it asks
 * @size: sizeof(struct mmhal_session_params).
 * @camera: the camera source (mmhal_src_camera(): GREY, RGB24 or NV12);
 *	type 0 for none.
 * @camera_chan: NULL: the session creates a channel for @camera (drop
 *	the oldest filled frame on overrun, so a filled buffer is always
 *	recent); else the caller's channel of the same device, made for
 *	@camera, with no buffer queued, which must outlive the session.
 * @mic: the microphone source (mmhal_src_mic(): S16LE at the mmproj's
 *	rate); type 0 for none. For a channel the session creates, @period
 *	is replaced by listen_ms of samples (one buffer per window).
 * @mic_chan: as @camera_chan, for @mic.
 * @listen_ms: the audio window, 1..30000 ms; 0: 1000.
 * @camera_bufs: buffers queued on the camera channel, 2..32; 0: 3.
 * @mic_bufs: on the microphone channel, 2..256; 0: as many as a window
 *	takes, plus 2.
 * @wait_ms: longest wait in mmhal_session_ask() for a frame or a whole
 *	window when none is ready, 1..600000; 0: 2000 + listen_ms.
 * @n_predict: most tokens an answer has, 1..65536; 0: 64.
 * @n_ctx: the model session's KV cache positions (0: the model's
 *	default, as mmhal_ctx_params).
 * @n_threads: the model session's threads (0: online CPUs).
 * @raw_prompt: 0: the prompt is the user's message in the model's chat
 *	template; 1: it is used as it is, with BOS.
 * @temperature: <= 0: greedy; else sampled with @seed
 *	(mmhal_sampler_params' other defaults).
 * @seed: see @temperature.
 * @reserved: zero.
 */
struct mmhal_session_params {
	uint32_t size;
	uint32_t listen_ms;
	struct mmhal_src camera;
	struct mmhal_chan *camera_chan;
	struct mmhal_src mic;
	struct mmhal_chan *mic_chan;
	uint32_t camera_bufs;
	uint32_t mic_bufs;
	uint32_t wait_ms;
	int n_predict;
	int n_ctx;
	int n_threads;
	int raw_prompt;
	float temperature;
	uint64_t seed;
	uint64_t reserved[8];
};

/**
 * mmhal_session_default_params() - no sources, defaults as documented;
 *	@size set
 */
MMHAL_API struct mmhal_session_params mmhal_session_default_params(void);

/**
 * mmhal_session_create() - a session on a device with a model
 * @dev: open device handle; must outlive the session.
 * @model: loaded model; must outlive the session.
 * @proj: its mmproj: a vision encoder if @params has a camera, an audio
 *	encoder if it has a microphone (load it with audio_exact 0 for
 *	windows shorter than 30 s on small encoders).
 * @params: at least one source; see struct mmhal_session_params.
 * @out: receives the session; NULL on failure.
 * @err, @errlen: a one-line message on failure (may be NULL/0).
 *
 * Creates the channels (unless given), allocates and queues the buffers
 * (the sources start), and creates the model session.
 *
 * Return: 0; -EINVAL a NULL argument or a bad parameter (size, reserved,
 * a source's type or format, a range above, a channel whose frame size
 * is not the source's, a microphone rate that is not the mmproj's);
 * -ENOENT the mmproj lacks the encoder a source needs; -ENOMEM; or the
 * error of the device or model call that failed (err names it).
 */
MMHAL_API int mmhal_session_create(struct mmhal_dev *dev,
				   struct mmhal_model *model,
				   const struct mmhal_mmproj *proj,
				   const struct mmhal_session_params *params,
				   struct mmhal_session **out, char *err,
				   size_t errlen);

/**
 * mmhal_session_destroy() - free a session; NULL is fine
 *
 * Destroys the channels it created with their buffers. On a caller's
 * channel its buffers stay queued when freed: that channel then
 * dequeues frames with mmhal_frame.buf NULL for them (mmhal_buf_free()).
 */
MMHAL_API void mmhal_session_destroy(struct mmhal_session *s);

/* The message of the session's last failure ("" if none). */
MMHAL_API const char *mmhal_session_error(const struct mmhal_session *s);

/* struct mmhal_session_result.flags */
#define MMHAL_RESULT_IMAGE		(1U << 0)	/* a frame was used */
#define MMHAL_RESULT_AUDIO		(1U << 1)	/* a window was used */
#define MMHAL_RESULT_AUDIO_COPIED	(1U << 2)	/* the window spanned
							 * buffers: copied */

/**
 * struct mmhal_session_result - an answer and where it came from
 * @size: set by the caller: sizeof(struct mmhal_session_result); the
 *	library fills in no more than that.
 * @flags: MMHAL_RESULT_*.
 * @text: the answer, NUL-terminated UTF-8; valid until the next ask or
 *	the session's end.
 * @text_len: bytes of @text.
 * @tokens: the generated token ids (as @text's lifetime).
 * @n_tokens: their number.
 * @n_prompt: decoder positions of the prompt (text, markers, embeddings).
 * @frame_sequence: the camera frame's sequence number.
 * @frame_flags: its MMHAL_FRAME_* flags.
 * @frame_ts: its timestamps (from the dequeue; the session checks the
 *	in-band record holds the same).
 * @frame_sensor_sof: its sensor clock stamps (MMHAL_FRAME_TS_SENSOR in
 *	@frame_flags), else 0.
 * @frame_sensor_eof: see @frame_sensor_sof.
 * @frame_buf: the buffer holding the frame; the session keeps it
 *	dequeued and unmodified until the next ask (so the in-band record
 *	can be read back).
 * @image_plane: the plane pointers given to the image encoder.
 * @image_stride: their strides.
 * @audio_first_sequence: sequence of the window's first buffer.
 * @audio_last_sequence: of its last.
 * @audio_first_ts: the first buffer's timestamps.
 * @audio_last_ts: the last's.
 * @audio_last_buf: the last buffer (kept dequeued until the next ask,
 *	like every buffer of the window).
 * @audio_samples: the pointer given to the audio encoder: inside
 *	@audio_last_buf's mapping unless MMHAL_RESULT_AUDIO_COPIED.
 * @audio_n_samples: samples in the window.
 * @audio_n_bufs: buffers the window spans.
 * @ask_mono: CLOCK_MONOTONIC ns when the ask began.
 * @first_token_mono: when the first token was sampled (the end of the
 *	generation if none was).
 * @last_token_mono: when the last was.
 * @sof_to_first_token_ms: from the frame's start of frame (the window's
 *	first sample without a camera) to the first token: the SLO figure.
 * @sof_to_last_token_ms: to the last token.
 * @acquire_ms: dequeuing and waiting for the data.
 * @preprocess_ms: pixels and mel frames from the buffers (both media).
 * @encode_ms: encoders and projectors (both media).
 * @prefill_ms: the prompt through the decoder.
 * @decode_ms: the generation.
 * @bytes_copied: payload bytes the session copied for this answer.
 * @reserved: zero.
 */
struct mmhal_session_result {
	uint32_t size;
	uint32_t flags;
	const char *text;
	size_t text_len;
	const int32_t *tokens;
	int n_tokens;
	int n_prompt;
	uint64_t frame_sequence;
	uint32_t frame_flags;
	uint32_t pad;
	struct mmhal_timestamps frame_ts;
	uint64_t frame_sensor_sof;
	uint64_t frame_sensor_eof;
	struct mmhal_buf *frame_buf;
	const void *image_plane[2];
	size_t image_stride[2];
	uint64_t audio_first_sequence;
	uint64_t audio_last_sequence;
	struct mmhal_timestamps audio_first_ts;
	struct mmhal_timestamps audio_last_ts;
	struct mmhal_buf *audio_last_buf;
	const int16_t *audio_samples;
	uint64_t audio_n_samples;
	uint32_t audio_n_bufs;
	uint32_t pad2;
	uint64_t ask_mono;
	uint64_t first_token_mono;
	uint64_t last_token_mono;
	double sof_to_first_token_ms;
	double sof_to_last_token_ms;
	double acquire_ms;
	double preprocess_ms;
	double encode_ms;
	double prefill_ms;
	double decode_ms;
	uint64_t bytes_copied;
	uint64_t reserved[8];
};

/**
 * mmhal_session_ask() - answer a prompt about the newest sensor data
 * @s: session.
 * @prompt: UTF-8 text. The media go before it (image, then audio)
 *	unless it places them with MMHAL_MEDIA_MARKER, once per source.
 * @cb, @arg: called per generated token (may be NULL); non-zero stops.
 * @out: filled in (up to out->size bytes) on success; out->size must be
 *	set; zeroed past size on failure.
 *
 * Gives back the buffers the previous answer kept; dequeues the filled
 * microphone buffers and keeps the newest that hold the last listen_ms
 * of consecutive samples (waiting for them if they are not there yet),
 * queueing the others again; then likewise every filled camera buffer,
 * keeping the newest frame (waiting for one if none is). Both waits end
 * wait_ms after the call began. Encodes them in
 * place, empties the model session, evaluates the prompt with the
 * chunks and generates up to n_predict tokens (stopping at end of turn).
 *
 * Return: 0; -EINVAL NULL argument, out->size too small, markers that
 * do not match the sources; -ETIMEDOUT no frame or window within
 * wait_ms; -EBADMSG a frame's in-band record differs from its dequeue;
 * the device's, encoder's or model's error (mmhal_session_error() names
 * the step).
 */
MMHAL_API int mmhal_session_ask(struct mmhal_session *s, const char *prompt,
				mmhal_token_cb cb, void *arg,
				struct mmhal_session_result *out);

/**
 * struct mmhal_session_stats - a session's counters since its creation
 * @size: set by the caller: sizeof(struct mmhal_session_stats).
 * @asks: successful mmhal_session_ask() calls.
 * @frames_used: camera frames encoded.
 * @frames_skipped: filled frames queued again unused (a newer one was
 *	ready) or with MMHAL_FRAME_ERROR.
 * @mic_bufs_used: microphone buffers encoded.
 * @mic_bufs_skipped: filled microphone buffers queued again unused.
 * @image_bytes_read_in_place: frame payload bytes the image encoder was
 *	given in place.
 * @audio_bytes_read_in_place: sample bytes the audio encoder was given
 *	in place.
 * @image_bytes_copied: frame payload bytes copied by the CPU before the
 *	encoder (no code path does; counted to be checked).
 * @audio_bytes_copied: sample bytes copied (windows spanning buffers).
 * @bytes_copied: the sum of the two.
 * @reserved: zero.
 */
struct mmhal_session_stats {
	uint32_t size;
	uint32_t pad;
	uint64_t asks;
	uint64_t frames_used;
	uint64_t frames_skipped;
	uint64_t mic_bufs_used;
	uint64_t mic_bufs_skipped;
	uint64_t image_bytes_read_in_place;
	uint64_t audio_bytes_read_in_place;
	uint64_t image_bytes_copied;
	uint64_t audio_bytes_copied;
	uint64_t bytes_copied;
	uint64_t reserved[8];
};

/**
 * mmhal_session_stats() - the counters
 * @out: out->size set by the caller; filled in up to it.
 *
 * Return: 0, or -EINVAL (NULL argument, out->size too small).
 */
MMHAL_API int mmhal_session_stats(const struct mmhal_session *s,
				  struct mmhal_session_stats *out);

/**
 * mmhal_session_chan() - the session's channel of a source
 * @type: MMHAL_SRC_CAMERA or MMHAL_SRC_MIC.
 *
 * For mmhal_chan_stats(), mmhal_chan_set_weight(), mmhal_frame_meta()
 * and the like (under the device handle's threading rule). Do not queue
 * or dequeue on it.
 *
 * Return: the channel, or NULL (no such source, NULL @s).
 */
MMHAL_API struct mmhal_chan *mmhal_session_chan(struct mmhal_session *s,
						uint32_t type);

/* The session's model session (its KV cache holds the last answer), for
 * mmhal_ctx_stats() and the like. */
MMHAL_API struct mmhal_ctx *mmhal_session_ctx(struct mmhal_session *s);

#ifdef __cplusplus
}
#endif

#endif /* MMHAL_SESSION_H */

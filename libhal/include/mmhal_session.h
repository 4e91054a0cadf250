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
 * Routing: each ask decides what to run. The camera frame's signature
 * (mmhal_scene_signature(), a 16x16 luma thumbnail read in place) is
 * compared with the one of the frame last encoded: within
 * scene_threshold the scene has not changed and the encoded image (its
 * chunk, and through mmhal_ctx_eval_prompt()'s prefix reuse its decoder
 * positions) is used again without running the image encoder, unless the
 * IMU (when the session has one) moved beyond its thresholds since that
 * frame. The audio window goes through a voice activity detector
 * (mmhal_vad(), energy per 10 ms): without enough speech-like frames it
 * is not encoded and the prompt has no audio. Every decision is counted
 * per reason in the stats and told in the ask's result.
 *
 * KV reuse: the model session's cache is not emptied between asks; the
 * prompt's positions that equal the cache's (the template's head, an
 * image used again, a repeated question) are kept, the rest evaluated.
 *
 * Caller frames: a camera or microphone channel of the caller may be a
 * copy channel (mmhal_chan_create_dir(MMHAL_CHAN_COPY)); each ask then
 * has the device copy the caller's source buffer (camera_copy_src,
 * mic_copy_src: a vendor's frame imported with mmhal_buf_import(), or
 * an mmedge buffer the caller fills) into a session buffer, timestamped
 * by mmedge, and reads that copy in place.
 *
 * SLO: the last slo_window asks' start of frame -> first / last token
 * times, their percentiles, peak RSS and the process's CPU time since the
 * session began: mmhal_session_slo().
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
 *    brackets) during mmhal_session_create(), _ask() and _destroy(). The
 *    device handle is thread-safe (mmhal.h), so other threads may use it
 *    and its other buffers and channels meanwhile; the session's own
 *    channels are its alone (no queueing or dequeueing on them from
 *    outside). Sessions that ask concurrently on several threads still
 *    each open their own device handle (a session waits on the handle's
 *    fd, which another session's frames would wake).
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
 * @route_off: MMHAL_ROUTE_* routes not to take: MMHAL_ROUTE_SCENE
 *	encodes every frame, MMHAL_ROUTE_VAD every window, MMHAL_ROUTE_IMU
 *	ignores the IMU (its channel still streams); 0: all routes.
 * @scene_threshold: the largest mean absolute difference of two frames'
 *	thumbnails (luma levels, 0..255) that counts as the same scene;
 *	0: 3.0.
 * @vad_threshold_dbfs: a 10 ms frame whose energy (about its mean,
 *	10 log10(mean square / 32768^2)) is at least this is speech-like;
 *	-150..0, 0: -40.
 * @vad_min_speech: the least fraction of speech-like frames for a
 *	window to be encoded, 0..1 (at least one frame); 0: 0.1.
 * @imu_gyro_threshold: angular rate magnitude (raw IMU6 units) above
 *	which the camera is moving; 0: 1000.
 * @imu_accel_threshold: acceleration change magnitude since the
 *	encoded frame (16384 = 1 g) above which the camera moved; 0: 1638.
 * @imu: an IMU source (mmhal_src_imu()); type 0 for none.
 * @imu_chan: as @camera_chan, for @imu.
 * @imu_bufs: buffers on the IMU channel, 2..256; 0: 8. Records of
 *	buffers the driver overwrote before an ask are not seen.
 * @slo_window: asks the SLO percentiles are over, 1..65536; 0: 128.
 * @camera_copy_src: with a copy channel as @camera_chan: the buffer
 *	(of the same device handle, at least a frame of @camera) copied
 *	at each ask; else NULL.
 * @mic_copy_src: with a copy channel as @mic_chan: the buffer whose
 *	first listen_ms of samples are copied at each ask; else NULL.
 * @camera_sensor_offset_ns: the camera's sensor clock (see "Sensor
 *	clocks" in mmhal.h): offset from the SoC counter, ns, for a channel
 *	the session creates; 0 with a caller's channel.
 * @mic_sensor_offset_ns: likewise for the microphone.
 * @camera_sensor_drift_ppb: the camera's sensor clock rate error, ppb
 *	(as @camera_sensor_offset_ns).
 * @mic_sensor_drift_ppb: likewise for the microphone.
 * @clock_every_asks: a (sensor, SoC, CLOCK_MONOTONIC) triple is sampled
 *	per capture channel at creation and then every this many asks,
 *	1..65536; 0: 1.
 * @clock_every_ms: and at an ask when this long passed since the last
 *	sample, 1..600000; 0: no such condition.
 * @ctx_shift: the session's decoder context shift (mmhal_ctx_params
 *	.ctx_shift): 1 lets an answer run past n_ctx by discarding old
 *	positions after the first @n_keep; 0 (default): -ENOSPC.
 * @n_keep: see @ctx_shift.
 * @tier_mode: the decoder's precision tiers (mmhal_ctx_params.tier_mode;
 *	tiers are added to the model with mmhal_model_add_tier() before the
 *	session is created): MMHAL_TIER_TOP (default), MMHAL_TIER_FIXED at
 *	@tier, or MMHAL_TIER_CONFIDENCE with @tier_threshold (0, 0: the
 *	defaults 0.92 / 0.75).
 * @tier: see @tier_mode.
 * @tier_threshold: see @tier_mode.
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
	uint32_t route_off;
	float scene_threshold;
	float vad_threshold_dbfs;
	float vad_min_speech;
	float imu_gyro_threshold;
	float imu_accel_threshold;
	struct mmhal_src imu;
	struct mmhal_chan *imu_chan;
	uint32_t imu_bufs;
	uint32_t slo_window;
	struct mmhal_buf *camera_copy_src;
	struct mmhal_buf *mic_copy_src;
	int64_t camera_sensor_offset_ns;
	int64_t mic_sensor_offset_ns;
	int32_t camera_sensor_drift_ppb;
	int32_t mic_sensor_drift_ppb;
	uint32_t clock_every_asks;
	uint32_t clock_every_ms;
	int32_t ctx_shift;
	int32_t n_keep;
	int32_t tier_mode;
	int32_t tier;
	float tier_threshold[2];
	uint64_t reserved[5];
};

/* struct mmhal_session_params.route_off */
#define MMHAL_ROUTE_SCENE	(1U << 0)
#define MMHAL_ROUTE_VAD		(1U << 1)
#define MMHAL_ROUTE_IMU		(1U << 2)
#define MMHAL_ROUTE_ALL		(MMHAL_ROUTE_SCENE | MMHAL_ROUTE_VAD | \
				 MMHAL_ROUTE_IMU)

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
#define MMHAL_RESULT_IMAGE_REUSED	(1U << 3)	/* the image is the
							 * last encoded one */
#define MMHAL_RESULT_AUDIO_SKIPPED	(1U << 4)	/* a window was read,
							 * not encoded */
#define MMHAL_RESULT_IMU		(1U << 5)	/* IMU records read */
#define MMHAL_RESULT_FRAME_MAPPED	(1U << 6)	/* frame_mono_* set */
#define MMHAL_RESULT_AUDIO_MAPPED	(1U << 7)	/* audio_mono_* set */
#define MMHAL_RESULT_PAIRED		(1U << 8)	/* pair_* set */

/**
 * enum mmhal_route_reason - why a source was encoded or not
 * @MMHAL_ROUTE_NONE: no such source.
 * @MMHAL_ROUTE_FIRST: image encoded: no frame encoded before.
 * @MMHAL_ROUTE_CHANGED: image encoded: the thumbnail differs by more
 *	than scene_threshold.
 * @MMHAL_ROUTE_MOTION: image encoded: the IMU moved beyond its
 *	thresholds since the encoded frame.
 * @MMHAL_ROUTE_UNCHANGED: image not encoded: the encoded one is used.
 * @MMHAL_ROUTE_SPEECH: audio encoded: enough speech-like frames.
 * @MMHAL_ROUTE_SILENCE: audio not encoded, not in the prompt.
 * @MMHAL_ROUTE_ALWAYS: encoded: the route is off (route_off).
 * @MMHAL_ROUTE_N: the number of reasons.
 */
enum mmhal_route_reason {
	MMHAL_ROUTE_NONE,
	MMHAL_ROUTE_FIRST,
	MMHAL_ROUTE_CHANGED,
	MMHAL_ROUTE_MOTION,
	MMHAL_ROUTE_UNCHANGED,
	MMHAL_ROUTE_SPEECH,
	MMHAL_ROUTE_SILENCE,
	MMHAL_ROUTE_ALWAYS,
	MMHAL_ROUTE_N
};

/* "first", "changed", ... ("none" for NONE, "?" out of range). */
MMHAL_API const char *mmhal_route_name(uint32_t reason);

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
 * @frame_sequence: the camera frame's sequence number: the newest frame,
 *	which the answer stands for (encoded, or found to show the scene
 *	of the encoded one: see @image_frame_sequence).
 * @frame_flags: its MMHAL_FRAME_* flags.
 * @frame_ts: its timestamps (from the dequeue; the session checks the
 *	in-band record holds the same).
 * @frame_sensor_sof: its sensor clock stamps (MMHAL_FRAME_TS_SENSOR in
 *	@frame_flags), else 0.
 * @frame_sensor_eof: see @frame_sensor_sof.
 * @frame_buf: the buffer holding the frame; the session keeps it
 *	dequeued and unmodified until the next ask (so the in-band record
 *	can be read back).
 * @image_plane: the frame's planes as read in place (signature, and
 *	the image encoder unless MMHAL_RESULT_IMAGE_REUSED).
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
 * @image_route: enum mmhal_route_reason of the camera.
 * @audio_route: of the microphone.
 * @scene_diff: the frame's thumbnail against the encoded frame's (mean
 *	absolute difference, luma levels); -1 without an encoded frame.
 * @vad_speech_frac: fraction of the window's 10 ms frames found
 *	speech-like.
 * @vad_max_dbfs: the loudest frame's energy, dBFS.
 * @imu_gyro_max: the largest angular rate magnitude since the encoded
 *	frame (before this ask's decision).
 * @imu_accel_change: the largest acceleration change since then.
 * @encoders_run: encoder passes of this ask (0..2).
 * @image_frame_sequence: the frame whose encoding the prompt holds.
 * @reused_positions: decoder positions kept from the previous answer's
 *	cache instead of being evaluated.
 * @frame_mono_sof: with MMHAL_RESULT_FRAME_MAPPED: @frame_sensor_sof on
 *	CLOCK_MONOTONIC through the camera's clock fit (see "Timeline"
 *	below), ns.
 * @frame_mono_eof: @frame_sensor_eof likewise.
 * @frame_uncert_ns: the mapping's uncertainty at @frame_mono_sof: the
 *	fit's one-sigma spread there (mmhal_clock_fit_map()) plus half the
 *	width of the newest clock sample's sandwich (where in it the
 *	counter was read is not known).
 * @audio_sensor_start: the window's first sample on the microphone's
 *	sensor clock, ns (its first buffer's sensor start of frame plus the
 *	samples before the window at the nominal rate); 0 without sensor
 *	stamps.
 * @audio_sensor_end: its last sample, likewise.
 * @audio_mono_start: with MMHAL_RESULT_AUDIO_MAPPED: @audio_sensor_start
 *	on CLOCK_MONOTONIC through the microphone's clock fit, ns.
 * @audio_mono_end: @audio_sensor_end likewise.
 * @audio_uncert_ns: as @frame_uncert_ns, at the window's ends (the
 *	larger).
 * @pair_n_overlap: with MMHAL_RESULT_PAIRED: the camera frames the
 *	session dequeued (its recent frames: see mmhal_session_frames())
 *	whose exposure overlaps the audio window on CLOCK_MONOTONIC
 *	(mmhal_align_window() with both fits).
 * @pair_frame_used: 1 if @frame_sequence is among them, else 0.
 * @pair_seq_first: the first overlapping frame's sequence (0 if none).
 * @pair_seq_last: the last's.
 * @pair_coverage: the fraction of the window those exposures cover.
 * @pair_uncert_ns: uncertainty of the pairing's edge comparisons: both
 *	fits' one-sigma spreads (mmhal_align_result.uncert_ns) plus the
 *	larger half width of the newest clock samples' sandwiches.
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
	uint32_t image_route;
	uint32_t audio_route;
	float scene_diff;
	float vad_speech_frac;
	float vad_max_dbfs;
	float imu_gyro_max;
	float imu_accel_change;
	uint32_t encoders_run;
	uint64_t image_frame_sequence;
	int reused_positions;
	uint32_t pad3;
	uint64_t frame_mono_sof;
	uint64_t frame_mono_eof;
	uint64_t frame_uncert_ns;
	uint64_t audio_sensor_start;
	uint64_t audio_sensor_end;
	uint64_t audio_mono_start;
	uint64_t audio_mono_end;
	uint64_t audio_uncert_ns;
	uint32_t pair_n_overlap;
	uint32_t pair_frame_used;
	uint64_t pair_seq_first;
	uint64_t pair_seq_last;
	double pair_coverage;
	uint64_t pair_uncert_ns;
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
 * wait_ms after the call began (copy channels: copies the caller's
 * buffers and waits for the copies). Reads the IMU's filled buffers.
 * Routes (see above) and encodes what needs it in place, evaluates the
 * prompt with the chunks (keeping the cache's common prefix with it) and
 * generates up to n_predict tokens (stopping at end of turn).
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
 * struct mmhal_session_poll - what an ask would run on the newest data
 * @size: set by the caller: sizeof(struct mmhal_session_poll).
 * @changed: 1 if an ask now would encode new data: the image route is
 *	FIRST, CHANGED, MOTION or ALWAYS, or the audio route SPEECH or
 *	ALWAYS; else 0.
 * @image_route: the camera's enum mmhal_route_reason (NONE without one).
 * @audio_route: the microphone's.
 * @frame_sequence: the newest camera frame's sequence.
 * @audio_last_sequence: the window's last buffer's sequence.
 * @scene_diff: as mmhal_session_result.scene_diff.
 * @vad_speech_frac: as mmhal_session_result.vad_speech_frac.
 * @vad_max_dbfs: as mmhal_session_result.vad_max_dbfs.
 * @pad: zero.
 * @reserved: zero.
 */
struct mmhal_session_poll {
	uint32_t size;
	uint32_t changed;
	uint32_t image_route;
	uint32_t audio_route;
	uint64_t frame_sequence;
	uint64_t audio_last_sequence;
	float scene_diff;
	float vad_speech_frac;
	float vad_max_dbfs;
	uint32_t pad;
	uint64_t reserved[4];
};

/**
 * mmhal_session_poll() - would an ask now see a change?
 * @s: session.
 * @out: out->size set; filled in up to it on success.
 *
 * Acquires the newest frame and window as mmhal_session_ask() does (the
 * buffers the previous call kept are given back; these are kept until
 * the next call), reads the IMU, and routes them as an ask would
 * (signature against the encoded frame, voice activity) without
 * encoding or evaluating anything. Counted in the stats as polls, not as
 * asks or routes; a window spanning buffers is copied for the detector
 * (counted as an ask's copy is).
 *
 * Return: 0; -EINVAL (NULL argument, out->size too small); as
 * mmhal_session_ask() for the acquisition.
 */
MMHAL_API int mmhal_session_poll(struct mmhal_session *s,
				 struct mmhal_session_poll *out);

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
 * @image_route: asks per enum mmhal_route_reason of the camera.
 * @audio_route: of the microphone.
 * @encoder_runs: encoder passes (image and audio).
 * @encoder_runs_avoided: passes routing saved (UNCHANGED, SILENCE).
 * @imu_records: IMU records read.
 * @reused_positions: decoder positions kept across asks.
 * @polls: successful mmhal_session_poll() calls.
 * @polls_changed: those that found a change.
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
	uint64_t image_route[MMHAL_ROUTE_N];
	uint64_t audio_route[MMHAL_ROUTE_N];
	uint64_t encoder_runs;
	uint64_t encoder_runs_avoided;
	uint64_t imu_records;
	uint64_t reused_positions;
	uint64_t polls;
	uint64_t polls_changed;
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
 * struct mmhal_session_slo - latency and cost figures of a session
 * @size: set by the caller: sizeof(struct mmhal_session_slo).
 * @n: asks the percentiles are over: the last slo_window successful
 *	ones (0: none yet, the figures are 0).
 * @first_p50: start of frame -> first token, ms: median (nearest rank).
 * @first_p95: 95th percentile.
 * @first_p99: 99th percentile.
 * @first_max: the largest.
 * @last_p50: start of frame -> last token, ms.
 * @last_p95: see @last_p50.
 * @last_p99: see @last_p50.
 * @last_max: see @last_p50.
 * @peak_rss_bytes: the process's peak resident set (getrusage()).
 * @cpu_s: the process's CPU time (user + system) since the session was
 *	created, s.
 * @wall_s: CLOCK_MONOTONIC time since then, s.
 * @reserved: zero.
 */
struct mmhal_session_slo {
	uint32_t size;
	uint32_t n;
	double first_p50;
	double first_p95;
	double first_p99;
	double first_max;
	double last_p50;
	double last_p95;
	double last_p99;
	double last_max;
	uint64_t peak_rss_bytes;
	double cpu_s;
	double wall_s;
	uint64_t reserved[4];
};

/**
 * mmhal_session_slo() - the SLO figures now
 * @out: out->size set by the caller; filled in up to it.
 *
 * Return: 0, -EINVAL (NULL argument, out->size too small), -ENOMEM.
 */
MMHAL_API int mmhal_session_slo(const struct mmhal_session *s,
				struct mmhal_session_slo *out);

/*
 * Routing measures (pure functions on memory, used by the session).
 */

/* A scene signature: 16 x 16 luma cells, row by row. */
#define MMHAL_SIG_SIDE		16
#define MMHAL_SIG_CELLS		(MMHAL_SIG_SIDE * MMHAL_SIG_SIDE)

/**
 * mmhal_scene_signature() - a frame's luma thumbnail
 * @img: GREY, RGB24 (luma (77 R + 150 G + 29 B + 128) >> 8) or NV12 (its
 *	Y plane only), at least 16 x 16 pixels, read in place.
 * @sig: receives cell (r, c) at sig[16 r + c]: the rounded mean luma of
 *	the pixels x in [c w / 16, (c + 1) w / 16), y in [r h / 16,
 *	(r + 1) h / 16), every ceil(cell side / 16)-th pixel each way.
 *
 * Return: 0, or -EINVAL (NULL, format, size below 16, stride below a
 * line).
 */
MMHAL_API int mmhal_scene_signature(const struct mmhal_image *img,
				    uint8_t sig[MMHAL_SIG_CELLS]);

/* The mean absolute difference of two signatures, 0..255. */
MMHAL_API double mmhal_scene_diff(const uint8_t a[MMHAL_SIG_CELLS],
				  const uint8_t b[MMHAL_SIG_CELLS]);

/* The floor of mmhal_vad()'s energies (digital silence), dBFS. */
#define MMHAL_VAD_FLOOR_DBFS	(-200.0f)

/**
 * struct mmhal_vad - voice activity in a window
 * @n_frames: 10 ms frames (rate / 100 samples; a shorter tail is left
 *	out; a window shorter than a frame is one frame).
 * @n_speech: frames whose energy reaches the threshold.
 * @speech_frac: @n_speech / @n_frames.
 * @max_dbfs: the loudest frame's energy, dBFS (10 log10 of the mean
 *	square about the frame's mean over 32768^2; at least
 *	MMHAL_VAD_FLOOR_DBFS).
 * @speech: @n_speech >= ceil(min_speech * @n_frames) and >= 1.
 */
struct mmhal_vad {
	uint32_t n_frames;
	uint32_t n_speech;
	float speech_frac;
	float max_dbfs;
	int speech;
};

/**
 * mmhal_vad() - is there speech-like energy in a PCM window
 * @pcm, @n: mono S16 samples (n >= 1).
 * @rate: Hz, >= 100.
 * @threshold_dbfs: a frame at or above it is speech-like.
 * @min_speech: 0..1.
 *
 * Return: 0, or -EINVAL (NULL, n 0, rate, min_speech or threshold out of
 * range).
 */
MMHAL_API int mmhal_vad(const int16_t *pcm, size_t n, uint32_t rate,
			float threshold_dbfs, float min_speech,
			struct mmhal_vad *out);

/**
 * struct mmhal_imu_motion - motion over IMU records (zero it to start)
 * @n: records seen.
 * @ref: the first record's acceleration.
 * @gyro_max: the largest angular rate magnitude, raw units.
 * @accel_change_max: the largest |acceleration - @ref|, raw units.
 */
struct mmhal_imu_motion {
	uint64_t n;
	int32_t ref[3];
	float gyro_max;
	float accel_change_max;
};

/* Adds n IMU6 records (struct mmhal_imu_sample, little-endian);
 * 0 or -EINVAL (NULL). */
MMHAL_API int mmhal_imu_motion_add(struct mmhal_imu_motion *m,
				   const void *records, size_t n);
/* 1 if records were seen and the gyro or acceleration change went above
 * its threshold, else 0. */
MMHAL_API int mmhal_imu_moved(const struct mmhal_imu_motion *m,
			      float gyro_threshold, float accel_threshold);

/**
 * mmhal_session_chan() - the session's channel of a source
 * @type: MMHAL_SRC_CAMERA, MMHAL_SRC_MIC or MMHAL_SRC_IMU.
 *
 * For mmhal_chan_stats(), mmhal_chan_set_weight(), mmhal_frame_meta()
 * and the like (from any thread: mmhal.h's threading rule). Do not queue
 * or dequeue on it.
 *
 * Return: the channel, or NULL (no such source, NULL @s).
 */
MMHAL_API struct mmhal_chan *mmhal_session_chan(struct mmhal_session *s,
						uint32_t type);

/* The session's model session (its KV cache holds the last answer), for
 * mmhal_ctx_stats() and the like. */
MMHAL_API struct mmhal_ctx *mmhal_session_ctx(struct mmhal_session *s);

/**
 * struct mmhal_session_frame - a camera frame the session dequeued
 * @sequence: its sequence number.
 * @flags: its MMHAL_FRAME_* flags.
 * @pad: zero.
 * @sof_mono: its start of frame on CLOCK_MONOTONIC (the SoC counter's,
 *	as dequeued).
 * @sensor_sof: its start of frame on the camera's sensor clock (0
 *	without MMHAL_FRAME_TS_SENSOR).
 * @sensor_end: the exposure's end on the sensor clock as the pairing
 *	takes it: @sensor_sof plus the nominal frame period.
 */
struct mmhal_session_frame {
	uint64_t sequence;
	uint32_t flags;
	uint32_t pad;
	uint64_t sof_mono;
	uint64_t sensor_sof;
	uint64_t sensor_end;
};

/* Recent camera frames the session keeps for the pairing. */
#define MMHAL_SESSION_FRAMES	64

/**
 * mmhal_session_frames() - the camera frames the pairing chooses from
 * @s: session.
 * @out: receives up to @max frames, oldest first (the last
 *	MMHAL_SESSION_FRAMES good frames dequeued, used or queued again).
 * @max: entries of @out.
 *
 * Timeline: each capture channel of the session (camera, microphone)
 * has a clock fit (struct mmhal_clock_fit, mmhal.h) fed with a
 * mmhal_dev_sensor_xts() triple at creation and then as
 * clock_every_asks / clock_every_ms say (and before the acquisition while
 * it has fewer than 3 points). Each ask maps the frame's and the audio
 * window's sensor stamps to CLOCK_MONOTONIC through them and pairs the
 * window with these frames (mmhal_session_result.pair_*). Copy channels
 * and drivers without sensor clocks have no fit: no mapping then.
 *
 * Return: the number of frames written (0..@max), or -EINVAL (NULL @s,
 * NULL @out with @max > 0).
 */
MMHAL_API int mmhal_session_frames(const struct mmhal_session *s,
				   struct mmhal_session_frame *out,
				   size_t max);

#ifdef __cplusplus
}
#endif

#endif /* MMHAL_SESSION_H */

// SPDX-License-Identifier: MIT
/*
 * mmrun - ask a multimodal model about a picture and/or a sound from the
 * command line:
 *
 *   mmrun --model M.gguf --mmproj P.gguf [--image F] [--audio F.wav]
 *         -p TEXT [-n N] [-t THREADS] [--temp T] [--seed S] [--no-tiles]
 *         [--audio-latency] [--raw] [--ctx N]
 *
 * --mmproj may be given twice: one file with the vision encoder and one
 * with the audio encoder (as llama.cpp's converter writes them for a
 * model whose two encoders come apart); two files that both have a
 * vision, or both an audio encoder, are refused. --ctx N sets the
 * context size in positions (default: the model's context_length, at
 * most 4096), e.g. for a 30 s audio chunk on a model trained on less.
 *
 * or about what an mmedge device's virtual camera and microphone capture
 * (a session of libmmhal, mmhal_session.h: the frame and the audio window
 * are read in place in the device's buffers):
 *
 *   mmrun --model M.gguf --mmproj P.gguf --device /dev/mmedge0
 *         [--camera WxH[@FPS][:GREY|RGB24|NV12]] [--mic RATE]
 *         [--image F] [--audio F.wav] [--listen MS] -p TEXT [-n N]
 *         [--asks N] [--every MS] [--on-change] [--no-route] [-j] ...
 *
 * With --device, --image and --audio are the caller's sensor data: the
 * picture (or the first --listen ms of the WAV file) sits in a buffer
 * that the device copies through a copy channel at each ask, timestamped
 * like a camera frame (a static scene, a fixed sound). --asks N asks N
 * times, starting one every --every MS (0, the default: back to back),
 * and prints a line per answer (the answer, the routing decisions, the
 * start of frame -> first token time), then the SLO summary (P50/P95/P99
 * of start of frame -> first and last token, peak RSS, CPU seconds per
 * minute, encoder runs done and avoided). --no-route encodes every frame
 * and window (mmhal_session_params.route_off). --on-change makes each of
 * the --asks N periods a poll (mmhal_session_poll()): the ask is made
 * only when routing finds the scene changed (or the first frame, or the
 * IMU moved) or speech in the window; the other polls are skipped and
 * counted in the summary.
 *
 * -j prints JSON lines instead: one object per answer ("type":
 * "answer": the text, the token ids, the camera frame's sequence and
 * stamps (counter, CLOCK_MONOTONIC, sensor clock, and the sensor stamps
 * mapped onto CLOCK_MONOTONIC through the session's clock fit with its
 * uncertainty), the audio window's, the frames the window overlaps, the
 * routing decisions with their reasons and measures, the timings
 * including start of frame -> first and last token), with --on-change
 * one per skipped poll ("type": "skip"), and a last one ("type":
 * "summary": the SLO percentiles, peak RSS, CPU time, encoder runs,
 * polls, copied and in-place payload bytes).
 *
 * With --device and neither --camera nor --mic, both are used (camera
 * 64x48@30:NV12, microphone 16000 Hz); with one of them, only that one.
 * After the answer comes a line with the frame's sequence number and
 * hardware timestamps (CLOCK_MONOTONIC), the audio window's buffers, and
 * the time from the frame's start of frame to the first and last token.
 *
 * Images (read by ../common/media_io.c): binary PNM (P5 grey, P6 RGB,
 * maxval 255) and, when built with libpng, PNG. Audio: RIFF WAVE, PCM signed 16-bit little-endian, mono, at
 * the mmproj's rate (16000 Hz). The prompt may place the media with
 * <__media__> (images first, then audio, in the order given); without a
 * marker they go before the text. The prompt is wrapped in the model's
 * chat template as the user's message (--raw: used as is). Prints the
 * answer, then a timing line on stderr.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <math.h>
#include <sys/resource.h>
#include <time.h>

#include "mmhal_model.h"
#include "mmhal_session.h"

#include "json.h"
#include "media_io.h"

#define MAX_MEDIA 8

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

__attribute__((format(printf, 1, 2)))
static int fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "mmrun: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	return -1;
}

/* ---- main --------------------------------------------------------------------- */

struct gen_state {
	double t0, t_first;
	int n;
};

static int on_token(int32_t tok, const char *piece, size_t len, void *arg)
{
	struct gen_state *g = arg;

	(void)tok;
	if (!g->n++)
		g->t_first = now_ms();
	fwrite(piece, 1, len, stdout);
	fflush(stdout);
	return 0;
}

/* Decoder options: precision tiers, context size and shift (both modes). */
static struct {
	const char *file[MMHAL_MAX_TIERS - 1];	/* --tier */
	int n_file;
	int tier_mode;		/* MMHAL_TIER_* */
	int tier;		/* MMHAL_TIER_FIXED */
	int ctx_shift;
	int n_keep;
	int n_ctx;		/* --ctx; 0: the model's default */
} dec;

/* "top", "confidence" or "fixed:N"; 0 or -1. */
static int parse_tier_mode(const char *v)
{
	char *end;
	long t;

	if (!strcmp(v, "top")) {
		dec.tier_mode = MMHAL_TIER_TOP;
		return 0;
	}
	if (!strcmp(v, "confidence")) {
		dec.tier_mode = MMHAL_TIER_CONFIDENCE;
		return 0;
	}
	if (strncmp(v, "fixed:", 6))
		return -1;
	t = strtol(v + 6, &end, 10);
	if (end == v + 6 || *end || t < 0 || t >= MMHAL_MAX_TIERS)
		return -1;
	dec.tier_mode = MMHAL_TIER_FIXED;
	dec.tier = (int)t;
	return 0;
}

/* One line: decode steps kept at each precision tier, recomputes. */
static void print_tiers(const struct mmhal_model *model,
			const struct mmhal_model_stats *st)
{
	int n = mmhal_model_n_tiers(model);

	if (n < 2)
		return;
	fprintf(stderr, "mmrun: precision tiers:");
	for (int t = 0; t < n && t < MMHAL_MAX_TIERS; t++) {
		struct mmhal_tier_info ti;

		if (!mmhal_model_tier_info(model, t, &ti))
			fprintf(stderr, " %s %lld steps%s", ti.wtype,
				(long long)st->tier_steps[t],
				t + 1 < n ? "," : "");
	}
	fprintf(stderr, "; %lld recomputed\n", (long long)st->tier_recomputes);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: mmrun --model M.gguf --mmproj P.gguf [--image F.ppm|.pgm%s"
		"]... [--audio F.wav]...\n"
		"             -p TEXT [-n N] [-t THREADS] [--temp T] [--seed S]\n"
		"             [--no-tiles] [--audio-latency] [--raw]\n"
		"             (--mmproj twice: one vision and one audio mmproj)\n"
		"       mmrun --model M.gguf --mmproj P.gguf --device DEV\n"
		"             [--camera WxH[@FPS][:GREY|RGB24|NV12]] [--mic RATE]\n"
		"             [--image F] [--audio F.wav] [--listen MS] -p TEXT\n"
		"             [-n N] [-t THREADS] [--asks N] [--every MS] [--on-change]\n"
		"             [--no-route] [-j] ...\n"
		"       either mode: [--tier F.gguf]... [--tier-mode top|confidence|fixed:N]\n"
		"             [--ctx N] [--ctx-shift N_KEEP]\n",
		media_png() ? "|.png" : "");
}

/* ---- device mode ------------------------------------------------------------- */

/* Decimal in 1..max, the whole of s[0..len). */
static int parse_u32(const char *s, size_t len, uint32_t max, uint32_t *out)
{
	uint64_t v = 0;

	if (!len || len > 10)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (!v || v > max)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

/* WxH[@FPS][:FMT] */
static int parse_camera(const char *arg, struct mmhal_src *src)
{
	const char *x = strchr(arg, 'x'), *colon = strchr(arg, ':');
	const char *end = colon ? colon : arg + strlen(arg);
	const char *at = memchr(arg, '@', (size_t)(end - arg));
	uint32_t w, h, fps = 30, fourcc = MMHAL_FMT_NV12;

	if (!x || x > end || parse_u32(arg, (size_t)(x - arg), 4096, &w) ||
	    parse_u32(x + 1, (size_t)((at ? at : end) - x - 1), 4096, &h) ||
	    (at && parse_u32(at + 1, (size_t)(end - at - 1), 240, &fps)))
		return fail("--camera '%s': want WxH[@FPS][:GREY|RGB24|NV12], e.g. 64x48@30:NV12",
			    arg);
	if (colon) {
		if (!strcasecmp(colon + 1, "GREY"))
			fourcc = MMHAL_FMT_GREY;
		else if (!strcasecmp(colon + 1, "RGB24"))
			fourcc = MMHAL_FMT_RGB24;
		else if (!strcasecmp(colon + 1, "NV12"))
			fourcc = MMHAL_FMT_NV12;
		else
			return fail("--camera '%s': unknown format '%s' (GREY, RGB24, NV12)",
				    arg, colon + 1);
	}
	*src = mmhal_src_camera(w, h, fourcc, fps);
	return 0;
}

static const char *fourcc_name(uint32_t f)
{
	return f == MMHAL_FMT_GREY ? "GREY" : f == MMHAL_FMT_RGB24 ? "RGB24" :
	       f == MMHAL_FMT_NV12 ? "NV12" : "?";
}

static double ns_s(uint64_t ns)
{
	return (double)ns / 1e9;
}

struct dev_args {
	const char *path;
	const char *camera;
	const char *mic;
	const char *listen;
	const char *image;	/* the camera's frames: this picture */
	const char *audio;	/* the microphone's window: this file */
	uint32_t asks;		/* 0: one, printed as it comes */
	uint32_t every_ms;
	int no_route;
	int json;		/* -j: JSON lines */
	int on_change;		/* ask only when routing sees a change */
};

/* A buffer of @dev holding @n bytes of @data (a copy channel's source). */
static int src_buffer(struct mmhal_dev *dev, const void *data, size_t n,
		      struct mmhal_buf **out)
{
	void *map = NULL;
	int ret;

	ret = mmhal_buf_alloc(dev, n, NULL, out);
	if (!ret)
		ret = mmhal_buf_map(*out, &map);
	if (!ret)
		ret = mmhal_buf_begin_cpu(*out, MMHAL_SYNC_WRITE);
	if (ret)
		return fail("source buffer of %zu bytes: %s", n,
			    mmhal_strerror(ret));
	memcpy(map, data, n);
	ret = mmhal_buf_end_cpu(*out, MMHAL_SYNC_WRITE);
	if (ret)
		return fail("source buffer: %s", mmhal_strerror(ret));
	return 0;
}

/* The session's camera from a picture through a copy channel. */
static int image_source(struct mmhal_dev *dev, const char *path,
			struct mmhal_session_params *sp, struct mmhal_chan **ch,
			struct mmhal_buf **buf)
{
	struct media_image pic;
	char err[512];
	size_t line, n;
	uint8_t *packed;
	int ret;

	if (media_read_image(path, &pic, err, sizeof(err)))
		return fail("%s", err);
	line = (size_t)pic.width * (pic.fourcc == MMHAL_IMAGE_RGB24 ? 3 : 1);
	n = line * pic.height;
	packed = malloc(n ? n : 1);
	if (!packed) {
		media_image_free(&pic);
		return fail("out of memory");
	}
	for (uint32_t y = 0; y < pic.height; y++)
		memcpy(packed + y * line, pic.pix + y * pic.stride, line);
	media_image_free(&pic);
	sp->camera = mmhal_src_camera(pic.width, pic.height,
				      pic.fourcc == MMHAL_IMAGE_RGB24 ?
				      MMHAL_FMT_RGB24 : MMHAL_FMT_GREY, 30);
	ret = mmhal_chan_create_dir(dev, MMHAL_CHAN_COPY, NULL, ch);
	if (ret) {
		free(packed);
		return fail("%s: copy channel: %s", path, mmhal_strerror(ret));
	}
	ret = src_buffer(dev, packed, n, buf);
	free(packed);
	if (ret)
		return -1;
	sp->camera_chan = *ch;
	sp->camera_copy_src = *buf;
	return 0;
}

/* The session's microphone from a WAV file through a copy channel. */
static int audio_source(struct mmhal_dev *dev, const char *path,
			uint32_t rate, struct mmhal_session_params *sp,
			struct mmhal_chan **ch, struct mmhal_buf **buf)
{
	uint64_t need = (uint64_t)sp->listen_ms * rate / 1000;
	int16_t *pcm = NULL;
	char err[512];
	size_t n = 0;
	int ret;

	if (media_read_wav(path, rate, &pcm, &n, err, sizeof(err)))
		return fail("%s", err);
	if (n < need) {
		free(pcm);
		return fail("%s: %zu samples, a %u ms window takes %llu", path,
			    n, sp->listen_ms, (unsigned long long)need);
	}
	sp->mic = mmhal_src_mic(rate, 320, MMHAL_SIGNAL_TONE);
	ret = mmhal_chan_create_dir(dev, MMHAL_CHAN_COPY, NULL, ch);
	if (ret) {
		free(pcm);
		return fail("%s: copy channel: %s", path, mmhal_strerror(ret));
	}
	ret = src_buffer(dev, pcm, need * 2, buf);
	free(pcm);
	if (ret)
		return -1;
	sp->mic_chan = *ch;
	sp->mic_copy_src = *buf;
	return 0;
}

/* ---- JSON lines ---------------------------------------------------------- */

/* Milliseconds, seconds and ratios: always with 3 decimals (null if not finite). */
static void kv_num(struct json_writer *w, const char *key, double v)
{
	json_kv_double_fixed(w, key, v, 3);
}

/* "key": {"ka": a, "kb": b, left open for more members. */
static void begin_pair(struct json_writer *w, const char *key,
		       const char *ka, uint64_t a, const char *kb, uint64_t b)
{
	json_key(w, key);
	json_begin_object(w);
	json_kv_u64(w, ka, a);
	json_kv_u64(w, kb, b);
}

/* "key": {"ka": a, "kb": b} */
static void kv_pair(struct json_writer *w, const char *key,
		    const char *ka, uint64_t a, const char *kb, uint64_t b)
{
	begin_pair(w, key, ka, a, kb, b);
	json_end_object(w);
}

static void kv_null(struct json_writer *w, const char *key)
{
	json_key(w, key);
	json_null(w);
}

/* Ends a JSON line; says so if the writer was misused (a bug here). */
static void json_line_end(struct json_writer *w)
{
	if (json_finish(w))
		fail("internal error: invalid JSON line");
	fflush(stdout);
}

static const char *image_decision(uint32_t why)
{
	return why == MMHAL_ROUTE_NONE ? "none" :
	       why == MMHAL_ROUTE_UNCHANGED ? "reused" : "encoded";
}

static const char *audio_decision(uint32_t why)
{
	return why == MMHAL_ROUTE_NONE ? "none" :
	       why == MMHAL_ROUTE_SILENCE ? "skipped" : "encoded";
}

/* "frame": the camera frame of an answer, or null. */
static void json_frame(struct json_writer *w,
		       const struct mmhal_session_result *r)
{
	json_key(w, "frame");
	if (!(r->flags & MMHAL_RESULT_IMAGE)) {
		json_null(w);
		return;
	}
	json_begin_object(w);
	json_kv_u64(w, "sequence", r->frame_sequence);
	json_kv_u64(w, "flags", r->frame_flags);
	kv_pair(w, "raw", "sof", r->frame_ts.sof_raw, "eof", r->frame_ts.eof_raw);
	kv_pair(w, "mono", "sof", r->frame_ts.sof_mono,
		"eof", r->frame_ts.eof_mono);
	if (r->frame_flags & MMHAL_FRAME_TS_SENSOR)
		kv_pair(w, "sensor", "sof", r->frame_sensor_sof,
			"eof", r->frame_sensor_eof);
	else
		kv_null(w, "sensor");
	if (r->flags & MMHAL_RESULT_FRAME_MAPPED) {
		begin_pair(w, "mapped", "sof", r->frame_mono_sof,
			   "eof", r->frame_mono_eof);
		json_kv_u64(w, "uncert_ns", r->frame_uncert_ns);
		json_end_object(w);
	} else {
		kv_null(w, "mapped");
	}
	json_kv_u64(w, "encoded_sequence", r->image_frame_sequence);
	json_end_object(w);
}

/* "audio": the microphone window of an answer, or null. */
static void json_window(struct json_writer *w,
			const struct mmhal_session_result *r)
{
	json_key(w, "audio");
	if (!(r->flags & (MMHAL_RESULT_AUDIO | MMHAL_RESULT_AUDIO_SKIPPED))) {
		json_null(w);
		return;
	}
	json_begin_object(w);
	json_kv_u64(w, "first_sequence", r->audio_first_sequence);
	json_kv_u64(w, "last_sequence", r->audio_last_sequence);
	json_kv_u64(w, "samples", r->audio_n_samples);
	json_kv_u64(w, "buffers", r->audio_n_bufs);
	json_kv_bool(w, "copied", r->flags & MMHAL_RESULT_AUDIO_COPIED);
	kv_pair(w, "raw", "sof", r->audio_first_ts.sof_raw,
		"eof", r->audio_last_ts.eof_raw);
	kv_pair(w, "mono", "sof", r->audio_first_ts.sof_mono,
		"eof", r->audio_last_ts.eof_mono);
	if (r->audio_sensor_start || r->audio_sensor_end)
		kv_pair(w, "sensor", "start", r->audio_sensor_start,
			"end", r->audio_sensor_end);
	else
		kv_null(w, "sensor");
	if (r->flags & MMHAL_RESULT_AUDIO_MAPPED) {
		begin_pair(w, "mapped", "start", r->audio_mono_start,
			   "end", r->audio_mono_end);
		json_kv_u64(w, "uncert_ns", r->audio_uncert_ns);
		json_end_object(w);
	} else {
		kv_null(w, "mapped");
	}
	json_end_object(w);
}

/* "pairing": the frames the window overlaps, or null. */
static void json_pairing(struct json_writer *w,
			 const struct mmhal_session_result *r)
{
	json_key(w, "pairing");
	if (!(r->flags & MMHAL_RESULT_PAIRED)) {
		json_null(w);
		return;
	}
	json_begin_object(w);
	json_kv_u64(w, "overlapping_frames", r->pair_n_overlap);
	json_kv_u64(w, "seq_first", r->pair_seq_first);
	json_kv_u64(w, "seq_last", r->pair_seq_last);
	json_kv_bool(w, "frame_used_overlaps", r->pair_frame_used);
	kv_num(w, "coverage", r->pair_coverage);
	json_kv_u64(w, "uncert_ns", r->pair_uncert_ns);
	json_end_object(w);
}

/* "routing": the decisions, their reasons and measures. */
static void json_routing(struct json_writer *w,
			 const struct mmhal_session_result *r)
{
	json_key(w, "routing");
	json_begin_object(w);
	json_key(w, "image");
	json_begin_object(w);
	json_kv_string(w, "decision", image_decision(r->image_route));
	json_kv_string(w, "reason", mmhal_route_name(r->image_route));
	kv_num(w, "scene_diff", r->scene_diff);
	kv_num(w, "imu_gyro_max", r->imu_gyro_max);
	kv_num(w, "imu_accel_change", r->imu_accel_change);
	json_end_object(w);
	json_key(w, "audio");
	json_begin_object(w);
	json_kv_string(w, "decision", audio_decision(r->audio_route));
	json_kv_string(w, "reason", mmhal_route_name(r->audio_route));
	kv_num(w, "speech_frac", r->vad_speech_frac);
	kv_num(w, "max_dbfs", r->vad_max_dbfs);
	json_end_object(w);
	json_kv_u64(w, "encoders_run", r->encoders_run);
	json_kv_s64(w, "positions_kept", r->reused_positions);
	json_end_object(w);
}

/* One JSON object per answer. */
static void json_answer(uint32_t k, const struct mmhal_session_result *r)
{
	struct json_writer w;

	json_init(&w, stdout, false);
	json_begin_object(&w);
	json_kv_string(&w, "type", "answer");
	json_kv_u64(&w, "ask", k);
	json_key(&w, "text");
	json_string_len(&w, r->text ? r->text : "", r->text ? r->text_len : 0);
	json_key(&w, "tokens");
	json_begin_array(&w);
	for (int i = 0; i < r->n_tokens; i++)
		json_s64(&w, r->tokens[i]);
	json_end_array(&w);
	json_kv_s64(&w, "n_prompt", r->n_prompt);
	json_frame(&w, r);
	json_window(&w, r);
	json_pairing(&w, r);
	json_routing(&w, r);
	json_key(&w, "timings_ms");
	json_begin_object(&w);
	kv_num(&w, "sof_to_first_token", r->sof_to_first_token_ms);
	kv_num(&w, "sof_to_last_token", r->sof_to_last_token_ms);
	kv_num(&w, "acquire", r->acquire_ms);
	kv_num(&w, "preprocess", r->preprocess_ms);
	kv_num(&w, "encode", r->encode_ms);
	kv_num(&w, "prefill", r->prefill_ms);
	kv_num(&w, "decode", r->decode_ms);
	json_end_object(&w);
	json_kv_u64(&w, "ask_mono", r->ask_mono);
	json_kv_u64(&w, "first_token_mono", r->first_token_mono);
	json_kv_u64(&w, "last_token_mono", r->last_token_mono);
	json_kv_u64(&w, "bytes_copied", r->bytes_copied);
	json_end_object(&w);
	json_line_end(&w);
}

/* A poll that found nothing new. */
static void json_skip(uint32_t k, const struct mmhal_session_poll *p)
{
	struct json_writer w;

	json_init(&w, stdout, false);
	json_begin_object(&w);
	json_kv_string(&w, "type", "skip");
	json_kv_u64(&w, "poll", k);
	json_kv_string(&w, "image", mmhal_route_name(p->image_route));
	json_kv_string(&w, "audio", mmhal_route_name(p->audio_route));
	json_kv_u64(&w, "frame_sequence", p->frame_sequence);
	kv_num(&w, "scene_diff", p->scene_diff);
	kv_num(&w, "speech_frac", p->vad_speech_frac);
	json_end_object(&w);
	json_line_end(&w);
}

/* "key": {"p50", "p95", "p99", "max"} in ms */
static void kv_percentiles(struct json_writer *w, const char *key,
			   double p50, double p95, double p99, double max)
{
	json_key(w, key);
	json_begin_object(w);
	kv_num(w, "p50", p50);
	kv_num(w, "p95", p95);
	kv_num(w, "p99", p99);
	kv_num(w, "max", max);
	json_end_object(w);
}

static void json_summary(struct mmhal_session *s, uint32_t polls,
			 uint32_t skipped)
{
	struct mmhal_session_slo slo = { .size = sizeof(slo) };
	struct mmhal_session_stats st = { .size = sizeof(st) };
	struct json_writer w;

	if (mmhal_session_slo(s, &slo) || mmhal_session_stats(s, &st))
		return;
	json_init(&w, stdout, false);
	json_begin_object(&w);
	json_kv_string(&w, "type", "summary");
	json_kv_u64(&w, "asks", st.asks);
	json_kv_u64(&w, "polls", polls);
	json_kv_u64(&w, "skipped_polls", skipped);
	json_key(&w, "slo");
	json_begin_object(&w);
	json_kv_u64(&w, "n", slo.n);
	kv_percentiles(&w, "sof_to_first_token_ms", slo.first_p50,
		       slo.first_p95, slo.first_p99, slo.first_max);
	kv_percentiles(&w, "sof_to_last_token_ms", slo.last_p50,
		       slo.last_p95, slo.last_p99, slo.last_max);
	json_end_object(&w);
	json_kv_u64(&w, "peak_rss_bytes", slo.peak_rss_bytes);
	kv_num(&w, "cpu_s", slo.cpu_s);
	kv_num(&w, "wall_s", slo.wall_s);
	kv_num(&w, "cpu_s_per_min",
	       slo.wall_s > 0 ? slo.cpu_s * 60 / slo.wall_s : 0);
	json_kv_u64(&w, "encoder_runs", st.encoder_runs);
	json_kv_u64(&w, "encoder_runs_avoided", st.encoder_runs_avoided);
	kv_pair(&w, "routes",
		"image_unchanged", st.image_route[MMHAL_ROUTE_UNCHANGED],
		"audio_silence", st.audio_route[MMHAL_ROUTE_SILENCE]);
	json_kv_u64(&w, "positions_kept", st.reused_positions);
	json_kv_u64(&w, "frames_encoded", st.frames_used);
	json_kv_u64(&w, "mic_buffers_encoded", st.mic_bufs_used);
	json_key(&w, "bytes_copied");
	json_begin_object(&w);
	json_kv_u64(&w, "total", st.bytes_copied);
	json_kv_u64(&w, "image", st.image_bytes_copied);
	json_kv_u64(&w, "audio", st.audio_bytes_copied);
	json_end_object(&w);
	kv_pair(&w, "bytes_in_place", "image", st.image_bytes_read_in_place,
		"audio", st.audio_bytes_read_in_place);
	json_end_object(&w);
	json_line_end(&w);
}

/* One line per answer of the continuous mode. */
static void print_ask(uint32_t k, const struct mmhal_session_result *r)
{
	printf("mmrun: ask %u: \"", k);
	for (size_t i = 0; i < r->text_len; i++) {
		char c = r->text[i];

		putchar(c == '\n' ? ' ' : c == '"' ? '\'' : c);
	}
	printf("\" | image %s", mmhal_route_name(r->image_route));
	if (r->image_route != MMHAL_ROUTE_NONE && r->scene_diff >= 0)
		printf(" (diff %.2f)", (double)r->scene_diff);
	printf(", audio %s", mmhal_route_name(r->audio_route));
	if (r->audio_route == MMHAL_ROUTE_SPEECH ||
	    r->audio_route == MMHAL_ROUTE_SILENCE)
		printf(" (%.0f%% speech)", 100.0 * (double)r->vad_speech_frac);
	printf(" | encoders %u, positions kept %d of %d | sof->first token %.1f ms, ->last %.1f ms (acquire %.1f, preprocess %.1f, encode %.1f, prefill %.1f ms)\n",
	       r->encoders_run, r->reused_positions, r->n_prompt,
	       r->sof_to_first_token_ms, r->sof_to_last_token_ms,
	       r->acquire_ms, r->preprocess_ms, r->encode_ms, r->prefill_ms);
	fflush(stdout);
}

static void print_slo(struct mmhal_session *s)
{
	struct mmhal_session_slo slo = { .size = sizeof(slo) };
	struct mmhal_session_stats st = { .size = sizeof(st) };

	if (mmhal_session_slo(s, &slo) || mmhal_session_stats(s, &st))
		return;
	printf("mmrun: SLO over %u asks: sof->first token P50 %.1f ms, P95 %.1f ms, P99 %.1f ms; sof->last token P50 %.1f ms, P95 %.1f ms, P99 %.1f ms\n",
	       slo.n, slo.first_p50, slo.first_p95, slo.first_p99,
	       slo.last_p50, slo.last_p95, slo.last_p99);
	printf("mmrun: peak RSS %.1f MiB; CPU %.2f s in %.2f s (%.1f CPU s per minute); encoder runs %llu, avoided %llu (image unchanged %llu, audio silence %llu); positions kept %llu\n",
	       (double)slo.peak_rss_bytes / 1048576.0, slo.cpu_s, slo.wall_s,
	       slo.wall_s > 0 ? slo.cpu_s * 60 / slo.wall_s : 0.0,
	       (unsigned long long)st.encoder_runs,
	       (unsigned long long)st.encoder_runs_avoided,
	       (unsigned long long)st.image_route[MMHAL_ROUTE_UNCHANGED],
	       (unsigned long long)st.audio_route[MMHAL_ROUTE_SILENCE],
	       (unsigned long long)st.reused_positions);
	printf("mmrun: payload copied by the CPU: %llu bytes (image %llu, audio %llu) for %llu camera frames and %llu microphone buffers encoded = %.0f bytes per frame; read in place: image %llu bytes, audio %llu bytes\n",
	       (unsigned long long)st.bytes_copied,
	       (unsigned long long)st.image_bytes_copied,
	       (unsigned long long)st.audio_bytes_copied,
	       (unsigned long long)st.frames_used,
	       (unsigned long long)st.mic_bufs_used,
	       st.frames_used + st.mic_bufs_used ?
	       (double)st.bytes_copied /
	       (double)(st.frames_used + st.mic_bufs_used) : 0.0,
	       (unsigned long long)st.image_bytes_read_in_place,
	       (unsigned long long)st.audio_bytes_read_in_place);
	fflush(stdout);
}

static int run_continuous(struct mmhal_session *s, const char *path,
			  const char *text, const struct dev_args *da)
{
	struct mmhal_session_result r = { .size = sizeof(r) };
	uint32_t asked = 0, skipped = 0;
	double next = now_ms();

	for (uint32_t k = 1; k <= da->asks; k++) {
		double wait = next - now_ms();

		if (wait > 0) {
			struct timespec ts = { (time_t)(wait / 1e3),
					       (long)(fmod(wait, 1e3) * 1e6) };

			nanosleep(&ts, NULL);
		}
		next += da->every_ms;
		if (da->on_change) {
			struct mmhal_session_poll p = { .size = sizeof(p) };

			if (mmhal_session_poll(s, &p))
				return fail("%s: poll %u: %s", path, k,
					    mmhal_session_error(s));
			if (!p.changed) {
				skipped++;
				if (da->json)
					json_skip(k, &p);
				else
					printf("mmrun: poll %u: no change (image %s, diff %.2f; audio %s, %.0f%% speech): not asked\n",
					       k, mmhal_route_name(p.image_route),
					       (double)p.scene_diff,
					       mmhal_route_name(p.audio_route),
					       100.0 * (double)p.vad_speech_frac);
				continue;
			}
		}
		r.size = sizeof(r);
		if (mmhal_session_ask(s, text, NULL, NULL, &r))
			return fail("%s: ask %u: %s", path, k,
				    mmhal_session_error(s));
		asked++;
		if (da->json)
			json_answer(k, &r);
		else
			print_ask(k, &r);
	}
	if (da->json) {
		json_summary(s, da->on_change ? da->asks : 0, skipped);
		return 0;
	}
	if (da->on_change)
		printf("mmrun: %u polls: %u asked, %u skipped (no change)\n",
		       da->asks, asked, skipped);
	print_slo(s);
	return 0;
}

static int run_device(const struct dev_args *da, struct mmhal_model *model,
		      const struct mmhal_mmproj *proj, const char *text,
		      int n_predict, int n_threads, int raw, float temp,
		      uint64_t seed)
{
	struct mmhal_session_params sp = mmhal_session_default_params();
	struct mmhal_session_result r = { .size = sizeof(r) };
	struct mmhal_session_stats st = { .size = sizeof(st) };
	struct mmhal_session *s = NULL;
	struct mmhal_dev *dev = NULL;
	struct mmhal_chan *cam_copy = NULL, *mic_copy = NULL;
	struct mmhal_buf *cam_src = NULL, *mic_src = NULL;
	struct mmhal_mmproj_info pi = { .size = sizeof(pi) };
	struct gen_state gs = { 0, 0, 0 };
	char err[512];
	int ret;

	if (da->camera && parse_camera(da->camera, &sp.camera))
		return 2;
	if (da->mic) {
		uint32_t rate;

		if (parse_u32(da->mic, strlen(da->mic), 192000, &rate)) {
			fail("--mic '%s': want a rate in Hz, e.g. 16000",
			     da->mic);
			return 2;
		}
		sp.mic = mmhal_src_mic(rate, 320, MMHAL_SIGNAL_TONE);
	}
	if (da->listen && parse_u32(da->listen, strlen(da->listen), 30000,
				    &sp.listen_ms)) {
		fail("--listen '%s': want 1..30000 ms", da->listen);
		return 2;
	}
	if (!da->camera && !da->mic && !da->image && !da->audio) {
		sp.camera = mmhal_src_camera(64, 48, MMHAL_FMT_NV12, 30);
		sp.mic = mmhal_src_mic(16000, 320, MMHAL_SIGNAL_TONE);
	}
	if (da->no_route)
		sp.route_off = MMHAL_ROUTE_ALL;
	sp.n_predict = n_predict ? n_predict : 1;
	sp.n_threads = n_threads > 0 ? n_threads : 0;
	sp.raw_prompt = raw;
	sp.temperature = temp;
	sp.seed = seed;
	sp.tier_mode = dec.tier_mode;
	sp.tier = dec.tier;
	sp.ctx_shift = dec.ctx_shift;
	sp.n_keep = dec.n_keep;
	sp.n_ctx = dec.n_ctx;

	ret = mmhal_dev_open(da->path, &dev);
	if (ret) {
		fail("cannot open %s: %s", da->path, mmhal_strerror(ret));
		return 1;
	}
	mmhal_mmproj_info(proj, &pi);
	if ((da->image && image_source(dev, da->image, &sp, &cam_copy,
				       &cam_src)) ||
	    (da->audio && audio_source(dev, da->audio, (uint32_t)pi.audio_rate,
				       &sp, &mic_copy, &mic_src))) {
		ret = -1;
		goto out;
	}
	ret = mmhal_session_create(dev, model, proj, &sp, &s, err,
				   sizeof(err));
	if (ret) {
		fail("%s: %s", da->path, err);
		goto out;
	}
	if (da->asks) {
		ret = run_continuous(s, da->path, text, da);
		goto out;
	}
	gs.t0 = now_ms();
	ret = mmhal_session_ask(s, text, da->json ? NULL : on_token, &gs, &r);
	if (ret) {
		fail("%s: %s", da->path, mmhal_session_error(s));
		goto out;
	}
	if (da->json) {
		json_answer(1, &r);
		json_summary(s, 0, 0);
		goto out;
	}
	printf("\n");
	if (r.flags & MMHAL_RESULT_IMAGE)
		printf("mmrun: camera frame %llu (%s %ux%u): sof %.6f s, eof %.6f s CLOCK_MONOTONIC (counter 0x%llx..0x%llx)\n",
		       (unsigned long long)r.frame_sequence,
		       fourcc_name(sp.camera.fourcc), sp.camera.width,
		       sp.camera.height, ns_s(r.frame_ts.sof_mono),
		       ns_s(r.frame_ts.eof_mono),
		       (unsigned long long)r.frame_ts.sof_raw,
		       (unsigned long long)r.frame_ts.eof_raw);
	if (r.flags & MMHAL_RESULT_AUDIO)
		printf("mmrun: microphone buffers %llu..%llu (%llu samples%s): sof %.6f s, eof %.6f s CLOCK_MONOTONIC\n",
		       (unsigned long long)r.audio_first_sequence,
		       (unsigned long long)r.audio_last_sequence,
		       (unsigned long long)r.audio_n_samples,
		       r.flags & MMHAL_RESULT_AUDIO_COPIED ? ", copied" :
							   ", in place",
		       ns_s(r.audio_first_ts.sof_mono),
		       ns_s(r.audio_last_ts.eof_mono));
	printf("mmrun: %s start of frame -> first token %.1f ms, -> last token %.1f ms (%d tokens)\n",
	       r.flags & MMHAL_RESULT_IMAGE ? "camera" : "microphone",
	       r.sof_to_first_token_ms, r.sof_to_last_token_ms, r.n_tokens);
	fflush(stdout);
	mmhal_session_stats(s, &st);
	fprintf(stderr,
		"mmrun: acquire %.1f ms, preprocess %.1f ms, encode %.1f ms, prefill %.1f ms (%d positions), decode %.1f ms; payload bytes copied %llu\n",
		r.acquire_ms, r.preprocess_ms, r.encode_ms, r.prefill_ms,
		r.n_prompt, r.decode_ms, (unsigned long long)st.bytes_copied);
	{
		struct mmhal_model_stats ms;

		if (!mmhal_ctx_stats(mmhal_session_ctx(s), &ms))
			print_tiers(model, &ms);
	}
out:
	mmhal_session_destroy(s);
	mmhal_chan_destroy(cam_copy);
	mmhal_chan_destroy(mic_copy);
	mmhal_buf_free(cam_src);
	mmhal_buf_free(mic_src);
	mmhal_dev_close(dev);
	return ret ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *model_path = NULL, *proj_path[2] = { NULL }, *text = NULL;
	const char *img_path[MAX_MEDIA], *wav_path[MAX_MEDIA];
	int n_img = 0, n_wav = 0, n_predict = 128, n_threads = 0, raw = 0;
	int tiles = 1, exact = 1, ret = 1, n_chunks = 0;
	float temp = 0;
	uint64_t seed = 0;
	struct mmhal_model_params mp = mmhal_model_default_params();
	struct mmhal_mmproj_params pp = mmhal_mmproj_default_params();
	struct mmhal_model *model = NULL;
	struct mmhal_mmproj *projs[2] = { NULL }, *proj, *vproj = NULL;
	struct mmhal_mmproj *aproj = NULL;
	struct mmhal_sampler *smp = NULL;
	struct mmhal_chunk *chunks[2 * MAX_MEDIA] = { NULL };
	struct mmhal_mmproj_info pi = { .size = sizeof(pi) };
	struct mmhal_mmproj_info pis[2];
	struct mmhal_model_stats st;
	struct mmhal_ctx *ctx, *own_ctx = NULL;
	struct gen_state gs = { 0, 0, 0 };
	double pre_ms = 0, enc_ms = 0, t_media, t_prefill0, t_prefill1;
	char err[512], *user = NULL, *prompt = NULL;
	size_t len = 0, cap;
	struct rusage ru;
	struct dev_args da = { 0 };
	uint32_t u;
	int n_gen = 0, n_proj = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--no-tiles")) {
			tiles = 0;
			continue;
		}
		if (!strcmp(a, "--audio-latency")) {
			exact = 0;
			continue;
		}
		if (!strcmp(a, "--raw")) {
			raw = 1;
			continue;
		}
		if (!strcmp(a, "--no-route")) {
			da.no_route = 1;
			continue;
		}
		if (!strcmp(a, "-j") || !strcmp(a, "--json")) {
			da.json = 1;
			continue;
		}
		if (!strcmp(a, "--on-change")) {
			da.on_change = 1;
			continue;
		}
		if (!v) {
			usage();
			return 2;
		}
		if (!strcmp(a, "--model") || !strcmp(a, "-m"))
			model_path = v;
		else if (!strcmp(a, "--mmproj")) {
			if (n_proj == 2) {
				fail("--mmproj %s: at most two (one vision, one audio mmproj, or one file with both)",
				     v);
				usage();
				return 2;
			}
			proj_path[n_proj++] = v;
		} else if (!strcmp(a, "--ctx")) {
			if (parse_u32(v, strlen(v), 1u << 20, &u)) {
				fail("--ctx '%s': want the context size in positions, 1..%u",
				     v, 1u << 20);
				usage();
				return 2;
			}
			dec.n_ctx = (int)u;
		}
		else if (!strcmp(a, "--image") && n_img < MAX_MEDIA)
			img_path[n_img++] = v;
		else if (!strcmp(a, "--audio") && n_wav < MAX_MEDIA)
			wav_path[n_wav++] = v;
		else if (!strcmp(a, "-p") || !strcmp(a, "--prompt"))
			text = v;
		else if (!strcmp(a, "-n"))
			n_predict = atoi(v);
		else if (!strcmp(a, "-t"))
			n_threads = atoi(v);
		else if (!strcmp(a, "--temp"))
			temp = strtof(v, NULL);
		else if (!strcmp(a, "--seed"))
			seed = strtoull(v, NULL, 0);
		else if (!strcmp(a, "--device"))
			da.path = v;
		else if (!strcmp(a, "--tier")) {
			if (dec.n_file == MMHAL_MAX_TIERS - 1) {
				fail("--tier: at most %d", MMHAL_MAX_TIERS - 1);
				usage();
				return 2;
			}
			dec.file[dec.n_file++] = v;
		} else if (!strcmp(a, "--tier-mode")) {
			if (parse_tier_mode(v)) {
				fail("--tier-mode '%s': want top, confidence or fixed:N", v);
				usage();
				return 2;
			}
		} else if (!strcmp(a, "--ctx-shift")) {
			if (parse_u32(v, strlen(v), 1u << 20, &u) &&
			    strcmp(v, "0")) {
				fail("--ctx-shift '%s': want the positions kept, 0..%u",
				     v, 1u << 20);
				usage();
				return 2;
			}
			dec.ctx_shift = 1;
			dec.n_keep = strcmp(v, "0") ? (int)u : 0;
		}
		else if (!strcmp(a, "--camera"))
			da.camera = v;
		else if (!strcmp(a, "--mic"))
			da.mic = v;
		else if (!strcmp(a, "--listen"))
			da.listen = v;
		else if (!strcmp(a, "--asks") || !strcmp(a, "--every")) {
			if (parse_u32(v, strlen(v), !strcmp(a, "--asks") ?
				      1000000 : 3600000, &u)) {
				fail("%s '%s': want a positive number", a, v);
				usage();
				return 2;
			}
			if (!strcmp(a, "--asks"))
				da.asks = u;
			else
				da.every_ms = u;
		}
		else {
			usage();
			return 2;
		}
		i++;
	}
	if (!model_path || !n_proj || !text || n_predict < 0) {
		usage();
		return 2;
	}
	if (!da.path && (da.camera || da.mic || da.listen || da.asks ||
			 da.every_ms || da.no_route || da.json ||
			 da.on_change)) {
		fail("--camera, --mic, --listen, --asks, --every, --on-change, --no-route and -j need --device");
		usage();
		return 2;
	}
	if (da.on_change && !da.asks) {
		fail("--on-change needs --asks N (the polls)");
		usage();
		return 2;
	}
	if (da.path && n_proj > 1) {
		fail("--device: one --mmproj (a device session takes one file with the encoders its sources need)");
		usage();
		return 2;
	}
	if (da.path && (n_img > 1 || n_wav > 1 || (n_img && da.camera) ||
			(n_wav && da.mic))) {
		fail("--device: one --image instead of --camera, one --audio instead of --mic");
		usage();
		return 2;
	}
	if (da.path) {
		da.image = n_img ? img_path[0] : NULL;
		da.audio = n_wav ? wav_path[0] : NULL;
	}
	if (da.path) {
		/* the command line first: a usage error loads no model */
		struct mmhal_src cam;
		uint32_t x;

		if ((da.camera && parse_camera(da.camera, &cam)) ||
		    (da.mic && parse_u32(da.mic, strlen(da.mic), 192000, &x) &&
		     fail("--mic '%s': want a rate in Hz, e.g. 16000", da.mic)) ||
		    (da.listen &&
		     parse_u32(da.listen, strlen(da.listen), 30000, &x) &&
		     fail("--listen '%s': want 1..30000 ms", da.listen))) {
			usage();
			return 2;
		}
	}

	mp.n_threads = n_threads;
	mp.n_ctx = dec.n_ctx;
	if (mmhal_model_load(model_path, &mp, &model, err, sizeof(err))) {
		fail("%s: %s", model_path, err);
		goto out;
	}
	for (int t = 0; t < dec.n_file; t++)
		if (mmhal_model_add_tier(model, dec.file[t], err, sizeof(err))) {
			fail("%s: %s", dec.file[t], err);
			goto out;
		}
	pp.n_threads = n_threads;
	pp.image_tiles = tiles;
	pp.audio_exact = exact;
	for (int i = 0; i < n_proj; i++) {
		if (mmhal_mmproj_load(proj_path[i], model, &pp, &projs[i], err,
				      sizeof(err))) {
			fail("%s: %s", proj_path[i], err);
			goto out;
		}
		pis[i] = (struct mmhal_mmproj_info){ .size = sizeof(pis[i]) };
		mmhal_mmproj_info(projs[i], &pis[i]);
	}
	/* two files: one vision encoder and one audio encoder between them */
	if (n_proj == 2 && ((pis[0].has_vision && pis[1].has_vision) ||
			    (pis[0].has_audio && pis[1].has_audio))) {
		fail("--mmproj %s and --mmproj %s: both have %s encoder; give one vision and one audio mmproj, or one file with both",
		     proj_path[0], proj_path[1],
		     pis[0].has_vision && pis[1].has_vision ? "a vision" :
							    "an audio");
		goto out;
	}
	for (int i = 0; i < n_proj; i++) {
		if (pis[i].has_vision)
			vproj = projs[i];
		if (pis[i].has_audio) {
			aproj = projs[i];
			pi = pis[i];
		}
	}
	proj = projs[0];
	if (n_img && !vproj) {
		fail("%s: no --mmproj has a vision encoder", img_path[0]);
		goto out;
	}
	if (n_wav && !aproj) {
		fail("%s: no --mmproj has an audio encoder", wav_path[0]);
		goto out;
	}
	if (n_proj == 1)
		mmhal_mmproj_info(proj, &pi);
	if (da.path) {
		ret = run_device(&da, model, proj, text, n_predict, n_threads,
				 raw, temp, seed);
		goto out;
	}

	t_media = now_ms();
	for (int i = 0; i < n_img; i++) {
		struct mmhal_chunk_info ci = { .size = sizeof(ci) };
		struct media_image pic;
		int r;

		if (media_read_image(img_path[i], &pic, err, sizeof(err))) {
			fail("%s", err);
			goto out;
		}
		r = mmhal_encode_image(vproj, &(struct mmhal_image){
					       .format = pic.fourcc,
					       .width = pic.width,
					       .height = pic.height,
					       .plane = { pic.pix },
					       .stride = { pic.stride } },
				       &chunks[n_chunks], err, sizeof(err));
		media_image_free(&pic);
		if (r) {
			fail("%s: %s", img_path[i], err);
			goto out;
		}
		mmhal_chunk_info(chunks[n_chunks++], &ci);
		pre_ms += ci.preprocess_ms;
		enc_ms += ci.encode_ms;
	}
	for (int i = 0; i < n_wav; i++) {
		struct mmhal_chunk_info ci = { .size = sizeof(ci) };
		int16_t *pcm = NULL;
		size_t n = 0;
		int r;

		if (media_read_wav(wav_path[i], (uint32_t)pi.audio_rate, &pcm,
				   &n, err, sizeof(err))) {
			fail("%s", err);
			goto out;
		}
		r = mmhal_encode_audio(aproj,
				       (struct mmhal_audio[]){ mmhal_audio_s16(
					       pcm, n, (uint32_t)pi.audio_rate) },
				       &chunks[n_chunks], err, sizeof(err));
		free(pcm);
		if (r) {
			fail("%s: %s", wav_path[i], err);
			goto out;
		}
		mmhal_chunk_info(chunks[n_chunks++], &ci);
		pre_ms += ci.preprocess_ms;
		enc_ms += ci.encode_ms;
	}

	/* the user's message: media first unless the text places them */
	cap = strlen(text) + (size_t)n_chunks * sizeof(MMHAL_MEDIA_MARKER) + 2;
	user = malloc(cap);
	if (!user) {
		fail("out of memory");
		goto out;
	}
	user[0] = 0;
	if (!strstr(text, MMHAL_MEDIA_MARKER)) {
		for (int i = 0; i < n_chunks; i++)
			strcat(user, MMHAL_MEDIA_MARKER);
		if (n_chunks)
			strcat(user, "\n");
	}
	strcat(user, text);
	if (raw) {
		prompt = user;
		user = NULL;
	} else {
		struct mmhal_chat_msg msg = { "user", user };
		int r = mmhal_model_chat_format(model, &msg, 1, 1, NULL, 0,
						&len);

		if (r && r != -ENOSPC) {
			fail("the model's chat template is not supported (%d); use --raw",
			     r);
			goto out;
		}
		prompt = malloc(len + 1);
		if (!prompt || mmhal_model_chat_format(model, &msg, 1, 1, prompt,
						       len + 1, &len)) {
			fail("chat template failed");
			goto out;
		}
	}

	ctx = mmhal_model_ctx(model);
	if (dec.tier_mode || dec.ctx_shift) {
		struct mmhal_ctx_params cp = mmhal_ctx_default_params();

		cp.n_threads = n_threads;
		cp.n_ctx = dec.n_ctx;
		cp.tier_mode = dec.tier_mode;
		cp.tier = dec.tier;
		cp.ctx_shift = dec.ctx_shift;
		cp.n_keep = dec.n_keep;
		if (mmhal_ctx_create(model, &cp, &own_ctx, err, sizeof(err))) {
			fail("session: %s", err);
			goto out;
		}
		ctx = own_ctx;
	}
	t_prefill0 = now_ms();
	if (mmhal_ctx_eval_prompt(ctx, prompt, (const struct mmhal_chunk *const *)chunks,
				  n_chunks, raw, NULL)) {
		fail("evaluating the prompt: %s", mmhal_ctx_error(ctx));
		goto out;
	}
	t_prefill1 = now_ms();
	if (temp > 0) {
		struct mmhal_sampler_params sp = mmhal_sampler_default_params();

		sp.temperature = temp;
		sp.seed = seed;
		if (mmhal_sampler_create(&sp, &smp)) {
			fail("sampler: bad parameters");
			goto out;
		}
	}
	gs.t0 = t_prefill1;
	mmhal_ctx_stats_reset(ctx);
	if (mmhal_ctx_generate(ctx, NULL, 0, n_predict, smp, 0, NULL, on_token,
			       &gs, &n_gen)) {
		fail("generating: %s", mmhal_ctx_error(ctx));
		goto out;
	}
	printf("\n");
	mmhal_ctx_stats(ctx, &st);
	getrusage(RUSAGE_SELF, &ru);
	fprintf(stderr,
		"mmrun: preprocess %.1f ms, encode %.1f ms, prefill %.1f ms (%d positions), first token %.1f ms after the media, %d tokens at %.1f tokens/s, peak RSS %.1f MiB\n",
		pre_ms, enc_ms, t_prefill1 - t_prefill0,
		mmhal_ctx_n_past(ctx) - n_gen,
		(gs.n ? gs.t_first : t_prefill1) - t_media, n_gen,
		st.decode_ms > 0 ? st.decode_tokens * 1e3 / st.decode_ms : 0.0,
		ru.ru_maxrss / 1024.0);
	print_tiers(model, &st);
	ret = 0;
out:
	for (int i = 0; i < n_chunks; i++)
		mmhal_chunk_free(chunks[i]);
	free(user);
	free(prompt);
	mmhal_sampler_free(smp);
	mmhal_ctx_free(own_ctx);
	mmhal_mmproj_free(projs[0]);
	mmhal_mmproj_free(projs[1]);
	mmhal_model_free(model);
	return ret ? (ret == 2 ? 2 : 1) : 0;
}

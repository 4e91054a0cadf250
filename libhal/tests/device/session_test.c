// SPDX-License-Identifier: MIT
/*
 * mmhal_session_test - the multimodal model asked about an mmedge device's
 * camera and microphone (mmhal_session.h), on a real device
 *
 *	mmhal_session_test [--skip-missing] --mmgguf MMGGUF [DEVICE]
 *	mmhal_session_test --wrapped --mmgguf MMGGUF
 *
 * Generates a tiny LLM and a tiny vision + audio mmproj with MMGGUF (mmgguf
 * gen, random weights) in a temporary directory, then: bad parameters are
 * refused naming the field; an NV12 camera + microphone session answers
 * twice, each answer with the frame's and the audio window's sequence and
 * timestamps equal to the in-band records of the buffers they were read
 * from, the pointers given to the encoders inside those buffers' mappings
 * (no copy before the encoders: the session's copy counters stay 0) and
 * a positive start-of-frame -> first token time; a GREY camera alone; a
 * caller's microphone channel whose buffers are shorter than the window
 * (the one copy the session makes, counted); routing: a static scene
 * and silence given by the caller through copy channels (the image
 * encoded once and its positions kept in the cache, the same answer as
 * from an empty cache; silence not encoded, a tone encoded, a changed
 * scene encoded again), the same on the virtual sources (a static
 * camera's image used again, a silent microphone not encoded; a moving
 * camera at 10 frames/s encoded again and a noise microphone encoded,
 * each scene difference equal to the one recomputed from the documented
 * patterns), the virtual IMU's motion forcing a fresh frame,
 * the SLO percentiles against the answers' own figures, and the
 * timeline: sensor clocks of -2 ms / -30 ppm (camera) and +3 ms / +50
 * ppm (microphone) mapped back onto the SoC counter's CLOCK_MONOTONIC
 * stamps within the session's clock fits' uncertainty, and the audio
 * window's pairing with the camera frames as the SoC stamps give it. Prints TAP;
 * DEVICE defaults
 * to /dev/mmedge0 (--skip-missing: skip all if it is absent). Meant to
 * run in the test VM, with mmedge.ko loaded.
 *
 * --wrapped runs on the host, without the driver: the device is a pipe
 * wrapped by mmhal_dev_wrap() (as buf_chan_test does), which answers
 * every ioctl with ENOTTY. The parameter checks run in full; a session
 * whose channels cannot be created fails naming the step and the source
 * and leaves nothing behind (the sanitized build's leak check); the
 * cases that need frames skip.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mmhal.h"
#include "mmhal_model.h"
#include "mmhal_session.h"
#include "device/mmhal_internal.h"
#include "tests/tap.h"

static const char *dev_path = MMHAL_DEFAULT_DEV;
static const char *mmgguf;
static char dir[64];
static char model_path[128], proj_path[128];
static struct mmhal_dev *dev;
static struct mmhal_model *model;
static struct mmhal_mmproj *proj;
static int wrapped;		/* --wrapped: a pipe stands for the device */
static int pipe_fds[2] = { -1, -1 };

#define NEED_DEVICE() do {						\
	if (wrapped)							\
		SKIP("needs the mmedge device (the VM runs it)");	\
} while (0)

static int spawn(char *const argv[])
{
	pid_t pid = fork();
	int st;

	if (pid < 0)
		return -1;
	if (!pid) {
		execv(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_setup(void)
{
	struct mmhal_model_params mp = mmhal_model_default_params();
	struct mmhal_mmproj_params pp = mmhal_mmproj_default_params();
	char err[512];
	int ret;

	snprintf(dir, sizeof(dir), "/tmp/mmhal-session-XXXXXX");
	if (!mkdtemp(dir))
		BAIL_OUT("mkdtemp");
	snprintf(model_path, sizeof(model_path), "%s/model.gguf", dir);
	snprintf(proj_path, sizeof(proj_path), "%s/mmproj.gguf", dir);
	{
		char *gm[] = { (char *)mmgguf, "gen", "--shape", "tiny",
			       "--tokenizer", "smolvlm", "--type", "f32", "-o",
			       model_path, NULL };
		char *gp[] = { (char *)mmgguf, "gen", "--vision", "tiny",
			       "--audio", "tiny", "--type", "q8_0", "-o",
			       proj_path, NULL };

		if (spawn(gm) || spawn(gp))
			BAIL_OUT("mmgguf gen failed");
	}
	ret = mmhal_model_load(model_path, &mp, &model, err, sizeof(err));
	if (ret) {
		tap_diag("%s: %s", model_path, err);
		BAIL_OUT("cannot load the model");
	}
	pp.audio_exact = 0;	/* windows shorter than 30 s */
	ret = mmhal_mmproj_load(proj_path, model, &pp, &proj, err, sizeof(err));
	if (ret) {
		tap_diag("%s: %s", proj_path, err);
		BAIL_OUT("cannot load the mmproj");
	}
	if (wrapped) {
		if (pipe(pipe_fds) || mmhal_dev_wrap(pipe_fds[0], NULL, &dev))
			BAIL_OUT("cannot wrap a pipe as the device");
		return;
	}
	ret = mmhal_dev_open(dev_path, &dev);
	if (ret) {
		tap_diag("mmhal_dev_open(%s): %s", dev_path,
			 mmhal_strerror(ret));
		BAIL_OUT("cannot open the device");
	}
}

/* create must fail with @want and a message containing @word */
static void refused(const struct mmhal_session_params *p, int want,
		    const char *word, int line)
{
	struct mmhal_session *s = (struct mmhal_session *)1;
	char err[256] = "";
	int ret = mmhal_session_create(dev, model, proj, p, &s, err,
				       sizeof(err));

	if (ret != want || s || !strstr(err, word)) {
		tap_diag("line %d: got %d (%s), want %d naming '%s'", line, ret,
			 err, want, word);
		tap_cur_failed = 1;
	}
	mmhal_session_destroy(ret ? NULL : s);
}

#define REFUSED(p, want, word) refused(p, want, word, __LINE__)

static struct mmhal_session_params av_params(void)
{
	struct mmhal_session_params p = mmhal_session_default_params();

	p.camera = mmhal_src_camera(64, 48, MMHAL_FMT_NV12, 30);
	p.mic = mmhal_src_mic(16000, 320, MMHAL_SIGNAL_TONE);
	p.listen_ms = 500;
	p.n_predict = 6;
	p.n_threads = 2;
	return p;
}

static void test_bad_params(void)
{
	struct mmhal_session_params p;
	struct mmhal_session *s = NULL;
	struct mmhal_chan *ch = NULL;
	struct mmhal_src cam = mmhal_src_camera(64, 48, MMHAL_FMT_GREY, 30);
	char err[256];

	p = av_params();
	CHECK_INT(mmhal_session_create(NULL, model, proj, &p, &s, err,
				       sizeof(err)), -EINVAL);
	CHECK(strstr(err, "dev") != NULL);
	CHECK_INT(mmhal_session_create(dev, NULL, proj, &p, &s, err,
				       sizeof(err)), -EINVAL);
	CHECK_INT(mmhal_session_create(dev, model, NULL, &p, &s, err,
				       sizeof(err)), -EINVAL);
	CHECK_INT(mmhal_session_create(dev, model, proj, NULL, &s, err,
				       sizeof(err)), -EINVAL);
	CHECK_INT(mmhal_session_create(dev, model, proj, &p, NULL, err,
				       sizeof(err)), -EINVAL);
	p.size = 8;
	REFUSED(&p, -EINVAL, "size");
	p = av_params();
	p.reserved[3] = 1;
	REFUSED(&p, -EINVAL, "reserved[3]");
	p = av_params();
	memset(&p.camera, 0, sizeof(p.camera));
	memset(&p.mic, 0, sizeof(p.mic));
	REFUSED(&p, -EINVAL, "neither");
	p = av_params();
	p.camera.fourcc = MMHAL_FMT_S16LE;
	REFUSED(&p, -EINVAL, "camera.fourcc");
	p = av_params();
	p.mic.type = MMHAL_SRC_CAMERA;
	REFUSED(&p, -EINVAL, "mic.type");
	p = av_params();
	p.mic = mmhal_src_mic(8000, 160, MMHAL_SIGNAL_TONE);
	REFUSED(&p, -EINVAL, "16000");
	p = av_params();
	p.listen_ms = 30001;
	REFUSED(&p, -EINVAL, "listen_ms");
	p = av_params();
	p.camera_bufs = 1;
	REFUSED(&p, -EINVAL, "camera_bufs");
	p = av_params();
	p.n_predict = -1;
	REFUSED(&p, -EINVAL, "n_predict");
	p = av_params();
	p.wait_ms = 600001;
	REFUSED(&p, -EINVAL, "wait_ms");
	p = av_params();
	p.raw_prompt = 2;
	REFUSED(&p, -EINVAL, "raw_prompt");
	p = av_params();
	p.route_off = 8;
	REFUSED(&p, -EINVAL, "route_off");
	p = av_params();
	p.scene_threshold = 256;
	REFUSED(&p, -EINVAL, "scene_threshold");
	p = av_params();
	p.vad_threshold_dbfs = 3;
	REFUSED(&p, -EINVAL, "vad_threshold_dbfs");
	p = av_params();
	p.vad_min_speech = 1.5f;
	REFUSED(&p, -EINVAL, "vad_min_speech");
	p = av_params();
	p.imu_gyro_threshold = -1;
	REFUSED(&p, -EINVAL, "imu_gyro_threshold");
	p = av_params();
	p.slo_window = 65537;
	REFUSED(&p, -EINVAL, "slo_window");
	p = av_params();
	p.imu = mmhal_src_imu(1000, 0);
	REFUSED(&p, -EINVAL, "params.imu");
	p = av_params();
	p.camera_copy_src = (struct mmhal_buf *)&p;
	REFUSED(&p, -EINVAL, "camera_copy_src");
	p = av_params();
	p.mic_sensor_drift_ppb = MMHAL_SENSOR_DRIFT_MAX + 1;
	REFUSED(&p, -EINVAL, "mic_sensor_drift_ppb");
	p = av_params();
	p.camera_sensor_offset_ns = -MMHAL_SENSOR_OFFSET_MAX - 1;
	REFUSED(&p, -EINVAL, "camera_sensor_offset_ns");
	p = av_params();
	p.clock_every_asks = 65537;
	REFUSED(&p, -EINVAL, "clock_every_asks");
	p = av_params();
	p.mic_bufs = 3;
	p.mic.period = 320;
	p.mic_chan = NULL;
	p.listen_ms = 500;
	memset(&p.camera, 0, sizeof(p.camera));
	/* the driver's GREY 64x48 channel, or a handle of one (--wrapped) */
	if (wrapped)
		CHECK_INT(mmhal_chan_wrap(dev, 3, 64 * 48, 64 * 48, &ch), 0);
	else
		CHECK_INT(mmhal_chan_create(dev, &cam, NULL, &ch), 0);
	p.camera_chan = ch;
	REFUSED(&p, -EINVAL, "camera_chan");
	/* a caller's channel whose frames are not the source's */
	p = av_params();
	memset(&p.mic, 0, sizeof(p.mic));
	p.camera_chan = ch;	/* GREY 64x48, the params say NV12 */
	REFUSED(&p, -EINVAL, "frames of 3072 bytes");
	p.camera_sensor_drift_ppb = 5;	/* a caller's channel has its clock */
	REFUSED(&p, -EINVAL, "camera_sensor_*");
	mmhal_chan_destroy(ch);
	if (wrapped)
		return;	/* a copy channel is the driver's */
	/* a copy channel without a source buffer */
	ch = NULL;
	CHECK_INT(mmhal_chan_create_dir(dev, MMHAL_CHAN_COPY, NULL, &ch), 0);
	p = av_params();
	memset(&p.mic, 0, sizeof(p.mic));
	p.camera_chan = ch;
	REFUSED(&p, -EINVAL, "camera_copy_src");
	mmhal_chan_destroy(ch);
}

struct cb_count {
	int n;
	size_t bytes;
};

static int count_cb(int32_t tok, const char *piece, size_t len, void *arg)
{
	struct cb_count *c = arg;

	(void)tok;
	(void)piece;
	c->n++;
	c->bytes += len;
	return 0;
}

/* p lies in [base, base + size) with n bytes after it */
static int inside(const void *p, size_t n, const void *base, uint64_t size)
{
	const char *a = p, *b = base;

	return a >= b && n <= size && (uint64_t)(a - b) <= size - n;
}

/* The record in @buf (filled by @chan) says @seq and @ts. */
static void check_record(struct mmhal_buf *buf, struct mmhal_chan *chan,
			 uint64_t seq, const struct mmhal_timestamps *ts)
{
	const struct mmhal_frame_meta *m = NULL;

	CHECK_INT(mmhal_buf_begin_cpu(buf, MMHAL_SYNC_READ), 0);
	CHECK_INT(mmhal_frame_meta(buf, chan, &m), 0);
	if (m) {
		CHECK_INT(m->sequence, seq);
		CHECK_INT(m->ts.sof_raw, ts->sof_raw);
		CHECK_INT(m->ts.eof_raw, ts->eof_raw);
		CHECK_INT(m->ts.sof_mono, ts->sof_mono);
		CHECK_INT(m->ts.eof_mono, ts->eof_mono);
		CHECK(!memcmp(&m->ts, ts, sizeof(*ts)));
	}
	CHECK_INT(mmhal_buf_end_cpu(buf, MMHAL_SYNC_READ), 0);
}

/* Answer checks shared by the camera sessions. */
static void check_frame(struct mmhal_session *s,
			const struct mmhal_session_result *r,
			const struct mmhal_src *cam)
{
	struct mmhal_chan *chan = mmhal_session_chan(s, MMHAL_SRC_CAMERA);
	size_t luma = (size_t)cam->width * cam->height;
	void *map = NULL;

	CHECK(r->flags & MMHAL_RESULT_IMAGE);
	if (!r->frame_buf)
		FAIL("no frame buffer in the result");
	CHECK_INT(mmhal_buf_map(r->frame_buf, &map), 0);
	/* the encoder was given the buffer's own mapping */
	CHECK(r->image_plane[0] == map);
	if (cam->fourcc == MMHAL_FMT_NV12) {
		CHECK(r->image_plane[1] == (char *)map + luma);
		CHECK(inside(r->image_plane[1], luma / 2, map,
			     mmhal_chan_frame_size(chan)));
		CHECK_INT(r->image_stride[1], cam->width);
	} else {
		CHECK(r->image_plane[1] == NULL);
	}
	CHECK(inside(r->image_plane[0], luma, map, mmhal_buf_size(r->frame_buf)));
	CHECK_INT(r->image_stride[0], cam->width *
		  (cam->fourcc == MMHAL_FMT_RGB24 ? 3 : 1));
	check_record(r->frame_buf, chan, r->frame_sequence, &r->frame_ts);
	CHECK(r->frame_ts.sof_mono > 0);
	CHECK(r->frame_ts.sof_mono <= r->frame_ts.eof_mono);
	CHECK(r->frame_ts.eof_mono < r->first_token_mono);
	CHECK(r->first_token_mono <= r->last_token_mono);
	CHECK(r->sof_to_first_token_ms > 0);
	CHECK(r->sof_to_first_token_ms <= r->sof_to_last_token_ms);
	CHECK(r->sof_to_first_token_ms ==
	      (double)(r->first_token_mono - r->frame_ts.sof_mono) / 1e6);
}

static void check_answer(const struct mmhal_session_result *r,
			 const struct cb_count *c)
{
	CHECK(r->n_tokens > 0);
	CHECK_INT(c->n, r->n_tokens);
	CHECK_INT(c->bytes, r->text_len);
	CHECK(r->text != NULL);
	if (r->text)
		CHECK_INT(strlen(r->text), r->text_len);
	CHECK(r->n_prompt > 0);
	CHECK(r->encode_ms > 0);
	CHECK(r->prefill_ms > 0);
}

static void diag_result(const char *what, const struct mmhal_session_result *r)
{
	tap_diag("%s: frame %" PRIu64 ", audio %" PRIu64 "..%" PRIu64
		 ", %d tokens: sof->first token %.1f ms, ->last %.1f ms (acquire %.1f, preprocess %.1f, encode %.1f, prefill %.1f, decode %.1f ms), copied %" PRIu64 " B",
		 what, r->frame_sequence, r->audio_first_sequence,
		 r->audio_last_sequence, r->n_tokens, r->sof_to_first_token_ms,
		 r->sof_to_last_token_ms, r->acquire_ms, r->preprocess_ms,
		 r->encode_ms, r->prefill_ms, r->decode_ms, r->bytes_copied);
}

static void test_nv12_and_mic_ask_twice(void)
{
	struct mmhal_session_params p = av_params();
	struct mmhal_session_stats st = { .size = sizeof(st) };
	struct mmhal_session_result r[2];
	struct mmhal_session *s = NULL;
	struct mmhal_chan *mic;
	char err[256];
	int ret;

	NEED_DEVICE();

	/* every frame encoded: the zero-copy figures of two encodes */
	p.route_off = MMHAL_ROUTE_SCENE;
	ret = mmhal_session_create(dev, model, proj, &p, &s, err, sizeof(err));
	if (ret)
		FAIL("create: %s", err);
	mic = mmhal_session_chan(s, MMHAL_SRC_MIC);
	CHECK(mic != NULL);
	CHECK(mmhal_session_chan(s, MMHAL_SRC_IMU) == NULL);
	for (int k = 0; k < 2; k++) {
		struct cb_count c = { 0, 0 };
		void *map = NULL;

		memset(&r[k], 0, sizeof(r[k]));
		r[k].size = sizeof(r[k]);
		ret = mmhal_session_ask(s, "What do you see and hear?",
					count_cb, &c, &r[k]);
		if (ret)
			FAIL("ask %d: %s", k, mmhal_session_error(s));
		diag_result(k ? "NV12 + mic, ask 2" : "NV12 + mic, ask 1",
			    &r[k]);
		tap_diag("answer: \"%s\"", r[k].text);
		check_answer(&r[k], &c);
		check_frame(s, &r[k], &p.camera);
		/* the audio window, in place in its one buffer */
		CHECK_INT(r[k].flags & (MMHAL_RESULT_AUDIO |
					MMHAL_RESULT_AUDIO_COPIED),
			  MMHAL_RESULT_AUDIO);
		CHECK_INT(r[k].audio_n_bufs, 1);
		CHECK_INT(r[k].audio_n_samples, 8000);
		CHECK_INT(r[k].audio_first_sequence, r[k].audio_last_sequence);
		CHECK_INT(mmhal_chan_frame_size(mic), 16000);
		if (!r[k].audio_last_buf)
			FAIL("no audio buffer in the result");
		CHECK_INT(mmhal_buf_map(r[k].audio_last_buf, &map), 0);
		CHECK(inside(r[k].audio_samples, 16000, map,
			     mmhal_chan_frame_size(mic)));
		check_record(r[k].audio_last_buf, mic, r[k].audio_last_sequence,
			     &r[k].audio_last_ts);
		CHECK_INT(r[k].bytes_copied, 0);
		/* the tone (-15 dBFS) is speech-like at -40 dBFS */
		CHECK_INT(r[k].image_route, MMHAL_ROUTE_ALWAYS);
		CHECK_INT(r[k].audio_route, MMHAL_ROUTE_SPEECH);
		CHECK_INT(r[k].encoders_run, 2);
		CHECK(r[k].vad_speech_frac > 0.9f);
		CHECK(r[k].vad_max_dbfs > -16 && r[k].vad_max_dbfs < 0);
		CHECK_INT(r[k].image_frame_sequence, r[k].frame_sequence);
	}
	/* the second answer is about newer data */
	CHECK(r[1].frame_sequence > r[0].frame_sequence);
	CHECK(r[1].frame_ts.sof_mono > r[0].frame_ts.sof_mono);
	CHECK(r[1].audio_last_sequence >= r[0].audio_last_sequence);
	CHECK(r[1].ask_mono > r[0].last_token_mono);
	CHECK_INT(mmhal_session_stats(s, &st), 0);
	CHECK_INT(st.asks, 2);
	CHECK_INT(st.frames_used, 2);
	CHECK_INT(st.mic_bufs_used, 2);
	CHECK_INT(st.image_bytes_read_in_place, 2 * 64 * 48 * 3 / 2);
	CHECK_INT(st.audio_bytes_read_in_place, 2 * 16000);
	CHECK_INT(st.image_bytes_copied, 0);
	CHECK_INT(st.audio_bytes_copied, 0);
	CHECK_INT(st.bytes_copied, 0);
	CHECK_INT(st.image_route[MMHAL_ROUTE_ALWAYS], 2);
	CHECK_INT(st.audio_route[MMHAL_ROUTE_SPEECH], 2);
	CHECK_INT(st.encoder_runs, 4);
	CHECK_INT(st.encoder_runs_avoided, 0);
	tap_diag("payload bytes copied by the session: %" PRIu64 " (image %" PRIu64
		 ", audio %" PRIu64 "); read in place: image %" PRIu64
		 ", audio %" PRIu64, st.bytes_copied, st.image_bytes_copied,
		 st.audio_bytes_copied, st.image_bytes_read_in_place,
		 st.audio_bytes_read_in_place);
	mmhal_session_destroy(s);
}

static void test_grey_camera_only(void)
{
	struct mmhal_session_params p = mmhal_session_default_params();
	struct mmhal_session_result r = { .size = sizeof(r) };
	struct mmhal_session *s = NULL;
	struct cb_count c = { 0, 0 };
	char err[256];
	int ret;

	NEED_DEVICE();

	p.camera = mmhal_src_camera(48, 32, MMHAL_FMT_GREY, 60);
	p.n_predict = 4;
	p.n_threads = 2;
	p.raw_prompt = 1;
	ret = mmhal_session_create(dev, model, proj, &p, &s, err, sizeof(err));
	if (ret)
		FAIL("create: %s", err);
	CHECK(mmhal_session_chan(s, MMHAL_SRC_MIC) == NULL);
	/* two markers for one source */
	CHECK_INT(mmhal_session_ask(s, "<__media__><__media__>x", NULL, NULL,
				    &r), -EINVAL);
	CHECK(strstr(mmhal_session_error(s), "prompt: 2 media markers") != NULL);
	CHECK_INT(mmhal_session_ask(s, "x", NULL, NULL, NULL), -EINVAL);
	r.size = 4;
	CHECK_INT(mmhal_session_ask(s, "x", NULL, NULL, &r), -EINVAL);
	CHECK(strstr(mmhal_session_error(s), "result.size") != NULL);
	r.size = sizeof(r);
	ret = mmhal_session_ask(s, "<__media__> Describe it.", count_cb, &c,
				&r);
	if (ret)
		FAIL("ask: %s", mmhal_session_error(s));
	diag_result("GREY camera", &r);
	check_answer(&r, &c);
	check_frame(s, &r, &p.camera);
	CHECK(!(r.flags & MMHAL_RESULT_AUDIO));
	CHECK(r.audio_samples == NULL);
	mmhal_session_destroy(s);
}

/* A caller's microphone with 20 ms buffers and a 200 ms window. */
static void test_mic_window_spans_buffers(void)
{
	struct mmhal_session_params p = mmhal_session_default_params();
	struct mmhal_session_stats st = { .size = sizeof(st) };
	struct mmhal_session_result r = { .size = sizeof(r) };
	struct mmhal_chan_params cp = mmhal_chan_default_params();
	struct mmhal_session *s = NULL;
	struct mmhal_chan *mic = NULL;
	const int16_t *last;
	char err[256];
	void *map = NULL;
	int ret;

	NEED_DEVICE();

	p.mic = mmhal_src_mic(16000, 320, MMHAL_SIGNAL_CHIRP);
	p.listen_ms = 200;
	p.n_predict = 3;
	p.n_threads = 2;
	cp.overrun = MMHAL_OVERRUN_DROP_OLDEST;
	CHECK_INT(mmhal_chan_create(dev, &p.mic, &cp, &mic), 0);
	if (!mic)
		FAIL("no channel");
	p.mic_chan = mic;
	ret = mmhal_session_create(dev, model, proj, &p, &s, err, sizeof(err));
	if (ret) {
		mmhal_chan_destroy(mic);
		FAIL("create: %s", err);
	}
	CHECK(mmhal_session_chan(s, MMHAL_SRC_MIC) == mic);
	ret = mmhal_session_ask(s, "What is that sound?", NULL, NULL, &r);
	if (ret) {
		tap_diag("ask: %s", mmhal_session_error(s));
		tap_cur_failed = 1;
		goto out;
	}
	diag_result("mic in 20 ms buffers", &r);
	/* the caller's capture channel has a sensor clock: mapped too */
	CHECK_INT(r.flags, MMHAL_RESULT_AUDIO | MMHAL_RESULT_AUDIO_COPIED |
		  MMHAL_RESULT_AUDIO_MAPPED);
	CHECK_INT(r.audio_n_samples, 3200);
	CHECK_INT(r.audio_n_bufs, 10);
	CHECK_INT(r.audio_last_sequence - r.audio_first_sequence + 1,
		  r.audio_n_bufs);
	CHECK_INT(r.bytes_copied, 6400);
	CHECK(r.sof_to_first_token_ms > 0);
	CHECK(r.sof_to_first_token_ms ==
	      (double)(r.first_token_mono - r.audio_first_ts.sof_mono) / 1e6);
	/* the copy ends with the last buffer's samples */
	CHECK_INT(mmhal_buf_map(r.audio_last_buf, &map), 0);
	last = map;
	CHECK(!inside(r.audio_samples, 6400, map, mmhal_buf_size(r.audio_last_buf)));
	if (map && r.audio_samples)
		CHECK(!memcmp(r.audio_samples + 3200 - 320, last, 640));
	check_record(r.audio_last_buf, mic, r.audio_last_sequence,
		     &r.audio_last_ts);
	CHECK_INT(mmhal_session_stats(s, &st), 0);
	CHECK_INT(st.audio_bytes_copied, 6400);
	CHECK_INT(st.bytes_copied, 6400);
	CHECK_INT(st.image_bytes_copied, 0);
out:
	mmhal_session_destroy(s);
	mmhal_chan_destroy(mic);
}

/* Fill a caller's buffer through its mapping. */
static void *buf_write_begin(struct mmhal_buf *b)
{
	void *map = NULL;

	if (mmhal_buf_map(b, &map) ||
	    mmhal_buf_begin_cpu(b, MMHAL_SYNC_WRITE))
		return NULL;
	return map;
}

static void buf_write_end(struct mmhal_buf *b)
{
	CHECK_INT(mmhal_buf_end_cpu(b, MMHAL_SYNC_WRITE), 0);
}

static int ask_tokens(struct mmhal_session *s, const char *prompt,
		      struct mmhal_session_result *r, int32_t *toks, int *n)
{
	int ret;

	memset(r, 0, sizeof(*r));
	r->size = sizeof(*r);
	ret = mmhal_session_ask(s, prompt, NULL, NULL, r);
	if (ret) {
		tap_diag("ask: %s", mmhal_session_error(s));
		return ret;
	}
	*n = r->n_tokens;
	memcpy(toks, r->tokens, (size_t)r->n_tokens * sizeof(*toks));
	tap_diag("image %s (diff %.2f, frame %" PRIu64 " stands for %" PRIu64
		 "), audio %s (%.0f %% speech, %.1f dBFS), %u encoder(s), %d of %d positions kept, sof->first %.1f ms",
		 mmhal_route_name(r->image_route), (double)r->scene_diff,
		 r->frame_sequence, r->image_frame_sequence,
		 mmhal_route_name(r->audio_route),
		 100.0 * (double)r->vad_speech_frac, (double)r->vad_max_dbfs,
		 r->encoders_run, r->reused_positions, r->n_prompt,
		 r->sof_to_first_token_ms);
	return 0;
}

/*
 * A static scene and silence from the caller through copy channels:
 * routing and KV reuse.
 */
static void test_routing_static_scene_and_silence(void)
{
	const char *q = "<__media__>\n<__media__>\nWhat is it?";
	struct mmhal_session_params p = mmhal_session_default_params();
	struct mmhal_session_stats st = { .size = sizeof(st) };
	struct mmhal_session_slo slo = { .size = sizeof(slo) };
	struct mmhal_session_result r;
	struct mmhal_session *s = NULL;
	struct mmhal_chan *cc = NULL, *mc = NULL;
	struct mmhal_buf *fsrc = NULL, *psrc = NULL;
	int32_t t1[8], t2[8];
	double first[5], sorted[5];
	int n1 = 0, n2 = 0, ret;
	uint64_t seq1;
	uint8_t *px;
	int16_t *pcm;
	void *map = NULL;
	char err[256];

	NEED_DEVICE();

	p.camera = mmhal_src_camera(64, 48, MMHAL_FMT_GREY, 30);
	p.mic = mmhal_src_mic(16000, 320, MMHAL_SIGNAL_TONE);
	p.listen_ms = 200;
	p.n_predict = 8;
	p.n_threads = 2;
	CHECK_INT(mmhal_chan_create_dir(dev, MMHAL_CHAN_COPY, NULL, &cc), 0);
	CHECK_INT(mmhal_chan_create_dir(dev, MMHAL_CHAN_COPY, NULL, &mc), 0);
	CHECK_INT(mmhal_buf_alloc(dev, 64 * 48, NULL, &fsrc), 0);
	CHECK_INT(mmhal_buf_alloc(dev, 3200 * 2, NULL, &psrc), 0);
	if (!cc || !mc || !fsrc || !psrc)
		goto out;
	px = buf_write_begin(fsrc);
	pcm = buf_write_begin(psrc);
	if (!px || !pcm) {
		tap_diag("cannot map the source buffers");
		goto fail;
	}
	for (int y = 0; y < 48; y++)
		for (int x = 0; x < 64; x++)
			px[y * 64 + x] = (uint8_t)(x * 3 + y * 2);
	memset(pcm, 0, 3200 * 2);
	buf_write_end(fsrc);
	buf_write_end(psrc);
	p.camera_chan = cc;
	p.camera_copy_src = fsrc;
	p.mic_chan = mc;
	p.mic_copy_src = psrc;
	ret = mmhal_session_create(dev, model, proj, &p, &s, err, sizeof(err));
	if (ret) {
		tap_diag("create: %s", err);
		tap_cur_failed = 1;
		goto out;
	}

	/* 1: the first frame is encoded; silence is not */
	if (ask_tokens(s, q, &r, t1, &n1))
		goto fail;
	first[0] = r.sof_to_first_token_ms;
	CHECK_INT(r.image_route, MMHAL_ROUTE_FIRST);
	CHECK_INT(r.audio_route, MMHAL_ROUTE_SILENCE);
	CHECK_INT(r.flags & (MMHAL_RESULT_IMAGE | MMHAL_RESULT_IMAGE_REUSED |
			     MMHAL_RESULT_AUDIO | MMHAL_RESULT_AUDIO_SKIPPED),
		  MMHAL_RESULT_IMAGE | MMHAL_RESULT_AUDIO_SKIPPED);
	CHECK_INT(r.encoders_run, 1);
	CHECK(r.vad_speech_frac == 0);
	CHECK(r.vad_max_dbfs < -100);
	CHECK(r.scene_diff < 0);
	CHECK_INT(r.audio_n_samples, 3200);
	CHECK_INT(r.bytes_copied, 0);
	/* read in place in the copy's destination */
	CHECK_INT(mmhal_buf_map(r.frame_buf, &map), 0);
	CHECK(r.image_plane[0] == map);
	seq1 = r.frame_sequence;
	CHECK_INT(r.image_frame_sequence, seq1);
	CHECK(r.sof_to_first_token_ms > 0);

	/* 2: the same scene: no encoder, the whole prompt but its last
	 * position kept, the same answer as from the empty cache */
	if (ask_tokens(s, q, &r, t2, &n2))
		goto fail;
	first[1] = r.sof_to_first_token_ms;
	CHECK_INT(r.image_route, MMHAL_ROUTE_UNCHANGED);
	CHECK_INT(r.audio_route, MMHAL_ROUTE_SILENCE);
	CHECK(r.flags & MMHAL_RESULT_IMAGE_REUSED);
	CHECK_INT(r.encoders_run, 0);
	CHECK(r.scene_diff == 0);
	CHECK(r.frame_sequence > seq1);
	CHECK_INT(r.image_frame_sequence, seq1);
	CHECK_INT(r.reused_positions, r.n_prompt - 1);
	CHECK(r.encode_ms == 0);
	CHECK_INT(n2, n1);
	CHECK(!memcmp(t1, t2, (size_t)n1 * sizeof(*t1)));

	/* 3: one level more on a third of the pixels: unchanged */
	px = buf_write_begin(fsrc);
	if (!px)
		goto fail;
	for (int i = 0; i < 64 * 48; i += 3)
		if (px[i] < 255)
			px[i]++;
	buf_write_end(fsrc);
	if (ask_tokens(s, q, &r, t2, &n2))
		goto fail;
	first[2] = r.sof_to_first_token_ms;
	CHECK_INT(r.image_route, MMHAL_ROUTE_UNCHANGED);
	CHECK(r.scene_diff >= 0 && r.scene_diff < 1);
	CHECK_INT(r.encoders_run, 0);

	/* 4: another scene: encoded */
	px = buf_write_begin(fsrc);
	if (!px)
		goto fail;
	for (int i = 0; i < 64 * 48; i++)
		px[i] = (uint8_t)(255 - px[i]);
	buf_write_end(fsrc);
	if (ask_tokens(s, q, &r, t2, &n2))
		goto fail;
	first[3] = r.sof_to_first_token_ms;
	CHECK_INT(r.image_route, MMHAL_ROUTE_CHANGED);
	CHECK(r.scene_diff > 3);
	CHECK_INT(r.encoders_run, 1);
	CHECK_INT(r.image_frame_sequence, r.frame_sequence);
	CHECK(r.reused_positions < r.n_prompt / 2);

	/* 5: a 1 kHz tone at 8000 in the window: encoded, in the prompt */
	pcm = buf_write_begin(psrc);
	if (!pcm)
		goto fail;
	for (int i = 0; i < 3200; i++)
		pcm[i] = (int16_t)lrint(8000 * sin(2 * M_PI * 1000 * i / 16000.0));
	buf_write_end(psrc);
	if (ask_tokens(s, q, &r, t2, &n2))
		goto fail;
	first[4] = r.sof_to_first_token_ms;
	CHECK_INT(r.image_route, MMHAL_ROUTE_UNCHANGED);
	CHECK_INT(r.audio_route, MMHAL_ROUTE_SPEECH);
	CHECK_INT(r.flags & (MMHAL_RESULT_AUDIO | MMHAL_RESULT_AUDIO_SKIPPED),
		  MMHAL_RESULT_AUDIO);
	CHECK_INT(r.encoders_run, 1);
	CHECK(r.vad_speech_frac == 1);
	/* the image's positions are kept, the audio's evaluated */
	CHECK(r.reused_positions > 0 && r.reused_positions < r.n_prompt - 1);

	CHECK_INT(mmhal_session_stats(s, &st), 0);
	CHECK_INT(st.asks, 5);
	CHECK_INT(st.image_route[MMHAL_ROUTE_FIRST], 1);
	CHECK_INT(st.image_route[MMHAL_ROUTE_UNCHANGED], 3);
	CHECK_INT(st.image_route[MMHAL_ROUTE_CHANGED], 1);
	CHECK_INT(st.audio_route[MMHAL_ROUTE_SILENCE], 4);
	CHECK_INT(st.audio_route[MMHAL_ROUTE_SPEECH], 1);
	CHECK_INT(st.encoder_runs, 3);
	CHECK_INT(st.encoder_runs_avoided, 7);
	CHECK_INT(st.frames_used, 2);
	CHECK(st.reused_positions > 0);
	CHECK_INT(st.bytes_copied, 0);

	/* SLO: nearest-rank percentiles of the five answers' own figures */
	CHECK_INT(mmhal_session_slo(s, &slo), 0);
	CHECK_INT(slo.n, 5);
	memcpy(sorted, first, sizeof(first));
	for (int i = 0; i < 5; i++)
		for (int j = i + 1; j < 5; j++)
			if (sorted[j] < sorted[i]) {
				double t = sorted[i];

				sorted[i] = sorted[j];
				sorted[j] = t;
			}
	CHECK(slo.first_p50 == sorted[2]);
	CHECK(slo.first_p95 == sorted[4]);
	CHECK(slo.first_p99 == sorted[4]);
	CHECK(slo.first_max == sorted[4]);
	CHECK(slo.last_p50 >= slo.first_p50);
	CHECK(slo.last_p99 >= slo.last_p50);
	CHECK(slo.peak_rss_bytes > 1024 * 1024);
	CHECK(slo.cpu_s > 0);
	CHECK(slo.wall_s > 0);
	tap_diag("SLO over %u asks: sof->first P50 %.1f P95 %.1f P99 %.1f ms, ->last P50 %.1f P95 %.1f P99 %.1f ms, peak RSS %.1f MiB, CPU %.2f s in %.2f s",
		 slo.n, slo.first_p50, slo.first_p95, slo.first_p99,
		 slo.last_p50, slo.last_p95, slo.last_p99,
		 (double)slo.peak_rss_bytes / 1048576.0, slo.cpu_s, slo.wall_s);
	slo.size = 4;
	CHECK_INT(mmhal_session_slo(s, &slo), -EINVAL);
	goto out;
fail:
	tap_cur_failed = 1;
out:
	mmhal_session_destroy(s);
	mmhal_chan_destroy(cc);
	mmhal_chan_destroy(mc);
	mmhal_buf_free(fsrc);
	mmhal_buf_free(psrc);
}

/*
 * The signature of the virtual camera's luma plane at frame @seq
 * (Documentation/userspace-api/mmedge-channels.rst): bytes x < 8 of each
 * line hold seq, the rest (x + y + p) with p = seq, or 0 when @fixed
 * (MMHAL_PATTERN_STATIC).
 */
static int pattern_signature(uint32_t w, uint32_t h, uint64_t seq, int fixed,
			     uint8_t sig[MMHAL_SIG_CELLS])
{
	uint64_t p = fixed ? 0 : seq;
	struct mmhal_image img = {
		.format = MMHAL_IMAGE_GREY, .width = w, .height = h,
		.stride = { w },
	};
	uint8_t *px = malloc((size_t)w * h);
	int ret;

	if (!px)
		return -ENOMEM;
	for (uint32_t y = 0; y < h; y++)
		for (uint32_t x = 0; x < w; x++)
			px[y * w + x] = x < 8 ? (uint8_t)(seq >> (8 * x)) :
						(uint8_t)(x + y + p);
	img.plane[0] = px;
	ret = mmhal_scene_signature(&img, sig);
	free(px);
	return ret;
}

/* The scene difference of frames @a and @b, as the session measures it. */
static double pattern_diff(uint32_t w, uint32_t h, uint64_t a, uint64_t b,
			   int fixed)
{
	uint8_t sa[MMHAL_SIG_CELLS], sb[MMHAL_SIG_CELLS];

	if (pattern_signature(w, h, a, fixed, sa) ||
	    pattern_signature(w, h, b, fixed, sb))
		return -1;
	return mmhal_scene_diff(sa, sb);
}

/*
 * The virtual sources themselves: a static NV12 camera and a silent
 * microphone (the image encoded once, then used again although the
 * frame numbers in its lines moved; silence never encoded, read in place
 * as zeros); a moving GREY camera at 10 frames/s, asked again after at
 * least 8 frames (the pattern moved by 8..252 levels: more than the
 * threshold), and a noise microphone (speech-like, encoded).
 */
static void test_routing_virtual_sources(void)
{
	struct mmhal_session_params p = mmhal_session_default_params();
	struct mmhal_session_stats st = { .size = sizeof(st) };
	struct mmhal_session_result r;
	struct mmhal_session *s = NULL;
	int32_t toks[8];
	uint64_t seq1, d;
	double want;
	int n = 0, ret, zeros;
	char err[256];

	NEED_DEVICE();

	/* A static camera and a silent microphone. */
	p.camera = mmhal_src_camera(256, 64, MMHAL_FMT_NV12, 30);
	p.camera.signal = MMHAL_PATTERN_STATIC;
	p.mic = mmhal_src_mic(16000, 320, MMHAL_SIGNAL_SILENCE);
	p.listen_ms = 200;
	p.n_predict = 4;
	p.n_threads = 2;
	ret = mmhal_session_create(dev, model, proj, &p, &s, err, sizeof(err));
	if (ret)
		FAIL("create (static, silence): %s", err);
	if (ask_tokens(s, "What is it?", &r, toks, &n))
		goto fail;
	CHECK_INT(r.image_route, MMHAL_ROUTE_FIRST);
	CHECK_INT(r.audio_route, MMHAL_ROUTE_SILENCE);
	CHECK_INT(r.flags & (MMHAL_RESULT_IMAGE | MMHAL_RESULT_IMAGE_REUSED |
			     MMHAL_RESULT_AUDIO | MMHAL_RESULT_AUDIO_SKIPPED),
		  MMHAL_RESULT_IMAGE | MMHAL_RESULT_AUDIO_SKIPPED);
	CHECK_INT(r.encoders_run, 1);
	CHECK(r.vad_speech_frac == 0);
	CHECK(r.vad_max_dbfs <= MMHAL_VAD_FLOOR_DBFS);
	CHECK_INT(r.audio_n_samples, 3200);
	zeros = 0;
	for (uint64_t i = 0; r.audio_samples && i < r.audio_n_samples; i++)
		zeros += !r.audio_samples[i];
	CHECK_INT(zeros, 3200);
	seq1 = r.frame_sequence;
	/* at least two frames later */
	usleep(100 * 1000);
	if (ask_tokens(s, "What is it?", &r, toks, &n))
		goto fail;
	want = pattern_diff(256, 64, seq1, r.frame_sequence, 1);
	tap_diag("static: frames %" PRIu64 " and %" PRIu64
		 ": diff %.3f, recomputed %.3f", seq1, r.frame_sequence,
		 (double)r.scene_diff, want);
	CHECK(r.frame_sequence > seq1);
	CHECK(fabs(r.scene_diff - want) < 1e-3);
	CHECK(r.scene_diff <= 1);
	CHECK_INT(r.image_route, MMHAL_ROUTE_UNCHANGED);
	CHECK(r.flags & MMHAL_RESULT_IMAGE_REUSED);
	CHECK_INT(r.image_frame_sequence, seq1);
	CHECK_INT(r.audio_route, MMHAL_ROUTE_SILENCE);
	CHECK_INT(r.encoders_run, 0);
	CHECK_INT(mmhal_session_stats(s, &st), 0);
	CHECK_INT(st.image_route[MMHAL_ROUTE_UNCHANGED], 1);
	CHECK_INT(st.audio_route[MMHAL_ROUTE_SILENCE], 2);
	CHECK_INT(st.encoder_runs, 1);
	CHECK_INT(st.encoder_runs_avoided, 3);
	mmhal_session_destroy(s);
	s = NULL;

	/* A moving camera at a low rate and a noise microphone. */
	p.camera = mmhal_src_camera(64, 48, MMHAL_FMT_GREY, 10);
	p.mic = mmhal_src_mic(16000, 320, MMHAL_SIGNAL_NOISE);
	ret = mmhal_session_create(dev, model, proj, &p, &s, err, sizeof(err));
	if (ret)
		FAIL("create (moving, noise): %s", err);
	if (ask_tokens(s, "What is it?", &r, toks, &n))
		goto fail;
	CHECK_INT(r.image_route, MMHAL_ROUTE_FIRST);
	CHECK_INT(r.audio_route, MMHAL_ROUTE_SPEECH);
	CHECK_INT(r.encoders_run, 2);
	CHECK(r.vad_speech_frac == 1);
	seq1 = r.frame_sequence;
	usleep(800 * 1000);
	if (ask_tokens(s, "What is it?", &r, toks, &n))
		goto fail;
	d = r.frame_sequence - seq1;
	want = pattern_diff(64, 48, seq1, r.frame_sequence, 0);
	tap_diag("moving: frames %" PRIu64 " and %" PRIu64
		 " (%" PRIu64 " apart): diff %.3f, recomputed %.3f", seq1,
		 r.frame_sequence, d, (double)r.scene_diff, want);
	CHECK(d >= 8 && d % 256 >= 4 && d % 256 <= 252);
	CHECK(fabs(r.scene_diff - want) < 1e-3);
	CHECK(r.scene_diff > 3);
	CHECK_INT(r.image_route, MMHAL_ROUTE_CHANGED);
	CHECK_INT(r.image_frame_sequence, r.frame_sequence);
	CHECK_INT(r.audio_route, MMHAL_ROUTE_SPEECH);
	CHECK_INT(r.encoders_run, 2);
	goto out;
fail:
	tap_cur_failed = 1;
out:
	mmhal_session_destroy(s);
}

/* The virtual IMU moves (its gyro reaches 2048 per axis): a frame is
 * encoded although the scene threshold calls every frame the same. */
static void imu_session(float gyro, float accel, uint32_t off, uint32_t want)
{
	struct mmhal_session_params p = mmhal_session_default_params();
	struct mmhal_session_stats st = { .size = sizeof(st) };
	struct mmhal_session_result r = { .size = sizeof(r) };
	struct mmhal_session *s = NULL;
	char err[256];
	int ret;

	p.camera = mmhal_src_camera(32, 32, MMHAL_FMT_GREY, 30);
	p.imu = mmhal_src_imu(1000, 50);
	p.scene_threshold = 255;
	p.imu_gyro_threshold = gyro;
	p.imu_accel_threshold = accel;
	p.route_off = off;
	p.n_predict = 2;
	p.n_threads = 2;
	p.raw_prompt = 1;
	ret = mmhal_session_create(dev, model, proj, &p, &s, err, sizeof(err));
	if (ret)
		FAIL("create: %s", err);
	CHECK(mmhal_session_chan(s, MMHAL_SRC_IMU) != NULL);
	ret = mmhal_session_ask(s, "x", NULL, NULL, &r);
	CHECK_INT(r.image_route, MMHAL_ROUTE_FIRST);
	/* let the IMU fill a few buffers after that frame */
	usleep(200 * 1000);
	if (!ret)
		ret = mmhal_session_ask(s, "x", NULL, NULL, &r);
	if (ret) {
		tap_diag("ask: %s", mmhal_session_error(s));
		tap_cur_failed = 1;
	} else {
		tap_diag("IMU thresholds %g/%g, off 0x%x: %s (gyro %.0f, accel change %.0f)",
			 (double)gyro, (double)accel, off,
			 mmhal_route_name(r.image_route),
			 (double)r.imu_gyro_max, (double)r.imu_accel_change);
		CHECK_INT(r.image_route, want);
		CHECK(r.flags & MMHAL_RESULT_IMU);
		CHECK(r.imu_gyro_max > 1000);
		CHECK_INT(mmhal_session_stats(s, &st), 0);
		CHECK(st.imu_records >= 50);
		CHECK_INT(st.image_route[want], 1);
	}
	mmhal_session_destroy(s);
}

static void test_routing_imu_motion(void)
{
	NEED_DEVICE();
	imu_session(0, 0, 0, MMHAL_ROUTE_MOTION);
	imu_session(1e5f, 1e5f, 0, MMHAL_ROUTE_UNCHANGED);
	imu_session(0, 0, MMHAL_ROUTE_IMU, MMHAL_ROUTE_UNCHANGED);
}

/* |a - b| in ns, signed */
static int64_t sdiff(uint64_t a, uint64_t b)
{
	return (int64_t)(a - b);
}

/*
 * The timeline: camera at -2 ms / -30 ppm, microphone at +3 ms / +50 ppm.
 * Each answer's frame and window stamps on their sensor clocks follow the
 * documented formula from the SoC counter (so they are ms off the SoC
 * timeline), and mapped through the session's clock fits they land on
 * the SoC counter's CLOCK_MONOTONIC stamps within the fits' uncertainty;
 * the audio window's pairing with the session's frames is the one the
 * SoC stamps give.
 */
static void test_timeline(void)
{
	const uint64_t period = 1000000000ULL / 30;	/* 30 frames/s */
	const uint64_t win = (7999ULL * 1000000000ULL + 8000) / 16000;
	struct mmhal_session_params p = av_params();
	struct mmhal_sensor_clock cclk, mclk;
	struct mmhal_session *s = NULL;
	struct mmhal_xts xts;
	uint64_t max_unc = 0;
	int64_t max_err = 0, min_raw_cam = INT64_MAX, min_raw_mic = INT64_MAX;
	int paired = 0, overlapping = 0, compared = 0;
	char err[256];
	int ret;

	NEED_DEVICE();

	p.camera_sensor_offset_ns = -2000000;
	p.camera_sensor_drift_ppb = -30000;
	p.mic_sensor_offset_ns = 3000000;
	p.mic_sensor_drift_ppb = 50000;
	p.n_predict = 2;
	ret = mmhal_session_create(dev, model, proj, &p, &s, err, sizeof(err));
	if (ret)
		FAIL("create: %s", err);
	CHECK_INT(mmhal_chan_sensor_clock(mmhal_session_chan(s, MMHAL_SRC_CAMERA),
					  &cclk), 0);
	CHECK_INT(mmhal_chan_sensor_clock(mmhal_session_chan(s, MMHAL_SRC_MIC),
					  &mclk), 0);
	CHECK_INT(cclk.offset_ns, -2000000);
	CHECK_INT(cclk.drift_ppb, -30000);
	CHECK_INT(mclk.offset_ns, 3000000);
	CHECK_INT(mclk.drift_ppb, 50000);
	CHECK_INT(mmhal_dev_xts(dev, 1, &xts), 0);
	for (int k = 0; k < 6; k++) {
		struct mmhal_session_result r = { .size = sizeof(r) };
		struct mmhal_session_frame fl[MMHAL_SESSION_FRAMES];
		struct mmhal_align_frame af[MMHAL_SESSION_FRAMES];
		struct mmhal_align_result ar;
		uint64_t csoc, msoc, ws, we, margin = UINT64_MAX;
		int64_t e_cam, e_mic, e_end, raw_cam, raw_mic;
		int nf, na = 0;

		ret = mmhal_session_ask(s, "When?", NULL, NULL, &r);
		if (ret)
			FAIL("ask %d: %s", k, mmhal_session_error(s));
		CHECK(r.frame_flags & MMHAL_FRAME_TS_SENSOR);
		CHECK_INT(r.flags & (MMHAL_RESULT_FRAME_MAPPED |
				     MMHAL_RESULT_AUDIO_MAPPED |
				     MMHAL_RESULT_PAIRED),
			  MMHAL_RESULT_FRAME_MAPPED | MMHAL_RESULT_AUDIO_MAPPED |
			  MMHAL_RESULT_PAIRED);
		CHECK_INT(r.audio_n_bufs, 1);
		/* the sensor stamps: the formula on the SoC counter */
		csoc = mmhal_soc_ns(xts.mult, xts.shift, r.frame_ts.sof_raw);
		msoc = mmhal_soc_ns(xts.mult, xts.shift, r.audio_first_ts.sof_raw);
		CHECK_INT(r.frame_sensor_sof, mmhal_sensor_from_soc(&cclk, csoc));
		CHECK_INT(r.audio_sensor_start,
			  mmhal_sensor_from_soc(&mclk, msoc));
		CHECK_INT(r.audio_sensor_end - r.audio_sensor_start, win);
		/* uncorrected: the sensor stamp taken as the SoC counter */
		raw_cam = sdiff(r.frame_sensor_sof, csoc);
		raw_mic = sdiff(r.audio_sensor_start, msoc);
		/* corrected: the fit's mapping against the SoC stamps */
		e_cam = sdiff(r.frame_mono_sof, r.frame_ts.sof_mono);
		e_mic = sdiff(r.audio_mono_start, r.audio_first_ts.sof_mono);
		e_end = sdiff(r.audio_mono_end - r.audio_mono_start, win);
		tap_diag("ask %d: camera frame %" PRIu64 " sensor - SoC %+.3f ms, mapped - SoC %+.2f us (uncertainty %.2f us); microphone %+.3f ms, %+.2f us (%.2f us); window length error %+.2f us; frames %" PRIu64 "..%" PRIu64 " (%u) overlap the window, frame used %s, coverage %.2f",
			 k, r.frame_sequence, raw_cam / 1e6, e_cam / 1e3,
			 r.frame_uncert_ns / 1e3, raw_mic / 1e6, e_mic / 1e3,
			 r.audio_uncert_ns / 1e3, e_end / 1e3, r.pair_seq_first,
			 r.pair_seq_last, r.pair_n_overlap,
			 r.pair_frame_used ? "among them" : "not among them",
			 r.pair_coverage);
		/* 5 us: the SoC stamps' own conversion (the driver's
		 * counter -> CLOCK_MONOTONIC) and a sample preempted in
		 * the VM; seen up to 2.3 us under load in TCG */
		CHECK(llabs(e_cam) <= 3 * (int64_t)r.frame_uncert_ns + 5000);
		CHECK(llabs(e_mic) <= 3 * (int64_t)r.audio_uncert_ns + 5000);
		/* the window's length on CLOCK_MONOTONIC: 50 ppm shorter */
		CHECK(llabs(e_end + (int64_t)(win / 20000)) <=
		      2 * (int64_t)r.audio_uncert_ns);
		CHECK(r.frame_uncert_ns > 0 && r.frame_uncert_ns < 20000);
		CHECK(r.audio_uncert_ns > 0 && r.audio_uncert_ns < 20000);
		if (llabs(e_cam) > max_err)
			max_err = llabs(e_cam);
		if (llabs(e_mic) > max_err)
			max_err = llabs(e_mic);
		if (r.frame_uncert_ns > max_unc)
			max_unc = r.frame_uncert_ns;
		if (r.audio_uncert_ns > max_unc)
			max_unc = r.audio_uncert_ns;
		if (-raw_cam < min_raw_cam)
			min_raw_cam = -raw_cam;
		if (raw_mic < min_raw_mic)
			min_raw_mic = raw_mic;
		/* the pairing from the SoC stamps of the same frames */
		nf = mmhal_session_frames(s, fl, MMHAL_SESSION_FRAMES);
		CHECK(nf > 0 && nf <= MMHAL_SESSION_FRAMES);
		ws = r.audio_first_ts.sof_mono;
		we = ws + win;
		for (int i = 0; i < nf; i++) {
			uint64_t ed[2] = { fl[i].sof_mono, fl[i].sof_mono + period };

			CHECK_INT(fl[i].sensor_end - fl[i].sensor_sof, period);
			if (i)
				CHECK(fl[i].sequence > fl[i - 1].sequence);
			af[na].sequence = fl[i].sequence;
			af[na].start = ed[0];
			af[na].end = ed[1];
			na++;
			for (int j = 0; j < 2; j++) {
				uint64_t d1 = (uint64_t)llabs(sdiff(ed[j], ws));
				uint64_t d2 = (uint64_t)llabs(sdiff(ed[j], we));

				if (d1 < margin)
					margin = d1;
				if (d2 < margin)
					margin = d2;
			}
		}
		CHECK_INT(mmhal_align_window(NULL, ws, we, NULL, af, (size_t)na,
					     NULL, 0, &ar), 0);
		if (margin > 100000) {
			CHECK_INT(r.pair_n_overlap, ar.n_overlap);
			CHECK_INT(r.pair_seq_first, ar.seq_first);
			CHECK_INT(r.pair_seq_last, ar.seq_last);
			compared++;
		} else {
			tap_diag("ask %d: a frame edge %" PRIu64 " ns from the window's: not compared",
				 k, margin);
		}
		CHECK_INT(r.pair_frame_used,
			  r.pair_n_overlap && r.frame_sequence >= r.pair_seq_first &&
			  r.frame_sequence <= r.pair_seq_last);
		paired++;
		overlapping += r.pair_n_overlap > 0;
	}
	tap_diag("timeline: largest mapped - SoC error %.2f us (largest uncertainty %.2f us); uncorrected sensor stamps off by at least %.3f ms (camera) and %.3f ms (microphone)",
		 max_err / 1e3, max_unc / 1e3, min_raw_cam / 1e6,
		 min_raw_mic / 1e6);
	/* the uncorrected stamps are ms off: -2 ms - 30 ppm, +3 ms + 50 ppm */
	CHECK(min_raw_cam > 1900000);
	CHECK(min_raw_mic > 2900000);
	CHECK_INT(paired, 6);
	CHECK(compared >= 4);
	CHECK(overlapping > 0);
	mmhal_session_destroy(s);
}

/*
 * A session whose device answers no ioctl: create fails at the first
 * channel, naming it and the driver's error, and frees what it made.
 */
static void test_no_driver(void)
{
	struct mmhal_session_params p = av_params();
	struct mmhal_session *s = (struct mmhal_session *)1;
	char err[256] = "";
	int ret;

	if (!wrapped)
		SKIP("--wrapped only");
	ret = mmhal_session_create(dev, model, proj, &p, &s, err, sizeof(err));
	CHECK(ret < 0);
	CHECK(s == NULL);
	CHECK(strstr(err, "camera") != NULL);
	tap_diag("create on a device without the driver: %d (%s)", ret, err);
	memset(&p.camera, 0, sizeof(p.camera));
	s = (struct mmhal_session *)1;
	ret = mmhal_session_create(dev, model, proj, &p, &s, err, sizeof(err));
	CHECK(ret < 0);
	CHECK(s == NULL);
	CHECK(strstr(err, "microphone") != NULL);
	tap_diag("the microphone alone: %d (%s)", ret, err);
}

static void test_teardown(void)
{
	mmhal_mmproj_free(proj);
	mmhal_model_free(model);
	mmhal_dev_close(dev);
	if (pipe_fds[1] >= 0)
		close(pipe_fds[1]);
	unlink(model_path);
	unlink(proj_path);
	rmdir(dir);
}

static const struct tap_test tests[] = {
	TAP_TEST(test_setup),
	TAP_TEST(test_bad_params),
	TAP_TEST(test_nv12_and_mic_ask_twice),
	TAP_TEST(test_grey_camera_only),
	TAP_TEST(test_mic_window_spans_buffers),
	TAP_TEST(test_routing_static_scene_and_silence),
	TAP_TEST(test_routing_virtual_sources),
	TAP_TEST(test_routing_imu_motion),
	TAP_TEST(test_timeline),
	TAP_TEST(test_no_driver),
	TAP_TEST(test_teardown),
};

int main(int argc, char **argv)
{
	int skip_missing = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--skip-missing")) {
			skip_missing = 1;
		} else if (!strcmp(argv[i], "--wrapped")) {
			wrapped = 1;
		} else if (!strcmp(argv[i], "--mmgguf") && i + 1 < argc) {
			mmgguf = argv[++i];
		} else if (argv[i][0] != '-' && i == argc - 1) {
			dev_path = argv[i];
		} else {
			fprintf(stderr,
				"usage: %s [--skip-missing] --mmgguf MMGGUF [DEVICE]\n"
				"       %s --wrapped --mmgguf MMGGUF\n",
				argv[0], argv[0]);
			return 2;
		}
	}
	if (!mmgguf) {
		fprintf(stderr, "%s: --mmgguf is required\n", argv[0]);
		return 2;
	}
	if (skip_missing && access(dev_path, F_OK) < 0 && errno == ENOENT) {
		printf("1..0 # SKIP %s not present\n", dev_path);
		return 0;
	}
	return tap_run(tests, TAP_COUNT(tests));
}

// SPDX-License-Identifier: MIT
/*
 * mmhal_session_test - the multimodal model asked about an mmedge device's
 * camera and microphone (mmhal_session.h), on a real device
 *
 *	mmhal_session_test [--skip-missing] --mmgguf MMGGUF [DEVICE]
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
 * (the one copy the session makes, counted). Prints TAP; DEVICE defaults
 * to /dev/mmedge0 (--skip-missing: skip all if it is absent). Meant to
 * run in the test VM, with mmedge.ko loaded.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mmhal.h"
#include "mmhal_model.h"
#include "mmhal_session.h"
#include "tap.h"

static const char *dev_path = MMHAL_DEFAULT_DEV;
static const char *mmgguf;
static char dir[64];
static char model_path[128], proj_path[128];
static struct mmhal_dev *dev;
static struct mmhal_model *model;
static struct mmhal_mmproj *proj;

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
	p.mic_bufs = 3;
	p.mic.period = 320;
	p.mic_chan = NULL;
	p.listen_ms = 500;
	memset(&p.camera, 0, sizeof(p.camera));
	CHECK_INT(mmhal_chan_create(dev, &cam, NULL, &ch), 0);
	p.camera_chan = ch;
	REFUSED(&p, -EINVAL, "camera_chan");
	/* a caller's channel whose frames are not the source's */
	p = av_params();
	memset(&p.mic, 0, sizeof(p.mic));
	p.camera_chan = ch;	/* GREY 64x48, the params say NV12 */
	REFUSED(&p, -EINVAL, "frames of 3072 bytes");
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
	CHECK_INT(r.flags, MMHAL_RESULT_AUDIO | MMHAL_RESULT_AUDIO_COPIED);
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

static void test_teardown(void)
{
	mmhal_mmproj_free(proj);
	mmhal_model_free(model);
	mmhal_dev_close(dev);
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
	TAP_TEST(test_teardown),
};

int main(int argc, char **argv)
{
	int skip_missing = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--skip-missing")) {
			skip_missing = 1;
		} else if (!strcmp(argv[i], "--mmgguf") && i + 1 < argc) {
			mmgguf = argv[++i];
		} else if (argv[i][0] != '-' && i == argc - 1) {
			dev_path = argv[i];
		} else {
			fprintf(stderr,
				"usage: %s [--skip-missing] --mmgguf MMGGUF [DEVICE]\n",
				argv[0]);
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

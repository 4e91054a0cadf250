// SPDX-License-Identifier: MIT
/*
 * session.c - the model asked about an mmedge device's camera and
 * microphone, reading their buffers in place (mmhal_session.h): create,
 * destroy, poll and ask, each step in order (session_int.h lists the
 * files of the others).
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

void mmhal_session_destroy(struct mmhal_session *s)
{
	if (!s)
		return;
	for (uint32_t i = 0; s->cam.maps && i < s->cam.n_bufs; i++)
		if (s->cam.maps[i])
			mmhal_mmproj_unmap_frames(s->proj, s->cam.maps[i],
						  mmhal_buf_size(s->cam.bufs[i]));
	sess_src_stop(&s->cam);
	sess_src_stop(&s->mic);
	sess_src_stop(&s->imu);
	mmhal_chunk_free(s->img_chunk);
	free(s->slo_first);
	free(s->slo_last);
	mmhal_sampler_free(s->smp);
	mmhal_ctx_free(s->ctx);
	free(s->pcm);
	free(s->text);
	free(s->toks);
	free(s);
}

int mmhal_session_create(struct mmhal_dev *dev, struct mmhal_model *model,
			 const struct mmhal_mmproj *proj,
			 const struct mmhal_session_params *params,
			 struct mmhal_session **out, char *err, size_t errlen)
{
	struct mmhal_ctx_params cp = mmhal_ctx_default_params();
	struct mmhal_session *s;
	uint32_t mic_bufs;
	int ret;

	if (err && errlen)
		err[0] = 0;
	if (out)
		*out = NULL;
	if (!dev || !model || !proj || !params || !out)
		return mm_errf(-EINVAL, err, errlen,
				 "%s is NULL", !dev ? "dev" : !model ? "model" :
				 !proj ? "mmproj" : !params ? "params" : "out");
	s = calloc(1, sizeof(*s));
	if (!s)
		return mm_errf(-ENOMEM, err, errlen, "out of memory");
	s->dev = dev;
	s->model = model;
	s->proj = proj;
	s->cam.name = "camera";
	s->mic.name = "microphone";
	s->imu.name = "IMU";
	s->st.size = sizeof(s->st);
	ret = sess_check_params(params, proj, &s->p, &s->listen_samples, err,
				errlen);
	if (ret)
		goto fail;
	s->toks = calloc((size_t)s->p.n_predict, sizeof(*s->toks));
	s->text_cap = 256;
	s->text = malloc(s->text_cap);
	s->slo_first = calloc(s->p.slo_window, sizeof(double));
	s->slo_last = calloc(s->p.slo_window, sizeof(double));
	if (!s->toks || !s->text || !s->slo_first || !s->slo_last) {
		ret = mm_errf(-ENOMEM, err, errlen, "out of memory");
		goto fail;
	}
	s->text[0] = 0;

	cp.n_ctx = s->p.n_ctx;
	cp.n_threads = s->p.n_threads;
	cp.ctx_shift = s->p.ctx_shift;
	cp.n_keep = s->p.n_keep;
	cp.tier_mode = s->p.tier_mode;
	cp.tier = s->p.tier;
	/* 0, 0: the decoder's defaults; mmhal_ctx_create() checks them */
	if (s->p.tier_threshold[0] || s->p.tier_threshold[1]) {
		cp.tier_threshold[0] = s->p.tier_threshold[0];
		cp.tier_threshold[1] = s->p.tier_threshold[1];
	}
	ret = mmhal_ctx_create(model, &cp, &s->ctx, s->err, sizeof(s->err));
	if (ret) {
		mm_errf(ret, err, errlen, "model session: %s", s->err);
		goto fail;
	}
	if (s->p.temperature > 0) {
		struct mmhal_sampler_params sp = mmhal_sampler_default_params();

		sp.temperature = s->p.temperature;
		sp.seed = s->p.seed;
		ret = mmhal_sampler_create(&sp, &s->smp);
		if (ret) {
			mm_errf(ret, err, errlen, "sampler: temperature %g",
				  (double)s->p.temperature);
			goto fail;
		}
	}

	if (s->p.camera.type) {
		s->cam.src = s->p.camera;
		s->cam.sensor_offset = s->p.camera_sensor_offset_ns;
		s->cam.sensor_drift = s->p.camera_sensor_drift_ppb;
		ret = sess_src_start(s, &s->cam, s->p.camera_chan,
				     s->p.camera_copy_src, s->p.camera_bufs, err,
				     errlen);
		if (ret)
			goto fail;
	}
	if (s->p.mic.type) {
		s->mic.src = s->p.mic;
		s->mic.sensor_offset = s->p.mic_sensor_offset_ns;
		s->mic.sensor_drift = s->p.mic_sensor_drift_ppb;
		if (s->p.mic_chan &&
		    mmhal_chan_dir(s->p.mic_chan) == MMHAL_CHAN_COPY) {
			/* one copy per window */
			s->mic.src.period = (uint32_t)s->listen_samples;
		} else if (!s->p.mic_chan) {
			/* one buffer per window when the driver allows it */
			uint64_t n = (s->listen_samples + MIC_PERIOD_MAX - 1) /
				     MIC_PERIOD_MAX;

			s->mic.src.period = (uint32_t)((s->listen_samples +
							n - 1) / n);
			if (s->mic.src.period < 16)
				s->mic.src.period = 16;
		}
		if (!s->mic.src.period) {
			ret = mm_errf(-EINVAL, err, errlen,
					"params.mic.period is 0");
			goto fail;
		}
		mic_bufs = s->p.mic_bufs;
		if (!mic_bufs) {
			uint64_t n = (s->listen_samples + s->mic.src.period - 1) /
				     s->mic.src.period + 2;

			if (n > MAX_MIC_BUFS) {
				ret = mm_errf(-EINVAL, err, errlen,
						"microphone: a %u ms window takes %llu buffers of %u samples (most %u)",
						s->p.listen_ms,
						(unsigned long long)n,
						s->mic.src.period, MAX_MIC_BUFS);
				goto fail;
			}
			mic_bufs = (uint32_t)n;
		}
		if ((uint64_t)(mic_bufs - 1) * s->mic.src.period <
		    s->listen_samples) {
			ret = mm_errf(-EINVAL, err, errlen,
					"params.mic_bufs %u: a %u ms window needs %llu of %u samples and one more",
					mic_bufs, s->p.listen_ms,
					(unsigned long long)((s->listen_samples +
					s->mic.src.period - 1) /
					s->mic.src.period),
					s->mic.src.period);
			goto fail;
		}
		if (mic_bufs > 1 && (uint64_t)s->mic.src.period < s->listen_samples) {
			s->pcm = malloc(s->listen_samples * sizeof(int16_t));
			if (!s->pcm) {
				ret = mm_errf(-ENOMEM, err, errlen,
						"out of memory");
				goto fail;
			}
		}
		ret = sess_src_start(s, &s->mic, s->p.mic_chan, s->p.mic_copy_src,
				     mic_bufs, err, errlen);
		if (ret)
			goto fail;
	}
	if (s->p.imu.type) {
		s->imu.src = s->p.imu;
		ret = sess_src_start(s, &s->imu, s->p.imu_chan, NULL, s->p.imu_bufs,
				     err, errlen);
		if (ret)
			goto fail;
	}
	if (s->cam.chan)
		ret = sess_clock_start(s, &s->cam, err, errlen);
	if (!ret && s->mic.chan)
		ret = sess_clock_start(s, &s->mic, err, errlen);
	if (ret)
		goto fail;
	s->t_create = now_ns();
	s->cpu_create = cpu_s();
	s->err[0] = 0;
	*out = s;
	return 0;
fail:
	mmhal_session_destroy(s);
	return ret;
}

const char *mmhal_session_error(const struct mmhal_session *s)
{
	return s ? s->err : "session is NULL";
}

struct mmhal_ctx *mmhal_session_ctx(struct mmhal_session *s)
{
	return s ? s->ctx : NULL;
}

struct mmhal_chan *mmhal_session_chan(struct mmhal_session *s, uint32_t type)
{
	if (!s)
		return NULL;
	if (type == MMHAL_SRC_CAMERA)
		return s->cam.chan;
	if (type == MMHAL_SRC_MIC)
		return s->mic.chan;
	if (type == MMHAL_SRC_IMU)
		return s->imu.chan;
	return NULL;
}

int mmhal_session_poll(struct mmhal_session *s, struct mmhal_session_poll *out)
{
	struct mmhal_session_result r;
	struct mmhal_session_poll o;
	uint64_t deadline;
	uint32_t size;
	int ret;

	if (!s)
		return -EINVAL;
	s->err[0] = 0;
	if (!out)
		return SERR(s, -EINVAL, "poll result is NULL");
	size = out->size;
	if (size < offsetof(struct mmhal_session_poll, frame_sequence))
		return SERR(s, -EINVAL,
			    "poll.size %u: set it to sizeof(struct mmhal_session_poll)",
			    size);
	memset(&o, 0, sizeof(o));
	o.size = sizeof(o);
	o.scene_diff = -1.0f;
	memset(&r, 0, sizeof(r));
	ret = sess_release_held(s, &s->cam);
	if (!ret)
		ret = sess_release_held(s, &s->mic);
	if (ret)
		return ret;
	deadline = now_ns() + (uint64_t)s->p.wait_ms * 1000000;
	ret = sess_acquire_all(s, deadline, &r);
	if (!ret && s->mic.chan)
		ret = sess_poll_window(s, &o);
	if (ret)
		return ret;
	if (s->cam.chan) {
		ret = sess_poll_frame(s, &o);
		if (ret)
			return ret;
	}
	o.changed = (o.image_route != MMHAL_ROUTE_NONE &&
		     o.image_route != MMHAL_ROUTE_UNCHANGED) ||
		    o.audio_route == MMHAL_ROUTE_SPEECH ||
		    o.audio_route == MMHAL_ROUTE_ALWAYS;
	s->st.polls++;
	s->st.polls_changed += o.changed;
	memcpy(out, &o, size < sizeof(o) ? size : sizeof(o));
	out->size = size;
	return 0;
}

static int on_token(int32_t tok, const char *piece, size_t len, void *arg)
{
	struct mmhal_session *s = arg;
	uint64_t t = now_ns();

	if (!s->n_toks)
		s->t_first = t;
	s->t_last = t;
	if (s->n_toks < s->p.n_predict)
		s->toks[s->n_toks++] = tok;
	if (s->text_len + len + 1 > s->text_cap) {
		size_t cap = (s->text_len + len + 1) * 2;
		char *p = realloc(s->text, cap);

		if (!p) {
			s->gen_err = -ENOMEM;
			return 1;
		}
		s->text = p;
		s->text_cap = cap;
	}
	memcpy(s->text + s->text_len, piece, len);
	s->text_len += len;
	s->text[s->text_len] = 0;
	return s->cb ? s->cb(tok, piece, len, s->cb_arg) : 0;
}

static int count_markers(const char *t)
{
	int n = 0;

	while ((t = strstr(t, MMHAL_MEDIA_MARKER))) {
		n++;
		t += strlen(MMHAL_MEDIA_MARKER);
	}
	return n;
}

/* The prompt as evaluated: media markers, then the chat template. @n_src
 * sources (image first), of which source @drop (-1: none) is not in the
 * prompt: its marker, if the prompt places them, is left out. */
static int build_prompt(struct mmhal_session *s, const char *prompt,
			int n_src, int drop, char **out)
{
	const size_t ml = strlen(MMHAL_MEDIA_MARKER);
	int n_mark = count_markers(prompt), n_chunks = n_src - (drop >= 0);
	size_t cap = strlen(prompt) + (size_t)n_src * ml + 2, len = 0;
	struct mmhal_chat_msg msg;
	char *user, *p;
	int ret;

	*out = NULL;
	if (n_mark && n_mark != n_src)
		return SERR(s, -EINVAL,
			    "prompt: %d media markers, the session has %d source%s",
			    n_mark, n_src, n_src == 1 ? "" : "s");
	user = malloc(cap);
	if (!user)
		return SERR(s, -ENOMEM, "prompt: out of memory");
	user[0] = 0;
	if (!n_mark) {
		for (int i = 0; i < n_chunks; i++)
			strcat(user, MMHAL_MEDIA_MARKER);
		if (n_chunks)
			strcat(user, "\n");
		strcat(user, prompt);
	} else {
		const char *t = prompt, *m;
		char *u = user;

		for (int k = 0; (m = strstr(t, MMHAL_MEDIA_MARKER)); k++) {
			size_t n = (size_t)(m - t) + (k == drop ? 0 : ml);

			memcpy(u, t, n);
			u += n;
			t = m + ml;
		}
		strcpy(u, t);
	}
	if (s->p.raw_prompt) {
		*out = user;
		return 0;
	}
	msg.role = "user";
	msg.content = user;
	ret = mmhal_model_chat_format(s->model, &msg, 1, 1, NULL, 0, &len);
	if (ret && ret != -ENOSPC) {
		free(user);
		return SERR(s, ret,
			    "prompt: the model's chat template is not supported (%s); use raw_prompt",
			    mmhal_strerror(ret));
	}
	p = malloc(len + 1);
	if (!p) {
		free(user);
		return SERR(s, -ENOMEM, "prompt: out of memory");
	}
	ret = mmhal_model_chat_format(s->model, &msg, 1, 1, p, len + 1, &len);
	free(user);
	if (ret) {
		free(p);
		return SERR(s, ret, "prompt: chat template: %s",
			    mmhal_strerror(ret));
	}
	*out = p;
	return 0;
}

int mmhal_session_ask(struct mmhal_session *s, const char *prompt,
		      mmhal_token_cb cb, void *arg,
		      struct mmhal_session_result *out)
{
	struct mmhal_chunk *chunks[2] = { NULL, NULL };
	struct mmhal_chunk *encoded[2] = { NULL, NULL };
	struct mmhal_chunk *audio = NULL;
	struct mmhal_session_result r;
	struct mmhal_model_stats ms;
	uint64_t t0, t1, t2, t3, deadline, sof;
	int64_t reused0 = 0;
	char *text = NULL;
	uint32_t size;
	int n_chunks = 0, n_src = 0, drop = -1, n_gen = 0, n_mark, n_have, ret;

	if (!s)
		return -EINVAL;
	s->err[0] = 0;
	if (!out)
		return SERR(s, -EINVAL, "result is NULL");
	size = out->size;
	if (size < offsetof(struct mmhal_session_result, frame_sequence))
		return SERR(s, -EINVAL,
			    "result.size %u: set it to sizeof(struct mmhal_session_result)",
			    size);
	memset(out, 0, size < sizeof(r) ? size : sizeof(r));
	out->size = size;
	if (!prompt)
		return SERR(s, -EINVAL, "prompt is NULL");
	memset(&r, 0, sizeof(r));
	r.size = sizeof(r);
	s->text_len = 0;
	s->text[0] = 0;
	s->n_toks = 0;

	/* give back what the last answer kept */
	ret = sess_release_held(s, &s->cam);
	if (!ret)
		ret = sess_release_held(s, &s->mic);
	if (ret)
		return ret;

	/* a prompt that cannot be built fails before anything is acquired,
	 * encoded or routed (the scene cache stays as it was) */
	n_mark = count_markers(prompt);
	n_have = !!s->cam.chan + !!s->mic.chan;
	if (n_mark && n_mark != n_have)
		return SERR(s, -EINVAL,
			    "prompt: %d media markers, the session has %d source%s",
			    n_mark, n_have, n_have == 1 ? "" : "s");

	t0 = now_ns();
	r.ask_mono = t0;
	deadline = t0 + (uint64_t)s->p.wait_ms * 1000000;
	ret = sess_clock_due(s, 1);
	if (ret)
		return ret;
	ret = sess_acquire_all(s, deadline, &r);
	if (ret)
		return ret;
	ret = sess_clock_due(s, 0);
	if (ret)
		return ret;
	t1 = now_ns();
	r.acquire_ms = ms_between(t0, t1);

	if (s->cam.chan) {
		ret = sess_route_frame(s, &chunks[n_chunks], &r);
		if (ret)
			goto out;
		if (!(r.flags & MMHAL_RESULT_IMAGE_REUSED))
			encoded[n_chunks] = chunks[n_chunks];
		n_chunks++;
		n_src++;
	}
	if (s->mic.chan) {
		ret = sess_route_window(s, &audio, &r);
		if (ret)
			goto out;
		if (audio) {
			chunks[n_chunks++] = audio;
			encoded[n_chunks - 1] = audio;
		} else {
			drop = n_src;
		}
		n_src++;
	}
	if (s->cam.chan && s->mic.chan)
		sess_pair_window(s, &r);
	for (int i = 0; i < n_chunks; i++) {
		struct mmhal_chunk_info ci = { .size = sizeof(ci) };

		if (encoded[i] && !mmhal_chunk_info(encoded[i], &ci)) {
			r.preprocess_ms += ci.preprocess_ms;
			r.encode_ms += ci.encode_ms;
		}
	}

	ret = build_prompt(s, prompt, n_src, drop, &text);
	if (ret)
		goto out;
	/* the cache is kept: eval_prompt evaluates what differs from it */
	if (!mmhal_ctx_stats(s->ctx, &ms))
		reused0 = ms.reused_positions;
	t2 = now_ns();
	ret = mmhal_ctx_eval_prompt(s->ctx, text,
				    (const struct mmhal_chunk *const *)chunks,
				    n_chunks, s->p.raw_prompt, NULL);
	if (ret) {
		SERR(s, ret, "prompt: %s", mmhal_ctx_error(s->ctx));
		goto out;
	}
	if (!mmhal_ctx_stats(s->ctx, &ms) && ms.reused_positions >= reused0)
		r.reused_positions = (int)(ms.reused_positions - reused0);
	s->st.reused_positions += (uint64_t)r.reused_positions;
	t3 = now_ns();
	r.prefill_ms = ms_between(t2, t3);
	r.n_prompt = mmhal_ctx_n_past(s->ctx);

	s->cb = cb;
	s->cb_arg = arg;
	s->gen_err = 0;
	ret = mmhal_ctx_generate(s->ctx, NULL, 0, s->p.n_predict, s->smp, 0,
				 NULL, on_token, s, &n_gen);
	s->cb = NULL;
	if (!ret)
		ret = s->gen_err;
	if (ret) {
		SERR(s, ret, "generate: %s", s->gen_err ?
		     "out of memory" : mmhal_ctx_error(s->ctx));
		goto out;
	}
	if (!s->n_toks)
		s->t_first = s->t_last = now_ns();
	r.decode_ms = ms_between(t3, now_ns());
	r.text = s->text;
	r.text_len = s->text_len;
	r.tokens = s->toks;
	r.n_tokens = s->n_toks;
	r.first_token_mono = s->t_first;
	r.last_token_mono = s->t_last;
	sof = r.flags & MMHAL_RESULT_IMAGE ? r.frame_ts.sof_mono :
					     r.audio_first_ts.sof_mono;
	r.sof_to_first_token_ms = ms_between(sof, s->t_first);
	r.sof_to_last_token_ms = ms_between(sof, s->t_last);
	s->slo_first[s->slo_pos] = r.sof_to_first_token_ms;
	s->slo_last[s->slo_pos] = r.sof_to_last_token_ms;
	s->slo_pos = (s->slo_pos + 1) % s->p.slo_window;
	if (s->slo_n < s->p.slo_window)
		s->slo_n++;
	s->st.asks++;
	memcpy(out, &r, size < sizeof(r) ? size : sizeof(r));
	out->size = size;
out:
	free(text);
	mmhal_chunk_free(audio);	/* the image's is kept for the next */
	return ret;
}

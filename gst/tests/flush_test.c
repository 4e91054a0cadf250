// SPDX-License-Identifier: MIT
/*
 * mmhalinfer_flush_test - a flushing seek in the middle of an answer
 *
 *	mmhalinfer_flush_test MODEL MMPROJ
 *
 * videotestsrc (NV12, not live, seekable) ! identity ! mmhalinfer ! fakesink,
 * every frame asked about with a long answer (n-predict 400). When the
 * first ask starts (message mmhalinfer-asking), the test seeks back to 0
 * with GST_SEEK_FLAG_FLUSH from the main thread and shortens the answers
 * (n-predict 2). Checks: the seek returns (the flush interrupted the ask
 * instead of waiting for 400 tokens); the interrupted ask is reported
 * (mmhalinfer-aborted), not answered; after the flush every frame that
 * enters the element is answered, with its PTS, before EOS (nothing
 * lost). Run under GST_TRACERS=leaks by the guest test, which also checks
 * the tracer's report. Needs /dev/mmedge0 (the VM). Prints TAP.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <gst/gst.h>

#define N_AFTER	3	/* frames after the seek */

struct state {
	GstElement *pipe, *infer;
	GMainLoop *loop;
	gboolean seeked, seek_ok, eos, error;
	int asking, aborted;
	int answers_after;	/* answers after the seek */
	int frames_after;	/* frames into the element after the seek */
	GstClockTime pts_in[64], pts_out[64];
	gint64 seek_us;
	GMutex lock;
};

static int n_test, n_fail;

static void check(int ok, const char *fmt, ...)
{
	va_list ap;

	n_test++;
	if (!ok)
		n_fail++;
	printf("%sok %d - ", ok ? "" : "not ", n_test);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

/* identity's handoff: a frame on its way into mmhalinfer */
static void on_handoff(GstElement *identity, GstBuffer *buf, gpointer data)
{
	struct state *st = data;

	(void)identity;
	g_mutex_lock(&st->lock);
	if (st->seeked && st->frames_after < 64)
		st->pts_in[st->frames_after++] = GST_BUFFER_PTS(buf);
	g_mutex_unlock(&st->lock);
}

static gboolean do_seek(gpointer data)
{
	struct state *st = data;
	gint64 t0 = g_get_monotonic_time();

	g_object_set(st->infer, "n-predict", 2, NULL);
	g_mutex_lock(&st->lock);
	st->seeked = TRUE;
	g_mutex_unlock(&st->lock);
	st->seek_ok = gst_element_seek(st->pipe, 1.0, GST_FORMAT_TIME,
				       GST_SEEK_FLAG_FLUSH |
				       GST_SEEK_FLAG_ACCURATE,
				       GST_SEEK_TYPE_SET, 0,
				       GST_SEEK_TYPE_SET,
				       N_AFTER * GST_SECOND / 5 - 1);
	st->seek_us = g_get_monotonic_time() - t0;
	return G_SOURCE_REMOVE;
}

static gboolean on_bus(GstBus *bus, GstMessage *msg, gpointer data)
{
	struct state *st = data;
	const GstStructure *s;

	(void)bus;
	switch (GST_MESSAGE_TYPE(msg)) {
	case GST_MESSAGE_ELEMENT:
		s = gst_message_get_structure(msg);
		if (gst_structure_has_name(s, "mmhalinfer-asking")) {
			if (!st->asking++)
				g_idle_add(do_seek, st);
		} else if (gst_structure_has_name(s, "mmhalinfer-aborted")) {
			st->aborted++;
		} else if (gst_structure_has_name(s, "mmhalinfer-answer")) {
			guint64 pts = 0;

			gst_structure_get_uint64(s, "pts", &pts);
			g_mutex_lock(&st->lock);
			if (st->seeked && st->answers_after < 64)
				st->pts_out[st->answers_after++] = pts;
			g_mutex_unlock(&st->lock);
		}
		break;
	case GST_MESSAGE_EOS:
		st->eos = TRUE;
		g_main_loop_quit(st->loop);
		break;
	case GST_MESSAGE_ERROR: {
		GError *e = NULL;

		gst_message_parse_error(msg, &e, NULL);
		printf("# error: %s\n", e ? e->message : "?");
		g_clear_error(&e);
		st->error = TRUE;
		g_main_loop_quit(st->loop);
		break;
	}
	default:
		break;
	}
	return TRUE;
}

static gboolean on_timeout(gpointer data)
{
	struct state *st = data;

	printf("# timed out\n");
	g_main_loop_quit(st->loop);
	return G_SOURCE_REMOVE;
}

int main(int argc, char **argv)
{
	struct state st;
	GstElement *identity;
	GError *err = NULL;
	gchar *desc;
	GstBus *bus;
	int i, same;

	gst_init(&argc, &argv);
	if (argc != 3) {
		fprintf(stderr, "usage: %s MODEL MMPROJ\n", argv[0]);
		return 2;
	}
	printf("1..5\n");
	memset(&st, 0, sizeof(st));
	g_mutex_init(&st.lock);
	desc = g_strdup_printf(
		"videotestsrc pattern=ball ! "
		"video/x-raw,format=NV12,width=64,height=48,framerate=5/1 ! "
		"identity name=in signal-handoffs=true ! "
		"mmhalinfer name=m model=%s mmproj=%s threads=1 tiles=false "
		"n-predict=400 ask-interval=0 ! fakesink sync=false",
		argv[1], argv[2]);
	st.pipe = gst_parse_launch(desc, &err);
	g_free(desc);
	if (!st.pipe) {
		printf("not ok 1 - pipeline: %s\n", err ? err->message : "?");
		return 1;
	}
	st.infer = gst_bin_get_by_name(GST_BIN(st.pipe), "m");
	identity = gst_bin_get_by_name(GST_BIN(st.pipe), "in");
	g_signal_connect(identity, "handoff", G_CALLBACK(on_handoff), &st);
	st.loop = g_main_loop_new(NULL, FALSE);
	bus = gst_element_get_bus(st.pipe);
	gst_bus_add_watch(bus, on_bus, &st);
	g_timeout_add_seconds(500, on_timeout, &st);
	gst_element_set_state(st.pipe, GST_STATE_PLAYING);
	g_main_loop_run(st.loop);
	gst_element_set_state(st.pipe, GST_STATE_NULL);

	check(st.seeked && st.seek_ok,
	      "flushing seek during the first ask returned in %.1f s "
	      "(an answer of 400 tokens not waited out)", st.seek_us / 1e6);
	check(st.aborted >= 1,
	      "the interrupted ask was reported (mmhalinfer-aborted x%d), "
	      "not answered", st.aborted);
	check(st.eos && !st.error, "EOS after the seek's segment, no error");
	check(st.frames_after >= 1 && st.answers_after == st.frames_after,
	      "after the flush every frame was answered: %d frames, %d answers",
	      st.frames_after, st.answers_after);
	same = st.answers_after == st.frames_after;
	for (i = 0; same && i < st.answers_after; i++)
		same = st.pts_in[i] == st.pts_out[i];
	check(same && st.answers_after > 0,
	      "the answers' PTS are the frames' (%d)", st.answers_after);

	gst_bus_remove_watch(bus);
	gst_object_unref(bus);
	gst_object_unref(identity);
	gst_object_unref(st.infer);
	gst_object_unref(st.pipe);
	g_main_loop_unref(st.loop);
	g_mutex_clear(&st.lock);
	gst_deinit();
	return n_fail ? 1 : 0;
}

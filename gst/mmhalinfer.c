// SPDX-License-Identifier: MIT
/*
 * mmhalinfer.c - GStreamer element: ask a multimodal model about the
 * frames (and the sound) flowing through a pipeline, with libmmhal.
 *
 *   video_sink  video/x-raw(memory:DMABuf) or video/x-raw, NV12 / GRAY8 /
 *               RGB: a dma-buf frame is imported into mmedge
 *               (mmhal_buf_import(), once per dma-buf), fed through the
 *               arbiter on a feed channel (stamped by mmedge) and read
 *               in place by the image encoder: no CPU copy. A frame in
 *               system memory is copied into an mmedge buffer first
 *               (counted in bytes-copied).
 *   audio_sink  audio/x-raw S16LE at any rate and channel count (optional;
 *               see mmhalaudio.h).
 *   src         text/x-raw, format=utf8: one buffer per answer, PTS and
 *               duration of the frame it stands for, GstMmhalAnswerMeta,
 *               and the element message "mmhalinfer-answer".
 *
 * Threading: the asks run on the video streaming thread (on the audio
 * thread when the video pad is not linked); the model, its session and
 * the video device handle are only used there (and in start/stop, when
 * no streaming thread runs). The audio thread uses the window's own
 * device handle (mmhalaudio.c). A state change down to READY, or a
 * flush, interrupts a running ask through the decoder's abort callback.
 *
 * Documentation/gst-mmhalinfer.rst describes pads, caps, properties and
 * messages.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <gst/gst.h>
#include <gst/allocators/gstdmabuf.h>
#include <gst/audio/audio.h>
#include <gst/video/video.h>

#include "mmhal.h"
#include "mmhal_model.h"
#include "mmhal_session.h"
#include "mmhalaudio.h"
#include "mmhalmeta.h"

GST_DEBUG_CATEGORY_STATIC(mmhalinfer_debug);
#define GST_CAT_DEFAULT mmhalinfer_debug

#define FEED_WAIT_MS	5000
#define MAX_IMPORTS	32
#define SLO_WINDOW	128

#define GST_TYPE_MMHAL_INFER (gst_mmhal_infer_get_type())
G_DECLARE_FINAL_TYPE(GstMmhalInfer, gst_mmhal_infer, GST, MMHAL_INFER,
		     GstElement)

/* A dma-buf imported into mmedge, known by its inode (the fd number of
 * a pool's buffer stays, but may be reused by another buffer). */
struct import {
	int fd;
	ino_t ino;
	dev_t dev;
	struct mmhal_buf *buf;
	void *map;
};

struct _GstMmhalInfer {
	GstElement parent;
	GstPad *vsink, *asink, *src;

	/* properties; Protects them: the object lock */
	gchar *model_path, *mmproj_path, *mmproj_audio_path, *prompt;
	gchar *device, *tier_model;
	guint ask_interval_ms;
	gboolean on_change;
	gfloat scene_threshold;
	gint tier;
	gint threads;
	guint weight, audio_weight;
	gint n_predict;
	guint listen_ms;
	gboolean tiles;

	/* running state: set up in start(), used by the asking thread */
	struct mmhal_dev *dev;
	struct mmhal_model *model;
	struct mmhal_mmproj *proj, *proj_audio;
	struct mmhal_ctx *ctx;
	struct mmhal_chan *vchan;
	struct import imports[MAX_IMPORTS];
	struct mmhal_buf *sysbuf;		/* system-memory frames */
	void *sysmap;
	uint64_t jobs;
	struct awin *aw;		/* from the audio caps on */
	uint32_t audio_rate;		/* the audio encoder's; 0: none */
	uint32_t a_channels;

	GstVideoInfo vinfo;
	gboolean have_vinfo;
	GstClockTime last_ask_pts;
	uint8_t last_sig[MMHAL_SIG_CELLS];
	gboolean have_sig;
	gboolean need_segment;
	gboolean vsink_eos, asink_eos, sent_eos;

	/* interrupts an ask: a flush or a state change down */
	gint stopping;

	/* counters; read through properties (atomic 64-bit reads) */
	guint64 bytes_copied, bytes_in_place, dmabuf_frames, sysmem_frames;
	guint64 answers, aborted;
	gdouble slo_first[SLO_WINDOW];
	guint slo_n;
	/* Protects the pushes on src from the two sink threads. */
	GMutex push_lock;
};

G_DEFINE_TYPE(GstMmhalInfer, gst_mmhal_infer, GST_TYPE_ELEMENT)

enum {
	PROP_0,
	PROP_MODEL,
	PROP_MMPROJ,
	PROP_MMPROJ_AUDIO,
	PROP_PROMPT,
	PROP_ASK_INTERVAL,
	PROP_ON_CHANGE,
	PROP_SCENE_THRESHOLD,
	PROP_TIER,
	PROP_TIER_MODEL,
	PROP_THREADS,
	PROP_DEVICE,
	PROP_WEIGHT,
	PROP_AUDIO_WEIGHT,
	PROP_N_PREDICT,
	PROP_LISTEN_MS,
	PROP_TILES,
	PROP_BYTES_COPIED,
	PROP_DMABUF_FRAMES,
	PROP_ANSWERS,
};

#define VIDEO_FORMATS "{ NV12, GRAY8, RGB }"

static GstStaticPadTemplate vsink_template = GST_STATIC_PAD_TEMPLATE(
	"video_sink", GST_PAD_SINK, GST_PAD_ALWAYS,
	GST_STATIC_CAPS(GST_VIDEO_CAPS_MAKE_WITH_FEATURES(
				GST_CAPS_FEATURE_MEMORY_DMABUF, VIDEO_FORMATS)
			"; " GST_VIDEO_CAPS_MAKE(VIDEO_FORMATS)));

static GstStaticPadTemplate asink_template = GST_STATIC_PAD_TEMPLATE(
	"audio_sink", GST_PAD_SINK, GST_PAD_ALWAYS,
	GST_STATIC_CAPS("audio/x-raw, format=(string)S16LE, "
			"layout=(string)interleaved, rate=(int)[ 1000, 384000 ], "
			"channels=(int)[ 1, 16 ]"));

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE(
	"src", GST_PAD_SRC, GST_PAD_ALWAYS,
	GST_STATIC_CAPS("text/x-raw, format=(string)utf8"));

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* --- errors ------------------------------------------------------------ */

/* A GStreamer error with the HAL's message. */
#define HAL_ERROR(self, domain, code, ...) \
	GST_ELEMENT_ERROR((self), domain, code, (__VA_ARGS__), (NULL))

/* --- start / stop -------------------------------------------------------- */

static void imports_free(GstMmhalInfer *self)
{
	int i;

	for (i = 0; i < MAX_IMPORTS; i++) {
		mmhal_buf_free(self->imports[i].buf);
		memset(&self->imports[i], 0, sizeof(self->imports[i]));
	}
}

static void mmhal_stop(GstMmhalInfer *self)
{
	awin_destroy(self->aw);
	self->aw = NULL;
	/* the channel before the buffers: it holds no job (each is dequeued
	 * at once) */
	mmhal_chan_destroy(self->vchan);
	self->vchan = NULL;
	imports_free(self);
	mmhal_buf_free(self->sysbuf);
	self->sysbuf = NULL;
	self->sysmap = NULL;
	mmhal_ctx_free(self->ctx);
	self->ctx = NULL;
	mmhal_mmproj_free(self->proj_audio);
	self->proj_audio = NULL;
	mmhal_mmproj_free(self->proj);
	self->proj = NULL;
	mmhal_model_free(self->model);
	self->model = NULL;
	mmhal_dev_close(self->dev);
	self->dev = NULL;
}

static int abort_cb(void *arg)
{
	GstMmhalInfer *self = arg;

	return g_atomic_int_get(&self->stopping);
}

static gboolean mmhal_start(GstMmhalInfer *self)
{
	struct mmhal_model_params mp = mmhal_model_default_params();
	struct mmhal_mmproj_params pp = mmhal_mmproj_default_params();
	struct mmhal_ctx_params cp = mmhal_ctx_default_params();
	struct mmhal_chan_params chp = mmhal_chan_default_params();
	struct mmhal_mmproj_info pi = { .size = sizeof(pi) };
	char err[256] = "";
	int ret;

	if (!self->model_path || !self->mmproj_path) {
		HAL_ERROR(self, RESOURCE, NOT_FOUND,
			  "mmhalinfer needs model= and mmproj= (GGUF files)");
		return FALSE;
	}
	mp.n_threads = self->threads;
	ret = mmhal_model_load(self->model_path, &mp, &self->model, err,
			       sizeof(err));
	if (ret) {
		HAL_ERROR(self, RESOURCE, OPEN_READ, "model %s: %s (%s)",
			  self->model_path, err, mmhal_strerror(ret));
		goto fail;
	}
	if (self->tier_model) {
		ret = mmhal_model_add_tier(self->model, self->tier_model, err,
					   sizeof(err));
		if (ret) {
			HAL_ERROR(self, RESOURCE, OPEN_READ, "tier model %s: %s",
				  self->tier_model, err);
			goto fail;
		}
	}
	pp.n_threads = self->threads;
	pp.image_tiles = self->tiles ? 1 : 0;
	/* latency mode: a window shorter than 30 s at its own length */
	pp.audio_exact = 0;
	ret = mmhal_mmproj_load(self->mmproj_path, self->model, &pp,
				&self->proj, err, sizeof(err));
	if (ret) {
		HAL_ERROR(self, RESOURCE, OPEN_READ, "mmproj %s: %s (%s)",
			  self->mmproj_path, err, mmhal_strerror(ret));
		goto fail;
	}
	if (self->mmproj_audio_path) {
		ret = mmhal_mmproj_load(self->mmproj_audio_path, self->model,
					&pp, &self->proj_audio, err,
					sizeof(err));
		if (ret) {
			HAL_ERROR(self, RESOURCE, OPEN_READ,
				  "audio mmproj %s: %s (%s)",
				  self->mmproj_audio_path, err,
				  mmhal_strerror(ret));
			goto fail;
		}
	}
	cp.n_threads = self->threads;
	cp.abort_cb = abort_cb;
	cp.abort_arg = self;
	if (self->tier >= 0) {
		cp.tier_mode = MMHAL_TIER_FIXED;
		cp.tier = self->tier;
	}
	ret = mmhal_ctx_create(self->model, &cp, &self->ctx, err, sizeof(err));
	if (ret) {
		HAL_ERROR(self, LIBRARY, SETTINGS, "model session: %s", err);
		goto fail;
	}
	ret = mmhal_dev_open(self->device, &self->dev);
	if (ret) {
		HAL_ERROR(self, RESOURCE, OPEN_READ_WRITE, "%s: %s",
			  self->device, mmhal_strerror(ret));
		goto fail;
	}
	chp.weight = self->weight;
	ret = mmhal_chan_create_dir(self->dev, MMHAL_CHAN_FEED, &chp,
				    &self->vchan);
	if (ret) {
		HAL_ERROR(self, RESOURCE, SETTINGS,
			  "%s: video feed channel (weight %u): %s",
			  self->device, self->weight, mmhal_strerror(ret));
		goto fail;
	}
	/* the audio encoder: in the audio mmproj, else in the one mmproj */
	mmhal_mmproj_info(self->proj_audio ? self->proj_audio : self->proj,
			  &pi);
	self->audio_rate = pi.has_audio ? (uint32_t)pi.audio_rate : 0;
	return TRUE;
fail:
	mmhal_stop(self);
	return FALSE;
}

/* --- state --------------------------------------------------------------- */

static void reset_stream(GstMmhalInfer *self)
{
	self->last_ask_pts = GST_CLOCK_TIME_NONE;
	self->have_sig = FALSE;
	self->need_segment = TRUE;
	self->vsink_eos = self->asink_eos = self->sent_eos = FALSE;
}

static GstStateChangeReturn gst_mmhal_infer_change_state(GstElement *element,
							 GstStateChange t)
{
	GstMmhalInfer *self = GST_MMHAL_INFER(element);
	GstStateChangeReturn ret;

	switch (t) {
	case GST_STATE_CHANGE_NULL_TO_READY:
		g_atomic_int_set(&self->stopping, 0);
		if (!mmhal_start(self))
			return GST_STATE_CHANGE_FAILURE;
		break;
	case GST_STATE_CHANGE_READY_TO_PAUSED:
		g_atomic_int_set(&self->stopping, 0);
		reset_stream(self);
		break;
	case GST_STATE_CHANGE_PAUSED_TO_READY:
		/* before the pads deactivate: a running ask stops at its
		 * next layer or token, and the streaming thread lets go */
		g_atomic_int_set(&self->stopping, 1);
		break;
	default:
		break;
	}
	ret = GST_ELEMENT_CLASS(gst_mmhal_infer_parent_class)
		      ->change_state(element, t);
	if (ret == GST_STATE_CHANGE_FAILURE)
		return ret;
	switch (t) {
	case GST_STATE_CHANGE_PAUSED_TO_READY:
		if (self->aw)
			awin_reset(self->aw);
		self->have_vinfo = FALSE;
		break;
	case GST_STATE_CHANGE_READY_TO_NULL:
		mmhal_stop(self);
		break;
	default:
		break;
	}
	return ret;
}

/* --- frames -------------------------------------------------------------- */

/* The mmedge buffer of a dma-buf, imported on first sight. */
static struct import *import_get(GstMmhalInfer *self, int fd)
{
	struct stat st;
	int i, ret, free_slot = -1;

	if (fstat(fd, &st))
		return NULL;
	for (i = 0; i < MAX_IMPORTS; i++) {
		struct import *im = &self->imports[i];

		if (!im->buf) {
			if (free_slot < 0)
				free_slot = i;
			continue;
		}
		if (im->ino == st.st_ino && im->dev == st.st_dev)
			return im;
	}
	if (free_slot < 0) {
		/* a pool larger than MAX_IMPORTS: recycle the first */
		mmhal_buf_free(self->imports[0].buf);
		memset(&self->imports[0], 0, sizeof(self->imports[0]));
		free_slot = 0;
	}
	ret = mmhal_buf_import(self->dev, fd, &self->imports[free_slot].buf);
	if (ret) {
		GST_WARNING_OBJECT(self, "import of dma-buf fd %d: %s", fd,
				   mmhal_strerror(ret));
		return NULL;
	}
	ret = mmhal_buf_map(self->imports[free_slot].buf,
			    &self->imports[free_slot].map);
	if (ret) {
		GST_WARNING_OBJECT(self, "map of imported dma-buf: %s",
				   mmhal_strerror(ret));
		mmhal_buf_free(self->imports[free_slot].buf);
		self->imports[free_slot].buf = NULL;
		return NULL;
	}
	self->imports[free_slot].fd = fd;
	self->imports[free_slot].ino = st.st_ino;
	self->imports[free_slot].dev = st.st_dev;
	GST_INFO_OBJECT(self, "imported dma-buf fd %d (inode %lu)", fd,
			(unsigned long)st.st_ino);
	return &self->imports[free_slot];
}

/* A frame on its way to the encoder. */
struct vframe {
	struct mmhal_buf *buf;	/* imported or sysbuf */
	struct mmhal_image img;
	struct mmhal_frame job;	/* the feed job's dequeue: stamps */
	gboolean cpu;		/* between begin_cpu and end_cpu */
};

static guint32 image_format(GstVideoFormat f)
{
	switch (f) {
	case GST_VIDEO_FORMAT_NV12:
		return MMHAL_IMAGE_NV12;
	case GST_VIDEO_FORMAT_GRAY8:
		return MMHAL_IMAGE_GREY;
	case GST_VIDEO_FORMAT_RGB:
		return MMHAL_IMAGE_RGB24;
	default:
		return 0;
	}
}

/*
 * The frame in an mmedge buffer, fed through the arbiter (stamped), and
 * its planes in place. GST_FLOW_OK, or an error posted.
 */
static GstFlowReturn frame_prepare(GstMmhalInfer *self, GstBuffer *buf,
				   struct vframe *vf)
{
	GstVideoMeta *vm = gst_buffer_get_video_meta(buf);
	GstMemory *mem = gst_buffer_n_memory(buf) == 1 ?
				 gst_buffer_peek_memory(buf, 0) : NULL;
	gsize offset[GST_VIDEO_MAX_PLANES], size = gst_buffer_get_size(buf);
	gint stride[GST_VIDEO_MAX_PLANES];
	uint8_t *base;
	guint p, n_planes = GST_VIDEO_INFO_N_PLANES(&self->vinfo);
	uint64_t feed_bytes;
	int ret;

	for (p = 0; p < n_planes; p++) {
		offset[p] = vm ? vm->offset[p] : GST_VIDEO_INFO_PLANE_OFFSET(&self->vinfo, p);
		stride[p] = vm ? vm->stride[p] : GST_VIDEO_INFO_PLANE_STRIDE(&self->vinfo, p);
	}
	memset(vf, 0, sizeof(*vf));
	if (mem && gst_is_dmabuf_memory(mem)) {
		struct import *im = import_get(self, gst_dmabuf_memory_get_fd(mem));

		if (!im) {
			HAL_ERROR(self, RESOURCE, FAILED,
				  "%s: the frame's dma-buf could not be imported",
				  self->device);
			return GST_FLOW_ERROR;
		}
		vf->buf = im->buf;
		base = (uint8_t *)im->map + mem->offset;
		feed_bytes = mem->offset + mem->size;
		self->dmabuf_frames++;
		self->bytes_in_place += size;
	} else {
		/* system memory: one copy into an mmedge buffer, counted */
		GstMapInfo mi;

		if (self->sysbuf && mmhal_buf_size(self->sysbuf) < size) {
			mmhal_buf_free(self->sysbuf);
			self->sysbuf = NULL;
		}
		if (!self->sysbuf) {
			ret = mmhal_buf_alloc(self->dev, size, NULL, &self->sysbuf);
			if (!ret)
				ret = mmhal_buf_map(self->sysbuf, &self->sysmap);
			if (ret) {
				HAL_ERROR(self, RESOURCE, NO_SPACE_LEFT,
					  "%s: frame buffer of %zu bytes: %s",
					  self->device, (size_t)size,
					  mmhal_strerror(ret));
				return GST_FLOW_ERROR;
			}
		}
		if (!gst_buffer_map(buf, &mi, GST_MAP_READ)) {
			HAL_ERROR(self, RESOURCE, READ, "cannot map the frame");
			return GST_FLOW_ERROR;
		}
		ret = mmhal_buf_begin_cpu(self->sysbuf, MMHAL_SYNC_WRITE);
		memcpy(self->sysmap, mi.data, mi.size);
		if (!ret)
			mmhal_buf_end_cpu(self->sysbuf, MMHAL_SYNC_WRITE);
		gst_buffer_unmap(buf, &mi);
		self->bytes_copied += size;
		self->sysmem_frames++;
		vf->buf = self->sysbuf;
		base = self->sysmap;
		feed_bytes = size;
	}

	/* through the arbiter: the device reads the frame, mmedge stamps it */
	ret = mmhal_chan_feed(self->vchan, vf->buf, feed_bytes, self->jobs,
			      NULL);
	if (!ret)
		ret = mmhal_chan_dequeue(self->vchan, FEED_WAIT_MS, &vf->job);
	if (!ret && (vf->job.flags & MMHAL_FRAME_ERROR))
		ret = -EIO;
	if (ret) {
		HAL_ERROR(self, RESOURCE, READ, "%s: feed of frame %" G_GUINT64_FORMAT
			  ": %s", self->device, self->jobs, mmhal_strerror(ret));
		return GST_FLOW_ERROR;
	}
	self->jobs++;

	ret = mmhal_buf_begin_cpu(vf->buf, MMHAL_SYNC_READ);
	if (ret) {
		HAL_ERROR(self, RESOURCE, READ, "%s: CPU access: %s",
			  self->device, mmhal_strerror(ret));
		return GST_FLOW_ERROR;
	}
	vf->cpu = TRUE;
	vf->img.format = image_format(GST_VIDEO_INFO_FORMAT(&self->vinfo));
	vf->img.width = GST_VIDEO_INFO_WIDTH(&self->vinfo);
	vf->img.height = GST_VIDEO_INFO_HEIGHT(&self->vinfo);
	for (p = 0; p < n_planes && p < 2; p++) {
		vf->img.plane[p] = base + offset[p];
		vf->img.stride[p] = stride[p];
	}
	return GST_FLOW_OK;
}

static void frame_done(struct vframe *vf)
{
	if (vf->cpu)
		mmhal_buf_end_cpu(vf->buf, MMHAL_SYNC_READ);
	vf->cpu = FALSE;
}

/* --- asks ---------------------------------------------------------------- */

struct gen {
	GstMmhalInfer *self;
	GString *text;
	uint64_t first_mono;
	int n;
};

static int on_token(int32_t token, const char *piece, size_t len, void *arg)
{
	struct gen *g = arg;

	(void)token;
	if (!g->n++)
		g->first_mono = mono_ns();
	g_string_append_len(g->text, piece, len);
	return g_atomic_int_get(&g->self->stopping);
}

static double pct(const gdouble *v, guint n, double q)
{
	gdouble s[SLO_WINDOW];
	guint i, j, k;

	if (!n)
		return 0;
	memcpy(s, v, n * sizeof(*s));
	for (i = 1; i < n; i++) {
		gdouble x = s[i];

		for (j = i; j > 0 && s[j - 1] > x; j--)
			s[j] = s[j - 1];
		s[j] = x;
	}
	k = (guint)(q * n + 0.999999);	/* nearest rank */
	if (k < 1)
		k = 1;
	return s[k - 1];
}

/* CLOCK_MONOTONIC ns onto the pipeline clock, as a running time. */
static GstClockTime mono_to_running(GstMmhalInfer *self, uint64_t mono)
{
	GstClock *clock = gst_element_get_clock(GST_ELEMENT(self));
	GstClockTime base = gst_element_get_base_time(GST_ELEMENT(self));
	GstClockTime now_c, r = GST_CLOCK_TIME_NONE;
	uint64_t now_m;
	gint64 t;

	if (!clock)
		return r;
	now_m = mono_ns();
	now_c = gst_clock_get_time(clock);
	gst_object_unref(clock);
	t = (gint64)now_c + ((gint64)mono - (gint64)now_m) - (gint64)base;
	if (t >= 0)
		r = (GstClockTime)t;
	return r;
}

/* The audio window's level and pitch, for checking it against the source. */
static void pcm_measure(const int16_t *pcm, size_t n, uint32_t rate,
			double *rms_dbfs, double *freq)
{
	double sum = 0;
	size_t i, zc = 0;

	for (i = 0; i < n; i++) {
		sum += (double)pcm[i] * pcm[i];
		if (i && ((pcm[i - 1] < 0) != (pcm[i] < 0)))
			zc++;
	}
	*rms_dbfs = sum > 0 ? 10 * log10(sum / n / (32768.0 * 32768.0)) : -200;
	*freq = n ? zc * (double)rate / (2.0 * n) : 0;
}

/*
 * One ask: the frame (vf, may be NULL: audio only) and the newest audio
 * window, the prompt, the answer pushed with the frame's PTS.
 */
static GstFlowReturn ask(GstMmhalInfer *self, struct vframe *vf,
			 GstClockTime pts, GstClockTime duration)
{
	struct mmhal_chunk *chunks[2] = { NULL, NULL };
	struct mmhal_chunk_info ci = { .size = sizeof(ci) };
	struct awin_view av = { .idx = -1 };
	gboolean have_audio = FALSE;
	struct gen g = { .self = self };
	GstMmhalAnswerMeta *meta;
	GstFlowReturn flow = GST_FLOW_OK;
	struct mmhal_chat_msg msg;
	GString *user = NULL;
	char err[256] = "", *prompt = NULL;
	double enc_ms = 0, prefill_ms, decode_ms, rms = 0, freq = 0;
	uint64_t t1, t2, t3, sof_mono;
	int n_chunks = 0, ret, i;
	size_t len = 0;
	GstBuffer *out;
	gchar *prompt_prop;
	gboolean on_change;

	if (self->aw && self->audio_rate && awin_take(self->aw, &av) == 0)
		have_audio = TRUE;
	GST_OBJECT_LOCK(self);
	on_change = self->on_change;
	GST_OBJECT_UNLOCK(self);
	if (have_audio && on_change) {
		/* on-change: a window without speech-like energy is not asked
		 * about (libmmhal's voice activity measure, its defaults) */
		struct mmhal_vad vad;

		if (mmhal_vad(av.pcm, av.n, self->audio_rate, -40.0f, 0.1f,
			      &vad) == 0 && !vad.speech) {
			GST_DEBUG_OBJECT(self, "audio window without speech (%.1f dBFS)",
					 vad.max_dbfs);
			awin_release(self->aw, av.idx);
			av.idx = -1;
			have_audio = FALSE;
		}
	}
	if (!vf && have_audio) {
		pts = av.start;
		duration = GST_CLOCK_TIME_IS_VALID(av.end) &&
			   GST_CLOCK_TIME_IS_VALID(av.start) ?
			   av.end - av.start : GST_CLOCK_TIME_NONE;
	}
	if (vf) {
		ret = mmhal_encode_image(self->proj, &vf->img, &chunks[n_chunks],
					 err, sizeof(err));
		frame_done(vf);
		if (ret) {
			HAL_ERROR(self, STREAM, DECODE, "image encoder: %s", err);
			flow = GST_FLOW_ERROR;
			goto out;
		}
		mmhal_chunk_info(chunks[n_chunks], &ci);
		enc_ms += ci.preprocess_ms + ci.encode_ms;
		n_chunks++;
	}
	if (have_audio) {
		struct mmhal_audio a = mmhal_audio_s16(av.pcm, av.n,
						       self->audio_rate);

		pcm_measure(av.pcm, av.n, self->audio_rate, &rms, &freq);
		ret = mmhal_encode_audio(self->proj_audio ? self->proj_audio :
							    self->proj,
					 &a, &chunks[n_chunks], err,
					 sizeof(err));
		if (ret) {
			HAL_ERROR(self, STREAM, DECODE, "audio encoder: %s", err);
			flow = GST_FLOW_ERROR;
			goto out;
		}
		mmhal_chunk_info(chunks[n_chunks], &ci);
		enc_ms += ci.preprocess_ms + ci.encode_ms;
		n_chunks++;
	}
	if (!n_chunks)
		goto out;
	GST_OBJECT_LOCK(self);
	prompt_prop = g_strdup(self->prompt ? self->prompt : "");
	GST_OBJECT_UNLOCK(self);
	user = g_string_new(NULL);
	if (!strstr(prompt_prop, MMHAL_MEDIA_MARKER)) {
		for (i = 0; i < n_chunks; i++)
			g_string_append(user, MMHAL_MEDIA_MARKER);
		g_string_append(user, "\n");
	}
	g_string_append(user, prompt_prop);
	g_free(prompt_prop);
	msg.role = "user";
	msg.content = user->str;
	ret = mmhal_model_chat_format(self->model, &msg, 1, 1, NULL, 0, &len);
	if (ret && ret != -ENOSPC) {
		HAL_ERROR(self, LIBRARY, SETTINGS,
			  "the model's chat template is not supported: %s",
			  mmhal_strerror(ret));
		flow = GST_FLOW_ERROR;
		goto out;
	}
	prompt = g_malloc(len + 1);
	mmhal_model_chat_format(self->model, &msg, 1, 1, prompt, len + 1, &len);

	GST_INFO_OBJECT(self, "ask at %" GST_TIME_FORMAT ": evaluating %d chunks",
			GST_TIME_ARGS(pts), n_chunks);
	gst_element_post_message(GST_ELEMENT(self),
		gst_message_new_element(GST_OBJECT(self),
			gst_structure_new("mmhalinfer-asking",
				"pts", G_TYPE_UINT64, (guint64)pts, NULL)));
	t1 = mono_ns();
	ret = mmhal_ctx_eval_prompt(self->ctx, prompt,
				    (const struct mmhal_chunk *const *)chunks,
				    n_chunks, 0, NULL);
	if (ret == -ECANCELED || g_atomic_int_get(&self->stopping))
		goto aborted;
	if (ret) {
		HAL_ERROR(self, LIBRARY, FAILED, "prompt: %s",
			  mmhal_ctx_error(self->ctx));
		flow = GST_FLOW_ERROR;
		goto out;
	}
	t2 = mono_ns();
	g.text = g_string_new(NULL);
	ret = mmhal_ctx_generate(self->ctx, NULL, 0, self->n_predict, NULL, 0,
				 NULL, on_token, &g, NULL);
	t3 = mono_ns();
	if (ret == -ECANCELED || g_atomic_int_get(&self->stopping))
		goto aborted;
	if (ret) {
		HAL_ERROR(self, LIBRARY, FAILED, "generating: %s",
			  mmhal_ctx_error(self->ctx));
		flow = GST_FLOW_ERROR;
		goto out;
	}
	if (!g.n)
		g.first_mono = t3;
	prefill_ms = (t2 - t1) / 1e6;
	decode_ms = (t3 - t2) / 1e6;
	sof_mono = vf ? vf->job.ts.sof_mono : av.sof_mono;

	out = gst_buffer_new_memdup(g.text->str, g.text->len);
	GST_BUFFER_PTS(out) = pts;
	GST_BUFFER_DURATION(out) = duration;
	meta = gst_buffer_add_mmhal_answer_meta(out);
	meta->frame_pts = vf ? pts : GST_CLOCK_TIME_NONE;
	if (vf) {
		meta->sequence = vf->job.sequence;
		meta->sof_raw = vf->job.ts.sof_raw;
		meta->eof_raw = vf->job.ts.eof_raw;
		meta->sof_mono = vf->job.ts.sof_mono;
		meta->eof_mono = vf->job.ts.eof_mono;
	} else {
		meta->sequence = av.sequence;
		meta->sof_mono = av.sof_mono;
		meta->eof_mono = av.eof_mono;
	}
	meta->sof_running_time = mono_to_running(self, meta->sof_mono);
	meta->eof_running_time = mono_to_running(self, meta->eof_mono);
	if (have_audio) {
		meta->audio_start = av.start;
		meta->audio_end = av.end;
	}
	meta->sof_to_first_token_ms = ((double)g.first_mono - sof_mono) / 1e6;
	meta->sof_to_last_token_ms = ((double)t3 - sof_mono) / 1e6;
	meta->encode_ms = enc_ms;
	meta->prefill_ms = prefill_ms;
	meta->decode_ms = decode_ms;
	meta->bytes_copied = self->bytes_copied;
	self->slo_first[self->slo_n++ % SLO_WINDOW] = meta->sof_to_first_token_ms;

	{
		guint n = MIN(self->slo_n, SLO_WINDOW);
		GstStructure *s = gst_structure_new(
			"mmhalinfer-answer",
			"text", G_TYPE_STRING, g.text->str,
			"tokens", G_TYPE_INT, g.n,
			"pts", G_TYPE_UINT64, (guint64)pts,
			"frame-pts", G_TYPE_UINT64, (guint64)meta->frame_pts,
			"sequence", G_TYPE_UINT64, meta->sequence,
			"sof-raw", G_TYPE_UINT64, meta->sof_raw,
			"eof-raw", G_TYPE_UINT64, meta->eof_raw,
			"sof-mono", G_TYPE_UINT64, meta->sof_mono,
			"eof-mono", G_TYPE_UINT64, meta->eof_mono,
			"sof-running-time", G_TYPE_UINT64, (guint64)meta->sof_running_time,
			"eof-running-time", G_TYPE_UINT64, (guint64)meta->eof_running_time,
			"image", G_TYPE_BOOLEAN, vf != NULL,
			"audio", G_TYPE_BOOLEAN, have_audio,
			"audio-start", G_TYPE_UINT64, (guint64)meta->audio_start,
			"audio-end", G_TYPE_UINT64, (guint64)meta->audio_end,
			"audio-in-rate", G_TYPE_UINT, have_audio ? av.in_rate : 0,
			"audio-in-channels", G_TYPE_UINT, have_audio ? av.in_channels : 0,
			"audio-rate", G_TYPE_UINT, have_audio ? self->audio_rate : 0,
			"audio-rms-dbfs", G_TYPE_DOUBLE, rms,
			"audio-freq", G_TYPE_DOUBLE, freq,
			"sof-to-first-token-ms", G_TYPE_DOUBLE, meta->sof_to_first_token_ms,
			"sof-to-last-token-ms", G_TYPE_DOUBLE, meta->sof_to_last_token_ms,
			"first-token-p50-ms", G_TYPE_DOUBLE, pct(self->slo_first, n, 0.50),
			"first-token-p95-ms", G_TYPE_DOUBLE, pct(self->slo_first, n, 0.95),
			"encode-ms", G_TYPE_DOUBLE, enc_ms,
			"prefill-ms", G_TYPE_DOUBLE, prefill_ms,
			"decode-ms", G_TYPE_DOUBLE, decode_ms,
			"bytes-copied", G_TYPE_UINT64, self->bytes_copied,
			"bytes-in-place", G_TYPE_UINT64, self->bytes_in_place,
			"dmabuf-frames", G_TYPE_UINT64, self->dmabuf_frames,
			"sysmem-frames", G_TYPE_UINT64, self->sysmem_frames,
			NULL);

		gst_element_post_message(GST_ELEMENT(self),
			gst_message_new_element(GST_OBJECT(self), s));
	}
	self->answers++;

	g_mutex_lock(&self->push_lock);
	if (self->need_segment) {
		GstSegment seg;

		gst_segment_init(&seg, GST_FORMAT_TIME);
		gst_pad_push_event(self->src, gst_event_new_segment(&seg));
		self->need_segment = FALSE;
	}
	flow = gst_pad_push(self->src, out);
	g_mutex_unlock(&self->push_lock);
	goto out;

aborted:
	/* not lost in silence: said, and the session emptied */
	self->aborted++;
	GST_INFO_OBJECT(self, "ask at %" GST_TIME_FORMAT " interrupted (flush or "
			"state change): no answer", GST_TIME_ARGS(pts));
	mmhal_ctx_reset(self->ctx);
	gst_element_post_message(GST_ELEMENT(self),
		gst_message_new_element(GST_OBJECT(self),
			gst_structure_new("mmhalinfer-aborted",
				"pts", G_TYPE_UINT64, (guint64)pts, NULL)));
	flow = GST_FLOW_FLUSHING;
out:
	if (vf)
		frame_done(vf);
	if (av.idx >= 0)
		awin_release(self->aw, av.idx);
	for (i = 0; i < 2; i++)
		mmhal_chunk_free(chunks[i]);
	if (g.text)
		g_string_free(g.text, TRUE);
	if (user)
		g_string_free(user, TRUE);
	g_free(prompt);
	return flow;
}

static GstFlowReturn vsink_chain(GstPad *pad, GstObject *parent,
				 GstBuffer *buf)
{
	GstMmhalInfer *self = GST_MMHAL_INFER(parent);
	GstClockTime pts = GST_BUFFER_PTS(buf);
	struct vframe vf;
	GstFlowReturn flow;
	guint interval;
	gboolean on_change;
	gfloat thr;

	(void)pad;
	if (g_atomic_int_get(&self->stopping)) {
		gst_buffer_unref(buf);
		return GST_FLOW_FLUSHING;
	}
	if (!self->have_vinfo) {
		gst_buffer_unref(buf);
		GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, (NULL),
				  ("a frame before caps"));
		return GST_FLOW_NOT_NEGOTIATED;
	}
	GST_OBJECT_LOCK(self);
	interval = self->ask_interval_ms;
	on_change = self->on_change;
	thr = self->scene_threshold;
	GST_OBJECT_UNLOCK(self);
	if (interval && GST_CLOCK_TIME_IS_VALID(pts) &&
	    GST_CLOCK_TIME_IS_VALID(self->last_ask_pts) &&
	    pts >= self->last_ask_pts &&
	    pts - self->last_ask_pts < interval * GST_MSECOND) {
		gst_buffer_unref(buf);
		return GST_FLOW_OK;
	}
	flow = frame_prepare(self, buf, &vf);
	if (flow != GST_FLOW_OK) {
		frame_done(&vf);
		gst_buffer_unref(buf);
		return flow;
	}
	if (on_change) {
		uint8_t sig[MMHAL_SIG_CELLS];

		if (mmhal_scene_signature(&vf.img, sig) == 0) {
			if (self->have_sig &&
			    mmhal_scene_diff(sig, self->last_sig) <= thr) {
				frame_done(&vf);
				gst_buffer_unref(buf);
				return GST_FLOW_OK;
			}
			memcpy(self->last_sig, sig, sizeof(sig));
			self->have_sig = TRUE;
		}
	}
	self->last_ask_pts = pts;
	flow = ask(self, &vf, pts, GST_BUFFER_DURATION(buf));
	gst_buffer_unref(buf);
	return flow;
}

static GstFlowReturn asink_chain(GstPad *pad, GstObject *parent,
				 GstBuffer *buf)
{
	GstMmhalInfer *self = GST_MMHAL_INFER(parent);
	GstFlowReturn flow = GST_FLOW_OK;
	char err[256] = "";
	GstMapInfo mi;
	int n;

	(void)pad;
	if (g_atomic_int_get(&self->stopping)) {
		gst_buffer_unref(buf);
		return GST_FLOW_FLUSHING;
	}
	if (!self->aw) {
		gst_buffer_unref(buf);
		return GST_FLOW_NOT_NEGOTIATED;
	}
	if (!gst_buffer_map(buf, &mi, GST_MAP_READ)) {
		gst_buffer_unref(buf);
		GST_ELEMENT_ERROR(self, RESOURCE, READ, (NULL),
				  ("cannot map an audio buffer"));
		return GST_FLOW_ERROR;
	}
	n = awin_push(self->aw, (const int16_t *)mi.data,
		      mi.size / (2 * self->a_channels),
		      GST_BUFFER_PTS(buf),
		      GST_BUFFER_FLAG_IS_SET(buf, GST_BUFFER_FLAG_DISCONT),
		      err, sizeof(err));
	gst_buffer_unmap(buf, &mi);
	gst_buffer_unref(buf);
	if (n < 0) {
		HAL_ERROR(self, RESOURCE, READ, "%s", err[0] ? err :
			  mmhal_strerror(n));
		return GST_FLOW_ERROR;
	}
	/* without a camera, each full window is asked about (the answer
	 * takes the window's PTS) */
	if (n > 0 && !gst_pad_is_linked(self->vsink))
		flow = ask(self, NULL, GST_CLOCK_TIME_NONE, GST_CLOCK_TIME_NONE);
	return flow;
}

/* --- events and caps ----------------------------------------------------- */

static gboolean vsink_setcaps(GstMmhalInfer *self, GstCaps *caps)
{
	GstVideoInfo info;
	GstStructure *st;

	if (!gst_video_info_from_caps(&info, caps) ||
	    !image_format(GST_VIDEO_INFO_FORMAT(&info))) {
		GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, (NULL),
				  ("caps %" GST_PTR_FORMAT " are not a format libmmhal reads",
				   caps));
		return FALSE;
	}
	/* what the template cannot say: NV12 is read at half resolution
	 * both ways (mmhal_image: even width and height) */
	if (GST_VIDEO_INFO_FORMAT(&info) == GST_VIDEO_FORMAT_NV12 &&
	    ((GST_VIDEO_INFO_WIDTH(&info) | GST_VIDEO_INFO_HEIGHT(&info)) & 1)) {
		GST_ELEMENT_ERROR(self, CORE, NEGOTIATION,
				  ("NV12 %dx%d: libmmhal reads NV12 of even width and height",
				   GST_VIDEO_INFO_WIDTH(&info),
				   GST_VIDEO_INFO_HEIGHT(&info)), (NULL));
		return FALSE;
	}
	self->vinfo = info;
	self->have_vinfo = TRUE;
	st = gst_caps_get_structure(caps, 0);
	GST_INFO_OBJECT(self, "video %s %dx%d%s", gst_video_format_to_string(
				GST_VIDEO_INFO_FORMAT(&info)),
			GST_VIDEO_INFO_WIDTH(&info), GST_VIDEO_INFO_HEIGHT(&info),
			gst_caps_features_contains(gst_caps_get_features(caps, 0),
						   GST_CAPS_FEATURE_MEMORY_DMABUF) ?
				" (dma-buf)" : "");
	(void)st;
	return TRUE;
}

static gboolean asink_setcaps(GstMmhalInfer *self, GstCaps *caps)
{
	GstAudioInfo info;
	char err[256] = "";
	gchar *dev;
	guint w, ms;
	int ret;

	if (!gst_audio_info_from_caps(&info, caps))
		return FALSE;
	if (!self->audio_rate) {
		GST_ELEMENT_ERROR(self, CORE, NEGOTIATION, (NULL),
				  ("audio linked, but the mmproj has no audio encoder"));
		return FALSE;
	}
	if (!self->aw) {
		GST_OBJECT_LOCK(self);
		dev = g_strdup(self->device);
		w = self->audio_weight;
		ms = self->listen_ms;
		GST_OBJECT_UNLOCK(self);
		ret = awin_create(dev, self->audio_rate, ms, w, &self->aw, err,
				  sizeof(err));
		g_free(dev);
		if (ret) {
			HAL_ERROR(self, RESOURCE, OPEN_READ_WRITE, "%s", err);
			return FALSE;
		}
	}
	ret = awin_set_format(self->aw, GST_AUDIO_INFO_RATE(&info),
			      GST_AUDIO_INFO_CHANNELS(&info), err, sizeof(err));
	if (ret) {
		HAL_ERROR(self, CORE, NEGOTIATION, "%s", err);
		return FALSE;
	}
	self->a_channels = GST_AUDIO_INFO_CHANNELS(&info);
	GST_INFO_OBJECT(self, "audio %d Hz x %d, resampled to %u Hz",
			GST_AUDIO_INFO_RATE(&info), GST_AUDIO_INFO_CHANNELS(&info),
			self->audio_rate);
	return TRUE;
}

/* EOS downstream once every linked sink pad had it (after their last
 * answers: the asks run in the chain functions, before the EOS). */
static gboolean maybe_eos(GstMmhalInfer *self)
{
	gboolean v = self->vsink_eos || !gst_pad_is_linked(self->vsink);
	gboolean a = self->asink_eos || !gst_pad_is_linked(self->asink);
	gboolean ret = TRUE;

	g_mutex_lock(&self->push_lock);
	if (v && a && !self->sent_eos) {
		self->sent_eos = TRUE;
		if (self->need_segment) {
			GstSegment seg;

			gst_segment_init(&seg, GST_FORMAT_TIME);
			gst_pad_push_event(self->src, gst_event_new_segment(&seg));
			self->need_segment = FALSE;
		}
		ret = gst_pad_push_event(self->src, gst_event_new_eos());
	}
	g_mutex_unlock(&self->push_lock);
	return ret;
}

static gboolean sink_event(GstPad *pad, GstObject *parent, GstEvent *event)
{
	GstMmhalInfer *self = GST_MMHAL_INFER(parent);
	gboolean video = pad == self->vsink, ret = TRUE;

	switch (GST_EVENT_TYPE(event)) {
	case GST_EVENT_CAPS: {
		GstCaps *caps;

		gst_event_parse_caps(event, &caps);
		ret = video ? vsink_setcaps(self, caps) : asink_setcaps(self, caps);
		gst_event_unref(event);
		return ret;
	}
	case GST_EVENT_STREAM_START:
		/* the video's, or the audio's when there is no video; then
		 * the answers' caps */
		if (video || !gst_pad_is_linked(self->vsink)) {
			GstCaps *caps = gst_pad_get_pad_template_caps(self->src);

			ret = gst_pad_push_event(self->src, event);
			gst_pad_push_event(self->src, gst_event_new_caps(caps));
			gst_caps_unref(caps);
			return ret;
		}
		gst_event_unref(event);
		return TRUE;
	case GST_EVENT_SEGMENT:
		if (video || !gst_pad_is_linked(self->vsink)) {
			g_mutex_lock(&self->push_lock);
			/* answers carry the frames' PTS: the same segment */
			self->need_segment = FALSE;
			ret = gst_pad_push_event(self->src, event);
			g_mutex_unlock(&self->push_lock);
			return ret;
		}
		gst_event_unref(event);
		return TRUE;
	case GST_EVENT_FLUSH_START:
		/* a running ask stops at its next layer or token */
		g_atomic_int_set(&self->stopping, 1);
		if (video || !gst_pad_is_linked(self->vsink))
			return gst_pad_push_event(self->src, event);
		gst_event_unref(event);
		return TRUE;
	case GST_EVENT_FLUSH_STOP:
		g_atomic_int_set(&self->stopping, 0);
		if (video) {
			self->last_ask_pts = GST_CLOCK_TIME_NONE;
			self->vsink_eos = FALSE;
		} else {
			if (self->aw)
				awin_reset(self->aw);
			self->asink_eos = FALSE;
		}
		self->sent_eos = FALSE;
		if (video || !gst_pad_is_linked(self->vsink))
			return gst_pad_push_event(self->src, event);
		gst_event_unref(event);
		return TRUE;
	case GST_EVENT_EOS:
		if (video)
			self->vsink_eos = TRUE;
		else
			self->asink_eos = TRUE;
		gst_event_unref(event);
		return maybe_eos(self);
	case GST_EVENT_GAP:
		gst_event_unref(event);
		return TRUE;
	default:
		if (video || !gst_pad_is_linked(self->vsink))
			return gst_pad_event_default(pad, parent, event);
		gst_event_unref(event);
		return TRUE;
	}
}

/* --- properties ---------------------------------------------------------- */

static void set_string(GstMmhalInfer *self, gchar **field, const GValue *v)
{
	GST_OBJECT_LOCK(self);
	g_free(*field);
	*field = g_value_dup_string(v);
	GST_OBJECT_UNLOCK(self);
}

static void gst_mmhal_infer_set_property(GObject *object, guint id,
					 const GValue *v, GParamSpec *pspec)
{
	GstMmhalInfer *self = GST_MMHAL_INFER(object);

	switch (id) {
	case PROP_MODEL:
		set_string(self, &self->model_path, v);
		break;
	case PROP_MMPROJ:
		set_string(self, &self->mmproj_path, v);
		break;
	case PROP_MMPROJ_AUDIO:
		set_string(self, &self->mmproj_audio_path, v);
		break;
	case PROP_PROMPT:
		set_string(self, &self->prompt, v);
		break;
	case PROP_TIER_MODEL:
		set_string(self, &self->tier_model, v);
		break;
	case PROP_DEVICE:
		set_string(self, &self->device, v);
		break;
	case PROP_ASK_INTERVAL:
		GST_OBJECT_LOCK(self);
		self->ask_interval_ms = g_value_get_uint(v);
		GST_OBJECT_UNLOCK(self);
		break;
	case PROP_ON_CHANGE:
		GST_OBJECT_LOCK(self);
		self->on_change = g_value_get_boolean(v);
		GST_OBJECT_UNLOCK(self);
		break;
	case PROP_SCENE_THRESHOLD:
		GST_OBJECT_LOCK(self);
		self->scene_threshold = g_value_get_float(v);
		GST_OBJECT_UNLOCK(self);
		break;
	case PROP_TIER:
		self->tier = g_value_get_int(v);
		break;
	case PROP_THREADS:
		self->threads = g_value_get_int(v);
		break;
	case PROP_WEIGHT:
		self->weight = g_value_get_uint(v);
		if (self->vchan)
			mmhal_chan_set_weight(self->vchan, self->weight);
		break;
	case PROP_AUDIO_WEIGHT:
		self->audio_weight = g_value_get_uint(v);
		break;
	case PROP_N_PREDICT:
		self->n_predict = g_value_get_int(v);
		break;
	case PROP_LISTEN_MS:
		self->listen_ms = g_value_get_uint(v);
		break;
	case PROP_TILES:
		self->tiles = g_value_get_boolean(v);
		break;
	default:
		G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, pspec);
		break;
	}
}

static void gst_mmhal_infer_get_property(GObject *object, guint id, GValue *v,
					 GParamSpec *pspec)
{
	GstMmhalInfer *self = GST_MMHAL_INFER(object);

	GST_OBJECT_LOCK(self);
	switch (id) {
	case PROP_MODEL:
		g_value_set_string(v, self->model_path);
		break;
	case PROP_MMPROJ:
		g_value_set_string(v, self->mmproj_path);
		break;
	case PROP_MMPROJ_AUDIO:
		g_value_set_string(v, self->mmproj_audio_path);
		break;
	case PROP_PROMPT:
		g_value_set_string(v, self->prompt);
		break;
	case PROP_TIER_MODEL:
		g_value_set_string(v, self->tier_model);
		break;
	case PROP_DEVICE:
		g_value_set_string(v, self->device);
		break;
	case PROP_ASK_INTERVAL:
		g_value_set_uint(v, self->ask_interval_ms);
		break;
	case PROP_ON_CHANGE:
		g_value_set_boolean(v, self->on_change);
		break;
	case PROP_SCENE_THRESHOLD:
		g_value_set_float(v, self->scene_threshold);
		break;
	case PROP_TIER:
		g_value_set_int(v, self->tier);
		break;
	case PROP_THREADS:
		g_value_set_int(v, self->threads);
		break;
	case PROP_WEIGHT:
		g_value_set_uint(v, self->weight);
		break;
	case PROP_AUDIO_WEIGHT:
		g_value_set_uint(v, self->audio_weight);
		break;
	case PROP_N_PREDICT:
		g_value_set_int(v, self->n_predict);
		break;
	case PROP_LISTEN_MS:
		g_value_set_uint(v, self->listen_ms);
		break;
	case PROP_TILES:
		g_value_set_boolean(v, self->tiles);
		break;
	case PROP_BYTES_COPIED:
		g_value_set_uint64(v, self->bytes_copied);
		break;
	case PROP_DMABUF_FRAMES:
		g_value_set_uint64(v, self->dmabuf_frames);
		break;
	case PROP_ANSWERS:
		g_value_set_uint64(v, self->answers);
		break;
	default:
		G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, pspec);
		break;
	}
	GST_OBJECT_UNLOCK(self);
}

/* --- object -------------------------------------------------------------- */

static void gst_mmhal_infer_finalize(GObject *object)
{
	GstMmhalInfer *self = GST_MMHAL_INFER(object);

	mmhal_stop(self);
	g_free(self->model_path);
	g_free(self->mmproj_path);
	g_free(self->mmproj_audio_path);
	g_free(self->prompt);
	g_free(self->device);
	g_free(self->tier_model);
	g_mutex_clear(&self->push_lock);
	G_OBJECT_CLASS(gst_mmhal_infer_parent_class)->finalize(object);
}

static void gst_mmhal_infer_init(GstMmhalInfer *self)
{
	self->vsink = gst_pad_new_from_static_template(&vsink_template,
						       "video_sink");
	gst_pad_set_chain_function(self->vsink, vsink_chain);
	gst_pad_set_event_function(self->vsink, sink_event);
	GST_PAD_SET_PROXY_ALLOCATION(self->vsink);
	gst_element_add_pad(GST_ELEMENT(self), self->vsink);

	self->asink = gst_pad_new_from_static_template(&asink_template,
						       "audio_sink");
	gst_pad_set_chain_function(self->asink, asink_chain);
	gst_pad_set_event_function(self->asink, sink_event);
	gst_element_add_pad(GST_ELEMENT(self), self->asink);

	self->src = gst_pad_new_from_static_template(&src_template, "src");
	gst_pad_use_fixed_caps(self->src);
	gst_element_add_pad(GST_ELEMENT(self), self->src);

	self->prompt = g_strdup("What do you see?");
	self->device = g_strdup(MMHAL_DEFAULT_DEV);
	self->ask_interval_ms = 1000;
	self->scene_threshold = 3.0f;
	self->tier = -1;
	self->weight = MMHAL_WEIGHT_DEFAULT;
	self->audio_weight = MMHAL_WEIGHT_DEFAULT;
	self->n_predict = 16;
	self->listen_ms = 1000;
	self->tiles = TRUE;
	g_mutex_init(&self->push_lock);
	reset_stream(self);
}

static void gst_mmhal_infer_class_init(GstMmhalInferClass *klass)
{
	GObjectClass *oc = G_OBJECT_CLASS(klass);
	GstElementClass *ec = GST_ELEMENT_CLASS(klass);
	const GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS;
	const GParamFlags rw_ready = rw | GST_PARAM_MUTABLE_READY;
	const GParamFlags ro = G_PARAM_READABLE | G_PARAM_STATIC_STRINGS;

	oc->set_property = gst_mmhal_infer_set_property;
	oc->get_property = gst_mmhal_infer_get_property;
	oc->finalize = gst_mmhal_infer_finalize;
	ec->change_state = gst_mmhal_infer_change_state;

	g_object_class_install_property(oc, PROP_MODEL,
		g_param_spec_string("model", "Model",
			"Language model GGUF file", NULL, rw_ready));
	g_object_class_install_property(oc, PROP_MMPROJ,
		g_param_spec_string("mmproj", "Mmproj",
			"Multimodal projector GGUF (vision, and audio if it has it)",
			NULL, rw_ready));
	g_object_class_install_property(oc, PROP_MMPROJ_AUDIO,
		g_param_spec_string("mmproj-audio", "Audio mmproj",
			"A second mmproj GGUF with the audio encoder (optional)",
			NULL, rw_ready));
	g_object_class_install_property(oc, PROP_PROMPT,
		g_param_spec_string("prompt", "Prompt",
			"The question; media go before it unless it places them with <__media__>",
			"What do you see?", rw | GST_PARAM_MUTABLE_PLAYING));
	g_object_class_install_property(oc, PROP_ASK_INTERVAL,
		g_param_spec_uint("ask-interval", "Ask interval",
			"Least stream time between asks, ms (0: every frame)",
			0, G_MAXUINT, 1000, rw | GST_PARAM_MUTABLE_PLAYING));
	g_object_class_install_property(oc, PROP_ON_CHANGE,
		g_param_spec_boolean("on-change", "On change",
			"Ask only when the scene changed (libmmhal's scene signature)",
			FALSE, rw | GST_PARAM_MUTABLE_PLAYING));
	g_object_class_install_property(oc, PROP_SCENE_THRESHOLD,
		g_param_spec_float("scene-threshold", "Scene threshold",
			"Largest thumbnail difference (0..255) that is the same scene",
			0, 255, 3.0f, rw | GST_PARAM_MUTABLE_PLAYING));
	g_object_class_install_property(oc, PROP_TIER,
		g_param_spec_int("tier", "Precision tier",
			"Decoder precision tier (-1: the highest; 0: the lowest)",
			-1, MMHAL_MAX_TIERS - 1, -1, rw_ready));
	g_object_class_install_property(oc, PROP_TIER_MODEL,
		g_param_spec_string("tier-model", "Tier model",
			"The same model at another precision, added as a tier",
			NULL, rw_ready));
	g_object_class_install_property(oc, PROP_THREADS,
		g_param_spec_int("threads", "Threads",
			"Model threads (0: online CPUs)", 0, 1024, 0, rw_ready));
	g_object_class_install_property(oc, PROP_DEVICE,
		g_param_spec_string("device", "Device", "The mmedge device",
			MMHAL_DEFAULT_DEV, rw_ready));
	g_object_class_install_property(oc, PROP_WEIGHT,
		g_param_spec_uint("weight", "Weight",
			"Arbiter weight of the frames' feed channel",
			MMHAL_WEIGHT_MIN, MMHAL_WEIGHT_MAX, MMHAL_WEIGHT_DEFAULT,
			rw | GST_PARAM_MUTABLE_READY));
	g_object_class_install_property(oc, PROP_AUDIO_WEIGHT,
		g_param_spec_uint("audio-weight", "Audio weight",
			"Arbiter weight of the audio windows' feed channel",
			MMHAL_WEIGHT_MIN, MMHAL_WEIGHT_MAX, MMHAL_WEIGHT_DEFAULT,
			rw_ready));
	g_object_class_install_property(oc, PROP_N_PREDICT,
		g_param_spec_int("n-predict", "Tokens",
			"Most tokens per answer", 1, 65536, 16,
			rw | GST_PARAM_MUTABLE_PLAYING));
	g_object_class_install_property(oc, PROP_LISTEN_MS,
		g_param_spec_uint("listen-ms", "Listen",
			"Audio window, ms", 10, 30000, 1000, rw_ready));
	g_object_class_install_property(oc, PROP_TILES,
		g_param_spec_boolean("tiles", "Tiles",
			"Images as llama.cpp's mtmd cuts them (overview + tiles); "
			"false: the overview only", TRUE, rw_ready));
	g_object_class_install_property(oc, PROP_BYTES_COPIED,
		g_param_spec_uint64("bytes-copied", "Bytes copied",
			"Frame payload bytes the CPU copied (system-memory frames)",
			0, G_MAXUINT64, 0, ro));
	g_object_class_install_property(oc, PROP_DMABUF_FRAMES,
		g_param_spec_uint64("dmabuf-frames", "Dma-buf frames",
			"Frames imported from dma-bufs and read in place",
			0, G_MAXUINT64, 0, ro));
	g_object_class_install_property(oc, PROP_ANSWERS,
		g_param_spec_uint64("answers", "Answers", "Answers pushed",
			0, G_MAXUINT64, 0, ro));

	gst_element_class_add_static_pad_template(ec, &vsink_template);
	gst_element_class_add_static_pad_template(ec, &asink_template);
	gst_element_class_add_static_pad_template(ec, &src_template);
	gst_element_class_set_static_metadata(ec, "mmedge multimodal inference",
		"Filter/Analyzer/Video/Audio",
		"Asks a multimodal model (libmmhal) about dma-buf frames and audio, "
		"with mmedge's hardware timestamps",
		"mmedge project");
}

static gboolean plugin_init(GstPlugin *plugin)
{
	GST_DEBUG_CATEGORY_INIT(mmhalinfer_debug, "mmhalinfer", 0,
				"mmedge multimodal inference");
	return gst_element_register(plugin, "mmhalinfer", GST_RANK_NONE,
				    GST_TYPE_MMHAL_INFER);
}

#define PACKAGE "mmedge"
GST_PLUGIN_DEFINE(GST_VERSION_MAJOR, GST_VERSION_MINOR, mmhal,
		  "mmedge: libmmhal inference in GStreamer pipelines",
		  plugin_init, MMHAL_VERSION_STRING, "MIT/X11", "mmedge",
		  "https://example.invalid/mmedge")

// SPDX-License-Identifier: GPL-2.0
/*
 * mmstream - stream sensor channels of an mmedge device and show their
 * frames, hardware timestamps and statistics
 *
 *	mmstream [-d DEV] [-n FRAMES] [-j] [--camera WxH@FPS[:FMT]]
 *		 [--mic RATE:PERIOD[:tone|chirp]] [--imu RATE:PERIOD]
 *		 [--weight CHAN=W]
 *
 * Exit codes like mmctl: 0 success, 1 the request failed, 2 the command
 * line is wrong. Device access goes through libmmhal only.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mmhal.h>

#include "json.h"

#define EXIT_OK		0
#define EXIT_RUNTIME	1
#define EXIT_USAGE	2

#define MAX_CHANS	16
#define NR_BUFS		4
#define DEFAULT_FRAMES	30
#define STALL_MS	5000	/* no frame from a channel this long: error */

struct stream {
	char name[24];		/* camera0, mic0, imu0 (room for any int) */
	const char *type;	/* camera, mic, imu */
	char desc[48];		/* 320x240@30:GREY */
	struct mmhal_src src;
	uint32_t weight;
	struct mmhal_chan *chan;
	struct mmhal_buf *bufs[NR_BUFS];
	/* Frames seen, and what the summary needs. */
	uint64_t frames;
	uint64_t meta_bad;
	uint64_t last_sof, nr_sof;
	double sum_d, sum_d2;	/* SOF deltas, ns */
	uint64_t nr_d;
	uint64_t last_frame_ns;	/* CLOCK_MONOTONIC of the last dequeue */
	/* The driver's counters when the channel had its frames. */
	struct mmhal_chan_stats st;
	uint64_t want_frames;
	int st_err;
	double st_elapsed_s;
};

static uint64_t start_ns;

static struct stream streams[MAX_CHANS];
static int nr_streams;
static bool json;
/* -n 0: stream until a signal, quietly. */
static bool forever;
static volatile sig_atomic_t stop;

static const char usage_text[] =
	"Usage: mmstream [OPTIONS]\n"
	"\n"
	"Creates capture channels, queues 4 buffers on each, waits on the\n"
	"device fd and prints one line per frame: channel, sequence number,\n"
	"bytes, start-of-frame time (CLOCK_MONOTONIC from the hardware\n"
	"counter), end-start in microseconds, frames dropped so far and whether\n"
	"the in-band record matches. Ends with a per-channel summary from the\n"
	"driver's counters: frames, drops, MB/s, queue wait p50/p99, mean\n"
	"frame period and its jitter (standard deviation).\n"
	"\n"
	"Without a source option: --camera 320x240@30:GREY --mic 16000:320:tone\n"
	"--imu 200:10.\n"
	"\n"
	"Options:\n"
	"  -d, --dev DEV            device: a path, or a name under /dev (default "
	MMHAL_DEFAULT_DEV ")\n"
	"  -n, --frames N           frames per channel, then stop (default 30);\n"
	"                           0: stream until SIGINT or SIGTERM without\n"
	"                           frame lines, then print the summary\n"
	"  -j, --json               JSON lines: {\"type\":\"frame\",...} per frame,\n"
	"                           {\"type\":\"summary\",...} per channel\n"
	"      --camera WxH@FPS[:FMT]  a camera; FMT GREY (default), RGB24, NV12\n"
	"      --mic RATE:PERIOD[:tone|chirp]  a microphone, RATE Hz, PERIOD\n"
	"                           samples per buffer (default signal: tone)\n"
	"      --imu RATE:PERIOD    an IMU, RATE Hz, PERIOD samples per buffer\n"
	"      --weight CHAN=W      arbitration weight 1..10000 (above 100 needs\n"
	"                           CAP_SYS_NICE); CHAN is a type (camera, mic,\n"
	"                           imu: all of it) or a name (camera0)\n"
	"  -h, --help               show this help\n"
	"\n"
	"Exit status: 0 success, 1 the request failed, 2 usage error.\n";

static void err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void err(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("mmstream: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int usage_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_err(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("mmstream: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry 'mmstream -h' for help.\n", stderr);
	return EXIT_USAGE;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Unsigned decimal in 1..max; false if not. */
static bool parse_u32(const char *s, size_t len, uint32_t max, uint32_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (!len || len > 10)
		return false;
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (!v || v > max)
		return false;
	*out = (uint32_t)v;
	return true;
}

static struct stream *new_stream(const char *type)
{
	struct stream *s;
	int i, n = 0;

	if (nr_streams >= MAX_CHANS)
		return NULL;
	for (i = 0; i < nr_streams; i++)
		if (!strcmp(streams[i].type, type))
			n++;
	s = &streams[nr_streams++];
	memset(s, 0, sizeof(*s));
	s->type = type;
	s->weight = MMHAL_WEIGHT_DEFAULT;
	snprintf(s->name, sizeof(s->name), "%s%d", type, n);
	return s;
}

static const struct {
	const char *name;
	uint32_t fourcc;
} cam_fmts[] = {
	{ "GREY", MMHAL_FMT_GREY },
	{ "RGB24", MMHAL_FMT_RGB24 },
	{ "RGB3", MMHAL_FMT_RGB24 },
	{ "NV12", MMHAL_FMT_NV12 },
};

/* WxH@FPS[:FMT] */
static int add_camera(const char *arg)
{
	const char *x = strchr(arg, 'x'), *at = strchr(arg, '@');
	const char *colon = strchr(arg, ':'), *fmt = "GREY";
	uint32_t w, h, fps, fourcc = 0;
	struct stream *s;
	size_t i, fps_len;

	if (!x || !at || at < x)
		return usage_err("--camera '%s': want WxH@FPS[:FMT], e.g. 320x240@30:GREY",
				 arg);
	fps_len = colon ? (size_t)(colon - at - 1) : strlen(at + 1);
	if (!parse_u32(arg, (size_t)(x - arg), 65535, &w) ||
	    !parse_u32(x + 1, (size_t)(at - x - 1), 65535, &h) ||
	    !parse_u32(at + 1, fps_len, 1000, &fps))
		return usage_err("--camera '%s': want WxH@FPS[:FMT] with positive numbers, e.g. 320x240@30",
				 arg);
	if (colon)
		fmt = colon + 1;
	for (i = 0; i < sizeof(cam_fmts) / sizeof(cam_fmts[0]); i++)
		if (!strcasecmp(fmt, cam_fmts[i].name))
			fourcc = cam_fmts[i].fourcc;
	if (!fourcc)
		return usage_err("--camera '%s': unknown format '%s' (GREY, RGB24, NV12)",
				 arg, fmt);
	s = new_stream("camera");
	if (!s)
		return usage_err("too many channels (at most %d)", MAX_CHANS);
	s->src = mmhal_src_camera(w, h, fourcc, fps);
	snprintf(s->desc, sizeof(s->desc), "%ux%u@%u:%s", w, h, fps, fmt);
	return EXIT_OK;
}

/* RATE:PERIOD and an optional third field; *rest gets it or NULL. */
static bool parse_rate_period(const char *arg, uint32_t *rate,
			      uint32_t *period, const char **rest)
{
	const char *c1 = strchr(arg, ':'), *c2;

	if (!c1)
		return false;
	c2 = strchr(c1 + 1, ':');
	*rest = c2 ? c2 + 1 : NULL;
	return parse_u32(arg, (size_t)(c1 - arg), 1000000, rate) &&
	       parse_u32(c1 + 1, c2 ? (size_t)(c2 - c1 - 1) : strlen(c1 + 1),
			 1000000, period);
}

static int add_mic(const char *arg)
{
	uint32_t rate, period, signal = MMHAL_SIGNAL_TONE;
	const char *rest;
	struct stream *s;

	if (!parse_rate_period(arg, &rate, &period, &rest))
		return usage_err("--mic '%s': want RATE:PERIOD[:tone|chirp], e.g. 16000:320",
				 arg);
	if (rest && !strcmp(rest, "chirp"))
		signal = MMHAL_SIGNAL_CHIRP;
	else if (rest && strcmp(rest, "tone"))
		return usage_err("--mic '%s': unknown signal '%s' (tone, chirp)",
				 arg, rest);
	s = new_stream("mic");
	if (!s)
		return usage_err("too many channels (at most %d)", MAX_CHANS);
	s->src = mmhal_src_mic(rate, period, signal);
	snprintf(s->desc, sizeof(s->desc), "%u:%u:%s", rate, period,
		 signal == MMHAL_SIGNAL_CHIRP ? "chirp" : "tone");
	return EXIT_OK;
}

static int add_imu(const char *arg)
{
	uint32_t rate, period;
	const char *rest;
	struct stream *s;

	if (!parse_rate_period(arg, &rate, &period, &rest) || rest)
		return usage_err("--imu '%s': want RATE:PERIOD, e.g. 200:10", arg);
	s = new_stream("imu");
	if (!s)
		return usage_err("too many channels (at most %d)", MAX_CHANS);
	s->src = mmhal_src_imu(rate, period);
	snprintf(s->desc, sizeof(s->desc), "%u:%u", rate, period);
	return EXIT_OK;
}

/* CHAN=W, applied after all sources are known. */
static int apply_weight(const char *arg)
{
	const char *eq = strchr(arg, '=');
	uint32_t w;
	size_t len;
	int i, hit = 0;

	if (!eq || eq == arg ||
	    !parse_u32(eq + 1, strlen(eq + 1), MMHAL_WEIGHT_MAX, &w))
		return usage_err("--weight '%s': want CHAN=W with W in 1..%u, e.g. camera=200",
				 arg, MMHAL_WEIGHT_MAX);
	len = (size_t)(eq - arg);
	for (i = 0; i < nr_streams; i++) {
		struct stream *s = &streams[i];

		if ((strlen(s->type) == len && !strncmp(s->type, arg, len)) ||
		    (strlen(s->name) == len && !strncmp(s->name, arg, len))) {
			s->weight = w;
			hit++;
		}
	}
	if (!hit)
		return usage_err("--weight '%s': no channel '%.*s' (channels: camera0, mic0, imu0 ... as created)",
				 arg, (int)len, arg);
	return EXIT_OK;
}

static const char *dev_path(const char *dev, char *buf, size_t len)
{
	if (!dev)
		return MMHAL_DEFAULT_DEV;
	if (strchr(dev, '/'))
		return dev;
	snprintf(buf, len, "/dev/%s", dev);
	return buf;
}

static int open_err(const char *path, int e)
{
	const char *base = strrchr(path, '/');
	const char *hint = NULL;

	base = base ? base + 1 : path;
	switch (-e) {
	case ENOENT:
		hint = strncmp(base, "mmedge", 6) ?
			"check the path; list devices with: mmctl dev show" :
			"is mmedge.ko loaded? try: insmod mmedge.ko";
		break;
	case EACCES:
	case EPERM:
		hint = "run as root, or give your user access to /dev/mmedge*";
		break;
	case ENODEV:
	case EISDIR:
	case ENOTDIR:
		hint = "check the path; list devices with: mmctl dev show";
		break;
	case EPROTO:
		hint = "mmedge.ko and mmstream do not match; install them together";
		break;
	}
	if (hint)
		err("cannot open %s: %s (%s)", path, mmhal_strerror(e), hint);
	else
		err("cannot open %s: %s", path, mmhal_strerror(e));
	return EXIT_RUNTIME;
}

static int create_err(const struct stream *s, int e)
{
	const char *hint;

	switch (-e) {
	case EPERM:
		hint = "weights above 100 need CAP_SYS_NICE: run as root or lower --weight";
		break;
	case EINVAL:
		hint = "out of the driver's range? camera 16..4096 px, 1/60..240 fps; mic 8000..192000 Hz, period 16..65536; imu 1..8000 Hz, period 1..4096";
		break;
	case ENOSPC:
		hint = "the device has no free channel; stop other streams (mmctl) and retry";
		break;
	case ENOTTY:
		hint = "this mmedge driver has no channels; install a newer mmedge.ko";
		break;
	default:
		hint = NULL;
	}
	if (hint)
		err("cannot create %s %s: %s (%s)", s->name, s->desc,
		    mmhal_strerror(e), hint);
	else
		err("cannot create %s %s: %s", s->name, s->desc,
		    mmhal_strerror(e));
	return EXIT_RUNTIME;
}

static int setup(struct mmhal_dev *dev)
{
	struct mmhal_chan_params p;
	int i, j, e;

	for (i = 0; i < nr_streams; i++) {
		struct stream *s = &streams[i];

		p = mmhal_chan_default_params();
		p.weight = s->weight;
		e = mmhal_chan_create(dev, &s->src, &p, &s->chan);
		if (e < 0)
			return create_err(s, e);
		for (j = 0; j < NR_BUFS; j++) {
			e = mmhal_buf_alloc(dev, mmhal_chan_buf_size(s->chan),
					    NULL, &s->bufs[j]);
			if (e < 0) {
				err("cannot allocate a %" PRIu64 "-byte buffer for %s: %s%s",
				    mmhal_chan_buf_size(s->chan), s->name,
				    mmhal_strerror(e),
				    e == -ENOMEM ? " (buffer memory is limited: see 'mmctl caps'; use smaller frames)" : "");
				return EXIT_RUNTIME;
			}
		}
	}
	/* Queue last, so all sources start close together. */
	start_ns = now_ns();
	for (i = 0; i < nr_streams; i++) {
		struct stream *s = &streams[i];

		s->last_frame_ns = now_ns();
		for (j = 0; j < NR_BUFS; j++) {
			e = mmhal_chan_queue(s->chan, s->bufs[j], (uint64_t)j,
					     NULL);
			if (e < 0) {
				err("cannot queue a buffer on %s: %s", s->name,
				    mmhal_strerror(e));
				return EXIT_RUNTIME;
			}
		}
	}
	return EXIT_OK;
}

/* "ok", or why the in-band record does not match the dequeued frame. */
static const char *check_meta(struct stream *s, const struct mmhal_frame *fr)
{
	const struct mmhal_frame_meta *m;
	const char *res = "ok";
	int e;

	if (!fr->buf)
		return "nobuf";
	if (mmhal_buf_begin_cpu(fr->buf, MMHAL_SYNC_READ) < 0)
		return "nosync";
	e = mmhal_frame_meta(fr->buf, s->chan, &m);
	if (e == -EBADMSG)
		res = "missing";
	else if (e < 0)
		res = "unreadable";
	else if (m->sequence != fr->sequence || m->bytesused != fr->bytesused ||
		 m->flags != fr->flags || m->dropped != fr->dropped ||
		 memcmp(&m->ts, &fr->ts, sizeof(fr->ts)))
		res = "mismatch";
	mmhal_buf_end_cpu(fr->buf, MMHAL_SYNC_READ);
	return res;
}

static void print_frame(const struct stream *s, const struct mmhal_frame *fr,
			const char *meta)
{
	double dur_us = (double)(fr->ts.eof_mono - fr->ts.sof_mono) / 1000.0;
	struct json_writer jw;

	if (!json) {
		printf("%-8s seq %5" PRIu64 "  bytes %7" PRIu64 "  sof_mono %" PRIu64
		       ".%09" PRIu64 "  eof-sof %8.1f us  dropped %" PRIu64
		       "  meta %s%s\n", s->name, fr->sequence, fr->bytesused,
		       fr->ts.sof_mono / UINT64_C(1000000000),
		       fr->ts.sof_mono % UINT64_C(1000000000), dur_us, fr->dropped,
		       meta, fr->flags & MMHAL_FRAME_ERROR ? "  ERROR" : "");
		return;
	}
	json_init(&jw, stdout, false);
	json_begin_object(&jw);
	json_kv_string(&jw, "type", "frame");
	json_kv_string(&jw, "chan", s->name);
	json_kv_u64(&jw, "chan_id", fr->chan);
	json_kv_u64(&jw, "seq", fr->sequence);
	json_kv_u64(&jw, "bytes", fr->bytesused);
	json_kv_u64(&jw, "sof_raw", fr->ts.sof_raw);
	json_kv_u64(&jw, "eof_raw", fr->ts.eof_raw);
	json_kv_u64(&jw, "sof_mono_ns", fr->ts.sof_mono);
	json_kv_u64(&jw, "eof_mono_ns", fr->ts.eof_mono);
	json_kv_u64(&jw, "sof_boot_ns", fr->ts.sof_boot);
	json_kv_u64(&jw, "eof_sof_us", (fr->ts.eof_mono - fr->ts.sof_mono) / 1000);
	json_kv_u64(&jw, "dropped", fr->dropped);
	json_kv_u64(&jw, "flags", fr->flags);
	json_kv_bool(&jw, "error", fr->flags & MMHAL_FRAME_ERROR);
	json_kv_bool(&jw, "meta_ok", !strcmp(meta, "ok"));
	json_end_object(&jw);
	json_finish(&jw);
}

/* The frame period: statistics of the deltas between start-of-frame
 * timestamps. */
static void note_sof(struct stream *s, uint64_t sof)
{
	if (s->nr_sof++) {
		double d = (double)(sof - s->last_sof);

		s->sum_d += d;
		s->sum_d2 += d * d;
		s->nr_d++;
	}
	s->last_sof = sof;
}

/* Dequeues everything ready on @s. Return: 0, or a negative errno. */
static int drain(struct stream *s, uint64_t want)
{
	struct mmhal_frame fr;
	const char *meta;
	int e;

	for (;;) {
		e = mmhal_chan_dequeue(s->chan, MMHAL_NONBLOCK, &fr);
		if (e == -EAGAIN)
			return 0;
		if (e < 0)
			return e;
		s->last_frame_ns = now_ns();
		if (s->frames >= want) {
			/* Enough (or -n 0): keep it flowing (no false drops)
			 * quietly; -n 0 still measures the period. */
			if (forever)
				note_sof(s, fr.ts.sof_mono);
			if (fr.buf) {
				e = mmhal_chan_queue(s->chan, fr.buf,
						     fr.cookie, NULL);
				if (e < 0)
					return e;
			}
			continue;
		}
		meta = check_meta(s, &fr);
		if (strcmp(meta, "ok"))
			s->meta_bad++;
		note_sof(s, fr.ts.sof_mono);
		s->frames++;
		print_frame(s, &fr, meta);
		if (s->frames == want) {
			s->st_err = mmhal_chan_stats(s->chan, &s->st);
			s->st_elapsed_s = (double)(now_ns() - start_ns) / 1e9;
		}
		if (fr.buf) {
			e = mmhal_chan_queue(s->chan, fr.buf, fr.cookie, NULL);
			if (e < 0)
				return e;
		}
	}
}

/* Upper bound of the wait histogram's @pct percentile, ns; *open set if
 * it fell in the last, open-ended bucket (then the lower bound). */
static uint64_t wait_pct(const struct mmhal_chan_stats *st, double pct,
			 bool *open)
{
	uint64_t total = 0, cum = 0, need;
	unsigned int i;

	*open = false;
	for (i = 0; i < MMHAL_WAIT_BUCKETS; i++)
		total += st->wait_hist[i];
	if (!total)
		return 0;
	need = (uint64_t)ceil(pct / 100.0 * (double)total);
	if (!need)
		need = 1;
	for (i = 0; i < MMHAL_WAIT_BUCKETS; i++) {
		cum += st->wait_hist[i];
		if (cum >= need)
			break;
	}
	if (i >= MMHAL_WAIT_BUCKETS - 1) {
		*open = true;
		return mmhal_wait_bucket_ns(MMHAL_WAIT_BUCKETS - 2);
	}
	return mmhal_wait_bucket_ns(i);
}

static void fmt_wait(char *buf, size_t len, uint64_t ns, bool open,
		     bool any)
{
	if (!any)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%s%.0f us", open ? ">" : "<", (double)ns / 1000.0);
}

static int summary(void)
{
	int i, e, ret = EXIT_OK;

	if (!json)
		printf("\n%-8s %-18s %7s %6s %6s %8s %10s %10s %11s %10s\n",
		       "chan", "source", "frames", "drops", "errors", "MB/s",
		       "wait_p50", "wait_p99", "period_us", "jitter_us");
	for (i = 0; i < nr_streams; i++) {
		struct stream *s = &streams[i];
		struct mmhal_chan_stats st = s->st;
		double elapsed_s = s->st_elapsed_s;
		double mbs, mean = 0, sd = 0;
		uint64_t p50, p99;
		bool o50, o99, any;
		char w50[24], w99[24];
		unsigned int b;

		/* Stopped early (signal): the counters as they are now. */
		if (s->frames < s->want_frames || forever) {
			s->st_err = mmhal_chan_stats(s->chan, &st);
			elapsed_s = (double)(now_ns() - start_ns) / 1e9;
		}
		e = s->st_err;
		if (e < 0) {
			err("cannot read the counters of %s: %s", s->name,
			    mmhal_strerror(e));
			ret = EXIT_RUNTIME;
			continue;
		}
		any = false;
		for (b = 0; b < MMHAL_WAIT_BUCKETS; b++)
			any |= st.wait_hist[b] != 0;
		p50 = wait_pct(&st, 50, &o50);
		p99 = wait_pct(&st, 99, &o99);
		mbs = elapsed_s > 0 ? (double)st.bytes / elapsed_s / 1e6 : 0;
		if (s->nr_d) {
			double var;

			mean = s->sum_d / (double)s->nr_d;
			var = s->sum_d2 / (double)s->nr_d - mean * mean;
			sd = var > 0 ? sqrt(var) : 0;
		}
		if (!json) {
			fmt_wait(w50, sizeof(w50), p50, o50, any);
			fmt_wait(w99, sizeof(w99), p99, o99, any);
			printf("%-8s %-18s %7" PRIu64 " %6" PRIu64 " %6" PRIu64
			       " %8.3f %10s %10s %11.1f %10.1f\n", s->name,
			       s->desc, st.frames, st.dropped, st.errors, mbs,
			       w50, w99, mean / 1000.0, sd / 1000.0);
		} else {
			struct json_writer jw;

			json_init(&jw, stdout, false);
			json_begin_object(&jw);
			json_kv_string(&jw, "type", "summary");
			json_kv_string(&jw, "chan", s->name);
			json_kv_u64(&jw, "chan_id", st.id);
			json_kv_string(&jw, "source", s->desc);
			json_kv_u64(&jw, "weight", st.weight);
			json_kv_u64(&jw, "frames", st.frames);
			json_kv_u64(&jw, "drops", st.dropped);
			json_kv_u64(&jw, "errors", st.errors);
			json_kv_u64(&jw, "bytes", st.bytes);
			json_kv_u64(&jw, "bytes_per_s", (uint64_t)(mbs * 1e6));
			json_kv_u64(&jw, "bw_ewma", st.bw_ewma);
			/* Histogram bounds: "< ns", or ">= ns" when open. */
			json_kv_u64(&jw, "wait_p50_ns", p50);
			json_kv_bool(&jw, "wait_p50_open", o50);
			json_kv_u64(&jw, "wait_p99_ns", p99);
			json_kv_bool(&jw, "wait_p99_open", o99);
			json_kv_u64(&jw, "period_mean_ns", (uint64_t)mean);
			json_kv_u64(&jw, "period_jitter_ns", (uint64_t)sd);
			json_kv_u64(&jw, "meta_bad", s->meta_bad);
			json_end_object(&jw);
			json_finish(&jw);
		}
		if (s->meta_bad) {
			err("%s: %" PRIu64 " frames without a matching in-band record",
			    s->name, s->meta_bad);
			ret = EXIT_RUNTIME;
		}
	}
	return ret;
}

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int run(struct mmhal_dev *dev, uint64_t want)
{
	struct pollfd pfd = { .fd = mmhal_dev_fd(dev), .events = POLLIN };
	int i, e, done;

	for (i = 0; i < nr_streams; i++)
		streams[i].want_frames = want;

	for (;;) {
		done = 1;
		for (i = 0; i < nr_streams; i++)
			if (streams[i].frames < want)
				done = 0;
		if ((done && !forever) || stop)
			break;

		e = poll(&pfd, 1, 1000);
		if (e < 0 && errno == EINTR)
			continue;
		if (e < 0) {
			err("poll: %s", strerror(errno));
			return EXIT_RUNTIME;
		}
		if (pfd.revents & (POLLERR | POLLHUP)) {
			err("the device went away (mmedge.ko unloaded?)");
			return EXIT_RUNTIME;
		}
		for (i = 0; i < nr_streams; i++) {
			struct stream *s = &streams[i];

			e = drain(s, want);
			if (e < 0) {
				err("%s: %s%s", s->name, mmhal_strerror(e),
				    e == -ENODEV ? " (mmedge.ko unloaded?)" : "");
				return EXIT_RUNTIME;
			}
			if (s->frames < want &&
			    now_ns() - s->last_frame_ns > STALL_MS * 1000000ULL) {
				err("%s: no frame for %d s (engine stalled? check dmesg and 'mmctl caps')",
				    s->name, STALL_MS / 1000);
				return EXIT_RUNTIME;
			}
		}
	}
	return summary();
}

static void teardown(struct mmhal_dev *dev)
{
	int i, j;

	for (i = 0; i < nr_streams; i++) {
		mmhal_chan_destroy(streams[i].chan);
		for (j = 0; j < NR_BUFS; j++)
			mmhal_buf_free(streams[i].bufs[j]);
	}
	mmhal_dev_close(dev);
}

static int close_stdout(int ret)
{
	if (fflush(stdout) != 0 || ferror(stdout)) {
		err("write error: %s", strerror(errno));
		return EXIT_RUNTIME;
	}
	return ret;
}

enum { OPT_CAMERA = 256, OPT_MIC, OPT_IMU, OPT_WEIGHT };

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "dev", required_argument, NULL, 'd' },
		{ "frames", required_argument, NULL, 'n' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ "camera", required_argument, NULL, OPT_CAMERA },
		{ "mic", required_argument, NULL, OPT_MIC },
		{ "imu", required_argument, NULL, OPT_IMU },
		{ "weight", required_argument, NULL, OPT_WEIGHT },
		{ NULL, 0, NULL, 0 },
	};
	const char *weights[MAX_CHANS];
	int nr_weights = 0;
	const char *dev_arg = NULL, *path;
	char pbuf[4096];
	struct mmhal_dev *dev;
	struct mmhal_caps caps;
	struct sigaction sa;
	uint32_t frames = DEFAULT_FRAMES;
	int opt, ret, i;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":d:n:jh", longopts,
				  NULL)) != -1) {
		switch (opt) {
		case 'd':
			if (!optarg[0])
				return usage_err("-d: empty device name");
			dev_arg = optarg;
			break;
		case 'n':
			if (!strcmp(optarg, "0")) {
				forever = true;
				frames = 0;
				break;
			}
			if (!parse_u32(optarg, strlen(optarg), 1000000000,
				       &frames))
				return usage_err("-n '%s': want a number of frames (0: until stopped)",
						 optarg);
			forever = false;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return close_stdout(EXIT_OK);
		case OPT_CAMERA:
			ret = add_camera(optarg);
			if (ret)
				return ret;
			break;
		case OPT_MIC:
			ret = add_mic(optarg);
			if (ret)
				return ret;
			break;
		case OPT_IMU:
			ret = add_imu(optarg);
			if (ret)
				return ret;
			break;
		case OPT_WEIGHT:
			if (nr_weights >= MAX_CHANS)
				return usage_err("too many --weight options");
			weights[nr_weights++] = optarg;
			break;
		case ':':
			return usage_err("option '%s' needs an argument",
					 argv[optind - 1]);
		default:
			if (optopt)
				return usage_err("unknown option '-%c'", optopt);
			return usage_err("unknown option '%s'",
					 argv[optind - 1]);
		}
	}
	if (optind < argc)
		return usage_err("unexpected argument '%s'", argv[optind]);

	if (!nr_streams) {
		add_camera("320x240@30:GREY");
		add_mic("16000:320:tone");
		add_imu("200:10");
	}
	for (i = 0; i < nr_weights; i++) {
		ret = apply_weight(weights[i]);
		if (ret)
			return ret;
	}

	path = dev_path(dev_arg, pbuf, sizeof(pbuf));
	ret = mmhal_dev_open(path, &dev);
	if (ret < 0)
		return open_err(path, ret);
	mmhal_dev_caps(dev, &caps);
	if (!(caps.caps & MMHAL_CAP_CHANNELS)) {
		err("%s has no capture channels (driver api_version %u); install a newer mmedge.ko",
		    path, caps.api_version);
		mmhal_dev_close(dev);
		return EXIT_RUNTIME;
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	ret = setup(dev);
	if (ret == EXIT_OK && !json) {
		for (i = 0; i < nr_streams; i++)
			printf("%s: %s %s, channel %d, %u bytes/frame, weight %u\n",
			       path, streams[i].name, streams[i].desc,
			       mmhal_chan_id(streams[i].chan),
			       mmhal_chan_frame_size(streams[i].chan),
			       streams[i].weight);
	}
	if (ret == EXIT_OK)
		ret = run(dev, frames);
	teardown(dev);
	return close_stdout(ret);
}

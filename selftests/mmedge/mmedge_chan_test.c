// SPDX-License-Identifier: GPL-2.0
/*
 * kselftests for mmedge channels: MMEDGE_IOC_CHAN_CREATE / CHAN_CONFIG /
 * CHAN_DESTROY / QBUF / DQBUF / CHAN_STATS / BUS_CONFIG / XTS.
 *
 *  1. Every virtual source streams: contiguous sequence numbers (gaps
 *     only where `dropped` says so), monotonic timestamps at the
 *     configured rate, the in-band record equal to the dequeue, and the
 *     content recomputed by mmedge_src_pattern.h. A static camera's
 *     frames are the same but for their numbers; a silent microphone's
 *     buffers are zero; a noise microphone's are its recomputed noise.
 *  2. poll()/epoll on the device fd; non-blocking and timed dequeue.
 *  3. Cross-timestamps: the counter runs at counter_hz.
 *  4. Arbitration: three saturated cameras on a slow bus get 5:3:2.
 *  5. The latency class bounds a microphone's queue wait under a flood.
 *  6. Fences: sync_file out-fences and implicit write fences; a vgem
 *     buffer filled by mmedge's engine with no copy.
 *  7. Bad input, one field at a time; privileges; struct sizes.
 *  8. Destroying a busy channel: fences signal with an error, no leak.
 *  9. Closing the device with channels streaming: no leak.
 *
 * Needs mmedge.ko loaded with a virtual instance (/dev/mmedge0) that has
 * MMEDGE_CAP_CHANNELS; skips otherwise. Tests that change the bus model
 * or use the latency class need root (CAP_SYS_ADMIN, CAP_SYS_NICE); the
 * vgem test needs vgem loaded.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/dma-buf.h>
#include <linux/sync_file.h>
#include <linux/mmedge.h>

#include <xf86drm.h>
#include <drm_mode.h>

#include "../kselftest_harness.h"
#include "mmedge_src_pattern.h"
#include "mmedge_util.h"

#define STATS_DIR	"/sys/class/mmedge/mmedge0/stats/"
#define NSEC_PER_SEC	1000000000ULL
#define NSEC_PER_MSEC	1000000ULL

/* The ioctls with an explicit argument size, for older/newer structures. */
#define MMEDGE_IOC_SIZED(nr, sz) \
	_IOC(_IOC_READ | _IOC_WRITE, MMEDGE_IOC_MAGIC, (nr), (sz))

struct chan_create_newer {
	struct mmedge_chan_create v0;
	__u64 extra[8];
};

struct dqbuf_newer {
	struct mmedge_dqbuf v0;
	__u64 extra[8];
};

/* Live buffers and imports of the instance, for leak checks. */
static int read_live(long long *buffers, long long *imports)
{
	int ret = read_ll(STATS_DIR "buffers", buffers);

	if (!ret)
		ret = read_ll(STATS_DIR "imports", imports);
	return ret;
}

/* ---- sources and channels ---------------------------------------- */

static struct mmedge_src_config camera(__u32 fourcc, __u32 w, __u32 h,
				       __u32 fps)
{
	struct mmedge_src_config s = {
		.type = MMEDGE_SRC_CAMERA, .fourcc = fourcc, .width = w,
		.height = h, .rate_num = fps, .rate_den = 1,
	};
	return s;
}

static struct mmedge_src_config mic(__u32 rate, __u32 period, __u32 signal)
{
	struct mmedge_src_config s = {
		.type = MMEDGE_SRC_MIC, .fourcc = MMEDGE_FMT_S16LE,
		.rate_num = rate, .rate_den = 1, .period = period,
		.signal = signal,
	};
	return s;
}

/* ns between frames, as the driver computes it (rounded down). */
static uint64_t src_period_ns(const struct mmedge_src_config *s)
{
	uint64_t units = s->type == MMEDGE_SRC_CAMERA ? 1 : s->period;

	return (unsigned __int128)(units * s->rate_den) * NSEC_PER_SEC /
	       s->rate_num;
}

/* Fills @c with a valid request on @src; tests then change one field. */
static void create_req(struct mmedge_chan_create *c,
		       const struct mmedge_src_config *src)
{
	memset(c, 0, sizeof(*c));
	c->dir = MMEDGE_CHAN_CAPTURE;
	c->src = *src;
}

static int chan_create(int fd, struct mmedge_chan_create *c)
{
	return xioctl(fd, MMEDGE_IOC_CHAN_CREATE, c);
}

/* Creates a channel with default arbitration; its id or -errno. */
static int chan_new(int fd, const struct mmedge_src_config *src,
		    struct mmedge_chan_create *out)
{
	struct mmedge_chan_create c;
	int ret;

	create_req(&c, src);
	ret = chan_create(fd, &c);
	if (out)
		*out = c;
	return ret ? ret : (int)c.id;
}

static int qbuf(int fd, __u32 chan, int dmabuf, __u32 flags, __u64 cookie,
		int *fence_fd)
{
	struct mmedge_qbuf q = {
		.chan = chan, .fd = dmabuf, .flags = flags, .cookie = cookie,
	};
	int ret = xioctl(fd, MMEDGE_IOC_QBUF, &q);

	if (fence_fd)
		*fence_fd = ret ? -1 : q.fence_fd;
	return ret;
}

/* ---- buffers ------------------------------------------------------ */

/* An mmedge buffer of @size bytes, mapped; 0 or -errno. */
/* Bytes a queued buffer needs on channel @c. */
static size_t chan_buf_size(const struct mmedge_chan_create *c)
{
	return round_page(c->meta_offset + sizeof(struct mmedge_frame_meta));
}

/* Status of a sync_file (1 signalled, 0 active, <0 error), driver name. */
static int fence_info(int fence_fd, int *status, char *driver, size_t len)
{
	struct sync_fence_info fi[4];
	struct sync_file_info info;
	int ret;

	memset(&info, 0, sizeof(info));
	memset(fi, 0, sizeof(fi));
	info.num_fences = 4;
	info.sync_fence_info = (uintptr_t)fi;
	ret = xioctl(fence_fd, SYNC_IOC_FILE_INFO, &info);
	if (ret)
		return ret;
	*status = info.status;
	if (driver) {
		snprintf(driver, len, "%s",
			 info.num_fences ? fi[0].driver_name : "");
	}
	return 0;
}

/* ---- checks on dequeued frames ------------------------------------ */

/* Compares the in-band record with the dequeue; describes a mismatch. */
static int check_meta(const struct mmedge_frame_meta *m,
		      const struct mmedge_dqbuf *d, __u32 chan, char *why,
		      size_t len)
{
	if (m->magic != MMEDGE_META_MAGIC)
		return mmedge_pat_why(why, len, "meta magic %#llx",
				      (unsigned long long)m->magic);
	if (m->version != MMEDGE_META_VERSION ||
	    m->size != sizeof(struct mmedge_frame_meta))
		return mmedge_pat_why(why, len, "meta version %u size %u",
				      m->version, m->size);
	if (m->chan != chan)
		return mmedge_pat_why(why, len, "meta chan %u, want %u",
				      m->chan, chan);
	if (m->flags != d->frame_flags || m->sequence != d->sequence ||
	    m->bytesused != d->bytesused || m->dropped != d->dropped)
		return mmedge_pat_why(why, len,
				      "meta flags/seq/bytes/dropped %#x/%llu/%llu/%llu, dequeue %#x/%llu/%llu/%llu",
				      m->flags, (unsigned long long)m->sequence,
				      (unsigned long long)m->bytesused,
				      (unsigned long long)m->dropped,
				      d->frame_flags,
				      (unsigned long long)d->sequence,
				      (unsigned long long)d->bytesused,
				      (unsigned long long)d->dropped);
	if (memcmp(&m->ts, &d->ts, sizeof(m->ts)))
		return mmedge_pat_why(why, len,
				      "meta timestamps differ from the dequeue's");
	if (m->sensor_sof != d->sensor_sof || m->sensor_eof != d->sensor_eof)
		return mmedge_pat_why(why, len,
				      "meta sensor stamps differ from the dequeue's");
	return 0;
}

/*
 * Drop accounting of a channel's dequeued frames, as documented
 * (Documentation/userspace-api/mmedge-channels.rst, "Overruns and drops"):
 * every lost frame takes a sequence number; `dropped` is the running
 * total up to the frame's completion, so it counts at least the frames
 * missing before this one and at most those missing before the next;
 * MMEDGE_FRAME_DROPPED_BEFORE is set when frames were dropped since the
 * previous completed frame, i.e. when `dropped` grew.
 *
 * Valid for MMEDGE_OVERRUN_DROP_NEWEST with every frame dequeued.
 */
struct drops {
	uint64_t n;			/* frames seen */
	struct mmedge_dqbuf prev;
	unsigned int gaps;		/* sequence gaps seen */
	unsigned int flag_after_gap;	/* gaps flagged on the frame after */
};

static int drops_check(struct drops *t, const struct mmedge_dqbuf *d,
		       char *why, size_t len)
{
	const struct mmedge_dqbuf *p = &t->prev;
	int flagged = !!(d->frame_flags & MMEDGE_FRAME_DROPPED_BEFORE);
	uint64_t missing, prev_dropped = t->n ? p->dropped : 0;
	int ret = 0;

	if (t->n && d->sequence <= p->sequence) {
		ret = mmedge_pat_why(why, len, "sequence %llu after %llu",
				     (unsigned long long)d->sequence,
				     (unsigned long long)p->sequence);
		goto out;
	}
	/* Frames before this one that were never delivered. */
	missing = d->sequence - t->n;
	if (t->n && d->sequence != p->sequence + 1) {
		t->gaps++;
		t->flag_after_gap += flagged;
	}
	if (d->dropped < missing || prev_dropped > missing ||
	    d->dropped < prev_dropped || flagged != (d->dropped > prev_dropped))
		ret = mmedge_pat_why(why, len,
				     "seq %llu after %llu (%llu missing so far): dropped %llu after %llu, DROPPED_BEFORE %d",
				     (unsigned long long)d->sequence,
				     (unsigned long long)(t->n ? p->sequence : 0),
				     (unsigned long long)missing,
				     (unsigned long long)d->dropped,
				     (unsigned long long)prev_dropped, flagged);
out:
	t->prev = *d;
	t->n++;
	return ret;
}

/*
 * Fixture: one open /dev/mmedge0; the bus bandwidth as found, put back
 * by the teardown if a test changed it.
 */
FIXTURE(chan) {
	int fd;
	__u64 bus_orig;
	int bus_changed;
};

FIXTURE_SETUP(chan)
{
	const char *why;

	self->fd = open_dev();
	if (self->fd < 0 && errno == ENOENT)
		SKIP(return, "%s not present (is mmedge.ko loaded?)", DEVPATH);
	ASSERT_LE(0, self->fd);
	if (has_channels(self->fd, &why))
		SKIP(return, "%s", why);
	ASSERT_EQ(0, bus_get(self->fd, &self->bus_orig));
}

FIXTURE_TEARDOWN(chan)
{
	if (self->fd < 0)
		return;
	if (self->bus_changed)
		EXPECT_EQ(0, bus_set(self->fd, self->bus_orig));
	close(self->fd);
}

/*
 * 1. Streaming every virtual source.
 */
FIXTURE(stream) {
	int fd;
};

FIXTURE_VARIANT(stream) {
	struct mmedge_src_config src;
	unsigned int ms;
};

FIXTURE_VARIANT_ADD(stream, camera_grey) {
	.src = { MMEDGE_SRC_CAMERA, MMEDGE_FMT_GREY, 64, 48, 30, 1, 0, 0 },
	.ms = 1500,
};

FIXTURE_VARIANT_ADD(stream, camera_rgb24) {
	.src = { MMEDGE_SRC_CAMERA, MMEDGE_FMT_RGB24, 64, 48, 30, 1, 0, 0 },
	.ms = 1500,
};

FIXTURE_VARIANT_ADD(stream, camera_nv12) {
	.src = { MMEDGE_SRC_CAMERA, MMEDGE_FMT_NV12, 64, 48, 30, 1, 0, 0 },
	.ms = 1500,
};

FIXTURE_VARIANT_ADD(stream, mic_tone) {
	.src = { MMEDGE_SRC_MIC, MMEDGE_FMT_S16LE, 0, 0, 16000, 1, 320,
		 MMEDGE_SIGNAL_TONE },
	.ms = 1500,
};

FIXTURE_VARIANT_ADD(stream, mic_chirp) {
	.src = { MMEDGE_SRC_MIC, MMEDGE_FMT_S16LE, 0, 0, 16000, 1, 320,
		 MMEDGE_SIGNAL_CHIRP },
	.ms = 1500,
};

FIXTURE_VARIANT_ADD(stream, imu) {
	.src = { MMEDGE_SRC_IMU, MMEDGE_FMT_IMU6, 0, 0, 200, 1, 10, 0 },
	.ms = 2000,
};

FIXTURE_SETUP(stream)
{
	const char *why;

	self->fd = open_dev();
	if (self->fd < 0 && errno == ENOENT)
		SKIP(return, "%s not present (is mmedge.ko loaded?)", DEVPATH);
	ASSERT_LE(0, self->fd);
	if (has_channels(self->fd, &why))
		SKIP(return, "%s", why);
}

FIXTURE_TEARDOWN(stream)
{
	if (self->fd >= 0)
		close(self->fd);
}

#define NBUF		4
#define MAX_FAIL_LOG	5

TEST_F(stream, frames)
{
	const struct mmedge_src_config *src = &variant->src;
	uint64_t period = src_period_ns(src), t0, t_end, t_dq;
	struct mmedge_dqbuf d, first, prev;
	struct mmedge_chan_create c;
	struct drops dt = { 0 };
	struct sbuf b[NBUF];
	unsigned int n = 0, bad_meta = 0, bad_data = 0, bad_order = 0;
	unsigned int bad_gap = 0, unnumbered = 0, i;
	int64_t boot_off = 0;
	double mean, fit, sx = 0, sy = 0, sxx = 0, sxy = 0;
	char why[200];
	int id;

	id = chan_new(self->fd, src, &c);
	ASSERT_LT(0, id);
	ASSERT_EQ(mmedge_pat_frame_bytes(src), c.frame_size);
	ASSERT_EQ(0, c.meta_offset % 64);
	ASSERT_LE(c.frame_size, c.meta_offset);
	ASSERT_GT(c.frame_size + 64, c.meta_offset);

	for (i = 0; i < NBUF; i++) {
		ASSERT_EQ(0, sbuf_alloc(self->fd, chan_buf_size(&c), &b[i]));
		memset(b[i].map, 0xa5, b[i].size);
	}
	t0 = now_ns();
	for (i = 0; i < NBUF; i++)
		ASSERT_EQ(0, qbuf(self->fd, id, b[i].fd, 0, i, NULL));

	t_end = t0 + variant->ms * NSEC_PER_MSEC;
	memset(&prev, 0, sizeof(prev));
	memset(&first, 0, sizeof(first));
	while (now_ns() < t_end) {
		const struct mmedge_frame_meta *m;
		struct sbuf *cur;

		ASSERT_EQ(0, dqbuf(self->fd, id, 0, 2000, &d));
		t_dq = now_ns();
		ASSERT_LT(d.cookie, NBUF);
		cur = &b[d.cookie];
		EXPECT_FALSE(d.frame_flags & MMEDGE_FRAME_ERROR);
		EXPECT_EQ(c.frame_size, d.bytesused);

		ASSERT_EQ(0, dmabuf_sync(cur->fd, DMA_BUF_SYNC_START |
						  DMA_BUF_SYNC_READ));
		m = (const void *)(cur->map + c.meta_offset);
		if (check_meta(m, &d, id, why, sizeof(why)) &&
		    bad_meta++ < MAX_FAIL_LOG)
			TH_LOG("frame %llu: %s", (unsigned long long)d.sequence,
			       why);
		if (mmedge_check_frame(src, d.sequence, cur->map, d.bytesused,
				       why, sizeof(why)) &&
		    bad_data++ < MAX_FAIL_LOG)
			TH_LOG("frame %llu content: %s",
			       (unsigned long long)d.sequence, why);
		ASSERT_EQ(0, dmabuf_sync(cur->fd, DMA_BUF_SYNC_END |
						  DMA_BUF_SYNC_READ));
		/* The data must come from this frame, not the last one. */
		memset(cur->map, 0xa5, c.meta_offset + sizeof(*m));

		/* Timestamps: ordered within the frame, in the past. */
		if ((d.ts.sof_raw > d.ts.eof_raw ||
		     d.ts.sof_mono > d.ts.eof_mono ||
		     d.ts.sof_boot > d.ts.eof_boot ||
		     d.ts.sof_mono < t0 ||
		     d.ts.eof_mono > t_dq + NSEC_PER_MSEC) &&
		    bad_order++ < MAX_FAIL_LOG)
			TH_LOG("frame %llu: sof/eof raw %llu/%llu mono %llu/%llu (start %llu, dequeued %llu)",
			       (unsigned long long)d.sequence,
			       (unsigned long long)d.ts.sof_raw,
			       (unsigned long long)d.ts.eof_raw,
			       (unsigned long long)d.ts.sof_mono,
			       (unsigned long long)d.ts.eof_mono,
			       (unsigned long long)t0,
			       (unsigned long long)t_dq);
		if (drops_check(&dt, &d, why, sizeof(why)) &&
		    bad_gap++ < MAX_FAIL_LOG)
			TH_LOG("%s", why);
		if (!n) {
			first = d;
			boot_off = d.ts.sof_boot - d.ts.sof_mono;
		} else {
			int64_t off = d.ts.sof_boot - d.ts.sof_mono;

			/*
			 * Consecutive numbers more than 1.5 periods apart: the
			 * timer ran late and skipped a period without giving it
			 * a number (documented, but it skews the mean below).
			 */
			if (d.sequence == prev.sequence + 1 &&
			    d.ts.sof_mono - prev.ts.sof_mono > period * 3 / 2)
				unnumbered++;
			if ((d.ts.sof_mono <= prev.ts.sof_mono ||
			     d.ts.eof_mono < prev.ts.eof_mono ||
			     d.ts.sof_raw <= prev.ts.sof_raw ||
			     llabs(off - boot_off) > (int64_t)NSEC_PER_MSEC) &&
			    bad_order++ < MAX_FAIL_LOG)
				TH_LOG("frame %llu: sof %llu after %llu, boot-mono %lld vs %lld",
				       (unsigned long long)d.sequence,
				       (unsigned long long)d.ts.sof_mono,
				       (unsigned long long)prev.ts.sof_mono,
				       (long long)off, (long long)boot_off);
		}
		/* SOF time against sequence, for the fitted period below */
		{
			double x = (double)(d.sequence - first.sequence);
			double y = (double)(d.ts.sof_mono - first.ts.sof_mono);

			sx += x;
			sy += y;
			sxx += x * x;
			sxy += x * y;
		}
		prev = d;
		n++;
		ASSERT_EQ(0, qbuf(self->fd, id, cur->fd, 0, d.cookie, NULL));
	}

	EXPECT_EQ(0, bad_meta);
	EXPECT_EQ(0, bad_data);
	EXPECT_EQ(0, bad_order);
	EXPECT_EQ(0, bad_gap);
	/* At least half the frames the time allows. */
	EXPECT_LE(variant->ms * NSEC_PER_MSEC / period / 2, n);
	ASSERT_LE(2, n);
	/*
	 * The period is the least-squares slope of SOF time over sequence.
	 * The end-to-end mean depends on the first and last frames only: a
	 * first frame that a busy (emulated) machine delays by d, while the
	 * timer keeps its absolute schedule, shortens it by d / frames
	 * (20 ms over 45 frames was 1.4% once); the fit moves by about a
	 * tenth of that.
	 */
	mean = (double)(prev.ts.sof_mono - first.ts.sof_mono) /
	       (double)(prev.sequence - first.sequence);
	fit = (n * sxy - sx * sy) / (n * sxx - sx * sx);
	TH_LOG("%u frames, seq %llu..%llu, dropped %llu, SOF period fitted %.1f us, end to end %.1f us (configured %.1f us, %+.3f%%), %u late timer callbacks skipped a period",
	       n, (unsigned long long)first.sequence,
	       (unsigned long long)prev.sequence,
	       (unsigned long long)prev.dropped, fit / 1e3, mean / 1e3,
	       period / 1e3, (fit - period) * 100.0 / period, unnumbered);
	EXPECT_GT(period * 0.01, fabs(fit - (double)period));

	EXPECT_EQ(0, chan_destroy(self->fd, id));
	for (i = 0; i < NBUF; i++)
		sbuf_free(&b[i]);
}

/*
 * Drops while a frame is still moving (a slow bus: each frame takes
 * about two periods): every gap is accounted for in `dropped` and
 * flagged (see drops_check() for what the flag and the count mean).
 */
TEST_F_TIMEOUT(chan, drops_accounted, 60)
{
	struct mmedge_src_config src = camera(MMEDGE_FMT_GREY, 320, 240, 60);
	struct mmedge_dqbuf d;
	struct mmedge_chan_create c;
	struct mmedge_chan_stats st;
	struct drops dt = { 0 };
	unsigned int bad = 0, i;
	long long dma_segs = 0;
	struct sbuf b[NBUF];
	uint64_t t_end;
	char why[200];
	int id;

	/* 76800-byte frames at 2 MB/s: 38 ms each, a frame due every 17. */
	SET_BUS(2000000);
	id = chan_new(self->fd, &src, &c);
	ASSERT_LT(0, id);
	for (i = 0; i < NBUF; i++) {
		ASSERT_EQ(0, sbuf_alloc(self->fd, chan_buf_size(&c), &b[i]));
		ASSERT_EQ(0, qbuf(self->fd, id, b[i].fd, 0, i, NULL));
	}
	t_end = now_ns() + 2000 * NSEC_PER_MSEC;
	while (now_ns() < t_end) {
		ASSERT_EQ(0, dqbuf(self->fd, id, 0, 2000, &d));
		ASSERT_LT(d.cookie, NBUF);
		if (drops_check(&dt, &d, why, sizeof(why)) &&
		    bad++ < MAX_FAIL_LOG)
			TH_LOG("%s", why);
		ASSERT_EQ(0, qbuf(self->fd, id, b[d.cookie].fd, 0, d.cookie,
				  NULL));
	}
	ASSERT_EQ(0, chan_stats(self->fd, id, &st));
	TH_LOG("%llu frames, %u gaps (%u flagged on the frame after the gap), last seq %llu, dropped %llu (stats %llu)",
	       (unsigned long long)dt.n, dt.gaps, dt.flag_after_gap,
	       (unsigned long long)d.sequence, (unsigned long long)d.dropped,
	       (unsigned long long)st.dropped);
	/*
	 * The drops come from the modelled 2 MB/s bus; a DMA controller
	 * (the dmaengine back end) is not slowed by it and may keep up.
	 */
	if (!dt.gaps && !read_ll(STATS_DIR "dma_segments", &dma_segs) &&
	    dma_segs) {
		EXPECT_EQ(0, bad);
		EXPECT_EQ(0, chan_destroy(self->fd, id));
		for (i = 0; i < NBUF; i++)
			sbuf_free(&b[i]);
		SKIP(return, "the DMA controller kept up: no drop to account");
	}
	EXPECT_LT(0, dt.gaps);
	EXPECT_EQ(0, bad);
	EXPECT_LE(d.dropped, st.dropped);
	EXPECT_EQ(0, chan_destroy(self->fd, id));
	for (i = 0; i < NBUF; i++)
		sbuf_free(&b[i]);
}

/* Frames dropped for want of a buffer are counted and flagged. */
TEST_F(chan, drops_no_buffer)
{
	struct mmedge_src_config src = camera(MMEDGE_FMT_GREY, 64, 48, 50);
	struct mmedge_dqbuf d1, d2;
	struct mmedge_chan_create c;
	struct mmedge_chan_stats st;
	struct drops dt = { 0 };
	struct sbuf b;
	char why[200];
	int id;

	id = chan_new(self->fd, &src, &c);
	ASSERT_LT(0, id);
	ASSERT_EQ(0, sbuf_alloc(self->fd, chan_buf_size(&c), &b));
	ASSERT_EQ(0, qbuf(self->fd, id, b.fd, 0, 1, NULL));
	ASSERT_EQ(0, dqbuf(self->fd, id, 0, 2000, &d1));
	/* About 10 frames come and go with nothing queued. */
	sleep_ms(200);
	ASSERT_EQ(0, qbuf(self->fd, id, b.fd, 0, 2, NULL));
	ASSERT_EQ(0, dqbuf(self->fd, id, 0, 2000, &d2));
	ASSERT_EQ(0, chan_stats(self->fd, id, &st));
	TH_LOG("seq %llu -> %llu, dropped %llu -> %llu, stats dropped %llu",
	       (unsigned long long)d1.sequence, (unsigned long long)d2.sequence,
	       (unsigned long long)d1.dropped, (unsigned long long)d2.dropped,
	       (unsigned long long)st.dropped);
	EXPECT_LE(d1.sequence + 5, d2.sequence);
	/* Nothing was in flight: the gap is exactly the drops, flagged. */
	EXPECT_EQ(d2.sequence - d1.sequence - 1, d2.dropped - d1.dropped);
	EXPECT_TRUE(d2.frame_flags & MMEDGE_FRAME_DROPPED_BEFORE);
	EXPECT_EQ(0, drops_check(&dt, &d1, why, sizeof(why))) TH_LOG("%s", why);
	EXPECT_EQ(0, drops_check(&dt, &d2, why, sizeof(why))) TH_LOG("%s", why);
	EXPECT_LE(d2.dropped, st.dropped);
	EXPECT_EQ(0, chan_destroy(self->fd, id));
	sbuf_free(&b);
}

/*
 * 2. poll()/epoll, non-blocking and timed dequeue.
 */
TEST_F(chan, poll_and_dequeue_modes)
{
	struct mmedge_src_config src = camera(MMEDGE_FMT_GREY, 64, 48, 5);
	struct mmedge_chan_create c;
	struct epoll_event ev, out;
	struct mmedge_dqbuf d;
	struct sbuf b;
	uint64_t t0, el;
	int id, ep;

	id = chan_new(self->fd, &src, &c);
	ASSERT_LT(0, id);
	ASSERT_EQ(0, sbuf_alloc(self->fd, chan_buf_size(&c), &b));

	/* Nothing queued, nothing filled. */
	EXPECT_EQ(0, poll_in(self->fd, 0));
	EXPECT_EQ(-EAGAIN, dqbuf(self->fd, id, MMEDGE_DQBUF_NONBLOCK, 0, &d));
	t0 = now_ns();
	EXPECT_EQ(-ETIMEDOUT, dqbuf(self->fd, id, 0, 100, &d));
	el = now_ns() - t0;
	EXPECT_LE(90 * NSEC_PER_MSEC, el);
	EXPECT_GT(2000 * NSEC_PER_MSEC, el);

	ep = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, ep);
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN;
	ev.data.u32 = 7;
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, self->fd, &ev));
	EXPECT_EQ(0, epoll_wait(ep, &out, 1, 0));

	/* One frame every 200 ms: not ready right after queueing. */
	ASSERT_EQ(0, qbuf(self->fd, id, b.fd, 0, 1, NULL));
	EXPECT_EQ(0, poll_in(self->fd, 0));
	EXPECT_EQ(-EAGAIN, dqbuf(self->fd, id, MMEDGE_DQBUF_NONBLOCK, 0, &d));

	ASSERT_EQ(1, epoll_wait(ep, &out, 1, 2000));
	EXPECT_TRUE(out.events & EPOLLIN);
	EXPECT_EQ(7, out.data.u32);
	EXPECT_EQ(1, poll_in(self->fd, 0));
	ASSERT_EQ(0, dqbuf(self->fd, id, MMEDGE_DQBUF_NONBLOCK, 0, &d));
	EXPECT_EQ(1, d.cookie);

	/* Dequeued: not readable any more, and nothing queued to wait on. */
	EXPECT_EQ(0, poll_in(self->fd, 0));
	EXPECT_EQ(0, epoll_wait(ep, &out, 1, 0));
	EXPECT_EQ(-EAGAIN, dqbuf(self->fd, id, MMEDGE_DQBUF_NONBLOCK, 0, &d));
	EXPECT_EQ(-ETIMEDOUT, dqbuf(self->fd, id, 0, 300, &d));

	/* A blocking dequeue with a buffer queued waits for the frame. */
	ASSERT_EQ(0, qbuf(self->fd, id, b.fd, 0, 2, NULL));
	ASSERT_EQ(0, dqbuf(self->fd, id, 0, 2000, &d));
	EXPECT_EQ(2, d.cookie);

	close(ep);
	EXPECT_EQ(0, chan_destroy(self->fd, id));
	sbuf_free(&b);
}

/*
 * A DQBUF whose result cannot be written (-EFAULT) loses nothing: the
 * frame stays first in line, poll() still reports it, and the next DQBUF
 * returns it with the same cookie and sequence.
 */
TEST_F(chan, dqbuf_efault_keeps_frame)
{
	struct mmedge_src_config src = camera(MMEDGE_FMT_GREY, 64, 48, 30);
	struct mmedge_chan_create c;
	struct mmedge_dqbuf d, *ro;
	struct sbuf b[2];
	long pg = sysconf(_SC_PAGESIZE);
	__u64 seq;
	int id;

	id = chan_new(self->fd, &src, &c);
	ASSERT_LT(0, id);
	for (int i = 0; i < 2; i++)
		ASSERT_EQ(0, sbuf_alloc(self->fd, chan_buf_size(&c), &b[i]));
	ASSERT_EQ(0, qbuf(self->fd, id, b[0].fd, 0, 11, NULL));
	ASSERT_EQ(0, qbuf(self->fd, id, b[1].fd, 0, 12, NULL));
	ASSERT_EQ(1, poll_in(self->fd, 2000));

	/* The request readable, the result not writable. */
	ro = mmap(NULL, pg, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ro);
	memset(ro, 0, sizeof(*ro));
	ro->chan = id;
	ro->timeout_ms = 2000;
	ASSERT_EQ(0, mprotect(ro, pg, PROT_READ));
	EXPECT_EQ(-EFAULT, xioctl(self->fd, MMEDGE_IOC_DQBUF, ro));
	EXPECT_EQ(-EFAULT, xioctl(self->fd, MMEDGE_IOC_DQBUF, ro));

	EXPECT_EQ(1, poll_in(self->fd, 0));
	ASSERT_EQ(0, dqbuf(self->fd, id, MMEDGE_DQBUF_NONBLOCK, 0, &d));
	EXPECT_EQ(11, d.cookie);
	seq = d.sequence;
	ASSERT_EQ(0, dqbuf(self->fd, id, 0, 2000, &d));
	EXPECT_EQ(12, d.cookie);
	/* The next frame; a slow engine (a loaded TCG guest) may have
	 * dropped frames in between, and then says so on this one. */
	EXPECT_LT(seq, d.sequence);
	if (d.sequence != seq + 1)
		EXPECT_TRUE(d.frame_flags & MMEDGE_FRAME_DROPPED_BEFORE);

	/* Taken back into a destroyed channel: released, not leaked. */
	ASSERT_EQ(0, qbuf(self->fd, id, b[0].fd, 0, 13, NULL));
	ASSERT_EQ(1, poll_in(self->fd, 2000));
	EXPECT_EQ(-EFAULT, xioctl(self->fd, MMEDGE_IOC_DQBUF, ro));
	EXPECT_EQ(0, chan_destroy(self->fd, id));
	EXPECT_EQ(-ENOENT, dqbuf(self->fd, id, MMEDGE_DQBUF_NONBLOCK, 0, &d));

	munmap(ro, pg);
	for (int i = 0; i < 2; i++)
		sbuf_free(&b[i]);
}

/* poll() on one file does not see another file's frames. */
TEST_F(chan, poll_other_file)
{
	struct mmedge_src_config src = camera(MMEDGE_FMT_GREY, 64, 48, 30);
	struct mmedge_chan_create c;
	struct mmedge_dqbuf d;
	struct sbuf b;
	int id, fd2;

	fd2 = open_dev();
	ASSERT_LE(0, fd2);
	id = chan_new(self->fd, &src, &c);
	ASSERT_LT(0, id);
	ASSERT_EQ(0, sbuf_alloc(self->fd, chan_buf_size(&c), &b));
	ASSERT_EQ(0, qbuf(self->fd, id, b.fd, 0, 1, NULL));
	ASSERT_EQ(1, poll_in(self->fd, 2000));
	EXPECT_EQ(0, poll_in(fd2, 0));
	EXPECT_EQ(-ENOENT, dqbuf(fd2, id, MMEDGE_DQBUF_NONBLOCK, 0, &d));
	ASSERT_EQ(0, dqbuf(self->fd, id, MMEDGE_DQBUF_NONBLOCK, 0, &d));
	close(fd2);
	EXPECT_EQ(0, chan_destroy(self->fd, id));
	sbuf_free(&b);
}

struct dq_thread {
	int fd;
	__u32 chan;
	int ret;
};

static void *dq_thread_fn(void *arg)
{
	struct dq_thread *t = arg;
	struct mmedge_dqbuf d;

	t->ret = dqbuf(t->fd, t->chan, 0, 5000, &d);
	return NULL;
}

/* A dequeue blocked on a channel returns -ENOENT when it is destroyed. */
TEST_F(chan, dqbuf_wakes_on_destroy)
{
	struct mmedge_src_config src = camera(MMEDGE_FMT_GREY, 64, 48, 30);
	struct dq_thread t;
	pthread_t th;
	uint64_t t0;
	int id;

	id = chan_new(self->fd, &src, NULL);
	ASSERT_LT(0, id);
	t.fd = self->fd;
	t.chan = id;
	t.ret = 1;
	ASSERT_EQ(0, pthread_create(&th, NULL, dq_thread_fn, &t));
	sleep_ms(200);
	t0 = now_ns();
	EXPECT_EQ(0, chan_destroy(self->fd, id));
	ASSERT_EQ(0, pthread_join(th, NULL));
	EXPECT_EQ(-ENOENT, t.ret);
	EXPECT_GT(2000 * NSEC_PER_MSEC, now_ns() - t0);
}

/*
 * 3. Cross-timestamps.
 */
static double xts_mid(const struct mmedge_xts_sample *s)
{
	return (double)s->sys_before + (double)(s->sys_after - s->sys_before) / 2;
}

TEST_F(chan, xts)
{
	struct mmedge_xts x1, x2;
	double sys, cnt;
	struct timespec mono, boot;
	int64_t off;
	unsigned int i;

	memset(&x1, 0, sizeof(x1));
	x1.n_samples = MMEDGE_XTS_MAX_SAMPLES;
	ASSERT_EQ(0, xioctl(self->fd, MMEDGE_IOC_XTS, &x1));
	EXPECT_LT(0, x1.counter_hz);
	EXPECT_LT(0, x1.mult);
	EXPECT_LE(1, x1.counter_bits);
	EXPECT_GE(64, x1.counter_bits);
	for (i = 0; i < MMEDGE_XTS_MAX_SAMPLES; i++) {
		EXPECT_LE(x1.samples[i].sys_before, x1.samples[i].sys_after);
		if (i) {
			EXPECT_LT(x1.samples[i - 1].raw, x1.samples[i].raw);
			EXPECT_LE(x1.samples[i - 1].sys_after,
				  x1.samples[i].sys_before);
		}
	}
	/*
	 * boot_offset is CLOCK_BOOTTIME - CLOCK_MONOTONIC. Read as
	 * monotonic, boottime, monotonic; a try the vCPU was descheduled
	 * in (a wide window) is read again.
	 */
	for (i = 0; i < 20; i++) {
		int64_t m0, m1;

		clock_gettime(CLOCK_MONOTONIC, &mono);
		m0 = (int64_t)mono.tv_sec * (int64_t)NSEC_PER_SEC + mono.tv_nsec;
		clock_gettime(CLOCK_BOOTTIME, &boot);
		clock_gettime(CLOCK_MONOTONIC, &mono);
		m1 = (int64_t)mono.tv_sec * (int64_t)NSEC_PER_SEC + mono.tv_nsec;
		off = (int64_t)boot.tv_sec * (int64_t)NSEC_PER_SEC +
		      boot.tv_nsec - (m0 + (m1 - m0) / 2);
		if (m1 - m0 < 100000)
			break;
	}
	EXPECT_GT((int64_t)NSEC_PER_MSEC,
		  llabs(off - (int64_t)x1.samples[0].boot_offset));

	sleep_ms(50);
	memset(&x2, 0, sizeof(x2));
	x2.n_samples = 4;
	ASSERT_EQ(0, xioctl(self->fd, MMEDGE_IOC_XTS, &x2));
	EXPECT_EQ(x1.counter_hz, x2.counter_hz);
	EXPECT_LT(x1.samples[MMEDGE_XTS_MAX_SAMPLES - 1].raw, x2.samples[0].raw);
	/* Samples past n_samples are left alone. */
	EXPECT_EQ(0, x2.samples[4].raw);

	sys = xts_mid(&x2.samples[0]) - xts_mid(&x1.samples[0]);
	cnt = (double)(x2.samples[0].raw - x1.samples[0].raw) * 1e9 /
	      (double)x1.counter_hz;
	TH_LOG("counter %llu Hz, mult %u shift %u: %.3f ms of system time, %.3f ms of counter (%+.4f%%)",
	       (unsigned long long)x1.counter_hz, x1.mult, x1.shift, sys / 1e6,
	       cnt / 1e6, (cnt - sys) * 100 / sys);
	EXPECT_LE(45e6, sys);
	EXPECT_GT(sys * 0.01, fabs(cnt - sys));
	/* mult/shift say the same as counter_hz. */
	cnt = (double)(x2.samples[0].raw - x1.samples[0].raw) * x1.mult /
	      (double)(1ULL << x1.shift);
	EXPECT_GT(sys * 0.01, fabs(cnt - sys));
}

TEST_F(chan, xts_bad)
{
	struct mmedge_xts x;

	memset(&x, 0, sizeof(x));
	EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_XTS, &x));
	x.n_samples = MMEDGE_XTS_MAX_SAMPLES + 1;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_XTS, &x));
	memset(&x, 0, sizeof(x));
	x.n_samples = 1;
	x.flags = 2;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_XTS, &x));
	memset(&x, 0, sizeof(x));
	x.n_samples = 1;
	x.pad = 1;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_XTS, &x));
	memset(&x, 0, sizeof(x));
	x.n_samples = 1;
	x.reserved[1] = 1;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_XTS, &x));
}

/*
 * 4. and 5. Arbitration under a flood.
 */
#define FLOOD_CHANS	3

struct flood {
	int ids[FLOOD_CHANS + 1];
	unsigned int nch;
	struct sbuf b[FLOOD_CHANS + 1][3];
	unsigned int nbuf[FLOOD_CHANS + 1];
	uint64_t frames[FLOOD_CHANS + 1];
	int err;
};

/* Adds a channel to @f with @nbuf buffers queued; its index or -errno. */
static int flood_add(int dev, struct flood *f, struct mmedge_chan_create *c,
		     unsigned int nbuf)
{
	unsigned int k = f->nch, i;
	int ret;

	ret = chan_create(dev, c);
	if (ret)
		return ret;
	f->ids[k] = c->id;
	f->nbuf[k] = nbuf;
	for (i = 0; i < nbuf; i++) {
		ret = sbuf_alloc(dev, chan_buf_size(c), &f->b[k][i]);
		if (!ret)
			ret = qbuf(dev, c->id, f->b[k][i].fd, 0, i, NULL);
		if (ret)
			return ret;
	}
	f->nch++;
	return k;
}

/* Dequeues and requeues everything filled, for @ms; 0 or -errno. */
static int flood_run(int dev, struct flood *f, unsigned int ms)
{
	uint64_t end = now_ns() + ms * NSEC_PER_MSEC;
	struct mmedge_dqbuf d;
	unsigned int k;
	int ret;

	while (now_ns() < end) {
		ret = poll_in(dev, 50);
		if (ret < 0)
			return ret;
		for (k = 0; k < f->nch; k++) {
			while (!(ret = dqbuf(dev, f->ids[k],
					     MMEDGE_DQBUF_NONBLOCK, 0, &d))) {
				if (d.cookie >= f->nbuf[k] ||
				    d.frame_flags & MMEDGE_FRAME_ERROR)
					return -EIO;
				f->frames[k]++;
				ret = qbuf(dev, f->ids[k],
					   f->b[k][d.cookie].fd, 0, d.cookie,
					   NULL);
				if (ret)
					return ret;
			}
			if (ret != -EAGAIN)
				return ret;
		}
	}
	return 0;
}

static void flood_free(int dev, struct flood *f)
{
	unsigned int k, i;

	for (k = 0; k < FLOOD_CHANS + 1; k++) {
		if (f->ids[k] > 0)
			chan_destroy(dev, f->ids[k]);
		for (i = 0; i < f->nbuf[k]; i++)
			sbuf_free(&f->b[k][i]);
	}
	memset(f, 0, sizeof(*f));
}

/* Three cameras that each want far more than the bus, weights 5:3:2. */
#define FLOOD_BUS	10000000ULL	/* 10 MB/s */
#define FLOOD_SEGMENT	16384
static const __u32 flood_weights[FLOOD_CHANS] = { 500, 300, 200 };

static int flood_cameras(int dev, struct flood *f)
{
	/* 921600-byte frames at 240 fps: 221 MB/s each. */
	struct mmedge_src_config src = camera(MMEDGE_FMT_GREY, 1280, 720, 240);
	struct mmedge_chan_create c;
	unsigned int k;
	int ret;

	for (k = 0; k < FLOOD_CHANS; k++) {
		create_req(&c, &src);
		c.weight = flood_weights[k];
		c.segment = FLOOD_SEGMENT;
		ret = flood_add(dev, f, &c, 3);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/*
 * Bandwidth and latency bounds are checked on the production kernel in
 * the x86 VM. Where the engine thread runs far slower (the debug kernel's
 * KASAN and lockdep; the arm64 guests, another ISA emulated on the host's
 * shared cores) MMEDGE_SKIP_TIMING is set: these three skip there, the
 * other channel tests run.
 */
#define SKIP_TIMING_ON_DEBUG_KERNEL()					\
	do {								\
		if (getenv("MMEDGE_SKIP_TIMING"))			\
			SKIP(return, "timing bounds not checked in this VM (MMEDGE_SKIP_TIMING)"); \
	} while (0)

TEST_F_TIMEOUT(chan, arbitration_shares, 90)
{
	struct mmedge_chan_stats s0[FLOOD_CHANS], s1[FLOOD_CHANS];
	struct flood f;
	uint64_t total = 0, t0, t1;
	unsigned int k;

	SKIP_TIMING_ON_DEBUG_KERNEL();
	memset(&f, 0, sizeof(f));
	SET_BUS(FLOOD_BUS);
	ASSERT_EQ(0, flood_cameras(self->fd, &f));
	ASSERT_EQ(0, flood_run(self->fd, &f, 1000));
	t0 = now_ns();
	for (k = 0; k < FLOOD_CHANS; k++)
		ASSERT_EQ(0, chan_stats(self->fd, f.ids[k], &s0[k]));
	ASSERT_EQ(0, flood_run(self->fd, &f, 4000));
	for (k = 0; k < FLOOD_CHANS; k++)
		ASSERT_EQ(0, chan_stats(self->fd, f.ids[k], &s1[k]));
	t1 = now_ns();
	for (k = 0; k < FLOOD_CHANS; k++)
		total += s1[k].bytes - s0[k].bytes;
	TH_LOG("bus %llu B/s, moved %.0f B/s over %.2f s",
	       FLOOD_BUS, total * 1e9 / (t1 - t0), (t1 - t0) / 1e9);
	ASSERT_LT(0, total);
	for (k = 0; k < FLOOD_CHANS; k++) {
		double share = (double)(s1[k].bytes - s0[k].bytes) / total;
		double want = flood_weights[k] / 1000.0;

		TH_LOG("chan %d weight %u: share %.2f%% (want %.0f%%), %llu frames, bw_ewma %llu B/s, dropped %llu",
		       f.ids[k], s1[k].weight, share * 100, want * 100,
		       (unsigned long long)(s1[k].frames - s0[k].frames),
		       (unsigned long long)s1[k].bw_ewma,
		       (unsigned long long)s1[k].dropped);
		EXPECT_GT(0.03, fabs(share - want));
		EXPECT_EQ(flood_weights[k], s1[k].weight);
	}
	/*
	 * The engine keeps the modelled bus busy. Loosely: under TCG the
	 * engine's own CPU time and wake-up latency cost a good part of it.
	 */
	EXPECT_LT(FLOOD_BUS * 0.5, total * 1e9 / (t1 - t0));
	flood_free(self->fd, &f);
}

/* The wait below which a fraction @q of the histogram's samples lie. */
static unsigned int hist_quantile(const __u64 *h, double q, uint64_t *count)
{
	uint64_t n = 0, acc = 0;
	unsigned int i;

	for (i = 0; i < MMEDGE_WAIT_BUCKETS; i++)
		n += h[i];
	*count = n;
	for (i = 0; i < MMEDGE_WAIT_BUCKETS; i++) {
		acc += h[i];
		if (acc >= q * n)
			return i;
	}
	return MMEDGE_WAIT_BUCKETS - 1;
}

static void hist_log(struct __test_metadata *_metadata, const char *what,
		     const __u64 *h)
{
	char line[512];
	int n = 0;
	unsigned int i;

	for (i = 0; i < MMEDGE_WAIT_BUCKETS; i++)
		n += snprintf(line + n, sizeof(line) - n, " %llu",
			      (unsigned long long)h[i]);
	TH_LOG("%s wait_hist (<1us <2 <4 ... <32ms, rest):%s", what, line);
}

static unsigned int ilog2_up(uint64_t v)
{
	unsigned int l = 0;

	while ((1ULL << l) < v)
		l++;
	return l;
}

/* Runs a microphone in the flood; the p99 bucket of its queue wait. */
static int flood_mic(int dev, struct flood *f, __u32 class, __u32 weight,
		     __u64 cap, unsigned int ms, unsigned int *p99,
		     uint64_t *samples, struct mmedge_chan_stats *st)
{
	struct mmedge_src_config src = mic(16000, 320, MMEDGE_SIGNAL_TONE);
	struct mmedge_chan_create c;
	int k, ret;

	create_req(&c, &src);
	c.class = class;
	c.weight = weight;
	c.cap = cap;
	k = flood_add(dev, f, &c, 3);
	if (k < 0)
		return k;
	ret = flood_run(dev, f, ms);
	if (ret)
		return ret;
	ret = chan_stats(dev, f->ids[k], st);
	if (ret)
		return ret;
	*p99 = hist_quantile(st->wait_hist, 0.99, samples);
	ret = chan_destroy(dev, f->ids[k]);
	f->ids[k] = 0;
	for (unsigned int i = 0; i < f->nbuf[k]; i++)
		sbuf_free(&f->b[k][i]);
	f->nbuf[k] = 0;
	f->nch--;
	return ret;
}

/*
 * The latency test runs the flood on a slower bus than the shares test:
 * 16 KiB segments take 8.2 ms, so the bound (2 segments, 16.4 ms, i.e.
 * the wait_hist bucket below 16.8 ms) is large against the scheduling
 * noise of a TCG guest (its user wake-ups take milliseconds), and still
 * inside the histogram's range (the last bucket is open-ended at 16.8 ms).
 */
#define LAT_BUS		2000000ULL	/* 2 MB/s */

TEST_F_TIMEOUT(chan, latency_class, 90)
{
	/* Segment time: one camera segment on the bus. */
	uint64_t seg_ns = FLOOD_SEGMENT * NSEC_PER_SEC / LAT_BUS;
	unsigned int bound = ilog2_up(2 * seg_ns), lat, be;
	struct mmedge_chan_stats st;
	uint64_t n_lat, n_be;
	struct flood f;

	SKIP_TIMING_ON_DEBUG_KERNEL();
	memset(&f, 0, sizeof(f));
	SET_BUS(LAT_BUS);
	ASSERT_EQ(0, flood_cameras(self->fd, &f));
	ASSERT_EQ(0, flood_run(self->fd, &f, 500));

	ASSERT_EQ(0, flood_mic(self->fd, &f, MMEDGE_CLASS_LATENCY, 0, 64000,
			       4000, &lat, &n_lat, &st));
	if (bound < lat + 10) {
		/* One more try: a loaded TCG host can stall the guest. */
		hist_log(_metadata, "latency mic, first try", st.wait_hist);
		TH_LOG("p99 bucket %u above the bound on the first try; measuring again",
		       lat);
		ASSERT_EQ(0, flood_mic(self->fd, &f, MMEDGE_CLASS_LATENCY, 0,
				       64000, 4000, &lat, &n_lat, &st));
	}
	hist_log(_metadata, "latency mic", st.wait_hist);
	TH_LOG("latency mic: %llu segments, %llu frames, dropped %llu, p99 wait < %.1f us (bucket %u)",
	       (unsigned long long)n_lat, (unsigned long long)st.frames,
	       (unsigned long long)st.dropped, (1ULL << (lat + 10)) / 1e3, lat);
	ASSERT_EQ(0, flood_mic(self->fd, &f, MMEDGE_CLASS_BEST_EFFORT, 100, 0,
			       4000, &be, &n_be, &st));
	hist_log(_metadata, "best-effort mic", st.wait_hist);
	TH_LOG("best-effort mic (weight 100): %llu segments, p99 wait < %.1f us (bucket %u)",
	       (unsigned long long)n_be, (1ULL << (be + 10)) / 1e3, be);
	TH_LOG("segment time %.1f us; bound 2 x segment = %.1f us, rounded up to %.1f us",
	       seg_ns / 1e3, 2 * seg_ns / 1e3, (1ULL << bound) / 1e3);
	EXPECT_LE(100, n_lat);
	ASSERT_GT(MMEDGE_WAIT_BUCKETS - 1 + 10, bound);
	EXPECT_GE(bound, lat + 10);
	flood_free(self->fd, &f);
}

/* Bytes/s a capped camera moves over 2 s, after a warm-up. */
static int capped_rate(int dev, struct flood *f, int k, double *bw)
{
	struct mmedge_chan_stats s0, s1;
	uint64_t t0, t1;
	int ret;

	ret = flood_run(dev, f, 500);
	if (!ret)
		ret = chan_stats(dev, f->ids[k], &s0);
	t0 = now_ns();
	if (!ret)
		ret = flood_run(dev, f, 2000);
	if (!ret)
		ret = chan_stats(dev, f->ids[k], &s1);
	t1 = now_ns();
	*bw = (s1.bytes - s0.bytes) * 1e9 / (t1 - t0);
	return ret;
}

/*
 * A rate cap holds a best-effort channel to it. Next to a channel that
 * keeps the engine busy, the capped one gets its cap; alone, it never
 * gets more, but can get less: the engine's sleep while it waits for
 * budget is rounded to the tick (Documentation/arbiter.rst, "Latency
 * with the soft engine"), so that case is only logged.
 */
TEST_F_TIMEOUT(chan, rate_cap, 60)
{
	struct mmedge_src_config src = camera(MMEDGE_FMT_GREY, 320, 240, 60);
	struct mmedge_src_config big = camera(MMEDGE_FMT_GREY, 1280, 720, 240);
	struct mmedge_chan_create c;
	const double cap = 1000000;	/* 1 MB/s of a 4.6 MB/s stream */
	struct flood f;
	double bw;

	SKIP_TIMING_ON_DEBUG_KERNEL();
	memset(&f, 0, sizeof(f));
	create_req(&c, &src);
	c.cap = cap;
	ASSERT_EQ(0, flood_add(self->fd, &f, &c, 3));
	ASSERT_EQ(0, capped_rate(self->fd, &f, 0, &bw));
	TH_LOG("alone, capped at %.0f B/s: moved %.0f B/s (%.1f%%)", cap, bw,
	       bw * 100 / cap);
	EXPECT_GT(cap * 1.05, bw);

	/*
	 * A flooding camera keeps the engine awake; small segments make its
	 * decisions frequent, so the capped channel's budget (a 2 ms bank)
	 * does not overflow between them.
	 */
	SET_BUS(FLOOD_BUS);
	create_req(&c, &big);
	c.segment = 4096;
	ASSERT_EQ(1, flood_add(self->fd, &f, &c, 3));
	ASSERT_EQ(0, capped_rate(self->fd, &f, 0, &bw));
	TH_LOG("next to a flood on a %llu B/s bus: moved %.0f B/s (%.1f%%)",
	       FLOOD_BUS, bw, bw * 100 / cap);
	EXPECT_GT(cap * 1.05, bw);
	/*
	 * The cap is an upper bound; how close the channel gets to it
	 * depends on the guest's timer and scheduling latency, which a
	 * loaded TCG host stretches (85-92 % seen), so the lower check is
	 * loose: the channel must not be starved.
	 */
	EXPECT_LT(cap * 0.7, bw);
	flood_free(self->fd, &f);
}

/*
 * MMEDGE_OVERRUN_DROP_OLDEST: with nobody dequeuing, the filled buffers
 * are refilled with newer frames; the two buffers hold the two latest.
 */
TEST_F(chan, overrun_drop_oldest)
{
	struct mmedge_src_config src = camera(MMEDGE_FMT_GREY, 64, 48, 50);
	struct mmedge_chan_create c;
	struct mmedge_chan_stats st;
	struct mmedge_dqbuf d[2];
	struct sbuf b[2];
	char why[200];
	int id, i;

	create_req(&c, &src);
	c.overrun = MMEDGE_OVERRUN_DROP_OLDEST;
	ASSERT_EQ(0, chan_create(self->fd, &c));
	id = c.id;
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, sbuf_alloc(self->fd, chan_buf_size(&c), &b[i]));
		ASSERT_EQ(0, qbuf(self->fd, id, b[i].fd, 0, i, NULL));
	}
	sleep_ms(400);
	/*
	 * One of the two may be in flight (being refilled, or getting its
	 * new fence in the re-arm work): wait for it rather than poll.
	 */
	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, dqbuf(self->fd, id, 0, 2000, &d[i]));
	ASSERT_EQ(0, chan_stats(self->fd, id, &st));
	TH_LOG("after 400 ms: seq %llu (cookie %llu), %llu (cookie %llu); dropped %llu, stats frames %llu dropped %llu",
	       (unsigned long long)d[0].sequence,
	       (unsigned long long)d[0].cookie,
	       (unsigned long long)d[1].sequence,
	       (unsigned long long)d[1].cookie,
	       (unsigned long long)d[1].dropped,
	       (unsigned long long)st.frames, (unsigned long long)st.dropped);
	/* About 20 frames came: the buffers hold recent ones, in order. */
	EXPECT_LE(10, d[0].sequence);
	EXPECT_LT(d[0].sequence, d[1].sequence);
	EXPECT_NE(d[0].cookie, d[1].cookie);
	EXPECT_LE(d[0].sequence - 1, d[0].dropped);
	EXPECT_LE(d[1].sequence - 1, st.dropped);
	for (i = 0; i < 2; i++) {
		struct sbuf *cur = &b[d[i].cookie];

		EXPECT_EQ(0, check_meta((const void *)(cur->map + c.meta_offset),
					&d[i], id, why, sizeof(why)))
			TH_LOG("%s", why);
		EXPECT_EQ(0, mmedge_check_frame(&src, d[i].sequence, cur->map,
						d[i].bytesused, why,
						sizeof(why)))
			TH_LOG("%s", why);
	}
	EXPECT_EQ(0, chan_destroy(self->fd, id));
	for (i = 0; i < 2; i++)
		sbuf_free(&b[i]);
}

/*
 * A static camera, a silent and a noise microphone stream together. The
 * camera's frames equal the first one dequeued but for the frame number
 * at the start of each luma line (and are the pattern of mmedge_src_
 * pattern.h); the silent buffers are all zero, index words included; the
 * noise buffers carry their index and the recomputed noise.
 */
#define QUIET_FRAMES	6

TEST_F(chan, static_camera_silent_and_noise_mics)
{
	struct mmedge_src_config src[3] = {
		camera(MMEDGE_FMT_NV12, 64, 48, 30),
		mic(16000, 320, MMEDGE_SIGNAL_SILENCE),
		mic(16000, 320, MMEDGE_SIGNAL_NOISE),
	};
	struct mmedge_chan_create c[3];
	struct sbuf b[3][2];
	struct mmedge_dqbuf d;
	uint8_t *first = NULL;
	uint64_t first_seq = 0, lb = 64, x, y;
	unsigned int k, n, i, diff, nonzero, loud;
	char why[200];

	src[0].signal = MMEDGE_PATTERN_STATIC;
	for (k = 0; k < 3; k++) {
		ASSERT_LT(0, chan_new(self->fd, &src[k], &c[k]));
		for (i = 0; i < 2; i++) {
			ASSERT_EQ(0, sbuf_alloc(self->fd, chan_buf_size(&c[k]),
						&b[k][i]));
			ASSERT_EQ(0, qbuf(self->fd, c[k].id, b[k][i].fd, 0, i,
					  NULL));
		}
	}
	first = malloc(c[0].frame_size);
	ASSERT_NE(NULL, first);

	for (n = 0; n < QUIET_FRAMES; n++) {
		for (k = 0; k < 3; k++) {
			const uint8_t *p;

			ASSERT_EQ(0, dqbuf(self->fd, c[k].id, 0, 2000, &d));
			ASSERT_GT(2, d.cookie);
			ASSERT_EQ(c[k].frame_size, d.bytesused);
			p = b[k][d.cookie].map;
			ASSERT_EQ(0, dmabuf_sync(b[k][d.cookie].fd,
						 DMA_BUF_SYNC_START |
						 DMA_BUF_SYNC_READ));
			EXPECT_EQ(0, mmedge_check_frame(&src[k], d.sequence, p,
							d.bytesused, why,
							sizeof(why)))
				TH_LOG("source %u frame %llu: %s", k,
				       (unsigned long long)d.sequence, why);
			if (k == 0 && !n) {
				memcpy(first, p, d.bytesused);
				first_seq = d.sequence;
			} else if (k == 0) {
				/* Each line: its number, then frame 0's. */
				EXPECT_LT(first_seq, d.sequence);
				diff = 0;
				for (y = 0; y < 48; y++) {
					EXPECT_EQ(d.sequence,
						  mmedge_pat_le(p + y * lb, 8));
					for (x = 8; x < lb; x++)
						diff += p[y * lb + x] !=
							first[y * lb + x];
				}
				diff += memcmp(p + 48 * lb, first + 48 * lb,
					       24 * lb) != 0;
				EXPECT_EQ(0, diff);
				/* line 5, byte 10: 10 + 5 + 0 */
				EXPECT_EQ(15, p[5 * lb + 10]);
			} else if (k == 1) {
				nonzero = 0;
				for (i = 0; i < d.bytesused; i++)
					nonzero += p[i] != 0;
				EXPECT_EQ(0, nonzero);
			} else {
				EXPECT_EQ(d.sequence * 320,
					  mmedge_mic_first_index(p));
				loud = 0;
				for (i = 4; i < 320; i++)
					loud += abs((int16_t)mmedge_pat_le(p + 2 * i,
									   2)) > 4000;
				/* uniform in +-8000: about half above 4000 */
				EXPECT_LT(100, loud);
			}
			ASSERT_EQ(0, dmabuf_sync(b[k][d.cookie].fd,
						 DMA_BUF_SYNC_END |
						 DMA_BUF_SYNC_READ));
			ASSERT_EQ(0, qbuf(self->fd, c[k].id,
					  b[k][d.cookie].fd, 0, d.cookie,
					  NULL));
		}
	}
	free(first);
	for (k = 0; k < 3; k++) {
		EXPECT_EQ(0, chan_destroy(self->fd, c[k].id));
		for (i = 0; i < 2; i++)
			sbuf_free(&b[k][i]);
	}
}

/*
 * 6. Fences and zero copy.
 */
TEST_F(chan, fences)
{
	/* Two frames a second: the first is 500 ms away after queueing. */
	struct mmedge_src_config src = camera(MMEDGE_FMT_GREY, 64, 48, 2);
	int status, fence, implicit, id;
	struct mmedge_chan_create c;
	struct mmedge_dqbuf d;
	char driver[32];
	struct sbuf b;

	id = chan_new(self->fd, &src, &c);
	ASSERT_LT(0, id);
	ASSERT_EQ(0, sbuf_alloc(self->fd, chan_buf_size(&c), &b));

	/* No fence asked for: fence_fd is -1. */
	ASSERT_EQ(0, qbuf(self->fd, id, b.fd, 0, 1, &fence));
	EXPECT_EQ(-1, fence);
	ASSERT_EQ(0, dqbuf(self->fd, id, 0, 2000, &d));

	ASSERT_EQ(0, qbuf(self->fd, id, b.fd, MMEDGE_QBUF_FENCE, 2, &fence));
	ASSERT_LE(0, fence);
	EXPECT_EQ(FD_CLOEXEC, fcntl(fence, F_GETFD) & FD_CLOEXEC);
	EXPECT_EQ(0, poll_in(fence, 0));
	ASSERT_EQ(0, fence_info(fence, &status, driver, sizeof(driver)));
	EXPECT_EQ(0, status);
	EXPECT_STREQ("mmedge", driver);

	/* Implicit sync: the buffer carries the write fence. */
	implicit = export_fence(b.fd, DMA_BUF_SYNC_READ);
	ASSERT_LE(0, implicit);
	EXPECT_EQ(0, poll_in(implicit, 0));
	EXPECT_EQ(0, poll_in(b.fd, 0));

	ASSERT_EQ(1, poll_in(fence, 2000));
	ASSERT_EQ(0, fence_info(fence, &status, driver, sizeof(driver)));
	EXPECT_EQ(1, status);
	EXPECT_STREQ("mmedge", driver);
	EXPECT_EQ(1, poll_in(implicit, 0));
	EXPECT_EQ(1, poll_in(b.fd, 0));

	/* The fence signalled with the frame filled: dequeue is immediate. */
	ASSERT_EQ(0, dqbuf(self->fd, id, MMEDGE_DQBUF_NONBLOCK, 0, &d));
	EXPECT_EQ(2, d.cookie);
	EXPECT_EQ(0, mmedge_check_frame(&src, d.sequence, b.map, d.bytesused,
					NULL, 0));
	close(implicit);
	close(fence);

	/* After the dequeue the buffer has no unsignalled fence. */
	implicit = export_fence(b.fd, DMA_BUF_SYNC_READ);
	ASSERT_LE(0, implicit);
	EXPECT_EQ(1, poll_in(implicit, 0));
	close(implicit);

	EXPECT_EQ(0, chan_destroy(self->fd, id));
	sbuf_free(&b);
}

/*
 * Reverse zero copy: vgem's dumb buffer, imported into mmedge and queued
 * on a camera, is filled by mmedge's engine; vgem's own mapping shows the
 * frame.
 */
TEST_F(chan, vgem_zero_copy)
{
	struct mmedge_src_config src = camera(MMEDGE_FMT_RGB24, 64, 48, 30);
	struct drm_mode_create_dumb cd;
	struct drm_mode_map_dumb md;
	struct mmedge_buf_import imp;
	struct mmedge_buf_release rel;
	struct mmedge_chan_create c;
	const struct mmedge_frame_meta *m;
	struct mmedge_dqbuf d;
	int vgem, dmabuf, id, fence, i;
	long long buffers0, imports0, buffers1, imports1;
	uint8_t *p;
	char why[160];

	vgem = open_vgem();
	if (vgem < 0)
		SKIP(return, "no vgem card (modprobe vgem)");
	ASSERT_EQ(0, read_live(&buffers0, &imports0));
	id = chan_new(self->fd, &src, &c);
	ASSERT_LT(0, id);

	memset(&cd, 0, sizeof(cd));
	cd.width = 64;
	cd.height = (c.meta_offset + sizeof(*m) + 255) / 256;
	cd.bpp = 32;
	ASSERT_EQ(0, xioctl(vgem, DRM_IOCTL_MODE_CREATE_DUMB, &cd));
	ASSERT_LE(c.meta_offset + sizeof(*m), cd.size);
	memset(&md, 0, sizeof(md));
	md.handle = cd.handle;
	ASSERT_EQ(0, xioctl(vgem, DRM_IOCTL_MODE_MAP_DUMB, &md));
	p = mmap(NULL, cd.size, PROT_READ | PROT_WRITE, MAP_SHARED, vgem,
		 md.offset);
	ASSERT_NE(MAP_FAILED, p);
	memset(p, 0x5a, cd.size);
	ASSERT_EQ(0, drmPrimeHandleToFD(vgem, cd.handle, DRM_CLOEXEC | DRM_RDWR,
					&dmabuf));

	/* Not imported yet: mmedge will not write into it. */
	EXPECT_EQ(-EINVAL, qbuf(self->fd, id, dmabuf, 0, 0, NULL));
	memset(&imp, 0, sizeof(imp));
	imp.fd = dmabuf;
	ASSERT_EQ(0, xioctl(self->fd, MMEDGE_IOC_BUF_IMPORT, &imp));

	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, qbuf(self->fd, id, dmabuf, MMEDGE_QBUF_FENCE, i,
				  &fence));
		ASSERT_EQ(1, poll_in(fence, 2000));
		close(fence);
		ASSERT_EQ(0, dqbuf(self->fd, id, MMEDGE_DQBUF_NONBLOCK, 0, &d));
		EXPECT_EQ(i, d.cookie);
		EXPECT_EQ(0, mmedge_check_frame(&src, d.sequence, p,
						d.bytesused, why, sizeof(why)))
			TH_LOG("vgem view of frame %llu: %s",
			       (unsigned long long)d.sequence, why);
		m = (const void *)(p + c.meta_offset);
		EXPECT_EQ(0, check_meta(m, &d, id, why, sizeof(why)))
			TH_LOG("%s", why);
		/* Past the record, vgem's bytes are untouched. */
		EXPECT_EQ(0x5a, p[c.meta_offset + sizeof(*m)]);
		EXPECT_EQ(0x5a, p[cd.size - 1]);
	}

	EXPECT_EQ(0, chan_destroy(self->fd, id));
	memset(&rel, 0, sizeof(rel));
	rel.id = imp.id;
	EXPECT_EQ(0, xioctl(self->fd, MMEDGE_IOC_BUF_RELEASE, &rel));
	munmap(p, cd.size);
	close(dmabuf);
	drmCloseBufferHandle(vgem, cd.handle);
	close(vgem);
	ASSERT_EQ(0, read_live(&buffers1, &imports1));
	EXPECT_EQ(buffers0, buffers1);
	EXPECT_EQ(imports0, imports1);
}

/*
 * 7. Bad input, one field at a time.
 */
FIXTURE(chan_bad) {
	int fd;
	struct mmedge_chan_create c;
};

FIXTURE_SETUP(chan_bad)
{
	struct mmedge_src_config src = camera(MMEDGE_FMT_GREY, 64, 48, 30);
	const char *why;

	self->fd = open_dev();
	if (self->fd < 0 && errno == ENOENT)
		SKIP(return, "%s not present (is mmedge.ko loaded?)", DEVPATH);
	ASSERT_LE(0, self->fd);
	if (has_channels(self->fd, &why))
		SKIP(return, "%s", why);
	create_req(&self->c, &src);
}

FIXTURE_TEARDOWN(chan_bad)
{
	if (self->fd >= 0)
		close(self->fd);
}

/* The request as set up works (so each test changes only one thing). */
TEST_F(chan_bad, baseline)
{
	ASSERT_EQ(0, chan_create(self->fd, &self->c));
	EXPECT_LT(0, self->c.id);
	EXPECT_EQ(64 * 48, self->c.frame_size);
	EXPECT_EQ(64 * 48, self->c.meta_offset);
	EXPECT_EQ(MMEDGE_WEIGHT_DEFAULT, self->c.weight);
	EXPECT_EQ(4096, self->c.segment);
	EXPECT_EQ(0, chan_destroy(self->fd, self->c.id));
}

TEST_F(chan_bad, weight_too_big)
{
	self->c.weight = MMEDGE_WEIGHT_MAX + 1;
	EXPECT_EQ(-EINVAL, chan_create(self->fd, &self->c));
}

TEST_F(chan_bad, weight_zero_is_default)
{
	self->c.weight = 0;
	ASSERT_EQ(0, chan_create(self->fd, &self->c));
	EXPECT_EQ(MMEDGE_WEIGHT_DEFAULT, self->c.weight);
	EXPECT_EQ(0, chan_destroy(self->fd, self->c.id));
}

TEST_F(chan_bad, weight_min_ok)
{
	self->c.weight = MMEDGE_WEIGHT_MIN;
	ASSERT_EQ(0, chan_create(self->fd, &self->c));
	EXPECT_EQ(MMEDGE_WEIGHT_MIN, self->c.weight);
	EXPECT_EQ(0, chan_destroy(self->fd, self->c.id));
}

TEST_F(chan_bad, class_unknown)
{
	self->c.class = 2;
	EXPECT_EQ(-EINVAL, chan_create(self->fd, &self->c));
}

TEST_F(chan_bad, latency_without_cap)
{
	self->c.class = MMEDGE_CLASS_LATENCY;
	EXPECT_EQ(-EINVAL, chan_create(self->fd, &self->c));
}

TEST_F(chan_bad, latency_with_cap)
{
	self->c.class = MMEDGE_CLASS_LATENCY;
	self->c.cap = 100000;
	if (geteuid())
		SKIP(return, "needs CAP_SYS_NICE");
	ASSERT_EQ(0, chan_create(self->fd, &self->c));
	EXPECT_EQ(0, chan_destroy(self->fd, self->c.id));
}

struct bad_src {
	const char *what;
	struct mmedge_src_config src;
};

/* Each entry is a valid source with one field wrong. */
static const struct bad_src bad_srcs[] = {
	{ "type 0", { 0, MMEDGE_FMT_GREY, 64, 48, 30, 1, 0, 0 } },
	{ "type 4", { 4, MMEDGE_FMT_GREY, 64, 48, 30, 1, 0, 0 } },
	{ "camera fourcc S16LE", { MMEDGE_SRC_CAMERA, MMEDGE_FMT_S16LE, 64, 48, 30, 1, 0, 0 } },
	{ "camera fourcc 0", { MMEDGE_SRC_CAMERA, 0, 64, 48, 30, 1, 0, 0 } },
	{ "camera width 15", { MMEDGE_SRC_CAMERA, MMEDGE_FMT_GREY, 15, 48, 30, 1, 0, 0 } },
	{ "camera width 4097", { MMEDGE_SRC_CAMERA, MMEDGE_FMT_GREY, 4097, 48, 30, 1, 0, 0 } },
	{ "camera height 15", { MMEDGE_SRC_CAMERA, MMEDGE_FMT_GREY, 64, 15, 30, 1, 0, 0 } },
	{ "camera height 4097", { MMEDGE_SRC_CAMERA, MMEDGE_FMT_GREY, 64, 4097, 30, 1, 0, 0 } },
	{ "nv12 odd width", { MMEDGE_SRC_CAMERA, MMEDGE_FMT_NV12, 65, 48, 30, 1, 0, 0 } },
	{ "nv12 odd height", { MMEDGE_SRC_CAMERA, MMEDGE_FMT_NV12, 64, 49, 30, 1, 0, 0 } },
	{ "camera rate_den 0", { MMEDGE_SRC_CAMERA, MMEDGE_FMT_GREY, 64, 48, 30, 0, 0, 0 } },
	{ "camera rate_num 0", { MMEDGE_SRC_CAMERA, MMEDGE_FMT_GREY, 64, 48, 0, 1, 0, 0 } },
	{ "camera 241 fps", { MMEDGE_SRC_CAMERA, MMEDGE_FMT_GREY, 64, 48, 241, 1, 0, 0 } },
	{ "camera 1/61 fps", { MMEDGE_SRC_CAMERA, MMEDGE_FMT_GREY, 64, 48, 1, 61, 0, 0 } },
	{ "camera period 1", { MMEDGE_SRC_CAMERA, MMEDGE_FMT_GREY, 64, 48, 30, 1, 1, 0 } },
	{ "camera pattern 2", { MMEDGE_SRC_CAMERA, MMEDGE_FMT_GREY, 64, 48, 30, 1, 0, 2 } },
	{ "camera pattern ~0", { MMEDGE_SRC_CAMERA, MMEDGE_FMT_GREY, 64, 48, 30, 1, 0, ~0u } },
	{ "mic fourcc GREY", { MMEDGE_SRC_MIC, MMEDGE_FMT_GREY, 0, 0, 16000, 1, 320, 0 } },
	{ "mic rate 7999", { MMEDGE_SRC_MIC, MMEDGE_FMT_S16LE, 0, 0, 7999, 1, 320, 0 } },
	{ "mic rate 192001", { MMEDGE_SRC_MIC, MMEDGE_FMT_S16LE, 0, 0, 192001, 1, 320, 0 } },
	{ "mic period 15", { MMEDGE_SRC_MIC, MMEDGE_FMT_S16LE, 0, 0, 16000, 1, 15, 0 } },
	{ "mic period 65537", { MMEDGE_SRC_MIC, MMEDGE_FMT_S16LE, 0, 0, 16000, 1, 65537, 0 } },
	{ "mic signal 4", { MMEDGE_SRC_MIC, MMEDGE_FMT_S16LE, 0, 0, 16000, 1, 320, 4 } },
	{ "mic signal ~0", { MMEDGE_SRC_MIC, MMEDGE_FMT_S16LE, 0, 0, 16000, 1, 320, ~0u } },
	{ "mic width 1", { MMEDGE_SRC_MIC, MMEDGE_FMT_S16LE, 1, 0, 16000, 1, 320, 0 } },
	{ "mic rate_den 0", { MMEDGE_SRC_MIC, MMEDGE_FMT_S16LE, 0, 0, 16000, 0, 320, 0 } },
	{ "imu fourcc S16LE", { MMEDGE_SRC_IMU, MMEDGE_FMT_S16LE, 0, 0, 200, 1, 10, 0 } },
	{ "imu rate 0", { MMEDGE_SRC_IMU, MMEDGE_FMT_IMU6, 0, 0, 0, 1, 10, 0 } },
	{ "imu rate 8001", { MMEDGE_SRC_IMU, MMEDGE_FMT_IMU6, 0, 0, 8001, 1, 10, 0 } },
	{ "imu period 0", { MMEDGE_SRC_IMU, MMEDGE_FMT_IMU6, 0, 0, 200, 1, 0, 0 } },
	{ "imu period 4097", { MMEDGE_SRC_IMU, MMEDGE_FMT_IMU6, 0, 0, 200, 1, 4097, 0 } },
	{ "imu signal 1", { MMEDGE_SRC_IMU, MMEDGE_FMT_IMU6, 0, 0, 200, 1, 10, 1 } },
	{ "imu height 1", { MMEDGE_SRC_IMU, MMEDGE_FMT_IMU6, 0, 1, 200, 1, 10, 0 } },
};

TEST_F(chan_bad, source_fields)
{
	unsigned int i;

	for (i = 0; i < sizeof(bad_srcs) / sizeof(bad_srcs[0]); i++) {
		create_req(&self->c, &bad_srcs[i].src);
		EXPECT_EQ(-EINVAL, chan_create(self->fd, &self->c))
			TH_LOG("%s", bad_srcs[i].what);
	}
}

/* The limits themselves are accepted. */
TEST_F(chan_bad, source_limits_ok)
{
	static const struct mmedge_src_config ok[] = {
		{ MMEDGE_SRC_CAMERA, MMEDGE_FMT_GREY, 16, 16, 240, 1, 0, 0 },
		{ MMEDGE_SRC_CAMERA, MMEDGE_FMT_NV12, 4096, 4096, 1, 60, 0, 0 },
		{ MMEDGE_SRC_CAMERA, MMEDGE_FMT_RGB24, 16, 16, 1, 60, 0,
		  MMEDGE_PATTERN_STATIC },
		{ MMEDGE_SRC_MIC, MMEDGE_FMT_S16LE, 0, 0, 8000, 1, 16, 1 },
		{ MMEDGE_SRC_MIC, MMEDGE_FMT_S16LE, 0, 0, 8000, 1, 16,
		  MMEDGE_SIGNAL_SILENCE },
		{ MMEDGE_SRC_MIC, MMEDGE_FMT_S16LE, 0, 0, 192000, 1, 65536,
		  MMEDGE_SIGNAL_NOISE },
		{ MMEDGE_SRC_MIC, MMEDGE_FMT_S16LE, 0, 0, 192000, 1, 65536, 0 },
		{ MMEDGE_SRC_IMU, MMEDGE_FMT_IMU6, 0, 0, 1, 1, 1, 0 },
		{ MMEDGE_SRC_IMU, MMEDGE_FMT_IMU6, 0, 0, 8000, 1, 4096, 0 },
	};
	unsigned int i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		create_req(&self->c, &ok[i]);
		ASSERT_EQ(0, chan_create(self->fd, &self->c)) TH_LOG("ok[%u]", i);
		EXPECT_EQ(mmedge_pat_frame_bytes(&ok[i]), self->c.frame_size);
		EXPECT_EQ(0, chan_destroy(self->fd, self->c.id));
	}
}

TEST_F(chan_bad, segment_32)
{
	self->c.segment = 32;
	EXPECT_EQ(-EINVAL, chan_create(self->fd, &self->c));
}

TEST_F(chan_bad, segment_not_multiple_of_64)
{
	self->c.segment = 4096 + 32;
	EXPECT_EQ(-EINVAL, chan_create(self->fd, &self->c));
}

TEST_F(chan_bad, segment_too_big)
{
	self->c.segment = (1 << 20) + 64;
	EXPECT_EQ(-EINVAL, chan_create(self->fd, &self->c));
}

TEST_F(chan_bad, segment_limits_ok)
{
	self->c.segment = 64;
	ASSERT_EQ(0, chan_create(self->fd, &self->c));
	EXPECT_EQ(64, self->c.segment);
	EXPECT_EQ(0, chan_destroy(self->fd, self->c.id));
	self->c.segment = 1 << 20;
	ASSERT_EQ(0, chan_create(self->fd, &self->c));
	EXPECT_EQ(0, chan_destroy(self->fd, self->c.id));
}

TEST_F(chan_bad, dir_unknown)
{
	self->c.dir = 1;
	EXPECT_EQ(-EINVAL, chan_create(self->fd, &self->c));
}

TEST_F(chan_bad, flags_unknown)
{
	unsigned int bit;

	for (bit = 0; bit < 32; bit++) {
		self->c.flags = 1U << bit;
		EXPECT_EQ(-EINVAL, chan_create(self->fd, &self->c))
			TH_LOG("flag bit %u", bit);
	}
}

TEST_F(chan_bad, overrun_unknown)
{
	self->c.overrun = MMEDGE_OVERRUN_DROP_OLDEST + 1;
	EXPECT_EQ(-EINVAL, chan_create(self->fd, &self->c));
}

TEST_F(chan_bad, pad_nonzero)
{
	self->c.pad = 1;
	EXPECT_EQ(-EINVAL, chan_create(self->fd, &self->c));
}

TEST_F(chan_bad, reserved_nonzero)
{
	unsigned int i;

	for (i = 0; i < 2; i++) {
		self->c.reserved[0] = self->c.reserved[1] = 0;
		self->c.reserved[i] = 1;
		EXPECT_EQ(-EINVAL, chan_create(self->fd, &self->c))
			TH_LOG("reserved[%u]", i);
	}
}

TEST_F(chan_bad, create_older_struct)
{
	EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_SIZED(0x06, 64),
				  &self->c));
	EXPECT_EQ(0, self->c.id);
}

TEST_F(chan_bad, create_newer_struct)
{
	struct chan_create_newer n;

	memset(&n, 0, sizeof(n));
	n.v0 = self->c;
	ASSERT_EQ(0, xioctl(self->fd, MMEDGE_IOC_SIZED(0x06, sizeof(n)), &n));
	EXPECT_LT(0, n.v0.id);
	EXPECT_EQ(64 * 48, n.v0.frame_size);
	EXPECT_EQ(0, n.extra[0]);
	EXPECT_EQ(0, n.extra[7]);
	EXPECT_EQ(0, chan_destroy(self->fd, n.v0.id));
}

TEST_F(chan_bad, create_newer_struct_nonzero_tail)
{
	struct chan_create_newer n;

	memset(&n, 0, sizeof(n));
	n.v0 = self->c;
	n.extra[3] = 1;
	EXPECT_EQ(-E2BIG, xioctl(self->fd, MMEDGE_IOC_SIZED(0x06, sizeof(n)),
				 &n));
	EXPECT_EQ(0, n.v0.id);
}

TEST_F(chan_bad, dqbuf_older_newer_struct)
{
	struct dqbuf_newer n;
	struct mmedge_dqbuf d;
	int id;

	id = chan_new(self->fd, &self->c.src, NULL);
	ASSERT_LT(0, id);
	memset(&d, 0, sizeof(d));
	d.chan = id;
	d.flags = MMEDGE_DQBUF_NONBLOCK;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_SIZED(0x0a, 64), &d));
	memset(&n, 0, sizeof(n));
	n.v0.chan = id;
	n.v0.flags = MMEDGE_DQBUF_NONBLOCK;
	EXPECT_EQ(-EAGAIN, xioctl(self->fd, MMEDGE_IOC_SIZED(0x0a, sizeof(n)),
				  &n));
	n.extra[0] = 1;
	EXPECT_EQ(-E2BIG, xioctl(self->fd, MMEDGE_IOC_SIZED(0x0a, sizeof(n)),
				 &n));
	EXPECT_EQ(0, chan_destroy(self->fd, id));
}

/* Older sizes of the other channel ioctls are refused. */
TEST_F(chan_bad, other_older_structs)
{
	uint8_t buf[512];

	memset(buf, 0, sizeof(buf));
	EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_SIZED(0x07, 32), buf));
	EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_SIZED(0x09, 32), buf));
	EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_SIZED(0x0b, 200), buf));
	EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_SIZED(0x0c, 24), buf));
	EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_SIZED(0x0d, 552), buf));
}

TEST_F(chan_bad, config_bad)
{
	struct mmedge_chan_config cc;
	int id;

	id = chan_new(self->fd, &self->c.src, NULL);
	ASSERT_LT(0, id);
	EXPECT_EQ(-EINVAL, chan_config(self->fd, id, MMEDGE_CHAN_SET_VALID + 1,
				       100, 0, 0, NULL));
	EXPECT_EQ(-EINVAL, chan_config(self->fd, id, MMEDGE_CHAN_SET_WEIGHT,
				       MMEDGE_WEIGHT_MAX + 1, 0, 0, NULL));
	EXPECT_EQ(-EINVAL, chan_config(self->fd, id, MMEDGE_CHAN_SET_WEIGHT,
				       0, 0, 0, NULL));
	EXPECT_EQ(-EINVAL, chan_config(self->fd, id, MMEDGE_CHAN_SET_CLASS,
				       0, 2, 0, NULL));
	/* Latency needs a cap, in the same call or already set. */
	EXPECT_EQ(-EINVAL, chan_config(self->fd, id, MMEDGE_CHAN_SET_CLASS,
				       0, MMEDGE_CLASS_LATENCY, 0, NULL));
	EXPECT_EQ(-ENOENT, chan_config(self->fd, 999, 0, 0, 0, 0, NULL));
	memset(&cc, 0, sizeof(cc));
	cc.id = id;
	cc.reserved[1] = 1;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_CHAN_CONFIG, &cc));

	/* set 0 only reads. */
	ASSERT_EQ(0, chan_config(self->fd, id, 0, 7, 1, 5, &cc));
	EXPECT_EQ(MMEDGE_WEIGHT_DEFAULT, cc.weight);
	EXPECT_EQ(MMEDGE_CLASS_BEST_EFFORT, cc.class);
	EXPECT_EQ(0, cc.cap);
	/* Lowering and capping work unprivileged too. */
	ASSERT_EQ(0, chan_config(self->fd, id, MMEDGE_CHAN_SET_WEIGHT |
				 MMEDGE_CHAN_SET_CAP, 40, 0, 12345, &cc));
	EXPECT_EQ(40, cc.weight);
	EXPECT_EQ(12345, cc.cap);
	EXPECT_EQ(0, chan_destroy(self->fd, id));
}

TEST_F(chan_bad, stats_bad)
{
	struct mmedge_chan_stats st;
	int id;

	EXPECT_EQ(-ENOENT, chan_stats(self->fd, 999, &st));
	id = chan_new(self->fd, &self->c.src, NULL);
	ASSERT_LT(0, id);
	memset(&st, 0, sizeof(st));
	st.id = id;
	st.flags = 1;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_CHAN_STATS, &st));
	memset(&st, 0, sizeof(st));
	st.id = id;
	st.reserved[0] = 1;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_CHAN_STATS, &st));
	ASSERT_EQ(0, chan_stats(self->fd, id, &st));
	EXPECT_EQ(0, st.bytes);
	EXPECT_EQ(MMEDGE_WEIGHT_DEFAULT, st.weight);
	EXPECT_EQ(0, chan_destroy(self->fd, id));
}

TEST_F(chan_bad, bus_bad)
{
	struct mmedge_bus_config b;
	__u64 bw;

	ASSERT_EQ(0, bus_get(self->fd, &bw));
	EXPECT_LE(1000000, bw);
	memset(&b, 0, sizeof(b));
	b.set = 2;
	b.bandwidth = bw;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_BUS_CONFIG, &b));
	memset(&b, 0, sizeof(b));
	b.flags = 1;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_BUS_CONFIG, &b));
	memset(&b, 0, sizeof(b));
	b.reserved[0] = 1;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_BUS_CONFIG, &b));
	EXPECT_EQ(-EINVAL, bus_set(self->fd, 999999));
	EXPECT_EQ(-EINVAL, bus_set(self->fd, 100000000001ULL));
	ASSERT_EQ(0, bus_get(self->fd, &b.bandwidth));
	EXPECT_EQ(bw, b.bandwidth);
}

TEST_F(chan_bad, destroy_bad)
{
	struct mmedge_chan_destroy d;
	int id, fd2;

	EXPECT_EQ(-ENOENT, chan_destroy(self->fd, 999));
	EXPECT_EQ(-ENOENT, chan_destroy(self->fd, 0));
	id = chan_new(self->fd, &self->c.src, NULL);
	ASSERT_LT(0, id);
	memset(&d, 0, sizeof(d));
	d.id = id;
	d.flags = 1;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_CHAN_DESTROY, &d));
	d.flags = 0;
	d.reserved = 1;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_CHAN_DESTROY, &d));
	/* Another file cannot destroy it. */
	fd2 = open_dev();
	ASSERT_LE(0, fd2);
	EXPECT_EQ(-ENOENT, chan_destroy(fd2, id));
	close(fd2);
	EXPECT_EQ(0, chan_destroy(self->fd, id));
	EXPECT_EQ(-ENOENT, chan_destroy(self->fd, id));
}

TEST_F(chan_bad, qbuf_bad)
{
	struct mmedge_qbuf q;
	struct sbuf b, small;
	struct mmedge_chan_create c64;
	struct mmedge_src_config s64 = camera(MMEDGE_FMT_GREY, 64, 64, 30);
	int id, id64, fd2, fence;

	id = chan_new(self->fd, &self->c.src, &self->c);
	ASSERT_LT(0, id);
	/* Big enough for both channels below. */
	ASSERT_EQ(0, sbuf_alloc(self->fd, 8192, &b));

	EXPECT_EQ(-EINVAL, qbuf(self->fd, id, b.fd, MMEDGE_QBUF_FLAGS_VALID + 1,
				0, &fence));
	EXPECT_EQ(-1, fence);
	memset(&q, 0, sizeof(q));
	q.chan = id;
	q.fd = b.fd;
	q.reserved = 1;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_QBUF, &q));
	EXPECT_EQ(-EBADF, qbuf(self->fd, id, 1000, 0, 0, NULL));
	EXPECT_EQ(-EINVAL, qbuf(self->fd, id, self->fd, 0, 0, NULL));
	EXPECT_EQ(-ENOENT, qbuf(self->fd, 999, b.fd, 0, 0, NULL));

	/* 64x64 GREY: meta at 4096, one page is too small for the record. */
	id64 = chan_new(self->fd, &s64, &c64);
	ASSERT_LT(0, id64);
	EXPECT_EQ(4096, c64.meta_offset);
	ASSERT_EQ(0, sbuf_alloc(self->fd, 4096, &small));
	EXPECT_EQ(-ENOSPC, qbuf(self->fd, id64, small.fd, 0, 0, NULL));

	/* Another file's channel is not ours to queue on. */
	fd2 = open_dev();
	ASSERT_LE(0, fd2);
	EXPECT_EQ(-ENOENT, qbuf(fd2, id, b.fd, 0, 0, NULL));
	close(fd2);

	/* The same buffer twice, on one channel or two. */
	ASSERT_EQ(0, qbuf(self->fd, id, b.fd, 0, 0, NULL));
	EXPECT_EQ(-EBUSY, qbuf(self->fd, id, b.fd, 0, 0, NULL));
	EXPECT_EQ(-EBUSY, qbuf(self->fd, id64, b.fd, 0, 0, NULL));

	/* Destroyed: queueing and dequeueing find no channel. */
	EXPECT_EQ(0, chan_destroy(self->fd, id));
	EXPECT_EQ(-ENOENT, qbuf(self->fd, id, b.fd, 0, 0, NULL));
	EXPECT_EQ(0, chan_destroy(self->fd, id64));
	sbuf_free(&small);
	sbuf_free(&b);
}

TEST_F(chan_bad, dqbuf_bad)
{
	struct mmedge_dqbuf d;
	int id;

	EXPECT_EQ(-ENOENT, dqbuf(self->fd, 999, MMEDGE_DQBUF_NONBLOCK, 0, &d));
	EXPECT_EQ(-ENOENT, dqbuf(self->fd, 999, 0, 100, &d));
	id = chan_new(self->fd, &self->c.src, NULL);
	ASSERT_LT(0, id);
	EXPECT_EQ(-EINVAL, dqbuf(self->fd, id, MMEDGE_DQBUF_FLAGS_VALID + 1, 0,
				 &d));
	memset(&d, 0, sizeof(d));
	d.chan = id;
	d.flags = MMEDGE_DQBUF_NONBLOCK;
	d.reserved = 1;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_DQBUF, &d));
	EXPECT_EQ(0, chan_destroy(self->fd, id));
	EXPECT_EQ(-ENOENT, dqbuf(self->fd, id, MMEDGE_DQBUF_NONBLOCK, 0, &d));
}

/*
 * A file has at most 16 channels; the instance's ids run out at
 * max_channels, over several files.
 */
#define FILE_CHANS	16

TEST_F(chan_bad, channel_limit)
{
	int ids[256], fds[256 / FILE_CHANS + 1], n = 0, nfd = 0, ret, i;
	struct mmedge_caps caps;

	memset(&caps, 0, sizeof(caps));
	ASSERT_EQ(0, xioctl(self->fd, MMEDGE_IOC_QUERY_CAPS, &caps));
	ASSERT_GE(256, caps.max_channels);
	fds[nfd++] = self->fd;
	for (;;) {
		ret = chan_new(fds[nfd - 1], &self->c.src, NULL);
		if (ret == -ENOSPC && n == nfd * FILE_CHANS &&
		    nfd < (int)ARRAY_SIZE(fds)) {
			/* This file is full: the next one. */
			fds[nfd] = open_dev();
			ASSERT_LE(0, fds[nfd]);
			nfd++;
			continue;
		}
		if (ret < 0)
			break;
		ASSERT_GT(256, n);
		ids[n++] = ret;
	}
	EXPECT_EQ(-ENOSPC, ret);
	EXPECT_EQ(caps.max_channels, n);
	EXPECT_EQ(0, caps.max_channels % FILE_CHANS);
	for (i = 0; i < n; i++)
		EXPECT_EQ(0, chan_destroy(fds[i / FILE_CHANS], ids[i]));
	for (i = 1; i < nfd; i++)
		close(fds[i]);
	ret = chan_new(self->fd, &self->c.src, NULL);
	EXPECT_LT(0, ret);
}

/*
 * Unprivileged callers: a child drops to uid/gid 65534 (which clears its
 * capabilities) and reports the first failed step as its exit code.
 */
static int drop_privileges(void)
{
	if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
		return -1;
	return geteuid() == 65534 ? 0 : -1;
}

#define STEP(n, cond) do { if (!(cond)) _exit(n); } while (0)

TEST_F(chan_bad, unprivileged)
{
	struct mmedge_chan_config cc;
	struct mmedge_chan_create c;
	int status, id100, id500;
	pid_t pid;

	if (geteuid())
		SKIP(return, "needs root to drop privileges");
	id100 = chan_new(self->fd, &self->c.src, NULL);
	ASSERT_LT(0, id100);
	c = self->c;
	c.weight = 500;
	ASSERT_EQ(0, chan_create(self->fd, &c));
	id500 = c.id;

	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		__u64 bw;

		STEP(2, !drop_privileges());
		c = self->c;
		c.weight = MMEDGE_WEIGHT_DEFAULT + 1;
		STEP(3, chan_create(self->fd, &c) == -EPERM);
		c = self->c;
		c.class = MMEDGE_CLASS_LATENCY;
		c.cap = 64000;
		STEP(4, chan_create(self->fd, &c) == -EPERM);
		c = self->c;
		c.weight = MMEDGE_WEIGHT_DEFAULT;
		STEP(5, chan_create(self->fd, &c) == 0);
		STEP(6, chan_destroy(self->fd, c.id) == 0);
		/* Raising someone's weight needs the privilege; lowering not. */
		STEP(7, chan_config(self->fd, id100, MMEDGE_CHAN_SET_WEIGHT,
				    200, 0, 0, NULL) == -EPERM);
		STEP(8, chan_config(self->fd, id100, MMEDGE_CHAN_SET_WEIGHT,
				    50, 0, 0, &cc) == 0 && cc.weight == 50);
		STEP(9, chan_config(self->fd, id100, MMEDGE_CHAN_SET_WEIGHT,
				    100, 0, 0, NULL) == 0);
		STEP(10, chan_config(self->fd, id500, MMEDGE_CHAN_SET_WEIGHT,
				     300, 0, 0, &cc) == 0 && cc.weight == 300);
		STEP(11, chan_config(self->fd, id500, MMEDGE_CHAN_SET_WEIGHT,
				     400, 0, 0, NULL) == -EPERM);
		STEP(12, chan_config(self->fd, id100, MMEDGE_CHAN_SET_CLASS |
				     MMEDGE_CHAN_SET_CAP, 0,
				     MMEDGE_CLASS_LATENCY, 64000, NULL) == -EPERM);
		/* The bus can be read, not set. */
		STEP(13, bus_get(self->fd, &bw) == 0);
		STEP(14, bus_set(self->fd, bw) == -EPERM);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status))
		TH_LOG("unprivileged step %d failed", WEXITSTATUS(status));
	ASSERT_EQ(0, chan_config(self->fd, id500, 0, 0, 0, 0, &cc));
	EXPECT_EQ(300, cc.weight);
	/* Root may raise again and use the latency class. */
	EXPECT_EQ(0, chan_config(self->fd, id500, MMEDGE_CHAN_SET_WEIGHT, 900,
				 0, 0, NULL));
	EXPECT_EQ(0, chan_config(self->fd, id100, MMEDGE_CHAN_SET_CLASS |
				 MMEDGE_CHAN_SET_CAP, 0, MMEDGE_CLASS_LATENCY,
				 64000, NULL));
	EXPECT_EQ(0, chan_destroy(self->fd, id100));
	EXPECT_EQ(0, chan_destroy(self->fd, id500));
}

/*
 * 8. Destroying a channel with buffers queued and fences pending.
 */
TEST_F(chan, destroy_busy)
{
	struct mmedge_src_config src = camera(MMEDGE_FMT_GREY, 640, 480, 10);
	long long buffers0, imports0, buffers1, imports1, dma_segs = 0;
	struct mmedge_chan_create c;
	struct mmedge_chan_stats st;
	int fences[3], implicit[3], status, id, i;
	uint64_t t_end;
	struct sbuf b[3];
	bool dma;

	ASSERT_EQ(0, read_live(&buffers0, &imports0));
	/* 307200-byte frames at 1 MB/s: the first is in flight 300 ms. */
	SET_BUS(1000000);
	id = chan_new(self->fd, &src, &c);
	ASSERT_LT(0, id);
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, sbuf_alloc(self->fd, chan_buf_size(&c), &b[i]));
		ASSERT_EQ(0, qbuf(self->fd, id, b[i].fd, MMEDGE_QBUF_FENCE, i,
				  &fences[i]));
		ASSERT_LE(0, fences[i]);
		implicit[i] = export_fence(b[i].fd, DMA_BUF_SYNC_READ);
		ASSERT_LE(0, implicit[i]);
	}
	/* Wait until the first frame is moving. */
	t_end = now_ns() + 2000 * NSEC_PER_MSEC;
	do {
		ASSERT_EQ(0, chan_stats(self->fd, id, &st));
		if (st.segments)
			break;
		sleep_ms(10);
	} while (now_ns() < t_end);
	ASSERT_LT(0, st.segments);
	/*
	 * A DMA controller (the dmaengine back end) follows no modelled bus:
	 * the first frame may land at any moment, before or during the
	 * destroy. The camera produces the next two 100 and 200 ms later,
	 * so they are still queued and must be cancelled.
	 */
	dma = !read_ll(STATS_DIR "dma_segments", &dma_segs) && dma_segs;
	if (!dma) {
		ASSERT_EQ(0, st.frames);
		for (i = 0; i < 3; i++)
			EXPECT_EQ(0, poll_in(fences[i], 0));
	}

	ASSERT_EQ(0, chan_destroy(self->fd, id));
	for (i = 0; i < 3; i++) {
		EXPECT_EQ(1, poll_in(fences[i], 1000));
		ASSERT_EQ(0, fence_info(fences[i], &status, NULL, 0));
		if (dma && i == 0 && status == 1) {
			/* landed before the destroy: a good frame */
			EXPECT_EQ(1, poll_in(implicit[i], 1000));
			close(fences[i]);
			close(implicit[i]);
			continue;
		}
		EXPECT_GT(0, status) TH_LOG("fence %d status %d", i, status);
		EXPECT_EQ(-ECANCELED, status);
		EXPECT_EQ(1, poll_in(implicit[i], 1000));
		close(fences[i]);
		close(implicit[i]);
	}
	EXPECT_EQ(-ENOENT, chan_stats(self->fd, id, &st));
	EXPECT_EQ(0, poll_in(self->fd, 0));

	/* The buffers are free to be queued elsewhere. */
	id = chan_new(self->fd, &src, &c);
	ASSERT_LT(0, id);
	ASSERT_EQ(0, qbuf(self->fd, id, b[0].fd, 0, 0, NULL));
	EXPECT_EQ(0, chan_destroy(self->fd, id));

	for (i = 0; i < 3; i++)
		sbuf_free(&b[i]);
	ASSERT_EQ(0, read_live(&buffers1, &imports1));
	EXPECT_EQ(buffers0, buffers1);
	EXPECT_EQ(imports0, imports1);
}

/* Filled but not dequeued buffers are released by a destroy, too. */
TEST_F(chan, destroy_with_done_buffers)
{
	struct mmedge_src_config src = camera(MMEDGE_FMT_GREY, 64, 48, 30);
	long long buffers0, imports0, buffers1, imports1;
	struct mmedge_chan_create c;
	struct sbuf b[2];
	int fences[2], status, id, i;

	ASSERT_EQ(0, read_live(&buffers0, &imports0));
	id = chan_new(self->fd, &src, &c);
	ASSERT_LT(0, id);
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, sbuf_alloc(self->fd, chan_buf_size(&c), &b[i]));
		ASSERT_EQ(0, qbuf(self->fd, id, b[i].fd, MMEDGE_QBUF_FENCE, i,
				  &fences[i]));
	}
	for (i = 0; i < 2; i++)
		ASSERT_EQ(1, poll_in(fences[i], 2000));
	EXPECT_EQ(1, poll_in(self->fd, 0));
	ASSERT_EQ(0, chan_destroy(self->fd, id));
	EXPECT_EQ(0, poll_in(self->fd, 0));
	for (i = 0; i < 2; i++) {
		/* Signalled before the destroy: stays a success. */
		ASSERT_EQ(0, fence_info(fences[i], &status, NULL, 0));
		EXPECT_EQ(1, status);
		close(fences[i]);
		sbuf_free(&b[i]);
	}
	ASSERT_EQ(0, read_live(&buffers1, &imports1));
	EXPECT_EQ(buffers0, buffers1);
	EXPECT_EQ(imports0, imports1);
}

/*
 * 9. Closing the device with channels streaming.
 */
TEST_F(chan, close_while_streaming)
{
	static const struct mmedge_src_config srcs[] = {
		{ MMEDGE_SRC_CAMERA, MMEDGE_FMT_NV12, 320, 240, 60, 1, 0, 0 },
		{ MMEDGE_SRC_MIC, MMEDGE_FMT_S16LE, 0, 0, 48000, 1, 480, 0 },
		{ MMEDGE_SRC_IMU, MMEDGE_FMT_IMU6, 0, 0, 1000, 1, 10, 0 },
	};
	long long buffers0, imports0, buffers1, imports1;
	struct mmedge_chan_create c;
	struct sbuf b[3][3];
	int fences[3][3], status, fd2, id, k, i, cancelled = 0;

	ASSERT_EQ(0, read_live(&buffers0, &imports0));
	fd2 = open_dev();
	ASSERT_LE(0, fd2);
	for (k = 0; k < 3; k++) {
		id = chan_new(fd2, &srcs[k], &c);
		ASSERT_LT(0, id);
		for (i = 0; i < 3; i++) {
			ASSERT_EQ(0, sbuf_alloc(fd2, chan_buf_size(&c),
						&b[k][i]));
			ASSERT_EQ(0, qbuf(fd2, id, b[k][i].fd, MMEDGE_QBUF_FENCE,
					  i, &fences[k][i]));
		}
	}
	sleep_ms(30);
	ASSERT_EQ(0, close(fd2));
	for (k = 0; k < 3; k++) {
		for (i = 0; i < 3; i++) {
			EXPECT_EQ(1, poll_in(fences[k][i], 1000));
			ASSERT_EQ(0, fence_info(fences[k][i], &status, NULL, 0));
			EXPECT_TRUE(status == 1 || status == -ECANCELED)
				TH_LOG("fence status %d", status);
			cancelled += status < 0;
			close(fences[k][i]);
			sbuf_free(&b[k][i]);
		}
	}
	TH_LOG("%d of 9 fences cancelled by the close", cancelled);
	ASSERT_EQ(0, read_live(&buffers1, &imports1));
	EXPECT_EQ(buffers0, buffers1);
	EXPECT_EQ(imports0, imports1);
}

/* Buffers outlive the device file, and a channel keeps no reference. */
TEST_F(chan, close_with_buffers_mapped)
{
	struct mmedge_src_config src = camera(MMEDGE_FMT_GREY, 64, 48, 30);
	long long buffers0, imports0, buffers1, imports1;
	struct mmedge_chan_create c;
	struct mmedge_dqbuf d;
	struct sbuf b;
	int fd2, id;

	ASSERT_EQ(0, read_live(&buffers0, &imports0));
	fd2 = open_dev();
	ASSERT_LE(0, fd2);
	id = chan_new(fd2, &src, &c);
	ASSERT_LT(0, id);
	ASSERT_EQ(0, sbuf_alloc(fd2, chan_buf_size(&c), &b));
	ASSERT_EQ(0, qbuf(fd2, id, b.fd, 0, 0, NULL));
	ASSERT_EQ(0, dqbuf(fd2, id, 0, 2000, &d));
	ASSERT_EQ(0, qbuf(fd2, id, b.fd, 0, 0, NULL));
	close(fd2);
	/* The mapping still works after the file went. */
	EXPECT_EQ(0, b.map[c.meta_offset + sizeof(struct mmedge_frame_meta)]);
	sbuf_free(&b);
	ASSERT_EQ(0, read_live(&buffers1, &imports1));
	EXPECT_EQ(buffers0, buffers1);
}

TEST_HARNESS_MAIN

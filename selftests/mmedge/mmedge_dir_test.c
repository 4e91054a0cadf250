// SPDX-License-Identifier: GPL-2.0
/*
 * kselftests for mmedge channel directions other than capture:
 * MMEDGE_CHAN_FEED (memory to device) and MMEDGE_CHAN_COPY (memory to
 * memory).
 *
 *  1. Creating feed and copy channels: no source, no overrun policy,
 *     frame_size and meta_offset 0, default names "feedN" / "copyN".
 *  2. Feed: the virtual sink's CRC-32 equals the one computed here over
 *     the user's bytes; sequence, cookie, bytesused, timestamps; the
 *     buffer is not written; the out-fence signals; stats count the
 *     bytes.
 *  3. Copy: the destination equals the source, the in-band record
 *     follows the data at ALIGN(bytesused, 64) and equals the dequeue.
 *  4. Bad input, one field at a time, for feed, copy and capture.
 *  5. Destroying a channel with jobs queued: fences signal with an
 *     error, nothing is dequeued. Implicit fences: a feed's buffer and a
 *     copy's source get a read fence, a copy's destination a write
 *     fence.
 *  6. A feed and a copy channel, saturated on a slow bus, share it by
 *     weight.
 *
 * Needs mmedge.ko loaded with a virtual instance (/dev/mmedge0) that has
 * MMEDGE_CAP_CHANNELS; skips otherwise. Tests that change the bus model
 * need root (CAP_SYS_ADMIN).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <linux/dma-buf.h>
#include <linux/sync_file.h>
#include <linux/mmedge.h>

#include "../kselftest_harness.h"
#include "mmedge_util.h"

#define NSEC_PER_SEC	1000000000ULL
#define NSEC_PER_MSEC	1000000ULL
#define META_SIZE	sizeof(struct mmedge_frame_meta)
#define ALIGN64(x)	(((x) + 63) & ~(uint64_t)63)

/* The zlib / IEEE 802.3 CRC-32: crc32(0, buf, len) of zlib. */
static uint32_t crc32_ieee(const uint8_t *p, size_t len)
{
	uint32_t crc = ~0U;
	size_t i;
	int k;

	for (i = 0; i < len; i++) {
		crc ^= p[i];
		for (k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xedb88320U & -(crc & 1));
	}
	return ~crc;
}

/* A pattern that differs per byte and per @seed. */
static void pattern(uint8_t *p, size_t len, uint32_t seed)
{
	uint32_t x = seed * 2654435761U + 1;
	size_t i;

	for (i = 0; i < len; i++) {
		x = x * 1103515245U + 12345U;
		p[i] = x >> 24;
	}
}

static int chan_make(int fd, __u32 dir, __u32 weight,
		     struct mmedge_chan_create *out)
{
	struct mmedge_chan_create c;
	int ret;

	memset(&c, 0, sizeof(c));
	c.dir = dir;
	c.weight = weight;
	ret = xioctl(fd, MMEDGE_IOC_CHAN_CREATE, &c);
	if (out)
		*out = c;
	return ret ? ret : (int)c.id;
}

/* Queues a job; @src < 0 means no MMEDGE_QBUF_SRC. */
static int qjob(int fd, __u32 chan, int dst, int src, __u32 bytesused,
		__u32 flags, __u64 cookie, int *fence_fd)
{
	struct mmedge_qbuf q = {
		.chan = chan, .fd = dst, .flags = flags, .cookie = cookie,
		.bytesused = bytesused,
	};
	int ret;

	if (src >= 0) {
		q.flags |= MMEDGE_QBUF_SRC;
		q.src_fd = src;
	}
	ret = xioctl(fd, MMEDGE_IOC_QBUF, &q);
	if (fence_fd)
		*fence_fd = ret ? -1 : q.fence_fd;
	return ret;
}

/* Fills @b with pattern @seed inside a CPU-write bracket. */
static int sbuf_fill(struct sbuf *b, uint32_t seed)
{
	int ret = dmabuf_sync(b->fd, DMA_BUF_SYNC_START | DMA_BUF_SYNC_WRITE);

	if (ret)
		return ret;
	pattern(b->map, b->size, seed);
	return dmabuf_sync(b->fd, DMA_BUF_SYNC_END | DMA_BUF_SYNC_WRITE);
}

/* 1 signalled, 0 active, < 0 signalled with that error; or -errno. */
static int fence_status(int fence_fd)
{
	struct sync_file_info info;
	int ret;

	memset(&info, 0, sizeof(info));
	ret = xioctl(fence_fd, SYNC_IOC_FILE_INFO, &info);
	return ret ? ret : info.status;
}

static int fence_wait(int fence_fd, int ms)
{
	struct pollfd p = { .fd = fence_fd, .events = POLLIN };

	return poll(&p, 1, ms);
}

/* The stamps of a feed or copy job: start before end, clocks agree. */
static int check_ts(const struct mmedge_timestamps *ts, uint64_t t_before,
		    uint64_t t_after, const char **why)
{
	if (!ts->sof_raw || ts->sof_raw > ts->eof_raw) {
		*why = "raw: start of frame 0 or after end of frame";
		return -1;
	}
	if (ts->sof_mono > ts->eof_mono) {
		*why = "mono: start of frame after end of frame";
		return -1;
	}
	/* 1 ms slack: the counter conversion is anchored once a second. */
	if (ts->sof_mono + NSEC_PER_MSEC < t_before ||
	    ts->eof_mono > t_after + NSEC_PER_MSEC) {
		*why = "mono stamps outside the queue..dequeue window";
		return -1;
	}
	if (ts->sof_boot < ts->sof_mono ||
	    ts->sof_boot - ts->sof_mono != ts->eof_boot - ts->eof_mono) {
		*why = "boot stamps not mono + one offset";
		return -1;
	}
	return 0;
}

static int check_meta(const struct mmedge_frame_meta *m, __u32 chan,
		      const struct mmedge_dqbuf *d, const char **why)
{
	if (m->magic != MMEDGE_META_MAGIC || m->version != MMEDGE_META_VERSION ||
	    m->size != META_SIZE) {
		*why = "magic, version or size";
		return -1;
	}
	if (m->chan != chan || m->flags != d->frame_flags ||
	    m->sequence != d->sequence || m->bytesused != d->bytesused ||
	    m->dropped != d->dropped) {
		*why = "chan, flags, sequence, bytesused or dropped";
		return -1;
	}
	if (memcmp(&m->ts, &d->ts, sizeof(m->ts))) {
		*why = "timestamps differ from the dequeue";
		return -1;
	}
	return 0;
}

/*
 * Fixture: one open /dev/mmedge0; the bus bandwidth as found, put back by
 * the teardown if a test changed it.
 */
FIXTURE(dir) {
	int fd;
	__u64 bus_orig;
	int bus_changed;
};

FIXTURE_SETUP(dir)
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

FIXTURE_TEARDOWN(dir)
{
	if (self->fd < 0)
		return;
	if (self->bus_changed)
		EXPECT_EQ(0, bus_set(self->fd, self->bus_orig));
	close(self->fd);
}

/* 1. Creation. */
TEST_F(dir, create)
{
	struct mmedge_chan_create c;
	int feed, copy;

	feed = chan_make(self->fd, MMEDGE_CHAN_FEED, 0, &c);
	ASSERT_LT(0, feed);
	EXPECT_EQ(0, c.frame_size);
	EXPECT_EQ(0, c.meta_offset);
	EXPECT_EQ(MMEDGE_WEIGHT_DEFAULT, c.weight);
	EXPECT_EQ(0, strncmp((char *)c.name, "feed", 4));
	copy = chan_make(self->fd, MMEDGE_CHAN_COPY, 0, &c);
	ASSERT_LT(0, copy);
	EXPECT_EQ(0, c.frame_size);
	EXPECT_EQ(0, c.meta_offset);
	EXPECT_EQ(0, strncmp((char *)c.name, "copy", 4));

	/* Unknown direction; a source or an overrun policy on feed/copy. */
	EXPECT_EQ(-EINVAL, chan_make(self->fd, MMEDGE_CHAN_COPY + 1, 0, NULL));
	memset(&c, 0, sizeof(c));
	c.dir = MMEDGE_CHAN_FEED;
	c.src.type = MMEDGE_SRC_CAMERA;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_CHAN_CREATE, &c));
	memset(&c, 0, sizeof(c));
	c.dir = MMEDGE_CHAN_COPY;
	c.src.rate_den = 1;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_CHAN_CREATE, &c));
	memset(&c, 0, sizeof(c));
	c.dir = MMEDGE_CHAN_FEED;
	c.overrun = MMEDGE_OVERRUN_DROP_OLDEST;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_CHAN_CREATE, &c));
	/* Capture still needs a source. */
	EXPECT_EQ(-EINVAL, chan_make(self->fd, MMEDGE_CHAN_CAPTURE, 0, NULL));

	EXPECT_EQ(0, chan_destroy(self->fd, feed));
	EXPECT_EQ(0, chan_destroy(self->fd, copy));
}

#define NJOBS	4

/* 2. Feed: the sink saw exactly the user's bytes. */
TEST_F(dir, feed_checksum)
{
	/* Odd lengths: not a multiple of 64 nor of the segment. */
	static const size_t used[NJOBS] = { 1, 4097, 100003, 262144 };
	struct mmedge_chan_stats st;
	struct mmedge_dqbuf d;
	struct sbuf b[NJOBS];
	uint32_t crc[NJOBS];
	int id, i, fence[NJOBS];
	uint64_t t0, t1, bytes = 0;
	const char *why;

	id = chan_make(self->fd, MMEDGE_CHAN_FEED, 0, NULL);
	ASSERT_LT(0, id);
	for (i = 0; i < NJOBS; i++) {
		ASSERT_EQ(0, sbuf_alloc(self->fd, used[i], &b[i]));
		ASSERT_EQ(0, sbuf_fill(&b[i], i + 1));
		crc[i] = crc32_ieee(b[i].map, used[i]);
		bytes += used[i];
	}
	/* The checksum is zlib's crc32(). */
	ASSERT_EQ(0xcbf43926U, crc32_ieee((const uint8_t *)"123456789", 9));

	t0 = now_ns();
	for (i = 0; i < NJOBS; i++)
		ASSERT_EQ(0, qjob(self->fd, id, b[i].fd, -1, used[i],
				  MMEDGE_QBUF_FENCE, 100 + i, &fence[i]));
	for (i = 0; i < NJOBS; i++) {
		ASSERT_EQ(0, dqbuf(self->fd, id, 0, 5000, &d));
		t1 = now_ns();
		EXPECT_EQ(100 + i, d.cookie);
		EXPECT_EQ(i, d.sequence);
		EXPECT_EQ(used[i], d.bytesused);
		EXPECT_EQ(0, d.frame_flags);
		EXPECT_EQ(0, d.dropped);
		EXPECT_EQ(crc[i], d.checksum) {
			TH_LOG("job %d: sink crc %08x, user crc %08x", i,
			       d.checksum, crc[i]);
		}
		EXPECT_EQ(0, check_ts(&d.ts, t0, t1, &why)) {
			TH_LOG("job %d: %s", i, why);
		}
		EXPECT_EQ(1, fence_status(fence[i]));
		close(fence[i]);
		/* The device only read the buffer: it is unchanged, no record. */
		ASSERT_EQ(0, dmabuf_sync(b[i].fd, DMA_BUF_SYNC_START |
					 DMA_BUF_SYNC_READ));
		EXPECT_EQ(crc[i], crc32_ieee(b[i].map, used[i]));
		if (b[i].size >= ALIGN64(used[i]) + 8) {
			uint64_t magic;

			memcpy(&magic, b[i].map + ALIGN64(used[i]), 8);
			EXPECT_NE(MMEDGE_META_MAGIC, magic);
		}
		ASSERT_EQ(0, dmabuf_sync(b[i].fd, DMA_BUF_SYNC_END |
					 DMA_BUF_SYNC_READ));
	}
	ASSERT_EQ(0, chan_stats(self->fd, id, &st));
	EXPECT_EQ(bytes, st.bytes);
	EXPECT_EQ(NJOBS, st.frames);
	EXPECT_EQ(0, st.errors);
	EXPECT_EQ(0, st.dropped);

	/* A buffer may be fed again once dequeued: same bytes, same crc. */
	ASSERT_EQ(0, qjob(self->fd, id, b[2].fd, -1, used[2], 0, 7, NULL));
	ASSERT_EQ(0, dqbuf(self->fd, id, 0, 5000, &d));
	EXPECT_EQ(NJOBS, d.sequence);
	EXPECT_EQ(crc[2], d.checksum);
	EXPECT_EQ(0, chan_destroy(self->fd, id));
	for (i = 0; i < NJOBS; i++)
		sbuf_free(&b[i]);
}

/* 3. Copy: destination equals source, record after the data. */
TEST_F(dir, copy_data)
{
	static const size_t used[NJOBS] = { 1, 4096, 65537, 300001 };
	struct sbuf src[NJOBS], dst[NJOBS];
	struct mmedge_chan_stats st;
	struct mmedge_dqbuf d;
	uint64_t t0, t1, bytes = 0;
	int id, i, fence[NJOBS];
	const char *why;

	id = chan_make(self->fd, MMEDGE_CHAN_COPY, 0, NULL);
	ASSERT_LT(0, id);
	for (i = 0; i < NJOBS; i++) {
		ASSERT_EQ(0, sbuf_alloc(self->fd, used[i], &src[i]));
		ASSERT_EQ(0, sbuf_fill(&src[i], 10 + i));
		ASSERT_EQ(0, sbuf_alloc(self->fd, ALIGN64(used[i]) + META_SIZE,
					&dst[i]));
		ASSERT_EQ(0, sbuf_fill(&dst[i], 20 + i));
		bytes += used[i];
	}
	t0 = now_ns();
	for (i = 0; i < NJOBS; i++)
		ASSERT_EQ(0, qjob(self->fd, id, dst[i].fd, src[i].fd, used[i],
				  MMEDGE_QBUF_FENCE, 200 + i, &fence[i]));
	for (i = 0; i < NJOBS; i++) {
		const struct mmedge_frame_meta *m;

		ASSERT_EQ(0, dqbuf(self->fd, id, 0, 5000, &d));
		t1 = now_ns();
		EXPECT_EQ(200 + i, d.cookie);
		EXPECT_EQ(i, d.sequence);
		EXPECT_EQ(used[i], d.bytesused);
		EXPECT_EQ(0, d.frame_flags);
		EXPECT_EQ(0, d.checksum);
		EXPECT_EQ(0, check_ts(&d.ts, t0, t1, &why)) {
			TH_LOG("job %d: %s", i, why);
		}
		EXPECT_EQ(1, fence_status(fence[i]));
		close(fence[i]);
		ASSERT_EQ(0, dmabuf_sync(dst[i].fd, DMA_BUF_SYNC_START |
					 DMA_BUF_SYNC_READ));
		EXPECT_EQ(0, memcmp(dst[i].map, src[i].map, used[i])) {
			TH_LOG("job %d: destination differs from source", i);
		}
		m = (const void *)(dst[i].map + ALIGN64(used[i]));
		EXPECT_EQ(0, check_meta(m, id, &d, &why)) {
			TH_LOG("job %d: in-band record: %s", i, why);
		}
		ASSERT_EQ(0, dmabuf_sync(dst[i].fd, DMA_BUF_SYNC_END |
					 DMA_BUF_SYNC_READ));
	}
	ASSERT_EQ(0, chan_stats(self->fd, id, &st));
	EXPECT_EQ(bytes, st.bytes);
	EXPECT_EQ(NJOBS, st.frames);

	/* Back the other way: a buffer can be a source, then a destination. */
	ASSERT_EQ(0, qjob(self->fd, id, src[3].fd, dst[3].fd, 4096, 0, 9,
			  NULL));
	ASSERT_EQ(0, dqbuf(self->fd, id, 0, 5000, &d));
	EXPECT_EQ(9, d.cookie);
	EXPECT_EQ(0, memcmp(src[3].map, dst[3].map, 4096));
	EXPECT_EQ(0, chan_destroy(self->fd, id));
	for (i = 0; i < NJOBS; i++) {
		sbuf_free(&src[i]);
		sbuf_free(&dst[i]);
	}
}

/* 4. Bad input, one field at a time. */
TEST_F(dir, feed_bad)
{
	struct mmedge_qbuf q;
	struct sbuf b, other;
	int id;

	id = chan_make(self->fd, MMEDGE_CHAN_FEED, 0, NULL);
	ASSERT_LT(0, id);
	ASSERT_EQ(0, sbuf_alloc(self->fd, 8192, &b));
	ASSERT_EQ(0, sbuf_alloc(self->fd, 8192, &other));

	EXPECT_EQ(-EINVAL, qjob(self->fd, id, b.fd, -1, 0, 0, 0, NULL));
	EXPECT_EQ(-EINVAL, qjob(self->fd, id, b.fd, -1, b.size + 1, 0, 0,
				NULL));
	EXPECT_EQ(-EINVAL, qjob(self->fd, id, b.fd, other.fd, 64, 0, 0, NULL));
	memset(&q, 0, sizeof(q));
	q.chan = id;
	q.fd = b.fd;
	q.bytesused = 64;
	q.src_fd = other.fd;	/* without MMEDGE_QBUF_SRC */
	EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_QBUF, &q));
	q.src_fd = 0;
	q.reserved = 1;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_QBUF, &q));
	EXPECT_EQ(-EBADF, qjob(self->fd, id, 1000, -1, 64, 0, 0, NULL));
	EXPECT_EQ(-EINVAL, qjob(self->fd, id, self->fd, -1, 64, 0, 0, NULL));
	EXPECT_EQ(-ENOENT, qjob(self->fd, 999, b.fd, -1, 64, 0, 0, NULL));

	/* The whole buffer is fine; twice is not. */
	ASSERT_EQ(0, qjob(self->fd, id, b.fd, -1, b.size, 0, 0, NULL));
	EXPECT_EQ(-EBUSY, qjob(self->fd, id, b.fd, -1, b.size, 0, 0, NULL));

	EXPECT_EQ(0, chan_destroy(self->fd, id));
	sbuf_free(&other);
	sbuf_free(&b);
}

TEST_F(dir, copy_bad)
{
	/* The longest copy a page holds with its record: 3968 bytes. */
	const __u32 fit = (4096 - META_SIZE) & ~63U;
	struct sbuf s, d, small, s2;
	struct mmedge_dqbuf dq;
	int id;

	id = chan_make(self->fd, MMEDGE_CHAN_COPY, 0, NULL);
	ASSERT_LT(0, id);
	ASSERT_EQ(0, sbuf_alloc(self->fd, 8192, &s));
	ASSERT_EQ(0, sbuf_alloc(self->fd, 8192, &s2));
	ASSERT_EQ(0, sbuf_alloc(self->fd, 3 * 4096, &d));
	ASSERT_EQ(0, sbuf_alloc(self->fd, 4096, &small));

	/* Missing source; no length; longer than the source. */
	EXPECT_EQ(-EINVAL, qjob(self->fd, id, d.fd, -1, 64, 0, 0, NULL));
	EXPECT_EQ(-EINVAL, qjob(self->fd, id, d.fd, s.fd, 0, 0, 0, NULL));
	EXPECT_EQ(-EINVAL, qjob(self->fd, id, d.fd, s.fd, s.size + 1, 0, 0,
				NULL));
	/* The source is the destination. */
	EXPECT_EQ(-EINVAL, qjob(self->fd, id, d.fd, d.fd, 64, 0, 0, NULL));
	/* The source is not a dma-buf, or not open. */
	EXPECT_EQ(-EINVAL, qjob(self->fd, id, d.fd, self->fd, 64, 0, 0, NULL));
	EXPECT_EQ(-EBADF, qjob(self->fd, id, d.fd, 1000, 64, 0, 0, NULL));
	/* No room for the record after the data (at a 64-byte boundary). */
	EXPECT_EQ(-ENOSPC, qjob(self->fd, id, small.fd, s.fd, 4096, 0, 0,
				NULL));
	EXPECT_EQ(-ENOSPC, qjob(self->fd, id, small.fd, s.fd, fit + 1, 0, 0,
				NULL));
	/* Exactly enough room. */
	ASSERT_EQ(0, qjob(self->fd, id, small.fd, s.fd, fit, 0, 0, NULL));
	/* The source and the destination are held until dequeued. */
	EXPECT_EQ(-EBUSY, qjob(self->fd, id, d.fd, s.fd, 64, 0, 0, NULL));
	EXPECT_EQ(-EBUSY, qjob(self->fd, id, s.fd, s2.fd, 64, 0, 0, NULL));
	EXPECT_EQ(-EBUSY, qjob(self->fd, id, d.fd, small.fd, 64, 0, 0, NULL));
	ASSERT_EQ(0, dqbuf(self->fd, id, 0, 5000, &dq));
	EXPECT_EQ(fit, dq.bytesused);
	EXPECT_EQ(0, qjob(self->fd, id, d.fd, s.fd, 64, 0, 0, NULL));

	EXPECT_EQ(0, chan_destroy(self->fd, id));
	sbuf_free(&small);
	sbuf_free(&d);
	sbuf_free(&s2);
	sbuf_free(&s);
}

/* Capture channels take neither a length nor a source. */
TEST_F(dir, capture_rejects_job_fields)
{
	struct mmedge_chan_create c;
	struct sbuf b, s;
	int id;

	memset(&c, 0, sizeof(c));
	c.dir = MMEDGE_CHAN_CAPTURE;
	c.src.type = MMEDGE_SRC_CAMERA;
	c.src.fourcc = MMEDGE_FMT_GREY;
	c.src.width = 64;
	c.src.height = 16;
	c.src.rate_num = 30;
	c.src.rate_den = 1;
	ASSERT_EQ(0, xioctl(self->fd, MMEDGE_IOC_CHAN_CREATE, &c));
	id = c.id;
	ASSERT_EQ(0, sbuf_alloc(self->fd, 8192, &b));
	ASSERT_EQ(0, sbuf_alloc(self->fd, 8192, &s));
	EXPECT_EQ(-EINVAL, qjob(self->fd, id, b.fd, -1, 64, 0, 0, NULL));
	EXPECT_EQ(-EINVAL, qjob(self->fd, id, b.fd, s.fd, 0, 0, 0, NULL));
	EXPECT_EQ(0, qjob(self->fd, id, b.fd, -1, 0, 0, 0, NULL));
	EXPECT_EQ(0, chan_destroy(self->fd, id));
	sbuf_free(&s);
	sbuf_free(&b);
}

/* 5. Destroy with jobs queued: fences signal with an error. */
TEST_F_TIMEOUT(dir, destroy_busy, 30)
{
	struct sbuf src[NJOBS], dst[NJOBS], fb[NJOBS];
	int copy, feed, i, fc[NJOBS], ff[NJOBS];
	struct mmedge_dqbuf d;
	size_t len = 256 * 1024;

	/* 1 MB/s: a 256 KiB job takes a quarter of a second. */
	SET_BUS(1000000);
	copy = chan_make(self->fd, MMEDGE_CHAN_COPY, 0, NULL);
	ASSERT_LT(0, copy);
	feed = chan_make(self->fd, MMEDGE_CHAN_FEED, 0, NULL);
	ASSERT_LT(0, feed);
	for (i = 0; i < NJOBS; i++) {
		ASSERT_EQ(0, sbuf_alloc(self->fd, len, &src[i]));
		ASSERT_EQ(0, sbuf_alloc(self->fd, len + 4096, &dst[i]));
		ASSERT_EQ(0, sbuf_alloc(self->fd, len, &fb[i]));
		ASSERT_EQ(0, qjob(self->fd, copy, dst[i].fd, src[i].fd, len,
				  MMEDGE_QBUF_FENCE, i, &fc[i]));
		ASSERT_EQ(0, qjob(self->fd, feed, fb[i].fd, -1, len,
				  MMEDGE_QBUF_FENCE, i, &ff[i]));
	}
	EXPECT_EQ(0, chan_destroy(self->fd, copy));
	EXPECT_EQ(0, chan_destroy(self->fd, feed));
	for (i = 0; i < NJOBS; i++) {
		EXPECT_EQ(1, fence_wait(fc[i], 1000));
		EXPECT_EQ(1, fence_wait(ff[i], 1000));
		/* The last jobs cannot have finished in the time. */
		if (i == NJOBS - 1) {
			EXPECT_EQ(-ECANCELED, fence_status(fc[i]));
			EXPECT_EQ(-ECANCELED, fence_status(ff[i]));
		} else {
			EXPECT_NE(0, fence_status(fc[i]));
			EXPECT_NE(0, fence_status(ff[i]));
		}
		close(fc[i]);
		close(ff[i]);
	}
	EXPECT_EQ(-ENOENT, dqbuf(self->fd, copy, MMEDGE_DQBUF_NONBLOCK, 0, &d));
	EXPECT_EQ(-ENOENT, dqbuf(self->fd, feed, MMEDGE_DQBUF_NONBLOCK, 0, &d));
	/* Freed: each buffer can be queued again elsewhere. */
	copy = chan_make(self->fd, MMEDGE_CHAN_COPY, 0, NULL);
	ASSERT_LT(0, copy);
	for (i = 0; i < NJOBS; i++)
		EXPECT_EQ(0, qjob(self->fd, copy, src[i].fd, fb[i].fd, 64, 0,
				  0, NULL));
	EXPECT_EQ(0, chan_destroy(self->fd, copy));
	for (i = 0; i < NJOBS; i++) {
		sbuf_free(&src[i]);
		sbuf_free(&dst[i]);
		sbuf_free(&fb[i]);
	}
}

/* Make the engine thread sleep @ms at its next round (root only). */
static int stall_engine_ms(unsigned int ms)
{
	FILE *f = fopen("/sys/module/mmedge/parameters/inject_stall_ms", "w");
	int ret;

	if (!f)
		return -errno;
	ret = fprintf(f, "%u\n", ms) < 0 ? -EIO : 0;
	if (fclose(f))
		ret = -errno;
	return ret;
}

/*
 * Implicit fences: a feed only reads its buffer (a read fence: writers
 * wait, readers do not); a copy writes its destination (a write fence)
 * and reads its source (a read fence).
 */
TEST_F_TIMEOUT(dir, implicit_fences, 30)
{
	struct sbuf fb, src, dst;
	size_t len = 512 * 1024;
	struct mmedge_dqbuf d;
	int feed, copy, f;

	/* 1 MB/s: each job takes half a second. */
	SET_BUS(1000000);
	/*
	 * A DMA controller (the dmaengine back end) ignores the modelled
	 * bus and would finish both jobs before the fences are looked at:
	 * hold the engine thread for a while first (fault injection), so
	 * the jobs are queued but not moved during the checks below.
	 */
	if (!stall_engine_ms(1500))
		usleep(250 * 1000);	/* the engine is in the stall */
	feed = chan_make(self->fd, MMEDGE_CHAN_FEED, 0, NULL);
	ASSERT_LT(0, feed);
	copy = chan_make(self->fd, MMEDGE_CHAN_COPY, 0, NULL);
	ASSERT_LT(0, copy);
	ASSERT_EQ(0, sbuf_alloc(self->fd, len, &fb));
	ASSERT_EQ(0, sbuf_alloc(self->fd, len, &src));
	ASSERT_EQ(0, sbuf_alloc(self->fd, len + 4096, &dst));
	ASSERT_EQ(0, qjob(self->fd, feed, fb.fd, -1, len, 0, 0, NULL));
	ASSERT_EQ(0, qjob(self->fd, copy, dst.fd, src.fd, len, 0, 0, NULL));

	f = export_fence(fb.fd, DMA_BUF_SYNC_WRITE);
	if (f == -ENOTTY)
		SKIP(return, "no DMA_BUF_IOCTL_EXPORT_SYNC_FILE");
	ASSERT_LE(0, f);
	EXPECT_EQ(0, fence_status(f));
	close(f);
	f = export_fence(fb.fd, DMA_BUF_SYNC_READ);
	ASSERT_LE(0, f);
	EXPECT_EQ(1, fence_status(f));
	close(f);

	f = export_fence(dst.fd, DMA_BUF_SYNC_READ);
	ASSERT_LE(0, f);
	EXPECT_EQ(0, fence_status(f));
	close(f);
	f = export_fence(src.fd, DMA_BUF_SYNC_WRITE);
	ASSERT_LE(0, f);
	EXPECT_EQ(0, fence_status(f));
	close(f);
	f = export_fence(src.fd, DMA_BUF_SYNC_READ);
	ASSERT_LE(0, f);
	EXPECT_EQ(1, fence_status(f));
	close(f);
	/* The wait ends when the copy is done. */
	f = export_fence(src.fd, DMA_BUF_SYNC_WRITE);
	ASSERT_LE(0, f);
	EXPECT_EQ(1, fence_wait(f, 10000));
	EXPECT_EQ(1, fence_status(f));
	close(f);
	ASSERT_EQ(0, dqbuf(self->fd, copy, 0, 5000, &d));
	ASSERT_EQ(0, dqbuf(self->fd, feed, 0, 5000, &d));

	EXPECT_EQ(0, chan_destroy(self->fd, feed));
	EXPECT_EQ(0, chan_destroy(self->fd, copy));
	sbuf_free(&fb);
	sbuf_free(&src);
	sbuf_free(&dst);
}

/* 6. Feed and copy share a saturated bus by weight, 2:1. */
#define SHARE_BUS	10000000ULL	/* 10 MB/s */
#define SHARE_JOB	(128 * 1024)
#define SHARE_Q		3

TEST_F_TIMEOUT(dir, weighted_share, 60)
{
	struct sbuf fb[SHARE_Q], src[SHARE_Q], dst[SHARE_Q];
	struct mmedge_chan_stats s0f, s0c, s1f, s1c;
	int feed, copy, i, warm = 1;
	uint64_t end, df, dc;
	double share;

	SET_BUS(SHARE_BUS);
	feed = chan_make(self->fd, MMEDGE_CHAN_FEED, 100, NULL);
	ASSERT_LT(0, feed);
	copy = chan_make(self->fd, MMEDGE_CHAN_COPY, 50, NULL);
	ASSERT_LT(0, copy);
	for (i = 0; i < SHARE_Q; i++) {
		ASSERT_EQ(0, sbuf_alloc(self->fd, SHARE_JOB, &fb[i]));
		ASSERT_EQ(0, sbuf_alloc(self->fd, SHARE_JOB, &src[i]));
		ASSERT_EQ(0, sbuf_alloc(self->fd, SHARE_JOB + 4096, &dst[i]));
		ASSERT_EQ(0, qjob(self->fd, feed, fb[i].fd, -1, SHARE_JOB, 0,
				  i, NULL));
		ASSERT_EQ(0, qjob(self->fd, copy, dst[i].fd, src[i].fd,
				  SHARE_JOB, 0, i, NULL));
	}
	/* Keep both saturated: requeue whatever finishes; measure 3 s. */
	end = now_ns() + 500 * NSEC_PER_MSEC;
	for (;;) {
		struct mmedge_dqbuf d;

		while (!dqbuf(self->fd, feed, MMEDGE_DQBUF_NONBLOCK, 0, &d))
			ASSERT_EQ(0, qjob(self->fd, feed, fb[d.cookie].fd, -1,
					  SHARE_JOB, 0, d.cookie, NULL));
		while (!dqbuf(self->fd, copy, MMEDGE_DQBUF_NONBLOCK, 0, &d))
			ASSERT_EQ(0, qjob(self->fd, copy, dst[d.cookie].fd,
					  src[d.cookie].fd, SHARE_JOB, 0,
					  d.cookie, NULL));
		if (now_ns() >= end) {
			if (!warm)
				break;
			warm = 0;
			ASSERT_EQ(0, chan_stats(self->fd, feed, &s0f));
			ASSERT_EQ(0, chan_stats(self->fd, copy, &s0c));
			end = now_ns() + 3 * NSEC_PER_SEC;
		}
		usleep(2000);
	}
	ASSERT_EQ(0, chan_stats(self->fd, feed, &s1f));
	ASSERT_EQ(0, chan_stats(self->fd, copy, &s1c));
	df = s1f.bytes - s0f.bytes;
	dc = s1c.bytes - s0c.bytes;
	ASSERT_LT(0, df + dc);
	share = (double)df / (df + dc);
	TH_LOG("feed %llu B, copy %llu B: feed share %.3f (want 0.667)",
	       (unsigned long long)df, (unsigned long long)dc, share);
	EXPECT_LT(0.617, share);
	EXPECT_GT(0.717, share);

	EXPECT_EQ(0, chan_destroy(self->fd, feed));
	EXPECT_EQ(0, chan_destroy(self->fd, copy));
	for (i = 0; i < SHARE_Q; i++) {
		sbuf_free(&fb[i]);
		sbuf_free(&src[i]);
		sbuf_free(&dst[i]);
	}
}

TEST_HARNESS_MAIN

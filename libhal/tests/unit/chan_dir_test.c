// SPDX-License-Identifier: MIT
/*
 * Host tests of feed and copy channels without an mmedge device: what
 * the HAL refuses before asking the driver, and what it asks. The binary
 * is linked with --wrap=mmhal_ioctl, so every ioctl the library issues on
 * the device handle's fd reaches __wrap_mmhal_ioctl() below, a fake
 * driver that records the argument struct and answers as the driver
 * would (an id, a cookie back, a checksum); ioctls on other fds (the
 * memfd buffers' DMA_BUF_IOCTL_SYNC) go to the real mmhal_ioctl().
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "device/mmhal_internal.h"
#include "tests/tap.h"

#define POISON		((void *)0x5a5a5a5aUL)
#define FAKE_ID		7
#define FAKE_FENCE	99	/* a fence fd the fake hands out (never closed) */

int __real_mmhal_ioctl(int fd, unsigned long req, void *arg);
int __wrap_mmhal_ioctl(int fd, unsigned long req, void *arg);

static int pipe_fds[2] = { -1, -1 };
static struct mmhal_dev *pdev;	/* wraps pipe_fds[0]: the fake's fd */

/* What the fake saw: the last call of each kind, and a count of all. */
static unsigned int n_calls;
static struct mmedge_chan_create seen_create;
static struct mmedge_chan_destroy seen_destroy;
static struct mmedge_qbuf seen_qbuf;
static struct mmedge_dqbuf seen_dqbuf;
static unsigned int n_destroy;

/* How it answers. */
static uint32_t reply_frame_size, reply_meta_offset;
static uint64_t reply_sequence;
static uint32_t reply_checksum;
static uint64_t pending_cookie;		/* the last QBUF's, given back */
static uint64_t pending_bytes;

int __wrap_mmhal_ioctl(int fd, unsigned long req, void *arg)
{
	if (fd != pipe_fds[0])
		return __real_mmhal_ioctl(fd, req, arg);
	n_calls++;
	switch (req) {
	case MMEDGE_IOC_CHAN_CREATE:
		memcpy(&seen_create, arg, sizeof(seen_create));
		((struct mmedge_chan_create *)arg)->id = FAKE_ID;
		((struct mmedge_chan_create *)arg)->frame_size = reply_frame_size;
		((struct mmedge_chan_create *)arg)->meta_offset = reply_meta_offset;
		return 0;
	case MMEDGE_IOC_CHAN_DESTROY:
		memcpy(&seen_destroy, arg, sizeof(seen_destroy));
		n_destroy++;
		return 0;
	case MMEDGE_IOC_QBUF: {
		struct mmedge_qbuf *q = arg;

		memcpy(&seen_qbuf, q, sizeof(seen_qbuf));
		pending_cookie = q->cookie;
		pending_bytes = q->bytesused;
		q->fence_fd = q->flags & MMEDGE_QBUF_FENCE ? FAKE_FENCE : -1;
		return 0;
	}
	case MMEDGE_IOC_DQBUF: {
		struct mmedge_dqbuf *d = arg;

		memcpy(&seen_dqbuf, d, sizeof(seen_dqbuf));
		d->cookie = pending_cookie;
		d->sequence = reply_sequence;
		d->bytesused = pending_bytes;
		d->checksum = reply_checksum;
		d->ts.sof_mono = 1000;
		d->ts.eof_mono = 2000;
		return 0;
	}
	default:
		return -ENOTTY;
	}
}

static void setup(void)
{
	if (pipe(pipe_fds) < 0)
		BAIL_OUT("pipe failed");
	CHECK_INT(mmhal_dev_wrap(pipe_fds[0], NULL, &pdev), 0);
	if (!pdev)
		BAIL_OUT("mmhal_dev_wrap failed");
}

static struct mmhal_buf *memfd_buf(struct mmhal_dev *dev, uint64_t size)
{
	struct mmhal_buf *buf = NULL;
	int fd = memfd_create("mmhal-test", MFD_CLOEXEC);

	if (fd < 0)
		return NULL;
	if (ftruncate(fd, (off_t)size) < 0 ||
	    mmhal_buf_wrap(dev, fd, size, &buf) < 0) {
		close(fd);
		return NULL;
	}
	return buf;
}

static int all_zero(const void *p, size_t n)
{
	const unsigned char *c = p;
	size_t i;

	for (i = 0; i < n; i++)
		if (c[i])
			return 0;
	return 1;
}

static struct mmhal_chan *make_chan(uint32_t dir)
{
	struct mmhal_chan *chan = NULL;

	reply_frame_size = 0;
	reply_meta_offset = 0;
	CHECK_INT(mmhal_chan_create_dir(pdev, dir, NULL, &chan), 0);
	return chan;
}

static void test_create_encoding(void)
{
	struct mmhal_chan_params p = mmhal_chan_default_params();
	struct mmhal_chan *chan = POISON;
	unsigned int before;

	p.weight = 40;
	p.cap = 123456789;
	p.segment = 8192;
	memset(&seen_create, 0xa5, sizeof(seen_create));
	CHECK_INT(mmhal_chan_create_dir(pdev, MMHAL_CHAN_COPY, &p, &chan), 0);
	CHECK(chan != NULL && chan != POISON);
	CHECK_INT(seen_create.dir, MMEDGE_CHAN_COPY);
	CHECK_INT(seen_create.flags, 0);
	CHECK(all_zero(&seen_create.src, sizeof(seen_create.src)));
	CHECK_INT(seen_create.weight, 40);
	CHECK_INT(seen_create.class, MMEDGE_CLASS_BEST_EFFORT);
	CHECK_INT(seen_create.cap, 123456789);
	CHECK_INT(seen_create.segment, 8192);
	CHECK_INT(seen_create.overrun, 0);
	CHECK_INT(seen_create.sensor_offset_ns, 0);
	CHECK_INT(seen_create.sensor_drift_ppb, 0);
	CHECK_INT(seen_create.sensor_pad, 0);
	CHECK(all_zero(seen_create.name, sizeof(seen_create.name)));
	CHECK(all_zero(seen_create.reserved, sizeof(seen_create.reserved)));
	CHECK_INT(mmhal_chan_id(chan), FAKE_ID);
	CHECK_INT(mmhal_chan_dir(chan), MMHAL_CHAN_COPY);
	CHECK_INT(mmhal_chan_frame_size(chan), 0);
	CHECK_INT(mmhal_chan_meta_offset(chan), 0);
	before = n_destroy;
	mmhal_chan_destroy(chan);
	CHECK_INT(n_destroy, before + 1);
	CHECK_INT(seen_destroy.id, FAKE_ID);

	chan = make_chan(MMHAL_CHAN_FEED);
	CHECK_INT(seen_create.dir, MMEDGE_CHAN_FEED);
	CHECK_INT(seen_create.weight, MMHAL_WEIGHT_DEFAULT);
	CHECK_INT(mmhal_chan_dir(chan), MMHAL_CHAN_FEED);
	mmhal_chan_destroy(chan);
	CHECK_INT(mmhal_chan_dir(NULL), -EINVAL);
}

static void test_create_checks_first(void)
{
	struct mmhal_chan_params p = mmhal_chan_default_params();
	struct mmhal_chan *chan = POISON;
	unsigned int before = n_calls;

	CHECK_INT(mmhal_chan_create_dir(pdev, MMHAL_CHAN_FEED, NULL, NULL),
		  -EINVAL);
	CHECK_INT(mmhal_chan_create_dir(NULL, MMHAL_CHAN_FEED, NULL, &chan),
		  -EINVAL);
	CHECK(chan == NULL);
	CHECK_INT(mmhal_chan_create_dir(pdev, MMHAL_CHAN_CAPTURE, NULL, &chan),
		  -EINVAL);
	CHECK_INT(mmhal_chan_create_dir(pdev, 3, NULL, &chan), -EINVAL);
	p.sensor_offset_ns = 1;
	CHECK_INT(mmhal_chan_create_dir(pdev, MMHAL_CHAN_COPY, &p, &chan),
		  -EINVAL);
	p = mmhal_chan_default_params();
	p.sensor_drift_ppb = -1;
	CHECK_INT(mmhal_chan_create_dir(pdev, MMHAL_CHAN_COPY, &p, &chan),
		  -EINVAL);
	p = mmhal_chan_default_params();
	p.overrun = MMHAL_OVERRUN_DROP_OLDEST;
	CHECK_INT(mmhal_chan_create_dir(pdev, MMHAL_CHAN_FEED, &p, &chan),
		  -EINVAL);
	p = mmhal_chan_default_params();
	p.weight = 0;
	CHECK_INT(mmhal_chan_create_dir(pdev, MMHAL_CHAN_FEED, &p, &chan),
		  -EINVAL);
	p = mmhal_chan_default_params();
	p.class = MMHAL_CLASS_LATENCY;	/* without a cap */
	CHECK_INT(mmhal_chan_create_dir(pdev, MMHAL_CHAN_FEED, &p, &chan),
		  -EINVAL);
	p = mmhal_chan_default_params();
	p.reserved[1] = 1;
	CHECK_INT(mmhal_chan_create_dir(pdev, MMHAL_CHAN_FEED, &p, &chan),
		  -EINVAL);
	CHECK(chan == NULL);
	CHECK_INT(n_calls, before);

	/* A driver answering with a capture layout gets its channel back. */
	reply_frame_size = 4096;
	reply_meta_offset = 4096;
	before = n_destroy;
	CHECK_INT(mmhal_chan_create_dir(pdev, MMHAL_CHAN_COPY, NULL, &chan),
		  -EPROTO);
	CHECK(chan == NULL);
	CHECK_INT(n_destroy, before + 1);
	CHECK_INT(seen_destroy.id, FAKE_ID);
	reply_frame_size = 0;
	reply_meta_offset = 0;
}

static void test_feed(void)
{
	struct mmhal_chan *feed = make_chan(MMHAL_CHAN_FEED);
	struct mmhal_chan *copy = make_chan(MMHAL_CHAN_COPY);
	struct mmhal_buf *buf = memfd_buf(pdev, 8192);
	struct mmhal_frame fr;
	unsigned int before;
	int fence = 5;

	if (!feed || !copy || !buf)
		FAIL("setup failed");
	before = n_calls;
	CHECK_INT(mmhal_chan_feed(NULL, buf, 1, 0, &fence), -EINVAL);
	CHECK_INT(fence, -1);
	CHECK_INT(mmhal_chan_feed(feed, NULL, 1, 0, NULL), -EINVAL);
	CHECK_INT(mmhal_chan_feed(feed, buf, 0, 0, NULL), -EINVAL);
	CHECK_INT(mmhal_chan_feed(feed, buf, 8193, 0, NULL), -EINVAL);
	CHECK_INT(mmhal_chan_feed(feed, buf, 1ULL << 32, 0, NULL), -EINVAL);
	CHECK_INT(mmhal_chan_feed(copy, buf, 64, 0, NULL), -EINVAL);
	/* A capture buffer queue is not a job. */
	CHECK_INT(mmhal_chan_queue(feed, buf, 0, NULL), -EINVAL);
	CHECK_INT(n_calls, before);

	memset(&seen_qbuf, 0xa5, sizeof(seen_qbuf));
	CHECK_INT(mmhal_chan_feed(feed, buf, 8192, 0x1234, &fence), 0);
	CHECK_INT(fence, FAKE_FENCE);
	CHECK_INT(seen_qbuf.chan, FAKE_ID);
	CHECK_INT(seen_qbuf.fd, mmhal_buf_fd(buf));
	CHECK_INT(seen_qbuf.flags, MMEDGE_QBUF_FENCE);
	CHECK_INT(seen_qbuf.src_fd, 0);
	CHECK_INT(seen_qbuf.bytesused, 8192);
	CHECK(seen_qbuf.cookie != 0);
	CHECK_INT(seen_qbuf.reserved, 0);
	/* Held until dequeued. */
	before = n_calls;
	CHECK_INT(mmhal_chan_feed(feed, buf, 64, 0, NULL), -EBUSY);
	CHECK_INT(n_calls, before);

	reply_sequence = 3;
	reply_checksum = 0xcbf43926;
	CHECK_INT(mmhal_chan_dequeue(feed, 100, &fr), 0);
	CHECK_INT(seen_dqbuf.chan, FAKE_ID);
	CHECK_INT(seen_dqbuf.timeout_ms, 100);
	CHECK(fr.buf == buf);
	CHECK_INT(fr.cookie, 0x1234);
	CHECK_INT(fr.chan, FAKE_ID);
	CHECK_INT(fr.sequence, 3);
	CHECK_INT(fr.bytesused, 8192);
	CHECK_INT(fr.checksum, 0xcbf43926);
	CHECK_INT(fr.pad, 0);
	CHECK_INT(fr.ts.sof_mono, 1000);
	CHECK_INT(fr.ts.eof_mono, 2000);

	/* Free again: fed once more, without a fence this time. */
	CHECK_INT(mmhal_chan_feed(feed, buf, 1, 7, NULL), 0);
	CHECK_INT(seen_qbuf.flags, 0);
	CHECK_INT(seen_qbuf.bytesused, 1);
	/* Freed while queued: its frame comes back without a buffer. */
	mmhal_buf_free(buf);
	CHECK_INT(mmhal_chan_dequeue(feed, MMHAL_NONBLOCK, &fr), 0);
	CHECK(fr.buf == NULL);
	CHECK_INT(fr.cookie, 7);
	reply_checksum = 0;
	mmhal_chan_destroy(feed);
	mmhal_chan_destroy(copy);
}

/*
 * A buffer freed while queued, after the channel's slot table grew (and
 * moved): its slot forgets it (under ASan a stale pointer into the old
 * table would be a use after free), and its frame comes back without it.
 */
static void test_slots_move(void)
{
	struct mmhal_chan *feed = make_chan(MMHAL_CHAN_FEED);
	struct mmhal_buf *b[9];
	struct mmhal_frame fr;
	int i;

	if (!feed)
		FAIL("setup failed");
	for (i = 0; i < 9; i++) {
		b[i] = memfd_buf(pdev, 4096);
		if (!b[i])
			FAIL("setup failed");
		/* the ninth takes the table past its first 8 slots */
		CHECK_INT(mmhal_chan_feed(feed, b[i], 64, 100 + i, NULL), 0);
	}
	mmhal_buf_free(b[0]);
	pending_cookie = 1;	/* the fake gives back slot 0's frame */
	CHECK_INT(mmhal_chan_dequeue(feed, MMHAL_NONBLOCK, &fr), 0);
	CHECK(fr.buf == NULL);
	CHECK_INT(fr.cookie, 100);
	pending_cookie = 9;	/* slot 8: still there */
	CHECK_INT(mmhal_chan_dequeue(feed, MMHAL_NONBLOCK, &fr), 0);
	CHECK(fr.buf == b[8]);
	CHECK_INT(fr.cookie, 108);
	mmhal_chan_destroy(feed);
	for (i = 1; i < 9; i++)
		mmhal_buf_free(b[i]);
}

static void test_copy(void)
{
	const uint64_t meta = sizeof(struct mmhal_frame_meta);
	struct mmhal_chan *copy = make_chan(MMHAL_CHAN_COPY);
	struct mmhal_chan *feed = make_chan(MMHAL_CHAN_FEED);
	struct mmhal_buf *src = memfd_buf(pdev, 4096);
	struct mmhal_buf *dst = memfd_buf(pdev, 1000 + 24 + meta);
	struct mmhal_buf *small = memfd_buf(pdev, 1024 + meta - 1);
	struct mmhal_buf *other = memfd_buf(pdev, 8192);
	struct mmhal_dev *odev = NULL;
	struct mmhal_buf *foreign = NULL;
	struct mmhal_frame fr;
	unsigned int before;
	int fence = 5;

	CHECK_INT(mmhal_copy_buf_size(0), 0);
	CHECK_INT(mmhal_copy_buf_size(1), 64 + meta);
	CHECK_INT(mmhal_copy_buf_size(64), 64 + meta);
	CHECK_INT(mmhal_copy_buf_size(65), 128 + meta);
	CHECK_INT(mmhal_copy_buf_size(MMHAL_JOB_MAX), (1ULL << 32) + meta);
	CHECK_INT(mmhal_copy_buf_size(MMHAL_JOB_MAX + 1), 0);

	CHECK_INT(mmhal_dev_wrap(dup(pipe_fds[0]), NULL, &odev), 0);
	if (odev)
		foreign = memfd_buf(odev, 4096);
	if (!copy || !feed || !src || !dst || !small || !other || !foreign)
		FAIL("setup failed");

	before = n_calls;
	CHECK_INT(mmhal_chan_copy(NULL, dst, src, 1000, 0, &fence), -EINVAL);
	CHECK_INT(fence, -1);
	CHECK_INT(mmhal_chan_copy(copy, NULL, src, 1000, 0, NULL), -EINVAL);
	CHECK_INT(mmhal_chan_copy(copy, dst, NULL, 1000, 0, NULL), -EINVAL);
	CHECK_INT(mmhal_chan_copy(copy, dst, dst, 64, 0, NULL), -EINVAL);
	CHECK_INT(mmhal_chan_copy(copy, dst, src, 0, 0, NULL), -EINVAL);
	CHECK_INT(mmhal_chan_copy(copy, other, src, 4097, 0, NULL), -EINVAL);
	CHECK_INT(mmhal_chan_copy(copy, dst, foreign, 64, 0, NULL), -EINVAL);
	CHECK_INT(mmhal_chan_copy(copy, foreign, src, 64, 0, NULL), -EINVAL);
	CHECK_INT(mmhal_chan_copy(feed, dst, src, 64, 0, NULL), -EINVAL);
	/* The record goes at ALIGN(1000, 64) = 1024: one byte short. */
	CHECK_INT(mmhal_chan_copy(copy, small, src, 1000, 0, NULL), -ENOSPC);
	CHECK_INT(mmhal_chan_copy(copy, small, src, 961, 0, NULL), -ENOSPC);
	CHECK_INT(n_calls, before);

	/* The longest copy that fits: its record at 960. */
	memset(&seen_qbuf, 0xa5, sizeof(seen_qbuf));
	CHECK_INT(mmhal_chan_copy(copy, small, src, 960, 11, &fence), 0);
	CHECK_INT(fence, FAKE_FENCE);
	CHECK_INT(seen_qbuf.chan, FAKE_ID);
	CHECK_INT(seen_qbuf.fd, mmhal_buf_fd(small));
	CHECK_INT(seen_qbuf.src_fd, mmhal_buf_fd(src));
	CHECK_INT(seen_qbuf.flags, MMEDGE_QBUF_FENCE | MMEDGE_QBUF_SRC);
	CHECK_INT(seen_qbuf.bytesused, 960);
	CHECK_INT(seen_qbuf.reserved, 0);
	/* Source and destination are both held. */
	before = n_calls;
	CHECK_INT(mmhal_chan_copy(copy, dst, src, 64, 0, NULL), -EBUSY);
	CHECK_INT(mmhal_chan_copy(copy, small, other, 64, 0, NULL), -EBUSY);
	CHECK_INT(mmhal_chan_feed(feed, src, 64, 0, NULL), -EBUSY);
	CHECK_INT(n_calls, before);
	CHECK_INT(mmhal_chan_dequeue(copy, MMHAL_FOREVER, &fr), 0);
	CHECK(fr.buf == small);
	CHECK_INT(fr.cookie, 11);
	CHECK_INT(fr.bytesused, 960);
	CHECK_INT(fr.checksum, 0);
	/* Released: the source may be a destination now, and back. */
	CHECK_INT(mmhal_chan_copy(copy, src, small, 64, 12, NULL), 0);
	CHECK_INT(seen_qbuf.flags, MMEDGE_QBUF_SRC);
	CHECK_INT(seen_qbuf.fd, mmhal_buf_fd(src));
	CHECK_INT(seen_qbuf.src_fd, mmhal_buf_fd(small));
	/* The source freed while queued: the destination is still known. */
	mmhal_buf_free(small);
	small = NULL;
	CHECK_INT(mmhal_chan_dequeue(copy, MMHAL_NONBLOCK, &fr), 0);
	CHECK(fr.buf == src);
	CHECK_INT(fr.cookie, 12);
	CHECK_INT(mmhal_chan_copy(copy, dst, src, 1000, 13, NULL), 0);

	/* Destroyed with a job queued: both buffers are free again. */
	mmhal_chan_destroy(copy);
	copy = make_chan(MMHAL_CHAN_COPY);
	CHECK_INT(mmhal_chan_copy(copy, other, dst, 64, 14, NULL), 0);
	/* The destination freed while queued: the frame has no buffer. */
	mmhal_buf_free(other);
	other = NULL;
	CHECK_INT(mmhal_chan_dequeue(copy, MMHAL_NONBLOCK, &fr), 0);
	CHECK(fr.buf == NULL);
	CHECK_INT(fr.cookie, 14);

	mmhal_chan_destroy(copy);
	mmhal_chan_destroy(feed);
	mmhal_buf_free(foreign);
	mmhal_dev_close(odev);
	mmhal_buf_free(src);
	mmhal_buf_free(dst);
}

static void test_frame_record(void)
{
	const struct mmhal_frame_meta *m = POISON;
	struct mmhal_chan *copy = make_chan(MMHAL_CHAN_COPY);
	struct mmhal_chan *feed = make_chan(MMHAL_CHAN_FEED);
	struct mmhal_chan *cap = NULL;
	struct mmhal_buf *dst = memfd_buf(pdev, 4096);
	struct mmhal_frame_meta *w;
	struct mmhal_frame fr;
	void *base = NULL;

	CHECK_INT(mmhal_chan_wrap(pdev, 9, 3072, 3072, &cap), 0);
	if (!copy || !feed || !cap || !dst || mmhal_buf_map(dst, &base))
		FAIL("setup failed");

	memset(&fr, 0, sizeof(fr));
	fr.buf = dst;
	fr.bytesused = 1000;
	fr.sequence = 5;
	CHECK_INT(mmhal_frame_record(copy, &fr, NULL), -EINVAL);
	CHECK_INT(mmhal_frame_record(NULL, &fr, &m), -EINVAL);
	CHECK(m == NULL);
	CHECK_INT(mmhal_frame_record(copy, NULL, &m), -EINVAL);
	CHECK_INT(mmhal_frame_record(feed, &fr, &m), -ENOENT);
	/* Nothing written yet. */
	CHECK_INT(mmhal_frame_record(copy, &fr, &m), -EBADMSG);

	w = (struct mmhal_frame_meta *)((char *)base + 1024);
	w->magic = MMHAL_META_MAGIC;
	w->version = MMHAL_META_VERSION;
	w->size = sizeof(*w);
	w->chan = FAKE_ID;
	w->sequence = 5;
	w->bytesused = 1000;
	CHECK_INT(mmhal_frame_record(copy, &fr, &m), 0);
	CHECK(m == w);
	/* Another frame's record. */
	fr.sequence = 6;
	CHECK_INT(mmhal_frame_record(copy, &fr, &m), -EBADMSG);
	CHECK(m == NULL);
	fr.sequence = 5;
	fr.bytesused = 999;	/* same offset, not the same frame */
	CHECK_INT(mmhal_frame_record(copy, &fr, &m), -EBADMSG);
	/* A record that would not fit in the buffer. */
	fr.bytesused = 4000;
	CHECK_INT(mmhal_frame_record(copy, &fr, &m), -ENOSPC);
	fr.bytesused = 0;
	CHECK_INT(mmhal_frame_record(copy, &fr, &m), -EBADMSG);
	fr.buf = NULL;
	CHECK_INT(mmhal_frame_record(copy, &fr, &m), -EINVAL);

	/* Capture: the channel's meta offset, as mmhal_frame_meta(). */
	w = (struct mmhal_frame_meta *)((char *)base + 3072);
	w->magic = MMHAL_META_MAGIC;
	w->version = MMHAL_META_VERSION;
	w->size = sizeof(*w);
	w->chan = 9;
	w->sequence = 2;
	w->bytesused = 3072;
	fr.buf = dst;
	fr.sequence = 2;
	fr.bytesused = 3072;
	CHECK_INT(mmhal_frame_record(cap, &fr, &m), 0);
	CHECK(m == w);
	CHECK_INT(mmhal_frame_meta(dst, cap, &m), 0);
	CHECK(m == w);

	mmhal_chan_destroy(cap);
	mmhal_chan_destroy(copy);
	mmhal_chan_destroy(feed);
	mmhal_buf_free(dst);
}

static void teardown(void)
{
	mmhal_dev_close(pdev);
	close(pipe_fds[1]);
}

static const struct tap_test tests[] = {
	TAP_TEST(setup),
	TAP_TEST(test_create_encoding),
	TAP_TEST(test_create_checks_first),
	TAP_TEST(test_feed),
	TAP_TEST(test_slots_move),
	TAP_TEST(test_copy),
	TAP_TEST(test_frame_record),
	TAP_TEST(teardown),
};

int main(void)
{
	return tap_run(tests, TAP_COUNT(tests));
}

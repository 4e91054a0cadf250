// SPDX-License-Identifier: MIT
/*
 * Host tests of the buffer and channel API that need no mmedge device:
 * default parameters, NULL arguments, and parameters the HAL must refuse
 * before asking the driver.
 *
 * "Before asking the driver" is shown with a device handle around one end
 * of a pipe (mmhal_dev_wrap()): a pipe answers every mmedge ioctl with
 * ENOTTY, so a call that returns -EINVAL refused its arguments itself, and
 * one that returns -ENOTTY passed its checks and reached the ioctl.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "device/mmhal_internal.h"
#include "tests/tap.h"

#define POISON	((void *)0x5a5a5a5aUL)

static int pipe_fds[2] = { -1, -1 };
static struct mmhal_dev *pdev;	/* wraps pipe_fds[0] */

static void setup(void)
{
	if (pipe(pipe_fds) < 0)
		BAIL_OUT("pipe failed");
	CHECK_INT(mmhal_dev_wrap(pipe_fds[0], NULL, &pdev), 0);
	if (!pdev)
		BAIL_OUT("mmhal_dev_wrap failed");
}

static int reserved_zero(const uint64_t *r, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (r[i])
			return 0;
	return 1;
}

static void test_buf_default_params(void)
{
	struct mmhal_buf_params p = mmhal_buf_default_params();

	CHECK_INT(p.cache, MMHAL_CACHE_CACHED);
	CHECK_INT(p.contiguous, 0);
	CHECK(reserved_zero(p.reserved, TAP_COUNT(p.reserved)));
}

static void test_chan_default_params(void)
{
	struct mmhal_chan_params p = mmhal_chan_default_params();

	CHECK_INT(p.weight, 100);
	CHECK_INT(p.weight, MMHAL_WEIGHT_DEFAULT);
	CHECK_INT(p.class, MMHAL_CLASS_BEST_EFFORT);
	CHECK_INT(p.cap, 0);
	CHECK_INT(p.segment, 0);
	CHECK_INT(p.overrun, MMHAL_OVERRUN_DROP_NEWEST);
	CHECK(reserved_zero(p.reserved, TAP_COUNT(p.reserved)));
}

static void test_src_helpers(void)
{
	struct mmhal_src s = mmhal_src_camera(64, 48, MMHAL_FMT_GREY, 30);

	CHECK_INT(s.type, MMHAL_SRC_CAMERA);
	CHECK_INT(s.fourcc, MMHAL_FMT_GREY);
	CHECK_INT(s.width, 64);
	CHECK_INT(s.height, 48);
	CHECK_INT(s.rate_num, 30);
	CHECK_INT(s.rate_den, 1);
	CHECK_INT(s.period, 0);
	CHECK_INT(s.signal, 0);

	s = mmhal_src_mic(16000, 320, MMHAL_SIGNAL_CHIRP);
	CHECK_INT(s.type, MMHAL_SRC_MIC);
	CHECK_INT(s.fourcc, MMHAL_FMT_S16LE);
	CHECK_INT(s.rate_num, 16000);
	CHECK_INT(s.rate_den, 1);
	CHECK_INT(s.period, 320);
	CHECK_INT(s.signal, MMHAL_SIGNAL_CHIRP);
	CHECK_INT(s.width | s.height, 0);

	s = mmhal_src_imu(200, 10);
	CHECK_INT(s.type, MMHAL_SRC_IMU);
	CHECK_INT(s.fourcc, MMHAL_FMT_IMU6);
	CHECK_INT(s.rate_num, 200);
	CHECK_INT(s.period, 10);
	CHECK_INT(s.width | s.height | s.signal, 0);
}

static void test_fourcc_values(void)
{
	/* The V4L2 codes the driver documents. */
	CHECK_INT(MMHAL_FMT_GREY, 0x59455247);
	CHECK_INT(MMHAL_FMT_RGB24, 0x33424752);
	CHECK_INT(MMHAL_FMT_NV12, 0x3231564e);
	CHECK_INT(MMHAL_FMT_S16LE, 0x454c3631);
	CHECK_INT(MMHAL_FMT_IMU6, 0x36554d49);
	CHECK_INT(sizeof(struct mmhal_frame_meta), 112);
	CHECK_INT(sizeof(struct mmhal_imu_sample), 24);
}

static void test_null_args(void)
{
	struct mmhal_buf *buf = POISON;
	struct mmhal_chan *chan = POISON;
	struct mmhal_src src = mmhal_src_imu(200, 10);
	const struct mmhal_frame_meta *meta = POISON;
	struct mmhal_chan_stats st;
	struct mmhal_frame fr;
	struct mmhal_xts xts;
	uint64_t bw = 1;
	void *addr = POISON;
	int fence = 7;

	CHECK_INT(mmhal_buf_alloc(NULL, 4096, NULL, &buf), -EINVAL);
	CHECK(buf == NULL);
	CHECK_INT(mmhal_buf_alloc(pdev, 4096, NULL, NULL), -EINVAL);
	buf = POISON;
	CHECK_INT(mmhal_buf_import(NULL, 0, &buf), -EINVAL);
	CHECK(buf == NULL);
	CHECK_INT(mmhal_buf_import(pdev, 0, NULL), -EINVAL);
	CHECK_INT(mmhal_buf_fd(NULL), -EINVAL);
	CHECK_INT(mmhal_buf_size(NULL), 0);
	CHECK_INT(mmhal_buf_map(NULL, &addr), -EINVAL);
	CHECK(addr == NULL);
	CHECK_INT(mmhal_buf_sync_range(NULL, 0, 1, MMHAL_SYNC_READ), -EINVAL);
	CHECK_INT(mmhal_buf_begin_cpu(NULL, MMHAL_SYNC_READ), -EINVAL);
	CHECK_INT(mmhal_buf_end_cpu(NULL, MMHAL_SYNC_READ), -EINVAL);
	mmhal_buf_free(NULL);

	chan = POISON;
	CHECK_INT(mmhal_chan_create(NULL, &src, NULL, &chan), -EINVAL);
	CHECK(chan == NULL);
	chan = POISON;
	CHECK_INT(mmhal_chan_create(pdev, NULL, NULL, &chan), -EINVAL);
	CHECK(chan == NULL);
	CHECK_INT(mmhal_chan_create(pdev, &src, NULL, NULL), -EINVAL);
	CHECK_INT(mmhal_chan_id(NULL), -EINVAL);
	CHECK_INT(mmhal_chan_frame_size(NULL), 0);
	CHECK_INT(mmhal_chan_meta_offset(NULL), 0);
	CHECK_INT(mmhal_chan_buf_size(NULL), 0);
	CHECK_INT(mmhal_chan_queue(NULL, NULL, 0, &fence), -EINVAL);
	CHECK_INT(fence, -1);
	memset(&fr, 0xa5, sizeof(fr));
	CHECK_INT(mmhal_chan_dequeue(NULL, -1, &fr), -EINVAL);
	CHECK(fr.buf == NULL && fr.sequence == 0 && fr.cookie == 0);
	CHECK_INT(mmhal_chan_set_weight(NULL, 100), -EINVAL);
	CHECK_INT(mmhal_chan_set_class(NULL, 0), -EINVAL);
	CHECK_INT(mmhal_chan_set_cap(NULL, 0), -EINVAL);
	memset(&st, 0xa5, sizeof(st));
	CHECK_INT(mmhal_chan_stats(NULL, &st), -EINVAL);
	CHECK_INT(st.frames, 0);
	memset(&st, 0xa5, sizeof(st));
	CHECK_INT(mmhal_dev_chan_stats(NULL, 1, &st), -EINVAL);
	CHECK_INT(st.frames, 0);
	CHECK_INT(mmhal_dev_chan_stats(pdev, 1, NULL), -EINVAL);
	CHECK_INT(mmhal_frame_meta(NULL, NULL, &meta), -EINVAL);
	CHECK(meta == NULL);
	mmhal_chan_destroy(NULL);

	CHECK_INT(mmhal_dev_bus_get(NULL, &bw), -EINVAL);
	CHECK_INT(bw, 0);
	CHECK_INT(mmhal_dev_bus_get(pdev, NULL), -EINVAL);
	CHECK_INT(mmhal_dev_bus_set(NULL, MMHAL_BUS_MIN), -EINVAL);
	memset(&xts, 0xa5, sizeof(xts));
	CHECK_INT(mmhal_dev_xts(NULL, 1, &xts), -EINVAL);
	CHECK_INT(xts.n_samples, 0);
	CHECK_INT(mmhal_dev_xts(pdev, 1, NULL), -EINVAL);
}

static void test_buf_alloc_checks_first(void)
{
	struct mmhal_buf_params p = mmhal_buf_default_params();
	struct mmhal_buf *buf = POISON;

	CHECK_INT(mmhal_buf_alloc(pdev, 0, NULL, &buf), -EINVAL);
	CHECK(buf == NULL);
	p.cache = 3;
	CHECK_INT(mmhal_buf_alloc(pdev, 4096, &p, &buf), -EINVAL);
	p = mmhal_buf_default_params();
	p.reserved[3] = 1;
	CHECK_INT(mmhal_buf_alloc(pdev, 4096, &p, &buf), -EINVAL);
	/* Good arguments reach the driver (the pipe says ENOTTY). */
	p = mmhal_buf_default_params();
	p.cache = MMHAL_CACHE_WC;
	p.contiguous = 1;
	buf = POISON;
	CHECK_INT(mmhal_buf_alloc(pdev, 4096, &p, &buf), -ENOTTY);
	CHECK(buf == NULL);
	CHECK_INT(mmhal_buf_alloc(pdev, 1, NULL, &buf), -ENOTTY);
}

static void test_buf_import_checks(void)
{
	struct mmhal_buf *buf = POISON;

	CHECK_INT(mmhal_buf_import(pdev, -1, &buf), -EINVAL);
	CHECK(buf == NULL);
	/* A closed fd cannot be duplicated. */
	CHECK_INT(mmhal_buf_import(pdev, 1000, &buf), -EBADF);
	CHECK_INT(mmhal_buf_import(pdev, pipe_fds[1], &buf), -ENOTTY);
	CHECK(buf == NULL);
}

static void test_bus_xts_checks_first(void)
{
	struct mmhal_xts xts;
	uint64_t bw;

	CHECK_INT(mmhal_dev_bus_set(pdev, MMHAL_BUS_MIN - 1), -EINVAL);
	CHECK_INT(mmhal_dev_bus_set(pdev, MMHAL_BUS_MAX + 1), -EINVAL);
	CHECK_INT(mmhal_dev_bus_set(pdev, MMHAL_BUS_MIN), -ENOTTY);
	CHECK_INT(mmhal_dev_bus_get(pdev, &bw), -ENOTTY);
	CHECK_INT(mmhal_dev_xts(pdev, 0, &xts), -EINVAL);
	CHECK_INT(mmhal_dev_xts(pdev, MMHAL_XTS_MAX_SAMPLES + 1, &xts),
		  -EINVAL);
	CHECK_INT(mmhal_dev_xts(pdev, MMHAL_XTS_MAX_SAMPLES, &xts), -ENOTTY);
}

/* mmhal_chan_create(pdev, src, params): -EINVAL or -ENOTTY. */
static int create(const struct mmhal_src *src,
		  const struct mmhal_chan_params *p)
{
	struct mmhal_chan *chan = POISON;
	int ret = mmhal_chan_create(pdev, src, p, &chan);

	CHECK(chan == NULL);
	return ret;
}

static void test_chan_bad_src(void)
{
	struct mmhal_src s;

	/* The good ones reach the driver. */
	s = mmhal_src_camera(64, 48, MMHAL_FMT_GREY, 30);
	CHECK_INT(create(&s, NULL), -ENOTTY);
	s = mmhal_src_camera(16, 4096, MMHAL_FMT_NV12, 30);
	CHECK_INT(create(&s, NULL), -ENOTTY);
	s = mmhal_src_mic(16000, 320, MMHAL_SIGNAL_TONE);
	CHECK_INT(create(&s, NULL), -ENOTTY);
	s = mmhal_src_imu(200, 10);
	CHECK_INT(create(&s, NULL), -ENOTTY);
	s = mmhal_src_camera(64, 48, MMHAL_FMT_RGB24, 30);
	s.signal = MMHAL_PATTERN_STATIC;
	CHECK_INT(create(&s, NULL), -ENOTTY);
	s = mmhal_src_mic(16000, 320, MMHAL_SIGNAL_SILENCE);
	CHECK_INT(create(&s, NULL), -ENOTTY);
	s = mmhal_src_mic(16000, 320, MMHAL_SIGNAL_NOISE);
	CHECK_INT(create(&s, NULL), -ENOTTY);

	memset(&s, 0, sizeof(s));
	CHECK_INT(create(&s, NULL), -EINVAL);		/* type 0 */
	s = mmhal_src_imu(200, 10);
	s.type = 4;
	CHECK_INT(create(&s, NULL), -EINVAL);
	s = mmhal_src_camera(64, 48, MMHAL_FMT_S16LE, 30);
	CHECK_INT(create(&s, NULL), -EINVAL);		/* mic format */
	s = mmhal_src_camera(64, 48, MMHAL_FOURCC('Y', 'U', 'Y', 'V'), 30);
	CHECK_INT(create(&s, NULL), -EINVAL);
	s = mmhal_src_camera(15, 48, MMHAL_FMT_GREY, 30);
	CHECK_INT(create(&s, NULL), -EINVAL);
	s = mmhal_src_camera(64, 4097, MMHAL_FMT_GREY, 30);
	CHECK_INT(create(&s, NULL), -EINVAL);
	s = mmhal_src_camera(63, 48, MMHAL_FMT_NV12, 30);
	CHECK_INT(create(&s, NULL), -EINVAL);		/* odd NV12 */
	s = mmhal_src_camera(64, 48, MMHAL_FMT_GREY, 0);
	CHECK_INT(create(&s, NULL), -EINVAL);		/* zero rate */
	s = mmhal_src_camera(64, 48, MMHAL_FMT_GREY, 30);
	s.rate_den = 0;
	CHECK_INT(create(&s, NULL), -EINVAL);
	s = mmhal_src_camera(64, 48, MMHAL_FMT_GREY, 30);
	s.period = 1;
	CHECK_INT(create(&s, NULL), -EINVAL);
	s = mmhal_src_camera(64, 48, MMHAL_FMT_GREY, 30);
	s.signal = 2;
	CHECK_INT(create(&s, NULL), -EINVAL);		/* unknown pattern */
	s = mmhal_src_mic(16000, 0, MMHAL_SIGNAL_TONE);
	CHECK_INT(create(&s, NULL), -EINVAL);		/* zero period */
	s = mmhal_src_mic(16000, 320, 4);
	CHECK_INT(create(&s, NULL), -EINVAL);		/* unknown signal */
	s = mmhal_src_mic(16000, 320, MMHAL_SIGNAL_TONE);
	s.fourcc = MMHAL_FMT_IMU6;
	CHECK_INT(create(&s, NULL), -EINVAL);
	s = mmhal_src_mic(16000, 320, MMHAL_SIGNAL_TONE);
	s.width = 1;
	CHECK_INT(create(&s, NULL), -EINVAL);
	s = mmhal_src_imu(200, 0);
	CHECK_INT(create(&s, NULL), -EINVAL);
	s = mmhal_src_imu(200, 10);
	s.signal = 1;
	CHECK_INT(create(&s, NULL), -EINVAL);
}

static void test_chan_bad_params(void)
{
	struct mmhal_src s = mmhal_src_imu(200, 10);
	struct mmhal_chan_params p;

	p = mmhal_chan_default_params();
	CHECK_INT(create(&s, &p), -ENOTTY);
	p.weight = 0;
	CHECK_INT(create(&s, &p), -EINVAL);
	p.weight = MMHAL_WEIGHT_MAX + 1;
	CHECK_INT(create(&s, &p), -EINVAL);
	p.weight = MMHAL_WEIGHT_MAX;
	CHECK_INT(create(&s, &p), -ENOTTY);

	p = mmhal_chan_default_params();
	p.class = 2;
	CHECK_INT(create(&s, &p), -EINVAL);
	p.class = MMHAL_CLASS_LATENCY;		/* without a cap */
	CHECK_INT(create(&s, &p), -EINVAL);
	p.cap = 1000000;
	CHECK_INT(create(&s, &p), -ENOTTY);

	p = mmhal_chan_default_params();
	p.segment = 32;
	CHECK_INT(create(&s, &p), -EINVAL);
	p.segment = 100;			/* not a multiple of 64 */
	CHECK_INT(create(&s, &p), -EINVAL);
	p.segment = MMHAL_SEGMENT_MAX + 64;
	CHECK_INT(create(&s, &p), -EINVAL);
	p.segment = MMHAL_SEGMENT_MAX;
	CHECK_INT(create(&s, &p), -ENOTTY);

	p = mmhal_chan_default_params();
	p.overrun = 2;
	CHECK_INT(create(&s, &p), -EINVAL);
	p.overrun = MMHAL_OVERRUN_DROP_OLDEST;
	CHECK_INT(create(&s, &p), -ENOTTY);

	p = mmhal_chan_default_params();
	p.reserved[0] = 1;
	CHECK_INT(create(&s, &p), -EINVAL);

	/* Sensor clock: +-1 day, +-1000 ppm, pad zero. */
	p = mmhal_chan_default_params();
	p.sensor_drift_ppb = MMHAL_SENSOR_DRIFT_MAX + 1;
	CHECK_INT(create(&s, &p), -EINVAL);
	p.sensor_drift_ppb = -MMHAL_SENSOR_DRIFT_MAX - 1;
	CHECK_INT(create(&s, &p), -EINVAL);
	p.sensor_drift_ppb = -MMHAL_SENSOR_DRIFT_MAX;
	p.sensor_offset_ns = MMHAL_SENSOR_OFFSET_MAX + 1;
	CHECK_INT(create(&s, &p), -EINVAL);
	p.sensor_offset_ns = -MMHAL_SENSOR_OFFSET_MAX;
	p.pad = 1;
	CHECK_INT(create(&s, &p), -EINVAL);
	p.pad = 0;
	CHECK_INT(create(&s, &p), -ENOTTY);
}

/* A 16 KiB memfd as a buffer of pdev. */
static struct mmhal_buf *memfd_buf(uint64_t size)
{
	struct mmhal_buf *buf = NULL;
	int fd = memfd_create("mmhal-test", MFD_CLOEXEC);

	if (fd < 0 || ftruncate(fd, (off_t)size) < 0)
		return NULL;
	if (mmhal_buf_wrap(pdev, fd, size, &buf) < 0)
		close(fd);
	return buf;
}

static void test_buf_sync_checks_first(void)
{
	struct mmhal_buf *buf = memfd_buf(16384);

	if (!buf)
		FAIL("no memfd buffer");
	CHECK_INT(mmhal_buf_size(buf), 16384);
	CHECK(mmhal_buf_fd(buf) >= 0);
	CHECK_INT(mmhal_buf_sync_range(buf, 0, 0, MMHAL_SYNC_READ), -EINVAL);
	CHECK_INT(mmhal_buf_sync_range(buf, 0, 1, 0), -EINVAL);
	CHECK_INT(mmhal_buf_sync_range(buf, 0, 1, MMHAL_SYNC_END), -EINVAL);
	CHECK_INT(mmhal_buf_sync_range(buf, 0, 1, 1U << 3 | MMHAL_SYNC_READ),
		  -EINVAL);
	CHECK_INT(mmhal_buf_sync_range(buf, 16384, 1, MMHAL_SYNC_READ),
		  -EINVAL);
	CHECK_INT(mmhal_buf_sync_range(buf, 1, 16384, MMHAL_SYNC_READ),
		  -EINVAL);
	CHECK_INT(mmhal_buf_sync_range(buf, UINT64_MAX, 2, MMHAL_SYNC_READ),
		  -EINVAL);
	CHECK_INT(mmhal_buf_sync_range(buf, 2, UINT64_MAX, MMHAL_SYNC_READ),
		  -EINVAL);
	CHECK_INT(mmhal_buf_sync_range(buf, 0, 16384,
				       MMHAL_SYNC_RW | MMHAL_SYNC_END),
		  -ENOTTY);
	CHECK_INT(mmhal_buf_begin_cpu(buf, 0), -EINVAL);
	CHECK_INT(mmhal_buf_begin_cpu(buf, MMHAL_SYNC_END), -EINVAL);
	/* DMA_BUF_IOCTL_SYNC on a memfd: not a dma-buf. */
	CHECK_INT(mmhal_buf_begin_cpu(buf, MMHAL_SYNC_READ), -ENOTTY);
	CHECK_INT(mmhal_buf_end_cpu(buf, MMHAL_SYNC_RW), -ENOTTY);
	mmhal_buf_free(buf);
}

static void test_buf_map_once(void)
{
	struct mmhal_buf *buf = memfd_buf(8192);
	void *a = NULL, *b = NULL;

	if (!buf)
		FAIL("no memfd buffer");
	CHECK_INT(mmhal_buf_map(buf, NULL), -EINVAL);
	CHECK_INT(mmhal_buf_map(buf, &a), 0);
	CHECK(a != NULL);
	CHECK_INT(mmhal_buf_map(buf, &b), 0);
	CHECK(a == b);
	if (a)
		memset(a, 0x11, 8192);
	mmhal_buf_free(buf);
}

static void test_queue_checks_first(void)
{
	struct mmhal_dev *other = NULL;
	struct mmhal_chan *chan = NULL;
	struct mmhal_buf *small, *big, *foreign = NULL;
	int fd, fence = 5;

	CHECK_INT(mmhal_chan_wrap(pdev, 3, 3072, 3072, &chan), 0);
	if (!chan)
		FAIL("no channel");
	CHECK_INT(mmhal_chan_id(chan), 3);
	CHECK_INT(mmhal_chan_frame_size(chan), 3072);
	CHECK_INT(mmhal_chan_meta_offset(chan), 3072);
	CHECK_INT(mmhal_chan_buf_size(chan),
		  3072 + sizeof(struct mmhal_frame_meta));

	small = memfd_buf(3072 + sizeof(struct mmhal_frame_meta) - 1);
	big = memfd_buf(4096);
	CHECK(small && big);
	CHECK_INT(mmhal_chan_queue(chan, NULL, 0, &fence), -EINVAL);
	CHECK_INT(fence, -1);
	CHECK_INT(mmhal_chan_queue(chan, small, 0, NULL), -ENOSPC);
	CHECK_INT(mmhal_chan_queue(chan, big, 0, &fence), -ENOTTY);
	CHECK_INT(fence, -1);

	/* A buffer of another device handle. */
	fd = dup(pipe_fds[0]);
	CHECK_INT(mmhal_dev_wrap(fd, NULL, &other), 0);
	fd = memfd_create("mmhal-test", MFD_CLOEXEC);
	if (fd >= 0 && ftruncate(fd, 4096) == 0)
		CHECK_INT(mmhal_buf_wrap(other, fd, 4096, &foreign), 0);
	CHECK_INT(mmhal_chan_queue(chan, foreign, 0, NULL), -EINVAL);

	/* Dequeue, config and stats reach the driver. */
	{
		struct mmhal_frame fr;
		struct mmhal_chan_stats st;

		CHECK_INT(mmhal_chan_dequeue(chan, MMHAL_NONBLOCK, &fr),
			  -ENOTTY);
		CHECK_INT(mmhal_chan_dequeue(chan, 10, &fr), -ENOTTY);
		CHECK_INT(mmhal_chan_stats(chan, &st), -ENOTTY);
		CHECK_INT(mmhal_dev_chan_stats(pdev, 0, &st), -EINVAL);
		CHECK_INT(mmhal_chan_set_weight(chan, 0), -EINVAL);
		CHECK_INT(mmhal_chan_set_weight(chan, MMHAL_WEIGHT_MAX + 1),
			  -EINVAL);
		CHECK_INT(mmhal_chan_set_weight(chan, 50), -ENOTTY);
		CHECK_INT(mmhal_chan_set_class(chan, 2), -EINVAL);
		CHECK_INT(mmhal_chan_set_class(chan, MMHAL_CLASS_LATENCY),
			  -ENOTTY);
		CHECK_INT(mmhal_chan_set_cap(chan, 0), -ENOTTY);
	}

	mmhal_buf_free(foreign);
	mmhal_buf_free(small);
	mmhal_buf_free(big);
	mmhal_chan_destroy(chan);
	/* other's fd is a dup: closing it leaves pdev alone. */
	mmhal_dev_close(other);
}

static void test_frame_meta(void)
{
	const struct mmhal_frame_meta *m = POISON;
	struct mmhal_frame_meta *w;
	struct mmhal_chan *chan = NULL, *chan2 = NULL;
	struct mmhal_buf *buf = memfd_buf(4096), *small = memfd_buf(3100);
	void *base = NULL;

	CHECK_INT(mmhal_chan_wrap(pdev, 2, 3072, 3072, &chan), 0);
	CHECK_INT(mmhal_chan_wrap(pdev, 5, 3072, 3072, &chan2), 0);
	if (!buf || !small || !chan || !chan2 || mmhal_buf_map(buf, &base))
		FAIL("setup failed");
	w = (struct mmhal_frame_meta *)((char *)base + 3072);

	CHECK_INT(mmhal_frame_meta(buf, chan, NULL), -EINVAL);
	CHECK_INT(mmhal_frame_meta(buf, NULL, &m), -EINVAL);
	CHECK(m == NULL);
	CHECK_INT(mmhal_frame_meta(small, chan, &m), -ENOSPC);

	/* Zeroes: no record. */
	CHECK_INT(mmhal_frame_meta(buf, chan, &m), -EBADMSG);
	CHECK(m == NULL);

	w->magic = MMHAL_META_MAGIC;
	w->version = MMHAL_META_VERSION;
	w->size = sizeof(*w);
	w->chan = 2;
	w->sequence = 42;
	CHECK_INT(mmhal_frame_meta(buf, chan, &m), 0);
	CHECK(m == w);
	if (m)
		CHECK_INT(m->sequence, 42);
	CHECK_INT(mmhal_frame_meta(buf, chan2, &m), -EBADMSG);	/* chan 5 */
	CHECK(m == NULL);

	w->version = 0;
	CHECK_INT(mmhal_frame_meta(buf, chan, &m), -EPROTO);
	w->version = 2;		/* newer: fine */
	CHECK_INT(mmhal_frame_meta(buf, chan, &m), 0);
	w->size = sizeof(*w) - 8;
	CHECK_INT(mmhal_frame_meta(buf, chan, &m), -EBADMSG);
	w->size = 4096;		/* past the buffer */
	CHECK_INT(mmhal_frame_meta(buf, chan, &m), -EBADMSG);
	w->size = sizeof(*w);
	w->magic ^= 1;
	CHECK_INT(mmhal_frame_meta(buf, chan, &m), -EBADMSG);

	mmhal_chan_destroy(chan);
	mmhal_chan_destroy(chan2);
	mmhal_buf_free(buf);
	mmhal_buf_free(small);
}

static void test_wait_buckets(void)
{
	CHECK_INT(mmhal_wait_bucket_ns(0), 1024);
	CHECK_INT(mmhal_wait_bucket_ns(1), 2048);
	CHECK_INT(mmhal_wait_bucket_ns(14), 1ULL << 24);
	CHECK(mmhal_wait_bucket_ns(15) == UINT64_MAX);
	CHECK(mmhal_wait_bucket_ns(16) == UINT64_MAX);
	CHECK(mmhal_wait_bucket_ns(~0U) == UINT64_MAX);
}

static void teardown(void)
{
	mmhal_dev_close(pdev);	/* closes pipe_fds[0] */
	pdev = NULL;
	close(pipe_fds[1]);
}

static const struct tap_test tests[] = {
	TAP_TEST(setup),
	TAP_TEST(test_buf_default_params),
	TAP_TEST(test_chan_default_params),
	TAP_TEST(test_src_helpers),
	TAP_TEST(test_fourcc_values),
	TAP_TEST(test_null_args),
	TAP_TEST(test_buf_alloc_checks_first),
	TAP_TEST(test_buf_import_checks),
	TAP_TEST(test_bus_xts_checks_first),
	TAP_TEST(test_chan_bad_src),
	TAP_TEST(test_chan_bad_params),
	TAP_TEST(test_buf_sync_checks_first),
	TAP_TEST(test_buf_map_once),
	TAP_TEST(test_queue_checks_first),
	TAP_TEST(test_frame_meta),
	TAP_TEST(test_wait_buckets),
	TAP_TEST(teardown),
};

int main(void)
{
	return tap_run(tests, TAP_COUNT(tests));
}

// SPDX-License-Identifier: MIT
/*
 * mmhal_dev_test - check libmmhal against a real mmedge device
 *
 *	mmhal_dev_test [--skip-missing] [DEVICE]
 *
 * Covers the device layer, buffers (allocate, map, sync, import), the bus
 * model, cross-timestamps, a camera channel streaming end to end, and a
 * channel queued on one thread and dequeued on another.
 * DEVICE defaults to /dev/mmedge0. Prints TAP; exits 0 if every test
 * passed, 1 otherwise. A missing DEVICE is a failure, unless --skip-missing
 * is given: then the whole run is skipped ("1..0 # SKIP") and exits 0.
 * Meant to run inside the test VM, where mmedge.ko is loaded.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mmhal.h"
#include "tests/tap.h"

static const char *dev_path = MMHAL_DEFAULT_DEV;
static struct mmhal_dev *dev;
static struct mmhal_caps caps;

/* The N of ".../mmedgeN" after resolving links, or -1 if not that form. */
static long path_instance(const char *path)
{
	char real[PATH_MAX];
	const char *base;
	char *end;
	long n;

	if (!realpath(path, real))
		snprintf(real, sizeof(real), "%s", path);
	base = basename(real);
	if (strncmp(base, "mmedge", 6) || !base[6])
		return -1;
	n = strtol(base + 6, &end, 10);
	return *end ? -1 : n;
}

static void test_open(void)
{
	int ret = mmhal_dev_open(dev_path, &dev);

	if (ret < 0) {
		tap_diag("mmhal_dev_open(%s): %s", dev_path,
			 mmhal_strerror(ret));
		BAIL_OUT("cannot open the device");
	}
	CHECK(dev != NULL);
}

static void test_fd_cloexec(void)
{
	int fd, flags;

	if (!dev)
		FAIL("no device handle");
	fd = mmhal_dev_fd(dev);
	CHECK(fd >= 0);
	flags = fcntl(fd, F_GETFD);
	CHECK(flags >= 0 && (flags & FD_CLOEXEC));
	flags = fcntl(fd, F_GETFL);
	CHECK(flags >= 0 && (flags & O_ACCMODE) == O_RDWR);
}

static void test_caps(void)
{
	if (!dev)
		FAIL("no device handle");
	CHECK_INT(mmhal_dev_caps(dev, &caps), 0);
	CHECK_INT(mmhal_dev_caps(dev, NULL), -EINVAL);
}

static void test_caps_driver_name(void)
{
	CHECK_STR(caps.driver, "mmedge");
}

static void test_caps_api_version(void)
{
	CHECK(caps.api_version >= 1);
	tap_diag("api_version %u", caps.api_version);
}

static void test_caps_instance(void)
{
	long n = path_instance(dev_path);

	if (n < 0)
		SKIP("device path is not .../mmedgeN");
	CHECK_INT(caps.instance, n);
}

static void test_caps_bus_info(void)
{
	CHECK(strncmp(caps.bus_info, "platform:", 9) == 0);
	tap_diag("bus_info %s", caps.bus_info);
}

static void test_caps_query_caps_listed(void)
{
	CHECK(caps.ioctls & (1ULL << MMHAL_IOCTL_QUERY_CAPS));
}

static void test_caps_virtual_consistent(void)
{
	CHECK_INT(caps.virtual_dev, !!(caps.caps & MMHAL_CAP_VIRTUAL));
}

static void test_second_handle_independent(void)
{
	struct mmhal_dev *dev2 = NULL;
	struct mmhal_caps caps2;
	int ret;

	if (!dev)
		FAIL("no device handle");
	ret = mmhal_dev_open(dev_path, &dev2);
	if (ret < 0)
		FAIL("second open: %s", mmhal_strerror(ret));
	CHECK(mmhal_dev_fd(dev2) != mmhal_dev_fd(dev));
	CHECK_INT(mmhal_dev_caps(dev2, &caps2), 0);
	CHECK_INT(caps2.instance, caps.instance);
	mmhal_dev_close(dev2);

	/* Closing one handle leaves the other working. */
	CHECK_INT(mmhal_dev_caps(dev, &caps2), 0);
	CHECK(fcntl(mmhal_dev_fd(dev), F_GETFD) >= 0);
}


/* --- buffers --- */

static int have(uint64_t cap)
{
	return (caps.caps & cap) != 0;
}

static void test_buf_alloc_map(void)
{
	struct mmhal_buf *buf = NULL;
	unsigned char *p;
	void *addr = NULL;
	int ret, flags;

	if (!dev)
		FAIL("no device handle");
	if (!have(MMHAL_CAP_BUFFERS))
		SKIP("no buffers");
	ret = mmhal_buf_alloc(dev, 10000, NULL, &buf);
	if (ret < 0)
		FAIL("mmhal_buf_alloc: %s", mmhal_strerror(ret));
	CHECK(mmhal_buf_size(buf) >= 10000);
	CHECK_INT(mmhal_buf_size(buf) % (uint64_t)sysconf(_SC_PAGESIZE), 0);
	flags = fcntl(mmhal_buf_fd(buf), F_GETFD);
	CHECK(flags >= 0 && (flags & FD_CLOEXEC));

	CHECK_INT(mmhal_buf_map(buf, &addr), 0);
	p = addr;
	if (p) {
		CHECK_INT(mmhal_buf_begin_cpu(buf, MMHAL_SYNC_WRITE), 0);
		memset(p, 0xab, (size_t)mmhal_buf_size(buf));
		CHECK_INT(mmhal_buf_end_cpu(buf, MMHAL_SYNC_WRITE), 0);
		CHECK_INT(mmhal_buf_sync_range(buf, 4096, 100,
					       MMHAL_SYNC_READ), 0);
		CHECK_INT(p[4096], 0xab);
		CHECK_INT(mmhal_buf_sync_range(buf, 4096, 100,
					       MMHAL_SYNC_READ | MMHAL_SYNC_END),
			  0);
	}
	/* Past the end: refused. */
	CHECK_INT(mmhal_buf_sync_range(buf, mmhal_buf_size(buf), 1,
				       MMHAL_SYNC_READ), -EINVAL);
	mmhal_buf_free(buf);
}

static void test_buf_params(void)
{
	struct mmhal_buf_params p = mmhal_buf_default_params();
	struct mmhal_buf *buf = NULL;
	int ret;

	if (!dev)
		FAIL("no device handle");
	if (!have(MMHAL_CAP_BUFFERS))
		SKIP("no buffers");
	p.cache = MMHAL_CACHE_WC;
	ret = mmhal_buf_alloc(dev, 4096, &p, &buf);
	CHECK_INT(ret, 0);
	mmhal_buf_free(buf);
	buf = NULL;
	if (!have(MMHAL_CAP_CONTIG))
		SKIP("no contiguous buffers");
	p = mmhal_buf_default_params();
	p.contiguous = 1;
	ret = mmhal_buf_alloc(dev, 65536, &p, &buf);
	CHECK_INT(ret, 0);
	mmhal_buf_free(buf);
}

/* An mmedge buffer imported like a foreign one, and released on free. */
static void test_buf_import(void)
{
	struct mmhal_buf *src = NULL, *imp = NULL, *imp2 = NULL;
	void *addr = NULL;
	int ret;

	if (!dev)
		FAIL("no device handle");
	if (!have(MMHAL_CAP_BUFFERS))
		SKIP("no buffers");
	ret = mmhal_buf_alloc(dev, 8192, NULL, &src);
	if (ret < 0)
		FAIL("mmhal_buf_alloc: %s", mmhal_strerror(ret));
	ret = mmhal_buf_import(dev, mmhal_buf_fd(src), &imp);
	CHECK_INT(ret, 0);
	CHECK(imp != NULL);
	CHECK(mmhal_buf_fd(imp) != mmhal_buf_fd(src));
	CHECK_INT(mmhal_buf_size(imp), mmhal_buf_size(src));
	CHECK_INT(mmhal_buf_import(dev, mmhal_buf_fd(src), &imp2), -EEXIST);
	CHECK(imp2 == NULL);
	/* The ranged sync is for mmedge's own handles only. */
	CHECK_INT(mmhal_buf_sync_range(imp, 0, 1, MMHAL_SYNC_READ), -EINVAL);
	CHECK_INT(mmhal_buf_begin_cpu(imp, MMHAL_SYNC_READ), 0);
	CHECK_INT(mmhal_buf_end_cpu(imp, MMHAL_SYNC_READ), 0);
	CHECK_INT(mmhal_buf_map(imp, &addr), 0);
	mmhal_buf_free(imp);
	/* Released: importing again works. */
	imp = NULL;
	CHECK_INT(mmhal_buf_import(dev, mmhal_buf_fd(src), &imp), 0);
	mmhal_buf_free(imp);
	mmhal_buf_free(src);
}

static void test_bus_xts(void)
{
	struct mmhal_xts x;
	uint64_t bw = 0;
	unsigned int i;

	if (!dev)
		FAIL("no device handle");
	if (!(caps.ioctls & (1ULL << MMHAL_IOCTL_XTS)))
		SKIP("no XTS");
	CHECK_INT(mmhal_dev_bus_get(dev, &bw), 0);
	CHECK(bw >= MMHAL_BUS_MIN && bw <= MMHAL_BUS_MAX);
	tap_diag("bus bandwidth %" PRIu64 " B/s", bw);
	CHECK_INT(mmhal_dev_xts(dev, 4, &x), 0);
	CHECK_INT(x.n_samples, 4);
	CHECK(x.counter_hz > 0);
	CHECK(x.counter_bits > 0 && x.counter_bits <= 64);
	for (i = 0; i < x.n_samples; i++)
		CHECK(x.samples[i].sys_before <= x.samples[i].sys_after);
	CHECK(x.samples[0].raw <= x.samples[3].raw);
}

/* --- a camera channel, end to end --- */

#define NR_BUFS		3
#define NR_FRAMES	5

static void test_chan_nonblocking(void)
{
	struct mmhal_src src = mmhal_src_imu(200, 10);
	struct mmhal_chan *chan = NULL;
	struct mmhal_frame fr;
	int ret;

	if (!dev)
		FAIL("no device handle");
	if (!have(MMHAL_CAP_CHANNELS))
		SKIP("no channels");
	ret = mmhal_chan_create(dev, &src, NULL, &chan);
	if (ret < 0)
		FAIL("mmhal_chan_create: %s", mmhal_strerror(ret));
	/* Nothing queued: nothing ever fills. */
	CHECK_INT(mmhal_chan_dequeue(chan, MMHAL_NONBLOCK, &fr), -EAGAIN);
	CHECK_INT(mmhal_chan_dequeue(chan, 30, &fr), -ETIMEDOUT);
	CHECK(fr.buf == NULL);
	CHECK_INT(mmhal_chan_frame_size(chan),
		  10 * sizeof(struct mmhal_imu_sample));
	mmhal_chan_destroy(chan);
}

static void test_chan_camera_stream(void)
{
	struct mmhal_src src = mmhal_src_camera(64, 48, MMHAL_FMT_GREY, 30);
	struct mmhal_buf *bufs[NR_BUFS] = { NULL };
	struct mmhal_chan *chan = NULL;
	struct mmhal_chan_stats st;
	struct pollfd pfd;
	uint64_t last_seq = 0;
	int i, ret, fence = -1, n = 0;

	if (!dev)
		FAIL("no device handle");
	if (!have(MMHAL_CAP_CHANNELS))
		SKIP("no channels");
	ret = mmhal_chan_create(dev, &src, NULL, &chan);
	if (ret < 0)
		FAIL("mmhal_chan_create: %s", mmhal_strerror(ret));
	CHECK(mmhal_chan_id(chan) > 0);
	CHECK_INT(mmhal_chan_frame_size(chan), 64 * 48);
	CHECK(mmhal_chan_meta_offset(chan) >= mmhal_chan_frame_size(chan));
	CHECK_INT(mmhal_chan_meta_offset(chan) % 64, 0);

	for (i = 0; i < NR_BUFS; i++) {
		ret = mmhal_buf_alloc(dev, mmhal_chan_buf_size(chan), NULL,
				      &bufs[i]);
		if (ret < 0) {
			tap_diag("mmhal_buf_alloc: %s", mmhal_strerror(ret));
			tap_cur_failed = 1;
			goto out;
		}
		CHECK_INT(mmhal_chan_queue(chan, bufs[i], 100 + i,
					   i == 0 ? &fence : NULL), 0);
	}
	CHECK(fence >= 0);
	/* Queued twice: refused. */
	CHECK_INT(mmhal_chan_queue(chan, bufs[0], 0, NULL), -EBUSY);

	pfd.fd = mmhal_dev_fd(dev);
	pfd.events = POLLIN;
	ret = poll(&pfd, 1, 5000);
	CHECK_INT(ret, 1);
	CHECK(pfd.revents & POLLIN);

	while (n < NR_FRAMES) {
		const struct mmhal_frame_meta *m = NULL;
		struct mmhal_frame fr;

		ret = mmhal_chan_dequeue(chan, 5000, &fr);
		if (ret < 0) {
			tap_diag("dequeue %d: %s", n, mmhal_strerror(ret));
			tap_cur_failed = 1;
			break;
		}
		tap_diag("frame seq %" PRIu64 " cookie %" PRIu64
			 " bytes %" PRIu64 " sof %" PRIu64 " eof-sof %" PRIu64
			 " ns flags %#x dropped %" PRIu64, fr.sequence,
			 fr.cookie, fr.bytesused, fr.ts.sof_mono,
			 fr.ts.eof_mono - fr.ts.sof_mono, fr.flags,
			 fr.dropped);
		CHECK(fr.buf != NULL);
		CHECK(fr.cookie >= 100 && fr.cookie < 100 + NR_BUFS);
		if (fr.cookie >= 100 && fr.cookie < 100 + NR_BUFS)
			CHECK(fr.buf == bufs[fr.cookie - 100]);
		CHECK_INT(fr.chan, mmhal_chan_id(chan));
		CHECK_INT(fr.flags & MMHAL_FRAME_ERROR, 0);
		CHECK_INT(fr.bytesused, mmhal_chan_frame_size(chan));
		if (n > 0)
			CHECK_INT(fr.sequence, last_seq + 1);
		else
			CHECK_INT(fr.sequence, 0);
		last_seq = fr.sequence;
		CHECK(fr.ts.sof_raw <= fr.ts.eof_raw);
		CHECK(fr.ts.sof_mono <= fr.ts.eof_mono);
		CHECK(fr.ts.sof_boot <= fr.ts.eof_boot);
		CHECK(fr.ts.sof_mono > 0);

		if (!fr.buf)
			break;
		CHECK_INT(mmhal_buf_begin_cpu(fr.buf, MMHAL_SYNC_READ), 0);
		ret = mmhal_frame_meta(fr.buf, chan, &m);
		CHECK_INT(ret, 0);
		if (m) {
			CHECK_INT(m->chan, fr.chan);
			CHECK_INT(m->flags, fr.flags);
			CHECK_INT(m->sequence, fr.sequence);
			CHECK_INT(m->bytesused, fr.bytesused);
			CHECK_INT(m->dropped, fr.dropped);
			CHECK(!memcmp(&m->ts, &fr.ts, sizeof(fr.ts)));
		}
		CHECK_INT(mmhal_buf_end_cpu(fr.buf, MMHAL_SYNC_READ), 0);
		n++;
		CHECK_INT(mmhal_chan_queue(chan, fr.buf, fr.cookie, NULL), 0);
	}
	CHECK_INT(n, NR_FRAMES);

	/* The first buffer's fence has signalled. */
	if (fence >= 0) {
		pfd.fd = fence;
		pfd.events = POLLIN;
		CHECK_INT(poll(&pfd, 1, 0), 1);
		close(fence);
	}

	CHECK_INT(mmhal_chan_stats(chan, &st), 0);
	CHECK(st.frames >= NR_FRAMES);
	CHECK_INT(st.id, mmhal_chan_id(chan));
	CHECK_INT(st.weight, MMHAL_WEIGHT_DEFAULT);
	CHECK(st.bytes >= (uint64_t)NR_FRAMES * 64 * 48);
	CHECK_INT(mmhal_chan_set_weight(chan, 50), 0);
	CHECK_INT(mmhal_dev_chan_stats(dev, (uint32_t)mmhal_chan_id(chan),
				       &st), 0);
	CHECK_INT(st.weight, 50);
	CHECK_INT(mmhal_chan_set_cap(chan, 1000000), 0);
	CHECK_INT(mmhal_chan_set_weight(chan, MMHAL_WEIGHT_DEFAULT), 0);
	CHECK_INT(mmhal_chan_stats(chan, &st), 0);
	CHECK_INT(st.cap, 1000000);
	CHECK_INT(st.weight, MMHAL_WEIGHT_DEFAULT);

out:
	mmhal_chan_destroy(chan);
	for (i = 0; i < NR_BUFS; i++)
		mmhal_buf_free(bufs[i]);
}

/* A buffer freed while queued: its frame comes back without it. */
static void test_chan_free_queued_buf(void)
{
	struct mmhal_src src = mmhal_src_imu(1000, 4);
	struct mmhal_buf *buf = NULL;
	struct mmhal_chan *chan = NULL;
	struct mmhal_frame fr;
	int ret;

	if (!dev)
		FAIL("no device handle");
	if (!have(MMHAL_CAP_CHANNELS))
		SKIP("no channels");
	ret = mmhal_chan_create(dev, &src, NULL, &chan);
	if (ret < 0)
		FAIL("mmhal_chan_create: %s", mmhal_strerror(ret));
	CHECK_INT(mmhal_buf_alloc(dev, mmhal_chan_buf_size(chan), NULL, &buf),
		  0);
	CHECK_INT(mmhal_chan_queue(chan, buf, 9, NULL), 0);
	mmhal_buf_free(buf);
	ret = mmhal_chan_dequeue(chan, 5000, &fr);
	CHECK_INT(ret, 0);
	CHECK(fr.buf == NULL);
	CHECK_INT(fr.cookie, 9);
	mmhal_chan_destroy(chan);
}

/*
 * mmhal.h's threading contract on a real channel: this thread queues, a
 * second one dequeues and hands the buffers back through a small pool.
 */
#define MT_BUFS		4
#define MT_FRAMES	200

static struct {
	pthread_mutex_t lock;
	pthread_cond_t back;
	struct mmhal_chan *chan;
	struct mmhal_buf *bufs[MT_BUFS];
	uint64_t free[MT_BUFS];		/* cookies of dequeued buffers */
	int n_free, n_frames, bad;	/* under lock */
} mt = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.back = PTHREAD_COND_INITIALIZER,
};

static void *mt_consumer(void *arg)
{
	struct mmhal_frame fr;
	int i, ret;

	(void)arg;
	for (i = 0; i < MT_FRAMES; i++) {
		ret = mmhal_chan_dequeue(mt.chan, 5000, &fr);
		pthread_mutex_lock(&mt.lock);
		if (ret < 0 || fr.cookie >= MT_BUFS ||
		    fr.buf != mt.bufs[fr.cookie]) {
			mt.bad++;
			mt.n_frames = MT_FRAMES;	/* stop the producer */
			pthread_cond_signal(&mt.back);
			pthread_mutex_unlock(&mt.lock);
			break;
		}
		mt.free[mt.n_free++] = fr.cookie;
		mt.n_frames++;
		pthread_cond_signal(&mt.back);
		pthread_mutex_unlock(&mt.lock);
	}
	return NULL;
}

static void test_chan_two_threads(void)
{
	struct mmhal_src src = mmhal_src_imu(1000, 4);
	pthread_t t;
	uint64_t cookie;
	int i, ret, queued = 0;

	if (!dev)
		FAIL("no device handle");
	if (!have(MMHAL_CAP_CHANNELS))
		SKIP("no channels");
	ret = mmhal_chan_create(dev, &src, NULL, &mt.chan);
	if (ret < 0)
		FAIL("mmhal_chan_create: %s", mmhal_strerror(ret));
	for (i = 0; i < MT_BUFS; i++) {
		ret = mmhal_buf_alloc(dev, mmhal_chan_buf_size(mt.chan), NULL,
				      &mt.bufs[i]);
		if (ret < 0) {
			tap_diag("mmhal_buf_alloc: %s", mmhal_strerror(ret));
			tap_cur_failed = 1;
			goto out;
		}
		mt.free[mt.n_free++] = (uint64_t)i;
	}
	if (pthread_create(&t, NULL, mt_consumer, NULL)) {
		tap_diag("pthread_create failed");
		tap_cur_failed = 1;
		goto out;
	}
	for (;;) {
		pthread_mutex_lock(&mt.lock);
		while (!mt.n_free && mt.n_frames < MT_FRAMES)
			pthread_cond_wait(&mt.back, &mt.lock);
		if (mt.n_frames >= MT_FRAMES || queued >= MT_FRAMES) {
			pthread_mutex_unlock(&mt.lock);
			break;
		}
		cookie = mt.free[--mt.n_free];
		pthread_mutex_unlock(&mt.lock);
		CHECK_INT(mmhal_chan_queue(mt.chan, mt.bufs[cookie], cookie,
					   NULL), 0);
		queued++;
	}
	pthread_join(t, NULL);
	CHECK_INT(mt.bad, 0);
	CHECK_INT(mt.n_frames, MT_FRAMES);
out:
	mmhal_chan_destroy(mt.chan);
	for (i = 0; i < MT_BUFS; i++)
		mmhal_buf_free(mt.bufs[i]);
}

static void test_close(void)
{
	mmhal_dev_close(dev);
	dev = NULL;
}

static const struct tap_test tests[] = {
	TAP_TEST(test_open),
	TAP_TEST(test_fd_cloexec),
	TAP_TEST(test_caps),
	TAP_TEST(test_caps_driver_name),
	TAP_TEST(test_caps_api_version),
	TAP_TEST(test_caps_instance),
	TAP_TEST(test_caps_bus_info),
	TAP_TEST(test_caps_query_caps_listed),
	TAP_TEST(test_caps_virtual_consistent),
	TAP_TEST(test_second_handle_independent),
	TAP_TEST(test_buf_alloc_map),
	TAP_TEST(test_buf_params),
	TAP_TEST(test_buf_import),
	TAP_TEST(test_bus_xts),
	TAP_TEST(test_chan_nonblocking),
	TAP_TEST(test_chan_camera_stream),
	TAP_TEST(test_chan_free_queued_buf),
	TAP_TEST(test_chan_two_threads),
	TAP_TEST(test_close),
};

int main(int argc, char **argv)
{
	int skip_missing = 0;
	int i;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--skip-missing")) {
			skip_missing = 1;
			continue;
		}
		if (argv[i][0] == '-' || i != argc - 1) {
			fprintf(stderr,
				"usage: %s [--skip-missing] [DEVICE]\n",
				argv[0]);
			return 2;
		}
		dev_path = argv[i];
	}

	if (skip_missing && access(dev_path, F_OK) < 0 && errno == ENOENT) {
		printf("1..0 # SKIP %s not present\n", dev_path);
		return 0;
	}
	return tap_run(tests, TAP_COUNT(tests));
}

// SPDX-License-Identifier: MIT
/*
 * The device layer's threading contract (mmhal.h, "Threading"), under
 * ThreadSanitizer: several threads queue buffers on one channel while
 * others dequeue from it, map buffers, free and destroy. Built with
 * -fsanitize=thread (the tsan flavour) and linked with
 * --wrap=mmhal_ioctl: every ioctl on the device handle's fd reaches
 * __wrap_mmhal_ioctl() below, a fake driver whose queue is guarded by its
 * own mutex and condition variable, as the kernel guards its own state.
 * A data race in the library's bookkeeping makes TSan report and the
 * binary exit non-zero, which tap-run.sh counts as a failure.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "device/mmhal_internal.h"
#include "tests/tap.h"

#define FAKE_ID		7
#define META_OFFSET	64
#define BUF_SIZE	4096
#define N_BUFS		24	/* more than the first slot table holds */
#define N_PRODUCERS	3
#define N_CONSUMERS	3
#define N_FRAMES	6000	/* in all */

int __real_mmhal_ioctl(int fd, unsigned long req, void *arg);
int __wrap_mmhal_ioctl(int fd, unsigned long req, void *arg);

static int pipe_fds[2] = { -1, -1 };

/* The fake driver: the QBUF'd cookies, in order, and its lock. */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t filled;
	uint64_t ring[256];
	unsigned int head, tail;	/* under lock */
} drv = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.filled = PTHREAD_COND_INITIALIZER,
};

static int fake_qbuf(struct mmedge_qbuf *q)
{
	pthread_mutex_lock(&drv.lock);
	if (drv.tail - drv.head == MMHAL_ARRAY_SIZE(drv.ring)) {
		pthread_mutex_unlock(&drv.lock);
		return -ENOSPC;
	}
	drv.ring[drv.tail++ % MMHAL_ARRAY_SIZE(drv.ring)] = q->cookie;
	pthread_cond_signal(&drv.filled);
	pthread_mutex_unlock(&drv.lock);
	q->fence_fd = -1;
	return 0;
}

static int fake_dqbuf(struct mmedge_dqbuf *d)
{
	struct timespec until;
	static uint64_t seq;	/* under drv.lock */
	int ret = 0;

	/* the driver's timeout 0 is "forever": a second is enough here */
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += (long)(d->timeout_ms ? d->timeout_ms : 1000) *
			 1000000L;
	until.tv_sec += until.tv_nsec / 1000000000L;
	until.tv_nsec %= 1000000000L;
	pthread_mutex_lock(&drv.lock);
	while (drv.head == drv.tail && !ret) {
		if (d->flags & MMEDGE_DQBUF_NONBLOCK)
			ret = -EAGAIN;
		else if (pthread_cond_timedwait(&drv.filled, &drv.lock,
						&until) == ETIMEDOUT)
			ret = -ETIMEDOUT;
	}
	if (!ret) {
		d->cookie = drv.ring[drv.head++ % MMHAL_ARRAY_SIZE(drv.ring)];
		d->sequence = seq++;
		d->bytesused = META_OFFSET;
	}
	pthread_mutex_unlock(&drv.lock);
	return ret;
}

int __wrap_mmhal_ioctl(int fd, unsigned long req, void *arg)
{
	if (fd != pipe_fds[0])
		return __real_mmhal_ioctl(fd, req, arg);
	switch (req) {
	case MMEDGE_IOC_QBUF:
		return fake_qbuf(arg);
	case MMEDGE_IOC_DQBUF:
		return fake_dqbuf(arg);
	case MMEDGE_IOC_CHAN_DESTROY:
		return 0;
	default:
		return -ENOTTY;
	}
}

static struct mmhal_dev *pdev;
static struct mmhal_chan *chan;
static struct mmhal_buf *bufs[N_BUFS];

/* Buffers not queued, which the producers take: the test's own lock. */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t back;
	int idx[N_BUFS];
	int n;			/* under lock */
} pool = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.back = PTHREAD_COND_INITIALIZER,
};

static atomic_int queued, dequeued, bad_frames, bad_calls;

static void pool_put(int i)
{
	pthread_mutex_lock(&pool.lock);
	pool.idx[pool.n++] = i;
	pthread_cond_signal(&pool.back);
	pthread_mutex_unlock(&pool.lock);
}

/* A free buffer's index, or -1 once every frame has been queued. */
static int pool_get(void)
{
	int i = -1;

	pthread_mutex_lock(&pool.lock);
	while (!pool.n && atomic_load(&queued) < N_FRAMES)
		pthread_cond_wait(&pool.back, &pool.lock);
	if (pool.n && atomic_fetch_add(&queued, 1) < N_FRAMES)
		i = pool.idx[--pool.n];
	pthread_cond_broadcast(&pool.back);
	pthread_mutex_unlock(&pool.lock);
	return i;
}

static struct mmhal_buf *memfd_buf(void)
{
	struct mmhal_buf *buf = NULL;
	int fd = memfd_create("mmhal-thread", MFD_CLOEXEC);

	if (fd < 0)
		return NULL;
	if (ftruncate(fd, BUF_SIZE) < 0 ||
	    mmhal_buf_wrap(pdev, fd, BUF_SIZE, &buf) < 0) {
		close(fd);
		return NULL;
	}
	return buf;
}

static void setup(void)
{
	int i;

	if (pipe(pipe_fds) < 0)
		BAIL_OUT("pipe failed");
	if (mmhal_dev_wrap(pipe_fds[0], NULL, &pdev) < 0 ||
	    mmhal_chan_wrap(pdev, FAKE_ID, META_OFFSET, META_OFFSET,
			    &chan) < 0)
		BAIL_OUT("wrapping the fake device failed");
	for (i = 0; i < N_BUFS; i++) {
		bufs[i] = memfd_buf();
		if (!bufs[i])
			BAIL_OUT("memfd buffer failed");
	}
}

static void *producer(void *arg)
{
	void *addr;
	int i, ret;

	(void)arg;
	while ((i = pool_get()) >= 0) {
		/* mapped lazily, by whichever thread comes first */
		if (mmhal_buf_map(bufs[i], &addr) < 0)
			atomic_fetch_add(&bad_calls, 1);
		ret = mmhal_chan_queue(chan, bufs[i], (uint64_t)i, NULL);
		if (ret < 0)
			atomic_fetch_add(&bad_calls, 1);
	}
	return NULL;
}

static void *consumer(void *arg)
{
	struct mmhal_frame f;
	int ret;

	(void)arg;
	while (atomic_load(&dequeued) < N_FRAMES) {
		ret = mmhal_chan_dequeue(chan, 20, &f);
		if (ret == -ETIMEDOUT)
			continue;
		if (ret < 0) {
			atomic_fetch_add(&bad_calls, 1);
			break;
		}
		if (f.cookie >= N_BUFS || f.buf != bufs[f.cookie]) {
			atomic_fetch_add(&bad_frames, 1);
			continue;
		}
		atomic_fetch_add(&dequeued, 1);
		pool_put((int)f.cookie);
	}
	return NULL;
}

static void test_queue_and_dequeue_on_other_threads(void)
{
	pthread_t p[N_PRODUCERS], c[N_CONSUMERS];
	int i;

	for (i = 0; i < N_BUFS; i++)
		pool.idx[pool.n++] = i;
	for (i = 0; i < N_CONSUMERS; i++)
		pthread_create(&c[i], NULL, consumer, NULL);
	for (i = 0; i < N_PRODUCERS; i++)
		pthread_create(&p[i], NULL, producer, NULL);
	for (i = 0; i < N_PRODUCERS; i++)
		pthread_join(p[i], NULL);
	for (i = 0; i < N_CONSUMERS; i++)
		pthread_join(c[i], NULL);
	CHECK_INT(atomic_load(&bad_calls), 0);
	CHECK_INT(atomic_load(&bad_frames), 0);
	CHECK_INT(atomic_load(&dequeued), N_FRAMES);
	CHECK_INT(pool.n, N_BUFS);
	CHECK_INT(drv.tail - drv.head, 0);
}

/* Two threads queue the same buffer: one wins, the other gets -EBUSY. */
static struct mmhal_buf *race_buf;
static pthread_barrier_t race_start;

static void *queue_once(void *arg)
{
	pthread_barrier_wait(&race_start);
	*(int *)arg = mmhal_chan_queue(chan, race_buf, 1, NULL);
	return NULL;
}

static void test_same_buffer_queued_once(void)
{
	struct mmhal_frame f;
	pthread_t t[2];
	int ret[2], round, wins = 0, busy = 0;

	race_buf = bufs[0];
	for (round = 0; round < 200; round++) {
		pthread_barrier_init(&race_start, NULL, 2);
		pthread_create(&t[0], NULL, queue_once, &ret[0]);
		pthread_create(&t[1], NULL, queue_once, &ret[1]);
		pthread_join(t[0], NULL);
		pthread_join(t[1], NULL);
		pthread_barrier_destroy(&race_start);
		wins += (ret[0] == 0) + (ret[1] == 0);
		busy += (ret[0] == -EBUSY) + (ret[1] == -EBUSY);
		CHECK_INT(mmhal_chan_dequeue(chan, MMHAL_NONBLOCK, &f), 0);
		CHECK(f.buf == race_buf);
	}
	CHECK_INT(wins, 200);
	CHECK_INT(busy, 200);
	CHECK_INT(mmhal_chan_dequeue(chan, MMHAL_NONBLOCK, &f), -EAGAIN);
}

/*
 * A queued buffer freed on one thread while another dequeues: the frame
 * comes back without its buffer, and nothing is touched after the free.
 */
static void *dequeue_one(void *arg)
{
	struct mmhal_frame *f = arg;

	if (mmhal_chan_dequeue(chan, 1000, f) < 0)
		f->cookie = UINT64_MAX;
	return NULL;
}

static void test_free_while_dequeueing(void)
{
	struct mmhal_frame f;
	pthread_t t;
	int i;

	for (i = 0; i < 50; i++) {
		struct mmhal_buf *b = memfd_buf();

		if (!b)
			FAIL("memfd buffer failed");
		CHECK_INT(mmhal_chan_queue(chan, b, 5, NULL), 0);
		pthread_create(&t, NULL, dequeue_one, &f);
		mmhal_buf_free(b);
		pthread_join(t, NULL);
		CHECK(f.cookie == 5);	/* f.buf: b or NULL, by the race */
	}
}

int main(void)
{
	static const struct tap_test tests[] = {
		TAP_TEST(test_queue_and_dequeue_on_other_threads),
		TAP_TEST(test_same_buffer_queued_once),
		TAP_TEST(test_free_while_dequeueing),
	};
	int ret, i;

	setup();
	ret = tap_run(tests, TAP_COUNT(tests));
	mmhal_chan_destroy(chan);
	for (i = 0; i < N_BUFS; i++)
		mmhal_buf_free(bufs[i]);
	mmhal_dev_close(pdev);
	close(pipe_fds[1]);
	return ret;
}

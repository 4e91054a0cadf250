// SPDX-License-Identifier: GPL-2.0
/*
 * mmedge_fuzz - an ioctl fuzzer for /dev/mmedge0.
 *
 *   mmedge_fuzz [-s SEED|FIRST..LAST] [-n SEQUENCES] [-t SECONDS] [-j THREADS]
 *               [-F]
 *
 * For each seed, THREADS threads run SEQUENCES random sequences (1..32
 * operations each) between them on one open device: every MMEDGE_IOC_*
 * with valid structures and mutated ones (bit flips, boundary values,
 * random reserved fields), on random fds (live and closed dma-bufs,
 * vgem dma-bufs, sync_files, the device fd itself, other files), and
 * racing operations: closing fds, destroying channels, unmapping,
 * releasing imports, opening a second device fd and closing it while
 * other threads use it, attempting to unload the module (which must
 * fail while the device is open), while others queue and dequeue;
 * DQBUFs whose result page is read-only (the frame is put back), a
 * channel destroyed and its id reused by a new one that must have
 * nothing to dequeue, and many files opened at once, a few of which
 * import a buffer. Blocking calls
 * are bounded: DQBUF is non-blocking or waits at most 20 ms, and a
 * per-thread timer signal (no SA_RESTART) interrupts any operation
 * after 300 ms.
 *
 * Thread t of seed S draws from an xorshift64* generator seeded with
 * S * 1000003 + t + 1, so a seed replays the same operations (their
 * interleaving depends on the scheduler). SECONDS bounds the whole run
 * (split evenly between the seeds); a seed that runs out of time reports
 * the sequences it ran.
 *
 * -F: the kernel's allocations fail in the fuzzing threads. Each writes
 * 1 to /proc/thread-self/make-it-fail (root only) before its first
 * operation and 0 after its last, so with the fault-injection task
 * filter on (/sys/kernel/debug/failslab/task-filter) only they see the
 * failures; the main thread, which sets up, checks for leftovers and
 * prints, does not. ENOMEM is then an expected result like any other
 * errno; the checks stay (leftovers, the module, a new channel's frame).
 * Nothing a fuzzing thread reads or writes may be on a file system whose
 * allocations must not fail: a thread turns the failures off around its
 * own messages.
 *
 * Output is TAP: one "ok N seed S sequences K" per seed ("not ok" if a
 * thread could not run, the module unloaded under open files, or buffers
 * or imports stay behind after everything was closed), then
 * "# fuzz: sequences=K ioctls=I seconds=T enomem=E", E the calls that
 * failed with ENOMEM (ioctls of every kind and opens of the device).
 * Everything is closed at the end and the bus bandwidth is put back, so
 * the module unloads after.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <linux/dma-buf.h>
#include <linux/sync_file.h>
#include <linux/mmedge.h>

#include <xf86drm.h>

#include "mmedge_util.h"
#include "mmedge_hostile.h"

#define NBUF		16	/* dma-buf slots (mmedge and vgem) */
#define NFENCE		32	/* sync_file slots */
#define NMAP		8	/* mapping slots */
#define NDEV		3	/* device fds: [0] stays open */
#define NIMP		16	/* import ids */
#define NVFENCE		8	/* vgem fences to signal */
#define SCRATCH		16384	/* bytes for raw ioctl arguments */
#define STATS		"/sys/class/mmedge/mmedge0/stats/"

struct map_slot {
	void *addr;
	size_t len;
};

/* What the threads of one seed share. */
struct world {
	_Atomic int buf[NBUF];
	_Atomic size_t buf_size[NBUF];
	_Atomic int fence[NFENCE];
	_Atomic(struct map_slot *) map[NMAP];
	_Atomic int dev[NDEV];
	_Atomic uint64_t imp[NIMP];
	_Atomic uint32_t vfence[NVFENCE];
	_Atomic uint64_t chan[8];	/* id | dir << 32 | need << 40 */
	int vgem;
	int closed_fd;		/* a number known not to be open */
	_Atomic long next_seq;	/* next sequence to run */
	long nseq;
	uint64_t deadline_ns;
	_Atomic uint64_t ioctls;
	_Atomic long seqs_done;
};

/* Per mmedge ioctl number (_IOC_NR): calls and successes, all seeds. */
#define NR_MAX		0x20
static _Atomic uint64_t nr_calls[NR_MAX], nr_ok[NR_MAX], nr_enomem[NR_MAX];
/* Calls of any kind that failed with ENOMEM. */
static _Atomic uint64_t enomem_total;
/* -F: allocations fail in the fuzzing threads. */
static bool failslab;

static const char *const nr_name[NR_MAX] = {
	[_IOC_NR(MMEDGE_IOC_QUERY_CAPS)] = "QUERY_CAPS",
	[_IOC_NR(MMEDGE_IOC_BUF_ALLOC)] = "BUF_ALLOC",
	[_IOC_NR(MMEDGE_IOC_BUF_INFO)] = "BUF_INFO",
	[_IOC_NR(MMEDGE_IOC_BUF_SYNC)] = "BUF_SYNC",
	[_IOC_NR(MMEDGE_IOC_BUF_IMPORT)] = "BUF_IMPORT",
	[_IOC_NR(MMEDGE_IOC_BUF_RELEASE)] = "BUF_RELEASE",
	[_IOC_NR(MMEDGE_IOC_CHAN_CREATE)] = "CHAN_CREATE",
	[_IOC_NR(MMEDGE_IOC_CHAN_CONFIG)] = "CHAN_CONFIG",
	[_IOC_NR(MMEDGE_IOC_CHAN_DESTROY)] = "CHAN_DESTROY",
	[_IOC_NR(MMEDGE_IOC_QBUF)] = "QBUF",
	[_IOC_NR(MMEDGE_IOC_DQBUF)] = "DQBUF",
	[_IOC_NR(MMEDGE_IOC_CHAN_STATS)] = "CHAN_STATS",
	[_IOC_NR(MMEDGE_IOC_BUS_CONFIG)] = "BUS_CONFIG",
	[_IOC_NR(MMEDGE_IOC_XTS)] = "XTS",
};

struct thr {
	struct world *w;
	uint64_t rng;
	int tid;
	timer_t timer;
	bool has_timer;
	uint8_t *scratch;
	uint8_t *ro;		/* a page made read-only around DQBUFs */
	uint64_t ioctls;
	int err;
	int fail_fd;		/* -F: /proc/thread-self/make-it-fail */
};

static uint64_t rnd(struct thr *t)
{
	uint64_t x = t->rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	t->rng = x;
	return x * 0x2545F4914F6CDD1DULL;
}

static uint32_t rn(struct thr *t, uint32_t n)
{
	return n ? (uint32_t)(rnd(t) % n) : 0;
}

static bool chance(struct thr *t, unsigned int percent)
{
	return rn(t, 100) < percent;
}

static uint64_t boundary(struct thr *t)
{
	static const uint64_t v[] = {
		0, 1, 2, 63, 64, 4095, 4096, 65536, 0x7fffffff, 0x80000000,
		0xffffffff, 0x100000000ULL, 1ULL << 63, UINT64_MAX,
		UINT64_MAX - 1, 100000000000ULL, 100000000001ULL,
	};

	return v[rn(t, sizeof(v) / sizeof(v[0]))];
}

/* Mutates @len bytes at @p: bit flips, a boundary value, reserved noise. */
static void mutate(struct thr *t, void *p, size_t len)
{
	uint8_t *b = p;
	unsigned int i, n;

	switch (rn(t, 4)) {
	case 0:
		n = 1 + rn(t, 4);
		for (i = 0; i < n; i++)
			b[rn(t, len)] ^= 1u << rn(t, 8);
		break;
	case 1: {
		size_t off = rn(t, len / 4) * 4;
		uint64_t v = boundary(t);

		memcpy(b + off, &v, len - off >= 8 ? 8 : 4);
		break;
	}
	case 2: {
		/* The tail is where the reserved fields are. */
		size_t off = len > 16 ? len - 8 - rn(t, 9) : 0;

		for (i = off; i < len; i++)
			b[i] = rnd(t);
		break;
	}
	default:
		for (i = 0; i < len; i++)
			if (chance(t, 10))
				b[i] = rnd(t);
		break;
	}
}

/* -F: the kernel's allocations fail (@on) in this thread or not. */
static int fail_allocs(struct thr *t, bool on)
{
	if (t->fail_fd < 0)
		return 0;
	if (pwrite(t->fail_fd, on ? "1" : "0", 1, 0) != 1)
		return -errno;
	return 0;
}

/* A message from a fuzzing thread, written with the failures off. */
#define fz_note(t, ...) do { \
	fail_allocs(t, false); \
	fprintf(stderr, __VA_ARGS__); \
	fail_allocs(t, true); \
} while (0)

/* open_dev(), counting ENOMEM. */
static int fz_open_dev(void)
{
	int fd = open_dev();

	if (fd < 0 && errno == ENOMEM)
		atomic_fetch_add(&enomem_total, 1);
	return fd;
}

static void on_timer(int sig)
{
	(void)sig;
}

static void arm(struct thr *t, unsigned int ms)
{
	struct itimerspec its = {
		.it_value = { ms / 1000, (ms % 1000) * 1000000L },
	};

	if (t->has_timer)
		timer_settime(t->timer, 0, &its, NULL);
}

static void disarm(struct thr *t)
{
	struct itimerspec its = { 0 };

	if (t->has_timer)
		timer_settime(t->timer, 0, &its, NULL);
}

/* One raw ioctl: no retry on EINTR (signals are part of the test). */
static int fz_ioctl(struct thr *t, int fd, unsigned long cmd, void *arg)
{
	int ret;

	t->ioctls++;
	ret = ioctl(fd, cmd, arg);
	ret = ret < 0 ? -errno : ret;
	if (ret == -ENOMEM)
		atomic_fetch_add(&enomem_total, 1);
	if (_IOC_TYPE(cmd) == MMEDGE_IOC_MAGIC && _IOC_NR(cmd) < NR_MAX) {
		atomic_fetch_add(&nr_calls[_IOC_NR(cmd)], 1);
		if (ret >= 0)
			atomic_fetch_add(&nr_ok[_IOC_NR(cmd)], 1);
		else if (ret == -ENOMEM)
			atomic_fetch_add(&nr_enomem[_IOC_NR(cmd)], 1);
	}
	return ret;
}

static int pick_dev(struct thr *t)
{
	int i = chance(t, 85) ? 0 : 1 + rn(t, NDEV - 1);
	int fd = atomic_load(&t->w->dev[i]);

	return fd >= 0 ? fd : atomic_load(&t->w->dev[0]);
}

/* Any fd, mostly a dma-buf: live, closed, a fence, the device, junk. */
static int pick_fd(struct thr *t)
{
	struct world *w = t->w;
	unsigned int r = rn(t, 100);

	if (r < 70)
		return atomic_load(&w->buf[rn(t, NBUF)]);
	if (r < 78)
		return atomic_load(&w->fence[rn(t, NFENCE)]);
	if (r < 84)
		return pick_dev(t);
	if (r < 88)
		return w->closed_fd;
	if (r < 92)
		return -1;
	if (r < 94)
		return (int)rn(t, 64);
	if (r < 96 && w->vgem >= 0)
		return w->vgem;
	return (int)boundary(t);
}

/* Puts @fd in slot @i of @slots, closing what was there. */
static void slot_put(_Atomic int *slots, unsigned int i, int fd)
{
	int old = atomic_exchange(&slots[i], fd);

	if (old >= 0)
		close(old);
}

static uint32_t pick_chan(struct thr *t)
{
	if (chance(t, 80))
		return (uint32_t)atomic_load(&t->w->chan[rn(t, 8)]);
	return chance(t, 80) ? 1 + rn(t, 64) : (uint32_t)boundary(t);
}

static struct mmedge_src_config rand_src(struct thr *t)
{
	struct mmedge_src_config s;

	memset(&s, 0, sizeof(s));
	switch (rn(t, 3)) {
	case 0:
		s.type = MMEDGE_SRC_CAMERA;
		s.fourcc = chance(t, 70) ? MMEDGE_FMT_GREY :
			   chance(t, 50) ? MMEDGE_FMT_RGB24 : MMEDGE_FMT_NV12;
		s.width = 16 << rn(t, chance(t, 80) ? 2 : 4);
		s.height = 16 << rn(t, chance(t, 80) ? 2 : 4);
		s.rate_num = 10 + rn(t, 231);
		s.rate_den = 1;
		s.signal = rn(t, 2);	/* MMEDGE_PATTERN_MOVING or STATIC */
		break;
	case 1:
		s.type = MMEDGE_SRC_MIC;
		s.fourcc = MMEDGE_FMT_S16LE;
		s.rate_num = 8000 + rn(t, 40000);
		s.rate_den = 1;
		s.period = 256 + rn(t, 2048);
		s.signal = rn(t, 4);	/* tone, chirp, silence, noise */
		break;
	default:
		s.type = MMEDGE_SRC_IMU;
		s.fourcc = MMEDGE_FMT_IMU6;
		s.rate_num = 100 + rn(t, 1000);
		s.rate_den = 1;
		s.period = 1 + rn(t, 64);
		break;
	}
	return s;
}

static void op_buf_alloc(struct thr *t)
{
	static const size_t sizes[] = { 4096, 8192, 16384, 65536, 12288,
					270336, 1 << 20, 4 << 20 };
	struct mmedge_buf_alloc a;
	int ret;

	memset(&a, 0, sizeof(a));
	a.size = sizes[rn(t, chance(t, 90) ? 5 : 8)];
	a.flags = chance(t, 70) ? 0 : rn(t, 3) | (chance(t, 30) ?
						   MMEDGE_BUF_CONTIG : 0);
	a.fd_flags = O_CLOEXEC | (chance(t, 80) ? O_RDWR :
				  chance(t, 50) ? O_RDONLY : O_WRONLY);
	if (chance(t, 10))
		mutate(t, &a, sizeof(a));
	/* A mutated size within the cap would take the VM's memory. */
	if (a.size > (16 << 20) && a.size <= (256ULL << 20))
		a.size = 4096;
	ret = fz_ioctl(t, pick_dev(t), MMEDGE_IOC_BUF_ALLOC, &a);
	if (!ret) {
		unsigned int i = rn(t, NBUF);

		atomic_store(&t->w->buf_size[i], a.alloc_size);
		slot_put(t->w->buf, i, a.fd);
	}
}

static void op_buf_info(struct thr *t)
{
	struct mmedge_buf_info in;

	memset(&in, 0, sizeof(in));
	in.fd = pick_fd(t);
	if (chance(t, 15))
		mutate(t, &in, sizeof(in));
	fz_ioctl(t, pick_dev(t), MMEDGE_IOC_BUF_INFO, &in);
}

static void op_buf_sync(struct thr *t)
{
	struct mmedge_buf_sync s;
	unsigned int i = rn(t, NBUF);
	size_t size = atomic_load(&t->w->buf_size[i]);

	memset(&s, 0, sizeof(s));
	s.fd = chance(t, 85) ? atomic_load(&t->w->buf[i]) : pick_fd(t);
	s.flags = rn(t, 8);
	s.offset = size ? rn(t, size) : 0;
	s.len = size > s.offset ? 1 + rn(t, size - s.offset) : 1;
	if (chance(t, 15))
		mutate(t, &s, sizeof(s));
	arm(t, 300);
	fz_ioctl(t, pick_dev(t), MMEDGE_IOC_BUF_SYNC, &s);
	disarm(t);
}

static void op_buf_import(struct thr *t)
{
	struct mmedge_buf_import in;

	memset(&in, 0, sizeof(in));
	in.fd = pick_fd(t);
	if (chance(t, 10))
		mutate(t, &in, sizeof(in));
	if (!fz_ioctl(t, pick_dev(t), MMEDGE_IOC_BUF_IMPORT, &in))
		atomic_store(&t->w->imp[rn(t, NIMP)], in.id);
}

static void op_buf_release(struct thr *t)
{
	struct mmedge_buf_release r;

	memset(&r, 0, sizeof(r));
	r.id = chance(t, 80) ? atomic_exchange(&t->w->imp[rn(t, NIMP)], 0) :
			       rn(t, 2048);
	if (chance(t, 10))
		mutate(t, &r, sizeof(r));
	fz_ioctl(t, pick_dev(t), MMEDGE_IOC_BUF_RELEASE, &r);
}

static void op_chan_create(struct thr *t)
{
	struct mmedge_chan_create c;

	memset(&c, 0, sizeof(c));
	c.dir = rn(t, 3);
	if (c.dir == MMEDGE_CHAN_CAPTURE) {
		c.src = rand_src(t);
		c.overrun = rn(t, 2);
	}
	if (chance(t, 20))
		c.weight = 1 + rn(t, 200);
	if (chance(t, 10))
		c.cap = 1000000 + rnd(t) % 1000000000;
	if (chance(t, 10))
		c.segment = 64 * (1 + rn(t, 1024));
	if (chance(t, 20))
		snprintf((char *)c.name, sizeof(c.name), "fz%u", rn(t, 100));
	if (chance(t, 20))
		mutate(t, &c, sizeof(c));
	if (!fz_ioctl(t, pick_dev(t), MMEDGE_IOC_CHAN_CREATE, &c))
		atomic_store(&t->w->chan[rn(t, 8)], c.id |
			     (uint64_t)(c.dir & 0xff) << 32 |
			     (uint64_t)(c.meta_offset +
					sizeof(struct mmedge_frame_meta)) << 40);
}

static void op_chan_config(struct thr *t)
{
	struct mmedge_chan_config c;

	memset(&c, 0, sizeof(c));
	c.id = pick_chan(t);
	c.set = rn(t, 8);
	c.weight = chance(t, 70) ? 1 + rn(t, 150) : (uint32_t)boundary(t);
	c.class = rn(t, 3);
	c.cap = chance(t, 70) ? rnd(t) % 1000000000 : boundary(t);
	if (chance(t, 15))
		mutate(t, &c, sizeof(c));
	fz_ioctl(t, pick_dev(t), MMEDGE_IOC_CHAN_CONFIG, &c);
}

static void op_chan_destroy(struct thr *t)
{
	struct mmedge_chan_destroy d;

	memset(&d, 0, sizeof(d));
	d.id = pick_chan(t);
	if (chance(t, 10))
		mutate(t, &d, sizeof(d));
	fz_ioctl(t, pick_dev(t), MMEDGE_IOC_CHAN_DESTROY, &d);
}

/*
 * A QBUF that the channel's direction and the buffers' sizes allow (it
 * may still meet a busy, closed or replaced buffer); 0 if no channel.
 */
static int qbuf_fit(struct thr *t, struct mmedge_qbuf *q)
{
	uint64_t c = atomic_load(&t->w->chan[rn(t, 8)]);
	unsigned int i = rn(t, NBUF), k = rn(t, NBUF), n;
	size_t size = atomic_load(&t->w->buf_size[i]);
	size_t need = c >> 40, ssize;

	if (!(uint32_t)c)
		return 0;
	for (n = 0; n < NBUF && size < need; n++) {
		i = (i + 1) % NBUF;
		size = atomic_load(&t->w->buf_size[i]);
	}
	q->chan = (uint32_t)c;
	q->fd = atomic_load(&t->w->buf[i]);
	switch ((c >> 32) & 0xff) {
	case MMEDGE_CHAN_CAPTURE:
		break;
	case MMEDGE_CHAN_FEED:
		q->bytesused = size ? 1 + rn(t, size) : 1;
		break;
	default:
		if (k == i)
			k = (k + 1) % NBUF;
		ssize = atomic_load(&t->w->buf_size[k]);
		q->flags |= MMEDGE_QBUF_SRC;
		q->src_fd = atomic_load(&t->w->buf[k]);
		/* The destination holds ALIGN(bytesused, 64) + the record. */
		n = size > 256 + 64 ? size - 256 - 64 : 1;
		q->bytesused = 1 + rn(t, ssize && ssize < n ? ssize : n);
		break;
	}
	return 1;
}

static void op_qbuf(struct thr *t)
{
	struct mmedge_qbuf q;
	int ret;

	memset(&q, 0, sizeof(q));
	q.flags = chance(t, 50) ? MMEDGE_QBUF_FENCE : 0;
	q.cookie = rnd(t);
	if (chance(t, 60) && qbuf_fit(t, &q))
		goto go;
	q.chan = pick_chan(t);
	q.fd = pick_fd(t);
	if (chance(t, 40)) {
		/* A feed or copy job. */
		q.bytesused = 1 + rn(t, 8192);
		if (chance(t, 50)) {
			q.flags |= MMEDGE_QBUF_SRC;
			q.src_fd = pick_fd(t);
		}
	}
go:
	if (chance(t, 15))
		mutate(t, &q, sizeof(q));
	arm(t, 300);
	ret = fz_ioctl(t, pick_dev(t), MMEDGE_IOC_QBUF, &q);
	disarm(t);
	if (!ret && q.fence_fd >= 0)
		slot_put(t->w->fence, rn(t, NFENCE), q.fence_fd);
}

static void op_dqbuf(struct thr *t)
{
	struct mmedge_dqbuf d;

	memset(&d, 0, sizeof(d));
	d.chan = pick_chan(t);
	if (chance(t, 50))
		d.flags = MMEDGE_DQBUF_NONBLOCK;
	else
		d.timeout_ms = 1 + rn(t, 20);
	if (chance(t, 10))
		mutate(t, &d, sizeof(d));
	/* Never wait forever, whatever the mutation did. */
	if (!(d.flags & MMEDGE_DQBUF_NONBLOCK) &&
	    (!d.timeout_ms || d.timeout_ms > 20))
		d.timeout_ms = 1 + rn(t, 20);
	arm(t, 300);
	fz_ioctl(t, pick_dev(t), MMEDGE_IOC_DQBUF, &d);
	disarm(t);
}

static void op_small(struct thr *t)
{
	union {
		struct mmedge_caps caps;
		struct mmedge_chan_stats st;
		struct mmedge_bus_config bus;
		struct mmedge_xts xts;
	} u;
	unsigned long cmd;

	memset(&u, 0, sizeof(u));
	switch (rn(t, 4)) {
	case 0:
		cmd = MMEDGE_IOC_QUERY_CAPS;
		break;
	case 1:
		cmd = MMEDGE_IOC_CHAN_STATS;
		u.st.id = pick_chan(t);
		break;
	case 2:
		cmd = MMEDGE_IOC_BUS_CONFIG;
		/* Rarely set, and only to a bus fast enough for the rest. */
		if (chance(t, 5)) {
			u.bus.set = 1;
			u.bus.bandwidth = 50000000ULL + rnd(t) % 2000000000ULL;
		}
		break;
	default:
		cmd = MMEDGE_IOC_XTS;
		u.xts.n_samples = 1 + rn(t, 16);
		break;
	}
	if (chance(t, 15) && cmd != MMEDGE_IOC_BUS_CONFIG)
		mutate(t, &u, _IOC_SIZE(cmd));
	fz_ioctl(t, pick_dev(t), cmd, &u);
}

/* An mmedge ioctl number with a random size, direction and payload. */
static void op_raw(struct thr *t)
{
	unsigned int dir = rn(t, 4), nr = rn(t, 0x12);
	unsigned int size = chance(t, 50) ? rn(t, 1024) : rn(t, SCRATCH);
	unsigned long cmd = _IOC(dir, MMEDGE_IOC_MAGIC, nr, size);
	void *arg = t->scratch;
	unsigned int i;

	for (i = 0; i < size; i++)
		t->scratch[i] = chance(t, 80) ? 0 : rnd(t);
	if (chance(t, 5))
		arg = chance(t, 50) ? NULL : (void *)(uintptr_t)boundary(t);
	arm(t, 300);
	fz_ioctl(t, pick_fd(t) >= 0 && chance(t, 20) ? pick_fd(t) :
		 pick_dev(t), cmd, arg);
	disarm(t);
}

static void op_close(struct thr *t)
{
	if (chance(t, 60))
		slot_put(t->w->buf, rn(t, NBUF), -1);
	else
		slot_put(t->w->fence, rn(t, NFENCE), -1);
}

static void op_mmap(struct thr *t)
{
	unsigned int i = rn(t, NBUF), m = rn(t, NMAP);
	size_t len = atomic_load(&t->w->buf_size[i]);
	int fd = atomic_load(&t->w->buf[i]);
	struct map_slot *s, *old;
	void *p;

	if (!len || fd < 0)
		return;
	if (chance(t, 20))
		len = 4096 * (1 + rn(t, 4));
	p = mmap(NULL, len, PROT_READ | (chance(t, 70) ? PROT_WRITE : 0),
		 MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return;
	s = malloc(sizeof(*s));
	if (!s) {
		munmap(p, len);
		return;
	}
	s->addr = p;
	s->len = len;
	old = atomic_exchange(&t->w->map[m], s);
	if (old) {
		munmap(old->addr, old->len);
		free(old);
	}
}

static void op_munmap(struct thr *t)
{
	struct map_slot *s = atomic_exchange(&t->w->map[rn(t, NMAP)], NULL);

	if (s) {
		munmap(s->addr, s->len);
		free(s);
	}
}

static void op_dmabuf(struct thr *t)
{
	int fd = pick_fd(t);

	arm(t, 300);
	if (chance(t, 50)) {
		struct dma_buf_sync s = { .flags = rn(t, 8) };

		fz_ioctl(t, fd, DMA_BUF_IOCTL_SYNC, &s);
	} else {
		struct dma_buf_export_sync_file e = {
			.flags = 1 + rn(t, 3), .fd = -1,
		};

		if (!fz_ioctl(t, fd, DMA_BUF_IOCTL_EXPORT_SYNC_FILE, &e) &&
		    e.fd >= 0)
			slot_put(t->w->fence, rn(t, NFENCE), e.fd);
	}
	disarm(t);
}

static void op_fence(struct thr *t)
{
	int fd = atomic_load(&t->w->fence[rn(t, NFENCE)]);
	struct sync_fence_info fi[4];
	struct sync_file_info info;
	struct pollfd p = { .fd = fd, .events = POLLIN };

	switch (rn(t, 3)) {
	case 0:
		memset(&info, 0, sizeof(info));
		info.num_fences = chance(t, 50) ? 4 : 0;
		info.sync_fence_info = (uintptr_t)fi;
		fz_ioctl(t, fd, SYNC_IOC_FILE_INFO, &info);
		break;
	case 1:
		poll(&p, 1, rn(t, 5));
		break;
	default: {
		struct sync_merge_data m;

		memset(&m, 0, sizeof(m));
		strcpy(m.name, "fz");
		m.fd2 = atomic_load(&t->w->fence[rn(t, NFENCE)]);
		if (!fz_ioctl(t, fd, SYNC_IOC_MERGE, &m) && m.fence >= 0)
			slot_put(t->w->fence, rn(t, NFENCE), m.fence);
		break;
	}
	}
}

static void op_poll_dev(struct thr *t)
{
	struct pollfd p = { .fd = pick_dev(t), .events = POLLIN };

	poll(&p, 1, rn(t, 5));
}

/* A second device fd, opened and closed while others may use it. */
static void op_dev2(struct thr *t)
{
	unsigned int i = 1 + rn(t, NDEV - 1);

	if (chance(t, 50)) {
		int fd = fz_open_dev();

		if (fd >= 0)
			slot_put(t->w->dev, i, fd);
	} else {
		slot_put(t->w->dev, i, -1);
	}
}

/*
 * An rmmod attempt while the device is open: it must fail (EWOULDBLOCK:
 * our files hold the module). One that succeeds is a failure of the seed.
 */
static void op_rmmod(struct thr *t)
{
	int ret;

	if (geteuid() != 0)
		return;
	ret = mod_delete("mmedge");
	if (!mod_busy_errno(ret) && ret != -ENOENT &&
	    !(failslab && ret == -ENOMEM)) {
		fz_note(t, "# delete_module(mmedge) with the device open: %d\n",
			ret);
		t->err = ret ? ret : -EBUSY;
	}
}

static void op_vgem(struct thr *t)
{
	struct world *w = t->w;
	struct drm_mode_create_dumb cd;
	int fd;

	if (w->vgem < 0)
		return;
	switch (rn(t, 3)) {
	case 0:
		memset(&cd, 0, sizeof(cd));
		cd.width = 1024;
		cd.bpp = 32;
		cd.height = 1 + rn(t, 16);
		if (fz_ioctl(t, w->vgem, DRM_IOCTL_MODE_CREATE_DUMB, &cd))
			return;
		if (!drmPrimeHandleToFD(w->vgem, cd.handle, DRM_CLOEXEC |
					(chance(t, 80) ? DRM_RDWR : 0), &fd)) {
			unsigned int i = rn(t, NBUF);

			atomic_store(&w->buf_size[i], (size_t)cd.size);
			slot_put(w->buf, i, fd);
		}
		/* The dma-buf keeps the object; the handle may go. */
		if (chance(t, 30)) {
			struct drm_vgem_fence_attach a = {
				.handle = cd.handle,
				.flags = chance(t, 50) ? VGEM_FENCE_WRITE : 0,
			};

			if (!fz_ioctl(t, w->vgem, DRM_IOCTL_VGEM_FENCE_ATTACH,
				      &a)) {
				uint32_t old = atomic_exchange(
					&w->vfence[rn(t, NVFENCE)], a.out_fence);
				struct drm_vgem_fence_signal s = { .fence = old };

				if (old)
					fz_ioctl(t, w->vgem,
						 DRM_IOCTL_VGEM_FENCE_SIGNAL, &s);
			}
		}
		drmCloseBufferHandle(w->vgem, cd.handle);
		break;
	case 1: {
		/* vgem imports one of ours (or anything). */
		uint32_t h;

		if (!drmPrimeFDToHandle(w->vgem, pick_fd(t), &h))
			drmCloseBufferHandle(w->vgem, h);
		break;
	}
	default: {
		struct drm_vgem_fence_signal s = {
			.fence = atomic_exchange(&w->vfence[rn(t, NVFENCE)], 0),
		};

		if (s.fence)
			fz_ioctl(t, w->vgem, DRM_IOCTL_VGEM_FENCE_SIGNAL, &s);
		break;
	}
	}
}

/*
 * DQBUF into a read-only page: the copy to userspace fails (EFAULT) and
 * the frame goes back to its channel for the next DQBUF.
 */
static void op_dqbuf_fault(struct thr *t)
{
	struct mmedge_dqbuf *d = (struct mmedge_dqbuf *)t->ro;

	if (!t->ro || mprotect(t->ro, 4096, PROT_READ | PROT_WRITE))
		return;
	memset(d, 0, sizeof(*d));
	d->chan = pick_chan(t);
	d->flags = MMEDGE_DQBUF_NONBLOCK;
	if (mprotect(t->ro, 4096, PROT_READ))
		return;
	arm(t, 300);
	fz_ioctl(t, pick_dev(t), MMEDGE_IOC_DQBUF, d);
	disarm(t);
}

/*
 * On a file of its own: a feed job completes, a DQBUF's copy faults
 * (the frame is put back), the channel is destroyed and a new one takes
 * its id. The new channel was given nothing: a DQBUF that returns a
 * frame there fails the seed.
 */
static void op_reuse(struct thr *t)
{
	struct mmedge_chan_create c;
	struct mmedge_qbuf q;
	struct mmedge_dqbuf d;
	int dev, buf, i, ret;

	buf = atomic_load(&t->w->buf[rn(t, NBUF)]);
	dev = fz_open_dev();
	if (dev < 0)
		return;
	memset(&c, 0, sizeof(c));
	c.dir = MMEDGE_CHAN_FEED;
	if (fz_ioctl(t, dev, MMEDGE_IOC_CHAN_CREATE, &c))
		goto out;
	memset(&q, 0, sizeof(q));
	q.chan = c.id;
	q.fd = buf;
	q.bytesused = 1 + rn(t, 64);
	arm(t, 300);
	ret = fz_ioctl(t, dev, MMEDGE_IOC_QBUF, &q);
	disarm(t);
	if (!ret && t->ro) {
		/* Until the frame is done, at most 20 ms. */
		for (i = 0; i < 20; i++) {
			struct mmedge_chan_stats st = { .id = c.id };

			if (!fz_ioctl(t, dev, MMEDGE_IOC_CHAN_STATS, &st) &&
			    st.frames)
				break;
			sleep_ms(1);
		}
		if (!mprotect(t->ro, 4096, PROT_READ | PROT_WRITE)) {
			memset(t->ro, 0, sizeof(d));
			((struct mmedge_dqbuf *)t->ro)->chan = c.id;
			((struct mmedge_dqbuf *)t->ro)->flags =
				MMEDGE_DQBUF_NONBLOCK;
			if (!mprotect(t->ro, 4096, PROT_READ))
				fz_ioctl(t, dev, MMEDGE_IOC_DQBUF, t->ro);
		}
	}
	{
		struct mmedge_chan_destroy x = { .id = c.id };

		fz_ioctl(t, dev, MMEDGE_IOC_CHAN_DESTROY, &x);
	}
	memset(&c, 0, sizeof(c));
	c.dir = MMEDGE_CHAN_FEED;
	if (fz_ioctl(t, dev, MMEDGE_IOC_CHAN_CREATE, &c))
		goto out;
	memset(&d, 0, sizeof(d));
	d.chan = c.id;
	d.flags = MMEDGE_DQBUF_NONBLOCK;
	if (!fz_ioctl(t, dev, MMEDGE_IOC_DQBUF, &d)) {
		fz_note(t, "# a new channel dequeued cookie %#llx seq %llu\n",
			(unsigned long long)d.cookie,
			(unsigned long long)d.sequence);
		t->err = -EEXIST;
	}
out:
	close(dev);
}

/*
 * Many files at once, each importing a buffer or none; then all closed.
 * Every import maps the exporter's pages for the hub again, and the
 * DMA-API debug layer reports more than 7 live mappings of one cacheline
 * (ACTIVE_CACHELINE_MAX_OVERLAP); the other threads import the same
 * buffers, so this keeps its own share to 4 of them.
 */
static void op_opens(struct thr *t)
{
	unsigned int n = 2 + rn(t, 31), i, k, live = 0;
	int fds[32];

	for (i = 0; i < n; i++) {
		fds[i] = fz_open_dev();
		if (fds[i] < 0)
			break;
		for (k = rn(t, 2); k > 0 && live < 4; k--, live++) {
			struct mmedge_buf_import in;

			memset(&in, 0, sizeof(in));
			in.fd = atomic_load(&t->w->buf[rn(t, NBUF)]);
			fz_ioctl(t, fds[i], MMEDGE_IOC_BUF_IMPORT, &in);
		}
	}
	while (i > 0)
		close(fds[--i]);
}

static void one_op(struct thr *t)
{
	unsigned int r = rn(t, 100);

	if (r < 8)
		op_buf_alloc(t);
	else if (r < 12)
		op_buf_info(t);
	else if (r < 16)
		op_buf_sync(t);
	else if (r < 20)
		op_buf_import(t);
	else if (r < 23)
		op_buf_release(t);
	else if (r < 30)
		op_chan_create(t);
	else if (r < 34)
		op_chan_config(t);
	else if (r < 38)
		op_chan_destroy(t);
	else if (r < 54)
		op_qbuf(t);
	else if (r < 66)
		op_dqbuf(t);
	else if (r < 70)
		op_small(t);
	else if (r < 75)
		op_raw(t);
	else if (r < 80)
		op_close(t);
	else if (r < 84)
		op_mmap(t);
	else if (r < 87)
		op_munmap(t);
	else if (r < 90)
		op_dmabuf(t);
	else if (r < 94)
		op_fence(t);
	else if (r < 95)
		op_poll_dev(t);
	else if (r < 97)
		op_dev2(t);
	else if (r < 99 || rn(t, 4))
		op_vgem(t);
	else
		op_rmmod(t);
	/* The paths of the second hostile round, 1 in 25 operations each. */
	switch (rn(t, 25)) {
	case 0:
		op_dqbuf_fault(t);
		break;
	case 1:
		op_reuse(t);
		break;
	case 2:
		if (!rn(t, 4))
			op_opens(t);
		break;
	}
}

static void *thread_main(void *p)
{
	struct thr *t = p;
	struct world *w = t->w;
	struct sigevent sev;

	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = SIGUSR1;
	sev._sigev_un._tid = syscall(SYS_gettid);
	t->has_timer = !timer_create(CLOCK_MONOTONIC, &sev, &t->timer);
	t->scratch = calloc(1, SCRATCH);
	if (!t->scratch) {
		t->err = -ENOMEM;
		return NULL;
	}
	t->ro = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (t->ro == MAP_FAILED)
		t->ro = NULL;
	t->fail_fd = -1;
	if (failslab) {
		t->fail_fd = open("/proc/thread-self/make-it-fail",
				  O_WRONLY | O_CLOEXEC);
		if (t->fail_fd < 0 || fail_allocs(t, true)) {
			t->err = -errno;
			goto out;
		}
	}

	for (;;) {
		long seq = atomic_fetch_add(&w->next_seq, 1);
		unsigned int n, i;

		if (seq >= w->nseq || now_ns() >= w->deadline_ns)
			break;
		n = 1 + rn(t, 32);
		for (i = 0; i < n && now_ns() < w->deadline_ns; i++)
			one_op(t);
		atomic_fetch_add(&w->seqs_done, 1);
	}
out:
	fail_allocs(t, false);
	if (t->fail_fd >= 0)
		close(t->fail_fd);
	free(t->scratch);
	if (t->ro)
		munmap(t->ro, 4096);
	if (t->has_timer)
		timer_delete(t->timer);
	atomic_fetch_add(&w->ioctls, t->ioctls);
	return NULL;
}

static void world_close(struct world *w)
{
	unsigned int i;

	for (i = 0; i < NMAP; i++) {
		struct map_slot *s = atomic_exchange(&w->map[i], NULL);

		if (s) {
			munmap(s->addr, s->len);
			free(s);
		}
	}
	if (w->vgem >= 0)
		for (i = 0; i < NVFENCE; i++) {
			struct drm_vgem_fence_signal s = {
				.fence = atomic_exchange(&w->vfence[i], 0),
			};

			if (s.fence)
				ioctl(w->vgem, DRM_IOCTL_VGEM_FENCE_SIGNAL, &s);
		}
	for (i = 0; i < NFENCE; i++)
		slot_put(w->fence, i, -1);
	for (i = 0; i < NBUF; i++)
		slot_put(w->buf, i, -1);
	for (i = 0; i < NDEV; i++)
		slot_put(w->dev, i, -1);
	if (w->vgem >= 0)
		close(w->vgem);
	w->vgem = -1;
}

/* After everything closed: no buffer or import of ours is left. */
static int leftovers(char *why, size_t len)
{
	long long b = 0, im = 0;
	int ms;

	for (ms = 0; ms < 3000; ms += 50) {
		if (read_ll(STATS "buffers", &b) || read_ll(STATS "imports", &im))
			return 0;
		if (!b && !im)
			return 0;
		sleep_ms(50);
	}
	snprintf(why, len, "%lld buffers and %lld imports left", b, im);
	return 1;
}

static void usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s [-s SEED|FIRST..LAST] [-n SEQUENCES] [-t SECONDS] [-j THREADS] [-F]\n",
		argv0);
	exit(2);
}

int main(int argc, char **argv)
{
	unsigned long long seed0 = 1, seed1 = 1, s;
	long nseq = 100, threads = 4;
	double seconds = 60;
	uint64_t t_start, total_ioctls = 0;
	long total_seqs = 0;
	__u64 bus0 = 0;
	struct sigaction sa;
	int opt, failed = 0, dev, n = 0;
	char *dots;

	while ((opt = getopt(argc, argv, "s:n:t:j:F")) != -1) {
		switch (opt) {
		case 'F':
			failslab = true;
			break;
		case 's':
			seed0 = strtoull(optarg, &dots, 0);
			seed1 = seed0;
			if (!strncmp(dots, "..", 2))
				seed1 = strtoull(dots + 2, NULL, 0);
			break;
		case 'n':
			nseq = atol(optarg);
			break;
		case 't':
			seconds = atof(optarg);
			break;
		case 'j':
			threads = atol(optarg);
			break;
		default:
			usage(argv[0]);
		}
	}
	if (seed1 < seed0 || nseq < 1 || threads < 1 || threads > 64 ||
	    seconds <= 0)
		usage(argv[0]);

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_timer;	/* no SA_RESTART: waits are cut */
	sigaction(SIGUSR1, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	printf("TAP version 13\n");
	printf("1..%llu # mmedge_fuzz seeds %llu..%llu, %ld sequences per seed, %ld threads, %.0f s%s\n",
	       seed1 - seed0 + 1, seed0, seed1, nseq, threads, seconds,
	       failslab ? ", allocations failing in the threads" : "");
	fflush(stdout);

	dev = open_dev();
	if (dev < 0) {
		for (s = seed0; s <= seed1; s++)
			printf("ok %d # SKIP %s: %s\n", ++n, DEVPATH,
			       strerror(errno));
		printf("# fuzz: sequences=0 ioctls=0 seconds=0\n");
		return 4;
	}
	bus_get(dev, &bus0);
	close(dev);

	t_start = now_ns();
	for (s = seed0; s <= seed1; s++) {
		double share = seconds / (double)(seed1 - seed0 + 1);
		struct world *w = calloc(1, sizeof(*w));
		pthread_t th[64];
		struct thr *tt = calloc(threads, sizeof(*tt));
		char why[128] = "";
		bool bad = false;
		unsigned int i;
		long j;

		if (!w || !tt) {
			printf("not ok %d seed %llu: out of memory\n", ++n, s);
			failed++;
			free(w);
			free(tt);
			continue;
		}
		for (i = 0; i < NBUF; i++)
			atomic_init(&w->buf[i], -1);
		for (i = 0; i < NFENCE; i++)
			atomic_init(&w->fence[i], -1);
		for (i = 0; i < NDEV; i++)
			atomic_init(&w->dev[i], -1);
		atomic_store(&w->dev[0], open_dev());
		w->vgem = open_vgem();
		/* A number no file has (below the default limit of 1024). */
		w->closed_fd = 1000;
		w->nseq = nseq;
		w->deadline_ns = now_ns() + (uint64_t)(share * 1e9);
		if (atomic_load(&w->dev[0]) < 0) {
			printf("not ok %d seed %llu: open %s: %s\n", ++n, s,
			       DEVPATH, strerror(errno));
			failed++;
			world_close(w);
			free(w);
			free(tt);
			continue;
		}
		for (j = 0; j < threads; j++) {
			tt[j].w = w;
			tt[j].tid = j;
			tt[j].rng = s * 1000003ULL + j + 1;
			if (pthread_create(&th[j], NULL, thread_main, &tt[j])) {
				tt[j].err = -errno;
				th[j] = 0;
			}
		}
		for (j = 0; j < threads; j++) {
			if (th[j])
				pthread_join(th[j], NULL);
			if (tt[j].err) {
				bad = true;
				snprintf(why, sizeof(why), "thread %ld: %s", j,
					 strerror(-tt[j].err));
			}
		}
		world_close(w);
		dev = open_dev();
		if (dev >= 0) {
			if (bus0)
				bus_set(dev, bus0);
			close(dev);
		}
		if (!bad && leftovers(why, sizeof(why)))
			bad = true;
		total_seqs += atomic_load(&w->seqs_done);
		total_ioctls += atomic_load(&w->ioctls);
		printf("%s %d seed %llu sequences %ld ioctls %" PRIu64 "%s%s\n",
		       bad ? "not ok" : "ok", ++n, s, atomic_load(&w->seqs_done),
		       (uint64_t)atomic_load(&w->ioctls), bad ? " # " : "", why);
		fflush(stdout);
		failed += bad;
		free(w);
		free(tt);
	}
	/* What got through, so a run shows it reached the deep paths. */
	for (opt = 0; opt < NR_MAX; opt++) {
		char nm[16];

		if (!atomic_load(&nr_calls[opt]))
			continue;
		if (nr_name[opt])
			snprintf(nm, sizeof(nm), "%s", nr_name[opt]);
		else
			snprintf(nm, sizeof(nm), "nr 0x%02x", opt);
		printf("# %s: calls %" PRIu64 " succeeded %" PRIu64
		       " enomem %" PRIu64 "\n", nm,
		       (uint64_t)atomic_load(&nr_calls[opt]),
		       (uint64_t)atomic_load(&nr_ok[opt]),
		       (uint64_t)atomic_load(&nr_enomem[opt]));
	}
	printf("# fuzz: sequences=%ld ioctls=%" PRIu64 " seconds=%.1f enomem=%" PRIu64 "\n",
	       total_seqs, total_ioctls, (now_ns() - t_start) / 1e9,
	       (uint64_t)atomic_load(&enomem_total));
	printf("# Totals: pass:%d fail:%d xfail:0 xpass:0 skip:0 error:0\n",
	       n - failed, failed);
	return failed ? 1 : 0;
}

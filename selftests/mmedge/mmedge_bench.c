// SPDX-License-Identifier: GPL-2.0
/*
 * mmedge_bench: what mmedge buffers cost next to plain memory.
 *
 *  (a) allocate + export + mmap + first touch (one byte per page) per MiB,
 *      for mmedge buffers (scatter-gather; cached and write-combined)
 *      against an anonymous mmap, at 1, 16 and 64 MiB;
 *  (b) MMEDGE_IOC_BUF_SYNC (start + end) over 4 KiB, 1 MiB and 64 MiB of a
 *      64 MiB buffer, without and with a device attachment (vgem imports
 *      the buffer; mmedge's own import otherwise), against
 *      DMA_BUF_IOCTL_SYNC of the whole buffer.
 *
 * Channels (MMEDGE_CAP_CHANNELS):
 *  (c) per-frame cost of MMEDGE_IOC_QBUF + MMEDGE_IOC_DQBUF of a ready
 *      frame on a small, fast camera against VIDIOC_QBUF + VIDIOC_DQBUF
 *      on vivid (MMAP buffers, its highest frame rate), and the frame's
 *      path through the engine (SOF -> EOF -> userspace);
 *  (d) timestamp jitter of every virtual source: the standard deviation
 *      of the SOF period, and of the dequeue times for reference;
 *  (e) the bus shares of three saturated cameras with weights 5:3:2 on a
 *      10 MB/s bus, and how much of the modelled bus the engine fills
 *      (needs CAP_SYS_ADMIN to set the bus).
 *
 * Times are medians of repeated runs on CLOCK_MONOTONIC. Under QEMU TCG
 * absolute times mean little; the ratios are the result.
 *
 * Usage: mmedge_bench [-d /dev/mmedgeN] [-r repeats] [-s buf|chan|all]
 * Exit: 0 done, 1 a measurement failed, 2 usage, 4 no buffer support.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
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
#include <linux/mmedge.h>
#include <linux/videodev2.h>

#include <xf86drm.h>
#include "mmedge_util.h"

#define SZ_4K		(4ULL << 10)
#define SZ_1M		(1ULL << 20)
#define SZ_64M		(64ULL << 20)
#define MAX_REPEAT	101

static int repeats = 9;

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t median(uint64_t *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void touch(volatile uint8_t *p, size_t len)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), i;

	for (i = 0; i < len; i += pg)
		p[i] = (uint8_t)i;
}

/* One alloc + export + mmap + touch of an mmedge buffer; ns, or -errno. */
static int64_t once_mmedge(int dev, size_t len, uint32_t flags)
{
	struct mmedge_buf_alloc a;
	uint64_t t0, t1;
	void *p;

	memset(&a, 0, sizeof(a));
	a.size = len;
	a.flags = flags;
	a.fd_flags = O_RDWR | O_CLOEXEC;
	t0 = now_ns();
	if (xioctl(dev, MMEDGE_IOC_BUF_ALLOC, &a))
		return -errno;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, a.fd, 0);
	if (p == MAP_FAILED) {
		close(a.fd);
		return -errno;
	}
	touch(p, len);
	t1 = now_ns();
	munmap(p, len);
	close(a.fd);
	return t1 - t0;
}

static int64_t once_anon(size_t len)
{
	uint64_t t0, t1;
	void *p;

	t0 = now_ns();
	p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	touch(p, len);
	t1 = now_ns();
	munmap(p, len);
	return t1 - t0;
}

/* Median of @n runs of alloc/touch; kind 0 anon, else mmedge @flags. */
static int64_t measure_alloc(int dev, int anon, size_t len, uint32_t flags,
			     int n)
{
	uint64_t v[MAX_REPEAT];
	int i;

	for (i = 0; i < n; i++) {
		int64_t t = anon ? once_anon(len) : once_mmedge(dev, len, flags);

		if (t < 0)
			return t;
		v[i] = t;
	}
	return median(v, n);
}

/* Median ns of a START+END pair of ranged syncs; @synced gets the bytes. */
static int64_t measure_sync(int dev, int dmabuf, uint64_t off, uint64_t len,
			    int n, uint64_t *synced)
{
	struct mmedge_buf_sync s;
	uint64_t v[MAX_REPEAT], t0;
	int i, ret;

	for (i = 0; i < n; i++) {
		t0 = now_ns();
		memset(&s, 0, sizeof(s));
		s.fd = dmabuf;
		s.flags = MMEDGE_BUF_SYNC_START | MMEDGE_BUF_SYNC_RW;
		s.offset = off;
		s.len = len;
		ret = xioctl(dev, MMEDGE_IOC_BUF_SYNC, &s);
		if (ret)
			return ret;
		*synced = s.synced;
		s.flags = MMEDGE_BUF_SYNC_END | MMEDGE_BUF_SYNC_RW;
		ret = xioctl(dev, MMEDGE_IOC_BUF_SYNC, &s);
		if (ret)
			return ret;
		v[i] = now_ns() - t0;
	}
	return median(v, n);
}

static int64_t measure_dmabuf_sync(int dmabuf, int n)
{
	struct dma_buf_sync s;
	uint64_t v[MAX_REPEAT], t0;
	int i, ret;

	for (i = 0; i < n; i++) {
		t0 = now_ns();
		s.flags = DMA_BUF_SYNC_START | DMA_BUF_SYNC_RW;
		ret = xioctl(dmabuf, DMA_BUF_IOCTL_SYNC, &s);
		if (ret)
			return ret;
		s.flags = DMA_BUF_SYNC_END | DMA_BUF_SYNC_RW;
		ret = xioctl(dmabuf, DMA_BUF_IOCTL_SYNC, &s);
		if (ret)
			return ret;
		v[i] = now_ns() - t0;
	}
	return median(v, n);
}

static int bench_alloc(int dev)
{
	static const size_t sizes[] = { SZ_1M, 16 * SZ_1M, SZ_64M };
	unsigned int i;
	int err = 0;

	printf("\n(a) alloc + export + mmap + touch one byte per page, median of %d\n",
	       repeats);
	printf("%-8s %-14s %12s %12s %10s\n", "size", "memory", "ms", "ms/MiB",
	       "ours/anon");
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t len = sizes[i];
		double mib = (double)len / SZ_1M;
		int64_t anon, cached, wc;

		anon = measure_alloc(dev, 1, len, 0, repeats);
		cached = measure_alloc(dev, 0, len, MMEDGE_BUF_CACHE_CACHED,
				       repeats);
		wc = measure_alloc(dev, 0, len, MMEDGE_BUF_CACHE_WC, repeats);
		if (anon <= 0) {
			fprintf(stderr, "anon mmap %zu: %s\n", len,
				strerror((int)-anon));
			return 1;
		}
		printf("%-8s %-14s %12.3f %12.4f %10s\n",
		       len == SZ_1M ? "1M" : len == 16 * SZ_1M ? "16M" : "64M",
		       "anon mmap", anon / 1e6, anon / 1e6 / mib, "1.00");
		if (cached < 0) {
			printf("%-8s %-14s %s\n", "", "mmedge cached",
			       strerror((int)-cached));
			err = 1;
		} else {
			printf("%-8s %-14s %12.3f %12.4f %10.2f\n", "",
			       "mmedge cached", cached / 1e6, cached / 1e6 / mib,
			       (double)cached / anon);
		}
		if (wc < 0) {
			printf("%-8s %-14s %s\n", "", "mmedge wc",
			       strerror((int)-wc));
			err = 1;
		} else {
			printf("%-8s %-14s %12.3f %12.4f %10.2f\n", "",
			       "mmedge wc", wc / 1e6, wc / 1e6 / mib,
			       (double)wc / anon);
		}
	}
	return err;
}

static int sync_table(int dev, int dmabuf, const char *what)
{
	static const uint64_t ranges[] = { SZ_4K, SZ_1M, SZ_64M };
	int64_t whole, t;
	uint64_t synced = 0;
	unsigned int i;

	whole = measure_dmabuf_sync(dmabuf, repeats);
	if (whole <= 0) {
		fprintf(stderr, "DMA_BUF_IOCTL_SYNC: %s\n", strerror((int)-whole));
		return 1;
	}
	printf("%-22s %-22s %12.1f %14s %10s\n", what,
	       "DMA_BUF_IOCTL_SYNC all", whole / 1e3, "-", "1.000");
	for (i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++) {
		char name[32];

		snprintf(name, sizeof(name), "BUF_SYNC %s",
			 ranges[i] == SZ_4K ? "4K" :
			 ranges[i] == SZ_1M ? "1M" : "64M");
		t = measure_sync(dev, dmabuf, 0, ranges[i], repeats, &synced);
		if (t < 0) {
			printf("%-22s %-22s %s\n", "", name, strerror((int)-t));
			return 1;
		}
		printf("%-22s %-22s %12.1f %14llu %10.3f\n", "", name, t / 1e3,
		       (unsigned long long)synced, (double)t / whole);
	}
	return 0;
}

static int bench_sync(int dev)
{
	struct mmedge_buf_alloc a;
	struct mmedge_buf_import imp;
	uint32_t handle = 0;
	int vgem, err = 0;
	void *p;

	memset(&a, 0, sizeof(a));
	a.size = SZ_64M;
	a.flags = MMEDGE_BUF_CACHE_CACHED;
	a.fd_flags = O_RDWR | O_CLOEXEC;
	if (xioctl(dev, MMEDGE_IOC_BUF_ALLOC, &a)) {
		fprintf(stderr, "64 MiB buffer: %s\n", strerror(errno));
		return 1;
	}
	p = mmap(NULL, SZ_64M, PROT_READ | PROT_WRITE, MAP_SHARED, a.fd, 0);
	if (p != MAP_FAILED) {
		touch(p, SZ_64M);
		munmap(p, SZ_64M);
	}

	printf("\n(b) sync of a 64 MiB cached buffer (start + end), median of %d\n",
	       repeats);
	printf("%-22s %-22s %12s %14s %10s\n", "attachment", "call", "us",
	       "synced bytes", "/dmabuf");
	err |= sync_table(dev, a.fd, "none");

	vgem = open_vgem();
	if (vgem >= 0 && drmPrimeFDToHandle(vgem, a.fd, &handle) == 0) {
		err |= sync_table(dev, a.fd, "vgem");
		drmCloseBufferHandle(vgem, handle);
	} else {
		memset(&imp, 0, sizeof(imp));
		imp.fd = a.fd;
		if (xioctl(dev, MMEDGE_IOC_BUF_IMPORT, &imp) == 0) {
			struct mmedge_buf_release rel = { .id = imp.id };

			err |= sync_table(dev, a.fd, "mmedge (no vgem)");
			xioctl(dev, MMEDGE_IOC_BUF_RELEASE, &rel);
		} else {
			printf("no attachment possible: %s\n", strerror(errno));
			err = 1;
		}
	}
	if (vgem >= 0)
		close(vgem);
	close(a.fd);
	return err;
}

/* ---- channels ----------------------------------------------------- */

#define CH_NBUF		4
#define CH_FRAMES	200
#define VIVID_FRAMES	120

struct ch_buf {
	int fd;
	size_t size;
};

static double mean_sd(const double *v, int n, double *sd)
{
	double m = 0, q = 0;
	int i;

	for (i = 0; i < n; i++)
		m += v[i];
	m /= n ? n : 1;
	for (i = 0; i < n; i++)
		q += (v[i] - m) * (v[i] - m);
	*sd = n > 1 ? sqrt(q / (n - 1)) : 0;
	return m;
}

static int ch_create(int dev, const struct mmedge_src_config *src,
		     __u32 weight, __u32 segment, struct mmedge_chan_create *c)
{
	memset(c, 0, sizeof(*c));
	c->dir = MMEDGE_CHAN_CAPTURE;
	c->src = *src;
	c->weight = weight;
	c->segment = segment;
	return xioctl(dev, MMEDGE_IOC_CHAN_CREATE, c);
}

static void ch_destroy(int dev, __u32 id)
{
	struct mmedge_chan_destroy d = { .id = id };

	xioctl(dev, MMEDGE_IOC_CHAN_DESTROY, &d);
}

/* Allocates @n buffers for channel @c and queues them (cookie = index). */
static int ch_bufs(int dev, const struct mmedge_chan_create *c,
		   struct ch_buf *b, int n)
{
	struct mmedge_buf_alloc a;
	struct mmedge_qbuf q;
	int i, ret;

	for (i = 0; i < n; i++) {
		memset(&a, 0, sizeof(a));
		a.size = c->meta_offset + sizeof(struct mmedge_frame_meta);
		a.fd_flags = O_RDWR | O_CLOEXEC;
		ret = xioctl(dev, MMEDGE_IOC_BUF_ALLOC, &a);
		if (ret)
			return ret;
		b[i].fd = a.fd;
		b[i].size = a.alloc_size;
		memset(&q, 0, sizeof(q));
		q.chan = c->id;
		q.fd = a.fd;
		q.cookie = i;
		ret = xioctl(dev, MMEDGE_IOC_QBUF, &q);
		if (ret)
			return ret;
	}
	return 0;
}

static void ch_bufs_free(struct ch_buf *b, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (b[i].fd > 0)
			close(b[i].fd);
}

static int ch_qbuf(int dev, __u32 chan, int fd, __u64 cookie)
{
	struct mmedge_qbuf q = { .chan = chan, .fd = fd, .cookie = cookie };

	return xioctl(dev, MMEDGE_IOC_QBUF, &q);
}

static int wait_in(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int ret;

	do {
		ret = poll(&p, 1, ms);
	} while (ret < 0 && errno == EINTR);
	return ret > 0 && (p.revents & POLLIN) ? 0 : -ETIMEDOUT;
}

/* mmedge: QBUF and DQBUF of ready frames; medians in *q, *dq (ns). */
static int chan_ioctl_cost(int dev, uint64_t *q, uint64_t *dq,
			   uint64_t *engine, uint64_t *wake, int *frames)
{
	static uint64_t vq[CH_FRAMES], vdq[CH_FRAMES], veng[CH_FRAMES],
			vwake[CH_FRAMES];
	struct mmedge_src_config src = {
		.type = MMEDGE_SRC_CAMERA, .fourcc = MMEDGE_FMT_GREY,
		.width = 64, .height = 48, .rate_num = 240, .rate_den = 1,
	};
	struct mmedge_chan_create c;
	struct mmedge_dqbuf d;
	struct ch_buf b[CH_NBUF];
	uint64_t t0, t1, t2;
	int n = 0, ret;

	memset(b, 0, sizeof(b));
	ret = ch_create(dev, &src, 0, 0, &c);
	if (ret)
		return ret;
	ret = ch_bufs(dev, &c, b, CH_NBUF);
	while (!ret && n < CH_FRAMES) {
		ret = wait_in(dev, 2000);
		if (ret)
			break;
		memset(&d, 0, sizeof(d));
		d.chan = c.id;
		d.flags = MMEDGE_DQBUF_NONBLOCK;
		t0 = now_ns();
		ret = xioctl(dev, MMEDGE_IOC_DQBUF, &d);
		t1 = now_ns();
		if (ret)
			break;
		ret = ch_qbuf(dev, c.id, b[d.cookie].fd, d.cookie);
		t2 = now_ns();
		vdq[n] = t1 - t0;
		vq[n] = t2 - t1;
		veng[n] = d.ts.eof_mono - d.ts.sof_mono;
		vwake[n] = t0 > d.ts.eof_mono ? t0 - d.ts.eof_mono : 0;
		n++;
	}
	ch_destroy(dev, c.id);
	ch_bufs_free(b, CH_NBUF);
	if (!ret && !n)
		ret = -EIO;
	if (ret)
		return ret;
	*q = median(vq, n);
	*dq = median(vdq, n);
	*engine = median(veng, n);
	*wake = median(vwake, n);
	*frames = n;
	return 0;
}

static int open_vivid(void)
{
	struct v4l2_capability cap;
	char path[32];
	int i, fd;

	for (i = 0; i < 64; i++) {
		snprintf(path, sizeof(path), "/dev/video%d", i);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		memset(&cap, 0, sizeof(cap));
		if (xioctl(fd, VIDIOC_QUERYCAP, &cap) == 0 &&
		    !strcmp((char *)cap.driver, "vivid") &&
		    (cap.device_caps & V4L2_CAP_VIDEO_CAPTURE) &&
		    (cap.device_caps & V4L2_CAP_STREAMING))
			return fd;
		close(fd);
	}
	return -1;
}

/*
 * vivid: VIDIOC_QBUF and VIDIOC_DQBUF of ready MMAP frames at its highest
 * frame rate for 320x180 YUYV; medians in *q, *dq; *fps as set; *jit the
 * std dev of its buffer timestamps' period (us).
 */
static int vivid_ioctl_cost(uint64_t *q, uint64_t *dq, double *fps,
			    double *period_us, double *jit, int *frames)
{
	static uint64_t vq[VIVID_FRAMES], vdq[VIVID_FRAMES];
	static double per[VIVID_FRAMES];
	enum v4l2_buf_type type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
	struct v4l2_requestbuffers rb;
	struct v4l2_streamparm parm;
	struct v4l2_format fmt;
	struct v4l2_buffer vb;
	uint64_t t0, t1, t2, last = 0;
	__u32 last_seq = 0;
	int fd, i, n = 0, np = 0, ret;

	fd = open_vivid();
	if (fd < 0)
		return -ENODEV;
	memset(&fmt, 0, sizeof(fmt));
	fmt.type = type;
	xioctl(fd, VIDIOC_G_FMT, &fmt);
	fmt.fmt.pix.width = 320;
	fmt.fmt.pix.height = 180;
	fmt.fmt.pix.pixelformat = V4L2_PIX_FMT_YUYV;
	ret = xioctl(fd, VIDIOC_S_FMT, &fmt);
	memset(&parm, 0, sizeof(parm));
	parm.type = type;
	parm.parm.capture.timeperframe.numerator = 1;
	parm.parm.capture.timeperframe.denominator = 1000;
	xioctl(fd, VIDIOC_S_PARM, &parm);
	memset(&parm, 0, sizeof(parm));
	parm.type = type;
	if (!xioctl(fd, VIDIOC_G_PARM, &parm) &&
	    parm.parm.capture.timeperframe.numerator)
		*fps = (double)parm.parm.capture.timeperframe.denominator /
		       parm.parm.capture.timeperframe.numerator;

	memset(&rb, 0, sizeof(rb));
	rb.count = CH_NBUF;
	rb.type = type;
	rb.memory = V4L2_MEMORY_MMAP;
	if (!ret)
		ret = xioctl(fd, VIDIOC_REQBUFS, &rb);
	for (i = 0; !ret && i < (int)rb.count; i++) {
		memset(&vb, 0, sizeof(vb));
		vb.type = type;
		vb.memory = V4L2_MEMORY_MMAP;
		vb.index = i;
		ret = xioctl(fd, VIDIOC_QBUF, &vb);
	}
	if (!ret)
		ret = xioctl(fd, VIDIOC_STREAMON, &type);
	while (!ret && n < VIVID_FRAMES) {
		uint64_t ts;
		__u32 seq;

		ret = wait_in(fd, 2000);
		if (ret)
			break;
		memset(&vb, 0, sizeof(vb));
		vb.type = type;
		vb.memory = V4L2_MEMORY_MMAP;
		t0 = now_ns();
		ret = xioctl(fd, VIDIOC_DQBUF, &vb);
		t1 = now_ns();
		if (ret)
			break;
		/* Before QBUF, which writes the buffer's new state back. */
		ts = vb.timestamp.tv_sec * 1000000000ULL +
		     vb.timestamp.tv_usec * 1000ULL;
		seq = vb.sequence;
		t1 = now_ns();
		ret = xioctl(fd, VIDIOC_QBUF, &vb);
		t2 = now_ns();
		vdq[n] = t1 - t0;
		vq[n] = t2 - t1;
		/* The period, per sequence step (vivid may skip numbers). */
		if (last && seq > last_seq)
			per[np++] = (ts - last) / 1e3 / (seq - last_seq);
		last = ts;
		last_seq = seq;
		n++;
	}
	xioctl(fd, VIDIOC_STREAMOFF, &type);
	memset(&rb, 0, sizeof(rb));
	rb.type = type;
	rb.memory = V4L2_MEMORY_MMAP;
	xioctl(fd, VIDIOC_REQBUFS, &rb);
	close(fd);
	if (!ret && !n)
		ret = -EIO;
	if (ret)
		return ret;
	*q = median(vq, n);
	*dq = median(vdq, n);
	*period_us = mean_sd(per, np, jit);
	*frames = n;
	return 0;
}

static int bench_chan_overhead(int dev)
{
	uint64_t q = 0, dq = 0, eng = 0, wake = 0, vq = 0, vdq = 0;
	double fps = 0, vper = 0, vjit = 0;
	int n = 0, vn = 0, ret, vret;

	ret = chan_ioctl_cost(dev, &q, &dq, &eng, &wake, &n);
	vret = vivid_ioctl_cost(&vq, &vdq, &fps, &vper, &vjit, &vn);

	printf("\n(c) per-frame queue/dequeue cost of a ready frame, median (us)\n");
	printf("%-34s %8s %8s %10s %8s\n", "", "QBUF", "DQBUF", "QBUF+DQBUF",
	       "ratio");
	if (ret) {
		printf("%-34s %s\n", "mmedge camera 64x48 GREY 240 fps",
		       strerror(-ret));
		return 1;
	}
	if (!vret) {
		char name[64];

		snprintf(name, sizeof(name), "vivid 320x180 YUYV MMAP %.0f fps",
			 fps);
		printf("%-34s %8.1f %8.1f %10.1f %8s\n", name, vq / 1e3,
		       vdq / 1e3, (vq + vdq) / 1e3, "1.00");
	} else {
		printf("%-34s %s\n", "vivid", strerror(-vret));
	}
	printf("%-34s %8.1f %8.1f %10.1f %8s\n", "mmedge camera 64x48 GREY 240 fps",
	       q / 1e3, dq / 1e3, (q + dq) / 1e3, "");
	if (!vret)
		printf("%-34s %8s %8s %10s %8.2f\n", "mmedge / vivid", "", "", "",
		       (double)(q + dq) / (vq + vdq));
	printf("mmedge frame path, median over %d frames: SOF->EOF %.1f us (engine), EOF->DQBUF %.1f us (wake-up)\n",
	       n, eng / 1e3, wake / 1e3);
	if (!vret)
		printf("vivid buffer timestamps: period %.1f us, std dev %.1f us over %d frames\n",
		       vper, vjit, vn);
	return 0;
}

/* Streams @src for @ms; SOF period and dequeue period mean / std dev. */
static int chan_jitter(int dev, const struct mmedge_src_config *src,
		       unsigned int ms, double *per, double *sd,
		       double *dq_sd, int *frames, uint64_t *dropped,
		       double *missed)
{
	uint64_t first_sof = 0, first_seq = 0;
	static double vs[4096], vd[4096];
	struct mmedge_chan_create c;
	struct mmedge_dqbuf d;
	struct ch_buf b[CH_NBUF];
	uint64_t end, t, last_sof = 0, last_t = 0, last_seq = 0;
	int n = 0, ns = 0, nd = 0, ret;

	memset(b, 0, sizeof(b));
	ret = ch_create(dev, src, 0, 0, &c);
	if (ret)
		return ret;
	ret = ch_bufs(dev, &c, b, CH_NBUF);
	end = now_ns() + ms * 1000000ULL;
	while (!ret && now_ns() < end && ns < 4096) {
		memset(&d, 0, sizeof(d));
		d.chan = c.id;
		d.timeout_ms = 2000;
		ret = xioctl(dev, MMEDGE_IOC_DQBUF, &d);
		t = now_ns();
		if (ret)
			break;
		/* Periods between consecutive frames only. */
		if (n && d.sequence == last_seq + 1) {
			vs[ns++] = (d.ts.sof_mono - last_sof) / 1e3;
			vd[nd++] = (t - last_t) / 1e3;
		}
		if (!n) {
			first_sof = d.ts.sof_mono;
			first_seq = d.sequence;
		}
		last_sof = d.ts.sof_mono;
		last_seq = d.sequence;
		last_t = t;
		*dropped = d.dropped;
		n++;
		ret = ch_qbuf(dev, c.id, b[d.cookie].fd, d.cookie);
	}
	ch_destroy(dev, c.id);
	ch_bufs_free(b, CH_NBUF);
	if (ret)
		return ret;
	*per = mean_sd(vs, ns, sd);
	mean_sd(vd, nd, dq_sd);
	*frames = n;
	/* Periods that passed without taking a sequence number. */
	*missed = (last_sof - first_sof) * (double)src->rate_num /
		  ((src->type == MMEDGE_SRC_CAMERA ? 1 : src->period) * 1e9 *
		   src->rate_den) - (double)(last_seq - first_seq);
	return 0;
}

static int bench_chan_jitter(int dev)
{
	static const struct {
		const char *name;
		struct mmedge_src_config src;
	} srcs[] = {
		{ "camera 64x48 GREY 30 fps",
		  { MMEDGE_SRC_CAMERA, MMEDGE_FMT_GREY, 64, 48, 30, 1, 0, 0 } },
		{ "camera 640x480 NV12 60 fps",
		  { MMEDGE_SRC_CAMERA, MMEDGE_FMT_NV12, 640, 480, 60, 1, 0, 0 } },
		{ "mic 16 kHz, 320/buffer, tone",
		  { MMEDGE_SRC_MIC, MMEDGE_FMT_S16LE, 0, 0, 16000, 1, 320, 0 } },
		{ "mic 48 kHz, 48/buffer, chirp",
		  { MMEDGE_SRC_MIC, MMEDGE_FMT_S16LE, 0, 0, 48000, 1, 48, 1 } },
		{ "IMU 200 Hz, 10/buffer",
		  { MMEDGE_SRC_IMU, MMEDGE_FMT_IMU6, 0, 0, 200, 1, 10, 0 } },
		{ "IMU 1 kHz, 1/buffer",
		  { MMEDGE_SRC_IMU, MMEDGE_FMT_IMU6, 0, 0, 1000, 1, 1, 0 } },
	};
	unsigned int i;
	int err = 0;

	printf("\n(d) timestamp jitter, 2 s per source (us); SOF mean and sd over consecutive\n"
	       "    frames; \"unnumbered\": periods the source's timer skipped without\n"
	       "    giving them a sequence number (late timer callbacks)\n");
	printf("%-30s %10s %10s %10s %10s %7s %7s %10s\n", "source", "period",
	       "SOF mean", "SOF sd", "DQBUF sd", "frames", "dropped",
	       "unnumbered");
	for (i = 0; i < sizeof(srcs) / sizeof(srcs[0]); i++) {
		const struct mmedge_src_config *s = &srcs[i].src;
		double want = (s->type == MMEDGE_SRC_CAMERA ? 1 : s->period) *
			      1e6 * s->rate_den / s->rate_num;
		double per = 0, sd = 0, dsd = 0, missed = 0;
		uint64_t dropped = 0;
		int n = 0, ret;

		ret = chan_jitter(dev, s, 2000, &per, &sd, &dsd, &n, &dropped,
				  &missed);
		if (ret) {
			printf("%-30s %s\n", srcs[i].name, strerror(-ret));
			err = 1;
			continue;
		}
		printf("%-30s %10.1f %10.1f %10.1f %10.1f %7d %7llu %10.0f\n",
		       srcs[i].name, want, per, sd, dsd, n,
		       (unsigned long long)dropped, missed);
	}
	return err;
}

/* (e): three saturated cameras, weights 5:3:2, and the engine's fill. */
#define SH_CHANS	3

static int shares_run(int dev, __u64 bus, __u32 segment, unsigned int ms,
		      const __u32 *weights, int nch, double *share,
		      double *moved)
{
	struct mmedge_src_config src = {
		.type = MMEDGE_SRC_CAMERA, .fourcc = MMEDGE_FMT_GREY,
		.width = 1280, .height = 720, .rate_num = 240, .rate_den = 1,
	};
	struct mmedge_bus_config bc = { .set = 1, .bandwidth = bus };
	struct mmedge_chan_stats s0[SH_CHANS], s1[SH_CHANS];
	struct mmedge_chan_create c[SH_CHANS];
	struct ch_buf b[SH_CHANS][3];
	struct mmedge_dqbuf d;
	uint64_t end, t0 = 0, total = 0;
	int k, ret, phase;

	memset(b, 0, sizeof(b));
	memset(c, 0, sizeof(c));
	ret = xioctl(dev, MMEDGE_IOC_BUS_CONFIG, &bc);
	for (k = 0; !ret && k < nch; k++) {
		ret = ch_create(dev, &src, weights[k], segment, &c[k]);
		if (!ret)
			ret = ch_bufs(dev, &c[k], b[k], 3);
	}
	/* Phase 0 warms up for 1 s, phase 1 measures. */
	for (phase = 0; !ret && phase < 2; phase++) {
		end = now_ns() + (phase ? ms : 1000) * 1000000ULL;
		while (!ret && now_ns() < end) {
			wait_in(dev, 50);
			for (k = 0; !ret && k < nch; k++) {
				memset(&d, 0, sizeof(d));
				d.chan = c[k].id;
				d.flags = MMEDGE_DQBUF_NONBLOCK;
				ret = xioctl(dev, MMEDGE_IOC_DQBUF, &d);
				if (ret == -EAGAIN) {
					ret = 0;
					continue;
				}
				if (!ret)
					ret = ch_qbuf(dev, c[k].id,
						      b[k][d.cookie].fd,
						      d.cookie);
			}
		}
		for (k = 0; !ret && k < nch; k++) {
			struct mmedge_chan_stats *st = phase ? &s1[k] : &s0[k];

			memset(st, 0, sizeof(*st));
			st->id = c[k].id;
			ret = xioctl(dev, MMEDGE_IOC_CHAN_STATS, st);
		}
		if (!phase)
			t0 = now_ns();
	}
	if (!ret) {
		double secs = (now_ns() - t0) / 1e9;

		for (k = 0; k < nch; k++)
			total += s1[k].bytes - s0[k].bytes;
		for (k = 0; k < nch; k++)
			share[k] = total ? (double)(s1[k].bytes - s0[k].bytes) /
					   total : 0;
		*moved = total / secs;
	}
	for (k = 0; k < nch; k++) {
		if (c[k].id)
			ch_destroy(dev, c[k].id);
		ch_bufs_free(b[k], 3);
	}
	return ret;
}

static int bench_chan_shares(int dev)
{
	static const __u32 w[SH_CHANS] = { 500, 300, 200 };
	static const struct {
		__u64 bus;
		__u32 segment;
	} fill[] = {
		{ 10000000, 4096 }, { 10000000, 16384 }, { 10000000, 65536 },
		{ 10000000, 262144 }, { 100000000, 65536 },
	};
	struct mmedge_bus_config orig = { 0 };
	double share[SH_CHANS], moved;
	unsigned int i;
	int k, ret, err = 0;

	if (xioctl(dev, MMEDGE_IOC_BUS_CONFIG, &orig))
		return 1;
	printf("\n(e) three 1280x720 GREY 240 fps cameras, weights 500/300/200, 16 KiB segments, 10 MB/s bus, 4 s\n");
	ret = shares_run(dev, 10000000, 16384, 4000, w, SH_CHANS, share,
			 &moved);
	if (ret) {
		printf("shares: %s%s\n", strerror(-ret),
		       ret == -EPERM ? " (setting the bus needs root)" : "");
		return 1;
	}
	printf("%-10s %8s %8s %8s\n", "weight", "want %", "got %", "error");
	for (k = 0; k < SH_CHANS; k++)
		printf("%-10u %8.1f %8.2f %+8.2f\n", w[k], w[k] / 10.0,
		       share[k] * 100, share[k] * 100 - w[k] / 10.0);
	printf("moved %.0f B/s of 10000000 (%.1f%%)\n", moved, moved / 1e5);

	printf("\n    engine fill of the modelled bus (same cameras, 2 s each)\n");
	printf("%-12s %10s %14s %8s\n", "bus B/s", "segment", "moved B/s",
	       "fill %");
	for (i = 0; i < sizeof(fill) / sizeof(fill[0]); i++) {
		ret = shares_run(dev, fill[i].bus, fill[i].segment, 2000, w,
				 SH_CHANS, share, &moved);
		if (ret) {
			printf("%-12llu %10u %s\n",
			       (unsigned long long)fill[i].bus, fill[i].segment,
			       strerror(-ret));
			err = 1;
			continue;
		}
		printf("%-12llu %10u %14.0f %8.1f\n",
		       (unsigned long long)fill[i].bus, fill[i].segment, moved,
		       moved * 100 / fill[i].bus);
	}
	orig.set = 1;
	xioctl(dev, MMEDGE_IOC_BUS_CONFIG, &orig);
	return err;
}

static int bench_chan(int dev)
{
	int err = 0;

	err |= bench_chan_overhead(dev);
	err |= bench_chan_jitter(dev);
	err |= bench_chan_shares(dev);
	return err;
}

int main(int argc, char **argv)
{
	const char *path = "/dev/mmedge0", *sel = "all";
	struct mmedge_caps caps;
	int opt, dev, err = 0;

	while ((opt = getopt(argc, argv, "d:r:s:h")) != -1) {
		switch (opt) {
		case 'd':
			path = optarg;
			break;
		case 'r':
			repeats = atoi(optarg);
			if (repeats < 1 || repeats > MAX_REPEAT) {
				fprintf(stderr, "repeats: 1..%d\n", MAX_REPEAT);
				return 2;
			}
			break;
		case 's':
			sel = optarg;
			if (strcmp(sel, "buf") && strcmp(sel, "chan") &&
			    strcmp(sel, "all")) {
				fprintf(stderr, "-s: buf, chan or all\n");
				return 2;
			}
			break;
		default:
			fprintf(stderr, "usage: %s [-d /dev/mmedgeN] [-r repeats] [-s buf|chan|all]\n",
				argv[0]);
			return 2;
		}
	}

	dev = open(path, O_RDWR | O_CLOEXEC);
	if (dev < 0) {
		fprintf(stderr, "%s: %s (is mmedge.ko loaded?)\n", path,
			strerror(errno));
		return 4;
	}
	memset(&caps, 0, sizeof(caps));
	if (xioctl(dev, MMEDGE_IOC_QUERY_CAPS, &caps) ||
	    !(caps.caps & MMEDGE_CAP_BUFFERS)) {
		fprintf(stderr, "%s: no buffer support in this driver\n", path);
		return 4;
	}
	printf("mmedge_bench: %s, max_buffer_size %llu, mem_limit %llu\n", path,
	       (unsigned long long)caps.max_buffer_size,
	       (unsigned long long)caps.mem_limit);
	if (caps.max_buffer_size < SZ_64M)
		printf("note: max_buffer_size below 64 MiB; those rows fail\n");

	if (strcmp(sel, "chan")) {
		err |= bench_alloc(dev);
		err |= bench_sync(dev);
	}
	if (strcmp(sel, "buf")) {
		if (caps.caps & MMEDGE_CAP_CHANNELS)
			err |= bench_chan(dev);
		else
			printf("\nno MMEDGE_CAP_CHANNELS: channel rows skipped\n");
	}
	close(dev);
	return err;
}

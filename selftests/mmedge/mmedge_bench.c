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
 * Times are medians of repeated runs on CLOCK_MONOTONIC. Under QEMU TCG
 * absolute times mean little; the ratios are the result.
 *
 * Usage: mmedge_bench [-d /dev/mmedgeN] [-r repeats]
 * Exit: 0 done, 1 a measurement failed, 2 usage, 4 no buffer support.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
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

#include <xf86drm.h>

#define SZ_4K		(4ULL << 10)
#define SZ_1M		(1ULL << 20)
#define SZ_64M		(64ULL << 20)
#define MAX_REPEAT	101

static int repeats = 9;

static int xioctl(int fd, unsigned long cmd, void *arg)
{
	int ret;

	do {
		ret = ioctl(fd, cmd, arg);
	} while (ret < 0 && errno == EINTR);
	return ret < 0 ? -errno : ret;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

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

static int open_vgem(void)
{
	char path[32];
	int i, fd;

	for (i = 0; i < 16; i++) {
		drmVersionPtr v;
		int match;

		snprintf(path, sizeof(path), "/dev/dri/card%d", i);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		v = drmGetVersion(fd);
		match = v && v->name && !strcmp(v->name, "vgem");
		drmFreeVersion(v);
		if (match)
			return fd;
		close(fd);
	}
	return -1;
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

int main(int argc, char **argv)
{
	const char *path = "/dev/mmedge0";
	struct mmedge_caps caps;
	int opt, dev, err = 0;

	while ((opt = getopt(argc, argv, "d:r:h")) != -1) {
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
		default:
			fprintf(stderr, "usage: %s [-d /dev/mmedgeN] [-r repeats]\n",
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

	err |= bench_alloc(dev);
	err |= bench_sync(dev);
	close(dev);
	return err;
}

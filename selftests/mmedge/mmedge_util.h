/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mmedge_util.h - helpers shared by the mmedge kselftests and the
 * benchmark: EINTR-safe ioctl, poll and sleep, clocks, sysfs, the module,
 * shared buffers, channel and bus ioctls, vgem. Each returns 0 or a value
 * on success and -errno on failure, like the kernel.
 */
#ifndef MMEDGE_UTIL_H
#define MMEDGE_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
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
#include <linux/mmedge.h>

#define DEVPATH		"/dev/mmedge0"
#define PDRV_DIR	"/sys/bus/platform/drivers/mmedge"
#define DEV0_SYSDIR	"/sys/class/mmedge/mmedge0"

/* linux/dma-buf.h of 6.0+; define it where the installed header is older. */
#ifndef DMA_BUF_IOCTL_EXPORT_SYNC_FILE
struct dma_buf_export_sync_file {
	__u32 flags;
	__s32 fd;
};
#define DMA_BUF_IOCTL_EXPORT_SYNC_FILE \
	_IOWR(DMA_BUF_BASE, 2, struct dma_buf_export_sync_file)
#endif

static inline int xioctl(int fd, unsigned long cmd, void *arg)
{
	int ret;

	do {
		ret = ioctl(fd, cmd, arg);
	} while (ret < 0 && errno == EINTR);
	return ret < 0 ? -errno : ret;
}

static inline int open_dev(void)
{
	return open(DEVPATH, O_RDWR | O_CLOEXEC);
}

/*
 * The platform device behind /dev/mmedge0, from its sysfs link: "mmedge.0"
 * for a virtual instance, the node's name ("mmedge") for a device-tree
 * one. 0 or -errno.
 */
static inline int dev0_pdev(char *name, size_t len)
{
	char link[256];
	ssize_t n = readlink(DEV0_SYSDIR "/device", link, sizeof(link) - 1);
	const char *b;

	if (n < 0)
		return -errno;
	link[n] = 0;
	b = strrchr(link, '/');
	b = b ? b + 1 : link;
	if (strlen(b) >= len)
		return -ENAMETOOLONG;
	strcpy(name, b);
	return 0;
}

/* /dev/mmedge0 probed from a device-tree node (its device has an of_node). */
static inline int dev0_from_dt(void)
{
	return access(DEV0_SYSDIR "/device/of_node", F_OK) == 0;
}

static inline int query_caps(int fd, struct mmedge_caps *caps)
{
	memset(caps, 0, sizeof(*caps));
	return xioctl(fd, MMEDGE_IOC_QUERY_CAPS, caps);
}

/* 0 if the device has channels and buffers; else -1 and why. */
static inline int has_channels(int fd, const char **why)
{
	struct mmedge_caps caps;

	memset(&caps, 0, sizeof(caps));
	if (xioctl(fd, MMEDGE_IOC_QUERY_CAPS, &caps)) {
		*why = "MMEDGE_IOC_QUERY_CAPS failed";
		return -1;
	}
	if (!(caps.caps & MMEDGE_CAP_CHANNELS)) {
		*why = "no MMEDGE_CAP_CHANNELS";
		return -1;
	}
	if (!(caps.caps & MMEDGE_CAP_BUFFERS)) {
		*why = "no MMEDGE_CAP_BUFFERS";
		return -1;
	}
	return 0;
}

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* 1 if @fd polls readable within @ms, 0 if not, -errno. */
static inline int poll_in(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int ret;

	do {
		ret = poll(&p, 1, ms);
	} while (ret < 0 && errno == EINTR);
	if (ret < 0)
		return -errno;
	return ret > 0 && (p.revents & POLLIN) ? 1 : 0;
}

static inline size_t page_size(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

static inline size_t round_page(size_t n)
{
	return (n + page_size() - 1) & ~(page_size() - 1);
}

/* A whole-buffer DMA_BUF_IOCTL_SYNC. */
static inline int dmabuf_sync(int dmabuf, __u64 flags)
{
	struct dma_buf_sync s = { .flags = flags };

	return xioctl(dmabuf, DMA_BUF_IOCTL_SYNC, &s);
}

/* The fences a user of @dmabuf with access @flags (DMA_BUF_SYNC_READ:
 * a reader) must wait for, as a sync_file fd. */
static inline int export_fence(int dmabuf, __u32 flags)
{
	struct dma_buf_export_sync_file exp = { .flags = flags, .fd = -1 };
	int ret = xioctl(dmabuf, DMA_BUF_IOCTL_EXPORT_SYNC_FILE, &exp);

	return ret ? ret : exp.fd;
}

/* A decimal from a sysfs/debugfs file. */
static inline int read_ll(const char *path, long long *v)
{
	char buf[32];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = 0;
	*v = atoll(buf);
	return 0;
}

/* Up to @len - 1 bytes of a (sysfs) file as a string, as read. */
static inline int read_file(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	return 0;
}

static inline int write_str(const char *path, const char *val)
{
	ssize_t n;
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	close(fd);
	return n < 0 ? -errno : 0;
}

/* delete_module(2) without waiting: -EWOULDBLOCK while it is in use. */
static inline int mod_delete(const char *name)
{
	return syscall(__NR_delete_module, name, O_NONBLOCK) ? -errno : 0;
}

/* finit_module(2) of the module file at @path, no parameters. */
static inline int mod_load(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int ret;

	if (fd < 0)
		return -errno;
	ret = syscall(__NR_finit_module, fd, "", 0) ? -errno : 0;
	close(fd);
	return ret;
}

/* An mmedge buffer, its dma-buf fd and a shared mapping. */
struct sbuf {
	int fd;		/* dma-buf */
	uint8_t *map;
	size_t size;
};

static inline int sbuf_alloc(int dev, size_t size, struct sbuf *b)
{
	struct mmedge_buf_alloc a;
	int ret;

	memset(&a, 0, sizeof(a));
	a.size = size;
	a.fd_flags = O_RDWR | O_CLOEXEC;
	ret = xioctl(dev, MMEDGE_IOC_BUF_ALLOC, &a);
	if (ret)
		return ret;
	b->fd = a.fd;
	b->size = a.alloc_size;
	b->map = mmap(NULL, b->size, PROT_READ | PROT_WRITE, MAP_SHARED, a.fd,
		      0);
	if (b->map == MAP_FAILED) {
		ret = -errno;
		close(a.fd);
		b->fd = -1;
		b->map = NULL;
		return ret;
	}
	return 0;
}

static inline void sbuf_free(struct sbuf *b)
{
	if (b->map && b->map != MAP_FAILED)
		munmap(b->map, b->size);
	if (b->fd >= 0)
		close(b->fd);
	b->map = NULL;
	b->fd = -1;
}

static inline int chan_destroy(int fd, __u32 id)
{
	struct mmedge_chan_destroy d = { .id = id };

	return xioctl(fd, MMEDGE_IOC_CHAN_DESTROY, &d);
}

/* CHAN_CONFIG; the reply in *@out if @out. */
static inline int chan_config(int fd, __u32 id, __u32 set, __u32 weight,
			      __u32 class, __u64 cap,
			      struct mmedge_chan_config *out)
{
	struct mmedge_chan_config c = {
		.id = id, .set = set, .weight = weight, .class = class,
		.cap = cap,
	};
	int ret = xioctl(fd, MMEDGE_IOC_CHAN_CONFIG, &c);

	if (out)
		*out = c;
	return ret;
}

static inline int chan_stats(int fd, __u32 id, struct mmedge_chan_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->id = id;
	return xioctl(fd, MMEDGE_IOC_CHAN_STATS, st);
}

static inline int dqbuf(int fd, __u32 chan, __u32 flags, __u32 timeout_ms,
			struct mmedge_dqbuf *d)
{
	memset(d, 0, sizeof(*d));
	d->chan = chan;
	d->flags = flags;
	d->timeout_ms = timeout_ms;
	return xioctl(fd, MMEDGE_IOC_DQBUF, d);
}

static inline int bus_get(int fd, __u64 *bw)
{
	struct mmedge_bus_config b = { 0 };
	int ret = xioctl(fd, MMEDGE_IOC_BUS_CONFIG, &b);

	*bw = b.bandwidth;
	return ret;
}

static inline int bus_set(int fd, __u64 bw)
{
	struct mmedge_bus_config b = { .set = 1, .bandwidth = bw };

	return xioctl(fd, MMEDGE_IOC_BUS_CONFIG, &b);
}

/*
 * In a test whose fixture has fd and bus_changed (and restores the bus in
 * its teardown): sets the bus for this test, root only; SKIPs without the
 * privilege.
 */
#define SET_BUS(bw) do { \
	int __r = bus_set(self->fd, (bw)); \
	if (__r == -EPERM) \
		SKIP(return, "setting the bus needs CAP_SYS_ADMIN"); \
	ASSERT_EQ(0, __r); \
	self->bus_changed = 1; \
} while (0)

#ifdef _XF86DRM_H_
/* include/uapi/drm/vgem_drm.h (libdrm ships no copy). */
#ifndef DRM_VGEM_FENCE_ATTACH
#define DRM_VGEM_FENCE_ATTACH	0x1
#define DRM_VGEM_FENCE_SIGNAL	0x2
struct drm_vgem_fence_attach {
	__u32 handle;
	__u32 flags;
#define VGEM_FENCE_WRITE	0x1
	__u32 out_fence;
	__u32 pad;
};

struct drm_vgem_fence_signal {
	__u32 fence;
	__u32 flags;
};

#define DRM_IOCTL_VGEM_FENCE_ATTACH \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_VGEM_FENCE_ATTACH, \
		 struct drm_vgem_fence_attach)
#define DRM_IOCTL_VGEM_FENCE_SIGNAL \
	DRM_IOW(DRM_COMMAND_BASE + DRM_VGEM_FENCE_SIGNAL, \
		struct drm_vgem_fence_signal)
#endif

/* The first DRM card driven by vgem, or -1. */
static inline int open_vgem(void)
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
#endif

#endif

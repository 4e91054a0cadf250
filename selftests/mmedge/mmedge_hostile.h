/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mmedge_hostile.h - helpers of the hostile tests and the ioctl fuzzer:
 * whether the module is loaded (and loading it again), the platform
 * device and its node, sync_file queries, small channel and buffer
 * helpers.
 * Like mmedge_util.h, each returns 0 or a value on success and -errno on
 * failure. Include after <xf86drm.h> and mmedge_util.h.
 */
#ifndef MMEDGE_HOSTILE_H
#define MMEDGE_HOSTILE_H

#include <dirent.h>
#include <stdbool.h>
#include <sys/resource.h>

#include <linux/sync_file.h>

#include <drm.h>
#include <drm_mode.h>

#define MOD_PARAMS	"/sys/module/mmedge/parameters/"
#define MSEC		1000000ULL

/* ---- module and platform device ---------------------------------- */

static inline bool mod_loaded(const char *name)
{
	char path[64];

	snprintf(path, sizeof(path), "/sys/module/%s/initstate", name);
	return access(path, F_OK) == 0;
}

/* The module is busy: delete_module(O_NONBLOCK) says so (EWOULDBLOCK
 * for a held reference count, EBUSY while it is going). */
static inline bool mod_busy_errno(int ret)
{
	return ret == -EWOULDBLOCK || ret == -EBUSY;
}

/* Loads MMEDGE_KO if the module is not loaded; 0 if loaded after. */
static inline int mod_ensure_loaded(void)
{
	const char *ko = getenv("MMEDGE_KO");
	int i;

	if (!mod_loaded("mmedge")) {
		if (!ko)
			return -ENOENT;
		if (mod_load(ko))
			return -errno;
	}
	for (i = 0; i < 100 && access(DEVPATH, F_OK); i++)
		sleep_ms(20);
	return access(DEVPATH, F_OK) ? -ENODEV : 0;
}

/* read_file() without the trailing newlines. */
static inline int read_str(const char *path, char *buf, size_t len)
{
	int ret = read_file(path, buf, len);
	size_t n = ret ? 0 : strlen(buf);

	while (n > 0 && buf[n - 1] == '\n')
		buf[--n] = 0;
	return ret;
}

/* The platform device behind /dev/mmedge0 ("mmedge.0", or the device-tree
 * node's name), from the driver's directory; 0 or -ENOENT. */
static inline int pdev_name(char *name, size_t len)
{
	struct dirent *de;
	DIR *d = opendir(PDRV_DIR);
	int ret = -ENOENT;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char path[sizeof(PDRV_DIR) + 300], buf[32];

		if (de->d_name[0] == '.' || strlen(de->d_name) >= len)
			continue;
		strcpy(path, PDRV_DIR "/");
		strcat(path, de->d_name);
		strcat(path, "/mmedge/mmedge0/dev");
		if (ret && !read_str(path, buf, sizeof(buf))) {
			memcpy(name, de->d_name, strlen(de->d_name) + 1);
			ret = 0;
		}
	}
	closedir(d);
	return ret;
}

/* Waits up to @ms for /dev/mmedge0 to appear (@present) or go. */
static inline int wait_dev(bool present, int ms)
{
	for (; ms > 0; ms -= 10) {
		if ((access(DEVPATH, F_OK) == 0) == present)
			return 0;
		sleep_ms(10);
	}
	return (access(DEVPATH, F_OK) == 0) == present ? 0 : -ETIMEDOUT;
}

/* ---- sync_file --------------------------------------------------- */

/**
 * struct fence_desc - what SYNC_IOC_FILE_INFO tells of a sync_file
 * @status: 1 signalled, 0 active, < 0 error.
 * @nr: fences in it.
 * @name: the file's name ("driver-timeline<context>-<seqno>" for one
 *	fence).
 * @driver: the first fence's driver name.
 * @ts_ns: the first fence's signal time (CLOCK_MONOTONIC), 0 if active.
 * @seqno: parsed from @name, or -1 if it does not carry one.
 */
struct fence_desc {
	int status;
	unsigned int nr;
	char name[32];
	char driver[32];
	uint64_t ts_ns;
	long long seqno;
	struct sync_fence_info fi[8];
};

static inline int fence_query(int fence_fd, struct fence_desc *d)
{
	struct sync_file_info info;
	const char *dash;
	int ret;

	memset(d, 0, sizeof(*d));
	memset(&info, 0, sizeof(info));
	info.num_fences = 8;
	info.sync_fence_info = (uintptr_t)d->fi;
	ret = xioctl(fence_fd, SYNC_IOC_FILE_INFO, &info);
	if (ret)
		return ret;
	d->status = info.status;
	d->nr = info.num_fences;
	memcpy(d->name, info.name, sizeof(d->name));
	d->name[sizeof(d->name) - 1] = 0;
	if (d->nr) {
		snprintf(d->driver, sizeof(d->driver), "%s",
			 d->fi[0].driver_name);
		d->ts_ns = d->fi[0].timestamp_ns;
	}
	d->seqno = -1;
	dash = strrchr(d->name, '-');
	if (d->nr == 1 && dash && dash[1] && strlen(d->name) < 31)
		d->seqno = atoll(dash + 1);
	return 0;
}

/* ---- channels and buffers ---------------------------------------- */

static inline struct mmedge_src_config cam_src(__u32 w, __u32 h,
					       __u32 num, __u32 den)
{
	struct mmedge_src_config s = {
		.type = MMEDGE_SRC_CAMERA, .fourcc = MMEDGE_FMT_GREY,
		.width = w, .height = h, .rate_num = num, .rate_den = den,
	};
	return s;
}

/* A capture channel on a GREY camera; id or -errno; *c filled. */
static inline int cam_chan(int dev, __u32 w, __u32 h, __u32 num, __u32 den,
			   struct mmedge_chan_create *c)
{
	int ret;

	memset(c, 0, sizeof(*c));
	c->dir = MMEDGE_CHAN_CAPTURE;
	c->src = cam_src(w, h, num, den);
	ret = xioctl(dev, MMEDGE_IOC_CHAN_CREATE, c);
	return ret ? ret : (int)c->id;
}

/* A feed or copy channel; id or -errno. */
static inline int plain_chan(int dev, __u32 dir)
{
	struct mmedge_chan_create c;
	int ret;

	memset(&c, 0, sizeof(c));
	c.dir = dir;
	ret = xioctl(dev, MMEDGE_IOC_CHAN_CREATE, &c);
	return ret ? ret : (int)c.id;
}

/* Bytes a buffer needs on capture channel @c. */
static inline size_t cap_buf_size(const struct mmedge_chan_create *c)
{
	return round_page(c->meta_offset + sizeof(struct mmedge_frame_meta));
}

/* BUF_ALLOC; the dma-buf fd or -errno. */
static inline int buf_new(int dev, size_t size, __u32 flags, __u32 fd_flags)
{
	struct mmedge_buf_alloc a;
	int ret;

	memset(&a, 0, sizeof(a));
	a.size = size;
	a.flags = flags;
	a.fd_flags = fd_flags;
	ret = xioctl(dev, MMEDGE_IOC_BUF_ALLOC, &a);
	return ret ? ret : a.fd;
}

static inline int qbuf_full(int dev, __u32 chan, int fd, __u32 flags,
			    int src_fd, __u32 bytesused, __u64 cookie,
			    int *fence_fd)
{
	struct mmedge_qbuf q = {
		.chan = chan, .fd = fd, .flags = flags, .cookie = cookie,
		.src_fd = src_fd, .bytesused = bytesused,
	};
	int ret = xioctl(dev, MMEDGE_IOC_QBUF, &q);

	if (fence_fd)
		*fence_fd = ret ? -1 : q.fence_fd;
	return ret;
}

#endif

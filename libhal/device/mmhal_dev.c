// SPDX-License-Identifier: MIT
/*
 * Device layer: opening /dev/mmedgeN and querying it, the bus model and
 * cross-timestamps.
 *
 * Every ioctl libmmhal issues goes through mmhal_ioctl(), defined here;
 * mmhal_buf.c and mmhal_chan.c use it for the buffer and channel ioctls.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <stdint.h>
#include <unistd.h>

#include "mmhal_internal.h"

/* The HAL's constants mirror the uapi's; catch drift at compile time. */
static_assert(MMHAL_CAP_VIRTUAL == MMEDGE_CAP_VIRTUAL, "cap bit drift");
static_assert(MMHAL_CAP_BUFFERS == MMEDGE_CAP_BUFFERS, "cap bit drift");
static_assert(MMHAL_CAP_CONTIG == MMEDGE_CAP_CONTIG, "cap bit drift");
static_assert(MMHAL_IOCTL_BUF_ALLOC == _IOC_NR(MMEDGE_IOC_BUF_ALLOC), "nr drift");
static_assert(MMHAL_IOCTL_BUF_RELEASE == _IOC_NR(MMEDGE_IOC_BUF_RELEASE),
	      "nr drift");
static_assert(MMHAL_CAP_CHANNELS == MMEDGE_CAP_CHANNELS, "cap bit drift");
static_assert(MMHAL_BUS_MIN == 1000ULL * 1000, "bus range drift");
static_assert(MMHAL_BUS_MAX == 100ULL * 1000 * 1000 * 1000, "bus range drift");
static_assert(MMHAL_XTS_MAX_SAMPLES == MMEDGE_XTS_MAX_SAMPLES, "xts drift");
static_assert(sizeof(struct mmedge_bus_config) == MMEDGE_BUS_CONFIG_SIZE_VER0,
	      "struct mmedge_bus_config size");
static_assert(sizeof(struct mmedge_xts) == MMEDGE_XTS_SIZE_VER1,
	      "struct mmedge_xts size");
static_assert(MMHAL_IOCTL_QUERY_CAPS == _IOC_NR(MMEDGE_IOC_QUERY_CAPS),
	      "ioctl number drift");
static_assert(MMHAL_DRIVER_LEN == MMEDGE_NAME_LEN, "driver name length");
static_assert(MMHAL_BUS_INFO_LEN == MMEDGE_BUS_INFO_LEN, "bus info length");
static_assert(sizeof(struct mmedge_caps) >= MMEDGE_CAPS_SIZE_VER0 &&
	      sizeof(struct mmedge_caps) % 8 == 0, "struct mmedge_caps size");

struct mmhal_dev {
	/* Set at open and never changed: read without the lock. */
	int fd;
	/* Read once at open; the driver's capabilities do not change. */
	struct mmhal_caps caps;
	/*
	 * Protects the userspace bookkeeping of every buffer and channel
	 * made from this handle: the channels' slot tables (which buffer a
	 * cookie stands for), the buffers' links to the slot holding them
	 * (buf->chan, buf->ref) and their lazy CPU mappings. One lock for
	 * all of them because a buffer moves between the channels of its
	 * device. Held only around that bookkeeping, never across an ioctl:
	 * the driver serialises its own state, and DQBUF may sleep.
	 */
	pthread_mutex_t lock;
};

void mmhal_dev_lock(struct mmhal_dev *dev)
{
	pthread_mutex_lock(&dev->lock);
}

void mmhal_dev_unlock(struct mmhal_dev *dev)
{
	pthread_mutex_unlock(&dev->lock);
}

int mmhal_ioctl(int fd, unsigned long req, void *arg)
{
	int ret;

	do {
		ret = ioctl(fd, req, arg);
	} while (ret == -1 && errno == EINTR);

	return ret == -1 ? -errno : ret;
}

static void mmhal_copy_str(char *dst, size_t dst_len, const __u8 *src,
			   size_t src_len)
{
	size_t n = 0;
	size_t max = src_len < dst_len - 1 ? src_len : dst_len - 1;

	while (n < max && src[n]) {
		dst[n] = (char)src[n];
		n++;
	}
	dst[n] = '\0';
}

int mmhal_caps_from_uapi(const struct mmedge_caps *in, struct mmhal_caps *out)
{
	memset(out, 0, sizeof(*out));

	/* A newer driver is fine: the struct only grows at its end. */
	if (in->api_version < 1)
		return -EPROTO;

	out->api_version = in->api_version;
	out->instance = in->instance;
	out->caps = in->caps;
	out->ioctls = in->ioctls;
	out->max_channels = in->max_channels;
	out->virtual_dev = !!(in->caps & MMEDGE_CAP_VIRTUAL);
	out->max_buffer_size = in->max_buffer_size;
	out->mem_limit = in->mem_limit;
	mmhal_copy_str(out->driver, sizeof(out->driver), in->driver,
		       sizeof(in->driver));
	mmhal_copy_str(out->bus_info, sizeof(out->bus_info), in->bus_info,
		       sizeof(in->bus_info));
	return 0;
}

int mmhal_dev_open(const char *path, struct mmhal_dev **out)
{
	struct mmedge_caps ucaps;
	struct mmhal_dev *dev;
	struct stat st;
	int fd, ret;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!path)
		path = MMHAL_DEFAULT_DEV;

	/* O_NOCTTY: a mistyped path to a tty must not become our terminal. */
	fd = open(path, O_RDWR | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;

	if (fstat(fd, &st) < 0) {
		ret = -errno;
		goto err_close;
	}
	if (!S_ISCHR(st.st_mode)) {
		ret = -ENODEV;
		goto err_close;
	}

	/* flags and reserved must be zero. */
	memset(&ucaps, 0, sizeof(ucaps));
	ret = mmhal_ioctl(fd, MMEDGE_IOC_QUERY_CAPS, &ucaps);
	if (ret == -ENOTTY)
		ret = -ENODEV;	/* a character device, but not ours */
	if (ret < 0)
		goto err_close;

	dev = calloc(1, sizeof(*dev));
	if (!dev) {
		ret = -ENOMEM;
		goto err_close;
	}

	ret = mmhal_caps_from_uapi(&ucaps, &dev->caps);
	if (ret < 0)
		goto err_free;

	ret = -pthread_mutex_init(&dev->lock, NULL);
	if (ret < 0)
		goto err_free;
	dev->fd = fd;
	*out = dev;
	return 0;

err_free:
	free(dev);
err_close:
	close(fd);
	return ret;
}

void mmhal_dev_close(struct mmhal_dev *dev)
{
	if (!dev)
		return;
	/* Linux releases the fd even if close() fails; nothing to retry. */
	close(dev->fd);
	pthread_mutex_destroy(&dev->lock);
	free(dev);
}

int mmhal_dev_caps(struct mmhal_dev *dev, struct mmhal_caps *out)
{
	if (!out)
		return -EINVAL;
	if (!dev) {
		memset(out, 0, sizeof(*out));
		return -EINVAL;
	}
	*out = dev->caps;
	return 0;
}

int mmhal_dev_fd(const struct mmhal_dev *dev)
{
	return dev ? dev->fd : -EINVAL;
}

int mmhal_dev_wrap(int fd, const struct mmhal_caps *caps,
		   struct mmhal_dev **out)
{
	struct mmhal_dev *dev = calloc(1, sizeof(*dev));

	*out = NULL;
	if (!dev)
		return -ENOMEM;
	if (pthread_mutex_init(&dev->lock, NULL)) {
		free(dev);
		return -ENOMEM;
	}
	dev->fd = fd;
	if (caps)
		dev->caps = *caps;
	*out = dev;
	return 0;
}

int mmhal_dev_bus_get(struct mmhal_dev *dev, uint64_t *bandwidth)
{
	struct mmedge_bus_config b;
	int ret;

	if (!bandwidth)
		return -EINVAL;
	*bandwidth = 0;
	if (!dev)
		return -EINVAL;
	memset(&b, 0, sizeof(b));
	ret = mmhal_ioctl(dev->fd, MMEDGE_IOC_BUS_CONFIG, &b);
	if (ret < 0)
		return ret;
	*bandwidth = b.bandwidth;
	return 0;
}

int mmhal_dev_bus_set(struct mmhal_dev *dev, uint64_t bandwidth)
{
	struct mmedge_bus_config b;
	int ret;

	if (!dev || bandwidth < MMHAL_BUS_MIN || bandwidth > MMHAL_BUS_MAX)
		return -EINVAL;
	memset(&b, 0, sizeof(b));
	b.set = 1;
	b.bandwidth = bandwidth;
	ret = mmhal_ioctl(dev->fd, MMEDGE_IOC_BUS_CONFIG, &b);
	return ret < 0 ? ret : 0;
}

int mmhal_dev_xts(struct mmhal_dev *dev, unsigned int n_samples,
		  struct mmhal_xts *out)
{
	struct mmedge_xts x;
	unsigned int i;
	int ret;

	if (!out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if (!dev || n_samples < 1 || n_samples > MMHAL_XTS_MAX_SAMPLES)
		return -EINVAL;
	memset(&x, 0, sizeof(x));
	x.n_samples = n_samples;
	ret = mmhal_ioctl(dev->fd, MMEDGE_IOC_XTS, &x);
	if (ret < 0)
		return ret;
	out->counter_hz = x.counter_hz;
	out->mult = x.mult;
	out->shift = x.shift;
	out->counter_bits = x.counter_bits;
	out->n_samples = n_samples;
	for (i = 0; i < n_samples; i++) {
		out->samples[i].sys_before = x.samples[i].sys_before;
		out->samples[i].raw = x.samples[i].raw;
		out->samples[i].sys_after = x.samples[i].sys_after;
		out->samples[i].boot_offset = x.samples[i].boot_offset;
	}
	return 0;
}

int mmhal_dev_sensor_xts(struct mmhal_dev *dev, uint32_t chan_id,
			 unsigned int n_samples, struct mmhal_sensor_xts *out)
{
	struct mmedge_xts x;
	unsigned int i;
	int ret;

	if (!out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if (!dev || !chan_id || n_samples < 1 ||
	    n_samples > MMHAL_XTS_MAX_SAMPLES)
		return -EINVAL;
	memset(&x, 0, sizeof(x));
	x.n_samples = n_samples;
	x.flags = MMEDGE_XTS_SENSOR;
	x.chan = chan_id;
	ret = mmhal_ioctl(dev->fd, MMEDGE_IOC_XTS, &x);
	if (ret < 0)
		return ret;
	out->chan = chan_id;
	out->n_samples = n_samples;
	out->mult = x.mult;
	out->shift = x.shift;
	out->clock.offset_ns = x.sensor_offset_ns;
	out->clock.drift_ppb = x.sensor_drift_ppb;
	out->clock.epoch = x.sensor_epoch;
	for (i = 0; i < n_samples; i++) {
		out->samples[i].sys_before = x.samples[i].sys_before;
		out->samples[i].raw = x.samples[i].raw;
		out->samples[i].sys_after = x.samples[i].sys_after;
		out->samples[i].sensor = x.sensor[i];
	}
	return 0;
}

// SPDX-License-Identifier: MIT
/*
 * Buffers: mmedge-allocated and imported dma-bufs, their CPU mapping and
 * cache maintenance. Ioctls go through mmhal_ioctl().
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/dma-buf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mmhal_internal.h"

static_assert(MMHAL_CACHE_CACHED == MMEDGE_BUF_CACHE_CACHED, "cache drift");
static_assert(MMHAL_CACHE_WC == MMEDGE_BUF_CACHE_WC, "cache drift");
static_assert(MMHAL_CACHE_UNCACHED == MMEDGE_BUF_CACHE_UNCACHED, "cache drift");
static_assert(MMHAL_SYNC_READ == MMEDGE_BUF_SYNC_READ &&
	      MMHAL_SYNC_READ == DMA_BUF_SYNC_READ, "sync flag drift");
static_assert(MMHAL_SYNC_WRITE == MMEDGE_BUF_SYNC_WRITE &&
	      MMHAL_SYNC_WRITE == DMA_BUF_SYNC_WRITE, "sync flag drift");
static_assert(MMHAL_SYNC_END == MMEDGE_BUF_SYNC_END &&
	      MMHAL_SYNC_END == DMA_BUF_SYNC_END, "sync flag drift");
static_assert(MMHAL_SYNC_START == MMEDGE_BUF_SYNC_START &&
	      MMHAL_SYNC_START == DMA_BUF_SYNC_START, "sync flag drift");
static_assert(sizeof(struct mmedge_buf_alloc) == MMEDGE_BUF_ALLOC_SIZE_VER0,
	      "struct mmedge_buf_alloc size");
static_assert(sizeof(struct mmedge_buf_sync) == MMEDGE_BUF_SYNC_SIZE_VER0,
	      "struct mmedge_buf_sync size");
static_assert(sizeof(struct mmedge_buf_import) == MMEDGE_BUF_IMPORT_SIZE_VER0,
	      "struct mmedge_buf_import size");
static_assert(sizeof(struct mmedge_buf_release) == MMEDGE_BUF_RELEASE_SIZE_VER0,
	      "struct mmedge_buf_release size");
static_assert(sizeof(struct mmedge_buf_info) == MMEDGE_BUF_INFO_SIZE_VER0,
	      "struct mmedge_buf_info size");

struct mmhal_buf {
	struct mmhal_dev *dev;
	int fd;
	uint64_t size;
	/* Import id to release on free; 0 for an mmedge buffer. */
	uint64_t import_id;
	/* The CPU mapping, made on first use (under dev->lock). */
	void *map;
	/* Channel whose slot holds this buffer while queued, or NULL, and
	 * the slot's pointer to it (cleared if the buffer is freed first);
	 * both under dev->lock. */
	struct mmhal_chan *chan;
	struct mmhal_buf **ref;
};

static int mmhal_reserved_zero(const uint64_t *r, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (r[i])
			return 0;
	return 1;
}

struct mmhal_buf_params mmhal_buf_default_params(void)
{
	struct mmhal_buf_params p;

	memset(&p, 0, sizeof(p));
	p.cache = MMHAL_CACHE_CACHED;
	p.contiguous = 0;
	return p;
}

int mmhal_buf_alloc(struct mmhal_dev *dev, uint64_t size,
		    const struct mmhal_buf_params *params,
		    struct mmhal_buf **out)
{
	struct mmhal_buf_params def = mmhal_buf_default_params();
	struct mmedge_buf_alloc a;
	struct mmhal_buf *buf;
	int ret;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!params)
		params = &def;
	if (!dev || !size || params->cache > MMHAL_CACHE_UNCACHED ||
	    !mmhal_reserved_zero(params->reserved,
				 MMHAL_ARRAY_SIZE(params->reserved)))
		return -EINVAL;

	buf = calloc(1, sizeof(*buf));
	if (!buf)
		return -ENOMEM;

	memset(&a, 0, sizeof(a));
	a.size = size;
	a.flags = params->cache | (params->contiguous ? MMEDGE_BUF_CONTIG : 0);
	a.fd_flags = O_RDWR | O_CLOEXEC;
	ret = mmhal_ioctl(mmhal_dev_fd(dev), MMEDGE_IOC_BUF_ALLOC, &a);
	if (ret < 0) {
		free(buf);
		return ret;
	}
	buf->dev = dev;
	buf->fd = a.fd;
	buf->size = a.alloc_size;
	*out = buf;
	return 0;
}

int mmhal_buf_import(struct mmhal_dev *dev, int dmabuf_fd,
		     struct mmhal_buf **out)
{
	struct mmedge_buf_import imp;
	struct mmhal_buf *buf;
	int ret;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!dev || dmabuf_fd < 0)
		return -EINVAL;

	buf = calloc(1, sizeof(*buf));
	if (!buf)
		return -ENOMEM;
	buf->fd = fcntl(dmabuf_fd, F_DUPFD_CLOEXEC, 0);
	if (buf->fd < 0) {
		ret = -errno;
		free(buf);
		return ret;
	}

	memset(&imp, 0, sizeof(imp));
	imp.fd = buf->fd;
	ret = mmhal_ioctl(mmhal_dev_fd(dev), MMEDGE_IOC_BUF_IMPORT, &imp);
	if (ret < 0) {
		close(buf->fd);
		free(buf);
		return ret;
	}
	buf->dev = dev;
	buf->size = imp.size;
	buf->import_id = imp.id;
	*out = buf;
	return 0;
}

void mmhal_buf_free(struct mmhal_buf *buf)
{
	if (!buf)
		return;
	/* A queued buffer: its slot may be dequeued on another thread. */
	mmhal_dev_lock(buf->dev);
	if (buf->ref && *buf->ref == buf)
		*buf->ref = NULL;
	buf->chan = NULL;
	buf->ref = NULL;
	mmhal_dev_unlock(buf->dev);
	if (buf->map)
		munmap(buf->map, buf->size);
	if (buf->import_id) {
		struct mmedge_buf_release rel;

		memset(&rel, 0, sizeof(rel));
		rel.id = buf->import_id;
		/* Fails only if the import is gone already: nothing to do. */
		(void)mmhal_ioctl(mmhal_dev_fd(buf->dev),
				  MMEDGE_IOC_BUF_RELEASE, &rel);
	}
	close(buf->fd);
	free(buf);
}

int mmhal_buf_fd(const struct mmhal_buf *buf)
{
	return buf ? buf->fd : -EINVAL;
}

uint64_t mmhal_buf_size(const struct mmhal_buf *buf)
{
	return buf ? buf->size : 0;
}

int mmhal_buf_map(struct mmhal_buf *buf, void **addr)
{
	void *p;
	int ret;

	if (!addr)
		return -EINVAL;
	*addr = NULL;
	if (!buf || !buf->size)
		return -EINVAL;
	/* Two threads mapping at once must not both mmap(). */
	mmhal_dev_lock(buf->dev);
	if (!buf->map) {
		p = mmap(NULL, buf->size, PROT_READ | PROT_WRITE, MAP_SHARED,
			 buf->fd, 0);
		if (p == MAP_FAILED) {
			ret = -errno;
			mmhal_dev_unlock(buf->dev);
			return ret;
		}
		buf->map = p;
	}
	*addr = buf->map;
	mmhal_dev_unlock(buf->dev);
	return 0;
}

int mmhal_buf_sync_range(struct mmhal_buf *buf, uint64_t offset, uint64_t len,
			 unsigned int flags)
{
	struct mmedge_buf_sync s;
	int ret;

	if (!buf || flags & ~(MMHAL_SYNC_RW | MMHAL_SYNC_END) ||
	    !(flags & MMHAL_SYNC_RW) || !len || offset > buf->size ||
	    len > buf->size - offset)
		return -EINVAL;
	/* The driver syncs only its own buffers. */
	if (buf->import_id)
		return -EINVAL;
	memset(&s, 0, sizeof(s));
	s.fd = buf->fd;
	s.flags = flags;
	s.offset = offset;
	s.len = len;
	ret = mmhal_ioctl(mmhal_dev_fd(buf->dev), MMEDGE_IOC_BUF_SYNC, &s);
	return ret < 0 ? ret : 0;
}

static int mmhal_buf_cpu(struct mmhal_buf *buf, unsigned int flags,
			 unsigned int end)
{
	struct dma_buf_sync s;
	int ret;

	if (!buf || flags & ~MMHAL_SYNC_RW || !(flags & MMHAL_SYNC_RW))
		return -EINVAL;
	memset(&s, 0, sizeof(s));
	s.flags = flags | end;
	ret = mmhal_ioctl(buf->fd, DMA_BUF_IOCTL_SYNC, &s);
	return ret < 0 ? ret : 0;
}

int mmhal_buf_begin_cpu(struct mmhal_buf *buf, unsigned int flags)
{
	return mmhal_buf_cpu(buf, flags, DMA_BUF_SYNC_START);
}

int mmhal_buf_end_cpu(struct mmhal_buf *buf, unsigned int flags)
{
	return mmhal_buf_cpu(buf, flags, DMA_BUF_SYNC_END);
}

int mmhal_buf_wrap(struct mmhal_dev *dev, int fd, uint64_t size,
		   struct mmhal_buf **out)
{
	struct mmhal_buf *buf = calloc(1, sizeof(*buf));

	*out = NULL;
	if (!buf)
		return -ENOMEM;
	buf->dev = dev;
	buf->fd = fd;
	buf->size = size;
	*out = buf;
	return 0;
}

struct mmhal_dev *mmhal_buf_dev(const struct mmhal_buf *buf)
{
	return buf->dev;
}

struct mmhal_chan *mmhal_buf_chan(const struct mmhal_buf *buf)
{
	return buf->chan;
}

void mmhal_buf_attach(struct mmhal_buf *buf, struct mmhal_chan *chan,
		      struct mmhal_buf **ref)
{
	buf->chan = chan;
	buf->ref = ref;
}

void mmhal_buf_detach(struct mmhal_buf *buf)
{
	buf->chan = NULL;
	buf->ref = NULL;
}

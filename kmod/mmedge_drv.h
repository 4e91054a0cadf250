/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mmedge: driver-wide structures.
 */
#ifndef _MMEDGE_DRV_H
#define _MMEDGE_DRV_H

#include <linux/cdev.h>
#include <linux/device.h>
#include <linux/dma-buf.h>
#include <linux/kref.h>
#include <linux/mutex.h>
#include <linux/platform_device.h>
#include <linux/rwsem.h>
#include <linux/xarray.h>

#include "mmedge_engine.h"

#define MMEDGE_DRV_NAME		"mmedge"
#define MMEDGE_MAX_DEVS		16
/* The hub's longest DMA segment when nothing says otherwise. */
#define MMEDGE_DMA_MAX_SEG	UINT_MAX

/**
 * struct mmedge_dev - one mmedge instance (/dev/mmedgeN)
 * @dev: the char device's struct device; its reference count owns this
 *	structure, so open files keep it alive after the platform device
 *	is unbound.
 * @cdev: the character device.
 * @pdev: the platform device; NULL once unbound.
 * @id: N in /dev/mmedgeN.
 * @virtual: created by the nr_virtual module parameter, no hardware.
 * @lock: see below.
 * @alive: false once the platform device is unbound; ioctls then fail
 *	with -ENODEV.
 * @dma_dev: the device buffers are allocated and mapped for (the
 *	platform device); buffers hold a reference on it.
 * @dma_max_seg: the longest DMA segment @dma_dev takes, set at probe.
 * @dma_boundary: the segment boundary mask of @dma_dev, set at probe.
 * @nr_bufs: live buffers allocated through this instance.
 * @buf_bytes: bytes of those buffers.
 * @nr_imports: live imports of foreign dma-bufs.
 * @next_buf_id: last buffer id handed out.
 * @eng: the DMA engine, arbiter and channels.
 * @debugfs: the instance's debugfs directory.
 */
struct mmedge_dev {
	struct device dev;
	struct cdev cdev;
	struct platform_device *pdev;
	int id;
	bool virtual;

	/* Protects @alive and @pdev against ioctls racing with unbind. */
	struct rw_semaphore lock;
	bool alive;

	struct device *dma_dev;
	unsigned int dma_max_seg;
	unsigned long dma_boundary;
	atomic_t nr_bufs;
	atomic64_t buf_bytes;
	atomic_t nr_imports;
	atomic64_t next_buf_id;

	struct mmedge_engine eng;
	struct dentry *debugfs;
};

/**
 * struct mmedge_file - per-open-file context
 * @ref: reference count; the file holds one, and objects created through
 *	the file (buffers, channels) hold one each, so they may outlive it.
 * @mdev: the instance; this context holds a reference on @mdev->dev.
 * @mem_used: bytes of buffers allocated through this file and still
 *	alive, charged against the file_mem_limit_mb parameter.
 * @imports_lock: see below.
 * @imports: foreign dma-bufs imported through this file, by import id;
 *	they end with the file.
 * @done_events: bumped when a channel of this file completes a frame or
 *	goes away; blocked dequeues wait for it to change.
 * @nr_chans: channels of this file, at most MMEDGE_MAX_FILE_CHANS (under
 *	mmedge_engine.lock).
 */
struct mmedge_file {
	struct kref ref;
	struct mmedge_dev *mdev;
	atomic64_t mem_used;

	/* Protects @imports: lookup, insert and removal as one step. */
	struct mutex imports_lock;
	struct xarray imports;

	atomic_t done_events;
	unsigned int nr_chans;
};

/**
 * struct mmedge_ioctl_ctx - what a handler leaves for after copy_to_user
 * @install_file: a file to install as @install_fd once the result has
 *	reached userspace (house rule: an fd becomes visible only then).
 * @install_fd: the reserved fd number.
 * @finish: called once the result was copied to userspace (@copied true)
 *	or could not be (false), so that a handler that hands something over
 *	(a dequeued frame) can keep it until then and take it back on
 *	-EFAULT instead of losing it.
 * @finish_obj: what @finish hands over.
 * @finish_owner: what it belongs to (a channel), referenced for @finish:
 *	it may go back there and nowhere else.
 * @usize: the size of the caller's structure (_IOC_SIZE of the command):
 *	a handler whose request needs fields of a later size checks it.
 */
struct mmedge_ioctl_ctx {
	struct file *install_file;
	int install_fd;
	void (*finish)(struct mmedge_file *mf, struct mmedge_ioctl_ctx *ctx,
		       bool copied);
	void *finish_obj;
	void *finish_owner;
	unsigned int usize;
};

static inline struct mmedge_dev *to_mmedge_dev(struct device *dev)
{
	return container_of(dev, struct mmedge_dev, dev);
}

/* mmedge_file.c */
void mmedge_file_get(struct mmedge_file *mf);
void mmedge_file_put(struct mmedge_file *mf);

/* mmedge_ioctl.c */
int mmedge_ioctl_init(void);
long mmedge_ioctl(struct file *file, unsigned int cmd, unsigned long arg);

/* mmedge_buf.c */
int mmedge_ioctl_buf_alloc(struct mmedge_file *mf, void *data,
			   struct mmedge_ioctl_ctx *ctx);
int mmedge_ioctl_buf_info(struct mmedge_file *mf, void *data,
			  struct mmedge_ioctl_ctx *ctx);
int mmedge_ioctl_buf_sync(struct mmedge_file *mf, void *data,
			  struct mmedge_ioctl_ctx *ctx);
bool mmedge_buf_usable(struct mmedge_file *mf, struct dma_buf *dmabuf);

/* mmedge_import.c */
int mmedge_ioctl_buf_import(struct mmedge_file *mf, void *data,
			    struct mmedge_ioctl_ctx *ctx);
int mmedge_ioctl_buf_release(struct mmedge_file *mf, void *data,
			     struct mmedge_ioctl_ctx *ctx);

/* mmedge_chan.c */
int mmedge_ioctl_chan_create(struct mmedge_file *mf, void *data,
			     struct mmedge_ioctl_ctx *ctx);
int mmedge_ioctl_chan_config(struct mmedge_file *mf, void *data,
			     struct mmedge_ioctl_ctx *ctx);
int mmedge_ioctl_chan_destroy(struct mmedge_file *mf, void *data,
			      struct mmedge_ioctl_ctx *ctx);
int mmedge_ioctl_qbuf(struct mmedge_file *mf, void *data,
		      struct mmedge_ioctl_ctx *ctx);
int mmedge_ioctl_dqbuf(struct mmedge_file *mf, void *data,
		       struct mmedge_ioctl_ctx *ctx);
int mmedge_ioctl_chan_stats(struct mmedge_file *mf, void *data,
			    struct mmedge_ioctl_ctx *ctx);

/* mmedge_clock.c */
int mmedge_ioctl_xts(struct mmedge_file *mf, void *data,
		     struct mmedge_ioctl_ctx *ctx);

#endif /* _MMEDGE_DRV_H */

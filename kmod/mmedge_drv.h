/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mmedge: driver-wide structures.
 */
#ifndef _MMEDGE_DRV_H
#define _MMEDGE_DRV_H

#include <linux/cdev.h>
#include <linux/device.h>
#include <linux/kref.h>
#include <linux/platform_device.h>
#include <linux/rwsem.h>

#define MMEDGE_DRV_NAME		"mmedge"

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
};

/**
 * struct mmedge_file - per-open-file context
 * @ref: reference count; the file holds one, and objects created through
 *	the file (buffers, channels) hold one each, so they may outlive it.
 * @mdev: the instance; this context holds a reference on @mdev->dev.
 */
struct mmedge_file {
	struct kref ref;
	struct mmedge_dev *mdev;
};

static inline struct mmedge_dev *to_mmedge_dev(struct device *dev)
{
	return container_of(dev, struct mmedge_dev, dev);
}

void mmedge_file_get(struct mmedge_file *mf);
void mmedge_file_put(struct mmedge_file *mf);

long mmedge_ioctl(struct file *file, unsigned int cmd, unsigned long arg);

#endif /* _MMEDGE_DRV_H */

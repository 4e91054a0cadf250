// SPDX-License-Identifier: GPL-2.0
/*
 * mmedge: the lifetime of a per-open-file context (struct mmedge_file).
 *
 * The open file holds one reference and every buffer allocated through
 * it another, so the context, with the per-file memory counter, outlives
 * the file while its buffers live; it holds the instance's device.
 */

#include <linux/device.h>
#include <linux/kref.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/xarray.h>

#include "mmedge_drv.h"

void mmedge_file_get(struct mmedge_file *mf)
{
	kref_get(&mf->ref);
}

static void mmedge_file_release(struct kref *ref)
{
	struct mmedge_file *mf = container_of(ref, struct mmedge_file, ref);

	WARN_ON(!xa_empty(&mf->imports));
	WARN_ON(atomic64_read(&mf->mem_used));
	xa_destroy(&mf->imports);
	mutex_destroy(&mf->imports_lock);
	put_device(&mf->mdev->dev);
	kfree(mf);
}

void mmedge_file_put(struct mmedge_file *mf)
{
	kref_put(&mf->ref, mmedge_file_release);
}

// SPDX-License-Identifier: GPL-2.0
/*
 * mmedge: imports of foreign dma-bufs (a V4L2 or DRM buffer) as channel
 * targets.
 *
 * An import belongs to the file that made it (mmedge_file.imports, by
 * import id) and ends with MMEDGE_IOC_BUF_RELEASE or the file's close.
 * It attaches the buffer to the instance's DMA device and maps it, so
 * the exporter's table is checked against the hub's DMA limits once; it
 * holds the DMA owner of that device (see mmedge_buf.c) and is charged
 * like buffer memory to the file's, the user's and the global cap.
 */

#include <linux/dma-buf.h>
#include <linux/mutex.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/xarray.h>

#include "mmedge_buf.h"
#include "mmedge_drv.h"
#include "mmedge_import.h"
#include "mmedge_uapi.h"
#include "mmedge_user.h"

/**
 * struct mmedge_import - a foreign dma-buf registered with a file
 * @dmabuf: the buffer (referenced).
 * @owner: DMA owner of the device it is attached to (referenced).
 * @user: the user it is charged to (referenced).
 * @charged: bytes charged to the file's, the user's and the global cap
 *	(mmedge_import_cost()).
 * @attach: mmedge's attachment to it.
 * @sgt: its mapping for the mmedge device.
 * @id: the import id (xarray index).
 * @nr_segments: DMA segments of @sgt.
 */
struct mmedge_import {
	struct dma_buf *dmabuf;
	struct mmedge_dma_owner *owner;
	struct mmedge_user *user;
	u64 charged;
	struct dma_buf_attachment *attach;
	struct sg_table *sgt;
	u32 id;
	u32 nr_segments;
};

static struct mmedge_import *mmedge_import_find(struct mmedge_file *mf,
						struct dma_buf *dmabuf)
{
	struct mmedge_import *imp;
	unsigned long idx;

	lockdep_assert_held(&mf->imports_lock);

	xa_for_each(&mf->imports, idx, imp)
		if (imp->dmabuf == dmabuf)
			return imp;
	return NULL;
}

/**
 * mmedge_import_lookup() - did this file import @dmabuf?
 * @mf: the file; the caller holds its imports_lock
 * @dmabuf: the buffer
 * @id: if not NULL and imported, the import id
 * @nr_segments: if not NULL and imported, the DMA segments of its mapping
 *
 * Return: true if @mf imported @dmabuf.
 */
bool mmedge_import_lookup(struct mmedge_file *mf, struct dma_buf *dmabuf,
			  u32 *id, u32 *nr_segments)
{
	struct mmedge_import *imp = mmedge_import_find(mf, dmabuf);

	if (!imp)
		return false;
	if (id)
		*id = imp->id;
	if (nr_segments)
		*nr_segments = imp->nr_segments;
	return true;
}

static void mmedge_import_free(struct mmedge_file *mf,
			       struct mmedge_import *imp)
{
	dma_buf_unmap_attachment_unlocked(imp->attach, imp->sgt,
					  DMA_BIDIRECTIONAL);
	dma_buf_detach(imp->dmabuf, imp->attach);
	dma_buf_put(imp->dmabuf);
	mmedge_dma_owner_put(imp->owner);
	mmedge_mem_uncharge(mf, imp->user, imp->charged);
	mmedge_user_put(imp->user);
	atomic_dec(&mf->mdev->nr_imports);
	kfree(imp);
}

/*
 * What an import costs in kernel memory, charged like buffer memory: a
 * page for its bookkeeping (the import, the attachment, the mapping's
 * own records) and the pages of its scatter-gather table, one per
 * SG_MAX_SINGLE_ALLOC entries. The exporter allocates the table and the
 * DMA API the mapping; neither is charged to a memory cgroup.
 */
static u64 mmedge_import_cost(const struct sg_table *sgt)
{
	return (1 + DIV_ROUND_UP(sgt->orig_nents, SG_MAX_SINGLE_ALLOC)) *
	       PAGE_SIZE;
}

/*
 * Does the exporter's mapping respect the hub's DMA limits (set at probe,
 * see mmedge_dma_limits())? Exporters build their tables themselves; one
 * that ignores the importer's limits gets its import refused.
 */
static int mmedge_import_check_limits(struct mmedge_dev *mdev,
				      struct dma_buf *dmabuf,
				      struct sg_table *sgt)
{
	struct scatterlist *sg;
	unsigned int i;

	for_each_sgtable_dma_sg(sgt, sg, i) {
		if (mmedge_seg_fits(sg_dma_address(sg), sg_dma_len(sg),
				    mdev->dma_max_seg, mdev->dma_boundary))
			continue;
		dev_warn_ratelimited(&mdev->dev,
				     "import of a %s dma-buf refused: DMA segment %u (%u bytes at %pad) exceeds the hub's limits (max segment %u, boundary %#lx)\n",
				     dmabuf->exp_name, i, sg_dma_len(sg),
				     &sg_dma_address(sg), mdev->dma_max_seg,
				     mdev->dma_boundary);
		return -ERANGE;
	}
	return 0;
}

/*
 * MMEDGE_IOC_BUF_IMPORT: register a foreign dma-buf with this file:
 * attach it to the mmedge device and map it for DMA.
 *
 * Errors:
 *  -EBADF:  fd is not open.
 *  -EINVAL: fd is not a dma-buf, flags/pad/reserved set.
 *  -EEXIST: this file already imported that dma-buf.
 *  -ENOSPC: the file holds MMEDGE_MAX_IMPORTS imports.
 *  -ERANGE: the exporter's mapping has a DMA segment longer than the
 *	     hub's dma_max_segment or crossing its dma_segment_boundary.
 *  -ENOMEM: the import's cost (mmedge_import_cost()) is past the file's,
 *	     the user's or the global cap, or no memory.
 *  others:  the exporter's error from attach or map.
 */
int mmedge_ioctl_buf_import(struct mmedge_file *mf, void *data,
			    struct mmedge_ioctl_ctx *ctx)
{
	struct mmedge_dev *mdev = mf->mdev;
	struct mmedge_buf_import *in = data;
	struct mmedge_import *imp;
	struct dma_buf *dmabuf;
	u32 id;
	int ret;

	lockdep_assert_held(&mdev->lock);

	ret = mmedge_buf_import_check(in);
	if (ret)
		return ret;
	dmabuf = dma_buf_get(in->fd);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);

	imp = kzalloc(sizeof(*imp), GFP_KERNEL_ACCOUNT);
	if (!imp) {
		ret = -ENOMEM;
		goto err_put;
	}
	imp->dmabuf = dmabuf;
	/* The attachment is for the device: keep it until the import ends. */
	imp->owner = mmedge_dma_owner_get(mdev->dma_dev);
	if (!imp->owner) {
		ret = -ENODEV;
		kfree(imp);
		goto err_put;
	}
	imp->user = mmedge_user_get_current();
	if (!imp->user) {
		ret = -ENOMEM;
		goto err_owner;
	}

	mutex_lock(&mf->imports_lock);
	if (mmedge_import_find(mf, dmabuf)) {
		ret = -EEXIST;
		goto err_unlock;
	}

	imp->attach = dma_buf_attach(dmabuf, mmedge_dma_owner_dev(imp->owner));
	if (IS_ERR(imp->attach)) {
		ret = PTR_ERR(imp->attach);
		goto err_unlock;
	}
	imp->sgt = dma_buf_map_attachment_unlocked(imp->attach,
						   DMA_BIDIRECTIONAL);
	if (IS_ERR(imp->sgt)) {
		ret = PTR_ERR(imp->sgt);
		goto err_detach;
	}
	imp->nr_segments = imp->sgt->nents;
	ret = mmedge_import_check_limits(mdev, dmabuf, imp->sgt);
	if (ret)
		goto err_unmap;
	ret = mmedge_mem_charge(mf, imp->user, mmedge_import_cost(imp->sgt));
	if (ret)
		goto err_unmap;
	imp->charged = mmedge_import_cost(imp->sgt);

	ret = xa_alloc(&mf->imports, &id, imp, XA_LIMIT(1, MMEDGE_MAX_IMPORTS),
		       GFP_KERNEL_ACCOUNT);
	if (ret) {
		ret = ret == -EBUSY ? -ENOSPC : ret;
		goto err_uncharge;
	}
	imp->id = id;
	atomic_inc(&mdev->nr_imports);
	mutex_unlock(&mf->imports_lock);

	in->id = id;
	in->size = dmabuf->size;
	in->nr_segments = imp->nr_segments;
	return 0;

err_uncharge:
	mmedge_mem_uncharge(mf, imp->user, imp->charged);
err_unmap:
	dma_buf_unmap_attachment_unlocked(imp->attach, imp->sgt,
					  DMA_BIDIRECTIONAL);
err_detach:
	dma_buf_detach(dmabuf, imp->attach);
err_unlock:
	mutex_unlock(&mf->imports_lock);
	mmedge_user_put(imp->user);
err_owner:
	mmedge_dma_owner_put(imp->owner);
	kfree(imp);
err_put:
	dma_buf_put(dmabuf);
	return ret;
}

/*
 * MMEDGE_IOC_BUF_RELEASE: end an import of this file.
 *
 * Errors:
 *  -ENOENT: no import with that id in this file.
 *  -EINVAL: flags/pad/reserved set.
 */
int mmedge_ioctl_buf_release(struct mmedge_file *mf, void *data,
			     struct mmedge_ioctl_ctx *ctx)
{
	struct mmedge_buf_release *rel = data;
	struct mmedge_import *imp;
	int ret;

	ret = mmedge_buf_release_check(rel);
	if (ret)
		return ret;

	mutex_lock(&mf->imports_lock);
	imp = xa_erase(&mf->imports, rel->id);
	mutex_unlock(&mf->imports_lock);
	if (!imp)
		return -ENOENT;
	mmedge_import_free(mf, imp);
	return 0;
}

/* The file is closing: end all its imports. */
void mmedge_file_release_imports(struct mmedge_file *mf)
{
	struct mmedge_import *imp;
	unsigned long idx;

	mutex_lock(&mf->imports_lock);
	xa_for_each(&mf->imports, idx, imp) {
		xa_erase(&mf->imports, idx);
		mmedge_import_free(mf, imp);
	}
	mutex_unlock(&mf->imports_lock);
}

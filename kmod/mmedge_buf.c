// SPDX-License-Identifier: GPL-2.0
/*
 * mmedge: DMA buffers exported as dma-bufs, and imports of foreign ones.
 *
 * A buffer is backed by scatter-gather pages (high orders first, to keep
 * the segment count low) or, on request, by one physically contiguous
 * block from the DMA API. It is exported as a dma-buf whose ops let any
 * device attach and map it (zero copy), userspace mmap it and the kernel
 * vmap it. Its cache mode applies to every CPU mapping; on x86 the pages'
 * memory type is changed too, so the linear map never aliases a
 * write-combined or uncached mapping with a cached one.
 *
 * Lifetime: the dma-buf owns the buffer. The buffer holds a reference on
 * the file context that allocated it (for the per-file memory cap), which
 * holds the instance; the dma-buf holds the module. So a buffer outlives
 * the file and even the unbind of its device, and the module cannot be
 * unloaded while one exists.
 */

#include <linux/dma-buf.h>
#include <linux/dma-mapping.h>
#include <linux/dma-resv.h>
#include <linux/file.h>
#include <linux/highmem.h>
#include <linux/iosys-map.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <linux/xarray.h>
#ifdef CONFIG_X86
#include <asm/set_memory.h>
#endif

#include "mmedge_drv.h"
#include "mmedge_uapi.h"

/* Orders tried for scatter-gather backing: 1 MiB, 64 KiB, 4 KiB blocks. */
static const unsigned int mmedge_orders[] = { 8, 4, 0 };

/**
 * struct mmedge_buf - one buffer
 * @mf: the file context it was allocated through (referenced).
 * @mdev: the instance.
 * @dma_dev: device for contiguous allocation (referenced).
 * @dmabuf: the exported dma-buf; it owns this structure.
 * @id: unique per instance.
 * @size: bytes, page aligned.
 * @charged: bytes charged to the caps (the contiguous block may be larger).
 * @flags: MMEDGE_BUF_* from the allocation.
 * @cache: MMEDGE_BUF_CACHE_*.
 * @pages: every page of the buffer, for mmap and vmap.
 * @npages: entries in @pages.
 * @sgt: CPU-side description: one entry per allocated block.
 * @contig_dma: DMA address of the contiguous block (for freeing).
 * @contig_alloc: bytes of the contiguous block.
 * @lock: see below.
 * @attachments: struct mmedge_attachment list.
 * @vaddr: kernel mapping while @vmap_count > 0.
 * @vmap_count: vmap users.
 */
struct mmedge_buf {
	struct mmedge_file *mf;
	struct mmedge_dev *mdev;
	struct device *dma_dev;
	struct dma_buf *dmabuf;
	u64 id;
	size_t size;
	size_t charged;
	u32 flags;
	u32 cache;
	struct page **pages;
	unsigned long npages;
	struct sg_table sgt;
	dma_addr_t contig_dma;
	size_t contig_alloc;

	/* Protects @attachments, @vaddr and @vmap_count. */
	struct mutex lock;
	struct list_head attachments;
	void *vaddr;
	unsigned int vmap_count;
};

/**
 * struct mmedge_attachment - one importer's view of a buffer
 * @dev: the importer's device.
 * @sgt: copy of the buffer's table, mapped for @dev while @mapped.
 * @dir: direction of the current mapping.
 * @mapped: the table is DMA-mapped for @dev.
 * @node: entry in mmedge_buf.attachments.
 */
struct mmedge_attachment {
	struct device *dev;
	struct sg_table sgt;
	enum dma_data_direction dir;
	bool mapped;
	struct list_head node;
};

/**
 * struct mmedge_import - a foreign dma-buf registered with a file
 * @dmabuf: the buffer (referenced).
 * @attach: mmedge's attachment to it.
 * @sgt: its mapping for the mmedge device.
 * @id: the import id (xarray index).
 * @nr_segments: DMA segments of @sgt.
 */
struct mmedge_import {
	struct dma_buf *dmabuf;
	struct dma_buf_attachment *attach;
	struct sg_table *sgt;
	u32 id;
	u32 nr_segments;
};

static const struct dma_buf_ops mmedge_dmabuf_ops;

static bool mmedge_is_ours(struct dma_buf *dmabuf)
{
	return dmabuf->ops == &mmedge_dmabuf_ops;
}

static pgprot_t mmedge_buf_prot(const struct mmedge_buf *buf, pgprot_t prot)
{
	switch (buf->cache) {
	case MMEDGE_BUF_CACHE_WC:
		return pgprot_writecombine(prot);
	case MMEDGE_BUF_CACHE_UNCACHED:
		return pgprot_noncached(prot);
	default:
		return prot;
	}
}

static bool mmedge_buf_cpu_cached(const struct mmedge_buf *buf)
{
	return buf->cache == MMEDGE_BUF_CACHE_CACHED;
}

/* Set the memory type of the pages to match the buffer's CPU mappings. */
static int mmedge_buf_set_memtype(struct mmedge_buf *buf, bool restore)
{
#ifdef CONFIG_X86
	if (mmedge_buf_cpu_cached(buf))
		return 0;
	if (restore)
		return set_pages_array_wb(buf->pages, buf->npages);
	if (buf->cache == MMEDGE_BUF_CACHE_WC)
		return set_pages_array_wc(buf->pages, buf->npages);
	return set_pages_array_uc(buf->pages, buf->npages);
#else
	return 0;
#endif
}

static void mmedge_buf_free_pages(struct mmedge_buf *buf)
{
	struct scatterlist *sg;
	unsigned int i;

	if (buf->flags & MMEDGE_BUF_CONTIG) {
		if (buf->npages)
			dma_free_pages(buf->dma_dev, buf->contig_alloc,
				       buf->pages[0], buf->contig_dma,
				       DMA_BIDIRECTIONAL);
	} else if (buf->sgt.sgl) {
		for_each_sgtable_sg(&buf->sgt, sg, i)
			if (sg_page(sg))
				__free_pages(sg_page(sg), get_order(sg->length));
	}
	sg_free_table(&buf->sgt);
	kvfree(buf->pages);
}

static int mmedge_buf_alloc_contig(struct mmedge_buf *buf)
{
	struct page *page;
	unsigned long i;
	int ret;

	buf->contig_alloc = PAGE_SIZE << get_order(buf->size);
	page = dma_alloc_pages(buf->dma_dev, buf->contig_alloc, &buf->contig_dma,
			       DMA_BIDIRECTIONAL,
			       GFP_KERNEL | __GFP_ACCOUNT | __GFP_NOWARN);
	if (!page)
		return -ENOMEM;
	for (i = 0; i < buf->npages; i++)
		buf->pages[i] = page + i;
	ret = sg_alloc_table(&buf->sgt, 1, GFP_KERNEL);
	if (ret) {
		dma_free_pages(buf->dma_dev, buf->contig_alloc, page,
			       buf->contig_dma, DMA_BIDIRECTIONAL);
		buf->npages = 0;
		return ret;
	}
	sg_set_page(buf->sgt.sgl, page, buf->size, 0);
	return 0;
}

static int mmedge_buf_alloc_sg(struct mmedge_buf *buf)
{
	unsigned long done = 0, nblocks = 0, i, left = buf->npages;
	struct page **blocks;
	unsigned int *orders;
	struct scatterlist *sg;
	int ret = -ENOMEM;

	/* At most one block per page; usually far fewer. */
	blocks = kvmalloc_array(buf->npages, sizeof(*blocks), GFP_KERNEL);
	orders = kvmalloc_array(buf->npages, sizeof(*orders), GFP_KERNEL);
	if (!blocks || !orders)
		goto out;

	while (left) {
		struct page *page = NULL;
		unsigned int k, order = 0;

		if (fatal_signal_pending(current)) {
			ret = -EINTR;
			goto err_free;
		}
		for (k = 0; k < ARRAY_SIZE(mmedge_orders); k++) {
			gfp_t gfp = GFP_KERNEL | __GFP_ACCOUNT | __GFP_ZERO;

			order = mmedge_orders[k];
			if ((1UL << order) > left)
				continue;
			if (order)
				gfp = (gfp | __GFP_NOWARN | __GFP_NORETRY) &
				      ~__GFP_RECLAIM;
			page = alloc_pages(gfp, order);
			if (page)
				break;
		}
		if (!page)
			goto err_free;
		blocks[nblocks] = page;
		orders[nblocks++] = order;
		for (i = 0; i < (1UL << order); i++)
			buf->pages[done++] = page + i;
		left -= 1UL << order;
	}

	ret = sg_alloc_table(&buf->sgt, nblocks, GFP_KERNEL);
	if (ret)
		goto err_free;
	for_each_sgtable_sg(&buf->sgt, sg, i)
		sg_set_page(sg, blocks[i], PAGE_SIZE << orders[i], 0);
	ret = 0;
	goto out;

err_free:
	for (i = 0; i < nblocks; i++)
		__free_pages(blocks[i], orders[i]);
out:
	kvfree(blocks);
	kvfree(orders);
	return ret;
}

static int mmedge_attach(struct dma_buf *dmabuf,
			 struct dma_buf_attachment *attachment)
{
	struct mmedge_buf *buf = dmabuf->priv;
	struct mmedge_attachment *a;
	struct scatterlist *src, *dst;
	unsigned int i;
	int ret;

	a = kzalloc(sizeof(*a), GFP_KERNEL);
	if (!a)
		return -ENOMEM;
	ret = sg_alloc_table(&a->sgt, buf->sgt.orig_nents, GFP_KERNEL);
	if (ret) {
		kfree(a);
		return ret;
	}
	dst = a->sgt.sgl;
	for_each_sgtable_sg(&buf->sgt, src, i) {
		sg_set_page(dst, sg_page(src), src->length, src->offset);
		dst = sg_next(dst);
	}
	a->dev = attachment->dev;
	INIT_LIST_HEAD(&a->node);
	attachment->priv = a;

	mutex_lock(&buf->lock);
	list_add(&a->node, &buf->attachments);
	mutex_unlock(&buf->lock);
	return 0;
}

static void mmedge_detach(struct dma_buf *dmabuf,
			  struct dma_buf_attachment *attachment)
{
	struct mmedge_buf *buf = dmabuf->priv;
	struct mmedge_attachment *a = attachment->priv;

	mutex_lock(&buf->lock);
	list_del(&a->node);
	mutex_unlock(&buf->lock);
	sg_free_table(&a->sgt);
	kfree(a);
}

static struct sg_table *mmedge_map_dma_buf(struct dma_buf_attachment *attachment,
					   enum dma_data_direction dir)
{
	struct mmedge_buf *buf = attachment->dmabuf->priv;
	struct mmedge_attachment *a = attachment->priv;
	unsigned long attrs = 0;
	int ret;

	/* No CPU cache lines to clean for write-combined/uncached pages. */
	if (!mmedge_buf_cpu_cached(buf))
		attrs |= DMA_ATTR_SKIP_CPU_SYNC;
	ret = dma_map_sgtable(a->dev, &a->sgt, dir, attrs);
	if (ret)
		return ERR_PTR(ret);

	mutex_lock(&buf->lock);
	a->dir = dir;
	a->mapped = true;
	mutex_unlock(&buf->lock);
	return &a->sgt;
}

static void mmedge_unmap_dma_buf(struct dma_buf_attachment *attachment,
				 struct sg_table *sgt,
				 enum dma_data_direction dir)
{
	struct mmedge_buf *buf = attachment->dmabuf->priv;
	struct mmedge_attachment *a = attachment->priv;
	unsigned long attrs = 0;

	if (!mmedge_buf_cpu_cached(buf))
		attrs |= DMA_ATTR_SKIP_CPU_SYNC;
	mutex_lock(&buf->lock);
	a->mapped = false;
	mutex_unlock(&buf->lock);
	dma_unmap_sgtable(a->dev, sgt, dir, attrs);
}

/*
 * Make [off, off + len) coherent for the CPU (@for_cpu) or for the
 * devices, on every DMA mapping and on the kernel mapping. Returns the
 * bytes that maintenance was asked for.
 */
static u64 mmedge_buf_sync_range(struct mmedge_buf *buf, u64 off, u64 len,
				 enum dma_data_direction dir, bool for_cpu)
{
	struct mmedge_attachment *a;
	u64 synced = 0;

	lockdep_assert_held(&buf->lock);

	if (buf->vaddr) {
		if (for_cpu)
			invalidate_kernel_vmap_range(buf->vaddr + off, len);
		else
			flush_kernel_vmap_range(buf->vaddr + off, len);
	}

	list_for_each_entry(a, &buf->attachments, node) {
		struct scatterlist *sg;
		u64 seg_start = 0;
		unsigned int i;

		if (!a->mapped)
			continue;
		for_each_sgtable_dma_sg(&a->sgt, sg, i) {
			struct mmedge_range r;

			r = mmedge_range_clip(seg_start, sg_dma_len(sg), off, len);
			seg_start += sg_dma_len(sg);
			if (!r.len)
				continue;
			if (for_cpu)
				dma_sync_single_range_for_cpu(a->dev,
							      sg_dma_address(sg),
							      r.off, r.len, dir);
			else
				dma_sync_single_range_for_device(a->dev,
								 sg_dma_address(sg),
								 r.off, r.len, dir);
			synced += r.len;
		}
	}
	return synced;
}

static int mmedge_begin_cpu_access(struct dma_buf *dmabuf,
				   enum dma_data_direction dir)
{
	struct mmedge_buf *buf = dmabuf->priv;

	mutex_lock(&buf->lock);
	mmedge_buf_sync_range(buf, 0, buf->size, dir, true);
	mutex_unlock(&buf->lock);
	return 0;
}

static int mmedge_end_cpu_access(struct dma_buf *dmabuf,
				 enum dma_data_direction dir)
{
	struct mmedge_buf *buf = dmabuf->priv;

	mutex_lock(&buf->lock);
	mmedge_buf_sync_range(buf, 0, buf->size, dir, false);
	mutex_unlock(&buf->lock);
	return 0;
}

static int mmedge_mmap(struct dma_buf *dmabuf, struct vm_area_struct *vma)
{
	struct mmedge_buf *buf = dmabuf->priv;
	unsigned long addr = vma->vm_start;
	unsigned long pgoff = vma->vm_pgoff;
	unsigned long npages = vma_pages(vma);
	unsigned long i;
	int ret;

	/* dma_buf_mmap_internal() checked that the range fits the buffer. */
	if (pgoff + npages > buf->npages)
		return -EINVAL;

	vma->vm_flags |= VM_DONTEXPAND | VM_DONTDUMP;
	vma->vm_page_prot = mmedge_buf_prot(buf, vma->vm_page_prot);

	for (i = 0; i < npages; i++, addr += PAGE_SIZE) {
		ret = remap_pfn_range(vma, addr,
				      page_to_pfn(buf->pages[pgoff + i]),
				      PAGE_SIZE, vma->vm_page_prot);
		if (ret)
			return ret;
	}
	return 0;
}

static int mmedge_vmap(struct dma_buf *dmabuf, struct iosys_map *map)
{
	struct mmedge_buf *buf = dmabuf->priv;
	void *vaddr;

	mutex_lock(&buf->lock);
	if (!buf->vmap_count) {
		vaddr = vmap(buf->pages, buf->npages, VM_MAP,
			     mmedge_buf_prot(buf, PAGE_KERNEL));
		if (!vaddr) {
			mutex_unlock(&buf->lock);
			return -ENOMEM;
		}
		buf->vaddr = vaddr;
	}
	buf->vmap_count++;
	iosys_map_set_vaddr(map, buf->vaddr);
	mutex_unlock(&buf->lock);
	return 0;
}

static void mmedge_vunmap(struct dma_buf *dmabuf, struct iosys_map *map)
{
	struct mmedge_buf *buf = dmabuf->priv;

	mutex_lock(&buf->lock);
	if (!WARN_ON(!buf->vmap_count) && !--buf->vmap_count) {
		vunmap(buf->vaddr);
		buf->vaddr = NULL;
	}
	mutex_unlock(&buf->lock);
	iosys_map_clear(map);
}

static void mmedge_buf_destroy(struct mmedge_buf *buf)
{
	struct mmedge_dev *mdev = buf->mdev;

	if (buf->npages && mmedge_buf_set_memtype(buf, true))
		dev_warn(&mdev->dev, "buffer %llu: cannot restore page caching\n",
			 buf->id);
	mmedge_buf_free_pages(buf);
	mmedge_uncharge(&buf->mf->mem_used, buf->charged);
	mmedge_uncharge(&mmedge_mem_used, buf->charged);
	put_device(buf->dma_dev);
	mmedge_file_put(buf->mf);
	kfree(buf);
}

static void mmedge_release(struct dma_buf *dmabuf)
{
	struct mmedge_buf *buf = dmabuf->priv;
	struct mmedge_dev *mdev = buf->mdev;

	WARN_ON(buf->vmap_count);
	atomic_dec(&mdev->nr_bufs);
	atomic64_sub(buf->size, &mdev->buf_bytes);
	mmedge_buf_destroy(buf);
}

static const struct dma_buf_ops mmedge_dmabuf_ops = {
	.attach = mmedge_attach,
	.detach = mmedge_detach,
	.map_dma_buf = mmedge_map_dma_buf,
	.unmap_dma_buf = mmedge_unmap_dma_buf,
	.begin_cpu_access = mmedge_begin_cpu_access,
	.end_cpu_access = mmedge_end_cpu_access,
	.mmap = mmedge_mmap,
	.vmap = mmedge_vmap,
	.vunmap = mmedge_vunmap,
	.release = mmedge_release,
};

/*
 * MMEDGE_IOC_BUF_ALLOC: allocate a buffer and return it as a dma-buf fd.
 *
 * Errors:
 *  -EINVAL: size 0, unknown flags, cache mode or fd_flags, reserved set.
 *  -ENOMEM: above max_buffer_size, the file's or the global cap, or no
 *	     memory (nothing stays charged or allocated).
 *  -EMFILE: no free file descriptor.
 *  -EINTR:  a fatal signal arrived during a large allocation.
 */
int mmedge_ioctl_buf_alloc(struct mmedge_file *mf, void *data,
			   struct mmedge_ioctl_ctx *ctx)
{
	DEFINE_DMA_BUF_EXPORT_INFO(exp_info);
	struct mmedge_dev *mdev = mf->mdev;
	struct mmedge_buf_alloc *a = data;
	struct dma_buf *dmabuf;
	struct mmedge_buf *buf;
	u64 size;
	int fd, ret;

	lockdep_assert_held(&mdev->lock);

	ret = mmedge_buf_alloc_check(a, mmedge_file_mem_limit(), PAGE_SHIFT,
				     &size);
	if (ret)
		return ret;
	if (size > SIZE_MAX || (size >> PAGE_SHIFT) > UINT_MAX)
		return -ENOMEM;

	buf = kzalloc(sizeof(*buf), GFP_KERNEL_ACCOUNT);
	if (!buf)
		return -ENOMEM;
	mutex_init(&buf->lock);
	INIT_LIST_HEAD(&buf->attachments);
	buf->size = size;
	buf->npages = size >> PAGE_SHIFT;
	buf->flags = a->flags;
	buf->cache = a->flags & MMEDGE_BUF_CACHE_MASK;
	buf->mdev = mdev;
	buf->dma_dev = get_device(mdev->dma_dev);
	mmedge_file_get(mf);
	buf->mf = mf;

	/* Charge first, so a refused request touches no memory. */
	buf->charged = (a->flags & MMEDGE_BUF_CONTIG) ?
		       PAGE_SIZE << get_order(size) : size;
	ret = mmedge_charge(&mf->mem_used, buf->charged, mmedge_file_mem_limit());
	if (ret)
		goto err_uncharged;
	ret = mmedge_charge(&mmedge_mem_used, buf->charged, mmedge_mem_limit());
	if (ret) {
		mmedge_uncharge(&mf->mem_used, buf->charged);
		goto err_uncharged;
	}

	buf->pages = kvmalloc_array(buf->npages, sizeof(*buf->pages),
				    GFP_KERNEL_ACCOUNT);
	if (!buf->pages) {
		ret = -ENOMEM;
		goto err_destroy;
	}
	if (a->flags & MMEDGE_BUF_CONTIG)
		ret = mmedge_buf_alloc_contig(buf);
	else
		ret = mmedge_buf_alloc_sg(buf);
	if (ret) {
		buf->npages = 0;
		goto err_destroy;
	}
	ret = mmedge_buf_set_memtype(buf, false);
	if (ret)
		goto err_destroy;

	buf->id = atomic64_inc_return(&mdev->next_buf_id);

	fd = get_unused_fd_flags(a->fd_flags & O_CLOEXEC);
	if (fd < 0) {
		ret = fd;
		goto err_destroy;
	}

	exp_info.ops = &mmedge_dmabuf_ops;
	exp_info.size = buf->size;
	exp_info.flags = a->fd_flags;
	exp_info.priv = buf;
	dmabuf = dma_buf_export(&exp_info);
	if (IS_ERR(dmabuf)) {
		ret = PTR_ERR(dmabuf);
		put_unused_fd(fd);
		goto err_destroy;
	}
	/* From here the dma-buf owns buf: dma_buf_put() frees it. */
	buf->dmabuf = dmabuf;
	atomic_inc(&mdev->nr_bufs);
	atomic64_add(buf->size, &mdev->buf_bytes);

	a->fd = fd;
	a->cache = buf->cache;
	a->alloc_size = buf->size;
	a->id = buf->id;
	ctx->install_file = dmabuf->file;
	ctx->install_fd = fd;
	return 0;

err_uncharged:
	buf->charged = 0;
err_destroy:
	mmedge_buf_destroy(buf);
	return ret;
}

static struct mmedge_import *mmedge_find_import(struct mmedge_file *mf,
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

/*
 * MMEDGE_IOC_BUF_INFO: describe an mmedge buffer, or a foreign buffer
 * imported into this file.
 *
 * Errors:
 *  -EBADF:  fd is not open.
 *  -EINVAL: fd is not a dma-buf, is a foreign dma-buf this file did not
 *	     import, or flags/pad/reserved are set.
 */
int mmedge_ioctl_buf_info(struct mmedge_file *mf, void *data,
			  struct mmedge_ioctl_ctx *ctx)
{
	struct mmedge_buf_info *info = data;
	struct dma_buf_attachment *att;
	struct dma_buf *dmabuf;
	int ret;

	ret = mmedge_buf_info_check(info);
	if (ret)
		return ret;
	dmabuf = dma_buf_get(info->fd);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);

	mutex_lock(&mf->imports_lock);
	if (mmedge_is_ours(dmabuf)) {
		struct mmedge_buf *buf = dmabuf->priv;

		info->size = buf->size;
		info->info_flags = MMEDGE_BUF_INFO_OURS;
		if (buf->flags & MMEDGE_BUF_CONTIG)
			info->info_flags |= MMEDGE_BUF_INFO_CONTIG;
		info->cache = buf->cache;
		info->nr_segments = buf->sgt.orig_nents;
		info->id = buf->id;
		info->alloc_flags = buf->flags;
	} else {
		struct mmedge_import *imp = mmedge_find_import(mf, dmabuf);

		if (!imp) {
			ret = -EINVAL;
			goto out;
		}
		info->size = dmabuf->size;
		info->info_flags = 0;
		if (imp->nr_segments == 1)
			info->info_flags |= MMEDGE_BUF_INFO_CONTIG;
		info->cache = 0;
		info->nr_segments = imp->nr_segments;
		info->id = imp->id;
		info->alloc_flags = 0;
	}
	if (mmedge_find_import(mf, dmabuf))
		info->info_flags |= MMEDGE_BUF_INFO_IMPORTED;

	info->nr_attachments = 0;
	dma_resv_lock(dmabuf->resv, NULL);
	list_for_each_entry(att, &dmabuf->attachments, node)
		info->nr_attachments++;
	dma_resv_unlock(dmabuf->resv);
out:
	mutex_unlock(&mf->imports_lock);
	dma_buf_put(dmabuf);
	return ret;
}

/*
 * MMEDGE_IOC_BUF_SYNC: begin or end CPU access to a byte range of an
 * mmedge buffer. A START first waits for the buffer's fences.
 *
 * Errors:
 *  -EBADF:  fd is not open.
 *  -EINVAL: not an mmedge dma-buf, bad flags, len 0, range past the end
 *	     or overflowing, reserved set.
 *  -EINTR / -ERESTARTSYS: a signal arrived while waiting for fences.
 */
int mmedge_ioctl_buf_sync(struct mmedge_file *mf, void *data,
			  struct mmedge_ioctl_ctx *ctx)
{
	struct mmedge_buf_sync *s = data;
	enum dma_data_direction dir;
	struct mmedge_buf *buf;
	struct dma_buf *dmabuf;
	bool write;
	long t;
	int ret;

	dmabuf = dma_buf_get(s->fd);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);
	if (!mmedge_is_ours(dmabuf)) {
		ret = -EINVAL;
		goto out;
	}
	buf = dmabuf->priv;
	ret = mmedge_buf_sync_check(s, buf->size);
	if (ret)
		goto out;

	write = s->flags & MMEDGE_BUF_SYNC_WRITE;
	switch (s->flags & MMEDGE_BUF_SYNC_RW) {
	case MMEDGE_BUF_SYNC_READ:
		dir = DMA_FROM_DEVICE;
		break;
	case MMEDGE_BUF_SYNC_WRITE:
		dir = DMA_TO_DEVICE;
		break;
	default:
		dir = DMA_BIDIRECTIONAL;
		break;
	}

	if (!(s->flags & MMEDGE_BUF_SYNC_END)) {
		t = dma_resv_wait_timeout(dmabuf->resv, dma_resv_usage_rw(write),
					  true, MAX_SCHEDULE_TIMEOUT);
		if (t < 0) {
			ret = t;
			goto out;
		}
	}

	mutex_lock(&buf->lock);
	s->synced = mmedge_buf_sync_range(buf, s->offset, s->len, dir,
					  !(s->flags & MMEDGE_BUF_SYNC_END));
	mutex_unlock(&buf->lock);
out:
	dma_buf_put(dmabuf);
	return ret;
}

static void mmedge_import_free(struct mmedge_dev *mdev,
			       struct mmedge_import *imp)
{
	dma_buf_unmap_attachment(imp->attach, imp->sgt, DMA_BIDIRECTIONAL);
	dma_buf_detach(imp->dmabuf, imp->attach);
	dma_buf_put(imp->dmabuf);
	atomic_dec(&mdev->nr_imports);
	kfree(imp);
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

	mutex_lock(&mf->imports_lock);
	if (mmedge_find_import(mf, dmabuf)) {
		ret = -EEXIST;
		goto err_unlock;
	}

	imp->attach = dma_buf_attach(dmabuf, mdev->dma_dev);
	if (IS_ERR(imp->attach)) {
		ret = PTR_ERR(imp->attach);
		goto err_unlock;
	}
	imp->sgt = dma_buf_map_attachment(imp->attach, DMA_BIDIRECTIONAL);
	if (IS_ERR(imp->sgt)) {
		ret = PTR_ERR(imp->sgt);
		goto err_detach;
	}
	imp->nr_segments = imp->sgt->nents;

	ret = xa_alloc(&mf->imports, &id, imp, XA_LIMIT(1, MMEDGE_MAX_IMPORTS),
		       GFP_KERNEL_ACCOUNT);
	if (ret) {
		ret = ret == -EBUSY ? -ENOSPC : ret;
		goto err_unmap;
	}
	imp->id = id;
	atomic_inc(&mdev->nr_imports);
	mutex_unlock(&mf->imports_lock);

	in->id = id;
	in->size = dmabuf->size;
	in->nr_segments = imp->nr_segments;
	return 0;

err_unmap:
	dma_buf_unmap_attachment(imp->attach, imp->sgt, DMA_BIDIRECTIONAL);
err_detach:
	dma_buf_detach(dmabuf, imp->attach);
err_unlock:
	mutex_unlock(&mf->imports_lock);
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
	if (!rel->id || rel->id > MMEDGE_MAX_IMPORTS)
		return -ENOENT;

	mutex_lock(&mf->imports_lock);
	imp = xa_erase(&mf->imports, rel->id);
	mutex_unlock(&mf->imports_lock);
	if (!imp)
		return -ENOENT;
	mmedge_import_free(mf->mdev, imp);
	return 0;
}

/**
 * mmedge_buf_usable() - may this file target @dmabuf with a channel?
 * @mf: the file
 * @dmabuf: the buffer
 *
 * Return: true for an mmedge buffer or a buffer this file imported.
 */
bool mmedge_buf_usable(struct mmedge_file *mf, struct dma_buf *dmabuf)
{
	bool ret;

	if (mmedge_is_ours(dmabuf))
		return true;
	mutex_lock(&mf->imports_lock);
	ret = mmedge_find_import(mf, dmabuf);
	mutex_unlock(&mf->imports_lock);
	return ret;
}

/* The file is closing: end all its imports. */
void mmedge_file_release_imports(struct mmedge_file *mf)
{
	struct mmedge_import *imp;
	unsigned long idx;

	mutex_lock(&mf->imports_lock);
	xa_for_each(&mf->imports, idx, imp) {
		xa_erase(&mf->imports, idx);
		mmedge_import_free(mf->mdev, imp);
	}
	mutex_unlock(&mf->imports_lock);
}

MODULE_IMPORT_NS(DMA_BUF);

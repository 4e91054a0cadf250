// SPDX-License-Identifier: GPL-2.0
/*
 * mmedge: DMA buffers exported as dma-bufs (imports of foreign ones are
 * in mmedge_import.c).
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
 * holds the instance, and one on the DMA owner of the device it was
 * allocated for (see struct mmedge_dma_owner); the dma-buf holds the
 * module. So a buffer outlives the file and even the unbind of its
 * device, and the module cannot be unloaded while one exists.
 *
 * Locking, per buffer:
 *  - @map_lock serializes vmap and vunmap, and the making and removal of
 *    DMA mappings; vmap() and dma_map_sgtable() allocate under it.
 *  - @lock protects the attachment and mapping lists, each mapping's
 *    users and the published kernel mapping. Nothing allocates, sleeps on
 *    another lock or waits for a fence while holding it: only list and
 *    flag updates and cache maintenance run under it, so the engine may
 *    take it inside a fence signalling section (mmedge_buf_written()).
 *  Order: the dma-buf core's lock (dmabuf->resv, and before 6.2
 *  dmabuf->lock for vmap) -> @map_lock -> @lock. DMA mapping and unmapping
 *  (which may allocate IOVA or bounce slots) run outside @lock.
 */

#include <linux/dma-buf.h>
#include <linux/dma-mapping.h>
#include <linux/dma-resv.h>
#include <linux/file.h>
#include <linux/highmem.h>
#include <linux/iosys-map.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/of.h>
#include <linux/of_reserved_mem.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <linux/xarray.h>
#ifdef CONFIG_X86
#include <asm/set_memory.h>
#endif

#include "mmedge_buf.h"
#include "mmedge_compat.h"
#include "mmedge_drv.h"
#include "mmedge_limits.h"
#include "mmedge_import.h"
#include "mmedge_uapi.h"
#include "mmedge_user.h"

/* Orders tried for scatter-gather backing: 1 MiB, 64 KiB, 4 KiB blocks. */
static const unsigned int mmedge_orders[] = { 8, 4, 0 };

/**
 * struct mmedge_dma_owner - what buffers need of the device they were
 *	allocated for, kept until the last of them is gone
 * @ref: one reference for the driver's binding to @dev, one per buffer
 *	and per import.
 * @dev: the platform device (referenced).
 * @rmem: its reserved-memory region (CMA) was assigned to it by
 *	of_reserved_mem_device_init().
 * @bound: the driver is bound to @dev and holds a reference.
 * @node: entry in mmedge_dma_owners.
 *
 * Unbinding the platform device cannot wait for userspace to drop its
 * buffers, and contiguous buffers must be freed with dma_free_pages() on
 * the device and the region they came from: releasing the region at
 * unbind would hand CMA pages back to the buddy allocator. So the region
 * and the device reference belong to this object, which the binding and
 * every buffer and import reference: the region is released and the
 * device put when the driver is unbound and the last buffer is freed. A
 * new bind of the same device while old buffers live reuses the object
 * (the region is still assigned; assigning it again would let the old
 * buffers' release take the new binding's region away).
 */
struct mmedge_dma_owner {
	struct kref ref;
	struct device *dev;
	bool rmem;
	bool bound;
	struct list_head node;
};

/* Protects mmedge_dma_owners and the @bound flags. */
static DEFINE_MUTEX(mmedge_dma_owners_lock);
static LIST_HEAD(mmedge_dma_owners);

/**
 * struct mmedge_buf - one buffer
 * @mf: the file context it was allocated through (referenced).
 * @user: the user it is charged to (referenced).
 * @mdev: the instance.
 * @owner: DMA owner of the device for contiguous allocation and cache
 *	cleaning (referenced).
 * @dma_dev: @owner's device.
 * @dmabuf: the exported dma-buf; it owns this structure.
 * @id: unique per instance.
 * @size: bytes, page aligned.
 * @charged: bytes charged to the caps (the contiguous block may be larger),
 *	the file's, the user's and the global one.
 * @flags: MMEDGE_BUF_* from the allocation.
 * @cache: MMEDGE_BUF_CACHE_*.
 * @pages: every page of the buffer, for mmap and vmap; NULL until
 *	allocated.
 * @npages: pages of the buffer (entries of @pages).
 * @sgt: CPU-side description: one entry per allocated block; @sgt.sgl is
 *	NULL until the blocks are allocated.
 * @contig_page: first page of the contiguous block, NULL if none.
 * @contig_dma: DMA address of the contiguous block (for freeing).
 * @contig_alloc: bytes of the contiguous block.
 * @memtype_set: the pages' memory type was (maybe partly) changed and
 *	must be restored before they are freed.
 * @map_lock: see the file comment.
 * @vmap_count: vmap users; under @map_lock.
 * @lock: see the file comment.
 * @attachments: struct mmedge_attachment list; under @lock.
 * @maps: struct mmedge_devmap list, at most one per device and direction;
 *	written under both locks, read under either.
 * @vaddr: kernel mapping while @vmap_count > 0; written under both
 *	locks, read under either.
 */
struct mmedge_buf {
	struct mmedge_file *mf;
	struct mmedge_user *user;
	struct mmedge_dev *mdev;
	struct mmedge_dma_owner *owner;
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
	struct page *contig_page;
	dma_addr_t contig_dma;
	size_t contig_alloc;
	bool memtype_set;

	/* Serializes vmap, vunmap and DMA mapping; may allocate under it. */
	struct mutex map_lock;
	unsigned int vmap_count;

	/* Attachments, mappings, @vaddr; no allocation or wait under it. */
	struct mutex lock;
	struct list_head attachments;
	struct list_head maps;
	void *vaddr;
};

/**
 * struct mmedge_devmap - a buffer's DMA mapping for one device and
 *	direction, shared by the attachments of that device that map the
 *	buffer in that direction (see mmedge_devmap_get())
 * @dev: the device.
 * @dir: direction of the mapping.
 * @sgt: the buffer's blocks cut to @dev's segment limits, DMA-mapped for
 *	@dev; never handed to an importer.
 * @alloc: nothing was mapped: @dev is the device a contiguous buffer was
 *	allocated for, and the DMA address dma_alloc_pages() gave the block
 *	serves every direction (@dir is DMA_BIDIRECTIONAL).
 * @split: the mapping kept one DMA segment per CPU entry (nothing
 *	merged), so ranges can be synced entry by entry.
 * @users: attachments using the mapping; written under both locks.
 * @node: entry in mmedge_buf.maps.
 */
struct mmedge_devmap {
	struct device *dev;
	enum dma_data_direction dir;
	struct sg_table sgt;
	bool alloc;
	bool split;
	unsigned int users;
	struct list_head node;
};

/**
 * struct mmedge_attachment - one importer's view of a buffer
 * @dev: the importer's device.
 * @sgt: the buffer's blocks cut to @dev's segment limits; while @map is
 *	set, it holds @map's DMA addresses and is the importer's table.
 * @map: the mapping in use, NULL while unmapped (one at a time); under
 *	mmedge_buf.map_lock.
 * @node: entry in mmedge_buf.attachments.
 */
struct mmedge_attachment {
	struct device *dev;
	struct sg_table sgt;
	struct mmedge_devmap *map;
	struct list_head node;
};

static const struct dma_buf_ops mmedge_dmabuf_ops;

/* Is @dmabuf an mmedge buffer (of any instance)? */
bool mmedge_buf_is_ours(struct dma_buf *dmabuf)
{
	return dmabuf->ops == &mmedge_dmabuf_ops;
}

static struct mmedge_dma_owner *mmedge_dma_owner_find(struct device *dev)
{
	struct mmedge_dma_owner *o;

	lockdep_assert_held(&mmedge_dma_owners_lock);

	list_for_each_entry(o, &mmedge_dma_owners, node)
		if (o->dev == dev)
			return o;
	return NULL;
}

/**
 * mmedge_dma_owner_bind() - the driver binds to @dev: take its DMA owner
 * @dev: the platform device
 *
 * Creates the owner (assigning the device's reserved-memory region, if
 * the device tree names one) or, while buffers of an earlier binding
 * live, takes the existing one. Undone by mmedge_dma_owner_unbind().
 *
 * Return: 0, -ENOMEM, -EBUSY if the device is bound already, or the error
 * of of_reserved_mem_device_init().
 */
int mmedge_dma_owner_bind(struct device *dev)
{
	struct mmedge_dma_owner *o;
	int ret = 0;

	mutex_lock(&mmedge_dma_owners_lock);
	o = mmedge_dma_owner_find(dev);
	if (o) {
		if (WARN_ON(o->bound)) {
			ret = -EBUSY;
			goto out;
		}
		kref_get(&o->ref);
		o->bound = true;
		goto out;
	}

	o = kzalloc(sizeof(*o), GFP_KERNEL);
	if (!o) {
		ret = -ENOMEM;
		goto out;
	}
	/* A reusable (CMA) memory-region backs contiguous buffers. */
	if (IS_ENABLED(CONFIG_OF_RESERVED_MEM) && dev->of_node) {
		ret = of_reserved_mem_device_init(dev);
		if (ret && ret != -ENODEV) {
			kfree(o);
			goto out;
		}
		o->rmem = !ret;
		ret = 0;
	}
	kref_init(&o->ref);
	o->dev = get_device(dev);
	o->bound = true;
	list_add(&o->node, &mmedge_dma_owners);
out:
	mutex_unlock(&mmedge_dma_owners_lock);
	return ret;
}

static void mmedge_dma_owner_release(struct kref *ref)
	__releases(&mmedge_dma_owners_lock)
{
	struct mmedge_dma_owner *o = container_of(ref, struct mmedge_dma_owner,
						  ref);

	list_del(&o->node);
	mutex_unlock(&mmedge_dma_owners_lock);
	if (o->rmem)
		of_reserved_mem_device_release(o->dev);
	put_device(o->dev);
	kfree(o);
}

void mmedge_dma_owner_put(struct mmedge_dma_owner *o)
{
	kref_put_mutex(&o->ref, mmedge_dma_owner_release,
		       &mmedge_dma_owners_lock);
}

/* The device @o stands for. */
struct device *mmedge_dma_owner_dev(const struct mmedge_dma_owner *o)
{
	return o->dev;
}

/* A reference for a buffer or an import; NULL if @dev is not bound. */
struct mmedge_dma_owner *mmedge_dma_owner_get(struct device *dev)
{
	struct mmedge_dma_owner *o;

	mutex_lock(&mmedge_dma_owners_lock);
	o = mmedge_dma_owner_find(dev);
	if (o && o->bound)
		kref_get(&o->ref);
	else
		o = NULL;
	mutex_unlock(&mmedge_dma_owners_lock);
	return o;
}

/**
 * mmedge_dma_owner_unbind() - the driver unbinds from @dev
 * @dev: the platform device
 *
 * Drops the binding's reference: the reserved-memory region and the
 * device reference go once no buffer or import of @dev is left.
 */
void mmedge_dma_owner_unbind(struct device *dev)
{
	struct mmedge_dma_owner *o;

	mutex_lock(&mmedge_dma_owners_lock);
	o = mmedge_dma_owner_find(dev);
	if (WARN_ON(!o || !o->bound)) {
		mutex_unlock(&mmedge_dma_owners_lock);
		return;
	}
	o->bound = false;
	mutex_unlock(&mmedge_dma_owners_lock);
	mmedge_dma_owner_put(o);
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
static int mmedge_buf_set_memtype(struct mmedge_buf *buf)
{
#ifdef CONFIG_X86
	if (mmedge_buf_cpu_cached(buf))
		return 0;
	/* A failure may leave some pages changed: restore them all. */
	buf->memtype_set = true;
	if (buf->cache == MMEDGE_BUF_CACHE_WC)
		return set_pages_array_wc(buf->pages, buf->npages);
	return set_pages_array_uc(buf->pages, buf->npages);
#else
	return 0;
#endif
}

static void mmedge_buf_restore_memtype(struct mmedge_buf *buf)
{
#ifdef CONFIG_X86
	if (buf->memtype_set &&
	    set_pages_array_wb(buf->pages, buf->npages))
		dev_warn(&buf->mdev->dev,
			 "buffer %llu: cannot restore page caching\n", buf->id);
#endif
	buf->memtype_set = false;
}

/* Free what was allocated, and only that: allocation may have stopped anywhere. */
static void mmedge_buf_free_pages(struct mmedge_buf *buf)
{
	struct scatterlist *sg;
	unsigned int i;

	mmedge_buf_restore_memtype(buf);
	if (buf->contig_page) {
		dma_free_pages(buf->dma_dev, buf->contig_alloc,
			       buf->contig_page, buf->contig_dma,
			       DMA_BIDIRECTIONAL);
		buf->contig_page = NULL;
	} else if (buf->sgt.sgl) {
		for_each_sgtable_sg(&buf->sgt, sg, i)
			__free_pages(sg_page(sg), get_order(sg->length));
	}
	sg_free_table(&buf->sgt);
	kvfree(buf->pages);
	buf->pages = NULL;
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
	/*
	 * dma_alloc_pages() registers the block with the DMA API debug code
	 * as a mapping whose handle the driver must check.
	 */
	if (dma_mapping_error(buf->dma_dev, buf->contig_dma)) {
		ret = -ENOMEM;
		goto err_free;
	}
	ret = sg_alloc_table(&buf->sgt, 1, GFP_KERNEL);
	if (ret)
		goto err_free;
	buf->contig_page = page;
	for (i = 0; i < buf->npages; i++)
		buf->pages[i] = nth_page(page, i);
	sg_set_page(buf->sgt.sgl, page, buf->size, 0);
	return 0;

err_free:
	dma_free_pages(buf->dma_dev, buf->contig_alloc, page, buf->contig_dma,
		       DMA_BIDIRECTIONAL);
	return ret;
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

/*
 * The pages were zeroed through the cached linear map. A write-combined
 * or uncached buffer is only ever accessed around the CPU caches, so the
 * zeroes must reach memory now, and no line may stay behind: clean and
 * invalidate the caches for the whole buffer, as the system dma-heap
 * does for its uncached buffers. (On x86 set_pages_array_*() flushes as
 * well; DMA there is coherent and this costs little.)
 */
static int mmedge_buf_clean(struct mmedge_buf *buf)
{
	struct scatterlist *sg;
	unsigned int i;

	if (mmedge_buf_cpu_cached(buf))
		return 0;
	if (buf->contig_page) {
		/* Memory from dma_alloc_pages() is synced, not mapped. */
		dma_sync_single_for_device(buf->dma_dev, buf->contig_dma,
					   buf->contig_alloc, DMA_BIDIRECTIONAL);
		dma_sync_single_for_cpu(buf->dma_dev, buf->contig_dma,
					buf->contig_alloc, DMA_BIDIRECTIONAL);
		return 0;
	}
	/*
	 * Block by block: a block may be longer than the device's largest
	 * segment, which a page mapping need not respect. Failing to map
	 * means no IOVA or bounce space: memory is short.
	 */
	for_each_sgtable_sg(&buf->sgt, sg, i) {
		dma_addr_t addr = dma_map_page(buf->dma_dev, sg_page(sg),
					       sg->offset, sg->length,
					       DMA_BIDIRECTIONAL);

		if (dma_mapping_error(buf->dma_dev, addr))
			return -ENOMEM;
		dma_unmap_page(buf->dma_dev, addr, sg->length,
			       DMA_BIDIRECTIONAL);
	}
	return 0;
}

/* Entries of @buf's blocks cut to the limits of @dev; fills @sgt if set. */
static unsigned int mmedge_attach_split(struct mmedge_buf *buf,
					struct device *dev,
					struct sg_table *sgt)
{
	u64 max_seg = dma_get_max_seg_size(dev);
	u64 boundary = dma_get_seg_boundary(dev);
	struct scatterlist *src, *dst = sgt ? sgt->sgl : NULL;
	unsigned int i, n = 0;

	for_each_sgtable_sg(&buf->sgt, src, i) {
		u64 off = 0;

		while (off < src->length) {
			/*
			 * The boundary applies to bus addresses; cut at the
			 * physical ones (the same without an IOMMU; an IOMMU
			 * keeps its own segments within the limits).
			 */
			u64 addr = page_to_phys(sg_page(src)) + src->offset + off;
			u64 len = mmedge_seg_len(addr, src->length - off,
						 max_seg, boundary, PAGE_SIZE);

			if (dst) {
				u64 pos = src->offset + off;

				sg_set_page(dst, nth_page(sg_page(src),
							  pos >> PAGE_SHIFT),
					    len, offset_in_page(pos));
				dst = sg_next(dst);
			}
			off += len;
			n++;
		}
	}
	return n;
}

static int mmedge_attach(struct dma_buf *dmabuf,
			 struct dma_buf_attachment *attachment)
{
	struct mmedge_buf *buf = dmabuf->priv;
	struct mmedge_attachment *a;
	int ret;

	a = kzalloc(sizeof(*a), GFP_KERNEL);
	if (!a)
		return -ENOMEM;
	/*
	 * The importer's own table, within its segment size and boundary
	 * (as drm_prime builds them); the CPU side keeps whole blocks.
	 */
	ret = sg_alloc_table(&a->sgt,
			     mmedge_attach_split(buf, attachment->dev, NULL),
			     GFP_KERNEL);
	if (ret) {
		kfree(a);
		return ret;
	}
	mmedge_attach_split(buf, attachment->dev, &a->sgt);
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
	WARN_ON(a->map);
	sg_free_table(&a->sgt);
	kfree(a);
}

/* Make [@off, @off + @len) of the contiguous block coherent for @m's device. */
static void mmedge_devmap_sync_alloc(struct mmedge_buf *buf,
				     struct mmedge_devmap *m, u64 off, u64 len,
				     bool for_cpu)
{
	if (for_cpu)
		dma_sync_single_range_for_cpu(m->dev, buf->contig_dma, off, len,
					      m->dir);
	else
		dma_sync_single_range_for_device(m->dev, buf->contig_dma, off,
						 len, m->dir);
}

/*
 * The mapping of @buf for @dev in direction @dir, made if there is none,
 * with a reference for one more attachment. Under @map_lock.
 *
 * Mappings are made with DMA_ATTR_SKIP_CPU_SYNC and synced explicitly
 * right after mapping (for the device) and on each attachment's unmap
 * (for the CPU), for every cache mode: that is the maintenance the
 * mapping calls would have done. A write-combined or uncached buffer has
 * no dirty line to clean (mmedge_buf_clean()), but a mapping may bounce
 * through swiotlb, and only these syncs fill its bounce slot and copy the
 * device's data back; the sync for the CPU also drops lines that
 * speculation pulled in through the cached linear map. The attribute
 * also lets several devices map the buffer at once (the use
 * Documentation/core-api/dma-attributes.rst gives it); without it the DMA
 * API debug code refuses overlapping mappings.
 *
 * A device's attachments in one direction share one mapping: the DMA API
 * debug code cannot tell which of two mappings of the same memory for
 * the same device a ranged sync is meant for (it reports the sync as one
 * of memory never mapped), and one mapping needs its bounce slots filled
 * and its caches maintained once, not once per importer. The device a
 * contiguous buffer was allocated for maps nothing: dma_alloc_pages()
 * gave the block a DMA address for it, valid in both directions, which
 * all its attachments share.
 */
static struct mmedge_devmap *mmedge_devmap_get(struct mmedge_buf *buf,
					       struct device *dev,
					       enum dma_data_direction dir)
{
	struct mmedge_devmap *m;
	struct scatterlist *sg;
	unsigned int i;
	int ret;

	lockdep_assert_held(&buf->map_lock);

	list_for_each_entry(m, &buf->maps, node) {
		if (m->dev == dev && (m->alloc || m->dir == dir)) {
			mutex_lock(&buf->lock);
			m->users++;
			mutex_unlock(&buf->lock);
			return m;
		}
	}

	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m)
		return ERR_PTR(-ENOMEM);
	ret = sg_alloc_table(&m->sgt, mmedge_attach_split(buf, dev, NULL),
			     GFP_KERNEL);
	if (ret) {
		kfree(m);
		return ERR_PTR(ret);
	}
	mmedge_attach_split(buf, dev, &m->sgt);
	m->dev = dev;
	m->users = 1;
	INIT_LIST_HEAD(&m->node);

	if (buf->contig_page && dev == buf->dma_dev) {
		phys_addr_t base = page_to_phys(buf->contig_page);

		m->alloc = true;
		m->split = true;
		m->dir = DMA_BIDIRECTIONAL;
		for_each_sgtable_sg(&m->sgt, sg, i) {
			sg_dma_address(sg) = buf->contig_dma +
					     (sg_phys(sg) - base);
			sg_dma_len(sg) = sg->length;
		}
		mmedge_devmap_sync_alloc(buf, m, 0, buf->size, false);
	} else {
		ret = dma_map_sgtable(dev, &m->sgt, dir, DMA_ATTR_SKIP_CPU_SYNC);
		if (ret) {
			sg_free_table(&m->sgt);
			kfree(m);
			return ERR_PTR(ret);
		}
		m->dir = dir;
		m->split = m->sgt.nents == m->sgt.orig_nents;
		for_each_sgtable_dma_sg(&m->sgt, sg, i)
			if (sg_dma_len(sg) != sg->length)
				m->split = false;
		dma_sync_sgtable_for_device(dev, &m->sgt, dir);
	}

	mutex_lock(&buf->lock);
	list_add_tail(&m->node, &buf->maps);
	mutex_unlock(&buf->lock);
	return m;
}

/*
 * An attachment stops using @m: what unmapping a mapping of its own would
 * do (the device's writes handed to the CPU), and the mapping removed
 * after its last user. Under @map_lock.
 */
static void mmedge_devmap_put(struct mmedge_buf *buf, struct mmedge_devmap *m)
{
	bool last;

	lockdep_assert_held(&buf->map_lock);

	mutex_lock(&buf->lock);
	last = !--m->users;
	if (last)
		list_del(&m->node);
	mutex_unlock(&buf->lock);

	if (m->alloc)
		mmedge_devmap_sync_alloc(buf, m, 0, buf->size, true);
	else
		dma_sync_sgtable_for_cpu(m->dev, &m->sgt, m->dir);
	if (!last)
		return;
	if (!m->alloc)
		dma_unmap_sgtable(m->dev, &m->sgt, m->dir,
				  DMA_ATTR_SKIP_CPU_SYNC);
	sg_free_table(&m->sgt);
	kfree(m);
}

/*
 * The importer gets its attachment's own table (the dma-buf core scrambles
 * its page links while it is mapped), holding the shared mapping's DMA
 * addresses: both tables cut the buffer's blocks to the same device's
 * limits, so their entries match one for one.
 */
static struct sg_table *mmedge_map_dma_buf(struct dma_buf_attachment *attachment,
					   enum dma_data_direction dir)
{
	struct mmedge_buf *buf = attachment->dmabuf->priv;
	struct mmedge_attachment *a = attachment->priv;
	struct scatterlist *src, *dst;
	struct mmedge_devmap *m;
	unsigned int i;

	mutex_lock(&buf->map_lock);
	/* One table per attachment: one mapping at a time. */
	if (a->map) {
		m = ERR_PTR(-EBUSY);
		goto out;
	}
	m = mmedge_devmap_get(buf, a->dev, dir);
	if (IS_ERR(m))
		goto out;
	if (WARN_ON(m->sgt.orig_nents != a->sgt.orig_nents)) {
		mmedge_devmap_put(buf, m);
		m = ERR_PTR(-EINVAL);
		goto out;
	}
	dst = a->sgt.sgl;
	for_each_sgtable_sg(&m->sgt, src, i) {
		sg_dma_address(dst) = sg_dma_address(src);
		sg_dma_len(dst) = sg_dma_len(src);
		dst = sg_next(dst);
	}
	a->sgt.nents = m->sgt.nents;
	a->map = m;
out:
	mutex_unlock(&buf->map_lock);
	return IS_ERR(m) ? ERR_CAST(m) : &a->sgt;
}

static void mmedge_unmap_dma_buf(struct dma_buf_attachment *attachment,
				 struct sg_table *sgt,
				 enum dma_data_direction dir)
{
	struct mmedge_buf *buf = attachment->dmabuf->priv;
	struct mmedge_attachment *a = attachment->priv;

	mutex_lock(&buf->map_lock);
	if (!WARN_ON(!a->map || sgt != &a->sgt)) {
		mmedge_devmap_put(buf, a->map);
		a->map = NULL;
	}
	mutex_unlock(&buf->map_lock);
}

/* Does another mapping of @m's device (in another direction) exist? */
static bool mmedge_devmap_overlaps(struct mmedge_buf *buf,
				   struct mmedge_devmap *m)
{
	struct mmedge_devmap *o;

	list_for_each_entry(o, &buf->maps, node)
		if (o != m && o->dev == m->dev)
			return true;
	return false;
}

/*
 * Cache maintenance of [off, off + len) for one mapping, in its direction
 * (the DMA API wants the mapping's). While the mapping keeps one DMA
 * segment per CPU entry, segment i is entry i and each entry's part of
 * the range is synced alone. Once an IOMMU merged entries, a DMA
 * segment's start says nothing about the pages behind the rest of it,
 * and dma_sync_sg_*() must be given the whole list it mapped: the whole
 * table is synced. So it is while the device has the buffer mapped in
 * two directions too: the DMA API debug code can match only a sync of a
 * whole table to one of two mappings of the same memory. Returns the
 * bytes synced for one attachment.
 */
static u64 mmedge_devmap_sync(struct mmedge_buf *buf, struct mmedge_devmap *m,
			      u64 off, u64 len, bool for_cpu)
{
	struct scatterlist *sg;
	u64 start = 0, synced = 0;
	unsigned int i;

	if (m->alloc) {
		/* One DMA range: the entries tile the block. */
		mmedge_devmap_sync_alloc(buf, m, off, len, for_cpu);
		return len;
	}
	if (!m->split || mmedge_devmap_overlaps(buf, m)) {
		if (for_cpu)
			dma_sync_sgtable_for_cpu(m->dev, &m->sgt, m->dir);
		else
			dma_sync_sgtable_for_device(m->dev, &m->sgt, m->dir);
		return buf->size;
	}
	for_each_sgtable_sg(&m->sgt, sg, i) {
		struct mmedge_range r;

		if (start >= off + len)
			break;
		r = mmedge_range_clip(start, sg->length, off, len);
		start += sg->length;
		if (!r.len)
			continue;
		if (for_cpu)
			dma_sync_single_range_for_cpu(m->dev, sg_dma_address(sg),
						      r.off, r.len, m->dir);
		else
			dma_sync_single_range_for_device(m->dev,
							 sg_dma_address(sg),
							 r.off, r.len, m->dir);
		synced += r.len;
	}
	return synced;
}

/*
 * Make [off, off + len) coherent for the CPU (@for_cpu) or for the
 * devices, on every DMA mapping and on the kernel mapping. Returns the
 * bytes that maintenance was asked for, counted once per attachment that
 * uses a mapping.
 */
static u64 mmedge_buf_sync_range(struct mmedge_buf *buf, u64 off, u64 len,
				 bool for_cpu)
{
	struct mmedge_devmap *m;
	u64 synced = 0;

	lockdep_assert_held(&buf->lock);

	if (buf->vaddr) {
		if (for_cpu)
			invalidate_kernel_vmap_range(buf->vaddr + off, len);
		else
			flush_kernel_vmap_range(buf->vaddr + off, len);
	}

	/*
	 * For the devices, mappings a device only writes go last: on some
	 * CPUs their sync invalidates, which must not drop lines the CPU
	 * wrote before another mapping's sync cleaned them.
	 */
	list_for_each_entry(m, &buf->maps, node)
		if (for_cpu || m->dir != DMA_FROM_DEVICE)
			synced += m->users *
				  mmedge_devmap_sync(buf, m, off, len, for_cpu);
	if (!for_cpu)
		list_for_each_entry(m, &buf->maps, node)
			if (m->dir == DMA_FROM_DEVICE)
				synced += m->users *
					  mmedge_devmap_sync(buf, m, off, len,
							     false);
	return synced;
}

/**
 * mmedge_buf_written() - the CPU wrote part of a buffer through its vmap
 * @dmabuf: the buffer; nothing is done unless it is an mmedge buffer
 * @off: first byte written
 * @len: bytes written
 *
 * Makes the bytes visible to every device that has the buffer mapped:
 * cleans the kernel mapping's and the mappings' CPU cache lines (and
 * fills bounce buffers). The engine calls it after writing a buffer and
 * before signalling its fence; it takes only the buffer's @lock, under
 * which nothing allocates or waits, so it may run inside
 * dma_fence_begin_signalling(). A range outside the buffer is clipped.
 */
void mmedge_buf_written(struct dma_buf *dmabuf, u64 off, u64 len)
{
	struct mmedge_buf *buf;

	if (!mmedge_buf_is_ours(dmabuf))
		return;
	buf = dmabuf->priv;
	if (WARN_ON_ONCE(off >= buf->size))
		return;
	len = min_t(u64, len, buf->size - off);
	if (!len)
		return;
	if (!mmedge_buf_cpu_cached(buf)) {
		/*
		 * Drain the write-combining buffers: the stores reach memory
		 * before the fence that follows tells a device to read.
		 */
		wmb();
	}
	mutex_lock(&buf->lock);
	mmedge_buf_sync_range(buf, off, len, false);
	mutex_unlock(&buf->lock);
}

static int mmedge_begin_cpu_access(struct dma_buf *dmabuf,
				   enum dma_data_direction dir)
{
	struct mmedge_buf *buf = dmabuf->priv;

	mutex_lock(&buf->lock);
	mmedge_buf_sync_range(buf, 0, buf->size, true);
	mutex_unlock(&buf->lock);
	return 0;
}

static int mmedge_end_cpu_access(struct dma_buf *dmabuf,
				 enum dma_data_direction dir)
{
	struct mmedge_buf *buf = dmabuf->priv;

	mutex_lock(&buf->lock);
	mmedge_buf_sync_range(buf, 0, buf->size, false);
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
	if (pgoff > buf->npages || npages > buf->npages - pgoff)
		return -EINVAL;

	mmedge_vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
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

	mutex_lock(&buf->map_lock);
	if (!buf->vmap_count) {
		vaddr = vmap(buf->pages, buf->npages, VM_MAP,
			     mmedge_buf_prot(buf, PAGE_KERNEL));
		if (!vaddr) {
			mutex_unlock(&buf->map_lock);
			return -ENOMEM;
		}
		mutex_lock(&buf->lock);
		buf->vaddr = vaddr;
		mutex_unlock(&buf->lock);
	}
	buf->vmap_count++;
	iosys_map_set_vaddr(map, buf->vaddr);
	mutex_unlock(&buf->map_lock);
	return 0;
}

static void mmedge_vunmap(struct dma_buf *dmabuf, struct iosys_map *map)
{
	struct mmedge_buf *buf = dmabuf->priv;
	void *vaddr = NULL;

	mutex_lock(&buf->map_lock);
	if (!WARN_ON(!buf->vmap_count) && !--buf->vmap_count) {
		mutex_lock(&buf->lock);
		vaddr = buf->vaddr;
		buf->vaddr = NULL;
		mutex_unlock(&buf->lock);
		vunmap(vaddr);
	}
	mutex_unlock(&buf->map_lock);
	iosys_map_clear(map);
}

/*
 * Charge @bytes to the file's cap, the user's and the global one, all or
 * nothing: -ENOMEM past any of them.
 */
int mmedge_mem_charge(struct mmedge_file *mf, struct mmedge_user *u,
		      u64 bytes)
{
	int ret;

	ret = mmedge_charge(&mf->mem_used, bytes, mmedge_file_mem_limit());
	if (ret)
		return ret;
	ret = mmedge_user_charge_mem(u, bytes);
	if (ret)
		goto err_file;
	ret = mmedge_charge(&mmedge_mem_used, bytes, mmedge_mem_limit());
	if (ret)
		goto err_user;
	return 0;

err_user:
	mmedge_user_uncharge_mem(u, bytes);
err_file:
	mmedge_uncharge(&mf->mem_used, bytes);
	return ret;
}

/* Give back what mmedge_mem_charge() took. */
void mmedge_mem_uncharge(struct mmedge_file *mf, struct mmedge_user *u,
			 u64 bytes)
{
	mmedge_uncharge(&mmedge_mem_used, bytes);
	mmedge_user_uncharge_mem(u, bytes);
	mmedge_uncharge(&mf->mem_used, bytes);
}

/* Undo whatever part of mmedge_ioctl_buf_alloc() was done. */
static void mmedge_buf_destroy(struct mmedge_buf *buf)
{
	mmedge_buf_free_pages(buf);
	if (buf->user) {
		mmedge_mem_uncharge(buf->mf, buf->user, buf->charged);
		mmedge_user_put(buf->user);
	}
	if (buf->owner)
		mmedge_dma_owner_put(buf->owner);
	mmedge_file_put(buf->mf);
	mutex_destroy(&buf->lock);
	mutex_destroy(&buf->map_lock);
	kfree(buf);
}

static void mmedge_release(struct dma_buf *dmabuf)
{
	struct mmedge_buf *buf = dmabuf->priv;
	struct mmedge_dev *mdev = buf->mdev;

	WARN_ON(buf->vmap_count);
	WARN_ON(!list_empty(&buf->attachments));
	WARN_ON(!list_empty(&buf->maps));
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
 *  -ENOMEM: above max_buffer_size, the file's, the user's or the global
 *	     cap, or no
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
	/* A contiguous block is one scatterlist entry: its length is 32-bit. */
	if ((a->flags & MMEDGE_BUF_CONTIG) && size > UINT_MAX)
		return -ENOMEM;

	buf = kzalloc(sizeof(*buf), GFP_KERNEL_ACCOUNT);
	if (!buf)
		return -ENOMEM;
	buf->owner = mmedge_dma_owner_get(mdev->dma_dev);
	if (!buf->owner) {
		kfree(buf);
		return -ENODEV;
	}
	buf->user = mmedge_user_get_current();
	if (!buf->user) {
		mmedge_dma_owner_put(buf->owner);
		kfree(buf);
		return -ENOMEM;
	}
	mutex_init(&buf->map_lock);
	mutex_init(&buf->lock);
	INIT_LIST_HEAD(&buf->attachments);
	INIT_LIST_HEAD(&buf->maps);
	buf->size = size;
	buf->npages = size >> PAGE_SHIFT;
	buf->flags = a->flags;
	buf->cache = a->flags & MMEDGE_BUF_CACHE_MASK;
	buf->mdev = mdev;
	buf->dma_dev = buf->owner->dev;
	mmedge_file_get(mf);
	buf->mf = mf;

	/*
	 * Charge first, so a refused request touches no memory. From here
	 * on mmedge_buf_destroy() undoes exactly what was done: it frees
	 * only what the pointers below say was allocated.
	 */
	buf->charged = (a->flags & MMEDGE_BUF_CONTIG) ?
		       PAGE_SIZE << get_order(size) : size;
	ret = mmedge_mem_charge(mf, buf->user, buf->charged);
	if (ret)
		goto err_uncharged;

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
	if (ret)
		goto err_destroy;
	ret = mmedge_buf_clean(buf);
	if (ret)
		goto err_destroy;
	ret = mmedge_buf_set_memtype(buf);
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
	u32 imp_id, imp_segments;
	struct dma_buf *dmabuf;
	bool imported;
	int ret;

	ret = mmedge_buf_info_check(info);
	if (ret)
		return ret;
	dmabuf = dma_buf_get(info->fd);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);

	mutex_lock(&mf->imports_lock);
	imported = mmedge_import_lookup(mf, dmabuf, &imp_id, &imp_segments);
	if (mmedge_buf_is_ours(dmabuf)) {
		struct mmedge_buf *buf = dmabuf->priv;

		info->size = buf->size;
		info->info_flags = MMEDGE_BUF_INFO_OURS;
		if (buf->flags & MMEDGE_BUF_CONTIG)
			info->info_flags |= MMEDGE_BUF_INFO_CONTIG;
		info->cache = buf->cache;
		info->nr_segments = buf->sgt.orig_nents;
		info->id = buf->id;
		info->alloc_flags = buf->flags;
	} else if (!imported) {
		ret = -EINVAL;
		goto out;
	} else {
		info->size = dmabuf->size;
		info->info_flags = 0;
		if (imp_segments == 1)
			info->info_flags |= MMEDGE_BUF_INFO_CONTIG;
		info->cache = 0;
		info->nr_segments = imp_segments;
		info->id = imp_id;
		info->alloc_flags = 0;
	}
	if (imported)
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
 * mmedge buffer. A START first waits for the buffer's fences. Runs
 * without mmedge_dev.lock (see mmedge_ioctl_unlocked()): the wait has no
 * bound of its own, and the buffer outlives an unbind.
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
	struct mmedge_buf *buf;
	struct dma_buf *dmabuf;
	bool write;
	long t;
	int ret;

	dmabuf = dma_buf_get(s->fd);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);
	if (!mmedge_buf_is_ours(dmabuf)) {
		ret = -EINVAL;
		goto out;
	}
	buf = dmabuf->priv;
	ret = mmedge_buf_sync_check(s, buf->size);
	if (ret)
		goto out;

	/*
	 * The access mode decides which fences a START waits for; each
	 * mapping is synced in the direction it was mapped with.
	 */
	write = s->flags & MMEDGE_BUF_SYNC_WRITE;
	if (!(s->flags & MMEDGE_BUF_SYNC_END)) {
		t = dma_resv_wait_timeout(dmabuf->resv, dma_resv_usage_rw(write),
					  true, MAX_SCHEDULE_TIMEOUT);
		if (t < 0) {
			ret = t;
			goto out;
		}
	}

	mutex_lock(&buf->lock);
	s->synced = mmedge_buf_sync_range(buf, s->offset, s->len,
					  !(s->flags & MMEDGE_BUF_SYNC_END));
	mutex_unlock(&buf->lock);
out:
	dma_buf_put(dmabuf);
	return ret;
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

	if (mmedge_buf_is_ours(dmabuf))
		return true;
	mutex_lock(&mf->imports_lock);
	ret = mmedge_import_lookup(mf, dmabuf, NULL, NULL);
	mutex_unlock(&mf->imports_lock);
	return ret;
}

MODULE_IMPORT_NS(DMA_BUF);

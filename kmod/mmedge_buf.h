/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mmedge: what mmedge_buf.c offers the rest of the driver beyond the
 * ioctls (those are declared in mmedge_drv.h).
 */
#ifndef _MMEDGE_BUF_H
#define _MMEDGE_BUF_H

#include <linux/types.h>

struct device;
struct dma_buf;

/**
 * mmedge_seg_len() - length of the next piece of a block for a device
 * @addr: address where the piece starts
 * @left: bytes left in the block, > 0
 * @max_seg: the device's largest segment (dma_get_max_seg_size()); 0 for
 *	no limit
 * @boundary: the device's segment boundary mask (dma_get_seg_boundary())
 * @page_size: PAGE_SIZE
 *
 * A piece is at most @max_seg bytes, rounded down to whole pages when
 * @max_seg holds at least one, and never crosses an address that is a
 * multiple of @boundary + 1.
 *
 * Return: the piece's length, between 1 and @left.
 */
static inline u64 mmedge_seg_len(u64 addr, u64 left, u64 max_seg,
				 u64 boundary, u64 page_size)
{
	u64 len = left, to_boundary;

	if (max_seg >= page_size)
		max_seg -= max_seg % page_size;
	if (max_seg && len > max_seg)
		len = max_seg;
	/* Zero when the mask covers the whole address space: no limit. */
	to_boundary = boundary - (addr & boundary) + 1;
	if (to_boundary && len > to_boundary)
		len = to_boundary;
	return len;
}

/**
 * mmedge_seg_fits() - does a DMA segment respect a device's limits?
 * @addr: its DMA address
 * @len: its length, > 0
 * @max_seg: the device's largest segment
 * @boundary: the device's segment boundary mask
 *
 * Return: true if @len is at most @max_seg and the segment does not cross
 * an address that is a multiple of @boundary + 1.
 */
static inline bool mmedge_seg_fits(u64 addr, u64 len, u64 max_seg,
				   u64 boundary)
{
	return len <= max_seg &&
	       (addr & ~boundary) == ((addr + len - 1) & ~boundary);
}

struct mmedge_dma_owner;
struct mmedge_file;
struct mmedge_user;

int mmedge_dma_owner_bind(struct device *dev);
void mmedge_dma_owner_unbind(struct device *dev);
struct mmedge_dma_owner *mmedge_dma_owner_get(struct device *dev);
void mmedge_dma_owner_put(struct mmedge_dma_owner *o);
struct device *mmedge_dma_owner_dev(const struct mmedge_dma_owner *o);

bool mmedge_buf_is_ours(struct dma_buf *dmabuf);
int mmedge_mem_charge(struct mmedge_file *mf, struct mmedge_user *u,
		      u64 bytes);
void mmedge_mem_uncharge(struct mmedge_file *mf, struct mmedge_user *u,
			 u64 bytes);

void mmedge_buf_written(struct dma_buf *dmabuf, u64 off, u64 len);

#endif /* _MMEDGE_BUF_H */

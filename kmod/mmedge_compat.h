/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mmedge: differences between the kernel versions the module builds against
 * (6.1 to 6.12), keyed on LINUX_VERSION_CODE. The rest of the driver uses
 * these helpers and has no version test of its own.
 */
#ifndef _MMEDGE_COMPAT_H
#define _MMEDGE_COMPAT_H

#include <linux/device.h>
#include <linux/dma-buf.h>
#include <linux/iosys-map.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/version.h>

/*
 * 6.11 made platform_driver.remove return void; before it, the void
 * callback went in .remove_new.
 */
#define MMEDGE_VOID_REMOVE (KERNEL_VERSION(6, 11, 0) <= LINUX_VERSION_CODE)

/**
 * mmedge_class_create() - create the driver's device class
 * @name: class name
 *
 * 6.4 dropped class_create()'s owner argument.
 *
 * Return: the class, or an ERR_PTR().
 */
static inline struct class *mmedge_class_create(const char *name)
{
#if KERNEL_VERSION(6, 4, 0) > LINUX_VERSION_CODE
	return class_create(THIS_MODULE, name);
#else
	return class_create(name);
#endif
}

/**
 * mmedge_dma_buf_vmap() - map a dma-buf for the CPU, resv lock not held
 * @dmabuf: buffer to map
 * @map: where the mapping goes
 *
 * From 6.2 dma_buf_vmap() wants the reservation lock held and
 * dma_buf_vmap_unlocked() takes it; before, dma_buf_vmap() took no lock.
 *
 * Return: 0 or a negative error code.
 */
static inline int mmedge_dma_buf_vmap(struct dma_buf *dmabuf,
				      struct iosys_map *map)
{
#if KERNEL_VERSION(6, 2, 0) > LINUX_VERSION_CODE
	return dma_buf_vmap(dmabuf, map);
#else
	return dma_buf_vmap_unlocked(dmabuf, map);
#endif
}

/**
 * mmedge_dma_buf_vunmap() - undo mmedge_dma_buf_vmap(), resv lock not held
 * @dmabuf: buffer to unmap
 * @map: the mapping mmedge_dma_buf_vmap() made
 */
static inline void mmedge_dma_buf_vunmap(struct dma_buf *dmabuf,
					 struct iosys_map *map)
{
#if KERNEL_VERSION(6, 2, 0) > LINUX_VERSION_CODE
	dma_buf_vunmap(dmabuf, map);
#else
	dma_buf_vunmap_unlocked(dmabuf, map);
#endif
}

/**
 * mmedge_vm_flags_set() - set flags on a VMA being mmapped
 * @vma: the VMA
 * @flags: VM_* flags to set
 *
 * 6.3 made vm_flags read-only and added vm_flags_set().
 */
static inline void mmedge_vm_flags_set(struct vm_area_struct *vma,
				       vm_flags_t flags)
{
#if KERNEL_VERSION(6, 3, 0) > LINUX_VERSION_CODE
	vma->vm_flags |= flags;
#else
	vm_flags_set(vma, flags);
#endif
}

#endif /* _MMEDGE_COMPAT_H */

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mmedge: ioctl table and argument validation.
 *
 * Pure logic: no device, user-memory or DMA calls, so KUnit can test it.
 */
#ifndef _MMEDGE_UAPI_H
#define _MMEDGE_UAPI_H

#include <linux/types.h>
#include <linux/mmedge.h>

/**
 * struct mmedge_ioctl_info - static description of one ioctl
 * @cmd: the command as the current header defines it (its size is the
 *	kernel's structure size).
 * @min_size: smallest argument size accepted (the first published size).
 * @name: name for logs and for MMEDGE_IOC_QUERY_CAPS users.
 */
struct mmedge_ioctl_info {
	unsigned int cmd;
	unsigned int min_size;
	const char *name;
};

/* Number of slots in the ioctl table, indexed by _IOC_NR(). */
#define MMEDGE_IOCTL_NR_MAX	1

extern const struct mmedge_ioctl_info mmedge_ioctls[MMEDGE_IOCTL_NR_MAX];

int mmedge_ioctl_lookup(unsigned int cmd, const struct mmedge_ioctl_info **info);
u64 mmedge_ioctl_mask(void);
int mmedge_caps_check(const struct mmedge_caps *caps);

#endif /* _MMEDGE_UAPI_H */

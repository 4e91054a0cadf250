/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mmedge: ioctl lookup and argument validation.
 *
 * Pure logic: no device, user-memory or DMA calls, so KUnit can test it.
 */
#ifndef _MMEDGE_UAPI_H
#define _MMEDGE_UAPI_H

#include <linux/atomic.h>
#include <linux/bits.h>
#include <linux/sizes.h>
#include <linux/types.h>
#include <linux/mmedge.h>

/* A channel's arbitration segment, bytes (MMEDGE_IOC_CHAN_CREATE). */
#define MMEDGE_SEGMENT_DEFAULT		4096
#define MMEDGE_SEGMENT_MIN		64
#define MMEDGE_SEGMENT_MAX		SZ_1M
/* The soft engine's modelled bus bandwidth, bytes/s (MMEDGE_IOC_BUS_CONFIG). */
#define MMEDGE_BUS_MIN_BW		(1000ULL * 1000)
#define MMEDGE_BUS_MAX_BW		(100ULL * 1000 * 1000 * 1000)

struct mmedge_file;
struct mmedge_ioctl_ctx;

typedef int (*mmedge_ioctl_fn)(struct mmedge_file *mf, void *data,
			       struct mmedge_ioctl_ctx *ctx);

/* The handler runs without mmedge_dev.lock (see mmedge_ioctl.c). */
#define MMEDGE_IOCTL_UNLOCKED		BIT(0)
#define MMEDGE_IOCTL_FLAGS_VALID	MMEDGE_IOCTL_UNLOCKED

/**
 * struct mmedge_ioctl_info - one ioctl: an entry of the ioctl table
 * @cmd: the command as the current header defines it (its size is the
 *	kernel's structure size).
 * @min_size: smallest argument size accepted (the first published size).
 * @fn: the handler, called on the kernel copy of the argument.
 * @flags: MMEDGE_IOCTL_*.
 * @name: name for logs and for MMEDGE_IOC_QUERY_CAPS users.
 */
struct mmedge_ioctl_info {
	unsigned int cmd;
	unsigned int min_size;
	mmedge_ioctl_fn fn;
	unsigned int flags;
	const char *name;
};

/* Number of slots in the ioctl table, indexed by _IOC_NR(). */
#define MMEDGE_IOCTL_NR_MAX	14

int mmedge_ioctl_lookup(const struct mmedge_ioctl_info *table, unsigned int n,
			unsigned int cmd, const struct mmedge_ioctl_info **info);
u64 mmedge_ioctl_mask(const struct mmedge_ioctl_info *table, unsigned int n);
int mmedge_ioctl_table_check(const struct mmedge_ioctl_info *table,
			     unsigned int n);
int mmedge_caps_check(const struct mmedge_caps *caps);
int mmedge_buf_alloc_check(const struct mmedge_buf_alloc *a, u64 max_size,
			   unsigned int page_shift, u64 *alloc_size);
int mmedge_buf_info_check(const struct mmedge_buf_info *info);
int mmedge_buf_sync_check(const struct mmedge_buf_sync *s, u64 buf_size);
int mmedge_buf_import_check(const struct mmedge_buf_import *imp);
int mmedge_buf_release_check(const struct mmedge_buf_release *rel);
int mmedge_chan_create_check(const struct mmedge_chan_create *c);
int mmedge_chan_config_check(const struct mmedge_chan_config *c);
int mmedge_chan_destroy_check(const struct mmedge_chan_destroy *d);
int mmedge_qbuf_check(const struct mmedge_qbuf *q);
int mmedge_qbuf_check_dir(const struct mmedge_qbuf *q, u32 dir);
int mmedge_dqbuf_check(const struct mmedge_dqbuf *d);
int mmedge_chan_stats_check(const struct mmedge_chan_stats *st);
int mmedge_bus_config_check(const struct mmedge_bus_config *b);
int mmedge_xts_check(const struct mmedge_xts *x, unsigned int usize);

/**
 * struct mmedge_range - a byte range clipped to a segment
 * @off: offset inside the segment.
 * @len: bytes; 0 if the range misses the segment.
 */
struct mmedge_range {
	u64 off;
	u64 len;
};

struct mmedge_range mmedge_range_clip(u64 seg_start, u64 seg_len, u64 off,
				      u64 len);
int mmedge_name_check(const u8 *name, size_t len);
int mmedge_charge(atomic64_t *used, u64 bytes, u64 limit);
void mmedge_uncharge(atomic64_t *used, u64 bytes);

#endif /* _MMEDGE_UAPI_H */

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mmedge: the memory and channel caps, from module parameters
 * (mmedge_limits.c).
 */
#ifndef _MMEDGE_LIMITS_H
#define _MMEDGE_LIMITS_H

#include <linux/atomic.h>
#include <linux/types.h>

/* Bytes of all live buffers and imports, charged against mem_limit_mb. */
extern atomic64_t mmedge_mem_used;

u64 mmedge_mem_limit(void);
u64 mmedge_file_mem_limit(void);
u64 mmedge_uid_mem_limit(void);
unsigned int mmedge_uid_chan_limit(void);
bool mmedge_limits_valid(void);

#endif /* _MMEDGE_LIMITS_H */

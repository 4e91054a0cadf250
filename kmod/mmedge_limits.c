// SPDX-License-Identifier: GPL-2.0
/*
 * mmedge: the memory and channel caps (module parameters) and the global
 * memory counter they are charged against. The per-file and per-user
 * counters live in struct mmedge_file and struct mmedge_user.
 */

#include <linux/atomic.h>
#include <linux/minmax.h>
#include <linux/moduleparam.h>

#include "mmedge_limits.h"

static unsigned int mem_limit_mb = 1024;
module_param(mem_limit_mb, uint, 0644);
MODULE_PARM_DESC(mem_limit_mb,
		 "Cap on the memory of all mmedge buffers together, MiB (default 1024)");

static unsigned int file_mem_limit_mb = 256;
module_param(file_mem_limit_mb, uint, 0644);
MODULE_PARM_DESC(file_mem_limit_mb,
		 "Cap on the buffers allocated through one open file, MiB; also the largest buffer (default 256)");

static unsigned int uid_mem_limit_mb = 512;
module_param(uid_mem_limit_mb, uint, 0644);
MODULE_PARM_DESC(uid_mem_limit_mb,
		 "Cap on the buffers and imports one user (uid) holds on all instances, MiB; CAP_SYS_RESOURCE passes it (default 512)");

static unsigned int uid_chan_limit = 32;
module_param(uid_chan_limit, uint, 0644);
MODULE_PARM_DESC(uid_chan_limit,
		 "Channels one user (uid) may hold on all instances; CAP_SYS_RESOURCE passes it (default 32)");

/* Bytes of all live buffers and imports, charged against mem_limit_mb. */
atomic64_t mmedge_mem_used = ATOMIC64_INIT(0);

/* The caps in bytes (channels for the last), read as they are now. */
u64 mmedge_mem_limit(void)
{
	return (u64)READ_ONCE(mem_limit_mb) << 20;
}

u64 mmedge_file_mem_limit(void)
{
	return min_t(u64, (u64)READ_ONCE(file_mem_limit_mb) << 20,
		     mmedge_mem_limit());
}

u64 mmedge_uid_mem_limit(void)
{
	return (u64)READ_ONCE(uid_mem_limit_mb) << 20;
}

unsigned int mmedge_uid_chan_limit(void)
{
	return READ_ONCE(uid_chan_limit);
}

/* Every cap is above 0 (checked at module load). */
bool mmedge_limits_valid(void)
{
	return mem_limit_mb && file_mem_limit_mb && uid_mem_limit_mb &&
	       uid_chan_limit;
}

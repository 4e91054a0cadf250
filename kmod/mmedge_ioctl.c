// SPDX-License-Identifier: GPL-2.0
/*
 * mmedge: the ioctl table and dispatch.
 *
 * One table (mmedge_ioctls[]) says, for each ioctl number, the command,
 * its first published size, its handler and whether the handler runs
 * under mmedge_dev.lock. The dispatcher looks the command up there
 * (mmedge_ioctl_lookup()), copies the caller's structure in with
 * copy_struct_from_user() (size-tolerant in both directions), calls the
 * handler on the kernel copy and copies back at most the caller's size.
 */

#include <linux/capability.h>
#include <linux/dma-buf.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/ioctl.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <uapi/linux/dma-buf.h>

#include "mmedge_drv.h"
#include "mmedge_limits.h"
#include "mmedge_uapi.h"

/* The ioctl table, after the handlers of this file. */
static const struct mmedge_ioctl_info mmedge_ioctls[MMEDGE_IOCTL_NR_MAX];

/*
 * MMEDGE_IOC_QUERY_CAPS: report the API version, the implemented ioctls,
 * the instance number and limits.
 *
 * Errors:
 *  -EINVAL: flags has unknown bits or reserved is not zero.
 */
static int mmedge_ioctl_query_caps(struct mmedge_file *mf, void *data,
				   struct mmedge_ioctl_ctx *ctx)
{
	struct mmedge_dev *mdev = mf->mdev;
	struct mmedge_caps *caps = data;
	int ret;

	lockdep_assert_held(&mdev->lock);

	ret = mmedge_caps_check(caps);
	if (ret)
		return ret;

	caps->api_version = MMEDGE_API_VERSION;
	caps->caps = MMEDGE_CAP_BUFFERS | MMEDGE_CAP_CONTIG | MMEDGE_CAP_CHANNELS;
	if (mdev->virtual)
		caps->caps |= MMEDGE_CAP_VIRTUAL;
	caps->ioctls = mmedge_ioctl_mask(mmedge_ioctls, ARRAY_SIZE(mmedge_ioctls));
	caps->instance = mdev->id;
	caps->max_channels = MMEDGE_MAX_CHANS;
	caps->max_buffer_size = mmedge_file_mem_limit();
	caps->mem_limit = mmedge_mem_limit();
	strscpy(caps->driver, MMEDGE_DRV_NAME, sizeof(caps->driver));
	snprintf(caps->bus_info, sizeof(caps->bus_info), "platform:%s",
		 dev_name(&mdev->pdev->dev));
	return 0;
}

/*
 * MMEDGE_IOC_BUS_CONFIG: read or set the soft engine's modelled bus
 * bandwidth.
 *
 * Errors:
 *  -EINVAL: set not 0/1, bandwidth out of range, flags/reserved set.
 *  -EPERM:  setting without CAP_SYS_ADMIN.
 */
static int mmedge_ioctl_bus_config(struct mmedge_file *mf, void *data,
				   struct mmedge_ioctl_ctx *ctx)
{
	struct mmedge_engine *eng = &mf->mdev->eng;
	struct mmedge_bus_config *b = data;
	int ret;

	ret = mmedge_bus_config_check(b);
	if (ret)
		return ret;
	if (b->set) {
		if (!capable(CAP_SYS_ADMIN))
			return -EPERM;
		mmedge_engine_set_bus(eng, b->bandwidth);
	}
	b->bandwidth = mmedge_engine_get_bus(eng);
	return 0;
}

/*
 * The ioctl table: command, first published size, handler, flags.
 *
 * MMEDGE_IOCTL_UNLOCKED: the handler runs without mmedge_dev.lock (after
 * the dispatcher saw the instance alive) because it may sleep for what
 * other files or devices do: a START of MMEDGE_IOC_BUF_SYNC waits for the
 * buffer's fences without a bound and touches nothing of the instance,
 * only the buffer, which outlives an unbind; MMEDGE_IOC_QBUF waits for
 * the buffers' earlier fences (up to 2 s) and takes the lock itself,
 * checking that the instance is still alive, for its parts before and
 * after that wait. Under the lock, such a wait would hold off unbind
 * and, once unbind waits for the lock, every other file's ioctls.
 */
static const struct mmedge_ioctl_info mmedge_ioctls[MMEDGE_IOCTL_NR_MAX] = {
	[_IOC_NR(MMEDGE_IOC_QUERY_CAPS)] = {
		.cmd = MMEDGE_IOC_QUERY_CAPS,
		.min_size = MMEDGE_CAPS_SIZE_VER0,
		.name = "QUERY_CAPS",
		.fn = mmedge_ioctl_query_caps,
	},
	[_IOC_NR(MMEDGE_IOC_BUF_ALLOC)] = {
		.cmd = MMEDGE_IOC_BUF_ALLOC,
		.min_size = MMEDGE_BUF_ALLOC_SIZE_VER0,
		.name = "BUF_ALLOC",
		.fn = mmedge_ioctl_buf_alloc,
	},
	[_IOC_NR(MMEDGE_IOC_BUF_INFO)] = {
		.cmd = MMEDGE_IOC_BUF_INFO,
		.min_size = MMEDGE_BUF_INFO_SIZE_VER0,
		.name = "BUF_INFO",
		.fn = mmedge_ioctl_buf_info,
	},
	[_IOC_NR(MMEDGE_IOC_BUF_SYNC)] = {
		.cmd = MMEDGE_IOC_BUF_SYNC,
		.min_size = MMEDGE_BUF_SYNC_SIZE_VER0,
		.name = "BUF_SYNC",
		.fn = mmedge_ioctl_buf_sync,
		.flags = MMEDGE_IOCTL_UNLOCKED,
	},
	[_IOC_NR(MMEDGE_IOC_BUF_IMPORT)] = {
		.cmd = MMEDGE_IOC_BUF_IMPORT,
		.min_size = MMEDGE_BUF_IMPORT_SIZE_VER0,
		.name = "BUF_IMPORT",
		.fn = mmedge_ioctl_buf_import,
	},
	[_IOC_NR(MMEDGE_IOC_BUF_RELEASE)] = {
		.cmd = MMEDGE_IOC_BUF_RELEASE,
		.min_size = MMEDGE_BUF_RELEASE_SIZE_VER0,
		.name = "BUF_RELEASE",
		.fn = mmedge_ioctl_buf_release,
	},
	[_IOC_NR(MMEDGE_IOC_CHAN_CREATE)] = {
		.cmd = MMEDGE_IOC_CHAN_CREATE,
		.min_size = MMEDGE_CHAN_CREATE_SIZE_VER0,
		.name = "CHAN_CREATE",
		.fn = mmedge_ioctl_chan_create,
	},
	[_IOC_NR(MMEDGE_IOC_CHAN_CONFIG)] = {
		.cmd = MMEDGE_IOC_CHAN_CONFIG,
		.min_size = MMEDGE_CHAN_CONFIG_SIZE_VER0,
		.name = "CHAN_CONFIG",
		.fn = mmedge_ioctl_chan_config,
	},
	[_IOC_NR(MMEDGE_IOC_CHAN_DESTROY)] = {
		.cmd = MMEDGE_IOC_CHAN_DESTROY,
		.min_size = MMEDGE_CHAN_DESTROY_SIZE_VER0,
		.name = "CHAN_DESTROY",
		.fn = mmedge_ioctl_chan_destroy,
	},
	[_IOC_NR(MMEDGE_IOC_QBUF)] = {
		.cmd = MMEDGE_IOC_QBUF,
		.min_size = MMEDGE_QBUF_SIZE_VER0,
		.name = "QBUF",
		.fn = mmedge_ioctl_qbuf,
		.flags = MMEDGE_IOCTL_UNLOCKED,
	},
	[_IOC_NR(MMEDGE_IOC_DQBUF)] = {
		.cmd = MMEDGE_IOC_DQBUF,
		.min_size = MMEDGE_DQBUF_SIZE_VER0,
		.name = "DQBUF",
		.fn = mmedge_ioctl_dqbuf,
	},
	[_IOC_NR(MMEDGE_IOC_CHAN_STATS)] = {
		.cmd = MMEDGE_IOC_CHAN_STATS,
		.min_size = MMEDGE_CHAN_STATS_SIZE_VER0,
		.name = "CHAN_STATS",
		.fn = mmedge_ioctl_chan_stats,
	},
	[_IOC_NR(MMEDGE_IOC_BUS_CONFIG)] = {
		.cmd = MMEDGE_IOC_BUS_CONFIG,
		.min_size = MMEDGE_BUS_CONFIG_SIZE_VER0,
		.name = "BUS_CONFIG",
		.fn = mmedge_ioctl_bus_config,
	},
	[_IOC_NR(MMEDGE_IOC_XTS)] = {
		.cmd = MMEDGE_IOC_XTS,
		.min_size = MMEDGE_XTS_SIZE_VER0,
		.name = "XTS",
		.fn = mmedge_ioctl_xts,
	},
};

/* The table is checked once, at module load (mmedge_ioctl_table_check()). */
int mmedge_ioctl_init(void)
{
	return mmedge_ioctl_table_check(mmedge_ioctls, ARRAY_SIZE(mmedge_ioctls));
}

/* Largest kernel-side argument. */
#define MMEDGE_IOCTL_MAX_KSIZE	sizeof(struct mmedge_xts)
/*
 * Arguments up to this size live on the stack; larger ones (XTS) are
 * allocated, so the frame stays within the 1024 bytes debug kernels warn
 * about.
 */
#define MMEDGE_IOCTL_STACK_KSIZE	256

static_assert(sizeof(struct mmedge_buf_alloc) <= MMEDGE_IOCTL_MAX_KSIZE);
static_assert(sizeof(struct mmedge_buf_info) <= MMEDGE_IOCTL_MAX_KSIZE);
static_assert(sizeof(struct mmedge_buf_sync) <= MMEDGE_IOCTL_MAX_KSIZE);
static_assert(sizeof(struct mmedge_buf_import) <= MMEDGE_IOCTL_MAX_KSIZE);
static_assert(sizeof(struct mmedge_buf_release) <= MMEDGE_IOCTL_MAX_KSIZE);
static_assert(sizeof(struct mmedge_caps) <= MMEDGE_IOCTL_MAX_KSIZE);
static_assert(sizeof(struct mmedge_chan_create) <= MMEDGE_IOCTL_MAX_KSIZE);
static_assert(sizeof(struct mmedge_dqbuf) <= MMEDGE_IOCTL_MAX_KSIZE);
static_assert(sizeof(struct mmedge_chan_stats) <= MMEDGE_IOCTL_MAX_KSIZE);

long mmedge_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct mmedge_file *mf = file->private_data;
	struct mmedge_dev *mdev = mf->mdev;
	struct mmedge_ioctl_ctx ctx = { .install_fd = -1 };
	const struct mmedge_ioctl_info *info;
	void __user *uarg = (void __user *)arg;
	u8 kstack[MMEDGE_IOCTL_STACK_KSIZE] __aligned(8);
	void *kdata = kstack;
	unsigned int usize, ksize;
	bool unlocked;
	int ret;

	BUILD_BUG_ON(sizeof(struct mmedge_caps) != MMEDGE_CAPS_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct mmedge_buf_alloc) != MMEDGE_BUF_ALLOC_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct mmedge_buf_info) != MMEDGE_BUF_INFO_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct mmedge_buf_sync) != MMEDGE_BUF_SYNC_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct mmedge_buf_import) !=
		     MMEDGE_BUF_IMPORT_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct mmedge_buf_release) !=
		     MMEDGE_BUF_RELEASE_SIZE_VER0);
	BUILD_BUG_ON(sizeof(struct mmedge_chan_create) !=
		     MMEDGE_CHAN_CREATE_SIZE_VER1);
	BUILD_BUG_ON(sizeof(struct mmedge_dqbuf) != MMEDGE_DQBUF_SIZE_VER1);
	BUILD_BUG_ON(sizeof(struct mmedge_xts) != MMEDGE_XTS_SIZE_VER1);
	BUILD_BUG_ON(MMEDGE_BUF_SYNC_READ != DMA_BUF_SYNC_READ);
	BUILD_BUG_ON(MMEDGE_BUF_SYNC_WRITE != DMA_BUF_SYNC_WRITE);
	BUILD_BUG_ON(MMEDGE_BUF_SYNC_END != DMA_BUF_SYNC_END);

	ret = mmedge_ioctl_lookup(mmedge_ioctls, ARRAY_SIZE(mmedge_ioctls), cmd,
				  &info);
	if (ret)
		return ret;

	usize = _IOC_SIZE(cmd);
	ksize = _IOC_SIZE(info->cmd);
	ctx.usize = usize;
	if (WARN_ON_ONCE(ksize > MMEDGE_IOCTL_MAX_KSIZE))
		return -EINVAL;
	if (ksize > sizeof(kstack)) {
		kdata = kmalloc(ksize, GFP_KERNEL);
		if (!kdata)
			return -ENOMEM;
	}

	if (_IOC_DIR(cmd) & _IOC_WRITE) {
		ret = copy_struct_from_user(kdata, ksize, uarg, usize);
		if (ret)
			goto out;
	} else {
		memset(kdata, 0, ksize);
	}

	unlocked = info->flags & MMEDGE_IOCTL_UNLOCKED;
	down_read(&mdev->lock);
	ret = mdev->alive ? 0 : -ENODEV;
	if (!ret && !unlocked)
		ret = info->fn(mf, kdata, &ctx);
	up_read(&mdev->lock);
	if (!ret && unlocked)
		ret = info->fn(mf, kdata, &ctx);
	if (ret)
		goto out;

	if ((_IOC_DIR(cmd) & _IOC_READ) &&
	    copy_to_user(uarg, kdata, min(usize, ksize))) {
		/* The fd was never visible; dropping the file frees it all. */
		if (ctx.install_file) {
			put_unused_fd(ctx.install_fd);
			fput(ctx.install_file);
		}
		if (ctx.finish)
			ctx.finish(mf, &ctx, false);
		ret = -EFAULT;
		goto out;
	}
	if (ctx.install_file)
		fd_install(ctx.install_fd, ctx.install_file);
	if (ctx.finish)
		ctx.finish(mf, &ctx, true);
out:
	if (kdata != kstack)
		kfree(kdata);
	return ret;
}

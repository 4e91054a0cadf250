/* SPDX-License-Identifier: MIT */
/*
 * Internal interfaces of libmmhal. Nothing here is exported from the shared
 * library (it is built with -fvisibility=hidden); the host tests link the
 * objects directly to reach these.
 */
#ifndef MMHAL_INTERNAL_H
#define MMHAL_INTERNAL_H

#include <stddef.h>

#include <linux/mmedge.h>

#include "mmhal.h"

#define MMHAL_ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/*
 * mmhal_ioctl() - issue an ioctl, restarting it when interrupted
 *
 * Retries while the ioctl fails with EINTR, like libdrm's drmIoctl(), so a
 * signal arriving in the middle of a call is invisible to the caller.
 * EAGAIN is returned, not retried: mmedge uses it for "nothing ready" on
 * non-blocking files, where a retry loop would spin.
 *
 * Return: the ioctl's non-negative result, or -errno.
 */
int mmhal_ioctl(int fd, unsigned long req, void *arg);

/*
 * mmhal_caps_from_uapi() - convert the driver's caps to the HAL's
 *
 * Zeroes @out first. Strings are copied NUL-terminated even if the driver
 * failed to terminate them.
 *
 * Return: 0, or -EPROTO if the driver's api_version is below 1.
 */
int mmhal_caps_from_uapi(const struct mmedge_caps *in, struct mmhal_caps *out);

/*
 * mmhal_dev_wrap() - make a device handle around an open fd
 *
 * For the host tests: a handle on a pipe shows whether a function issued
 * an ioctl (-ENOTTY) or refused its arguments first (-EINVAL). Takes
 * ownership of @fd on success.
 *
 * Return: 0, or -ENOMEM.
 */
int mmhal_dev_wrap(int fd, const struct mmhal_caps *caps,
		   struct mmhal_dev **out);

/*
 * mmhal_dev_lock() / mmhal_dev_unlock() - the device handle's lock, which
 * guards the userspace bookkeeping of its buffers and channels (see
 * struct mmhal_dev in mmhal_dev.c). Functions below that say "dev lock
 * held" must be called between the two; none of them issues an ioctl.
 */
void mmhal_dev_lock(struct mmhal_dev *dev);
void mmhal_dev_unlock(struct mmhal_dev *dev);

/*
 * mmhal_buf_wrap() / mmhal_chan_wrap() - handles around things that are
 * not the driver's, for the host tests (a memfd as a buffer, a made-up
 * channel id and layout). mmhal_buf_wrap() takes ownership of @fd.
 *
 * Return: 0, or -ENOMEM.
 */
int mmhal_buf_wrap(struct mmhal_dev *dev, int fd, uint64_t size,
		   struct mmhal_buf **out);
int mmhal_chan_wrap(struct mmhal_dev *dev, uint32_t id, uint32_t frame_size,
		    uint32_t meta_offset, struct mmhal_chan **out);

/* mmhal_buf.c: a buffer is the device's (queue on its channels only). */
struct mmhal_dev *mmhal_buf_dev(const struct mmhal_buf *buf);
/* The channel a buffer is queued on, or NULL (dev lock held). */
struct mmhal_chan *mmhal_buf_chan(const struct mmhal_buf *buf);

/*
 * mmhal_buf_attach() / mmhal_buf_detach() - mmhal_chan.c tells a queued
 * buffer which channel slot holds it: @ref is the slot's pointer to the
 * buffer, which mmhal_buf_free() of a queued buffer clears, so that no
 * dangling pointer is left behind (and mmhal_buf.c calls nothing of the
 * channel's). The channel attaches again when its slot table moves.
 * Dev lock held.
 */
void mmhal_buf_attach(struct mmhal_buf *buf, struct mmhal_chan *chan,
		      struct mmhal_buf **ref);
void mmhal_buf_detach(struct mmhal_buf *buf);

#endif /* MMHAL_INTERNAL_H */

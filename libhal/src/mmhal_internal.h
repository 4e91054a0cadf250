/* SPDX-License-Identifier: MIT */
/*
 * Internal interfaces of libmmhal. Nothing here is exported from the shared
 * library (it is built with -fvisibility=hidden); the host tests link the
 * objects directly to reach these.
 */
#ifndef MMHAL_INTERNAL_H
#define MMHAL_INTERNAL_H

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

#endif /* MMHAL_INTERNAL_H */

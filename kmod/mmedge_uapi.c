// SPDX-License-Identifier: GPL-2.0
/*
 * mmedge: ioctl table and argument validation.
 *
 * Everything here works on kernel copies of the arguments and has no side
 * effects, so the rules of uapi/linux/mmedge.h can be tested by KUnit.
 */

#include <linux/errno.h>
#include <linux/ioctl.h>
#include <linux/kernel.h>

#include "mmedge_uapi.h"

const struct mmedge_ioctl_info mmedge_ioctls[MMEDGE_IOCTL_NR_MAX] = {
	[_IOC_NR(MMEDGE_IOC_QUERY_CAPS)] = {
		.cmd = MMEDGE_IOC_QUERY_CAPS,
		.min_size = MMEDGE_CAPS_SIZE_VER0,
		.name = "QUERY_CAPS",
	},
};

/**
 * mmedge_ioctl_lookup() - find the table entry for an ioctl command
 * @cmd: command as passed to unlocked_ioctl
 * @info: set to the entry on success
 *
 * The type and the direction bits must match the table; the size may
 * differ from the kernel's (see uapi/linux/mmedge.h).
 *
 * Return: 0 on success; -ENOTTY for a foreign type, an unknown number or
 * a wrong direction; -EINVAL for a size below the first published one.
 */
int mmedge_ioctl_lookup(unsigned int cmd, const struct mmedge_ioctl_info **info)
{
	const struct mmedge_ioctl_info *e;
	unsigned int nr = _IOC_NR(cmd);

	if (_IOC_TYPE(cmd) != MMEDGE_IOC_MAGIC || nr >= ARRAY_SIZE(mmedge_ioctls))
		return -ENOTTY;
	e = &mmedge_ioctls[nr];
	if (!e->cmd || _IOC_DIR(cmd) != _IOC_DIR(e->cmd))
		return -ENOTTY;
	if (_IOC_SIZE(cmd) < e->min_size)
		return -EINVAL;
	*info = e;
	return 0;
}

/**
 * mmedge_ioctl_mask() - bit N set for every implemented ioctl number N
 *
 * Return: the mask reported in mmedge_caps.ioctls.
 */
u64 mmedge_ioctl_mask(void)
{
	u64 mask = 0;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(mmedge_ioctls); i++)
		if (mmedge_ioctls[i].cmd)
			mask |= BIT_ULL(i);
	return mask;
}

/**
 * mmedge_caps_check() - validate the input fields of a caps query
 * @caps: kernel copy of the user's structure
 *
 * Return: 0, or -EINVAL for unknown flags or non-zero reserved fields.
 */
int mmedge_caps_check(const struct mmedge_caps *caps)
{
	unsigned int i;

	if (caps->flags & ~MMEDGE_CAPS_FLAGS_VALID)
		return -EINVAL;
	for (i = 0; i < ARRAY_SIZE(caps->reserved); i++)
		if (caps->reserved[i])
			return -EINVAL;
	return 0;
}

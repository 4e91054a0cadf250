/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * mmedge: DMA buffers, channels and hardware timestamps shared by sensors,
 * NPU and GPU.
 *
 * Rules every ioctl in this file follows:
 *
 *  - Structures only use fixed-width types, are padded to a multiple of
 *    8 bytes and carry reserved fields that must be zero.
 *  - Structures may grow at their end. The kernel reads the size the caller
 *    encoded in the ioctl number: a larger structure is accepted if the
 *    bytes the kernel does not know are zero (else -E2BIG), a smaller one
 *    is accepted down to the size first published (else -EINVAL), and the
 *    kernel writes back at most the caller's size.
 *  - Unknown ioctls return -ENOTTY. Numbers are never reused.
 *  - MMEDGE_IOC_QUERY_CAPS tells which ioctls and features exist.
 */
#ifndef _UAPI_LINUX_MMEDGE_H
#define _UAPI_LINUX_MMEDGE_H

#include <linux/const.h>
#include <linux/ioctl.h>
#include <linux/types.h>

#define MMEDGE_IOC_MAGIC		0xE7

/* Version of this interface; grows when ioctls or fields are added. */
#define MMEDGE_API_VERSION		1

/* Length of the strings in struct mmedge_caps, including the NUL. */
#define MMEDGE_NAME_LEN			16
#define MMEDGE_BUS_INFO_LEN		32

/* Bits of mmedge_caps.caps */
/* The instance has no hardware behind it (created by a module parameter). */
#define MMEDGE_CAP_VIRTUAL		_BITULL(0)

/* Flags accepted in mmedge_caps.flags (none yet). */
#define MMEDGE_CAPS_FLAGS_VALID		0

/**
 * struct mmedge_caps - what an mmedge instance can do
 * @api_version: out: MMEDGE_API_VERSION of the running driver.
 * @flags: in: query flags; must be zero (MMEDGE_CAPS_FLAGS_VALID).
 * @caps: out: MMEDGE_CAP_* bits.
 * @ioctls: out: bit N is set if the ioctl with number N
 *	(_IOC_NR(cmd)) is implemented.
 * @instance: out: the N of /dev/mmedgeN.
 * @max_channels: out: number of DMA channels the instance offers.
 * @max_buffer_size: out: largest buffer one allocation may ask for, in
 *	bytes; 0 if the instance cannot allocate buffers.
 * @mem_limit: out: bytes all buffers of the instance may use together;
 *	0 if the instance cannot allocate buffers.
 * @driver: out: NUL-terminated driver name ("mmedge").
 * @bus_info: out: NUL-terminated location, "platform:<device name>".
 * @reserved: must be zero.
 *
 * First published size: 128 bytes.
 */
struct mmedge_caps {
	__u32 api_version;
	__u32 flags;
	__u64 caps;
	__u64 ioctls;
	__u32 instance;
	__u32 max_channels;
	__u64 max_buffer_size;
	__u64 mem_limit;
	__u8 driver[MMEDGE_NAME_LEN];
	__u8 bus_info[MMEDGE_BUS_INFO_LEN];
	__u64 reserved[4];
};

#define MMEDGE_CAPS_SIZE_VER0		128

#define MMEDGE_IOC_QUERY_CAPS	_IOWR(MMEDGE_IOC_MAGIC, 0x00, struct mmedge_caps)

#endif /* _UAPI_LINUX_MMEDGE_H */

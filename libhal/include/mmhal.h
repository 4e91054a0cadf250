/* SPDX-License-Identifier: MIT */
/*
 * mmhal.h - userspace HAL for mmedge (/dev/mmedgeN)
 *
 * Conventions:
 *
 *  - Objects are opaque handles created by an mmhal_<object>_open() (or
 *    _create()) function and released by the matching _close() (or
 *    _destroy()), which accepts NULL.
 *  - Functions that can fail return 0 or a negative errno (-ENOENT, ...);
 *    mmhal_strerror() turns one into a message. On failure, output
 *    arguments are left zeroed/NULL. errno is not part of the contract.
 *  - Where a function takes a parameter struct, mmhal_*_default_params()
 *    returns one filled with defaults, by value; change only the fields you
 *    need.
 *
 * Threading:
 *
 *  - A device handle (struct mmhal_dev) may be used from one thread at a
 *    time; the caller serialises calls on the same handle. Distinct handles
 *    are independent and may be used concurrently, even when they refer to
 *    the same /dev/mmedgeN.
 *  - Functions that take no handle (mmhal_strerror(), mmhal_version(),
 *    mmhal_cap_name(), mmhal_ioctl_name()) are thread-safe and return
 *    pointers to static, immutable strings.
 *  - The library installs no signal handlers and starts no threads. Calls
 *    interrupted by a signal are restarted internally.
 */
#ifndef MMHAL_H
#define MMHAL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define MMHAL_API __attribute__((visibility("default")))
#else
#define MMHAL_API
#endif

/* Version of this header; mmhal_version() gives the library's at run time. */
#define MMHAL_VERSION_MAJOR	0
#define MMHAL_VERSION_MINOR	1
#define MMHAL_VERSION_PATCH	0
#define MMHAL_VERSION_STRING	"0.1.0"

/* Device opened when mmhal_dev_open() is given a NULL path. */
#define MMHAL_DEFAULT_DEV	"/dev/mmedge0"

/* Lengths of the strings in struct mmhal_caps, including the NUL. */
#define MMHAL_DRIVER_LEN	16
#define MMHAL_BUS_INFO_LEN	32

/* Bits of mmhal_caps.caps; same values as the driver's MMEDGE_CAP_*. */
#define MMHAL_CAP_VIRTUAL	(1ULL << 0)	/* no hardware behind it */
#define MMHAL_CAP_BUFFERS	(1ULL << 1)	/* buffers can be allocated */
#define MMHAL_CAP_CONTIG	(1ULL << 2)	/* contiguous buffers */

/* Bit numbers of mmhal_caps.ioctls (the driver's _IOC_NR of each ioctl). */
#define MMHAL_IOCTL_QUERY_CAPS	0
#define MMHAL_IOCTL_BUF_ALLOC	1
#define MMHAL_IOCTL_BUF_INFO	2
#define MMHAL_IOCTL_BUF_SYNC	3
#define MMHAL_IOCTL_BUF_IMPORT	4
#define MMHAL_IOCTL_BUF_RELEASE	5

/*
 * Device layer
 */

/* An open /dev/mmedgeN. */
struct mmhal_dev;

/**
 * struct mmhal_caps - what an mmedge instance can do
 * @api_version: interface version of the running driver (>= 1); may be
 *	newer than the version this library knows.
 * @instance: the N of /dev/mmedgeN.
 * @caps: MMHAL_CAP_* bits; unknown bits may be set by newer drivers.
 * @ioctls: bit N is set if the driver implements ioctl number N
 *	(MMHAL_IOCTL_*); see mmhal_ioctl_name().
 * @max_channels: DMA channels the instance offers.
 * @virtual_dev: 1 if the instance has no hardware behind it, else 0
 *	(MMHAL_CAP_VIRTUAL, as an int for convenience).
 * @max_buffer_size: largest single buffer in bytes; 0 if the instance
 *	cannot allocate buffers.
 * @mem_limit: bytes all buffers of the instance may use together; 0 if the
 *	instance cannot allocate buffers.
 * @driver: NUL-terminated driver name ("mmedge").
 * @bus_info: NUL-terminated location ("platform:<device name>").
 * @reserved: zero; later versions of the library may fill it in.
 */
struct mmhal_caps {
	uint32_t api_version;
	uint32_t instance;
	uint64_t caps;
	uint64_t ioctls;
	uint32_t max_channels;
	int virtual_dev;
	uint64_t max_buffer_size;
	uint64_t mem_limit;
	char driver[MMHAL_DRIVER_LEN];
	char bus_info[MMHAL_BUS_INFO_LEN];
	uint64_t reserved[8];
};

/**
 * mmhal_dev_open() - open an mmedge device
 * @path: device node, or NULL for MMHAL_DEFAULT_DEV.
 * @out: receives the handle; set to NULL on failure.
 *
 * Opens @path read-write and close-on-exec, and checks that it is an mmedge
 * device by querying its capabilities, which the handle keeps.
 *
 * Return: 0, or
 *  -EINVAL  @out is NULL;
 *  -ENODEV  @path is not a character device, or not an mmedge device;
 *  -EPROTO  the driver reports an interface version this library cannot use;
 *  -ENOMEM  out of memory;
 *  any error of open(2) (-ENOENT, -EACCES, -EISDIR, ...) or of the query.
 */
MMHAL_API int mmhal_dev_open(const char *path, struct mmhal_dev **out);

/**
 * mmhal_dev_close() - close a device handle and free it
 * @dev: handle from mmhal_dev_open(), or NULL (nothing happens).
 */
MMHAL_API void mmhal_dev_close(struct mmhal_dev *dev);

/**
 * mmhal_dev_caps() - capabilities read when the device was opened
 * @dev: device handle.
 * @out: filled in on success, zeroed on failure (if not NULL).
 *
 * Return: 0, or -EINVAL if @dev or @out is NULL.
 */
MMHAL_API int mmhal_dev_caps(struct mmhal_dev *dev, struct mmhal_caps *out);

/**
 * mmhal_dev_fd() - file descriptor of a device handle
 * @dev: device handle.
 *
 * The descriptor stays owned by @dev: do not close it. It is meant for
 * poll(2) and for passing to other APIs, not for issuing mmedge ioctls
 * behind the library's back.
 *
 * Return: the descriptor (>= 0), or -EINVAL if @dev is NULL.
 */
MMHAL_API int mmhal_dev_fd(const struct mmhal_dev *dev);

/*
 * Names and messages
 */

/**
 * mmhal_strerror() - message for an error returned by this library
 * @err: a negative errno as returned (a positive errno is accepted too).
 *
 * Errors with a meaning specific to mmedge get their own wording
 * (-ENODEV: "not an mmedge device"); others get the C library's message.
 *
 * Return: a static string; never NULL.
 */
MMHAL_API const char *mmhal_strerror(int err);

/**
 * mmhal_version() - version of the library that is running
 *
 * Return: a static string such as "0.1.0".
 */
MMHAL_API const char *mmhal_version(void);

/**
 * mmhal_cap_name() - name of a capability bit
 * @bit: bit number in mmhal_caps.caps (0 for MMHAL_CAP_VIRTUAL).
 *
 * Return: a static lower-case name ("virtual"), or NULL if this library
 * does not know the bit.
 */
MMHAL_API const char *mmhal_cap_name(unsigned int bit);

/**
 * mmhal_ioctl_name() - name of an mmedge ioctl by number
 * @nr: bit number in mmhal_caps.ioctls (MMHAL_IOCTL_*).
 *
 * Return: a static upper-case name without the MMEDGE_IOC_ prefix
 * ("QUERY_CAPS"), or NULL if this library does not know the number.
 */
MMHAL_API const char *mmhal_ioctl_name(unsigned int nr);

#ifdef __cplusplus
}
#endif

#endif /* MMHAL_H */

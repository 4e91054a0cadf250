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

/* Bits of mmedge_caps.caps (continued) */
/* MMEDGE_IOC_BUF_* exist: buffers can be allocated, imported, synced. */
#define MMEDGE_CAP_BUFFERS		_BITULL(1)
/* Physically contiguous buffers can be allocated (MMEDGE_BUF_CONTIG). */
#define MMEDGE_CAP_CONTIG		_BITULL(2)

/*
 * Buffers
 *
 * MMEDGE_IOC_BUF_ALLOC allocates a buffer and returns it as a dma-buf fd:
 * mmap() it, hand it to V4L2, DRM or an NPU driver, sync it with
 * DMA_BUF_IOCTL_SYNC or the ranged MMEDGE_IOC_BUF_SYNC. The buffer lives
 * as long as any reference to the dma-buf does (fds, mappings, importers),
 * even after the mmedge file that allocated it is closed.
 */

/* Cache modes, in the MMEDGE_BUF_CACHE_MASK bits of mmedge_buf_alloc.flags */
#define MMEDGE_BUF_CACHE_CACHED		0x0	/* write-back, default */
#define MMEDGE_BUF_CACHE_WC		0x1	/* write-combined */
#define MMEDGE_BUF_CACHE_UNCACHED	0x2	/* uncached */
#define MMEDGE_BUF_CACHE_MASK		0x3

/* Physically contiguous backing (one DMA segment). */
#define MMEDGE_BUF_CONTIG		_BITUL(8)

#define MMEDGE_BUF_FLAGS_VALID		(MMEDGE_BUF_CACHE_MASK | MMEDGE_BUF_CONTIG)

/* File flags accepted in mmedge_buf_alloc.fd_flags (from <fcntl.h>). */
#define MMEDGE_BUF_FD_FLAGS_VALID	(O_CLOEXEC | O_ACCMODE)

/**
 * struct mmedge_buf_alloc - allocate a buffer, get a dma-buf fd
 * @size: in: bytes, > 0; rounded up to the page size.
 * @flags: in: MMEDGE_BUF_CACHE_* | MMEDGE_BUF_CONTIG.
 * @fd_flags: in: O_CLOEXEC and O_RDONLY / O_WRONLY / O_RDWR for the new
 *	fd (dma-buf mmap() with PROT_WRITE needs O_RDWR).
 * @fd: out: the dma-buf file descriptor.
 * @cache: out: the cache mode granted (MMEDGE_BUF_CACHE_*).
 * @alloc_size: out: the size allocated (@size rounded up).
 * @id: out: the buffer's id, unique per instance, as in mmedge_buf_info.
 * @reserved: must be zero.
 *
 * Errors: -EINVAL for a zero size, unknown flags or fd_flags, a non-zero
 * reserved field; -ENOMEM when the buffer would exceed max_buffer_size,
 * the file's or the global memory cap (see struct mmedge_caps), or memory
 * is short (contiguous buffers above the largest buddy block need CMA or
 * a reserved memory region); -EMFILE without a free fd.
 *
 * First published size: 64 bytes.
 */
struct mmedge_buf_alloc {
	__u64 size;
	__u32 flags;
	__u32 fd_flags;
	__s32 fd;
	__u32 cache;
	__u64 alloc_size;
	__u64 id;
	__u64 reserved[3];
};

#define MMEDGE_BUF_ALLOC_SIZE_VER0	64

/* Bits of mmedge_buf_info.info_flags */
#define MMEDGE_BUF_INFO_OURS		_BITUL(0) /* allocated by mmedge */
#define MMEDGE_BUF_INFO_CONTIG		_BITUL(1) /* one DMA segment */
#define MMEDGE_BUF_INFO_IMPORTED	_BITUL(2) /* imported into this file */

/**
 * struct mmedge_buf_info - describe a buffer
 * @fd: in: a dma-buf fd, allocated by mmedge or imported into this file.
 * @flags: in: must be zero.
 * @size: out: bytes.
 * @info_flags: out: MMEDGE_BUF_INFO_* bits.
 * @cache: out: MMEDGE_BUF_CACHE_* for mmedge buffers; 0 for foreign ones.
 * @nr_segments: out: scatter-gather segments of the backing (for a
 *	foreign buffer: DMA segments of its mapping for this device).
 * @nr_attachments: out: devices attached to the buffer, mmedge's own
 *	imports included.
 * @id: out: mmedge buffer id, or import id for a foreign buffer.
 * @alloc_flags: out: the MMEDGE_BUF_* flags the buffer was allocated with.
 * @pad: zero.
 * @reserved: must be zero.
 *
 * Errors: -EBADF for a bad fd; -EINVAL for an fd that is not a dma-buf, a
 * foreign dma-buf not imported into this file, non-zero flags or
 * reserved fields.
 *
 * First published size: 64 bytes.
 */
struct mmedge_buf_info {
	__s32 fd;
	__u32 flags;
	__u64 size;
	__u32 info_flags;
	__u32 cache;
	__u32 nr_segments;
	__u32 nr_attachments;
	__u64 id;
	__u32 alloc_flags;
	__u32 pad;
	__u64 reserved[2];
};

#define MMEDGE_BUF_INFO_SIZE_VER0	64

/* mmedge_buf_sync.flags: the DMA_BUF_SYNC_* values of <linux/dma-buf.h> */
#define MMEDGE_BUF_SYNC_READ		_BITUL(0)
#define MMEDGE_BUF_SYNC_WRITE		_BITUL(1)
#define MMEDGE_BUF_SYNC_RW		(MMEDGE_BUF_SYNC_READ | MMEDGE_BUF_SYNC_WRITE)
#define MMEDGE_BUF_SYNC_START		0
#define MMEDGE_BUF_SYNC_END		_BITUL(2)
#define MMEDGE_BUF_SYNC_FLAGS_VALID	(MMEDGE_BUF_SYNC_RW | MMEDGE_BUF_SYNC_END)

/**
 * struct mmedge_buf_sync - CPU access bracket for a byte range
 * @fd: in: dma-buf fd of an mmedge buffer.
 * @flags: in: MMEDGE_BUF_SYNC_START or _END, with _READ, _WRITE or both
 *	(same values and meaning as DMA_BUF_IOCTL_SYNC).
 * @offset: in: first byte.
 * @len: in: bytes, > 0; @offset + @len <= buffer size.
 * @synced: out: bytes cache maintenance covered (the range widened to
 *	cache lines, once per mapping that needed it).
 * @reserved: must be zero.
 *
 * Like DMA_BUF_IOCTL_SYNC, but only [@offset, @offset + @len) is made
 * coherent, for the CPU mapping and for every attached device's mapping.
 * A START waits (interruptibly) for the fences on the buffer first.
 *
 * Errors: -EBADF for a bad fd; -EINVAL for a dma-buf not allocated by
 * mmedge, unknown flags, len 0, a range past the end or overflowing,
 * non-zero reserved fields.
 *
 * First published size: 48 bytes.
 */
struct mmedge_buf_sync {
	__s32 fd;
	__u32 flags;
	__u64 offset;
	__u64 len;
	__u64 synced;
	__u64 reserved[2];
};

#define MMEDGE_BUF_SYNC_SIZE_VER0	48

/**
 * struct mmedge_buf_import - register a foreign dma-buf with this file
 * @fd: in: a dma-buf fd (from DRM, V4L2, a heap, or mmedge itself).
 * @flags: in: must be zero.
 * @id: out: import id; release with MMEDGE_IOC_BUF_RELEASE. Imports also
 *	end when the mmedge file is closed.
 * @size: out: the buffer's size in bytes.
 * @nr_segments: out: DMA segments of the mapping for this device.
 * @pad: zero.
 * @reserved: must be zero.
 *
 * The buffer is attached to the mmedge device and mapped for DMA, so
 * channels can target it.
 *
 * Errors: -EBADF for a bad fd; -EINVAL for an fd that is not a dma-buf,
 * non-zero flags or reserved fields; -EEXIST if this file already imported
 * that dma-buf; -ENOSPC past MMEDGE_MAX_IMPORTS imports in one file; the
 * exporter's error if it cannot attach or map the buffer for mmedge.
 *
 * First published size: 48 bytes.
 */
struct mmedge_buf_import {
	__s32 fd;
	__u32 flags;
	__u64 id;
	__u64 size;
	__u32 nr_segments;
	__u32 pad;
	__u64 reserved[2];
};

#define MMEDGE_BUF_IMPORT_SIZE_VER0	48

/* Imports one mmedge file may hold at once. */
#define MMEDGE_MAX_IMPORTS		1024

/**
 * struct mmedge_buf_release - end an import
 * @id: in: import id from MMEDGE_IOC_BUF_IMPORT.
 * @flags: in: must be zero.
 * @pad: zero.
 * @reserved: must be zero.
 *
 * Errors: -ENOENT for an id that is not an import of this file; -EINVAL
 * for non-zero flags or reserved fields.
 *
 * First published size: 32 bytes.
 */
struct mmedge_buf_release {
	__u64 id;
	__u32 flags;
	__u32 pad;
	__u64 reserved[2];
};

#define MMEDGE_BUF_RELEASE_SIZE_VER0	32

#define MMEDGE_IOC_BUF_ALLOC	_IOWR(MMEDGE_IOC_MAGIC, 0x01, struct mmedge_buf_alloc)
#define MMEDGE_IOC_BUF_INFO	_IOWR(MMEDGE_IOC_MAGIC, 0x02, struct mmedge_buf_info)
#define MMEDGE_IOC_BUF_SYNC	_IOWR(MMEDGE_IOC_MAGIC, 0x03, struct mmedge_buf_sync)
#define MMEDGE_IOC_BUF_IMPORT	_IOWR(MMEDGE_IOC_MAGIC, 0x04, struct mmedge_buf_import)
#define MMEDGE_IOC_BUF_RELEASE	_IOW(MMEDGE_IOC_MAGIC, 0x05, struct mmedge_buf_release)

#endif /* _UAPI_LINUX_MMEDGE_H */

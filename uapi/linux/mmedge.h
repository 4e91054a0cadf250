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
#define MMEDGE_API_VERSION		2

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

/*
 * File flags accepted in mmedge_buf_alloc.fd_flags. O_CLOEXEC and O_ACCMODE
 * come from <fcntl.h> in userspace and <linux/fcntl.h> in the kernel; this
 * header includes neither, since <linux/fcntl.h> and the C library's
 * <fcntl.h> cannot both be included (they both define struct flock), as
 * <linux/dma-heap.h> does for DMA_HEAP_VALID_FD_FLAGS.
 */
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
 * @synced: out: bytes cache maintenance was asked for: the range clipped
 *	to each scatterlist entry of an attachment, summed over every mapped
 *	attachment; the whole buffer for a mapping whose entries an IOMMU
 *	merged (0 for a buffer no device has mapped).
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
 * that dma-buf; -ENOSPC past MMEDGE_MAX_IMPORTS imports in one file;
 * -ERANGE if the exporter's mapping has a DMA segment longer than the
 * hub's dma_max_segment or crossing its dma_segment_boundary (sysfs); the
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

/*
 * Channels
 *
 * A channel is a DMA stream. A capture channel moves frames from a source
 * (camera, microphone, IMU; virtual ones on a virtual instance) into
 * buffers that userspace queues (mmedge buffers or imported dma-bufs) and
 * dequeues when filled, like V4L2 streaming I/O. A feed channel moves
 * filled buffers to a sink (memory to device); a copy channel moves one
 * buffer's bytes into another (memory to memory). All channels of an
 * instance share one DMA engine, arbitrated by weight (see
 * Documentation/arbiter.rst).
 */

#define MMEDGE_CAP_CHANNELS		_BITULL(3)

/* mmedge_chan_create.dir */
#define MMEDGE_CHAN_CAPTURE		0	/* device to memory */
#define MMEDGE_CHAN_FEED		1	/* memory to device */
#define MMEDGE_CHAN_COPY		2	/* memory to memory */

/* mmedge_src_config.type */
#define MMEDGE_SRC_CAMERA		1
#define MMEDGE_SRC_MIC			2
#define MMEDGE_SRC_IMU			3

/* Camera pixel formats: V4L2 fourcc codes */
#define MMEDGE_FMT_GREY		0x59455247	/* 'GREY' */
#define MMEDGE_FMT_RGB24	0x33424752	/* 'RGB3' */
#define MMEDGE_FMT_NV12		0x3231564e	/* 'NV12' */
/* Microphone sample format */
#define MMEDGE_FMT_S16LE	0x454c3631	/* '16LE' */
/* IMU sample format: struct mmedge_imu_sample */
#define MMEDGE_FMT_IMU6		0x36554d49	/* 'IMU6' */

/**
 * struct mmedge_imu_sample - one IMU6 record, 24 bytes, little-endian
 * @index: the sample's index on the channel: seq * period + k for
 *	record k of frame seq.
 * @ax: acceleration, x axis, signed, 16384 = 1 g.
 * @ay: acceleration, y axis.
 * @az: acceleration, z axis.
 * @gx: angular rate, x axis, signed.
 * @gy: angular rate, y axis.
 * @gz: angular rate, z axis.
 * @reserved: zero.
 *
 * The axis values are two's complement s16 stored little-endian.
 */
struct mmedge_imu_sample {
	__le64 index;
	__le16 ax;
	__le16 ay;
	__le16 az;
	__le16 gx;
	__le16 gy;
	__le16 gz;
	__le32 reserved;
};

/*
 * mmedge_src_config.signal for the camera: the image pattern.
 * MOVING: the levels change with the frame number.
 * STATIC: every frame shows the image of frame 0; only the frame number
 * at the start of each line (8 bytes per luma line) changes.
 */
#define MMEDGE_PATTERN_MOVING		0
#define MMEDGE_PATTERN_STATIC		1

/*
 * mmedge_src_config.signal for the microphone.
 * TONE: 1 kHz. CHIRP: 100 Hz to 4 kHz over each second.
 * SILENCE: every byte of every buffer is 0, the index words included.
 * NOISE: pseudo-random samples, a function of the sample's index.
 */
#define MMEDGE_SIGNAL_TONE		0
#define MMEDGE_SIGNAL_CHIRP		1
#define MMEDGE_SIGNAL_SILENCE		2
#define MMEDGE_SIGNAL_NOISE		3

/**
 * struct mmedge_src_config - what a source produces
 * @type: MMEDGE_SRC_*.
 * @fourcc: MMEDGE_FMT_*: GREY, RGB24 or NV12 for a camera, S16LE for a
 *	microphone, IMU6 for an IMU.
 * @width: camera: pixels per line (even for NV12), 16..4096.
 * @height: camera: lines (even for NV12), 16..4096.
 * @rate_num: frames (camera) or samples (microphone, IMU) per
 *	@rate_den seconds.
 * @rate_den: see @rate_num; > 0.
 * @period: microphone and IMU: samples per buffer; camera: 0.
 * @signal: camera: MMEDGE_PATTERN_* (0: MOVING); microphone:
 *	MMEDGE_SIGNAL_* (0: TONE); IMU: 0. Another value is -EINVAL.
 *
 * Virtual sources fill frames with patterns that carry their sequence
 * number, except the microphone's SILENCE
 * (Documentation/userspace-api/mmedge-channels.rst).
 */
struct mmedge_src_config {
	__u32 type;
	__u32 fourcc;
	__u32 width;
	__u32 height;
	__u32 rate_num;
	__u32 rate_den;
	__u32 period;
	__u32 signal;
};

/* mmedge_chan_create.class and mmedge_chan_config.class */
#define MMEDGE_CLASS_BEST_EFFORT	0
#define MMEDGE_CLASS_LATENCY		1

#define MMEDGE_WEIGHT_MIN		1
#define MMEDGE_WEIGHT_DEFAULT		100
#define MMEDGE_WEIGHT_MAX		10000

/* The largest rate cap, bytes/s (100 GB/s); a larger one is -EINVAL. */
#define MMEDGE_RATE_CAP_MAX		100000000000ULL

/* mmedge_chan_create.overrun: a frame is due and no buffer is queued */
#define MMEDGE_OVERRUN_DROP_NEWEST	0	/* the new frame is dropped */
#define MMEDGE_OVERRUN_DROP_OLDEST	1	/* the oldest filled buffer is reused */

/**
 * struct mmedge_chan_create - create a channel
 * @dir: MMEDGE_CHAN_CAPTURE, MMEDGE_CHAN_FEED or MMEDGE_CHAN_COPY.
 * @flags: must be zero.
 * @src: capture: the source; feed and copy: must be all zero (the
 *	virtual sink takes any size; each queued job says its length).
 * @weight: MMEDGE_WEIGHT_MIN..MAX; 0 means MMEDGE_WEIGHT_DEFAULT. Above
 *	the default needs CAP_SYS_NICE.
 * @class: MMEDGE_CLASS_*; LATENCY needs CAP_SYS_NICE and a @cap.
 * @cap: rate cap in bytes per second, at most MMEDGE_RATE_CAP_MAX; 0 = none.
 * @segment: bytes per arbitration segment; 0 = the instance default
 *	(4096); 64..1 MiB, a multiple of 64.
 * @overrun: capture: MMEDGE_OVERRUN_*; feed and copy: must be zero (jobs
 *	wait in the queue, none is dropped).
 * @id: out: channel id, for the other channel ioctls.
 * @frame_size: out: capture: bytes of data per frame; feed, copy: 0.
 * @meta_offset: out: capture: where in a buffer the struct
 *	mmedge_frame_meta record goes (after the data, 64-byte aligned); a
 *	queued buffer must hold @meta_offset + sizeof(struct
 *	mmedge_frame_meta) bytes. Feed, copy: 0 (a copy's record goes at
 *	ALIGN(mmedge_qbuf.bytesused, 64) of its destination).
 * @pad: must be zero.
 * @name: in/out: the channel's name, unique in the instance, for
 *	operators (mmctl): [a-z0-9_-], NUL-terminated; empty = a name made
 *	from the source type and a number ("camera0", "mic0", "imu0";
 *	"feed0", "copy0" for the other directions).
 * @reserved: must be zero.
 * @sensor_offset_ns: in: capture: the source's clock offset from the SoC
 *	counter, ns, -MMEDGE_SENSOR_OFFSET_MAX..MMEDGE_SENSOR_OFFSET_MAX;
 *	feed, copy: must be zero.
 * @sensor_drift_ppb: in: capture: the source's clock rate error, parts
 *	per billion, -MMEDGE_SENSOR_DRIFT_MAX..MMEDGE_SENSOR_DRIFT_MAX
 *	(+-1000 ppm); feed, copy: must be zero.
 * @sensor_pad: must be zero.
 * @sensor_epoch: out: capture: the SoC counter in ns (see "Sensor
 *	clocks" below) when the channel was created; feed, copy: 0.
 *
 * Sensor clocks. Each capture source has its own clock domain, a 64-bit
 * nanosecond counter derived exactly from the SoC counter (the raw counter
 * of struct mmedge_timestamps, converted with mmedge_xts.mult and .shift
 * and a 128-bit product: soc_ns = (raw * mult) >> shift, which is raw
 * itself when mmedge_xts.counter_hz is 10^9):
 *
 *	sensor = soc_ns + sensor_offset_ns
 *		 + trunc(sensor_drift_ppb * (soc_ns - sensor_epoch) / 10^9)
 *
 * in exact integer arithmetic, the quotient truncated toward zero, the
 * sum taken modulo 2^64. Offset 0 and drift 0 (the default, and what a
 * caller of the first published size gets) give the SoC counter's own
 * timeline. Frames carry the sensor stamps in mmedge_frame_meta and
 * mmedge_dqbuf (MMEDGE_FRAME_TS_SENSOR); MMEDGE_IOC_XTS with
 * MMEDGE_XTS_SENSOR samples a channel's sensor clock against the SoC
 * counter and CLOCK_MONOTONIC.
 *
 * An instance has at most 64 channels and an open file at most 16
 * (-ENOSPC).
 *
 * Errors (beyond the above): -EINVAL for @sensor_offset_ns or
 * @sensor_drift_ppb out of range or set on a feed or copy channel,
 * @sensor_pad not zero.
 *
 * First published size: 112 bytes. Size 136 (MMEDGE_CHAN_CREATE_SIZE_VER1)
 * adds the sensor clock fields.
 */
struct mmedge_chan_create {
	__u32 dir;
	__u32 flags;
	struct mmedge_src_config src;
	__u32 weight;
	__u32 class;
	__u64 cap;
	__u32 segment;
	__u32 overrun;
	__u32 id;
	__u32 frame_size;
	__u32 meta_offset;
	__u32 pad;
	__u8 name[MMEDGE_NAME_LEN];
	__u64 reserved[2];
	__s64 sensor_offset_ns;
	__s32 sensor_drift_ppb;
	__u32 sensor_pad;
	__u64 sensor_epoch;
};

#define MMEDGE_CHAN_CREATE_SIZE_VER0	112
#define MMEDGE_CHAN_CREATE_SIZE_VER1	136

/* Sensor clock limits (mmedge_chan_create.sensor_*) */
#define MMEDGE_SENSOR_OFFSET_MAX	86400000000000LL /* one day, ns */
#define MMEDGE_SENSOR_DRIFT_MAX		1000000		/* ppb: 1000 ppm */

/* mmedge_chan_config.set: which fields to apply */
#define MMEDGE_CHAN_SET_WEIGHT		_BITUL(0)
#define MMEDGE_CHAN_SET_CLASS		_BITUL(1)
#define MMEDGE_CHAN_SET_CAP		_BITUL(2)
#define MMEDGE_CHAN_SET_VALID		(MMEDGE_CHAN_SET_WEIGHT | \
					 MMEDGE_CHAN_SET_CLASS | \
					 MMEDGE_CHAN_SET_CAP)

/**
 * struct mmedge_chan_config - change a channel's arbitration settings
 * @id: in: channel id.
 * @set: in: MMEDGE_CHAN_SET_* bits: the fields to change; 0 only reads.
 * @weight: in/out: the weight; takes effect from the next segment.
 * @class: in/out: MMEDGE_CLASS_*.
 * @cap: in/out: bytes per second, at most MMEDGE_RATE_CAP_MAX; 0 = none.
 * @reserved: must be zero.
 *
 * Out: the channel's settings after the change.
 *
 * Any channel of the instance may be read. Changing a channel created
 * through another open file needs CAP_NET_ADMIN or CAP_SYS_NICE (-EPERM);
 * on its own channels a file may lower the weight or the cap and return
 * to best effort, while a weight above MMEDGE_WEIGHT_DEFAULT, the
 * latency class or a higher cap in it needs CAP_SYS_NICE.
 *
 * First published size: 40 bytes.
 */
struct mmedge_chan_config {
	__u32 id;
	__u32 set;
	__u32 weight;
	__u32 class;
	__u64 cap;
	__u64 reserved[2];
};

#define MMEDGE_CHAN_CONFIG_SIZE_VER0	40

/**
 * struct mmedge_chan_destroy - destroy a channel
 * @id: channel id.
 * @flags: must be zero.
 * @reserved: must be zero.
 *
 * Queued, in-flight and filled-but-not-dequeued buffers are released
 * (not returned by MMEDGE_IOC_DQBUF); their fences signal with
 * -ECANCELED.
 */
struct mmedge_chan_destroy {
	__u32 id;
	__u32 flags;
	__u64 reserved;
};

#define MMEDGE_CHAN_DESTROY_SIZE_VER0	16

/* mmedge_qbuf.flags */
#define MMEDGE_QBUF_FENCE		_BITUL(0)	/* return an out-fence */
#define MMEDGE_QBUF_SRC			_BITUL(1)	/* src_fd is valid (copy) */
#define MMEDGE_QBUF_FLAGS_VALID		(MMEDGE_QBUF_FENCE | MMEDGE_QBUF_SRC)

/**
 * struct mmedge_qbuf - queue a buffer (or a copy job) on a channel
 * @chan: channel id.
 * @fd: dma-buf fd (an mmedge buffer, or one imported into this file):
 *	capture: the empty buffer to fill; feed: the filled buffer the
 *	device reads; copy: the destination. A buffer the channel writes
 *	(capture, copy destination) must be open for writing, one it reads
 *	(feed, copy source) for reading, else -EBADF. QBUF first waits,
 *	interruptibly and for at most 2 s (-ETIMEDOUT), for the fences the
 *	job conflicts with: every fence of a buffer the channel writes, the
 *	writers' fences of one it reads. A channel holds at most 64 jobs
 *	(queued, in flight and done; -ENOBUFS).
 * @flags: MMEDGE_QBUF_*. MMEDGE_QBUF_SRC is required on a copy channel
 *	and refused on the others.
 * @fence_fd: out: with MMEDGE_QBUF_FENCE, a sync_file fd that signals
 *	when the transfer is done; else -1. Every fence signals in bounded
 *	time, with an error status if the transfer fails (-EIO), makes no
 *	progress for 2 s plus one frame period at the head of its channel
 *	(-ETIMEDOUT), its channel is destroyed or its file closed
 *	(-ECANCELED) or the instance is unbound (-ENODEV). Capture and copy: the buffer at @fd
 *	is written; the fence is added to its reservation object as a write
 *	fence. Feed: the device has consumed the buffer, which may be
 *	reused; the fence is added as a read fence. Copy: also added to the
 *	source's reservation object as a read fence.
 * @cookie: in: returned unchanged by MMEDGE_IOC_DQBUF.
 * @src_fd: in: copy (with MMEDGE_QBUF_SRC): the source dma-buf, another
 *	buffer than @fd; otherwise must be zero.
 * @bytesused: in: feed and copy: bytes to move from the start of the
 *	(source) buffer, 1..its size; a copy's destination must hold
 *	ALIGN(@bytesused, 64) + sizeof(struct mmedge_frame_meta) bytes.
 *	Capture: must be zero.
 * @reserved: must be zero.
 *
 * First published size: 40 bytes.
 */
struct mmedge_qbuf {
	__u32 chan;
	__s32 fd;
	__u32 flags;
	__s32 fence_fd;
	__u64 cookie;
	__s32 src_fd;
	__u32 bytesused;
	__u64 reserved;
};

#define MMEDGE_QBUF_SIZE_VER0		40

/* mmedge_frame_meta.flags and mmedge_dqbuf.frame_flags */
#define MMEDGE_FRAME_ERROR		_BITUL(0) /* transfer failed or cancelled */
#define MMEDGE_FRAME_DROPPED_BEFORE	_BITUL(1) /* frames were dropped since the last */
#define MMEDGE_FRAME_TS_SOF_SOURCE	_BITUL(2) /* SOF stamp is the source's exposure start */
#define MMEDGE_FRAME_TS_SENSOR		_BITUL(3) /* sensor_sof/eof are valid */

/**
 * struct mmedge_timestamps - when a frame was taken and delivered
 * @sof_raw: free-running counter at start of frame (exposure / first
 *	sample).
 * @eof_raw: counter at end of frame (the last segment's DMA done).
 * @sof_mono: @sof_raw as CLOCK_MONOTONIC ns.
 * @eof_mono: @eof_raw as CLOCK_MONOTONIC ns.
 * @sof_boot: @sof_raw as CLOCK_BOOTTIME ns.
 * @eof_boot: @eof_raw as CLOCK_BOOTTIME ns.
 */
struct mmedge_timestamps {
	__u64 sof_raw;
	__u64 eof_raw;
	__u64 sof_mono;
	__u64 eof_mono;
	__u64 sof_boot;
	__u64 eof_boot;
};

#define MMEDGE_META_MAGIC		0x4154454d45474445ULL /* "EDGEMETA" */
#define MMEDGE_META_VERSION		1

/**
 * struct mmedge_frame_meta - in-band record written after a frame's data
 * @magic: MMEDGE_META_MAGIC.
 * @version: MMEDGE_META_VERSION.
 * @size: sizeof(struct mmedge_frame_meta) of the writer.
 * @chan: channel id.
 * @flags: MMEDGE_FRAME_*.
 * @sequence: frame number on the channel, from 0; gaps mean drops.
 * @bytesused: bytes of data in the frame.
 * @ts: the frame's timestamps, equal to those of the dequeue.
 * @dropped: frames dropped on the channel so far.
 * @sensor_sof: with MMEDGE_FRAME_TS_SENSOR (capture): @ts.sof_raw on the
 *	source's sensor clock (see struct mmedge_chan_create); else 0.
 * @sensor_eof: likewise for @ts.eof_raw.
 *
 * Written at mmedge_chan_create.meta_offset with the data, so a device
 * reading the buffer (NPU, GPU) sees the stamp without a syscall. A copy
 * channel writes it into the destination at ALIGN(bytesused, 64); a feed
 * channel writes none (the buffer is the device's input).
 *
 * Byte order: the CPU's own, like every other structure in this file. The
 * record is written by the CPU of the SoC whose devices read it; a reader
 * that is unsure checks @magic, whose bytes read "EDGEMETA" in memory on a
 * little-endian CPU and "ATEMEGDE" on a big-endian one. (IMU samples are
 * different: their format is fixed little-endian, see struct
 * mmedge_imu_sample.)
 */
struct mmedge_frame_meta {
	__u64 magic;
	__u32 version;
	__u32 size;
	__u32 chan;
	__u32 flags;
	__u64 sequence;
	__u64 bytesused;
	struct mmedge_timestamps ts;
	__u64 dropped;
	__u64 sensor_sof;
	__u64 sensor_eof;
};

/* mmedge_dqbuf.flags */
#define MMEDGE_DQBUF_NONBLOCK		_BITUL(0)
#define MMEDGE_DQBUF_FLAGS_VALID	MMEDGE_DQBUF_NONBLOCK

/**
 * struct mmedge_dqbuf - dequeue a filled buffer
 * @chan: in: channel id.
 * @flags: in: MMEDGE_DQBUF_NONBLOCK: -EAGAIN if none is ready.
 * @timeout_ms: in: blocking wait limit; 0 = forever; -ETIMEDOUT after.
 *	Relative to the call: a wait interrupted by a signal returns
 *	-ERESTARTSYS and, if restarted, waits the full @timeout_ms again.
 * @frame_flags: out: MMEDGE_FRAME_*.
 * @cookie: out: from MMEDGE_IOC_QBUF.
 * @sequence: out: frame number.
 * @bytesused: out: bytes of data.
 * @ts: out: timestamps. Feed and copy: start of frame is the start of
 *	the first segment's transfer, end of frame the last one's end.
 * @dropped: out: frames dropped on the channel so far (always 0 on feed
 *	and copy channels).
 * @checksum: out: feed: the CRC-32 of the bytes the sink read (the
 *	zlib/IEEE 802.3 crc32(), so userspace can recompute it); capture,
 *	copy: 0.
 * @pad: must be zero.
 * @reserved: must be zero.
 * @sensor_sof: out: as mmedge_frame_meta.sensor_sof (capture channels,
 *	MMEDGE_FRAME_TS_SENSOR in @frame_flags); else 0.
 * @sensor_eof: out: as mmedge_frame_meta.sensor_eof.
 *
 * poll() on the mmedge fd reports POLLIN when any channel of the file
 * has a filled buffer (a finished job).
 *
 * First published size: 112 bytes. Size 128 (MMEDGE_DQBUF_SIZE_VER1) adds
 * @sensor_sof and @sensor_eof.
 */
struct mmedge_dqbuf {
	__u32 chan;
	__u32 flags;
	__u32 timeout_ms;
	__u32 frame_flags;
	__u64 cookie;
	__u64 sequence;
	__u64 bytesused;
	struct mmedge_timestamps ts;
	__u64 dropped;
	__u32 checksum;
	__u32 pad;
	__u64 reserved;
	__u64 sensor_sof;
	__u64 sensor_eof;
};

#define MMEDGE_DQBUF_SIZE_VER0		112
#define MMEDGE_DQBUF_SIZE_VER1		128

/* Buckets of mmedge_chan_stats.wait_hist: queue wait < 2^(i+10) ns */
#define MMEDGE_WAIT_BUCKETS		16

/**
 * struct mmedge_chan_stats - a channel's counters
 * @id: in: channel id.
 * @flags: in: must be zero.
 * @bytes: out: bytes moved.
 * @segments: out: segments moved.
 * @frames: out: frames completed.
 * @dropped: out: frames dropped (overrun).
 * @errors: out: frames completed with an error.
 * @bw_ewma: out: achieved bandwidth, bytes/s, exponentially weighted.
 * @weight: out: current weight.
 * @class: out: current class.
 * @cap: out: current cap.
 * @wait_hist: out: histogram of segment queue waits (time from a segment
 *	becoming ready to its transfer starting): bucket i counts waits
 *	below 2^(i + 10) ns, the last bucket everything longer.
 * @reserved: must be zero.
 *
 * First published size: 208 bytes.
 */
struct mmedge_chan_stats {
	__u32 id;
	__u32 flags;
	__u64 bytes;
	__u64 segments;
	__u64 frames;
	__u64 dropped;
	__u64 errors;
	__u64 bw_ewma;
	__u32 weight;
	__u32 class;
	__u64 cap;
	__u64 wait_hist[MMEDGE_WAIT_BUCKETS];
	__u64 reserved[1];
};

#define MMEDGE_CHAN_STATS_SIZE_VER0	208

/**
 * struct mmedge_bus_config - the soft engine's bus model
 * @set: in: 1 to set @bandwidth (needs CAP_SYS_ADMIN), 0 to read.
 * @flags: must be zero.
 * @bandwidth: in/out: modelled bus bandwidth, bytes/s (1 MB/s .. 100 GB/s).
 * @reserved: must be zero.
 */
struct mmedge_bus_config {
	__u32 set;
	__u32 flags;
	__u64 bandwidth;
	__u64 reserved[2];
};

#define MMEDGE_BUS_CONFIG_SIZE_VER0	32

#define MMEDGE_XTS_MAX_SAMPLES		16

/* mmedge_xts.flags */
/* Also sample channel @chan's sensor clock (needs MMEDGE_XTS_SIZE_VER1). */
#define MMEDGE_XTS_SENSOR		_BITUL(0)
#define MMEDGE_XTS_FLAGS_VALID		MMEDGE_XTS_SENSOR

/**
 * struct mmedge_xts_sample - one (system, counter, system) sandwich
 * @sys_before: CLOCK_MONOTONIC ns read just before the counter.
 * @raw: the free-running counter.
 * @sys_after: CLOCK_MONOTONIC ns read just after.
 * @boot_offset: CLOCK_BOOTTIME - CLOCK_MONOTONIC at that moment, ns.
 */
struct mmedge_xts_sample {
	__u64 sys_before;
	__u64 raw;
	__u64 sys_after;
	__u64 boot_offset;
};

/**
 * struct mmedge_xts - cross-timestamp the hardware counter
 * @n_samples: in: 1..MMEDGE_XTS_MAX_SAMPLES.
 * @flags: in: MMEDGE_XTS_SENSOR or 0.
 * @counter_hz: out: the counter's calibrated frequency.
 * @mult: out: ns = (raw * mult) >> shift (relative to a base pair).
 * @shift: out: see @mult.
 * @counter_bits: out: the counter wraps at 2^counter_bits.
 * @pad: must be zero.
 * @samples: out: the sandwiches, like PTP_SYS_OFFSET_EXTENDED.
 * @reserved: must be zero.
 * @chan: in: with MMEDGE_XTS_SENSOR, a capture channel of the instance
 *	(of any file); else must be zero.
 * @sensor_drift_ppb: out: with MMEDGE_XTS_SENSOR, the channel's
 *	mmedge_chan_create.sensor_drift_ppb; else 0.
 * @sensor_offset_ns: out: likewise, its sensor_offset_ns.
 * @sensor_epoch: out: likewise, its sensor_epoch.
 * @sensor: out: with MMEDGE_XTS_SENSOR, @samples[i].raw on the channel's
 *	sensor clock: each sample is a (sensor, SoC counter,
 *	CLOCK_MONOTONIC) triple, the SoC counter read once between
 *	sys_before and sys_after and the sensor value derived from it.
 *
 * The sensor samples extend this ioctl rather than a new one: they are
 * the same sandwiches, one more value per sample, and the SoC counter
 * stays in the triple so userspace can check the sensor mapping and put
 * several channels on one timeline from one call per channel.
 *
 * Errors: -EINVAL for @n_samples 0 or above MMEDGE_XTS_MAX_SAMPLES,
 * unknown flags, @pad or reserved fields set, @chan set without
 * MMEDGE_XTS_SENSOR or 0 with it, MMEDGE_XTS_SENSOR with a size below
 * MMEDGE_XTS_SIZE_VER1 or on a feed or copy channel; -ENOENT for no
 * channel @chan in the instance.
 *
 * First published size: 560 bytes. Size 712 (MMEDGE_XTS_SIZE_VER1) adds
 * @chan to @sensor.
 */
struct mmedge_xts {
	__u32 n_samples;
	__u32 flags;
	__u64 counter_hz;
	__u32 mult;
	__u32 shift;
	__u32 counter_bits;
	__u32 pad;
	struct mmedge_xts_sample samples[MMEDGE_XTS_MAX_SAMPLES];
	__u64 reserved[2];
	__u32 chan;
	__s32 sensor_drift_ppb;
	__s64 sensor_offset_ns;
	__u64 sensor_epoch;
	__u64 sensor[MMEDGE_XTS_MAX_SAMPLES];
};

#define MMEDGE_XTS_SIZE_VER0		560
#define MMEDGE_XTS_SIZE_VER1		712

#define MMEDGE_IOC_CHAN_CREATE	_IOWR(MMEDGE_IOC_MAGIC, 0x06, struct mmedge_chan_create)
#define MMEDGE_IOC_CHAN_CONFIG	_IOWR(MMEDGE_IOC_MAGIC, 0x07, struct mmedge_chan_config)
#define MMEDGE_IOC_CHAN_DESTROY	_IOW(MMEDGE_IOC_MAGIC, 0x08, struct mmedge_chan_destroy)
#define MMEDGE_IOC_QBUF		_IOWR(MMEDGE_IOC_MAGIC, 0x09, struct mmedge_qbuf)
#define MMEDGE_IOC_DQBUF	_IOWR(MMEDGE_IOC_MAGIC, 0x0a, struct mmedge_dqbuf)
#define MMEDGE_IOC_CHAN_STATS	_IOWR(MMEDGE_IOC_MAGIC, 0x0b, struct mmedge_chan_stats)
#define MMEDGE_IOC_BUS_CONFIG	_IOWR(MMEDGE_IOC_MAGIC, 0x0c, struct mmedge_bus_config)
#define MMEDGE_IOC_XTS		_IOWR(MMEDGE_IOC_MAGIC, 0x0d, struct mmedge_xts)

/*
 * Generic netlink family "mmedge": the management interface (mmctl).
 *
 * Commands, each with its attributes; strict validation, errors come with
 * an extended ack message naming the attribute.
 *
 * MMEDGE_CMD_DEV_GET     doit: MMEDGE_A_DEV_INDEX; dumpit: all devices.
 *                        Reply: DEV_INDEX, DEV_NAME, DEV_VIRTUAL,
 *                        DEV_BUS_BW, DEV_NR_CHANS.
 * MMEDGE_CMD_CHAN_GET    doit: DEV_INDEX + CHAN_ID or CHAN_NAME; dumpit:
 *                        every channel of every device (or of DEV_INDEX).
 *                        Reply: DEV_INDEX, CHAN_ID, CHAN_NAME,
 *                        CHAN_SRC_TYPE, CHAN_WEIGHT, CHAN_CLASS,
 *                        CHAN_CAP, CHAN_STATS (nest).
 * MMEDGE_CMD_CHAN_SET    DEV_INDEX, CHAN_ID or CHAN_NAME, and any of
 *                        CHAN_WEIGHT, CHAN_CLASS, CHAN_CAP. Needs
 *                        CAP_NET_ADMIN, and CAP_SYS_NICE for what
 *                        MMEDGE_IOC_CHAN_CONFIG needs it for.
 * MMEDGE_CMD_CHAN_SET_MULTI  DEV_INDEX and CHAN_LIST: a nest of
 *                        CHAN_ENTRY nests, each as for CHAN_SET. All are
 *                        checked first; either all apply or none.
 * MMEDGE_CMD_BUS_SET     DEV_INDEX, DEV_BUS_BW. Needs CAP_NET_ADMIN and
 *                        CAP_SYS_ADMIN.
 *
 * The three set commands are GENL_ADMIN_PERM: without CAP_NET_ADMIN the
 * genetlink core answers EPERM before the command runs. The family's
 * YAML spec is Documentation/netlink/specs/mmedge.yaml.
 *
 * Multicast group "events", notifications (cmd = event):
 * MMEDGE_CMD_CHAN_NEW / _DEL    DEV_INDEX, CHAN_ID, CHAN_NAME,
 *                               CHAN_SRC_TYPE
 * MMEDGE_CMD_CHAN_CHANGED       DEV_INDEX, CHAN_ID, CHAN_NAME,
 *                               CHAN_WEIGHT, CHAN_CLASS, CHAN_CAP,
 *                               EVENT_OLD_WEIGHT, EVENT_PID, EVENT_UID
 *                               (who changed it; EVENT_ADAPTIVE if the
 *                               adaptive mode did)
 * MMEDGE_CMD_CHAN_DROP          DEV_INDEX, CHAN_ID, CHAN_NAME,
 *                               EVENT_DROPPED (drops since the last
 *                               event; at most 10 events per second per
 *                               channel)
 * MMEDGE_CMD_ENGINE_STALL       DEV_INDEX, EVENT_STALL_NS
 */
#define MMEDGE_GENL_NAME		"mmedge"
#define MMEDGE_GENL_VERSION		1
#define MMEDGE_GENL_MCGRP_EVENTS	"events"

enum mmedge_nl_cmd {
	MMEDGE_CMD_UNSPEC,
	MMEDGE_CMD_DEV_GET,
	MMEDGE_CMD_CHAN_GET,
	MMEDGE_CMD_CHAN_SET,
	MMEDGE_CMD_CHAN_SET_MULTI,
	MMEDGE_CMD_BUS_SET,
	MMEDGE_CMD_CHAN_NEW,
	MMEDGE_CMD_CHAN_DEL,
	MMEDGE_CMD_CHAN_CHANGED,
	MMEDGE_CMD_CHAN_DROP,
	MMEDGE_CMD_ENGINE_STALL,

	__MMEDGE_CMD_MAX,
	MMEDGE_CMD_MAX = __MMEDGE_CMD_MAX - 1
};

enum mmedge_nl_attr {
	MMEDGE_A_UNSPEC,
	MMEDGE_A_PAD,
	MMEDGE_A_DEV_INDEX,		/* u32 */
	MMEDGE_A_DEV_NAME,		/* string */
	MMEDGE_A_DEV_VIRTUAL,		/* u8 */
	MMEDGE_A_DEV_BUS_BW,		/* u64, bytes/s */
	MMEDGE_A_DEV_NR_CHANS,		/* u32 */
	MMEDGE_A_CHAN_ID,		/* u32 */
	MMEDGE_A_CHAN_NAME,		/* string */
	MMEDGE_A_CHAN_SRC_TYPE,		/* u32, MMEDGE_SRC_* (capture) */
	MMEDGE_A_CHAN_WEIGHT,		/* u32 */
	MMEDGE_A_CHAN_CLASS,		/* u32, MMEDGE_CLASS_* */
	MMEDGE_A_CHAN_CAP,		/* u64, bytes/s */
	MMEDGE_A_CHAN_STATS,		/* nest, MMEDGE_A_STATS_* */
	MMEDGE_A_CHAN_LIST,		/* nest of MMEDGE_A_CHAN_ENTRY */
	MMEDGE_A_CHAN_ENTRY,		/* nest of CHAN_ID/NAME/WEIGHT/... */
	MMEDGE_A_EVENT_OLD_WEIGHT,	/* u32 */
	MMEDGE_A_EVENT_PID,		/* u32 */
	MMEDGE_A_EVENT_UID,		/* u32 */
	MMEDGE_A_EVENT_ADAPTIVE,	/* flag */
	MMEDGE_A_EVENT_DROPPED,		/* u64 */
	MMEDGE_A_EVENT_STALL_NS,	/* u64 */
	MMEDGE_A_CHAN_DIR,		/* u32, MMEDGE_CHAN_CAPTURE/FEED/COPY */

	__MMEDGE_A_MAX,
	MMEDGE_A_MAX = __MMEDGE_A_MAX - 1
};

enum mmedge_nl_stats_attr {
	MMEDGE_A_STATS_UNSPEC,
	MMEDGE_A_STATS_PAD,
	MMEDGE_A_STATS_BYTES,		/* u64 */
	MMEDGE_A_STATS_SEGMENTS,	/* u64 */
	MMEDGE_A_STATS_FRAMES,		/* u64 */
	MMEDGE_A_STATS_DROPPED,		/* u64 */
	MMEDGE_A_STATS_ERRORS,		/* u64 */
	MMEDGE_A_STATS_BW,		/* u64, bytes/s (EWMA) */
	MMEDGE_A_STATS_WAIT_HIST,	/* binary, __u64[MMEDGE_WAIT_BUCKETS] */

	__MMEDGE_A_STATS_MAX,
	MMEDGE_A_STATS_MAX = __MMEDGE_A_STATS_MAX - 1
};

#endif /* _UAPI_LINUX_MMEDGE_H */

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
 *  - Parameter and result structs that start with a u32 size are
 *    versioned by it, as the kernel's copy_struct_from_user(): set it to
 *    sizeof(). A struct passed in may be shorter than this library's (an
 *    older header: the fields past it keep their defaults; at least the
 *    first version, a multiple of 4) or longer (a newer header: the bytes
 *    past this library's struct must be zero); one the library fills gets
 *    min(size, its own) bytes and keeps the caller's size.
 *
 * Threading (as llama.h and libcamera state theirs, per object):
 *
 *  - The device layer's handles are thread-safe: a device handle (struct
 *    mmhal_dev) and the buffers (struct mmhal_buf) and channels (struct
 *    mmhal_chan) made from it may be used from several threads at once,
 *    with the exceptions below. In particular one thread
 *    may queue buffers on a channel (mmhal_chan_queue(), _feed(), _copy())
 *    while others dequeue from it (mmhal_chan_dequeue(), blocking or not);
 *    several threads may dequeue from one channel (each frame goes to one
 *    of them); mmhal_buf_map(), the CPU access and sync calls, the
 *    channel setters and the stats and cross-timestamp queries may run
 *    anywhere.
 *  - How: the driver serialises its own state, so ioctls are issued
 *    without a lock; the library's bookkeeping (which buffer a dequeued
 *    cookie stands for, whether a buffer is queued, a buffer's mapping) is
 *    guarded by one mutex per device handle, held only for that
 *    bookkeeping and never while a blocking mmhal_chan_dequeue() waits,
 *    so a waiting thread does not hold up the others.
 *  - Creation and destruction need the caller's ordering: a handle's
 *    _close()/_destroy()/_free() must not run while another thread uses
 *    that handle (or, for mmhal_dev_close(), any buffer or channel made
 *    from it), and nothing may use a handle after its _close() began. Free
 *    every buffer and channel before closing their device handle. Freeing
 *    a queued buffer, or destroying a channel with buffers queued, while
 *    other threads use other handles of the device is fine.
 *  - A buffer is queued on one channel at a time: two threads queueing the
 *    same buffer get one success and one -EBUSY.
 *  - Functions that take no handle (mmhal_strerror(), mmhal_version(),
 *    mmhal_cap_name(), mmhal_ioctl_name(), mmhal_src_*(), the
 *    *_default_params()) are thread-safe; the strings they return are
 *    static and immutable.
 *  - A clock fit (struct mmhal_clock_fit) keeps state between calls and is
 *    not locked: one thread at a time per fit; distinct fits are
 *    independent.
 *  - Memory returned by mmhal_buf_map() and the buffer's dma-buf fd
 *    (mmhal_buf_fd()) may be used from any thread and by other processes
 *    and devices; bracket CPU access with mmhal_buf_begin_cpu() /
 *    mmhal_buf_end_cpu() (or mmhal_buf_sync_range()).
 *  - poll(2) on mmhal_dev_fd() may run in any thread, also while another
 *    thread calls into the library; POLLIN means some channel of this
 *    handle has a filled buffer for mmhal_chan_dequeue().
 *  - The library installs no signal handlers and starts no threads. Calls
 *    interrupted by a signal are restarted internally (for a blocking
 *    mmhal_chan_dequeue() the wait starts over). EAGAIN is never retried.
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
#define MMHAL_VERSION_MAJOR	1
#define MMHAL_VERSION_MINOR	0
#define MMHAL_VERSION_PATCH	0
#define MMHAL_VERSION_STRING	"1.0.0"

/* Device opened when mmhal_dev_open() is given a NULL path. */
#define MMHAL_DEFAULT_DEV	"/dev/mmedge0"

/* Lengths of the strings in struct mmhal_caps, including the NUL. */
#define MMHAL_DRIVER_LEN	16
#define MMHAL_BUS_INFO_LEN	32

/* Bits of mmhal_caps.caps; same values as the driver's MMEDGE_CAP_*. */
#define MMHAL_CAP_VIRTUAL	(1ULL << 0)	/* no hardware behind it */
#define MMHAL_CAP_BUFFERS	(1ULL << 1)	/* buffers can be allocated */
#define MMHAL_CAP_CONTIG	(1ULL << 2)	/* contiguous buffers */
#define MMHAL_CAP_CHANNELS	(1ULL << 3)	/* capture channels */

/* Bit numbers of mmhal_caps.ioctls (the driver's _IOC_NR of each ioctl). */
#define MMHAL_IOCTL_QUERY_CAPS	0
#define MMHAL_IOCTL_BUF_ALLOC	1
#define MMHAL_IOCTL_BUF_INFO	2
#define MMHAL_IOCTL_BUF_SYNC	3
#define MMHAL_IOCTL_BUF_IMPORT	4
#define MMHAL_IOCTL_BUF_RELEASE	5
#define MMHAL_IOCTL_CHAN_CREATE	6
#define MMHAL_IOCTL_CHAN_CONFIG	7
#define MMHAL_IOCTL_CHAN_DESTROY	8
#define MMHAL_IOCTL_QBUF	9
#define MMHAL_IOCTL_DQBUF	10
#define MMHAL_IOCTL_CHAN_STATS	11
#define MMHAL_IOCTL_BUS_CONFIG	12
#define MMHAL_IOCTL_XTS		13

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
 * Event loop: poll(2) the descriptor for POLLIN, which the driver reports
 * while any channel created through @dev has a filled buffer; then call
 * mmhal_chan_dequeue() with a negative timeout (non-blocking) on each
 * channel until it returns -EAGAIN. POLLERR means the device is going
 * away (module unloaded): destroy everything and close @dev.
 *
 * Return: the descriptor (>= 0), or -EINVAL if @dev is NULL.
 */
MMHAL_API int mmhal_dev_fd(const struct mmhal_dev *dev);

/**
 * mmhal_dev_bus_get() - the soft DMA engine's modelled bus bandwidth
 * @dev: device handle.
 * @bandwidth: receives bytes per second (0 on failure).
 *
 * Return: 0, or -EINVAL (NULL argument), -ENOTTY (driver without it).
 */
MMHAL_API int mmhal_dev_bus_get(struct mmhal_dev *dev, uint64_t *bandwidth);

/**
 * mmhal_dev_bus_set() - change the modelled bus bandwidth
 * @dev: device handle.
 * @bandwidth: bytes per second, MMHAL_BUS_MIN..MMHAL_BUS_MAX.
 *
 * Return: 0, or -EINVAL (NULL @dev, @bandwidth out of range; checked
 * before asking the driver), -EPERM (needs CAP_SYS_ADMIN), -ENOTTY.
 */
MMHAL_API int mmhal_dev_bus_set(struct mmhal_dev *dev, uint64_t bandwidth);

#define MMHAL_BUS_MIN		1000000ULL		/* 1 MB/s */
#define MMHAL_BUS_MAX		100000000000ULL		/* 100 GB/s */

#define MMHAL_XTS_MAX_SAMPLES	16

/**
 * struct mmhal_xts - cross-timestamp of the device's free-running counter
 * @counter_hz: the counter's calibrated frequency.
 * @mult: ns = (raw * @mult) >> @shift, relative to a base pair.
 * @shift: see @mult.
 * @counter_bits: the counter wraps at 2^@counter_bits.
 * @n_samples: entries of @samples filled in.
 * @samples: (CLOCK_MONOTONIC before, counter, CLOCK_MONOTONIC after,
 *	CLOCK_BOOTTIME - CLOCK_MONOTONIC) sandwiches, like
 *	PTP_SYS_OFFSET_EXTENDED; the tightest one (smallest
 *	sys_after - sys_before) is the best estimate.
 * @reserved: zero.
 */
struct mmhal_xts {
	uint64_t counter_hz;
	uint32_t mult;
	uint32_t shift;
	uint32_t counter_bits;
	uint32_t n_samples;
	struct {
		uint64_t sys_before;
		uint64_t raw;
		uint64_t sys_after;
		uint64_t boot_offset;
	} samples[MMHAL_XTS_MAX_SAMPLES];
	uint64_t reserved[4];
};

/**
 * mmhal_dev_xts() - read the counter against the system clocks
 * @dev: device handle.
 * @n_samples: 1..MMHAL_XTS_MAX_SAMPLES.
 * @out: filled in on success, zeroed on failure (if not NULL).
 *
 * Return: 0, or -EINVAL (NULL argument, @n_samples out of range; checked
 * before asking the driver), -ENOTTY.
 */
MMHAL_API int mmhal_dev_xts(struct mmhal_dev *dev, unsigned int n_samples,
			    struct mmhal_xts *out);

/*
 * Buffers
 *
 * A buffer is a dma-buf: allocated by mmedge (mmhal_buf_alloc()) or
 * imported from another driver (mmhal_buf_import()). Either kind can be
 * queued on a channel of the same device handle. The dma-buf fd can be
 * handed to V4L2, DRM or an NPU driver.
 */

struct mmhal_buf;

/* mmhal_buf_params.cache; same values as the driver's MMEDGE_BUF_CACHE_*. */
#define MMHAL_CACHE_CACHED	0	/* write-back (default) */
#define MMHAL_CACHE_WC		1	/* write-combined */
#define MMHAL_CACHE_UNCACHED	2	/* uncached */

/**
 * struct mmhal_buf_params - how to allocate a buffer
 * @cache: MMHAL_CACHE_*.
 * @contiguous: non-zero for physically contiguous memory (one DMA
 *	segment; needs MMHAL_CAP_CONTIG).
 * @reserved: zero.
 */
struct mmhal_buf_params {
	uint32_t cache;
	int contiguous;
	uint64_t reserved[4];
};

/**
 * mmhal_buf_default_params() - cached, not contiguous
 */
MMHAL_API struct mmhal_buf_params mmhal_buf_default_params(void);

/**
 * mmhal_buf_alloc() - allocate a buffer
 * @dev: device handle.
 * @size: bytes, > 0; the driver rounds it up to the page size
 *	(mmhal_buf_size() gives the result).
 * @params: from mmhal_buf_default_params(), or NULL for the defaults.
 * @out: receives the handle; set to NULL on failure.
 *
 * The buffer's dma-buf fd is opened read-write and close-on-exec.
 *
 * Return: 0, or
 *  -EINVAL  NULL @dev or @out, @size 0, unknown cache mode, non-zero
 *           reserved fields (all checked before asking the driver);
 *  -ENOMEM  over max_buffer_size or the memory limits, or out of memory;
 *  -EMFILE  no free fd; -ENOTTY driver without buffers.
 */
MMHAL_API int mmhal_buf_alloc(struct mmhal_dev *dev, uint64_t size,
			      const struct mmhal_buf_params *params,
			      struct mmhal_buf **out);

/**
 * mmhal_buf_import() - use a foreign dma-buf (DRM, V4L2, a heap)
 * @dev: device handle.
 * @dmabuf_fd: the dma-buf; the handle keeps its own duplicate, the caller
 *	still owns @dmabuf_fd.
 * @out: receives the handle; set to NULL on failure.
 *
 * The buffer is attached to the device so channels can fill it.
 * mmhal_buf_free() ends the import. mmhal_buf_sync_range() does not work
 * on imported buffers; use mmhal_buf_begin_cpu() / mmhal_buf_end_cpu().
 *
 * Return: 0, or -EINVAL (NULL argument, negative fd, not a dma-buf),
 * -EBADF, -EEXIST (already imported through this device handle),
 * -ENOSPC (too many imports), the exporter's error.
 */
MMHAL_API int mmhal_buf_import(struct mmhal_dev *dev, int dmabuf_fd,
			       struct mmhal_buf **out);

/**
 * mmhal_buf_free() - unmap, end the import if any, close the fd, free
 * @buf: handle, or NULL (nothing happens).
 *
 * The memory lives on while other references exist (fds passed elsewhere,
 * importers). A buffer still queued on a channel stays queued; its frame
 * then dequeues with mmhal_frame.buf NULL.
 */
MMHAL_API void mmhal_buf_free(struct mmhal_buf *buf);

/**
 * mmhal_buf_fd() - the buffer's dma-buf fd (owned by @buf; do not close)
 *
 * Return: the fd (>= 0), or -EINVAL if @buf is NULL.
 */
MMHAL_API int mmhal_buf_fd(const struct mmhal_buf *buf);

/**
 * mmhal_buf_size() - the buffer's size in bytes
 *
 * Return: the size (page-rounded for mmedge buffers), or 0 if @buf is NULL.
 */
MMHAL_API uint64_t mmhal_buf_size(const struct mmhal_buf *buf);

/**
 * mmhal_buf_map() - map the buffer for the CPU (read-write, shared)
 * @buf: buffer handle.
 * @addr: receives the address; NULL on failure.
 *
 * The first call mmap()s the buffer; later calls return the same address.
 * The mapping lasts until mmhal_buf_free().
 *
 * Return: 0, or -EINVAL (NULL argument), or mmap(2)'s error.
 */
MMHAL_API int mmhal_buf_map(struct mmhal_buf *buf, void **addr);

/* Flags of mmhal_buf_sync_range(), mmhal_buf_begin_cpu(), _end_cpu(); same
 * values as DMA_BUF_SYNC_* and MMEDGE_BUF_SYNC_*. */
#define MMHAL_SYNC_READ		(1U << 0)	/* the CPU reads */
#define MMHAL_SYNC_WRITE	(1U << 1)	/* the CPU writes */
#define MMHAL_SYNC_RW		(MMHAL_SYNC_READ | MMHAL_SYNC_WRITE)
#define MMHAL_SYNC_START	0		/* CPU access begins */
#define MMHAL_SYNC_END		(1U << 2)	/* CPU access ends */

/**
 * mmhal_buf_sync_range() - make a byte range coherent (mmedge buffers)
 * @buf: an mmedge-allocated buffer.
 * @offset: first byte.
 * @len: bytes, > 0; @offset + @len <= mmhal_buf_size().
 * @flags: MMHAL_SYNC_START or MMHAL_SYNC_END, with READ, WRITE or both.
 *
 * Like mmhal_buf_begin_cpu() / _end_cpu() for only that range, which is
 * cheaper for a small part (a frame's in-band record) of a large buffer.
 * A START waits for the buffer's fences first.
 *
 * Return: 0, or -EINVAL (NULL @buf, no READ/WRITE, unknown flags, empty
 * or out-of-range range: checked before asking the driver; an imported
 * buffer), or the driver's error.
 */
MMHAL_API int mmhal_buf_sync_range(struct mmhal_buf *buf, uint64_t offset,
				   uint64_t len, unsigned int flags);

/**
 * mmhal_buf_begin_cpu() - CPU access to the whole buffer begins
 * @buf: buffer handle.
 * @flags: MMHAL_SYNC_READ, MMHAL_SYNC_WRITE or both.
 *
 * DMA_BUF_IOCTL_SYNC on the dma-buf; waits for its fences.
 *
 * Return: 0, or -EINVAL (NULL @buf, bad @flags), or the exporter's error.
 */
MMHAL_API int mmhal_buf_begin_cpu(struct mmhal_buf *buf, unsigned int flags);

/**
 * mmhal_buf_end_cpu() - CPU access to the whole buffer ends
 * @buf: buffer handle.
 * @flags: the same flags as the matching mmhal_buf_begin_cpu().
 *
 * Return: as mmhal_buf_begin_cpu().
 */
MMHAL_API int mmhal_buf_end_cpu(struct mmhal_buf *buf, unsigned int flags);

/*
 * Channels
 *
 * A capture channel moves frames from a source (camera, microphone, IMU)
 * into buffers the application queues, like V4L2 streaming I/O: queue
 * empty buffers (the first one starts the source), wait (poll the device
 * fd or dequeue with a timeout), dequeue a filled buffer with its sequence
 * number and hardware timestamps, process it, queue it again. Each filled
 * buffer also carries an in-band record (struct mmhal_frame_meta) after
 * the data, so a device reading the buffer sees the timestamps too.
 */

struct mmhal_chan;

/* struct mmhal_src.type */
#define MMHAL_SRC_CAMERA	1
#define MMHAL_SRC_MIC		2
#define MMHAL_SRC_IMU		3

#define MMHAL_FOURCC(a, b, c, d) \
	((uint32_t)(a) | (uint32_t)(b) << 8 | (uint32_t)(c) << 16 | \
	 (uint32_t)(d) << 24)

/* struct mmhal_src.fourcc */
#define MMHAL_FMT_GREY		MMHAL_FOURCC('G', 'R', 'E', 'Y') /* 8-bit luma */
#define MMHAL_FMT_RGB24		MMHAL_FOURCC('R', 'G', 'B', '3') /* 24-bit RGB */
#define MMHAL_FMT_NV12		MMHAL_FOURCC('N', 'V', '1', '2') /* Y + CbCr 4:2:0 */
#define MMHAL_FMT_S16LE		MMHAL_FOURCC('1', '6', 'L', 'E') /* microphone */
#define MMHAL_FMT_IMU6		MMHAL_FOURCC('I', 'M', 'U', '6') /* struct mmhal_imu_sample */

/* struct mmhal_src.signal (camera): the image pattern */
#define MMHAL_PATTERN_MOVING	0	/* changes every frame (default) */
#define MMHAL_PATTERN_STATIC	1	/* frame 0's image; only the frame
					 * number in each line changes */

/* struct mmhal_src.signal (microphone) */
#define MMHAL_SIGNAL_TONE	0	/* 1 kHz */
#define MMHAL_SIGNAL_CHIRP	1	/* 100 Hz..4 kHz each second */
#define MMHAL_SIGNAL_SILENCE	2	/* all zero, no index words */
#define MMHAL_SIGNAL_NOISE	3	/* white, a function of the index */

/* Camera size limits, pixels */
#define MMHAL_CAM_MIN		16
#define MMHAL_CAM_MAX		4096

/**
 * struct mmhal_src - what a source produces (build one with
 *	mmhal_src_camera(), mmhal_src_mic() or mmhal_src_imu())
 * @type: MMHAL_SRC_*.
 * @fourcc: MMHAL_FMT_*: GREY, RGB24 or NV12 for a camera, S16LE for a
 *	microphone, IMU6 for an IMU.
 * @width: camera: pixels per line, MMHAL_CAM_MIN..MAX (even for NV12);
 *	else 0.
 * @height: camera: lines, as @width; else 0.
 * @rate_num: frames (camera) or samples (microphone, IMU) per @rate_den
 *	seconds; > 0.
 * @rate_den: > 0.
 * @period: microphone and IMU: samples per buffer, > 0; camera: 0.
 * @signal: camera: MMHAL_PATTERN_* (mmhal_src_camera() gives MOVING;
 *	set STATIC in the returned struct for a scene that does not change);
 *	microphone: MMHAL_SIGNAL_*; IMU: 0. The patterns and signals are
 *	in Documentation/userspace-api/mmedge-channels.rst.
 */
struct mmhal_src {
	uint32_t type;
	uint32_t fourcc;
	uint32_t width;
	uint32_t height;
	uint32_t rate_num;
	uint32_t rate_den;
	uint32_t period;
	uint32_t signal;
};

/** mmhal_src_camera() - a camera source, @fps frames per second */
MMHAL_API struct mmhal_src mmhal_src_camera(uint32_t width, uint32_t height,
					    uint32_t fourcc, uint32_t fps);
/** mmhal_src_mic() - a microphone, @rate Hz, @period samples per buffer,
 *  @signal MMHAL_SIGNAL_* (S16LE, mono) */
MMHAL_API struct mmhal_src mmhal_src_mic(uint32_t rate, uint32_t period,
					 uint32_t signal);
/** mmhal_src_imu() - an IMU, @rate Hz, @period samples per buffer (IMU6) */
MMHAL_API struct mmhal_src mmhal_src_imu(uint32_t rate, uint32_t period);

/* struct mmhal_chan_params.class */
#define MMHAL_CLASS_BEST_EFFORT	0
#define MMHAL_CLASS_LATENCY	1	/* needs a cap and CAP_SYS_NICE */

#define MMHAL_WEIGHT_MIN	1
#define MMHAL_WEIGHT_DEFAULT	100	/* above needs CAP_SYS_NICE */
#define MMHAL_WEIGHT_MAX	10000

#define MMHAL_SEGMENT_MIN	64
#define MMHAL_SEGMENT_MAX	(1U << 20)

/* struct mmhal_chan_params.overrun: a frame is due and no buffer is queued */
#define MMHAL_OVERRUN_DROP_NEWEST 0	/* the new frame is dropped */
#define MMHAL_OVERRUN_DROP_OLDEST 1	/* the oldest filled buffer is reused */

/**
 * struct mmhal_chan_params - how a channel shares the DMA engine
 * @weight: MMHAL_WEIGHT_MIN..MAX; share of the engine relative to other
 *	channels.
 * @class: MMHAL_CLASS_*.
 * @cap: rate cap in bytes per second; 0 = none.
 * @segment: bytes per arbitration segment: 0 = the driver's default, or
 *	MMHAL_SEGMENT_MIN..MAX, a multiple of 64.
 * @overrun: MMHAL_OVERRUN_*.
 * @sensor_offset_ns: the source's sensor clock offset from the SoC
 *	counter, ns, |.| <= MMHAL_SENSOR_OFFSET_MAX (see "Sensor clocks").
 * @sensor_drift_ppb: its rate error, parts per billion,
 *	|.| <= MMHAL_SENSOR_DRIFT_MAX; 0/0 is the SoC counter's timeline.
 * @pad: zero.
 * @reserved: zero.
 */
struct mmhal_chan_params {
	uint32_t weight;
	uint32_t class;
	uint64_t cap;
	uint32_t segment;
	uint32_t overrun;
	int64_t sensor_offset_ns;
	int32_t sensor_drift_ppb;
	uint32_t pad;
	uint64_t reserved[2];
};

/* Sensor clock limits: one day of offset, 1000 ppm of drift. */
#define MMHAL_SENSOR_OFFSET_MAX	86400000000000LL
#define MMHAL_SENSOR_DRIFT_MAX	1000000

/**
 * mmhal_chan_default_params() - weight 100, best effort, no cap, default
 * segment, drop the newest frame on overrun
 */
MMHAL_API struct mmhal_chan_params mmhal_chan_default_params(void);

/**
 * mmhal_chan_create() - create a capture channel
 * @dev: device handle.
 * @src: the source.
 * @params: from mmhal_chan_default_params(), or NULL for the defaults.
 * @out: receives the handle; set to NULL on failure.
 *
 * Return: 0, or
 *  -EINVAL  NULL @dev, @src or @out; a source or parameter the HAL can
 *           tell is invalid (unknown type or format, format not of the
 *           type, zero rate, camera size out of range or odd for NV12,
 *           zero period, weight, class, segment or overrun out of range,
 *           latency class without a cap, non-zero reserved fields:
 *           checked before asking the driver); a rate the driver refuses;
 *  -EPERM   weight above MMHAL_WEIGHT_DEFAULT or latency class without
 *           CAP_SYS_NICE;
 *  -ENOSPC  the device has no free channel; -ENOTTY no channels.
 */
MMHAL_API int mmhal_chan_create(struct mmhal_dev *dev,
				const struct mmhal_src *src,
				const struct mmhal_chan_params *params,
				struct mmhal_chan **out);

/**
 * mmhal_chan_destroy() - destroy a channel
 * @chan: handle, or NULL (nothing happens).
 *
 * Buffers still queued are cancelled (their fences signal with an error)
 * and stay owned by the caller.
 */
MMHAL_API void mmhal_chan_destroy(struct mmhal_chan *chan);

/** mmhal_chan_id() - the driver's channel id (> 0), or -EINVAL for NULL */
MMHAL_API int mmhal_chan_id(const struct mmhal_chan *chan);

/** mmhal_chan_frame_size() - bytes of data per frame; 0 for NULL */
MMHAL_API uint32_t mmhal_chan_frame_size(const struct mmhal_chan *chan);

/**
 * mmhal_chan_meta_offset() - offset of the in-band struct
 * mmhal_frame_meta in a filled buffer; 0 for NULL
 */
MMHAL_API uint32_t mmhal_chan_meta_offset(const struct mmhal_chan *chan);

/**
 * mmhal_chan_buf_size() - the smallest buffer the channel accepts:
 * meta offset + sizeof(struct mmhal_frame_meta); 0 for NULL
 */
MMHAL_API uint64_t mmhal_chan_buf_size(const struct mmhal_chan *chan);

/**
 * mmhal_chan_queue() - queue an empty buffer
 * @chan: channel handle.
 * @buf: a buffer of the same device handle, at least
 *	mmhal_chan_buf_size() bytes, not queued anywhere.
 * @cookie: any value; returned in mmhal_frame.cookie.
 * @fence_fd: NULL, or receives a sync_file fd (close-on-exec, the
 *	caller's to close) that signals when the buffer is filled, with an
 *	error if the transfer fails or the channel is destroyed; -1 on
 *	failure.
 *
 * The first buffer queued starts the source.
 *
 * Return: 0, or -EINVAL (NULL @chan or @buf; @buf of another device
 * handle), -ENOSPC (@buf too small), -EBUSY (already queued or filled and
 * not dequeued), -ENOMEM, -EMFILE.
 */
MMHAL_API int mmhal_chan_queue(struct mmhal_chan *chan, struct mmhal_buf *buf,
			       uint64_t cookie, int *fence_fd);

/*
 * Feed and copy channels
 *
 * Besides capture from its own sources, the DMA engine moves memory the
 * application hands it: a feed channel moves a filled buffer to the
 * device's sink (memory to device; the sink reads it and reports the
 * CRC-32 of what it read), a copy channel moves the first bytes of one
 * buffer into another (memory to memory) and writes the in-band record
 * after them. Either buffer may be a vendor's dma-buf (a V4L2 buffer
 * exported with VIDIOC_EXPBUF, an ISP's, a DRM one) imported with
 * mmhal_buf_import(), so its frames go through the arbiter and get
 * mmedge's timestamps. Jobs are due at once, run in queue order per
 * channel and are dequeued with mmhal_chan_dequeue() like frames: the
 * sequence counts jobs, start of frame is the start of the first
 * segment's transfer, end of frame the last one's end, and no sensor
 * stamps are given.
 */

/* Directions of a channel (mmhal_chan_dir()); same values as MMEDGE_CHAN_* */
#define MMHAL_CHAN_CAPTURE	0	/* source to memory */
#define MMHAL_CHAN_FEED		1	/* memory to device */
#define MMHAL_CHAN_COPY		2	/* memory to memory */

/* The largest job of mmhal_chan_feed() and mmhal_chan_copy(), bytes. */
#define MMHAL_JOB_MAX		0xffffffffULL

/**
 * mmhal_chan_create_dir() - create a feed or copy channel
 * @dev: device handle.
 * @dir: MMHAL_CHAN_FEED or MMHAL_CHAN_COPY (capture channels need a
 *	source: mmhal_chan_create()).
 * @params: from mmhal_chan_default_params(), or NULL for the defaults;
 *	the sensor clock fields must be zero and @params->overrun
 *	MMHAL_OVERRUN_DROP_NEWEST (0): jobs wait, none is dropped.
 * @out: receives the handle; set to NULL on failure.
 *
 * The channel shares the DMA engine with the capture channels by its
 * weight, class and cap like any other. mmhal_chan_frame_size() and
 * mmhal_chan_meta_offset() are 0 for it.
 *
 * Return: 0, or
 *  -EINVAL  NULL @dev or @out; @dir not FEED or COPY; a parameter out of
 *           range as for mmhal_chan_create(), a sensor clock field or
 *           overrun not zero (all checked before asking the driver);
 *  -EPERM, -ENOSPC, -ENOTTY as mmhal_chan_create();
 *  -EPROTO  the driver answered with a capture layout.
 */
MMHAL_API int mmhal_chan_create_dir(struct mmhal_dev *dev, uint32_t dir,
				    const struct mmhal_chan_params *params,
				    struct mmhal_chan **out);

/**
 * mmhal_chan_dir() - a channel's direction
 *
 * Return: MMHAL_CHAN_CAPTURE, _FEED or _COPY, or -EINVAL for NULL.
 */
MMHAL_API int mmhal_chan_dir(const struct mmhal_chan *chan);

/**
 * mmhal_chan_feed() - queue a filled buffer for the device to read
 * @chan: a feed channel.
 * @buf: a buffer of the same device handle (mmedge's or imported), not
 *	queued anywhere; the device reads its first @bytesused bytes.
 * @bytesused: 1..mmhal_buf_size(@buf), at most MMHAL_JOB_MAX.
 * @cookie: any value; returned in mmhal_frame.cookie.
 * @fence_fd: NULL, or receives a sync_file fd (close-on-exec, the
 *	caller's) that signals when the device has read the buffer; -1 on
 *	failure.
 *
 * The dequeued frame's checksum is the CRC-32 (zlib's crc32()) of the
 * bytes the sink read. The buffer may be refilled once dequeued.
 *
 * Return: 0, or -EINVAL (NULL @chan or @buf, @buf of another device
 * handle, not a feed channel, @bytesused 0 or past the buffer: checked
 * first), -EBUSY (@buf is queued or filled and not dequeued), -ENOBUFS
 * (64 jobs held), -ETIMEDOUT (the buffer's writers did not finish in
 * 2 s), -ENOMEM, -EMFILE, or the driver's error.
 */
MMHAL_API int mmhal_chan_feed(struct mmhal_chan *chan, struct mmhal_buf *buf,
			      uint64_t bytesused, uint64_t cookie,
			      int *fence_fd);

/**
 * mmhal_chan_copy() - queue a copy job
 * @chan: a copy channel.
 * @dst: the destination, a buffer of the same device handle, at least
 *	ALIGN(@bytesused, 64) + sizeof(struct mmhal_frame_meta) bytes
 *	(mmhal_copy_buf_size()); the record goes at ALIGN(@bytesused, 64).
 * @src: the source, another buffer of the same device handle (mmedge's
 *	or imported: a vendor's frame), not queued anywhere.
 * @bytesused: bytes to copy from the start of @src,
 *	1..mmhal_buf_size(@src), at most MMHAL_JOB_MAX.
 * @cookie: any value; returned in mmhal_frame.cookie.
 * @fence_fd: NULL, or receives a sync_file fd that signals when @dst is
 *	written; -1 on failure.
 *
 * Both buffers are held until the job is dequeued: the dequeued frame's
 * buf is @dst; read its record with mmhal_frame_record().
 *
 * Return: 0, or -EINVAL (NULL @chan, @dst or @src, @dst == @src, a
 * buffer of another device handle, not a copy channel, @bytesused 0 or
 * past @src: checked first), -ENOSPC (@dst too small), -EBUSY (@dst or
 * @src held by a channel), or as mmhal_chan_feed().
 */
MMHAL_API int mmhal_chan_copy(struct mmhal_chan *chan, struct mmhal_buf *dst,
			      struct mmhal_buf *src, uint64_t bytesused,
			      uint64_t cookie, int *fence_fd);

/**
 * mmhal_copy_buf_size() - the smallest destination of a copy of
 *	@bytesused bytes: ALIGN(@bytesused, 64) + sizeof(struct
 *	mmhal_frame_meta); 0 for @bytesused 0 or above MMHAL_JOB_MAX
 */
MMHAL_API uint64_t mmhal_copy_buf_size(uint64_t bytesused);

/* mmhal_frame.flags and mmhal_frame_meta.flags (MMEDGE_FRAME_*) */
#define MMHAL_FRAME_ERROR		(1U << 0) /* failed or cancelled */
#define MMHAL_FRAME_DROPPED_BEFORE	(1U << 1) /* frames were dropped since the last */
#define MMHAL_FRAME_TS_SOF_SOURCE	(1U << 2) /* SOF is the source's exposure start */
#define MMHAL_FRAME_TS_SENSOR		(1U << 3) /* sensor_sof/eof are valid */

/**
 * struct mmhal_timestamps - when a frame was taken and delivered
 * @sof_raw: device counter at start of frame (exposure / first sample).
 * @eof_raw: counter at end of frame (last DMA segment done).
 * @sof_mono: @sof_raw as CLOCK_MONOTONIC ns.
 * @eof_mono: @eof_raw as CLOCK_MONOTONIC ns.
 * @sof_boot: @sof_raw as CLOCK_BOOTTIME ns.
 * @eof_boot: @eof_raw as CLOCK_BOOTTIME ns.
 */
struct mmhal_timestamps {
	uint64_t sof_raw;
	uint64_t eof_raw;
	uint64_t sof_mono;
	uint64_t eof_mono;
	uint64_t sof_boot;
	uint64_t eof_boot;
};

/**
 * struct mmhal_frame - a dequeued buffer
 * @buf: the buffer that was queued (NULL if it was freed meanwhile).
 * @cookie: as given to mmhal_chan_queue().
 * @chan: channel id.
 * @flags: MMHAL_FRAME_*.
 * @sequence: frame number on the channel, from 0; a gap means drops.
 * @bytesused: bytes of data.
 * @ts: timestamps.
 * @dropped: frames dropped on the channel so far.
 * @sensor_sof: with MMHAL_FRAME_TS_SENSOR: @ts.sof_raw on the source's
 *	sensor clock, ns; else 0.
 * @sensor_eof: likewise for @ts.eof_raw.
 * @checksum: feed channels: the CRC-32 (zlib's crc32()) of the bytes the
 *	device read; else 0.
 * @pad: zero.
 * @reserved: zero.
 */
struct mmhal_frame {
	struct mmhal_buf *buf;
	uint64_t cookie;
	uint32_t chan;
	uint32_t flags;
	uint64_t sequence;
	uint64_t bytesused;
	struct mmhal_timestamps ts;
	uint64_t dropped;
	uint64_t sensor_sof;
	uint64_t sensor_eof;
	uint32_t checksum;
	uint32_t pad;
	uint64_t reserved[1];
};

/* Timeouts in milliseconds, as poll(2) and libsync take them. */
#define MMHAL_NONBLOCK		0	/* do not wait: -EAGAIN at once */
#define MMHAL_FOREVER		(-1)	/* wait until it happens */

/**
 * mmhal_chan_dequeue() - take the oldest filled buffer
 * @chan: channel handle.
 * @timeout_ms: as poll(2): 0 (MMHAL_NONBLOCK) do not wait; < 0
 *	(MMHAL_FOREVER) wait as long as it takes; > 0 wait at most that long.
 * @out: filled in on success, zeroed on failure.
 *
 * Return: 0, or -EINVAL (NULL argument), -EAGAIN (non-blocking and
 * nothing filled), -ETIMEDOUT, -ENODEV (the device went away), -ENOENT
 * (the channel is gone).
 */
MMHAL_API int mmhal_chan_dequeue(struct mmhal_chan *chan, int timeout_ms,
				 struct mmhal_frame *out);

/**
 * mmhal_chan_set_weight() - change the weight (from the next segment)
 * @chan: channel handle.
 * @weight: MMHAL_WEIGHT_MIN..MAX (raising above the default needs
 *	CAP_SYS_NICE).
 *
 * Return: 0, or -EINVAL (NULL @chan, out of range: checked first),
 * -EPERM.
 */
MMHAL_API int mmhal_chan_set_weight(struct mmhal_chan *chan, uint32_t weight);

/**
 * mmhal_chan_set_class() - change the class
 * @chan: channel handle.
 * @class: MMHAL_CLASS_* (LATENCY needs a cap and CAP_SYS_NICE).
 *
 * Return: 0, or -EINVAL (NULL @chan, unknown class: checked first;
 * latency without a cap), -EPERM.
 */
MMHAL_API int mmhal_chan_set_class(struct mmhal_chan *chan, uint32_t class);

/**
 * mmhal_chan_set_cap() - change the rate cap
 * @chan: channel handle.
 * @cap: bytes per second, 0 for none (not allowed in the latency class).
 *
 * Return: 0, or -EINVAL.
 */
MMHAL_API int mmhal_chan_set_cap(struct mmhal_chan *chan, uint64_t cap);

/* Buckets of mmhal_chan_stats.wait_hist */
#define MMHAL_WAIT_BUCKETS	16

/**
 * struct mmhal_chan_stats - a channel's counters
 * @id: channel id.
 * @weight: current weight.
 * @class: current class.
 * @cap: current cap, bytes/s.
 * @bytes: bytes moved.
 * @segments: segments moved.
 * @frames: frames completed.
 * @dropped: frames dropped (overrun).
 * @errors: frames completed with an error.
 * @bw_ewma: achieved bandwidth, bytes/s, exponentially weighted.
 * @wait_hist: segment queue waits (ready to transfer start): bucket i
 *	counts waits below 2^(i + 10) ns, the last one everything longer.
 * @reserved: zero.
 */
struct mmhal_chan_stats {
	uint32_t id;
	uint32_t weight;
	uint32_t class;
	uint32_t pad;
	uint64_t cap;
	uint64_t bytes;
	uint64_t segments;
	uint64_t frames;
	uint64_t dropped;
	uint64_t errors;
	uint64_t bw_ewma;
	uint64_t wait_hist[MMHAL_WAIT_BUCKETS];
	uint64_t reserved[4];
};

/**
 * mmhal_chan_stats() - a channel's counters
 * @chan: channel handle.
 * @out: filled in on success, zeroed on failure (if not NULL).
 *
 * Return: 0, or -EINVAL (NULL argument), -ENOENT.
 */
MMHAL_API int mmhal_chan_stats(struct mmhal_chan *chan,
			       struct mmhal_chan_stats *out);

/**
 * mmhal_dev_chan_stats() - counters of any channel of the device
 * @dev: device handle.
 * @id: channel id (from any process).
 * @out: as mmhal_chan_stats().
 *
 * Return: 0, or -EINVAL (NULL argument, id 0), -ENOENT (no such channel).
 */
MMHAL_API int mmhal_dev_chan_stats(struct mmhal_dev *dev, uint32_t id,
				   struct mmhal_chan_stats *out);

/**
 * mmhal_wait_bucket_ns() - upper bound of a wait histogram bucket
 * @bucket: 0..MMHAL_WAIT_BUCKETS - 1.
 *
 * Return: 2^(@bucket + 10) ns; UINT64_MAX for the last bucket (open-ended)
 * and for an out-of-range @bucket.
 */
MMHAL_API uint64_t mmhal_wait_bucket_ns(unsigned int bucket);

/* Frame record magic, "EDGEMETA" little-endian */
#define MMHAL_META_MAGIC	0x4154454d45474445ULL
#define MMHAL_META_VERSION	1

/**
 * struct mmhal_frame_meta - the in-band record after a frame's data
 *	(same layout as the driver's struct mmedge_frame_meta)
 * @magic: MMHAL_META_MAGIC.
 * @version: MMHAL_META_VERSION or newer (newer only appends fields).
 * @size: bytes of the record as the driver wrote it.
 * @chan: channel id.
 * @flags: MMHAL_FRAME_*.
 * @sequence: frame number.
 * @bytesused: bytes of data.
 * @ts: timestamps, equal to those of the dequeue.
 * @dropped: frames dropped on the channel so far.
 * @sensor_sof: as mmhal_frame.sensor_sof (MMHAL_FRAME_TS_SENSOR).
 * @sensor_eof: as mmhal_frame.sensor_eof.
 */
struct mmhal_frame_meta {
	uint64_t magic;
	uint32_t version;
	uint32_t size;
	uint32_t chan;
	uint32_t flags;
	uint64_t sequence;
	uint64_t bytesused;
	struct mmhal_timestamps ts;
	uint64_t dropped;
	uint64_t sensor_sof;
	uint64_t sensor_eof;
};

/**
 * mmhal_frame_meta() - the in-band record of a filled buffer
 * @buf: a buffer dequeued from @chan (mapped on demand).
 * @chan: the channel that filled it.
 * @out: receives a pointer into the buffer's mapping (valid until
 *	mmhal_buf_free()); NULL on failure.
 *
 * Checks the magic, the version, the record size and the channel id.
 * Read it between mmhal_buf_begin_cpu() and _end_cpu() (or
 * mmhal_buf_sync_range() of the record) where caches are not coherent.
 *
 * Return: 0, or -EINVAL (NULL argument), -ENOSPC (@buf too small for
 * @chan), -EBADMSG (no record: bad magic or size, another channel's),
 * -EPROTO (version 0), or mmhal_buf_map()'s error.
 */
MMHAL_API int mmhal_frame_meta(struct mmhal_buf *buf,
			       const struct mmhal_chan *chan,
			       const struct mmhal_frame_meta **out);

/**
 * mmhal_frame_record() - the in-band record of a dequeued frame, on any
 *	channel that writes one
 * @chan: the channel @frame was dequeued from.
 * @frame: from mmhal_chan_dequeue(); its buf is mapped on demand.
 * @out: receives a pointer into the buffer's mapping; NULL on failure.
 *
 * Capture: as mmhal_frame_meta(). Copy: the record after the copied
 * bytes, at ALIGN(@frame->bytesused, 64) of the destination. Feed
 * channels write none. Checks as mmhal_frame_meta(), and that the
 * record's sequence and bytesused are the frame's.
 *
 * Return: 0, or -EINVAL (NULL argument, @frame without a buffer),
 * -ENOENT (a feed channel), -ENOSPC (the buffer cannot hold the record
 * there), -EBADMSG (no record, another channel's or another frame's),
 * -EPROTO, or mmhal_buf_map()'s error.
 */
MMHAL_API int mmhal_frame_record(const struct mmhal_chan *chan,
				 const struct mmhal_frame *frame,
				 const struct mmhal_frame_meta **out);

/**
 * struct mmhal_imu_sample - one IMU6 record (24 bytes, little-endian)
 * @index: the sample's index on the channel: sequence * period + k.
 * @ax: acceleration, x axis, 16384 = 1 g.
 * @ay: acceleration, y axis.
 * @az: acceleration, z axis.
 * @gx: angular rate, x axis.
 * @gy: angular rate, y axis.
 * @gz: angular rate, z axis.
 * @reserved: zero.
 */
struct mmhal_imu_sample {
	uint64_t index;
	int16_t ax, ay, az;
	int16_t gx, gy, gz;
	uint32_t reserved;
};

/*
 * Sensor clocks and alignment
 *
 * Each capture source has its own clock (mmhal_chan_params.sensor_*): a
 * ns counter derived from the SoC counter,
 *
 *	soc_ns = (raw * mult) >> shift		(mmhal_soc_ns())
 *	sensor = soc_ns + offset + trunc(drift_ppb * (soc_ns - epoch) / 1e9)
 *
 * modulo 2^64 (mmhal_sensor_from_soc()), the epoch being soc_ns when the
 * channel was created. Frames carry their sensor stamps
 * (mmhal_frame.sensor_sof, the in-band record's too). To put every
 * source on CLOCK_MONOTONIC, sample (sensor, SoC, CLOCK_MONOTONIC)
 * triples with mmhal_dev_sensor_xts() now and then, feed them to a
 * struct mmhal_clock_fit per source and map the stamps with
 * mmhal_clock_fit_map(); the fit does not assume the formula, so it works
 * for any sensor clock that is close to linear over its window.
 */

/**
 * struct mmhal_sensor_clock - a source's sensor clock parameters
 * @offset_ns: offset from the SoC counter's ns timeline.
 * @drift_ppb: rate error, parts per billion.
 * @pad: zero.
 * @epoch: soc_ns at the channel's creation.
 */
struct mmhal_sensor_clock {
	int64_t offset_ns;
	int32_t drift_ppb;
	uint32_t pad;
	uint64_t epoch;
};

/**
 * mmhal_chan_sensor_clock() - the sensor clock of a channel made by
 *	mmhal_chan_create()
 * @chan: channel handle.
 * @out: filled in on success, zeroed on failure (if not NULL).
 *
 * Return: 0, or -EINVAL (NULL argument).
 */
MMHAL_API int mmhal_chan_sensor_clock(const struct mmhal_chan *chan,
				      struct mmhal_sensor_clock *out);

/**
 * mmhal_soc_ns() - the SoC counter on its ns timeline: (@raw * @mult) >>
 *	@shift with a 128-bit product (mult and shift from mmhal_dev_xts())
 */
MMHAL_API uint64_t mmhal_soc_ns(uint32_t mult, uint32_t shift, uint64_t raw);

/**
 * mmhal_sensor_from_soc() - the driver's sensor clock formula, bit exact
 * @clk: the parameters.
 * @soc_ns: a time on the SoC counter's timeline (mmhal_soc_ns()).
 *
 * Return: the sensor counter at @soc_ns; @soc_ns for a NULL @clk.
 */
MMHAL_API uint64_t mmhal_sensor_from_soc(const struct mmhal_sensor_clock *clk,
					 uint64_t soc_ns);

/**
 * struct mmhal_sensor_xts - (sensor, SoC counter, CLOCK_MONOTONIC) triples
 * @chan: the channel sampled.
 * @n_samples: entries of @samples filled in.
 * @mult: the SoC counter's ns conversion (as mmhal_xts.mult).
 * @shift: see @mult.
 * @clock: the channel's sensor clock parameters.
 * @samples: each: CLOCK_MONOTONIC before, the SoC counter, CLOCK_MONOTONIC
 *	after, and the counter on the channel's sensor clock.
 * @reserved: zero.
 */
struct mmhal_sensor_xts {
	uint32_t chan;
	uint32_t n_samples;
	uint32_t mult;
	uint32_t shift;
	struct mmhal_sensor_clock clock;
	struct {
		uint64_t sys_before;
		uint64_t raw;
		uint64_t sys_after;
		uint64_t sensor;
	} samples[MMHAL_XTS_MAX_SAMPLES];
	uint64_t reserved[2];
};

/**
 * mmhal_dev_sensor_xts() - sample a channel's sensor clock
 * @dev: device handle.
 * @chan_id: a capture channel of the device (from any process).
 * @n_samples: 1..MMHAL_XTS_MAX_SAMPLES.
 * @out: filled in on success, zeroed on failure (if not NULL).
 *
 * Return: 0, or -EINVAL (NULL argument, id 0, @n_samples out of range:
 * checked first; a feed or copy channel), -ENOENT (no such channel),
 * -E2BIG (a driver without sensor clocks).
 */
MMHAL_API int mmhal_dev_sensor_xts(struct mmhal_dev *dev, uint32_t chan_id,
				   unsigned int n_samples,
				   struct mmhal_sensor_xts *out);

struct mmhal_clock_fit;

/* Points a fit keeps (its sliding window): 3..MMHAL_CLOCK_FIT_MAX. */
#define MMHAL_CLOCK_FIT_MAX	256

/**
 * mmhal_clock_fit_create() - a sensor clock -> CLOCK_MONOTONIC mapper
 * @window: points kept, 3..MMHAL_CLOCK_FIT_MAX; the oldest goes first.
 * @out: receives the handle; NULL on failure.
 *
 * Each point is a sandwich (sensor, monotonic before, monotonic after).
 * The fit is robust: Theil-Sen (the median of pairwise slopes) and a
 * median intercept, then points whose residual exceeds 3.5 robust
 * standard deviations (1.4826 * MAD, at least 2 us) are rejected and the
 * rest fitted by least squares.
 *
 * Return: 0, -EINVAL, -ENOMEM.
 */
MMHAL_API int mmhal_clock_fit_create(unsigned int window,
				     struct mmhal_clock_fit **out);

/** mmhal_clock_fit_destroy() - free a fit; NULL is fine */
MMHAL_API void mmhal_clock_fit_destroy(struct mmhal_clock_fit *fit);

/**
 * mmhal_clock_fit_add() - add one sandwich
 * @fit: the fit.
 * @sensor: the sensor counter, ns.
 * @mono_before: CLOCK_MONOTONIC read before it, ns.
 * @mono_after: CLOCK_MONOTONIC read after it, ns.
 *
 * The point's time is the sandwich's midpoint, its uncertainty half the
 * width. Points must come in order: @sensor after the last point's, at
 * most 2^62 ns apart.
 *
 * Return: 0, or -EINVAL (NULL @fit, @mono_after before @mono_before, a
 * sandwich wider than 1 s, @sensor not after the last point's).
 */
MMHAL_API int mmhal_clock_fit_add(struct mmhal_clock_fit *fit, uint64_t sensor,
				  uint64_t mono_before, uint64_t mono_after);

/**
 * mmhal_clock_fit_add_xts() - add the tightest sample of a triple set
 * @fit: the fit.
 * @xts: from mmhal_dev_sensor_xts().
 *
 * Only the sample with the smallest sys_after - sys_before is added (the
 * others were more delayed, so less exact).
 *
 * Return: as mmhal_clock_fit_add(); -EINVAL for no samples.
 */
MMHAL_API int mmhal_clock_fit_add_xts(struct mmhal_clock_fit *fit,
				      const struct mmhal_sensor_xts *xts);

/**
 * mmhal_clock_fit_map() - a sensor stamp on CLOCK_MONOTONIC
 * @fit: the fit.
 * @sensor: a sensor stamp, ns (within 2^62 ns of the newest point).
 * @mono: receives CLOCK_MONOTONIC ns.
 * @uncert_ns: NULL, or receives the one-sigma uncertainty there: the
 *	inliers' residual spread propagated to @sensor (larger the further
 *	it is from the window's centre), at least 1 ns.
 *
 * Return: 0, or -EINVAL (NULL @fit or @mono), -EAGAIN (fewer than 3
 * points, or fewer than 3 that agree).
 */
MMHAL_API int mmhal_clock_fit_map(struct mmhal_clock_fit *fit, uint64_t sensor,
				  uint64_t *mono, uint64_t *uncert_ns);

/**
 * struct mmhal_clock_fit_info - the state of a fit
 * @points: points in the window.
 * @inliers: points the last fit kept.
 * @rate_ppb: (d mono / d sensor - 1) * 1e9: minus the sensor's drift.
 * @offset_ns: mono - sensor at the newest point, on the fitted line.
 * @residual_rms_ns: inliers' RMS residual.
 * @residual_max_ns: inliers' largest absolute residual.
 */
struct mmhal_clock_fit_info {
	uint32_t points;
	uint32_t inliers;
	double rate_ppb;
	double offset_ns;
	double residual_rms_ns;
	double residual_max_ns;
};

/**
 * mmhal_clock_fit_info() - what the fit found
 * @fit: the fit.
 * @out: filled in on success, zeroed on failure (if not NULL).
 *
 * Return: 0, or -EINVAL (NULL argument), -EAGAIN (as mmhal_clock_fit_map();
 * only @points is filled in then).
 */
MMHAL_API int mmhal_clock_fit_info(struct mmhal_clock_fit *fit,
				   struct mmhal_clock_fit_info *out);

/*
 * Pairing an audio window with camera frames
 *
 * An audio window is the span [first sample, last sample] of a
 * microphone's stamps on its sensor clock; a camera frame is seen during
 * its exposure [start, end] on the camera's sensor clock (for mmedge's
 * cameras start is mmhal_frame.sensor_sof; the end is the caller's
 * knowledge of the exposure: sensor_sof plus the exposure time, or the
 * next frame's sensor_sof for a rolling exposure of the whole period).
 * mmhal_align_window() puts both on CLOCK_MONOTONIC through each source's
 * clock fit and returns the frames whose exposure overlaps the window.
 */

/**
 * struct mmhal_align_frame - a camera frame's exposure
 * @sequence: the frame's sequence number.
 * @start: exposure start, ns on the camera's sensor clock.
 * @end: exposure end, same clock, >= @start.
 */
struct mmhal_align_frame {
	uint64_t sequence;
	uint64_t start;
	uint64_t end;
};

/**
 * struct mmhal_align_overlap - a frame that overlaps the window
 * @index: the frame's index in the array given.
 * @pad: zero.
 * @sequence: its sequence number.
 * @overlap_ns: length of exposure and window in common, on
 *	CLOCK_MONOTONIC.
 * @frame_fraction: @overlap_ns / the exposure's length (1 for an
 *	exposure of length 0 inside the window).
 * @window_fraction: @overlap_ns / the window's length (1 for a window of
 *	length 0 inside the exposure).
 */
struct mmhal_align_overlap {
	uint32_t index;
	uint32_t pad;
	uint64_t sequence;
	uint64_t overlap_ns;
	double frame_fraction;
	double window_fraction;
};

/**
 * struct mmhal_align_result - an audio window paired with camera frames
 * @win_start: the window's first sample on CLOCK_MONOTONIC, ns.
 * @win_end: its last sample, ns.
 * @uncert_ns: one-sigma uncertainty of an edge comparison: the root sum
 *	of squares of the largest uncertainty the two fits reported for the
 *	stamps used (0 where both fits are NULL).
 * @n_overlap: frames that overlap the window (all of them, also those
 *	past the caller's array).
 * @first_index: index of the first overlapping frame (0 if none).
 * @last_index: index of the last one (0 if none).
 * @seq_first: its sequence number; with @seq_last the range of frames
 *	the window was heard during.
 * @seq_last: the last overlapping frame's sequence number.
 * @pad: zero.
 * @coverage: the fraction of the window some exposure covers (sum of the
 *	overlaps over the window's length, at most 1; 1 for a window of
 *	length 0 inside an exposure).
 * @reserved: zero.
 */
struct mmhal_align_result {
	uint64_t win_start;
	uint64_t win_end;
	uint64_t uncert_ns;
	uint32_t n_overlap;
	uint32_t first_index;
	uint32_t last_index;
	uint32_t pad;
	uint64_t seq_first;
	uint64_t seq_last;
	double coverage;
	uint64_t reserved[4];
};

/**
 * mmhal_align_window() - the camera frames an audio window overlaps
 * @mic: the microphone's clock fit, or NULL to take its stamps as
 *	CLOCK_MONOTONIC (no correction: for comparison).
 * @mic_first: the window's first sample, ns on the microphone's clock.
 * @mic_last: its last sample, >= @mic_first.
 * @cam: the camera's clock fit, or NULL as for @mic.
 * @frames: @n_frames exposures in order (@start not decreasing).
 * @n_frames: 0..UINT32_MAX.
 * @ov: NULL, or receives the first @max_ov overlapping frames in order.
 * @max_ov: entries of @ov.
 * @out: the pairing; zeroed on failure.
 *
 * A frame overlaps when its exposure and the window have a part of
 * positive length in common, or when one of them has length 0 and lies
 * inside the other (ends included). With exposures that do not overlap
 * each other, the overlapping frames are consecutive.
 *
 * Return: 0, or -EINVAL (NULL @out, NULL @frames with @n_frames > 0,
 * @mic_last before @mic_first, an exposure ending before it starts,
 * exposures out of order, NULL @ov with @max_ov > 0, @n_frames too
 * large), -EAGAIN (a fit that cannot map yet, as mmhal_clock_fit_map()).
 */
MMHAL_API int mmhal_align_window(struct mmhal_clock_fit *mic,
				 uint64_t mic_first, uint64_t mic_last,
				 struct mmhal_clock_fit *cam,
				 const struct mmhal_align_frame *frames,
				 size_t n_frames,
				 struct mmhal_align_overlap *ov, size_t max_ov,
				 struct mmhal_align_result *out);

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

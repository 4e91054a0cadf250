// SPDX-License-Identifier: GPL-2.0
/*
 * kselftests for mmedge buffers: MMEDGE_IOC_BUF_ALLOC / BUF_INFO /
 * BUF_SYNC / BUF_IMPORT / BUF_RELEASE and the dma-buf they export.
 *
 *  - CPU access: alloc, mmap, write, DMA_BUF_IOCTL_SYNC, read back, for
 *    every cache mode and backing and several sizes.
 *  - Zero copy with vgem (libdrm): vgem imports our buffer and we import
 *    vgem's; implicit fences vgem attaches show up on our dma-buf.
 *  - Zero copy with V4L2: vivid captures a solid test pattern straight
 *    into our buffers (V4L2_MEMORY_DMABUF), with its vmalloc and its
 *    dma-contig allocator.
 *  - Ranged sync, argument validation (one changed parameter per test),
 *    older and newer structure sizes.
 *  - Lifetime: buffers outlive the mmedge file and hold the module.
 *
 * Needs mmedge.ko loaded with a virtual instance (/dev/mmedge0) that has
 * MMEDGE_CAP_BUFFERS; skips otherwise. The vgem tests need vgem loaded,
 * the V4L2 tests vivid (the dma-contig variant reloads vivid with
 * allocators=1, as root). The unload test needs root and MMEDGE_KO.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/dma-buf.h>
#include <linux/videodev2.h>
#include <linux/mmedge.h>

#include <xf86drm.h>
#include <drm_mode.h>

#include "../kselftest_harness.h"
#include "mmedge_util.h"

#define SZ_4K		(4UL << 10)
#define SZ_1M		(1UL << 20)
#define SZ_4M		(4UL << 20)
#define SZ_64M		(64UL << 20)

/* The ioctls with an explicit argument size, for older/newer structures. */
#define MMEDGE_IOC_SIZED(nr, sz) \
	_IOC(_IOC_READ | _IOC_WRITE, MMEDGE_IOC_MAGIC, (nr), (sz))
#define MMEDGE_IOC_SIZED_W(nr, sz) \
	_IOC(_IOC_WRITE, MMEDGE_IOC_MAGIC, (nr), (sz))

/* Structures from a newer userspace: ours plus a tail. */
struct buf_alloc_newer {
	struct mmedge_buf_alloc v0;
	__u64 extra[8];
};

struct buf_info_newer {
	struct mmedge_buf_info v0;
	__u64 extra[8];
};

struct buf_sync_newer {
	struct mmedge_buf_sync v0;
	__u64 extra[8];
};

struct buf_import_newer {
	struct mmedge_buf_import v0;
	__u64 extra[8];
};

struct buf_release_newer {
	struct mmedge_buf_release v0;
	__u64 extra[8];
};

/* Fills @a with a valid request; the tests then change one field. */
static void alloc_req(struct mmedge_buf_alloc *a, __u64 size, __u32 flags)
{
	memset(a, 0, sizeof(*a));
	a->size = size;
	a->flags = flags;
	a->fd_flags = O_RDWR | O_CLOEXEC;
	a->fd = -1;
}

static int buf_alloc(int fd, __u64 size, __u32 flags,
		     struct mmedge_buf_alloc *a)
{
	alloc_req(a, size, flags);
	return xioctl(fd, MMEDGE_IOC_BUF_ALLOC, a);
}

static int buf_info(int fd, int dmabuf, struct mmedge_buf_info *info)
{
	memset(info, 0, sizeof(*info));
	info->fd = dmabuf;
	return xioctl(fd, MMEDGE_IOC_BUF_INFO, info);
}

static void sync_req(struct mmedge_buf_sync *s, int dmabuf, __u32 flags,
		     __u64 offset, __u64 len)
{
	memset(s, 0, sizeof(*s));
	s->fd = dmabuf;
	s->flags = flags;
	s->offset = offset;
	s->len = len;
}

static int buf_import(int fd, int dmabuf, struct mmedge_buf_import *imp)
{
	memset(imp, 0, sizeof(*imp));
	imp->fd = dmabuf;
	return xioctl(fd, MMEDGE_IOC_BUF_IMPORT, imp);
}

static int buf_release(int fd, __u64 id)
{
	struct mmedge_buf_release rel;

	memset(&rel, 0, sizeof(rel));
	rel.id = id;
	return xioctl(fd, MMEDGE_IOC_BUF_RELEASE, &rel);
}

static uint32_t pattern(size_t i, uint32_t seed)
{
	return (uint32_t)(i * 2654435761u) ^ seed;
}

static void fill_pattern(void *p, size_t len, uint32_t seed)
{
	uint32_t *w = p;
	size_t i;

	for (i = 0; i < len / 4; i++)
		w[i] = pattern(i, seed);
}

/* Index of the first word that differs, or -1. */
static ssize_t check_pattern(const void *p, size_t len, uint32_t seed)
{
	const uint32_t *w = p;
	size_t i;

	for (i = 0; i < len / 4; i++)
		if (w[i] != pattern(i, seed))
			return i;
	return -1;
}

static ssize_t check_bytes(const void *p, size_t len, uint8_t v)
{
	const uint8_t *b = p;
	size_t i;

	for (i = 0; i < len; i++)
		if (b[i] != v)
			return i;
	return -1;
}

/* Whether @fd is a dma-buf (answers DMA_BUF_IOCTL_SYNC). */
static int is_dmabuf(int fd)
{
	struct dma_buf_sync s = { .flags = ~0ULL };

	/* A dma-buf answers bad flags with -EINVAL, other files -ENOTTY. */
	return xioctl(fd, DMA_BUF_IOCTL_SYNC, &s) == -EINVAL;
}

/* 0 if @fd is an mmedge device with buffers, else a reason in @why. */
static int has_buffers(int fd, struct mmedge_caps *caps, const char **why)
{
	if (query_caps(fd, caps)) {
		*why = "MMEDGE_IOC_QUERY_CAPS failed";
		return -1;
	}
	if (!(caps->caps & MMEDGE_CAP_BUFFERS) ||
	    !(caps->ioctls & (1ULL << _IOC_NR(MMEDGE_IOC_BUF_ALLOC)))) {
		*why = "driver has no buffers (MMEDGE_CAP_BUFFERS unset)";
		return -1;
	}
	return 0;
}

/*
 * vgem: a DRM driver with no hardware, found by name among the card nodes.
 */
static int vgem_create_dumb(int vgem, __u32 width, __u32 height,
			    struct drm_mode_create_dumb *cd)
{
	memset(cd, 0, sizeof(*cd));
	cd->width = width;
	cd->height = height;
	cd->bpp = 32;
	return xioctl(vgem, DRM_IOCTL_MODE_CREATE_DUMB, cd);
}

static void vgem_close_handle(int vgem, __u32 handle)
{
	drmCloseBufferHandle(vgem, handle);
}

/* mmap a vgem handle through DRM_IOCTL_MODE_MAP_DUMB; -errno on failure. */
static int vgem_mmap(int vgem, __u32 handle, size_t size, void **out)
{
	struct drm_mode_map_dumb md = { .handle = handle };
	void *p;
	int ret;

	ret = xioctl(vgem, DRM_IOCTL_MODE_MAP_DUMB, &md);
	if (ret)
		return ret;
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, vgem,
		 md.offset);
	if (p == MAP_FAILED)
		return -errno;
	*out = p;
	return 0;
}

/*
 * Live counters of the instance (/sys/class/mmedge/mmedgeN/stats/):
 * buffers, buffer_bytes, imports and the driver-wide mem_used.
 */
#define STATS_DIR	"/sys/class/mmedge/mmedge0/stats/"

struct buf_counters {
	long long buffers, buffer_bytes, imports, mem_used;
};

static int read_counters(struct buf_counters *c)
{
	int ret;

	ret = read_ll(STATS_DIR "buffers", &c->buffers);
	if (!ret)
		ret = read_ll(STATS_DIR "buffer_bytes", &c->buffer_bytes);
	if (!ret)
		ret = read_ll(STATS_DIR "imports", &c->imports);
	if (!ret)
		ret = read_ll(STATS_DIR "mem_used", &c->mem_used);
	return ret;
}

/* Writes a module parameter of mmedge; 0 or -errno. */
static int set_param(const char *name, unsigned int val)
{
	char path[128], buf[16];
	int fd, n, ret = 0;

	snprintf(path, sizeof(path), "/sys/module/mmedge/parameters/%s", name);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = snprintf(buf, sizeof(buf), "%u", val);
	if (write(fd, buf, n) != n)
		ret = -errno;
	close(fd);
	return ret;
}

static int get_param(const char *name, unsigned int *val)
{
	char path[128];
	long long v;
	int ret;

	snprintf(path, sizeof(path), "/sys/module/mmedge/parameters/%s", name);
	ret = read_ll(path, &v);
	if (!ret)
		*val = (unsigned int)v;
	return ret;
}

/*
 * Fixture: one open /dev/mmedge0.
 */
FIXTURE(buf) {
	int fd;
	struct mmedge_caps caps;
};

FIXTURE_SETUP(buf)
{
	const char *why;

	self->fd = open_dev();
	if (self->fd < 0 && errno == ENOENT)
		SKIP(return, "%s not present (is mmedge.ko loaded?)", DEVPATH);
	ASSERT_LE(0, self->fd);
	if (has_buffers(self->fd, &self->caps, &why))
		SKIP(return, "%s", why);
}

FIXTURE_TEARDOWN(buf)
{
	if (self->fd >= 0)
		close(self->fd);
}

/*
 * 1. CPU access for every cache mode and backing.
 */
FIXTURE(buf_rw) {
	int fd;
	struct mmedge_caps caps;
};

FIXTURE_VARIANT(buf_rw) {
	__u32 flags;
};

FIXTURE_VARIANT_ADD(buf_rw, sg_cached) {
	.flags = MMEDGE_BUF_CACHE_CACHED,
};

FIXTURE_VARIANT_ADD(buf_rw, sg_wc) {
	.flags = MMEDGE_BUF_CACHE_WC,
};

FIXTURE_VARIANT_ADD(buf_rw, sg_uncached) {
	.flags = MMEDGE_BUF_CACHE_UNCACHED,
};

FIXTURE_VARIANT_ADD(buf_rw, contig_cached) {
	.flags = MMEDGE_BUF_CONTIG | MMEDGE_BUF_CACHE_CACHED,
};

FIXTURE_VARIANT_ADD(buf_rw, contig_wc) {
	.flags = MMEDGE_BUF_CONTIG | MMEDGE_BUF_CACHE_WC,
};

FIXTURE_VARIANT_ADD(buf_rw, contig_uncached) {
	.flags = MMEDGE_BUF_CONTIG | MMEDGE_BUF_CACHE_UNCACHED,
};

FIXTURE_SETUP(buf_rw)
{
	const char *why;

	self->fd = open_dev();
	if (self->fd < 0 && errno == ENOENT)
		SKIP(return, "%s not present (is mmedge.ko loaded?)", DEVPATH);
	ASSERT_LE(0, self->fd);
	if (has_buffers(self->fd, &self->caps, &why))
		SKIP(return, "%s", why);
	if ((variant->flags & MMEDGE_BUF_CONTIG) &&
	    !(self->caps.caps & MMEDGE_CAP_CONTIG))
		SKIP(return, "no contiguous buffers (MMEDGE_CAP_CONTIG unset)");
}

FIXTURE_TEARDOWN(buf_rw)
{
	if (self->fd >= 0)
		close(self->fd);
}

/*
 * Allocates @size with @flags, checks what alloc and BUF_INFO report,
 * writes a pattern through one mapping, syncs, and reads it back through
 * a second mapping.
 */
static void rw_roundtrip(struct __test_metadata *_metadata, int fd,
			 __u64 size, __u32 flags)
{
	struct mmedge_buf_alloc a;
	struct mmedge_buf_info info;
	size_t len = round_page(size);
	ssize_t bad;
	void *p;

	ASSERT_EQ(0, buf_alloc(fd, size, flags, &a));
	ASSERT_LE(0, a.fd);
	EXPECT_EQ(len, a.alloc_size);
	EXPECT_EQ(flags & MMEDGE_BUF_CACHE_MASK, a.cache);
	EXPECT_NE(0, a.id);
	EXPECT_TRUE(fcntl(a.fd, F_GETFD) & FD_CLOEXEC);
	EXPECT_EQ(O_RDWR, fcntl(a.fd, F_GETFL) & O_ACCMODE);

	ASSERT_EQ(0, buf_info(fd, a.fd, &info));
	EXPECT_EQ(len, info.size);
	EXPECT_TRUE(info.info_flags & MMEDGE_BUF_INFO_OURS);
	EXPECT_FALSE(info.info_flags & MMEDGE_BUF_INFO_IMPORTED);
	EXPECT_EQ(!!(flags & MMEDGE_BUF_CONTIG),
		  !!(info.info_flags & MMEDGE_BUF_INFO_CONTIG));
	if (flags & MMEDGE_BUF_CONTIG)
		EXPECT_EQ(1, info.nr_segments);
	EXPECT_LE(1, info.nr_segments);
	EXPECT_EQ(a.cache, info.cache);
	EXPECT_EQ(flags, info.alloc_flags);
	EXPECT_EQ(a.id, info.id);
	EXPECT_EQ(0, info.nr_attachments);
	EXPECT_EQ(0, info.pad);
	EXPECT_EQ(0, info.reserved[0]);

	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, a.fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(0, dmabuf_sync(a.fd, DMA_BUF_SYNC_START | DMA_BUF_SYNC_WRITE));
	fill_pattern(p, len, (uint32_t)size ^ flags);
	EXPECT_EQ(0, dmabuf_sync(a.fd, DMA_BUF_SYNC_END | DMA_BUF_SYNC_WRITE));
	EXPECT_EQ(0, munmap(p, len));

	p = mmap(NULL, len, PROT_READ, MAP_SHARED, a.fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(0, dmabuf_sync(a.fd, DMA_BUF_SYNC_START | DMA_BUF_SYNC_READ));
	bad = check_pattern(p, len, (uint32_t)size ^ flags);
	EXPECT_EQ(-1, bad) TH_LOG("word %zd of %zu differs", bad, len / 4);
	EXPECT_EQ(0, dmabuf_sync(a.fd, DMA_BUF_SYNC_END | DMA_BUF_SYNC_READ));
	EXPECT_EQ(0, munmap(p, len));

	/* A one-page mapping at an offset shows that page. */
	if (len > page_size()) {
		size_t off = len - page_size();

		p = mmap(NULL, page_size(), PROT_READ, MAP_SHARED, a.fd, off);
		ASSERT_NE(MAP_FAILED, p);
		EXPECT_EQ(pattern(off / 4, (uint32_t)size ^ flags),
			  ((uint32_t *)p)[0]);
		EXPECT_EQ(pattern(len / 4 - 1, (uint32_t)size ^ flags),
			  ((uint32_t *)p)[page_size() / 4 - 1]);
		munmap(p, page_size());
	}

	/* A mapping past the end of the buffer is refused. */
	p = mmap(NULL, len + page_size(), PROT_READ, MAP_SHARED, a.fd, 0);
	EXPECT_EQ(MAP_FAILED, p);
	if (p != MAP_FAILED)
		munmap(p, len + page_size());
	close(a.fd);
}

TEST_F(buf_rw, size_4k)
{
	rw_roundtrip(_metadata, self->fd, SZ_4K, variant->flags);
}

TEST_F(buf_rw, size_1m_plus_1)
{
	rw_roundtrip(_metadata, self->fd, SZ_1M + 1, variant->flags);
}

TEST_F(buf_rw, size_4m)
{
	rw_roundtrip(_metadata, self->fd, SZ_4M, variant->flags);
}

/* Contiguous above 4 MiB needs CMA, which Debian's x86 kernel lacks. */
TEST_F_TIMEOUT(buf_rw, size_64m, 120)
{
	struct mmedge_buf_alloc a;

	if (SZ_64M > self->caps.max_buffer_size)
		SKIP(return, "max_buffer_size %llu < 64 MiB",
		     (unsigned long long)self->caps.max_buffer_size);
	if (variant->flags & MMEDGE_BUF_CONTIG) {
		EXPECT_EQ(-ENOMEM, buf_alloc(self->fd, SZ_64M, variant->flags,
					     &a));
		if (a.fd >= 0)
			close(a.fd);
		return;
	}
	rw_roundtrip(_metadata, self->fd, SZ_64M, variant->flags);
}

/* Without O_CLOEXEC in fd_flags the new fd stays open across exec. */
TEST_F(buf, fd_no_cloexec)
{
	struct mmedge_buf_alloc a;

	alloc_req(&a, SZ_4K, 0);
	a.fd_flags = O_RDWR;
	ASSERT_EQ(0, xioctl(self->fd, MMEDGE_IOC_BUF_ALLOC, &a));
	EXPECT_FALSE(fcntl(a.fd, F_GETFD) & FD_CLOEXEC);
	close(a.fd);
}

/* A read-only dma-buf fd cannot be mapped for writing. */
TEST_F(buf, fd_rdonly)
{
	struct mmedge_buf_alloc a;
	void *p;

	alloc_req(&a, SZ_4K, 0);
	a.fd_flags = O_RDONLY | O_CLOEXEC;
	ASSERT_EQ(0, xioctl(self->fd, MMEDGE_IOC_BUF_ALLOC, &a));
	EXPECT_EQ(O_RDONLY, fcntl(a.fd, F_GETFL) & O_ACCMODE);
	p = mmap(NULL, SZ_4K, PROT_READ | PROT_WRITE, MAP_SHARED, a.fd, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EACCES, errno);
	p = mmap(NULL, SZ_4K, PROT_READ, MAP_SHARED, a.fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	munmap(p, SZ_4K);
	close(a.fd);
}

/* Ids are unique per instance, also across files. */
TEST_F(buf, ids_unique)
{
	struct mmedge_buf_alloc a, b, c;
	int fd2 = open_dev();

	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, buf_alloc(self->fd, SZ_4K, 0, &a));
	ASSERT_EQ(0, buf_alloc(self->fd, SZ_4K, 0, &b));
	ASSERT_EQ(0, buf_alloc(fd2, SZ_4K, 0, &c));
	EXPECT_NE(a.id, b.id);
	EXPECT_NE(a.id, c.id);
	EXPECT_NE(b.id, c.id);
	close(a.fd);
	close(b.fd);
	close(c.fd);
	close(fd2);
}

/* BUF_INFO works on a buffer from another mmedge file (it is ours). */
TEST_F(buf, info_other_file)
{
	struct mmedge_buf_alloc a;
	struct mmedge_buf_info info;
	int fd2 = open_dev();

	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, buf_alloc(fd2, SZ_4K, 0, &a));
	ASSERT_EQ(0, buf_info(self->fd, a.fd, &info));
	EXPECT_EQ(a.id, info.id);
	EXPECT_TRUE(info.info_flags & MMEDGE_BUF_INFO_OURS);
	close(a.fd);
	close(fd2);
}

/*
 * 5. Ranged sync.
 *
 * The buffer is imported into mmedge itself, which attaches and maps it
 * for the device: @synced must then cover the range, widened to cache
 * lines, once per mapping, and never the whole buffer.
 */
TEST_F(buf, sync_ranges)
{
	static const struct { __u64 off, len; } r[] = {
		{ 0, SZ_4K },
		{ 3 * SZ_4K + 17, 100 },
		{ SZ_1M, SZ_1M },
		{ SZ_4M - 1, 1 },
		{ 0, SZ_4M },
	};
	struct mmedge_buf_alloc a;
	struct mmedge_buf_import imp;
	struct mmedge_buf_info info;
	struct mmedge_buf_sync s;
	unsigned int i, maps;

	ASSERT_EQ(0, buf_alloc(self->fd, SZ_4M, MMEDGE_BUF_CACHE_CACHED, &a));
	ASSERT_EQ(0, buf_import(self->fd, a.fd, &imp));
	ASSERT_EQ(0, buf_info(self->fd, a.fd, &info));
	ASSERT_EQ(1, info.nr_attachments);
	/*
	 * Documentation/userspace-api/mmedge-buf-sync.rst: @synced is len
	 * times the number of mapped attachments, not widened to cache lines.
	 */
	maps = info.nr_attachments;

	for (i = 0; i < sizeof(r) / sizeof(r[0]); i++) {
		__u64 want = r[i].len * maps;
		__u32 dir;

		for (dir = MMEDGE_BUF_SYNC_READ; dir <= MMEDGE_BUF_SYNC_RW;
		     dir++) {
			sync_req(&s, a.fd, MMEDGE_BUF_SYNC_START | dir,
				 r[i].off, r[i].len);
			ASSERT_EQ(0, xioctl(self->fd, MMEDGE_IOC_BUF_SYNC, &s));
			EXPECT_EQ(want, s.synced)
				TH_LOG("start: range %u [%llu, +%llu): synced %llu",
				       i, (unsigned long long)r[i].off,
				       (unsigned long long)r[i].len,
				       (unsigned long long)s.synced);
			sync_req(&s, a.fd, MMEDGE_BUF_SYNC_END | dir,
				 r[i].off, r[i].len);
			ASSERT_EQ(0, xioctl(self->fd, MMEDGE_IOC_BUF_SYNC, &s));
			EXPECT_EQ(want, s.synced)
				TH_LOG("end: range %u [%llu, +%llu): synced %llu",
				       i, (unsigned long long)r[i].off,
				       (unsigned long long)r[i].len,
				       (unsigned long long)s.synced);
		}
	}
	EXPECT_EQ(0, buf_release(self->fd, imp.id));
	close(a.fd);
}

/*
 * Write-combined and uncached buffers count their mapped attachments the
 * same way (the sync calls run on every mapped attachment, whatever the
 * cache mode).
 */
TEST_F(buf, sync_wc_uncached)
{
	static const __u32 modes[] = {
		MMEDGE_BUF_CACHE_WC, MMEDGE_BUF_CACHE_UNCACHED,
	};
	struct mmedge_buf_alloc a;
	struct mmedge_buf_import imp;
	struct mmedge_buf_sync s;
	unsigned int i;

	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, buf_alloc(self->fd, SZ_1M, modes[i], &a));
		sync_req(&s, a.fd, MMEDGE_BUF_SYNC_START | MMEDGE_BUF_SYNC_RW,
			 SZ_4K, 300);
		EXPECT_EQ(0, xioctl(self->fd, MMEDGE_IOC_BUF_SYNC, &s));
		EXPECT_EQ(0, s.synced);
		ASSERT_EQ(0, buf_import(self->fd, a.fd, &imp));
		sync_req(&s, a.fd, MMEDGE_BUF_SYNC_START | MMEDGE_BUF_SYNC_RW,
			 SZ_4K, 300);
		EXPECT_EQ(0, xioctl(self->fd, MMEDGE_IOC_BUF_SYNC, &s));
		EXPECT_EQ(300, s.synced) TH_LOG("cache mode %u", modes[i]);
		sync_req(&s, a.fd, MMEDGE_BUF_SYNC_END | MMEDGE_BUF_SYNC_RW,
			 SZ_4K, 300);
		EXPECT_EQ(0, xioctl(self->fd, MMEDGE_IOC_BUF_SYNC, &s));
		EXPECT_EQ(300, s.synced);
		EXPECT_EQ(0, buf_release(self->fd, imp.id));
		close(a.fd);
	}
}

/* With no free fd the allocation fails with -EMFILE and leaks nothing. */
TEST_F(buf, alloc_emfile)
{
	struct mmedge_buf_alloc a;
	struct buf_counters before, after;
	struct rlimit rl, old;
	int top = dup(self->fd);

	ASSERT_LE(0, top);
	if (read_counters(&before))
		SKIP(return, "no %s", STATS_DIR);
	/* Every fd below the limit is taken: 0..top are open. */
	for (int i = 0; i < top; i++)
		if (fcntl(i, F_GETFD) < 0)
			ASSERT_LE(0, dup2(self->fd, i));
	ASSERT_EQ(0, getrlimit(RLIMIT_NOFILE, &old));
	rl = old;
	rl.rlim_cur = top + 1;
	ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &rl));
	EXPECT_EQ(-EMFILE, buf_alloc(self->fd, SZ_1M, 0, &a));
	EXPECT_EQ(-1, a.fd);
	ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &old));
	ASSERT_EQ(0, read_counters(&after));
	EXPECT_EQ(before.buffers, after.buffers);
	EXPECT_EQ(before.mem_used, after.mem_used);
	close(top);
	EXPECT_EQ(0, buf_alloc(self->fd, SZ_1M, 0, &a));
	close(a.fd);
}

/* Ranged sync of a buffer nobody maps for DMA still works. */
TEST_F(buf, sync_no_attachment)
{
	struct mmedge_buf_alloc a;
	struct mmedge_buf_sync s;

	ASSERT_EQ(0, buf_alloc(self->fd, SZ_1M, 0, &a));
	sync_req(&s, a.fd, MMEDGE_BUF_SYNC_START | MMEDGE_BUF_SYNC_RW, 0,
		 SZ_4K);
	EXPECT_EQ(0, xioctl(self->fd, MMEDGE_IOC_BUF_SYNC, &s));
	EXPECT_EQ(0, s.synced);
	sync_req(&s, a.fd, MMEDGE_BUF_SYNC_END | MMEDGE_BUF_SYNC_RW, 0, SZ_4K);
	EXPECT_EQ(0, xioctl(self->fd, MMEDGE_IOC_BUF_SYNC, &s));
	close(a.fd);
}

/*
 * Ranged sync, bad input: each case changes one field of a valid request.
 */
FIXTURE(sync_bad) {
	int fd;
	struct mmedge_caps caps;
	struct mmedge_buf_alloc a;
	struct mmedge_buf_sync s;
};

FIXTURE_SETUP(sync_bad)
{
	const char *why;

	self->a.fd = -1;
	self->fd = open_dev();
	if (self->fd < 0 && errno == ENOENT)
		SKIP(return, "%s not present (is mmedge.ko loaded?)", DEVPATH);
	ASSERT_LE(0, self->fd);
	if (has_buffers(self->fd, &self->caps, &why))
		SKIP(return, "%s", why);
	ASSERT_EQ(0, buf_alloc(self->fd, SZ_1M, 0, &self->a));
	sync_req(&self->s, self->a.fd,
		 MMEDGE_BUF_SYNC_START | MMEDGE_BUF_SYNC_READ, SZ_4K, SZ_4K);
	/* The unchanged request is valid. */
	ASSERT_EQ(0, xioctl(self->fd, MMEDGE_IOC_BUF_SYNC, &self->s));
	sync_req(&self->s, self->a.fd,
		 MMEDGE_BUF_SYNC_START | MMEDGE_BUF_SYNC_READ, SZ_4K, SZ_4K);
}

FIXTURE_TEARDOWN(sync_bad)
{
	if (self->a.fd >= 0)
		close(self->a.fd);
	if (self->fd >= 0)
		close(self->fd);
}

TEST_F(sync_bad, past_end)
{
	self->s.offset = SZ_1M - SZ_4K + 1;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_BUF_SYNC, &self->s));
}

TEST_F(sync_bad, offset_at_end)
{
	self->s.offset = SZ_1M;
	self->s.len = 1;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_BUF_SYNC, &self->s));
}

TEST_F(sync_bad, len_zero)
{
	self->s.len = 0;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_BUF_SYNC, &self->s));
}

TEST_F(sync_bad, overflow)
{
	self->s.offset = ~0ULL - SZ_4K + 2;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_BUF_SYNC, &self->s));
}

TEST_F(sync_bad, unknown_flags)
{
	unsigned int bit;

	for (bit = 0; bit < 32; bit++) {
		if ((1U << bit) & MMEDGE_BUF_SYNC_FLAGS_VALID)
			continue;
		self->s.flags = (MMEDGE_BUF_SYNC_START | MMEDGE_BUF_SYNC_READ) |
				(1U << bit);
		EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_BUF_SYNC,
					  &self->s)) TH_LOG("flag bit %u", bit);
	}
}

/* Neither read nor write: DMA_BUF_IOCTL_SYNC refuses that too. */
TEST_F(sync_bad, no_direction)
{
	self->s.flags = MMEDGE_BUF_SYNC_START;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_BUF_SYNC, &self->s));
}

TEST_F(sync_bad, reserved_nonzero)
{
	self->s.reserved[1] = 1;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_BUF_SYNC, &self->s));
}

TEST_F(sync_bad, bad_fd)
{
	self->s.fd = -1;
	EXPECT_EQ(-EBADF, xioctl(self->fd, MMEDGE_IOC_BUF_SYNC, &self->s));
}

/* The mmedge device file itself is no dma-buf. */
TEST_F(sync_bad, not_dmabuf)
{
	self->s.fd = self->fd;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_BUF_SYNC, &self->s));
}

/* mmedge only syncs its own buffers, even when it imported a foreign one. */
TEST_F(sync_bad, foreign_dmabuf)
{
	struct drm_mode_create_dumb cd;
	struct mmedge_buf_import imp;
	int vgem, dmabuf;

	vgem = open_vgem();
	if (vgem < 0)
		SKIP(return, "vgem not loaded");
	ASSERT_EQ(0, vgem_create_dumb(vgem, 256, 256, &cd));
	ASSERT_EQ(0, drmPrimeHandleToFD(vgem, cd.handle, DRM_CLOEXEC | DRM_RDWR,
					&dmabuf));
	self->s.fd = dmabuf;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_BUF_SYNC, &self->s));
	ASSERT_EQ(0, buf_import(self->fd, dmabuf, &imp));
	EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_BUF_SYNC, &self->s));
	EXPECT_EQ(0, buf_release(self->fd, imp.id));
	close(dmabuf);
	vgem_close_handle(vgem, cd.handle);
	close(vgem);
}

TEST_F(sync_bad, older_struct)
{
	EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_SIZED(
		_IOC_NR(MMEDGE_IOC_BUF_SYNC), MMEDGE_BUF_SYNC_SIZE_VER0 - 8),
		&self->s));
}

TEST_F(sync_bad, newer_struct)
{
	struct buf_sync_newer n;

	memset(&n, 0, sizeof(n));
	n.v0 = self->s;
	EXPECT_EQ(0, xioctl(self->fd, MMEDGE_IOC_SIZED(
		_IOC_NR(MMEDGE_IOC_BUF_SYNC), sizeof(n)), &n));
	/* No device maps the buffer: nothing to maintain. */
	EXPECT_EQ(0, n.v0.synced);
	EXPECT_EQ(0, n.extra[0]);
}

TEST_F(sync_bad, newer_struct_nonzero_tail)
{
	struct buf_sync_newer n;

	memset(&n, 0, sizeof(n));
	n.v0 = self->s;
	n.extra[7] = 1;
	EXPECT_EQ(-E2BIG, xioctl(self->fd, MMEDGE_IOC_SIZED(
		_IOC_NR(MMEDGE_IOC_BUF_SYNC), sizeof(n)), &n));
}

/*
 * 6. Allocation, bad input: each case changes one field of a valid
 * request (4 KiB, cached, O_RDWR | O_CLOEXEC).
 */
FIXTURE(alloc_bad) {
	int fd;
	struct mmedge_caps caps;
	struct mmedge_buf_alloc a;
};

FIXTURE_SETUP(alloc_bad)
{
	const char *why;

	self->fd = open_dev();
	if (self->fd < 0 && errno == ENOENT)
		SKIP(return, "%s not present (is mmedge.ko loaded?)", DEVPATH);
	ASSERT_LE(0, self->fd);
	if (has_buffers(self->fd, &self->caps, &why))
		SKIP(return, "%s", why);
	/* The unchanged request is valid. */
	alloc_req(&self->a, SZ_4K, 0);
	ASSERT_EQ(0, xioctl(self->fd, MMEDGE_IOC_BUF_ALLOC, &self->a));
	close(self->a.fd);
	alloc_req(&self->a, SZ_4K, 0);
}

FIXTURE_TEARDOWN(alloc_bad)
{
	if (self->fd >= 0)
		close(self->fd);
}

/* On failure no fd is created and @fd is left as the caller set it. */
#define EXPECT_ALLOC_FAILS(err) do { \
	int __nfd = dup(self->fd); \
	EXPECT_EQ(err, xioctl(self->fd, MMEDGE_IOC_BUF_ALLOC, &self->a)); \
	EXPECT_EQ(-1, self->a.fd); \
	if (__nfd >= 0) { \
		/* The lowest free fd is still the same. */ \
		int __n2 = dup(self->fd); \
		EXPECT_EQ(__nfd + 1, __n2); \
		close(__n2); \
		close(__nfd); \
	} \
} while (0)

TEST_F(alloc_bad, size_zero)
{
	self->a.size = 0;
	EXPECT_ALLOC_FAILS(-EINVAL);
}

TEST_F(alloc_bad, size_over_max)
{
	ASSERT_NE(0, self->caps.max_buffer_size);
	self->a.size = self->caps.max_buffer_size + 1;
	/* The header: above max_buffer_size is -ENOMEM, like the caps. */
	EXPECT_ALLOC_FAILS(-ENOMEM);
}

/* A size that overflows when rounded up to the page size. */
TEST_F(alloc_bad, size_huge)
{
	self->a.size = ~0ULL;
	EXPECT_ALLOC_FAILS(-EINVAL);
}

TEST_F(alloc_bad, unknown_flags)
{
	unsigned int bit;

	for (bit = 0; bit < 32; bit++) {
		if ((1U << bit) & MMEDGE_BUF_FLAGS_VALID)
			continue;
		self->a.flags = 1U << bit;
		self->a.fd = -1;
		EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_BUF_ALLOC,
					  &self->a)) TH_LOG("flag bit %u", bit);
	}
}

/* Cache mode 3 is inside MMEDGE_BUF_CACHE_MASK but names no mode. */
TEST_F(alloc_bad, unknown_cache_mode)
{
	self->a.flags = MMEDGE_BUF_CACHE_MASK;
	EXPECT_ALLOC_FAILS(-EINVAL);
}

TEST_F(alloc_bad, unknown_fd_flags)
{
	self->a.fd_flags |= O_NONBLOCK;
	EXPECT_ALLOC_FAILS(-EINVAL);
}

/* Access mode 3 (O_ACCMODE) is no access mode. */
TEST_F(alloc_bad, fd_flags_accmode3)
{
	self->a.fd_flags = O_ACCMODE | O_CLOEXEC;
	EXPECT_ALLOC_FAILS(-EINVAL);
}

TEST_F(alloc_bad, reserved_nonzero)
{
	unsigned int i;

	for (i = 0; i < sizeof(self->a.reserved) / sizeof(self->a.reserved[0]);
	     i++) {
		alloc_req(&self->a, SZ_4K, 0);
		self->a.reserved[i] = 1;
		EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_BUF_ALLOC,
					  &self->a)) TH_LOG("reserved[%u]", i);
	}
}

/* Below the first published size: refused. */
TEST_F(alloc_bad, older_struct)
{
	EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_SIZED(
		_IOC_NR(MMEDGE_IOC_BUF_ALLOC), MMEDGE_BUF_ALLOC_SIZE_VER0 - 8),
		&self->a));
	EXPECT_EQ(-1, self->a.fd);
}

/* A larger structure with a zero tail works; the tail is left alone. */
TEST_F(alloc_bad, newer_struct)
{
	struct buf_alloc_newer n;

	memset(&n, 0, sizeof(n));
	n.v0 = self->a;
	ASSERT_EQ(0, xioctl(self->fd, MMEDGE_IOC_SIZED(
		_IOC_NR(MMEDGE_IOC_BUF_ALLOC), sizeof(n)), &n));
	EXPECT_LE(0, n.v0.fd);
	EXPECT_EQ(SZ_4K, n.v0.alloc_size);
	EXPECT_EQ(0, n.extra[0]);
	EXPECT_EQ(0, n.extra[7]);
	close(n.v0.fd);
}

TEST_F(alloc_bad, newer_struct_nonzero_tail)
{
	struct buf_alloc_newer n;

	memset(&n, 0, sizeof(n));
	n.v0 = self->a;
	n.extra[3] = 1;
	EXPECT_EQ(-E2BIG, xioctl(self->fd, MMEDGE_IOC_SIZED(
		_IOC_NR(MMEDGE_IOC_BUF_ALLOC), sizeof(n)), &n));
	EXPECT_EQ(-1, n.v0.fd);
}

TEST_F(alloc_bad, bad_pointer)
{
	EXPECT_EQ(-EFAULT, xioctl(self->fd, MMEDGE_IOC_BUF_ALLOC, (void *)16));
}

/*
 * The caps follow the limit parameters: with file_mem_limit_mb=16 and
 * mem_limit_mb=24, one file gets 16 MiB (the 5th 4 MiB buffer fails with
 * -ENOMEM), a second file the remaining 8 MiB of the global cap, and
 * freeing makes room again. The parameters are restored afterwards.
 */
TEST_F_TIMEOUT(alloc_bad, mem_limits, 120)
{
	unsigned int old_file, old_all;
	struct mmedge_caps caps;
	struct mmedge_buf_alloc a;
	int fa[8], fb[8], na = 0, nb = 0, fd2, i;

	if (geteuid() != 0)
		SKIP(return, "needs root to change the limit parameters");
	ASSERT_EQ(0, get_param("file_mem_limit_mb", &old_file));
	ASSERT_EQ(0, get_param("mem_limit_mb", &old_all));
	ASSERT_EQ(0, set_param("mem_limit_mb", 24));
	ASSERT_EQ(0, set_param("file_mem_limit_mb", 16));

	ASSERT_EQ(0, query_caps(self->fd, &caps));
	EXPECT_EQ(16 * SZ_1M, caps.max_buffer_size);
	EXPECT_EQ(24 * SZ_1M, caps.mem_limit);

	/* One buffer above the per-file size. */
	EXPECT_EQ(-ENOMEM, buf_alloc(self->fd, 16 * SZ_1M + 1, 0, &a));

	while (na < 8 && buf_alloc(self->fd, SZ_4M, 0, &a) == 0)
		fa[na++] = a.fd;
	EXPECT_EQ(4, na);
	EXPECT_EQ(-ENOMEM, buf_alloc(self->fd, SZ_4K, 0, &a));

	fd2 = open_dev();
	ASSERT_LE(0, fd2);
	while (nb < 8 && buf_alloc(fd2, SZ_4M, 0, &a) == 0)
		fb[nb++] = a.fd;
	EXPECT_EQ(2, nb);
	EXPECT_EQ(-ENOMEM, buf_alloc(fd2, SZ_4K, 0, &a));

	/* Freeing one of the first file's buffers makes room for the second. */
	close(fa[--na]);
	EXPECT_EQ(0, buf_alloc(fd2, SZ_4M, 0, &a));
	if (a.fd >= 0)
		fb[nb++] = a.fd;

	for (i = 0; i < na; i++)
		close(fa[i]);
	for (i = 0; i < nb; i++)
		close(fb[i]);
	close(fd2);
	EXPECT_EQ(0, set_param("file_mem_limit_mb", old_file));
	EXPECT_EQ(0, set_param("mem_limit_mb", old_all));
}

/*
 * BUF_INFO, BUF_IMPORT and BUF_RELEASE: bad input and sizes.
 */
TEST_F(buf, info_flags_nonzero)
{
	struct mmedge_buf_alloc a;
	struct mmedge_buf_info info;

	ASSERT_EQ(0, buf_alloc(self->fd, SZ_4K, 0, &a));
	memset(&info, 0, sizeof(info));
	info.fd = a.fd;
	info.flags = 1;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_BUF_INFO, &info));
	close(a.fd);
}

TEST_F(buf, info_reserved_nonzero)
{
	struct mmedge_buf_alloc a;
	struct mmedge_buf_info info;

	ASSERT_EQ(0, buf_alloc(self->fd, SZ_4K, 0, &a));
	memset(&info, 0, sizeof(info));
	info.fd = a.fd;
	info.reserved[1] = 1;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_BUF_INFO, &info));
	close(a.fd);
}

TEST_F(buf, info_bad_fd)
{
	struct mmedge_buf_info info;

	EXPECT_EQ(-EBADF, buf_info(self->fd, -1, &info));
}

TEST_F(buf, info_not_dmabuf)
{
	struct mmedge_buf_info info;

	EXPECT_EQ(-EINVAL, buf_info(self->fd, self->fd, &info));
}

TEST_F(buf, info_older_struct)
{
	struct mmedge_buf_alloc a;
	struct mmedge_buf_info info;

	ASSERT_EQ(0, buf_alloc(self->fd, SZ_4K, 0, &a));
	memset(&info, 0, sizeof(info));
	info.fd = a.fd;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_SIZED(
		_IOC_NR(MMEDGE_IOC_BUF_INFO), MMEDGE_BUF_INFO_SIZE_VER0 - 8),
		&info));
	EXPECT_EQ(0, info.size);
	close(a.fd);
}

TEST_F(buf, info_newer_struct)
{
	struct mmedge_buf_alloc a;
	struct buf_info_newer n;

	ASSERT_EQ(0, buf_alloc(self->fd, SZ_4K, 0, &a));
	memset(&n, 0, sizeof(n));
	n.v0.fd = a.fd;
	EXPECT_EQ(0, xioctl(self->fd, MMEDGE_IOC_SIZED(
		_IOC_NR(MMEDGE_IOC_BUF_INFO), sizeof(n)), &n));
	EXPECT_EQ(SZ_4K, n.v0.size);
	EXPECT_EQ(a.id, n.v0.id);
	EXPECT_EQ(0, n.extra[0]);
	n.extra[5] = 1;
	EXPECT_EQ(-E2BIG, xioctl(self->fd, MMEDGE_IOC_SIZED(
		_IOC_NR(MMEDGE_IOC_BUF_INFO), sizeof(n)), &n));
	close(a.fd);
}

/* mmedge may import its own buffers (one file into another, or itself). */
TEST_F(buf, import_own)
{
	struct mmedge_buf_alloc a;
	struct mmedge_buf_import imp;
	struct mmedge_buf_info info;

	ASSERT_EQ(0, buf_alloc(self->fd, SZ_1M, 0, &a));
	ASSERT_EQ(0, buf_import(self->fd, a.fd, &imp));
	EXPECT_NE(0, imp.id);
	EXPECT_EQ(SZ_1M, imp.size);
	EXPECT_LE(1, imp.nr_segments);
	EXPECT_EQ(0, imp.pad);
	ASSERT_EQ(0, buf_info(self->fd, a.fd, &info));
	EXPECT_TRUE(info.info_flags & MMEDGE_BUF_INFO_OURS);
	EXPECT_TRUE(info.info_flags & MMEDGE_BUF_INFO_IMPORTED);
	EXPECT_LE(1, info.nr_attachments);
	EXPECT_EQ(0, buf_release(self->fd, imp.id));
	ASSERT_EQ(0, buf_info(self->fd, a.fd, &info));
	EXPECT_FALSE(info.info_flags & MMEDGE_BUF_INFO_IMPORTED);
	EXPECT_EQ(0, info.nr_attachments);
	close(a.fd);
}

TEST_F(buf, import_twice)
{
	struct mmedge_buf_alloc a;
	struct mmedge_buf_import imp, imp2;

	ASSERT_EQ(0, buf_alloc(self->fd, SZ_4K, 0, &a));
	ASSERT_EQ(0, buf_import(self->fd, a.fd, &imp));
	EXPECT_EQ(-EEXIST, buf_import(self->fd, a.fd, &imp2));
	EXPECT_EQ(0, buf_release(self->fd, imp.id));
	/* Once released, it can be imported again. */
	ASSERT_EQ(0, buf_import(self->fd, a.fd, &imp2));
	EXPECT_EQ(0, buf_release(self->fd, imp2.id));
	close(a.fd);
}

/* Imports belong to a file: another file may import the same buffer. */
TEST_F(buf, import_two_files)
{
	struct mmedge_buf_alloc a;
	struct mmedge_buf_import imp, imp2;
	int fd2 = open_dev();

	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, buf_alloc(self->fd, SZ_4K, 0, &a));
	ASSERT_EQ(0, buf_import(self->fd, a.fd, &imp));
	ASSERT_EQ(0, buf_import(fd2, a.fd, &imp2));
	/* Each file only releases its own imports. */
	EXPECT_EQ(-ENOENT, buf_release(fd2, imp.id == imp2.id ? ~0ULL : imp.id));
	EXPECT_EQ(0, buf_release(fd2, imp2.id));
	EXPECT_EQ(0, buf_release(self->fd, imp.id));
	close(a.fd);
	close(fd2);
}

/* A file holds at most MMEDGE_MAX_IMPORTS (1024) imports: -ENOSPC. */
TEST_F_TIMEOUT(buf, import_limit, 120)
{
	struct mmedge_buf_alloc a;
	struct mmedge_buf_import imp;
	int n, ret = 0;

	for (n = 0; n < 1100; n++) {
		ASSERT_EQ(0, buf_alloc(self->fd, SZ_4K, 0, &a));
		ret = buf_import(self->fd, a.fd, &imp);
		close(a.fd);
		if (ret)
			break;
	}
	EXPECT_EQ(1024, n);
	EXPECT_EQ(-ENOSPC, ret);
	/* Releasing one makes room for one. */
	EXPECT_EQ(0, buf_release(self->fd, 1));
	ASSERT_EQ(0, buf_alloc(self->fd, SZ_4K, 0, &a));
	EXPECT_EQ(0, buf_import(self->fd, a.fd, &imp));
	close(a.fd);
}

TEST_F(buf, import_bad_fd)
{
	struct mmedge_buf_import imp;

	EXPECT_EQ(-EBADF, buf_import(self->fd, -1, &imp));
}

TEST_F(buf, import_not_dmabuf)
{
	struct mmedge_buf_import imp;

	EXPECT_EQ(-EINVAL, buf_import(self->fd, self->fd, &imp));
}

TEST_F(buf, import_flags_nonzero)
{
	struct mmedge_buf_alloc a;
	struct mmedge_buf_import imp;

	ASSERT_EQ(0, buf_alloc(self->fd, SZ_4K, 0, &a));
	memset(&imp, 0, sizeof(imp));
	imp.fd = a.fd;
	imp.flags = 1;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_BUF_IMPORT, &imp));
	close(a.fd);
}

TEST_F(buf, import_reserved_nonzero)
{
	struct mmedge_buf_alloc a;
	struct mmedge_buf_import imp;

	ASSERT_EQ(0, buf_alloc(self->fd, SZ_4K, 0, &a));
	memset(&imp, 0, sizeof(imp));
	imp.fd = a.fd;
	imp.reserved[0] = 1;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_BUF_IMPORT, &imp));
	close(a.fd);
}

TEST_F(buf, import_older_newer_struct)
{
	struct mmedge_buf_alloc a;
	struct buf_import_newer n;

	ASSERT_EQ(0, buf_alloc(self->fd, SZ_4K, 0, &a));
	memset(&n, 0, sizeof(n));
	n.v0.fd = a.fd;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_SIZED(
		_IOC_NR(MMEDGE_IOC_BUF_IMPORT),
		MMEDGE_BUF_IMPORT_SIZE_VER0 - 8), &n));
	n.extra[2] = 1;
	EXPECT_EQ(-E2BIG, xioctl(self->fd, MMEDGE_IOC_SIZED(
		_IOC_NR(MMEDGE_IOC_BUF_IMPORT), sizeof(n)), &n));
	n.extra[2] = 0;
	ASSERT_EQ(0, xioctl(self->fd, MMEDGE_IOC_SIZED(
		_IOC_NR(MMEDGE_IOC_BUF_IMPORT), sizeof(n)), &n));
	EXPECT_EQ(SZ_4K, n.v0.size);
	EXPECT_EQ(0, buf_release(self->fd, n.v0.id));
	close(a.fd);
}

TEST_F(buf, release_unknown_id)
{
	EXPECT_EQ(-ENOENT, buf_release(self->fd, ~0ULL));
	EXPECT_EQ(-ENOENT, buf_release(self->fd, 0));
}

/* An allocation id is no import id. */
TEST_F(buf, release_alloc_id)
{
	struct mmedge_buf_alloc a;

	ASSERT_EQ(0, buf_alloc(self->fd, SZ_4K, 0, &a));
	EXPECT_EQ(-ENOENT, buf_release(self->fd, a.id));
	close(a.fd);
}

TEST_F(buf, release_twice)
{
	struct mmedge_buf_alloc a;
	struct mmedge_buf_import imp;

	ASSERT_EQ(0, buf_alloc(self->fd, SZ_4K, 0, &a));
	ASSERT_EQ(0, buf_import(self->fd, a.fd, &imp));
	EXPECT_EQ(0, buf_release(self->fd, imp.id));
	EXPECT_EQ(-ENOENT, buf_release(self->fd, imp.id));
	close(a.fd);
}

TEST_F(buf, release_flags_nonzero)
{
	struct mmedge_buf_alloc a;
	struct mmedge_buf_import imp;
	struct mmedge_buf_release rel;

	ASSERT_EQ(0, buf_alloc(self->fd, SZ_4K, 0, &a));
	ASSERT_EQ(0, buf_import(self->fd, a.fd, &imp));
	memset(&rel, 0, sizeof(rel));
	rel.id = imp.id;
	rel.flags = 1;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_BUF_RELEASE, &rel));
	rel.flags = 0;
	rel.reserved[1] = 1;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_BUF_RELEASE, &rel));
	EXPECT_EQ(0, buf_release(self->fd, imp.id));
	close(a.fd);
}

TEST_F(buf, release_older_newer_struct)
{
	struct mmedge_buf_alloc a;
	struct mmedge_buf_import imp;
	struct buf_release_newer n;

	ASSERT_EQ(0, buf_alloc(self->fd, SZ_4K, 0, &a));
	ASSERT_EQ(0, buf_import(self->fd, a.fd, &imp));
	memset(&n, 0, sizeof(n));
	n.v0.id = imp.id;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_SIZED_W(
		_IOC_NR(MMEDGE_IOC_BUF_RELEASE),
		MMEDGE_BUF_RELEASE_SIZE_VER0 - 8), &n));
	n.extra[0] = 1;
	EXPECT_EQ(-E2BIG, xioctl(self->fd, MMEDGE_IOC_SIZED_W(
		_IOC_NR(MMEDGE_IOC_BUF_RELEASE), sizeof(n)), &n));
	n.extra[0] = 0;
	EXPECT_EQ(0, xioctl(self->fd, MMEDGE_IOC_SIZED_W(
		_IOC_NR(MMEDGE_IOC_BUF_RELEASE), sizeof(n)), &n));
	close(a.fd);
}

/*
 * 2 and 3. vgem: zero copy both ways, implicit fences.
 */
FIXTURE(vgem) {
	int fd;
	int vgem;
	struct mmedge_caps caps;
};

FIXTURE_SETUP(vgem)
{
	const char *why;

	self->vgem = -1;
	self->fd = open_dev();
	if (self->fd < 0 && errno == ENOENT)
		SKIP(return, "%s not present (is mmedge.ko loaded?)", DEVPATH);
	ASSERT_LE(0, self->fd);
	if (has_buffers(self->fd, &self->caps, &why))
		SKIP(return, "%s", why);
	self->vgem = open_vgem();
	if (self->vgem < 0)
		SKIP(return, "no vgem card (modprobe vgem)");
}

FIXTURE_TEARDOWN(vgem)
{
	if (self->vgem >= 0)
		close(self->vgem);
	if (self->fd >= 0)
		close(self->fd);
}

/*
 * vgem imports our buffer: it attaches (nr_attachments counts it), and
 * the bytes are shared, not copied. The DRM core of 6.1 refuses
 * DRM_IOCTL_MODE_MAP_DUMB on imported objects (-EINVAL); then the check
 * is that vgem hands back the very same dma-buf when re-exporting.
 */
TEST_F(vgem, import_ours)
{
	struct mmedge_buf_alloc a;
	struct mmedge_buf_info info;
	struct stat st1, st2;
	uint32_t handle;
	void *ours, *theirs = NULL;
	size_t len = SZ_1M;
	int fd2, ret;

	ASSERT_EQ(0, buf_alloc(self->fd, len, MMEDGE_BUF_CACHE_CACHED, &a));
	ours = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, a.fd, 0);
	ASSERT_NE(MAP_FAILED, ours);

	ASSERT_EQ(0, drmPrimeFDToHandle(self->vgem, a.fd, &handle));
	ASSERT_EQ(0, buf_info(self->fd, a.fd, &info));
	EXPECT_LE(1, info.nr_attachments);

	ret = vgem_mmap(self->vgem, handle, len, &theirs);
	if (ret == 0) {
		EXPECT_EQ(0, dmabuf_sync(a.fd, DMA_BUF_SYNC_START |
					       DMA_BUF_SYNC_WRITE));
		fill_pattern(ours, len, 0x1234);
		EXPECT_EQ(0, dmabuf_sync(a.fd, DMA_BUF_SYNC_END |
					       DMA_BUF_SYNC_WRITE));
		EXPECT_EQ(-1, check_pattern(theirs, len, 0x1234));
		fill_pattern(theirs, len, 0x4321);
		EXPECT_EQ(0, dmabuf_sync(a.fd, DMA_BUF_SYNC_START |
					       DMA_BUF_SYNC_READ));
		EXPECT_EQ(-1, check_pattern(ours, len, 0x4321));
		EXPECT_EQ(0, dmabuf_sync(a.fd, DMA_BUF_SYNC_END |
					       DMA_BUF_SYNC_READ));
		munmap(theirs, len);
	} else {
		EXPECT_EQ(-EINVAL, ret);
		TH_LOG("vgem cannot map imported objects (%d); checking identity",
		       ret);
	}

	/* Re-exported by vgem: the same dma-buf, the same mmedge buffer. */
	ASSERT_EQ(0, drmPrimeHandleToFD(self->vgem, handle,
					DRM_CLOEXEC | DRM_RDWR, &fd2));
	ASSERT_EQ(0, fstat(a.fd, &st1));
	ASSERT_EQ(0, fstat(fd2, &st2));
	EXPECT_EQ(st1.st_ino, st2.st_ino);
	ASSERT_EQ(0, buf_info(self->fd, fd2, &info));
	EXPECT_EQ(a.id, info.id);
	EXPECT_TRUE(info.info_flags & MMEDGE_BUF_INFO_OURS);
	close(fd2);

	vgem_close_handle(self->vgem, handle);
	ASSERT_EQ(0, buf_info(self->fd, a.fd, &info));
	EXPECT_EQ(0, info.nr_attachments);
	munmap(ours, len);
	close(a.fd);
}

/* We import vgem's dumb buffer: our view of it matches vgem's. */
TEST_F(vgem, import_theirs)
{
	struct drm_mode_create_dumb cd;
	struct mmedge_buf_import imp, imp2;
	struct mmedge_buf_info info;
	int dmabuf;

	ASSERT_EQ(0, vgem_create_dumb(self->vgem, 256, 128, &cd));
	ASSERT_EQ(0, drmPrimeHandleToFD(self->vgem, cd.handle,
					DRM_CLOEXEC | DRM_RDWR, &dmabuf));
	ASSERT_EQ(0, buf_import(self->fd, dmabuf, &imp));
	EXPECT_NE(0, imp.id);
	EXPECT_EQ(cd.size, imp.size);
	EXPECT_LT(0, imp.nr_segments);

	ASSERT_EQ(0, buf_info(self->fd, dmabuf, &info));
	EXPECT_TRUE(info.info_flags & MMEDGE_BUF_INFO_IMPORTED);
	EXPECT_FALSE(info.info_flags & MMEDGE_BUF_INFO_OURS);
	EXPECT_EQ(imp.id, info.id);
	EXPECT_EQ(cd.size, info.size);
	EXPECT_EQ(imp.nr_segments, info.nr_segments);
	EXPECT_LE(1, info.nr_attachments);
	EXPECT_EQ(0, info.cache);

	EXPECT_EQ(-EEXIST, buf_import(self->fd, dmabuf, &imp2));
	EXPECT_EQ(0, buf_release(self->fd, info.id));
	EXPECT_EQ(-ENOENT, buf_release(self->fd, info.id));
	/* Neither ours nor imported any more. */
	EXPECT_EQ(-EINVAL, buf_info(self->fd, dmabuf, &info));
	close(dmabuf);
	vgem_close_handle(self->vgem, cd.handle);
}

/* Closing the mmedge file ends its imports. */
TEST_F(vgem, import_ends_with_file)
{
	struct drm_mode_create_dumb cd;
	struct mmedge_buf_import imp;
	struct mmedge_buf_info info;
	int dmabuf, fd2;

	ASSERT_EQ(0, vgem_create_dumb(self->vgem, 64, 64, &cd));
	ASSERT_EQ(0, drmPrimeHandleToFD(self->vgem, cd.handle,
					DRM_CLOEXEC | DRM_RDWR, &dmabuf));
	fd2 = open_dev();
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, buf_import(fd2, dmabuf, &imp));
	ASSERT_EQ(0, buf_import(self->fd, dmabuf, &imp));
	ASSERT_EQ(0, buf_info(self->fd, dmabuf, &info));
	EXPECT_LE(2, info.nr_attachments);
	close(fd2);
	ASSERT_EQ(0, buf_info(self->fd, dmabuf, &info));
	EXPECT_EQ(1, info.nr_attachments);
	EXPECT_EQ(0, buf_release(self->fd, imp.id));
	close(dmabuf);
	vgem_close_handle(self->vgem, cd.handle);
}

/*
 * A write fence vgem attaches to our buffer is visible through our
 * dma-buf: its exported sync_file polls unsignalled until vgem signals.
 */
TEST_F(vgem, implicit_fence)
{
	struct drm_vgem_fence_attach attach;
	struct drm_vgem_fence_signal sig;
	struct dma_buf_export_sync_file exp;
	struct mmedge_buf_alloc a;
	struct pollfd pfd;
	uint32_t handle;

	ASSERT_EQ(0, buf_alloc(self->fd, SZ_4K * 16, 0, &a));
	ASSERT_EQ(0, drmPrimeFDToHandle(self->vgem, a.fd, &handle));

	/* No fence yet: an exported sync_file is already signalled. */
	memset(&exp, 0, sizeof(exp));
	exp.flags = DMA_BUF_SYNC_READ;
	exp.fd = -1;
	ASSERT_EQ(0, xioctl(a.fd, DMA_BUF_IOCTL_EXPORT_SYNC_FILE, &exp));
	pfd = (struct pollfd){ .fd = exp.fd, .events = POLLIN };
	EXPECT_EQ(1, poll(&pfd, 1, 0));
	close(exp.fd);

	memset(&attach, 0, sizeof(attach));
	attach.handle = handle;
	attach.flags = VGEM_FENCE_WRITE;
	ASSERT_EQ(0, xioctl(self->vgem, DRM_IOCTL_VGEM_FENCE_ATTACH, &attach));

	memset(&exp, 0, sizeof(exp));
	exp.flags = DMA_BUF_SYNC_READ;
	exp.fd = -1;
	ASSERT_EQ(0, xioctl(a.fd, DMA_BUF_IOCTL_EXPORT_SYNC_FILE, &exp));
	ASSERT_LE(0, exp.fd);
	pfd = (struct pollfd){ .fd = exp.fd, .events = POLLIN };
	EXPECT_EQ(0, poll(&pfd, 1, 0));
	/* A poll on the dma-buf itself waits for the writer too. */
	pfd = (struct pollfd){ .fd = a.fd, .events = POLLIN };
	EXPECT_EQ(0, poll(&pfd, 1, 0));

	memset(&sig, 0, sizeof(sig));
	sig.fence = attach.out_fence;
	ASSERT_EQ(0, xioctl(self->vgem, DRM_IOCTL_VGEM_FENCE_SIGNAL, &sig));

	pfd = (struct pollfd){ .fd = exp.fd, .events = POLLIN };
	EXPECT_EQ(1, poll(&pfd, 1, 1000));
	EXPECT_TRUE(pfd.revents & POLLIN);
	pfd = (struct pollfd){ .fd = a.fd, .events = POLLIN };
	EXPECT_EQ(1, poll(&pfd, 1, 1000));
	close(exp.fd);

	vgem_close_handle(self->vgem, handle);
	close(a.fd);
}

struct signal_later {
	int vgem;
	__u32 fence;
	unsigned int ms;
};

static void *signal_later_fn(void *arg)
{
	struct signal_later *sl = arg;
	struct drm_vgem_fence_signal sig = { .fence = sl->fence };

	usleep(sl->ms * 1000);
	xioctl(sl->vgem, DRM_IOCTL_VGEM_FENCE_SIGNAL, &sig);
	return NULL;
}

static uint64_t ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ULL + ts.tv_nsec / 1000000;
}

/* A ranged sync START waits for vgem's write fence; END does not. */
TEST_F(vgem, sync_start_waits_for_fence)
{
	struct drm_vgem_fence_attach attach;
	struct mmedge_buf_alloc a;
	struct mmedge_buf_sync s;
	struct signal_later sl;
	pthread_t thr;
	uint64_t t0, waited;
	uint32_t handle;

	ASSERT_EQ(0, buf_alloc(self->fd, SZ_1M, 0, &a));
	ASSERT_EQ(0, drmPrimeFDToHandle(self->vgem, a.fd, &handle));
	memset(&attach, 0, sizeof(attach));
	attach.handle = handle;
	attach.flags = VGEM_FENCE_WRITE;
	ASSERT_EQ(0, xioctl(self->vgem, DRM_IOCTL_VGEM_FENCE_ATTACH, &attach));

	/* END brackets never wait. */
	sync_req(&s, a.fd, MMEDGE_BUF_SYNC_END | MMEDGE_BUF_SYNC_READ, 0, SZ_4K);
	t0 = ms_now();
	EXPECT_EQ(0, xioctl(self->fd, MMEDGE_IOC_BUF_SYNC, &s));
	EXPECT_GT(300, ms_now() - t0);

	sl = (struct signal_later){ self->vgem, attach.out_fence, 500 };
	ASSERT_EQ(0, pthread_create(&thr, NULL, signal_later_fn, &sl));
	sync_req(&s, a.fd, MMEDGE_BUF_SYNC_START | MMEDGE_BUF_SYNC_READ, 0,
		 SZ_4K);
	t0 = ms_now();
	EXPECT_EQ(0, xioctl(self->fd, MMEDGE_IOC_BUF_SYNC, &s));
	waited = ms_now() - t0;
	pthread_join(thr, NULL);
	EXPECT_LE(400, waited);
	/* vgem fences time out by themselves after 10 s. */
	EXPECT_GT(9000, waited);

	vgem_close_handle(self->vgem, handle);
	close(a.fd);
}

static void on_alarm(int sig)
{
}

/* A signal interrupts the wait: -EINTR, and a retry after the fence works. */
TEST_F(vgem, sync_start_interrupted)
{
	struct drm_vgem_fence_attach attach;
	struct drm_vgem_fence_signal sig;
	struct sigaction sa;
	struct mmedge_buf_alloc a;
	struct mmedge_buf_sync s;
	struct itimerval it = { .it_value = { .tv_usec = 200000 } };
	uint32_t handle;
	int ret;

	ASSERT_EQ(0, buf_alloc(self->fd, SZ_1M, 0, &a));
	ASSERT_EQ(0, drmPrimeFDToHandle(self->vgem, a.fd, &handle));
	memset(&attach, 0, sizeof(attach));
	attach.handle = handle;
	attach.flags = VGEM_FENCE_WRITE;
	ASSERT_EQ(0, xioctl(self->vgem, DRM_IOCTL_VGEM_FENCE_ATTACH, &attach));

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;	/* no SA_RESTART */
	ASSERT_EQ(0, sigaction(SIGALRM, &sa, NULL));
	ASSERT_EQ(0, setitimer(ITIMER_REAL, &it, NULL));
	sync_req(&s, a.fd, MMEDGE_BUF_SYNC_START | MMEDGE_BUF_SYNC_READ, 0,
		 SZ_4K);
	ret = ioctl(self->fd, MMEDGE_IOC_BUF_SYNC, &s);
	EXPECT_EQ(-1, ret);
	EXPECT_EQ(EINTR, errno);

	memset(&sig, 0, sizeof(sig));
	sig.fence = attach.out_fence;
	ASSERT_EQ(0, xioctl(self->vgem, DRM_IOCTL_VGEM_FENCE_SIGNAL, &sig));
	EXPECT_EQ(0, xioctl(self->fd, MMEDGE_IOC_BUF_SYNC, &s));
	vgem_close_handle(self->vgem, handle);
	close(a.fd);
}

/*
 * Unbinding the device while buffers (SG and contiguous), an import and
 * a vgem attachment exist: the mmedge file fails with -ENODEV, the
 * buffers stay usable, everything is freed on close, and a new bind
 * works.
 */
TEST_F(vgem, unbind_with_buffers)
{
	struct mmedge_buf_alloc sg, ct;
	struct mmedge_buf_import imp;
	struct mmedge_buf_info info;
	struct mmedge_buf_sync s;
	uint32_t handle;
	void *p, *q;
	char pdev[64];
	int fd2;

	if (geteuid() != 0)
		SKIP(return, "needs root to unbind");
	ASSERT_EQ(0, buf_alloc(self->fd, SZ_1M, 0, &sg));
	ASSERT_EQ(0, buf_alloc(self->fd, SZ_1M, MMEDGE_BUF_CONTIG, &ct));
	ASSERT_EQ(0, buf_import(self->fd, sg.fd, &imp));
	ASSERT_EQ(0, drmPrimeFDToHandle(self->vgem, ct.fd, &handle));
	p = mmap(NULL, SZ_1M, PROT_READ | PROT_WRITE, MAP_SHARED, sg.fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	fill_pattern(p, SZ_1M, 9);

	ASSERT_EQ(0, dev0_pdev(pdev, sizeof(pdev)));
	ASSERT_EQ(0, write_str(PDRV_DIR "/unbind", pdev));
	EXPECT_EQ(-ENODEV, buf_info(self->fd, sg.fd, &info));
	sync_req(&s, sg.fd, MMEDGE_BUF_SYNC_START | MMEDGE_BUF_SYNC_RW, 0, SZ_4K);
	EXPECT_EQ(-ENODEV, xioctl(self->fd, MMEDGE_IOC_BUF_SYNC, &s));

	/* The buffers themselves still work. */
	EXPECT_EQ(-1, check_pattern(p, SZ_1M, 9));
	EXPECT_EQ(0, dmabuf_sync(sg.fd, DMA_BUF_SYNC_START | DMA_BUF_SYNC_RW));
	EXPECT_EQ(0, dmabuf_sync(sg.fd, DMA_BUF_SYNC_END | DMA_BUF_SYNC_RW));
	q = mmap(NULL, SZ_1M, PROT_READ | PROT_WRITE, MAP_SHARED, ct.fd, 0);
	ASSERT_NE(MAP_FAILED, q);
	fill_pattern(q, SZ_1M, 10);
	EXPECT_EQ(-1, check_pattern(q, SZ_1M, 10));
	munmap(q, SZ_1M);

	close(self->fd);
	self->fd = -1;
	munmap(p, SZ_1M);
	close(sg.fd);
	close(ct.fd);
	vgem_close_handle(self->vgem, handle);

	ASSERT_EQ(0, write_str(PDRV_DIR "/bind", pdev));
	fd2 = open_dev();
	ASSERT_LE(0, fd2);
	EXPECT_EQ(0, buf_alloc(fd2, SZ_4K, 0, &sg));
	close(sg.fd);
	close(fd2);
}

/* Ranged sync of a buffer vgem holds: proportional to the range. */
TEST_F(vgem, sync_with_vgem_attachment)
{
	struct mmedge_buf_alloc a;
	struct mmedge_buf_info info;
	struct mmedge_buf_sync s;
	__u64 small, big;
	uint32_t handle;

	ASSERT_EQ(0, buf_alloc(self->fd, SZ_4M, 0, &a));
	ASSERT_EQ(0, drmPrimeFDToHandle(self->vgem, a.fd, &handle));
	ASSERT_EQ(0, buf_info(self->fd, a.fd, &info));
	ASSERT_LE(1, info.nr_attachments);

	sync_req(&s, a.fd, MMEDGE_BUF_SYNC_START | MMEDGE_BUF_SYNC_RW, 0, SZ_4K);
	ASSERT_EQ(0, xioctl(self->fd, MMEDGE_IOC_BUF_SYNC, &s));
	small = s.synced;
	sync_req(&s, a.fd, MMEDGE_BUF_SYNC_END | MMEDGE_BUF_SYNC_RW, 0, SZ_4K);
	ASSERT_EQ(0, xioctl(self->fd, MMEDGE_IOC_BUF_SYNC, &s));

	sync_req(&s, a.fd, MMEDGE_BUF_SYNC_START | MMEDGE_BUF_SYNC_RW, 0, SZ_4M);
	ASSERT_EQ(0, xioctl(self->fd, MMEDGE_IOC_BUF_SYNC, &s));
	big = s.synced;
	sync_req(&s, a.fd, MMEDGE_BUF_SYNC_END | MMEDGE_BUF_SYNC_RW, 0, SZ_4M);
	ASSERT_EQ(0, xioctl(self->fd, MMEDGE_IOC_BUF_SYNC, &s));

	EXPECT_EQ(SZ_4K * info.nr_attachments, small);
	EXPECT_EQ(big / SZ_4M, small / SZ_4K)
		TH_LOG("4 KiB synced %llu, 4 MiB synced %llu",
		       (unsigned long long)small, (unsigned long long)big);

	vgem_close_handle(self->vgem, handle);
	close(a.fd);
}

/*
 * 7. Lifetime with vgem: the mmedge file and our fd go, vgem keeps the
 * buffer, and it stays usable.
 */
TEST_F(vgem, close_dev_while_vgem_holds)
{
	struct mmedge_buf_alloc a;
	struct mmedge_buf_info info;
	uint32_t handle;
	int fd2;
	void *p;

	ASSERT_EQ(0, buf_alloc(self->fd, SZ_1M, 0, &a));
	p = mmap(NULL, SZ_1M, PROT_READ | PROT_WRITE, MAP_SHARED, a.fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	fill_pattern(p, SZ_1M, 77);
	munmap(p, SZ_1M);
	ASSERT_EQ(0, drmPrimeFDToHandle(self->vgem, a.fd, &handle));
	close(a.fd);
	close(self->fd);
	self->fd = -1;

	ASSERT_EQ(0, drmPrimeHandleToFD(self->vgem, handle,
					DRM_CLOEXEC | DRM_RDWR, &fd2));
	p = mmap(NULL, SZ_1M, PROT_READ | PROT_WRITE, MAP_SHARED, fd2, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(0, dmabuf_sync(fd2, DMA_BUF_SYNC_START | DMA_BUF_SYNC_RW));
	EXPECT_EQ(-1, check_pattern(p, SZ_1M, 77));
	fill_pattern(p, SZ_1M, 78);
	EXPECT_EQ(0, dmabuf_sync(fd2, DMA_BUF_SYNC_END | DMA_BUF_SYNC_RW));
	munmap(p, SZ_1M);

	/* A new mmedge file still knows the buffer. */
	self->fd = open_dev();
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, buf_info(self->fd, fd2, &info));
	EXPECT_EQ(a.id, info.id);
	EXPECT_LE(1, info.nr_attachments);
	close(fd2);
	vgem_close_handle(self->vgem, handle);
}

/*
 * 4. V4L2: vivid captures into our buffers.
 *
 * The solid "100% White" test pattern with the on-screen text off makes
 * every pixel the same; our buffers are first filled with another byte.
 */
#define FILL_BYTE	0x5a
#define V4L2_NBUF	4

FIXTURE(v4l2) {
	int fd;
	int video;
	struct mmedge_caps caps;
	struct v4l2_format fmt;
	int osd_off;
	struct mmedge_buf_alloc bufs[V4L2_NBUF];
	void *maps[V4L2_NBUF];
	unsigned int nbuf;
};

FIXTURE_VARIANT(v4l2) {
	unsigned int allocator;	/* vivid's allocators= */
	__u32 flags;		/* our buffers */
};

FIXTURE_VARIANT_ADD(v4l2, vmalloc_sg) {
	.allocator = 0,
	.flags = MMEDGE_BUF_CACHE_CACHED,
};

FIXTURE_VARIANT_ADD(v4l2, vmalloc_sg_wc) {
	.allocator = 0,
	.flags = MMEDGE_BUF_CACHE_WC,
};

FIXTURE_VARIANT_ADD(v4l2, vmalloc_contig) {
	.allocator = 0,
	.flags = MMEDGE_BUF_CONTIG | MMEDGE_BUF_CACHE_CACHED,
};

FIXTURE_VARIANT_ADD(v4l2, dma_contig_contig) {
	.allocator = 1,
	.flags = MMEDGE_BUF_CONTIG | MMEDGE_BUF_CACHE_CACHED,
};

FIXTURE_VARIANT_ADD(v4l2, dma_contig_contig_wc) {
	.allocator = 1,
	.flags = MMEDGE_BUF_CONTIG | MMEDGE_BUF_CACHE_WC,
};

static int vivid_allocator(void)
{
	char buf[32];
	int fd = open("/sys/module/vivid/parameters/allocators", O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	return atoi(buf);
}

/* Loads vivid with one device and @allocator; 0 on success. */
static int vivid_reload(unsigned int allocator)
{
	char cmd[128];

	if (vivid_allocator() == (int)allocator)
		return 0;
	if (geteuid() != 0)
		return -EPERM;
	snprintf(cmd, sizeof(cmd),
		 "modprobe -r vivid 2>/dev/null; modprobe vivid n_devs=1 allocators=%u",
		 allocator);
	if (system(cmd) != 0)
		return -EIO;
	return vivid_allocator() == (int)allocator ? 0 : -EIO;
}

static int open_vivid_capture(void)
{
	struct v4l2_capability cap;
	char path[32];
	int i, fd;

	for (i = 0; i < 64; i++) {
		__u32 caps;

		snprintf(path, sizeof(path), "/dev/video%d", i);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		memset(&cap, 0, sizeof(cap));
		if (xioctl(fd, VIDIOC_QUERYCAP, &cap) == 0 &&
		    !strcmp((char *)cap.driver, "vivid")) {
			caps = (cap.capabilities & V4L2_CAP_DEVICE_CAPS) ?
			       cap.device_caps : cap.capabilities;
			if ((caps & V4L2_CAP_VIDEO_CAPTURE) &&
			    (caps & V4L2_CAP_STREAMING))
				return fd;
		}
		close(fd);
	}
	return -1;
}

/* Sets menu control @id to the item named @item; 0, or -errno. */
static int set_menu_ctrl(int fd, __u32 id, const char *item)
{
	struct v4l2_queryctrl qc = { .id = id };
	struct v4l2_querymenu qm;
	struct v4l2_control ctrl;
	int i, ret;

	ret = xioctl(fd, VIDIOC_QUERYCTRL, &qc);
	if (ret)
		return ret;
	for (i = qc.minimum; i <= qc.maximum; i++) {
		memset(&qm, 0, sizeof(qm));
		qm.id = id;
		qm.index = i;
		if (xioctl(fd, VIDIOC_QUERYMENU, &qm))
			continue;
		if (strcmp((char *)qm.name, item))
			continue;
		ctrl.id = id;
		ctrl.value = i;
		return xioctl(fd, VIDIOC_S_CTRL, &ctrl);
	}
	return -ENOENT;
}

/* Finds a control by name; its id, or 0. */
static __u32 find_ctrl(int fd, const char *name)
{
	struct v4l2_queryctrl qc;

	memset(&qc, 0, sizeof(qc));
	qc.id = V4L2_CTRL_FLAG_NEXT_CTRL;
	while (xioctl(fd, VIDIOC_QUERYCTRL, &qc) == 0) {
		if (!strcmp((char *)qc.name, name))
			return qc.id;
		qc.id |= V4L2_CTRL_FLAG_NEXT_CTRL;
	}
	return 0;
}

FIXTURE_SETUP(v4l2)
{
	const char *why;
	__u32 osd, pattern;
	int ret;

	self->video = -1;
	self->nbuf = 0;
	self->fd = open_dev();
	if (self->fd < 0 && errno == ENOENT)
		SKIP(return, "%s not present (is mmedge.ko loaded?)", DEVPATH);
	ASSERT_LE(0, self->fd);
	if (has_buffers(self->fd, &self->caps, &why))
		SKIP(return, "%s", why);
	if ((variant->flags & MMEDGE_BUF_CONTIG) &&
	    !(self->caps.caps & MMEDGE_CAP_CONTIG))
		SKIP(return, "no contiguous buffers (MMEDGE_CAP_CONTIG unset)");
	if (vivid_allocator() < 0)
		SKIP(return, "vivid not loaded (modprobe vivid n_devs=1)");
	ret = vivid_reload(variant->allocator);
	if (ret)
		SKIP(return, "cannot load vivid with allocators=%u (%d)",
		     variant->allocator, ret);
	self->video = open_vivid_capture();
	if (self->video < 0)
		SKIP(return, "no vivid capture node");

	memset(&self->fmt, 0, sizeof(self->fmt));
	self->fmt.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
	ASSERT_EQ(0, xioctl(self->video, VIDIOC_G_FMT, &self->fmt));
	self->fmt.fmt.pix.width = 320;
	self->fmt.fmt.pix.height = 240;
	self->fmt.fmt.pix.pixelformat = V4L2_PIX_FMT_YUYV;
	self->fmt.fmt.pix.field = V4L2_FIELD_NONE;
	ASSERT_EQ(0, xioctl(self->video, VIDIOC_S_FMT, &self->fmt));
	if (self->fmt.fmt.pix.pixelformat != V4L2_PIX_FMT_YUYV)
		SKIP(return, "vivid gave no YUYV format");

	/* vivid has its own "Test Pattern"; sensors use the standard one. */
	pattern = find_ctrl(self->video, "Test Pattern");
	if (!pattern)
		pattern = V4L2_CID_TEST_PATTERN;
	ASSERT_EQ(0, set_menu_ctrl(self->video, pattern, "100% White"));
	osd = find_ctrl(self->video, "OSD Text Mode");
	self->osd_off = osd && set_menu_ctrl(self->video, osd, "None") == 0;
}

FIXTURE_TEARDOWN(v4l2)
{
	unsigned int i;

	if (self->video >= 0) {
		struct v4l2_requestbuffers rb = {
			.type = V4L2_BUF_TYPE_VIDEO_CAPTURE,
			.memory = V4L2_MEMORY_DMABUF,
		};
		int type = V4L2_BUF_TYPE_VIDEO_CAPTURE;

		xioctl(self->video, VIDIOC_STREAMOFF, &type);
		xioctl(self->video, VIDIOC_REQBUFS, &rb);
		close(self->video);
	}
	for (i = 0; i < self->nbuf; i++) {
		if (self->maps[i])
			munmap(self->maps[i], self->bufs[i].alloc_size);
		close(self->bufs[i].fd);
	}
	if (self->fd >= 0)
		close(self->fd);
}

TEST_F_TIMEOUT(v4l2, capture, 120)
{
	struct v4l2_pix_format *pix = &self->fmt.fmt.pix;
	struct v4l2_requestbuffers rb;
	struct v4l2_buffer vb;
	unsigned int i, frames, row;
	int type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
	const uint8_t *px;
	uint8_t mp[4];

	TH_LOG("vivid allocator %u, %ux%u YUYV, bytesperline %u, sizeimage %u, OSD %s",
	       variant->allocator, pix->width, pix->height, pix->bytesperline,
	       pix->sizeimage, self->osd_off ? "off" : "on");

	memset(&rb, 0, sizeof(rb));
	rb.count = 3;
	rb.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
	rb.memory = V4L2_MEMORY_DMABUF;
	ASSERT_EQ(0, xioctl(self->video, VIDIOC_REQBUFS, &rb));
	ASSERT_LE(2, rb.count);
	ASSERT_GE(V4L2_NBUF, rb.count);

	for (i = 0; i < rb.count; i++) {
		struct mmedge_buf_alloc *a = &self->bufs[i];

		ASSERT_EQ(0, buf_alloc(self->fd, pix->sizeimage, variant->flags,
				       a));
		self->nbuf++;
		self->maps[i] = mmap(NULL, a->alloc_size,
				     PROT_READ | PROT_WRITE, MAP_SHARED,
				     a->fd, 0);
		ASSERT_NE(MAP_FAILED, self->maps[i]) self->maps[i] = NULL;
		EXPECT_EQ(0, dmabuf_sync(a->fd, DMA_BUF_SYNC_START |
						DMA_BUF_SYNC_WRITE));
		memset(self->maps[i], FILL_BYTE, a->alloc_size);
		EXPECT_EQ(0, dmabuf_sync(a->fd, DMA_BUF_SYNC_END |
						DMA_BUF_SYNC_WRITE));

		memset(&vb, 0, sizeof(vb));
		vb.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
		vb.memory = V4L2_MEMORY_DMABUF;
		vb.index = i;
		vb.m.fd = a->fd;
		vb.length = a->alloc_size;
		ASSERT_EQ(0, xioctl(self->video, VIDIOC_QBUF, &vb))
			TH_LOG("QBUF %u", i);
	}
	ASSERT_EQ(0, xioctl(self->video, VIDIOC_STREAMON, &type));

	for (frames = 0; frames < 4; frames++) {
		struct mmedge_buf_info info;
		struct pollfd pfd = { .fd = self->video, .events = POLLIN };
		ssize_t bad;

		ASSERT_EQ(1, poll(&pfd, 1, 30000)) TH_LOG("frame %u", frames);
		memset(&vb, 0, sizeof(vb));
		vb.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
		vb.memory = V4L2_MEMORY_DMABUF;
		ASSERT_EQ(0, xioctl(self->video, VIDIOC_DQBUF, &vb));
		ASSERT_GT(rb.count, vb.index);
		EXPECT_FALSE(vb.flags & V4L2_BUF_FLAG_ERROR);
		EXPECT_EQ(pix->sizeimage, vb.bytesused);

		/* Attached while queued to vivid (dma-contig maps it). */
		if (variant->allocator == 1) {
			ASSERT_EQ(0, buf_info(self->fd, self->bufs[vb.index].fd,
					      &info));
			EXPECT_LE(1, info.nr_attachments);
		}

		EXPECT_EQ(0, dmabuf_sync(self->bufs[vb.index].fd,
					 DMA_BUF_SYNC_START | DMA_BUF_SYNC_READ));
		px = self->maps[vb.index];
		memcpy(mp, px, 4);
		/* 100% white in limited-range YUYV: Y 235, Cb = Cr = 128. */
		EXPECT_NE(FILL_BYTE, mp[0]);
		EXPECT_LE(0xd0, mp[0]);
		EXPECT_EQ(mp[0], mp[2]);
		EXPECT_GE(4, abs(mp[1] - 0x80));
		EXPECT_GE(4, abs(mp[3] - 0x80));
		/* Without the text overlay off, check the lower half only. */
		for (row = self->osd_off ? 0 : pix->height / 2;
		     row < pix->height; row++) {
			const uint8_t *r = px + (size_t)row * pix->bytesperline;
			unsigned int x;

			for (x = 0; x < pix->width * 2; x += 4)
				if (memcmp(r + x, mp, 4))
					break;
			EXPECT_EQ(pix->width * 2, x)
				TH_LOG("frame %u row %u x %u: %02x %02x %02x %02x",
				       frames, row, x, r[x], r[x + 1], r[x + 2],
				       r[x + 3]);
			if (x != pix->width * 2)
				break;
		}
		/* vivid wrote nothing past the image. */
		bad = check_bytes(px + pix->sizeimage,
				  self->bufs[vb.index].alloc_size - pix->sizeimage,
				  FILL_BYTE);
		EXPECT_EQ(-1, bad);
		EXPECT_EQ(0, dmabuf_sync(self->bufs[vb.index].fd,
					 DMA_BUF_SYNC_END | DMA_BUF_SYNC_READ));

		/* Refill and requeue. */
		memset(self->maps[vb.index], FILL_BYTE,
		       self->bufs[vb.index].alloc_size);
		vb.m.fd = self->bufs[vb.index].fd;
		vb.length = self->bufs[vb.index].alloc_size;
		vb.bytesused = 0;
		ASSERT_EQ(0, xioctl(self->video, VIDIOC_QBUF, &vb));
	}
	EXPECT_EQ(0, xioctl(self->video, VIDIOC_STREAMOFF, &type));
}

/* A buffer smaller than the image is refused at QBUF. */
TEST_F(v4l2, buffer_too_small)
{
	struct v4l2_requestbuffers rb;
	struct v4l2_buffer vb;
	struct mmedge_buf_alloc *a = &self->bufs[0];

	memset(&rb, 0, sizeof(rb));
	rb.count = 3;
	rb.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
	rb.memory = V4L2_MEMORY_DMABUF;
	ASSERT_EQ(0, xioctl(self->video, VIDIOC_REQBUFS, &rb));
	ASSERT_EQ(0, buf_alloc(self->fd, SZ_4K, variant->flags, a));
	self->nbuf = 1;
	self->maps[0] = NULL;
	memset(&vb, 0, sizeof(vb));
	vb.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
	vb.memory = V4L2_MEMORY_DMABUF;
	vb.index = 0;
	vb.m.fd = a->fd;
	vb.length = a->alloc_size;
	EXPECT_EQ(-EINVAL, xioctl(self->video, VIDIOC_QBUF, &vb));
}

/*
 * The reverse direction with V4L2: a buffer vivid allocated (MMAP) and
 * exported with VIDIOC_EXPBUF is imported into mmedge, attached to and
 * mapped for the mmedge device, and ends with its release.
 */
TEST(v4l2_expbuf_import)
{
	struct v4l2_requestbuffers rb;
	struct v4l2_exportbuffer eb;
	struct mmedge_buf_import imp;
	struct mmedge_buf_info info;
	struct mmedge_buf_release rel;
	struct v4l2_format fmt;
	int fd, video;

	fd = open("/dev/mmedge0", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		SKIP(return, "/dev/mmedge0 not present");
	video = open_vivid_capture();
	if (video < 0) {
		close(fd);
		SKIP(return, "no vivid capture device");
	}
	memset(&fmt, 0, sizeof(fmt));
	fmt.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
	ASSERT_EQ(0, xioctl(video, VIDIOC_G_FMT, &fmt));

	memset(&rb, 0, sizeof(rb));
	rb.count = 2;
	rb.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
	rb.memory = V4L2_MEMORY_MMAP;
	ASSERT_EQ(0, xioctl(video, VIDIOC_REQBUFS, &rb));
	memset(&eb, 0, sizeof(eb));
	eb.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
	eb.index = 0;
	eb.flags = O_RDWR | O_CLOEXEC;
	ASSERT_EQ(0, xioctl(video, VIDIOC_EXPBUF, &eb));

	ASSERT_EQ(0, buf_import(fd, eb.fd, &imp));
	EXPECT_NE(0, imp.id);
	EXPECT_LE(fmt.fmt.pix.sizeimage, imp.size);
	EXPECT_LT(0, imp.nr_segments);

	memset(&info, 0, sizeof(info));
	info.fd = eb.fd;
	ASSERT_EQ(0, xioctl(fd, MMEDGE_IOC_BUF_INFO, &info));
	EXPECT_TRUE(info.info_flags & MMEDGE_BUF_INFO_IMPORTED);
	EXPECT_FALSE(info.info_flags & MMEDGE_BUF_INFO_OURS);
	EXPECT_EQ(imp.id, info.id);
	EXPECT_LE(1, info.nr_attachments);

	/* A second import of the same V4L2 buffer into this file. */
	EXPECT_EQ(-EEXIST, buf_import(fd, eb.fd, &imp));

	memset(&rel, 0, sizeof(rel));
	rel.id = info.id;
	EXPECT_EQ(0, xioctl(fd, MMEDGE_IOC_BUF_RELEASE, &rel));
	memset(&info, 0, sizeof(info));
	info.fd = eb.fd;
	EXPECT_EQ(-EINVAL, xioctl(fd, MMEDGE_IOC_BUF_INFO, &info));

	close(eb.fd);
	memset(&rb, 0, sizeof(rb));
	rb.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
	rb.memory = V4L2_MEMORY_MMAP;
	EXPECT_EQ(0, xioctl(video, VIDIOC_REQBUFS, &rb));
	close(video);
	close(fd);
}

/*
 * 7. Lifetime.
 */

/* The mapping outlives the dma-buf fd and the mmedge file. */
TEST_F(buf, close_dev_while_mapped)
{
	struct mmedge_buf_alloc a;
	size_t len = SZ_1M;
	void *p;

	ASSERT_EQ(0, buf_alloc(self->fd, len, 0, &a));
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, a.fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	fill_pattern(p, len, 5);
	close(a.fd);
	close(self->fd);
	self->fd = -1;

	EXPECT_EQ(-1, check_pattern(p, len, 5));
	fill_pattern(p, len, 6);
	EXPECT_EQ(-1, check_pattern(p, len, 6));
	EXPECT_EQ(0, munmap(p, len));
}

/* The dma-buf fd outlives the mmedge file: sync and mmap still work. */
TEST_F(buf, close_dev_keep_fd)
{
	struct mmedge_buf_alloc a;
	struct mmedge_buf_info info;
	void *p;
	int fd2;

	ASSERT_EQ(0, buf_alloc(self->fd, SZ_4K, 0, &a));
	close(self->fd);
	self->fd = -1;
	EXPECT_EQ(0, dmabuf_sync(a.fd, DMA_BUF_SYNC_START | DMA_BUF_SYNC_RW));
	p = mmap(NULL, SZ_4K, PROT_READ | PROT_WRITE, MAP_SHARED, a.fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	memset(p, 0xa5, SZ_4K);
	EXPECT_EQ(0, dmabuf_sync(a.fd, DMA_BUF_SYNC_END | DMA_BUF_SYNC_RW));
	munmap(p, SZ_4K);
	fd2 = open_dev();
	ASSERT_LE(0, fd2);
	EXPECT_EQ(0, buf_info(fd2, a.fd, &info));
	EXPECT_EQ(a.id, info.id);
	close(fd2);
	close(a.fd);
}

/* The DMA_BUF ioctls on our fd: bad sync flags are refused. */
TEST_F(buf, dmabuf_sync_bad_flags)
{
	struct mmedge_buf_alloc a;

	ASSERT_EQ(0, buf_alloc(self->fd, SZ_4K, 0, &a));
	EXPECT_TRUE(is_dmabuf(a.fd));
	EXPECT_EQ(-EINVAL, dmabuf_sync(a.fd, DMA_BUF_SYNC_START | (1 << 5)));
	close(a.fd);
}

/*
 * The counters follow allocations and imports (mem_used counts an
 * import's charge), back to where they were.
 */
TEST_F(buf, counters_zero_after_release)
{
	struct mmedge_buf_alloc a, b;
	struct mmedge_buf_import imp;
	struct buf_counters before, during, after;

	if (read_counters(&before))
		SKIP(return, "no %s", STATS_DIR);
	ASSERT_EQ(0, buf_alloc(self->fd, SZ_1M, 0, &a));
	ASSERT_EQ(0, buf_alloc(self->fd, SZ_4K, MMEDGE_BUF_CACHE_WC, &b));
	ASSERT_EQ(0, buf_import(self->fd, b.fd, &imp));
	ASSERT_EQ(0, read_counters(&during));
	EXPECT_EQ(before.buffers + 2, during.buffers);
	EXPECT_EQ(before.buffer_bytes + SZ_1M + SZ_4K, during.buffer_bytes);
	EXPECT_EQ(before.imports + 1, during.imports);
	/* An import of one segment is charged a page and a page of table. */
	EXPECT_EQ(1, imp.nr_segments);
	EXPECT_EQ(before.mem_used + SZ_1M + SZ_4K + 2 * page_size(),
		  during.mem_used);
	close(a.fd);
	close(b.fd);
	/* The import holds b; closing the file ends the import and frees it. */
	ASSERT_EQ(0, read_counters(&during));
	EXPECT_EQ(before.buffers + 1, during.buffers);
	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, read_counters(&after));
	EXPECT_EQ(before.buffers, after.buffers);
	EXPECT_EQ(before.buffer_bytes, after.buffer_bytes);
	EXPECT_EQ(before.imports, after.imports);
	EXPECT_EQ(before.mem_used, after.mem_used);
}

/*
 * A buffer holds the module, even after the mmedge file is closed; once
 * the last reference (here a mapping) is gone the module unloads, and
 * loads again.
 */
TEST(unload_while_buffer)
{
	const char *ko = getenv("MMEDGE_KO");
	struct mmedge_caps caps;
	struct mmedge_buf_alloc a;
	const char *why;
	void *p;
	int fd, ret;

	if (!ko || geteuid() != 0)
		SKIP(return, "needs root and MMEDGE_KO=<path to mmedge.ko>");
	fd = open_dev();
	if (fd < 0)
		SKIP(return, "%s not present", DEVPATH);
	if (has_buffers(fd, &caps, &why)) {
		close(fd);
		SKIP(return, "%s", why);
	}
	ASSERT_EQ(0, buf_alloc(fd, SZ_1M, 0, &a));
	close(fd);

	ret = mod_delete("mmedge");
	EXPECT_TRUE(ret == -EWOULDBLOCK || ret == -EBUSY) TH_LOG("%d", ret);
	if (ret == 0)
		goto reload;

	p = mmap(NULL, SZ_1M, PROT_READ | PROT_WRITE, MAP_SHARED, a.fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	close(a.fd);
	ret = mod_delete("mmedge");
	EXPECT_TRUE(ret == -EWOULDBLOCK || ret == -EBUSY) TH_LOG("%d", ret);
	if (ret == 0)
		goto reload;
	memset(p, 1, SZ_1M);
	EXPECT_EQ(0, munmap(p, SZ_1M));

	ret = mod_delete("mmedge");
	EXPECT_EQ(0, ret);
	EXPECT_EQ(-1, access(DEVPATH, F_OK));
reload:
	ASSERT_EQ(0, mod_load(ko));
	fd = open_dev();
	ASSERT_LE(0, fd);
	close(fd);
}

/*
 * Last (fixtures run in the order they are defined): every buffer and
 * import the tests above created is gone.
 */
FIXTURE(final) {
	int unused;
};

FIXTURE_SETUP(final)
{
}

FIXTURE_TEARDOWN(final)
{
}

TEST_F(final, counters_idle)
{
	struct buf_counters c;

	if (read_counters(&c))
		SKIP(return, "no %s", STATS_DIR);
	EXPECT_EQ(0, c.buffers);
	EXPECT_EQ(0, c.buffer_bytes);
	EXPECT_EQ(0, c.imports);
	EXPECT_EQ(0, c.mem_used);
}

TEST_HARNESS_MAIN

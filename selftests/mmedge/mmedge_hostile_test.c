// SPDX-License-Identifier: GPL-2.0
/*
 * Hostile kselftests for mmedge: one regression test per defect of the
 * kernel-hardening review, and lifetime races. Each test names the
 * defect it covers and expects the fixed behaviour:
 *
 *  fence_after_close        1: a fence outlives the channel and the file
 *                           (no freed lock) and holds the module.
 *  wc_alloc_over_cap        2: a refused write-combined allocation.
 *  cap_overflow             3: rate caps above the bus maximum refused.
 *  create_destroy_race      4: CHAN_CREATE's reply (and its netlink
 *                           event) against a racing CHAN_DESTROY of the
 *                           predictable id.
 *  ranged_sync_segments     5: BUF_SYNC ranges across blocks of a buffer
 *  self_import_sync            another device (vgem) has mapped, and of
 *                           buffers of every cache mode mmedge imported.
 *  write_waits_for_fences   6: QBUF of a buffer the channel writes waits
 *  write_fence_timeout         for the buffer's fences (up to 2 s, then
 *  fence_bounded               -ETIMEDOUT); every out-fence signals.
 *  qbuf_readonly_dmabuf     8: capture/copy into an O_RDONLY dma-buf.
 *  unbind_live_buffers      9: unbind with buffers, fences, mappings and
 *                           an importer alive.
 *  unprivileged             10: ownership and per-file bounds for a user
 *                           that dropped to uid 65534.
 *  import_seg_limits        11: importers' DMA segment limits (the debug
 *                           kernel's DMA-API debug checks each mapping).
 *  qbuf_emfile_order        12: QBUF failing with EMFILE publishes no
 *                           fence; fences signal in seqno order.
 *  import_sizes             13: imports of 4 KiB to 64 MiB within the
 *                           hub's DMA limits (issue 39).
 *  putback_new_chan         14: a frame put back after a faulting DQBUF
 *                           copy never reaches a channel created after
 *                           its own was destroyed (issue 32.1).
 *  import_charged           15: imports charged to the memory caps (32.2).
 *  sync_wait_unlocked       16: BUF_SYNC START waiting for a fence holds
 *                           no lock unbind or other files need (32.3).
 *  qbuf_wait_unlocked       16b: so does a QBUF waiting for a buffer's
 *                           earlier fences (32.3).
 *  uid_limits               17: per-user channel and memory limits (32.4).
 *  engine_rt_observable     18: segments moved under SCHED_FIFO counted,
 *                           with engine_rt and only with it (32.5).
 *  close_with_live_sync_files, vgem_holds_across_rmmod,
 *  vgem_holds_across_unbind, mmap_after_close, fork_with_buffers:
 *                           lifetime races.
 *
 * Needs mmedge.ko with a virtual instance (/dev/mmedge0); root for the
 * module, unbind and privilege tests (MMEDGE_KO=<path> lets a test load
 * the module again if it went); vgem for the importer tests. A test
 * whose capability is missing SKIPs and says why.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sys/socket.h>

#include <linux/dma-buf.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/sync_file.h>
#include <linux/userfaultfd.h>
#include <linux/mmedge.h>

#include <xf86drm.h>

#include "../kselftest_harness.h"
#include "mmedge_util.h"
#include "mmedge_hostile.h"

#define SZ_4K		4096UL
#define SZ_64K		(64UL << 10)
#define SZ_1M		(1UL << 20)
#define STATS		"/sys/class/mmedge/mmedge0/stats/"
#define BUS_MAX_BW	(100ULL * 1000 * 1000 * 1000)

/* Pattern helpers: byte i of a buffer tagged @tag. */
static inline uint8_t pat(size_t i, unsigned int tag)
{
	return (uint8_t)(i * 131 + (i >> 12) + tag);
}

static void fill(uint8_t *p, size_t len, unsigned int tag)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = pat(i, tag);
}

/* -1 if intact, else the first bad offset. */
static long check(const uint8_t *p, size_t len, unsigned int tag)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != pat(i, tag))
			return (long)i;
	return -1;
}

static long long module_refcnt(void)
{
	long long v = -1;

	if (read_ll("/sys/module/mmedge/refcnt", &v))
		return -1;
	return v;
}

/* Waits up to @ms for the module's reference count to fall to @want. */
static long long wait_refcnt(long long want, int ms)
{
	long long v = module_refcnt();

	for (; v > want && ms > 0; ms -= 20) {
		sleep_ms(20);
		v = module_refcnt();
	}
	return v;
}

static int vgem_dumb(int vgem, size_t size, __u32 *handle)
{
	struct drm_mode_create_dumb cd;
	int ret;

	memset(&cd, 0, sizeof(cd));
	cd.width = 1024;
	cd.bpp = 32;
	cd.height = (size + 4095) / 4096;
	ret = xioctl(vgem, DRM_IOCTL_MODE_CREATE_DUMB, &cd);
	if (!ret)
		*handle = cd.handle;
	return ret;
}

static int vgem_fence_attach(int vgem, __u32 handle, __u32 flags,
			     __u32 *fence)
{
	struct drm_vgem_fence_attach a = { .handle = handle, .flags = flags };
	int ret = xioctl(vgem, DRM_IOCTL_VGEM_FENCE_ATTACH, &a);

	if (!ret)
		*fence = a.out_fence;
	return ret;
}

static int vgem_fence_signal(int vgem, __u32 fence)
{
	struct drm_vgem_fence_signal s = { .fence = fence };

	return xioctl(vgem, DRM_IOCTL_VGEM_FENCE_SIGNAL, &s);
}

static int buf_import(int dev, int fd, struct mmedge_buf_import *imp)
{
	memset(imp, 0, sizeof(*imp));
	imp->fd = fd;
	return xioctl(dev, MMEDGE_IOC_BUF_IMPORT, imp);
}

static int buf_sync(int dev, int fd, __u32 flags, __u64 off, __u64 len,
		    __u64 *synced)
{
	struct mmedge_buf_sync s = {
		.fd = fd, .flags = flags, .offset = off, .len = len,
	};
	int ret = xioctl(dev, MMEDGE_IOC_BUF_SYNC, &s);

	if (synced)
		*synced = s.synced;
	return ret;
}

/* @n buffers sized for capture channel @c, in @buf; 0 or -errno. */
static int cap_bufs(int dev, const struct mmedge_chan_create *c, int n,
		    int *buf)
{
	int i;

	for (i = 0; i < n; i++) {
		buf[i] = buf_new(dev, cap_buf_size(c), 0, O_RDWR | O_CLOEXEC);
		if (buf[i] < 0)
			return buf[i];
	}
	return 0;
}

/* QBUF of @buf on capture channel @ch with an out-fence in *@fence. */
static int qbuf_fenced(int dev, __u32 ch, int buf, __u64 cookie, int *fence)
{
	return qbuf_full(dev, ch, buf, MMEDGE_QBUF_FENCE, 0, 0, cookie, fence);
}

/*
 * MMEDGE_HOSTILE_TESTS="name,name": run only those (a test that can take
 * a broken module down runs alone that way); the others SKIP.
 */
static bool test_selected(const char *name)
{
	const char *list = getenv("MMEDGE_HOSTILE_TESTS");
	size_t n = strlen(name);
	const char *p;

	if (!list || !*list)
		return true;
	for (p = list; (p = strstr(p, name)); p += n)
		if ((p == list || p[-1] == ',') && (!p[n] || p[n] == ','))
			return true;
	return false;
}

/* The kselftest harness of 6.1 runs the test after a SKIP in setup. */
#define BEGIN() do { \
	if (_metadata->skip || self->dev < 0) \
		return; \
} while (0)

FIXTURE(hostile) {
	int dev;
	int vgem;
	__u64 caps;
	char pdev[64];
	bool unbound;
	char file_limit[32];
	/* Module parameters set_param() changed, restored at teardown. */
	int nparams;
	char pname[4][32];
	char pval[4][32];
};

FIXTURE_SETUP(hostile)
{
	struct mmedge_caps caps;
	const char *why;

	self->dev = -1;
	self->vgem = -1;
	self->unbound = false;
	self->file_limit[0] = 0;
	self->nparams = 0;
	self->pdev[0] = 0;
	if (!test_selected(_metadata->name))
		SKIP(return, "not in MMEDGE_HOSTILE_TESTS");
	if (geteuid() == 0 && mod_ensure_loaded())
		SKIP(return, "mmedge not loaded and no MMEDGE_KO to load");
	self->dev = open_dev();
	if (self->dev < 0)
		SKIP(return, "%s: %s", DEVPATH, strerror(errno));
	if (has_channels(self->dev, &why))
		SKIP(return, "%s", why);
	ASSERT_EQ(0, query_caps(self->dev, &caps));
	self->caps = caps.caps;
	self->vgem = open_vgem();
}

FIXTURE_TEARDOWN(hostile)
{
	if (self->unbound)
		write_str(PDRV_DIR "/bind", self->pdev);
	if (self->file_limit[0])
		write_str(MOD_PARAMS "file_mem_limit_mb", self->file_limit);
	while (self->nparams > 0) {
		char path[96];

		self->nparams--;
		snprintf(path, sizeof(path), MOD_PARAMS "%s",
			 self->pname[self->nparams]);
		write_str(path, self->pval[self->nparams]);
	}
	if (self->dev >= 0)
		close(self->dev);
	if (self->vgem >= 0)
		close(self->vgem);
	if (geteuid() == 0)
		mod_ensure_loaded();
}

/* Set module parameter @name to @val; the teardown puts the old back. */
static int set_param(FIXTURE_DATA(hostile) *self, const char *name,
		     const char *val)
{
	char path[96];
	int i = self->nparams, ret;

	if (i >= 4)
		return -ENOSPC;
	snprintf(path, sizeof(path), MOD_PARAMS "%s", name);
	ret = read_str(path, self->pval[i], sizeof(self->pval[i]));
	if (ret)
		return ret;
	snprintf(self->pname[i], sizeof(self->pname[i]), "%s", name);
	self->nparams++;
	return write_str(path, val);
}

#define NEED_ROOT(what) do { \
	if (geteuid() != 0) \
		SKIP(return, "needs root (%s)", what); \
} while (0)

#define NEED_VGEM() do { \
	if (self->vgem < 0) \
		SKIP(return, "no vgem card (modprobe vgem)"); \
} while (0)

/*
 * 1. A fence outlives its channel and file: after the device fd closed,
 * SYNC_IOC_FILE_INFO on the fence fd (which takes the fence's lock)
 * works and reports it signalled; the fence keeps the module (its ops
 * live in it) until the fence fd closes.
 */
TEST_F_TIMEOUT(hostile, fence_after_close, 60)
{
	struct mmedge_chan_create c;
	struct fence_desc d;
	long long ref0;
	int ch, buf, fence, ret;

	BEGIN();

	NEED_ROOT("delete_module");
	close(self->dev);
	ref0 = module_refcnt();
	self->dev = open_dev();
	ASSERT_LE(0, self->dev);
	ch = cam_chan(self->dev, 64, 64, 30, 1, &c);
	ASSERT_LT(0, ch);
	buf = buf_new(self->dev, cap_buf_size(&c), 0, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, buf);
	ASSERT_EQ(0, qbuf_fenced(self->dev, ch, buf, 1, &fence));
	ASSERT_LE(0, fence);

	/* The channel, the file and the buffer go; the fence stays. */
	close(self->dev);
	self->dev = -1;
	close(buf);

	ASSERT_EQ(0, fence_query(fence, &d));
	EXPECT_NE(0, d.status);
	EXPECT_EQ(1, poll_in(fence, 1000));
	ASSERT_EQ(0, fence_query(fence, &d));
	EXPECT_TRUE(d.status == 1 || d.status < 0);

	ret = mod_delete("mmedge");
	if (ret == 0) {
		/* Unloaded under a live fence: its ops point into freed
		 * module text. Load it again for the other tests; closing
		 * the fence fd may oops now.
		 */
		mod_ensure_loaded();
		ASSERT_TRUE(0) TH_LOG("module unloaded while a fence lives");
	}
	EXPECT_TRUE(mod_busy_errno(ret)) TH_LOG("delete_module: %d", ret);
	close(fence);
	/* The fence's hold on the module ends with it. */
	if (ref0 >= 0)
		EXPECT_EQ(ref0, wait_refcnt(ref0, 2000));
}

/*
 * 2. A write-combined allocation refused by the per-file cap fails
 * cleanly (no page attribute change on pages never allocated), charges
 * nothing, and the file still allocates.
 */
TEST_F_TIMEOUT(hostile, wc_alloc_over_cap, 180)
{
	struct mmedge_caps caps;
	long long used0 = 0, used1 = 0;
	int a, b, c;

	BEGIN();

	ASSERT_EQ(0, query_caps(self->dev, &caps));
	if (caps.max_buffer_size < 200 * SZ_1M ||
	    caps.max_buffer_size >= 300 * SZ_1M)
		SKIP(return, "per-file cap %llu MiB; the test needs 200..299",
		     (unsigned long long)caps.max_buffer_size >> 20);
	ASSERT_EQ(0, read_ll(STATS "mem_used", &used0));
	a = buf_new(self->dev, 200 * SZ_1M, MMEDGE_BUF_CACHE_WC,
		    O_RDWR | O_CLOEXEC);
	if (a == -ENOMEM)
		SKIP(return, "no 200 MiB for the first buffer");
	ASSERT_LE(0, a);
	b = buf_new(self->dev, 100 * SZ_1M, MMEDGE_BUF_CACHE_WC,
		    O_RDWR | O_CLOEXEC);
	EXPECT_EQ(-ENOMEM, b);
	if (b >= 0)
		close(b);
	c = buf_new(self->dev, SZ_4K, MMEDGE_BUF_CACHE_WC, O_RDWR | O_CLOEXEC);
	EXPECT_LE(0, c);
	if (c >= 0)
		close(c);
	close(a);
	ASSERT_EQ(0, read_ll(STATS "mem_used", &used1));
	EXPECT_EQ(used0, used1);
}

/*
 * 3. Rate caps above the bus maximum (100 GB/s) are refused by
 * CHAN_CREATE and CHAN_CONFIG; a channel at the maximum streams.
 */
TEST_F_TIMEOUT(hostile, cap_overflow, 60)
{
	static const __u64 bad[] = { UINT64_MAX, 1ULL << 63, BUS_MAX_BW + 1 };
	struct mmedge_chan_create c;
	struct mmedge_dqbuf d;
	unsigned int i;
	int ch, buf, ret;

	BEGIN();

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&c, 0, sizeof(c));
		c.dir = MMEDGE_CHAN_CAPTURE;
		c.src = cam_src(64, 64, 30, 1);
		c.cap = bad[i];
		ret = xioctl(self->dev, MMEDGE_IOC_CHAN_CREATE, &c);
		EXPECT_EQ(-EINVAL, ret) TH_LOG("create cap %llu",
					       (unsigned long long)bad[i]);
		if (!ret)
			chan_destroy(self->dev, c.id);
	}

	ch = cam_chan(self->dev, 64, 64, 30, 1, &c);
	ASSERT_LT(0, ch);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		EXPECT_EQ(-EINVAL, chan_config(self->dev, ch,
					       MMEDGE_CHAN_SET_CAP, 0, 0,
					       bad[i], NULL))
			TH_LOG("config cap %llu", (unsigned long long)bad[i]);
	ASSERT_EQ(0, chan_config(self->dev, ch, MMEDGE_CHAN_SET_CAP, 0, 0,
				 BUS_MAX_BW, NULL));

	buf = buf_new(self->dev, cap_buf_size(&c), 0, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, buf);
	/* Two frames, one after the cap's bucket was idle over a second. */
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, qbuf_full(self->dev, ch, buf, 0, 0, 0, i, NULL));
		ASSERT_EQ(0, dqbuf(self->dev, ch, 0, 3000, &d));
		EXPECT_EQ(0, d.frame_flags & MMEDGE_FRAME_ERROR);
		if (!i)
			sleep_ms(1200);
	}
	close(buf);
	EXPECT_EQ(0, chan_destroy(self->dev, ch));
}

/*
 * 4. CHAN_CREATE's reply is the created channel's, even while sibling
 * threads destroy every (predictable) id of the file.
 */
struct race {
	int dev;
	atomic_int stop;
	atomic_int creates;
	atomic_int destroys;
	atomic_int bad;
	atomic_int other_err;
	int tid;
};

struct race_arg {
	struct race *r;
	int tid;
};

static void *race_creator(void *p)
{
	struct race_arg *a = p;
	struct race *r = a->r;
	unsigned int n = 0;
	__u32 w = 16 * (a->tid + 1);

	while (!atomic_load(&r->stop)) {
		struct mmedge_chan_create c;
		char name[MMEDGE_NAME_LEN];
		int ret;

		snprintf(name, sizeof(name), "r%d_%u", a->tid, n++);
		memset(&c, 0, sizeof(c));
		c.dir = MMEDGE_CHAN_CAPTURE;
		c.src = cam_src(w, 16, 30, 1);
		memcpy(c.name, name, strlen(name) + 1);
		ret = xioctl(r->dev, MMEDGE_IOC_CHAN_CREATE, &c);
		if (ret == -ENOSPC)
			continue;
		if (ret) {
			atomic_fetch_add(&r->other_err, 1);
			continue;
		}
		atomic_fetch_add(&r->creates, 1);
		if (c.id < 1 || c.id > 64 || strcmp((char *)c.name, name) ||
		    c.frame_size != w * 16 ||
		    c.meta_offset != ((w * 16 + 63) & ~63u)) {
			if (atomic_fetch_add(&r->bad, 1) < 5)
				fprintf(stderr,
					"# reply id %u name '%.16s' size %u, asked '%s' size %u\n",
					c.id, (char *)c.name, c.frame_size,
					name, w * 16);
		}
	}
	return NULL;
}

static void *race_destroyer(void *p)
{
	struct race *r = p;
	__u32 id = 1;

	while (!atomic_load(&r->stop)) {
		if (!chan_destroy(r->dev, id))
			atomic_fetch_add(&r->destroys, 1);
		id = id % 64 + 1;
	}
	return NULL;
}

/* Attribute @type at the top level of @a..@end, or NULL. */
static struct nlattr *nla_find(struct nlattr *a, void *end, int type)
{
	while ((char *)a + NLA_HDRLEN <= (char *)end && a->nla_len >= NLA_HDRLEN) {
		if ((a->nla_type & NLA_TYPE_MASK) == type)
			return a;
		a = (struct nlattr *)((char *)a + NLA_ALIGN(a->nla_len));
	}
	return NULL;
}

/*
 * A generic netlink socket in mmedge's "events" group, so that every
 * CHAN_CREATE builds and sends its event (and reads the new channel's
 * name and id for it); -1 if the family or group is not there.
 */
static int nl_events_socket(void)
{
	struct {
		struct nlmsghdr n;
		struct genlmsghdr g;
		char buf[64];
	} req;
	char resp[8192];
	struct nlattr *a, *grps, *g;
	struct nlmsghdr *n = (struct nlmsghdr *)resp;
	int fd, len, grp = -1;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
	if (fd < 0)
		return -1;
	memset(&req, 0, sizeof(req));
	req.n.nlmsg_type = GENL_ID_CTRL;
	req.n.nlmsg_flags = NLM_F_REQUEST;
	req.g.cmd = CTRL_CMD_GETFAMILY;
	req.g.version = 1;
	a = (struct nlattr *)req.buf;
	a->nla_type = CTRL_ATTR_FAMILY_NAME;
	a->nla_len = NLA_HDRLEN + sizeof(MMEDGE_GENL_NAME);
	memcpy((char *)a + NLA_HDRLEN, MMEDGE_GENL_NAME, sizeof(MMEDGE_GENL_NAME));
	req.n.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN) + NLA_ALIGN(a->nla_len);
	if (send(fd, &req, req.n.nlmsg_len, 0) < 0)
		goto err;
	len = recv(fd, resp, sizeof(resp), 0);
	if (len < (int)NLMSG_LENGTH(GENL_HDRLEN) || n->nlmsg_type == NLMSG_ERROR)
		goto err;
	a = (struct nlattr *)((char *)NLMSG_DATA(n) + GENL_HDRLEN);
	grps = nla_find(a, resp + len, CTRL_ATTR_MCAST_GROUPS);
	if (!grps)
		goto err;
	for (g = (struct nlattr *)((char *)grps + NLA_HDRLEN);
	     (char *)g < (char *)grps + grps->nla_len && g->nla_len >= NLA_HDRLEN;
	     g = (struct nlattr *)((char *)g + NLA_ALIGN(g->nla_len))) {
		void *gend = (char *)g + g->nla_len;
		struct nlattr *nm = nla_find((void *)((char *)g + NLA_HDRLEN),
					     gend, CTRL_ATTR_MCAST_GRP_NAME);
		struct nlattr *id = nla_find((void *)((char *)g + NLA_HDRLEN),
					     gend, CTRL_ATTR_MCAST_GRP_ID);

		if (nm && id && !strcmp((char *)nm + NLA_HDRLEN,
					MMEDGE_GENL_MCGRP_EVENTS))
			grp = *(__u32 *)((char *)id + NLA_HDRLEN);
	}
	if (grp < 0 || setsockopt(fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &grp,
				  sizeof(grp)))
		goto err;
	return fd;
err:
	close(fd);
	return -1;
}

TEST_F_TIMEOUT(hostile, create_destroy_race, 60)
{
	struct race r = { .dev = self->dev };
	struct race_arg args[4];
	pthread_t th[7];
	int i, nl;

	BEGIN();

	/* Events make CHAN_CREATE read the channel longer after creating it. */
	nl = nl_events_socket();
	if (nl < 0)
		TH_LOG("no mmedge events group: CHAN_CREATE sends no event");

	for (i = 0; i < 4; i++) {
		args[i].r = &r;
		args[i].tid = i;
		ASSERT_EQ(0, pthread_create(&th[i], NULL, race_creator,
					    &args[i]));
	}
	for (i = 4; i < 7; i++)
		ASSERT_EQ(0, pthread_create(&th[i], NULL, race_destroyer, &r));
	sleep_ms(2000);
	atomic_store(&r.stop, 1);
	for (i = 0; i < 7; i++)
		pthread_join(th[i], NULL);
	for (i = 1; i <= 64; i++)
		chan_destroy(self->dev, i);
	if (nl >= 0)
		close(nl);
	TH_LOG("creates %d destroys %d", atomic_load(&r.creates),
	       atomic_load(&r.destroys));
	EXPECT_LT(0, atomic_load(&r.creates));
	EXPECT_LT(0, atomic_load(&r.destroys));
	EXPECT_EQ(0, atomic_load(&r.bad));
	EXPECT_EQ(0, atomic_load(&r.other_err));
}

/*
 * 5. BUF_SYNC of ranges that cross the buffer's blocks, and of the whole
 * buffer, while vgem has it mapped: each succeeds, covers the range (or,
 * for a mapping an IOMMU merged, the whole buffer) for vgem's one
 * mapping, and leaves the data intact. (Behind an IOMMU that merges
 * blocks into one DMA range the old per-segment sync hit unrelated
 * memory; the VM has no IOMMU, so there the test passes either way and
 * the debug kernel's DMA-API debug checks each sync.)
 */
TEST_F_TIMEOUT(hostile, ranged_sync_segments, 60)
{
	const size_t b1 = SZ_1M, b2 = SZ_1M + SZ_64K, b3 = b2 + SZ_4K;
	const size_t size = b3 + SZ_4K;
	const struct { size_t off, len; } r[] = {
		{ b1 - 256, 512 }, { b2 - 8, 16 }, { b3 - 1, 2 },
		{ 0, size }, { 100, size - 200 }, { b1, SZ_64K },
		{ size - 1, 1 }, { 4000, b2 },
	};
	static const __u32 fl[] = {
		MMEDGE_BUF_SYNC_READ, MMEDGE_BUF_SYNC_WRITE,
		MMEDGE_BUF_SYNC_RW,
	};
	struct mmedge_buf_info info;
	unsigned int i, j;
	__u32 handle;
	uint8_t *map;
	__u64 synced;
	int fd;

	BEGIN();

	NEED_VGEM();
	fd = buf_new(self->dev, size, 0, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	memset(&info, 0, sizeof(info));
	info.fd = fd;
	ASSERT_EQ(0, xioctl(self->dev, MMEDGE_IOC_BUF_INFO, &info));
	EXPECT_LE(2, info.nr_segments);
	map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, map);
	fill(map, size, 5);
	ASSERT_EQ(0, drmPrimeFDToHandle(self->vgem, fd, &handle));

	for (i = 0; i < sizeof(r) / sizeof(r[0]); i++) {
		for (j = 0; j < 3; j++) {
			EXPECT_EQ(0, buf_sync(self->dev, fd, fl[j], r[i].off,
					      r[i].len, &synced));
			EXPECT_TRUE(synced == r[i].len || synced == size)
				TH_LOG("synced %llu of [%zu, +%zu)",
				       (unsigned long long)synced, r[i].off,
				       r[i].len);
			EXPECT_EQ(0, buf_sync(self->dev, fd,
					      fl[j] | MMEDGE_BUF_SYNC_END,
					      r[i].off, r[i].len, &synced));
			EXPECT_TRUE(synced == r[i].len || synced == size);
		}
	}
	EXPECT_EQ(-1, check(map, size, 5));
	drmCloseBufferHandle(self->vgem, handle);
	munmap(map, size);
	close(fd);
}

/*
 * 5. The same through mmedge's own attachment, for every cache mode and
 * contiguous buffers: a buffer imported into mmedge itself (BUF_IMPORT
 * of its own dma-buf) is synced by range; the debug kernel's DMA-API
 * debug checks that each sync hits a live mapping.
 */
TEST_F_TIMEOUT(hostile, self_import_sync, 60)
{
	static const __u32 fl[] = {
		MMEDGE_BUF_CACHE_CACHED, MMEDGE_BUF_CACHE_WC,
		MMEDGE_BUF_CACHE_UNCACHED, MMEDGE_BUF_CONTIG,
		MMEDGE_BUF_CONTIG | MMEDGE_BUF_CACHE_WC,
	};
	static const size_t sizes[] = { SZ_4K, 3 * SZ_4K, 270336, SZ_1M };
	unsigned int i, j;

	BEGIN();

	for (i = 0; i < sizeof(fl) / sizeof(fl[0]); i++) {
		for (j = 0; j < sizeof(sizes) / sizeof(sizes[0]); j++) {
			struct mmedge_buf_import imp;
			size_t len = sizes[j] - 300;
			__u64 synced;
			int fd;

			if ((fl[i] & MMEDGE_BUF_CONTIG) &&
			    !(self->caps & MMEDGE_CAP_CONTIG))
				continue;
			fd = buf_new(self->dev, sizes[j], fl[i],
				     O_RDWR | O_CLOEXEC);
			if (fd == -ENOMEM && (fl[i] & MMEDGE_BUF_CONTIG))
				continue;
			ASSERT_LE(0, fd);
			ASSERT_EQ(0, buf_import(self->dev, fd, &imp));
			EXPECT_EQ(0, buf_sync(self->dev, fd, MMEDGE_BUF_SYNC_READ,
					      100, len, &synced))
				TH_LOG("flags %#x size %zu", fl[i], sizes[j]);
			EXPECT_EQ(0, buf_sync(self->dev, fd, MMEDGE_BUF_SYNC_READ |
					      MMEDGE_BUF_SYNC_END, 100, len,
					      &synced));
			EXPECT_EQ(0, buf_sync(self->dev, fd, MMEDGE_BUF_SYNC_RW,
					      0, sizes[j], &synced));
			EXPECT_EQ(0, buf_sync(self->dev, fd, MMEDGE_BUF_SYNC_RW |
					      MMEDGE_BUF_SYNC_END, 0, sizes[j],
					      &synced));
			EXPECT_EQ(0, xioctl(self->dev, MMEDGE_IOC_BUF_RELEASE,
					    &(struct mmedge_buf_release){
						.id = imp.id }));
			close(fd);
		}
	}
}

/*
 * 6. A channel that writes a buffer waits for the buffer's fences:
 * QBUF of a vgem buffer with an unsignalled vgem write fence returns
 * only after vgem signals it, and the frame then arrives.
 */
struct qbuf_thread {
	int dev;
	__u32 chan;
	int fd;
	int ret;
	uint64_t done_ns;
};

static void *qbuf_thread_fn(void *p)
{
	struct qbuf_thread *q = p;

	q->ret = qbuf_full(q->dev, q->chan, q->fd, 0, 0, 0, 7, NULL);
	q->done_ns = now_ns();
	return NULL;
}

/**
 * struct fenced_cap - a capture channel and a buffer for it that vgem
 * exported with an unsignalled write fence, imported into mmedge
 * @c: the channel as created.
 * @ch: its id.
 * @handle: vgem's handle of the buffer.
 * @fence: vgem's fence on it, for vgem_fence_signal().
 * @prime: the buffer's dma-buf fd.
 */
struct fenced_cap {
	struct mmedge_chan_create c;
	int ch;
	__u32 handle;
	__u32 fence;
	int prime;
};

static int fenced_cap_new(int dev, int vgem, struct fenced_cap *f)
{
	struct mmedge_buf_import imp;
	int ret;

	f->ch = cam_chan(dev, 64, 64, 30, 1, &f->c);
	if (f->ch <= 0)
		return f->ch ? f->ch : -EINVAL;
	ret = vgem_dumb(vgem, cap_buf_size(&f->c), &f->handle);
	if (ret)
		return ret;
	ret = vgem_fence_attach(vgem, f->handle, VGEM_FENCE_WRITE, &f->fence);
	if (ret)
		return ret;
	ret = drmPrimeHandleToFD(vgem, f->handle, DRM_CLOEXEC | DRM_RDWR,
				 &f->prime);
	if (ret)
		return -errno;
	return buf_import(dev, f->prime, &imp);
}

static void fenced_cap_free(int dev, int vgem, struct fenced_cap *f)
{
	chan_destroy(dev, f->ch);
	close(f->prime);
	drmCloseBufferHandle(vgem, f->handle);
}

TEST_F_TIMEOUT(hostile, write_waits_for_fences, 60)
{
	struct fenced_cap f;
	struct qbuf_thread q;
	struct mmedge_dqbuf d;
	uint64_t t_sig;
	pthread_t th;

	BEGIN();

	NEED_VGEM();
	ASSERT_EQ(0, fenced_cap_new(self->dev, self->vgem, &f));

	q = (struct qbuf_thread){ .dev = self->dev, .chan = f.ch,
				  .fd = f.prime };
	ASSERT_EQ(0, pthread_create(&th, NULL, qbuf_thread_fn, &q));
	sleep_ms(300);
	t_sig = now_ns();
	EXPECT_EQ(0, vgem_fence_signal(self->vgem, f.fence));
	pthread_join(th, NULL);
	EXPECT_EQ(0, q.ret);
	EXPECT_LE(t_sig, q.done_ns)
		TH_LOG("QBUF returned %llu ms before the fence signalled",
		       (unsigned long long)(t_sig - q.done_ns) / MSEC);
	if (!q.ret) {
		EXPECT_EQ(0, dqbuf(self->dev, f.ch, 0, 3000, &d));
		EXPECT_EQ(7, d.cookie);
		EXPECT_EQ(0, d.frame_flags & MMEDGE_FRAME_ERROR);
	}
	fenced_cap_free(self->dev, self->vgem, &f);
}

/* 6. A fence that never signals: QBUF gives up after about 2 s. */
TEST_F_TIMEOUT(hostile, write_fence_timeout, 60)
{
	struct fenced_cap f;
	uint64_t t0, ms;
	int ret;

	BEGIN();

	NEED_VGEM();
	ASSERT_EQ(0, fenced_cap_new(self->dev, self->vgem, &f));
	t0 = now_ns();
	ret = qbuf_full(self->dev, f.ch, f.prime, 0, 0, 0, 1, NULL);
	ms = (now_ns() - t0) / MSEC;
	EXPECT_EQ(-ETIMEDOUT, ret);
	EXPECT_LE(1500, ms);
	EXPECT_GE(5000, ms);
	vgem_fence_signal(self->vgem, f.fence);
	fenced_cap_free(self->dev, self->vgem, &f);
}

/*
 * 6. Every out-fence signals in bounded time: buffers queued on a
 * capture channel whose next frame is a minute away signal with an
 * error within 1 s of the channel's destruction.
 */
TEST_F_TIMEOUT(hostile, fence_bounded, 60)
{
	struct mmedge_chan_create c;
	struct fence_desc d;
	int ch, i, buf[4], fence[4];
	uint64_t t0;

	BEGIN();

	ch = cam_chan(self->dev, 64, 64, 1, 60, &c);
	ASSERT_LT(0, ch);
	ASSERT_EQ(0, cap_bufs(self->dev, &c, 4, buf));
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, qbuf_fenced(self->dev, ch, buf[i], i, &fence[i]));
	sleep_ms(50);
	ASSERT_EQ(0, chan_destroy(self->dev, ch));
	t0 = now_ns();
	for (i = 0; i < 4; i++) {
		int left = 1000 - (int)((now_ns() - t0) / MSEC);

		EXPECT_EQ(1, poll_in(fence[i], left > 0 ? left : 0));
		ASSERT_EQ(0, fence_query(fence[i], &d));
		EXPECT_GT(0, d.status) TH_LOG("fence %d status %d", i, d.status);
		close(fence[i]);
		close(buf[i]);
	}
}

/*
 * 8. Capture and copy channels write their buffer: a dma-buf fd opened
 * read-only (an mmedge buffer exported O_RDONLY, a vgem buffer exported
 * without DRM_RDWR) is refused with -EBADF; reading channels take it.
 */
TEST_F_TIMEOUT(hostile, qbuf_readonly_dmabuf, 60)
{
	struct mmedge_chan_create c;
	struct mmedge_buf_import imp;
	struct mmedge_dqbuf d;
	int cap, copy, feed, ro[4], rw, rw2, vro, vrw, i;
	__u32 handle;
	size_t size;

	BEGIN();

	cap = cam_chan(self->dev, 64, 64, 30, 1, &c);
	ASSERT_LT(0, cap);
	copy = plain_chan(self->dev, MMEDGE_CHAN_COPY);
	ASSERT_LT(0, copy);
	feed = plain_chan(self->dev, MMEDGE_CHAN_FEED);
	ASSERT_LT(0, feed);
	size = cap_buf_size(&c);
	/* One per check, so that a wrongly accepted one is not busy later. */
	for (i = 0; i < 4; i++) {
		ro[i] = buf_new(self->dev, size, 0, O_RDONLY | O_CLOEXEC);
		ASSERT_LE(0, ro[i]);
	}
	rw = buf_new(self->dev, size, 0, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, rw);
	rw2 = buf_new(self->dev, size, 0, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, rw2);

	EXPECT_EQ(-EBADF, qbuf_full(self->dev, cap, ro[0], 0, 0, 0, 1, NULL));
	EXPECT_EQ(-EBADF, qbuf_full(self->dev, copy, ro[1], MMEDGE_QBUF_SRC, rw,
				    64, 2, NULL));
	/* Read-only is enough to be read: a copy's source, a feed. */
	EXPECT_EQ(0, qbuf_full(self->dev, copy, rw2, MMEDGE_QBUF_SRC, ro[2], 64,
			       3, NULL));
	EXPECT_EQ(0, dqbuf(self->dev, copy, 0, 3000, &d));
	EXPECT_EQ(0, qbuf_full(self->dev, feed, ro[3], 0, 0, 64, 4, NULL));
	EXPECT_EQ(0, dqbuf(self->dev, feed, 0, 3000, &d));
	/* Writable: the capture works. */
	EXPECT_EQ(0, qbuf_full(self->dev, cap, rw, 0, 0, 0, 5, NULL));
	EXPECT_EQ(0, dqbuf(self->dev, cap, 0, 3000, &d));

	if (self->vgem >= 0) {
		/* DRM keeps a handle's first export: one object per mode. */
		ASSERT_EQ(0, vgem_dumb(self->vgem, size, &handle));
		ASSERT_EQ(0, drmPrimeHandleToFD(self->vgem, handle, DRM_CLOEXEC,
						&vro));
		ASSERT_EQ(0, buf_import(self->dev, vro, &imp));
		EXPECT_EQ(-EBADF, qbuf_full(self->dev, cap, vro, 0, 0, 0, 6,
					    NULL));
		close(vro);
		drmCloseBufferHandle(self->vgem, handle);
		ASSERT_EQ(0, vgem_dumb(self->vgem, size, &handle));
		ASSERT_EQ(0, drmPrimeHandleToFD(self->vgem, handle,
						DRM_CLOEXEC | DRM_RDWR, &vrw));
		ASSERT_EQ(0, buf_import(self->dev, vrw, &imp));
		EXPECT_EQ(0, qbuf_full(self->dev, cap, vrw, 0, 0, 0, 7, NULL));
		EXPECT_EQ(0, dqbuf(self->dev, cap, 0, 3000, &d));
		close(vrw);
		drmCloseBufferHandle(self->vgem, handle);
	} else {
		TH_LOG("no vgem: the vgem half is not run");
	}
	chan_destroy(self->dev, cap);
	chan_destroy(self->dev, copy);
	chan_destroy(self->dev, feed);
	for (i = 0; i < 4; i++)
		close(ro[i]);
	close(rw);
	close(rw2);
}

static int do_unbind(FIXTURE_DATA(hostile) *self)
{
	int ret = pdev_name(self->pdev, sizeof(self->pdev));

	if (ret)
		return ret;
	ret = write_str(PDRV_DIR "/unbind", self->pdev);
	if (!ret)
		self->unbound = true;
	return ret;
}

static int do_bind(FIXTURE_DATA(hostile) *self)
{
	int ret = write_str(PDRV_DIR "/bind", self->pdev);

	if (!ret)
		self->unbound = false;
	return ret ? ret : wait_dev(true, 3000);
}

/*
 * 9. Unbind with live buffers (scatter-gather and contiguous), a
 * capture channel streaming with fences, an mmap and a vgem import:
 * ioctls fail with -ENODEV, every fence signals within 1 s, the mapping
 * and the importer's view stay readable, everything closes, and a bind
 * brings the device back.
 */
TEST_F_TIMEOUT(hostile, unbind_live_buffers, 90)
{
	struct mmedge_chan_create c;
	struct mmedge_caps caps;
	struct mmedge_dqbuf d;
	struct fence_desc fd_;
	int sg, ctg, cb[2], fence[3], ch, i, v2, dev2;
	const size_t sgsize = 256 * 1024;
	uint8_t *map, *vmap_;
	__u32 handle;
	uint64_t t0;

	BEGIN();

	NEED_ROOT("unbind");
	NEED_VGEM();
	if (!(self->caps & MMEDGE_CAP_CONTIG))
		SKIP(return, "no MMEDGE_CAP_CONTIG");
	sg = buf_new(self->dev, sgsize, 0, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, sg);
	ch = cam_chan(self->dev, 64, 64, 30, 1, &c);
	ASSERT_LT(0, ch);
	ctg = buf_new(self->dev, SZ_64K, MMEDGE_BUF_CONTIG, O_RDWR | O_CLOEXEC);
	if (ctg == -ENOMEM)
		SKIP(return, "no 64 KiB contiguous block");
	ASSERT_LE(0, ctg);
	map = mmap(NULL, sgsize, PROT_READ | PROT_WRITE, MAP_SHARED, sg, 0);
	ASSERT_NE(MAP_FAILED, map);
	fill(map, sgsize, 9);
	ASSERT_EQ(0, drmPrimeFDToHandle(self->vgem, sg, &handle));

	ASSERT_EQ(0, cap_bufs(self->dev, &c, 2, cb));
	ASSERT_EQ(0, qbuf_fenced(self->dev, ch, ctg, 0, &fence[0]));
	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, qbuf_fenced(self->dev, ch, cb[i], i + 1,
					 &fence[i + 1]));
	sleep_ms(20);

	ASSERT_EQ(0, do_unbind(self));
	t0 = now_ns();
	EXPECT_EQ(-ENODEV, query_caps(self->dev, &caps));
	EXPECT_EQ(-ENODEV, qbuf_full(self->dev, ch, sg, 0, 0, 0, 9, NULL));
	EXPECT_EQ(-ENODEV, dqbuf(self->dev, ch, MMEDGE_DQBUF_NONBLOCK, 0, &d));
	for (i = 0; i < 3; i++) {
		int left = 1000 - (int)((now_ns() - t0) / MSEC);

		EXPECT_EQ(1, poll_in(fence[i], left > 0 ? left : 0))
			TH_LOG("fence %d not signalled 1 s after unbind", i);
		EXPECT_EQ(0, fence_query(fence[i], &fd_));
		EXPECT_NE(0, fd_.status);
	}
	EXPECT_EQ(-1, check(map, sgsize, 9));

	/* The importer still holds the buffer; its export maps it. */
	EXPECT_EQ(0, drmPrimeHandleToFD(self->vgem, handle, DRM_CLOEXEC | DRM_RDWR,
					&v2));
	if (v2 >= 0) {
		vmap_ = mmap(NULL, sgsize, PROT_READ, MAP_SHARED, v2, 0);
		EXPECT_NE(MAP_FAILED, vmap_);
		if (vmap_ != MAP_FAILED) {
			EXPECT_EQ(-1, check(vmap_, sgsize, 9));
			munmap(vmap_, sgsize);
		}
		close(v2);
	}

	for (i = 0; i < 3; i++)
		EXPECT_EQ(0, close(fence[i]));
	EXPECT_EQ(0, close(self->dev));
	self->dev = -1;
	EXPECT_EQ(0, close(ctg));
	EXPECT_EQ(0, close(cb[0]));
	EXPECT_EQ(0, close(cb[1]));
	EXPECT_EQ(0, drmCloseBufferHandle(self->vgem, handle));
	EXPECT_EQ(-1, check(map, sgsize, 9));
	EXPECT_EQ(0, munmap(map, sgsize));
	EXPECT_EQ(0, close(sg));

	ASSERT_EQ(0, do_bind(self));
	dev2 = open_dev();
	ASSERT_LE(0, dev2);
	EXPECT_EQ(0, query_caps(dev2, &caps));
	close(dev2);
}

/*
 * 10. A user that dropped to uid 65534 (keeping an fd it opened as
 * root) cannot change another file's channel, raise priority, or exceed
 * the per-file bounds: 16 channels, 64 queued+done jobs per channel,
 * file_mem_limit_mb of buffers.
 */
static int child_fails;

#define CHILD_EXPECT(want, expr) do { \
	long long __w = (want), __g = (expr); \
	if (__w != __g) { \
		child_fails++; \
		fprintf(stderr, "# child line %d: %s = %lld, want %lld\n", \
			__LINE__, #expr, __g, __w); \
	} \
} while (0)

static int unpriv_child(int fd, __u32 root_chan)
{
	struct mmedge_chan_create c;
	int own, feed, bufs[65], i, ret, a, b;
	__u32 ids[17];

	alarm(60);
	if (setgroups(0, NULL) || setgid(65534) || setuid(65534)) {
		fprintf(stderr, "# cannot drop privileges: %s\n", strerror(errno));
		return 100;
	}

	/* Another file's channel: neither config nor destroy. */
	CHILD_EXPECT(-EPERM, chan_config(fd, root_chan, MMEDGE_CHAN_SET_WEIGHT,
					 1, 0, 0, NULL));
	CHILD_EXPECT(-EPERM, chan_config(fd, root_chan, MMEDGE_CHAN_SET_CAP, 0,
					 0, 1000000, NULL));
	CHILD_EXPECT(-ENOENT, chan_destroy(fd, root_chan));

	/* Its own channel: lower yes, raise or latency no. */
	own = cam_chan(fd, 64, 64, 30, 1, &c);
	CHILD_EXPECT(1, own > 0);
	CHILD_EXPECT(0, chan_config(fd, own, MMEDGE_CHAN_SET_WEIGHT, 50, 0, 0,
				    NULL));
	CHILD_EXPECT(-EPERM, chan_config(fd, own, MMEDGE_CHAN_SET_WEIGHT, 101,
					 0, 0, NULL));
	CHILD_EXPECT(-EPERM, chan_config(fd, own, MMEDGE_CHAN_SET_CLASS |
					 MMEDGE_CHAN_SET_CAP, 0,
					 MMEDGE_CLASS_LATENCY, 1000000, NULL));
	memset(&c, 0, sizeof(c));
	c.dir = MMEDGE_CHAN_FEED;
	c.weight = 200;
	CHILD_EXPECT(-EPERM, xioctl(fd, MMEDGE_IOC_CHAN_CREATE, &c));
	memset(&c, 0, sizeof(c));
	c.dir = MMEDGE_CHAN_FEED;
	c.class = MMEDGE_CLASS_LATENCY;
	c.cap = 1000000;
	CHILD_EXPECT(-EPERM, xioctl(fd, MMEDGE_IOC_CHAN_CREATE, &c));
	CHILD_EXPECT(-EPERM, bus_set(fd, 1000000));
	chan_destroy(fd, own);

	/* 64 jobs on a channel, queued or done; the 65th is refused. */
	feed = plain_chan(fd, MMEDGE_CHAN_FEED);
	CHILD_EXPECT(1, feed > 0);
	for (i = 0; i < 65; i++) {
		bufs[i] = buf_new(fd, SZ_4K, 0, O_RDWR | O_CLOEXEC);
		if (bufs[i] < 0) {
			CHILD_EXPECT(0, bufs[i]);
			break;
		}
		ret = qbuf_full(fd, feed, bufs[i], 0, 0, 64, i, NULL);
		CHILD_EXPECT(i < 64 ? 0 : -ENOBUFS, ret);
	}
	chan_destroy(fd, feed);
	while (--i >= 0)
		close(bufs[i]);

	/* 16 channels per file. */
	for (i = 0; i < 17; i++) {
		memset(&c, 0, sizeof(c));
		c.dir = MMEDGE_CHAN_FEED;
		ret = xioctl(fd, MMEDGE_IOC_CHAN_CREATE, &c);
		ids[i] = ret ? 0 : c.id;
		CHILD_EXPECT(i < 16 ? 0 : -ENOSPC, ret);
	}
	for (i = 0; i < 17; i++)
		if (ids[i])
			chan_destroy(fd, ids[i]);

	/* The file's memory cap (lowered to 8 MiB by the parent). */
	CHILD_EXPECT(-ENOMEM, buf_new(fd, 9 * SZ_1M, 0, O_RDWR | O_CLOEXEC));
	a = buf_new(fd, 6 * SZ_1M, 0, O_RDWR | O_CLOEXEC);
	CHILD_EXPECT(1, a >= 0);
	CHILD_EXPECT(-ENOMEM, buf_new(fd, 4 * SZ_1M, 0, O_RDWR | O_CLOEXEC));
	b = buf_new(fd, SZ_1M, 0, O_RDWR | O_CLOEXEC);
	CHILD_EXPECT(1, b >= 0);
	close(a);
	close(b);
	return child_fails;
}

TEST_F_TIMEOUT(hostile, unprivileged, 120)
{
	struct mmedge_chan_create c;
	struct mmedge_chan_stats st;
	int root_chan, fd2, status;
	pid_t pid;

	BEGIN();

	NEED_ROOT("setuid");
	root_chan = cam_chan(self->dev, 64, 64, 30, 1, &c);
	ASSERT_LT(0, root_chan);
	ASSERT_EQ(0, read_str(MOD_PARAMS "file_mem_limit_mb", self->file_limit,
			      sizeof(self->file_limit)));
	ASSERT_EQ(0, write_str(MOD_PARAMS "file_mem_limit_mb", "8"));

	fd2 = open_dev();
	ASSERT_LE(0, fd2);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(unpriv_child(fd2, root_chan));
	close(fd2);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status)) TH_LOG("child status %#x", status);
	EXPECT_EQ(0, WEXITSTATUS(status));

	/* Root's channel kept its settings. */
	ASSERT_EQ(0, chan_stats(self->dev, root_chan, &st));
	EXPECT_EQ(MMEDGE_WEIGHT_DEFAULT, st.weight);
	EXPECT_EQ(0, st.cap);
	chan_destroy(self->dev, root_chan);
}

/*
 * 11. vgem imports mmedge buffers of 1 and 4 MiB (scatter-gather and
 * contiguous): each attachment's table must respect vgem's segment
 * limits (64 KiB); the debug kernel's DMA-API debug reports a longer
 * segment in dmesg, which fails the run. The data reads back through
 * vgem's re-export.
 */
TEST_F_TIMEOUT(hostile, import_seg_limits, 90)
{
	const struct { size_t size; __u32 flags; } v[] = {
		{ SZ_1M, 0 }, { 4 * SZ_1M, 0 }, { SZ_1M, MMEDGE_BUF_CONTIG },
		{ 4 * SZ_1M, MMEDGE_BUF_CONTIG },
	};
	unsigned int i;

	BEGIN();

	NEED_VGEM();
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct drm_mode_map_dumb md;
		uint8_t *map, *theirs;
		__u32 handle;
		int fd, fd2;

		if ((v[i].flags & MMEDGE_BUF_CONTIG) &&
		    !(self->caps & MMEDGE_CAP_CONTIG)) {
			TH_LOG("no MMEDGE_CAP_CONTIG: contiguous case not run");
			continue;
		}
		fd = buf_new(self->dev, v[i].size, v[i].flags,
			     O_RDWR | O_CLOEXEC);
		if (fd == -ENOMEM && (v[i].flags & MMEDGE_BUF_CONTIG)) {
			TH_LOG("no %zu MiB contiguous block", v[i].size >> 20);
			continue;
		}
		ASSERT_LE(0, fd);
		map = mmap(NULL, v[i].size, PROT_READ | PROT_WRITE, MAP_SHARED,
			   fd, 0);
		ASSERT_NE(MAP_FAILED, map);
		fill(map, v[i].size, i);
		ASSERT_EQ(0, dmabuf_sync(fd, DMA_BUF_SYNC_END | DMA_BUF_SYNC_WRITE));
		ASSERT_EQ(0, drmPrimeFDToHandle(self->vgem, fd, &handle));

		/* vgem maps imported objects only through the dma-buf. */
		memset(&md, 0, sizeof(md));
		md.handle = handle;
		if (!xioctl(self->vgem, DRM_IOCTL_MODE_MAP_DUMB, &md)) {
			theirs = mmap(NULL, v[i].size, PROT_READ, MAP_SHARED,
				      self->vgem, md.offset);
			if (theirs != MAP_FAILED) {
				EXPECT_EQ(-1, check(theirs, v[i].size, i));
				munmap(theirs, v[i].size);
			}
		}
		ASSERT_EQ(0, drmPrimeHandleToFD(self->vgem, handle,
						DRM_CLOEXEC | DRM_RDWR, &fd2));
		theirs = mmap(NULL, v[i].size, PROT_READ, MAP_SHARED, fd2, 0);
		ASSERT_NE(MAP_FAILED, theirs);
		EXPECT_EQ(-1, check(theirs, v[i].size, i));
		munmap(theirs, v[i].size);
		close(fd2);
		EXPECT_EQ(0, drmCloseBufferHandle(self->vgem, handle));
		munmap(map, v[i].size);
		close(fd);
	}
}

/*
 * 12. QBUF with MMEDGE_QBUF_FENCE and no free fd fails with -EMFILE and
 * leaves nothing behind: nothing queued, no fence published (the fences
 * around it have consecutive seqnos, from their sync_file names). The
 * channel's fences signal in seqno order and DQBUF's sequence numbers
 * grow.
 */
TEST_F_TIMEOUT(hostile, qbuf_emfile_order, 60)
{
	struct mmedge_chan_create c;
	struct fence_desc d[4];
	struct mmedge_dqbuf dq;
	struct rlimit old, low;
	int ch, buf[4], fence[4], dups[256], nd = 0, i, j, ret;
	long long last_seq = -1;

	BEGIN();

	ch = cam_chan(self->dev, 64, 64, 5, 1, &c);
	ASSERT_LT(0, ch);
	ASSERT_EQ(0, cap_bufs(self->dev, &c, 4, buf));
	ASSERT_EQ(0, qbuf_fenced(self->dev, ch, buf[0], 0, &fence[0]));

	/* No free fd: lower the limit and fill every slot below it. */
	ASSERT_EQ(0, getrlimit(RLIMIT_NOFILE, &old));
	low = old;
	low.rlim_cur = 64;
	ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &low));
	while (nd < 256) {
		int f = dup(0);

		if (f < 0)
			break;
		dups[nd++] = f;
	}
	ret = qbuf_fenced(self->dev, ch, buf[1], 1, &fence[1]);
	for (j = 0; j < nd; j++)
		close(dups[j]);
	ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &old));
	EXPECT_EQ(-EMFILE, ret);

	/* Nothing queued: the buffer queues again. */
	for (i = 1; i < 4; i++)
		ASSERT_EQ(0, qbuf_fenced(self->dev, ch, buf[i], i, &fence[i]));
	for (i = 0; i < 4; i++) {
		EXPECT_EQ(0, dqbuf(self->dev, ch, 0, 5000, &dq));
		EXPECT_EQ(i, dq.cookie);
		if (last_seq >= 0)
			EXPECT_LT(last_seq, (long long)dq.sequence);
		last_seq = dq.sequence;
	}
	for (i = 0; i < 4; i++) {
		EXPECT_EQ(1, poll_in(fence[i], 1000));
		ASSERT_EQ(0, fence_query(fence[i], &d[i]));
		EXPECT_EQ(1, d[i].status);
		if (i) {
			/* Consecutive: the failed QBUF published no fence
			 * (one that took seqno s + 1 and signalled with an
			 * error before fence s broke the timeline's order).
			 */
			if (d[i].seqno >= 0 && d[i - 1].seqno >= 0) {
				EXPECT_EQ(d[i - 1].seqno + 1, d[i].seqno)
					TH_LOG("fence %d: %s after %s", i,
					       d[i].name, d[i - 1].name);
			} else {
				TH_LOG("no seqno in the sync_file names '%s', '%s'",
				       d[i - 1].name, d[i].name);
			}
			EXPECT_LE(d[i - 1].ts_ns, d[i].ts_ns);
		}
		close(fence[i]);
	}
	chan_destroy(self->dev, ch);
	for (i = 0; i < 4; i++)
		close(buf[i]);
}

/*
 * 13. The hub's DMA limits (issue 39): imports of every size from 4 KiB
 * to 64 MiB. vgem's buffers are shmem pages, which vgem merges into one
 * segment wherever the allocator gave a physically contiguous run (a
 * fresh 2 MiB buffer often is one segment); mmedge's own buffers are
 * imported too, scatter-gather (1 MiB blocks) and contiguous (one
 * block). An import succeeds when the hub's dma_max_segment covers the
 * buffer; a contiguous mmedge buffer is then one segment. The debug
 * stage runs this with DMA-API debug, which reports any segment mapped
 * longer than the device claims or across its boundary, and fails.
 */
TEST_F_TIMEOUT(hostile, import_sizes, 300)
{
	static const size_t sizes[] = {
		SZ_4K, SZ_64K, 256 * 1024, SZ_1M, 2 * SZ_1M, 4 * SZ_1M,
		16 * SZ_1M, 64 * SZ_1M,
	};
	struct mmedge_buf_import imp;
	struct mmedge_buf_release rel;
	long long max_seg = 0;
	unsigned int i, k;

	BEGIN();

	NEED_VGEM();
	ASSERT_EQ(0, read_ll(DEV0_SYSDIR "/dma_max_segment", &max_seg));
	TH_LOG("dma_max_segment %lld", max_seg);
	ASSERT_LE(4096, max_seg);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t size = sizes[i];
		__u32 handle;
		int fd, ret;

		/* vgem's buffer. */
		ASSERT_EQ(0, vgem_dumb(self->vgem, size, &handle));
		ASSERT_EQ(0, drmPrimeHandleToFD(self->vgem, handle,
						DRM_CLOEXEC | DRM_RDWR, &fd));
		ret = buf_import(self->dev, fd, &imp);
		if (size <= (size_t)max_seg) {
			EXPECT_EQ(0, ret) TH_LOG("vgem %zu KiB", size >> 10);
		} else {
			/* The exporter may merge past the hub's limit. */
			EXPECT_TRUE(!ret || ret == -ERANGE);
		}
		if (!ret) {
			EXPECT_LE(1, imp.nr_segments);
			EXPECT_GE(size / SZ_4K, imp.nr_segments);
			TH_LOG("vgem %zu KiB: %u segments", size >> 10,
			       imp.nr_segments);
			memset(&rel, 0, sizeof(rel));
			rel.id = imp.id;
			EXPECT_EQ(0, xioctl(self->dev, MMEDGE_IOC_BUF_RELEASE,
					    &rel));
		}
		close(fd);
		EXPECT_EQ(0, drmCloseBufferHandle(self->vgem, handle));

		/* mmedge's own, scatter-gather and contiguous. */
		for (k = 0; k < 2; k++) {
			__u32 flags = k ? MMEDGE_BUF_CONTIG : 0;
			size_t want;

			if (k && !(self->caps & MMEDGE_CAP_CONTIG))
				continue;
			fd = buf_new(self->dev, size, flags, O_RDWR | O_CLOEXEC);
			if (fd == -ENOMEM && k) {
				TH_LOG("no %zu KiB contiguous block", size >> 10);
				continue;
			}
			ASSERT_LE(0, fd);
			ASSERT_EQ(0, buf_import(self->dev, fd, &imp));
			/*
			 * Blocks are cut to the hub's limits, never refused;
			 * the contiguous block is one segment per
			 * dma_max_segment.
			 */
			want = (size + max_seg - 1) / max_seg;
			if (k) {
				EXPECT_EQ(want, imp.nr_segments)
					TH_LOG("contig %zu KiB", size >> 10);
			} else {
				EXPECT_GE(size / SZ_4K, imp.nr_segments);
			}
			memset(&rel, 0, sizeof(rel));
			rel.id = imp.id;
			EXPECT_EQ(0, xioctl(self->dev, MMEDGE_IOC_BUF_RELEASE,
					    &rel));
			close(fd);
		}
	}
}

/*
 * 14. Issue 32 case 1: a frame put back after a DQBUF whose copy to
 * userspace faulted goes back to the channel it came from, never to a
 * channel that got that channel's id after a destroy. The DQBUF result
 * lies in a page write-protected with userfaultfd: the copy blocks in
 * the fault while the channel is destroyed and a new feed channel (same
 * id, never given a job) is created; then the page is made read-only and
 * the fault woken, so the copy fails with EFAULT. The new channel must
 * have nothing to dequeue. Without userfaultfd write-protect (the debug
 * kernel has no CONFIG_USERFAULTFD) the same steps race instead, 200
 * times: a DQBUF into a read-only page against the destroy and create;
 * that exercises the put-back under KASAN and lockdep but may not hit
 * the window (MMEDGE_PUTBACK_RACE=1 races where userfaultfd exists too).
 */
struct putback_arg {
	int dev;
	struct mmedge_dqbuf *d;
	int ret;
	int err;
};

static void *putback_dqbuf(void *p)
{
	struct putback_arg *a = p;

	a->ret = ioctl(a->dev, MMEDGE_IOC_DQBUF, a->d);
	a->err = errno;
	return NULL;
}

/* Waits up to 2 s for channel @ch's first frame; 0 or -errno. */
static int wait_frame(int dev, __u32 ch)
{
	struct mmedge_chan_stats st;
	int i, ret;

	for (i = 0; i < 200; i++) {
		ret = chan_stats(dev, ch, &st);
		if (ret || st.frames)
			return ret;
		sleep_ms(10);
	}
	return -ETIMEDOUT;
}

/* putback_new_chan without userfaultfd: the destroy races the copy. */
static int putback_race(int dev, int buf, int rounds, char *why, size_t len)
{
	size_t pg = page_size();
	struct putback_arg a;
	struct mmedge_dqbuf d;
	int i, feed, feed2, ret = 0;
	uint8_t *page;
	pthread_t t;

	page = mmap(NULL, pg, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED)
		return -errno;
	for (i = 0; i < rounds && !ret; i++) {
		feed = plain_chan(dev, MMEDGE_CHAN_FEED);
		if (feed < 0 || qbuf_full(dev, feed, buf, 0, 0, 64, i + 1, NULL) ||
		    wait_frame(dev, feed)) {
			snprintf(why, len, "round %d: no frame", i);
			ret = -EIO;
			break;
		}
		mprotect(page, pg, PROT_READ | PROT_WRITE);
		memcpy(page, &(struct mmedge_dqbuf){ .chan = feed,
			.flags = MMEDGE_DQBUF_NONBLOCK },
		       sizeof(struct mmedge_dqbuf));
		mprotect(page, pg, PROT_READ);
		memset(&a, 0, sizeof(a));
		a.dev = dev;
		a.d = (struct mmedge_dqbuf *)page;
		if (pthread_create(&t, NULL, putback_dqbuf, &a)) {
			ret = -EAGAIN;
			break;
		}
		/* A few rounds give the DQBUF a head start. */
		if (i % 4)
			usleep(i % 400);
		chan_destroy(dev, feed);
		feed2 = plain_chan(dev, MMEDGE_CHAN_FEED);
		pthread_join(t, NULL);
		if (feed2 > 0 &&
		    !dqbuf(dev, feed2, MMEDGE_DQBUF_NONBLOCK, 0, &d)) {
			snprintf(why, len,
				 "round %d: channel %d dequeued cookie %llu of the destroyed one",
				 i, feed2, (unsigned long long)d.cookie);
			ret = -EEXIST;
		}
		if (feed2 > 0)
			chan_destroy(dev, feed2);
	}
	munmap(page, pg);
	return ret;
}

TEST_F_TIMEOUT(hostile, putback_new_chan, 120)
{
	size_t pg = page_size();
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg;
	struct uffdio_writeprotect wp;
	struct uffdio_range wake;
	struct mmedge_chan_stats st;
	struct putback_arg a;
	struct uffd_msg msg;
	struct mmedge_dqbuf d;
	struct pollfd pfd;
	int feed, feed2, buf, uffd;
	pthread_t t;
	uint8_t *page;

	BEGIN();

	page = mmap(NULL, pg, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, page);
	memset(page, 0, pg);
	memset(&reg, 0, sizeof(reg));
	reg.range.start = (unsigned long)page;
	reg.range.len = pg;
	reg.mode = UFFDIO_REGISTER_MODE_WP;
	/* MMEDGE_PUTBACK_RACE=1 takes the racing path anyway. */
	uffd = getenv("MMEDGE_PUTBACK_RACE") ? -1 :
	       syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api) ||
	    ioctl(uffd, UFFDIO_REGISTER, &reg) ||
	    !(reg.ioctls & (1ULL << _UFFDIO_WRITEPROTECT))) {
		char why[160] = "";

		TH_LOG("no userfaultfd write-protect (%s): racing instead",
		       strerror(errno));
		if (uffd >= 0)
			close(uffd);
		munmap(page, pg);
		buf = buf_new(self->dev, SZ_4K, 0, O_RDWR | O_CLOEXEC);
		ASSERT_LE(0, buf);
		EXPECT_EQ(0, putback_race(self->dev, buf, 200, why, sizeof(why)))
			TH_LOG("%s", why);
		close(buf);
		return;
	}

	/* A finished feed job waits to be dequeued. */
	feed = plain_chan(self->dev, MMEDGE_CHAN_FEED);
	ASSERT_LT(0, feed);
	buf = buf_new(self->dev, SZ_4K, 0, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, buf);
	ASSERT_EQ(0, qbuf_full(self->dev, feed, buf, 0, 0, 64, 0xc0ffee, NULL));
	ASSERT_EQ(0, wait_frame(self->dev, feed));

	/* The DQBUF argument, then the page write-protected. */
	memcpy(page, &(struct mmedge_dqbuf){ .chan = feed, .timeout_ms = 1000 },
	       sizeof(struct mmedge_dqbuf));
	memset(&wp, 0, sizeof(wp));
	wp.range = reg.range;
	wp.mode = UFFDIO_WRITEPROTECT_MODE_WP;
	ASSERT_EQ(0, ioctl(uffd, UFFDIO_WRITEPROTECT, &wp));

	memset(&a, 0, sizeof(a));
	a.dev = self->dev;
	a.d = (struct mmedge_dqbuf *)page;
	ASSERT_EQ(0, pthread_create(&t, NULL, putback_dqbuf, &a));
	pfd.fd = uffd;
	pfd.events = POLLIN;
	ASSERT_EQ(1, poll(&pfd, 1, 10000)) TH_LOG("DQBUF never wrote");
	ASSERT_EQ((ssize_t)sizeof(msg), read(uffd, &msg, sizeof(msg)));
	EXPECT_EQ(UFFD_EVENT_PAGEFAULT, msg.event);

	/* The copy is stuck in the fault: the channel goes, another comes. */
	EXPECT_EQ(0, chan_destroy(self->dev, feed));
	feed2 = plain_chan(self->dev, MMEDGE_CHAN_FEED);
	ASSERT_LT(0, feed2);
	EXPECT_EQ(feed, feed2) TH_LOG("the new channel got another id");

	/* The copy fails: the page is read-only when the fault retries. */
	ASSERT_EQ(0, mprotect(page, pg, PROT_READ));
	wake.start = (unsigned long)page;
	wake.len = pg;
	ASSERT_EQ(0, ioctl(uffd, UFFDIO_WAKE, &wake));
	ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(-1, a.ret);
	EXPECT_EQ(EFAULT, a.err);

	/* The new channel was never given a job. */
	EXPECT_EQ(-EAGAIN, dqbuf(self->dev, feed2, MMEDGE_DQBUF_NONBLOCK, 0, &d))
		TH_LOG("dequeued cookie %#llx seq %llu of the old channel",
		       (unsigned long long)d.cookie,
		       (unsigned long long)d.sequence);
	ASSERT_EQ(0, chan_stats(self->dev, feed2, &st));
	EXPECT_EQ(0, st.frames);
	EXPECT_EQ(0, chan_destroy(self->dev, feed2));
	close(buf);
	close(uffd);
	munmap(page, pg);
}

/*
 * 15. Issue 32 case 2: imports are charged. An import costs a page of
 * bookkeeping plus the pages of its scatter-gather table, charged to
 * the file's cap (file_mem_limit_mb), the user's and the global one, and
 * shown in stats/mem_used: with the file's cap full of a buffer an
 * import is refused (ENOMEM); once charged, it keeps a buffer of the
 * whole cap out, and its release gives the charge back.
 */
TEST_F_TIMEOUT(hostile, import_charged, 60)
{
	struct mmedge_buf_import imp;
	struct mmedge_buf_release rel;
	long long m0 = -1, m1 = -1, m2 = -1;
	__u32 handle;
	int a, v, ret;

	BEGIN();

	NEED_ROOT("module parameters");
	NEED_VGEM();
	ASSERT_EQ(0, read_str(MOD_PARAMS "file_mem_limit_mb", self->file_limit,
			      sizeof(self->file_limit)));
	ASSERT_EQ(0, write_str(MOD_PARAMS "file_mem_limit_mb", "1"));
	ASSERT_EQ(0, vgem_dumb(self->vgem, SZ_64K, &handle));
	ASSERT_EQ(0, drmPrimeHandleToFD(self->vgem, handle,
					DRM_CLOEXEC | DRM_RDWR, &v));

	/* The file's cap is full: no import. */
	a = buf_new(self->dev, SZ_1M, 0, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, a);
	EXPECT_EQ(-ENOMEM, buf_import(self->dev, v, &imp));
	close(a);

	ASSERT_EQ(0, read_ll(STATS "mem_used", &m0));
	ret = buf_import(self->dev, v, &imp);
	ASSERT_EQ(0, ret);
	ASSERT_EQ(0, read_ll(STATS "mem_used", &m1));
	/* 16 segments at most: one page of table, one of bookkeeping. */
	EXPECT_GE(16, imp.nr_segments);
	EXPECT_EQ(2 * (long long)page_size(), m1 - m0);
	EXPECT_EQ(-ENOMEM, buf_new(self->dev, SZ_1M, 0, O_RDWR | O_CLOEXEC));

	memset(&rel, 0, sizeof(rel));
	rel.id = imp.id;
	EXPECT_EQ(0, xioctl(self->dev, MMEDGE_IOC_BUF_RELEASE, &rel));
	ASSERT_EQ(0, read_ll(STATS "mem_used", &m2));
	EXPECT_EQ(m0, m2);
	a = buf_new(self->dev, SZ_1M, 0, O_RDWR | O_CLOEXEC);
	EXPECT_LE(0, a);
	if (a >= 0)
		close(a);
	close(v);
	EXPECT_EQ(0, drmCloseBufferHandle(self->vgem, handle));
}

/*
 * 16. Issue 32 case 3: a BUF_SYNC START waiting for a fence (a vgem
 * write fence that nobody signals) holds no lock that unbind or other
 * files need: the unbind completes within a second while the sync
 * waits, and the sync finishes when the fence signals.
 */
struct sync_arg {
	int dev;
	int buf;
	atomic_int done;
	int ret;
};

static void *sync_start(void *p)
{
	struct sync_arg *a = p;

	a->ret = buf_sync(a->dev, a->buf, MMEDGE_BUF_SYNC_READ, 0, SZ_64K,
			  NULL);
	atomic_store(&a->done, 1);
	return NULL;
}

/*
 * While a thread waits for a fence: another file's ioctl, then the
 * unbind, after which that file gets ENODEV. The ms both took, or -1 if
 * one of them failed.
 */
static long long unbind_beside_wait(FIXTURE_DATA(hostile) *self)
{
	struct mmedge_caps caps;
	long long ms = -1;
	int dev2 = open_dev();
	uint64_t t0;

	if (dev2 < 0)
		return -1;
	t0 = now_ns();
	if (!query_caps(dev2, &caps) && !do_unbind(self)) {
		ms = (now_ns() - t0) / MSEC;
		if (query_caps(dev2, &caps) != -ENODEV)
			ms = -1;
	}
	close(dev2);
	return ms;
}

TEST_F_TIMEOUT(hostile, sync_wait_unlocked, 60)
{
	struct sync_arg a;
	__u32 handle, fence;
	long long ms;
	pthread_t t;

	BEGIN();

	NEED_ROOT("unbind");
	NEED_VGEM();
	memset(&a, 0, sizeof(a));
	a.dev = self->dev;
	a.buf = buf_new(self->dev, SZ_64K, 0, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, a.buf);
	ASSERT_EQ(0, drmPrimeFDToHandle(self->vgem, a.buf, &handle));
	ASSERT_EQ(0, vgem_fence_attach(self->vgem, handle, VGEM_FENCE_WRITE,
				       &fence));
	ASSERT_EQ(0, pthread_create(&t, NULL, sync_start, &a));
	sleep_ms(200);
	ASSERT_EQ(0, atomic_load(&a.done)) TH_LOG("START did not wait");

	/* Another file's ioctl and the unbind do not wait for the fence. */
	ms = unbind_beside_wait(self);
	ASSERT_LE(0, ms) TH_LOG("another file's ioctl or the unbind failed");
	EXPECT_GT(1000, ms) TH_LOG("unbind took %lld ms behind the wait", ms);
	EXPECT_EQ(0, atomic_load(&a.done));

	EXPECT_EQ(0, vgem_fence_signal(self->vgem, fence));
	ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(0, a.ret);
	EXPECT_EQ(0, drmCloseBufferHandle(self->vgem, handle));
	close(a.buf);
	/* The old instance keeps its number until its last file closes. */
	close(self->dev);
	self->dev = -1;
	ASSERT_EQ(0, do_bind(self));
}

/*
 * 16b. The same for QBUF (issue 32 case 3): a capture QBUF of a buffer
 * whose vgem write fence nobody signals waits (up to 2 s) holding no lock
 * that unbind or other files need: another file's ioctl and the unbind
 * complete within a second while it waits; once the fence signals after
 * the unbind, the QBUF fails with ENODEV (or ETIMEDOUT if the 2 s ran
 * out first).
 */
struct qbuf_arg {
	struct qbuf_thread q;
	atomic_int done;
};

static void *qbuf_wait_fn(void *p)
{
	struct qbuf_arg *a = p;

	qbuf_thread_fn(&a->q);
	atomic_store(&a->done, 1);
	return NULL;
}

TEST_F_TIMEOUT(hostile, qbuf_wait_unlocked, 60)
{
	struct fenced_cap f;
	struct qbuf_arg a;
	long long ms;
	pthread_t t;

	BEGIN();

	NEED_ROOT("unbind");
	NEED_VGEM();
	ASSERT_EQ(0, fenced_cap_new(self->dev, self->vgem, &f));
	memset(&a, 0, sizeof(a));
	a.q = (struct qbuf_thread){ .dev = self->dev, .chan = f.ch,
				    .fd = f.prime };
	ASSERT_EQ(0, pthread_create(&t, NULL, qbuf_wait_fn, &a));
	sleep_ms(200);
	ASSERT_EQ(0, atomic_load(&a.done)) TH_LOG("QBUF did not wait");

	/* Another file's ioctl and the unbind do not wait for the fence. */
	ms = unbind_beside_wait(self);
	ASSERT_LE(0, ms) TH_LOG("another file's ioctl or the unbind failed");
	EXPECT_GT(1000, ms) TH_LOG("unbind took %lld ms behind the QBUF", ms);
	TH_LOG("an ioctl and the unbind took %lld ms while a QBUF waited", ms);
	EXPECT_EQ(0, atomic_load(&a.done));

	EXPECT_EQ(0, vgem_fence_signal(self->vgem, f.fence));
	ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_TRUE(a.q.ret == -ENODEV || a.q.ret == -ETIMEDOUT)
		TH_LOG("QBUF after the unbind: %d", a.q.ret);
	fenced_cap_free(self->dev, self->vgem, &f);
	/* The old instance keeps its number until its last file closes. */
	close(self->dev);
	self->dev = -1;
	ASSERT_EQ(0, do_bind(self));
}

/*
 * 17. Issue 32 case 4 (and the user's share of case 2): per-user limits.
 * A user that dropped to uid 65534 holds files opened before: its
 * channels on all of them stop at uid_chan_limit (ENOSPC) though each
 * file is below its 16, while root still creates one; its buffers and
 * imports on all files stop at uid_mem_limit_mb (ENOMEM), and what it
 * frees is given back.
 */
static int uid_child(const int *fd, int nfd, int vfd, unsigned int chan_limit)
{
	unsigned int made = 0;
	struct mmedge_buf_import imp;
	int i, ret, a, b, c;

	alarm(60);
	if (setgroups(0, NULL) || setgid(65534) || setuid(65534)) {
		fprintf(stderr, "# cannot drop privileges: %s\n", strerror(errno));
		return 100;
	}
	for (i = 0; i < nfd; i++) {
		for (;;) {
			ret = plain_chan(fd[i], MMEDGE_CHAN_FEED);
			if (ret < 0)
				break;
			made++;
		}
		CHILD_EXPECT(-ENOSPC, ret);
	}
	CHILD_EXPECT(chan_limit, made);

	/* uid_mem_limit_mb is 4 (set by the parent). */
	a = buf_new(fd[0], 3 * SZ_1M, 0, O_RDWR | O_CLOEXEC);
	CHILD_EXPECT(1, a >= 0);
	CHILD_EXPECT(-ENOMEM, buf_new(fd[1], 2 * SZ_1M, 0, O_RDWR | O_CLOEXEC));
	b = buf_new(fd[1], SZ_1M, 0, O_RDWR | O_CLOEXEC);
	CHILD_EXPECT(1, b >= 0);
	memset(&imp, 0, sizeof(imp));
	imp.fd = vfd;
	CHILD_EXPECT(-ENOMEM, xioctl(fd[2], MMEDGE_IOC_BUF_IMPORT, &imp));
	close(b);
	memset(&imp, 0, sizeof(imp));
	imp.fd = vfd;
	CHILD_EXPECT(0, xioctl(fd[2], MMEDGE_IOC_BUF_IMPORT, &imp));
	close(a);
	c = buf_new(fd[3], 3 * SZ_1M, 0, O_RDWR | O_CLOEXEC);
	CHILD_EXPECT(1, c >= 0);
	close(c);
	return child_fails;
}

TEST_F_TIMEOUT(hostile, uid_limits, 120)
{
	long long chan_limit = -1;
	int fd[4], i, v, status, root_chan, up[2], down[2];
	__u32 handle;
	char c = 0;
	pid_t pid;

	BEGIN();

	NEED_ROOT("setuid");
	NEED_VGEM();
	ASSERT_EQ(0, read_ll(MOD_PARAMS "uid_chan_limit", &chan_limit));
	EXPECT_EQ(32, chan_limit) TH_LOG("not the default");
	ASSERT_GT(4 * 16, chan_limit);
	ASSERT_EQ(0, set_param(self, "uid_mem_limit_mb", "4"));
	ASSERT_EQ(0, vgem_dumb(self->vgem, SZ_64K, &handle));
	ASSERT_EQ(0, drmPrimeHandleToFD(self->vgem, handle,
					DRM_CLOEXEC | DRM_RDWR, &v));
	for (i = 0; i < 4; i++) {
		fd[i] = open_dev();
		ASSERT_LE(0, fd[i]);
	}
	ASSERT_EQ(0, pipe(up));
	ASSERT_EQ(0, pipe(down));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(up[0]);
		close(down[1]);
		status = uid_child(fd, 4, v, chan_limit);
		/* Its channels stay while root tries one. */
		c = status;
		if (write(up[1], &c, 1) == 1)
			while (read(down[0], &c, 1) > 0)
				;
		_exit(status);
	}
	close(up[1]);
	close(down[0]);
	for (i = 0; i < 4; i++)
		close(fd[i]);
	close(v);
	EXPECT_EQ(0, drmCloseBufferHandle(self->vgem, handle));
	EXPECT_EQ(1, read(up[0], &c, 1));
	root_chan = plain_chan(self->dev, MMEDGE_CHAN_FEED);
	EXPECT_LT(0, root_chan) TH_LOG("the user took every channel");
	if (root_chan > 0)
		chan_destroy(self->dev, root_chan);
	close(down[1]);
	close(up[0]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status)) TH_LOG("child status %#x", status);
	EXPECT_EQ(0, WEXITSTATUS(status));
}

/*
 * 18. Issue 32 case 5: engine_rt's effect is observable. The engine
 * thread counts the segments it moves under SCHED_FIFO
 * (stats/engine_rt_segments): with engine_rt set, a feed's segments are
 * moved under it (the thread takes the policy at the top of each run,
 * before moving anything); with it cleared, none is.
 */
static int feed_frames(int dev, int n)
{
	struct mmedge_dqbuf d;
	int ch, buf, i, ret = 0;

	ch = plain_chan(dev, MMEDGE_CHAN_FEED);
	if (ch < 0)
		return ch;
	buf = buf_new(dev, 64 * 1024, 0, O_RDWR | O_CLOEXEC);
	if (buf < 0) {
		chan_destroy(dev, ch);
		return buf;
	}
	for (i = 0; i < n && !ret; i++) {
		ret = qbuf_full(dev, ch, buf, 0, 0, 64 * 1024, i, NULL);
		if (!ret)
			ret = dqbuf(dev, ch, 0, 5000, &d);
	}
	chan_destroy(dev, ch);
	close(buf);
	return ret;
}

TEST_F_TIMEOUT(hostile, engine_rt_observable, 60)
{
	long long s0 = 0, s1 = 0, s2 = 0, fb = 0;

	BEGIN();

	NEED_ROOT("module parameters");
	ASSERT_EQ(0, set_param(self, "engine_rt", "1"));
	ASSERT_EQ(0, read_ll(STATS "engine_rt_segments", &s0));
	ASSERT_EQ(0, feed_frames(self->dev, 8));
	ASSERT_EQ(0, read_ll(STATS "engine_rt_segments", &s1));
	read_ll(STATS "engine_rt_fallbacks", &fb);
	TH_LOG("engine_rt=1: %lld segments under SCHED_FIFO, %lld fallbacks",
	       s1 - s0, fb);
	EXPECT_LT(0, s1 - s0);

	ASSERT_EQ(0, write_str(MOD_PARAMS "engine_rt", "0"));
	ASSERT_EQ(0, feed_frames(self->dev, 8));
	ASSERT_EQ(0, read_ll(STATS "engine_rt_segments", &s2));
	EXPECT_EQ(s1, s2);
}

/*
 * Lifetime: the device closes while out-fences and implicit-fence
 * sync_files exported from the buffers live; each signals and answers
 * SYNC_IOC_FILE_INFO.
 */
TEST_F_TIMEOUT(hostile, close_with_live_sync_files, 60)
{
	struct mmedge_chan_create c;
	struct fence_desc d;
	int ch, i, buf[4], fence[4], exp[4];

	BEGIN();

	ch = cam_chan(self->dev, 64, 64, 60, 1, &c);
	ASSERT_LT(0, ch);
	ASSERT_EQ(0, cap_bufs(self->dev, &c, 4, buf));
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, qbuf_fenced(self->dev, ch, buf[i], i, &fence[i]));
		exp[i] = export_fence(buf[i], DMA_BUF_SYNC_READ);
		ASSERT_LE(0, exp[i]);
	}
	close(self->dev);
	self->dev = -1;
	for (i = 0; i < 4; i++) {
		EXPECT_EQ(1, poll_in(fence[i], 1000));
		EXPECT_EQ(1, poll_in(exp[i], 1000));
		ASSERT_EQ(0, fence_query(fence[i], &d));
		EXPECT_NE(0, d.status);
		ASSERT_EQ(0, fence_query(exp[i], &d));
		EXPECT_NE(0, d.status);
		close(buf[i]);
	}
	for (i = 0; i < 4; i++) {
		close(fence[i]);
		close(exp[i]);
	}
}

/*
 * Lifetime: vgem holds an mmedge buffer (its handle) after every mmedge
 * fd closed: the module cannot be unloaded until vgem lets go.
 */
TEST_F_TIMEOUT(hostile, vgem_holds_across_rmmod, 60)
{
	long long ref0;
	__u32 handle;
	int fd, fd2, ret;
	uint8_t *map;

	BEGIN();

	NEED_ROOT("delete_module");
	NEED_VGEM();
	close(self->dev);
	self->dev = -1;
	ref0 = module_refcnt();
	self->dev = open_dev();
	ASSERT_LE(0, self->dev);
	fd = buf_new(self->dev, SZ_1M, 0, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	map = mmap(NULL, SZ_1M, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, map);
	fill(map, SZ_1M, 3);
	munmap(map, SZ_1M);
	ASSERT_EQ(0, drmPrimeFDToHandle(self->vgem, fd, &handle));
	close(fd);
	close(self->dev);
	self->dev = -1;

	ret = mod_delete("mmedge");
	if (!ret) {
		mod_ensure_loaded();
		ASSERT_TRUE(0) TH_LOG("module unloaded under vgem's import");
	}
	EXPECT_TRUE(mod_busy_errno(ret)) TH_LOG("delete_module: %d", ret);

	ASSERT_EQ(0, drmPrimeHandleToFD(self->vgem, handle,
					DRM_CLOEXEC | DRM_RDWR, &fd2));
	map = mmap(NULL, SZ_1M, PROT_READ, MAP_SHARED, fd2, 0);
	ASSERT_NE(MAP_FAILED, map);
	EXPECT_EQ(-1, check(map, SZ_1M, 3));
	munmap(map, SZ_1M);
	close(fd2);
	EXPECT_EQ(0, drmCloseBufferHandle(self->vgem, handle));
	if (ref0 >= 0)
		EXPECT_EQ(ref0, wait_refcnt(ref0, 2000));
}

/*
 * Lifetime: vgem holds an mmedge buffer (every mmedge fd closed) across
 * the unbind of the device: it stays readable through vgem's export and
 * the mapping, and closes while unbound; a bind brings /dev/mmedge0 back.
 */
TEST_F_TIMEOUT(hostile, vgem_holds_across_unbind, 60)
{
	__u32 handle;
	int fd, fd2;
	uint8_t *map;

	BEGIN();

	NEED_ROOT("unbind");
	NEED_VGEM();
	fd = buf_new(self->dev, SZ_1M, 0, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	map = mmap(NULL, SZ_1M, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, map);
	fill(map, SZ_1M, 4);
	ASSERT_EQ(0, drmPrimeFDToHandle(self->vgem, fd, &handle));
	close(fd);
	close(self->dev);
	self->dev = -1;

	ASSERT_EQ(0, do_unbind(self));
	EXPECT_EQ(-1, check(map, SZ_1M, 4));
	EXPECT_EQ(0, drmPrimeHandleToFD(self->vgem, handle,
					DRM_CLOEXEC | DRM_RDWR, &fd2));
	if (fd2 >= 0) {
		uint8_t *m2 = mmap(NULL, SZ_1M, PROT_READ, MAP_SHARED, fd2, 0);

		EXPECT_NE(MAP_FAILED, m2);
		if (m2 != MAP_FAILED) {
			EXPECT_EQ(-1, check(m2, SZ_1M, 4));
			munmap(m2, SZ_1M);
		}
	}
	/* The last holders go while the device is unbound. */
	EXPECT_EQ(0, drmCloseBufferHandle(self->vgem, handle));
	EXPECT_EQ(-1, check(map, SZ_1M, 4));
	EXPECT_EQ(0, munmap(map, SZ_1M));
	if (fd2 >= 0)
		EXPECT_EQ(0, close(fd2));
	/* Then the instance's number is free again: /dev/mmedge0 returns. */
	ASSERT_EQ(0, do_bind(self));
	self->dev = open_dev();
	EXPECT_LE(0, self->dev);
}

/* Lifetime: a mapping outlives the dma-buf fd and the device fd. */
TEST_F_TIMEOUT(hostile, mmap_after_close, 30)
{
	const size_t size = SZ_1M + SZ_64K;
	uint8_t *map;
	int fd;

	BEGIN();

	fd = buf_new(self->dev, size, 0, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, map);
	fill(map, size, 1);
	close(fd);
	close(self->dev);
	self->dev = -1;
	EXPECT_EQ(-1, check(map, size, 1));
	fill(map, size, 2);
	EXPECT_EQ(-1, check(map, size, 2));
	EXPECT_EQ(0, munmap(map, size));
}

/*
 * Lifetime: fork with buffers. The child maps the inherited dma-buf,
 * writes and exits; the parent reads what it wrote. Either side may
 * close first: in the second round the parent closes its fd (keeping
 * only its mapping) before the child writes.
 */
TEST_F_TIMEOUT(hostile, fork_with_buffers, 60)
{
	const size_t size = 256 * 1024;
	int round;

	BEGIN();

	for (round = 0; round < 2; round++) {
		int fd, p[2], status;
		uint8_t *map;
		pid_t pid;
		char go = 0;

		fd = buf_new(self->dev, size, 0, O_RDWR);
		ASSERT_LE(0, fd);
		map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
			   0);
		ASSERT_NE(MAP_FAILED, map);
		fill(map, size, 20);
		ASSERT_EQ(0, pipe(p));
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid) {
			uint8_t *m;

			close(p[1]);
			if (read(p[0], &go, 1) != 1)
				_exit(2);
			m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED,
				 fd, 0);
			if (m == MAP_FAILED)
				_exit(3);
			if (check(m, size, 20) != -1 || check(map, size, 20) != -1)
				_exit(4);
			close(fd);
			fill(m, size, 21 + round);
			munmap(m, size);
			_exit(0);
		}
		close(p[0]);
		if (round == 1) {
			close(fd);
			fd = -1;
		}
		ASSERT_EQ(1, write(p[1], &go, 1));
		close(p[1]);
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		EXPECT_TRUE(WIFEXITED(status));
		EXPECT_EQ(0, WEXITSTATUS(status));
		EXPECT_EQ(-1, check(map, size, 21 + round));
		munmap(map, size);
		if (fd >= 0)
			close(fd);
	}
}

TEST_HARNESS_MAIN

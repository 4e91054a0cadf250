// SPDX-License-Identifier: GPL-2.0
/*
 * kselftests for the mmedge character device: capabilities query, argument
 * validation, size-tolerant structures, and the device/module lifetime.
 *
 * Needs mmedge.ko loaded with a virtual instance (/dev/mmedge0). The
 * lifetime tests also need the module's path in MMEDGE_KO and root.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <linux/mmedge.h>

#include "../kselftest_harness.h"
#include "mmedge_util.h"

#define SYSDIR		"/sys/class/mmedge/mmedge0"

/* A caps structure from a newer userspace: ours plus a tail. */
struct mmedge_caps_newer {
	struct mmedge_caps v0;
	__u64 extra[16];
};

#define MMEDGE_IOC_QUERY_CAPS_SIZE(sz) \
	_IOC(_IOC_READ | _IOC_WRITE, MMEDGE_IOC_MAGIC, 0, (sz))

FIXTURE(mmedge) {
	int fd;
};

FIXTURE_SETUP(mmedge)
{
	self->fd = open_dev();
	if (self->fd < 0 && errno == ENOENT)
		SKIP(return, "%s not present (is mmedge.ko loaded?)", DEVPATH);
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(mmedge)
{
	if (self->fd >= 0)
		close(self->fd);
}

TEST_F(mmedge, caps_query)
{
	struct mmedge_caps caps;
	char pdev[64], bus[80];

	ASSERT_EQ(0, dev0_pdev(pdev, sizeof(pdev)));
	snprintf(bus, sizeof(bus), "platform:%s", pdev);
	memset(&caps, 0, sizeof(caps));
	ASSERT_EQ(0, xioctl(self->fd, MMEDGE_IOC_QUERY_CAPS, &caps));
	EXPECT_EQ(MMEDGE_API_VERSION, caps.api_version);
	EXPECT_STREQ("mmedge", (char *)caps.driver);
	EXPECT_STREQ(bus, (char *)caps.bus_info);
	EXPECT_EQ(0, caps.instance);
	/* Virtual unless a device-tree node gave the instance. */
	EXPECT_EQ(!dev0_from_dt(), !!(caps.caps & MMEDGE_CAP_VIRTUAL));
	EXPECT_TRUE(caps.ioctls & (1ULL << _IOC_NR(MMEDGE_IOC_QUERY_CAPS)));
	EXPECT_EQ(0, caps.flags);
	EXPECT_EQ(0, caps.reserved[0]);
}

/* Stale output values from an earlier call are not input errors. */
TEST_F(mmedge, caps_query_twice)
{
	struct mmedge_caps caps;

	memset(&caps, 0, sizeof(caps));
	ASSERT_EQ(0, xioctl(self->fd, MMEDGE_IOC_QUERY_CAPS, &caps));
	ASSERT_EQ(0, xioctl(self->fd, MMEDGE_IOC_QUERY_CAPS, &caps));
	EXPECT_EQ(MMEDGE_API_VERSION, caps.api_version);
}

TEST_F(mmedge, caps_unknown_flags)
{
	struct mmedge_caps caps;
	unsigned int bit;

	for (bit = 0; bit < 32; bit++) {
		if ((1U << bit) & MMEDGE_CAPS_FLAGS_VALID)
			continue;
		memset(&caps, 0, sizeof(caps));
		caps.flags = 1U << bit;
		EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_QUERY_CAPS,
					  &caps)) TH_LOG("flag bit %u", bit);
	}
}

TEST_F(mmedge, caps_reserved_nonzero)
{
	struct mmedge_caps caps;
	unsigned int i;

	for (i = 0; i < sizeof(caps.reserved) / sizeof(caps.reserved[0]); i++) {
		memset(&caps, 0, sizeof(caps));
		caps.reserved[i] = 1;
		EXPECT_EQ(-EINVAL, xioctl(self->fd, MMEDGE_IOC_QUERY_CAPS,
					  &caps)) TH_LOG("reserved[%u]", i);
	}
}

/* A structure smaller than the first published size is refused. */
TEST_F(mmedge, caps_older_struct)
{
	struct mmedge_caps caps;

	memset(&caps, 0, sizeof(caps));
	EXPECT_EQ(-EINVAL, xioctl(self->fd,
				  MMEDGE_IOC_QUERY_CAPS_SIZE(64), &caps));
	EXPECT_EQ(0, caps.api_version);
}

/* A larger structure with a zero tail works; the tail is left alone. */
TEST_F(mmedge, caps_newer_struct)
{
	struct mmedge_caps_newer caps;

	memset(&caps, 0, sizeof(caps));
	ASSERT_EQ(0, xioctl(self->fd,
			    MMEDGE_IOC_QUERY_CAPS_SIZE(sizeof(caps)), &caps));
	EXPECT_EQ(MMEDGE_API_VERSION, caps.v0.api_version);
	EXPECT_EQ(0, caps.extra[0]);
	EXPECT_EQ(0, caps.extra[15]);
}

/* A larger structure using fields this kernel does not know: -E2BIG. */
TEST_F(mmedge, caps_newer_struct_nonzero_tail)
{
	struct mmedge_caps_newer caps;

	memset(&caps, 0, sizeof(caps));
	caps.extra[7] = 1;
	EXPECT_EQ(-E2BIG, xioctl(self->fd,
				 MMEDGE_IOC_QUERY_CAPS_SIZE(sizeof(caps)),
				 &caps));
	EXPECT_EQ(0, caps.v0.api_version);
}

TEST_F(mmedge, caps_bad_pointer)
{
	EXPECT_EQ(-EFAULT, xioctl(self->fd, MMEDGE_IOC_QUERY_CAPS,
				  (void *)16));
}

TEST_F(mmedge, unknown_ioctl_number)
{
	struct mmedge_caps caps;

	memset(&caps, 0, sizeof(caps));
	EXPECT_EQ(-ENOTTY, xioctl(self->fd,
				  _IOWR(MMEDGE_IOC_MAGIC, 0x7f,
					struct mmedge_caps), &caps));
}

TEST_F(mmedge, unknown_ioctl_magic)
{
	struct mmedge_caps caps;

	memset(&caps, 0, sizeof(caps));
	EXPECT_EQ(-ENOTTY, xioctl(self->fd,
				  _IOWR('D', 0, struct mmedge_caps), &caps));
}

TEST_F(mmedge, wrong_direction)
{
	struct mmedge_caps caps;

	memset(&caps, 0, sizeof(caps));
	EXPECT_EQ(-ENOTTY, xioctl(self->fd,
				  _IOR(MMEDGE_IOC_MAGIC, 0,
				       struct mmedge_caps), &caps));
}

TEST_F(mmedge, not_seekable)
{
	EXPECT_EQ(-1, lseek(self->fd, 0, SEEK_SET));
	EXPECT_EQ(ESPIPE, errno);
}

TEST_F(mmedge, sysfs_attributes)
{
	char buf[64];

	ASSERT_EQ(0, read_file(SYSDIR "/virtual", buf, sizeof(buf)));
	EXPECT_STREQ(dev0_from_dt() ? "0\n" : "1\n", buf);
	ASSERT_EQ(0, read_file(SYSDIR "/api_version", buf, sizeof(buf)));
	EXPECT_EQ(MMEDGE_API_VERSION, atoi(buf));
}

/* Every open file is independent: two contexts answer at the same time. */
TEST_F(mmedge, two_files)
{
	struct mmedge_caps a, b;
	int fd2 = open_dev();

	ASSERT_LE(0, fd2);
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	EXPECT_EQ(0, xioctl(self->fd, MMEDGE_IOC_QUERY_CAPS, &a));
	EXPECT_EQ(0, xioctl(fd2, MMEDGE_IOC_QUERY_CAPS, &b));
	EXPECT_EQ(0, memcmp(&a, &b, sizeof(a)));
	close(fd2);
}

/*
 * Unbinding the device while a file is open must not free memory under
 * the file: its ioctls fail with -ENODEV, close works, and a new bind
 * brings the device back.
 */
TEST_F(mmedge, unbind_while_open)
{
	struct mmedge_caps caps;
	char pdev[64];
	int fd2;

	if (geteuid() != 0)
		SKIP(return, "needs root to unbind");
	ASSERT_EQ(0, dev0_pdev(pdev, sizeof(pdev)));
	ASSERT_EQ(0, write_str(PDRV_DIR "/unbind", pdev));
	memset(&caps, 0, sizeof(caps));
	EXPECT_EQ(-ENODEV, xioctl(self->fd, MMEDGE_IOC_QUERY_CAPS, &caps));
	EXPECT_EQ(-1, access(DEVPATH, F_OK));
	EXPECT_EQ(0, close(self->fd));
	self->fd = -1;

	ASSERT_EQ(0, write_str(PDRV_DIR "/bind", pdev));
	fd2 = open_dev();
	ASSERT_LE(0, fd2);
	memset(&caps, 0, sizeof(caps));
	EXPECT_EQ(0, xioctl(fd2, MMEDGE_IOC_QUERY_CAPS, &caps));
	close(fd2);
}

/*
 * The module cannot go while a file is open; after the last close it
 * unloads cleanly, and loads again.
 */
TEST(unload_after_close)
{
	const char *ko = getenv("MMEDGE_KO");
	struct mmedge_caps caps;
	int fd;

	if (!ko || geteuid() != 0)
		SKIP(return, "needs root and MMEDGE_KO=<path to mmedge.ko>");
	fd = open_dev();
	if (fd < 0)
		SKIP(return, "%s not present", DEVPATH);

	EXPECT_EQ(-EWOULDBLOCK, mod_delete("mmedge"));
	memset(&caps, 0, sizeof(caps));
	EXPECT_EQ(0, xioctl(fd, MMEDGE_IOC_QUERY_CAPS, &caps));
	close(fd);

	ASSERT_EQ(0, mod_delete("mmedge"));
	EXPECT_EQ(-1, access(DEVPATH, F_OK));
	EXPECT_EQ(-1, access(SYSDIR, F_OK));

	ASSERT_EQ(0, mod_load(ko));
	fd = open_dev();
	ASSERT_LE(0, fd);
	memset(&caps, 0, sizeof(caps));
	EXPECT_EQ(0, xioctl(fd, MMEDGE_IOC_QUERY_CAPS, &caps));
	close(fd);
}

TEST_HARNESS_MAIN

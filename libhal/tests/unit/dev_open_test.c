// SPDX-License-Identifier: MIT
/*
 * Host tests of the device layer that need no mmedge device: every way
 * mmhal_dev_open() must refuse, and the conversion of the driver's caps.
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "device/mmhal_internal.h"
#include "tests/tap.h"

/* Poison so that a function that forgets to clear its output shows up. */
#define POISON_DEV	((struct mmhal_dev *)0x5a5a5a5aUL)

static int count_fds(void)
{
	struct dirent *de;
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

static void test_open_missing_path(void)
{
	struct mmhal_dev *dev = POISON_DEV;

	CHECK_INT(mmhal_dev_open("/nonexistent/mmedge0", &dev), -ENOENT);
	CHECK(dev == NULL);
	dev = POISON_DEV;
	CHECK_INT(mmhal_dev_open("", &dev), -ENOENT);
	CHECK(dev == NULL);
}

static void test_open_default_path_absent(void)
{
	struct mmhal_dev *dev = POISON_DEV;

	if (access(MMHAL_DEFAULT_DEV, F_OK) == 0)
		SKIP(MMHAL_DEFAULT_DEV " exists on this machine");
	CHECK_INT(mmhal_dev_open(NULL, &dev), -ENOENT);
	CHECK(dev == NULL);
}

/* A character device whose driver does not know our ioctl. */
static void test_open_dev_null(void)
{
	struct mmhal_dev *dev = POISON_DEV;

	CHECK_INT(mmhal_dev_open("/dev/null", &dev), -ENODEV);
	CHECK(dev == NULL);
}

static void test_open_regular_file(void)
{
	char path[] = "/tmp/mmhal-test-XXXXXX";
	struct mmhal_dev *dev = POISON_DEV;
	int fd = mkstemp(path);

	if (fd < 0)
		FAIL("mkstemp: %s", strerror(errno));
	CHECK(write(fd, "mmedge", 6) == 6);
	close(fd);

	CHECK_INT(mmhal_dev_open(path, &dev), -ENODEV);
	CHECK(dev == NULL);
	unlink(path);
}

static void test_open_directory(void)
{
	struct mmhal_dev *dev = POISON_DEV;

	/* open(O_RDWR) of a directory fails before the char-dev check. */
	CHECK_INT(mmhal_dev_open("/tmp", &dev), -EISDIR);
	CHECK(dev == NULL);
}

static void test_open_null_out(void)
{
	CHECK_INT(mmhal_dev_open("/dev/null", NULL), -EINVAL);
	CHECK_INT(mmhal_dev_open(NULL, NULL), -EINVAL);
}

static void test_open_failures_leak_no_fd(void)
{
	struct mmhal_dev *dev;
	int before = count_fds();
	int i;

	if (before < 0)
		SKIP("no /proc/self/fd");
	for (i = 0; i < 16; i++) {
		mmhal_dev_open("/dev/null", &dev);
		mmhal_dev_open("/tmp", &dev);
		mmhal_dev_open("/nonexistent", &dev);
	}
	CHECK_INT(count_fds(), before);
}

static void test_close_null(void)
{
	mmhal_dev_close(NULL);	/* must not crash */
}

static void test_caps_and_fd_null_dev(void)
{
	struct mmhal_caps caps;

	memset(&caps, 0xa5, sizeof(caps));
	CHECK_INT(mmhal_dev_caps(NULL, &caps), -EINVAL);
	CHECK_INT(caps.api_version, 0);
	CHECK_INT(caps.driver[0], 0);
	CHECK_INT(mmhal_dev_caps(NULL, NULL), -EINVAL);
	CHECK_INT(mmhal_dev_fd(NULL), -EINVAL);
}

static void fill_uapi_caps(struct mmedge_caps *c)
{
	memset(c, 0, sizeof(*c));
	c->api_version = MMEDGE_API_VERSION;
	c->caps = MMEDGE_CAP_VIRTUAL;
	c->ioctls = 1ULL << _IOC_NR(MMEDGE_IOC_QUERY_CAPS);
	c->instance = 3;
	c->max_channels = 8;
	c->max_buffer_size = 1ULL << 33;
	c->mem_limit = 1ULL << 34;
	memcpy(c->driver, "mmedge", 7);
	memcpy(c->bus_info, "platform:mmedge.3", 18);
}

static void test_caps_from_uapi(void)
{
	struct mmedge_caps in;
	struct mmhal_caps out;

	fill_uapi_caps(&in);
	memset(&out, 0xa5, sizeof(out));
	CHECK_INT(mmhal_caps_from_uapi(&in, &out), 0);
	CHECK_INT(out.api_version, MMEDGE_API_VERSION);
	CHECK_INT(out.caps, MMHAL_CAP_VIRTUAL);
	CHECK_INT(out.virtual_dev, 1);
	CHECK_INT(out.ioctls, 1ULL << MMHAL_IOCTL_QUERY_CAPS);
	CHECK_INT(out.instance, 3);
	CHECK_INT(out.max_channels, 8);
	CHECK(out.max_buffer_size == 1ULL << 33);
	CHECK(out.mem_limit == 1ULL << 34);
	CHECK_STR(out.driver, "mmedge");
	CHECK_STR(out.bus_info, "platform:mmedge.3");
	CHECK_INT(out.reserved[0], 0);
	CHECK_INT(out.reserved[7], 0);

	in.caps = 0;
	CHECK_INT(mmhal_caps_from_uapi(&in, &out), 0);
	CHECK_INT(out.virtual_dev, 0);
}

static void test_caps_from_uapi_versions(void)
{
	struct mmedge_caps in;
	struct mmhal_caps out;

	fill_uapi_caps(&in);
	in.api_version = 0;
	memset(&out, 0xa5, sizeof(out));
	CHECK_INT(mmhal_caps_from_uapi(&in, &out), -EPROTO);
	CHECK_INT(out.api_version, 0);	/* zeroed on failure */

	/* A newer driver is accepted; unknown cap bits pass through. */
	in.api_version = MMEDGE_API_VERSION + 41;
	in.caps |= 1ULL << 63;
	CHECK_INT(mmhal_caps_from_uapi(&in, &out), 0);
	CHECK_INT(out.api_version, MMEDGE_API_VERSION + 41);
	CHECK(out.caps == (MMHAL_CAP_VIRTUAL | 1ULL << 63));
}

/* A driver that forgets the NUL must not make the HAL overrun. */
static void test_caps_from_uapi_unterminated(void)
{
	struct mmedge_caps in;
	struct mmhal_caps out;

	fill_uapi_caps(&in);
	memset(in.driver, 'd', sizeof(in.driver));
	memset(in.bus_info, 'b', sizeof(in.bus_info));
	CHECK_INT(mmhal_caps_from_uapi(&in, &out), 0);
	CHECK_INT(strlen(out.driver), MMHAL_DRIVER_LEN - 1);
	CHECK_INT(strlen(out.bus_info), MMHAL_BUS_INFO_LEN - 1);
}

static const struct tap_test tests[] = {
	TAP_TEST(test_open_missing_path),
	TAP_TEST(test_open_default_path_absent),
	TAP_TEST(test_open_dev_null),
	TAP_TEST(test_open_regular_file),
	TAP_TEST(test_open_directory),
	TAP_TEST(test_open_null_out),
	TAP_TEST(test_open_failures_leak_no_fd),
	TAP_TEST(test_close_null),
	TAP_TEST(test_caps_and_fd_null_dev),
	TAP_TEST(test_caps_from_uapi),
	TAP_TEST(test_caps_from_uapi_versions),
	TAP_TEST(test_caps_from_uapi_unterminated),
};

int main(void)
{
	return tap_run(tests, TAP_COUNT(tests));
}

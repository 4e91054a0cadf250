// SPDX-License-Identifier: MIT
/*
 * mmhal_dev_test - check libmmhal against a real mmedge device
 *
 *	mmhal_dev_test [--skip-missing] [DEVICE]
 *
 * DEVICE defaults to /dev/mmedge0. Prints TAP; exits 0 if every test
 * passed, 1 otherwise. A missing DEVICE is a failure, unless --skip-missing
 * is given: then the whole run is skipped ("1..0 # SKIP") and exits 0.
 * Meant to run inside the test VM, where mmedge.ko is loaded.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mmhal.h"
#include "tap.h"

static const char *dev_path = MMHAL_DEFAULT_DEV;
static struct mmhal_dev *dev;
static struct mmhal_caps caps;

/* The N of ".../mmedgeN" after resolving links, or -1 if not that form. */
static long path_instance(const char *path)
{
	char real[PATH_MAX];
	const char *base;
	char *end;
	long n;

	if (!realpath(path, real))
		snprintf(real, sizeof(real), "%s", path);
	base = basename(real);
	if (strncmp(base, "mmedge", 6) || !base[6])
		return -1;
	n = strtol(base + 6, &end, 10);
	return *end ? -1 : n;
}

static void test_open(void)
{
	int ret = mmhal_dev_open(dev_path, &dev);

	if (ret < 0) {
		tap_diag("mmhal_dev_open(%s): %s", dev_path,
			 mmhal_strerror(ret));
		BAIL_OUT("cannot open the device");
	}
	CHECK(dev != NULL);
}

static void test_fd_cloexec(void)
{
	int fd, flags;

	if (!dev)
		FAIL("no device handle");
	fd = mmhal_dev_fd(dev);
	CHECK(fd >= 0);
	flags = fcntl(fd, F_GETFD);
	CHECK(flags >= 0 && (flags & FD_CLOEXEC));
	flags = fcntl(fd, F_GETFL);
	CHECK(flags >= 0 && (flags & O_ACCMODE) == O_RDWR);
}

static void test_caps(void)
{
	if (!dev)
		FAIL("no device handle");
	CHECK_INT(mmhal_dev_caps(dev, &caps), 0);
	CHECK_INT(mmhal_dev_caps(dev, NULL), -EINVAL);
}

static void test_caps_driver_name(void)
{
	CHECK_STR(caps.driver, "mmedge");
}

static void test_caps_api_version(void)
{
	CHECK(caps.api_version >= 1);
	tap_diag("api_version %u", caps.api_version);
}

static void test_caps_instance(void)
{
	long n = path_instance(dev_path);

	if (n < 0)
		SKIP("device path is not .../mmedgeN");
	CHECK_INT(caps.instance, n);
}

static void test_caps_bus_info(void)
{
	CHECK(strncmp(caps.bus_info, "platform:", 9) == 0);
	tap_diag("bus_info %s", caps.bus_info);
}

static void test_caps_query_caps_listed(void)
{
	CHECK(caps.ioctls & (1ULL << MMHAL_IOCTL_QUERY_CAPS));
}

static void test_caps_virtual_consistent(void)
{
	CHECK_INT(caps.virtual_dev, !!(caps.caps & MMHAL_CAP_VIRTUAL));
}

static void test_second_handle_independent(void)
{
	struct mmhal_dev *dev2 = NULL;
	struct mmhal_caps caps2;
	int ret;

	if (!dev)
		FAIL("no device handle");
	ret = mmhal_dev_open(dev_path, &dev2);
	if (ret < 0)
		FAIL("second open: %s", mmhal_strerror(ret));
	CHECK(mmhal_dev_fd(dev2) != mmhal_dev_fd(dev));
	CHECK_INT(mmhal_dev_caps(dev2, &caps2), 0);
	CHECK_INT(caps2.instance, caps.instance);
	mmhal_dev_close(dev2);

	/* Closing one handle leaves the other working. */
	CHECK_INT(mmhal_dev_caps(dev, &caps2), 0);
	CHECK(fcntl(mmhal_dev_fd(dev), F_GETFD) >= 0);
}

static void test_close(void)
{
	mmhal_dev_close(dev);
	dev = NULL;
}

static const struct tap_test tests[] = {
	TAP_TEST(test_open),
	TAP_TEST(test_fd_cloexec),
	TAP_TEST(test_caps),
	TAP_TEST(test_caps_driver_name),
	TAP_TEST(test_caps_api_version),
	TAP_TEST(test_caps_instance),
	TAP_TEST(test_caps_bus_info),
	TAP_TEST(test_caps_query_caps_listed),
	TAP_TEST(test_caps_virtual_consistent),
	TAP_TEST(test_second_handle_independent),
	TAP_TEST(test_close),
};

int main(int argc, char **argv)
{
	int skip_missing = 0;
	int i;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--skip-missing")) {
			skip_missing = 1;
			continue;
		}
		if (argv[i][0] == '-' || i != argc - 1) {
			fprintf(stderr,
				"usage: %s [--skip-missing] [DEVICE]\n",
				argv[0]);
			return 2;
		}
		dev_path = argv[i];
	}

	if (skip_missing && access(dev_path, F_OK) < 0 && errno == ENOENT) {
		printf("1..0 # SKIP %s not present\n", dev_path);
		return 0;
	}
	return tap_run(tests, TAP_COUNT(tests));
}

// SPDX-License-Identifier: MIT
/* Host tests of messages, names and the version. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "mmhal.h"
#include "tests/tap.h"

static void test_strerror_mmedge_wording(void)
{
	CHECK_STR(mmhal_strerror(-ENODEV), "not an mmedge device");
	CHECK_STR(mmhal_strerror(ENODEV), "not an mmedge device");
	CHECK(strstr(mmhal_strerror(-EPROTO), "version") != NULL);
	CHECK(strstr(mmhal_strerror(-ENOTTY), "not supported") != NULL);
	CHECK(strstr(mmhal_strerror(-E2BIG), "does not know") != NULL);
}

static void test_strerror_libc_wording(void)
{
	/* mmctl's "cannot open ...: No such file or directory" relies on it. */
	CHECK_STR(mmhal_strerror(-ENOENT), "No such file or directory");
	CHECK_STR(mmhal_strerror(-EACCES), "Permission denied");
	CHECK_STR(mmhal_strerror(-EINVAL), "Invalid argument");
	CHECK_STR(mmhal_strerror(-ENOMEM), "Cannot allocate memory");
}

static void test_strerror_edges(void)
{
	CHECK_STR(mmhal_strerror(0), "success");
	CHECK_STR(mmhal_strerror(-99999), "unknown error");
	CHECK_STR(mmhal_strerror(INT_MIN), "unknown error");
	CHECK_STR(mmhal_strerror(INT_MAX), "unknown error");
}

static void test_version(void)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%d.%d.%d", MMHAL_VERSION_MAJOR,
		 MMHAL_VERSION_MINOR, MMHAL_VERSION_PATCH);
	CHECK_STR(MMHAL_VERSION_STRING, buf);
	CHECK_STR(mmhal_version(), MMHAL_VERSION_STRING);
}

static void test_cap_names(void)
{
	CHECK_STR(mmhal_cap_name(0), "virtual");
	CHECK(MMHAL_CAP_VIRTUAL == 1ULL << 0);
	CHECK_STR(mmhal_cap_name(1), "buffers");
	CHECK_STR(mmhal_cap_name(2), "contig");
	CHECK_STR(mmhal_cap_name(3), "channels");
	CHECK(MMHAL_CAP_CHANNELS == 1ULL << 3);
	CHECK(mmhal_cap_name(4) == NULL);
	CHECK(mmhal_cap_name(63) == NULL);
	CHECK(mmhal_cap_name(64) == NULL);
	CHECK(mmhal_cap_name(~0U) == NULL);
}

static void test_ioctl_names(void)
{
	CHECK_STR(mmhal_ioctl_name(MMHAL_IOCTL_QUERY_CAPS), "QUERY_CAPS");
	CHECK_STR(mmhal_ioctl_name(MMHAL_IOCTL_BUF_RELEASE), "BUF_RELEASE");
	CHECK_STR(mmhal_ioctl_name(MMHAL_IOCTL_CHAN_CREATE), "CHAN_CREATE");
	CHECK_STR(mmhal_ioctl_name(MMHAL_IOCTL_CHAN_CONFIG), "CHAN_CONFIG");
	CHECK_STR(mmhal_ioctl_name(MMHAL_IOCTL_CHAN_DESTROY), "CHAN_DESTROY");
	CHECK_STR(mmhal_ioctl_name(MMHAL_IOCTL_QBUF), "QBUF");
	CHECK_STR(mmhal_ioctl_name(MMHAL_IOCTL_DQBUF), "DQBUF");
	CHECK_STR(mmhal_ioctl_name(MMHAL_IOCTL_CHAN_STATS), "CHAN_STATS");
	CHECK_STR(mmhal_ioctl_name(MMHAL_IOCTL_BUS_CONFIG), "BUS_CONFIG");
	CHECK_STR(mmhal_ioctl_name(MMHAL_IOCTL_XTS), "XTS");
	CHECK(mmhal_ioctl_name(MMHAL_IOCTL_XTS + 1) == NULL);
	CHECK(mmhal_ioctl_name(63) == NULL);
	CHECK(mmhal_ioctl_name(~0U) == NULL);
}

static const struct tap_test tests[] = {
	TAP_TEST(test_strerror_mmedge_wording),
	TAP_TEST(test_strerror_libc_wording),
	TAP_TEST(test_strerror_edges),
	TAP_TEST(test_version),
	TAP_TEST(test_cap_names),
	TAP_TEST(test_ioctl_names),
};

int main(void)
{
	return tap_run(tests, TAP_COUNT(tests));
}

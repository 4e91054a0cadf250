// SPDX-License-Identifier: MIT
/*
 * Messages, names and the library version. Nothing here touches a device.
 */
#define _GNU_SOURCE		/* strerrordesc_np() */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "mmhal_internal.h"

/* Errors whose generic C library wording would mislead for mmedge. */
static const struct {
	int err;
	const char *msg;
} mmhal_errors[] = {
	{ ENODEV, "not an mmedge device" },
	{ EPROTO, "mmedge driver interface version not supported" },
	{ ENOTTY, "operation not supported by this mmedge driver" },
	{ E2BIG, "request has fields this mmedge driver does not know" },
};

static const char *const mmhal_cap_names[] = {
	[0] = "virtual",		/* MMHAL_CAP_VIRTUAL */
	[1] = "buffers",		/* MMHAL_CAP_BUFFERS */
	[2] = "contig",			/* MMHAL_CAP_CONTIG */
};

static const char *const mmhal_ioctl_names[] = {
	[_IOC_NR(MMEDGE_IOC_QUERY_CAPS)] = "QUERY_CAPS",
	[_IOC_NR(MMEDGE_IOC_BUF_ALLOC)] = "BUF_ALLOC",
	[_IOC_NR(MMEDGE_IOC_BUF_INFO)] = "BUF_INFO",
	[_IOC_NR(MMEDGE_IOC_BUF_SYNC)] = "BUF_SYNC",
	[_IOC_NR(MMEDGE_IOC_BUF_IMPORT)] = "BUF_IMPORT",
	[_IOC_NR(MMEDGE_IOC_BUF_RELEASE)] = "BUF_RELEASE",
};

const char *mmhal_strerror(int err)
{
	const char *msg;
	size_t i;

	if (err == 0)
		return "success";
	if (err == INT_MIN)
		return "unknown error";
	if (err < 0)
		err = -err;

	for (i = 0; i < MMHAL_ARRAY_SIZE(mmhal_errors); i++)
		if (mmhal_errors[i].err == err)
			return mmhal_errors[i].msg;

	/* Unlike strerror(), never formats into a shared buffer. */
	msg = strerrordesc_np(err);
	return msg ? msg : "unknown error";
}

const char *mmhal_version(void)
{
	return MMHAL_VERSION_STRING;
}

const char *mmhal_cap_name(unsigned int bit)
{
	if (bit >= MMHAL_ARRAY_SIZE(mmhal_cap_names))
		return NULL;
	return mmhal_cap_names[bit];
}

const char *mmhal_ioctl_name(unsigned int nr)
{
	if (nr >= MMHAL_ARRAY_SIZE(mmhal_ioctl_names))
		return NULL;
	return mmhal_ioctl_names[nr];
}

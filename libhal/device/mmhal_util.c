// SPDX-License-Identifier: MIT
/*
 * Messages, names and the library version. Nothing here touches a device.
 */
#include <assert.h>
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
	[3] = "channels",		/* MMHAL_CAP_CHANNELS */
};

static_assert(MMHAL_CAP_VIRTUAL == MMEDGE_CAP_VIRTUAL &&
	      MMEDGE_CAP_VIRTUAL == 1ULL << 0, "cap name table drift");
static_assert(MMHAL_CAP_BUFFERS == MMEDGE_CAP_BUFFERS &&
	      MMEDGE_CAP_BUFFERS == 1ULL << 1, "cap name table drift");
static_assert(MMHAL_CAP_CONTIG == MMEDGE_CAP_CONTIG &&
	      MMEDGE_CAP_CONTIG == 1ULL << 2, "cap name table drift");
static_assert(MMHAL_CAP_CHANNELS == MMEDGE_CAP_CHANNELS &&
	      MMEDGE_CAP_CHANNELS == 1ULL << 3, "cap name table drift");

static const char *const mmhal_ioctl_names[] = {
	[_IOC_NR(MMEDGE_IOC_QUERY_CAPS)] = "QUERY_CAPS",
	[_IOC_NR(MMEDGE_IOC_BUF_ALLOC)] = "BUF_ALLOC",
	[_IOC_NR(MMEDGE_IOC_BUF_INFO)] = "BUF_INFO",
	[_IOC_NR(MMEDGE_IOC_BUF_SYNC)] = "BUF_SYNC",
	[_IOC_NR(MMEDGE_IOC_BUF_IMPORT)] = "BUF_IMPORT",
	[_IOC_NR(MMEDGE_IOC_BUF_RELEASE)] = "BUF_RELEASE",
	[_IOC_NR(MMEDGE_IOC_CHAN_CREATE)] = "CHAN_CREATE",
	[_IOC_NR(MMEDGE_IOC_CHAN_CONFIG)] = "CHAN_CONFIG",
	[_IOC_NR(MMEDGE_IOC_CHAN_DESTROY)] = "CHAN_DESTROY",
	[_IOC_NR(MMEDGE_IOC_QBUF)] = "QBUF",
	[_IOC_NR(MMEDGE_IOC_DQBUF)] = "DQBUF",
	[_IOC_NR(MMEDGE_IOC_CHAN_STATS)] = "CHAN_STATS",
	[_IOC_NR(MMEDGE_IOC_BUS_CONFIG)] = "BUS_CONFIG",
	[_IOC_NR(MMEDGE_IOC_XTS)] = "XTS",
};

/* Every number up to the last is named (no hole in the table). */
static_assert(MMHAL_ARRAY_SIZE(mmhal_ioctl_names) ==
	      _IOC_NR(MMEDGE_IOC_XTS) + 1, "ioctl name table has holes");
static_assert(MMHAL_IOCTL_XTS == _IOC_NR(MMEDGE_IOC_XTS), "nr drift");
static_assert(MMHAL_IOCTL_CHAN_CREATE == _IOC_NR(MMEDGE_IOC_CHAN_CREATE),
	      "nr drift");

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

// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for mmedge's ioctl table and argument validation.
 */

#include <kunit/test.h>
#include <linux/ioctl.h>

#include "mmedge_uapi.h"

struct mmedge_lookup_case {
	const char *desc;
	unsigned int cmd;
	int expect;
};

static const struct mmedge_lookup_case mmedge_lookup_cases[] = {
	{ "caps, current size", MMEDGE_IOC_QUERY_CAPS, 0 },
	{ "caps, larger size",
	  _IOC(_IOC_READ | _IOC_WRITE, MMEDGE_IOC_MAGIC, 0, 256), 0 },
	{ "caps, size below first published",
	  _IOC(_IOC_READ | _IOC_WRITE, MMEDGE_IOC_MAGIC, 0, 64), -EINVAL },
	{ "caps, size zero",
	  _IOC(_IOC_READ | _IOC_WRITE, MMEDGE_IOC_MAGIC, 0, 0), -EINVAL },
	{ "caps, read-only direction",
	  _IOR(MMEDGE_IOC_MAGIC, 0, struct mmedge_caps), -ENOTTY },
	{ "caps, no direction", _IO(MMEDGE_IOC_MAGIC, 0), -ENOTTY },
	{ "foreign magic",
	  _IOWR('D', 0, struct mmedge_caps), -ENOTTY },
	{ "number past the table",
	  _IOWR(MMEDGE_IOC_MAGIC, MMEDGE_IOCTL_NR_MAX, struct mmedge_caps),
	  -ENOTTY },
	{ "largest number", _IOWR(MMEDGE_IOC_MAGIC, 0xff, struct mmedge_caps),
	  -ENOTTY },
};

static void mmedge_lookup_case_desc(const struct mmedge_lookup_case *c,
				    char *desc)
{
	strscpy(desc, c->desc, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(mmedge_lookup, mmedge_lookup_cases, mmedge_lookup_case_desc);

static void mmedge_test_ioctl_lookup(struct kunit *test)
{
	const struct mmedge_lookup_case *c = test->param_value;
	const struct mmedge_ioctl_info *info = NULL;
	int ret;

	ret = mmedge_ioctl_lookup(c->cmd, &info);
	KUNIT_EXPECT_EQ(test, ret, c->expect);
	if (!ret) {
		KUNIT_ASSERT_NOT_NULL(test, info);
		KUNIT_EXPECT_EQ(test, _IOC_NR(info->cmd), _IOC_NR(c->cmd));
	}
}

/* Every table entry is self-consistent: numbered where it sits, its
 * kernel size at least its minimum, and a multiple of 8 bytes.
 */
static void mmedge_test_ioctl_table(struct kunit *test)
{
	unsigned int i;

	for (i = 0; i < MMEDGE_IOCTL_NR_MAX; i++) {
		const struct mmedge_ioctl_info *e = &mmedge_ioctls[i];

		if (!e->cmd)
			continue;
		KUNIT_EXPECT_EQ(test, _IOC_NR(e->cmd), i);
		KUNIT_EXPECT_EQ(test, _IOC_TYPE(e->cmd), MMEDGE_IOC_MAGIC);
		KUNIT_EXPECT_GE(test, _IOC_SIZE(e->cmd), e->min_size);
		KUNIT_EXPECT_EQ(test, _IOC_SIZE(e->cmd) % 8, 0);
		KUNIT_EXPECT_NOT_NULL(test, e->name);
	}
}

static void mmedge_test_ioctl_mask(struct kunit *test)
{
	u64 mask = mmedge_ioctl_mask();

	KUNIT_EXPECT_TRUE(test, mask & BIT_ULL(_IOC_NR(MMEDGE_IOC_QUERY_CAPS)));
	KUNIT_EXPECT_EQ(test, mask >> MMEDGE_IOCTL_NR_MAX, 0);
}

static void mmedge_test_caps_check_zero(struct kunit *test)
{
	struct mmedge_caps caps = { };

	KUNIT_EXPECT_EQ(test, mmedge_caps_check(&caps), 0);
}

/* Output fields are ignored on input: stale values do not fail a query. */
static void mmedge_test_caps_check_ignores_outputs(struct kunit *test)
{
	struct mmedge_caps caps = {
		.api_version = 99, .caps = ~0ULL, .instance = 3,
	};

	KUNIT_EXPECT_EQ(test, mmedge_caps_check(&caps), 0);
}

static void mmedge_test_caps_check_flags(struct kunit *test)
{
	unsigned int bit;

	for (bit = 0; bit < 32; bit++) {
		struct mmedge_caps caps = { .flags = 1U << bit };

		if (caps.flags & MMEDGE_CAPS_FLAGS_VALID)
			continue;
		KUNIT_EXPECT_EQ_MSG(test, mmedge_caps_check(&caps), -EINVAL,
				    "flag bit %u", bit);
	}
}

static void mmedge_test_caps_check_reserved(struct kunit *test)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(((struct mmedge_caps *)0)->reserved); i++) {
		struct mmedge_caps caps = { };

		caps.reserved[i] = 1ULL << 63;
		KUNIT_EXPECT_EQ_MSG(test, mmedge_caps_check(&caps), -EINVAL,
				    "reserved[%u]", i);
	}
}

static void mmedge_test_caps_layout(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, sizeof(struct mmedge_caps), MMEDGE_CAPS_SIZE_VER0);
	KUNIT_EXPECT_EQ(test, offsetof(struct mmedge_caps, caps), 8);
	KUNIT_EXPECT_EQ(test, offsetof(struct mmedge_caps, driver), 48);
	KUNIT_EXPECT_EQ(test, offsetof(struct mmedge_caps, reserved), 96);
}

static void mmedge_test_name_check(struct kunit *test)
{
	u8 name[16];

	memset(name, 0, sizeof(name));
	KUNIT_EXPECT_EQ(test, mmedge_name_check(name, sizeof(name)), 0);
	memcpy(name, "camera0", 7);
	KUNIT_EXPECT_EQ(test, mmedge_name_check(name, sizeof(name)), 0);
	memcpy(name, "front-cam_2", 11);
	KUNIT_EXPECT_EQ(test, mmedge_name_check(name, sizeof(name)), 0);
	name[0] = 'C';		/* upper case */
	KUNIT_EXPECT_EQ(test, mmedge_name_check(name, sizeof(name)), -EINVAL);
	name[0] = ' ';
	KUNIT_EXPECT_EQ(test, mmedge_name_check(name, sizeof(name)), -EINVAL);
	/* Not NUL-terminated within the field. */
	memset(name, 'a', sizeof(name));
	KUNIT_EXPECT_EQ(test, mmedge_name_check(name, sizeof(name)), -EINVAL);
	/* Garbage after the NUL. */
	memset(name, 0, sizeof(name));
	name[0] = 'a';
	name[5] = 'x';
	KUNIT_EXPECT_EQ(test, mmedge_name_check(name, sizeof(name)), -EINVAL);
}

static struct kunit_case mmedge_uapi_cases[] = {
	KUNIT_CASE(mmedge_test_name_check),
	KUNIT_CASE_PARAM(mmedge_test_ioctl_lookup, mmedge_lookup_gen_params),
	KUNIT_CASE(mmedge_test_ioctl_table),
	KUNIT_CASE(mmedge_test_ioctl_mask),
	KUNIT_CASE(mmedge_test_caps_check_zero),
	KUNIT_CASE(mmedge_test_caps_check_ignores_outputs),
	KUNIT_CASE(mmedge_test_caps_check_flags),
	KUNIT_CASE(mmedge_test_caps_check_reserved),
	KUNIT_CASE(mmedge_test_caps_layout),
	{}
};

static struct kunit_suite mmedge_uapi_suite = {
	.name = "mmedge_uapi",
	.test_cases = mmedge_uapi_cases,
};

kunit_test_suite(mmedge_uapi_suite);

MODULE_DESCRIPTION("KUnit tests for mmedge's uapi validation");
MODULE_LICENSE("GPL");

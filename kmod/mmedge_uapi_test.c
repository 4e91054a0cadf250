// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for mmedge's ioctl table and argument validation.
 */

#include <kunit/test.h>
#include <linux/ioctl.h>
#include <linux/stddef.h>

#include "mmedge_arb.h"
#include "mmedge_uapi.h"

/*
 * The driver's table (mmedge_ioctl.c) points at its handlers, which this
 * module does not link: the lookup is tested on a table of the same
 * shape, and mmedge_ioctl_table_check() is what checks the driver's at
 * load.
 */
static int mmedge_test_handler(struct mmedge_file *mf, void *data,
			       struct mmedge_ioctl_ctx *ctx)
{
	return 0;
}

static const struct mmedge_ioctl_info mmedge_test_ioctls[MMEDGE_IOCTL_NR_MAX] = {
	[_IOC_NR(MMEDGE_IOC_QUERY_CAPS)] = {
		.cmd = MMEDGE_IOC_QUERY_CAPS,
		.min_size = MMEDGE_CAPS_SIZE_VER0,
		.fn = mmedge_test_handler,
		.name = "QUERY_CAPS",
	},
	[_IOC_NR(MMEDGE_IOC_QBUF)] = {
		.cmd = MMEDGE_IOC_QBUF,
		.min_size = MMEDGE_QBUF_SIZE_VER0,
		.fn = mmedge_test_handler,
		.flags = MMEDGE_IOCTL_UNLOCKED,
		.name = "QBUF",
	},
	[_IOC_NR(MMEDGE_IOC_XTS)] = {
		.cmd = MMEDGE_IOC_XTS,
		.min_size = MMEDGE_XTS_SIZE_VER0,
		.fn = mmedge_test_handler,
		.name = "XTS",
	},
};

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

	ret = mmedge_ioctl_lookup(mmedge_test_ioctls,
				  ARRAY_SIZE(mmedge_test_ioctls), c->cmd, &info);
	KUNIT_EXPECT_EQ(test, ret, c->expect);
	if (!ret) {
		KUNIT_ASSERT_NOT_NULL(test, info);
		KUNIT_EXPECT_EQ(test, _IOC_NR(info->cmd), _IOC_NR(c->cmd));
	}
}

/*
 * mmedge_ioctl_table_check(): a table is self-consistent when every entry
 * is numbered where it sits, its kernel size is at least its minimum and
 * a multiple of 8 bytes, and it has a handler, a name and known flags.
 */
static void mmedge_test_ioctl_table(struct kunit *test)
{
	const unsigned int n = ARRAY_SIZE(mmedge_test_ioctls);
	struct mmedge_ioctl_info *t;
	const unsigned int caps = _IOC_NR(MMEDGE_IOC_QUERY_CAPS);

	t = kunit_kmalloc_array(test, n, sizeof(*t), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, t);
	memcpy(t, mmedge_test_ioctls, n * sizeof(*t));
	KUNIT_EXPECT_EQ(test, mmedge_ioctl_table_check(t, n), 0);

	t[caps].min_size = _IOC_SIZE(t[caps].cmd) + 8;
	KUNIT_EXPECT_EQ(test, mmedge_ioctl_table_check(t, n), -EINVAL);
	t[caps] = mmedge_test_ioctls[caps];
	t[caps].fn = NULL;
	KUNIT_EXPECT_EQ(test, mmedge_ioctl_table_check(t, n), -EINVAL);
	t[caps] = mmedge_test_ioctls[caps];
	t[caps].name = NULL;
	KUNIT_EXPECT_EQ(test, mmedge_ioctl_table_check(t, n), -EINVAL);
	t[caps] = mmedge_test_ioctls[caps];
	t[caps].flags = ~MMEDGE_IOCTL_FLAGS_VALID;
	KUNIT_EXPECT_EQ(test, mmedge_ioctl_table_check(t, n), -EINVAL);
	t[caps] = mmedge_test_ioctls[caps];
	/* In the wrong slot. */
	t[caps + 1] = mmedge_test_ioctls[caps];
	KUNIT_EXPECT_EQ(test, mmedge_ioctl_table_check(t, n), -EINVAL);
	t[caps + 1] = mmedge_test_ioctls[caps + 1];
	/* A size that is not a multiple of 8. */
	t[caps].cmd = _IOC(_IOC_READ | _IOC_WRITE, MMEDGE_IOC_MAGIC, caps, 124);
	t[caps].min_size = 120;
	KUNIT_EXPECT_EQ(test, mmedge_ioctl_table_check(t, n), -EINVAL);
	t[caps] = mmedge_test_ioctls[caps];
	/* A foreign type. */
	t[caps].cmd = _IOWR('D', caps, struct mmedge_caps);
	KUNIT_EXPECT_EQ(test, mmedge_ioctl_table_check(t, n), -EINVAL);
}

static void mmedge_test_ioctl_mask(struct kunit *test)
{
	u64 mask = mmedge_ioctl_mask(mmedge_test_ioctls,
				     ARRAY_SIZE(mmedge_test_ioctls));

	KUNIT_EXPECT_EQ(test, mask, BIT_ULL(_IOC_NR(MMEDGE_IOC_QUERY_CAPS)) |
			BIT_ULL(_IOC_NR(MMEDGE_IOC_QBUF)) |
			BIT_ULL(_IOC_NR(MMEDGE_IOC_XTS)));
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

/*
 * The argument checks of the channel, clock and bus ioctls: each starts
 * from a valid request and changes one field (two where a field only
 * matters with another), like the kselftests' one-change negatives.
 */
struct mmedge_field_case {
	const char *desc;
	size_t off, size;
	u64 val;
	size_t off2, size2;
	u64 val2;
	int expect;
};

/*
 * A field changed to @v, written with sizeof(@v) bytes: the value's type
 * must be the field's (the cases cast it).
 */
#define VALID(expect)	{ "valid", 0, 0, 0, 0, 0, 0, expect }
#define ONE(desc, type, m, v, e) \
	{ desc, offsetof(type, m), sizeof(v), (u64)(v), 0, 0, 0, e }
#define TWO(desc, type, m, v, m2, v2, e) \
	{ desc, offsetof(type, m), sizeof(v), (u64)(v), \
	  offsetof(type, m2), sizeof(v2), (u64)(v2), e }

static void mmedge_field_poke(void *s, size_t off, size_t size, u64 val)
{
	u8 *p = (u8 *)s + off;

	switch (size) {
	case 1:
		*p = val;
		break;
	case 2:
		*(u16 *)p = val;
		break;
	case 4:
		*(u32 *)p = val;
		break;
	case 8:
		*(u64 *)p = val;
		break;
	}
}

static void mmedge_field_apply(void *s, const struct mmedge_field_case *c)
{
	mmedge_field_poke(s, c->off, c->size, c->val);
	mmedge_field_poke(s, c->off2, c->size2, c->val2);
}

static void mmedge_field_case_desc(const struct mmedge_field_case *c,
				   char *desc)
{
	strscpy(desc, c->desc, KUNIT_PARAM_DESC_SIZE);
}

#define CC struct mmedge_chan_create
static const struct mmedge_field_case mmedge_chan_create_cases[] = {
	VALID(0),
	/* A feed channel has no source: the capture source is refused. */
	ONE("feed", CC, dir, (u32)MMEDGE_CHAN_FEED, -EINVAL),
	ONE("dir unknown", CC, dir, (u32)(MMEDGE_CHAN_COPY + 1), -EINVAL),
	ONE("flags", CC, flags, (u32)1, -EINVAL),
	ONE("pad", CC, pad, (u32)1, -EINVAL),
	ONE("reserved[0]", CC, reserved[0], (u64)1, -EINVAL),
	ONE("reserved[1]", CC, reserved[1], (u64)1, -EINVAL),
	ONE("sensor_pad", CC, sensor_pad, (u32)1, -EINVAL),
	ONE("sensor offset at max", CC, sensor_offset_ns,
	    (s64)MMEDGE_SENSOR_OFFSET_MAX, 0),
	ONE("sensor offset past max", CC, sensor_offset_ns,
	    (s64)(MMEDGE_SENSOR_OFFSET_MAX + 1), -EINVAL),
	ONE("sensor offset past -max", CC, sensor_offset_ns,
	    (s64)(-MMEDGE_SENSOR_OFFSET_MAX - 1), -EINVAL),
	ONE("sensor drift past max", CC, sensor_drift_ppb,
	    (s32)(MMEDGE_SENSOR_DRIFT_MAX + 1), -EINVAL),
	ONE("sensor drift past -max", CC, sensor_drift_ppb,
	    (s32)(-MMEDGE_SENSOR_DRIFT_MAX - 1), -EINVAL),
	ONE("name upper case", CC, name[0], (u8)'A', -EINVAL),
	ONE("name", CC, name[0], (u8)'a', 0),
	ONE("src type unknown", CC, src.type, (u32)0, -EINVAL),
	ONE("weight max", CC, weight, (u32)MMEDGE_WEIGHT_MAX, 0),
	ONE("weight past max", CC, weight, (u32)(MMEDGE_WEIGHT_MAX + 1),
	    -EINVAL),
	ONE("class unknown", CC, class, (u32)(MMEDGE_CLASS_LATENCY + 1),
	    -EINVAL),
	ONE("latency without cap", CC, class, (u32)MMEDGE_CLASS_LATENCY,
	    -EINVAL),
	TWO("latency with cap", CC, class, (u32)MMEDGE_CLASS_LATENCY, cap,
	    (u64)1000, 0),
	ONE("cap past max", CC, cap, (u64)(MMEDGE_RATE_CAP_MAX + 1), -EINVAL),
	ONE("segment min", CC, segment, (u32)MMEDGE_SEGMENT_MIN, 0),
	ONE("segment max", CC, segment, (u32)MMEDGE_SEGMENT_MAX, 0),
	ONE("segment below min", CC, segment, (u32)(MMEDGE_SEGMENT_MIN - 32),
	    -EINVAL),
	ONE("segment past max", CC, segment, (u32)(MMEDGE_SEGMENT_MAX + 64),
	    -EINVAL),
	ONE("segment not a multiple of 64", CC, segment, (u32)4100, -EINVAL),
	ONE("overrun drop oldest", CC, overrun,
	    (u32)MMEDGE_OVERRUN_DROP_OLDEST, 0),
	ONE("overrun unknown", CC, overrun,
	    (u32)(MMEDGE_OVERRUN_DROP_OLDEST + 1), -EINVAL),
};

#undef CC

KUNIT_ARRAY_PARAM(mmedge_chan_create, mmedge_chan_create_cases,
		  mmedge_field_case_desc);

/* A valid capture request: a 16 kHz microphone, defaults elsewhere. */
static void mmedge_test_chan_create_check(struct kunit *test)
{
	const struct mmedge_field_case *c = test->param_value;
	struct mmedge_chan_create cc = {
		.dir = MMEDGE_CHAN_CAPTURE,
		.src = {
			.type = MMEDGE_SRC_MIC, .fourcc = MMEDGE_FMT_S16LE,
			.rate_num = 16000, .rate_den = 1, .period = 16,
			.signal = MMEDGE_SIGNAL_TONE,
		},
	};

	mmedge_field_apply(&cc, c);
	KUNIT_EXPECT_EQ(test, mmedge_chan_create_check(&cc), c->expect);
}

/* Feed and copy: no source, no sensor clock, no overrun policy. */
static void mmedge_test_chan_create_check_memory(struct kunit *test)
{
	struct mmedge_chan_create cc = { .dir = MMEDGE_CHAN_FEED };

	KUNIT_EXPECT_EQ(test, mmedge_chan_create_check(&cc), 0);
	cc.dir = MMEDGE_CHAN_COPY;
	KUNIT_EXPECT_EQ(test, mmedge_chan_create_check(&cc), 0);
	cc.overrun = MMEDGE_OVERRUN_DROP_OLDEST;
	KUNIT_EXPECT_EQ(test, mmedge_chan_create_check(&cc), -EINVAL);
	cc.overrun = 0;
	cc.sensor_offset_ns = 1;
	KUNIT_EXPECT_EQ(test, mmedge_chan_create_check(&cc), -EINVAL);
	cc.sensor_offset_ns = 0;
	cc.sensor_drift_ppb = -1;
	KUNIT_EXPECT_EQ(test, mmedge_chan_create_check(&cc), -EINVAL);
	cc.sensor_drift_ppb = 0;
	cc.src.period = 1;
	KUNIT_EXPECT_EQ(test, mmedge_chan_create_check(&cc), -EINVAL);
}

#define CF struct mmedge_chan_config
static const struct mmedge_field_case mmedge_chan_config_cases[] = {
	VALID(0),
	ONE("id 0", CF, id, (u32)0, -ENOENT),
	TWO("id 0 and reserved", CF, id, (u32)0, reserved[0], (u64)1, -ENOENT),
	ONE("reserved[0]", CF, reserved[0], (u64)1, -EINVAL),
	ONE("reserved[1]", CF, reserved[1], (u64)1, -EINVAL),
	/* The settings are checked against the channel, not here. */
	ONE("set unknown", CF, set, (u32)~0U, 0),
};

#undef CF

KUNIT_ARRAY_PARAM(mmedge_chan_config, mmedge_chan_config_cases,
		  mmedge_field_case_desc);

static void mmedge_test_chan_config_check(struct kunit *test)
{
	const struct mmedge_field_case *c = test->param_value;
	struct mmedge_chan_config cf = { .id = 1 };

	mmedge_field_apply(&cf, c);
	KUNIT_EXPECT_EQ(test, mmedge_chan_config_check(&cf), c->expect);
}

#define CD struct mmedge_chan_destroy
static const struct mmedge_field_case mmedge_chan_destroy_cases[] = {
	VALID(0),
	ONE("flags", CD, flags, (u32)1, -EINVAL),
	ONE("reserved", CD, reserved, (u64)1, -EINVAL),
};

#undef CD

KUNIT_ARRAY_PARAM(mmedge_chan_destroy, mmedge_chan_destroy_cases,
		  mmedge_field_case_desc);

static void mmedge_test_chan_destroy_check(struct kunit *test)
{
	const struct mmedge_field_case *c = test->param_value;
	struct mmedge_chan_destroy d = { .id = 1 };

	mmedge_field_apply(&d, c);
	KUNIT_EXPECT_EQ(test, mmedge_chan_destroy_check(&d), c->expect);
}

#define QB struct mmedge_qbuf
static const struct mmedge_field_case mmedge_qbuf_cases[] = {
	VALID(0),
	ONE("fence", QB, flags, (u32)MMEDGE_QBUF_FENCE, 0),
	TWO("src with src_fd", QB, flags, (u32)MMEDGE_QBUF_SRC, src_fd, (s32)4,
	    0),
	ONE("flags unknown", QB, flags, (u32)(MMEDGE_QBUF_FLAGS_VALID + 1),
	    -EINVAL),
	ONE("reserved", QB, reserved, (u64)1, -EINVAL),
	ONE("src_fd without src", QB, src_fd, (s32)4, -EINVAL),
};

#undef QB

KUNIT_ARRAY_PARAM(mmedge_qbuf, mmedge_qbuf_cases, mmedge_field_case_desc);

static void mmedge_test_qbuf_check(struct kunit *test)
{
	const struct mmedge_field_case *c = test->param_value;
	struct mmedge_qbuf q = { .chan = 1, .fd = 3 };

	mmedge_field_apply(&q, c);
	KUNIT_EXPECT_EQ(test, mmedge_qbuf_check(&q), c->expect);
}

/* Copy needs MMEDGE_QBUF_SRC; capture takes no bytesused, the others do. */
static void mmedge_test_qbuf_check_dir(struct kunit *test)
{
	struct mmedge_qbuf q = { };

	KUNIT_EXPECT_EQ(test, mmedge_qbuf_check_dir(&q, MMEDGE_CHAN_CAPTURE), 0);
	KUNIT_EXPECT_EQ(test, mmedge_qbuf_check_dir(&q, MMEDGE_CHAN_FEED),
			-EINVAL);
	q.bytesused = 64;
	KUNIT_EXPECT_EQ(test, mmedge_qbuf_check_dir(&q, MMEDGE_CHAN_CAPTURE),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, mmedge_qbuf_check_dir(&q, MMEDGE_CHAN_FEED), 0);
	KUNIT_EXPECT_EQ(test, mmedge_qbuf_check_dir(&q, MMEDGE_CHAN_COPY),
			-EINVAL);
	q.flags = MMEDGE_QBUF_SRC;
	KUNIT_EXPECT_EQ(test, mmedge_qbuf_check_dir(&q, MMEDGE_CHAN_COPY), 0);
	KUNIT_EXPECT_EQ(test, mmedge_qbuf_check_dir(&q, MMEDGE_CHAN_FEED),
			-EINVAL);
	q.bytesused = 0;
	KUNIT_EXPECT_EQ(test, mmedge_qbuf_check_dir(&q, MMEDGE_CHAN_COPY),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, mmedge_qbuf_check_dir(&q, MMEDGE_CHAN_CAPTURE),
			-EINVAL);
}

#define DQ struct mmedge_dqbuf
static const struct mmedge_field_case mmedge_dqbuf_cases[] = {
	VALID(0),
	ONE("nonblock", DQ, flags, (u32)MMEDGE_DQBUF_NONBLOCK, 0),
	ONE("flags unknown", DQ, flags, (u32)(MMEDGE_DQBUF_FLAGS_VALID + 1),
	    -EINVAL),
	ONE("pad", DQ, pad, (u32)1, -EINVAL),
	ONE("reserved", DQ, reserved, (u64)1, -EINVAL),
	/* Output fields are ignored on input. */
	ONE("stale sequence", DQ, sequence, (u64)7, 0),
};

#undef DQ

KUNIT_ARRAY_PARAM(mmedge_dqbuf, mmedge_dqbuf_cases, mmedge_field_case_desc);

static void mmedge_test_dqbuf_check(struct kunit *test)
{
	const struct mmedge_field_case *c = test->param_value;
	struct mmedge_dqbuf d = { .chan = 1, .timeout_ms = 10 };

	mmedge_field_apply(&d, c);
	KUNIT_EXPECT_EQ(test, mmedge_dqbuf_check(&d), c->expect);
}

#define CS struct mmedge_chan_stats
static const struct mmedge_field_case mmedge_chan_stats_cases[] = {
	VALID(0),
	ONE("id 0", CS, id, (u32)0, -ENOENT),
	TWO("id 0 and flags", CS, id, (u32)0, flags, (u32)1, -EINVAL),
	ONE("flags", CS, flags, (u32)1, -EINVAL),
	ONE("reserved", CS, reserved[0], (u64)1, -EINVAL),
	ONE("stale bytes", CS, bytes, (u64)7, 0),
};

#undef CS

KUNIT_ARRAY_PARAM(mmedge_chan_stats, mmedge_chan_stats_cases,
		  mmedge_field_case_desc);

static void mmedge_test_chan_stats_check(struct kunit *test)
{
	const struct mmedge_field_case *c = test->param_value;
	struct mmedge_chan_stats st = { .id = 1 };

	mmedge_field_apply(&st, c);
	KUNIT_EXPECT_EQ(test, mmedge_chan_stats_check(&st), c->expect);
}

#define BC struct mmedge_bus_config
static const struct mmedge_field_case mmedge_bus_config_cases[] = {
	VALID(0),
	ONE("set 2", BC, set, (u32)2, -EINVAL),
	ONE("flags", BC, flags, (u32)1, -EINVAL),
	ONE("reserved[0]", BC, reserved[0], (u64)1, -EINVAL),
	ONE("reserved[1]", BC, reserved[1], (u64)1, -EINVAL),
	/* Reading ignores the bandwidth. */
	ONE("read, bandwidth 0", BC, bandwidth, (u64)0, 0),
	TWO("set at min", BC, set, (u32)1, bandwidth, (u64)MMEDGE_BUS_MIN_BW,
	    0),
	TWO("set at max", BC, set, (u32)1, bandwidth, (u64)MMEDGE_BUS_MAX_BW,
	    0),
	TWO("set below min", BC, set, (u32)1, bandwidth,
	    (u64)(MMEDGE_BUS_MIN_BW - 1), -EINVAL),
	TWO("set past max", BC, set, (u32)1, bandwidth,
	    (u64)(MMEDGE_BUS_MAX_BW + 1), -EINVAL),
};

#undef BC

KUNIT_ARRAY_PARAM(mmedge_bus_config, mmedge_bus_config_cases,
		  mmedge_field_case_desc);

static void mmedge_test_bus_config_check(struct kunit *test)
{
	const struct mmedge_field_case *c = test->param_value;
	struct mmedge_bus_config b = { .bandwidth = 200000000 };

	mmedge_field_apply(&b, c);
	KUNIT_EXPECT_EQ(test, mmedge_bus_config_check(&b), c->expect);
}

#define XT struct mmedge_xts
static const struct mmedge_field_case mmedge_xts_cases[] = {
	VALID(0),
	ONE("n_samples max", XT, n_samples, (u32)MMEDGE_XTS_MAX_SAMPLES, 0),
	ONE("n_samples 0", XT, n_samples, (u32)0, -EINVAL),
	ONE("n_samples past max", XT, n_samples,
	    (u32)(MMEDGE_XTS_MAX_SAMPLES + 1), -EINVAL),
	ONE("flags unknown", XT, flags, (u32)(MMEDGE_XTS_FLAGS_VALID + 1),
	    -EINVAL),
	ONE("pad", XT, pad, (u32)1, -EINVAL),
	ONE("reserved[0]", XT, reserved[0], (u64)1, -EINVAL),
	ONE("reserved[1]", XT, reserved[1], (u64)1, -EINVAL),
	ONE("chan without sensor", XT, chan, (u32)1, -EINVAL),
	ONE("sensor without chan", XT, flags, (u32)MMEDGE_XTS_SENSOR, -EINVAL),
	TWO("sensor with chan", XT, flags, (u32)MMEDGE_XTS_SENSOR, chan,
	    (u32)1, 0),
	/* Output fields are ignored on input. */
	ONE("stale counter_hz", XT, counter_hz, (u64)7, 0),
};

#undef XT

KUNIT_ARRAY_PARAM(mmedge_xts, mmedge_xts_cases, mmedge_field_case_desc);

static void mmedge_test_xts_check(struct kunit *test)
{
	const struct mmedge_field_case *c = test->param_value;
	struct mmedge_xts *x = kunit_kzalloc(test, sizeof(*x), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, x);
	x->n_samples = 4;
	mmedge_field_apply(x, c);
	KUNIT_EXPECT_EQ(test, mmedge_xts_check(x, sizeof(*x)), c->expect);
}

/* MMEDGE_XTS_SENSOR needs the fields of MMEDGE_XTS_SIZE_VER1. */
static void mmedge_test_xts_check_size(struct kunit *test)
{
	struct mmedge_xts *x = kunit_kzalloc(test, sizeof(*x), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, x);
	x->n_samples = 1;
	KUNIT_EXPECT_EQ(test, mmedge_xts_check(x, MMEDGE_XTS_SIZE_VER0), 0);
	x->flags = MMEDGE_XTS_SENSOR;
	x->chan = 1;
	KUNIT_EXPECT_EQ(test, mmedge_xts_check(x, MMEDGE_XTS_SIZE_VER0),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, mmedge_xts_check(x, MMEDGE_XTS_SIZE_VER1), 0);
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
	KUNIT_CASE_PARAM(mmedge_test_chan_create_check,
			 mmedge_chan_create_gen_params),
	KUNIT_CASE(mmedge_test_chan_create_check_memory),
	KUNIT_CASE_PARAM(mmedge_test_chan_config_check,
			 mmedge_chan_config_gen_params),
	KUNIT_CASE_PARAM(mmedge_test_chan_destroy_check,
			 mmedge_chan_destroy_gen_params),
	KUNIT_CASE_PARAM(mmedge_test_qbuf_check, mmedge_qbuf_gen_params),
	KUNIT_CASE(mmedge_test_qbuf_check_dir),
	KUNIT_CASE_PARAM(mmedge_test_dqbuf_check, mmedge_dqbuf_gen_params),
	KUNIT_CASE_PARAM(mmedge_test_chan_stats_check,
			 mmedge_chan_stats_gen_params),
	KUNIT_CASE_PARAM(mmedge_test_bus_config_check,
			 mmedge_bus_config_gen_params),
	KUNIT_CASE_PARAM(mmedge_test_xts_check, mmedge_xts_gen_params),
	KUNIT_CASE(mmedge_test_xts_check_size),
	{}
};

static struct kunit_suite mmedge_uapi_suite = {
	.name = "mmedge_uapi",
	.test_cases = mmedge_uapi_cases,
};

kunit_test_suite(mmedge_uapi_suite);

MODULE_DESCRIPTION("KUnit tests for mmedge's uapi validation");
MODULE_LICENSE("GPL");

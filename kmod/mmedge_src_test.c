// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for mmedge's virtual sources: configuration checks, frame
 * sizes and periods, and the content generators (any split of a frame
 * gives the same bytes, sequence headers, the moving and static camera
 * patterns, the audio signals, IMU records).
 */

#include <kunit/test.h>
#include <linux/math64.h>
#include <linux/stddef.h>
#include <linux/string.h>

#include "mmedge_src.h"

#define CAM(fmt, w, h, num, den) {					\
	.type = MMEDGE_SRC_CAMERA, .fourcc = MMEDGE_FMT_##fmt,		\
	.width = (w), .height = (h), .rate_num = (num), .rate_den = (den) }
#define CAMP(pat, fmt, w, h) {						\
	.type = MMEDGE_SRC_CAMERA, .fourcc = MMEDGE_FMT_##fmt,		\
	.width = (w), .height = (h), .rate_num = 30, .rate_den = 1,	\
	.signal = MMEDGE_PATTERN_##pat }
#define MIC(sig, num, den, per) {					\
	.type = MMEDGE_SRC_MIC, .fourcc = MMEDGE_FMT_S16LE,		\
	.rate_num = (num), .rate_den = (den), .period = (per),		\
	.signal = MMEDGE_SIGNAL_##sig }
#define IMU(num, den, per) {						\
	.type = MMEDGE_SRC_IMU, .fourcc = MMEDGE_FMT_IMU6,		\
	.rate_num = (num), .rate_den = (den), .period = (per) }

/* Index of the first byte where a and b differ, or -1. */
static int first_diff(const u8 *a, const u8 *b, u32 n)
{
	u32 i;

	for (i = 0; i < n; i++)
		if (a[i] != b[i])
			return i;
	return -1;
}

static u64 le_get(const u8 *p, unsigned int bytes)
{
	u64 v = 0;

	while (bytes--)
		v = (v << 8) | p[bytes];
	return v;
}

/* mmedge_src_check(): valid configurations, at and inside the limits */

struct src_good_case {
	const char *name;
	struct mmedge_src_config cfg;
};

static const struct src_good_case src_good_cases[] = {
	{ "grey 640x480 30fps", CAM(GREY, 640, 480, 30, 1) },
	{ "rgb24 16x16 240fps", CAM(RGB24, 16, 16, 240, 1) },
	{ "nv12 4096x4096 1/60fps", CAM(NV12, 4096, 4096, 1, 60) },
	{ "nv12 64x32 29.97fps", CAM(NV12, 64, 32, 30000, 1001) },
	{ "grey odd 17x33", CAM(GREY, 17, 33, 30, 1) },
	{ "cam 240fps big den", CAM(GREY, 64, 32, 4294967280U, 17895697) },
	{ "cam moving", CAMP(MOVING, GREY, 64, 32) },
	{ "cam static", CAMP(STATIC, NV12, 64, 32) },
	{ "mic tone 16k/320", MIC(TONE, 16000, 1, 320) },
	{ "mic chirp 48k/1024", MIC(CHIRP, 48000, 1, 1024) },
	{ "mic 8k/16", MIC(TONE, 8000, 1, 16) },
	{ "mic silence 16k/320", MIC(SILENCE, 16000, 1, 320) },
	{ "mic noise 8k/16", MIC(NOISE, 8000, 1, 16) },
	{ "mic 192k/65536", MIC(CHIRP, 192000, 1, 65536) },
	{ "mic 44.1k as 88200/2", MIC(TONE, 88200, 2, 441) },
	{ "imu 100Hz/10", IMU(100, 1, 10) },
	{ "imu 1Hz/1", IMU(1, 1, 1) },
	{ "imu 8kHz/4096", IMU(8000, 1, 4096) },
};

static void src_good_case_desc(const struct src_good_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(src_good, src_good_cases, src_good_case_desc);

static void mmedge_src_test_check_good(struct kunit *test)
{
	const struct src_good_case *c = test->param_value;

	KUNIT_EXPECT_EQ(test, mmedge_src_check(&c->cfg), 0);
}

/* mmedge_src_check(): one field of a valid configuration changed */

enum { BASE_CAM, BASE_NV12, BASE_MIC, BASE_IMU };

static const struct mmedge_src_config src_bases[] = {
	[BASE_CAM] = CAM(GREY, 64, 32, 30, 1),
	[BASE_NV12] = CAM(NV12, 64, 32, 30, 1),
	[BASE_MIC] = MIC(TONE, 16000, 1, 320),
	[BASE_IMU] = IMU(100, 1, 10),
};

struct src_bad_case {
	const char *name;
	unsigned int base;
	size_t field;		/* offset of a __u32 in the config */
	u32 value;
};

#define F(f)	offsetof(struct mmedge_src_config, f)

static const struct src_bad_case src_bad_cases[] = {
	{ "type 0", BASE_CAM, F(type), 0 },
	{ "type 4", BASE_CAM, F(type), 4 },
	{ "type ~0", BASE_MIC, F(type), U32_MAX },
	{ "cam fourcc S16LE", BASE_CAM, F(fourcc), MMEDGE_FMT_S16LE },
	{ "cam fourcc 0", BASE_CAM, F(fourcc), 0 },
	{ "cam width 15", BASE_CAM, F(width), 15 },
	{ "cam width 4097", BASE_CAM, F(width), 4097 },
	{ "cam width ~0", BASE_CAM, F(width), U32_MAX },
	{ "cam height 15", BASE_CAM, F(height), 15 },
	{ "cam height 4097", BASE_CAM, F(height), 4097 },
	{ "nv12 width odd", BASE_NV12, F(width), 65 },
	{ "nv12 height odd", BASE_NV12, F(height), 33 },
	{ "cam rate_num 0", BASE_CAM, F(rate_num), 0 },
	{ "cam rate_den 0", BASE_CAM, F(rate_den), 0 },
	{ "cam 241fps", BASE_CAM, F(rate_num), 241 },
	{ "cam rate_num ~0", BASE_CAM, F(rate_num), U32_MAX },
	{ "cam 30/1801 fps", BASE_CAM, F(rate_den), 1801 },
	{ "cam rate_den ~0", BASE_CAM, F(rate_den), U32_MAX },
	{ "cam period 1", BASE_CAM, F(period), 1 },
	{ "cam signal 2", BASE_CAM, F(signal), 2 },
	{ "cam signal ~0", BASE_CAM, F(signal), U32_MAX },
	{ "mic fourcc GREY", BASE_MIC, F(fourcc), MMEDGE_FMT_GREY },
	{ "mic fourcc IMU6", BASE_MIC, F(fourcc), MMEDGE_FMT_IMU6 },
	{ "mic 7999Hz", BASE_MIC, F(rate_num), 7999 },
	{ "mic 192001Hz", BASE_MIC, F(rate_num), 192001 },
	{ "mic rate_num 0", BASE_MIC, F(rate_num), 0 },
	{ "mic rate_den 0", BASE_MIC, F(rate_den), 0 },
	{ "mic rate_den 3", BASE_MIC, F(rate_den), 3 },
	{ "mic rate_den 2^20 (u32 wrap)", BASE_MIC, F(rate_den), 1 << 20 },
	{ "mic rate_den ~0", BASE_MIC, F(rate_den), U32_MAX },
	{ "mic period 0", BASE_MIC, F(period), 0 },
	{ "mic period 15", BASE_MIC, F(period), 15 },
	{ "mic period 65537", BASE_MIC, F(period), 65537 },
	{ "mic signal 4", BASE_MIC, F(signal), 4 },
	{ "mic signal ~0", BASE_MIC, F(signal), U32_MAX },
	{ "mic width 1", BASE_MIC, F(width), 1 },
	{ "mic height 1", BASE_MIC, F(height), 1 },
	{ "imu fourcc S16LE", BASE_IMU, F(fourcc), MMEDGE_FMT_S16LE },
	{ "imu 8001Hz", BASE_IMU, F(rate_num), 8001 },
	{ "imu rate_num 0", BASE_IMU, F(rate_num), 0 },
	{ "imu rate_den 0", BASE_IMU, F(rate_den), 0 },
	{ "imu 100/101 Hz", BASE_IMU, F(rate_den), 101 },
	{ "imu period 0", BASE_IMU, F(period), 0 },
	{ "imu period 4097", BASE_IMU, F(period), 4097 },
	{ "imu width 1", BASE_IMU, F(width), 1 },
	{ "imu height 1", BASE_IMU, F(height), 1 },
	{ "imu signal 1", BASE_IMU, F(signal), 1 },
};

#undef F

static void src_bad_case_desc(const struct src_bad_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(src_bad, src_bad_cases, src_bad_case_desc);

static void mmedge_src_test_check_bad(struct kunit *test)
{
	const struct src_bad_case *c = test->param_value;
	struct mmedge_src_config cfg = src_bases[c->base];

	KUNIT_ASSERT_EQ(test, mmedge_src_check(&cfg), 0);
	*(u32 *)((u8 *)&cfg + c->field) = c->value;
	KUNIT_EXPECT_EQ(test, mmedge_src_check(&cfg), -EINVAL);
}

/* mmedge_src_frame_bytes() and mmedge_src_period_ns() */

struct src_geom_case {
	const char *name;
	struct mmedge_src_config cfg;
	u64 bytes;
	u64 period_ns;
};

static const struct src_geom_case src_geom_cases[] = {
	{ "grey 64x32 30fps", CAM(GREY, 64, 32, 30, 1), 2048, 33333333 },
	{ "rgb24 64x32 25fps", CAM(RGB24, 64, 32, 25, 1), 6144, 40000000 },
	{ "nv12 64x32 29.97fps", CAM(NV12, 64, 32, 30000, 1001), 3072,
	  33366666 },
	{ "rgb24 4096x4096 240fps", CAM(RGB24, 4096, 4096, 240, 1), 50331648,
	  4166666 },
	{ "nv12 4096x4096 1/60fps", CAM(NV12, 4096, 4096, 1, 60), 25165824,
	  60000000000ULL },
	{ "mic 16k/320", MIC(TONE, 16000, 1, 320), 640, 20000000 },
	{ "mic 48k/1024", MIC(CHIRP, 48000, 1, 1024), 2048, 21333333 },
	{ "mic 44.1k/441", MIC(TONE, 88200, 2, 441), 882, 10000000 },
	{ "mic 8k/65536", MIC(TONE, 8000, 1, 65536), 131072, 8192000000ULL },
	{ "imu 100Hz/10", IMU(100, 1, 10), 240, 100000000 },
	{ "imu 8kHz/4096", IMU(8000, 1, 4096), 98304, 512000000 },
	{ "imu 1Hz/4096 den ~0", IMU(U32_MAX, U32_MAX, 4096), 98304,
	  4096000000000ULL },
};

static void src_geom_case_desc(const struct src_geom_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(src_geom, src_geom_cases, src_geom_case_desc);

static void mmedge_src_test_frame_bytes(struct kunit *test)
{
	const struct src_geom_case *c = test->param_value;

	KUNIT_ASSERT_EQ(test, mmedge_src_check(&c->cfg), 0);
	KUNIT_EXPECT_EQ(test, mmedge_src_frame_bytes(&c->cfg), c->bytes);
}

static void mmedge_src_test_period_ns(struct kunit *test)
{
	const struct src_geom_case *c = test->param_value;

	KUNIT_EXPECT_EQ(test, mmedge_src_period_ns(&c->cfg), c->period_ns);
}

static void mmedge_src_test_imu_layout(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, sizeof(struct mmedge_imu_sample), 24);
	KUNIT_EXPECT_EQ(test, offsetof(struct mmedge_imu_sample, ax), 8);
	KUNIT_EXPECT_EQ(test, offsetof(struct mmedge_imu_sample, gz), 18);
	KUNIT_EXPECT_EQ(test, offsetof(struct mmedge_imu_sample, reserved), 20);
}

/* mmedge_src_fill(): any split and order of a frame gives the same bytes */

static const struct src_good_case src_fill_cases[] = {
	{ "grey 64x32", CAM(GREY, 64, 32, 30, 1) },
	{ "rgb24 64x32", CAM(RGB24, 64, 32, 30, 1) },
	{ "nv12 64x32", CAM(NV12, 64, 32, 30, 1) },
	{ "nv12 static 64x32", CAMP(STATIC, NV12, 64, 32) },
	{ "rgb24 static 64x32", CAMP(STATIC, RGB24, 64, 32) },
	{ "mic tone 320", MIC(TONE, 16000, 1, 320) },
	{ "mic chirp 320", MIC(CHIRP, 16000, 1, 320) },
	{ "mic silence 320", MIC(SILENCE, 16000, 1, 320) },
	{ "mic noise 320", MIC(NOISE, 16000, 1, 320) },
	{ "mic chirp 44.1k 320", MIC(CHIRP, 88200, 2, 320) },
	{ "imu 10", IMU(100, 1, 10) },
};

KUNIT_ARRAY_PARAM(src_fill, src_fill_cases, src_good_case_desc);

static const u64 src_fill_seqs[] = { 0, 1, 3, 50, 0x0123456789abcdefULL };
static const u32 src_fill_pieces[] = { 1, 7, 63, 64, 4096 };

static u32 src_rand(u64 *state)
{
	*state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
	return *state >> 33;
}

static void mmedge_src_test_fill_split(struct kunit *test)
{
	const struct mmedge_src_config *cfg =
		&((const struct src_good_case *)test->param_value)->cfg;
	u32 size = mmedge_src_frame_bytes(cfg);
	u32 *cuts = kunit_kcalloc(test, size + 1, sizeof(*cuts), GFP_KERNEL);
	u8 *ref = kunit_kzalloc(test, size, GFP_KERNEL);
	u8 *buf = kunit_kzalloc(test, size, GFP_KERNEL);
	u64 rng = 1;
	unsigned int s, p, i, ncuts;
	u32 off, n;

	KUNIT_ASSERT_NOT_NULL(test, cuts);
	KUNIT_ASSERT_NOT_NULL(test, ref);
	KUNIT_ASSERT_NOT_NULL(test, buf);
	KUNIT_ASSERT_GT(test, size, 0);

	for (s = 0; s < ARRAY_SIZE(src_fill_seqs); s++) {
		u64 seq = src_fill_seqs[s];

		mmedge_src_fill(cfg, seq, 0, ref, size);

		/* Fixed-size pieces, front to back. */
		for (p = 0; p < ARRAY_SIZE(src_fill_pieces); p++) {
			memset(buf, 0xa5, size);
			for (off = 0; off < size; off += n) {
				n = min(src_fill_pieces[p], size - off);
				mmedge_src_fill(cfg, seq, off, buf + off, n);
			}
			KUNIT_EXPECT_EQ_MSG(test, first_diff(buf, ref, size), -1,
					    "seq %llu piece %u", seq,
					    src_fill_pieces[p]);
		}

		/* Random pieces of 1..300 bytes, back to front. */
		ncuts = 0;
		for (off = 0; off < size; off += 1 + src_rand(&rng) % 300)
			cuts[ncuts++] = off;
		cuts[ncuts] = size;
		memset(buf, 0x5a, size);
		for (i = ncuts; i-- > 0;)
			mmedge_src_fill(cfg, seq, cuts[i], buf + cuts[i],
					cuts[i + 1] - cuts[i]);
		KUNIT_EXPECT_EQ_MSG(test, first_diff(buf, ref, size), -1,
				    "seq %llu random pieces", seq);
	}
}

/* Bytes past the end of a frame, and any fill of a bad config, are zero. */
static void mmedge_src_test_fill_past_end(struct kunit *test)
{
	struct mmedge_src_config cfg = MIC(TONE, 16000, 1, 16);
	u8 buf[40], ref[32];

	mmedge_src_fill(&cfg, 9, 0, ref, sizeof(ref));
	memset(buf, 0xff, sizeof(buf));
	mmedge_src_fill(&cfg, 9, 0, buf, sizeof(buf));
	KUNIT_EXPECT_EQ(test, first_diff(buf, ref, sizeof(ref)), -1);
	KUNIT_EXPECT_TRUE(test, !memchr_inv(buf + 32, 0, 8));

	memset(buf, 0xff, sizeof(buf));
	mmedge_src_fill(&cfg, 9, 1000, buf, sizeof(buf));
	KUNIT_EXPECT_TRUE(test, !memchr_inv(buf, 0, sizeof(buf)));

	cfg.rate_den = 0;
	memset(buf, 0xff, sizeof(buf));
	mmedge_src_fill(&cfg, 9, 0, buf, sizeof(buf));
	KUNIT_EXPECT_TRUE(test, !memchr_inv(buf, 0, sizeof(buf)));
}

/* Camera: every line starts with seq; the rest follows the formulas. */
static const struct src_good_case src_cam_cases[] = {
	{ "grey 64x32", CAM(GREY, 64, 32, 30, 1) },
	{ "rgb24 64x32", CAM(RGB24, 64, 32, 30, 1) },
	{ "nv12 64x32", CAM(NV12, 64, 32, 30, 1) },
	{ "grey 17x16", CAM(GREY, 17, 16, 30, 1) },
};

KUNIT_ARRAY_PARAM(src_cam, src_cam_cases, src_good_case_desc);

static void mmedge_src_test_camera_pattern(struct kunit *test)
{
	const struct mmedge_src_config *cfg =
		&((const struct src_good_case *)test->param_value)->cfg;
	const u64 seq = 0x0123456789abcdefULL;
	u32 size = mmedge_src_frame_bytes(cfg);
	u32 lb = cfg->width * (cfg->fourcc == MMEDGE_FMT_RGB24 ? 3 : 1);
	u8 *buf = kunit_kzalloc(test, size, GFP_KERNEL);
	const u8 *line;
	u32 x, y, bad = 0;

	KUNIT_ASSERT_NOT_NULL(test, buf);
	mmedge_src_fill(cfg, seq, 0, buf, size);
	for (y = 0; y < cfg->height; y++) {
		line = buf + y * lb;
		KUNIT_EXPECT_EQ_MSG(test, le_get(line, 8), seq, "line %u", y);
		for (x = 8; x < lb; x++)
			bad += line[x] != (u8)(x + y + seq);
	}
	if (cfg->fourcc == MMEDGE_FMT_NV12) {
		for (y = 0; y < cfg->height / 2; y++) {
			line = buf + cfg->height * lb + y * lb;
			for (x = 0; x < lb; x++)
				bad += line[x] !=
				       (u8)((x >> 1) + y + 2 * seq + (x & 1) * 128);
		}
		KUNIT_EXPECT_EQ(test, size, lb * cfg->height * 3 / 2);
	}
	KUNIT_EXPECT_EQ(test, bad, 0);

	/* The next frame differs and carries its own number. */
	mmedge_src_fill(cfg, seq + 1, 0, buf, size);
	KUNIT_EXPECT_EQ(test, le_get(buf, 8), seq + 1);
	KUNIT_EXPECT_EQ(test, buf[8], (u8)(8 + seq + 1));
}

/*
 * Static camera: the levels of frame 0 in every frame, the header still
 * holds seq; two frames differ in the 8 header bytes of each luma line
 * only.
 */
static const struct src_good_case src_static_cases[] = {
	{ "grey 64x32", CAMP(STATIC, GREY, 64, 32) },
	{ "rgb24 64x32", CAMP(STATIC, RGB24, 64, 32) },
	{ "nv12 64x32", CAMP(STATIC, NV12, 64, 32) },
	{ "grey 16x16", CAMP(STATIC, GREY, 16, 16) },
};

KUNIT_ARRAY_PARAM(src_static, src_static_cases, src_good_case_desc);

static void mmedge_src_test_camera_static(struct kunit *test)
{
	const struct mmedge_src_config *cfg =
		&((const struct src_good_case *)test->param_value)->cfg;
	struct mmedge_src_config moving = *cfg;
	const u64 seq = 0x0123456789abcdefULL;
	u32 size = mmedge_src_frame_bytes(cfg);
	u32 lb = cfg->width * (cfg->fourcc == MMEDGE_FMT_RGB24 ? 3 : 1);
	u8 *a = kunit_kzalloc(test, size, GFP_KERNEL);
	u8 *b = kunit_kzalloc(test, size, GFP_KERNEL);
	u32 off, y, x, bad = 0;

	KUNIT_ASSERT_NOT_NULL(test, a);
	KUNIT_ASSERT_NOT_NULL(test, b);
	moving.signal = MMEDGE_PATTERN_MOVING;

	/* Chosen bytes of frame seq: line 5, x = 10 is (10 + 5 + 0). */
	mmedge_src_fill(cfg, seq, 0, a, size);
	KUNIT_EXPECT_EQ(test, le_get(a, 8), seq);
	KUNIT_EXPECT_EQ(test, le_get(a + 5 * lb, 8), seq);
	KUNIT_EXPECT_EQ(test, a[5 * lb + 10], 15);
	KUNIT_EXPECT_EQ(test, a[lb - 1], (u8)(lb - 1));
	if (cfg->fourcc == MMEDGE_FMT_NV12) {
		/* chroma line 2: U at x = 2 is 1 + 2, V at x = 3 is 128 + 3 */
		KUNIT_EXPECT_EQ(test, a[cfg->height * lb + 2 * lb + 2], 3);
		KUNIT_EXPECT_EQ(test, a[cfg->height * lb + 2 * lb + 3], 131);
	}

	/* Frame seq of the static pattern is frame 0 of the moving one... */
	mmedge_src_fill(&moving, 0, 0, b, size);
	for (off = 0; off < size; off++) {
		y = off / lb;
		x = off % lb;
		if (y < cfg->height && x < 8)
			bad += a[off] != (u8)(seq >> (8 * x));
		else
			bad += a[off] != b[off];
	}
	KUNIT_EXPECT_EQ(test, bad, 0);

	/* ...and frame 1 differs from frame seq in the headers only. */
	mmedge_src_fill(cfg, 1, 0, b, size);
	for (y = 0; y < cfg->height; y++) {
		KUNIT_EXPECT_EQ(test, le_get(b + y * lb, 8), 1);
		memcpy(b + y * lb, a + y * lb, 8);
	}
	KUNIT_EXPECT_EQ(test, first_diff(a, b, size), -1);
}

/* Microphone: the first four samples hold seq * period. */
static void mmedge_src_test_mic_index(struct kunit *test)
{
	static const u64 seqs[] = { 0, 7, 0x123456789ULL, U64_MAX / 320 };
	struct mmedge_src_config cfg = MIC(CHIRP, 16000, 1, 320);
	u8 buf[16];
	unsigned int i, w;

	for (i = 0; i < ARRAY_SIZE(seqs); i++) {
		u64 n = seqs[i] * cfg.period;

		mmedge_src_fill(&cfg, seqs[i], 0, buf, sizeof(buf));
		for (w = 0; w < 4; w++)
			KUNIT_EXPECT_EQ_MSG(test, le_get(buf + 2 * w, 2),
					    (n >> (16 * w)) & 0xffff,
					    "seq %llu word %u", seqs[i], w);
		KUNIT_EXPECT_EQ(test, le_get(buf, 8), n);
	}
}

static s16 sample(const u8 *buf, unsigned int i)
{
	return (s16)le_get(buf + 2 * i, 2);
}

/* Samples i - 1 and i lie on different sides of zero. */
static bool crossed(const u8 *buf, unsigned int i)
{
	return sample(buf, i - 1) < 0 ? sample(buf, i) >= 0 : sample(buf, i) < 0;
}

/* Tone: within +-8000, reaches the peak, 1 kHz (40 zero crossings/20 ms) */
static void mmedge_src_test_tone(struct kunit *test)
{
	struct mmedge_src_config cfg = MIC(TONE, 16000, 1, 320);
	u8 *buf = kunit_kzalloc(test, 640, GFP_KERNEL);
	unsigned int i, crossings = 0;
	int v, lo = 0, hi = 0;

	KUNIT_ASSERT_NOT_NULL(test, buf);
	mmedge_src_fill(&cfg, 11, 0, buf, 640);
	for (i = 4; i < 320; i++) {
		v = sample(buf, i);
		lo = min(lo, v);
		hi = max(hi, v);
		if (i > 4 && crossed(buf, i))
			crossings++;
	}
	KUNIT_EXPECT_GE(test, lo, -8000);
	KUNIT_EXPECT_LE(test, hi, 8000);
	KUNIT_EXPECT_LE(test, lo, -7900);
	KUNIT_EXPECT_GE(test, hi, 7900);
	/* 316 samples at 16 samples per cycle: 39 or 40 crossings */
	KUNIT_EXPECT_GE(test, crossings, 38);
	KUNIT_EXPECT_LE(test, crossings, 40);
}

/*
 * Chirp: within +-8000, differs from the tone, gets faster through the
 * second, and restarts after one second (16000 samples = 50 buffers).
 */
static void mmedge_src_test_chirp(struct kunit *test)
{
	struct mmedge_src_config tone = MIC(TONE, 16000, 1, 320);
	struct mmedge_src_config chirp = MIC(CHIRP, 16000, 1, 320);
	u8 *a = kunit_kzalloc(test, 640, GFP_KERNEL);
	u8 *b = kunit_kzalloc(test, 640, GFP_KERNEL);
	unsigned int i, early = 0, late = 0;
	int v;

	KUNIT_ASSERT_NOT_NULL(test, a);
	KUNIT_ASSERT_NOT_NULL(test, b);

	mmedge_src_fill(&tone, 3, 0, a, 640);
	mmedge_src_fill(&chirp, 3, 0, b, 640);
	KUNIT_EXPECT_EQ(test, first_diff(a, b, 8), -1);	/* index words */
	KUNIT_EXPECT_NE(test, first_diff(a + 8, b + 8, 640 - 8), -1);
	for (i = 4; i < 320; i++) {
		v = sample(b, i);
		KUNIT_EXPECT_GE(test, v, -8000);
		KUNIT_EXPECT_LE(test, v, 8000);
		if (i > 4 && crossed(b, i))
			early++;
	}

	/* Buffer 45 is 0.9..0.92 s into the sweep: about 3.6 kHz. */
	mmedge_src_fill(&chirp, 45, 0, a, 640);
	for (i = 5; i < 320; i++)
		if (crossed(a, i))
			late++;
	KUNIT_EXPECT_GT(test, late, 4 * early);

	/* Buffer 50 starts the next sweep: same samples as buffer 0. */
	mmedge_src_fill(&chirp, 0, 0, a, 640);
	mmedge_src_fill(&chirp, 50, 0, b, 640);
	KUNIT_EXPECT_NE(test, le_get(b, 8), le_get(a, 8));
	KUNIT_EXPECT_EQ(test, first_diff(a + 8, b + 8, 640 - 8), -1);
}

/* Silence: every byte zero, the index words too, at any seq and offset. */
static void mmedge_src_test_silence(struct kunit *test)
{
	static const u64 seqs[] = { 0, 1, 0x123456789ULL, U64_MAX };
	struct mmedge_src_config cfg = MIC(SILENCE, 16000, 1, 320);
	u8 *buf = kunit_kzalloc(test, 640, GFP_KERNEL);
	unsigned int i;

	KUNIT_ASSERT_NOT_NULL(test, buf);
	for (i = 0; i < ARRAY_SIZE(seqs); i++) {
		memset(buf, 0xa5, 640);
		mmedge_src_fill(&cfg, seqs[i], 0, buf, 640);
		KUNIT_EXPECT_TRUE_MSG(test, !memchr_inv(buf, 0, 640),
				      "seq %llu", seqs[i]);
		memset(buf, 0xa5, 640);
		mmedge_src_fill(&cfg, seqs[i], 3, buf, 5);
		KUNIT_EXPECT_TRUE(test, !memchr_inv(buf, 0, 5));
		KUNIT_EXPECT_EQ(test, buf[5], 0xa5);
	}
}

/*
 * Noise: index words as the tone's; samples at chosen indices (computed
 * from the formula outside the kernel); a function of the index alone;
 * within +-8000, about zero mean, not periodic like the tone.
 */
static void mmedge_src_test_noise(struct kunit *test)
{
	static const struct { u64 n; s16 v; } want[] = {
		{ 4, 346 }, { 5, 5476 }, { 6, 7624 }, { 7, -759 },
		{ 3204, 2860 }, { 3205, -3260 },
		{ 0x123456789ULL * 320 + 100, 6834 },
	};
	struct mmedge_src_config cfg = MIC(NOISE, 16000, 1, 320);
	struct mmedge_src_config other = MIC(NOISE, 48000, 1, 64);
	u8 *buf = kunit_kzalloc(test, 640, GFP_KERNEL);
	u8 two[2];
	unsigned int i;
	s64 sum = 0;
	int v, lo = 0, hi = 0, same = 0;

	KUNIT_ASSERT_NOT_NULL(test, buf);
	for (i = 0; i < ARRAY_SIZE(want); i++) {
		u64 seq = div_u64(want[i].n, cfg.period);
		u32 k = want[i].n - seq * cfg.period;

		mmedge_src_fill(&cfg, seq, 2 * k, two, 2);
		KUNIT_EXPECT_EQ_MSG(test, (s16)le_get(two, 2), want[i].v,
				    "n %llu", want[i].n);
	}

	/* Sample 3204 = buffer 50 of 64 samples, sample 4, at another rate. */
	mmedge_src_fill(&other, 50, 8, two, 2);
	KUNIT_EXPECT_EQ(test, (s16)le_get(two, 2), 2860);

	mmedge_src_fill(&cfg, 10, 0, buf, 640);
	KUNIT_EXPECT_EQ(test, le_get(buf, 8), 3200);
	for (i = 4; i < 320; i++) {
		v = sample(buf, i);
		lo = min(lo, v);
		hi = max(hi, v);
		sum += v;
		same += i > 4 && v == sample(buf, i - 1);
	}
	KUNIT_EXPECT_GE(test, lo, -8000);
	KUNIT_EXPECT_LE(test, hi, 8000);
	KUNIT_EXPECT_LT(test, lo, -7000);
	KUNIT_EXPECT_GT(test, hi, 7000);
	/* 316 uniform samples: |mean| < 3 sigma / sqrt(316), sigma ~4619 */
	KUNIT_EXPECT_LT(test, abs(div_s64(sum, 316)), 800);
	KUNIT_EXPECT_LE(test, same, 1);
}

/* IMU: record k of frame seq carries seq * period + k and its values. */
static void mmedge_src_test_imu(struct kunit *test)
{
	struct mmedge_src_config cfg = IMU(100, 1, 10);
	struct mmedge_imu_sample rec[10];
	const u64 seq = 0x100000001ULL;
	unsigned int k;

	mmedge_src_fill(&cfg, seq, 0, (u8 *)rec, sizeof(rec));
	for (k = 0; k < 10; k++) {
		u64 n = seq * 10 + k;
		u32 m = n;

		KUNIT_EXPECT_EQ(test, le64_to_cpu(rec[k].index), n);
		KUNIT_EXPECT_EQ(test, (s16)le16_to_cpu(rec[k].ax),
				(s32)((m * 7) & 0x7fff) - 16384);
		KUNIT_EXPECT_EQ(test, (s16)le16_to_cpu(rec[k].ay),
				(s32)((m * 13) & 0x7fff) - 16384);
		KUNIT_EXPECT_EQ(test, (s16)le16_to_cpu(rec[k].az),
				16384 + (s32)((m * 3) & 0xff) - 128);
		KUNIT_EXPECT_EQ(test, (s16)le16_to_cpu(rec[k].gx),
				(s32)((m * 5) & 0xfff) - 2048);
		KUNIT_EXPECT_EQ(test, (s16)le16_to_cpu(rec[k].gy),
				(s32)((m * 11) & 0xfff) - 2048);
		KUNIT_EXPECT_EQ(test, (s16)le16_to_cpu(rec[k].gz),
				(s32)((m * 17) & 0xfff) - 2048);
		KUNIT_EXPECT_EQ(test, le32_to_cpu(rec[k].reserved), 0);
	}
}

static struct kunit_case mmedge_src_cases[] = {
	KUNIT_CASE_PARAM(mmedge_src_test_check_good, src_good_gen_params),
	KUNIT_CASE_PARAM(mmedge_src_test_check_bad, src_bad_gen_params),
	KUNIT_CASE_PARAM(mmedge_src_test_frame_bytes, src_geom_gen_params),
	KUNIT_CASE_PARAM(mmedge_src_test_period_ns, src_geom_gen_params),
	KUNIT_CASE(mmedge_src_test_imu_layout),
	KUNIT_CASE_PARAM(mmedge_src_test_fill_split, src_fill_gen_params),
	KUNIT_CASE(mmedge_src_test_fill_past_end),
	KUNIT_CASE_PARAM(mmedge_src_test_camera_pattern, src_cam_gen_params),
	KUNIT_CASE_PARAM(mmedge_src_test_camera_static, src_static_gen_params),
	KUNIT_CASE(mmedge_src_test_mic_index),
	KUNIT_CASE(mmedge_src_test_tone),
	KUNIT_CASE(mmedge_src_test_chirp),
	KUNIT_CASE(mmedge_src_test_silence),
	KUNIT_CASE(mmedge_src_test_noise),
	KUNIT_CASE(mmedge_src_test_imu),
	{}
};

static struct kunit_suite mmedge_src_suite = {
	.name = "mmedge_src",
	.test_cases = mmedge_src_cases,
};

kunit_test_suite(mmedge_src_suite);

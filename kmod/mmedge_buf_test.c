// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for mmedge's buffer argument checks, range clipping, the
 * cutting of blocks to an importer's segment limits and memory
 * accounting.
 */

#include <kunit/test.h>
#include <linux/fcntl.h>
#include <linux/sizes.h>

#include "mmedge_buf.h"
#include "mmedge_uapi.h"

#define MIB	SZ_1M

struct mmedge_alloc_case {
	const char *desc;
	u64 size;
	u32 flags;
	u32 fd_flags;
	u64 reserved1;
	int expect;
	u64 expect_size;
};

static const struct mmedge_alloc_case mmedge_alloc_cases[] = {
	{ "one byte rounds to a page", 1, 0, O_RDWR, 0, 0, 4096 },
	{ "page exact", 4096, 0, O_RDWR | O_CLOEXEC, 0, 0, 4096 },
	{ "1 MiB + 1", MIB + 1, 0, O_RDWR, 0, 0, MIB + 4096 },
	{ "at the cap", 64 * MIB, 0, O_RDWR, 0, 0, 64 * MIB },
	{ "cap + 1 rounds past it", 64 * MIB + 1, 0, O_RDWR, 0, -ENOMEM, 0 },
	{ "size 0", 0, 0, O_RDWR, 0, -EINVAL, 0 },
	{ "size overflows when rounded", U64_MAX - 10, 0, O_RDWR, 0, -EINVAL, 0 },
	{ "write-combined", 4096, MMEDGE_BUF_CACHE_WC, O_RDWR, 0, 0, 4096 },
	{ "uncached contiguous", 4096,
	  MMEDGE_BUF_CACHE_UNCACHED | MMEDGE_BUF_CONTIG, O_RDWR, 0, 0, 4096 },
	{ "cache mode 3", 4096, 3, O_RDWR, 0, -EINVAL, 0 },
	{ "unknown flag", 4096, 1U << 9, O_RDWR, 0, -EINVAL, 0 },
	{ "top flag bit", 4096, 1U << 31, O_RDWR, 0, -EINVAL, 0 },
	{ "read-only fd", 4096, 0, O_RDONLY, 0, 0, 4096 },
	{ "access mode 3", 4096, 0, O_ACCMODE, 0, -EINVAL, 0 },
	{ "O_NONBLOCK", 4096, 0, O_RDWR | O_NONBLOCK, 0, -EINVAL, 0 },
	{ "reserved set", 4096, 0, O_RDWR, 1, -EINVAL, 0 },
};

static void mmedge_alloc_case_desc(const struct mmedge_alloc_case *c,
				   char *desc)
{
	strscpy(desc, c->desc, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(mmedge_alloc, mmedge_alloc_cases, mmedge_alloc_case_desc);

static void mmedge_test_alloc_check(struct kunit *test)
{
	const struct mmedge_alloc_case *c = test->param_value;
	struct mmedge_buf_alloc a = {
		.size = c->size,
		.flags = c->flags,
		.fd_flags = c->fd_flags,
	};
	u64 size = 0;

	a.reserved[1] = c->reserved1;
	KUNIT_EXPECT_EQ(test, mmedge_buf_alloc_check(&a, 64 * MIB, 12, &size),
			c->expect);
	if (!c->expect)
		KUNIT_EXPECT_EQ(test, size, c->expect_size);
}

/* With 64 KiB pages the same request rounds differently. */
static void mmedge_test_alloc_check_page_shift(struct kunit *test)
{
	struct mmedge_buf_alloc a = { .size = 4097, .fd_flags = O_RDWR };
	u64 size = 0;

	KUNIT_EXPECT_EQ(test, mmedge_buf_alloc_check(&a, MIB, 16, &size), 0);
	KUNIT_EXPECT_EQ(test, size, 65536);
}

struct mmedge_sync_case {
	const char *desc;
	u32 flags;
	u64 offset;
	u64 len;
	int expect;
};

#define RW_START	(MMEDGE_BUF_SYNC_RW | MMEDGE_BUF_SYNC_START)

static const struct mmedge_sync_case mmedge_sync_cases[] = {
	{ "whole buffer", RW_START, 0, MIB, 0 },
	{ "last byte", MMEDGE_BUF_SYNC_READ, MIB - 1, 1, 0 },
	{ "end, write", MMEDGE_BUF_SYNC_WRITE | MMEDGE_BUF_SYNC_END, 4096, 4096, 0 },
	{ "len 0", RW_START, 0, 0, -EINVAL },
	{ "one past the end", RW_START, MIB - 1, 2, -EINVAL },
	{ "offset at the end", RW_START, MIB, 1, -EINVAL },
	{ "offset + len overflows", RW_START, U64_MAX, 2, -EINVAL },
	{ "huge len", RW_START, 1, U64_MAX, -EINVAL },
	{ "no direction", MMEDGE_BUF_SYNC_START, 0, 4096, -EINVAL },
	{ "unknown flag", RW_START | 8, 0, 4096, -EINVAL },
};

static void mmedge_sync_case_desc(const struct mmedge_sync_case *c, char *desc)
{
	strscpy(desc, c->desc, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(mmedge_sync, mmedge_sync_cases, mmedge_sync_case_desc);

static void mmedge_test_sync_check(struct kunit *test)
{
	const struct mmedge_sync_case *c = test->param_value;
	struct mmedge_buf_sync s = {
		.flags = c->flags, .offset = c->offset, .len = c->len,
	};

	KUNIT_EXPECT_EQ(test, mmedge_buf_sync_check(&s, MIB), c->expect);
}

static void mmedge_test_sync_check_reserved(struct kunit *test)
{
	struct mmedge_buf_sync s = {
		.flags = RW_START, .len = 4096, .reserved = { 0, 1 },
	};

	KUNIT_EXPECT_EQ(test, mmedge_buf_sync_check(&s, MIB), -EINVAL);
}

static void mmedge_test_import_release_check(struct kunit *test)
{
	struct mmedge_buf_import imp = { .fd = 3 };
	struct mmedge_buf_release rel = { .id = 1 };
	struct mmedge_buf_info info = { .fd = 3 };

	KUNIT_EXPECT_EQ(test, mmedge_buf_import_check(&imp), 0);
	imp.flags = 1;
	KUNIT_EXPECT_EQ(test, mmedge_buf_import_check(&imp), -EINVAL);
	imp.flags = 0;
	imp.pad = 1;
	KUNIT_EXPECT_EQ(test, mmedge_buf_import_check(&imp), -EINVAL);

	KUNIT_EXPECT_EQ(test, mmedge_buf_release_check(&rel), 0);
	rel.id = MMEDGE_MAX_IMPORTS;
	KUNIT_EXPECT_EQ(test, mmedge_buf_release_check(&rel), 0);
	rel.id = MMEDGE_MAX_IMPORTS + 1;
	KUNIT_EXPECT_EQ(test, mmedge_buf_release_check(&rel), -ENOENT);
	rel.id = 0;
	KUNIT_EXPECT_EQ(test, mmedge_buf_release_check(&rel), -ENOENT);
	rel.id = 1;
	rel.reserved[0] = 1;
	KUNIT_EXPECT_EQ(test, mmedge_buf_release_check(&rel), -EINVAL);

	KUNIT_EXPECT_EQ(test, mmedge_buf_info_check(&info), 0);
	info.flags = 1;
	KUNIT_EXPECT_EQ(test, mmedge_buf_info_check(&info), -EINVAL);
}

static void mmedge_test_range_clip(struct kunit *test)
{
	struct mmedge_range r;

	/* Range inside the segment. */
	r = mmedge_range_clip(4096, 8192, 5000, 100);
	KUNIT_EXPECT_EQ(test, r.off, 904);
	KUNIT_EXPECT_EQ(test, r.len, 100);
	/* Range covering the segment and more. */
	r = mmedge_range_clip(4096, 8192, 0, 65536);
	KUNIT_EXPECT_EQ(test, r.off, 0);
	KUNIT_EXPECT_EQ(test, r.len, 8192);
	/* Range starting inside, ending after. */
	r = mmedge_range_clip(4096, 8192, 12000, 4096);
	KUNIT_EXPECT_EQ(test, r.off, 7904);
	KUNIT_EXPECT_EQ(test, r.len, 288);
	/* Range ending exactly at the segment's start: no overlap. */
	r = mmedge_range_clip(4096, 8192, 0, 4096);
	KUNIT_EXPECT_EQ(test, r.len, 0);
	/* Range starting exactly at the segment's end: no overlap. */
	r = mmedge_range_clip(4096, 8192, 12288, 10);
	KUNIT_EXPECT_EQ(test, r.len, 0);
}

/* Summing the clipped pieces over a segment list gives the range back. */
static void mmedge_test_range_clip_sum(struct kunit *test)
{
	static const u64 segs[] = { 4096, 65536, 4096, 1048576, 8192 };
	u64 total = 0, off, len, start, sum;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(segs); i++)
		total += segs[i];
	for (off = 0; off < total; off += 4093) {
		len = min_t(u64, 70001, total - off);
		sum = 0;
		start = 0;
		for (i = 0; i < ARRAY_SIZE(segs); i++) {
			sum += mmedge_range_clip(start, segs[i], off, len).len;
			start += segs[i];
		}
		KUNIT_EXPECT_EQ_MSG(test, sum, len, "off %llu", off);
	}
}

static void mmedge_test_seg_len(struct kunit *test)
{
	/* No limits: the whole block. */
	KUNIT_EXPECT_EQ(test, mmedge_seg_len(0, MIB, 0, U64_MAX, 4096), MIB);
	KUNIT_EXPECT_EQ(test, mmedge_seg_len(0, MIB, U32_MAX, U64_MAX, 4096),
			MIB);
	/* The default 64 KiB segment. */
	KUNIT_EXPECT_EQ(test, mmedge_seg_len(0, MIB, SZ_64K, U64_MAX, 4096),
			SZ_64K);
	/* A limit that is not a page multiple rounds down to pages... */
	KUNIT_EXPECT_EQ(test, mmedge_seg_len(0, MIB, SZ_64K - 1, U64_MAX, 4096),
			SZ_64K - 4096);
	/* ...unless it is below a page. */
	KUNIT_EXPECT_EQ(test, mmedge_seg_len(0, MIB, 512, U64_MAX, 4096), 512);
	/* Less left than the limit. */
	KUNIT_EXPECT_EQ(test, mmedge_seg_len(0, 8192, SZ_64K, U64_MAX, 4096),
			8192);
	/* A 64 KiB boundary 4 KiB ahead. */
	KUNIT_EXPECT_EQ(test, mmedge_seg_len(0xf000, MIB, 0, 0xffff, 4096),
			4096);
	/* Exactly at a boundary: a whole boundary's worth. */
	KUNIT_EXPECT_EQ(test, mmedge_seg_len(0x10000, MIB, 0, 0xffff, 4096),
			SZ_64K);
	/* The default 4 GiB boundary, crossed by a block below it. */
	KUNIT_EXPECT_EQ(test, mmedge_seg_len(0xfff00000ULL, MIB, 0, U32_MAX,
					     4096), MIB);
	KUNIT_EXPECT_EQ(test, mmedge_seg_len(0xfff80000ULL, MIB, 0, U32_MAX,
					     4096), SZ_512K);
	/* Both limits: the smaller wins. */
	KUNIT_EXPECT_EQ(test, mmedge_seg_len(0x1e000, MIB, SZ_64K, 0x1ffff,
					     4096), 8192);
}

/*
 * Cutting blocks as mmedge_attach() does: the pieces cover each block
 * exactly, none is longer than the limit or crosses a boundary.
 */
static void mmedge_test_seg_len_cover(struct kunit *test)
{
	static const u64 blocks[][2] = {	/* address, length */
		{ 0x100000, MIB }, { 0x7f0000, SZ_64K }, { 0xfff80000ULL, MIB },
		{ 0x3000, 4096 }, { 0x1fff00000ULL, 4 * MIB },
	};
	static const u64 limits[][2] = {	/* max_seg, boundary */
		{ 0, U64_MAX }, { SZ_64K, U64_MAX }, { SZ_64K - 1, U32_MAX },
		{ 3 * 4096, 0xffff }, { 512, 0xfff }, { MIB, 0x3ffff },
	};
	unsigned int b, l;

	for (l = 0; l < ARRAY_SIZE(limits); l++) {
		u64 max_seg = limits[l][0], boundary = limits[l][1];

		for (b = 0; b < ARRAY_SIZE(blocks); b++) {
			u64 addr = blocks[b][0], left = blocks[b][1];

			while (left) {
				u64 len = mmedge_seg_len(addr, left, max_seg,
							 boundary, 4096);

				KUNIT_ASSERT_GT(test, len, 0);
				KUNIT_ASSERT_LE(test, len, left);
				if (max_seg)
					KUNIT_EXPECT_LE(test, len, max_seg);
				KUNIT_EXPECT_EQ_MSG(test, addr & ~boundary,
						    (addr + len - 1) & ~boundary,
						    "piece at %llx +%llx",
						    addr, len);
				addr += len;
				left -= len;
			}
		}
	}
}

/* The import check: a segment fits a device's limits, or it does not. */
static void mmedge_test_seg_fits(struct kunit *test)
{
	/* Within the maximum, at it, past it by one byte. */
	KUNIT_EXPECT_TRUE(test, mmedge_seg_fits(0x10000, SZ_64K, SZ_64K,
						U64_MAX));
	KUNIT_EXPECT_FALSE(test, mmedge_seg_fits(0x10000, SZ_64K + 1, SZ_64K,
						 U64_MAX));
	KUNIT_EXPECT_TRUE(test, mmedge_seg_fits(0, U32_MAX, U32_MAX, U64_MAX));
	/* Ending on a boundary, crossing it by one byte. */
	KUNIT_EXPECT_TRUE(test, mmedge_seg_fits(0xff000, 0x1000, U32_MAX,
						0xfffff));
	KUNIT_EXPECT_FALSE(test, mmedge_seg_fits(0xff000, 0x1001, U32_MAX,
						 0xfffff));
	/* Starting on one, a 4 GiB boundary crossed at its top. */
	KUNIT_EXPECT_TRUE(test, mmedge_seg_fits(0x100000000ULL, MIB, U32_MAX,
						U32_MAX));
	KUNIT_EXPECT_FALSE(test, mmedge_seg_fits(0xfff80000ULL, MIB, U32_MAX,
						 U32_MAX));
	/* What mmedge_seg_len() cuts always fits. */
	KUNIT_EXPECT_TRUE(test,
			  mmedge_seg_fits(0xfff80000ULL,
					  mmedge_seg_len(0xfff80000ULL, MIB, MIB,
							 U32_MAX, 4096),
					  MIB, U32_MAX));
}

static void mmedge_test_charge(struct kunit *test)
{
	atomic64_t used = ATOMIC64_INIT(0);

	KUNIT_EXPECT_EQ(test, mmedge_charge(&used, 60, 100), 0);
	KUNIT_EXPECT_EQ(test, mmedge_charge(&used, 40, 100), 0);
	KUNIT_EXPECT_EQ(test, atomic64_read(&used), 100);
	/* Over the cap: refused, nothing charged. */
	KUNIT_EXPECT_EQ(test, mmedge_charge(&used, 1, 100), -ENOMEM);
	KUNIT_EXPECT_EQ(test, atomic64_read(&used), 100);
	mmedge_uncharge(&used, 60);
	KUNIT_EXPECT_EQ(test, atomic64_read(&used), 40);
	/* A charge larger than the cap itself. */
	KUNIT_EXPECT_EQ(test, mmedge_charge(&used, 101, 100), -ENOMEM);
	/* No wrap-around for huge requests. */
	KUNIT_EXPECT_EQ(test, mmedge_charge(&used, U64_MAX, U64_MAX - 1),
			-ENOMEM);
	KUNIT_EXPECT_EQ(test, mmedge_charge(&used, U64_MAX - 20, U64_MAX - 1),
			-ENOMEM);
	KUNIT_EXPECT_EQ(test, atomic64_read(&used), 40);
}

static struct kunit_case mmedge_buf_cases[] = {
	KUNIT_CASE_PARAM(mmedge_test_alloc_check, mmedge_alloc_gen_params),
	KUNIT_CASE(mmedge_test_alloc_check_page_shift),
	KUNIT_CASE_PARAM(mmedge_test_sync_check, mmedge_sync_gen_params),
	KUNIT_CASE(mmedge_test_sync_check_reserved),
	KUNIT_CASE(mmedge_test_import_release_check),
	KUNIT_CASE(mmedge_test_range_clip),
	KUNIT_CASE(mmedge_test_range_clip_sum),
	KUNIT_CASE(mmedge_test_seg_len),
	KUNIT_CASE(mmedge_test_seg_len_cover),
	KUNIT_CASE(mmedge_test_seg_fits),
	KUNIT_CASE(mmedge_test_charge),
	{}
};

static struct kunit_suite mmedge_buf_suite = {
	.name = "mmedge_buf",
	.test_cases = mmedge_buf_cases,
};

kunit_test_suite(mmedge_buf_suite);

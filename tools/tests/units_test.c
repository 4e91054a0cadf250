// SPDX-License-Identifier: GPL-2.0
/* Unit tests of mmctl's human units. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "../mmctl/units.h"
#include "tap.h"

static const struct {
	const char *in;
	int ret;
	uint64_t want;
} rate_cases[] = {
	{ "0", 0, 0 },
	{ "100", 0, 100 },
	{ "64k", 0, 64000 },
	{ "64K", 0, 64000 },
	{ "200M", 0, 200000000 },
	{ "200m", 0, 200000000 },
	{ "1.5G", 0, 1500000000 },
	{ "2T", 0, 2000000000000ULL },
	{ "4Ki", 0, 4096 },
	{ "4MiB", 0, 4194304 },
	{ "1.5GiB/s", 0, 1610612736 },
	{ "200MB/s", 0, 200000000 },
	{ "800B/s", 0, 800 },
	{ ".5k", 0, 500 },
	{ "1.0005k", 0, 1001 },		/* rounded to the byte */
	{ "", -EINVAL, 0 },
	{ "M", -EINVAL, 0 },
	{ "-1", -EINVAL, 0 },
	{ "+1", -EINVAL, 0 },
	{ "1e6", -EINVAL, 0 },
	{ "0x10", -EINVAL, 0 },
	{ "10X", -EINVAL, 0 },
	{ "10 M", -EINVAL, 0 },
	{ "10M/h", -EINVAL, 0 },
	{ "1.2.3", -EINVAL, 0 },
	{ "nan", -EINVAL, 0 },
	{ "20000000T", -ERANGE, 0 },
};

static void test_parse_rate(void)
{
	unsigned int i;

	for (i = 0; i < TAP_COUNT(rate_cases); i++) {
		uint64_t v = 42;

		CHECK_INT(mmctl_parse_rate(rate_cases[i].in, &v),
			  rate_cases[i].ret);
		if ((uint64_t)v != rate_cases[i].want)
			tap_diag("'%s': got %llu", rate_cases[i].in,
				 (unsigned long long)v);
		CHECK(v == rate_cases[i].want);
	}
}

static const struct {
	uint64_t in;
	const char *want;
} fmt_cases[] = {
	{ 0, "0 B/s" },
	{ 950, "950 B/s" },
	{ 1000, "1 kB/s" },
	{ 64000, "64 kB/s" },
	{ 2304000, "2.3 MB/s" },
	{ 2345678, "2.35 MB/s" },
	{ 23456789, "23.5 MB/s" },
	{ 200000000, "200 MB/s" },
	{ 999999, "1 MB/s" },		/* not "1000 kB/s" */
	{ 1500000000, "1.5 GB/s" },
	{ 100000000000ULL, "100 GB/s" },
	{ UINT64_MAX, "18.4 EB/s" },
};

static void test_fmt_rate(void)
{
	unsigned int i;
	char buf[32];

	for (i = 0; i < TAP_COUNT(fmt_cases); i++)
		CHECK_STR(mmctl_fmt_rate(fmt_cases[i].in, buf, sizeof(buf)),
			  fmt_cases[i].want);
}

/* What mmctl prints, it reads back (to its precision). */
static void test_rate_round_trip(void)
{
	static const uint64_t v[] = { 64000, 200000000, 1500000000, 5 };
	unsigned int i;
	char buf[32], *sp;
	uint64_t back;

	for (i = 0; i < TAP_COUNT(v); i++) {
		mmctl_fmt_rate(v[i], buf, sizeof(buf));
		sp = strchr(buf, ' ');
		/* "200 MB/s" -> "200MB/s" */
		memmove(sp, sp + 1, strlen(sp));
		CHECK_INT(mmctl_parse_rate(buf, &back), 0);
		CHECK(back == v[i]);
	}
}

static void test_parse_uint(void)
{
	uint64_t v;

	CHECK_INT(mmctl_parse_uint("100", 10000, &v), 0);
	CHECK(v == 100);
	CHECK_INT(mmctl_parse_uint("0", 10000, &v), 0);
	CHECK_INT(mmctl_parse_uint("10001", 10000, &v), -ERANGE);
	CHECK_INT(mmctl_parse_uint("99999999999999999999999", UINT64_MAX, &v),
		  -ERANGE);
	CHECK_INT(mmctl_parse_uint("", 10, &v), -EINVAL);
	CHECK_INT(mmctl_parse_uint("-1", 10, &v), -EINVAL);
	CHECK_INT(mmctl_parse_uint("1k", 10000, &v), -EINVAL);
	CHECK_INT(mmctl_parse_uint(" 1", 10, &v), -EINVAL);
}

static void test_parse_seconds(void)
{
	double v;

	CHECK_INT(mmctl_parse_seconds("1", 0.1, 3600, &v), 0);
	CHECK(v == 1.0);
	CHECK_INT(mmctl_parse_seconds("0.5s", 0.1, 3600, &v), 0);
	CHECK(v == 0.5);
	CHECK_INT(mmctl_parse_seconds("0", 0.1, 3600, &v), -ERANGE);
	CHECK_INT(mmctl_parse_seconds("3601", 0.1, 3600, &v), -ERANGE);
	CHECK_INT(mmctl_parse_seconds("1m", 0.1, 3600, &v), -EINVAL);
	CHECK_INT(mmctl_parse_seconds("", 0.1, 3600, &v), -EINVAL);
}

static void test_wait_pct(void)
{
	uint64_t h[16] = { 0 };
	bool open, any;
	char buf[32];

	CHECK_INT(mmctl_wait_pct(h, 16, 99, &open, &any), 0);
	CHECK(!any);
	CHECK_STR(mmctl_fmt_wait(0, open, any, buf, sizeof(buf)), "-");

	/* 99 waits under 1024 ns, one under 64 us: p99 is bucket 0. */
	h[0] = 99;
	h[6] = 1;
	CHECK_INT(mmctl_wait_pct(h, 16, 99, &open, &any), 1024);
	CHECK(any && !open);
	CHECK_STR(mmctl_fmt_wait(1024, open, any, buf, sizeof(buf)),
		  "<1.02 us");
	CHECK_INT(mmctl_wait_pct(h, 16, 100, &open, &any), 65536);
	CHECK_STR(mmctl_fmt_wait(65536, false, true, buf, sizeof(buf)),
		  "<65.5 us");

	/* Most in the open last bucket. */
	h[15] = 1000;
	CHECK_INT(mmctl_wait_pct(h, 16, 99, &open, &any), 1ULL << 24);
	CHECK(open);
	CHECK_STR(mmctl_fmt_wait(1ULL << 24, open, any, buf, sizeof(buf)),
		  ">16.8 ms");
}

static const struct tap_test tests[] = {
	TAP_TEST(test_parse_rate),
	TAP_TEST(test_fmt_rate),
	TAP_TEST(test_rate_round_trip),
	TAP_TEST(test_parse_uint),
	TAP_TEST(test_parse_seconds),
	TAP_TEST(test_wait_pct),
};

int main(void)
{
	return tap_run(tests, TAP_COUNT(tests));
}

// SPDX-License-Identifier: GPL-2.0
/* Unit tests of the tools' JSON writer (common/json.c). */
#define _GNU_SOURCE		/* open_memstream() */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "tap.h"

/* A writer into memory; json_result() returns what it wrote. */
static FILE *mem_fp;
static char *mem_buf;
static size_t mem_len;

static void json_start(struct json_writer *w, bool pretty)
{
	free(mem_buf);
	mem_buf = NULL;
	mem_fp = open_memstream(&mem_buf, &mem_len);
	json_init(w, mem_fp, pretty);
}

static const char *json_result(void)
{
	fclose(mem_fp);
	mem_fp = NULL;
	return mem_buf;
}

static const char *json_one_string(const char *s)
{
	struct json_writer w;

	json_start(&w, false);
	json_string(&w, s);
	CHECK_INT(json_finish(&w), 0);
	return json_result();
}

static void test_object_compact(void)
{
	struct json_writer w;

	json_start(&w, false);
	json_begin_object(&w);
	json_kv_string(&w, "dev", "mmedge0");
	json_kv_u64(&w, "mem_limit", UINT64_MAX);
	json_kv_s64(&w, "delta", INT64_MIN);
	json_kv_bool(&w, "virtual", true);
	json_key(&w, "caps");
	json_begin_array(&w);
	json_string(&w, "virtual");
	json_null(&w);
	json_bool(&w, false);
	json_end_array(&w);
	json_key(&w, "empty");
	json_begin_object(&w);
	json_end_object(&w);
	json_key(&w, "none");
	json_begin_array(&w);
	json_end_array(&w);
	json_end_object(&w);
	CHECK_INT(json_finish(&w), 0);
	CHECK_STR(json_result(),
		  "{\"dev\":\"mmedge0\",\"mem_limit\":18446744073709551615,"
		  "\"delta\":-9223372036854775808,\"virtual\":true,"
		  "\"caps\":[\"virtual\",null,false],\"empty\":{},"
		  "\"none\":[]}\n");
}

static void test_pretty(void)
{
	struct json_writer w;

	json_start(&w, true);
	json_begin_array(&w);
	json_begin_object(&w);
	json_kv_u64(&w, "a", 1);
	json_key(&w, "b");
	json_begin_array(&w);
	json_u64(&w, 2);
	json_u64(&w, 3);
	json_end_array(&w);
	json_end_object(&w);
	json_begin_object(&w);
	json_end_object(&w);
	json_end_array(&w);
	CHECK_INT(json_finish(&w), 0);
	CHECK_STR(json_result(),
		  "[\n"
		  "  {\n"
		  "    \"a\": 1,\n"
		  "    \"b\": [\n"
		  "      2,\n"
		  "      3\n"
		  "    ]\n"
		  "  },\n"
		  "  {}\n"
		  "]\n");
}

static void test_escape_specials(void)
{
	CHECK_STR(json_one_string("a\"b\\c/d"), "\"a\\\"b\\\\c/d\"\n");
	CHECK_STR(json_one_string("\b\f\n\r\t"), "\"\\b\\f\\n\\r\\t\"\n");
	CHECK_STR(json_one_string("\x01\x1f\x7f"), "\"\\u0001\\u001f\x7f\"\n");
	CHECK_STR(json_one_string(""), "\"\"\n");
}

static void test_escape_utf8(void)
{
	/* Valid UTF-8 passes through: é, €, U+1F600. */
	CHECK_STR(json_one_string("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"),
		  "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"\n");
	/* Invalid bytes become U+FFFD, one per byte, never raw. */
	CHECK_STR(json_one_string("a\xff" "b"), "\"a\\ufffdb\"\n");
	CHECK_STR(json_one_string("\xc3"), "\"\\ufffd\"\n");		/* cut */
	CHECK_STR(json_one_string("\xc0\xaf"), "\"\\ufffd\\ufffd\"\n");	/* overlong */
	CHECK_STR(json_one_string("\xed\xa0\x80"),			/* surrogate */
		  "\"\\ufffd\\ufffd\\ufffd\"\n");
	CHECK_STR(json_one_string("\xf4\x90\x80\x80"),			/* > U+10FFFF */
		  "\"\\ufffd\\ufffd\\ufffd\\ufffd\"\n");
	CHECK_STR(json_one_string("\xe2\x82"), "\"\\ufffd\\ufffd\"\n");
}

static void test_key_escaped(void)
{
	struct json_writer w;

	json_start(&w, false);
	json_begin_object(&w);
	json_kv_u64(&w, "a\"\n", 0);
	json_end_object(&w);
	CHECK_INT(json_finish(&w), 0);
	CHECK_STR(json_result(), "{\"a\\\"\\n\":0}\n");
}

static void test_misuse_detected(void)
{
	struct json_writer w;

	/* A value in an object without a key. */
	json_start(&w, false);
	json_begin_object(&w);
	json_u64(&w, 1);
	json_end_object(&w);
	CHECK_INT(json_finish(&w), -EINVAL);
	json_result();

	/* A key in an array. */
	json_start(&w, false);
	json_begin_array(&w);
	json_key(&w, "k");
	json_end_array(&w);
	CHECK_INT(json_finish(&w), -EINVAL);
	json_result();

	/* Mismatched close. */
	json_start(&w, false);
	json_begin_array(&w);
	json_end_object(&w);
	CHECK_INT(json_finish(&w), -EINVAL);
	json_result();

	/* Unclosed. */
	json_start(&w, false);
	json_begin_object(&w);
	CHECK_INT(json_finish(&w), -EINVAL);
	json_result();

	/* Key without a value. */
	json_start(&w, false);
	json_begin_object(&w);
	json_key(&w, "k");
	json_end_object(&w);
	CHECK_INT(json_finish(&w), -EINVAL);
	json_result();

	/* Two top-level values. */
	json_start(&w, false);
	json_u64(&w, 1);
	json_u64(&w, 2);
	CHECK_INT(json_finish(&w), -EINVAL);
	json_result();

	/* Nothing at all. */
	json_start(&w, false);
	CHECK_INT(json_finish(&w), -EINVAL);
	json_result();
}

static void test_double(void)
{
	struct json_writer w;

	json_start(&w, false);
	json_begin_array(&w);
	json_double(&w, 0.5);
	json_double(&w, 1.0 / 3.0);
	json_double(&w, 2.5e9);
	json_double(&w, NAN);
	json_double(&w, -INFINITY);
	json_end_array(&w);
	CHECK_INT(json_finish(&w), 0);
	CHECK_STR(json_result(), "[0.5,0.333333,2.5e+09,null,null]\n");

	json_start(&w, false);
	json_begin_object(&w);
	json_kv_double(&w, "share", 0.25);
	json_end_object(&w);
	CHECK_INT(json_finish(&w), 0);
	CHECK_STR(json_result(), "{\"share\":0.25}\n");
}

static void test_double_fixed(void)
{
	struct json_writer w;

	json_start(&w, false);
	json_begin_array(&w);
	json_double_fixed(&w, 12.3456, 3);
	json_double_fixed(&w, 0, 3);
	json_double_fixed(&w, -0.0005, 3);
	json_double_fixed(&w, 2.5e9, 3);
	json_double_fixed(&w, 1.5, 0);
	json_double_fixed(&w, NAN, 3);
	json_double_fixed(&w, INFINITY, 3);
	json_end_array(&w);
	CHECK_INT(json_finish(&w), 0);
	CHECK_STR(json_result(),
		  "[12.346,0.000,-0.001,2500000000.000,2,null,null]\n");

	/* The largest double, all its digits: nothing cut. */
	json_start(&w, false);
	json_double_fixed(&w, -1.7976931348623157e308, 20);
	CHECK_INT(json_finish(&w), 0);
	CHECK_INT(strlen(json_result()), 1 + 309 + 1 + 20 + 1);

	json_start(&w, false);
	json_begin_object(&w);
	json_kv_double_fixed(&w, "ms", 0.25, 3);
	json_end_object(&w);
	CHECK_INT(json_finish(&w), 0);
	CHECK_STR(json_result(), "{\"ms\":0.250}\n");

	/* Decimals out of 0..20 are misuse. */
	json_start(&w, false);
	json_double_fixed(&w, 1, 21);
	CHECK_INT(json_finish(&w), -EINVAL);
	json_result();
	json_start(&w, false);
	json_double_fixed(&w, 1, -1);
	CHECK_INT(json_finish(&w), -EINVAL);
	json_result();
}

static void test_string_len(void)
{
	struct json_writer w;

	/* Exactly the bytes given: a NUL among them, a cut after them. */
	json_start(&w, false);
	json_begin_array(&w);
	json_string_len(&w, "a\0b\n", 4);
	json_string_len(&w, "abc", 2);
	json_string_len(&w, NULL, 0);
	json_string_len(&w, "\xc3\xa9", 1);	/* a cut sequence */
	json_end_array(&w);
	CHECK_INT(json_finish(&w), 0);
	CHECK_STR(json_result(),
		  "[\"a\\u0000b\\n\",\"ab\",\"\",\"\\ufffd\"]\n");
}

static void test_depth_limit(void)
{
	struct json_writer w;
	int i;

	json_start(&w, false);
	for (i = 0; i < JSON_MAX_DEPTH + 1; i++)
		json_begin_array(&w);
	CHECK_INT(json_finish(&w), -EINVAL);
	json_result();

	json_start(&w, false);
	for (i = 0; i < JSON_MAX_DEPTH; i++)
		json_begin_array(&w);
	for (i = 0; i < JSON_MAX_DEPTH; i++)
		json_end_array(&w);
	CHECK_INT(json_finish(&w), 0);
	json_result();
}

static const struct tap_test tests[] = {
	TAP_TEST(test_object_compact),
	TAP_TEST(test_pretty),
	TAP_TEST(test_escape_specials),
	TAP_TEST(test_escape_utf8),
	TAP_TEST(test_key_escaped),
	TAP_TEST(test_misuse_detected),
	TAP_TEST(test_double),
	TAP_TEST(test_double_fixed),
	TAP_TEST(test_string_len),
	TAP_TEST(test_depth_limit),
};

int main(void)
{
	int ret = tap_run(tests, TAP_COUNT(tests));

	free(mem_buf);
	return ret;
}

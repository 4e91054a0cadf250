// SPDX-License-Identifier: MIT
/*
 * gguf_test.c - GGUF reader/writer: round trips of every KV type and
 * several tensor types, a malformed corpus built here (each file rejected
 * with its message), and the generated models' exact layout.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gen.h"
#include "gguf.h"
#include "quant.h"
#include "tests/tap.h"

/* ---- byte builder for hand-made files ---------------------------------- */

struct bb {
	uint8_t *p;
	size_t n, cap;
};

static void bb_put(struct bb *b, const void *s, size_t n)
{
	if (b->n + n > b->cap) {
		b->cap = (b->n + n) * 2 + 64;
		b->p = realloc(b->p, b->cap);
		if (!b->p)
			abort();
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
}

static void bb_le(struct bb *b, uint64_t v, int n)
{
	uint8_t x[8];

	for (int i = 0; i < n; i++)
		x[i] = (uint8_t)(v >> (8 * i));
	bb_put(b, x, (size_t)n);
}

static void bb_str(struct bb *b, const char *s)
{
	bb_le(b, strlen(s), 8);
	bb_put(b, s, strlen(s));
}

static void bb_hdr(struct bb *b, uint32_t ver, uint64_t nt, uint64_t nkv)
{
	bb_put(b, "GGUF", 4);
	bb_le(b, ver, 4);
	bb_le(b, nt, 8);
	bb_le(b, nkv, 8);
}

static void bb_kv_u32(struct bb *b, const char *k, uint32_t v)
{
	bb_str(b, k);
	bb_le(b, MM_GGUF_U32, 4);
	bb_le(b, v, 4);
}

static void bb_ti(struct bb *b, const char *name, uint32_t nd,
		  const uint64_t *ne, uint32_t type, uint64_t off)
{
	bb_str(b, name);
	bb_le(b, nd, 4);
	for (uint32_t i = 0; i < nd; i++)
		bb_le(b, ne[i], 8);
	bb_le(b, type, 4);
	bb_le(b, off, 8);
}

static void bb_pad(struct bb *b, size_t a)
{
	while (b->n % a)
		bb_le(b, 0, 1);
}

static void bb_zero(struct bb *b, size_t n)
{
	while (n--)
		bb_le(b, 0, 1);
}

/* Opens b and expects -EINVAL with msg in the error text. */
static void expect_reject(struct bb *b, const char *msg, const char *what)
{
	struct mm_gguf *g = NULL;
	char err[256] = "";
	int ret = mm_gguf_open_mem(b->p, b->n, &g, err, sizeof(err));

	if (!tap_ok(ret == -EINVAL && !g && strstr(err, msg),
		    "reject %s", what))
		tap_diag("ret %d, message '%s', expected '%s'", ret, err, msg);
	mm_gguf_close(g);
	free(b->p);
	memset(b, 0, sizeof(*b));
}

/* ---- round trip ---------------------------------------------------------- */

static int fill_pattern(void *ctx, const char *name, void *dst, uint64_t size)
{
	(void)name;
	for (uint64_t i = 0; i < size; i++)
		((uint8_t *)dst)[i] = (uint8_t)(i * 7 + (uintptr_t)ctx);
	return 0;
}

static void test_round_trip(uint32_t align)
{
	static const uint8_t a_u8[] = { 0, 1, 255 };
	static const int8_t a_i8[] = { -128, 0, 127 };
	static const uint16_t a_u16[] = { 0, 65535 };
	static const int16_t a_i16[] = { -32768, 32767 };
	static const uint32_t a_u32[] = { 0, 4000000000u, 7 };
	static const int32_t a_i32[] = { INT32_MIN, -1, INT32_MAX };
	static const float a_f32[] = { 1.5f, -2.25f, 1e-30f };
	static const uint8_t a_bool[] = { 1, 0, 1, 1 };
	static const uint64_t a_u64[] = { UINT64_MAX, 0 };
	static const int64_t a_i64[] = { INT64_MIN, 42 };
	static const double a_f64[] = { 3.141592653589793, -0.0 };
	static const char *const a_str[] = { "", "hello", "\xe2\x96\x81the",
					     "with\0nul" };
	static const size_t a_len[] = { 0, 5, 6, 8 };
	struct { const char *name; uint32_t type; uint32_t nd; int64_t ne[4]; } ts[] = {
		{ "f32.2d", MM_TYPE_F32, 2, { 5, 3 } },
		{ "f16.3d", MM_TYPE_F16, 3, { 4, 3, 2 } },
		{ "bf16.1d", MM_TYPE_BF16, 1, { 7 } },
		{ "q8_0", MM_TYPE_Q8_0, 2, { 64, 3 } },
		{ "q4_0.4d", MM_TYPE_Q4_0, 4, { 32, 2, 2, 2 } },
		{ "q4_k", MM_TYPE_Q4_K, 2, { 512, 2 } },
		{ "q6_k", MM_TYPE_Q6_K, 2, { 256, 1 } },
		{ "zero", MM_TYPE_F32, 2, { 0, 4 } },
		{ "blk.0.attn_q.weight", MM_TYPE_Q4_1, 2, { 32, 5 } },
	};
	const int nts = (int)(sizeof(ts) / sizeof(ts[0]));
	struct mm_gguf_writer *w = mm_gguf_writer_new(align);
	const struct mm_gguf_kv *kv;
	struct mm_gguf *g = NULL;
	char err[256], path[64];
	void *buf = NULL;
	size_t size = 0;
	int ok = 1, ret;

	ok &= !mm_gguf_w_u8(w, "t.u8", 200);
	ok &= !mm_gguf_w_i8(w, "t.i8", -100);
	ok &= !mm_gguf_w_u16(w, "t.u16", 60000);
	ok &= !mm_gguf_w_i16(w, "t.i16", -30000);
	ok &= !mm_gguf_w_u32(w, "t.u32", 4000000000u);
	ok &= !mm_gguf_w_i32(w, "t.i32", -5);
	ok &= !mm_gguf_w_f32(w, "t.f32", 0.125f);
	ok &= !mm_gguf_w_bool(w, "t.bool", 1);
	ok &= !mm_gguf_w_str(w, "t.str", "h\xc3\xa9llo");
	ok &= !mm_gguf_w_u64(w, "t.u64", UINT64_MAX - 1);
	ok &= !mm_gguf_w_i64(w, "t.i64", INT64_MIN + 1);
	ok &= !mm_gguf_w_f64(w, "t.f64", 2.5e300);
	ok &= !mm_gguf_w_str(w, "general.architecture", "llama");
	ok &= !mm_gguf_w_arr(w, "a.u8", MM_GGUF_U8, a_u8, 3);
	ok &= !mm_gguf_w_arr(w, "a.i8", MM_GGUF_I8, a_i8, 3);
	ok &= !mm_gguf_w_arr(w, "a.u16", MM_GGUF_U16, a_u16, 2);
	ok &= !mm_gguf_w_arr(w, "a.i16", MM_GGUF_I16, a_i16, 2);
	ok &= !mm_gguf_w_arr(w, "a.u32", MM_GGUF_U32, a_u32, 3);
	ok &= !mm_gguf_w_arr(w, "a.i32", MM_GGUF_I32, a_i32, 3);
	ok &= !mm_gguf_w_arr(w, "a.f32", MM_GGUF_F32, a_f32, 3);
	ok &= !mm_gguf_w_arr(w, "a.bool", MM_GGUF_BOOL, a_bool, 4);
	ok &= !mm_gguf_w_arr(w, "a.u64", MM_GGUF_U64, a_u64, 2);
	ok &= !mm_gguf_w_arr(w, "a.i64", MM_GGUF_I64, a_i64, 2);
	ok &= !mm_gguf_w_arr(w, "a.f64", MM_GGUF_F64, a_f64, 2);
	ok &= !mm_gguf_w_arr_str(w, "a.str", a_str, a_len, 4);
	ok &= !mm_gguf_w_arr(w, "a.empty", MM_GGUF_U32, NULL, 0);
	tap_ok(ok, "align %u: writer accepts every KV type", align);

	ok = mm_gguf_w_u32(w, "t.u32", 1) == -EEXIST &&
	     mm_gguf_w_str(w, "bad\xff", "x") == -EINVAL &&
	     mm_gguf_w_arr(w, "a.nested", MM_GGUF_ARR, a_u8, 1) == -EINVAL;
	tap_ok(ok, "align %u: writer rejects duplicate key, bad UTF-8, nested array",
	       align);

	ok = 1;
	for (int i = 0; i < nts; i++) {
		if (i % 2)
			ret = mm_gguf_w_tensor_cb(w, ts[i].name, ts[i].type,
						  ts[i].nd, ts[i].ne,
						  fill_pattern,
						  (void *)(uintptr_t)i);
		else {
			uint64_t n;
			uint8_t *d;

			mm_gguf_nbytes(ts[i].type, ts[i].nd, ts[i].ne, &n);
			d = malloc(n + 1);
			fill_pattern((void *)(uintptr_t)i, NULL, d, n);
			ret = mm_gguf_w_tensor(w, ts[i].name, ts[i].type,
					       ts[i].nd, ts[i].ne, d);
			free(d);
		}
		ok &= !ret;
	}
	{
		const int64_t bad[2] = { 33, 1 };
		char longname[80];

		memset(longname, 'x', 64);
		longname[64] = 0;
		ok &= mm_gguf_w_tensor(w, "f32.2d", MM_TYPE_F32, 1, bad, NULL) == -EEXIST;
		ok &= mm_gguf_w_tensor(w, "q8bad", MM_TYPE_Q8_0, 2, bad, NULL) == -EINVAL;
		ok &= mm_gguf_w_tensor(w, longname, MM_TYPE_F32, 1, bad, NULL) == -EINVAL;
		ok &= mm_gguf_w_tensor(w, "x5", MM_TYPE_F32, 5, bad, NULL) == -EINVAL;
	}
	tap_ok(ok, "align %u: writer adds tensors, rejects bad ones", align);

	ret = mm_gguf_w_write_mem(w, &buf, &size, err, sizeof(err));
	ret = ret ? ret : mm_gguf_open_mem(buf, size, &g, err, sizeof(err));
	if (!tap_ok(!ret, "align %u: reader accepts the writer's file (%zu bytes)",
		    align, size)) {
		tap_diag("%s", err);
		goto out;
	}

	ok = mm_gguf_version(g) == 3 && mm_gguf_alignment(g) == align &&
	     mm_gguf_data_offset(g) % align == 0 &&
	     !strcmp(mm_gguf_arch(g), "llama") &&
	     mm_gguf_n_kv(g) == 26 + (align != 32);
	{
		uint32_t u32;
		uint64_t u64;
		int32_t i32;
		float f;
		int b;
		const char *s;
		size_t l;

		ok &= !mm_gguf_get_u32(g, "t.u8", &u32) && u32 == 200;
		ok &= !mm_gguf_get_u32(g, "t.u16", &u32) && u32 == 60000;
		ok &= !mm_gguf_get_u32(g, "t.u32", &u32) && u32 == 4000000000u;
		ok &= mm_gguf_get_u32(g, "t.i8", &u32) == -EPROTO;
		ok &= mm_gguf_get_u32(g, "t.u64", &u32) == -EPROTO;
		ok &= mm_gguf_get_u32(g, "t.str", &u32) == -EPROTO;
		ok &= mm_gguf_get_u32(g, "nope", &u32) == -ENOENT;
		ok &= !mm_gguf_get_u64(g, "t.u32", &u64) && u64 == 4000000000u;
		ok &= !mm_gguf_get_u64(g, "t.u64", &u64) && u64 == UINT64_MAX - 1;
		ok &= !mm_gguf_get_i32(g, "t.i8", &i32) && i32 == -100;
		ok &= !mm_gguf_get_i32(g, "t.i16", &i32) && i32 == -30000;
		ok &= !mm_gguf_get_i32(g, "t.i32", &i32) && i32 == -5;
		ok &= mm_gguf_get_i32(g, "t.i64", &i32) == -EPROTO;
		ok &= !mm_gguf_get_f32(g, "t.f32", &f) && f == 0.125f;
		ok &= !mm_gguf_get_f32(g, "t.f64", &f) && isinf(f);
		ok &= mm_gguf_get_f32(g, "t.u8", &f) == -EPROTO;
		ok &= !mm_gguf_get_bool(g, "t.bool", &b) && b == 1;
		ok &= !mm_gguf_get_str(g, "t.str", &s, &l) && l == 6 &&
		      !strcmp(s, "h\xc3\xa9llo");
		kv = mm_gguf_find(g, "t.i64");
		ok &= kv && kv->type == MM_GGUF_I64 && kv->v.i == INT64_MIN + 1;
		kv = mm_gguf_find(g, "t.f64");
		ok &= kv && kv->type == MM_GGUF_F64 && kv->v.f == 2.5e300;
	}
	tap_ok(ok, "align %u: scalar KVs and typed getters", align);

	ok = 1;
	{
		uint32_t et;
		uint64_t n;
		int32_t v;
		float f;
		const char *s;
		size_t l;

		kv = mm_gguf_find(g, "a.u8");
		ok &= !mm_gguf_arr(kv, &et, &n) && et == MM_GGUF_U8 && n == 3 &&
		      !mm_gguf_arr_i32(kv, 2, &v) && v == 255;
		kv = mm_gguf_find(g, "a.i8");
		ok &= !mm_gguf_arr_i32(kv, 0, &v) && v == -128;
		kv = mm_gguf_find(g, "a.u16");
		ok &= !mm_gguf_arr_i32(kv, 1, &v) && v == 65535;
		kv = mm_gguf_find(g, "a.i16");
		ok &= !mm_gguf_arr_i32(kv, 0, &v) && v == -32768;
		kv = mm_gguf_find(g, "a.u32");
		ok &= mm_gguf_arr_i32(kv, 1, &v) == -EPROTO &&
		      !mm_gguf_arr_i32(kv, 2, &v) && v == 7;
		kv = mm_gguf_find(g, "a.i32");
		ok &= !mm_gguf_arr_i32(kv, 0, &v) && v == INT32_MIN &&
		      mm_gguf_arr_i32(kv, 3, &v) == -ERANGE;
		kv = mm_gguf_find(g, "a.f32");
		ok &= !mm_gguf_arr_f32(kv, 1, &f) && f == -2.25f &&
		      mm_gguf_arr_str(kv, 0, &s, &l) == -EPROTO;
		kv = mm_gguf_find(g, "a.bool");
		ok &= !mm_gguf_arr(kv, &et, &n) && et == MM_GGUF_BOOL && n == 4 &&
		      !memcmp(mm_gguf_arr_data(kv), a_bool, 4);
		kv = mm_gguf_find(g, "a.u64");
		ok &= !memcmp(mm_gguf_arr_data(kv), a_u64, sizeof(a_u64));
		kv = mm_gguf_find(g, "a.i64");
		ok &= !memcmp(mm_gguf_arr_data(kv), a_i64, sizeof(a_i64));
		kv = mm_gguf_find(g, "a.f64");
		ok &= !mm_gguf_arr_f32(kv, 0, &f) && fabsf(f - 3.14159265f) < 1e-6f;
		kv = mm_gguf_find(g, "a.str");
		ok &= !mm_gguf_arr(kv, &et, &n) && et == MM_GGUF_STR && n == 4;
		for (uint64_t i = 0; i < 4; i++)
			ok &= !mm_gguf_arr_str(kv, i, &s, &l) && l == a_len[i] &&
			      !memcmp(s, a_str[i], l);
		kv = mm_gguf_find(g, "a.empty");
		ok &= !mm_gguf_arr(kv, &et, &n) && n == 0;
	}
	tap_ok(ok, "align %u: arrays of every element type", align);

	ok = mm_gguf_n_tensors(g) == (uint64_t)nts;
	for (int i = 0; ok && i < nts; i++) {
		const struct mm_gguf_tensor *t = mm_gguf_tensor(g, ts[i].name);
		uint64_t n;
		uint8_t *d;

		ok &= t && t == mm_gguf_tensor_at(g, (uint64_t)i) &&
		      t->type == ts[i].type && t->n_dims == ts[i].nd;
		if (!ok)
			break;
		for (uint32_t k = 0; k < 4; k++)
			ok &= t->ne[k] == (k < ts[i].nd ? ts[i].ne[k] : 1);
		mm_gguf_nbytes(ts[i].type, ts[i].nd, ts[i].ne, &n);
		ok &= t->size == n &&
		      ((uintptr_t)t->data - (uintptr_t)buf) % align == 0;
		d = malloc(n + 1);
		fill_pattern((void *)(uintptr_t)i, NULL, d, n);
		ok &= !memcmp(d, t->data, n);
		free(d);
	}
	ok &= !mm_gguf_tensor(g, "missing");
	tap_ok(ok, "align %u: tensors: types, shapes, aligned data, bytes", align);
	mm_gguf_close(g);
	g = NULL;

	/* the same through a file and mmap */
	snprintf(path, sizeof(path), "/tmp/gguf_test_%d.gguf", (int)getpid());
	ret = mm_gguf_w_write_file(w, path, err, sizeof(err));
	ret = ret ? ret : mm_gguf_open(path, &g, err, sizeof(err));
	ok = !ret && mm_gguf_file_size(g) == size &&
	     !memcmp(mm_gguf_tensor(g, "q4_k")->data,
		     (const uint8_t *)buf + (mm_gguf_tensor(g, "q4_k")->offset +
					     mm_gguf_data_offset(g)),
		     mm_gguf_tensor(g, "q4_k")->size);
	tap_ok(ok, "align %u: file write + mmap open give the same bytes", align);
	unlink(path);
out:
	mm_gguf_close(g);
	free(buf);
	mm_gguf_writer_free(w);
}

/* ---- malformed corpus ---------------------------------------------------- */

static void test_truncation(void)
{
	struct mm_gguf_writer *w = mm_gguf_writer_new(0);
	static const char *const strs[] = { "a", "bc" };
	const int64_t ne[2] = { 32, 2 };
	uint32_t v[3] = { 1, 2, 3 };
	struct mm_gguf *g;
	char err[256];
	void *buf;
	size_t size, last_end;
	int bad = 0, crashes_none = 1;

	mm_gguf_w_str(w, "general.architecture", "llama");
	mm_gguf_w_arr(w, "arr", MM_GGUF_U32, v, 3);
	mm_gguf_w_arr_str(w, "strs", strs, NULL, 2);
	mm_gguf_w_f32(w, "f", 1.0f);
	mm_gguf_w_tensor(w, "t0", MM_TYPE_Q8_0, 2, ne, NULL);
	mm_gguf_w_tensor(w, "t1", MM_TYPE_F32, 2, ne, NULL);
	mm_gguf_w_write_mem(w, &buf, &size, err, sizeof(err));
	mm_gguf_writer_free(w);
	mm_gguf_open_mem(buf, size, &g, err, sizeof(err));
	last_end = mm_gguf_data_offset(g) + mm_gguf_tensor(g, "t1")->offset +
		   mm_gguf_tensor(g, "t1")->size;
	mm_gguf_close(g);
	for (size_t l = 0; l < size; l++) {
		/* a fresh copy of exactly l bytes, so ASan sees overreads */
		uint8_t *c = malloc(l ? l : 1);
		int ret;

		memcpy(c, buf, l);
		err[0] = 0;
		ret = mm_gguf_open_mem(c, l, &g, err, sizeof(err));
		if (l < last_end ? (ret != -EINVAL || !err[0]) : ret != 0) {
			if (bad++ < 3)
				tap_diag("length %zu: ret %d '%s'", l, ret, err);
		}
		if (!ret)
			mm_gguf_close(g);
		free(c);
	}
	tap_ok(!bad && crashes_none,
	       "truncated at each of %zu lengths: rejected before the data ends, accepted after",
	       size);
	free(buf);
}

static void test_malformed(void)
{
	const uint64_t ne1[1] = { 32 }, ne2[2] = { 32, 2 };
	struct bb b = { 0 };
	char name[80];

	bb_put(&b, "GGUX", 4);
	bb_zero(&b, 20);
	expect_reject(&b, "not a GGUF file", "bad magic");

	expect_reject(&b, "not a GGUF file", "empty input");

	bb_hdr(&b, 1, 0, 0);
	expect_reject(&b, "version 1 is not supported", "version 1");
	bb_hdr(&b, 4, 0, 0);
	expect_reject(&b, "version 4 is not supported", "version 4");
	bb_hdr(&b, 0x03000000, 0, 0);
	expect_reject(&b, "big-endian", "big-endian header");

	bb_hdr(&b, 3, 1ull << 62, 0);
	expect_reject(&b, "n_tensors 4611686018427387904 cannot fit", "huge n_tensors");
	bb_hdr(&b, 3, 0, UINT64_MAX);
	expect_reject(&b, "n_kv 18446744073709551615 cannot fit", "huge n_kv");

	bb_hdr(&b, 3, 0, 1);
	bb_le(&b, 1ull << 60, 8);
	bb_zero(&b, 16);
	expect_reject(&b, "kv 0 key: string length 1152921504606846976", "huge key length");

	bb_hdr(&b, 3, 0, 1);
	bb_str(&b, "s");
	bb_le(&b, MM_GGUF_STR, 4);
	bb_le(&b, UINT64_MAX, 8);
	bb_zero(&b, 8);
	expect_reject(&b, "key 's' value: string length 18446744073709551615", "huge string value length");

	bb_hdr(&b, 3, 0, 1);
	bb_str(&b, "arr");
	bb_le(&b, MM_GGUF_ARR, 4);
	bb_le(&b, MM_GGUF_U32, 4);
	bb_le(&b, 1ull << 62, 8);
	bb_zero(&b, 16);
	expect_reject(&b, "key 'arr': array of 4611686018427387904 u32 elements runs past", "huge numeric array count");

	bb_hdr(&b, 3, 0, 1);
	bb_str(&b, "arr");
	bb_le(&b, MM_GGUF_ARR, 4);
	bb_le(&b, MM_GGUF_STR, 4);
	bb_le(&b, 1000, 8);
	bb_str(&b, "x");
	expect_reject(&b, "key 'arr': array of 1000 strings runs past", "huge string array count");

	bb_hdr(&b, 3, 0, 1);
	bb_str(&b, "arr");
	bb_le(&b, MM_GGUF_ARR, 4);
	bb_le(&b, MM_GGUF_STR, 4);
	bb_le(&b, 2, 8);
	bb_str(&b, "x");
	bb_le(&b, 99, 8);
	bb_zero(&b, 8);
	expect_reject(&b, "key 'arr': string element 1 at offset", "string array element past the end");

	bb_hdr(&b, 3, 0, 1);
	bb_str(&b, "nest");
	bb_le(&b, MM_GGUF_ARR, 4);
	bb_le(&b, MM_GGUF_ARR, 4);
	bb_le(&b, 1, 8);
	bb_le(&b, MM_GGUF_U8, 4);
	bb_le(&b, 1, 8);
	bb_le(&b, 1, 1);
	expect_reject(&b, "key 'nest': nested array", "nested array");

	bb_hdr(&b, 3, 0, 1);
	bb_str(&b, "k");
	bb_le(&b, 13, 4);
	bb_zero(&b, 8);
	expect_reject(&b, "key 'k': unknown value type 13", "unknown value type");

	bb_hdr(&b, 3, 0, 1);
	bb_str(&b, "k");
	bb_le(&b, MM_GGUF_ARR, 4);
	bb_le(&b, 77, 4);
	bb_zero(&b, 8);
	expect_reject(&b, "key 'k': unknown array element type 77", "unknown array element type");

	bb_hdr(&b, 3, 0, 2);
	bb_kv_u32(&b, "dup.key", 1);
	bb_kv_u32(&b, "dup.key", 2);
	expect_reject(&b, "key 'dup.key': duplicate key", "duplicate key");

	bb_hdr(&b, 3, 0, 1);
	bb_kv_u32(&b, "bad\xff\xfekey", 1);
	expect_reject(&b, "kv 0: key is not valid UTF-8", "invalid UTF-8 key");
	bb_hdr(&b, 3, 0, 1);
	bb_kv_u32(&b, "over\xc0\xaflong", 1);
	expect_reject(&b, "kv 0: key is not valid UTF-8", "overlong UTF-8 key");
	bb_hdr(&b, 3, 0, 1);
	bb_kv_u32(&b, "surr\xed\xa0\x80", 1);
	expect_reject(&b, "kv 0: key is not valid UTF-8", "UTF-16 surrogate in key");
	bb_hdr(&b, 3, 0, 1);
	bb_kv_u32(&b, "", 1);
	expect_reject(&b, "kv 0: empty key", "empty key");
	bb_hdr(&b, 3, 0, 1);
	bb_str(&b, "ab");
	b.p[b.n - 2] = 0;	/* key "\0b" */
	bb_le(&b, MM_GGUF_U32, 4);
	bb_le(&b, 1, 4);
	expect_reject(&b, "kv 0: key contains a NUL byte", "NUL byte in key");

	bb_hdr(&b, 3, 0, 1);
	bb_kv_u32(&b, "general.alignment", 48);
	expect_reject(&b, "key 'general.alignment': 48 is not a power of two", "alignment 48");
	bb_hdr(&b, 3, 0, 1);
	bb_kv_u32(&b, "general.alignment", 0);
	expect_reject(&b, "key 'general.alignment': 0 is not a power of two", "alignment 0");
	bb_hdr(&b, 3, 0, 1);
	bb_str(&b, "general.alignment");
	bb_le(&b, MM_GGUF_I32, 4);
	bb_le(&b, 64, 4);
	expect_reject(&b, "key 'general.alignment': type i32, expected u32", "alignment of type i32");

	bb_hdr(&b, 3, 0, 1);
	bb_kv_u32(&b, "general.architecture", 1);
	expect_reject(&b, "key 'general.architecture': type u32, expected string", "architecture not a string");
	bb_hdr(&b, 3, 0, 1);
	bb_str(&b, "general.architecture");
	bb_le(&b, MM_GGUF_STR, 4);
	bb_str(&b, "lla\xffma");
	expect_reject(&b, "key 'general.architecture': value is not a valid UTF-8 name", "architecture not UTF-8");

	/* tensor infos */
	bb_hdr(&b, 3, 1, 0);
	{
		const uint64_t ne5[5] = { 1, 1, 1, 1, 1 };

		bb_ti(&b, "t5", 5, ne5, MM_TYPE_F32, 0);
	}
	expect_reject(&b, "tensor 't5': n_dims 5 > 4", "n_dims 5");

	bb_hdr(&b, 3, 1, 0);
	bb_ti(&b, "tq", 1, ne1, 99, 0);
	expect_reject(&b, "tensor 'tq': unknown type 99", "unknown tensor type 99");
	bb_hdr(&b, 3, 1, 0);
	bb_ti(&b, "tq", 1, ne1, 4, 0);
	expect_reject(&b, "tensor 'tq': unknown type 4", "removed tensor type 4 (Q4_2)");

	bb_hdr(&b, 3, 1, 0);
	{
		const uint64_t ne33[2] = { 33, 2 };

		bb_ti(&b, "blk.0.ffn_up.weight", 2, ne33, MM_TYPE_Q8_0, 0);
	}
	expect_reject(&b, "tensor 'blk.0.ffn_up.weight': ne[0] 33 is not a multiple of the block size 32 of q8_0",
		      "ne[0] not a block multiple (q8_0)");
	bb_hdr(&b, 3, 1, 0);
	{
		const uint64_t ne288[2] = { 288, 2 };

		bb_ti(&b, "k", 2, ne288, MM_TYPE_Q4_K, 0);
	}
	expect_reject(&b, "ne[0] 288 is not a multiple of the block size 256 of q4_k",
		      "ne[0] not a block multiple (q4_k)");

	bb_hdr(&b, 3, 2, 0);
	bb_ti(&b, "same", 1, ne1, MM_TYPE_F32, 0);
	bb_ti(&b, "same", 1, ne1, MM_TYPE_F32, 128);
	expect_reject(&b, "tensor 'same': duplicate tensor name", "duplicate tensor name");

	memset(name, 'n', 64);
	name[64] = 0;
	bb_hdr(&b, 3, 1, 0);
	bb_ti(&b, name, 1, ne1, MM_TYPE_F32, 0);
	expect_reject(&b, "name is 64 bytes, the limit is 63", "tensor name of 64 bytes");
	bb_hdr(&b, 3, 1, 0);
	bb_ti(&b, "", 1, ne1, MM_TYPE_F32, 0);
	expect_reject(&b, "tensor 0: empty name", "empty tensor name");
	bb_hdr(&b, 3, 1, 0);
	bb_ti(&b, "t\xc3", 1, ne1, MM_TYPE_F32, 0);
	expect_reject(&b, "tensor 0: name is not valid UTF-8", "invalid UTF-8 tensor name");
	bb_hdr(&b, 3, 1, 0);
	bb_ti(&b, "tx", 1, ne1, MM_TYPE_F32, 0);
	b.p[24 + 8 + 1] = 0;	/* name "t\0" */
	expect_reject(&b, "tensor 0: name contains a NUL byte", "NUL byte in tensor name");

	bb_hdr(&b, 3, 1, 0);
	{
		const uint64_t neg[2] = { 1ull << 63, 1 };

		bb_ti(&b, "neg", 2, neg, MM_TYPE_F32, 0);
	}
	expect_reject(&b, "tensor 'neg': ne[0] = 9223372036854775808 is negative", "negative dimension");
	bb_hdr(&b, 3, 1, 0);
	{
		const uint64_t big[4] = { 1ull << 32, 1ull << 32, 1ull << 32, 1 };

		bb_ti(&b, "big", 4, big, MM_TYPE_F32, 0);
	}
	expect_reject(&b, "tensor 'big': size of 4294967296 x 4294967296 x 4294967296 x 1 f32 overflows",
		      "element count overflow");
	bb_hdr(&b, 3, 1, 0);
	{
		const uint64_t big[2] = { 1ull << 62, 1 };

		bb_ti(&b, "bytes", 2, big, MM_TYPE_F32, 0);
	}
	expect_reject(&b, "tensor 'bytes': size of", "byte size overflow");

	/* offsets: ggml's running aligned sum, overlap, gap, past EOF */
	bb_hdr(&b, 3, 2, 0);
	{
		const uint64_t a[1] = { 3087 }; /* 12348 bytes, padded 12352 */

		bb_ti(&b, "blk.3.attn_norm.weight", 1, a, MM_TYPE_F32, 0);
		bb_ti(&b, "blk.3.attn_q.weight", 2, ne2, MM_TYPE_F32, 12350);
	}
	bb_pad(&b, 32);
	bb_zero(&b, 12352 + 256);
	expect_reject(&b, "tensor 'blk.3.attn_q.weight': offset 12350 is not the aligned running sum 12352",
		      "offset not the running sum");

	bb_hdr(&b, 3, 2, 0);
	bb_ti(&b, "a", 2, ne2, MM_TYPE_F32, 0);
	bb_ti(&b, "b", 2, ne2, MM_TYPE_F32, 64);
	bb_pad(&b, 32);
	bb_zero(&b, 512);
	expect_reject(&b, "tensor 'b': offset 64 overlaps tensor 'a' (its data ends at 256)",
		      "overlapping tensors");

	bb_hdr(&b, 3, 1, 0);
	bb_ti(&b, "gap", 1, ne1, MM_TYPE_F32, 32);
	bb_pad(&b, 32);
	bb_zero(&b, 512);
	expect_reject(&b, "tensor 'gap': offset 32 is not the aligned running sum 0",
		      "gap before the first tensor");

	bb_hdr(&b, 3, 1, 0);
	bb_ti(&b, "eof", 2, ne2, MM_TYPE_F32, 0);
	bb_pad(&b, 32);
	bb_zero(&b, 255);
	expect_reject(&b, "tensor 'eof': data at file offset", "data one byte past EOF");

	bb_hdr(&b, 3, 1, 0);
	bb_ti(&b, "nodata", 2, ne2, MM_TYPE_F32, 0);
	expect_reject(&b, "runs past the end of the file", "data section missing");

	/* accepted edge cases: 63-byte name, version 2, data exactly at EOF */
	{
		struct mm_gguf *g = NULL;
		char err[256];
		int ret;

		memset(name, 'n', 63);
		name[63] = 0;
		bb_hdr(&b, 2, 1, 1);
		bb_kv_u32(&b, "general.alignment", 64);
		bb_ti(&b, name, 2, ne2, MM_TYPE_F32, 0);
		bb_pad(&b, 64);
		bb_zero(&b, 256);
		ret = mm_gguf_open_mem(b.p, b.n, &g, err, sizeof(err));
		if (!tap_ok(!ret && mm_gguf_version(g) == 2 &&
			    mm_gguf_tensor(g, name) &&
			    mm_gguf_data_offset(g) % 64 == 0,
			    "accept v2, alignment 64, 63-byte name, data ending at EOF"))
			tap_diag("ret %d '%s'", ret, err);
		mm_gguf_close(g);
		free(b.p);
		memset(&b, 0, sizeof(b));
	}

	/* open(): OS errors */
	{
		struct mm_gguf *g = NULL;
		char err[256];

		tap_ok(mm_gguf_open("/nonexistent/x.gguf", &g, err, sizeof(err)) == -ENOENT &&
		       strstr(err, "cannot open"), "open: missing file gives -ENOENT");
		tap_ok(mm_gguf_open("/tmp", &g, err, sizeof(err)) == -EINVAL &&
		       strstr(err, "not a regular file"), "open: a directory is refused");
	}
}

/* ---- generated models ---------------------------------------------------- */

static int has_key_u32(const struct mm_gguf *g, const char *k, uint32_t v)
{
	uint32_t x;

	return !mm_gguf_get_u32(g, k, &x) && x == v;
}

static void test_gen_shape(const char *shape, const char *tok, uint32_t type,
			   int on_disk)
{
	struct mm_gen_params p = { shape, tok, type, 1 };
	const struct mm_gen_shape *s = mm_gen_shape_find(shape);
	struct mm_gguf *g = NULL;
	char err[256], path[80];
	void *buf = NULL;
	size_t size;
	int ret, ok;
	uint32_t kvd = s->n_embd / s->n_head * s->n_head_kv;
	float f;

	if (on_disk) {
		snprintf(path, sizeof(path), "/tmp/gguf_test_gen_%d.gguf",
			 (int)getpid());
		ret = mm_gen_model(&p, path, err, sizeof(err));
		ret = ret ? ret : mm_gguf_open(path, &g, err, sizeof(err));
	} else {
		ret = mm_gen_model_mem(&p, &buf, &size, err, sizeof(err));
		ret = ret ? ret : mm_gguf_open_mem(buf, size, &g, err, sizeof(err));
	}
	if (!tap_ok(!ret, "gen %s/%s/%s: generated file loads", shape, tok,
		    mm_gguf_type_name(type))) {
		tap_diag("%s", err);
		goto out;
	}
	ok = !strcmp(mm_gguf_arch(g), "llama") &&
	     has_key_u32(g, "llama.block_count", s->n_layer) &&
	     has_key_u32(g, "llama.embedding_length", s->n_embd) &&
	     has_key_u32(g, "llama.attention.head_count", s->n_head) &&
	     has_key_u32(g, "llama.attention.head_count_kv", s->n_head_kv) &&
	     has_key_u32(g, "llama.feed_forward_length", s->n_ff) &&
	     has_key_u32(g, "llama.context_length", s->n_ctx) &&
	     has_key_u32(g, "llama.vocab_size", s->n_vocab) &&
	     has_key_u32(g, "llama.rope.dimension_count", s->n_embd / s->n_head) &&
	     has_key_u32(g, "general.file_type", type == MM_TYPE_F32 ? 0 : 1) &&
	     !mm_gguf_get_f32(g, "llama.rope.freq_base", &f) && f == s->rope_base &&
	     !mm_gguf_get_f32(g, "llama.attention.layer_norm_rms_epsilon", &f) &&
	     f == s->rms_eps;
	{
		const struct mm_gguf_kv *kv = mm_gguf_find(g, "tokenizer.ggml.tokens");
		const char *tmpl;
		uint64_t n;

		ok &= !mm_gguf_arr(kv, NULL, &n) && n == s->n_vocab;
		ok &= !mm_gguf_get_str(g, "tokenizer.chat_template", &tmpl, NULL) &&
		      strstr(tmpl, "<|im_start|>");
		ok &= !!mm_gguf_find(g, "tokenizer.ggml.merges") == !strcmp(tok, "gpt2");
		ok &= !!mm_gguf_find(g, "tokenizer.ggml.scores") == !strcmp(tok, "llama");
	}
	tap_ok(ok, "gen %s/%s: hyperparameters and tokenizer keys", shape, tok);

	ok = mm_gguf_n_tensors(g) == 9ull * s->n_layer + 2 &&
	     !mm_gguf_tensor(g, "output.weight");
	{
		const struct { const char *n; int nd; int64_t a, b; uint32_t t; } want[] = {
			{ "attn_norm", 1, s->n_embd, 1, MM_TYPE_F32 },
			{ "attn_q", 2, s->n_embd, s->n_embd, type },
			{ "attn_k", 2, s->n_embd, kvd, type },
			{ "attn_v", 2, s->n_embd, kvd, type },
			{ "attn_output", 2, s->n_embd, s->n_embd, type },
			{ "ffn_norm", 1, s->n_embd, 1, MM_TYPE_F32 },
			{ "ffn_gate", 2, s->n_embd, s->n_ff, type },
			{ "ffn_up", 2, s->n_embd, s->n_ff, type },
			{ "ffn_down", 2, s->n_ff, s->n_embd, type },
		};
		const struct mm_gguf_tensor *t;

		t = mm_gguf_tensor(g, "token_embd.weight");
		ok &= t && t->type == type && t->n_dims == 2 &&
		      t->ne[0] == s->n_embd && t->ne[1] == s->n_vocab;
		t = mm_gguf_tensor(g, "output_norm.weight");
		ok &= t && t->type == MM_TYPE_F32 && t->n_dims == 1 &&
		      t->ne[0] == s->n_embd && ((const float *)t->data)[0] == 1.0f;
		for (uint32_t l = 0; l < s->n_layer; l++)
			for (int k = 0; k < 9; k++) {
				char tn[64];

				snprintf(tn, sizeof(tn), "blk.%u.%s.weight", l,
					 want[k].n);
				t = mm_gguf_tensor(g, tn);
				ok &= t && t->type == want[k].t &&
				      (int)t->n_dims == want[k].nd &&
				      t->ne[0] == want[k].a && t->ne[1] == want[k].b;
			}
	}
	tap_ok(ok, "gen %s: %u layers x 9 tensors + token_embd + output_norm, exact shapes, tied output",
	       shape, s->n_layer);
out:
	mm_gguf_close(g);
	free(buf);
	if (on_disk)
		unlink(path);
}

static void test_gen_deterministic(void)
{
	struct mm_gen_params p = { "micro", "gpt2", MM_TYPE_F32, 5 };
	void *a = NULL, *b = NULL;
	size_t na = 0, nb = 0;
	char err[128];
	int same, differ;

	mm_gen_model_mem(&p, &a, &na, err, sizeof(err));
	mm_gen_model_mem(&p, &b, &nb, err, sizeof(err));
	same = na == nb && na && !memcmp(a, b, na);
	free(b);
	b = NULL;
	p.seed = 6;
	mm_gen_model_mem(&p, &b, &nb, err, sizeof(err));
	differ = na == nb && memcmp(a, b, na);
	tap_ok(same && differ, "gen: same seed gives the same bytes, another seed other weights");
	free(a);
	free(b);
}

/* Greedy logits of the generated embedding: a clear winner, no ties. */
static void test_gen_logit_gap(void)
{
	struct mm_gen_params p = { "tiny", "gpt2", MM_TYPE_F32, 1 };
	const struct mm_gguf_tensor *t;
	struct mm_gguf *g = NULL;
	void *buf = NULL;
	size_t size;
	char err[128];
	int ok = 1, n = 64;

	if (mm_gen_model_mem(&p, &buf, &size, err, sizeof(err)) ||
	    mm_gguf_open_mem(buf, size, &g, err, sizeof(err))) {
		tap_ok(0, "gen: logit gap (%s)", err);
		free(buf);
		return;
	}
	t = mm_gguf_tensor(g, "token_embd.weight");
	/* logits of each token's own (rms-normed) embedding vs the vocab */
	for (int i = 0; i < n && ok; i++) {
		const float *e = t->data, *x = e + (size_t)i * 256;
		float best = -1e30f, second = -1e30f, rms = 0;

		for (int k = 0; k < 256; k++)
			rms += x[k] * x[k];
		rms = sqrtf(rms / 256);
		for (int v = 0; v < 300; v++) {
			float d = 0;

			for (int k = 0; k < 256; k++)
				d += x[k] / rms * e[(size_t)v * 256 + k];
			if (d > best) {
				second = best;
				best = d;
			} else if (d > second) {
				second = d;
			}
		}
		ok &= best - second > 0.5f;
	}
	tap_ok(ok, "gen: tied-output logits have a clear maximum (gap > 0.5)");
	mm_gguf_close(g);
	free(buf);
}

static void test_type_table(void)
{
	static const uint32_t ids[] = { MM_TYPE_F32, MM_TYPE_F16, MM_TYPE_Q4_0,
					MM_TYPE_Q4_1, MM_TYPE_Q8_0, MM_TYPE_Q4_K,
					MM_TYPE_Q6_K, MM_TYPE_Q8_K, MM_TYPE_BF16 };
	int ok = 1;

	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		uint32_t e, b;

		ok &= !mm_gguf_type_block(ids[i], &e, &b) &&
		      e == mm_type_block_elems(ids[i]) &&
		      b == mm_type_block_bytes(ids[i]);
	}
	ok &= mm_gguf_type_block(4, NULL, NULL) == -EINVAL &&
	      mm_gguf_type_block(40, NULL, NULL) == -EINVAL;
	tap_ok(ok, "type table agrees with quant.h for every kernel type");
}

int main(int argc, char **argv)
{
	int big = !(argc > 1 && !strcmp(argv[1], "--quick"));

	test_type_table();
	test_round_trip(32);
	test_round_trip(64);
	test_round_trip(1);
	test_truncation();
	test_malformed();
	test_gen_deterministic();
	test_gen_shape("micro", "gpt2", MM_TYPE_F16, 0);
	test_gen_shape("tiny", "gpt2", MM_TYPE_F32, 0);
	test_gen_shape("tiny", "llama", MM_TYPE_F16, 1);
	if (big)
		test_gen_shape("smollm2-135m", "gpt2", MM_TYPE_F16, 1);
	test_gen_logit_gap();
	return tap_done("gguf_test");
}

/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * A small streaming JSON writer (RFC 8259): the caller opens and closes
 * objects and arrays and writes keys and values; the writer places commas,
 * escapes strings and, if asked, indents. Misuse (a value without a key in
 * an object, a key in an array, unbalanced closes) is recorded and reported
 * by json_finish(), so a bug cannot silently produce invalid JSON.
 */
#ifndef TOOLS_JSON_H
#define TOOLS_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH	32

struct json_writer {
	FILE *fp;
	bool pretty;
	int depth;
	/* Per open level: '{' or '[', and whether it has a member yet. */
	char kind[JSON_MAX_DEPTH];
	bool has_member[JSON_MAX_DEPTH];
	/* A key was written and its value is due. */
	bool after_key;
	/* A complete top-level value was written. */
	bool done;
	/* First misuse seen (-EINVAL), or 0. */
	int error;
};

void json_init(struct json_writer *w, FILE *fp, bool pretty);

void json_begin_object(struct json_writer *w);
void json_end_object(struct json_writer *w);
void json_begin_array(struct json_writer *w);
void json_end_array(struct json_writer *w);

void json_key(struct json_writer *w, const char *key);
void json_string(struct json_writer *w, const char *s);
/* Exactly @len bytes of @s: a NUL among them is written as \u0000. */
void json_string_len(struct json_writer *w, const char *s, size_t len);
void json_u64(struct json_writer *w, uint64_t v);
void json_s64(struct json_writer *w, int64_t v);
/* A finite number as "%.6g"; NaN and infinities become null. */
void json_double(struct json_writer *w, double v);
/*
 * A finite number with @decimals (0..20) digits after the point, as
 * "%.*f": for values whose readers expect a fixed precision (mmrun's
 * milliseconds, with 3); NaN and infinities become null.
 */
void json_double_fixed(struct json_writer *w, double v, int decimals);
void json_bool(struct json_writer *w, bool v);
void json_null(struct json_writer *w);

/* key + value in one call, for object members. */
void json_kv_string(struct json_writer *w, const char *key, const char *s);
void json_kv_u64(struct json_writer *w, const char *key, uint64_t v);
void json_kv_s64(struct json_writer *w, const char *key, int64_t v);
void json_kv_double(struct json_writer *w, const char *key, double v);
void json_kv_double_fixed(struct json_writer *w, const char *key, double v,
			  int decimals);
void json_kv_bool(struct json_writer *w, const char *key, bool v);

/*
 * Ends the document with a newline.
 * Return: 0, or -EINVAL if the writer was misused or the document is not
 * one complete value.
 */
int json_finish(struct json_writer *w);

#endif /* TOOLS_JSON_H */

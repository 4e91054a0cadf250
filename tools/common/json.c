// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Streaming JSON writer; see json.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "json.h"

void json_init(struct json_writer *w, FILE *fp, bool pretty)
{
	memset(w, 0, sizeof(*w));
	w->fp = fp;
	w->pretty = pretty;
}

static void json_misuse(struct json_writer *w)
{
	if (!w->error)
		w->error = -EINVAL;
}

static void json_indent(struct json_writer *w)
{
	int i;

	if (!w->pretty)
		return;
	fputc('\n', w->fp);
	for (i = 0; i < w->depth; i++)
		fputs("  ", w->fp);
}

/* Everything that precedes a value: checks, comma, indentation. */
static bool json_pre_value(struct json_writer *w)
{
	if (w->error)
		return false;
	if (w->depth == 0) {
		if (w->done) {
			json_misuse(w);	/* a second top-level value */
			return false;
		}
		return true;
	}
	if (w->kind[w->depth - 1] == '{') {
		if (!w->after_key) {
			json_misuse(w);	/* object member without a key */
			return false;
		}
		w->after_key = false;
		return true;	/* json_key() wrote comma and indent */
	}
	if (w->has_member[w->depth - 1])
		fputc(',', w->fp);
	w->has_member[w->depth - 1] = true;
	json_indent(w);
	return true;
}

static void json_post_value(struct json_writer *w)
{
	if (w->depth == 0)
		w->done = true;
}

static void json_begin(struct json_writer *w, char kind)
{
	if (!json_pre_value(w))
		return;
	if (w->depth == JSON_MAX_DEPTH) {
		json_misuse(w);
		return;
	}
	fputc(kind, w->fp);
	w->kind[w->depth] = kind;
	w->has_member[w->depth] = false;
	w->depth++;
}

static void json_end(struct json_writer *w, char kind)
{
	bool had_members;

	if (w->error)
		return;
	if (w->depth == 0 || w->kind[w->depth - 1] != kind || w->after_key) {
		json_misuse(w);
		return;
	}
	had_members = w->has_member[w->depth - 1];
	w->depth--;
	if (had_members)
		json_indent(w);
	fputc(kind == '{' ? '}' : ']', w->fp);
	json_post_value(w);
}

void json_begin_object(struct json_writer *w)
{
	json_begin(w, '{');
}

void json_end_object(struct json_writer *w)
{
	json_end(w, '{');
}

void json_begin_array(struct json_writer *w)
{
	json_begin(w, '[');
}

void json_end_array(struct json_writer *w)
{
	json_end(w, '[');
}

/*
 * Length of the valid UTF-8 sequence at @s (at most @n bytes), or 0 if it
 * is not one: overlong forms, surrogates and code points above U+10FFFF are
 * invalid (RFC 3629).
 */
static size_t utf8_seq_len(const unsigned char *s, size_t n)
{
	uint32_t cp;
	size_t len, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		len = 2;
		cp = s[0] & 0x1f;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		len = 3;
		cp = s[0] & 0x0f;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		len = 4;
		cp = s[0] & 0x07;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return len;
}

static void json_write_string(FILE *fp, const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t len;

	fputc('"', fp);
	while (n) {
		switch (*s) {
		case '"':
			fputs("\\\"", fp);
			break;
		case '\\':
			fputs("\\\\", fp);
			break;
		case '\b':
			fputs("\\b", fp);
			break;
		case '\f':
			fputs("\\f", fp);
			break;
		case '\n':
			fputs("\\n", fp);
			break;
		case '\r':
			fputs("\\r", fp);
			break;
		case '\t':
			fputs("\\t", fp);
			break;
		default:
			if (*s < 0x20) {
				fprintf(fp, "\\u%04x", *s);
				break;
			}
			len = utf8_seq_len(s, n);
			if (!len) {
				/* Not UTF-8: U+FFFD keeps the output valid. */
				fputs("\\ufffd", fp);
				break;
			}
			fwrite(s, 1, len, fp);
			s += len;
			n -= len;
			continue;
		}
		s++;
		n--;
	}
	fputc('"', fp);
}

void json_key(struct json_writer *w, const char *key)
{
	if (w->error)
		return;
	if (w->depth == 0 || w->kind[w->depth - 1] != '{' || w->after_key) {
		json_misuse(w);
		return;
	}
	if (w->has_member[w->depth - 1])
		fputc(',', w->fp);
	w->has_member[w->depth - 1] = true;
	json_indent(w);
	json_write_string(w->fp, key, strlen(key));
	fputs(w->pretty ? ": " : ":", w->fp);
	w->after_key = true;
}

void json_string(struct json_writer *w, const char *s)
{
	if (!json_pre_value(w))
		return;
	if (s)
		json_write_string(w->fp, s, strlen(s));
	else
		fputs("null", w->fp);
	json_post_value(w);
}

void json_string_len(struct json_writer *w, const char *s, size_t len)
{
	if (!json_pre_value(w))
		return;
	json_write_string(w->fp, s, len);
	json_post_value(w);
}

void json_u64(struct json_writer *w, uint64_t v)
{
	if (!json_pre_value(w))
		return;
	fprintf(w->fp, "%" PRIu64, v);
	json_post_value(w);
}

void json_s64(struct json_writer *w, int64_t v)
{
	if (!json_pre_value(w))
		return;
	fprintf(w->fp, "%" PRId64, v);
	json_post_value(w);
}

/* A formatted finite number, with a '.' whatever the locale. */
static void json_write_number(struct json_writer *w, const char *buf)
{
	const char *c = strchr(buf, ',');

	if (!c) {
		fputs(buf, w->fp);
		return;
	}
	fwrite(buf, 1, (size_t)(c - buf), w->fp);
	fputc('.', w->fp);
	fputs(c + 1, w->fp);
}

void json_double(struct json_writer *w, double v)
{
	char buf[32];

	if (!isfinite(v)) {
		json_null(w);
		return;
	}
	if (!json_pre_value(w))
		return;
	/* Enough digits for a ratio or a rate. */
	snprintf(buf, sizeof(buf), "%.6g", v);
	json_write_number(w, buf);
	json_post_value(w);
}

void json_double_fixed(struct json_writer *w, double v, int decimals)
{
	/* DBL_MAX has 309 digits before the point: room for all of them. */
	char buf[400];

	if (decimals < 0 || decimals > 20) {
		json_misuse(w);
		return;
	}
	if (!isfinite(v)) {
		json_null(w);
		return;
	}
	if (!json_pre_value(w))
		return;
	snprintf(buf, sizeof(buf), "%.*f", decimals, v);
	json_write_number(w, buf);
	json_post_value(w);
}

void json_bool(struct json_writer *w, bool v)
{
	if (!json_pre_value(w))
		return;
	fputs(v ? "true" : "false", w->fp);
	json_post_value(w);
}

void json_null(struct json_writer *w)
{
	if (!json_pre_value(w))
		return;
	fputs("null", w->fp);
	json_post_value(w);
}

void json_kv_string(struct json_writer *w, const char *key, const char *s)
{
	json_key(w, key);
	json_string(w, s);
}

void json_kv_u64(struct json_writer *w, const char *key, uint64_t v)
{
	json_key(w, key);
	json_u64(w, v);
}

void json_kv_s64(struct json_writer *w, const char *key, int64_t v)
{
	json_key(w, key);
	json_s64(w, v);
}

void json_kv_double(struct json_writer *w, const char *key, double v)
{
	json_key(w, key);
	json_double(w, v);
}

void json_kv_double_fixed(struct json_writer *w, const char *key, double v,
			  int decimals)
{
	json_key(w, key);
	json_double_fixed(w, v, decimals);
}

void json_kv_bool(struct json_writer *w, const char *key, bool v)
{
	json_key(w, key);
	json_bool(w, v);
}

int json_finish(struct json_writer *w)
{
	if (!w->error && (w->depth != 0 || !w->done))
		json_misuse(w);
	if (w->error)
		return w->error;
	fputc('\n', w->fp);
	return 0;
}

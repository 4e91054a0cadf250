// SPDX-License-Identifier: MIT
/*
 * tokenizer.c - SentencePiece-style and byte-level BPE tokenizers built
 * from GGUF metadata, following llama.cpp's llama-vocab.cpp behaviour:
 *
 *  SPM ("llama"): spaces become U+2581, a space is prepended to each text
 *  fragment that starts the input or follows a special token, then
 *  adjacent symbols (UTF-8 characters) are merged greedily by the score of
 *  the merged piece (highest first, leftmost on ties); characters without
 *  a token fall back to <0xXX> byte tokens.
 *
 *  BPE ("gpt2"): the text is split by a hand-written equivalent of GPT-2's
 *  pre-tokenizer regex
 *    's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 *  (pre "smollm" also splits every digit alone, as llama.cpp does), each
 *  piece's bytes are mapped through GPT-2's byte-to-unicode table and
 *  merged by merge rank (lowest first).
 *
 * Unicode classes are approximated by ranges (Latin, Greek, Cyrillic,
 * Armenian, Hebrew, Arabic, Indic, Thai, Georgian, Hangul, kana, CJK are
 * letters; emoji and symbols are "other"), which only matters for matching
 * a real vocab's splits on rare scripts; round trips hold for any input.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf_internal.h"
#include "tokenizer.h"

struct mm_merge_slot {
	uint64_t key;		/* (left << 32 | right) + 1; 0 = empty */
	int32_t rank;
	int32_t result;
};

struct mm_tok {
	int kind;
	int32_t n_vocab;
	char *arena;		/* token texts, NUL-separated */
	uint64_t *off;		/* start of token i in arena */
	uint32_t *len;
	float *score;
	uint8_t *attr;
	struct mm_strmap map;

	int32_t bos, eos, unk, eot, im_end;
	int add_bos, add_space_prefix, split_digits;

	int32_t *special;	/* control + user tokens, longest first */
	int32_t n_special;
	uint8_t special_first[256]; /* first bytes of special texts */

	struct mm_merge_slot *merge;
	size_t merge_cap;

	int32_t byte_tok[256];	/* BPE: mapped byte; SPM: <0xXX> */
	uint32_t byte2cp[256];
	int16_t cp2byte[512];

	char *chat_template;
};

/* ---- small helpers ---------------------------------------------------- */

__attribute__((format(printf, 3, 4)))
static int mm_tok_fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* Decodes one UTF-8 character; invalid bytes decode as themselves | ~0. */
static uint32_t mm_utf8_next(const uint8_t *s, size_t n, size_t i, size_t *clen)
{
	uint8_t c = s[i];
	size_t k, need;
	uint32_t cp;

	if (c < 0x80) {
		*clen = 1;
		return c;
	}
	if (c >= 0xc2 && c <= 0xdf) {
		need = 1;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		need = 2;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		need = 3;
		cp = c & 0x07;
	} else {
		goto bad;
	}
	if (n - i <= need)
		goto bad;
	for (k = 1; k <= need; k++) {
		if ((s[i + k] & 0xc0) != 0x80)
			goto bad;
		cp = (cp << 6) | (s[i + k] & 0x3f);
	}
	if ((need == 2 && cp < 0x800) || (need == 3 && cp < 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		goto bad;
	*clen = need + 1;
	return cp;
bad:
	*clen = 1;
	return 0x80000000u | c;
}

static size_t mm_utf8_put(uint32_t cp, char *out)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | (cp >> 6));
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | (cp >> 12));
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | (cp >> 18));
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

static int mm_cp_space(uint32_t c)
{
	return (c >= 9 && c <= 13) || c == ' ' || c == 0x85 || c == 0xa0 ||
	       c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 ||
	       c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000;
}

static int mm_cp_digit(uint32_t c)
{
	return (c >= '0' && c <= '9') || c == 0xb2 || c == 0xb3 ||
	       c == 0xb9 || (c >= 0xbc && c <= 0xbe) ||
	       (c >= 0x660 && c <= 0x669) || (c >= 0x6f0 && c <= 0x6f9) ||
	       (c >= 0x966 && c <= 0x96f) || (c >= 0xff10 && c <= 0xff19);
}

static int mm_cp_letter(uint32_t c)
{
	if (c < 0x80)
		return (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
	if (c & 0x80000000u)
		return 0;
	return c == 0xaa || c == 0xb5 || c == 0xba ||
	       (c >= 0xc0 && c <= 0x2c1 && c != 0xd7 && c != 0xf7) ||
	       (c >= 0x370 && c <= 0x3ff && c != 0x37e && c != 0x387) ||
	       (c >= 0x400 && c <= 0x481) || (c >= 0x48a && c <= 0x52f) ||
	       (c >= 0x531 && c <= 0x587) || (c >= 0x5d0 && c <= 0x5ea) ||
	       (c >= 0x620 && c <= 0x64a) || (c >= 0x671 && c <= 0x6d3) ||
	       (c >= 0x904 && c <= 0x939) || (c >= 0xe01 && c <= 0xe30) ||
	       (c >= 0x10a0 && c <= 0x10ff) || (c >= 0x1100 && c <= 0x11ff) ||
	       (c >= 0x1e00 && c <= 0x1fbc) || (c >= 0x3041 && c <= 0x3096) ||
	       (c >= 0x30a1 && c <= 0x30fa) || (c >= 0x3400 && c <= 0x4dbf) ||
	       (c >= 0x4e00 && c <= 0x9fff) || (c >= 0xac00 && c <= 0xd7a3) ||
	       (c >= 0xf900 && c <= 0xfaff) || (c >= 0xff21 && c <= 0xff3a) ||
	       (c >= 0xff41 && c <= 0xff5a) || (c >= 0x20000 && c <= 0x2ffff);
}

enum { MM_CL_SPACE, MM_CL_LETTER, MM_CL_DIGIT, MM_CL_OTHER };

static int mm_cp_class(uint32_t c)
{
	if (mm_cp_space(c))
		return MM_CL_SPACE;
	if (mm_cp_letter(c))
		return MM_CL_LETTER;
	if (mm_cp_digit(c))
		return MM_CL_DIGIT;
	return MM_CL_OTHER;
}

/* ---- merges hash ------------------------------------------------------ */

static uint64_t mm_mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

static const struct mm_merge_slot *mm_merge_get(const struct mm_tok *t,
						int32_t a, int32_t b)
{
	uint64_t key = (((uint64_t)(uint32_t)a << 32) | (uint32_t)b) + 1;
	size_t j;

	if (!t->merge_cap)
		return NULL;
	for (j = mm_mix(key) & (t->merge_cap - 1); t->merge[j].key;
	     j = (j + 1) & (t->merge_cap - 1))
		if (t->merge[j].key == key)
			return &t->merge[j];
	return NULL;
}

static void mm_merge_put(struct mm_tok *t, int32_t a, int32_t b, int32_t rank,
			 int32_t result)
{
	uint64_t key = (((uint64_t)(uint32_t)a << 32) | (uint32_t)b) + 1;
	size_t j;

	for (j = mm_mix(key) & (t->merge_cap - 1); t->merge[j].key;
	     j = (j + 1) & (t->merge_cap - 1))
		if (t->merge[j].key == key)
			return;	/* keep the first (lowest) rank */
	t->merge[j].key = key;
	t->merge[j].rank = rank;
	t->merge[j].result = result;
}

/* ---- loading ---------------------------------------------------------- */

static const char *mm_tok_str(const struct mm_tok *t, int32_t id)
{
	return t->arena + t->off[id];
}

int32_t mm_tok_find(const struct mm_tok *t, const char *text)
{
	int64_t v = mm_strmap_get(&t->map, text, strlen(text));

	return v < 0 ? -1 : (int32_t)v;
}

static int32_t mm_tok_findn(const struct mm_tok *t, const char *s, size_t n)
{
	int64_t v = mm_strmap_get(&t->map, s, n);

	return v < 0 ? -1 : (int32_t)v;
}

static int mm_tok_id_key(const struct mm_gguf *g, const char *key,
			 int32_t n_vocab, int32_t *id, char *err, size_t errlen)
{
	uint32_t v;
	int ret = mm_gguf_get_u32(g, key, &v);

	if (ret == -ENOENT)
		return 0;
	if (ret)
		return mm_tok_fail(err, errlen, "key '%s': expected an unsigned token id",
				   key);
	if (v >= (uint32_t)n_vocab) {
		/* llama.cpp writes -1 as u32 for "none" in some converters */
		if (v == UINT32_MAX) {
			*id = -1;
			return 0;
		}
		return mm_tok_fail(err, errlen, "key '%s': token id %u is outside the vocab (%d tokens)",
				   key, v, n_vocab);
	}
	*id = (int32_t)v;
	return 0;
}

static int mm_tok_cmp_len_desc(const void *a, const void *b, void *arg)
{
	const struct mm_tok *t = arg;
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;

	if (t->len[x] != t->len[y])
		return t->len[x] > t->len[y] ? -1 : 1;
	return x < y ? -1 : x > y;
}

static void mm_tok_byte_map(struct mm_tok *t)
{
	uint32_t n = 0;

	for (int i = 0; i < 512; i++)
		t->cp2byte[i] = -1;
	for (int b = 0; b < 256; b++) {
		int keep = (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) ||
			   (b >= 0xae && b <= 0xff);

		t->byte2cp[b] = keep ? (uint32_t)b : 256 + n++;
		t->cp2byte[t->byte2cp[b]] = (int16_t)b;
	}
}

static int mm_tok_load_merges(struct mm_tok *t, const struct mm_gguf *g,
			      char *err, size_t errlen)
{
	const struct mm_gguf_kv *kv = mm_gguf_find(g, "tokenizer.ggml.merges");
	uint32_t et;
	uint64_t n;

	if (!kv)
		return mm_tok_fail(err, errlen, "key 'tokenizer.ggml.merges': missing (required for the gpt2 tokenizer)");
	if (mm_gguf_arr(kv, &et, &n) || et != MM_GGUF_STR)
		return mm_tok_fail(err, errlen, "key 'tokenizer.ggml.merges': expected an array of strings");
	if (n > INT32_MAX)
		return mm_tok_fail(err, errlen, "key 'tokenizer.ggml.merges': %" PRIu64 " merges is too many",
				   n);
	t->merge_cap = 16;
	while (t->merge_cap < 2 * n)
		t->merge_cap *= 2;
	t->merge = calloc(t->merge_cap, sizeof(*t->merge));
	if (!t->merge)
		return -ENOMEM;
	for (uint64_t i = 0; i < n; i++) {
		int32_t a, b, r;
		const char *s;
		size_t len, sp;

		mm_gguf_arr_str(kv, i, &s, &len);
		/* split at the first space after the first byte (llama.cpp) */
		for (sp = 1; sp < len && s[sp] != ' '; sp++)
			;
		if (sp >= len)
			return mm_tok_fail(err, errlen, "key 'tokenizer.ggml.merges': merge %" PRIu64
					   " has no space separating its two tokens", i);
		a = mm_tok_findn(t, s, sp);
		b = mm_tok_findn(t, s + sp + 1, len - sp - 1);
		if (a < 0 || b < 0 || t->len[a] + (size_t)t->len[b] > 4096)
			continue;	/* cannot apply: skip like a dead merge */
		{
			char buf[4096];

			memcpy(buf, s, sp);
			memcpy(buf + sp, s + sp + 1, len - sp - 1);
			r = mm_tok_findn(t, buf, len - 1);
		}
		if (r < 0)
			continue;
		mm_merge_put(t, a, b, (int32_t)i, r);
	}
	return 0;
}

int mm_tok_load(const struct mm_gguf *g, struct mm_tok **out, char *err,
		size_t errlen)
{
	const struct mm_gguf_kv *tokens, *scores, *types;
	const char *model, *s;
	struct mm_tok *t;
	uint64_t n, total = 0, pos = 0;
	uint32_t et;
	size_t len;
	int ret;

	if (err && errlen)
		err[0] = 0;
	*out = NULL;
	ret = mm_gguf_get_str(g, "tokenizer.ggml.model", &model, NULL);
	if (ret)
		return mm_tok_fail(err, errlen, "key 'tokenizer.ggml.model': %s",
				   ret == -ENOENT ? "missing" : "expected a string");
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	if (!strcmp(model, "llama")) {
		t->kind = MM_TOK_SPM;
	} else if (!strcmp(model, "gpt2")) {
		t->kind = MM_TOK_BPE;
	} else {
		ret = -ENOTSUP;
		mm_tok_fail(err, errlen, "key 'tokenizer.ggml.model': tokenizer '%.32s' is not supported (llama and gpt2 are)",
			    model);
		goto fail;
	}

	tokens = mm_gguf_find(g, "tokenizer.ggml.tokens");
	if (!tokens || mm_gguf_arr(tokens, &et, &n) || et != MM_GGUF_STR) {
		ret = mm_tok_fail(err, errlen, "key 'tokenizer.ggml.tokens': %s",
				  tokens ? "expected an array of strings" : "missing");
		goto fail;
	}
	if (!n || n > INT32_MAX) {
		ret = mm_tok_fail(err, errlen, "key 'tokenizer.ggml.tokens': %" PRIu64
				  " tokens is not a usable vocab size", n);
		goto fail;
	}
	t->n_vocab = (int32_t)n;
	for (uint64_t i = 0; i < n; i++) {
		mm_gguf_arr_str(tokens, i, &s, &len);
		total += len + 1;	/* bounded by the file size */
	}
	t->arena = malloc(total);
	t->off = malloc(n * sizeof(*t->off));
	t->len = malloc(n * sizeof(*t->len));
	t->score = calloc(n, sizeof(*t->score));
	t->attr = malloc(n);
	if (!t->arena || !t->off || !t->len || !t->score || !t->attr)
		goto nomem;
	for (uint64_t i = 0; i < n; i++) {
		mm_gguf_arr_str(tokens, i, &s, &len);
		if (len > UINT32_MAX) {
			ret = mm_tok_fail(err, errlen, "key 'tokenizer.ggml.tokens': token %" PRIu64
					  " is too long", i);
			goto fail;
		}
		memcpy(t->arena + pos, s, len);
		t->arena[pos + len] = 0;
		t->off[i] = pos;
		t->len[i] = (uint32_t)len;
		t->attr[i] = MM_TOK_NORMAL;
		pos += len + 1;
	}
	for (uint64_t i = 0; i < n; i++) {
		ret = mm_strmap_put(&t->map, t->arena + t->off[i], t->len[i],
				    (int64_t)i);
		if (ret < 0)
			goto nomem;
	}

	scores = mm_gguf_find(g, "tokenizer.ggml.scores");
	if (scores) {
		uint64_t sn;

		if (mm_gguf_arr(scores, &et, &sn) ||
		    (et != MM_GGUF_F32 && et != MM_GGUF_F64) || sn != n) {
			ret = mm_tok_fail(err, errlen, "key 'tokenizer.ggml.scores': expected %" PRIu64
					  " f32 values, one per token", n);
			goto fail;
		}
		for (uint64_t i = 0; i < n; i++)
			mm_gguf_arr_f32(scores, i, &t->score[i]);
	}
	types = mm_gguf_find(g, "tokenizer.ggml.token_type");
	if (types) {
		uint64_t tn;

		if (mm_gguf_arr(types, &et, &tn) || tn != n ||
		    et == MM_GGUF_STR || et == MM_GGUF_F32 ||
		    et == MM_GGUF_F64 || et == MM_GGUF_BOOL) {
			ret = mm_tok_fail(err, errlen, "key 'tokenizer.ggml.token_type': expected %" PRIu64
					  " integers, one per token", n);
			goto fail;
		}
		for (uint64_t i = 0; i < n; i++) {
			int32_t v;

			if (mm_gguf_arr_i32(types, i, &v) || v < 0 || v > 6) {
				ret = mm_tok_fail(err, errlen, "key 'tokenizer.ggml.token_type': token %" PRIu64
						  " has an invalid type", i);
				goto fail;
			}
			t->attr[i] = v ? (uint8_t)v : MM_TOK_NORMAL;
		}
	}

	t->bos = t->eos = t->unk = t->eot = t->im_end = -1;
	if (t->kind == MM_TOK_SPM) {
		t->unk = t->n_vocab > 0 ? 0 : -1;
		t->bos = t->n_vocab > 1 ? 1 : -1;
		t->eos = t->n_vocab > 2 ? 2 : -1;
		t->add_bos = 1;
		t->add_space_prefix = 1;
	}
	if ((ret = mm_tok_id_key(g, "tokenizer.ggml.bos_token_id", t->n_vocab, &t->bos, err, errlen)) ||
	    (ret = mm_tok_id_key(g, "tokenizer.ggml.eos_token_id", t->n_vocab, &t->eos, err, errlen)) ||
	    (ret = mm_tok_id_key(g, "tokenizer.ggml.unknown_token_id", t->n_vocab, &t->unk, err, errlen)) ||
	    (ret = mm_tok_id_key(g, "tokenizer.ggml.eot_token_id", t->n_vocab, &t->eot, err, errlen)))
		goto fail;
	{
		int b;

		if (!mm_gguf_get_bool(g, "tokenizer.ggml.add_bos_token", &b))
			t->add_bos = b;
		if (!mm_gguf_get_bool(g, "tokenizer.ggml.add_space_prefix", &b))
			t->add_space_prefix = b;
	}
	t->im_end = mm_tok_find(t, "<|im_end|>");
	if (!mm_gguf_get_str(g, "tokenizer.ggml.pre", &s, NULL) &&
	    !strcmp(s, "smollm"))
		t->split_digits = 1;
	if (!mm_gguf_get_str(g, "tokenizer.chat_template", &s, &len)) {
		t->chat_template = malloc(len + 1);
		if (!t->chat_template)
			goto nomem;
		memcpy(t->chat_template, s, len + 1);
	}

	/* specials: control and user-defined tokens, longest first */
	t->special = malloc(n * sizeof(*t->special));
	if (!t->special)
		goto nomem;
	for (int32_t i = 0; i < t->n_vocab; i++) {
		if ((t->attr[i] == MM_TOK_CONTROL || t->attr[i] == MM_TOK_USER) &&
		    t->len[i]) {
			t->special[t->n_special++] = i;
			t->special_first[(uint8_t)mm_tok_str(t, i)[0]] = 1;
		}
	}
	qsort_r(t->special, (size_t)t->n_special, sizeof(*t->special),
		mm_tok_cmp_len_desc, t);

	for (int b = 0; b < 256; b++)
		t->byte_tok[b] = -1;
	if (t->kind == MM_TOK_BPE) {
		mm_tok_byte_map(t);
		for (int b = 0; b < 256; b++) {
			char buf[4];
			size_t l = mm_utf8_put(t->byte2cp[b], buf);

			t->byte_tok[b] = mm_tok_findn(t, buf, l);
		}
		ret = mm_tok_load_merges(t, g, err, errlen);
		if (ret)
			goto fail;
	} else {
		for (int b = 0; b < 256; b++) {
			char buf[8];

			snprintf(buf, sizeof(buf), "<0x%02X>", b);
			t->byte_tok[b] = mm_tok_find(t, buf);
		}
	}
	*out = t;
	return 0;

nomem:
	ret = -ENOMEM;
	mm_tok_fail(err, errlen, "out of memory loading the tokenizer");
fail:
	mm_tok_free(t);
	return ret;
}

void mm_tok_free(struct mm_tok *t)
{
	if (!t)
		return;
	free(t->arena);
	free(t->off);
	free(t->len);
	free(t->score);
	free(t->attr);
	mm_strmap_free(&t->map);
	free(t->special);
	free(t->merge);
	free(t->chat_template);
	free(t);
}

/* ---- encoding --------------------------------------------------------- */

struct mm_ids {
	int32_t *ids;
	int max;
	int n;
	int overflow;
};

static void mm_ids_push(struct mm_ids *o, int32_t id)
{
	if (o->n < o->max)
		o->ids[o->n] = id;
	if (o->n == INT32_MAX)
		o->overflow = 1;
	else
		o->n++;
}

static int mm_tok_byte_fallback(const struct mm_tok *t, struct mm_ids *o,
				const uint8_t *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int32_t id = t->byte_tok[s[i]];

		if (id < 0)
			id = t->unk;
		if (id < 0)
			return -EILSEQ;
		mm_ids_push(o, id);
		if (t->byte_tok[s[i]] < 0 && t->kind == MM_TOK_SPM)
			break;	/* one <unk> per character, like llama.cpp */
	}
	return 0;
}

/* BPE: one pre-tokenized piece. sym holds ids; O(n^2) in the piece. */
static int mm_bpe_word(const struct mm_tok *t, const uint8_t *s, size_t n,
		       struct mm_ids *o)
{
	int32_t stack[64], *sym = stack;
	size_t cnt = 0;
	int ret = 0;

	if (n > 64) {
		sym = malloc(n * sizeof(*sym));
		if (!sym)
			return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		sym[cnt] = t->byte_tok[s[i]];
		if (sym[cnt] < 0) {
			if (t->unk < 0) {
				ret = -EILSEQ;
				goto out;
			}
			sym[cnt] = t->unk;
		}
		cnt++;
	}
	while (cnt > 1) {
		int32_t best_rank = INT32_MAX, best_res = -1;
		size_t best = 0;

		for (size_t i = 0; i + 1 < cnt; i++) {
			const struct mm_merge_slot *m =
				mm_merge_get(t, sym[i], sym[i + 1]);

			if (m && m->rank < best_rank) {
				best_rank = m->rank;
				best_res = m->result;
				best = i;
			}
		}
		if (best_res < 0)
			break;
		sym[best] = best_res;
		memmove(&sym[best + 1], &sym[best + 2],
			(cnt - best - 2) * sizeof(*sym));
		cnt--;
	}
	for (size_t i = 0; i < cnt; i++)
		mm_ids_push(o, sym[i]);
out:
	if (sym != stack)
		free(sym);
	return ret;
}

/* End of the pre-tokenizer piece starting at i (GPT-2 regex, by hand). */
static size_t mm_pre_next(const struct mm_tok *t, const uint8_t *s, size_t n,
			  size_t i)
{
	size_t cl, cl2, j, k, last;
	uint32_t c = mm_utf8_next(s, n, i, &cl), c2;
	int cls;

	if (t->split_digits && mm_cp_digit(c))
		return i + cl;
	if (c == '\'' && i + 1 < n) {
		uint8_t a = s[i + 1], b = i + 2 < n ? s[i + 2] : 0;

		if (a == 's' || a == 't' || a == 'm' || a == 'd')
			return i + 2;
		if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') ||
		    (a == 'l' && b == 'l'))
			return i + 3;
	}
	j = i;
	cls = mm_cp_class(c);
	if (c == ' ' && i + 1 < n) {
		c2 = mm_utf8_next(s, n, i + 1, &cl2);
		if (mm_cp_class(c2) != MM_CL_SPACE &&
		    !(t->split_digits && mm_cp_digit(c2))) {
			j = i + 1;
			cls = mm_cp_class(c2);
		}
	}
	if (cls != MM_CL_SPACE) {
		while (j < n) {
			c = mm_utf8_next(s, n, j, &cl);
			if (mm_cp_class(c) != cls ||
			    (t->split_digits && cls != MM_CL_DIGIT &&
			     mm_cp_digit(c)))
				break;
			j += cl;
			if (t->split_digits && cls == MM_CL_DIGIT)
				break;
		}
		return j;
	}
	/* whitespace run: \s+(?!\S) leaves the last one before a non-space */
	k = i;
	last = i;
	while (k < n) {
		c = mm_utf8_next(s, n, k, &cl);
		if (!mm_cp_space(c))
			break;
		last = k;
		k += cl;
	}
	if (k < n && last > i)
		return last;
	return k;
}

static int mm_bpe_text(const struct mm_tok *t, const uint8_t *s, size_t n,
		       struct mm_ids *o)
{
	size_t i = 0;
	int ret;

	while (i < n) {
		size_t e = mm_pre_next(t, s, n, i);

		ret = mm_bpe_word(t, s + i, e - i, o);
		if (ret)
			return ret;
		i = e;
	}
	return 0;
}

struct mm_spm_sym {
	size_t start, len;
	int32_t prev, next;
	float pair_score;	/* merging with next; -inf when impossible */
	int32_t pair_id;
};

static int mm_spm_mergeable(const struct mm_tok *t, int32_t id)
{
	return id >= 0 && (t->attr[id] == MM_TOK_NORMAL ||
			   t->attr[id] == MM_TOK_USER);
}

static void mm_spm_pair(const struct mm_tok *t, const char *text,
			struct mm_spm_sym *sy, int32_t i)
{
	int32_t nx = sy[i].next, id;

	sy[i].pair_id = -1;
	if (nx < 0)
		return;
	id = mm_tok_findn(t, text + sy[i].start, sy[i].len + sy[nx].len);
	if (mm_spm_mergeable(t, id)) {
		sy[i].pair_id = id;
		sy[i].pair_score = t->score[id];
	}
}

/* SPM: text already has spaces escaped. */
static int mm_spm_text(const struct mm_tok *t, const char *text, size_t n,
		       struct mm_ids *o)
{
	struct mm_spm_sym *sy;
	int32_t cnt = 0;
	int ret = 0;

	if (!n)
		return 0;
	sy = malloc(n * sizeof(*sy));
	if (!sy)
		return -ENOMEM;
	for (size_t i = 0; i < n;) {
		size_t cl;

		mm_utf8_next((const uint8_t *)text, n, i, &cl);
		sy[cnt].start = i;
		sy[cnt].len = cl;
		sy[cnt].prev = cnt - 1;
		sy[cnt].next = i + cl < n ? cnt + 1 : -1;
		cnt++;
		i += cl;
	}
	for (int32_t i = 0; i < cnt; i++)
		mm_spm_pair(t, text, sy, i);
	for (;;) {
		int32_t best = -1;

		for (int32_t i = 0; i >= 0; i = sy[i].next)
			if (sy[i].pair_id >= 0 &&
			    (best < 0 || sy[i].pair_score > sy[best].pair_score))
				best = i;
		if (best < 0)
			break;
		{
			int32_t nx = sy[best].next;

			sy[best].len += sy[nx].len;
			sy[best].next = sy[nx].next;
			if (sy[nx].next >= 0)
				sy[sy[nx].next].prev = best;
			mm_spm_pair(t, text, sy, best);
			if (sy[best].prev >= 0)
				mm_spm_pair(t, text, sy, sy[best].prev);
		}
	}
	for (int32_t i = 0; i >= 0 && !ret; i = sy[i].next) {
		int32_t id = mm_tok_findn(t, text + sy[i].start, sy[i].len);

		if (mm_spm_mergeable(t, id))
			mm_ids_push(o, id);
		else
			ret = mm_tok_byte_fallback(t, o,
						   (const uint8_t *)text + sy[i].start,
						   sy[i].len);
	}
	free(sy);
	return ret;
}

static int mm_spm_fragment(const struct mm_tok *t, const char *s, size_t n,
			   int prefix, struct mm_ids *o)
{
	size_t cap = 3 * (n + 1), k = 0;
	char *buf;
	int ret;

	buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	if (prefix) {
		memcpy(buf, "\xe2\x96\x81", 3);
		k = 3;
	}
	for (size_t i = 0; i < n; i++) {
		if (s[i] == ' ') {
			memcpy(buf + k, "\xe2\x96\x81", 3);
			k += 3;
		} else {
			buf[k++] = s[i];
		}
	}
	ret = mm_spm_text(t, buf, k, o);
	free(buf);
	return ret;
}

/* Longest special token at s[0..n), or -1. */
static int32_t mm_tok_special_at(const struct mm_tok *t, const char *s,
				 size_t n, int parse_special)
{
	if (!t->special_first[(uint8_t)s[0]])
		return -1;
	for (int32_t k = 0; k < t->n_special; k++) {
		int32_t id = t->special[k];

		if (!parse_special && t->attr[id] == MM_TOK_CONTROL)
			continue;
		if (t->len[id] <= n && !memcmp(s, mm_tok_str(t, id), t->len[id]))
			return id;
	}
	return -1;
}

int mm_tok_encode(const struct mm_tok *t, const char *text, size_t len,
		  int add_bos, int parse_special, int32_t *ids, int max,
		  int *n_out)
{
	struct mm_ids o = { .ids = ids, .max = max < 0 ? 0 : max };
	int prev_special = 1, ret = 0;
	size_t i = 0, start = 0;

	if (!t || (!text && len) || (!ids && max > 0))
		return -EINVAL;
	if (add_bos && t->bos >= 0)
		mm_ids_push(&o, t->bos);
	while (!ret && start <= len) {
		int32_t sp = -1;

		/* find the next special token at or after i */
		while (i < len && (sp = mm_tok_special_at(t, text + i, len - i,
							   parse_special)) < 0)
			i++;
		if (i > start) {
			if (t->kind == MM_TOK_BPE)
				ret = mm_bpe_text(t, (const uint8_t *)text + start,
						  i - start, &o);
			else
				ret = mm_spm_fragment(t, text + start, i - start,
						      prev_special &&
						      t->add_space_prefix, &o);
			prev_special = 0;
		}
		if (ret || i >= len)
			break;
		mm_ids_push(&o, sp);
		prev_special = 1;
		i += t->len[sp];
		start = i;
	}
	if (n_out)
		*n_out = o.n;
	if (ret)
		return ret;
	if (o.overflow)
		return -E2BIG;
	return o.n > o.max ? -ENOSPC : 0;
}

/* ---- decoding --------------------------------------------------------- */

struct mm_out {
	char *buf;
	size_t cap;
	size_t len;
};

static void mm_out_put(struct mm_out *o, const char *s, size_t n)
{
	if (o->len < o->cap) {
		size_t c = o->cap - o->len < n ? o->cap - o->len : n;

		memcpy(o->buf + o->len, s, c);
	}
	o->len += n;
}

static int mm_tok_render(const struct mm_tok *t, int32_t id, unsigned flags,
			 int *strip, struct mm_out *o)
{
	const char *s;
	size_t n;

	if (id < 0 || id >= t->n_vocab)
		return -EINVAL;
	s = mm_tok_str(t, id);
	n = t->len[id];
	switch (t->attr[id]) {
	case MM_TOK_CONTROL:
		if (flags & MM_TOK_DECODE_SPECIAL)
			mm_out_put(o, s, n);
		return 0;
	case MM_TOK_USER:
		mm_out_put(o, s, n);
		*strip = 0;
		return 0;
	case MM_TOK_UNKNOWN:
		if (t->kind == MM_TOK_SPM) {
			mm_out_put(o, "\xe2\x96\x85", 3);
			*strip = 0;
			return 0;
		}
		break;
	case MM_TOK_BYTE:
		if (t->kind == MM_TOK_SPM && n == 6 && s[0] == '<' &&
		    s[1] == '0' && s[2] == 'x' && s[5] == '>') {
			char b = (char)strtoul(s + 3, NULL, 16);

			mm_out_put(o, &b, 1);
			*strip = 0;
			return 0;
		}
		break;
	}
	if (t->kind == MM_TOK_SPM) {
		for (size_t i = 0; i < n;) {
			if (n - i >= 3 && !memcmp(s + i, "\xe2\x96\x81", 3)) {
				if (!*strip)
					mm_out_put(o, " ", 1);
				i += 3;
			} else {
				mm_out_put(o, s + i, 1);
				i++;
			}
			*strip = 0;
		}
		return 0;
	}
	for (size_t i = 0; i < n;) {
		size_t cl;
		uint32_t cp = mm_utf8_next((const uint8_t *)s, n, i, &cl);

		if (cp < 512 && t->cp2byte[cp] >= 0) {
			char b = (char)t->cp2byte[cp];

			mm_out_put(o, &b, 1);
		} else {
			mm_out_put(o, s + i, cl);
		}
		i += cl;
	}
	return 0;
}

static int mm_out_finish(struct mm_out *o, size_t *len_out)
{
	if (len_out)
		*len_out = o->len;
	if (o->cap) {
		o->buf[o->len < o->cap ? o->len : o->cap - 1] = 0;
		if (o->len >= o->cap)
			return -ENOSPC;
	} else if (o->len) {
		return -ENOSPC;
	}
	return 0;
}

int mm_tok_decode_ex(const struct mm_tok *t, const int32_t *ids, int n,
		     unsigned flags, char *buf, size_t cap, size_t *len_out)
{
	struct mm_out o = { .buf = buf, .cap = buf ? cap : 0 };
	int strip = t->kind == MM_TOK_SPM && t->add_space_prefix &&
		    !(flags & MM_TOK_DECODE_KEEP_SPACE);

	for (int i = 0; i < n; i++) {
		int ret = mm_tok_render(t, ids[i], flags, &strip, &o);

		if (ret)
			return ret;
	}
	return mm_out_finish(&o, len_out);
}

int mm_tok_decode(const struct mm_tok *t, const int32_t *ids, int n,
		  char *buf, size_t cap, size_t *len_out)
{
	return mm_tok_decode_ex(t, ids, n, 0, buf, cap, len_out);
}

int mm_tok_piece(const struct mm_tok *t, int32_t id, unsigned flags,
		 char *buf, size_t cap, size_t *len_out)
{
	struct mm_out o = { .buf = buf, .cap = buf ? cap : 0 };
	int strip = 0;
	int ret = mm_tok_render(t, id, flags, &strip, &o);

	return ret ? ret : mm_out_finish(&o, len_out);
}

/* ---- properties ------------------------------------------------------- */

int mm_tok_kind(const struct mm_tok *t) { return t->kind; }
int mm_tok_n_vocab(const struct mm_tok *t) { return t->n_vocab; }
int mm_tok_bos(const struct mm_tok *t) { return t->bos; }
int mm_tok_eos(const struct mm_tok *t) { return t->eos; }

int mm_tok_is_eog(const struct mm_tok *t, int32_t id)
{
	return id >= 0 && (id == t->eos || id == t->eot || id == t->im_end);
}

const char *mm_tok_text(const struct mm_tok *t, int32_t id)
{
	return id >= 0 && id < t->n_vocab ? mm_tok_str(t, id) : NULL;
}

int mm_tok_attr(const struct mm_tok *t, int32_t id)
{
	return id >= 0 && id < t->n_vocab ? t->attr[id] : -EINVAL;
}

/* ---- chat ------------------------------------------------------------- */

int mm_tok_chat_format(const struct mm_tok *t, const struct mm_chat_msg *msgs,
		       int n, int add_gen, char *buf, size_t cap,
		       size_t *len_out)
{
	struct mm_out o = { .buf = buf, .cap = buf ? cap : 0 };

	if (t->chat_template && !strstr(t->chat_template, "<|im_start|>"))
		return -ENOTSUP;
	for (int i = 0; i < n; i++) {
		if (!msgs[i].role || !msgs[i].content)
			return -EINVAL;
		mm_out_put(&o, "<|im_start|>", 12);
		mm_out_put(&o, msgs[i].role, strlen(msgs[i].role));
		mm_out_put(&o, "\n", 1);
		mm_out_put(&o, msgs[i].content, strlen(msgs[i].content));
		mm_out_put(&o, "<|im_end|>\n", 11);
	}
	if (add_gen)
		mm_out_put(&o, "<|im_start|>assistant\n", 22);
	return mm_out_finish(&o, len_out);
}

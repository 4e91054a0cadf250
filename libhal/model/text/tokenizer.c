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
 *  BPE ("gpt2"): the text is split by hand-written equivalents of the
 *  pre-tokenizer regexes llama.cpp has for the file's tokenizer.ggml.pre
 *  (see mm_pre_passes), each piece's bytes are mapped through GPT-2's
 *  byte-to-unicode table and merged by merge rank (lowest first).
 *
 * Unicode classes (\p{L}, \p{N}, \p{P}) come from ucd_tables.h, which
 * tools/ucd_gen.py generates from the Unicode Character Database;
 * whitespace is llama.cpp's set.
 */
#include <errno.h>
#include <inttypes.h>
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
	int add_bos, add_space_prefix;
	int pre;			/* enum mm_pre_type (BPE) */
	int ignore_merges;	/* a piece that is a token stays whole */

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

#include "ucd_tables.h"

static int mm_ucd_in(const struct mm_ucd_range *r, size_t n, uint32_t c)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c < r[mid].lo)
			hi = mid;
		else if (c > r[mid].hi)
			lo = mid + 1;
		else
			return 1;
	}
	return 0;
}

#define MM_UCD_IN(tab, c) mm_ucd_in(tab, sizeof(tab) / sizeof(tab[0]), c)

/* \p{N}: Nd, Nl, No */
static int mm_cp_digit(uint32_t c)
{
	if (c < 0x80)
		return c >= '0' && c <= '9';
	return !(c & 0x80000000u) && MM_UCD_IN(mm_ucd_number, c);
}

/* \p{L}: Lu, Ll, Lt, Lm, Lo */
static int mm_cp_letter(uint32_t c)
{
	if (c < 0x80)
		return (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
	return !(c & 0x80000000u) && MM_UCD_IN(mm_ucd_letter, c);
}

/* \p{P}: ASCII !"#%&'()*,-./:;?@[\]_{} and P* above */
static int mm_cp_punct(uint32_t c)
{
	if (c < 0x80)
		return c > 0x20 && c < 0x7f && !mm_cp_letter(c) &&
		       !mm_cp_digit(c) && !strchr("$+<=>^`|~", (int)c);
	return !(c & 0x80000000u) && MM_UCD_IN(mm_ucd_punct, c);
}

/*
 * DeepSeek LLM's letter class, the literal set of its pre-tokenizer regex
 * (cased letters of Latin, Greek, Cyrillic, Armenian, Georgian, Cherokee,
 * Glagolitic, Coptic, Deseret, Osage, ... ; not CJK or Arabic).
 */
static const struct mm_ucd_range mm_ds_letter[] = {
	{ 0x00041, 0x0005a }, { 0x00061, 0x0007a }, { 0x000b5, 0x000b5 },
	{ 0x000c0, 0x000d6 }, { 0x000d8, 0x000f6 }, { 0x000f8, 0x001ba },
	{ 0x001bc, 0x001bf }, { 0x001c4, 0x00293 }, { 0x00295, 0x002af },
	{ 0x00370, 0x00373 }, { 0x00376, 0x00377 }, { 0x0037b, 0x0037d },
	{ 0x0037f, 0x0037f }, { 0x00386, 0x00386 }, { 0x00388, 0x0038a },
	{ 0x0038c, 0x0038c }, { 0x0038e, 0x003a1 }, { 0x003a3, 0x003f5 },
	{ 0x003f7, 0x00481 }, { 0x0048a, 0x0052f }, { 0x00531, 0x00556 },
	{ 0x010a0, 0x010c5 }, { 0x013a0, 0x013f5 }, { 0x013f8, 0x013fd },
	{ 0x01c90, 0x01cba }, { 0x01cbd, 0x01cbf }, { 0x01d00, 0x01d2b },
	{ 0x01d6b, 0x01d77 }, { 0x01d79, 0x01d9a }, { 0x01e00, 0x01f15 },
	{ 0x01f18, 0x01f1d }, { 0x01f20, 0x01f45 }, { 0x01f48, 0x01f4d },
	{ 0x01f50, 0x01f57 }, { 0x01f59, 0x01f59 }, { 0x01f5b, 0x01f5b },
	{ 0x01f5d, 0x01f5d }, { 0x01f5f, 0x01f7d }, { 0x01f80, 0x01fb4 },
	{ 0x01fb6, 0x01fbc }, { 0x01fbe, 0x01fbe }, { 0x01fc2, 0x01fc4 },
	{ 0x01fc6, 0x01fcc }, { 0x01fd0, 0x01fd3 }, { 0x01fd6, 0x01fdb },
	{ 0x01fe0, 0x01fec }, { 0x01ff2, 0x01ff4 }, { 0x01ff6, 0x01ffc },
	{ 0x02102, 0x02102 }, { 0x02107, 0x02107 }, { 0x0210a, 0x02113 },
	{ 0x02115, 0x02115 }, { 0x02119, 0x0211d }, { 0x02124, 0x02124 },
	{ 0x02126, 0x02126 }, { 0x02128, 0x02128 }, { 0x0212a, 0x0212d },
	{ 0x0212f, 0x02134 }, { 0x02139, 0x02139 }, { 0x0213c, 0x0213f },
	{ 0x02145, 0x02149 }, { 0x0214e, 0x0214e }, { 0x02183, 0x02184 },
	{ 0x02c00, 0x02c7b }, { 0x02c7e, 0x02ce4 }, { 0x02ceb, 0x02cee },
	{ 0x02cf2, 0x02cf3 }, { 0x0a640, 0x0a66d }, { 0x0a680, 0x0a69b },
	{ 0x0a722, 0x0a76f }, { 0x0a771, 0x0a787 }, { 0x0a78b, 0x0a78e },
	{ 0x0ab70, 0x0abbf }, { 0x0fb00, 0x0fb06 }, { 0x0fb13, 0x0fb17 },
	{ 0x0ff21, 0x0ff3a }, { 0x0ff41, 0x0ff5a }, { 0x10400, 0x1044f },
	{ 0x104b0, 0x104d3 }, { 0x104d8, 0x104fb }, { 0x10c80, 0x10cb2 },
	{ 0x10cc0, 0x10cf2 }, { 0x118a0, 0x118df }, { 0x1e900, 0x1e943 },
};

/* DeepSeek LLM's "\s?[!-/:-~！-／：-～‘-‟　-。]+" set */
static int mm_ds_punct(uint32_t c)
{
	return (c >= 0x21 && c <= 0x2f) || (c >= 0x3a && c <= 0x7e) ||
	       (c >= 0xff01 && c <= 0xff0f) || (c >= 0xff1a && c <= 0xff5e) ||
	       (c >= 0x2018 && c <= 0x201f) || (c >= 0x3000 && c <= 0x3002);
}

/* DeepSeek's "[一-龥ࠀ-一가-퟿]+": U+0800..U+9FA5 and U+AC00..U+D7FF */
static int mm_ds_cjk(uint32_t c)
{
	return (c >= 0x800 && c <= 0x9fa5) || (c >= 0xac00 && c <= 0xd7ff);
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
		return mm_errf(-EINVAL, err, errlen, "key '%s': expected an unsigned token id",
				   key);
	if (v >= (uint32_t)n_vocab) {
		/* llama.cpp writes -1 as u32 for "none" in some converters */
		if (v == UINT32_MAX) {
			*id = -1;
			return 0;
		}
		return mm_errf(-EINVAL, err, errlen, "key '%s': token id %u is outside the vocab (%d tokens)",
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
		return mm_errf(-EINVAL, err, errlen, "key 'tokenizer.ggml.merges': missing (required for the gpt2 tokenizer)");
	if (mm_gguf_arr(kv, &et, &n) || et != MM_GGUF_STR)
		return mm_errf(-EINVAL, err, errlen, "key 'tokenizer.ggml.merges': expected an array of strings");
	if (n > INT32_MAX)
		return mm_errf(-EINVAL, err, errlen, "key 'tokenizer.ggml.merges': %" PRIu64 " merges is too many",
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
			return mm_errf(-EINVAL, err, errlen, "key 'tokenizer.ggml.merges': merge %" PRIu64
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

static int mm_tok_load_pre(struct mm_tok *t, const struct mm_gguf *g,
			   char *err, size_t errlen);

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
		return mm_errf(-EINVAL, err, errlen, "key 'tokenizer.ggml.model': %s",
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
		mm_errf(-EINVAL, err, errlen, "key 'tokenizer.ggml.model': tokenizer '%.32s' is not supported (llama and gpt2 are)",
			    model);
		goto fail;
	}

	tokens = mm_gguf_find(g, "tokenizer.ggml.tokens");
	if (!tokens || mm_gguf_arr(tokens, &et, &n) || et != MM_GGUF_STR) {
		ret = mm_errf(-EINVAL, err, errlen, "key 'tokenizer.ggml.tokens': %s",
				  tokens ? "expected an array of strings" : "missing");
		goto fail;
	}
	if (!n || n > INT32_MAX) {
		ret = mm_errf(-EINVAL, err, errlen, "key 'tokenizer.ggml.tokens': %" PRIu64
				  " tokens is not a usable vocab size", n);
		goto fail;
	}
	t->n_vocab = (int32_t)n;
	t->off = malloc(n * sizeof(*t->off));
	t->len = malloc(n * sizeof(*t->len));
	t->score = calloc(n, sizeof(*t->score));
	t->attr = malloc(n);
	if (!t->off || !t->len || !t->score || !t->attr)
		goto nomem;
	/* each length taken once (the parser's, mm_gguf_arr_str()): the
	 * arena is sized and filled with the same numbers */
	for (uint64_t i = 0; i < n; i++) {
		mm_gguf_arr_str(tokens, i, &s, &len);
		if (len > UINT32_MAX) {
			ret = mm_errf(-EINVAL, err, errlen, "key 'tokenizer.ggml.tokens': token %" PRIu64
					  " is too long", i);
			goto fail;
		}
		t->len[i] = (uint32_t)len;
		total += len + 1;	/* bounded by the file size */
	}
	t->arena = malloc(total);
	if (!t->arena)
		goto nomem;
	for (uint64_t i = 0; i < n; i++) {
		mm_gguf_arr_str(tokens, i, &s, &len);
		memcpy(t->arena + pos, s, t->len[i]);
		t->arena[pos + t->len[i]] = 0;
		t->off[i] = pos;
		t->attr[i] = MM_TOK_NORMAL;
		pos += t->len[i] + 1;
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
			ret = mm_errf(-EINVAL, err, errlen, "key 'tokenizer.ggml.scores': expected %" PRIu64
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
			ret = mm_errf(-EINVAL, err, errlen, "key 'tokenizer.ggml.token_type': expected %" PRIu64
					  " integers, one per token", n);
			goto fail;
		}
		for (uint64_t i = 0; i < n; i++) {
			int32_t v;

			if (mm_gguf_arr_i32(types, i, &v) || v < 0 || v > 6) {
				ret = mm_errf(-EINVAL, err, errlen, "key 'tokenizer.ggml.token_type': token %" PRIu64
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
	if (t->kind == MM_TOK_BPE) {
		ret = mm_tok_load_pre(t, g, err, errlen);
		if (ret)
			goto fail;
	}
	{
		int b;

		if (!mm_gguf_get_bool(g, "tokenizer.ggml.add_bos_token", &b))
			t->add_bos = b;
		if (!mm_gguf_get_bool(g, "tokenizer.ggml.add_space_prefix", &b))
			t->add_space_prefix = b;
	}
	t->im_end = mm_tok_find(t, "<|im_end|>");
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
	mm_errf(-EINVAL, err, errlen, "out of memory loading the tokenizer");
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

	if (t->ignore_merges && n > 1 && n <= 256) {
		/* llama.cpp (Llama 3): a piece that is a token is kept whole */
		char buf[512];
		size_t k = 0;
		int32_t id;

		for (size_t i = 0; i < n; i++)
			k += mm_utf8_put(t->byte2cp[s[i]], buf + k);
		id = mm_tok_findn(t, buf, k);
		if (id >= 0) {
			mm_ids_push(o, id);
			return 0;
		}
	}
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

/*
 * ---- pre-tokenizers ----------------------------------------------------
 *
 * llama.cpp splits a text fragment with a list of regexes per
 * tokenizer.ggml.pre value, applied in turn: each regex splits every piece
 * the previous one left into its matches and the gaps between them (a
 * piece is a separate subject: lookaheads and "$" stop at its end). Each
 * regex is one matcher here; a matcher returns the end of its match at p
 * within [p, e), or p when there is none (then *resume says where the
 * search goes on).
 */
#define MM_CP_END 0xffffffffu

struct mm_pre_in {
	const uint8_t *s;
	size_t n;
};

typedef size_t (*mm_pre_fn)(const struct mm_pre_in *in, size_t p, size_t e,
			    size_t *resume);

static uint32_t mm_pre_cp(const struct mm_pre_in *in, size_t p, size_t e,
			  size_t *cl)
{
	if (p >= e) {
		*cl = 0;
		return MM_CP_END;
	}
	return mm_utf8_next(in->s, in->n, p, cl);
}

/* \s: llama.cpp's whitespace set (collapsed to \x0B for std::regex) */
static int mm_ws(uint32_t c)
{
	return c != MM_CP_END && mm_cp_space(c);
}

/* neither \s, \p{L} nor \p{N} (invalid UTF-8 counts as U+FFFD, a symbol) */
static int mm_other(uint32_t c)
{
	return c != MM_CP_END && !mm_cp_space(c) && !mm_cp_letter(c) &&
	       !mm_cp_digit(c);
}

/* end of the run of code points at p that pass f */
static size_t mm_pre_run(const struct mm_pre_in *in, size_t p, size_t e,
			 int (*f)(uint32_t))
{
	size_t cl;

	while (p < e && f(mm_pre_cp(in, p, e, &cl)))
		p += cl;
	return p;
}

static int mm_is_nl(uint32_t c)
{
	return c == '\r' || c == '\n';
}

/*
 * The tail both GPT-2 and Llama 3 end with: \s+(?!\S)|\s+ (whitespace up
 * to, not including, the last one before a non-space; else all of it),
 * for a whitespace run starting at p.
 */
static size_t mm_pre_ws_tail(const struct mm_pre_in *in, size_t p, size_t e)
{
	size_t q = p, last = p, cl;

	while (q < e && mm_ws(mm_pre_cp(in, q, e, &cl))) {
		last = q;
		q += cl;
	}
	if (q < e && last > p)
		return last;
	return q;
}

/*
 * GPT-2:
 *   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * (llama.cpp's custom splitter, which also takes the final \s+).
 */
static size_t mm_pre_gpt2(const struct mm_pre_in *in, size_t p, size_t e,
			  size_t *resume)
{
	size_t cl, cl2, q;
	uint32_t c = mm_pre_cp(in, p, e, &cl), c2;

	*resume = p + cl;
	if (c == '\'' && p + 1 < e) {
		uint8_t a = in->s[p + 1], b = p + 2 < e ? in->s[p + 2] : 0;

		if (a == 's' || a == 't' || a == 'm' || a == 'd')
			return p + 2;
		if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') ||
		    (a == 'l' && b == 'l'))
			return p + 3;
	}
	q = p;
	c2 = c;
	if (c == ' ') {
		c2 = mm_pre_cp(in, p + 1, e, &cl2);
		q = p + 1;
	}
	if (mm_cp_letter(c2) && c2 != MM_CP_END)
		return mm_pre_run(in, q, e, mm_cp_letter);
	if (mm_cp_digit(c2) && c2 != MM_CP_END)
		return mm_pre_run(in, q, e, mm_cp_digit);
	if (mm_other(c2))
		return mm_pre_run(in, q, e, mm_other);
	return mm_pre_ws_tail(in, p, e);
}

/*
 * Llama 3 (max_digits 3) and Qwen2 (1):
 *   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
 *    ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 */
static size_t mm_pre_llama3_n(const struct mm_pre_in *in, size_t p, size_t e,
			      size_t *resume, int max_digits)
{
	size_t cl, cl2, q, last_nl;
	uint32_t c = mm_pre_cp(in, p, e, &cl), c2;

	*resume = p + cl;
	if (c == '\'' && p + 1 < e) {
		uint8_t a = in->s[p + 1] | 0x20;
		uint8_t b = p + 2 < e ? in->s[p + 2] | 0x20 : 0;

		if (a == 's' || a == 't' || a == 'm' || a == 'd')
			return p + 2;
		if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') ||
		    (a == 'l' && b == 'l'))
			return p + 3;
	}
	c2 = mm_pre_cp(in, p + cl, e, &cl2);
	if (!mm_is_nl(c) && !mm_cp_digit(c) &&
	    (mm_cp_letter(c) || (c2 != MM_CP_END && mm_cp_letter(c2))))
		return mm_pre_run(in, p + cl, e, mm_cp_letter);
	if (mm_cp_digit(c)) {
		q = p;
		for (int k = 0; k < max_digits && q < e &&
		     mm_cp_digit(mm_pre_cp(in, q, e, &cl2)); k++)
			q += cl2;
		return q;
	}
	q = p;
	c2 = c;
	if (c == ' ') {
		c2 = mm_pre_cp(in, p + 1, e, &cl2);
		q = p + 1;
	}
	if (mm_other(c2)) {
		q = mm_pre_run(in, q, e, mm_other);
		return mm_pre_run(in, q, e, mm_is_nl);
	}
	/* \s*[\r\n]+: up to the last newline of the whitespace run */
	last_nl = p;
	for (q = p; q < e;) {
		c2 = mm_pre_cp(in, q, e, &cl2);
		if (!mm_ws(c2))
			break;
		q += cl2;
		if (mm_is_nl(c2))
			last_nl = q;
	}
	if (last_nl > p)
		return last_nl;
	return mm_pre_ws_tail(in, p, e);
}

static size_t mm_pre_llama3(const struct mm_pre_in *in, size_t p, size_t e,
			    size_t *resume)
{
	return mm_pre_llama3_n(in, p, e, resume, 3);
}

static size_t mm_pre_qwen2(const struct mm_pre_in *in, size_t p, size_t e,
			   size_t *resume)
{
	return mm_pre_llama3_n(in, p, e, resume, 1);
}

/* a run of code points passing f (at least one), at most max of them */
static size_t mm_pre_class(const struct mm_pre_in *in, size_t p, size_t e,
			   size_t *resume, int (*f)(uint32_t), int max)
{
	size_t cl, q = p;
	int k = 0;

	mm_pre_cp(in, p, e, &cl);
	*resume = p + cl;
	while (q < e && (max <= 0 || k < max) &&
	       f(mm_pre_cp(in, q, e, &cl))) {
		q += cl;
		k++;
	}
	return q;
}

/* \s?X+: an optional whitespace, then a run of f */
static size_t mm_pre_opt_ws_run(const struct mm_pre_in *in, size_t p,
				size_t e, size_t *resume, int (*f)(uint32_t))
{
	size_t cl, cl2;
	uint32_t c = mm_pre_cp(in, p, e, &cl);

	*resume = p + cl;
	if (mm_ws(c) && p + cl < e && f(mm_pre_cp(in, p + cl, e, &cl2)))
		return mm_pre_run(in, p + cl, e, f);
	if (c != MM_CP_END && f(c))
		return mm_pre_run(in, p, e, f);
	return p;
}

static int mm_is_ascii_digit(uint32_t c)
{
	return c >= '0' && c <= '9';
}

/* [\p{P}\$\+<=>\^~\|`] (falcon) */
static int mm_falcon_punct(uint32_t c)
{
	return mm_cp_punct(c) || (c < 0x80 && strchr("$+<=>^~|`", (int)c) && c);
}

/* [\p{P}\$\+<=>\^~\|] (default) */
static int mm_default_punct(uint32_t c)
{
	return mm_cp_punct(c) || (c < 0x80 && strchr("$+<=>^~|", (int)c) && c);
}

static int mm_ds_letter_f(uint32_t c)
{
	return c != MM_CP_END && !(c & 0x80000000u) &&
	       MM_UCD_IN(mm_ds_letter, c);
}

static int mm_digit_f(uint32_t c)
{
	return c != MM_CP_END && mm_cp_digit(c);
}

static int mm_letter_f(uint32_t c)
{
	return c != MM_CP_END && mm_cp_letter(c);
}

static int mm_punct_f(uint32_t c)
{
	return c != MM_CP_END && mm_cp_punct(c);
}

static size_t mm_pre_nl(const struct mm_pre_in *in, size_t p, size_t e,
			size_t *r)
{
	return mm_pre_class(in, p, e, r, mm_is_nl, 1);
}

static size_t mm_pre_digit1(const struct mm_pre_in *in, size_t p, size_t e,
			    size_t *r)
{
	return mm_pre_class(in, p, e, r, mm_digit_f, 1);
}

static size_t mm_pre_digits(const struct mm_pre_in *in, size_t p, size_t e,
			    size_t *r)
{
	return mm_pre_class(in, p, e, r, mm_digit_f, 0);
}

/* [0-9][0-9][0-9] */
static size_t mm_pre_digit3(const struct mm_pre_in *in, size_t p, size_t e,
			    size_t *r)
{
	size_t q = mm_pre_class(in, p, e, r, mm_is_ascii_digit, 3);

	return q - p == 3 ? q : p;
}

static size_t mm_pre_falcon_punct(const struct mm_pre_in *in, size_t p,
				  size_t e, size_t *r)
{
	return mm_pre_class(in, p, e, r, mm_falcon_punct, 0);
}

static size_t mm_pre_default_punct(const struct mm_pre_in *in, size_t p,
				   size_t e, size_t *r)
{
	return mm_pre_class(in, p, e, r, mm_default_punct, 0);
}

static size_t mm_pre_ds_cjk(const struct mm_pre_in *in, size_t p, size_t e,
			    size_t *r)
{
	return mm_pre_class(in, p, e, r, mm_ds_cjk, 0);
}

static size_t mm_pre_ds_letters(const struct mm_pre_in *in, size_t p,
				size_t e, size_t *r)
{
	return mm_pre_opt_ws_run(in, p, e, r, mm_ds_letter_f);
}

static size_t mm_pre_ds_puncts(const struct mm_pre_in *in, size_t p,
			       size_t e, size_t *r)
{
	return mm_pre_opt_ws_run(in, p, e, r, mm_ds_punct);
}

static size_t mm_pre_ws_letters(const struct mm_pre_in *in, size_t p,
				size_t e, size_t *r)
{
	return mm_pre_opt_ws_run(in, p, e, r, mm_letter_f);
}

static size_t mm_pre_ws_puncts(const struct mm_pre_in *in, size_t p,
			       size_t e, size_t *r)
{
	return mm_pre_opt_ws_run(in, p, e, r, mm_punct_f);
}

/* \s+$: the whitespace that ends the piece */
static size_t mm_pre_ws_end(const struct mm_pre_in *in, size_t p, size_t e,
			    size_t *resume)
{
	size_t q = mm_pre_run(in, p, e, mm_ws), cl;

	if (q == p) {
		mm_pre_cp(in, p, e, &cl);
		*resume = p + cl;
		return p;
	}
	*resume = q;
	return q == e ? q : p;
}

enum mm_pre_type {
	MM_PRE_DEFAULT,
	MM_PRE_GPT2,
	MM_PRE_STARCODER,	/* also refact, smollm */
	MM_PRE_LLAMA3,
	MM_PRE_QWEN2,
	MM_PRE_DEEPSEEK_LLM,
	MM_PRE_DEEPSEEK_CODER,
	MM_PRE_FALCON,
};

static const struct {
	const char *name;
	enum mm_pre_type type;
} mm_pre_names[] = {
	{ "default", MM_PRE_DEFAULT },
	{ "gpt-2", MM_PRE_GPT2 },
	{ "starcoder", MM_PRE_STARCODER },
	{ "refact", MM_PRE_STARCODER },
	{ "smollm", MM_PRE_STARCODER },
	{ "llama-bpe", MM_PRE_LLAMA3 },
	{ "llama3", MM_PRE_LLAMA3 },
	{ "llama-v3", MM_PRE_LLAMA3 },
	{ "qwen2", MM_PRE_QWEN2 },
	{ "deepseek-r1-qwen", MM_PRE_QWEN2 },
	{ "deepseek-llm", MM_PRE_DEEPSEEK_LLM },
	{ "deepseek-coder", MM_PRE_DEEPSEEK_CODER },
	{ "falcon", MM_PRE_FALCON },
};

#define MM_PRE_MAX_PASSES 6

static const mm_pre_fn mm_pre_passes[][MM_PRE_MAX_PASSES + 1] = {
	[MM_PRE_DEFAULT] = { mm_pre_default_punct, mm_pre_gpt2, mm_pre_digits,
			     mm_pre_digit3 },
	[MM_PRE_GPT2] = { mm_pre_gpt2 },
	[MM_PRE_STARCODER] = { mm_pre_digit1, mm_pre_gpt2 },
	[MM_PRE_LLAMA3] = { mm_pre_llama3 },
	[MM_PRE_QWEN2] = { mm_pre_qwen2 },
	[MM_PRE_DEEPSEEK_LLM] = { mm_pre_nl, mm_pre_ds_letters,
				  mm_pre_ds_puncts, mm_pre_ws_end,
				  mm_pre_ds_cjk, mm_pre_digits },
	[MM_PRE_DEEPSEEK_CODER] = { mm_pre_nl, mm_pre_ws_letters,
				    mm_pre_ws_puncts, mm_pre_ds_cjk,
				    mm_pre_digit1 },
	[MM_PRE_FALCON] = { mm_pre_falcon_punct, mm_pre_gpt2, mm_pre_digit3 },
};

/* One regex over every piece of in[]: matches and gaps into out[]. */
static size_t mm_pre_pass(const struct mm_pre_in *in, mm_pre_fn fn,
			  const size_t *len, size_t n, size_t *out)
{
	size_t start = 0, k = 0;

	for (size_t i = 0; i < n; i++) {
		size_t e = start + len[i], p = start, gap = start;

		while (p < e) {
			size_t resume, q = fn(in, p, e, &resume);

			if (q > p) {
				if (p > gap)
					out[k++] = p - gap;
				out[k++] = q - p;
				p = gap = q;
			} else {
				p = resume;
			}
		}
		if (e > gap)
			out[k++] = e - gap;
		start = e;
	}
	return k;
}

/*
 * Splits s[0..n) with the rules of pre into pieces; *lens (malloc'd, the
 * caller frees) gets their byte lengths. Returns the count or -ENOMEM.
 */
static long mm_pre_split(int pre, const uint8_t *s, size_t n, size_t **lens)
{
	struct mm_pre_in in = { s, n };
	size_t *a, *b, cnt = 1;

	*lens = NULL;
	a = malloc((n + 1) * sizeof(*a));
	b = malloc((n + 1) * sizeof(*b));
	if (!a || !b) {
		free(a);
		free(b);
		return -ENOMEM;
	}
	a[0] = n;
	for (int k = 0; k < MM_PRE_MAX_PASSES && mm_pre_passes[pre][k]; k++) {
		size_t *t;

		cnt = mm_pre_pass(&in, mm_pre_passes[pre][k], a, cnt, b);
		t = a;
		a = b;
		b = t;
	}
	free(b);
	*lens = a;
	return (long)cnt;
}

/*
 * tokenizer.ggml.pre as llama.cpp reads it for a BPE vocab: missing means
 * "default" (llama.cpp warns and uses its default rules); a value it does
 * not know is refused. Every name in mm_pre_names is one llama.cpp's
 * llama-vocab.cpp accepts, spelled as it spells it (GPT-2's is "gpt-2":
 * llama.cpp refuses "gpt2").
 */
static int mm_tok_load_pre(struct mm_tok *t, const struct mm_gguf *g,
			   char *err, size_t errlen)
{
	const char *s;
	size_t len;
	int ret = mm_gguf_get_str(g, "tokenizer.ggml.pre", &s, &len);

	t->pre = MM_PRE_DEFAULT;
	if (ret == -ENOENT)
		return 0;
	if (ret)
		return mm_errf(-EINVAL, err, errlen, "key 'tokenizer.ggml.pre': expected a string");
	for (size_t i = 0; i < sizeof(mm_pre_names) / sizeof(mm_pre_names[0]); i++) {
		if (strlen(mm_pre_names[i].name) == len &&
		    !memcmp(mm_pre_names[i].name, s, len)) {
			t->pre = mm_pre_names[i].type;
			if (t->pre == MM_PRE_LLAMA3) {
				t->ignore_merges = 1;
				t->add_bos = 1;
			}
			return 0;
		}
	}
	mm_errf(-EINVAL, err, errlen, "key 'tokenizer.ggml.pre': pre-tokenizer '%.*s' is not supported (default, gpt-2, smollm, starcoder, refact, llama-bpe, llama3, llama-v3, qwen2, deepseek-r1-qwen, deepseek-llm, deepseek-coder, falcon are)",
		    (int)(len > 64 ? 64 : len), s);
	return -ENOTSUP;
}

/* For tests: the pre-tokenizer of a tokenizer.ggml.pre value on its own. */
int mm_tok_pre_split(const char *pre, const char *text, size_t len,
		     size_t *lens, int max, int *n_out, char *err,
		     size_t errlen)
{
	struct mm_tok t = { .kind = MM_TOK_BPE };
	size_t *l;
	long cnt;

	*n_out = 0;
	if (pre) {
		size_t i;

		for (i = 0; i < sizeof(mm_pre_names) / sizeof(mm_pre_names[0]); i++)
			if (!strcmp(mm_pre_names[i].name, pre))
				break;
		if (i == sizeof(mm_pre_names) / sizeof(mm_pre_names[0])) {
			mm_errf(-EINVAL, err, errlen, "key 'tokenizer.ggml.pre': pre-tokenizer '%.64s' is not supported",
				    pre);
			return -ENOTSUP;
		}
		t.pre = mm_pre_names[i].type;
	}
	cnt = mm_pre_split(t.pre, (const uint8_t *)text, len, &l);
	if (cnt < 0)
		return (int)cnt;
	for (long k = 0; k < cnt && k < max; k++)
		lens[k] = l[k];
	free(l);
	*n_out = (int)cnt;
	return cnt > max ? -ENOSPC : 0;
}

static int mm_bpe_text(const struct mm_tok *t, const uint8_t *s, size_t n,
		       struct mm_ids *o)
{
	size_t *lens, i = 0;
	long cnt = mm_pre_split(t->pre, s, n, &lens);
	int ret = 0;

	if (cnt < 0)
		return (int)cnt;
	for (long k = 0; k < cnt && !ret; k++) {
		ret = mm_bpe_word(t, s + i, lens[k], o);
		i += lens[k];
	}
	free(lens);
	return ret;
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

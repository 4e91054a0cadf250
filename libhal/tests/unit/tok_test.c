// SPDX-License-Identifier: MIT
/*
 * tok_test.c - tokenizers on the generated vocabs: known encodings
 * (worked out by hand from the merge list / piece scores in tools/gen.c),
 * round trips, special tokens, ChatML formatting, load errors.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"
#include "gguf.h"
#include "quant.h"
#include "tests/tap.h"
#include "tokenizer.h"

struct model {
	void *buf;
	struct mm_gguf *g;
	struct mm_tok *tok;
};

static int load(struct model *m, const char *shape, const char *tk)
{
	struct mm_gen_params p = { shape, tk, MM_TYPE_F16, 1 };
	char err[256];
	size_t size;
	int ret;

	memset(m, 0, sizeof(*m));
	ret = mm_gen_model_mem(&p, &m->buf, &size, err, sizeof(err));
	ret = ret ? ret : mm_gguf_open_mem(m->buf, size, &m->g, err, sizeof(err));
	ret = ret ? ret : mm_tok_load(m->g, &m->tok, err, sizeof(err));
	if (!tap_ok(!ret, "%s/%s: tokenizer loads", shape, tk))
		tap_diag("%s", err);
	return ret;
}

static void unload(struct model *m)
{
	mm_tok_free(m->tok);
	mm_gguf_close(m->g);
	free(m->buf);
}

/* Encodes text and compares with the expected token texts. */
static void expect_enc(const struct mm_tok *t, const char *text, int bos,
		       int special, const char *const *want, int nwant)
{
	int32_t ids[256];
	int n = 0, ok, ret;

	char name[128];
	size_t k = 0;

	for (const char *p = text; *p && k + 3 < sizeof(name); p++) {
		if (*p == '\n') {
			name[k++] = '\\';
			name[k++] = 'n';
		} else {
			name[k++] = *p;
		}
	}
	name[k] = 0;
	ret = mm_tok_encode(t, text, strlen(text), bos, special, ids, 256, &n);
	ok = !ret && n == nwant;
	for (int i = 0; ok && i < n; i++)
		ok = !strcmp(mm_tok_text(t, ids[i]), want[i]);
	if (!tap_ok(ok, "encode '%s'%s", name, special ? " (specials)" : "")) {
		tap_diag("ret %d, %d tokens:", ret, n);
		for (int i = 0; i < n && i < 32; i++)
			tap_diag("  %d '%s'", ids[i], mm_tok_text(t, ids[i]));
	}
}

static void expect_round_trip(const struct mm_tok *t, const char *text,
			      size_t len, const char *what)
{
	int32_t ids[1024];
	char out[2048];
	size_t olen = 0;
	int n = 0, ret;

	ret = mm_tok_encode(t, text, len, 1, 0, ids, 1024, &n);
	ret = ret ? ret : mm_tok_decode(t, ids, n, out, sizeof(out), &olen);
	if (!tap_ok(!ret && olen == len && !memcmp(out, text, len),
		    "round trip: %s (%d tokens)", what, n))
		tap_diag("ret %d, got %zu bytes '%.*s'", ret, olen, (int)olen, out);
}

#define G "\xc4\xa0"		/* GPT-2's mapped space */
#define C "\xc4\x8a"		/* GPT-2's mapped newline */
#define S "\xe2\x96\x81"	/* SentencePiece space */
#define N(a) (int)(sizeof(a) / sizeof((a)[0]))

static const char *const rt_texts[][2] = {
	{ "The quick brown fox jumps over the lazy dog.", "ASCII sentence" },
	{ "hello,world!? it's 2024 -- we'll see; x=y+1", "ASCII punctuation, digits, contractions" },
	{ "h\xc3\xa9llo w\xc3\xb6rld \xe2\x80\x94 \xe2\x98\x83 \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e", "UTF-8 Latin, symbols, CJK" },
	{ "emoji \xf0\x9f\x98\x80\xf0\x9f\x9a\x80 and ZWJ \xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x92\xbb", "emoji (4-byte UTF-8)" },
	{ "  leading and trailing   \t\n\n  x  \n", "whitespace runs" },
	{ "\xff\xfe bad \xc0 utf8 \xed\xa0\x80", "invalid UTF-8 bytes" },
	{ "<|im_start|>user not special", "special text kept as text" },
};

static void test_gpt2(void)
{
	struct model m;
	const struct mm_tok *t;

	if (load(&m, "tiny", "gpt2"))
		return;
	t = m.tok;
	tap_ok(mm_tok_kind(t) == MM_TOK_BPE && mm_tok_n_vocab(t) == 300 &&
	       mm_tok_bos(t) == 1 && mm_tok_eos(t) == 2 &&
	       mm_tok_is_eog(t, 2) && !mm_tok_is_eog(t, 5),
	       "gpt2: kind, vocab size, bos/eos");
	{
		/* merges: "t h"=34, "h e"=1 -> t|he; "a t"=9 before "Ġ c"=18 */
		static const char *const w1[] = { "t", "he", G "c", "at" };
		/* "Ġ t"=0, "h e"=1, "Ġt he"=4 */
		static const char *const w2[] = { "an", "d", G "the" };
		/* "l l"=31; "llo" is not in the tiny vocab */
		static const char *const w3[] = { "H", "e", "ll", "o", G "w",
						  "or", "l", "d" };
		/* pre-tokenizer: "a", " ", " b" */
		static const char *const w4[] = { "a", G, G "b" };
		/* "\n\n" before a letter splits as "\n" "\n" */
		static const char *const w5[] = { "x", C, C, "y" };
		/* contractions split off; " is": "i s"=13 beats "Ġ i"=19,
		 * and there is no "Ġ is" merge (only "Ġi s") */
		static const char *const w6[] = { "it", "'", "s", G, "is" };
		static const char *const w7b[] = { "a", "b", "c", G, "1", "2",
						   "3" };

		expect_enc(t, "the cat", 0, 0, w1, N(w1));
		expect_enc(t, "and the", 0, 0, w2, N(w2));
		expect_enc(t, "Hello world", 0, 0, w3, N(w3));
		expect_enc(t, "a  b", 0, 0, w4, N(w4));
		expect_enc(t, "x\n\ny", 0, 0, w5, N(w5));
		expect_enc(t, "it's is", 0, 0, w6, N(w6));
		/* no "ab"/"bc"/"Ġ1" merges in tiny */
		expect_enc(t, "abc 123", 0, 0, w7b, N(w7b));
	}
	{
		/* "e r"=5 is the only merge in "user", none in "hi" */
		static const char *const s1[] = { "<|im_start|>", "u", "s",
						  "er", C, "h", "i",
						  "<|im_end|>" };
		int32_t ids[64];
		int n = 0, found = 0;

		expect_enc(t, "<|im_start|>user\nhi<|im_end|>", 0, 1, s1, N(s1));
		mm_tok_encode(t, "<|im_start|>user", 16, 0, 0, ids, 64, &n);
		for (int i = 0; i < n; i++)
			found |= ids[i] == 1;
		tap_ok(n > 2 && !found, "gpt2: specials not parsed unless asked (%d tokens)", n);
	}
	for (int i = 0; i < N(rt_texts); i++)
		expect_round_trip(t, rt_texts[i][0], strlen(rt_texts[i][0]),
				  rt_texts[i][1]);
	{
		static const char bin[] = "\x00\x01\x7f\x80\xff nul";

		expect_round_trip(t, bin, sizeof(bin) - 1, "NUL and control bytes");
	}
	{
		int32_t ids[4];
		int n = 0;
		char out[8];
		size_t len = 0;

		tap_ok(mm_tok_encode(t, "the quick brown fox", 19, 0, 0, ids, 4, &n) == -ENOSPC &&
		       n > 4, "encode: -ENOSPC with the needed count (%d)", n);
		tap_ok(mm_tok_decode(t, ids, 4, out, sizeof(out), &len) == 0 ||
		       (len >= sizeof(out)), "decode: short buffer handled");
		ids[0] = 300;
		tap_ok(mm_tok_decode(t, ids, 1, out, sizeof(out), &len) == -EINVAL,
		       "decode: id outside the vocab is -EINVAL");
	}
	{
		int32_t id = 1;
		char out[32];
		size_t len;

		tap_ok(!mm_tok_decode(t, &id, 1, out, sizeof(out), &len) && len == 0 &&
		       !mm_tok_decode_ex(t, &id, 1, MM_TOK_DECODE_SPECIAL, out,
					 sizeof(out), &len) &&
		       !strcmp(out, "<|im_start|>"),
		       "decode: control tokens hidden unless MM_TOK_DECODE_SPECIAL");
	}
	{
		const struct mm_chat_msg msgs[] = {
			{ "system", "You are helpful." },
			{ "user", "Hi there" },
		};
		const char *want = "<|im_start|>system\nYou are helpful.<|im_end|>\n"
				   "<|im_start|>user\nHi there<|im_end|>\n"
				   "<|im_start|>assistant\n";
		char out[256];
		size_t len = 0;
		int ret = mm_tok_chat_format(t, msgs, 2, 1, out, sizeof(out), &len);
		int32_t ids[64];
		int n = 0;

		tap_ok(!ret && len == strlen(want) && !strcmp(out, want),
		       "chat: ChatML with generation prompt, exact string");
		ret = mm_tok_chat_format(t, msgs, 2, 0, out, 10, &len);
		tap_ok(ret == -ENOSPC && len == strlen(want) - 22,
		       "chat: -ENOSPC and the needed length without the prompt");
		mm_tok_chat_format(t, msgs, 2, 1, out, sizeof(out), &len);
		mm_tok_encode(t, out, len, 0, 1, ids, 64, &n);
		{
			int starts = 0, ends = 0;

			for (int i = 0; i < n; i++) {
				starts += ids[i] == 1;
				ends += ids[i] == 2;
			}
			tap_ok(n > 8 && ids[0] == 1 && starts == 3 && ends == 2 &&
			       ids[n - 1] == mm_tok_find(t, C),
			       "chat: formatted prompt encodes with control tokens");
		}
	}
	unload(&m);
}

static void test_llama(void)
{
	struct model m;
	const struct mm_tok *t;

	if (load(&m, "tiny", "llama"))
		return;
	t = m.tok;
	tap_ok(mm_tok_kind(t) == MM_TOK_SPM && mm_tok_n_vocab(t) == 300 &&
	       mm_tok_bos(t) == 1 && mm_tok_eos(t) == 2,
	       "llama: kind, vocab size, bos/eos");
	{
		/* scores: "▁t" -1 > "he" -2 > "▁the" -5; "at" -10 > "▁c" -19 */
		static const char *const w1[] = { "<s>", S "the", S "c", "at" };
		/* "é" has no piece: byte fallback after the lone "▁" */
		static const char *const w2[] = { S, "<0xC3>", "<0xA9>" };
		/* "▁a"(-3) then "an"? no: "▁a" wins, then "▁an"(-26), "▁and"(-27) */
		static const char *const w3[] = { S "and" };
		/* "x" has no piece: byte fallback; "in"+"g" -> "ing" */
		static const char *const w4[] = { "<0x78>", "ing" };

		expect_enc(t, "the cat", 1, 0, w1, N(w1));
		expect_enc(t, "\xc3\xa9", 0, 0, w2, N(w2));
		expect_enc(t, "and", 0, 0, w3, N(w3));
		{
			/* "▁xing": ▁ x i n g -> "in" -> "ing"; ▁ and x alone */
			static const char *const w5[] = { S, "<0x78>", "ing" };

			expect_enc(t, "xing", 0, 0, w5, N(w5));
		}
		(void)w4;
	}
	{
		static const char *const s1[] = { "<|im_start|>", S "is", "<|im_end|>" };

		expect_enc(t, "<|im_start|>is<|im_end|>", 0, 1, s1, N(s1));
	}
	for (int i = 0; i < N(rt_texts); i++)
		expect_round_trip(t, rt_texts[i][0], strlen(rt_texts[i][0]),
				  rt_texts[i][1]);
	unload(&m);
}

static void test_smollm_pre(void)
{
	struct model m;
	int32_t ids[64];
	int n = 0;

	if (load(&m, "micro", "gpt2"))
		return;
	mm_tok_encode(m.tok, "a 12", 4, 0, 0, ids, 64, &n);
	tap_ok(n == 4, "gpt2 pre (micro): ' 12' is one pre-token, digits unmerged (%d)", n);
	unload(&m);
}

static void test_load_errors(void)
{
	static const char *const toks[] = { "a", "b", "a b" };
	const char *merges[] = { "a b" };
	struct {
		const char *what, *msg;
		int bos, model_llama, no_tokens, bad_types, bad_merge;
	} cases[] = {
		{ "bos out of range", "key 'tokenizer.ggml.bos_token_id': token id 99 is outside the vocab", 99, 0, 0, 0, 0 },
		{ "tokens missing", "key 'tokenizer.ggml.tokens': missing", -1, 0, 1, 0, 0 },
		{ "token_type count", "key 'tokenizer.ggml.token_type': expected 3 integers", -1, 0, 0, 1, 0 },
		{ "merge without space", "key 'tokenizer.ggml.merges': merge 0 has no space", -1, 0, 0, 0, 1 },
	};

	for (int i = 0; i < N(cases); i++) {
		struct mm_gguf_writer *w = mm_gguf_writer_new(0);
		struct mm_gguf *g = NULL;
		struct mm_tok *tok = NULL;
		char err[256] = "";
		void *buf;
		size_t size;
		int ret;
		int32_t types[2] = { 1, 1 };

		mm_gguf_w_str(w, "tokenizer.ggml.model", "gpt2");
		if (!cases[i].no_tokens)
			mm_gguf_w_arr_str(w, "tokenizer.ggml.tokens", toks, NULL, 3);
		if (cases[i].bad_types)
			mm_gguf_w_arr(w, "tokenizer.ggml.token_type", MM_GGUF_I32, types, 2);
		if (cases[i].bad_merge)
			merges[0] = "ab";
		else
			merges[0] = "a b";
		mm_gguf_w_arr_str(w, "tokenizer.ggml.merges", merges, NULL, 1);
		if (cases[i].bos >= 0)
			mm_gguf_w_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)cases[i].bos);
		mm_gguf_w_write_mem(w, &buf, &size, err, sizeof(err));
		mm_gguf_writer_free(w);
		mm_gguf_open_mem(buf, size, &g, err, sizeof(err));
		ret = mm_tok_load(g, &tok, err, sizeof(err));
		if (!tap_ok(ret == -EINVAL && !tok && strstr(err, cases[i].msg),
			    "tokenizer load rejects: %s", cases[i].what))
			tap_diag("ret %d '%s'", ret, err);
		mm_tok_free(tok);
		mm_gguf_close(g);
		free(buf);
	}
	{
		struct mm_gguf_writer *w = mm_gguf_writer_new(0);
		struct mm_gguf *g = NULL;
		struct mm_tok *tok = NULL;
		char err[256] = "";
		void *buf;
		size_t size;
		int ret;

		mm_gguf_w_str(w, "tokenizer.ggml.model", "bert");
		mm_gguf_w_write_mem(w, &buf, &size, err, sizeof(err));
		mm_gguf_writer_free(w);
		mm_gguf_open_mem(buf, size, &g, err, sizeof(err));
		ret = mm_tok_load(g, &tok, err, sizeof(err));
		tap_ok(ret == -ENOTSUP && strstr(err, "'bert' is not supported"),
		       "tokenizer load: unsupported model is -ENOTSUP");
		mm_gguf_close(g);
		free(buf);
	}
}

/* ---- pre-tokenizer split tables (from the regexes' semantics) ---------- */

struct split_case {
	const char *pre;	/* NULL: tokenizer.ggml.pre missing */
	const char *text;
	const char *want[12];
};

static const struct split_case split_cases[] = {
	/* gpt-2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ */
	{ "gpt-2", "it's", { "it", "'s" } },
	{ "gpt-2", "I'm we'll 've", { "I", "'m", " we", "'ll", " '", "ve" } },
	{ "gpt-2", "IT'S", { "IT", "'", "S" } },
	{ "gpt-2", "abc 123 4567", { "abc", " 123", " 4567" } },
	{ "gpt-2", "a  b", { "a", " ", " b" } },
	{ "gpt-2", "x\n\ny", { "x", "\n", "\n", "y" } },
	{ "gpt-2", "hi!!! ok...", { "hi", "!!!", " ok", "..." } },
	{ "gpt-2", "end   ", { "end", "   " } },
	{ "gpt-2", "h\xc3\xa9llo w\xc3\xb6rld", { "h\xc3\xa9llo", " w\xc3\xb6rld" } },
	{ "gpt-2", "\xe6\x97\xa5\xe6\x9c\xac \xe3\x83\x86\xe3\x82\xb9\xe3\x83\x88",
	  { "\xe6\x97\xa5\xe6\x9c\xac", " \xe3\x83\x86\xe3\x82\xb9\xe3\x83\x88" } },
	{ "gpt-2", "x\xc2\xb2", { "x", "\xc2\xb2" } },			/* ² is \p{N} */
	{ "gpt-2", "a\xc2\xa0" "b", { "a", "\xc2\xa0", "b" } },		/* NBSP is \s */
	{ "gpt-2", "\xf0\x9f\x99\x82 ok $x", { "\xf0\x9f\x99\x82", " ok", " $", "x" } },
	{ "gpt-2", "a 12", { "a", " 12" } },
	/* llama-bpe: (?i:'s|...)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+ */
	{ "llama-bpe", "IT'S I'M don't", { "IT", "'S", " I", "'M", " don", "'t" } },
	{ "llama-bpe", "12345", { "123", "45" } },
	{ "llama-bpe", "a1b", { "a", "1", "b" } },
	{ "llama-bpe", "\thello (hello) 'hi", { "\thello", " (", "hello", ")", " '", "hi" } },
	{ "llama-bpe", "(hello)", { "(hello", ")" } },
	{ "llama-bpe", "hi!!\n\nok", { "hi", "!!\n\n", "ok" } },
	{ "llama-bpe", "a \n\n b", { "a", " \n\n", " b" } },
	{ "llama-bpe", "x   y", { "x", "  ", " y" } },
	{ "llama-bpe", "end  ", { "end", "  " } },
	{ "llama-bpe", "\xc3\xbc" "ber 2024\xe5\xb9\xb4",
	  { "\xc3\xbc" "ber", " ", "202", "4", "\xe5\xb9\xb4" } },
	{ "llama3", "\xd9\xa1\xd9\xa2\xd9\xa3\xd9\xa4", { "\xd9\xa1\xd9\xa2\xd9\xa3", "\xd9\xa4" } },
	/* qwen2: llama3 with \p{N} alone */
	{ "qwen2", "12345", { "1", "2", "3", "4", "5" } },
	{ "qwen2", "IT'S (x) a 1", { "IT", "'S", " (", "x", ")", " a", " ", "1" } },
	{ "qwen2", "ok.\n\n  x", { "ok", ".\n\n", " ", " x" } },
	/* starcoder / refact / smollm: \p{N}, then GPT-2's regex per piece */
	{ "starcoder", "a 12", { "a", " ", "1", "2" } },
	{ "refact", "a  1", { "a", "  ", "1" } },
	{ "smollm", "x1y it's 3", { "x", "1", "y", " it", "'s", " ", "3" } },
	/* falcon: [\p{P}\$\+<=>\^~\|`]+, GPT-2, [0-9][0-9][0-9] */
	{ "falcon", "Hello, world!", { "Hello", ",", " world", "!" } },
	{ "falcon", "it's", { "it", "'", "s" } },
	{ "falcon", "12345 678", { "123", "45", " ", "678" } },
	{ "falcon", "a+=b `c`", { "a", "+=", "b", " ", "`", "c", "`" } },
	{ "falcon", "x \xe3\x80\x82y", { "x", " ", "\xe3\x80\x82", "y" } },	/* 。 is \p{P} */
	{ "falcon", "\xe4\xb8\xad\xe6\x96\x87 text", { "\xe4\xb8\xad\xe6\x96\x87", " text" } },
	/* deepseek-coder: [\r\n], \s?\p{L}+, \s?\p{P}+, [一-龥ࠀ-一가-퟿]+, \p{N} */
	{ "deepseek-coder", "Hello world", { "Hello", " world" } },
	{ "deepseek-coder", "x = 10;\n", { "x", " = ", "1", "0", ";", "\n" } },
	{ "deepseek-coder", "a, b.", { "a", ",", " b", "." } },
	{ "deepseek-coder", "\xe4\xb8\xad\xe6\x96\x87" "abc", { "\xe4\xb8\xad\xe6\x96\x87", "abc" } },
	{ "deepseek-coder", "\xc2\xa1Hola!\n\nx", { "\xc2\xa1", "Hola", "!", "\n", "\n", "x" } },
	{ "deepseek-coder", "\xce\xb5\xce\xbb 12", { "\xce\xb5\xce\xbb", " ", "1", "2" } },
	/* deepseek-llm: [\r\n], \s?[A-Za-zµÀ-Ö...]+, \s?[!-/:-~！-／：-～‘-‟　-。]+, \s+$, [一-龥ࠀ-一가-퟿]+, \p{N}+ */
	{ "deepseek-llm", "Hello, world!", { "Hello", ",", " world", "!" } },
	{ "deepseek-llm", "x = 10;", { "x", " =", " ", "10", ";" } },
	{ "deepseek-llm", "\xe4\xb8\xad\xe6\x96\x87 abc", { "\xe4\xb8\xad\xe6\x96\x87", " abc" } },
	{ "deepseek-llm", "abc   ", { "abc", "   " } },
	{ "deepseek-llm", "ab  cd", { "ab", " ", " cd" } },
	{ "deepseek-llm", "12345 x\r\ny", { "12345", " x", "\r", "\n", "y" } },
	{ "deepseek-llm", "\xe4\xbd\xa0\xe5\xa5\xbd\xef\xbc\x8c\xe4\xb8\x96\xe7\x95\x8c",
	  { "\xe4\xbd\xa0\xe5\xa5\xbd", "\xef\xbc\x8c", "\xe4\xb8\x96\xe7\x95\x8c" } },
	/* the third regex's :-~ takes ASCII letters too, so it splits "café" */
	{ "deepseek-llm", "caf\xc3\xa9 \xed\x95\x9c\xea\xb5\xad\xec\x96\xb4",
	  { "caf", "\xc3\xa9", " ", "\xed\x95\x9c\xea\xb5\xad\xec\x96\xb4" } },
	{ "deepseek-llm", "\xce\xb1\xce\xb2\xce\xb3 \xce\xb4", { "\xce\xb1\xce\xb2\xce\xb3", " \xce\xb4" } },
	{ "deepseek-llm", "\xd9\x85\xd8\xb1\xd8\xad\xd8\xa8\xd8\xa7", { "\xd9\x85\xd8\xb1\xd8\xad\xd8\xa8\xd8\xa7" } },
	/* "default" (and a missing key): [\p{P}\$\+<=>\^~\|]+, GPT-2, \p{N}+, [0-9][0-9][0-9] */
	{ "default", "it's 12345", { "it", "'", "s", " ", "123", "45" } },
	{ NULL, "a+b 7", { "a", "+", "b", " ", "7" } },
};

static void show(char *out, size_t cap, const char *s, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < n && k + 5 < cap; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '\n')
			k += (size_t)snprintf(out + k, cap - k, "\\n");
		else if (c == '\r')
			k += (size_t)snprintf(out + k, cap - k, "\\r");
		else if (c == '\t')
			k += (size_t)snprintf(out + k, cap - k, "\\t");
		else
			out[k++] = (char)c;
	}
	out[k] = 0;
}

static void test_pre_split(void)
{
	for (int i = 0; i < N(split_cases); i++) {
		const struct split_case *c = &split_cases[i];
		size_t lens[64], off = 0, tl = strlen(c->text);
		char err[256] = "", name[128];
		int n = 0, nw = 0, ok, ret;

		while (nw < 12 && c->want[nw])
			nw++;
		ret = mm_tok_pre_split(c->pre, c->text, tl, lens, 64, &n,
				       err, sizeof(err));
		ok = !ret && n == nw;
		for (int k = 0; ok && k < n; k++) {
			ok = lens[k] == strlen(c->want[k]) &&
			     !memcmp(c->text + off, c->want[k], lens[k]);
			off += lens[k];
		}
		show(name, sizeof(name), c->text, tl);
		if (!tap_ok(ok, "pre %s: '%s' -> %d pieces",
			    c->pre ? c->pre : "(missing)", name, nw)) {
			off = 0;
			tap_diag("ret %d '%s', %d pieces:", ret, err, n);
			for (int k = 0; k < n && k < 64; k++) {
				show(name, sizeof(name), c->text + off, lens[k]);
				tap_diag("  '%s'", name);
				off += lens[k];
			}
		}
	}
	{
		size_t lens[4];
		char err[256] = "";
		int n = 0, ret;

		ret = mm_tok_pre_split("tekken", "x", 1, lens, 4, &n, err,
				       sizeof(err));
		tap_ok(ret == -ENOTSUP && strstr(err, "'tekken'"),
		       "pre split: unknown pre value refused by name");
	}
}

/* Every pre value on random text (bytes, ASCII, UTF-8 of many scripts):
 * pieces are non-empty and cover the input exactly. */
static void test_pre_random(void)
{
	static const char *const pres[] = {
		NULL, "gpt-2", "smollm", "llama-bpe", "qwen2", "deepseek-llm",
		"deepseek-coder", "falcon",
	};
	static const char *const atoms[] = {
		"a", "Z", "7", " ", "  ", "\n", "\r\n", "\t", "'", "'s", "'LL",
		".", "$", "`", "\xc3\xa9", "\xc2\xa0", "\xc2\xb2", "\xe4\xb8\xad",
		"\xed\x95\x9c", "\xef\xbc\x8c", "\xe3\x80\x82", "\xd9\xa3",
		"\xf0\x9f\x99\x82", "\xcc\x81", "\xff", "\xc3", "\xe2\x80\x94",
	};
	uint32_t seed = 12345;
	int bad = 0, runs = 0;

	for (int it = 0; it < 400; it++) {
		char text[512];
		size_t len = 0, lens[512];

		while (len < 400) {
			const char *a;

			seed = seed * 1103515245u + 12345u;
			a = atoms[(seed >> 16) % N(atoms)];
			memcpy(text + len, a, strlen(a));
			len += strlen(a);
		}
		for (int p = 0; p < N(pres); p++) {
			size_t sum = 0;
			int n = 0, ok;

			ok = !mm_tok_pre_split(pres[p], text, len, lens, 512, &n,
					       NULL, 0);
			for (int k = 0; ok && k < n; k++) {
				ok = lens[k] > 0;
				sum += lens[k];
			}
			bad += !ok || sum != len;
			runs++;
		}
	}
	tap_ok(!bad, "pre split: %d random texts x pre values, pieces cover the input (%d bad)",
	       runs, bad);
}

/* A BPE vocab with tokenizer.ggml.pre = pre, loaded. */
static int load_pre(const char *pre, struct mm_tok **tok, char *err,
		    size_t errlen)
{
	static const char *const toks[] = { "a", "b", "ab", "\xc4\xa0" };
	static const char *const merges[] = { "a b" };
	struct mm_gguf_writer *w = mm_gguf_writer_new(0);
	struct mm_gguf *g = NULL;
	void *buf = NULL;
	size_t size;
	int ret;

	mm_gguf_w_str(w, "tokenizer.ggml.model", "gpt2");
	if (pre)
		mm_gguf_w_str(w, "tokenizer.ggml.pre", pre);
	mm_gguf_w_arr_str(w, "tokenizer.ggml.tokens", toks, NULL, 4);
	mm_gguf_w_arr_str(w, "tokenizer.ggml.merges", merges, NULL, 1);
	mm_gguf_w_write_mem(w, &buf, &size, err, errlen);
	mm_gguf_writer_free(w);
	ret = mm_gguf_open_mem(buf, size, &g, err, errlen);
	*tok = NULL;
	ret = ret ? ret : mm_tok_load(g, tok, err, errlen);
	mm_gguf_close(g);
	free(buf);
	return ret;
}

static void test_pre_load(void)
{
	static const char *const known[] = {
		NULL, "default", "gpt-2", "smollm", "starcoder",
		"refact", "llama-bpe", "qwen2", "deepseek-llm",
		"deepseek-coder", "falcon",
	};
	int good = 0;

	for (int i = 0; i < N(known); i++) {
		struct mm_tok *tok;
		char err[256] = "";
		int32_t ids[8];
		int n = 0;

		if (!load_pre(known[i], &tok, err, sizeof(err)) &&
		    !mm_tok_encode(tok, "ab a", 4, 0, 0, ids, 8, &n) && n == 3)
			good++;
		else
			tap_diag("pre %s: '%s' (%d ids)", known[i] ? known[i] : "(missing)", err, n);
		mm_tok_free(tok);
	}
	tap_ok(good == N(known), "tokenizer load: %d/%d supported pre values load and encode",
	       good, N(known));
	{
		struct mm_tok *tok;
		char err[256] = "";
		int ret = load_pre("qwen35-next", &tok, err, sizeof(err));

		if (!tap_ok(ret == -ENOTSUP && !tok && strstr(err, "'qwen35-next'") &&
			    strstr(err, "tokenizer.ggml.pre"),
			    "tokenizer load: unknown pre value is -ENOTSUP naming it"))
			tap_diag("ret %d '%s'", ret, err);
		mm_tok_free(tok);
	}
	{
		/* llama.cpp refuses "gpt2" (its name is "gpt-2"): so does this */
		struct mm_tok *tok;
		char err[256] = "";
		int ret = load_pre("gpt2", &tok, err, sizeof(err));

		if (!tap_ok(ret == -ENOTSUP && !tok && strstr(err, "'gpt2'"),
			    "tokenizer load: pre 'gpt2' (not a llama.cpp name) is refused"))
			tap_diag("ret %d '%s'", ret, err);
		mm_tok_free(tok);
	}
	for (int k = 0; k < 2; k++) {
		/* llama-bpe keeps a piece that is a token whole (llama.cpp's
		 * ignore_merges); gpt-2 merges it from bytes ("b c" has no
		 * result token, so no merge applies) */
		static const char *const toks[] = { "a", "b", "c", "abc" };
		static const char *const merges[] = { "a b" };
		const char *pre = k ? "gpt-2" : "llama-bpe";
		struct mm_gguf_writer *w = mm_gguf_writer_new(0);
		struct mm_gguf *g = NULL;
		struct mm_tok *tok = NULL;
		char err[256] = "";
		void *buf = NULL;
		size_t size;
		int32_t ids[8];
		int n = 0;

		mm_gguf_w_str(w, "tokenizer.ggml.model", "gpt2");
		mm_gguf_w_str(w, "tokenizer.ggml.pre", pre);
		mm_gguf_w_arr_str(w, "tokenizer.ggml.tokens", toks, NULL, 4);
		mm_gguf_w_arr_str(w, "tokenizer.ggml.merges", merges, NULL, 1);
		mm_gguf_w_write_mem(w, &buf, &size, err, sizeof(err));
		mm_gguf_writer_free(w);
		mm_gguf_open_mem(buf, size, &g, err, sizeof(err));
		mm_tok_load(g, &tok, err, sizeof(err));
		mm_gguf_close(g);
		free(buf);
		if (tok)
			mm_tok_encode(tok, "abc", 3, 0, 0, ids, 8, &n);
		tap_ok(tok && (k ? n == 3 && ids[0] == 0 && ids[2] == 2 :
			       n == 1 && ids[0] == 3),
		       "%s: 'abc' is %s (%d ids)", pre,
		       k ? "a|b|c, no merge" : "the token 'abc' whole", n);
		mm_tok_free(tok);
	}
}

int main(void)
{
	test_gpt2();
	test_llama();
	test_smollm_pre();
	test_load_errors();
	test_pre_split();
	test_pre_random();
	test_pre_load();
	return tap_done("tok_test");
}

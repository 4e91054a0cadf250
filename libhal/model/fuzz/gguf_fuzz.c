// SPDX-License-Identifier: MIT
/*
 * gguf_fuzz.c - libFuzzer target: parse any bytes as GGUF, walk every KV,
 * array element and tensor byte, and load + exercise the tokenizer when
 * the file has one. Crashes, sanitizer reports and leaks are failures;
 * rejecting the input is not.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "gguf.h"
#include "tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint64_t sink;

static void walk(const struct mm_gguf *g)
{
	uint64_t acc = mm_gguf_version(g) + mm_gguf_alignment(g) +
		       mm_gguf_data_offset(g);

	if (mm_gguf_arch(g))
		acc += strlen(mm_gguf_arch(g));
	for (uint64_t i = 0; i < mm_gguf_n_kv(g); i++) {
		const struct mm_gguf_kv *kv = mm_gguf_kv_at(g, i);
		uint32_t et;
		uint64_t n;

		acc += strlen(kv->key) + kv->type;
		if (mm_gguf_find(g, kv->key) != kv)
			__builtin_trap();
		if (kv->type == MM_GGUF_STR)
			acc += kv->n + (uint8_t)kv->v.str[kv->n ? kv->n - 1 : 0];
		if (mm_gguf_arr(kv, &et, &n))
			continue;
		for (uint64_t k = 0; k < n; k++) {
			const char *s;
			size_t len;
			float f;
			int32_t v;

			if (!mm_gguf_arr_str(kv, k, &s, &len))
				acc += len ? (uint8_t)s[len - 1] : 0;
			else if (!mm_gguf_arr_f32(kv, k, &f))
				acc += f != f;
			else if (!mm_gguf_arr_i32(kv, k, &v))
				acc += (uint32_t)v;
		}
	}
	for (uint64_t i = 0; i < mm_gguf_n_tensors(g); i++) {
		const struct mm_gguf_tensor *t = mm_gguf_tensor_at(g, i);
		const uint8_t *d = t->data;

		if (mm_gguf_tensor(g, t->name) != t)
			__builtin_trap();
		/* touch first and last byte: must be inside the input */
		if (t->size)
			acc += d[0] + d[t->size - 1];
	}
	sink = acc;
}

static void tok(const struct mm_gguf *g)
{
	static const char text[] = "Hello <|im_start|>world \xe2\x96\x81 caf\xc3\xa9 "
				   "\xf0\x9f\x98\x80 123 it's\n\n  x\xff";
	const struct mm_chat_msg msg[] = { { "user", "hi" } };
	struct mm_tok *t;
	int32_t ids[256];
	char out[1024];
	size_t len;
	int n = 0;

	if (mm_tok_load(g, &t, NULL, 0))
		return;
	if (!mm_tok_encode(t, text, sizeof(text) - 1, 1, 1, ids, 256, &n) ||
	    n > 0) {
		if (n > 256)
			n = 256;
		mm_tok_decode_ex(t, ids, n, MM_TOK_DECODE_SPECIAL, out,
				 sizeof(out), &len);
		mm_tok_decode(t, ids, n, out, sizeof(out), &len);
	}
	mm_tok_encode(t, text, sizeof(text) - 1, 0, 0, ids, 256, &n);
	for (int i = 0; i < mm_tok_n_vocab(t) && i < 512; i++)
		mm_tok_piece(t, i, MM_TOK_DECODE_SPECIAL, out, sizeof(out), &len);
	mm_tok_chat_format(t, msg, 1, 1, out, sizeof(out), &len);
	mm_tok_free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mm_gguf *g;
	char err[256];

	if (mm_gguf_open_mem(data, size, &g, err, sizeof(err)))
		return 0;
	walk(g);
	tok(g);
	mm_gguf_close(g);
	return 0;
}

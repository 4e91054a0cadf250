/* SPDX-License-Identifier: MIT */
/*
 * tokenizer.h - text <-> token ids from a GGUF file's tokenizer metadata,
 * as llama.cpp does it for tokenizer.ggml.model "llama" (SentencePiece:
 * scores, byte fallback, "▁" for spaces) and "gpt2" (byte-level BPE with
 * tokenizer.ggml.merges and the pre-tokenizer rules llama.cpp has for the
 * tokenizer.ggml.pre values gpt-2, smollm, starcoder, refact, llama-bpe,
 * qwen2, deepseek-llm, deepseek-coder, falcon and "default"; other values
 * are refused), plus ChatML chat formatting.
 *
 * Threading: a loaded struct mm_tok is immutable; encode, decode and chat
 * formatting may run concurrently on it. It copies what it needs, so the
 * GGUF handle may be closed after mm_tok_load().
 *
 * Functions return 0 or a negative errno; -ENOSPC when the output does not
 * fit (the *_out count/length still says how much was needed).
 */
#ifndef MM_TOKENIZER_H
#define MM_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "gguf.h"

#ifdef __cplusplus
extern "C" {
#endif

struct mm_tok;

enum mm_tok_kind {
	MM_TOK_SPM = 1,		/* "llama" */
	MM_TOK_BPE = 2,		/* "gpt2" */
};

/* token_type values of tokenizer.ggml.token_type */
enum mm_tok_attr {
	MM_TOK_NORMAL = 1,
	MM_TOK_UNKNOWN = 2,
	MM_TOK_CONTROL = 3,
	MM_TOK_USER = 4,
	MM_TOK_UNUSED = 5,
	MM_TOK_BYTE = 6,
};

struct mm_chat_msg {
	const char *role;	/* "system", "user", "assistant", ... */
	const char *content;
};

MM_MODEL_API int mm_tok_load(const struct mm_gguf *g, struct mm_tok **out,
			     char *err, size_t errlen);
MM_MODEL_API void mm_tok_free(struct mm_tok *tok);

/*
 * Encodes len bytes of text. add_bos: prepend BOS when the vocab has one.
 * parse_special: control tokens written in the text ("<|im_start|>") become
 * their ids; otherwise they are tokenized as plain text. User-defined
 * tokens are always matched (as llama.cpp does). Writes at most max ids;
 * *n_out is the full count (-ENOSPC if > max).
 */
MM_MODEL_API int mm_tok_encode(const struct mm_tok *tok, const char *text,
			       size_t len, int add_bos, int parse_special,
			       int32_t *ids, int max, int *n_out);

/* Decode flags. */
#define MM_TOK_DECODE_SPECIAL	0x1	/* render control tokens' text */
#define MM_TOK_DECODE_KEEP_SPACE 0x2	/* SPM: keep the leading space */

/*
 * Decodes n ids into buf (NUL-terminated when cap > 0). Control tokens are
 * skipped, and the space SentencePiece prepends is removed, so that
 * decode(encode(s)) == s. *len_out is the full length, NUL excluded.
 * -EINVAL for an id outside the vocab.
 */
MM_MODEL_API int mm_tok_decode(const struct mm_tok *tok, const int32_t *ids,
			       int n, char *buf, size_t cap, size_t *len_out);
MM_MODEL_API int mm_tok_decode_ex(const struct mm_tok *tok,
				  const int32_t *ids, int n, unsigned flags,
				  char *buf, size_t cap, size_t *len_out);
/* The bytes one token stands for (streaming output); control tokens are
 * empty unless flags has MM_TOK_DECODE_SPECIAL. */
MM_MODEL_API int mm_tok_piece(const struct mm_tok *tok, int32_t id,
			      unsigned flags, char *buf, size_t cap,
			      size_t *len_out);

MM_MODEL_API int mm_tok_kind(const struct mm_tok *tok);
MM_MODEL_API int mm_tok_n_vocab(const struct mm_tok *tok);
/* -1 when the vocab has none. */
MM_MODEL_API int mm_tok_bos(const struct mm_tok *tok);
MM_MODEL_API int mm_tok_eos(const struct mm_tok *tok);
/* 1 if id ends a turn (EOS, EOT or <|im_end|>). */
MM_MODEL_API int mm_tok_is_eog(const struct mm_tok *tok, int32_t id);
/* Token text as stored, NUL-terminated (NULL for a bad id). */
MM_MODEL_API const char *mm_tok_text(const struct mm_tok *tok, int32_t id);
MM_MODEL_API int mm_tok_attr(const struct mm_tok *tok, int32_t id);
/* id of a token text, or -1. */
MM_MODEL_API int32_t mm_tok_find(const struct mm_tok *tok, const char *text);

/*
 * Formats messages with the model's chat template. Supported: ChatML
 * ("<|im_start|>" in tokenizer.chat_template, also the default when the
 * file has no template):
 *   <|im_start|>ROLE\nCONTENT<|im_end|>\n ... [<|im_start|>assistant\n]
 * -ENOTSUP for other templates. The result is meant to be encoded with
 * parse_special = 1.
 */
MM_MODEL_API int mm_tok_chat_format(const struct mm_tok *tok,
				    const struct mm_chat_msg *msgs, int n,
				    int add_gen, char *buf, size_t cap,
				    size_t *len_out);

/*
 * The BPE pre-tokenizer alone (internal, for tests): splits len bytes of
 * text as llama.cpp does for tokenizer.ggml.pre value pre (NULL: the key
 * is missing, llama.cpp's "default" rules) and writes at most max piece
 * lengths; *n_out is the full count. -ENOTSUP (err names it) for a pre
 * value that is not supported.
 */
int mm_tok_pre_split(const char *pre, const char *text, size_t len,
		     size_t *lens, int max, int *n_out, char *err,
		     size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* MM_TOKENIZER_H */

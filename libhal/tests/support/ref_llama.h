/* SPDX-License-Identifier: MIT */
/*
 * ref_llama.h - test helpers for the decoder: a plain f32 reference
 * implementation of the "llama" graph (every weight dequantized to f32
 * with mm_dequantize_row, naive loops, one token at a time, f32 KV cache,
 * no mm_ctx), and a GGUF quantizer (F32/F16 -> Q8_0/Q4_0/Q4_K) built on
 * the writer API, used by the tests and the model benchmark.
 */
#ifndef REF_LLAMA_H
#define REF_LLAMA_H

#include <stddef.h>
#include <stdint.h>

#include "quant.h"

struct ref_llama;

int ref_llama_load(const char *path, int n_ctx, struct ref_llama **out,
		   char *err, size_t errlen);
void ref_llama_free(struct ref_llama *r);
int ref_llama_n_vocab(const struct ref_llama *r);
void ref_llama_reset(struct ref_llama *r);
/* Appends one token; logits (n_vocab) after it. -ENOSPC when full. */
int ref_llama_step(struct ref_llama *r, int32_t tok, float *logits);
/* Appends one embedding row (n_embd floats) in place of a token's. */
int ref_llama_n_embd(const struct ref_llama *r);
int ref_llama_step_embd(struct ref_llama *r, const float *embd,
			float *logits);

/*
 * Writes a copy of src with every 2-D tensor quantized to type (1-D
 * tensors are kept). A tensor whose rows are not a multiple of the type's
 * block falls back as llama.cpp's quantize does (Q4_K -> Q5_0; otherwise
 * the source type). *n_fallback counts them.
 */
int ref_quantize_file(const char *src, const char *dst, enum mm_type type,
		      int *n_fallback, char *err, size_t errlen);

#endif

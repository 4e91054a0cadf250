/* SPDX-License-Identifier: MIT */
/*
 * llama.h - LLaMA-family decoder of the model runtime (internal).
 *
 * The public API is libhal/include/mmhal_model.h; this header holds the
 * model's internal layout so the pieces of libhal/model (and white-box
 * tests) can share it.
 *
 * Threading: see mmhal_model.h (a model is used by one thread at a time;
 * its mm_ctx owns the worker threads).
 */
#ifndef MM_LLAMA_H
#define MM_LLAMA_H

#include <stddef.h>
#include <stdint.h>

#include "mmhal_model.h"
#include "gguf.h"
#include "quant.h"
#include "tokenizer.h"

/* A weight matrix W[ne1][ne0] used in place (ne0 innermost). */
struct mm_llama_w {
	enum mm_type t;
	const uint8_t *d;
	int64_t ne0, ne1;
	size_t rs;		/* bytes per row */
	uint64_t bytes;
};

struct mm_llama_layer {
	float *attn_norm, *ffn_norm;	/* dequantized copies, n_embd */
	struct mm_llama_w q, k, v, o, gate, up, down;
};

struct mm_llama_hp {
	int n_vocab, n_embd, n_layer, n_head, n_head_kv, n_ff;
	int head_dim, n_rot, n_ctx_train;
	float eps, rope_base;
};

#define MM_LLAMA_MAX_MAPS 32	/* large buffers of a model, at most */

struct mmhal_model {
	struct mm_gguf *g;
	void *filebuf;		/* use_mmap == 0: the file read into memory */
	struct mm_tok *tok;	/* NULL if the file has no usable vocab */
	struct mm_ctx *ctx;
	struct mm_llama_hp hp;
	float *inv_freq;	/* n_rot / 2: base^(-2i/n_rot) / freq_factor */

	struct mm_llama_w tok_embd, output;
	float *output_norm;
	struct mm_llama_layer *layers;
	uint64_t repacked_bytes;	/* see mm_llama_repack() */

	/* KV cache: per layer and KV head, n_ctx rows of head_dim elements
	 * of kv_type, kv_rs bytes each (mm_kv_at()) */
	int n_ctx, n_batch, kv_type, kv_dim;
	size_t kv_rs;
	uint8_t *kv_k, *kv_v;
	int n_past;
	int32_t *tokens;	/* n_ctx: the tokens in the cache */

	/* activations, n_batch rows */
	float *x, *xn, *q, *k, *v, *att, *gate, *up;
	float *logits;
	float *rope_cs;		/* n_batch x n_rot: cos, sin per position */
	int has_logits;
	float *kf, *vf;		/* prefill: one layer's K/V cache rows in f32 */
	float *scratch;		/* per worker: attention scores, a K/V row */
	size_t scratch_stride;
	int n_threads;
	int slot;		/* next scratch slot of a parallel run */
	/* decode attention over position segments: per (KV head, segment)
	 * grp unnormalized outputs of head_dim, then grp (max, sum) pairs */
	float *apart;
	int aseg_max;		/* segments per KV head, at most */

	/* mm_llama_alloc()'s anonymous mappings, for mm_llama_free() */
	struct {
		void *p;
		size_t bytes;
	} maps[MM_LLAMA_MAX_MAPS];
	int nmap;

	struct mmhal_model_stats st;
	struct mmhal_model_info info;
	char err[256];
};

#endif /* MM_LLAMA_H */

/* SPDX-License-Identifier: MIT */
/*
 * llama_int.h - LLaMA-family decoder of the model runtime (internal).
 *
 * The public API is libhal/include/mmhal_model.h; this header holds the
 * layout of a model and of a session so the pieces of libhal/model (and
 * white-box tests) can share it:
 *
 *   llama_load.c  hyperparameters, weights, repacking, info; model load/free
 *   llama_ctx.c   sessions: parameters, KV cache and activations, stats,
 *                 context shift, prefix reuse
 *   llama_attn.c  attention over the KV cache (prefill, decode segments)
 *   llama_state.c a session's cache saved to / loaded from a file
 *   llama.c       the forward pass, eval/generate, the model-level API
 *   vec.c         SIMD row helpers and the attention kernel (vec.h)
 *
 * A model (struct mmhal_model) is only read once loaded: weights,
 * tokenizer, hyperparameters. A session (struct mmhal_ctx) holds what an
 * evaluation writes: KV cache, activations, worker threads (its mm_ctx),
 * stats, abort callback, error message. Threading: see mmhal_model.h.
 */
#ifndef MM_LLAMA_INT_H
#define MM_LLAMA_INT_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "mmhal_model.h"
#include "gguf.h"
#include "quant.h"
#include "sign.h"
#include "tokenizer.h"
#include "vec.h"

/* A weight matrix W[ne1][ne0] used in place (ne0 innermost). */
struct mm_llama_w {
	enum mm_type t;
	const uint8_t *d;
	int64_t ne0, ne1;
	size_t rs;		/* bytes per row */
	uint64_t bytes;
	uint64_t dev;		/* its copy on the CUDA device, or 0 */
};

struct mm_llama_layer {
	float *attn_norm, *ffn_norm;	/* dequantized copies, n_embd */
	struct mm_llama_w q, k, v, o, gate, up, down;
};

/* The matrices of a layer, in mm_llama_layer_mats[] order. */
#define MM_LAYER_MATS 7
extern const struct mm_llama_mat {
	const char *name;	/* blk.N.<name>.weight */
	size_t off;		/* of its struct mm_llama_w in the layer */
} mm_llama_layer_mats[MM_LAYER_MATS];

static inline struct mm_llama_w *mm_layer_mat(struct mm_llama_layer *L, int i)
{
	return (struct mm_llama_w *)((char *)L + mm_llama_layer_mats[i].off);
}

struct mm_llama_hp {
	int n_vocab, n_embd, n_layer, n_head, n_head_kv, n_ff;
	int head_dim, n_rot, n_ctx_train;
	float eps, rope_base;
};

/*
 * A precision tier (mmhal_model_add_tier()): the weights a forward pass
 * runs with. The base tier's are the model's own (layers ==
 * model->layers); another's come from its file (norms dequantized into
 * the model's allocations). Tiers are kept in order of bits per weight of
 * their matrices, lowest first.
 */
struct mm_llama_tier {
	struct mm_llama_layer *layers;
	struct mm_llama_w output, tok_embd;
	float *output_norm;
	struct mm_gguf *g;	/* another file's: its GGUF, else NULL */
	void *filebuf;		/* that file read into memory (no mmap) */
	uint64_t mat_bytes, mat_elems;	/* of the matrices, as stored */
	char wtype[8];		/* the type of most of those bytes */
	int base;
};

#define MM_LLAMA_MAX_MAPS 32	/* large buffers of a model or session */

/*
 * The allocations of a model or a session (mm_llama_alloc()): buffers of
 * 64 KiB or more are anonymous mappings (zero pages, resident when
 * written), smaller ones aligned_alloc'd and zeroed.
 */
struct mm_llama_mem {
	struct {
		void *p;
		size_t bytes;
	} maps[MM_LLAMA_MAX_MAPS];
	int nmap;
	uint64_t bytes, peak;	/* allocated now, high-water mark */
};

void *mm_llama_alloc(struct mm_llama_mem *mem, size_t bytes);
void mm_llama_free(struct mm_llama_mem *mem, void *p);

struct mmhal_model {
	struct mm_gguf *g;
	void *filebuf;		/* use_mmap == 0: the file read into memory */
	struct mm_tok *tok;	/* NULL if the file has no usable vocab */
	struct mm_llama_hp hp;
	float *inv_freq;	/* n_rot / 2: base^(-2i/n_rot) / freq_factor */

	struct mm_llama_w tok_embd, output;
	float *output_norm;
	struct mm_llama_layer *layers;
	uint64_t repacked_bytes;	/* see mm_llama_repack() */
	/* the kernel set the weights were laid out for: every session's
	 * mm_ctx uses it */
	char kernels[16];

	struct mm_llama_mem mem;	/* norms, layer tables, inv_freq */
	struct mmhal_ctx *ctx;		/* the default session */
	struct mm_llama_tier tier[MMHAL_MAX_TIERS];
	int n_tiers;
	int use_mmap, repack;		/* the load's params */
	int mapped;		/* the weights are in a mapping (a file's, or
				 * the verified copy) */
	struct mm_manifest man;	/* has_key: the manifest verified */
	/* params.trusted_key and min_version (tiers and the mmproj are
	 * checked with them too) */
	int has_key;
	unsigned char trusted_key[32];
	uint64_t min_version;
	int n_sessions;		/* made by mmhal_ctx_create(), not freed */
	double load_ms;
	struct mmhal_model_info info;
	struct mm_cuda_llama *cuda;	/* params.backend (cuda_llama.c) */
};

struct mmhal_ctx {
	const struct mmhal_model *model;
	struct mm_ctx *mm;	/* kernel set + worker threads */
	const struct mm_vec *vec;	/* row helpers of that kernel set */
	mmhal_abort_cb abort_cb;
	void *abort_arg;

	/* KV cache: per layer and KV head, n_ctx rows of head_dim elements
	 * of kv_type, kv_rs bytes each (mm_kv_at()) */
	int n_ctx, n_batch, kv_type, kv_dim;
	size_t kv_rs;
	uint8_t *kv_k, *kv_v;
	int n_past;
	int32_t *tokens;	/* n_ctx: the tokens in the cache */
	uint64_t *ids;		/* n_ctx: embedding ids (0: a token or anonymous) */
	int ctx_shift, n_keep;	/* context shift policy (mmhal_ctx_params) */
	/* precision tiers (mmhal_ctx_params): mode, fixed tier, thresholds;
	 * tier_cur: the tier the forward pass runs at */
	int tier_mode, tier_fixed, tier_cur, counted;
	float tier_thr[MMHAL_MAX_TIERS - 1];

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

	struct mm_llama_mem mem;
	struct mmhal_model_stats st;
	char err[256];
};

static inline double mm_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/*
 * Byte offset of row pos of KV head kvh in layer's K (or V) cache. Each
 * head's rows are contiguous: decode attention streams one head per
 * unit, and with the heads interleaved in a row (kv_dim elements) it read
 * 128 of every 384 bytes (SmolLM2, F16), which cost 1.6-1.9x the time of
 * contiguous rows when the cache comes from memory (one thread, 1100
 * positions x 30 layers, 6 runs).
 */
static inline size_t mm_kv_at(const struct mmhal_ctx *c, int layer, int kvh,
			      int64_t pos)
{
	return (((size_t)layer * c->model->hp.n_head_kv + kvh) * c->n_ctx +
		pos) * c->kv_rs;
}

/* llama_ctx.c: a session of m with params p (already complete: size ==
 * sizeof); kernels: the kernel set's name (NULL: MMHAL_KERNELS or the
 * CPU's best). */
int mm_llama_ctx_new(const struct mmhal_model *m,
		     const struct mmhal_ctx_params *p, const char *kernels,
		     struct mmhal_ctx **out, char *err, size_t errlen);

/* llama_ctx.c: context shift making room for n more positions
 * (params.ctx_shift); 0, or -ENOSPC with c->err set. */
int mm_llama_shift(struct mmhal_ctx *c, int n);
/* The end of a span that a cut at b must not fall inside (b itself when
 * b is not inside an embedding run or chunk); b <= n_past. */
int mm_llama_run_end(const struct mmhal_ctx *c, int b);

/* llama_attn.c: attention of the n rows of c->q (positions n_past ..)
 * over layer's cache rows into c->att; nseg from mm_llama_attn_nseg()
 * for decode (n == 1), else 1. */
int mm_llama_attn_nseg(const struct mmhal_ctx *c, int npos);
void mm_llama_attention(struct mmhal_ctx *c, int layer, int n, int nseg);

#endif /* MM_LLAMA_INT_H */

/* SPDX-License-Identifier: MIT */
/*
 * gen.h - deterministic LLaMA-family test models (mmgguf gen, tests).
 *
 * Tensor names, shapes, types and metadata are those llama.cpp's converter
 * writes for the model family; weights come from a fixed PRNG (seeded per
 * tensor name), scaled so that logits have a clear maximum.
 */
#ifndef MM_GEN_H
#define MM_GEN_H

#include <stddef.h>
#include <stdint.h>

struct mm_gen_shape {
	const char *name;	/* "smollm2-135m", "tiny", "micro" */
	const char *label;	/* general.size_label */
	uint32_t n_layer;
	uint32_t n_embd;
	uint32_t n_head;
	uint32_t n_head_kv;
	uint32_t n_ff;
	uint32_t n_vocab;
	uint32_t n_ctx;
	float rope_base;
	float rms_eps;
};

struct mm_gen_params {
	const char *shape;	/* see mm_gen_shape_find() */
	const char *tokenizer;	/* "gpt2" or "llama" */
	uint32_t type;		/* ggml type of 2-D tensors: 0 f32, 1 f16 */
	uint64_t seed;
};

const struct mm_gen_shape *mm_gen_shape_find(const char *name);
/* NULL-terminated list of shape names. */
const char *const *mm_gen_shape_names(void);

/* The ChatML template written into generated files. */
extern const char mm_gen_chatml_template[];

int mm_gen_model(const struct mm_gen_params *p, const char *path, char *err,
		 size_t errlen);
int mm_gen_model_mem(const struct mm_gen_params *p, void **buf, size_t *size,
		     char *err, size_t errlen);

#endif /* MM_GEN_H */

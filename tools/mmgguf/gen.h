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
	/* "gpt2", "llama" or "smolvlm" (gpt2 plus SmolVLM's image tokens
	 * <fake_token_around_image>, <image>, <global-img> and
	 * <row_R_col_C> for R, C in 1..6, as control tokens) */
	const char *tokenizer;
	uint32_t type;		/* ggml type of 2-D tensors: 0 f32, 1 f16 */
	uint64_t seed;
};

const struct mm_gen_shape *mm_gen_shape_find(const char *name);
/* NULL-terminated list of shape names. */
const char *const *mm_gen_shape_names(void);

/* llama.cpp's general.file_type (enum llama_ftype) for a file whose
 * matrices are of type t (Q4_K: Q4_K_M) */
uint32_t mm_gen_ftype(uint32_t t);
/* The matrix type for rows of ne0: want if its blocks fit, else
 * llama.cpp's quantizer's fallback (Q4_K -> Q5_0, Q6_K -> Q8_0, then F16) */
uint32_t mm_gen_fit(uint32_t want, int64_t ne0);
/* 1 if s ends with suffix */
int mm_gen_ends(const char *s, const char *suffix);

/* The ChatML template written into generated files. */
extern const char mm_gen_chatml_template[];

int mm_gen_model(const struct mm_gen_params *p, const char *path, char *err,
		 size_t errlen);
int mm_gen_model_mem(const struct mm_gen_params *p, void **buf, size_t *size,
		     char *err, size_t errlen);

/*
 * Multimodal projector files (general.architecture "clip"), with the keys,
 * tensor names, shapes and types llama.cpp's converter writes. Vision
 * shapes: "smolvlm-256m" (SigLIP-B/16, 512 px, idefics3 scale 4 -> 64
 * tokens of 576), "smolvlm-224" (the same tower at 224 px, scale 2 -> 49
 * tokens), "llava-mlp" (ViT-B/16 224 px with class embedding and pre-norm,
 * mlp projector into 576), "tiny" and "tiny-mlp" (32 px, 256 wide), "micro"
 * (16 px, 32 wide). Audio shapes: "whisper-tiny" (384 wide, 4 blocks, 80
 * mel bins, ultravox stack 8, SwiGLU -> 576), "tiny" (256 wide), "micro"
 * (32 wide), "tiny-30s" and "tiny-30s-s9" (1500 positions for exact-mode
 * windows, 40 wide stack 8 and 32 wide stack 9, -> 256). Both set: one file with both
 * encoders (per-encoder projector_type keys).
 */
struct mm_gen_mmproj_params {
	const char *vision;	/* vision shape, or NULL */
	const char *audio;	/* audio shape, or NULL */
	uint32_t type;		/* matrices: any type the kernels run; rows
				 * too short for its block fall back as
				 * llama.cpp's quantizer does (q4_k -> q5_0,
				 * q6_k -> q8_0, then f16) */
	uint64_t seed;
};

/* NULL-terminated lists of shape names. */
const char *const *mm_gen_vision_names(void);
const char *const *mm_gen_audio_names(void);

int mm_gen_mmproj(const struct mm_gen_mmproj_params *p, const char *path,
		  char *err, size_t errlen);
int mm_gen_mmproj_mem(const struct mm_gen_mmproj_params *p, void **buf,
		      size_t *size, char *err, size_t errlen);

#endif /* MM_GEN_H */

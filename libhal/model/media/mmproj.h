/* SPDX-License-Identifier: MIT */
/*
 * mmproj.h - the multimodal projector file (mmproj, general.architecture
 * "clip"), as llama.cpp's convert_hf_to_gguf.py writes it and its mtmd
 * library reads it: a vision encoder (SigLIP/CLIP ViT) with an idefics3 or
 * mlp projector, a Whisper-style audio encoder with an ultravox projector,
 * or both in one file.
 *
 * Loading validates every key this runtime reads (exact GGUF type, range)
 * and every tensor (presence, shape, type) and keeps the weights in the
 * file's mapping. In-library interface (not installed).
 *
 * Threading: a loaded struct mm_mmproj is immutable; any number of threads
 * may call the const accessors at once. mm_mmproj_free() must not run
 * concurrently with any other use of the handle.
 *
 * Errors: 0 or a negative errno: -ENOENT a key or tensor is missing,
 * -EPROTO a key has the wrong GGUF type, -ENOTSUP an unsupported projector
 * or tensor type, -EINVAL a value out of range or a wrong shape (and what
 * mm_gguf_open() returns). err (when errlen > 0) receives one line naming
 * the key, tensor or projector type and the problem.
 *
 * Lifetime: weight pointers point into the mapping and die with
 * mm_mmproj_free().
 */
#ifndef MM_MMPROJ_H
#define MM_MMPROJ_H

#include <stddef.h>
#include <stdint.h>

#ifndef MM_MODEL_API
#define MM_MODEL_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

struct mm_gguf;
struct mm_mmproj;

enum mm_mmproj_type {
	MM_MMPROJ_NONE = 0,
	MM_MMPROJ_IDEFICS3,	/* "idefics3": pixel shuffle + mm.model.fc */
	MM_MMPROJ_MLP,		/* "mlp": mm.0, GELU, mm.2 (LLaVA) */
	MM_MMPROJ_ULTRAVOX,	/* "ultravox": frame stacking + mm.a.mlp.* */
};

/* Activation of an encoder's FFN. */
enum mm_mmproj_act {
	MM_MMPROJ_ACT_GELU_QUICK = 0,	/* neither clip.use_gelu nor use_silu */
	MM_MMPROJ_ACT_GELU,		/* clip.use_gelu: tanh form */
	MM_MMPROJ_ACT_GELU_ERF,		/* Whisper-style audio encoders */
	MM_MMPROJ_ACT_SILU,		/* clip.use_silu */
};

/* One weight in the mapping. Unused dims of ne are 1. */
struct mm_mmproj_w {
	const char *name;	/* NULL: optional tensor absent */
	uint32_t type;		/* ggml type id */
	uint32_t n_dims;
	int64_t ne[4];
	const void *data;
	uint64_t bytes;
};

/* A pre-norm transformer block (v.blk.N / a.blk.N). Bias pointers of the
 * linear layers may be absent (name NULL): Whisper has no attn_k bias. */
struct mm_mmproj_block {
	struct mm_mmproj_w ln1_w, ln1_b;
	struct mm_mmproj_w q_w, q_b, k_w, k_b, v_w, v_b, o_w, o_b;
	struct mm_mmproj_w ln2_w, ln2_b;
	struct mm_mmproj_w up_w, up_b, down_w, down_b;
};

struct mm_mmproj_vision {
	enum mm_mmproj_type proj;	/* IDEFICS3 or MLP */
	enum mm_mmproj_act act;
	uint32_t image_size, patch_size;
	uint32_t n_embd, n_ff, n_layer, n_head;
	/* blocks the encoder runs: n_layer, but n_layer - 1 for mlp
	 * (clip.cpp's llava graph takes the second-to-last block's output,
	 * LLaVA's vision_feature_layer -2; the last block is loaded and
	 * not run) */
	uint32_t n_run;
	uint32_t proj_dim;		/* clip.vision.projection_dim */
	uint32_t scale_factor;		/* idefics3 pixel shuffle; else 1 */
	float eps;
	float mean[3], std[3];
	uint32_t n_patches;		/* (image_size / patch_size)^2 */
	uint32_t n_pos;			/* + 1 with a class embedding */
	uint32_t n_tokens;		/* embeddings per image out */
	uint32_t n_mm_hidden;		/* mlp: mm.0 width; else 0 */
	uint32_t n_out;			/* projector output width */
	uint32_t preproc_image_size;	/* idefics3: clip.vision.
					 * preproc_image_size, the tiled
					 * image's longer side; 0 absent */
	struct mm_mmproj_w patch_w, patch_b, pos, class_embd;
	struct mm_mmproj_w pre_ln_w, pre_ln_b, post_ln_w, post_ln_b;
	struct mm_mmproj_block *blk;	/* n_layer */
	struct mm_mmproj_w fc;			/* idefics3 */
	struct mm_mmproj_w mm0_w, mm0_b, mm2_w, mm2_b;	/* mlp */
};

struct mm_mmproj_audio {
	enum mm_mmproj_type proj;	/* ULTRAVOX */
	enum mm_mmproj_act act;
	uint32_t n_mel;
	uint32_t n_embd, n_ff, n_layer, n_head;
	uint32_t proj_dim;		/* clip.audio.projection_dim */
	uint32_t stack_factor;
	float eps;
	uint32_t n_pos;			/* a.position_embd rows (1500) */
	uint32_t n_mm_hidden;		/* mm.a.mlp.1 width */
	uint32_t n_mm_mid;		/* mm.a.mlp.2 input width */
	int swiglu;			/* n_mm_mid == n_mm_hidden / 2 */
	uint32_t n_out;			/* projector output width */
	struct mm_mmproj_w conv1_w, conv1_b, conv2_w, conv2_b, pos;
	struct mm_mmproj_w post_ln_w, post_ln_b;
	struct mm_mmproj_block *blk;	/* n_layer */
	struct mm_mmproj_w norm_pre, mlp1_w, norm_mid, mlp2_w;
};

MM_MODEL_API int mm_mmproj_load(const char *path, struct mm_mmproj **out,
				char *err, size_t errlen);
/* With a 32-byte Ed25519 key pk (NULL: none), the file is verified against
 * path.sig first (mm_gguf_open_verified(), sign.h). */
MM_MODEL_API int mm_mmproj_load_verified(const char *path,
					 const unsigned char *pk,
					 uint64_t min_version,
					 struct mm_mmproj **out, char *err,
					 size_t errlen);
/* Parses data in place: it must stay valid until mm_mmproj_free(). */
MM_MODEL_API int mm_mmproj_load_mem(const void *data, size_t size,
				    struct mm_mmproj **out, char *err,
				    size_t errlen);
MM_MODEL_API void mm_mmproj_free(struct mm_mmproj *p);
/*
 * Repacks p's F32/F16/BF16 matmul weights (every block's Q/K/V/O and FFN
 * up/down, the projector's fc / mm.0 / mm.2 / mm.a.mlp.1 / mm.a.mlp.2;
 * rows that are whole blocks) to type, which must be MM_TYPE_Q8_0, in
 * memory p owns until mm_mmproj_free(): the encoders then run the int8
 * kernels, which quantize the activations too (Q8_0 rounding on both
 * sides; vision_bench reports the cosine against the float path). The
 * patch embedding, position embeddings, norms and biases stay. Call it
 * after loading, before any encode. *n_repacked (may be NULL): how many
 * weights. Returns 0, -EINVAL (another type) or -ENOMEM (p keeps the
 * weights repacked so far, all valid) with err set.
 */
MM_MODEL_API int mm_mmproj_repack(struct mm_mmproj *p, uint32_t type,
				  size_t *n_repacked, char *err, size_t errlen);

/* NULL when the file has no such encoder. */
MM_MODEL_API const struct mm_mmproj_vision *
mm_mmproj_vision(const struct mm_mmproj *p);
MM_MODEL_API const struct mm_mmproj_audio *
mm_mmproj_audio(const struct mm_mmproj *p);
MM_MODEL_API const struct mm_gguf *mm_mmproj_gguf(const struct mm_mmproj *p);

/* "idefics3", "mlp", "ultravox" or "none". */
MM_MODEL_API const char *mm_mmproj_type_name(enum mm_mmproj_type t);

/*
 * Checks that every projector's output width equals the LLM's embedding
 * width n_embd: 0 or -EINVAL with a message naming the projector tensor
 * and both widths.
 */
MM_MODEL_API int mm_mmproj_check_llm(const struct mm_mmproj *p,
				     uint32_t n_embd, char *err,
				     size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* MM_MMPROJ_H */

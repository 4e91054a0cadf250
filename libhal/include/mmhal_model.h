/* SPDX-License-Identifier: MIT */
/*
 * mmhal_model.h - run LLaMA-family language models from GGUF files on the
 * CPU (quantized weights used in place from the mapped file).
 *
 * Conventions (as in mmhal.h):
 *
 *  - Objects are opaque handles: struct mmhal_model (mmhal_model_load() /
 *    mmhal_model_free()) and struct mmhal_sampler (mmhal_sampler_create()
 *    / mmhal_sampler_free()); the free functions accept NULL.
 *  - mmhal_model_default_params() and mmhal_sampler_default_params()
 *    return parameter structs by value; change only the fields you need.
 *  - Functions that can fail return 0 or a negative errno; on failure,
 *    output arguments are left zeroed/NULL. A model keeps a one-line
 *    message about its last failure (mmhal_model_error()).
 *
 * Threading:
 *
 *  - A model handle may be used from one thread at a time; the caller
 *    serialises every call on it (eval, tokenizer passthroughs, stats...).
 *    Distinct model handles are independent, even for the same file.
 *  - While it runs, an evaluation uses its session's own worker threads
 *    (params.n_threads in all, the calling thread included; the default
 *    session's for mmhal_model_eval()). The workers live as long as the
 *    session and sleep when idle; no callback runs on them (the abort
 *    callback runs on the calling thread).
 *  - A sampler is used by one thread at a time; distinct samplers are
 *    independent. mmhal_model_generate()'s callback runs on the calling
 *    thread and must not call into the same model.
 *  - A session (struct mmhal_ctx) is used by one thread at a time;
 *    distinct sessions of one model may run at once on different threads
 *    (the model's weights are only read). A session must be freed before
 *    its model. The default session follows the model handle's rule.
 *  - A loaded mmproj is only read: mmhal_encode_image()/_audio() may run
 *    on several threads at once on one mmproj (each call uses its own
 *    worker threads and, for audio that needs converting, its own
 *    resampler). mmhal_mmproj_set_calibration() and
 *    mmhal_mmproj_calib_update() change it: no encode may run meanwhile. A chunk is immutable once made and may be evaluated
 *    into any session of the model its mmproj was loaded for.
 *  - The library installs no signal handlers.
 *
 * Sessions: a loaded model (weights, tokenizer) is shared by any number of
 * sessions (struct mmhal_ctx, like llama.cpp's llama_context), each with
 * its own KV cache, activations, worker threads, abort callback and
 * stats. mmhal_model_load() also creates one default session
 * (mmhal_model_ctx()); the mmhal_model_eval()/_generate()/_n_past()/...
 * calls act on it.
 *
 * Multimodal: an mmproj file (struct mmhal_mmproj, loaded beside the
 * model as llama.cpp's mtmd does) turns an image or an audio window into a
 * chunk (struct mmhal_chunk): the model's marker tokens and the encoder's
 * embeddings in decoder order, evaluated into a session like text.
 *
 * Numerics: the decoder is llama.cpp's "llama" graph (RMSNorm, RoPE on
 * adjacent pairs, grouped-query attention with f32 softmax, SwiGLU FFN,
 * tied output when output.weight is absent). Activations are quantized on
 * the fly for quantized weights (Q8_0 for Q4_0/Q8_0, Q8_K for K-quants),
 * as ggml does; the KV cache is F16 or Q8_0.
 */
#ifndef MMHAL_MODEL_H
#define MMHAL_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "mmhal.h"

#ifdef __cplusplus
extern "C" {
#endif

struct mmhal_model;
struct mmhal_sampler;

/* KV cache element type (ggml type ids). */
enum mmhal_kv_type {
	MMHAL_KV_F32 = 0,	/* sessions only (mmhal_ctx_create()) */
	MMHAL_KV_F16 = 1,
	MMHAL_KV_Q8_0 = 8,	/* needs a head dimension multiple of 32 */
};

/*
 * Size-versioned (as every params struct of libmmhal: common/mm_params.h's
 * rule): take mmhal_model_default_params(), which sets @size, and change
 * fields. A smaller (older) @size gets the defaults for the rest; a
 * larger one is accepted only if the bytes this library does not know are
 * zero. @reserved must be zero.
 */
struct mmhal_model_params {
	uint32_t size;	/* sizeof(struct mmhal_model_params) */
	int n_ctx;	/* KV cache positions; <= 0: min(context_length, 4096) */
	int n_batch;	/* tokens per prefill step; <= 0: 512 */
	int n_threads;	/* <= 0: online CPUs */
	int kv_type;	/* enum mmhal_kv_type */
	/* 1: map the file (weights in place); 0: read it. Without effect
	 * with trusted_key: a verified file is always read into a private
	 * copy, which is hashed and then used */
	int use_mmap;
	/* 1 (default): Q4_0, Q5_0, Q4_K (and with the AVX2 kernels Q8_0)
	 * matrices are rearranged in place at load into the layout the
	 * CPU's kernels read fastest (x86: 8 rows interleaved), on the
	 * mapping's copy-on-write pages, so the file is not changed and no
	 * second copy is made; 0: all weights are used as stored. */
	int repack;
	/* Integrity (Documentation/model-store.rst): a 32-byte Ed25519
	 * public key. When set, the file must come with a detached
	 * signature PATH.sig by this key over its size and BLAKE2b-256,
	 * of a version >= min_version; the signature is checked before
	 * the file is opened, then the file (a regular file of the signed
	 * size, opened O_NONBLOCK) is read into private read-only memory,
	 * hashed, and only that copy is parsed and used: rewriting or
	 * truncating the file afterwards changes nothing. So are the files
	 * of mmhal_model_add_tier(). NULL (default): no check. */
	const unsigned char *trusted_key;
	uint64_t min_version;
	/* enum mmhal_backend: where the decoder's weight matrix products
	 * run (Documentation/cuda.rst); mmhal_model_info() says which runs
	 * and why the CUDA one does not */
	int backend;
	uint32_t reserved[8];
};

enum mmhal_backend {
	MMHAL_BACKEND_AUTO = 0,	/* cuda when usable, else cpu (default) */
	MMHAL_BACKEND_CPU = 1,
	MMHAL_BACKEND_CUDA = 2,	/* refuse the load when CUDA is not usable */
};

MMHAL_API struct mmhal_model_params mmhal_model_default_params(void);

/**
 * mmhal_model_load() - open a GGUF file of a "llama" architecture model
 * @path: file.
 * @params: NULL for the defaults.
 * @out: the model, on success.
 * @err, @errlen: a one-line message naming the key, tensor or problem on
 *   failure (may be NULL/0).
 *
 * Return: 0; -EINVAL malformed file or bad parameter, -ENOTSUP another
 * architecture or an unsupported weight/KV type, -ENOENT a missing key or
 * tensor (or file), -ENOMEM, or any error of open(2)/mmap(2). With
 * params->trusted_key: -ENOKEY no PATH.sig, -EKEYREJECTED signed by
 * another key or a bad signature, -EBADMSG the file is not the signed one
 * (altered, truncated, another file's signature), -ESTALE its version is
 * below params->min_version; err names the failure.
 */
MMHAL_API int mmhal_model_load(const char *path,
			       const struct mmhal_model_params *params,
			       struct mmhal_model **out, char *err,
			       size_t errlen);
MMHAL_API void mmhal_model_free(struct mmhal_model *model);

/* The message of the model's last failure ("" if none). */
MMHAL_API const char *mmhal_model_error(const struct mmhal_model *model);

#define MMHAL_MODEL_MAX_WTYPES 8

struct mmhal_model_info {
	char arch[32];		/* "llama" */
	char name[64];		/* general.name, may be empty */
	int n_vocab;
	int n_embd;
	int n_layer;
	int n_head;
	int n_head_kv;
	int n_ff;
	int n_rot;		/* RoPE dimensions per head */
	int n_ctx;		/* the default session's KV cache size */
	int n_ctx_train;	/* llama.context_length */
	int n_threads;		/* the default session's */
	int kv_type;		/* enum mmhal_kv_type, the default session's */
	int tied_output;	/* 1 if output.weight is absent */
	uint64_t file_bytes;
	uint64_t weight_bytes;	/* all tensor data */
	/* bytes of weights read for one decoded token (every matrix once,
	 * one embedding row): the memory traffic of decode */
	uint64_t weight_bytes_per_token;
	/* the default session's KV cache, allocated at load; its pages
	 * become resident as the context fills */
	uint64_t kv_bytes;
	/* weight bytes rearranged at load (params.repack) */
	uint64_t repacked_bytes;
	/* weight types by total bytes, most first: ggml ids and names */
	int n_wtypes;
	uint32_t wtype[MMHAL_MODEL_MAX_WTYPES];
	uint64_t wtype_bytes[MMHAL_MODEL_MAX_WTYPES];
	char wtype_name[MMHAL_MODEL_MAX_WTYPES][8];
	char kernels[16];	/* kernel set: "avx512vnni", "avx2", ... */
	char backend[8];	/* "cpu" or "cuda" (params.backend) */
	/* cuda: the device and what runs there; cpu: why CUDA does not
	 * (the back end's error, or "backend cpu requested") */
	char backend_note[192];
};

MMHAL_API int mmhal_model_info(const struct mmhal_model *model,
			       struct mmhal_model_info *out);

/*
 * How a model loaded with params.trusted_key was verified and what it uses
 * (Documentation/model-store.rst):
 *   MMHAL_VERIFY_NONE    loaded without a key (nothing verified)
 *   MMHAL_VERIFY_COPY    the file read into private anonymous memory,
 *                        BLAKE2b-256-hashed and compared; the model uses
 *                        that read-only copy
 *   MMHAL_VERIFY_VERITY  the file has fs-verity on and its fs-verity
 *                        digest is the signed one (FS_IOC_MEASURE_VERITY);
 *                        the model uses a mapping of the file, each page
 *                        checked by the kernel when it is read in
 */
#define MMHAL_VERIFY_NONE	0
#define MMHAL_VERIFY_COPY	1
#define MMHAL_VERIFY_VERITY	2

struct mmhal_model_verify {
	uint32_t size;		/* set by the caller: sizeof() */
	int32_t how;		/* MMHAL_VERIFY_* */
	uint64_t version;	/* the signed version */
	uint64_t file_bytes;	/* the signed size */
	char name[64];		/* the signed name */
	char hash[65];		/* the signed BLAKE2b-256, hex */
	char verity[65];	/* the signed fs-verity digest (SHA-256), hex;
				 * "" for a format 1 signature (none) */
	char how_name[16];	/* "none", "copy" or "fs-verity" */
	uint32_t reserved[8];
};

/*
 * Fills min(out->size, sizeof(*out)) bytes of *out. 0; -EINVAL for a
 * NULL model or out, or a size below the first field's end.
 */
MMHAL_API int mmhal_model_verification(const struct mmhal_model *model,
				       struct mmhal_model_verify *out);

/* Tokenizer (the model file's vocabulary). */
struct mmhal_chat_msg {
	const char *role;	/* "system", "user", "assistant" */
	const char *content;
};

/* Encodes text; -ENOSPC if more than max ids (*n_out says how many). */
MMHAL_API int mmhal_model_tokenize(const struct mmhal_model *model,
				   const char *text, size_t len, int add_bos,
				   int parse_special, int32_t *ids, int max,
				   int *n_out);
/* Decodes ids to UTF-8 text, NUL-terminated; -ENOSPC if it did not fit. */
MMHAL_API int mmhal_model_detokenize(const struct mmhal_model *model,
				     const int32_t *ids, int n, char *buf,
				     size_t cap, size_t *len_out);
/* Formats a conversation with the model's chat template (ChatML); encode
 * the result with parse_special = 1. -ENOTSUP for other templates. */
MMHAL_API int mmhal_model_chat_format(const struct mmhal_model *model,
				      const struct mmhal_chat_msg *msgs,
				      int n, int add_generation_prompt,
				      char *buf, size_t cap, size_t *len_out);
MMHAL_API int32_t mmhal_model_token_bos(const struct mmhal_model *model);
MMHAL_API int32_t mmhal_model_token_eos(const struct mmhal_model *model);
/* 1 if the token ends a turn (EOS, EOT, <|im_end|>). */
MMHAL_API int mmhal_model_token_is_eog(const struct mmhal_model *model,
				       int32_t token);

/**
 * mmhal_model_eval() - run tokens through the decoder
 * @tokens, @n: appended at positions n_past .. n_past + n - 1 of the KV
 *   cache; n > 1 is a batched prefill (matrix-matrix), n == 1 one decode
 *   step (matrix-vector).
 * @logits_last: if not NULL, receives the n_vocab logits after the last
 *   token (mmhal_model_logits() has them too).
 *
 * Return: 0; -EINVAL bad arguments or token id (nothing evaluated);
 * -ENOSPC if n_past + n > n_ctx: the context is full, nothing evaluated
 * (mmhal_model_error() says so; use mmhal_model_reset() or
 * mmhal_model_truncate()); -ENOMEM.
 */
MMHAL_API int mmhal_model_eval(struct mmhal_model *model,
			       const int32_t *tokens, int n,
			       float *logits_last);
/* Logits after the last evaluated token, or NULL if none. */
MMHAL_API const float *mmhal_model_logits(const struct mmhal_model *model);
/* Tokens in the KV cache. */
MMHAL_API int mmhal_model_n_past(const struct mmhal_model *model);
/* The tokens in the KV cache (n_past of them; MMHAL_TOKEN_EMBD where an
 * embedding row was evaluated); valid until the next eval. */
MMHAL_API const int32_t *mmhal_model_tokens(const struct mmhal_model *model);
/* Empties the KV cache. */
MMHAL_API void mmhal_model_reset(struct mmhal_model *model);
/* Keeps the first n_keep positions; -EINVAL if n_keep > n_past or < 0. */
MMHAL_API int mmhal_model_truncate(struct mmhal_model *model, int n_keep);

/* Sampler. */
/* Size-versioned like mmhal_model_params: start from
 * mmhal_sampler_default_params(); @reserved must be zero. */
struct mmhal_sampler_params {
	uint32_t size;		/* sizeof(struct mmhal_sampler_params) */
	float temperature;	/* <= 0: greedy (argmax after penalties) */
	int top_k;		/* <= 0: whole vocabulary */
	float top_p;		/* >= 1: off */
	float repeat_penalty;	/* 1: off; > 1 lowers repeated tokens */
	int repeat_last_n;	/* history window for the penalty */
	uint64_t seed;
	uint32_t reserved[6];
};

/* temperature 0.8, top_k 40, top_p 0.95, repeat_penalty 1.0,
 * repeat_last_n 64, seed 0 */
MMHAL_API struct mmhal_sampler_params mmhal_sampler_default_params(void);
MMHAL_API int mmhal_sampler_create(const struct mmhal_sampler_params *params,
				   struct mmhal_sampler **out);
MMHAL_API void mmhal_sampler_free(struct mmhal_sampler *s);
/* Restarts the random sequence from seed. */
MMHAL_API void mmhal_sampler_reseed(struct mmhal_sampler *s, uint64_t seed);

/**
 * mmhal_sampler_sample() - pick the next token
 * @logits: n_vocab values (not modified).
 * @history, @n_history: previous tokens (for the repetition penalty; may
 *   be NULL/0). Negative entries (MMHAL_TOKEN_EMBD) are skipped: they are
 *   not penalised and repeat_last_n counts token ids only.
 *
 * Order, as llama.cpp's default chain: repetition penalty (divide a
 * positive logit, multiply a negative one), then greedy if temperature
 * <= 0, else top-k, top-p (on the softmax of the penalised logits),
 * temperature, and a draw from the seeded generator. The same seed,
 * inputs and call sequence give the same tokens.
 *
 * Return: the token id (>= 0), or -EINVAL / -ENOMEM.
 */
MMHAL_API int32_t mmhal_sampler_sample(struct mmhal_sampler *s,
				       const float *logits, int n_vocab,
				       const int32_t *history, int n_history);

/* Called for each generated token with its text; non-zero stops. */
typedef int (*mmhal_token_cb)(int32_t token, const char *piece,
			      size_t len, void *arg);

#define MMHAL_GEN_IGNORE_EOG	0x1	/* do not stop at end-of-turn */

/**
 * mmhal_model_generate() - evaluate a prompt, then sample tokens
 * @prompt, @n_prompt: appended to the KV cache (may be 0 tokens if the
 *   cache already holds some).
 * @n_predict: at most this many new tokens.
 * @sampler: NULL for greedy.
 * @out: if not NULL, receives up to n_predict generated tokens.
 * @cb, @arg: per token (may be NULL).
 * @n_out: number of tokens generated.
 *
 * Stops at an end-of-turn token (not emitted) unless flags has
 * MMHAL_GEN_IGNORE_EOG, when cb returns non-zero, or at n_predict.
 * The repetition penalty sees every token in the KV cache.
 *
 * Return: 0, or an error of mmhal_model_eval() (-ENOSPC: context full;
 * the tokens generated so far are in out / *n_out).
 */
MMHAL_API int mmhal_model_generate(struct mmhal_model *model,
				   const int32_t *prompt, int n_prompt,
				   int n_predict, struct mmhal_sampler *sampler,
				   unsigned flags, int32_t *out,
				   mmhal_token_cb cb, void *arg, int *n_out);

/* Precision tiers of a model: see mmhal_model_add_tier(). */
#define MMHAL_MAX_TIERS		3
#define MMHAL_TIER_TOP		0
#define MMHAL_TIER_FIXED	1
#define MMHAL_TIER_CONFIDENCE	2

/* Accounting: per session (mmhal_ctx_stats()); mmhal_model_stats() gives
 * the default session's, with the model's own allocations in alloc_bytes.
 * An evaluation stopped by the abort callback is not counted. */
struct mmhal_model_stats {
	double load_ms;			/* mmhal_model_load() (the model's) */
	double prefill_ms;		/* all evals with n > 1 */
	int64_t prefill_tokens;
	int64_t prefill_calls;
	double decode_ms;		/* all evals with n == 1 */
	int64_t decode_tokens;
	double decode_last_ms;		/* the last single-token eval */
	double decode_min_ms;
	double decode_max_ms;
	double sample_ms;		/* in mmhal_model_generate() */
	int64_t sample_tokens;
	uint64_t kv_bytes;		/* KV cache */
	uint64_t alloc_bytes;		/* our allocations now: KV, activations
					 * (allocated, not all resident) */
	uint64_t alloc_peak_bytes;	/* high-water mark of alloc_bytes */
	uint64_t peak_rss_bytes;	/* process, getrusage ru_maxrss */
	uint64_t file_bytes;
	int n_past;
	int n_ctx;
	/* context shift (mmhal_ctx_params.ctx_shift): shifts done and
	 * positions they discarded */
	int64_t shifts;
	int64_t shift_discarded;
	/* positions kept by mmhal_ctx_reuse_prefix() instead of being
	 * evaluated again */
	int64_t reused_positions;
	/* precision tiers (0: the lowest precision): decode steps whose
	 * logits were kept at each tier; forward passes of decode steps run
	 * at each tier (kept or recomputed); steps recomputed at a higher
	 * tier (each recompute counted once per tier climbed) */
	int64_t tier_steps[MMHAL_MAX_TIERS];
	int64_t tier_evals[MMHAL_MAX_TIERS];
	int64_t tier_recomputes;
};

/*
 * Precision tiers: a model may run its matrices at up to MMHAL_MAX_TIERS
 * precisions, e.g. Q4_K, Q8_0 and F16 copies of the same weights (the
 * base file plus files mmhal_model_add_tier() loads). A forward pass
 * runs with the weights of one tier's file: the matrices (attn_q/k/v/
 * output, ffn_gate/up/down of every layer, the output matrix), and also
 * its token embedding row and norms (a row and vectors: equal in files
 * quantized from one source, and then a pass at a tier is exactly a pass
 * of its file alone). Tiers are numbered by bits per weight of their
 * matrices, 0 the lowest; the base is one of them.
 *
 * A session's params.tier_mode chooses:
 *   MMHAL_TIER_TOP (0, default)  every evaluation at the highest tier
 *   MMHAL_TIER_FIXED             every evaluation at params.tier
 *   MMHAL_TIER_CONFIDENCE        prefill (evaluations of more than one
 *     position, embedding rows) at the highest tier; each single-token
 *     evaluation (a decode step) first at tier 0; when the top-1
 *     probability of the step's logits (softmax at temperature 1) is below
 *     params.tier_threshold[t], the position is evaluated again at tier
 *     t + 1 (its K/V rows are overwritten), up to the highest tier, whose
 *     logits are always kept. The thresholds 0.92 / 0.75 make three tiers
 *     the seeds' INT4 (>= 0.92), INT8 (0.75 .. 0.92) and F16 (< 0.75).
 *     stats.tier_steps / tier_evals / tier_recomputes count it.
 * The K/V rows of a position are those of the tier its logits were kept
 * at; later positions attend to them whatever their own tier.
 */

/**
 * mmhal_model_add_tier() - load another precision of the model's matrices
 * @path: a GGUF of the same model: the same architecture, every
 *   hyperparameter, tensor shape and tokenizer key equal to the base's,
 *   and output.weight present in both or in neither (tied); the matrix
 *   types and their bits per weight differ (two tiers of one precision are
 *   refused). The file is mapped or read as the model was
 *   (params.use_mmap) and its matrices rearranged as the model's were
 *   (params.repack).
 *
 * Call it before creating sessions (mmhal_ctx_create()); the default
 * session uses the tiers in its mode (MMHAL_TIER_TOP). Tier numbers may
 * change with each tier added (they follow bits per weight).
 *
 * Return: 0; -EINVAL the file is not the same model (the message names
 * the first difference: architecture, hyperparameter, tensor, tokenizer
 * key) or has the precision of a tier already there; -ENOSPC already
 * MMHAL_MAX_TIERS tiers; -EBUSY sessions exist; errors of loading it.
 */
MMHAL_API int mmhal_model_add_tier(struct mmhal_model *model,
				   const char *path, char *err,
				   size_t errlen);
MMHAL_API int mmhal_model_n_tiers(const struct mmhal_model *model);

struct mmhal_tier_info {
	int base;			/* 1: the model's own file */
	double bits_per_weight;		/* of its matrices, as stored */
	uint64_t matrix_bytes;
	char wtype[8];			/* type of most of those bytes */
	uint32_t reserved[8];
};

/* Return: 0, or -EINVAL (no such tier: out zeroed). */
MMHAL_API int mmhal_model_tier_info(const struct mmhal_model *model, int tier,
				    struct mmhal_tier_info *out);

MMHAL_API int mmhal_model_stats(const struct mmhal_model *model,
				struct mmhal_model_stats *out);
/* Zeroes the timings and token counts (not load_ms or memory). */
MMHAL_API void mmhal_model_stats_reset(struct mmhal_model *model);

/*
 * Sessions.
 *
 * Token ids in a session's cache: an embedding row (an image or audio
 * position) is recorded as MMHAL_TOKEN_EMBD; the sampler's repetition
 * penalty ignores it.
 */
struct mmhal_ctx;

#define MMHAL_TOKEN_EMBD	(-1)

/* Polled between layers of an evaluation; non-zero stops it: the call
 * returns -ECANCELED and the session keeps the positions evaluated before
 * the interrupted batch. */
typedef int (*mmhal_abort_cb)(void *arg);

struct mmhal_ctx_params {
	uint32_t size;		/* sizeof(struct mmhal_ctx_params) */
	int n_ctx;		/* as mmhal_model_params */
	int n_batch;
	int n_threads;
	int kv_type;
	mmhal_abort_cb abort_cb;	/* may be NULL */
	void *abort_arg;
	/* 1: context shift (see below); 0 (default): an eval that does not
	 * fit returns -ENOSPC */
	int ctx_shift;
	/* context shift: positions kept at the start (the system prompt) */
	int n_keep;
	/* precision tiers (see mmhal_model_add_tier()): MMHAL_TIER_TOP
	 * (default), MMHAL_TIER_FIXED or MMHAL_TIER_CONFIDENCE */
	int tier_mode;
	int tier;		/* MMHAL_TIER_FIXED: 0 .. n_tiers - 1 */
	/* MMHAL_TIER_CONFIDENCE: a decode step at tier i (i < n_tiers - 1)
	 * is kept when the top-1 probability of its logits is at least
	 * tier_threshold[i], else recomputed at tier i + 1; finite, >= 0
	 * (above 1: never kept). Defaults 0.92 and 0.75. */
	float tier_threshold[MMHAL_MAX_TIERS - 1];
	uint32_t reserved[2];	/* zero */
};

MMHAL_API struct mmhal_ctx_params mmhal_ctx_default_params(void);

/*
 * Context shift (params.ctx_shift = 1): when an eval (or a generate step)
 * of n positions does not fit (n_past + n > n_ctx), the session keeps the
 * first n_keep positions, discards the oldest half of the rest (or more
 * if n needs it), moves the remaining K/V rows down and rotates their
 * keys back by the distance moved (RoPE is applied before caching; the
 * rows are converted to f32, rotated and stored again in the cache's
 * type), then evaluates. tokens[], the embedding IDs and n_past follow;
 * stats.shifts and stats.shift_discarded count it. The later positions
 * keep what they computed while the discarded ones were in the context
 * (as llama.cpp's context shift).
 *
 * Embedding runs are never cut: a boundary (n_keep or the end of the
 * discarded span) that falls inside a run (adjacent MMHAL_TOKEN_EMBD
 * positions of one id, see mmhal_ctx_eval_embd_id(); anonymous rows, id
 * 0, form one run) moves forward to the run's end (n_keep then keeps the
 * whole run). Runs of one non-zero id separated by at most
 * MMHAL_CHUNK_GAP tokens (an idefics3 image's tiles and the markers
 * between them) count as one run. Marker tokens before a chunk's first
 * run or after its last are ordinary tokens and may be discarded apart
 * from it.
 *
 * Still -ENOSPC: n > n_ctx - n_keep (after the n_keep boundary moved),
 * or nothing after n_keep to discard.
 */
#define MMHAL_CHUNK_GAP	8

/**
 * mmhal_ctx_create() - a new session of a loaded model
 * @params: NULL for the defaults; size must be set (a caller built against
 *   an older header passes its smaller size; fields past it take their
 *   defaults).
 *
 * The session's kernels are those the model's weights were laid out for
 * at load (see mmhal_model_params.repack).
 *
 * Return: 0; -EINVAL bad parameter (message names it: size, reserved,
 * kv_type, n_ctx > 2^20, n_threads > 1024, tier_mode, tier not one of the
 * model's, a threshold not finite or negative), -ENOTSUP KV type (Q8_0 with a
 * head dimension not a multiple of 32), -ENOMEM.
 */
MMHAL_API int mmhal_ctx_create(struct mmhal_model *model,
			       const struct mmhal_ctx_params *params,
			       struct mmhal_ctx **out, char *err,
			       size_t errlen);
MMHAL_API void mmhal_ctx_free(struct mmhal_ctx *ctx);
/* The model's default session (never NULL for a loaded model). */
MMHAL_API struct mmhal_ctx *mmhal_model_ctx(struct mmhal_model *model);
MMHAL_API const struct mmhal_model *mmhal_ctx_model(const struct mmhal_ctx *ctx);
/* The message of the session's last failure ("" if none). */
MMHAL_API const char *mmhal_ctx_error(const struct mmhal_ctx *ctx);

/* As mmhal_model_eval() etc., on this session. */
MMHAL_API int mmhal_ctx_eval(struct mmhal_ctx *ctx, const int32_t *tokens,
			     int n, float *logits_last);
/**
 * mmhal_ctx_eval_embd() - run embeddings through the decoder
 * @embd: n rows of n_embd floats (the model's embedding width), put at
 *   positions n_past .. n_past + n - 1 in place of token embeddings.
 *
 * tokens[] records MMHAL_TOKEN_EMBD for these positions.
 *
 * Return: as mmhal_model_eval(); -EINVAL if n_embd is not the model's or
 * a value is not finite (nothing evaluated).
 */
MMHAL_API int mmhal_ctx_eval_embd(struct mmhal_ctx *ctx, const float *embd,
				  int n, int n_embd, float *logits_last);
/*
 * mmhal_ctx_eval_embd_id() - as mmhal_ctx_eval_embd(), with an identity
 * @id: non-zero: what the rows are (e.g. a hash of a chunk's embeddings),
 *   recorded for each of the n positions; the same id must always stand
 *   for the same rows in the same order (a chunk evaluated in pieces
 *   passes its id with each piece). mmhal_ctx_eval_embd() records 0:
 *   anonymous rows, never reused.
 *
 * Token positions record id 0. mmhal_ctx_ids() returns the ids.
 */
MMHAL_API int mmhal_ctx_eval_embd_id(struct mmhal_ctx *ctx,
				     const float *embd, int n, int n_embd,
				     uint64_t id, float *logits_last);
/* The ids of the positions in the cache (n_past), valid until the next
 * eval. */
MMHAL_API const uint64_t *mmhal_ctx_ids(const struct mmhal_ctx *ctx);
/*
 * mmhal_ctx_common_prefix() - positions of a sequence already in the cache
 * @tokens, @ids: n positions as tokens[] / mmhal_ctx_ids() would record
 *   them (ids may be NULL: then no embedding position matches).
 *
 * Return: the number of leading positions equal in both: the same token,
 * and for MMHAL_TOKEN_EMBD the same non-zero id (>= 0), or -EINVAL.
 */
MMHAL_API int mmhal_ctx_common_prefix(const struct mmhal_ctx *ctx,
				      const int32_t *tokens,
				      const uint64_t *ids, int n);
/*
 * mmhal_ctx_reuse_prefix() - keep the cache's common prefix with a
 * sequence, so that only the rest is evaluated
 *
 * Truncates the cache to the common prefix (at most n - 1 positions, so
 * that evaluating the rest gives the last position's logits) and adds it
 * to stats.reused_positions.
 *
 * Return: the positions kept (>= 0), or -EINVAL.
 */
MMHAL_API int mmhal_ctx_reuse_prefix(struct mmhal_ctx *ctx,
				     const int32_t *tokens,
				     const uint64_t *ids, int n);
MMHAL_API const float *mmhal_ctx_logits(const struct mmhal_ctx *ctx);
MMHAL_API int mmhal_ctx_n_past(const struct mmhal_ctx *ctx);
MMHAL_API const int32_t *mmhal_ctx_tokens(const struct mmhal_ctx *ctx);
MMHAL_API void mmhal_ctx_reset(struct mmhal_ctx *ctx);
MMHAL_API int mmhal_ctx_truncate(struct mmhal_ctx *ctx, int n_keep);
MMHAL_API int mmhal_ctx_generate(struct mmhal_ctx *ctx,
				 const int32_t *prompt, int n_prompt,
				 int n_predict, struct mmhal_sampler *sampler,
				 unsigned flags, int32_t *out,
				 mmhal_token_cb cb, void *arg, int *n_out);
MMHAL_API int mmhal_ctx_stats(const struct mmhal_ctx *ctx,
			      struct mmhal_model_stats *out);
MMHAL_API void mmhal_ctx_stats_reset(struct mmhal_ctx *ctx);

/*
 * mmhal_ctx_state_save() / mmhal_ctx_state_load() - a session's cache in
 * a file
 *
 * The file (host byte order): a versioned header (magic "MMHALKV\0",
 * version, the model's n_layer, n_embd, n_head_kv, head dimension,
 * n_vocab, a hash of its file size and tensor table (names, types,
 * shapes, offsets), the cache's kv_type, row size and n_ctx, n_past),
 * tokens[], the ids, the last logits if any, the K and V rows of the
 * n_past positions, and a checksum of all of it. Save writes path.tmp,
 * syncs it and renames it over path.
 *
 * Load replaces the session's cache (n_past, tokens, ids, logits) after
 * checking every field: the model and kv_type must be the session's, and
 * n_past at most its n_ctx (a larger n_ctx than the saving session's is
 * fine). On failure the session is left as it was and its error names
 * the field.
 *
 * Return: 0; -EINVAL bad file (truncated, corrupt, another model or KV
 * type: the message says which field), -ENOSPC n_past > n_ctx, -ENOMEM,
 * or an error of open(2)/read(2)/write(2)/rename(2).
 */
MMHAL_API int mmhal_ctx_state_save(struct mmhal_ctx *ctx, const char *path);
MMHAL_API int mmhal_ctx_state_load(struct mmhal_ctx *ctx, const char *path);

/*
 * Multimodal projector (mmproj GGUF, general.architecture "clip"): a
 * SigLIP/CLIP vision encoder with an idefics3 or mlp projector, a
 * Whisper-style audio encoder with an ultravox projector, or both.
 */
struct mmhal_mmproj;
struct mmhal_chunk;

struct mmhal_mmproj_params {
	uint32_t size;		/* sizeof(struct mmhal_mmproj_params) */
	int n_threads;		/* encoders' threads; <= 0: online CPUs */
	/* 1 (default): idefics3 images as llama.cpp's mtmd cuts them
	 * (an overview plus image_size tiles when the file has
	 * clip.vision.preproc_image_size); 0: the overview only */
	int image_tiles;
	/* 1 (default): audio in 30 s windows of 3000 mel frames, padded,
	 * as mtmd (the encoders' training), with mtmd's embedding count
	 * (ultravox: ceil(3000 / stack_factor) / 2, e.g. 187 at stack 8);
	 * 0: latency mode, a window shorter than 30 s is encoded at its
	 * own length (fewer positions), every position kept (the last
	 * stack group zero-padded); see Documentation/model-runtime.rst */
	int audio_exact;
	/* as mmhal_model_params: the mmproj file must be signed by this key
	 * (PATH.sig) with a version >= min_version. NULL: the model's key
	 * when the model was loaded with one, else no check. */
	const unsigned char *trusted_key;
	uint64_t min_version;
	/* enum mmhal_backend: where the encoders' weight matrix products
	 * run, as mmhal_model_params.backend (auto: CUDA when usable, cpu,
	 * cuda: refuse the load without it); mmhal_mmproj_info() says
	 * which runs (Documentation/cuda.rst) */
	int backend;
	uint32_t reserved[3];	/* zero */
};

MMHAL_API struct mmhal_mmproj_params mmhal_mmproj_default_params(void);

/**
 * mmhal_mmproj_load() - load an mmproj file for a model
 * @model: the language model the embeddings are for: its embedding width
 *   must equal the projectors' output, and its vocabulary supplies the
 *   marker tokens. Must outlive the mmproj.
 *
 * Return: 0; -ENOENT missing key/tensor/file, -EPROTO wrong key type,
 * -ENOTSUP unsupported projector or tensor type, -EINVAL bad value, shape
 * or width mismatch with the model, -ENOMEM; err names the key, tensor or
 * projector.
 */
MMHAL_API int mmhal_mmproj_load(const char *path,
				const struct mmhal_model *model,
				const struct mmhal_mmproj_params *params,
				struct mmhal_mmproj **out, char *err,
				size_t errlen);
MMHAL_API void mmhal_mmproj_free(struct mmhal_mmproj *proj);

struct mmhal_mmproj_info {
	uint32_t size;		/* set by the caller: sizeof() */
	int has_vision;
	int has_audio;
	char vision_proj[16];	/* "idefics3", "mlp" or "" */
	char audio_proj[16];	/* "ultravox" or "" */
	int image_size;		/* encoder input, pixels per side */
	int image_tokens;	/* embeddings per image tile */
	int audio_rate;		/* input sample rate: 16000 */
	int n_mel;
	int n_embd;		/* projectors' output = the model's width */
	uint64_t file_bytes;
	uint32_t reserved[8];
	/* (after reserved: a caller's smaller struct gets what fits) */
	char backend[8];	/* the encoders': "cpu" or "cuda" */
	/* cuda: the device and what runs there; cpu: why CUDA does not */
	char backend_note[192];
	/* weight products the device ran, and those it failed (run on the
	 * CPU instead; the last failure ends backend_note) */
	uint64_t cuda_products, cuda_failed;
};

MMHAL_API int mmhal_mmproj_info(const struct mmhal_mmproj *proj,
				struct mmhal_mmproj_info *out);

/**
 * mmhal_mmproj_set_calibration() - run the encoders in static int8
 * @path: a calibration file made by `mmgguf calib` for this mmproj file
 *   (bound to its BLAKE2b-256), or NULL to go back to the dynamic per-block
 *   (Q8_0) activations.
 *
 * With a calibration, every matrix product of the encoders quantizes its
 * input with the file's per-tensor scale and its weights per output row
 * (the integer path of an NPU; Documentation/calibration.rst). Not to be
 * called while the mmproj encodes on another thread.
 *
 * Return: 0; -ESTALE the file was made for another mmproj file (err names
 * both hashes); -ENOENT, -EPROTO, -EINVAL a missing, mistyped or bad key,
 * point or threshold (err names it); -ENOMEM; an error of open(2). On
 * failure the mmproj keeps the calibration it had.
 */
MMHAL_API int mmhal_mmproj_set_calibration(struct mmhal_mmproj *proj,
					   const char *path, char *err,
					   size_t errlen);

struct mmhal_image;
struct mmhal_audio;

/* A held-out capture set and the agreement it must show. */
struct mmhal_calib_heldout {
	uint32_t size;		/* sizeof(struct mmhal_calib_heldout) */
	const struct mmhal_image *images;
	int n_images;
	const struct mmhal_audio *audio;
	int n_audio;
	/* cosine similarity of each output embedding row (static int8 vs
	 * the float reference): the mean over all rows must reach
	 * min_cos_mean and every row min_cos */
	double min_cos_mean;
	double min_cos;
	uint32_t reserved[8];	/* zero */
};

struct mmhal_calib_report {
	uint32_t size;		/* set by the caller: sizeof() */
	double cos_mean, cos_min;	/* of the calibration in use at return */
	uint64_t rows;
	uint64_t version;	/* its mmcalib.version; 0: none (dynamic) */
	int rolled_back;	/* 1: the previous calibration was restored */
	uint32_t reserved[8];
};

/**
 * mmhal_mmproj_calib_update() - install or re-check a calibration, keeping
 * the previous one
 * @dir: the calibration store: calib.cur (in use), calib.prev (the one
 *   before), calib.bad (the last one rolled back); files are replaced by
 *   rename(2) after an fsync, so a power cut leaves either state.
 * @new_path: a new calibration file: it is measured on @ho against the
 *   float reference and, when it agrees, copied in as calib.cur (the old
 *   one becoming calib.prev) and set; when not, it is refused and the
 *   mmproj keeps what it had. NULL: the calibration in use (calib.cur,
 *   loaded if none is set) is measured; when its agreement has dropped
 *   below the thresholds, calib.prev is measured and, if it agrees,
 *   restored (cur becomes calib.bad, prev calib.cur); if neither agrees
 *   the mmproj goes back to the dynamic activations.
 * @report: may be NULL.
 *
 * Return: 0 (installed, or still good), 1 (rolled back to calib.prev),
 * -EDOM (the agreement is below the thresholds: a new file refused, or
 * nothing left that agrees; err gives the figures), the errors of
 * mmhal_mmproj_set_calibration() and mmhal_encode_*(), or of the file
 * operations.
 */
MMHAL_API int mmhal_mmproj_calib_update(struct mmhal_mmproj *proj,
					const char *dir, const char *new_path,
					const struct mmhal_calib_heldout *ho,
					struct mmhal_calib_report *report,
					char *err, size_t errlen);

/* Pixel formats: V4L2 fourcc codes, equal to MMEDGE_FMT_*. */
#define MMHAL_IMAGE_GREY	0x59455247u	/* 'GREY' */
#define MMHAL_IMAGE_RGB24	0x33424752u	/* 'RGB3' */
#define MMHAL_IMAGE_NV12	0x3231564eu	/* 'NV12' */

/*
 * An image read in place (a camera frame's mapping). GREY: plane[0], 1
 * byte per pixel. RGB24: plane[0], R G B bytes. NV12: plane[0] Y,
 * plane[1] interleaved U V at half resolution both ways (even width and
 * height). stride[i]: bytes from one line of plane i to the next.
 */
struct mmhal_image {
	uint32_t format;	/* MMHAL_IMAGE_* */
	uint32_t width;
	uint32_t height;
	const void *plane[2];
	size_t stride[2];
};

/* Sample formats of struct mmhal_audio. */
enum mmhal_audio_format {
	MMHAL_AUDIO_S16LE = 1,	/* signed 16-bit (the microphone's) */
	MMHAL_AUDIO_S32LE = 2,	/* signed 32-bit */
	MMHAL_AUDIO_F32LE = 3,	/* float, full scale -1.0 to 1.0 */
};

#define MMHAL_AUDIO_MAX_CHANNELS	8

/*
 * PCM for mmhal_encode_audio(): interleaved frames of @channels samples
 * (little-endian, as the CPU's), read in place.
 *
 * Mono S16LE at the mmproj's audio_rate (mmhal_mmproj_info(), 16000) is
 * what the encoder takes: it is read where it lies, with no copy. Any
 * other input (S32LE or F32LE, 2 to 8 channels, or one of the other
 * rates) is brought to it in one pass: the channels are averaged
 * (down-mixed), and a rate other than the model's is converted by
 * speexdsp's resampler (quality SPEEX_RESAMPLER_QUALITY_DESKTOP, 5)
 * into one float buffer, the one copy, which
 * mmhal_chunk_info.converted_bytes reports.
 *
 * Size-versioned as the params structs (common/mm_params.h's rule):
 * @size is sizeof(struct mmhal_audio) (mmhal_audio_s16() sets it),
 * @reserved must be zero.
 */
struct mmhal_audio {
	uint32_t size;		/* sizeof(struct mmhal_audio) */
	uint32_t format;	/* enum mmhal_audio_format */
	uint32_t channels;	/* 1 to MMHAL_AUDIO_MAX_CHANNELS */
	uint32_t rate;		/* Hz: 8000, 16000, 44100 or 48000 */
	const void *samples;	/* n_frames x channels samples */
	size_t n_frames;	/* samples per channel */
	uint32_t reserved[4];	/* zero */
};

/* First published size of struct mmhal_audio. */
#define MMHAL_AUDIO_SIZE_VER0	48

/**
 * mmhal_audio_s16() - a struct mmhal_audio for mono S16LE PCM
 * @samples: @n_frames samples, read in place by the encoder.
 * @rate: samples per second (the model's, 16000, for no copy).
 *
 * Return: the struct, by value, with @size set and the rest zero.
 */
MMHAL_API struct mmhal_audio mmhal_audio_s16(const int16_t *samples,
					     size_t n_frames, uint32_t rate);

/**
 * mmhal_mmproj_map_frames() / mmhal_mmproj_unmap_frames() - frames live in
 * a mapping
 * @addr, @bytes: a mapping (an mmedge buffer's mmhal_buf_map()) whose
 *   frames mmhal_encode_image() is given, and which stays mapped until
 *   unmap_frames() is called for it (before the buffer is freed).
 *
 * With the CUDA back end, the mapping is registered with the driver once
 * and the GPU reads those frames in place (preprocessing and the patch
 * embedding of the overview image on the device); the CPU back end keeps
 * nothing. The caller orders the frame's writes before the encode (a
 * dequeued frame, mmhal_buf_begin_cpu()).
 *
 * Return: 0, -EINVAL, -ENOSPC (32 mappings already declared).
 */
MMHAL_API int mmhal_mmproj_map_frames(const struct mmhal_mmproj *proj,
				      const void *addr, size_t bytes);
MMHAL_API void mmhal_mmproj_unmap_frames(const struct mmhal_mmproj *proj,
					 const void *addr, size_t bytes);

/**
 * mmhal_encode_image() / mmhal_encode_audio() - encode media into a chunk
 *
 * The input is read in place (no copy of the frame or the PCM), converted
 * and normalized per sampled pixel / mel frame, run through the encoder
 * and projector; the chunk holds the marker tokens and embeddings the
 * model expects around them (SmolVLM's <fake_token_around_image>
 * <global-img> ... layout for idefics3).
 *
 * Audio other than mono S16LE at the model's rate is converted once
 * (struct mmhal_audio says how); the chunk's info counts that pass.
 *
 * Return: 0; -ENOENT the mmproj has no such encoder, -EINVAL bad format,
 * size, stride, channel count or rate (err names the field), -ENOMEM.
 */
MMHAL_API int mmhal_encode_image(const struct mmhal_mmproj *proj,
				 const struct mmhal_image *img,
				 struct mmhal_chunk **out, char *err,
				 size_t errlen);
MMHAL_API int mmhal_encode_audio(const struct mmhal_mmproj *proj,
				 const struct mmhal_audio *audio,
				 struct mmhal_chunk **out, char *err,
				 size_t errlen);
MMHAL_API void mmhal_chunk_free(struct mmhal_chunk *chunk);

enum mmhal_chunk_type {
	MMHAL_CHUNK_IMAGE = 1,
	MMHAL_CHUNK_AUDIO = 2,
};

struct mmhal_chunk_info {
	uint32_t size;		/* set by the caller: sizeof() */
	int type;		/* enum mmhal_chunk_type */
	int n_pos;		/* decoder positions: markers + embeddings */
	int n_embd_rows;	/* embedding rows among them */
	int n_embd;		/* width of a row */
	int n_tiles;		/* image: encoder passes (tiles + overview);
				 * audio: 30 s windows */
	double preprocess_ms;	/* pixels/mel from the input */
	double encode_ms;	/* encoder + projector */
	/* audio: bytes of PCM read by the one conversion pass (down-mix,
	 * format, resampling) into a mono float buffer at the model's
	 * rate; 0 when the PCM was used in place (S16LE mono at the
	 * model's rate) and for images */
	uint64_t converted_bytes;
	uint32_t reserved[6];
};

MMHAL_API int mmhal_chunk_info(const struct mmhal_chunk *chunk,
			       struct mmhal_chunk_info *out);
/* The embedding rows, n_embd_rows x n_embd, in decoder order. */
MMHAL_API const float *mmhal_chunk_embd(const struct mmhal_chunk *chunk);

/**
 * mmhal_ctx_eval_chunk() - append a chunk (its markers and embeddings;
 * the rows with the chunk's id)
 *
 * Return: as mmhal_ctx_eval(); -EINVAL if the chunk's width is not the
 * session's model's.
 */
MMHAL_API int mmhal_ctx_eval_chunk(struct mmhal_ctx *ctx,
				   const struct mmhal_chunk *chunk,
				   float *logits_last);

/* Where a chunk goes in a prompt given to mmhal_ctx_eval_prompt(). */
#define MMHAL_MEDIA_MARKER	"<__media__>"

/**
 * mmhal_ctx_eval_prompt() - tokenize and evaluate text with media
 * @text: UTF-8; each MMHAL_MEDIA_MARKER is replaced by the next chunk;
 *   special tokens are parsed.
 * @add_bos: 1 to start with the model's BOS token.
 *
 * The prompt is the session's whole context (position 0 on): the cache
 * keeps its common prefix with the prompt's positions (the same tokens,
 * the same chunks: a chunk's rows are recorded with an id made from its
 * contents when it is encoded, see mmhal_ctx_eval_embd_id()), drops the
 * rest, and only the remaining positions are evaluated (at least the
 * last, for its logits); stats.reused_positions counts what was kept. So
 * a follow-up question on the same frame, given as the whole conversation
 * with the same chunk, evaluates only the new text. To start afresh, an
 * empty cache (mmhal_ctx_reset()) gives the same logits.
 *
 * Return: as mmhal_ctx_eval(); -EINVAL if the markers and n_chunks
 * differ in number; -ENOSPC if the prompt is longer than n_ctx (the cache
 * is left as it was).
 */
MMHAL_API int mmhal_ctx_eval_prompt(struct mmhal_ctx *ctx, const char *text,
				    const struct mmhal_chunk *const *chunks,
				    int n_chunks, int add_bos,
				    float *logits_last);

#ifdef __cplusplus
}
#endif

#endif /* MMHAL_MODEL_H */

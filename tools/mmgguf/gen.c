// SPDX-License-Identifier: MIT
/*
 * gen.c - deterministic LLaMA-family GGUF models for tests and benchmarks.
 *
 * Layout and metadata follow llama.cpp's convert_hf_to_gguf.py for
 * "llama" models: 2-D weights in the requested type, 1-D norms in F32,
 * tied output (no output.weight), tokenizer.* keys of a gpt2 (byte-level
 * BPE) or llama (SentencePiece) vocab generated here.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"
#include "gguf.h"
#include "gguf_internal.h"
#include "quant.h"

static const struct mm_gen_shape mm_gen_shapes[] = {
	{ "smollm2-135m", "135M", 30, 576, 9, 3, 1536, 49152, 8192,
	  100000.0f, 1e-5f },
	/* every 2-D tensor has ne[0] % 256 == 0, so Q4_K applies */
	{ "tiny", "1M", 2, 256, 4, 2, 512, 300, 512, 10000.0f, 1e-5f },
	/* smallest complete model: fuzz seeds, quick tests */
	{ "micro", "50K", 1, 32, 2, 1, 64, 300, 128, 10000.0f, 1e-5f },
	/* 4 query heads on 1 KV head of 24 dimensions: the attention
	 * kernel's other cases (head groups of 3 + 1, hd % 16 == 8) */
	{ "gqa4", "60K", 1, 96, 4, 1, 192, 300, 128, 10000.0f, 1e-5f },
};

#define MM_GEN_NSHAPES (sizeof(mm_gen_shapes) / sizeof(mm_gen_shapes[0]))

const char mm_gen_chatml_template[] =
	"{% for message in messages %}{{'<|im_start|>' + message['role'] + "
	"'\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}"
	"{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}"
	"{% endif %}";

const struct mm_gen_shape *mm_gen_shape_find(const char *name)
{
	for (size_t i = 0; name && i < MM_GEN_NSHAPES; i++)
		if (!strcmp(mm_gen_shapes[i].name, name))
			return &mm_gen_shapes[i];
	return NULL;
}

const char *const *mm_gen_shape_names(void)
{
	static const char *const names[] = { "smollm2-135m", "tiny", "micro",
					     "gqa4", NULL };
	return names;
}

/* ---- vocab ------------------------------------------------------------ */

struct mm_gen_vocab {
	int spm;
	const char *space;	/* "Ġ" (gpt2) or "▁" (llama) */
	uint32_t target;
	char **tok;
	float *score;
	int32_t *type;
	uint32_t n;
	char **merge;
	uint32_t n_merge;
	struct mm_strmap map;
	int oom;
};

static int mm_gen_add(struct mm_gen_vocab *v, const char *s, float score,
		      int32_t type)
{
	char *c;

	if (v->n >= v->target || mm_strmap_get(&v->map, s, strlen(s)) >= 0)
		return -1;
	c = strdup(s);
	if (!c || mm_strmap_put(&v->map, c, strlen(c), v->n) < 0) {
		free(c);
		v->oom = 1;
		return -1;
	}
	v->tok[v->n] = c;
	v->score[v->n] = score;
	v->type[v->n] = type;
	return (int)v->n++;
}

/* One UTF-8 character, or the space marker. */
static int mm_gen_single(const struct mm_gen_vocab *v, const char *s)
{
	size_t n = strlen(s);

	if (!strcmp(s, v->space))
		return 1;
	return n == 1;
}

static int mm_gen_known(const struct mm_gen_vocab *v, const char *s)
{
	if (mm_strmap_get(&v->map, s, strlen(s)) >= 0)
		return 1;
	return v->spm && mm_gen_single(v, s);
}

static void mm_gen_merge(struct mm_gen_vocab *v, const char *a, const char *b)
{
	char r[256], m[260];

	if (v->n >= v->target || strlen(a) + strlen(b) >= sizeof(r))
		return;
	if (!mm_gen_known(v, a) || !mm_gen_known(v, b))
		return;
	snprintf(r, sizeof(r), "%s%s", a, b);
	if (mm_gen_add(v, r, -(float)(v->n_merge + 1), 1) < 0)
		return;
	if (!v->spm) {
		snprintf(m, sizeof(m), "%s %s", a, b);
		v->merge[v->n_merge] = strdup(m);
		if (!v->merge[v->n_merge])
			v->oom = 1;
	}
	v->n_merge++;
}

/* Common English merges, written with "_" for the space marker. */
static const char *const mm_gen_hand[][2] = {
	{ "_", "t" }, { "h", "e" }, { "_", "a" }, { "i", "n" },
	{ "_t", "he" }, { "e", "r" }, { "o", "n" }, { "r", "e" },
	{ "_", "s" }, { "a", "t" }, { "e", "n" }, { "_", "o" },
	{ "_", "w" }, { "i", "s" }, { "o", "r" }, { "i", "t" },
	{ "a", "n" }, { "e", "s" }, { "_", "c" }, { "_", "i" },
	{ "in", "g" }, { "_", "b" }, { "e", "d" }, { "o", "u" },
	{ "_", "f" }, { "_a", "n" }, { "_an", "d" }, { "_o", "f" },
	{ "_t", "o" }, { "_", "h" }, { "_", "m" }, { "l", "l" },
	{ "_i", "s" }, { "_i", "n" }, { "t", "h" }, { "_", "d" },
	{ "l", "o" }, { "_", "l" }, { "_", "p" }, { "_", "T" },
	{ "_T", "he" }, { "a", "l" }, { "o", "w" }, { "_", "H" },
	{ "e", "l" }, { "ll", "o" }, { "_h", "e" }, { "_", "_" },
};

static void mm_gen_sub(const struct mm_gen_vocab *v, const char *in, char *out,
		       size_t cap)
{
	size_t k = 0;

	for (; *in && k + 4 < cap; in++) {
		if (*in == '_') {
			size_t l = strlen(v->space);

			memcpy(out + k, v->space, l);
			k += l;
		} else {
			out[k++] = *in;
		}
	}
	out[k] = 0;
}

static const char mm_gen_letters[] = "etaoinshrdlcumwfgypbvkjxqz";

static int mm_gen_vocab_build(struct mm_gen_vocab *v, int spm, int img,
			      uint32_t target)
{
	char a[32], b[32];

	memset(v, 0, sizeof(*v));
	v->spm = spm;
	v->space = spm ? "\xe2\x96\x81" : "\xc4\xa0";
	v->target = target;
	v->tok = calloc(target, sizeof(*v->tok));
	v->score = calloc(target, sizeof(*v->score));
	v->type = calloc(target, sizeof(*v->type));
	v->merge = calloc(target, sizeof(*v->merge));
	if (!v->tok || !v->score || !v->type || !v->merge)
		return -ENOMEM;
	if (spm) {
		mm_gen_add(v, "<unk>", 0, 2);
		mm_gen_add(v, "<s>", 0, 3);
		mm_gen_add(v, "</s>", 0, 3);
		mm_gen_add(v, "<|im_start|>", 0, 3);
		mm_gen_add(v, "<|im_end|>", 0, 3);
		for (int i = 0; i < 256; i++) {
			snprintf(a, sizeof(a), "<0x%02X>", i);
			mm_gen_add(v, a, 0, 6);
		}
		mm_gen_add(v, v->space, -1000.0f, 1);
	} else {
		mm_gen_add(v, "<|endoftext|>", 0, 3);
		mm_gen_add(v, "<|im_start|>", 0, 3);
		mm_gen_add(v, "<|im_end|>", 0, 3);
		/* SmolVLM's image tokens (added_tokens, special: control) */
		if (img) {
			mm_gen_add(v, "<fake_token_around_image>", 0, 3);
			mm_gen_add(v, "<image>", 0, 3);
			mm_gen_add(v, "<global-img>", 0, 3);
			for (unsigned r = 0; r < 36; r++) {
				char rc[48];

				snprintf(rc, sizeof(rc), "<row_%u_col_%u>",
					 r / 6 + 1, r % 6 + 1);
				mm_gen_add(v, rc, 0, 3);
			}
		}
		for (int i = 0, n = 0; i < 256; i++) {
			int keep = (i >= '!' && i <= '~') ||
				   (i >= 0xa1 && i <= 0xac) ||
				   (i >= 0xae && i <= 0xff);
			uint32_t cp = keep ? (uint32_t)i : 256u + (uint32_t)n++;

			if (cp < 0x80) {
				a[0] = (char)cp;
				a[1] = 0;
			} else {
				a[0] = (char)(0xc0 | (cp >> 6));
				a[1] = (char)(0x80 | (cp & 0x3f));
				a[2] = 0;
			}
			mm_gen_add(v, a, 0, 1);
		}
	}
	/* "\n\n" is one token in GPT-2's and SmolVLM's vocabularies ("ĊĊ"):
	 * mtmd looks it up whole for the idefics3 image layout */
	if (!spm)
		mm_gen_merge(v, "\xc4\x8a", "\xc4\x8a");
	for (size_t i = 0; i < sizeof(mm_gen_hand) / sizeof(mm_gen_hand[0]); i++) {
		mm_gen_sub(v, mm_gen_hand[i][0], a, sizeof(a));
		mm_gen_sub(v, mm_gen_hand[i][1], b, sizeof(b));
		mm_gen_merge(v, a, b);
	}
	/* fill: letter pairs, space+letter, then extend by letters */
	for (const char *x = mm_gen_letters; *x; x++)
		for (const char *y = mm_gen_letters; *y; y++) {
			char s1[2] = { *x, 0 }, s2[2] = { *y, 0 };

			mm_gen_merge(v, s1, s2);
		}
	for (const char *x = mm_gen_letters; *x; x++) {
		char s1[2] = { *x, 0 }, s2[2] = { (char)(*x - 32), 0 };

		mm_gen_merge(v, v->space, s1);
		mm_gen_merge(v, v->space, s2);
	}
	for (uint32_t start = 0; v->n < v->target && !v->oom;) {
		uint32_t end = v->n, before = v->n;

		for (uint32_t i = start; i < end && v->n < v->target; i++) {
			if (v->type[i] != 1 || strlen(v->tok[i]) < 2 ||
			    strlen(v->tok[i]) > 24)
				continue;
			for (const char *y = mm_gen_letters; *y; y++) {
				char s2[2] = { *y, 0 };

				mm_gen_merge(v, v->tok[i], s2);
			}
		}
		if (v->n == before)
			break;
		start = end;
	}
	return v->oom ? -ENOMEM : 0;
}

static void mm_gen_vocab_free(struct mm_gen_vocab *v)
{
	for (uint32_t i = 0; v->tok && i < v->n; i++)
		free(v->tok[i]);
	for (uint32_t i = 0; v->merge && i < v->n_merge; i++)
		free(v->merge[i]);
	free(v->tok);
	free(v->score);
	free(v->type);
	free(v->merge);
	mm_strmap_free(&v->map);
}

/* ---- weights ---------------------------------------------------------- */

struct mm_gen_ctx {
	const struct mm_gen_shape *s;
	uint32_t type;
	uint64_t seed;
	float *tmp;
	size_t tmp_n;
};

static uint64_t mm_gen_next(uint64_t *st)
{
	uint64_t z = (*st += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double mm_gen_unif(uint64_t *st)
{
	return ((mm_gen_next(st) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

int mm_gen_ends(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && !strcmp(s + a - b, suffix);
}

static int mm_gen_fill(void *arg, const char *name, void *dst, uint64_t size)
{
	struct mm_gen_ctx *c = arg;
	const struct mm_gen_shape *s = c->s;
	uint64_t st = c->seed * 0x9e3779b97f4a7c15ull + 1;
	size_t esz, n, row;
	double std, resid = 1.0 / sqrt(2.0 * s->n_layer);
	float *x;

	for (const char *p = name; *p; p++)
		st = (st ^ (uint8_t)*p) * 0x100000001b3ull;
	if (mm_gen_ends(name, "_norm.weight")) {
		float *f = dst;

		for (size_t i = 0; i < size / 4; i++)
			f[i] = 1.0f;
		return 0;
	}
	esz = c->type == MM_TYPE_F32 ? 4 : 2;
	n = size / esz;
	if (n > c->tmp_n) {
		float *t = realloc(c->tmp, n * sizeof(float));

		if (!t)
			return -ENOMEM;
		c->tmp = t;
		c->tmp_n = n;
	}
	x = c->type == MM_TYPE_F32 ? dst : c->tmp;
	row = s->n_embd;
	if (!strcmp(name, "token_embd.weight"))
		std = 3.0 / sqrt(s->n_embd);
	else if (mm_gen_ends(name, "attn_output.weight"))
		std = resid / sqrt(s->n_embd);
	else if (mm_gen_ends(name, "ffn_down.weight")) {
		std = resid / sqrt(s->n_ff);
		row = s->n_ff;
	} else
		std = 1.0 / sqrt(s->n_embd);
	for (size_t i = 0; i < n; i += 2) {
		double u1 = mm_gen_unif(&st), u2 = mm_gen_unif(&st);
		double r = sqrt(-2.0 * log(u1));

		x[i] = (float)(r * cos(2 * M_PI * u2) * std);
		if (i + 1 < n)
			x[i + 1] = (float)(r * sin(2 * M_PI * u2) * std);
	}
	if (!strcmp(name, "token_embd.weight")) {
		/* per-token gain in [0.5, 1.5): clear winners, no ties */
		for (size_t r0 = 0; r0 < n / row; r0++) {
			uint64_t h = (r0 + 1) * 0x9e3779b97f4a7c15ull ^ c->seed;
			float g = 0.5f + (float)((mm_gen_next(&h) >> 40) /
						 16777216.0);

			for (size_t i = 0; i < row; i++)
				x[r0 * row + i] *= g;
		}
	}
	if (c->type == MM_TYPE_F16) {
		uint16_t *h = dst;

		for (size_t i = 0; i < n; i++)
			h[i] = mm_f32_to_f16(x[i]);
	}
	return 0;
}

/* ---- model ------------------------------------------------------------ */

static int mm_gen_build(const struct mm_gen_params *p, struct mm_gen_ctx *c,
			struct mm_gguf_writer **out, char *err, size_t errlen)
{
	const struct mm_gen_shape *s = mm_gen_shape_find(p->shape);
	struct mm_gen_vocab v;
	struct mm_gguf_writer *w;
	int spm, ret = 0;
	char name[64];

	if (!s) {
		snprintf(err, errlen, "unknown shape '%s' (smollm2-135m, tiny, micro)",
			 p->shape ? p->shape : "");
		return -EINVAL;
	}
	if (!p->tokenizer || (strcmp(p->tokenizer, "gpt2") &&
			      strcmp(p->tokenizer, "llama") &&
			      strcmp(p->tokenizer, "smolvlm"))) {
		snprintf(err, errlen, "unknown tokenizer '%s' (gpt2, llama, smolvlm)",
			 p->tokenizer ? p->tokenizer : "");
		return -EINVAL;
	}
	if (p->type != MM_TYPE_F32 && p->type != MM_TYPE_F16) {
		snprintf(err, errlen, "type must be f32 or f16");
		return -EINVAL;
	}
	spm = !strcmp(p->tokenizer, "llama");
	ret = mm_gen_vocab_build(&v, spm, !strcmp(p->tokenizer, "smolvlm"),
				 s->n_vocab);
	if (!ret && v.n != s->n_vocab)
		ret = -EINVAL;
	if (ret) {
		snprintf(err, errlen, "building the vocab failed");
		mm_gen_vocab_free(&v);
		return ret;
	}
	w = mm_gguf_writer_new(MM_GGUF_DEFAULT_ALIGNMENT);
	if (!w) {
		mm_gen_vocab_free(&v);
		return -ENOMEM;
	}
	c->s = s;
	c->type = p->type;
	c->seed = p->seed;

	snprintf(name, sizeof(name), "mmgguf %s (generated)", s->name);
#define W(call) do { if (!ret) ret = (call); } while (0)
	W(mm_gguf_w_str(w, "general.architecture", "llama"));
	W(mm_gguf_w_str(w, "general.type", "model"));
	W(mm_gguf_w_str(w, "general.name", name));
	W(mm_gguf_w_str(w, "general.size_label", s->label));
	W(mm_gguf_w_u32(w, "llama.block_count", s->n_layer));
	W(mm_gguf_w_u32(w, "llama.context_length", s->n_ctx));
	W(mm_gguf_w_u32(w, "llama.embedding_length", s->n_embd));
	W(mm_gguf_w_u32(w, "llama.feed_forward_length", s->n_ff));
	W(mm_gguf_w_u32(w, "llama.attention.head_count", s->n_head));
	W(mm_gguf_w_u32(w, "llama.attention.head_count_kv", s->n_head_kv));
	W(mm_gguf_w_f32(w, "llama.rope.freq_base", s->rope_base));
	W(mm_gguf_w_f32(w, "llama.attention.layer_norm_rms_epsilon", s->rms_eps));
	W(mm_gguf_w_u32(w, "general.file_type", p->type == MM_TYPE_F32 ? 0 : 1));
	W(mm_gguf_w_u32(w, "llama.vocab_size", s->n_vocab));
	W(mm_gguf_w_u32(w, "llama.rope.dimension_count", s->n_embd / s->n_head));
	W(mm_gguf_w_str(w, "tokenizer.ggml.model", spm ? "llama" : "gpt2"));
	W(mm_gguf_w_str(w, "tokenizer.ggml.pre",
			spm ? "default" : (!strcmp(s->name, "smollm2-135m") ?
					   "smollm" : "gpt-2")));
	W(mm_gguf_w_arr_str(w, "tokenizer.ggml.tokens",
			    (const char *const *)v.tok, NULL, v.n));
	if (spm)
		W(mm_gguf_w_arr(w, "tokenizer.ggml.scores", MM_GGUF_F32,
				v.score, v.n));
	W(mm_gguf_w_arr(w, "tokenizer.ggml.token_type", MM_GGUF_I32, v.type,
			v.n));
	if (!spm)
		W(mm_gguf_w_arr_str(w, "tokenizer.ggml.merges",
				    (const char *const *)v.merge, NULL,
				    v.n_merge));
	W(mm_gguf_w_u32(w, "tokenizer.ggml.bos_token_id", 1));
	W(mm_gguf_w_u32(w, "tokenizer.ggml.eos_token_id", 2));
	W(mm_gguf_w_u32(w, "tokenizer.ggml.unknown_token_id", 0));
	W(mm_gguf_w_u32(w, "tokenizer.ggml.padding_token_id", spm ? 0 : 2));
	W(mm_gguf_w_bool(w, "tokenizer.ggml.add_bos_token", spm));
	W(mm_gguf_w_bool(w, "tokenizer.ggml.add_space_prefix", spm));
	W(mm_gguf_w_str(w, "tokenizer.chat_template", mm_gen_chatml_template));
	W(mm_gguf_w_u32(w, "general.quantization_version", 2));

	{
		int64_t e = s->n_embd, f = s->n_ff, kv = (int64_t)s->n_embd /
			s->n_head * s->n_head_kv;
		const int64_t ne_emb[2] = { e, s->n_vocab };

		W(mm_gguf_w_tensor_cb(w, "token_embd.weight", p->type, 2, ne_emb,
				      mm_gen_fill, c));
		for (uint32_t l = 0; l < s->n_layer; l++) {
			static const char *const nm[] = {
				"attn_norm", "attn_q", "attn_k", "attn_v",
				"attn_output", "ffn_norm", "ffn_gate",
				"ffn_up", "ffn_down",
			};
			const int64_t ne[9][2] = {
				{ e, 1 }, { e, e }, { e, kv }, { e, kv },
				{ e, e }, { e, 1 }, { e, f }, { e, f }, { f, e },
			};

			for (int k = 0; k < 9; k++) {
				char tn[64];
				int norm = k == 0 || k == 5;

				snprintf(tn, sizeof(tn), "blk.%u.%s.weight", l,
					 nm[k]);
				W(mm_gguf_w_tensor_cb(w, tn,
						      norm ? MM_TYPE_F32 : p->type,
						      norm ? 1 : 2, ne[k],
						      mm_gen_fill, c));
			}
		}
		{
			const int64_t ne_n[1] = { e };

			W(mm_gguf_w_tensor_cb(w, "output_norm.weight",
					      MM_TYPE_F32, 1, ne_n,
					      mm_gen_fill, c));
		}
	}
#undef W
	mm_gen_vocab_free(&v);
	if (ret) {
		snprintf(err, errlen, "building the model failed: %s",
			 strerror(-ret));
		mm_gguf_writer_free(w);
		return ret;
	}
	*out = w;
	return 0;
}

int mm_gen_model(const struct mm_gen_params *p, const char *path, char *err,
		 size_t errlen)
{
	struct mm_gen_ctx c = { 0 };
	struct mm_gguf_writer *w;
	int ret = mm_gen_build(p, &c, &w, err, errlen);

	if (ret)
		return ret;
	ret = mm_gguf_w_write_file(w, path, err, errlen);
	mm_gguf_writer_free(w);
	free(c.tmp);
	return ret;
}

int mm_gen_model_mem(const struct mm_gen_params *p, void **buf, size_t *size,
		     char *err, size_t errlen)
{
	struct mm_gen_ctx c = { 0 };
	struct mm_gguf_writer *w;
	int ret = mm_gen_build(p, &c, &w, err, errlen);

	if (ret)
		return ret;
	ret = mm_gguf_w_write_mem(w, buf, size, err, errlen);
	mm_gguf_writer_free(w);
	free(c.tmp);
	return ret;
}

/* ---- multimodal projector (mmproj) ------------------------------------- */

struct mm_gen_vshape {
	const char *name;
	const char *proj;	/* "idefics3" or "mlp" */
	uint32_t image, patch, n_embd, n_ff, n_layer, n_head;
	uint32_t scale;		/* idefics3 */
	uint32_t mm_hidden;	/* mlp */
	uint32_t n_out;
	int clip;		/* CLIP: class embedding, pre_ln, no post_ln,
				 * quick GELU, CLIP mean/std */
	uint32_t preproc;	/* clip.vision.preproc_image_size; 0: image */
};

struct mm_gen_ashape {
	const char *name;
	uint32_t n_mel, n_embd, n_ff, n_layer, n_head, n_pos, stack;
	uint32_t mm_hidden;	/* mm.a.mlp.1 outputs; SwiGLU halves them */
	uint32_t n_out;
};

static const struct mm_gen_vshape mm_gen_vshapes[] = {
	{ "smolvlm-256m", "idefics3", 512, 16, 768, 3072, 12, 12, 4, 0, 576, 0,
	  2048 },
	{ "smolvlm-224", "idefics3", 224, 16, 768, 3072, 12, 12, 2, 0, 576, 0, 0 },
	{ "llava-mlp", "mlp", 224, 16, 768, 3072, 12, 12, 1, 576, 576, 1, 0 },
	{ "tiny", "idefics3", 32, 8, 256, 512, 2, 4, 2, 0, 256, 0, 0 },
	{ "tiny-mlp", "mlp", 32, 8, 256, 512, 2, 4, 1, 256, 256, 1, 0 },
	/* fuzz seeds: into the 32-wide "micro" decoder */
	{ "micro", "idefics3", 16, 8, 32, 64, 1, 2, 2, 0, 32, 0, 0 },
};

static const struct mm_gen_ashape mm_gen_ashapes[] = {
	{ "whisper-tiny", 80, 384, 1536, 4, 6, 1500, 8, 2304, 576 },
	{ "tiny", 16, 256, 512, 2, 4, 64, 2, 512, 256 },
	{ "micro", 8, 32, 64, 1, 2, 16, 2, 64, 32 },
	/* exact-mode (30 s, 1500 positions) windows on small encoders into
	 * the 256-wide "tiny" decoder; widths llama.cpp's graph accepts
	 * (Documentation/model-runtime.rst): stack 8 drops the last 4
	 * positions (187 tokens), stack 9 zero-pads the last group (167) */
	{ "tiny-30s", 8, 40, 80, 1, 2, 1500, 8, 64, 256 },
	{ "tiny-30s-s9", 8, 32, 64, 1, 2, 1500, 9, 64, 256 },
};

const char *const *mm_gen_vision_names(void)
{
	static const char *const names[] = { "smolvlm-256m", "smolvlm-224",
					     "llava-mlp", "tiny", "tiny-mlp",
					     "micro", NULL };
	return names;
}

const char *const *mm_gen_audio_names(void)
{
	static const char *const names[] = { "whisper-tiny", "tiny", "micro",
					     "tiny-30s", "tiny-30s-s9", NULL };
	return names;
}

struct mm_gen_mctx {
	uint64_t seed;
	float *tmp;
	size_t tmp_n;
};

/* One tensor to write: its shape, type and initial distribution. */
struct mm_gen_mt {
	struct mm_gen_mctx *c;
	uint32_t type;
	int64_t ne0;
	float mean, std;
};

static int mm_gen_mfill(void *arg, const char *name, void *dst, uint64_t size)
{
	struct mm_gen_mt *t = arg;
	struct mm_gen_mctx *c = t->c;
	uint64_t st = c->seed * 0x9e3779b97f4a7c15ull + 7;
	size_t rb = mm_row_bytes(t->type, t->ne0), rows, n;

	if (!rb || size % rb)
		return -EINVAL;
	rows = size / rb;
	n = rows * (size_t)t->ne0;
	if (n > c->tmp_n) {
		float *x = realloc(c->tmp, n * sizeof(float));

		if (!x)
			return -ENOMEM;
		c->tmp = x;
		c->tmp_n = n;
	}
	for (const char *p = name; *p; p++)
		st = (st ^ (uint8_t)*p) * 0x100000001b3ull;
	for (size_t i = 0; i < n; i += 2) {
		double u1 = mm_gen_unif(&st), u2 = mm_gen_unif(&st);
		double r = sqrt(-2.0 * log(u1));

		c->tmp[i] = t->mean + (float)(r * cos(2 * M_PI * u2) * t->std);
		if (i + 1 < n)
			c->tmp[i + 1] = t->mean +
				(float)(r * sin(2 * M_PI * u2) * t->std);
	}
	for (size_t r = 0; r < rows; r++)
		mm_quantize_row((enum mm_type)t->type, c->tmp + r * t->ne0,
				(uint8_t *)dst + r * rb, t->ne0);
	return 0;
}

uint32_t mm_gen_fit(uint32_t want, int64_t ne0)
{
	if (ne0 % (int64_t)mm_type_block_elems(want) == 0)
		return want;
	if (want == MM_TYPE_Q4_K)
		want = MM_TYPE_Q5_0;
	else if (want == MM_TYPE_Q6_K)
		want = MM_TYPE_Q8_0;
	return ne0 % (int64_t)mm_type_block_elems(want) ? MM_TYPE_F16 : want;
}

uint32_t mm_gen_ftype(uint32_t t)
{
	switch (t) {
	case MM_TYPE_F32: return 0;
	case MM_TYPE_F16: return 1;
	case MM_TYPE_Q4_0: return 2;
	case MM_TYPE_Q4_1: return 3;
	case MM_TYPE_Q8_0: return 7;
	case MM_TYPE_Q5_0: return 8;
	case MM_TYPE_Q4_K: return 15;	/* Q4_K_M */
	case MM_TYPE_Q6_K: return 18;
	case MM_TYPE_BF16: return 32;
	default: return 1;
	}
}

/*
 * A tensor's role decides its type as llama.cpp's convert_hf_to_gguf.py
 * decides it for the same architecture (Documentation/model-runtime.rst,
 * "Files as llama.cpp's converter writes them"):
 *  MAT    a matrix: the file's type (a row that holds no whole block falls
 *         back as the quantizer does)
 *  PATCH  CLIP's patch embedding: F16 in an F16 file, F32 otherwise
 *         (MmprojModel); PATCH_F32 SmolVLM's: F32 (its ".embeddings.")
 *  ACONV  the Whisper encoder's convolutions: F16 in every file
 *  EMB    position and class embeddings: F32
 *  ONES, BIAS  norms and biases (1-D, or not a ".weight"): F32
 */
enum mm_gen_kind { MM_GEN_MAT, MM_GEN_PATCH, MM_GEN_PATCH_F32, MM_GEN_ACONV,
		   MM_GEN_EMB, MM_GEN_ONES, MM_GEN_BIAS };

struct mm_gen_mw {
	struct mm_gguf_writer *w;
	struct mm_gen_mctx *c;
	uint32_t type;
	struct mm_gen_mt *mt;	/* one per tensor, freed by the caller */
	size_t n_mt, cap_mt;
	int ret;
};

static void mm_gen_mt_add(struct mm_gen_mw *m, enum mm_gen_kind kind,
			  int nd, const int64_t *ne, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static void mm_gen_mt_add(struct mm_gen_mw *m, enum mm_gen_kind kind,
			  int nd, const int64_t *ne, const char *fmt, ...)
{
	struct mm_gen_mt *t;
	char name[MM_GGUF_MAX_NAME];
	int64_t fan = ne[0];
	va_list ap;

	if (m->ret)
		return;
	if (m->n_mt == m->cap_mt) {
		/* the writer keeps pointers: grow by chunks, never move */
		m->ret = -ENOSPC;
		return;
	}
	t = &m->mt[m->n_mt++];
	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	t->c = m->c;
	t->ne0 = ne[0];
	t->mean = 0;
	switch (kind) {
	case MM_GEN_MAT:
		t->type = mm_gen_fit(m->type, ne[0]);
		t->std = (float)(1.0 / sqrt((double)fan));
		break;
	case MM_GEN_PATCH:
	case MM_GEN_PATCH_F32:
	case MM_GEN_ACONV:
		for (int i = 1; i < nd - 1; i++)
			fan *= ne[i];
		t->type = kind == MM_GEN_ACONV ||
			  (kind == MM_GEN_PATCH && m->type == MM_TYPE_F16) ?
			  MM_TYPE_F16 : MM_TYPE_F32;
		t->std = (float)(1.0 / sqrt((double)fan));
		break;
	case MM_GEN_EMB:
		t->type = MM_TYPE_F32;
		t->std = 0.02f;
		break;
	case MM_GEN_ONES:
		t->type = MM_TYPE_F32;
		t->mean = 1.0f;
		t->std = 0.0f;
		break;
	case MM_GEN_BIAS:
		t->type = MM_TYPE_F32;
		t->std = 0.02f;
		break;
	}
	m->ret = mm_gguf_w_tensor_cb(m->w, name, t->type, (uint32_t)nd, ne,
				     mm_gen_mfill, t);
}

#define MM_GEN_NE(...) \
	(int)(sizeof((int64_t[]){ __VA_ARGS__ }) / sizeof(int64_t)), \
	(int64_t[]){ __VA_ARGS__ }

static void mm_gen_blocks(struct mm_gen_mw *m, const char *enc, uint32_t nl,
			  int64_t e, int64_t f, int k_bias)
{
	static const char *const att[] = { "attn_q", "attn_k", "attn_v",
					   "attn_out" };

	for (uint32_t l = 0; l < nl; l++) {
		mm_gen_mt_add(m, MM_GEN_ONES, MM_GEN_NE(e), "%s.blk.%u.ln1.weight",
			      enc, l);
		mm_gen_mt_add(m, MM_GEN_BIAS, MM_GEN_NE(e), "%s.blk.%u.ln1.bias",
			      enc, l);
		for (int k = 0; k < 4; k++) {
			mm_gen_mt_add(m, MM_GEN_MAT, MM_GEN_NE(e, e),
				      "%s.blk.%u.%s.weight", enc, l, att[k]);
			if (k != 1 || k_bias)
				mm_gen_mt_add(m, MM_GEN_BIAS, MM_GEN_NE(e),
					      "%s.blk.%u.%s.bias", enc, l,
					      att[k]);
		}
		mm_gen_mt_add(m, MM_GEN_ONES, MM_GEN_NE(e), "%s.blk.%u.ln2.weight",
			      enc, l);
		mm_gen_mt_add(m, MM_GEN_BIAS, MM_GEN_NE(e), "%s.blk.%u.ln2.bias",
			      enc, l);
		mm_gen_mt_add(m, MM_GEN_MAT, MM_GEN_NE(e, f),
			      "%s.blk.%u.ffn_up.weight", enc, l);
		mm_gen_mt_add(m, MM_GEN_BIAS, MM_GEN_NE(f),
			      "%s.blk.%u.ffn_up.bias", enc, l);
		mm_gen_mt_add(m, MM_GEN_MAT, MM_GEN_NE(f, e),
			      "%s.blk.%u.ffn_down.weight", enc, l);
		mm_gen_mt_add(m, MM_GEN_BIAS, MM_GEN_NE(e),
			      "%s.blk.%u.ffn_down.bias", enc, l);
	}
}

static void mm_gen_vision(struct mm_gen_mw *m, const struct mm_gen_vshape *v,
			  int both)
{
	static const float siglip[3] = { 0.5f, 0.5f, 0.5f };
	static const float clip_mean[3] = { 0.48145466f, 0.4578275f,
					    0.40821073f };
	static const float clip_std[3] = { 0.26862954f, 0.26130258f,
					   0.27577711f };
	int64_t e = v->n_embd, side = v->image / v->patch;
	struct mm_gguf_writer *w = m->w;
	int ret = m->ret;

#define W(call) do { if (!ret) ret = (call); } while (0)
	W(mm_gguf_w_str(w, both ? "clip.vision.projector_type" :
			"clip.projector_type", v->proj));
	W(mm_gguf_w_u32(w, "clip.vision.image_size", v->image));
	W(mm_gguf_w_u32(w, "clip.vision.patch_size", v->patch));
	W(mm_gguf_w_u32(w, "clip.vision.embedding_length", v->n_embd));
	W(mm_gguf_w_u32(w, "clip.vision.feed_forward_length", v->n_ff));
	W(mm_gguf_w_u32(w, "clip.vision.projection_dim", v->n_out));
	W(mm_gguf_w_u32(w, "clip.vision.block_count", v->n_layer));
	W(mm_gguf_w_u32(w, "clip.vision.attention.head_count", v->n_head));
	W(mm_gguf_w_f32(w, "clip.vision.attention.layer_norm_epsilon",
			v->clip ? 1e-5f : 1e-6f));
	W(mm_gguf_w_arr(w, "clip.vision.image_mean", MM_GGUF_F32,
			v->clip ? clip_mean : siglip, 3));
	W(mm_gguf_w_arr(w, "clip.vision.image_std", MM_GGUF_F32,
			v->clip ? clip_std : siglip, 3));
	W(mm_gguf_w_bool(w, "clip.use_gelu", !v->clip));
	if (!strcmp(v->proj, "idefics3"))
		W(mm_gguf_w_u32(w, "clip.vision.projector.scale_factor",
				v->scale));
	/* SmolVLM's processor size.longest_edge, mtmd's tile grid: the
	 * converter (smolvlm.py) writes it in every idefics3 file,
	 * image_size when the processor config has none */
	if (!strcmp(v->proj, "idefics3"))
		W(mm_gguf_w_u32(w, "clip.vision.preproc_image_size",
				v->preproc ? v->preproc : v->image));
#undef W
	m->ret = ret;
	mm_gen_mt_add(m, v->clip ? MM_GEN_PATCH : MM_GEN_PATCH_F32,
		      MM_GEN_NE(v->patch, v->patch, 3, e),
		      "v.patch_embd.weight");
	mm_gen_mt_add(m, MM_GEN_BIAS, MM_GEN_NE(e), "v.patch_embd.bias");
	if (v->clip)
		mm_gen_mt_add(m, MM_GEN_EMB, MM_GEN_NE(e), "v.class_embd");
	mm_gen_mt_add(m, MM_GEN_EMB, MM_GEN_NE(e, side * side + v->clip),
		      "v.position_embd.weight");
	if (v->clip) {
		mm_gen_mt_add(m, MM_GEN_ONES, MM_GEN_NE(e), "v.pre_ln.weight");
		mm_gen_mt_add(m, MM_GEN_BIAS, MM_GEN_NE(e), "v.pre_ln.bias");
	}
	mm_gen_blocks(m, "v", v->n_layer, e, v->n_ff, 1);
	if (!v->clip) {
		mm_gen_mt_add(m, MM_GEN_ONES, MM_GEN_NE(e), "v.post_ln.weight");
		mm_gen_mt_add(m, MM_GEN_BIAS, MM_GEN_NE(e), "v.post_ln.bias");
	}
	if (!strcmp(v->proj, "idefics3")) {
		mm_gen_mt_add(m, MM_GEN_MAT,
			      MM_GEN_NE(e * v->scale * v->scale, v->n_out),
			      "mm.model.fc.weight");
	} else {
		mm_gen_mt_add(m, MM_GEN_MAT, MM_GEN_NE(e, v->mm_hidden),
			      "mm.0.weight");
		mm_gen_mt_add(m, MM_GEN_BIAS, MM_GEN_NE(v->mm_hidden),
			      "mm.0.bias");
		mm_gen_mt_add(m, MM_GEN_MAT, MM_GEN_NE(v->mm_hidden, v->n_out),
			      "mm.2.weight");
		mm_gen_mt_add(m, MM_GEN_BIAS, MM_GEN_NE(v->n_out), "mm.2.bias");
	}
}

static void mm_gen_audio(struct mm_gen_mw *m, const struct mm_gen_ashape *a,
			 int both)
{
	int64_t e = a->n_embd, in = e * a->stack, mid = a->mm_hidden / 2;
	struct mm_gguf_writer *w = m->w;
	int ret = m->ret;

#define W(call) do { if (!ret) ret = (call); } while (0)
	W(mm_gguf_w_str(w, both ? "clip.audio.projector_type" :
			"clip.projector_type", "ultravox"));
	W(mm_gguf_w_u32(w, "clip.audio.num_mel_bins", a->n_mel));
	W(mm_gguf_w_u32(w, "clip.audio.embedding_length", a->n_embd));
	W(mm_gguf_w_u32(w, "clip.audio.feed_forward_length", a->n_ff));
	W(mm_gguf_w_u32(w, "clip.audio.projection_dim", a->n_out));
	W(mm_gguf_w_u32(w, "clip.audio.block_count", a->n_layer));
	W(mm_gguf_w_u32(w, "clip.audio.attention.head_count", a->n_head));
	W(mm_gguf_w_f32(w, "clip.audio.attention.layer_norm_epsilon", 1e-5f));
	W(mm_gguf_w_u32(w, "clip.audio.projector.stack_factor", a->stack));
#undef W
	m->ret = ret;
	mm_gen_mt_add(m, MM_GEN_ACONV, MM_GEN_NE(3, a->n_mel, e),
		      "a.conv1d.1.weight");
	mm_gen_mt_add(m, MM_GEN_BIAS, MM_GEN_NE(1, e), "a.conv1d.1.bias");
	mm_gen_mt_add(m, MM_GEN_ACONV, MM_GEN_NE(3, e, e), "a.conv1d.2.weight");
	mm_gen_mt_add(m, MM_GEN_BIAS, MM_GEN_NE(1, e), "a.conv1d.2.bias");
	mm_gen_mt_add(m, MM_GEN_EMB, MM_GEN_NE(e, a->n_pos),
		      "a.position_embd.weight");
	/* Whisper's k_proj has no bias */
	mm_gen_blocks(m, "a", a->n_layer, e, a->n_ff, 0);
	mm_gen_mt_add(m, MM_GEN_ONES, MM_GEN_NE(e), "a.post_ln.weight");
	mm_gen_mt_add(m, MM_GEN_BIAS, MM_GEN_NE(e), "a.post_ln.bias");
	mm_gen_mt_add(m, MM_GEN_ONES, MM_GEN_NE(in), "mm.a.norm_pre.weight");
	mm_gen_mt_add(m, MM_GEN_MAT, MM_GEN_NE(in, a->mm_hidden),
		      "mm.a.mlp.1.weight");
	mm_gen_mt_add(m, MM_GEN_ONES, MM_GEN_NE(mid), "mm.a.norm_mid.weight");
	mm_gen_mt_add(m, MM_GEN_MAT, MM_GEN_NE(mid, a->n_out),
		      "mm.a.mlp.2.weight");
}

static int mm_gen_mmproj_build(const struct mm_gen_mmproj_params *p,
			       struct mm_gen_mw *m, char *err, size_t errlen)
{
	const struct mm_gen_vshape *v = NULL;
	const struct mm_gen_ashape *a = NULL;
	char name[96];
	int ret = 0;

	for (size_t i = 0; p->vision &&
	     i < sizeof(mm_gen_vshapes) / sizeof(mm_gen_vshapes[0]); i++)
		if (!strcmp(p->vision, mm_gen_vshapes[i].name))
			v = &mm_gen_vshapes[i];
	for (size_t i = 0; p->audio &&
	     i < sizeof(mm_gen_ashapes) / sizeof(mm_gen_ashapes[0]); i++)
		if (!strcmp(p->audio, mm_gen_ashapes[i].name))
			a = &mm_gen_ashapes[i];
	if ((p->vision && !v) || (p->audio && !a) || (!v && !a)) {
		snprintf(err, errlen,
			 "unknown mmproj shape (vision: smolvlm-256m, smolvlm-224, llava-mlp, tiny, tiny-mlp, micro; audio: whisper-tiny, tiny, micro, tiny-30s, tiny-30s-s9)");
		return -EINVAL;
	}
	if (!mm_type_valid(p->type)) {
		snprintf(err, errlen,
			 "type must be f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q4_k or q6_k");
		return -EINVAL;
	}
	m->w = mm_gguf_writer_new(MM_GGUF_DEFAULT_ALIGNMENT);
	m->cap_mt = 512;
	m->mt = calloc(m->cap_mt, sizeof(*m->mt));
	if (!m->w || !m->mt)
		return -ENOMEM;
	m->type = p->type;
	m->c->seed = p->seed;
	snprintf(name, sizeof(name), "mmgguf mmproj %s%s%s (generated)",
		 v ? v->name : "", v && a ? "+" : "", a ? a->name : "");
#define W(call) do { if (!ret) ret = (call); } while (0)
	W(mm_gguf_w_str(m->w, "general.architecture", "clip"));
	W(mm_gguf_w_str(m->w, "general.type", "mmproj"));
	W(mm_gguf_w_str(m->w, "general.name", name));
	W(mm_gguf_w_u32(m->w, "general.file_type", mm_gen_ftype(p->type)));
	W(mm_gguf_w_bool(m->w, "clip.has_vision_encoder", v != NULL));
	W(mm_gguf_w_bool(m->w, "clip.has_audio_encoder", a != NULL));
#undef W
	m->ret = ret;
	if (v)
		mm_gen_vision(m, v, a != NULL);
	if (a)
		mm_gen_audio(m, a, v != NULL);
	if (m->ret)
		snprintf(err, errlen, "building the mmproj failed: %s",
			 strerror(-m->ret));
	return m->ret;
}

int mm_gen_mmproj(const struct mm_gen_mmproj_params *p, const char *path,
		  char *err, size_t errlen)
{
	struct mm_gen_mctx c = { 0 };
	struct mm_gen_mw m = { .c = &c };
	int ret = mm_gen_mmproj_build(p, &m, err, errlen);

	if (!ret)
		ret = mm_gguf_w_write_file(m.w, path, err, errlen);
	mm_gguf_writer_free(m.w);
	free(m.mt);
	free(c.tmp);
	return ret;
}

int mm_gen_mmproj_mem(const struct mm_gen_mmproj_params *p, void **buf,
		      size_t *size, char *err, size_t errlen)
{
	struct mm_gen_mctx c = { 0 };
	struct mm_gen_mw m = { .c = &c };
	int ret = mm_gen_mmproj_build(p, &m, err, errlen);

	if (!ret)
		ret = mm_gguf_w_write_mem(m.w, buf, size, err, errlen);
	mm_gguf_writer_free(m.w);
	free(m.mt);
	free(c.tmp);
	return ret;
}

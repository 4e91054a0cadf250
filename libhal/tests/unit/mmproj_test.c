// SPDX-License-Identifier: MIT
/*
 * mmproj_test.c - the multimodal projector loader: every generated
 * variant (SmolVLM-256M and 224-px idefics3 towers, LLaVA-style mlp,
 * Whisper-tiny + ultravox, both encoders in one file, tiny shapes) loads
 * back with its hparams and tensor types, and a malformed corpus made
 * here by rewriting a good file (missing or mistyped key, out-of-range
 * value, wrong shape, missing tensor, unknown projector, unsupported
 * tensor type, projector width against an LLM's) is rejected with a
 * message naming what is wrong.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gen.h"
#include "gguf.h"
#include "mmproj.h"
#include "quant.h"
#include "tests/tap.h"

static void *gen_mem(const char *vision, const char *audio, uint32_t type,
		     size_t *size)
{
	struct mm_gen_mmproj_params p = {
		.vision = vision, .audio = audio, .type = type, .seed = 1,
	};
	char err[256];
	void *buf = NULL;

	if (mm_gen_mmproj_mem(&p, &buf, size, err, sizeof(err))) {
		tap_diag("gen %s/%s: %s", vision ? vision : "-",
			 audio ? audio : "-", err);
		return NULL;
	}
	return buf;
}

/* ---- round trips -------------------------------------------------------- */

struct vcase {
	const char *shape;
	enum mm_mmproj_type proj;
	uint32_t image, n_embd, n_layer, scale, n_tokens, n_out;
	int clip;
};

static const struct vcase vcases[] = {
	{ "smolvlm-256m", MM_MMPROJ_IDEFICS3, 512, 768, 12, 4, 64, 576, 0 },
	{ "smolvlm-224", MM_MMPROJ_IDEFICS3, 224, 768, 12, 2, 49, 576, 0 },
	{ "llava-mlp", MM_MMPROJ_MLP, 224, 768, 12, 1, 196, 576, 1 },
	{ "tiny", MM_MMPROJ_IDEFICS3, 32, 256, 2, 2, 4, 256, 0 },
	{ "tiny-mlp", MM_MMPROJ_MLP, 32, 256, 2, 1, 16, 256, 1 },
	{ "micro", MM_MMPROJ_IDEFICS3, 16, 32, 1, 2, 1, 32, 0 },
};

struct acase {
	const char *shape;
	uint32_t n_mel, n_embd, n_layer, n_head, stack, n_pos, n_out;
};

static const struct acase acases[] = {
	{ "whisper-tiny", 80, 384, 4, 6, 8, 1500, 576 },
	{ "tiny", 16, 256, 2, 4, 2, 64, 256 },
	{ "micro", 8, 32, 1, 2, 2, 16, 32 },
};

static const uint32_t all_types[] = {
	MM_TYPE_F32, MM_TYPE_F16, MM_TYPE_BF16, MM_TYPE_Q8_0, MM_TYPE_Q4_0,
	MM_TYPE_Q4_1, MM_TYPE_Q5_0, MM_TYPE_Q4_K, MM_TYPE_Q6_K,
};

/* What the generator writes for a matrix of rows ne0 asked as t. */
static uint32_t fit(uint32_t t, int64_t ne0)
{
	if (ne0 % (int64_t)mm_type_block_elems(t) == 0)
		return t;
	t = t == MM_TYPE_Q4_K ? MM_TYPE_Q5_0 :
	    t == MM_TYPE_Q6_K ? MM_TYPE_Q8_0 : t;
	return ne0 % (int64_t)mm_type_block_elems(t) ? MM_TYPE_F16 : t;
}

static void check_vision(const struct vcase *c, uint32_t type)
{
	const struct mm_mmproj_vision *v;
	struct mm_mmproj *p = NULL;
	size_t size;
	char err[256] = "";
	void *buf = gen_mem(c->shape, NULL, type, &size);
	int ret = buf ? mm_mmproj_load_mem(buf, size, &p, err, sizeof(err)) :
		-ENOMEM;
	/* the converter's patch embedding: SmolVLM's F32, CLIP's F16 in an
	 * F16 file, F32 otherwise */
	uint32_t conv = c->clip && type == MM_TYPE_F16 ? MM_TYPE_F16 :
							 MM_TYPE_F32;

	v = mm_mmproj_vision(p);
	tap_ok(!ret && v && !mm_mmproj_audio(p) && v->proj == c->proj &&
	       v->image_size == c->image && v->n_embd == c->n_embd &&
	       v->n_layer == c->n_layer && v->scale_factor == c->scale &&
	       v->n_run == c->n_layer - (uint32_t)c->clip &&
	       v->n_tokens == c->n_tokens && v->n_out == c->n_out &&
	       v->proj_dim == c->n_out && !!v->class_embd.name == c->clip &&
	       !!v->pre_ln_w.name == c->clip && (!v->post_ln_w.name) == c->clip &&
	       v->act == (c->clip ? MM_MMPROJ_ACT_GELU_QUICK :
			  MM_MMPROJ_ACT_GELU) &&
	       v->blk[v->n_layer - 1].down_w.type ==
	       fit(type, v->n_ff) && v->blk[0].q_w.type == fit(type, c->n_embd) &&
	       v->patch_w.type == conv && v->blk[0].ln1_w.type == MM_TYPE_F32 &&
	       v->blk[0].q_w.data &&
	       !mm_mmproj_check_llm(p, c->n_out, err, sizeof(err)),
	       "vision %s at %s: loads back (%u tokens of %u, %s)", c->shape,
	       mm_type_name((enum mm_type)type), c->n_tokens, c->n_out,
	       ret ? err : mm_mmproj_type_name(c->proj));
	mm_mmproj_free(p);
	free(buf);
}

static void check_audio(const struct acase *c, uint32_t type)
{
	const struct mm_mmproj_audio *a;
	struct mm_mmproj *p = NULL;
	size_t size;
	char err[256] = "";
	void *buf = gen_mem(NULL, c->shape, type, &size);
	int ret = buf ? mm_mmproj_load_mem(buf, size, &p, err, sizeof(err)) :
		-ENOMEM;

	a = mm_mmproj_audio(p);
	tap_ok(!ret && a && !mm_mmproj_vision(p) &&
	       a->proj == MM_MMPROJ_ULTRAVOX && a->n_mel == c->n_mel &&
	       a->n_embd == c->n_embd && a->n_layer == c->n_layer &&
	       a->n_head == c->n_head && a->stack_factor == c->stack &&
	       a->n_pos == c->n_pos && a->n_out == c->n_out && a->swiglu &&
	       a->act == MM_MMPROJ_ACT_GELU_ERF && a->norm_pre.name &&
	       a->norm_mid.name && !a->blk[0].k_b.name && a->blk[0].q_b.name &&
	       a->blk[0].q_w.type == fit(type, c->n_embd) &&
	       a->mlp1_w.type == fit(type, (int64_t)c->n_embd * c->stack) &&
	       a->conv1_w.type == MM_TYPE_F16 &&
	       !mm_mmproj_check_llm(p, c->n_out, err, sizeof(err)),
	       "audio %s at %s: loads back (ultravox x%u -> %u)", c->shape,
	       mm_type_name((enum mm_type)type), c->stack,
	       ret ? 0 : c->n_out);
	if (ret)
		tap_diag("%s", err);
	mm_mmproj_free(p);
	free(buf);
}

static void test_round_trips(void)
{
	for (size_t i = 0; i < sizeof(vcases) / sizeof(vcases[0]); i++) {
		int big = vcases[i].n_layer > 2;

		for (size_t k = 0; k < sizeof(all_types) / sizeof(all_types[0]);
		     k++) {
			uint32_t t = all_types[k];

			/* the full-size towers once each (Q4_K: the
			 * fallbacks), the small ones at every type */
			if (big && t != (i == 1 ? MM_TYPE_Q4_K : MM_TYPE_Q8_0))
				continue;
			check_vision(&vcases[i], t);
		}
	}
	for (size_t i = 0; i < sizeof(acases) / sizeof(acases[0]); i++)
		for (size_t k = 0; k < sizeof(all_types) / sizeof(all_types[0]);
		     k++)
			check_audio(&acases[i], all_types[k]);
}

static void test_both(void)
{
	static const struct { const char *v, *a; uint32_t t, out; } c[] = {
		{ "smolvlm-224", "whisper-tiny", MM_TYPE_Q8_0, 576 },
		{ "tiny", "tiny", MM_TYPE_F16, 256 },
		{ "tiny-mlp", "tiny", MM_TYPE_Q4_K, 256 },
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct mm_mmproj *p = NULL;
		const struct mm_gguf *g;
		size_t size;
		char err[256] = "";
		void *buf = gen_mem(c[i].v, c[i].a, c[i].t, &size);
		int ret = buf ? mm_mmproj_load_mem(buf, size, &p, err,
						   sizeof(err)) : -ENOMEM;

		g = mm_mmproj_gguf(p);
		tap_ok(!ret && mm_mmproj_vision(p) && mm_mmproj_audio(p) &&
		       mm_gguf_find(g, "clip.vision.projector_type") &&
		       mm_gguf_find(g, "clip.audio.projector_type") &&
		       !mm_gguf_find(g, "clip.projector_type") &&
		       mm_mmproj_audio(p)->proj == MM_MMPROJ_ULTRAVOX &&
		       !mm_mmproj_check_llm(p, c[i].out, err, sizeof(err)),
		       "vision %s + audio %s at %s: one file, both encoders%s%s",
		       c[i].v, c[i].a, mm_type_name((enum mm_type)c[i].t),
		       ret ? ": " : "", ret ? err : "");
		mm_mmproj_free(p);
		free(buf);
	}
}

/* A file on disk loads too (mapped). */
static void test_file(void)
{
	struct mm_gen_mmproj_params gp = { .vision = "tiny", .audio = "micro",
					   .type = MM_TYPE_Q4_0, .seed = 3 };
	char path[] = "/tmp/mmproj_test_XXXXXX", err[256] = "";
	struct mm_mmproj *p = NULL;
	int fd = mkstemp(path), ret;

	if (fd >= 0)
		close(fd);
	ret = fd < 0 ? -errno : mm_gen_mmproj(&gp, path, err, sizeof(err));
	if (!ret)
		ret = mm_mmproj_load(path, &p, err, sizeof(err));
	tap_ok(!ret && mm_mmproj_vision(p) && mm_mmproj_audio(p) &&
	       mm_mmproj_vision(p)->blk[1].up_w.type == MM_TYPE_Q4_0,
	       "mm_mmproj_load() from a file: %s", ret ? err : "ok");
	mm_mmproj_free(p);
	unlink(path);
	ret = mm_mmproj_load("/nonexistent/mmproj.gguf", &p, err, sizeof(err));
	tap_ok(ret == -ENOENT && !p, "missing file: %d (%s)", ret, err);
}

/* ---- malformed corpus --------------------------------------------------- */

struct mut {
	const char *what;
	const char *drop_key;
	const char *key;	/* rewritten as key_type/key_val */
	uint32_t key_type;
	const char *key_str;
	uint64_t key_u;
	const char *drop_tensor;
	const char *tensor;	/* rewritten with ne or type */
	int64_t ne[2];
	uint32_t ttype;
	const char *add_key;	/* appended as add_type (U32, I32, ARR of
				 * i32 pairs) with value key_u */
	uint32_t add_type;
	const char *expect;	/* substring of the message */
	int err;
};

/* Copies src into a new file with m applied. */
static void *mutate(const void *src, size_t n, const struct mut *m,
		    size_t *size)
{
	struct mm_gguf_writer *w = mm_gguf_writer_new(MM_GGUF_DEFAULT_ALIGNMENT);
	struct mm_gguf *g;
	char err[256];
	void *out = NULL;
	int ret = mm_gguf_open_mem(src, n, &g, err, sizeof(err));

	if (ret || !w)
		goto done;
	for (uint64_t i = 0; i < mm_gguf_n_kv(g) && !ret; i++) {
		const struct mm_gguf_kv *kv = mm_gguf_kv_at(g, i);

		if (m->drop_key && !strcmp(kv->key, m->drop_key))
			continue;
		if (m->key && !strcmp(kv->key, m->key)) {
			switch (m->key_type) {
			case MM_GGUF_STR:
				ret = mm_gguf_w_str(w, kv->key, m->key_str);
				break;
			case MM_GGUF_I32:
				ret = mm_gguf_w_i32(w, kv->key, (int32_t)m->key_u);
				break;
			case MM_GGUF_U32:
				ret = mm_gguf_w_u32(w, kv->key, (uint32_t)m->key_u);
				break;
			case MM_GGUF_F32:
				ret = mm_gguf_w_f32(w, kv->key, (float)m->key_u);
				break;
			case MM_GGUF_BOOL:
				ret = mm_gguf_w_bool(w, kv->key, (int)m->key_u);
				break;
			case MM_GGUF_ARR: {
				const float two[2] = { 0.5f, 0.5f };

				ret = mm_gguf_w_arr(w, kv->key, MM_GGUF_F32, two, 2);
				break;
			}
			}
			continue;
		}
		ret = mm_gguf_w_kv(w, kv);
	}
	if (!ret && m->add_key) {
		static const int32_t pins[] = { 336, 672, 672, 336, 672, 672 };

		if (m->add_type == MM_GGUF_U32)
			ret = mm_gguf_w_u32(w, m->add_key, (uint32_t)m->key_u);
		else if (m->add_type == MM_GGUF_I32)
			ret = mm_gguf_w_i32(w, m->add_key, (int32_t)m->key_u);
		else
			ret = mm_gguf_w_arr(w, m->add_key, MM_GGUF_I32, pins, 6);
	}
	for (uint64_t i = 0; i < mm_gguf_n_tensors(g) && !ret; i++) {
		const struct mm_gguf_tensor *t = mm_gguf_tensor_at(g, i);

		if (m->drop_tensor && !strcmp(t->name, m->drop_tensor))
			continue;
		if (m->tensor && !strcmp(t->name, m->tensor)) {
			int64_t ne[4] = { t->ne[0], t->ne[1], t->ne[2], t->ne[3] };

			if (m->ne[0])
				ne[0] = m->ne[0], ne[1] = m->ne[1];
			ret = mm_gguf_w_tensor(w, t->name,
					       m->ttype ? m->ttype : t->type,
					       t->n_dims, ne, NULL);
			continue;
		}
		ret = mm_gguf_w_tensor(w, t->name, t->type, t->n_dims, t->ne,
				       t->data);
	}
	if (!ret)
		ret = mm_gguf_w_write_mem(w, &out, size, err, sizeof(err));
	if (ret)
		tap_diag("mutate '%s': %s", m->what, strerror(-ret));
	mm_gguf_close(g);
done:
	mm_gguf_writer_free(w);
	return ret ? NULL : out;
}

static const struct mut muts[] = {
	{ .what = "missing key", .drop_key = "clip.vision.block_count",
	  .expect = "key clip.vision.block_count: missing", .err = -ENOENT },
	{ .what = "missing audio key", .drop_key = "clip.audio.num_mel_bins",
	  .expect = "key clip.audio.num_mel_bins: missing", .err = -ENOENT },
	{ .what = "missing image_mean", .drop_key = "clip.vision.image_mean",
	  .expect = "key clip.vision.image_mean: missing", .err = -ENOENT },
	{ .what = "missing scale factor",
	  .drop_key = "clip.vision.projector.scale_factor",
	  .expect = "key clip.vision.projector.scale_factor: missing",
	  .err = -ENOENT },
	{ .what = "integer key as i32", .key = "clip.vision.embedding_length",
	  .key_type = MM_GGUF_I32, .key_u = 256,
	  .expect = "key clip.vision.embedding_length: type i32, expected u32",
	  .err = -EPROTO },
	{ .what = "epsilon as u32",
	  .key = "clip.audio.attention.layer_norm_epsilon",
	  .key_type = MM_GGUF_U32, .key_u = 0,
	  .expect = "key clip.audio.attention.layer_norm_epsilon: type u32, expected f32",
	  .err = -EPROTO },
	{ .what = "flag as u32", .key = "clip.use_gelu",
	  .key_type = MM_GGUF_U32, .key_u = 1,
	  .expect = "key clip.use_gelu: type u32, expected bool",
	  .err = -EPROTO },
	{ .what = "has_audio_encoder as string",
	  .key = "clip.has_audio_encoder", .key_type = MM_GGUF_STR,
	  .key_str = "true",
	  .expect = "key clip.has_audio_encoder: type string, expected bool",
	  .err = -EPROTO },
	{ .what = "image_std of 2", .key = "clip.vision.image_std",
	  .key_type = MM_GGUF_ARR,
	  .expect = "key clip.vision.image_std: array of 2 f32, expected 3 f32",
	  .err = -EPROTO },
	{ .what = "stack factor 0",
	  .key = "clip.audio.projector.stack_factor", .key_type = MM_GGUF_U32,
	  .key_u = 0,
	  .expect = "key clip.audio.projector.stack_factor: 0 out of range",
	  .err = -EINVAL },
	{ .what = "scale factor not dividing the grid",
	  .key = "clip.vision.projector.scale_factor", .key_type = MM_GGUF_U32,
	  .key_u = 3,
	  .expect = "key clip.vision.projector.scale_factor: 3 does not divide the 4-patch side",
	  .err = -EINVAL },
	{ .what = "heads not dividing the width",
	  .key = "clip.vision.attention.head_count", .key_type = MM_GGUF_U32,
	  .key_u = 3,
	  .expect = "key clip.vision.attention.head_count: 3 heads do not divide embedding_length 256",
	  .err = -EINVAL },
	{ .what = "patch size not dividing the image",
	  .key = "clip.vision.patch_size", .key_type = MM_GGUF_U32, .key_u = 7,
	  .expect = "key clip.vision.patch_size: 7 does not divide image_size 32",
	  .err = -EINVAL },
	{ .what = "unknown vision projector",
	  .key = "clip.vision.projector_type", .key_type = MM_GGUF_STR,
	  .key_str = "ldp",
	  .expect = "key clip.vision.projector_type: projector type 'ldp' not supported (idefics3, mlp)",
	  .err = -ENOTSUP },
	{ .what = "unknown audio projector",
	  .key = "clip.audio.projector_type", .key_type = MM_GGUF_STR,
	  .key_str = "qwen2a",
	  .expect = "projector type 'qwen2a' not supported (ultravox)",
	  .err = -ENOTSUP },
	{ .what = "audio projector on the vision side",
	  .key = "clip.vision.projector_type", .key_type = MM_GGUF_STR,
	  .key_str = "ultravox",
	  .expect = "projector type 'ultravox' is not a vision projector",
	  .err = -ENOTSUP },
	{ .what = "not a clip file", .key = "general.architecture",
	  .key_type = MM_GGUF_STR, .key_str = "llama",
	  .expect = "key general.architecture: 'llama', an mmproj is 'clip'",
	  .err = -EINVAL },
	{ .what = "projection_dim against mm.model.fc",
	  .key = "clip.vision.projection_dim", .key_type = MM_GGUF_U32,
	  .key_u = 576,
	  .expect = "tensor mm.model.fc.weight: 256 outputs, key clip.vision.projection_dim says 576",
	  .err = -EINVAL },
	{ .what = "wrong tensor shape", .tensor = "v.blk.1.ffn_up.weight",
	  .ne = { 256, 544 },
	  .expect = "tensor v.blk.1.ffn_up.weight: shape {256, 544, 1, 1}, expected {256, 512, 1, 1}",
	  .err = -EINVAL },
	{ .what = "wrong position table", .tensor = "v.position_embd.weight",
	  .ne = { 256, 17 },
	  .expect = "tensor v.position_embd.weight: shape {256, 17, 1, 1}, expected {256, 16, 1, 1}",
	  .err = -EINVAL },
	{ .what = "idefics3 fc not matching the shuffle",
	  .tensor = "mm.model.fc.weight", .ne = { 512, 256 },
	  .expect = "tensor mm.model.fc.weight: shape {512, 256, 1, 1}, expected {1024, 256, 1, 1}",
	  .err = -EINVAL },
	{ .what = "ultravox mlp.2 not fitting mlp.1",
	  .tensor = "mm.a.mlp.2.weight", .ne = { 384, 256 },
	  .expect = "tensor mm.a.mlp.2.weight: 384 inputs, expected 256 (SwiGLU) or 512",
	  .err = -EINVAL },
	{ .what = "missing tensor", .drop_tensor = "a.blk.0.attn_v.weight",
	  .expect = "tensor a.blk.0.attn_v.weight: missing", .err = -ENOENT },
	{ .what = "missing projector tensor", .drop_tensor = "mm.a.mlp.1.weight",
	  .expect = "tensor mm.a.mlp.1.weight: missing", .err = -ENOENT },
	{ .what = "missing half of a layer norm", .drop_tensor = "v.post_ln.bias",
	  .expect = "tensor v.post_ln.bias: missing", .err = -ENOENT },
	{ .what = "missing patch embedding",
	  .drop_tensor = "v.patch_embd.weight",
	  .expect = "tensor v.patch_embd.weight: missing", .err = -ENOENT },
	{ .what = "unsupported matrix type", .tensor = "v.blk.0.attn_q.weight",
	  .ttype = 7,
	  .expect = "tensor v.blk.0.attn_q.weight: type q5_1 not supported (f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q4_k q6_k)",
	  .err = -ENOTSUP },
	{ .what = "unsupported K type", .tensor = "a.blk.1.ffn_up.weight",
	  .ttype = 10,	/* q2_K */
	  .expect = "tensor a.blk.1.ffn_up.weight: type q2_k not supported",
	  .err = -ENOTSUP },
	{ .what = "quantized norm", .tensor = "a.post_ln.weight",
	  .ttype = MM_TYPE_Q8_0,
	  .expect = "tensor a.post_ln.weight: type q8_0 not supported (f32 f16 bf16)",
	  .err = -ENOTSUP },
};

static void test_malformed(void)
{
	size_t n;
	void *base = gen_mem("tiny", "tiny", MM_TYPE_F16, &n);

	if (!tap_ok(base != NULL, "malformed corpus: base file (tiny + tiny)"))
		return;
	for (size_t i = 0; i < sizeof(muts) / sizeof(muts[0]); i++) {
		const struct mut *m = &muts[i];
		struct mm_mmproj *p = NULL;
		char err[256] = "";
		size_t size;
		void *buf = mutate(base, n, m, &size);
		int ret = buf ? mm_mmproj_load_mem(buf, size, &p, err,
						   sizeof(err)) : -ENOMEM;

		tap_ok(ret == m->err && (ret ? !p : p != NULL) &&
		       (!m->expect || strstr(err, m->expect)),
		       "%s: %d \"%s\"", m->what, ret, err);
		mm_mmproj_free(p);
		free(buf);
	}
	free(base);
}

/* Keys the generator only writes in some files. */
static void test_flags(void)
{
	static const struct mut m[] = {
		{ .what = "no encoder", .key = "clip.has_vision_encoder",
		  .key_type = MM_GGUF_BOOL, .key_u = 0,
		  .expect = "keys clip.has_vision_encoder and clip.has_audio_encoder: no encoder",
		  .err = -ENOENT },
		{ .what = "unknown projector (single-encoder key)",
		  .key = "clip.projector_type", .key_type = MM_GGUF_STR,
		  .key_str = "resampler",
		  .expect = "key clip.projector_type: projector type 'resampler' not supported (idefics3, mlp)",
		  .err = -ENOTSUP },
		{ .what = "no projector_type at all",
		  .drop_key = "clip.projector_type",
		  .expect = "key clip.projector_type: missing", .err = -ENOENT },
		{ .what = "stacked feature layers (granite)",
		  .add_key = "clip.vision.feature_layer",
		  .add_type = MM_GGUF_I32, .key_u = 1,
		  .expect = "key clip.vision.feature_layer: stacked feature layers not supported",
		  .err = -ENOTSUP },
		{ .what = "mlp with one block (it runs all but the last)",
		  .key = "clip.vision.block_count", .key_type = MM_GGUF_U32,
		  .key_u = 1,
		  .expect = "key clip.vision.block_count: 1, an mlp projector takes the second-to-last block's output",
		  .err = -EINVAL },
	};
	size_t n;
	void *base = gen_mem("tiny-mlp", NULL, MM_TYPE_F32, &n);

	for (size_t i = 0; base && i < sizeof(m) / sizeof(m[0]); i++) {
		struct mm_mmproj *p = NULL;
		char err[256] = "";
		size_t size;
		void *buf = mutate(base, n, &m[i], &size);
		int ret = buf ? mm_mmproj_load_mem(buf, size, &p, err,
						   sizeof(err)) : -ENOMEM;

		tap_ok(ret == m[i].err && !p && strstr(err, m[i].expect),
		       "%s: %d \"%s\"", m[i].what, ret, err);
		mm_mmproj_free(p);
		free(buf);
	}
	free(base);
}

/* clip.vision.preproc_image_size (idefics3 tiles), image_grid_pinpoints */
static void test_preproc(void)
{
	static const struct mut m[] = {
		{ .what = "preproc_image_size read",
		  .key = "clip.vision.preproc_image_size",
		  .key_type = MM_GGUF_U32, .key_u = 2048 },
		{ .what = "preproc_image_size as i32",
		  .key = "clip.vision.preproc_image_size",
		  .key_type = MM_GGUF_I32, .key_u = 2048,
		  .expect = "key clip.vision.preproc_image_size: type i32, expected u32",
		  .err = -EPROTO },
		{ .what = "preproc_image_size 0",
		  .key = "clip.vision.preproc_image_size",
		  .key_type = MM_GGUF_U32, .key_u = 0,
		  .expect = "key clip.vision.preproc_image_size: 0 out of range",
		  .err = -EINVAL },
		{ .what = "preproc_image_size 65537",
		  .key = "clip.vision.preproc_image_size",
		  .key_type = MM_GGUF_U32, .key_u = 65537,
		  .expect = "key clip.vision.preproc_image_size: 65537 out of range",
		  .err = -EINVAL },
		{ .what = "LLaVA-1.6 pinpoints",
		  .add_key = "clip.vision.image_grid_pinpoints",
		  .add_type = MM_GGUF_ARR,
		  .expect = "key clip.vision.image_grid_pinpoints: LLaVA-1.6 anyres tiling not supported",
		  .err = -ENOTSUP },
	};

	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
		int mlp = m[i].add_type == MM_GGUF_ARR;
		struct mm_mmproj *p = NULL;
		char err[256] = "";
		size_t n, size;
		void *base = gen_mem(mlp ? "tiny-mlp" : "tiny", NULL,
				     MM_TYPE_F16, &n);
		void *buf = base ? mutate(base, n, &m[i], &size) : NULL;
		int ret = buf ? mm_mmproj_load_mem(buf, size, &p, err,
						   sizeof(err)) : -ENOMEM;

		if (!m[i].err)
			tap_ok(!ret && p &&
			       mm_mmproj_vision(p)->preproc_image_size ==
			       m[i].key_u, "%s: %u", m[i].what,
			       p ? mm_mmproj_vision(p)->preproc_image_size : 0);
		else
			tap_ok(ret == m[i].err && !p && strstr(err, m[i].expect),
			       "%s: %d \"%s\"", m[i].what, ret, err);
		mm_mmproj_free(p);
		free(buf);
		free(base);
	}
	/* without the key (not a converter's file): 0 */
	{
		static const struct mut drop = {
			.what = "no preproc_image_size",
			.drop_key = "clip.vision.preproc_image_size",
		};
		struct mm_mmproj *p = NULL;
		size_t n, size;
		void *base = gen_mem("tiny", NULL, MM_TYPE_F16, &n);
		void *buf = base ? mutate(base, n, &drop, &size) : NULL;

		tap_ok(buf && !mm_mmproj_load_mem(buf, size, &p, NULL, 0) &&
		       mm_mmproj_vision(p)->preproc_image_size == 0,
		       "no preproc_image_size: 0");
		mm_mmproj_free(p);
		free(buf);
		free(base);
	}
}

/* The projector's width against an LLM's token embedding width. */
static void test_llm_width(void)
{
	struct mm_gen_params lp = { .shape = "micro", .tokenizer = "gpt2",
				    .type = MM_TYPE_F32 };
	struct mm_mmproj *p = NULL;
	struct mm_gguf *g = NULL;
	void *lbuf = NULL, *buf;
	size_t ln = 0, n;
	uint32_t n_embd = 0;
	char err[256] = "";
	int ret;

	ret = mm_gen_model_mem(&lp, &lbuf, &ln, err, sizeof(err));
	if (!ret)
		ret = mm_gguf_open_mem(lbuf, ln, &g, err, sizeof(err));
	if (!ret)
		ret = mm_gguf_get_u32(g, "llama.embedding_length", &n_embd);
	buf = gen_mem("tiny", "micro", MM_TYPE_Q8_0, &n);
	if (!ret && buf)
		ret = mm_mmproj_load_mem(buf, n, &p, err, sizeof(err));
	tap_ok(!ret && n_embd == 32 &&
	       mm_mmproj_check_llm(p, n_embd, err, sizeof(err)) == -EINVAL &&
	       strstr(err, "projector idefics3 (tensor mm.model.fc.weight): output width 256, the LLM's embedding width is 32"),
	       "idefics3 256 wide against the 32-wide micro LLM: \"%s\"", err);
	mm_mmproj_free(p);
	free(buf);
	buf = gen_mem("micro", "tiny", MM_TYPE_F16, &n);
	p = NULL;
	ret = buf ? mm_mmproj_load_mem(buf, n, &p, err, sizeof(err)) : -ENOMEM;
	tap_ok(!ret && mm_mmproj_check_llm(p, n_embd, err, sizeof(err)) == -EINVAL &&
	       strstr(err, "projector ultravox (tensor mm.a.mlp.2.weight): output width 256, the LLM's embedding width is 32"),
	       "ultravox 256 wide against the micro LLM: \"%s\"", err);
	mm_mmproj_free(p);
	free(buf);
	buf = gen_mem("tiny-mlp", NULL, MM_TYPE_F16, &n);
	p = NULL;
	ret = buf ? mm_mmproj_load_mem(buf, n, &p, err, sizeof(err)) : -ENOMEM;
	tap_ok(!ret && mm_mmproj_check_llm(p, 576, err, sizeof(err)) == -EINVAL &&
	       strstr(err, "projector mlp (tensor mm.2.weight): output width 256, the LLM's embedding width is 576"),
	       "mlp 256 wide against a 576-wide LLM: \"%s\"", err);
	mm_mmproj_free(p);
	free(buf);
	mm_gguf_close(g);
	free(lbuf);
}


/* ---- files as llama.cpp's converter writes them ------------------------- */

static int ends_with(const char *s, const char *suf)
{
	size_t a = strlen(s), b = strlen(suf);

	return a >= b && !strcmp(s + a - b, suf);
}

/*
 * The type convert_hf_to_gguf.py gives a tensor of an mmproj of file type
 * ftype, from the tensor's role (written from the converter's rules, apart
 * from gen.c's): biases and anything not a ".weight", 1-D tensors, and
 * position and class embeddings F32; the Whisper convolutions F16;
 * SmolVLM's patch embedding F32 (".embeddings."), CLIP's F16 in an F16
 * file and F32 otherwise; matrices the file's type.
 */
static uint32_t conv_type(const struct mm_gguf_tensor *t, uint32_t ftype,
			  int idefics3)
{
	if (!ends_with(t->name, ".weight") || t->n_dims < 2 ||
	    strstr(t->name, "position_embd") || strstr(t->name, "class_embd"))
		return MM_TYPE_F32;
	if (!strncmp(t->name, "a.conv1d.", 9))
		return MM_TYPE_F16;
	if (!strcmp(t->name, "v.patch_embd.weight"))
		return !idefics3 && ftype == MM_TYPE_F16 ? MM_TYPE_F16 :
							   MM_TYPE_F32;
	/* a row the type cannot hold whole blocks of: the converter's
	 * quantizer raises and it falls back to F16 */
	return t->ne[0] % (int64_t)mm_type_block_elems(ftype) ? MM_TYPE_F16 :
								 ftype;
}

static void test_converter_types(void)
{
	static const char *const vis[] = { "tiny", "tiny-mlp", "micro", NULL };
	static const char *const aud[] = { "tiny", "micro", "tiny-30s", NULL };
	static const uint32_t types[] = { MM_TYPE_F32, MM_TYPE_F16,
					  MM_TYPE_BF16, MM_TYPE_Q8_0 };
	static const uint32_t ftypes[] = { 0, 1, 32, 7 };
	int files = 0, bad = 0;

	for (int k = 0; k < 4; k++)
		for (int i = 0; vis[i] || aud[i]; i++) {
			const char *v = vis[i], *a = aud[i];
			struct mm_gguf *g = NULL;
			char err[256] = "";
			uint32_t ft = 99;
			size_t n;
			void *buf = gen_mem(v, a, types[k], &n);

			if (!buf || mm_gguf_open_mem(buf, n, &g, err,
						     sizeof(err))) {
				tap_diag("%s+%s: %s", v ? v : "-", a ? a : "-",
					 err);
				bad++;
				free(buf);
				continue;
			}
			files++;
			if (mm_gguf_get_u32(g, "general.file_type", &ft) ||
			    ft != ftypes[k]) {
				tap_diag("%s+%s %s: general.file_type %u, want %u",
					 v ? v : "-", a ? a : "-",
					 mm_gguf_type_name(types[k]), ft,
					 ftypes[k]);
				bad++;
			}
			/* smolvlm.py writes the processor's longest edge in
			 * every idefics3 file, image_size without one (mtmd
			 * tiles by it); the LLaVA converter never */
			if (v) {
				int idefics3 = strcmp(v, "tiny-mlp") != 0;
				uint32_t pre = 0, img = 1;
				int has = !mm_gguf_get_u32(g,
					"clip.vision.preproc_image_size", &pre);

				mm_gguf_get_u32(g, "clip.vision.image_size", &img);
				if (has != idefics3 || (has && pre != img)) {
					tap_diag("%s: clip.vision.preproc_image_size %s%u, the converter writes %s",
						 v, has ? "" : "absent ", pre,
						 idefics3 ? "image_size" : "none");
					bad++;
				}
			}
			for (uint64_t j = 0; j < mm_gguf_n_tensors(g); j++) {
				const struct mm_gguf_tensor *t =
					mm_gguf_tensor_at(g, j);
				uint32_t want = conv_type(t, types[k],
							  v && strcmp(v, "tiny-mlp"));

				if (t->type != want) {
					tap_diag("%s+%s %s: %s is %s, the converter writes %s",
						 v ? v : "-", a ? a : "-",
						 mm_gguf_type_name(types[k]),
						 t->name,
						 mm_gguf_type_name(t->type),
						 mm_gguf_type_name(want));
					bad++;
				}
			}
			mm_gguf_close(g);
			free(buf);
		}
	tap_ok(files == 12 && !bad,
	       "mmproj files (%d): every tensor's type is the converter's for its role, general.file_type its ftype, idefics3's preproc_image_size",
	       files);
}

/* The text models: pre-tokenizer names llama.cpp knows, and the tokens of
 * the vocabularies they imitate ("\n\n" whole, SmolVLM's image tokens). */
static void test_converter_vocab(void)
{
	static const char *const shapes[] = { "tiny", "micro", "gqa4" };
	static const char *const toks[] = { "gpt2", "smolvlm", "llama" };
	/* tokenizer.ggml.pre values of llama.cpp's llama-vocab.cpp */
	static const char *const llama_pre[] = { "default", "gpt-2", "smollm" };
	int files = 0, bad = 0;

	for (int i = 0; i < 3; i++)
		for (int k = 0; k < 3; k++) {
			struct mm_gen_params lp = { .shape = shapes[i],
						    .tokenizer = toks[k],
						    .type = MM_TYPE_F32 };
			const struct mm_gguf_kv *kv;
			struct mm_gguf *g = NULL;
			char err[256] = "";
			const char *s = NULL;
			size_t n = 0, len = 0;
			uint64_t nt = 0;
			uint32_t et;
			void *buf = NULL;
			int known = 0, nn = 0, img = 0;

			if (mm_gen_model_mem(&lp, &buf, &n, err, sizeof(err)) ||
			    mm_gguf_open_mem(buf, n, &g, err, sizeof(err))) {
				tap_diag("%s/%s: %s", shapes[i], toks[k], err);
				bad++;
				free(buf);
				continue;
			}
			files++;
			if (!mm_gguf_get_str(g, "tokenizer.ggml.pre", &s, &len))
				for (int p = 0; p < 3; p++)
					known |= strlen(llama_pre[p]) == len &&
						 !memcmp(llama_pre[p], s, len);
			kv = mm_gguf_find(g, "tokenizer.ggml.tokens");
			if (kv && !mm_gguf_arr(kv, &et, &nt))
				for (uint64_t j = 0; j < nt; j++) {
					const char *t;
					size_t tl;

					if (mm_gguf_arr_str(kv, j, &t, &tl))
						continue;
					nn |= tl == 4 && !memcmp(t, "\xc4\x8a\xc4\x8a", 4);
					img += (tl == 25 && !memcmp(t, "<fake_token_around_image>", 25)) ||
					       (tl == 12 && !memcmp(t, "<global-img>", 12)) ||
					       (tl == 13 && !memcmp(t, "<row_1_col_1>", 13));
				}
			if (!known || (strcmp(toks[k], "llama") && !nn) ||
			    (!strcmp(toks[k], "smolvlm") && img != 3)) {
				tap_diag("%s/%s: pre '%.*s'%s, \"\\n\\n\" token %s, image tokens %d",
					 shapes[i], toks[k], (int)len,
					 s ? s : "", known ? "" : " (not a llama.cpp name)",
					 nn ? "present" : "missing", img);
				bad++;
			}
			mm_gguf_close(g);
			free(buf);
		}
	tap_ok(files == 9 && !bad,
	       "text models (%d): pre-tokenizer names llama.cpp knows, \"\\n\\n\" one token, SmolVLM's image tokens",
	       files);
}

int main(void)
{
	test_round_trips();
	test_both();
	test_file();
	test_malformed();
	test_flags();
	test_preproc();
	test_llm_width();
	test_converter_types();
	test_converter_vocab();
	return tap_done("mmproj");
}

// SPDX-License-Identifier: MIT
/*
 * mmproj.c - loader of the multimodal projector file (see mmproj.h).
 *
 * Keys are read with the exact GGUF types llama.cpp's clip loader demands
 * (u32 integers, f32 floats, bool flags, a string projector type, f32[3]
 * image mean/std) and checked against the ranges the encoders can run;
 * tensors with the names and ggml shapes (ne[0] innermost) the converter
 * writes:
 *
 *   v.patch_embd.weight   {patch, patch, 3, n_embd} (conv2d kernel)
 *   v.position_embd.weight {n_embd, n_patches (+1 with v.class_embd)}
 *   v.blk.N.*             attn_q/k/v/out {n_embd, n_embd}, ffn_up
 *                         {n_embd, n_ff}, ffn_down {n_ff, n_embd},
 *                         ln1/ln2 {n_embd}, biases {rows}
 *   mm.model.fc.weight    {n_embd * scale^2, n_out}            idefics3
 *   mm.0 / mm.2           {n_embd, hidden} / {hidden, n_out}   mlp
 *   a.conv1d.1.weight     {3, n_mel, n_embd}, a.conv1d.2 {3, n_embd,
 *                         n_embd}, biases {1, n_embd} (or {n_embd})
 *   a.position_embd.weight {n_embd, n_pos}
 *   mm.a.mlp.1.weight     {n_embd * stack, hidden}, mm.a.mlp.2 {hidden
 *                         or hidden / 2 (SwiGLU), n_out}     ultravox
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"
#include "mmproj.h"
#include "quant.h"
#include "sign.h"

#define MMP_MAX_DIM	65536u
#define MMP_MAX_LAYER	256u
#define MMP_MAX_IMAGE	8192u
#define MMP_MAX_PREPROC	65536u

struct mm_mmproj {
	struct mm_gguf *g;
	int has_vision, has_audio;
	struct mm_mmproj_vision v;
	struct mm_mmproj_audio a;
	void **own;		/* mm_mmproj_repack()'s weights, n_own */
	size_t n_own;
};

const char *mm_mmproj_type_name(enum mm_mmproj_type t)
{
	switch (t) {
	case MM_MMPROJ_IDEFICS3: return "idefics3";
	case MM_MMPROJ_MLP: return "mlp";
	case MM_MMPROJ_ULTRAVOX: return "ultravox";
	default: return "none";
	}
}

/* ---- keys ------------------------------------------------------------- */

static const struct mm_gguf_kv *mmp_kv(const struct mm_gguf *g,
				       const char *key, uint32_t type,
				       int required, char *err, size_t errlen,
				       int *ret)
{
	const struct mm_gguf_kv *kv = mm_gguf_find(g, key);

	*ret = 0;
	if (!kv) {
		if (required) {
			mm_errf(0, err, errlen, "key %s: missing", key);
			*ret = -ENOENT;
		}
		return NULL;
	}
	if (kv->type != type) {
		mm_errf(0, err, errlen, "key %s: type %s, expected %s", key,
			mm_gguf_vtype_name(kv->type) ?
			mm_gguf_vtype_name(kv->type) : "?",
			mm_gguf_vtype_name(type));
		*ret = -EPROTO;
		return NULL;
	}
	return kv;
}

/* A u32 key in [lo, hi]; absent and not required: def. */
static int mmp_u32(const struct mm_gguf *g, const char *key, int required,
		   uint32_t def, uint32_t lo, uint32_t hi, uint32_t *v,
		   char *err, size_t errlen)
{
	int ret;
	const struct mm_gguf_kv *kv = mmp_kv(g, key, MM_GGUF_U32, required,
					     err, errlen, &ret);

	if (!kv) {
		*v = def;
		return ret;
	}
	if (kv->v.u < lo || kv->v.u > hi) {
		mm_errf(0, err, errlen, "key %s: %llu out of range [%u, %u]", key,
			(unsigned long long)kv->v.u, lo, hi);
		return -EINVAL;
	}
	*v = (uint32_t)kv->v.u;
	return 0;
}

static int mmp_bool(const struct mm_gguf *g, const char *key, int *v,
		    char *err, size_t errlen)
{
	int ret;
	const struct mm_gguf_kv *kv = mmp_kv(g, key, MM_GGUF_BOOL, 0, err,
					     errlen, &ret);

	*v = kv ? kv->v.u != 0 : 0;
	return ret;
}

/* Layer norm epsilon: f32 in (0, 0.1]. */
static int mmp_eps(const struct mm_gguf *g, const char *key, float *v,
		   char *err, size_t errlen)
{
	int ret;
	const struct mm_gguf_kv *kv = mmp_kv(g, key, MM_GGUF_F32, 1, err,
					     errlen, &ret);

	if (!kv)
		return ret;
	if (!(kv->v.f > 0 && kv->v.f <= 0.1)) {
		mm_errf(0, err, errlen, "key %s: %g out of range (0, 0.1]", key,
			kv->v.f);
		return -EINVAL;
	}
	*v = (float)kv->v.f;
	return 0;
}

/* clip.vision.image_mean / image_std: f32[3], finite (std > 0). */
static int mmp_rgb(const struct mm_gguf *g, const char *key, int positive,
		   float v[3], char *err, size_t errlen)
{
	int ret;
	const struct mm_gguf_kv *kv = mmp_kv(g, key, MM_GGUF_ARR, 1, err,
					     errlen, &ret);

	if (!kv)
		return ret;
	if (kv->arr_type != MM_GGUF_F32 || kv->n != 3) {
		mm_errf(0, err, errlen, "key %s: array of %llu %s, expected 3 f32",
			key, (unsigned long long)kv->n,
			mm_gguf_vtype_name(kv->arr_type) ?
			mm_gguf_vtype_name(kv->arr_type) : "?");
		return -EPROTO;
	}
	for (int i = 0; i < 3; i++) {
		if (mm_gguf_arr_f32(kv, (uint64_t)i, &v[i]))
			return -EPROTO;
		if (!isfinite(v[i]) || (positive && !(v[i] > 0)) ||
		    v[i] > 1e3f || v[i] < -1e3f) {
			mm_errf(0, err, errlen, "key %s: element %d is %g", key, i,
				v[i]);
			return -EINVAL;
		}
	}
	return 0;
}

/*
 * The projector type of one encoder: clip.<enc>.projector_type, else
 * clip.projector_type (files with one encoder).
 */
static int mmp_proj(const struct mm_gguf *g, const char *enc,
		    enum mm_mmproj_type *t, char *err, size_t errlen)
{
	static const struct {
		const char *name;
		enum mm_mmproj_type t;
		int audio;
	} tab[] = {
		{ "idefics3", MM_MMPROJ_IDEFICS3, 0 },
		{ "mlp", MM_MMPROJ_MLP, 0 },
		{ "ultravox", MM_MMPROJ_ULTRAVOX, 1 },
	};
	char key[64];
	const struct mm_gguf_kv *kv;
	int ret, audio = !strcmp(enc, "audio");

	snprintf(key, sizeof(key), "clip.%s.projector_type", enc);
	kv = mmp_kv(g, key, MM_GGUF_STR, 0, err, errlen, &ret);
	if (ret)
		return ret;
	if (!kv) {
		snprintf(key, sizeof(key), "clip.projector_type");
		kv = mmp_kv(g, key, MM_GGUF_STR, 1, err, errlen, &ret);
		if (!kv)
			return ret;
	}
	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++) {
		if (strcmp(kv->v.str, tab[i].name))
			continue;
		if (tab[i].audio != audio) {
			mm_errf(0, err, errlen,
				"key %s: projector type '%s' is not a %s projector",
				key, kv->v.str, enc);
			return -ENOTSUP;
		}
		*t = tab[i].t;
		return 0;
	}
	mm_errf(0, err, errlen,
		"key %s: projector type '%.64s' not supported (%s)", key,
		kv->v.str, audio ? "ultravox" : "idefics3, mlp");
	return -ENOTSUP;
}

/* FFN activation of the vision encoder from clip.use_gelu/use_silu. */
static int mmp_act(const struct mm_gguf *g, enum mm_mmproj_act *act,
		   char *err, size_t errlen)
{
	int gelu, silu, ret;

	ret = mmp_bool(g, "clip.use_gelu", &gelu, err, errlen);
	if (!ret)
		ret = mmp_bool(g, "clip.use_silu", &silu, err, errlen);
	if (ret)
		return ret;
	if (gelu && silu) {
		mm_errf(0, err, errlen,
			"keys clip.use_gelu and clip.use_silu: both true");
		return -EINVAL;
	}
	*act = gelu ? MM_MMPROJ_ACT_GELU : silu ? MM_MMPROJ_ACT_SILU :
		MM_MMPROJ_ACT_GELU_QUICK;
	return 0;
}

/* ---- tensors ---------------------------------------------------------- */

enum mmp_kind {
	MMP_MAT,	/* matmul weight: any type the kernels run */
	MMP_VEC,	/* norm, bias, embedding, conv kernel: float types */
};

static int mmp_type_ok(uint32_t t, enum mmp_kind k)
{
	switch (t) {
	case 0: case 1: case 30:		/* f32 f16 bf16 */
		return 1;
	case 2: case 3: case 6: case 8:		/* q4_0 q4_1 q5_0 q8_0 */
	case 12: case 14:			/* q4_k q6_k */
		return k == MMP_MAT;
	default:
		return 0;
	}
}

/*
 * Finds tensor name of shape ne[0..n-1] (the rest 1). ne[i] < 0 takes the
 * file's value (read back through w->ne). Optional and absent: w->name
 * stays NULL and 0 is returned.
 */
static int mmp_tensor(const struct mm_gguf *g, const char *name,
		      enum mmp_kind kind, int optional, int n,
		      const int64_t *ne, struct mm_mmproj_w *w, char *err,
		      size_t errlen)
{
	const struct mm_gguf_tensor *t = mm_gguf_tensor(g, name);
	int64_t want[4] = { 1, 1, 1, 1 };
	int bad = 0;

	memset(w, 0, sizeof(*w));
	if (!t) {
		if (optional)
			return 0;
		mm_errf(0, err, errlen, "tensor %s: missing", name);
		return -ENOENT;
	}
	for (int i = 0; i < n; i++)
		want[i] = ne[i] < 0 ? t->ne[i] : ne[i];
	for (int i = 0; i < 4; i++)
		bad |= t->ne[i] != want[i];
	if (bad) {
		mm_errf(0, err, errlen,
			"tensor %s: shape {%lld, %lld, %lld, %lld}, expected {%lld, %lld, %lld, %lld}",
			name, (long long)t->ne[0], (long long)t->ne[1],
			(long long)t->ne[2], (long long)t->ne[3],
			(long long)want[0], (long long)want[1],
			(long long)want[2], (long long)want[3]);
		return -EINVAL;
	}
	if (!mmp_type_ok(t->type, kind)) {
		mm_errf(0, err, errlen, "tensor %s: type %s not supported (%s)",
			name, mm_gguf_type_name(t->type) ?
			mm_gguf_type_name(t->type) : "unknown",
			kind == MMP_MAT ?
			"f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q4_k q6_k" :
			"f32 f16 bf16");
		return -ENOTSUP;
	}
	w->name = t->name;
	w->type = t->type;
	w->n_dims = t->n_dims;
	memcpy(w->ne, t->ne, sizeof(w->ne));
	w->data = t->data;
	w->bytes = t->size;
	return 0;
}

#define MMP_T(nm, kind, opt, w, ...) \
	mmp_tensor(g, nm, kind, opt, \
		   (int)(sizeof((int64_t[]){ __VA_ARGS__ }) / sizeof(int64_t)), \
		   (int64_t[]){ __VA_ARGS__ }, w, err, errlen)

/* LayerNorm weight + bias, or neither when optional. */
static int mmp_ln(const struct mm_gguf *g, const char *pfx, int optional,
		  int64_t e, struct mm_mmproj_w *w, struct mm_mmproj_w *b,
		  char *err, size_t errlen)
{
	char nm[MM_GGUF_MAX_NAME];
	int ret;

	snprintf(nm, sizeof(nm), "%s.weight", pfx);
	ret = MMP_T(nm, MMP_VEC, optional, w, e);
	if (ret || !w->name) {
		memset(b, 0, sizeof(*b));
		return ret;
	}
	snprintf(nm, sizeof(nm), "%s.bias", pfx);
	return MMP_T(nm, MMP_VEC, 0, b, e);
}

/* Linear layer {in, out} with an optional bias {out}. */
static int mmp_linear(const struct mm_gguf *g, const char *pfx, int64_t in,
		      int64_t out, struct mm_mmproj_w *w,
		      struct mm_mmproj_w *b, char *err, size_t errlen)
{
	/* room for the suffix: gcc -O3 warned of truncation (a name past
	 * MM_GGUF_MAX_NAME is still not found) */
	char nm[MM_GGUF_MAX_NAME + sizeof(".weight")];
	int ret;

	snprintf(nm, sizeof(nm), "%s.weight", pfx);
	ret = MMP_T(nm, MMP_MAT, 0, w, in, out);
	if (ret)
		return ret;
	snprintf(nm, sizeof(nm), "%s.bias", pfx);
	return MMP_T(nm, MMP_VEC, 1, b, out);
}

static int mmp_blocks(const struct mm_gguf *g, const char *enc,
		      uint32_t n_layer, int64_t e, int64_t f,
		      struct mm_mmproj_block **out, char *err, size_t errlen)
{
	struct mm_mmproj_block *blk = calloc(n_layer, sizeof(*blk));
	char pfx[MM_GGUF_MAX_NAME];
	int ret = 0;

	*out = blk;
	if (!blk)
		return -ENOMEM;
	for (uint32_t l = 0; l < n_layer && !ret; l++) {
		struct mm_mmproj_block *b = &blk[l];
#define MMP_PFX(s) (snprintf(pfx, sizeof(pfx), "%s.blk.%u.%s", enc, l, s), pfx)
		ret = mmp_ln(g, MMP_PFX("ln1"), 0, e, &b->ln1_w, &b->ln1_b,
			     err, errlen);
		if (!ret)
			ret = mmp_linear(g, MMP_PFX("attn_q"), e, e, &b->q_w,
					 &b->q_b, err, errlen);
		if (!ret)
			ret = mmp_linear(g, MMP_PFX("attn_k"), e, e, &b->k_w,
					 &b->k_b, err, errlen);
		if (!ret)
			ret = mmp_linear(g, MMP_PFX("attn_v"), e, e, &b->v_w,
					 &b->v_b, err, errlen);
		if (!ret)
			ret = mmp_linear(g, MMP_PFX("attn_out"), e, e, &b->o_w,
					 &b->o_b, err, errlen);
		if (!ret)
			ret = mmp_ln(g, MMP_PFX("ln2"), 0, e, &b->ln2_w,
				     &b->ln2_b, err, errlen);
		if (!ret)
			ret = mmp_linear(g, MMP_PFX("ffn_up"), e, f, &b->up_w,
					 &b->up_b, err, errlen);
		if (!ret)
			ret = mmp_linear(g, MMP_PFX("ffn_down"), f, e,
					 &b->down_w, &b->down_b, err, errlen);
#undef MMP_PFX
	}
	return ret;
}

/* The encoder hparams shared by vision and audio. */
static int mmp_common(const struct mm_gguf *g, const char *enc,
		      uint32_t *n_embd, uint32_t *n_ff, uint32_t *n_layer,
		      uint32_t *n_head, uint32_t *proj_dim, float *eps,
		      char *err, size_t errlen)
{
	char key[80];
	int ret;

#define MMP_KEY(s) (snprintf(key, sizeof(key), "clip.%s.%s", enc, s), key)
	ret = mmp_u32(g, MMP_KEY("embedding_length"), 1, 0, 1, MMP_MAX_DIM,
		      n_embd, err, errlen);
	if (!ret)
		ret = mmp_u32(g, MMP_KEY("feed_forward_length"), 1, 0, 1,
			      4 * MMP_MAX_DIM, n_ff, err, errlen);
	if (!ret)
		ret = mmp_u32(g, MMP_KEY("block_count"), 1, 0, 1,
			      MMP_MAX_LAYER, n_layer, err, errlen);
	if (!ret)
		ret = mmp_u32(g, MMP_KEY("attention.head_count"), 1, 0, 1,
			      *n_embd, n_head, err, errlen);
	if (!ret && *n_embd % *n_head) {
		mm_errf(0, err, errlen,
			"key %s: %u heads do not divide embedding_length %u",
			key, *n_head, *n_embd);
		ret = -EINVAL;
	}
	if (!ret)
		ret = mmp_u32(g, MMP_KEY("projection_dim"), 1, 0, 1,
			      MMP_MAX_DIM, proj_dim, err, errlen);
	if (!ret)
		ret = mmp_eps(g, MMP_KEY("attention.layer_norm_epsilon"), eps,
			      err, errlen);
#undef MMP_KEY
	return ret;
}

/* ---- vision ----------------------------------------------------------- */

static int mmp_vision(struct mm_mmproj *p, char *err, size_t errlen)
{
	const struct mm_gguf *g = p->g;
	struct mm_mmproj_vision *v = &p->v;
	uint32_t side;
	int64_t e;
	int ret;

	ret = mmp_proj(g, "vision", &v->proj, err, errlen);
	if (!ret)
		ret = mmp_act(g, &v->act, err, errlen);
	if (!ret)
		ret = mmp_common(g, "vision", &v->n_embd, &v->n_ff,
				 &v->n_layer, &v->n_head, &v->proj_dim,
				 &v->eps, err, errlen);
	if (!ret)
		ret = mmp_u32(g, "clip.vision.image_size", 1, 0, 1,
			      MMP_MAX_IMAGE, &v->image_size, err, errlen);
	if (!ret)
		ret = mmp_u32(g, "clip.vision.patch_size", 1, 0, 1,
			      v->image_size, &v->patch_size, err, errlen);
	if (ret)
		return ret;
	if (v->image_size % v->patch_size) {
		mm_errf(0, err, errlen,
			"key clip.vision.patch_size: %u does not divide image_size %u",
			v->patch_size, v->image_size);
		return -EINVAL;
	}
	ret = mmp_rgb(g, "clip.vision.image_mean", 0, v->mean, err, errlen);
	if (!ret)
		ret = mmp_rgb(g, "clip.vision.image_std", 1, v->std, err,
			      errlen);
	side = v->image_size / v->patch_size;
	v->scale_factor = 1;
	if (!ret && v->proj == MM_MMPROJ_IDEFICS3) {
		ret = mmp_u32(g, "clip.vision.projector.scale_factor", 1, 0, 1,
			      side, &v->scale_factor, err, errlen);
		if (!ret && side % v->scale_factor) {
			mm_errf(0, err, errlen,
				"key clip.vision.projector.scale_factor: %u does not divide the %u-patch side",
				v->scale_factor, side);
			ret = -EINVAL;
		}
	}
	/* clip.cpp reads it (u32, optional) for idefics3 only */
	if (!ret && v->proj == MM_MMPROJ_IDEFICS3)
		ret = mmp_u32(g, "clip.vision.preproc_image_size", 0, 0, 1,
			      MMP_MAX_PREPROC, &v->preproc_image_size, err,
			      errlen);
	/* with pinpoints clip.cpp does LLaVA-1.6 anyres tiling: not here */
	if (!ret && v->proj == MM_MMPROJ_MLP &&
	    mm_gguf_find(g, "clip.vision.image_grid_pinpoints")) {
		mm_errf(0, err, errlen,
			"key clip.vision.image_grid_pinpoints: LLaVA-1.6 anyres tiling not supported (mlp projector without pinpoints only)");
		ret = -ENOTSUP;
	}
	/* with feature layers clip.cpp stacks several blocks' outputs
	 * (granite): not here */
	if (!ret && mm_gguf_find(g, "clip.vision.feature_layer")) {
		mm_errf(0, err, errlen,
			"key clip.vision.feature_layer: stacked feature layers not supported");
		ret = -ENOTSUP;
	}
	if (!ret && v->proj == MM_MMPROJ_MLP && v->n_layer < 2) {
		mm_errf(0, err, errlen,
			"key clip.vision.block_count: %u, an mlp projector takes the second-to-last block's output",
			v->n_layer);
		ret = -EINVAL;
	}
	if (ret)
		return ret;
	v->n_run = v->proj == MM_MMPROJ_MLP ? v->n_layer - 1 : v->n_layer;
	v->n_patches = side * side;
	e = v->n_embd;

	ret = MMP_T("v.patch_embd.weight", MMP_VEC, 0, &v->patch_w,
		    v->patch_size, v->patch_size, 3, e);
	if (!ret)
		ret = MMP_T("v.patch_embd.bias", MMP_VEC, 1, &v->patch_b, e);
	if (!ret)
		ret = MMP_T("v.class_embd", MMP_VEC, 1, &v->class_embd, e);
	v->n_pos = v->n_patches + (v->class_embd.name ? 1 : 0);
	if (!ret)
		ret = MMP_T("v.position_embd.weight", MMP_VEC, 0, &v->pos, e,
			    v->n_pos);
	if (!ret)
		ret = mmp_ln(g, "v.pre_ln", 1, e, &v->pre_ln_w, &v->pre_ln_b,
			     err, errlen);
	if (!ret)
		ret = mmp_ln(g, "v.post_ln", 1, e, &v->post_ln_w,
			     &v->post_ln_b, err, errlen);
	if (!ret)
		ret = mmp_blocks(g, "v", v->n_layer, e, v->n_ff, &v->blk, err,
				 errlen);
	if (ret)
		return ret;

	if (v->proj == MM_MMPROJ_IDEFICS3) {
		int64_t in = e * v->scale_factor * v->scale_factor;

		ret = MMP_T("mm.model.fc.weight", MMP_MAT, 0, &v->fc, in, -1);
		if (ret)
			return ret;
		v->n_out = (uint32_t)v->fc.ne[1];
		v->n_tokens = v->n_patches / (v->scale_factor * v->scale_factor);
		if (v->n_out != v->proj_dim) {
			mm_errf(0, err, errlen,
				"tensor mm.model.fc.weight: %u outputs, key clip.vision.projection_dim says %u",
				v->n_out, v->proj_dim);
			return -EINVAL;
		}
	} else {
		ret = MMP_T("mm.0.weight", MMP_MAT, 0, &v->mm0_w, e, -1);
		if (ret)
			return ret;
		v->n_mm_hidden = (uint32_t)v->mm0_w.ne[1];
		ret = MMP_T("mm.0.bias", MMP_VEC, 0, &v->mm0_b,
			    v->mm0_w.ne[1]);
		if (!ret)
			ret = MMP_T("mm.2.weight", MMP_MAT, 0, &v->mm2_w,
				    v->mm0_w.ne[1], -1);
		if (!ret)
			ret = MMP_T("mm.2.bias", MMP_VEC, 0, &v->mm2_b,
				    v->mm2_w.ne[1]);
		if (ret)
			return ret;
		v->n_out = (uint32_t)v->mm2_w.ne[1];
		v->n_tokens = v->n_patches;
	}
	if (v->n_out < 1 || v->n_out > MMP_MAX_DIM) {
		mm_errf(0, err, errlen, "projector %s: output width %u out of range",
			mm_mmproj_type_name(v->proj), v->n_out);
		return -EINVAL;
	}
	return 0;
}

/* ---- audio ------------------------------------------------------------ */

/* conv1d bias: {1, n} as the converter writes it, or {n}. */
static int mmp_conv_bias(const struct mm_gguf *g, const char *name,
			 int64_t n, struct mm_mmproj_w *w, char *err,
			 size_t errlen)
{
	const struct mm_gguf_tensor *t = mm_gguf_tensor(g, name);

	if (t && t->ne[0] == n && t->ne[1] == 1)
		return MMP_T(name, MMP_VEC, 0, w, n);
	return MMP_T(name, MMP_VEC, 0, w, 1, n);
}

static int mmp_audio(struct mm_mmproj *p, char *err, size_t errlen)
{
	const struct mm_gguf *g = p->g;
	struct mm_mmproj_audio *a = &p->a;
	int64_t e, in;
	int ret;

	ret = mmp_proj(g, "audio", &a->proj, err, errlen);
	if (!ret)
		ret = mmp_common(g, "audio", &a->n_embd, &a->n_ff, &a->n_layer,
				 &a->n_head, &a->proj_dim, &a->eps, err,
				 errlen);
	if (!ret)
		ret = mmp_u32(g, "clip.audio.num_mel_bins", 1, 0, 1, 1024,
			      &a->n_mel, err, errlen);
	if (!ret)
		ret = mmp_u32(g, "clip.audio.projector.stack_factor", 1, 0, 1,
			      64, &a->stack_factor, err, errlen);
	if (ret)
		return ret;
	/* Whisper's FFN is the erf GELU, whatever clip.use_gelu says */
	a->act = MM_MMPROJ_ACT_GELU_ERF;
	e = a->n_embd;

	ret = MMP_T("a.conv1d.1.weight", MMP_VEC, 0, &a->conv1_w, 3, a->n_mel,
		    e);
	if (!ret)
		ret = mmp_conv_bias(g, "a.conv1d.1.bias", e, &a->conv1_b, err,
				    errlen);
	if (!ret)
		ret = MMP_T("a.conv1d.2.weight", MMP_VEC, 0, &a->conv2_w, 3, e,
			    e);
	if (!ret)
		ret = mmp_conv_bias(g, "a.conv1d.2.bias", e, &a->conv2_b, err,
				    errlen);
	if (!ret)
		ret = MMP_T("a.position_embd.weight", MMP_VEC, 0, &a->pos, e,
			    -1);
	if (!ret && (a->pos.ne[1] < 1 || a->pos.ne[1] > 65536)) {
		mm_errf(0, err, errlen,
			"tensor a.position_embd.weight: %lld positions out of range",
			(long long)a->pos.ne[1]);
		ret = -EINVAL;
	}
	if (ret)
		return ret;
	a->n_pos = (uint32_t)a->pos.ne[1];
	ret = mmp_ln(g, "a.post_ln", 0, e, &a->post_ln_w, &a->post_ln_b, err,
		     errlen);
	if (!ret)
		ret = mmp_blocks(g, "a", a->n_layer, e, a->n_ff, &a->blk, err,
				 errlen);
	if (ret)
		return ret;

	in = e * a->stack_factor;
	ret = MMP_T("mm.a.norm_pre.weight", MMP_VEC, 1, &a->norm_pre, in);
	if (!ret)
		ret = MMP_T("mm.a.mlp.1.weight", MMP_MAT, 0, &a->mlp1_w, in, -1);
	if (!ret)
		ret = MMP_T("mm.a.mlp.2.weight", MMP_MAT, 0, &a->mlp2_w, -1, -1);
	if (ret)
		return ret;
	a->n_mm_hidden = (uint32_t)a->mlp1_w.ne[1];
	a->n_mm_mid = (uint32_t)a->mlp2_w.ne[0];
	a->n_out = (uint32_t)a->mlp2_w.ne[1];
	if (a->n_mm_mid * 2 == a->n_mm_hidden) {
		a->swiglu = 1;
	} else if (a->n_mm_mid != a->n_mm_hidden) {
		mm_errf(0, err, errlen,
			"tensor mm.a.mlp.2.weight: %u inputs, expected %u (SwiGLU) or %u (mm.a.mlp.1.weight outputs)",
			a->n_mm_mid, a->n_mm_hidden / 2, a->n_mm_hidden);
		return -EINVAL;
	}
	ret = MMP_T("mm.a.norm_mid.weight", MMP_VEC, 1, &a->norm_mid,
		    a->n_mm_mid);
	if (ret)
		return ret;
	if (a->n_out != a->proj_dim) {
		mm_errf(0, err, errlen,
			"tensor mm.a.mlp.2.weight: %u outputs, key clip.audio.projection_dim says %u",
			a->n_out, a->proj_dim);
		return -EINVAL;
	}
	return 0;
}

/* ---- load ------------------------------------------------------------- */

static int mmp_load(struct mm_mmproj *p, char *err, size_t errlen)
{
	const char *arch = mm_gguf_arch(p->g);
	int ret;

	if (!arch) {
		mm_errf(0, err, errlen, "key general.architecture: missing");
		return -ENOENT;
	}
	if (strcmp(arch, "clip")) {
		mm_errf(0, err, errlen,
			"key general.architecture: '%.64s', an mmproj is 'clip'",
			arch);
		return -EINVAL;
	}
	ret = mmp_bool(p->g, "clip.has_vision_encoder", &p->has_vision, err,
		       errlen);
	if (!ret)
		ret = mmp_bool(p->g, "clip.has_audio_encoder", &p->has_audio,
			       err, errlen);
	if (ret)
		return ret;
	if (!p->has_vision && !p->has_audio) {
		mm_errf(0, err, errlen,
			"keys clip.has_vision_encoder and clip.has_audio_encoder: no encoder");
		return -ENOENT;
	}
	if (p->has_vision) {
		ret = mmp_vision(p, err, errlen);
		if (ret)
			return ret;
	}
	if (p->has_audio)
		ret = mmp_audio(p, err, errlen);
	return ret;
}

static int mmp_finish(struct mm_mmproj *p, struct mm_mmproj **out, int ret,
		      char *err, size_t errlen)
{
	if (!ret)
		ret = mmp_load(p, err, errlen);
	if (ret) {
		mm_mmproj_free(p);
		return ret;
	}
	*out = p;
	return 0;
}

int mm_mmproj_load(const char *path, struct mm_mmproj **out, char *err,
		   size_t errlen)
{
	return mm_mmproj_load_verified(path, NULL, 0, out, err, errlen);
}

int mm_mmproj_load_verified(const char *path, const unsigned char *pk,
			    uint64_t min_version, struct mm_mmproj **out,
			    char *err, size_t errlen)
{
	struct mm_mmproj *p;

	if (err && errlen)
		err[0] = 0;
	if (!path || !out) {
		mm_errf(0, err, errlen, "path and out must not be NULL");
		return -EINVAL;
	}
	*out = NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	return mmp_finish(p, out, pk ?
			  mm_gguf_open_verified(path, pk, min_version, NULL,
						&p->g, err, errlen) :
			  mm_gguf_open(path, &p->g, err, errlen), err, errlen);
}

int mm_mmproj_load_mem(const void *data, size_t size, struct mm_mmproj **out,
		       char *err, size_t errlen)
{
	struct mm_mmproj *p;

	if (err && errlen)
		err[0] = 0;
	if (!data || !out) {
		mm_errf(0, err, errlen, "data and out must not be NULL");
		return -EINVAL;
	}
	*out = NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	return mmp_finish(p, out,
			  mm_gguf_open_mem(data, size, &p->g, err, errlen),
			  err, errlen);
}

void mm_mmproj_free(struct mm_mmproj *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n_own; i++)
		free(p->own[i]);
	free(p->own);
	free(p->v.blk);
	free(p->a.blk);
	mm_gguf_close(p->g);
	free(p);
}

const struct mm_mmproj_vision *mm_mmproj_vision(const struct mm_mmproj *p)
{
	return p && p->has_vision ? &p->v : NULL;
}

const struct mm_mmproj_audio *mm_mmproj_audio(const struct mm_mmproj *p)
{
	return p && p->has_audio ? &p->a : NULL;
}

const struct mm_gguf *mm_mmproj_gguf(const struct mm_mmproj *p)
{
	return p ? p->g : NULL;
}

int mm_mmproj_check_llm(const struct mm_mmproj *p, uint32_t n_embd,
			char *err, size_t errlen)
{
	if (!p)
		return -EINVAL;
	if (p->has_vision && p->v.n_out != n_embd) {
		mm_errf(0, err, errlen,
			"projector %s (tensor %s): output width %u, the LLM's embedding width is %u",
			mm_mmproj_type_name(p->v.proj),
			p->v.proj == MM_MMPROJ_IDEFICS3 ? "mm.model.fc.weight" :
			"mm.2.weight", p->v.n_out, n_embd);
		return -EINVAL;
	}
	if (p->has_audio && p->a.n_out != n_embd) {
		mm_errf(0, err, errlen,
			"projector %s (tensor mm.a.mlp.2.weight): output width %u, the LLM's embedding width is %u",
			mm_mmproj_type_name(p->a.proj), p->a.n_out, n_embd);
		return -EINVAL;
	}
	return 0;
}

/* ---- repacking float weights --------------------------------------------- */

/* MM_MMPROJ_NO_REPACK: the parser alone (the fuzz target), without the
 * quantizers the repacking needs */
#ifdef MM_MMPROJ_NO_REPACK
int mm_mmproj_repack(struct mm_mmproj *p, uint32_t type, size_t *n_repacked,
		     char *err, size_t errlen)
{
	(void)p;
	(void)type;
	if (n_repacked)
		*n_repacked = 0;
	return mm_errf(-ENOTSUP, err, errlen,
		       "mmproj repack: not in this build");
}
#else

/* w (a 2-D F32/F16/BF16 matmul weight whose rows are whole blocks of t)
 * as t in memory p owns; other weights left as they are */
static int mmp_repack_w(struct mm_mmproj *p, struct mm_mmproj_w *w,
			enum mm_type t, size_t *count)
{
	const int64_t k = w->ne[0], m = w->ne[1];
	enum mm_type st = (enum mm_type)w->type;
	size_t rs, srs;
	uint8_t *buf;
	float *row;
	void **own;

	if (!w->name || w->n_dims != 2 || k % (int64_t)mm_type_block_elems(t) ||
	    (st != MM_TYPE_F32 && st != MM_TYPE_F16 && st != MM_TYPE_BF16))
		return 0;
	rs = mm_row_bytes(t, k);
	srs = mm_row_bytes(st, k);
	own = realloc(p->own, (p->n_own + 1) * sizeof(*own));
	if (!own)
		return -ENOMEM;
	p->own = own;
	buf = malloc(rs * (size_t)m);
	row = malloc(sizeof(float) * (size_t)k);
	if (!buf || !row) {
		free(buf);
		free(row);
		return -ENOMEM;
	}
	for (int64_t j = 0; j < m; j++) {
		mm_dequantize_row(st, (const uint8_t *)w->data + (size_t)j * srs,
				  row, k);
		mm_quantize_row(t, row, buf + (size_t)j * rs, k);
	}
	free(row);
	p->own[p->n_own++] = buf;
	w->type = t;
	w->data = buf;
	w->bytes = rs * (size_t)m;
	(*count)++;
	return 0;
}

static int mmp_repack_blocks(struct mm_mmproj *p, struct mm_mmproj_block *b,
			     uint32_t n, enum mm_type t, size_t *count)
{
	int ret = 0;

	for (uint32_t i = 0; i < n && !ret; i++) {
		struct mm_mmproj_w *ws[] = { &b[i].q_w, &b[i].k_w, &b[i].v_w,
					     &b[i].o_w, &b[i].up_w,
					     &b[i].down_w };

		for (size_t j = 0; j < sizeof(ws) / sizeof(ws[0]) && !ret; j++)
			ret = mmp_repack_w(p, ws[j], t, count);
	}
	return ret;
}

int mm_mmproj_repack(struct mm_mmproj *p, uint32_t type, size_t *n_repacked,
		     char *err, size_t errlen)
{
	size_t count = 0;
	int ret = 0;

	if (n_repacked)
		*n_repacked = 0;
	if (!p || type != MM_TYPE_Q8_0)
		return mm_errf(-EINVAL, err, errlen,
			       "mmproj repack: only to q8_0");
	if (p->has_vision) {
		ret = mmp_repack_blocks(p, p->v.blk, p->v.n_layer,
					(enum mm_type)type, &count);
		if (!ret)
			ret = mmp_repack_w(p, &p->v.fc, (enum mm_type)type, &count);
		if (!ret)
			ret = mmp_repack_w(p, &p->v.mm0_w, (enum mm_type)type, &count);
		if (!ret)
			ret = mmp_repack_w(p, &p->v.mm2_w, (enum mm_type)type, &count);
	}
	if (!ret && p->has_audio) {
		ret = mmp_repack_blocks(p, p->a.blk, p->a.n_layer,
					(enum mm_type)type, &count);
		if (!ret)
			ret = mmp_repack_w(p, &p->a.mlp1_w, (enum mm_type)type, &count);
		if (!ret)
			ret = mmp_repack_w(p, &p->a.mlp2_w, (enum mm_type)type, &count);
	}
	if (n_repacked)
		*n_repacked = count;
	if (ret)
		return mm_errf(ret, err, errlen, "mmproj repack: out of memory");
	return 0;
}
#endif /* MM_MMPROJ_NO_REPACK */

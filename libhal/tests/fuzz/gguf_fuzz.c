// SPDX-License-Identifier: MIT
/*
 * gguf_fuzz.c - libFuzzer target: parse any bytes as GGUF, walk every KV,
 * array element and tensor byte, and load + exercise the tokenizer when
 * the file has one; load the same bytes as a multimodal projector
 * (mmproj), touch every weight it maps, check it against LLM widths and
 * plan + preprocess images for its vision tower. Crashes, sanitizer
 * reports and leaks are failures; rejecting the input is not.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "gguf.h"
#include "imgproc.h"
#include "mmproj.h"
#include "tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint64_t sink;

static void walk(const struct mm_gguf *g)
{
	uint64_t acc = mm_gguf_version(g) + mm_gguf_alignment(g) +
		       mm_gguf_data_offset(g);

	if (mm_gguf_arch(g))
		acc += strlen(mm_gguf_arch(g));
	for (uint64_t i = 0; i < mm_gguf_n_kv(g); i++) {
		const struct mm_gguf_kv *kv = mm_gguf_kv_at(g, i);
		uint32_t et;
		uint64_t n;

		acc += strlen(kv->key) + kv->type;
		if (mm_gguf_find(g, kv->key) != kv)
			__builtin_trap();
		if (kv->type == MM_GGUF_STR)
			acc += kv->n + (uint8_t)kv->v.str[kv->n ? kv->n - 1 : 0];
		if (mm_gguf_arr(kv, &et, &n))
			continue;
		for (uint64_t k = 0; k < n; k++) {
			const char *s;
			size_t len;
			float f;
			int32_t v;

			if (!mm_gguf_arr_str(kv, k, &s, &len))
				acc += len ? (uint8_t)s[len - 1] : 0;
			else if (!mm_gguf_arr_f32(kv, k, &f))
				acc += f != f;
			else if (!mm_gguf_arr_i32(kv, k, &v))
				acc += (uint32_t)v;
		}
	}
	for (uint64_t i = 0; i < mm_gguf_n_tensors(g); i++) {
		const struct mm_gguf_tensor *t = mm_gguf_tensor_at(g, i);
		const uint8_t *d = t->data;

		if (mm_gguf_tensor(g, t->name) != t)
			__builtin_trap();
		/* touch first and last byte: must be inside the input */
		if (t->size)
			acc += d[0] + d[t->size - 1];
	}
	sink = acc;
}

static void tok(const struct mm_gguf *g)
{
	static const char text[] = "Hello <|im_start|>world \xe2\x96\x81 caf\xc3\xa9 "
				   "\xf0\x9f\x98\x80 123 it's\n\n  x\xff";
	const struct mm_chat_msg msg[] = { { "user", "hi" } };
	struct mm_tok *t;
	int32_t ids[256];
	char out[1024];
	size_t len;
	int n = 0;

	if (mm_tok_load(g, &t, NULL, 0))
		return;
	if (!mm_tok_encode(t, text, sizeof(text) - 1, 1, 1, ids, 256, &n) ||
	    n > 0) {
		if (n > 256)
			n = 256;
		mm_tok_decode_ex(t, ids, n, MM_TOK_DECODE_SPECIAL, out,
				 sizeof(out), &len);
		mm_tok_decode(t, ids, n, out, sizeof(out), &len);
	}
	mm_tok_encode(t, text, sizeof(text) - 1, 0, 0, ids, 256, &n);
	for (int i = 0; i < mm_tok_n_vocab(t) && i < 512; i++)
		mm_tok_piece(t, i, MM_TOK_DECODE_SPECIAL, out, sizeof(out), &len);
	mm_tok_chat_format(t, msg, 1, 1, out, sizeof(out), &len);
	mm_tok_free(t);
}

static uint64_t touch(const struct mm_mmproj_w *w)
{
	const uint8_t *d = w->data;

	if (!w->name)
		return 0;
	/* a mapped weight lies inside the input */
	return w->bytes ? d[0] + d[w->bytes - 1] + w->ne[0] : w->ne[0];
}

static uint64_t touch_blk(const struct mm_mmproj_block *b)
{
	return touch(&b->ln1_w) + touch(&b->ln1_b) + touch(&b->q_w) +
	       touch(&b->q_b) + touch(&b->k_w) + touch(&b->k_b) +
	       touch(&b->v_w) + touch(&b->v_b) + touch(&b->o_w) +
	       touch(&b->o_b) + touch(&b->ln2_w) + touch(&b->ln2_b) +
	       touch(&b->up_w) + touch(&b->up_b) + touch(&b->down_w) +
	       touch(&b->down_b);
}

/* image plans for a few frame shapes; the pixels when the tower is small */
static uint64_t image(const struct mm_mmproj *p)
{
	static const uint32_t sz[][2] = {
		{ 1, 1 }, { 2, 2 }, { 640, 480 }, { 6, 40 }, { 65536, 2 },
	};
	static uint8_t y[64 * 48], uv[64 * 24];
	static float out[3 * 64 * 64];
	const struct mm_mmproj_vision *v = mm_mmproj_vision(p);
	struct mm_image im = {
		.format = MM_IMAGE_NV12, .width = 64, .height = 48,
		.plane = { y, uv }, .stride = { 64, 64 },
	};
	struct mm_image_plan pl;
	uint64_t acc = 0;

	for (size_t i = 0; i < sizeof(sz) / sizeof(sz[0]); i++)
		if (!mm_image_plan(p, sz[i][0], sz[i][1], 1, &pl, NULL, 0))
			acc += pl.n_images + pl.refined_w + pl.content_w;
	if (!v || v->image_size > 64)
		return acc;
	for (size_t i = 0; i < sizeof(y); i++)
		y[i] = (uint8_t)(i * 7);
	for (size_t i = 0; i < sizeof(uv); i++)
		uv[i] = (uint8_t)(i * 13);
	if (mm_image_plan(p, im.width, im.height, 1, &pl, NULL, 0))
		return acc;
	/* the overview, the first and the last tile */
	for (int t = -1; t < (int)(pl.n_images - 1); t++) {
		size_t n = 3 * (size_t)v->image_size * v->image_size;

		if (t == 1 && pl.n_images > 3)
			t = (int)pl.n_images - 2;
		if (!mm_image_preprocess_tile(p, &im, &pl, t, out, n, NULL, 0))
			acc += out[0] != out[0];
	}
	return acc;
}

static void mmproj(const uint8_t *data, size_t size)
{
	const struct mm_mmproj_vision *v;
	const struct mm_mmproj_audio *a;
	struct mm_mmproj *p;
	char err[256];
	uint64_t acc = 0;

	if (mm_mmproj_load_mem(data, size, &p, err, sizeof(err)))
		return;
	v = mm_mmproj_vision(p);
	a = mm_mmproj_audio(p);
	if (!v && !a)
		__builtin_trap();
	if (v) {
		acc += touch(&v->patch_w) + touch(&v->patch_b) + touch(&v->pos) +
		       touch(&v->class_embd) + touch(&v->pre_ln_w) +
		       touch(&v->pre_ln_b) + touch(&v->post_ln_w) +
		       touch(&v->post_ln_b) + touch(&v->fc) +
		       touch(&v->mm0_w) + touch(&v->mm0_b) +
		       touch(&v->mm2_w) + touch(&v->mm2_b);
		for (uint32_t i = 0; i < v->n_layer; i++)
			acc += touch_blk(&v->blk[i]);
		acc += strlen(mm_mmproj_type_name(v->proj));
		acc += image(p);
	}
	if (a) {
		acc += touch(&a->conv1_w) + touch(&a->conv1_b) +
		       touch(&a->conv2_w) + touch(&a->conv2_b) + touch(&a->pos) +
		       touch(&a->post_ln_w) + touch(&a->post_ln_b) +
		       touch(&a->norm_pre) + touch(&a->mlp1_w) +
		       touch(&a->norm_mid) + touch(&a->mlp2_w);
		for (uint32_t i = 0; i < a->n_layer; i++)
			acc += touch_blk(&a->blk[i]);
	}
	acc += (uint64_t)mm_mmproj_check_llm(p, 576, err, sizeof(err));
	acc += (uint64_t)mm_mmproj_check_llm(p, v ? v->n_out : a->n_out, err,
					     sizeof(err));
	sink += acc;
	mm_mmproj_free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mm_gguf *g;
	char err[256];

	if (mm_gguf_open_mem(data, size, &g, err, sizeof(err)))
		return 0;
	walk(g);
	tok(g);
	mm_gguf_close(g);
	mmproj(data, size);
	return 0;
}

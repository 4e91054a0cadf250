// SPDX-License-Identifier: MIT
/*
 * mm_api.c - the multimodal half of mmhal_model.h: an mmproj loaded for a
 * model (struct mmhal_mmproj), media encoded into chunks (struct
 * mmhal_chunk: the model's marker tokens and the encoders' embeddings in
 * decoder order) and their evaluation into a session, alone or inside a
 * prompt (MMHAL_MEDIA_MARKER).
 *
 * Chunk layouts, as llama.cpp's tools/mtmd (mtmd.cpp) lays media out for
 * each projector:
 *  - idefics3 (SmolVLM), overview only (no clip.vision.preproc_image_size,
 *    or tiles off):
 *      "\n\n" <fake_token_around_image><global-img> E(overview)
 *      <fake_token_around_image>
 *    (mtmd's idefics3 slice template with no tiles: its overview always
 *    opens with "\n\n", unlike transformers' Idefics3Processor
 *    single-image prompt, which has none);
 *  - idefics3 with tiles (an R x C grid; mtmd's slice template):
 *      for each row r, each column c:
 *        <fake_token_around_image><row_r_col_c> E(tile r, c)
 *      "\n" after every row but the last, then
 *      "\n\n" <fake_token_around_image><global-img> E(overview)
 *      <fake_token_around_image>
 *    (tiles first, the overview last; "\n" and "\n\n" are tokenized
 *    with the model's vocabulary);
 *  - mlp (LLaVA): E(image) alone;
 *  - ultravox: E(window) for each 30 s window, no markers.
 *
 * The marker tokens are looked up once at load with the model's tokenizer
 * (special tokens parsed); a vocabulary without them refuses the mmproj.
 * The session API (mmhal_ctx_eval(), mmhal_ctx_eval_embd_id()) evaluates
 * chunks, so a chunk works with any session of its model; the checks made
 * here (model, width, context space, marker count) leave their message in
 * the session (mmhal_ctx_error()) and evaluate nothing.
 *
 * Prefix reuse: a chunk's id (a 64-bit hash of its type, tokens and rows,
 * made when it is encoded) is recorded with its rows in the session, so
 * mmhal_ctx_eval_prompt() can tell which of the prompt's leading
 * positions (text and chunks) the cache already holds and evaluate only
 * the rest: a follow-up question on the same frame costs its own tokens.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/mm_file.h"
#include "common/mm_params.h"
#include "mmhal_model.h"
#include "audio.h"
#include "calib.h"
#include "cuda_enc.h"
#include "gguf.h"
#include "imgproc.h"
#include "llama_int.h"
#include "mhash.h"
#include "mmproj.h"
#include "vision.h"

#define MM_FAKE_TOKEN	"<fake_token_around_image>"
#define MM_GLOBAL_TOKEN	"<global-img>"

struct mmhal_mmproj {
	struct mm_mmproj *p;
	const struct mmhal_model *model;
	struct mmhal_mmproj_params params;
	int n_embd;
	uint64_t file_bytes;
	/* idefics3 markers */
	int32_t tok_fake, tok_global;
	/* the encoders' back end (cuda_enc.h) */
	struct mm_cuda_enc *cuda;
	int32_t nl[8], nlnl[8];	/* "\n", "\n\n" in the model's vocab */
	int n_nl, n_nlnl;
	/* static int8 calibration (calib.h), NULL: dynamic */
	struct mm_calib *cal;
	char *path;			/* the mmproj file, for its hash */
	uint8_t hash[MM_HASH_BYTES];
	int hashed;
};

/* A run of positions: tokens, or embedding rows. */
struct mm_seg {
	int embd;		/* 1: rows of embd, 0: ids of toks */
	int n;
	size_t off;		/* first id / first row */
};

struct mmhal_chunk {
	const struct mmhal_model *model;
	int type;
	int n_embd;
	int n_tiles;
	double preprocess_ms, encode_ms;
	uint64_t converted_bytes;	/* audio: mm_audio_input()'s bytes */
	int32_t *toks;
	int n_toks, cap_toks;
	float *embd;		/* n_rows x n_embd */
	int n_rows, cap_rows;
	struct mm_seg *seg;
	int n_seg, cap_seg;
	uint64_t id;		/* mm_chunk_seal(): what the rows are */
};

static double mm_api_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ---- mmproj ----------------------------------------------------------- */

MMHAL_API struct mmhal_mmproj_params mmhal_mmproj_default_params(void)
{
	struct mmhal_mmproj_params p = {
		.size = sizeof(struct mmhal_mmproj_params),
		.n_threads = 0,
		.image_tiles = 1,
		.audio_exact = 1,
	};

	return p;
}

/* One special token that must be a single id of the vocabulary. */
static int mm_marker_id(const struct mmhal_model *model, const char *text,
			const char *why, int32_t *id, char *err, size_t errlen)
{
	int32_t ids[8];
	int n = 0, ret;

	ret = mmhal_model_tokenize(model, text, strlen(text), 0, 1, ids, 8, &n);
	if ((ret && ret != -ENOSPC) || n != 1)
		return mm_errf(-EINVAL, err, errlen,
			       "the model's vocabulary has no %s token (%s needs it): it tokenizes to %d ids",
			       text, why, n);
	*id = ids[0];
	return 0;
}

/* Plain text of at most 8 ids ("\n", "\n\n"). */
static int mm_marker_text(const struct mmhal_model *model, const char *text,
			  int32_t *ids, int *n, char *err, size_t errlen)
{
	int ret = mmhal_model_tokenize(model, text, strlen(text), 0, 1, ids, 8,
				       n);

	if (ret || *n < 1)
		return mm_errf(ret ? ret : -EINVAL, err, errlen,
			       "the model's vocabulary cannot encode a newline (%d)",
			       ret);
	return 0;
}

static int mm_params_copy(const struct mmhal_mmproj_params *in,
			  struct mmhal_mmproj_params *out, char *err,
			  size_t errlen)
{
	int ret;

	*out = mmhal_mmproj_default_params();
	if (!in)
		return 0;
	ret = MM_PARAMS_IN(out, in, sizeof(uint32_t) + sizeof(int),
			   "mmproj params", err, errlen);
	if (ret)
		return ret;
	if (out->image_tiles != 0 && out->image_tiles != 1)
		return mm_errf(-EINVAL, err, errlen,
			       "mmproj params.image_tiles %d is not 0 or 1",
			       out->image_tiles);
	if (out->audio_exact != 0 && out->audio_exact != 1)
		return mm_errf(-EINVAL, err, errlen,
			       "mmproj params.audio_exact %d is not 0 or 1",
			       out->audio_exact);
	if (out->n_threads > 1024)
		return mm_errf(-EINVAL, err, errlen,
			       "mmproj params.n_threads %d is out of range",
			       out->n_threads);
	return 0;
}

MMHAL_API int mmhal_mmproj_load(const char *path,
				const struct mmhal_model *model,
				const struct mmhal_mmproj_params *params,
				struct mmhal_mmproj **out, char *err,
				size_t errlen)
{
	struct mmhal_mmproj *mp;
	struct mmhal_model_info mi;
	const struct mm_mmproj_vision *v;
	int ret;

	if (err && errlen)
		err[0] = 0;
	if (!out)
		return mm_errf(-EINVAL, err, errlen, "out is NULL");
	*out = NULL;
	if (!path || !model)
		return mm_errf(-EINVAL, err, errlen, "%s is NULL",
			       path ? "model" : "path");
	mp = calloc(1, sizeof(*mp));
	if (!mp)
		return mm_errf(-ENOMEM, err, errlen, "out of memory");
	ret = mm_params_copy(params, &mp->params, err, errlen);
	if (ret)
		goto fail;
	ret = mmhal_model_info(model, &mi);
	if (ret) {
		mm_errf(ret, err, errlen, "model info: %d", ret);
		goto fail;
	}
	/* the mmproj's own key, else the model's */
	ret = mm_mmproj_load_verified(path, mp->params.trusted_key ?
				      mp->params.trusted_key :
				      model->has_key ? model->trusted_key :
				      NULL, mp->params.min_version, &mp->p,
				      err, errlen);
	if (ret)
		goto fail;
	ret = mm_mmproj_check_llm(mp->p, (uint32_t)mi.n_embd, err, errlen);
	if (!ret)
		ret = mm_cuda_enc_setup(&mp->cuda, mp->p, mp->params.backend,
					err, errlen);
	if (ret)
		goto fail;
	mp->path = strdup(path);
	if (!mp->path) {
		ret = mm_errf(-ENOMEM, err, errlen, "out of memory");
		goto fail;
	}
	mp->model = model;
	mp->n_embd = mi.n_embd;
	mp->file_bytes = mm_gguf_file_size(mm_mmproj_gguf(mp->p));
	v = mm_mmproj_vision(mp->p);
	if (v && v->proj == MM_MMPROJ_IDEFICS3) {
		ret = mm_marker_id(model, MM_FAKE_TOKEN, "idefics3", &mp->tok_fake,
				   err, errlen);
		if (!ret)
			ret = mm_marker_id(model, MM_GLOBAL_TOKEN, "idefics3",
					   &mp->tok_global, err, errlen);
		if (!ret)
			ret = mm_marker_text(model, "\n", mp->nl, &mp->n_nl, err,
					     errlen);
		if (!ret)
			ret = mm_marker_text(model, "\n\n", mp->nlnl,
					     &mp->n_nlnl, err, errlen);
		if (!ret && v->preproc_image_size && mp->params.image_tiles) {
			int32_t id;

			ret = mm_marker_id(model, "<row_1_col_1>",
					   "idefics3 tiles", &id, err, errlen);
		}
		if (ret)
			goto fail;
	}
	*out = mp;
	return 0;
fail:
	mm_cuda_enc_free(mp->cuda);
	mm_mmproj_free(mp->p);
	free(mp->path);
	free(mp);
	return ret;
}

MMHAL_API void mmhal_mmproj_free(struct mmhal_mmproj *proj)
{
	if (!proj)
		return;
	mm_cal_free(proj->cal);
	mm_cuda_enc_free(proj->cuda);
	mm_mmproj_free(proj->p);
	free(proj->path);
	free(proj);
}

MMHAL_API int mmhal_mmproj_info(const struct mmhal_mmproj *proj,
				struct mmhal_mmproj_info *out)
{
	struct mmhal_mmproj_info i;
	const struct mm_mmproj_vision *v;
	const struct mm_mmproj_audio *a;

	if (!proj || !out)
		return -EINVAL;
	memset(&i, 0, sizeof(i));
	i.size = sizeof(i);
	v = mm_mmproj_vision(proj->p);
	a = mm_mmproj_audio(proj->p);
	if (v) {
		i.has_vision = 1;
		snprintf(i.vision_proj, sizeof(i.vision_proj), "%s",
			 mm_mmproj_type_name(v->proj));
		i.image_size = (int)v->image_size;
		i.image_tokens = (int)v->n_tokens;
	}
	if (a) {
		i.has_audio = 1;
		snprintf(i.audio_proj, sizeof(i.audio_proj), "%s",
			 mm_mmproj_type_name(a->proj));
		i.audio_rate = MM_AUDIO_RATE;
		i.n_mel = (int)a->n_mel;
	}
	i.n_embd = proj->n_embd;
	i.file_bytes = proj->file_bytes;
	snprintf(i.backend, sizeof(i.backend), "%s",
		 mm_cuda_enc_backend(proj->cuda));
	mm_cuda_enc_note(proj->cuda, i.backend_note, sizeof(i.backend_note));
	mm_cuda_enc_counts(proj->cuda, &i.cuda_products, &i.cuda_failed);
	return mm_params_out(out, &i, sizeof(i));
}

/* ---- chunks ------------------------------------------------------------ */

static struct mmhal_chunk *mm_chunk_new(const struct mmhal_mmproj *mp,
					int type)
{
	struct mmhal_chunk *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->model = mp->model;
	c->type = type;
	c->n_embd = mp->n_embd;
	return c;
}

MMHAL_API void mmhal_chunk_free(struct mmhal_chunk *c)
{
	if (!c)
		return;
	free(c->toks);
	free(c->embd);
	free(c->seg);
	free(c);
}

static int mm_chunk_seg(struct mmhal_chunk *c, int embd, int n, size_t off)
{
	struct mm_seg *s;

	if (c->n_seg && c->seg[c->n_seg - 1].embd == embd) {
		c->seg[c->n_seg - 1].n += n;
		return 0;
	}
	if (c->n_seg == c->cap_seg) {
		int cap = c->cap_seg ? 2 * c->cap_seg : 8;

		s = realloc(c->seg, (size_t)cap * sizeof(*s));
		if (!s)
			return -ENOMEM;
		c->seg = s;
		c->cap_seg = cap;
	}
	c->seg[c->n_seg++] = (struct mm_seg){ embd, n, off };
	return 0;
}

static int mm_chunk_toks(struct mmhal_chunk *c, const int32_t *ids, int n)
{
	if (c->n_toks + n > c->cap_toks) {
		int cap = c->cap_toks ? 2 * c->cap_toks : 32;
		int32_t *t;

		while (cap < c->n_toks + n)
			cap *= 2;
		t = realloc(c->toks, (size_t)cap * sizeof(*t));
		if (!t)
			return -ENOMEM;
		c->toks = t;
		c->cap_toks = cap;
	}
	memcpy(c->toks + c->n_toks, ids, (size_t)n * sizeof(*ids));
	c->n_toks += n;
	return mm_chunk_seg(c, 0, n, (size_t)(c->n_toks - n));
}

/* Appends n rows (uninitialized); returns where to write them. */
static float *mm_chunk_rows(struct mmhal_chunk *c, int n)
{
	if (c->n_rows + n > c->cap_rows) {
		float *e = realloc(c->embd, (size_t)(c->n_rows + n) *
					    (size_t)c->n_embd * sizeof(float));

		if (!e)
			return NULL;
		c->embd = e;
		c->cap_rows = c->n_rows + n;
	}
	if (mm_chunk_seg(c, 1, n, (size_t)c->n_rows))
		return NULL;
	c->n_rows += n;
	return c->embd + (size_t)(c->n_rows - n) * c->n_embd;
}

/*
 * The chunk's id, once complete: a hash of its type, tokens and rows (the
 * same frame encoded twice gives the same bits, so the same id), never 0
 * (anonymous rows). 64-bit words mixed as splitmix64's finalizer.
 */
static uint64_t mm_mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebull;
	return h ^ (h >> 31);
}

static void mm_chunk_seal(struct mmhal_chunk *c)
{
	const size_t nf = (size_t)c->n_rows * c->n_embd;
	uint64_t h = mm_mix((uint64_t)c->type, (uint64_t)c->n_embd);

	for (int i = 0; i < c->n_toks; i++)
		h = mm_mix(h, (uint32_t)c->toks[i]);
	for (int i = 0; i < c->n_seg; i++)
		h = mm_mix(h, ((uint64_t)c->seg[i].n << 1) | c->seg[i].embd);
	for (size_t i = 0; i + 1 < nf; i += 2) {
		uint32_t a, b;

		memcpy(&a, c->embd + i, 4);
		memcpy(&b, c->embd + i + 1, 4);
		h = mm_mix(h, ((uint64_t)a << 32) | b);
	}
	if (nf % 2) {
		uint32_t a;

		memcpy(&a, c->embd + nf - 1, 4);
		h = mm_mix(h, a);
	}
	c->id = h ? h : 1;
}

MMHAL_API int mmhal_chunk_info(const struct mmhal_chunk *c,
			       struct mmhal_chunk_info *out)
{
	struct mmhal_chunk_info i;

	if (!c || !out)
		return -EINVAL;
	memset(&i, 0, sizeof(i));
	i.size = sizeof(i);
	i.type = c->type;
	i.n_pos = c->n_toks + c->n_rows;
	i.n_embd_rows = c->n_rows;
	i.n_embd = c->n_embd;
	i.n_tiles = c->n_tiles;
	i.preprocess_ms = c->preprocess_ms;
	i.encode_ms = c->encode_ms;
	i.converted_bytes = c->converted_bytes;
	return mm_params_out(out, &i, sizeof(i));
}

MMHAL_API const float *mmhal_chunk_embd(const struct mmhal_chunk *c)
{
	return c ? c->embd : NULL;
}

/* ---- images ------------------------------------------------------------ */

static int mm_image_check(const struct mmhal_image *img, struct mm_image *im,
			  char *err, size_t errlen)
{
	size_t line;

	if (!img)
		return mm_errf(-EINVAL, err, errlen, "image is NULL");
	memset(im, 0, sizeof(*im));
	if (!img->width || !img->height || img->width > 65536 ||
	    img->height > 65536)
		return mm_errf(-EINVAL, err, errlen,
			       "image size %ux%u out of range (1..65536)",
			       img->width, img->height);
	switch (img->format) {
	case MMHAL_IMAGE_GREY:
	case MMHAL_IMAGE_RGB24:
		line = (size_t)img->width *
		       (img->format == MMHAL_IMAGE_RGB24 ? 3 : 1);
		if (!img->plane[0])
			return mm_errf(-EINVAL, err, errlen,
				       "image plane[0] is NULL");
		if (img->stride[0] < line)
			return mm_errf(-EINVAL, err, errlen,
				       "image stride[0] %zu is shorter than a line of %u pixels (%zu bytes)",
				       img->stride[0], img->width, line);
		break;
	case MMHAL_IMAGE_NV12:
		if ((img->width | img->height) & 1)
			return mm_errf(-EINVAL, err, errlen,
				       "NV12 image needs an even width and height, not %ux%u",
				       img->width, img->height);
		for (int i = 0; i < 2; i++) {
			if (!img->plane[i])
				return mm_errf(-EINVAL, err, errlen,
					       "NV12 image plane[%d] is NULL", i);
			if (img->stride[i] < img->width)
				return mm_errf(-EINVAL, err, errlen,
					       "NV12 image stride[%d] %zu is shorter than the width %u",
					       i, img->stride[i], img->width);
		}
		break;
	default:
		return mm_errf(-EINVAL, err, errlen,
			       "image format 0x%08x is not GREY, RGB24 or NV12",
			       img->format);
	}
	im->format = img->format;
	im->width = img->width;
	im->height = img->height;
	im->plane[0] = img->plane[0];
	im->plane[1] = img->format == MMHAL_IMAGE_NV12 ? img->plane[1] : NULL;
	im->stride[0] = img->stride[0];
	im->stride[1] = img->format == MMHAL_IMAGE_NV12 ? img->stride[1] : 0;
	return 0;
}

MMHAL_API int mmhal_mmproj_map_frames(const struct mmhal_mmproj *proj,
				      const void *addr, size_t bytes)
{
	if (!proj || !addr || !bytes)
		return -EINVAL;
	return mm_cuda_enc_map(proj->cuda, addr, bytes);
}

MMHAL_API void mmhal_mmproj_unmap_frames(const struct mmhal_mmproj *proj,
					 const void *addr, size_t bytes)
{
	if (proj && addr && bytes)
		mm_cuda_enc_unmap(proj->cuda, addr, bytes);
}

MMHAL_API int mmhal_encode_image(const struct mmhal_mmproj *mp,
				 const struct mmhal_image *img,
				 struct mmhal_chunk **out, char *err,
				 size_t errlen)
{
	const struct mm_mmproj_vision *v;
	struct mmhal_chunk *c = NULL;
	struct mm_image_plan plan;
	struct mm_image im;
	size_t n_px, n_tok, n_out;
	float *px = NULL;
	int ret, tiles, idefics;
	double t0;

	if (err && errlen)
		err[0] = 0;
	if (!out)
		return mm_errf(-EINVAL, err, errlen, "out is NULL");
	*out = NULL;
	if (!mp)
		return mm_errf(-EINVAL, err, errlen, "mmproj is NULL");
	v = mm_mmproj_vision(mp->p);
	if (!v)
		return mm_errf(-ENOENT, err, errlen,
			       "the mmproj has no vision encoder");
	ret = mm_image_check(img, &im, err, errlen);
	if (ret)
		return ret;
	idefics = v->proj == MM_MMPROJ_IDEFICS3;
	ret = mm_image_plan(mp->p, im.width, im.height,
			    idefics && mp->params.image_tiles, &plan, err,
			    errlen);
	if (ret)
		return ret;
	tiles = (int)(plan.n_rows * plan.n_cols);
	n_px = mm_vision_n_pixels(mp->p);
	n_tok = mm_vision_n_tokens(mp->p);
	n_out = n_tok * mm_vision_n_embd_out(mp->p);
	c = mm_chunk_new(mp, MMHAL_CHUNK_IMAGE);
	px = malloc(n_px * sizeof(float));
	if (!c || !px) {
		ret = mm_errf(-ENOMEM, err, errlen, "out of memory");
		goto fail;
	}
	c->n_tiles = tiles + 1;
	/* images in decoder order: tiles row-major, then the overview */
	for (int k = 0; k <= tiles; k++) {
		int tile = k < tiles ? k : -1;
		float *rows;

		ret = 0;
		if (idefics && tile >= 0) {
			char t[64];
			int32_t ids[8];
			int n = 0;

			snprintf(t, sizeof(t), MM_FAKE_TOKEN "<row_%u_col_%u>",
				 (unsigned)(tile / plan.n_cols) + 1,
				 (unsigned)(tile % plan.n_cols) + 1);
			ret = mmhal_model_tokenize(mp->model, t, strlen(t), 0,
						   1, ids, 8, &n);
			if (ret || n != 2 || ids[0] != mp->tok_fake) {
				ret = mm_errf(-EINVAL, err, errlen,
					      "the model's vocabulary has no <row_%u_col_%u> token (idefics3 tiles need it)",
					      (unsigned)(tile / plan.n_cols) + 1,
					      (unsigned)(tile % plan.n_cols) + 1);
				goto fail;
			}
			ret = mm_chunk_toks(c, ids, 2);
		} else if (idefics) {
			int32_t ov[2] = { mp->tok_fake, mp->tok_global };

			/* "\n\n" with or without tiles, as mtmd */
			ret = mm_chunk_toks(c, mp->nlnl, mp->n_nlnl);
			if (!ret)
				ret = mm_chunk_toks(c, ov, 2);
		}
		rows = ret ? NULL : mm_chunk_rows(c, (int)n_tok);
		if (!rows) {
			ret = mm_errf(-ENOMEM, err, errlen, "out of memory");
			goto fail;
		}
		/* the CUDA back end: the overview of a frame in a mapping
		 * declared by mmhal_mmproj_map_frames() preprocessed and
		 * patch-embedded on the device, the frame read in place;
		 * anything the device does not do: the CPU below */
		if (tile < 0 && !mp->cal && mm_cuda_enc_dev(mp->cuda)) {
			size_t n_pe = (size_t)v->n_patches * v->n_embd;
			float *pe = malloc(n_pe * sizeof(float));
			int dev;

			t0 = mm_api_ms();
			dev = pe && mm_cuda_enc_image(mp->cuda, mp->p, &im,
						      &plan, pe);
			c->preprocess_ms += mm_api_ms() - t0;
			if (dev) {
				t0 = mm_api_ms();
				ret = mm_vision_encode_pe(mp->p,
					mm_cuda_enc_dev(mp->cuda), pe, rows,
					n_out, mp->params.n_threads, err,
					errlen);
				c->encode_ms += mm_api_ms() - t0;
			}
			free(pe);
			if (dev && ret)
				goto fail;
			if (dev)
				goto encoded;
		}
		t0 = mm_api_ms();
		ret = mm_image_preprocess_tile(mp->p, &im, &plan, tile, px, n_px,
					       err, errlen);
		c->preprocess_ms += mm_api_ms() - t0;
		if (ret)
			goto fail;
		t0 = mm_api_ms();
		ret = mm_vision_encode_dev(mp->p, mp->cal, mp->cal ?
					   MM_CAL_STATIC : MM_CAL_DYNAMIC,
					   mm_cuda_enc_dev(mp->cuda), px,
					   n_px, rows, n_out,
					   mp->params.n_threads, err, errlen);
		c->encode_ms += mm_api_ms() - t0;
encoded:
		if (ret)
			goto fail;
		if (idefics && tile < 0)
			ret = mm_chunk_toks(c, &mp->tok_fake, 1);
		else if (idefics && (unsigned)(tile % plan.n_cols) ==
					    plan.n_cols - 1 &&
			 (unsigned)(tile / plan.n_cols) + 1 < plan.n_rows)
			ret = mm_chunk_toks(c, mp->nl, mp->n_nl);
		if (ret) {
			ret = mm_errf(-ENOMEM, err, errlen, "out of memory");
			goto fail;
		}
	}
	free(px);
	mm_chunk_seal(c);
	*out = c;
	return 0;
fail:
	free(px);
	mmhal_chunk_free(c);
	return ret;
}

/* ---- audio ------------------------------------------------------------- */

MMHAL_API int mmhal_encode_audio(const struct mmhal_mmproj *mp,
				 const struct mmhal_audio *au,
				 struct mmhal_chunk **out, char *err,
				 size_t errlen)
{
	const struct mm_mmproj_audio *a;
	struct mmhal_chunk *c = NULL;
	struct mm_audio_in in;
	float *mel = NULL;
	size_t n_frames = 0, n_chunks, w = 0;
	int ret, exact;
	double t0;

	if (err && errlen)
		err[0] = 0;
	if (!out)
		return mm_errf(-EINVAL, err, errlen, "out is NULL");
	*out = NULL;
	if (!mp)
		return mm_errf(-EINVAL, err, errlen, "mmproj is NULL");
	a = mm_mmproj_audio(mp->p);
	if (!a)
		return mm_errf(-ENOENT, err, errlen,
			       "the mmproj has no audio encoder");
	exact = mp->params.audio_exact;
	t0 = mm_api_ms();
	ret = mm_audio_input(au, &in, err, errlen);
	if (ret)
		return ret;
	ret = in.s16 ? mm_audio_mel(mp->p, in.s16, in.n, exact, &mel,
				    &n_frames, err, errlen) :
		       mm_audio_mel_f32(mp->p, in.f32, in.n, exact, &mel,
					&n_frames, err, errlen);
	free(in.f32);
	if (ret)
		return ret;
	c = mm_chunk_new(mp, MMHAL_CHUNK_AUDIO);
	if (!c) {
		ret = mm_errf(-ENOMEM, err, errlen, "out of memory");
		goto out;
	}
	c->preprocess_ms = mm_api_ms() - t0;
	c->converted_bytes = in.bytes;
	n_chunks = mm_audio_n_chunks(n_frames);
	for (size_t k = 0; k < n_chunks; k++) {
		const float *win;
		size_t nf = mm_audio_chunk(mp->p, mel, n_frames, k, &win);
		size_t nt = mm_audio_n_tokens(mp->p, nf, exact);
		float *rows;

		if (!nf)
			continue;	/* the dropped incomplete window */
		if (!nt) {
			ret = mm_errf(-EINVAL, err, errlen,
				      "audio window of %zu mel frames: the encoder takes at most %u (a.position_embd has %u rows)%s",
				      nf, 2 * a->n_pos, a->n_pos,
				      exact ? "; exact mode needs 3000" : "");
			goto out;
		}
		rows = mm_chunk_rows(c, (int)nt);
		if (!rows) {
			ret = mm_errf(-ENOMEM, err, errlen, "out of memory");
			goto out;
		}
		t0 = mm_api_ms();
		ret = mm_audio_encode_dev(mp->p, mp->cal, mp->cal ?
					  MM_CAL_STATIC : MM_CAL_DYNAMIC,
					  mm_cuda_enc_dev(mp->cuda), win,
					  nf, exact, rows,
					  nt * mm_audio_n_embd_out(mp->p),
					  mp->params.n_threads, err, errlen);
		c->encode_ms += mm_api_ms() - t0;
		if (ret)
			goto out;
		w++;
	}
	if (!w) {
		ret = mm_errf(-EINVAL, err, errlen,
			      "audio of %zu samples gives no encoder window",
			      in.n);
		goto out;
	}
	c->n_tiles = (int)w;
out:
	free(mel);
	if (ret) {
		mmhal_chunk_free(c);
	} else {
		mm_chunk_seal(c);
		*out = c;
	}
	return ret;
}

/* ---- evaluation ---------------------------------------------------------- */

static int mm_fits(struct mmhal_ctx *ctx, int n)
{
	struct mmhal_model_stats st;

	if (mmhal_ctx_stats(ctx, &st))
		return -EINVAL;
	if (st.n_past + (int64_t)n <= st.n_ctx)
		return 0;
	return mm_errf(-ENOSPC, ctx->err, sizeof(ctx->err),
		       "context full: %d positions + %d of the prompt/chunk > n_ctx %d (nothing evaluated)",
		       st.n_past, n, st.n_ctx);
}

static int mm_eval_segs(struct mmhal_ctx *ctx, const struct mmhal_chunk *c,
			float *logits_last, int last)
{
	int ret = 0;

	for (int i = 0; i < c->n_seg && !ret; i++) {
		const struct mm_seg *s = &c->seg[i];
		float *lg = last && i == c->n_seg - 1 ? logits_last : NULL;

		if (s->embd)
			ret = mmhal_ctx_eval_embd_id(ctx,
						     c->embd + s->off * c->n_embd,
						     s->n, c->n_embd, c->id, lg);
		else
			ret = mmhal_ctx_eval(ctx, c->toks + s->off, s->n, lg);
	}
	return ret;
}

static int mm_chunk_check(struct mmhal_ctx *ctx, const struct mmhal_chunk *c,
			  int i)
{
	const struct mmhal_model *m = mmhal_ctx_model(ctx);
	struct mmhal_model_info mi;

	if (!c)
		return mm_errf(-EINVAL, ctx->err, sizeof(ctx->err),
			       "chunk %d is NULL", i);
	if (!m || mmhal_model_info(m, &mi))
		return -EINVAL;
	if (c->model != m)
		return mm_errf(-EINVAL, ctx->err, sizeof(ctx->err),
			       "chunk %d was encoded by an mmproj loaded for another model",
			       i);
	if (c->n_embd != mi.n_embd)
		return mm_errf(-EINVAL, ctx->err, sizeof(ctx->err),
			       "chunk %d has rows of %d, the model's width is %d",
			       i, c->n_embd, mi.n_embd);
	return 0;
}

MMHAL_API int mmhal_ctx_eval_chunk(struct mmhal_ctx *ctx,
				   const struct mmhal_chunk *c,
				   float *logits_last)
{
	int ret;

	if (!ctx || !c)
		return -EINVAL;
	ret = mm_chunk_check(ctx, c, 0);
	if (!ret)
		ret = mm_fits(ctx, c->n_toks + c->n_rows);
	if (!ret)
		ret = mm_eval_segs(ctx, c, logits_last, 1);
	return ret;
}

/* Tokens of one text piece, malloc'd. */
static int mm_tokenize(const struct mmhal_model *m, const char *s,
		       size_t len, int bos, int32_t **ids, int *n)
{
	int cap = (int)(len > (size_t)1 << 28 ? 1 << 28 : len) + 2, ret;

	*ids = malloc((size_t)cap * sizeof(int32_t));
	if (!*ids)
		return -ENOMEM;
	ret = mmhal_model_tokenize(m, s, len, bos, 1, *ids, cap, n);
	if (ret) {
		free(*ids);
		*ids = NULL;
	}
	return ret;
}

MMHAL_API int mmhal_ctx_eval_prompt(struct mmhal_ctx *ctx, const char *text,
				    const struct mmhal_chunk *const *chunks,
				    int n_chunks, int add_bos,
				    float *logits_last)
{
	const struct mmhal_model *m;
	const size_t ml = strlen(MMHAL_MEDIA_MARKER);
	int n_mark = 0, n_parts, ret = 0, total = 0, keep = 0;
	int32_t **ids = NULL, *pend = NULL;
	uint64_t *pid = NULL;
	int *n_ids = NULL;
	const char *s, *q;

	if (!ctx || !text || n_chunks < 0 || (n_chunks && !chunks))
		return -EINVAL;
	m = mmhal_ctx_model(ctx);
	for (s = text; (q = strstr(s, MMHAL_MEDIA_MARKER)); s = q + ml)
		n_mark++;
	if (n_mark != n_chunks)
		return mm_errf(-EINVAL, ctx->err, sizeof(ctx->err),
			       "the prompt has %d %s markers for %d chunks",
			       n_mark, MMHAL_MEDIA_MARKER, n_chunks);
	for (int i = 0; i < n_chunks; i++) {
		ret = mm_chunk_check(ctx, chunks[i], i);
		if (ret)
			return ret;
		total += chunks[i]->n_toks + chunks[i]->n_rows;
	}
	n_parts = n_chunks + 1;
	ids = calloc((size_t)n_parts, sizeof(*ids));
	n_ids = calloc((size_t)n_parts, sizeof(*n_ids));
	if (!ids || !n_ids) {
		ret = -ENOMEM;
		goto out;
	}
	s = text;
	for (int i = 0; i < n_parts && !ret; i++) {
		q = i < n_chunks ? strstr(s, MMHAL_MEDIA_MARKER) : s + strlen(s);
		ret = mm_tokenize(m, s, (size_t)(q - s), add_bos && i == 0,
				  &ids[i], &n_ids[i]);
		if (ret)
			mm_errf(ret, ctx->err, sizeof(ctx->err),
				"tokenizing the prompt failed (%d)", ret);
		if (!ret && n_ids[i] > (1 << 30) - total)
			ret = mm_errf(-ENOSPC, ctx->err, sizeof(ctx->err),
				      "the prompt is too long");
		if (!ret)
			total += n_ids[i];
		s = q + ml;
	}
	if (!ret && !total)
		ret = mm_errf(-EINVAL, ctx->err, sizeof(ctx->err),
			      "the prompt is empty");
	if (!ret) {
		struct mmhal_model_stats st;

		ret = mmhal_ctx_stats(ctx, &st);
		if (!ret && total > st.n_ctx)
			ret = mm_errf(-ENOSPC, ctx->err, sizeof(ctx->err),
				      "context full: the prompt's %d positions > n_ctx %d (nothing evaluated)",
				      total, st.n_ctx);
	}
	/* the whole position sequence: tokens, and MMHAL_TOKEN_EMBD with
	 * the chunk's id for its rows */
	pend = ret ? NULL : malloc((size_t)total * sizeof(int32_t));
	pid = ret ? NULL : malloc((size_t)total * sizeof(uint64_t));
	if (!ret && (!pend || !pid))
		ret = -ENOMEM;
	for (int i = 0, pos = 0; i < n_parts && !ret; i++) {
		const struct mmhal_chunk *c = i < n_chunks ? chunks[i] : NULL;

		for (int k = 0; k < n_ids[i]; k++, pos++) {
			pend[pos] = ids[i][k];
			pid[pos] = 0;
		}
		for (int k = 0; c && k < c->n_seg; k++) {
			const struct mm_seg *sg = &c->seg[k];

			for (int r = 0; r < sg->n; r++, pos++) {
				pend[pos] = sg->embd ? MMHAL_TOKEN_EMBD :
					c->toks[sg->off + r];
				pid[pos] = sg->embd ? c->id : 0;
			}
		}
	}
	/* keep the cache's common prefix with it (at most total - 1, for
	 * the last logits), evaluate the rest; adjacent token runs (text,
	 * markers) go to the decoder as one batch: each call is a pass over
	 * the weights */
	if (!ret) {
		keep = mmhal_ctx_reuse_prefix(ctx, pend, pid, total);
		ret = keep < 0 ? keep : 0;
	}
	for (int i = 0, pos = 0, t0 = keep; i < n_parts && !ret; i++) {
		const struct mmhal_chunk *c = i < n_chunks ? chunks[i] : NULL;

		pos += n_ids[i];
		for (int k = 0; c && k < c->n_seg && !ret; k++) {
			const struct mm_seg *sg = &c->seg[k];
			int skip = keep > pos ? keep - pos : 0;

			pos += sg->n;
			if (!sg->embd || skip >= sg->n)
				continue;
			/* the tokens before these rows, then the rows */
			if (t0 < pos - sg->n)
				ret = mmhal_ctx_eval(ctx, pend + t0,
						     pos - sg->n - t0, NULL);
			if (!ret)
				ret = mmhal_ctx_eval_embd_id(ctx, c->embd +
						(sg->off + skip) * c->n_embd,
						sg->n - skip, c->n_embd, c->id,
						pos == total ? logits_last : NULL);
			t0 = pos;
		}
		if (!ret && i == n_parts - 1 && t0 < total)
			ret = mmhal_ctx_eval(ctx, pend + t0, total - t0,
					     logits_last);
	}
out:
	free(pend);
	free(pid);
	for (int i = 0; ids && i < n_parts; i++)
		free(ids[i]);
	free(ids);
	free(n_ids);
	return ret;
}

/* ---- calibration -------------------------------------------------------- */

static int mm_cal_hash(struct mmhal_mmproj *mp, char *err, size_t errlen)
{
	int ret;

	if (mp->hashed)
		return 0;
	ret = mm_hash_file(mp->path, mp->hash, NULL, err, errlen);
	if (!ret)
		mp->hashed = 1;
	return ret;
}

static int mm_cal_open(struct mmhal_mmproj *mp, const char *path,
		       struct mm_calib **out, char *err, size_t errlen)
{
	int ret = mm_cal_hash(mp, err, errlen);

	return ret ? ret : mm_cal_load(mp->p, mp->hash, path, out, err, errlen);
}

MMHAL_API int mmhal_mmproj_set_calibration(struct mmhal_mmproj *proj,
					   const char *path, char *err,
					   size_t errlen)
{
	struct mm_calib *c = NULL;
	int ret;

	if (err && errlen)
		err[0] = 0;
	if (!proj)
		return mm_errf(-EINVAL, err, errlen, "mmproj is NULL");
	if (path) {
		ret = mm_cal_open(proj, path, &c, err, errlen);
		if (ret)
			return ret;
	}
	mm_cal_free(proj->cal);
	proj->cal = c;
	return 0;
}

/* The held-out set as captures (read in place). */
static int mm_cal_heldout(const struct mmhal_calib_heldout *ho,
			  struct mm_cal_capture **out, int *n, char *err,
			  size_t errlen)
{
	struct mm_cal_capture *caps;
	int k = 0, ret;

	*out = NULL;
	*n = 0;
	if (!ho)
		return mm_errf(-EINVAL, err, errlen, "held-out set is NULL");
	if (ho->size != sizeof(*ho))
		return mm_errf(-EINVAL, err, errlen,
			       "held-out size %u is not sizeof(struct mmhal_calib_heldout) %zu",
			       ho->size, sizeof(*ho));
	for (size_t i = 0; i < sizeof(ho->reserved) / sizeof(ho->reserved[0]);
	     i++)
		if (ho->reserved[i])
			return mm_errf(-EINVAL, err, errlen,
				       "held-out reserved[%zu] is not zero", i);
	if (ho->n_images < 0 || ho->n_audio < 0 || ho->n_images > 4096 ||
	    ho->n_audio > 4096 || ho->n_images + ho->n_audio < 1 ||
	    (ho->n_images && !ho->images) || (ho->n_audio && !ho->audio))
		return mm_errf(-EINVAL, err, errlen,
			       "held-out set of %d images and %d audio windows (1 to 4096 of each, arrays not NULL)",
			       ho->n_images, ho->n_audio);
	if (!(ho->min_cos_mean >= -1 && ho->min_cos_mean <= 1) ||
	    !(ho->min_cos >= -1 && ho->min_cos <= 1))
		return mm_errf(-EINVAL, err, errlen,
			       "held-out thresholds %g, %g are not cosines in [-1, 1]",
			       ho->min_cos_mean, ho->min_cos);
	caps = calloc((size_t)(ho->n_images + ho->n_audio), sizeof(*caps));
	if (!caps)
		return mm_errf(-ENOMEM, err, errlen, "out of memory");
	for (int i = 0; i < ho->n_images; i++, k++) {
		caps[k].kind = MM_CAL_CAP_IMAGE;
		ret = mm_image_check(&ho->images[i], &caps[k].im, err, errlen);
		if (ret) {
			free(caps);
			return ret;
		}
	}
	for (int i = 0; i < ho->n_audio; i++, k++) {
		const struct mmhal_audio *a = &ho->audio[i];

		struct mm_audio_in in;

		/* calibration captures are what the microphone gives */
		ret = mm_audio_input(a, &in, err, errlen);
		free(in.f32);
		if (!ret && !in.s16)
			ret = mm_errf(-EINVAL, err, errlen,
				      "held-out audio %d: %u channels of format %u at %u Hz; calibration takes mono S16LE at %u Hz",
				      i, a->channels, a->format, a->rate,
				      MM_AUDIO_RATE);
		if (ret) {
			free(caps);
			return ret;
		}
		caps[k].kind = MM_CAL_CAP_AUDIO;
		caps[k].pcm = in.s16;
		caps[k].n_samples = in.n;
	}
	*out = caps;
	*n = k;
	return 0;
}

static int mm_cal_measure(struct mmhal_mmproj *mp, struct mm_calib *c,
			  const struct mm_cal_capture *caps, int n,
			  const struct mmhal_calib_heldout *ho,
			  struct mm_cal_agree *ag, char *err, size_t errlen)
{
	int ret = mm_cal_agreement(mp->p, c, MM_CAL_STATIC, caps, n,
				   mp->params.n_threads, NULL, ag, err, errlen);

	if (ret)
		return ret;
	return ag->cos_mean >= ho->min_cos_mean && ag->cos_min >= ho->min_cos ?
	       0 : -EDOM;
}

static char *mm_cal_path(const char *dir, const char *name)
{
	size_t n = strlen(dir) + strlen(name) + 2;
	char *p = malloc(n);

	if (p)
		snprintf(p, n, "%s/%s", dir, name);
	return p;
}

/* src copied to dst (written, fsync'd, closed) */
static int mm_copy_file(const char *src, const char *dst)
{
	char buf[1 << 16];
	int in, out, ret = 0;
	ssize_t n;

	in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (out < 0) {
		ret = -errno;
		close(in);
		return ret;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		for (ssize_t o = 0; o < n;) {
			ssize_t w = write(out, buf + o, (size_t)(n - o));

			if (w < 0) {
				ret = -errno;
				goto out;
			}
			o += w;
		}
	if (n < 0)
		ret = -errno;
	else if (fsync(out))
		ret = -errno;
out:
	if (close(out) && !ret)
		ret = -errno;
	close(in);
	return ret;
}

static int mm_exists(const char *path)
{
	return access(path, F_OK) == 0;
}

MMHAL_API int mmhal_mmproj_calib_update(struct mmhal_mmproj *proj,
					const char *dir, const char *new_path,
					const struct mmhal_calib_heldout *ho,
					struct mmhal_calib_report *report,
					char *err, size_t errlen)
{
	struct mm_cal_capture *caps = NULL;
	struct mm_calib *c = NULL;
	struct mm_cal_agree ag = { 0 };
	struct mmhal_calib_report rep = { .size = sizeof(rep) };
	char *cur = NULL, *prev = NULL, *bad = NULL, *tmp = NULL;
	int n = 0, ret;

	if (err && errlen)
		err[0] = 0;
	if (!proj || !dir)
		return mm_errf(-EINVAL, err, errlen, "%s is NULL",
			       proj ? "dir" : "mmproj");
	if (report && (report->size < sizeof(uint32_t) ||
		       report->size > sizeof(rep)))
		return mm_errf(-EINVAL, err, errlen,
			       "report size %u is not 4..%zu", report->size,
			       sizeof(rep));
	ret = mm_cal_heldout(ho, &caps, &n, err, errlen);
	if (ret)
		return ret;
	cur = mm_cal_path(dir, "calib.cur");
	prev = mm_cal_path(dir, "calib.prev");
	bad = mm_cal_path(dir, "calib.bad");
	tmp = mm_cal_path(dir, "calib.new");
	if (!cur || !prev || !bad || !tmp) {
		ret = mm_errf(-ENOMEM, err, errlen, "out of memory");
		goto out;
	}
	if (new_path) {
		ret = mm_cal_open(proj, new_path, &c, err, errlen);
		if (!ret)
			ret = mm_cal_measure(proj, c, caps, n, ho, &ag, err, errlen);
		if (ret == -EDOM) {
			mm_errf(ret, err, errlen,
				"calibration %s refused: agreement with the float reference cos mean %.5f min %.5f over %llu rows, below %.5f / %.5f; the mmproj keeps calibration version %llu",
				new_path, ag.cos_mean, ag.cos_min,
				(unsigned long long)ag.rows, ho->min_cos_mean,
				ho->min_cos, (unsigned long long)(proj->cal ?
				proj->cal->version : 0));
			goto out;
		}
		if (ret)
			goto out;
		/* calib.new, then cur -> prev, new -> cur: each step leaves a
		 * complete calib.cur or calib.prev */
		ret = mm_copy_file(new_path, tmp);
		if (!ret && mm_exists(cur) && rename(cur, prev))
			ret = -errno;
		if (!ret && rename(tmp, cur))
			ret = -errno;
		if (!ret)
			ret = mm_fsync_dir(dir);
		if (ret) {
			mm_errf(ret, err, errlen, "calibration store %s: %s", dir,
				strerror(-ret));
			goto out;
		}
		mm_cal_free(proj->cal);
		proj->cal = c;
		c = NULL;
		rep.cos_mean = ag.cos_mean;
		rep.cos_min = ag.cos_min;
		rep.rows = ag.rows;
		goto out;
	}
	/* re-check the calibration in use (calib.cur) */
	if (!proj->cal) {
		if (!mm_exists(cur)) {
			ret = mm_errf(-ENOENT, err, errlen,
				      "calibration store %s has no calib.cur", dir);
			goto out;
		}
		ret = mm_cal_open(proj, cur, &c, err, errlen);
		if (ret)
			goto out;
		proj->cal = c;
		c = NULL;
	}
	ret = mm_cal_measure(proj, proj->cal, caps, n, ho, &ag, err, errlen);
	rep.cos_mean = ag.cos_mean;
	rep.cos_min = ag.cos_min;
	rep.rows = ag.rows;
	if (ret != -EDOM)
		goto out;
	{
		struct mm_cal_agree now = ag;

		ret = -EDOM;
		if (mm_exists(prev) && !mm_cal_open(proj, prev, &c, NULL, 0))
			ret = mm_cal_measure(proj, c, caps, n, ho, &ag, err, errlen);
		if (ret && ret != -EDOM)
			goto out;
		if (!ret) {	/* prev agrees: it becomes calib.cur */
			if (rename(cur, bad) || rename(prev, cur))
				ret = -errno;
			if (!ret)
				ret = mm_fsync_dir(dir);
			if (ret) {
				mm_errf(ret, err, errlen, "calibration store %s: %s",
					dir, strerror(-ret));
				goto out;
			}
			mm_cal_free(proj->cal);
			proj->cal = c;
			c = NULL;
			rep.cos_mean = ag.cos_mean;
			rep.cos_min = ag.cos_min;
			rep.rows = ag.rows;
			rep.rolled_back = 1;
			ret = 1;
			goto out;
		}
		/* nothing agrees: dynamic activations */
		if (mm_exists(cur) && rename(cur, bad) == 0)
			mm_fsync_dir(dir);
		mm_errf(-EDOM, err, errlen,
			"calibration version %llu: agreement with the float reference dropped to cos mean %.5f min %.5f (below %.5f / %.5f) and no previous calibration agrees; back to dynamic int8",
			(unsigned long long)proj->cal->version, now.cos_mean,
			now.cos_min, ho->min_cos_mean, ho->min_cos);
		mm_cal_free(proj->cal);
		proj->cal = NULL;
		rep.cos_mean = rep.cos_min = 0;
		rep.rows = 0;
	}
out:
	mm_cal_free(c);
	rep.version = proj->cal ? proj->cal->version : 0;
	if (report) {
		uint32_t size = report->size;

		memcpy(report, &rep, size);
		report->size = size;
	}
	free(caps);
	free(cur);
	free(prev);
	free(bad);
	free(tmp);
	return ret;
}

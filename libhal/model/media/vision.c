// SPDX-License-Identifier: MIT
/*
 * vision.c - the vision encoder and its projector on the CPU (see vision.h).
 *
 * Activations are row-major [token][channel] f32. Linear layers go through
 * mm_enc_linear()/mm_enc_matmul() with the weight in the file's type
 * (ggml's {in, out} shape is out rows of in). The graph follows llama.cpp's clip.cpp (build_siglip /
 * build_llava): patch conv + bias, [class token], + position embeddings,
 * [pre-LN], blocks, [post-LN], projector.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calib.h"
#include "encoder.h"
#include "gguf.h"
#include "quant.h"
#include "vision.h"

size_t mm_vision_n_tokens(const struct mm_mmproj *p)
{
	const struct mm_mmproj_vision *v = p ? mm_mmproj_vision(p) : NULL;

	return v ? v->n_tokens : 0;
}

size_t mm_vision_n_embd_out(const struct mm_mmproj *p)
{
	const struct mm_mmproj_vision *v = p ? mm_mmproj_vision(p) : NULL;

	return v ? v->n_out : 0;
}

size_t mm_vision_n_pixels(const struct mm_mmproj *p)
{
	const struct mm_mmproj_vision *v = p ? mm_mmproj_vision(p) : NULL;

	return v ? (size_t)3 * v->image_size * v->image_size : 0;
}

int mm_vision_encode(const struct mm_mmproj *p, const float *pixels,
		     size_t n_pixels, float *out, size_t n_out, int n_threads,
		     char *err, size_t errlen)
{
	return mm_vision_encode_cal(p, NULL, 0, pixels, n_pixels, out, n_out,
				    n_threads, err, errlen);
}

int mm_vision_encode_cal(const struct mm_mmproj *p, struct mm_calib *cal,
			 int mode, const float *pixels, size_t n_pixels,
			 float *out, size_t n_out, int n_threads, char *err,
			 size_t errlen)
{
	return mm_vision_encode_dev(p, cal, mode, NULL, pixels, n_pixels, out,
				    n_out, n_threads, err, errlen);
}

static int vision_encode(const struct mm_mmproj *p, struct mm_calib *cal,
			 int mode, const struct mm_enc_dev *dev,
			 const float *pixels, size_t n_pixels, const float *pe,
			 float *out, size_t n_out, int n_threads, char *err,
			 size_t errlen);

int mm_vision_encode_dev(const struct mm_mmproj *p, struct mm_calib *cal,
			 int mode, const struct mm_enc_dev *dev,
			 const float *pixels, size_t n_pixels, float *out,
			 size_t n_out, int n_threads, char *err, size_t errlen)
{
	return vision_encode(p, cal, mode, dev, pixels, n_pixels, NULL, out,
			     n_out, n_threads, err, errlen);
}

int mm_vision_encode_pe(const struct mm_mmproj *p,
			const struct mm_enc_dev *dev, const float *pe,
			float *out, size_t n_out, int n_threads, char *err,
			size_t errlen)
{
	return vision_encode(p, NULL, 0, dev, pe, mm_vision_n_pixels(p), pe,
			     out, n_out, n_threads, err, errlen);
}

/* pe: NULL, or the patch embedding's product (n_patches x n_embd, no
 * bias) computed by the caller in place of the unfold + GEMM of pixels */
static int vision_encode(const struct mm_mmproj *p, struct mm_calib *cal,
			 int mode, const struct mm_enc_dev *dev,
			 const float *pixels, size_t n_pixels, const float *pe,
			 float *out, size_t n_out, int n_threads, char *err,
			 size_t errlen)
{
	const struct mm_mmproj_vision *v = p ? mm_mmproj_vision(p) : NULL;
	struct mm_enc s = { 0 };
	int ret = 0;

	if (err && errlen)
		err[0] = 0;
	if (!v) {
		mm_errf(0, err, errlen, "the mmproj has no vision encoder");
		return p ? -ENOENT : -EINVAL;
	}
	if (!pixels || !out) {
		mm_errf(0, err, errlen, "vision encode: NULL %s",
			pixels ? "output" : "pixels");
		return -EINVAL;
	}
	if (n_pixels != mm_vision_n_pixels(p)) {
		mm_errf(0, err, errlen,
			"vision encode: %zu input floats, the encoder takes 3 x %u x %u = %zu",
			n_pixels, v->image_size, v->image_size,
			mm_vision_n_pixels(p));
		return -EINVAL;
	}
	if (n_out != (size_t)v->n_tokens * v->n_out) {
		mm_errf(0, err, errlen,
			"vision encode: output of %zu floats, the encoder gives %u tokens x %u = %zu",
			n_out, v->n_tokens, v->n_out,
			(size_t)v->n_tokens * v->n_out);
		return -EINVAL;
	}

	const int64_t S = v->image_size, P = v->patch_size, side = S / P;
	const int64_t np = v->n_patches, e = v->n_embd, f = v->n_ff;
	const int64_t cls = v->class_embd.name ? 1 : 0, n = np + cls;
	const int64_t kp = 3 * P * P, nh = v->n_head;
	int64_t wide = e * 2, nx = kp > f ? kp : f;
	float *x = NULL, *h = NULL, *q = NULL, *k = NULL, *vv = NULL;
	float *big = NULL;
	struct mm_enc_bufs bufs;

	if (e > nx)
		nx = e;
	if (v->n_mm_hidden > nx)
		nx = v->n_mm_hidden;
	if (e * v->scale_factor * v->scale_factor > nx)
		nx = e * v->scale_factor * v->scale_factor;
	if (nx > wide)
		wide = nx;
	if ((int64_t)v->n_out > wide)
		wide = v->n_out;
	ret = mm_enc_init(&s, n_threads, wide, "vision encode", err, errlen);
	if (ret)
		return ret;
	s.cal = cal;
	s.cal_hooks = &mm_cal_enc_hooks;
	s.cal_mode = mode;
	s.dev = mode ? NULL : dev;
	x = malloc((size_t)n * e * sizeof(float));
	h = malloc((size_t)n * e * sizeof(float));
	q = malloc((size_t)n * e * sizeof(float));
	k = malloc((size_t)n * e * sizeof(float));
	vv = malloc((size_t)n * e * sizeof(float));
	big = malloc((size_t)n * nx * sizeof(float));
	bufs = (struct mm_enc_bufs){ .h = h, .q = q, .k = k, .v = vv,
				     .big = big };
	if (!x || !h || !q || !k || !vv || !big) {
		mm_errf(0, err, errlen, "vision encode: out of memory");
		ret = -ENOMEM;
		goto out;
	}

	/* patch embedding: unfold each patch as the conv weight's row
	 * (c, ky, kx), then one GEMM; patch t (row-major) is token t, the
	 * class embedding (CLIP) token np after them: clip.cpp's llava
	 * graph concatenates it last and adds position rows in that order */
	for (int64_t py = 0; py < side && !pe; py++)
		for (int64_t px = 0; px < side; px++) {
			float *u = big + (py * side + px) * kp;

			for (int64_t c = 0; c < 3; c++)
				for (int64_t ky = 0; ky < P; ky++)
					memcpy(u + (c * P + ky) * P,
					       pixels + c * S * S +
					       (py * P + ky) * S + px * P,
					       (size_t)P * sizeof(float));
		}
	if (pe)
		memcpy(x, pe, (size_t)np * e * sizeof(float));
	else
		mm_enc_matmul_w(&s, &v->patch_w, big, x, e, kp, np);
	mm_enc_bias(&s, &v->patch_b, x, np, e);
	if (cls)
		mm_enc_vec(&v->class_embd, x + np * e, e);
	for (int64_t t = 0; t < n; t++) {
		mm_enc_row(&v->pos, t, s.tmp, e);
		for (int64_t j = 0; j < e; j++)
			x[t * e + j] += s.tmp[j];
	}
	if (v->pre_ln_w.name)
		mm_enc_layernorm(&s, &v->pre_ln_w, &v->pre_ln_b, x, x, n, e,
				 v->eps);

	for (uint32_t l = 0; l < v->n_run && !ret; l++)
		ret = mm_enc_block(&s, &v->blk[l], x, n, e, f, nh, v->act, v->eps,
				   &bufs);
	if (ret) {
		mm_errf(0, err, errlen, ret == -ENOENT ?
			"vision encode: the calibration lacks an attention point" :
			"vision encode: out of memory");
		goto out;
	}
	if (v->post_ln_w.name)
		mm_enc_layernorm(&s, &v->post_ln_w, &v->post_ln_b, x, x, n, e,
				 v->eps);

	if (v->proj == MM_MMPROJ_IDEFICS3) {
		/* clip.cpp's build_patch_merge_permute: merged token
		 * (yb, xb) holds patch (yb*s + dy, xb*s + dx) at channels
		 * (dy*s + dx)*e.. */
		const int64_t sf = v->scale_factor, ms = side / sf;
		const int64_t ke = e * sf * sf;

		for (int64_t yb = 0; yb < ms; yb++)
			for (int64_t xb = 0; xb < ms; xb++)
				for (int64_t dy = 0; dy < sf; dy++)
					for (int64_t dx = 0; dx < sf; dx++)
						memcpy(big + (yb * ms + xb) * ke +
						       (dy * sf + dx) * e,
						       x + ((yb * sf + dy) *
							    side + xb * sf + dx) * e,
						       (size_t)e * sizeof(float));
		mm_enc_linear(&s, &v->fc, NULL, big, out, ms * ms);
	} else if (v->proj == MM_MMPROJ_MLP) {
		/* clip.cpp's get_rows of "patches" i + 1 with a class
		 * embedding: tokens 1..np, the first patch dropped and the
		 * class token (last) kept; GELU is ggml_gelu (tanh form) */
		mm_enc_linear(&s, &v->mm0_w, &v->mm0_b, x + cls * e, big, np);
		mm_enc_act(&s, MM_MMPROJ_ACT_GELU, big, np * v->n_mm_hidden);
		mm_enc_linear(&s, &v->mm2_w, &v->mm2_b, big, out, np);
	} else {
		mm_errf(0, err, errlen, "vision encode: projector %s not supported",
			mm_mmproj_type_name(v->proj));
		ret = -ENOTSUP;
	}
	if (!ret && s.cal_err) {
		ret = s.cal_err;
		mm_errf(0, err, errlen, ret == -ENOENT ?
			"vision encode: a weight is not a point of the calibration" :
			"vision encode: out of memory");
	}
out:
	free(x);
	free(h);
	free(q);
	free(k);
	free(vv);
	free(big);
	mm_enc_fini(&s);
	return ret;
}

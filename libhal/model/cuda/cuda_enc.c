// SPDX-License-Identifier: MIT
/*
 * cuda_enc.c - the mmproj encoders (vision.c, audio.c) on the CUDA back
 * end: the back end chosen at mmhal_mmproj_load() (params.backend), the
 * weights of the encoders' linear layers and convolutions uploaded once,
 * and encoder.h's struct mm_enc_dev answering their products.
 *
 * In this version the device runs the weight products of the dynamic
 * mode: the patch embedding (after the host's im2col), the audio
 * convolutions (same), every block's Q/K/V/output/FFN matrices and the
 * projectors, for F16/F32 weights (the f32 GEMM) and Q8_0/Q4_0/Q4_K (the
 * int8 GEMM with the activations quantized on the device as the CPU
 * does). Each product copies its input up and its output back;
 * attention, norms, activations, biases, the audio im2col and the
 * calibration modes run on the CPU. A product the device fails runs on
 * the CPU and is counted.
 *
 * Frames in a mapping declared with mmhal_mmproj_map_frames() are read
 * in place: the mapping registered once (cuMemHostRegister), the
 * overview image converted and resized on the device (mm_pre_overview),
 * unfolded there (mm_im2col) and multiplied by the patch weight without
 * a host copy (mm_cuda_enc_image()); the tiles (bicubic) and frames
 * elsewhere are preprocessed on the CPU.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_be.h"
#include "cuda_enc.h"
#include "encoder.h"
#include "gguf.h"
#include "imgproc.h"
#include "mmhal_model.h"
#include "mmproj.h"

/* A weight on the device: the host data it was copied from, its rows. */
struct mm_ce_w {
	const void *host;
	enum mm_type t;
	int64_t m, k;
	uint64_t dev;
};

/* A frame mapping (mmhal_mmproj_map_frames()): registered with the
 * driver at its first frame (reg 1; -1 the registration failed, not
 * retried), unregistered at mmhal_mmproj_unmap_frames() or the free. */
struct mm_ce_map {
	uintptr_t addr;
	size_t bytes;
	uint64_t dev;
	int reg;
};

#define MM_CE_MAPS 32

struct mm_cuda_enc {
	struct mm_enc_dev dev;	/* first: container of the callback's arg */
	struct mm_ce_map maps[MM_CE_MAPS];	/* under lock */
	int n_maps;
	struct mm_cuda *cu;	/* NULL: the CPU */
	struct mm_ce_w *w;	/* sorted by host */
	int n, cap;
	uint64_t dev_bytes;
	uint64_t n_dev, n_failed;	/* atomics */
	pthread_mutex_t lock;	/* last_err */
	char note[192];
	char last_err[160];
};

/* The products a weight of type t, m rows of k, can run on the device. */
static int mm_ce_fits(enum mm_type t, int64_t m, int64_t k)
{
	if (m < 1 || k < 1 || m > INT32_MAX || k > INT32_MAX)
		return 0;
	if (mm_cuda_ftype_ok(t))
		return 1;
	return mm_cuda_type_ok(t) && k % 32 == 0 &&
	       (t != MM_TYPE_Q4_K || k % 256 == 0);
}

/* A weight of the file as m = its outer dimension rows of k = the rest
 * (linear {k, m}, convolution {kw, c_in, m} / {P, P, 3, m}), uploaded
 * when its type and shape fit the kernels. */
static int mm_ce_add(struct mm_cuda_enc *ce, const struct mm_mmproj_w *w,
		     char *err, size_t errlen)
{
	int64_t m, k = 1;
	size_t bytes;
	int ret;

	if (!w->name || w->n_dims < 2 || w->n_dims > 4)
		return 0;
	m = w->ne[w->n_dims - 1];
	for (uint32_t i = 0; i + 1 < w->n_dims; i++)
		k *= w->ne[i];
	if (!mm_ce_fits((enum mm_type)w->type, m, k))
		return 0;
	bytes = mm_row_bytes((enum mm_type)w->type, k) * (size_t)m;
	if (bytes != w->bytes)
		return 0;	/* a layout the kernels do not read as rows */
	for (int i = 0; i < ce->n; i++)
		if (ce->w[i].host == w->data)
			return 0;
	if (ce->n == ce->cap) {
		int cap = ce->cap ? 2 * ce->cap : 64;
		struct mm_ce_w *nw = realloc(ce->w, (size_t)cap * sizeof(*nw));

		if (!nw)
			return mm_errf(-ENOMEM, err, errlen, "cuda: out of memory");
		ce->w = nw;
		ce->cap = cap;
	}
	struct mm_ce_w *e = &ce->w[ce->n];

	*e = (struct mm_ce_w){ .host = w->data, .t = (enum mm_type)w->type,
			       .m = m, .k = k };
	ret = mm_cuda_alloc(ce->cu, bytes, &e->dev, err, errlen);
	if (!ret)
		ret = mm_cuda_put(ce->cu, e->dev, w->data, bytes, err, errlen);
	if (ret) {
		mm_cuda_free(ce->cu, e->dev);
		return ret;
	}
	ce->n++;
	ce->dev_bytes += bytes;
	return 0;
}

static int mm_ce_block(struct mm_cuda_enc *ce, const struct mm_mmproj_block *b,
		       char *err, size_t errlen)
{
	const struct mm_mmproj_w *ws[] = { &b->q_w, &b->k_w, &b->v_w,
					   &b->o_w, &b->up_w, &b->down_w };
	int ret = 0;

	for (size_t i = 0; i < sizeof(ws) / sizeof(ws[0]) && !ret; i++)
		ret = mm_ce_add(ce, ws[i], err, errlen);
	return ret;
}

/* Every weight the encoders give to mm_enc_matmul_w()/mm_enc_block(). */
static int mm_ce_upload(struct mm_cuda_enc *ce, const struct mm_mmproj *p,
			char *err, size_t errlen)
{
	const struct mm_mmproj_vision *v = mm_mmproj_vision(p);
	const struct mm_mmproj_audio *a = mm_mmproj_audio(p);
	int ret = 0;

	if (v) {
		const struct mm_mmproj_w *ws[] = { &v->patch_w, &v->fc,
						   &v->mm0_w, &v->mm2_w };

		for (size_t i = 0; i < sizeof(ws) / sizeof(ws[0]) && !ret; i++)
			ret = mm_ce_add(ce, ws[i], err, errlen);
		for (uint32_t l = 0; l < v->n_run && !ret; l++)
			ret = mm_ce_block(ce, &v->blk[l], err, errlen);
	}
	if (a) {
		const struct mm_mmproj_w *ws[] = { &a->conv1_w, &a->conv2_w,
						   &a->mlp1_w, &a->mlp2_w };

		for (size_t i = 0; i < sizeof(ws) / sizeof(ws[0]) && !ret; i++)
			ret = mm_ce_add(ce, ws[i], err, errlen);
		for (uint32_t l = 0; l < a->n_layer && !ret; l++)
			ret = mm_ce_block(ce, &a->blk[l], err, errlen);
	}
	return ret;
}

static int mm_ce_cmp(const void *a, const void *b)
{
	const uintptr_t x = (uintptr_t)((const struct mm_ce_w *)a)->host;
	const uintptr_t y = (uintptr_t)((const struct mm_ce_w *)b)->host;

	return x < y ? -1 : x > y;
}

static const struct mm_ce_w *mm_ce_find(const struct mm_cuda_enc *ce,
					const void *host)
{
	const struct mm_ce_w key = { .host = host };

	return bsearch(&key, ce->w, (size_t)ce->n, sizeof(*ce->w), mm_ce_cmp);
}

static void mm_ce_release(struct mm_cuda_enc *ce)
{
	for (int i = 0; i < ce->n; i++)
		mm_cuda_free(ce->cu, ce->w[i].dev);
	free(ce->w);
	ce->w = NULL;
	ce->n = ce->cap = 0;
	ce->dev_bytes = 0;
	mm_cuda_close(ce->cu);
	ce->cu = NULL;
}

/* struct mm_enc_dev's callback: 1 when the device computed every Y_i. */
static int mm_ce_matmul_n(const struct mm_enc_dev *d, const struct mm_mv *mv,
			  int nmv, const float *X, int64_t k, int64_t n)
{
	struct mm_cuda_enc *ce = (struct mm_cuda_enc *)d;
	struct mm_cuda_mat mats[4];
	char msg[160];

	if (!ce->cu || nmv < 1 || nmv > 4 || n < 1 || n > INT32_MAX)
		return 0;
	for (int i = 0; i < nmv; i++) {
		const struct mm_ce_w *e = mm_ce_find(ce, mv[i].W);

		/* the file's weight seen with the shape it was uploaded as */
		if (!e || e->t != mv[i].t || e->m != mv[i].m || e->k != k)
			return 0;
		mats[i] = (struct mm_cuda_mat){ .t = e->t, .dev = e->dev,
						.m = e->m, .y = mv[i].y };
	}
	if (mm_cuda_matmul_n(ce->cu, mats, nmv, X, k, n, msg, sizeof(msg))) {
		__atomic_add_fetch(&ce->n_failed, 1, __ATOMIC_RELAXED);
		pthread_mutex_lock(&ce->lock);
		snprintf(ce->last_err, sizeof(ce->last_err), "%s", msg);
		pthread_mutex_unlock(&ce->lock);
		return 0;
	}
	__atomic_add_fetch(&ce->n_dev, 1, __ATOMIC_RELAXED);
	return 1;
}

int mm_cuda_enc_setup(struct mm_cuda_enc **out, const struct mm_mmproj *p,
		      int backend, char *err, size_t errlen)
{
	struct mm_cuda_enc *ce;
	char msg[192];
	int ret;

	*out = NULL;
	if (backend < MMHAL_BACKEND_AUTO || backend > MMHAL_BACKEND_CUDA)
		return mm_errf(-EINVAL, err, errlen,
			       "mmproj params.backend %d not supported (auto 0, cpu 1, cuda 2)",
			       backend);
	ce = calloc(1, sizeof(*ce));
	if (!ce)
		return mm_errf(-ENOMEM, err, errlen, "out of memory");
	ce->dev.matmul_n = mm_ce_matmul_n;
	pthread_mutex_init(&ce->lock, NULL);
	if (backend == MMHAL_BACKEND_CPU) {
		snprintf(ce->note, sizeof(ce->note), "backend cpu requested");
		*out = ce;
		return 0;
	}
	ret = mm_cuda_open(&ce->cu, msg, sizeof(msg));
	if (!ret)
		ret = mm_ce_upload(ce, p, msg, sizeof(msg));
	if (!ret && !ce->n)
		ret = mm_errf(-ENOTSUP, msg, sizeof(msg),
			      "cuda: no encoder weight of a type the kernels multiply (f16, f32, q8_0, q4_0, q4_K)");
	if (!ret) {
		qsort(ce->w, (size_t)ce->n, sizeof(*ce->w), mm_ce_cmp);
		snprintf(ce->note, sizeof(ce->note),
			 "%d encoder matrices (%.1f MiB) on %s", ce->n,
			 ce->dev_bytes / 1048576.0, mm_cuda_describe(ce->cu));
		*out = ce;
		return 0;
	}
	mm_ce_release(ce);
	if (backend == MMHAL_BACKEND_CUDA) {
		mm_cuda_enc_free(ce);
		return mm_errf(ret, err, errlen, "%s (backend cuda requested)",
			       msg);
	}
	snprintf(ce->note, sizeof(ce->note), "%s", msg);
	*out = ce;
	return 0;
}

void mm_cuda_enc_free(struct mm_cuda_enc *ce)
{
	if (!ce)
		return;
	mm_cuda_enc_unmap(ce, NULL, SIZE_MAX);
	mm_ce_release(ce);
	pthread_mutex_destroy(&ce->lock);
	free(ce);
}

const struct mm_enc_dev *mm_cuda_enc_dev(const struct mm_cuda_enc *ce)
{
	return ce && ce->cu ? &ce->dev : NULL;
}

const char *mm_cuda_enc_backend(const struct mm_cuda_enc *ce)
{
	return ce && ce->cu ? "cuda" : "cpu";
}

void mm_cuda_enc_note(struct mm_cuda_enc *ce, char *note, size_t len)
{
	if (!ce) {
		snprintf(note, len, "%s", "");
		return;
	}
	pthread_mutex_lock(&ce->lock);
	if (ce->last_err[0])
		snprintf(note, len, "%s; last device failure: %s", ce->note,
			 ce->last_err);
	else
		snprintf(note, len, "%s", ce->note);
	pthread_mutex_unlock(&ce->lock);
}

void mm_cuda_enc_counts(const struct mm_cuda_enc *ce, uint64_t *dev,
			uint64_t *failed)
{
	*dev = ce ? __atomic_load_n(&ce->n_dev, __ATOMIC_RELAXED) : 0;
	*failed = ce ? __atomic_load_n(&ce->n_failed, __ATOMIC_RELAXED) : 0;
}

/* ---- frames read in place ---------------------------------------------- */

static void mm_ce_fail(struct mm_cuda_enc *ce, const char *msg)
{
	__atomic_add_fetch(&ce->n_failed, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&ce->lock);
	snprintf(ce->last_err, sizeof(ce->last_err), "%s", msg);
	pthread_mutex_unlock(&ce->lock);
}

int mm_cuda_enc_map(struct mm_cuda_enc *ce, const void *addr, size_t bytes)
{
	const uintptr_t a = (uintptr_t)addr;
	int ret = 0;

	if (!ce || !ce->cu)
		return 0;
	if (!addr || !bytes || a + bytes < a)
		return -EINVAL;
	pthread_mutex_lock(&ce->lock);
	for (int i = 0; i < ce->n_maps; i++)
		if (ce->maps[i].addr == a && ce->maps[i].bytes == bytes)
			goto out;
	if (ce->n_maps == MM_CE_MAPS) {
		ret = -ENOSPC;
		goto out;
	}
	ce->maps[ce->n_maps++] = (struct mm_ce_map){ .addr = a,
						     .bytes = bytes };
out:
	pthread_mutex_unlock(&ce->lock);
	return ret;
}

void mm_cuda_enc_unmap(struct mm_cuda_enc *ce, const void *addr,
		       size_t bytes)
{
	const uintptr_t a = (uintptr_t)addr;
	const uintptr_t e = a + bytes < a ? UINTPTR_MAX : a + bytes;
	char msg[160];

	if (!ce)
		return;
	pthread_mutex_lock(&ce->lock);
	for (int i = 0; i < ce->n_maps;) {
		struct mm_ce_map *m = &ce->maps[i];

		/* any mapping overlapping [addr, addr + bytes) */
		if (m->addr >= e || m->addr + m->bytes <= a) {
			i++;
			continue;
		}
		if (m->reg == 1 && ce->cu &&
		    mm_cuda_host_unregister(ce->cu, (void *)m->addr, msg,
					    sizeof(msg)))
			snprintf(ce->last_err, sizeof(ce->last_err), "%s", msg);
		*m = ce->maps[--ce->n_maps];
	}
	pthread_mutex_unlock(&ce->lock);
}

/* The device address of host address lo, [lo, hi) lying in a declared
 * mapping, registered at its first use; 0: in none, or not registered. */
static uint64_t mm_ce_devaddr(struct mm_cuda_enc *ce, uintptr_t lo,
			      uintptr_t hi)
{
	char msg[160];
	uint64_t dev = 0;

	pthread_mutex_lock(&ce->lock);
	for (int i = 0; i < ce->n_maps; i++) {
		struct mm_ce_map *m = &ce->maps[i];

		if (lo < m->addr || hi > m->addr + m->bytes)
			continue;
		if (!m->reg) {
			m->reg = mm_cuda_host_register(ce->cu, (void *)m->addr,
						       m->bytes, &m->dev, msg,
						       sizeof(msg)) ? -1 : 1;
			if (m->reg < 0) {
				__atomic_add_fetch(&ce->n_failed, 1,
						   __ATOMIC_RELAXED);
				snprintf(ce->last_err, sizeof(ce->last_err),
					 "%s", msg);
			}
		}
		if (m->reg == 1)
			dev = m->dev + (lo - m->addr);
		break;
	}
	pthread_mutex_unlock(&ce->lock);
	return dev;
}

void mm_cuda_frame_span(const struct mm_image *im, uintptr_t *lo,
			uintptr_t *hi)
{
	const int rgb = im->format == MM_IMAGE_RGB24;
	uintptr_t a;

	*lo = (uintptr_t)im->plane[0];
	*hi = *lo + (im->height - 1) * im->stride[0] +
	      (size_t)im->width * (rgb ? 3 : 1);
	if (im->format == MM_IMAGE_NV12) {
		a = (uintptr_t)im->plane[1];
		*lo = a < *lo ? a : *lo;
		a += (im->height / 2 - 1) * im->stride[1] + im->width;
		*hi = a > *hi ? a : *hi;
	}
}

int mm_cuda_frame_of(const struct mm_mmproj *p, const struct mm_image *im,
		     const struct mm_image_plan *pl, uint64_t dev,
		     struct mm_cuda_frame *f)
{
	const struct mm_mmproj_vision *v = p ? mm_mmproj_vision(p) : NULL;
	uintptr_t lo, hi;

	if (!v || (im->format != MM_IMAGE_GREY &&
		   im->format != MM_IMAGE_RGB24 &&
		   im->format != MM_IMAGE_NV12) ||
	    pl->width != im->width || pl->height != im->height ||
	    !pl->content_w || !pl->content_h)
		return -EINVAL;
	mm_cuda_frame_span(im, &lo, &hi);
	memset(f, 0, sizeof(*f));
	f->fmt = im->format == MM_IMAGE_GREY ? 0 :
		 im->format == MM_IMAGE_RGB24 ? 1 : 2;
	f->plane[0] = dev + ((uintptr_t)im->plane[0] - lo);
	f->plane[1] = f->fmt == 2 ? dev + ((uintptr_t)im->plane[1] - lo) : 0;
	f->stride[0] = im->stride[0];
	f->stride[1] = f->fmt == 2 ? im->stride[1] : 0;
	f->w = im->width;
	f->h = im->height;
	f->s = v->image_size;
	f->P = v->patch_size;
	f->same = im->width == f->s && im->height == f->s;
	f->cx = pl->content_x;
	f->cy = pl->content_y;
	f->cw = pl->content_w;
	f->ch = pl->content_h;
	/* imgproc.c's overview(): the same float expressions */
	f->xr = (float)(im->width - 1) / (float)pl->content_w;
	f->yr = (float)(im->height - 1) / (float)pl->content_h;
	memcpy(f->pad, pl->pad_rgb, 3);
	memcpy(f->mean, v->mean, sizeof(f->mean));
	memcpy(f->std, v->std, sizeof(f->std));
	return 0;
}

int mm_cuda_enc_image(struct mm_cuda_enc *ce, const struct mm_mmproj *p,
		      const struct mm_image *im,
		      const struct mm_image_plan *pl, float *y)
{
	const struct mm_mmproj_vision *v = p ? mm_mmproj_vision(p) : NULL;
	const struct mm_ce_w *pw;
	struct mm_cuda_frame f;
	struct mm_cuda_mat mat;
	uintptr_t lo, hi;
	uint64_t dev;
	char msg[160];

	if (!ce || !ce->cu || !v || !im || !pl || !y ||
	    !v->patch_size || v->image_size % v->patch_size ||
	    v->n_patches != (v->image_size / v->patch_size) *
			    (v->image_size / v->patch_size))
		return 0;
	pw = mm_ce_find(ce, v->patch_w.data);
	if (!pw || !mm_cuda_ftype_ok(pw->t) || pw->m != v->n_embd ||
	    pw->k != 3 * (int64_t)v->patch_size * v->patch_size)
		return 0;
	mm_cuda_frame_span(im, &lo, &hi);
	dev = mm_ce_devaddr(ce, lo, hi);
	if (!dev || mm_cuda_frame_of(p, im, pl, dev, &f))
		return 0;
	mat = (struct mm_cuda_mat){ .t = pw->t, .dev = pw->dev, .m = pw->m,
				    .y = y };
	if (mm_cuda_image(ce->cu, &f, NULL, NULL, &mat, msg, sizeof(msg))) {
		mm_ce_fail(ce, msg);
		return 0;
	}
	__atomic_add_fetch(&ce->n_dev, 1, __ATOMIC_RELAXED);
	return 1;
}

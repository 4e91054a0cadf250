// SPDX-License-Identifier: MIT
/*
 * cuda_llama.c - the decoder on the CUDA back end: the choice of back end
 * at load (params.backend), the weight matrices uploaded once, the
 * matrix products of a forward pass dispatched to the device, and what
 * mmhal_model_info() reports.
 *
 * In this version only the weight matrix products run on the device
 * (attn_q/k/v/output, ffn_gate/up/down of every layer and the output
 * matrix, when their type is Q8_0, Q4_0 or Q4_K); RMSNorm, RoPE,
 * attention over the KV cache, SwiGLU and the embedding lookup stay on
 * the CPU, and each product copies its input to the device and its
 * output back. Matrices of other types (F16, Q6_K, ...) and the matrices
 * of added precision tiers run on the CPU. A product the device fails
 * runs on the CPU (the host copy of an uploaded matrix is kept in the
 * file's layout: it is not repacked) and the failure is kept in the
 * session's error message.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_be.h"
#include "cuda_llama.h"
#include "llama_int.h"

struct mm_cuda_llama {
	struct mm_cuda *cu;	/* NULL: the CPU back end */
	char note[192];		/* why the CPU runs, or the device */
	uint64_t dev_bytes;
};

static void mm_cl_release(struct mmhal_model *m)
{
	struct mm_cuda_llama *cl = m->cuda;

	if (!cl || !cl->cu)
		return;
	for (int l = 0; m->layers && l < m->hp.n_layer; l++)
		for (int i = 0; i < MM_LAYER_MATS; i++) {
			struct mm_llama_w *w = mm_layer_mat(&m->layers[l], i);

			mm_cuda_free(cl->cu, w->dev);
			w->dev = 0;
		}
	mm_cuda_free(cl->cu, m->output.dev);
	m->output.dev = 0;
	mm_cuda_close(cl->cu);
	cl->cu = NULL;
	cl->dev_bytes = 0;
}

static int mm_cl_upload(struct mmhal_model *m, struct mm_llama_w *w,
			int *n, char *err, size_t errlen)
{
	struct mm_cuda_llama *cl = m->cuda;
	const size_t bytes = w->rs * w->ne1;
	int ret;

	if (!mm_cuda_type_ok(w->t) || w->ne0 % 32 ||
	    (w->t == MM_TYPE_Q4_K && w->ne0 % 256))
		return 0;
	ret = mm_cuda_alloc(cl->cu, bytes, &w->dev, err, errlen);
	if (!ret)
		ret = mm_cuda_put(cl->cu, w->dev, w->d, bytes, err, errlen);
	if (ret) {
		mm_cuda_free(cl->cu, w->dev);
		w->dev = 0;
		return ret;
	}
	cl->dev_bytes += bytes;
	(*n)++;
	return 0;
}

int mm_cuda_llama_setup(struct mmhal_model *m,
			const struct mmhal_model_params *p, char *err,
			size_t errlen)
{
	const int want = p->backend;
	struct mm_cuda_llama *cl;
	char msg[192];
	int ret, n = 0;

	if (want < MMHAL_BACKEND_AUTO || want > MMHAL_BACKEND_CUDA)
		return mm_errf(-EINVAL, err, errlen,
			       "backend %d not supported (auto 0, cpu 1, cuda 2)",
			       want);
	cl = calloc(1, sizeof(*cl));
	if (!cl)
		return mm_errf(-ENOMEM, err, errlen, "out of memory");
	m->cuda = cl;
	if (want == MMHAL_BACKEND_CPU) {
		snprintf(cl->note, sizeof(cl->note), "backend cpu requested");
		return 0;
	}
	ret = mm_cuda_open(&cl->cu, msg, sizeof(msg));
	/* the base file's matrices: every layer's, then the output */
	for (int l = 0; !ret && l < m->hp.n_layer; l++)
		for (int i = 0; !ret && i < MM_LAYER_MATS; i++)
			ret = mm_cl_upload(m, mm_layer_mat(&m->layers[l], i), &n,
					   msg, sizeof(msg));
	if (!ret)
		ret = mm_cl_upload(m, &m->output, &n, msg, sizeof(msg));
	if (!ret && !n)
		ret = mm_errf(-ENOTSUP, msg, sizeof(msg),
			      "cuda: no matrix of a type the kernels multiply (q8_0, q4_0, q4_K)");
	if (!ret) {
		snprintf(cl->note, sizeof(cl->note), "%d matrices (%.1f MiB) on %s",
			 n, cl->dev_bytes / 1048576.0, mm_cuda_describe(cl->cu));
		return 0;
	}
	mm_cl_release(m);
	if (want == MMHAL_BACKEND_CUDA)
		return mm_errf(ret, err, errlen, "%s (backend cuda requested)",
			       msg);
	snprintf(cl->note, sizeof(cl->note), "%s", msg);
	return 0;
}

void mm_cuda_llama_info(const struct mmhal_model *m,
			struct mmhal_model_info *in)
{
	const struct mm_cuda_llama *cl = m->cuda;

	snprintf(in->backend, sizeof(in->backend), "%s",
		 cl && cl->cu ? "cuda" : "cpu");
	snprintf(in->backend_note, sizeof(in->backend_note), "%s",
		 cl ? cl->note : "");
}

void mm_cuda_llama_free(struct mmhal_model *m)
{
	mm_cl_release(m);
	free(m->cuda);
	m->cuda = NULL;
}

int mm_cuda_llama_proj(struct mmhal_ctx *c,
		       const struct mm_llama_w *const *ws, float *const *ys,
		       int nw, const float *X, int n)
{
	const struct mm_cuda_llama *cl = c->model->cuda;
	struct mm_cuda_mat mats[4];
	int ret;

	if (!cl || !cl->cu || nw < 1 || nw > 4)
		return 0;
	for (int i = 0; i < nw; i++) {
		if (!ws[i]->dev)
			return 0;
		mats[i] = (struct mm_cuda_mat){ .t = ws[i]->t,
						.dev = ws[i]->dev,
						.m = ws[i]->ne1, .y = ys[i] };
	}
	ret = mm_cuda_matmul_n(cl->cu, mats, nw, X, ws[0]->ne0, n, c->err,
			       sizeof(c->err));
	return ret == 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * cuda_llama.h - the decoder's use of the CUDA back end (cuda_llama.c).
 */
#ifndef MM_CUDA_LLAMA_H
#define MM_CUDA_LLAMA_H

#include <stddef.h>

#include "mmhal_model.h"

struct mmhal_model;
struct mmhal_ctx;
struct mm_llama_w;

/*
 * At load, after the weights are found and before they are repacked:
 * params.backend chosen. auto: the CUDA back end when the driver, a
 * device of sm_80 or later and the kernels are there and the matrices
 * upload, else the CPU (the reason kept for mmhal_model_info()); cuda:
 * the same, but any failure refuses the load (its message in err); cpu:
 * the CPU. Return: 0, -EINVAL a bad backend value, the error of the CUDA
 * back end (backend cuda), -ENOMEM.
 */
int mm_cuda_llama_setup(struct mmhal_model *m,
			const struct mmhal_model_params *p, char *err,
			size_t errlen);
/* info->backend ("cpu", "cuda") and info->backend_note. */
void mm_cuda_llama_info(const struct mmhal_model *m,
			struct mmhal_model_info *info);
void mm_cuda_llama_free(struct mmhal_model *m);
/* Y_i = X . W_i^T for nw matrices of one input on the device; 1 when
 * done there, 0 when the caller runs them on the CPU (a matrix not on
 * the device, or the device failed: c->err says why). */
int mm_cuda_llama_proj(struct mmhal_ctx *c,
		       const struct mm_llama_w *const *ws, float *const *ys,
		       int nw, const float *X, int n);

#endif /* MM_CUDA_LLAMA_H */

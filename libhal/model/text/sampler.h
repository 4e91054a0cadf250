/* SPDX-License-Identifier: MIT */
/*
 * sampler.h - token sampler of the model runtime (internal helpers; the
 * API is mmhal_sampler_* in libhal/include/mmhal_model.h).
 *
 * Threading: a sampler is used by one thread at a time.
 */
#ifndef MM_SAMPLER_H
#define MM_SAMPLER_H

#include <stdint.h>

#include "mmhal_model.h"

/* Index of the largest logit (the first one on ties); -EINVAL if n < 1. */
int32_t mm_sampler_argmax(const float *logits, int n);

#endif /* MM_SAMPLER_H */

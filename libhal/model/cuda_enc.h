/* SPDX-License-Identifier: MIT */
/*
 * cuda_enc.h - the mmproj encoders on the CUDA back end (cuda_enc.c).
 */
#ifndef MM_CUDA_ENC_H
#define MM_CUDA_ENC_H

#include <stddef.h>
#include <stdint.h>

struct mm_mmproj;
struct mm_enc_dev;
struct mm_cuda_enc;

/*
 * At mmhal_mmproj_load(): backend (enum mmhal_backend) chosen for the
 * encoders' weight products. auto: the CUDA back end when the driver, a
 * device of sm_80 or later and the kernels are there and the encoders'
 * linear and convolution weights of a type the kernels multiply (F16,
 * F32, Q8_0, Q4_0, Q4_K) upload, else the CPU (the reason kept); cuda:
 * the same, any failure refuses the load (its message in err, ending in
 * "(backend cuda requested)"); cpu: the CPU. *out is set on success,
 * whichever back end runs.
 * Return: 0, -EINVAL a bad backend value, the CUDA back end's error
 * (backend cuda), -ENOMEM.
 */
int mm_cuda_enc_setup(struct mm_cuda_enc **out, const struct mm_mmproj *p,
		      int backend, char *err, size_t errlen);
void mm_cuda_enc_free(struct mm_cuda_enc *ce);
/* The device for mm_vision_encode_dev()/mm_audio_encode_dev(); NULL
 * when the CPU runs. */
const struct mm_enc_dev *mm_cuda_enc_dev(const struct mm_cuda_enc *ce);
/* "cpu" or "cuda"; the note: the device and what is on it, or why the
 * CPU runs; products run on the device and those the device failed (run
 * on the CPU instead; the last failure in the note's last_err). */
const char *mm_cuda_enc_backend(const struct mm_cuda_enc *ce);
void mm_cuda_enc_note(struct mm_cuda_enc *ce, char *note, size_t len);
void mm_cuda_enc_counts(const struct mm_cuda_enc *ce, uint64_t *dev,
			uint64_t *failed);

#endif /* MM_CUDA_ENC_H */

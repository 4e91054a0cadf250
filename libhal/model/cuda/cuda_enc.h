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

/*
 * Frames read in place: [addr, addr + bytes) is a mapping that holds
 * frames (an mmedge buffer's mmhal_buf_map()) until mm_cuda_enc_unmap().
 * It is registered with the driver (cuMemHostRegister DEVICEMAP |
 * READ_ONLY) at the first frame mm_cuda_enc_image() finds in it, once;
 * unmap (also at mm_cuda_enc_free(); NULL, SIZE_MAX: all) unregisters
 * every declared mapping overlapping the range. A failed registration
 * is counted once and not retried (the CPU preprocesses those frames).
 * map: 0 (also on the CPU: nothing kept), -EINVAL, -ENOSPC (32 kept).
 */
int mm_cuda_enc_map(struct mm_cuda_enc *ce, const void *addr, size_t bytes);
void mm_cuda_enc_unmap(struct mm_cuda_enc *ce, const void *addr,
		       size_t bytes);

struct mm_image;
struct mm_image_plan;
struct mm_cuda_frame;
/* The bytes [*lo, *hi) of the frame's planes the conversion reads. */
void mm_cuda_frame_span(const struct mm_image *im, uintptr_t *lo,
			uintptr_t *hi);
/* The device description of the frame's overview (plan pl of
 * mm_image_plan()), dev the device address of host address *lo of
 * mm_cuda_frame_span(). Return: 0, -EINVAL. */
int mm_cuda_frame_of(const struct mm_mmproj *p, const struct mm_image *im,
		     const struct mm_image_plan *pl, uint64_t dev,
		     struct mm_cuda_frame *f);

/*
 * The overview of a frame lying in a declared mapping on the device: the
 * conversion and bilinear resize of imgproc.c read from the registered
 * mapping, im2col, and the patch embedding's product (F16/F32 patch
 * weight on the device) into y (n_patches x n_embd, host, no bias).
 * Return: 1 done; 0 not on the device (the CPU back end, a tiled plan,
 * a frame outside the declared mappings, a patch weight the f32 GEMM
 * does not take, or a device error, counted as failed).
 */
int mm_cuda_enc_image(struct mm_cuda_enc *ce, const struct mm_mmproj *p,
		      const struct mm_image *im,
		      const struct mm_image_plan *pl, float *y);

#endif /* MM_CUDA_ENC_H */

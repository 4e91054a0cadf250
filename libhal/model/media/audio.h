/* SPDX-License-Identifier: MIT */
/*
 * audio.h - the audio half of an mmproj on the CPU: S16LE mono 16 kHz PCM
 * to a log-mel spectrogram (the front end), and the Whisper-style encoder
 * with its ultravox projector (mel frames to decoder embeddings).
 * In-library interface (not installed).
 *
 * Front end (llama.cpp mtmd-audio.cpp's Whisper preprocessor): samples
 * x = s16 / 32768; frames of n_fft 400 samples every hop 160 samples,
 * frame i centred on sample 160 i (the 200 samples before sample 0 are the
 * reflection x[200], ..., x[1]; samples past the end are 0); periodic Hann
 * window; |rfft|^2 power; Slaney-scale mel filter bank (librosa's
 * htk=False, norm="slaney", 0 to 8 kHz) of n_mel (clip.audio.num_mel_bins)
 * bins; log10(max(power, 1e-10)); clamped below at (max over all frames
 * computed) - 8; then (x + 4) / 4.
 *
 * Two framings:
 *  - exact (mtmd): the input is zero-extended to at least 31 s (496000
 *    samples: N = max(n, 496000)); (N - 400) / 160 + 1 frames are computed
 *    and normalized together; they are cut into chunks of 3000 frames
 *    (30 s) and an incomplete last chunk is dropped, as mtmd does. So an
 *    input of up to 60.015 s gives one chunk, and audio past the chunks is
 *    not encoded (mtmd's rule, kept for equal outputs). Each chunk is
 *    encoded at 3000 frames, 1500 positions.
 *  - latency (exact = 0): ceil(n / 160) frames, no padding to 30 s; chunks
 *    of 3000 frames and a last chunk at its own length, encoded with that
 *    many positions (as whisper.cpp's audio_ctx: the conv and the
 *    position embedding are truncated). The frames are the first frames
 *    of the exact framing (same values, unless the whole input is quieter
 *    than the exact mode's zero padding, which only the clamp can tell).
 *
 * Mel layout: frame-major, frame t's n_mel values at mel[t * n_mel + c],
 * so chunk k is the contiguous run of frames [3000 k, 3000 (k + 1)).
 *
 * Encoder (clip.cpp's whisper graph): conv1d(k 3, pad 1) n_mel -> n_embd,
 * + bias, GELU (erf); conv1d(k 3, stride 2, pad 1), + bias, GELU;
 * + a.position_embd rows 0..n_pos-1; pre-LN blocks (bidirectional
 * attention, no mask; absent biases are zero), a.post_ln; ultravox
 * projector: consecutive groups of stack_factor positions concatenated
 * (how many groups: mm_audio_n_tokens(); a group reaching past the last
 * position is zero-padded), RMS norm (eps 1e-6) * norm_pre, mm.a.mlp.1,
 * SwiGLU (silu of the second half times the first half) when mm.a.mlp.2
 * takes half of mm.a.mlp.1's outputs, else GELU (erf), RMS norm (eps
 * 1e-6) * norm_mid, mm.a.mlp.2. Weights are multiplied in their file
 * type by quant.h's kernels (activations quantized on the fly).
 *
 * Threading: no shared mutable state; any number of calls may run at once
 * on one loaded mmproj (the FFT plan is made once, under a lock).
 * mm_audio_encode() creates a thread pool of n_threads (<= 0: online
 * CPUs) for the call.
 *
 * Errors: 0 or a negative errno; err (when errlen > 0) gets one line.
 * -EINVAL bad argument or size, -ENOENT the mmproj has no audio encoder,
 * -ENOMEM.
 */
#ifndef MM_AUDIO_H
#define MM_AUDIO_H

#include <stddef.h>
#include <stdint.h>

#include "mmproj.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifndef MM_MODEL_API
#define MM_MODEL_API
#endif

#define MM_AUDIO_RATE		16000	/* input samples per second */
#define MM_AUDIO_N_FFT		400
#define MM_AUDIO_HOP		160
#define MM_AUDIO_CHUNK_FRAMES	3000	/* mel frames per encoder window */
#define MM_AUDIO_EXACT_MIN	496000	/* exact mode: input extended to 31 s */

/*
 * Mel frames mm_audio_mel() gives for n samples (a multiple of
 * MM_AUDIO_CHUNK_FRAMES in exact mode; 0 if n is 0 or p has no audio).
 */
MM_MODEL_API size_t mm_audio_n_frames(const struct mm_mmproj *p, size_t n,
				      int exact);

/*
 * The log-mel frames of pcm[0..n) (read in place), malloc'd into *mel
 * (frame-major, *n_frames x n_mel floats; free() it). n >= 1.
 */
MM_MODEL_API int mm_audio_mel(const struct mm_mmproj *p, const int16_t *pcm,
			      size_t n, int exact, float **mel,
			      size_t *n_frames, char *err, size_t errlen);

/* As mm_audio_mel(), on float samples x (s16 / 32768's scale). */
MM_MODEL_API int mm_audio_mel_f32(const struct mm_mmproj *p, const float *x,
				  size_t n, int exact, float **mel,
				  size_t *n_frames, char *err, size_t errlen);

/*
 * The caller's PCM (struct mmhal_audio, checked: err names the field) as
 * the front end takes it (audio_in.c): mono S16LE at MM_AUDIO_RATE is used
 * in place (s16 set, f32 NULL, bytes 0); anything else is down-mixed (the
 * channels' mean) and, at another rate, resampled by speexdsp, in one
 * pass into f32 (malloc'd: free() it; bytes: the PCM bytes read). n: the
 * samples at MM_AUDIO_RATE, at most INT_MAX.
 */
struct mmhal_audio;
struct mm_audio_in {
	const int16_t *s16;
	float *f32;
	size_t n;
	uint64_t bytes;
};

MM_MODEL_API int mm_audio_input(const struct mmhal_audio *au,
				struct mm_audio_in *in, char *err,
				size_t errlen);

/* Encoder windows in n_frames mel frames: ceil(n_frames / 3000). */
MM_MODEL_API size_t mm_audio_n_chunks(size_t n_frames);
/*
 * Chunk k of the mel frames: *chunk points at its first frame, returns
 * its frame count (0 if k is out of range).
 */
MM_MODEL_API size_t mm_audio_chunk(const struct mm_mmproj *p, const float *mel,
				   size_t n_frames, size_t k,
				   const float **chunk);

/*
 * Embeddings one chunk of n_frames mel frames gives.
 *  - exact (mtmd): clip.cpp's clip_n_output_tokens(), counted on the mel
 *    frames: ceil(n_frames / stack_factor) / 2, rounded down (3000 frames,
 *    stack 8: 187). These are the first groups of stack_factor positions:
 *    when the positions (1500) do not fill the groups, the positions past
 *    the last kept group are dropped (stack 8: 187 groups of 8, the last 4
 *    positions dropped), or, when the count asks for one group more than
 *    the positions fill (stack 9: 167 for 1500 positions), that group is
 *    zero-padded. This is what llama.cpp returns wherever it runs; where
 *    its graph's row count differs from this count it aborts instead
 *    (Documentation/model-runtime.rst lists which widths).
 *  - latency (exact = 0): every position kept, the last group zero-padded:
 *    ceil(ceil(n_frames / 2) / stack_factor) (200 frames, stack 8: 13).
 * 0 without audio, for 0 frames or more than the encoder's positions
 * allow (2 * a.position_embd rows: an exact-mode chunk of 3000 frames
 * needs 1500), or when the count is 0 (exact mode, n_frames <=
 * stack_factor).
 */
MM_MODEL_API size_t mm_audio_n_tokens(const struct mm_mmproj *p,
				      size_t n_frames, int exact);
/* Width of each embedding (the projector's output; 0 without audio). */
MM_MODEL_API size_t mm_audio_n_embd_out(const struct mm_mmproj *p);

/*
 * Encodes one chunk: mel holds n_frames frames (1 ..
 * 2 * a.position_embd rows), frame-major; out receives n_out =
 * mm_audio_n_tokens(exact) x mm_audio_n_embd_out() floats, token-major
 * (exact: the stacking of mm_audio_n_tokens(); the other layers do not
 * depend on it).
 */
MM_MODEL_API int mm_audio_encode(const struct mm_mmproj *p, const float *mel,
				 size_t n_frames, int exact, float *out,
				 size_t n_out, int n_threads, char *err,
				 size_t errlen);
/*
 * mm_audio_encode() in a calibration mode (calib.h's enum mm_cal_mode;
 * 0 with cal NULL is mm_audio_encode()). -ENOENT also when a STATIC
 * calibration lacks a point the encoder reaches.
 */
struct mm_calib;
MM_MODEL_API int mm_audio_encode_cal(const struct mm_mmproj *p,
				     struct mm_calib *cal, int mode,
				     const float *mel, size_t n_frames,
				     int exact, float *out, size_t n_out,
				     int n_threads, char *err, size_t errlen);
/* mm_audio_encode_cal() with the weight products of the dynamic mode
 * offered to a device first (encoder.h's struct mm_enc_dev; NULL: the
 * CPU): the CUDA back end of mmhal_mmproj_load(). */
struct mm_enc_dev;
MM_MODEL_API int mm_audio_encode_dev(const struct mm_mmproj *p,
				     struct mm_calib *cal, int mode,
				     const struct mm_enc_dev *dev,
				     const float *mel, size_t n_frames,
				     int exact, float *out, size_t n_out,
				     int n_threads, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* MM_AUDIO_H */

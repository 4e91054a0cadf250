/* SPDX-License-Identifier: MIT */
/*
 * calib.h - INT8 calibration of the mmproj encoders: per-tensor activation
 * thresholds measured on captured frames and audio windows, the static
 * int8 mode that uses them, and the calibration file bound to the mmproj's
 * hash. In-library interface (Documentation/calibration.rst describes the
 * design and the figures).
 *
 * Quantization points: the input of every matrix product of an encoder
 * (each linear layer and convolution-as-GEMM, named by its weight tensor,
 * e.g. "v.blk.3.ffn_down.weight") and, where the head size is a multiple
 * of 32, the four attention operands of each block ("<blk>.attn.q" the
 * scaled queries, ".k", ".p" the unnormalized softmax, ".v"), e.g.
 * "a.blk.0.attn.k". mm_cal_create() lists them for an mmproj.
 *
 * Modes of an encoder run (struct mm_enc's cal_mode):
 *  - MM_CAL_DYNAMIC: the runtime's own path (Q8_0 per 32-value block for
 *    quantized weights), untouched;
 *  - MM_CAL_FLOAT: the float reference: every weight dequantized to f32,
 *    activations never quantized (f32 attention);
 *  - MM_CAL_OBSERVE: MM_CAL_FLOAT, and each point's |x| is added to its
 *    2048-bin histogram;
 *  - MM_CAL_STATIC: the integer path an NPU runs: each point's activation
 *    quantized with its calibrated per-tensor scale s = threshold / 127
 *    (q = round(x / s) clipped to +-127), weights int8 with one scale per
 *    output row (s_w = max |w_row| / 127 of the file's values, made once
 *    when the calibration is set). Products run on the runtime's Q8_0
 *    kernels with these constant scales in every block, so each output is
 *    s * s_w * (the int32 dot product of the int8 values), up to the f32
 *    sum of the blocks' partial products. The scales are f16 (the Q8_0
 *    block's scale field).
 *
 * Histograms: bins of |x| over [0, range), range set just above the first
 * nonzero batch's max (x (1 + 2^-20)) and doubled (pairs of bins merged,
 * exactly) until it exceeds every later value, so one pass over the
 * captures suffices.
 * Thresholds: minmax (the largest |x| seen), percentile (the upper edge of
 * the bin where the cumulative count reaches p of the total, at most the
 * max) and KL (TensorRT's entropy calibration: for each candidate i of 128
 * .. 2048 bins, the first i bins with the clipped tail added to the last
 * as P, P quantized to 128 levels as Q (each level's mass spread over its
 * nonzero bins), threshold = i bins' edge minimizing KL(P || Q)). The
 * softmax points (".attn.p") take 1 whatever the method: exp(s - row
 * max) lies in (0, 1] with 1 in every row, and clipping that largest
 * weight (KL picks 0.5 on the tiny audio tower) wrecks the attention.
 *
 * Threading: a struct mm_calib with histograms (OBSERVE) is used by one
 * encoder run at a time; once thresholds are set and mm_cal_prepare() has
 * run, STATIC runs only read it and may run at once. FLOAT runs need no
 * calibration.
 */
#ifndef MM_CALIB_H
#define MM_CALIB_H

#include <stddef.h>
#include <stdint.h>

#include "encoder.h"
#include "imgproc.h"
#include "mmproj.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MM_CAL_BINS		2048
#define MM_CAL_QLEVELS		128	/* KL: quantized levels (int8 magnitude) */
#define MM_CAL_NAME		64	/* point name bytes, NUL included */
#define MM_CAL_FORMAT		1	/* calibration file format version */
#define MM_CAL_HASH		32	/* BLAKE2b-256 of the mmproj file (mhash.h) */
#define MM_CAL_MAX_SAMPLES	(1ull << 32)

/* enum mm_cal_mode (MM_CAL_DYNAMIC ...) is the encoder's: encoder.h. */

/* The encoder's hooks into this calibration (encoder.h). */
extern const struct mm_enc_cal_hooks mm_cal_enc_hooks;

enum mm_cal_method {
	MM_CAL_MINMAX = 1,
	MM_CAL_PERCENTILE,
	MM_CAL_KL,
};

/* "minmax", "percentile", "kl"; NULL for another value. */
const char *mm_cal_method_name(int method);
/* 0 and *method, or -EINVAL. */
int mm_cal_method_parse(const char *s, int *method);

/* A 2048-bin histogram of |x|. */
struct mm_cal_hist {
	double range;		/* upper edge of the last bin; 0: not set */
	double amax;		/* largest |x| seen */
	uint64_t count;		/* values added */
	uint64_t bin[MM_CAL_BINS];
};

/* Adds |x[i]| * scale for i < n (NaN counts as 0). */
void mm_cal_hist_add(struct mm_cal_hist *h, const float *x, size_t n,
		     float scale);
/* The threshold by method (percentile: pct in (0, 1], e.g. 0.9999; other
 * methods ignore it). 0 for an empty or all-zero histogram. */
double mm_cal_threshold(const struct mm_cal_hist *h, int method, double pct);
/* KL(P || Q) of candidate i (MM_CAL_QLEVELS <= i <= MM_CAL_BINS) as the
 * KL method computes it (tests). */
double mm_cal_kl_divergence(const struct mm_cal_hist *h, int i);

struct mm_cal_point {
	char name[MM_CAL_NAME];
	const struct mm_mmproj_w *w;	/* linear: its weight; NULL: attention */
	int64_t m, k;			/* linear: rows of k (the GEMM's view) */
	struct mm_cal_hist *hist;	/* OBSERVE: allocated by mm_cal_create */
	float thr;			/* calibrated threshold (> 0) */
	uint8_t *wq;			/* STATIC: m rows of kp as Q8_0 blocks,
					 * the row's scale in each block */
	int64_t kp;			/* k rounded up to 32 */
};

struct mm_calib {
	const struct mm_mmproj *p;
	int n;
	struct mm_cal_point *pt;
	/* what the file records */
	int method;
	float pct;
	uint64_t version;		/* calibration version, >= 1 */
	uint64_t n_samples;		/* captures it was made from */
	uint8_t hash[MM_CAL_HASH];	/* of the mmproj file */
	int prepared;			/* mm_cal_prepare() done */
};

/*
 * The points of p (both encoders), thresholds unset; hist 1: with
 * histograms (for OBSERVE). Returns 0 or -ENOMEM / -EINVAL with err set.
 */
int mm_cal_create(const struct mm_mmproj *p, int hist, struct mm_calib **out,
		  char *err, size_t errlen);
void mm_cal_free(struct mm_calib *c);
/* The point called name, or NULL. */
struct mm_cal_point *mm_cal_find(const struct mm_calib *c, const char *name);
/* Sets every point's threshold from its histogram (points never reached,
 * or all zero, get the smallest positive threshold the file allows).
 * Returns 0 or -EINVAL (no histograms). */
int mm_cal_compute(struct mm_calib *c, int method, double pct, char *err,
		   size_t errlen);
/* Builds the per-row int8 weights for STATIC runs. 0 or -ENOMEM. */
int mm_cal_prepare(struct mm_calib *c, char *err, size_t errlen);

/*
 * The calibration file: a GGUF (general.architecture "mmcalib") with keys
 * mmcalib.format_version (u32, MM_CAL_FORMAT), mmcalib.method (string),
 * mmcalib.percentile (f32, percentile only), mmcalib.model_hash (string,
 * 64 lower-case hex digits: BLAKE2b-256 of the mmproj file),
 * mmcalib.version (u64 >= 1), mmcalib.n_samples (u64 >= 1),
 * mmcalib.points (string array, one name per point) and the F32 tensor
 * "thresholds" (one per point, in that order).
 */
int mm_cal_save(const struct mm_calib *c, const char *path, char *err,
		size_t errlen);
/*
 * Loads path for p, whose file hashes to hash: every key's type and range,
 * the names (unique, each one of p's points, all of p's points present),
 * the thresholds (finite, in [MM_CAL_THR_MIN, MM_CAL_THR_MAX]) are
 * checked. Returns 0, -ESTALE (made for another mmproj file: the message
 * names both hashes), -ENOENT (a missing key, tensor or point), -EPROTO (a
 * key of the wrong type), -EINVAL (a bad value), -ENOMEM, or what
 * mm_gguf_open() returns. The result is prepared (mm_cal_prepare()).
 */
int mm_cal_load(const struct mm_mmproj *p, const uint8_t hash[MM_CAL_HASH],
		const char *path, struct mm_calib **out, char *err,
		size_t errlen);
#define MM_CAL_THR_MIN	1e-30f
#define MM_CAL_THR_MAX	1e30f

/* ---- encoder hooks (encoder.c) ---------------------------------------- */

struct mm_enc;

/*
 * Y[n][m] = X[n][k] . W^T for a weight w (m rows of k) in the run's mode
 * (not DYNAMIC). Returns 0, -ENOENT (STATIC: w is not a point of the
 * calibration) or -ENOMEM.
 */
int mm_cal_linear(struct mm_enc *s, const struct mm_mmproj_w *w,
		  const float *X, float *Y, int64_t m, int64_t k, int64_t n);
/* OBSERVE: adds n floats of x times scale to the point's histogram (a
 * point without one, or an unknown name: nothing). */
void mm_cal_observe(struct mm_calib *c, const char *name, const float *x,
		    size_t n, float scale);
/* The f16-rounded scale threshold / 127 of a point; 0 when absent. */
float mm_cal_scale(const struct mm_calib *c, const char *name);
/* k floats (k a multiple of 32) to Q8_0 blocks with the fixed scale s
 * (f16-exact): q = round(x / s) clipped to +-127. */
void mm_cal_quant_row(const float *x, float s, void *y, int64_t k);
/*
 * Y[n][m] = X[n][k] . W^T with W m rows of Q8_0 (k a multiple of 32) and X
 * quantized by mm_cal_quant_row() with scale s. Returns 0 or -ENOMEM.
 */
int mm_cal_matmul_q8(struct mm_enc *s, const void *W, const float *X,
		     float sx, float *Y, int64_t m, int64_t k, int64_t n);

/* ---- encoding captures ------------------------------------------------ */

/* One capture: an image (GREY/RGB24/NV12) or mono S16 PCM at 16 kHz. */
struct mm_cal_capture {
	int kind;			/* MM_CAL_CAP_IMAGE or _AUDIO */
	struct mm_image im;		/* image: planes into data */
	const int16_t *pcm;		/* audio: into data */
	size_t n_samples;
	void *data;			/* owned (mm_cal_capture_free) */
	size_t bytes;
};
#define MM_CAL_CAP_IMAGE	1
#define MM_CAL_CAP_AUDIO	2

/*
 * Capture files: a 32-byte header, then the payload. Header (little-
 * endian): "MMCAP\0\0\1" (magic + version 1), u32 kind (1 image, 2 audio),
 * u32 format (image: MM_IMAGE_GREY/RGB24/NV12 fourcc; audio: 1 = S16LE
 * mono), u32 width / sample rate (16000), u32 height / 1, u64 payload
 * bytes. Image payload: the planes packed (stride = width * bytes per
 * pixel; NV12: Y then interleaved UV), even sizes for NV12, 1..4096 a
 * side; audio: the samples, 1 .. 30 s.
 */
int mm_cal_capture_read(const char *path, struct mm_cal_capture *c,
			char *err, size_t errlen);
int mm_cal_capture_write(const char *path, const struct mm_cal_capture *c,
			 char *err, size_t errlen);
void mm_cal_capture_free(struct mm_cal_capture *c);
/*
 * Synthetic captures (tests, mmgguf calib-gen): style 0 "scene": images
 * with gradients, bars and discs, moving with seed; audio a sweeping tone
 * with a second tone, amplitude-modulated; style 1 "noise": uniform noise
 * images and white-noise audio at full scale. Image w x h in fmt; audio
 * n_samples at 16 kHz.
 */
int mm_cal_synth_image(struct mm_cal_capture *c, uint32_t fmt, uint32_t w,
		       uint32_t h, int style, uint64_t seed);
int mm_cal_synth_audio(struct mm_cal_capture *c, size_t n_samples, int style,
		       uint64_t seed);

/*
 * Encodes a capture (image: its overview; audio: latency mode, every
 * window) in mode (the calibration c may be NULL for DYNAMIC) into a
 * malloc'd *out of *n_rows x *n_embd floats. Returns 0 or -errno.
 */
int mm_cal_encode(const struct mm_mmproj *p, struct mm_calib *c, int mode,
		  const struct mm_cal_capture *cap, int n_threads,
		  float **out, size_t *n_rows, size_t *n_embd, char *err,
		  size_t errlen);

/* Agreement of a mode's embeddings with the float reference's: cosine
 * similarity per output row (token), mean and min over all rows. */
struct mm_cal_agree {
	double cos_mean, cos_min;
	uint64_t rows;
	double ms;		/* encode time of the mode, all captures */
	double ms_float;	/* the float reference's */
};

/*
 * Compares mode (STATIC with c, or DYNAMIC) to FLOAT over the captures.
 * refs: NULL, or n_caps pointers where the float reference's outputs are
 * kept (NULL entries are encoded and stored; the caller frees them), so
 * several modes compare with one float run (ms_float counts the runs made).
 */
int mm_cal_agreement(const struct mm_mmproj *p, struct mm_calib *c, int mode,
		     const struct mm_cal_capture *caps, int n_caps,
		     int n_threads, float **refs, struct mm_cal_agree *out,
		     char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* MM_CALIB_H */

/* SPDX-License-Identifier: MIT */
/*
 * gguf.h - GGUF model container: reader (mmap, weights used in place) and
 * writer, as llama.cpp/ggml read and write it.
 *
 * Threading: an open struct mm_gguf is immutable; any number of threads may
 * call the const accessors on it at once. mm_gguf_close() must not run
 * concurrently with any other use of the same handle. A writer is owned by
 * one thread at a time.
 *
 * Errors: functions return 0 or a negative errno (-EINVAL for a malformed
 * file or bad argument, -ENOMEM, -ENOENT for a missing key/tensor, -EPROTO
 * for a key of the wrong type, -errno from the OS). Functions taking
 * (err, errlen) also write a one-line message naming the key or tensor and
 * the problem into err (always NUL-terminated when errlen > 0).
 *
 * Lifetime: every pointer returned by the accessors (names, strings, tensor
 * data) points into the handle and dies with mm_gguf_close(). Strings in
 * the file are not NUL-terminated; the accessors return a length, and
 * keys, tensor names and scalar string values are also NUL-terminated.
 */
#ifndef MM_GGUF_H
#define MM_GGUF_H

#include <stddef.h>
#include <stdint.h>

#include "common/mm_err.h"

#ifndef MM_MODEL_API
#define MM_MODEL_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define MM_GGUF_MAGIC		0x46554747u	/* "GGUF" read as LE u32 */
#define MM_GGUF_VERSION		3
#define MM_GGUF_DEFAULT_ALIGNMENT 32
#define MM_GGUF_MAX_DIMS	4
#define MM_GGUF_MAX_NAME	64	/* tensor names are < 64 bytes (ggml) */

/* KV value types, as stored in the file. */
enum mm_gguf_vtype {
	MM_GGUF_U8	= 0,
	MM_GGUF_I8	= 1,
	MM_GGUF_U16	= 2,
	MM_GGUF_I16	= 3,
	MM_GGUF_U32	= 4,
	MM_GGUF_I32	= 5,
	MM_GGUF_F32	= 6,
	MM_GGUF_BOOL	= 7,
	MM_GGUF_STR	= 8,
	MM_GGUF_ARR	= 9,
	MM_GGUF_U64	= 10,
	MM_GGUF_I64	= 11,
	MM_GGUF_F64	= 12,
	MM_GGUF_NTYPES
};

struct mm_gguf;

/*
 * One key/value pair; read-only view. For scalars, the value is in v (u64
 * for unsigned types and bool, i64 for signed types, f64 for f32/f64, and
 * str/len for strings). For arrays, arr_type and n describe the elements;
 * use mm_gguf_arr_*() to read them.
 */
struct mm_gguf_kv {
	const char *key;	/* NUL-terminated */
	uint32_t type;		/* enum mm_gguf_vtype */
	uint32_t arr_type;	/* element type when type == MM_GGUF_ARR */
	uint64_t n;		/* element count (arrays), string length */
	union {
		uint64_t u;
		int64_t i;
		double f;
		const char *str; /* NUL-terminated copy, n bytes */
	} v;
	/* private */
	const uint8_t *raw;	/* array elements in the file */
	/* string arrays: per element, the offset of its bytes in raw and
	 * its length, as parsed */
	const uint64_t *soff;
};

/* One tensor; read-only view. */
struct mm_gguf_tensor {
	char name[MM_GGUF_MAX_NAME];
	uint32_t type;		/* ggml type id */
	uint32_t n_dims;
	int64_t ne[MM_GGUF_MAX_DIMS]; /* ne[0] innermost; unused dims are 1 */
	uint64_t offset;	/* from the start of the data section */
	const void *data;	/* in the mapping, aligned to the file alignment */
	uint64_t size;		/* bytes */
};

/* File access. */
MM_MODEL_API int mm_gguf_open(const char *path, struct mm_gguf **out,
			      char *err, size_t errlen);
/* Parses data in place: it must stay valid until mm_gguf_close(). */
MM_MODEL_API int mm_gguf_open_mem(const void *data, size_t size,
				  struct mm_gguf **out, char *err,
				  size_t errlen);
/* Parses a whole-file mmap() (PROT_READ) that the handle then owns: it
 * is unmapped by mm_gguf_close(), or here on failure (sign.c maps, hashes
 * and then hands the mapping over). */
MM_MODEL_API int mm_gguf_open_mapped(void *map, size_t size,
				     struct mm_gguf **out, char *err,
				     size_t errlen);
MM_MODEL_API void mm_gguf_close(struct mm_gguf *g);

MM_MODEL_API uint32_t mm_gguf_version(const struct mm_gguf *g);
MM_MODEL_API uint32_t mm_gguf_alignment(const struct mm_gguf *g);
MM_MODEL_API uint64_t mm_gguf_data_offset(const struct mm_gguf *g);
MM_MODEL_API uint64_t mm_gguf_file_size(const struct mm_gguf *g);
/* general.architecture, or NULL. */
MM_MODEL_API const char *mm_gguf_arch(const struct mm_gguf *g);

/* Keys. */
MM_MODEL_API uint64_t mm_gguf_n_kv(const struct mm_gguf *g);
MM_MODEL_API const struct mm_gguf_kv *mm_gguf_kv_at(const struct mm_gguf *g,
						    uint64_t i);
MM_MODEL_API const struct mm_gguf_kv *mm_gguf_find(const struct mm_gguf *g,
						   const char *key);
MM_MODEL_API const char *mm_gguf_vtype_name(uint32_t type);

/*
 * Typed getters: 0, -ENOENT (no such key) or -EPROTO (wrong type, or the
 * value does not fit without loss). Integer getters accept any integer
 * type whose value fits: vocab_size may be u32 or u64.
 */
MM_MODEL_API int mm_gguf_get_u32(const struct mm_gguf *g, const char *key,
				 uint32_t *v);
MM_MODEL_API int mm_gguf_get_u64(const struct mm_gguf *g, const char *key,
				 uint64_t *v);
MM_MODEL_API int mm_gguf_get_i32(const struct mm_gguf *g, const char *key,
				 int32_t *v);
MM_MODEL_API int mm_gguf_get_f32(const struct mm_gguf *g, const char *key,
				 float *v);
MM_MODEL_API int mm_gguf_get_bool(const struct mm_gguf *g, const char *key,
				  int *v);
MM_MODEL_API int mm_gguf_get_str(const struct mm_gguf *g, const char *key,
				 const char **s, size_t *len);

/* Arrays: -EPROTO when kv is not an array or the element type differs. */
MM_MODEL_API int mm_gguf_arr(const struct mm_gguf_kv *kv, uint32_t *elem_type,
			     uint64_t *n);
MM_MODEL_API int mm_gguf_arr_str(const struct mm_gguf_kv *kv, uint64_t i,
				 const char **s, size_t *len);
/* f32 (or f64, narrowed) elements. */
MM_MODEL_API int mm_gguf_arr_f32(const struct mm_gguf_kv *kv, uint64_t i,
				 float *v);
/* Any integer element type whose value fits in an int32_t. */
MM_MODEL_API int mm_gguf_arr_i32(const struct mm_gguf_kv *kv, uint64_t i,
				 int32_t *v);
/* Raw element bytes (little-endian) for numeric arrays, else NULL. */
MM_MODEL_API const void *mm_gguf_arr_data(const struct mm_gguf_kv *kv);

/* Tensors. */
MM_MODEL_API uint64_t mm_gguf_n_tensors(const struct mm_gguf *g);
MM_MODEL_API const struct mm_gguf_tensor *
mm_gguf_tensor_at(const struct mm_gguf *g, uint64_t i);
MM_MODEL_API const struct mm_gguf_tensor *
mm_gguf_tensor(const struct mm_gguf *g, const char *name);

/*
 * ggml type table, for every type ggml defines (not only those the
 * kernels run): name (NULL for unknown ids), elements and bytes per block.
 */
MM_MODEL_API const char *mm_gguf_type_name(uint32_t type);
MM_MODEL_API int mm_gguf_type_block(uint32_t type, uint32_t *elems,
				    uint32_t *bytes);
/* Bytes of a tensor of this type/shape; -EINVAL if bad or it overflows. */
MM_MODEL_API int mm_gguf_nbytes(uint32_t type, uint32_t n_dims,
				const int64_t *ne, uint64_t *bytes);

/* Checks UTF-8 (no overlongs, surrogates, or > U+10FFFF); 1 if valid. */
MM_MODEL_API int mm_gguf_utf8_valid(const char *s, size_t len);

/*
 * Writer. Builds a GGUF v3 file: KVs in insertion order, then tensor
 * infos, then data, each tensor padded to the alignment (ggml's layout).
 * The add functions check names (UTF-8, no duplicates, tensor name < 64
 * bytes, shape valid for the type) and return -EINVAL, -EEXIST or -ENOMEM.
 * general.alignment is written first when it is not the default.
 */
struct mm_gguf_writer;

/* Fills dst (size bytes) with the data of tensor idx; 0 or -errno. */
typedef int (*mm_gguf_fill_fn)(void *ctx, const char *name, void *dst,
			       uint64_t size);

MM_MODEL_API struct mm_gguf_writer *mm_gguf_writer_new(uint32_t alignment);
MM_MODEL_API void mm_gguf_writer_free(struct mm_gguf_writer *w);

MM_MODEL_API int mm_gguf_w_u8(struct mm_gguf_writer *w, const char *key,
			      uint8_t v);
MM_MODEL_API int mm_gguf_w_i8(struct mm_gguf_writer *w, const char *key,
			      int8_t v);
MM_MODEL_API int mm_gguf_w_u16(struct mm_gguf_writer *w, const char *key,
			       uint16_t v);
MM_MODEL_API int mm_gguf_w_i16(struct mm_gguf_writer *w, const char *key,
			       int16_t v);
MM_MODEL_API int mm_gguf_w_u32(struct mm_gguf_writer *w, const char *key,
			       uint32_t v);
MM_MODEL_API int mm_gguf_w_i32(struct mm_gguf_writer *w, const char *key,
			       int32_t v);
MM_MODEL_API int mm_gguf_w_f32(struct mm_gguf_writer *w, const char *key,
			       float v);
MM_MODEL_API int mm_gguf_w_bool(struct mm_gguf_writer *w, const char *key,
				int v);
MM_MODEL_API int mm_gguf_w_u64(struct mm_gguf_writer *w, const char *key,
			       uint64_t v);
MM_MODEL_API int mm_gguf_w_i64(struct mm_gguf_writer *w, const char *key,
			       int64_t v);
MM_MODEL_API int mm_gguf_w_f64(struct mm_gguf_writer *w, const char *key,
			       double v);
MM_MODEL_API int mm_gguf_w_str(struct mm_gguf_writer *w, const char *key,
			       const char *s);
MM_MODEL_API int mm_gguf_w_strn(struct mm_gguf_writer *w, const char *key,
				const char *s, size_t len);
/* Numeric/bool array: n elements of elem_type, packed little-endian. */
MM_MODEL_API int mm_gguf_w_arr(struct mm_gguf_writer *w, const char *key,
			       uint32_t elem_type, const void *data,
			       uint64_t n);
/* String array; lens may be NULL (then strlen). */
MM_MODEL_API int mm_gguf_w_arr_str(struct mm_gguf_writer *w, const char *key,
				   const char *const *strs,
				   const size_t *lens, uint64_t n);
/* Copies a KV from an open file (e.g. for a quantizer). */
MM_MODEL_API int mm_gguf_w_kv(struct mm_gguf_writer *w,
			      const struct mm_gguf_kv *kv);

/* Tensor whose data is copied now (data may be NULL: zeros). */
MM_MODEL_API int mm_gguf_w_tensor(struct mm_gguf_writer *w, const char *name,
				  uint32_t type, uint32_t n_dims,
				  const int64_t *ne, const void *data);
/* Tensor whose data fill() produces at write time. */
MM_MODEL_API int mm_gguf_w_tensor_cb(struct mm_gguf_writer *w,
				     const char *name, uint32_t type,
				     uint32_t n_dims, const int64_t *ne,
				     mm_gguf_fill_fn fill, void *ctx);

MM_MODEL_API int mm_gguf_w_write_file(struct mm_gguf_writer *w,
				      const char *path, char *err,
				      size_t errlen);
/* Writes into a malloc'd buffer the caller frees. */
MM_MODEL_API int mm_gguf_w_write_mem(struct mm_gguf_writer *w, void **buf,
				     size_t *size, char *err, size_t errlen);

/* mm_errf(): the error formatter, ../common/mm_err.h. */

#ifdef __cplusplus
}
#endif

#endif /* MM_GGUF_H */

// SPDX-License-Identifier: MIT
/*
 * gguf_write.c - GGUF v3 writer with ggml's layout: header, KVs in
 * insertion order, tensor infos with offsets that are the running sum of
 * the sizes padded to the alignment, padding to the alignment, then the
 * data of each tensor, padded likewise (the last one too).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"
#include "gguf_internal.h"

struct mm_gguf_wtensor {
	char name[MM_GGUF_MAX_NAME];
	uint32_t type;
	uint32_t n_dims;
	int64_t ne[MM_GGUF_MAX_DIMS];
	uint64_t size;
	uint64_t offset;
	void *copy;		/* owned copy, or NULL */
	mm_gguf_fill_fn fill;
	void *ctx;
};

struct mm_gguf_writer {
	uint32_t alignment;
	uint8_t *kvbuf;		/* serialized KVs */
	size_t kvlen, kvcap;
	uint64_t n_kv;
	char **keys;		/* owned key copies (map borrows them) */
	size_t nkeys_cap;
	struct mm_strmap kmap;

	struct mm_gguf_wtensor *t;
	uint64_t n_t, t_cap;
	struct mm_strmap tmap;
	uint64_t data_size;	/* running padded sum */
	int failed;		/* an allocation failed: refuse to write */
};

static int mm_gw_put(struct mm_gguf_writer *w, const void *p, size_t n)
{
	if (w->kvlen + n > w->kvcap) {
		size_t cap = w->kvcap ? w->kvcap : 1024;
		uint8_t *nb;

		while (cap < w->kvlen + n)
			cap *= 2;
		nb = realloc(w->kvbuf, cap);
		if (!nb) {
			w->failed = 1;
			return -ENOMEM;
		}
		w->kvbuf = nb;
		w->kvcap = cap;
	}
	memcpy(w->kvbuf + w->kvlen, p, n);
	w->kvlen += n;
	return 0;
}

static int mm_gw_le(struct mm_gguf_writer *w, uint64_t v, unsigned n)
{
	uint8_t b[8];

	for (unsigned i = 0; i < n; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	return mm_gw_put(w, b, n);
}

static int mm_gw_str(struct mm_gguf_writer *w, const char *s, size_t len)
{
	int ret = mm_gw_le(w, len, 8);

	return ret ? ret : mm_gw_put(w, s, len);
}

/* Checks and records the key, writes it and the type. */
static int mm_gw_key(struct mm_gguf_writer *w, const char *key, uint32_t type)
{
	size_t len;
	char *copy;
	int ret;

	if (!key || !*key)
		return -EINVAL;
	len = strlen(key);
	if (!mm_gguf_utf8_valid(key, len))
		return -EINVAL;
	if (mm_strmap_get(&w->kmap, key, len) >= 0)
		return -EEXIST;
	if (w->n_kv + 1 > w->nkeys_cap) {
		size_t cap = w->nkeys_cap ? w->nkeys_cap * 2 : 32;
		char **nk = realloc(w->keys, cap * sizeof(*nk));

		if (!nk)
			return -ENOMEM;
		w->keys = nk;
		w->nkeys_cap = cap;
	}
	copy = strdup(key);
	if (!copy)
		return -ENOMEM;
	ret = mm_strmap_put(&w->kmap, copy, len, (int64_t)w->n_kv);
	if (ret) {
		free(copy);
		return ret < 0 ? ret : -EEXIST;
	}
	w->keys[w->n_kv++] = copy;
	ret = mm_gw_str(w, key, len);
	if (!ret)
		ret = mm_gw_le(w, type, 4);
	return ret;
}

struct mm_gguf_writer *mm_gguf_writer_new(uint32_t alignment)
{
	struct mm_gguf_writer *w;

	if (!alignment)
		alignment = MM_GGUF_DEFAULT_ALIGNMENT;
	if (alignment & (alignment - 1) || alignment > (1u << 30))
		return NULL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->alignment = alignment;
	if (alignment != MM_GGUF_DEFAULT_ALIGNMENT &&
	    (mm_gw_key(w, "general.alignment", MM_GGUF_U32) ||
	     mm_gw_le(w, alignment, 4))) {
		mm_gguf_writer_free(w);
		return NULL;
	}
	return w;
}

void mm_gguf_writer_free(struct mm_gguf_writer *w)
{
	if (!w)
		return;
	for (uint64_t i = 0; i < w->n_kv; i++)
		free(w->keys[i]);
	free(w->keys);
	free(w->kvbuf);
	mm_strmap_free(&w->kmap);
	for (uint64_t i = 0; i < w->n_t; i++)
		free(w->t[i].copy);
	free(w->t);
	mm_strmap_free(&w->tmap);
	free(w);
}

/* general.alignment must agree with the writer's alignment. */
static int mm_gw_alignment_key(struct mm_gguf_writer *w, const char *key,
			       uint32_t type, uint64_t v, int *done)
{
	*done = 0;
	if (strcmp(key, "general.alignment"))
		return 0;
	if (type != MM_GGUF_U32 || v != w->alignment)
		return -EINVAL;
	if (mm_strmap_get(&w->kmap, key, strlen(key)) >= 0)
		*done = 1;
	return 0;
}

static int mm_gw_scalar(struct mm_gguf_writer *w, const char *key,
			uint32_t type, uint64_t bits)
{
	int ret, done;

	ret = mm_gw_alignment_key(w, key, type, bits, &done);
	if (ret || done)
		return ret;
	ret = mm_gw_key(w, key, type);
	return ret ? ret : mm_gw_le(w, bits, mm_gguf__vtype_size(type));
}

int mm_gguf_w_u8(struct mm_gguf_writer *w, const char *k, uint8_t v)
{
	return mm_gw_scalar(w, k, MM_GGUF_U8, v);
}

int mm_gguf_w_i8(struct mm_gguf_writer *w, const char *k, int8_t v)
{
	return mm_gw_scalar(w, k, MM_GGUF_I8, (uint8_t)v);
}

int mm_gguf_w_u16(struct mm_gguf_writer *w, const char *k, uint16_t v)
{
	return mm_gw_scalar(w, k, MM_GGUF_U16, v);
}

int mm_gguf_w_i16(struct mm_gguf_writer *w, const char *k, int16_t v)
{
	return mm_gw_scalar(w, k, MM_GGUF_I16, (uint16_t)v);
}

int mm_gguf_w_u32(struct mm_gguf_writer *w, const char *k, uint32_t v)
{
	return mm_gw_scalar(w, k, MM_GGUF_U32, v);
}

int mm_gguf_w_i32(struct mm_gguf_writer *w, const char *k, int32_t v)
{
	return mm_gw_scalar(w, k, MM_GGUF_I32, (uint32_t)v);
}

int mm_gguf_w_f32(struct mm_gguf_writer *w, const char *k, float v)
{
	uint32_t b;

	memcpy(&b, &v, 4);
	return mm_gw_scalar(w, k, MM_GGUF_F32, b);
}

int mm_gguf_w_bool(struct mm_gguf_writer *w, const char *k, int v)
{
	return mm_gw_scalar(w, k, MM_GGUF_BOOL, v ? 1 : 0);
}

int mm_gguf_w_u64(struct mm_gguf_writer *w, const char *k, uint64_t v)
{
	return mm_gw_scalar(w, k, MM_GGUF_U64, v);
}

int mm_gguf_w_i64(struct mm_gguf_writer *w, const char *k, int64_t v)
{
	return mm_gw_scalar(w, k, MM_GGUF_I64, (uint64_t)v);
}

int mm_gguf_w_f64(struct mm_gguf_writer *w, const char *k, double v)
{
	uint64_t b;

	memcpy(&b, &v, 8);
	return mm_gw_scalar(w, k, MM_GGUF_F64, b);
}

int mm_gguf_w_strn(struct mm_gguf_writer *w, const char *k, const char *s,
		   size_t len)
{
	int ret;

	if (!s && len)
		return -EINVAL;
	ret = mm_gw_key(w, k, MM_GGUF_STR);
	return ret ? ret : mm_gw_str(w, s, len);
}

int mm_gguf_w_str(struct mm_gguf_writer *w, const char *k, const char *s)
{
	return s ? mm_gguf_w_strn(w, k, s, strlen(s)) : -EINVAL;
}

int mm_gguf_w_arr(struct mm_gguf_writer *w, const char *k, uint32_t et,
		  const void *data, uint64_t n)
{
	uint32_t esz = mm_gguf__vtype_size(et);
	int ret;

	if (!esz || (!data && n) || n > SIZE_MAX / esz)
		return -EINVAL;
	ret = mm_gw_key(w, k, MM_GGUF_ARR);
	if (!ret)
		ret = mm_gw_le(w, et, 4);
	if (!ret)
		ret = mm_gw_le(w, n, 8);
	/* host is little-endian (x86-64, arm64), as the format */
	if (!ret && n)
		ret = mm_gw_put(w, data, (size_t)(n * esz));
	return ret;
}

int mm_gguf_w_arr_str(struct mm_gguf_writer *w, const char *k,
		      const char *const *strs, const size_t *lens, uint64_t n)
{
	int ret;

	if (!strs && n)
		return -EINVAL;
	ret = mm_gw_key(w, k, MM_GGUF_ARR);
	if (!ret)
		ret = mm_gw_le(w, MM_GGUF_STR, 4);
	if (!ret)
		ret = mm_gw_le(w, n, 8);
	for (uint64_t i = 0; !ret && i < n; i++)
		ret = mm_gw_str(w, strs[i], lens ? lens[i] : strlen(strs[i]));
	return ret;
}

int mm_gguf_w_kv(struct mm_gguf_writer *w, const struct mm_gguf_kv *kv)
{
	int ret, done;

	if (!kv)
		return -EINVAL;
	switch (kv->type) {
	case MM_GGUF_STR:
		return mm_gguf_w_strn(w, kv->key, kv->v.str, kv->n);
	case MM_GGUF_ARR:
		if (kv->arr_type != MM_GGUF_STR)
			return mm_gguf_w_arr(w, kv->key, kv->arr_type,
					     mm_gguf_arr_data(kv), kv->n);
		ret = mm_gw_key(w, kv->key, MM_GGUF_ARR);
		if (!ret)
			ret = mm_gw_le(w, MM_GGUF_STR, 4);
		if (!ret)
			ret = mm_gw_le(w, kv->n, 8);
		for (uint64_t i = 0; !ret && i < kv->n; i++) {
			const char *s;
			size_t len;

			ret = mm_gguf_arr_str(kv, i, &s, &len);
			if (!ret)
				ret = mm_gw_str(w, s, len);
		}
		return ret;
	case MM_GGUF_F32: {
		float f = (float)kv->v.f;
		uint32_t b;

		memcpy(&b, &f, 4);
		return mm_gw_scalar(w, kv->key, kv->type, b);
	}
	case MM_GGUF_F64: {
		uint64_t b;

		memcpy(&b, &kv->v.f, 8);
		return mm_gw_scalar(w, kv->key, kv->type, b);
	}
	default:
		if (kv->type >= MM_GGUF_NTYPES)
			return -EINVAL;
		ret = mm_gw_alignment_key(w, kv->key, kv->type, kv->v.u, &done);
		if (ret || done)
			return ret;
		return mm_gw_scalar(w, kv->key, kv->type, kv->v.u);
	}
}

static int mm_gw_tensor(struct mm_gguf_writer *w, const char *name,
			uint32_t type, uint32_t n_dims, const int64_t *ne,
			struct mm_gguf_wtensor **out)
{
	struct mm_gguf_wtensor *t;
	uint64_t size;
	size_t len;
	int ret;

	if (!name || !*name || n_dims > MM_GGUF_MAX_DIMS || (n_dims && !ne))
		return -EINVAL;
	len = strlen(name);
	if (len >= MM_GGUF_MAX_NAME || !mm_gguf_utf8_valid(name, len))
		return -EINVAL;
	{
		int64_t full[MM_GGUF_MAX_DIMS] = { 1, 1, 1, 1 };

		for (uint32_t i = 0; i < n_dims; i++)
			full[i] = ne[i];
		if (mm_gguf_nbytes(type, MM_GGUF_MAX_DIMS, full, &size))
			return -EINVAL;
	}
	if (mm_strmap_get(&w->tmap, name, len) >= 0)
		return -EEXIST;
	if (w->n_t + 1 > w->t_cap) {
		uint64_t cap = w->t_cap ? w->t_cap * 2 : 64;
		struct mm_gguf_wtensor *nt = realloc(w->t, cap * sizeof(*nt));

		if (!nt)
			return -ENOMEM;
		/* the map borrows names: re-point it after moving them */
		if (nt != w->t) {
			mm_strmap_free(&w->tmap);
			for (uint64_t i = 0; i < w->n_t; i++)
				if (mm_strmap_put(&w->tmap, nt[i].name,
						  strlen(nt[i].name),
						  (int64_t)i) < 0) {
					w->t = nt;
					w->t_cap = cap;
					w->failed = 1;
					return -ENOMEM;
				}
		}
		w->t = nt;
		w->t_cap = cap;
	}
	t = &w->t[w->n_t];
	memset(t, 0, sizeof(*t));
	memcpy(t->name, name, len + 1);
	ret = mm_strmap_put(&w->tmap, t->name, len, (int64_t)w->n_t);
	if (ret)
		return ret < 0 ? ret : -EEXIST;
	t->type = type;
	t->n_dims = n_dims;
	for (uint32_t i = 0; i < MM_GGUF_MAX_DIMS; i++)
		t->ne[i] = i < n_dims ? ne[i] : 1;
	t->size = size;
	t->offset = w->data_size;
	w->data_size += (size + w->alignment - 1) & ~(uint64_t)(w->alignment - 1);
	w->n_t++;
	*out = t;
	return 0;
}

int mm_gguf_w_tensor(struct mm_gguf_writer *w, const char *name,
		     uint32_t type, uint32_t n_dims, const int64_t *ne,
		     const void *data)
{
	struct mm_gguf_wtensor *t;
	int ret;

	ret = mm_gw_tensor(w, name, type, n_dims, ne, &t);
	if (ret)
		return ret;
	if (data && t->size) {
		t->copy = malloc(t->size);
		if (!t->copy) {
			w->failed = 1;
			return -ENOMEM;
		}
		memcpy(t->copy, data, t->size);
	}
	return 0;
}

int mm_gguf_w_tensor_cb(struct mm_gguf_writer *w, const char *name,
			uint32_t type, uint32_t n_dims, const int64_t *ne,
			mm_gguf_fill_fn fill, void *ctx)
{
	struct mm_gguf_wtensor *t;
	int ret;

	if (!fill)
		return -EINVAL;
	ret = mm_gw_tensor(w, name, type, n_dims, ne, &t);
	if (ret)
		return ret;
	t->fill = fill;
	t->ctx = ctx;
	return 0;
}

static int mm_gw_out(FILE *f, const void *p, size_t n)
{
	return fwrite(p, 1, n, f) == n ? 0 : -EIO;
}

static int mm_gw_out_le(FILE *f, uint64_t v, unsigned n)
{
	uint8_t b[8];

	for (unsigned i = 0; i < n; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	return mm_gw_out(f, b, n);
}

static int mm_gw_pad(FILE *f, uint64_t pos, uint32_t align)
{
	static const uint8_t zero[64];
	uint64_t n = ((pos + align - 1) & ~(uint64_t)(align - 1)) - pos;
	int ret = 0;

	while (!ret && n) {
		size_t c = n > sizeof(zero) ? sizeof(zero) : (size_t)n;

		ret = mm_gw_out(f, zero, c);
		n -= c;
	}
	return ret;
}

static int mm_gw_emit(struct mm_gguf_writer *w, FILE *f, char *err,
		      size_t errlen)
{
	uint64_t pos;
	void *buf = NULL;
	uint64_t bufsz = 0;
	int ret;

	if (w->failed) {
		mm_errf(0, err, errlen, "writer ran out of memory earlier");
		return -ENOMEM;
	}
	ret = mm_gw_out_le(f, MM_GGUF_MAGIC, 4);
	if (!ret)
		ret = mm_gw_out_le(f, MM_GGUF_VERSION, 4);
	if (!ret)
		ret = mm_gw_out_le(f, w->n_t, 8);
	if (!ret)
		ret = mm_gw_out_le(f, w->n_kv, 8);
	if (!ret && w->kvlen)
		ret = mm_gw_out(f, w->kvbuf, w->kvlen);
	pos = 24 + w->kvlen;
	for (uint64_t i = 0; !ret && i < w->n_t; i++) {
		const struct mm_gguf_wtensor *t = &w->t[i];
		size_t len = strlen(t->name);

		ret = mm_gw_out_le(f, len, 8);
		if (!ret)
			ret = mm_gw_out(f, t->name, len);
		if (!ret)
			ret = mm_gw_out_le(f, t->n_dims, 4);
		for (uint32_t d = 0; !ret && d < t->n_dims; d++)
			ret = mm_gw_out_le(f, (uint64_t)t->ne[d], 8);
		if (!ret)
			ret = mm_gw_out_le(f, t->type, 4);
		if (!ret)
			ret = mm_gw_out_le(f, t->offset, 8);
		pos += 8 + len + 4 + 8ull * t->n_dims + 4 + 8;
	}
	if (!ret)
		ret = mm_gw_pad(f, pos, w->alignment);
	for (uint64_t i = 0; !ret && i < w->n_t; i++) {
		const struct mm_gguf_wtensor *t = &w->t[i];
		const void *src = t->copy;

		if (t->fill) {
			if (t->size > bufsz) {
				void *nb = realloc(buf, t->size);

				if (!nb) {
					ret = -ENOMEM;
					break;
				}
				buf = nb;
				bufsz = t->size;
			}
			ret = t->fill(t->ctx, t->name, buf, t->size);
			if (ret) {
				mm_errf(0, err, errlen, "tensor '%s': producing data failed: %s",
					   t->name, strerror(-ret));
				break;
			}
			src = buf;
		}
		if (src)
			ret = mm_gw_out(f, src, t->size);
		else
			ret = mm_gw_pad(f, 0, 1) ? -EIO : 0;
		if (!ret && !src) {
			/* zeros */
			uint64_t n = t->size;
			static const uint8_t zero[4096];

			while (!ret && n) {
				size_t c = n > sizeof(zero) ? sizeof(zero) : (size_t)n;

				ret = mm_gw_out(f, zero, c);
				n -= c;
			}
		}
		if (!ret)
			ret = mm_gw_pad(f, t->size, w->alignment);
	}
	free(buf);
	if (ret && err && errlen && !err[0])
		mm_errf(0, err, errlen, "writing failed: %s", strerror(-ret));
	return ret;
}

int mm_gguf_w_write_file(struct mm_gguf_writer *w, const char *path,
			 char *err, size_t errlen)
{
	FILE *f;
	int ret;

	if (err && errlen)
		err[0] = 0;
	f = fopen(path, "wb");
	if (!f) {
		ret = -errno;
		mm_errf(0, err, errlen, "%s: cannot create: %s", path,
			   strerror(errno));
		return ret;
	}
	ret = mm_gw_emit(w, f, err, errlen);
	if (fclose(f) && !ret) {
		ret = -EIO;
		mm_errf(0, err, errlen, "%s: write failed: %s", path,
			   strerror(errno));
	}
	if (ret)
		remove(path);
	return ret;
}

int mm_gguf_w_write_mem(struct mm_gguf_writer *w, void **out, size_t *size,
			char *err, size_t errlen)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int ret;

	if (err && errlen)
		err[0] = 0;
	f = open_memstream(&buf, &len);
	if (!f)
		return -ENOMEM;
	ret = mm_gw_emit(w, f, err, errlen);
	if (fclose(f) && !ret)
		ret = -ENOMEM;
	if (ret) {
		free(buf);
		return ret;
	}
	*out = buf;
	*size = len;
	return 0;
}

// SPDX-License-Identifier: MIT
/*
 * gguf.c - GGUF reader. The file is mapped read-only and tensor data is
 * used in place. Nothing in the file is trusted: every count is bounded by
 * the bytes left before anything is allocated, every read is checked
 * against the end, and the layout rules of ggml's gguf.cpp are enforced
 * (running aligned tensor offsets, block multiples, unique names).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gguf.h"
#include "gguf_internal.h"

struct mm_gguf {
	const uint8_t *base;
	size_t size;
	int mapped;		/* base is our mmap */
	uint32_t version;
	uint32_t alignment;
	uint64_t data_off;

	struct mm_gguf_kv *kv;
	uint64_t n_kv;
	struct mm_gguf_tensor *t;
	uint64_t n_t;

	struct mm_strmap kv_map;
	struct mm_strmap t_map;
	const char *arch;
};

/* ---- ggml type table ------------------------------------------------ */

struct mm_gguf_tinfo {
	const char *name;
	uint16_t blck;
	uint16_t bytes;
};

/* Every type ggml defines (ggml.c type_traits); removed ids stay NULL. */
static const struct mm_gguf_tinfo mm_gguf_types[] = {
	[0] = { "f32", 1, 4 },
	[1] = { "f16", 1, 2 },
	[2] = { "q4_0", 32, 18 },
	[3] = { "q4_1", 32, 20 },
	[6] = { "q5_0", 32, 22 },
	[7] = { "q5_1", 32, 24 },
	[8] = { "q8_0", 32, 34 },
	[9] = { "q8_1", 32, 36 },
	[10] = { "q2_k", 256, 84 },
	[11] = { "q3_k", 256, 110 },
	[12] = { "q4_k", 256, 144 },
	[13] = { "q5_k", 256, 176 },
	[14] = { "q6_k", 256, 210 },
	[15] = { "q8_k", 256, 292 },
	[16] = { "iq2_xxs", 256, 66 },
	[17] = { "iq2_xs", 256, 74 },
	[18] = { "iq3_xxs", 256, 98 },
	[19] = { "iq1_s", 256, 50 },
	[20] = { "iq4_nl", 32, 18 },
	[21] = { "iq3_s", 256, 110 },
	[22] = { "iq2_s", 256, 82 },
	[23] = { "iq4_xs", 256, 136 },
	[24] = { "i8", 1, 1 },
	[25] = { "i16", 1, 2 },
	[26] = { "i32", 1, 4 },
	[27] = { "i64", 1, 8 },
	[28] = { "f64", 1, 8 },
	[29] = { "iq1_m", 256, 56 },
	[30] = { "bf16", 1, 2 },
	[34] = { "tq1_0", 256, 54 },
	[35] = { "tq2_0", 256, 66 },
	[39] = { "mxfp4", 32, 17 },
};

#define MM_GGUF_NTYPE_IDS (sizeof(mm_gguf_types) / sizeof(mm_gguf_types[0]))

const char *mm_gguf_type_name(uint32_t type)
{
	return type < MM_GGUF_NTYPE_IDS ? mm_gguf_types[type].name : NULL;
}

int mm_gguf_type_block(uint32_t type, uint32_t *elems, uint32_t *bytes)
{
	if (!mm_gguf_type_name(type))
		return -EINVAL;
	if (elems)
		*elems = mm_gguf_types[type].blck;
	if (bytes)
		*bytes = mm_gguf_types[type].bytes;
	return 0;
}

int mm_gguf_nbytes(uint32_t type, uint32_t n_dims, const int64_t *ne,
		   uint64_t *bytes)
{
	uint32_t blck, bsz;
	uint64_t nel = 1, b;

	if (mm_gguf_type_block(type, &blck, &bsz) || n_dims > MM_GGUF_MAX_DIMS)
		return -EINVAL;
	for (uint32_t i = 0; i < n_dims; i++) {
		if (ne[i] < 0 || __builtin_mul_overflow(nel, (uint64_t)ne[i], &nel))
			return -EINVAL;
	}
	if (nel > INT64_MAX)
		return -EINVAL;
	if (n_dims > 0 && ne[0] % blck)
		return -EINVAL;
	/* rows are whole blocks, so the total is nel / blck blocks */
	if (__builtin_mul_overflow(nel / blck, (uint64_t)bsz, &b))
		return -EINVAL;
	*bytes = b;
	return 0;
}

static const char *const mm_gguf_vtype_names[MM_GGUF_NTYPES] = {
	"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string",
	"array", "u64", "i64", "f64",
};

static const uint8_t mm_gguf_vtype_size[MM_GGUF_NTYPES] = {
	1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8,
};

const char *mm_gguf_vtype_name(uint32_t type)
{
	return type < MM_GGUF_NTYPES ? mm_gguf_vtype_names[type] : "unknown";
}

/* ---- UTF-8 ----------------------------------------------------------- */

int mm_gguf_utf8_valid(const char *str, size_t len)
{
	const uint8_t *s = (const uint8_t *)str;
	size_t i = 0;

	while (i < len) {
		uint8_t c = s[i];
		uint32_t cp;
		size_t n;

		if (c < 0x80) {
			i++;
			continue;
		} else if (c >= 0xc2 && c <= 0xdf) {
			n = 1;
			cp = c & 0x1f;
		} else if (c >= 0xe0 && c <= 0xef) {
			n = 2;
			cp = c & 0x0f;
		} else if (c >= 0xf0 && c <= 0xf4) {
			n = 3;
			cp = c & 0x07;
		} else {
			return 0;
		}
		if (len - i <= n)
			return 0;
		for (size_t k = 1; k <= n; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return 0;
			cp = (cp << 6) | (s[i + k] & 0x3f);
		}
		if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
		    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return 0;
		i += n + 1;
	}
	return 1;
}

/* ---- string map (open addressing, FNV-1a) --------------------------- */

static uint64_t mm_strmap_hash(const char *s, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < len; i++) {
		h ^= (uint8_t)s[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

void mm_strmap_free(struct mm_strmap *m)
{
	free(m->slot);
	memset(m, 0, sizeof(*m));
}

static int mm_strmap_grow(struct mm_strmap *m)
{
	size_t cap = m->cap ? m->cap * 2 : 64;
	struct mm_strmap_slot *ns;

	ns = calloc(cap, sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	for (size_t i = 0; i < m->cap; i++) {
		size_t j;

		if (!m->slot[i].key)
			continue;
		j = m->slot[i].hash & (cap - 1);
		while (ns[j].key)
			j = (j + 1) & (cap - 1);
		ns[j] = m->slot[i];
	}
	free(m->slot);
	m->slot = ns;
	m->cap = cap;
	return 0;
}

int64_t mm_strmap_get(const struct mm_strmap *m, const char *key, size_t len)
{
	uint64_t h;
	size_t j;

	if (!m->cap)
		return -1;
	h = mm_strmap_hash(key, len);
	for (j = h & (m->cap - 1); m->slot[j].key; j = (j + 1) & (m->cap - 1)) {
		const struct mm_strmap_slot *s = &m->slot[j];

		if (s->hash == h && s->len == len && !memcmp(s->key, key, len))
			return s->val;
	}
	return -1;
}

/* 0, 1 when key already present (val untouched), or -ENOMEM. */
int mm_strmap_put(struct mm_strmap *m, const char *key, size_t len,
		  int64_t val)
{
	uint64_t h = mm_strmap_hash(key, len);
	size_t j;

	if (mm_strmap_get(m, key, len) >= 0)
		return 1;
	if ((m->n + 1) * 2 > m->cap && mm_strmap_grow(m))
		return -ENOMEM;
	j = h & (m->cap - 1);
	while (m->slot[j].key)
		j = (j + 1) & (m->cap - 1);
	m->slot[j].key = key;
	m->slot[j].len = len;
	m->slot[j].hash = h;
	m->slot[j].val = val;
	m->n++;
	return 0;
}

/* ---- parser ----------------------------------------------------------- */

struct mm_gguf_rd {
	const uint8_t *p;
	size_t size;
	size_t pos;
	char *err;
	size_t errlen;
};

/* The reader's failure: the message in its caller's buffer, -EINVAL. */
#define mm_gguf_fail(r, ...) mm_errf(-EINVAL, (r)->err, (r)->errlen, __VA_ARGS__)

static size_t mm_gguf_left(const struct mm_gguf_rd *r)
{
	return r->size - r->pos;
}

/* what: printf-ready description of the field, for the message. */
static int mm_gguf_need(struct mm_gguf_rd *r, uint64_t n, const char *what)
{
	if (n > mm_gguf_left(r))
		return mm_gguf_fail(r, "%s: truncated at offset %zu (needs %" PRIu64
				    " bytes, %zu left)", what, r->pos, n,
				    mm_gguf_left(r));
	return 0;
}

static uint64_t mm_le(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static int mm_gguf_rd_u32(struct mm_gguf_rd *r, uint32_t *v, const char *what)
{
	int ret = mm_gguf_need(r, 4, what);

	if (ret)
		return ret;
	*v = (uint32_t)mm_le(r->p + r->pos, 4);
	r->pos += 4;
	return 0;
}

static int mm_gguf_rd_u64(struct mm_gguf_rd *r, uint64_t *v, const char *what)
{
	int ret = mm_gguf_need(r, 8, what);

	if (ret)
		return ret;
	*v = mm_le(r->p + r->pos, 8);
	r->pos += 8;
	return 0;
}

static int mm_gguf_rd_str(struct mm_gguf_rd *r, const char **s, uint64_t *len,
			  const char *what)
{
	int ret;

	/* set on failure too: gcc -O3 cannot tell that mm_gguf_fail()
	 * returns non-zero, and warned that callers used *s unset */
	*s = NULL;
	ret = mm_gguf_rd_u64(r, len, what);
	if (ret)
		return ret;
	if (*len > mm_gguf_left(r))
		return mm_gguf_fail(r, "%s: string length %" PRIu64
				    " at offset %zu runs past the end of the file (%zu bytes left)",
				    what, *len, r->pos - 8, mm_gguf_left(r));
	*s = (const char *)r->p + r->pos;
	r->pos += *len;
	return 0;
}

static char *mm_gguf_strdup(const char *s, size_t len)
{
	char *d = malloc(len + 1);

	if (d) {
		memcpy(d, s, len);
		d[len] = 0;
	}
	return d;
}

static void mm_gguf_scalar(struct mm_gguf_kv *kv, uint32_t type,
			   const uint8_t *p)
{
	uint64_t u = mm_le(p, mm_gguf_vtype_size[type]);

	switch (type) {
	case MM_GGUF_U8: case MM_GGUF_U16: case MM_GGUF_U32: case MM_GGUF_U64:
		kv->v.u = u;
		break;
	case MM_GGUF_BOOL:
		kv->v.u = u != 0;
		break;
	case MM_GGUF_I8:
		kv->v.i = (int8_t)u;
		break;
	case MM_GGUF_I16:
		kv->v.i = (int16_t)u;
		break;
	case MM_GGUF_I32:
		kv->v.i = (int32_t)u;
		break;
	case MM_GGUF_I64:
		kv->v.i = (int64_t)u;
		break;
	case MM_GGUF_F32: {
		uint32_t b = (uint32_t)u;
		float f;

		memcpy(&f, &b, 4);
		kv->v.f = f;
		break;
	}
	case MM_GGUF_F64:
		memcpy(&kv->v.f, &u, 8);
		break;
	}
}

static int mm_gguf_grow(void **arr, uint64_t *cap, uint64_t need, size_t esz)
{
	uint64_t ncap;
	void *n;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 16;
	while (ncap < need)
		ncap *= 2;
	n = realloc(*arr, ncap * esz);
	if (!n)
		return -ENOMEM;
	memset((char *)n + *cap * esz, 0, (ncap - *cap) * esz);
	*arr = n;
	*cap = ncap;
	return 0;
}

static int mm_gguf_read_kv(struct mm_gguf *g, struct mm_gguf_rd *r,
			   uint64_t idx)
{
	struct mm_gguf_kv *kv = &g->kv[idx];
	const char *key, *s;
	uint64_t klen, n;
	char what[128];
	uint32_t type;
	int ret;

	snprintf(what, sizeof(what), "kv %" PRIu64 " key", idx);
	ret = mm_gguf_rd_str(r, &key, &klen, what);
	if (ret)
		return ret;
	if (!klen)
		return mm_gguf_fail(r, "kv %" PRIu64 ": empty key", idx);
	if (!mm_gguf_utf8_valid(key, klen))
		return mm_gguf_fail(r, "kv %" PRIu64 ": key is not valid UTF-8",
				    idx);
	if (memchr(key, 0, klen))
		return mm_gguf_fail(r, "kv %" PRIu64 ": key contains a NUL byte",
				    idx);
	kv->key = mm_gguf_strdup(key, klen);
	if (!kv->key)
		return -ENOMEM;
	ret = mm_strmap_put(&g->kv_map, kv->key, klen, (int64_t)idx);
	if (ret < 0)
		return ret;
	if (ret)
		return mm_gguf_fail(r, "key '%s': duplicate key", kv->key);

	snprintf(what, sizeof(what), "key '%.64s' type", kv->key);
	ret = mm_gguf_rd_u32(r, &type, what);
	if (ret)
		return ret;
	if (type >= MM_GGUF_NTYPES)
		return mm_gguf_fail(r, "key '%s': unknown value type %u",
				    kv->key, type);
	kv->type = type;
	snprintf(what, sizeof(what), "key '%.64s' value", kv->key);

	if (type == MM_GGUF_STR) {
		ret = mm_gguf_rd_str(r, &s, &n, what);
		if (ret)
			return ret;
		kv->n = n;
		kv->v.str = mm_gguf_strdup(s, n);
		return kv->v.str ? 0 : -ENOMEM;
	}
	if (type != MM_GGUF_ARR) {
		ret = mm_gguf_need(r, mm_gguf_vtype_size[type], what);
		if (ret)
			return ret;
		mm_gguf_scalar(kv, type, r->p + r->pos);
		r->pos += mm_gguf_vtype_size[type];
		return 0;
	}

	ret = mm_gguf_rd_u32(r, &type, what);
	if (ret)
		return ret;
	if (type == MM_GGUF_ARR)
		return mm_gguf_fail(r, "key '%s': nested array (arrays of arrays are not allowed)",
				    kv->key);
	if (type >= MM_GGUF_NTYPES)
		return mm_gguf_fail(r, "key '%s': unknown array element type %u",
				    kv->key, type);
	kv->arr_type = type;
	ret = mm_gguf_rd_u64(r, &n, what);
	if (ret)
		return ret;
	kv->n = n;
	if (type != MM_GGUF_STR) {
		uint64_t esz = mm_gguf_vtype_size[type];

		if (n > mm_gguf_left(r) / esz)
			return mm_gguf_fail(r, "key '%s': array of %" PRIu64
					    " %s elements runs past the end of the file (%zu bytes left)",
					    kv->key, n, mm_gguf_vtype_name(type),
					    mm_gguf_left(r));
		kv->raw = r->p + r->pos;
		r->pos += n * esz;
		return 0;
	}
	/* each string takes at least its 8-byte length */
	if (n > mm_gguf_left(r) / 8)
		return mm_gguf_fail(r, "key '%s': array of %" PRIu64
				    " strings runs past the end of the file (%zu bytes left)",
				    kv->key, n, mm_gguf_left(r));
	/*
	 * Each element's offset and length, read once here: the accessor
	 * returns these, never a length read again from the file (a mapped
	 * file can change between two reads).
	 */
	kv->raw = r->p + r->pos;
	kv->soff = malloc((n ? n : 1) * 2 * sizeof(*kv->soff));
	if (!kv->soff)
		return -ENOMEM;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t *so = (uint64_t *)kv->soff + 2 * i, len;

		if (mm_gguf_left(r) < 8 ||
		    (len = mm_le(r->p + r->pos, 8)) > mm_gguf_left(r) - 8)
			return mm_gguf_fail(r, "key '%s': string element %" PRIu64
					    " at offset %zu runs past the end of the file",
					    kv->key, i, r->pos);
		so[0] = (uint64_t)(r->p + r->pos + 8 - kv->raw);
		so[1] = len;
		r->pos += 8 + len;
	}
	return 0;
}

static int mm_gguf_read_tinfo(struct mm_gguf *g, struct mm_gguf_rd *r,
			      uint64_t idx)
{
	struct mm_gguf_tensor *t = &g->t[idx];
	uint32_t blck, bsz;
	const char *name;
	uint64_t len;
	char what[128];
	int ret;

	snprintf(what, sizeof(what), "tensor %" PRIu64 " name", idx);
	ret = mm_gguf_rd_str(r, &name, &len, what);
	if (ret)
		return ret;
	if (!len)
		return mm_gguf_fail(r, "tensor %" PRIu64 ": empty name", idx);
	if (len >= MM_GGUF_MAX_NAME)
		return mm_gguf_fail(r, "tensor %" PRIu64 " ('%.40s...'): name is %" PRIu64
				    " bytes, the limit is %d", idx, name, len,
				    MM_GGUF_MAX_NAME - 1);
	if (!mm_gguf_utf8_valid(name, len))
		return mm_gguf_fail(r, "tensor %" PRIu64 ": name is not valid UTF-8",
				    idx);
	if (memchr(name, 0, len))
		return mm_gguf_fail(r, "tensor %" PRIu64 ": name contains a NUL byte",
				    idx);
	memcpy(t->name, name, len);
	t->name[len] = 0;
	ret = mm_strmap_put(&g->t_map, t->name, len, (int64_t)idx);
	if (ret < 0)
		return ret;
	if (ret)
		return mm_gguf_fail(r, "tensor '%s': duplicate tensor name",
				    t->name);

	snprintf(what, sizeof(what), "tensor '%s' shape", t->name);
	ret = mm_gguf_rd_u32(r, &t->n_dims, what);
	if (ret)
		return ret;
	if (t->n_dims > MM_GGUF_MAX_DIMS)
		return mm_gguf_fail(r, "tensor '%s': n_dims %u > %d", t->name,
				    t->n_dims, MM_GGUF_MAX_DIMS);
	for (int i = 0; i < MM_GGUF_MAX_DIMS; i++)
		t->ne[i] = 1;
	for (uint32_t i = 0; i < t->n_dims; i++) {
		uint64_t v;

		ret = mm_gguf_rd_u64(r, &v, what);
		if (ret)
			return ret;
		if (v > INT64_MAX)
			return mm_gguf_fail(r, "tensor '%s': ne[%u] = %" PRIu64
					    " is negative as int64", t->name, i, v);
		t->ne[i] = (int64_t)v;
	}
	snprintf(what, sizeof(what), "tensor '%s' type", t->name);
	ret = mm_gguf_rd_u32(r, &t->type, what);
	if (ret)
		return ret;
	if (mm_gguf_type_block(t->type, &blck, &bsz))
		return mm_gguf_fail(r, "tensor '%s': unknown type %u", t->name,
				    t->type);
	if (t->ne[0] % blck)
		return mm_gguf_fail(r, "tensor '%s': ne[0] %" PRId64
				    " is not a multiple of the block size %u of %s",
				    t->name, t->ne[0], blck,
				    mm_gguf_type_name(t->type));
	if (mm_gguf_nbytes(t->type, MM_GGUF_MAX_DIMS, t->ne, &t->size))
		return mm_gguf_fail(r, "tensor '%s': size of %" PRId64 " x %" PRId64
				    " x %" PRId64 " x %" PRId64 " %s overflows",
				    t->name, t->ne[0], t->ne[1], t->ne[2],
				    t->ne[3], mm_gguf_type_name(t->type));
	snprintf(what, sizeof(what), "tensor '%s' offset", t->name);
	return mm_gguf_rd_u64(r, &t->offset, what);
}

static int mm_gguf_parse(struct mm_gguf *g, char *err, size_t errlen)
{
	struct mm_gguf_rd r = {
		.p = g->base, .size = g->size, .err = err, .errlen = errlen,
	};
	uint64_t n_t, n_kv, cap, expect;
	const struct mm_gguf_kv *kv;
	uint32_t magic;
	int ret;

	if (g->size < 4 || mm_le(g->base, 4) != MM_GGUF_MAGIC) {
		magic = g->size >= 4 ? (uint32_t)mm_le(g->base, 4) : 0;
		return mm_gguf_fail(&r, "not a GGUF file (magic %#010x, expected \"GGUF\")",
				    magic);
	}
	r.pos = 4;
	ret = mm_gguf_rd_u32(&r, &g->version, "header version");
	if (ret)
		return ret;
	if (!(g->version & 0xffff) && g->version)
		return mm_gguf_fail(&r, "GGUF version %#x looks big-endian; only little-endian files are supported",
				    g->version);
	if (g->version < 2 || g->version > MM_GGUF_VERSION)
		return mm_gguf_fail(&r, "GGUF version %u is not supported (2 and 3 are)",
				    g->version);
	ret = mm_gguf_rd_u64(&r, &n_t, "header n_tensors");
	if (!ret)
		ret = mm_gguf_rd_u64(&r, &n_kv, "header n_kv");
	if (ret)
		return ret;
	/* smallest KV: 8 (key len) + 1 (key) + 4 (type) + 1 (u8) */
	if (n_kv > mm_gguf_left(&r) / 14)
		return mm_gguf_fail(&r, "header: n_kv %" PRIu64
				    " cannot fit in the %zu bytes left in the file",
				    n_kv, mm_gguf_left(&r));
	/* smallest tensor info: 8 + 1 (name) + 4 (n_dims) + 4 + 8 */
	if (n_t > mm_gguf_left(&r) / 25)
		return mm_gguf_fail(&r, "header: n_tensors %" PRIu64
				    " cannot fit in the %zu bytes left in the file",
				    n_t, mm_gguf_left(&r));

	cap = 0;
	for (uint64_t i = 0; i < n_kv; i++) {
		if (mm_gguf_grow((void **)&g->kv, &cap, i + 1, sizeof(*g->kv)))
			return -ENOMEM;
		g->n_kv = i + 1;
		ret = mm_gguf_read_kv(g, &r, i);
		if (ret)
			return ret;
	}

	g->alignment = MM_GGUF_DEFAULT_ALIGNMENT;
	kv = mm_gguf_find(g, "general.alignment");
	if (kv) {
		if (kv->type != MM_GGUF_U32)
			return mm_gguf_fail(&r, "key 'general.alignment': type %s, expected u32",
					    mm_gguf_vtype_name(kv->type));
		if (!kv->v.u || (kv->v.u & (kv->v.u - 1)))
			return mm_gguf_fail(&r, "key 'general.alignment': %" PRIu64
					    " is not a power of two", kv->v.u);
		g->alignment = (uint32_t)kv->v.u;
	}
	kv = mm_gguf_find(g, "general.architecture");
	if (kv) {
		if (kv->type != MM_GGUF_STR)
			return mm_gguf_fail(&r, "key 'general.architecture': type %s, expected string",
					    mm_gguf_vtype_name(kv->type));
		if (!mm_gguf_utf8_valid(kv->v.str, kv->n) ||
		    strlen(kv->v.str) != kv->n)
			return mm_gguf_fail(&r, "key 'general.architecture': value is not a valid UTF-8 name");
		g->arch = kv->v.str;
	}

	if (n_t > mm_gguf_left(&r) / 25)
		return mm_gguf_fail(&r, "header: n_tensors %" PRIu64
				    " cannot fit in the %zu bytes left after the KVs",
				    n_t, mm_gguf_left(&r));
	cap = 0;
	for (uint64_t i = 0; i < n_t; i++) {
		struct mm_gguf_tensor *old = g->t;

		if (mm_gguf_grow((void **)&g->t, &cap, i + 1, sizeof(*g->t)))
			return -ENOMEM;
		if (old != g->t && i) {
			/* the map borrows the names: point it at the new copy */
			mm_strmap_free(&g->t_map);
			for (uint64_t k = 0; k < i; k++)
				if (mm_strmap_put(&g->t_map, g->t[k].name,
						  strlen(g->t[k].name),
						  (int64_t)k) < 0)
					return -ENOMEM;
		}
		g->n_t = i + 1;
		ret = mm_gguf_read_tinfo(g, &r, i);
		if (ret)
			return ret;
	}

	/* r.pos <= size, alignment <= 2^31: cannot overflow */
	g->data_off = ((uint64_t)r.pos + g->alignment - 1) &
		      ~(uint64_t)(g->alignment - 1);
	expect = 0;
	for (uint64_t i = 0; i < n_t; i++) {
		struct mm_gguf_tensor *t = &g->t[i];
		uint64_t start, end;

		if (i && t->offset < g->t[i - 1].offset + g->t[i - 1].size)
			return mm_gguf_fail(&r, "tensor '%s': offset %" PRIu64
					    " overlaps tensor '%s' (its data ends at %" PRIu64 ")",
					    t->name, t->offset, g->t[i - 1].name,
					    g->t[i - 1].offset + g->t[i - 1].size);
		if (t->offset != expect)
			return mm_gguf_fail(&r, "tensor '%s': offset %" PRIu64
					    " is not the aligned running sum %" PRIu64,
					    t->name, t->offset, expect);
		if (__builtin_add_overflow(g->data_off, t->offset, &start) ||
		    __builtin_add_overflow(start, t->size, &end) ||
		    end > g->size)
			return mm_gguf_fail(&r, "tensor '%s': data at file offset %" PRIu64
					    " + %" PRIu64 " bytes runs past the end of the file (%zu bytes)",
					    t->name, g->data_off + t->offset,
					    t->size, g->size);
		t->data = g->base + start;
		/* end <= size, so padding it cannot overflow 64 bits */
		expect += (t->size + g->alignment - 1) &
			  ~(uint64_t)(g->alignment - 1);
	}
	return 0;
}

static void mm_gguf_free(struct mm_gguf *g)
{
	for (uint64_t i = 0; i < g->n_kv; i++) {
		free((char *)g->kv[i].key);
		if (g->kv[i].type == MM_GGUF_STR)
			free((char *)g->kv[i].v.str);
		free((void *)g->kv[i].soff);
	}
	free(g->kv);
	free(g->t);
	mm_strmap_free(&g->kv_map);
	mm_strmap_free(&g->t_map);
	if (g->mapped)
		munmap((void *)g->base, g->size);
	free(g);
}

static int mm_gguf_start(const void *data, size_t size, int mapped,
			 struct mm_gguf **out, char *err, size_t errlen)
{
	struct mm_gguf *g;
	int ret;

	g = calloc(1, sizeof(*g));
	if (!g) {
		if (mapped)
			munmap((void *)data, size);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	g->base = data;
	g->size = size;
	g->mapped = mapped;
	ret = mm_gguf_parse(g, err, errlen);
	if (ret) {
		if (ret == -ENOMEM && err && errlen)
			snprintf(err, errlen, "out of memory while parsing");
		mm_gguf_free(g);
		return ret;
	}
	*out = g;
	return 0;
}

int mm_gguf_open_mem(const void *data, size_t size, struct mm_gguf **out,
		     char *err, size_t errlen)
{
	if (err && errlen)
		err[0] = 0;
	if (!out || (!data && size)) {
		snprintf(err, errlen, "invalid argument");
		return -EINVAL;
	}
	*out = NULL;
	if (!data)
		data = "";
	return mm_gguf_start(data, size, 0, out, err, errlen);
}

int mm_gguf_open_mapped(void *map, size_t size, struct mm_gguf **out,
			char *err, size_t errlen)
{
	if (err && errlen)
		err[0] = 0;
	if (!map || !size || !out) {
		if (map && size)
			munmap(map, size);
		snprintf(err, errlen, "invalid argument");
		return -EINVAL;
	}
	*out = NULL;
	return mm_gguf_start(map, size, 1, out, err, errlen);
}

int mm_gguf_open(const char *path, struct mm_gguf **out, char *err,
		 size_t errlen)
{
	struct stat st;
	void *p;
	int fd, ret;

	if (err && errlen)
		err[0] = 0;
	if (!path || !out) {
		snprintf(err, errlen, "invalid argument");
		return -EINVAL;
	}
	*out = NULL;
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "cannot open %s: %s", path,
			 strerror(-ret));
		return ret;
	}
	if (fstat(fd, &st)) {
		ret = -errno;
		snprintf(err, errlen, "cannot stat %s: %s", path,
			 strerror(-ret));
		goto close_fd;
	}
	if (!S_ISREG(st.st_mode)) {
		ret = -EINVAL;
		snprintf(err, errlen, "%s is not a regular file", path);
		goto close_fd;
	}
	if (st.st_size < 4) {
		ret = -EINVAL;
		snprintf(err, errlen, "%s is not a GGUF file (%lld bytes)", path,
			 (long long)st.st_size);
		goto close_fd;
	}
	if ((uint64_t)st.st_size > SIZE_MAX) {
		ret = -EFBIG;
		snprintf(err, errlen, "%s is too large to map", path);
		goto close_fd;
	}
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED) {
		ret = -errno;
		snprintf(err, errlen, "cannot map %s: %s", path,
			 strerror(-ret));
		goto close_fd;
	}
	close(fd);
	return mm_gguf_start(p, (size_t)st.st_size, 1, out, err, errlen);

close_fd:
	close(fd);
	return ret;
}

void mm_gguf_close(struct mm_gguf *g)
{
	if (g)
		mm_gguf_free(g);
}

/* ---- accessors -------------------------------------------------------- */

uint32_t mm_gguf_version(const struct mm_gguf *g) { return g->version; }
uint32_t mm_gguf_alignment(const struct mm_gguf *g) { return g->alignment; }
uint64_t mm_gguf_data_offset(const struct mm_gguf *g) { return g->data_off; }
uint64_t mm_gguf_file_size(const struct mm_gguf *g) { return g->size; }
const char *mm_gguf_arch(const struct mm_gguf *g) { return g->arch; }
uint64_t mm_gguf_n_kv(const struct mm_gguf *g) { return g->n_kv; }
uint64_t mm_gguf_n_tensors(const struct mm_gguf *g) { return g->n_t; }

const struct mm_gguf_kv *mm_gguf_kv_at(const struct mm_gguf *g, uint64_t i)
{
	return i < g->n_kv ? &g->kv[i] : NULL;
}

const struct mm_gguf_kv *mm_gguf_find(const struct mm_gguf *g, const char *key)
{
	int64_t i = mm_strmap_get(&g->kv_map, key, strlen(key));

	return i < 0 ? NULL : &g->kv[i];
}

const struct mm_gguf_tensor *mm_gguf_tensor_at(const struct mm_gguf *g,
					       uint64_t i)
{
	return i < g->n_t ? &g->t[i] : NULL;
}

const struct mm_gguf_tensor *mm_gguf_tensor(const struct mm_gguf *g,
					    const char *name)
{
	int64_t i = mm_strmap_get(&g->t_map, name, strlen(name));

	return i < 0 ? NULL : &g->t[i];
}

static int mm_gguf_is_uint(uint32_t t)
{
	return t == MM_GGUF_U8 || t == MM_GGUF_U16 || t == MM_GGUF_U32 ||
	       t == MM_GGUF_U64;
}

static int mm_gguf_is_sint(uint32_t t)
{
	return t == MM_GGUF_I8 || t == MM_GGUF_I16 || t == MM_GGUF_I32 ||
	       t == MM_GGUF_I64;
}

/* Integer scalar as (negative?, magnitude-ish) → fits in [lo, hi]. */
static int mm_gguf_int_in(uint32_t type, uint64_t u, int64_t i, int64_t lo,
			  uint64_t hi, int64_t *out_s, uint64_t *out_u)
{
	if (mm_gguf_is_uint(type)) {
		if (u > hi)
			return -EPROTO;
		*out_u = u;
		*out_s = u > INT64_MAX ? 0 : (int64_t)u;
		return 0;
	}
	if (mm_gguf_is_sint(type)) {
		if (i < lo || (i >= 0 && (uint64_t)i > hi))
			return -EPROTO;
		*out_s = i;
		*out_u = (uint64_t)i;
		return 0;
	}
	return -EPROTO;
}

static const struct mm_gguf_kv *mm_gguf_scalar_kv(const struct mm_gguf *g,
						  const char *key, int *ret)
{
	const struct mm_gguf_kv *kv = mm_gguf_find(g, key);

	*ret = kv ? 0 : -ENOENT;
	return kv;
}

/* The integer value of key, of any integer type, if within [lo, hi]. */
static int mm_gguf_get_int(const struct mm_gguf *g, const char *key,
			   int64_t lo, uint64_t hi, int64_t *s, uint64_t *u)
{
	int ret;
	const struct mm_gguf_kv *kv = mm_gguf_scalar_kv(g, key, &ret);

	return ret ? ret : mm_gguf_int_in(kv->type, kv->v.u, kv->v.i, lo, hi,
					  s, u);
}

int mm_gguf_get_u32(const struct mm_gguf *g, const char *key, uint32_t *v)
{
	uint64_t u;
	int64_t s;
	int ret = mm_gguf_get_int(g, key, 0, UINT32_MAX, &s, &u);

	if (!ret)
		*v = (uint32_t)u;
	return ret;
}

int mm_gguf_get_u64(const struct mm_gguf *g, const char *key, uint64_t *v)
{
	int64_t s;

	return mm_gguf_get_int(g, key, 0, UINT64_MAX, &s, v);
}

int mm_gguf_get_i32(const struct mm_gguf *g, const char *key, int32_t *v)
{
	uint64_t u;
	int64_t s;
	int ret = mm_gguf_get_int(g, key, INT32_MIN, INT32_MAX, &s, &u);

	if (!ret)
		*v = (int32_t)s;
	return ret;
}

int mm_gguf_get_f32(const struct mm_gguf *g, const char *key, float *v)
{
	const struct mm_gguf_kv *kv;
	int ret;

	kv = mm_gguf_scalar_kv(g, key, &ret);
	if (ret)
		return ret;
	if (kv->type != MM_GGUF_F32 && kv->type != MM_GGUF_F64)
		return -EPROTO;
	*v = (float)kv->v.f;
	return 0;
}

int mm_gguf_get_bool(const struct mm_gguf *g, const char *key, int *v)
{
	const struct mm_gguf_kv *kv;
	int ret;

	kv = mm_gguf_scalar_kv(g, key, &ret);
	if (ret)
		return ret;
	if (kv->type != MM_GGUF_BOOL)
		return -EPROTO;
	*v = (int)kv->v.u;
	return 0;
}

int mm_gguf_get_str(const struct mm_gguf *g, const char *key, const char **s,
		    size_t *len)
{
	const struct mm_gguf_kv *kv;
	int ret;

	kv = mm_gguf_scalar_kv(g, key, &ret);
	if (ret)
		return ret;
	if (kv->type != MM_GGUF_STR)
		return -EPROTO;
	*s = kv->v.str;
	if (len)
		*len = kv->n;
	return 0;
}

int mm_gguf_arr(const struct mm_gguf_kv *kv, uint32_t *elem_type, uint64_t *n)
{
	if (!kv || kv->type != MM_GGUF_ARR)
		return -EPROTO;
	if (elem_type)
		*elem_type = kv->arr_type;
	if (n)
		*n = kv->n;
	return 0;
}

int mm_gguf_arr_str(const struct mm_gguf_kv *kv, uint64_t i, const char **s,
		    size_t *len)
{
	if (!kv || kv->type != MM_GGUF_ARR || kv->arr_type != MM_GGUF_STR)
		return -EPROTO;
	if (i >= kv->n)
		return -ERANGE;
	/* the offset and length the parser checked (no second read) */
	*s = (const char *)kv->raw + kv->soff[2 * i];
	*len = (size_t)kv->soff[2 * i + 1];
	return 0;
}

int mm_gguf_arr_f32(const struct mm_gguf_kv *kv, uint64_t i, float *v)
{
	uint64_t u;

	if (!kv || kv->type != MM_GGUF_ARR ||
	    (kv->arr_type != MM_GGUF_F32 && kv->arr_type != MM_GGUF_F64))
		return -EPROTO;
	if (i >= kv->n)
		return -ERANGE;
	if (kv->arr_type == MM_GGUF_F32) {
		uint32_t b = (uint32_t)mm_le(kv->raw + i * 4, 4);

		memcpy(v, &b, 4);
	} else {
		double d;

		u = mm_le(kv->raw + i * 8, 8);
		memcpy(&d, &u, 8);
		*v = (float)d;
	}
	return 0;
}

int mm_gguf_arr_i32(const struct mm_gguf_kv *kv, uint64_t i, int32_t *v)
{
	struct mm_gguf_kv tmp = { 0 };
	uint64_t u;
	int64_t s;
	int ret;

	if (!kv || kv->type != MM_GGUF_ARR ||
	    !(mm_gguf_is_uint(kv->arr_type) || mm_gguf_is_sint(kv->arr_type)))
		return -EPROTO;
	if (i >= kv->n)
		return -ERANGE;
	mm_gguf_scalar(&tmp, kv->arr_type,
		       kv->raw + i * mm_gguf_vtype_size[kv->arr_type]);
	ret = mm_gguf_int_in(kv->arr_type, tmp.v.u, tmp.v.i, INT32_MIN,
			     INT32_MAX, &s, &u);
	if (!ret)
		*v = (int32_t)s;
	return ret;
}

const void *mm_gguf_arr_data(const struct mm_gguf_kv *kv)
{
	if (!kv || kv->type != MM_GGUF_ARR || kv->arr_type == MM_GGUF_STR)
		return NULL;
	return kv->raw;
}

uint32_t mm_gguf__vtype_size(uint32_t type)
{
	return type < MM_GGUF_NTYPES ? mm_gguf_vtype_size[type] : 0;
}


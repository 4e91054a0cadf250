/* SPDX-License-Identifier: MIT */
/*
 * gguf_internal.h - helpers shared by the GGUF reader, writer and
 * tokenizer; not part of the public API.
 */
#ifndef MM_GGUF_INTERNAL_H
#define MM_GGUF_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

/* String → int64 map; keys are borrowed, not copied. */
struct mm_strmap_slot {
	const char *key;
	size_t len;
	uint64_t hash;
	int64_t val;
};

struct mm_strmap {
	struct mm_strmap_slot *slot;
	size_t cap;		/* power of two */
	size_t n;
};

int64_t mm_strmap_get(const struct mm_strmap *m, const char *key, size_t len);
int mm_strmap_put(struct mm_strmap *m, const char *key, size_t len,
		  int64_t val);
void mm_strmap_free(struct mm_strmap *m);

/* Bytes of one scalar of a KV value type (0 for string/array/unknown). */
uint32_t mm_gguf__vtype_size(uint32_t type);

#endif /* MM_GGUF_INTERNAL_H */

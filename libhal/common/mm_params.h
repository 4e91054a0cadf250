/* SPDX-License-Identifier: MIT */
/*
 * mm_params.h - the one rule for libmmhal's size-versioned structs, the
 * kernel's copy_struct_from_user() rule. Every such struct starts with
 * its caller-set size (a u32).
 *
 * In (parameters a caller passes): the size is at least the first
 * version's (@min) and a multiple of 4; bytes past the struct this
 * library knows must be zero (a newer caller that leaves its new fields
 * unset still works); min(size, ours) bytes are taken over the defaults
 * already in @dst, whose size field is then this library's.
 *
 * Out (structs the library fills): the caller's size is at least the
 * size field; min(size, ours) bytes are filled and the caller's size is
 * left as it was.
 */
#ifndef MM_PARAMS_H
#define MM_PARAMS_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Returns 0, or -EINVAL with @err naming @what, the size and the rule. */
static inline int mm_params_in(void *dst, size_t ours, const void *src,
			       size_t min, const char *what, char *err,
			       size_t errlen)
{
	const uint8_t *s = src;
	uint32_t size;

	memcpy(&size, src, sizeof(size));
	if (size < min || size % 4) {
		if (err && errlen)
			snprintf(err, errlen,
				 "%s.size %u: want a multiple of 4 from %zu (set it to sizeof, %zu here)",
				 what, size, min, ours);
		return -EINVAL;
	}
	for (size_t i = ours; i < size; i++)
		if (s[i]) {
			if (err && errlen)
				snprintf(err, errlen,
					 "%s.size %u: byte %zu, past the %zu bytes this library knows, is set",
					 what, size, i, ours);
			return -EINVAL;
		}
	memcpy(dst, src, size < ours ? size : ours);
	size = (uint32_t)ours;
	memcpy(dst, &size, sizeof(size));
	return 0;
}

/*
 * mm_params_in() for a struct with a "reserved" array, which must be zero
 * (checked after the copy, so an older caller's missing words count as
 * zero). Returns 0, or -EINVAL with @err naming @what, the size rule or
 * the first set word ("what.reserved[N] is not zero"). Use it through
 * MM_PARAMS_IN().
 */
static inline int mm_params_in_rsv(void *dst, size_t ours, const void *src,
				   size_t min, size_t rsv_off, size_t rsv_len,
				   size_t rsv_elem, const char *what,
				   char *err, size_t errlen)
{
	const uint8_t *r = (const uint8_t *)dst + rsv_off;
	int ret = mm_params_in(dst, ours, src, min, what, err, errlen);

	if (ret)
		return ret;
	for (size_t i = 0; i < rsv_len; i++)
		if (r[i]) {
			if (err && errlen)
				snprintf(err, errlen,
					 "%s.reserved[%zu] is not zero", what,
					 i / rsv_elem);
			return -EINVAL;
		}
	return 0;
}

#define MM_PARAMS_IN(dst, src, min, what, err, errlen)			\
	mm_params_in_rsv((dst), sizeof(*(dst)), (src), (min),		\
			 offsetof(__typeof__(*(dst)), reserved),		\
			 sizeof((dst)->reserved), sizeof((dst)->reserved[0]), \
			 (what), (err), (errlen))

/* Returns 0, or -EINVAL when the caller's size cannot hold the size. */
static inline int mm_params_out(void *dst, const void *full, size_t ours)
{
	uint32_t size;

	memcpy(&size, dst, sizeof(size));
	if (size < sizeof(size))
		return -EINVAL;
	memcpy(dst, full, size < ours ? size : ours);
	memcpy(dst, &size, sizeof(size));
	return 0;
}

#endif /* MM_PARAMS_H */

/* SPDX-License-Identifier: MIT */
/*
 * mhash.h - the model runtime's file hash: BLAKE2b-256 (libsodium's
 * crypto_generichash with a 32-byte output, no key), streamed, so a file of
 * any size costs one pass and a fixed buffer.
 *
 * The signed manifests of model files (sign.h) and the calibration files
 * bound to a model name the model by this hash.
 *
 * Errors: 0 or a negative errno (-EINVAL bad argument, -EIO a short read,
 * -errno from the OS); err (when errlen > 0) gets one line naming the file
 * and the problem.
 */
#ifndef MM_MHASH_H
#define MM_MHASH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MM_HASH_BYTES	32	/* BLAKE2b-256 */
#define MM_HASH_HEX	(2 * MM_HASH_BYTES + 1)

/* Streaming state (opaque storage for crypto_generichash_state). */
struct mm_hash {
	_Alignas(64) unsigned char st[384];
};

/* 0, or -EIO when libsodium cannot be initialised. */
int mm_hash_init(struct mm_hash *h);
void mm_hash_update(struct mm_hash *h, const void *data, size_t len);
void mm_hash_final(struct mm_hash *h, uint8_t out[MM_HASH_BYTES]);

/* The hash of len bytes at data. */
int mm_hash_mem(const void *data, size_t len, uint8_t out[MM_HASH_BYTES]);

/*
 * The hash of the whole file open on fd, read with pread() from offset 0 to
 * its end (the file offset is left alone); *size (if not NULL) gets the
 * number of bytes hashed.
 */
int mm_hash_fd(int fd, uint8_t out[MM_HASH_BYTES], uint64_t *size, char *err,
	       size_t errlen);
/* The same for the file at path. */
int mm_hash_file(const char *path, uint8_t out[MM_HASH_BYTES], uint64_t *size,
		 char *err, size_t errlen);

/* Lower-case hex of a hash into hex (MM_HASH_HEX bytes, NUL-terminated). */
void mm_hash_hex(const uint8_t h[MM_HASH_BYTES], char hex[MM_HASH_HEX]);
/* Parses 64 hex digits (either case, nothing else): 0 or -EINVAL. */
int mm_hash_parse_hex(const char *hex, uint8_t h[MM_HASH_BYTES]);

#ifdef __cplusplus
}
#endif

#endif /* MM_MHASH_H */

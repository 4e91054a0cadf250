/* SPDX-License-Identifier: MIT */
/*
 * sign_verity.h - the signing side of the fs-verity path (sign.h, format
 * 2): a file's BLAKE2b-256 and its fs-verity digest (SHA-256, 4096-byte
 * Merkle tree blocks, no salt: `fsverity enable`'s defaults) computed in
 * one read pass by Debian's libfsverity (libfsverity_compute_digest()),
 * and the format 2 signature of both. Linked into mmgguf and the tests
 * and benchmark; the loader (libmmhal) only measures the digest with
 * FS_IOC_MEASURE_VERITY and does not need libfsverity.
 */
#ifndef MM_SIGN_VERITY_H
#define MM_SIGN_VERITY_H

#include <stdint.h>

#include "sign.h"

/*
 * path's size, BLAKE2b-256 and fs-verity digest, from one pass over a
 * regular file (opened O_NONBLOCK; the bytes read are both hashes'):
 * 0 or -errno with err naming the file.
 */
int mm_verity_digest_file(const char *path, uint64_t *size,
			  uint8_t hash[MM_HASH_BYTES],
			  uint8_t verity[MM_VERITY_BYTES], char *err,
			  size_t errlen);

/*
 * mm_sign_file() as format 2: the signature also names the file's
 * fs-verity digest, so that a loader may use the file mapped once
 * fs-verity is enabled on it.
 */
int mm_sign_file_verity(const char *path, const uint8_t sk[MM_KEY_SEC_BYTES],
			const char *name, uint64_t version,
			const char *sig_path, struct mm_manifest *out,
			char *err, size_t errlen);

/*
 * `fsverity enable path` with its defaults (SHA-256, 4096-byte blocks, no
 * salt; FS_IOC_ENABLE_VERITY): 0 or -errno (-EOPNOTSUPP or -ENOTTY: the
 * file system has no fs-verity; -EEXIST: already on).
 */
int mm_verity_enable(const char *path);

#endif /* MM_SIGN_VERITY_H */

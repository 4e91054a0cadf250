/* SPDX-License-Identifier: MIT */
/*
 * sign.h - signed model files: Ed25519 (libsodium) over a small manifest
 * that names the file by its BLAKE2b-256 hash (mhash.h), kept in a detached
 * FILE.sig so that the GGUF file itself stays byte for byte what llama.cpp
 * reads. Format and trust model: Documentation/model-store.rst.
 *
 * FILE.sig (little-endian, every field checked on read), format 1
 * (MM_SIG_BYTES, 200 bytes) or format 2 (MM_SIG2_BYTES, 232 bytes):
 *   0   8  magic "MMEDGSIG"
 *   8   4  format: 1, or 2 (with the fs-verity digest)
 *   12  4  manifest bytes (MM_SIG_MANIFEST_BYTES, MM_SIG2_MANIFEST_BYTES)
 *   16  8  key id: the first 8 bytes of BLAKE2b-256 of the public key
 *   24  8  version: monotonic model version (u64)
 *   32  8  file size in bytes
 *   40  32 BLAKE2b-256 of the whole file
 *   72  1  name length (0..63)
 *   73  63 name (printable ASCII, zero padded)
 * format 1:
 *   136 64 Ed25519 signature of bytes 0..135
 * format 2:
 *   136 32 the file's fs-verity digest: SHA-256, 4096-byte Merkle tree
 *          blocks, no salt (what `fsverity digest` prints and
 *          FS_IOC_MEASURE_VERITY returns once `fsverity enable` ran)
 *   168 64 Ed25519 signature of bytes 0..167
 *
 * Key files are one text line each: "mmedge-ed25519-public <64 hex>\n"
 * (the 32-byte public key) and "mmedge-ed25519-secret <128 hex>\n" (the
 * 64-byte libsodium secret key: seed and public key).
 *
 * Errors (0 or a negative errno, err names the file and the failure):
 *   -ENOKEY       no FILE.sig: the file is unsigned
 *   -EINVAL       a malformed signature or key file, a bad argument
 *   -EKEYREJECTED signed by another key, or the signature does not verify
 *   -EBADMSG      the file's size or hash is not the signed one (tampered,
 *                 truncated, or the signature of another file)
 *   -ESTALE       the signed version is below the minimum (a replay)
 *   -EBADMSG      also: the file has fs-verity on and its fs-verity digest
 *                 is not the signed one
 *   -errno        from the OS
 */
#ifndef MM_SIGN_H
#define MM_SIGN_H

#include <stddef.h>
#include <stdint.h>

#include "common/mm_file.h"
#include "mhash.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MM_SIG_MAGIC		"MMEDGSIG"
#define MM_SIG_FORMAT		1u
#define MM_SIG_MANIFEST_BYTES	136u
#define MM_SIG_BYTES		200u
#define MM_SIG_FORMAT2		2u
#define MM_SIG2_MANIFEST_BYTES	168u
#define MM_SIG2_BYTES		232u
#define MM_SIG_MAX_BYTES	MM_SIG2_BYTES
#define MM_VERITY_BYTES		32u	/* SHA-256 */
#define MM_SIG_NAME_MAX		63u
#define MM_KEY_PUB_BYTES	32u
#define MM_KEY_SEC_BYTES	64u
#define MM_KEY_ID_BYTES		8u
#define MM_SIG_SUFFIX		".sig"

/* How a verified file was checked and is used (struct mm_manifest.how). */
enum mm_sig_how {
	MM_SIG_HOW_NONE = 0,	/* not checked (a manifest only) */
	MM_SIG_HOW_COPY,	/* read, BLAKE2b-hashed: a private copy */
	MM_SIG_HOW_VERITY,	/* fs-verity digest measured: the file mapped,
				 * every page checked by the kernel */
	MM_SIG_HOW_HASH,	/* read and hashed in a pass, not kept
				 * (mm_verify_file()) */
};

struct mm_manifest {
	uint32_t format;	/* MM_SIG_FORMAT or MM_SIG_FORMAT2 */
	uint8_t key_id[MM_KEY_ID_BYTES];
	uint64_t version;
	uint64_t size;
	uint8_t hash[MM_HASH_BYTES];
	char name[MM_SIG_NAME_MAX + 1];
	/* format 2: the signed fs-verity digest (SHA-256, 4 KiB, no salt) */
	uint8_t verity[MM_VERITY_BYTES];
	/* not signed: set by the verifying functions (enum mm_sig_how) */
	int how;
};

/* "copy", "fs-verity", "hash" or "none": the name of an mm_sig_how */
const char *mm_sig_how_name(int how);
/* The bytes of a FILE.sig of format fmt (0 for an unknown format). */
size_t mm_sig_bytes(uint32_t fmt);

/*
 * Reads fd until cap bytes are in buf or the file ends (EINTR retried);
 * *n gets the byte count read: 0 or -errno.
 */
int mm_read_upto(int fd, void *buf, size_t cap, size_t *n);
/* mm_write_all(): ../common/mm_file.h. */

/* A new key pair. */
int mm_key_generate(uint8_t pk[MM_KEY_PUB_BYTES], uint8_t sk[MM_KEY_SEC_BYTES]);
void mm_key_id(const uint8_t pk[MM_KEY_PUB_BYTES],
	       uint8_t id[MM_KEY_ID_BYTES]);
/* Writes the key files: secret (mode 0600, O_EXCL) and public (0644). */
int mm_key_write(const char *sec_path, const char *pub_path,
		 const uint8_t pk[MM_KEY_PUB_BYTES],
		 const uint8_t sk[MM_KEY_SEC_BYTES], char *err, size_t errlen);
int mm_key_read_public(const char *path, uint8_t pk[MM_KEY_PUB_BYTES],
		       char *err, size_t errlen);
int mm_key_read_secret(const char *path, uint8_t sk[MM_KEY_SEC_BYTES],
		       char *err, size_t errlen);

/*
 * The manifest and signature as the bytes of a FILE.sig of m->format (0
 * means 1); *n gets their count (MM_SIG_BYTES or MM_SIG2_BYTES).
 */
int mm_sig_encode(const struct mm_manifest *m,
		  const uint8_t sk[MM_KEY_SEC_BYTES],
		  uint8_t out[MM_SIG_MAX_BYTES], size_t *n);
/*
 * Checks the layout of a FILE.sig's bytes (n must be the format's size), then,
 * when pk is not NULL, that it was signed by pk and its version is at least
 * min_version; *m gets the manifest. what names the signature in messages.
 */
int mm_sig_decode(const uint8_t *buf, size_t n, const char *what,
		  const uint8_t *pk, uint64_t min_version,
		  struct mm_manifest *m, char *err, size_t errlen);
/* Reads and checks (as mm_sig_decode) the signature file sig_path. */
int mm_sig_read(const char *sig_path, const uint8_t *pk, uint64_t min_version,
		struct mm_manifest *m, char *err, size_t errlen);

/* path + ".sig" into out (-ENAMETOOLONG when it does not fit). */
int mm_sig_path(const char *path, char *out, size_t outlen);

/*
 * Signs the file at path (its hash and size as read now) as version
 * version named name (NULL: the file's base name, cut to 63 bytes) and
 * writes the signature to sig_path (NULL: path.sig) atomically. Format 1:
 * no fs-verity digest (the signing tool, mmgguf sign, computes one and
 * signs with mm_sign_manifest()).
 */
int mm_sign_file(const char *path, const uint8_t sk[MM_KEY_SEC_BYTES],
		 const char *name, uint64_t version, const char *sig_path,
		 struct mm_manifest *out, char *err, size_t errlen);
/*
 * *m zeroed, then format, version and name set (name NULL: path's base
 * name, cut to 63 bytes; a longer or non-printable name is refused).
 */
int mm_manifest_init(struct mm_manifest *m, const char *path,
		     const char *name, uint64_t version, uint32_t format,
		     char *err, size_t errlen);
/*
 * path opened O_RDONLY | O_NONBLOCK (a FIFO cannot hold the open) and
 * checked to be a regular file: *fd and *size get it. 0 or -errno
 * (-EINVAL: not a regular file), err naming the file.
 */
int mm_open_regular(const char *path, int *fd, uint64_t *size, char *err,
		    size_t errlen);
/*
 * Signs *m as it is (format, version, size, hash, name, verity; the key id
 * is set from sk) for the file at path: the signature goes to sig_path
 * (NULL: path.sig), written atomically. m->key_id gets the key's id.
 */
int mm_sign_manifest(const char *path, struct mm_manifest *m,
		     const uint8_t sk[MM_KEY_SEC_BYTES], const char *sig_path,
		     char *err, size_t errlen);

/*
 * Checks data (size bytes, the content of path) against a manifest that
 * mm_sig_read() accepted: the size first, then the hash.
 */
int mm_sig_match(const struct mm_manifest *m, const char *path,
		 const void *data, size_t size, char *err, size_t errlen);

/*
 * Verifies the file at path against path.sig with the public key pk and a
 * minimum version: the signature first, then the file (opened O_NONBLOCK,
 * a regular file of the signed size): its fs-verity digest when the
 * signature has one and the file has fs-verity on (m->how
 * MM_SIG_HOW_VERITY), else one pass reading and hashing at most the
 * signed size (MM_SIG_HOW_HASH). *m (if not NULL) gets the manifest.
 */
int mm_verify_file(const char *path, const uint8_t pk[MM_KEY_PUB_BYTES],
		   uint64_t min_version, struct mm_manifest *m, char *err,
		   size_t errlen);

struct mm_gguf;

struct mmhal_model;
/*
 * The manifest a model loaded with a trusted key was verified against
 * (mmhal_model_load()): 0, or -ENOKEY for a model loaded without a key.
 */
int mm_model_manifest(const struct mmhal_model *m, struct mm_manifest *out);

#ifndef MM_NO_SIGN
/* mm_sig_load() flags */
#define MM_SIG_LOAD_COPY	1u	/* never the fs-verity path */

/*
 * The file at path, verified against path.sig with pk and min_version,
 * in memory that holds the bytes that were verified whatever happens to
 * the file afterwards (rewritten, truncated). In order: path.sig is read
 * and checked (key, signature, version) before path is opened; path is
 * opened O_NONBLOCK (a FIFO does not block the open); it must be a
 * regular file of exactly the signed size. Then one of two paths
 * (m->how says which):
 *  - fs-verity (MM_SIG_HOW_VERITY): the signature has an fs-verity digest
 *    (format 2) and the file has fs-verity on: its digest
 *    (FS_IOC_MEASURE_VERITY) must be the signed one, and *buf is a
 *    read-only MAP_PRIVATE mapping of the file. The kernel checks every
 *    page read from it against that digest's Merkle tree and refuses to
 *    open the file for writing, so nothing of the file is read at load.
 *  - copy (MM_SIG_HOW_COPY): otherwise (a format 1 signature, a file
 *    system or file without fs-verity, MM_SIG_LOAD_COPY): at most the
 *    signed size is read into anonymous memory (a file that shrinks or
 *    grows meanwhile is refused), hashed and compared.
 * Either way *buf is PROT_READ (it may be mprotect()ed writable again to
 * repack weights in place: the pages written become private) and
 * munmap(*buf, *size) frees it.
 */
int mm_sig_load(const char *path, const uint8_t pk[MM_KEY_PUB_BYTES],
		uint64_t min_version, unsigned int flags,
		struct mm_manifest *m, void **buf, size_t *size, char *err,
		size_t errlen);
/* mm_sig_load() with MM_SIG_LOAD_COPY. */
int mm_sig_load_copy(const char *path, const uint8_t pk[MM_KEY_PUB_BYTES],
		     uint64_t min_version, struct mm_manifest *m, void **buf,
		     size_t *size, char *err, size_t errlen);
/*
 * mm_gguf_open() of a signed file: mm_sig_load(), then the parser reads
 * that copy or verity mapping (the handle owns it).
 */
int mm_gguf_open_verified(const char *path, const uint8_t pk[MM_KEY_PUB_BYTES],
			  uint64_t min_version, struct mm_manifest *m,
			  struct mm_gguf **out, char *err, size_t errlen);
#else
/*
 * A build without libsodium (the arm64 cross-built decoder test): a model
 * with a trusted key is refused, never loaded unchecked.
 */
#include <errno.h>
#include "gguf.h"
static inline int mm_gguf_open_verified(const char *path, const uint8_t *pk,
					uint64_t min_version,
					struct mm_manifest *m,
					struct mm_gguf **out, char *err,
					size_t errlen)
{
	(void)pk; (void)min_version; (void)m; (void)out;
	return mm_errf(-ENOTSUP, err, errlen,
		       "%s: built without signature verification (libsodium)",
		       path);
}
#endif

#ifdef __cplusplus
}
#endif

#endif /* MM_SIGN_H */

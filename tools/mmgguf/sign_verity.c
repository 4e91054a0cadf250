// SPDX-License-Identifier: MIT
/*
 * sign_verity.c - one pass over a file for both hashes a format 2
 * signature names (sign_verity.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <libfsverity.h>
#include <linux/fsverity.h>

#include "gguf.h"
#include "sign_verity.h"

struct pass {
	int fd;
	uint64_t left;		/* bytes libfsverity has still to read */
	struct mm_hash h;
	int err;		/* -errno of a failed or short read */
};

/* libfsverity's read_fn: exactly count bytes, each also BLAKE2b-hashed */
static int pass_read(void *arg, void *buf, size_t count)
{
	struct pass *p = arg;
	size_t n = 0;
	int ret;

	if (count > p->left) {
		p->err = -EIO;
		return p->err;
	}
	ret = mm_read_upto(p->fd, buf, count, &n);
	if (!ret && n != count)
		ret = -EIO;	/* the file shrank */
	if (ret) {
		p->err = ret;
		return ret;
	}
	mm_hash_update(&p->h, buf, count);
	p->left -= count;
	return 0;
}

int mm_verity_digest_file(const char *path, uint64_t *size,
			  uint8_t hash[MM_HASH_BYTES],
			  uint8_t verity[MM_VERITY_BYTES], char *err,
			  size_t errlen)
{
	struct libfsverity_merkle_tree_params tp;
	struct libfsverity_digest *d = NULL;
	struct pass p = { .fd = -1 };
	uint64_t fsize = 0;
	uint8_t extra;
	size_t n;
	int ret;

	if (!path || !size || !hash || !verity)
		return mm_errf(-EINVAL, err, errlen, "sign: invalid argument");
	ret = mm_open_regular(path, &p.fd, &fsize, err, errlen);
	if (ret)
		return ret;
	ret = mm_hash_init(&p.h);
	if (ret) {
		mm_errf(ret, err, errlen, "%s: cannot hash", path);
		goto out;
	}
	p.left = fsize;
	memset(&tp, 0, sizeof(tp));
	tp.version = 1;
	tp.hash_algorithm = FS_VERITY_HASH_ALG_SHA256;
	tp.file_size = fsize;
	tp.block_size = 4096;
	ret = libfsverity_compute_digest(&p, pass_read, &tp, &d);
	if (ret || p.err) {
		ret = p.err ? p.err : ret;
		mm_errf(ret, err, errlen,
			"%s: cannot compute the fs-verity digest: %s%s", path,
			strerror(-ret), p.err == -EIO ?
			" (the file changed size while it was read)" : "");
		goto out;
	}
	if (d->digest_algorithm != FS_VERITY_HASH_ALG_SHA256 ||
	    d->digest_size != MM_VERITY_BYTES) {
		ret = mm_errf(-EIO, err, errlen,
			      "%s: libfsverity gave a %u-byte digest of algorithm %u, not SHA-256",
			      path, d->digest_size, d->digest_algorithm);
		goto out;
	}
	/* the file must end where the pass did */
	ret = mm_read_upto(p.fd, &extra, 1, &n);
	if (!ret && n)
		ret = mm_errf(-EIO, err, errlen,
			      "%s: grew while it was read", path);
	else if (ret)
		mm_errf(ret, err, errlen, "cannot read %s: %s", path,
			strerror(-ret));
	if (ret)
		goto out;
	memcpy(verity, d->digest, MM_VERITY_BYTES);
	mm_hash_final(&p.h, hash);
	*size = fsize;
out:
	free(d);
	close(p.fd);
	return ret;
}

int mm_sign_file_verity(const char *path, const uint8_t sk[MM_KEY_SEC_BYTES],
			const char *name, uint64_t version,
			const char *sig_path, struct mm_manifest *out,
			char *err, size_t errlen)
{
	struct mm_manifest m;
	int ret;

	if (err && errlen)
		err[0] = 0;
	if (!sk)
		return mm_errf(-EINVAL, err, errlen, "sign: invalid argument");
	ret = mm_manifest_init(&m, path, name, version, MM_SIG_FORMAT2, err,
			       errlen);
	ret = ret ? ret : mm_verity_digest_file(path, &m.size, m.hash,
						m.verity, err, errlen);
	ret = ret ? ret : mm_sign_manifest(path, &m, sk, sig_path, err,
					   errlen);
	if (!ret && out)
		*out = m;
	return ret;
}

int mm_verity_enable(const char *path)
{
	struct fsverity_enable_arg a = {
		.version = 1,
		.hash_algorithm = FS_VERITY_HASH_ALG_SHA256,
		.block_size = 4096,
	};
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	if (ioctl(fd, FS_IOC_ENABLE_VERITY, &a))
		ret = -errno;
	close(fd);
	return ret;
}

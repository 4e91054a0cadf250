// SPDX-License-Identifier: MIT
/*
 * mhash.c - streaming BLAKE2b-256 of memory, fds and files (libsodium).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "gguf.h"
#include "mhash.h"

_Static_assert(sizeof(crypto_generichash_state) <=
	       sizeof(((struct mm_hash *)0)->st),
	       "struct mm_hash too small for crypto_generichash_state");

#define MM_HASH_CHUNK	(1u << 20)

int mm_hash_init(struct mm_hash *h)
{
	/* sodium_init() is thread-safe and idempotent (1: already done) */
	if (sodium_init() < 0)
		return -EIO;
	crypto_generichash_init((crypto_generichash_state *)h->st, NULL, 0,
				MM_HASH_BYTES);
	return 0;
}

void mm_hash_update(struct mm_hash *h, const void *data, size_t len)
{
	crypto_generichash_update((crypto_generichash_state *)h->st, data, len);
}

void mm_hash_final(struct mm_hash *h, uint8_t out[MM_HASH_BYTES])
{
	crypto_generichash_final((crypto_generichash_state *)h->st, out,
				 MM_HASH_BYTES);
}

int mm_hash_mem(const void *data, size_t len, uint8_t out[MM_HASH_BYTES])
{
	struct mm_hash h;
	int ret;

	if ((!data && len) || !out)
		return -EINVAL;
	ret = mm_hash_init(&h);
	if (ret)
		return ret;
	mm_hash_update(&h, data, len);
	mm_hash_final(&h, out);
	return 0;
}

int mm_hash_fd(int fd, uint8_t out[MM_HASH_BYTES], uint64_t *size, char *err,
	       size_t errlen)
{
	struct mm_hash h;
	uint64_t off = 0;
	uint8_t *buf;
	int ret;

	if (err && errlen)
		err[0] = 0;
	if (fd < 0 || !out)
		return mm_errf(-EINVAL, err, errlen, "hash: invalid argument");
	ret = mm_hash_init(&h);
	if (ret)
		return mm_errf(ret, err, errlen, "hash: libsodium failed to initialise");
	buf = malloc(MM_HASH_CHUNK);
	if (!buf)
		return mm_errf(-ENOMEM, err, errlen, "hash: out of memory");
	for (;;) {
		ssize_t n = pread(fd, buf, MM_HASH_CHUNK, (off_t)off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			free(buf);
			return mm_errf(ret, err, errlen,
				       "hash: read failed at byte %llu: %s",
				       (unsigned long long)off, strerror(-ret));
		}
		if (n == 0)
			break;
		mm_hash_update(&h, buf, (size_t)n);
		off += (uint64_t)n;
	}
	free(buf);
	mm_hash_final(&h, out);
	if (size)
		*size = off;
	return 0;
}

int mm_hash_file(const char *path, uint8_t out[MM_HASH_BYTES], uint64_t *size,
		 char *err, size_t errlen)
{
	int fd, ret;

	if (err && errlen)
		err[0] = 0;
	if (!path || !out)
		return mm_errf(-EINVAL, err, errlen, "hash: invalid argument");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		return mm_errf(ret, err, errlen, "cannot open %s: %s", path,
			       strerror(-ret));
	}
	ret = mm_hash_fd(fd, out, size, err, errlen);
	close(fd);
	if (ret && err && errlen) {
		char tmp[256];

		snprintf(tmp, sizeof(tmp), "%s", err);
		mm_errf(ret, err, errlen, "%s: %s", path, tmp);
	}
	return ret;
}

void mm_hash_hex(const uint8_t h[MM_HASH_BYTES], char hex[MM_HASH_HEX])
{
	static const char d[] = "0123456789abcdef";

	for (int i = 0; i < MM_HASH_BYTES; i++) {
		hex[2 * i] = d[h[i] >> 4];
		hex[2 * i + 1] = d[h[i] & 15];
	}
	hex[2 * MM_HASH_BYTES] = 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int mm_hash_parse_hex(const char *hex, uint8_t h[MM_HASH_BYTES])
{
	if (!hex || !h || strlen(hex) != 2 * MM_HASH_BYTES)
		return -EINVAL;
	for (int i = 0; i < MM_HASH_BYTES; i++) {
		int a = hexval(hex[2 * i]), b = hexval(hex[2 * i + 1]);

		if (a < 0 || b < 0)
			return -EINVAL;
		h[i] = (uint8_t)(a << 4 | b);
	}
	return 0;
}

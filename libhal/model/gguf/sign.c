// SPDX-License-Identifier: MIT
/*
 * sign.c - Ed25519-signed manifests of model files (detached FILE.sig) and
 * the verified open of a GGUF file. Format: sign.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/fsverity.h>

#include <sodium.h>

#include "common/mm_file.h"
#include "gguf.h"
#include "mhash.h"
#include "sign.h"

_Static_assert(crypto_sign_PUBLICKEYBYTES == MM_KEY_PUB_BYTES, "pk size");
_Static_assert(crypto_sign_SECRETKEYBYTES == MM_KEY_SEC_BYTES, "sk size");
_Static_assert(MM_SIG_MANIFEST_BYTES + crypto_sign_BYTES == MM_SIG_BYTES,
	       "signature file size");
_Static_assert(MM_SIG2_MANIFEST_BYTES + crypto_sign_BYTES == MM_SIG2_BYTES,
	       "signature file size, format 2");
_Static_assert(MM_SIG_MANIFEST_BYTES + MM_VERITY_BYTES ==
	       MM_SIG2_MANIFEST_BYTES, "format 2 manifest");

#define KEY_PUB_TAG	"mmedge-ed25519-public"
#define KEY_SEC_TAG	"mmedge-ed25519-secret"

/* offsets in FILE.sig */
#define OFF_MAGIC	0
#define OFF_FORMAT	8
#define OFF_MANLEN	12
#define OFF_KEYID	16
#define OFF_VERSION	24
#define OFF_SIZE	32
#define OFF_HASH	40
#define OFF_NAMELEN	72
#define OFF_NAME	73
#define OFF_NAME_END	MM_SIG_MANIFEST_BYTES	/* format 1: the signature */
#define OFF_VERITY	MM_SIG_MANIFEST_BYTES	/* format 2 */

const char *mm_sig_how_name(int how)
{
	switch (how) {
	case MM_SIG_HOW_COPY:
		return "copy";
	case MM_SIG_HOW_VERITY:
		return "fs-verity";
	case MM_SIG_HOW_HASH:
		return "hash";
	default:
		return "none";
	}
}

size_t mm_sig_bytes(uint32_t fmt)
{
	return fmt == MM_SIG_FORMAT ? MM_SIG_BYTES :
	       fmt == MM_SIG_FORMAT2 ? MM_SIG2_BYTES : 0;
}

/* the manifest's length in a signature file of format fmt */
static size_t man_bytes(uint32_t fmt)
{
	return fmt == MM_SIG_FORMAT2 ? MM_SIG2_MANIFEST_BYTES :
	       MM_SIG_MANIFEST_BYTES;
}

static void put_u32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put_u64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_u32(const uint8_t *p)
{
	uint32_t v = 0;

	for (int i = 3; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static uint64_t get_u64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static int sodium_ready(char *err, size_t errlen)
{
	if (sodium_init() < 0)
		return mm_errf(-EIO, err, errlen,
			       "libsodium failed to initialise");
	return 0;
}

static void hex_of(const uint8_t *b, size_t n, char *out)
{
	static const char d[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = d[b[i] >> 4];
		out[2 * i + 1] = d[b[i] & 15];
	}
	out[2 * n] = 0;
}

/* ---- keys ------------------------------------------------------------- */

int mm_key_generate(uint8_t pk[MM_KEY_PUB_BYTES], uint8_t sk[MM_KEY_SEC_BYTES])
{
	if (!pk || !sk)
		return -EINVAL;
	if (sodium_init() < 0)
		return -EIO;
	return crypto_sign_keypair(pk, sk) ? -EIO : 0;
}

void mm_key_id(const uint8_t pk[MM_KEY_PUB_BYTES], uint8_t id[MM_KEY_ID_BYTES])
{
	uint8_t h[MM_HASH_BYTES];

	if (mm_hash_mem(pk, MM_KEY_PUB_BYTES, h))
		memset(h, 0, sizeof(h));
	memcpy(id, h, MM_KEY_ID_BYTES);
}

int mm_read_upto(int fd, void *buf, size_t cap, size_t *n)
{
	*n = 0;
	while (*n < cap) {
		ssize_t r = read(fd, (uint8_t *)buf + *n, cap - *n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			break;
		*n += (size_t)r;
	}
	return 0;
}

/* Writes all of buf to a new file at path (O_EXCL), fsynced. */
static int write_new(const char *path, const void *buf, size_t n, mode_t mode,
		     char *err, size_t errlen)
{
	int fd, ret = 0;

	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	if (fd < 0) {
		ret = -errno;
		return mm_errf(ret, err, errlen, "cannot create %s: %s", path,
			       strerror(-ret));
	}
	/* the mode is meant, whatever the umask */
	if (fchmod(fd, mode))
		ret = -errno;
	if (!ret)
		ret = mm_write_all(fd, buf, n);
	if (!ret && fsync(fd))
		ret = -errno;
	if (close(fd) && !ret)
		ret = -errno;
	if (ret) {
		unlink(path);
		return mm_errf(ret, err, errlen, "cannot write %s: %s", path,
			       strerror(-ret));
	}
	return 0;
}

int mm_key_write(const char *sec_path, const char *pub_path,
		 const uint8_t pk[MM_KEY_PUB_BYTES],
		 const uint8_t sk[MM_KEY_SEC_BYTES], char *err, size_t errlen)
{
	char line[sizeof(KEY_SEC_TAG) + 2 * MM_KEY_SEC_BYTES + 2];
	int ret;

	if (!sec_path || !pub_path || !pk || !sk)
		return mm_errf(-EINVAL, err, errlen, "key: invalid argument");
	snprintf(line, sizeof(line), "%s ", KEY_SEC_TAG);
	hex_of(sk, MM_KEY_SEC_BYTES, line + strlen(line));
	strcat(line, "\n");
	ret = write_new(sec_path, line, strlen(line), 0600, err, errlen);
	sodium_memzero(line, sizeof(line));
	if (ret)
		return ret;
	snprintf(line, sizeof(line), "%s ", KEY_PUB_TAG);
	hex_of(pk, MM_KEY_PUB_BYTES, line + strlen(line));
	strcat(line, "\n");
	ret = write_new(pub_path, line, strlen(line), 0644, err, errlen);
	if (ret)
		unlink(sec_path);
	return ret;
}

static int key_read(const char *path, const char *tag, uint8_t *key,
		    size_t keylen, char *err, size_t errlen)
{
	char buf[256];
	size_t tl = strlen(tag), n = 0;
	int fd, ret = 0;

	if (!path || !key)
		return mm_errf(-EINVAL, err, errlen, "key: invalid argument");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		return mm_errf(ret, err, errlen, "cannot open key %s: %s", path,
			       strerror(-ret));
	}
	ret = mm_read_upto(fd, buf, sizeof(buf), &n);
	close(fd);
	if (ret) {
		mm_errf(ret, err, errlen, "cannot read key %s: %s", path,
			strerror(-ret));
		goto out;
	}
	/* "TAG HEX\n" exactly (the newline optional) */
	if (n > 0 && buf[n - 1] == '\n')
		n--;
	if (n != tl + 1 + 2 * keylen || memcmp(buf, tag, tl) ||
	    buf[tl] != ' ') {
		ret = mm_errf(-EINVAL, err, errlen,
			      "%s is not a %s key file (one line: '%s' and %zu hex digits)",
			      path, tag + sizeof("mmedge-ed25519-") - 1, tag,
			      2 * keylen);
		goto out;
	}
	if (sodium_hex2bin(key, keylen, buf + tl + 1, 2 * keylen, NULL, NULL,
			   NULL)) {
		ret = mm_errf(-EINVAL, err, errlen,
			      "%s: the key is not %zu hex digits", path,
			      2 * keylen);
		goto out;
	}
out:
	sodium_memzero(buf, sizeof(buf));
	return ret;
}

int mm_key_read_public(const char *path, uint8_t pk[MM_KEY_PUB_BYTES],
		       char *err, size_t errlen)
{
	int ret = sodium_ready(err, errlen);

	return ret ? ret : key_read(path, KEY_PUB_TAG, pk, MM_KEY_PUB_BYTES,
				    err, errlen);
}

int mm_key_read_secret(const char *path, uint8_t sk[MM_KEY_SEC_BYTES],
		       char *err, size_t errlen)
{
	uint8_t pk[MM_KEY_PUB_BYTES];
	int ret = sodium_ready(err, errlen);

	if (!ret)
		ret = key_read(path, KEY_SEC_TAG, sk, MM_KEY_SEC_BYTES, err,
			       errlen);
	if (ret)
		return ret;
	/* the public half stored in the secret key must be the seed's */
	{
		uint8_t seed[32], sk2[MM_KEY_SEC_BYTES];
		int bad;

		crypto_sign_ed25519_sk_to_seed(seed, sk);
		bad = crypto_sign_seed_keypair(pk, sk2, seed) ||
		      sodium_memcmp(sk2, sk, MM_KEY_SEC_BYTES);
		sodium_memzero(seed, sizeof(seed));
		sodium_memzero(sk2, sizeof(sk2));
		if (bad) {
			sodium_memzero(sk, MM_KEY_SEC_BYTES);
			return mm_errf(-EINVAL, err, errlen,
				       "%s: the secret key's public half does not match its seed",
				       path);
		}
	}
	return 0;
}

/* ---- signature files -------------------------------------------------- */

int mm_sig_path(const char *path, char *out, size_t outlen)
{
	int n;

	if (!path || !out)
		return -EINVAL;
	n = snprintf(out, outlen, "%s%s", path, MM_SIG_SUFFIX);
	return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

static int name_ok(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			return 0;
	return 1;
}

int mm_sig_encode(const struct mm_manifest *m,
		  const uint8_t sk[MM_KEY_SEC_BYTES],
		  uint8_t out[MM_SIG_MAX_BYTES], size_t *n)
{
	uint32_t fmt;
	size_t nl, ml;

	if (!m || !sk || !out || !n)
		return -EINVAL;
	fmt = m->format ? m->format : MM_SIG_FORMAT;
	if (!mm_sig_bytes(fmt))
		return -EINVAL;
	ml = man_bytes(fmt);
	nl = strnlen(m->name, sizeof(m->name));
	if (nl > MM_SIG_NAME_MAX || !name_ok(m->name, nl))
		return -EINVAL;
	if (sodium_init() < 0)
		return -EIO;
	memset(out, 0, MM_SIG_MAX_BYTES);
	memcpy(out + OFF_MAGIC, MM_SIG_MAGIC, 8);
	put_u32(out + OFF_FORMAT, fmt);
	put_u32(out + OFF_MANLEN, (uint32_t)ml);
	memcpy(out + OFF_KEYID, m->key_id, MM_KEY_ID_BYTES);
	put_u64(out + OFF_VERSION, m->version);
	put_u64(out + OFF_SIZE, m->size);
	memcpy(out + OFF_HASH, m->hash, MM_HASH_BYTES);
	out[OFF_NAMELEN] = (uint8_t)nl;
	memcpy(out + OFF_NAME, m->name, nl);
	if (fmt == MM_SIG_FORMAT2)
		memcpy(out + OFF_VERITY, m->verity, MM_VERITY_BYTES);
	*n = ml + crypto_sign_BYTES;
	return crypto_sign_detached(out + ml, NULL, out, ml, sk) ? -EIO : 0;
}

int mm_sig_decode(const uint8_t *buf, size_t n, const char *what,
		  const uint8_t *pk, uint64_t min_version,
		  struct mm_manifest *m, char *err, size_t errlen)
{
	struct mm_manifest man;
	uint32_t fmt, mlen;
	size_t nl, ml;
	int ret;

	if (!what)
		what = "signature";
	if (!buf)
		return mm_errf(-EINVAL, err, errlen, "%s: invalid argument",
			       what);
	if (n < OFF_MANLEN + 4)
		return mm_errf(-EINVAL, err, errlen,
			       "%s: %zu bytes, a signature file is %u or %u",
			       what, n, MM_SIG_BYTES, MM_SIG2_BYTES);
	if (memcmp(buf + OFF_MAGIC, MM_SIG_MAGIC, 8))
		return mm_errf(-EINVAL, err, errlen,
			       "%s: bad magic (not an mmedge signature file)",
			       what);
	fmt = get_u32(buf + OFF_FORMAT);
	if (!mm_sig_bytes(fmt))
		return mm_errf(-EINVAL, err, errlen,
			       "%s: format %u not supported (this library reads %u and %u)",
			       what, fmt, MM_SIG_FORMAT, MM_SIG_FORMAT2);
	if (n != mm_sig_bytes(fmt))
		return mm_errf(-EINVAL, err, errlen,
			       "%s: %zu bytes, a signature file of format %u is %zu",
			       what, n, fmt, mm_sig_bytes(fmt));
	ml = man_bytes(fmt);
	mlen = get_u32(buf + OFF_MANLEN);
	if (mlen != ml)
		return mm_errf(-EINVAL, err, errlen,
			       "%s: manifest of %u bytes, format %u has %zu",
			       what, mlen, fmt, ml);
	memset(&man, 0, sizeof(man));
	man.format = fmt;
	memcpy(man.key_id, buf + OFF_KEYID, MM_KEY_ID_BYTES);
	man.version = get_u64(buf + OFF_VERSION);
	man.size = get_u64(buf + OFF_SIZE);
	memcpy(man.hash, buf + OFF_HASH, MM_HASH_BYTES);
	nl = buf[OFF_NAMELEN];
	if (nl > MM_SIG_NAME_MAX)
		return mm_errf(-EINVAL, err, errlen,
			       "%s: name length %zu is over %u", what, nl,
			       MM_SIG_NAME_MAX);
	if (!name_ok((const char *)buf + OFF_NAME, nl))
		return mm_errf(-EINVAL, err, errlen,
			       "%s: the name is not printable ASCII", what);
	for (size_t i = OFF_NAME + nl; i < OFF_NAME_END; i++)
		if (buf[i])
			return mm_errf(-EINVAL, err, errlen,
				       "%s: non-zero byte %zu after the name",
				       what, i);
	memcpy(man.name, buf + OFF_NAME, nl);
	if (fmt == MM_SIG_FORMAT2)
		memcpy(man.verity, buf + OFF_VERITY, MM_VERITY_BYTES);
	if (pk) {
		uint8_t id[MM_KEY_ID_BYTES];
		char a[2 * MM_KEY_ID_BYTES + 1], b[2 * MM_KEY_ID_BYTES + 1];

		ret = sodium_ready(err, errlen);
		if (ret)
			return ret;
		mm_key_id(pk, id);
		if (memcmp(id, man.key_id, MM_KEY_ID_BYTES)) {
			hex_of(man.key_id, MM_KEY_ID_BYTES, a);
			hex_of(id, MM_KEY_ID_BYTES, b);
			return mm_errf(-EKEYREJECTED, err, errlen,
				       "%s: signed by key %s, not by the trusted key %s",
				       what, a, b);
		}
		if (crypto_sign_verify_detached(buf + ml, buf, ml, pk))
			return mm_errf(-EKEYREJECTED, err, errlen,
				       "%s: the Ed25519 signature does not verify (the signature file was altered)",
				       what);
		/* only a verified version is compared */
		if (man.version < min_version)
			return mm_errf(-ESTALE, err, errlen,
				       "%s: version %llu is below the minimum %llu (an older model replayed)",
				       what, (unsigned long long)man.version,
				       (unsigned long long)min_version);
	}
	if (m)
		*m = man;
	return 0;
}

int mm_sig_read(const char *sig_path, const uint8_t *pk, uint64_t min_version,
		struct mm_manifest *m, char *err, size_t errlen)
{
	uint8_t buf[MM_SIG_MAX_BYTES + 1];
	struct stat st;
	size_t n = 0;
	int fd, ret = 0;

	if (!sig_path)
		return mm_errf(-EINVAL, err, errlen, "signature: invalid argument");
	/* O_NONBLOCK: a FIFO in its place cannot hold the open */
	fd = open(sig_path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		if (ret == -ENOENT)
			return mm_errf(-ENOKEY, err, errlen,
				       "%s: no signature (the file is unsigned)",
				       sig_path);
		return mm_errf(ret, err, errlen, "cannot open %s: %s",
			       sig_path, strerror(-ret));
	}
	if (fstat(fd, &st)) {
		ret = -errno;
		close(fd);
		return mm_errf(ret, err, errlen, "cannot stat %s: %s",
			       sig_path, strerror(-ret));
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return mm_errf(-EINVAL, err, errlen,
			       "%s is not a regular file", sig_path);
	}
	/* one byte more than the longest signature: a longer file is refused */
	ret = mm_read_upto(fd, buf, sizeof(buf), &n);
	close(fd);
	if (ret)
		return mm_errf(ret, err, errlen, "cannot read %s: %s", sig_path,
			       strerror(-ret));
	return mm_sig_decode(buf, n, sig_path, pk, min_version, m, err,
			     errlen);
}

/* path replaced by buf durably (mm_file_put()). */
static int write_atomic(const char *path, const void *buf, size_t n,
			char *err, size_t errlen)
{
	int ret = mm_file_put(path, buf, n, 0644);

	if (ret)
		return mm_errf(ret, err, errlen, "cannot write %s: %s", path,
			       strerror(-ret));
	return 0;
}

int mm_sign_manifest(const char *path, struct mm_manifest *m,
		     const uint8_t sk[MM_KEY_SEC_BYTES], const char *sig_path,
		     char *err, size_t errlen)
{
	uint8_t sig[MM_SIG_MAX_BYTES];
	char sp[4096];
	size_t n;
	int ret;

	if (!path || !m || !sk)
		return mm_errf(-EINVAL, err, errlen, "sign: invalid argument");
	if (!sig_path) {
		if (mm_sig_path(path, sp, sizeof(sp)))
			return mm_errf(-ENAMETOOLONG, err, errlen,
				       "%s: name too long", path);
		sig_path = sp;
	}
	ret = sodium_ready(err, errlen);
	if (ret)
		return ret;
	mm_key_id(sk + 32, m->key_id);
	ret = mm_sig_encode(m, sk, sig, &n);
	if (ret)
		return mm_errf(ret, err, errlen,
			       "sign: cannot sign %s (format %u, name '%s')",
			       path, m->format, m->name);
	return write_atomic(sig_path, sig, n, err, errlen);
}

int mm_manifest_init(struct mm_manifest *m, const char *path,
		     const char *name, uint64_t version, uint32_t format,
		     char *err, size_t errlen)
{
	if (!m || !path)
		return mm_errf(-EINVAL, err, errlen, "sign: invalid argument");
	memset(m, 0, sizeof(*m));
	m->format = format;
	m->version = version;
	if (!name) {
		name = strrchr(path, '/');
		name = name ? name + 1 : path;
	} else if (strlen(name) > MM_SIG_NAME_MAX) {
		return mm_errf(-EINVAL, err, errlen,
			       "sign: name '%s' is over %u bytes", name,
			       MM_SIG_NAME_MAX);
	}
	snprintf(m->name, sizeof(m->name), "%s", name);
	if (!name_ok(m->name, strlen(m->name)))
		return mm_errf(-EINVAL, err, errlen,
			       "sign: name '%s' is not printable ASCII", m->name);
	return 0;
}

int mm_sign_file(const char *path, const uint8_t sk[MM_KEY_SEC_BYTES],
		 const char *name, uint64_t version, const char *sig_path,
		 struct mm_manifest *out, char *err, size_t errlen)
{
	struct mm_manifest m;
	int ret;

	if (err && errlen)
		err[0] = 0;
	if (!sk)
		return mm_errf(-EINVAL, err, errlen, "sign: invalid argument");
	ret = mm_manifest_init(&m, path, name, version, MM_SIG_FORMAT, err,
			       errlen);
	ret = ret ? ret : mm_hash_file(path, m.hash, &m.size, err, errlen);
	ret = ret ? ret : mm_sign_manifest(path, &m, sk, sig_path, err,
					   errlen);
	if (!ret && out)
		*out = m;
	return ret;
}

/* ---- verification ----------------------------------------------------- */

/* path.sig read and checked (mm_sig_read) into *man */
static int sig_of(const char *path, const uint8_t *pk, uint64_t min_version,
		  struct mm_manifest *man, char *err, size_t errlen)
{
	char sp[4096];

	if (mm_sig_path(path, sp, sizeof(sp)))
		return mm_errf(-ENAMETOOLONG, err, errlen, "%s: name too long",
			       path);
	return mm_sig_read(sp, pk, min_version, man, err, errlen);
}

static int size_check(const struct mm_manifest *m, const char *path,
		      uint64_t size, char *err, size_t errlen)
{
	if (size == m->size)
		return 0;
	return mm_errf(-EBADMSG, err, errlen,
		       "%s: %llu bytes, the signature is of %llu (%s)",
		       path, (unsigned long long)size,
		       (unsigned long long)m->size,
		       size < m->size ? "truncated" :
		       "extended or another file");
}

static int hash_check(const struct mm_manifest *m, const char *path,
		      const uint8_t h[MM_HASH_BYTES], char *err, size_t errlen)
{
	char a[MM_HASH_HEX], b[MM_HASH_HEX];

	if (!sodium_memcmp(h, m->hash, MM_HASH_BYTES))
		return 0;
	mm_hash_hex(h, a);
	mm_hash_hex(m->hash, b);
	return mm_errf(-EBADMSG, err, errlen,
		       "%s: BLAKE2b-256 %.16s... is not the signed %.16s... (the file was altered, or the signature is of another file)",
		       path, a, b);
}

int mm_sig_match(const struct mm_manifest *m, const char *path,
		 const void *data, size_t size, char *err, size_t errlen)
{
	uint8_t h[MM_HASH_BYTES];
	int ret;

	if (!m || (!data && size))
		return mm_errf(-EINVAL, err, errlen, "verify: invalid argument");
	if (!path)
		path = "model";
	ret = size_check(m, path, size, err, errlen);
	if (ret)
		return ret;
	ret = mm_hash_mem(data, size, h);
	if (ret)
		return mm_errf(ret, err, errlen, "%s: cannot hash", path);
	return hash_check(m, path, h, err, errlen);
}

/*
 * path opened for a verified read, against its checked manifest: O_NONBLOCK
 * (a FIFO or device node cannot hold the open), a regular file, exactly
 * the signed size. *fd gets the descriptor.
 */
int mm_open_regular(const char *path, int *fd, uint64_t *size, char *err,
		    size_t errlen)
{
	struct stat st;
	int ret;

	*fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (*fd < 0) {
		ret = -errno;
		return mm_errf(ret, err, errlen, "cannot open %s: %s", path,
			       strerror(-ret));
	}
	if (fstat(*fd, &st)) {
		ret = -errno;
		mm_errf(ret, err, errlen, "cannot stat %s: %s", path,
			strerror(-ret));
	} else if (!S_ISREG(st.st_mode)) {
		ret = mm_errf(-EINVAL, err, errlen,
			      "%s is not a regular file (mode %06o)", path,
			      (unsigned int)st.st_mode);
	} else {
		*size = (uint64_t)st.st_size;
		return 0;
	}
	close(*fd);
	*fd = -1;
	return ret;
}

static int open_signed(const char *path, const struct mm_manifest *man,
		       int *fd, char *err, size_t errlen)
{
	uint64_t size = 0;	/* set by mm_open_regular(); gcc -O3 cannot tell */
	int ret;

	if (man->size == 0 || man->size > SIZE_MAX / 2)
		return mm_errf(-EFBIG, err, errlen,
			       "%s: the signature is of %llu bytes, which cannot be loaded",
			       path, (unsigned long long)man->size);
	ret = mm_open_regular(path, fd, &size, err, errlen);
	if (ret)
		return ret;
	ret = size_check(man, path, size, err, errlen);
	if (ret) {
		close(*fd);
		*fd = -1;
	}
	return ret;
}

/*
 * The fs-verity check of the file open on fd against man: 1 when the
 * signature has an fs-verity digest (format 2) and the file has fs-verity
 * on with that digest (the kernel then checks every page read); 0 when
 * either has none (the file system or kernel without fs-verity, or a
 * file it is not enabled on): the caller reads and hashes the file;
 * -EBADMSG when the file's digest is another one.
 */
static int verity_check(int fd, const char *path,
			const struct mm_manifest *man, char *err,
			size_t errlen)
{
	union {
		struct fsverity_digest d;
		uint8_t b[sizeof(struct fsverity_digest) + 64];
	} u;
	char a[2 * 64 + 1], b[2 * MM_VERITY_BYTES + 1];

	if (man->format != MM_SIG_FORMAT2)
		return 0;
	memset(&u, 0, sizeof(u));
	u.d.digest_size = 64;
	if (ioctl(fd, FS_IOC_MEASURE_VERITY, &u.d)) {
		/* ENODATA: not a verity file; ENOTTY, EOPNOTSUPP: the file
		 * system has no fs-verity. The hash path proves the file. */
		return 0;
	}
	if (u.d.digest_size > 64)
		u.d.digest_size = 64;
	hex_of(u.d.digest, u.d.digest_size, a);
	hex_of(man->verity, MM_VERITY_BYTES, b);
	if (u.d.digest_algorithm != FS_VERITY_HASH_ALG_SHA256 ||
	    u.d.digest_size != MM_VERITY_BYTES)
		return mm_errf(-EBADMSG, err, errlen,
			       "%s: fs-verity is on with hash algorithm %u (%u-byte digest), the signature names a SHA-256 digest (enable it with the defaults: fsverity enable FILE)",
			       path, u.d.digest_algorithm, u.d.digest_size);
	if (sodium_memcmp(u.d.digest, man->verity, MM_VERITY_BYTES))
		return mm_errf(-EBADMSG, err, errlen,
			       "%s: fs-verity digest sha256:%.16s... is not the signed sha256:%.16s... (the file was altered before fs-verity was enabled, or the signature is of another file)",
			       path, a, b);
	return 1;
}

/*
 * After the signed size was read from fd: the file must end there (one
 * byte more is a file that grew while it was read).
 */
static int end_check(int fd, const char *path, uint64_t size, char *err,
		     size_t errlen)
{
	uint8_t extra;
	size_t n = 0;
	int ret = mm_read_upto(fd, &extra, 1, &n);

	if (ret)
		return mm_errf(ret, err, errlen, "cannot read %s: %s", path,
			       strerror(-ret));
	if (n)
		return mm_errf(-EBADMSG, err, errlen,
			       "%s: grew past the signed %llu bytes while it was read",
			       path, (unsigned long long)size);
	return 0;
}

int mm_verify_file(const char *path, const uint8_t pk[MM_KEY_PUB_BYTES],
		   uint64_t min_version, struct mm_manifest *m, char *err,
		   size_t errlen)
{
	struct mm_manifest man;
	uint8_t h[MM_HASH_BYTES];
	struct mm_hash hs;
	uint64_t left;
	size_t n;
	void *buf;
	int fd, ret;

	if (err && errlen)
		err[0] = 0;
	if (!path || !pk)
		return mm_errf(-EINVAL, err, errlen, "verify: invalid argument");
	ret = sig_of(path, pk, min_version, &man, err, errlen);
	if (ret)
		return ret;
	ret = open_signed(path, &man, &fd, err, errlen);
	if (ret)
		return ret;
	ret = verity_check(fd, path, &man, err, errlen);
	if (ret) {
		close(fd);
		if (ret < 0)
			return ret;
		man.how = MM_SIG_HOW_VERITY;
		goto done;
	}
	/* one pass, at most the signed size and one byte to see the end */
	buf = malloc(1 << 20);
	ret = buf ? mm_hash_init(&hs) : -ENOMEM;
	if (ret)
		mm_errf(ret, err, errlen, "%s: cannot hash: %s", path,
			strerror(-ret));
	for (left = man.size; !ret && left; left -= n) {
		ret = mm_read_upto(fd, buf, left < (1u << 20) ? left : 1u << 20,
				   &n);
		if (!ret && !n)
			ret = mm_errf(-EBADMSG, err, errlen,
				      "%s: shrank while it was read (signed: %llu bytes)",
				      path, (unsigned long long)man.size);
		else if (!ret)
			mm_hash_update(&hs, buf, n);
		else
			mm_errf(ret, err, errlen, "cannot read %s: %s", path,
				strerror(-ret));
		if (ret)
			break;
	}
	if (!ret)
		ret = end_check(fd, path, man.size, err, errlen);
	free(buf);
	close(fd);
	if (ret)
		return ret;
	mm_hash_final(&hs, h);
	ret = hash_check(&man, path, h, err, errlen);
	if (ret)
		return ret;
	man.how = MM_SIG_HOW_HASH;
done:
	if (m)
		*m = man;
	return 0;
}

int mm_sig_load(const char *path, const uint8_t pk[MM_KEY_PUB_BYTES],
		uint64_t min_version, unsigned int flags,
		struct mm_manifest *m, void **buf, size_t *size, char *err,
		size_t errlen)
{
	struct mm_manifest man;
	size_t n = 0;
	void *p;
	int fd, ret;

	if (err && errlen)
		err[0] = 0;
	if (!path || !pk || !buf || !size || (flags & ~MM_SIG_LOAD_COPY))
		return mm_errf(-EINVAL, err, errlen, "verify: invalid argument");
	*buf = NULL;
	*size = 0;
	/* the signature, its key and version before the file is opened */
	ret = sig_of(path, pk, min_version, &man, err, errlen);
	if (ret)
		return ret;
	ret = open_signed(path, &man, &fd, err, errlen);
	if (ret)
		return ret;
	ret = flags & MM_SIG_LOAD_COPY ? 0 :
		verity_check(fd, path, &man, err, errlen);
	if (ret < 0)
		goto out_fd;
	if (ret > 0) {
		/* pages are checked by the kernel as they are read in; a
		 * private mapping so that repacking copies what it writes */
		p = mmap(NULL, (size_t)man.size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (p == MAP_FAILED) {
			ret = -errno;
			mm_errf(ret, err, errlen, "%s: cannot map %llu bytes: %s",
				path, (unsigned long long)man.size,
				strerror(-ret));
			goto out_fd;
		}
		man.how = MM_SIG_HOW_VERITY;
		goto done;
	}
	p = mmap(NULL, (size_t)man.size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		ret = -errno;
		mm_errf(ret, err, errlen, "%s: cannot allocate %llu bytes: %s",
			path, (unsigned long long)man.size, strerror(-ret));
		goto out_fd;
	}
	/* at most the signed size, and nothing after it */
	ret = mm_read_upto(fd, p, (size_t)man.size, &n);
	if (ret) {
		mm_errf(ret, err, errlen, "cannot read %s: %s", path,
			strerror(-ret));
		goto out_map;
	}
	if (n != man.size) {
		ret = mm_errf(-EBADMSG, err, errlen,
			      "%s: shrank to %zu bytes while it was read (signed: %llu)",
			      path, n, (unsigned long long)man.size);
		goto out_map;
	}
	ret = end_check(fd, path, man.size, err, errlen);
	if (ret)
		goto out_map;
	ret = mm_sig_match(&man, path, p, (size_t)man.size, err, errlen);
	if (ret)
		goto out_map;
	if (mprotect(p, (size_t)man.size, PROT_READ)) {
		ret = -errno;
		mm_errf(ret, err, errlen, "%s: cannot make the copy read-only: %s",
			path, strerror(-ret));
		goto out_map;
	}
	man.how = MM_SIG_HOW_COPY;
done:
	close(fd);
	*buf = p;
	*size = (size_t)man.size;
	if (m)
		*m = man;
	return 0;
out_map:
	munmap(p, (size_t)man.size);
out_fd:
	close(fd);
	return ret;
}

int mm_sig_load_copy(const char *path, const uint8_t pk[MM_KEY_PUB_BYTES],
		     uint64_t min_version, struct mm_manifest *m, void **buf,
		     size_t *size, char *err, size_t errlen)
{
	return mm_sig_load(path, pk, min_version, MM_SIG_LOAD_COPY, m, buf,
			   size, err, errlen);
}

int mm_gguf_open_verified(const char *path, const uint8_t pk[MM_KEY_PUB_BYTES],
			  uint64_t min_version, struct mm_manifest *m,
			  struct mm_gguf **out, char *err, size_t errlen)
{
	struct mm_manifest man;
	size_t size;
	void *p;
	int ret;

	if (!out)
		return mm_errf(-EINVAL, err, errlen, "verify: invalid argument");
	*out = NULL;
	ret = mm_sig_load(path, pk, min_version, 0, &man, &p, &size, err,
			  errlen);
	if (ret)
		return ret;
	/* the handle owns the copy (munmap at close, or now on failure) */
	ret = mm_gguf_open_mapped(p, size, out, err, errlen);
	if (!ret && m)
		*m = man;
	return ret;
}

// SPDX-License-Identifier: MIT
/*
 * sign_test.c - signed model files (sign.c, mhash.c) and the verifying
 * loaders: mmhal_model_load() (mapped and read), mmhal_model_add_tier(),
 * mmhal_mmproj_load() with a trusted key. TAP; last line "RESULT sign
 * <passed> <failed>".
 *
 * Every refusal is checked for its errno and for the message naming the
 * failure, and each tampered file is also loaded without a key, to show
 * that the structure checks alone would have accepted it.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gen.h"
#include "gguf.h"
#include "gguf_internal.h"
#include "mhash.h"
#include "mmhal_model.h"
#include "quant.h"
#include "sign.h"
#include "sign_verity.h"
#include "tests/tap.h"
#include "tfile.h"
#include "tokenizer.h"

static char dir[256];
static uint8_t pk_a[MM_KEY_PUB_BYTES], pk_b[MM_KEY_PUB_BYTES];
static uint8_t sk_a[MM_KEY_SEC_BYTES], sk_b[MM_KEY_SEC_BYTES];

static const char *tpath(const char *name)
{
	static char buf[8][400];
	static int i;

	i = (i + 1) % 8;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", dir, name);
	return buf[i];
}

static int copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY), out, ret = 0;
	ssize_t n;

	if (in < 0)
		return -errno;
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (out < 0) {
		close(in);
		return -errno;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n) {
			ret = -EIO;
			break;
		}
	if (n < 0)
		ret = -errno;
	close(in);
	close(out);
	return ret;
}

static off_t file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) ? -1 : st.st_size;
}

/* A copy of src (and src.sig when sig) as name in the test directory. */
static const char *copy_pair(const char *src, const char *name, int sig)
{
	const char *dst = tpath(name);
	char s1[400], s2[400];

	if (copy_file(src, dst))
		return NULL;
	snprintf(s2, sizeof(s2), "%s.sig", dst);
	unlink(s2);
	if (sig) {
		snprintf(s1, sizeof(s1), "%s.sig", src);
		if (copy_file(s1, s2))
			return NULL;
	}
	return dst;
}

static int load(const char *path, const uint8_t *pk, uint64_t minv,
		int use_mmap, char *err, size_t errlen)
{
	struct mmhal_model_params p = mmhal_model_default_params();
	struct mmhal_model *m = NULL;
	int ret;

	p.n_ctx = 64;
	p.n_threads = 1;
	p.use_mmap = use_mmap;
	p.trusted_key = pk;
	p.min_version = minv;
	ret = mmhal_model_load(path, &p, &m, err, errlen);
	if (!ret && !m)
		ret = -EFAULT;
	mmhal_model_free(m);
	return ret;
}

/* ---- hash -------------------------------------------------------------- */

static void test_hash(void)
{
	/* RFC 7693 BLAKE2b with a 32-byte digest: published vectors */
	static const char *const empty =
		"0e5751c026e543b2e8ab2eb06099daa1d1e5df47778f7787faab45cdf12fe3a8";
	static const char *const abc =
		"bddd813c634239723171ef3fee98579b94964e3bb1cb3e427262c8c068d52319";
	uint8_t h[MM_HASH_BYTES], h2[MM_HASH_BYTES], back[MM_HASH_BYTES];
	char hex[MM_HASH_HEX], err[256];
	size_t n = (3u << 20) + 12345;	/* over the 1 MiB read chunk */
	uint8_t *buf = malloc(n);
	uint64_t size = 0;
	struct mm_hash st;
	int fd, ret;

	mm_hash_mem("", 0, h);
	mm_hash_hex(h, hex);
	tap_ok(!strcmp(hex, empty), "BLAKE2b-256(\"\") = %s", hex);
	mm_hash_mem("abc", 3, h);
	mm_hash_hex(h, hex);
	tap_ok(!strcmp(hex, abc), "BLAKE2b-256(\"abc\") = %s", hex);
	tap_ok(!mm_hash_parse_hex(hex, back) && !memcmp(back, h, sizeof(h)) &&
	       mm_hash_parse_hex("0e57", back) == -EINVAL,
	       "hex round trip; a short hex string refused");
	if (!buf) {
		tap_ok(0, "out of memory");
		return;
	}
	for (size_t i = 0; i < n; i++)
		buf[i] = (uint8_t)(i * 2654435761u >> 13);
	fd = open(tpath("blob"), O_RDWR | O_CREAT | O_TRUNC, 0644);
	ret = fd < 0 || write(fd, buf, n) != (ssize_t)n;
	/* the file offset is at the end: mm_hash_fd reads from 0 with pread */
	if (!ret)
		ret = mm_hash_fd(fd, h, &size, err, sizeof(err));
	if (fd >= 0)
		close(fd);
	/* one-shot vs streamed in odd pieces vs the fd's chunks */
	mm_hash_mem(buf, n, h2);
	tap_ok(!ret && size == n && !memcmp(h, h2, sizeof(h)),
	       "mm_hash_fd over %zu bytes (pread from 0) = the one-shot hash",
	       n);
	mm_hash_init(&st);
	for (size_t off = 0, k = 1; off < n; off += k, k = k * 3 + 1) {
		if (k > n - off)
			k = n - off;
		mm_hash_update(&st, buf + off, k);
	}
	mm_hash_final(&st, h);
	tap_ok(!memcmp(h, h2, sizeof(h)), "streamed in uneven pieces = one-shot");
	ret = mm_hash_file(tpath("missing"), h, NULL, err, sizeof(err));
	tap_ok(ret == -ENOENT && strstr(err, "missing"),
	       "missing file: -ENOENT, \"%s\"", err);
	free(buf);
}

/* ---- keys and the signature file format ------------------------------- */

static void test_keys(void)
{
	uint8_t pk[MM_KEY_PUB_BYTES], sk[MM_KEY_SEC_BYTES];
	char err[256];
	struct stat st;
	int fd, ret;

	ret = mm_key_write(tpath("a.key"), tpath("a.key.pub"), pk_a, sk_a, err,
			   sizeof(err));
	tap_ok(!ret && !stat(tpath("a.key"), &st) &&
	       (st.st_mode & 0777) == 0600, "secret key file mode 0600");
	ret = mm_key_read_public(tpath("a.key.pub"), pk, err, sizeof(err));
	tap_ok(!ret && !memcmp(pk, pk_a, sizeof(pk)), "public key read back");
	ret = mm_key_read_secret(tpath("a.key"), sk, err, sizeof(err));
	tap_ok(!ret && !memcmp(sk, sk_a, sizeof(sk)), "secret key read back");
	ret = mm_key_write(tpath("a.key"), tpath("x.pub"), pk_a, sk_a, err,
			   sizeof(err));
	tap_ok(ret == -EEXIST, "an existing key file is not overwritten: \"%s\"",
	       err);
	ret = mm_key_read_public(tpath("a.key"), pk, err, sizeof(err));
	tap_ok(ret == -EINVAL && strstr(err, "public"),
	       "a secret key file is not a public key: \"%s\"", err);
	/* a secret key whose public half is another key's */
	fd = open(tpath("mixed.key"), O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd >= 0) {
		char line[200], *p = line;

		p += sprintf(p, "mmedge-ed25519-secret ");
		for (int i = 0; i < 32; i++)
			p += sprintf(p, "%02x", sk_a[i]);
		for (int i = 0; i < 32; i++)
			p += sprintf(p, "%02x", pk_b[i]);
		*p++ = '\n';
		if (write(fd, line, (size_t)(p - line)) < 0)
			tap_diag("write mixed.key failed");
		close(fd);
	}
	ret = mm_key_read_secret(tpath("mixed.key"), sk, err, sizeof(err));
	tap_ok(ret == -EINVAL && strstr(err, "does not match"),
	       "secret key with a foreign public half refused: \"%s\"", err);
}

static void test_format(void)
{
	struct mm_manifest m = { .version = 7, .size = 1234 }, out;
	uint8_t sig[MM_SIG_BYTES], bad[MM_SIG_MAX_BYTES + 1];
	uint8_t buf[MM_SIG_MAX_BYTES];
	char err[256];
	size_t n = 0;
	int ret;

	memset(m.hash, 0x5a, sizeof(m.hash));
	mm_key_id(pk_a, m.key_id);
	strcpy(m.name, "smollm2");
	ret = mm_sig_encode(&m, sk_a, buf, &n);
	memcpy(sig, buf, sizeof(sig));
	ret = ret ? ret : n != MM_SIG_BYTES ? -EINVAL :
		mm_sig_decode(sig, sizeof(sig), "t", pk_a, 7, &out, err,
			      sizeof(err));
	tap_ok(!ret && out.version == 7 && out.size == 1234 &&
	       !strcmp(out.name, "smollm2") &&
	       !memcmp(out.hash, m.hash, sizeof(m.hash)),
	       "manifest encode/decode round trip");
	/* layout: little-endian version at 24, name length at 72 */
	tap_ok(sig[24] == 7 && sig[25] == 0 && sig[32] == (1234 & 255) &&
	       sig[33] == 1234 >> 8 && sig[72] == 7 && !memcmp(sig, "MMEDGSIG", 8),
	       "fields at the documented offsets");
	ret = mm_sig_decode(sig, sizeof(sig) - 1, "t", NULL, 0, &out, err,
			    sizeof(err));
	tap_ok(ret == -EINVAL && strstr(err, "199 bytes"), "short: \"%s\"", err);
	memcpy(bad, sig, sizeof(sig));
	bad[MM_SIG_BYTES] = 0;
	ret = mm_sig_decode(bad, MM_SIG_BYTES + 1, "t", NULL, 0, &out, err,
			    sizeof(err));
	tap_ok(ret == -EINVAL && strstr(err, "201 bytes"), "long: \"%s\"", err);
	memcpy(bad, sig, sizeof(sig));
	bad[8] = 3;
	ret = mm_sig_decode(bad, sizeof(sig), "t", NULL, 0, &out, err,
			    sizeof(err));
	tap_ok(ret == -EINVAL && strstr(err, "format 3 not supported"),
	       "format: \"%s\"", err);
	/* a format 1 file claiming format 2 has format 2's size wrong */
	memcpy(bad, sig, sizeof(sig));
	bad[8] = 2;
	ret = mm_sig_decode(bad, sizeof(sig), "t", NULL, 0, &out, err,
			    sizeof(err));
	tap_ok(ret == -EINVAL && strstr(err, "format 2 is 232"),
	       "format 2 with 200 bytes: \"%s\"", err);
	memcpy(bad, sig, sizeof(sig));
	bad[12] = 135;
	ret = mm_sig_decode(bad, sizeof(sig), "t", NULL, 0, &out, err,
			    sizeof(err));
	tap_ok(ret == -EINVAL && strstr(err, "manifest of 135"),
	       "manifest length: \"%s\"", err);
	memcpy(bad, sig, sizeof(sig));
	bad[72] = 64;
	ret = mm_sig_decode(bad, sizeof(sig), "t", NULL, 0, &out, err,
			    sizeof(err));
	tap_ok(ret == -EINVAL && strstr(err, "name length 64"),
	       "name length over 63: \"%s\"", err);
	memcpy(bad, sig, sizeof(sig));
	bad[73 + 7 + 3] = 'x';
	ret = mm_sig_decode(bad, sizeof(sig), "t", NULL, 0, &out, err,
			    sizeof(err));
	tap_ok(ret == -EINVAL && strstr(err, "after the name"),
	       "bytes after the name: \"%s\"", err);
	memcpy(bad, sig, sizeof(sig));
	bad[74] = '\n';
	ret = mm_sig_decode(bad, sizeof(sig), "t", NULL, 0, &out, err,
			    sizeof(err));
	tap_ok(ret == -EINVAL && strstr(err, "printable"),
	       "control byte in the name: \"%s\"", err);
	memcpy(bad, sig, sizeof(sig));
	bad[0] = 'm';
	ret = mm_sig_decode(bad, sizeof(sig), "t", NULL, 0, &out, err,
			    sizeof(err));
	tap_ok(ret == -EINVAL && strstr(err, "magic"), "magic: \"%s\"", err);
	/* every byte of the signed manifest and of the signature matters */
	{
		int rejected = 0;

		for (unsigned i = 16; i < MM_SIG_BYTES; i++) {
			if (i >= 72 && i < 136)	/* name bytes: layout errors */
				continue;
			memcpy(bad, sig, sizeof(sig));
			bad[i] ^= 0x10;
			if (mm_sig_decode(bad, sizeof(sig), "t", pk_a, 0, &out,
					  err, sizeof(err)) == -EKEYREJECTED)
				rejected++;
		}
		tap_ok(rejected == MM_SIG_BYTES - 16 - 64,
		       "a flipped bit in the key id, version, size, hash or signature: rejected (%d of %d)",
		       rejected, MM_SIG_BYTES - 16 - 64);
	}
	/* format 2: the fs-verity digest at 136, signed with the rest */
	m.format = MM_SIG_FORMAT2;
	for (unsigned i = 0; i < MM_VERITY_BYTES; i++)
		m.verity[i] = (uint8_t)(i * 7 + 1);
	ret = mm_sig_encode(&m, sk_a, buf, &n);
	ret = ret ? ret : n != MM_SIG2_BYTES ? -EINVAL :
		mm_sig_decode(buf, n, "t", pk_a, 7, &out, err, sizeof(err));
	tap_ok(!ret && out.format == MM_SIG_FORMAT2 &&
	       !memcmp(out.verity, m.verity, MM_VERITY_BYTES) &&
	       buf[8] == 2 && buf[12] == 168 && buf[136] == 1 &&
	       buf[167] == (uint8_t)(31 * 7 + 1) && !strcmp(out.name, "smollm2"),
	       "format 2 (232 bytes, verity digest at 136) round trip: %s",
	       err);
	{
		int rejected = 0;

		for (unsigned i = 16; i < MM_SIG2_BYTES; i++) {
			if (i >= 72 && i < 136)
				continue;
			memcpy(bad, buf, MM_SIG2_BYTES);
			bad[i] ^= 0x10;
			if (mm_sig_decode(bad, MM_SIG2_BYTES, "t", pk_a, 0,
					  &out, err, sizeof(err)) ==
			    -EKEYREJECTED)
				rejected++;
		}
		tap_ok(rejected == MM_SIG2_BYTES - 16 - 64,
		       "format 2: a flipped bit in any signed field, the verity digest included, or the signature: rejected (%d of %d)",
		       rejected, MM_SIG2_BYTES - 16 - 64);
	}
	ret = mm_sig_decode(buf, MM_SIG_BYTES, "t", NULL, 0, &out, err,
			    sizeof(err));
	tap_ok(ret == -EINVAL && strstr(err, "format 2 is 232"),
	       "format 2 cut to 200 bytes: \"%s\"", err);
}

/* ---- loading ------------------------------------------------------------ */

static void test_load(void)
{
	struct mm_gen_params gp = { .shape = "micro", .tokenizer = "smolvlm",
				    .type = MM_TYPE_F32, .seed = 3 };
	struct mm_manifest man;
	char good[400];
	const char *p;
	struct mm_gguf *g = NULL;
	char err[512], ref[512];
	uint64_t data_off = 0, t_off = 0;
	off_t size;
	int ret;

	snprintf(good, sizeof(good), "%s", tpath("model.gguf"));
	ret = mm_gen_model(&gp, good, err, sizeof(err));
	if (!ret)
		ret = mm_sign_file(good, sk_a, "micro", 5, NULL, &man, err,
				   sizeof(err));
	if (!tap_ok(!ret && man.version == 5 && !strcmp(man.name, "micro"),
		    "generate and sign a model (version 5): %s", err))
		return;
	size = file_size(good);
	if (!mm_gguf_open(good, &g, err, sizeof(err))) {
		const struct mm_gguf_tensor *t = mm_gguf_tensor(g, "blk.0.ffn_down.weight");

		data_off = mm_gguf_data_offset(g);
		t_off = t ? t->offset + t->size / 2 : 0;
		mm_gguf_close(g);
	}
	tap_ok(data_off > 64 && t_off > 0, "tensor data at %llu",
	       (unsigned long long)(data_off + t_off));

	for (int mm = 1; mm >= 0; mm--) {
		ret = load(good, pk_a, 5, mm, err, sizeof(err));
		tap_ok(!ret, "%s: signed file loads with the key (min version 5): %s",
		       mm ? "mapped" : "read", err);
	}
	tap_ok(!mm_verify_file(good, pk_a, 0, &man, err, sizeof(err)) &&
	       man.size == (uint64_t)size, "mm_verify_file: %s", err);

	/* unsigned */
	p = copy_pair(good, "unsigned.gguf", 0);
	ret = p ? load(p, pk_a, 0, 1, err, sizeof(err)) : -EIO;
	tap_ok(ret == -ENOKEY && strstr(err, "unsigned"),
	       "unsigned: -ENOKEY \"%s\"", err);
	tap_ok(p && !load(p, NULL, 0, 1, ref, sizeof(ref)),
	       "  (loads without a key)");

	/* a flipped byte in the weights, in the header */
	for (int w = 0; w < 2; w++) {
		off_t off = w ? (off_t)(data_off + t_off) : 30;

		p = copy_pair(good, w ? "w.gguf" : "h.gguf", 1);
		ret = p ? flip_byte(p, off) : -EIO;
		for (int mm = 1; mm >= 0 && !ret; mm--) {
			int r = load(p, pk_a, 0, mm, err, sizeof(err));

			tap_ok(r == -EBADMSG && strstr(err, "BLAKE2b-256") &&
			       strstr(err, "altered"),
			       "flipped byte %lld in the %s (%s): -EBADMSG \"%s\"",
			       (long long)off, w ? "weights" : "header",
			       mm ? "mapped" : "read", err);
		}
		if (w)
			tap_ok(p && !load(p, NULL, 0, 1, ref, sizeof(ref)),
			       "  (the altered weights load without a key)");
		else if (p)
			tap_diag("  (without a key: %d \"%s\")",
				 load(p, NULL, 0, 1, ref, sizeof(ref)), ref);
	}

	/* a flipped byte in the signature file: manifest, signature */
	for (int s = 0; s < 2; s++) {
		char sp[420];

		p = copy_pair(good, s ? "s2.gguf" : "s1.gguf", 1);
		snprintf(sp, sizeof(sp), "%s.sig", p ? p : "");
		ret = p ? flip_byte(sp, s ? 170 : 26) : -EIO;
		ret = ret ? ret : load(p, pk_a, 0, 1, err, sizeof(err));
		tap_ok(ret == -EKEYREJECTED && strstr(err, "does not verify"),
		       "flipped byte in the signature file's %s: -EKEYREJECTED \"%s\"",
		       s ? "signature" : "version", err);
	}

	/* truncated: the model, the signature */
	p = copy_pair(good, "trunc.gguf", 1);
	ret = p ? truncate(p, size - 1000) : -EIO;
	ret = ret ? ret : load(p, pk_a, 0, 1, err, sizeof(err));
	tap_ok(ret == -EBADMSG && strstr(err, "truncated"),
	       "truncated model: -EBADMSG \"%s\"", err);
	ret = p ? truncate(p, 2) : -EIO;
	ret = ret ? ret : load(p, pk_a, 0, 0, err, sizeof(err));
	tap_ok(ret == -EBADMSG && strstr(err, "truncated"),
	       "truncated to 2 bytes (read): -EBADMSG \"%s\"", err);
	p = copy_pair(good, "tsig.gguf", 1);
	{
		char sp[420];

		snprintf(sp, sizeof(sp), "%s.sig", p ? p : "");
		ret = p ? truncate(sp, 150) : -EIO;
	}
	ret = ret ? ret : load(p, pk_a, 0, 1, err, sizeof(err));
	tap_ok(ret == -EINVAL && strstr(err, "150 bytes"),
	       "truncated signature: -EINVAL \"%s\"", err);

	/* wrong key */
	ret = load(good, pk_b, 0, 1, err, sizeof(err));
	tap_ok(ret == -EKEYREJECTED && strstr(err, "not by the trusted key"),
	       "another key: -EKEYREJECTED \"%s\"", err);

	/* the signature of another file (another seed, same shape) */
	gp.seed = 4;
	p = tpath("other.gguf");
	ret = mm_gen_model(&gp, p, err, sizeof(err));
	if (!ret) {
		char s1[420], s2[420];

		snprintf(s1, sizeof(s1), "%s.sig", good);
		snprintf(s2, sizeof(s2), "%s.sig", p);
		ret = copy_file(s1, s2);
	}
	tap_ok(file_size(p) == size, "  (other.gguf has the same size, %lld)",
	       (long long)size);
	ret = ret ? ret : load(p, pk_a, 0, 1, err, sizeof(err));
	tap_ok(ret == -EBADMSG && strstr(err, "another file"),
	       "signature of another file: -EBADMSG \"%s\"", err);

	/* replay of an older signed version */
	p = copy_pair(good, "old.gguf", 0);
	ret = p ? mm_sign_file(p, sk_a, "micro", 3, NULL, NULL, err,
			       sizeof(err)) : -EIO;
	ret = ret ? ret : load(p, pk_a, 5, 1, err, sizeof(err));
	tap_ok(ret == -ESTALE && strstr(err, "version 3 is below the minimum 5"),
	       "older version 3 under minimum 5: -ESTALE \"%s\"", err);
	ret = p ? load(p, pk_a, 3, 1, err, sizeof(err)) : -EIO;
	tap_ok(!ret, "  version 3 with minimum 3 loads: %s", err);
	/* the version is signed: raising it in the file breaks the signature */
	{
		char sp[420];

		snprintf(sp, sizeof(sp), "%s.sig", p ? p : "");
		ret = p ? flip_byte(sp, 24 + 2) : -EIO;	/* 3 -> 3 + 65536 */
		ret = ret ? ret : load(p, pk_a, 5, 1, err, sizeof(err));
		tap_ok(ret == -EKEYREJECTED,
		       "version raised in the signature file: -EKEYREJECTED \"%s\"",
		       err);
	}
}

static void test_tier_mmproj(void)
{
	struct mmhal_model_params mp = mmhal_model_default_params();
	struct mm_gen_mmproj_params gp = { .vision = "micro",
					   .type = MM_TYPE_F32, .seed = 2 };
	/* the same model at F16: a second precision tier */
	struct mm_gen_params tp = { .shape = "micro", .tokenizer = "smolvlm",
				    .type = MM_TYPE_F16, .seed = 3 };
	struct mmhal_mmproj_params pp = mmhal_mmproj_default_params();
	char model[400], tier[400], proj[400];
	struct mmhal_model *m = NULL;
	struct mmhal_mmproj *pj = NULL;
	char err[512];
	int ret;

	snprintf(model, sizeof(model), "%s", tpath("model.gguf"));
	snprintf(tier, sizeof(tier), "%s", tpath("tier.gguf"));
	snprintf(proj, sizeof(proj), "%s", tpath("proj.gguf"));
	mp.n_ctx = 64;
	mp.n_threads = 1;
	mp.trusted_key = pk_a;
	ret = mmhal_model_load(model, &mp, &m, err, sizeof(err));
	if (!tap_ok(!ret, "model for the tier and mmproj checks: %s", err))
		return;
	ret = mm_gen_model(&tp, tier, err, sizeof(err));
	ret = ret ? ret : mmhal_model_add_tier(m, tier, err, sizeof(err));
	tap_ok(ret == -ENOKEY && mmhal_model_n_tiers(m) == 1,
	       "an unsigned tier file of a keyed model: -ENOKEY \"%s\"", err);
	ret = mm_sign_file(tier, sk_a, NULL, 5, NULL, NULL, err, sizeof(err));
	ret = ret ? ret : mmhal_model_add_tier(m, tier, err, sizeof(err));
	tap_ok(!ret && mmhal_model_n_tiers(m) == 2, "signed tier added: %s",
	       err);

	ret = mm_gen_mmproj(&gp, proj, err, sizeof(err));
	ret = ret ? ret : mmhal_mmproj_load(proj, m, NULL, &pj, err,
					    sizeof(err));
	tap_ok(ret == -ENOKEY && !pj,
	       "unsigned mmproj with a keyed model (the model's key): -ENOKEY \"%s\"",
	       err);
	ret = mm_sign_file(proj, sk_b, NULL, 2, NULL, NULL, err, sizeof(err));
	ret = ret ? ret : mmhal_mmproj_load(proj, m, NULL, &pj, err,
					    sizeof(err));
	tap_ok(ret == -EKEYREJECTED && !pj,
	       "mmproj signed by another key: -EKEYREJECTED \"%s\"", err);
	pp.trusted_key = pk_b;
	pp.min_version = 3;
	ret = mmhal_mmproj_load(proj, m, &pp, &pj, err, sizeof(err));
	tap_ok(ret == -ESTALE && !pj,
	       "mmproj's own key, version 2 under minimum 3: -ESTALE \"%s\"",
	       err);
	pp.min_version = 2;
	ret = mmhal_mmproj_load(proj, m, &pp, &pj, err, sizeof(err));
	tap_ok(!ret && pj, "mmproj with its own key loads: %s", err);
	mmhal_mmproj_free(pj);
	pj = NULL;
	ret = mm_sign_file(proj, sk_a, NULL, 2, NULL, NULL, err, sizeof(err));
	ret = ret ? ret : flip_byte(proj, file_size(proj) - 5);
	ret = ret ? ret : mmhal_mmproj_load(proj, m, NULL, &pj, err,
					    sizeof(err));
	tap_ok(ret == -EBADMSG && !pj && strstr(err, "altered"),
	       "altered mmproj (the model's key): -EBADMSG \"%s\"", err);
	mmhal_mmproj_free(pj);
	mmhal_model_free(m);
}

/* ---- the bytes used are the bytes verified ---------------------------- */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The file (and its start offset) of tensor name in path. */
static int tensor_span(const char *path, const char *name, off_t *off,
		       size_t *size)
{
	struct mm_gguf *g = NULL;
	const struct mm_gguf_tensor *t;
	char err[256];

	if (mm_gguf_open(path, &g, err, sizeof(err)))
		return -EINVAL;
	t = mm_gguf_tensor(g, name);
	if (t) {
		*off = (off_t)(mm_gguf_data_offset(g) + t->offset);
		*size = (size_t)t->size;
	}
	mm_gguf_close(g);
	return t ? 0 : -ENOENT;
}

/* pwrite n bytes of value c at off of path (the same inode, in place) */
static int scribble(const char *path, off_t off, size_t n, int c)
{
	uint8_t buf[4096];
	int fd = open(path, O_WRONLY), ret = 0;

	if (fd < 0)
		return -errno;
	memset(buf, c, sizeof(buf));
	while (n && !ret) {
		size_t k = n < sizeof(buf) ? n : sizeof(buf);

		if (pwrite(fd, buf, k, off) != (ssize_t)k)
			ret = -EIO;
		off += (off_t)k;
		n -= k;
	}
	close(fd);
	return ret;
}

/* The first token's logits of the model at path (loaded with pk). */
static int first_logits(struct mmhal_model *m, float *out, int n)
{
	int32_t tok = 1;
	const float *lg;

	mmhal_model_reset(m);
	if (mmhal_model_eval(m, &tok, 1, NULL))
		return -EIO;
	lg = mmhal_model_logits(m);
	if (!lg)
		return -EIO;
	memcpy(out, lg, (size_t)n * sizeof(float));
	return 0;
}

/*
 * Runs fn(arg) in a child (so that a signal or a block is a failed test,
 * not a dead test program): its exit status, -ETIMEDOUT when it ran past
 * secs (then killed), or 128 + the signal that ended it.
 */
static int in_child(int (*fn)(const void *), const void *arg, double secs)
{
	double t0 = now_s();
	pid_t pid;
	int st;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (!pid)
		_exit(fn(arg));
	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid)
			break;
		if (r < 0)
			return -errno;
		if (now_s() - t0 > secs) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return -ETIMEDOUT;
		}
		usleep(10000);
	}
	return WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
}

/* child: load the signed file, truncate it to 0, decode: 0 when it ran */
static int truncate_child(const void *arg)
{
	const char *path = arg;
	struct mmhal_model_params p = mmhal_model_default_params();
	struct mmhal_model *m = NULL;
	char err[512];
	float lg[8];

	p.n_ctx = 64;
	p.n_threads = 1;
	p.trusted_key = pk_a;
	p.repack = 0;
	if (mmhal_model_load(path, &p, &m, err, sizeof(err)))
		return 3;
	if (truncate(path, 0))
		return 4;
	if (first_logits(m, lg, 8))
		return 5;
	mmhal_model_free(m);
	return 0;
}

struct load_arg {
	const char *path;
	int use_mmap;
};

/* child: a verified load of a->path; 0 when it was refused with -EINVAL */
static int refuse_child(const void *arg)
{
	const struct load_arg *a = arg;
	char err[512];
	int ret = load(a->path, pk_a, 0, a->use_mmap, err, sizeof(err));

	printf("#   (child: %d \"%s\")\n", ret, err);
	fflush(stdout);
	return ret == -EINVAL && strstr(err, "not a regular file") ? 0 : 1;
}

static void test_copy(void)
{
	struct mm_gen_params gp = { .shape = "micro", .tokenizer = "gpt2",
				    .type = MM_TYPE_F32, .seed = 5 };
	struct mmhal_model_params mp = mmhal_model_default_params();
	struct mmhal_model *m = NULL;
	float ref[300], got[300];
	char good[400], err[512], s1[420];
	const char *p;
	off_t off = 0;
	size_t tsize = 0;
	double t0, dt;
	int ret, fd;

	snprintf(good, sizeof(good), "%s", tpath("copy.gguf"));
	ret = mm_gen_model(&gp, good, err, sizeof(err));
	if (!ret)
		ret = mm_sign_file(good, sk_a, "copy", 1, NULL, NULL, err,
				   sizeof(err));
	if (!tap_ok(!ret && !tensor_span(good, "token_embd.weight", &off,
					 &tsize) && tsize >= 128,
		    "model for the copy checks: %s", err))
		return;
	mp.n_ctx = 64;
	mp.n_threads = 1;
	mp.trusted_key = pk_a;
	for (int mm = 1; mm >= 0; mm--) {
		mp.use_mmap = mm;
		p = copy_pair(good, "victim.gguf", 1);
		ret = p ? mmhal_model_load(p, &mp, &m, err, sizeof(err)) : -EIO;
		if (!tap_ok(!ret && !first_logits(m, ref, 300),
			    "%s: signed model loads and decodes: %s",
			    mm ? "mapped" : "read", err)) {
			mmhal_model_free(m);
			m = NULL;
			continue;
		}
		/* the whole embedding table rewritten in the file */
		ret = scribble(p, off, tsize, 0x7f);
		tap_ok(!ret && !first_logits(m, got, 300) &&
		       !memcmp(ref, got, sizeof(ref)),
		       "%s: token_embd.weight rewritten in the file after the verified load: the logits do not change",
		       mm ? "mapped" : "read");
		mmhal_model_free(m);
		m = NULL;
		ret = load(p, pk_a, 0, mm, err, sizeof(err));
		tap_ok(ret == -EBADMSG && strstr(err, "BLAKE2b"),
		       "  and the rewritten file is refused at the next load: \"%s\"",
		       err);
	}

	/* truncated under a running process: no SIGBUS */
	p = copy_pair(good, "trunc.gguf", 1);
	ret = p ? in_child(truncate_child, p, 60) : -EIO;
	tap_ok(ret == 0, "file truncated to 0 bytes after the verified load: the model still decodes (child: %d%s)",
	       ret, ret == 128 + SIGBUS ? ", SIGBUS" : "");

	/* a FIFO at the model path, a valid signature beside it */
	for (int mm = 1; mm >= 0; mm--) {
		struct load_arg a = { tpath("fifo.gguf"), mm };

		unlink(a.path);
		snprintf(s1, sizeof(s1), "%s.sig", good);
		ret = mkfifo(a.path, 0644) ? -errno : 0;
		if (!ret)
			ret = copy_file(s1, tpath("fifo.gguf.sig"));
		t0 = now_s();
		ret = ret ? ret : in_child(refuse_child, &a, 10);
		dt = now_s() - t0;
		tap_ok(ret == 0, "%s: a FIFO at the model path is refused at once (%.2f s, child: %d%s)",
		       mm ? "mapped" : "read", dt, ret,
		       ret == -ETIMEDOUT ? ", blocked in open" : "");
	}
	/* a FIFO as the signature */
	{
		struct load_arg a = { tpath("fifosig.gguf"), 1 };
		int r2;

		copy_file(good, a.path);
		snprintf(s1, sizeof(s1), "%s.sig", a.path);
		unlink(s1);
		r2 = mkfifo(s1, 0644) ? -errno : 0;
		ret = r2 ? r2 : in_child(refuse_child, &a, 10);
		tap_ok(ret == 0, "a FIFO as the signature is refused at once (child: %d%s)",
		       ret, ret == -ETIMEDOUT ? ", blocked in open" : "");
	}
	/* a symbolic link to /dev/zero with a valid signature beside it */
	p = tpath("zero.gguf");
	unlink(p);
	snprintf(s1, sizeof(s1), "%s.sig", good);
	ret = symlink("/dev/zero", p) ? -errno : 0;
	if (!ret)
		ret = copy_file(s1, tpath("zero.gguf.sig"));
	if (!ret) {
		struct load_arg a = { p, 0 };

		ret = in_child(refuse_child, &a, 10);
	}
	tap_ok(ret == 0, "a link to /dev/zero with a signature: refused as not a regular file (child: %d)",
	       ret);

	/* an unsigned 2 GiB file read whole (use_mmap 0): refused first */
	p = tpath("big.gguf");
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ret = fd < 0 ? -errno : ftruncate(fd, (off_t)2 << 30) ? -errno : 0;
	if (fd >= 0)
		close(fd);
	t0 = now_s();
	ret = ret ? ret : load(p, pk_a, 0, 0, err, sizeof(err));
	dt = now_s() - t0;
	tap_ok(ret == -ENOKEY && dt < 1.0,
	       "unsigned 2 GiB file, read (use_mmap 0): -ENOKEY in %.3f s, before a byte is read: \"%s\"",
	       dt, err);
	unlink(p);
}

/* ---- concurrent writers ------------------------------------------------ */

struct writer {
	const char *path;
	off_t off;		/* where to write */
	uint8_t a[8], b[8];	/* the two values written in turn */
	size_t n;
	volatile int stop;
	long writes;
};

static void *writer_fn(void *arg)
{
	struct writer *w = arg;
	int fd = open(w->path, O_WRONLY);

	if (fd < 0)
		return NULL;
	while (!w->stop) {
		if (pwrite(fd, w->a, w->n, w->off) != (ssize_t)w->n ||
		    pwrite(fd, w->b, w->n, w->off) != (ssize_t)w->n)
			break;
		w->writes++;
	}
	/* the file as it was */
	if (pwrite(fd, w->a, w->n, w->off) != (ssize_t)w->n)
		w->writes = -1;
	close(fd);
	return NULL;
}

/* offset in buf (n bytes) of the value of the string key key */
static off_t str_value_off(const uint8_t *buf, size_t n, const char *key)
{
	size_t kl = strlen(key);

	for (size_t i = 8; i + kl + 12 <= n; i++)
		if (!memcmp(buf + i, key, kl) &&
		    buf[i - 8] == kl && buf[i + kl] == MM_GGUF_STR)
			return (off_t)(i + kl + 4 + 8);
	return -1;
}

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/*
 * A GGUF holding only a vocabulary of n tokens ("llama" model), token
 * n / 2 long (len bytes); *len_off gets the file offset of its length.
 */
static int vocab_file(const char *path, uint64_t n, size_t len,
		      off_t *len_off, char *err, size_t errlen)
{
	struct mm_gguf_writer *w = mm_gguf_writer_new(32);
	char **strs = calloc(n, sizeof(*strs));
	int ret = w && strs ? 0 : -ENOMEM;

	for (uint64_t i = 0; !ret && i < n; i++) {
		strs[i] = malloc(i == n / 2 ? len + 1 : 24);
		if (!strs[i]) {
			ret = -ENOMEM;
			break;
		}
		if (i == n / 2) {
			memset(strs[i], 'x', len);
			strs[i][len] = 0;
		} else {
			snprintf(strs[i], 24, "tok%llu", (unsigned long long)i);
		}
	}
	if (!ret)
		ret = mm_gguf_w_str(w, "tokenizer.ggml.model", "llama");
	if (!ret)
		ret = mm_gguf_w_arr_str(w, "tokenizer.ggml.tokens",
					(const char *const *)strs, NULL, n);
	if (!ret)
		ret = mm_gguf_w_write_file(w, path, err, errlen);
	if (!ret) {
		/* the 8-byte length before the long token */
		int fd = open(path, O_RDONLY);
		off_t fs = file_size(path);
		uint8_t *buf = fs > 0 ? malloc((size_t)fs) : NULL;
		size_t got = 0;

		ret = fd < 0 || !buf ? -EIO :
			mm_read_upto(fd, buf, (size_t)fs, &got);
		*len_off = -1;
		for (size_t i = 8; !ret && i + len <= got; i++)
			if (buf[i] == 'x' && le64(buf + i - 8) == len) {
				*len_off = (off_t)(i - 8);
				break;
			}
		if (fd >= 0)
			close(fd);
		free(buf);
		if (!ret && *len_off < 0)
			ret = -ENOENT;
	}
	for (uint64_t i = 0; strs && i < n; i++)
		free(strs[i]);
	free(strs);
	mm_gguf_writer_free(w);
	return ret;
}

static void test_race(void)
{
	struct mm_gen_params gp = { .shape = "micro", .tokenizer = "gpt2",
				    .type = MM_TYPE_F32, .seed = 9 };
	struct writer w = { 0 };
	struct mm_gguf *g = NULL;
	struct mm_tok *tok = NULL;
	char path[400], err[512];
	void *buf = NULL;
	size_t size = 0, len;
	pthread_t th;
	long loads = 0, ok = 0, refused = 0, other = 0, wrong = 0;
	uint64_t big = 4000;
	double t0;
	off_t voff;
	int ret;

	/* (1) mapped, unsigned: the tokenizer under a writer that changes
	 * a token's length between 4000 and 0 */
	snprintf(path, sizeof(path), "%s", tpath("vocab_race.gguf"));
	ret = vocab_file(path, 20000, (size_t)big, &w.off, err, sizeof(err));
	if (!tap_ok(!ret, "a vocabulary of 20000 tokens, one of %llu bytes at offset %lld: %s",
		    (unsigned long long)big, (long long)w.off, err))
		return;
	for (int i = 0; i < 8; i++)
		w.a[i] = (uint8_t)(big >> (8 * i));
	memset(w.b, 0, 8);
	w.n = 8;
	w.path = path;
	pthread_create(&th, NULL, writer_fn, &w);
	t0 = now_s();
	while (now_s() - t0 < 4 && loads < 4000) {
		loads++;
		if (mm_gguf_open(path, &g, err, sizeof(err))) {
			refused++;
			continue;
		}
		ret = mm_tok_load(g, &tok, err, sizeof(err));
		if (!ret)
			ok++;
		else
			other++;
		mm_tok_free(tok);
		tok = NULL;
		mm_gguf_close(g);
		g = NULL;
	}
	w.stop = 1;
	pthread_join(th, NULL);
	tap_ok(w.writes > 0 && ok + other > 0,
	       "%ld mapped tokenizer loads under a writer of a token's length (%ld writes): %ld loaded, %ld refused by the parser, %ld by the tokenizer, no memory error (ASan)",
	       loads, w.writes, ok, refused, other);

	/* (2) verified: a value rewritten between the hash and the parse */
	snprintf(path, sizeof(path), "%s", tpath("race.gguf"));
	ret = mm_gen_model_mem(&gp, &buf, &size, err, sizeof(err));
	if (!ret) {
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		ret = fd < 0 || write(fd, buf, size) != (ssize_t)size ? -EIO : 0;
		if (fd >= 0)
			close(fd);
	}
	voff = ret ? -1 : str_value_off(buf, size, "general.name");
	ret = voff > 0 ? mm_sign_file(path, sk_a, "race", 1, NULL, NULL, err,
				      sizeof(err)) : -ENOENT;
	if (!tap_ok(!ret, "signed model, general.name at %lld: %s",
		    (long long)voff, err)) {
		free(buf);
		return;
	}
	memcpy(w.a, (const uint8_t *)buf + voff, 1);
	w.b[0] = w.a[0] ^ 0x20;	/* another letter's case */
	w.n = 1;
	w.off = voff;
	w.stop = 0;
	w.writes = 0;
	loads = ok = refused = other = 0;
	pthread_create(&th, NULL, writer_fn, &w);
	t0 = now_s();
	while (now_s() - t0 < 3 && loads < 2000) {
		const char *name;

		loads++;
		ret = mm_gguf_open_verified(path, pk_a, 0, NULL, &g, err,
					    sizeof(err));
		if (ret == -EBADMSG) {
			refused++;
			continue;
		}
		if (ret) {
			other++;
			continue;
		}
		ok++;
		if (mm_gguf_get_str(g, "general.name", &name, &len) ||
		    (uint8_t)name[0] != w.a[0])
			wrong++;
		mm_gguf_close(g);
		g = NULL;
	}
	w.stop = 1;
	pthread_join(th, NULL);
	tap_ok(wrong == 0 && other == 0 && w.writes > 0,
	       "%ld verified loads under a writer of general.name (%ld writes): %ld loaded, every one with the signed value (%ld not), %ld refused (-EBADMSG), %ld other errors",
	       loads, w.writes, ok, wrong, refused, other);
	free(buf);
}

/* ---- shapes ------------------------------------------------------------ */

/* in, with tokenizer.ggml.tokens (and scores, token_type) one longer or
 * shorter (delta +1 / -1), written to out */
static int vocab_resize(const char *in, const char *out, int delta,
			char *err, size_t errlen)
{
	struct mm_gguf *g = NULL;
	struct mm_gguf_writer *w = NULL;
	const char **strs = NULL;
	size_t *lens = NULL;
	int ret;

	ret = mm_gguf_open(in, &g, err, errlen);
	if (ret)
		return ret;
	w = mm_gguf_writer_new(mm_gguf_alignment(g));
	ret = w ? 0 : -ENOMEM;
	for (uint64_t i = 0; !ret && i < mm_gguf_n_kv(g); i++) {
		const struct mm_gguf_kv *kv = mm_gguf_kv_at(g, i);
		uint64_t n = kv->n, k = delta > 0 ? n + 1 : n - 1;

		if (!strcmp(kv->key, "general.alignment"))
			continue;
		if (!strcmp(kv->key, "tokenizer.ggml.tokens")) {
			strs = calloc(k, sizeof(*strs));
			lens = calloc(k, sizeof(*lens));
			if (!strs || !lens) {
				ret = -ENOMEM;
				break;
			}
			for (uint64_t j = 0; j < k && j < n; j++)
				mm_gguf_arr_str(kv, j, &strs[j], &lens[j]);
			if (k > n) {
				strs[n] = "<extra_token>";
				lens[n] = strlen(strs[n]);
			}
			ret = mm_gguf_w_arr_str(w, kv->key, strs, lens, k);
		} else if (!strcmp(kv->key, "tokenizer.ggml.scores") ||
			   !strcmp(kv->key, "tokenizer.ggml.token_type")) {
			uint32_t esz = mm_gguf__vtype_size(kv->arr_type);
			uint8_t *d = calloc(k, esz);

			if (!d) {
				ret = -ENOMEM;
				break;
			}
			memcpy(d, mm_gguf_arr_data(kv), (k < n ? k : n) * esz);
			if (k > n && kv->arr_type == MM_GGUF_I32)
				d[n * esz] = 1;	/* normal */
			ret = mm_gguf_w_arr(w, kv->key, kv->arr_type, d, k);
			free(d);
		} else {
			ret = mm_gguf_w_kv(w, kv);
		}
	}
	for (uint64_t i = 0; !ret && i < mm_gguf_n_tensors(g); i++) {
		const struct mm_gguf_tensor *t = mm_gguf_tensor_at(g, i);

		ret = mm_gguf_w_tensor(w, t->name, t->type, t->n_dims, t->ne,
				       t->data);
	}
	if (!ret)
		ret = mm_gguf_w_write_file(w, out, err, errlen);
	free(strs);
	free(lens);
	mm_gguf_writer_free(w);
	mm_gguf_close(g);
	return ret;
}

static void test_vocab_shape(void)
{
	struct mm_gen_params gp = { .shape = "micro", .tokenizer = "gpt2",
				    .type = MM_TYPE_F32, .seed = 11 };
	char good[400], bad[400], err[512];
	int ret;

	snprintf(good, sizeof(good), "%s", tpath("vocab.gguf"));
	ret = mm_gen_model(&gp, good, err, sizeof(err));
	ret = ret ? ret : load(good, NULL, 0, 1, err, sizeof(err));
	if (!tap_ok(!ret, "model for the vocabulary shape checks loads: %s",
		    err))
		return;
	for (int d = 1; d >= -1; d -= 2) {
		snprintf(bad, sizeof(bad), "%s", tpath(d > 0 ? "vocab_more.gguf" :
						       "vocab_less.gguf"));
		ret = vocab_resize(good, bad, d, err, sizeof(err));
		if (!tap_ok(!ret, "a copy with one token %s: %s",
			    d > 0 ? "more" : "fewer", err))
			continue;
		ret = load(bad, NULL, 0, 1, err, sizeof(err));
		tap_ok(ret == -EINVAL && strstr(err, "token_embd.weight") &&
		       strstr(err, "rows"),
		       "one token %s than token_embd.weight has rows: refused \"%s\"",
		       d > 0 ? "more" : "fewer", err);
	}
}

/* ---- the fs-verity path ------------------------------------------------- */

/* a model loaded with the key: its mmhal_model_verification() */
static int load_verify(const char *path, struct mmhal_model_verify *v,
		       char *err, size_t errlen)
{
	struct mmhal_model_params p = mmhal_model_default_params();
	struct mmhal_model *m = NULL;
	int ret;

	p.n_ctx = 64;
	p.n_threads = 1;
	p.trusted_key = pk_a;
	memset(v, 0, sizeof(*v));
	v->size = sizeof(*v);
	ret = mmhal_model_load(path, &p, &m, err, errlen);
	if (!ret)
		ret = mmhal_model_verification(m, v);
	mmhal_model_free(m);
	return ret;
}

static void test_verity(void)
{
	struct mm_gen_params gp = { .shape = "micro", .tokenizer = "smolvlm",
				    .type = MM_TYPE_F32, .seed = 5 };
	struct mmhal_model_verify v;
	struct mm_manifest man, m1;
	char path[400], hex[2 * MM_VERITY_BYTES + 1], cmd[1024], line[256];
	char err[512];
	const char *p;
	FILE *f;
	int ret, fd;

	snprintf(path, sizeof(path), "%s", tpath("verity.gguf"));
	ret = mm_gen_model(&gp, path, err, sizeof(err));
	if (!ret)
		ret = mm_sign_file_verity(path, sk_a, "vmicro", 4, NULL, &man,
					  err, sizeof(err));
	if (!tap_ok(!ret && man.format == MM_SIG_FORMAT2 &&
		    file_size(tpath("verity.gguf.sig")) == MM_SIG2_BYTES,
		    "sign with the fs-verity digest (format 2, 232 bytes): %s",
		    err))
		return;
	for (unsigned i = 0; i < MM_VERITY_BYTES; i++)
		snprintf(hex + 2 * i, 3, "%02x", man.verity[i]);
	/* the digest is fsverity-utils' (the defaults of fsverity enable) */
	snprintf(cmd, sizeof(cmd), "fsverity digest '%s' 2>/dev/null", path);
	f = access("/usr/bin/fsverity", X_OK) ? NULL : popen(cmd, "r");
	if (!f) {
		tap_skip("fsverity (fsverity-utils) not installed: digest not compared");
	} else {
		line[0] = 0;
		if (!fgets(line, sizeof(line), f))
			line[0] = 0;
		pclose(f);
		tap_ok(!strncmp(line, "sha256:", 7) &&
		       !strncmp(line + 7, hex, 64),
		       "the signed digest is `fsverity digest`'s: %.71s", line);
	}
	/* the BLAKE2b of the same pass is the file's */
	ret = mm_sign_file(path, sk_a, "vmicro", 4, tpath("v1.sig"), &m1, err,
			   sizeof(err));
	tap_ok(!ret && m1.format == MM_SIG_FORMAT && m1.size == man.size &&
	       !memcmp(m1.hash, man.hash, MM_HASH_BYTES),
	       "one pass gives the same BLAKE2b-256 and size as mm_sign_file: %s",
	       err);

	/* where the file system has no fs-verity (or it is off): the copy */
	ret = load_verify(path, &v, err, sizeof(err));
	tap_ok(!ret && v.how == MMHAL_VERIFY_COPY &&
	       !strcmp(v.how_name, "copy") && !strcmp(v.verity, hex) &&
	       v.version == 4 && !strcmp(v.name, "vmicro"),
	       "format 2, fs-verity off: loaded through the copy (%s), the signed digest reported: %s",
	       v.how_name, err);
	tap_ok(!mm_verify_file(path, pk_a, 0, &man, err, sizeof(err)) &&
	       man.how == MM_SIG_HOW_HASH, "mm_verify_file hashes it: %s",
	       err);
	/* format 1 (older signatures) still loads, through the copy */
	p = copy_pair(path, "v1.gguf", 0);
	ret = p && !copy_file(tpath("v1.sig"), tpath("v1.gguf.sig")) ?
		load_verify(p, &v, err, sizeof(err)) : -EIO;
	tap_ok(!ret && v.how == MMHAL_VERIFY_COPY && !v.verity[0],
	       "format 1 signature: the copy, no verity digest: %s", err);
	/* an altered format 2 file on the copy path: the hash refuses it */
	p = copy_pair(path, "valt.gguf", 1);
	ret = p ? scribble(p, file_size(p) - 100, 4, 0x55) : -EIO;
	ret = ret ? ret : load_verify(p, &v, err, sizeof(err));
	tap_ok(ret == -EBADMSG && strstr(err, "BLAKE2b"),
	       "format 2, altered, fs-verity off: refused by the hash: \"%s\"",
	       err);

	/* fs-verity itself, where TMPDIR's file system has it */
	p = copy_pair(path, "von.gguf", 1);
	ret = p ? mm_verity_enable(p) : -EIO;
	if (ret == -EOPNOTSUPP || ret == -ENOTTY) {
		tap_skip("fs-verity: %s has none (%s); the VM test (tools/tests/verity_guest.sh) covers it",
			 dir, strerror(-ret));
		return;
	}
	if (!tap_ok(!ret, "fsverity enable: %s", strerror(-ret)))
		return;
	ret = load_verify(p, &v, err, sizeof(err));
	tap_ok(!ret && v.how == MMHAL_VERIFY_VERITY,
	       "fs-verity on, signed digest: loaded mapped (%s): %s",
	       v.how_name, err);
	fd = open(p, O_WRONLY | O_CLOEXEC);
	tap_ok(fd < 0, "a verity file cannot be opened for writing: %s",
	       fd < 0 ? strerror(errno) : "it was");
	if (fd >= 0)
		close(fd);
	p = copy_pair(path, "voff.gguf", 1);
	ret = p ? scribble(p, file_size(p) - 100, 4, 0x55) : -EIO;
	ret = ret ? ret : mm_verity_enable(p);
	ret = ret ? ret : load_verify(p, &v, err, sizeof(err));
	tap_ok(ret == -EBADMSG && strstr(err, "fs-verity digest"),
	       "altered, then fs-verity enabled: refused: \"%s\"", err);
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(dir, sizeof(dir), "%s/sign_test.XXXXXX", tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	if (mm_key_generate(pk_a, sk_a) || mm_key_generate(pk_b, sk_b)) {
		tap_ok(0, "key generation");
		return tap_done("sign");
	}
	test_hash();
	test_keys();
	test_format();
	test_load();
	test_verity();
	test_tier_mmproj();
	test_copy();
	test_race();
	test_vocab_shape();
	if (!tap_fail) {
		char cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd))
			tap_diag("could not remove %s", dir);
	} else {
		tap_diag("files kept in %s", dir);
	}
	return tap_done("sign");
}

// SPDX-License-Identifier: MIT
/*
 * mmgguf_sign.c - mmgguf keygen, sign and verify (sign.h; the format and
 * the trust model: Documentation/model-store.rst).
 *
 *   mmgguf keygen --out KEY        KEY (secret, mode 0600) and KEY.pub
 *   mmgguf sign --key KEY [--version N] [--name NAME] [--no-verity] FILE
 *              writes FILE.sig (version default 1, name default FILE's
 *              base name): format 2, which also signs the file's fs-verity
 *              digest (libfsverity), or with --no-verity format 1
 *              (readers before format 2)
 *   mmgguf verify --pub KEY.pub [--min-version N] FILE
 *
 * Exit status: 0 success, 1 the operation failed (message on stderr),
 * 2 usage error.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "mmgguf_sign.h"
#include "sign.h"
#include "sign_verity.h"

void mmgguf_sign_usage(FILE *f)
{
	fprintf(f,
		"       mmgguf keygen --out KEY\n"
		"       mmgguf sign --key KEY [--version N] [--name NAME] [--no-verity] FILE\n"
		"       mmgguf verify --pub KEY.pub [--min-version N] FILE\n");
}

static int usage(const char *cmd)
{
	fprintf(stderr, "usage: mmgguf %s ...\n", cmd);
	mmgguf_sign_usage(stderr);
	return 2;
}

/* *v gets the value of option opt of command cmd, or the error is said */
static int parse_u64(const char *cmd, const char *opt, const char *s,
		     uint64_t *v)
{
	char *end;

	errno = 0;
	if (*s >= '0' && *s <= '9') {
		*v = strtoull(s, &end, 10);
		if (!errno && !*end)
			return 0;
	}
	fprintf(stderr, "mmgguf %s: %s '%s' is not an unsigned integer\n",
		cmd, opt, s);
	return -EINVAL;
}

static void print_id(const uint8_t id[MM_KEY_ID_BYTES])
{
	for (unsigned i = 0; i < MM_KEY_ID_BYTES; i++)
		printf("%02x", id[i]);
}

static int keygen(int argc, char **argv)
{
	uint8_t pk[MM_KEY_PUB_BYTES], sk[MM_KEY_SEC_BYTES];
	uint8_t id[MM_KEY_ID_BYTES];
	char pub[4096], err[512];
	const char *out = NULL;
	int ret;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--out") && i + 1 < argc)
			out = argv[++i];
		else
			return usage(argv[0]);
	}
	if (!out)
		return usage(argv[0]);
	if (snprintf(pub, sizeof(pub), "%s.pub", out) >= (int)sizeof(pub)) {
		fprintf(stderr, "mmgguf keygen: %s: name too long\n", out);
		return 1;
	}
	ret = mm_key_generate(pk, sk);
	if (ret)
		snprintf(err, sizeof(err), "cannot generate a key pair");
	else
		ret = mm_key_write(out, pub, pk, sk, err, sizeof(err));
	memset(sk, 0, sizeof(sk));
	if (ret) {
		fprintf(stderr, "mmgguf keygen: %s\n", err);
		return 1;
	}
	mm_key_id(pk, id);
	printf("key ");
	print_id(id);
	printf(": secret %s, public %s\n", out, pub);
	return 0;
}

static void print_manifest(const char *what, const char *path,
			   const struct mm_manifest *m)
{
	char hex[MM_HASH_HEX];

	mm_hash_hex(m->hash, hex);
	printf("%s %s: name '%s' version %" PRIu64 " size %" PRIu64
	       " blake2b-256 %s", what, path, m->name, m->version,
	       m->size, hex);
	if (m->format == MM_SIG_FORMAT2) {
		printf(" fs-verity sha256:");
		for (unsigned i = 0; i < MM_VERITY_BYTES; i++)
			printf("%02x", m->verity[i]);
	}
	printf(" key ");
	print_id(m->key_id);
	if (m->how != MM_SIG_HOW_NONE)
		printf(" checked-by %s", m->how == MM_SIG_HOW_VERITY ?
		       "fs-verity" : "hash");
	printf("\n");
}

static int sign(int argc, char **argv)
{
	const char *key = NULL, *name = NULL, *file = NULL;
	uint8_t sk[MM_KEY_SEC_BYTES];
	struct mm_manifest m;
	uint64_t version = 1;
	int verity = 1;
	char err[512];
	int ret;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--no-verity"))
			verity = 0;
		else if (!strcmp(a, "--key") && i + 1 < argc)
			key = argv[++i];
		else if (!strcmp(a, "--name") && i + 1 < argc)
			name = argv[++i];
		else if (!strcmp(a, "--version") && i + 1 < argc) {
			if (parse_u64("sign", a, argv[++i], &version))
				return 2;
		} else if (a[0] != '-' && !file)
			file = a;
		else
			return usage(argv[0]);
	}
	if (!key || !file)
		return usage(argv[0]);
	ret = mm_key_read_secret(key, sk, err, sizeof(err));
	if (!ret && verity)
		ret = mm_sign_file_verity(file, sk, name, version, NULL, &m,
					  err, sizeof(err));
	else if (!ret)
		ret = mm_sign_file(file, sk, name, version, NULL, &m, err,
				   sizeof(err));
	memset(sk, 0, sizeof(sk));
	if (ret) {
		fprintf(stderr, "mmgguf sign: %s\n", err);
		return 1;
	}
	print_manifest("signed", file, &m);
	return 0;
}

static int verify(int argc, char **argv)
{
	const char *pub = NULL, *file = NULL;
	uint8_t pk[MM_KEY_PUB_BYTES];
	struct mm_manifest m;
	uint64_t minv = 0;
	char err[512];
	int ret;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--pub") && i + 1 < argc)
			pub = argv[++i];
		else if (!strcmp(a, "--min-version") && i + 1 < argc) {
			if (parse_u64("verify", a, argv[++i], &minv))
				return 2;
		} else if (a[0] != '-' && !file)
			file = a;
		else
			return usage(argv[0]);
	}
	if (!pub || !file)
		return usage(argv[0]);
	ret = mm_key_read_public(pub, pk, err, sizeof(err));
	if (!ret)
		ret = mm_verify_file(file, pk, minv, &m, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "mmgguf verify: %s\n", err);
		return 1;
	}
	print_manifest("verified", file, &m);
	return 0;
}

int mmgguf_sign_main(int argc, char **argv)
{
	if (!strcmp(argv[0], "keygen"))
		return keygen(argc, argv);
	if (!strcmp(argv[0], "sign"))
		return sign(argc, argv);
	return verify(argc, argv);
}

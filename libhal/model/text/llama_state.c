// SPDX-License-Identifier: MIT
/*
 * llama_state.c - a session's cache saved to and loaded from a file
 * (mmhal_ctx_state_save() / _load()).
 *
 * Layout (host byte order, which the header's magic and version check
 * only on hosts of the same order: the file is a cache, not an exchange
 * format):
 *
 *   struct mm_state_hdr     magic "MMHALKV\0", version, the model's
 *                           shape and tensor-table hash, the cache's
 *                           kv_type/n_ctx/kv_rs, n_past, has_logits,
 *                           payload bytes and its FNV-1a 64 checksum
 *   int32_t  tokens[n_past]
 *   uint64_t ids[n_past]
 *   float    logits[n_vocab]           if has_logits
 *   K rows, then V rows: per layer, per KV head, n_past rows of kv_rs
 *
 * Load reads and checks the whole file (every header field, the size,
 * the checksum, each token and id) before it changes the session.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/mm_file.h"
#include "llama_int.h"

#define MM_STATE_MAGIC "MMHALKV"
#define MM_STATE_VERSION 1u

struct mm_state_hdr {
	char magic[8];
	uint32_t version;
	uint32_t hdr_bytes;	/* sizeof(struct mm_state_hdr) */
	uint32_t n_layer, n_embd, n_head_kv, head_dim, n_vocab;
	uint32_t kv_type, n_ctx, kv_rs;
	uint32_t n_past, has_logits;
	uint64_t model_hash;	/* mm_state_model_hash() */
	uint64_t payload_bytes;
	uint64_t checksum;	/* FNV-1a 64 of the payload */
};

#define MM_FNV_INIT 0xcbf29ce484222325ull

static uint64_t mm_fnv(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

/* The model's tensor table (names, types, shapes, offsets) and file size:
 * what tells one model file from another of the same shape and type. */
static uint64_t mm_state_model_hash(const struct mmhal_model *m)
{
	uint64_t h = MM_FNV_INIT, n = mm_gguf_n_tensors(m->g);

	h = mm_fnv(h, &m->info.file_bytes, sizeof(m->info.file_bytes));
	for (uint64_t i = 0; i < n; i++) {
		const struct mm_gguf_tensor *t = mm_gguf_tensor_at(m->g, i);

		h = mm_fnv(h, t->name, strlen(t->name));
		h = mm_fnv(h, &t->type, sizeof(t->type));
		h = mm_fnv(h, &t->n_dims, sizeof(t->n_dims));
		h = mm_fnv(h, t->ne, sizeof(t->ne));
		h = mm_fnv(h, &t->offset, sizeof(t->offset));
	}
	return h;
}

static uint64_t mm_state_payload(const struct mmhal_ctx *c, int n_past,
				 int has_logits)
{
	const struct mm_llama_hp *hp = &c->model->hp;

	return (uint64_t)n_past * (sizeof(int32_t) + sizeof(uint64_t)) +
	       (has_logits ? (uint64_t)hp->n_vocab * sizeof(float) : 0) +
	       2ull * hp->n_layer * hp->n_head_kv * n_past * c->kv_rs;
}

static void mm_state_hdr_fill(const struct mmhal_ctx *c,
			      struct mm_state_hdr *h)
{
	const struct mm_llama_hp *hp = &c->model->hp;

	memset(h, 0, sizeof(*h));
	memcpy(h->magic, MM_STATE_MAGIC, sizeof(MM_STATE_MAGIC));
	h->version = MM_STATE_VERSION;
	h->hdr_bytes = sizeof(*h);
	h->n_layer = hp->n_layer;
	h->n_embd = hp->n_embd;
	h->n_head_kv = hp->n_head_kv;
	h->head_dim = hp->head_dim;
	h->n_vocab = hp->n_vocab;
	h->kv_type = c->kv_type;
	h->n_ctx = c->n_ctx;
	h->kv_rs = (uint32_t)c->kv_rs;
	h->model_hash = mm_state_model_hash(c->model);
}

struct mm_wr {
	FILE *f;
	uint64_t h, n;
	int bad;
};

static void mm_put(struct mm_wr *w, const void *p, size_t n)
{
	if (!n || w->bad)
		return;
	if (fwrite(p, 1, n, w->f) != n)
		w->bad = 1;
	w->h = mm_fnv(w->h, p, n);
	w->n += n;
}

MMHAL_API int mmhal_ctx_state_save(struct mmhal_ctx *c, const char *path)
{
	const struct mm_llama_hp *hp;
	struct mm_state_hdr h;
	struct mm_wr w = { .h = MM_FNV_INIT };
	char *tmp;
	size_t len;
	int ret = 0;

	if (!c)
		return -EINVAL;
	if (!path || !path[0])
		return mm_errf(-EINVAL, c->err, sizeof(c->err),
			       "state_save: no path");
	hp = &c->model->hp;
	len = strlen(path) + 32;
	tmp = malloc(len);
	if (!tmp)
		return mm_errf(-ENOMEM, c->err, sizeof(c->err),
			       "state_save: out of memory");
	mm_file_tmp_name(tmp, len, path);
	unlink(tmp);	/* this process's own leftover, or a link: not followed */
	w.f = fopen(tmp, "wbx");
	if (!w.f) {
		ret = -errno;
		mm_errf(ret, c->err, sizeof(c->err), "state_save: %s: %s",
			tmp, strerror(errno));
		free(tmp);
		return ret;
	}
	mm_state_hdr_fill(c, &h);
	h.n_past = c->n_past;
	h.has_logits = c->has_logits ? 1 : 0;
	h.payload_bytes = mm_state_payload(c, c->n_past, h.has_logits);
	if (fwrite(&h, sizeof(h), 1, w.f) != 1)
		w.bad = 1;
	mm_put(&w, c->tokens, (size_t)c->n_past * sizeof(int32_t));
	mm_put(&w, c->ids, (size_t)c->n_past * sizeof(uint64_t));
	if (h.has_logits)
		mm_put(&w, c->logits, (size_t)hp->n_vocab * sizeof(float));
	for (int v = 0; v < 2; v++)
		for (int l = 0; l < hp->n_layer; l++)
			for (int k = 0; k < hp->n_head_kv; k++)
				mm_put(&w, (v ? c->kv_v : c->kv_k) +
				       mm_kv_at(c, l, k, 0),
				       (size_t)c->n_past * c->kv_rs);
	h.checksum = w.h;
	if (!w.bad && (w.n != h.payload_bytes || fseek(w.f, 0, SEEK_SET) ||
		       fwrite(&h, sizeof(h), 1, w.f) != 1 || fflush(w.f) ||
		       fsync(fileno(w.f))))
		w.bad = 1;
	if (w.bad)
		ret = errno ? -errno : -EIO;
	if (fclose(w.f) && !ret)
		ret = errno ? -errno : -EIO;
	if (!ret)
		ret = mm_file_commit(tmp, path);
	if (ret) {
		mm_errf(ret, c->err, sizeof(c->err), "state_save: %s: %s",
			path, strerror(-ret));
		unlink(tmp);
	} else {
		c->err[0] = 0;
	}
	free(tmp);
	return ret;
}

/* A header field that must equal this session's. */
#define MM_SAME(field, ours)						\
	do {								\
		if (h.field != (uint32_t)(ours)) {			\
			ret = mm_errf(-EINVAL, c->err, sizeof(c->err),	\
				      "state_load: %s: " #field " %u, this session's is %u", \
				      path, h.field, (uint32_t)(ours));	\
			goto out;					\
		}							\
	} while (0)

MMHAL_API int mmhal_ctx_state_load(struct mmhal_ctx *c, const char *path)
{
	const struct mm_llama_hp *hp;
	struct mm_state_hdr h, ours;
	uint8_t *pay = NULL;
	const int32_t *tok;
	const uint64_t *ids;
	const uint8_t *p;
	struct stat sb;
	FILE *f;
	int ret = 0;

	if (!c)
		return -EINVAL;
	if (!path || !path[0])
		return mm_errf(-EINVAL, c->err, sizeof(c->err),
			       "state_load: no path");
	hp = &c->model->hp;
	f = fopen(path, "rb");
	if (!f) {
		ret = -errno;
		return mm_errf(ret, c->err, sizeof(c->err), "state_load: %s: %s",
			       path, strerror(-ret));
	}
	if (fstat(fileno(f), &sb)) {
		ret = mm_errf(-errno, c->err, sizeof(c->err),
			      "state_load: %s: %s", path, strerror(errno));
		goto out;
	}
	if (fread(&h, sizeof(h), 1, f) != 1) {
		ret = mm_errf(-EINVAL, c->err, sizeof(c->err),
			      "state_load: %s: header: %lld bytes, shorter than the %zu of a header",
			      path, (long long)sb.st_size, sizeof(h));
		goto out;
	}
	mm_state_hdr_fill(c, &ours);
	if (memcmp(h.magic, ours.magic, sizeof(h.magic))) {
		ret = mm_errf(-EINVAL, c->err, sizeof(c->err),
			      "state_load: %s: magic: not a session state file",
			      path);
		goto out;
	}
	MM_SAME(version, MM_STATE_VERSION);
	MM_SAME(hdr_bytes, sizeof(h));
	MM_SAME(n_layer, hp->n_layer);
	MM_SAME(n_embd, hp->n_embd);
	MM_SAME(n_head_kv, hp->n_head_kv);
	MM_SAME(head_dim, hp->head_dim);
	MM_SAME(n_vocab, hp->n_vocab);
	if (h.model_hash != ours.model_hash) {
		ret = mm_errf(-EINVAL, c->err, sizeof(c->err),
			      "state_load: %s: model_hash %016llx: saved with another model file (this one's tensor table gives %016llx)",
			      path, (unsigned long long)h.model_hash,
			      (unsigned long long)ours.model_hash);
		goto out;
	}
	MM_SAME(kv_type, c->kv_type);
	MM_SAME(kv_rs, c->kv_rs);
	if (h.n_ctx < 1 || h.n_ctx > (1u << 20) || h.n_past > h.n_ctx) {
		ret = mm_errf(-EINVAL, c->err, sizeof(c->err),
			      "state_load: %s: n_past %u / n_ctx %u: out of range",
			      path, h.n_past, h.n_ctx);
		goto out;
	}
	if (h.n_past > (uint32_t)c->n_ctx) {
		ret = mm_errf(-ENOSPC, c->err, sizeof(c->err),
			      "state_load: %s: n_past %u > this session's n_ctx %d",
			      path, h.n_past, c->n_ctx);
		goto out;
	}
	if (h.has_logits > 1) {
		ret = mm_errf(-EINVAL, c->err, sizeof(c->err),
			      "state_load: %s: has_logits %u: 0 or 1", path,
			      h.has_logits);
		goto out;
	}
	if (h.payload_bytes != mm_state_payload(c, (int)h.n_past,
						h.has_logits) ||
	    (uint64_t)sb.st_size != sizeof(h) + h.payload_bytes) {
		ret = mm_errf(-EINVAL, c->err, sizeof(c->err),
			      "state_load: %s: size: the file has %lld bytes, its header says %llu + %llu (%s)",
			      path, (long long)sb.st_size,
			      (unsigned long long)sizeof(h),
			      (unsigned long long)h.payload_bytes,
			      (uint64_t)sb.st_size < sizeof(h) + h.payload_bytes ?
			      "truncated" : "payload_bytes wrong or trailing bytes");
		goto out;
	}
	pay = malloc(h.payload_bytes ? h.payload_bytes : 1);
	if (!pay) {
		ret = mm_errf(-ENOMEM, c->err, sizeof(c->err),
			      "state_load: out of memory for %llu bytes",
			      (unsigned long long)h.payload_bytes);
		goto out;
	}
	if (h.payload_bytes && fread(pay, 1, h.payload_bytes, f) != h.payload_bytes) {
		ret = mm_errf(-EIO, c->err, sizeof(c->err),
			      "state_load: %s: read failed", path);
		goto out;
	}
	if (mm_fnv(MM_FNV_INIT, pay, h.payload_bytes) != h.checksum) {
		ret = mm_errf(-EINVAL, c->err, sizeof(c->err),
			      "state_load: %s: checksum: the payload is corrupt",
			      path);
		goto out;
	}
	tok = (const int32_t *)pay;	/* malloc'd: aligned for all */
	ids = (const uint64_t *)(pay + (size_t)h.n_past * sizeof(int32_t));
	for (uint32_t i = 0; i < h.n_past; i++) {
		uint64_t id;

		memcpy(&id, &ids[i], sizeof(id));
		if (tok[i] != MMHAL_TOKEN_EMBD &&
		    (tok[i] < 0 || tok[i] >= hp->n_vocab)) {
			ret = mm_errf(-EINVAL, c->err, sizeof(c->err),
				      "state_load: %s: tokens[%u] = %d: outside the vocabulary (%d)",
				      path, i, tok[i], hp->n_vocab);
			goto out;
		}
		if (tok[i] != MMHAL_TOKEN_EMBD && id) {
			ret = mm_errf(-EINVAL, c->err, sizeof(c->err),
				      "state_load: %s: ids[%u]: set on a token position",
				      path, i);
			goto out;
		}
	}
	p = (const uint8_t *)ids + (size_t)h.n_past * sizeof(uint64_t);
	if (h.has_logits)
		for (int i = 0; i < hp->n_vocab; i++) {
			float x;

			memcpy(&x, p + (size_t)i * sizeof(float), sizeof(x));
			if (isnan(x)) {
				ret = mm_errf(-EINVAL, c->err, sizeof(c->err),
					      "state_load: %s: logits[%d] is NaN",
					      path, i);
				goto out;
			}
		}

	/* all checked: replace the cache */
	memcpy(c->tokens, tok, (size_t)h.n_past * sizeof(int32_t));
	memcpy(c->ids, ids, (size_t)h.n_past * sizeof(uint64_t));
	if (h.has_logits) {
		memcpy(c->logits, p, (size_t)hp->n_vocab * sizeof(float));
		p += (size_t)hp->n_vocab * sizeof(float);
	}
	for (int v = 0; v < 2; v++)
		for (int l = 0; l < hp->n_layer; l++)
			for (int k = 0; k < hp->n_head_kv; k++) {
				const size_t n = (size_t)h.n_past * c->kv_rs;

				memcpy((v ? c->kv_v : c->kv_k) +
				       mm_kv_at(c, l, k, 0), p, n);
				p += n;
			}
	c->n_past = (int)h.n_past;
	c->has_logits = (int)h.has_logits;
	c->err[0] = 0;
out:
	free(pay);
	fclose(f);
	return ret;
}

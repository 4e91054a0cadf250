// SPDX-License-Identifier: MIT
/*
 * llama_load.c - loading a "llama" architecture GGUF model: hyperparameters,
 * weights used in place (norms dequantized), the layouts the kernels read
 * fastest (repacking), the info of mmhal_model_info(); and the default
 * session mmhal_model_load() makes.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/mm_params.h"
#include "cuda_llama.h"
#include "llama_int.h"
#include "sign.h"

MMHAL_API struct mmhal_model_params mmhal_model_default_params(void)
{
	struct mmhal_model_params p = {
		.size = sizeof(p),
		.n_ctx = 0,
		.n_batch = 512,
		.n_threads = 0,
		.kv_type = MMHAL_KV_F16,
		.use_mmap = 1,
		.repack = 1,
	};

	return p;
}

static int mm_llama_u32(const struct mm_gguf *g, const char *key,
			int required, uint32_t def, uint32_t *v, char *err,
			size_t errlen)
{
	int ret = mm_gguf_get_u32(g, key, v);

	if (ret == -ENOENT && !required) {
		*v = def;
		return 0;
	}
	if (ret)
		mm_errf(0, err, errlen, "key %s: %s", key,
		       ret == -ENOENT ? "missing" : "not an integer that fits u32");
	return ret;
}

static int mm_llama_f32(const struct mm_gguf *g, const char *key, float def,
			float *v, char *err, size_t errlen)
{
	int ret = mm_gguf_get_f32(g, key, v);

	if (ret == -ENOENT) {
		*v = def;
		return 0;
	}
	if (ret)
		mm_errf(0, err, errlen, "key %s: not a float", key);
	return ret;
}

/* Finds a 1-D or 2-D weight of shape {ne0, ne1} (ne1 = 1: a vector). */
static int mm_llama_tensor(const struct mm_gguf *g, const char *name,
			   int64_t ne0, int64_t ne1, int optional,
			   struct mm_llama_w *w, char *err, size_t errlen)
{
	const struct mm_gguf_tensor *t = mm_gguf_tensor(g, name);

	memset(w, 0, sizeof(*w));
	if (!t) {
		if (optional)
			return 0;
		mm_errf(0, err, errlen, "tensor %s: missing", name);
		return -ENOENT;
	}
	if (!mm_type_valid(t->type)) {
		mm_errf(0, err, errlen, "tensor %s: type %s (%u) not supported",
		       name, mm_gguf_type_name(t->type) ?
		       mm_gguf_type_name(t->type) : "?", t->type);
		return -ENOTSUP;
	}
	if (t->ne[0] != ne0 || t->ne[1] != ne1 || t->ne[2] != 1 ||
	    t->ne[3] != 1) {
		mm_errf(0, err, errlen,
		       "tensor %s: shape {%lld, %lld, %lld, %lld}, expected {%lld, %lld}",
		       name, (long long)t->ne[0], (long long)t->ne[1],
		       (long long)t->ne[2], (long long)t->ne[3],
		       (long long)ne0, (long long)ne1);
		return -EINVAL;
	}
	w->t = (enum mm_type)t->type;
	w->d = t->data;
	w->ne0 = ne0;
	w->ne1 = ne1;
	w->rs = mm_row_bytes(w->t, ne0);
	w->bytes = t->size;
	if (!w->rs || w->rs * (uint64_t)ne1 > t->size) {
		mm_errf(0, err, errlen, "tensor %s: %llu bytes, too small for its shape",
		       name, (unsigned long long)t->size);
		return -EINVAL;
	}
	return 0;
}

/* A vector weight (norms, rope_freqs), dequantized to f32. */
static int mm_llama_vec(struct mmhal_model *m, const char *name, int64_t n,
			int optional, float **out, char *err, size_t errlen)
{
	struct mm_llama_w w;
	int ret = mm_llama_tensor(m->g, name, n, 1, optional, &w, err, errlen);

	*out = NULL;
	if (ret || !w.d)
		return ret;
	*out = mm_llama_alloc(&m->mem, n * sizeof(float));
	if (!*out)
		return -ENOMEM;
	mm_dequantize_row(w.t, w.d, *out, n);
	return 0;
}

static int mm_llama_read_file(const char *path, void **buf, size_t *size)
{
	struct stat sb;
	size_t off = 0, cap;
	/* O_NONBLOCK: a FIFO at path cannot hold the open */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC), ret = 0;
	uint8_t *p;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &sb) < 0) {
		ret = -errno;
		goto out;
	}
	if (!S_ISREG(sb.st_mode)) {
		ret = -EINVAL;	/* "Invalid argument": not a regular file */
		goto out;
	}
	cap = ((size_t)sb.st_size + 4095) & ~(size_t)4095;
	p = aligned_alloc(4096, cap ? cap : 4096);
	if (!p) {
		ret = -ENOMEM;
		goto out;
	}
	while (off < (size_t)sb.st_size) {
		ssize_t r = read(fd, p + off, (size_t)sb.st_size - off);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			ret = r < 0 ? -errno : -EIO;
			free(p);
			goto out;
		}
		off += (size_t)r;
	}
	*buf = p;
	*size = off;
out:
	close(fd);
	return ret;
}

static int mm_llama_hparams(struct mmhal_model *m, char *err, size_t errlen)
{
	const struct mm_gguf *g = m->g;
	struct mm_llama_hp *hp = &m->hp;
	const struct mm_gguf_tensor *te;
	const char *arch = mm_gguf_arch(g);
	uint32_t u[8];
	int ret = 0;

	if (!arch) {
		mm_errf(0, err, errlen, "key general.architecture: missing");
		return -EINVAL;
	}
	if (strcmp(arch, "llama")) {
		mm_errf(0, err, errlen,
		       "key general.architecture: '%s' not supported (llama)",
		       arch);
		return -ENOTSUP;
	}
	ret = mm_llama_u32(g, "llama.block_count", 1, 0, &u[0], err, errlen);
	if (!ret)
		ret = mm_llama_u32(g, "llama.embedding_length", 1, 0, &u[1],
				   err, errlen);
	if (!ret)
		ret = mm_llama_u32(g, "llama.feed_forward_length", 1, 0, &u[2],
				   err, errlen);
	if (!ret)
		ret = mm_llama_u32(g, "llama.attention.head_count", 1, 0,
				   &u[3], err, errlen);
	if (!ret)
		ret = mm_llama_u32(g, "llama.attention.head_count_kv", 0, u[3],
				   &u[4], err, errlen);
	if (!ret)
		ret = mm_llama_u32(g, "llama.context_length", 0, 4096, &u[5],
				   err, errlen);
	if (!ret)
		ret = mm_llama_f32(g, "llama.attention.layer_norm_rms_epsilon",
				   1e-5f, &hp->eps, err, errlen);
	if (!ret)
		ret = mm_llama_f32(g, "llama.rope.freq_base", 10000.0f,
				   &hp->rope_base, err, errlen);
	if (ret)
		return ret;
	hp->n_layer = (int)u[0];
	hp->n_embd = (int)u[1];
	hp->n_ff = (int)u[2];
	hp->n_head = (int)u[3];
	hp->n_head_kv = (int)u[4];
	hp->n_ctx_train = (int)u[5];
	if (u[0] < 1 || u[0] > 4096 || u[1] < 1 || u[1] > (1u << 20) ||
	    u[2] < 1 || u[2] > (1u << 22) || u[3] < 1 || u[3] > u[1] ||
	    u[4] < 1 || u[4] > u[3] || u[3] % u[4] || u[1] % u[3] ||
	    u[5] < 1 || u[5] > (1u << 24)) {
		mm_errf(0, err, errlen,
		       "hyperparameters out of range: layers %u, embd %u, ff %u, heads %u/%u, ctx %u",
		       u[0], u[1], u[2], u[3], u[4], u[5]);
		return -EINVAL;
	}
	if (!(hp->eps > 0.0f && hp->eps < 1.0f)) {
		mm_errf(0, err, errlen,
		       "key llama.attention.layer_norm_rms_epsilon: %g out of range",
		       hp->eps);
		return -EINVAL;
	}
	if (!(hp->rope_base > 1.0f && isfinite(hp->rope_base))) {
		mm_errf(0, err, errlen, "key llama.rope.freq_base: %g out of range",
		       hp->rope_base);
		return -EINVAL;
	}
	ret = mm_llama_u32(g, "llama.attention.key_length", 0,
			   u[1] / u[3], &u[6], err, errlen);
	if (!ret)
		ret = mm_llama_u32(g, "llama.attention.value_length", 0, u[6],
				   &u[7], err, errlen);
	if (ret)
		return ret;
	if (u[6] != u[7] || u[6] < 2 || u[6] > 1024 || u[6] % 2) {
		mm_errf(0, err, errlen,
		       "keys llama.attention.key_length/value_length: %u/%u not supported",
		       u[6], u[7]);
		return -ENOTSUP;
	}
	hp->head_dim = (int)u[6];
	ret = mm_llama_u32(g, "llama.rope.dimension_count", 0, u[6], &u[0],
			   err, errlen);
	if (ret)
		return ret;
	if (u[0] < 2 || u[0] > u[6] || u[0] % 2) {
		mm_errf(0, err, errlen,
		       "key llama.rope.dimension_count: %u (head dim %u)", u[0],
		       u[6]);
		return -EINVAL;
	}
	hp->n_rot = (int)u[0];
	te = mm_gguf_tensor(g, "token_embd.weight");
	if (!te) {
		mm_errf(0, err, errlen, "tensor token_embd.weight: missing");
		return -ENOENT;
	}
	if (te->ne[1] < 1 || te->ne[1] > (1 << 24)) {
		mm_errf(0, err, errlen, "tensor token_embd.weight: %lld tokens",
		       (long long)te->ne[1]);
		return -EINVAL;
	}
	hp->n_vocab = (int)te->ne[1];
	return 0;
}

const struct mm_llama_mat mm_llama_layer_mats[MM_LAYER_MATS] = {
	{ "attn_q", offsetof(struct mm_llama_layer, q) },
	{ "attn_k", offsetof(struct mm_llama_layer, k) },
	{ "attn_v", offsetof(struct mm_llama_layer, v) },
	{ "attn_output", offsetof(struct mm_llama_layer, o) },
	{ "ffn_gate", offsetof(struct mm_llama_layer, gate) },
	{ "ffn_up", offsetof(struct mm_llama_layer, up) },
	{ "ffn_down", offsetof(struct mm_llama_layer, down) },
};

static int mm_llama_weights(struct mmhal_model *m, char *err, size_t errlen)
{
	const struct mm_llama_hp *hp = &m->hp;
	int64_t e = hp->n_embd, f = hp->n_ff;
	int64_t qd = (int64_t)hp->n_head * hp->head_dim;
	int64_t kvd = (int64_t)hp->n_head_kv * hp->head_dim;
	char nm[64];
	int ret;

	ret = mm_llama_tensor(m->g, "token_embd.weight", e, hp->n_vocab, 0,
			      &m->tok_embd, err, errlen);
	if (!ret)
		ret = mm_llama_tensor(m->g, "output.weight", e, hp->n_vocab, 1,
				      &m->output, err, errlen);
	if (!ret && !m->output.d)
		m->output = m->tok_embd;
	if (!ret)
		ret = mm_llama_vec(m, "output_norm.weight", e, 0,
				   &m->output_norm, err, errlen);
	if (!ret)
		ret = mm_llama_vec(m, "rope_freqs.weight", hp->n_rot / 2, 1,
				   &m->inv_freq, err, errlen);
	if (ret)
		return ret;
	m->layers = mm_llama_alloc(&m->mem, hp->n_layer * sizeof(*m->layers));
	if (!m->layers)
		return -ENOMEM;
	for (int l = 0; l < hp->n_layer && !ret; l++) {
		struct mm_llama_layer *L = &m->layers[l];
		/* {ne0, ne1} of each of mm_layer_mats, in its order */
		const int64_t shape[MM_LAYER_MATS][2] = {
			{ e, qd }, { e, kvd }, { e, kvd }, { qd, e },
			{ e, f }, { e, f }, { f, e },
		};

		snprintf(nm, sizeof(nm), "blk.%d.attn_norm.weight", l);
		ret = mm_llama_vec(m, nm, e, 0, &L->attn_norm, err, errlen);
		if (!ret) {
			snprintf(nm, sizeof(nm), "blk.%d.ffn_norm.weight", l);
			ret = mm_llama_vec(m, nm, e, 0, &L->ffn_norm, err,
					   errlen);
		}
		for (int i = 0; !ret && i < MM_LAYER_MATS; i++) {
			snprintf(nm, sizeof(nm), "blk.%d.%s.weight", l,
				 mm_llama_layer_mats[i].name);
			ret = mm_llama_tensor(m->g, nm, shape[i][0],
					      shape[i][1], 0, mm_layer_mat(L, i),
					      err, errlen);
		}
	}
	return ret;
}

static void mm_llama_fill_info(struct mmhal_model *m)
{
	struct mmhal_model_info *in = &m->info;
	const struct mm_llama_hp *hp = &m->hp;
	const struct mm_gguf_kv *kv;
	uint64_t per_tok = m->tok_embd.rs + m->output.bytes;

	memset(in, 0, sizeof(*in));
	snprintf(in->arch, sizeof(in->arch), "%s", mm_gguf_arch(m->g));
	kv = mm_gguf_find(m->g, "general.name");
	if (kv && kv->type == MM_GGUF_STR)
		snprintf(in->name, sizeof(in->name), "%s", kv->v.str);
	in->n_vocab = hp->n_vocab;
	in->n_embd = hp->n_embd;
	in->n_layer = hp->n_layer;
	in->n_head = hp->n_head;
	in->n_head_kv = hp->n_head_kv;
	in->n_ff = hp->n_ff;
	in->n_rot = hp->n_rot;
	in->n_ctx = m->ctx->n_ctx;
	in->n_ctx_train = hp->n_ctx_train;
	in->n_threads = m->ctx->n_threads;
	in->kv_type = m->ctx->kv_type;
	in->tied_output = m->output.d == m->tok_embd.d;
	in->file_bytes = mm_gguf_file_size(m->g);
	for (uint64_t i = 0; i < mm_gguf_n_tensors(m->g); i++) {
		const struct mm_gguf_tensor *t = mm_gguf_tensor_at(m->g, i);
		int j;

		in->weight_bytes += t->size;
		for (j = 0; j < in->n_wtypes; j++)
			if (in->wtype[j] == t->type)
				break;
		if (j == in->n_wtypes) {
			if (j == MMHAL_MODEL_MAX_WTYPES)
				continue;
			in->n_wtypes++;
			in->wtype[j] = t->type;
			snprintf(in->wtype_name[j], sizeof(in->wtype_name[j]),
				 "%s", mm_gguf_type_name(t->type) ?
				 mm_gguf_type_name(t->type) : "?");
		}
		in->wtype_bytes[j] += t->size;
	}
	/* sort by bytes, most first */
	for (int i = 1; i < in->n_wtypes; i++)
		for (int j = i; j > 0 && in->wtype_bytes[j] >
		     in->wtype_bytes[j - 1]; j--) {
			uint32_t t = in->wtype[j];
			uint64_t b = in->wtype_bytes[j];
			char n[8];

			memcpy(n, in->wtype_name[j], sizeof(n));
			in->wtype[j] = in->wtype[j - 1];
			in->wtype_bytes[j] = in->wtype_bytes[j - 1];
			memcpy(in->wtype_name[j], in->wtype_name[j - 1],
			       sizeof(n));
			in->wtype[j - 1] = t;
			in->wtype_bytes[j - 1] = b;
			memcpy(in->wtype_name[j - 1], n, sizeof(n));
		}
	for (int l = 0; l < hp->n_layer; l++)
		for (int i = 0; i < MM_LAYER_MATS; i++)
			per_tok += mm_layer_mat(&m->layers[l], i)->bytes;
	in->weight_bytes_per_token = per_tok;
	in->kv_bytes = m->ctx->st.kv_bytes;
	in->repacked_bytes = m->repacked_bytes;
	snprintf(in->kernels, sizeof(in->kernels), "%s",
		 m->kernels);
}

/* A matrix to rearrange at load: blk.<layer>.<which>.weight, or
 * output.weight or a tied token_embd.weight (layer -1); err is
 * mm_repack()'s result. */
struct mm_repack_item {
	struct mm_llama_w *w;
	enum mm_type to;
	int layer, which, err;
};

struct mm_repack_job {
	struct mm_repack_item *it;
	int mapped;
};

static void mm_llama_repack_fn(int64_t b, int64_t e, void *arg)
{
	const struct mm_repack_job *j = arg;
	const uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);

	for (int64_t i = b; i < e; i++) {
		struct mm_repack_item *it = &j->it[i];
		const struct mm_llama_w *w = it->w;

#ifdef MADV_POPULATE_WRITE
		/* the copy-on-write faults in one call (Linux 5.14); on
		 * failure the rewrite takes them one page at a time */
		if (j->mapped) {
			const uintptr_t p0 = (uintptr_t)w->d & ~(pg - 1);
			const uintptr_t p1 = ((uintptr_t)w->d + w->rs * w->ne1 +
					      pg - 1) & ~(pg - 1);

			madvise((void *)p0, p1 - p0, MADV_POPULATE_WRITE);
		}
#else
		(void)pg;
#endif
		it->err = mm_repack(w->t, it->to, (void *)w->d, w->ne1, w->ne0);
	}
}

/*
 * Rearranges the matrices that the kernel set reads faster in another
 * layout (Q4_0 -> Q4_0_R8, Q5_0 -> Q5_0_R8, Q4_K -> Q4_K_R8 on x86,
 * Q8_0 -> Q8_0_R8 with the AVX2 set: 8 rows' scales and quants together,
 * see quant.h) in
 * place, a share of them on each thread. A mapped file is MAP_PRIVATE:
 * the pages from the first of them to the last are made writable for the
 * rewrite, which copies the ones written (the file is not changed; the
 * pages read are not kept twice in the process), then read-only again.
 * token_embd is rearranged only when it is also the output matrix (tied):
 * its rows are then looked up through mm_layout_row(); an embedding of
 * its own is only looked up, a row per token, and stays as stored.
 */
static int mm_llama_repack(struct mmhal_model *m,
			   struct mm_llama_layer *layers,
			   struct mm_llama_w *output,
			   struct mm_llama_w *tok_embd, struct mm_ctx *mm,
			   int mapped, char *err, size_t errlen)
{
	const uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	struct mm_repack_job j = { .mapped = mapped };
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	int n = 0, ret = 0;

	j.it = calloc(MM_LAYER_MATS * (size_t)m->hp.n_layer + 1,
		      sizeof(*j.it));
	if (!j.it) {
		mm_errf(0, err, errlen, "repacking: out of memory");
		return -ENOMEM;
	}
	for (int l = -1; l < m->hp.n_layer; l++) {
		/* layer -1: the output matrix (tied: token_embd) */
		const int nw = l >= 0 ? MM_LAYER_MATS : 1;

		for (int i = 0; i < nw; i++) {
			struct mm_llama_w *w = l >= 0 ?
				mm_layer_mat(&layers[l], i) : output;
			const enum mm_type to = mm_repack_type(mm, w->t,
							       w->ne1, w->ne0);

			if (to == w->t || w->dev)	/* on the device */
				continue;
			j.it[n++] = (struct mm_repack_item){ .w = w, .to = to,
							     .layer = l,
							     .which = i };
			if ((uintptr_t)w->d < lo)
				lo = (uintptr_t)w->d;
			if ((uintptr_t)w->d + w->rs * w->ne1 > hi)
				hi = (uintptr_t)w->d + w->rs * w->ne1;
		}
	}
	if (!n)
		goto out;
	lo &= ~(pg - 1);
	hi = (hi + pg - 1) & ~(pg - 1);
	if (mapped && mprotect((void *)lo, hi - lo, PROT_READ | PROT_WRITE)) {
		ret = -errno;
		mm_errf(0, err, errlen, "repacking: cannot make the weights writable: %s",
		       strerror(-ret));
		goto out;
	}
	mm_parallel_for(mm, n, mm_llama_repack_fn, &j);
	if (mapped && mprotect((void *)lo, hi - lo, PROT_READ)) {
		ret = -errno;
		mm_errf(0, err, errlen, "repacking: cannot make the weights read-only: %s",
		       strerror(-ret));
		goto out;
	}
	for (int i = 0; i < n; i++) {
		const struct mm_repack_item *it = &j.it[i];

		if (it->err) {
			ret = it->err;
			if (it->layer < 0)
				mm_errf(0, err, errlen, "repacking %s.weight: %s",
				       output->d == tok_embd->d ? "token_embd" :
				       "output", strerror(-ret));
			else
				mm_errf(0, err, errlen, "repacking blk.%d.%s.weight: %s",
				       it->layer, mm_llama_layer_mats[it->which].name,
				       strerror(-ret));
			goto out;
		}
		it->w->t = it->to;
		if (it->w == output && output->d == tok_embd->d)
			tok_embd->t = it->to;	/* the same bytes */
		m->repacked_bytes += it->w->rs * it->w->ne1;
	}
out:
	free(j.it);
	return ret;
}

/* The matrices' bytes and elements, and the type of most bytes (as
 * stored: before repacking). */
static void mm_llama_tier_size(struct mm_llama_tier *T,
			       struct mm_llama_layer *layers,
			       const struct mm_llama_w *output, int n_layer)
{
	uint64_t tb[64] = { 0 };
	int best = 0;

	T->mat_bytes = output->bytes;
	T->mat_elems = (uint64_t)output->ne0 * output->ne1;
	if (output->t < 64)
		tb[output->t] += output->bytes;
	for (int l = 0; l < n_layer; l++)
		for (int i = 0; i < MM_LAYER_MATS; i++) {
			const struct mm_llama_w *w = mm_layer_mat(&layers[l], i);

			T->mat_bytes += w->bytes;
			T->mat_elems += (uint64_t)w->ne0 * w->ne1;
			if (w->t < 64)
				tb[w->t] += w->bytes;
		}
	for (int t = 1; t < 64; t++)
		if (tb[t] > tb[best])
			best = t;
	snprintf(T->wtype, sizeof(T->wtype), "%s",
		 mm_gguf_type_name(best) ? mm_gguf_type_name(best) : "?");
}

/*
 * The GGUF at path, mapped or read (use_mmap). With the model's trusted
 * key it is verified against path.sig first and used, whatever use_mmap
 * says, from a private read-only copy of the verified bytes or, for an
 * fs-verity file whose digest is the signed one, from a mapping the
 * kernel checks page by page (mm_gguf_open_verified(): nothing of the
 * file is read before its signature, nor used unverified); *man gets its
 * manifest (man->how: which of the two).
 * *mapped: the weights are in a mapping (repacked through mprotect()).
 */
static int mm_llama_open(const struct mmhal_model *m, const char *path,
			 int use_mmap, struct mm_gguf **g, void **filebuf,
			 struct mm_manifest *man, int *mapped, char *err,
			 size_t errlen)
{
	size_t n = 0;
	int ret;

	*mapped = use_mmap || m->has_key;
	if (m->has_key)
		return mm_gguf_open_verified(path, m->trusted_key,
					     m->min_version, man, g, err,
					     errlen);
	if (use_mmap)
		return mm_gguf_open(path, g, err, errlen);
	ret = mm_llama_read_file(path, filebuf, &n);
	if (ret)
		return mm_errf(ret, err, errlen, "%s: %s", path,
			       strerror(-ret));
	return mm_gguf_open_mem(*filebuf, n, g, err, errlen);
}

/*
 * The vocabulary's size against the tensors that imply one, as llama.cpp
 * refuses at load (it creates token_embd.weight and output.weight as
 * {n_embd, n_tokens}, n_tokens the tokenizer's): token_embd.weight has a
 * row per token (hp.n_vocab; output.weight was checked against it).
 * Otherwise a token the tokenizer makes has no row, or a row no token.
 */
static int mm_llama_vocab_shape(const struct mmhal_model *m, char *err,
				size_t errlen)
{
	if (m->tok && mm_tok_n_vocab(m->tok) != m->hp.n_vocab)
		return mm_errf(-EINVAL, err, errlen,
			       "key tokenizer.ggml.tokens: %d tokens, but tensor token_embd.weight%s has %d rows (one per token)",
			       mm_tok_n_vocab(m->tok),
			       m->output.d != m->tok_embd.d ?
			       " (and output.weight)" : "", m->hp.n_vocab);
	return 0;
}

MMHAL_API int mmhal_model_load(const char *path,
			       const struct mmhal_model_params *params,
			       struct mmhal_model **out, char *err,
			       size_t errlen)
{
	struct mmhal_model_params p = mmhal_model_default_params();
	struct mmhal_ctx_params cp = mmhal_ctx_default_params();
	double t0 = mm_now_ms();
	struct mmhal_model *m;
	char tokerr[320];
	int ret;

	if (err && errlen)
		err[0] = 0;
	if (params) {
		ret = MM_PARAMS_IN(&p, params,
				   offsetof(struct mmhal_model_params, reserved),
				   "model params", err, errlen);
		if (ret)
			return ret;
	}
	if (!out || !path) {
		mm_errf(0, err, errlen, "path and out must not be NULL");
		return -EINVAL;
	}
	*out = NULL;
	if (p.kv_type != MMHAL_KV_F16 && p.kv_type != MMHAL_KV_Q8_0) {
		mm_errf(0, err, errlen, "kv_type %d not supported (F16 1, Q8_0 8)",
		       p.kv_type);
		return -EINVAL;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	if (p.trusted_key) {
		m->has_key = 1;
		memcpy(m->trusted_key, p.trusted_key, sizeof(m->trusted_key));
		m->min_version = p.min_version;
	}
	ret = mm_llama_open(m, path, p.use_mmap, &m->g, &m->filebuf, &m->man,
			    &m->mapped, err, errlen);
	if (ret)
		goto fail;
	ret = mm_llama_hparams(m, err, errlen);
	if (!ret)
		ret = mm_llama_weights(m, err, errlen);
	if (ret)
		goto fail;
	mm_llama_tier_size(&m->tier[0], m->layers, &m->output, m->hp.n_layer);
	/* A file without a vocabulary still runs on token ids; a vocabulary
	 * this runtime cannot tokenize as llama.cpp does (an unknown
	 * tokenizer.ggml.pre, a malformed table) refuses the model. */
	ret = mm_tok_load(m->g, &m->tok, tokerr, sizeof(tokerr));
	if (ret && mm_gguf_find(m->g, "tokenizer.ggml.model")) {
		mm_errf(0, err, errlen, "%s", tokerr);
		goto fail;
	}
	if (ret)
		m->tok = NULL;
	ret = mm_llama_vocab_shape(m, err, errlen);
	if (ret)
		goto fail;
	if (!m->inv_freq) {
		m->inv_freq = mm_llama_alloc(&m->mem,
					     m->hp.n_rot / 2 * sizeof(float));
		if (!m->inv_freq) {
			mm_errf(0, err, errlen, "out of memory for %d RoPE frequencies",
			       m->hp.n_rot / 2);
			ret = -ENOMEM;
			goto fail;
		}
		for (int i = 0; i < m->hp.n_rot / 2; i++)
			m->inv_freq[i] = (float)pow(m->hp.rope_base,
				-2.0 * i / m->hp.n_rot);
	} else {
		/* rope_freqs: llama.cpp divides theta by the factor */
		for (int i = 0; i < m->hp.n_rot / 2; i++)
			m->inv_freq[i] = (float)(pow(m->hp.rope_base,
				-2.0 * i / m->hp.n_rot) / m->inv_freq[i]);
	}

	/* the default session: its threads also rearrange the weights for
	 * its kernel set, which every later session then uses */
	cp.n_ctx = p.n_ctx;
	cp.n_batch = p.n_batch;
	cp.n_threads = p.n_threads;
	cp.kv_type = p.kv_type;
	ret = mm_llama_ctx_new(m, &cp, NULL, &m->ctx, err, errlen);
	if (ret)
		goto fail;
	snprintf(m->kernels, sizeof(m->kernels), "%s",
		 mm_ctx_kernels(m->ctx->mm));
	ret = mm_cuda_llama_setup(m, &p, err, errlen);
	if (ret)
		goto fail;
	if (p.repack) {
		ret = mm_llama_repack(m, m->layers, &m->output, &m->tok_embd,
				      m->ctx->mm, m->mapped, err, errlen);
		if (ret)
			goto fail;
	}
	mm_llama_fill_info(m);
	mm_cuda_llama_info(m, &m->info);
	m->use_mmap = p.use_mmap;
	m->repack = p.repack;
	m->tier[0].layers = m->layers;
	m->tier[0].output = m->output;
	m->tier[0].tok_embd = m->tok_embd;
	m->tier[0].output_norm = m->output_norm;
	m->tier[0].base = 1;
	m->n_tiers = 1;
	m->load_ms = mm_now_ms() - t0;
	*out = m;
	return 0;
fail:
	mmhal_model_free(m);
	return ret;
}

MMHAL_API void mmhal_model_free(struct mmhal_model *m)
{
	if (!m)
		return;
	mmhal_ctx_free(m->ctx);
	mm_cuda_llama_free(m);
	for (int i = 0; i < m->n_tiers; i++)
		if (!m->tier[i].base) {
			for (int l = 0; l < m->hp.n_layer; l++) {
				mm_llama_free(&m->mem,
					      m->tier[i].layers[l].attn_norm);
				mm_llama_free(&m->mem,
					      m->tier[i].layers[l].ffn_norm);
			}
			mm_llama_free(&m->mem, m->tier[i].output_norm);
			mm_llama_free(&m->mem, m->tier[i].layers);
			mm_gguf_close(m->tier[i].g);
			free(m->tier[i].filebuf);
		}
	if (m->layers)
		for (int l = 0; l < m->hp.n_layer; l++) {
			mm_llama_free(&m->mem, m->layers[l].attn_norm);
			mm_llama_free(&m->mem, m->layers[l].ffn_norm);
		}
	mm_llama_free(&m->mem, m->layers);
	mm_llama_free(&m->mem, m->output_norm);
	mm_llama_free(&m->mem, m->inv_freq);
	mm_tok_free(m->tok);
	mm_gguf_close(m->g);
	free(m->filebuf);
	free(m);
}

int mm_model_manifest(const struct mmhal_model *m, struct mm_manifest *out)
{
	if (!m || !out)
		return -EINVAL;
	if (!m->has_key)
		return -ENOKEY;
	*out = m->man;
	return 0;
}

MMHAL_API int mmhal_model_verification(const struct mmhal_model *m,
				       struct mmhal_model_verify *out)
{
	struct mmhal_model_verify v;
	size_t n;

	if (!m || !out || out->size < 8)
		return -EINVAL;
	n = out->size < sizeof(v) ? out->size : sizeof(v);
	memset(&v, 0, sizeof(v));
	v.size = (uint32_t)n;
	if (m->has_key) {
		v.how = m->man.how == MM_SIG_HOW_VERITY ? MMHAL_VERIFY_VERITY :
			MMHAL_VERIFY_COPY;
		v.version = m->man.version;
		v.file_bytes = m->man.size;
		snprintf(v.name, sizeof(v.name), "%s", m->man.name);
		/* hex here: the arm64 decoder test builds without mhash.c */
		for (unsigned i = 0; i < MM_HASH_BYTES; i++)
			snprintf(v.hash + 2 * i, 3, "%02x", m->man.hash[i]);
		if (m->man.format == MM_SIG_FORMAT2)
			for (unsigned i = 0; i < MM_VERITY_BYTES; i++)
				snprintf(v.verity + 2 * i, 3, "%02x",
					 m->man.verity[i]);
	}
	snprintf(v.how_name, sizeof(v.how_name), "%s",
		 v.how == MMHAL_VERIFY_VERITY ? "fs-verity" :
		 v.how == MMHAL_VERIFY_COPY ? "copy" : "none");
	memcpy(out, &v, n);
	return 0;
}

MMHAL_API int mmhal_model_info(const struct mmhal_model *m,
			       struct mmhal_model_info *out)
{
	if (!out)
		return -EINVAL;
	if (!m) {
		memset(out, 0, sizeof(*out));
		return -EINVAL;
	}
	*out = m->info;
	return 0;
}

/* ---- precision tiers -------------------------------------------------- */

/* Whether two keys hold the same value (type, length, every element). */
static int mm_llama_kv_equal(const struct mm_gguf_kv *a,
			     const struct mm_gguf_kv *b)
{
	static const uint8_t esz[MM_GGUF_NTYPES] = {
		[MM_GGUF_U8] = 1, [MM_GGUF_I8] = 1, [MM_GGUF_U16] = 2,
		[MM_GGUF_I16] = 2, [MM_GGUF_U32] = 4, [MM_GGUF_I32] = 4,
		[MM_GGUF_F32] = 4, [MM_GGUF_BOOL] = 1, [MM_GGUF_U64] = 8,
		[MM_GGUF_I64] = 8, [MM_GGUF_F64] = 8,
	};
	const void *da, *db;

	if (a->type != b->type || a->n != b->n)
		return 0;
	if (a->type == MM_GGUF_STR)
		return !memcmp(a->v.str, b->v.str, a->n);
	if (a->type != MM_GGUF_ARR)
		return a->v.u == b->v.u;
	if (a->arr_type != b->arr_type || a->arr_type >= MM_GGUF_NTYPES)
		return 0;
	if (a->arr_type == MM_GGUF_STR) {
		for (uint64_t i = 0; i < a->n; i++) {
			const char *sa, *sb;
			size_t la, lb;

			if (mm_gguf_arr_str(a, i, &sa, &la) ||
			    mm_gguf_arr_str(b, i, &sb, &lb) || la != lb ||
			    memcmp(sa, sb, la))
				return 0;
		}
		return 1;
	}
	da = mm_gguf_arr_data(a);
	db = mm_gguf_arr_data(b);
	return esz[a->arr_type] && da && db &&
		!memcmp(da, db, a->n * esz[a->arr_type]);
}

/* The tokenizer keys of g and h are the same set with the same values. */
static int mm_llama_same_vocab(const struct mm_gguf *g,
			       const struct mm_gguf *h, char *err,
			       size_t errlen)
{
	uint64_t ng = 0, nh = 0;

	for (uint64_t i = 0; i < mm_gguf_n_kv(g); i++) {
		const struct mm_gguf_kv *a = mm_gguf_kv_at(g, i), *b;

		if (strncmp(a->key, "tokenizer.", 10))
			continue;
		ng++;
		b = mm_gguf_find(h, a->key);
		if (!b)
			return mm_errf(-EINVAL, err, errlen,
				       "tier: key %s: missing (the model has it)",
				       a->key);
		if (!mm_llama_kv_equal(a, b))
			return mm_errf(-EINVAL, err, errlen,
				       "tier: key %s: differs from the model's",
				       a->key);
	}
	for (uint64_t i = 0; i < mm_gguf_n_kv(h); i++)
		if (!strncmp(mm_gguf_kv_at(h, i)->key, "tokenizer.", 10) &&
		    ++nh > ng)
			return mm_errf(-EINVAL, err, errlen,
				       "tier: key %s: not in the model",
				       mm_gguf_kv_at(h, i)->key);
	return 0;
}

/* The hyperparameters of t equal m's; else the first that differs. */
static int mm_llama_same_hp(const struct mm_llama_hp *a,
			    const struct mm_llama_hp *b, char *err,
			    size_t errlen)
{
	const struct {
		const char *name;
		double x, y;
	} f[] = {
		{ "vocab size (token_embd.weight rows)", a->n_vocab, b->n_vocab },
		{ "llama.embedding_length", a->n_embd, b->n_embd },
		{ "llama.block_count", a->n_layer, b->n_layer },
		{ "llama.attention.head_count", a->n_head, b->n_head },
		{ "llama.attention.head_count_kv", a->n_head_kv, b->n_head_kv },
		{ "llama.feed_forward_length", a->n_ff, b->n_ff },
		{ "llama.attention.key_length", a->head_dim, b->head_dim },
		{ "llama.rope.dimension_count", a->n_rot, b->n_rot },
		{ "llama.context_length", a->n_ctx_train, b->n_ctx_train },
		{ "llama.attention.layer_norm_rms_epsilon", a->eps, b->eps },
		{ "llama.rope.freq_base", a->rope_base, b->rope_base },
	};

	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		if (f[i].x != f[i].y)
			return mm_errf(-EINVAL, err, errlen,
				       "tier: %s %g, the model's is %g",
				       f[i].name, f[i].y, f[i].x);
	return 0;
}

/* A copy of n floats in mem's allocations (NULL: out of memory). */
static float *mm_llama_dup(struct mm_llama_mem *mem, const float *src,
			   int n)
{
	float *p = mm_llama_alloc(mem, (size_t)n * sizeof(float));

	if (p)
		memcpy(p, src, (size_t)n * sizeof(float));
	return p;
}

/* The temporary model mmhal_model_add_tier() reads a file into: its
 * allocations (not its file) freed. */
static void mm_llama_tmp_free(struct mmhal_model *t)
{
	if (t->layers)
		for (int l = 0; l < t->hp.n_layer; l++) {
			mm_llama_free(&t->mem, t->layers[l].attn_norm);
			mm_llama_free(&t->mem, t->layers[l].ffn_norm);
		}
	mm_llama_free(&t->mem, t->layers);
	mm_llama_free(&t->mem, t->output_norm);
	mm_llama_free(&t->mem, t->inv_freq);
	t->layers = NULL;
	t->output_norm = t->inv_freq = NULL;
}

MMHAL_API int mmhal_model_add_tier(struct mmhal_model *m, const char *path,
				   char *err, size_t errlen)
{
	struct mmhal_model *t;
	struct mm_llama_tier T = { 0 };
	const char *arch;
	int ret, k;

	if (err && errlen)
		err[0] = 0;
	if (!m || !path)
		return mm_errf(-EINVAL, err, errlen,
			       "model and path must not be NULL");
	if (__atomic_load_n(&m->n_sessions, __ATOMIC_ACQUIRE))
		return mm_errf(-EBUSY, err, errlen,
			       "tier: %d sessions of the model exist; add tiers before creating them",
			       m->n_sessions);
	if (m->n_tiers >= MMHAL_MAX_TIERS)
		return mm_errf(-ENOSPC, err, errlen,
			       "tier: the model has %d tiers already (at most %d)",
			       m->n_tiers, MMHAL_MAX_TIERS);
	t = calloc(1, sizeof(*t));
	if (!t)
		return mm_errf(-ENOMEM, err, errlen, "out of memory");
	ret = mm_llama_open(m, path, m->use_mmap, &t->g, &t->filebuf, &t->man,
			    &t->mapped, err, errlen);
	if (ret)
		goto fail;
	arch = mm_gguf_arch(t->g);
	if (!arch || strcmp(arch, mm_gguf_arch(m->g))) {
		ret = mm_errf(-EINVAL, err, errlen,
			      "tier: general.architecture '%s', the model's is '%s'",
			      arch ? arch : "(missing)", mm_gguf_arch(m->g));
		goto fail;
	}
	ret = mm_llama_hparams(t, err, errlen);
	if (!ret)
		ret = mm_llama_same_hp(&m->hp, &t->hp, err, errlen);
	if (!ret && !mm_gguf_tensor(t->g, "output.weight") !=
	    (m->output.d == m->tok_embd.d))
		ret = mm_errf(-EINVAL, err, errlen,
			      "tier: tensor output.weight: %s, the model's is %s",
			      m->output.d == m->tok_embd.d ? "present" : "absent",
			      m->output.d == m->tok_embd.d ? "absent (tied)" :
			      "present");
	if (!ret)
		ret = mm_llama_same_vocab(m->g, t->g, err, errlen);
	if (!ret)
		ret = mm_llama_weights(t, err, errlen);
	if (ret) {
		if (ret == -ENOENT)	/* a key or tensor the model has */
			ret = -EINVAL;
		if (err && errlen && strncmp(err, "tier", 4)) {
			char tmp[256];

			snprintf(tmp, sizeof(tmp), "%s", err);
			mm_errf(0, err, errlen, "tier: %s", tmp);
		}
		goto fail;
	}
	mm_llama_tier_size(&T, t->layers, &t->output, t->hp.n_layer);
	for (k = 0; k < m->n_tiers; k++)
		if (m->tier[k].mat_bytes == T.mat_bytes) {
			ret = mm_errf(-EINVAL, err, errlen,
				      "tier: %llu matrix bytes (%s), as tier %d's: one precision per tier",
				      (unsigned long long)T.mat_bytes, T.wtype, k);
			goto fail;
		}
	/* the tables and norms in the model's allocations */
	ret = -ENOMEM;
	T.layers = mm_llama_alloc(&m->mem, m->hp.n_layer * sizeof(*T.layers));
	T.output_norm = mm_llama_dup(&m->mem, t->output_norm, m->hp.n_embd);
	for (int l = 0; T.layers && l < m->hp.n_layer; l++) {
		T.layers[l] = t->layers[l];
		T.layers[l].attn_norm = mm_llama_dup(&m->mem,
						     t->layers[l].attn_norm,
						     m->hp.n_embd);
		T.layers[l].ffn_norm = mm_llama_dup(&m->mem,
						    t->layers[l].ffn_norm,
						    m->hp.n_embd);
		if (!T.layers[l].attn_norm || !T.layers[l].ffn_norm)
			goto fail_tier;
	}
	if (!T.layers || !T.output_norm)
		goto fail_tier;
	T.output = t->output;
	if (m->repack) {
		uint64_t before = m->repacked_bytes;

		ret = mm_llama_repack(m, T.layers, &T.output, &t->tok_embd,
				      m->ctx->mm, t->mapped, err, errlen);
		if (ret)
			goto fail_tier;
		m->info.repacked_bytes += m->repacked_bytes - before;
	}
	T.tok_embd = t->tok_embd;
	T.g = t->g;
	T.filebuf = t->filebuf;
	mm_llama_tmp_free(t);
	free(t);
	/* in order of bits per weight */
	for (k = m->n_tiers; k > 0 &&
	     m->tier[k - 1].mat_bytes > T.mat_bytes; k--)
		m->tier[k] = m->tier[k - 1];
	m->tier[k] = T;
	m->n_tiers++;
	return 0;
fail_tier:
	if (ret == -ENOMEM)
		mm_errf(0, err, errlen, "tier: out of memory");
	for (int l = 0; T.layers && l < m->hp.n_layer; l++) {
		mm_llama_free(&m->mem, T.layers[l].attn_norm);
		mm_llama_free(&m->mem, T.layers[l].ffn_norm);
	}
	mm_llama_free(&m->mem, T.layers);
	mm_llama_free(&m->mem, T.output_norm);
fail:
	mm_llama_tmp_free(t);
	mm_gguf_close(t->g);
	free(t->filebuf);
	free(t);
	return ret;
}

MMHAL_API int mmhal_model_n_tiers(const struct mmhal_model *m)
{
	return m ? m->n_tiers : 0;
}

MMHAL_API int mmhal_model_tier_info(const struct mmhal_model *m, int tier,
				    struct mmhal_tier_info *out)
{
	const struct mm_llama_tier *T;

	if (!out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if (!m || tier < 0 || tier >= m->n_tiers)
		return -EINVAL;
	T = &m->tier[tier];
	out->base = T->base;
	out->matrix_bytes = T->mat_bytes;
	out->bits_per_weight = T->mat_elems ?
		8.0 * (double)T->mat_bytes / (double)T->mat_elems : 0;
	snprintf(out->wtype, sizeof(out->wtype), "%s", T->wtype);
	return 0;
}

// SPDX-License-Identifier: MIT
/*
 * llama.c - LLaMA-family decoder ("llama" architecture, as llama.cpp runs
 * it) and the model API of mmhal_model.h.
 *
 * Graph per layer:  x += Wo . attn(rope(Wq.n(x)), rope(Wk.n(x)), Wv.n(x))
 *                   x += Wdown . (silu(Wgate.n'(x)) * Wup.n'(x))
 * with n() RMSNorm, RoPE on adjacent pairs (llama.cpp "normal" mode: the
 * converter permutes Q/K for it), grouped-query causal attention, f32
 * softmax, scale 1/sqrt(head_dim); then output_norm and the output matrix
 * (token_embd when output.weight is absent).
 *
 * Prefill runs n tokens at once (mm_matmul), decode one (mm_matvec);
 * attention runs over (token, KV head) pairs with mm_parallel_for. K and V
 * rows are stored in the cache (F16 or Q8_0) before attention reads them,
 * so a token attends to itself through the cache's precision, as in
 * llama.cpp. Each pair serves the query heads of one KV head; with an F16
 * cache an AVX2 kernel reads K/V in place (4 scores per reduction,
 * vectorised exp, V summed 8 dimensions at a time), for prefill and
 * decode alike, so a prompt and the same tokens one by one give the same
 * bits.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <pthread.h>
#include <unistd.h>

#include "llama.h"
#include "sampler.h"

static double mm_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ---- allocation accounting -------------------------------------------- */

/*
 * Buffers of MM_LLAMA_MAP_MIN bytes or more (the KV cache, activations
 * for n_batch rows, the prefill K/V staging) are anonymous mappings: zero
 * pages that become resident only when written. Zeroing them with memset
 * made the whole cache resident at load (94 MB for SmolLM2 at the default
 * 4096-token context) whatever the context in use. Smaller ones come from
 * aligned_alloc and are zeroed.
 */
#define MM_LLAMA_MAP_MIN (64u << 10)

static void *mm_llama_alloc(struct mmhal_model *m, size_t bytes)
{
	size_t sz = (bytes + 63) & ~(size_t)63;
	void *p;

	if (!sz)
		sz = 64;
	if (sz >= MM_LLAMA_MAP_MIN && m->nmap < MM_LLAMA_MAX_MAPS) {
		p = mmap(NULL, sz, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return NULL;
		m->maps[m->nmap].p = p;
		m->maps[m->nmap++].bytes = sz;
	} else {
		p = aligned_alloc(64, sz);
		if (!p)
			return NULL;
		memset(p, 0, sz);
	}
	m->st.alloc_bytes += sz;
	if (m->st.alloc_bytes > m->st.alloc_peak_bytes)
		m->st.alloc_peak_bytes = m->st.alloc_bytes;
	return p;
}

static void mm_llama_free(struct mmhal_model *m, void *p)
{
	for (int i = 0; p && i < m->nmap; i++)
		if (m->maps[i].p == p) {
			munmap(p, m->maps[i].bytes);
			m->maps[i] = m->maps[--m->nmap];
			return;
		}
	free(p);
}

/* ---- loading ---------------------------------------------------------- */

MMHAL_API struct mmhal_model_params mmhal_model_default_params(void)
{
	struct mmhal_model_params p = {
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
	*out = mm_llama_alloc(m, n * sizeof(float));
	if (!*out)
		return -ENOMEM;
	mm_dequantize_row(w.t, w.d, *out, n);
	return 0;
}

static int mm_llama_read_file(const char *path, void **buf, size_t *size)
{
	struct stat sb;
	size_t off = 0, cap;
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret = 0;
	uint8_t *p;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &sb) < 0) {
		ret = -errno;
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

/* The matrices of a layer: blk.N.<name>.weight and its field. */
#define MM_LAYER_MATS 7
static const struct {
	const char *name;
	size_t off;
} mm_layer_mats[MM_LAYER_MATS] = {
	{ "attn_q", offsetof(struct mm_llama_layer, q) },
	{ "attn_k", offsetof(struct mm_llama_layer, k) },
	{ "attn_v", offsetof(struct mm_llama_layer, v) },
	{ "attn_output", offsetof(struct mm_llama_layer, o) },
	{ "ffn_gate", offsetof(struct mm_llama_layer, gate) },
	{ "ffn_up", offsetof(struct mm_llama_layer, up) },
	{ "ffn_down", offsetof(struct mm_llama_layer, down) },
};

static struct mm_llama_w *mm_layer_mat(struct mm_llama_layer *L, int i)
{
	return (struct mm_llama_w *)((char *)L + mm_layer_mats[i].off);
}

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
	m->layers = mm_llama_alloc(m, hp->n_layer * sizeof(*m->layers));
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
				 mm_layer_mats[i].name);
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
	in->n_ctx = m->n_ctx;
	in->n_ctx_train = hp->n_ctx_train;
	in->n_threads = m->n_threads;
	in->kv_type = m->kv_type;
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
	in->kv_bytes = m->st.kv_bytes;
	in->repacked_bytes = m->repacked_bytes;
	snprintf(in->kernels, sizeof(in->kernels), "%s",
		 mm_ctx_kernels(m->ctx));
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
static int mm_llama_repack(struct mmhal_model *m, int mapped, char *err,
			   size_t errlen)
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
				mm_layer_mat(&m->layers[l], i) : &m->output;
			const enum mm_type to = mm_repack_type(m->ctx, w->t,
							       w->ne1, w->ne0);

			if (to == w->t)
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
	mm_parallel_for(m->ctx, n, mm_llama_repack_fn, &j);
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
				       m->output.d == m->tok_embd.d ? "token_embd" :
				       "output", strerror(-ret));
			else
				mm_errf(0, err, errlen, "repacking blk.%d.%s.weight: %s",
				       it->layer, mm_layer_mats[it->which].name,
				       strerror(-ret));
			goto out;
		}
		it->w->t = it->to;
		if (it->w == &m->output && m->output.d == m->tok_embd.d)
			m->tok_embd.t = it->to;	/* the same bytes */
		m->repacked_bytes += it->w->rs * it->w->ne1;
	}
out:
	free(j.it);
	return ret;
}

static pthread_once_t mm_vec_once = PTHREAD_ONCE_INIT;
static void mm_vec_init(void);

MMHAL_API int mmhal_model_load(const char *path,
			       const struct mmhal_model_params *params,
			       struct mmhal_model **out, char *err,
			       size_t errlen)
{
	struct mmhal_model_params p = params ? *params :
		mmhal_model_default_params();
	double t0 = mm_now_ms();
	struct mmhal_model *m;
	char tokerr[128];
	size_t n = 0, nb;
	int ret;

	if (err && errlen)
		err[0] = 0;
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
	pthread_once(&mm_vec_once, mm_vec_init);
	if (p.use_mmap) {
		ret = mm_gguf_open(path, &m->g, err, errlen);
	} else {
		ret = mm_llama_read_file(path, &m->filebuf, &n);
		if (ret)
			mm_errf(0, err, errlen, "%s: %s", path, strerror(-ret));
		else
			ret = mm_gguf_open_mem(m->filebuf, n, &m->g, err,
					       errlen);
	}
	if (ret)
		goto fail;
	ret = mm_llama_hparams(m, err, errlen);
	if (!ret)
		ret = mm_llama_weights(m, err, errlen);
	if (ret)
		goto fail;
	if (mm_tok_load(m->g, &m->tok, tokerr, sizeof(tokerr)))
		m->tok = NULL;	/* token ids still work */

	m->n_ctx = p.n_ctx > 0 ? p.n_ctx :
		(m->hp.n_ctx_train < 4096 ? m->hp.n_ctx_train : 4096);
	if (m->n_ctx > (1 << 20)) {
		mm_errf(0, err, errlen, "n_ctx %d too large", m->n_ctx);
		ret = -EINVAL;
		goto fail;
	}
	m->n_batch = p.n_batch > 0 ? p.n_batch : 512;
	if (m->n_batch > m->n_ctx)
		m->n_batch = m->n_ctx;
	m->kv_type = p.kv_type;
	m->kv_dim = m->hp.n_head_kv * m->hp.head_dim;
	if (m->kv_type == MMHAL_KV_Q8_0 && m->hp.head_dim % MM_QK) {
		mm_errf(0, err, errlen,
		       "kv_type Q8_0 needs a head dimension multiple of 32 (%d)",
		       m->hp.head_dim);
		ret = -ENOTSUP;
		goto fail;
	}
	ret = mm_ctx_create(p.n_threads, &m->ctx);
	if (ret) {
		mm_errf(0, err, errlen, "creating %d threads: %s", p.n_threads,
		       strerror(-ret));
		goto fail;
	}
	m->n_threads = mm_ctx_threads(m->ctx);
	if (p.repack) {
		ret = mm_llama_repack(m, p.use_mmap, err, errlen);
		if (ret)
			goto fail;
	}

	/* KV cache */
	m->kv_rs = mm_row_bytes((enum mm_type)m->kv_type, m->hp.head_dim);
	nb = m->kv_rs * (size_t)m->n_ctx * m->hp.n_layer * m->hp.n_head_kv;
	m->kv_k = mm_llama_alloc(m, nb);
	m->kv_v = mm_llama_alloc(m, nb);
	m->st.kv_bytes = 2 * nb;
	m->tokens = mm_llama_alloc(m, m->n_ctx * sizeof(int32_t));

	/* activations */
	{
		size_t B = m->n_batch, e = m->hp.n_embd, f = m->hp.n_ff;
		size_t qd = (size_t)m->hp.n_head * m->hp.head_dim;

		m->x = mm_llama_alloc(m, B * e * sizeof(float));
		m->xn = mm_llama_alloc(m, B * (e > qd ? e : qd) * sizeof(float));
		m->q = mm_llama_alloc(m, B * qd * sizeof(float));
		m->k = mm_llama_alloc(m, B * m->kv_dim * sizeof(float));
		m->v = mm_llama_alloc(m, B * m->kv_dim * sizeof(float));
		m->att = mm_llama_alloc(m, B * qd * sizeof(float));
		m->gate = mm_llama_alloc(m, B * f * sizeof(float));
		m->up = mm_llama_alloc(m, B * f * sizeof(float));
		m->logits = mm_llama_alloc(m, m->hp.n_vocab * sizeof(float));
		m->rope_cs = mm_llama_alloc(m, B * m->hp.n_rot * sizeof(float));
		/* per thread: grp score rows of n_ctx, one K/V row, grp
		 * maxima and sums */
		size_t grp = m->hp.n_head / m->hp.n_head_kv;

		m->scratch_stride = ((size_t)m->n_ctx * grp + m->hp.head_dim +
				     2 * grp + 15) & ~(size_t)15;
		m->kf = mm_llama_alloc(m, (size_t)m->n_ctx * m->kv_dim *
				       sizeof(float));
		m->vf = mm_llama_alloc(m, (size_t)m->n_ctx * m->kv_dim *
				       sizeof(float));
		m->scratch = mm_llama_alloc(m, m->scratch_stride *
					    m->n_threads * sizeof(float));
		m->aseg_max = 2 * m->n_threads;
		m->apart = mm_llama_alloc(m, (size_t)m->hp.n_head_kv *
					  m->aseg_max * grp *
					  (m->hp.head_dim + 2) * sizeof(float));
	}
	if (!m->inv_freq) {
		m->inv_freq = mm_llama_alloc(m, m->hp.n_rot / 2 * sizeof(float));
		if (m->inv_freq)
			for (int i = 0; i < m->hp.n_rot / 2; i++)
				m->inv_freq[i] = (float)pow(m->hp.rope_base,
					-2.0 * i / m->hp.n_rot);
	} else {
		/* rope_freqs: llama.cpp divides theta by the factor */
		for (int i = 0; i < m->hp.n_rot / 2; i++)
			m->inv_freq[i] = (float)(pow(m->hp.rope_base,
				-2.0 * i / m->hp.n_rot) / m->inv_freq[i]);
	}
	if (!m->kv_k || !m->kv_v || !m->tokens || !m->x || !m->xn || !m->q ||
	    !m->k || !m->v || !m->att || !m->gate || !m->up || !m->logits ||
	    !m->scratch || !m->inv_freq || !m->kf || !m->vf ||
	    !m->apart || !m->rope_cs) {
		mm_errf(0, err, errlen, "out of memory for the KV cache (%zu bytes) "
		       "and activations", 2 * nb);
		ret = -ENOMEM;
		goto fail;
	}
	mm_llama_fill_info(m);
	m->st.load_ms = mm_now_ms() - t0;
	m->st.file_bytes = m->info.file_bytes;
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
	if (m->layers)
		for (int l = 0; l < m->hp.n_layer; l++) {
			mm_llama_free(m, m->layers[l].attn_norm);
			mm_llama_free(m, m->layers[l].ffn_norm);
		}
	mm_llama_free(m, m->layers);
	mm_llama_free(m, m->output_norm);
	mm_llama_free(m, m->inv_freq);
	mm_llama_free(m, m->kv_k);
	mm_llama_free(m, m->kv_v);
	mm_llama_free(m, m->tokens);
	mm_llama_free(m, m->x);
	mm_llama_free(m, m->xn);
	mm_llama_free(m, m->q);
	mm_llama_free(m, m->k);
	mm_llama_free(m, m->v);
	mm_llama_free(m, m->att);
	mm_llama_free(m, m->gate);
	mm_llama_free(m, m->up);
	mm_llama_free(m, m->logits);
	mm_llama_free(m, m->rope_cs);
	mm_llama_free(m, m->scratch);
	mm_llama_free(m, m->apart);
	mm_llama_free(m, m->kf);
	mm_llama_free(m, m->vf);
	mm_ctx_destroy(m->ctx);
	mm_tok_free(m->tok);
	mm_gguf_close(m->g);
	free(m->filebuf);
	free(m);
}

MMHAL_API const char *mmhal_model_error(const struct mmhal_model *m)
{
	return m ? m->err : "";
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

/* ---- tokenizer passthrough -------------------------------------------- */

MMHAL_API int mmhal_model_tokenize(const struct mmhal_model *m,
				   const char *text, size_t len, int add_bos,
				   int parse_special, int32_t *ids, int max,
				   int *n_out)
{
	if (n_out)
		*n_out = 0;
	if (!m || !text || !n_out || max < 0 || (max && !ids))
		return -EINVAL;
	if (!m->tok)
		return -ENOTSUP;
	return mm_tok_encode(m->tok, text, len, add_bos, parse_special, ids,
			     max, n_out);
}

MMHAL_API int mmhal_model_detokenize(const struct mmhal_model *m,
				     const int32_t *ids, int n, char *buf,
				     size_t cap, size_t *len_out)
{
	if (len_out)
		*len_out = 0;
	if (!m || n < 0 || (n && !ids) || (cap && !buf))
		return -EINVAL;
	if (!m->tok)
		return -ENOTSUP;
	return mm_tok_decode(m->tok, ids, n, buf, cap, len_out);
}

MMHAL_API int mmhal_model_chat_format(const struct mmhal_model *m,
				      const struct mmhal_chat_msg *msgs,
				      int n, int add_gen, char *buf,
				      size_t cap, size_t *len_out)
{
	struct mm_chat_msg tmp[64] = { { 0 } }, *cm = tmp;
	int ret;

	if (len_out)
		*len_out = 0;
	if (!m || n < 0 || (n && !msgs) || (cap && !buf))
		return -EINVAL;
	if (!m->tok)
		return -ENOTSUP;
	if (n > 64) {
		cm = malloc(n * sizeof(*cm));
		if (!cm)
			return -ENOMEM;
	}
	for (int i = 0; i < n; i++) {
		cm[i].role = msgs[i].role;
		cm[i].content = msgs[i].content;
	}
	ret = mm_tok_chat_format(m->tok, cm, n, add_gen, buf, cap, len_out);
	if (cm != tmp)
		free(cm);
	return ret;
}

MMHAL_API int32_t mmhal_model_token_bos(const struct mmhal_model *m)
{
	return m && m->tok ? mm_tok_bos(m->tok) : -1;
}

MMHAL_API int32_t mmhal_model_token_eos(const struct mmhal_model *m)
{
	return m && m->tok ? mm_tok_eos(m->tok) : -1;
}

MMHAL_API int mmhal_model_token_is_eog(const struct mmhal_model *m,
				       int32_t token)
{
	return m && m->tok ? mm_tok_is_eog(m->tok, token) : 0;
}

/* ---- decoder ---------------------------------------------------------- */

static void mm_rmsnorm(const float *x, const float *w, float *y, int n,
		       float eps)
{
	/* 8 partial sums: one chain of dependent double adds took 0.8 us
	 * at n = 576, 8 take 0.4 (SSE2) */
	double ss[8] = { 0 }, t;
	float s;
	int i;

	for (i = 0; i + 8 <= n; i += 8)
		for (int j = 0; j < 8; j++)
			ss[j] += (double)x[i + j] * x[i + j];
	t = ((ss[0] + ss[4]) + (ss[1] + ss[5])) +
	    ((ss[2] + ss[6]) + (ss[3] + ss[7]));
	for (; i < n; i++)
		t += (double)x[i] * x[i];
	s = (float)(1.0 / sqrt(t / n + eps));
	for (i = 0; i < n; i++)
		y[i] = x[i] * s * w[i];
}

/* Rotates adjacent pairs of the first n_rot elements of each head. */
static void mm_rope(const struct mmhal_model *m, float *x, int n_heads,
		    const float *cs)
{
	const int hd = m->hp.head_dim;

	for (int i = 0; i < m->hp.n_rot / 2; i++) {
		const float c = cs[2 * i], s = cs[2 * i + 1];

		for (int h = 0; h < n_heads; h++) {
			float *p = x + (size_t)h * hd + 2 * i;
			float a = p[0], b = p[1];

			p[0] = a * c - b * s;
			p[1] = a * s + b * c;
		}
	}
}

static void mm_proj(struct mmhal_model *m, const struct mm_llama_w *w,
		    const float *X, float *Y, int n)
{
	if (n == 1)
		mm_matvec(m->ctx, w->t, w->d, X, Y, w->ne1, w->ne0);
	else
		mm_matmul(m->ctx, w->t, w->d, X, Y, w->ne1, w->ne0, n);
}

/*
 * Vector helpers: AVX2/FMA/F16C versions chosen at run time on x86
 * (this file is built without ISA flags), portable loops elsewhere.
 */
static float mm_dot_c(const float *a, const float *b, int n)
{
	float s[8] = { 0 };
	int i;

	for (i = 0; i + 8 <= n; i += 8)
		for (int k = 0; k < 8; k++)
			s[k] += a[i + k] * b[i + k];
	for (; i < n; i++)
		s[0] += a[i] * b[i];
	return ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]));
}

static void mm_axpy_c(float *y, float a, const float *x, int n)
{
	for (int i = 0; i < n; i++)
		y[i] += a * x[i];
}

static void mm_f16_row_c(const void *src, float *dst, int n)
{
	mm_dequantize_row(MM_TYPE_F16, src, dst, n);
}

/* g[i] = silu(g[i]) * u[i] */
static void mm_silu_mul_c(float *g, const float *u, int n)
{
	for (int i = 0; i < n; i++)
		g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

/* decode attention: K rows prefetched this far ahead (see below) */
#define MM_ATTN_PF 16

/*
 * The end of a head's softmax in the attention kernels: exp of the scores
 * [u, npos) the SIMD loop left, then the factor that scales the V sums:
 * 1 / sum, or for a segment (st: its max and sum of exp, merged later) 1.
 */
static inline float mm_attn_finish(float *sg, int u, int npos, float mx,
				   float sum, float *st)
{
	for (; u < npos; u++) {
		sg[u] = expf(sg[u] - mx);
		sum += sg[u];
	}
	if (st) {
		st[0] = mx;
		st[1] = sum;
		return 1.0f;
	}
	return 1.0f / sum;
}

/*
 * mm_attn_h_<isa>(): attention of grp query heads over npos F16 K/V rows
 * of one KV head, in groups of up to 3 heads (hg: that ISA's
 * mm_attn_hg_<isa>(), a constant group size each so that each size gets
 * its own code). hd is a multiple of 8. sc: grp rows of scs floats. With
 * stats, o is left unnormalized and stats gets each query head's (max,
 * sum of exp).
 */
#define MM_DEF_ATTN_H(name, hg)						\
static void name(const float *q, int grp, int hd, const uint8_t *k,	\
		 const uint8_t *v, size_t rs, int npos, float scale,	\
		 float *sc, size_t scs, float *o, float *stats)		\
{									\
	for (int u = 0; u < npos && u < MM_ATTN_PF; u++)		\
		for (int c = 0; c < hd * 2; c += 64)			\
			__builtin_prefetch(k + (size_t)u * rs + c, 0, 3); \
	for (int g = 0, n; g < grp; g += n) {				\
		const size_t go = (size_t)g * hd;			\
		float *st = stats ? stats + 2 * g : NULL;		\
									\
		n = grp - g >= 3 ? 3 : grp - g;				\
		if (n == 3)						\
			hg(3, q + go, hd, k, v, rs, npos, scale,	\
			   sc + g * scs, scs, o + go, st, g == 0);	\
		else if (n == 2)					\
			hg(2, q + go, hd, k, v, rs, npos, scale,	\
			   sc + g * scs, scs, o + go, st, g == 0);	\
		else							\
			hg(1, q + go, hd, k, v, rs, npos, scale,	\
			   sc + g * scs, scs, o + go, st, g == 0);	\
	}								\
}

#if defined(__x86_64__)
#include <immintrin.h>

__attribute__((target("avx2,fma")))
static float mm_dot_avx2(const float *a, const float *b, int n)
{
	__m256 s0 = _mm256_setzero_ps(), s1 = s0;
	__m128 h;
	int i;
	float r;

	for (i = 0; i + 16 <= n; i += 16) {
		s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i),
				     _mm256_loadu_ps(b + i), s0);
		s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8),
				     _mm256_loadu_ps(b + i + 8), s1);
	}
	for (; i + 8 <= n; i += 8)
		s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i),
				     _mm256_loadu_ps(b + i), s0);
	s0 = _mm256_add_ps(s0, s1);
	h = _mm_add_ps(_mm256_castps256_ps128(s0),
		       _mm256_extractf128_ps(s0, 1));
	h = _mm_add_ps(h, _mm_movehl_ps(h, h));
	h = _mm_add_ss(h, _mm_movehdup_ps(h));
	r = _mm_cvtss_f32(h);
	for (; i < n; i++)
		r += a[i] * b[i];
	return r;
}

__attribute__((target("avx2,fma")))
static void mm_axpy_avx2(float *y, float a, const float *x, int n)
{
	__m256 va = _mm256_set1_ps(a);
	int i;

	for (i = 0; i + 8 <= n; i += 8)
		_mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i),
						       _mm256_loadu_ps(y + i)));
	for (; i < n; i++)
		y[i] += a * x[i];
}

__attribute__((target("avx2,f16c")))
static void mm_f16_row_f16c(const void *src, float *dst, int n)
{
	const uint16_t *h = src;
	int i;

	for (i = 0; i + 8 <= n; i += 8)
		_mm256_storeu_ps(dst + i, _mm256_cvtph_ps(
			_mm_loadu_si128((const __m128i *)(h + i))));
	for (; i < n; i++)
		dst[i] = mm_f16_to_f32(h[i]);
}


/* exp(x) on 8 lanes for x <= 0 (softmax): 2^n * p(r), |r| <= ln2/2,
 * degree-6 Taylor p (relative error < 2e-7); below -87 it flushes to 0. */
__attribute__((target("avx2,fma")))
static inline __m256 mm_exp_neg_avx2(__m256 x)
{
	const __m256 lo = _mm256_set1_ps(-87.0f);
	const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504f)),
					 _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	__m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145752f), x);
	__m256 p;

	r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.42860677e-6f), r);
	p = _mm256_set1_ps(1.0f / 720);
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
	p = _mm256_mul_ps(p, _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(
		_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23)));
	return _mm256_and_ps(p, _mm256_cmp_ps(x, lo, _CMP_GE_OQ));
}

/* g[i] = silu(g[i]) * u[i], silu(g) = g * sigmoid(g) with sigmoid from
 * e = exp(-|g|) <= 1: 1 / (1 + e) for g >= 0, e / (1 + e) below. */
__attribute__((target("avx2,fma")))
static void mm_silu_mul_avx2(float *g, const float *u, int n)
{
	const __m256 sign = _mm256_set1_ps(-0.0f), one = _mm256_set1_ps(1.0f);
	int i;

	for (i = 0; i + 8 <= n; i += 8) {
		const __m256 x = _mm256_loadu_ps(g + i);
		const __m256 e = mm_exp_neg_avx2(_mm256_or_ps(x, sign));
		const __m256 num = _mm256_blendv_ps(one, e, x);	/* x < 0: e */

		_mm256_storeu_ps(g + i, _mm256_mul_ps(_mm256_mul_ps(x,
			_mm256_div_ps(num, _mm256_add_ps(one, e))),
			_mm256_loadu_ps(u + i)));
	}
	mm_silu_mul_c(g + i, u + i, n - i);
}

/*
 * The cache rows of a head are hd * 2 bytes every rs bytes (rs = hd * 2:
 * contiguous, see mm_kv_at()), and in decode they come from DRAM (the
 * weights streamed since the last token evicted them); without help the
 * stream starts each call with latency-bound misses. While the first
 * query head scores rows t..t+3, this fetches the K rows MM_ATTN_PF
 * further and the V rows t..t+3 (read after the softmax).
 */
/* always inlined: as an out-of-line candidate, GCC's pure-const pass finds
 * no effect in a function of prefetches and deletes its calls */
static inline __attribute__((always_inline)) void
mm_attn_prefetch(const uint8_t *k, const uint8_t *v, size_t rs, int hd, int t,
		 int npos)
{
	for (int u = t; u < t + 4; u++) {
		for (int c = 0; c < hd * 2; c += 64) {
			if (u + MM_ATTN_PF < npos)
				_mm_prefetch((const char *)k +
					     (size_t)(u + MM_ATTN_PF) * rs + c,
					     _MM_HINT_T0);
			_mm_prefetch((const char *)v + (size_t)u * rs + c,
				     _MM_HINT_T1);
		}
	}
}

/*
 * Attention of G <= 3 query heads that share one KV head, over npos F16
 * K/V rows (rs bytes apart, read in place). Each K and V chunk of 8 is
 * converted once for all G heads: vcvtph2ps (one per 2 cycles on Zen 3)
 * was the bound when each head converted the rows again. Each head keeps
 * its sums in the order of the one-head form (scores: 4 rows a step, 8
 * lanes over the dimensions, one horizontal reduction per 4 rows; V:
 * even and odd rows apart per 8 dimensions), so G does not change the
 * bits. pf: also prefetch (the first group of a call).
 */
__attribute__((target("avx2,fma,f16c")))
static inline __attribute__((always_inline)) void
mm_attn_hg_avx2(const int G, const float *q, int hd, const uint8_t *k,
		const uint8_t *v, size_t rs, int npos, float scale, float *sc,
		size_t scs, float *o, float *stats, int pf)
{
/* 8 f16 values of cache row t of p (k or v) from dimension c, as f32 */
#define MM_F16X8(p, t, c) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)	\
		((p) + (size_t)(t) * rs + (size_t)(c) * 2)))
	__m128 mx4[3];
	float mx[3], sum[3];
	int t = 0;

#pragma GCC unroll 3
	for (int g = 0; g < G; g++)
		mx4[g] = _mm_set1_ps(-INFINITY);
	for (; t + 4 <= npos; t += 4) {
		__m256 a[3][4];	/* scalarised by GCC: no stack in the loop */

		if (pf)
			mm_attn_prefetch(k, v, rs, hd, t, npos);
#pragma GCC unroll 3
		for (int g = 0; g < G; g++)
#pragma GCC unroll 4
			for (int r = 0; r < 4; r++)
				a[g][r] = _mm256_setzero_ps();
		for (int c = 0; c < hd; c += 8) {
#pragma GCC unroll 4
			for (int r = 0; r < 4; r++) {
				const __m256 kv = MM_F16X8(k, t + r, c);

#pragma GCC unroll 3
				for (int g = 0; g < G; g++)
					a[g][r] = _mm256_fmadd_ps(
						_mm256_loadu_ps(q + (size_t)g * hd + c),
						kv, a[g][r]);
			}
		}
#pragma GCC unroll 3
		for (int g = 0; g < G; g++) {
			const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a[g][0], a[g][1]),
							_mm256_hadd_ps(a[g][2], a[g][3]));
			const __m128 s4 = _mm_mul_ps(_mm_add_ps(_mm256_castps256_ps128(h),
								_mm256_extractf128_ps(h, 1)),
						     _mm_set1_ps(scale));

			_mm_storeu_ps(sc + (size_t)g * scs + t, s4);
			mx4[g] = _mm_max_ps(mx4[g], s4);
		}
	}
	for (int g = 0; g < G; g++) {
		const float *qg = q + (size_t)g * hd;
		float *sg = sc + (size_t)g * scs;
		__m128 m4 = _mm_max_ps(mx4[g], _mm_movehl_ps(mx4[g], mx4[g]));
		__m256 sum8 = _mm256_setzero_ps();
		int u;

		m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
		mx[g] = t > 0 ? _mm_cvtss_f32(m4) : -INFINITY;
		for (u = t; u < npos; u++) {	/* the last npos % 4 rows */
			__m256 a0 = _mm256_setzero_ps();
			__m128 r;

			for (int c = 0; c < hd; c += 8)
				a0 = _mm256_fmadd_ps(_mm256_loadu_ps(qg + c),
						     MM_F16X8(k, u, c), a0);
			r = _mm_add_ps(_mm256_castps256_ps128(a0), _mm256_extractf128_ps(a0, 1));
			r = _mm_add_ps(r, _mm_movehl_ps(r, r));
			r = _mm_add_ss(r, _mm_movehdup_ps(r));
			sg[u] = _mm_cvtss_f32(r) * scale;
			mx[g] = sg[u] > mx[g] ? sg[u] : mx[g];
		}
		/* softmax: sg = exp(sg - mx), normalised below */
		for (u = 0; u + 8 <= npos; u += 8) {
			const __m256 e = mm_exp_neg_avx2(_mm256_sub_ps(_mm256_loadu_ps(sg + u),
								       _mm256_set1_ps(mx[g])));

			_mm256_storeu_ps(sg + u, e);
			sum8 = _mm256_add_ps(sum8, e);
		}
		{
			float s8[8];

			_mm256_storeu_ps(s8, sum8);
			sum[g] = ((s8[0] + s8[4]) + (s8[1] + s8[5])) +
				 ((s8[2] + s8[6]) + (s8[3] + s8[7]));
		}
		sum[g] = mm_attn_finish(sg, u, npos, mx[g], sum[g],
					stats ? stats + 2 * g : NULL);
	}
	/*
	 * V: 16 dimensions (8 at the end when hd % 16 == 8) x 2 rows a
	 * step, even rows summed in a, odd ones in b: 4 * G independent
	 * FMA chains, no stores in the loop.
	 */
	for (int c = 0; c < hd; c += 16) {
		const int two = c + 16 <= hd;
		__m256 a[3][2], b[3][2];

#pragma GCC unroll 3
		for (int g = 0; g < G; g++) {
			a[g][0] = _mm256_setzero_ps();
			a[g][1] = a[g][0];
			b[g][0] = a[g][0];
			b[g][1] = a[g][0];
		}
		for (t = 0; t < npos; t += 2) {
			const __m256 v0 = MM_F16X8(v, t, c);
			const __m256 v1 = two ? MM_F16X8(v, t, c + 8) : v0;

#pragma GCC unroll 3
			for (int g = 0; g < G; g++) {
				const __m256 p = _mm256_set1_ps(sc[(size_t)g * scs + t]);

				a[g][0] = _mm256_fmadd_ps(p, v0, a[g][0]);
				a[g][1] = _mm256_fmadd_ps(p, v1, a[g][1]);
			}
			if (t + 1 == npos)
				break;
			const __m256 w0 = MM_F16X8(v, t + 1, c);
			const __m256 w1 = two ? MM_F16X8(v, t + 1, c + 8) : w0;

#pragma GCC unroll 3
			for (int g = 0; g < G; g++) {
				const __m256 p = _mm256_set1_ps(sc[(size_t)g * scs + t + 1]);

				b[g][0] = _mm256_fmadd_ps(p, w0, b[g][0]);
				b[g][1] = _mm256_fmadd_ps(p, w1, b[g][1]);
			}
		}
#pragma GCC unroll 3
		for (int g = 0; g < G; g++) {
			float *og = o + (size_t)g * hd + c;
			const __m256 s = _mm256_set1_ps(sum[g]);

			_mm256_storeu_ps(og, _mm256_mul_ps(_mm256_add_ps(a[g][0], b[g][0]), s));
			if (two)
				_mm256_storeu_ps(og + 8, _mm256_mul_ps(_mm256_add_ps(a[g][1],
										  b[g][1]), s));
		}
	}
#undef MM_F16X8
}

__attribute__((target("avx2,fma,f16c")))
MM_DEF_ATTN_H(mm_attn_h_avx2, mm_attn_hg_avx2)

/* a . b and y += a * x with b, x in f16 (the KV cache, read in place) */
__attribute__((target("avx2,fma,f16c")))
static float mm_dot_h_avx2(const float *a, const void *b, int n)
{
	const uint16_t *h = b;
	__m256 s0 = _mm256_setzero_ps(), s1 = s0;
	__m128 r4;
	int i;
	float r;

	for (i = 0; i + 16 <= n; i += 16) {
		s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_cvtph_ps(
			_mm_loadu_si128((const __m128i *)(h + i))), s0);
		s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_cvtph_ps(
			_mm_loadu_si128((const __m128i *)(h + i + 8))), s1);
	}
	for (; i + 8 <= n; i += 8)
		s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_cvtph_ps(
			_mm_loadu_si128((const __m128i *)(h + i))), s0);
	s0 = _mm256_add_ps(s0, s1);
	r4 = _mm_add_ps(_mm256_castps256_ps128(s0), _mm256_extractf128_ps(s0, 1));
	r4 = _mm_add_ps(r4, _mm_movehl_ps(r4, r4));
	r4 = _mm_add_ss(r4, _mm_movehdup_ps(r4));
	r = _mm_cvtss_f32(r4);
	for (; i < n; i++)
		r += a[i] * mm_f16_to_f32(h[i]);
	return r;
}

__attribute__((target("avx2,fma,f16c")))
static void mm_axpy_h_avx2(float *y, float a, const void *x, int n)
{
	const uint16_t *h = x;
	const __m256 va = _mm256_set1_ps(a);
	int i;

	for (i = 0; i + 8 <= n; i += 8)
		_mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_cvtph_ps(
			_mm_loadu_si128((const __m128i *)(h + i))),
			_mm256_loadu_ps(y + i)));
	for (; i < n; i++)
		y[i] += a * mm_f16_to_f32(h[i]);
}
#endif

#if defined(__aarch64__)
#include <arm_neon.h>

/*
 * arm64: the same helpers on 4 NEON lanes (NEON and the f16 conversions
 * are part of the base AArch64 ISA, so there is no run-time choice).
 * The portable loops converted each F16 cache value with a call.
 */

/* 4 f16 values at h as f32 (fcvtl) */
static inline float32x4_t mm_h4(const void *h)
{
	return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(h)));
}

/* element i of an f32 (f16 = 0) or f16 row, and 4 from i */
static inline float mm_ld1(const void *x, int i, const int f16)
{
	return f16 ? mm_f16_to_f32(((const uint16_t *)x)[i]) : ((const float *)x)[i];
}

static inline float32x4_t mm_ld4(const void *x, int i, const int f16)
{
	return f16 ? mm_h4((const uint16_t *)x + i) : vld1q_f32((const float *)x + i);
}

static inline __attribute__((always_inline)) float
mm_dot_neon_any(const float *a, const void *b, int n, const int f16)
{
	float32x4_t s0 = vdupq_n_f32(0), s1 = s0;
	int i;
	float r;

	for (i = 0; i + 8 <= n; i += 8) {
		s0 = vfmaq_f32(s0, vld1q_f32(a + i), mm_ld4(b, i, f16));
		s1 = vfmaq_f32(s1, vld1q_f32(a + i + 4), mm_ld4(b, i + 4, f16));
	}
	r = vaddvq_f32(vaddq_f32(s0, s1));
	for (; i < n; i++)
		r += a[i] * mm_ld1(b, i, f16);
	return r;
}

static inline __attribute__((always_inline)) void
mm_axpy_neon_any(float *y, float a, const void *x, int n, const int f16)
{
	int i;

	for (i = 0; i + 4 <= n; i += 4)
		vst1q_f32(y + i, vfmaq_n_f32(vld1q_f32(y + i), mm_ld4(x, i, f16), a));
	for (; i < n; i++)
		y[i] += a * mm_ld1(x, i, f16);
}

static float mm_dot_neon(const float *a, const float *b, int n)
{
	return mm_dot_neon_any(a, b, n, 0);
}

static float mm_dot_h_neon(const float *a, const void *b, int n)
{
	return mm_dot_neon_any(a, b, n, 1);
}

static void mm_axpy_neon(float *y, float a, const float *x, int n)
{
	mm_axpy_neon_any(y, a, x, n, 0);
}

static void mm_axpy_h_neon(float *y, float a, const void *x, int n)
{
	mm_axpy_neon_any(y, a, x, n, 1);
}

static void mm_f16_row_neon(const void *src, float *dst, int n)
{
	int i;

	for (i = 0; i + 4 <= n; i += 4)
		vst1q_f32(dst + i, mm_h4((const uint16_t *)src + i));
	for (; i < n; i++)
		dst[i] = mm_ld1(src, i, 1);
}

/* exp(x) on 4 lanes for x <= 0, as mm_exp_neg_avx2() */
static inline float32x4_t mm_exp_neg_neon(float32x4_t x)
{
	const float32x4_t n = vrndnq_f32(vmulq_n_f32(x, 1.44269504f));
	float32x4_t r = vfmsq_n_f32(x, n, 0.693145752f);
	float32x4_t p = vdupq_n_f32(1.0f / 720);
	int32x4_t e;

	r = vfmsq_n_f32(r, n, 1.42860677e-6f);
	p = vfmaq_f32(vdupq_n_f32(1.0f / 120), p, r);
	p = vfmaq_f32(vdupq_n_f32(1.0f / 24), p, r);
	p = vfmaq_f32(vdupq_n_f32(1.0f / 6), p, r);
	p = vfmaq_f32(vdupq_n_f32(0.5f), p, r);
	p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
	p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
	e = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23);
	p = vmulq_f32(p, vreinterpretq_f32_s32(e));
	return vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(p),
					       vcgeq_f32(x, vdupq_n_f32(-87.0f))));
}

/* as mm_silu_mul_avx2() */
static void mm_silu_mul_neon(float *g, const float *u, int n)
{
	const float32x4_t one = vdupq_n_f32(1.0f);
	int i;

	for (i = 0; i + 4 <= n; i += 4) {
		const float32x4_t x = vld1q_f32(g + i);
		const float32x4_t e = mm_exp_neg_neon(vnegq_f32(vabsq_f32(x)));
		const float32x4_t num = vbslq_f32(vcltq_f32(x, vdupq_n_f32(0)), e, one);

		vst1q_f32(g + i, vmulq_f32(vmulq_f32(x, vdivq_f32(num, vaddq_f32(one, e))),
					   vld1q_f32(u + i)));
	}
	mm_silu_mul_c(g + i, u + i, n - i);
}

/*
 * Attention of G <= 3 query heads that share one KV head over npos F16
 * rows, the plan of mm_attn_hg_avx2() on 4 lanes: each K and V chunk
 * converted once for the group; scores 4 rows a step with one pairwise
 * reduction per 4 rows; V 8 dimensions x 2 rows a step, even and odd rows
 * in separate sums. Each head's sums keep the one-head order, so G does
 * not change the bits. pf: prefetch K rows ahead and the V rows passed.
 */
static inline __attribute__((always_inline)) void
mm_attn_hg_neon(const int G, const float *q, int hd, const uint8_t *k,
		const uint8_t *v, size_t rs, int npos, float scale, float *sc,
		size_t scs, float *o, float *stats, int pf)
{
#define MM_H4(p, t, c) mm_h4((p) + (size_t)(t) * rs + (size_t)(c) * 2)
	float32x4_t mx4[3];
	float mx[3], sum[3];
	int t = 0;

#pragma GCC unroll 3
	for (int g = 0; g < G; g++)
		mx4[g] = vdupq_n_f32(-INFINITY);
	for (; t + 4 <= npos; t += 4) {
		float32x4_t a[3][4];

		if (pf)
			for (int u = t; u < t + 4; u++)
				for (int c = 0; c < hd * 2; c += 64) {
					if (u + MM_ATTN_PF < npos)
						__builtin_prefetch(k + (size_t)(u + MM_ATTN_PF) * rs + c, 0, 3);
					__builtin_prefetch(v + (size_t)u * rs + c, 0, 2);
				}
#pragma GCC unroll 3
		for (int g = 0; g < G; g++)
#pragma GCC unroll 4
			for (int r = 0; r < 4; r++)
				a[g][r] = vdupq_n_f32(0);
		for (int c = 0; c < hd; c += 4) {
#pragma GCC unroll 4
			for (int r = 0; r < 4; r++) {
				const float32x4_t kv = MM_H4(k, t + r, c);

#pragma GCC unroll 3
				for (int g = 0; g < G; g++)
					a[g][r] = vfmaq_f32(a[g][r], vld1q_f32(q + (size_t)g * hd + c), kv);
			}
		}
#pragma GCC unroll 3
		for (int g = 0; g < G; g++) {
			const float32x4_t s4 = vmulq_n_f32(vpaddq_f32(vpaddq_f32(a[g][0], a[g][1]),
								      vpaddq_f32(a[g][2], a[g][3])),
							   scale);

			vst1q_f32(sc + (size_t)g * scs + t, s4);
			mx4[g] = vmaxq_f32(mx4[g], s4);
		}
	}
	for (int g = 0; g < G; g++) {
		const float *qg = q + (size_t)g * hd;
		float *sg = sc + (size_t)g * scs;
		float32x4_t sum4 = vdupq_n_f32(0);
		int u;

		mx[g] = t > 0 ? vmaxvq_f32(mx4[g]) : -INFINITY;
		for (u = t; u < npos; u++) {	/* the last npos % 4 rows */
			float32x4_t a0 = vdupq_n_f32(0);

			for (int c = 0; c < hd; c += 4)
				a0 = vfmaq_f32(a0, vld1q_f32(qg + c), MM_H4(k, u, c));
			sg[u] = vaddvq_f32(a0) * scale;
			mx[g] = sg[u] > mx[g] ? sg[u] : mx[g];
		}
		/* softmax: sg = exp(sg - mx), normalised below */
		for (u = 0; u + 4 <= npos; u += 4) {
			const float32x4_t e = mm_exp_neg_neon(vsubq_f32(vld1q_f32(sg + u),
									vdupq_n_f32(mx[g])));

			vst1q_f32(sg + u, e);
			sum4 = vaddq_f32(sum4, e);
		}
		sum[g] = vaddvq_f32(sum4);
		sum[g] = mm_attn_finish(sg, u, npos, mx[g], sum[g],
					stats ? stats + 2 * g : NULL);
	}
	for (int c = 0; c < hd; c += 8) {
		float32x4_t a[3][2], b[3][2];

#pragma GCC unroll 3
		for (int g = 0; g < G; g++)
			a[g][0] = a[g][1] = b[g][0] = b[g][1] = vdupq_n_f32(0);
		for (t = 0; t < npos; t += 2) {
			const float32x4_t v0 = MM_H4(v, t, c), v1 = MM_H4(v, t, c + 4);

#pragma GCC unroll 3
			for (int g = 0; g < G; g++) {
				const float p = sc[(size_t)g * scs + t];

				a[g][0] = vfmaq_n_f32(a[g][0], v0, p);
				a[g][1] = vfmaq_n_f32(a[g][1], v1, p);
			}
			if (t + 1 == npos)
				break;
			const float32x4_t w0 = MM_H4(v, t + 1, c), w1 = MM_H4(v, t + 1, c + 4);

#pragma GCC unroll 3
			for (int g = 0; g < G; g++) {
				const float p = sc[(size_t)g * scs + t + 1];

				b[g][0] = vfmaq_n_f32(b[g][0], w0, p);
				b[g][1] = vfmaq_n_f32(b[g][1], w1, p);
			}
		}
#pragma GCC unroll 3
		for (int g = 0; g < G; g++) {
			float *og = o + (size_t)g * hd + c;

			vst1q_f32(og, vmulq_n_f32(vaddq_f32(a[g][0], b[g][0]), sum[g]));
			vst1q_f32(og + 4, vmulq_n_f32(vaddq_f32(a[g][1], b[g][1]), sum[g]));
		}
	}
#undef MM_H4
}

MM_DEF_ATTN_H(mm_attn_h_neon, mm_attn_hg_neon)
#endif

static float mm_dot_h_c(const float *a, const void *b, int n)
{
	const uint16_t *h = b;
	float s = 0;

	for (int i = 0; i < n; i++)
		s += a[i] * mm_f16_to_f32(h[i]);
	return s;
}

static void mm_axpy_h_c(float *y, float a, const void *x, int n)
{
	const uint16_t *h = x;

	for (int i = 0; i < n; i++)
		y[i] += a * mm_f16_to_f32(h[i]);
}

static float (*mm_dot)(const float *, const float *, int) = mm_dot_c;
static float (*mm_dot_h)(const float *, const void *, int) = mm_dot_h_c;
static void (*mm_attn_h)(const float *, int, int, const uint8_t *,
			 const uint8_t *, size_t, int, float, float *, size_t,
			 float *, float *);
static void (*mm_axpy_h)(float *, float, const void *, int) = mm_axpy_h_c;
static void (*mm_axpy)(float *, float, const float *, int) = mm_axpy_c;
static void (*mm_f16_row)(const void *, float *, int) = mm_f16_row_c;

static void (*mm_silu_mul)(float *, const float *, int) = mm_silu_mul_c;

static void mm_vec_init(void)
{
#if defined(__x86_64__)
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
		mm_dot = mm_dot_avx2;
		mm_axpy = mm_axpy_avx2;
		mm_silu_mul = mm_silu_mul_avx2;
		if (getenv("MMHAL_KERNELS") &&
		    !strcmp(getenv("MMHAL_KERNELS"), "scalar")) {
			mm_dot = mm_dot_c;
			mm_axpy = mm_axpy_c;
			mm_silu_mul = mm_silu_mul_c;
		}
	}
	if (__builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx2")) {
		mm_f16_row = mm_f16_row_f16c;
		if (mm_dot == mm_dot_avx2) {
			mm_dot_h = mm_dot_h_avx2;
			mm_axpy_h = mm_axpy_h_avx2;
			mm_attn_h = mm_attn_h_avx2;
		}
	}
#elif defined(__aarch64__)
	if (getenv("MMHAL_KERNELS") && !strcmp(getenv("MMHAL_KERNELS"), "scalar"))
		return;
	mm_dot = mm_dot_neon;
	mm_axpy = mm_axpy_neon;
	mm_silu_mul = mm_silu_mul_neon;
	mm_f16_row = mm_f16_row_neon;
	mm_dot_h = mm_dot_h_neon;
	mm_axpy_h = mm_axpy_h_neon;
	mm_attn_h = mm_attn_h_neon;
#endif
}

/*
 * Projections ws[0..nw) of the same input X (same row length), nw <=
 * MM_MV_MAX. Decode runs them as one job of mm_matvec_n(), whatever their
 * types: one thread-pool wake-up and one quantized x per format. Prefill
 * runs each run of consecutive weights of one type (attn_q/k/v,
 * ffn_gate/up) as one job of mm_matmul_n(), each writing its own output
 * (no merged output to copy apart). Each output row is the same dot
 * product either way.
 */
static void mm_proj_multi(struct mmhal_model *m,
			  const struct mm_llama_w *const *ws, float *const *Ys,
			  int nw, const float *X, int n)
{
	struct mm_mv mv[MM_MV_MAX];

	for (int a = 0; a < nw; a++)
		mv[a] = (struct mm_mv){ .t = ws[a]->t, .W = ws[a]->d,
					.y = Ys[a], .m = ws[a]->ne1 };
	if (n == 1) {		/* decode: any types, one job */
		mm_matvec_n(m->ctx, mv, nw, X, ws[0]->ne0);
		return;
	}
	for (int a = 0, b; a < nw; a = b) {
		for (b = a + 1; b < nw && mv[b].t == mv[a].t; b++)
			;
		mm_matmul_n(m->ctx, mv + a, b - a, X, ws[a]->ne0, n);
	}
}

struct mm_attn_job {
	struct mmhal_model *m;
	int layer, n;
	int staged;	/* K/V rows of the layer are in kf/vf */
};

/*
 * Byte offset of row pos of KV head kvh in layer's K (or V) cache. Each
 * head's rows are contiguous: decode attention streams one head per
 * unit, and with the heads interleaved in a row (kv_dim elements) it read
 * 128 of every 384 bytes (SmolLM2, F16), which cost 1.6-1.9x the time of
 * contiguous rows when the cache comes from memory (one thread, 1100
 * positions x 30 layers, 6 runs).
 */
static inline size_t mm_kv_at(const struct mmhal_model *m, int layer, int kvh,
			      int64_t pos)
{
	return (((size_t)layer * m->hp.n_head_kv + kvh) * m->n_ctx + pos) *
	       m->kv_rs;
}

/* A head's KV cache row (head_dim elements) to f32. */
static void mm_kv_row(const struct mmhal_model *m, const uint8_t *row,
		      float *dst)
{
	if (m->kv_type == MMHAL_KV_F16)
		mm_f16_row(row, dst, m->hp.head_dim);
	else
		mm_dequantize_row((enum mm_type)m->kv_type, row, dst,
				  m->hp.head_dim);
}

/* KV rows [begin, end) of a layer to f32 (kf, vf): prefill stages them
 * once, as n tokens then read every row. */
static void mm_kv_stage_task(int64_t begin, int64_t end, void *arg)
{
	struct mm_attn_job *j = arg;
	struct mmhal_model *m = j->m;
	const int hd = m->hp.head_dim;

	for (int64_t t = begin; t < end; t++)
		for (int h = 0; h < m->hp.n_head_kv; h++) {
			const size_t at = mm_kv_at(m, j->layer, h, t);

			mm_kv_row(m, m->kv_k + at, m->kf + t * m->kv_dim + h * hd);
			mm_kv_row(m, m->kv_v + at, m->vf + t * m->kv_dim + h * hd);
		}
}

/* Row t of K (v = 0) or V (v = 1), KV head kvh, as f32: from the staged
 * copy, or converted into buf straight from the cache (decode). */
static const float *mm_attn_row(const struct mm_attn_job *j, int v, int t,
				int kvh, float *buf)
{
	const struct mmhal_model *m = j->m;
	const int hd = m->hp.head_dim;

	if (j->staged)
		return (v ? m->vf : m->kf) + (size_t)t * m->kv_dim +
		       (size_t)kvh * hd;
	mm_kv_row(m, (v ? m->kv_v : m->kv_k) + mm_kv_at(m, j->layer, kvh, t),
		  buf);
	return buf;
}

/* F16 cache and a SIMD kernel: attention reads K/V in place, prefill and
 * decode alike (so both give the same bits). */
static int mm_attn_fast(const struct mmhal_model *m)
{
	return m->kv_type == MMHAL_KV_F16 && mm_attn_h &&
	       m->hp.head_dim % 8 == 0;
}

/*
 * (token, KV head) pairs [begin, end): causal softmax(q.K^T * scale) V for
 * the grp query heads that share the KV head, so each K and V row is
 * read (and, in decode, converted) once for all of them.
 */
static void mm_attn_task(int64_t begin, int64_t end, void *arg)
{
	struct mm_attn_job *j = arg;
	struct mmhal_model *m = j->m;
	const int hd = m->hp.head_dim, nh = m->hp.n_head, nkv = m->hp.n_head_kv;
	const int grp = nh / nkv, nctx = m->n_ctx;
	const float scale = 1.0f / sqrtf((float)hd);
	int slot = __atomic_fetch_add(&m->slot, 1, __ATOMIC_RELAXED);
	float *sc = m->scratch + (size_t)slot * m->scratch_stride;
	float *buf = sc + (size_t)grp * nctx;	/* hd floats */
	float *mx = buf + hd, *sum = mx + grp;	/* grp floats each */

	for (int64_t it = begin; it < end; it++) {
		const int i = (int)(it / nkv), kvh = (int)(it % nkv);
		const int pos = m->n_past + i;
		const float *q = m->q + (size_t)i * nh * hd + (size_t)kvh * grp * hd;
		float *o = m->att + (size_t)i * nh * hd + (size_t)kvh * grp * hd;
		/* decode with an F16 cache: K/V read in place, converted in
		 * the dot/axpy (h16 = this layer's K rows at head kvh) */
		const size_t hoff = mm_kv_at(m, j->layer, kvh, 0);
		const uint8_t *h16 = !j->staged && m->kv_type == MMHAL_KV_F16 ?
				     m->kv_k + hoff : NULL;	/* in place */
		const uint8_t *v16 = h16 ? m->kv_v + hoff : NULL;

		if (h16 && mm_attn_fast(m)) {
			mm_attn_h(q, grp, hd, h16, v16, m->kv_rs, pos + 1, scale,
				  sc, nctx, o, NULL);
			continue;
		}
		for (int g = 0; g < grp; g++)
			mx[g] = -INFINITY;
		for (int t = 0; t <= pos; t++) {
			const void *kh = h16 ? h16 + (size_t)t * m->kv_rs : NULL;
			const float *kr = kh ? NULL : mm_attn_row(j, 0, t, kvh, buf);

			for (int g = 0; g < grp; g++) {
				const float *qg = q + (size_t)g * hd;
				float s = (kh ? mm_dot_h(qg, kh, hd) :
					   mm_dot(qg, kr, hd)) * scale;

				sc[(size_t)g * nctx + t] = s;
				if (s > mx[g])
					mx[g] = s;
			}
		}
		for (int g = 0; g < grp; g++) {
			float *sg = sc + (size_t)g * nctx;

			sum[g] = 0;
			for (int t = 0; t <= pos; t++) {
				sg[t] = expf(sg[t] - mx[g]);
				sum[g] += sg[t];
			}
			sum[g] = 1.0f / sum[g];
		}
		memset(o, 0, (size_t)grp * hd * sizeof(float));
		for (int t = 0; t <= pos; t++) {
			const void *vh = v16 ? v16 + (size_t)t * m->kv_rs : NULL;
			const float *vr = vh ? NULL : mm_attn_row(j, 1, t, kvh, buf);

			for (int g = 0; g < grp; g++) {
				float *og = o + (size_t)g * hd;
				const float a = sc[(size_t)g * nctx + t] * sum[g];

				if (vh)
					mm_axpy_h(og, a, vh, hd);
				else
					mm_axpy(og, a, vr, hd);
			}
		}
	}
}

/*
 * Decode attention split over positions (flash-decoding): unit u is KV
 * head u / nseg over segment u % nseg of the cache rows; each writes its
 * grp unnormalized outputs and (max, sum) pairs to m->apart, and
 * mm_attn_merge() rescales them to a common max. With fewer KV heads than
 * a few per thread (SmolLM2: 3 heads on 2 threads), whole heads left a
 * thread idle for a third of the attention.
 */
struct mm_attn_seg_job {
	struct mmhal_model *m;
	int layer, nseg, npos;
};

static float *mm_attn_part(const struct mmhal_model *m, int64_t u)
{
	const int grp = m->hp.n_head / m->hp.n_head_kv;

	return m->apart + (size_t)u * grp * (m->hp.head_dim + 2);
}

static void mm_attn_seg_task(int64_t begin, int64_t end, void *arg)
{
	const struct mm_attn_seg_job *j = arg;
	struct mmhal_model *m = j->m;
	const int hd = m->hp.head_dim, grp = m->hp.n_head / m->hp.n_head_kv;
	int slot = __atomic_fetch_add(&m->slot, 1, __ATOMIC_RELAXED);
	float *sc = m->scratch + (size_t)slot * m->scratch_stride;

	for (int64_t u = begin; u < end; u++) {
		const int kvh = (int)(u / j->nseg), s = (int)(u % j->nseg);
		const int t0 = (int)((int64_t)j->npos * s / j->nseg);
		const int t1 = (int)((int64_t)j->npos * (s + 1) / j->nseg);
		const size_t off = mm_kv_at(m, j->layer, kvh, t0);
		float *o = mm_attn_part(m, u);

		mm_attn_h(m->q + (size_t)kvh * grp * hd, grp, hd,
			  m->kv_k + off, m->kv_v + off, m->kv_rs, t1 - t0,
			  1.0f / sqrtf((float)hd), sc, m->n_ctx, o,
			  o + (size_t)grp * hd);
	}
}

static void mm_attn_merge(struct mmhal_model *m, int nseg)
{
	const int hd = m->hp.head_dim, nkv = m->hp.n_head_kv;
	const int grp = m->hp.n_head / nkv;

	for (int kvh = 0; kvh < nkv; kvh++) {
		for (int g = 0; g < grp; g++) {
			float *o = m->att + ((size_t)kvh * grp + g) * hd;
			float mx = -INFINITY, sum = 0;

			for (int s = 0; s < nseg; s++) {
				const float *st = mm_attn_part(m, (int64_t)kvh * nseg + s) +
						  (size_t)grp * hd;

				mx = st[2 * g] > mx ? st[2 * g] : mx;
			}
			memset(o, 0, hd * sizeof(float));
			for (int s = 0; s < nseg; s++) {
				const float *p = mm_attn_part(m, (int64_t)kvh * nseg + s);
				const float *st = p + (size_t)grp * hd;
				const float f = expf(st[2 * g] - mx);

				sum += st[2 * g + 1] * f;
				mm_axpy(o, f, p + (size_t)g * hd, hd);
			}
			for (int c = 0; c < hd; c++)
				o[c] /= sum;
		}
	}
}

/* Segments per KV head for one decode step over npos rows: enough units
 * for two per thread, none shorter than MM_ATTN_SEG_MIN rows; 1 = whole
 * heads. */
#define MM_ATTN_SEG_MIN 16
static int mm_attn_nseg(const struct mmhal_model *m, int npos)
{
	const int nkv = m->hp.n_head_kv;
	int nseg = (2 * m->n_threads + nkv - 1) / nkv;

	nseg = nseg < m->aseg_max ? nseg : m->aseg_max;
	nseg = nseg < npos / MM_ATTN_SEG_MIN ? nseg : npos / MM_ATTN_SEG_MIN;
	return nseg > 1 && mm_attn_fast(m) ? nseg : 1;
}

/*
 * The row-wise steps between the matrix products, over token rows [b, e)
 * (prefill runs them on all threads; one row runs inline). Each row is
 * independent, so the bits do not depend on the split.
 */
struct mm_rows_job {
	struct mmhal_model *m;
	const float *norm_w;	/* add_norm: the RMSNorm weights */
	int add;		/* add_norm: x += xn first (the residual) */
	int layer;		/* rope_kv */
};

/* x += xn (if add), then xn = rmsnorm(x) * w */
static void mm_add_norm_task(int64_t b, int64_t e, void *arg)
{
	const struct mm_rows_job *j = arg;
	struct mmhal_model *m = j->m;
	const int ne = m->hp.n_embd;

	for (int64_t i = b; i < e; i++) {
		float *x = m->x + (size_t)i * ne, *xn = m->xn + (size_t)i * ne;

		if (j->add)
			for (int c = 0; c < ne; c++)
				x[c] += xn[c];
		mm_rmsnorm(x, j->norm_w, xn, ne, m->hp.eps);
	}
}

/* RoPE on q and k, then k and v into the layer's cache rows */
static void mm_rope_kv_task(int64_t b, int64_t e, void *arg)
{
	const struct mm_rows_job *j = arg;
	struct mmhal_model *m = j->m;
	const struct mm_llama_hp *hp = &m->hp;
	const int qd = hp->n_head * hp->head_dim, kvd = m->kv_dim;
	const int hd = hp->head_dim;

	for (int64_t i = b; i < e; i++) {
		const int64_t pos = m->n_past + i;
		const float *cs = m->rope_cs + (size_t)i * hp->n_rot;

		mm_rope(m, m->q + (size_t)i * qd, hp->n_head, cs);
		mm_rope(m, m->k + (size_t)i * kvd, hp->n_head_kv, cs);
		for (int h = 0; h < hp->n_head_kv; h++) {
			const size_t at = mm_kv_at(m, j->layer, h, pos);

			mm_quantize_row((enum mm_type)m->kv_type,
					m->k + (size_t)i * kvd + h * hd, m->kv_k + at, hd);
			mm_quantize_row((enum mm_type)m->kv_type,
					m->v + (size_t)i * kvd + h * hd, m->kv_v + at, hd);
		}
	}
}

/* gate = silu(gate) * up */
static void mm_silu_task(int64_t b, int64_t e, void *arg)
{
	const struct mm_rows_job *j = arg;
	struct mmhal_model *m = j->m;
	const size_t f = m->hp.n_ff;

	for (int64_t i = b; i < e; i++)
		mm_silu_mul(m->gate + i * f, m->up + i * f, (int)f);
}

/* n tokens (n <= n_batch) at positions n_past ... */
static void mm_llama_forward(struct mmhal_model *m, const int32_t *tok,
			     int n, float *logits)
{
	const struct mm_llama_hp *hp = &m->hp;
	const int e = hp->n_embd;
	const int64_t attn_work = (int64_t)n * hp->n_head *
		(m->n_past + n) * hp->head_dim;
	/* decode: attention over position segments (1: whole heads) */
	struct mm_attn_seg_job sj = {
		.m = m, .npos = m->n_past + 1,
		.nseg = n == 1 ? mm_attn_nseg(m, m->n_past + 1) : 1,
	};
	struct mm_rows_job rj = { .m = m };

	/* the rotations of this batch's positions, once for all layers */
	for (int i = 0; i < n; i++) {
		float *cs = m->rope_cs + (size_t)i * hp->n_rot;

		for (int r = 0; r < hp->n_rot / 2; r++) {
			const float th = (float)(m->n_past + i) * m->inv_freq[r];

			cs[2 * r] = cosf(th);
			cs[2 * r + 1] = sinf(th);
		}
	}
	for (int i = 0; i < n; i++)
		mm_layout_row(m->tok_embd.t, m->tok_embd.d, m->tok_embd.ne1, e,
			      tok[i], m->x + (size_t)i * e);
	for (int l = 0; l < hp->n_layer; l++) {
		const struct mm_llama_layer *L = &m->layers[l];
		struct mm_attn_job aj = { .m = m, .layer = l, .n = n };

		rj.layer = l;
		rj.norm_w = L->attn_norm;
		rj.add = l > 0;		/* the residual of layer l - 1's FFN */
		mm_parallel_for(m->ctx, n, mm_add_norm_task, &rj);
		{
			const struct mm_llama_w *ws[3] = { &L->q, &L->k, &L->v };
			float *ys[3] = { m->q, m->k, m->v };

			mm_proj_multi(m, ws, ys, 3, m->xn, n);
		}
		mm_parallel_for(m->ctx, n, mm_rope_kv_task, &rj);
		/* An F16 cache is read in place by the SIMD kernel. Else
		 * prefill stages the layer's K/V rows to f32 once (all n
		 * tokens read each) and decode converts each row where it is
		 * used. Tiny attention runs on this thread (no wake-up). */
		m->slot = 0;
		aj.staged = n > 1 && !mm_attn_fast(m);
		if (aj.staged)
			mm_parallel_for(m->ctx, m->n_past + n, mm_kv_stage_task,
					&aj);
		sj.layer = l;
		if (attn_work < (1 << 14)) {
			mm_attn_task(0, (int64_t)n * hp->n_head_kv, &aj);
		} else if (sj.nseg > 1) {
			mm_parallel_for(m->ctx, (int64_t)hp->n_head_kv * sj.nseg,
					mm_attn_seg_task, &sj);
			mm_attn_merge(m, sj.nseg);
		} else {
			mm_parallel_for(m->ctx, (int64_t)n * hp->n_head_kv,
					mm_attn_task, &aj);
		}
		mm_proj(m, &L->o, m->att, m->xn, n);
		rj.norm_w = L->ffn_norm;
		rj.add = 1;
		mm_parallel_for(m->ctx, n, mm_add_norm_task, &rj);
		{
			const struct mm_llama_w *ws[2] = { &L->gate, &L->up };
			float *ys[2] = { m->gate, m->up };

			mm_proj_multi(m, ws, ys, 2, m->xn, n);
		}
		mm_parallel_for(m->ctx, n, mm_silu_task, &rj);
		mm_proj(m, &L->down, m->gate, m->xn, n);
	}
	for (size_t i = 0; i < (size_t)n * e; i++)	/* the last residual */
		m->x[i] += m->xn[i];
	if (!logits)
		return;
	mm_rmsnorm(m->x + (size_t)(n - 1) * e, m->output_norm, m->xn, e,
		   hp->eps);
	mm_matvec(m->ctx, m->output.t, m->output.d, m->xn, logits,
		  m->output.ne1, m->output.ne0);
}

MMHAL_API int mmhal_model_eval(struct mmhal_model *m, const int32_t *tokens,
			       int n, float *logits_last)
{
	double t0;

	if (!m)
		return -EINVAL;
	if (n < 1 || !tokens) {
		snprintf(m->err, sizeof(m->err), "eval: %d tokens", n);
		return -EINVAL;
	}
	for (int i = 0; i < n; i++)
		if (tokens[i] < 0 || tokens[i] >= m->hp.n_vocab) {
			snprintf(m->err, sizeof(m->err),
				 "eval: token %d (index %d) outside the vocab (%d)",
				 tokens[i], i, m->hp.n_vocab);
			return -EINVAL;
		}
	if (n > m->n_ctx - m->n_past) {
		snprintf(m->err, sizeof(m->err),
			 "context full (ENOSPC): %d tokens in the cache + %d > n_ctx %d; reset or truncate",
			 m->n_past, n, m->n_ctx);
		return -ENOSPC;
	}
	t0 = mm_now_ms();
	for (int done = 0; done < n;) {
		int c = n - done < m->n_batch ? n - done : m->n_batch;
		int last = done + c == n;

		mm_llama_forward(m, tokens + done, c, last ? m->logits : NULL);
		memcpy(m->tokens + m->n_past, tokens + done, c * sizeof(int32_t));
		m->n_past += c;
		done += c;
	}
	m->has_logits = 1;
	if (logits_last)
		memcpy(logits_last, m->logits, m->hp.n_vocab * sizeof(float));
	t0 = mm_now_ms() - t0;
	if (n > 1) {
		m->st.prefill_ms += t0;
		m->st.prefill_tokens += n;
		m->st.prefill_calls++;
	} else {
		if (!m->st.decode_tokens || t0 < m->st.decode_min_ms)
			m->st.decode_min_ms = t0;
		if (t0 > m->st.decode_max_ms)
			m->st.decode_max_ms = t0;
		m->st.decode_ms += t0;
		m->st.decode_tokens++;
		m->st.decode_last_ms = t0;
	}
	m->err[0] = 0;
	return 0;
}

MMHAL_API const float *mmhal_model_logits(const struct mmhal_model *m)
{
	return m && m->has_logits ? m->logits : NULL;
}

MMHAL_API int mmhal_model_n_past(const struct mmhal_model *m)
{
	return m ? m->n_past : 0;
}

MMHAL_API const int32_t *mmhal_model_tokens(const struct mmhal_model *m)
{
	return m ? m->tokens : NULL;
}

MMHAL_API void mmhal_model_reset(struct mmhal_model *m)
{
	if (!m)
		return;
	m->n_past = 0;
	m->has_logits = 0;
}

MMHAL_API int mmhal_model_truncate(struct mmhal_model *m, int n_keep)
{
	if (!m || n_keep < 0 || n_keep > m->n_past)
		return -EINVAL;
	if (n_keep != m->n_past)
		m->has_logits = 0;
	m->n_past = n_keep;
	return 0;
}

/* ---- generate --------------------------------------------------------- */

MMHAL_API int mmhal_model_generate(struct mmhal_model *m,
				   const int32_t *prompt, int n_prompt,
				   int n_predict, struct mmhal_sampler *s,
				   unsigned flags, int32_t *out,
				   mmhal_token_cb cb, void *arg, int *n_out)
{
	int ret = 0, count = 0;

	if (n_out)
		*n_out = 0;
	if (!m || n_prompt < 0 || n_predict < 0 || (n_prompt && !prompt))
		return -EINVAL;
	if (n_prompt) {
		ret = mmhal_model_eval(m, prompt, n_prompt, NULL);
		if (ret)
			return ret;
	} else if (!m->has_logits) {
		snprintf(m->err, sizeof(m->err),
			 "generate: no prompt and no logits to sample from");
		return -EINVAL;
	}
	while (count < n_predict) {
		double t0 = mm_now_ms();
		int32_t tok;
		int stop = 0;

		tok = s ? mmhal_sampler_sample(s, m->logits, m->hp.n_vocab,
					       m->tokens, m->n_past) :
			mm_sampler_argmax(m->logits, m->hp.n_vocab);
		m->st.sample_ms += mm_now_ms() - t0;
		m->st.sample_tokens++;
		if (tok < 0) {
			ret = tok;
			break;
		}
		if (!(flags & MMHAL_GEN_IGNORE_EOG) && m->tok &&
		    mm_tok_is_eog(m->tok, tok))
			break;
		if (out)
			out[count] = tok;
		count++;
		if (cb) {
			char piece[256];
			size_t len = 0;

			if (!m->tok || mm_tok_piece(m->tok, tok, 0, piece,
						    sizeof(piece), &len))
				len = 0;
			if (len >= sizeof(piece))
				len = sizeof(piece) - 1;
			piece[len] = 0;
			stop = cb(tok, piece, len, arg);
		}
		ret = mmhal_model_eval(m, &tok, 1, NULL);
		if (ret || stop)
			break;
	}
	if (n_out)
		*n_out = count;
	return ret;
}

/* ---- accounting ------------------------------------------------------- */

MMHAL_API int mmhal_model_stats(const struct mmhal_model *m,
				struct mmhal_model_stats *out)
{
	struct rusage ru;

	if (!out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if (!m)
		return -EINVAL;
	*out = m->st;
	if (!getrusage(RUSAGE_SELF, &ru))
		out->peak_rss_bytes = (uint64_t)ru.ru_maxrss * 1024;
	out->n_past = m->n_past;
	out->n_ctx = m->n_ctx;
	return 0;
}

MMHAL_API void mmhal_model_stats_reset(struct mmhal_model *m)
{
	if (!m)
		return;
	m->st.prefill_ms = 0;
	m->st.prefill_tokens = 0;
	m->st.prefill_calls = 0;
	m->st.decode_ms = 0;
	m->st.decode_tokens = 0;
	m->st.decode_last_ms = 0;
	m->st.decode_min_ms = 0;
	m->st.decode_max_ms = 0;
	m->st.sample_ms = 0;
	m->st.sample_tokens = 0;
}

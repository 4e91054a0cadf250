// SPDX-License-Identifier: MIT
/*
 * llama_ctx.c - sessions of a loaded model (struct mmhal_ctx): parameters,
 * the KV cache and activation buffers, worker threads, stats; and the
 * allocation accounting that models and sessions share.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "common/mm_params.h"
#include "llama_int.h"
#include "quant_kern.h"

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

void *mm_llama_alloc(struct mm_llama_mem *mem, size_t bytes)
{
	size_t sz = (bytes + 63) & ~(size_t)63;
	void *p;

	if (!sz)
		sz = 64;
	if (sz >= MM_LLAMA_MAP_MIN && mem->nmap < MM_LLAMA_MAX_MAPS) {
		p = mmap(NULL, sz, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return NULL;
		mem->maps[mem->nmap].p = p;
		mem->maps[mem->nmap++].bytes = sz;
	} else {
		p = aligned_alloc(64, sz);
		if (!p)
			return NULL;
		memset(p, 0, sz);
	}
	mem->bytes += sz;
	if (mem->bytes > mem->peak)
		mem->peak = mem->bytes;
	return p;
}

void mm_llama_free(struct mm_llama_mem *mem, void *p)
{
	for (int i = 0; p && i < mem->nmap; i++)
		if (mem->maps[i].p == p) {
			munmap(p, mem->maps[i].bytes);
			mem->maps[i] = mem->maps[--mem->nmap];
			return;
		}
	free(p);
}

/* ---- parameters ------------------------------------------------------- */

#define MM_CTX_MAX_THREADS 1024

MMHAL_API struct mmhal_ctx_params mmhal_ctx_default_params(void)
{
	struct mmhal_ctx_params p = {
		.size = sizeof(struct mmhal_ctx_params),
		.n_ctx = 0,
		.n_batch = 512,
		.n_threads = 0,
		.kv_type = MMHAL_KV_F16,
		.tier_mode = MMHAL_TIER_TOP,
		.tier_threshold = { 0.92f, 0.75f },
	};

	return p;
}

#define MM_OFFSETOFEND(t, f) (offsetof(t, f) + sizeof(((t *)0)->f))

/*
 * The caller's params as this library's struct, by mm_params_in()'s rule
 * (size from n_ctx on); the size must not end inside a pointer either.
 */
static int mm_ctx_params_get(const struct mmhal_ctx_params *in,
			     struct mmhal_ctx_params *p, char *err,
			     size_t errlen)
{
	static const size_t ptr_end[] = {
		MM_OFFSETOFEND(struct mmhal_ctx_params, abort_cb),
		MM_OFFSETOFEND(struct mmhal_ctx_params, abort_arg),
	};
	size_t size;

	*p = mmhal_ctx_default_params();
	if (!in)
		return 0;
	size = in->size;
	for (size_t i = 0; i < sizeof(ptr_end) / sizeof(ptr_end[0]); i++)
		if (size > ptr_end[i] - sizeof(void *) && size < ptr_end[i])
			return mm_errf(-EINVAL, err, errlen,
				       "params.size %zu: ends inside a pointer field",
				       size);
	return MM_PARAMS_IN(p, in,
			    MM_OFFSETOFEND(struct mmhal_ctx_params, n_ctx),
			    "params", err, errlen);
}

/* ---- sessions --------------------------------------------------------- */

int mm_llama_ctx_new(const struct mmhal_model *m,
		     const struct mmhal_ctx_params *p, const char *kernels,
		     struct mmhal_ctx **out, char *err, size_t errlen)
{
	const struct mm_llama_hp *hp = &m->hp;
	struct mmhal_ctx *c;
	size_t nb;
	int ret, n_ctx;

	*out = NULL;
	if (p->kv_type != MMHAL_KV_F32 && p->kv_type != MMHAL_KV_F16 &&
	    p->kv_type != MMHAL_KV_Q8_0)
		return mm_errf(-EINVAL, err, errlen,
			       "kv_type %d not supported (F32 0, F16 1, Q8_0 8)",
			       p->kv_type);
	if (p->ctx_shift != 0 && p->ctx_shift != 1)
		return mm_errf(-EINVAL, err, errlen,
			       "ctx_shift %d: 0 (off) or 1", p->ctx_shift);
	if (p->tier_mode != MMHAL_TIER_TOP && p->tier_mode != MMHAL_TIER_FIXED &&
	    p->tier_mode != MMHAL_TIER_CONFIDENCE)
		return mm_errf(-EINVAL, err, errlen,
			       "tier_mode %d: TOP 0, FIXED 1 or CONFIDENCE 2",
			       p->tier_mode);
	if (p->tier_mode == MMHAL_TIER_FIXED &&
	    (p->tier < 0 || p->tier >= m->n_tiers))
		return mm_errf(-EINVAL, err, errlen,
			       "tier %d: the model has tiers 0 .. %d", p->tier,
			       m->n_tiers - 1);
	for (int i = 0; i < MMHAL_MAX_TIERS - 1; i++)
		if (!isfinite(p->tier_threshold[i]) || p->tier_threshold[i] < 0)
			return mm_errf(-EINVAL, err, errlen,
				       "tier_threshold[%d] %g: finite and >= 0",
				       i, p->tier_threshold[i]);
	if (p->kv_type == MMHAL_KV_Q8_0 && hp->head_dim % MM_QK)
		return mm_errf(-ENOTSUP, err, errlen,
			       "kv_type Q8_0 needs a head dimension multiple of 32 (%d)",
			       hp->head_dim);
	if (p->n_ctx > (1 << 20))
		return mm_errf(-EINVAL, err, errlen, "n_ctx %d too large",
			       p->n_ctx);
	if (p->n_threads > MM_CTX_MAX_THREADS)
		return mm_errf(-EINVAL, err, errlen,
			       "n_threads %d: at most %d", p->n_threads,
			       MM_CTX_MAX_THREADS);
	n_ctx = p->n_ctx > 0 ? p->n_ctx :
		(hp->n_ctx_train < 4096 ? hp->n_ctx_train : 4096);
	if (p->n_keep < 0 || p->n_keep >= n_ctx)
		return mm_errf(-EINVAL, err, errlen,
			       "n_keep %d: must be in 0 .. n_ctx - 1 (%d)",
			       p->n_keep, n_ctx - 1);
	c = calloc(1, sizeof(*c));
	if (!c)
		return mm_errf(-ENOMEM, err, errlen, "out of memory");
	c->model = m;
	c->abort_cb = p->abort_cb;
	c->abort_arg = p->abort_arg;
	c->n_ctx = n_ctx;
	c->n_batch = p->n_batch > 0 ? p->n_batch : 512;
	if (c->n_batch > c->n_ctx)
		c->n_batch = c->n_ctx;
	c->ctx_shift = p->ctx_shift;
	c->n_keep = p->n_keep;
	c->tier_mode = p->tier_mode;
	c->tier_fixed = p->tier;
	memcpy(c->tier_thr, p->tier_threshold, sizeof(c->tier_thr));
	c->kv_type = p->kv_type;
	c->kv_dim = hp->n_head_kv * hp->head_dim;
	ret = kernels ? mm_ctx_create_with(p->n_threads, kernels, &c->mm) :
		mm_ctx_create(p->n_threads, &c->mm);
	if (ret) {
		mm_errf(0, err, errlen, "creating %d threads: %s",
			p->n_threads, strerror(-ret));
		goto fail;
	}
	c->n_threads = mm_ctx_threads(c->mm);
	c->vec = mm_vec_select(mm_ctx_kernels(c->mm));

	/* KV cache */
	c->kv_rs = mm_row_bytes((enum mm_type)c->kv_type, hp->head_dim);
	nb = c->kv_rs * (size_t)c->n_ctx * hp->n_layer * hp->n_head_kv;
	c->kv_k = mm_llama_alloc(&c->mem, nb);
	c->kv_v = mm_llama_alloc(&c->mem, nb);
	c->st.kv_bytes = 2 * nb;
	c->tokens = mm_llama_alloc(&c->mem, c->n_ctx * sizeof(int32_t));
	c->ids = mm_llama_alloc(&c->mem, c->n_ctx * sizeof(uint64_t));

	/* activations */
	{
		size_t B = c->n_batch, e = hp->n_embd, f = hp->n_ff;
		size_t qd = (size_t)hp->n_head * hp->head_dim;
		/* per thread: grp score rows of n_ctx, one K/V row, grp
		 * maxima and sums */
		size_t grp = hp->n_head / hp->n_head_kv;

		c->x = mm_llama_alloc(&c->mem, B * e * sizeof(float));
		c->xn = mm_llama_alloc(&c->mem, B * (e > qd ? e : qd) *
				       sizeof(float));
		c->q = mm_llama_alloc(&c->mem, B * qd * sizeof(float));
		c->k = mm_llama_alloc(&c->mem, B * c->kv_dim * sizeof(float));
		c->v = mm_llama_alloc(&c->mem, B * c->kv_dim * sizeof(float));
		c->att = mm_llama_alloc(&c->mem, B * qd * sizeof(float));
		c->gate = mm_llama_alloc(&c->mem, B * f * sizeof(float));
		c->up = mm_llama_alloc(&c->mem, B * f * sizeof(float));
		c->logits = mm_llama_alloc(&c->mem, hp->n_vocab * sizeof(float));
		c->rope_cs = mm_llama_alloc(&c->mem, B * hp->n_rot *
					    sizeof(float));
		c->scratch_stride = ((size_t)c->n_ctx * grp + hp->head_dim +
				     2 * grp + 15) & ~(size_t)15;
		c->kf = mm_llama_alloc(&c->mem, (size_t)c->n_ctx * c->kv_dim *
				       sizeof(float));
		c->vf = mm_llama_alloc(&c->mem, (size_t)c->n_ctx * c->kv_dim *
				       sizeof(float));
		c->scratch = mm_llama_alloc(&c->mem, c->scratch_stride *
					    c->n_threads * sizeof(float));
		c->aseg_max = 2 * c->n_threads;
		c->apart = mm_llama_alloc(&c->mem, (size_t)hp->n_head_kv *
					  c->aseg_max * grp *
					  (hp->head_dim + 2) * sizeof(float));
	}
	if (!c->kv_k || !c->kv_v || !c->tokens || !c->ids || !c->x || !c->xn || !c->q ||
	    !c->k || !c->v || !c->att || !c->gate || !c->up || !c->logits ||
	    !c->scratch || !c->kf || !c->vf || !c->apart || !c->rope_cs) {
		mm_errf(0, err, errlen, "out of memory for the KV cache (%zu bytes) "
			"and activations", 2 * nb);
		ret = -ENOMEM;
		goto fail;
	}
	*out = c;
	return 0;
fail:
	mmhal_ctx_free(c);
	return ret;
}

MMHAL_API int mmhal_ctx_create(struct mmhal_model *m,
			       const struct mmhal_ctx_params *params,
			       struct mmhal_ctx **out, char *err,
			       size_t errlen)
{
	struct mmhal_ctx_params p;
	int ret;

	if (err && errlen)
		err[0] = 0;
	if (out)
		*out = NULL;
	if (!m || !out)
		return mm_errf(-EINVAL, err, errlen,
			       "model and out must not be NULL");
	ret = mm_ctx_params_get(params, &p, err, errlen);
	if (!ret)
		ret = mm_llama_ctx_new(m, &p, m->kernels, out, err, errlen);
	if (!ret) {
		/* mmhal_model_add_tier() is refused while sessions exist */
		__atomic_add_fetch(&m->n_sessions, 1, __ATOMIC_ACQ_REL);
		(*out)->counted = 1;
	}
	return ret;
}

MMHAL_API void mmhal_ctx_free(struct mmhal_ctx *c)
{
	if (!c)
		return;
	if (c->counted)
		__atomic_sub_fetch(&((struct mmhal_model *)c->model)->n_sessions,
				   1, __ATOMIC_ACQ_REL);
	mm_llama_free(&c->mem, c->kv_k);
	mm_llama_free(&c->mem, c->kv_v);
	mm_llama_free(&c->mem, c->tokens);
	mm_llama_free(&c->mem, c->ids);
	mm_llama_free(&c->mem, c->x);
	mm_llama_free(&c->mem, c->xn);
	mm_llama_free(&c->mem, c->q);
	mm_llama_free(&c->mem, c->k);
	mm_llama_free(&c->mem, c->v);
	mm_llama_free(&c->mem, c->att);
	mm_llama_free(&c->mem, c->gate);
	mm_llama_free(&c->mem, c->up);
	mm_llama_free(&c->mem, c->logits);
	mm_llama_free(&c->mem, c->rope_cs);
	mm_llama_free(&c->mem, c->scratch);
	mm_llama_free(&c->mem, c->apart);
	mm_llama_free(&c->mem, c->kf);
	mm_llama_free(&c->mem, c->vf);
	mm_ctx_destroy(c->mm);
	free(c);
}

MMHAL_API struct mmhal_ctx *mmhal_model_ctx(struct mmhal_model *m)
{
	return m ? m->ctx : NULL;
}

MMHAL_API const struct mmhal_model *mmhal_ctx_model(const struct mmhal_ctx *c)
{
	return c ? c->model : NULL;
}

MMHAL_API const char *mmhal_ctx_error(const struct mmhal_ctx *c)
{
	return c ? c->err : "";
}

/* ---- cache state ------------------------------------------------------ */

MMHAL_API const float *mmhal_ctx_logits(const struct mmhal_ctx *c)
{
	return c && c->has_logits ? c->logits : NULL;
}

MMHAL_API int mmhal_ctx_n_past(const struct mmhal_ctx *c)
{
	return c ? c->n_past : 0;
}

MMHAL_API const int32_t *mmhal_ctx_tokens(const struct mmhal_ctx *c)
{
	return c ? c->tokens : NULL;
}

MMHAL_API void mmhal_ctx_reset(struct mmhal_ctx *c)
{
	if (!c)
		return;
	c->n_past = 0;
	c->has_logits = 0;
}

MMHAL_API int mmhal_ctx_truncate(struct mmhal_ctx *c, int n_keep)
{
	if (!c || n_keep < 0 || n_keep > c->n_past)
		return -EINVAL;
	if (n_keep != c->n_past)
		c->has_logits = 0;
	c->n_past = n_keep;
	return 0;
}

MMHAL_API const uint64_t *mmhal_ctx_ids(const struct mmhal_ctx *c)
{
	return c ? c->ids : NULL;
}

MMHAL_API int mmhal_ctx_common_prefix(const struct mmhal_ctx *c,
				      const int32_t *tokens,
				      const uint64_t *ids, int n)
{
	int i;

	if (!c || n < 0 || (n && !tokens))
		return -EINVAL;
	for (i = 0; i < n && i < c->n_past; i++) {
		if (tokens[i] != c->tokens[i])
			break;
		if (tokens[i] == MMHAL_TOKEN_EMBD &&
		    (!ids || !ids[i] || ids[i] != c->ids[i]))
			break;
	}
	return i;
}

MMHAL_API int mmhal_ctx_reuse_prefix(struct mmhal_ctx *c,
				     const int32_t *tokens,
				     const uint64_t *ids, int n)
{
	int keep = mmhal_ctx_common_prefix(c, tokens, ids, n);

	if (keep < 0)
		return keep;
	if (keep > n - 1)
		keep = n > 0 ? n - 1 : 0;
	mmhal_ctx_truncate(c, keep);
	c->st.reused_positions += keep;
	return keep;
}

/* ---- context shift ---------------------------------------------------- */

/*
 * A cut at b (positions < b on one side) falls inside a run when the last
 * embedding row before b and the first at or after b belong together:
 * adjacent with the same id (0 included: anonymous rows), or the same
 * non-zero id at most MMHAL_CHUNK_GAP tokens apart (one chunk's tiles).
 * Then the cut moves past that row, and again until it is clear.
 */
int mm_llama_run_end(const struct mmhal_ctx *c, int b)
{
	while (b > 0 && b < c->n_past) {
		int p = b - 1, q = b;

		while (p >= 0 && c->tokens[p] != MMHAL_TOKEN_EMBD &&
		       b - 1 - p < MMHAL_CHUNK_GAP)
			p--;
		if (p < 0 || c->tokens[p] != MMHAL_TOKEN_EMBD)
			return b;
		while (q < c->n_past && c->tokens[q] != MMHAL_TOKEN_EMBD &&
		       q - p - 1 < MMHAL_CHUNK_GAP)
			q++;
		if (q >= c->n_past || c->tokens[q] != MMHAL_TOKEN_EMBD ||
		    c->ids[q] != c->ids[p] || (q != p + 1 && !c->ids[p]))
			return b;
		b = q + 1;
	}
	return b;
}

struct mm_shift_job {
	struct mmhal_ctx *c;
	int k0, k1;		/* rows [k1, n_past) move to k0 */
	const float *cs;	/* n_rot / 2 (cos, sin) of -(k1 - k0) * freq */
};

/* (layer, KV head) units: V rows moved as bytes, K rows converted to f32,
 * rotated back by the distance and stored again. */
static void mm_shift_task(int64_t begin, int64_t end, void *arg)
{
	const struct mm_shift_job *j = arg;
	struct mmhal_ctx *c = j->c;
	const struct mm_llama_hp *hp = &c->model->hp;
	const int hd = hp->head_dim, n = c->n_past - j->k1;
	int slot = __atomic_fetch_add(&c->slot, 1, __ATOMIC_RELAXED);
	float *buf = c->scratch + (size_t)slot * c->scratch_stride;

	for (int64_t u = begin; u < end; u++) {
		const int layer = (int)(u / hp->n_head_kv);
		const int h = (int)(u % hp->n_head_kv);
		const size_t dst = mm_kv_at(c, layer, h, j->k0);
		const size_t src = mm_kv_at(c, layer, h, j->k1);

		memmove(c->kv_v + dst, c->kv_v + src, (size_t)n * c->kv_rs);
		for (int t = 0; t < n; t++) {
			const size_t o = (size_t)t * c->kv_rs;

			mm_dequantize_row((enum mm_type)c->kv_type,
					  c->kv_k + src + o, buf, hd);
			for (int r = 0; r < hp->n_rot / 2; r++) {
				const float co = j->cs[2 * r], si = j->cs[2 * r + 1];
				const float a = buf[2 * r], b = buf[2 * r + 1];

				buf[2 * r] = a * co - b * si;
				buf[2 * r + 1] = a * si + b * co;
			}
			mm_quantize_row((enum mm_type)c->kv_type, buf,
					c->kv_k + dst + o, hd);
		}
	}
}

int mm_llama_shift(struct mmhal_ctx *c, int n)
{
	const struct mmhal_model *m = c->model;
	const int need = c->n_past + n - c->n_ctx;
	int k0 = mm_llama_run_end(c, c->n_keep < c->n_past ? c->n_keep :
				  c->n_past);
	int k1, d, half;
	struct mm_shift_job j = { .c = c, .k0 = k0 };

	if (n > c->n_ctx - k0) {
		snprintf(c->err, sizeof(c->err),
			 "context full (ENOSPC): %d positions do not fit beside the %d kept (n_keep %d) in n_ctx %d",
			 n, k0, c->n_keep, c->n_ctx);
		return -ENOSPC;
	}
	half = (c->n_past - k0) / 2;
	k1 = mm_llama_run_end(c, k0 + (half > need ? half : need));
	d = k1 - k0;
	/* the rotation by -d, in double: both factors of the angle exact */
	for (int r = 0; r < m->hp.n_rot / 2; r++) {
		const double th = -(double)d * m->inv_freq[r];

		c->rope_cs[2 * r] = (float)cos(th);
		c->rope_cs[2 * r + 1] = (float)sin(th);
	}
	j.k1 = k1;
	j.cs = c->rope_cs;
	c->slot = 0;
	if (k1 < c->n_past)
		mm_parallel_for(c->mm, (int64_t)m->hp.n_layer * m->hp.n_head_kv,
				mm_shift_task, &j);
	memmove(c->tokens + k0, c->tokens + k1,
		(size_t)(c->n_past - k1) * sizeof(*c->tokens));
	memmove(c->ids + k0, c->ids + k1,
		(size_t)(c->n_past - k1) * sizeof(*c->ids));
	c->n_past -= d;
	c->st.shifts++;
	c->st.shift_discarded += d;
	return 0;
}

/* ---- accounting ------------------------------------------------------- */

MMHAL_API int mmhal_ctx_stats(const struct mmhal_ctx *c,
			      struct mmhal_model_stats *out)
{
	struct rusage ru;

	if (!out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if (!c)
		return -EINVAL;
	*out = c->st;
	out->load_ms = c->model->load_ms;
	out->file_bytes = c->model->info.file_bytes;
	out->alloc_bytes = c->mem.bytes;
	out->alloc_peak_bytes = c->mem.peak;
	if (!getrusage(RUSAGE_SELF, &ru))
		out->peak_rss_bytes = (uint64_t)ru.ru_maxrss * 1024;
	out->n_past = c->n_past;
	out->n_ctx = c->n_ctx;
	return 0;
}

MMHAL_API void mmhal_ctx_stats_reset(struct mmhal_ctx *c)
{
	if (!c)
		return;
	c->st.prefill_ms = 0;
	c->st.prefill_tokens = 0;
	c->st.prefill_calls = 0;
	c->st.decode_ms = 0;
	c->st.decode_tokens = 0;
	c->st.decode_last_ms = 0;
	c->st.decode_min_ms = 0;
	c->st.decode_max_ms = 0;
	c->st.sample_ms = 0;
	c->st.sample_tokens = 0;
	c->st.shifts = 0;
	c->st.shift_discarded = 0;
	c->st.reused_positions = 0;
	memset(c->st.tier_steps, 0, sizeof(c->st.tier_steps));
	memset(c->st.tier_evals, 0, sizeof(c->st.tier_evals));
	c->st.tier_recomputes = 0;
}

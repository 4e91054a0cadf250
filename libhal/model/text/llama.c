// SPDX-License-Identifier: MIT
/*
 * llama.c - LLaMA-family decoder ("llama" architecture, as llama.cpp runs
 * it): the forward pass, evaluation of tokens and embeddings in a session,
 * generation, and the model-level API of mmhal_model.h (which acts on the
 * model's default session).
 *
 * Graph per layer:  x += Wo . attn(rope(Wq.n(x)), rope(Wk.n(x)), Wv.n(x))
 *                   x += Wdown . (silu(Wgate.n'(x)) * Wup.n'(x))
 * with n() RMSNorm, RoPE on adjacent pairs (llama.cpp "normal" mode: the
 * converter permutes Q/K for it), grouped-query causal attention, f32
 * softmax, scale 1/sqrt(head_dim) (llama_attn.c); then output_norm and the
 * output matrix (token_embd when output.weight is absent).
 *
 * Prefill runs n positions at once (mm_matmul), decode one (mm_matvec).
 * A position's input is a token's embedding row or a row the caller gives
 * (mmhal_ctx_eval_embd(): image or audio embeddings); the rest of the
 * graph does not tell them apart.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_llama.h"
#include "llama_int.h"
#include "sampler.h"

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
static void mm_rope(const struct mm_llama_hp *hp, float *x, int n_heads,
		    const float *cs)
{
	const int hd = hp->head_dim;

	for (int i = 0; i < hp->n_rot / 2; i++) {
		const float c = cs[2 * i], s = cs[2 * i + 1];

		for (int h = 0; h < n_heads; h++) {
			float *p = x + (size_t)h * hd + 2 * i;
			float a = p[0], b = p[1];

			p[0] = a * c - b * s;
			p[1] = a * s + b * c;
		}
	}
}

static void mm_proj(struct mmhal_ctx *c, const struct mm_llama_w *w,
		    const float *X, float *Y, int n)
{
	if (mm_cuda_llama_proj(c, &w, &Y, 1, X, n))
		return;
	if (n == 1)
		mm_matvec(c->mm, w->t, w->d, X, Y, w->ne1, w->ne0);
	else
		mm_matmul(c->mm, w->t, w->d, X, Y, w->ne1, w->ne0, n);
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
static void mm_proj_multi(struct mmhal_ctx *c,
			  const struct mm_llama_w *const *ws, float *const *Ys,
			  int nw, const float *X, int n)
{
	struct mm_mv mv[MM_MV_MAX];

	if (mm_cuda_llama_proj(c, ws, Ys, nw, X, n))
		return;
	for (int a = 0; a < nw; a++)
		mv[a] = (struct mm_mv){ .t = ws[a]->t, .W = ws[a]->d,
					.y = Ys[a], .m = ws[a]->ne1 };
	if (n == 1) {		/* decode: any types, one job */
		mm_matvec_n(c->mm, mv, nw, X, ws[0]->ne0);
		return;
	}
	for (int a = 0, b; a < nw; a = b) {
		for (b = a + 1; b < nw && mv[b].t == mv[a].t; b++)
			;
		mm_matmul_n(c->mm, mv + a, b - a, X, ws[a]->ne0, n);
	}
}

/*
 * The row-wise steps between the matrix products, over token rows [b, e)
 * (prefill runs them on all threads; one row runs inline). Each row is
 * independent, so the bits do not depend on the split.
 */
struct mm_rows_job {
	struct mmhal_ctx *c;
	const float *norm_w;	/* add_norm: the RMSNorm weights */
	int add;		/* add_norm: x += xn first (the residual) */
	int layer;		/* rope_kv */
};

/* x += xn (if add), then xn = rmsnorm(x) * w */
static void mm_add_norm_task(int64_t b, int64_t e, void *arg)
{
	const struct mm_rows_job *j = arg;
	struct mmhal_ctx *c = j->c;
	const int ne = c->model->hp.n_embd;

	for (int64_t i = b; i < e; i++) {
		float *x = c->x + (size_t)i * ne, *xn = c->xn + (size_t)i * ne;

		if (j->add)
			for (int d = 0; d < ne; d++)
				x[d] += xn[d];
		mm_rmsnorm(x, j->norm_w, xn, ne, c->model->hp.eps);
	}
}

/* RoPE on q and k, then k and v into the layer's cache rows */
static void mm_rope_kv_task(int64_t b, int64_t e, void *arg)
{
	const struct mm_rows_job *j = arg;
	struct mmhal_ctx *c = j->c;
	const struct mm_llama_hp *hp = &c->model->hp;
	const int qd = hp->n_head * hp->head_dim, kvd = c->kv_dim;
	const int hd = hp->head_dim;

	for (int64_t i = b; i < e; i++) {
		const int64_t pos = c->n_past + i;
		const float *cs = c->rope_cs + (size_t)i * hp->n_rot;

		mm_rope(hp, c->q + (size_t)i * qd, hp->n_head, cs);
		mm_rope(hp, c->k + (size_t)i * kvd, hp->n_head_kv, cs);
		for (int h = 0; h < hp->n_head_kv; h++) {
			const size_t at = mm_kv_at(c, j->layer, h, pos);

			mm_quantize_row((enum mm_type)c->kv_type,
					c->k + (size_t)i * kvd + h * hd, c->kv_k + at, hd);
			mm_quantize_row((enum mm_type)c->kv_type,
					c->v + (size_t)i * kvd + h * hd, c->kv_v + at, hd);
		}
	}
}

/* gate = silu(gate) * up */
static void mm_silu_task(int64_t b, int64_t e, void *arg)
{
	const struct mm_rows_job *j = arg;
	struct mmhal_ctx *c = j->c;
	const size_t f = c->model->hp.n_ff;

	for (int64_t i = b; i < e; i++)
		c->vec->silu_mul(c->gate + i * f, c->up + i * f, (int)f);
}

/*
 * n positions (n <= n_batch) at n_past ...: token ids tok, or (tok NULL)
 * rows of n_embd floats. The abort callback is asked before each layer;
 * -ECANCELED leaves n_past as it was (the cache rows written for these
 * positions are unused and overwritten later).
 */
static int mm_llama_forward(struct mmhal_ctx *c, const int32_t *tok,
			    const float *embd, int n, float *logits)
{
	const struct mmhal_model *m = c->model;
	const struct mm_llama_hp *hp = &m->hp;
	const struct mm_llama_tier *T = &m->tier[c->tier_cur];
	const int e = hp->n_embd;
	/* decode: attention over position segments (1: whole heads) */
	const int nseg = n == 1 ? mm_llama_attn_nseg(c, c->n_past + 1) : 1;
	struct mm_rows_job rj = { .c = c };

	/* the rotations of this batch's positions, once for all layers */
	for (int i = 0; i < n; i++) {
		float *cs = c->rope_cs + (size_t)i * hp->n_rot;

		for (int r = 0; r < hp->n_rot / 2; r++) {
			const float th = (float)(c->n_past + i) * m->inv_freq[r];

			cs[2 * r] = cosf(th);
			cs[2 * r + 1] = sinf(th);
		}
	}
	if (embd)
		memcpy(c->x, embd, (size_t)n * e * sizeof(float));
	else
		for (int i = 0; i < n; i++)
			mm_layout_row(T->tok_embd.t, T->tok_embd.d,
				      T->tok_embd.ne1, e, tok[i],
				      c->x + (size_t)i * e);
	for (int l = 0; l < hp->n_layer; l++) {
		const struct mm_llama_layer *L = &T->layers[l];

		if (c->abort_cb && c->abort_cb(c->abort_arg))
			return -ECANCELED;
		rj.layer = l;
		rj.norm_w = L->attn_norm;
		rj.add = l > 0;		/* the residual of layer l - 1's FFN */
		mm_parallel_for(c->mm, n, mm_add_norm_task, &rj);
		{
			const struct mm_llama_w *ws[3] = { &L->q, &L->k, &L->v };
			float *ys[3] = { c->q, c->k, c->v };

			mm_proj_multi(c, ws, ys, 3, c->xn, n);
		}
		mm_parallel_for(c->mm, n, mm_rope_kv_task, &rj);
		mm_llama_attention(c, l, n, nseg);
		mm_proj(c, &L->o, c->att, c->xn, n);
		rj.norm_w = L->ffn_norm;
		rj.add = 1;
		mm_parallel_for(c->mm, n, mm_add_norm_task, &rj);
		{
			const struct mm_llama_w *ws[2] = { &L->gate, &L->up };
			float *ys[2] = { c->gate, c->up };

			mm_proj_multi(c, ws, ys, 2, c->xn, n);
		}
		mm_parallel_for(c->mm, n, mm_silu_task, &rj);
		mm_proj(c, &L->down, c->gate, c->xn, n);
	}
	for (size_t i = 0; i < (size_t)n * e; i++)	/* the last residual */
		c->x[i] += c->xn[i];
	if (!logits)
		return 0;
	mm_rmsnorm(c->x + (size_t)(n - 1) * e, T->output_norm, c->xn, e,
		   hp->eps);
	mm_proj(c, &T->output, c->xn, logits, 1);
	return 0;
}

/* softmax(l)'s largest probability: 1 / sum exp(l_i - max) */
static double mm_top1_prob(const float *l, int n)
{
	float mx = l[0];
	double s = 0;

	for (int i = 1; i < n; i++)
		if (l[i] > mx)
			mx = l[i];
	for (int i = 0; i < n; i++)
		s += exp((double)l[i] - mx);
	return 1.0 / s;
}

/*
 * One decode step (a token at n_past) by confidence: forward at tier 0,
 * then again at the next tier while the logits' top-1 probability is
 * below the tier's threshold (the position's K/V rows are rewritten each
 * time), up to the highest tier.
 */
static int mm_forward_confident(struct mmhal_ctx *c, const int32_t *tok)
{
	const int top = c->model->n_tiers - 1;
	int ret;

	for (c->tier_cur = 0;; c->tier_cur++) {
		ret = mm_llama_forward(c, tok, NULL, 1, c->logits);
		if (ret)
			return ret;
		c->st.tier_evals[c->tier_cur]++;
		if (c->tier_cur == top ||
		    mm_top1_prob(c->logits, c->model->hp.n_vocab) >=
		    c->tier_thr[c->tier_cur])
			break;
		c->st.tier_recomputes++;
	}
	c->st.tier_steps[c->tier_cur]++;
	return 0;
}

/* Tokens (embd NULL) or embedding rows through the decoder, n_batch
 * positions a step. */
static int mm_ctx_eval_any(struct mmhal_ctx *c, const int32_t *tokens,
			   const float *embd, uint64_t id, int n,
			   float *logits_last)
{
	const int e = c->model->hp.n_embd;
	int n_past0 = c->n_past;
	double t0;
	int ret = 0;

	if (n > c->n_ctx - c->n_past && c->ctx_shift) {
		ret = mm_llama_shift(c, n);
		if (ret)
			return ret;
		n_past0 = c->n_past;
	}
	if (n > c->n_ctx - c->n_past) {
		snprintf(c->err, sizeof(c->err),
			 "context full (ENOSPC): %d tokens in the cache + %d > n_ctx %d; reset or truncate",
			 c->n_past, n, c->n_ctx);
		return -ENOSPC;
	}
	t0 = mm_now_ms();
	c->tier_cur = c->tier_mode == MMHAL_TIER_FIXED ? c->tier_fixed :
		c->model->n_tiers - 1;
	for (int done = 0; done < n;) {
		int cnt = n - done < c->n_batch ? n - done : c->n_batch;
		int last = done + cnt == n;

		if (n == 1 && tokens && c->tier_mode == MMHAL_TIER_CONFIDENCE)
			ret = mm_forward_confident(c, tokens);
		else
			ret = mm_llama_forward(c, tokens ? tokens + done : NULL,
					       embd ? embd + (size_t)done * e :
					       NULL, cnt, last ? c->logits : NULL);
		if (ret)
			break;
		if (tokens)
			memcpy(c->tokens + c->n_past, tokens + done,
			       cnt * sizeof(int32_t));
		else
			for (int i = 0; i < cnt; i++)
				c->tokens[c->n_past + i] = MMHAL_TOKEN_EMBD;
		for (int i = 0; i < cnt; i++)
			c->ids[c->n_past + i] = tokens ? 0 : id;
		c->n_past += cnt;
		done += cnt;
	}
	if (ret == -ECANCELED) {
		if (c->n_past != n_past0)
			c->has_logits = 0;
		snprintf(c->err, sizeof(c->err),
			 "eval: stopped by the abort callback after %d of %d positions",
			 c->n_past - n_past0, n);
		return ret;
	}
	c->has_logits = 1;
	if (logits_last)
		memcpy(logits_last, c->logits,
		       c->model->hp.n_vocab * sizeof(float));
	t0 = mm_now_ms() - t0;
	if (n > 1) {
		c->st.prefill_ms += t0;
		c->st.prefill_tokens += n;
		c->st.prefill_calls++;
	} else {
		if (!c->st.decode_tokens || t0 < c->st.decode_min_ms)
			c->st.decode_min_ms = t0;
		if (t0 > c->st.decode_max_ms)
			c->st.decode_max_ms = t0;
		c->st.decode_ms += t0;
		c->st.decode_tokens++;
		c->st.decode_last_ms = t0;
	}
	c->err[0] = 0;
	return 0;
}

MMHAL_API int mmhal_ctx_eval(struct mmhal_ctx *c, const int32_t *tokens,
			     int n, float *logits_last)
{
	if (!c)
		return -EINVAL;
	if (n < 1 || !tokens) {
		snprintf(c->err, sizeof(c->err), "eval: %d tokens", n);
		return -EINVAL;
	}
	for (int i = 0; i < n; i++)
		if (tokens[i] < 0 || tokens[i] >= c->model->hp.n_vocab) {
			snprintf(c->err, sizeof(c->err),
				 "eval: token %d (index %d) outside the vocab (%d)",
				 tokens[i], i, c->model->hp.n_vocab);
			return -EINVAL;
		}
	return mm_ctx_eval_any(c, tokens, NULL, 0, n, logits_last);
}

MMHAL_API int mmhal_ctx_eval_embd(struct mmhal_ctx *c, const float *embd,
				  int n, int n_embd, float *logits_last)
{
	return mmhal_ctx_eval_embd_id(c, embd, n, n_embd, 0, logits_last);
}

MMHAL_API int mmhal_ctx_eval_embd_id(struct mmhal_ctx *c, const float *embd,
				     int n, int n_embd, uint64_t id,
				     float *logits_last)
{
	const int e = c ? c->model->hp.n_embd : 0;

	if (!c)
		return -EINVAL;
	if (n < 1 || !embd) {
		snprintf(c->err, sizeof(c->err),
			 "eval_embd: %d rows%s", n, embd ? "" : " at NULL");
		return -EINVAL;
	}
	if (n_embd != e) {
		snprintf(c->err, sizeof(c->err),
			 "eval_embd: rows of %d floats, the model's embedding width is %d",
			 n_embd, e);
		return -EINVAL;
	}
	for (size_t i = 0; i < (size_t)n * e; i++)
		if (!isfinite(embd[i])) {
			snprintf(c->err, sizeof(c->err),
				 "eval_embd: row %zu, element %zu is not finite",
				 i / e, i % e);
			return -EINVAL;
		}
	return mm_ctx_eval_any(c, NULL, embd, id, n, logits_last);
}

/* ---- generate --------------------------------------------------------- */

MMHAL_API int mmhal_ctx_generate(struct mmhal_ctx *c, const int32_t *prompt,
				 int n_prompt, int n_predict,
				 struct mmhal_sampler *s, unsigned flags,
				 int32_t *out, mmhal_token_cb cb, void *arg,
				 int *n_out)
{
	const struct mmhal_model *m = c ? c->model : NULL;
	int ret = 0, count = 0;

	if (n_out)
		*n_out = 0;
	if (!c || n_prompt < 0 || n_predict < 0 || (n_prompt && !prompt))
		return -EINVAL;
	if (n_prompt) {
		ret = mmhal_ctx_eval(c, prompt, n_prompt, NULL);
		if (ret)
			return ret;
	} else if (!c->has_logits) {
		snprintf(c->err, sizeof(c->err),
			 "generate: no prompt and no logits to sample from");
		return -EINVAL;
	}
	while (count < n_predict) {
		double t0 = mm_now_ms();
		int32_t tok;
		int stop = 0;

		/* the history holds MMHAL_TOKEN_EMBD for embedding rows: the
		 * sampler skips negative ids */
		tok = s ? mmhal_sampler_sample(s, c->logits, m->hp.n_vocab,
					       c->tokens, c->n_past) :
			mm_sampler_argmax(c->logits, m->hp.n_vocab);
		c->st.sample_ms += mm_now_ms() - t0;
		c->st.sample_tokens++;
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
		ret = mmhal_ctx_eval(c, &tok, 1, NULL);
		if (ret || stop)
			break;
	}
	if (n_out)
		*n_out = count;
	return ret;
}

/* ---- the model's default session -------------------------------------- */

MMHAL_API const char *mmhal_model_error(const struct mmhal_model *m)
{
	return m ? m->ctx->err : "";
}

MMHAL_API int mmhal_model_eval(struct mmhal_model *m, const int32_t *tokens,
			       int n, float *logits_last)
{
	return m ? mmhal_ctx_eval(m->ctx, tokens, n, logits_last) : -EINVAL;
}

MMHAL_API const float *mmhal_model_logits(const struct mmhal_model *m)
{
	return m ? mmhal_ctx_logits(m->ctx) : NULL;
}

MMHAL_API int mmhal_model_n_past(const struct mmhal_model *m)
{
	return m ? m->ctx->n_past : 0;
}

MMHAL_API const int32_t *mmhal_model_tokens(const struct mmhal_model *m)
{
	return m ? m->ctx->tokens : NULL;
}

MMHAL_API void mmhal_model_reset(struct mmhal_model *m)
{
	if (m)
		mmhal_ctx_reset(m->ctx);
}

MMHAL_API int mmhal_model_truncate(struct mmhal_model *m, int n_keep)
{
	return m ? mmhal_ctx_truncate(m->ctx, n_keep) : -EINVAL;
}

MMHAL_API int mmhal_model_generate(struct mmhal_model *m,
				   const int32_t *prompt, int n_prompt,
				   int n_predict, struct mmhal_sampler *s,
				   unsigned flags, int32_t *out,
				   mmhal_token_cb cb, void *arg, int *n_out)
{
	if (n_out)
		*n_out = 0;
	return m ? mmhal_ctx_generate(m->ctx, prompt, n_prompt, n_predict, s,
				      flags, out, cb, arg, n_out) : -EINVAL;
}

/* The default session's figures, with the model's own allocations (norms,
 * layer table) in alloc_bytes. */
MMHAL_API int mmhal_model_stats(const struct mmhal_model *m,
				struct mmhal_model_stats *out)
{
	int ret;

	if (!out)
		return -EINVAL;
	if (!m) {
		memset(out, 0, sizeof(*out));
		return -EINVAL;
	}
	ret = mmhal_ctx_stats(m->ctx, out);
	out->alloc_bytes += m->mem.bytes;
	out->alloc_peak_bytes += m->mem.peak;
	return ret;
}

MMHAL_API void mmhal_model_stats_reset(struct mmhal_model *m)
{
	if (m)
		mmhal_ctx_stats_reset(m->ctx);
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


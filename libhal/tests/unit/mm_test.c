// SPDX-License-Identifier: MIT
/*
 * mm_test.c - the multimodal API (mm_api.c) end to end, on generated
 * models: a "tiny" LLM whose vocabulary has SmolVLM's image tokens
 * (mmgguf gen --tokenizer smolvlm) and tiny mmprojs (idefics3 and mlp
 * vision, ultravox audio), at F32 and Q8_0.
 *
 * The reference pipeline is independent of the runtime's: the frame
 * converted whole to RGB, then resized (tests/ref_mm.c), the encoders in
 * double precision over dequantized weights (ref_mm.c), the log-mel by a
 * direct DFT (ref_mm.c), and the decoder of tests/ref_llama.c fed one
 * position at a time with the token ids and embedding rows of a prompt
 * built here from the layout mtmd uses (not from the chunk). Both give
 * greedy tokens for N_STEPS steps, which must be identical; the chunk's
 * embeddings must match the reference's within a tolerance (F32: 1e-3 of
 * the largest value, which covers the preprocessing's rounding to 8 bits
 * at sampling points where float and double disagree; Q8_0: 5e-2, the
 * activation rounding of the quantized kernels, as vision_test).
 *
 * Also: the marker layout of overview-only and tiled idefics3 images
 * against sequences built here, mmproj_info/params size handling, and the
 * malformed inputs (width mismatch, vocabulary without the markers,
 * marker count, image format/stride/planes, sample rate, context full).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mmhal_model.h"
#include "audio.h"
#include "gen.h"
#include "gguf.h"
#include "mmproj.h"
#include "quant.h"
#include "ref_llama.h"
#include "ref_mm.h"
#include "tests/tap.h"

#define N_STEPS 12

static char dir[256];
static char llm_path[2][300];	/* F32, Q8_0 */
static char proj_path[2][300];	/* tiny vision + tiny audio, F32 / Q8_0 */
static char mlp_path[300];	/* tiny-mlp, F32 */
static char tiles_path[300];	/* tiny vision with preproc_image_size */
static char exact_path[2][300];	/* tiny-30s, tiny-30s-s9 audio, F32 */
static const char *const tname[2] = { "F32", "Q8_0" };

/* ---- helpers ------------------------------------------------------------ */

static struct mmhal_model *load_llm(int t)
{
	struct mmhal_model_params mp = mmhal_model_default_params();
	struct mmhal_model *m = NULL;
	char err[256] = "";

	mp.n_ctx = 256;
	mp.n_threads = 2;
	if (mmhal_model_load(llm_path[t], &mp, &m, err, sizeof(err)))
		tap_diag("load %s: %s", llm_path[t], err);
	return m;
}

static struct mmhal_mmproj *load_proj(const char *path,
				      const struct mmhal_model *m, int tiles,
				      int exact)
{
	struct mmhal_mmproj_params pp = mmhal_mmproj_default_params();
	struct mmhal_mmproj *p = NULL;
	char err[256] = "";

	pp.n_threads = 2;
	pp.image_tiles = tiles;
	pp.audio_exact = exact;
	if (mmhal_mmproj_load(path, m, &pp, &p, err, sizeof(err)))
		tap_diag("load %s: %s", path, err);
	return p;
}

static int tokenize(const struct mmhal_model *m, const char *s, int bos,
		    int32_t *ids, int max)
{
	int n = 0;

	if (mmhal_model_tokenize(m, s, strlen(s), bos, 1, ids, max, &n))
		return -1;
	return n;
}

static int argmax(const float *x, int n)
{
	int b = 0;

	for (int i = 1; i < n; i++)
		if (x[i] > x[b])
			b = i;
	return b;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(void)
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(rng >> 33);
}

/* A frame with structure (gradients + noise) in any of the formats. */
struct frame {
	struct mmhal_image img;
	uint8_t *buf[2];
};

static void frame_make(struct frame *f, uint32_t fmt, uint32_t w, uint32_t h,
		       size_t pad)
{
	size_t s0 = (fmt == MMHAL_IMAGE_RGB24 ? 3 * w : w) + pad;

	memset(f, 0, sizeof(*f));
	f->img.format = fmt;
	f->img.width = w;
	f->img.height = h;
	f->img.stride[0] = s0;
	f->buf[0] = malloc(s0 * h);
	for (size_t i = 0; i < s0 * h; i++)
		f->buf[0][i] = (uint8_t)((i * 7 + (i / s0) * 13 + rnd() % 40) & 0xff);
	f->img.plane[0] = f->buf[0];
	if (fmt == MMHAL_IMAGE_NV12) {
		f->img.stride[1] = w + pad;
		f->buf[1] = malloc(f->img.stride[1] * h / 2);
		for (size_t i = 0; i < f->img.stride[1] * h / 2; i++)
			f->buf[1][i] = (uint8_t)(64 + rnd() % 128);
		f->img.plane[1] = f->buf[1];
	}
}

static void frame_free(struct frame *f)
{
	free(f->buf[0]);
	free(f->buf[1]);
}

/* A tone sweeping upward plus a second tone, at 16 kHz. */
static int16_t *make_pcm(size_t n)
{
	int16_t *s = malloc(n * sizeof(*s));

	for (size_t i = 0; i < n; i++) {
		double t = i / 16000.0;

		s[i] = (int16_t)(9000 * sin(2 * M_PI * (300 + 900 * t) * t) +
				 4000 * sin(2 * M_PI * 2100 * t));
	}
	return s;
}

/* Copy of src with the u32 key set (added or replaced). */
static int gguf_copy_add_u32(const char *src, const char *dst,
			     const char *key, uint32_t val, char *err,
			     size_t errlen);

/* ---- reference pipeline -------------------------------------------------- */

/* A prompt as the decoder sees it: ids, MMHAL_TOKEN_EMBD for a row. */
struct seq {
	int32_t tok[512];
	const float *row[512];
	int n;
};

static void seq_text(struct seq *s, const struct mmhal_model *m,
		     const char *text, int bos)
{
	int32_t ids[256];
	int n = tokenize(m, text, bos, ids, 256);

	for (int i = 0; i < n && s->n < 512; i++) {
		s->tok[s->n] = ids[i];
		s->row[s->n++] = NULL;
	}
}

static void seq_rows(struct seq *s, const float *rows, int n, int e)
{
	for (int i = 0; i < n && s->n < 512; i++) {
		s->tok[s->n] = MMHAL_TOKEN_EMBD;
		s->row[s->n++] = rows + (size_t)i * e;
	}
}

/* Greedy tokens of the reference decoder after seq; first: its logits
 * after the prompt; gap[i]: how far, as a share of the logits' range, the
 * reference's choice at step i leads the runtime's (rt[i]) there. */
static int ref_greedy(const char *llm, const struct seq *s, int32_t *out,
		      int n, float *first, const int32_t *rt, float *gap)
{
	struct ref_llama *r = NULL;
	char err[256];
	float *lg;
	int V, ret = 0;

	if (ref_llama_load(llm, 256, &r, err, sizeof(err))) {
		tap_diag("ref load: %s", err);
		return -1;
	}
	V = ref_llama_n_vocab(r);
	lg = malloc(sizeof(float) * V);
	for (int i = 0; i < s->n && !ret; i++)
		ret = s->row[i] ? ref_llama_step_embd(r, s->row[i], lg) :
				  ref_llama_step(r, s->tok[i], lg);
	if (!ret)
		memcpy(first, lg, sizeof(float) * V);
	for (int i = 0; i < n && !ret; i++) {
		float lo = lg[0], hi = lg[0];

		for (int v = 1; v < V; v++) {
			lo = lg[v] < lo ? lg[v] : lo;
			hi = lg[v] > hi ? lg[v] : hi;
		}
		out[i] = argmax(lg, V);
		gap[i] = rt[i] >= 0 && rt[i] < V && hi > lo ?
			 (lg[out[i]] - lg[rt[i]]) / (hi - lo) : 1.0f;
		ret = ref_llama_step(r, out[i], lg);
	}
	free(lg);
	ref_llama_free(r);
	return ret;
}

static double *ref_image_rows(const char *proj, const struct mmhal_image *im,
			      int *n_tok, int *n_out)
{
	struct mm_mmproj *p = NULL;
	const struct mm_mmproj_vision *v;
	const uint8_t *pl[2] = { im->plane[0], im->plane[1] };
	char err[256];
	float *px;
	double *rows = NULL;

	if (mm_mmproj_load(proj, &p, err, sizeof(err))) {
		tap_diag("ref mmproj: %s", err);
		return NULL;
	}
	v = mm_mmproj_vision(p);
	px = malloc(sizeof(float) * 3 * v->image_size * v->image_size);
	if (!ref_mm_image(v, im->format, im->width, im->height, pl,
			  im->stride, px))
		rows = ref_mm_vision(v, px);
	*n_tok = (int)v->n_tokens;
	*n_out = (int)v->n_out;
	free(px);
	mm_mmproj_free(p);
	return rows;
}

/* exact: the first 30 s window of mtmd's framing, stacked as mtmd */
static double *ref_audio_rows(const char *proj, const int16_t *pcm, size_t n,
			      int exact, int *n_tok, int *n_out)
{
	struct mm_mmproj *p = NULL;
	const struct mm_mmproj_audio *a;
	char err[256];
	double *mel, *rows;
	size_t nf, nt;

	if (mm_mmproj_load(proj, &p, err, sizeof(err))) {
		tap_diag("ref mmproj: %s", err);
		return NULL;
	}
	a = mm_mmproj_audio(p);
	mel = ref_mm_mel((int)a->n_mel, pcm, n, exact, &nf);
	if (exact && nf > MM_AUDIO_CHUNK_FRAMES)
		nf = MM_AUDIO_CHUNK_FRAMES;
	rows = ref_mm_audio(a, mel, nf, exact, &nt);
	*n_tok = (int)nt;
	*n_out = (int)a->n_out;
	free(mel);
	mm_mmproj_free(p);
	return rows;
}

/* max |a - r| over the range of r */
static double logit_err(const float *a, const float *r, int n)
{
	float mn = r[0], mx = r[0];
	double d = 0;

	for (int i = 0; i < n; i++) {
		mn = fminf(mn, r[i]);
		mx = fmaxf(mx, r[i]);
		d = fmax(d, fabs((double)a[i] - r[i]));
	}
	return mx > mn ? d / (mx - mn) : INFINITY;
}

/* max |chunk - ref| / max |ref| over the rows */
static double rows_err(const float *got, const double *ref, size_t n)
{
	double amax = 0, emax = 0;

	for (size_t i = 0; i < n; i++) {
		amax = fmax(amax, fabs(ref[i]));
		emax = fmax(emax, fabs(got[i] - ref[i]));
	}
	return amax > 0 ? emax / amax : INFINITY;
}

static const char *const user_text = "What is in this?";

/*
 * One medium through both pipelines: t the weight type, proj the mmproj,
 * img or pcm the input, idefics: whether the markers wrap the rows,
 * exact: the audio's exact (mtmd) mode.
 */
static void e2e(int t, const char *proj, const char *what,
		const struct mmhal_image *img, const int16_t *pcm, size_t n_pcm,
		int idefics, int exact)
{
	struct mmhal_model *m = load_llm(t);
	struct mmhal_mmproj *p = m ? load_proj(proj, m, 0, exact) : NULL;
	struct mmhal_chunk *c = NULL;
	struct mmhal_chunk_info ci = { .size = sizeof(ci) };
	struct mmhal_ctx *ctx = NULL;
	struct mmhal_chat_msg msg = { "user", NULL };
	char text[512], err[256] = "", prompt[1024];
	double *ref = NULL, e;
	float *rf = NULL;
	int n_tok = 0, n_out = 0, ret, n_gen = 0, same, lay;
	int32_t got[N_STEPS] = { 0 }, want[N_STEPS] = { 0 };
	float gap[N_STEPS] = { 0 };
	const struct mmhal_chunk *cc[1];
	struct seq s = { .n = 0 };
	size_t len;
	const int32_t *ct;
	double tol = t ? 5e-2 : 1e-3, ltol = t ? 3e-2 : 1e-3, le = -1;
	float lg_rt[512], lg_ref[512];
	struct mmhal_model_info mi;
	int n_vocab;

	if (!p || mmhal_model_info(m, &mi) || mi.n_vocab > 512) {
		tap_ok(0, "%s %s: load", what, tname[t]);
		goto out;
	}
	n_vocab = mi.n_vocab;
	ret = img ? mmhal_encode_image(p, img, &c, err, sizeof(err)) :
		    mmhal_encode_audio(p, (struct mmhal_audio[]){
					       mmhal_audio_s16(pcm, n_pcm,
							       16000) },
				       &c, err, sizeof(err));
	if (ret || mmhal_chunk_info(c, &ci)) {
		tap_ok(0, "%s %s: encode: %s", what, tname[t], err);
		goto out;
	}
	ref = img ? ref_image_rows(proj, img, &n_tok, &n_out) :
		    ref_audio_rows(proj, pcm, n_pcm, exact, &n_tok, &n_out);
	if (!ref || n_tok != ci.n_embd_rows || n_out != ci.n_embd) {
		tap_ok(0, "%s %s: %d rows x %d, reference %d x %d", what,
		       tname[t], ci.n_embd_rows, ci.n_embd, n_tok, n_out);
		goto out;
	}
	e = rows_err(mmhal_chunk_embd(c), ref, (size_t)n_tok * n_out);
	tap_ok(e <= tol,
	       "%s %s: %d embeddings x %d vs double reference: max err %.2e of max |ref| (tol %.0e); preprocess %.2f ms, encode %.2f ms",
	       what, tname[t], n_tok, n_out, e, tol, ci.preprocess_ms,
	       ci.encode_ms);

	/* the prompt: chat template, media in the user message */
	snprintf(text, sizeof(text), "%s%s", MMHAL_MEDIA_MARKER, user_text);
	msg.content = text;
	ret = mmhal_model_chat_format(m, &msg, 1, 1, prompt, sizeof(prompt),
				      &len);
	if (!ret)
		ret = mmhal_ctx_create(m, NULL, &ctx, err, sizeof(err));
	cc[0] = c;
	if (!ret)
		ret = mmhal_ctx_eval_prompt(ctx, prompt, cc, 1, 1, lg_rt);
	if (!ret)
		ret = mmhal_ctx_generate(ctx, NULL, 0, N_STEPS, NULL,
					 MMHAL_GEN_IGNORE_EOG, got, NULL, NULL,
					 &n_gen);

	/* the reference's prompt, built here */
	rf = malloc(sizeof(float) * (size_t)n_tok * n_out);
	for (size_t i = 0; i < (size_t)n_tok * n_out; i++)
		rf[i] = (float)ref[i];
	{
		char *mk = strstr(prompt, MMHAL_MEDIA_MARKER);

		*mk = 0;
		seq_text(&s, m, prompt, 1);
		/* mtmd's idefics3 overview, tiles or not: "\n\n" first */
		if (idefics) {
			seq_text(&s, m, "\n\n", 0);
			seq_text(&s, m, "<fake_token_around_image><global-img>",
				 0);
		}
		seq_rows(&s, rf, n_tok, n_out);
		if (idefics)
			seq_text(&s, m, "<fake_token_around_image>", 0);
		seq_text(&s, m, mk + strlen(MMHAL_MEDIA_MARKER), 0);
		*mk = '<';
	}
	/* the session's cache holds exactly that sequence */
	ct = ctx ? mmhal_ctx_tokens(ctx) : NULL;
	lay = !ret && ct && mmhal_ctx_n_past(ctx) >= s.n;
	for (int i = 0; lay && i < s.n; i++)
		lay = ct[i] == s.tok[i];
	tap_ok(lay, "%s %s: prompt of %d positions (%d embeddings%s) laid out as built independently%s%s",
	       what, tname[t], s.n, n_tok,
	       idefics ? " between \"\\n\\n\"<fake_token_around_image><global-img> and <fake_token_around_image>" : "",
	       ret ? ": " : "", ret ? (ctx ? mmhal_ctx_error(ctx) : err) : "");
	ret = ret || n_gen != N_STEPS ? -1 :
	      ref_greedy(llm_path[t], &s, want, N_STEPS, lg_ref, got, gap);
	if (!ret)
		le = logit_err(lg_rt, lg_ref, n_vocab);
	tap_ok(!ret && le <= ltol,
	       "%s %s: logits after the prompt vs the reference pipeline's: max diff %.2e of their range (tol %.0e)",
	       what, tname[t], le, ltol);
	/* identical tokens, up to a step where the two choices tie within
	 * the logit tolerance (random weights make near ties; after one the
	 * sequences part for good) */
	same = !ret;
	for (int i = 0; same && i < N_STEPS; i++) {
		if (got[i] == want[i])
			continue;
		if (gap[i] <= ltol) {
			tap_diag("step %d: runtime %d, reference %d tie within %.1e of the range (tol %.0e); compared up to there",
				 i, got[i], want[i], gap[i], ltol);
			break;
		}
		same = 0;
	}
	if (!same && !ret) {
		tap_diag("runtime:   %d %d %d %d %d %d", got[0], got[1], got[2],
			 got[3], got[4], got[5]);
		tap_diag("reference: %d %d %d %d %d %d", want[0], want[1],
			 want[2], want[3], want[4], want[5]);
	}
	tap_ok(same, "%s %s: greedy %d tokens identical to the float reference pipeline (%d %d %d %d ...)",
	       what, tname[t], N_STEPS, got[0], got[1], got[2], got[3]);
out:
	free(rf);
	free(ref);
	mmhal_ctx_free(ctx);
	mmhal_chunk_free(c);
	mmhal_mmproj_free(p);
	mmhal_model_free(m);
}

/*
 * Exact mode's audio chunk has mtmd's count: clip_n_output_tokens() on
 * the 3000-frame window (frames aligned up to the stack factor, / stack
 * factor, / 2), not every position of the window; latency mode keeps
 * every position (ceil(positions / stack factor)).
 */
static void test_exact_counts(void)
{
	struct mmhal_model *m = load_llm(0);
	int16_t *pcm = make_pcm(16000);

	for (int i = 0; i < 2; i++) {
		struct mmhal_mmproj *px, *pl;
		struct mmhal_chunk *cx = NULL, *cl = NULL;
		struct mmhal_chunk_info ix = { .size = sizeof(ix) };
		struct mmhal_chunk_info il = { .size = sizeof(il) };
		struct mm_mmproj *raw = NULL;
		const struct mm_mmproj_audio *a = NULL;
		char err[256] = "";
		int ret = -1, sf = 0, want_x = 0, want_l = 0;

		px = m ? load_proj(exact_path[i], m, 0, 1) : NULL;
		pl = m ? load_proj(exact_path[i], m, 0, 0) : NULL;
		if (!mm_mmproj_load(exact_path[i], &raw, err, sizeof(err)))
			a = mm_mmproj_audio(raw);
		if (a) {
			sf = (int)a->stack_factor;
			want_x = (3000 + sf - 1) / sf * sf / sf / 2;
			/* 1 s: 100 frames, 50 positions */
			want_l = (50 + sf - 1) / sf;
		}
		if (px && pl && a)
			ret = mmhal_encode_audio(px, (struct mmhal_audio[]){
				mmhal_audio_s16(pcm, 16000, 16000) },
						 &cx, err, sizeof(err));
		if (!ret)
			ret = mmhal_encode_audio(pl, (struct mmhal_audio[]){
				mmhal_audio_s16(pcm, 16000, 16000) },
						 &cl, err, sizeof(err));
		if (!ret)
			ret = mmhal_chunk_info(cx, &ix) ||
			      mmhal_chunk_info(cl, &il);
		tap_ok(!ret && ix.n_embd_rows == want_x &&
		       ix.n_pos == want_x && ix.n_tiles == 1 &&
		       il.n_embd_rows == want_l && il.n_pos == want_l,
		       "audio 1 s, stack %d: exact chunk %d positions (mtmd: %d; the 1500 positions fill %d groups), latency %d (want %d)%s%s",
		       sf, ix.n_embd_rows, want_x, (1500 + sf - 1) / sf,
		       il.n_embd_rows, want_l, ret ? ": " : "",
		       ret ? err : "");
		mmhal_chunk_free(cx);
		mmhal_chunk_free(cl);
		mmhal_mmproj_free(px);
		mmhal_mmproj_free(pl);
		mm_mmproj_free(raw);
	}
	free(pcm);
	mmhal_model_free(m);
}

/* ---- layouts --------------------------------------------------------------- */

/* Tiles: an R x C grid of <fake><row_r_col_c> rows..., "\n" between
 * rows, then "\n\n" <fake><global-img> rows <fake> (mtmd's idefics3). */
static void test_tiles(void)
{
	struct mmhal_model *m = load_llm(0);
	struct mmhal_mmproj *p = m ? load_proj(tiles_path, m, 1, 1) : NULL;
	struct mmhal_mmproj *po = m ? load_proj(tiles_path, m, 0, 1) : NULL;
	struct mmhal_chunk *c = NULL, *co = NULL;
	struct mmhal_chunk_info ci = { .size = sizeof(ci) };
	struct mmhal_ctx *ctx = NULL;
	struct frame f;
	struct seq s = { .n = 0 };
	char err[256] = "", t[64];
	int ret, ok, nt;
	const int32_t *ct;
	float dummy = 0;

	frame_make(&f, MMHAL_IMAGE_RGB24, 48, 40, 0);
	if (!p || !po) {
		tap_ok(0, "tiles: load");
		goto out;
	}
	ret = mmhal_encode_image(p, &f.img, &c, err, sizeof(err));
	if (!ret)
		ret = mmhal_encode_image(po, &f.img, &co, err, sizeof(err));
	if (!ret)
		ret = mmhal_chunk_info(c, &ci);
	if (!ret)
		ret = mmhal_ctx_create(m, NULL, &ctx, err, sizeof(err));
	if (!ret)
		ret = mmhal_ctx_eval_chunk(ctx, c, NULL);
	/* preproc_image_size 64 over 32-px tiles: 48x40 -> 64x54 -> 2x2 */
	nt = ci.n_embd_rows / 5;
	for (int r = 1; r <= 2; r++) {
		for (int col = 1; col <= 2; col++) {
			snprintf(t, sizeof(t),
				 "<fake_token_around_image><row_%d_col_%d>", r,
				 col);
			seq_text(&s, m, t, 0);
			seq_rows(&s, &dummy, nt, 0);
		}
		if (r == 1)
			seq_text(&s, m, "\n", 0);
	}
	seq_text(&s, m, "\n\n", 0);
	seq_text(&s, m, "<fake_token_around_image><global-img>", 0);
	seq_rows(&s, &dummy, nt, 0);
	seq_text(&s, m, "<fake_token_around_image>", 0);
	ct = ctx ? mmhal_ctx_tokens(ctx) : NULL;
	ok = !ret && ct && ci.n_tiles == 5 && nt == 4 &&
	     ci.n_pos == s.n && mmhal_ctx_n_past(ctx) == s.n;
	for (int i = 0; ok && i < s.n; i++)
		ok = ct[i] == s.tok[i];
	tap_ok(ok, "tiles: 48x40 frame at preproc_image_size 64 -> 2x2 tiles + overview (%d encoder passes), %d positions laid out as mtmd's idefics3 slice template%s%s",
	       ci.n_tiles, ci.n_pos, ret ? ": " : "", ret ? err : "");
	/* the overview is the last image; tiles off gives it alone, laid
	 * out as mtmd lays out an idefics3 image without tiles (no
	 * preproc_image_size): "\n\n" <fake><global-img> rows <fake> */
	ok = !ret && co;
	{
		struct mmhal_chunk_info oi = { .size = sizeof(oi) };
		struct mmhal_ctx *octx = NULL;
		struct seq so = { .n = 0 };
		const int32_t *ot;

		seq_text(&so, m, "\n\n", 0);
		seq_text(&so, m, "<fake_token_around_image><global-img>", 0);
		seq_rows(&so, &dummy, nt, 0);
		seq_text(&so, m, "<fake_token_around_image>", 0);
		if (ok)
			ok = !mmhal_chunk_info(co, &oi) &&
			     !mmhal_ctx_create(m, NULL, &octx, err,
					       sizeof(err)) &&
			     !mmhal_ctx_eval_chunk(octx, co, NULL);
		ot = ok ? mmhal_ctx_tokens(octx) : NULL;
		ok = ok && ot && oi.n_embd_rows == nt && oi.n_tiles == 1 &&
		     oi.n_pos == so.n && mmhal_ctx_n_past(octx) == so.n &&
		     !memcmp(mmhal_chunk_embd(co),
			     mmhal_chunk_embd(c) + (size_t)4 * nt * ci.n_embd,
			     (size_t)nt * ci.n_embd * sizeof(float));
		for (int i = 0; ok && i < so.n; i++)
			ok = ot[i] == so.tok[i];
		tap_ok(ok, "tiles: image_tiles 0 gives the overview alone, %d positions laid out as mtmd's idefics3 overview (\"\\n\\n\" <fake><global-img> %d rows <fake>), rows equal to the tiled chunk's last image",
		       oi.n_pos, nt);
		mmhal_ctx_free(octx);
	}
out:
	frame_free(&f);
	mmhal_ctx_free(ctx);
	mmhal_chunk_free(c);
	mmhal_chunk_free(co);
	mmhal_mmproj_free(p);
	mmhal_mmproj_free(po);
	mmhal_model_free(m);
}

/* ---- API contracts and errors ----------------------------------------------- */

static void test_info_params(void)
{
	struct mmhal_model *m = load_llm(0);
	struct mmhal_mmproj *p = NULL;
	struct mmhal_mmproj_params pp = mmhal_mmproj_default_params();
	struct mmhal_mmproj_info in;
	char err[256] = "";
	int ret;

	if (!m) {
		tap_ok(0, "info: load");
		return;
	}
	p = load_proj(proj_path[0], m, 1, 1);
	memset(&in, 0, sizeof(in));
	in.size = sizeof(in);
	ret = p ? mmhal_mmproj_info(p, &in) : -1;
	tap_ok(!ret && in.has_vision && in.has_audio &&
	       !strcmp(in.vision_proj, "idefics3") &&
	       !strcmp(in.audio_proj, "ultravox") && in.image_size == 32 &&
	       in.image_tokens == 4 && in.audio_rate == 16000 &&
	       in.n_mel == 16 && in.n_embd == 256 && in.file_bytes > 0,
	       "info: vision %s %d px %d tokens, audio %s %d Hz %d mel, width %d",
	       in.vision_proj, in.image_size, in.image_tokens, in.audio_proj,
	       in.audio_rate, in.n_mel, in.n_embd);
	/* an older caller's smaller struct: nothing written past its size */
	memset(&in, 0x5a, sizeof(in));
	in.size = offsetof(struct mmhal_mmproj_info, image_size);
	ret = p ? mmhal_mmproj_info(p, &in) : -1;
	tap_ok(!ret && in.has_vision == 1 && in.image_size == 0x5a5a5a5a &&
	       in.size == offsetof(struct mmhal_mmproj_info, image_size),
	       "info: a smaller size gets the fields it has, nothing past them");
	mmhal_mmproj_free(p);
	p = NULL;

	/* params from an older caller: fields past size take defaults */
	memset(&pp, 0, sizeof(pp));
	pp.size = offsetof(struct mmhal_mmproj_params, image_tiles);
	pp.n_threads = 1;
	ret = mmhal_mmproj_load(tiles_path, m, &pp, &p, err, sizeof(err));
	if (!ret) {
		struct frame f;
		struct mmhal_chunk *c = NULL;
		struct mmhal_chunk_info ci = { .size = sizeof(ci) };

		frame_make(&f, MMHAL_IMAGE_GREY, 48, 40, 0);
		ret = mmhal_encode_image(p, &f.img, &c, err, sizeof(err));
		if (!ret)
			mmhal_chunk_info(c, &ci);
		ret = ret ? ret : ci.n_tiles == 5 ? 0 : -1;
		mmhal_chunk_free(c);
		frame_free(&f);
	}
	tap_ok(!ret, "params: size up to n_threads loads, image_tiles takes its default 1%s%s",
	       ret ? ": " : "", ret ? err : "");
	mmhal_mmproj_free(p);
	p = NULL;
	pp = mmhal_mmproj_default_params();
	pp.size = 2;
	ret = mmhal_mmproj_load(proj_path[0], m, &pp, &p, err, sizeof(err));
	tap_ok(ret == -EINVAL && !p && strstr(err, "size"),
	       "params: size 2 rejected: \"%s\"", err);
	pp = mmhal_mmproj_default_params();
	pp.reserved[2] = 1;
	ret = mmhal_mmproj_load(proj_path[0], m, &pp, &p, err, sizeof(err));
	tap_ok(ret == -EINVAL && !p && strstr(err, "reserved[2]"),
	       "params: non-zero reserved field rejected: \"%s\"", err);
	/* a newer caller's struct: longer, its new fields left zero */
	{
		struct {
			struct mmhal_mmproj_params p;
			uint32_t tail[2];
		} big = { .p = mmhal_mmproj_default_params() };

		big.p.size = sizeof(big);
		ret = mmhal_mmproj_load(proj_path[0], m, &big.p, &p, err,
					sizeof(err));
		tap_ok(ret == 0 && p, "params: a longer struct with a zero tail loads: %d %s",
		       ret, ret ? err : "");
		mmhal_mmproj_free(p);
		p = NULL;
		big.tail[1] = 1;
		ret = mmhal_mmproj_load(proj_path[0], m, &big.p, &p, err,
					sizeof(err));
		tap_ok(ret == -EINVAL && !p && strstr(err, "past the"),
		       "params: a set byte past this library's struct rejected: \"%s\"",
		       err);
	}
	mmhal_model_free(m);
}

static void test_load_errors(void)
{
	struct mmhal_model *m = load_llm(0), *g = NULL;
	struct mmhal_mmproj *p = NULL;
	struct mm_gen_mmproj_params mp = { .vision = "micro",
					   .type = MM_TYPE_F32, .seed = 2 };
	struct mm_gen_params gp = { .shape = "tiny", .tokenizer = "gpt2",
				    .type = MM_TYPE_F32, .seed = 1 };
	char path[320], lpath[320], err[256] = "";
	int ret;

	snprintf(path, sizeof(path), "%s/micro-vision.gguf", dir);
	snprintf(lpath, sizeof(lpath), "%s/tiny-gpt2.gguf", dir);
	ret = mm_gen_mmproj(&mp, path, err, sizeof(err));
	if (!ret && m)
		ret = mmhal_mmproj_load(path, m, NULL, &p, err, sizeof(err));
	tap_ok(ret == -EINVAL && !p && strstr(err, "32") && strstr(err, "256"),
	       "width mismatch (32-wide projector, 256-wide model) rejected: \"%s\"",
	       err);
	ret = mm_gen_model(&gp, lpath, err, sizeof(err));
	if (!ret)
		ret = mmhal_model_load(lpath, NULL, &g, err, sizeof(err));
	if (!ret)
		ret = mmhal_mmproj_load(proj_path[0], g, NULL, &p, err,
					sizeof(err));
	tap_ok(ret == -EINVAL && !p && strstr(err, "<fake_token_around_image>"),
	       "a vocabulary without SmolVLM's image tokens rejected: \"%s\"",
	       err);
	ret = g ? mmhal_mmproj_load(mlp_path, g, NULL, &p, err, sizeof(err)) :
		  -1;
	tap_ok(!ret && p, "the mlp projector needs no marker tokens%s%s",
	       ret ? ": " : "", ret ? err : "");
	mmhal_mmproj_free(p);
	p = NULL;
	ret = m ? mmhal_mmproj_load("/nonexistent.gguf", m, NULL, &p, err,
				    sizeof(err)) : -1;
	tap_ok(ret == -ENOENT && !p, "missing file: -ENOENT: \"%s\"", err);
	unlink(path);
	unlink(lpath);
	mmhal_model_free(g);
	mmhal_model_free(m);
}

static void test_input_errors(void)
{
	struct mmhal_model *m = load_llm(0);
	struct mmhal_mmproj *p = m ? load_proj(proj_path[0], m, 1, 0) : NULL;
	struct mmhal_mmproj *pe = m ? load_proj(proj_path[0], m, 1, 1) : NULL;
	struct mmhal_chunk *c = NULL;
	struct frame f;
	struct mmhal_image im;
	int16_t *pcm = make_pcm(8000);
	char err[256] = "";
	int ret;

	if (!p || !pe) {
		tap_ok(0, "input errors: load");
		goto out;
	}
	frame_make(&f, MMHAL_IMAGE_NV12, 40, 30, 8);
	im = f.img;
	im.format = 0x34325241;	/* 'AR24' */
	ret = mmhal_encode_image(p, &im, &c, err, sizeof(err));
	tap_ok(ret == -EINVAL && !c && strstr(err, "0x34325241"),
	       "image: unknown format rejected: \"%s\"", err);
	im = f.img;
	im.stride[1] = 39;
	ret = mmhal_encode_image(p, &im, &c, err, sizeof(err));
	tap_ok(ret == -EINVAL && !c && strstr(err, "stride[1] 39"),
	       "image: short NV12 chroma stride rejected: \"%s\"", err);
	im = f.img;
	im.width = 39;
	ret = mmhal_encode_image(p, &im, &c, err, sizeof(err));
	tap_ok(ret == -EINVAL && !c && strstr(err, "even"),
	       "image: odd NV12 width rejected: \"%s\"", err);
	im = f.img;
	im.plane[1] = NULL;
	ret = mmhal_encode_image(p, &im, &c, err, sizeof(err));
	tap_ok(ret == -EINVAL && !c && strstr(err, "plane[1]"),
	       "image: NULL NV12 chroma plane rejected: \"%s\"", err);
	im = f.img;
	im.format = MMHAL_IMAGE_RGB24;
	im.stride[0] = 3 * 40 - 1;
	ret = mmhal_encode_image(p, &im, &c, err, sizeof(err));
	tap_ok(ret == -EINVAL && !c && strstr(err, "stride[0] 119"),
	       "image: RGB24 stride shorter than a line rejected: \"%s\"",
	       err);
	im = f.img;
	im.height = 0;
	ret = mmhal_encode_image(p, &im, &c, err, sizeof(err));
	tap_ok(ret == -EINVAL && !c && strstr(err, "40x0"),
	       "image: zero height rejected: \"%s\"", err);
	frame_free(&f);

	ret = mmhal_encode_audio(p, (struct mmhal_audio[]){
					 mmhal_audio_s16(pcm, 8000, 22050) },
				 &c, err, sizeof(err));
	tap_ok(ret == -EINVAL && !c && strstr(err, "audio.rate 22050"),
	       "audio: 22050 Hz rejected: \"%s\"", err);
	ret = mmhal_encode_audio(p, (struct mmhal_audio[]){
					 mmhal_audio_s16(pcm, 0, 16000) },
				 &c, err, sizeof(err));
	tap_ok(ret == -EINVAL && !c, "audio: no samples rejected: \"%s\"",
	       err);
	ret = mmhal_encode_audio(pe, (struct mmhal_audio[]){
					 mmhal_audio_s16(pcm, 8000, 16000) },
				 &c, err, sizeof(err));
	tap_ok(ret == -EINVAL && !c && strstr(err, "3000"),
	       "audio: exact mode's 3000-frame windows on a 64-position encoder rejected: \"%s\"",
	       err);
out:
	free(pcm);
	mmhal_mmproj_free(p);
	mmhal_mmproj_free(pe);
	mmhal_model_free(m);
}

/*
 * Audio formats: the same sound given as another format, channel count or
 * rate gives the embeddings of its 16 kHz mono S16 form (down-mixed and
 * resampled by speexdsp in one pass, which the chunk counts).
 */
#define AF_SECONDS	1

/* The test sound at @rate: two tones well inside 0-4 kHz. */
static double af_tone(double t)
{
	return 0.30 * sin(2 * M_PI * 440.0 * t) +
	       0.15 * sin(2 * M_PI * 1250.0 * t + 0.5);
}

/* A part that cancels in the down-mix: +d on even, -d on odd channels. */
static double af_side(double t, uint32_t c)
{
	return (c & 1 ? -0.1 : 0.1) * sin(2 * M_PI * 3000.0 * t);
}

static void *af_make(uint32_t format, uint32_t ch, uint32_t rate)
{
	size_t n = (size_t)rate * AF_SECONDS;
	size_t bytes = format == MMHAL_AUDIO_S16LE ? 2 : 4;
	void *buf = malloc(n * ch * bytes);

	if (!buf)
		return NULL;
	for (size_t i = 0; i < n; i++)
		for (uint32_t c = 0; c < ch; c++) {
			double t = (double)i / rate;
			double v = af_tone(t) + (ch > 1 ? af_side(t, c) : 0);
			size_t k = i * ch + c;

			if (format == MMHAL_AUDIO_S16LE)
				((int16_t *)buf)[k] = (int16_t)lrint(v * 32767);
			else if (format == MMHAL_AUDIO_S32LE)
				((int32_t *)buf)[k] =
					(int32_t)llrint(v * 2147483647.0);
			else
				((float *)buf)[k] = (float)v;
		}
	return buf;
}

/* cosine of all rows together, and the smallest of each row's */
static void af_cos(const float *a, const float *b, int rows, int n,
		   double *all, double *row_min)
{
	double ab = 0, aa = 0, bb = 0;

	*row_min = 1;
	for (int r = 0; r < rows; r++) {
		double rab = 0, raa = 0, rbb = 0, cs;

		for (int j = 0; j < n; j++) {
			double x = a[(size_t)r * n + j];
			double y = b[(size_t)r * n + j];

			rab += x * y;
			raa += x * x;
			rbb += y * y;
		}
		cs = rab / sqrt(raa * rbb + 1e-30);
		if (cs < *row_min)
			*row_min = cs;
		ab += rab;
		aa += raa;
		bb += rbb;
	}
	*all = ab / sqrt(aa * bb + 1e-30);
}

static void test_audio_formats(void)
{
	static const struct {
		uint32_t format, channels, rate;
		const char *what;
	} cases[] = {
		{ MMHAL_AUDIO_S32LE, 2, 48000, "48 kHz stereo S32LE" },
		{ MMHAL_AUDIO_F32LE, 1, 44100, "44.1 kHz mono F32LE" },
		{ MMHAL_AUDIO_S16LE, 8, 16000, "16 kHz 8-channel S16LE" },
		{ MMHAL_AUDIO_F32LE, 8, 48000, "48 kHz 8-channel F32LE" },
		{ MMHAL_AUDIO_S16LE, 1, 8000, "8 kHz mono S16LE" },
		{ MMHAL_AUDIO_S32LE, 1, 16000, "16 kHz mono S32LE" },
	};
	struct mmhal_model *m = load_llm(0);
	struct mmhal_mmproj *p = m ? load_proj(proj_path[0], m, 1, 0) : NULL;
	struct mmhal_chunk_info ri = { .size = sizeof(ri) };
	struct mmhal_chunk *ref = NULL, *c = NULL;
	struct mmhal_audio au;
	int16_t *s16 = af_make(MMHAL_AUDIO_S16LE, 1, 16000);
	char err[256] = "";
	int ret;

	if (!p || !s16) {
		tap_ok(0, "audio formats: load");
		goto out;
	}
	au = mmhal_audio_s16(s16, 16000 * AF_SECONDS, 16000);
	ret = mmhal_encode_audio(p, &au, &ref, err, sizeof(err));
	if (ret || mmhal_chunk_info(ref, &ri)) {
		tap_ok(0, "audio formats: 16 kHz mono S16LE reference: %s",
		       err);
		goto out;
	}
	tap_ok(ri.converted_bytes == 0,
	       "audio: 16 kHz mono S16LE read in place (converted_bytes %" PRIu64 ")",
	       ri.converted_bytes);
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct mmhal_chunk_info ci = { .size = sizeof(ci) };
		void *pcm = af_make(cases[k].format, cases[k].channels,
				    cases[k].rate);
		uint64_t bytes = (uint64_t)cases[k].rate * AF_SECONDS *
				 cases[k].channels *
				 (cases[k].format == MMHAL_AUDIO_S16LE ? 2 : 4);
		double all = 0, row_min = 0;

		memset(&au, 0, sizeof(au));
		au.size = sizeof(au);
		au.format = cases[k].format;
		au.channels = cases[k].channels;
		au.rate = cases[k].rate;
		au.samples = pcm;
		au.n_frames = (size_t)cases[k].rate * AF_SECONDS;
		ret = pcm ? mmhal_encode_audio(p, &au, &c, err, sizeof(err)) :
			    -ENOMEM;
		if (ret || mmhal_chunk_info(c, &ci) ||
		    ci.n_embd_rows != ri.n_embd_rows || ci.n_embd != ri.n_embd) {
			tap_ok(0, "audio: %s: encode: %d %s (rows %d, want %d)",
			       cases[k].what, ret, err, ci.n_embd_rows,
			       ri.n_embd_rows);
		} else {
			af_cos(mmhal_chunk_embd(c), mmhal_chunk_embd(ref),
			       ci.n_embd_rows, ci.n_embd, &all, &row_min);
			tap_ok(all >= 0.999 && row_min >= 0.995 &&
			       ci.converted_bytes == bytes,
			       "audio: %s vs 16 kHz mono S16LE: embeddings' cosine %.6f (least row %.6f), one conversion pass of %" PRIu64 " bytes",
			       cases[k].what, all, row_min,
			       ci.converted_bytes);
		}
		mmhal_chunk_free(c);
		c = NULL;
		free(pcm);
	}

	/* refused, each with its field named */
	au = mmhal_audio_s16(s16, 16000, 16000);
	au.format = 7;
	ret = mmhal_encode_audio(p, &au, &c, err, sizeof(err));
	tap_ok(ret == -EINVAL && !c && strstr(err, "audio.format 7"),
	       "audio: format 7 rejected: \"%s\"", err);
	au = mmhal_audio_s16(s16, 1600, 16000);
	au.channels = 9;
	ret = mmhal_encode_audio(p, &au, &c, err, sizeof(err));
	tap_ok(ret == -EINVAL && !c && strstr(err, "audio.channels 9"),
	       "audio: 9 channels rejected: \"%s\"", err);
	au.channels = 0;
	ret = mmhal_encode_audio(p, &au, &c, err, sizeof(err));
	tap_ok(ret == -EINVAL && !c && strstr(err, "audio.channels 0"),
	       "audio: 0 channels rejected: \"%s\"", err);
	au = mmhal_audio_s16(s16, 16000, 32000);
	ret = mmhal_encode_audio(p, &au, &c, err, sizeof(err));
	tap_ok(ret == -EINVAL && !c && strstr(err, "audio.rate 32000"),
	       "audio: 32 kHz rejected: \"%s\"", err);
	au = mmhal_audio_s16(s16, 16000, 16000);
	au.size = 0;
	ret = mmhal_encode_audio(p, &au, &c, err, sizeof(err));
	tap_ok(ret == -EINVAL && !c && strstr(err, "audio.size 0"),
	       "audio: size 0 rejected: \"%s\"", err);
	au = mmhal_audio_s16(s16, 16000, 16000);
	au.reserved[2] = 1;
	ret = mmhal_encode_audio(p, &au, &c, err, sizeof(err));
	tap_ok(ret == -EINVAL && !c && strstr(err, "audio.reserved"),
	       "audio: reserved word set rejected: \"%s\"", err);
out:
	mmhal_chunk_free(ref);
	free(s16);
	mmhal_mmproj_free(p);
	mmhal_model_free(m);
}

static void test_eval_errors(void)
{
	struct mmhal_model *m = load_llm(0), *m2 = load_llm(0);
	struct mmhal_mmproj *p = m ? load_proj(proj_path[0], m, 0, 0) : NULL;
	struct mmhal_mmproj *pa = NULL, *pv = NULL;
	struct mmhal_chunk *c = NULL, *x = NULL;
	struct mmhal_ctx *ctx = NULL, *small = NULL, *other = NULL;
	struct mmhal_ctx_params cp = mmhal_ctx_default_params();
	struct mm_gen_mmproj_params ga = { .audio = "tiny",
					   .type = MM_TYPE_F32, .seed = 4 };
	struct mm_gen_mmproj_params gv = { .vision = "tiny",
					   .type = MM_TYPE_F32, .seed = 4 };
	const struct mmhal_chunk *cc[2];
	struct frame f;
	char err[256] = "", pa_path[320], pv_path[320];
	int16_t *pcm = make_pcm(4000);
	int ret, np;

	frame_make(&f, MMHAL_IMAGE_GREY, 32, 32, 0);
	if (!p || !m2 || mmhal_encode_image(p, &f.img, &c, err, sizeof(err)) ||
	    mmhal_ctx_create(m, NULL, &ctx, err, sizeof(err))) {
		tap_ok(0, "eval errors: setup: %s", err);
		goto out;
	}
	cc[0] = cc[1] = c;
	ret = mmhal_ctx_eval_prompt(ctx, "a " MMHAL_MEDIA_MARKER " b "
				    MMHAL_MEDIA_MARKER, cc, 1, 0, NULL);
	np = mmhal_ctx_n_past(ctx);
	tap_ok(ret == -EINVAL && np == 0 &&
	       strstr(mmhal_ctx_error(ctx), "2 <__media__> markers for 1"),
	       "eval_prompt: 2 markers, 1 chunk: -EINVAL, nothing evaluated: \"%s\"",
	       mmhal_ctx_error(ctx));
	ret = mmhal_ctx_eval_prompt(ctx, "no marker", cc, 1, 0, NULL);
	tap_ok(ret == -EINVAL && mmhal_ctx_n_past(ctx) == 0,
	       "eval_prompt: 0 markers, 1 chunk: -EINVAL");
	ret = mmhal_ctx_eval_prompt(ctx, MMHAL_MEDIA_MARKER "x"
				    MMHAL_MEDIA_MARKER, cc, 2, 0, NULL);
	{
		struct mmhal_chunk_info ci = { .size = sizeof(ci) };
		int cn = mmhal_chunk_info(c, &ci) ? -1 : ci.n_pos;

		/* the chunk: "\n\n" <fake><global-img>, 4 rows, <fake> */
		tap_ok(!ret && ci.n_embd_rows == 4 && cn > 4 + 3 &&
		       mmhal_ctx_n_past(ctx) == 2 * cn + 1,
		       "eval_prompt: 2 markers, 2 chunks: %d positions (%d + 1 + %d)",
		       mmhal_ctx_n_past(ctx), cn, cn);
	}
	/* a chunk into a session of another model */
	ret = mmhal_ctx_create(m2, NULL, &other, err, sizeof(err));
	if (!ret)
		ret = mmhal_ctx_eval_chunk(other, c, NULL);
	tap_ok(ret == -EINVAL && mmhal_ctx_n_past(other) == 0 &&
	       strstr(mmhal_ctx_error(other), "another model"),
	       "eval_chunk: a chunk of another model's mmproj: -EINVAL: \"%s\"",
	       other ? mmhal_ctx_error(other) : err);
	/* context full: nothing evaluated */
	cp.n_ctx = 10;
	ret = mmhal_ctx_create(m, &cp, &small, err, sizeof(err));
	if (!ret)
		ret = mmhal_ctx_eval(small, (const int32_t[]){ 50, 60, 70, 80 },
				     4, NULL);
	if (!ret)
		ret = mmhal_ctx_eval_chunk(small, c, NULL);
	tap_ok(ret == -ENOSPC && mmhal_ctx_n_past(small) == 4 &&
	       strstr(mmhal_ctx_error(small), "n_ctx 10"),
	       "eval_chunk: 4 + the image chunk's positions in a 10-position session: -ENOSPC, nothing evaluated: \"%s\"",
	       small ? mmhal_ctx_error(small) : err);
	ret = mmhal_ctx_eval_prompt(small, "ab cd ef gh ij " MMHAL_MEDIA_MARKER,
				    cc, 1, 0, NULL);
	tap_ok(ret == -ENOSPC && mmhal_ctx_n_past(small) == 4 &&
	       mmhal_ctx_tokens(small)[3] == 80,
	       "eval_prompt: text + chunk longer than the context: -ENOSPC, cache kept: \"%s\"",
	       small ? mmhal_ctx_error(small) : err);

	/* a medium the mmproj has no encoder for */
	snprintf(pa_path, sizeof(pa_path), "%s/audio-only.gguf", dir);
	snprintf(pv_path, sizeof(pv_path), "%s/vision-only.gguf", dir);
	ret = mm_gen_mmproj(&ga, pa_path, err, sizeof(err));
	if (!ret)
		ret = mm_gen_mmproj(&gv, pv_path, err, sizeof(err));
	if (!ret) {
		pa = load_proj(pa_path, m, 1, 0);
		pv = load_proj(pv_path, m, 1, 0);
	}
	ret = pa ? mmhal_encode_image(pa, &f.img, &x, err, sizeof(err)) : -1;
	tap_ok(ret == -ENOENT && !x && strstr(err, "vision"),
	       "image into an audio-only mmproj: -ENOENT: \"%s\"", err);
	ret = pv ? mmhal_encode_audio(pv, (struct mmhal_audio[]){
				 mmhal_audio_s16(pcm, 4000, 16000) },
				      &x, err, sizeof(err)) : -1;
	tap_ok(ret == -ENOENT && !x && strstr(err, "audio"),
	       "audio into a vision-only mmproj: -ENOENT: \"%s\"", err);
	ret = pa ? mmhal_encode_audio(pa, (struct mmhal_audio[]){
				 mmhal_audio_s16(pcm, 4000, 16000) },
				      &x, err, sizeof(err)) : -1;
	{
		struct mmhal_chunk_info ci = { .size = sizeof(ci) };

		if (!ret)
			mmhal_chunk_info(x, &ci);
		/* 25 frames -> 13 positions -> 7 stacked by 2 */
		tap_ok(!ret && ci.type == MMHAL_CHUNK_AUDIO && ci.n_tiles == 1 &&
		       ci.n_embd_rows == 7 && ci.n_pos == 7,
		       "audio 0.25 s (latency mode): 1 window, %d embeddings, no markers",
		       ci.n_embd_rows);
	}
	unlink(pa_path);
	unlink(pv_path);
out:
	free(pcm);
	frame_free(&f);
	mmhal_chunk_free(x);
	mmhal_chunk_free(c);
	mmhal_ctx_free(ctx);
	mmhal_ctx_free(small);
	mmhal_ctx_free(other);
	mmhal_mmproj_free(p);
	mmhal_mmproj_free(pa);
	mmhal_mmproj_free(pv);
	mmhal_model_free(m);
	mmhal_model_free(m2);
}

/* ---- files ------------------------------------------------------------------- */

struct copy_src {
	struct mm_gguf *g;
};

static int copy_fill(void *arg, const char *name, void *dst, uint64_t size)
{
	const struct mm_gguf_tensor *t = mm_gguf_tensor(((struct copy_src *)arg)->g,
							name);

	if (!t)
		return -ENOENT;
	memcpy(dst, t->data, size);
	return 0;
}

static int gguf_copy_add_u32(const char *src, const char *dst,
			     const char *key, uint32_t val, char *err,
			     size_t errlen)
{
	struct copy_src cs = { NULL };
	struct mm_gguf_writer *w;
	int ret = mm_gguf_open(src, &cs.g, err, errlen);

	if (ret)
		return ret;
	w = mm_gguf_writer_new(mm_gguf_alignment(cs.g));
	ret = w ? 0 : -ENOMEM;
	for (uint64_t i = 0; !ret && i < mm_gguf_n_kv(cs.g); i++) {
		const struct mm_gguf_kv *kv = mm_gguf_kv_at(cs.g, i);

		if (strcmp(kv->key, "general.alignment") &&
		    strcmp(kv->key, key))
			ret = mm_gguf_w_kv(w, kv);
	}
	if (!ret)
		ret = mm_gguf_w_u32(w, key, val);
	for (uint64_t i = 0; !ret && i < mm_gguf_n_tensors(cs.g); i++) {
		const struct mm_gguf_tensor *t = mm_gguf_tensor_at(cs.g, i);

		ret = mm_gguf_w_tensor_cb(w, t->name, t->type, t->n_dims,
					  t->ne, copy_fill, &cs);
	}
	if (!ret)
		ret = mm_gguf_w_write_file(w, dst, err, errlen);
	mm_gguf_writer_free(w);
	mm_gguf_close(cs.g);
	return ret;
}

static int make_files(void)
{
	struct mm_gen_params gp = { .shape = "tiny", .tokenizer = "smolvlm",
				    .type = MM_TYPE_F32, .seed = 11 };
	struct mm_gen_mmproj_params mp = { .vision = "tiny", .audio = "tiny",
					   .type = MM_TYPE_F32, .seed = 5 };
	char err[256] = "";
	int ret, fb = 0;

	for (int t = 0; t < 2; t++) {
		snprintf(llm_path[t], sizeof(llm_path[t]), "%s/llm-%s.gguf",
			 dir, tname[t]);
		snprintf(proj_path[t], sizeof(proj_path[t]),
			 "%s/mmproj-%s.gguf", dir, tname[t]);
	}
	snprintf(mlp_path, sizeof(mlp_path), "%s/mmproj-mlp.gguf", dir);
	snprintf(tiles_path, sizeof(tiles_path), "%s/mmproj-tiles.gguf", dir);
	snprintf(exact_path[0], sizeof(exact_path[0]), "%s/mmproj-30s.gguf",
		 dir);
	snprintf(exact_path[1], sizeof(exact_path[1]),
		 "%s/mmproj-30s-s9.gguf", dir);
	ret = mm_gen_model(&gp, llm_path[0], err, sizeof(err));
	if (!ret)
		ret = ref_quantize_file(llm_path[0], llm_path[1], MM_TYPE_Q8_0,
					&fb, err, sizeof(err));
	if (!ret)
		ret = mm_gen_mmproj(&mp, proj_path[0], err, sizeof(err));
	mp.type = MM_TYPE_Q8_0;
	if (!ret)
		ret = mm_gen_mmproj(&mp, proj_path[1], err, sizeof(err));
	mp.type = MM_TYPE_F32;
	mp.vision = "tiny-mlp";
	mp.audio = NULL;
	if (!ret)
		ret = mm_gen_mmproj(&mp, mlp_path, err, sizeof(err));
	if (!ret)
		ret = gguf_copy_add_u32(proj_path[0], tiles_path,
					"clip.vision.preproc_image_size", 64,
					err, sizeof(err));
	mp.vision = NULL;
	mp.audio = "tiny-30s";
	if (!ret)
		ret = mm_gen_mmproj(&mp, exact_path[0], err, sizeof(err));
	mp.audio = "tiny-30s-s9";
	if (!ret)
		ret = mm_gen_mmproj(&mp, exact_path[1], err, sizeof(err));
	tap_ok(!ret, "generate tiny LLM (smolvlm vocab) at F32 and Q8_0, tiny vision+audio mmproj at F32 and Q8_0, tiny-mlp, a tiled variant, two 1500-position audio mmprojs%s%s",
	       ret ? ": " : "", ret ? err : "");
	return ret;
}

/* ---- prefix reuse ------------------------------------------------------- */

static int64_t evaluated(const struct mmhal_ctx *ctx, int64_t *reused)
{
	struct mmhal_model_stats st;

	mmhal_ctx_stats(ctx, &st);
	*reused = st.reused_positions;
	return st.prefill_tokens + st.decode_tokens;
}

static int lcp(const int32_t *a, int na, const int32_t *b, int nb)
{
	int i = 0;

	while (i < na && i < nb && a[i] == b[i])
		i++;
	return i;
}

/*
 * Questions on one image chunk (idefics3, tiles: several runs of one id):
 * the second prompt (same system text and chunk, another question)
 * evaluates only the question's positions past the common prefix
 * (counted here from separately tokenized parts), a continuation only its
 * new text, another frame everything from its first row; each time the
 * logits equal a fresh session's for the whole prompt (same KV F16,
 * different batches: 1e-5 of the logit range).
 */
static void test_prompt_reuse(void)
{
	static const char sys[] = "You describe pictures. ";
	static const char q1[] = " What is in this picture?";
	static const char q2[] = " What colour is it?";
	static const char q3[] = " Answer: stripes. Anything else?";
	struct mmhal_model *m = load_llm(0);
	struct mmhal_mmproj *p = m ? load_proj(tiles_path, m, 1, 0) : NULL;
	struct mmhal_chunk *c = NULL, *c2 = NULL;
	struct mmhal_ctx *a = NULL, *b = NULL;
	const struct mmhal_chunk *cc[1];
	struct frame f, g;
	char err[256] = "", txt[3][256];
	float *la = NULL, *lb = NULL;
	int32_t ts[64], t1[64], t2[64], t3[64];
	int ns, n1, n2, n3, ret, first_row = -1, n_pos = 0, ids_ok = 1;
	int64_t e0, e1, r0, r1;
	double d;
	struct mmhal_chunk_info ci = { .size = sizeof(ci) };
	struct mmhal_model_info mi;

	frame_make(&f, MMHAL_IMAGE_RGB24, 64, 48, 0);
	frame_make(&g, MMHAL_IMAGE_RGB24, 64, 48, 0);
	if (!p || mmhal_encode_image(p, &f.img, &c, err, sizeof(err)) ||
	    mmhal_encode_image(p, &g.img, &c2, err, sizeof(err)) ||
	    mmhal_ctx_create(m, NULL, &a, err, sizeof(err)) ||
	    mmhal_ctx_create(m, NULL, &b, err, sizeof(err)) ||
	    mmhal_model_info(m, &mi) || mmhal_chunk_info(c, &ci)) {
		tap_ok(0, "prefix reuse: setup: %s", err);
		goto out;
	}
	la = malloc(mi.n_vocab * sizeof(float));
	lb = malloc(mi.n_vocab * sizeof(float));
	n_pos = ci.n_pos;
	snprintf(txt[0], sizeof(txt[0]), "%s%s%s", sys, MMHAL_MEDIA_MARKER, q1);
	snprintf(txt[1], sizeof(txt[1]), "%s%s%s", sys, MMHAL_MEDIA_MARKER, q2);
	snprintf(txt[2], sizeof(txt[2]), "%s%s%s%s", sys, MMHAL_MEDIA_MARKER,
		 q1, q3);
	ns = tokenize(m, sys, 1, ts, 64);
	n1 = tokenize(m, q1, 0, t1, 64);
	n2 = tokenize(m, q2, 0, t2, 64);
	{
		char q13[128];

		snprintf(q13, sizeof(q13), "%s%s", q1, q3);
		n3 = tokenize(m, q13, 0, t3, 64);
	}
	cc[0] = c;

	/* question 1: all evaluated; the rows carry the chunk's id */
	e0 = evaluated(a, &r0);
	ret = mmhal_ctx_eval_prompt(a, txt[0], cc, 1, 1, la);
	e1 = evaluated(a, &r1);
	for (int i = 0; !ret && i < mmhal_ctx_n_past(a); i++) {
		int emb = mmhal_ctx_tokens(a)[i] == MMHAL_TOKEN_EMBD;

		if (emb && first_row < 0)
			first_row = i;
		ids_ok &= emb ? mmhal_ctx_ids(a)[i] != 0 &&
			mmhal_ctx_ids(a)[i] == mmhal_ctx_ids(a)[first_row] :
			mmhal_ctx_ids(a)[i] == 0;
	}
	tap_ok(!ret && e1 - e0 == ns + n_pos + n1 && r1 == r0 && ids_ok &&
	       ci.n_tiles > 1,
	       "reuse: first question: %lld positions evaluated (%d + %d + %d), rows of %d tiles with one id",
	       (long long)(e1 - e0), ns, n_pos, n1, ci.n_tiles);

	/* question 2 on the same chunk: only its own tokens */
	e0 = e1;
	r0 = r1;
	ret = mmhal_ctx_eval_prompt(a, txt[1], cc, 1, 1, la);
	e1 = evaluated(a, &r1);
	{
		int common = ns + n_pos + lcp(t1, n1, t2, n2);

		if (!ret)
			ret = mmhal_ctx_eval_prompt(b, txt[1], cc, 1, 1, lb);
		d = ret ? -1 : logit_err(la, lb, mi.n_vocab);
		tap_ok(!ret && r1 - r0 == common &&
		       e1 - e0 == ns + n_pos + n2 - common && d <= 1e-5,
		       "reuse: second question on the same chunk: %lld reused, %lld evaluated (of %d); logits vs a fresh session %.2e",
		       (long long)(r1 - r0), (long long)(e1 - e0),
		       ns + n_pos + n2, d);
	}

	/* the conversation continued: only the new text */
	ret = mmhal_ctx_eval_prompt(a, txt[0], cc, 1, 1, la);
	e0 = evaluated(a, &r0);
	if (!ret)
		ret = mmhal_ctx_eval_prompt(a, txt[2], cc, 1, 1, la);
	e1 = evaluated(a, &r1);
	mmhal_ctx_reset(b);
	if (!ret)
		ret = mmhal_ctx_eval_prompt(b, txt[2], cc, 1, 1, lb);
	d = ret ? -1 : logit_err(la, lb, mi.n_vocab);
	{
		int common = ns + n_pos + lcp(t1, n1, t3, n3);

		tap_ok(!ret && r1 - r0 == common &&
		       e1 - e0 == ns + n_pos + n3 - common && d <= 1e-5,
		       "reuse: continued conversation: %lld reused, %lld evaluated; logits vs fresh %.2e",
		       (long long)(r1 - r0), (long long)(e1 - e0), d);
	}

	/* another frame: reuse stops at its first row */
	cc[0] = c2;
	e0 = e1;
	r0 = r1;
	ret = mmhal_ctx_eval_prompt(a, txt[2], cc, 1, 1, la);
	e1 = evaluated(a, &r1);
	mmhal_ctx_reset(b);
	if (!ret)
		ret = mmhal_ctx_eval_prompt(b, txt[2], cc, 1, 1, lb);
	d = ret ? -1 : logit_err(la, lb, mi.n_vocab);
	tap_ok(!ret && r1 - r0 == first_row &&
	       e1 - e0 == ns + n_pos + n3 - first_row && d <= 1e-5,
	       "reuse: another frame: %lld reused (up to its first row, %d), %lld evaluated; logits vs fresh %.2e",
	       (long long)(r1 - r0), first_row, (long long)(e1 - e0), d);
out:
	free(la);
	free(lb);
	frame_free(&f);
	frame_free(&g);
	mmhal_ctx_free(a);
	mmhal_ctx_free(b);
	mmhal_chunk_free(c);
	mmhal_chunk_free(c2);
	mmhal_mmproj_free(p);
	mmhal_model_free(m);
}

int main(void)
{
	static const uint32_t fmts[3] = { MMHAL_IMAGE_NV12, MMHAL_IMAGE_RGB24,
					  MMHAL_IMAGE_GREY };
	static const char *const fname[3] = { "NV12", "RGB24", "GREY" };
	const char *tmp = getenv("TMPDIR");
	int16_t *pcm;

	snprintf(dir, sizeof(dir), "%s/mm_test.XXXXXX", tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	if (!make_files()) {
		for (int t = 0; t < 2; t++)
			for (int i = 0; i < 3; i++) {
				struct frame f;
				char what[64];

				/* non-square, padded lines */
				frame_make(&f, fmts[i], 64, 48, 16);
				snprintf(what, sizeof(what),
					 "idefics3 %s 64x48 image", fname[i]);
				e2e(t, proj_path[t], what, &f.img, NULL, 0, 1,
				    0);
				frame_free(&f);
			}
		{
			struct frame f;

			frame_make(&f, MMHAL_IMAGE_NV12, 50, 36, 2);
			e2e(0, mlp_path, "mlp NV12 50x36 image", &f.img, NULL,
			    0, 0, 0);
			frame_free(&f);
		}
		pcm = make_pcm(9600);
		for (int t = 0; t < 2; t++)
			e2e(t, proj_path[t], "ultravox 0.6 s audio", NULL, pcm,
			    9600, 0, 0);
		free(pcm);
		pcm = make_pcm(16000);
		e2e(0, exact_path[0],
		    "ultravox exact 1 s audio (30 s window, stack 8)", NULL,
		    pcm, 16000, 0, 1);
		free(pcm);
		test_exact_counts();
		test_tiles();
		test_info_params();
		test_load_errors();
		test_input_errors();
		test_audio_formats();
		test_eval_errors();
		test_prompt_reuse();
	}
	for (int t = 0; t < 2; t++) {
		unlink(llm_path[t]);
		unlink(proj_path[t]);
	}
	unlink(mlp_path);
	unlink(tiles_path);
	unlink(exact_path[0]);
	unlink(exact_path[1]);
	rmdir(dir);
	return tap_done("mm");
}

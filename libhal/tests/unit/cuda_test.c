// SPDX-License-Identifier: MIT
/*
 * cuda_test.c - the CUDA back end without a GPU: the embedded PTX, the
 * driver loader's failures (no library, entry points missing, cuInit's
 * CUDA_ERROR_NO_DEVICE, no device, a device too old, an error while the
 * kernels load) with their messages, and the model's fallback: backend
 * auto runs the CPU with logits identical to backend cpu and says why in
 * mmhal_model_info(); backend cuda refuses the load with the message.
 * Frames read in place (mmhal_mmproj_map_frames): the registration cache
 * and the device preprocessing's fallback on stand-ins whose module loads
 * but whose launches fail ("run") or whose cuMemHostRegister fails
 * ("regfail").
 *
 *   cuda_test -f FAKE.so -p PARTIAL.so [-w DIR]
 *
 * FAKE.so and PARTIAL.so are tests/cuda_fake.c built whole and with
 * MM_FAKE_PARTIAL. -w writes the embedded PTX images to DIR (for ptxas).
 * MM_TEST_BUILT (0/1) is whether this binary's cuda.o has the kernels.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cuda_be.h"
#include "gen.h"
#include "mmhal_model.h"
#include "tests/tap.h"

#ifndef MM_TEST_BUILT
#error "MM_TEST_BUILT must be 0 or 1"
#endif

static const char *const kernels[] = {
	"mm_quant_q8_0", "mm_quant_q8_k", "mm_gemv_q8_0", "mm_gemv_q4_0",
	"mm_gemv_q4_k", "mm_gemm_q8_0", "mm_gemm_q4_0", "mm_gemm_q4_k",
	"mm_rmsnorm", "mm_rope", "mm_softmax", "mm_attn_dec",
	"mm_gemm_f16", "mm_gemm_f32", "mm_pre_overview", "mm_im2col",
};

static void test_ptx(const char *dir)
{
	const int n = mm_cuda_ptx_count();

	tap_ok(mm_cuda_built() == MM_TEST_BUILT,
	       "built with the kernels: %d (expected %d)", mm_cuda_built(),
	       MM_TEST_BUILT);
	tap_ok(n == (MM_TEST_BUILT ? 2 : 0), "%d PTX images embedded", n);
	tap_ok(mm_cuda_ptx(n, NULL) == NULL, "no image past the last");
	for (int i = 0; i < n; i++) {
		const char *tgt = NULL, *ptx = mm_cuda_ptx(i, &tgt);
		char want[32], path[512];
		int missing = 0;

		if (!tap_ok(ptx && tgt, "image %d and its target", i))
			continue;
		snprintf(want, sizeof(want), ".target %s", tgt);
		tap_ok(strstr(ptx, ".version ") && strstr(ptx, want),
		       "image %d is PTX for %s (%zu bytes)", i, tgt,
		       strlen(ptx));
		for (size_t k = 0; k < sizeof(kernels) / sizeof(kernels[0]); k++) {
			char e[64];

			snprintf(e, sizeof(e), ".entry %s(", kernels[k]);
			if (!strstr(ptx, e)) {
				tap_diag("%s: no %s", tgt, kernels[k]);
				missing++;
			}
		}
		tap_ok(!missing, "%s has the %zu kernels", tgt,
		       sizeof(kernels) / sizeof(kernels[0]));
		tap_ok(strstr(ptx, "dp4a.s32.s32") != NULL,
		       "%s: the int8 products use dp4a", tgt);
		if (dir) {
			FILE *f;

			snprintf(path, sizeof(path), "%s/cuda_kern.%s.ptx", dir,
				 tgt);
			f = fopen(path, "w");
			tap_ok(f && fputs(ptx, f) >= 0 && !fclose(f),
			       "%s written to %s", tgt, path);
		}
	}
}

/* mm_cuda_open() with MMHAL_CUDA_LIB = lib (MMHAL_FAKE_CUDA = mode):
 * its error and message. */
static int try_open(const char *lib, const char *mode, char *msg,
		    size_t len)
{
	struct mm_cuda *cu = NULL;
	int ret;

	setenv("MMHAL_CUDA_LIB", lib, 1);
	if (mode)
		setenv("MMHAL_FAKE_CUDA", mode, 1);
	else
		unsetenv("MMHAL_FAKE_CUDA");
	msg[0] = 0;
	ret = mm_cuda_open(&cu, msg, len);
	if (!ret)
		mm_cuda_close(cu);
	tap_diag("open %s%s%s: %d: %s", lib, mode ? " mode " : "",
		 mode ? mode : "", ret, msg);
	return ret;
}

static void test_loader(const char *fake, const char *part)
{
	char msg[256];
	int ret;

	if (!MM_TEST_BUILT) {
		ret = try_open(fake, NULL, msg, sizeof(msg));
		tap_ok(ret == -ENOTSUP && strstr(msg, "built without CUDA"),
		       "without the toolkit: -ENOTSUP, \"built without CUDA\"");
		return;
	}
	ret = try_open("/nonexistent/libcuda.so.1", NULL, msg, sizeof(msg));
	tap_ok(ret == -ENOENT && strstr(msg, "cuda: cannot load the driver") &&
	       strstr(msg, "/nonexistent/libcuda.so.1"),
	       "no driver library: -ENOENT naming the file");

	ret = try_open(part, NULL, msg, sizeof(msg));
	{
		const char *p = strstr(msg, " has no ");
		char sym[64] = "";
		void *full = dlopen(fake, RTLD_NOW | RTLD_LOCAL);
		void *pl = dlopen(part, RTLD_NOW | RTLD_LOCAL);

		if (p)
			sscanf(p + 8, "%63[A-Za-z0-9_]", sym);
		tap_ok(ret == -ENOSYS && strstr(msg, part) && sym[0] == 'c' &&
		       pl && !dlsym(pl, sym) && full && dlsym(full, sym),
		       "entry point missing: -ENOSYS naming it (%s) and the library",
		       sym);
		if (pl)
			dlclose(pl);
		if (full)
			dlclose(full);
	}

	ret = try_open(fake, "nodev", msg, sizeof(msg));
	tap_ok(ret == -ENODEV &&
	       strstr(msg, "cuda: cuInit: CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)"),
	       "cuInit fails: -ENODEV with the CUresult's name and text");

	ret = try_open(fake, "zero", msg, sizeof(msg));
	tap_ok(ret == -ENODEV && strstr(msg, "no device 0 (0 device(s)"),
	       "no device: -ENODEV");

	{
		void *h = dlopen(fake, RTLD_NOW | RTLD_LOCAL);
		int (*refs)(void) = h ? (int (*)(void))dlsym(h, "mmfake_ctx_refs") : NULL;

		ret = try_open(fake, "old", msg, sizeof(msg));
		tap_ok(ret == -ENODEV && strstr(msg, "sm_75") &&
		       strstr(msg, "need sm_80"),
		       "a device below sm_80: -ENODEV naming both");
		ret = try_open(fake, "oom", msg, sizeof(msg));
		tap_ok(ret == -ENOMEM &&
		       strstr(msg, "cuda: cuModuleLoadData: CUDA_ERROR_OUT_OF_MEMORY (out of memory)"),
		       "the kernels do not load: -ENOMEM, named");
		tap_ok(refs && refs() == 0,
		       "the primary context released on failure (%d held)",
		       refs ? refs() : -1);
		if (h)
			dlclose(h);
	}
}

struct run {
	int ret;
	char err[256];
	struct mmhal_model_info info;
	float logits[2][512];
	int n_vocab;
};

/* Loads path with the backend, evaluates a prompt and a decode step. */
static void run_model(const char *path, int backend, struct run *r)
{
	struct mmhal_model_params p = mmhal_model_default_params();
	const int32_t prompt[5] = { 1, 7, 42, 99, 3 }, next = 17;
	struct mmhal_model *m = NULL;

	memset(r, 0, sizeof(*r));
	p.backend = backend;
	p.n_threads = 2;
	r->ret = mmhal_model_load(path, &p, &m, r->err, sizeof(r->err));
	if (r->ret)
		return;
	mmhal_model_info(m, &r->info);
	r->n_vocab = r->info.n_vocab;
	if (r->n_vocab > 512 ||
	    mmhal_model_eval(m, prompt, 5, r->logits[0]) ||
	    mmhal_model_eval(m, &next, 1, r->logits[1]))
		r->ret = -EIO;
	mmhal_model_free(m);
}

struct fallback_case {
	const char *name;
	const char *lib;	/* NULL: the fake */
	const char *mode;
	const char *why;	/* in the note / the refusal */
	int err;		/* of backend cuda */
};

static void test_fallback(const char *model, const char *fake,
			  const char *part)
{
	const struct fallback_case cases[] = {
		{ "no driver library", "/nonexistent/libcuda.so.1", NULL,
		  "cannot load the driver", -ENOENT },
		{ "entry points missing", part, NULL, " has no cu", -ENOSYS },
		{ "cuInit CUDA_ERROR_NO_DEVICE", fake, "nodev",
		  "cuInit: CUDA_ERROR_NO_DEVICE", -ENODEV },
	};
	const struct fallback_case nobuild = {
		"built without CUDA", fake, NULL, "built without CUDA",
		-ENOTSUP
	};
	static struct run cpu, r;
	const int nc = MM_TEST_BUILT ? 3 : 1;

	unsetenv("MMHAL_FAKE_CUDA");
	run_model(model, MMHAL_BACKEND_CPU, &cpu);
	if (!tap_ok(cpu.ret == 0 && !strcmp(cpu.info.backend, "cpu") &&
		    !strcmp(cpu.info.backend_note, "backend cpu requested"),
		    "backend cpu: loads, info says cpu (%d %s: %s)", cpu.ret,
		    cpu.info.backend, cpu.ret ? cpu.err : cpu.info.backend_note))
		return;
	for (int i = 0; i < nc; i++) {
		const struct fallback_case *c = MM_TEST_BUILT ? &cases[i] :
			&nobuild;

		setenv("MMHAL_CUDA_LIB", c->lib, 1);
		if (c->mode)
			setenv("MMHAL_FAKE_CUDA", c->mode, 1);
		else
			unsetenv("MMHAL_FAKE_CUDA");
		run_model(model, MMHAL_BACKEND_AUTO, &r);
		tap_ok(r.ret == 0 && !strcmp(r.info.backend, "cpu") &&
		       strstr(r.info.backend_note, c->why),
		       "%s: backend auto runs the cpu, info says why (%s)",
		       c->name, r.info.backend_note);
		tap_ok(r.ret == 0 && r.n_vocab == cpu.n_vocab &&
		       !memcmp(r.logits, cpu.logits, sizeof(r.logits)),
		       "%s: logits identical to backend cpu (prefill, decode)",
		       c->name);
		run_model(model, MMHAL_BACKEND_CUDA, &r);
		tap_ok(r.ret == c->err && !strncmp(r.err, "cuda: ", 6) &&
		       strstr(r.err, c->why) &&
		       strstr(r.err, "(backend cuda requested)"),
		       "%s: backend cuda refuses the load: %d %s", c->name,
		       r.ret, r.err);
	}
	run_model(model, 7, &r);
	tap_ok(r.ret == -EINVAL && strstr(r.err, "backend 7"),
	       "an unknown backend is refused: %s", r.err);
}

/* ---- the encoders (mmproj) ------------------------------------------- */

struct prun {
	int ret;
	char err[256];
	struct mmhal_mmproj_info info;
	float *img, *aud;	/* the chunks' embedding rows */
	size_t n_img, n_aud;	/* floats */
};

static void prun_free(struct prun *r)
{
	free(r->img);
	free(r->aud);
	memset(r, 0, sizeof(*r));
}

static float *chunk_rows(struct mmhal_chunk *c, size_t *n)
{
	struct mmhal_chunk_info ci = { .size = sizeof(ci) };
	const float *e;
	float *out;

	*n = 0;
	if (!c || mmhal_chunk_info(c, &ci) || !(e = mmhal_chunk_embd(c)))
		return NULL;
	*n = (size_t)ci.n_embd_rows * (size_t)ci.n_embd;
	out = malloc(*n * sizeof(float) + 1);
	if (out)
		memcpy(out, e, *n * sizeof(float));
	return out;
}

/* Loads proj for llm with the backend, encodes an RGB image and 1 s of
 * audio. */
static void run_proj(const struct mmhal_model *llm, const char *proj,
		     int backend, struct prun *r)
{
	struct mmhal_mmproj_params pp = mmhal_mmproj_default_params();
	struct mmhal_mmproj *p = NULL;
	struct mmhal_chunk *c = NULL;
	static uint8_t rgb[48 * 40 * 3];
	static int16_t pcm[16000];
	struct mmhal_image im = { .format = MMHAL_IMAGE_RGB24, .width = 48,
				  .height = 40, .plane = { rgb },
				  .stride = { 48 * 3 } };
	struct mmhal_audio au = mmhal_audio_s16(pcm, 16000, 16000);

	memset(r, 0, sizeof(*r));
	for (size_t i = 0; i < sizeof(rgb); i++)
		rgb[i] = (uint8_t)(i * 37 + i / 97);
	for (size_t i = 0; i < 16000; i++)
		pcm[i] = (int16_t)(((i * 7919) % 20011) - 10005);
	pp.n_threads = 2;
	pp.audio_exact = 0;
	pp.backend = backend;
	r->ret = mmhal_mmproj_load(proj, llm, &pp, &p, r->err, sizeof(r->err));
	if (r->ret)
		return;
	r->info.size = sizeof(r->info);
	mmhal_mmproj_info(p, &r->info);
	r->ret = mmhal_encode_image(p, &im, &c, r->err, sizeof(r->err));
	r->img = chunk_rows(c, &r->n_img);
	mmhal_chunk_free(c);
	c = NULL;
	if (!r->ret)
		r->ret = mmhal_encode_audio(p, &au, &c, r->err, sizeof(r->err));
	r->aud = chunk_rows(c, &r->n_aud);
	mmhal_chunk_free(c);
	if (!r->ret && (!r->img || !r->aud || !r->n_img || !r->n_aud))
		r->ret = -EIO;
	mmhal_mmproj_free(p);
}

static int same_rows(const struct prun *a, const struct prun *b)
{
	return a->n_img == b->n_img && a->n_aud == b->n_aud &&
	       !memcmp(a->img, b->img, a->n_img * sizeof(float)) &&
	       !memcmp(a->aud, b->aud, a->n_aud * sizeof(float));
}

/* ---- frames read in place (mmhal_mmproj_map_frames) -------------------- */

/* An NV12 frame of 48 x 40 at byte 64 of a mapping of 3 pages, its
 * content from seed. */
static void nv12_frame(uint8_t *map, unsigned seed, struct mmhal_image *im)
{
	uint8_t *y = map + 64, *uv = y + 48 * 40;

	for (size_t i = 0; i < 48 * 40; i++)
		y[i] = (uint8_t)(16 + (i * 13 + seed * 71 + i / 48 * 5) % 220);
	for (size_t i = 0; i < 48 * 20; i++)
		uv[i] = (uint8_t)((i * 29 + seed * 17) % 256);
	*im = (struct mmhal_image){ .format = MMHAL_IMAGE_NV12, .width = 48,
				    .height = 40, .plane = { y, uv },
				    .stride = { 48, 48 } };
}

static float *encode_rows(const struct mmhal_mmproj *p,
			  const struct mmhal_image *im, size_t *n)
{
	struct mmhal_chunk *c = NULL;
	char err[256];
	float *r = NULL;

	*n = 0;
	if (!mmhal_encode_image(p, im, &c, err, sizeof(err)))
		r = chunk_rows(c, n);
	else
		tap_diag("encode: %s", err);
	mmhal_chunk_free(c);
	return r;
}

/* On the fake driver (fake: "run": registration works, no kernel runs;
 * "regfail": cuMemHostRegister fails): a declared mapping is registered
 * once across frames, its frames go to the device preprocessing, the
 * device's failure leaves the CPU's embeddings (bit-identical to
 * backend cpu), unmap_frames and the free unregister. */
static void test_frames(const struct mmhal_model *llm, const char *proj,
			const char *fake, const char *fmode)
{
	struct mmhal_mmproj_params pp = mmhal_mmproj_default_params();
	struct mmhal_mmproj *pc = NULL, *pd = NULL;
	struct mmhal_mmproj_info info = { .size = sizeof(info) };
	const int run = !strcmp(fmode, "run");
	void (*host)(int *, int *, int *);
	int (*launches)(const char *);
	int calls, ok, un, same = 1, ret;
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), na, nb;
	void *lib = dlopen(fake, RTLD_NOW);
	char err[256];
	uint8_t *map;
	struct mmhal_image im;

	host = lib ? (void (*)(int *, int *, int *))dlsym(lib, "mmfake_host")
		   : NULL;
	launches = lib ? (int (*)(const char *))dlsym(lib, "mmfake_launches")
		       : NULL;
	map = mmap(NULL, 3 * pg, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!tap_ok(host && launches && map != MAP_FAILED,
		    "%s: fake driver counters and a frame mapping", fmode))
		goto out;
	pp.n_threads = 2;
	pp.backend = MMHAL_BACKEND_CPU;
	unsetenv("MMHAL_FAKE_CUDA");
	ret = mmhal_mmproj_load(proj, llm, &pp, &pc, err, sizeof(err));
	if (!ret) {
		setenv("MMHAL_CUDA_LIB", fake, 1);
		setenv("MMHAL_FAKE_CUDA", fmode, 1);
		pp.backend = MMHAL_BACKEND_AUTO;
		ret = mmhal_mmproj_load(proj, llm, &pp, &pd, err, sizeof(err));
	}
	if (!ret)
		mmhal_mmproj_info(pd, &info);
	if (!tap_ok(!ret && !strcmp(info.backend, "cuda"),
		    "%s: mmproj on the fake device (%s)", fmode,
		    ret ? err : info.backend_note))
		goto out;
	host(&calls, &ok, &un);
	tap_ok(calls == 0 && mmhal_mmproj_map_frames(pd, map, 3 * pg) == 0 &&
	       mmhal_mmproj_map_frames(pd, map, 3 * pg) == 0 &&
	       mmhal_mmproj_map_frames(pc, map, 3 * pg) == 0 &&
	       mmhal_mmproj_map_frames(pd, NULL, 1) == -EINVAL,
	       "%s: map_frames declares (twice: once kept), NULL refused; no registration yet",
	       fmode);
	for (unsigned f = 0; f < 3; f++) {
		float *a, *b;

		nv12_frame(map, f, &im);
		a = encode_rows(pd, &im, &na);
		b = encode_rows(pc, &im, &nb);
		same &= a && b && na == nb && na &&
			!memcmp(a, b, na * sizeof(float));
		free(a);
		free(b);
	}
	host(&calls, &ok, &un);
	info.size = sizeof(info);
	mmhal_mmproj_info(pd, &info);
	tap_ok(calls == 1 && ok == run && un == 0,
	       "%s: 3 frames of one mapping: 1 registration (%d calls, %d ok, %d unregistered)",
	       fmode, calls, ok, un);
	tap_ok(launches("mm_pre_overview") == (run ? 3 : 0),
	       "%s: the device preprocessing launched for each frame when registered (%d)",
	       fmode, launches("mm_pre_overview"));
	tap_ok(same && info.cuda_failed >= (run ? 3u : 1u),
	       "%s: device failures fall back: embeddings identical to backend cpu (%zu floats), %llu failures counted",
	       fmode, na, (unsigned long long)info.cuda_failed);
	mmhal_mmproj_unmap_frames(pd, map + pg, 1);	/* overlaps */
	host(&calls, &ok, &un);
	tap_ok(un == run, "%s: unmap_frames unregisters (%d)", fmode, un);
	nv12_frame(map, 7, &im);
	free(encode_rows(pd, &im, &na));
	host(&calls, &ok, &un);
	tap_ok(calls == 1 && launches("mm_pre_overview") == (run ? 3 : 0),
	       "%s: a frame outside the declared mappings: the CPU, no registration",
	       fmode);
	mmhal_mmproj_map_frames(pd, map, 3 * pg);
	free(encode_rows(pd, &im, &na));
	mmhal_mmproj_free(pd);
	pd = NULL;
	host(&calls, &ok, &un);
	tap_ok(calls == 2 && ok == 2 * run && un == 2 * run,
	       "%s: declared again, registered again; the free unregisters (%d calls, %d ok, %d unregistered)",
	       fmode, calls, ok, un);
out:
	mmhal_mmproj_free(pd);
	mmhal_mmproj_free(pc);
	if (map != MAP_FAILED)
		munmap(map, 3 * pg);
	if (lib)
		dlclose(lib);
	unsetenv("MMHAL_FAKE_CUDA");
}

/* The encoders' back end: params.backend auto falls back to the CPU with
 * embeddings identical to backend cpu (F16 and Q8_0 weights: the f32 and
 * int8 GEMM paths), cuda refuses the load, an unknown one is -EINVAL. */
static void test_proj(const char *dir, const char *fake, const char *part)
{
	const struct fallback_case cases[] = {
		{ "no driver library", "/nonexistent/libcuda.so.1", NULL,
		  "cannot load the driver", -ENOENT },
		{ "entry points missing", part, NULL, " has no cu", -ENOSYS },
		{ "cuInit CUDA_ERROR_NO_DEVICE", fake, "nodev",
		  "cuInit: CUDA_ERROR_NO_DEVICE", -ENODEV },
		{ "a device below sm_80", fake, "old", "need sm_80", -ENODEV },
	};
	const struct fallback_case nobuild = {
		"built without CUDA", fake, NULL, "built without CUDA",
		-ENOTSUP
	};
	const int nc = MM_TEST_BUILT ? 4 : 1;
	const uint32_t types[2] = { 1 /* F16 */, 8 /* Q8_0 */ };
	struct mm_gen_params gp = { .shape = "tiny", .tokenizer = "smolvlm",
				    .type = 0, .seed = 3 };
	struct mm_gen_mmproj_params mp = { .vision = "tiny", .audio = "tiny",
					   .seed = 4 };
	struct mmhal_model *llm = NULL;
	char llm_path[600], proj[600], err[256] = "";
	static struct prun cpu, r;
	int ret;

	snprintf(llm_path, sizeof(llm_path), "%s/tiny-smolvlm.gguf", dir);
	ret = mm_gen_model(&gp, llm_path, err, sizeof(err));
	if (!ret)
		ret = mmhal_model_load(llm_path, NULL, &llm, err, sizeof(err));
	if (!tap_ok(!ret, "tiny LLM (smolvlm vocabulary) for the mmproj%s%s",
		    ret ? ": " : "", ret ? err : ""))
		goto out;
	for (int t = 0; t < 2; t++) {
		const char *tn = types[t] == 1 ? "f16" : "q8_0";

		snprintf(proj, sizeof(proj), "%s/mmproj-%s.gguf", dir, tn);
		mp.type = types[t];
		ret = mm_gen_mmproj(&mp, proj, err, sizeof(err));
		if (!tap_ok(!ret, "tiny vision+audio mmproj at %s%s%s", tn,
			    ret ? ": " : "", ret ? err : ""))
			continue;
		unsetenv("MMHAL_FAKE_CUDA");
		run_proj(llm, proj, MMHAL_BACKEND_CPU, &cpu);
		tap_ok(cpu.ret == 0 && !strcmp(cpu.info.backend, "cpu") &&
		       !strcmp(cpu.info.backend_note, "backend cpu requested") &&
		       cpu.info.cuda_products == 0,
		       "%s: mmproj backend cpu: encodes, info says cpu (%d %s: %s)",
		       tn, cpu.ret, cpu.info.backend,
		       cpu.ret ? cpu.err : cpu.info.backend_note);
		for (int i = 0; i < nc && !cpu.ret; i++) {
			const struct fallback_case *c = MM_TEST_BUILT ?
				&cases[i] : &nobuild;

			setenv("MMHAL_CUDA_LIB", c->lib, 1);
			if (c->mode)
				setenv("MMHAL_FAKE_CUDA", c->mode, 1);
			else
				unsetenv("MMHAL_FAKE_CUDA");
			run_proj(llm, proj, MMHAL_BACKEND_AUTO, &r);
			tap_ok(r.ret == 0 && !strcmp(r.info.backend, "cpu") &&
			       strstr(r.info.backend_note, c->why) &&
			       r.info.cuda_products == 0,
			       "%s, %s: mmproj backend auto runs the cpu, info says why (%s)",
			       tn, c->name, r.ret ? r.err : r.info.backend_note);
			tap_ok(r.ret == 0 && same_rows(&r, &cpu),
			       "%s, %s: image and audio embeddings identical to backend cpu (%zu + %zu floats)",
			       tn, c->name, r.n_img, r.n_aud);
			prun_free(&r);
			run_proj(llm, proj, MMHAL_BACKEND_CUDA, &r);
			tap_ok(r.ret == c->err && !strncmp(r.err, "cuda: ", 6) &&
			       strstr(r.err, c->why) &&
			       strstr(r.err, "(backend cuda requested)"),
			       "%s, %s: mmproj backend cuda refuses the load: %d %s",
			       tn, c->name, r.ret, r.err);
			prun_free(&r);
		}
		prun_free(&cpu);
		if (MM_TEST_BUILT && t == 0) {
			test_frames(llm, proj, fake, "run");
			test_frames(llm, proj, fake, "regfail");
		}
		if (t == 0) {
			run_proj(llm, proj, 3, &r);
			tap_ok(r.ret == -EINVAL &&
			       strstr(r.err, "params.backend 3"),
			       "mmproj: an unknown backend is refused: %s",
			       r.err);
			prun_free(&r);
		}
		unlink(proj);
	}
out:
	mmhal_model_free(llm);
	unlink(llm_path);
}

static void test_fence(void)
{
	int fds[2];
	char msg[128];

	tap_ok(mm_cuda_fence_wait(-1, 0, msg, sizeof(msg)) == 0,
	       "no fence: no wait");
	if (pipe(fds))
		return;
	tap_ok(mm_cuda_fence_wait(fds[0], 20, msg, sizeof(msg)) == -ETIME &&
	       strstr(msg, "did not signal in 20 ms"),
	       "a fence not signalled: -ETIME after the timeout");
	tap_ok(write(fds[1], "x", 1) == 1 &&
	       mm_cuda_fence_wait(fds[0], 20, msg, sizeof(msg)) == 0,
	       "a signalled fence (readable fd): 0");
	close(fds[0]);
	close(fds[1]);
}

int main(int argc, char **argv)
{
	const char *fake = NULL, *part = NULL, *dir = NULL;
	char model[] = "/tmp/mmhal-cuda-test-XXXXXX", path[600], err[256];
	struct mm_gen_params gp = { .shape = "micro", .tokenizer = "gpt2",
				    .type = 1, .seed = 5 };
	int opt;

	while ((opt = getopt(argc, argv, "f:p:w:")) != -1) {
		if (opt == 'f')
			fake = optarg;
		else if (opt == 'p')
			part = optarg;
		else if (opt == 'w')
			dir = optarg;
		else
			return 2;
	}
	if (!fake || !part) {
		fprintf(stderr, "usage: cuda_test -f FAKE.so -p PARTIAL.so [-w DIR]\n");
		return 2;
	}
	test_ptx(dir);
	test_loader(fake, part);
	test_fence();
	if (!mkdtemp(model)) {
		tap_ok(0, "temporary directory: %s", strerror(errno));
		return tap_done("cuda");
	}
	snprintf(path, sizeof(path), "%s/micro.gguf", model);
	if (tap_ok(mm_gen_model(&gp, path, err, sizeof(err)) == 0,
		   "test model generated (%s)", err))
		test_fallback(path, fake, part);
	unlink(path);
	test_proj(model, fake, part);
	rmdir(model);
	return tap_done("cuda");
}

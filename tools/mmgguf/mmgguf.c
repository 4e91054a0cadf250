// SPDX-License-Identifier: MIT
/*
 * mmgguf - GGUF model files for mmedge.
 *
 *   mmgguf gen --shape smollm2-135m|tiny|micro|gqa4 --tokenizer gpt2|llama|smolvlm
 *              --type f32|f16 [--seed N] -o FILE
 *   mmgguf gen [--vision smolvlm-256m|smolvlm-224|llava-mlp|tiny|tiny-mlp|micro]
 *              [--audio whisper-tiny|tiny|micro] --type TYPE [--seed N] -o FILE
 *              (a multimodal projector file; both: one file, two encoders)
 *   mmgguf quantize IN OUT --type q8_0|q4_0|q4_k [--pure]
 *              [--keep NAME_GLOB=TYPE ...]
 *   mmgguf info FILE
 *   mmgguf keygen | sign | verify ... (signatures: mmgguf_sign.c)
 *   mmgguf calib ... / mmgguf capgen ... (INT8 calibration: mmgguf_calib.c)
 *
 * Exit status: 0 success, 1 the operation failed (message on stderr),
 * 2 usage error.
 */
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"
#include "gguf.h"
#include "mmgguf_sign.h"
#include "mmgguf_calib.h"
#include "quant.h"

static void mmgguf_usage(FILE *f)
{
	fprintf(f,
		"usage: mmgguf gen --shape smollm2-135m|tiny|micro|gqa4 --tokenizer gpt2|llama|smolvlm\n"
		"                  --type f32|f16 [--seed N] -o FILE\n"
		"       mmgguf gen [--vision smolvlm-256m|smolvlm-224|llava-mlp|tiny|tiny-mlp|micro]\n"
		"                  [--audio whisper-tiny|tiny|micro]\n"
		"                  --type f32|f16|bf16|q8_0|q4_0|q4_1|q5_0|q4_k|q6_k [--seed N] -o FILE\n"
		"       mmgguf quantize IN OUT --type q8_0|q4_0|q4_k [--pure]\n"
		"                  [--keep NAME_GLOB=TYPE ...]\n"
		"       mmgguf info FILE\n");
	mmgguf_sign_usage(f);
}

static int mmgguf_type(const char *s, uint32_t *t)
{
	static const struct { const char *n; uint32_t t; } tab[] = {
		{ "f32", MM_TYPE_F32 }, { "f16", MM_TYPE_F16 },
		{ "bf16", MM_TYPE_BF16 }, { "q8_0", MM_TYPE_Q8_0 },
		{ "q4_0", MM_TYPE_Q4_0 }, { "q4_1", MM_TYPE_Q4_1 },
		{ "q5_0", MM_TYPE_Q5_0 }, { "q4_k", MM_TYPE_Q4_K },
		{ "q6_k", MM_TYPE_Q6_K },
	};

	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
		if (!strcasecmp(s, tab[i].n)) {
			*t = tab[i].t;
			return 0;
		}
	return -EINVAL;
}

static int mmgguf_gen(int argc, char **argv)
{
	struct mm_gen_params p = { .tokenizer = "gpt2", .type = MM_TYPE_F32 };
	struct mm_gen_mmproj_params mp = { 0 };
	const char *out = NULL;
	char err[256];
	int ret;

	/* option, value */
	for (int i = 0; i < argc; i += 2) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!v)
			goto usage;
		if (!strcmp(a, "--shape"))
			p.shape = v;
		else if (!strcmp(a, "--tokenizer"))
			p.tokenizer = v;
		else if (!strcmp(a, "--vision"))
			mp.vision = v;
		else if (!strcmp(a, "--audio"))
			mp.audio = v;
		else if (!strcmp(a, "--type")) {
			if (mmgguf_type(v, &p.type)) {
				fprintf(stderr, "mmgguf gen: unknown --type '%s'\n", v);
				return 2;
			}
		} else if (!strcmp(a, "--seed"))
			p.seed = strtoull(v, NULL, 0);
		else if (!strcmp(a, "-o"))
			out = v;
		else
			goto usage;
	}
	if (!out || !!p.shape == !!(mp.vision || mp.audio))
		goto usage;
	if (mp.vision || mp.audio) {
		mp.type = p.type;
		mp.seed = p.seed;
		ret = mm_gen_mmproj(&mp, out, err, sizeof(err));
		if (ret) {
			fprintf(stderr, "mmgguf gen: %s\n", err);
			return 1;
		}
		return 0;
	}
	if (p.type != MM_TYPE_F32 && p.type != MM_TYPE_F16) {
		fprintf(stderr, "mmgguf gen: --type must be f32 or f16 for a model (quantize afterwards with 'mmgguf quantize')\n");
		return 2;
	}
	ret = mm_gen_model(&p, out, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "mmgguf gen: %s\n", err);
		return 1;
	}
	return 0;
usage:
	mmgguf_usage(stderr);
	return 2;
}

/* ---- info ------------------------------------------------------------- */

static void mmgguf_print_scalar(const struct mm_gguf_kv *kv)
{
	switch (kv->type) {
	case MM_GGUF_U8: case MM_GGUF_U16: case MM_GGUF_U32: case MM_GGUF_U64:
		printf("%" PRIu64, kv->v.u);
		break;
	case MM_GGUF_I8: case MM_GGUF_I16: case MM_GGUF_I32: case MM_GGUF_I64:
		printf("%" PRId64, kv->v.i);
		break;
	case MM_GGUF_F32: case MM_GGUF_F64:
		printf("%g", kv->v.f);
		break;
	case MM_GGUF_BOOL:
		printf("%s", kv->v.u ? "true" : "false");
		break;
	}
}

static void mmgguf_print_str(const char *s, size_t n, size_t max)
{
	putchar('"');
	for (size_t i = 0; i < n && i < max; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c == '\n')
			printf("\\n");
		else if (c < 0x20 || c == 0x7f)
			printf("\\x%02x", c);
		else
			putchar(c);
	}
	putchar('"');
	if (n > max)
		printf("...(%zu bytes)", n);
}

static int mmgguf_info(int argc, char **argv)
{
	struct mm_gguf *g;
	char err[256];
	int ret;

	if (argc != 1) {
		mmgguf_usage(stderr);
		return 2;
	}
	ret = mm_gguf_open(argv[0], &g, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "mmgguf info: %s\n", err);
		return 1;
	}
	printf("file: %s\nversion: %u\nsize: %" PRIu64 " bytes\nalignment: %u\n"
	       "data offset: %" PRIu64 "\narchitecture: %s\n"
	       "kv: %" PRIu64 "\ntensors: %" PRIu64 "\n\n",
	       argv[0], mm_gguf_version(g), mm_gguf_file_size(g),
	       mm_gguf_alignment(g), mm_gguf_data_offset(g),
	       mm_gguf_arch(g) ? mm_gguf_arch(g) : "(none)",
	       mm_gguf_n_kv(g), mm_gguf_n_tensors(g));
	for (uint64_t i = 0; i < mm_gguf_n_kv(g); i++) {
		const struct mm_gguf_kv *kv = mm_gguf_kv_at(g, i);

		printf("  %-44s %-6s ", kv->key, mm_gguf_vtype_name(kv->type));
		if (kv->type == MM_GGUF_STR) {
			mmgguf_print_str(kv->v.str, kv->n, 60);
		} else if (kv->type == MM_GGUF_ARR) {
			printf("[%s x %" PRIu64 "]", mm_gguf_vtype_name(kv->arr_type),
			       kv->n);
			for (uint64_t k = 0; k < kv->n && k < 4; k++) {
				const char *s;
				size_t n;
				float f;
				int32_t v;

				putchar(' ');
				if (!mm_gguf_arr_str(kv, k, &s, &n))
					mmgguf_print_str(s, n, 24);
				else if (!mm_gguf_arr_f32(kv, k, &f))
					printf("%g", f);
				else if (!mm_gguf_arr_i32(kv, k, &v))
					printf("%d", v);
				else
					printf("?");
			}
			if (kv->n > 4)
				printf(" ...");
		} else {
			mmgguf_print_scalar(kv);
		}
		putchar('\n');
	}
	printf("\n  %-4s %-32s %-6s %-24s %12s %12s\n", "#", "tensor", "type",
	       "shape", "offset", "bytes");
	for (uint64_t i = 0; i < mm_gguf_n_tensors(g); i++) {
		const struct mm_gguf_tensor *t = mm_gguf_tensor_at(g, i);
		char shape[64];
		int k = 0;

		for (uint32_t d = 0; d < t->n_dims; d++)
			k += snprintf(shape + k, sizeof(shape) - (size_t)k,
				      "%s%" PRId64, d ? " x " : "", t->ne[d]);
		if (!t->n_dims)
			snprintf(shape, sizeof(shape), "scalar");
		printf("  %-4" PRIu64 " %-32s %-6s %-24s %12" PRIu64 " %12" PRIu64 "\n",
		       i, t->name, mm_gguf_type_name(t->type), shape, t->offset,
		       t->size);
	}
	mm_gguf_close(g);
	return 0;
}

/* ---- quantize --------------------------------------------------------- */

struct mmgguf_rule {
	const char *glob;
	uint32_t type;
};

struct mmgguf_plan {
	const struct mm_gguf_tensor *t;
	uint32_t out;
	float **row;		/* shared scratch */
	size_t *row_n;
};

/* Fills dst with tensor t converted row by row to plan->out. */
static int mmgguf_q_fill(void *arg, const char *name, void *dst,
			 uint64_t size)
{
	struct mmgguf_plan *p = arg;
	const struct mm_gguf_tensor *t = p->t;
	int64_t ne0 = t->ne[0];
	size_t in_rb, out_rb;
	uint64_t rows;

	(void)name;
	if (!ne0 || !size)
		return 0;
	in_rb = mm_row_bytes(t->type, ne0);
	out_rb = mm_row_bytes(p->out, ne0);
	if (!in_rb || !out_rb)
		return -EINVAL;
	rows = t->size / in_rb;
	if (rows * out_rb != size)
		return -EINVAL;
	if ((size_t)ne0 > *p->row_n) {
		float *r = realloc(*p->row, (size_t)ne0 * sizeof(float));

		if (!r)
			return -ENOMEM;
		*p->row = r;
		*p->row_n = (size_t)ne0;
	}
	for (uint64_t r = 0; r < rows; r++) {
		mm_dequantize_row(t->type, (const uint8_t *)t->data + r * in_rb,
				  *p->row, ne0);
		mm_quantize_row(p->out, *p->row, (uint8_t *)dst + r * out_rb,
				ne0);
	}
	return 0;
}

static int mmgguf_more_bits(int i, int n)
{
	return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

static uint32_t mmgguf_pick(const struct mm_gguf_tensor *t, uint32_t base,
			    int pure, int tied, int n_layer,
			    const struct mmgguf_rule *rules, int n_rules,
			    int *overridden)
{
	uint32_t want = base;
	int layer = -1;

	*overridden = 0;
	for (int i = 0; i < n_rules; i++)
		if (!fnmatch(rules[i].glob, t->name, 0)) {
			*overridden = 1;
			return mm_gen_fit(rules[i].type, t->ne[0]);
		}
	/*
	 * By role, as llama.cpp's converter and quantizer decide: anything
	 * that is not a ".weight" (biases, whatever their stored shape: the
	 * Whisper convolutions' are [1, n]), 1-D tensors, norms and position
	 * or class embeddings stay F32; the Whisper encoder's convolutions
	 * F16; a patch embedding keeps the type the converter gave it.
	 */
	if (!mm_gen_ends(t->name, ".weight") || t->n_dims < 2 ||
	    (t->ne[1] == 1 && t->ne[2] == 1 && t->ne[3] == 1) ||
	    strstr(t->name, "_norm.") || strstr(t->name, ".norm_") ||
	    strstr(t->name, "position_embd") || strstr(t->name, "class_embd"))
		return MM_TYPE_F32;
	if (!strncmp(t->name, "a.conv1d.", 9))
		return MM_TYPE_F16;
	if (strstr(t->name, "patch_embd."))
		return t->type;
	if (!pure) {
		if (!strcmp(t->name, "output.weight") ||
		    (tied && !strcmp(t->name, "token_embd.weight"))) {
			if (t->ne[0] % 256)
				return MM_TYPE_Q8_0;
			return base == MM_TYPE_Q8_0 ? base : MM_TYPE_Q6_K;
		}
		if (sscanf(t->name, "blk.%d.", &layer) == 1 &&
		    base == MM_TYPE_Q4_K && n_layer > 0 &&
		    (strstr(t->name, ".attn_v.") || strstr(t->name, ".ffn_down.")) &&
		    mmgguf_more_bits(layer, n_layer))
			want = MM_TYPE_Q6_K;
	}
	return mm_gen_fit(want, t->ne[0]);
}

static int mmgguf_quantize(int argc, char **argv)
{
	struct mmgguf_rule rules[64];
	int n_rules = 0, pure = 0, tied, ret = 1, n_layer = -1;
	const char *in = NULL, *out = NULL;
	uint32_t base = UINT32_MAX, nl;
	struct mmgguf_plan *plan = NULL;
	struct mm_gguf_writer *w = NULL;
	struct mm_gguf *g = NULL;
	float *row = NULL;
	size_t row_n = 0;
	char err[256], key[128];
	const char *arch;

	for (int i = 0; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--pure")) {
			pure = 1;
		} else if (!strcmp(a, "--type") && v) {
			if (mmgguf_type(v, &base) ||
			    (base != MM_TYPE_Q8_0 && base != MM_TYPE_Q4_0 &&
			     base != MM_TYPE_Q4_K)) {
				fprintf(stderr, "mmgguf quantize: --type must be q8_0, q4_0 or q4_k\n");
				return 2;
			}
			i++;
		} else if (!strcmp(a, "--keep") && v) {
			char *eq = strrchr(v, '=');

			if (!eq || eq == v || n_rules == 64 ||
			    mmgguf_type(eq + 1, &rules[n_rules].type)) {
				fprintf(stderr, "mmgguf quantize: --keep wants NAME_GLOB=TYPE with TYPE one of f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q4_k q6_k (got '%s')\n",
					v);
				return 2;
			}
			*eq = 0;
			rules[n_rules++].glob = v;
			i++;
		} else if (a[0] != '-' && !in) {
			in = a;
		} else if (a[0] != '-' && !out) {
			out = a;
		} else {
			mmgguf_usage(stderr);
			return 2;
		}
	}
	if (!in || !out || base == UINT32_MAX) {
		mmgguf_usage(stderr);
		return 2;
	}
	if (mm_gguf_open(in, &g, err, sizeof(err))) {
		fprintf(stderr, "mmgguf quantize: %s\n", err);
		return 1;
	}
	arch = mm_gguf_arch(g);
	snprintf(key, sizeof(key), "%s.block_count", arch ? arch : "llama");
	if (!mm_gguf_get_u32(g, key, &nl))
		n_layer = (int)nl;
	tied = !mm_gguf_tensor(g, "output.weight");

	w = mm_gguf_writer_new(mm_gguf_alignment(g));
	plan = calloc(mm_gguf_n_tensors(g) + 1, sizeof(*plan));
	if (!w || !plan) {
		fprintf(stderr, "mmgguf quantize: out of memory\n");
		goto out;
	}
	for (uint64_t i = 0; i < mm_gguf_n_kv(g); i++) {
		const struct mm_gguf_kv *kv = mm_gguf_kv_at(g, i);
		int r;

		if (!strcmp(kv->key, "general.file_type") ||
		    !strcmp(kv->key, "general.quantization_version"))
			continue;
		r = mm_gguf_w_kv(w, kv);
		if (r) {
			fprintf(stderr, "mmgguf quantize: key '%s': cannot copy: %s\n",
				kv->key, strerror(-r));
			goto out;
		}
	}
	/* a pure Q4_K file is Q4_K_S (14) */
	mm_gguf_w_u32(w, "general.file_type",
		      pure && base == MM_TYPE_Q4_K ? 14 : mm_gen_ftype(base));
	mm_gguf_w_u32(w, "general.quantization_version", 2);

	for (uint64_t i = 0; i < mm_gguf_n_tensors(g); i++) {
		const struct mm_gguf_tensor *t = mm_gguf_tensor_at(g, i);
		int over, r;

		if (!mm_type_valid(t->type)) {
			fprintf(stderr, "mmgguf quantize: tensor '%s': input type %s cannot be converted (f32, f16, bf16, q8_0, q4_0, q4_1, q4_k, q6_k can)\n",
				t->name, mm_gguf_type_name(t->type));
			goto out;
		}
		plan[i].t = t;
		plan[i].out = mmgguf_pick(t, base, pure, tied, n_layer, rules,
					  n_rules, &over);
		plan[i].row = &row;
		plan[i].row_n = &row_n;
		r = mm_gguf_w_tensor_cb(w, t->name, plan[i].out, t->n_dims,
					t->ne, mmgguf_q_fill, &plan[i]);
		if (r) {
			fprintf(stderr, "mmgguf quantize: tensor '%s': %s\n",
				t->name, strerror(-r));
			goto out;
		}
		printf("[%3" PRIu64 "/%3" PRIu64 "] %-32s %-5s -> %-5s%s\n", i + 1,
		       mm_gguf_n_tensors(g), t->name,
		       mm_gguf_type_name(t->type), mm_gguf_type_name(plan[i].out),
		       over ? " (override)" : "");
	}
	if (mm_gguf_w_write_file(w, out, err, sizeof(err))) {
		fprintf(stderr, "mmgguf quantize: %s: %s\n", out, err);
		goto out;
	}
	ret = 0;
out:
	mm_gguf_writer_free(w);
	free(plan);
	free(row);
	mm_gguf_close(g);
	return ret;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		mmgguf_usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "gen"))
		return mmgguf_gen(argc - 2, argv + 2);
	if (!strcmp(argv[1], "info"))
		return mmgguf_info(argc - 2, argv + 2);
	if (!strcmp(argv[1], "quantize"))
		return mmgguf_quantize(argc - 2, argv + 2);
	if (!strcmp(argv[1], "keygen") || !strcmp(argv[1], "sign") ||
	    !strcmp(argv[1], "verify"))
		return mmgguf_sign_main(argc - 1, argv + 1);
	if (!strcmp(argv[1], "calib"))
		return mmgguf_calib(argc - 2, argv + 2);
	if (!strcmp(argv[1], "capgen"))
		return mmgguf_capgen(argc - 2, argv + 2);
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
	    !strcmp(argv[1], "help")) {
		mmgguf_usage(stdout);
		return 0;
	}
	fprintf(stderr, "mmgguf: unknown command '%s'\n", argv[1]);
	mmgguf_usage(stderr);
	return 2;
}

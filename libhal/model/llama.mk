# SPDX-License-Identifier: MIT
#
# llama.mk - LLaMA-family decoder, sampler and model API of libhal/model.
# Included by ./Makefile (which defines O, CC, BASE_CFLAGS, OPT, SAN), after
# gguf.mk and quant.mk.
#
# Targets:
#   llama-all    sanitized test and optimised benchmark binaries
#   llama-check  decoder/sampler/accounting tests (ASan+UBSan); last line
#                "RESULT llama <passed> <failed> <skipped>", non-zero on failure
#   llama-check-arm64  the same tests cross-built for arm64 (NEON kernels)
#                and run under qemu-aarch64 as two CPUs: "RESULT
#                llama-arm64 <passed> <failed> (<cpu>)" each
#   llama-bench  SmolLM2-135M-shaped model at Q8_0 and Q4_K: prefill and
#                decode tokens/s, decode vs the bandwidth roofline, peak RSS
#                (optimised, no sanitizers), after a 256-token prompt (the
#                bar) and after a 1024-token one (attention's share). The
#                generated models are kept in $(O)/llama/models (about 1 GB)
#                and reused.
#   llama-tier-bench  the same model's Q4_K file with Q8_0 and F16 tiers:
#                20 prompts x 32 greedy tokens decoded by confidence vs the
#                F16 tier alone (steps per tier, token agreement) and each
#                tier's decode speed, at the generated logit scale and at
#                a flatter one (output_norm x 0.4); tier_bench.c
#
# For the library (../Makefile): LLAMA_SRCS are the sources: llama_load.c
# (hyperparameters, weights, repacking, info), llama_ctx.c (sessions: KV
# cache, activations, stats), llama_attn.c (attention over the KV cache),
# llama_state.c (a session saved to / loaded from a file), llama.c (forward
# pass, eval/generate, model API), vec.c (SIMD row helpers
# and the F16 attention kernel, chosen from quant.c's kernel set) and
# sampler.c.
#
# The tests and the benchmark link the objects of gguf.mk and quant.mk
# (GGUF_*_OBJS, QUANT_*_OBJS, gen.o included); if those lists are absent,
# the sources are compiled here into $(O)/llama/{san,opt} (kern_*.c with
# their QUANT_ISA_CFLAGS_*). The benchmark makes its models with
# $(GGUF_TOOL) (mmgguf gen / quantize) when gguf.mk defines it.

LLAMA_DIR := $(CURDIR)
LLAMA_O := $(O)/llama
LLAMA_WARN := -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wundef
LLAMA_CFLAGS := $(BASE_CFLAGS) -I$(LLAMA_DIR)/tools -I$(LLAMA_DIR)/tests \
	-pthread

LLAMA_SRCS := llama.c llama_load.c llama_ctx.c llama_attn.c llama_state.c vec.c \
	sampler.c
LLAMA_OWN := $(LLAMA_SRCS) tests/ref_llama.c
LLAMA_DEP_SRCS := $(filter-out $(LLAMA_SRCS),$(sort $(MODEL_SRCS) \
	quant.c threadpool.c kern_scalar.c gguf.c gguf_write.c tokenizer.c)) \
	tools/gen.c
MODEL_SRCS += $(LLAMA_SRCS)

LLAMA_HDRS := $(wildcard $(LLAMA_DIR)/*.h $(LLAMA_DIR)/tools/*.h \
	$(LLAMA_DIR)/tests/*.h) $(abspath ../include/mmhal_model.h) \
	$(abspath ../include/mmhal.h)
# Link the objects gguf.mk and quant.mk build when they name them (gen.o
# included); otherwise compile those sources here.
ifneq ($(and $(GGUF_SAN_OBJS),$(GGUF_OPT_OBJS),$(QUANT_SAN_OBJS),$(QUANT_OPT_OBJS)),)
LLAMA_SAN_OBJS := $(LLAMA_OWN:%.c=$(LLAMA_O)/san/%.o) $(GGUF_SAN_OBJS) \
	$(QUANT_SAN_OBJS)
LLAMA_OPT_OBJS := $(LLAMA_OWN:%.c=$(LLAMA_O)/opt/%.o) $(GGUF_OPT_OBJS) \
	$(QUANT_OPT_OBJS)
else
LLAMA_OBJ_SRCS := $(LLAMA_OWN) $(LLAMA_DEP_SRCS)
LLAMA_SAN_OBJS := $(LLAMA_OBJ_SRCS:%.c=$(LLAMA_O)/san/%.o)
LLAMA_OPT_OBJS := $(LLAMA_OBJ_SRCS:%.c=$(LLAMA_O)/opt/%.o)
endif
# the model generator/quantizer for the benchmark, when gguf.mk has it
LLAMA_MMGGUF := $(GGUF_TOOL)
LLAMA_TEST := $(LLAMA_O)/san/llama_test
LLAMA_BENCH := $(LLAMA_O)/opt/model_bench
LLAMA_TIER_BENCH := $(LLAMA_O)/opt/tier_bench

# own files get the stricter warnings; kern_*.c their ISA flags
llama_flags = $(if $(filter $*.c,$(LLAMA_OWN)),$(LLAMA_WARN)) \
	$(QUANT_ISA_CFLAGS_$(notdir $*))

$(LLAMA_O)/opt/%.o: $(LLAMA_DIR)/%.c $(LLAMA_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(LLAMA_CFLAGS) $(OPT) $(llama_flags) -c $< -o $@

$(LLAMA_O)/san/%.o: $(LLAMA_DIR)/%.c $(LLAMA_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(LLAMA_CFLAGS) $(SAN) $(llama_flags) -c $< -o $@

$(LLAMA_TEST): $(LLAMA_DIR)/tests/llama_test.c $(LLAMA_SAN_OBJS) $(LLAMA_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(LLAMA_CFLAGS) $(LLAMA_WARN) $(SAN) $< $(LLAMA_SAN_OBJS) \
		$(LDFLAGS) -o $@ -lsodium -lm

$(LLAMA_BENCH): $(LLAMA_DIR)/bench/model_bench.c $(LLAMA_OPT_OBJS) $(LLAMA_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(LLAMA_CFLAGS) $(LLAMA_WARN) $(OPT) $< $(LLAMA_OPT_OBJS) \
		$(LDFLAGS) -o $@ -lsodium -lm

$(LLAMA_TIER_BENCH): $(LLAMA_DIR)/bench/tier_bench.c $(LLAMA_OPT_OBJS) $(LLAMA_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(LLAMA_CFLAGS) $(LLAMA_WARN) $(OPT) $< $(LLAMA_OPT_OBJS) \
		$(LDFLAGS) -o $@ -lsodium -lm

llama-all: $(LLAMA_TEST) $(LLAMA_BENCH) $(LLAMA_TIER_BENCH)

llama-check: $(LLAMA_TEST)
	@$(TAP_RUN) -n llama -d $(LLAMA_O) $(LLAMA_TEST)

llama-bench: $(LLAMA_BENCH) $(LLAMA_MMGGUF)
	@mkdir -p $(LLAMA_O)/models
	$(LLAMA_BENCH) $(LLAMA_O)/models $(if $(LLAMA_MMGGUF),-g $(LLAMA_MMGGUF))
	$(LLAMA_BENCH) $(LLAMA_O)/models $(if $(LLAMA_MMGGUF),-g $(LLAMA_MMGGUF)) \
		-p 1024

llama-tier-bench: $(LLAMA_TIER_BENCH)
	@mkdir -p $(LLAMA_O)/models
	$(LLAMA_TIER_BENCH) $(LLAMA_O)/models -s 1 -s 0.4

# x86-64: the optimized objects still hold their prefetches (see the
# script); it reads the objects the library is made of.
LLAMA_PF_KERN := $(filter %/kern_avx2.o %/kern_avx512.o,$(LLAMA_OPT_OBJS))
LLAMA_PF_FUNCS := mm_avx2_gemv_q8_0 mm_avx2_gemv_q4_0 mm_avx2_gemv_q4_0_r8 \
	mm_avx2_gemv_q4_1 mm_avx2_gemv_q5_0 mm_avx2_gemv_q5_0_r8 \
	mm_avx2_gemv_q4_k mm_avx2_gemv_q4_k_r8 mm_avx2_gemv_q6_k \
	mm_avx2_gemm_q8_0 mm_avx2_gemm_q4_0 mm_avx2_gemm_q4_0_r8 mm_avx2_gemm_q5_0 \
	mm_avx2_gemm_q5_0_r8 mm_avx2_gemm_q4_k mm_avx2_gemm_q4_k_r8 \
	mm_avx2_gemm_q6_k
# the layout only the AVX2 set has
LLAMA_PF_AVX2 := mm_avx2_gemv_q8_0_r8 mm_avx2_gemm_q8_0_r8

llama-check-prefetch: $(LLAMA_PF_KERN) $(LLAMA_O)/opt/vec.o
ifeq ($(shell uname -m),x86_64)
	@$(TAP_RUN) -n prefetch "$(LLAMA_DIR)/tests/prefetch_check.sh \
		$(foreach o,$(LLAMA_PF_KERN),$(foreach f,$(LLAMA_PF_FUNCS),$(o):$(f))) \
		$(foreach o,$(filter %/kern_avx2.o,$(LLAMA_PF_KERN)),$(foreach f,$(LLAMA_PF_AVX2),$(o):$(f))) \
		$(LLAMA_O)/opt/vec.o:mm_attn_h_avx2"
else
	@echo "ok 1 - prefetch check # SKIP not x86-64"; echo "RESULT prefetch 0 0 1"
endif

# arm64: the decoder tests cross-built with the NEON kernels and run under
# qemu-aarch64 (prefill through the NEON GEMM, decode through its gemv
# kernels, against the same f32 reference), once on qemu's "max" CPU
# (i8mm: the neon-i8mm set) and once as a Cortex-A76 (dot product, no
# i8mm: the neon set); SKIPs without the tools, like quant-check-arm64.
LLAMA_ARM_SRCS := $(LLAMA_OWN) gguf.c gguf_write.c tokenizer.c tools/gen.c
LLAMA_ARM_OBJS := $(LLAMA_ARM_SRCS:%.c=$(LLAMA_O)/arm64/%.o) \
	$(QUANT_ARM_OBJS)
LLAMA_ARM_TEST := $(LLAMA_O)/arm64/llama_test

$(LLAMA_O)/arm64/%.o: $(LLAMA_DIR)/%.c $(LLAMA_HDRS)
	@mkdir -p $(dir $@)
	$(QUANT_XCC) $(LLAMA_CFLAGS) -O2 $(llama_flags) -DMM_NO_SIGN -c $< -o $@

$(LLAMA_ARM_TEST): $(LLAMA_DIR)/tests/llama_test.c $(LLAMA_ARM_OBJS) $(LLAMA_HDRS)
	$(QUANT_XCC) $(LLAMA_CFLAGS) $(LLAMA_WARN) -O2 $< $(LLAMA_ARM_OBJS) \
		-o $@ -lm

llama-check-arm64: $(if $(QUANT_ARM_HAVE),$(LLAMA_ARM_TEST))
	@$(call quant_arm_tools,$@); \
	fail=0; \
	for cpu in max cortex-a76; do \
		out=$(LLAMA_O)/arm64/llama_test.$$cpu.tap; \
		$(TAP_RUN) -n llama-arm64-$$cpu \
			"QEMU_CPU=$$cpu $(QUANT_QEMU) -L /usr/aarch64-linux-gnu $(LLAMA_ARM_TEST)" \
			> $$out; rc=$$?; \
		grep -v '^ok ' $$out; \
		[ $$rc = 0 ] || fail=1; \
	done; \
	[ $$fail = 0 ]

MODEL_ALL += llama-all
MODEL_CHECK += llama-check llama-check-prefetch llama-check-arm64
MODEL_BENCH += llama-bench llama-tier-bench

.PHONY: llama-all llama-check llama-check-prefetch llama-check-arm64 llama-bench \
	llama-tier-bench

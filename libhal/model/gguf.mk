# SPDX-License-Identifier: MIT
#
# gguf.mk - GGUF reader/writer, tokenizer, mmproj loader, the mmgguf tool,
# their tests and the fuzz target. Included by ./Makefile (which defines O,
# CC, BASE_CFLAGS, OPT, SAN) before quant.mk; links quant.mk's objects
# (QUANT_OPT_OBJS, QUANT_SAN_OBJS) through second expansion.
#
# Targets:
#   gguf-all     $(O)/mmgguf, sanitized tests, fuzz target (if clang has
#                libFuzzer)
#   gguf-check   gguf_test + tok_test + mmproj_test + vision_test +
#                imgproc_test (ASan+UBSan, TAP) and a
#                bounded fuzz run (GGUF_FUZZ_TIME seconds, default 30)
#                counted as one test; last line "RESULT gguf <passed>
#                <failed>", non-zero exit on failure
#   gguf-fuzz    builds and runs only the fuzz target
#   gguf-bench   vision-bench: the vision encoder (SigLIP-B/16 at 224 and
#                512 px, Q8_0; 224 px F16 and BF16) in s/image and GEMM
#                throughput against the int8 (float weights: f32 FMA)
#                peak measured in the same run
#
# For the library (../Makefile): GGUF_SRCS are the sources (no special
# flags).

GGUF_DIR := $(CURDIR)
GGUF_O := $(O)/gguf
GGUF_WARN := -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wundef \
	     -Wformat=2
GGUF_CFLAGS := $(BASE_CFLAGS) $(GGUF_WARN) -I$(GGUF_DIR)/tools -pthread
GGUF_LIBS := -pthread -lsodium -lm

GGUF_SRCS := gguf.c gguf_write.c tokenizer.c mmproj.c
MODEL_SRCS += $(GGUF_SRCS)

GGUF_HDRS := $(GGUF_DIR)/gguf.h $(GGUF_DIR)/gguf_internal.h \
	     $(GGUF_DIR)/tokenizer.h $(GGUF_DIR)/mmproj.h $(GGUF_DIR)/tools/gen.h
GGUF_OPT_OBJS := $(GGUF_SRCS:%.c=$(GGUF_O)/opt/%.o) $(GGUF_O)/opt/gen.o
GGUF_SAN_OBJS := $(GGUF_SRCS:%.c=$(GGUF_O)/san/%.o) $(GGUF_O)/san/gen.o

# the vision encoder needs quant.mk's kernels: library and tests only
# (not the fuzz target)
GGUF_VIS_SRCS := vision.c imgproc.c
MODEL_SRCS += $(GGUF_VIS_SRCS)
GGUF_HDRS += $(GGUF_DIR)/vision.h $(GGUF_DIR)/imgproc.h
GGUF_OPT_OBJS += $(GGUF_VIS_SRCS:%.c=$(GGUF_O)/opt/%.o)
GGUF_SAN_OBJS += $(GGUF_VIS_SRCS:%.c=$(GGUF_O)/san/%.o)

# the file hash and model signatures (libsodium): library, tests, tools
GGUF_SIGN_SRCS := mhash.c sign.c
MODEL_SRCS += $(GGUF_SIGN_SRCS)
GGUF_HDRS += $(GGUF_DIR)/mhash.h $(GGUF_DIR)/sign.h
GGUF_OPT_OBJS += $(GGUF_SIGN_SRCS:%.c=$(GGUF_O)/opt/%.o)
GGUF_SAN_OBJS += $(GGUF_SIGN_SRCS:%.c=$(GGUF_O)/san/%.o)

GGUF_TOOL := $(O)/mmgguf
GGUF_TESTS := $(GGUF_O)/san/gguf_test $(GGUF_O)/san/tok_test \
	      $(GGUF_O)/san/mmproj_test $(GGUF_O)/san/vision_test \
	      $(GGUF_O)/san/imgproc_test

GGUF_FUZZ_CC ?= clang
GGUF_FUZZ_TIME ?= 30
GGUF_FUZZ := $(GGUF_O)/fuzz/gguf_fuzz
GGUF_FUZZ_SRCS := $(GGUF_DIR)/fuzz/gguf_fuzz.c \
		  $(GGUF_SRCS:%=$(GGUF_DIR)/%) $(GGUF_DIR)/imgproc.c \
		  $(GGUF_SIGN_SRCS:%=$(GGUF_DIR)/%)

$(GGUF_O)/opt/%.o: $(GGUF_DIR)/%.c $(GGUF_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(GGUF_CFLAGS) $(OPT) -c $< -o $@

$(GGUF_O)/san/%.o: $(GGUF_DIR)/%.c $(GGUF_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(GGUF_CFLAGS) $(SAN) -c $< -o $@

$(GGUF_O)/opt/gen.o: $(GGUF_DIR)/tools/gen.c $(GGUF_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(GGUF_CFLAGS) $(OPT) -c $< -o $@

$(GGUF_O)/san/gen.o: $(GGUF_DIR)/tools/gen.c $(GGUF_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(GGUF_CFLAGS) $(SAN) -c $< -o $@

.SECONDEXPANSION:

# the signer computes the fs-verity digest it signs with libfsverity
# (sign_verity.c); the runtime does not link it
GGUF_VERITY_SRC := $(GGUF_DIR)/tools/sign_verity.c
GGUF_VERITY_HDR := $(GGUF_DIR)/tools/sign_verity.h

$(GGUF_TOOL): $(GGUF_DIR)/tools/mmgguf.c $(GGUF_DIR)/tools/mmgguf_sign.c \
	      $(GGUF_DIR)/tools/mmgguf_sign.h $(GGUF_VERITY_SRC) \
	      $(GGUF_VERITY_HDR) $(GGUF_OPT_OBJS) $$(QUANT_OPT_OBJS) \
	      $(GGUF_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(GGUF_CFLAGS) $(OPT) $< $(GGUF_DIR)/tools/mmgguf_sign.c \
		$(GGUF_VERITY_SRC) $(GGUF_OPT_OBJS) $(QUANT_OPT_OBJS) \
		$(GGUF_TOOL_EXTRA) $(LDFLAGS) -o $@ $(GGUF_LIBS) -lfsverity

$(GGUF_O)/san/%_test: $(GGUF_DIR)/tests/%_test.c $(GGUF_DIR)/../tests/tap.h \
		      $(GGUF_SAN_OBJS) $$(QUANT_SAN_OBJS) $(GGUF_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(GGUF_CFLAGS) $(SAN) $< $(GGUF_SAN_OBJS) $(QUANT_SAN_OBJS) \
		$(LDFLAGS) -o $@ $(GGUF_LIBS)

# The fuzz target needs the reader, the tokenizer, the mmproj loader and
# the image preprocessing (no quantized kernels). It is built with
# GGUF_FUZZ_CC (clang) and GGUF_FUZZ_CFLAGS, the project's warnings
# added. Skipped only when that compiler is missing or cannot link
# libFuzzer (the stamp says why); any other failure, a warning included,
# fails the build.
GGUF_FUZZ_CFLAGS ?= -g -O1
GGUF_FUZZ_PROBE := int LLVMFuzzerTestOneInput(const char *d, long n); \
	int LLVMFuzzerTestOneInput(const char *d, long n) { return !d + !n; }

$(GGUF_FUZZ): $(GGUF_FUZZ_SRCS) $(GGUF_HDRS)
	@mkdir -p $(dir $@)
	@rm -f $@.skip $@.probe; \
	if ! command -v $(GGUF_FUZZ_CC) >/dev/null 2>&1; then \
		echo "$(GGUF_FUZZ_CC) not found" > $@.skip; rm -f $@; \
	elif ! echo '$(GGUF_FUZZ_PROBE)' | $(GGUF_FUZZ_CC) -x c - \
		-fsanitize=fuzzer -o $@.probe 2> $@.log; then \
		echo "$(GGUF_FUZZ_CC) cannot link libFuzzer (apt-get install -y libclang-rt-14-dev): $$(tail -1 $@.log)" > $@.skip; \
		rm -f $@ $@.probe; \
	else \
		rm -f $@.probe; \
		$(GGUF_FUZZ_CC) -std=gnu11 $(GGUF_FUZZ_CFLAGS) -I$(GGUF_DIR) \
			-D_GNU_SOURCE -DMM_MMPROJ_NO_REPACK \
			-Wall -Wextra -Werror $(GGUF_WARN) \
			-fsanitize=fuzzer,address,undefined \
			-fno-sanitize-recover=all $(GGUF_FUZZ_SRCS) -o $@ -lsodium; \
	fi

$(GGUF_O)/fuzz/seeds.stamp: $(GGUF_TOOL)
	@mkdir -p $(GGUF_O)/fuzz/corpus
	$(GGUF_TOOL) gen --shape micro --tokenizer gpt2 --type f16 -o $(GGUF_O)/fuzz/corpus/seed-micro-gpt2.gguf
	$(GGUF_TOOL) gen --shape micro --tokenizer llama --type f16 --seed 7 -o $(GGUF_O)/fuzz/corpus/seed-micro-llama.gguf
	$(GGUF_TOOL) quantize $(GGUF_O)/fuzz/corpus/seed-micro-gpt2.gguf $(GGUF_O)/fuzz/corpus/seed-micro-q8.gguf --type q8_0 >/dev/null
	$(GGUF_TOOL) gen --vision micro --audio micro --type q8_0 -o $(GGUF_O)/fuzz/corpus/seed-mmproj-micro.gguf
	@touch $@

# Runs the fuzzer; prints one TAP line and "FUZZ <status> <runs> <secs>".
gguf-fuzz: $(GGUF_FUZZ) $(GGUF_O)/fuzz/seeds.stamp
	@echo "1..1"; \
	if [ ! -x $(GGUF_FUZZ) ]; then \
		echo "ok 1 - gguf-fuzz # SKIP $$(cat $(GGUF_FUZZ).skip)"; exit 0; \
	fi; \
	log=$(GGUF_O)/fuzz/fuzz.log; \
	$(GGUF_FUZZ) -max_total_time=$(GGUF_FUZZ_TIME) -timeout=10 \
		-rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix=$(GGUF_O)/fuzz/ $(GGUF_O)/fuzz/corpus \
		> $$log 2>&1; rc=$$?; \
	runs=$$(sed -n 's/^Done \([0-9]*\) runs in \([0-9]*\) second.*/\1 \2/p' $$log); \
	if [ $$rc = 0 ]; then \
		echo "ok 1 - gguf-fuzz: $${runs%% *} execs in $${runs##* } s, no crash"; \
	else \
		tail -30 $$log | sed 's/^/# /'; \
		echo "not ok 1 - gguf-fuzz: exit $$rc, see $$log and $(GGUF_O)/fuzz/crash-*"; \
		exit 1; \
	fi

# mmgguf quantize --type q4_k falls back as llama.cpp does where a row
# does not hold whole super-blocks
# and, on an F32 vision + audio mmproj, keeps what the converter and
# llama-quantize keep by role: biases (the convolutions' [1, n] too),
# norms, embeddings and the patch embedding F32, the convolutions F16,
# every block and projector matrix Q8_0
gguf-quantize-check: $(GGUF_TOOL) $(GGUF_O)/fuzz/seeds.stamp
	@echo "1..2"; \
	p=$(GGUF_O)/fuzz/mmproj-f32.gguf; \
	$(GGUF_TOOL) gen --vision tiny --audio tiny --type f32 -o $$p && \
	$(GGUF_TOOL) quantize $$p $$p.q8_0 --type q8_0 > $$p.log 2>&1; \
	if awk '$$(NF - 1) != "->" { next } { t = $$(NF - 3) } \
		t ~ /(attn_[qkvo][a-z]*|ffn_(up|down|gate)|mm\..*)\.weight$$/ { w = "q8_0" } \
		t ~ /^a\.conv1d\..\.weight$$/ { w = "f16" } \
		t ~ /\.bias$$|_ln|ln[12]\.|norm|position_embd|class_embd|patch_embd/ { w = "f32" } \
		{ n++; if ($$NF != w) { print "# " t " -> " $$NF ", want " w; bad++ } w = "?" } \
		END { exit !(n == 79 && !bad) }' $$p.log; then \
		echo "ok 1 - mmgguf quantize q8_0 of an mmproj: biases, norms, embeddings and the patch embedding f32, convolutions f16, matrices q8_0 (as the converter and llama-quantize)"; \
	else \
		sed 's/^/# /' $$p.log; \
		echo "not ok 1 - mmgguf quantize of an mmproj: types by role, see $$p.log"; \
	fi; \
	q=$(GGUF_O)/fuzz/micro-q4_k.gguf; \
	$(GGUF_TOOL) quantize $(GGUF_O)/fuzz/corpus/seed-micro-gpt2.gguf $$q \
		--type q4_k > $$q.log 2>&1; \
	if grep -Eq 'attn_q.weight +f16 +-> q5_0' $$q.log && \
	   grep -Eq 'token_embd.weight +f16 +-> q8_0' $$q.log && \
	   grep -Eq 'ffn_down.weight +f16 +-> q8_0' $$q.log && \
	   ! grep -q 'q4_0' $$q.log; then \
		echo "ok 2 - mmgguf quantize q4_k, 32/64 columns: q5_0, q8_0 for token_embd and bumped ffn_down (as llama.cpp)"; \
	else \
		sed 's/^/# /' $$q.log; \
		echo "not ok 2 - mmgguf quantize q4_k fallback types, see $$q.log"; \
		exit 1; \
	fi

gguf-all: $(GGUF_TOOL) $(GGUF_TESTS) $(GGUF_FUZZ)

gguf-check: $(GGUF_TESTS) $(GGUF_FUZZ) $(GGUF_TOOL) $(GGUF_O)/fuzz/seeds.stamp
	@$(TAP_RUN) -n gguf -d $(GGUF_O) $(GGUF_TESTS) \
		"$(MAKE) -s --no-print-directory gguf-fuzz" \
		"$(MAKE) -s --no-print-directory gguf-quantize-check"

.SECONDARY: $(GGUF_OPT_OBJS) $(GGUF_SAN_OBJS)

# The vision encoder benchmark (optimised): SigLIP-B/16 at 224 and 512 px,
# Q8_0, and at 224 px F16 and BF16, generated once into $(GGUF_O)/bench
# and reused while present.
GGUF_VBENCH := $(GGUF_O)/opt/vision_bench
GGUF_VBENCH_FILES := $(GGUF_O)/bench/smolvlm-224-q8_0.gguf \
		     $(GGUF_O)/bench/smolvlm-256m-q8_0.gguf \
		     $(GGUF_O)/bench/smolvlm-224-f16.gguf \
		     $(GGUF_O)/bench/smolvlm-224-bf16.gguf

$(GGUF_VBENCH): $(GGUF_DIR)/bench/vision_bench.c $$(GGUF_OPT_OBJS) \
		$$(QUANT_OPT_OBJS) $(GGUF_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(GGUF_CFLAGS) $(OPT) $< $(GGUF_OPT_OBJS) $(QUANT_OPT_OBJS) \
		$(LDFLAGS) -o $@ $(GGUF_LIBS)

$(GGUF_O)/bench/smolvlm-%-q8_0.gguf: | $(GGUF_TOOL)
	@mkdir -p $(dir $@)
	$(GGUF_TOOL) gen --vision smolvlm-$* --type q8_0 -o $@.tmp && mv $@.tmp $@

# the float-weight GEMM (F16: the converter's default; BF16)
$(GGUF_O)/bench/smolvlm-224-f16.gguf $(GGUF_O)/bench/smolvlm-224-bf16.gguf: | $(GGUF_TOOL)
	@mkdir -p $(dir $@)
	$(GGUF_TOOL) gen --vision smolvlm-224 \
		--type $(patsubst smolvlm-224-%.gguf,%,$(notdir $@)) -o $@.tmp && mv $@.tmp $@

vision-bench: $(GGUF_VBENCH) $(GGUF_VBENCH_FILES)
	$(GGUF_VBENCH) $(GGUF_VBENCH_FILES)

gguf-bench: vision-bench

MODEL_ALL += gguf-all
MODEL_CHECK += gguf-check
MODEL_BENCH += gguf-bench

.PHONY: gguf-all gguf-check gguf-fuzz gguf-quantize-check gguf-bench vision-bench

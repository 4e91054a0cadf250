# SPDX-License-Identifier: MIT
#
# mm.mk - the multimodal API (mmhal_mmproj, chunks, evaluation into a
# session), its test and benchmark (the mmrun tool is in ../../tools). Included by ./Makefile after audio.mk.
# MM_LIB_OBJS: its objects in libmmmodel.a.
#
# Targets:
#   mm-all    the sanitized test and the optimised benchmark
#   mm-check  mm_test (ASan+UBSan, TAP): image (NV12/RGB24/GREY) and audio
#             + prompt end to end against a float reference pipeline at
#             F32 and Q8_0 (greedy tokens), marker layouts, API contracts,
#             malformed inputs; last line "RESULT mm <passed> <failed> <skipped>",
#             non-zero exit on failure
#   mm-bench  image (224 px) + 2 s audio + 32-token prompt -> first token
#             on a SmolLM2-135M-shaped model with a SmolVLM-224 vision +
#             Whisper-tiny audio mmproj at Q8_0 (optimised): P50/P95 over
#             20 runs, where the time goes, peak RSS. The generated files
#             are kept in $(O)/mm/models and reused.

MM_DIR := $(CURDIR)
MM_O := $(O)/mm
MM_WARN := -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wundef \
	   -Wformat=2
MM_CFLAGS := $(BASE_CFLAGS) $(MM_WARN) -I$(MM_DIR)/tools -I$(MM_DIR)/tests \
	     -pthread
MM_LIBS := -lfftw3f -pthread -lsodium -lm

MODEL_SRCS += mm_api.c

MM_HDRS := $(abspath ../include/mmhal_model.h) $(MM_DIR)/audio.h \
	   $(MM_DIR)/imgproc.h $(MM_DIR)/vision.h $(MM_DIR)/mmproj.h \
	   $(MM_DIR)/gguf.h $(MM_DIR)/tools/gen.h $(MM_DIR)/../tests/tap.h \
	   $(MM_DIR)/tests/ref_mm.h $(MM_DIR)/tests/ref_llama.h
MM_LIB_OBJS := $(MM_O)/opt/mm_api.o

# the rest of the runtime: decoder, encoders, kernels, tokenizer, gen.o
MM_SAN_DEPS := $(MM_O)/san/mm_api.o $(AUDIO_O)/san/audio.o $(LLAMA_SAN_OBJS)

MM_TEST := $(MM_O)/san/mm_test
MM_BENCH := $(MM_O)/opt/mm_bench

$(MM_O)/opt/%.o: $(MM_DIR)/%.c $(MM_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(MM_CFLAGS) $(OPT) -c $< -o $@

$(MM_O)/san/%.o: $(MM_DIR)/%.c $(MM_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(MM_CFLAGS) $(SAN) -c $< -o $@

$(MM_TEST): $(MM_DIR)/tests/mm_test.c $(MM_O)/san/tests/ref_mm.o \
	    $(MM_SAN_DEPS) $(MM_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(MM_CFLAGS) $(SAN) $< $(MM_O)/san/tests/ref_mm.o \
		$(MM_SAN_DEPS) $(LDFLAGS) -o $@ $(MM_LIBS)

# (with ref_llama.o: it quantizes in process when no mmgguf is given)
MM_BENCH_DEPS := $(MM_O)/opt/mm_api.o $(AUDIO_O)/opt/audio.o $(LLAMA_OPT_OBJS)

$(MM_BENCH): $(MM_DIR)/bench/mm_bench.c $(MM_BENCH_DEPS) $(MM_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(MM_CFLAGS) $(OPT) $< $(MM_BENCH_DEPS) $(LDFLAGS) -o $@ $(MM_LIBS)

mm-all: $(MM_TEST) $(MM_BENCH)

mm-check: $(MM_TEST)
	@$(TAP_RUN) -n mm -d $(MM_O) $(MM_TEST)

mm-bench: $(MM_BENCH) $(GGUF_TOOL)
	@mkdir -p $(MM_O)/models
	$(MM_BENCH) $(MM_O)/models -g $(GGUF_TOOL)

.SECONDARY: $(MM_O)/opt/mm_api.o $(MM_O)/san/mm_api.o \
	    $(MM_O)/san/tests/ref_mm.o

MODEL_ALL += mm-all
MODEL_CHECK += mm-check
MODEL_BENCH += mm-bench

.PHONY: mm-all mm-check mm-bench

# SPDX-License-Identifier: MIT
#
# audio.mk - the audio front end (log-mel with FFTW3) and the Whisper-style
# audio encoder with its ultravox projector. Included by ./Makefile after
# llama.mk. AUDIO_LIB_OBJS: its objects in libmmmodel.a.
#
# Also here: encoder.c, the operations the encoders share (vision.c's
# and audio.c's linear layers, norms, activations, attention, blocks). It
# is built with gguf.mk's rules and appended to the object lists that
# hold vision.o (GGUF_*_OBJS, LLAMA_*_OBJS), so every link of vision.o
# gets it.
#
# Targets:
#   audio-all    sanitized test and optimised benchmark binaries
#   audio-check  audio_test (ASan+UBSan, TAP): log-mel against a double
#                DFT reference, encoder + projector against a double
#                forward at F32/F16/Q8_0/Q4_K, token counts, bad inputs;
#                last line "RESULT audio <passed> <failed> <skipped>", non-zero exit
#                on failure
#   audio-bench  Whisper-tiny-shaped encoder at Q8_0 (optimised): mel front
#                end, a 2 s window (latency mode) and a 30 s window (exact)

AUDIO_DIR := $(CURDIR)
AUDIO_O := $(O)/audio
AUDIO_WARN := -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wundef \
	      -Wformat=2
AUDIO_CFLAGS := $(BASE_CFLAGS) $(AUDIO_WARN) -I$(AUDIO_DIR)/tools \
		-I$(AUDIO_DIR)/tests -pthread
AUDIO_LIBS := -lfftw3f -pthread -lsodium -lm

MODEL_SRCS += encoder.c audio.c

# encoder.o beside vision.o
AUDIO_ENC_OPT := $(GGUF_O)/opt/encoder.o
AUDIO_ENC_SAN := $(GGUF_O)/san/encoder.o
GGUF_OPT_OBJS += $(AUDIO_ENC_OPT)
GGUF_SAN_OBJS += $(AUDIO_ENC_SAN)
LLAMA_OPT_OBJS += $(AUDIO_ENC_OPT)
LLAMA_SAN_OBJS += $(AUDIO_ENC_SAN)
$(GGUF_O)/opt/encoder.o $(GGUF_O)/san/encoder.o $(GGUF_O)/opt/vision.o \
$(GGUF_O)/san/vision.o: $(AUDIO_DIR)/encoder.h
$(GGUF_TOOL) $(LLAMA_BENCH): $(AUDIO_ENC_OPT)
$(GGUF_TESTS) $(LLAMA_TEST): $(AUDIO_ENC_SAN)

AUDIO_HDRS := $(AUDIO_DIR)/audio.h $(AUDIO_DIR)/encoder.h \
	      $(AUDIO_DIR)/mmproj.h $(AUDIO_DIR)/quant.h $(AUDIO_DIR)/gguf.h \
	      $(AUDIO_DIR)/tools/gen.h $(AUDIO_DIR)/../tests/tap.h
AUDIO_LIB_OBJS := $(AUDIO_O)/opt/audio.o
AUDIO_TEST := $(AUDIO_O)/san/audio_test
AUDIO_BENCH := $(AUDIO_O)/opt/audio_bench

$(AUDIO_O)/opt/audio.o: $(AUDIO_DIR)/audio.c $(AUDIO_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(AUDIO_CFLAGS) $(OPT) -c $< -o $@

$(AUDIO_O)/san/audio.o: $(AUDIO_DIR)/audio.c $(AUDIO_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(AUDIO_CFLAGS) $(SAN) -c $< -o $@

$(AUDIO_TEST): $(AUDIO_DIR)/tests/audio_test.c $(AUDIO_O)/san/audio.o \
	       $(GGUF_SAN_OBJS) $(QUANT_SAN_OBJS) $(AUDIO_HDRS) \
	       $(AUDIO_DIR)/tests/ref_mm.c $(AUDIO_DIR)/tests/ref_mm.h
	@mkdir -p $(dir $@)
	$(CC) $(AUDIO_CFLAGS) $(SAN) $< $(AUDIO_O)/san/audio.o \
		$(GGUF_SAN_OBJS) $(QUANT_SAN_OBJS) $(LDFLAGS) -o $@ $(AUDIO_LIBS)

$(AUDIO_BENCH): $(AUDIO_DIR)/bench/audio_bench.c $(AUDIO_O)/opt/audio.o \
		$(GGUF_OPT_OBJS) $(QUANT_OPT_OBJS) $(AUDIO_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(AUDIO_CFLAGS) $(OPT) $< $(AUDIO_O)/opt/audio.o \
		$(GGUF_OPT_OBJS) $(QUANT_OPT_OBJS) $(LDFLAGS) -o $@ $(AUDIO_LIBS)

audio-all: $(AUDIO_TEST) $(AUDIO_BENCH)

audio-check: $(AUDIO_TEST)
	@$(TAP_RUN) -n audio -d $(AUDIO_O) $(AUDIO_TEST)

audio-bench: $(AUDIO_BENCH)
	$(AUDIO_BENCH)

.SECONDARY: $(AUDIO_O)/opt/audio.o $(AUDIO_O)/san/audio.o

MODEL_ALL += audio-all
MODEL_CHECK += audio-check
MODEL_BENCH += audio-bench

.PHONY: audio-all audio-check audio-bench

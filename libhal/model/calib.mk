# SPDX-License-Identifier: MIT
#
# calib.mk - INT8 calibration of the encoders (calib.h): calib.c (points,
# histograms, thresholds, the static int8 products, the calibration file)
# beside encoder.o in every link of it, calib_cap.c (captures, encoding
# in each mode, agreement; needs the audio front end) in the library and
# the mmgguf tool, and the test. Included by ./Makefile after mm.mk.
#
# Targets:
#   calib-check  calib_test (ASan+UBSan, TAP): histograms and thresholds
#                (minmax, percentile, KL) against a double reference on
#                known distributions, the static int8 products against
#                integer sums, file round trip and refusal of corrupt and
#                mismatched files, captures, agreement of each method on
#                the generated tiny models, install and rollback through
#                the API; last line "RESULT calib <passed> <failed> <skipped>"

CAL_DIR := $(CURDIR)
CAL_HDR := $(CAL_DIR)/calib.h

MODEL_SRCS += calib.c calib_cap.c

# calib.o wherever encoder.o is linked
CAL_OPT := $(GGUF_O)/opt/calib.o
CAL_SAN := $(GGUF_O)/san/calib.o
GGUF_OPT_OBJS += $(CAL_OPT)
GGUF_SAN_OBJS += $(CAL_SAN)
LLAMA_OPT_OBJS += $(CAL_OPT)
LLAMA_SAN_OBJS += $(CAL_SAN)
GGUF_HDRS += $(CAL_HDR)
$(GGUF_O)/opt/calib.o $(GGUF_O)/san/calib.o $(GGUF_O)/opt/encoder.o \
$(GGUF_O)/san/encoder.o: $(CAL_HDR) $(CAL_DIR)/encoder.h $(CAL_DIR)/quant_kern.h
$(GGUF_TOOL) $(LLAMA_BENCH) $(AUDIO_BENCH) $(MM_BENCH): $(CAL_OPT)
$(GGUF_TESTS) $(LLAMA_TEST) $(AUDIO_TEST) $(MM_TEST): $(CAL_SAN)

# calib_cap.o: the library, mm_api's users and the tool (with audio.o)
CAL_CAP_OPT := $(MM_O)/opt/calib_cap.o
CAL_CAP_SAN := $(MM_O)/san/calib_cap.o
MM_LIB_OBJS += $(CAL_CAP_OPT)
MM_SAN_DEPS += $(CAL_CAP_SAN) $(CAL_SAN)
MM_BENCH_DEPS += $(CAL_CAP_OPT) $(CAL_OPT)
$(MM_TEST): $(CAL_CAP_SAN)
$(MM_BENCH): $(CAL_CAP_OPT)
$(MM_O)/opt/calib_cap.o $(MM_O)/san/calib_cap.o: $(CAL_HDR)

# mmgguf calib / capgen
CAL_TOOL_OBJ := $(O)/calib/opt/mmgguf_calib.o
$(CAL_TOOL_OBJ): $(CAL_DIR)/tools/mmgguf_calib.c $(CAL_DIR)/tools/mmgguf_calib.h \
		 $(CAL_HDR) $(GGUF_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(GGUF_CFLAGS) $(OPT) -c $< -o $@
$(GGUF_TOOL): $(CAL_TOOL_OBJ) $(CAL_CAP_OPT) $(AUDIO_O)/opt/audio.o \
	      $(CAL_DIR)/tools/mmgguf_calib.h
GGUF_TOOL_EXTRA := $(CAL_TOOL_OBJ) $(CAL_CAP_OPT) $(AUDIO_O)/opt/audio.o \
		   -lfftw3f

CAL_TEST := $(O)/calib/san/calib_test

$(CAL_TEST): $(CAL_DIR)/tests/calib_test.c $(MM_SAN_DEPS) $(MM_HDRS) \
	     $(CAL_HDR) $(CAL_CAP_SAN)
	@mkdir -p $(dir $@)
	$(CC) $(MM_CFLAGS) $(SAN) $< $(MM_SAN_DEPS) $(LDFLAGS) -o $@ $(MM_LIBS)

calib-all: $(CAL_TEST)

calib-check: $(CAL_TEST) $(GGUF_TOOL)
	@$(TAP_RUN) -n calib -d $(O)/calib "$(CAL_TEST) $(GGUF_TOOL) $(O)/calib"

.SECONDARY: $(CAL_OPT) $(CAL_SAN) $(CAL_CAP_OPT) $(CAL_CAP_SAN)

MODEL_ALL += calib-all
MODEL_CHECK += calib-check

.PHONY: calib-all calib-check

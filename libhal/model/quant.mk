# SPDX-License-Identifier: MIT
#
# quant.mk - tensor types, CPU kernels and thread pool of libhal/model.
# Included by ./Makefile (which defines O, CC, BASE_CFLAGS, OPT, SAN).
#
# Targets:
#   quant-all         optimised and sanitized objects, test and bench bins
#   quant-check       unit tests (ASan+UBSan) on every kernel set this CPU
#                     has, after quant-check-arm64; last line
#                     "RESULT quant <passed> <failed> <skipped>", non-zero on failure
#   quant-check-arm64 cross-builds the tests for arm64 (NEON + dotprod) and
#                     runs them under qemu-aarch64 ("RESULT quant-arm64
#                     <passed> <failed> <skipped>"); SKIPs if the tools are
#                     missing (apt-get install gcc-aarch64-linux-gnu
#                     qemu-user)
#   quant-bench       kernel benchmark (optimised, no sanitizers)
#
# For the library (../Makefile): QUANT_SRCS are the sources, and each
# kern_*.c must be compiled with $(QUANT_ISA_CFLAGS_<basename>) (empty for
# the portable files). Only the kernels for the target arch are listed.

QUANT_DIR := $(CURDIR)
QUANT_O := $(O)/quant
QUANT_WARN := -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wundef
QUANT_CFLAGS := $(BASE_CFLAGS) $(QUANT_WARN) -pthread
QUANT_ARCH := $(shell $(CC) -dumpmachine 2>/dev/null)

QUANT_SRCS := quant.c threadpool.c kern_scalar.c
ifneq ($(filter x86_64%,$(QUANT_ARCH)),)
QUANT_SRCS += kern_avx2.c kern_avx512.c
endif
ifneq ($(filter aarch64%,$(QUANT_ARCH)),)
QUANT_SRCS += kern_neon.c
endif
QUANT_ISA_CFLAGS_kern_avx2 := -mavx2 -mfma -mf16c
QUANT_ISA_CFLAGS_kern_avx512 := -mavx2 -mfma -mf16c -mavx512f -mavx512bw \
	-mavx512vl -mavx512vnni
QUANT_ISA_CFLAGS_kern_neon := -march=armv8.2-a+dotprod

MODEL_SRCS += $(QUANT_SRCS)

QUANT_HDRS := $(wildcard $(QUANT_DIR)/*.h)
QUANT_OPT_OBJS := $(QUANT_SRCS:%.c=$(QUANT_O)/opt/%.o)
QUANT_SAN_OBJS := $(QUANT_SRCS:%.c=$(QUANT_O)/san/%.o)
QUANT_TEST := $(QUANT_O)/san/quant_test
QUANT_BENCH := $(QUANT_O)/opt/kbench

$(QUANT_O)/opt/%.o: $(QUANT_DIR)/%.c $(QUANT_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(QUANT_CFLAGS) $(OPT) $(QUANT_ISA_CFLAGS_$*) -c $< -o $@

$(QUANT_O)/san/%.o: $(QUANT_DIR)/%.c $(QUANT_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(QUANT_CFLAGS) $(SAN) $(QUANT_ISA_CFLAGS_$*) -c $< -o $@

$(QUANT_TEST): $(QUANT_DIR)/tests/quant_test.c $(QUANT_SAN_OBJS) $(QUANT_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(QUANT_CFLAGS) $(SAN) $< $(QUANT_SAN_OBJS) $(LDFLAGS) -o $@ -lm

$(QUANT_BENCH): $(QUANT_DIR)/bench/kbench.c $(QUANT_OPT_OBJS) $(QUANT_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(QUANT_CFLAGS) $(OPT) $< $(QUANT_OPT_OBJS) $(LDFLAGS) -o $@ -lm

# arm64 cross build (no sanitizers: the cross libasan may be absent).
QUANT_XCC ?= aarch64-linux-gnu-gcc
QUANT_QEMU ?= qemu-aarch64
QUANT_ARM_SRCS := quant.c threadpool.c kern_scalar.c kern_neon.c
QUANT_ARM_OBJS := $(QUANT_ARM_SRCS:%.c=$(QUANT_O)/arm64/%.o)
QUANT_ARM_TEST := $(QUANT_O)/arm64/quant_test
# Shell: exits 0 after a SKIP line for target $(1) when the cross
# compiler or qemu is missing.
quant_arm_tools = if ! command -v $(QUANT_XCC) >/dev/null 2>&1 || \
	    ! command -v $(QUANT_QEMU) >/dev/null 2>&1; then \
		echo "ok 1 - $(1) \# SKIP $(QUANT_XCC) or $(QUANT_QEMU) missing"; \
		echo "RESULT $(1) 0 0 1"; \
		exit 0; \
	fi

# The arm64 tests' binaries are prerequisites when the tools are there
# (built by this make, not a sub-make: two of those race under -j).
QUANT_ARM_HAVE := $(and $(shell command -v $(QUANT_XCC) 2>/dev/null),\
	$(shell command -v $(QUANT_QEMU) 2>/dev/null))

quant-all: $(QUANT_TEST) $(QUANT_BENCH)

# (also linked into llama-check-arm64's decoder test)
$(QUANT_O)/arm64/%.o: $(QUANT_DIR)/%.c $(QUANT_HDRS)
	@mkdir -p $(dir $@)
	$(QUANT_XCC) $(QUANT_CFLAGS) -O2 $(QUANT_ISA_CFLAGS_$*) -c $< -o $@

$(QUANT_ARM_TEST): $(QUANT_DIR)/tests/quant_test.c $(QUANT_ARM_OBJS) $(QUANT_HDRS)
	$(QUANT_XCC) $(QUANT_CFLAGS) -O2 $< $(QUANT_ARM_OBJS) -o $@ -lm

quant-check-arm64: $(if $(QUANT_ARM_HAVE),$(QUANT_ARM_TEST))
	@$(call quant_arm_tools,$@); \
	out=$(QUANT_O)/arm64/quant_test.tap; \
	$(TAP_RUN) -n quant-arm64 \
		"QEMU_CPU=max $(QUANT_QEMU) -L /usr/aarch64-linux-gnu $(QUANT_ARM_TEST)" \
		> $$out; rc=$$?; \
	grep -v '^ok ' $$out; \
	[ $$rc = 0 ]

quant-check: $(QUANT_TEST)
	@$(TAP_RUN) -n quant -d $(QUANT_O) $(QUANT_TEST)

quant-bench: $(QUANT_BENCH)
	$(QUANT_BENCH)

MODEL_ALL += quant-all
MODEL_CHECK += quant-check-arm64 quant-check
MODEL_BENCH += quant-bench

.PHONY: quant-all quant-check quant-check-arm64 quant-bench

# Both x86 sets are kern_x86.h, the AVX-512 one with MM_VNNI.
$(QUANT_O)/opt/kern_avx2.o $(QUANT_O)/san/kern_avx2.o \
$(QUANT_O)/opt/kern_avx512.o $(QUANT_O)/san/kern_avx512.o: $(QUANT_DIR)/kern_x86.h

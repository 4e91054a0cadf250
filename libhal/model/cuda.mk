# SPDX-License-Identifier: MIT
#
# cuda.mk - the CUDA back end of libhal/model (Documentation/cuda.rst).
# Included by ./Makefile after llama.mk.
#
# cuda.c (driver loaded with dlopen, kernels, device memory, frames) and
# cuda_llama.c (back-end choice, weights on the device, dispatch) are
# linked wherever the decoder is. When the toolkit is found (CUDA_HOME,
# default /usr/local/cuda: include/cuda.h and bin/nvcc), cuda_kern.cu is
# compiled to PTX for compute_80 and compute_90 and embedded in cuda.o
# (.incbin); without it the back end reports "built without CUDA". The
# library never links libcuda.
#
# Targets:
#   cuda-all    the tests (ASan+UBSan) and the GPU test/bench binary
#   cuda-check  loader and fallback tests without a GPU (fake driver
#               libraries built here), the same against a cuda.o built
#               without the toolkit, the embedded PTX read back and
#               assembled by ptxas, and no object naming a cu* symbol;
#               "RESULT cuda <passed> <failed> <skipped>"
#   cuda-gpu    $(CUDA_GPU): kernels vs the CPU and the bench, on a
#               machine with an NVIDIA GPU (scripts/gpu-check.sh runs it)

CUDA_DIR := $(CURDIR)
CUDA_O := $(O)/cuda
CUDA_HOME ?= /usr/local/cuda
CUDA_NVCC ?= $(firstword $(wildcard $(CUDA_HOME)/bin/nvcc) \
	$(shell command -v nvcc 2>/dev/null))
CUDA_PTXAS ?= $(firstword $(wildcard $(CUDA_HOME)/bin/ptxas) \
	$(shell command -v ptxas 2>/dev/null))
CUDA_HAVE := $(and $(CUDA_NVCC),$(wildcard $(CUDA_HOME)/include/cuda.h))
CUDA_WARN := -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wundef

CUDA_SRCS := cuda.c cuda_llama.c cuda_enc.c
MODEL_SRCS += $(CUDA_SRCS)

ifneq ($(CUDA_HAVE),)
CUDA_PTX := $(CUDA_O)/cuda_kern.80.ptx $(CUDA_O)/cuda_kern.90.ptx
CUDA_DEFS := -DMM_HAVE_CUDA -isystem $(CUDA_HOME)/include \
	-DMM_CUDA_PTX80='"$(CUDA_O)/cuda_kern.80.ptx"' \
	-DMM_CUDA_PTX90='"$(CUDA_O)/cuda_kern.90.ptx"'
endif

# compiled by llama.mk's rules, with these per-file flags
QUANT_ISA_CFLAGS_cuda := $(CUDA_WARN) $(CUDA_DEFS)
QUANT_ISA_CFLAGS_cuda_llama := $(CUDA_WARN)
QUANT_ISA_CFLAGS_cuda_enc := $(CUDA_WARN)

CUDA_OPT := $(CUDA_SRCS:%.c=$(LLAMA_O)/opt/%.o)
CUDA_SAN := $(CUDA_SRCS:%.c=$(LLAMA_O)/san/%.o)
# (the arm64 decoder test links no mmproj code: the encoders' part stays out)
CUDA_ARM := $(filter-out %/cuda_enc.o,$(CUDA_SRCS:%.c=$(LLAMA_O)/arm64/%.o))
LLAMA_OPT_OBJS += $(CUDA_OPT)
LLAMA_SAN_OBJS += $(CUDA_SAN)
LLAMA_ARM_OBJS += $(CUDA_ARM)
$(LLAMA_BENCH) $(LLAMA_TIER_BENCH): $(CUDA_OPT)
$(LLAMA_TEST): $(CUDA_SAN)
$(LLAMA_ARM_TEST): $(CUDA_ARM)

$(CUDA_O)/cuda_kern.%.ptx: $(CUDA_DIR)/cuda_kern.cu
	@mkdir -p $(dir $@)
	$(CUDA_NVCC) -ptx -arch=compute_$* -O3 -o $@ $<

$(LLAMA_O)/opt/cuda.o $(LLAMA_O)/san/cuda.o $(LLAMA_O)/arm64/cuda.o: \
	$(CUDA_PTX)

# Fake driver libraries for the tests: every entry point (behaviour
# chosen by MMHAL_FAKE_CUDA in the test), and one with only some.
CUDA_FAKE := $(CUDA_O)/fake/libcuda_fake.so
CUDA_PART := $(CUDA_O)/fake/libcuda_part.so
$(CUDA_FAKE): $(CUDA_DIR)/tests/cuda_fake.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O1 -g -Wall -Wextra -Werror -shared -fPIC $< $(LDFLAGS) -o $@
$(CUDA_PART): $(CUDA_DIR)/tests/cuda_fake.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O1 -g -Wall -Wextra -Werror -shared -fPIC \
		-DMM_FAKE_PARTIAL $< $(LDFLAGS) -o $@

# (prerequisites: $$ = after audio.mk and calib.mk added their objects)
CUDA_TEST := $(CUDA_O)/san/cuda_test
CUDA_TEST_NO := $(CUDA_O)/san/cuda_test_nocuda
CUDA_NO_OBJ := $(CUDA_O)/san/nocuda/cuda.o
CUDA_TEST_CFLAGS := $(LLAMA_CFLAGS) $(CUDA_WARN) $(SAN)

$(CUDA_NO_OBJ): $(CUDA_DIR)/cuda.c $(LLAMA_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(LLAMA_CFLAGS) $(CUDA_WARN) $(SAN) -c $< -o $@

# (the mmproj API too, for the encoders' fallback: mm.mk's MM_SAN_DEPS)
$(CUDA_TEST): $(CUDA_DIR)/tests/cuda_test.c $$(MM_SAN_DEPS) $(LLAMA_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(CUDA_TEST_CFLAGS) -DMM_TEST_BUILT=$(if $(CUDA_HAVE),1,0) $< \
		$(MM_SAN_DEPS) $(LDFLAGS) -o $@ -lfftw3f -lsodium -lm

$(CUDA_TEST_NO): $(CUDA_DIR)/tests/cuda_test.c $$(MM_SAN_DEPS) \
		 $(CUDA_NO_OBJ) $(LLAMA_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(CUDA_TEST_CFLAGS) -DMM_TEST_BUILT=0 $< \
		$(filter-out %/san/cuda.o,$(MM_SAN_DEPS)) $(CUDA_NO_OBJ) \
		$(LDFLAGS) -o $@ -lfftw3f -lsodium -lm

# The GPU test and bench: optimised, no sanitizers (ASan's shadow
# mapping and the driver's address reservations do not mix).
CUDA_GPU := $(CUDA_O)/opt/cuda_gpu
$(CUDA_GPU): $(CUDA_DIR)/tests/cuda_gpu.c $$(MM_BENCH_DEPS) $(LLAMA_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(LLAMA_CFLAGS) $(CUDA_WARN) $(OPT) $< $(MM_BENCH_DEPS) \
		$(LDFLAGS) -o $@ -lfftw3f -lsodium -lm

cuda-all: $(CUDA_TEST) $(CUDA_TEST_NO) $(CUDA_GPU) $(CUDA_FAKE) $(CUDA_PART)

cuda-gpu: $(CUDA_GPU)

# The PTX read back from cuda.o through the test (-w DIR), assembled by
# ptxas for its target when the toolkit has it; no object of the library
# may reference a driver symbol (nm -u: nothing named cu[A-Z]*).
cuda-check: $(CUDA_TEST) $(CUDA_TEST_NO) $(CUDA_FAKE) $(CUDA_PART)
	@rm -rf $(CUDA_O)/readback; mkdir -p $(CUDA_O)/readback; \
	$(TAP_RUN) -n cuda -d $(CUDA_O) \
		$(foreach t,$(CUDA_TEST) $(CUDA_TEST_NO),"$(t) -f $(CUDA_FAKE) -p $(CUDA_PART) -w $(CUDA_O)/readback") \
		"$(MAKE) -s --no-print-directory cuda-ptx-check"

# (after cuda-check's tests, which leave the PTX in readback/)
cuda-ptx-check:
	@n=0; fail=0; \
	for f in $(CUDA_O)/readback/*.ptx; do \
		[ -e "$$f" ] || continue; \
		n=$$((n + 1)); \
		sm=$$(sed -n 's/^\.target[[:space:]]*\(sm_[0-9]*\).*/\1/p' $$f); \
		if [ -z "$(CUDA_PTXAS)" ]; then \
			echo "ok $$n - ptxas $$sm # SKIP ptxas: not found"; \
		elif $(CUDA_PTXAS) -arch=$$sm $$f -o $(CUDA_O)/readback/$$sm.cubin \
			2> $$f.log; then echo "ok $$n - ptxas $$sm"; \
		else sed 's/^/# /' $$f.log; \
			echo "not ok $$n - ptxas $$sm"; fail=1; fi; \
	done; \
	n=$$((n + 1)); \
	u=$$(nm -u $(LLAMA_SAN_OBJS) 2>/dev/null | \
		grep -E ' cu[A-Z]' | sort -u); \
	if [ -n "$$u" ]; then echo "# driver symbols referenced: $$u"; \
		echo "not ok $$n - no object references a driver symbol"; fail=1; \
	else echo "ok $$n - no object references a driver symbol"; fi; \
	echo "1..$$n"; [ $$fail = 0 ]

MODEL_ALL += cuda-all
MODEL_CHECK += cuda-check

.PHONY: cuda-all cuda-gpu cuda-check cuda-ptx-check

# SPDX-License-Identifier: MIT
#
# store.mk - signed model files and the A/B model store: the tests of
# sign.c and mhash.c (built by gguf.mk into the runtime), of the verifying
# loaders, and of ../src/mmhal_store.c (the store is part of libmmhal; it
# is built here too, with the sanitizers, for its tests). Included by
# ./Makefile after mm.mk. Design: Documentation/model-store.rst.
#
# Targets:
#   store-all    the sanitized tests and the benchmark
#   store-check  sign_test (ASan+UBSan, TAP): BLAKE2b vectors, key files,
#                the signature file's fields, and mmhal_model_load() /
#                add_tier / mmproj load with a key refusing unsigned,
#                altered (weights, header, signature), truncated, wrong-key,
#                other-file and older-version files; last line
#                "RESULT sign <passed> <failed> <skipped>"; store_test (ASan+UBSan,
#                TAP): ../src/mmhal_store.c: install, switch, commit after
#                N successes, rollback on request / failed request / load
#                failure / failed health check, replays, altered slot and
#                state files, sensor types rolled back on their own, and
#                power cuts: each operation killed before each of its file
#                system calls (tests/fault_shim.c, LD_PRELOAD), the store
#                then loading a verified model and the retry completing;
#                "RESULT store <passed> <failed> <skipped>"; non-zero exit on failure
#   store-bench  verification cost: load time and RSS of a generated model
#                (SmolLM2-135M-shaped, F16 and Q8_0, kept in
#                $(O)/store/models) without a key (mapped, read), with a
#                key through the private copy, and, where that directory's
#                file system has fs-verity, through the fs-verity path
#                (the file mapped); sign_test and sign_bench link
#                tools/sign_verity.c and libfsverity (the signer's side)

STORE_DIR := $(CURDIR)
STORE_O := $(O)/store
STORE_WARN := -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wundef \
	      -Wformat=2
STORE_CFLAGS := $(BASE_CFLAGS) $(STORE_WARN) -I$(STORE_DIR)/tools \
		-I$(STORE_DIR)/tests -pthread
STORE_LIBS := -lfftw3f -pthread -lsodium -lm

STORE_HDRS := $(STORE_DIR)/sign.h $(STORE_DIR)/mhash.h $(STORE_DIR)/gguf.h \
	      $(STORE_DIR)/../tests/tap.h $(STORE_DIR)/tests/tfile.h \
	      $(abspath ../include/mmhal_model.h)
STORE_SIGN_TEST := $(STORE_O)/san/sign_test
STORE_TEST := $(STORE_O)/san/store_test
STORE_SHIM := $(STORE_O)/fault_shim.so
STORE_SRC := $(abspath ../src/mmhal_store.c)
STORE_BENCH := $(STORE_O)/opt/sign_bench

# the whole runtime (decoder, mmproj API, encoders), sanitized / optimised
$(STORE_SIGN_TEST): $(STORE_DIR)/tests/sign_test.c $$(MM_SAN_DEPS) \
		    $(STORE_HDRS) $(GGUF_VERITY_SRC) $(GGUF_VERITY_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(STORE_CFLAGS) $(SAN) $< $(GGUF_VERITY_SRC) $(MM_SAN_DEPS) \
		$(LDFLAGS) -o $@ $(STORE_LIBS) -lfsverity

# the store (libmmhal's), sanitized, for its test
$(STORE_O)/san/mmhal_store.o: $(STORE_SRC) \
			      $(abspath ../include/mmhal_store.h) $(STORE_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(STORE_CFLAGS) $(SAN) -c $< -o $@

$(STORE_TEST): $(STORE_DIR)/tests/store_test.c $(STORE_O)/san/mmhal_store.o \
	       $$(MM_SAN_DEPS) $(STORE_HDRS) $(abspath ../include/mmhal_store.h)
	@mkdir -p $(dir $@)
	$(CC) $(STORE_CFLAGS) $(SAN) $< $(STORE_O)/san/mmhal_store.o \
		$(MM_SAN_DEPS) $(LDFLAGS) -o $@ $(STORE_LIBS)

# the power cut: no sanitizer (it is preloaded before theirs)
$(STORE_SHIM): $(STORE_DIR)/tests/fault_shim.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -g -O1 -Wall -Wextra -Werror -fPIC -shared $< $(LDFLAGS) -o $@ -ldl

$(STORE_BENCH): $(STORE_DIR)/bench/sign_bench.c $$(MM_BENCH_DEPS) \
		$(STORE_HDRS) $(GGUF_VERITY_SRC) $(GGUF_VERITY_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(STORE_CFLAGS) $(OPT) $< $(GGUF_VERITY_SRC) $(MM_BENCH_DEPS) \
		$(LDFLAGS) -o $@ $(STORE_LIBS) -lfsverity

STORE_TESTS := $(STORE_SIGN_TEST) $(STORE_TEST)

store-all: $(STORE_TESTS) $(STORE_SHIM) $(STORE_BENCH)

# store_test takes the shim's path
store-check: $(STORE_TESTS) $(STORE_SHIM)
	@$(TAP_RUN) -n sign -d $(STORE_O) "TMPDIR=$(STORE_O) $(STORE_SIGN_TEST) $(STORE_SHIM)"; \
	r1=$$?; \
	$(TAP_RUN) -n store -d $(STORE_O) "TMPDIR=$(STORE_O) $(STORE_TEST) $(STORE_SHIM)"; \
	r2=$$?; [ $$r1 = 0 ] && [ $$r2 = 0 ]

store-bench: $(STORE_BENCH) $(GGUF_TOOL)
	@mkdir -p $(STORE_O)/models
	$(STORE_BENCH) $(STORE_O)/models $(GGUF_TOOL)

MODEL_ALL += store-all
MODEL_CHECK += store-check
MODEL_BENCH += store-bench

.PHONY: store-all store-check store-bench

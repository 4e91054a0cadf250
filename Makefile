# SPDX-License-Identifier: GPL-2.0
#
# mmedge top-level build.
#
#   make            module, libhal, tools, selftests (installs deps first)
#   make check      host tests + lint, KUnit on UML, kselftests in QEMU
#   make demo       boot the VM, load the module, show what it does
#   make bench      benchmarks in the VM (ratios measured in one run)
#
# KDIR=<kernel build dir> builds the module against another kernel.

BUILD	?= $(CURDIR)/build
KDIR	?=
export MMEDGE_BUILD := $(BUILD)

# The default KDIR is resolved when a recipe runs, after deps.sh has
# installed the headers.
KDIR_SH	= $${KDIR:-/usr/src/linux-headers-$$(scripts/kabi.sh)-amd64}

all: module libhal tools selftests

deps:
	@scripts/deps.sh

module: deps
	@kdir=$(if $(KDIR),$(KDIR),$(KDIR_SH)); \
	$(MAKE) -C $$kdir M=$(CURDIR) CONFIG_MMEDGE=m W=1 modules

libhal: deps
	$(MAKE) -C libhal O=$(BUILD)/libhal

tools: libhal
	$(MAKE) -C tools O=$(BUILD)/tools LIBHAL_O=$(BUILD)/libhal

selftests: deps
	@scripts/linux-src.sh
	$(MAKE) -C selftests/mmedge O=$(BUILD)/selftests

check: all
	@scripts/check.sh

demo: all
	@scripts/vm.sh demo

bench: all
	@scripts/bench.sh

clean:
	@kdir=$(if $(KDIR),$(KDIR),$(KDIR_SH)); \
	[ ! -d $$kdir ] || $(MAKE) -C $$kdir M=$(CURDIR) CONFIG_MMEDGE=m clean
	rm -rf $(BUILD)/libhal $(BUILD)/tools $(BUILD)/selftests $(BUILD)/vm

.PHONY: all deps module libhal tools selftests check demo bench clean

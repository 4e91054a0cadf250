# SPDX-License-Identifier: GPL-2.0
#
# mmedge top-level build.
#
#   make            module, libhal, tools, selftests, the GStreamer plugin
#                   (installs deps first)
#   make check      host tests + lint, KUnit on UML, kselftests in QEMU
#   make check-fresh  make check on a fresh clone with an empty cache
#   make demo       boot the VM, load the module, show what it does
#   make bench      benchmarks in the VM (ratios measured in one run)
#
#   make install    build and install mmedge.ko into /lib/modules/$(KVER)/updates
#   make gst-install   install the GStreamer plugin (libgstmmhal.so) into
#                   GStreamer's plugin directory (DESTDIR honoured)
#   make dkms-install  register the source with DKMS, build and install it
#
# KDIR=<kernel build dir> builds the module against another kernel.
# KVER=<release> installs for another kernel than the running one
# (INSTALL_MOD_PATH=<dir> prefixes /lib/modules, as in the kernel).

BUILD	?= $(CURDIR)/build
KDIR	?=
export MMEDGE_BUILD := $(BUILD)

# The default KDIR is resolved when a recipe runs, after deps.sh has
# installed the headers.
KDIR_SH	= $${KDIR:-/usr/src/linux-headers-$$(scripts/kabi.sh)-amd64}

# The package version has one home: dkms.conf.
KVER	?= $(shell uname -r)
VERSION	:= $(shell sed -n 's/^PACKAGE_VERSION="\(.*\)"$$/\1/p' $(CURDIR)/dkms.conf)
DKMS	?= dkms
DKMS_SRC ?= /usr/src/mmedge-$(VERSION)
DKMS_FILES = dkms.conf Kbuild kmod/Kbuild kmod/Kconfig \
	$(filter-out %.mod.c,$(wildcard kmod/*.[ch])) $(wildcard uapi/linux/*.h)

all: module libhal tools selftests gst

deps:
	@scripts/deps.sh

module: deps
	@kdir=$(if $(KDIR),$(KDIR),$(KDIR_SH)); \
	$(MAKE) -C $$kdir M=$(CURDIR) CONFIG_MMEDGE=m W=1 modules

libhal: deps
	$(MAKE) -C libhal O=$(BUILD)/libhal

tools: libhal
	$(MAKE) -C tools O=$(BUILD)/tools LIBHAL_O=$(BUILD)/libhal

# The GStreamer plugin (gst/): element mmhalinfer, linked with libmmhal.a.
gst: libhal
	$(MAKE) -C gst O=$(BUILD)/gst LIBHAL_O=$(BUILD)/libhal

gst-install: gst
	$(MAKE) -C gst O=$(BUILD)/gst LIBHAL_O=$(BUILD)/libhal install

selftests: deps
	@scripts/linux-src.sh
	$(MAKE) -C selftests/mmedge O=$(BUILD)/selftests

# Debian's headers have no System.map, so the kernel's modules_install
# skips depmod; it runs here for the system's tree.
modules_install install:
	@kdir=$(if $(KDIR),$(KDIR),/lib/modules/$(KVER)/build); \
	$(MAKE) -C $$kdir M=$(CURDIR) CONFIG_MMEDGE=m modules && \
	$(MAKE) -C $$kdir M=$(CURDIR) CONFIG_MMEDGE=m INSTALL_MOD_DIR=updates modules_install
	[ -n "$(INSTALL_MOD_PATH)" ] || depmod -a $(KVER)

# DKMS="dkms --dkmstree ..." and DKMS_SRC=<dir>/mmedge-$(VERSION) point it
# at another tree (scripts/dkms-test.sh).
dkms-install:
	@if [ -n "$$($(DKMS) status mmedge/$(VERSION))" ]; then \
		$(DKMS) remove mmedge/$(VERSION) --all; fi
	rm -rf $(DKMS_SRC)
	mkdir -p $(DKMS_SRC)
	cp --parents $(DKMS_FILES) $(DKMS_SRC)/
	$(DKMS) add mmedge/$(VERSION)
	$(DKMS) build mmedge/$(VERSION) -k $(KVER)
	$(DKMS) install mmedge/$(VERSION) -k $(KVER)
	[ "$(KVER)" != "$$(uname -r)" ] || modprobe mmedge

check: all
	@scripts/check.sh

# make check on a fresh clone of HEAD with an empty cache (the debug
# kernel rebuilt): what a new machine runs.
check-fresh:
	@scripts/check-fresh.sh

demo: all
	@scripts/vm.sh demo

bench: all
	@scripts/bench.sh

clean:
	@kdir=$(if $(KDIR),$(KDIR),$(KDIR_SH)); \
	[ ! -d $$kdir ] || $(MAKE) -C $$kdir M=$(CURDIR) CONFIG_MMEDGE=m clean
	rm -rf $(BUILD)/libhal $(BUILD)/tools $(BUILD)/selftests $(BUILD)/vm \
		$(BUILD)/gst

.PHONY: all deps module libhal tools selftests gst gst-install check check-fresh demo bench clean \
	modules_install install dkms-install

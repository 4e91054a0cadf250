#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Runs inside the VM booted with the debug kernel (KASAN, lockdep, DMA-API
# debug, kmemleak, UBSAN), chrooted in the host's root, cwd = the project:
# the hostile kselftests, the ioctl fuzzer and the device kselftests
# against mmedge.ko built for that kernel. Each writes TAP to
# /tmp/results/NAME.tap and its exit code to NAME.rc, which scripts/vm.sh
# reads back on the host (and fails on any splat in the guest's dmesg).
# Then the fuzzer runs again with slab allocations failing in its
# threads, chrooted in a root on the scratch disk (failslab_fuzz:
# mmedge_fuzz_failslab.tap and failslab.tap). Last, the module is
# unloaded and kmemleak reports what is left (kmemleak.tap).
#
# Arguments (both optional): the module (default build/kmod-debug/
# mmedge.ko, where scripts/vm.sh debug builds it) and the directory of the
# kselftest binaries (default build/selftests).
set -u
RES=/tmp/results
# shellcheck source=scripts/guest-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/guest-lib.sh"
export MMEDGE_KO=${1:-$PWD/build/kmod-debug/mmedge.ko}
T=${2:-build/selftests}
KMEMLEAK=/sys/kernel/debug/kmemleak
FUZZ_SEEDS=${FUZZ_SEEDS:-1..4}
FUZZ_SEQS=${FUZZ_SEQS:-1000}
FUZZ_SECONDS=${FUZZ_SECONDS:-60}
FUZZ_THREADS=${FUZZ_THREADS:-4}

echo "guest: $(uname -r), $(nproc) CPUs, module $MMEDGE_KO"

load_mmedge

# DMA-API debug prints only its first error unless told otherwise.
[ -w /sys/kernel/debug/dma-api/all_errors ] &&
	echo 1 > /sys/kernel/debug/dma-api/all_errors

# Importers and exporters: vgem (fences, imports), vivid (V4L2).
load_peers

# kmemleak: forget what boot and module loading left, so that the final
# report holds only what was allocated while the tests ran.
# (kmemleak turns itself off on an internal error: then writes fail.)
kmemleak_ok=0
if [ -w "$KMEMLEAK" ] && echo scan > "$KMEMLEAK" 2>/dev/null &&
   echo clear > "$KMEMLEAK" 2>/dev/null; then
	kmemleak_ok=1
fi

# Bandwidth and latency bounds are for the production kernel's stage.
export MMEDGE_SKIP_TIMING=1

run mmedge_hostile "$T/mmedge_hostile_test"
run mmedge_fuzz "$T/mmedge_fuzz" -s "$FUZZ_SEEDS" -n "$FUZZ_SEQS" \
	-t "$FUZZ_SECONDS" -j "$FUZZ_THREADS"
run mmedge_chan_selftest "$T/mmedge_chan_test"
run mmedge_dir_selftest "$T/mmedge_dir_test"
run mmedge_clock_selftest "$T/mmedge_clock_test"
# The buffer test reloads vivid and mmedge (from MMEDGE_KO).
run mmedge_buf_selftest "$T/mmedge_buf_test"
# Last: it unloads and reloads the module.
run mmedge_selftest "$T/mmedge_test"

# The fuzzer again, with slab allocations failing in its threads, on a
# root that is not 9p (failslab_fuzz in guest-lib.sh).
FAILSLAB_SECONDS=${FAILSLAB_SECONDS:-60}
failslab_fuzz "$T/mmedge_fuzz" -s "$FUZZ_SEEDS" -n "$FUZZ_SEQS" \
	-t "$FAILSLAB_SECONDS" -j "$FUZZ_THREADS"

# Leak report: scan twice (kmemleak reports an object unreferenced in two
# scans and older than 5 s), once with the module loaded, so that its
# frames have names, once after unloading it.
kmemleak_scan() {
	sleep 6
	echo scan > "$KMEMLEAK" 2>/dev/null &&
		sleep 1 &&
		echo scan > "$KMEMLEAK" 2>/dev/null &&
		cat "$KMEMLEAK" > "$1" || kmemleak_ok=0
}

if [ "$kmemleak_ok" = 1 ]; then
	kmemleak_scan "$RES/kmemleak-loaded.txt"
fi

unload_mmedge
modprobe -r vivid vgem 2>/dev/null

if [ "$kmemleak_ok" = 1 ]; then
	kmemleak_scan "$RES/kmemleak.txt"
fi
if [ "$kmemleak_ok" = 1 ]; then
	# Each object once: the report after unloading, then what only the
	# report with the module loaded had.
	cat "$RES/kmemleak-loaded.txt" >> "$RES/kmemleak.txt"
	# A leak counts if its backtrace has a frame of mmedge, dma-buf,
	# sync_file, dma-fence, dma-resv or vgem/vivid (their users here), or
	# a frame without a symbol (code of the unloaded module). Others
	# (9p, the chroot's shell, the kernel's own caches) are not this
	# project's: the debug kernel reports some of those on its own, so
	# they are listed as comments, not counted.
	awk '
		function flush() {
			if (!obj || seen[obj]++) { obj = ""; rel = 0; return }
			if (rel) { n++; print "# leak: " obj > "/dev/stderr" }
			else other++
			obj = ""; rel = 0
		}
		/^unreferenced object/ { flush(); obj = $3; next }
		obj && /\[<[0-9a-f]+>\]/ {
			if ($0 ~ /mmedge|dma_buf|dma-buf|sync_file|dma_fence|dma_resv|vgem|vivid|vb2_/ ||
			    $0 ~ /\] 0x[0-9a-f]+$/) rel = 1
		}
		END {
			flush()
			if (n) printf "not ok 1 kmemleak: %d leaks\n", n
			else printf "ok 1 kmemleak: no leaks\n"
			printf "# %d other unreferenced objects (not in mmedge, dma-buf, sync_file or dma-fence code)\n", other
		}' "$RES/kmemleak.txt" > "$RES/kmemleak.tap" 2> "$RES/kmemleak-counted.txt"
	cat "$RES/kmemleak-counted.txt" >> "$RES/kmemleak.tap"
	grep -q "^ok 1" "$RES/kmemleak.tap"
	echo $? > "$RES/kmemleak.rc"
else
	echo "ok 1 # SKIP kmemleak: $KMEMLEAK not available or turned off" > "$RES/kmemleak.tap"
	echo 0 > "$RES/kmemleak.rc"
fi
exit 0

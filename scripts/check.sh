#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make check: host tests, packagers' builds (clang, gcc -O3), lint, DKMS,
# KUnit on UML, kselftests in QEMU on Debian's 6.1 kernel, the debug
# kernel (scripts/debug-kernel.sh), bookworm's 6.12 kernel and Debian's
# arm64 6.1 kernel with a device tree.
# Every stage prints "RESULT <stage> <passed> <failed> [<skipped>]"; the
# last line is "N passed, N failed, N skipped" over all of them. Exits non-zero on any failure.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${MMEDGE_BUILD:-$ROOT/build}
cd "$ROOT"

mkdir -p "$OUT"
summary="$OUT/check-summary.txt"
: > "$summary"
t0=$(date +%s)

stage() {
	local name=$1 log="$OUT/check-$1.log" s=$(date +%s)
	shift
	echo "== $name"
	"$@" 2>&1 | tee "$log"
	local rc=${PIPESTATUS[0]}
	local res
	res=$(grep -E '^RESULT ' "$log" | tail -n1)
	if [ -z "$res" ]; then
		res="RESULT $name 0 1"
	elif [ "$rc" -ne 0 ] && [ "$(echo "$res" | awk '{print $4}')" = 0 ]; then
		res=$(echo "$res" | awk '{print $1, $2, $3, 1, $5 + 0}')
	fi
	echo "$res" | awk -v t=$(( $(date +%s) - s )) \
		'{printf "%s %s %d %d %d  (%d s)\n", $1, $2, $3, $4, $5 + 0, t}' |
		tee -a "$summary"
}

stage host make -s -C libhal O="$OUT/libhal" check
stage tools make -s -C tools O="$OUT/tools" LIBHAL_O="$OUT/libhal" check
# The GStreamer plugin on the host: gst-inspect-1.0 clean, pads and
# properties, a missing model's error (its pipelines run in the vm stage).
stage gst make -s -C gst O="$OUT/gst" LIBHAL_O="$OUT/libhal" check
# Packagers' builds: clang -O1 with ASan/UBSan and gcc -O3, each -j from
# a clean scratch tree, and the libFuzzer target with clang.
stage build scripts/build-check.sh
stage model scripts/model-check.sh
stage lint scripts/lint.sh
# DKMS add/build/install/remove for the 6.1 and 6.12 kernels, in a scratch
# DKMS tree (nothing outside build/ is written).
stage dkms scripts/dkms-test.sh
stage kunit scripts/kunit.sh
stage vm scripts/vm.sh check
# The hostile kselftests, the ioctl fuzzer and the device tests again, in
# the debug kernel (built once per machine, cached outside the clone).
stage vm-debug scripts/vm.sh debug
# Portability: bookworm's 6.12 kernel (the kselftests and mmctl's CLI test),
# and arm64 in qemu-system-aarch64 -M virt with an mmedge,hub DT node.
stage vm-6.12 scripts/vm.sh check-6.12
stage vm-arm64 scripts/arm64.sh check
# The dmaengine back end on QEMU's ZynqMP ZDMA controller (xlnx-zcu102).
stage vm-arm64-zcu102 scripts/arm64.sh check zcu102

echo "== summary ($(( $(date +%s) - t0 )) s)"
cat "$summary"
read -r passed failed skipped < <(awk '{p += $3; f += $4; s += $5}
	END {print p + 0, f + 0, s + 0}' "$summary")
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]

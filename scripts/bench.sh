#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Boots the test VM and runs the buffer benchmark in it
# (scripts/guest-bench.sh, build/selftests/mmedge_bench). Arguments go to
# mmedge_bench (-r REPEATS). The VM uses TCG where KVM does not work, so
# read the ratios, not the absolute times.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${MMEDGE_BUILD:-$ROOT/build}

for f in "$ROOT/kmod/mmedge.ko" "$OUT/selftests/mmedge_bench"; do
	if [ ! -f "$f" ]; then
		echo "bench: $f missing; run 'make' first" >&2
		exit 1
	fi
done

exec "$ROOT/scripts/vm.sh" run "$ROOT/scripts/guest-bench.sh" "$@"

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make bench: every benchmark, each reporting ratios measured in one run.
#
#  1. In the VM (scripts/guest-bench.sh, build/selftests/mmedge_bench):
#     buffers vs anonymous memory, sync costs, channel QBUF/DQBUF vs
#     vivid, source jitter, arbiter shares and cost per segment. The VM
#     uses TCG where KVM does not work: read the ratios, not the times.
#  2. On the host (libhal/model): quantized kernels vs the machine's
#     measured read bandwidth and int8 dot-product peak, and the
#     SmolLM2-135M-shaped model (prefill/decode tokens/s vs the bandwidth
#     roofline, peak RSS).
#
# BENCH=vm or BENCH=model runs one part. Arguments go to mmedge_bench.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${MMEDGE_BUILD:-$ROOT/build}
what=${BENCH:-all}
rc=0

if [ "$what" = all ] || [ "$what" = vm ]; then
	for f in "$ROOT/kmod/mmedge.ko" "$OUT/selftests/mmedge_bench"; do
		if [ ! -f "$f" ]; then
			echo "bench: $f missing; run 'make' first" >&2
			exit 1
		fi
	done
	echo "== bench: device (VM)"
	"$ROOT/scripts/vm.sh" run "$ROOT/scripts/guest-bench.sh" "$@" || rc=1
fi

if [ "$what" = all ] || [ "$what" = model ]; then
	echo "== bench: model runtime (host)"
	make -s -C "$ROOT/libhal/model" O="$OUT/model" bench || rc=1
fi
exit "$rc"

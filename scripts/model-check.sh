#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The model runtime's tests (libhal/model, tests/unit): GGUF reader/writer, tokenizer,
# fuzzing, quantized kernels (x86 and arm64 under qemu-user), decoder,
# encoders, image/audio end to end, signed files and the model store,
# calibration, the CUDA loader. Every fragment runs (make -k: one failing
# fragment does not hide the later ones), each prints its counts as
# "RESULT <name> <passed> <failed> <skipped>" (libhal/tests/tap-run.sh),
# and this prints the sum of every RESULT line as "RESULT model ...".
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${MMEDGE_BUILD:-$ROOT/build}
log="$OUT/model-check.log"
mkdir -p "$OUT"
make -k -s -C "$ROOT/libhal" O="$OUT/libhal" model-check 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
awk '$1 == "RESULT" { n++; p += $3; f += $4; s += $5 }
     END { if (!n) f++
	   printf "RESULT model %d %d %d\n", p, f + 0, s + 0 }' "$log" |
	tee "$OUT/model.result"
read -r _ _ passed failed _ < "$OUT/model.result"
# make failed without a failing test (a build error): one failure more
if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
	echo "model-check: make exited $rc with no failing test (build error?)" >&2
	read -r _ _ p f s < "$OUT/model.result"
	echo "RESULT model $p 1 $s" | tee "$OUT/model.result"
	exit 1
fi
[ "$rc" -eq 0 ] && [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]

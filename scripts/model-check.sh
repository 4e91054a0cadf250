#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The model runtime's tests (libhal/model): GGUF reader/writer, tokenizer,
# fuzzing, quantized kernels (x86 and arm64 under qemu-user), decoder,
# signed files and the model store, calibration, the CUDA loader.
# Each fragment prints "RESULT <name> <passed> <failed>"; this prints
# their sum as "RESULT model <passed> <failed> <skipped>".
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${MMEDGE_BUILD:-$ROOT/build}
log="$OUT/model-check.log"
mkdir -p "$OUT"
make -s -C "$ROOT/libhal/model" O="$OUT/model" check 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
awk '$1 == "RESULT" && ($2 == "gguf" || $2 == "quant" || $2 == "llama" ||
			$2 == "prefetch" || $2 == "quant-arm64" ||
			$2 == "llama-arm64" || $2 == "sign" ||
			$2 == "store" || $2 == "calib" || $2 == "cuda") {
	p += $3; f += $4 }
     /^ok .*# SKIP/ { s++ }
     END { printf "RESULT model %d %d %d\n", p, f + 0, s + 0 }' "$log" |
	tee "$OUT/model.result"
read -r _ _ passed failed _ < "$OUT/model.result"
[ "$rc" -eq 0 ] && [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]

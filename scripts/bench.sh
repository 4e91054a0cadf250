#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make bench: every benchmark, each reporting ratios measured in one run.
#
#  1. In the VM (scripts/guest-bench.sh, build/selftests/mmedge_bench):
#     buffers vs anonymous memory, sync costs, channel QBUF/DQBUF vs
#     vivid, source jitter, arbiter shares and cost per segment; mmrun's
#     routing on vs off; start of frame -> first token P50/P95/P99 and
#     peak RSS with the demo model shape on the virtual camera and
#     microphone, and the payload bytes copied per frame; the microphone's
#     latency class under a camera flood and the model's load. The VM
#     uses TCG where KVM does not work: read the ratios, not the times.
#  2. On the host (libhal's model runtime): quantized kernels vs the machine's
#     measured read bandwidth and int8 dot-product peak, the
#     SmolLM2-135M-shaped model (prefill/decode tokens/s vs the bandwidth
#     roofline, peak RSS), and mm_bench: the session's path with frames
#     from a file, arrival -> first token against the SLO.
#
# The demo model files (random weights: SmolLM2-135M shape, Q8_0, and a
# SigLIP 224 px + Whisper-tiny mmproj, Q8_0) are made here once, in
# $OUT/libhal/bench/models, where mm_bench reuses them and the VM reads them.
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
	models=$OUT/libhal/bench/models
	gguf=$OUT/libhal/mmgguf
	mkdir -p "$models"
	if [ ! -f "$models/smolvlm-llm-q8_0.gguf" ] && [ -x "$gguf" ]; then
		"$gguf" gen --shape smollm2-135m --tokenizer smolvlm --type f16 \
			-o "$models/smolvlm-llm-f16.gguf" >/dev/null &&
			"$gguf" quantize "$models/smolvlm-llm-f16.gguf" \
				"$models/smolvlm-llm-q8_0.gguf" --type q8_0 >/dev/null ||
			echo "bench: the demo model could not be made" >&2
	fi
	if [ ! -f "$models/mmproj-smolvlm224-whisper-tiny-q8_0.gguf" ] && [ -x "$gguf" ]; then
		"$gguf" gen --vision smolvlm-224 --audio whisper-tiny --type q8_0 \
			-o "$models/mmproj-smolvlm224-whisper-tiny-q8_0.gguf" >/dev/null ||
			echo "bench: the demo mmproj could not be made" >&2
	fi
	echo "== bench: device (VM)"
	"$ROOT/scripts/vm.sh" run "$ROOT/scripts/guest-bench.sh" "$@" || rc=1
fi

if [ "$what" = all ] || [ "$what" = model ]; then
	echo "== bench: model runtime (host)"
	make -s -C "$ROOT/libhal" O="$OUT/libhal" bench || rc=1
fi
exit "$rc"

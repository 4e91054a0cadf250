#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The CUDA back end on a machine with an NVIDIA GPU (Documentation/cuda.rst):
# builds libhal's GPU test with nvcc's kernels, runs each kernel
# against the CPU back end on random data (the frame preprocessing and
# im2col against imgproc.c/vision.c, frames read in place), the decoder with backend cuda
# against backend cpu on generated SmolLM2-135M-shaped Q8_0 and Q4_K
# models, and the bench (int8 GEMM TOPS as a fraction of the int8 peak and
# against cuBLASLt, decode tokens/s against the bandwidth roofline); prints
# the figures. A few minutes (build included) on a 16-core machine.
#
#   scripts/gpu-check.sh [OUTDIR]      (default build/gpu)
#
# Environment: CUDA_HOME (/usr/local/cuda), PEAK_TOPS and PEAK_GBS (the
# GPU's dense int8 tensor peak and memory bandwidth; known for H100/H200),
# PEAK_F16 (dense F16 tensor TFLOP/s, default 989: H100/H200 SXM).
# Exit: 0 passed, 1 failed, 77 no usable GPU here (nothing run).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$(mkdir -p "${1:-$ROOT/build/gpu}" && cd "${1:-$ROOT/build/gpu}" && pwd)
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
JOBS=$(nproc 2>/dev/null || echo 2)

refuse() {
	echo "gpu-check: $*; nothing run" >&2
	echo "RESULT gpu 0 0 (no GPU)"
	exit 77
}

# A GPU first: the device node and the driver library the back end loads.
[ -e /dev/nvidia0 ] || [ -e /dev/nvgpu ] || [ -d /dev/nvhost-gpu ] ||
	[ -e /dev/nvidiactl ] || refuse "no NVIDIA GPU (no /dev/nvidia0)"
ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 ' ||
	[ -n "${MMHAL_CUDA_LIB:-}" ] ||
	refuse "no NVIDIA driver library (libcuda.so.1 not in the linker cache)"
[ -x "$CUDA_HOME/bin/nvcc" ] ||
	refuse "no CUDA toolkit at $CUDA_HOME (nvcc builds the kernels)"

name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
case "$name" in
*H200*) tops=${PEAK_TOPS:-1979}; gbs=${PEAK_GBS:-4800}; f16=${PEAK_F16:-989} ;;
*H100*) tops=${PEAK_TOPS:-1979}; gbs=${PEAK_GBS:-3350}; f16=${PEAK_F16:-989} ;;
*) tops=${PEAK_TOPS:-}; gbs=${PEAK_GBS:-}; f16=${PEAK_F16:-989} ;;
esac
echo "# gpu: ${name:-unknown} (int8 peak ${tops:-?} TOPS, ${gbs:-?} GB/s)"
if [ -z "$tops" ] || [ -z "$gbs" ]; then
	echo "# set PEAK_TOPS and PEAK_GBS for this GPU; using the H200's" >&2
	tops=1979 gbs=4800
fi

M=$OUT/libhal
echo "# build (nvcc PTX, cuda_gpu, mmgguf)"
t0=$(date +%s)
timeout 600 make -s -j"$JOBS" -C "$ROOT/libhal" O="$M" \
	CUDA_HOME="$CUDA_HOME" cuda-gpu "$M/mmgguf" > "$OUT/build.log" 2>&1 || {
	tail -20 "$OUT/build.log"; echo "RESULT gpu 0 1"; exit 1; }
echo "# built in $(( $(date +%s) - t0 )) s"

# SmolLM2-135M's shape, quantized as llama.cpp would (kept between runs)
mkdir -p "$OUT/models"
f16=$OUT/models/smollm2-f16.gguf
[ -s "$f16" ] || timeout 300 "$M/mmgguf" gen --shape smollm2-135m \
	--tokenizer gpt2 --type f16 -o "$f16" > /dev/null || {
	echo "gpu-check: model generation failed"; exit 1; }
for q in q8_0 q4_k; do
	[ -s "$OUT/models/smollm2-$q.gguf" ] ||
		timeout 300 "$M/mmgguf" quantize "$f16" \
			"$OUT/models/smollm2-$q.gguf" --type $q > /dev/null || {
		echo "gpu-check: quantizing to $q failed"; exit 1; }
done

fail=0 pass=0
for q in q8_0 q4_k; do
	log=$OUT/cuda_gpu.$q.log
	echo "# cuda_gpu with the $q model"
	timeout 300 "$M/cuda/cuda_gpu" -m "$OUT/models/smollm2-$q.gguf" \
		-P "$tops" -B "$gbs" -F "$f16" > "$log" 2>&1
	rc=$?
	[ $rc = 77 ] && { cat "$log"; refuse "the back end found no usable device"; }
	grep -E '^(not ok|# |BENCH)|^ok .*(preprocess|im2col|declared mapping)' "$log"
	r=$(grep '^RESULT cuda-gpu ' "$log" || echo "RESULT cuda-gpu 0 1")
	set -- $r
	pass=$((pass + $3)) fail=$((fail + $4))
	[ $rc = 0 ] || [ "$4" != 0 ] || fail=$((fail + 1))
done
echo "RESULT gpu $pass $fail"
[ $fail = 0 ]

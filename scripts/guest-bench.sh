#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Runs inside the VM (chrooted in the host's root, cwd = the project), from
# scripts/bench.sh: loads mmedge.ko, vgem (for a device attachment) and
# vivid (the V4L2 reference for the channel rows) and runs the benchmark.
# The table goes to the console and to /tmp/results/bench.txt.
set -u
RES=/tmp/results
KO=${MMEDGE_KO:-$PWD/kmod/mmedge.ko}
BENCH=build/selftests/mmedge_bench

echo "guest: $(uname -r), $(nproc) CPUs"
if ! insmod "$KO"; then
	echo "guest-bench: insmod $KO failed" >&2
	exit 1
fi
modprobe vgem || echo "guest-bench: no vgem; the attachment rows use mmedge's own import"
modprobe vivid n_devs=1 || echo "guest-bench: no vivid; the V4L2 reference row is missing"

# Routing in mmrun's continuous mode (tiny generated models): the same
# asks at the same rate with routing on and off, on a static scene (a
# picture and silence copied through the device by copy channels) and on
# the virtual camera and microphone (a pattern that moves every frame, a
# tone): encoder runs, CPU seconds per minute (getrusage) and start of
# frame -> first token, with the on/off ratios of the same run.
route_bench() {
	local b=${MMEDGE_BUILD:-build} t n=8 every=2000 k out nr t_fail=0
	local mmrun=$b/tools/mmrun mmgguf=$b/libhal/model/mmgguf
	if [ ! -x "$mmrun" ] || [ ! -x "$mmgguf" ]; then
		echo "routing bench: $mmrun or $mmgguf missing; skipped"
		return 0
	fi
	t=$(mktemp -d)
	"$mmgguf" gen --shape tiny --tokenizer smolvlm --type f32 \
		-o "$t/m.gguf" >/dev/null 2>&1 ||
		t_fail=1
	"$mmgguf" gen --vision tiny --audio tiny --type q8_0 \
		-o "$t/p.gguf" >/dev/null 2>&1 || t_fail=1
	if [ "${t_fail:-0}" = 1 ]; then
		echo "routing bench: mmgguf gen failed"
		rm -rf "$t"
		return 1
	fi
	python3 - "$t" <<'PY'
import math, struct, sys
d = sys.argv[1]
w, h = 64, 48
px = bytes((int(128 + 100 * math.sin(x / 7.0) * math.cos(y / 5.0))) for y in range(h) for x in range(w))
open(d + '/scene.pgm', 'wb').write(b'P5\n%d %d\n255\n' % (w, h) + px)
pcm = bytes(2 * 4800)
hdr = b'RIFF' + struct.pack('<I', 36 + len(pcm)) + b'WAVE' + b'fmt ' + struct.pack('<IHHIIHH', 16, 1, 1, 16000, 32000, 2, 16)
open(d + '/silence.wav', 'wb').write(hdr + b'data' + struct.pack('<I', len(pcm)) + pcm)
PY
	echo "routing: $n asks, one every $every ms, tiny models, 2 threads"
	printf '%-22s %-4s %8s %8s %10s %10s %10s\n' scene route encoders avoided \
		"CPU s/min" "first P50" "first P95"
	for k in static virtual; do
		local src
		if [ "$k" = static ]; then
			src="--image $t/scene.pgm --audio $t/silence.wav"
		else
			src="--camera 64x48@30:NV12 --mic 16000"
		fi
		for r in on off; do
			out=$t/$k-$r.txt
			nr=
			[ "$r" = off ] && nr=--no-route
			# shellcheck disable=SC2086
			"$mmrun" --model "$t/m.gguf" --mmproj "$t/p.gguf" \
				--device /dev/mmedge0 --audio-latency $src \
				--listen 200 --asks "$n" --every "$every" -n 4 -t 2 \
				-p "What is happening?" \
				$nr >"$out" 2>&1 || {
				echo "routing bench: mmrun failed:"
				cat "$out"
				rm -rf "$t"
				return 1
			}
			sed -n 's/.*encoder runs \([0-9]*\), avoided \([0-9]*\).*/\1 \2/p' "$out" >"$out.enc"
			sed -n 's/.*(\([0-9.]*\) CPU s per minute).*/\1/p' "$out" >"$out.cpu"
			sed -n 's/.*sof->first token P50 \([0-9.]*\) ms, P95 \([0-9.]*\) ms.*/\1 \2/p' "$out" >"$out.slo"
			read -r e a <"$out.enc"
			read -r p50 p95 <"$out.slo"
			printf '%-22s %-4s %8s %8s %10s %10s %10s\n' \
				"$([ "$k" = static ] && echo "static picture+silence" || echo "virtual camera+tone")" \
				"$r" "$e" "$a" "$(cat "$out.cpu")" "$p50" "$p95"
		done
		awk -v k="$k" 'FNR == 1 { f++ } f == 1 { c1 = $1 } f == 2 { c2 = $1 }
			f == 3 { e1 = $1 } f == 4 { e2 = $1 } f == 5 { p1 = $1 } f == 6 { p2 = $1 }
			END { printf "%-22s on/off: encoder runs %.2f, CPU s per minute %.2f, first token P50 %.2f\n",
				k, e2 ? e1 / e2 : 0, c2 ? c1 / c2 : 0, p2 ? p1 / p2 : 0 }' \
			"$t/$k-on.txt.cpu" "$t/$k-off.txt.cpu" "$t/$k-on.txt.enc" \
			"$t/$k-off.txt.enc" "$t/$k-on.txt.slo" "$t/$k-off.txt.slo"
	done
	rm -rf "$t"
}

if [ "${ROUTE_BENCH_ONLY:-0}" = 1 ]; then
	route_bench 2>&1 | tee "$RES/bench.txt"
	rc=${PIPESTATUS[0]}
else
	"$BENCH" "$@" 2>&1 | tee "$RES/bench.txt"
	rc=${PIPESTATUS[0]}
	route_bench 2>&1 | tee -a "$RES/bench.txt"
	[ "${PIPESTATUS[0]}" = 0 ] || rc=1
fi

# The arbiter's own cost per segment over every segment the bench moved,
# next to the time one 4 KiB segment takes on the modelled bus.
arb=$(cat /sys/class/mmedge/mmedge0/stats/arb_ns_per_segment)
echo "arbiter cost per segment: ${arb} ns (pick + charge, mean over the run)" |
	tee -a "$RES/bench.txt"

modprobe -r vivid vgem 2>/dev/null
rmmod mmedge || { echo "guest-bench: rmmod mmedge failed" >&2; rc=1; }
exit "$rc"

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Runs inside the VM (chrooted in the host's root, cwd = the project), from
# scripts/bench.sh: loads mmedge.ko, vgem (for a device attachment) and
# vivid (the V4L2 reference for the channel rows) and runs the benchmark,
# then the steps below: route (mmrun's routing on vs off), slo (start of
# frame -> first token with the demo model shape) and arb (the latency
# class under a camera flood and the model's load); on request only,
# verity (signed loads through fs-verity, the copy and a plain mapping).
# The tables go to the console and to /tmp/results/bench.txt.
#
# For targeted runs (a wrapper script exports them): BENCH_STEPS="slo arb"
# runs only those steps (ROUTE_BENCH_ONLY=1: only route), MMEDGE_KO the
# module, MMEDGE_BUILD the build tree; SLO_ASKS, SLO_EXACT, ARB_SECS below.
set -u
RES=/tmp/results
# shellcheck source=scripts/guest-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/guest-lib.sh"
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
	local mmrun=$b/tools/mmrun mmgguf=$b/libhal/mmgguf
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

# Start of frame -> first token with the demo model shape: a
# SmolLM2-135M-shaped decoder (Q8_0, SmolVLM's vocabulary) and a SigLIP
# 224 px + Whisper-tiny mmproj (Q8_0), random weights, made on the host by
# scripts/bench.sh in $b/libhal/bench/models (the files of mm_bench). mmrun's
# continuous mode on the virtual camera (NV12 640x480 at 30 fps) and
# microphone (16 kHz, a 2 s window, latency mode): one line per ask, the
# SLO summary (P50/P95/P99, peak RSS) and the payload bytes the CPU
# copied. SLO_ASKS asks (3), SLO_EXACT=1 adds the exact audio mode (30 s
# window) with one ask. Under TCG the times are TCG's.
slo_bench() {
	local b=${MMEDGE_BUILD:-build} m p out mode n
	local mmrun=$b/tools/mmrun dir=$b/libhal/bench/models
	m=$dir/smolvlm-llm-q8_0.gguf
	p=$dir/mmproj-smolvlm224-whisper-tiny-q8_0.gguf
	if [ ! -x "$mmrun" ] || [ ! -f "$m" ] || [ ! -f "$p" ]; then
		echo "SLO bench: $mmrun, $m or $p missing (scripts/bench.sh makes the models); skipped"
		return 0
	fi
	out=$(mktemp)
	for mode in latency exact; do
		n=${SLO_ASKS:-3}
		if [ "$mode" = exact ]; then
			[ "${SLO_EXACT:-0}" = 1 ] || continue
			n=1
		fi
		echo "SLO: demo model shape (SmolLM2-135M Q8_0 + SigLIP 224 px + Whisper-tiny Q8_0, random weights), camera NV12 640x480@30, microphone 16 kHz, 2 s window, $mode audio, $n asks one every 1000 ms, 2 threads"
		# shellcheck disable=SC2046
		"$mmrun" --model "$m" --mmproj "$p" --device /dev/mmedge0 \
			--camera 640x480@30:NV12 --mic 16000 --listen 2000 \
			$([ "$mode" = latency ] && echo --audio-latency) \
			--asks "$n" --every 1000 -n 4 -t 2 \
			-p "What is happening?" >"$out" 2>&1 || {
			echo "SLO bench: mmrun failed:"
			cat "$out"
			rm -f "$out"
			return 1
		}
		sed 's/^mmrun: /  /' "$out"
	done
	rm -f "$out"
}

# The microphone in the latency class (a rate cap; CAP_SYS_NICE: root
# here) while a camera floods the bus and the model runs: five phases of
# ARB_SECS (8) s on an 8 MB/s modelled bus, the mic (16 kHz, 20 ms
# buffers of 640 bytes) streaming throughout: (a) alone, (b) with a
# 1280x720 NV12 camera at 30 fps (41 MB/s asked for), (c) also with mmrun
# asking the demo model back to back (its own camera 640x480 and mic,
# 2 threads on the guest's CPUs), (c-rt) as (c) with the engine thread
# SCHED_FIFO (the engine_rt module parameter, Documentation/arbiter.rst),
# (d) as (c) with the mic back in best effort. Per phase: the mic's queue
# wait p99 (the driver's histogram over the phase, mmctl stats: the
# bucket's upper bound), its eof - sof (DQBUF stamps, mmstream -j)
# P50/P99/max, drops, the bus shares and the median sof -> first token of
# the model's asks whose middle fell in the phase; then the c-rt / c
# ratios.
arb_bench() {
	local b=${MMEDGE_BUILD:-build} t secs=${ARB_SECS:-8} bus=8000000
	local mmctl=$b/tools/mmctl mmstream=$b/tools/mmstream mmrun=$b/tools/mmrun
	local dir=$b/libhal/bench/models mpid fpid rpid lpid k rt0
	local rtp=/sys/module/mmedge/parameters/engine_rt
	if [ ! -x "$mmctl" ] || [ ! -x "$mmstream" ]; then
		echo "arbiter bench: $mmctl or $mmstream missing; skipped"
		return 0
	fi
	t=$(mktemp -d)
	mono() { python3 -c 'import time; print(time.monotonic_ns())'; }
	"$mmctl" bus set "$bus" >/dev/null || { rm -rf "$t"; return 1; }
	"$mmstream" --mic 16000:320:tone -n 1000000 -j >"$t/mic.jsonl" 2>"$t/mic.err" &
	mpid=$!
	for k in $(seq 50); do
		"$mmctl" chan show mic0 >/dev/null 2>&1 && break
		sleep 0.1
	done
	"$mmctl" chan set mic0 class latency cap 256k >/dev/null || {
		echo "arbiter bench: mmctl chan set mic0 class latency failed"
		kill "$mpid"; wait "$mpid"; rm -rf "$t"; return 1
	}
	# the model's CPU time (utime + stime) while it runs
	mcpu() {
		if [ -n "${rpid:-}" ]; then
			echo "mcpu $1 $(awk '{ print $14 + $15 }' "/proc/$rpid/stat") $(mono)" >>"$t/phases"
		fi
	}
	phase() {
		mcpu "$1"
		echo "$1 $(mono) ${EPOCHREALTIME/./}" >>"$t/phases"
		"$mmctl" -j stats -w "$secs" -c 2 | tail -n 1 >"$t/$1.json"
		echo "$1 $(mono) ${EPOCHREALTIME/./}" >>"$t/phases"
		mcpu "$1"
	}
	sleep 1
	phase a
	"$mmstream" --camera 1280x720@30:NV12 --weight camera=10000 -n 0 \
		>"$t/flood.txt" 2>&1 &
	fpid=$!
	sleep 1
	phase b
	rpid=
	if [ -x "$mmrun" ] && [ -f "$dir/smolvlm-llm-q8_0.gguf" ]; then
		# each line of mmrun's with the time it came (no /dev/fd here)
		mkfifo "$t/run.fifo"
		while IFS= read -r l; do
			echo "${EPOCHREALTIME/./} $l"
		done <"$t/run.fifo" >"$t/run.txt" &
		lpid=$!
		"$mmrun" --model "$dir/smolvlm-llm-q8_0.gguf" \
			--mmproj "$dir/mmproj-smolvlm224-whisper-tiny-q8_0.gguf" \
			--device /dev/mmedge0 --camera 640x480@30:NV12 --mic 16000 \
			--listen 2000 --audio-latency --asks 1000 -n 4 -t 2 \
			-p "What is happening?" >"$t/run.fifo" 2>&1 &
		rpid=$!
		# the model is loaded when its session's channels exist
		for k in $(seq 600); do
			"$mmctl" chan show camera1 >/dev/null 2>&1 && break
			sleep 0.2
		done
		sleep 1
		echo "cpu $(awk '{ print $14 + $15 }' "/proc/$rpid/stat") $(mono)" >>"$t/phases"
		rt0=
		[ -w "$rtp" ] && rt0=$(cat "$rtp") && echo 0 >"$rtp"
		phase c
		if [ -n "$rt0" ]; then
			echo 1 >"$rtp"
			phase r
			echo "$rt0" >"$rtp"
		fi
		"$mmctl" chan set mic0 class best-effort cap none >/dev/null
		phase d
		echo "cpu $(awk '{ print $14 + $15 }' "/proc/$rpid/stat") $(mono)" >>"$t/phases"
	else
		echo "arbiter bench: no mmrun or demo model: phases c and d skipped"
	fi
	[ -n "$rpid" ] && kill "$rpid" && wait "$rpid" "$lpid"
	kill "$fpid" "$mpid"
	wait "$fpid" "$mpid"
	"$mmctl" bus set 200M >/dev/null
	python3 - "$t" "$bus" "$(getconf CLK_TCK)" <<'PY'
import json, math, re, sys
d, bus, tck = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ph, cpu, mc = {}, [], {}
for line in open(d + '/phases'):
    w = line.split()
    if w[0] == 'cpu':
        cpu.append((int(w[1]), int(w[2])))
    elif w[0] == 'mcpu':
        mc.setdefault(w[1], []).append((int(w[2]), int(w[3])))
    else:
        ph.setdefault(w[0], []).append(int(w[1]))
        ph.setdefault(w[0] + 'wall', []).append(int(w[2]))
asks = []
try:
    for line in open(d + '/run.txt'):
        w = line.split(' ', 1)
        m = re.search(r'sof->first token ([0-9.]+) ms, ->last ([0-9.]+) ms', w[1]) if len(w) == 2 else None
        if m:
            # an ask counts in the phase that holds its middle
            asks.append((int(w[0]) - float(m.group(2)) * 500, float(m.group(1))))
except OSError:
    pass
frames = []
for line in open(d + '/mic.jsonl'):
    try:
        o = json.loads(line)
    except ValueError:
        continue
    if o.get('type') == 'frame':
        frames.append((o['sof_mono_ns'], o['eof_mono_ns'] - o['sof_mono_ns']))
def pct(v, p):
    s = sorted(v)
    return s[max(0, math.ceil(p / 100 * len(s)) - 1)]
what = {'a': 'mic alone (latency class)',
        'b': '+ camera flood',
        'c': '+ camera flood + model',
        'r': '+ flood + model, engine_rt=1',
        'd': 'flood + model, mic best effort'}
bound = 0.5e-3 + 4096 / bus + 50e-6
print('arbiter: mic 16 kHz (640 B per 20 ms) latency class, cap 256 KB/s; flood: camera NV12 1280x720@30 (41 MB/s asked), weight 10000; bus %.0f MB/s; bound on a segment\'s wait (Documentation/arbiter.rst, soft engine): 0.5 ms + 4096 B / bus + 50 us = %.3f ms + the engine thread\'s scheduling' % (bus / 1e6, bound * 1e3))
print('%-32s %-11s %11s %9s %9s %9s %6s %9s %9s %11s' % ('phase', 'class', 'wait p99', 'eof-sof50', 'eof-sof99', 'max', 'drops', 'mic MB/s', 'cam MB/s', '1st token'))
res = {}
for k in 'abcrd':
    if k not in ph:
        continue
    t0, t1 = ph[k]
    try:
        st = json.loads(open(d + '/%s.json' % k).read())
    except (OSError, ValueError):
        continue
    mic = [c for c in st['chans'] if c['name'] == 'mic0']
    cam = [c for c in st['chans'] if c['name'].startswith('camera')]
    if not mic:
        continue
    mic = mic[0]
    w = mic['wait_p99_ns']
    ws = 'none' if w is None else ('>= 16.8 ms' if mic['wait_p99_open'] else '< %.3f ms' % (w / 1e6))
    v = [x[1] / 1e6 for x in frames if t0 <= x[0] < t1]
    if v:
        e50, e99, emax = pct(v, 50), pct(v, 99), max(v)
    else:
        e50 = e99 = emax = float('nan')
    tw0, tw1 = ph[k + 'wall']
    ft = [a[1] for a in asks if tw0 <= a[0] < tw1]
    fts = '%.0fms (%d)' % (pct(ft, 50), len(ft)) if ft else '-'
    res[k] = (w, e99, pct(ft, 50) if ft else None)
    print('%-32s %-11s %11s %8.2fms %8.2fms %8.2fms %6d %9.3f %9.3f %11s' % (
        what[k], mic['class'], ws, e50, e99, emax, mic['dropped_new'],
        mic['bytes_per_s'] / 1e6, sum(c['bytes_per_s'] for c in cam) / 1e6, fts))
if asks:
    print('  the model: %d asks answered, sof -> first token P50 %.0f ms over all of them' % (
        len(asks), pct([a[1] for a in asks], 50)))
if 'c' in res and 'r' in res:
    (wc, ec, fc), (wr, er, fr) = res['c'], res['r']
    def rate(k):
        v = mc.get(k, [])
        return (v[1][0] - v[0][0]) / tck / ((v[1][1] - v[0][1]) / 1e9) if len(v) == 2 else None
    def ratio(x, y):
        return '%.2f' % (x / y) if x is not None and y else '-'
    print('  engine_rt=1 / engine_rt=0 with flood + model: mic wait p99 %s, eof-sof p99 %s, first token P50 %s, the model\'s CPU s/s %s' % (
        ratio(wr, wc), ratio(er, ec), ratio(fr, fc), ratio(rate('r'), rate('c'))))
if len(cpu) == 2:
    print('  the model during (c) to (d): mmrun -t 2 used %.1f CPU s in %.1f s' % (
        (cpu[1][0] - cpu[0][0]) / tck, (cpu[1][1] - cpu[0][1]) / 1e9))
PY
	rm -rf "$t"
}

# Signed loads through fs-verity against the private copy and a plain
# mapping (sign_bench on the scratch disk, an ext4 with the verity
# feature; the host's file system has none). Not in "all": about 20
# minutes under TCG, and the disk must hold both models (run with
# VM_SCRATCH_MB=1024). BENCH_STEPS=verity from a wrapper script.
verity_bench() {
	local b=${MMEDGE_BUILD:-build} d=/tmp/mmscratch
	local sb=$b/libhal/bench/sign_bench mmgguf=$b/libhal/mmgguf
	if [ ! -x "$sb" ] || [ ! -x "$mmgguf" ]; then
		echo "verity bench: $sb or $mmgguf missing (make -C libhal bench); skipped"
		return 0
	fi
	scratch_mount "$d" || return 1
	mkdir -p "$d/models"
	"$sb" "$d/models" "$mmgguf" "${VERITY_REPS:-3}"
	local rc=$?
	umount "$d"
	return $rc
}

steps=${BENCH_STEPS:-all}
[ "${ROUTE_BENCH_ONLY:-0}" = 1 ] && steps=route
: >"$RES/bench.txt"
rc=0
if [ "$steps" = all ]; then
	"$BENCH" "$@" 2>&1 | tee -a "$RES/bench.txt"
	rc=${PIPESTATUS[0]}
	steps="route slo arb"
fi
for s in $steps; do
	case $s in
	route) route_bench ;;
	slo) slo_bench ;;
	arb) arb_bench ;;
	verity) verity_bench ;;
	*) echo "guest-bench: unknown step '$s' (route, slo, arb, verity)"; false ;;
	esac 2>&1 | tee -a "$RES/bench.txt"
	[ "${PIPESTATUS[0]}" = 0 ] || rc=1
done

# The arbiter's own cost per segment over every segment the bench moved,
# next to the time one 4 KiB segment takes on the modelled bus.
arb=$(cat /sys/class/mmedge/mmedge0/stats/arb_ns_per_segment)
echo "arbiter cost per segment: ${arb} ns (pick + charge, mean over the run)" |
	tee -a "$RES/bench.txt"

modprobe -r vivid vgem 2>/dev/null
rmmod mmedge || { echo "guest-bench: rmmod mmedge failed" >&2; rc=1; }
exit "$rc"

#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
#	mmrun_cli_test.sh [MMRUN [MMGGUF]]
#
# Command-line tests of mmrun on generated models (mmgguf gen: a "tiny"
# LLM with SmolVLM's image tokens, a tiny vision + audio mmproj of its
# width, and a mismatched one): answers from a picture (PPM, PGM and,
# when built with libpng, PNG) and a WAV file, and the messages for bad
# input; device mode (--device): its usage errors, answers about the
# virtual camera and microphone, and the continuous mode (--asks) on a
# picture and a silent WAV copied through the device, routing on (the
# image encoded once, the silence never) and off, -j's JSON lines (valid
# JSON: python3 -m json.tool, with the frame's and the window's sensor
# stamps mapped onto CLOCK_MONOTONIC near the SoC stamps, the routing and
# the summary) and --on-change (a static scene and silence: one ask, the
# other polls skipped), which need /dev/mmedge0
# (run them in the test VM, with mmedge.ko loaded) and skip otherwise. Prints TAP;
# exits 1 if a test failed.
set -u

MMRUN=${1:-${MMRUN:-}}
MMGGUF=${2:-${MMGGUF:-}}
if [ -z "$MMRUN" ] || [ -z "$MMGGUF" ]; then
	echo "usage: $0 MMRUN MMGGUF (or set MMRUN and MMGGUF)" >&2
	exit 2
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
failed=0
bad=0

run() {
	timeout 120 "$MMRUN" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
}

result() {
	n=$((n + 1))
	if [ "$bad" = 0 ]; then
		echo "ok $n - $1"
	else
		echo "not ok $n - $1"
		sed 's/^/#   stdout: /' "$tmp/out"
		sed 's/^/#   stderr: /' "$tmp/err"
		failed=1
	fi
	bad=0
}

skip() {
	n=$((n + 1))
	echo "ok $n - $1 # SKIP $2"
}

expect_rc() { [ "$rc" = "$1" ] || { echo "#   exit $rc, want $1"; bad=1; }; }
expect_err() { grep -q -- "$1" "$tmp/err" || { echo "#   stderr lacks '$1'"; bad=1; }; }
expect_out() { grep -q -- "$1" "$tmp/out" || { echo "#   stdout lacks '$1'"; bad=1; }; }
expect_no_out() { ! grep -q -- "$1" "$tmp/out" || { echo "#   stdout has '$1'"; bad=1; }; }

# WAV writer: rate, channels, bits, seconds of a 440 Hz tone
wav() {
	python3 - "$@" <<'PY'
import math, struct, sys
path, rate, ch, bits, secs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
n = int(rate * secs)
w = bits // 8
data = b''.join(struct.pack('<h', int(8000 * math.sin(2 * math.pi * 440 * i / rate))) * ch if w == 2
                else bytes([128]) * ch for i in range(n))
hdr = b'RIFF' + struct.pack('<I', 36 + len(data)) + b'WAVE'
hdr += b'fmt ' + struct.pack('<IHHIIHH', 16, 1, ch, rate, rate * ch * w, ch * w, bits)
open(path, 'wb').write(hdr + b'data' + struct.pack('<I', len(data)) + data)
PY
}

M=$tmp/model.gguf
P=$tmp/mmproj.gguf
"$MMGGUF" gen --shape tiny --tokenizer smolvlm --type f32 -o "$M" >"$tmp/gen.log" 2>&1 &&
"$MMGGUF" gen --vision tiny --audio tiny --type q8_0 -o "$P" >>"$tmp/gen.log" 2>&1 &&
"$MMGGUF" gen --vision micro --type f32 -o "$tmp/micro.gguf" >>"$tmp/gen.log" 2>&1
rc=$?
[ "$rc" = 0 ] || { bad=1; cat "$tmp/gen.log" >"$tmp/err"; : >"$tmp/out"; }
result "generate a tiny model and mmproj"

printf 'P6\n40 30\n255\n' >"$tmp/a.ppm"
head -c 3600 /dev/urandom >>"$tmp/a.ppm"
printf 'P5\n40 30\n255\n' >"$tmp/a.pgm"
head -c 1200 /dev/urandom >>"$tmp/a.pgm"
wav "$tmp/a.wav" 16000 1 16 0.5

run
expect_rc 2
expect_err usage
result "no arguments: usage, exit 2"

run --model "$M" --mmproj "$P" --image "$tmp/a.ppm" --audio "$tmp/a.wav" \
	--audio-latency -p "What is this?" -n 4 --temp 0
expect_rc 0
[ -s "$tmp/out" ] || { echo "#   no answer"; bad=1; }
expect_err "preprocess .* ms, encode .* ms, prefill .* positions"
result "picture (PPM) + WAV + prompt: an answer and the timing line"

run --model "$M" --mmproj "$P" --image "$tmp/a.pgm" -p "<__media__> and?" \
	-n 2 --temp 0 --raw
expect_rc 0
result "PGM with the media marker in a raw prompt"

run --model "$M" --mmproj "$P" --image "$tmp/a.ppm" -p "Again" -n 3 --temp 0
cp "$tmp/out" "$tmp/out1"
run --model "$M" --mmproj "$P" --image "$tmp/a.ppm" -p "Again" -n 3 --temp 0
cmp -s "$tmp/out" "$tmp/out1" || { echo "#   greedy answers differ"; bad=1; }
expect_rc 0
result "greedy answers repeat"

if "$MMRUN" 2>&1 | grep -q png; then
	python3 - "$tmp/a.png" <<'PY'
import struct, sys, zlib
w, h = 20, 10
raw = b''.join(b'\0' + b''.join(bytes((x * 12 % 256, y * 25 % 256, 77))
                                 for x in range(w)) for y in range(h))
def chunk(t, d): return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d))
png = b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 2, 0, 0, 0))
png += chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b'')
open(sys.argv[1], 'wb').write(png)
PY
	run --model "$M" --mmproj "$P" --image "$tmp/a.png" -p "x" -n 2 --temp 0
	expect_rc 0
	result "PNG picture"
fi

wav "$tmp/b.wav" 44100 1 16 0.2
run --model "$M" --mmproj "$P" --audio "$tmp/b.wav" --audio-latency -p "x"
expect_rc 1
expect_err "sample_rate 44100"
result "44.1 kHz WAV refused naming sample_rate"

wav "$tmp/c.wav" 16000 2 16 0.2
run --model "$M" --mmproj "$P" --audio "$tmp/c.wav" --audio-latency -p "x"
expect_rc 1
expect_err "num_channels 2"
result "stereo WAV refused naming num_channels"

head -c 100 "$tmp/a.ppm" >"$tmp/short.ppm"
run --model "$M" --mmproj "$P" --image "$tmp/short.ppm" -p "x"
expect_rc 1
expect_err "short.ppm"
result "truncated PPM refused naming the file"

run --model "$M" --mmproj "$tmp/micro.gguf" --image "$tmp/a.ppm" -p "x"
expect_rc 1
expect_err "micro.gguf"
result "mmproj of another width refused"

run --model "$M" --mmproj "$P" --audio "$tmp/a.wav" -p "x"
expect_rc 1
result "exact (30 s) audio mode on an encoder too small for it refused"

# --- precision tiers (the F32 model as the top tier of a Q8_0 base) ---
"$MMGGUF" quantize "$M" "$tmp/q8.gguf" --type q8_0 >/dev/null 2>&1
run --model "$tmp/q8.gguf" --tier "$M" --tier-mode confidence \
	--mmproj "$P" --image "$tmp/a.ppm" -p "x" -n 6 --temp 0
expect_rc 0
expect_err "precision tiers: q8_0 [0-9]* steps, f32 [0-9]* steps; [0-9]* recomputed"
result "--tier + --tier-mode confidence: the steps per tier"
run --model "$tmp/q8.gguf" --tier "$M" --tier-mode fixed:1 \
	--mmproj "$P" --image "$tmp/a.ppm" -p "Again" -n 3 --temp 0
cp "$tmp/out" "$tmp/out_t"
run --model "$M" --mmproj "$P" --image "$tmp/a.ppm" -p "Again" -n 3 --temp 0
cmp -s "$tmp/out" "$tmp/out_t" || { echo "#   fixed:1 differs from the F32 file alone"; bad=1; }
result "--tier-mode fixed:1 answers as the top tier's file alone"
run --model "$tmp/q8.gguf" --tier "$tmp/micro.gguf" --mmproj "$P" -p "x"
expect_rc 1
expect_err "micro.gguf"
result "a tier that is not the same model is refused naming the file"
run --model "$M" --mmproj "$P" --tier-mode fixed:9 -p "x"
expect_rc 2
expect_err "tier-mode"
result "--tier-mode fixed:9: usage error"
run --model "$M" --mmproj "$P" --ctx-shift x -p "x"
expect_rc 2
expect_err "ctx-shift"
result "--ctx-shift x: usage error"

# --- context size ---
long=$(python3 -c "print(' '.join(['word'] * 200))")
run --model "$M" --mmproj "$P" --raw -p "$long" -n 1
expect_rc 1
expect_err "context full: the prompt's [0-9]* positions > n_ctx"
result "a prompt longer than the default context is refused"
short=$(python3 -c "print(' '.join(['word'] * 8))")
run --model "$M" --mmproj "$P" --raw -p "$short" -n 1 --temp 0
expect_rc 0
expect_err "prefill .* ([0-9]* positions)"
result "a prompt of about 40 positions fits the default context"
run --model "$M" --mmproj "$P" --ctx 16 --raw -p "$short" -n 1 --temp 0
expect_rc 1
expect_err "context full: the prompt's [0-9]* positions > n_ctx 16"
result "--ctx 16: the same prompt no longer fits (the option sets the context)"
for v in 0 x 2000000; do
	run --model "$M" --mmproj "$P" --ctx "$v" -p "x"
	expect_rc 2
	expect_err "\-\-ctx '$v': want the context size"
	result "--ctx $v: usage error"
done

# --- a vision mmproj and an audio mmproj ---
"$MMGGUF" gen --vision tiny --type q8_0 -o "$tmp/v.gguf" >>"$tmp/gen.log" 2>&1
"$MMGGUF" gen --audio tiny --type q8_0 -o "$tmp/au.gguf" >>"$tmp/gen.log" 2>&1
run --model "$M" --mmproj "$tmp/v.gguf" --mmproj "$tmp/au.gguf" \
	--image "$tmp/a.ppm" --audio "$tmp/a.wav" --audio-latency \
	-p "What is this?" -n 4 --temp 0
expect_rc 0
expect_err "^mmrun: preprocess .* encode .* prefill .* ([0-9]* positions)"
result "--mmproj vision + --mmproj audio: image and audio answered together"
run --model "$M" --mmproj "$tmp/au.gguf" --mmproj "$tmp/v.gguf" \
	--image "$tmp/a.ppm" --audio "$tmp/a.wav" --audio-latency \
	-p "What is this?" -n 4 --temp 0
cp "$tmp/out" "$tmp/out_av"
run --model "$M" --mmproj "$tmp/v.gguf" --mmproj "$tmp/au.gguf" \
	--image "$tmp/a.ppm" --audio "$tmp/a.wav" --audio-latency \
	-p "What is this?" -n 4 --temp 0
cmp -s "$tmp/out" "$tmp/out_av" || { echo "#   the answer depends on the order of --mmproj"; bad=1; }
result "--mmproj in either order: the same answer"
run --model "$M" --mmproj "$tmp/v.gguf" --mmproj "$P" --image "$tmp/a.ppm" -p "x"
expect_rc 1
expect_err "both have a vision encoder; give one vision and one audio mmproj"
result "two mmproj files with a vision encoder: refused as ambiguous"
run --model "$M" --mmproj "$tmp/au.gguf" --mmproj "$P" -p "x"
expect_rc 1
expect_err "both have an audio encoder"
result "two mmproj files with an audio encoder: refused as ambiguous"
run --model "$M" --mmproj "$tmp/au.gguf" --image "$tmp/a.ppm" -p "x"
expect_rc 1
expect_err "no --mmproj has a vision encoder"
result "an image with only an audio mmproj: refused"
run --model "$M" --mmproj "$tmp/v.gguf" --audio "$tmp/a.wav" -p "x"
expect_rc 1
expect_err "no --mmproj has an audio encoder"
result "audio with only a vision mmproj: refused"
run --model "$M" --mmproj "$P" --mmproj "$P" --mmproj "$P" -p "x"
expect_rc 2
expect_err "at most two"
result "three --mmproj: usage error"
run --model "$M" --mmproj "$tmp/v.gguf" --mmproj "$tmp/au.gguf" \
	--device /dev/mmedge0 -p "x"
expect_rc 2
expect_err "\-\-device: one \-\-mmproj"
result "--device with two --mmproj: usage error"

# --- device mode ---

DEV=/dev/mmedge0

run --model "$M" --mmproj "$P" --camera 64x48 -p "x"
expect_rc 2
expect_err "need --device"
result "--camera without --device: usage error"

run --model "$M" --mmproj "$P" --device "$DEV" --image "$tmp/a.ppm" \
	--image "$tmp/a.pgm" -p "x"
expect_rc 2
expect_err "one --image instead of --camera"
result "--device with two --image: usage error"

run --model "$M" --mmproj "$P" --device "$DEV" --image "$tmp/a.ppm" \
	--camera 64x48 -p "x"
expect_rc 2
expect_err "one --image instead of --camera"
result "--device with --image and --camera: usage error"

run --model "$M" --mmproj "$P" --asks 3 -p "x"
expect_rc 2
expect_err "need --device"
result "--asks without --device: usage error"

run --model "$M" --mmproj "$P" -j -p "x"
expect_rc 2
expect_err "need --device"
result "-j without --device: usage error"

run --model "$M" --mmproj "$P" --device "$DEV" --on-change -p "x"
expect_rc 2
expect_err "--on-change needs --asks"
result "--on-change without --asks: usage error"

for a in "--asks 0" "--every x" "--asks -1"; do
	# shellcheck disable=SC2086
	run --model "$M" --mmproj "$P" --device "$DEV" $a -p "x"
	expect_rc 2
	expect_err "${a% *} '${a#* }'"
	result "$a: usage error naming it"
done

for c in 64x 64x48@0 x48 64x48@30:YUYV 5000x48; do
	run --model "$M" --mmproj "$P" --device "$DEV" --camera "$c" -p "x"
	expect_rc 2
	expect_err "--camera '$c'"
	result "--camera $c: usage error naming it"
done

run --model "$M" --mmproj "$P" --device "$DEV" --mic 16k -p "x"
expect_rc 2
expect_err "--mic '16k'"
result "--mic 16k: usage error"

run --model "$M" --mmproj "$P" --device "$DEV" --listen 0 -p "x"
expect_rc 2
expect_err "--listen '0'"
result "--listen 0: usage error"

run --model "$M" --mmproj "$P" --device "$tmp/no-such-dev" -p "x"
expect_rc 1
expect_err "cannot open $tmp/no-such-dev"
result "--device that does not exist: exit 1 naming it"

if [ -c "$DEV" ]; then
	run --model "$M" --mmproj "$P" --device "$DEV" --audio-latency \
		--listen 500 -p "What do you see and hear?" -n 4 -t 2
	expect_rc 0
	expect_out "^mmrun: camera frame [0-9]* (NV12 64x48): sof [0-9.]* s, eof [0-9.]* s"
	expect_out "^mmrun: microphone buffers [0-9]*\.\.[0-9]* (8000 samples, in place)"
	expect_out "^mmrun: camera start of frame -> first token [0-9.]* ms, -> last token [0-9.]* ms"
	expect_err "payload bytes copied 0$"
	result "--device: camera + microphone answer with the frame's timestamps"

	run --model "$M" --mmproj "$P" --device "$DEV" \
		--camera 48x32@60:GREY -p "What do you see?" -n 2 -t 2
	expect_rc 0
	expect_out "^mmrun: camera frame [0-9]* (GREY 48x32)"
	expect_no_out "microphone buffers"
	result "--device --camera GREY alone"

	run --model "$M" --mmproj "$P" --device "$DEV" --mic 8000 \
		--audio-latency -p "x"
	expect_rc 1
	expect_err "16000 Hz"
	result "--device --mic 8000: the mmproj's rate named"

	# a silent S16 WAV of 0.3 s
	python3 -c "
import struct, sys
d = bytes(2 * 4800)
h = b'RIFF' + struct.pack('<I', 36 + len(d)) + b'WAVE' + b'fmt ' + struct.pack('<IHHIIHH', 16, 1, 1, 16000, 32000, 2, 16)
open(sys.argv[1], 'wb').write(h + b'data' + struct.pack('<I', len(d)) + d)
" "$tmp/silence.wav"
	run --model "$M" --mmproj "$P" --device "$DEV" --audio-latency \
		--image "$tmp/a.ppm" --audio "$tmp/silence.wav" --listen 200 \
		--asks 3 --every 50 -p "What is it?" -n 2 -t 2
	expect_rc 0
	expect_out "^mmrun: ask 1: .* | image first, audio silence (0% speech) | encoders 1, "
	expect_out "^mmrun: ask 2: .* | image unchanged (diff 0.00), audio silence (0% speech) | encoders 0, "
	expect_out "^mmrun: ask 3: .* | image unchanged (diff 0.00), audio silence"
	expect_out "^mmrun: SLO over 3 asks: sof->first token P50 [0-9.]* ms, P95 [0-9.]* ms, P99 [0-9.]* ms; sof->last token P50"
	expect_out "^mmrun: peak RSS [0-9.]* MiB; CPU [0-9.]* s in [0-9.]* s ([0-9.]* CPU s per minute); encoder runs 1, avoided 5 (image unchanged 2, audio silence 3)"
	result "--device --asks 3: a static picture and silence, routed"

	run --model "$M" --mmproj "$P" --device "$DEV" --audio-latency \
		--image "$tmp/a.ppm" --audio "$tmp/silence.wav" --listen 200 \
		--asks 2 --no-route -p "What is it?" -n 2 -t 2
	expect_rc 0
	expect_out "^mmrun: ask 2: .* | image always (diff 0.00), audio always | encoders 2, "
	expect_out "encoder runs 4, avoided 0 "
	result "--device --asks 2 --no-route: every encoder runs"

	# -j: JSON lines, valid; an answer and a summary
	run --model "$M" --mmproj "$P" --device "$DEV" --audio-latency \
		--listen 500 -p "What do you see and hear?" -n 3 -t 2 -j
	expect_rc 0
	python3 -m json.tool --json-lines "$tmp/out" >/dev/null 2>"$tmp/jerr" ||
		{ echo "#   not JSON lines: $(cat "$tmp/jerr")"; bad=1; }
	python3 - "$tmp/out" <<'EOF' || bad=1
import json, sys
objs = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
ok = True
def want(c, what):
    global ok
    if not c:
        print("#   " + what)
        ok = False
want(len(objs) == 2 and objs[0]["type"] == "answer" and objs[1]["type"] == "summary", "want an answer and a summary: %r" % [o.get("type") for o in objs])
a, s = objs[0], objs[-1]
want(len(a["tokens"]) == 3 and isinstance(a["text"], str), "tokens/text")
f, w = a["frame"], a["audio"]
want(f["mono"]["sof"] <= f["mono"]["eof"] and f["sensor"] is not None, "frame stamps")
want(f["mapped"] is not None and abs(f["mapped"]["sof"] - f["mono"]["sof"]) <= 2 * f["mapped"]["uncert_ns"] + 1000, "frame mapped near the SoC stamp: %r" % f)
want(w["samples"] == 8000 and w["mapped"] is not None and abs(w["mapped"]["start"] - w["mono"]["sof"]) <= 2 * w["mapped"]["uncert_ns"] + 1000, "audio window mapped: %r" % w)
want(a["pairing"] is not None and a["pairing"]["overlapping_frames"] >= 0, "pairing")
want(a["routing"]["image"]["reason"] == "first" and a["routing"]["image"]["decision"] == "encoded", "image route: %r" % a["routing"])
want(a["routing"]["audio"]["reason"] in ("speech", "silence"), "audio route")
t = a["timings_ms"]
want(0 < t["sof_to_first_token"] <= t["sof_to_last_token"], "timings: %r" % t)
want(s["asks"] == 1 and s["slo"]["n"] == 1 and s["slo"]["sof_to_first_token_ms"]["p50"] == t["sof_to_first_token"], "summary SLO: %r" % s)
want(s["peak_rss_bytes"] > 0 and s["bytes_copied"]["total"] == 0, "summary RSS / copies")
sys.exit(0 if ok else 1)
EOF
	result "--device -j: JSON lines with the mapped stamps, routing and SLO"

	# --on-change: a static picture and silence: the first poll asks, the
	# others find no change and are skipped
	run --model "$M" --mmproj "$P" --device "$DEV" --audio-latency \
		--image "$tmp/a.ppm" --audio "$tmp/silence.wav" --listen 200 \
		--asks 3 --every 50 --on-change -p "What is it?" -n 2 -t 2
	expect_rc 0
	expect_out "^mmrun: ask 1: .* | image first, audio silence"
	expect_out "^mmrun: poll 2: no change (image unchanged, diff 0.00; audio silence, 0% speech): not asked"
	expect_out "^mmrun: poll 3: no change"
	expect_out "^mmrun: 3 polls: 1 asked, 2 skipped (no change)"
	expect_out "^mmrun: SLO over 1 asks"
	result "--device --on-change: a static scene and silence asked once"

	run --model "$M" --mmproj "$P" --device "$DEV" --audio-latency \
		--image "$tmp/a.ppm" --audio "$tmp/silence.wav" --listen 200 \
		--asks 3 --every 50 --on-change -j -p "What is it?" -n 2 -t 2
	expect_rc 0
	python3 -m json.tool --json-lines "$tmp/out" >/dev/null 2>"$tmp/jerr" ||
		{ echo "#   not JSON lines: $(cat "$tmp/jerr")"; bad=1; }
	python3 - "$tmp/out" <<'EOF' || bad=1
import json, sys
objs = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
types = [o["type"] for o in objs]
s = objs[-1]
if types != ["answer", "skip", "skip", "summary"] or s["polls"] != 3 or s["skipped_polls"] != 2 or s["asks"] != 1:
    print("#   types %r, summary %r" % (types, s))
    sys.exit(1)
EOF
	result "--device --on-change -j: skipped polls in the JSON lines"
else
	for t in "camera + microphone answer" "camera GREY alone" \
		"--mic 8000 refused" "--asks routed" "--asks --no-route" \
		"-j" "--on-change" "--on-change -j"; do
		skip "--device: $t" "$DEV not present"
	done
fi

echo "1..$n"
exit $failed

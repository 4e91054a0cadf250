#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Runs inside the VM: load mmedge.ko and show what it offers.
set -e
B=build

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "kernel $(uname -r); loading mmedge.ko"
insmod kmod/mmedge.ko
dmesg | grep -i mmedge | sed 's/^/  dmesg: /'

step "the device"
ls -l /dev/mmedge*
echo "sysfs: /sys/class/mmedge/mmedge0 ->" \
	"$(readlink -f /sys/class/mmedge/mmedge0)"
for a in virtual api_version; do
	printf '  %s = %s\n' "$a" "$(cat /sys/class/mmedge/mmedge0/$a)"
done

step "mmctl caps"
"$B/tools/mmctl" caps
step "mmctl -j dev show"
"$B/tools/mmctl" -j dev show

step "mmstream -n 10: camera, microphone and IMU streaming, hardware timestamps"
"$B/tools/mmstream" -n 10

step "mmstream -n 0 in the background: the three sensors stream until stopped"
"$B/tools/mmstream" -n 0 > /tmp/mmstream-demo.log 2>&1 &
spid=$!
sleep 1
sed 's/^/  /' /tmp/mmstream-demo.log

step "mmctl chan show: the channels, over generic netlink"
"$B/tools/mmctl" chan show

step "mmctl stats -w 1 -c 2: MB/s, share of bytes vs share of weight, p99 wait, drops"
"$B/tools/mmctl" stats -w 1 -c 2

step "stopping mmstream (SIGTERM): its summary"
kill -TERM "$spid"
wait "$spid"
sed -n '/^chan /,$p' /tmp/mmstream-demo.log

step "instance counters: /sys/class/mmedge/mmedge0/stats/"
for f in /sys/class/mmedge/mmedge0/stats/*; do
	[ -f "$f" ] && printf '  %-14s %s\n' "$(basename "$f")" "$(cat "$f")"
done

step "mmrun --device: the multimodal model answers about what the camera and microphone capture"
echo "  model files made here by mmgguf gen: a SmolVLM-shaped tiny LLM and a vision +"
echo "  audio mmproj with RANDOM weights (so the words mean nothing; the frame, the"
echo "  audio window, their hardware timestamps and the latencies are real)"
mkdir -p /tmp/mmrun-demo
"$B/libhal/mmgguf" gen --shape tiny --tokenizer smolvlm --type f32 \
	-o /tmp/mmrun-demo/model.gguf > /dev/null
"$B/libhal/mmgguf" gen --vision tiny --audio tiny --type q8_0 \
	-o /tmp/mmrun-demo/mmproj.gguf > /dev/null
"$B/tools/mmrun" --model /tmp/mmrun-demo/model.gguf \
	--mmproj /tmp/mmrun-demo/mmproj.gguf --device /dev/mmedge0 \
	--camera 64x48@30:NV12 --mic 16000 --listen 1000 --audio-latency \
	-n 12 -p "What do you see and hear?" 2>&1 | sed 's/^/  /'

step "mmrun --device --asks 3 --every 1000: the continuous mode, a question a second"
echo "  each ask takes the newest frame and audio window; routing decides what runs:"
echo "  the image encoder only when the frame's 16x16 thumbnail changed, the audio"
echo "  encoder only when the window has speech-like energy; the rest of the prompt"
echo "  is kept in the KV cache. The virtual camera's pattern moves every frame and"
echo "  the microphone plays a tone:"
"$B/tools/mmrun" --model /tmp/mmrun-demo/model.gguf \
	--mmproj /tmp/mmrun-demo/mmproj.gguf --device /dev/mmedge0 \
	--camera 64x48@30:NV12 --mic 16000 --listen 1000 --audio-latency \
	--asks 3 --every 1000 -n 6 -p "What is happening?" 2>&1 | sed 's/^/  /'
echo "  a static scene: a picture and 1 s of silence, copied through the device by"
echo "  copy channels at each ask (timestamped like camera frames):"
python3 - /tmp/mmrun-demo <<'PY'
import math, struct, sys
d = sys.argv[1]
w, h = 64, 48
px = bytes(int(128 + 100 * math.sin(x / 7.0) * math.cos(y / 5.0)) for y in range(h) for x in range(w))
open(d + '/scene.pgm', 'wb').write(b'P5\n%d %d\n255\n' % (w, h) + px)
pcm = bytes(2 * 16000)
fmt = struct.pack('<IHHIIHH', 16, 1, 1, 16000, 32000, 2, 16)
hdr = b'RIFF' + struct.pack('<I', 36 + len(pcm)) + b'WAVE' + b'fmt ' + fmt
open(d + '/silence.wav', 'wb').write(hdr + b'data' + struct.pack('<I', len(pcm)) + pcm)
PY
"$B/tools/mmrun" --model /tmp/mmrun-demo/model.gguf \
	--mmproj /tmp/mmrun-demo/mmproj.gguf --device /dev/mmedge0 \
	--image /tmp/mmrun-demo/scene.pgm --audio /tmp/mmrun-demo/silence.wav \
	--listen 1000 --audio-latency --asks 3 --every 1000 -n 6 \
	-p "What is happening?" 2>&1 | sed 's/^/  /'

step "the bus saturated while the model runs: the shares follow the weights"
echo "  the soft DMA engine's bus modelled at 2 MB/s; two NV12 320x240@30 cameras"
echo "  ask 3.5 MB/s each: camera0 from mmstream, camera1 the one mmrun's session"
echo "  reads (with its microphone) while it asks a question a second (one thread,"
echo "  so that the engine thread keeps a CPU of the VM's two)"
M=/tmp/mmrun-demo
bus0=$("$B/tools/mmctl" -j bus show | python3 -c 'import json,sys; print(json.load(sys.stdin)["bus_bw"])')
"$B/tools/mmctl" bus set 2M
"$B/tools/mmstream" --camera 320x240@30:NV12 -n 0 > /tmp/mmstream-flood.log 2>&1 &
fpid=$!
for k in $(seq 50); do
	"$B/tools/mmctl" chan show camera0 > /dev/null 2>&1 && break
	sleep 0.1
done
"$B/tools/mmrun" --model $M/model.gguf --mmproj $M/mmproj.gguf \
	--device /dev/mmedge0 --camera 320x240@30:NV12 --mic 16000 \
	--listen 1000 --audio-latency --asks 20 --every 1000 -n 4 -t 1 -j \
	-p "What is happening?" > $M/run.jsonl 2> $M/run.err &
rpid=$!
for k in $(seq 300); do
	"$B/tools/mmctl" chan show camera1 > /dev/null 2>&1 && break
	sleep 0.1
done
"$B/tools/mmctl" stats -w 2 -c 1 | sed 's/^/  /'
# A 3 s sample per setting, 1 s after the change: each camera's weight
# share against its share of the bytes the two moved.
shares() {
	sleep 1
	"$B/tools/mmctl" -j stats -w 3 -c 2 | tail -n 1 | python3 -c '
import json, sys
s = json.load(sys.stdin)
c = {x["name"]: x for x in s["chans"] if x["name"] in ("camera0", "camera1")}
w = sum(x["weight"] for x in c.values())
b = sum(x["bytes_per_s"] for x in c.values())
for n in sorted(c):
    x = c[n]
    print("  %-8s weight %4d  weight share %5.1f%%  byte share %5.1f%%  %6.2f MB/s" %
          (n, x["weight"], 100.0 * x["weight"] / w, 100.0 * x["bytes_per_s"] / b if b else 0.0,
           x["bytes_per_s"] / 1e6))
'
}
echo "  weights 100 / 100:"
shares
"$B/tools/mmctl" monitor -c 1 > /tmp/mmctl-monitor.log 2>&1 &
mpid=$!
sleep 0.3
echo "  \$ mmctl chan set camera0 weight 400"
"$B/tools/mmctl" chan set camera0 weight 400
wait "$mpid"
sed 's/^/  monitor: /' /tmp/mmctl-monitor.log
shares
echo "  \$ mmctl chan set camera0 weight 100; mmctl chan set camera1 weight 300"
"$B/tools/mmctl" chan set camera0 weight 100
"$B/tools/mmctl" chan set camera1 weight 300
shares
wait "$rpid" || sed 's/^/  mmrun: /' $M/run.err
kill -TERM "$fpid"
wait "$fpid" || true
"$B/tools/mmctl" bus set "$bus0"
echo "  mmrun -j meanwhile (one JSON object per answer; the frame's and the audio"
echo "  window's sensor stamps mapped onto CLOCK_MONOTONIC, the frames the window"
echo "  overlaps), then its SLO table:"
python3 - $M/run.jsonl <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
for a in rows:
    if a["type"] != "answer":
        continue
    f, p = a["frame"], a["pairing"] or {}
    ov = ("frames %d..%d" % (p["seq_first"], p["seq_last"])) if p.get("overlapping_frames") else "no frame seen"
    print("  ask %2d: frame %4d (%s, %s)  mapped - SoC %+6.2f us +- %.2f  window overlaps %s  sof->first token %7.1f ms" % (
        a["ask"], f["sequence"], a["routing"]["image"]["reason"], a["routing"]["audio"]["reason"],
        ((f["mapped"]["sof"] - f["mono"]["sof"]) / 1e3) if f["mapped"] else float("nan"),
        (f["mapped"]["uncert_ns"] / 1e3) if f["mapped"] else float("nan"),
        ov, a["timings_ms"]["sof_to_first_token"]))
s = rows[-1]
f, l = s["slo"]["sof_to_first_token_ms"], s["slo"]["sof_to_last_token_ms"]
print("  SLO over %d asks      P50        P95        P99        max" % s["slo"]["n"])
print("  sof -> first token %8.1f ms %8.1f ms %8.1f ms %8.1f ms" % (f["p50"], f["p95"], f["p99"], f["max"]))
print("  sof -> last token  %8.1f ms %8.1f ms %8.1f ms %8.1f ms" % (l["p50"], l["p95"], l["p99"], l["max"]))
print("  peak RSS %.1f MiB, %.1f CPU s per minute, encoder runs %d (avoided %d), payload bytes copied %d" % (
    s["peak_rss_bytes"] / 1048576, s["cpu_s_per_min"], s["encoder_runs"], s["encoder_runs_avoided"], s["bytes_copied"]["total"]))
PY

step "GStreamer: v4l2src (vivid, dma-buf) ! mmhalinfer ! fakesink"
echo "  vivid's NV12 frames as dma-bufs, imported into mmedge, fed through the"
echo "  arbiter (stamped) and read in place by the image encoder; an answer at most"
echo "  every second of stream time (ask-interval), with the frame's PTS (gst/)"
modprobe vivid n_devs=1
vivid=""
for d in /sys/class/video4linux/video*; do
	[ "$(cat "$d/name" 2>/dev/null)" = vivid-000-vid-cap ] && vivid=/dev/${d##*/}
done
export GST_PLUGIN_PATH=$PWD/$B/gst GST_REGISTRY=/tmp/gst-demo-registry.bin
echo "  \$ gst-launch-1.0 -m v4l2src device=$vivid io-mode=dmabuf num-buffers=6 ! \\"
echo "      video/x-raw,format=NV12,width=320,height=180,framerate=5/1 ! \\"
echo "      mmhalinfer model=model.gguf mmproj=mmproj.gguf prompt=\"What do you see?\" \\"
echo "      tiles=false n-predict=6 ! fakesink"
gst-launch-1.0 -m v4l2src device="$vivid" io-mode=dmabuf num-buffers=6 ! \
	video/x-raw,format=NV12,width=320,height=180,framerate=5/1 ! \
	mmhalinfer model=$M/model.gguf mmproj=$M/mmproj.gguf prompt="What do you see?" \
	tiles=false n-predict=6 threads=1 ! fakesink 2>&1 |
	grep 'mmhalinfer-answer' | python3 -c '
import re, sys
def num(line, name):
    m = re.search(r"[ ,]" + name + r"=\([a-z0-9]+\)([0-9.e+-]+)", line)
    return float(m.group(1)) if m else float("nan")
for line in sys.stdin:
    print("  answer pts %.3f s = frame pts %.3f s; mmedge sof %.6f s MONOTONIC = running time %.3f s;"
          " sof->first token %.1f ms; bytes copied %d, dma-buf frames %d" % (
          num(line, "pts") / 1e9, num(line, "frame-pts") / 1e9, num(line, "sof-mono") / 1e9,
          num(line, "sof-running-time") / 1e9, num(line, "sof-to-first-token-ms"),
          num(line, "bytes-copied"), num(line, "dmabuf-frames")))
'
modprobe -r vivid 2>/dev/null || true

step "unloading"
rmmod mmedge
echo "mmedge unloaded; /dev/mmedge0 $(test -e /dev/mmedge0 && echo still there || echo gone)"

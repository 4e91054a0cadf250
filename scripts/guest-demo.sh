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

step "mmctl chan set camera0 weight 400 (mmctl monitor, in the background, sees it)"
"$B/tools/mmctl" monitor -c 1 > /tmp/mmctl-monitor.log 2>&1 &
mpid=$!
sleep 0.5
"$B/tools/mmctl" chan set camera0 weight 400
wait "$mpid"
sed 's/^/  monitor: /' /tmp/mmctl-monitor.log
"$B/tools/mmctl" -j chan show camera0 | python3 -c \
	'import json,sys; c=json.load(sys.stdin)[0]; print("  camera0 weight now", c["weight"])'

step "mmctl stats -w 1 -c 2 after the change"
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
"$B/libhal/model/mmgguf" gen --shape tiny --tokenizer smolvlm --type f32 \
	-o /tmp/mmrun-demo/model.gguf > /dev/null
"$B/libhal/model/mmgguf" gen --vision tiny --audio tiny --type q8_0 \
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

step "unloading"
rmmod mmedge
echo "mmedge unloaded; /dev/mmedge0 $(test -e /dev/mmedge0 && echo still there || echo gone)"

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# inspect_test.sh PLUGIN: gst-inspect-1.0 on the built plugin, on the host
# (no device needed), with a registry of its own. Prints TAP.
#
#  - the plugin file loads and registers mmhalinfer, and gst-inspect-1.0
#    says nothing on stderr (no GStreamer or GLib warning, no failed load);
#  - the element has its three pads with the caps the docs give
#    (dma-buf and system-memory video in NV12/GRAY8/RGB, S16LE audio,
#    utf8 text) and every documented property;
#  - a missing model is a GStreamer error with the HAL's message, exit 1
#    (the element fails its NULL -> READY change before any device use).
set -u
PLUGIN=$(readlink -f "$1")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export GST_REGISTRY=$tmp/registry.bin
GST_PLUGIN_PATH=$(dirname "$PLUGIN")
export GST_PLUGIN_PATH
n=0 fails=0
check() {
	n=$((n + 1))
	if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fails=$((fails + 1)); fi
}
echo "1..5"
gst-inspect-1.0 "$PLUGIN" >"$tmp/plugin.out" 2>"$tmp/plugin.err"
rc=$?
[ $rc = 0 ] && [ ! -s "$tmp/plugin.err" ] && grep -q '^  mmhalinfer:' "$tmp/plugin.out"
check $? "gst-inspect-1.0 $(basename "$PLUGIN"): loads, registers mmhalinfer, stderr empty (rc $rc)"
sed 's/^/# stderr: /' "$tmp/plugin.err"
gst-inspect-1.0 mmhalinfer >"$tmp/el.out" 2>"$tmp/el.err"
rc=$?
[ $rc = 0 ] && [ ! -s "$tmp/el.err" ]
check $? "gst-inspect-1.0 mmhalinfer: clean (rc $rc)"
grep -q "SINK template: 'video_sink'" "$tmp/el.out" &&
	grep -q 'video/x-raw(memory:DMABuf)' "$tmp/el.out" &&
	grep -q "SINK template: 'audio_sink'" "$tmp/el.out" &&
	grep -q "SRC template: 'src'" "$tmp/el.out" &&
	grep -q 'format: utf8' "$tmp/el.out" &&
	grep -q 'format: S16LE' "$tmp/el.out" &&
	grep -q 'NV12.*GRAY8.*RGB' "$tmp/el.out"
check $? "pads: video_sink (DMABuf and system memory, NV12/GRAY8/RGB), audio_sink (S16LE), src (utf8 text)"
missing=""
for p in model mmproj mmproj-audio prompt ask-interval on-change scene-threshold \
	 tier tier-model threads device weight audio-weight n-predict listen-ms \
	 tiles bytes-copied dmabuf-frames answers; do
	grep -q "^  $p  *:" "$tmp/el.out" || missing="$missing $p"
done
[ -z "$missing" ]
check $? "properties: every documented one is there${missing:+ (missing:$missing)}"
timeout 120 gst-launch-1.0 videotestsrc num-buffers=1 ! mmhalinfer \
	model="$tmp/missing.gguf" mmproj="$tmp/missing-proj.gguf" ! fakesink \
	>"$tmp/launch.out" 2>&1
rc=$?
[ $rc = 1 ] || [ $rc = 255 ]; rcok=$?
[ $rcok = 0 ] && grep -q 'ERROR: from element .*mmhalinfer.*missing.gguf: cannot open' "$tmp/launch.out"
check $? "missing model: a GStreamer error with the HAL's message, gst-launch fails, no crash (rc $rc)"
grep -m 1 ERROR "$tmp/launch.out" | sed 's/^/# /'
[ $fails = 0 ]

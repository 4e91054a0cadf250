#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Runs inside the arm64 VM of QEMU's xlnx-zcu102 (scripts/arm64.sh check
# zcu102: busybox, cwd /opt/mmedge). The device tree gives the hub
# "dmas = <&gdma0 0>; dma-names = "memcpy";", a channel of ZynqMP's GDMA
# (ZDMA), which QEMU emulates and Linux drives with xilinx_zynqmp_dma. The
# script loads that driver and mmedge.ko, checks that the hub took the
# channel, runs the channel and direction kselftests on it (data pattern,
# stamps, fences, destroy while in flight), and then that the controller
# moved the segments: the hub's DMA segment count and the controller's
# interrupts grew, and more than one segment was in flight at once. Copy
# channels' segments go straight from the source buffer to the
# destination: the hub's direct segment count grows with the direction
# test (whose copy cases compare the bytes) and not with the capture-only
# channel test, whose sources the CPU generates into a bounce buffer.
# TAP in $RES/NAME.tap, as scripts/guest-lib.sh writes it.
#
# ZDMA_KO: xilinx_zynqmp_dma's module (default /opt/mmedge/zynqmp_dma.ko;
# modprobe when it is not there).
set -u
RES=/tmp/results
# shellcheck source=scripts/guest-lib.sh
. /opt/mmedge/guest-lib.sh
export MMEDGE_KO=${MMEDGE_KO:-/opt/mmedge/mmedge.ko}
ZDMA_KO=${ZDMA_KO:-/opt/mmedge/zynqmp_dma.ko}
T=/opt/mmedge/selftests
STATS=/sys/class/mmedge/mmedge0/stats

echo "guest: $(uname -r) $(uname -m), $(nproc) CPUs"

n=0
tap() {	# tap OK|FAIL DESCRIPTION
	n=$((n + 1))
	if [ "$1" = OK ]; then
		echo "ok $n - $2"
	else
		echo "not ok $n - $2"
	fi
}

if [ -f "$ZDMA_KO" ]; then
	insmod "$ZDMA_KO"
else
	modprobe zynqmp_dma
fi
load_mmedge
# vgem for the zero-copy test: the DMA engine writes a vgem buffer.
load_peers

# The hub's channel: the first dmaengine channel of the ZDMA controller.
chan=""
for c in /sys/class/dma/dma*chan*; do
	[ -d "$c" ] || continue
	case "$(readlink -f "$c/device")" in
	*fd500000*) chan=$c; break ;;
	esac
done
# irqs: the ZDMA controller's interrupts so far, on every CPU.
irqs() {
	awk '/zynqmp-dma/ { s = 0; for (i = 2; i <= NF; i++) if ($i ~ /^[0-9]+$/) s += $i; else break; t += s } END { print t + 0 }' /proc/interrupts
}
# segs: the segments the hub's DMA channel moved.
segs() {
	cat "$STATS/dma_segments" 2>/dev/null || echo 0
}
# direct: the segments it moved straight from a source buffer.
direct() {
	cat "$STATS/dma_direct_segments" 2>/dev/null || echo 0
}
# desc: the channel's dmaengine counters (as sysfs has them).
desc() {
	echo "memcpy_count $(cat "$chan/memcpy_count" 2>/dev/null), bytes_transferred $(cat "$chan/bytes_transferred" 2>/dev/null)"
}

{
	echo "# channel: ${chan:-none}"
	[ -n "$chan" ] && tap OK "ZDMA channel $(basename "$chan") registered with dmaengine" ||
		tap FAIL "ZDMA channel registered with dmaengine"
	name=$(dmesg | sed -n 's/.*mmedge mmedge: DMA engine: \([^,]*\).*/\1/p' | tail -n1)
	echo "# dmesg: DMA engine: $name"
	[ -n "$chan" ] && [ "$name" = "$(basename "$chan")" ] &&
		tap OK "the hub moves segments with $name" ||
		tap FAIL "the hub took the ZDMA channel ('$name')"
	[ "$(cat "$chan/in_use" 2>/dev/null)" = 1 ] &&
		tap OK "the channel is in use" || tap FAIL "the channel is in use"
	echo "1..$n"
} > "$RES/dmaeng_probe.tap"
echo 0 > "$RES/dmaeng_probe.rc"
grep -q "^not ok" "$RES/dmaeng_probe.tap" && echo 1 > "$RES/dmaeng_probe.rc"

# The engine thread on the second CPU, the controller's interrupt on the
# first (its default): the thread submits while the callback of the
# segment before has not run, as on a board where the transfer takes time.
eng=$(pgrep mmedge0-eng | head -n1)
[ -n "$eng" ] && [ "$(nproc)" -gt 1 ] && taskset -p 2 "$eng" > /dev/null

before_seg=$(segs)
before_direct=$(direct)
before_irq=$(irqs)
before_desc=$(desc)
# Streams of every source with the data pattern and stamps checked, fences,
# destroy and close while segments are in flight. The timing tests assume
# the soft engine's modelled bus, which a DMA controller does not follow.
export MMEDGE_SKIP_TIMING=1
run mmedge_chan_selftest "$T/mmedge_chan_test"
chan_seg=$(segs)
chan_direct=$(direct)
run mmedge_dir_selftest "$T/mmedge_dir_test"
dir_direct=$(direct)
after_seg=$(segs)
after_irq=$(irqs)
after_desc=$(desc)

n=0
{
	segs=$((after_seg - before_seg))
	irq=$((after_irq - before_irq))
	max=$(cat "$STATS/dma_inflight_max" 2>/dev/null || echo 0)
	echo "# hub: $segs segments by DMA; interrupts +$irq; most in flight $max"
	echo "# channel before: $before_desc; after: $after_desc"
	[ "$segs" -gt 0 ] && tap OK "the hub's segments went to the DMA engine ($segs)" ||
		tap FAIL "the hub's segments went to the DMA engine"
	# The channel's memcpy_count and bytes_transferred are only counted by
	# the old dma_async_memcpy helpers (gone from the kernel): 0 here.
	echo "# dmaengine's memcpy_count/bytes_transferred: counted by no caller since the async memcpy helpers went"
	[ "$irq" -gt 0 ] && tap OK "the controller's interrupts grew ($irq)" ||
		tap FAIL "the controller's interrupts grew"
	[ "$max" -gt 1 ] && tap OK "segments in flight together: $max" ||
		tap FAIL "more than one segment in flight (most: $max)"
	# Capture channels: the CPU generates the frame into a bounce.
	d=$((chan_direct - before_direct))
	s=$((chan_seg - before_seg))
	echo "# channel test (capture): $s segments by DMA, $d of them direct"
	[ "$s" -gt 0 ] && [ "$d" = 0 ] &&
		tap OK "capture segments go through the bounce ($s, none direct)" ||
		tap FAIL "capture segments go through the bounce ($s, $d direct)"
	# Copy channels: source buffer to destination, no bounce.
	d=$((dir_direct - chan_direct))
	s=$((after_seg - chan_seg))
	echo "# direction test (feed, copy): $s segments by DMA, $d of them direct"
	[ "$d" -gt 0 ] &&
		tap OK "copy segments moved straight from the source buffer ($d of $s)" ||
		tap FAIL "copy segments moved straight from the source buffer (0 of $s)"
	grep -E "^ok [0-9]+ dir\.copy_data" "$RES/mmedge_dir_selftest.tap" | grep -vq "# SKIP" &&
		tap OK "the copies' bytes match their sources (dir.copy_data)" ||
		tap FAIL "the copies' bytes match their sources (dir.copy_data)"
	errs=$(dmesg | grep -c "DMA engine: a segment took over")
	[ "$errs" = 0 ] && tap OK "no segment timed out" ||
		tap FAIL "segments timed out ($errs)"
	echo "1..$n"
} > "$RES/dmaeng_moved.tap"
echo 0 > "$RES/dmaeng_moved.rc"
grep -q "^not ok" "$RES/dmaeng_moved.tap" && echo 1 > "$RES/dmaeng_moved.rc"

unload_mmedge
exit 0

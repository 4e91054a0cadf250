#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Runs inside the VM (chrooted in the host's root, cwd = the project), from
# scripts/bench.sh: loads mmedge.ko, vgem (for a device attachment) and
# vivid (the V4L2 reference for the channel rows) and runs the benchmark.
# The table goes to the console and to /tmp/results/bench.txt.
set -u
RES=/tmp/results
KO=$PWD/kmod/mmedge.ko
BENCH=build/selftests/mmedge_bench

echo "guest: $(uname -r), $(nproc) CPUs"
if ! insmod "$KO"; then
	echo "guest-bench: insmod $KO failed" >&2
	exit 1
fi
modprobe vgem || echo "guest-bench: no vgem; the attachment rows use mmedge's own import"
modprobe vivid n_devs=1 || echo "guest-bench: no vivid; the V4L2 reference row is missing"

"$BENCH" "$@" 2>&1 | tee "$RES/bench.txt"
rc=${PIPESTATUS[0]}

# The arbiter's own cost per segment over every segment the bench moved,
# next to the time one 4 KiB segment takes on the modelled bus.
arb=$(cat /sys/class/mmedge/mmedge0/stats/arb_ns_per_segment)
echo "arbiter cost per segment: ${arb} ns (pick + charge, mean over the run)" |
	tee -a "$RES/bench.txt"

modprobe -r vivid vgem 2>/dev/null
rmmod mmedge || { echo "guest-bench: rmmod mmedge failed" >&2; rc=1; }
exit "$rc"

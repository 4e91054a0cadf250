#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Runs inside the VM (chrooted in the host's root, cwd = the project), from
# scripts/bench.sh: loads mmedge.ko and vgem (for a device attachment) and
# runs the buffer benchmark. The table goes to the console and to
# /tmp/results/bench.txt.
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

"$BENCH" "$@" 2>&1 | tee "$RES/bench.txt"
rc=${PIPESTATUS[0]}

modprobe -r vgem 2>/dev/null
rmmod mmedge || { echo "guest-bench: rmmod mmedge failed" >&2; rc=1; }
exit "$rc"

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Runs inside the VM (scripts/vm.sh run gst/tests/guest-gst.sh): loads
# mmedge.ko, vivid and snd-aloop and runs only the GStreamer plugin's
# test (gst_guest_test.sh), printing its TAP; scripts/guest-check.sh runs
# the same test in make check's vm stage.
set -u
RES=/tmp/results
# shellcheck source=scripts/guest-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/guest-lib.sh"
B=build
export MMEDGE_KO=${MMEDGE_KO:-$PWD/kmod/mmedge.ko}
load_mmedge
load_peers
run gst gst/tests/gst_guest_test.sh "$B/gst" "$B/libhal/mmgguf"
cat "$RES/gst.tap"
modprobe -r vivid vgem 2>/dev/null
unload_mmedge
exit "$(cat "$RES/gst.rc")"

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Runs inside the VM (chrooted in the host's root, cwd = the project).
# Loads mmedge.ko and runs every device test; each writes TAP to
# /tmp/results/NAME.tap and its exit code to NAME.rc, which scripts/vm.sh
# reads back on the host.
#
#   guest-check.sh [--selftests]
#
# --selftests: the kselftests and mmctl's CLI test only (no libhal, mmstream,
# netlink tool or mmrun tests), for the other kernels' stages.
# MMEDGE_KO: the module to load (default kmod/mmedge.ko, built for
# Debian's 6.1).
set -u
RES=/tmp/results
# shellcheck source=scripts/guest-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/guest-lib.sh"
B=build
export MMEDGE_KO=${MMEDGE_KO:-$PWD/kmod/mmedge.ko}
all=1
[ "${1:-}" = --selftests ] && all=0

# full NAME COMMAND [ARGS...]: a step of the full check only.
full() {
	[ "$all" = 0 ] || run "$@"
}

echo "guest: $(uname -r), $(nproc) CPUs, module $MMEDGE_KO"

load_mmedge

# Peers for the buffer tests: a DRM importer/exporter with fences, and a
# V4L2 capture device. The buffer test reloads vivid with allocators=1 for
# its dma-contig cases, and unloads and reloads mmedge (from MMEDGE_KO).
load_peers

full libhal_dev "$B/libhal/tests/mmhal_dev_test" /dev/mmedge0
# vivid's buffers imported into mmedge: copied into an mmedge buffer and
# fed to the sink through libhal, the copy encoded by a tiny model.
full libhal_vendor "$B/libhal/tests/mmhal_vendor_test" \
	--mmgguf "$B/libhal/mmgguf" /dev/mmedge0
run mmctl tools/tests/mmctl_cli_test.sh "$B/tools/mmctl"
full mmstream tools/tests/mmstream_cli_test.sh "$B/tools/mmstream"
full mmctl_nl tools/tests/mmctl_nl_test.sh "$B/tools/mmctl" "$B/tools/mmstream" "$B/tools/tests/mmhal-view"
# The tracepoints, through tracefs, trace-cmd and perf.
full trace tools/tests/mmedge_trace_test.sh "$B/tools/mmstream"
# The family against its YAML spec, through the kernel's YNL library.
if [ -n "${MMEDGE_YNL:-}" ]; then
	full ynl /usr/bin/python3 tools/tests/mmedge_ynl_test.py "$MMEDGE_YNL" \
		Documentation/netlink/specs/mmedge.yaml "$B/tools/mmctl" "$B/tools/mmstream"
else
	full ynl sh -c 'echo "not ok 1 - no YNL tree (scripts/ynl.sh failed on the host)"; exit 1'
fi
# The model asked about the camera and microphone, reading their buffers
# in place (tiny generated models; the library and the runtime built with
# ASan and UBSan), and mmrun's device mode.
full libhal_session "$B/libhal/tests/mmhal_session_test_san" \
	--mmgguf "$B/libhal/mmgguf" /dev/mmedge0
full mmrun tools/tests/mmrun_cli_test.sh "$B/tools/mmrun" "$B/libhal/mmgguf"
# The GStreamer plugin: vivid's dma-bufs and snd-aloop's capture through
# mmhalinfer (zero copy, PTS, leaks tracer, errors, flush, PLAYING -> NULL);
# about 15 answers of a tiny model, 11 min measured on a loaded 2-core host.
TEST_TIMEOUT=1800 full gst gst/tests/gst_guest_test.sh "$B/gst" "$B/libhal/mmgguf"
# Signed models through fs-verity: on the scratch disk (ext4 made with -O
# verity; 9p cannot hold verity files), the verity path against the copy.
if [ "$all" = 1 ]; then
	scratch=/tmp/mmscratch
	scratch_mount "$scratch" || scratch=""
	run verity tools/tests/verity_guest_test.sh "$B/libhal/mmgguf" \
		"$B/tools/tests/mmhal-load" "$B/tools/mmctl" "$scratch"
	[ -z "$scratch" ] || umount "$scratch"
fi

run mmedge_buf_selftest "$B/selftests/mmedge_buf_test"
# The hostile regression tests on the kernel boards run too (the debug
# stage runs them again under KASAN and lockdep, with the fuzzer).
run mmedge_hostile "$B/selftests/mmedge_hostile_test"
# Channels: streams, arbitration (sets the bus model, puts it back),
# fences, and zero copy into a vgem buffer.
run mmedge_chan_selftest "$B/selftests/mmedge_chan_test"
# Feed (memory to device) and copy (memory to memory) channels.
run mmedge_dir_selftest "$B/selftests/mmedge_dir_test"
# Sensor clocks: stamps against the documented mapping, XTS triples.
run mmedge_clock_selftest "$B/selftests/mmedge_clock_test"
modprobe -r vivid vgem 2>/dev/null

# Last: it unloads and reloads the module.
run mmedge_selftest "$B/selftests/mmedge_test"

unload_mmedge
exit 0

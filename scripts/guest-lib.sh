# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Sourced by the guest scripts (guest-check.sh, guest-debug.sh), inside
# the VM. Each step writes TAP to $RES/NAME.tap and its exit code to
# $RES/NAME.rc, which scripts/vm.sh reads back on the host. The script
# sets RES and MMEDGE_KO first.

# run NAME COMMAND [ARGS...]: one test program, its output as NAME.tap,
# killed after TEST_TIMEOUT seconds (default 900).
run() {
	local name=$1
	shift
	echo "guest: running $name"
	timeout -k 5 "${TEST_TIMEOUT:-900}" "$@" > "$RES/$name.tap" 2>&1
	echo $? > "$RES/$name.rc"
}

# insmod $MMEDGE_KO as the step "load"; the script ends if it fails.
load_mmedge() {
	if ! insmod "$MMEDGE_KO"; then
		echo "not ok 1 insmod mmedge.ko" > "$RES/load.tap"
		echo 1 > "$RES/load.rc"
		exit 1
	fi
	echo "ok 1 insmod mmedge.ko" > "$RES/load.tap"
	echo 0 > "$RES/load.rc"
}

# The tests' peers: vgem (a DRM importer and exporter with fences) and
# vivid (a V4L2 capture device). A missing one is said, not fatal: the
# tests that need it skip.
load_peers() {
	modprobe vgem || echo "guest: modprobe vgem failed"
	modprobe vivid n_devs=1 || echo "guest: modprobe vivid failed"
}

# rmmod mmedge as the step "unload": fails if the module is gone or busy.
unload_mmedge() {
	if grep -q "^mmedge " /proc/modules && rmmod mmedge; then
		echo "ok 1 rmmod mmedge" > "$RES/unload.tap"
		echo 0 > "$RES/unload.rc"
	else
		echo "not ok 1 rmmod mmedge" > "$RES/unload.tap"
		echo 1 > "$RES/unload.rc"
	fi
}

# scratch_mount DIR: mounts the VM's scratch disk (scripts/vm.sh: an empty
# ext4 with the verity feature, virtio-blk serial "mmscratch") on DIR.
# Returns non-zero, with the reason on stderr, where there is none.
scratch_mount() {
	local dir=$1 dev="" d

	modprobe virtio_blk 2>/dev/null
	modprobe crc32c_generic 2>/dev/null
	modprobe ext4 2>/dev/null
	for d in /sys/block/vd*; do
		[ -e "$d/serial" ] || continue
		if [ "$(cat "$d/serial")" = mmscratch ]; then
			dev=/dev/${d##*/}
			break
		fi
	done
	if [ -z "$dev" ]; then
		echo "guest: no scratch disk (virtio-blk serial mmscratch)" >&2
		return 1
	fi
	mkdir -p "$dir" && mount -t ext4 "$dev" "$dir"
}

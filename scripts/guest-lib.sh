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

# mini_root DIR BIN: mounts the scratch disk on DIR and puts there BIN
# and the libraries and loader ldd names, each at its path, and the
# guest's /dev, /proc and /sys (debugfs with it), bound.
mini_root() {
	local root=$1 bin=$2 f d

	scratch_mount "$root" || return 1
	for f in "$bin" $(ldd "$bin" | grep -o '/[^ ]*'); do
		mkdir -p "$root$(dirname "$f")" && cp -L "$f" "$root$f" ||
			return 1
	done
	for d in dev proc sys; do
		mkdir -p "$root/$d" && mount --rbind "/$d" "$root/$d" || return 1
	done
}

# failslab_fuzz FUZZER ARGS...: runs "FUZZER -F ARGS" (mmedge_fuzz) as
# the step mmedge_fuzz_failslab with slab allocations failing in its
# threads, chrooted in a mini_root on the scratch disk: failing
# allocations in the fuzzer's context would break a 9p root (its reads
# return EINVAL for good). Fault injection (debugfs failslab/) fails
# FAILSLAB_PROB (default 5) percent of the allocations from the caches
# marked for it (the debug VM's command line marks the kmalloc caches but
# kmalloc-64 with slub_debug=A, see scripts/vm.sh, so kmemleak's and
# debugobjects' own caches never fail), blocking ones included, only in
# tasks that set make-it-fail: the fuzzer's threads. The step failslab reports how many allocations
# failed (failslab's "times" countdown) and how many calls the fuzzer saw
# fail with ENOMEM; either being 0 fails it.
failslab_fuzz() {
	local fs=/sys/kernel/debug/failslab root=/tmp/failslab-root
	local tap=$RES/failslab.tap times=100000000 prob=${FAILSLAB_PROB:-5}
	local fuzz left injected enomem why=""

	fuzz=$(readlink -f "$1")
	shift
	if [ ! -d "$fs" ]; then
		why="no $fs"
	elif [ "$(cat /sys/kernel/slab/kmalloc-128/failslab 2>/dev/null)" != 1 ]; then
		why="the kmalloc caches are not marked for failslab (slub_debug=A)"
	elif ! mini_root "$root" "$fuzz"; then
		why="no root on the scratch disk"
	fi
	if [ -n "$why" ]; then
		printf '1..1\nnot ok 1 failslab fuzz: %s\n' "$why" > "$tap"
		echo 1 > "$RES/failslab.rc"
		return
	fi
	echo 0 > "$fs/verbose"
	echo Y > "$fs/task-filter"
	echo Y > "$fs/cache-filter"
	echo N > "$fs/ignore-gfp-wait"
	echo 1 > "$fs/interval"
	echo 0 > "$fs/space"
	echo "$times" > "$fs/times"
	echo "$prob" > "$fs/probability"
	run mmedge_fuzz_failslab chroot "$root" "$fuzz" -F "$@"
	echo 0 > "$fs/probability"
	left=$(cat "$fs/times")
	injected=$((times - left))
	umount -R "$root" || umount -R -l "$root"
	enomem=$(sed -n 's/^# fuzz: .* enomem=\([0-9]*\).*/\1/p' \
		"$RES/mmedge_fuzz_failslab.tap")
	{
		echo "1..2"
		if [ "$injected" -gt 0 ]; then
			echo "ok 1 failslab: $injected allocations failed in the fuzzer's threads ($prob%)"
		else
			echo "not ok 1 failslab: no allocation failed"
		fi
		if [ "${enomem:-0}" -gt 0 ]; then
			echo "ok 2 failslab: the fuzzer saw $enomem calls fail with ENOMEM"
		else
			echo "not ok 2 failslab: the fuzzer saw no ENOMEM"
		fi
	} > "$tap"
	! grep -q '^not ok' "$tap"
	echo $? > "$RES/failslab.rc"
}

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Boot Debian's kernel (the ABI of the installed headers) in QEMU and run a
# guest script against it:
#
#   scripts/vm.sh check   run the kselftests and the device tests
#   scripts/vm.sh demo    load the module and show what it does
#   scripts/vm.sh run SCRIPT [ARGS...]   any guest script (bash, host root)
#   scripts/vm.sh debug   the hostile kselftests in the debug kernel
#   scripts/vm.sh check-6.12   the kselftests in bookworm's 6.12 kernel
#
# VM_KERNEL=debug (implied by "debug") boots the debug kernel that
# scripts/debug-kernel.sh builds once per machine (KASAN, lockdep, DMA-API
# debug, debug objects, kmemleak, UBSAN) instead of Debian's.
# VM_KERNEL=6.12 (implied by "check-6.12") boots Debian 12's 6.12 kernel
# (the image scripts/deps.sh unpacks). For both, the module is built
# against that kernel from a copy of kmod/ (build/kmod-debug,
# build/kmod-6.12) and the guest loads it (MMEDGE_KO).
#
# The initramfs holds busybox and the kernel's modules (vgem, vivid,
# snd-aloop, virtio/9p, virtio-blk and ext4 and their dependencies, modprobe-able). The host's root is
# mounted read-only over virtio-9p and the guest script runs chrooted in
# it, so host-built binaries run with their libraries against the guest
# kernel. Results come back through a second, writable 9p share.
#
# Every boot also gets a scratch disk: a fresh, empty ext4 file system
# (4 KiB blocks, made with -O verity) of VM_SCRATCH_MB (default 512) MiB
# on a virtio-blk disk with serial "mmscratch". The guest mounts it with
# scratch_mount (scripts/guest-lib.sh): a block-backed file system for
# what 9p cannot hold (fs-verity files, a root for slab fault injection).
#
# check, check-6.12 and debug fail on any failing test, on a WARNING/BUG/
# Oops, a KASAN, UBSAN, lockdep, debug-objects or DMA-API report in the
# guest's dmesg, or on a timeout. They print "RESULT <stage> <passed>
# <failed> <skipped>" last (stage vm, vm-6.12, vm-debug).
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${MMEDGE_BUILD:-$ROOT/build}
VM="$OUT/vm"
TIMEOUT=${VM_TIMEOUT:-2400}
# shellcheck source=scripts/vm-lib.sh
. "$ROOT/scripts/vm-lib.sh"
MEM=${VM_MEM:-2048}

mode=${1:-check}
shift || true

"$ROOT/scripts/deps.sh" || exit 1
[ "$mode" = debug ] && VM_KERNEL=debug
[ "$mode" = check-6.12 ] && VM_KERNEL=6.12
# KBUILD: the kernel build tree the module is built against for this
# kernel, into KMOD (none for Debian's 6.1: kmod/mmedge.ko is that one).
KBUILD="" KMOD=""
case "${VM_KERNEL:-debian}" in
debug)
	KTREE=$("$ROOT/scripts/debug-kernel.sh") || exit 1
	KVER=$(cat "$KTREE/include/config/kernel.release")
	VMLINUZ="$KTREE/arch/x86/boot/bzImage"
	KROOT="$KTREE/modroot"
	VM="$OUT/vm-debug"
	KBUILD="$KTREE"
	KMOD="$OUT/kmod-debug"
	# KASAN's shadow and kmemleak's pool need room.
	MEM=${VM_MEM:-3072}
	# The PCI interrupt routing comes from the MP table: under KASAN and
	# TCG, ACPI's _PRT method runs past the interpreter's loop timeout.
	# ACPI still gives the second CPU, the HPET and the PM timer.
	# The kmalloc caches are marked for slab fault injection: only they
	# fail when guest-debug.sh turns failslab on for the fuzzer's
	# threads (kmemleak's and debugobjects' caches never do). Not
	# kmalloc-64: vmap()'s vm_struct comes from it, and 6.1's dma-buf
	# core WARNs whenever an exporter's vmap fails.
	KMALLOC_FAIL="kmalloc-8,kmalloc-16,kmalloc-32,kmalloc-96,kmalloc-128"
	KMALLOC_FAIL="$KMALLOC_FAIL,kmalloc-192,kmalloc-256,kmalloc-512"
	KMALLOC_FAIL="$KMALLOC_FAIL,kmalloc-1k,kmalloc-2k,kmalloc-4k,kmalloc-8k"
	APPEND_EXTRA="pci=noacpi slub_debug=A,$KMALLOC_FAIL"
	;;
6.12)
	K612=$("$ROOT/scripts/deps.sh" --k612) || exit 1
	KVER="$K612-amd64"
	KROOT="$OUT/kernel-$K612/root"
	VMLINUZ="$KROOT/boot/vmlinuz-$KVER"
	VM="$OUT/vm-6.12"
	KBUILD="/usr/src/linux-headers-$KVER"
	KMOD="$OUT/kmod-6.12"
	;;
debian)
	ABI=$("$ROOT/scripts/kabi.sh")
	KROOT="$OUT/kernel/root"
	KVER="$ABI-amd64"
	VMLINUZ="$KROOT/boot/vmlinuz-$KVER"
	;;
*) echo "vm: VM_KERNEL is debian, debug or 6.12" >&2; exit 2 ;;
esac
MODS="$KROOT/lib/modules/$KVER"

# Modules the guest needs, with all their dependencies (those built into
# the kernel are skipped).
WANT="virtio_pci 9pnet_virtio 9p vgem vivid virtio_blk crc32c_generic ext4"
# ALSA's loopback card: the GStreamer plugin's microphone test plays a
# clip into it and captures it back (gst/tests/gst_guest_test.sh). Debian's
# kernels have it; the debug kernel's minimal config does not, and its
# stage runs no GStreamer test.
[ "${VM_KERNEL:-debian}" = debug ] || WANT="$WANT snd-aloop"
# Of those, loaded by init before the host root can be mounted.
BOOT_MODS="virtio_pci 9pnet_virtio 9p"

build_initramfs() {
	local stamp="$VM/.initrd-$KVER" rootfs="$VM/rootfs" m
	[ -f "$stamp" ] && [ "$stamp" -nt "$0" ] && return 0
	echo "vm: building initramfs for $KVER" >&2
	[ -f "$MODS/modules.dep" ] || depmod -b "$KROOT" "$KVER"
	rm -rf "$rootfs"
	mkdir -p "$rootfs"/{bin,sbin,dev,proc,sys,tmp,host,etc} \
		 "$rootfs/lib/modules/$KVER"
	cp /bin/busybox "$rootfs/bin/busybox"

	# Closure of WANT over modules.dep, and the insmod order of BOOT_MODS.
	local files="" order="" line
	for m in $WANT; do
		line=$(grep -E "/${m//_/[_-]}\.ko(\.xz|\.zst)?:" "$MODS/modules.dep")
		if [ -z "$line" ] &&
		   grep -qE "/${m//_/[_-]}\.ko$" "$MODS/modules.builtin"; then
			continue
		fi
		if [ -z "$line" ]; then
			echo "vm: module $m not found in $MODS" >&2
			return 1
		fi
		files="$files ${line/:/}"
	done
	# Compressed modules (6.12's .ko.xz) go in decompressed: busybox's
	# insmod loads them as they are.
	for m in $files; do
		mkdir -p "$rootfs/lib/modules/$KVER/$(dirname "$m")"
		case "$m" in
		*.xz) xz -dc "$MODS/$m" > "$rootfs/lib/modules/$KVER/${m%.xz}" ;;
		*) cp "$MODS/$m" "$rootfs/lib/modules/$KVER/$m" ;;
		esac
	done
	cp "$MODS"/modules.{order,builtin,builtin.modinfo} \
		"$rootfs/lib/modules/$KVER/" 2>/dev/null
	depmod -b "$rootfs" "$KVER"
	for m in $BOOT_MODS; do
		line=$(grep -E "/${m//_/[_-]}\.ko:" "$rootfs/lib/modules/$KVER/modules.dep")
		[ -n "$line" ] || continue
		# modules.dep lists dependencies so that the last loads first.
		for d in $(echo "${line#*:}" | tr ' ' '\n' | tac) "${line%%:*}"; do
			case " $order " in *" $d "*) ;; *) order="$order $d";; esac
		done
	done

	cat > "$rootfs/init" <<INIT
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin:/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
for m in $order; do insmod /lib/modules/$KVER/\$m || echo "init: insmod \$m failed"; done
mount -t 9p -o trans=virtio,version=9p2000.L,ro hostroot /host || echo "init: no host root"
mkdir -p /tmp/results
mount -t 9p -o trans=virtio,version=9p2000.L results /tmp/results || echo "init: no results share"
# A project under /tmp would be hidden by the guest's /tmp: keep its view.
case "$ROOT" in /tmp/*) mkdir -p /proj && mount --bind "/host$ROOT" /proj ;; esac
for d in dev proc sys tmp; do mount --rbind /\$d /host/\$d; done
case "$ROOT" in /tmp/*) mkdir -p "/host$ROOT" && mount --bind /proj "/host$ROOT" ;; esac
# The host's modprobe finds this kernel's modules (a tmpfs gives the
# mount point, so the host needs no directory for this kernel).
mount -t tmpfs tmpfs /host/lib/modules
mkdir -p /host/lib/modules/$KVER
mount --bind /lib/modules/$KVER /host/lib/modules/$KVER
script=\$(cat /tmp/results/.script)
# .env: the guest script's environment (MMEDGE_KO), when there is one.
chroot /host /bin/bash -c "cd '$ROOT' && { [ ! -f /tmp/results/.env ] || . /tmp/results/.env; } && exec /bin/bash \$script" </dev/console >/dev/console 2>&1
echo \$? > /tmp/results/.rc
dmesg > /tmp/results/dmesg.txt
sync
# With -no-reboot QEMU exits on reset; a kernel without ACPI cannot power off.
reboot -f
INIT
	chmod +x "$rootfs/init"
	(cd "$rootfs" && find . | cpio -o -H newc --quiet | gzip -1) > "$VM/initrd.gz"
	touch "$stamp"
}

# KVM is probed, not assumed: /dev/kvm may exist where KVM does not work.
pick_accel() {
	local bootid cache r
	bootid=$(cat /proc/sys/kernel/random/boot_id 2>/dev/null || echo x)
	cache="$VM/.accel-$bootid"
	if [ -f "$cache" ]; then
		cat "$cache"
		return
	fi
	r=tcg
	if [ -w /dev/kvm ]; then
		mkdir -p "$VM/probe"
		printf '#!/bin/busybox sh\necho MMEDGE-KVM-OK\n/bin/busybox poweroff -f\n' > "$VM/probe/init"
		chmod +x "$VM/probe/init"
		mkdir -p "$VM/probe/bin" && cp /bin/busybox "$VM/probe/bin/"
		(cd "$VM/probe" && find . | cpio -o -H newc --quiet | gzip -1) > "$VM/probe.gz"
		if timeout 20 qemu-system-x86_64 -accel kvm -cpu host -m 256 \
			-nographic -no-reboot -kernel "$VMLINUZ" -initrd "$VM/probe.gz" \
			-append "console=ttyS0 quiet panic=-1" </dev/null 2>/dev/null |
			grep -q MMEDGE-KVM-OK; then
			r=kvm
		fi
	fi
	echo "$r" > "$cache"
	echo "$r"
}

mkdir -p "$VM"
build_initramfs || exit 1
accel=$(pick_accel)
cpu=max
[ "$accel" = kvm ] && cpu=host

stage=vm
case "$mode" in
check) script="$ROOT/scripts/guest-check.sh" ;;
check-6.12)
	stage=vm-6.12
	# The kselftests and mmctl's CLI test (guest-check.sh --selftests).
	script="$ROOT/scripts/guest-check.sh"
	set -- --selftests
	;;
debug) script="$ROOT/scripts/guest-debug.sh"; stage=vm-debug ;;
demo) script="$ROOT/scripts/guest-demo.sh" ;;
run) script="$1"; shift ;;
*) echo "usage: $0 check|check-6.12|debug|demo|run SCRIPT [ARGS]" >&2; exit 2 ;;
esac

if [ -n "$KBUILD" ]; then
	# The module, built against this kernel's tree from a copy of kmod/
	# (incremental: the copy keeps its own objects, never the source
	# tree's, which are built for Debian's 6.1).
	mkdir -p "$KMOD/src"
	nobuilt=(--exclude='*.o' --exclude='*.ko' --exclude='*.mod' --exclude='*.mod.c'
		 --exclude='.*.cmd' --exclude=modules.order --exclude=Module.symvers)
	rsync -a --delete "${nobuilt[@]}" "$ROOT/kmod/" "$KMOD/src/kmod/"
	rsync -a --delete "$ROOT/uapi/" "$KMOD/src/uapi/"
	echo "vm: building mmedge.ko against $KBUILD" >&2
	if ! make -s -C "$KBUILD" M="$KMOD/src/kmod" CONFIG_MMEDGE=m W=1 modules \
		> "$KMOD/build.log" 2>&1; then
		cat "$KMOD/build.log" >&2
		echo "RESULT $stage 0 1"
		exit 1
	fi
	cp "$KMOD/src/kmod/mmedge.ko" "$KMOD/mmedge.ko"
fi

RES="$VM/results-$mode"
[ "$mode" = run ] && RES="$VM/results-run-$$"
rm -rf "$RES"
mkdir -p "$RES"
printf '%q ' "$script" "$@" > "$RES/.script"
{
	[ -z "$KMOD" ] || printf 'export MMEDGE_KO=%q\n' "$KMOD/mmedge.ko"
	# The kernel's YNL library, for the netlink spec's test: copied into
	# the build tree, which the guest sees wherever the cache is (a
	# cache under /tmp is hidden by the guest's own /tmp).
	ynl=$("$ROOT/scripts/ynl.sh") &&
		rsync -a --delete "$ynl/" "$OUT/ynl/" &&
		printf 'export MMEDGE_YNL=%q\n' "$OUT/ynl"
} > "$RES/.env"

# The scratch disk: sparse, made anew for every boot.
SCRATCH="$RES.scratch.img"
rm -f "$SCRATCH"
if ! truncate -s "${VM_SCRATCH_MB:-512}M" "$SCRATCH" ||
   ! mke2fs -q -t ext4 -b 4096 -O verity -F "$SCRATCH"; then
	echo "vm: mke2fs of the scratch disk failed" >&2
	echo "RESULT $stage 0 1"
	exit 1
fi

console="$RES.console.log"
# created before QEMU starts, so the tail below never races its redirection
: > "$console"
echo "vm: booting $KVER ($accel, ${MEM}M) for $mode" >&2
start=$(date +%s)
timeout --foreground -k 10 "$TIMEOUT" qemu-system-x86_64 \
	-accel "$accel" -cpu "$cpu" -smp 2 -m "$MEM" \
	-nographic -no-reboot -monitor none -serial stdio \
	-kernel "$VMLINUZ" -initrd "$VM/initrd.gz" \
	-append "console=ttyS0 quiet panic=-1 oops=panic ${APPEND_EXTRA:-}" \
	-virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
	-virtfs local,path="$RES",mount_tag=results,security_model=none,multidevs=remap \
	-drive file="$SCRATCH",if=none,id=scratch,format=raw \
	-device virtio-blk-pci,drive=scratch,serial=mmscratch \
	</dev/null > "$console" 2>&1 &
qpid=$!
if [ "$stage" = vm ] && [ "$mode" != check ]; then
	tail -n +1 --pid=$qpid -f "$console" | grep -a -v -E '^(SeaBIOS|iPXE|Booting|$)' &
	tpid=$!
fi
wait $qpid
qrc=$?
# the live output ends before our own lines
[ -z "${tpid:-}" ] || wait "$tpid"
sleep 0.2
rm -f "$SCRATCH"
echo "vm: guest ran $(( $(date +%s) - start )) s" >&2

fail=0
if [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
	echo "vm: TIMEOUT after ${TIMEOUT}s; console: $console" >&2
	tail -n 30 "$console" >&2
	fail=1
fi
if [ ! -f "$RES/.rc" ]; then
	echo "vm: the guest did not finish (panic or crash); console: $console" >&2
	tail -n 40 "$console" >&2
	fail=1
fi
vm_dmesg_check "$RES/dmesg.txt" "$VM/dmesg-bad.txt" || fail=1

if [ "$stage" = vm ] && [ "$mode" != check ]; then
	rc=$(cat "$RES/.rc" 2>/dev/null || echo 1)
	[ "$fail" = 0 ] && [ "$rc" = 0 ] && exit 0
	exit 1
fi

# Count the TAP results of every test the guest ran.
vm_tally "$RES" "$stage" "$fail"

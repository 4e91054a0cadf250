#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# mmedge on arm64: Debian's arm64 kernel booted in qemu-system-aarch64
# (TCG) with a device tree that holds an "mmedge,hub" node. The module is
# cross-built against Debian's arm64 headers, the kselftests with
# aarch64-linux-gnu-gcc; the guest loads mmedge.ko without nr_virtual, so
# its instance comes from the DT node, and runs the kselftests.
#
#   scripts/arm64.sh check [MACHINE]        DT probe + kselftests (default virt)
#   scripts/arm64.sh run MACHINE SCRIPT [ARGS]  any guest script (busybox sh)
#   scripts/arm64.sh build [MACHINE]        downloads, builds, initramfs only
#
# Everything lands in $MMEDGE_BUILD/arm64 (default build/arm64) and is
# cached: Debian's arm64 packages are fetched with a private apt state
# (the host's dpkg architectures are left alone) into arm64/debs once.
#
# The guest has no root file system but its initramfs: busybox-static, the
# arm64 shared libraries the test binaries need, the kernel modules of
# WANT_MODS (with their dependencies), mmedge.ko and the kselftests under
# /opt/mmedge, and scripts/guest-lib.sh. The guest script's results
# (RES=/tmp/results: NAME.tap, NAME.rc, as scripts/guest-lib.sh writes
# them) and its dmesg come back over the serial console between marker
# lines, so a machine needs nothing but a console. The host counts them
# with scripts/vm-lib.sh, as scripts/vm.sh does, and fails on a
# WARNING/BUG/Oops in the guest's dmesg. "check" prints
# "RESULT vm-arm64[-MACHINE] <passed> <failed> <skipped>" last; "run"
# prints the guest's output and its TAP and fails with the script.
# ARM64_TIMING, MMEDGE_SKIP_TIMING and MMEDGE_HOSTILE_TESTS, when set,
# are passed to the guest (GUEST_ENV); ARM64_TIMING=1 runs the channel
# tests' timing bounds, which the check skips by default.
#
# Adding a machine M: define three functions below, beside the virt ones,
#   machine_M_qemu   the qemu-system-aarch64 arguments (-M, -cpu, -smp, -m,
#                    devices), without -kernel/-initrd/-append/-dtb;
#   machine_M_dtb    writes the device tree to "$1" (QEMU's own tree
#                    dumped with the same arguments, plus an overlay);
#   machine_M_guest  the guest script "check" runs (busybox sh);
# and optionally machine_M_console (default ttyAMA0), machine_M_mods
# (kernel modules beyond WANT_MODS, names) and machine_M_files (host files
# for the guest's /opt/mmedge, paths one a line; it may build them).
# Cross-builds, the initramfs and the result handling are shared:
# build_all, make_dtb, make_initramfs, boot.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${MMEDGE_BUILD:-$ROOT/build}
A64="$OUT/arm64"
TIMEOUT=${ARM64_TIMEOUT:-900}
CROSS=aarch64-linux-gnu-

# shellcheck source=scripts/vm-lib.sh
. "$ROOT/scripts/vm-lib.sh"

"$ROOT/scripts/deps.sh" || exit 1
ABI=$("$ROOT/scripts/kabi.sh") || exit 1
KVER="$ABI-arm64"
# Unpacked packages: the kernel image and headers, the libraries.
KROOT="$A64/kernel-$KVER"
KDIR="$KROOT/usr/src/linux-headers-$KVER"
MODS="$KROOT/lib/modules/$KVER"
SYSROOT="$A64/sysroot"
# The cross toolchain's C library (libc6-arm64-cross) runs the binaries.
CROSS_LIB=/usr/aarch64-linux-gnu/lib
# Variables passed from the host's environment to the guest script when
# set (the kselftests read them).
GUEST_ENV="ARM64_TIMING MMEDGE_SKIP_TIMING MMEDGE_HOSTILE_TESTS"
# Modules every guest gets: the kselftests' peers (DRM importer/exporter
# with fences, V4L2 capture).
WANT_MODS="vgem vivid"

log() { echo "arm64: $*" >&2; }

# ---- machines ---------------------------------------------------------

# QEMU's virt board: GICv2, PL011, no DMA controller of its own (its
# devices are virtio), so the hub runs on the soft engine.
machine_virt_qemu() {
	echo "-M virt -cpu cortex-a57 -smp 2 -m 1024"
}

machine_virt_dtb() {
	dump_dtb "$1.qemu" virt || return 1
	overlay_dtb "$1.qemu" "$ROOT/dts/mmedge-overlay.dts" "$1"
}

machine_virt_guest() {
	echo "$ROOT/scripts/guest-arm64.sh"
}

# QEMU's xlnx-zcu102 (ZynqMP): its GDMA (ZDMA) is a real dmaengine
# controller, so the hub gets "dmas" and the dmaengine back end runs.
# Debian's arm64 kernel has CONFIG_XILINX_ZYNQMP_DMA off: the driver is
# built out of tree from the kernel source (drivers/dma/xilinx/
# zynqmp_dma.c, with drivers/dma/dmaengine.h beside it) against the same
# headers as mmedge.ko, into arm64/zcu102/zdma/zynqmp_dma.ko, and the guest
# loads it from /opt/mmedge (ZDMA_KO).
machine_zcu102_qemu() {
	echo "-M xlnx-zcu102 -smp 2 -m 1024"
}

machine_zcu102_dtb() {
	dtc -q -I dts -O dtb -o "$1" "$ROOT/dts/qemu-zcu102-mmedge.dts"
}

machine_zcu102_console() {
	echo ttyPS0
}

machine_zcu102_guest() {
	echo "$ROOT/scripts/guest-dmaeng.sh"
}

# Files for /opt/mmedge (called by make_initramfs, printed one a line).
machine_zcu102_files() {
	local z="$A64/zcu102/zdma" s="$OUT/linux-source/drivers/dma"

	if [ ! -f "$z/zynqmp_dma.ko" ] || [ "$KDIR/.config" -nt "$z/zynqmp_dma.ko" ]; then
		"$ROOT/scripts/linux-src.sh" || return 1
		mkdir -p "$z/xilinx"
		cp "$s/dmaengine.h" "$z/" && cp "$s/xilinx/zynqmp_dma.c" "$z/xilinx/" &&
		echo 'obj-m += zynqmp_dma.o' > "$z/xilinx/Kbuild" &&
		make -s -C "$KDIR" M="$z/xilinx" ARCH=arm64 CROSS_COMPILE=$CROSS \
			modules >&2 && cp "$z/xilinx/zynqmp_dma.ko" "$z/" || return 1
	fi
	echo "$z/zynqmp_dma.ko"
}

# ---- downloads --------------------------------------------------------

# apt with a private state: arm64 lists and cache under arm64/apt, no
# dpkg status (nothing is installed), the host's configuration untouched.
apt_arm64() {
	local d="$A64/apt"

	mkdir -p "$d/lists/partial" "$d/cache/archives/partial"
	apt-get -o APT::Architecture=arm64 -o APT::Architectures::=arm64 \
		-o Dir::State::Lists="$d/lists" -o Dir::Cache="$d/cache" \
		-o Dir::State::status=/dev/null \
		-o APT::Sandbox::User=root "$@"
}

# fetch PKG...: each package's .deb in arm64/debs (downloaded once).
fetch() {
	local p need=""

	mkdir -p "$A64/debs"
	for p in "$@"; do
		ls "$A64/debs/${p}_"*.deb > /dev/null 2>&1 || need="$need $p"
	done
	[ -z "$need" ] && return 0
	log "downloading$need"
	# The lists are fetched the first time, and again when they no longer
	# have a package (a newer kernel ABI).
	# shellcheck disable=SC2086
	if [ -f "$A64/apt/.updated" ] &&
	   (cd "$A64/debs" && apt_arm64 download -qq $need) > /dev/null 2>&1; then
		return 0
	fi
	apt_arm64 update -qq || return 1
	touch "$A64/apt/.updated"
	# shellcheck disable=SC2086
	(cd "$A64/debs" && apt_arm64 download -qq $need) > /dev/null
}

# unpack DIR PKG...: the packages' files under DIR (once).
unpack() {
	local dir=$1 stamp p
	shift
	stamp="$dir/.done-$(echo "$*" | tr ' ' '+')"
	[ -f "$stamp" ] && return 0
	fetch "$@" || return 1
	rm -rf "$dir"
	mkdir -p "$dir"
	for p in "$@"; do
		dpkg-deb -x "$A64/debs/${p}_"*.deb "$dir" || return 1
	done
	touch "$stamp"
}

# The kernel image, modules and headers. The headers package's Makefile
# includes /usr/src/linux-headers-*-common and its scripts/ and tools/
# link to /usr/lib/linux-kbuild-6.1: the first is unpacked beside it and
# the include pointed there; the second is the host's (its binaries are
# x86, what a cross-build runs).
get_kernel() {
	local common="linux-headers-$ABI-common" kbuild

	unpack "$KROOT" "linux-image-$KVER" "linux-headers-$KVER" "$common" ||
		return 1
	[ -f "$KROOT/.fixed" ] && return 0
	sed -i "s|^include /usr/src/|include $KROOT/usr/src/|" "$KDIR/Makefile"
	kbuild=$(readlink "$KDIR/scripts")
	kbuild=${kbuild#../../lib/}
	kbuild=${kbuild%/scripts}
	if [ ! -d "/usr/lib/$kbuild" ]; then
		log "/usr/lib/$kbuild missing (linux-headers-amd64 brings it)"
		return 1
	fi
	ln -sfn "/usr/lib/$kbuild" "$KROOT/usr/lib/$kbuild"
	[ -f "$MODS/modules.dep" ] || depmod -b "$KROOT" "$KVER" || return 1
	touch "$KROOT/.fixed"
}

# busybox and the libraries the tests link (libdrm) with their headers.
get_sysroot() {
	unpack "$SYSROOT" busybox-static libdrm2 libdrm-dev libdrm-common
}

# ---- cross-builds -----------------------------------------------------

# mmedge.ko, W=1, from a copy of the sources: arm64/mod/mmedge.ko. A
# warning fails the build, as in scripts/lint.sh.
build_module() {
	local src="$A64/mod/src" logf="$A64/mod/build.log"

	mkdir -p "$src"
	# Files are compared by content and a changed one gets a new mtime
	# (no -t): objects never look newer than a source that changed, even
	# when the source's own mtime went back (a checkout, another tree).
	rsync -rlc --delete --exclude='*.o' --exclude='*.ko' --exclude='.*.cmd' \
		--exclude='*.mod*' --exclude=modules.order \
		"$ROOT/kmod/" "$src/kmod/"
	rsync -rlc --delete "$ROOT/uapi/" "$src/uapi/"
	cmp -s "$ROOT/Kbuild" "$src/Kbuild" || cp "$ROOT/Kbuild" "$src/Kbuild"
	if ! make -s -C "$KDIR" M="$src" ARCH=arm64 CROSS_COMPILE=$CROSS \
		CONFIG_MMEDGE=m W=1 modules > "$logf" 2>&1 ||
	   grep -q -E 'warning:|error:' "$logf"; then
		cat "$logf" >&2
		log "mmedge.ko does not build W=1 cleanly for arm64"
		return 1
	fi
	cp -p "$src/kmod/mmedge.ko" "$A64/mod/mmedge.ko"
}

# The kselftests: arm64/selftests. libdrm is the arm64 one from Debian.
build_selftests() {
	local lib="$SYSROOT/usr/lib/aarch64-linux-gnu"

	"$ROOT/scripts/linux-src.sh" || return 1
	make -s -C "$ROOT/selftests/mmedge" O="$A64/selftests" \
		KSFT="$OUT/linux-source/tools/testing/selftests" CC=${CROSS}gcc \
		DRM_CFLAGS="-I$SYSROOT/usr/include -I$SYSROOT/usr/include/libdrm" \
		DRM_LIBS="-L$lib -Wl,-rpath-link,$lib -ldrm" >&2
}

build_all() {
	get_kernel && get_sysroot && build_module && build_selftests
}

# ---- device tree ------------------------------------------------------

# dump_dtb FILE MACHINE: the tree QEMU builds for the machine's arguments.
dump_dtb() {
	local file=$1 m=$2 args

	args=$("machine_${m}_qemu")
	# shellcheck disable=SC2086
	set -- $args
	# -M NAME,... gains dumpdtb=; QEMU writes the tree and exits.
	local qargs=() a prev=""
	for a in "$@"; do
		if [ "$prev" = -M ]; then
			a="$a,dumpdtb=$file"
		fi
		qargs+=("$a")
		prev=$a
	done
	qemu-system-aarch64 "${qargs[@]}" -nographic -monitor none \
		-serial null > "$file.log" 2>&1
	[ -s "$file" ] || { cat "$file.log" >&2; return 1; }
}

# overlay_dtb BASE DTS OUT: BASE with the overlay source DTS applied.
overlay_dtb() {
	local base=$1 dts=$2 out=$3

	dtc -q -@ -I dts -O dtb -o "$out.dtbo" "$dts" || return 1
	fdtoverlay -i "$base" -o "$out" "$out.dtbo"
}

# make_dtb MACHINE: arm64/MACHINE/machine.dtb (remade when a source in
# dts/ or this script changes).
make_dtb() {
	local m=$1 dtb="$A64/$1/machine.dtb"

	mkdir -p "$A64/$m"
	if [ -f "$dtb" ] && [ "$dtb" -nt "$0" ] &&
	   [ -z "$(find "$ROOT/dts" -name '*.dts' -newer "$dtb")" ]; then
		return 0
	fi
	rm -f "$dtb"
	"machine_${m}_dtb" "$dtb" || { log "no device tree for $m"; return 1; }
	dtc -q -I dtb -O dts "$dtb" > "$dtb.dts"
}

# ---- initramfs --------------------------------------------------------

# libs_of FILE...: the shared libraries the ELF files need (transitively),
# as paths on the host, from the cross C library and the sysroot.
libs_of() {
	local todo="$*" seen=" " f n p dirs
	dirs="$CROSS_LIB $SYSROOT/usr/lib/aarch64-linux-gnu $SYSROOT/lib/aarch64-linux-gnu"
	while [ -n "$todo" ]; do
		# shellcheck disable=SC2086
		set -- $todo
		f=$1
		shift
		todo="$*"
		for n in $(${CROSS}readelf -d "$f" 2>/dev/null |
			   sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
			case "$seen" in *" $n "*) continue ;; esac
			seen="$seen$n "
			for p in $dirs; do
				if [ -e "$p/$n" ]; then
					echo "$p/$n"
					todo="$todo $p/$n"
					break
				fi
			done
		done
	done
}

# mod_files MODULE...: the modules' files with their dependencies
# (relative to $MODS), built-in ones skipped.
mod_files() {
	local m line
	for m in "$@"; do
		line=$(grep -E "/${m//_/[_-]}\.ko(\.xz|\.zst)?:" "$MODS/modules.dep")
		if [ -z "$line" ]; then
			grep -qE "/${m//_/[_-]}\.ko$" "$MODS/modules.builtin" &&
				continue
			log "module $m not found in $MODS"
			return 1
		fi
		echo "${line/:/}" | tr ' ' '\n'
	done | sort -u
}

# make_initramfs MACHINE: arm64/MACHINE/initrd.gz, rebuilt when an input
# is newer than it.
make_initramfs() {
	local m=$1 d="$A64/$1" r f mods extra="" files=""
	local img="$d/initrd.gz"

	r="$d/rootfs"
	if declare -F "machine_${m}_files" > /dev/null; then
		files=$("machine_${m}_files") || return 1
	fi
	# shellcheck disable=SC2086
	if [ -f "$img" ] && [ -z "$(find "$0" "$ROOT/scripts/guest-lib.sh" \
		"$A64/mod/mmedge.ko" "$A64/selftests" $files \
		-newer "$img" 2>/dev/null)" ]; then
		return 0
	fi
	rm -rf "$r"
	mkdir -p "$r"/{bin,sbin,dev,proc,sys,tmp,lib,etc,opt/mmedge/selftests} \
		"$r/lib/modules/$KVER"
	cp "$SYSROOT/bin/busybox" "$r/bin/busybox"

	# The test binaries and their libraries (the loader is found at
	# /lib/ld-linux-aarch64.so.1, the rest in /lib).
	for f in "$A64"/selftests/mmedge_*; do
		[ -x "$f" ] && [ -f "$f" ] && cp "$f" "$r/opt/mmedge/selftests/"
	done
	for f in $(libs_of "$r"/opt/mmedge/selftests/*); do
		cp -L "$f" "$r/lib/"
	done
	cp -L "$CROSS_LIB/ld-linux-aarch64.so.1" "$r/lib/"
	cp "$A64/mod/mmedge.ko" "$r/opt/mmedge/"
	cp "$ROOT/scripts/guest-lib.sh" "$r/opt/mmedge/"
	for f in $files; do
		cp "$f" "$r/opt/mmedge/" || return 1
	done

	declare -F "machine_${m}_mods" > /dev/null && extra=$("machine_${m}_mods")
	# shellcheck disable=SC2086
	mods=$(mod_files $WANT_MODS $extra) || return 1
	for f in $mods; do
		mkdir -p "$r/lib/modules/$KVER/$(dirname "$f")"
		cp "$MODS/$f" "$r/lib/modules/$KVER/$f"
	done
	cp "$MODS"/modules.{order,builtin,builtin.modinfo} \
		"$r/lib/modules/$KVER/" 2> /dev/null
	depmod -b "$r" "$KVER" || return 1

	# Results go out on the console between marker lines; the kernel's
	# own messages are kept off it (dmesg -n 1) and sent as dmesg.txt.
	cat > "$r/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin:/sbin LD_LIBRARY_PATH=/lib
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
dmesg -n 1
mkdir -p /tmp/results
cd /opt/mmedge
[ ! -f .env ] || . ./.env
script=$(cat /opt/mmedge/.script)
eval "sh $script" </dev/console >/dev/console 2>&1
echo $? > /tmp/results/.rc
dmesg > /tmp/results/dmesg.txt
for f in /tmp/results/* /tmp/results/.rc; do
	echo "@@MMEDGE-FILE $(basename "$f")"
	cat "$f"
	echo
	echo "@@MMEDGE-END"
done
echo "@@MMEDGE-DONE"
sync
poweroff -f
INIT
	chmod +x "$r/init"
	(cd "$r" && find . | cpio -o -H newc --quiet | gzip -1) > "$img.tmp" &&
		mv "$img.tmp" "$img"
}

# ---- boot -------------------------------------------------------------

# boot MACHINE RES SCRIPT [ARGS]: runs the guest script SCRIPT (a host
# file, copied in as /opt/mmedge/run.sh) with busybox sh in the guest,
# cwd /opt/mmedge, and splits the console into RES.
boot() {
	local m=$1 res=$2 d="$A64/$1" console args cons=ttyAMA0 start qrc
	local s="$A64/$1/run" v
	shift 2

	rm -rf "$res" "$s"
	mkdir -p "$res" "$s/opt/mmedge"
	cp "$1" "$s/opt/mmedge/run.sh"
	shift
	# The command line, as the guest's init evaluates it, in a second
	# archive after the initramfs (newc archives concatenate).
	printf '%q ' /opt/mmedge/run.sh "$@" > "$s/opt/mmedge/.script"
	# The host's settings of GUEST_ENV go in with it.
	for v in $GUEST_ENV; do
		[ -z "${!v+set}" ] || printf 'export %s=%q\n' "$v" "${!v}"
	done > "$s/opt/mmedge/.env"
	(cd "$s" && find . | cpio -o -H newc --quiet | gzip -1) > "$d/run.gz"
	cat "$d/initrd.gz" "$d/run.gz" > "$d/initrd-run.gz"

	declare -F "machine_${m}_console" > /dev/null && cons=$("machine_${m}_console")
	args=$("machine_${m}_qemu")
	console="$res.console.log"
	: > "$console"
	log "booting $KVER on $m (TCG)"
	start=$(date +%s)
	# shellcheck disable=SC2086
	timeout --foreground -k 10 "$TIMEOUT" qemu-system-aarch64 $args \
		-nographic -no-reboot -monitor none -serial stdio \
		-kernel "$KROOT/boot/vmlinuz-$KVER" -initrd "$d/initrd-run.gz" \
		-dtb "$d/machine.dtb" \
		-append "console=$cons quiet panic=-1 oops=panic" \
		< /dev/null > "$console" 2>&1
	qrc=$?
	log "guest ran $(( $(date +%s) - start )) s"
	if [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
		log "TIMEOUT after ${TIMEOUT}s; console: $console"
		tail -n 30 "$console" >&2
	fi
	# The files between the markers (the console adds \r).
	tr -d '\r' < "$console" | awk -v res="$res" '
		/^@@MMEDGE-FILE / { f = res "/" $2; printf "" > f; next }
		/^@@MMEDGE-END$/ { close(f); f = ""; next }
		f != "" { print >> f }'
	grep -q '^@@MMEDGE-DONE' "$console" || {
		log "the guest did not finish (panic or crash); console: $console"
		tail -n 40 "$console" >&2
		return 1
	}
}

# ---- main -------------------------------------------------------------

mode=${1:-check}
shift || true
case "$mode" in
check|build) m=${1:-virt} ;;
run) m=${1:?usage: $0 run MACHINE SCRIPT [ARGS]}; shift ;;
*) echo "usage: $0 check|build [MACHINE] | run MACHINE SCRIPT [ARGS]" >&2; exit 2 ;;
esac
declare -F "machine_${m}_qemu" > /dev/null || { log "unknown machine $m"; exit 2; }
stage=vm-arm64
[ "$m" = virt ] || stage="vm-arm64-$m"

t0=$(date +%s)
if ! build_all || ! make_dtb "$m" || ! make_initramfs "$m"; then
	[ "$mode" = build ] || echo "RESULT $stage 0 1"
	exit 1
fi
log "built in $(( $(date +%s) - t0 )) s"
[ "$mode" = build ] && exit 0

RES="$A64/$m/results-$mode"
fail=0
if [ "$mode" = run ]; then
	boot "$m" "$RES" "$@" || fail=1
else
	boot "$m" "$RES" "$("machine_${m}_guest")" || fail=1
fi
vm_dmesg_check "$RES/dmesg.txt" "$A64/$m/dmesg-bad.txt" || fail=1

if [ "$mode" = run ]; then
	# The guest's output, then the TAP it left.
	tr -d '\r' < "$RES.console.log" | sed '/^@@MMEDGE-FILE /,$d'
	cat "$RES"/*.tap 2> /dev/null
	[ "$fail" = 0 ] && [ "$(cat "$RES/.rc" 2>/dev/null)" = 0 ]
	exit
fi
vm_tally "$RES" "$stage" "$fail"

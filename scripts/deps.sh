#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Install what mmedge's build and tests need, with apt, and unpack the
# Debian kernel image that matches the installed headers into build/kernel
# and bookworm's 6.12 kernel image into build/kernel-$K612 (the VM stages
# boot them). Idempotent; silent when everything is already there.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${MMEDGE_BUILD:-$ROOT/build}
# Bookworm's newer kernel (its headers and image), tested beside 6.1.
K612=6.12.115+deb12
# "deps.sh --k612" prints it (for scripts/vm.sh) and does nothing else.
if [ "${1:-}" = --k612 ]; then
	echo "$K612"
	exit 0
fi

PKGS="linux-headers-amd64 linux-source-6.1 qemu-system-x86 busybox-static
      cpio kmod flex bison bc libelf-dev libssl-dev libdrm-dev
      libnl-genl-3-dev libnl-3-dev device-tree-compiler pkg-config
      python3 python3-docutils gcc make xz-utils clang libclang-rt-14-dev
      gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user rsync
      libfftw3-dev libsodium-dev libpng-dev linux-headers-$K612-amd64
      qemu-system-arm dt-schema python3-yaml python3-jsonschema
      trace-cmd linux-perf fsverity libfsverity-dev
      libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev gstreamer1.0-tools
      gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-alsa
      libasound2-dev libspeexdsp-dev alsa-utils abigail-tools"

missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing="$missing $p"
done

if [ -n "$missing" ]; then
	echo "deps: installing:$missing" >&2
	export DEBIAN_FRONTEND=noninteractive
	SUDO=""
	[ "$(id -u)" = 0 ] || SUDO=sudo
	$SUDO apt-get update -qq >/dev/null
	# shellcheck disable=SC2086
	$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

# The kernel ABI comes from the installed headers, never hard-coded.
abi=$("$ROOT/scripts/kabi.sh")

# unpack_image ABI DIR: linux-image-ABI-amd64 unpacked into DIR/root
# (once: DIR/.done-ABI says it is there).
unpack_image() {
	local abi=$1 kdir=$2
	[ -f "$kdir/.done-$abi" ] && return 0
	echo "deps: unpacking linux-image-$abi-amd64 into $kdir" >&2
	rm -rf "$kdir"
	mkdir -p "$kdir/deb"
	(cd "$kdir/deb" && apt-get download -qq -o APT::Sandbox::User=root "linux-image-$abi-amd64" >/dev/null)
	dpkg -x "$kdir"/deb/linux-image-*.deb "$kdir/root"
	rm -rf "$kdir/deb"
	touch "$kdir/.done-$abi"
}

unpack_image "$abi" "$OUT/kernel"
unpack_image "$K612" "$OUT/kernel-$K612"

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Runs inside the VM: load mmedge.ko and show what it offers.
set -e
B=build

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "kernel $(uname -r); loading mmedge.ko"
insmod kmod/mmedge.ko
dmesg | grep -i mmedge | sed 's/^/  dmesg: /'

step "the device"
ls -l /dev/mmedge*
echo "sysfs: /sys/class/mmedge/mmedge0 ->" \
	"$(readlink -f /sys/class/mmedge/mmedge0)"
for a in virtual api_version; do
	printf '  %s = %s\n' "$a" "$(cat /sys/class/mmedge/mmedge0/$a)"
done

step "mmctl caps"
"$B/tools/mmctl" caps
step "mmctl -j dev show"
"$B/tools/mmctl" -j dev show

step "mmstream -n 10: camera, microphone and IMU streaming, hardware timestamps"
"$B/tools/mmstream" -n 10

step "instance counters: /sys/class/mmedge/mmedge0/stats/"
for f in /sys/class/mmedge/mmedge0/stats/*; do
	[ -f "$f" ] && printf '  %-14s %s\n' "$(basename "$f")" "$(cat "$f")"
done

step "unloading"
rmmod mmedge
echo "mmedge unloaded; /dev/mmedge0 $(test -e /dev/mmedge0 && echo still there || echo gone)"

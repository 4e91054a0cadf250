#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# build-check.sh: the build stage of make check. Builds the userspace
# (libhal with its model runtime, the tools; not the kernel module, which
# builds with the kernel's compiler only) as packagers do, each from a
# clean tree in a scratch directory under $MMEDGE_BUILD/build-check (never
# the main build/libhal or build/tools), with make -j$(nproc):
#
#   clang-asan  CC=clang CFLAGS="-O1 -fsanitize=address,undefined":
#               libhal all (libmmhal.so, .a, mmhal.pc, device tests),
#               tools all (mmctl, mmstream, mmrun, mmgguf, mmhal-view)
#   gcc-O3      the same with CC=gcc CFLAGS=-O3
#   fuzz        the runtime's libFuzzer target (libhal/Makefile's
#               fuzz target, gguf_fuzz) with clang; skipped only without clang
#
# Every build keeps -Wall -Wextra -Werror, so a warning fails it. Each is
# one TAP case, counted by libhal/tests/tap-run.sh; the last line is
# "RESULT build <passed> <failed> <skipped>". Logs: build-check/<case>.log.
#
#   build-check.sh [CASE...]    default: all three
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${MMEDGE_BUILD:-$ROOT/build}
S=$OUT/build-check
J=$(nproc)

# one CASE: builds it from clean and prints its TAP
one() {
	local c=$1 d=$S/$1 log=$S/$1.log cc cflags
	rm -rf "$d"
	mkdir -p "$d"
	echo "1..1"
	case $c in
	clang-asan)
		cc=clang cflags="-O1 -fsanitize=address,undefined" ;;
	gcc-O3)
		cc=gcc cflags="-O3" ;;
	fuzz)
		if ! command -v clang >/dev/null 2>&1; then
			echo "ok 1 - fuzz # SKIP clang not found"
			return 0
		fi
		local f=$d/fuzz/gguf_fuzz
		if make -s -C "$ROOT/libhal" O="$d" FUZZ_CC=clang \
			"$f" > "$log" 2>&1 && [ -x "$f" ]; then
			echo "ok 1 - fuzz: gguf_fuzz built with clang (libFuzzer, ASan, UBSan)"
			return 0
		fi
		cat "$f.skip" "$f.log" "$log" 2>/dev/null | tail -30 | sed 's/^/# /'
		echo "not ok 1 - fuzz: gguf_fuzz with clang, see $log"
		return 1 ;;
	*)
		echo "not ok 1 - $c: no such case"
		return 1 ;;
	esac
	if ! command -v "$cc" >/dev/null 2>&1; then
		echo "ok 1 - $c # SKIP $cc not found"
		return 0
	fi
	if make -s -j"$J" -C "$ROOT/libhal" O="$d/libhal" CC="$cc" \
		CFLAGS="$cflags" all > "$log" 2>&1 &&
	   make -s -j"$J" -C "$ROOT/tools" O="$d/tools" LIBHAL_O="$d/libhal" \
		CC="$cc" CFLAGS="$cflags" all >> "$log" 2>&1; then
		echo "ok 1 - $c: CC=$cc CFLAGS=\"$cflags\" make -j$J libhal tools"
		return 0
	fi
	grep -E 'error|warning|\*\*\*' "$log" | head -30 | sed 's/^/# /'
	echo "not ok 1 - $c: CC=$cc CFLAGS=\"$cflags\" make -j$J libhal tools, see $log"
	return 1
}

if [ "${1:-}" = --one ]; then
	one "$2"
	exit
fi

mkdir -p "$S"
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(clang-asan gcc-O3 fuzz)
cmds=()
for c in "${cases[@]}"; do
	cmds+=("$0 --one $c")
done
exec "$ROOT/libhal/tests/tap-run.sh" -n build "${cmds[@]}"

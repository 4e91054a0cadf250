#!/bin/sh
# SPDX-License-Identifier: MIT
#
# symbols-check.sh LIB SYMFILE
#
# Fails unless the dynamic symbols LIB defines are exactly the names listed
# in SYMFILE (one per line; '#' comments and blank lines ignored), like
# libdrm's symbols-check. A symbol exported by accident is an ABI promise;
# a listed symbol that is missing is an ABI break. NM overrides nm.
set -eu

if [ $# -ne 2 ]; then
	echo "usage: $0 LIB SYMFILE" >&2
	exit 2
fi
lib=$1
symfile=$2
NM=${NM:-nm}
LC_ALL=C
export LC_ALL

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if ! "$NM" -D --defined-only --format=bsd "$lib" >"$tmp/nm"; then
	echo "symbols-check: $NM failed on $lib" >&2
	exit 1
fi

# Symbols the toolchain adds to every shared object on some platforms.
# Versioned names (NAME@@NODE) count as NAME; the version nodes themselves
# (absolute symbols named MMHAL_*) are not functions.
awk '{ print $NF }' "$tmp/nm" | sed 's/@.*//' |
	grep -Ev '^(__bss_start|__bss_start__|__bss_end__|__end__|_bss_end__|_edata|_end|_fini|_init|MMHAL_[A-Z_0-9.]*)$' |
	sort -u >"$tmp/exported" || true
grep -Ev '^[[:space:]]*(#|$)' "$symfile" | sort -u >"$tmp/expected" || true

if [ ! -s "$tmp/expected" ]; then
	echo "symbols-check: $symfile lists no symbols" >&2
	exit 1
fi

status=0
extra=$(comm -13 "$tmp/expected" "$tmp/exported")
missing=$(comm -23 "$tmp/expected" "$tmp/exported")
if [ -n "$extra" ]; then
	echo "symbols-check: exported by $lib but not listed in $symfile" \
		"(make it static, drop MMHAL_API, or list it):" >&2
	echo "$extra" | sed 's/^/  /' >&2
	status=1
fi
if [ -n "$missing" ]; then
	echo "symbols-check: listed in $symfile but not exported by $lib" \
		"(missing MMHAL_API?):" >&2
	echo "$missing" | sed 's/^/  /' >&2
	status=1
fi
exit $status

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Unpack Debian's linux-source tarball into build/linux-source once.
# The tree gives the kselftest harness, checkpatch.pl and the KUnit tool.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${MMEDGE_BUILD:-$ROOT/build}
shopt -s nullglob
tarballs=(/usr/src/linux-source-*.tar.xz)
tarball=""
[ ${#tarballs[@]} -eq 0 ] ||
	tarball=$(printf '%s\n' "${tarballs[@]}" | sort -V | tail -n1)
if [ -z "$tarball" ]; then
	echo "linux-src: no /usr/src/linux-source-*.tar.xz; run scripts/deps.sh" >&2
	exit 1
fi
stamp="$OUT/linux-source/.done-$(basename "$tarball")"
[ -f "$stamp" ] && exit 0
echo "linux-src: unpacking $tarball" >&2
rm -rf "$OUT/linux-source" "$OUT/linux-source.tmp"
mkdir -p "$OUT/linux-source.tmp"
tar -C "$OUT/linux-source.tmp" -xJf "$tarball" --strip-components=1
mv "$OUT/linux-source.tmp" "$OUT/linux-source"
touch "$stamp"

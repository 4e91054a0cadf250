#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Unpack Debian's linux-source tarball into build/linux-source once.
# The tree gives the kselftest harness, checkpatch.pl and the KUnit tool.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${MMEDGE_BUILD:-$ROOT/build}
# The source of the kernel the module is built for (deps.sh installs
# linux-source-6.1); by name, so that another linux-source package on the
# machine is never taken for it.
tarball=/usr/src/linux-source-6.1.tar.xz
if [ ! -f "$tarball" ]; then
	echo "linux-src: no $tarball; run scripts/deps.sh" >&2
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

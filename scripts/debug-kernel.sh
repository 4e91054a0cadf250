#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build (once per machine) the debug kernel that the hostile kselftest
# stage boots: Debian's linux-source, allnoconfig + scripts/debug-kernel.config
# (KASAN, lockdep, DMA-API debug, debug objects, kmemleak, failslab,
# UBSAN). The tree is built in place in a cache outside the clone, keyed by
# the linux-source package version and the hash of the config fragment and
# the build recipe's version, so every later run (any clone) reuses it. Out-of-tree
# modules build against that tree (make -C <tree> M=...).
#
# Prints the tree's path on stdout. MMEDGE_CACHE overrides the cache root
# (default /var/cache/mmedge). "debug-kernel.sh --configure-only" stops
# once the tree is unpacked and configured (every option of the fragment
# checked), without building: make check's lint stage runs it on an
# empty cache, the path a new machine takes.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${MMEDGE_CACHE:-/var/cache/mmedge}
FRAG="$ROOT/scripts/debug-kernel.config"
JOBS=${JOBS:-$(nproc)}
configure_only=0
case "${1:-}" in
"") ;;
--configure-only) configure_only=1 ;;
*) echo "usage: $0 [--configure-only]" >&2; exit 2 ;;
esac

# Globs, not ls: under pipefail an ls that matches nothing ends the
# script; a glob that matches nothing is empty.
shopt -s nullglob
# The 6.1 source deps.sh installs, by name: another linux-source package
# on the machine is never taken for it.
tarball=/usr/src/linux-source-6.1.tar.xz
if [ ! -f "$tarball" ]; then
	echo "debug-kernel: no $tarball; run scripts/deps.sh" >&2
	exit 1
fi
pkg=$(dpkg-query -S "$tarball" | cut -d: -f1)
ver=$(dpkg-query -W -f='${Version}' "$pkg")
# The key: the fragment and RECIPE, the version of the build steps below
# (raise it when they change what is built; comments and options that do
# not touch the tree leave the cache valid).
RECIPE=2
hash=$( { cat "$FRAG"; echo "recipe $RECIPE"; } | sha256sum | cut -c1-12)
tree="$CACHE/linux-$ver-$hash"

if [ -f "$tree/.mmedge-done" ]; then
	echo "$tree"
	exit 0
fi

mkdir -p "$CACHE"
# One builder at a time per key.
exec 9> "$CACHE/.lock-$ver-$hash"
flock 9
if [ -f "$tree/.mmedge-done" ]; then
	echo "$tree"
	exit 0
fi

echo "debug-kernel: building $pkg $ver ($hash) in $tree; first run only" >&2
s=$(date +%s)
rm -rf "$tree"
# A tree of the same source with another config is a head start: kbuild
# rebuilds only what the changed options touch.
prev=""
for d in "$CACHE/linux-$ver-"*/.mmedge-done; do
	prev=$(dirname "$d")
	break
done
if [ -n "$prev" ]; then
	echo "debug-kernel: starting from $prev" >&2
	cp -a "$prev" "$tree.tmp"
	rm -f "$tree.tmp/.mmedge-done"
	mv "$tree.tmp" "$tree"
else
	mkdir -p "$tree"
	tar -C "$tree" -xJf "$tarball" --strip-components=1
fi
cd "$tree"
make -s allnoconfig >&2
scripts/kconfig/merge_config.sh -m .config "$FRAG" >/dev/null
make -s olddefconfig >&2
# Every line of the fragment must have survived the dependency solver.
missing=0
while IFS= read -r line; do
	case "$line" in CONFIG_*) ;; *) continue ;; esac
	if ! grep -qxF "$line" .config; then
		echo "debug-kernel: $line did not take (dependencies?)" >&2
		missing=1
	fi
done < "$FRAG"
[ "$missing" = 0 ] || exit 1
if [ "$configure_only" = 1 ]; then
	echo "debug-kernel: $tree configured, not built (--configure-only)" >&2
	echo "$tree"
	exit 0
fi
nice -n 5 make -s -j"$JOBS" bzImage modules >&2
rm -rf modroot
mkdir -p modroot
make -s INSTALL_MOD_PATH="$tree/modroot" modules_install >&2
touch .mmedge-done
# Only one tree per source version is kept.
if [ -n "$prev" ]; then
	rm -rf "$prev"
fi
echo "debug-kernel: built in $(( $(date +%s) - s )) s" >&2
echo "$tree"

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make check-fresh: the whole make check as a new machine runs it, as far
# as this machine allows: a fresh clone of HEAD (committed work only) in a
# scratch directory, its own build/, and an empty MMEDGE_CACHE (so the
# debug kernel is built from Debian's source again). apt's packages stay
# as they are (removing them would change the machine itself); deps.sh
# installs what a new machine lacks. Prints the check's output, its wall
# time, and leaves the scratch directory only on failure.
#
#   scripts/check-fresh.sh [DIR]     DIR: where to clone (default: a mktemp -d)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$(mktemp -d /tmp/mmedge-fresh.XXXXXX)}
mkdir -p "$dir"
git clone -q "$ROOT" "$dir/src" || exit 1
mkdir -p "$dir/cache"
echo "check-fresh: clone of $(git -C "$ROOT" rev-parse --short HEAD) in $dir/src, empty cache $dir/cache" >&2
s=$(date +%s)
(cd "$dir/src" && env -u MMEDGE_BUILD MMEDGE_CACHE="$dir/cache" make check)
rc=$?
echo "check-fresh: make check exited $rc after $(( $(date +%s) - s )) s (fresh clone, empty cache)"
[ "$rc" = 0 ] && rm -rf "$dir"
exit "$rc"

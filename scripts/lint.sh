#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Static checks that count as tests: the module builds with W=1 without a
# warning, checkpatch --strict is clean on kmod/ and uapi/, and the
# device-tree bindings compile.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${MMEDGE_BUILD:-$ROOT/build}
cd "$ROOT"
scripts/linux-src.sh || exit 1
n=0 passed=0 failed=0

result() {
	n=$((n + 1))
	if [ "$1" = 0 ]; then
		echo "ok $n - $2"
		passed=$((passed + 1))
	else
		echo "not ok $n - $2"
		failed=$((failed + 1))
	fi
}

# Debian 12's own kernels: 6.1 (the target) and 6.12 (bookworm's newer
# kernel); kmod/mmedge_compat.h covers the API differences.
kdirs=${KDIR:-/usr/src/linux-headers-$(scripts/kabi.sh)-amd64
	/usr/src/linux-headers-6.12.115+deb12-amd64}
for kdir in $kdirs; do
	kver=${kdir#/usr/src/linux-headers-}
	w1="$OUT/w1-$kver"
	rm -rf "$w1" && mkdir -p "$w1"
	cp -r Kbuild kmod uapi "$w1/"
	rm -f "$w1"/kmod/*.o "$w1"/kmod/*.ko "$w1"/kmod/.*.cmd
	make -s -C "$kdir" M="$w1" CONFIG_MMEDGE=m W=1 modules > "$w1.log" 2>&1
	rc=$?
	if [ $rc = 0 ] && grep -q -E 'warning:|error:' "$w1.log"; then
		rc=1
	fi
	[ $rc = 0 ] || cat "$w1.log"
	result $rc "module builds with W=1 and no warning against $kver"
done

cp=$OUT/linux-source/scripts/checkpatch.pl
for f in kmod/*.c kmod/*.h uapi/linux/*.h; do
	case "$f" in *.mod.c) continue ;; esac
	# The compat header is where the version tests live, by design.
	ign=()
	[ "$f" = kmod/mmedge_compat.h ] && ign=(--ignore LINUX_VERSION_CODE)
	out=$("$cp" --strict --no-tree --terse --show-types "${ign[@]}" -f "$f" 2>&1 |
		grep -v -E '^total:|^$')
	rc=0
	[ -z "$out" ] || { echo "$out"; rc=1; }
	result $rc "checkpatch --strict $f"
done

# The uapi header stands alone in userspace (no include it relies on the
# user to make first), before or after the C library's <fcntl.h>.
for pre in "" "#include <fcntl.h>"; do
	printf '%s\n#include <linux/mmedge.h>\n#include <fcntl.h>\nunsigned long long x = MMEDGE_BUF_FD_FLAGS_VALID;\n' \
		"$pre" > "$OUT/uapi-alone.c"
	gcc -std=gnu11 -Wall -Wextra -Werror -pedantic -Iuapi -c "$OUT/uapi-alone.c" \
		-o "$OUT/uapi-alone.o"
	result $? "uapi header compiles alone in userspace${pre:+ after <fcntl.h>}"
done

for f in dts/*.dts; do
	[ -e "$f" ] || continue
	dtc -@ -q -I dts -O dtb -o "$OUT/$(basename "$f" .dts).dtbo" "$f"
	result $? "dtc $f"
done

echo "RESULT lint $passed $failed"
[ "$failed" = 0 ]

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Run mmedge's KUnit suites on UML with the kernel's own kunit tool, with
# KASAN, UBSAN and lockdep on (kmod/.kunitconfig).
# kmod/ is placed into the linux-source tree as drivers/misc/mmedge (with
# its Kconfig) and uapi/linux/mmedge.h as include/uapi/linux/mmedge.h.
# Prints "RESULT kunit <passed> <failed>" last; exits non-zero on failure.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${MMEDGE_BUILD:-$ROOT/build}
SRC="$OUT/linux-source"
JOBS=${JOBS:-$(nproc)}

"$ROOT/scripts/linux-src.sh" || exit 1

dst="$SRC/drivers/misc/mmedge"
mkdir -p "$dst"
# Copy only what changed, so incremental UML builds stay incremental.
for f in "$ROOT"/kmod/*.c "$ROOT"/kmod/*.h "$ROOT"/kmod/Kbuild \
	 "$ROOT"/kmod/Kconfig "$ROOT"/kmod/.kunitconfig; do
	cmp -s "$f" "$dst/$(basename "$f")" || cp "$f" "$dst/"
done
for f in "$dst"/*.c "$dst"/*.h; do
	[ -e "$ROOT/kmod/$(basename "$f")" ] || rm -f "$f"
done
cmp -s "$ROOT/uapi/linux/mmedge.h" "$SRC/include/uapi/linux/mmedge.h" ||
	cp "$ROOT/uapi/linux/mmedge.h" "$SRC/include/uapi/linux/mmedge.h"
grep -q 'drivers/misc/mmedge/Kconfig' "$SRC/drivers/misc/Kconfig" ||
	sed -i '$i source "drivers/misc/mmedge/Kconfig"' "$SRC/drivers/misc/Kconfig"
grep -q 'mmedge/' "$SRC/drivers/misc/Makefile" ||
	echo 'obj-y += mmedge/' >> "$SRC/drivers/misc/Makefile"

log="$OUT/kunit.log"
mkdir -p "$OUT/kunit"
( cd "$SRC" && python3 tools/testing/kunit/kunit.py run \
	--kunitconfig=drivers/misc/mmedge/.kunitconfig \
	--build_dir="$OUT/kunit" --jobs="$JOBS" --raw_output=all ) > "$log" 2>&1
rc=$?

# Raw KTAP: count the leaf results of the mmedge suites; a parameterised
# case's own line (it has a "Subtest:" header) is not a leaf.
awk '
	/^    # Subtest: / { in_suite = ($3 ~ /^mmedge/); next }
	!in_suite { next }
	/^        +# Subtest: / { parent[$3] = 1; next }
	/^    +(not )?ok [0-9]+ / {
		name = ($1 == "not") ? $4 : $3
		if (name in parent) next
		if ($1 == "not") f++; else if ($0 ~ /# SKIP/) k++; else p++
		print; next
	}
	END { printf "RESULT kunit %d %d %d\n", p, f, k }
' "$log" | tee "$OUT/kunit.result"
read -r _ _ passed failed _ < <(tail -n1 "$OUT/kunit.result")
# The UML kernel runs with KASAN, UBSAN and lockdep (.kunitconfig): a report
# outside any test case's verdict still fails the stage. UML's PCI-over-
# virtio, which kunit.py turns on for every UML build, warns at boot that
# no device ID is configured: that one is not ours.
if grep -E -n 'BUG: KASAN|UBSAN:|WARNING:|possible (circular|recursive) locking' \
	"$log" | grep -v 'arch/um/drivers/virt-pci.c' > "$OUT/kunit-splats.txt"; then
	echo "kunit: kernel reports in $log:" >&2
	head -n 20 "$OUT/kunit-splats.txt" >&2
	failed=$((failed + 1))
	echo "RESULT kunit $passed $failed"
	exit 1
fi
if [ "$rc" -ne 0 ] || [ "$failed" -ne 0 ] || [ "$passed" -eq 0 ]; then
	echo "kunit: failed (kunit.py exit $rc); log: $log" >&2
	tail -n 40 "$log" >&2
	[ "$failed" -eq 0 ] && echo "RESULT kunit $passed 1"
	exit 1
fi

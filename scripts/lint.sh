#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Static checks that count as tests: the module builds with W=1 without a
# warning, checkpatch --strict is clean on kmod/ and uapi/, and the
# device-tree binding, its example and the dts files pass dt-schema.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${MMEDGE_BUILD:-$ROOT/build}
cd "$ROOT"
scripts/linux-src.sh || exit 1
n=0 passed=0 failed=0 skipped=

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

# dt-schema, as the kernel's make dt_binding_check and dtbs_check run it:
# the binding against the meta-schemas, its example compiled and checked
# against the processed schema (dt-schema's core schemas and ours), and
# every dts with an mmedge,hub node. dt-schema 2022.08 reports problems on
# stderr with exit status 0, so any output that is not a "matched on
# schema(s)" report is a failure, and the mmedge,hub node must have matched
# the binding (a misspelt compatible would otherwise match nothing).
dt="$OUT/dt"
rm -rf "$dt" && mkdir -p "$dt"
dt_dtb() { # SRC DTB: preprocess like the kernel, compile with symbols
	cpp -nostdinc -undef -D__DTS__ -x assembler-with-cpp -I dts \
		-I "$OUT/linux-source/scripts/dtc/include-prefixes" \
		-o "$2.tmp" "$1" && dtc -q -@ -b 0 -I dts -O dtb -o "$2" "$2.tmp"
}
dt_validate() { # DTB [dt-validate options]
	local f=$1 out
	shift
	out=$(dt-validate -M "$@" -u "$ROOT/dts" -s "$dt/processed-schema.json" "$f" 2>&1) ||
		{ echo "$out"; return 1; }
	echo "$out" | awk '
		/: matched on schema\(s\)$/ { m = 1; next }
		/^\t/ { if (m) { if (/mmedge,hub\.yaml#$/) hub++ } else bad++; next }
		{ m = 0; bad++ }
		END { exit !(hub > 0 && bad == 0) }' && return 0
	echo "$out"
	echo "(no mmedge,hub node validated against dts/mmedge,hub.yaml, or errors above)"
	return 1
}

out=$(dt-doc-validate -u "$ROOT/dts" "$ROOT/dts/mmedge,hub.yaml" 2>&1)
rc=$?
[ -z "$out" ] || { echo "$out"; rc=1; }
result $rc "dt-doc-validate dts/mmedge,hub.yaml"

dt-mk-schema -j "$ROOT/dts" > "$dt/processed-schema.json" 2> "$dt/mk-schema.log"
rc=$?
[ ! -s "$dt/mk-schema.log" ] || { cat "$dt/mk-schema.log"; rc=1; }
if [ $rc = 0 ]; then
	dt-extract-example "$ROOT/dts/mmedge,hub.yaml" > "$dt/example.dts" &&
		dt_dtb "$dt/example.dts" "$dt/example.dtb" &&
		dt_validate "$dt/example.dtb"
	rc=$?
fi
result $rc "dt-validate the example of dts/mmedge,hub.yaml"

# Overlays that target only the root are applied to a minimal base and the
# merged tree is checked against all schemas. Full trees (QEMU machines
# dumped and extended) are checked against the binding only: the core
# schemas flag nodes QEMU generates that are not the hub's.
printf '/dts-v1/;\n/ {\n\tcompatible = "mmedge,base";\n\tmodel = "base";\n\t#address-cells = <2>;\n\t#size-cells = <2>;\n};\n' \
	> "$dt/base.dts"
dt_dtb "$dt/base.dts" "$dt/base.dtb" || result 1 "dtc minimal base tree"
for f in dts/*.dts; do
	grep -q '"mmedge,hub"' "$f" || continue
	b="$dt/$(basename "$f" .dts)"
	if ! grep -q '/plugin/' "$f"; then
		dt_dtb "$f" "$b.dtb" && dt_validate "$b.dtb" -l mmedge,hub.yaml
		result $? "dt-validate $f (mmedge,hub nodes)"
		continue
	fi
	dt_dtb "$f" "$b.dtbo" || { result 1 "dt-validate $f"; continue; }
	# Labels the overlay refers to (__fixups__) are a board's.
	root=1
	for frag in $(fdtget -l "$b.dtbo" /); do
		[ "$frag" = __symbols__ ] || [ "$frag" = __local_fixups__ ] ||
			[ "$(fdtget "$b.dtbo" "/$frag" target-path 2>/dev/null)" = / ] || root=0
	done
	if [ $root = 0 ]; then
		echo "ok $((n + 1)) - dt-validate $f # SKIP refers to a board's nodes"
		n=$((n + 1)) skipped=$((skipped + 1))
		continue
	fi
	fdtoverlay -i "$dt/base.dtb" -o "$b.dtb" "$b.dtbo" && dt_validate "$b.dtb"
	result $? "dt-validate $f applied to a minimal base"
done

# The netlink family's YAML spec, with the kernel's YNL library: valid
# against the genetlink-c schema, and every number it gives equal to the
# uapi header's (the VM stage checks it against the live family).
ynl_out="$OUT/ynl-spec.tap"
if ynl=$(scripts/ynl.sh); then
	/usr/bin/python3 tools/tests/mmedge_ynl_test.py --spec-only "$ynl" \
		Documentation/netlink/specs/mmedge.yaml uapi > "$ynl_out" 2>&1
	rc=$?
	while IFS= read -r line; do
		case "$line" in
		"ok "*) result 0 "ynl: ${line#ok * - }" ;;
		"not ok "*) result 1 "ynl: ${line#not ok * - }"; rc=0 ;;
		"#"*) echo "$line" ;;
		esac
	done < "$ynl_out"
	grep -q '^1\.\.' "$ynl_out" || { cat "$ynl_out"; rc=1; }
	[ $rc = 0 ] || result 1 "ynl: the spec check ran to its end"
else
	result 1 "scripts/ynl.sh: the kernel's YNL library"
fi

# Documentation/ABI: every sysfs attribute the driver creates has its
# entry, and every entry names an attribute the driver creates.
abi=Documentation/ABI/testing/sysfs-driver-mmedge
have=$(sed -n 's/^static DEVICE_ATTR_R[OW]*(\([a-z_0-9]*\));/\1/p' kmod/*.c | sort)
doc=$(sed -n 's|^What:.*/mmedgeN/\(stats/\)\{0,1\}\([a-z_0-9]*\)$|\2|p' "$abi" | sort)
diff=$(diff <(echo "$have") <(echo "$doc"))
[ -z "$diff" ] || echo "$diff" | sed 's/^/# driver < > ABI file: /'
result "$([ -n "$have" ] && [ -z "$diff" ]; echo $?)" "$abi lists every sysfs attribute of the driver"

# A new machine: the steps that run only where nothing is cached. The
# debug kernel's tree unpacked and configured in an empty cache (stopped
# before the build), and no script that lists files with ls inside a
# command substitution (under pipefail an ls that matches nothing is an
# error, which ended the debug kernel's build on every new machine).
fresh=$(mktemp -d "$OUT/fresh-cache.XXXXXX")
MMEDGE_CACHE=$fresh scripts/debug-kernel.sh --configure-only \
	> "$fresh.out" 2> "$fresh.log"
rc=$?
tree=$(tail -n 1 "$fresh.out" 2>/dev/null)
if [ $rc = 0 ] && { [ -z "$tree" ] || ! grep -qx 'CONFIG_KASAN=y' "$tree/.config"; }; then
	echo "# no configured tree with KASAN at '$tree'"
	rc=1
fi
[ $rc = 0 ] || sed 's/^/# /' "$fresh.log"
result $rc "debug-kernel.sh on an empty cache: tree unpacked and configured"
rm -rf "$fresh" "$fresh.out" "$fresh.log"
bad=$(grep -n -E '\$\((ls|find)[[:space:]][^)]*\|' scripts/*.sh libhal/tests/*.sh \
	libhal/tests/support/*.sh tools/tests/*.sh selftests/mmedge/*.sh 2>/dev/null)
[ -z "$bad" ] || echo "$bad" | sed 's/^/# pipe from ls in a substitution: /'
result "$([ -z "$bad" ]; echo $?)" "no script pipes ls or find inside \$(...)"

echo "RESULT lint $passed $failed${skipped:+ $skipped}"
[ "$failed" = 0 ]

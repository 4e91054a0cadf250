#!/bin/sh
# SPDX-License-Identifier: MIT
#
# abi-check.sh O SRCDIR
#
# The ABI of libmmhal's two shared libraries, as a distribution checks it
# (TAP, one case per line below, for each of libmmhal.so.N with mmhal.sym
# and version node MMHAL_<N>.0, and libmmhal-model.so.N with
# mmhal-model.sym and MMHAL_MODEL_<N>.0):
#   - the dynamic symbols are exactly those the list names
#     (symbols-check.sh), each with the library's version node;
#   - the SONAME is the library's name with the major version;
#   - libmmhal needs neither FFTW nor libsodium (the device layer links
#     no model code), libmmhal-model needs libmmhal;
#   - abidiff against the committed baseline (SRCDIR/abi/LIB.abi, made by
#     "make -C libhal abi-baseline" with abidw from Debian's
#     abigail-tools), added symbols aside: any change to an existing
#     function or type (a removed symbol, a changed layout) fails unless
#     the SONAME's major changed from the baseline's; a change that is
#     compatible by the size-versioning rule (a struct grown at its end)
#     is accepted by refreshing the baseline in the same commit, where
#     review sees it;
# and a device-only program (O/tests/mmhal_dev_test_shared, linked
# against libmmhal.so) needs neither FFTW nor libsodium.
set -u
o=$1
src=$2
n=0
fail=0

ok() {
	n=$((n + 1))
	if [ "$1" = 0 ]; then
		echo "ok $n - $2"
	else
		echo "not ok $n - $2"
		fail=1
	fi
}

needed() {
	readelf -d "$1" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'
}

major=$(sed -n 's/^#define MMHAL_VERSION_MAJOR[[:space:]]*\([0-9]*\).*/\1/p' \
	"$src/include/mmhal.h")

for lib in libmmhal libmmhal-model; do
	so=$o/$lib.so.$major
	case $lib in
	libmmhal) sym=$src/mmhal.sym node=MMHAL_$major.0 ;;
	*) sym=$src/mmhal-model.sym node=MMHAL_MODEL_$major.0 ;;
	esac
	msg=$("$src/tests/symbols-check.sh" "$so" "$sym" 2>&1)
	r=$?
	[ -z "$msg" ] || echo "$msg" | sed 's/^/# /'
	ok $r "$lib: exports exactly $(basename "$sym")"

	bad=$(nm -D --defined-only "$so" | awk '$2 ~ /^[TDBRVW]$/ { print $3 }' |
		grep -v "^$node\$" | grep -v "@@$node\$")
	[ -z "$bad" ] || echo "$bad" | sed 's/^/# without version node: /'
	[ -z "$bad" ]
	ok $? "$lib: every symbol is versioned $node"

	soname=$(readelf -d "$so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
	[ "$soname" = "$lib.so.$major" ]
	ok $? "$lib: SONAME $soname"

	need=$(needed "$so" | tr '\n' ' ')
	echo "# $lib NEEDED: $need"
	case $lib in
	libmmhal)
		! echo "$need" | grep -Eq 'fftw|sodium'
		ok $? "libmmhal needs neither FFTW nor libsodium" ;;
	*)
		echo "$need" | grep -q "libmmhal.so.$major"
		ok $? "libmmhal-model needs libmmhal.so.$major" ;;
	esac

	base=$src/abi/$lib.abi
	if ! command -v abidiff >/dev/null 2>&1; then
		n=$((n + 1))
		echo "ok $n - $lib: abidiff # SKIP abidiff not found (apt-get install abigail-tools)"
		continue
	fi
	if [ ! -f "$base" ]; then
		ok 1 "$lib: abidiff: no baseline $base (make -C libhal abi-baseline)"
		continue
	fi
	abidiff --no-show-locs --no-added-syms --headers-dir2 "$src/include" \
		"$base" "$so" > "$o/$lib.abidiff" 2>&1
	r=$?
	sed 's/^/# /' "$o/$lib.abidiff" | head -40
	old=$(sed -n 's/.*soname=.\([^"'"'"']*\).*/\1/p' "$base" | head -1)
	if [ $((r & 3)) -ne 0 ]; then
		ok 1 "$lib: abidiff failed (exit $r)"
	elif [ $((r & 12)) -ne 0 ] && [ "${old##*.so.}" = "$major" ]; then
		ok 1 "$lib: abidiff against $base: the ABI of existing symbols changed under the same SONAME $old (exit $r; if the change is compatible by the size-versioning rule, refresh the baseline in the same commit: make -C libhal abi-baseline)"
	elif [ $((r & 12)) -ne 0 ]; then
		ok 0 "$lib: abidiff: changed from $old, and the SONAME's major is now $major (refresh the baseline)"
	else
		ok 0 "$lib: abidiff against $base: no change to existing symbols (added ones allowed)"
	fi
done

prog=$o/tests/mmhal_dev_test_shared
need=$(needed "$prog" | tr '\n' ' ')
echo "# $(basename "$prog") NEEDED: $need"
echo "$need" | grep -q "libmmhal.so.$major" &&
	! echo "$need" | grep -Eq 'fftw|sodium|mmhal-model'
ok $? "a device-only program needs libmmhal.so.$major and neither FFTW, libsodium nor libmmhal-model"

echo "1..$n"
exit $fail

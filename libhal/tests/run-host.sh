#!/bin/sh
# SPDX-License-Identifier: MIT
#
# run-host.sh [-l LIB -S SYMFILE] [-n NAME] TEST...
#
# Runs TAP test binaries and, with -l, symbols-check.sh on LIB, then prints
# one summary line "RESULT <NAME> <passed> <failed> <skipped>" (NAME defaults to
# "host"). Every TAP test case counts once, symbols-check counts once, a
# skipped case is counted apart. A binary that dies before reporting all
# the cases of its plan has the missing ones counted as failed. Exits 1 if
# anything failed.
set -u

here=$(cd "$(dirname "$0")" && pwd)
name=host
lib=
symfile=
usage() {
	echo "usage: $0 [-l LIB -S SYMFILE] [-n NAME] TEST..." >&2
	exit 2
}
while getopts "l:S:n:" opt; do
	case $opt in
	l) lib=$OPTARG ;;
	S) symfile=$OPTARG ;;
	n) name=$OPTARG ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
if [ -n "$lib" ] && [ -z "$symfile" ]; then
	usage
fi

pass=0
fail=0
skip=0
out=$(mktemp)
trap 'rm -f "$out"' EXIT

for t in "$@"; do
	echo "# $(basename "$t")"
	"$t" >"$out" 2>&1
	rc=$?
	cat "$out"
	planned=$(sed -n 's/^1\.\.\([0-9][0-9]*\).*/\1/p' "$out" | head -n 1)
	ok=$(grep -c '^ok ' "$out")
	notok=$(grep -c '^not ok ' "$out")
	skipped=$(grep -c '^ok .*# SKIP' "$out")
	pass=$((pass + ok - skipped))
	fail=$((fail + notok))
	skip=$((skip + skipped))
	if [ -z "$planned" ]; then
		echo "# $(basename "$t"): no TAP plan (exit status $rc)"
		fail=$((fail + 1))
	elif [ $((ok + notok)) -lt "$planned" ]; then
		echo "# $(basename "$t"): $((planned - ok - notok)) of $planned" \
			"cases did not report (exit status $rc)"
		fail=$((fail + planned - ok - notok))
	elif [ "$rc" -ne 0 ] && [ "$notok" -eq 0 ]; then
		echo "# $(basename "$t"): all cases passed but exit status $rc"
		fail=$((fail + 1))
	fi
done

if [ -n "$lib" ]; then
	echo "# symbols-check"
	if "$here/symbols-check.sh" "$lib" "$symfile"; then
		echo "ok - symbols-check $(basename "$lib")"
		pass=$((pass + 1))
	else
		echo "not ok - symbols-check $(basename "$lib")"
		fail=$((fail + 1))
	fi
fi

echo "RESULT $name $pass $fail $skip"
[ "$fail" -eq 0 ]

#!/bin/sh
# SPDX-License-Identifier: MIT
#
# tap_run_test.sh - the counting rules of tap-run.sh on programs whose
# output is known: passes, failures, skips, a crash before the plan, cases
# of the plan that never reported, a non-zero exit with no failed case,
# an empty plan, a program's own RESULT line, and -F on files. Prints TAP.
set -u
here=$(cd "$(dirname "$0")" && pwd)
tr=$here/tap-run.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
failed=0

# case NAME WANT ARGS...: tap-run.sh ARGS' last line must be WANT
case_() {
	name=$1 want=$2
	shift 2
	n=$((n + 1))
	got=$("$tr" -n t "$@" 2>&1 | tail -n 1)
	if [ "$got" = "$want" ]; then
		echo "ok $n - $name"
	else
		echo "not ok $n - $name"
		echo "#   got '$got', want '$want'"
		failed=1
	fi
}

case_ "passes and a skip" "RESULT t 2 0 1" \
	"printf 'ok 1 - a\nok 2 - b\nok 3 - c # SKIP no c\n1..3\n'"
case_ "a failed case" "RESULT t 1 1 0" \
	"printf 'ok 1 - a\nnot ok 2 - b\n1..2\n'; exit 1"
case_ "a crash before the plan fails" "RESULT t 1 1 0" \
	"printf 'ok 1 - a\n'; kill -SEGV \$\$"
case_ "cases of a plan that did not report fail" "RESULT t 1 2 0" \
	"printf '1..3\nok 1 - a\n'; exit 1"
case_ "non-zero exit with every case passed fails" "RESULT t 1 1 0" \
	"printf 'ok 1 - a\n1..1\n'; exit 3"
case_ "an empty plan is one skip" "RESULT t 0 0 1" \
	"printf '1..0 # SKIP no device\n'"
case_ "two programs add up" "RESULT t 2 1 0" \
	"printf 'ok 1 - a\n1..1\n'" "printf 'ok 1 - a\nnot ok 2 - b\n1..2\n'"
case_ "no program at all fails" "RESULT t 0 1 0"
n=$((n + 1))
out=$("$tr" -n t "printf 'ok 1 - a\nRESULT t 99 0\n1..1\n'")
if [ "$(echo "$out" | grep -c '^RESULT ')" = 1 ] &&
   echo "$out" | grep -q '^# RESULT t 99 0$'; then
	echo "ok $n - a program's own RESULT line becomes a comment"
else
	echo "not ok $n - a program's own RESULT line becomes a comment"
	failed=1
fi
printf 'ok 1 x\n' > "$tmp/a.tap"; echo 0 > "$tmp/a.rc"
printf 'ok 1 x\n1..2\n' > "$tmp/b.tap"; echo 0 > "$tmp/b.rc"
printf 'ok 1 x\n' > "$tmp/c.tap"; echo 139 > "$tmp/c.rc"
: > "$tmp/d.tap"; echo 0 > "$tmp/d.rc"
case_ "-F: plan-less result file counts its lines" "RESULT t 1 0 0" -F "$tmp/a.tap"
case_ "-F: missing cases, crash, empty file" "RESULT t 2 3 0" \
	-F "$tmp/b.tap" "$tmp/c.tap" "$tmp/d.tap"
echo "1..$n"
exit $failed

#!/bin/sh
# SPDX-License-Identifier: MIT
#
# tap-run.sh [-n NAME] [-d LOGDIR] [-l LIB -S SYMFILE] CMD...
# tap-run.sh [-n NAME] -F TAPFILE...
#
# The one TAP counter of the tree: every test stage (libhal, tools, the
# model runtime, the VM stages) runs its tests through it, so a case is
# counted the same way everywhere.
#
# Each CMD is a shell command (a test binary, or a binary with arguments
# and variables, run by sh -c) that prints TAP: "ok N - ...",
# "not ok N - ...", "ok N - ... # SKIP why" and a plan "1..N" (first or
# last). With -F the arguments are TAP files a run left behind, each with
# its exit status in FILE.rc beside it (FILE without its .tap suffix);
# such a file may leave out the plan (the one-line results a VM's init
# writes), but an empty or missing file fails.
#
# Counting, per command: every "ok" line passes, every "not ok" fails,
# every "# SKIP" is skipped (not passed); no plan (a crash before the end,
# a command that is not a TAP producer) is one failure; cases the plan
# announces that did not report are failures; a non-zero exit status with
# no failed case is one failure. An empty plan ("1..0 # SKIP why") skips
# the whole command as one case.
#
# The output of each command is shown as it ran, except that a line
# starting with "RESULT " is shown as "# RESULT ...": the only RESULT line
# is this script's last, "RESULT <NAME> <passed> <failed> <skipped>",
# so that a caller can sum every RESULT line it sees. -d keeps each
# command's output in LOGDIR/<label>.log. With -l, symbols-check.sh on LIB
# against SYMFILE counts as one more case. Exits 1 if anything failed.
set -u

here=$(cd "$(dirname "$0")" && pwd)
name=tests
lib=
symfile=
logdir=
files=0
usage() {
	echo "usage: $0 [-n NAME] [-d LOGDIR] [-l LIB -S SYMFILE] CMD..." >&2
	echo "       $0 [-n NAME] -F TAPFILE..." >&2
	exit 2
}
while getopts "n:d:l:S:F" opt; do
	case $opt in
	n) name=$OPTARG ;;
	d) logdir=$OPTARG ;;
	l) lib=$OPTARG ;;
	S) symfile=$OPTARG ;;
	F) files=1 ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
if [ -n "$lib" ] && [ -z "$symfile" ]; then
	usage
fi
[ -n "$logdir" ] && mkdir -p "$logdir"

pass=0
fail=0
skip=0
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT

# tally LABEL OUTPUT RC
tally() {
	label=$1 out=$2 rc=$3
	sed 's/^RESULT /# RESULT /' "$out"
	planned=$(sed -n 's/^1\.\.\([0-9][0-9]*\).*/\1/p' "$out" | head -n 1)
	ok=$(grep -c '^ok ' "$out")
	notok=$(grep -c '^not ok ' "$out")
	skipped=$(grep -c '^ok .*# *SKIP' "$out")
	pass=$((pass + ok - skipped))
	fail=$((fail + notok))
	skip=$((skip + skipped))
	if [ -z "$planned" ] && [ "$files" = 1 ] && [ $((ok + notok)) -gt 0 ]; then
		if [ "$rc" -ne 0 ] && [ "$notok" -eq 0 ]; then
			echo "not ok - $label: every case passed but exit status $rc"
			fail=$((fail + 1))
		fi
	elif [ -z "$planned" ]; then
		echo "not ok - $label: no TAP plan (exit status $rc)"
		fail=$((fail + 1))
	elif [ "$planned" -eq 0 ] && [ $((ok + notok)) -eq 0 ]; then
		if [ "$rc" -ne 0 ]; then
			echo "not ok - $label: empty plan, exit status $rc"
			fail=$((fail + 1))
		else
			skip=$((skip + 1))
		fi
	elif [ $((ok + notok)) -lt "$planned" ]; then
		echo "not ok - $label: $((planned - ok - notok)) of $planned" \
			"cases did not report (exit status $rc)"
		fail=$((fail + planned - ok - notok))
	elif [ "$rc" -ne 0 ] && [ "$notok" -eq 0 ]; then
		echo "not ok - $label: every case passed but exit status $rc"
		fail=$((fail + 1))
	fi
}

for t in "$@"; do
	if [ "$files" = 1 ]; then
		label=$(basename "$t" .tap)
		rc=$(cat "${t%.tap}.rc" 2>/dev/null || echo missing)
		case $rc in ''|*[!0-9]*) rc=255 ;; esac
		if [ -f "$t" ]; then cp "$t" "$tmp"; else : > "$tmp"; fi
	else
		# the label: the first word that is not a VAR=value, its basename
		label=$(printf '%s\n' "$t" | tr ' ' '\n' | grep -v '=' | head -n 1)
		label=$(basename "${label:-$t}")
		echo "# $label"
		sh -c "$t" > "$tmp" 2>&1
		rc=$?
		[ -n "$logdir" ] && cp "$tmp" "$logdir/$label.log"
	fi
	tally "$label" "$tmp" "$rc"
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

if [ $((pass + fail + skip)) -eq 0 ]; then
	echo "not ok - $name: no test ran"
	fail=1
fi
echo "RESULT $name $pass $fail $skip"
[ "$fail" -eq 0 ]

#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
#	mmctl_cli_test.sh [MMCTL]
#
# Command-line tests of mmctl: exit codes, messages, where they go. Prints
# TAP; exits 1 if a test failed. MMCTL (argument or environment) names the
# binary. Tests that need /dev/mmedge0 (run them in the test VM, with
# mmedge.ko loaded) or its absence skip otherwise.
set -u

MMCTL=${1:-${MMCTL:-}}
if [ -z "$MMCTL" ]; then
	echo "usage: $0 MMCTL (or set MMCTL)" >&2
	exit 2
fi
DEV=/dev/mmedge0
NOHINT="mmctl: cannot open $DEV: No such file or directory (is mmedge.ko loaded? try: insmod mmedge.ko)"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
failed=0

# run ARGS...: runs mmctl; sets rc, stdout in $tmp/out, stderr in $tmp/err
run() {
	"$MMCTL" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
}

result() {	# result NAME: ok unless a check failed since the last result
	n=$((n + 1))
	if [ "$bad" = 0 ]; then
		echo "ok $n - $1"
	else
		echo "not ok $n - $1"
		sed 's/^/#   stdout: /' "$tmp/out"
		sed 's/^/#   stderr: /' "$tmp/err"
		failed=1
	fi
	bad=0
}

skip() {	# skip NAME REASON
	n=$((n + 1))
	echo "ok $n - $1 # SKIP $2"
}

fail() {
	echo "# $*"
	bad=1
}

want_rc() { [ "$rc" = "$1" ] || fail "exit status $rc, want $1"; }
out_has() { grep -q -- "$1" "$tmp/out" || fail "stdout lacks '$1'"; }
err_has() { grep -q -- "$1" "$tmp/err" || fail "stderr lacks '$1'"; }
out_empty() { [ ! -s "$tmp/out" ] || fail "stdout not empty"; }
err_empty() { [ ! -s "$tmp/err" ] || fail "stderr not empty"; }
bad=0

# --- needs no device ---

run -V
want_rc 0; err_empty; out_has '^mmctl [0-9.]* (libmmhal [0-9.]*)$'
result "-V prints versions"

run -h
want_rc 0; err_empty; out_has '^Usage: mmctl'; out_has 'caps show'
out_has 'dev show'; out_has 'Exit status'
result "-h prints usage to stdout"

run help
want_rc 0; out_has '^Usage: mmctl'
result "help prints usage"

run
want_rc 2; out_empty; err_has 'missing command'; err_has "Try 'mmctl -h'"
result "no command is a usage error"

run bogus
want_rc 2; out_empty; err_has "unknown object 'bogus'"
result "unknown object is a usage error"

run dev bogus
want_rc 2; out_empty; err_has "unknown command 'dev bogus'"
err_has "mmctl dev help"
result "unknown verb is a usage error"

run caps mmctl-test-no-such-dev/x
want_rc 1; err_has 'cannot open mmctl-test-no-such-dev/x'
result "a path after the object runs the default verb"

run -x caps
want_rc 2; err_has "unknown option '-x'"
result "unknown global option is a usage error"

run --bogus caps
want_rc 2; err_has "unknown option '--bogus'"
result "unknown long option is a usage error"

run caps -j
want_rc 2; err_has "'-j' goes before the object: mmctl -j caps"
result "global option after the command gets a hint"

run dev show -x
want_rc 2; err_has "unknown option '-x'"; err_has "mmctl dev show -h"
result "unknown command option is a usage error"

run -d
want_rc 2; err_has 'needs an argument'
result "-d without argument is a usage error"

run -p caps
want_rc 2; err_has 'with -j'
result "-p without -j is a usage error"

run caps -h
want_rc 0; err_empty; out_has '^Usage: mmctl \[OPTIONS\] caps'
out_has '^  show \[DEV\]'; out_has 'capabilities'
result "caps -h prints the object's help"

run caps show -h
want_rc 0; err_empty; out_has '^Usage: mmctl \[OPTIONS\] caps show'
result "caps show -h prints the command's help"

run dev help
want_rc 0; err_empty; out_has '^  show \[DEV\]'; out_has 'List mmedge devices'
result "dev help lists verbs"

run -d /dev/null caps show /dev/zero
want_rc 2; err_has 'more than one device'
result "two devices is a usage error"

run -d /dev/null caps
want_rc 1; out_empty; err_has 'cannot open /dev/null: not an mmedge device'
result "caps on /dev/null: not an mmedge device"

run -j caps show /dev/null
want_rc 1; out_empty; err_has 'not an mmedge device'
result "-j caps error goes to stderr only"

run -d mmctl-test-no-such-dev caps
want_rc 1
err_has 'cannot open /dev/mmctl-test-no-such-dev: No such file or directory (check the path'
result "device name expands to /dev/NAME"

run -V
if "$MMCTL" -V >/dev/full 2>"$tmp/err"; then
	fail "exit status 0 writing to /dev/full"
fi
err_has 'write error'
result "write errors are reported"

if command -v readelf >/dev/null 2>&1; then
	readelf -d "$MMCTL" >"$tmp/out" 2>"$tmp/err"
	if grep -q 'libmmhal' "$tmp/out"; then
		fail "mmctl needs libmmhal.so at run time"
	fi
	result "mmctl links libmmhal statically"
else
	skip "mmctl links libmmhal statically" "no readelf"
fi

# --- netlink commands: arguments checked before any request ---

run chan set camera0 weight 0
want_rc 2; out_empty; err_has 'chan set camera0: weight 0 out of range 1..10000'
err_has "Try 'mmctl chan set -h'"
result "chan set weight 0: the range, exit 2"

run chan set camera0 weight 10001
want_rc 2; err_has 'weight 10001 out of range 1..10000'
result "chan set weight 10001: the range, exit 2"

run chan set camera0 weight -1
want_rc 2; err_has "weight '-1' is not a number"
result "chan set weight -1: not a number, exit 2"

run chan set camera0 class fast
want_rc 2; err_has "unknown class 'fast' (latency, best-effort)"
result "chan set unknown class: exit 2"

run chan set camera0 cap 1.5X
want_rc 2; err_has "cap '1.5X' is not a rate"
result "chan set bad cap: exit 2"

run chan set camera0 class latency cap none
want_rc 2; err_has 'the latency class needs a rate cap'
result "chan set latency without a cap: exit 2"

run chan set camera0 speed 5
want_rc 2; err_has "unknown setting 'speed' (weight, class, cap)"
result "chan set unknown setting: exit 2"

run chan set camera0 weight
want_rc 2; err_has "'weight' needs a value"
result "chan set setting without value: exit 2"

run chan set camera0
want_rc 2; err_has 'nothing to set'
result "chan set without settings: exit 2"

run chan set
want_rc 2; err_has 'which channel'
result "chan set without a channel: exit 2"

run chan set CAM weight 5
want_rc 2; err_has "'CAM' is not a channel name"
result "chan set invalid channel name: exit 2"

run chan set camera0 weight 5 -j
want_rc 2; err_has "'-j' goes before the object"
result "chan set with -j after it gets a hint"

run chan show a b
want_rc 2; err_has 'more than one channel'
result "chan show with two names: exit 2"

run bus set 500k
want_rc 2; err_has 'bandwidth 500k out of range 1 MB/s..100 GB/s'
result "bus set below the range: exit 2"

run bus set 200G
want_rc 2; err_has 'bandwidth 200G out of range'
result "bus set above the range: exit 2"

run bus set fast
want_rc 2; err_has "'fast' is not a rate"
result "bus set not a rate: exit 2"

run bus set
want_rc 2; err_has 'give the BANDWIDTH'
result "bus set without a value: exit 2"

run stats -w 0
want_rc 2; err_has "\-w '0': want seconds in 0.1..3600"
result "stats -w 0: exit 2"

run stats -c 3
want_rc 2; err_has 'needs -w INTERVAL'
result "stats -c without -w: exit 2"

run stats -w
want_rc 2; err_has "'-w' needs a value"
result "stats -w without a value: exit 2"

run monitor -c 0
want_rc 2; err_has 'number of events >= 1'
result "monitor -c 0: exit 2"

run monitor all extra
want_rc 2; err_has "unexpected argument 'extra'"
result "monitor with a stray argument: exit 2"

run apply
want_rc 2; err_has 'give a FILE'; err_has "Try 'mmctl apply -h'"
result "apply without a file: exit 2"

run apply /nonexistent/profile
want_rc 1; err_has 'cannot open /nonexistent/profile'
result "apply of a missing file: exit 1"

printf '# nothing\n\n' >"$tmp/empty.conf"
run apply "$tmp/empty.conf"
want_rc 2; err_has 'empty.conf: no channels to set'
result "apply of an empty profile: exit 2"

printf 'camera0 weight 5\n\nmic0 weight 0 # bad\n' >"$tmp/bad.conf"
run apply "$tmp/bad.conf"
want_rc 2; err_has 'bad.conf:3: mic0: weight 0 out of range 1..10000'
result "apply names the bad line"

printf 'camera0 weight 5\ncamera0 cap 1M\n' >"$tmp/dup.conf"
run apply "$tmp/dup.conf"
want_rc 2; err_has 'dup.conf:2: camera0 is already set on line 1'
result "apply refuses a channel twice"

printf 'Camera weight 5\n' | "$MMCTL" apply - >"$tmp/out" 2>"$tmp/err"
rc=$?
want_rc 2; err_has "<stdin>:1: 'Camera' is not a channel name"
result "apply - reads stdin"

for c in "chan show" "chan set" "stats show" "monitor all" "bus show" \
	 "bus set" "apply"; do
	# shellcheck disable=SC2086
	run $c -h
	want_rc 0; err_empty; out_has "^Usage: mmctl \[OPTIONS\] $c"
	out_has '^Exit status: 0 success'; out_has '3 permission denied'
done
result "-h prints every command's help and the exit statuses"

run -h
want_rc 0; out_has 'chan set NAME \[weight N\]'; out_has 'stats show'
out_has 'monitor all'; out_has 'apply \[-n\] FILE'; out_has '3 permission denied'
result "-h lists the netlink commands"

if [ -n "${MAN_PAGE:-}" ] && [ -f "$MAN_PAGE" ]; then
	for s in NAME SYNOPSIS DESCRIPTION COMMANDS OPTIONS 'EXIT STATUS' EXAMPLES; do
		grep -q "^\.SH \"*$s" "$MAN_PAGE" || fail "man page lacks $s"
	done
	grep -q 'CAP_SYS_NICE' "$MAN_PAGE" || fail "man page lacks CAP_SYS_NICE"
	: >"$tmp/out"; : >"$tmp/err"
	result "the man page has its sections"
else
	skip "the man page has its sections" "MAN_PAGE not built"
fi

if [ -n "${COMPLETION:-}" ] && command -v bash >/dev/null 2>&1 &&
   [ -f /usr/share/bash-completion/bash_completion ]; then
	# complete WORDS...: the completions of the last word.
	complete_words() {
		bash -c '
. /usr/share/bash-completion/bash_completion
. "$0"
COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
_mmctl mmctl "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
printf "%s\n" "${COMPREPLY[@]}"' "$COMPLETION" "$@" >"$tmp/out" 2>"$tmp/err"
	}
	complete_words mmctl ""
	out_has '^chan$'; out_has '^stats$'; out_has '^apply$'
	complete_words mmctl chan ""
	out_has '^set$'; out_has '^show$'
	complete_words mmctl chan set camera0 ""
	out_has '^weight$'; out_has '^class$'; out_has '^cap$'
	complete_words mmctl chan set camera0 weight 5 ""
	out_has '^class$'; grep -q '^weight$' "$tmp/out" && fail "weight offered twice"
	complete_words mmctl chan set camera0 class ""
	out_has '^latency$'; out_has '^best-effort$'
	complete_words mmctl stats -
	out_has '^-w$'
	result "bash completion offers objects, verbs and settings"
else
	skip "bash completion offers objects, verbs and settings" "no bash-completion"
fi

# --- without a device ---

if [ -e "$DEV" ]; then
	skip "caps without device" "$DEV exists"
	skip "-j caps without device" "$DEV exists"
else
	run caps
	want_rc 1; out_empty
	[ "$(cat "$tmp/err")" = "$NOHINT" ] ||
		fail "stderr is not exactly: $NOHINT"
	result "caps without device: exit 1 and what to do"

	run -j caps
	want_rc 1; out_empty
	[ "$(cat "$tmp/err")" = "$NOHINT" ] ||
		fail "stderr is not exactly: $NOHINT"
	result "-j caps without device: error on stderr only"
fi

if ls /dev/mmedge[0-9]* >/dev/null 2>&1; then
	skip "dev show without devices" "an mmedge device exists"
else
	run dev show
	want_rc 1; out_empty; err_has 'no mmedge devices'; err_has 'insmod'
	result "dev show without devices: exit 1 and what to do"
fi

# --- with a device (the test VM) ---

if [ ! -e "$DEV" ]; then
	for t in "caps lists bits and ioctls by name" "-j caps is valid JSON" \
		 "dev show lists $DEV" "-j dev show is a valid JSON array"; do
		skip "$t" "no $DEV"
	done
else
	run caps
	want_rc 0; err_empty; out_has "^$DEV:"; out_has 'driver *mmedge'
	out_has 'ioctls.*QUERY_CAPS'
	result "caps lists bits and ioctls by name"

	run -j -p caps
	want_rc 0; err_empty
	if command -v python3 >/dev/null 2>&1; then
		python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["driver"]=="mmedge", d; assert "QUERY_CAPS" in d["ioctls"], d' \
			<"$tmp/out" 2>>"$tmp/err" || fail "not the JSON expected"
	else
		out_has '"driver": "mmedge"'
	fi
	result "-j caps is valid JSON"

	run dev show
	want_rc 0; out_has "^mmedge0: driver mmedge"
	result "dev show lists $DEV"

	run -j dev show
	want_rc 0
	if command -v python3 >/dev/null 2>&1; then
		python3 -c 'import json,sys; d=json.load(sys.stdin); assert isinstance(d, list) and d[0]["dev"]=="mmedge0", d' \
			<"$tmp/out" 2>>"$tmp/err" || fail "not the JSON expected"
	else
		out_has '^\[{"dev":"mmedge0"'
	fi
	result "-j dev show is a valid JSON array"
fi

echo "1..$n"
exit $failed

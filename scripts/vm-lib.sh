# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Sourced by the host side of the VM stages: the verdict on a guest's run
# from its results directory (NAME.tap and NAME.rc per test, dmesg.txt,
# as scripts/guest-lib.sh and the guest's init leave them).

# What in a guest's dmesg fails a run.
VM_DMESG_BAD='WARNING:|BUG:|Oops|general protection|Call Trace:|kernel BUG|UBSAN|KASAN|refcount_t:|list_(add|del) corruption|ODEBUG:|possible (circular|recursive) locking|inconsistent lock state|suspicious RCU usage|INFO: task .* blocked'

# vm_dmesg_check DMESG BADFILE: 1 (and the lines, on stderr and in
# BADFILE) when the kernel reported a problem; 0 otherwise, also when
# there is no DMESG (the caller fails a run that did not finish).
vm_dmesg_check() {
	local dmesg=$1 bad=$2

	[ -f "$dmesg" ] || return 0
	grep -E -n "$VM_DMESG_BAD" "$dmesg" > "$bad" || return 0
	echo "vm: kernel reported a problem (full log: $dmesg):" >&2
	head -n 40 "$bad" >&2
	return 1
}

# vm_tally RES STAGE FAIL: counts the TAP of every test in RES (NAME.tap
# and NAME.rc) with libhal/tests/tap-run.sh, the tree's one TAP counter
# (a test that exited non-zero without a failing line, or that stopped
# before its plan, fails), and prints "RESULT STAGE <passed> <failed>
# <skipped>"; FAIL=1 adds one failure (a timeout, a crash, a dmesg
# report). No test at all fails. Returns 0 when nothing failed.
vm_tally() {
	local res=$1 stage=$2 fail=$3 out r passed failed skipped
	local taps=()

	for tap in "$res"/*.tap; do
		[ -e "$tap" ] && taps+=("$tap")
	done
	out=$(mktemp)
	"$ROOT/libhal/tests/tap-run.sh" -n "$stage" -F "${taps[@]}" > "$out"
	r=$(tail -n 1 "$out")
	sed '$d' "$out"
	rm -f "$out"
	read -r _ _ passed failed skipped <<< "$r"
	[ "$fail" = 1 ] && failed=$((failed + 1))
	echo "RESULT $stage $passed $failed $skipped"
	[ "$failed" = 0 ]
}

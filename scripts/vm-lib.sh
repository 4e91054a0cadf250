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

# vm_tally RES STAGE FAIL: prints the TAP lines of every test in RES (the
# whole output of a failing one on stderr) and
# "RESULT STAGE <passed> <failed> <skipped>"; FAIL=1 adds one failure
# (a timeout, a crash, a dmesg report). A test that exited non-zero
# without a failing TAP line counts as failed; no test at all fails.
# Returns 0 when nothing failed.
vm_tally() {
	local res=$1 stage=$2 fail=$3 tap name p k f trc
	local passed=0 failed=0 skipped=0

	for tap in "$res"/*.tap; do
		[ -e "$tap" ] || continue
		name=$(basename "$tap" .tap)
		p=$(grep -E '^ok [0-9]+' "$tap" | grep -v -c '# SKIP')
		k=$(grep -E '^ok [0-9]+' "$tap" | grep -c '# SKIP')
		f=$(grep -c -E '^not ok [0-9]+' "$tap")
		trc=$(cat "$res/$name.rc" 2>/dev/null || echo missing)
		if [ "$trc" != 0 ] && [ "$f" = 0 ]; then
			echo "vm: $name exited $trc without a failing TAP line" >&2
			f=1
		fi
		if [ "$f" != 0 ]; then
			echo "vm: --- $name ---" >&2
			cat "$tap" >&2
		else
			grep -E '^(not )?ok [0-9]+' "$tap"
		fi
		passed=$((passed + p))
		skipped=$((skipped + k))
		failed=$((failed + f))
	done
	[ "$fail" = 1 ] && failed=$((failed + 1))
	if [ "$passed" = 0 ] && [ "$failed" = 0 ]; then
		echo "vm: no test ran" >&2
		failed=1
	fi
	echo "RESULT $stage $passed $failed $skipped"
	[ "$failed" = 0 ]
}

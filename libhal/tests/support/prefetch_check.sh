#!/bin/bash
# SPDX-License-Identifier: MIT
#
# prefetch_check.sh OBJ:FUNC... - each FUNC in the optimized object OBJ
# holds a prefetcht1, the hint of the decode kernels' in-loop prefetch,
# of the prefill W panels (MM_PF_HINT) and of the attention V rows. GCC
# deletes calls to a helper made only of prefetches when it has not
# inlined it yet (its pure-const pass sees no effect); that once left
# the Q4_0 decode loop and decode attention without prefetch, which only
# a cold benchmark shows. Prints TAP.
set -u
n=0 pass=0 fail=0
for spec in "$@"; do
	obj=${spec%%:*} fn=${spec#*:}
	n=$((n + 1))
	cnt=$(objdump -d --no-show-raw-insn "$obj" 2>/dev/null |
	      awk -v f="<$fn>:" '/^[0-9a-f]+ <.*>:$/ { in_f = ($2 == f) }
				 in_f && $2 == "prefetcht1" { c++ }
				 END { print c + 0 }')
	if [ "$cnt" -gt 0 ]; then
		echo "ok $n - $fn in $(basename "$obj"): $cnt prefetcht1"
		pass=$((pass + 1))
	else
		echo "not ok $n - $fn in $(basename "$obj"): no prefetcht1 (the compiler dropped its prefetch, or the function is gone)"
		fail=$((fail + 1))
	fi
done
echo "1..$n"
[ "$fail" -eq 0 ]

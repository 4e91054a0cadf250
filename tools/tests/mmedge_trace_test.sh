#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
#	mmedge_trace_test.sh MMSTREAM
#
# mmedge's tracepoints (kmod/mmedge_trace.h) in the test VM, mmedge.ko
# loaded: the five events are in tracefs; trace-cmd records them while
# mmstream streams three channels, and every frame mmstream dequeued is a
# mmedge_frame_done with its channel, sequence and hardware stamps,
# followed by its fence's mmedge_fence_signal, after its buffer's
# mmedge_qbuf and the segments that moved it; with the engine told to
# drop every third frame (inject_drop_every), mmedge_drop counts what
# the frames' own drop counters say; perf record sees the same events.
# Prints TAP; exits 1 if a case failed.
set -u

MMSTREAM=${1:-build/tools/mmstream}
T=/sys/kernel/tracing
P=/sys/module/mmedge/parameters
tmp=$(mktemp -d)
n=0
failed=0

cleanup() {
	[ -w "$P/inject_drop_every" ] && echo 0 > "$P/inject_drop_every"
	rm -rf "$tmp"
}
trap cleanup EXIT

ok() {	# ok STATUS DESCRIPTION
	n=$((n + 1))
	if [ "$1" = 0 ]; then
		echo "ok $n - $2"
	else
		echo "not ok $n - $2"
		failed=1
	fi
}

skip() {
	n=$((n + 1))
	echo "ok $n - $1 # SKIP $2"
}

bail() {
	echo "Bail out! $*"
	exit 1
}

grep -q "^mmedge " /proc/modules || bail "mmedge.ko is not loaded"
[ -d "$T/events" ] || mount -t tracefs nodev "$T" 2>/dev/null
[ -d "$T/events" ] || bail "no tracefs at $T"
command -v trace-cmd >/dev/null || bail "no trace-cmd"

for e in qbuf segment frame_done fence_signal drop; do
	f="$T/events/mmedge/mmedge_$e/format"
	[ -r "$f" ] && grep -q 'field:u32 chan' "$f"
	ok $? "tracefs has mmedge:mmedge_$e with its chan field"
done

# record NAME MMSTREAM-ARGS...: trace-cmd records the mmedge events while
# mmstream runs (-j: its frames as JSON lines in NAME.json); the report
# in NAME.txt.
record() {
	local name=$1
	shift
	trace-cmd record -q -e mmedge -o "$tmp/$name.dat" \
		"$MMSTREAM" -j "$@" > "$tmp/$name.json" 2> "$tmp/$name.err"
	trace-cmd report -i "$tmp/$name.dat" > "$tmp/$name.txt" 2>> "$tmp/$name.err"
}

# check NAME: the frames against the trace (a python3 program; prints
# its findings as "# " lines, exits non-zero on a mismatch).
check() {
	python3 - "$tmp/$1.json" "$tmp/$1.txt" "${2:-0}" <<'EOF'
import json, re, sys
frames = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
frames = [f for f in frames if f["type"] == "frame"]
want_drops = int(sys.argv[3])
ev = []
pat = re.compile(r"\s(mmedge_\w+):\s+(.*)$")
for line in open(sys.argv[2]):
    m = pat.search(line)
    if m:
        ev.append((m.group(1), dict(kv.split("=", 1) for kv in m.group(2).split())))
bad = []
def need(c, what):
    if not c:
        bad.append(what)
kinds = {}
for k, _ in ev:
    kinds[k] = kinds.get(k, 0) + 1
print("# events: " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
need(len(frames) >= 3, f"mmstream dequeued {len(frames)} frames")
done = {}
for i, (k, f) in enumerate(ev):
    if k == "mmedge_frame_done":
        done[(int(f["chan"]), int(f["seq"]))] = (i, f)
for fr in frames:
    key = (fr["chan_id"], fr["seq"])
    if key not in done:
        bad.append(f"frame {key} has no mmedge_frame_done")
        continue
    i, f = done[key]
    need(int(f["sof"]) == fr["sof_mono_ns"] and int(f["eof"]) == fr["eof_mono_ns"],
         f"frame {key}: trace stamps {f['sof']} {f['eof']}, frame {fr['sof_mono_ns']} {fr['eof_mono_ns']}")
    need(int(f["bytes"]) == fr["bytes"], f"frame {key}: bytes differ")
    nxt = ev[i + 1] if i + 1 < len(ev) else None
    need(nxt and nxt[0] == "mmedge_fence_signal" and nxt[1]["chan"] == f["chan"],
         f"frame {key}: next event {nxt} is not its fence_signal")
    cookie = f["cookie"]
    need(any(k == "mmedge_qbuf" and g["cookie"] == cookie and g["chan"] == f["chan"]
             for k, g in ev[:i]), f"frame {key}: no mmedge_qbuf of cookie {cookie} before it")
    need(any(k == "mmedge_segment" and g["chan"] == f["chan"] for k, g in ev[:i]),
         f"frame {key}: no segment of its channel before it")
if want_drops:
    last = {}
    for fr in frames:
        last[fr["chan_id"]] = max(last.get(fr["chan_id"], 0), fr["dropped"])
    for chan, d in last.items():
        n = sum(int(g["n"]) for k, g in ev if k == "mmedge_drop" and int(g["chan"]) == chan)
        need(n >= d and d > 0, f"chan {chan}: frames report {d} dropped, mmedge_drop events {n}")
for b in bad[:20]:
    print("# " + b)
sys.exit(1 if bad else 0)
EOF
}

record plain -n 10
ok $? "trace-cmd records while mmstream streams three channels"
check plain
ok $? "every dequeued frame is a frame_done with its seq and stamps, after its qbuf and segments, then its fence_signal"

if [ -w "$P/inject_drop_every" ]; then
	echo 3 > "$P/inject_drop_every"
	record drops -n 10
	rc=$?
	echo 0 > "$P/inject_drop_every"
	ok $rc "trace-cmd records with every third frame dropped"
	check drops 1
	ok $? "mmedge_drop counts at least the drops the frames report"
else
	skip "mmedge_drop against the frames' drop counters" "no inject_drop_every"
fi

# perf: the same events through perf_event_open.
if perf record -q -e 'mmedge:mmedge_frame_done' -a -o "$tmp/perf.data" \
	"$MMSTREAM" -n 5 > /dev/null 2> "$tmp/perf.err"; then
	c=$(perf script -i "$tmp/perf.data" 2>/dev/null | grep -c 'mmedge:mmedge_frame_done')
	echo "# perf script: $c mmedge_frame_done events"
	[ "${c:-0}" -ge 15 ]
	ok $? "perf record -e mmedge:mmedge_frame_done sees every frame of 3 x 5"
else
	sed 's/^/# /' "$tmp/perf.err" | head -5
	skip "perf record -e mmedge:mmedge_frame_done" "perf does not run on this kernel"
fi

echo "1..$n"
exit $failed

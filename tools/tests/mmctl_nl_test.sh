#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
#	mmctl_nl_test.sh [MMCTL [MMSTREAM [MMHAL_VIEW]]]
#
# mmctl against the running module (the test VM, mmedge.ko loaded): every
# command over generic netlink while mmstream streams three channels in
# the background; JSON parsed with python3 and checked against the ioctl
# view (mmhal-view: MMEDGE_IOC_CHAN_STATS and _BUS_CONFIG through
# libmmhal); monitor sees another process's change with its pid; bad
# arguments get the documented message and exit code; without privileges
# raises get EPERM (exit 3); a profile with one bad entry changes nothing.
# Prints TAP; exits 1 if a test failed.
set -u

B=build/tools
MMCTL=${1:-${MMCTL:-$B/mmctl}}
MMSTREAM=${2:-${MMSTREAM:-$B/mmstream}}
MMHAL_VIEW=${3:-${MMHAL_VIEW:-$B/tests/mmhal-view}}
DEV=/dev/mmedge0

tmp=$(mktemp -d)
chmod 755 "$tmp"
stream_pid=
cleanup() {
	[ -n "$stream_pid" ] && kill -TERM "$stream_pid" 2>/dev/null
	[ -n "$stream_pid" ] && wait "$stream_pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
n=0
failed=0
bad=0

run() {	# run ARGS...: mmctl; rc, $tmp/out, $tmp/err
	timeout 30 "$MMCTL" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
}

# As nobody, with no capabilities.
run_nobody() {
	timeout 30 setpriv --reuid=65534 --regid=65534 --clear-groups \
		--inh-caps=-all "$MMCTL" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
}

# As root with every capability but CAP_SYS_NICE.
run_nonice() {
	timeout 30 setpriv --inh-caps=-sys_nice --bounding-set=-sys_nice \
		"$MMCTL" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
}

result() {
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

fail() {
	echo "# $*"
	bad=1
}

want_rc() { [ "$rc" = "$1" ] || fail "exit status $rc, want $1"; }
out_has() { grep -q -- "$1" "$tmp/out" || fail "stdout lacks '$1'"; }
err_has() { grep -q -- "$1" "$tmp/err" || fail "stderr lacks '$1'"; }
out_empty() { [ ! -s "$tmp/out" ] || fail "stdout not empty"; }
err_empty() { [ ! -s "$tmp/err" ] || fail "stderr not empty"; }

# py CODE [FILE]: runs CODE with d = the JSON of FILE (default stdout of
# the last run); a failed assert fails the test.
py() {
	local f=${2:-$tmp/out}
	python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
$1
" "$f" 2>>"$tmp/err" || fail "python check failed: $1"
}

# weight NAME: the channel's weight over netlink.
weight() {
	"$MMCTL" -j chan show "$1" |
		python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["weight"])'
}

weights() { echo "$(weight camera0) $(weight mic0) $(weight imu0)"; }

bail() {
	echo "Bail out! $*"
	exit 1
}

[ -e "$DEV" ] || bail "no $DEV (is mmedge.ko loaded?)"
command -v python3 >/dev/null || bail "no python3"

# Channels live as long as their creator keeps the device open.
"$MMSTREAM" -n 0 >"$tmp/stream.out" 2>"$tmp/stream.err" &
stream_pid=$!
for _ in $(seq 50); do
	# grep, not python3: a Python start-up costs seconds in a TCG guest.
	c=$(timeout 30 "$MMCTL" -j chan show 2>/dev/null | grep -o '"name":' |
		wc -l)
	[ "${c:-0}" -ge 3 ] && break
	sleep 0.1
done
[ "${c:-0}" -ge 3 ] || bail "mmstream did not create its channels: $(cat "$tmp/stream.err")"
sleep 0.5	# some traffic for the counters

# --- dev, caps ---

run -j dev show
want_rc 0; err_empty
py 'e = [x for x in d if x["dev"] == "mmedge0"][0]; assert e["nr_chans"] == 3 and e["bus_bw"] > 0, e'
result "-j dev show adds the bus and the channel count from netlink"

run dev show
want_rc 0; out_has '^mmedge0: driver mmedge.* bus [0-9.]* [kMG]B/s channels 3'
result "dev show prints the bus in human units"

run -j caps
want_rc 0; py 'assert "CHAN_STATS" in d["ioctls"], d'
result "-j caps lists the channel ioctls"

# --- chan show ---

run chan show
want_rc 0; err_empty
out_has '^camera0: id [0-9]* dev mmedge0 source camera weight 100 class best-effort cap none'
out_has '^mic0: .*source mic'; out_has '^imu0: .*source imu'
out_has '^    rate .* wait_p99 '
result "chan show lists the three channels"

run -j chan show
want_rc 0; err_empty
cp "$tmp/out" "$tmp/nl.json"
ids=$(python3 -c 'import json,sys; print(" ".join(str(c["id"]) for c in json.load(open(sys.argv[1]))))' "$tmp/nl.json")
"$MMHAL_VIEW" $ids >"$tmp/ioctl.json" 2>>"$tmp/err" || fail "mmhal-view failed"
py '
io = {c["id"]: c for c in json.load(open(sys.argv[1].replace("nl.json", "ioctl.json")))["chans"]}
assert len(d) == 3 and sorted(c["name"] for c in d) == ["camera0", "imu0", "mic0"], d
for c in d:
    i = io[c["id"]]
    assert (c["weight"], c["cap"]) == (i["weight"], i["cap"]), (c, i)
    assert {"best-effort": 0, "latency": 1}[c["class"]] == i["class"], (c, i)
    # netlink was read first: the ioctl counters can only be ahead.
    s = c["stats"]
    assert s["bytes"] <= i["bytes"] and s["frames"] <= i["frames"], (c, i)
    assert s["dropped"] <= i["dropped"] and len(s["wait_hist"]) == 16, (c, i)
assert [c for c in d if c["name"] == "camera0"][0]["stats"]["bytes"] > 0, d
' "$tmp/nl.json"
result "-j chan show matches the ioctl view (config and counters)"

run -j -p chan show mic0
want_rc 0; py 'assert len(d) == 1 and d[0]["name"] == "mic0" and d[0]["source"] == "mic", d'
result "-j chan show NAME shows one channel"

# A feed and a copy channel (ioctl from Python: libhal has no API for
# them yet) show their direction instead of a capture source.
mkfifo "$tmp/hold"
python3 -c '
import fcntl, os, struct, sys
fd = os.open("/dev/mmedge0", os.O_RDWR)
fmt = "<II8IIIQIIIIII16s2Q"			# struct mmedge_chan_create
req = (3 << 30) | (struct.calcsize(fmt) << 16) | (0xE7 << 8) | 0x06
for d in (1, 2):				# MMEDGE_CHAN_FEED, _COPY
    fcntl.ioctl(fd, req, bytearray(struct.pack(fmt, d, *[0] * 18, b"", 0, 0)))
print("ready", flush=True)
sys.stdin.read()				# until the fifo closes
' <"$tmp/hold" >"$tmp/hold.out" 2>&1 &
hold_pid=$!
exec 9>"$tmp/hold"
for _ in $(seq 300); do
	grep -q ready "$tmp/hold.out" 2>/dev/null && break
	kill -0 "$hold_pid" 2>/dev/null || break
	sleep 0.1
done
grep -q ready "$tmp/hold.out" || fail "channel helper: $(cat "$tmp/hold.out")"
run chan show
want_rc 0
out_has '^feed[0-9]*: id [0-9]* dev mmedge0 dir feed weight 100'
out_has '^copy[0-9]*: id [0-9]* dev mmedge0 dir copy weight 100'
out_has '^camera0: .*source camera'
run -j chan show
py '
k = {c["name"]: c for c in d}
f = [c for c in d if c["dir"] == "feed"]
assert len(f) == 1 and f[0]["source"] is None, d
assert len([c for c in d if c["dir"] == "copy"]) == 1, d
assert k["camera0"]["dir"] == "capture" and k["camera0"]["source"] == "camera", d
'
exec 9>&-
wait "$hold_pid"
result "chan show: feed and copy channels by direction, capture ones by source"

run chan show nosuch
want_rc 1; out_empty; err_has 'chan show nosuch: no such channel'; err_has 'mmctl chan show'
result "chan show of a missing channel: exit 1, kernel's message and a hint"

run chan show Bad.Name
want_rc 2; err_has "'Bad.Name' is not a channel name"
result "chan show of an invalid name is a usage error"

# --- chan set ---

run chan set camera0 weight 50
want_rc 0; out_empty; err_empty
[ "$(weight camera0)" = 50 ] || fail "weight is $(weight camera0), want 50"
id=$("$MMCTL" -j chan show camera0 | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])')
"$MMHAL_VIEW" "$id" >"$tmp/ioctl.json"
py 'assert d["chans"][0]["weight"] == 50, d' "$tmp/ioctl.json"
result "chan set weight: netlink and ioctl views agree"

run -j chan set camera0 weight 60 cap 2M
want_rc 0; py 'assert d[0]["weight"] == 60 and d[0]["cap"] == 2000000, d'
result "-j chan set prints the channel after the change (cap in units)"

run chan set camera0 cap none
want_rc 0; [ "$("$MMCTL" -j chan show camera0 | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["cap"])')" = 0 ] || fail "cap not cleared"
result "chan set cap none clears the cap"

run chan set camera0 weight 0
want_rc 2; out_empty; err_has 'chan set camera0: weight 0 out of range 1..10000'
err_has "Try 'mmctl chan set -h'"
result "weight 0: usage error with the range"

run chan set camera0 weight 10001
want_rc 2; err_has 'weight 10001 out of range 1..10000'
result "weight 10001: usage error with the range"

run chan set camera0 weight x
want_rc 2; err_has "weight 'x' is not a number"
result "weight x: usage error"

run chan set camera0 class fast
want_rc 2; err_has "unknown class 'fast' (latency, best-effort)"
result "unknown class: usage error listing the classes"

run chan set camera0 cap lots
want_rc 2; err_has "cap 'lots' is not a rate"
result "bad cap: usage error with examples"

run chan set camera0
want_rc 2; err_has 'nothing to set'
result "chan set without a setting: usage error"

run chan set camera0 weight 5 weight 6
want_rc 2; err_has 'weight given twice'
result "a setting given twice: usage error"

run chan set imu0 class latency cap 0
want_rc 2; err_has 'the latency class needs a rate cap'
result "latency with cap 0: refused before asking the kernel"

run chan set imu0 class latency
want_rc 1; out_empty; err_has 'chan set imu0: the latency class needs a rate cap'
result "latency without a cap: the kernel's extack message, exit 1"

run chan set nosuch weight 5
want_rc 1; err_has 'chan set nosuch: no such channel'
result "chan set of a missing channel: exit 1"

run chan set camera0 weight 300
want_rc 0; [ "$(weight camera0)" = 300 ] || fail "root could not raise to 300"
result "root raises a weight above 100"
"$MMCTL" chan set camera0 weight 100

# --- privileges ---

before=$(weights)
run_nobody chan set camera0 weight 300
want_rc 3; out_empty; err_has 'need CAP_NET_ADMIN to tune channels'
[ "$(weights)" = "$before" ] || fail "weights changed: $before -> $(weights)"
result "nobody: EPERM, exit 3, CAP_NET_ADMIN named, nothing changed"

run_nonice chan set camera0 weight 300
want_rc 3; err_has 'need CAP_SYS_NICE to raise a weight above 100'
[ "$(weight camera0)" = 100 ] || fail "weight changed without CAP_SYS_NICE"
result "without CAP_SYS_NICE a raise above 100 is EPERM, exit 3"

run_nonice chan set camera0 weight 40
want_rc 0; [ "$(weight camera0)" = 40 ] || fail "lowering failed"
result "without CAP_SYS_NICE lowering a weight works"

run_nonice chan set camera0 weight 90
want_rc 0; [ "$(weight camera0)" = 90 ] || fail "raising within 100 failed"
result "without CAP_SYS_NICE raising up to 100 works"
"$MMCTL" chan set camera0 weight 100

run_nonice chan set mic0 class latency cap 64k
want_rc 3; err_has 'need CAP_SYS_NICE for the latency class'
result "without CAP_SYS_NICE the latency class is EPERM, exit 3"

# --- monitor ---

# The background stream's drop events may come first: each monitor runs
# until SIGTERM, and the checks look for their events among all of them.
# mon_stop: SIGTERM to mmctl under timeout (it exits 0), its status in rc.
mon_stop() {
	sleep 0.5
	pkill -TERM -P "$mon"
	wait "$mon"
	rc=$?
}

timeout --preserve-status -s TERM 20 "$MMCTL" -j monitor \
	>"$tmp/mon.json" 2>"$tmp/mon.err" &
mon=$!
sleep 1
"$MMCTL" chan set mic0 weight 70 &
changer=$!
wait "$changer"
mon_stop
cp "$tmp/mon.json" "$tmp/out"; cp "$tmp/mon.err" "$tmp/err"
want_rc 0
python3 -c '
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
ev = [e for e in ev
      if e["event"] == "chan_changed" and e["pid"] == int(sys.argv[2])]
assert len(ev) == 1, ev
d = ev[0]
assert d["chan"] == "mic0" and d["weight"] == 70 and d["old_weight"] == 100, d
assert d["uid"] == 0 and not d["adaptive"], d
' "$tmp/out" "$changer" 2>>"$tmp/err" || fail "no chan_changed of mic0 by $changer: $(cat "$tmp/out")"
result "-j monitor sees another process's weight change, with its pid"

timeout --preserve-status -s TERM 20 "$MMCTL" monitor \
	>"$tmp/mon.txt" 2>"$tmp/mon.err" &
mon=$!
sleep 1
setpriv --inh-caps=-sys_nice --bounding-set=-sys_nice "$MMCTL" chan set imu0 weight 60 &
changer=$!
wait "$changer"
mon_stop
cp "$tmp/mon.txt" "$tmp/out"; cp "$tmp/mon.err" "$tmp/err"
want_rc 0
out_has "^\[chan changed\] mmedge0 imu0 id [0-9]* weight 100 -> 60 class best-effort cap none by pid $changer uid 0$"
result "monitor prints the change and who made it"

# Other events (drops of the background stream) may interleave: keep
# only the channel's life.
timeout --preserve-status -s TERM 20 "$MMCTL" -j monitor \
	>"$tmp/mon.json" 2>"$tmp/mon.err" &
mon=$!
sleep 1
"$MMSTREAM" -n 2 --imu 200:4 >/dev/null 2>"$tmp/err"
mon_stop
want_rc 0
python3 -c '
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
ev = [e for e in ev if e["event"] in ("chan_new", "chan_del")]
assert [e["event"] for e in ev] == ["chan_new", "chan_del"], ev
assert ev[0]["chan_id"] == ev[1]["chan_id"] and ev[0]["source"] == "imu", ev
' "$tmp/mon.json" 2>>"$tmp/err" || fail "not chan_new then chan_del: $(cat "$tmp/mon.json")"
result "monitor sees a channel come and go"

timeout --preserve-status -s TERM 1 "$MMCTL" monitor >"$tmp/out" 2>"$tmp/err"
rc=$?
want_rc 0; err_empty
result "monitor ends with exit 0 on SIGTERM"

# --- bus ---

run -j bus show
want_rc 0
bus0=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["bus_bw"])' "$tmp/out")
"$MMHAL_VIEW" >"$tmp/ioctl.json"
py "assert d['bus_bw'] == $bus0, d" "$tmp/ioctl.json"
result "-j bus show matches the ioctl view"

run bus set 50M
want_rc 0
run bus show
out_has '^mmedge0: bus 50 MB/s (50000000 bytes/s)$'
"$MMHAL_VIEW" >"$tmp/ioctl.json"
py 'assert d["bus_bw"] == 50000000, d' "$tmp/ioctl.json"
result "bus set 50M: both views say 50 MB/s"
"$MMCTL" bus set "$bus0"

run bus set 500k
want_rc 2; err_has 'bandwidth 500k out of range 1 MB/s..100 GB/s'
result "bus set below 1M: usage error with the range"

run_nobody bus set 100M
want_rc 3; err_has 'need CAP_NET_ADMIN and CAP_SYS_ADMIN to change the bus model'
result "nobody: bus set is EPERM, exit 3"

# --- stats ---

run -j stats -w 0.3 -c 2
want_rc 0; err_empty
python3 -c '
import json, sys
s = [json.loads(l) for l in open(sys.argv[1])]
assert len(s) == 2, s
assert s[0]["interval_s"] == 0 and s[1]["interval_s"] > 0.2, s
for x in s:
    assert sorted(c["name"] for c in x["chans"]) == ["camera0", "imu0", "mic0"], x
    assert abs(sum(c["share_weight"] for c in x["chans"]) - 1) < 1e-3, x
    b = sum(c["share_bytes"] for c in x["chans"])
    assert abs(b - 1) < 1e-3 or b == 0, x
cam = [c for c in s[1]["chans"] if c["name"] == "camera0"][0]
assert cam["bytes_per_s"] > 0, cam
' "$tmp/out" 2>>"$tmp/err" || fail "stats JSON lines are wrong"
result "-j stats -w -c: one JSON object per sample, shares add up"

run stats
want_rc 0
out_has '^mmedge0  bus '; out_has '^CHAN  *MB/s  *BYTES%  *WEIGHT%'; out_has '^camera0 '
result "stats prints one sample"

timeout --preserve-status -s TERM 1 "$MMCTL" stats -w 0.2 >"$tmp/out" 2>"$tmp/err"
rc=$?
want_rc 0; out_has '^camera0 '
result "stats -w ends with exit 0 on SIGTERM"

run stats -c 3
want_rc 2; err_has 'needs -w INTERVAL'
result "stats -c without -w: usage error"

# --- apply ---

cat >"$tmp/good.conf" <<'EOF'
# a profile
camera0  weight 80      # the camera
mic0     weight 90 class best-effort

imu0     weight 30
EOF
run -j apply "$tmp/good.conf"
want_rc 0
py 'assert {c["name"]: c["weight"] for c in d} == {"camera0": 80, "mic0": 90, "imu0": 30}, d'
[ "$(weights)" = "80 90 30" ] || fail "weights are $(weights)"
result "apply sets every channel of a profile"

cat >"$tmp/bad.conf" <<'EOF'
camera0 weight 10
mic0 weight 20
imu0 weight 0
EOF
run apply "$tmp/bad.conf"
want_rc 2; err_has "bad.conf:3: imu0: weight 0 out of range 1..10000"
[ "$(weights)" = "80 90 30" ] || fail "weights changed: $(weights)"
result "apply with one invalid line: exit 2, its line, nothing changed"

printf 'camera0 weight 10\nnosuch weight 20\n' >"$tmp/missing.conf"
run apply "$tmp/missing.conf"
want_rc 1; err_has "missing.conf:2: no channel 'nosuch' on mmedge0"
[ "$(weights)" = "80 90 30" ] || fail "weights changed: $(weights)"
result "apply with a missing channel: exit 1, its line, nothing changed"

printf 'camera0 weight 10\nmic0 weight 500\nimu0 weight 20\n' >"$tmp/raise.conf"
run_nonice apply "$tmp/raise.conf"
want_rc 3; err_has "raise.conf:2: mic0: need CAP_SYS_NICE to raise a weight above 100"
err_has 'nothing was changed'
[ "$(weights)" = "80 90 30" ] || fail "weights changed: $(weights)"
result "apply refused by the kernel for one entry changes nothing (atomic)"

printf 'camera0 weight 10\ncamera0 weight 20\n' >"$tmp/dup.conf"
run apply "$tmp/dup.conf"
want_rc 2; err_has 'dup.conf:2: camera0 is already set on line 1'
result "apply with a channel twice: usage error"

run apply -n "$tmp/raise.conf"
want_rc 0; out_has 'raise.conf: 3 channels, all on mmedge0'
[ "$(weights)" = "80 90 30" ] || fail "weights changed: $(weights)"
result "apply -n checks and changes nothing"

printf 'mic0 weight 100\n' | "$MMCTL" apply - >"$tmp/out" 2>"$tmp/err"
rc=$?
want_rc 0; [ "$(weight mic0)" = 100 ] || fail "stdin profile not applied"
result "apply - reads the profile from stdin"

# --- help and usage for every command ---

for c in "caps show" "dev show" "chan show" "chan set" "stats show" \
	 "monitor all" "bus show" "bus set" "apply"; do
	# shellcheck disable=SC2086
	run $c -h
	want_rc 0; err_empty; out_has "^Usage: mmctl \[OPTIONS\] $c"
	out_has '^Exit status'
done
result "-h works for every command"

# --- the streamer is still fine ---

kill -TERM "$stream_pid"
wait "$stream_pid"
rc=$?
stream_pid=
cp "$tmp/stream.out" "$tmp/out"; cp "$tmp/stream.err" "$tmp/err"
want_rc 0; out_has '^camera0 *320x240'
result "background mmstream -n 0 stops on SIGTERM with its summary"

run chan show
want_rc 0; out_empty
result "its channels are gone"

echo "1..$n"
exit $failed

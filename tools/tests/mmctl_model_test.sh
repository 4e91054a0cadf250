#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
#	mmctl_model_test.sh [MMCTL [MMGGUF]]
#
# Command-line tests of the signed model workflow on generated models:
# mmgguf keygen / sign / verify (and its refusals: altered file, wrong
# key, older version), then mmctl model install / switch / status (text
# and -j, checked with python3 -m json.tool) / success / commit /
# rollback / health / failure on a store in a temporary directory, the
# refusals (unsigned, replayed version, install during a trial), and
# mmctl sensorcal install / show / rollback of one sensor type while
# another keeps its new parameters. Prints TAP; exits 1 if a test failed.
set -u

MMCTL=${1:-${MMCTL:-}}
MMGGUF=${2:-${MMGGUF:-}}
if [ -z "$MMCTL" ] || [ -z "$MMGGUF" ]; then
	echo "usage: $0 MMCTL MMGGUF (or set MMCTL and MMGGUF)" >&2
	exit 2
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
failed=0
bad=0
export MMCTL_MODEL_STORE="$tmp/store" MMCTL_MODEL_KEY="$tmp/k.pub"

run() {
	timeout 120 "$@" >"$tmp/out" 2>"$tmp/err"
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

expect_rc() { [ "$rc" = "$1" ] || { echo "#   exit $rc, want $1"; bad=1; }; }
expect_err() { grep -q -- "$1" "$tmp/err" || { echo "#   stderr lacks '$1'"; bad=1; }; }
expect_out() { grep -q -- "$1" "$tmp/out" || { echo "#   stdout lacks '$1'"; bad=1; }; }

# keys and models
run "$MMGGUF" keygen --out "$tmp/k"
expect_rc 0
expect_out "public $tmp/k.pub"
[ "$(stat -c %a "$tmp/k")" = 600 ] || { echo "#   secret key mode $(stat -c %a "$tmp/k")"; bad=1; }
result "mmgguf keygen: secret key 0600 and public key"
run "$MMGGUF" keygen --out "$tmp/other"
for v in 1 2 3; do
	"$MMGGUF" gen --shape micro --tokenizer gpt2 --type f32 --seed $v \
		-o "$tmp/m$v.gguf" >/dev/null 2>&1 || bad=1
done
run "$MMGGUF" sign --key "$tmp/k" --version 1 --name micro "$tmp/m1.gguf"
expect_rc 0
expect_out "name 'micro' version 1"
[ -f "$tmp/m1.gguf.sig" ] || bad=1
result "mmgguf sign writes FILE.sig"
"$MMGGUF" sign --key "$tmp/k" --version 2 "$tmp/m2.gguf" >/dev/null || bad=1
"$MMGGUF" sign --key "$tmp/k" --version 3 "$tmp/m3.gguf" >/dev/null || bad=1
run "$MMGGUF" verify --pub "$tmp/k.pub" --min-version 2 "$tmp/m2.gguf"
expect_rc 0
expect_out "verified"
result "mmgguf verify"
run "$MMGGUF" verify --pub "$tmp/other.pub" "$tmp/m2.gguf"
expect_rc 1
expect_err "not by the trusted key"
result "mmgguf verify: another key"
run "$MMGGUF" verify --pub "$tmp/k.pub" --min-version 3 "$tmp/m2.gguf"
expect_rc 1
expect_err "below the minimum 3"
result "mmgguf verify: an older version"
cp "$tmp/m3.gguf" "$tmp/alt.gguf"
cp "$tmp/m3.gguf.sig" "$tmp/alt.gguf.sig"
printf 'X' | dd of="$tmp/alt.gguf" bs=1 seek=5000 conv=notrunc 2>/dev/null
run "$MMGGUF" verify --pub "$tmp/k.pub" "$tmp/alt.gguf"
expect_rc 1
expect_err "altered"
result "mmgguf verify: an altered file"
run "$MMGGUF" sign --key "$tmp/k.pub" "$tmp/m1.gguf"
expect_rc 1
expect_err "not an secret key file\|secret"
result "mmgguf sign: a public key is not a secret key"

# the store
run "$MMCTL" model status
expect_rc 0
expect_out "active: -"
result "model status of a new store"
run "$MMCTL" model install "$tmp/m1.gguf"
expect_rc 0
expect_out "installed, not switched to"
result "model install"
run "$MMCTL" model switch
expect_rc 0
expect_out "active: a, minimum version 1"
result "model switch to the first model (committed)"
cp "$tmp/m2.gguf" "$tmp/unsigned.gguf"
run "$MMCTL" model install "$tmp/unsigned.gguf"
expect_rc 1
expect_err "unsigned"
result "model install: unsigned file refused"
run "$MMCTL" model install "$tmp/m2.gguf"
expect_rc 0
run "$MMCTL" model switch
expect_rc 0
expect_out "(on trial)"
expect_out "0 of 8 successful requests"
result "model install + switch: v2 on trial, v1 kept"
run "$MMCTL" model install "$tmp/m3.gguf"
expect_rc 1
expect_err "commit or roll back first"
result "model install during a trial refused"
run "$MMCTL" -j model status
expect_rc 0
python3 -m json.tool "$tmp/out" >/dev/null 2>&1 || { echo "#   not JSON"; bad=1; }
expect_out '"trial": *true'
expect_out '"previous": *"a"'
result "model status -j: valid JSON"
run "$MMCTL" model success
expect_rc 0
expect_out "1 of 8 successful"
result "model success counts"
run "$MMCTL" model health
expect_rc 0
result "model health of v2"
run "$MMCTL" model rollback
expect_rc 0
expect_out "active: a, minimum version 1"
result "model rollback on request"
run "$MMCTL" model install "$tmp/m2.gguf"
run "$MMCTL" model switch
run "$MMCTL" model failure
expect_rc 0
expect_err "request failed"
expect_out "active: a,"
result "model failure during a trial rolls back"
run "$MMCTL" model install "$tmp/m2.gguf"
run "$MMCTL" model switch
run "$MMCTL" model commit
expect_rc 0
expect_out "active: b, minimum version 2"
result "model commit raises the minimum version"
run "$MMCTL" model install "$tmp/m1.gguf"
expect_rc 1
expect_err "below the minimum 2"
result "model install: an older version refused"
run "$MMCTL" model rollback
expect_rc 1
expect_err "no previous model"
result "model rollback after a commit refused"
run "$MMCTL" model status --key "$tmp/other.pub" --store "$tmp/store"
expect_rc 0
result "model status --key --store"
run "$MMCTL" model status
expect_rc 0
expect_out "^verified: slot b: .* version 2, .* by hash"
result "model status: the active slot verified now, and how"
run "$MMCTL" -j model status
python3 -m json.tool "$tmp/out" >/dev/null 2>&1 || { echo "#   not JSON"; bad=1; }
expect_out '"verified": *{"slot": *"b", *"ok": *true, *"how": *"hash"'
result "model status -j: the verified record"

# a link to /dev/zero with a valid signature beside it: refused at once,
# nothing copied, no .tmp left in the store
ln -s /dev/zero "$tmp/zero.gguf"
cp "$tmp/m3.gguf.sig" "$tmp/zero.gguf.sig"
t0=$(date +%s)
run "$MMCTL" model install "$tmp/zero.gguf"
expect_rc 1
expect_err "not a regular file"
[ $(( $(date +%s) - t0 )) -le 10 ] || { echo "#   took $(( $(date +%s) - t0 )) s"; bad=1; }
left=$(find "$tmp/store" -name '*.tmp*')
[ -z "$left" ] || { echo "#   left behind: $left"; bad=1; }
result "model install of a link to /dev/zero with a signature: refused, no .tmp"

# the store held by another process: a bounded wait, then a clear error
if command -v flock >/dev/null 2>&1; then
	# -o: the lock is flock(1)'s own, released when it is killed (its
	# sleep, detached from our output, just runs out)
	flock -o "$tmp/store/lock" sleep 20 >/dev/null 2>&1 </dev/null &
	holder=$!
	sleep 0.5
	for verb in status install; do
		t0=$(date +%s)
		if [ "$verb" = install ]; then
			run "$MMCTL" model install --lock-timeout 1000 "$tmp/m3.gguf"
		else
			run "$MMCTL" model status --lock-timeout 1000
		fi
		dt=$(( $(date +%s) - t0 ))
		expect_rc 1
		expect_err "lock is held by another process; gave up after 1000 ms"
		expect_err "wait longer with --lock-timeout"
		[ "$dt" -le 10 ] || { echo "#   took $dt s"; bad=1; }
		result "model $verb while another process holds the lock: fails after the timeout (${dt} s)"
	done
	kill "$holder" 2>/dev/null
	wait "$holder" 2>/dev/null
	run "$MMCTL" model status
	expect_rc 0
	result "model status once the lock is free"
	run "$MMCTL" model status --lock-timeout 0
	expect_rc 2
	expect_err "is not a number of milliseconds"
	result "model status --lock-timeout 0: usage error"
else
	for _ in 1 2 3 4; do
		n=$((n + 1))
		echo "ok $n - lock tests # SKIP flock(1) not installed"
	done
fi

# sensor calibration parameters
printf 'fx 500 fy 500\n' > "$tmp/cam1"
printf 'fx 510 fy 505\n' > "$tmp/cam2"
printf 'bias 0 0 0\n' > "$tmp/imu1"
printf 'bias 9 9 9\n' > "$tmp/imu2"
run "$MMCTL" sensorcal install camera "$tmp/cam1"
expect_rc 0
expect_out "sensor camera: version 1"
result "sensorcal install"
"$MMCTL" sensorcal install imu "$tmp/imu1" >/dev/null || bad=1
"$MMCTL" sensorcal install camera "$tmp/cam2" >/dev/null || bad=1
run "$MMCTL" sensorcal install --version 7 imu "$tmp/imu2"
expect_rc 0
expect_out "sensor imu: version 7"
result "sensorcal install --version"
run "$MMCTL" sensorcal rollback imu
expect_rc 0
expect_out "sensor imu: version 1"
result "sensorcal rollback imu"
run "$MMCTL" sensorcal show camera
expect_rc 0
expect_out "fx 510 fy 505"
result "sensorcal show camera: the new parameters kept"
run "$MMCTL" sensorcal show imu
expect_rc 0
expect_out "bias 0 0 0"
result "sensorcal show imu: the old parameters back"
run "$MMCTL" model status
expect_out "sensor camera: version 2 (previous 1)"
expect_out "sensor imu: version 1$"
result "model status lists the sensor versions"
run "$MMCTL" sensorcal rollback imu
expect_rc 1
expect_err "no previous version"
result "sensorcal rollback with nothing to go back to"
run "$MMCTL" sensorcal show
expect_rc 2
result "sensorcal show without TYPE: usage error"

echo "1..$n"
exit $failed

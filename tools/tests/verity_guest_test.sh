#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
#	verity_guest_test.sh MMGGUF MMHAL_LOAD MMCTL DIR
#
# The fs-verity path of a signed load (Documentation/model-store.rst), on
# DIR, a file system with fs-verity (the VM's scratch disk: ext4 made with
# -O verity, mounted by scripts/guest-check.sh). A generated model is
# signed (format 2: the signature names its fs-verity digest), copied to
# DIR and `fsverity enable`d; then: the loader takes the fs-verity path
# (mmhal-load says which), with the resident set of a plain mapped load
# without a key and less time than the copy path, which the same model
# takes on a file without fs-verity (medians of 3 loads each); the
# verity file cannot be opened for writing; a model altered before
# fs-verity was enabled is refused, naming the digest; an older (format 1)
# signature of the same file loads through the copy; and a store on DIR
# whose slot file has fs-verity on reports it (mmctl model status) and
# loads it (mmctl model health). VERITY_SHAPE (default tiny) and
# VERITY_TYPE (default f32) choose the model. Prints TAP; exits 1 if a
# test failed.
set -u

MMGGUF=${1:-} LOAD=${2:-} MMCTL=${3:-} D=${4:-}
SHAPE=${VERITY_SHAPE:-tiny}
TYPE=${VERITY_TYPE:-f32}
n=0
failed=0
bad=0

if [ -z "$MMGGUF" ] || [ -z "$LOAD" ] || [ -z "$MMCTL" ]; then
	echo "usage: $0 MMGGUF MMHAL_LOAD MMCTL DIR" >&2
	exit 2
fi
if [ -z "$D" ] || [ ! -d "$D" ]; then
	echo "not ok 1 - no file system with fs-verity to test on (DIR '$D')"
	echo "1..1"
	exit 1
fi
D=$D/verity_test.$$
mkdir -p "$D" || exit 1
trap 'rm -rf "$D"' EXIT

run() {
	timeout 600 "$@" >"$D/out" 2>"$D/err"
	rc=$?
}

result() {
	n=$((n + 1))
	if [ "$bad" = 0 ]; then
		echo "ok $n - $1"
	else
		echo "not ok $n - $1"
		sed 's/^/#   stdout: /' "$D/out"
		sed 's/^/#   stderr: /' "$D/err"
		failed=1
	fi
	bad=0
}

expect_rc() { [ "$rc" = "$1" ] || { echo "#   exit $rc, want $1"; bad=1; }; }
expect_err() { grep -q -- "$1" "$D/err" || { echo "#   stderr lacks '$1'"; bad=1; }; }
expect_out() { grep -q -- "$1" "$D/out" || { echo "#   stdout lacks '$1'"; bad=1; }; }
# field NAME: the value after NAME in mmhal-load's line
field() { awk -v k="$1" '{ for (i = 1; i < NF; i++) if ($i == k) print $(i + 1) }' "$D/out"; }

# model, key, signature (format 2) - in /tmp, not on DIR
src=$(mktemp -d)
trap 'rm -rf "$D" "$src"' EXIT
run "$MMGGUF" keygen --out "$src/k"
[ "$rc" = 0 ] || bad=1
t0=$(date +%s)
run "$MMGGUF" gen --shape "$SHAPE" --tokenizer gpt2 --type "$TYPE" -o "$src/m.gguf"
[ "$rc" = 0 ] || bad=1
run "$MMGGUF" sign --key "$src/k" --version 3 --name vmodel "$src/m.gguf"
expect_rc 0
expect_out "fs-verity sha256:"
digest=$(sed -n 's/.* fs-verity sha256:\([0-9a-f]*\) .*/\1/p' "$D/out")
size=$(stat -c %s "$src/m.gguf")
[ "$(stat -c %s "$src/m.gguf.sig")" = 232 ] || { echo "#   signature not 232 bytes"; bad=1; }
result "generate ($SHAPE $TYPE, $size bytes, $(( $(date +%s) - t0 )) s) and sign with the fs-verity digest"

cp "$src/m.gguf" "$src/m.gguf.sig" "$D/" || bad=1
run fsverity enable "$D/m.gguf"
expect_rc 0
run fsverity measure "$D/m.gguf"
expect_out "sha256:$digest"
result "fsverity enable on $(stat -f -c %T "$D"): the kernel's digest is the signed one"

run "$LOAD" --repeat 3 --key "$src/k.pub" "$D/m.gguf"
expect_rc 0
expect_out "how fs-verity version 3"
vt=$(field load_ms) vr=$(field rss_mb)
result "signed load of the verity file: the fs-verity path ($(cat "$D/out"))"

# the same model and signature on a file without fs-verity
mkdir -p "$D/plain"
cp "$src/m.gguf" "$src/m.gguf.sig" "$D/plain/" || bad=1
run "$LOAD" --repeat 3 --key "$src/k.pub" "$D/plain/m.gguf"
expect_rc 0
expect_out "how copy version 3"
ct=$(field load_ms) cr=$(field rss_mb)
result "the same model without fs-verity: the copy path ($(cat "$D/out"))"

# the same file loaded mapped without a key (verifies nothing): the floor
run "$LOAD" --repeat 3 "$D/plain/m.gguf"
expect_rc 0
expect_out "how none"
pt=$(field load_ms) pr=$(field rss_mb)
result "plain mapped load without a key ($(cat "$D/out"))"

# resident set: the copy holds the whole file; the verity mapping no more
# than a plain mapped load touches. Time: no pass over the file.
# (Medians of 3 loads each.)
awk -v v="$vr" -v c="$cr" -v p="$pr" -v s="$size" 'BEGIN {
	exit !(c * 1e6 >= 0.95 * s && v - p <= 0.5 && v < c) }' ||
	{ echo "#   rss: verity $vr MB, copy $cr MB, plain $pr MB, file $size bytes"; bad=1; }
awk -v v="$vt" -v c="$ct" 'BEGIN { exit !(v < c) }' ||
	{ echo "#   load: verity $vt ms, copy $ct ms"; bad=1; }
result "cost: fs-verity $vt ms / $vr MB, copy $ct ms / $cr MB, plain mmap $pt ms / $pr MB (file $size bytes)"

# the verity file is immutable
: > "$D/out"
if sh -c "exec 3>>'$D/m.gguf'" 2>"$D/err"; then
	echo "#   opened for writing"
	bad=1
fi
if sh -c "exec 3<>'$D/m.gguf'" 2>>"$D/err"; then
	echo "#   opened read-write"
	bad=1
fi
cmp -s "$src/m.gguf" "$D/m.gguf" || { echo "#   content changed"; bad=1; }
result "the verity file cannot be opened for writing ($(head -n1 "$D/err"))"

# altered, then fs-verity enabled: the digest is not the signed one
cp "$src/m.gguf" "$D/alt.gguf" && cp "$src/m.gguf.sig" "$D/alt.gguf.sig" || bad=1
printf 'XXXX' | dd of="$D/alt.gguf" bs=1 seek=$((size - 64)) conv=notrunc 2>/dev/null
fsverity enable "$D/alt.gguf" || bad=1
run "$LOAD" --key "$src/k.pub" "$D/alt.gguf"
expect_rc 1
expect_err "fs-verity digest sha256:"
expect_err "is not the signed sha256:${digest%"${digest#????????????????}"}"
result "altered before fsverity enable: refused ($(cat "$D/err"))"

# an older signature (format 1, no digest) of the same verity file
cp "$src/m.gguf" "$D/old.gguf" || bad=1
run "$MMGGUF" sign --key "$src/k" --version 3 --no-verity "$D/old.gguf"
expect_rc 0
fsverity enable "$D/old.gguf" || bad=1
[ "$(stat -c %s "$D/old.gguf.sig")" = 200 ] || { echo "#   not 200 bytes"; bad=1; }
run "$LOAD" --key "$src/k.pub" "$D/old.gguf"
expect_rc 0
expect_out "how copy version 3"
result "format 1 signature on a verity file: the copy path"

# mmgguf verify measures instead of hashing
run "$MMGGUF" verify --pub "$src/k.pub" "$D/m.gguf"
expect_rc 0
expect_out "checked-by fs-verity"
result "mmgguf verify of the verity file: checked by fs-verity"

# the store: a slot file with fs-verity on is reported and loaded mapped
export MMCTL_MODEL_STORE="$D/store" MMCTL_MODEL_KEY="$src/k.pub"
run "$MMCTL" model install "$src/m.gguf"
expect_rc 0
run "$MMCTL" model switch
expect_rc 0
run "$MMCTL" model status
expect_out "by hash"
result "store on $D: installed, status verifies the slot by its hash"
slot=$(sed -n 's/^verified: slot \([ab]\):.*/\1/p' "$D/out")
fsverity enable "$D/store/$slot/model.gguf" || bad=1
run "$MMCTL" model status
expect_rc 0
expect_out "verified: slot $slot: vmodel version 3"
expect_out "by fs-verity"
run "$MMCTL" model health
expect_rc 0
result "slot file with fs-verity on: mmctl model status says fs-verity, health loads it"

echo "1..$n"
exit $failed

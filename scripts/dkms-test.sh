#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# DKMS install test in a scratch tree: "make dkms-install" registers the
# source (dkms.conf), builds and installs it for Debian 12's 6.1 kernel,
# dkms builds and installs it for 6.12 too, each installed module carries
# its kernel's vermagic and is where depmod and modinfo find it, and
# "dkms remove --all" takes everything back out. The system's /usr/src,
# /var/lib/dkms and /lib/modules are not written: the trees live in
# $MMEDGE_BUILD/dkms.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${MMEDGE_BUILD:-$ROOT/build}
D=$OUT/dkms
n=0 passed=0 failed=0

result() {
	n=$((n + 1))
	if [ "$1" = 0 ]; then
		echo "ok $n - $2"
		passed=$((passed + 1))
	else
		echo "not ok $n - $2"
		failed=$((failed + 1))
	fi
}

if ! dpkg-query -W -f='${Status}' dkms 2>/dev/null | grep -q "ok installed"; then
	echo "dkms-test: installing dkms" >&2
	SUDO=""
	[ "$(id -u)" = 0 ] || SUDO=sudo
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
		--no-install-recommends dkms > /dev/null || exit 1
fi

ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' "$ROOT/dkms.conf")
k1=$("$ROOT/scripts/kabi.sh")-amd64
k2=6.12.115+deb12-amd64
lib=$D/root/lib/modules
rm -rf "$D/tree" "$D/src" "$D/root" "$D/tmp"
mkdir -p "$D/tree" "$D/src" "$lib/$k1" "$lib/$k2" "$D/tmp"
# depmod reads these beside the modules; the scratch trees take the
# kernels' own where they are installed.
for k in "$k1" "$k2"; do
	for f in modules.order modules.builtin modules.builtin.modinfo; do
		if [ -f "/lib/modules/$k/$f" ]; then
			cp "/lib/modules/$k/$f" "$lib/$k/"
		else
			: > "$lib/$k/$f"
		fi
	done
done
stamp=$D/tmp/stamp
touch "$stamp"

# Signing material DKMS would otherwise create in /var/lib/dkms (its
# signing settings come from framework.conf or the environment).
export mok_signing_key=$D/mok.key mok_certificate=$D/mok.pub
export TMPDIR=$D/tmp
dkms=(dkms --dkmstree "$D/tree" --sourcetree "$D/src"
	--installtree "$lib" --no-depmod)

# installed KVER: the installed module has KVER's vermagic, is signed
# with the scratch key, and depmod and modinfo find it in updates/dkms.
installed() {
	local f vm signer
	f=$(find "$lib/$1/updates/dkms" -name 'mmedge.ko*' 2>/dev/null)
	[ -n "$f" ] || { echo "no mmedge.ko under $lib/$1/updates/dkms"; return 1; }
	vm=$(modinfo -F vermagic "$f")
	signer=$(modinfo -F signer "$f")
	echo "# $f: vermagic $vm, signer $signer"
	[ "${vm%% *}" = "$1" ] || return 1
	[ "$signer" = "DKMS module signing key" ] || return 1
	depmod -b "$D/root" "$1" || return 1
	[ "$(modinfo -b "$D/root" -k "$1" -F filename mmedge)" = "$f" ]
}

t0=$(date +%s)
make -s -C "$ROOT" dkms-install KVER="$k1" DKMS_SRC="$D/src/mmedge-$ver" \
	DKMS="${dkms[*]} --kernelsourcedir /usr/src/linux-headers-$k1" > "$D/install-$k1.log" 2>&1
rc=$?
[ $rc = 0 ] || cat "$D/install-$k1.log" "$D"/tree/mmedge/"$ver"/build/make.log 2>/dev/null
result $rc "make dkms-install: dkms add, build, install mmedge/$ver for $k1"
installed "$k1"
result $? "installed for $k1: its vermagic, signed, found by depmod/modinfo"

k2src=/usr/src/linux-headers-$k2
"${dkms[@]}" build "mmedge/$ver" -k "$k2" --kernelsourcedir "$k2src" > "$D/build-$k2.log" 2>&1 &&
	"${dkms[@]}" install "mmedge/$ver" -k "$k2" --kernelsourcedir "$k2src" >> "$D/build-$k2.log" 2>&1
rc=$?
[ $rc = 0 ] || cat "$D/build-$k2.log" "$D"/tree/mmedge/"$ver"/build/make.log 2>/dev/null
result $rc "dkms build, install mmedge/$ver for $k2"
installed "$k2"
result $? "installed for $k2: its vermagic, signed, found by depmod/modinfo"

st=$("${dkms[@]}" status "mmedge/$ver" 2> "$D/status.log")
echo "$st" | sed 's/^/# /'
rc=0
for k in "$k1" "$k2"; do
	echo "$st" | grep -q "^mmedge/$ver, $k, x86_64: installed" || rc=1
done
result $rc "dkms status: installed for both kernels"

"${dkms[@]}" remove "mmedge/$ver" --all > "$D/remove.log" 2>&1
rc=$?
st=$("${dkms[@]}" status mmedge 2>> "$D/status.log")
left=$(find "$lib" -name 'mmedge.ko*')
[ -z "$st$left" ] || { echo "$st$left"; rc=1; }
[ $rc = 0 ] || cat "$D/remove.log"
result $rc "dkms remove --all: nothing registered or installed"

# The system's trees are untouched.
touched=$(find /var/lib/dkms /usr/src /lib/modules -maxdepth 4 -newer "$stamp" \
	\( -path '/var/lib/dkms/*' -o -name '*mmedge*' \) 2>/dev/null)
[ -z "$touched" ] || echo "$touched"
result "$([ -z "$touched" ]; echo $?)" "nothing written to /var/lib/dkms, /usr/src, /lib/modules"

echo "# $(($(date +%s) - t0)) s"
echo "RESULT dkms $passed $failed"
[ "$failed" = 0 ]

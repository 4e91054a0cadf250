#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The kernel's YNL tools (tools/net/ynl: the netlink spec library, cli.py)
# and the netlink spec schemas (Documentation/netlink/*.yaml), from
# Debian's linux-source-6.12 (6.1's source has neither). The package is
# downloaded, not installed (its tarball would sit beside 6.1's in
# /usr/src), and only those two folders are unpacked, once per machine,
# into $MMEDGE_CACHE (default /var/cache/mmedge). Prints the tree's path:
# <tree>/tools/net/ynl and <tree>/Documentation/netlink.
set -euo pipefail

PKG=linux-source-6.12
CACHE=${MMEDGE_CACHE:-/var/cache/mmedge}
ver=$(apt-cache policy "$PKG" | sed -n 's/^ *Candidate: *//p')
if [ -z "$ver" ] || [ "$ver" = "(none)" ]; then
	echo "ynl: apt knows no $PKG" >&2
	exit 1
fi
tree="$CACHE/ynl-$ver"
if [ ! -f "$tree/.done" ]; then
	echo "ynl: unpacking tools/net/ynl from $PKG $ver into $tree" >&2
	rm -rf "$tree" "$tree.tmp"
	mkdir -p "$tree.tmp/deb"
	(cd "$tree.tmp/deb" &&
	 apt-get download -qq -o APT::Sandbox::User=root "$PKG=$ver" >/dev/null)
	dpkg-deb --fsys-tarfile "$tree.tmp"/deb/*.deb |
		tar -xO ./usr/src/linux-source-6.12.tar.xz |
		tar -C "$tree.tmp" -xJ --strip-components=1 \
			--wildcards '*/tools/net/ynl/*' '*/Documentation/netlink/*'
	rm -rf "$tree.tmp/deb"
	touch "$tree.tmp/.done"
	mv "$tree.tmp" "$tree"
fi
echo "$tree"

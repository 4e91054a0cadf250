#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Print the ABI ("6.1.0-NN") of the newest installed linux-headers-*-amd64.
set -euo pipefail
v=$(dpkg-query -W -f='${Depends}' linux-headers-amd64 2>/dev/null |
	grep -o 'linux-headers-[0-9][^ ,]*-amd64' | head -n1)
if [ -z "$v" ]; then
	echo "kabi: linux-headers-amd64 is not installed" >&2
	exit 1
fi
v=${v#linux-headers-}
echo "${v%-amd64}"

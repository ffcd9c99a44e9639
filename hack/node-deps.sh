#!/usr/bin/env bash
# hack/node-deps.sh: install what the e2e suite's real node (internal/testcluster/node)
# takes from the OS rather than from the Go module proxy: runc, the CNI plugins
# (bridge, host-local, loopback), nft for kube-proxy's nftables mode, iptables
# and conntrack. `make e2e` runs it, so CI and a fresh developer machine (both
# root, with apt) need no manual step. Nothing is installed when all is there.
set -euo pipefail

# Debian's package for each command or file the node uses.
declare -A need=(
	[runc]=runc
	[/usr/lib/cni/bridge]=containernetworking-plugins
	[nft]=nftables
	[iptables]=iptables
	[conntrack]=conntrack
)
missing=()
for what in "${!need[@]}"; do
	if [[ $what == /* ]]; then
		[[ -e $what ]] || missing+=("${need[$what]}")
	else
		command -v "$what" >/dev/null || missing+=("${need[$what]}")
	fi
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
if [[ $(id -u) -ne 0 ]]; then
	# The real node's tests skip without root anyway.
	echo "hack/node-deps.sh: not root: the real node's tests will skip (they would need ${missing[*]})" >&2
	exit 0
fi
if ! command -v apt-get >/dev/null; then
	echo "hack/node-deps.sh: the real node needs ${missing[*]} (Debian's package names); install them" >&2
	exit 1
fi
echo "hack/node-deps.sh: installing ${missing[*]} for the e2e suite's real node" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null
apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null

#!/usr/bin/env bash
# hack/node-deps.sh: install what the e2e suite's real node (internal/testcluster/node)
# takes from the OS rather than from the Go module proxy: runc, the CNI plugins
# (bridge, host-local, loopback), nft for kube-proxy's nftables mode, iptables
# and conntrack; qemu, which boots the guest of KubeVirt's kernel boot
# (internal/testcluster/guest) in its test; and what building KubeVirt's node
# side takes: libvirt's headers and pkg-config for the cgo build of
# virt-launcher and virt-handler, and for their images
# (internal/testcluster/kubevirt/images) debootstrap with Debian's archive
# keyring, and gcc with the static libc for container-disk; and cpio, which
# reads the guest's initramfs back in its unit test. The guest is made of
# Debian packages that apt-get download fetches, so apt's package lists are
# updated when they lack them. `make unit` and `make e2e` run it, so CI and a
# fresh developer machine (both root, with apt) need no manual step. Nothing
# is done when all is there.
set -euo pipefail

# Debian's package for each command or file the node uses.
declare -A need=(
	[runc]=runc
	[/usr/lib/cni/bridge]=containernetworking-plugins
	[nft]=nftables
	[iptables]=iptables
	[conntrack]=conntrack
	[qemu-system-x86_64]=qemu-system-x86
	[/usr/include/libvirt/libvirt.h]=libvirt-dev
	[pkg-config]=pkg-config
	[debootstrap]=debootstrap
	[/usr/share/keyrings/debian-archive-keyring.gpg]=debian-archive-keyring
	[gcc]=gcc
	["/usr/lib/$(uname -m)-linux-gnu/libc.a"]=libc6-dev
	[cpio]=cpio
)
missing=()
for what in "${!need[@]}"; do
	if [[ $what == /* ]]; then
		[[ -e $what ]] || missing+=("${need[$what]}")
	else
		command -v "$what" >/dev/null || missing+=("${need[$what]}")
	fi
done
# The guest's packages; apt-cache finds them once apt's lists hold them.
guest_packages=(linux-image-amd64 busybox-static)
lists_stale=false
if command -v apt-cache >/dev/null && ! apt-cache show --no-all-versions "${guest_packages[@]}" >/dev/null 2>&1; then
	lists_stale=true
fi
[[ ${#missing[@]} -eq 0 && $lists_stale == false ]] && exit 0

if [[ $(id -u) -ne 0 ]]; then
	# The real node's and the guest's tests skip without root anyway, and
	# so does the initramfs's read-back without cpio (outside CI).
	echo "hack/node-deps.sh: not root: the real node's and the guest's tests will skip (they would need ${missing[*]:-apt-get update})" >&2
	exit 0
fi
if ! command -v apt-get >/dev/null; then
	echo "hack/node-deps.sh: the real node needs ${missing[*]} (Debian's package names); install them" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
echo "hack/node-deps.sh: updating apt's package lists" >&2
apt-get update -q >/dev/null
[[ ${#missing[@]} -eq 0 ]] && exit 0
mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
echo "hack/node-deps.sh: installing ${missing[*]} for the e2e suite's real node and guest" >&2
apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null

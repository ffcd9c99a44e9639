// Package guest builds a tiny real guest for KubeVirt's kernel boot
// (spec.domain.firmware.kernelBoot.container): Debian 12's kernel and an
// initramfs of busybox (busybox-static), as a container image that holds
// /boot/vmlinuz and /boot/initramfs.gz, owned by KubeVirt's qemu user 107.
// The image has no program: KubeVirt runs its own static container-disk in
// it, and virt-handler hands the two files to the launcher's qemu.
//
// Booted with KernelArgs, the guest loads its virtio NIC's modules, takes its
// address and hostname by DHCP (KubeVirt's masquerade binding gives both),
// serves GET / on TCP :80 with its hostname and a newline (what a Service and
// the VMI's readinessProbe reach), starts a busy loop on GET /cgi-bin/busy
// (one at most, for 10 minutes at most) and stops it on GET /cgi-bin/idle,
// for the tests that autoscale on the guest's CPU, prints
//
//	vmctl-guest: <hostname> up at <address>, serving http on :80
//
// on the serial console (virt-launcher's guest-console-log shows it), and
// powers off on the ACPI power button, which KubeVirt's graceful shutdown
// presses. It runs under qemu's software emulation (TCG), no KVM needed.
//
// Ensure builds the image into <repo>/.cache/guest/<hash> once: apt-get
// download fetches the packages (nothing is installed on the machine),
// init.sh, udhcpc.sh, power.sh, busy.sh and idle.sh beside this file are the
// guest's scripts, the initramfs is written here (no cpio tool), and
// hack/image makes the image. The hash covers this package's source, the
// image builder and the Debian versions apt offers, so a kernel update
// rebuilds it.
package guest

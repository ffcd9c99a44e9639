#!/bin/sh
# busybox acpid runs this on an ACPI power-button press (its event
# PWRF/00000080), which is how KubeVirt stops a VM gracefully: libvirt's
# shutdown, qemu's system_powerdown. Nothing in the guest needs saving, so it
# powers off at once and qemu exits.
echo "vmctl-guest: $(hostname) powering off" >/dev/console
sync
poweroff -f

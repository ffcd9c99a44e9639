#!/bin/sh
# /init of the guest's initramfs, run by the kernel as PID 1. It brings up the
# one NIC with DHCP (udhcpc.sh applies the lease, hostname included), serves
# the hostname over HTTP on :80, and there /cgi-bin/busy and /cgi-bin/idle,
# which start and stop a busy loop (busy.sh, idle.sh), powers off on the ACPI
# power button (power.sh), marks a data disk with a token or finds the one it
# marked, and tells the serial console when it is up. It must never exit: the
# kernel panics when PID 1 does.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev

say() { echo "vmctl-guest: $*" >/dev/console; }

# Modules in dependency order, one file name a line.
while read -r m; do
	insmod "/lib/modules/$m" || say "cannot load $m"
done </etc/modules

# A data disk (the VM's claim), where the VM has a virtio one (device ID 2):
# the guest marks it with a token on its first boot, and every later boot,
# on the same disk, finds that token. Both say so on the console.
if grep -qx 0x0002 /sys/bus/virtio/devices/*/device 2>/dev/null; then
	for i in 1 2 3 4 5 6 7 8 9 10; do
		[ -e /sys/block/vda ] && break
		sleep 1
	done
	mark=$(dd if=/dev/vda bs=29 count=1 2>/dev/null | tr -cd 'a-z0-9:-')
	case "$mark" in
	vmctl-token:*) say "token ${mark#vmctl-token:} found on /dev/vda" ;;
	*)
		token=$(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \n')
		if printf 'vmctl-token:%s\n' "$token" | dd of=/dev/vda conv=notrunc,fsync 2>/dev/null; then
			say "token $token written to /dev/vda"
		else
			say "cannot write a token to /dev/vda"
		fi
		;;
	esac
fi

# The button's /dev/input/event* exist now; acpid opens them at start. Its
# log (the events it acts on) goes to the console: there is no /var/log.
acpid -c /etc/acpi -l /dev/console

ip link set lo up
nic=
for d in /sys/class/net/*; do
	[ "${d##*/}" = lo ] || { nic=${d##*/}; break; }
done
if [ -z "$nic" ]; then
	say "no network interface: is the VM's NIC virtio?"
else
	# Returns once bound, and goes on renewing in the background.
	udhcpc -i "$nic" -s /etc/udhcpc.sh -t 5 -T 2 -A 2
	httpd -h /www -p 80
	addr=$(ip -4 -o addr show dev "$nic" | awk '{print $4}')
	say "$(hostname) up at $addr, serving http on :80"
fi

while :; do
	sleep 3600
done

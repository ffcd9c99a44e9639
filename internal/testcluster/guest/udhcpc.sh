#!/bin/sh
# udhcpc's script in the guest: applies a lease from KubeVirt's DHCP server
# (masquerade binding: 10.0.2.2/24, router 10.0.2.1, DNS, the VMI's hostname)
# or qemu's (10.0.2.15/24). What httpd serves is the hostname the lease gave.
case "$1" in
deconfig)
	ip -4 addr flush dev "$interface"
	ip link set "$interface" up
	;;
bound | renew)
	[ -n "$mtu" ] && ip link set "$interface" mtu "$mtu"
	[ "$1" = bound ] && ip -4 addr flush dev "$interface"
	ip addr replace "$ip/$mask" dev "$interface"
	for r in $router; do
		ip route replace default via "$r" dev "$interface"
		break
	done
	[ -n "$hostname" ] && hostname "$hostname"
	: >/etc/resolv.conf
	[ -n "$search" ] && echo "search $search" >>/etc/resolv.conf
	[ -z "$search" ] && [ -n "$domain" ] && echo "search $domain" >>/etc/resolv.conf
	for d in $dns; do
		echo "nameserver $d" >>/etc/resolv.conf
	done
	hostname >/www/index.html
	;;
esac
exit 0

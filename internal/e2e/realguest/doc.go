// Package realguest holds the end-to-end tests in which real guests boot in
// the VMs kubectl-vmctl derives: KubeVirt v1.7.0 (kubevirt.NodeRelease) from
// end to end on the harness's real node (package node: kubelet, kube-proxy,
// containerd, runc), with nothing below virt-controller a stand-in.
//
//   - virt-api and virt-controller run as in the other e2e packages, with the
//     KubeVirt CR's useEmulation on: this machine's /dev/kvm cannot run a
//     guest, so qemu runs under TCG and no launcher asks for a KVM device.
//   - KubeVirt's own virt-handler runs as the DaemonSet virt-operator makes
//     (kubevirt.StartHandler), with its node labeller and device plugins,
//     from images built here without Docker (package images): virt-handler's,
//     and virt-launcher's, which holds Debian's qemu and libvirt.
//   - The guest is a Debian kernel and a busybox initramfs (package guest)
//     that KubeVirt boots from a kernel-boot container. It takes its address
//     and hostname by DHCP from virt-launcher, says so on its serial console,
//     answers HTTP on port 80 with its hostname, runs a busy loop between
//     GET /cgi-bin/busy and /cgi-bin/idle, and powers off on ACPI's power
//     button.
//   - For the autoscaling test, metrics-server scrapes the node's kubelet
//     (metricsserver.Options.RealNodes), and vmctl-metrics-adapter runs as
//     the Pod of the Deployment `kubectl vmctl scaffold metrics-adapter`
//     prints, from the image under test, on the real node.
//
// They need root and the build tag `e2e`, and `make e2e`'s VMCTL_BINARY,
// VMCTL_IMAGE and VMCTL_IMAGE_ARCHIVE; without them they skip. Building
// KubeVirt's node side and its images takes about 15 minutes on 2 cores the
// first time; the builds are cached under .cache.
package realguest

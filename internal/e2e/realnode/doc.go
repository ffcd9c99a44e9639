// Package realnode holds the end-to-end tests that run kubectl-vmctl's agent
// image on a real node (package node: kubelet, kube-proxy, containerd, runc)
// beside a kwok node, with the manifests `kubectl vmctl scaffold` writes,
// unchanged but for --image. `make e2e` builds the image first (`make image`)
// and passes it as VMCTL_IMAGE (its name) and VMCTL_IMAGE_ARCHIVE (the
// tarball for this machine's architecture). They need root and the build tag
// `e2e`; without root, or without those variables, they skip.
//
// KubeVirt's real virt-api and virt-controller run too (package kubevirt),
// with the virt-handler stand-in (package doubles). For each derived VM,
// virt-controller makes a launcher Pod on the real node, and the real kubelet
// runs it as KubeVirt wrote it, from the node's stand-ins for the launcher
// and containerDisk images (node.LauncherImage, node.ContainerDiskImages),
// the only images here that KubeVirt's would be. The node carries what
// virt-handler's device plugins and node labeller would give it: the KVM, TUN
// and vhost-net devices as extended resources, and the labels launcher Pods
// are scheduled by.
//
// The cluster is this package's own, not internal/e2e's shared one: there the
// scaffolded Deployments and DaemonSets of other tests would land on the real
// node, whose runtime cannot pull their default image.
package realnode

// Package images builds the container images of KubeVirt's node side, the
// real virt-launcher and virt-handler images of a release, without Docker,
// for a harness node (internal/testcluster/node) that runs KubeVirt's own
// virt-handler DaemonSet and launcher Pods, guests under qemu's TCG.
//
// KubeVirt builds these images from CentOS Stream RPMs with Bazel. Ensure
// builds their counterparts from Debian 12 instead, as a real node would run
// them: debootstrap's minimal base with qemu, libvirt, virsh, nftables and
// the other packages KubeVirt's images hold (packages.go says which and why),
// KubeVirt's own configuration files, users and scripts from its source,
// the KubeVirt commands (built elsewhere, against Debian 12's libvirt) at
// KubeVirt's paths, and container-disk compiled static from KubeVirt's C
// source. Debian 12 ships libvirtd but no virtqemud: a shim at virtqemud's
// path runs libvirtd so that it answers where virt-launcher connects.
//
// One root file system serves both images, which share their one layer:
// the handler image holds the launcher's programs too, and the launcher's
// node-labeller.sh, which the handler's init container runs from the
// launcher image, finds what it needs either way. Only the entrypoint
// differs. hack/image writes the layer and the tarball.
//
// The tarball is cached under <repo>/.cache/kubevirt/images/<hash>, where
// the hash covers the version, the commands' contents, the KubeVirt source
// files used, this package's source and hack/image, so it is rebuilt only
// when one of those changes. Debian's packages are cached beside it (debs),
// so a rebuild downloads nothing new. Building needs root (debootstrap,
// chroot) and the tools hack/node-deps.sh installs.
//
//	imgs, err := images.Ensure(ctx, "v1.7.0", kubevirtSrc, binDir, "", os.Stderr)
//	...
//	// ctr -n k8s.io images import imgs.Tarball: loads imgs.Launcher and imgs.Handler
package images

package images

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/kubevirt"
)

// Images locates what Ensure built.
type Images struct {
	// Version is the KubeVirt release, such as v1.7.0.
	Version string
	// Launcher and Handler are the images' names, KubeVirt's own
	// (LauncherName, HandlerName), so KubeVirt's manifests and
	// virt-controller's --launcher-image name them unchanged.
	Launcher, Handler string
	// Tarball holds both images (docker save's format). They share their
	// one layer: one `ctr images import` loads both and stores it once.
	Tarball string
}

// LauncherName is the name of KubeVirt's virt-launcher image of version.
func LauncherName(version string) string { return "quay.io/kubevirt/virt-launcher:" + version }

// HandlerName is the name of KubeVirt's virt-handler image of version.
func HandlerName(version string) string { return "quay.io/kubevirt/virt-handler:" + version }

// kubevirtFiles are the files of KubeVirt's source that the images hold, by
// their path in the source and in the image.
var kubevirtFiles = []struct {
	src, dst string
	mode     os.FileMode
}{
	{"cmd/virt-launcher/qemu.conf", "/etc/libvirt/qemu.conf", 0o644},
	{"cmd/virt-launcher/virtqemud.conf", "/etc/libvirt/virtqemud.conf", 0o644},
	{"cmd/virt-launcher/nsswitch.conf", "/etc/nsswitch.conf", 0o644},
	{"cmd/virt-launcher/qemu", "/etc/libvirt/hooks/qemu", 0o755},
	{"cmd/virt-launcher/node-labeller/node-labeller.sh", "/usr/bin/node-labeller.sh", 0o755},
}

// containerDiskSrc is container-disk's C source in KubeVirt's; the launcher
// Pod copies the program into containers that have no libc, so it is
// compiled static.
const containerDiskSrc = "cmd/container-disk-v2alpha/main.c"

const (
	// imageRel is hack/image, which writes the layer and the tarball.
	imageRel = "hack/image"
	// packageRel is this package, whose source the cache key covers.
	packageRel  = "internal/testcluster/kubevirt/images"
	tarballName = "kubevirt-node-images.tar"
)

// Ensure returns KubeVirt version's virt-launcher and virt-handler images,
// building them first unless cacheDir holds them for the same inputs:
// kubevirtSrc is the source of kubevirt.io/kubevirt at version (its module
// directory), binDir holds kubevirt.NodeCommands built for Debian 12. cacheDir "" means
// <repo>/.cache/kubevirt/images. A file lock keeps concurrent callers from
// building twice; progress (nil discards) says what is built and how long
// it took. Building needs root, Linux on amd64, and what hack/node-deps.sh
// installs (debootstrap, gcc's static libc).
func Ensure(ctx context.Context, version, kubevirtSrc, binDir, cacheDir string, progress io.Writer) (Images, error) {
	if progress == nil {
		progress = io.Discard
	}
	root, err := testcluster.RepoRoot()
	if err != nil {
		return Images{}, err
	}
	if cacheDir == "" {
		cacheDir = filepath.Join(root, ".cache", "kubevirt", "images")
	}
	key, err := cacheKey(version, kubevirtSrc, binDir, filepath.Join(root, packageRel), filepath.Join(root, imageRel))
	if err != nil {
		return Images{}, err
	}
	in := inputs{version: version, src: kubevirtSrc, bin: binDir, debs: filepath.Join(cacheDir, "debs"), imageTool: filepath.Join(root, imageRel)}
	what := "KubeVirt " + version + "'s node images"
	dir, err := testcluster.CachedBuild(ctx, cacheDir, in.imageTool, key, what, progress, func(dir string) error {
		if err := canBuild(); err != nil {
			return err
		}
		return build(ctx, in, dir, progress)
	})
	if err != nil {
		return Images{}, err
	}
	imgs := Images{Version: version, Launcher: LauncherName(version), Handler: HandlerName(version), Tarball: filepath.Join(dir, tarballName)}
	if _, err := os.Stat(imgs.Tarball); err != nil {
		return Images{}, fmt.Errorf("%s built into %s but incomplete (%w); remove that directory and retry", what, dir, err)
	}
	return imgs, nil
}

// EnsureNode builds, or finds in the cache, KubeVirt's node side of the
// release the real node runs (kubevirt.NodeRelease) and then its images.
func EnsureNode(ctx context.Context, progress io.Writer) (Images, error) {
	node, err := kubevirt.EnsureNodeSide(ctx, kubevirt.NodeRelease, "", progress)
	if err != nil {
		return Images{}, err
	}
	return Ensure(ctx, node.Version, node.Source, node.Bin, "", progress)
}

// canBuild says what is missing to build the images here.
func canBuild() error {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		return fmt.Errorf("KubeVirt's node images are built for linux/amd64 only, on linux/amd64, not %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	if os.Geteuid() != 0 {
		return errors.New("building KubeVirt's node images needs root (debootstrap, chroot); run as root")
	}
	return nil
}

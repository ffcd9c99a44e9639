package guest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
)

// The image's name and its files, what a VMI's
// spec.domain.firmware.kernelBoot names.
const (
	// Name is what the image tarball is tagged, the kernel-boot container's
	// image.
	Name = "vmctl.test/guest:1"
	// KernelPath is the kernel in the image.
	KernelPath = "/boot/vmlinuz"
	// InitrdPath is the initramfs in the image.
	InitrdPath = "/boot/initramfs.gz"
	// KernelArgs is the guest's kernel command line: its console on the
	// first serial port, which KubeVirt's console log reads, and no check
	// of the timer interrupt, which under qemu's emulation on a loaded
	// host can miss its window and panic the boot ("IO-APIC + timer
	// doesn't work"), as cloud images' command lines also skip it.
	KernelArgs = "console=ttyS0 no_timer_check"
	// UID is the owner of the kernel and initramfs in the image: KubeVirt's
	// qemu user, which reads them.
	UID = 107
)

// Image locates what Ensure built.
type Image struct {
	// Tarball is the image, tagged Name, to import into the node's
	// containerd.
	Tarball string
	// Name, KernelPath and InitrdPath are the constants of the same names.
	Name, KernelPath, InitrdPath string
	// Kernel and Initrd are the image's two files on this machine, to boot
	// them with qemu directly.
	Kernel, Initrd string
}

const (
	pkgRel   = "internal/testcluster/guest"
	imageRel = "hack/image"
)

// Ensure builds the guest image into cacheDir/<hash> unless an earlier run
// did; cacheDir "" means <repo>/.cache/guest. Progress says what is built and
// how long it took (nil discards it). It needs apt-get and dpkg-deb (Debian
// 12) and the network the first time; amd64 only, as KubeVirt's nodes here.
func Ensure(ctx context.Context, cacheDir string, progress io.Writer) (Image, error) {
	if runtime.GOARCH != "amd64" {
		return Image{}, fmt.Errorf("the guest is built for amd64 only, not %s", runtime.GOARCH)
	}
	root, err := testcluster.RepoRoot()
	if err != nil {
		return Image{}, err
	}
	if cacheDir == "" {
		cacheDir = filepath.Join(root, ".cache", "guest")
	}
	pkgs, err := resolvePackages(ctx)
	if err != nil {
		return Image{}, err
	}
	key, err := sourceKey(root, pkgs)
	if err != nil {
		return Image{}, err
	}
	dir, err := testcluster.CachedBuild(ctx, cacheDir, filepath.Join(root, imageRel), key, "guest image", progress, func(dir string) error {
		return build(ctx, root, dir, pkgs, progress)
	})
	if err != nil {
		return Image{}, err
	}
	return imageIn(dir), nil
}

func imageIn(dir string) Image {
	return Image{
		Tarball:    filepath.Join(dir, "guest.tar"),
		Name:       Name,
		KernelPath: KernelPath,
		InitrdPath: InitrdPath,
		Kernel:     filepath.Join(dir, "vmlinuz"),
		Initrd:     filepath.Join(dir, "initramfs.gz"),
	}
}

// sourceKey names a build by what shapes it besides the image builder's
// module (CachedBuild hashes that): this package's files, the builder's
// source and the Debian packages.
func sourceKey(root string, pkgs packages) (string, error) {
	var files []string
	for _, pattern := range []string{pkgRel + "/*.go", pkgRel + "/*.sh", imageRel + "/*.go"} {
		m, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			return "", err
		}
		for _, f := range m {
			if !strings.HasSuffix(f, "_test.go") {
				files = append(files, f)
			}
		}
	}
	if len(files) == 0 {
		return "", errors.New("find the guest's source under " + root + "; run from the kubectl-vmctl checkout")
	}
	sort.Strings(files)
	h := sha256.New()
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("hash the guest's source: %w", err)
		}
		_, _ = fmt.Fprintf(h, "%s %d\n", strings.TrimPrefix(f, root), len(data))
		h.Write(data)
	}
	_, _ = fmt.Fprintf(h, "%s\n%s\n", pkgs.Kernel, pkgs.Busybox)
	return hex.EncodeToString(h.Sum(nil)), nil
}

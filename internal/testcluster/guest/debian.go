package guest

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// debPackage is a Debian package at one version.
type debPackage struct {
	Name, Version string
}

func (p debPackage) String() string { return p.Name + " " + p.Version }

// kernelMeta and busyboxPackage are what the guest is made of: the kernel that
// Debian 12's linux-image-amd64 names now, and busybox linked statically, as
// the initramfs has no libc.
const (
	kernelMeta     = "linux-image-amd64"
	busyboxPackage = "busybox-static"
)

// packages is what the guest is built from: the kernel package and busybox at
// the versions apt would install, so the cache key follows Debian's updates.
type packages struct {
	Kernel, Busybox debPackage
}

// release is the kernel's release, uname -r: its package's name without the
// prefix (linux-image-6.1.0-56-amd64 holds lib/modules/6.1.0-56-amd64).
func (p packages) release() string {
	return strings.TrimPrefix(p.Kernel.Name, "linux-image-")
}

// resolvePackages asks apt which versions it would install.
func resolvePackages(ctx context.Context) (packages, error) {
	out, err := exec.CommandContext(ctx, "apt-cache", "show", "--no-all-versions", kernelMeta, busyboxPackage).Output()
	if err != nil {
		return packages{}, fmt.Errorf("apt-cache show %s %s: %w; the guest is built from Debian's packages: run apt-get update (hack/node-deps.sh does) on Debian 12", kernelMeta, busyboxPackage, err)
	}
	return parsePackages(string(out))
}

// parsePackages reads `apt-cache show --no-all-versions` of the kernel's
// metapackage and busybox: the metapackage depends on the versioned kernel
// package, e.g. "linux-image-6.1.0-56-amd64 (= 6.1.192-2)".
func parsePackages(show string) (packages, error) {
	stanzas := map[string]map[string]string{}
	for _, block := range strings.Split(strings.TrimSpace(show), "\n\n") {
		fields := map[string]string{}
		for _, line := range strings.Split(block, "\n") {
			if k, v, ok := strings.Cut(line, ": "); ok && !strings.HasPrefix(line, " ") {
				fields[k] = v
			}
		}
		stanzas[fields["Package"]] = fields
	}
	meta, bb := stanzas[kernelMeta], stanzas[busyboxPackage]
	if meta == nil || bb == nil || bb["Version"] == "" {
		return packages{}, fmt.Errorf("apt knows no candidate for %s and %s; run apt-get update on Debian 12", kernelMeta, busyboxPackage)
	}
	kernel, err := versionedKernel(meta["Depends"])
	if err != nil {
		return packages{}, err
	}
	return packages{Kernel: kernel, Busybox: debPackage{busyboxPackage, bb["Version"]}}, nil
}

// versionedKernel picks the kernel package out of the metapackage's Depends.
func versionedKernel(depends string) (debPackage, error) {
	for _, dep := range strings.Split(depends, ",") {
		name, rest, _ := strings.Cut(strings.TrimSpace(dep), " ")
		version, ok := strings.CutPrefix(rest, "(= ")
		if strings.HasPrefix(name, "linux-image-") && ok && strings.HasSuffix(version, ")") {
			return debPackage{name, strings.TrimSuffix(version, ")")}, nil
		}
	}
	return debPackage{}, fmt.Errorf("%s depends on no linux-image-VERSION-amd64 (= VERSION) package (Depends: %q); is this Debian 12 on amd64?", kernelMeta, depends)
}

// fetch downloads pkgs with apt-get into dir and unpacks each into
// dir/<package name>, as dpkg would install it (without installing it).
func fetch(ctx context.Context, dir string, pkgs ...debPackage) error {
	args := []string{"download"}
	for _, p := range pkgs {
		args = append(args, p.Name+"="+p.Version)
	}
	cmd := exec.CommandContext(ctx, "apt-get", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("apt-get %s: %w; run apt-get update if apt no longer offers these versions\n%s", strings.Join(args, " "), err, out)
	}
	for _, p := range pkgs {
		debs, err := filepath.Glob(filepath.Join(dir, p.Name+"_*.deb"))
		if err != nil || len(debs) != 1 {
			return errors.New("apt-get download left no single " + p.Name + "_*.deb in " + dir)
		}
		if out, err := exec.CommandContext(ctx, "dpkg-deb", "-x", debs[0], filepath.Join(dir, p.Name)).CombinedOutput(); err != nil {
			return fmt.Errorf("dpkg-deb -x %s: %w\n%s", debs[0], err, out)
		}
	}
	return nil
}

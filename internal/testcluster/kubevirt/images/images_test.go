package images

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/kubevirt"
)

// keyFixture lays out every input of cacheKey in a temporary directory.
type keyFixture struct {
	src, bin, pkg, image string
}

func newKeyFixture(t *testing.T) keyFixture {
	t.Helper()
	root := t.TempDir()
	f := keyFixture{src: filepath.Join(root, "kubevirt"), bin: filepath.Join(root, "bin"), pkg: filepath.Join(root, "images"), image: filepath.Join(root, "image")}
	write := func(p, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range kubevirt.NodeCommands {
		write(filepath.Join(f.bin, c), "ELF "+c)
	}
	for _, kf := range kubevirtFiles {
		write(filepath.Join(f.src, kf.src), kf.src)
	}
	write(filepath.Join(f.src, containerDiskSrc), "int main() {}")
	write(filepath.Join(f.pkg, "build.go"), "package images")
	write(filepath.Join(f.pkg, "build_test.go"), "package images")
	write(filepath.Join(f.pkg, "files", "virtqemud"), "#!/bin/sh")
	write(filepath.Join(f.image, "rootfs.go"), "package main")
	return f
}

func (f keyFixture) key(t *testing.T, version string) string {
	t.Helper()
	k, err := cacheKey(version, f.src, f.bin, f.pkg, f.image)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestCacheKeyCoversTheInputs(t *testing.T) {
	for _, tc := range []struct {
		name    string
		change  func(f keyFixture) string // the file to append to
		version string
		same    bool
	}{
		{name: "a command", change: func(f keyFixture) string { return filepath.Join(f.bin, "virt-handler") }},
		{name: "a KubeVirt file", change: func(f keyFixture) string { return filepath.Join(f.src, "cmd/virt-launcher/qemu.conf") }},
		{name: "container-disk's source", change: func(f keyFixture) string { return filepath.Join(f.src, containerDiskSrc) }},
		{name: "this package's source", change: func(f keyFixture) string { return filepath.Join(f.pkg, "build.go") }},
		{name: "the shim", change: func(f keyFixture) string { return filepath.Join(f.pkg, "files", "virtqemud") }},
		{name: "hack/image's source", change: func(f keyFixture) string { return filepath.Join(f.image, "rootfs.go") }},
		{name: "the version", version: "v1.8.0"},
		{name: "a test", change: func(f keyFixture) string { return filepath.Join(f.pkg, "build_test.go") }, same: true},
		{name: "nothing", same: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newKeyFixture(t)
			before := f.key(t, "v1.7.0")
			if tc.change != nil {
				p := tc.change(f)
				b, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, append(b, " changed"...), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			version := "v1.7.0"
			if tc.version != "" {
				version = tc.version
			}
			if after := f.key(t, version); (after == before) != tc.same {
				t.Errorf("key before %s, after %s: want them the same: %v", before, after, tc.same)
			}
		})
	}
}

func TestCacheKeyNamesAMissingCommand(t *testing.T) {
	f := newKeyFixture(t)
	if err := os.Remove(filepath.Join(f.bin, "virt-chroot")); err != nil {
		t.Fatal(err)
	}
	_, err := cacheKey("v1.7.0", f.src, f.bin, f.pkg, f.image)
	if err == nil || !strings.Contains(err.Error(), "virt-chroot is not built") || !strings.Contains(err.Error(), "build KubeVirt's commands first") {
		t.Errorf("error %v, want one naming virt-chroot and what to do", err)
	}
}

func TestImageNamesAreKubeVirts(t *testing.T) {
	// KubeVirt's manifests and virt-controller's --launcher-image name
	// these; the node must hold the images under exactly them.
	if got := LauncherName("v1.7.0"); got != "quay.io/kubevirt/virt-launcher:v1.7.0" {
		t.Errorf("LauncherName = %s", got)
	}
	if got := HandlerName("v1.7.0"); got != "quay.io/kubevirt/virt-handler:v1.7.0" {
		t.Errorf("HandlerName = %s", got)
	}
}

func TestDebootstrapChecksWhatItDownloads(t *testing.T) {
	args := debootstrapArgs("/cache/debs", "/build/rootfs")
	for _, want := range []string{"--keyring=" + keyring, "--variant=minbase", "--cache-dir=/cache/debs", "--include=" + strings.Join(packages, ",")} {
		if !slices.Contains(args, want) {
			t.Errorf("debootstrap %s: want %s", strings.Join(args, " "), want)
		}
	}
	for _, a := range args {
		if strings.Contains(a, "no-check") {
			t.Errorf("debootstrap %s: %s skips the signature checks", strings.Join(args, " "), a)
		}
	}
	if diff := cmp.Diff([]string{"-n", "10", "debootstrap"}, args[:3]); diff != "" {
		t.Errorf("debootstrap runs niced (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{suite, "/build/rootfs", mirror}, args[len(args)-3:]); diff != "" {
		t.Errorf("debootstrap's suite, target and mirror (-want +got):\n%s", diff)
	}
}

func TestTrimKeepsLicences(t *testing.T) {
	rootfs := t.TempDir()
	files := []string{
		"usr/share/doc/libvirt0/copyright",
		"usr/share/doc/libvirt0/changelog.Debian.gz",
		"usr/share/man/man1/virsh.1.gz",
		"usr/share/locale/de/LC_MESSAGES/libvirt.mo",
		"var/lib/apt/lists/deb.debian.org_debian_dists_bookworm_InRelease",
		"var/cache/apt/archives/libvirt0.deb",
		"var/cache/apt/pkgcache.bin",
		"etc/libvirt/libvirt.conf",
	}
	for _, f := range files {
		p := filepath.Join(rootfs, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := trim(rootfs); err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, f := range files {
		if _, err := os.Stat(filepath.Join(rootfs, f)); err == nil {
			left = append(left, f)
		}
	}
	if diff := cmp.Diff([]string{"usr/share/doc/libvirt0/copyright", "etc/libvirt/libvirt.conf"}, left); diff != "" {
		t.Errorf("files left (-want +got):\n%s", diff)
	}
}

func TestMountsUnder(t *testing.T) {
	mountinfo := `22 1 0:21 / / rw,relatime - overlay overlay rw
31 22 0:5 / /build/rootfs/proc rw - proc proc rw
32 22 0:6 / /build/rootfs/sys rw - sysfs sysfs rw
33 22 0:7 /null /build/rootfs/dev/null rw - devtmpfs udev rw
34 22 0:8 / /build/rootfs/dev rw - tmpfs tmpfs rw
35 22 0:9 / /build/rootfs-other/proc rw - proc proc rw
36 22 0:10 / /build/with\040space/proc rw - proc proc rw
37 22 0:5 / /proc rw - proc proc rw
`
	want := []string{"/build/rootfs/sys", "/build/rootfs/proc", "/build/rootfs/dev/null", "/build/rootfs/dev"}
	if diff := cmp.Diff(want, mountsUnder(mountinfo, "/build/rootfs")); diff != "" {
		t.Errorf("mounts under /build/rootfs, innermost first (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"/build/with space/proc"}, mountsUnder(mountinfo, "/build/with space")); diff != "" {
		t.Errorf("an escaped mount point (-want +got):\n%s", diff)
	}
}

package guest

import (
	"strings"
	"testing"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
)

// show is `apt-cache show --no-all-versions linux-image-amd64 busybox-static`
// on Debian 12, trimmed.
const show = `Package: linux-image-amd64
Source: linux-signed-amd64 (6.1.192+2)
Version: 6.1.192-2
Installed-Size: 13
Depends: linux-image-6.1.0-56-amd64 (= 6.1.192-2)
Description-en: Linux for 64-bit PCs (meta-package)
 This package depends on the latest Linux kernel and modules for use on PCs
 with AMD64, Intel 64 or VIA Nano processors.
Description-md5: 5a4ae3bd0a7e3a1bb9f0b5c0d5d2d3c1

Package: busybox-static
Source: busybox (1:1.35.0-4+deb12u1)
Version: 1:1.35.0-4+deb12u1+b1
Replaces: busybox
Provides: busybox
Conflicts: busybox
Description-en: Standalone rescue shell with tons of builtin utilities
`

func TestParsePackages(t *testing.T) {
	got, err := parsePackages(show)
	if err != nil {
		t.Fatal(err)
	}
	want := packages{
		Kernel:  debPackage{"linux-image-6.1.0-56-amd64", "6.1.192-2"},
		Busybox: debPackage{"busybox-static", "1:1.35.0-4+deb12u1+b1"},
	}
	if got != want {
		t.Errorf("parsePackages: %+v, want %+v", got, want)
	}
	if r := got.release(); r != "6.1.0-56-amd64" {
		t.Errorf("release %q, want 6.1.0-56-amd64", r)
	}
}

func TestParsePackagesRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, show, want string
	}{
		{"no lists", "", "run apt-get update"},
		{"no busybox", strings.Split(show, "\n\n")[0], "run apt-get update"},
		{"unversioned kernel", strings.Replace(show, "(= 6.1.192-2)", "", 1), "depends on no linux-image"},
		{"another metapackage's depends", strings.Replace(show, "linux-image-6.1.0-56-amd64 (=", "linux-headers-6.1.0-56-amd64 (=", 1), "depends on no linux-image"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parsePackages(tc.show)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestVersionedKernelPicksTheImageAmongDepends(t *testing.T) {
	got, err := versionedKernel("initramfs-tools | linux-initramfs-tool, linux-image-6.1.0-56-amd64 (= 6.1.192-2)")
	if err != nil || got != (debPackage{"linux-image-6.1.0-56-amd64", "6.1.192-2"}) {
		t.Errorf("versionedKernel: %+v, %v; want linux-image-6.1.0-56-amd64 6.1.192-2", got, err)
	}
}

// TestSourceKeyFollowsTheDebianVersions: a Debian update of the kernel or
// busybox must rebuild the guest, the same versions must not.
func TestSourceKeyFollowsTheDebianVersions(t *testing.T) {
	root, err := testcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	pkgs, err := parsePackages(show)
	if err != nil {
		t.Fatal(err)
	}
	key := func(p packages) string {
		t.Helper()
		k, err := sourceKey(root, p)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	base := key(pkgs)
	if again := key(pkgs); again != base {
		t.Errorf("the same inputs made keys %s and %s", base, again)
	}
	newer := pkgs
	newer.Kernel = debPackage{"linux-image-6.1.0-57-amd64", "6.1.193-1"}
	if key(newer) == base {
		t.Error("a newer kernel made the same key")
	}
	newer = pkgs
	newer.Busybox.Version = "1:1.35.0-4+deb12u2"
	if key(newer) == base {
		t.Error("a newer busybox made the same key")
	}
}

package images

import (
	"context"
	_ "embed" // the shim and virtlogd.conf
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/kubevirt"
)

var (
	//go:embed files/virtqemud
	virtqemudShim []byte
	//go:embed files/virtlogd.conf
	virtlogdConf []byte
)

// inputs are what a build reads: the version, KubeVirt's source, the
// commands' directory, the cache of Debian's packages and hack/image.
type inputs struct {
	version, src, bin, debs, imageTool string
}

// buildEstimate is what a build takes on a 2-core machine: debootstrap 45s
// with its packages cached (55s downloading them from a fast mirror), the
// rest under a minute.
const buildEstimate = "about 2 minutes on 2 cores"

// rootPath is the PATH of the commands run in the tree.
const rootPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

func build(ctx context.Context, in inputs, dir string, progress io.Writer) (err error) {
	_, _ = fmt.Fprintf(progress, "building KubeVirt %s's virt-launcher and virt-handler images from Debian %s (%s) into %s...\n", in.version, suite, buildEstimate, dir)
	rootfs := filepath.Join(dir, "rootfs")
	// The tree is only the tarball's source: it goes, built or not.
	defer func() {
		if rerr := removeTree(rootfs); rerr != nil && err == nil {
			err = rerr
		}
	}()
	steps := []struct {
		what string
		run  func() error
	}{
		{"debootstrap " + suite, func() error { return debootstrap(ctx, in.debs, rootfs) }},
		{"the KubeVirt parts", func() error { return populate(ctx, in, rootfs) }},
		{"the image tarball", func() error { return writeTarball(ctx, in, rootfs, filepath.Join(dir, tarballName)) }},
	}
	for _, s := range steps {
		t := time.Now()
		if err := s.run(); err != nil {
			return err
		}
		_, _ = fmt.Fprintf(progress, "  built %-24s %s\n", s.what, time.Since(t).Round(time.Second))
	}
	return nil
}

// accounts add KubeVirt's qemu user and group (107), which non-root
// launchers run as and qemu.conf names, and libvirt-qemu, which Debian's
// libvirt is built to run qemu as and expects to exist.
var accounts = [][]string{
	{"groupadd", "--gid", "107", "qemu"},
	{"useradd", "--uid", "107", "--gid", "107", "--no-create-home", "--home-dir", "/home/qemu", "--shell", "/bin/bash", "qemu"},
	{"groupadd", "--system", "libvirt-qemu"},
	{"useradd", "--system", "--gid", "libvirt-qemu", "--no-create-home", "--home-dir", "/var/lib/libvirt", "--shell", "/usr/sbin/nologin", "libvirt-qemu"},
}

// populate turns Debian's tree into KubeVirt's: trimmed, with KubeVirt's
// users, files and commands, container-disk, the virtqemud shim and the
// file capabilities.
func populate(ctx context.Context, in inputs, rootfs string) error {
	if err := trim(rootfs); err != nil {
		return fmt.Errorf("trim the tree: %w", err)
	}
	for _, a := range accounts {
		if err := inChroot(ctx, rootfs, a...); err != nil {
			return err
		}
	}
	for _, f := range kubevirtFiles {
		if err := copyFile(filepath.Join(in.src, f.src), filepath.Join(rootfs, f.dst), f.mode); err != nil {
			return err
		}
	}
	for _, c := range kubevirt.NodeCommands {
		if err := copyFile(filepath.Join(in.bin, c), filepath.Join(rootfs, "usr", "bin", c), 0o755); err != nil {
			return err
		}
	}
	for _, f := range []struct {
		path    string
		content []byte
		mode    os.FileMode
	}{{"usr/sbin/virtqemud", virtqemudShim, 0o755}, {"etc/libvirt/virtlogd.conf", virtlogdConf, 0o644}} {
		if err := writeFile(filepath.Join(rootfs, f.path), f.content, f.mode); err != nil {
			return err
		}
	}
	cc := exec.CommandContext(ctx, "gcc", "-static", "-O2", "-o", filepath.Join(rootfs, "usr", "bin", "container-disk"), filepath.Join(in.src, containerDiskSrc))
	if out, err := cc.CombinedOutput(); err != nil {
		return fmt.Errorf("compile container-disk static: %w\n%s\nrun hack/node-deps.sh for gcc and its static libc", err, out)
	}
	for _, f := range capabilityFiles {
		if err := inChroot(ctx, rootfs, "setcap", "cap_net_bind_service=+ep", f); err != nil {
			return err
		}
	}
	return nil
}

// inChroot runs args in the tree, as root.
func inChroot(ctx context.Context, rootfs string, args ...string) error {
	cmd := exec.CommandContext(ctx, "chroot", append([]string{rootfs}, args...)...)
	cmd.Env = []string{rootPath}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s in the tree: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

func copyFile(src, dst string, mode os.FileMode) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return writeFile(dst, data, mode)
}

// writeFile writes dst with exactly mode, whatever the umask.
func writeFile(dst string, data []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(dst, data, mode); err != nil {
		return err
	}
	return os.Chmod(dst, mode)
}

// writeTarball has hack/image write both images of the tree to out, each
// with its command as entrypoint, as KubeVirt's are; their user is root, as
// KubeVirt's are too (a launcher Pod's securityContext sets 107 when the VMI
// runs as non-root).
func writeTarball(ctx context.Context, in inputs, rootfs, out string) error {
	cmd := exec.CommandContext(ctx, "nice", "-n", "10", "go", "run", ".", "build", "-rootfs", rootfs,
		"-platform", "linux/amd64", "-created", "0",
		"-image", LauncherName(in.version)+"=/usr/bin/virt-launcher",
		"-image", HandlerName(in.version)+"=/usr/bin/virt-handler",
		"-out", out)
	cmd.Dir = in.imageTool
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off",
		"GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -mod=readonly -buildvcs=false"))
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("hack/image build -rootfs: %w\n%s", err, b)
	}
	return nil
}

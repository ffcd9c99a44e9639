package guest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// build writes the kernel, the initramfs and the image tarball (imageIn's
// files) into dir.
func build(ctx context.Context, root, dir string, pkgs packages, progress io.Writer) error {
	if progress == nil {
		progress = io.Discard
	}
	_, _ = fmt.Fprintf(progress, "building the guest image from %s and %s (10-20 s, most of it downloading and unpacking the kernel) into %s...\n", pkgs.Kernel, pkgs.Busybox, dir)
	work, err := os.MkdirTemp("", "vmctl-guest-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(work) }()
	step := func(what string, start time.Time) {
		_, _ = fmt.Fprintf(progress, "  %-44s %s\n", what, time.Since(start).Round(100*time.Millisecond))
	}

	t := time.Now()
	if err := fetch(ctx, work, pkgs.Kernel, pkgs.Busybox); err != nil {
		return err
	}
	step("downloaded and unpacked the packages", t)

	t = time.Now()
	kernelRoot := filepath.Join(work, pkgs.Kernel.Name)
	img := imageIn(dir)
	kernel, err := os.ReadFile(filepath.Join(kernelRoot, "boot", "vmlinuz-"+pkgs.release()))
	if err != nil {
		return fmt.Errorf("read the kernel of %s: %w", pkgs.Kernel, err)
	}
	if err := writeFitted(img.Kernel, kernel); err != nil {
		return err
	}
	mods, err := kernelModules(filepath.Join(kernelRoot, "lib", "modules", pkgs.release()), guestModules())
	if err != nil {
		return err
	}
	busybox, err := os.ReadFile(filepath.Join(work, pkgs.Busybox.Name, "bin", "busybox"))
	if err != nil {
		return fmt.Errorf("read busybox from %s: %w", pkgs.Busybox, err)
	}
	var initrd bytes.Buffer
	if err := writeInitramfs(&initrd, initramfsEntries(busybox, mods)); err != nil {
		return fmt.Errorf("write the initramfs: %w", err)
	}
	if err := writeFitted(img.Initrd, initrd.Bytes()); err != nil {
		return err
	}
	names := make([]string, len(mods))
	for i, m := range mods {
		names[i] = m.Name
	}
	step(fmt.Sprintf("initramfs, %d KiB, modules %s", initrd.Len()>>10, strings.Join(names, " ")), t)

	t = time.Now()
	cmd := exec.CommandContext(ctx, "go", "run", ".", "build",
		"-file", img.Kernel+"="+KernelPath, "-file", img.Initrd+"="+InitrdPath,
		"-file-owner", strconv.Itoa(UID)+":"+strconv.Itoa(UID), "-user", strconv.Itoa(UID)+":"+strconv.Itoa(UID),
		"-platform", "linux/amd64", "-tag", Name, "-out", img.Tarball)
	cmd.Dir = filepath.Join(root, imageRel)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off",
		"GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -mod=readonly -buildvcs=false"))
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build the guest image: go %s in %s: %w\n%s", strings.Join(cmd.Args[1:], " "), cmd.Dir, err, out)
	}
	step("image "+Name, t)
	return nil
}

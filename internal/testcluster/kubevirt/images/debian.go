package images

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// debootstrapArgs are nice's arguments to run debootstrap at a lower
// priority: Debian's minimal base plus packages, checked against the
// archive's keyring, downloaded into (or taken from) debs.
func debootstrapArgs(debs, rootfs string) []string {
	return []string{"-n", "10", "debootstrap", "--variant=minbase", "--arch=amd64",
		"--keyring=" + keyring, "--cache-dir=" + debs, "--include=" + strings.Join(packages, ","),
		suite, rootfs, mirror}
}

func debootstrap(ctx context.Context, debs, rootfs string) error {
	if _, err := exec.LookPath("debootstrap"); err != nil {
		return errors.New("debootstrap is not installed; run hack/node-deps.sh")
	}
	debs, err := filepath.Abs(debs) // debootstrap wants it absolute
	if err != nil {
		return err
	}
	if err := os.MkdirAll(debs, 0o755); err != nil {
		return fmt.Errorf("create the cache of Debian's packages: %w", err)
	}
	cmd := exec.CommandContext(ctx, "nice", debootstrapArgs(debs, rootfs)...)
	// Interrupted, debootstrap unmounts what it mounted in the tree.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 30 * time.Second
	if out, err := cmd.CombinedOutput(); err != nil {
		log, _ := os.ReadFile(filepath.Join(rootfs, "debootstrap", "debootstrap.log"))
		return fmt.Errorf("debootstrap %s: %w\n%s\n(its log ends:)\n%s", suite, err, lastLines(out, 10), lastLines(log, 20))
	}
	return nil
}

// lastLines is the end of a command's output, n lines.
func lastLines(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// trim removes what the images need none of (trimmed), and the packages'
// documentation but for their licences.
func trim(rootfs string) error {
	for _, t := range trimmed {
		if err := os.RemoveAll(filepath.Join(rootfs, t)); err != nil {
			return err
		}
	}
	return filepath.WalkDir(filepath.Join(rootfs, "usr", "share", "doc"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == "copyright" {
			return err
		}
		return os.Remove(p)
	})
}

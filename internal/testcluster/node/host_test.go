//go:build linux

package node

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/ci"
)

// A shim started from a cache reached through a symlink runs under the
// resolved path, and cleanup must still find it.
func TestKillByExeFollowsSymlinks(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		ci.Skip(t, "no sleep binary")
	}
	data, err := os.ReadFile(sleep)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "bin")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "shim"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "cache")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(link, "shim"), "300")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	if err := killByExe(filepath.Join(link, "shim")); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		t.Logf("the process ended: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("the process started through the symlink still runs after killByExe")
	}
}

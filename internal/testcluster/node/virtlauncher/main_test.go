package main

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain runs the stand-in as the program VIRTLAUNCHER_AS names when the
// tests start the test binary that way: the long-running programs exit on a
// signal, which a test can only send to a process of its own.
func TestMain(m *testing.M) {
	if name := os.Getenv("VIRTLAUNCHER_AS"); name != "" {
		if err := run(name, os.Args[1:]); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// start runs the stand-in as name with args in a process of its own, and
// returns once it says it waits for SIGTERM.
func start(t *testing.T, name string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "VIRTLAUNCHER_AS="+name)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	line := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(stderr).ReadString('\n')
		line <- l
	}()
	select {
	case l := <-line:
		if !strings.Contains(l, "waiting for SIGTERM") {
			t.Fatalf("%s said %q, want it to wait for SIGTERM", name, l)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s said nothing in 10s", name)
	}
	return cmd
}

// terminate sends SIGTERM, as the kubelet does, and wants exit code 0.
func terminate(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("after SIGTERM: %v, want exit code 0", err)
	}
}

func TestCpCopiesTheFile(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "container-disk"), filepath.Join(dir, "init", "container-disk")
	if err := os.WriteFile(src, []byte("program"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Dir(dst), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := run("cp", []string{src, dst}); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(dst)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(dst); string(b) != "program" || info.Mode().Perm() != 0o755 {
		t.Errorf("copy holds %q mode %v, want %q mode 0755", b, info.Mode().Perm(), "program")
	}
}

// TestCpPreserveAll is KubeVirt v1.8's call: the copy keeps the source's
// modification time.
func TestCpPreserveAll(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "container-disk"), filepath.Join(dir, "copy")
	if err := os.WriteFile(src, []byte("program"), 0o755); err != nil {
		t.Fatal(err)
	}
	old := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := os.Chtimes(src, old, old); err != nil {
		t.Fatal(err)
	}
	if err := run("cp", []string{"--preserve=all", src, dst}); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(dst)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(dst); string(b) != "program" || info.Mode().Perm() != 0o755 || !info.ModTime().Equal(old) {
		t.Errorf("copy holds %q mode %v modified %v, want %q mode 0755 modified %v", b, info.Mode().Perm(), info.ModTime(), "program", old)
	}
}

func TestContainerDiskListensUntilSIGTERM(t *testing.T) {
	// As the launcher Pod has it: the volume is mounted at the path's parent,
	// which the container may still have to create.
	copyPath := filepath.Join(t.TempDir(), "container-disk-data", "disk_0")
	cmd := start(t, "container-disk", "--copy-path", copyPath)
	socket := copyPath + ".sock"
	conn, err := net.Dial("unix", socket)
	if err != nil {
		t.Fatalf("connect to the socket: %v", err)
	}
	_ = conn.Close()
	terminate(t, cmd)
	if _, err := os.Stat(socket); !os.IsNotExist(err) {
		t.Errorf("socket after SIGTERM: %v, want it removed", err)
	}
}

func TestLongRunningProgramsExitZeroOnSIGTERM(t *testing.T) {
	for _, name := range []string{"virt-launcher-monitor", "virt-tail"} {
		t.Run(name, func(t *testing.T) {
			terminate(t, start(t, name, "--any", "flags"))
		})
	}
}

func TestRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"container-disk", nil, "want --no-op or --copy-path PATH"},
		{"cp", []string{"one"}, "want [--preserve=all] SOURCE TARGET"},
		{"cp", []string{"--recursive", "one", "two"}, "want [--preserve=all] SOURCE TARGET"},
		{"virt-launcher", nil, "not a program this stand-in plays"},
	} {
		if err := run(tc.name, tc.args); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %q: %v, want an error containing %q", tc.name, tc.args, err, tc.want)
		}
	}
	if err := run("container-disk", []string{"--no-op"}); err != nil {
		t.Errorf("container-disk --no-op: %v, want nil", err)
	}
}

package node

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
)

// stopGrace is how long a daemon gets after SIGTERM before SIGKILL.
const stopGrace = 10 * time.Second

// daemon is one process the node runs: containerd, kubelet or kube-proxy.
type daemon struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	err     error
}

// startDaemon runs binary in its own process group (Ctrl-C reaches only the
// test, which stops the node in order) with Pdeathsig, its output in
// dir/<name>.log.
func startDaemon(name, dir, binary string, args, env []string) (*daemon, error) {
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open the %s log: %w", name, err)
	}
	_, _ = fmt.Fprintf(logFile, "# %s %s\n", binary, strings.Join(args, " "))
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = testcluster.SysProcAttr()
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	d := &daemon{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		d.err = cmd.Wait()
		_ = logFile.Close()
		close(d.done)
	}()
	return d, nil
}

func (d *daemon) exited() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

// exitError describes an early exit with the tail of the daemon's log.
func (d *daemon) exitError() error {
	return fmt.Errorf("%s exited (%w); its log %s ends with:\n%s", d.name, d.err, d.logPath, tail(d.logPath, 25))
}

// stop sends SIGTERM to the daemon's group, then SIGKILL after stopGrace.
func (d *daemon) stop() {
	if d.exited() {
		return
	}
	pgid := -d.cmd.Process.Pid
	_ = syscall.Kill(pgid, syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(stopGrace):
		_ = syscall.Kill(pgid, syscall.SIGKILL)
		<-d.done
	}
	_ = syscall.Kill(pgid, syscall.SIGKILL)
}

// tail returns the last n lines of the file at path.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// run runs a command to completion and returns its combined output.
func run(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

package testcluster

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// stopGrace is how long a component gets to exit after SIGTERM before SIGKILL.
const stopGrace = 5 * time.Second

// process is one running component.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{} // closed when the process has exited
	err     error         // exit status, valid after done

	// What it was started with, to start it again.
	dir, binary string
	args, env   []string
}

// startProcess runs binary with args, its output appended to dir/<name>.log.
func startProcess(name, dir, binary string, args []string, env []string) (*process, error) {
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open the %s log: %w", name, err)
	}
	_, _ = fmt.Fprintf(logFile, "# %s %s\n", binary, strings.Join(args, " "))
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = SysProcAttr()
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{}),
		dir: dir, binary: binary, args: args, env: env}
	go func() {
		p.err = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has ended.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// exitError describes an early exit with the tail of the component's log.
func (p *process) exitError() error {
	if p.err == nil {
		return fmt.Errorf("%s exited with status 0; its log %s ends with:\n%s", p.name, p.logPath, tail(p.logPath, 20))
	}
	return fmt.Errorf("%s exited: %w; its log %s ends with:\n%s", p.name, p.err, p.logPath, tail(p.logPath, 20))
}

// stop sends SIGTERM to the process group, then SIGKILL after stopGrace.
func (p *process) stop() { p.stopWith(syscall.SIGTERM) }

// stopWith sends sig to the process group, then SIGKILL after stopGrace.
func (p *process) stopWith(sig syscall.Signal) {
	if p.exited() {
		return
	}
	pgid := -p.cmd.Process.Pid
	_ = syscall.Kill(pgid, sig)
	select {
	case <-p.done:
	case <-time.After(stopGrace):
		_ = syscall.Kill(pgid, syscall.SIGKILL)
		<-p.done
	}
	// Anything the component forked in its group goes too.
	_ = syscall.Kill(pgid, syscall.SIGKILL)
}

// tail returns the last n lines of the file at path.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// waitFor polls check until it reports done, one of procs exits, or ctx ends.
func waitFor(ctx context.Context, what string, procs []*process, check func(context.Context) (bool, error)) error {
	var last error
	err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		for _, p := range procs {
			if p.exited() {
				return false, p.exitError()
			}
		}
		done, err := check(ctx)
		if err != nil {
			last = err
		}
		return done, nil
	})
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil && last != nil:
		return fmt.Errorf("wait for %s: %w (last error: %w)", what, err, last)
	default:
		return fmt.Errorf("wait for %s: %w", what, err)
	}
}

package testcluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// DefaultStopGrace is how long a process gets to exit after its stop signal
// before SIGKILL, unless its StopGrace says otherwise.
const DefaultStopGrace = 5 * time.Second

// Process is one running program of the harness: a cluster component or a
// node's daemon.
type Process struct {
	// StopGrace is how long Stop and StopWith wait before SIGKILL;
	// StartProcess sets DefaultStopGrace. Change it before stopping.
	StopGrace time.Duration

	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{} // closed when the process has exited
	err     error         // exit status, valid after done
	stopped atomic.Bool   // Stop or StopWith was called: its exit was asked for

	// What it was started with, to start it again.
	dir, binary string
	args, env   []string
}

// StartProcess runs binary with args in dir, its output appended to
// dir/<name>.log after a "# binary args" line. It gets its own process group
// with Pdeathsig (SysProcAttr): a terminal's Ctrl-C reaches only the test,
// which stops its processes in order, and a dying test takes them along.
func StartProcess(name, dir, binary string, args, env []string) (*Process, error) {
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
	p := &Process{StopGrace: DefaultStopGrace, name: name, cmd: cmd, logPath: logPath, done: make(chan struct{}),
		dir: dir, binary: binary, args: args, env: env}
	go func() {
		p.err = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// Pid is the process's ID.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Name is the name the process was started with.
func (p *Process) Name() string { return p.name }

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// ExitError describes an early exit with the tail of the process's log, where
// the reason usually is.
func (p *Process) ExitError() error {
	if p.err == nil {
		return fmt.Errorf("%s exited with status 0; its log %s ends with:\n%s", p.name, p.logPath, Tail(p.logPath, 20))
	}
	return fmt.Errorf("%s exited: %w; its log %s ends with:\n%s", p.name, p.err, p.logPath, Tail(p.logPath, 20))
}

// Restart stops the process and starts it again as it was started, and
// returns the new one.
func (p *Process) Restart() (*Process, error) {
	p.Stop()
	return StartProcess(p.name, p.dir, p.binary, p.args, p.env)
}

// Stop sends SIGTERM to the process group, then SIGKILL after StopGrace.
func (p *Process) Stop() { p.StopWith(syscall.SIGTERM) }

// StopWith sends sig to the process group, then SIGKILL after StopGrace.
func (p *Process) StopWith(sig syscall.Signal) {
	p.stopped.Store(true)
	if p.Exited() {
		return
	}
	pgid := -p.cmd.Process.Pid
	_ = syscall.Kill(pgid, sig)
	select {
	case <-p.done:
	case <-time.After(p.StopGrace):
		_ = syscall.Kill(pgid, syscall.SIGKILL)
		<-p.done
	}
	// Anything the process forked in its group goes too.
	_ = syscall.Kill(pgid, syscall.SIGKILL)
}

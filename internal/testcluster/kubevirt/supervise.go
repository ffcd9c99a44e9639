package kubevirt

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
)

// stopGrace is how long a component gets after SIGTERM before SIGKILL. virt-api
// waits 5s after SIGTERM for load balancers that are not here; its webhooks are
// gone by then, so it need not finish.
const stopGrace = 2 * time.Second

// supervised runs one KubeVirt component and starts it again whenever it
// exits, after a backoff with jitter: virt-controller and virt-api exit on
// their own to reinitialize when some cluster settings change (CDI or DRA
// appearing), as a Deployment's Pods would be restarted.
type supervised struct {
	name, binary, logPath string
	args, env             []string
	logf                  func(format string, args ...any)

	mu       sync.Mutex
	cmd      *exec.Cmd
	exited   chan struct{} // closed when the current run ends
	starts   int
	stopping chan struct{} // closed by stop
	done     chan struct{} // closed when the loop ends
}

// supervise starts binary with env (nil: this process's) and keeps it running
// until stop.
func supervise(name, binary, logPath string, args, env []string, logf func(string, ...any)) (*supervised, error) {
	s := &supervised{name: name, binary: binary, logPath: logPath, args: args, env: env, logf: logf,
		stopping: make(chan struct{}), done: make(chan struct{})}
	if err := s.start(); err != nil {
		return nil, err
	}
	go s.loop()
	return s, nil
}

// start runs the component once, unless stop was called.
func (s *supervised) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.isStopping() {
		return nil
	}
	logFile, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open the %s log: %w", s.name, err)
	}
	_, _ = fmt.Fprintf(logFile, "# %s %s\n", s.binary, strings.Join(s.args, " "))
	cmd := exec.Command(s.binary, s.args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = s.env
	cmd.SysProcAttr = testcluster.SysProcAttr()
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return fmt.Errorf("start %s: %w", s.name, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = logFile.Close()
		close(exited)
	}()
	s.cmd, s.exited = cmd, exited
	s.starts++
	return nil
}

func (s *supervised) loop() {
	defer close(s.done)
	backoff := testcluster.RestartBackoff()
	for {
		s.mu.Lock()
		cmd, exited := s.cmd, s.exited
		s.mu.Unlock()
		began := time.Now()
		<-exited
		if s.isStopping() {
			return
		}
		if time.Since(began) > testcluster.SteadyRun {
			backoff = testcluster.RestartBackoff()
		}
		delay := backoff.Step()
		s.logf("%s exited (%s); starting it again in %s (log: %s)", s.name, cmd.ProcessState, delay.Round(time.Millisecond), s.logPath)
		select {
		case <-s.stopping:
			return
		case <-time.After(delay):
		}
		if err := s.start(); err != nil {
			s.logf("%v", err)
			return
		}
	}
}

func (s *supervised) isStopping() bool {
	select {
	case <-s.stopping:
		return true
	default:
		return false
	}
}

// exitedOnce reports whether the component has exited since supervise
// started it, with the end of its log: a failure while starting up.
func (s *supervised) exitedOnce() error {
	s.mu.Lock()
	starts, exited := s.starts, s.exited
	s.mu.Unlock()
	select {
	case <-exited:
	default:
		if starts == 1 {
			return nil
		}
	}
	return fmt.Errorf("%s exited while starting; its log %s ends with:\n%s", s.name, s.logPath, testcluster.Tail(s.logPath, 20))
}

// pid is the running process's id, 0 when none runs.
func (s *supervised) pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.exited:
		return 0
	default:
		return s.cmd.Process.Pid
	}
}

// stop ends the component for good: SIGTERM to its process group, SIGKILL
// after stopGrace. Call it once.
func (s *supervised) stop() {
	s.mu.Lock()
	close(s.stopping)
	cmd, exited := s.cmd, s.exited
	s.mu.Unlock()
	pgid := -cmd.Process.Pid
	_ = syscall.Kill(pgid, syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(stopGrace):
		_ = syscall.Kill(pgid, syscall.SIGKILL)
		<-exited
	}
	_ = syscall.Kill(pgid, syscall.SIGKILL)
	<-s.done
}

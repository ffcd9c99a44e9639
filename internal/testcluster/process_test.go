package testcluster

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

func TestRetryPortConflict(t *testing.T) {
	exitWith := func(t *testing.T, c *Cluster, output string) *Process {
		t.Helper()
		p, err := c.start("fake", "/bin/sh", []string{"-c", "echo '" + output + "'; exit 1"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		<-p.done
		return p
	}
	tests := []struct {
		name         string
		firstOutput  string
		wantAttempts int
		wantErr      bool
		wantTracked  int // exited processes the cluster still reports
	}{
		{"a port conflict is retried", "listen tcp 127.0.0.1:1234: bind: address already in use", 2, false, 0},
		{"another failure is not", "invalid flag --foo", 1, true, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &Cluster{Dir: t.TempDir()}
			attempts := 0
			err := c.retryPortConflict(func() (*Process, error) {
				attempts++
				if attempts == 1 {
					return exitWith(t, c, tt.firstOutput), errors.New("fake exited")
				}
				return nil, nil
			})
			if (err != nil) != tt.wantErr || attempts != tt.wantAttempts {
				t.Errorf("got error %v after %d attempts, want error %v after %d", err, attempts, tt.wantErr, tt.wantAttempts)
			}
			// A retried failure must not count as a crash later on.
			if got := len(c.processes()); got != tt.wantTracked {
				t.Errorf("cluster tracks %d processes, want %d", got, tt.wantTracked)
			}
		})
	}
}

func TestProcessStop(t *testing.T) {
	c := &Cluster{Dir: t.TempDir()}
	p, err := c.start("sleeper", "/bin/sh", []string{"-c", "sleep 60 & wait"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	pid := p.cmd.Process.Pid
	start := time.Now()
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if !p.Exited() {
		t.Fatal("process still running after Stop")
	}
	if d := time.Since(start); d > DefaultStopGrace {
		t.Errorf("Stop took %s; SIGTERM should have ended the process", d)
	}
	// The whole process group goes, including the shell's child (which init
	// reaps, so give it a moment).
	var last error
	err = wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		last = syscall.Kill(-pid, 0)
		return errors.Is(last, syscall.ESRCH), nil
	})
	if err != nil {
		t.Errorf("process group %d still exists after Stop: kill -0: %v", pid, last)
	}
	if len(c.Pids()) != 0 {
		t.Errorf("Pids after Stop = %v, want none", c.Pids())
	}
}

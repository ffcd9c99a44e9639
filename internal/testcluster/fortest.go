package testcluster

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
	"testing"
)

// ForTest starts a cluster for t, building the binaries first if needed (build
// progress goes to stderr, as a cold build takes minutes), and stops it in
// t.Cleanup. When the test failed, the cleanup logs the tail of every
// component's log. A SIGINT or SIGTERM to the test process (Ctrl-C on `go test`)
// stops the cluster before the process dies.
func ForTest(t testing.TB, opts Options) *Cluster {
	t.Helper()
	ctx := t.Context()
	if opts.Binaries.Etcd == "" {
		b, err := EnsureBinaries(ctx, "", os.Stderr)
		if err != nil {
			t.Fatalf("build the control plane: %v", err)
		}
		opts.Binaries = b
	}
	c, err := Start(ctx, opts)
	if err != nil {
		t.Fatalf("start the test cluster: %v", err)
	}
	stopOnSignal := c.StopOnSignal()
	t.Cleanup(func() {
		stopOnSignal()
		if t.Failed() {
			for _, name := range []string{Etcd, KubeAPIServer, KubeControllerManager, KubeScheduler, Kwok} {
				t.Logf("%s log (last lines):\n%s", name, Tail(c.LogFile(name), 15))
			}
		}
		if err := c.Stop(); err != nil {
			t.Errorf("stop the test cluster: %v", err)
		}
	})
	return c
}

// StopOnSignal stops the cluster when the process gets SIGINT or SIGTERM and
// then lets the signal take its default course (the process exits). Call the
// returned function to stop listening, e.g. once the cluster was stopped
// normally. Pdeathsig already kills the components if the process dies, but
// only this way does Stop also remove the cluster's files.
func (c *Cluster) StopOnSignal() (cancel func()) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	var once sync.Once
	go func() {
		select {
		case sig := <-sigs:
			_ = c.Stop()
			signal.Stop(sigs)
			// Re-raise: with no handler left, the default action ends the process.
			if s, ok := sig.(syscall.Signal); ok {
				_ = syscall.Kill(os.Getpid(), s)
			}
		case <-done:
			signal.Stop(sigs)
		}
	}()
	return func() { once.Do(func() { close(done) }) }
}

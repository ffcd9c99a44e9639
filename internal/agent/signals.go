package agent

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// ShutdownContext returns a context that is canceled at the first SIGTERM or
// SIGINT, with the signal as its cause. A later SIGINT (a second Ctrl-C)
// calls exit(1) at once: whoever sends it no longer wants the VM cleaned up
// first. A repeated SIGTERM does not: `timeout`, shells and init processes
// that signal a whole process group deliver one SIGTERM twice, and the way to
// cut a Pod's shutdown short is SIGKILL. Call stop to restore default signal
// handling.
func ShutdownContext(parent context.Context, exit func(code int)) (ctx context.Context, stop func()) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, os.Interrupt)
	ctx, cancel := shutdownOn(parent, sigs, exit)
	return ctx, func() {
		signal.Stop(sigs)
		cancel()
	}
}

// shutdownOn is ShutdownContext over any channel of signals.
func shutdownOn(parent context.Context, sigs <-chan os.Signal, exit func(code int)) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-sigs:
			cancel(fmt.Errorf("received %v", sig))
		case <-done:
			return
		}
		for {
			select {
			case sig := <-sigs:
				if sig == os.Interrupt {
					exit(1)
					return
				}
			case <-done:
				return
			}
		}
	}()
	var once sync.Once
	return ctx, func() {
		once.Do(func() { close(done) })
		cancel(context.Canceled)
	}
}

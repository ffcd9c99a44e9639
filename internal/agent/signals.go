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
// SIGINT, with the signal as its cause. A second signal calls exit(1) at once:
// whoever sends it no longer wants the VM cleaned up first. Call stop to
// restore default signal handling.
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
		select {
		case <-sigs:
			exit(1)
		case <-done:
		}
	}()
	var once sync.Once
	return ctx, func() {
		once.Do(func() { close(done) })
		cancel(context.Canceled)
	}
}

package agent

import (
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestShutdownOn(t *testing.T) {
	sigs := make(chan os.Signal, 2)
	exits := make(chan int, 1)
	ctx, stop := shutdownOn(context.Background(), sigs, func(code int) { exits <- code })
	defer stop()

	if ctx.Err() != nil {
		t.Fatal("context canceled before any signal")
	}
	sigs <- syscall.SIGTERM
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("first SIGTERM did not cancel the context")
	}
	if cause := context.Cause(ctx); cause == nil || !strings.Contains(cause.Error(), "terminated") {
		t.Errorf("context.Cause() = %v, want it to name the signal", cause)
	}
	select {
	case code := <-exits:
		t.Fatalf("exit(%d) after the first signal; want a graceful shutdown", code)
	default:
	}

	// A process group's second copy of SIGTERM is no reason to give up on
	// deleting the VM.
	sigs <- syscall.SIGTERM
	select {
	case code := <-exits:
		t.Fatalf("exit(%d) after a repeated SIGTERM; want the graceful shutdown to go on", code)
	case <-time.After(100 * time.Millisecond):
	}

	sigs <- os.Interrupt
	select {
	case code := <-exits:
		if code != 1 {
			t.Errorf("SIGINT during shutdown: exit(%d), want exit(1)", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("SIGINT during shutdown did not exit")
	}
}

func TestShutdownOnStopIsIdempotent(t *testing.T) {
	sigs := make(chan os.Signal, 1)
	ctx, stop := shutdownOn(context.Background(), sigs, func(code int) { t.Errorf("exit(%d) without a signal", code) })
	stop()
	stop()
	if ctx.Err() == nil {
		t.Error("stop did not cancel the context")
	}
}

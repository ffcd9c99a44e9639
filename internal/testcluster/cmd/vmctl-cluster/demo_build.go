package main

import (
	"context"
	"io"
	"time"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/metricsserver"
)

// backgroundBuild is metrics-server's build, begun as the demo starts and
// run at the lowest priority beside the cluster's start and the first
// steps, so that a first demo does not wait for it up front: cold, it
// takes minutes, more than those steps (docs/development.md, "CI, and
// build times"). With it in .cache, it is done at once.
type backgroundBuild struct {
	began time.Time
	done  chan struct{}
	bin   string // valid after done
	err   error  // valid after done
}

// startMetricsServerBuild begins the build; ctx's end stops it.
func startMetricsServerBuild(ctx context.Context, progress io.Writer) *backgroundBuild {
	b := &backgroundBuild{began: time.Now(), done: make(chan struct{})}
	go func() {
		defer close(b.done)
		b.bin, b.err = metricsserver.EnsureBinaryBeside(ctx, "", progress)
	}()
	return b
}

// wait returns the binary once the build is done, saying so when the
// demo has to wait for it. It waits as long as the build takes: stopping
// the build would only make the next demo start it again.
func (b *backgroundBuild) wait(ctx context.Context, r *demoRunner) (string, error) {
	select {
	case <-b.done:
		return b.bin, b.err
	default:
	}
	r.printf("\nmetrics-server's build, begun at nice 19 %s ago, is not done yet; waiting for it (5 to 6 minutes of CPU with empty Go caches)...\n",
		time.Since(b.began).Round(time.Second))
	start := time.Now()
	select {
	case <-b.done:
		if b.err == nil {
			r.printf("metrics-server built, after %s of waiting\n", time.Since(start).Round(time.Second))
		}
		return b.bin, b.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

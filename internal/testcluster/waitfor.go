package testcluster

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// WaitFor polls check until it reports done, one of procs exits, or ctx ends.
// An exit fails at once with the process's log, rather than at the timeout.
func WaitFor(ctx context.Context, what string, procs []*Process, check func(context.Context) (bool, error)) error {
	var last error
	err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		for _, p := range procs {
			if p.Exited() {
				return false, p.ExitError()
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

package testcluster

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"
)

// controllerManagerSteady is how long a restarted kube-controller-manager
// must keep running before RestartControllerManager takes it for up: with
// --secure-port=0 it serves no health endpoint to ask, and a bad start
// (flags, kubeconfig) ends it within a second.
const controllerManagerSteady = 2 * time.Second

// RestartControllerManager stops kube-controller-manager with sig (SIGKILL
// plays a crash, SIGTERM a graceful stop) and starts it again at once with
// the same flags. Its controllers then list everything afresh, as after a
// real restart; it returns once the new process has run for a moment.
func (c *Cluster) RestartControllerManager(ctx context.Context, sig syscall.Signal) error {
	old := c.process(KubeControllerManager)
	if old == nil || old.Exited() {
		return errors.New("kube-controller-manager is not running")
	}
	old.StopWith(sig)
	c.logf("kube-controller-manager stopped with %v", sig)
	c.forget(old)
	p, err := c.start(old.name, old.binary, old.args, old.env)
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-p.done:
		return fmt.Errorf("after its restart: %w", p.ExitError())
	case <-time.After(controllerManagerSteady):
	}
	c.logf("kube-controller-manager started again")
	return nil
}

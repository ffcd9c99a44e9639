package testcluster

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"
)

// RestartAPIServer stops kube-apiserver with sig (SIGKILL plays a crash or
// an OOM kill, SIGTERM a graceful stop), runs meanwhile while it is down
// (when not nil), keeps it down for down in all, and starts it again with the
// same flags, port and etcd. It returns once the new API server is ready.
// Every client of the cluster (components, agents, tests) keeps its
// configuration: only their connections break.
func (c *Cluster) RestartAPIServer(ctx context.Context, sig syscall.Signal, down time.Duration, meanwhile func() error) error {
	old := c.process(KubeAPIServer)
	if old == nil || old.Exited() {
		return errors.New("kube-apiserver is not running")
	}
	stopped := time.Now()
	old.StopWith(sig)
	c.logf("kube-apiserver stopped with %v", sig)
	if meanwhile != nil {
		if err := meanwhile(); err != nil {
			return fmt.Errorf("while kube-apiserver was down: %w", err)
		}
	}
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-time.After(time.Until(stopped.Add(down))):
	}
	c.forget(old)
	if _, err := c.start(old.name, old.binary, old.args, old.env); err != nil {
		return err
	}
	if err := c.waitAPIServerReady(ctx); err != nil {
		return err
	}
	c.logf("kube-apiserver ready again")
	return nil
}

// process returns the component called name, or nil.
func (c *Cluster) process(name string) *Process {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.procs {
		if p.name == name {
			return p
		}
	}
	return nil
}

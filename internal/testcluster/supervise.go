package testcluster

import (
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// restartsOnExit are the components started again when they exit on their
// own, as a kubelet restarts a control plane's static Pods. kube-scheduler
// exits by design when it finds its cache corrupted ("Pod updated on a
// different node than previously added to"), which a watch that lists again
// after an etcd restart can bring about with a StatefulSet Pod made again
// under its old name, and counts on being restarted: without that, no Pod
// would be scheduled again.
var restartsOnExit = map[string]bool{KubeScheduler: true, KubeControllerManager: true}

// SteadyRun is how long a component must run for its restart backoff to
// start over, as a kubelet resets a container's crash-loop backoff.
const SteadyRun = time.Minute

// RestartBackoff is the delay between restarts of a component that exits on
// its own: 0.5 s doubling to at most 30 s, with jitter so that components
// that exit together do not come back together.
func RestartBackoff() wait.Backoff {
	return wait.Backoff{Duration: 500 * time.Millisecond, Factor: 2, Jitter: 0.5, Steps: 1 << 30, Cap: 30 * time.Second}
}

// restartOnExit waits for p to exit and, unless that was asked for (Stop,
// StopWith, a Restart*, the cluster's Stop), starts it again with the same
// flags after RestartBackoff.
func (c *Cluster) restartOnExit(p *Process) {
	began := time.Now()
	<-p.done
	if p.stopped.Load() {
		return
	}
	c.mu.Lock()
	if c.stopping {
		c.mu.Unlock()
		return
	}
	if c.restarts == nil {
		c.restarts = map[string]*wait.Backoff{}
	}
	b := c.restarts[p.name]
	if b == nil || time.Since(began) > SteadyRun {
		nb := RestartBackoff()
		b = &nb
		c.restarts[p.name] = b
	}
	delay := b.Step()
	c.mu.Unlock()
	c.logf("%s exited on its own (%v); starting it again in %s, as a kubelet would", p.name, p.err, delay.Round(time.Millisecond))
	time.Sleep(delay)
	c.mu.Lock()
	stopping := c.stopping
	c.mu.Unlock()
	if stopping {
		return
	}
	c.forget(p)
	if _, err := c.start(p.name, p.binary, p.args, p.env); err != nil {
		c.logf("%v", err)
	}
}

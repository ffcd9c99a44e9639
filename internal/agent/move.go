package agent

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
)

// Reasons of the Events an agent that gives up its node records.
const (
	// ReasonMoving: the VM could not be scheduled on the Pod's node for
	// MoveAfter, so the agent asks the Eviction API to evict its own Pod.
	ReasonMoving = "MovingVM"
	// ReasonMoveBlocked: the eviction was refused, most often by a
	// PodDisruptionBudget; the agent asks again later.
	ReasonMoveBlocked = "MoveBlocked"
)

// mover gives up a node the VM cannot be scheduled on. When the VM has been
// unschedulable for after without a break, it evicts the agent's own Pod
// through the Eviction API, so that the workload's PodDisruptionBudget paces
// it and its controller makes a replacement that the scheduler places where
// the VM fits. The agent's shutdown then deletes the VM as always.
//
// It never loops: it evicts at most once per Pod, and only a Pod that runs
// (so one the scheduler placed) can ask. A replacement that fits nowhere
// stays Pending, and a Pending Pod runs no agent.
type mover struct {
	after time.Duration
	// giveUp evicts the Pod, retrying until it is evicted (true) or ctx
	// ends (false).
	giveUp func(ctx context.Context) bool

	mu      sync.Mutex
	timer   *time.Timer
	cancel  context.CancelFunc // of the eviction in progress
	evicted bool
}

// notice is told, on every change of the VM, whether it is unschedulable on
// the Pod's node. The first time it is, notice starts the clock; any other
// state stops it, and an eviction still being asked for.
func (m *mover) notice(ctx context.Context, unschedulable bool) {
	if m == nil || m.after <= 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.evicted:
	case !unschedulable:
		m.stopLocked()
	case m.timer == nil:
		gctx, cancel := context.WithCancel(ctx)
		m.cancel = cancel
		m.timer = time.AfterFunc(m.after, func() {
			if m.giveUp(gctx) {
				m.mu.Lock()
				m.evicted = true
				m.mu.Unlock()
			}
		})
	}
}

func (m *mover) stopLocked() {
	if m.timer != nil {
		m.timer.Stop()
		m.timer = nil
	}
	if m.cancel != nil {
		m.cancel()
		m.cancel = nil
	}
}

// giveUp evicts the agent's own Pod to move its VM (see mover). It reports
// whether the Pod was evicted.
func (a *Agent) giveUp(ctx context.Context) bool {
	if ctx.Err() != nil {
		return false
	}
	a.report.fail(ctx, &problem{reason: ReasonMoving, msg: fmt.Sprintf(
		"VM %s/%s could not be scheduled on node %s for %v; evicting Pod %s so that a new Pod is placed where the VM fits",
		a.cfg.Namespace, a.VMName(), a.pod.Node, a.cfg.MoveAfter, a.podRef())})
	return a.evictSelf(ctx, "to move VM", func(ctx context.Context, msg string, err error) {
		a.report.fail(ctx, &problem{reason: ReasonMoveBlocked, msg: msg, err: err})
	})
}

// evictSelf evicts the agent's own Pod through the Eviction API, with its
// UID as precondition, asking again with the agent's backoff while the
// eviction is refused (blocked is told each refusal), until it succeeds or
// ctx ends (the Pod is stopping, or what asked for it passed). It reports
// whether the Pod was evicted. why ends the sentence "evicting Pod P
// ... VM V".
func (a *Agent) evictSelf(ctx context.Context, why string, blocked func(ctx context.Context, msg string, err error)) bool {
	ref := a.podRef()
	b := a.cfg.backoff()
	for {
		err := a.pods.evict(ctx, a.pod.PodNamespace, a.pod.PodName, a.pod.PodUID)
		if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			// Evicted; or already gone, or a later Pod of the same name (a
			// StatefulSet's), which the UID precondition kept safe.
			klog.FromContext(ctx).Info("Evicted own Pod", "pod", ref, "error", err)
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		msg := fmt.Sprintf("evicting Pod %s %s %s/%s: %v", ref, why, a.cfg.Namespace, a.VMName(), err)
		if apierrors.IsTooManyRequests(err) {
			msg += "; a PodDisruptionBudget allows no disruption now, and the agent asks again"
		}
		blocked(ctx, msg, err)
		if !sleep(ctx, b.Step()) {
			return false
		}
	}
}

// podRef is the agent's Pod as namespace/name.
func (a *Agent) podRef() string { return a.pod.PodNamespace + "/" + a.pod.PodName }

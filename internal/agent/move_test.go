package agent

import (
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/stuck"
)

// evictions records the agent's eviction requests and answers the first
// refusals of them as a PodDisruptionBudget would.
type evictions struct {
	mu       sync.Mutex
	asked    []*policyv1.Eviction
	refusals int
}

func (e *evictions) react(action k8stesting.Action) (bool, runtime.Object, error) {
	if action.GetSubresource() != "eviction" {
		return false, nil, nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	ev := action.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction)
	e.asked = append(e.asked, ev)
	if len(e.asked) <= e.refusals {
		return true, nil, apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
	}
	return true, ev, nil
}

func (e *evictions) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.asked)
}

// armed reports whether the mover's clock runs, or ran out: it saw the VM
// unschedulable with nothing to excuse it.
func (m *mover) armed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.timer != nil
}

func newMoveHarness(t *testing.T, after time.Duration, refusals int) (*harness, *evictions) {
	cfg := testConfig()
	cfg.MoveAfter = after
	h := newHarness(t, cfg, []*kubevirtv1.VirtualMachine{prototype(testProto)})
	ev := &evictions{refusals: refusals}
	h.kube.PrependReactor("create", "pods", ev.react)
	h.start()
	h.watchFollowed()
	return h, ev
}

func (h *harness) setUnschedulable() {
	vm := h.api.object(testVM)
	vm.Status.Ready, vm.Status.PrintableStatus = false, kubevirtv1.VirtualMachineStatusUnschedulable
	vm.Status.Conditions = []kubevirtv1.VirtualMachineCondition{{
		Type: "PodScheduled", Status: corev1.ConditionFalse, Reason: "Unschedulable",
		Message: "0/3 nodes are available: 1 Insufficient memory, 2 node(s) didn't match Pod's node affinity/selector.",
	}}
	h.api.put(vm)
}

func (h *harness) setRunning() {
	vm := h.api.object(testVM)
	vm.Status.Conditions, vm.Status.Ready, vm.Status.PrintableStatus = nil, true, kubevirtv1.VirtualMachineStatusRunning
	h.api.put(vm)
}

// TestUnschedulableVMMovesPacedByTheBudget: a VM unschedulable on its node
// for --move-after makes the agent evict its own Pod, by UID; while a
// PodDisruptionBudget refuses, it says so and asks again; once evicted, it
// asks no more.
func TestUnschedulableVMMovesPacedByTheBudget(t *testing.T) {
	const after = 50 * time.Millisecond
	h, ev := newMoveHarness(t, after, 2)
	start := time.Now()
	h.setUnschedulable()

	h.eventually("three eviction requests", func() bool { return ev.count() == 3 })
	if took := time.Since(start); took < after {
		t.Errorf("first eviction after %v; want no sooner than --move-after=%v", took, after)
	}
	for i, e := range ev.asked {
		if e.Name != testPod || e.Namespace != testNamespace {
			t.Errorf("eviction %d is of %s/%s; want the agent's own Pod %s/%s", i, e.Namespace, e.Name, testNamespace, testPod)
		}
		if e.DeleteOptions == nil || e.DeleteOptions.Preconditions == nil || e.DeleteOptions.Preconditions.UID == nil ||
			*e.DeleteOptions.Preconditions.UID != testPodUID {
			t.Errorf("eviction %d has no UID precondition of %s: %+v", i, testPodUID, e.DeleteOptions)
		}
	}
	moving := h.waitEvent(corev1.EventTypeWarning, ReasonMoving)
	if want := "could not be scheduled on node " + testNode; !strings.Contains(moving.Message, want) {
		t.Errorf("MovingVM Event = %q; want it to contain %q", moving.Message, want)
	}
	blocked := h.waitEvent(corev1.EventTypeWarning, ReasonMoveBlocked)
	if want := "a PodDisruptionBudget allows no disruption now"; !strings.Contains(blocked.Message, want) {
		t.Errorf("MoveBlocked Event = %q; want it to contain %q", blocked.Message, want)
	}

	// Still unschedulable, and more changes of the VM: no second eviction.
	// Once the agent observed the change, its mover had its say: it
	// started no new clock (the one that evicted stays), so nothing can
	// ask again.
	fired := h.agent.move.clock()
	h.setUnschedulable()
	h.observed(h.api.object(testVM).ResourceVersion)
	if now := h.agent.move.clock(); now != fired {
		t.Errorf("the mover started a new clock after the Pod was evicted: it would evict again in %v", after)
	}
	if n := ev.count(); n != 3 {
		t.Errorf("eviction requests = %d after the Pod was evicted; want 3", n)
	}
}

// clock is the mover's clock: the timer that evicts when it runs out.
func (m *mover) clock() *time.Timer {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.timer
}

// TestSchedulableInTimeStaysPut: a VM that is scheduled again within
// --move-after stops the clock of its move, and so keeps its Pod; one
// whose agent does not move (--move-after=0, a DaemonSet's) never starts
// it.
func TestSchedulableInTimeStaysPut(t *testing.T) {
	for name, tc := range map[string]struct {
		after   time.Duration
		recover bool
	}{
		"scheduled again in time": {after: time.Hour, recover: true},
		"never moves":             {after: 0},
	} {
		t.Run(name, func(t *testing.T) {
			h, ev := newMoveHarness(t, tc.after, 0)
			h.setUnschedulable()
			h.waitReadyz(503, stuck.ReasonUnschedulable)
			if tc.recover {
				if !h.agent.move.armed() {
					t.Error("the clock of the move did not start on an unschedulable VM")
				}
				h.setRunning()
				h.waitReadyz(200, "ok")
			}
			// /readyz says what observe saw after it told the mover.
			if h.agent.move.armed() {
				t.Error("the clock of the move runs")
			}
			if n := ev.count(); n != 0 {
				t.Errorf("eviction requests = %d; want none", n)
			}
		})
	}
}

package agent

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/stuck"
)

// TestStuckVMSaysWhyOncePerCause: a VM KubeVirt cannot start makes /readyz
// name the state and posts one Warning Event per distinct cause, in
// status's words; it asks the API server nothing more.
func TestStuckVMSaysWhyOncePerCause(t *testing.T) {
	h := newHarness(t, Config{}, []*kubevirtv1.VirtualMachine{prototype(testProto)})
	h.start()
	h.watchFollowed()
	requests := len(h.api.requestLog())

	unschedulable := func(msg string) {
		vm := h.api.object(testVM)
		vm.Status.PrintableStatus = kubevirtv1.VirtualMachineStatusUnschedulable
		vm.Status.Conditions = []kubevirtv1.VirtualMachineCondition{{
			Type: "PodScheduled", Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: msg,
		}}
		h.api.put(vm)
	}
	unschedulable("0/3 nodes are available: 1 Insufficient memory, 2 node(s) didn't match Pod's node affinity/selector.")
	h.waitReadyz(503, stuck.ReasonUnschedulable)
	ev := h.waitEvent(corev1.EventTypeWarning, stuck.ReasonUnschedulable)
	if want := "VM cannot be scheduled on its node: Insufficient memory"; ev.Message != want {
		t.Errorf("Event message = %q; want %q", ev.Message, want)
	}
	// The same cause again (the scheduler's count of nodes moved): no
	// second Event. Another cause: one more.
	unschedulable("0/4 nodes are available: 1 Insufficient memory, 3 node(s) didn't match Pod's node affinity/selector.")
	unschedulable("0/4 nodes are available: 1 Insufficient cpu, 3 node(s) didn't match Pod's node affinity/selector.")
	h.eventually("an Event for the second cause", func() bool { return len(h.stuckEvents()) == 2 })
	want := []string{"VM cannot be scheduled on its node: Insufficient memory", "VM cannot be scheduled on its node: Insufficient cpu"}
	if diff := cmp.Diff(want, h.stuckEvents()); diff != "" {
		t.Errorf("VMUnschedulable Events (-want +got):\n%s", diff)
	}

	vm := h.api.object(testVM)
	vm.Status.Conditions, vm.Status.Ready, vm.Status.PrintableStatus = nil, true, kubevirtv1.VirtualMachineStatusRunning
	h.api.put(vm)
	h.waitReadyz(200, "ok")
	if after := h.requestsAfter(requests); len(after) > 0 {
		t.Errorf("requests while the VM was stuck: %q; want none", after)
	}
}

func (h *harness) stuckEvents() []string {
	var out []string
	for _, e := range h.events() {
		if e.Reason == stuck.ReasonUnschedulable {
			out = append(out, e.Message)
		}
	}
	return out
}

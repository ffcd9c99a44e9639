package agent

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/placement"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/stuck"
)

// TestPlacementChanged: an agent whose template carries an older placement
// of its prototype makes its VM all the same, records one Warning Event,
// and /readyz names the placement while the VM is not ready; once the VM
// runs, the Pod is Ready.
func TestPlacementChanged(t *testing.T) {
	proto := prototype(testProto)
	scaffolded := placement.Key(proto)
	proto.Spec.Template.Spec.NodeSelector = map[string]string{"pool": "gpu"}
	cfg := testConfig()
	cfg.PlacementKey = scaffolded
	h := newHarness(t, cfg, []*kubevirtv1.VirtualMachine{proto})
	h.start()
	h.watchFollowed()

	if h.api.object(testVM) == nil {
		t.Fatal("the agent made no VM")
	}
	ev := h.waitEvent(corev1.EventTypeWarning, ReasonPlacementChanged)
	for _, want := range []string{"placement of prototype default/testvm", "key " + scaffolded, "node node-1", "kubectl vmctl rollout restart testvm -n default"} {
		if !strings.Contains(ev.Message, want) {
			t.Errorf("Event message %q lacks %q", ev.Message, want)
		}
	}
	h.waitReadyz(503, ReasonPlacementChanged)

	// The node does not meet the new rules: the VM is unschedulable, which
	// has its own Event; /readyz still names the cause.
	vm := h.api.object(testVM)
	vm.Status.PrintableStatus = kubevirtv1.VirtualMachineStatusUnschedulable
	vm.Status.Conditions = []kubevirtv1.VirtualMachineCondition{{Type: "PodScheduled", Status: corev1.ConditionFalse,
		Message: "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."}}
	h.api.put(vm)
	h.waitEvent(corev1.EventTypeWarning, stuck.ReasonUnschedulable)
	h.waitReadyz(503, ReasonPlacementChanged)

	vm = h.api.object(testVM)
	vm.Status.Conditions, vm.Status.Ready, vm.Status.PrintableStatus = nil, true, kubevirtv1.VirtualMachineStatusRunning
	h.api.put(vm)
	h.waitReadyz(200, "ok")
	n := 0
	for _, e := range h.events() {
		if e.Reason == ReasonPlacementChanged {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d PlacementChanged Events, want 1", n)
	}
}

// TestPlacementUnchanged: a template that carries the prototype's placement,
// or none at all, draws no PlacementChanged.
func TestPlacementUnchanged(t *testing.T) {
	for name, key := range map[string]string{"same": placement.Key(prototype(testProto)), "none": ""} {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig()
			cfg.PlacementKey = key
			h := newHarness(t, cfg, []*kubevirtv1.VirtualMachine{prototype(testProto)})
			h.start()
			h.watchFollowed()
			h.waitReadyz(503, ReadyzVMNotReady)
			for _, e := range h.events() {
				if e.Reason == ReasonPlacementChanged {
					t.Errorf("Event %s: %s", e.Reason, e.Message)
				}
			}
		})
	}
}

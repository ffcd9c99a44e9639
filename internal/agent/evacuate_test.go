package agent

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apitypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// markedVMI is the VMI of testVM as KubeVirt holds it once a drain tried to
// evict its launcher Pod from node.
func markedVMI(uid, node string) *kubevirtv1.VirtualMachineInstance {
	return &kubevirtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Name: testVM, Namespace: testNamespace, UID: apitypes.UID("vmi-" + uid)},
		Status:     kubevirtv1.VirtualMachineInstanceStatus{NodeName: testNode, EvacuationNodeName: node},
	}
}

func TestStopsVMWhenADrainMarksItsVMI(t *testing.T) {
	cfg := testConfig()
	cfg.StopOnEvacuation = true
	h := newHarness(t, cfg, []*kubevirtv1.VirtualMachine{prototype(testProto)})
	h.api.putVMI(markedVMI("1", "")) // running, no drain yet
	vm := h.readyVM()
	h.eventually("the agent watches its VMI", func() bool { return h.api.count("watch vmi "+testVM) > 0 })

	// A migration target elsewhere is not this node's drain.
	h.api.putVMI(markedVMI("1", "node-9"))
	h.vmiLooked()
	if n := h.api.count("delete vmi "); n != 0 {
		t.Fatalf("%d VMI deletes for a mark naming another node, want none", n)
	}

	h.api.putVMI(markedVMI("1", testNode))
	h.eventually("the agent deletes the marked VMI", func() bool { return h.api.count("delete vmi "+testVM) > 0 })
	if h.api.vmiObject(testVM) != nil {
		t.Error("the marked VMI is still there")
	}
	ev := h.waitEvent(corev1.EventTypeNormal, ReasonEvacuated)
	if !strings.Contains(ev.Message, "kubectl uncordon") {
		t.Errorf("Event %q does not say how the VM comes back", ev.Message)
	}
	// KubeVirt starts a new VMI, which waits for the node; the VM is not
	// ready, and /readyz says why.
	vm.Status.Ready, vm.Status.PrintableStatus = false, kubevirtv1.VirtualMachineStatusUnschedulable
	h.api.put(vm)
	h.waitReadyz(503, ReadyzEvacuated+": "+string(kubevirtv1.VirtualMachineStatusUnschedulable))
	h.api.putVMI(markedVMI("2", "")) // the new VMI, not marked

	// Uncordoned: the VM runs again, without the agent doing anything.
	vm.Status.Ready, vm.Status.PrintableStatus = true, kubevirtv1.VirtualMachineStatusRunning
	h.api.put(vm)
	h.waitReadyz(200, "ok")
	if n := h.api.count("delete vmi "); n != 1 {
		t.Errorf("%d VMI deletes, want 1", n)
	}
	if n := h.api.count("delete " + testVM); n != 0 || h.api.count("create ") != 1 {
		t.Errorf("the VM itself was deleted or made again: %q", h.api.requestLog())
	}
}

// vmiLooked waits until the agent looked at its VMI as it is now.
func (h *harness) vmiLooked() {
	h.t.Helper()
	h.logged("Looked at the VMI for a drain", h.api.vmiObject(testVM).ResourceVersion)
}

// readyVMI is a VMI of testVM whose guest is up.
func readyVMI(uid string) *kubevirtv1.VirtualMachineInstance {
	vmi := markedVMI(uid, "")
	vmi.Status.Phase = kubevirtv1.Running
	vmi.Status.Conditions = []kubevirtv1.VirtualMachineInstanceCondition{{Type: kubevirtv1.VirtualMachineInstanceReady, Status: corev1.ConditionTrue}}
	return vmi
}

// TestBackFromADrainItsVMStatusNeverShowed: the VM's status may never say
// not ready between the VMI the agent stopped and the next one (a watch that
// lists again after an API server restart sees only the latest state): a
// new VMI that is ready ends the stop all the same, and a status that still
// says ready before one does not.
func TestBackFromADrainItsVMStatusNeverShowed(t *testing.T) {
	cfg := testConfig()
	cfg.StopOnEvacuation = true
	h := newHarness(t, cfg, []*kubevirtv1.VirtualMachine{prototype(testProto)})
	h.api.putVMI(readyVMI("1"))
	vm := h.readyVM()
	h.eventually("the agent watches its VMI", func() bool { return h.api.count("watch vmi "+testVM) > 0 })

	marked := readyVMI("1")
	marked.Status.EvacuationNodeName = testNode
	h.api.putVMI(marked)
	h.eventually("the agent deletes the marked VMI", func() bool { return h.api.count("delete vmi "+testVM) > 0 })
	h.waitReadyz(503, ReadyzEvacuated)

	// The VM's status, written again, still says ready: the old VMI's.
	vm.Labels["touched"] = "1"
	h.api.put(vm)
	h.observed(h.api.object(testVM).ResourceVersion)
	h.api.putVMI(markedVMI("2", "")) // the next VMI, not up yet
	h.vmiLooked()
	if code, body := h.readyz(); code != 503 || !strings.Contains(body, ReadyzEvacuated) {
		t.Fatalf("/readyz %d %q before the next VMI is ready, want 503 %s", code, body, ReadyzEvacuated)
	}

	h.api.putVMI(readyVMI("2"))
	h.waitReadyz(200, "ok")
	if !strings.Contains(h.logs.String(), "VM back after its stop for a drain") {
		t.Errorf("the agent did not log the VM's return:\n%s", h.logs.String())
	}
	if n := h.api.count("delete vmi "); n != 1 {
		t.Errorf("%d VMI deletes, want 1", n)
	}
}

// TestLeavesEvacuationToItsOwnEviction: an agent a drain evicts (a
// Deployment's or a StatefulSet's) does not even watch the VMI: the drain
// evicts its Pod when the PodDisruptionBudget allows, and it deletes the VM
// then.
func TestLeavesEvacuationToItsOwnEviction(t *testing.T) {
	h := newHarness(t, Config{}, []*kubevirtv1.VirtualMachine{prototype(testProto)})
	h.api.putVMI(markedVMI("1", testNode))
	vm := h.readyVM()
	// An agent that stops on evacuation starts the watch of its VMI
	// before it follows its VM (follow): by the time it observed a later
	// change of the VM, that watch would have been asked for.
	vm.Labels["touched"] = "1"
	h.api.put(vm)
	h.observed(h.api.object(testVM).ResourceVersion)
	for _, r := range h.api.requestLog() {
		if strings.Contains(r, " vmi ") {
			t.Errorf("request %q: only an agent with --stop-on-evacuation looks at VMIs", r)
		}
	}
}

// TestLogsEvictionStrategyOverride: the VM runs with External whatever the
// prototype asks, and the agent logs the override once, without an Event:
// it holds for the whole prototype, and scaffold and status say it.
func TestLogsEvictionStrategyOverride(t *testing.T) {
	proto := prototype(testProto)
	proto.Spec.Template.Spec.EvictionStrategy = ptr.To(kubevirtv1.EvictionStrategyLiveMigrate)
	h := newHarness(t, Config{}, []*kubevirtv1.VirtualMachine{proto})
	h.start()
	h.watchFollowed()
	// The check runs before the create, so its Event would come first.
	h.waitEvent(corev1.EventTypeNormal, ReasonCreated)
	if got := h.eventStrings(); len(got) != 1 {
		t.Errorf("Events %q, want only Normal Created", got)
	}
	logs := h.logs.String()
	if n := strings.Count(logs, "Eviction strategy overridden"); n != 1 || !strings.Contains(logs, "evictionStrategy LiveMigrate, but its VMs run with External") {
		t.Errorf("logged the override %d times, want once naming both strategies:\n%s", n, logs)
	}
	vm := h.api.object(testVM)
	if s := vm.Spec.Template.Spec.EvictionStrategy; s == nil || *s != kubevirtv1.EvictionStrategyExternal {
		t.Errorf("derived VM evictionStrategy %v, want External", s)
	}
}

// TestEvictsItsPodWhenKubeVirtEvacuatesItsVM: an agent with
// --evict-on-evacuation answers KubeVirt's evacuation mark on its node (a
// drain's, or the workload updater's after an upgrade, which evicts only
// the launcher Pod) by evicting its own Pod, by UID; while a
// PodDisruptionBudget refuses, it says so, stays Ready and asks again; it
// never touches the VMI or the VM, which goes with the Pod.
func TestEvictsItsPodWhenKubeVirtEvacuatesItsVM(t *testing.T) {
	cfg := testConfig()
	cfg.EvictOnEvacuation = true
	h := newHarness(t, cfg, []*kubevirtv1.VirtualMachine{prototype(testProto)})
	ev := &evictions{refusals: 2}
	h.kube.PrependReactor("create", "pods", ev.react)
	h.api.putVMI(readyVMI("1"))
	h.readyVM()
	h.eventually("the agent watches its VMI", func() bool { return h.api.count("watch vmi "+testVM) > 0 })

	// A mark naming another node is not this node's evacuation.
	other := readyVMI("1")
	other.Status.EvacuationNodeName = "node-9"
	h.api.putVMI(other)
	h.vmiLooked()
	if n := ev.count(); n != 0 {
		t.Fatalf("%d evictions for a mark naming another node, want none", n)
	}

	marked := readyVMI("1")
	marked.Status.EvacuationNodeName = testNode
	h.api.putVMI(marked)
	h.eventually("three eviction requests", func() bool { return ev.count() == 3 })
	for i, e := range ev.asked {
		if e.Name != testPod || e.Namespace != testNamespace || e.DeleteOptions == nil || e.DeleteOptions.Preconditions == nil ||
			e.DeleteOptions.Preconditions.UID == nil || *e.DeleteOptions.Preconditions.UID != testPodUID {
			t.Errorf("eviction %d is of %s/%s with %+v; want the agent's own Pod %s/%s with UID precondition %s", i, e.Namespace, e.Name, e.DeleteOptions, testNamespace, testPod, testPodUID)
		}
	}
	if e := h.waitEvent(corev1.EventTypeNormal, ReasonEvacuating); !strings.Contains(e.Message, "workload update after a KubeVirt upgrade") {
		t.Errorf("%s Event %q does not say who may have asked", ReasonEvacuating, e.Message)
	}
	if e := h.waitEvent(corev1.EventTypeWarning, ReasonEvacuationBlocked); !strings.Contains(e.Message, "a PodDisruptionBudget allows no disruption now") {
		t.Errorf("%s Event %q does not name the budget", ReasonEvacuationBlocked, e.Message)
	}
	if c, body := h.readyz(); c != 200 {
		t.Errorf("/readyz %d %q while the eviction was refused; want 200: the VM still serves, and a not-Ready Pod would use up its own budget", c, body)
	}

	// More changes of the marked VMI ask no more: the Pod is evicted.
	marked = readyVMI("1")
	marked.Status.EvacuationNodeName = testNode
	marked.Labels = map[string]string{"changed": "yes"}
	h.api.putVMI(marked)
	h.vmiLooked()
	if n := ev.count(); n != 3 {
		t.Errorf("%d eviction requests after the Pod was evicted, want 3", n)
	}
	if n := h.api.count("delete "); n != 0 {
		t.Errorf("the agent deleted the VM or its VMI itself: %q", h.api.requestLog())
	}
}

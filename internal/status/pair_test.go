package status

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
)

// brief is the part of a Row a test case pins down.
type brief struct {
	Namespace, Pod, VM, VMINode string
	Problems                    []string
	Waiting                     string
}

func briefs(rows []Row) []brief {
	out := make([]brief, 0, len(rows))
	for _, r := range rows {
		vm := r.VM
		if vm != "" && r.VMNamespace != r.Namespace {
			vm = r.VMNamespace + "/" + vm
		}
		out = append(out, brief{Namespace: r.Namespace, Pod: r.Pod, VM: vm, VMINode: r.VMINode, Problems: r.Problems, Waiting: r.Waiting})
	}
	return out
}

func TestPair(t *testing.T) {
	proto := protoVM("ns", "web", 5)
	tests := []struct {
		name string
		inv  Inventory
		want []brief
	}{{
		name: "healthy pair",
		inv: Inventory{
			Pods:       ptrs(agentPod("ns", "a", "uid-a", "n1", "web", time.Hour)),
			Prototypes: ptrs(proto),
			VMs:        ptrs(derivedVM("ns", "web", 5, "ns", "a", "uid-a", "n1", time.Hour)),
			VMIs:       ptrs(vmi("ns", "web-a", "n1")),
		},
		want: []brief{{Namespace: "ns", Pod: "a", VM: "web-a", VMINode: "n1"}},
	}, {
		// An older rule named VMs "<pod>-<prototype>": status pairs them by
		// the Pod they record, and calls them orphans once it is gone.
		name: "VMs named by an older rule, paired and orphaned",
		inv: Inventory{
			Pods:       ptrs(agentPod("ns", "a", "uid-a", "n1", "web", time.Hour)),
			Prototypes: ptrs(proto),
			VMs: ptrs(derivedVM("ns", "web", 5, "ns", "a", "uid-a", "n1", time.Hour, oldRuleName),
				derivedVM("ns", "web", 5, "ns", "b", "uid-b", "n1", time.Hour, oldRuleName)),
			VMIs: ptrs(vmi("ns", "a-web", "n1")),
		},
		want: []brief{
			{Namespace: "ns", Pod: "a", VM: "a-web", VMINode: "n1"},
			{Namespace: "ns", Pod: "b", VM: "b-web", Problems: []string{"orphaned VM (pod gone)"}},
		},
	}, {
		name: "running pod past the grace without VM",
		inv: Inventory{
			Pods:       ptrs(agentPod("ns", "a", "uid-a", "n1", "web", time.Minute)),
			Prototypes: ptrs(proto),
		},
		want: []brief{{Namespace: "ns", Pod: "a", Problems: []string{"VM missing"}}},
	}, {
		name: "young pod without VM is forgiven",
		inv: Inventory{
			Pods:       ptrs(agentPod("ns", "a", "uid-a", "n1", "web", 5*time.Second)),
			Prototypes: ptrs(proto),
		},
		want: []brief{{Namespace: "ns", Pod: "a"}},
	}, {
		name: "pending and terminating pods without VM are not problems",
		inv: Inventory{
			Pods: ptrs(
				agentPod("ns", "pending", "uid-p", "", "web", time.Hour, func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending; p.Status.StartTime = nil }),
				agentPod("ns", "term", "uid-t", "n1", "web", time.Hour, func(p *corev1.Pod) { p.DeletionTimestamp = ptrTime(ago(time.Second)) }),
			),
			Prototypes: ptrs(proto),
		},
		want: []brief{{Namespace: "ns", Pod: "pending"}, {Namespace: "ns", Pod: "term"}},
	}, {
		// kube-scheduler found no node with the room the Pod holds for its
		// VM: a wait, with the scheduler's reason, and no problem.
		name: "pending for want of room waits",
		inv: Inventory{
			Pods: ptrs(agentPod("ns", "pending", "uid-p", "", "web", time.Hour, waitingForRoom(
				"0/3 nodes are available: 3 Insufficient memory. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."))),
			Prototypes: ptrs(proto),
		},
		want: []brief{{Namespace: "ns", Pod: "pending", Waiting: "Pod waits for room: 0/3 nodes are available: 3 Insufficient memory"}},
	}, {
		name: "VMI on another node than the pod",
		inv: Inventory{
			Pods:       ptrs(agentPod("ns", "a", "uid-a", "n1", "web", time.Hour)),
			Prototypes: ptrs(proto),
			VMs:        ptrs(derivedVM("ns", "web", 5, "ns", "a", "uid-a", "n1", time.Hour)),
			VMIs:       ptrs(vmi("ns", "web-a", "n2")),
		},
		want: []brief{{Namespace: "ns", Pod: "a", VM: "web-a", VMINode: "n2", Problems: []string{"VM on another node"}}},
	}, {
		name: "VMI marked for evacuation by a drain",
		inv: Inventory{
			Pods:       ptrs(agentPod("ns", "a", "uid-a", "n1", "web", time.Hour)),
			Prototypes: ptrs(proto),
			VMs:        ptrs(derivedVM("ns", "web", 5, "ns", "a", "uid-a", "n1", time.Hour)),
			VMIs:       ptrs(evacuating(vmi("ns", "web-a", "n1"), "n1")),
		},
		want: []brief{{Namespace: "ns", Pod: "a", VM: "web-a", VMINode: "n1", Problems: []string{"evacuating (drain or KubeVirt update)"}}},
	}, {
		name: "VMI held by a cordoned node names the drain, not the wait",
		inv: Inventory{
			Pods:       ptrs(agentPod("ns", "a", "uid-a", "n1", "web", time.Hour, notReadyPod)),
			Prototypes: ptrs(proto),
			VMs:        ptrs(derivedVM("ns", "web", 5, "ns", "a", "uid-a", "n1", time.Hour, notReadyVM(6*time.Minute))),
			VMIs: ptrs(unschedulable(vmi("ns", "web-a", ""),
				"0/3 nodes are available: 1 node(s) were unschedulable, 2 node(s) didn't match Pod's node affinity/selector.")),
		},
		want: []brief{{Namespace: "ns", Pod: "a", VM: "web-a", Problems: []string{"held by a drain (node cordoned)"}}},
	}, {
		name: "VMI unschedulable for another reason is only not ready",
		inv: Inventory{
			Pods:       ptrs(agentPod("ns", "a", "uid-a", "n1", "web", time.Hour, notReadyPod)),
			Prototypes: ptrs(proto),
			VMs:        ptrs(derivedVM("ns", "web", 5, "ns", "a", "uid-a", "n1", time.Hour, notReadyVM(6*time.Minute))),
			VMIs:       ptrs(unschedulable(vmi("ns", "web-a", ""), "0/3 nodes are available: 1 Insufficient devices.kubevirt.io/kvm.")),
		},
		want: []brief{{Namespace: "ns", Pod: "a", VM: "web-a", Problems: []string{"VM not ready for 6m"}}},
	}, {
		name: "not ready since the condition's transition, past the grace",
		inv: Inventory{
			Pods:       ptrs(agentPod("ns", "a", "uid-a", "n1", "web", time.Hour, notReadyPod)),
			Prototypes: ptrs(proto),
			VMs:        ptrs(derivedVM("ns", "web", 5, "ns", "a", "uid-a", "n1", time.Hour, notReadyVM(6*time.Minute))),
		},
		want: []brief{{Namespace: "ns", Pod: "a", VM: "web-a", Problems: []string{"VM not ready for 6m"}}},
	}, {
		name: "not ready without condition counts from creation; young VM is forgiven",
		inv: Inventory{
			Pods: ptrs(
				agentPod("ns", "a", "uid-a", "n1", "web", time.Hour),
				agentPod("ns", "b", "uid-b", "n1", "web", time.Hour),
			),
			Prototypes: ptrs(proto),
			VMs: ptrs(
				derivedVM("ns", "web", 5, "ns", "a", "uid-a", "n1", 10*time.Minute, notReadyVM(0)),
				derivedVM("ns", "web", 5, "ns", "b", "uid-b", "n1", time.Minute, notReadyVM(0)),
			),
		},
		want: []brief{
			{Namespace: "ns", Pod: "a", VM: "web-a", Problems: []string{"VM not ready for 10m"}},
			{Namespace: "ns", Pod: "b", VM: "web-b"},
		},
	}, {
		name: "VM whose pod is gone, VM whose pod was replaced, terminating orphan",
		inv: Inventory{
			Pods:       ptrs(agentPod("ns", "b", "uid-b2", "n1", "web", time.Hour)),
			Prototypes: ptrs(proto),
			VMs: ptrs(
				derivedVM("ns", "web", 5, "ns", "a", "uid-a", "n1", time.Hour),
				derivedVM("ns", "web", 5, "ns", "b", "uid-b1", "n1", time.Hour),
				derivedVM("ns", "web", 5, "ns", "c", "uid-c", "n1", time.Hour, func(vm *kubevirtv1.VirtualMachine) { vm.DeletionTimestamp = ptrTime(ago(time.Second)) }),
			),
		},
		want: []brief{
			{Namespace: "ns", Pod: "a", VM: "web-a", Problems: []string{"orphaned VM (pod gone)"}},
			{Namespace: "ns", Pod: "b", Problems: []string{"VM missing"}},
			{Namespace: "ns", Pod: "b", VM: "web-b", Problems: []string{"orphaned VM (pod replaced)"}},
			{Namespace: "ns", Pod: "c", VM: "web-c"},
		},
	}, {
		name: "a VM of a Pod that pins no revision: its prototype missing, not its generation",
		inv: Inventory{
			Pods: ptrs(
				agentPod("ns", "a", "uid-a", "n1", "web", time.Hour),
				agentPod("ns", "b", "uid-b", "n1", "db", time.Hour),
			),
			Prototypes: ptrs(proto),
			VMs: ptrs(
				derivedVM("ns", "web", 3, "ns", "a", "uid-a", "n1", time.Hour),
				derivedVM("ns", "db", 1, "ns", "b", "uid-b", "n1", time.Hour),
			),
		},
		want: []brief{
			{Namespace: "ns", Pod: "a", VM: "web-a"},
			{Namespace: "ns", Pod: "b", VM: "db-b", Problems: []string{"prototype missing"}},
		},
	}, {
		name: "several problems at once",
		inv: Inventory{
			Pods:       ptrs(agentPod("ns", "a", "uid-a", "n1", "web", time.Hour)),
			Prototypes: ptrs(proto),
			VMs:        ptrs(derivedVM("ns", "web", 4, "ns", "a", "uid-a", "n1", time.Hour, notReadyVM(time.Hour))),
			VMIs:       ptrs(vmi("ns", "web-a", "n2")),
		},
		want: []brief{{Namespace: "ns", Pod: "a", VM: "web-a", VMINode: "n2", Problems: []string{
			"VM on another node", "VM not ready for 60m",
		}}},
	}, {
		name: "a VM without vmctl's labels is never a row",
		inv: Inventory{
			Prototypes: ptrs(proto),
			VMs: ptrs(func() kubevirtv1.VirtualMachine {
				vm := derivedVM("ns", "web", 5, "ns", "a", "uid-a", "n1", time.Hour)
				vm.Labels = nil // annotations copied by hand do not make it vmctl's
				return vm
			}()),
		},
		want: []brief{},
	}, {
		name: "namespace scope: other namespaces only appear paired",
		inv: Inventory{
			Query: Query{Namespace: "ns"},
			Pods: ptrs(
				agentPod("ns", "a", "uid-a", "n1", "web", time.Hour, makesVMsIn("vms")),
				agentPod("other", "x", "uid-x", "n1", "web", time.Hour, makesVMsIn("ns")), // owns ns/web-x
				agentPod("other", "y", "uid-y", "n1", "web", time.Hour),                   // no VM, out of scope
			),
			Prototypes: ptrs(proto, protoVM("vms", "web", 5)),
			VMs: ptrs(
				derivedVM("vms", "web", 5, "ns", "a", "uid-a", "n1", time.Hour),   // ns's pod, VM elsewhere
				derivedVM("ns", "web", 5, "other", "x", "uid-x", "n1", time.Hour), // VM here, pod elsewhere
				derivedVM("other", "web", 5, "other", "z", "uid-z", "n1", time.Hour),
			),
		},
		want: []brief{
			{Namespace: "ns", Pod: "a", VM: "vms/web-a"},
			{Namespace: "other", Pod: "x", VM: "ns/web-x"},
		},
	}, {
		// A VM made by hand in another namespace, recording a live agent
		// Pod whose agent makes its VMs in its own: not that Pod's VM.
		name: "all namespaces: a VM where its Pod's agent makes none",
		inv: Inventory{
			Pods:       ptrs(agentPod("ns", "a", "uid-a", "n1", "web", time.Hour)),
			Prototypes: ptrs(proto),
			VMs: ptrs(
				derivedVM("ns", "web", 5, "ns", "a", "uid-a", "n1", time.Hour),
				derivedVM("other", "web", 5, "ns", "a", "uid-a", "n1", time.Hour),
			),
		},
		want: []brief{
			{Namespace: "ns", Pod: "a", VM: "web-a"},
			{Namespace: "other", Pod: "a", VM: "web-a", Problems: []string{"not its Pod's: the Pod's agent makes its VMs in namespace ns"}},
		},
	}, {
		// Its VM deleted with propagationPolicy Orphan: the guest runs on
		// in a VMI no VM owns, whether or not its Pod is gone.
		name: "orphaned VMIs",
		inv: Inventory{
			Query:      Query{Namespace: "ns"},
			Pods:       ptrs(agentPod("ns", "a", "uid-a", "n1", "web", time.Hour)),
			Prototypes: ptrs(proto),
			VMIs: ptrs(
				labelled(vmi("ns", "web-a", "n1"), "web", "a"),
				labelled(vmi("ns", "web-gone", "n2"), "web", "gone"),
				ownedByVM(labelled(vmi("ns", "web-b", "n1"), "web", "b")), // its VM is on its way
				vmi("ns", "plain", "n1"),                                  // not vmctl's
				labelled(vmi("other", "web-c", "n1"), "web", "c"),         // out of scope
			),
		},
		want: []brief{
			{Namespace: "ns", Pod: "a", Problems: []string{ProblemVMMissing}},
			{Namespace: "ns", Pod: "a", VM: "web-a", VMINode: "n1", Problems: []string{ProblemOrphanedVMI}},
			{Namespace: "ns", Pod: "gone", VM: "web-gone", VMINode: "n2", Problems: []string{ProblemOrphanedVMI}},
		},
	}, {
		name: "a VMI of its VM is no orphan",
		inv: Inventory{
			Query:      Query{Namespace: "ns"},
			Pods:       ptrs(agentPod("ns", "a", "uid-a", "n1", "web", time.Hour)),
			Prototypes: ptrs(proto),
			VMs:        ptrs(derivedVM("ns", "web", 5, "ns", "a", "uid-a", "n1", time.Hour)),
			VMIs:       ptrs(labelled(vmi("ns", "web-a", "n1"), "web", "a")),
		},
		want: []brief{{Namespace: "ns", Pod: "a", VM: "web-a", VMINode: "n1"}},
	}, {
		name: "two VMs record one Pod",
		inv: Inventory{
			Query:      Query{Namespace: "ns"},
			Pods:       ptrs(agentPod("ns", "a", "uid-a", "n1", "web", time.Hour)),
			Prototypes: ptrs(proto),
			VMs: ptrs(
				derivedVM("ns", "web", 5, "ns", "a", "uid-a", "n1", time.Hour),
				derivedVM("ns", "web", 5, "ns", "a", "uid-a", "n1", time.Hour, renamed("web-a-2")),
			),
		},
		want: []brief{
			{Namespace: "ns", Pod: "a", VM: "web-a", Problems: []string{"one of 2 VMs of its Pod"}},
			{Namespace: "ns", Pod: "a", VM: "web-a-2", Problems: []string{"one of 2 VMs of its Pod"}},
		},
	}, {
		name: "prototype filter",
		inv: Inventory{
			Query: Query{Prototype: "web"},
			Pods: ptrs(
				agentPod("ns", "a", "uid-a", "n1", "web", time.Hour),
				agentPod("ns", "b", "uid-b", "n1", "db", time.Hour),
			),
			Prototypes: ptrs(proto, protoVM("ns", "db", 1)),
			VMs: ptrs(
				derivedVM("ns", "web", 5, "ns", "a", "uid-a", "n1", time.Hour),
				derivedVM("ns", "db", 1, "ns", "b", "uid-b", "n1", time.Hour),
				derivedVM("ns", "db", 1, "ns", "gone", "uid-g", "n1", time.Hour),
			),
		},
		want: []brief{{Namespace: "ns", Pod: "a", VM: "web-a"}},
	}, {
		name: "with a pod selector, unpaired VMs are not called orphans",
		inv: Inventory{
			Query:      Query{PodSelector: "app.kubernetes.io/instance=web"},
			Pods:       ptrs(agentPod("ns", "a", "uid-a", "n1", "web", time.Hour)),
			Prototypes: ptrs(proto),
			VMs: ptrs(
				derivedVM("ns", "web", 5, "ns", "a", "uid-a", "n1", time.Hour),
				derivedVM("ns", "web", 5, "ns", "unselected", "uid-u", "n1", time.Hour),
			),
		},
		want: []brief{{Namespace: "ns", Pod: "a", VM: "web-a"}},
	}, {
		name: "a VM pairs with the Pod it records, found by identity whatever its labels",
		inv: Inventory{
			OwnerPods: ptrs(
				agentPod("ns", "manual", "uid-m", "n1", "", time.Hour, func(p *corev1.Pod) { p.Labels = nil }),
				agentPod("ns", "bystander", "uid-x", "n1", "", time.Hour), // no VM of its own: no row
			),
			Prototypes: ptrs(proto),
			VMs:        ptrs(derivedVM("ns", "web", 5, "ns", "manual", "uid-m", "n1", time.Hour)),
			VMIs:       ptrs(vmi("ns", "web-manual", "n1")),
		},
		want: []brief{{Namespace: "ns", Pod: "manual", VM: "web-manual", VMINode: "n1"}},
	}, {
		name: "a VM KubeVirt cannot schedule on its node is a problem at once, with the scheduler's reason",
		inv: Inventory{
			Pods:       ptrs(agentPod("ns", "a", "uid-a", "n1", "web", time.Hour)),
			Prototypes: ptrs(proto),
			VMs: ptrs(derivedVM("ns", "web", 5, "ns", "a", "uid-a", "n1", time.Hour, notReadyVM(10*time.Second), stuckVM(
				kubevirtv1.VirtualMachineStatusUnschedulable, "PodScheduled", corev1.ConditionFalse,
				"0/3 nodes are available: 1 Insufficient memory, 2 node(s) didn't match Pod's node affinity/selector."))),
			VMIs: ptrs(vmi("ns", "web-a", "")),
		},
		want: []brief{{Namespace: "ns", Pod: "a", VM: "web-a", Problems: []string{"VM cannot be scheduled on its node: Insufficient memory"}}},
	}, {
		name: "a VM whose launcher Pod waits, nominated to its agent's node, is being handed the room: no problem yet",
		inv: Inventory{
			Pods:       ptrs(agentPod("ns", "a", "uid-a", "n1", "web", time.Hour, reserving("cpu=106m,memory=559Mi"))),
			Prototypes: ptrs(proto),
			VMs: ptrs(derivedVM("ns", "web", 5, "ns", "a", "uid-a", "n1", time.Hour, notReadyVM(10*time.Second), stuckVM(
				kubevirtv1.VirtualMachineStatusUnschedulable, "PodScheduled", corev1.ConditionFalse,
				"0/3 nodes are available: 1 Insufficient memory, 2 node(s) didn't match Pod's node affinity/selector."))),
			VMIs:      ptrs(vmi("ns", "web-a", "")),
			Launchers: ptrs(launcher("ns", "web-a", "", "n1", "106m", "585453824")),
		},
		want: []brief{{Namespace: "ns", Pod: "a", VM: "web-a"}},
	}, {
		name: "once the nomination is gone, a VM that cannot be scheduled is a problem",
		inv: Inventory{
			Pods:       ptrs(agentPod("ns", "a", "uid-a", "n1", "web", time.Hour, reserving("cpu=106m,memory=559Mi"))),
			Prototypes: ptrs(proto),
			VMs: ptrs(derivedVM("ns", "web", 5, "ns", "a", "uid-a", "n1", time.Hour, notReadyVM(10*time.Second), stuckVM(
				kubevirtv1.VirtualMachineStatusUnschedulable, "PodScheduled", corev1.ConditionFalse,
				"0/3 nodes are available: 1 Insufficient memory, 2 node(s) didn't match Pod's node affinity/selector."))),
			VMIs:      ptrs(vmi("ns", "web-a", "")),
			Launchers: ptrs(launcher("ns", "web-a", "", "", "106m", "585453824")),
		},
		want: []brief{{Namespace: "ns", Pod: "a", VM: "web-a", Problems: []string{"VM cannot be scheduled on its node: Insufficient memory"}}},
	}, {
		name: "a Pod that reserves less than its VM's launcher Pod asks for (a template rolled back)",
		inv: Inventory{
			Pods:       ptrs(agentPod("ns", "a", "uid-a", "n1", "web", time.Hour, reserving("cpu=106m,memory=559Mi"))),
			Prototypes: ptrs(proto),
			VMs:        ptrs(derivedVM("ns", "web", 5, "ns", "a", "uid-a", "n1", time.Hour)),
			VMIs:       ptrs(vmi("ns", "web-a", "n1")),
			Launchers: ptrs(
				launcher("ns", "web-a", "n1", "", "106m", "854572Ki"),
				launcher("ns", "web-b", "n1", "", "106m", "1Gi"),
			),
		},
		want: []brief{{Namespace: "ns", Pod: "a", VM: "web-a", VMINode: "n1", Problems: []string{"Pod reserves cpu=106m,memory=559Mi, its VM needs cpu=106m,memory=835Mi"}}},
	}, {
		name: "a Pod that reserves what its VM's launcher Pod asks for, rounded up",
		inv: Inventory{
			Pods:       ptrs(agentPod("ns", "a", "uid-a", "n1", "web", time.Hour, reserving("cpu=106m,memory=559Mi"))),
			Prototypes: ptrs(proto),
			VMs:        ptrs(derivedVM("ns", "web", 5, "ns", "a", "uid-a", "n1", time.Hour)),
			VMIs:       ptrs(vmi("ns", "web-a", "n1")),
			Launchers:  ptrs(launcher("ns", "web-a", "n1", "", "106m", "585453824")),
		},
		want: []brief{{Namespace: "ns", Pod: "a", VM: "web-a", VMINode: "n1"}},
	}, {
		name: "a VM whose DataVolume the API server refuses is a problem at once, without a VMI",
		inv: Inventory{
			Pods:       ptrs(agentPod("ns", "a", "uid-a", "n1", "web", time.Hour)),
			Prototypes: ptrs(proto),
			VMs: ptrs(derivedVM("ns", "web", 5, "ns", "a", "uid-a", "n1", time.Hour, notReadyVM(0), stuckVM(
				kubevirtv1.VirtualMachineStatusStopped, "Failure", corev1.ConditionTrue,
				"Error encountered while creating DataVolumes: failed to create DataVolume: the server could not find the requested resource"))),
		},
		want: []brief{{Namespace: "ns", Pod: "a", VM: "web-a", Problems: []string{"VM's DataVolume cannot be created: the server could not find the requested resource"}}},
	}, {
		name: "a VM someone stopped is a problem at once",
		inv: Inventory{
			Pods:       ptrs(agentPod("ns", "a", "uid-a", "n1", "web", time.Hour)),
			Prototypes: ptrs(proto),
			VMs: ptrs(derivedVM("ns", "web", 5, "ns", "a", "uid-a", "n1", time.Hour, notReadyVM(0), func(vm *kubevirtv1.VirtualMachine) {
				vm.Spec.RunStrategy = ptr.To(kubevirtv1.RunStrategyHalted)
				vm.Status.PrintableStatus = kubevirtv1.VirtualMachineStatusStopped
			})),
		},
		want: []brief{{Namespace: "ns", Pod: "a", VM: "web-a", Problems: []string{"VM stopped (runStrategy Halted): someone stopped it; `virtctl start web-a` starts it again"}}},
	}, {
		name: "a derived VM copied and renamed to serve as a prototype is a prototype, never a row",
		inv: Inventory{
			Pods:       ptrs(agentPod("ns", "a", "uid-a", "n1", "golden", time.Hour)),
			Prototypes: ptrs(goldenCopy()),
			VMs:        ptrs(goldenCopy(), derivedVM("ns", "golden", 1, "ns", "a", "uid-a", "n1", time.Hour)),
		},
		want: []brief{{Namespace: "ns", Pod: "a", VM: "golden-a"}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := briefs(Pair(&tt.inv, t0, NotReadyGrace))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Pair (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPairRewrittenRevision: a Pod that pins a revision its workload's
// store holds rewritten says so, with what puts it right, whether or not
// it has its VM (made before the rewrite); without one, that is why. A
// Pod of another store, or of another revision, is not concerned.
func TestPairRewrittenRevision(t *testing.T) {
	const pin, actual = "1a2b3c4d5e", "9f8e7d6c5b"
	vm := func(pod, uid string) kubevirtv1.VirtualMachine {
		return derivedVM("ns", "web", 5, "ns", pod, uid, "n1", time.Hour, func(vm *kubevirtv1.VirtualMachine) {
			vm.Annotations[contract.AnnotationVMRevision] = pin
		})
	}
	inv := Inventory{
		Query: Query{Namespace: "ns"},
		Pods: ptrs(
			agentPod("ns", "a", "uid-a", "n1", "web", time.Hour, pinning(pin)),
			agentPod("ns", "b", "uid-b", "n1", "web", time.Hour, pinning(pin)),
			agentPod("ns", "c", "uid-c", "n1", "web", time.Hour, pinning("0000000000")),
		),
		Prototypes: ptrs(protoVM("ns", "web", 5)),
		VMs:        ptrs(vm("a", "uid-a"), vm("c", "uid-c")),
		Stores:     []*unstructured.Unstructured{storeWith(t, "ns", map[string]string{pin: actual})},
	}
	inv.VMs[1].Annotations[contract.AnnotationVMRevision] = "0000000000"
	problem := "VM revision rewritten: " + pin + " in VMRevisionStore ns/web-vm-revisions hashes to "
	rows := Pair(&inv, t0, NotReadyGrace)
	if len(rows) != 3 {
		t.Fatalf("%d rows, want 3: %v", len(rows), briefs(rows))
	}
	for i, pod := range []string{"a", "b"} {
		if r := rows[i]; r.Pod != pod || len(r.Problems) != 1 || !strings.HasPrefix(r.Problems[0], problem) ||
			!strings.HasSuffix(r.Problems[0], "kubectl vmctl rollout restart web") {
			t.Errorf("Pod %s: problems %q, want only one that starts %q and says what to run", r.Pod, r.Problems, problem)
		}
	}
	if r := rows[2]; len(r.Problems) != 0 {
		t.Errorf("Pod c, of another revision: problems %q, want none", r.Problems)
	}
}

// TestPairNotReadyGrace: the grace a VM starting normally gets is the
// caller's (status --not-ready-grace).
func TestPairNotReadyGrace(t *testing.T) {
	inv := Inventory{
		Pods:       ptrs(agentPod("ns", "a", "uid-a", "n1", "web", time.Hour)),
		Prototypes: ptrs(protoVM("ns", "web", 5)),
		VMs:        ptrs(derivedVM("ns", "web", 5, "ns", "a", "uid-a", "n1", time.Hour, notReadyVM(2*time.Minute))),
	}
	for grace, want := range map[time.Duration][]string{
		time.Minute:   {"VM not ready for 2m"},
		NotReadyGrace: nil,
	} {
		if got := Pair(&inv, t0, grace)[0].Problems; !cmp.Equal(want, got) {
			t.Errorf("Pair with grace %v: problems %q; want %q", grace, got, want)
		}
	}
}

func TestPairRowFields(t *testing.T) {
	inv := Inventory{
		Pods:       ptrs(agentPod("ns", "a", "uid-a", "n1", "web", time.Hour, notReadyPod)),
		Prototypes: ptrs(protoVM("ns", "web", 5)),
		VMs:        ptrs(derivedVM("ns", "web", 5, "ns", "a", "uid-a", "n1", time.Hour, notReadyVM(time.Minute))),
		VMIs:       ptrs(vmi("ns", "web-a", "n1")),
	}
	want := []Row{{
		Namespace: "ns", Pod: "a", PodUID: "uid-a", Node: "n1", Ready: "0/1", PodReady: false,
		VM: "web-a", VMNamespace: "ns", VMStatus: "Starting", VMReady: false, VMINode: "n1",
		Prototype: "web", PrototypeNamespace: "ns", Created: ago(time.Hour),
	}}
	if diff := cmp.Diff(want, Pair(&inv, t0, NotReadyGrace)); diff != "" {
		t.Errorf("Pair (-want +got):\n%s", diff)
	}
}

// oldRuleName names vm as an older rule than derive.Name would have:
// "<pod>-<prototype>".
func oldRuleName(vm *kubevirtv1.VirtualMachine) {
	o := derive.OriginOf(vm)
	vm.Name = o.PodName + "-" + o.PrototypeName
}

// goldenCopy is ns/golden: the VM derived from web for a Pod long gone,
// copied, renamed and kept as a prototype (generation 1), vmctl's labels
// and annotations and all, but not its Pod's ownerReference.
func goldenCopy() kubevirtv1.VirtualMachine {
	vm := derivedVM("ns", "web", 5, "ns", "gone", "uid-gone", "n1", time.Hour)
	vm.Name, vm.Generation, vm.OwnerReferences = "golden", 1, nil
	return vm
}

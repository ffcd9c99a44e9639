// Package gc finds and deletes derived VMs whose agent Pod is gone: the VMs
// an agent could not delete because it was killed without its grace period,
// or whose namespace made an ownerReference to the Pod impossible.
package gc

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
)

// What a Spared is.
const (
	KindVM  = "vm"
	KindVMI = "vmi"
)

// Reason says why a VM is an orphan.
type Reason string

// The reasons a VM is an orphan.
const (
	// PodGone: no Pod of the recorded name exists.
	PodGone Reason = "gone"
	// PodReplaced: a Pod of the recorded name exists with another UID (a
	// StatefulSet recreated it); its agent will not adopt this VM.
	PodReplaced Reason = "replaced"
)

// Orphan is a derived VM whose Pod no longer exists.
type Orphan struct {
	Namespace, Name string
	// UID is the VM's; deleting with it as precondition spares a VM that
	// was replaced meanwhile.
	UID types.UID
	// PodNamespace, PodName and PodUID are the Pod the VM records.
	PodNamespace, PodName string
	PodUID                types.UID
	Reason                Reason
	// Age is how long the VM has existed.
	Age time.Duration
	// Owned says the VM has its Pod for controller, as an agent's VM in
	// its Pod's namespace has: Kubernetes' garbage collector deletes it
	// with its Pod too. One without is in another namespace than its Pod.
	Owned bool
}

// Why explains the orphan the way gc prints it: `orphaned: its Pod
// "web-0" no longer exists`. The Pod's namespace is named only when it
// differs from the VM's.
func (o Orphan) Why() string {
	pod := o.PodName
	if o.PodNamespace != o.Namespace {
		pod = o.PodNamespace + "/" + o.PodName
	}
	if o.Reason == PodReplaced {
		return fmt.Sprintf("orphaned: its Pod %q was replaced by another of that name", pod)
	}
	return fmt.Sprintf("orphaned: its Pod %q no longer exists", pod)
}

// Spared is a VM or VMI that would be an orphan but that gc leaves alone,
// and why.
type Spared struct {
	Namespace, Name string
	// Kind is "vm" or "vmi".
	Kind string
	// Why says why gc leaves it: "pod vms/g-0 names it as its prototype".
	Why string
}

// Orphans returns the VMs among vms that vmctl derived (derive.IsAgentVM:
// vmctl's labels, the Pod's name, namespace and UID recorded, and owned
// by that Pod in its namespace) whose Pod is not among pods, or is there with another
// UID. pods must hold every Pod of each namespace the VMs name, whatever its
// labels, or a VM whose Pod was merely not listed would be called an
// orphan.
//
// An orphan that a Pod among pods names as its prototype, in its agent's
// arguments or in the annotations of a VM it derived, is returned as Spared
// instead: someone made a prototype by copying a derived VM, and the agents
// using it would lose it. It skips VMs already being deleted and VMs
// younger than minAge, so it never races an agent that is still starting.
// Both results are sorted by namespace and name.
func Orphans(pods []corev1.Pod, vms []kubevirtv1.VirtualMachine, now time.Time, minAge time.Duration) ([]Orphan, []Spared) {
	byName := make(map[types.NamespacedName]*corev1.Pod, len(pods))
	prototypes := map[types.NamespacedName]types.NamespacedName{} // prototype -> a Pod using it
	for i := range pods {
		p := &pods[i]
		byName[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = p
		if a, ok := contract.ParseAgent(p); ok {
			prototypes[types.NamespacedName{Namespace: a.PrototypeNamespace, Name: a.Prototype}] = types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
		}
	}
	var candidates []Orphan
	for i := range vms {
		vm := &vms[i]
		if !derive.IsAgentVM(vm) {
			continue
		}
		o := derive.OriginOf(vm)
		pod := byName[o.Pod()]
		if pod != nil && pod.UID == o.PodUID {
			prototypes[o.Prototype()] = types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
			continue
		}
		age := now.Sub(vm.CreationTimestamp.Time)
		if vm.DeletionTimestamp != nil || age < minAge {
			continue
		}
		reason := PodGone
		if pod != nil {
			reason = PodReplaced
		}
		candidates = append(candidates, Orphan{
			Namespace: vm.Namespace, Name: vm.Name, UID: vm.UID,
			PodNamespace: o.PodNamespace, PodName: o.PodName, PodUID: o.PodUID,
			Reason: reason, Age: age, Owned: metav1.GetControllerOfNoCopy(vm) != nil,
		})
	}
	var orphans []Orphan
	var spared []Spared
	for _, c := range candidates {
		if by, ok := prototypes[types.NamespacedName{Namespace: c.Namespace, Name: c.Name}]; ok {
			spared = append(spared, Spared{Namespace: c.Namespace, Name: c.Name, Kind: KindVM, Why: fmt.Sprintf("pod %s names it as its prototype", by)})
			continue
		}
		orphans = append(orphans, c)
	}
	slices.SortFunc(orphans, func(a, b Orphan) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	slices.SortFunc(spared, func(a, b Spared) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return orphans, spared
}

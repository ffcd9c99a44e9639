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
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/status"
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
}

// Why explains the orphan the way gc prints it: "orphaned: pod web-0 gone".
// The Pod's namespace is named only when it differs from the VM's.
func (o Orphan) Why() string {
	pod := o.PodName
	if o.PodNamespace != o.Namespace {
		pod = o.PodNamespace + "/" + o.PodName
	}
	return fmt.Sprintf("orphaned: pod %s %s", pod, o.Reason)
}

// Orphans returns the VMs among vms that vmctl derived (status.IsDerived:
// vmctl's labels and the Pod's name, namespace and UID recorded) whose Pod
// is not among pods, or is there with another UID. pods must hold every Pod
// of each namespace the VMs name, whatever its labels, or a VM whose Pod
// was merely not listed would be called an orphan.
//
// It skips VMs already being deleted and VMs younger than minAge, so it
// never races an agent that is still starting. The result is sorted by
// namespace and name.
func Orphans(pods []corev1.Pod, vms []kubevirtv1.VirtualMachine, now time.Time, minAge time.Duration) []Orphan {
	byName := make(map[status.Key]*corev1.Pod, len(pods))
	for i := range pods {
		byName[status.Key{Namespace: pods[i].Namespace, Name: pods[i].Name}] = &pods[i]
	}
	var out []Orphan
	for i := range vms {
		vm := &vms[i]
		if !status.IsDerived(vm) || vm.DeletionTimestamp != nil {
			continue
		}
		age := now.Sub(vm.CreationTimestamp.Time)
		if age < minAge {
			continue
		}
		o := status.OriginOf(vm)
		reason := PodGone
		if pod := byName[status.Key{Namespace: o.PodNamespace, Name: o.PodName}]; pod != nil {
			if pod.UID == o.PodUID {
				continue
			}
			reason = PodReplaced
		}
		out = append(out, Orphan{
			Namespace: vm.Namespace, Name: vm.Name, UID: vm.UID,
			PodNamespace: o.PodNamespace, PodName: o.PodName, PodUID: o.PodUID,
			Reason: reason, Age: age,
		})
	}
	slices.SortFunc(out, func(a, b Orphan) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return out
}

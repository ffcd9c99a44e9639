package gc

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"kubevirt.io/client-go/kubevirt"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
)

// OrphanVMI is a VMI with vmctl's labels that no VM owns nor has the name
// of (derive.IsOrphanedInstance): its VM was deleted with
// propagationPolicy Orphan, and its guest runs on with neither VM nor Pod.
type OrphanVMI struct {
	Namespace, Name string
	// UID is the VMI's; deleting with it as precondition spares one made
	// again meanwhile.
	UID types.UID
	// Pod is the Pod its labels name, in its namespace.
	Pod string
	Age time.Duration
}

// Why explains the orphan the way gc prints it.
func (o OrphanVMI) Why() string {
	return fmt.Sprintf("orphaned: no VM, and its Pod %q no longer exists", o.Pod)
}

// OrphanedVMIs returns the VMIs among vmis that no VM owns
// (derive.IsOrphanedInstance) and of whose name vmExists finds no VM, at
// least minAge old. One whose Pod, by the name its labels hold, is among
// pods is Spared: that Pod's agent makes its VM again, which adopts the
// instance. Both results are sorted by namespace and name.
func OrphanedVMIs(vmis []kubevirtv1.VirtualMachineInstance, vmExists func(types.NamespacedName) bool, pods []corev1.Pod,
	now time.Time, minAge time.Duration) ([]OrphanVMI, []Spared) {
	live := make(map[types.NamespacedName]bool, len(pods))
	for _, p := range pods {
		live[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = true
	}
	var orphans []OrphanVMI
	var spared []Spared
	for i := range vmis {
		vmi := &vmis[i]
		key := types.NamespacedName{Namespace: vmi.Namespace, Name: vmi.Name}
		age := now.Sub(vmi.CreationTimestamp.Time)
		if !derive.IsOrphanedInstance(vmi) || vmExists(key) || age < minAge {
			continue
		}
		pod := vmi.Labels[contract.LabelPod]
		if live[types.NamespacedName{Namespace: vmi.Namespace, Name: pod}] {
			spared = append(spared, Spared{Namespace: vmi.Namespace, Name: vmi.Name, Kind: KindVMI,
				Why: fmt.Sprintf("no VM owns it, but its Pod %q lives: its agent makes its VM again, which adopts it", pod)})
			continue
		}
		orphans = append(orphans, OrphanVMI{Namespace: vmi.Namespace, Name: vmi.Name, UID: vmi.UID, Pod: pod, Age: age})
	}
	slices.SortFunc(orphans, func(a, b OrphanVMI) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return orphans, spared
}

// DeleteVMI deletes the orphaned VMI, on condition that it is still the
// VMI of that UID; KubeVirt then stops its guest, which gets its grace
// period. dryRun is passed on as the API's dryRun.
func DeleteVMI(ctx context.Context, c kubevirt.Interface, o OrphanVMI, dryRun []string) error {
	uid := o.UID
	return c.KubevirtV1().VirtualMachineInstances(o.Namespace).Delete(ctx, o.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &uid},
		DryRun:        dryRun,
	})
}

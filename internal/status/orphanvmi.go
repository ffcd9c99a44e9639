package status

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
)

// orphanedVMIs are the rows of the VMIs inv holds that carry vmctl's
// labels, in the query's scope, and that no VM owns nor has the name of
// (derive.IsOrphanedInstance): a VM deleted with propagationPolicy Orphan leaves its
// instance, and the guest in it, running with neither VM nor, once its
// Pod goes, Pod. podNames are the Pods read, by namespace and name.
func orphanedVMIs(inv *Inventory, podNames map[types.NamespacedName]*corev1.Pod) []Row {
	vms := make(map[types.NamespacedName]bool, len(inv.VMs))
	for _, vm := range inv.VMs {
		vms[types.NamespacedName{Namespace: vm.Namespace, Name: vm.Name}] = true
	}
	var rows []Row
	for _, vmi := range inv.VMIs {
		q := inv.Query
		if !q.InScope(vmi.Namespace) || vms[types.NamespacedName{Namespace: vmi.Namespace, Name: vmi.Name}] || !derive.IsOrphanedInstance(vmi) {
			continue
		}
		prototype := vmi.Labels[contract.LabelPrototype]
		if q.Prototype != "" && prototype != derive.LabelValue(q.Prototype) {
			continue
		}
		r := Row{Namespace: vmi.Namespace, Pod: vmi.Labels[contract.LabelPod], VM: vmi.Name, VMNamespace: vmi.Namespace,
			VMINode: vmi.Status.NodeName, VMIP: firstIP(vmi), Created: vmi.CreationTimestamp, Problems: []string{ProblemOrphanedVMI}}
		if pod := podNames[types.NamespacedName{Namespace: vmi.Namespace, Name: r.Pod}]; pod != nil {
			r.PodUID, r.Node = pod.UID, pod.Spec.NodeName
		}
		rows = append(rows, r)
	}
	return rows
}

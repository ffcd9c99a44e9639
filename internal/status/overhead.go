package status

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/reserve"
)

// slim is kube.Slim, which keeps of a VMI also, when KubeVirt reports its
// memory overhead (status.memory.memoryOverhead, with the feature gate
// VmiMemoryOverheadReport), that figure and what vmctl's rule reads to
// compute it (reserve.KeepOverheadInputs).
func slim(obj any) (any, error) {
	kept, err := kube.Slim(obj)
	if vmi, ok := obj.(*kubevirtv1.VirtualMachineInstance); ok && err == nil && reportedOverhead(vmi) != nil {
		k := kept.(*kubevirtv1.VirtualMachineInstance)
		k.Spec = reserve.KeepOverheadInputs(&vmi.Spec)
		k.Status.Memory = &kubevirtv1.MemoryStatus{MemoryOverhead: reportedOverhead(vmi)}
	}
	return kept, err
}

func reportedOverhead(vmi *kubevirtv1.VirtualMachineInstance) *resource.Quantity {
	if vmi.Status.Memory == nil {
		return nil
	}
	return vmi.Status.Memory.MemoryOverhead
}

// needsKubeVirt reports whether inv holds what the overhead check compares
// and lacks the KubeVirt CR to compute vmctl's figure: a VMI that reports
// its memory overhead, beside an agent Pod that holds its VM's room.
func needsKubeVirt(inv *Inventory) bool {
	if inv.KubeVirtRead {
		return false
	}
	reserving := false
	for _, p := range inv.Pods {
		reserving = reserving || p.Annotations[contract.AnnotationReservation] != ""
	}
	if !reserving {
		return false
	}
	for _, vmi := range inv.VMIs {
		if reportedOverhead(vmi) != nil {
			return true
		}
	}
	return false
}

// readKubeVirt reads the KubeVirt CR into inv (reserve.LoadKubeVirt) when
// the overhead check needs it. Without leave to list KubeVirt CRs, or when
// the LIST fails, status does without the check.
func readKubeVirt(ctx context.Context, c kube.Clients, inv *Inventory) {
	if !needsKubeVirt(inv) {
		return
	}
	kv, err := reserve.LoadKubeVirt(ctx, c)
	if err != nil {
		klog.FromContext(ctx).V(2).Info("Not comparing KubeVirt's memory overhead with vmctl's", "err", err)
		return
	}
	inv.KubeVirt, inv.KubeVirtRead = kv, true
}

// overheadWarning says, for proto, where KubeVirt reports another memory
// overhead for one of its VMs than vmctl's rule computes from the VM's
// instance (reserve.MemoryOverheadOf): its agent Pods then hold that much
// too little or too much. "" when they agree, or when nothing can be
// compared (no VMI reports it, no agent Pod of proto holds room, or the
// KubeVirt CR could not be read).
func overheadWarning(inv *Inventory, proto types.NamespacedName) string {
	if !inv.KubeVirtRead {
		return ""
	}
	reserving := false
	for _, p := range inv.Pods {
		if a, ok := contract.ParseAgent(p); ok && a.PrototypeNamespace == proto.Namespace && a.Prototype == proto.Name {
			reserving = reserving || p.Annotations[contract.AnnotationReservation] != ""
		}
	}
	if !reserving {
		return ""
	}
	vmis := map[types.NamespacedName]*kubevirtv1.VirtualMachineInstance{}
	for _, vmi := range inv.VMIs {
		vmis[types.NamespacedName{Namespace: vmi.Namespace, Name: vmi.Name}] = vmi
	}
	for _, vm := range inv.VMs {
		if !derive.IsAgentVM(vm) || derive.OriginOf(vm).Prototype() != proto {
			continue
		}
		vmi := vmis[types.NamespacedName{Namespace: vm.Namespace, Name: vm.Name}]
		if vmi == nil || reportedOverhead(vmi) == nil {
			continue
		}
		theirs, ours := *reportedOverhead(vmi), reserve.MemoryOverheadOf(vmi, inv.KubeVirt)
		if theirs.Cmp(ours) == 0 {
			continue
		}
		off := theirs.DeepCopy()
		off.Sub(ours)
		side := "too little"
		if off.Sign() < 0 {
			off.Neg()
			side = "too much"
		}
		release := "a KubeVirt of no known release"
		if inv.KubeVirt != nil && inv.KubeVirt.Status.ObservedKubeVirtVersion != "" {
			release = "KubeVirt " + inv.KubeVirt.Status.ObservedKubeVirtVersion
		}
		return fmt.Sprintf("KubeVirt counts %s of memory overhead for VM %s/%s (its VMI's status.memory.memoryOverhead), "+
			"vmctl's rule for %s %s, so its agent Pods hold %s %s for each VM, unless KubeVirt's configuration changed since the VM started: "+
			"upgrade kubectl-vmctl, or report it with both versions",
			quantity(theirs), vm.Namespace, vm.Name, release, quantity(ours), quantity(off), side)
	}
	return ""
}

// quantity writes q in bytes, and in Mi when it is a whole number of them.
func quantity(q resource.Quantity) string {
	const mi = 1 << 20
	if v := q.Value(); v%mi == 0 {
		return fmt.Sprintf("%dMi", v/mi)
	}
	return fmt.Sprintf("%d bytes", q.Value())
}

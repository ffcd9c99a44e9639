package doubles

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// The pure half of the virt-controller test double: what a VM asks for and
// what its VMI and status should look like. No clients, no clock.

// vmShouldRun reports whether the VM asks for a running VMI. Every run
// strategy that starts a VMI on its own counts as running; Halted, Manual,
// an unknown value and an unset or false spec.running count as stopped.
func vmShouldRun(vm *kubevirtv1.VirtualMachine) bool {
	if vm.Spec.RunStrategy != nil {
		switch *vm.Spec.RunStrategy {
		case kubevirtv1.RunStrategyAlways, kubevirtv1.RunStrategyRerunOnFailure, kubevirtv1.RunStrategyOnce:
			return true
		default:
			return false
		}
	}
	return ptr.Deref(vm.Spec.Running, false)
}

// nodeFromAffinity returns the node a VMI template is pinned to: the first
// value of the first required node selector term that has a matchFields
// `metadata.name In [...]` expression. It returns "" when there is none.
func nodeFromAffinity(spec *kubevirtv1.VirtualMachineInstanceSpec) string {
	if spec == nil || spec.Affinity == nil || spec.Affinity.NodeAffinity == nil {
		return ""
	}
	required := spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	if required == nil {
		return ""
	}
	for _, term := range required.NodeSelectorTerms {
		for _, req := range term.MatchFields {
			if req.Key == "metadata.name" && req.Operator == corev1.NodeSelectorOpIn && len(req.Values) > 0 {
				return req.Values[0]
			}
		}
	}
	return ""
}

// newVMIFor builds the VMI that the double creates for vm. The VMI CRD has
// no status subresource, so the status travels with the create: a VMI pinned
// to a node is Running and Ready at once; one without a node stays
// Scheduling, as it would if no node fit.
func newVMIFor(vm *kubevirtv1.VirtualMachine) *kubevirtv1.VirtualMachineInstance {
	vmi := &kubevirtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{
			Name:      vm.Name,
			Namespace: vm.Namespace,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion:         kubevirtv1.SchemeGroupVersion.String(),
				Kind:               "VirtualMachine",
				Name:               vm.Name,
				UID:                vm.UID,
				Controller:         ptr.To(true),
				BlockOwnerDeletion: ptr.To(true),
			}},
		},
	}
	if tmpl := vm.Spec.Template; tmpl != nil {
		vmi.Labels = maps.Clone(tmpl.ObjectMeta.Labels)
		vmi.Annotations = maps.Clone(tmpl.ObjectMeta.Annotations)
		tmpl.Spec.DeepCopyInto(&vmi.Spec)
	}
	node := nodeFromAffinity(&vmi.Spec)
	if node == "" {
		vmi.Status.Phase = kubevirtv1.Scheduling
		return vmi
	}
	if vmi.Labels == nil {
		vmi.Labels = map[string]string{}
	}
	vmi.Labels[kubevirtv1.NodeNameLabel] = node
	vmi.Status.NodeName = node
	vmi.Status.Phase = kubevirtv1.Running
	vmi.Status.Conditions = []kubevirtv1.VirtualMachineInstanceCondition{{
		Type:   kubevirtv1.VirtualMachineInstanceReady,
		Status: corev1.ConditionTrue,
	}}
	return vmi
}

// vmiReady reports whether a VMI is running on a node with Ready=True.
func vmiReady(vmi *kubevirtv1.VirtualMachineInstance) bool {
	if vmi == nil || vmi.DeletionTimestamp != nil || vmi.Status.NodeName == "" || vmi.Status.Phase != kubevirtv1.Running {
		return false
	}
	for _, c := range vmi.Status.Conditions {
		if c.Type == kubevirtv1.VirtualMachineInstanceReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// vmStatusFields is the part of a VM's status the double owns.
type vmStatusFields struct {
	Created         bool
	Ready           bool
	PrintableStatus kubevirtv1.VirtualMachinePrintableStatus
}

// desiredVMStatus says what a VM's status should read, given whether it
// should run and its VMI (nil when there is none, or when the VMI belongs to
// an earlier VM of the same name).
func desiredVMStatus(run bool, vmi *kubevirtv1.VirtualMachineInstance) vmStatusFields {
	switch {
	case vmi == nil && !run:
		return vmStatusFields{PrintableStatus: kubevirtv1.VirtualMachineStatusStopped}
	case vmi == nil:
		return vmStatusFields{PrintableStatus: kubevirtv1.VirtualMachineStatusStarting}
	case !run || vmi.DeletionTimestamp != nil:
		return vmStatusFields{Created: true, PrintableStatus: kubevirtv1.VirtualMachineStatusStopping}
	case vmiReady(vmi):
		return vmStatusFields{Created: true, Ready: true, PrintableStatus: kubevirtv1.VirtualMachineStatusRunning}
	default:
		return vmStatusFields{Created: true, PrintableStatus: kubevirtv1.VirtualMachineStatusStarting}
	}
}

// applyVMStatus writes want into status, with a Ready condition to match, and
// reports whether anything changed. now stamps a Ready condition that flips.
func applyVMStatus(status *kubevirtv1.VirtualMachineStatus, want vmStatusFields, now metav1.Time) bool {
	readyStatus := corev1.ConditionFalse
	if want.Ready {
		readyStatus = corev1.ConditionTrue
	}
	changed := status.Created != want.Created || status.Ready != want.Ready || status.PrintableStatus != want.PrintableStatus
	status.Created, status.Ready, status.PrintableStatus = want.Created, want.Ready, want.PrintableStatus

	for i := range status.Conditions {
		c := &status.Conditions[i]
		if c.Type != kubevirtv1.VirtualMachineReady {
			continue
		}
		if c.Status != readyStatus {
			c.Status, c.LastTransitionTime, c.LastProbeTime = readyStatus, now, metav1.Time{}
			changed = true
		}
		return changed
	}
	status.Conditions = append(status.Conditions, kubevirtv1.VirtualMachineCondition{
		Type:               kubevirtv1.VirtualMachineReady,
		Status:             readyStatus,
		LastTransitionTime: now,
	})
	return true
}

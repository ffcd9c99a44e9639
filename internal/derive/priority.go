package derive

import (
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
)

// launcherPriority gives vm's launcher Pod the priority class class, when
// set, in place of the prototype's: one of the prototype's priority value
// that never preempts (see Options.LauncherPriorityClass).
func launcherPriority(vm *kubevirtv1.VirtualMachine, class string) {
	if class == "" {
		return
	}
	vm.Spec.Template.Spec.PriorityClassName = class
	vm.Annotations[contract.AnnotationLauncherPriorityClass] = class
}

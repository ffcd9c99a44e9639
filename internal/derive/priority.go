package derive

import kubevirtv1 "kubevirt.io/api/core/v1"

// AnnotationLauncherPriorityClass, on a VM derived with
// Options.LauncherPriorityClass, names that class: diff derives the VM
// again with it.
const AnnotationLauncherPriorityClass = "vmctl.kubevirt.io/launcher-priority-class"

// launcherPriority gives vm's launcher Pod the priority class class, when
// set, in place of the prototype's: one of the prototype's priority value
// that never preempts (see Options.LauncherPriorityClass).
func launcherPriority(vm *kubevirtv1.VirtualMachine, class string) {
	if class == "" {
		return
	}
	vm.Spec.Template.Spec.PriorityClassName = class
	vm.Annotations[AnnotationLauncherPriorityClass] = class
}

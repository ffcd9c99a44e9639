package derive

import kubevirtv1 "kubevirt.io/api/core/v1"

// AnnotationLauncherPriorityClass names, on a VM derived with
// Options.LauncherPriorityClass, that class: diff derives the VM again
// with it. On an agent Pod's template it names the class the agent gives
// its VM.
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

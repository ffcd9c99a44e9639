// Package stuck names the states of a derived VirtualMachine that KubeVirt
// does not leave by itself, with the cause KubeVirt gives, so that the
// agent's /readyz and Events and the PROBLEM column of `kubectl vmctl status`
// say the same; and the one state of an agent Pod that ends by itself, a
// wait for room (OfPod), so that status words it as a wait. It is pure: it
// reads the VM's status, which virt-controller fills with its own
// conditions and those of the VM's instance, and the Pod's. It names too
// the three states an agent does not leave by itself before it has a VM:
// its Pod's template pins a VM revision that the workload's revision store
// lacks, or holds rewritten, or pins none.
package stuck

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// Problem is a state the VM will not leave by itself.
type Problem struct {
	// Reason is one word: the agent's Event reason and what its /readyz says.
	Reason string
	// Message is what is wrong, then KubeVirt's cause, shortened to one line:
	// the Event's message and status's PROBLEM.
	Message string
	// HasInstance is false when the VM has no VMI in this state (it never got
	// that far): advice must point at the VM, not at its VMI.
	HasInstance bool
}

// Event reasons and /readyz words, one per kind of problem.
const (
	ReasonUnschedulable   = "VMUnschedulable"
	ReasonPVCNotFound     = "VMPVCNotFound"
	ReasonDataVolume      = "VMDataVolumeFailed"
	ReasonImagePull       = "VMImagePullFailed"
	ReasonCrashLoop       = "VMCrashLoop"
	ReasonLauncherRefused = "VMLauncherRefused"
	ReasonStartFailed     = "VMStartFailed"
	ReasonStopped         = "VMStopped"
	// ReasonRevisionMissing, ReasonRevisionRewritten and ReasonNotPinned
	// are the agent's, not Of's: there is no VM.
	ReasonRevisionMissing   = "VMRevisionMissing"
	ReasonRevisionRewritten = "VMRevisionRewritten"
	ReasonNotPinned         = "VMRevisionNotPinned"
)

// What each problem's message starts with: States gives each its
// troubleshooting row.
const (
	Unschedulable    = "VM cannot be scheduled on its node"
	PVCNotFound      = "VM's PVC is missing"
	DataVolumeCreate = "VM's DataVolume cannot be created"
	DataVolumeFailed = "VM's DataVolume failed"
	ImagePull        = "VM's image cannot be pulled"
	CrashLoop        = "VM keeps failing to start"
	LauncherRefused  = "VM's launcher Pod cannot be created"
	StartFailed      = "VM cannot start"
	Stopped          = "VM stopped"
	RevisionMissing  = "VM revision missing"
	// RevisionRewritten is also a problem status finds itself, of every
	// Pod that pins such a revision.
	RevisionRewritten = "VM revision rewritten"
	// NotPinned is also a problem status finds itself, of every agent Pod
	// that pins no revision.
	NotPinned = "no VM revision pinned"
)

// condition types virt-controller copies onto the VM from its VMI.
const (
	podScheduled = kubevirtv1.VirtualMachineConditionType(corev1.PodScheduled)
	synchronized = kubevirtv1.VirtualMachineConditionType(kubevirtv1.VirtualMachineInstanceSynchronized)
)

// failedCreate is virt-controller's reason on a VMI whose launcher Pod the
// API server refused (a ResourceQuota, a LimitRange, an admission webhook).
const failedCreate = "FailedCreate"

// Of reports the problem vm is stuck in, if any. A derived VM always has
// runStrategy Always; any other means someone stopped it (virtctl stop sets
// Halted), which the agent does not undo. The other states are KubeVirt's
// printableStatus values for VMs that cannot start, and its Failure
// condition (a sync error, such as a DataVolume the API server refused).
// A VM that is being deleted has no problem: it is on its way out.
func Of(vm *kubevirtv1.VirtualMachine) (Problem, bool) {
	if vm == nil || vm.DeletionTimestamp != nil {
		return Problem{}, false
	}
	if rs := vm.Spec.RunStrategy; rs != nil && *rs != kubevirtv1.RunStrategyAlways {
		return Problem{Reason: ReasonStopped, HasInstance: false,
			Message: fmt.Sprintf("%s (runStrategy %s): someone stopped it; `virtctl start %s` starts it again", Stopped, *rs, vm.Name)}, true
	}
	s := vm.Status
	switch s.PrintableStatus {
	case kubevirtv1.VirtualMachineStatusUnschedulable:
		return problem(ReasonUnschedulable, Unschedulable, schedulerCause(message(vm, podScheduled)), true), true
	case kubevirtv1.VirtualMachineStatusPvcNotFound:
		return problem(ReasonPVCNotFound, PVCNotFound, message(vm, synchronized), true), true
	case kubevirtv1.VirtualMachineStatusDataVolumeError:
		return problem(ReasonDataVolume, DataVolumeFailed, failure(vm), false), true
	case kubevirtv1.VirtualMachineStatusErrImagePull, kubevirtv1.VirtualMachineStatusImagePullBackOff:
		return problem(ReasonImagePull, ImagePull, message(vm, synchronized), true), true
	case kubevirtv1.VirtualMachineStatusCrashLoopBackOff:
		cause := failure(vm)
		if f := s.StartFailure; f != nil && cause == "" {
			cause = fmt.Sprintf("%d failed starts in a row", f.ConsecutiveFailCount)
		}
		return problem(ReasonCrashLoop, CrashLoop, cause, false), true
	}
	if c := condition(vm, synchronized); c != nil && c.Status == corev1.ConditionFalse && c.Reason == failedCreate {
		return problem(ReasonLauncherRefused, LauncherRefused, strings.TrimPrefix(c.Message, "failed to create virtual machine pod: "), true), true
	}
	if msg := failure(vm); msg != "" {
		if cause, ok := dataVolumeCreateCause(msg); ok {
			return problem(ReasonDataVolume, DataVolumeCreate, cause, false), true
		}
		return problem(ReasonStartFailed, StartFailed, msg, false), true
	}
	return Problem{}, false
}

func problem(reason, what, cause string, hasInstance bool) Problem {
	msg := what
	if cause = shorten(cause); cause != "" {
		msg += ": " + cause
	}
	return Problem{Reason: reason, Message: msg, HasInstance: hasInstance}
}

func condition(vm *kubevirtv1.VirtualMachine, t kubevirtv1.VirtualMachineConditionType) *kubevirtv1.VirtualMachineCondition {
	for i := range vm.Status.Conditions {
		if vm.Status.Conditions[i].Type == t {
			return &vm.Status.Conditions[i]
		}
	}
	return nil
}

// message is the message of vm's condition t when it is False, else "".
func message(vm *kubevirtv1.VirtualMachine, t kubevirtv1.VirtualMachineConditionType) string {
	if c := condition(vm, t); c != nil && c.Status == corev1.ConditionFalse {
		return c.Message
	}
	return ""
}

// failure is the message of vm's Failure condition, which virt-controller
// sets to the error of its last sync, or "".
func failure(vm *kubevirtv1.VirtualMachine) string {
	if c := condition(vm, kubevirtv1.VirtualMachineFailure); c != nil && c.Status == corev1.ConditionTrue {
		return c.Message
	}
	return ""
}

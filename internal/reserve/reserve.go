// Package reserve computes, from a VirtualMachine, the CPU and memory that
// the scheduler counts for the virt-launcher Pod KubeVirt's virt-controller
// makes for it, so that an agent Pod can hold that room on its node before
// the VM exists. It is pure: no clients, no clock.
//
// The rule mirrors KubeVirt v1.7.0, v1.8.0 and v1.9.0, function by
// function, without importing it: how the VM controller makes the VMI (and
// applies the instancetype and preference), what virt-api's mutating
// webhook defaults, and what virt-controller's TemplateService renders (the
// compute container's requests, its memory overhead, and the support
// containers). Each function names the KubeVirt function it mirrors. The
// release comes from the KubeVirt CR's status.observedKubeVirtVersion
// (releaseOf), and the releases differ in three places: how a feature gate
// is decided (gateEnabled: from v1.9 a Beta gate such as ImageVolume is on
// unless disabled), the core passt binding's 250Mi (v1.8 and later), and
// memory.reservedOverhead (v1.8 and later). A release vmctl does not know
// follows the nearest it knows, and Note says so. The e2e test
// TestLauncherReservationMatchesKubeVirt holds the rule to the real
// virt-controller of each release: for every VM of its matrix the figures
// are equal, to the byte and the millicore, so the rule states no error
// bound.
//
// What the rule does not see, and where it may then differ from KubeVirt:
// VirtualMachineInstancePresets (deprecated) that virt-api applies to the
// VMI; a namespace's LimitRange, which gives defaults to the support
// containers that request nothing (hook sidecars, burstable); the
// architecture of virt-controller itself, taken for amd64 when neither the
// VM nor the KubeVirt CR's status names one; and ImageVolume init
// containers that KubeVirt skips for images whose digest it already knows.
package reserve

import (
	"errors"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	kubevirtv1 "kubevirt.io/api/core/v1"
	instancetypev1beta1 "kubevirt.io/api/instancetype/v1beta1"
)

// Inputs are what KubeVirt reads besides the VM to size its launcher Pod.
type Inputs struct {
	// Instancetype is the spec of the instancetype the VM references,
	// cluster-wide or namespaced; it must be set when the VM references one.
	Instancetype *instancetypev1beta1.VirtualMachineInstancetypeSpec
	// Preference is the spec of the preference the VM references; it must be
	// set when the VM references one.
	Preference *instancetypev1beta1.VirtualMachinePreferenceSpec
	// KubeVirt is the KubeVirt CR whose spec.configuration virt-api and
	// virt-controller run with (the one with a status.phase), and whose
	// status.observedKubeVirtVersion says the release; nil means none, so
	// KubeVirt's defaults, on amd64, in the newest release vmctl knows.
	KubeVirt *kubevirtv1.KubeVirt
	// PodOverhead is the overhead.podFixed of the RuntimeClass named by the
	// CR's spec.configuration.defaultRuntimeClass, if any: the RuntimeClass
	// admission plugin sets it as the launcher Pod's spec.overhead.
	PodOverhead corev1.ResourceList
}

// Launcher returns the CPU and memory the scheduler counts for the
// virt-launcher Pod of vm: the larger of the sum of its containers
// (restartable init containers included) and of its largest init
// container, plus the Pod's overhead, as the scheduler's
// resourcehelper.PodRequests computes it. It errs when vm references an
// instancetype or preference that in lacks, or when KubeVirt would refuse
// to make or render the VMI for a reason it can see.
//
// Not counted: hugepages (the guest's memory then is hugepages-<size>, not
// memory), device plugin resources and DRA claims, a namespace's LimitRange
// defaults, and hotplug attachment Pods, which are Pods of their own.
func Launcher(vm *kubevirtv1.VirtualMachine, in Inputs) (corev1.ResourceList, error) {
	pod, err := LauncherPod(vm, in)
	if err != nil {
		return nil, err
	}
	return Counted(pod), nil
}

// MemoryOverheadOf returns the memory overhead virt-controller computes
// for vmi, a VMI as KubeVirt made it (its instancetype, preference and
// defaults applied), in the cluster whose KubeVirt CR is kv (nil for
// none): part of the compute container's request, and what KubeVirt
// reports as the VMI's status.memory.memoryOverhead and in its launcher
// Pod's kubevirt.io/memory-overhead-bytes annotation (with the feature
// gate VmiMemoryOverheadReport, Beta from v1.9). Of vmi it reads only what
// KeepOverheadInputs keeps.
func MemoryOverheadOf(vmi *kubevirtv1.VirtualMachineInstance, kv *kubevirtv1.KubeVirt) resource.Quantity {
	return memoryOverhead(vmi, newConfig(kv))
}

// Note says, when vmctl does not know the KubeVirt release of in (a newer
// or older one, or none it can read), whose rules the reservation follows;
// "" when it knows it.
func Note(in Inputs) string {
	_, note := releaseOf(in.KubeVirt)
	return note
}

// LauncherPod returns the parts of vm's virt-launcher Pod that the
// scheduler counts: its containers and init containers, named as KubeVirt
// names them, with their CPU and memory requests and limits as the API
// server stores them (a missing request defaults to its limit), and its
// overhead. Launcher sums them.
func LauncherPod(vm *kubevirtv1.VirtualMachine, in Inputs) (*corev1.Pod, error) {
	if vm == nil {
		return nil, errors.New("no VM")
	}
	c := newConfig(in.KubeVirt)
	vmi, err := instance(vm, in, c)
	if err != nil {
		return nil, err
	}
	compute := container("compute", corev1.ResourceRequirements{Requests: computeRequests(vmi, c)})
	containers, inits, err := supportContainers(vmi, c)
	if err != nil {
		return nil, err
	}
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		Containers:     append([]corev1.Container{compute}, containers...),
		InitContainers: inits,
		Overhead:       in.PodOverhead.DeepCopy(),
	}}
	for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range list {
			defaultRequests(&list[i].Resources)
		}
	}
	return pod, nil
}

// defaultRequests does what the API server's Pod defaulting does
// (SetDefaults_Pod): a limit without a request makes the request. Only CPU
// and memory are kept.
func defaultRequests(r *corev1.ResourceRequirements) {
	for _, list := range []corev1.ResourceList{r.Requests, r.Limits} {
		for name := range list {
			if name != corev1.ResourceCPU && name != corev1.ResourceMemory {
				delete(list, name)
			}
		}
	}
	for name, q := range r.Limits {
		if _, ok := r.Requests[name]; !ok {
			if r.Requests == nil {
				r.Requests = corev1.ResourceList{}
			}
			r.Requests[name] = q
		}
	}
	if len(r.Limits) == 0 {
		r.Limits = nil
	}
	if len(r.Requests) == 0 {
		r.Requests = nil
	}
}

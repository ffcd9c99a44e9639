package reserve

import (
	"errors"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// instance is the VirtualMachineInstance virt-controller renders a launcher
// Pod for: what the VM controller makes of vm (SetupVMIFromVM, then
// ApplyAutoAttachPreferences and ApplyToVMI in startVMI,
// pkg/virt-controller/watch/vm/vm.go), after virt-api's mutating webhook
// set its defaults (ApplyNewVMIMutations,
// pkg/virt-api/webhooks/mutating-webhook/mutators/vmi-mutator.go). Only
// what changes the Pod's resources is kept.
func instance(vm *kubevirtv1.VirtualMachine, in Inputs, c config) (*kubevirtv1.VirtualMachineInstance, error) {
	if vm == nil || vm.Spec.Template == nil {
		return nil, errors.New("the VM has no spec.template")
	}
	if vm.Spec.Instancetype != nil && in.Instancetype == nil {
		return nil, fmt.Errorf("the VM takes its size from %s %q: read it into Inputs.Instancetype", kindOr(vm.Spec.Instancetype.Kind, "VirtualMachineClusterInstancetype"), vm.Spec.Instancetype.Name)
	}
	if vm.Spec.Preference != nil && in.Preference == nil {
		return nil, fmt.Errorf("the VM has preference %s %q: read it into Inputs.Preference", kindOr(vm.Spec.Preference.Kind, "VirtualMachineClusterPreference"), vm.Spec.Preference.Name)
	}
	vmi := &kubevirtv1.VirtualMachineInstance{Spec: *vm.Spec.Template.Spec.DeepCopy()}
	vmi.Namespace = vm.Namespace
	vmi.Annotations = maps.Clone(vm.Spec.Template.ObjectMeta.Annotations)

	// The VM controller applies the instancetype and preference only when
	// the VM references them.
	it, pref := in.Instancetype, in.Preference
	if vm.Spec.Instancetype == nil {
		it = nil
	}
	if vm.Spec.Preference == nil {
		pref = nil
	}
	if pref != nil {
		applyAutoAttach(pref, &vmi.Spec)
	}
	if it != nil {
		if err := applyInstancetype(it, pref, &vmi.Spec); err != nil {
			return nil, err
		}
		// applyInstanceTypeAnnotations: the instancetype's annotations join
		// the VMI's (a hook sidecar list among them); a different value is
		// a conflict.
		for k, v := range it.Annotations {
			if old, ok := vmi.Annotations[k]; ok && old != v {
				return nil, fmt.Errorf("the VM's template sets annotation %s, which its instancetype sets otherwise: KubeVirt refuses such a VM", k)
			}
			vmi.Annotations = setKey(vmi.Annotations, k, v)
		}
	}
	if pref != nil {
		applyPreference(pref, &vmi.Spec)
		// applyPreferenceAnnotations: the VMI's own values win.
		for k, v := range pref.Annotations {
			if _, ok := vmi.Annotations[k]; !ok {
				vmi.Annotations = setKey(vmi.Annotations, k, v)
			}
		}
	}

	setDefaults(&vmi.Spec, c)
	if vmi.Spec.Domain.CPU.IsolateEmulatorThread && c.evenParity {
		vmi.Annotations = setKey(vmi.Annotations, kubevirtv1.EmulatorThreadCompleteToEvenParity, "")
	}
	return vmi, nil
}

func setKey(m map[string]string, k, v string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[k] = v
	return m
}

func kindOr(kind, def string) string {
	if kind == "" {
		return def
	}
	return kind
}

// setDefaults mirrors what SetDefaultVirtualMachineInstanceSpec
// (pkg/defaults/defaults.go) does that the resources depend on:
// setDefaultArchitecture, setDefaultResourceRequests, setGuestMemory and
// SetDefaultGuestCPUTopology, in that order.
func setDefaults(spec *kubevirtv1.VirtualMachineInstanceSpec, c config) {
	if spec.Architecture == "" {
		spec.Architecture = c.arch
	}

	res := &spec.Domain.Resources
	if !res.Limits.Cpu().IsZero() && res.Requests.Cpu().IsZero() {
		if res.Requests == nil {
			res.Requests = corev1.ResourceList{}
		}
		res.Requests[corev1.ResourceCPU] = res.Limits[corev1.ResourceCPU]
	}
	if c.cpuRequest != nil {
		if _, ok := res.Requests[corev1.ResourceCPU]; !ok && (spec.Domain.CPU == nil || !spec.Domain.CPU.DedicatedCPUPlacement) {
			if res.Requests == nil {
				res.Requests = corev1.ResourceList{}
			}
			res.Requests[corev1.ResourceCPU] = *c.cpuRequest
		}
	}

	if spec.Domain.Memory == nil || spec.Domain.Memory.Guest == nil {
		if spec.Domain.Memory == nil {
			spec.Domain.Memory = &kubevirtv1.Memory{}
		}
		switch {
		case !res.Requests.Memory().IsZero():
			spec.Domain.Memory.Guest = res.Requests.Memory()
		case !res.Limits.Memory().IsZero():
			spec.Domain.Memory.Guest = res.Limits.Memory()
		case spec.Domain.Memory.Hugepages != nil:
			if size, err := resource.ParseQuantity(spec.Domain.Memory.Hugepages.PageSize); err == nil {
				spec.Domain.Memory.Guest = &size
			}
		}
	}

	cpu := spec.Domain.CPU
	if cpu == nil || (cpu.Cores == 0 && cpu.Sockets == 0 && cpu.Threads == 0) {
		if spec.Domain.CPU == nil {
			spec.Domain.CPU = &kubevirtv1.CPU{}
		}
		sockets := uint32(1)
		if limit, ok := res.Limits[corev1.ResourceCPU]; ok {
			sockets = uint32(limit.Value())
		} else if request, ok := res.Requests[corev1.ResourceCPU]; ok {
			sockets = uint32(request.Value())
		}
		spec.Domain.CPU.Sockets, spec.Domain.CPU.Cores, spec.Domain.CPU.Threads = sockets, 1, 1
	}
}

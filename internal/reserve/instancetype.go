package reserve

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	instancetypev1beta1 "kubevirt.io/api/instancetype/v1beta1"
)

// applyInstancetype mirrors the parts of vmiApplier.ApplyToVMI
// (pkg/instancetype/apply) that size the VMI: applyCPU, applyMemory,
// applyIOThreads, applyIOThreadPolicy, applyLaunchSecurity, applyGPUs and
// applyHostDevices. A VM field the instancetype also sets is a conflict,
// which KubeVirt refuses too.
func applyInstancetype(it *instancetypev1beta1.VirtualMachineInstancetypeSpec, pref *instancetypev1beta1.VirtualMachinePreferenceSpec, spec *kubevirtv1.VirtualMachineInstanceSpec) error {
	d := &spec.Domain
	if d.CPU == nil {
		d.CPU = &kubevirtv1.CPU{}
	}
	if d.Memory == nil {
		d.Memory = &kubevirtv1.Memory{}
	}
	var conflicts []string
	conflict := func(set bool, path string) {
		if set {
			conflicts = append(conflicts, "spec.template.spec.domain."+path)
		}
	}
	_, cpuReq := d.Resources.Requests[corev1.ResourceCPU]
	_, cpuLim := d.Resources.Limits[corev1.ResourceCPU]
	_, memReq := d.Resources.Requests[corev1.ResourceMemory]
	_, memLim := d.Resources.Limits[corev1.ResourceMemory]
	conflict(cpuReq, "resources.requests.cpu")
	conflict(cpuLim, "resources.limits.cpu")
	conflict(d.CPU.Sockets != 0, "cpu.sockets")
	conflict(d.CPU.Cores != 0, "cpu.cores")
	conflict(d.CPU.Threads != 0, "cpu.threads")
	conflict(d.CPU.DedicatedCPUPlacement && it.CPU.DedicatedCPUPlacement != nil, "cpu.dedicatedCPUPlacement")
	conflict(d.CPU.IsolateEmulatorThread && it.CPU.IsolateEmulatorThread != nil, "cpu.isolateEmulatorThread")
	conflict(d.Memory.Guest != nil, "memory.guest")
	conflict(d.Memory.Hugepages != nil && it.Memory.Hugepages != nil, "memory.hugepages")
	conflict(memReq, "resources.requests.memory")
	conflict(memLim, "resources.limits.memory")
	conflict(it.IOThreads != nil && it.IOThreads.SupplementalPoolThreadCount != nil && d.IOThreads != nil && d.IOThreads.SupplementalPoolThreadCount != nil, "ioThreads.supplementalPoolThreadCount")
	conflict(it.IOThreadsPolicy != nil && d.IOThreadsPolicy != nil, "ioThreadsPolicy")
	conflict(it.LaunchSecurity != nil && d.LaunchSecurity != nil, "launchSecurity")
	conflict(len(it.GPUs) > 0 && len(d.Devices.GPUs) > 0, "devices.gpus")
	conflict(len(it.HostDevices) > 0 && len(d.Devices.HostDevices) > 0, "devices.hostDevices")
	if len(conflicts) > 0 {
		return fmt.Errorf("the VM sets %s, which its instancetype sets: KubeVirt refuses such a VM", strings.Join(conflicts, ", "))
	}

	if it.CPU.DedicatedCPUPlacement != nil {
		d.CPU.DedicatedCPUPlacement = *it.CPU.DedicatedCPUPlacement
	}
	if it.CPU.IsolateEmulatorThread != nil {
		d.CPU.IsolateEmulatorThread = *it.CPU.IsolateEmulatorThread
	}
	applyTopology(it.CPU.Guest, pref, d.CPU)

	guest := it.Memory.Guest.DeepCopy()
	d.Memory.Guest = &guest
	if over := it.Memory.OvercommitPercent; over > 0 {
		if d.Resources.Requests == nil {
			d.Resources.Requests = corev1.ResourceList{}
		}
		// float32, as applyMemory computes it.
		req := int64(float32(guest.Value()) * (1 - float32(over)/100))
		d.Resources.Requests[corev1.ResourceMemory] = *resource.NewQuantity(req, guest.Format)
	}
	if it.Memory.Hugepages != nil {
		d.Memory.Hugepages = it.Memory.Hugepages.DeepCopy()
	}
	if it.IOThreads != nil && it.IOThreads.SupplementalPoolThreadCount != nil {
		if d.IOThreads == nil {
			d.IOThreads = &kubevirtv1.DiskIOThreads{}
		}
		d.IOThreads.SupplementalPoolThreadCount = ptr.To(*it.IOThreads.SupplementalPoolThreadCount)
	}
	if it.IOThreadsPolicy != nil {
		d.IOThreadsPolicy = ptr.To(*it.IOThreadsPolicy)
	}
	if it.LaunchSecurity != nil {
		d.LaunchSecurity = it.LaunchSecurity.DeepCopy()
	}
	if len(it.GPUs) > 0 {
		d.Devices.GPUs = append([]kubevirtv1.GPU(nil), it.GPUs...)
	}
	if len(it.HostDevices) > 0 {
		d.Devices.HostDevices = append([]kubevirtv1.HostDevice(nil), it.HostDevices...)
	}
	return nil
}

// applyTopology mirrors applyGuestCPUTopology: the instancetype's vCPUs
// laid out as the preference prefers, sockets by default. A spread that
// does not divide them evenly gives fewer vCPUs, in KubeVirt as here.
func applyTopology(vcpus uint32, pref *instancetypev1beta1.VirtualMachinePreferenceSpec, cpu *kubevirtv1.CPU) {
	cpu.Cores, cpu.Sockets, cpu.Threads = 1, 1, 1
	if vcpus == 1 {
		return
	}
	topology := instancetypev1beta1.Sockets
	if pref != nil && pref.CPU != nil && pref.CPU.PreferredCPUTopology != nil {
		topology = *pref.CPU.PreferredCPUTopology
	}
	switch topology {
	case instancetypev1beta1.DeprecatedPreferCores, instancetypev1beta1.Cores:
		cpu.Cores = vcpus
	case instancetypev1beta1.DeprecatedPreferSockets, instancetypev1beta1.DeprecatedPreferAny, instancetypev1beta1.Sockets, instancetypev1beta1.Any:
		cpu.Sockets = vcpus
	case instancetypev1beta1.DeprecatedPreferThreads, instancetypev1beta1.Threads:
		cpu.Threads = vcpus
	case instancetypev1beta1.DeprecatedPreferSpread, instancetypev1beta1.Spread:
		ratio, across := spreadOptions(pref)
		switch across {
		case instancetypev1beta1.SpreadAcrossSocketsCores:
			cpu.Cores, cpu.Sockets = ratio, vcpus/ratio
		case instancetypev1beta1.SpreadAcrossCoresThreads:
			cpu.Threads, cpu.Cores = ratio, vcpus/ratio
		case instancetypev1beta1.SpreadAcrossSocketsCoresThreads:
			const threadsPerCore = 2
			cpu.Threads, cpu.Cores, cpu.Sockets = threadsPerCore, ratio, vcpus/threadsPerCore/ratio
		}
	}
}

// spreadOptions mirrors GetSpreadOptions: ratio 2 across sockets and cores
// unless the preference says otherwise.
func spreadOptions(pref *instancetypev1beta1.VirtualMachinePreferenceSpec) (uint32, instancetypev1beta1.SpreadAcross) {
	ratio, across := uint32(2), instancetypev1beta1.SpreadAcrossSocketsCores
	if pref.PreferSpreadSocketToCoreRatio != 0 {
		ratio = pref.PreferSpreadSocketToCoreRatio
	}
	if pref.CPU != nil && pref.CPU.SpreadOptions != nil {
		if pref.CPU.SpreadOptions.Across != nil {
			across = *pref.CPU.SpreadOptions.Across
		}
		if pref.CPU.SpreadOptions.Ratio != nil {
			ratio = *pref.CPU.SpreadOptions.Ratio
		}
	}
	return ratio, across
}

// applyAutoAttach mirrors ApplyAutoAttachPreferences
// (pkg/instancetype/preference/apply/device.go) for the auto-attached
// devices that cost memory or a container: the graphics device and the
// serial console.
func applyAutoAttach(pref *instancetypev1beta1.VirtualMachinePreferenceSpec, spec *kubevirtv1.VirtualMachineInstanceSpec) {
	if pref.Devices == nil {
		return
	}
	devices := &spec.Domain.Devices
	if p := pref.Devices.PreferredAutoattachGraphicsDevice; p != nil && devices.AutoattachGraphicsDevice == nil {
		devices.AutoattachGraphicsDevice = ptr.To(*p)
	}
	if p := pref.Devices.PreferredAutoattachSerialConsole; p != nil && devices.AutoattachSerialConsole == nil {
		devices.AutoattachSerialConsole = ptr.To(*p)
	}
}

// applyPreference mirrors what the preference applier
// (pkg/instancetype/preference/apply/vmi.go) sets that the resources depend
// on: ApplyDevicePreferences' TPM and auto-attached devices, and
// ApplyArchitecturePreferences.
func applyPreference(pref *instancetypev1beta1.VirtualMachinePreferenceSpec, spec *kubevirtv1.VirtualMachineInstanceSpec) {
	if pref.Devices != nil {
		if pref.Devices.PreferredTPM != nil && spec.Domain.Devices.TPM == nil {
			spec.Domain.Devices.TPM = pref.Devices.PreferredTPM.DeepCopy()
		}
		applyAutoAttach(pref, spec)
	}
	if a := pref.PreferredArchitecture; a != nil && *a != "" && spec.Architecture == "" {
		spec.Architecture = *a
	}
}

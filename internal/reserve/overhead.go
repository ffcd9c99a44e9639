package reserve

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// memoryOverhead mirrors what virt-controller adds to the guest's memory
// for QEMU, libvirt and KubeVirt's own processes: CalculateMemoryOverhead
// (v1.8, v1.9: pkg/virt-controller/services/template.go), which is
// GetMemoryOverhead (v1.8, v1.9: pkg/hypervisor/kvm/hypervisorbackend.go;
// v1.7: pkg/virt-controller/services/renderresources.go) plus the network's
// (networkOverhead). It is what KubeVirt reports as the VMI's
// status.memory.memoryOverhead (VmiMemoryOverheadReport, v1.8 and later).
func memoryOverhead(vmi *kubevirtv1.VirtualMachineInstance, c config) resource.Quantity {
	domain := vmi.Spec.Domain
	overhead := *resource.NewScaledQuantity(0, resource.Kilo)

	// Page tables: one bit for every 512b of the memory *requested* in the
	// VMI's spec, zero when only memory.guest is set.
	pagetable := resource.NewScaledQuantity(domain.Resources.Requests.Memory().ScaledValue(resource.Kilo), resource.Kilo)
	pagetable.Set(pagetable.Value() / 512)
	overhead.Add(*pagetable)

	// virt-launcher-monitor, virt-launcher, virtlogd, virtqemud and QEMU.
	for _, q := range []string{"25Mi", "100Mi", "25Mi", "40Mi", "30Mi"} {
		overhead.Add(resource.MustParse(q))
	}

	// 8Mi per vCPU.
	var vcpus int64
	if domain.CPU != nil {
		vcpus = numberOfVCPUs(domain.CPU)
	} else if limit, ok := domain.Resources.Limits[corev1.ResourceCPU]; ok {
		vcpus = limit.Value()
	} else if request, ok := domain.Resources.Requests[corev1.ResourceCPU]; ok {
		vcpus = request.Value()
	}
	vcpus = max(vcpus, 1)
	perVCPU := resource.MustParse("8Mi")
	overhead.Add(*resource.NewQuantity(perVCPU.Value()*vcpus, perVCPU.Format))

	overhead.Add(resource.MustParse("8Mi")) // the IOThread
	if a := domain.Devices.AutoattachGraphicsDevice; a == nil || *a {
		overhead.Add(resource.MustParse("32Mi")) // video RAM
	}
	if c.archOf(vmi) == "arm64" {
		overhead.Add(resource.MustParse("128Mi")) // UEFI pflash
	}
	if isVFIO(vmi) {
		overhead.Add(resource.MustParse("1Gi"))
	}
	for _, v := range vmi.Spec.Volumes {
		if v.DownwardMetrics != nil {
			overhead.Add(resource.MustParse("1Mi"))
			break
		}
	}
	addProbeOverheads(vmi, &overhead)
	if ls := domain.LaunchSecurity; ls != nil && (ls.SEV != nil || ls.SNP != nil) {
		overhead.Add(resource.MustParse("256Mi"))
	}
	if tpm := domain.Devices.TPM; tpm != nil && (tpm.Enabled == nil || *tpm.Enabled) {
		overhead.Add(resource.MustParse("53Mi")) // swtpm
	}
	if isDedicated(vmi) || vmi.WantsToHaveQOSGuaranteed() {
		overhead.Add(resource.MustParse("100Mi"))
	}
	// RequiresMemoryOverheadReservation: memory.reservedOverhead, from
	// v1.8 (virt-api accepts it only with the alpha feature gate
	// ReservedOverheadMemlock; v1.7's CRD prunes it).
	if m := domain.Memory; c.release >= v1_8 && m != nil && m.ReservedOverhead != nil && m.ReservedOverhead.AddedOverhead != nil {
		overhead.Add(*m.ReservedOverhead.AddedOverhead)
	}
	if r := c.overheadRatio; r != nil && *r != "" {
		// An unparsable ratio is ignored, as KubeVirt does (its webhook
		// refuses one anyway).
		if ratio, err := strconv.ParseFloat(*r, 64); err == nil {
			add := float64(overhead.ScaledValue(resource.Kilo)) * (ratio - 1.0)
			overhead.Add(*resource.NewScaledQuantity(int64(add), resource.Kilo))
		}
	}

	overhead.Add(networkOverhead(vmi, c))
	return overhead
}

// addProbeOverheads mirrors addProbeOverheads (template.go): exec probes run
// virt-probe, 10Mi each and 100Mi once.
func addProbeOverheads(vmi *kubevirtv1.VirtualMachineInstance, q *resource.Quantity) {
	liveness := vmi.Spec.LivenessProbe != nil && vmi.Spec.LivenessProbe.Exec != nil
	readiness := vmi.Spec.ReadinessProbe != nil && vmi.Spec.ReadinessProbe.Exec != nil
	if liveness {
		q.Add(resource.MustParse("10Mi"))
	}
	if readiness {
		q.Add(resource.MustParse("10Mi"))
	}
	if liveness || readiness {
		q.Add(resource.MustParse("100Mi"))
	}
}

// passtOverhead is getPasstMemoryOverhead's (pkg/network/resources,
// v1.8 and later): what passt takes when all ports are forwarded.
const passtOverhead = "250Mi"

// networkOverhead mirrors the network's memory calculator that
// virt-controller adds to GetMemoryOverhead: from v1.8
// resources.MemoryCalculator.Calculate (pkg/network/resources/memory.go),
// 250Mi when an interface uses the core passt binding (passtBinding; the
// PasstBinding gate is Beta, on by default from v1.9, and only virt-api
// checks it) and the plugins'; in v1.7 netbinding.MemoryCalculator, the
// plugins' alone (v1.7's CRD prunes passtBinding). A plugin's part is the
// memory request of its computeResourceOverhead, once per plugin the
// interfaces use.
func networkOverhead(vmi *kubevirtv1.VirtualMachineInstance, c config) resource.Quantity {
	var sum resource.Quantity
	if c.release >= v1_8 && hasPasstBinding(vmi) {
		sum.Add(resource.MustParse(passtOverhead))
	}
	seen := map[string]bool{}
	for _, iface := range vmi.Spec.Domain.Devices.Interfaces {
		if iface.Binding == nil || seen[iface.Binding.Name] {
			continue
		}
		plugin, ok := c.bindings[iface.Binding.Name]
		if !ok {
			continue
		}
		seen[iface.Binding.Name] = true
		if plugin.ComputeResourceOverhead != nil {
			if q, ok := plugin.ComputeResourceOverhead.Requests[corev1.ResourceMemory]; ok {
				sum.Add(q)
			}
		}
	}
	return sum
}

// hasPasstBinding mirrors vmispec.HasPasstBinding.
func hasPasstBinding(vmi *kubevirtv1.VirtualMachineInstance) bool {
	for _, iface := range vmi.Spec.Domain.Devices.Interfaces {
		if iface.PasstBinding != nil {
			return true
		}
	}
	return false
}

// numberOfVCPUs mirrors hardware.GetNumberOfVCPUs: sockets × cores ×
// threads, each counted only when set.
func numberOfVCPUs(cpu *kubevirtv1.CPU) int64 {
	if cpu == nil {
		return 0
	}
	n := int64(cpu.Cores)
	for _, f := range []uint32{cpu.Sockets, cpu.Threads} {
		if f == 0 {
			continue
		}
		if n == 0 {
			n = int64(f)
		} else {
			n *= int64(f)
		}
	}
	return n
}

func isDedicated(vmi *kubevirtv1.VirtualMachineInstance) bool {
	return vmi.Spec.Domain.CPU != nil && vmi.Spec.Domain.CPU.DedicatedCPUPlacement
}

// isVFIO mirrors util.IsVFIOVMI: host devices, GPUs or SR-IOV interfaces.
func isVFIO(vmi *kubevirtv1.VirtualMachineInstance) bool {
	d := vmi.Spec.Domain.Devices
	if len(d.HostDevices) > 0 || len(d.GPUs) > 0 {
		return true
	}
	for _, iface := range d.Interfaces {
		if iface.SRIOV != nil {
			return true
		}
	}
	return false
}

// archOf is the architecture GetMemoryOverhead is given: the VMI's, else
// the cluster's.
func (c config) archOf(vmi *kubevirtv1.VirtualMachineInstance) string {
	if vmi.Spec.Architecture != "" {
		return vmi.Spec.Architecture
	}
	return c.arch
}

// KeepOverheadInputs returns a copy of vmi's spec holding only what
// memoryOverhead reads, so that a caller that keeps many VMIs (status)
// can compute MemoryOverheadOf from the copy: the resources, CPU, memory
// overhead reservation and architecture; of the devices, the graphics
// device, the TPM, host devices and GPUs (their count only) and each
// interface's binding; the volumes' downward metrics; the probes' exec;
// and the launch security.
func KeepOverheadInputs(spec *kubevirtv1.VirtualMachineInstanceSpec) kubevirtv1.VirtualMachineInstanceSpec {
	d := spec.Domain
	out := kubevirtv1.VirtualMachineInstanceSpec{Architecture: spec.Architecture}
	out.Domain.Resources = d.Resources
	out.Domain.CPU = d.CPU
	out.Domain.LaunchSecurity = d.LaunchSecurity
	if d.Memory != nil && d.Memory.ReservedOverhead != nil {
		out.Domain.Memory = &kubevirtv1.Memory{ReservedOverhead: d.Memory.ReservedOverhead}
	}
	out.Domain.Devices.AutoattachGraphicsDevice = d.Devices.AutoattachGraphicsDevice
	out.Domain.Devices.TPM = d.Devices.TPM
	if len(d.Devices.HostDevices) > 0 {
		out.Domain.Devices.HostDevices = make([]kubevirtv1.HostDevice, 1)
	}
	if len(d.Devices.GPUs) > 0 {
		out.Domain.Devices.GPUs = make([]kubevirtv1.GPU, 1)
	}
	for _, iface := range d.Devices.Interfaces {
		out.Domain.Devices.Interfaces = append(out.Domain.Devices.Interfaces, kubevirtv1.Interface{
			Name: iface.Name, Binding: iface.Binding,
			InterfaceBindingMethod: kubevirtv1.InterfaceBindingMethod{SRIOV: iface.SRIOV, PasstBinding: iface.PasstBinding},
		})
	}
	for _, v := range spec.Volumes {
		if v.DownwardMetrics != nil {
			out.Volumes = []kubevirtv1.Volume{{Name: v.Name, VolumeSource: kubevirtv1.VolumeSource{DownwardMetrics: v.DownwardMetrics}}}
			break
		}
	}
	for _, p := range []struct{ in, out **kubevirtv1.Probe }{{&spec.LivenessProbe, &out.LivenessProbe}, {&spec.ReadinessProbe, &out.ReadinessProbe}} {
		if *p.in != nil && (*p.in).Exec != nil {
			*p.out = &kubevirtv1.Probe{Handler: kubevirtv1.Handler{Exec: (*p.in).Exec}}
		}
	}
	return out
}

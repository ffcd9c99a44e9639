package reserve

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// hookSidecarsAnnotation lists the hook sidecars of a VMI
// (hooks.HookSidecarListAnnotationName).
const hookSidecarsAnnotation = "hooks.kubevirt.io/hookSidecars"

// kernelBootVolume is the volume name generateContainersHelper skips, and
// the one GenerateKernelBootContainer names the kernel boot image's
// container after (containerdisk.KernelBootVolumeName).
const kernelBootVolume = "kernel-boot-volume"

// supportContainers are the launcher Pod's containers beside compute, and
// its init containers, in renderLaunchManifest's order (template.go), with
// the resources KubeVirt gives each.
func supportContainers(vmi *kubevirtv1.VirtualMachineInstance, c config) (containers, inits []corev1.Container, err error) {
	guaranteed := isDedicated(vmi) || vmi.WantsToHaveQOSGuaranteed()
	disk := containerDiskResources(guaranteed, c)
	kernelBoot := vmi.Spec.Domain.Firmware != nil && vmi.Spec.Domain.Firmware.KernelBoot != nil &&
		vmi.Spec.Domain.Firmware.KernelBoot.Container != nil
	var disks []string
	for _, v := range vmi.Spec.Volumes {
		if v.ContainerDisk != nil {
			disks = append(disks, v.Name)
		}
	}

	// containerdisk.GenerateContainers and GenerateKernelBootContainer.
	if !c.imageVolume {
		for _, name := range disks {
			if name != kernelBootVolume {
				containers = append(containers, container("volume"+name, disk))
			}
		}
		if kernelBoot {
			containers = append(containers, container("volume"+kernelBootVolume, disk))
		}
	}
	// generateVirtioFSContainers: one per volume a filesystem names.
	shared := map[string]bool{}
	for _, fs := range vmi.Spec.Domain.Devices.Filesystems {
		shared[fs.Name] = true
	}
	for _, v := range vmi.Spec.Volumes {
		if shared[v.Name] {
			containers = append(containers, container("virtiofs-"+v.Name, virtiofsResources(isDedicated(vmi), guaranteed, c)))
		}
	}
	sidecars, err := hookSidecars(vmi, c)
	if err != nil {
		return nil, nil, err
	}
	for i := range sidecars {
		containers = append(containers, container(fmt.Sprintf("hook-sidecar-%d", i), sidecarResources(guaranteed, c)))
	}

	// generateSerialConsoleLogContainer: a sidecar, restarted always.
	if serialConsoleLog(vmi, c) {
		log := container("guest-console-log", supportResources(kubevirtv1.GuestConsoleLog, guaranteed, c, "5m", "35M", "15m", "60M"))
		log.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
		inits = append(inits, log)
	}
	switch {
	case !c.imageVolume && (len(disks) > 0 || kernelBoot):
		// initContainerResourceRequirementsForVMI; with guaranteed QoS its
		// request is 10m (not the limit's 100m) and 40M.
		binary := supportResources(kubevirtv1.ContainerDisk, false, c, "10m", "1M", "100m", "40M")
		if guaranteed {
			binary = supportResources(kubevirtv1.ContainerDisk, true, c, "", "", "10m", "40M")
		}
		inits = append(inits, container("container-disk-binary", binary))
		for _, name := range disks {
			if name != kernelBootVolume {
				inits = append(inits, container("volume"+name+"-init", disk))
			}
		}
		if kernelBoot {
			inits = append(inits, container("volume"+kernelBootVolume+"-init", disk))
		}
	case c.imageVolume:
		for _, name := range disks {
			inits = append(inits, container("volume"+name, disk))
		}
		if kernelBoot {
			inits = append(inits, container("volume"+kernelBootVolume, disk))
		}
	}
	return containers, inits, nil
}

func container(name string, r corev1.ResourceRequirements) corev1.Container {
	return corev1.Container{Name: name, Resources: r}
}

// supportResources builds the resources of a support container as
// KubeVirt's helpers do: each default replaced by the cluster's
// supportContainerResources of type t where it sets one, and with
// guaranteed QoS the requests made the limits. An empty default is none.
func supportResources(t kubevirtv1.SupportContainerType, guaranteed bool, c config, reqCPU, reqMem, limCPU, limMem string) corev1.ResourceRequirements {
	r := corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}
	set := func(list corev1.ResourceList, name corev1.ResourceName, def string, configured *resource.Quantity) {
		if def != "" {
			list[name] = resource.MustParse(def)
		}
		if configured != nil {
			list[name] = *configured
		}
	}
	set(r.Requests, corev1.ResourceCPU, reqCPU, c.supportRequest(t, corev1.ResourceCPU))
	set(r.Requests, corev1.ResourceMemory, reqMem, c.supportRequest(t, corev1.ResourceMemory))
	set(r.Limits, corev1.ResourceCPU, limCPU, c.supportLimit(t, corev1.ResourceCPU))
	set(r.Limits, corev1.ResourceMemory, limMem, c.supportLimit(t, corev1.ResourceMemory))
	if guaranteed {
		r.Requests[corev1.ResourceCPU] = r.Limits[corev1.ResourceCPU]
		r.Requests[corev1.ResourceMemory] = r.Limits[corev1.ResourceMemory]
	}
	return r
}

// containerDiskResources mirrors getMinimalInitContainerDiskResources
// (pkg/container-disk): 1m and 1M, limited to 10m and 40M.
func containerDiskResources(guaranteed bool, c config) corev1.ResourceRequirements {
	return supportResources(kubevirtv1.ContainerDisk, guaranteed, c, "1m", "1M", "10m", "40M")
}

// virtiofsResources mirrors resourcesForVirtioFSContainer (virtiofs.go),
// where the CPU follows dedicated CPUs and the memory guaranteed QoS.
func virtiofsResources(dedicated, guaranteed bool, c config) corev1.ResourceRequirements {
	r := supportResources(kubevirtv1.VirtioFS, false, c, "10m", "1M", "100m", "80M")
	if dedicated || guaranteed {
		r.Requests[corev1.ResourceCPU] = r.Limits[corev1.ResourceCPU]
	}
	if guaranteed {
		r.Requests[corev1.ResourceMemory] = r.Limits[corev1.ResourceMemory]
	}
	return r
}

// sidecarResources mirrors sidecarResources (renderresources.go): nothing
// but what the cluster configures, and 200m and 64M with guaranteed QoS.
func sidecarResources(guaranteed bool, c config) corev1.ResourceRequirements {
	if guaranteed {
		return supportResources(kubevirtv1.SideCar, true, c, "", "", "200m", "64M")
	}
	return supportResources(kubevirtv1.SideCar, false, c, "", "", "", "")
}

// serialConsoleLog mirrors isSerialConsoleLogEnabled (serialconsolelog.go).
func serialConsoleLog(vmi *kubevirtv1.VirtualMachineInstance, c config) bool {
	d := vmi.Spec.Domain.Devices
	if d.AutoattachSerialConsole != nil && !*d.AutoattachSerialConsole {
		return false
	}
	if d.LogSerialConsole != nil {
		return *d.LogSerialConsole
	}
	return !c.serialLogOff
}

// hookSidecars counts the sidecars virt-controller's sidecar creators add:
// the hooks the VMI's annotation lists (hooks.UnmarshalHookSidecarList),
// and one per network binding plugin with a sidecar image
// (netbinding.NetBindingPluginSidecarList), which fails as KubeVirt fails
// on a binding the cluster does not configure.
func hookSidecars(vmi *kubevirtv1.VirtualMachineInstance, c config) ([]string, error) {
	var names []string
	if raw, ok := vmi.Annotations[hookSidecarsAnnotation]; ok {
		var hooks []json.RawMessage
		if err := json.Unmarshal([]byte(raw), &hooks); err != nil {
			return nil, fmt.Errorf("annotation %s: %w", hookSidecarsAnnotation, err)
		}
		for i := range hooks {
			names = append(names, fmt.Sprintf("hook %d", i))
		}
	}
	seen := map[string]bool{}
	for _, iface := range vmi.Spec.Domain.Devices.Interfaces {
		if iface.Binding == nil || seen[iface.Binding.Name] {
			continue
		}
		plugin, ok := c.bindings[iface.Binding.Name]
		if !ok {
			return nil, fmt.Errorf("interface %s uses network binding %q, which the KubeVirt CR does not configure", iface.Name, iface.Binding.Name)
		}
		seen[iface.Binding.Name] = true
		if plugin.SidecarImage != "" {
			names = append(names, iface.Binding.Name)
		}
	}
	return names, nil
}

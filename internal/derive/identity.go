package derive

import (
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// clearIdentity removes what makes a machine one particular machine, so
// that derived VMs do not all claim the prototype's identity: the SMBIOS
// UUID and serial (KubeVirt derives a UUID from the VM name when unset) and
// the interfaces' MAC addresses (KubeVirt or the network assigns fresh
// ones). A hostname set on the prototype becomes the VM's own name.
func clearIdentity(spec *kubevirtv1.VirtualMachineInstanceSpec, vmName string) {
	if fw := spec.Domain.Firmware; fw != nil {
		fw.UUID = ""
		fw.Serial = ""
	}
	for i := range spec.Domain.Devices.Interfaces {
		spec.Domain.Devices.Interfaces[i].MacAddress = ""
	}
	if spec.Hostname != "" {
		spec.Hostname = hostname(vmName)
	}
}

// clearRevisions drops the instancetype and preference revisionName. They
// name ControllerRevisions KubeVirt made for the prototype and owns through
// it; each derived VM gets its own, and a copied name would break when the
// prototype is deleted or lives in another namespace.
func clearRevisions(spec *kubevirtv1.VirtualMachineSpec) {
	if spec.Instancetype != nil {
		spec.Instancetype.RevisionName = ""
	}
	if spec.Preference != nil {
		spec.Preference.RevisionName = ""
	}
}

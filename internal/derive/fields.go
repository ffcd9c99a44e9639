package derive

import kubevirtv1 "kubevirt.io/api/core/v1"

// Field is a field of a VirtualMachine that someone other than the
// prototype decides: VM sets it, or the cluster does. The create policy
// holds each field of an agent's VM to its Rule, and every field not
// listed to the prototype's value; docs/security.md lists them.
type Field struct {
	// Path is the field's JSON path: [] stands for every element of a list,
	// and a last segment * for every field of the object not listed on its
	// own.
	Path string
	// Rule is the value the field holds.
	Rule string
}

// Fields are the fields VM sets rather than copies from the prototype.
func Fields() []Field {
	return []Field{
		{"apiVersion", "kubevirt.io/v1"},
		{"kind", "VirtualMachine"},
		{"metadata.name", "`<prototype>-<pod>`, or that cut to 52 characters and ended with `-` and the Pod's UID's last 10 (Name)"},
		{"metadata.namespace", "the Pod's (the agents' Role grants nothing elsewhere)"},
		{"metadata.labels", "the prototype's, and vmctl.kubevirt.io/prototype naming the prototype (LabelValue: past 63 characters cut and hashed) and vmctl.kubevirt.io/pod the Pod (whole: a longer name makes no VM), and for a StatefulSet's Pod vmctl.kubevirt.io/subdomain naming its Service"},
		{"metadata.annotations", "the prototype's but kubectl's last-applied-configuration and KubeVirt's two observed API versions, and vmctl's: the Pod's name, namespace, UID and node, the prototype's name, namespace, generation and UID, vmctl.kubevirt.io/launcher-priority-class where the VM has that class, and vmctl.kubevirt.io/vm-revision naming the VM revision it is derived from where its Pod pins one"},
		{"metadata.ownerReferences", "one: the Pod (v1, its name and UID), controller, not blocking its deletion"},
		{"metadata.*", "unset: finalizers, generateName and the rest"},
		{"spec.runStrategy", "Always"},
		{"spec.running", "unset"},
		{"spec.instancetype.revisionName", "unset: KubeVirt stores the VM's own revision"},
		{"spec.preference.revisionName", "unset: KubeVirt stores the VM's own revision"},
		{"spec.dataVolumeTemplates[].metadata.name", "`<template>-<VM>`, cut as the VM's name"},
		{"spec.dataVolumeTemplates[].metadata.namespace", "unset"},
		{"spec.template.metadata.labels", "the prototype's template's, and vmctl's as on the VM"},
		{"spec.template.metadata.name", "unset"},
		{"spec.template.metadata.namespace", "unset"},
		{"spec.template.metadata.generateName", "unset"},
		{"spec.template.spec.hostname", "a StatefulSet Pod's name; else, where the prototype has one, the VM's name with dots as dashes"},
		{"spec.template.spec.subdomain", "a StatefulSet's Service; else the prototype's"},
		{"spec.template.spec.priorityClassName", "the prototype's, or the workload's launcher priority class, never preempting (then named in the annotation)"},
		{"spec.template.spec.evictionStrategy", "External"},
		{"spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms", "the prototype's terms (one empty term where it has none), each with the node pin, metadata.name In [the Pod's node], first in its matchFields"},
		{"spec.template.spec.domain.firmware.uuid", "the Pod's UID"},
		{"spec.template.spec.domain.firmware.serial", "the Pod's UID"},
		{"spec.template.spec.domain.devices.interfaces[].macAddress", "unset"},
		{"spec.template.spec.volumes[].dataVolume.name", "a dataVolumeTemplate's new name where the prototype's names that template"},
		{"spec.template.spec.volumes[].persistentVolumeClaim.claimName", "a dataVolumeTemplate's new name where the prototype's names that template; `<claim>-<pod>`, the Pod's own claim, where the workload makes the prototype's claim per replica (a StatefulSet's volumeClaimTemplate)"},
		{"spec.template.spec.volumes[].ephemeral.persistentVolumeClaim.claimName", "as persistentVolumeClaim.claimName"},
		{"status", "unset: the API server drops it on create"},
	}
}

// ClusterFields are the fields of a derived VM that the cluster writes,
// with what it writes: the API server, and KubeVirt's mutating webhook, as
// it admits the VM, and KubeVirt's virt-controller later. The prototype went
// through the same webhook, so it holds that webhook's other defaults
// (machine type, architecture, preferences) already, and so does the VM VM
// derives from it.
func ClusterFields() []Field {
	return []Field{
		{"metadata.uid", "any: the API server sets it on create"},
		{"metadata.creationTimestamp", "any: the API server sets it on create"},
		{"metadata.generation", "any: the API server sets it on create"},
		{"metadata.managedFields", "any: the API server's record of who set which field"},
		{"metadata.annotations[" + kubevirtv1.ControllerAPILatestVersionObservedAnnotation + "]", "later: virt-controller records the API version it read"},
		{"metadata.annotations[" + kubevirtv1.ControllerAPIStorageVersionObservedAnnotation + "]", "later: virt-controller records the API version it read"},
		{"spec.template.metadata.annotations[" + kubevirtv1.PciTopologyVersionAnnotation + "]",
			"the prototype's, or where it has none, " + kubevirtv1.PciTopologyVersionV3 + ": KubeVirt v1.8's webhook adds it on create"},
		{"spec.template.metadata.annotations[" + kubevirtv1.PciInterfaceSlotCountAnnotation + "]", "later: virt-controller copies it from the VMI"},
		{"spec.instancetype.revisionName", "later: virt-controller names the VM's own revision"},
		{"spec.preference.revisionName", "later: virt-controller names the VM's own revision"},
	}
}

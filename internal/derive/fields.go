package derive

import kubevirtv1 "kubevirt.io/api/core/v1"

// Field is a field of a VirtualMachine that someone other than the
// prototype decides: VM sets it, or the cluster does. The create policy
// (scaffold) holds each field of an agent's VM to its Value, and every
// field not listed to the prototype's value: it leaves each listed field
// out of its comparison with the prototype, walks down to it through the
// maps of its Path, and judges it by a rule of its own. docs/security.md
// shows the table (TestDocsListDerivedFields renders it from here).
type Field struct {
	// Path is the field's JSON path: [] stands for every element of a list,
	// a last segment * for every field of the object not listed on its
	// own, and [key] for one key of a map.
	Path string
	// Value is the value the field holds.
	Value string
	// Check is how the create policy checks it.
	Check string
}

// Fields are the fields VM sets rather than copies from the prototype.
func Fields() []Field {
	return []Field{
		{"apiVersion", "kubevirt.io/v1", "exactly"},
		{"kind", "VirtualMachine", "exactly"},
		{"metadata.name", "`<prototype>-<pod>`, or that cut to 52 characters and ended with `-` and the Pod's UID's last 10 (Name)", "exactly: past 63 characters the cut and the UID its bound token carries"},
		{"metadata.namespace", "the Pod's (the agents' Role grants nothing elsewhere)", "by the binding, which matches only the fleet's namespace"},
		{"metadata.labels", "the prototype's, and vmctl.kubevirt.io/prototype naming the prototype (LabelValue: past 63 characters cut and hashed) and vmctl.kubevirt.io/pod the Pod (whole: a longer name makes no VM), and for a StatefulSet's Pod vmctl.kubevirt.io/subdomain naming its Service", "part by part: the prototype's labels whole, vmctl's each by its rule, none empty where derive sets none"},
		{"metadata.annotations", "the prototype's but kubectl's last-applied-configuration and KubeVirt's two observed API versions, and vmctl's: the Pod's name, namespace, UID and node, the prototype's name, namespace, generation and UID, vmctl.kubevirt.io/launcher-priority-class where the VM has that class, and vmctl.kubevirt.io/vm-revision naming the VM revision it is derived from where its Pod pins one", "part by part: the prototype's annotations whole, vmctl's each by its rule, none empty where derive sets none"},
		{"metadata.ownerReferences", "one: the Pod (v1, its name and UID), controller, not blocking its deletion", "the whole list, built in CEL"},
		{"metadata.*", "unset: finalizers, generateName and the rest", "by the keys metadata may hold"},
		{"spec.runStrategy", "Always", "exactly"},
		{"spec.running", "unset", "exactly"},
		{"spec.instancetype.revisionName", "unset: KubeVirt stores the VM's own revision", "part by part: the prototype's matcher but this"},
		{"spec.preference.revisionName", "unset: KubeVirt stores the VM's own revision", "part by part: the prototype's matcher but this"},
		{"spec.dataVolumeTemplates[].metadata.name", "`<template>-<VM>`, cut as the VM's name", "part by part: each template the prototype's in its place but its name and namespace; the name exactly, as the VM's"},
		{"spec.dataVolumeTemplates[].metadata.namespace", "unset", "part by part, as the name"},
		{"spec.template.metadata.labels", "the prototype's template's, and vmctl's as on the VM", "part by part, as the VM's"},
		{"spec.template.metadata.name", "unset", "exactly"},
		{"spec.template.metadata.namespace", "unset", "exactly"},
		{"spec.template.metadata.generateName", "unset", "exactly"},
		{"spec.template.spec.hostname", "a StatefulSet Pod's name; else, where the prototype has one, the VM's name with dots as dashes", "exactly"},
		{"spec.template.spec.subdomain", "a StatefulSet's Service; else the prototype's", "exactly"},
		{"spec.template.spec.priorityClassName", "the prototype's, or the workload's launcher priority class, never preempting (then named in the annotation)", "exactly, with the annotation"},
		{"spec.template.spec.evictionStrategy", "External", "exactly"},
		{"spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms", "the prototype's terms (one empty term where it has none), each with the node pin, metadata.name In [the Pod's node], first in its matchFields", "the whole list, built in CEL from the prototype's"},
		{"spec.template.spec.domain.firmware.uuid", "the Pod's UID", "exactly: derive sets it rather than clear it, which KubeVirt would fill in at random"},
		{"spec.template.spec.domain.firmware.serial", "the Pod's UID", "exactly, as the UUID"},
		{"spec.template.spec.domain.devices.interfaces[].macAddress", "unset", "part by part: each element the prototype's in its place (by name), but this"},
		{"spec.template.spec.volumes[].dataVolume.name", "a dataVolumeTemplate's new name where the prototype's names that template", "part by part: each element the prototype's in its place (by name), but this"},
		{"spec.template.spec.volumes[].persistentVolumeClaim.claimName", "a dataVolumeTemplate's new name where the prototype's names that template; `<claim>-<pod>`, the Pod's own claim, where the workload makes the prototype's claim per replica (a StatefulSet's volumeClaimTemplate)", "part by part: each element the prototype's in its place (by name), but this"},
		{"spec.template.spec.volumes[].ephemeral.persistentVolumeClaim.claimName", "as persistentVolumeClaim.claimName", "part by part: each element the prototype's in its place (by name), but this"},
		{"status", "unset: the API server drops it on create", "not: the API server drops it on create"},
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
		{"metadata.uid", "any: the API server sets it on create", "not: the API server sets it"},
		{"metadata.creationTimestamp", "any: the API server sets it on create", "not: the API server sets it"},
		{"metadata.generation", "any: the API server sets it on create", "not: the API server sets it"},
		{"metadata.managedFields", "any: the API server's record of who set which field", "not"},
		{"metadata.annotations[" + kubevirtv1.ControllerAPILatestVersionObservedAnnotation + "]", "later: virt-controller records the API version it read", "unset on create: derive drops the prototype's"},
		{"metadata.annotations[" + kubevirtv1.ControllerAPIStorageVersionObservedAnnotation + "]", "later: virt-controller records the API version it read", "unset on create: derive drops the prototype's"},
		{"spec.template.metadata.annotations[" + kubevirtv1.PciTopologyVersionAnnotation + "]",
			"the prototype's, or where it has none, " + kubevirtv1.PciTopologyVersionV3 + ": KubeVirt v1.8's webhook adds it on create",
			"part by part: the template's other annotations whole"},
		{"spec.template.metadata.annotations[" + kubevirtv1.PciInterfaceSlotCountAnnotation + "]", "later: virt-controller copies it from the VMI", "as any annotation of the template: the prototype's"},
		{"spec.instancetype.revisionName", "later: virt-controller names the VM's own revision", "part by part: the prototype's matcher but this"},
		{"spec.preference.revisionName", "later: virt-controller names the VM's own revision", "part by part: the prototype's matcher but this"},
	}
}

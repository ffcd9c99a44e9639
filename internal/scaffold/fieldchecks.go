package scaffold

import kubevirtv1 "kubevirt.io/api/core/v1"

// fieldChecks says how the create policy checks each of derive.Fields and
// derive.ClusterFields, by path: docs/security.md shows it beside the
// field.
func fieldChecks() map[string]string {
	const (
		exactly   = "exactly"
		byList    = "part by part: each element the prototype's in its place (by name), but this"
		asVMs     = "part by part, as the VM's"
		matcher   = "part by part: the prototype's matcher but this"
		notNeeded = "not: the API server sets it"
	)
	return map[string]string{
		"apiVersion":                               exactly,
		"kind":                                     exactly,
		"metadata.name":                            "exactly up to 63 characters; past them the cut exactly, the hash only by its length and alphabet (CEL cannot hash)",
		"metadata.namespace":                       "by the binding, which matches only the fleet's namespace",
		"metadata.labels":                          "part by part: the prototype's labels whole, vmctl's each by its rule",
		"metadata.annotations":                     "part by part: the prototype's annotations whole, vmctl's each by its rule",
		"metadata.ownerReferences":                 "the whole list, built in CEL",
		"metadata.*":                               "by the keys metadata may hold",
		"spec.runStrategy":                         exactly,
		"spec.running":                             exactly,
		"spec.instancetype.revisionName":           matcher,
		"spec.preference.revisionName":             matcher,
		"spec.dataVolumeTemplates[].metadata.name": "part by part: each template the prototype's in its place but its name and namespace; the name as the VM's",
		"spec.dataVolumeTemplates[].metadata.namespace": "part by part, as the name",
		"spec.template.metadata.labels":                 asVMs,
		"spec.template.metadata.name":                   exactly,
		"spec.template.metadata.namespace":              exactly,
		"spec.template.metadata.generateName":           exactly,
		"spec.template.spec.hostname":                   exactly,
		"spec.template.spec.subdomain":                  exactly,
		"spec.template.spec.priorityClassName":          "exactly, with the annotation",
		"spec.template.spec.evictionStrategy":           exactly,
		"spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms": "the whole list, built in CEL from the prototype's",
		"spec.template.spec.domain.firmware.uuid":                                "exactly: derive sets it rather than clear it, which KubeVirt would fill in at random",
		"spec.template.spec.domain.firmware.serial":                              "exactly, as the UUID",
		"spec.template.spec.domain.devices.interfaces[].macAddress":              byList,
		"spec.template.spec.volumes[].dataVolume.name":                           byList,
		"spec.template.spec.volumes[].persistentVolumeClaim.claimName":           byList,
		"spec.template.spec.volumes[].ephemeral.persistentVolumeClaim.claimName": byList,
		"status":                     "not: the API server drops it on create",
		"metadata.uid":               notNeeded,
		"metadata.creationTimestamp": notNeeded,
		"metadata.generation":        notNeeded,
		"metadata.managedFields":     "not",
		"metadata.annotations[" + kubevirtv1.ControllerAPILatestVersionObservedAnnotation + "]":  "unset on create: derive drops the prototype's",
		"metadata.annotations[" + kubevirtv1.ControllerAPIStorageVersionObservedAnnotation + "]": "unset on create: derive drops the prototype's",
		"spec.template.metadata.annotations[" + pciTopology + "]":                                "part by part: the template's other annotations whole",
		"spec.template.metadata.annotations[" + kubevirtv1.PciInterfaceSlotCountAnnotation + "]": "as any annotation of the template: the prototype's",
	}
}

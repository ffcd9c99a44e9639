package scaffold

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
)

// admissionPolicy admits a VM the agents' ServiceAccount creates only if it
// is what derive makes from the prototype for the agent's own Pod: every
// field the prototype's but those derive sets (derive.Fields), each of
// which holds to its own rule, and those the cluster writes on create
// (derive.ClusterFields). A field no one listed is compared, and so
// refused when it differs: what the policy does not know it refuses. RBAC
// cannot say any of this: it has no rules on labels, on who is asking or
// on what an object holds. The prototype is the policy's parameter
// (paramKind VirtualMachine, bound by name), read as variables.source.
//
// It matches only creates of VMs: a policy whose paramKind the API server
// cannot resolve refuses every request it matches, whoever asks, before
// matchConditions, and kube-apiserver cannot for up to 30 s after it starts
// (kubernetes/kubernetes#124237); neither can it while the prototype is
// missing. Everything else the agents may do is the guard policy's, which
// needs no parameter, so KubeVirt's status updates, people's edits and
// every delete go through meanwhile.
func (p Params) admissionPolicy() *admissionregistrationv1.ValidatingAdmissionPolicy {
	return &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: p.qualifiedName(), Labels: p.labels(ComponentAdmission)},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			ParamKind:     &admissionregistrationv1.ParamKind{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine"},
			// Only creates of the prototype's derived VMs in Namespace (the
			// guard policy keeps the agents to those).
			MatchConstraints: p.vmCreates(),
			// Only this ServiceAccount's requests are checked; people and
			// other controllers are left to RBAC.
			MatchConditions: p.agentOnly(),
			Variables:       p.createVariables(),
			Validations:     p.createValidations(),
		},
	}
}

// createVariables are the create policy's CEL variables: object is the VM
// created, variables.source what it is compared with, the prototype.
// Every value read from either is an optional or has a default, never an
// error: .? on a variable that holds an optional finds nothing, so
// variables hold values.
func (p Params) createVariables() []admissionregistrationv1.Variable {
	v := func(name, expression string) admissionregistrationv1.Variable {
		return admissionregistrationv1.Variable{Name: name, Expression: expression}
	}
	vars := append(podVariables(),
		v("node", `request.userInfo.?extra[?'`+nodeNameExtra+`'][?0].orValue('')`),
		// What the VM must be derived from: the prototype. Only this
		// variable reads params.
		v("source", `params`),
		// The StatefulSet's headless Service, which names its VMs in DNS;
		// empty for other workloads, whose Pods' names are not stable.
		v("statefulSetService", literal(p.subdomain())),
		v("fullName", `variables.source.metadata.name + '-' + variables.pod`),
		// derive.Name: "<prototype>-<pod>", or that cut with a hash, of
		// which only the length and alphabet are checked (nameRule).
		v("nameIsDerived", nameRule("object.metadata.name", "variables.fullName", "")),

		// The maps on the way down to each field derive sets, the VM's and
		// the source's.
		v("labels", `object.metadata.?labels.orValue({})`),
		v("sourceLabels", `variables.source.metadata.?labels.orValue({})`),
		v("annotations", `object.metadata.?annotations.orValue({})`),
		v("sourceAnnotations", `variables.source.metadata.?annotations.orValue({})`),
		v("spec", `object.spec`),
		v("sourceSpec", `variables.source.spec`),
		v("template", `variables.spec.template`),
		v("sourceTemplate", `variables.sourceSpec.template`),
		v("templateMeta", `variables.template.?metadata.orValue({})`),
		v("sourceTemplateMeta", `variables.sourceTemplate.?metadata.orValue({})`),
		v("templateAnnotations", `variables.templateMeta.?annotations.orValue({})`),
		v("sourceTemplateAnnotations", `variables.sourceTemplateMeta.?annotations.orValue({})`),
		v("templateSpec", `variables.template.spec`),
		v("sourceTemplateSpec", `variables.sourceTemplate.spec`),
		v("domain", `variables.templateSpec.domain`),
		v("sourceDomain", `variables.sourceTemplateSpec.domain`),
		v("firmware", `variables.domain.?firmware.orValue({})`),
		v("sourceFirmware", `variables.sourceDomain.?firmware.orValue({})`),
		v("devices", `variables.domain.?devices.orValue({})`),
		v("sourceDevices", `variables.sourceDomain.?devices.orValue({})`),
		v("interfaces", `variables.devices.?interfaces.orValue([])`),
		v("sourceInterfaces", `variables.sourceDevices.?interfaces.orValue([])`),
		v("affinity", `variables.templateSpec.?affinity.orValue({})`),
		v("sourceAffinity", `variables.sourceTemplateSpec.?affinity.orValue({})`),
		v("nodeAffinity", `variables.affinity.?nodeAffinity.orValue({})`),
		v("sourceNodeAffinity", `variables.sourceAffinity.?nodeAffinity.orValue({})`),
		v("required", `variables.nodeAffinity.?requiredDuringSchedulingIgnoredDuringExecution.orValue({})`),
		v("sourceRequired", `variables.sourceNodeAffinity.?requiredDuringSchedulingIgnoredDuringExecution.orValue({})`),
		v("interfaceNames", `variables.interfaces.map(i, i.?name.orValue(''))`),
		v("sourceInterfaceNames", `variables.sourceInterfaces.map(i, i.?name.orValue(''))`),
		v("volumes", `variables.templateSpec.?volumes.orValue([])`),
		v("sourceVolumes", `variables.sourceTemplateSpec.?volumes.orValue([])`),
		v("volumeNames", `variables.volumes.map(v, v.?name.orValue(''))`),
		v("sourceVolumeNames", `variables.sourceVolumes.map(v, v.?name.orValue(''))`),
		v("templates", `variables.spec.?dataVolumeTemplates.orValue([])`),
		v("sourceTemplates", `variables.sourceSpec.?dataVolumeTemplates.orValue([])`),
		v("templateNames", `variables.templates.map(t, t.?metadata.?name.orValue(''))`),
		v("sourceTemplateNames", `variables.sourceTemplates.map(t, t.?metadata.?name.orValue(''))`),
		v("templateLabels", `variables.templateMeta.?labels.orValue({})`),
		v("sourceTemplateLabels", `variables.sourceTemplateMeta.?labels.orValue({})`),
		v("podLabel", value("variables.labels", contract.LabelPod)),
		v("templatePodLabel", value("variables.templateLabels", contract.LabelPod)),
	)
	vars = append(vars, p.metadataVariables()...)
	vars = append(vars, p.specVariables()...)
	return vars
}

// createValidations refuse, each with what it checks, a VM that is not
// derive's.
func (p Params) createValidations() []admissionregistrationv1.Validation {
	from := fmt.Sprintf("a vmctl agent may only create VMs derived from %s/%s", p.protoNamespace(), p.Prototype)
	unlisted := forbid(`size(variables.unlisted) == 0`,
		"the VirtualMachine's fields not derive's are not the prototype's: "+from)
	unlisted.MessageExpression = `"the VirtualMachine's fields not derive's are not the prototype's: ` + from +
		`; it differs at " + variables.unlisted.join(", ")`
	return []admissionregistrationv1.Validation{
		forbid(`variables.nameIsDerived`,
			fmt.Sprintf("the VirtualMachine's name is not %s-<pod>: a vmctl agent may only create the one VM named for its own Pod", p.Prototype)),
		forbid(`variables.onlyDerivedKeys`,
			"the VirtualMachine holds fields a derived VM never has: only apiVersion, kind, metadata and spec; in metadata only name, namespace, "+
				"labels, annotations and ownerReferences (and what the API server sets), no finalizers; none of name, namespace and generateName in the template's"),
		forbid(`variables.ownedByItsPod`,
			"a derived VM is owned by its agent's Pod alone: one ownerReference, to the Pod its bound token names (v1, name and UID), controller, not blocking deletion"),
		forbid(`variables.labelsDerived`, fmt.Sprintf("the VirtualMachine's labels or its template's are not the prototype's with vmctl's for this Pod (%s=%s, %s=<its Pod>%s): %s",
			contract.LabelPrototype, derive.LabelValue(p.Prototype), contract.LabelPod, p.subdomainLabelNote(), from)),
		forbid(`variables.annotationsDerived`, fmt.Sprintf("the VirtualMachine's annotations are not the prototype's with vmctl's for this Pod (its name, namespace, UID and node, "+
			"the prototype's name, namespace, generation and UID): %s", from)),
		forbid(`variables.runsAlways`, "a derived VM runs always (runStrategy Always, no running) and is evicted External"),
		forbid(`variables.ownIdentity`, "the VirtualMachine's machine identity is not its own: firmware uuid and serial are its Pod's UID, and no interface has a MAC address"),
		forbid(`variables.pinned`, "the VirtualMachine is not pinned to its Pod's node as derive pins it: each of the prototype's required node selector terms "+
			"with metadata.name In [the node its bound token names] first"),
		forbid(`variables.volumesDerived && variables.templatesDerived`,
			"the VirtualMachine's volumes or dataVolumeTemplates are not the prototype's: "+from),
		forbid(`variables.ownDNSName`, p.dnsNameMessage()),
		forbid(`variables.priorityClass`, p.priorityClassMessage()),
		unlisted,
	}
}

// metadataVariables judge the VM's metadata, which derive makes afresh.
func (p Params) metadataVariables() []admissionregistrationv1.Variable {
	vmctl := []string{
		contract.AnnotationPodName, contract.AnnotationPodNamespace, contract.AnnotationPodUID, contract.AnnotationNode,
		contract.AnnotationPrototypeName, contract.AnnotationPrototypeNamespace, contract.AnnotationPrototypeGeneration, contract.AnnotationPrototypeUID,
		contract.AnnotationLauncherPriorityClass,
	}
	a := "variables.annotations"
	return []admissionregistrationv1.Variable{
		{Name: "onlyDerivedKeys", Expression: cel(`
			object.all(k, k in ['apiVersion', 'kind', 'metadata', 'spec']) &&
			object.apiVersion == 'kubevirt.io/v1' && object.kind == 'VirtualMachine' &&
			object.metadata.all(k, k in ['name', 'namespace', 'labels', 'annotations', 'ownerReferences', 'uid', 'creationTimestamp', 'generation', 'managedFields']) &&
			` + unset("variables.templateMeta", "name", "namespace", "generateName"))},
		{Name: "ownedByItsPod", Expression: cel(`
			object.metadata.?ownerReferences.orValue([]) == [{'apiVersion': dyn('v1'), 'kind': dyn('Pod'),
				'name': dyn(variables.pod), 'uid': dyn(variables.podUID), 'controller': dyn(true), 'blockOwnerDeletion': dyn(false)}]`)},
		{Name: "labelsDerived", Expression: p.derivedLabels("variables.labels", "variables.sourceLabels", "variables.podLabel") + " &&\n" +
			p.derivedLabels("variables.templateLabels", "variables.sourceTemplateLabels", "variables.templatePodLabel")},
		{Name: "annotationsDerived", Expression: sameBut(a, "variables.sourceAnnotations", append(derive.DroppedAnnotations(), vmctl...)...) + " &&\n" +
			unset(a, derive.DroppedAnnotations()...) + " &&\n" +
			value(a, contract.AnnotationPodName) + " == variables.pod && " + value(a, contract.AnnotationPodNamespace) + " == " + literal(p.Namespace) + " &&\n" +
			value(a, contract.AnnotationPodUID) + " == variables.podUID && " + value(a, contract.AnnotationNode) + " == variables.node &&\n" +
			value(a, contract.AnnotationPrototypeName) + " == " + literal(p.Prototype) + " && " +
			value(a, contract.AnnotationPrototypeNamespace) + " == " + literal(p.protoNamespace()) + " &&\n" +
			value(a, contract.AnnotationPrototypeGeneration) + " == string(variables.source.metadata.generation) &&\n" +
			value(a, contract.AnnotationPrototypeUID) + " == variables.source.metadata.uid"},
	}
}

// derivedLabels is CEL that holds when the labels l are the source's labels
// s and vmctl's for the requesting Pod: its prototype's name and its own,
// pod (derive.LabelValue, checked as nameRule checks names), and for a
// StatefulSet's VM its Service.
func (p Params) derivedLabels(l, s, pod string) string {
	return sameBut(l, s, contract.LabelPrototype, contract.LabelPod, contract.LabelSubdomain) + " &&\n" +
		value(l, contract.LabelPrototype) + " == " + literal(derive.LabelValue(p.Prototype)) + " &&\n" +
		value(l, contract.LabelSubdomain) + " == variables.statefulSetService &&\n" +
		"(" + nameRule(pod, "variables.pod", "") + ")"
}

// subdomainLabelNote says which subdomain label derivedLabels wants.
func (p Params) subdomainLabelNote() string {
	if s := p.subdomain(); s != "" {
		return ", " + contract.LabelSubdomain + "=" + s
	}
	return ""
}

// pciTopology is the PCI topology annotation KubeVirt v1.8's webhook adds to
// a VM template that lacks one, and its value.
const pciTopology = kubevirtv1.PciTopologyVersionAnnotation

// specVariables judge the VM's spec: the source's, but the fields derive
// sets, part by part.
func (p Params) specVariables() []admissionregistrationv1.Variable {
	v := func(name, expression string) admissionregistrationv1.Variable {
		return admissionregistrationv1.Variable{Name: name, Expression: expression}
	}
	matcher := func(m string) string {
		return fmt.Sprintf("('%[1]s' in variables.spec) == ('%[1]s' in variables.sourceSpec) && (!('%[1]s' in variables.sourceSpec) || (\n  %[2]s &&\n  %[3]s))",
			m, sameBut("variables.spec."+m, "variables.sourceSpec."+m, "revisionName"), unset("variables.spec."+m, "revisionName"))
	}
	ta, sta := "variables.templateAnnotations", "variables.sourceTemplateAnnotations"
	orEmpty := func(cond, path string) string { return "(" + cond + " ? [] : ['" + path + "'])" }
	return []admissionregistrationv1.Variable{
		v("runsAlways", value("variables.spec", "runStrategy")+" == 'Always' && !('running' in variables.spec) &&\n"+
			value("variables.templateSpec", "evictionStrategy")+" == 'External'"),
		v("ownIdentity", value("variables.firmware", "uuid")+" == variables.podUID && "+value("variables.firmware", "serial")+" == variables.podUID &&\n"+
			"variables.interfaces.all(i, !('macAddress' in i))"),
		// The node pin, as derive's pinToNode makes it: first in the
		// matchFields of each required term, of which there is one, empty
		// but for the pin, where the source has none.
		v("pin", `{'key': dyn('metadata.name'), 'operator': dyn('In'), 'values': dyn([variables.node])}`),
		v("sourceTerms", `variables.sourceRequired.?nodeSelectorTerms.orValue([])`),
		v("pinnedTerms", cel(`
			(size(variables.sourceTerms) == 0 ? [{}] : variables.sourceTerms).map(t, {
				?'matchExpressions': t.?matchExpressions,
				'matchFields': dyn([variables.pin] + t.?matchFields.orValue([]).filter(f, f != variables.pin))})`)),
		v("pinned", `variables.required.?nodeSelectorTerms.orValue([]) == variables.pinnedTerms`),
		// dataVolumeTemplates in the source's order, each the source's but
		// named "<template>-<VM>" as derive.Name names it (nameRule) and in
		// no namespace; else a template could take the name of another
		// app's PersistentVolumeClaim, which CDI adopts into the VM's
		// DataVolume (KubeVirt marks every DataVolume it makes from a
		// template cdi.kubevirt.io/allowClaimAdoption).
		v("templatePairs", pairs("variables.templates", "variables.sourceTemplates", "variables.sourceTemplateNames")),
		v("templatesDerived", cel(`
			size(variables.templates) == size(variables.sourceTemplates) && `+unique("variables.sourceTemplateNames")+` &&
			variables.templatePairs.all(p,
				`+sameBut("p.vm", "p.source", "metadata")+` &&
				`+sameBut("p.vm.?metadata.orValue({})", "p.source.?metadata.orValue({})", "name", "namespace")+` &&
				`+unset("p.vm.?metadata.orValue({})", "namespace")+` &&
				(`+nameRule("p.vm.?metadata.?name.orValue('')", "(p.source.?metadata.?name.orValue('') + '-' + object.metadata.name)", "\t\t\t\t")+`))`)),
		// Volumes in the source's order, each the source's but a claim the
		// source makes from a dataVolumeTemplate (through a dataVolume, a
		// persistentVolumeClaim or an ephemeral volume), which is the VM's
		// own template in that template's place.
		v("volumePairs", pairs("variables.volumes", "variables.sourceVolumes", "variables.sourceVolumeNames")),
		v("volumesDerived", cel(`
			variables.volumeNames == variables.sourceVolumeNames && `+unique("variables.sourceVolumeNames")+` &&
			size(variables.templateNames) == size(variables.sourceTemplateNames) &&
			variables.volumePairs.all(p,
				`+sameBut("p.vm", "p.source", "dataVolume", "persistentVolumeClaim", "ephemeral")+` &&
				`+renamedClaim("p.vm", "p.source", "dataVolume", "name")+` &&
				`+renamedClaim("p.vm", "p.source", "persistentVolumeClaim", "claimName")+` &&
				('ephemeral' in p.vm) == ('ephemeral' in p.source) && (!('ephemeral' in p.source) || (
					`+sameBut("p.vm.ephemeral", "p.source.ephemeral", "persistentVolumeClaim")+` &&
					`+renamedClaim("p.vm.ephemeral", "p.source.ephemeral", "persistentVolumeClaim", "claimName")+`)))`)),
		v("interfacePairs", pairs("variables.interfaces", "variables.sourceInterfaces", "variables.sourceInterfaceNames")),
		v("ownDNSName", p.dnsNameExpression()),
		v("priorityClass", p.priorityClassExpression()),
		// Where the VM differs from the source in a field derive does not
		// set: the paths down to each field it sets, every key but that
		// field's, and those fields of the source derive keeps.
		v("unlisted", differs("variables.spec", "variables.sourceSpec", "spec.",
			"runStrategy", "running", "template", "dataVolumeTemplates", "instancetype", "preference")+" +\n"+
			orEmpty(matcher("instancetype"), "spec.instancetype")+" +\n"+
			orEmpty(matcher("preference"), "spec.preference")+" +\n"+
			differs("variables.template", "variables.sourceTemplate", "spec.template.", "metadata", "spec")+" +\n"+
			differs("variables.templateMeta", "variables.sourceTemplateMeta", "spec.template.metadata.",
				"labels", "annotations", "name", "namespace", "generateName")+" +\n"+
			// KubeVirt v1.8's webhook gives a VM a PCI topology where the
			// source, made before, has none (derive.ClusterFields).
			orEmpty(sameBut(ta, sta, pciTopology)+" &&\n("+literal(pciTopology)+" in "+sta+" ? "+value(ta, pciTopology)+" == "+sta+"["+literal(pciTopology)+"] : "+
				value(ta, pciTopology)+" in ['', "+literal(kubevirtv1.PciTopologyVersionV3)+"])", "spec.template.metadata.annotations")+" +\n"+
			differs("variables.templateSpec", "variables.sourceTemplateSpec", "spec.template.spec.",
				"affinity", "hostname", "subdomain", "priorityClassName", "evictionStrategy", "domain", "volumes")+" +\n"+
			differs("variables.domain", "variables.sourceDomain", "spec.template.spec.domain.", "firmware", "devices")+" +\n"+
			differs("variables.firmware", "variables.sourceFirmware", "spec.template.spec.domain.firmware.", "uuid", "serial")+" +\n"+
			differs("variables.devices", "variables.sourceDevices", "spec.template.spec.domain.devices.", "interfaces")+" +\n"+
			orEmpty("variables.interfaceNames == variables.sourceInterfaceNames && "+unique("variables.sourceInterfaceNames")+" &&\n"+
				"variables.interfacePairs.all(p, "+sameBut("p.vm", "p.source", "macAddress")+")",
				"spec.template.spec.domain.devices.interfaces")+" +\n"+
			differs("variables.affinity", "variables.sourceAffinity", "spec.template.spec.affinity.", "nodeAffinity")+" +\n"+
			differs("variables.nodeAffinity", "variables.sourceNodeAffinity", "spec.template.spec.affinity.nodeAffinity.",
				"requiredDuringSchedulingIgnoredDuringExecution")+" +\n"+
			differs("variables.required", "variables.sourceRequired", "spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.",
				"nodeSelectorTerms")),
	}
}

// dnsNameExpression holds when the VM's hostname and subdomain are what
// derive gives it: for a StatefulSet's VM its Pod's name and the
// StatefulSet's Service; else its own name where the source has a hostname,
// and the source's subdomain. Else one agent could take another VM's
// <hostname>.<subdomain> name.
func (p Params) dnsNameExpression() string {
	hostname, subdomain := value("variables.templateSpec", "hostname"), value("variables.templateSpec", "subdomain")
	if p.subdomain() != "" {
		return hostname + " == variables.pod && " + subdomain + " == variables.statefulSetService"
	}
	return hostname + " == (" + value("variables.sourceTemplateSpec", "hostname") + " != '' ? object.metadata.name.replace('.', '-') : '') &&\n" +
		subdomain + " == " + value("variables.sourceTemplateSpec", "subdomain")
}

// dnsNameMessage says what dnsNameExpression allows.
func (p Params) dnsNameMessage() string {
	want := "where the prototype has a hostname its own name (dots as dashes), and the prototype's subdomain"
	if s := p.subdomain(); s != "" {
		want = "its Pod's name, and subdomain " + s
	}
	return "the VirtualMachine's hostname or subdomain is not its own: a vmctl agent may only create a VM whose hostname and subdomain are derive's: " + want
}

// priorityClassExpression holds when the VM's priority class is the
// source's, or where the workload has one its launcher priority class,
// and the VM's annotation names the launcher class exactly when it has it.
func (p Params) priorityClassExpression() string {
	class, launcher := value("variables.templateSpec", "priorityClassName"), value("variables.annotations", contract.AnnotationLauncherPriorityClass)
	source := value("variables.sourceTemplateSpec", "priorityClassName")
	if !p.hasLauncherPriorityClass() {
		return class + " == " + source + " && " + launcher + " == ''"
	}
	name := literal(p.launcherPriorityClassName())
	return "(" + class + " == " + source + " && " + launcher + " == '') ||\n(" + class + " == " + name + " && " + launcher + " == " + name + ")"
}

// priorityClassMessage says what priorityClassExpression allows.
func (p Params) priorityClassMessage() string {
	allowed := "the prototype's"
	if p.hasLauncherPriorityClass() {
		allowed += " or " + p.launcherPriorityClassName() + " (and annotation " + contract.AnnotationLauncherPriorityClass + " naming it)"
	}
	return fmt.Sprintf("the VirtualMachine's priority class is not %s: a vmctl agent may only create VMs derived from %s/%s", allowed, p.protoNamespace(), p.Prototype)
}

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

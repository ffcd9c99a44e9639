package scaffold

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

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
// on what an object holds. The source it compares with is the VM revision
// the VM claims, read from the workload's revision store, its parameter
// (createsource.go), as variables.source.
//
// It matches only creates of VMs: a policy whose paramKind the API server
// cannot resolve refuses every request it matches, whoever asks, before
// matchConditions, and kube-apiserver cannot for up to 30 s after it starts
// (kubernetes/kubernetes#124237); neither can it while the parameter is
// missing. Everything else the agents may do is the guard policy's, which
// needs no parameter, so KubeVirt's status updates, people's edits and
// every delete go through meanwhile.
func (p Params) admissionPolicy() *admissionregistrationv1.ValidatingAdmissionPolicy {
	return &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: p.qualifiedName(), Labels: p.labels(ComponentAdmission)},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			ParamKind:     p.paramKind(),
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
// created, variables.source what it is compared with: the revision it
// claims, or the prototype (sourceVariables).
// Every value read from either is an optional or has a default, never an
// error: .? on a variable that holds an optional finds nothing, so
// variables hold values.
func (p Params) createVariables() []admissionregistrationv1.Variable {
	v := func(name, expression string) admissionregistrationv1.Variable {
		return admissionregistrationv1.Variable{Name: name, Expression: expression}
	}
	vars := append(append(podVariables(), p.sourceVariables()...),
		v("node", `request.userInfo.?extra[?'`+nodeNameExtra+`'][?0].orValue('')`),
		v("fullName", `variables.source.metadata.name + '-' + variables.pod`),
		// derive.Name: "<prototype>-<pod>", or that cut and ended with
		// the Pod's UID's last characters (nameRule).
		v("uidSuffix", uidSuffix()),
		v("nameIsDerived", nameRule("object.metadata.name", "variables.fullName", "")),

		v("labels", `object.metadata.?labels.orValue({})`),
		v("sourceLabels", `variables.source.metadata.?labels.orValue({})`),
		v("annotations", `object.metadata.?annotations.orValue({})`),
		v("sourceAnnotations", `variables.source.metadata.?annotations.orValue({})`),
	)
	vars = append(vars, specMapVariables()...)
	vars = append(vars,
		v("templateAnnotations", `variables.templateMeta.?annotations.orValue({})`),
		v("sourceTemplateAnnotations", `variables.sourceTemplateMeta.?annotations.orValue({})`),
		v("interfaces", `variables.devices.?interfaces.orValue([])`),
		v("sourceInterfaces", `variables.sourceDevices.?interfaces.orValue([])`),
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
	from, source := p.derivedFrom(), p.sourceName()
	unlisted := forbid(`size(variables.unlisted) == 0`,
		"the VirtualMachine's fields not derive's are not "+source+": "+from)
	unlisted.MessageExpression = `"the VirtualMachine's fields not derive's are not ` + source + `: ` + from +
		`; it differs at " + variables.unlisted.join(", ")`
	return []admissionregistrationv1.Validation{
		// First: the API server reports the first refusal, and a claim
		// of no source fails most of the others too.
		p.claimValidation(),
		forbid(`variables.nameIsDerived`,
			fmt.Sprintf("the VirtualMachine's name is not %s-<pod>: a vmctl agent may only create the one VM named for its own Pod", p.Prototype)),
		forbid(`variables.onlyDerivedKeys`,
			"the VirtualMachine holds fields a derived VM never has: only apiVersion, kind, metadata and spec; in metadata only name, namespace, "+
				"labels, annotations and ownerReferences (and what the API server sets), no finalizers; none of name, namespace and generateName in the template's"),
		forbid(`variables.ownedByItsPod`,
			"a derived VM is owned by its agent's Pod alone: one ownerReference, to the Pod its bound token names (v1, name and UID), controller, not blocking deletion"),
		forbid(`variables.labelsDerived`, fmt.Sprintf("the VirtualMachine's labels or its template's are not %s with vmctl's for this Pod (%s=%s, %s=<its Pod>%s): %s",
			source, contract.LabelPrototype, derive.LabelValue(p.Prototype), contract.LabelPod, p.subdomainLabelNote(), from)),
		forbid(`variables.annotationsDerived`, fmt.Sprintf("the VirtualMachine's annotations are not %s with vmctl's for this Pod (its name, namespace, UID and node, "+
			"the prototype's name, namespace, generation and UID%s): %s", source, p.revisionNote(), from)),
		forbid(`variables.runsAlways`, "a derived VM runs always (runStrategy Always, no running) and is evicted External"),
		forbid(`variables.ownIdentity`, "the VirtualMachine's machine identity is not its own: firmware uuid and serial are its Pod's UID, and no interface has a MAC address"),
		forbid(`variables.pinned`, "the VirtualMachine is not pinned to its Pod's node as derive pins it: each of "+source+" required node selector terms "+
			"with metadata.name In [the node its bound token names] first"),
		forbid(`variables.volumesDerived && variables.templatesDerived`,
			"the VirtualMachine's volumes or dataVolumeTemplates are not "+source+": "+from),
		forbid(`variables.ownDNSName`, p.dnsNameMessage()),
		forbid(`variables.priorityClass`, p.priorityClassMessage()),
		unlisted,
	}
}

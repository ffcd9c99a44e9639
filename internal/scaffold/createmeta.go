package scaffold

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
)

// metadataVariables judge the VM's metadata, which derive makes afresh.
func (p Params) metadataVariables() []admissionregistrationv1.Variable {
	vmctl := []string{
		contract.AnnotationPodName, contract.AnnotationPodNamespace, contract.AnnotationPodUID, contract.AnnotationNode,
		contract.AnnotationPrototypeName, contract.AnnotationPrototypeNamespace, contract.AnnotationPrototypeGeneration, contract.AnnotationPrototypeUID,
		contract.AnnotationLauncherPriorityClass,
		// The claim, which sourceVariables judge.
		contract.AnnotationVMRevision,
	}
	a := "variables.annotations"
	return []admissionregistrationv1.Variable{
		{Name: "onlyDerivedKeys", Expression: cel(`
			object.all(k, k in ['apiVersion', 'kind', 'metadata', 'spec']) &&
			object.apiVersion == 'kubevirt.io/v1' && object.kind == 'VirtualMachine' &&
			object.metadata.all(k, k in ` + keyList(listed("metadata.")) + `) &&
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
			value(a, contract.AnnotationPrototypeGeneration) + " == string(variables.source.metadata.?generation.orValue(0)) &&\n" +
			// A revision of a prototype that had no UID (one made by
			// hand) records none.
			exactly(a, contract.AnnotationPrototypeUID, "variables.source.metadata.?uid.orValue('')")},
	}
}

// derivedLabels is CEL that holds when the labels l are the source's labels
// s and vmctl's for the requesting Pod: its prototype's name
// (derive.LabelValue) and its own, pod, whole (a label value cannot hold a
// longer one, so an agent of a Pod whose name is longer makes no VM), and
// for a StatefulSet's VM its Service.
func (p Params) derivedLabels(l, s, pod string) string {
	return sameBut(l, s, contract.LabelPrototype, contract.LabelPod, contract.LabelSubdomain) + " &&\n" +
		value(l, contract.LabelPrototype) + " == " + literal(derive.LabelValue(p.Prototype)) + " &&\n" +
		exactly(l, contract.LabelSubdomain, literal(p.subdomain())) + " &&\n" +
		pod + " == variables.pod"
}

// subdomainLabelNote says which subdomain label derivedLabels wants.
func (p Params) subdomainLabelNote() string {
	if s := p.subdomain(); s != "" {
		return ", " + contract.LabelSubdomain + "=" + s
	}
	return ""
}

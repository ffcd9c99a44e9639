package scaffold

import (
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
)

// Extras that a bound ServiceAccount token carries: the Pod it was issued
// to, and that Pod's node.
const (
	podNameExtra  = "authentication.kubernetes.io/pod-name"
	podUIDExtra   = "authentication.kubernetes.io/pod-uid"
	nodeNameExtra = "authentication.kubernetes.io/node-name"
)

// kubevirtAppLabel is the label KubeVirt gives its Pods, virt-launcher for
// a VM's launcher Pod (kubevirtv1.AppLabel).
const kubevirtAppLabel = "kubevirt.io"

// forbid is a validation that refuses with message, as Forbidden, unless
// expression holds.
func forbid(expression, message string) admissionregistrationv1.Validation {
	return admissionregistrationv1.Validation{Expression: expression, Message: message, Reason: ptr.To(metav1.StatusReasonForbidden)}
}

// cel is an expression written indented in Go source, after a line break,
// as the manifest shows it: without the first line's indentation, with two
// spaces for each tab that indents a line further.
func cel(expression string) string {
	indent := expression[:len(expression)-len(strings.TrimLeft(expression, "\n\t"))]
	return strings.ReplaceAll(strings.ReplaceAll(expression[len(indent):], indent, "\n"), "\t", "  ")
}

// literal is s as a CEL string, for a name the scaffold writes into a
// policy: names are DNS names, which need no escapes.
func literal(s string) string { return "'" + s + "'" }

// serviceAccountUsername is how the API server names the ServiceAccount.
func (p Params) serviceAccountUsername() string {
	return "system:serviceaccount:" + p.Namespace + ":" + p.Name
}

// admissionPolicy judges the VMs the agents' ServiceAccount creates against
// the prototype: the one VM derived from it for the agent's own Pod, with no
// volume, device, network or credential the prototype does not have. RBAC
// cannot say this: it has no rules on labels, on who is asking or on what an
// object holds. The prototype is the policy's parameter (paramKind
// VirtualMachine, bound by name).
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
			// object is the VM created, params the prototype.
			Variables: append(podVariables(), []admissionregistrationv1.Variable{
				// The StatefulSet's headless Service, which names its VMs in DNS;
				// empty for other workloads, whose Pods' names are not stable.
				{Name: "statefulSetService", Expression: literal(p.subdomain())},
				// The templates' specs, never optionals: .? on a variable that
				// holds an optional finds nothing.
				{Name: "spec", Expression: `object.spec.?template.?spec.orValue({})`},
				{Name: "protoSpec", Expression: `params.spec.?template.?spec.orValue({})`},
				// derive.Name: "<prototype>-<pod>", or that cut with a hash, of
				// which only the length and alphabet are checked (nameRule).
				{Name: "fullName", Expression: `params.metadata.name + '-' + variables.pod`},
				{Name: "nameIsDerived", Expression: nameRule("object.metadata.name", "variables.fullName", "")},
				{Name: "ownedByItsPodOrNothing", Expression: `object.metadata.?ownerReferences.orValue([]).all(r, r.kind == 'Pod' && r.name == variables.pod && r.uid == variables.podUID)`},
				{Name: "volumes", Expression: `variables.spec.?volumes.orValue([])`},
				{Name: "protoVolumes", Expression: `variables.protoSpec.?volumes.orValue([])`},
				// The VM's dataVolumeTemplates and the prototype's, by what KubeVirt
				// makes each one's DataVolume of: its name, spec, labels and
				// annotations. fullName is derive.Name(<template>, <VM>) before a cut.
				{Name: "templates", Expression: cel(`
					object.spec.?dataVolumeTemplates.orValue([]).map(t, {
						'name': t.metadata.?name.orValue(''),
						'spec': t.?spec.orValue({}),
						'labels': t.metadata.?labels.orValue({}),
						'annotations': t.metadata.?annotations.orValue({})})`)},
				{Name: "protoTemplates", Expression: cel(`
					params.spec.?dataVolumeTemplates.orValue([]).map(t, {
						'name': t.metadata.?name.orValue(''),
						'spec': t.?spec.orValue({}),
						'labels': t.metadata.?labels.orValue({}),
						'annotations': t.metadata.?annotations.orValue({}),
						'fullName': dyn(t.metadata.?name.orValue('') + '-' + object.metadata.name)})`)},
				// Each of the VM's templates with the names of the prototype's it is
				// derived from: the same spec, labels and annotations, and the name
				// derive.Name gives it, "<template>-<VM>", or that cut with a hash of
				// both names, of which only the length and alphabet are checked
				// (nameRule). Else a template could take the
				// name of another app's PersistentVolumeClaim, which CDI then adopts
				// into the VM's DataVolume: KubeVirt marks every DataVolume it makes
				// from a template cdi.kubevirt.io/allowClaimAdoption.
				{Name: "templateOrigins", Expression: cel(`
					variables.templates.map(t, {'name': t.name, 'from': dyn(variables.protoTemplates.filter(p,
						p.spec == t.spec && p.labels == t.labels && p.annotations == t.annotations &&
						(` + nameRule("t.name", "p.fullName", "  ") + `)
					).map(p, p.name))})`)},
				// Every volume is the prototype's volume of that name, except that a
				// claim the prototype makes from a dataVolumeTemplate (through a
				// dataVolume, a persistentVolumeClaim or an ephemeral volume) is the
				// VM's own template's derived from that one, as derive renames them
				// per VM, with the same source and read-only flags.
				{Name: "sameVolumes", Expression: cel(`
					size(variables.volumes) == size(variables.protoVolumes) &&
					variables.volumes.all(v, variables.protoVolumes.exists(p, p.name == v.name && (p == v || (
						variables.templateOrigins.exists(t,
							t.name == v.?dataVolume.?name.or(v.?persistentVolumeClaim.?claimName).or(v.?ephemeral.?persistentVolumeClaim.?claimName).orValue('') &&
							p.?dataVolume.?name.or(p.?persistentVolumeClaim.?claimName).or(p.?ephemeral.?persistentVolumeClaim.?claimName).orValue('') in t.from) &&
						has(p.dataVolume) == has(v.dataVolume) &&
						has(p.persistentVolumeClaim) == has(v.persistentVolumeClaim) &&
						has(p.ephemeral) == has(v.ephemeral) &&
						p.?persistentVolumeClaim.?readOnly == v.?persistentVolumeClaim.?readOnly &&
						p.?ephemeral.?persistentVolumeClaim.?readOnly == v.?ephemeral.?persistentVolumeClaim.?readOnly))))`)},
				{Name: "sameDataVolumeTemplates", Expression: cel(`
					size(variables.templates) == size(variables.protoTemplates) &&
					variables.templateOrigins.all(t, size(t.from) > 0)`)},
				// DNS names only its own: a hostname of the VM's name (derive sets
				// it so when the prototype has one) or, for a StatefulSet's VM, of
				// its Pod; the prototype's subdomain or the StatefulSet's Service;
				// and the Service's label only with its subdomain. Else one agent
				// could take another VM's <hostname>.<subdomain> name.
				// (== rather than in [...]: CEL rejects a list of a string and a
				// dyn, which params and optional fields are.)
				{Name: "hostname", Expression: `variables.spec.?hostname.orValue('')`},
				{Name: "subdomain", Expression: `variables.spec.?subdomain.orValue('')`},
				{Name: "subdomainLabel", Expression: metaValue("object.spec.template.?metadata", "labels", contract.LabelSubdomain)},
				{Name: "ownDNSName", Expression: cel(`
					(variables.hostname == '' || variables.hostname == object.metadata.name.replace('.', '-') || variables.hostname == variables.pod) &&
					(variables.subdomain == variables.protoSpec.?subdomain.orValue('') ||
						(variables.statefulSetService != '' && variables.subdomain == variables.statefulSetService)) &&
					(variables.subdomainLabel == '' || variables.subdomainLabel == variables.subdomain)`)},
				// What gives a guest the host's devices, another network, the
				// namespace's secrets or code in its launcher Pod (hook sidecars are
				// template annotations): all as the prototype has them.
				// The prototype's priority class, or the workload's launcher
				// priority class: never one that lets the VM preempt others.
				{Name: "priorityClass", Expression: p.priorityClassExpression()},
				{Name: "devices", Expression: `variables.spec.?domain.?devices.orValue({})`},
				{Name: "protoDevices", Expression: `variables.protoSpec.?domain.?devices.orValue({})`},
				{Name: "sameHostAccess", Expression: cel(`
					variables.devices.?hostDevices.orValue([]) == variables.protoDevices.?hostDevices.orValue([]) &&
					variables.devices.?gpus.orValue([]) == variables.protoDevices.?gpus.orValue([]) &&
					variables.devices.?filesystems.orValue([]) == variables.protoDevices.?filesystems.orValue([]) &&
					variables.devices.?downwardMetrics.hasValue() == variables.protoDevices.?downwardMetrics.hasValue() &&
					variables.spec.?accessCredentials.orValue([]) == variables.protoSpec.?accessCredentials.orValue([]) &&
					variables.spec.?networks.orValue([]) == variables.protoSpec.?networks.orValue([]) &&
					object.spec.template.?metadata.?annotations.orValue({}) == params.spec.template.?metadata.?annotations.orValue({}) &&
					object.spec.?instancetype.?name == params.spec.?instancetype.?name &&
					object.spec.?instancetype.?kind == params.spec.?instancetype.?kind &&
					object.spec.?preference.?name == params.spec.?preference.?name &&
					object.spec.?preference.?kind == params.spec.?preference.?kind`)},
			}...),
			Validations: []admissionregistrationv1.Validation{
				forbid(metaValue("object.metadata", "annotations", contract.AnnotationPodUID)+` == variables.podUID`,
					fmt.Sprintf("annotation %s does not hold the requesting Pod's UID: a vmctl agent may only create its own Pod's VM", contract.AnnotationPodUID)),
				forbid(`variables.nameIsDerived`,
					fmt.Sprintf("the VirtualMachine's name is not %s-<pod>: a vmctl agent may only create the one VM named for its own Pod", p.Prototype)),
				forbid(`object.spec.?runStrategy.orValue('') == 'Always' && variables.ownedByItsPodOrNothing`,
					"a derived VM runs always and is owned by its agent's Pod, or by nothing"),
				forbid(`variables.sameVolumes && variables.sameDataVolumeTemplates`,
					fmt.Sprintf("the VirtualMachine's volumes or dataVolumeTemplates are not the prototype's: a vmctl agent may only create VMs derived from %s/%s", p.protoNamespace(), p.Prototype)),
				forbid(`variables.ownDNSName`, p.dnsNameMessage()),
				forbid(`variables.sameHostAccess`,
					fmt.Sprintf("the VirtualMachine's devices, networks, credentials, instancetype or template annotations are not the prototype's: a vmctl agent may only create VMs derived from %s/%s", p.protoNamespace(), p.Prototype)),
				forbid(`variables.priorityClass`, p.priorityClassMessage()),
			},
		},
	}
}

// podVariables are CEL variables of both policies: the requesting Pod's name
// and UID, from its bound token, or the empty string (request.userInfo has
// no extra at all when the ServiceAccount is impersonated).
func podVariables() []admissionregistrationv1.Variable {
	return []admissionregistrationv1.Variable{
		{Name: "pod", Expression: `request.userInfo.?extra[?'authentication.kubernetes.io/pod-name'][?0].orValue('')`},
		{Name: "podUID", Expression: `request.userInfo.?extra[?'authentication.kubernetes.io/pod-uid'][?0].orValue('')`},
	}
}

// priorityClassExpression holds when the VM's priority class is the
// prototype's or, where the workload has one, its launcher priority class.
func (p Params) priorityClassExpression() string {
	class := `variables.spec.?priorityClassName.orValue('')`
	expr := class + ` == variables.protoSpec.?priorityClassName.orValue('')`
	if p.hasLauncherPriorityClass() {
		expr += ` || ` + class + ` == ` + literal(p.launcherPriorityClassName())
	}
	return expr
}

// priorityClassMessage says what priorityClassExpression allows.
func (p Params) priorityClassMessage() string {
	allowed := "the prototype's"
	if p.hasLauncherPriorityClass() {
		allowed += " or " + p.launcherPriorityClassName()
	}
	return fmt.Sprintf("the VirtualMachine's priority class is not %s: a vmctl agent may only create VMs derived from %s/%s", allowed, p.protoNamespace(), p.Prototype)
}

// dnsNameMessage says what ownDNSName allows.
func (p Params) dnsNameMessage() string {
	sub := "the prototype's"
	if s := p.subdomain(); s != "" {
		sub += " or " + s
	}
	return fmt.Sprintf("the VirtualMachine's hostname or subdomain is not its own: a vmctl agent may only create a VM whose hostname is unset, "+
		"its own name or its Pod's, with %s subdomain, and label %s only with that subdomain", sub, contract.LabelSubdomain)
}

// admissionPolicyBinding enforces the policy in Namespace, where the VMs go,
// with the prototype as its parameter, on the VMs labelled as derived from
// the prototype (the guard policy keeps the agents to those). Without the
// prototype no such VM can be created. The API server looks the parameter up
// before it evaluates matchConditions, so a binding that matched every VM
// would refuse everyone's VM creates in the namespace while the prototype is
// missing, even the prototype's own re-creation.
func (p Params) admissionPolicyBinding() *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: p.qualifiedName(), Labels: p.labels(ComponentAdmission)},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: p.qualifiedName(),
			ParamRef: &admissionregistrationv1.ParamRef{
				Name:                    p.Prototype,
				Namespace:               p.protoNamespace(),
				ParameterNotFoundAction: ptr.To(admissionregistrationv1.DenyAction),
			},
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{
				NamespaceSelector: p.namespaceSelector(),
				ObjectSelector:    p.derivedSelector(),
			},
		},
	}
}

// vmRules matches ops on resources of KubeVirt's API group in the
// namespaces and of the objects the selectors select (all when nil).
func vmRules(namespaces, objects *metav1.LabelSelector, ops []admissionregistrationv1.OperationType, resources ...string) *admissionregistrationv1.MatchResources {
	return &admissionregistrationv1.MatchResources{
		NamespaceSelector: namespaces,
		ObjectSelector:    objects,
		ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
			RuleWithOperations: admissionregistrationv1.RuleWithOperations{
				Operations: ops,
				Rule: admissionregistrationv1.Rule{
					APIGroups:   []string{kubevirtGroup},
					APIVersions: []string{"*"},
					Resources:   resources,
					Scope:       ptr.To(admissionregistrationv1.NamespacedScope),
				},
			},
		}},
	}
}

// vmCreates matches creating the prototype's derived VMs in Namespace.
func (p Params) vmCreates() *admissionregistrationv1.MatchResources {
	return vmRules(p.namespaceSelector(), p.derivedSelector(), []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, virtualMachines)
}

// agentOnly matches only the agents' ServiceAccount's requests.
func (p Params) agentOnly() []admissionregistrationv1.MatchCondition {
	return []admissionregistrationv1.MatchCondition{{
		Name:       "vmctl-agent",
		Expression: fmt.Sprintf("request.userInfo.username == '%s'", p.serviceAccountUsername()),
	}}
}

// derivedSelector selects the VMs and VMIs derived from the prototype.
func (p Params) derivedSelector() *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{contract.LabelPrototype: derive.LabelValue(p.Prototype)}}
}

// namespaceSelector selects Namespace, where the VMs go.
func (p Params) namespaceSelector() *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: p.Namespace}}
}

// guardName names the guard policy and its binding.
func (p Params) guardName() string { return p.Name + "-guard." + p.Namespace }

// guardPolicy confines the agents' ServiceAccount to what an agent does:
// create the one VM derived from the prototype for its own Pod (which the
// prototype-bound policy judges), delete the VM its Pod's name owns, and
// delete its own Pod's VMI to stop the VM for a drain; it never changes a VM
// or VMI, nor touches the prototype. It needs no parameter (the prototype's
// name is written into it), so it holds, and lets through what it should,
// also while the API server cannot resolve the other's parameter.
func (p Params) guardPolicy() *admissionregistrationv1.ValidatingAdmissionPolicy {
	return &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: p.guardName(), Labels: p.labels(ComponentAdmission)},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: vmRules(nil, nil,
				[]admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete},
				virtualMachines, virtualMachines+"/*", virtualMachineInstances, virtualMachineInstances+"/*"),
			MatchConditions: p.agentOnly(),
			// No parameter: the names it judges by are written in.
			Variables: append(append([]admissionregistrationv1.Variable{
				{Name: "prototype", Expression: literal(p.Prototype)},
				{Name: "prototypeNamespace", Expression: literal(p.protoNamespace())},
				{Name: "prototypeLabel", Expression: literal(derive.LabelValue(p.Prototype))},
				{Name: "podNamespace", Expression: literal(p.Namespace)},
			}, podVariables()...), []admissionregistrationv1.Variable{
				{Name: "vm", Expression: `request.operation == 'DELETE' ? oldObject : object`},
				{Name: "isVMI", Expression: `request.resource.resource == 'virtualmachineinstances'`},
				{Name: "isPrototype", Expression: `variables.vm.metadata.name == variables.prototype && variables.vm.metadata.namespace == variables.prototypeNamespace`},
				// The vmctl labels; a VMI carries those derive puts on the VM's
				// template. A Pod's name too long for a label value is hashed in it.
				{Name: "prototypeOfVM", Expression: metaValue("variables.vm.metadata", "labels", contract.LabelPrototype)},
				{Name: "podOfVM", Expression: metaValue("variables.vm.metadata", "labels", contract.LabelPod)},
				{Name: "ownPodsVMI", Expression: cel(fmt.Sprintf(`
					variables.prototypeOfVM == variables.prototypeLabel && variables.podOfVM != '' &&
					(size(variables.pod) > %d || variables.podOfVM == variables.pod)`, contract.MaxNameLength))},
				// Derived from this prototype for the requesting Pod, by name: a
				// StatefulSet Pod's agent replaces the VM of an earlier Pod of its
				// name, so deletion does not ask for the UID.
				{Name: "ownPodsVM", Expression: cel(fmt.Sprintf(`
					variables.prototypeOfVM == variables.prototypeLabel && variables.podOfVM != '' &&
					variables.vm.metadata.?annotations[%s].orValue('') == variables.pod &&
					variables.vm.metadata.?annotations[%s].orValue('') == variables.podNamespace &&
					variables.vm.metadata.?annotations[%s].orValue('') == variables.prototype &&
					variables.vm.metadata.?annotations[%s].orValue('') == variables.prototypeNamespace`,
					literal(contract.AnnotationPodName), literal(contract.AnnotationPodNamespace),
					literal(contract.AnnotationPrototypeName), literal(contract.AnnotationPrototypeNamespace)))},
			}...),
			Validations: []admissionregistrationv1.Validation{
				forbid(`variables.prototypeOfVM == variables.prototypeLabel`,
					fmt.Sprintf("a vmctl agent may only create and delete VMs and VMIs labelled %s=%s, derived from its prototype %s/%s",
						contract.LabelPrototype, derive.LabelValue(p.Prototype), p.protoNamespace(), p.Prototype)),
				forbid(`variables.pod != '' && variables.podUID != ''`,
					fmt.Sprintf("the request carries no Pod (%s, %s): the agent must use its Pod's bound ServiceAccount token, so keep automountServiceAccountToken true", podNameExtra, podUIDExtra)),
				forbid(`request.operation != 'UPDATE'`,
					"a vmctl agent never changes a VirtualMachine or a VMI; it only creates its own VM and deletes it"),
				forbid(`variables.isVMI || !variables.isPrototype`,
					fmt.Sprintf("a vmctl agent may never change or delete its prototype %s/%s", p.protoNamespace(), p.Prototype)),
				forbid(`variables.isVMI || variables.ownPodsVM`,
					fmt.Sprintf("the VirtualMachine is not this Pod's: a vmctl agent may only create and delete the VM derived from prototype %s/%s for its own Pod (labels %s and %s, annotations %s, %s and %s)",
						p.protoNamespace(), p.Prototype, contract.LabelPrototype, contract.LabelPod, contract.AnnotationPodName, contract.AnnotationPodNamespace, contract.AnnotationPrototypeName)),
				forbid(`!variables.isVMI || (request.operation == 'DELETE' && variables.ownPodsVMI)`,
					fmt.Sprintf("a vmctl agent may only delete its own Pod's VMI (labels %s=%s and %s=<its Pod>), to stop its VM for a drain",
						contract.LabelPrototype, derive.LabelValue(p.Prototype), contract.LabelPod)),
			},
		},
	}
}

// guardPolicyBinding enforces the guard policy in Namespace.
func (p Params) guardPolicyBinding() *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return p.namespaceBinding(p.guardName())
}

// namespaceBinding enforces the policy name, which needs no parameter, in
// Namespace.
func (p Params) namespaceBinding(name string) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: p.labels(ComponentAdmission)},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources:    &admissionregistrationv1.MatchResources{NamespaceSelector: p.namespaceSelector()},
		},
	}
}

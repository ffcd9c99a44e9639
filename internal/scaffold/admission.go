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

// podVariables are CEL variables of both policies: the requesting Pod's name
// and UID, from its bound token, or the empty string (request.userInfo has
// no extra at all when the ServiceAccount is impersonated).
func podVariables() []admissionregistrationv1.Variable {
	return []admissionregistrationv1.Variable{
		{Name: "pod", Expression: `request.userInfo.?extra[?'authentication.kubernetes.io/pod-name'][?0].orValue('')`},
		{Name: "podUID", Expression: `request.userInfo.?extra[?'authentication.kubernetes.io/pod-uid'][?0].orValue('')`},
	}
}

// admissionPolicyBinding enforces the policy in Namespace, where the VMs go,
// with the revision store as its parameter (paramRef), on the VMs labelled
// as derived from the prototype (the guard policy keeps the agents to
// those). Without the parameter no such VM can be created. The API server
// looks the parameter up before it evaluates matchConditions, so a binding that
// matched every VM would refuse everyone's VM creates in the namespace
// while the parameter is missing, even the prototype's own re-creation.
func (p Params) admissionPolicyBinding() *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: p.qualifiedName(), Labels: p.labels(ComponentAdmission)},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        p.qualifiedName(),
			ParamRef:          p.paramRef(),
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
				// template. A Pod's name always fits a label value whole.
				{Name: "prototypeOfVM", Expression: metaValue("variables.vm.metadata", "labels", contract.LabelPrototype)},
				{Name: "podOfVM", Expression: metaValue("variables.vm.metadata", "labels", contract.LabelPod)},
				{Name: "ownPodsVMI", Expression: cel(`
					variables.prototypeOfVM == variables.prototypeLabel && variables.podOfVM != '' && variables.podOfVM == variables.pod`)},
				// A delete's options are the agent's (contract.VMDeleteOptions,
				// VMIDeleteOptions), and a dry run: never Orphan, which would
				// leave the VM's instance running with no VM, nor a grace
				// period.
				{Name: "agentsDeleteOptions", Expression: cel(`
					request.operation != 'DELETE' || (
						request.?options.orValue({}).all(k, k in ['apiVersion', 'kind', 'dryRun', 'preconditions', 'propagationPolicy']) &&
						request.?options.?kind.orValue('DeleteOptions') == 'DeleteOptions' &&
						request.?options.?preconditions.orValue({}) == {'uid': oldObject.metadata.uid} &&
						request.?options.?propagationPolicy.orValue('') == (variables.isVMI ? '' : 'Background'))`)},
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
				forbid(`variables.agentsDeleteOptions`,
					"a vmctl agent deletes its VM only on condition of its UID and in the background (propagationPolicy Background), and its VMI only on condition of its UID: "+
						"no other propagation policy (Orphan would leave the VM's instance running with no VM), no grace period"),
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

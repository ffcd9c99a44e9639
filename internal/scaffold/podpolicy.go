package scaffold

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
)

// podPolicyName names the pod policy and its binding.
func (p Params) podPolicyName() string { return p.Name + "-pod." + p.Namespace }

// hasPodPolicy reports whether p's agents touch Pods at all (PodRules), and
// so need the pod policy.
func (p Params) hasPodPolicy() bool { return p.AdmissionPolicy && len(p.PodRules()) > 0 }

// podPolicy keeps the agents' ServiceAccount to its own Pod and its own
// VM's launcher Pod, which RBAC cannot: a resize of the Pod whose bound
// token asks (by name and UID), that makes no container's request or limit
// larger and leaves init containers and Pod-level resources alone; an
// eviction of that Pod only, with its UID as precondition (a StatefulSet's
// later Pod of the same name is another Pod) and no other option; and a
// change of the status of its own VM's launcher Pod (by the labels KubeVirt
// copies onto it from the VMI) that sets status.nominatedNodeName to the
// token's node, or clears it, and changes nothing else, which the pods/status endpoint
// would otherwise let it (every other status field, labels, annotations
// and finalizers). The
// API server checks the rest of a resize: only CPU and memory change, the
// QoS class stays.
func (p Params) podPolicy() *admissionregistrationv1.ValidatingAdmissionPolicy {
	rule := func(op admissionregistrationv1.OperationType, resource string) admissionregistrationv1.NamedRuleWithOperations {
		return admissionregistrationv1.NamedRuleWithOperations{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{op},
			Rule: admissionregistrationv1.Rule{
				APIGroups:   []string{""},
				APIVersions: []string{"v1"},
				Resources:   []string{resource},
				Scope:       ptr.To(admissionregistrationv1.NamespacedScope),
			},
		}}
	}
	var rules []admissionregistrationv1.NamedRuleWithOperations
	if p.Reserves() {
		rules = append(rules, rule(admissionregistrationv1.Update, "pods/resize"), rule(admissionregistrationv1.Update, "pods/status"))
	}
	if p.EvictsOwnPod() {
		rules = append(rules, rule(admissionregistrationv1.Create, "pods/eviction"))
	}
	return &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: p.podPolicyName(), Labels: p.labels(ComponentAdmission)},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy:    ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: rules},
			MatchConditions:  p.agentOnly(),
			// object is the Pod as resized or nominated (oldObject as it
			// was), or the Eviction.
			Variables: append(podVariables(), []admissionregistrationv1.Variable{
				{Name: "isResize", Expression: `request.subResource == 'resize'`},
				{Name: "isStatus", Expression: `request.subResource == 'status'`},
				{Name: "node", Expression: `request.userInfo.?extra[?'` + nodeNameExtra + `'][?0].orValue('')`},
				// The labels KubeVirt gives its launcher Pods and copies from
				// the VMI, which derive put on the VM's template. A Pod's name
				// always fits a label value whole.
				{Name: "launcherOfOwnVM", Expression: cel(`
					object.metadata.?labels['` + kubevirtAppLabel + `'].orValue('') == 'virt-launcher' &&
					object.metadata.?labels['` + contract.LabelPrototype + `'].orValue('') == ` + literal(derive.LabelValue(p.Prototype)) + ` &&
					variables.pod != '' && object.metadata.?labels['` + contract.LabelPod + `'].orValue('') == variables.pod`)},
				{Name: "onlyNomination", Expression: onlyNomination()},
				// An eviction's options are the agent's
				// (contract.EvictionDeleteOptions), and a dry run: no grace
				// period, which would kill the agent before it deleted its VM.
				{Name: "ownPod", Expression: cel(`
					variables.pod != '' && variables.podUID != '' && request.name == variables.pod &&
					(variables.isResize ?
						object.metadata.uid == variables.podUID :
						object.?deleteOptions.orValue({}).all(k, k in ['apiVersion', 'kind', 'dryRun', 'preconditions']) &&
						object.?deleteOptions.?kind.orValue('DeleteOptions') == 'DeleteOptions' &&
						object.?deleteOptions.?preconditions.orValue({}) == {'uid': variables.podUID})`)},
				// Every container's requests and limits at most what they
				// were; the API server refuses to drop one.
				{Name: "noLarger", Expression: cel(`
					object.spec.containers.all(c, oldObject.spec.containers.exists(o, o.name == c.name &&
						c.?resources.?requests.orValue({}).all(r,
							quantity(string(c.resources.requests[r])).compareTo(quantity(string(o.?resources.?requests[r].orValue('0')))) <= 0) &&
						c.?resources.?limits.orValue({}).all(r,
							quantity(string(c.resources.limits[r])).compareTo(quantity(string(o.?resources.?limits[r].orValue('0')))) <= 0)))`)},
				{Name: "smaller", Expression: cel(`
					variables.noLarger &&
					object.spec.?initContainers.orValue([]) == oldObject.spec.?initContainers.orValue([]) &&
					object.spec.?resources.orValue({}) == oldObject.spec.?resources.orValue({})`)},
			}...),
			Validations: []admissionregistrationv1.Validation{
				forbid(`variables.isStatus || variables.ownPod`,
					"a vmctl agent may only resize or evict its own Pod: the one its bound token names ("+podNameExtra+", and "+podUIDExtra+
						" as the resized Pod's UID or the eviction's UID precondition, its only delete option)"),
				forbid(`!variables.isResize || variables.smaller`,
					"a vmctl agent may only make its own Pod smaller: no container's request or limit larger, init containers and Pod-level resources unchanged"),
				forbid(`!variables.isStatus || variables.launcherOfOwnVM`,
					fmt.Sprintf("a vmctl agent may only change the status of its own VM's launcher Pod (labels %s=virt-launcher, %s=%s and %s=<its Pod>)",
						kubevirtAppLabel, contract.LabelPrototype, derive.LabelValue(p.Prototype), contract.LabelPod)),
				forbid(`!variables.isStatus || variables.onlyNomination`,
					"a vmctl agent may only nominate its VM's launcher Pod to its own node: status.nominatedNodeName set to the node its bound token names ("+
						nodeNameExtra+") or cleared, nothing else of the Pod's status or metadata changed"),
			},
		},
	}
}

// onlyNomination is the CEL that holds when a change of a Pod's status
// sets its nominatedNodeName to the requesting token's node, or clears it
// (the agent withdraws a nomination its launcher Pod did not use), and
// changes nothing else: every other field of the status and of the
// metadata as it was (the pods/status endpoint lets labels, annotations
// and finalizers through), but what the API server writes itself, its
// record of who wrote what and the resourceVersion. Whole maps are
// compared, so a field a later Kubernetes adds is held too.
func onlyNomination() string {
	return "variables.node != '' && (!has(object.status.nominatedNodeName) || object.status.nominatedNodeName == variables.node) &&\n" +
		sameBut("object.status", "oldObject.status", "nominatedNodeName") + " &&\n" +
		sameBut("object.metadata", "oldObject.metadata", "managedFields", "resourceVersion")
}

// podPolicyBinding enforces the pod policy in Namespace, where the agents'
// Pods run.
func (p Params) podPolicyBinding() *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return p.namespaceBinding(p.podPolicyName())
}

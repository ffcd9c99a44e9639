package scaffold

import (
	"fmt"
	"strconv"
	"strings"

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
// later Pod of the same name is another Pod); and a change of the status
// of its own VM's launcher Pod (by the labels KubeVirt copies onto it from
// the VMI) that sets status.nominatedNodeName to the token's node, or
// clears it, and changes nothing else, which the pods/status endpoint would otherwise let
// it (every other status field, labels, annotations and finalizers). The
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
	rules := []admissionregistrationv1.NamedRuleWithOperations{
		rule(admissionregistrationv1.Update, "pods/resize"),
		rule(admissionregistrationv1.Update, "pods/status"),
	}
	if p.Moves() {
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
				// too long for a label value is hashed in it.
				{Name: "launcherOfOwnVM", Expression: cel(`
					object.metadata.?labels['` + kubevirtAppLabel + `'].orValue('') == 'virt-launcher' &&
					object.metadata.?labels['` + contract.LabelPrototype + `'].orValue('') == ` + literal(derive.LabelValue(p.Prototype)) + ` &&
					(size(variables.pod) > ` + strconv.Itoa(contract.MaxNameLength) + ` || object.metadata.?labels['` + contract.LabelPod + `'].orValue('') == variables.pod)`)},
				{Name: "onlyNomination", Expression: onlyNomination()},
				{Name: "ownPod", Expression: cel(`
					variables.pod != '' && variables.podUID != '' && request.name == variables.pod &&
					(variables.isResize ?
						object.metadata.uid == variables.podUID :
						object.?deleteOptions.?preconditions.?uid.orValue('') == variables.podUID)`)},
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
						" as the resized Pod's UID or the eviction's UID precondition)"),
				forbid(`!variables.isResize || variables.smaller`,
					"a vmctl agent may only make its own Pod smaller: no container's request or limit larger, init containers and Pod-level resources unchanged"),
				forbid(`!variables.isStatus || variables.launcherOfOwnVM`,
					fmt.Sprintf("a vmctl agent may only change the status of its own VM's launcher Pod (labels %s=virt-launcher, %s=%s and %s=<its Pod>)",
						kubevirtAppLabel, contract.LabelPrototype, derive.LabelValue(p.Prototype), contract.LabelPod)),
				forbid(`!variables.isStatus || variables.onlyNomination`,
					"a vmctl agent may only nominate its VM's launcher Pod to its own node: status.nominatedNodeName set to the node its bound token names ("+
						nodeNameExtra+") or cleared, nothing else of the Pod changed"),
			},
		},
	}
}

// podStatusFields are the fields of a PodStatus (Kubernetes 1.36) but
// nominatedNodeName: those a nomination leaves as they were.
// TestPodStatusFieldsAreKubernetes fails when k8s.io/api's differ.
var podStatusFields = []string{
	"observedGeneration", "phase", "conditions", "message", "reason",
	"hostIP", "hostIPs", "podIP", "podIPs", "startTime",
	"initContainerStatuses", "containerStatuses", "qosClass", "ephemeralContainerStatuses",
	"resize", "resourceClaimStatuses", "extendedResourceClaimStatus",
	"allocatedResources", "resources", "nodeAllocatableResourceClaimStatuses",
}

// onlyNomination is the CEL that holds when a change of a Pod's status
// sets its nominatedNodeName to the requesting token's node, or clears it,
// and changes nothing else the pods/status endpoint lets through.
func onlyNomination() string {
	same := []string{
		"object.metadata.?labels == oldObject.metadata.?labels",
		"object.metadata.?annotations == oldObject.metadata.?annotations",
		"object.metadata.?finalizers == oldObject.metadata.?finalizers",
	}
	for _, f := range podStatusFields {
		same = append(same, "object.status.?"+f+" == oldObject.status.?"+f)
	}
	return "variables.node != '' && (object.status.?nominatedNodeName.orValue('') == variables.node || object.status.?nominatedNodeName.orValue('') == '') &&\n" +
		strings.Join(same, " &&\n")
}

// podPolicyBinding enforces the pod policy in Namespace, where the agents'
// Pods run.
func (p Params) podPolicyBinding() *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return p.namespaceBinding(p.podPolicyName())
}

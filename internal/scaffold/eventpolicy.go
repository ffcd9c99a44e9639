package scaffold

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/stuck"
)

// eventPolicyName names the event policy and its binding.
func (p Params) eventPolicyName() string { return p.Name + "-events." + p.Namespace }

// eventPolicy keeps the agents' ServiceAccount to Events about its own Pod,
// which RBAC cannot: it grants create and patch on every Event of the
// namespace. The agent records Events only on its own Pod (its VM's are
// KubeVirt's), through client-go's recorder, which creates an Event and
// patches it to count a repeat. So an agent may create an Event whose
// involvedObject is the Pod its bound token names (by name and UID), and
// nothing else, signed as the agent on its token's node (source and
// reporting fields), named after that Pod as the recorder names it, with
// only the fields the recorder writes (no related object, series, action,
// label, annotation, finalizer or owner), one of the agent's reasons, a
// type of Normal or Warning, a message of at most contract.MaxEventMessage
// bytes and a count of 1; and patch only such an Event into another such,
// of the same reason and type, counting one more. Else a stolen token could
// blame another Pod, sign as the kubelet, rewrite the scheduler's Events,
// or store a megabyte in every Event of its Pod.
func (p Params) eventPolicy() *admissionregistrationv1.ValidatingAdmissionPolicy {
	return &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: p.eventPolicyName(), Labels: p.labels(ComponentAdmission)},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
					Rule: admissionregistrationv1.Rule{
						APIGroups:   []string{""},
						APIVersions: []string{"v1"},
						Resources:   []string{"events"},
						Scope:       ptr.To(admissionregistrationv1.NamespacedScope),
					},
				},
			}}},
			MatchConditions: p.agentOnly(),
			// object is the Event as created or patched, oldObject as it was.
			Variables: append(podVariables(), []admissionregistrationv1.Variable{
				{Name: "node", Expression: `request.userInfo.?extra[?'` + nodeNameExtra + `'][?0].orValue('')`},
				{Name: "aboutOwnPod", Expression: aboutOwnPod("object", p.Namespace)},
				{Name: "signed", Expression: cel(`
					object.?source.?component.orValue('') == ` + literal(contract.EventComponent) + ` &&
					object.?source.?host.orValue('') == variables.node &&
					object.?reportingComponent.orValue('') == ` + literal(contract.EventComponent) + ` &&
					object.?reportingInstance.orValue('') == variables.node`)},
				{Name: "nothingElse", Expression: cel(`
					object.all(k, k in ['apiVersion', 'kind', 'metadata', 'involvedObject', 'reason', 'message', 'source',
						'firstTimestamp', 'lastTimestamp', 'count', 'type', 'eventTime', 'reportingComponent', 'reportingInstance']) &&
					object.metadata.all(k, k in ['name', 'generateName', 'namespace', 'uid', 'resourceVersion', 'creationTimestamp', 'managedFields']) &&
					object.metadata.name.startsWith(variables.pod + '.')`)},
				{Name: "asTheAgentWrites", Expression: cel(fmt.Sprintf(`
					object.?reason.orValue('') in %s &&
					object.?type.orValue('') in ['Normal', 'Warning'] &&
					size(object.?message.orValue('')) <= %d &&
					(request.operation == 'UPDATE' ?
						object.?count.orValue(0) == oldObject.?count.orValue(0) + 1 &&
						object.?reason.orValue('') == oldObject.?reason.orValue('') && object.?type.orValue('') == oldObject.?type.orValue('') :
						object.?count.orValue(0) == 1)`, keyList(append(contract.AgentEventReasons(), stuck.Reasons()...)), contract.MaxEventMessage))},
				{Name: "wasAboutOwnPod", Expression: `request.operation != 'UPDATE' || (` + aboutOwnPod("oldObject", p.Namespace) + `)`},
			}...),
			Validations: []admissionregistrationv1.Validation{
				forbid(`variables.aboutOwnPod && variables.wasAboutOwnPod`,
					fmt.Sprintf("a vmctl agent may only record Events about its own Pod: involvedObject the Pod its bound token names (%s, %s), in namespace %s",
						podNameExtra, podUIDExtra, p.Namespace)),
				forbid(`variables.signed && variables.nothingElse`,
					fmt.Sprintf("a vmctl agent's Events are signed %s from its own node (source and reporting component and host, instance), are named <its Pod>.<suffix>, "+
						"and have only the fields client-go's recorder writes: no related object, series, action, label, annotation, finalizer or owner",
						contract.EventComponent)),
				forbid(`variables.asTheAgentWrites`,
					fmt.Sprintf("a vmctl agent's Events have one of its reasons, type Normal or Warning, a message of at most %d bytes, and a count of 1, "+
						"which a patch raises by one, keeping the reason and type", contract.MaxEventMessage)),
			},
		},
	}
}

// aboutOwnPod is CEL that holds when the Event event is about the Pod the
// request's bound token names, in namespace: the reference the agent's
// recorder makes, and nothing more.
func aboutOwnPod(event, namespace string) string {
	return fmt.Sprintf("variables.pod != '' && variables.podUID != '' &&\n"+
		"%s.involvedObject == {'apiVersion': 'v1', 'kind': 'Pod', 'name': variables.pod, 'namespace': %s, 'uid': variables.podUID}", event, literal(namespace))
}

// eventPolicyBinding enforces the event policy in Namespace, where the
// agents' Pods run and their Events go.
func (p Params) eventPolicyBinding() *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return p.namespaceBinding(p.eventPolicyName())
}

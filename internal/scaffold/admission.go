package scaffold

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
)

// podNameExtra is the user extra that bound ServiceAccount tokens carry: the
// name of the Pod the token was issued to.
const podNameExtra = "authentication.kubernetes.io/pod-name"

// serviceAccountUsername is how the API server names the ServiceAccount.
func (p Params) serviceAccountUsername() string {
	return "system:serviceaccount:" + p.Namespace + ":" + p.Name
}

// admissionPolicy confines the agents' ServiceAccount to the VMs of its own
// prototype, each created and deleted only by the Pod it belongs to. RBAC
// cannot say this: it has no rules on labels or on who is asking.
func (p Params) admissionPolicy() *admissionregistrationv1.ValidatingAdmissionPolicy {
	// hasVMLabels is true when the VM at path carries vmctl's labels for this
	// prototype, whose value derive cuts to fit a label.
	hasVMLabels := func(path string) string {
		return fmt.Sprintf("has(%[1]s.metadata.labels) && '%[2]s' in %[1]s.metadata.labels && '%[3]s' in %[1]s.metadata.labels && %[1]s.metadata.labels['%[3]s'] == '%[4]s'",
			path, derive.LabelPod, derive.LabelPrototype, derive.LabelValue(p.Prototype))
	}
	// isRequestPods is true when the VM at path names the requesting Pod as its owner.
	isRequestPods := func(path string) string {
		return fmt.Sprintf("has(%[1]s.metadata.annotations) && '%[2]s' in %[1]s.metadata.annotations && %[1]s.metadata.annotations['%[2]s'] == variables.requestPod",
			path, derive.AnnotationPodName)
	}
	labelsDesc := fmt.Sprintf("labels %s and %s=%s", derive.LabelPod, derive.LabelPrototype, derive.LabelValue(p.Prototype))

	return &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta: metav1.TypeMeta{
			APIVersion: admissionregistrationv1.SchemeGroupVersion.String(),
			Kind:       "ValidatingAdmissionPolicy",
		},
		ObjectMeta: metav1.ObjectMeta{Name: p.qualifiedName(), Labels: p.labels(ComponentAdmission)},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{
							admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete,
						},
						Rule: admissionregistrationv1.Rule{
							APIGroups:   []string{kubevirtGroup},
							APIVersions: []string{"*"},
							Resources:   []string{virtualMachines},
							Scope:       ptr.To(admissionregistrationv1.NamespacedScope),
						},
					},
				}},
			},
			// Only this ServiceAccount's requests are checked; people and
			// other controllers are left to RBAC.
			MatchConditions: []admissionregistrationv1.MatchCondition{{
				Name:       "vmctl-agent",
				Expression: fmt.Sprintf("request.userInfo.username == '%s'", p.serviceAccountUsername()),
			}},
			Variables: []admissionregistrationv1.Variable{{
				Name: "requestPod",
				Expression: fmt.Sprintf("has(request.userInfo.extra) && '%[1]s' in request.userInfo.extra && size(request.userInfo.extra['%[1]s']) > 0 ? request.userInfo.extra['%[1]s'][0] : ''",
					podNameExtra),
			}},
			Validations: []admissionregistrationv1.Validation{
				{
					Expression: "variables.requestPod != ''",
					Message: fmt.Sprintf("the request carries no Pod name (%s): the agent must use its Pod's bound ServiceAccount token, so keep automountServiceAccountToken true",
						podNameExtra),
					Reason: ptr.To(metav1.StatusReasonForbidden),
				},
				{
					Expression: "request.operation == 'DELETE' || (" + hasVMLabels("object") + ")",
					Message:    fmt.Sprintf("the VirtualMachine lacks vmctl's %s: this ServiceAccount may only make VMs derived from prototype %s", labelsDesc, p.Prototype),
					Reason:     ptr.To(metav1.StatusReasonForbidden),
				},
				{
					Expression: "request.operation == 'DELETE' || (" + isRequestPods("object") + ")",
					Message:    fmt.Sprintf("the VirtualMachine's annotation %s does not name the requesting Pod: an agent may only make its own Pod's VM", derive.AnnotationPodName),
					Reason:     ptr.To(metav1.StatusReasonForbidden),
				},
				{
					Expression: "request.operation == 'CREATE' || (" + hasVMLabels("oldObject") + ")",
					Message:    fmt.Sprintf("the VirtualMachine lacks vmctl's %s: this ServiceAccount may only change or delete VMs derived from prototype %s", labelsDesc, p.Prototype),
					Reason:     ptr.To(metav1.StatusReasonForbidden),
				},
				{
					Expression: "request.operation == 'CREATE' || (" + isRequestPods("oldObject") + ")",
					Message:    fmt.Sprintf("the VirtualMachine's annotation %s does not name the requesting Pod: an agent may only change or delete its own Pod's VM", derive.AnnotationPodName),
					Reason:     ptr.To(metav1.StatusReasonForbidden),
				},
			},
		},
	}
}

// admissionPolicyBinding enforces the policy in Namespace, where the VMs go.
func (p Params) admissionPolicyBinding() *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		TypeMeta: metav1.TypeMeta{
			APIVersion: admissionregistrationv1.SchemeGroupVersion.String(),
			Kind:       "ValidatingAdmissionPolicyBinding",
		},
		ObjectMeta: metav1.ObjectMeta{Name: p.qualifiedName(), Labels: p.labels(ComponentAdmission)},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        p.qualifiedName(),
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{
					MatchLabels: map[string]string{corev1.LabelMetadataName: p.Namespace},
				},
			},
		},
	}
}

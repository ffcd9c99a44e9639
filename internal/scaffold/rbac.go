package scaffold

import (
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
)

// KubeVirt's API group and the resource the agent manages.
const (
	kubevirtGroup           = "kubevirt.io"
	virtualMachines         = "virtualmachines"
	virtualMachineInstances = "virtualmachineinstances"
)

func (p Params) serviceAccount() *corev1.ServiceAccount {
	return &corev1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, Labels: p.labels(contract.ComponentAgent)},
	}
}

// VMRules let the agent create, follow and delete its derived VM and record
// events. It learns its own Pod from the downward API; only an agent that
// holds its VM's room reads Pods (PodRules).
// One that stops its VM for a drain (a DaemonSet's, see
// StopsOnEvacuation) watches its VMI, and deletes it.
func (p Params) VMRules() []rbacv1.PolicyRule {
	rules := []rbacv1.PolicyRule{
		{
			APIGroups: []string{kubevirtGroup},
			Resources: []string{virtualMachines},
			// list only where the API server cannot stream a watch's
			// initial list; watch grants as much already.
			Verbs: []string{"create", "get", "list", "watch", "delete"},
		},
		{
			// client-go's recorder creates an Event and patches it to
			// count a repeat; the event policy (eventPolicy) keeps both to
			// Events about the agent's own Pod.
			APIGroups: []string{""},
			Resources: []string{"events"},
			Verbs:     []string{"create", "patch"},
		},
	}
	// Every agent watches its VMI for KubeVirt's evacuation mark; a
	// DaemonSet's stops its VM by deleting the VMI.
	vmiVerbs := []string{"get", "list", "watch"}
	if p.StopsOnEvacuation() {
		vmiVerbs = append(vmiVerbs, "delete")
	}
	rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{kubevirtGroup}, Resources: []string{virtualMachineInstances}, Verbs: vmiVerbs})
	return append(rules, p.PodRules()...)
}

// PodRules let an agent that holds room for its VM hand it over: follow its
// VM's launcher Pod, nominate that Pod to its node (patch pods/status) and
// resize its own Pod to give the room back; and, where it moves or leaves
// with an evacuated VM (EvictsOwnPod), evict its own Pod. RBAC cannot name these Pods, whose names are not known
// beforehand: the pod policy (podPolicy) keeps each agent to its own Pod,
// to resizing it down, and to setting only the nomination of its own VM's
// launcher Pod. Nothing narrows the reads: the agent lists its launcher
// Pods once by label and watches only its launcher Pod, by name, but its
// Role may read every Pod of the namespace.
func (p Params) PodRules() []rbacv1.PolicyRule {
	var rules []rbacv1.PolicyRule
	if p.Reserves() {
		rules = append(rules,
			rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods/resize"}, Verbs: []string{"patch"}},
			rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list", "watch"}},
			rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods/status"}, Verbs: []string{"patch"}})
	}
	if p.EvictsOwnPod() {
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods/eviction"}, Verbs: []string{"create"}})
	}
	return rules
}

// rbac returns the Role and RoleBinding, in Namespace. The agents read the
// revision store beside them, never the prototype, so wherever the
// prototype lives they need nothing there.
func (p Params) rbac() []runtime.Object {
	rules := append([]rbacv1.PolicyRule{StoreRule(p.storeName())}, p.VMRules()...)
	return []runtime.Object{
		p.role(p.Name, p.Namespace, rules),
		p.roleBinding(p.Name, p.Namespace),
	}
}

func (p Params) role(name, namespace string, rules []rbacv1.PolicyRule) *rbacv1.Role {
	return &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "Role"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: p.labels(contract.ComponentAgent)},
		Rules:      rules,
	}
}

// roleBinding binds the Role of the same name to the ServiceAccount.
func (p Params) roleBinding(name, namespace string) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: p.labels(contract.ComponentAgent)},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{
			Kind:      rbacv1.ServiceAccountKind,
			Name:      p.Name,
			Namespace: p.Namespace,
		}},
	}
}

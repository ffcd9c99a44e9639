package scaffold

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/revision"
)

// AnnotationChangeCause is what `kubectl rollout history` shows for a
// revision of a workload: the Deployment controller copies it to the
// ReplicaSet, the StatefulSet and DaemonSet controllers to their
// ControllerRevisions.
const AnnotationChangeCause = "kubernetes.io/change-cause"

// Pinned reports whether p's template pins a VM revision: then its agents
// derive their VMs from that revision in the workload's revision store,
// never from the live prototype.
func (p Params) Pinned() bool { return p.Revision != nil }

// storeName is the workload's revision store.
func (p Params) storeName() string { return revision.StoreName(p.Name) }

// ChangeCause is the change-cause of a template that pins revision hash of
// rev: which prototype, at which generation.
func ChangeCause(rev *revision.Revision, hash string) string {
	return fmt.Sprintf("vmctl: VM revision %s of prototype %s/%s (generation %d)", hash, rev.Namespace, rev.Name, rev.Generation)
}

// store is the workload's revision store, holding the revision p pins.
func (p Params) store() (*unstructured.Unstructured, error) {
	s := revision.NewStore(p.Namespace, p.Name)
	s.Revisions[p.RevisionHash] = p.Revision
	return s.Object()
}

// pinTemplate makes t pin p's revision: the annotation names it, the
// downward API passes it to the agent, and the agent's arguments name the
// store it is in.
func (p Params) pinTemplate(t *corev1.PodTemplateSpec) {
	if !p.Pinned() {
		return
	}
	t.Annotations[contract.AnnotationVMRevision] = p.RevisionHash
	c := &t.Spec.Containers[0]
	c.Env = append(c.Env, VMRevisionEnv())
}

// VMRevisionEnv passes the revision a template pins to its agent.
func VMRevisionEnv() corev1.EnvVar {
	return corev1.EnvVar{Name: contract.EnvVMRevision, ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['" + contract.AnnotationVMRevision + "']"},
	}}
}

// StoreRule lets the agent read the one revision store it derives from,
// and watch it while the revision it pins is missing: resourceNames hold
// for a list or watch that a field selector narrows to that name, as the
// agent's are.
func StoreRule(store string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{
		APIGroups:     []string{revision.StoreGroup},
		Resources:     []string{revision.StoreResource},
		ResourceNames: []string{store},
		Verbs:         []string{"get", "list", "watch"},
	}
}

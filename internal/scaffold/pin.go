package scaffold

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kubevirtv1 "kubevirt.io/api/core/v1"

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
func (p Params) Pinned() bool { return p.Snapshot != nil }

// storeName is the workload's revision store.
func (p Params) storeName() string { return revision.StoreName(p.Name) }

// ChangeCause is the change-cause of a template that pins revision hash of
// rev: which prototype, at which generation.
func ChangeCause(rev *kubevirtv1.VirtualMachine, hash string) string {
	return fmt.Sprintf("vmctl: VM revision %s of prototype %s/%s (generation %d)", hash, rev.Namespace, rev.Name, rev.Generation)
}

// store is the workload's revision store, holding the revision p pins and
// those it holds already (StoredRevisions), these as they are stored.
func (p Params) store() (*unstructured.Unstructured, error) {
	s := revision.NewStore(p.Namespace, p.Name)
	s.Revisions[p.RevisionHash] = p.Snapshot
	u, err := s.Object()
	if err != nil {
		return nil, err
	}
	for hash, stored := range p.StoredRevisions {
		if err := unstructured.SetNestedField(u.Object, stored, "spec", "revisions", hash); err != nil {
			return nil, fmt.Errorf("keep revision %s of the store %s/%s: %w", hash, p.Namespace, p.storeName(), err)
		}
	}
	return u, nil
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

// storeClusterRoles let Kubernetes' user-facing roles reach the revision
// stores, as they reach the built-in kinds: view reads them (status and
// diff list them), edit and admin write them too (rollout restart patches
// them, gc prunes them). Aggregation adds their rules to view, edit and
// admin; they bind no one themselves.
func storeClusterRoles() []runtime.Object {
	role := func(name string, verbs []string, to ...string) *rbacv1.ClusterRole {
		labels := map[string]string{contract.LabelName: contract.AppName, contract.LabelManagedBy: contract.ManagedBy}
		for _, r := range to {
			labels["rbac.authorization.k8s.io/aggregate-to-"+r] = "true"
		}
		return &rbacv1.ClusterRole{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Rules: []rbacv1.PolicyRule{{
				APIGroups: []string{revision.StoreGroup}, Resources: []string{revision.StoreResource}, Verbs: verbs,
			}},
		}
	}
	return []runtime.Object{
		role("vmctl-vmrevisionstores-view", []string{"get", "list", "watch"}, "view", "edit", "admin"),
		role("vmctl-vmrevisionstores-edit", []string{"create", "update", "patch", "delete", "deletecollection"}, "edit", "admin"),
	}
}

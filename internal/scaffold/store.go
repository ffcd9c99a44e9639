package scaffold

import (
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/revision"
)

// storeName is the workload's revision store.
func (p Params) storeName() string { return revision.StoreName(p.Name) }

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

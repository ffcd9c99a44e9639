package drift

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/revision"
)

// Sources are what derived VMs are compared with: the revisions they were
// derived from, out of the revision stores of their Pods' namespaces,
// each namespace's read once.
type Sources struct {
	c             kube.Clients
	allNamespaces bool
	listed        map[string]bool
	revisions     map[types.NamespacedName]*kubevirtv1.VirtualMachine
	// rewritten are, by store, the revisions it holds rewritten
	// (revision.Store.Rewritten).
	rewritten map[types.NamespacedName]map[string]string
}

// NewSources returns the Sources of VMs read through c. allNamespaces
// allows them one LIST over all namespaces in place of one per namespace.
func NewSources(c kube.Clients, allNamespaces bool) *Sources {
	return &Sources{c: c, allNamespaces: allNamespaces,
		listed: map[string]bool{}, revisions: map[types.NamespacedName]*kubevirtv1.VirtualMachine{}, rewritten: map[types.NamespacedName]map[string]string{}}
}

// ReadStores reads the revision stores of namespaces it has not read:
// one LIST of each, by label, or one over all namespaces when allowed. A
// revision is named by a hash of its content, so whichever store of a
// namespace holds a hash holds the same revision, unless someone rewrote
// it there (Rewritten): a store that holds it as its hash says is
// preferred. A store that cannot be read is left out (logged at -v=1): a
// VM pinned to one of its revisions then says that none holds it.
func (s *Sources) ReadStores(ctx context.Context, namespaces []string) error {
	slices.Sort(namespaces)
	for _, ns := range slices.Compact(namespaces) {
		if s.listed[ns] || s.listed[""] {
			continue
		}
		if s.allNamespaces {
			ns = ""
		}
		s.listed[ns] = true
		list := func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return s.c.Dynamic.Resource(revision.StoreGVR).Namespace(ns).List(ctx, opts)
		}
		err := kube.EachItem(ctx, list, metav1.ListOptions{LabelSelector: revision.StoreSelector}, func(obj runtime.Object) error {
			store, err := revision.FromObject(obj.(*unstructured.Unstructured))
			if err != nil {
				klog.FromContext(ctx).V(1).Info("Skipping a revision store", "err", err)
				return nil
			}
			rewritten := store.Rewritten()
			if len(rewritten) > 0 {
				s.rewritten[types.NamespacedName{Namespace: store.Namespace, Name: store.Name}] = rewritten
			}
			for hash, r := range store.Revisions {
				k := types.NamespacedName{Namespace: store.Namespace, Name: hash}
				if _, bad := rewritten[hash]; !bad || s.revisions[k] == nil {
					s.revisions[k] = r
				}
			}
			return nil
		})
		if apierrors.IsNotFound(err) {
			// No VMRevisionStore CRD: no workload pins a revision.
			s.listed[""] = true
			return nil
		}
		if err != nil {
			return fmt.Errorf("list %s: %w", kube.Describe(revision.StoreResource, ns, ""), err)
		}
	}
	return nil
}

// Rewritten is what the content of revision hash, which the store
// namespace/store holds, hashes to, when that store holds it rewritten
// (revision.RewrittenError). Read the store's namespace first
// (ReadStores).
func (s *Sources) Rewritten(namespace, store, hash string) (string, bool) {
	actual, ok := s.rewritten[types.NamespacedName{Namespace: namespace, Name: store}][hash]
	return actual, ok
}

// Revision is the revision hash that a store of namespace holds, or nil.
// Read the namespace's stores first (ReadStores).
func (s *Sources) Revision(namespace, hash string) *kubevirtv1.VirtualMachine {
	return s.revisions[types.NamespacedName{Namespace: namespace, Name: hash}]
}

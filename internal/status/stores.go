package status

import (
	"fmt"
	"maps"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/revision"
)

// rewrittenKey is where slimStore keeps, in what it keeps of a revision
// store, the revisions the store holds rewritten.
const rewrittenKey = "rewritten"

// slimStore keeps of a revision store (an *unstructured.Unstructured) its
// identity and the revisions it holds rewritten (revision.Store.Rewritten),
// by hash, each with what its content hashes to: all status reads of it.
// A store vmctl cannot read holds none it can tell. Its signature is
// client-go's cache.TransformFunc, which must take its own output.
func slimStore(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	if _, done := u.Object[rewrittenKey]; done {
		return u, nil
	}
	rewritten := map[string]any{}
	if s, err := revision.FromObject(u); err == nil {
		for h, actual := range s.Rewritten() {
			rewritten[h] = actual
		}
	}
	kept := &unstructured.Unstructured{Object: map[string]any{rewrittenKey: rewritten}}
	kept.SetAPIVersion(u.GetAPIVersion())
	kept.SetKind(u.GetKind())
	kept.SetNamespace(u.GetNamespace())
	kept.SetName(u.GetName())
	kept.SetUID(u.GetUID())
	kept.SetResourceVersion(u.GetResourceVersion())
	return kept, nil
}

// rewrittenPins are, by store (namespace/name), the revisions each holds
// rewritten, with what their content hashes to.
func rewrittenPins(stores []*unstructured.Unstructured) map[types.NamespacedName]map[string]string {
	out := map[types.NamespacedName]map[string]string{}
	for _, s := range stores {
		m, _ := s.Object[rewrittenKey].(map[string]any)
		if len(m) == 0 {
			continue
		}
		hashes := map[string]string{}
		for h, actual := range maps.All(m) {
			hashes[h] = fmt.Sprint(actual)
		}
		out[types.NamespacedName{Namespace: s.GetNamespace(), Name: s.GetName()}] = hashes
	}
	return out
}

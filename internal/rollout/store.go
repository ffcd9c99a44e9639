package rollout

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/revision"
)

// Store GETs the revision store of the workload named workload in ns:
// nil, without error, when there is none.
func Store(ctx context.Context, c dynamic.Interface, ns, workload string) (*unstructured.Unstructured, error) {
	name := revision.StoreName(workload)
	u, err := c.Resource(revision.StoreGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get the revision store %s/%s: %w", ns, name, err)
	}
	return u, nil
}

// WithRevision is w's revision store cur (nil: none yet) with t's revision
// added, and whether that changed it: also where cur holds t's revision
// rewritten (revision.Store.Verify), which it replaces. It keeps every
// other revision cur holds: Truncate drops those w's history no longer
// names.
func WithRevision(cur *unstructured.Unstructured, w Workload, t Target) (*revision.Store, bool, error) {
	if cur == nil {
		s := revision.NewStore(w.Meta().GetNamespace(), w.Meta().GetName())
		s.Revisions[t.Hash] = t.Snapshot
		return s, true, nil
	}
	s, err := revision.FromObject(cur)
	if err != nil {
		return nil, false, err
	}
	if s.Workload == "" {
		s.Workload = w.Meta().GetName()
	}
	if _, ok := s.Revisions[t.Hash]; ok && s.Verify(t.Hash) == nil {
		return s, false, nil
	}
	s.Revisions[t.Hash] = t.Snapshot
	return s, true, nil
}

// WriteStore writes s, which is cur (nil: none yet) with revisions added
// and others dropped (Keep): it creates the store, or, with one merge
// patch, adds to it the revisions cur lacks and removes those s lacks, on
// condition that the store is still cur when it removes any, each stored at now (its metadata.creationTimestamp, which gc
// reads: it prunes no revision younger than its --min-age). The patch names no other revision, so a revision gc prunes
// meanwhile stays pruned, and the API server refuses a patch that would
// change one the store retains (revision.StoreCRD). A revision cur holds
// rewritten, and s as its hash says, it first prunes, with a merge patch on
// condition that the store is still cur: the API server refuses a change
// to a retained revision, not its removal. Between the two writes the
// agents that pin it wait for it, as for any missing revision; a server
// dry run sends the first write only.
func WriteStore(ctx context.Context, c dynamic.Interface, cur *unstructured.Unstructured, s *revision.Store, now time.Time, dryRun []string) (*unstructured.Unstructured, error) {
	stores := c.Resource(revision.StoreGVR).Namespace(s.Namespace)
	if cur == nil {
		stamped := revision.NewStore(s.Namespace, s.Workload)
		for h, r := range s.Revisions {
			stamped.Revisions[h] = storedAt(r, now)
		}
		obj, err := stamped.Object()
		if err != nil {
			return nil, err
		}
		created, err := stores.Create(ctx, obj, metav1.CreateOptions{FieldManager: FieldManager, DryRun: dryRun})
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("create the revision store %s/%s: %w; the cluster lacks CRD %s.%s: "+
				"a cluster admin applies `kubectl vmctl scaffold`'s output, which has it", s.Namespace, s.Name, err, revision.StoreResource, revision.StoreGroup)
		}
		if err != nil {
			return nil, fmt.Errorf("create the revision store %s/%s: %w", s.Namespace, s.Name, err)
		}
		return created, nil
	}
	old, err := revision.FromObject(cur)
	if err != nil {
		return nil, err
	}
	rewritten := old.Rewritten()
	var prune []string
	for h := range s.Revisions {
		if _, bad := rewritten[h]; bad && s.Verify(h) == nil {
			prune = append(prune, h)
		}
	}
	if len(prune) > 0 {
		if cur, err = pruneRewritten(ctx, c, cur, prune, dryRun); err != nil || len(dryRun) > 0 {
			return cur, err
		}
		if old, err = revision.FromObject(cur); err != nil {
			return nil, err
		}
	}
	added := revision.NewStore(s.Namespace, s.Workload)
	for h, r := range s.Revisions {
		if _, ok := old.Revisions[h]; !ok {
			added.Revisions[h] = storedAt(r, now)
		}
	}
	obj, err := added.Object()
	if err != nil {
		return nil, err
	}
	spec, _ := obj.Object["spec"].(map[string]any)
	revisions, _ := spec["revisions"].(map[string]any)
	if revisions == nil {
		revisions = map[string]any{}
		spec = map[string]any{"revisions": revisions}
	}
	meta := map[string]any{"uid": string(cur.GetUID())} // refused should the store be another by now
	for h := range old.Revisions {
		if _, ok := s.Revisions[h]; !ok {
			// Dropped (Keep): on condition that the store is still cur, so
			// that no revision added since goes unread.
			revisions[h] = nil
			meta["resourceVersion"] = cur.GetResourceVersion()
		}
	}
	patch, err := json.Marshal(map[string]any{"metadata": meta, "spec": spec})
	if err != nil {
		return nil, fmt.Errorf("encode the patch of the revision store %s/%s: %w", s.Namespace, s.Name, err)
	}
	patched, err := stores.Patch(ctx, s.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager, DryRun: dryRun})
	if err != nil {
		return nil, fmt.Errorf("add VM revisions %v to the revision store %s/%s: %w", added.Hashes(), s.Namespace, s.Name, err)
	}
	return patched, nil
}

// pruneRewritten removes the revisions hashes from the store cur with one
// merge patch, on condition that it is still cur (its UID and
// resourceVersion).
func pruneRewritten(ctx context.Context, c dynamic.Interface, cur *unstructured.Unstructured, hashes []string, dryRun []string) (*unstructured.Unstructured, error) {
	revisions := map[string]any{}
	for _, h := range hashes {
		revisions[h] = nil
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": string(cur.GetUID()), "resourceVersion": cur.GetResourceVersion()},
		"spec":     map[string]any{"revisions": revisions},
	})
	if err != nil {
		return nil, fmt.Errorf("encode the patch of the revision store %s/%s: %w", cur.GetNamespace(), cur.GetName(), err)
	}
	pruned, err := c.Resource(revision.StoreGVR).Namespace(cur.GetNamespace()).Patch(ctx, cur.GetName(), types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: FieldManager, DryRun: dryRun})
	if err != nil {
		return nil, fmt.Errorf("remove the rewritten VM revisions %v from the revision store %s/%s, to write them anew: %w", hashes, cur.GetNamespace(), cur.GetName(), err)
	}
	return pruned, nil
}

// storedAt is a copy of r stored at now.
func storedAt(r *kubevirtv1.VirtualMachine, now time.Time) *kubevirtv1.VirtualMachine {
	r = r.DeepCopy()
	r.CreationTimestamp = metav1.NewTime(now)
	return r
}

// Truncate drops from s, which is cur with t's revision added, the
// revisions that Keep does not keep of w's history past and limit
// (History), and reports whether any went. The revision cur added last
// stays (Keep's newest).
func Truncate(s *revision.Store, cur *unstructured.Unstructured, w Workload, t Target, past []Past, limit int32) (bool, error) {
	if cur == nil {
		return false, nil
	}
	old, err := revision.FromObject(cur)
	if err != nil {
		return false, err
	}
	var newest string
	var at time.Time
	for h, r := range old.Revisions {
		if ts := r.CreationTimestamp.Time; newest == "" || ts.After(at) || (ts.Equal(at) && h > newest) {
			newest, at = h, ts
		}
	}
	return s.Retain(Keep(t.Hash, PinnedRevision(w), newest, past, limit)), nil
}

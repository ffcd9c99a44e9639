package rollout

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/revision"
)

// Store GETs w's revision store: nil, without error, when there is none.
func Store(ctx context.Context, c kubernetes.Interface, w Workload) (*appsv1.ControllerRevision, error) {
	ns, name := w.Meta().GetNamespace(), revision.StoreName(w.Meta().GetName())
	cr, err := c.AppsV1().ControllerRevisions(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get the revision store %s/%s: %w", ns, name, err)
	}
	return cr, nil
}

// WithRevision is w's revision store cur (nil: none yet) with t's revision
// added, and whether that changed it. It keeps every revision cur holds:
// pruning those no retained template names is gc's.
func WithRevision(cur *appsv1.ControllerRevision, w Workload, t Target) (*revision.Store, bool, error) {
	if cur == nil {
		s := revision.NewStore(w.Meta().GetNamespace(), w.Meta().GetName())
		s.Revisions[t.Hash] = t.Revision
		return s, true, nil
	}
	s, err := revision.FromObject(cur)
	if err != nil {
		return nil, false, err
	}
	if s.Workload == "" {
		s.Workload = w.Meta().GetName()
	}
	if _, ok := s.Revisions[t.Hash]; ok {
		return s, false, nil
	}
	s.Revisions[t.Hash] = t.Revision
	s.Number++
	return s, true, nil
}

// WriteStore writes s in place of cur (nil: create it). A ControllerRevision's
// data is immutable, so one that exists is deleted, on the condition that it
// is still cur (its UID and resourceVersion), and created again: two writes,
// between which the agents' creates are refused (the create policy finds no
// parameter) and retried. A server dry run cannot create what it did not
// delete: it checks the delete, or the create of a new store, only.
func WriteStore(ctx context.Context, c kubernetes.Interface, cur *appsv1.ControllerRevision, s *revision.Store, dryRun []string) (*appsv1.ControllerRevision, error) {
	obj, err := s.Object()
	if err != nil {
		return nil, err
	}
	crs := c.AppsV1().ControllerRevisions(s.Namespace)
	if cur != nil {
		pre := metav1.Preconditions{UID: ptr.To(cur.UID), ResourceVersion: ptr.To(cur.ResourceVersion)}
		if err := crs.Delete(ctx, cur.Name, metav1.DeleteOptions{Preconditions: &pre, DryRun: dryRun}); err != nil {
			return nil, fmt.Errorf("replace the revision store %s/%s: %w", s.Namespace, s.Name, err)
		}
		if len(dryRun) > 0 {
			return obj, nil
		}
	}
	created, err := crs.Create(ctx, obj, metav1.CreateOptions{FieldManager: FieldManager, DryRun: dryRun})
	if err != nil {
		return nil, fmt.Errorf("create the revision store %s/%s: %w", s.Namespace, s.Name, err)
	}
	return created, nil
}

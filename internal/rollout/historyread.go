package rollout

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
)

// History reads w's history for Keep: its ReplicaSets (a Deployment's) or
// ControllerRevisions (a StatefulSet's or DaemonSet's) that w controls,
// and its live Pods, with one LIST each narrowed by w's selector; and its
// revisionHistoryLimit (-1 where unset).
func History(ctx context.Context, c kubernetes.Interface, w Workload) ([]Past, int32, error) {
	sel, err := w.selector()
	if err != nil {
		return nil, 0, err
	}
	ns, uid := w.Meta().GetNamespace(), w.Meta().GetUID()
	opts := metav1.ListOptions{LabelSelector: sel.String()}
	ours := func(m metav1.Object) bool {
		ref := metav1.GetControllerOfNoCopy(m)
		return ref != nil && ref.UID == uid
	}
	limit := int32(-1)
	var past []Past
	switch o := w.Object.(type) {
	case *appsv1.Deployment:
		if o.Spec.RevisionHistoryLimit != nil {
			limit = *o.Spec.RevisionHistoryLimit
		}
		rss, err := c.AppsV1().ReplicaSets(ns).List(ctx, opts)
		if err != nil {
			return nil, 0, fmt.Errorf("list the ReplicaSets of %s: %w", w, err)
		}
		for i := range rss.Items {
			rs := &rss.Items[i]
			if !ours(rs) {
				continue
			}
			n, _ := strconv.ParseInt(rs.Annotations["deployment.kubernetes.io/revision"], 10, 64)
			live := rs.Spec.Replicas == nil || *rs.Spec.Replicas > 0
			past = append(past, Past{Hash: rs.Spec.Template.Annotations[contract.AnnotationVMRevision], Number: n, Live: live})
		}
	case *appsv1.StatefulSet, *appsv1.DaemonSet:
		if s, ok := o.(*appsv1.StatefulSet); ok && s.Spec.RevisionHistoryLimit != nil {
			limit = *s.Spec.RevisionHistoryLimit
		}
		if d, ok := o.(*appsv1.DaemonSet); ok && d.Spec.RevisionHistoryLimit != nil {
			limit = *d.Spec.RevisionHistoryLimit
		}
		crs, err := c.AppsV1().ControllerRevisions(ns).List(ctx, opts)
		if err != nil {
			return nil, 0, fmt.Errorf("list the ControllerRevisions of %s: %w", w, err)
		}
		for i := range crs.Items {
			cr := &crs.Items[i]
			if !ours(cr) {
				continue
			}
			var patch struct {
				Spec struct {
					Template corev1.PodTemplateSpec `json:"template"`
				} `json:"spec"`
			}
			if err := json.Unmarshal(cr.Data.Raw, &patch); err != nil {
				continue
			}
			past = append(past, Past{Hash: patch.Spec.Template.Annotations[contract.AnnotationVMRevision], Number: cr.Revision})
		}
	}
	// What runs now stays, whatever its controller truncates: its Pods
	// make their VMs of it.
	pods, err := c.CoreV1().Pods(ns).List(ctx, opts)
	if err != nil {
		return nil, 0, fmt.Errorf("list the Pods of %s: %w", w, err)
	}
	for i := range pods.Items {
		if h := pods.Items[i].Annotations[contract.AnnotationVMRevision]; h != "" {
			past = append(past, Past{Hash: h, Live: true})
		}
	}
	return past, limit, nil
}

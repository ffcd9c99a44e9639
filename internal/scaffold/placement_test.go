package scaffold

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/placement"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/placement/placementtest"
)

// TestPlacementGoesOnEveryKind: each workload's Pods carry the prototype's
// placement and its key; without one they carry neither.
func TestPlacementGoesOnEveryKind(t *testing.T) {
	want := placement.Placement{
		NodeSelector:      map[string]string{"pool": "vms"},
		Tolerations:       []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		PriorityClassName: "vm-high",
	}
	for _, kind := range []Kind{KindDeployment, KindDaemonSet, KindStatefulSet} {
		p := validParams(kind)
		bare := templateOf(t, p)
		p.Placement, p.PlacementKey = &want, "abc"
		tmpl := templateOf(t, p)
		if got := placementtest.FromPodSpec(&tmpl.Spec); !got.Equal(want) {
			t.Errorf("%s: placement (-want +got):\n%s", kind, cmp.Diff(want, got))
		}
		if got := tmpl.Annotations[contract.AnnotationPlacement]; got != "abc" {
			t.Errorf("%s: %s = %q, want abc", kind, contract.AnnotationPlacement, got)
		}
		if got := placementtest.FromPodSpec(&bare.Spec); !got.IsZero() || bare.Annotations[contract.AnnotationPlacement] != "" {
			t.Errorf("%s: without a placement the Pods carry %+v, key %q", kind, got, bare.Annotations[contract.AnnotationPlacement])
		}
	}
}

func templateOf(t *testing.T, p Params) corev1.PodTemplateSpec {
	t.Helper()
	switch p.Kind {
	case KindDaemonSet:
		return find[*appsv1.DaemonSet](t, mustBuild(t, p), p.Namespace, p.Name).Spec.Template
	case KindStatefulSet:
		return find[*appsv1.StatefulSet](t, mustBuild(t, p), p.Namespace, p.Name).Spec.Template
	}
	return find[*appsv1.Deployment](t, mustBuild(t, p), p.Namespace, p.Name).Spec.Template
}

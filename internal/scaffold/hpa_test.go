package scaffold

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
)

// TestBuildWithAutoscale: --autoscale-max adds the HPA autoscale makes,
// aimed at the workload, and leaves the workload's replicas to it, so that
// applying the manifests again does not undo its scaling; a DaemonSet's
// is refused.
func TestBuildWithAutoscale(t *testing.T) {
	for _, kind := range []Kind{KindDeployment, KindStatefulSet} {
		p := validParams(kind)
		p.Autoscale = &Autoscale{Min: 2, Max: 6, VMCPUPercent: 70}
		objs := mustBuild(t, p)
		hpa := find[*autoscalingv2.HorizontalPodAutoscaler](t, objs, "vms", "vmctl-testvm")
		ref := hpa.Spec.ScaleTargetRef
		if ref.Kind != string(kind) || ref.Name != "vmctl-testvm" || *hpa.Spec.MinReplicas != 2 || hpa.Spec.MaxReplicas != 6 ||
			hpa.Spec.Metrics[0].Pods.Metric.Name != contract.MetricVMCPUUtilization || hpa.Spec.Metrics[0].Pods.Target.AverageValue.String() != "70" {
			t.Errorf("%s: HPA spec %+v, want 2 to 6 Pods of %s vmctl-testvm at 70", kind, hpa.Spec, kind)
		}
		var replicas *int32
		if kind == KindDeployment {
			replicas = find[*appsv1.Deployment](t, objs, "vms", "vmctl-testvm").Spec.Replicas
		} else {
			replicas = find[*appsv1.StatefulSet](t, objs, "vms", "vmctl-testvm").Spec.Replicas
		}
		if replicas != nil {
			t.Errorf("%s: spec.replicas %d beside an HPA, want none", kind, *replicas)
		}
	}
	p := validParams(KindDaemonSet)
	p.Autoscale = &Autoscale{Min: 1, Max: 3, VMCPUPercent: 80}
	if _, err := Build(p); err == nil || !strings.Contains(err.Error(), "no HorizontalPodAutoscaler can scale it") {
		t.Errorf("a DaemonSet's HPA: error %v, want a refusal", err)
	}
}

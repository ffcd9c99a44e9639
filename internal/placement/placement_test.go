package placement

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

func TestEqualTreatsEmptyAsNone(t *testing.T) {
	empty := Placement{
		NodeSelector: map[string]string{},
		Affinity: &corev1.Affinity{
			NodeAffinity:    &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{}},
			PodAntiAffinity: &corev1.PodAntiAffinity{},
		},
		Tolerations: []corev1.Toleration{},
	}
	if !empty.Equal(Placement{}) || !empty.IsZero() {
		t.Errorf("%+v is not equal to no placement", empty)
	}
	if (Placement{PriorityClassName: "x"}).Equal(Placement{}) {
		t.Error("a priority class equals none")
	}
}

func TestApplyThenReadBack(t *testing.T) {
	p := Of(stored(func(s *kubevirtv1.VirtualMachineInstanceSpec) {
		s.NodeSelector = map[string]string{"pool": "gpu"}
		s.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
		s.PriorityClassName = "vms"
	}), Sources{})
	spec := corev1.PodSpec{NodeSelector: map[string]string{"old": "x"}, SchedulerName: "old", Containers: []corev1.Container{{Name: "agent"}}}
	p.Apply(&spec)
	got := Placement{
		NodeSelector: spec.NodeSelector, Affinity: spec.Affinity, Tolerations: spec.Tolerations,
		TopologySpreadConstraints: spec.TopologySpreadConstraints,
		PriorityClassName:         spec.PriorityClassName, SchedulerName: spec.SchedulerName,
	}
	if !got.Equal(p) {
		t.Errorf("the placement Apply(p) wrote (-p +got):\n%s", cmp.Diff(p, got))
	}
	if spec.SchedulerName != "" || spec.Containers[0].Name != "agent" {
		t.Errorf("Apply left the old scheduler or changed the containers: %+v", spec)
	}
	spec.NodeSelector["pool"] = "changed"
	if p.NodeSelector["pool"] != "gpu" {
		t.Error("Apply shares the nodeSelector with the Pod spec")
	}
}

package rollout

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestStatefulSetStatusPartition: a StatefulSet with a RollingUpdate block
// is judged as kubectl judges it: done once the Pods at or above its
// partition are updated, and "partitioned" even without a partition set;
// without the block, by its revisions.
func TestStatefulSetStatusPartition(t *testing.T) {
	sts := func(ru *appsv1.RollingUpdateStatefulSetStrategy, updated int32) *appsv1.StatefulSet {
		return &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Generation: 2},
			Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3), UpdateStrategy: appsv1.StatefulSetUpdateStrategy{
				Type: appsv1.RollingUpdateStatefulSetStrategyType, RollingUpdate: ru}},
			Status: appsv1.StatefulSetStatus{ObservedGeneration: 2, ReadyReplicas: 3, UpdatedReplicas: updated,
				CurrentRevision: "web-1", UpdateRevision: "web-2"},
		}
	}
	partition := func(p int32) *appsv1.RollingUpdateStatefulSetStrategy {
		return &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To(p)}
	}
	for _, tt := range []struct {
		name string
		sts  *appsv1.StatefulSet
		want Progress
	}{
		{"above the partition not yet updated", sts(partition(1), 1),
			Progress{Message: "Waiting for partitioned roll out to finish: 1 out of 2 new pods have been updated..."}},
		{"above the partition updated", sts(partition(2), 1),
			Progress{Message: "partitioned roll out complete: 1 new pods have been updated...", Done: true}},
		{"a RollingUpdate block without a partition", sts(&appsv1.RollingUpdateStatefulSetStrategy{}, 0),
			Progress{Message: "partitioned roll out complete: 0 new pods have been updated...", Done: true}},
		{"no RollingUpdate block", sts(nil, 1),
			Progress{Message: "waiting for statefulset rolling update to complete 1 pods at revision web-2..."}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := statefulSetStatus(tt.sts); got != tt.want {
				t.Errorf("statefulSetStatus() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

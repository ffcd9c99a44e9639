package stuck

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
)

// podCase is an agent Pod and the wait OfPod finds in it, nil for none.
type podCase struct {
	name string
	pod  *corev1.Pod
	want *Problem
}

// podCases are agent Pods as kube-scheduler 1.36 leaves them, with its
// messages seen on the e2e cluster.
func podCases() []podCase {
	unschedulable := func(msg string) *corev1.Pod {
		return pendingPod(corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: msg})
	}
	deleted := unschedulable("0/3 nodes are available: 3 Insufficient memory.")
	deleted.DeletionTimestamp = &metav1.Time{}
	bound := unschedulable("0/3 nodes are available: 3 Insufficient memory.")
	bound.Spec.NodeName = "node-1"
	return []podCase{{
		name: "no room",
		pod: unschedulable("0/3 nodes are available: 3 Insufficient memory. " +
			"preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."),
		want: &Problem{Reason: ReasonWaitsForRoom, Message: "Pod waits for room: 0/3 nodes are available: 3 Insufficient memory"},
	}, {
		name: "no room, and a taint",
		pod:  unschedulable("0/4 nodes are available: 1 node(s) had untolerated taint {dedicated: vms}, 3 Insufficient cpu."),
		want: &Problem{Reason: ReasonWaitsForRoom, Message: "Pod waits for room: 0/4 nodes are available: 1 node(s) had untolerated taint {dedicated: vms}, 3 Insufficient cpu"},
	}, {
		// A DaemonSet's Pod may go to its own node only.
		name: "no room on its node",
		pod: unschedulable("0/6 nodes are available: 1 Insufficient memory, 5 node(s) didn't satisfy plugin(s) [NodeAffinity]. " +
			"preemption: 0/6 nodes are available: 1 No preemption victims found for incoming pod, 5 Preemption is not helpful for scheduling."),
		want: &Problem{Reason: ReasonWaitsForRoom, Message: "Pod waits for room: 0/6 nodes are available: 1 Insufficient memory"},
	}, {
		name: "no node it may go to",
		pod:  unschedulable("0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."),
		want: &Problem{Reason: ReasonWaitsForRoom, Message: "Pod waits for room: 0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector"},
	}, {
		name: "not tried yet",
		pod:  pendingPod(),
	}, {
		name: "scheduling gated",
		pod:  pendingPod(corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonSchedulingGated}),
	}, {
		name: "bound",
		pod:  bound,
	}, {
		name: "being deleted",
		pod:  deleted,
	}}
}

func TestOfPod(t *testing.T) {
	for _, tt := range podCases() {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := OfPod(tt.pod)
			if tt.want == nil {
				if ok {
					t.Fatalf("OfPod() = %+v; want no wait", got)
				}
				return
			}
			if !ok {
				t.Fatalf("OfPod() found no wait; want %+v", *tt.want)
			}
			if diff := cmp.Diff(*tt.want, got); diff != "" {
				t.Errorf("OfPod() (-want +got):\n%s", diff)
			}
		})
	}
}

func pendingPod(conds ...corev1.PodCondition) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "vms"},
		Status:     corev1.PodStatus{Phase: corev1.PodPending, Conditions: conds},
	}
}

// TestOfPodSameOnSlim: status keeps Pods as kube.Slim leaves them, so
// OfPod must find the same in a slimmed Pod as in the full one.
func TestOfPodSameOnSlim(t *testing.T) {
	for _, tt := range podCases() {
		t.Run(tt.name, func(t *testing.T) {
			slim, err := kube.Slim(tt.pod.DeepCopy())
			if err != nil {
				t.Fatal(err)
			}
			wantP, wantOK := OfPod(tt.pod)
			gotP, gotOK := OfPod(slim.(*corev1.Pod))
			if wantOK != gotOK {
				t.Fatalf("OfPod(slim) found a wait: %v, OfPod(full): %v", gotOK, wantOK)
			}
			if diff := cmp.Diff(wantP, gotP); diff != "" {
				t.Errorf("OfPod() of the slim Pod (-full +slim):\n%s", diff)
			}
		})
	}
}

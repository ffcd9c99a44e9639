package stuck

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// ReasonWaitsForRoom is the Reason of an agent Pod that waits for room:
// kube-scheduler's Event reason, which `kubectl describe pod` shows. No
// agent runs in such a Pod yet, so it is no /readyz word or Event of
// vmctl's.
const ReasonWaitsForRoom = "FailedScheduling"

// WaitsForRoom is what the Message of an agent Pod that waits for room
// starts with.
const WaitsForRoom = "Pod waits for room"

// OfPod reports whether pod, an agent Pod, waits for room: it is Pending
// because kube-scheduler found no node for it (its PodScheduled condition
// False, reason Unschedulable), as an agent Pod that holds its VM's size
// is where no node has that room. It is a wait, not a fault: the scheduler
// places the Pod by itself once room comes (another VM goes, a node is
// added, which the cluster autoscaler does for such a Pod), and no VM is
// made until then. The Message ends with the scheduler's reason.
func OfPod(pod *corev1.Pod) (Problem, bool) {
	if pod == nil || pod.DeletionTimestamp != nil || pod.Spec.NodeName != "" || pod.Status.Phase != corev1.PodPending {
		return Problem{}, false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return problem(ReasonWaitsForRoom, WaitsForRoom, firstSentence(c.Message), false), true
		}
	}
	return Problem{}, false
}

// firstSentence is kube-scheduler's "0/3 nodes are available: 3
// Insufficient memory. preemption: ..." without what follows its first
// sentence, which is about preemption and claims.
func firstSentence(msg string) string {
	first, _, _ := strings.Cut(msg, ". ")
	return first
}

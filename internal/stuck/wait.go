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
			return problem(ReasonWaitsForRoom, WaitsForRoom, podCause(c.Message), false), true
		}
	}
	return Problem{}, false
}

// podCause is kube-scheduler's "0/6 nodes are available: 1 Insufficient
// memory, 5 node(s) didn't satisfy plugin(s) [NodeAffinity]. preemption:
// ..." without what follows its first sentence (preemption and claims) and
// without the nodes the Pod's own affinity rules out, as a DaemonSet's
// Pod's or a prototype's nodeSelector does by design: "0/6 nodes are
// available: 1 Insufficient memory". When only such nodes are left, it
// keeps the sentence whole.
func podCause(msg string) string {
	first, _, _ := strings.Cut(msg, ". ")
	first = strings.TrimSuffix(strings.TrimSpace(first), ".")
	head, reasons, ok := strings.Cut(first, " nodes are available: ")
	if !ok {
		return first
	}
	var kept []string
	for _, r := range strings.Split(reasons, ", ") {
		if r = strings.TrimSpace(r); r != "" && !otherNodes.MatchString(r) {
			kept = append(kept, r)
		}
	}
	if len(kept) == 0 {
		return first
	}
	return head + " nodes are available: " + strings.Join(kept, ", ")
}

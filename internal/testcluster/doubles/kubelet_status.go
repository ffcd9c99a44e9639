package doubles

import (
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// The kubelet double's pure half for Pod status: what it knows of the one
// container it runs, and the status a kubelet would report for that.

// containerRun is what the double knows of an agent Pod's container.
type containerRun struct {
	// PodStarted is when the double took the Pod on (status.startTime).
	PodStarted time.Time
	// Started is whether the container ever started; the Pod stays Pending
	// until it has.
	Started bool
	// Running is set while a process runs; StartedAt is when it started and
	// ContainerID names it.
	Running     bool
	StartedAt   time.Time
	ContainerID string
	// Ready is the readiness probe's verdict; ReadyChanged is when it last
	// flipped (or PodStarted).
	Ready        bool
	ReadyChanged time.Time
	// Restarts is the container's restartCount.
	Restarts int32
	// LastExit is the previous process's end, nil before any.
	LastExit *corev1.ContainerStateTerminated
	// WaitingReason and WaitingMessage explain why nothing runs
	// (CrashLoopBackOff, CreateContainerConfigError, ...).
	WaitingReason, WaitingMessage string
	// Resources are the container's requests and limits as they run: its
	// spec's, resized in place at once (the double actuates every resize).
	Resources corev1.ResourceRequirements
}

// podStatusFor is the status a kubelet would report for a Pod whose only
// (first) container is c and is in the state run.
func podStatusFor(c *corev1.Container, podIP, hostIP string, run containerRun) corev1.PodStatus {
	started := metav1.NewTime(run.PodStarted)
	readyStatus, reason, message := corev1.ConditionTrue, "", ""
	if !run.Ready {
		readyStatus, reason = corev1.ConditionFalse, "ContainersNotReady"
		message = fmt.Sprintf("containers with unready status: [%s]", c.Name)
	}
	readyChanged := metav1.NewTime(run.ReadyChanged)

	cs := corev1.ContainerStatus{
		Name:         c.Name,
		Image:        c.Image,
		ImageID:      c.Image,
		ContainerID:  run.ContainerID,
		Ready:        run.Ready,
		RestartCount: run.Restarts,
		Started:      ptr.To(run.Running),
	}
	if len(run.Resources.Requests)+len(run.Resources.Limits) > 0 {
		// A kubelet that resizes in place reports both; the API server
		// refuses to resize a running Pod whose status lacks resources.
		cs.AllocatedResources = run.Resources.Requests
		cs.Resources = run.Resources.DeepCopy()
	}
	switch {
	case run.Running:
		cs.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(run.StartedAt)}
	default:
		reason := run.WaitingReason
		if reason == "" {
			reason = "ContainerCreating"
		}
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: reason, Message: run.WaitingMessage}
	}
	if run.LastExit != nil {
		cs.LastTerminationState.Terminated = run.LastExit.DeepCopy()
	}

	phase := corev1.PodPending
	if run.Started {
		phase = corev1.PodRunning
	}
	return corev1.PodStatus{
		Phase: phase,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionTrue, LastTransitionTime: started},
			{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: started},
			{Type: corev1.PodReady, Status: readyStatus, Reason: reason, Message: message, LastTransitionTime: readyChanged},
			{Type: corev1.ContainersReady, Status: readyStatus, Reason: reason, Message: message, LastTransitionTime: readyChanged},
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: started},
		},
		HostIP:            hostIP,
		HostIPs:           []corev1.HostIP{{IP: hostIP}},
		PodIP:             podIP,
		PodIPs:            []corev1.PodIP{{IP: podIP}},
		StartTime:         &started,
		ContainerStatuses: []corev1.ContainerStatus{cs},
	}
}

// podStatusPatch is a JSON merge patch that sets status on the Pod with uid
// and fails on any other Pod of that name, as the kubelet's own patch does.
// Lists in a merge patch replace the stored ones whole, which is what the
// double wants: it owns every condition and container status.
func podStatusPatch(uid types.UID, status corev1.PodStatus) ([]byte, error) {
	return json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": uid},
		"status":   status,
	})
}

// exitState describes how a process ended, in the kubelet's terms: a process
// killed by a signal exits with 128+signal.
func exitState(code int, signal int, startedAt, finishedAt time.Time, containerID string) *corev1.ContainerStateTerminated {
	if signal > 0 {
		code = 128 + signal
	}
	reason := "Error"
	if code == 0 {
		reason = "Completed"
	}
	return &corev1.ContainerStateTerminated{
		ExitCode:    int32(code),
		Reason:      reason,
		StartedAt:   metav1.NewTime(startedAt),
		FinishedAt:  metav1.NewTime(finishedAt),
		ContainerID: containerID,
	}
}

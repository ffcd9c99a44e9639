package doubles

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestPodStatusFor(t *testing.T) {
	c := &corev1.Container{Name: "agent", Image: "example.com/vmctl:v1"}
	t0, t1, t2 := time.Unix(1000, 0), time.Unix(1010, 0), time.Unix(1020, 0)
	at := metav1.NewTime
	conditions := func(ready corev1.ConditionStatus, readyAt time.Time) []corev1.PodCondition {
		reason, message := "", ""
		if ready == corev1.ConditionFalse {
			reason, message = "ContainersNotReady", "containers with unready status: [agent]"
		}
		return []corev1.PodCondition{
			{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionTrue, LastTransitionTime: at(t0)},
			{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: at(t0)},
			{Type: corev1.PodReady, Status: ready, Reason: reason, Message: message, LastTransitionTime: at(readyAt)},
			{Type: corev1.ContainersReady, Status: ready, Reason: reason, Message: message, LastTransitionTime: at(readyAt)},
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: at(t0)},
		}
	}
	status := func(phase corev1.PodPhase, ready corev1.ConditionStatus, readyAt time.Time, cs corev1.ContainerStatus) corev1.PodStatus {
		cs.Name, cs.Image, cs.ImageID = "agent", "example.com/vmctl:v1", "example.com/vmctl:v1"
		return corev1.PodStatus{
			Phase:             phase,
			Conditions:        conditions(ready, readyAt),
			HostIP:            "127.0.0.1",
			HostIPs:           []corev1.HostIP{{IP: "127.0.0.1"}},
			PodIP:             "10.250.0.1",
			PodIPs:            []corev1.PodIP{{IP: "10.250.0.1"}},
			StartTime:         ptr.To(at(t0)),
			ContainerStatuses: []corev1.ContainerStatus{cs},
		}
	}
	crash := exitState(0, 9, t1, t2, "process://41")

	tests := []struct {
		name string
		run  containerRun
		want corev1.PodStatus
	}{
		{
			name: "taken on, not started",
			run:  containerRun{PodStarted: t0, ReadyChanged: t0},
			want: status(corev1.PodPending, corev1.ConditionFalse, t0, corev1.ContainerStatus{
				Started: ptr.To(false),
				State:   corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}},
			}),
		},
		{
			name: "cannot start",
			run:  containerRun{PodStarted: t0, ReadyChanged: t0, WaitingReason: "CreateContainerConfigError", WaitingMessage: "no token"},
			want: status(corev1.PodPending, corev1.ConditionFalse, t0, corev1.ContainerStatus{
				Started: ptr.To(false),
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
					Reason: "CreateContainerConfigError", Message: "no token",
				}},
			}),
		},
		{
			name: "running, not ready yet",
			run:  containerRun{PodStarted: t0, ReadyChanged: t0, Started: true, Running: true, StartedAt: t1, ContainerID: "process://42"},
			want: status(corev1.PodRunning, corev1.ConditionFalse, t0, corev1.ContainerStatus{
				Started:     ptr.To(true),
				ContainerID: "process://42",
				State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at(t1)}},
			}),
		},
		{
			name: "restarted and ready",
			run: containerRun{
				PodStarted: t0, Started: true, Running: true, StartedAt: t2, ContainerID: "process://42",
				Ready: true, ReadyChanged: t2, Restarts: 1, LastExit: crash,
			},
			want: status(corev1.PodRunning, corev1.ConditionTrue, t2, corev1.ContainerStatus{
				Started:              ptr.To(true),
				Ready:                true,
				RestartCount:         1,
				ContainerID:          "process://42",
				State:                corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at(t2)}},
				LastTerminationState: corev1.ContainerState{Terminated: crash},
			}),
		},
		{
			name: "crashed, backing off",
			run: containerRun{
				PodStarted: t0, ReadyChanged: t2, Started: true, ContainerID: "process://41",
				LastExit: crash, WaitingReason: "CrashLoopBackOff", WaitingMessage: "back-off 250ms",
			},
			want: status(corev1.PodRunning, corev1.ConditionFalse, t2, corev1.ContainerStatus{
				Started:              ptr.To(false),
				ContainerID:          "process://41",
				State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 250ms"}},
				LastTerminationState: corev1.ContainerState{Terminated: crash},
			}),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, podStatusFor(c, "10.250.0.1", "127.0.0.1", tt.run)); diff != "" {
				t.Errorf("podStatusFor() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestExitState(t *testing.T) {
	start, end := time.Unix(10, 0), time.Unix(20, 0)
	tests := []struct {
		name       string
		code, sig  int
		wantCode   int32
		wantReason string
	}{
		{name: "clean exit", code: 0, wantCode: 0, wantReason: "Completed"},
		{name: "error exit", code: 2, wantCode: 2, wantReason: "Error"},
		{name: "SIGKILL", code: -1, sig: 9, wantCode: 137, wantReason: "Error"},
		{name: "SIGTERM", code: -1, sig: 15, wantCode: 143, wantReason: "Error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := &corev1.ContainerStateTerminated{
				ExitCode: tt.wantCode, Reason: tt.wantReason,
				StartedAt: metav1.NewTime(start), FinishedAt: metav1.NewTime(end), ContainerID: "process://7",
			}
			if diff := cmp.Diff(want, exitState(tt.code, tt.sig, start, end, "process://7")); diff != "" {
				t.Errorf("exitState() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPodStatusPatch(t *testing.T) {
	status := corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.250.0.9"}
	data, err := podStatusPatch("pod-uid", status)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Metadata map[string]string `json:"metadata"`
		Status   corev1.PodStatus  `json:"status"`
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"uid": "pod-uid"}, got.Metadata); diff != "" {
		t.Errorf("metadata (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(status, got.Status); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
}

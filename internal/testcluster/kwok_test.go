package testcluster

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

func TestAdaptPodStage(t *testing.T) {
	tests := []struct {
		name  string
		stage string
		want  string
	}{
		{
			name: "fixed delays go, annotation delays stay, agents are excluded",
			stage: `
spec:
  selector:
    matchExpressions:
    - key: .metadata.deletionTimestamp
      operator: DoesNotExist
  delay:
    durationMilliseconds: 1000
    durationFrom:
      expressionFrom: '.metadata.annotations["pod-ready.stage.kwok.x-k8s.io/delay"]'
    jitterDurationMilliseconds: 5000
    jitterDurationFrom:
      expressionFrom: '.metadata.annotations["pod-ready.stage.kwok.x-k8s.io/jitter-delay"]'
`,
			want: `
spec:
  selector:
    matchExpressions:
    - key: .metadata.deletionTimestamp
      operator: DoesNotExist
    - jq:
        key: .metadata.labels["app.kubernetes.io/name"] == "vmctl" and .metadata.labels["app.kubernetes.io/component"] == "agent"
        operator: NotIn
        values: ["true"]
  delay:
    durationFrom:
      expressionFrom: '.metadata.annotations["pod-ready.stage.kwok.x-k8s.io/delay"]'
    jitterDurationFrom:
      expressionFrom: '.metadata.annotations["pod-ready.stage.kwok.x-k8s.io/jitter-delay"]'
`,
		},
		{
			name: "pod-delete no longer waits for the grace period",
			stage: `
spec:
  selector:
    matchExpressions:
    - key: .metadata.deletionTimestamp
      operator: Exists
  delay:
    durationMilliseconds: 1000
    jitterDurationFrom:
      expressionFrom: .metadata.deletionTimestamp
  next:
    delete: true
`,
			want: `
spec:
  selector:
    matchExpressions:
    - key: .metadata.deletionTimestamp
      operator: Exists
    - jq:
        key: .metadata.labels["app.kubernetes.io/name"] == "vmctl" and .metadata.labels["app.kubernetes.io/component"] == "agent"
        operator: NotIn
        values: ["true"]
  delay: {}
  next:
    delete: true
`,
		},
		{
			name: "pod-ready also takes a Running Pod",
			stage: `
metadata:
  name: pod-ready
spec:
  selector:
    matchExpressions:
    - key: .status.phase
      operator: In
      values: [Pending]
`,
			want: `
metadata:
  name: pod-ready
spec:
  selector:
    matchExpressions:
    - key: .status.phase
      operator: In
      values: [Pending, Running]
    - jq:
        key: .metadata.labels["app.kubernetes.io/name"] == "vmctl" and .metadata.labels["app.kubernetes.io/component"] == "agent"
        operator: NotIn
        values: ["true"]
`,
		},
		{
			name:  "a stage without a selector gets one",
			stage: `spec: {}`,
			want: `
spec:
  selector:
    matchExpressions:
    - jq:
        key: .metadata.labels["app.kubernetes.io/name"] == "vmctl" and .metadata.labels["app.kubernetes.io/component"] == "agent"
        operator: NotIn
        values: ["true"]
`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got, want map[string]any
			if err := yaml.Unmarshal([]byte(tt.stage), &got); err != nil {
				t.Fatal(err)
			}
			if err := yaml.Unmarshal([]byte(tt.want), &want); err != nil {
				t.Fatal(err)
			}
			if err := adaptPodStage(got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("adaptPodStage (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAdaptPodStageWithoutSpec(t *testing.T) {
	if err := adaptPodStage(map[string]any{"kind": "Stage"}); err == nil {
		t.Error("adaptPodStage accepted a stage without spec")
	}
}

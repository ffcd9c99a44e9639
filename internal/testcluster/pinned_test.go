package testcluster

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPinnedNode(t *testing.T) {
	zone := corev1.NodeSelectorRequirement{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}
	pin := corev1.NodeSelectorRequirement{Key: metav1.ObjectNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{"node-7"}}
	required := func(terms ...corev1.NodeSelectorTerm) *corev1.Affinity {
		return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}}
	}
	for _, tc := range []struct {
		name     string
		affinity *corev1.Affinity
		want     string
	}{
		{"no affinity", nil, ""},
		{"expressions only", required(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{zone}}), ""},
		{"pinned", required(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{zone}, MatchFields: []corev1.NodeSelectorRequirement{pin}}), "node-7"},
		{"two names is no pin", required(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{Key: metav1.ObjectNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{"a", "b"}}}}), ""},
	} {
		if got := PinnedNode(tc.affinity); got != tc.want {
			t.Errorf("%s: PinnedNode = %q, want %q", tc.name, got, tc.want)
		}
	}
}

package derive

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func pinned(node string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}
}

func requiredOnly(terms ...corev1.NodeSelectorTerm) *corev1.Affinity {
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms},
	}}
}

func TestPinToNode(t *testing.T) {
	arch := corev1.NodeSelectorRequirement{Key: "kubernetes.io/arch", Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}
	virt := corev1.NodeSelectorRequirement{Key: "node-role.kubernetes.io/virt", Operator: corev1.NodeSelectorOpExists}
	notOnC := corev1.NodeSelectorRequirement{Key: "metadata.name", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"node-c"}}
	preferred := []corev1.PreferredSchedulingTerm{{
		Weight:     10,
		Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "disktype", Operator: corev1.NodeSelectorOpIn, Values: []string{"ssd"}}}},
	}}
	antiAffinity := &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: "kubernetes.io/hostname"}}}

	for _, tc := range []struct {
		name string
		in   *corev1.Affinity
		want *corev1.Affinity
	}{
		{
			name: "no affinity gets one term with the node",
			want: requiredOnly(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{pinned("node-a")}}),
		},
		{
			name: "pod anti-affinity is kept",
			in:   &corev1.Affinity{PodAntiAffinity: antiAffinity},
			want: &corev1.Affinity{
				PodAntiAffinity: antiAffinity,
				NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
					NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{pinned("node-a")}}},
				}},
			},
		},
		{
			name: "preferred terms are kept and a required term is added",
			in:   &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: preferred}},
			want: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				PreferredDuringSchedulingIgnoredDuringExecution: preferred,
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
					NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{pinned("node-a")}}},
				},
			}},
		},
		{
			name: "an empty required selector gets one term",
			in:   requiredOnly(),
			want: requiredOnly(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{pinned("node-a")}}),
		},
		{
			name: "the node is ANDed into every required term",
			in: requiredOnly(
				corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{arch}},
				corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{virt}},
			),
			want: requiredOnly(
				corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{arch}, MatchFields: []corev1.NodeSelectorRequirement{pinned("node-a")}},
				corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{virt}, MatchFields: []corev1.NodeSelectorRequirement{pinned("node-a")}},
			),
		},
		{
			name: "the pin comes first; the prototype's own metadata.name requirements stay",
			in: requiredOnly(corev1.NodeSelectorTerm{
				MatchExpressions: []corev1.NodeSelectorRequirement{arch},
				MatchFields:      []corev1.NodeSelectorRequirement{pinned("node-b"), notOnC},
			}),
			want: requiredOnly(corev1.NodeSelectorTerm{
				MatchExpressions: []corev1.NodeSelectorRequirement{arch},
				MatchFields:      []corev1.NodeSelectorRequirement{pinned("node-a"), pinned("node-b"), notOnC},
			}),
		},
		{
			name: "a requirement equal to the pin is not repeated",
			in:   requiredOnly(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{notOnC, pinned("node-a")}}),
			want: requiredOnly(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{pinned("node-a"), notOnC}}),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := pinToNode(tc.in.DeepCopy(), "node-a")
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("pinToNode (-want +got):\n%s", diff)
			}
		})
	}
}

func TestVMPinsToPodNode(t *testing.T) {
	proto := testPrototype()
	proto.Spec.Template.Spec.NodeSelector = map[string]string{"kubevirt.io/schedulable": "true"}
	vm := mustVM(t, proto, testPod(), Options{})

	want := requiredOnly(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{pinned("node-a")}})
	if diff := cmp.Diff(want, vm.Spec.Template.Spec.Affinity); diff != "" {
		t.Errorf("affinity (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"kubevirt.io/schedulable": "true"}, vm.Spec.Template.Spec.NodeSelector); diff != "" {
		t.Errorf("nodeSelector (-want +got):\n%s", diff)
	}
}

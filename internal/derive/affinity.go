package derive

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// pinToNode makes affinity require node, the way the DaemonSet controller
// pins its Pods: a matchFields requirement on metadata.name. Unlike the
// DaemonSet controller, which replaces the required terms, it ANDs the
// requirement into every existing term, so the prototype's own constraints
// still hold; adding a separate term would OR it and pin nothing.
//
// The pin comes first in each term's matchFields, and a metadata.name
// requirement the prototype has stays after it: scaffold gives the agent
// Pods the prototype's placement, so the agent's node meets it, and where
// it does not (a workload scaffolded before, or by hand) the VM cannot be
// scheduled and says why, rather than run where its prototype forbids.
// Preferred terms, pod (anti-)affinity and nodeSelector are left alone.
func pinToNode(affinity *corev1.Affinity, node string) *corev1.Affinity {
	if affinity == nil {
		affinity = &corev1.Affinity{}
	}
	if affinity.NodeAffinity == nil {
		affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := affinity.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{}
	}
	required := na.RequiredDuringSchedulingIgnoredDuringExecution
	if len(required.NodeSelectorTerms) == 0 {
		required.NodeSelectorTerms = []corev1.NodeSelectorTerm{{}}
	}
	pin := corev1.NodeSelectorRequirement{
		Key:      metav1.ObjectNameField,
		Operator: corev1.NodeSelectorOpIn,
		Values:   []string{node},
	}
	for i := range required.NodeSelectorTerms {
		term := &required.NodeSelectorTerms[i]
		fields := make([]corev1.NodeSelectorRequirement, 0, len(term.MatchFields)+1)
		fields = append(fields, pin)
		for _, r := range term.MatchFields {
			if !equality.Semantic.DeepEqual(r, pin) {
				fields = append(fields, r)
			}
		}
		term.MatchFields = fields
	}
	return affinity
}

// Package placementtest reads a placement back from a Pod spec, for tests
// that check what a template was given: the product only ever writes one.
package placementtest

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/placement"
)

// FromPodSpec is the placement spec carries, as placement.Apply writes it.
func FromPodSpec(spec *corev1.PodSpec) placement.Placement {
	return placement.Placement{
		NodeSelector:              spec.NodeSelector,
		Affinity:                  spec.Affinity,
		Tolerations:               spec.Tolerations,
		TopologySpreadConstraints: spec.TopologySpreadConstraints,
		PriorityClassName:         spec.PriorityClassName,
		SchedulerName:             spec.SchedulerName,
	}.DeepCopy()
}

package placement

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
)

// Placement is what decides which nodes a Pod may run on, as a Pod spec
// says it. The zero value places a Pod anywhere.
type Placement struct {
	NodeSelector              map[string]string                 `json:"nodeSelector,omitempty"`
	Affinity                  *corev1.Affinity                  `json:"affinity,omitempty"`
	Tolerations               []corev1.Toleration               `json:"tolerations,omitempty"`
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
	PriorityClassName         string                            `json:"priorityClassName,omitempty"`
	SchedulerName             string                            `json:"schedulerName,omitempty"`
}

// Apply sets spec's placement to p, a copy of it, replacing whatever spec
// had.
func (p Placement) Apply(spec *corev1.PodSpec) {
	p = p.DeepCopy()
	spec.NodeSelector = p.NodeSelector
	spec.Affinity = p.Affinity
	spec.Tolerations = p.Tolerations
	spec.TopologySpreadConstraints = p.TopologySpreadConstraints
	spec.PriorityClassName = p.PriorityClassName
	spec.SchedulerName = p.SchedulerName
}

// Equal reports whether p and q place a Pod alike, field by field: an empty
// map, list or affinity is no constraint, as is a nil one.
func (p Placement) Equal(q Placement) bool {
	return apiequality.Semantic.DeepEqual(p.normalize(), q.normalize())
}

// IsZero reports whether p places a Pod anywhere.
func (p Placement) IsZero() bool { return p.Equal(Placement{}) }

// DeepCopy returns a copy of p that shares nothing with it.
func (p Placement) DeepCopy() Placement {
	return Placement{
		NodeSelector:              maps.Clone(p.NodeSelector),
		Affinity:                  p.Affinity.DeepCopy(),
		Tolerations:               cloneAll(p.Tolerations),
		TopologySpreadConstraints: cloneAll(p.TopologySpreadConstraints),
		PriorityClassName:         p.PriorityClassName,
		SchedulerName:             p.SchedulerName,
	}
}

// normalize makes empty maps, lists and affinities nil, so that p compares
// and encodes as any other placement that means the same.
func (p Placement) normalize() Placement {
	p = p.DeepCopy()
	if len(p.NodeSelector) == 0 {
		p.NodeSelector = nil
	}
	if len(p.Tolerations) == 0 {
		p.Tolerations = nil
	}
	if len(p.TopologySpreadConstraints) == 0 {
		p.TopologySpreadConstraints = nil
	}
	p.Affinity = normalizeAffinity(p.Affinity)
	return p
}

func normalizeAffinity(a *corev1.Affinity) *corev1.Affinity {
	if a == nil {
		return nil
	}
	if na := a.NodeAffinity; na != nil {
		if r := na.RequiredDuringSchedulingIgnoredDuringExecution; r != nil && len(r.NodeSelectorTerms) == 0 {
			na.RequiredDuringSchedulingIgnoredDuringExecution = nil
		}
		if len(na.PreferredDuringSchedulingIgnoredDuringExecution) == 0 {
			na.PreferredDuringSchedulingIgnoredDuringExecution = nil
		}
		if na.RequiredDuringSchedulingIgnoredDuringExecution == nil && na.PreferredDuringSchedulingIgnoredDuringExecution == nil {
			a.NodeAffinity = nil
		}
	}
	if pa := a.PodAffinity; pa != nil && len(pa.RequiredDuringSchedulingIgnoredDuringExecution) == 0 && len(pa.PreferredDuringSchedulingIgnoredDuringExecution) == 0 {
		a.PodAffinity = nil
	}
	if pa := a.PodAntiAffinity; pa != nil && len(pa.RequiredDuringSchedulingIgnoredDuringExecution) == 0 && len(pa.PreferredDuringSchedulingIgnoredDuringExecution) == 0 {
		a.PodAntiAffinity = nil
	}
	if a.NodeAffinity == nil && a.PodAffinity == nil && a.PodAntiAffinity == nil {
		return nil
	}
	return a
}

// cloneAll deep-copies a list of API objects.
func cloneAll[T any, P interface {
	*T
	DeepCopy() *T
}](in []T) []T {
	if in == nil {
		return nil
	}
	out := make([]T, len(in))
	for i := range in {
		out[i] = *P(&in[i]).DeepCopy()
	}
	return slices.Clip(out)
}

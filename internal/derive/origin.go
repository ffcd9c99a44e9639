package derive

import (
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
)

// Origin is what a derived VM's annotations record about how it was made.
type Origin struct {
	PodName, PodNamespace string
	PodUID                types.UID
	Node                  string

	PrototypeName, PrototypeNamespace string
	PrototypeUID                      types.UID
	// PrototypeGeneration is the prototype's metadata.generation at
	// derivation time; HasGeneration is false when the annotation is absent
	// or not a number.
	PrototypeGeneration int64
	HasGeneration       bool
}

// OriginOf reads meta's vmctl annotations. It does not check that vmctl
// made the VM: see IsDerived and IsAgentVM.
func OriginOf(meta metav1.Object) Origin {
	a := meta.GetAnnotations()
	o := Origin{
		PodName:            a[contract.AnnotationPodName],
		PodNamespace:       a[contract.AnnotationPodNamespace],
		PodUID:             types.UID(a[contract.AnnotationPodUID]),
		Node:               a[contract.AnnotationNode],
		PrototypeName:      a[contract.AnnotationPrototypeName],
		PrototypeNamespace: a[contract.AnnotationPrototypeNamespace],
		PrototypeUID:       types.UID(a[contract.AnnotationPrototypeUID]),
	}
	if g, err := strconv.ParseInt(a[contract.AnnotationPrototypeGeneration], 10, 64); err == nil {
		o.PrototypeGeneration, o.HasGeneration = g, true
	}
	return o
}

// Pod is the recorded Pod's namespace and name.
func (o Origin) Pod() types.NamespacedName {
	return types.NamespacedName{Namespace: o.PodNamespace, Name: o.PodName}
}

// Prototype is the recorded prototype's namespace and name.
func (o Origin) Prototype() types.NamespacedName {
	return types.NamespacedName{Namespace: o.PrototypeNamespace, Name: o.PrototypeName}
}

package status

import (
	"context"
	"fmt"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"kubevirt.io/client-go/kubevirt"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
)

// Origin is what a derived VM's annotations record about how it was made.
type Origin struct {
	PodName, PodNamespace string
	PodUID                types.UID
	Node                  string

	PrototypeName, PrototypeNamespace string
	// PrototypeGeneration is the prototype's metadata.generation at
	// derivation time; HasGeneration is false when the annotation is absent
	// or not a number.
	PrototypeGeneration int64
	HasGeneration       bool
}

// OriginOf reads vm's vmctl annotations.
func OriginOf(vm *kubevirtv1.VirtualMachine) Origin {
	a := vm.Annotations
	o := Origin{
		PodName:            a[derive.AnnotationPodName],
		PodNamespace:       a[derive.AnnotationPodNamespace],
		PodUID:             types.UID(a[derive.AnnotationPodUID]),
		Node:               a[derive.AnnotationNode],
		PrototypeName:      a[derive.AnnotationPrototypeName],
		PrototypeNamespace: a[derive.AnnotationPrototypeNamespace],
	}
	if g, err := strconv.ParseInt(a[derive.AnnotationPrototypeGeneration], 10, 64); err == nil {
		o.PrototypeGeneration, o.HasGeneration = g, true
	}
	return o
}

// IsDerived reports whether vm is a VM vmctl made and records which Pod it
// belongs to: derive.IsDerived plus the Pod's name and namespace, without
// which no one can tell whether that Pod still exists, and the name an agent
// gives it (derive.Name of the recorded prototype and Pod). A VM copied from
// a derived one and renamed, say to serve as a prototype, keeps vmctl's
// labels and annotations but not that name: it is not derived, so status
// does not call it an orphan, diff does not compare it and gc never deletes
// it.
func IsDerived(vm *kubevirtv1.VirtualMachine) bool {
	if !derive.IsDerived(vm) {
		return false
	}
	o := OriginOf(vm)
	return o.PodName != "" && o.PodNamespace != "" && o.PrototypeName != "" &&
		vm.Name == derive.Name(o.PrototypeName, o.PodName)
}

// Key is a namespace/name pair used to look objects up.
type Key struct{ Namespace, Name string }

// String returns "namespace/name".
func (k Key) String() string { return k.Namespace + "/" + k.Name }

// PrototypeExists reports whether namespace (every namespace when empty)
// holds a VM named name that vmctl did not derive: a prototype. One LIST,
// narrowed to the name.
func PrototypeExists(ctx context.Context, c kubevirt.Interface, namespace, name string) (bool, error) {
	list, err := c.KubevirtV1().VirtualMachines(namespace).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		return false, err
	}
	for i := range list.Items {
		if list.Items[i].Name == name && !derive.IsDerived(&list.Items[i]) {
			return true, nil
		}
	}
	return false, nil
}

// NoPrototype says that there is no prototype name in namespace (any
// namespace when empty) and what to do, for commands given a PROTOTYPE
// that find nothing of it.
func NoPrototype(namespace, name string) string {
	if namespace == "" {
		return fmt.Sprintf("no VM %s in any namespace: check the prototype's name", name)
	}
	return fmt.Sprintf("no VM %s in %s namespace: check the prototype's name, or pass -n or -A", name, namespace)
}

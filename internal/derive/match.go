package derive

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// DerivedSelector is a label selector matching every VM vmctl made. Confirm
// each match with IsDerived: labels alone are easy to copy.
const DerivedSelector = LabelPrototype + "," + LabelPod

// PrototypeSelector returns a label selector matching the VMs derived from
// the prototype named prototype, in any namespace the prototype's VMs live
// in. Confirm each match with IsDerivedFrom: the label holds only the name.
func PrototypeSelector(prototype string) string {
	return labels.Set{LabelPrototype: LabelValue(prototype)}.String()
}

// IsDerived reports whether meta belongs to a VM vmctl made: it has both
// vmctl labels and the owning Pod's UID. Never change or delete a VM for
// which it is false.
func IsDerived(meta metav1.Object) bool {
	if meta == nil {
		return false
	}
	l, a := meta.GetLabels(), meta.GetAnnotations()
	return l[LabelPrototype] != "" && l[LabelPod] != "" && a[AnnotationPodUID] != ""
}

// IsDerivedFrom reports whether meta belongs to a VM vmctl derived from the
// prototype namespace/name.
func IsDerivedFrom(meta metav1.Object, namespace, name string) bool {
	if !IsDerived(meta) {
		return false
	}
	a := meta.GetAnnotations()
	return a[AnnotationPrototypeName] == name && a[AnnotationPrototypeNamespace] == namespace
}

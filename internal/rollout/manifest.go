package rollout

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
)

// Manifest is obj, a workload as read from the API server, as a manifest
// to keep in Git and apply: its apiVersion and kind set, and without what
// the API server and kubectl write (resourceVersion, uid, generation,
// creationTimestamp, managedFields, kubectl's last-applied annotation,
// status). A resourceVersion kept would make every later apply of it a
// conflict once the workload's status changed.
func Manifest(obj runtime.Object) (*unstructured.Unstructured, error) {
	kinds, _, err := scheme.Scheme.ObjectKinds(obj)
	if err != nil {
		return nil, fmt.Errorf("the kind of %T: %w", obj, err)
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(kinds[0])
	delete(u.Object, "status")
	for _, f := range []string{"resourceVersion", "uid", "generation", "creationTimestamp", "managedFields", "selfLink"} {
		unstructured.RemoveNestedField(u.Object, "metadata", f)
	}
	unstructured.RemoveNestedField(u.Object, "metadata", "annotations", "kubectl.kubernetes.io/last-applied-configuration")
	return u, nil
}

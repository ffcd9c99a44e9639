package status

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"kubevirt.io/client-go/kubevirt"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
)

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

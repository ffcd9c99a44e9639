package status

import (
	"context"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"kubevirt.io/client-go/kubevirt"
)

// VMFinder reads VirtualMachines by namespace and name, whole (spec
// included), as diff needs prototypes: one LIST narrowed to each name, or
// one LIST of a namespace that needs more than MaxByName (see byName). It
// keeps what it was asked for, found or not, and nothing else, so a LIST of
// a whole namespace does not fill memory.
type VMFinder struct {
	c             kubevirt.Interface
	allNamespaces bool
	asked         map[types.NamespacedName]bool
	found         map[types.NamespacedName]*kubevirtv1.VirtualMachine
}

// NewVMFinder returns a VMFinder reading through c. allNamespaces allows it
// one LIST over all namespaces when that is cheaper (see byName).
func NewVMFinder(c kubevirt.Interface, allNamespaces bool) *VMFinder {
	return &VMFinder{c: c, allNamespaces: allNamespaces, asked: map[types.NamespacedName]bool{}, found: map[types.NamespacedName]*kubevirtv1.VirtualMachine{}}
}

// Find reads the VMs of keys it was not asked for before.
func (f *VMFinder) Find(ctx context.Context, keys []types.NamespacedName) error {
	want := map[types.NamespacedName]bool{}
	var fresh []types.NamespacedName
	for _, k := range keys {
		if !f.asked[k] && !want[k] {
			want[k] = true
			fresh = append(fresh, k)
		}
	}
	srcs := byName(rolePrototypes, fresh, f.allNamespaces)
	found := make([][]*kubevirtv1.VirtualMachine, len(srcs))
	err := readAll(ctx, kube.Clients{KubeVirt: f.c}, Query{}, srcs, func(i int, obj runtime.Object) {
		if vm := obj.(*kubevirtv1.VirtualMachine); want[types.NamespacedName{Namespace: vm.Namespace, Name: vm.Name}] {
			found[i] = append(found[i], vm.DeepCopy())
		}
	})
	if err != nil {
		return err
	}
	for k := range want {
		f.asked[k] = true
	}
	for _, vms := range found {
		for _, vm := range vms {
			f.found[types.NamespacedName{Namespace: vm.Namespace, Name: vm.Name}] = vm
		}
	}
	return nil
}

// Get returns the VM of k that Find read, or nil when there is none.
func (f *VMFinder) Get(k types.NamespacedName) *kubevirtv1.VirtualMachine { return f.found[k] }

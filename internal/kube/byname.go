package kube

import (
	"context"
	"fmt"
	"maps"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"kubevirt.io/client-go/kubevirt"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
)

// MaxByName is how many objects of one kind a namespace may need by name
// (one LIST narrowed to metadata.name each, or with status --watch one
// informer each) before one LIST of the whole namespace reads them instead.
// A LIST narrowed to a name costs the API server what a GET does; a LIST of
// the namespace costs what its every object does, which at 10,000 objects
// outweighs 50 narrowed LISTs many times over (see docs/benchmarks.md).
// When all namespaces are read and more than MaxByName LISTs would be
// needed, one LIST over all namespaces serves instead.
const MaxByName = 50

// ListsByName returns the LISTs that read the objects keys name, as namespace
// and name: one per name, or one per namespace (no name) for a namespace of
// more than MaxByName names, or, with allNamespaces, one over all
// namespaces (neither) when that still makes more than MaxByName LISTs.
// They come sorted; keys may repeat, and keys without a namespace or a name
// are skipped.
func ListsByName(keys []types.NamespacedName, allNamespaces bool) []types.NamespacedName {
	names := map[string][]string{}
	for _, k := range keys {
		if k.Namespace != "" && k.Name != "" {
			names[k.Namespace] = append(names[k.Namespace], k.Name)
		}
	}
	var out []types.NamespacedName
	for _, ns := range slices.Sorted(maps.Keys(names)) {
		list := slices.Compact(slices.Sorted(slices.Values(names[ns])))
		if len(list) > MaxByName {
			out = append(out, types.NamespacedName{Namespace: ns})
			continue
		}
		for _, name := range list {
			out = append(out, types.NamespacedName{Namespace: ns, Name: name})
		}
	}
	if allNamespaces && len(out) > MaxByName {
		return []types.NamespacedName{{}}
	}
	return out
}

// NameOptions narrows a LIST to the object called name, when name is set.
func NameOptions(opts metav1.ListOptions, name string) metav1.ListOptions {
	if name != "" {
		opts.FieldSelector = ByName(name).Field
	}
	return opts
}

// VMFinder reads VirtualMachines by namespace and name, whole (spec
// included), as diff needs prototypes: one LIST narrowed to each name, or
// one LIST of a namespace that needs more than MaxByName (see ListsByName). It
// keeps what it was asked for, found or not, and nothing else, so a LIST of
// a whole namespace does not fill memory.
type VMFinder struct {
	c             kubevirt.Interface
	allNamespaces bool
	asked         map[types.NamespacedName]bool
	found         map[types.NamespacedName]*kubevirtv1.VirtualMachine
}

// NewVMFinder returns a VMFinder reading through c. allNamespaces allows it
// one LIST over all namespaces when that is cheaper (see ListsByName).
func NewVMFinder(c kubevirt.Interface, allNamespaces bool) *VMFinder {
	return &VMFinder{c: c, allNamespaces: allNamespaces,
		asked: map[types.NamespacedName]bool{}, found: map[types.NamespacedName]*kubevirtv1.VirtualMachine{}}
}

// Find reads the VMs of keys it was not asked for before, Workers LISTs at
// a time.
func (f *VMFinder) Find(ctx context.Context, keys []types.NamespacedName) error {
	want := map[types.NamespacedName]bool{}
	for _, k := range keys {
		if !f.asked[k] {
			want[k] = true
		}
	}
	lists := ListsByName(slices.Collect(maps.Keys(want)), f.allNamespaces)
	found := make([][]*kubevirtv1.VirtualMachine, len(lists))
	err := ReadAll(ctx, len(lists), func(i int) error {
		l := lists[i]
		err := EachItem(ctx, VMs(f.c, l.Namespace), NameOptions(metav1.ListOptions{}, l.Name), func(obj runtime.Object) error {
			if vm := obj.(*kubevirtv1.VirtualMachine); want[types.NamespacedName{Namespace: vm.Namespace, Name: vm.Name}] {
				found[i] = append(found[i], vm.DeepCopy())
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("list %s: %w", Describe("virtualmachines", l.Namespace, l.Name), err)
		}
		return nil
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

// PrototypeExists reports whether namespace (every namespace when empty)
// holds a VM named name that vmctl did not derive: a prototype. One LIST,
// narrowed to the name.
func PrototypeExists(ctx context.Context, c kubevirt.Interface, namespace, name string) (bool, error) {
	list, err := c.KubevirtV1().VirtualMachines(namespace).List(ctx, NameOptions(metav1.ListOptions{}, name))
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

package drift

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
)

// Each compares every derived VM of namespace ("" for all), or only those
// of the prototype name when prototype is set, with what it derives to
// today, and calls fn with each Check as the VMs arrive: page by page of a
// LIST selected by vmctl's labels, in the API's order (by namespace, then
// name). Memory holds a page of VMs and one VM's YAML, not every VM. A VM
// that records a VM revision (its Pod's) is compared with that revision
// (CheckPinned), read from the revision stores of its Pod's namespace;
// another with its prototype as it is now (CheckVM). What a page needs is
// read first, once each: the prototypes by name (kube.VMFinder), the
// stores by label, one LIST per namespace.
func (s *Sources) Each(ctx context.Context, namespace, prototype string, fn func(Check) error) error {
	return kube.EachVMPage(ctx, s.c.KubeVirt, namespace, derive.Selector(prototype), func(page []kubevirtv1.VirtualMachine) error {
		var live []*kubevirtv1.VirtualMachine
		var keys []types.NamespacedName
		var storeNamespaces []string
		for i := range page {
			vm := &page[i]
			if !derive.IsAgentVM(vm) {
				continue
			}
			o := derive.OriginOf(vm)
			if prototype != "" && o.PrototypeName != prototype {
				continue // the label holds a hash of a long name; the annotation all of it
			}
			live = append(live, vm)
			if vm.Annotations[contract.AnnotationVMRevision] != "" {
				storeNamespaces = append(storeNamespaces, o.PodNamespace)
			} else {
				keys = append(keys, o.Prototype())
			}
		}
		if err := s.Prototypes.Find(ctx, keys); err != nil {
			return err
		}
		if err := s.ReadStores(ctx, storeNamespaces); err != nil {
			return err
		}
		for _, vm := range live {
			o := derive.OriginOf(vm)
			var c Check
			if hash := vm.Annotations[contract.AnnotationVMRevision]; hash != "" {
				c = CheckPinned(vm, s.Revision(o.PodNamespace, hash), hash)
			} else {
				c = CheckVM(vm, s.Prototypes.Get(o.Prototype()))
			}
			if err := fn(c); err != nil {
				return err
			}
		}
		return nil
	})
}

package drift

import (
	"context"

	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
)

// Each compares every derived VM of namespace ("" for all), or only those
// of the prototype name when prototype is set, with what it derives to
// today, and calls fn with each Check as the VMs arrive: page by page of a
// LIST selected by vmctl's labels, in the API's order (by namespace, then
// name). Memory holds a page of VMs and one VM's YAML, not every VM. Each
// VM is compared with the VM revision it records (its Pod's), read from
// the revision stores of its Pod's namespace (CheckPinned), which a page
// reads first, one LIST per namespace.
func (s *Sources) Each(ctx context.Context, namespace, prototype string, fn func(Check) error) error {
	return kube.EachVMPage(ctx, s.c.KubeVirt, namespace, derive.Selector(prototype), func(page []kubevirtv1.VirtualMachine) error {
		var live []*kubevirtv1.VirtualMachine
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
			}
		}
		if err := s.ReadStores(ctx, storeNamespaces); err != nil {
			return err
		}
		for _, vm := range live {
			hash := vm.Annotations[contract.AnnotationVMRevision]
			if err := fn(CheckPinned(vm, s.Revision(derive.OriginOf(vm).PodNamespace, hash), hash)); err != nil {
				return err
			}
		}
		return nil
	})
}

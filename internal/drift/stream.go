package drift

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"kubevirt.io/client-go/kubevirt"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
)

// Each compares every derived VM of namespace ("" for all), or only those
// of the prototype name when prototype is set, with what its prototype
// derives today (CheckVM) and calls fn with each Check as the VMs arrive:
// page by page of a LIST selected by vmctl's labels, in the API's order (by
// namespace, then name). Memory holds a page of VMs and one VM's YAML, not
// every VM. The prototypes a page names are read first, by name
// (kube.VMFinder), once each.
func Each(ctx context.Context, c kubevirt.Interface, namespace, prototype string, fn func(Check) error) error {
	protos := kube.NewVMFinder(c, namespace == "")
	return kube.EachVMPage(ctx, c, namespace, derive.Selector(prototype), func(page []kubevirtv1.VirtualMachine) error {
		var live []*kubevirtv1.VirtualMachine
		var keys []types.NamespacedName
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
			keys = append(keys, o.Prototype())
		}
		if err := protos.Find(ctx, keys); err != nil {
			return err
		}
		for i, vm := range live {
			if err := fn(CheckVM(vm, protos.Get(keys[i]))); err != nil {
				return err
			}
		}
		return nil
	})
}

package gc

import (
	"context"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"kubevirt.io/client-go/kubevirt"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
)

// Find lists the orphans of namespace ("" for all), and the would-be
// orphans it spares (see Orphans), with one paged LIST of derived VMs and
// one of Pods, plus one Pod LIST per other namespace whose Pods own VMs
// here. VMs are listed first: a VM in that list was created by a Pod that
// existed before the Pod LIST, so a Pod missing from it is really gone. Pods
// are listed without a label selector, so that a Pod whose labels were
// edited, or an agent's Pod that never had them, still protects its VM and
// its prototype.
func Find(ctx context.Context, c kube.Clients, namespace string, now time.Time, minAge time.Duration) ([]Orphan, []Spared, error) {
	vms, err := kube.ListVMs(ctx, c.KubeVirt, namespace, derive.DerivedSelector)
	if err != nil {
		return nil, nil, err
	}
	pods, err := kube.ListPods(ctx, c.Kube, namespace, "")
	if err != nil {
		return nil, nil, err
	}
	if namespace != "" {
		var others []string
		for i := range vms {
			if ns := derive.OriginOf(&vms[i]).PodNamespace; ns != "" && ns != namespace && !slices.Contains(others, ns) {
				others = append(others, ns)
			}
		}
		slices.Sort(others)
		for _, ns := range others {
			more, err := kube.ListPods(ctx, c.Kube, ns, "")
			if err != nil {
				return nil, nil, err
			}
			pods = append(pods, more...)
		}
	}
	orphans, spared := Orphans(pods, vms, now, minAge)
	return orphans, spared, nil
}

// Delete deletes the orphan's VM, on condition that it is still the VM of
// that UID. dryRun is passed on as the API's dryRun (metav1.DryRunAll for a
// server-side dry run).
func Delete(ctx context.Context, c kubevirt.Interface, o Orphan, dryRun []string) error {
	uid := o.UID
	return c.KubevirtV1().VirtualMachines(o.Namespace).Delete(ctx, o.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &uid},
		DryRun:        dryRun,
	})
}

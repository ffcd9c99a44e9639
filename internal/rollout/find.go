package rollout

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/prototype"
)

// Find lists the workloads of namespace ("" for all) that run agents of the
// prototype named prototype (AnyPrototype: scaffold's workloads of any):
// one paged LIST per kind, Deployments first, then StatefulSets and
// DaemonSets. Workloads are matched by their agents' arguments (see
// match), so older ones that scaffold did not label are found too.
func Find(ctx context.Context, c kube.Clients, namespace, prototype string) ([]Workload, error) {
	var objs []runtime.Object
	for _, k := range kinds {
		err := kube.EachItem(ctx, k.client(c.Kube, namespace).list, metav1.ListOptions{}, func(obj runtime.Object) error {
			objs = append(objs, obj.DeepCopyObject())
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", kube.Describe(k.resource.Resource, namespace, ""), err)
		}
	}
	return selectWorkloads(objs, prototype)
}

// Targets pins each prototype the workloads derive from, once: one GET of
// the prototype, and KubeVirt's expansion of its instancetype and
// preference (prototype.Pin). A prototype that does not exist is Missing;
// one that carries vmctl's markers is Refused.
func Targets(ctx context.Context, c kube.Clients, workloads []Workload) (map[types.NamespacedName]Target, error) {
	out := map[types.NamespacedName]Target{}
	for _, w := range workloads {
		k := w.Prototype()
		if _, ok := out[k]; ok {
			continue
		}
		proto, err := c.KubeVirt.KubevirtV1().VirtualMachines(k.Namespace).Get(ctx, k.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			out[k] = Target{Missing: true}
			continue
		case err != nil:
			return nil, fmt.Errorf("get prototype %s: %w", k, err)
		}
		pinned, err := prototype.Pin(ctx, c, proto)
		if err != nil {
			return nil, fmt.Errorf("pin prototype %s: %w", k, err)
		}
		if pinned.PlacementErr != nil {
			klog.FromContext(ctx).V(1).Info("Not rolling out the prototype's placement", "prototype", k, "err", pinned.PlacementErr)
		}
		if pinned.ReservationErr != nil {
			klog.FromContext(ctx).V(1).Info("Not rolling out the room the prototype's VMs need", "prototype", k, "err", pinned.ReservationErr)
		}
		out[k] = Target{Pinned: pinned, Refused: derive.Markers(pinned.Snapshot)}
	}
	return out, nil
}

// Pods lists w's Pods, by its selector.
func Pods(ctx context.Context, c kube.Clients, w Workload) ([]corev1.Pod, error) {
	sel, err := w.selector()
	if err != nil {
		return nil, err
	}
	return kube.ListPods(ctx, c.Kube, w.Meta().GetNamespace(), sel.String())
}

// VMs lists the VMs derived from a prototype named prototype in each of
// namespaces: one LIST per namespace.
func VMs(ctx context.Context, c kube.Clients, namespaces []string, prototype string) ([]kubevirtv1.VirtualMachine, error) {
	var out []kubevirtv1.VirtualMachine
	slices.Sort(namespaces)
	for _, ns := range slices.Compact(namespaces) {
		vms, err := kube.ListVMs(ctx, c.KubeVirt, ns, derive.PrototypeSelector(prototype))
		if err != nil {
			return nil, err
		}
		out = append(out, vms...)
	}
	return out, nil
}

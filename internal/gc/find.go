package gc

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"kubevirt.io/client-go/kubevirt"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/revision"
)

// Found is what gc found to collect.
type Found struct {
	// Orphans are the derived VMs whose Pod is gone, and Spared the
	// would-be orphans it spares (see Orphans).
	Orphans []Orphan
	Spared  []Spared
	// Stores are the revision stores to prune or delete, and Unreadable
	// those it leaves alone (see PlanStores).
	Stores     []StoreAction
	Unreadable []Unreadable
}

// Find lists the orphans of namespace ("" for all), and the would-be
// orphans it spares (see Orphans), with one paged LIST of derived VMs and
// one of Pods, plus one Pod LIST per other namespace whose Pods own VMs
// here. VMs are listed first: a VM in that list was created by a Pod that
// existed before the Pod LIST, so a Pod missing from it is really gone. Pods
// are listed without a label selector, so that a Pod whose labels were
// edited, or an agent's Pod that never had them, still protects its VM and
// its prototype.
//
// Then it plans what to do with the revision stores of namespace
// (PlanStores): one LIST of its VMRevisionStores, and where it holds a
// store, one LIST each of its ControllerRevisions (the StatefulSets' and
// DaemonSets' histories), Deployments, StatefulSets, DaemonSets and
// ReplicaSets; the Pods are those listed above.
func Find(ctx context.Context, c kube.Clients, namespace string, now time.Time, minAge time.Duration) (Found, error) {
	var found Found
	vms, err := kube.ListVMs(ctx, c.KubeVirt, namespace, derive.DerivedSelector)
	if err != nil {
		return found, err
	}
	pods, err := kube.ListPods(ctx, c.Kube, namespace, "")
	if err != nil {
		return found, err
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
				return found, err
			}
			pods = append(pods, more...)
		}
	}
	found.Orphans, found.Spared = Orphans(pods, vms, now, minAge)
	t, err := readTemplates(ctx, c, namespace, pods)
	if err != nil {
		return found, err
	}
	found.Stores, found.Unreadable = PlanStores(t, now, minAge)
	return found, nil
}

// readTemplates reads the Templates of namespace ("" for all), given its
// Pods (and perhaps others'): its revision stores, and only where there
// are any, its ControllerRevisions, workloads and ReplicaSets. Without the
// VMRevisionStore CRD there are no stores.
func readTemplates(ctx context.Context, c kube.Clients, namespace string, pods []corev1.Pod) (Templates, error) {
	t := Templates{Pods: pods}
	err := list(ctx, namespace, revision.StoreResource, &t.Stores, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return c.Dynamic.Resource(revision.StoreGVR).Namespace(namespace).List(ctx, o)
	})
	if apierrors.IsNotFound(err) {
		return t, nil
	}
	if err != nil || !slices.ContainsFunc(t.Stores, func(u unstructured.Unstructured) bool { return isStore(&u) }) {
		return t, err
	}
	apps := c.Kube.AppsV1()
	if err := list(ctx, namespace, "controllerrevisions", &t.ControllerRevisions, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return apps.ControllerRevisions(namespace).List(ctx, o)
	}); err != nil {
		return t, err
	}
	if err := list(ctx, namespace, "deployments", &t.Deployments, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return apps.Deployments(namespace).List(ctx, o)
	}); err != nil {
		return t, err
	}
	if err := list(ctx, namespace, "statefulsets", &t.StatefulSets, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return apps.StatefulSets(namespace).List(ctx, o)
	}); err != nil {
		return t, err
	}
	if err := list(ctx, namespace, "daemonsets", &t.DaemonSets, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return apps.DaemonSets(namespace).List(ctx, o)
	}); err != nil {
		return t, err
	}
	err = list(ctx, namespace, "replicasets", &t.ReplicaSets, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return apps.ReplicaSets(namespace).List(ctx, o)
	})
	return t, err
}

// list appends every item of a paged LIST of resource in namespace to
// out, copied from the page.
func list[T any, P interface {
	*T
	runtime.Object
}](ctx context.Context, namespace, resource string, out *[]T, fn kube.ListFunc) error {
	err := kube.EachItem(ctx, fn, metav1.ListOptions{}, func(obj runtime.Object) error {
		*out = append(*out, *obj.DeepCopyObject().(P))
		return nil
	})
	if err != nil {
		return fmt.Errorf("list %s: %w", kube.Describe(resource, namespace, ""), err)
	}
	return nil
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

// Collect does a, a StoreAction, on condition that the store is still the
// object gc read, unchanged (its UID and resourceVersion; else the API
// server answers a conflict): it deletes the store, or updates it in
// place to its Replacement, without the pruned revisions. dryRun is passed
// on as the API's dryRun (metav1.DryRunAll for a server-side dry run).
func Collect(ctx context.Context, c dynamic.Interface, a StoreAction, dryRun []string) error {
	stores := c.Resource(revision.StoreGVR).Namespace(a.Namespace)
	if a.Delete {
		uid, rv := a.UID, a.ResourceVersion
		return stores.Delete(ctx, a.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}, DryRun: dryRun})
	}
	_, err := stores.Update(ctx, a.Replacement, metav1.UpdateOptions{DryRun: dryRun})
	return err
}

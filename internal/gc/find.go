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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"kubevirt.io/client-go/kubevirt"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/revision"
)

// Found is what gc found to collect.
type Found struct {
	// Orphans are the derived VMs whose Pod is gone, OrphanVMIs the
	// instances with vmctl's labels that no VM owns, and Spared the
	// would-be orphans of either kind it spares (see Orphans,
	// OrphanedVMIs, Find).
	Orphans    []Orphan
	OrphanVMIs []OrphanVMI
	Spared     []Spared
	// Stores are the revision stores to prune or delete, and Unreadable
	// those it leaves alone (see PlanStores).
	Stores     []StoreAction
	Unreadable []Unreadable
}

// Find lists the orphans of namespace ("" for all), and the would-be
// orphans it spares (see Orphans), with one paged LIST of derived VMs,
// one of the VMIs with vmctl's labels and one of Pods, plus one Pod LIST
// per other namespace whose Pods own VMs here. VMs are listed first: a VM
// in that list was created by a Pod that existed before the Pod LIST, so
// a Pod missing from it is really gone. Pods are listed without a label
// selector, so that a Pod whose labels were edited, or an agent's Pod that
// never had them, still protects its VM and its prototype.
//
// An orphan that no ownerReference ties to its Pod (one in another
// namespace than its Pod) may be the prototype of a fleet in any
// namespace (--proto-namespace), which its Pods name: with a namespace,
// Find then lists the Pods of all namespaces before it calls any such VM
// an orphan, and where it may not, it spares those VMs and says why. One
// with the reference goes with its Pod anyway: Kubernetes' garbage
// collector deletes it.
//
// The orphaned VMIs (OrphanedVMIs) are checked, by name, against the VMs
// of their namespaces whatever their labels: one LIST narrowed by name
// per namespace that has any.
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
	if namespace != "" && slices.ContainsFunc(found.Orphans, func(o Orphan) bool { return !o.Owned }) {
		if err := sparePrototypes(ctx, c, vms, now, minAge, &found); err != nil {
			return found, err
		}
	}
	if err := findOrphanedVMIs(ctx, c, namespace, vms, pods, now, minAge, &found); err != nil {
		return found, err
	}
	t, err := readTemplates(ctx, c, namespace, pods)
	if err != nil {
		return found, err
	}
	found.Stores, found.Unreadable = PlanStores(t, now, minAge)
	return found, nil
}

// sparePrototypes takes found's orphans again against the Pods of every
// namespace, whose agents may name one of them as their prototype. Where
// it may not list them, it spares the orphans no ownerReference ties to
// their Pod, saying why.
func sparePrototypes(ctx context.Context, c kube.Clients, vms []kubevirtv1.VirtualMachine, now time.Time, minAge time.Duration, found *Found) error {
	all, err := kube.ListPods(ctx, c.Kube, "", "")
	if apierrors.IsForbidden(err) {
		kept := found.Orphans[:0]
		for _, o := range found.Orphans {
			if o.Owned {
				kept = append(kept, o)
				continue
			}
			found.Spared = append(found.Spared, Spared{Namespace: o.Namespace, Name: o.Name, Kind: KindVM, Why: fmt.Sprintf(
				"%s, but a fleet in another namespace may name it as its prototype, and gc may not list Pods in all namespaces to see (%v): "+
					"run gc with leave to list pods cluster-wide, or gc -A", o.Why(), err)})
		}
		found.Orphans = kept
		return nil
	}
	if err != nil {
		return err
	}
	found.Orphans, found.Spared = Orphans(all, vms, now, minAge)
	return nil
}

// findOrphanedVMIs adds to found the orphaned VMIs of namespace ("" for
// all), and those it spares, given its derived VMs and its Pods.
func findOrphanedVMIs(ctx context.Context, c kube.Clients, namespace string, vms []kubevirtv1.VirtualMachine, pods []corev1.Pod,
	now time.Time, minAge time.Duration, found *Found) error {
	var vmis []kubevirtv1.VirtualMachineInstance
	err := kube.EachItem(ctx, kube.VMIs(c.KubeVirt, namespace), metav1.ListOptions{LabelSelector: derive.DerivedSelector}, func(obj runtime.Object) error {
		vmis = append(vmis, *obj.(*kubevirtv1.VirtualMachineInstance).DeepCopy())
		return nil
	})
	if err != nil {
		return fmt.Errorf("list %s: %w", kube.Describe("virtualmachineinstances", namespace, ""), err)
	}
	derived := map[types.NamespacedName]bool{}
	for _, vm := range vms {
		derived[types.NamespacedName{Namespace: vm.Namespace, Name: vm.Name}] = true
	}
	var unowned []types.NamespacedName
	for i := range vmis {
		if k := (types.NamespacedName{Namespace: vmis[i].Namespace, Name: vmis[i].Name}); derive.IsOrphanedInstance(&vmis[i]) && !derived[k] {
			unowned = append(unowned, k)
		}
	}
	if len(unowned) == 0 {
		return nil
	}
	// A VM of its name, vmctl's or not, adopts it.
	byName := kube.NewVMFinder(c.KubeVirt, namespace == "")
	if err := byName.Find(ctx, unowned); err != nil {
		return err
	}
	exists := func(k types.NamespacedName) bool { return derived[k] || byName.Get(k) != nil }
	orphans, spared := OrphanedVMIs(vmis, exists, pods, now, minAge)
	found.OrphanVMIs = orphans
	found.Spared = append(found.Spared, spared...)
	return nil
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

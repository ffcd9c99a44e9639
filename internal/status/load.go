package status

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
)

// Query says what status shows.
type Query struct {
	// Namespace is the namespace shown; empty means all namespaces.
	Namespace string
	// Prototype, when set, shows only the agents and VMs of that prototype
	// name.
	Prototype string
	// PodSelector narrows the agent Pods further (kubectl's -l). VMs carry
	// no Pod labels, so with a selector status shows only VMs paired with a
	// selected Pod and cannot report orphans.
	PodSelector string
}

// InScope reports whether objects of namespace are shown.
func (q Query) InScope(namespace string) bool {
	return q.Namespace == "" || q.Namespace == namespace
}

// Inventory is everything Pair needs, read once from the cluster.
//
// Pods must hold every agent Pod of the query's namespace and of each
// namespace a derived VM's pod-namespace annotation names, or Pair calls
// VMs orphaned whose Pod it simply did not read. VMs must hold the derived
// VMs and their prototypes (all VMs of the namespaces read: prototypes are
// VMs too, so one LIST serves both). VMIs are matched to VMs by name.
// Objects outside the query's namespace only appear paired with one inside.
type Inventory struct {
	Query Query
	Pods  []corev1.Pod
	VMs   []kubevirtv1.VirtualMachine
	VMIs  []kubevirtv1.VirtualMachineInstance
}

// Load reads an Inventory with one paged LIST per kind and namespace
// scope, never a GET per object: VMs (derived and prototypes alike), then
// VMIs, then agent Pods. VMs come first so that a VM found without its Pod
// really outlived it: a Pod started after the VM LIST may lack a VM, which
// Pair forgives for MissingGrace.
//
// When q.Namespace is set and the agents there work across namespaces (a VM
// or prototype elsewhere, or a VM whose Pod is elsewhere), each such other
// namespace costs one more LIST of the kinds it is needed for.
func Load(ctx context.Context, c Clients, q Query) (*Inventory, error) {
	inv := &Inventory{Query: q}
	vms, err := ListVMs(ctx, c.KubeVirt, q.Namespace, "")
	if err != nil {
		return nil, err
	}
	inv.VMs = vms
	vmiSelector := derive.LabelPrototype
	if q.Prototype != "" {
		vmiSelector = derive.PrototypeSelector(q.Prototype)
	}
	if inv.VMIs, err = ListVMIs(ctx, c.KubeVirt, q.Namespace, vmiSelector); err != nil {
		return nil, err
	}
	podSelector := AgentSelector
	if q.PodSelector != "" {
		podSelector += "," + q.PodSelector
	}
	if inv.Pods, err = ListPods(ctx, c.Kube, q.Namespace, podSelector); err != nil {
		return nil, err
	}
	if q.Namespace == "" {
		return inv, nil
	}

	// Pods elsewhere that own VMs here.
	podNamespaces := map[string]bool{q.Namespace: true}
	for _, ns := range sortedSet(podNamespacesOf(inv.VMs), podNamespaces) {
		pods, err := ListPods(ctx, c.Kube, ns, podSelector)
		if err != nil {
			return nil, err
		}
		inv.Pods = append(inv.Pods, pods...)
	}
	// VMs elsewhere made by Pods here, with their VMIs.
	vmNamespaces := map[string]bool{q.Namespace: true}
	for _, ns := range sortedSet(vmNamespacesOf(inv.Pods, q), vmNamespaces) {
		vms, err := ListVMs(ctx, c.KubeVirt, ns, "")
		if err != nil {
			return nil, err
		}
		vmis, err := ListVMIs(ctx, c.KubeVirt, ns, vmiSelector)
		if err != nil {
			return nil, err
		}
		inv.VMs = append(inv.VMs, vms...)
		inv.VMIs = append(inv.VMIs, vmis...)
	}
	// Prototypes elsewhere.
	for _, ns := range sortedSet(prototypeNamespacesOf(inv.VMs), vmNamespaces) {
		vms, err := ListVMs(ctx, c.KubeVirt, ns, "")
		if err != nil {
			return nil, err
		}
		inv.VMs = append(inv.VMs, vms...)
	}
	return inv, nil
}

func podNamespacesOf(vms []kubevirtv1.VirtualMachine) []string {
	var out []string
	for i := range vms {
		if IsDerived(&vms[i]) {
			out = append(out, OriginOf(&vms[i]).PodNamespace)
		}
	}
	return out
}

func vmNamespacesOf(pods []corev1.Pod, q Query) []string {
	var out []string
	for i := range pods {
		if !q.InScope(pods[i].Namespace) {
			continue
		}
		if a, ok := ParseAgent(&pods[i]); ok {
			out = append(out, a.Namespace)
		}
	}
	return out
}

func prototypeNamespacesOf(vms []kubevirtv1.VirtualMachine) []string {
	var out []string
	for i := range vms {
		if IsDerived(&vms[i]) {
			out = append(out, OriginOf(&vms[i]).PrototypeNamespace)
		}
	}
	return out
}

// sortedSet returns the distinct, non-empty names not yet in seen, sorted,
// and marks them seen.
func sortedSet(names []string, seen map[string]bool) []string {
	var fresh []string
	for _, n := range names {
		if n != "" && !seen[n] {
			seen[n] = true
			fresh = append(fresh, n)
		}
	}
	slices.Sort(fresh)
	return fresh
}

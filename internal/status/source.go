package status

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/revision"
)

// launcherSelector selects KubeVirt's launcher Pods.
const launcherSelector = kubevirtv1.AppLabel + "=virt-launcher"

// role says what a source's objects are to Pair.
type role int

const (
	// roleAgents are agent Pods, selected by scaffold's labels: each is a row.
	roleAgents role = iota
	// roleOwners are Pods found by the identity a derived VM records,
	// whatever their labels: they only pair with their VMs.
	roleOwners
	// roleDerived are derived VMs, selected by vmctl's labels.
	roleDerived
	// roleVMIs are the derived VMs' instances, selected by vmctl's labels.
	roleVMIs
	// rolePrototypes are the VMs that derived VMs name as their prototype.
	rolePrototypes
	// roleLaunchers are the derived VMs' launcher Pods, selected by the
	// labels KubeVirt gives them and copies from the VMI.
	roleLaunchers
	// roleClaims are the PersistentVolumeClaims of the namespaces whose
	// agents use their Pod's own claims (--replica-claims).
	roleClaims
	// roleStores are the revision stores of the namespaces whose agent
	// Pods pin a VM revision.
	roleStores
	// roleEvents are the Warning Events agents recorded on their Pods,
	// selected by field (agentEventSelector).
	roleEvents
)

// source is what one paged LIST reads in Load and one informer follows in
// Watch: the objects of role in namespace ("" for all namespaces), narrowed
// to the object called name when name is set.
type source struct {
	role      role
	namespace string
	name      string
}

func (s source) resource() string {
	switch s.role {
	case roleAgents, roleOwners, roleLaunchers:
		return "pods"
	case roleVMIs:
		return "virtualmachineinstances"
	case roleClaims:
		return "persistentvolumeclaims"
	case roleStores:
		return revision.StoreResource
	case roleEvents:
		return "events"
	}
	return "virtualmachines"
}

// slim is what is kept of s's objects: prototypes whole but for their
// status, whose revision hash reads their whole spec (Revisions), of the
// revision stores which revisions they hold rewritten (slimStore), and of
// the others what Pair reads (kube.Slim).
func (s source) slim(obj any) (any, error) {
	switch s.role {
	case rolePrototypes:
		return kube.SlimPrototype(obj)
	case roleStores:
		return slimStore(obj)
	}
	return slim(obj)
}

// String names the source in errors: `pods in namespace "x"`, `pods named
// "a" in namespace "x"`.
func (s source) String() string {
	return kube.Describe(s.resource(), s.namespace, s.name)
}

// listOptions narrows a LIST or WATCH of s's resource to s.
func (s source) listOptions(q Query) metav1.ListOptions {
	var o metav1.ListOptions
	switch s.role {
	case roleAgents:
		o.LabelSelector = contract.AgentSelector
		if q.PodSelector != "" {
			o.LabelSelector += "," + q.PodSelector
		}
	case roleDerived:
		o.LabelSelector = derive.Selector(q.Prototype)
	case roleVMIs:
		o.LabelSelector = contract.LabelPrototype
		if q.Prototype != "" {
			o.LabelSelector = derive.PrototypeSelector(q.Prototype)
		}
	case roleLaunchers:
		o.LabelSelector = launcherSelector + "," + contract.LabelPrototype
		if q.Prototype != "" {
			o.LabelSelector = launcherSelector + "," + derive.PrototypeSelector(q.Prototype)
		}
	case roleStores:
		o.LabelSelector = revision.StoreSelector
	case roleEvents:
		o.FieldSelector = agentEventSelector
	}
	return kube.NameOptions(o, s.name)
}

// needs returns every source an Inventory of q needs, given what inv holds
// so far: the agents, derived VMs and their instances of q's namespace; the
// VMs and instances of the namespaces q's agents put their VMs in; the
// launcher Pods of those namespaces when an agent Pod holds its VM's room;
// the claims of q's namespace when an agent uses its Pod's own; its
// revision stores when an agent Pod pins a VM revision; and,
// read by name, the Pod each derived VM records (unless a Pod selector
// narrows what is shown, or an agent Pod already pairs with it) and the
// prototype it records. Load and Watch read sources until needs asks for
// no new one.
func needs(q Query, inv *Inventory) []source {
	out := []source{{roleDerived, q.Namespace, ""}, {roleVMIs, q.Namespace, ""}, {roleAgents, q.Namespace, ""}}
	reserving := slices.ContainsFunc(inv.Pods, func(p *corev1.Pod) bool { return p.Annotations[contract.AnnotationReservation] != "" })
	if reserving {
		out = append(out, source{roleLaunchers, q.Namespace, ""})
	}
	if q.Namespace != "" {
		for _, ns := range sortedSet(vmNamespacesOf(inv.Pods, q), map[string]bool{q.Namespace: true}) {
			out = append(out, source{roleDerived, ns, ""}, source{roleVMIs, ns, ""})
			if reserving {
				out = append(out, source{roleLaunchers, ns, ""})
			}
		}
	}
	agents := make(map[types.NamespacedName]bool, len(inv.Pods))
	for _, p := range inv.Pods {
		agents[types.NamespacedName{Namespace: p.Namespace, Name: string(p.UID)}] = true
	}
	var owners, protos []types.NamespacedName
	for _, vm := range inv.VMs {
		if !derive.IsAgentVM(vm) {
			continue
		}
		o := derive.OriginOf(vm)
		protos = append(protos, o.Prototype())
		// Out-of-scope VMs show only beside an in-scope agent, which pairs.
		if q.PodSelector == "" && q.InScope(vm.Namespace) && !agents[types.NamespacedName{Namespace: o.PodNamespace, Name: string(o.PodUID)}] {
			owners = append(owners, o.Pod())
		}
	}
	if slices.ContainsFunc(inv.Pods, usesReplicaClaims) {
		out = append(out, source{roleClaims, q.Namespace, ""})
	}
	if slices.ContainsFunc(inv.Pods, func(p *corev1.Pod) bool { return p.Annotations[contract.AnnotationVMRevision] != "" }) {
		out = append(out, source{roleStores, q.Namespace, ""})
	}
	out = append(out, byName(roleOwners, owners, q.Namespace == "")...)
	return append(out, byName(rolePrototypes, protos, q.Namespace == "")...)
}

// thenNeeds returns the source Load and Watch read once every source needs
// asks for is in: the agents' Warning Events of q's namespace (or of all),
// when an agent Pod lacks its VM (lacksVM), so that status says why. Read
// last, so that a VM in another namespace that has yet to be read does not
// count as missing.
func thenNeeds(q Query, inv *Inventory) []source {
	if !lacksVM(q, inv) {
		return nil
	}
	return []source{{roleEvents, q.Namespace, ""}}
}

// byName returns the sources of role r that read the objects keys name
// (see kube.ListsByName).
func byName(r role, keys []types.NamespacedName, allNamespaces bool) []source {
	var out []source
	for _, l := range kube.ListsByName(keys, allNamespaces) {
		out = append(out, source{r, l.Namespace, l.Name})
	}
	return out
}

// pending returns the sources of want that have does not hold or cover: a
// source of all namespaces covers its role everywhere, and one of a whole
// namespace covers the names in it.
func pending(want []source, have map[source]bool) []source {
	var out []source
	seen := map[source]bool{}
	for _, s := range want {
		if seen[s] || have[s] || have[source{s.role, "", ""}] || (s.name != "" && have[source{s.role, s.namespace, ""}]) {
			continue
		}
		seen[s] = true
		out = append(out, s)
	}
	return out
}

// builder collects what sources read into an Inventory, once per object and
// role however many sources read it.
type builder struct {
	inv  *Inventory
	seen map[role]map[types.NamespacedName]bool
}

func newBuilder(q Query) *builder {
	return &builder{inv: &Inventory{Query: q}, seen: map[role]map[types.NamespacedName]bool{}}
}

// add files obj, a slim copy (see Slim) that no one changes, under role r.
func (b *builder) add(r role, obj any) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	k := types.NamespacedName{Namespace: m.GetNamespace(), Name: m.GetName()}
	if b.seen[r] == nil {
		b.seen[r] = map[types.NamespacedName]bool{}
	}
	if b.seen[r][k] {
		return
	}
	b.seen[r][k] = true
	switch r {
	case roleAgents:
		b.inv.Pods = append(b.inv.Pods, obj.(*corev1.Pod))
	case roleOwners:
		b.inv.OwnerPods = append(b.inv.OwnerPods, obj.(*corev1.Pod))
	case roleDerived:
		b.inv.VMs = append(b.inv.VMs, obj.(*kubevirtv1.VirtualMachine))
	case roleVMIs:
		b.inv.VMIs = append(b.inv.VMIs, obj.(*kubevirtv1.VirtualMachineInstance))
	case rolePrototypes:
		b.inv.Prototypes = append(b.inv.Prototypes, obj.(*kubevirtv1.VirtualMachine))
	case roleLaunchers:
		b.inv.Launchers = append(b.inv.Launchers, obj.(*corev1.Pod))
	case roleClaims:
		b.inv.Claims = append(b.inv.Claims, obj.(*corev1.PersistentVolumeClaim))
	case roleStores:
		b.inv.Stores = append(b.inv.Stores, obj.(*unstructured.Unstructured))
	case roleEvents:
		b.inv.Events = append(b.inv.Events, obj.(*corev1.Event))
	}
}

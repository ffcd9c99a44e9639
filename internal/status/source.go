package status

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
)

// MaxByName is how many objects of one role a namespace may need by name
// (one LIST narrowed to metadata.name each, or with --watch one informer
// each) before one LIST of the whole namespace reads them instead. A LIST
// narrowed to a name costs the API server what a GET does; a LIST of the
// namespace costs what its every object does, which at 10,000 objects
// outweighs 50 narrowed LISTs many times over (see docs/benchmarks.md).
// When all namespaces are shown and more than MaxByName sources would be
// needed, one LIST over all namespaces serves instead.
const MaxByName = 50

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
	case roleAgents, roleOwners:
		return "pods"
	case roleVMIs:
		return "virtualmachineinstances"
	}
	return "virtualmachines"
}

// String names the source in errors: `pods in namespace "x"`, `pods named
// "a" in namespace "x"`.
func (s source) String() string {
	what := s.resource()
	if s.name != "" {
		what += fmt.Sprintf(" named %q", s.name)
	}
	return what + where(s.namespace)
}

// listOptions narrows a LIST or WATCH of s's resource to s.
func (s source) listOptions(q Query) metav1.ListOptions {
	var o metav1.ListOptions
	switch s.role {
	case roleAgents:
		o.LabelSelector = AgentSelector
		if q.PodSelector != "" {
			o.LabelSelector += "," + q.PodSelector
		}
	case roleDerived:
		o.LabelSelector = DerivedSelector(q.Prototype)
	case roleVMIs:
		o.LabelSelector = derive.LabelPrototype
		if q.Prototype != "" {
			o.LabelSelector = derive.PrototypeSelector(q.Prototype)
		}
	}
	if s.name != "" {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", s.name).String()
	}
	return o
}

// DerivedSelector is the label selector of the VMs derived from prototype,
// or of every derived VM when prototype is empty. Confirm each match with
// IsDerived.
func DerivedSelector(prototype string) string {
	if prototype == "" {
		return derive.DerivedSelector
	}
	return derive.PrototypeSelector(prototype) + "," + derive.LabelPod
}

// needs returns every source an Inventory of q needs, given what inv holds
// so far: the agents, derived VMs and their instances of q's namespace; the
// VMs and instances of the namespaces q's agents put their VMs in; and,
// read by name, the Pod each derived VM records (unless a Pod selector
// narrows what is shown, or an agent Pod already pairs with it) and the
// prototype it records. Load and Watch read sources until needs asks for
// no new one.
func needs(q Query, inv *Inventory) []source {
	out := []source{{roleDerived, q.Namespace, ""}, {roleVMIs, q.Namespace, ""}, {roleAgents, q.Namespace, ""}}
	if q.Namespace != "" {
		for _, ns := range sortedSet(vmNamespacesOf(inv.Pods, q), map[string]bool{q.Namespace: true}) {
			out = append(out, source{roleDerived, ns, ""}, source{roleVMIs, ns, ""})
		}
	}
	agents := make(map[Key]bool, len(inv.Pods))
	for _, p := range inv.Pods {
		agents[Key{p.Namespace, string(p.UID)}] = true
	}
	var owners, protos []Key
	for _, vm := range inv.VMs {
		if !IsDerived(vm) {
			continue
		}
		o := OriginOf(vm)
		protos = append(protos, Key{o.PrototypeNamespace, o.PrototypeName})
		// Out-of-scope VMs show only beside an in-scope agent, which pairs.
		if q.PodSelector == "" && q.InScope(vm.Namespace) && !agents[Key{o.PodNamespace, string(o.PodUID)}] {
			owners = append(owners, Key{o.PodNamespace, o.PodName})
		}
	}
	out = append(out, byName(roleOwners, owners, q.Namespace == "")...)
	return append(out, byName(rolePrototypes, protos, q.Namespace == "")...)
}

// byName returns the sources that read the objects keys name: one per name,
// or one per namespace for a namespace of more than MaxByName names, or,
// with allNamespaces, one over all namespaces when that still makes more
// than MaxByName sources. Sources come sorted; keys may repeat.
func byName(r role, keys []Key, allNamespaces bool) []source {
	names := map[string]map[string]bool{}
	for _, k := range keys {
		if k.Namespace == "" || k.Name == "" {
			continue
		}
		if names[k.Namespace] == nil {
			names[k.Namespace] = map[string]bool{}
		}
		names[k.Namespace][k.Name] = true
	}
	var out []source
	for _, ns := range sortedKeys(names) {
		if len(names[ns]) > MaxByName {
			out = append(out, source{r, ns, ""})
			continue
		}
		for _, name := range sortedKeys(names[ns]) {
			out = append(out, source{r, ns, name})
		}
	}
	if allNamespaces && len(out) > MaxByName {
		return []source{{r, "", ""}}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
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
	seen map[role]map[Key]bool
}

func newBuilder(q Query) *builder {
	return &builder{inv: &Inventory{Query: q}, seen: map[role]map[Key]bool{}}
}

// add files obj, a slim copy (see Slim) that no one changes, under role r.
func (b *builder) add(r role, obj any) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	k := Key{m.GetNamespace(), m.GetName()}
	if b.seen[r] == nil {
		b.seen[r] = map[Key]bool{}
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
	}
}

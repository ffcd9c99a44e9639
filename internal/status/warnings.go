package status

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/revision"
)

// Warning is something that holds for a whole prototype, or a whole
// workload of it, not for one of its rows: status says it once per
// prototype or workload, as kubectl says a server's warnings, rather than
// in the PROBLEM column of every row.
type Warning struct {
	PrototypeNamespace string
	Prototype          string
	// Workload, when set, is the workload of the prototype that Message
	// is about, as kubectl names it ("deployment.apps/web"), and its
	// namespace where that is not the prototype's.
	Workload string
	Message  string
}

// String is the warning as status prints it after "Warning: ".
func (w Warning) String() string {
	if w.Workload != "" {
		return w.Workload + " " + w.Message
	}
	return fmt.Sprintf("prototype %s/%s: %s", w.PrototypeNamespace, w.Prototype, w.Message)
}

// Warnings says, for each prototype of inv that one of rows shows, what
// holds for all its VMs: that its guest may outlive an agent Pod of it
// (derive.GracePeriodTooShort), judged by the shortest delete timeout among
// its agent Pods, which differ while a rollout changes the grace period;
// and that it asks for an evictionStrategy its VMs do not run with
// (derive.EvictionStrategyOverridden); and that KubeVirt reports another
// memory overhead for one of its VMs than vmctl's rule computes, so its
// agent Pods hold the wrong room (overheadWarning). Then, of each workload
// whose agent Pods pin VM revisions of a prototype, none the one it would
// pin now (inv.Revisions), that the prototype has changed since
// (revision.Unrolled). They are sorted by prototype, its own first, then by
// workload.
func Warnings(inv *Inventory, rows []Row) []Warning {
	shown := map[types.NamespacedName]bool{}
	for _, r := range rows {
		shown[types.NamespacedName{Namespace: r.PrototypeNamespace, Name: r.Prototype}] = true
	}
	shortest := map[types.NamespacedName]time.Duration{}
	for _, p := range inv.Pods {
		a, ok := contract.ParseAgent(p)
		if !ok {
			continue
		}
		k := types.NamespacedName{Namespace: a.PrototypeNamespace, Name: a.Prototype}
		if d, seen := shortest[k]; !seen || contract.DeleteTimeout(p) < d {
			shortest[k] = contract.DeleteTimeout(p)
		}
	}
	var out []Warning
	for _, proto := range inv.Prototypes {
		k := types.NamespacedName{Namespace: proto.Namespace, Name: proto.Name}
		if !shown[k] {
			continue
		}
		say := func(msg string) {
			if msg != "" {
				out = append(out, Warning{PrototypeNamespace: k.Namespace, Prototype: k.Name, Message: msg})
			}
		}
		if d, ok := shortest[k]; ok {
			say(derive.GracePeriodTooShort(proto, d))
		}
		say(derive.EvictionStrategyOverridden(proto))
		say(overheadWarning(inv, k))
	}
	out = append(out, unrolled(inv)...)
	slices.SortStableFunc(out, func(a, b Warning) int {
		return cmp.Or(cmp.Compare(a.PrototypeNamespace, b.PrototypeNamespace), cmp.Compare(a.Prototype, b.Prototype),
			cmp.Compare(a.Workload, b.Workload))
	})
	return out
}

// unrolled is the warning, for each workload whose live agent Pods inv
// shows pin VM revisions of a prototype, none of them the one it would
// pin now, that the prototype has changed since. A workload with one Pod
// of that revision is rolling it out (or back from it): no warning.
func unrolled(inv *Inventory) []Warning {
	type workload struct {
		namespace, name string
		proto           types.NamespacedName
	}
	pinned := map[workload]map[string]bool{}
	for _, p := range inv.Pods {
		a, shown := shownAgent(inv.Query, p)
		name, isWorkload := workloadOf(p)
		hash := p.Annotations[contract.AnnotationVMRevision]
		if !shown || !isWorkload || hash == "" || p.DeletionTimestamp != nil {
			continue
		}
		w := workload{p.Namespace, name, types.NamespacedName{Namespace: a.PrototypeNamespace, Name: a.Prototype}}
		if pinned[w] == nil {
			pinned[w] = map[string]bool{}
		}
		pinned[w][hash] = true
	}
	var out []Warning
	for w, hashes := range pinned {
		now, ok := inv.Revisions[w.proto]
		if !ok || hashes[now] {
			continue
		}
		var namespace string // named where the current one is not it
		if inv.Query.Namespace == "" {
			namespace = w.namespace
		}
		name := w.name
		if w.namespace != w.proto.Namespace {
			name += " in " + w.namespace + " namespace"
		}
		out = append(out, Warning{PrototypeNamespace: w.proto.Namespace, Prototype: w.proto.Name, Workload: name,
			Message: revision.Unrolled(slices.Sorted(maps.Keys(hashes)), w.proto, now, namespace)})
	}
	return out
}

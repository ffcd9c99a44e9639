package status

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
)

// Warning is something that holds for a whole prototype, not for one of its
// rows: status says it once per prototype, as kubectl says a server's
// warnings, rather than in the PROBLEM column of every row.
type Warning struct {
	PrototypeNamespace string
	Prototype          string
	Message            string
}

// String is the warning as status prints it after "Warning: ".
func (w Warning) String() string {
	return fmt.Sprintf("prototype %s/%s: %s", w.PrototypeNamespace, w.Prototype, w.Message)
}

// Warnings says, for each prototype of inv that one of rows shows, what
// holds for all its VMs: that its guest may outlive an agent Pod of it
// (derive.GracePeriodTooShort), judged by the shortest delete timeout among
// its agent Pods, which differ while a rollout changes the grace period;
// that it asks for an evictionStrategy its VMs do not run with
// (derive.EvictionStrategyOverridden); and that KubeVirt reports another
// memory overhead for one of its VMs than vmctl's rule computes, so its
// agent Pods hold the wrong room (overheadWarning). They are sorted by
// prototype.
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
	slices.SortStableFunc(out, func(a, b Warning) int {
		return cmp.Or(cmp.Compare(a.PrototypeNamespace, b.PrototypeNamespace), cmp.Compare(a.Prototype, b.Prototype))
	})
	return out
}

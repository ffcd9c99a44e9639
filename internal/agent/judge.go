package agent

import (
	"fmt"

	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
)

// verdict is what the agent does with a VM already holding the derived name.
type verdict int

const (
	// adopt: the VM was made for this very Pod (a restarted agent container).
	adopt verdict = iota
	// replace: vmctl made it for an earlier Pod of the same name and
	// prototype, which is gone; the name is ours now.
	replace
	// refuse: someone else's VM. Never touch it.
	refuse
)

func (v verdict) String() string {
	switch v {
	case adopt:
		return "adopt"
	case replace:
		return "replace"
	}
	return "refuse"
}

// judge decides what to do with existing, found where the VM that pod derives
// from the prototype protoNamespace/proto should be, and says why.
func judge(existing *kubevirtv1.VirtualMachine, pod Identity, protoNamespace, proto string) (verdict, string) {
	ref := existing.Namespace + "/" + existing.Name
	o := derive.OriginOf(existing)
	switch {
	case !derive.IsDerived(existing):
		return refuse, fmt.Sprintf("VM %s exists and was not made by vmctl; vmctl will not touch it: rename or delete it, or rename the prototype", ref)
	case !derive.IsDerivedFrom(existing, protoNamespace, proto):
		return refuse, fmt.Sprintf("VM %s was derived from prototype %s, not %s/%s; delete it if that prototype's Pod is gone",
			ref, o.Prototype(), protoNamespace, proto)
	case o.PodName != pod.PodName || o.PodNamespace != pod.PodNamespace:
		return refuse, fmt.Sprintf("VM %s belongs to Pod %s; delete it if that Pod is gone", ref, o.Pod())
	case o.PodUID == pod.PodUID:
		return adopt, fmt.Sprintf("Adopted VM %s, made earlier for this Pod", ref)
	}
	return replace, fmt.Sprintf("VM %s was made for an earlier Pod %s/%s (uid %s); replacing it",
		ref, pod.PodNamespace, pod.PodName, o.PodUID)
}

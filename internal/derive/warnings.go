package derive

import (
	"fmt"
	"time"

	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
)

// The warnings below hold for a whole prototype, whichever Pod derives from
// it. scaffold says them as it writes the manifests, status once per
// prototype, and each agent logs them once; none is an Event, which a
// thousand agents would record a thousand times. Each reads after
// "prototype NAMESPACE/NAME: ".

// GracePeriodTooShort says why vm's guest may outlive an agent Pod whose
// agent waits deleteTimeout (its --delete-timeout) for the VM to go, or ""
// when the guest's grace period and ShutdownSlack fit into it. vm is a
// prototype or a VM derived from it: both carry the guest's grace period.
func GracePeriodTooShort(vm *kubevirtv1.VirtualMachine, deleteTimeout time.Duration) string {
	guest := GuestGracePeriod(vm)
	if guest+ShutdownSlack <= deleteTimeout {
		return ""
	}
	need := int64((guest + ShutdownSlack + contract.DeleteMargin) / time.Second)
	return fmt.Sprintf("its guest gets %v to shut down (spec.template.spec.terminationGracePeriodSeconds), "+
		"but the agent waits at most %v for the VM to go (--delete-timeout, the Pod's grace period less %v), "+
		"so the VM may outlive its Pod; give the agent Pods a grace period of %ds or more "+
		"(kubectl vmctl scaffold --grace-period %[4]d), or shorten the guest's",
		guest, deleteTimeout, contract.DeleteMargin, need)
}

// EvictionStrategyOverridden says that proto asks for an evictionStrategy
// other than the External one every derived VM runs with (see VM), or ""
// when it asks for none or for External.
func EvictionStrategyOverridden(proto *kubevirtv1.VirtualMachine) string {
	t := proto.Spec.Template
	if t == nil || t.Spec.EvictionStrategy == nil || *t.Spec.EvictionStrategy == kubevirtv1.EvictionStrategyExternal {
		return ""
	}
	return fmt.Sprintf("it asks for evictionStrategy %s, but its VMs run with External, so that a drain waits for their agent Pods "+
		"(a VM pinned to its Pod's node cannot migrate)", *t.Spec.EvictionStrategy)
}

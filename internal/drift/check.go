package drift

import (
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
)

// Check is the outcome for one derived VM: a Result, or Err when it could
// not be compared (prototype gone, derivation failed).
type Check struct {
	Result
	// Prototype is the prototype the VM records, as namespace/name.
	Prototype types.NamespacedName
	// Generation is the prototype's metadata.generation it was compared with.
	Generation int64
	Err        error
}

// CheckVM re-derives live, a derived VM (derive.IsAgentVM), with derive.VM
// from proto, the prototype it records as it is now (nil when it is gone),
// for the Pod identity live records, and compares.
func CheckVM(live, proto *kubevirtv1.VirtualMachine) Check {
	o := derive.OriginOf(live)
	c := Check{
		Result:    Result{Namespace: live.Namespace, Name: live.Name},
		Prototype: o.Prototype(),
	}
	if proto == nil {
		c.Err = fmt.Errorf("prototype %s not found; restore it, or delete the VM's agent Pod", c.Prototype)
		return c
	}
	c.Generation = proto.Generation
	derived, err := derive.VM(proto, derive.Pod{
		Name: o.PodName, Namespace: o.PodNamespace, UID: o.PodUID, Node: o.Node,
	}, derive.Options{
		Namespace: live.Namespace,
		// The VM may be named by an older rule than Name's: its data
		// volumes and hostname follow its own name.
		Name: live.Name,
		// The agent already decided about shared volumes when it made the
		// VM; diff compares, it does not judge again.
		AllowSharedVolumes: true,
		Subdomain:          live.Labels[contract.LabelSubdomain],
		// The agent's choice, as the VM records it.
		LauncherPriorityClass: live.Annotations[contract.AnnotationLauncherPriorityClass],
	})
	if err != nil {
		c.Err = fmt.Errorf("derive from prototype %s: %w", c.Prototype, err)
		return c
	}
	from := fmt.Sprintf("%s, generation %d", c.Prototype, proto.Generation)
	if c.Result, err = Compare(live, derived, from); err != nil {
		c.Err = err
	}
	return c
}

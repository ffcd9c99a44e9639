package drift

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	kubevirtv1 "kubevirt.io/api/core/v1"
	"kubevirt.io/client-go/kubevirt"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/status"
)

// Check is the outcome for one derived VM: a Result, or Err when it could
// not be compared (prototype gone, derivation failed).
type Check struct {
	Result
	// Prototype is the prototype the VM records, as namespace/name.
	Prototype status.Key
	// Generation is the prototype's metadata.generation it was compared with.
	Generation int64
	Err        error
}

// CheckAll re-derives every derived VM in vms with derive.VM, from its
// prototype (looked up among vms, which must hold the prototypes too) and
// the Pod identity the VM records, and compares. With prototype set, only
// VMs of that prototype name are checked. namespace, when set, limits the
// checked VMs to it; VMs of other namespaces serve as prototypes only.
// Checks are sorted by namespace and name.
func CheckAll(vms []kubevirtv1.VirtualMachine, namespace, prototype string) []Check {
	protos := map[status.Key]*kubevirtv1.VirtualMachine{}
	for i := range vms {
		if !derive.IsDerived(&vms[i]) {
			protos[status.Key{Namespace: vms[i].Namespace, Name: vms[i].Name}] = &vms[i]
		}
	}
	var out []Check
	for i := range vms {
		live := &vms[i]
		if !status.IsDerived(live) || (namespace != "" && live.Namespace != namespace) {
			continue
		}
		o := status.OriginOf(live)
		if prototype != "" && o.PrototypeName != prototype {
			continue
		}
		out = append(out, check(live, o, protos))
	}
	slices.SortFunc(out, func(a, b Check) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return out
}

func check(live *kubevirtv1.VirtualMachine, o status.Origin, protos map[status.Key]*kubevirtv1.VirtualMachine) Check {
	c := Check{
		Result:    Result{Namespace: live.Namespace, Name: live.Name},
		Prototype: status.Key{Namespace: o.PrototypeNamespace, Name: o.PrototypeName},
	}
	proto := protos[c.Prototype]
	if proto == nil {
		c.Err = fmt.Errorf("prototype %s not found; restore it, or delete the VM's agent Pod", c.Prototype)
		return c
	}
	c.Generation = proto.Generation
	derived, err := derive.VM(proto, derive.Pod{
		Name: o.PodName, Namespace: o.PodNamespace, UID: o.PodUID, Node: o.Node,
	}, derive.Options{
		Namespace: live.Namespace,
		// The agent already decided about shared volumes when it made the
		// VM; diff compares, it does not judge again.
		AllowSharedVolumes: true,
		Subdomain:          live.Labels[derive.LabelSubdomain],
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

// Load lists what CheckAll needs with one paged LIST of VirtualMachines in
// namespace ("" for all): derived VMs and prototypes alike. Prototypes in
// other namespaces cost one LIST per such namespace.
func Load(ctx context.Context, c kubevirt.Interface, namespace string) ([]kubevirtv1.VirtualMachine, error) {
	vms, err := status.ListVMs(ctx, c, namespace, "")
	if err != nil || namespace == "" {
		return vms, err
	}
	var others []string
	for i := range vms {
		if !status.IsDerived(&vms[i]) {
			continue
		}
		if ns := status.OriginOf(&vms[i]).PrototypeNamespace; ns != "" && ns != namespace && !slices.Contains(others, ns) {
			others = append(others, ns)
		}
	}
	slices.Sort(others)
	for _, ns := range others {
		more, err := status.ListVMs(ctx, c, ns, "")
		if err != nil {
			return nil, err
		}
		vms = append(vms, more...)
	}
	return vms, nil
}

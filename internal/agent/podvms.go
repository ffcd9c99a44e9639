package agent

import (
	"context"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
)

// The agent finds its Pod's VM once, by label, and then follows it by name.
//
// The Pod's record (record.go) names the VM an agent of the Pod made. With
// no record to trust, the first look lists the VMs labelled for its Pod
// (derive.PodSelector) instead. Either way a restarted agent container
// finds the VM it made under whatever name an agent gave it, and
// recognises it by the Pod it records (judge), never by recomputing its
// name, so a VM named by an older name rule is still the Pod's. From then
// on only this agent makes VMs for its Pod.
//
// It follows the one VM it holds or is about to make with a watch narrowed
// to its name (kube.ByName). The API server's watch cache hands a watch
// narrowed to a name only that object's events; a watch narrowed by labels
// alone gets every event of the namespace to filter, so a thousand agents
// following their VMs by label would cost the API server a thousand times
// each VM's every change.

// ownVM follows the Pod's VM by name, from the agent's first look until the
// shutdown's final deadline: the shutdown waits on it for the VM to go.
type ownVM struct {
	name  string
	f     *kube.Follower
	store *kube.Store
	stop  context.CancelFunc
}

// followOwn makes the agent follow the VM called name, in its namespace, as
// its Pod's, until the shutdown's final deadline; it stops following the
// one it followed before, if another.
func (a *Agent) followOwn(name string) *ownVM {
	if a.own != nil && a.own.name == name {
		return a.own
	}
	if a.own != nil {
		a.own.stop()
	}
	ctx, stop := context.WithCancel(a.final)
	f, store := a.followVMs(ctx, kube.ByName(name))
	a.own = &ownVM{name: name, f: f, store: store, stop: stop}
	return a.own
}

// followVMs follows the VMs of the agent's namespace that sel selects.
func (a *Agent) followVMs(ctx context.Context, sel kube.Selector) (*kube.Follower, *kube.Store) {
	list, watchFn := a.vmsOf(a.cfg.Namespace, sel)
	return a.followSet(ctx, &kubevirtv1.VirtualMachine{}, list, watchFn)
}

// findMade returns the VM an agent made for the Pod before, under any name,
// from one list of the VMs labelled for the Pod (a streaming list, closed
// once in); nil when there is none. It waits for that list, telling
// onDenied of every refusal, and returns an error only when ctx ends first.
func (a *Agent) findMade(ctx context.Context, name string, onDenied func(error) (stop bool)) (*kubevirtv1.VirtualMachine, error) {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	f, store := a.followVMs(ctx, kube.Selector{Label: derive.PodSelector(a.pod.PodName)})
	var mine *kubevirtv1.VirtualMachine
	err := waitFollowed(ctx, f, onDenied, func() bool {
		mine = made(store.List(), a.pod, a.cfg.PrototypeNamespace, a.cfg.Prototype, name)
		return true
	})
	return mine, err
}

// follows reports whether vm is the one followed.
func (o *ownVM) follows(vm *kubevirtv1.VirtualMachine, namespace string) bool {
	return vm.Namespace == namespace && vm.Name == o.name
}

// wait calls check, as waitFollowed does, with what the watch holds.
func (o *ownVM) wait(ctx context.Context, onDenied func(error) (stop bool), check func() (done bool)) error {
	return waitFollowed(ctx, o.f, onDenied, check)
}

// byUID returns the VM of uid as the watch holds it, and whether the watch
// has come as far as resourceVersion rv (the VM's as the agent made or
// adopted it): only then does a missing VM mean it is gone.
func (o *ownVM) byUID(uid types.UID, rv string) (vm *kubevirtv1.VirtualMachine, reached bool) {
	if !o.store.Reached(rv) {
		return nil, false
	}
	for _, obj := range o.store.List() {
		if vm := obj.(*kubevirtv1.VirtualMachine); vm.UID == uid {
			return vm, true
		}
	}
	return nil, true
}

// made returns, of vms, the VM an agent made for pod from the prototype
// protoNamespace/proto, under any name: judge's adopt. When there are
// several, which only a person copying one can bring about, it prefers the
// one named name, then the first by name.
func made(vms []any, pod Identity, protoNamespace, proto, name string) *kubevirtv1.VirtualMachine {
	var mine []*kubevirtv1.VirtualMachine
	for _, obj := range vms {
		vm := obj.(*kubevirtv1.VirtualMachine)
		if v, _ := judge(vm, pod, protoNamespace, proto); v == adopt {
			mine = append(mine, vm)
		}
	}
	slices.SortFunc(mine, func(x, y *kubevirtv1.VirtualMachine) int {
		if (x.Name == name) != (y.Name == name) {
			if x.Name == name {
				return -1
			}
			return 1
		}
		return strings.Compare(x.Name, y.Name)
	})
	if len(mine) == 0 {
		return nil
	}
	return mine[0]
}

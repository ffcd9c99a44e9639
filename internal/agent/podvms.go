package agent

import (
	"context"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
)

// podVMs follows the VMs labelled for the agent's Pod (derive.PodSelector)
// with one watch for the agent's whole life. Its first list tells the
// agent whether its Pod has a VM already, under whatever name an agent gave
// it; then it follows that VM. The agent recognises its VM by the Pod it
// records (judge), never by recomputing its name, so a VM named by an older
// name rule is still the Pod's.
type podVMs struct {
	f     *kube.Follower
	store *kube.Store
	sel   labels.Selector
}

// podVMs starts following the VMs labelled for the agent's Pod, once, until
// the shutdown's final deadline: the shutdown waits on it for the VM to go.
func (a *Agent) podVMs(ctx context.Context) *podVMs {
	if a.own != nil {
		return a.own
	}
	if a.final != nil {
		ctx = a.final
	}
	sel := kube.Selector{Label: derive.PodSelector(a.pod.PodName)}
	f, store := a.followSet(ctx, &kubevirtv1.VirtualMachine{},
		func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return a.vms.list(ctx, a.cfg.Namespace, sel, opts)
		},
		func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return a.vms.watch(ctx, a.cfg.Namespace, sel, opts)
		})
	a.own = &podVMs{f: f, store: store, sel: labels.Nothing()}
	if parsed, err := labels.Parse(sel.Label); err == nil {
		a.own.sel = parsed
	}
	return a.own
}

// follows reports whether vm is one the watch follows: labelled for the Pod.
func (p *podVMs) follows(vm *kubevirtv1.VirtualMachine) bool {
	return p.sel.Matches(labels.Set(vm.Labels))
}

// wait calls check, as waitFollowed does, with what the watch holds.
func (p *podVMs) wait(ctx context.Context, onDenied func(error) (stop bool), check func() (done bool)) error {
	return waitFollowed(ctx, p.f, onDenied, check)
}

// made returns the VM an agent made for pod from the prototype
// protoNamespace/proto, under any name: judge's adopt. When there are
// several, which only a person copying one can bring about, it prefers the
// one named name, then the first by name. Call it once the first list is in.
func (p *podVMs) made(pod Identity, protoNamespace, proto, name string) *kubevirtv1.VirtualMachine {
	var mine []*kubevirtv1.VirtualMachine
	for _, obj := range p.store.List() {
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

// byUID returns the VM of uid as the watch holds it, and whether the watch
// has come as far as resourceVersion rv (the VM's as the agent made or
// adopted it): only then does a missing VM mean it is gone.
func (p *podVMs) byUID(uid types.UID, rv string) (vm *kubevirtv1.VirtualMachine, reached bool) {
	if !p.store.Reached(rv) {
		return nil, false
	}
	for _, obj := range p.store.List() {
		if vm := obj.(*kubevirtv1.VirtualMachine); vm.UID == uid {
			return vm, true
		}
	}
	return nil, true
}

package rollout

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
)

// Watch follows the rollout of workloads, all of one prototype name, until
// report says stop (it returns nil then) or ctx ends (it returns ctx's
// error). It calls report with every workload's Progress once everything is
// read, and again after every change to what they depend on.
//
// Each workload costs two watches (itself by name, its Pods by its
// selector); the VMs one per namespace they are made in (by the
// prototype's label). No polling: nothing
// is computed that no event changed. A list or watch the API server refuses
// for good (kube.Refused) ends Watch with that error, rather than leaving
// the Reflectors to retry it without end.
func Watch(ctx context.Context, c kube.Clients, workloads []Workload, report func([]Progress) (stop bool)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	f := kube.NewFollower(ctx)
	kubeSet, virtSet := kube.FollowOptions{Client: c.Kube}, kube.FollowOptions{Client: c.KubeVirt}
	type followed struct{ self, pods cache.Store }
	var stores []followed
	vmStores := map[string]cache.Store{}
	for _, w := range workloads {
		k, err := kindOf(w.Object)
		if err != nil {
			return err
		}
		sel, err := w.selector()
		if err != nil {
			return err
		}
		ns := w.Meta().GetNamespace()
		self := k.client(c.Kube, ns).follow(kube.ByName(w.Meta().GetName()))
		pods := c.Kube.CoreV1().Pods(ns)
		stores = append(stores, followed{
			self: f.Follow(self, w.Object.DeepCopyObject(), kubeSet),
			pods: f.Follow(kube.ListWatch(pods, kube.Selector{Label: sel.String()}), &corev1.Pod{}, kubeSet),
		})
		if _, ok := vmStores[w.Agent.Namespace]; !ok {
			vms := c.KubeVirt.KubevirtV1().VirtualMachines(w.Agent.Namespace)
			vmStores[w.Agent.Namespace] = f.Follow(kube.ListWatch(vms, kube.Selector{Label: derive.PrototypeSelector(w.Agent.Prototype)}), &kubevirtv1.VirtualMachine{}, virtSet)
		}
	}
	progress := func() []Progress {
		var vms []kubevirtv1.VirtualMachine
		for _, s := range vmStores {
			for _, obj := range s.List() {
				vms = append(vms, *obj.(*kubevirtv1.VirtualMachine))
			}
		}
		out := make([]Progress, len(workloads))
		for i, w := range workloads {
			objs := stores[i].self.List()
			if len(objs) == 0 {
				out[i] = Progress{Err: fmt.Errorf("%s was deleted", w)}
				continue
			}
			w.Object = objs[0].(runtime.Object)
			var pods []corev1.Pod
			for _, obj := range stores[i].pods.List() {
				pods = append(pods, *obj.(*corev1.Pod))
			}
			out[i] = Observe(w, pods, vms)
		}
		return out
	}
	for {
		if f.Synced() && report(progress()) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-f.Errors():
			return err
		case <-f.Changed():
		}
	}
}

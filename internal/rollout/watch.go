package rollout

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
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
// prototype's label), and each prototype one (by name). No polling: nothing
// is computed that no event changed. A list or watch the API server refuses
// (RBAC, expired credentials) ends Watch with that error, rather than
// leaving the informers to retry it for good.
func Watch(ctx context.Context, c kube.Clients, workloads []Workload, report func([]Progress) (stop bool)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	changed := make(chan struct{}, 1)
	poke := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	denied := make(chan error, 1)
	var synced []cache.InformerSynced
	// client is lw's clientset: client-go's informers ask it whether it can
	// stream the first list (a fake clientset cannot), and so does follow.
	follow := func(client any, lw *cache.ListWatch, obj runtime.Object) cache.Store {
		store, ctrl := cache.NewInformerWithOptions(cache.InformerOptions{
			ListerWatcher: cache.ToListWatcherWithWatchListSemantics(guard(lw, denied), client),
			ObjectType:    obj,
			Handler: cache.ResourceEventHandlerFuncs{
				AddFunc:    func(any) { poke() },
				UpdateFunc: func(any, any) { poke() },
				DeleteFunc: func(any) { poke() },
			},
		})
		go ctrl.RunWithContext(ctx)
		synced = append(synced, ctrl.HasSynced)
		return store
	}

	type followed struct{ self, pods cache.Store }
	var stores []followed
	vmStores := map[string]cache.Store{}
	protoStores := map[types.NamespacedName]cache.Store{}
	for _, w := range workloads {
		sel, err := metav1.LabelSelectorAsSelector(w.Selector())
		if err != nil {
			return fmt.Errorf("%s has an invalid selector: %w", w, err)
		}
		ns := w.Meta().GetNamespace()
		stores = append(stores, followed{
			self: follow(c.Kube, workloadListWatch(c, w), w.Object.DeepCopyObject()),
			pods: follow(c.Kube, podListWatch(c, ns, sel.String()), &corev1.Pod{}),
		})
		if _, ok := vmStores[w.Agent.Namespace]; !ok {
			vmStores[w.Agent.Namespace] = follow(c.KubeVirt, vmListWatch(c, w.Agent.Namespace, derive.PrototypeSelector(w.Agent.Prototype), ""), &kubevirtv1.VirtualMachine{})
		}
		if k := w.Prototype(); protoStores[k] == nil {
			protoStores[k] = follow(c.KubeVirt, vmListWatch(c, k.Namespace, "", fields.OneTermEqualSelector("metadata.name", k.Name).String()), &kubevirtv1.VirtualMachine{})
		}
	}
	allSynced := make(chan struct{})
	go func() {
		if cache.WaitForCacheSync(ctx.Done(), synced...) {
			close(allSynced)
		}
	}()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case err := <-denied:
		return err
	case <-allSynced:
	}
	for {
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
			v := Missing
			k := w.Prototype()
			if obj, ok, _ := protoStores[k].GetByKey(k.String()); ok {
				proto := obj.(*kubevirtv1.VirtualMachine)
				v = Version{UID: proto.UID, Generation: proto.Generation}
			}
			out[i] = Observe(w, v, pods, vms)
		}
		if report(out) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-denied:
			return err
		case <-changed:
		}
	}
}

// guard passes on the first list or watch of lw that the API server refused
// for good (forbidden, unauthorized) to denied.
func guard(lw *cache.ListWatch, denied chan<- error) *cache.ListWatch {
	report := func(err error) error {
		if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
			select {
			case denied <- err:
			default: // one is being reported already
			}
		}
		return err
	}
	list, watchFn := lw.ListWithContextFunc, lw.WatchFuncWithContext
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			obj, err := list(ctx, opts)
			return obj, report(err)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			w, err := watchFn(ctx, opts)
			return w, report(err)
		},
	}
}

// workloadListWatch follows the one workload w, by name.
func workloadListWatch(c kube.Clients, w Workload) *cache.ListWatch {
	ns, name := w.Meta().GetNamespace(), w.Meta().GetName()
	narrow := func(opts metav1.ListOptions) metav1.ListOptions {
		opts.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
		return opts
	}
	apps := c.Kube.AppsV1()
	lw := &cache.ListWatch{}
	switch w.Object.(type) {
	case *appsv1.StatefulSet:
		lw.ListWithContextFunc = func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return apps.StatefulSets(ns).List(ctx, narrow(opts))
		}
		lw.WatchFuncWithContext = func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return apps.StatefulSets(ns).Watch(ctx, narrow(opts))
		}
	case *appsv1.DaemonSet:
		lw.ListWithContextFunc = func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return apps.DaemonSets(ns).List(ctx, narrow(opts))
		}
		lw.WatchFuncWithContext = func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return apps.DaemonSets(ns).Watch(ctx, narrow(opts))
		}
	default:
		lw.ListWithContextFunc = func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return apps.Deployments(ns).List(ctx, narrow(opts))
		}
		lw.WatchFuncWithContext = func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return apps.Deployments(ns).Watch(ctx, narrow(opts))
		}
	}
	return lw
}

func podListWatch(c kube.Clients, namespace, selector string) *cache.ListWatch {
	pods := c.Kube.CoreV1().Pods(namespace)
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.LabelSelector = selector
			return pods.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.LabelSelector = selector
			return pods.Watch(ctx, opts)
		},
	}
}

func vmListWatch(c kube.Clients, namespace, labelSelector, fieldSelector string) *cache.ListWatch {
	vms := c.KubeVirt.KubevirtV1().VirtualMachines(namespace)
	narrow := func(opts metav1.ListOptions) metav1.ListOptions {
		opts.LabelSelector, opts.FieldSelector = labelSelector, fieldSelector
		return opts
	}
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return vms.List(ctx, narrow(opts))
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return vms.Watch(ctx, narrow(opts))
		},
	}
}

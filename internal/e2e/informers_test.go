//go:build e2e

package e2e

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// vmInformer is an informer over the VirtualMachines of ns that match
// selector ("" for all): the typed KubeVirt clientset has no informers.
func vmInformer(ns, selector string) cache.SharedIndexInformer {
	client := e.virt.KubevirtV1().VirtualMachines(ns)
	return cache.NewSharedIndexInformer(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.LabelSelector = selector
			return client.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.LabelSelector = selector
			return client.Watch(ctx, opts)
		},
	}, &kubevirtv1.VirtualMachine{}, 0, cache.Indexers{})
}

// vmiInformer is an informer over the VirtualMachineInstances of ns.
func vmiInformer(ns string) cache.SharedIndexInformer {
	client := e.virt.KubevirtV1().VirtualMachineInstances(ns)
	return cache.NewSharedIndexInformer(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return client.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return client.Watch(ctx, opts)
		},
	}, &kubevirtv1.VirtualMachineInstance{}, 0, cache.Indexers{})
}

// onEach is an event handler that calls on with every object of type T
// added, updated (its new state) or deleted, the last state of a deletion
// the informer only learnt of by listing again (a tombstone) included.
func onEach[T runtime.Object](on func(obj T, deleted bool)) cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { on(obj.(T), false) },
		UpdateFunc: func(_, obj any) { on(obj.(T), false) },
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if o, ok := obj.(T); ok {
				on(o, true)
			}
		},
	}
}

package status

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
)

// Watch calls update with a fresh Inventory of q once Pods, VMs and VMIs are
// listed, again whenever one of them changes, and every tick (ages and grace
// periods move on without events), until ctx ends. A burst of events makes
// one call. It runs one informer per kind and namespace: all namespaces when
// q.Namespace is empty, else q.Namespace plus, as the Inventory comes to name
// them, the other namespaces its agents' VMs, Pods and prototypes live in.
func Watch(ctx context.Context, c Clients, q Query, tick time.Duration, update func(*Inventory) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the informers
	w := &watcher{c: c, q: q, changed: make(chan struct{}, 1), sources: map[source]*informer{}}
	w.ensure(ctx, kindVM, q.Namespace)
	w.ensure(ctx, kindVMI, q.Namespace)
	w.ensure(ctx, kindPod, q.Namespace)

	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
		case <-w.changed:
		case <-ticker.C:
		}
		if ctx.Err() != nil {
			return nil
		}
		if !w.synced() {
			continue
		}
		inv := w.snapshot()
		if w.ensureOthers(ctx, inv) {
			continue // wait for the new informers' first list
		}
		if err := update(inv); err != nil {
			return err
		}
	}
}

type kind int

const (
	kindPod kind = iota
	kindVM
	kindVMI
)

type source struct {
	kind      kind
	namespace string
}

type informer struct {
	store cache.Store
	ctrl  cache.Controller
}

type watcher struct {
	c       Clients
	q       Query
	changed chan struct{}

	mu      sync.Mutex
	sources map[source]*informer
}

// signal notes a change without blocking: one pending note is enough.
func (w *watcher) signal() {
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

// ensure starts the informer of kind in namespace unless it runs, and
// reports whether it started one.
func (w *watcher) ensure(ctx context.Context, k kind, namespace string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	src := source{k, namespace}
	if w.sources[src] != nil {
		return false
	}
	lw, obj := w.listWatch(k, namespace)
	store, ctrl := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: cache.ToListWatcherWithWatchListSemantics(lw, w.client(k)),
		ObjectType:    obj,
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { w.signal() },
			UpdateFunc: func(any, any) { w.signal() },
			DeleteFunc: func(any) { w.signal() },
		},
	})
	w.sources[src] = &informer{store: store, ctrl: ctrl}
	go ctrl.RunWithContext(ctx)
	go func() {
		// An empty list makes no event; say when the first list is in.
		if cache.WaitForCacheSync(ctx.Done(), ctrl.HasSynced) {
			w.signal()
		}
	}()
	return true
}

func (w *watcher) client(k kind) any {
	if k == kindPod {
		return w.c.Kube
	}
	return w.c.KubeVirt
}

func (w *watcher) listWatch(k kind, namespace string) (*cache.ListWatch, runtime.Object) {
	switch k {
	case kindPod:
		sel := AgentSelector
		if w.q.PodSelector != "" {
			sel += "," + w.q.PodSelector
		}
		pods := w.c.Kube.CoreV1().Pods(namespace)
		return &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				o.LabelSelector = sel
				return pods.List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				o.LabelSelector = sel
				return pods.Watch(ctx, o)
			},
		}, &corev1.Pod{}
	case kindVMI:
		sel := derive.LabelPrototype
		if w.q.Prototype != "" {
			sel = derive.PrototypeSelector(w.q.Prototype)
		}
		vmis := w.c.KubeVirt.KubevirtV1().VirtualMachineInstances(namespace)
		return &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				o.LabelSelector = sel
				return vmis.List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				o.LabelSelector = sel
				return vmis.Watch(ctx, o)
			},
		}, &kubevirtv1.VirtualMachineInstance{}
	}
	vms := w.c.KubeVirt.KubevirtV1().VirtualMachines(namespace)
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return vms.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return vms.Watch(ctx, o)
		},
	}, &kubevirtv1.VirtualMachine{}
}

func (w *watcher) synced() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, inf := range w.sources {
		if !inf.ctrl.HasSynced() {
			return false
		}
	}
	return true
}

// snapshot copies the informers' stores into an Inventory.
func (w *watcher) snapshot() *Inventory {
	w.mu.Lock()
	defer w.mu.Unlock()
	inv := &Inventory{Query: w.q}
	for src, inf := range w.sources {
		for _, obj := range inf.store.List() {
			switch src.kind {
			case kindPod:
				inv.Pods = append(inv.Pods, *obj.(*corev1.Pod))
			case kindVM:
				inv.VMs = append(inv.VMs, *obj.(*kubevirtv1.VirtualMachine))
			case kindVMI:
				inv.VMIs = append(inv.VMIs, *obj.(*kubevirtv1.VirtualMachineInstance))
			}
		}
	}
	return inv
}

// ensureOthers starts informers for the other namespaces inv names, as
// Load lists them, and reports whether it started any.
func (w *watcher) ensureOthers(ctx context.Context, inv *Inventory) bool {
	if w.q.Namespace == "" {
		return false
	}
	started := false
	start := func(k kind, namespaces []string) {
		for _, ns := range namespaces {
			// An empty namespace would be an informer over all namespaces.
			if ns != "" {
				started = w.ensure(ctx, k, ns) || started
			}
		}
	}
	start(kindPod, podNamespacesOf(inv.VMs))
	start(kindVM, vmNamespacesOf(inv.Pods, w.q))
	start(kindVMI, vmNamespacesOf(inv.Pods, w.q))
	start(kindVM, prototypeNamespacesOf(inv.VMs))
	return started
}

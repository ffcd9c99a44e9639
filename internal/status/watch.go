package status

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
)

// WatchOptions tune Watch.
type WatchOptions struct {
	// Refresh is how often update runs without events, so that ages and
	// grace periods move on.
	Refresh time.Duration
	// MinInterval is the least time between two updates: the events of a
	// burst, however many, make one update at most every MinInterval.
	MinInterval time.Duration
}

// Watch calls update with a fresh Inventory of q once its sources are
// listed, again when one of them changes and every opts.Refresh, until ctx
// ends, never more often than every opts.MinInterval. It follows the
// sources Load reads, one informer each (see needs): label-selected for
// agent Pods, derived VMs and their instances, narrowed to one name for the
// Pods and prototypes derived VMs record, and starts informers for more as
// the Inventory comes to need them.
//
// Watch returns the error Load would give when a LIST or WATCH fails before
// the first update, and later when the API server refuses one (forbidden,
// unauthorized, no such resource): an informer that cannot list would
// otherwise wait for its first list without end. Other failures later are
// retried by the informers, with backoff.
func Watch(ctx context.Context, c kube.Clients, q Query, opts WatchOptions, update func(*Inventory) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the informers
	w := &watcher{c: c, q: q, changed: make(chan struct{}, 1), sources: map[source]*informer{}}
	w.ensure(ctx, needs(q, &Inventory{Query: q}))

	ticker := time.NewTicker(opts.Refresh)
	defer ticker.Stop()
	var last time.Time
	var later <-chan time.Time // an update held back by MinInterval
	for {
		select {
		case <-ctx.Done():
		case <-w.changed:
		case <-ticker.C:
		case <-later:
			later = nil
		}
		if ctx.Err() != nil {
			return nil
		}
		if err := w.failure(); err != nil {
			return err
		}
		if !w.synced() {
			continue
		}
		if wait := opts.MinInterval - time.Since(last); wait > 0 {
			if later == nil {
				later = time.After(wait)
			}
			continue
		}
		inv := w.snapshot()
		if w.ensure(ctx, needs(q, inv)) {
			continue // wait for the new informers' first list
		}
		last = time.Now()
		w.updated.Store(true)
		if err := update(inv); err != nil {
			return err
		}
	}
}

type informer struct {
	store cache.Store
	ctrl  cache.Controller
}

type watcher struct {
	c       kube.Clients
	q       Query
	changed chan struct{}
	// updated is set once update ran: from then on only a refusal by the
	// API server ends Watch.
	updated atomic.Bool

	mu      sync.Mutex
	sources map[source]*informer
	err     error
}

// signal notes a change without blocking: one pending note is enough.
func (w *watcher) signal() {
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

// ensure starts an informer for each of want that none follows yet, and
// reports whether it started one.
func (w *watcher) ensure(ctx context.Context, want []source) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	have := make(map[source]bool, len(w.sources))
	for s := range w.sources {
		have[s] = true
	}
	fresh := pending(want, have)
	for _, src := range fresh {
		w.start(ctx, src)
	}
	return len(fresh) > 0
}

func (w *watcher) start(ctx context.Context, src source) {
	inf := &informer{}
	lw, obj, client := w.listWatch(ctx, src, inf)
	inf.store, inf.ctrl = cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: cache.ToListWatcherWithWatchListSemantics(lw, client),
		ObjectType:    obj,
		Transform:     kube.Slim,
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { w.signal() },
			UpdateFunc: func(any, any) { w.signal() },
			DeleteFunc: func(any) { w.signal() },
		},
	})
	w.sources[src] = inf
	go inf.ctrl.RunWithContext(ctx)
	go func() {
		// An empty list makes no event; say when the first list is in.
		if cache.WaitForCacheSync(ctx.Done(), inf.ctrl.HasSynced) {
			w.signal()
		}
	}()
}

// listWatch returns src's ListWatch, which records its failures (see
// fail), the type of its objects and the client that serves them.
func (w *watcher) listWatch(ctx context.Context, src source, inf *informer) (*cache.ListWatch, runtime.Object, any) {
	opts := src.listOptions(w.q)
	narrow := func(o metav1.ListOptions) metav1.ListOptions {
		o.LabelSelector, o.FieldSelector = opts.LabelSelector, opts.FieldSelector
		return o
	}
	var (
		list   func(context.Context, metav1.ListOptions) (runtime.Object, error)
		follow func(context.Context, metav1.ListOptions) (watch.Interface, error)
		obj    runtime.Object
		client any = w.c.KubeVirt
	)
	switch src.resource() {
	case "pods":
		pods := w.c.Kube.CoreV1().Pods(src.namespace)
		list = func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return pods.List(ctx, o) }
		follow, obj, client = pods.Watch, &corev1.Pod{}, w.c.Kube
	case "virtualmachineinstances":
		vmis := w.c.KubeVirt.KubevirtV1().VirtualMachineInstances(src.namespace)
		list = func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return vmis.List(ctx, o) }
		follow, obj = vmis.Watch, &kubevirtv1.VirtualMachineInstance{}
	default:
		vms := w.c.KubeVirt.KubevirtV1().VirtualMachines(src.namespace)
		list = func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return vms.List(ctx, o) }
		follow, obj = vms.Watch, &kubevirtv1.VirtualMachine{}
	}
	return &cache.ListWatch{
		ListWithContextFunc: func(lctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			out, err := list(lctx, narrow(o))
			if err != nil {
				w.fail(ctx, inf, fmt.Errorf("list %s: %w", src, err))
			}
			return out, err
		},
		WatchFuncWithContext: func(lctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			out, err := follow(lctx, narrow(o))
			// A failed streaming list falls back to a LIST, which tells.
			if err != nil && o.SendInitialEvents == nil {
				w.fail(ctx, inf, fmt.Errorf("watch %s: %w", src, err))
			}
			return out, err
		},
	}, obj, client
}

// fail records err as what ends Watch when it came before the first update
// or its source's first list, or the API server refused the request.
func (w *watcher) fail(ctx context.Context, inf *informer, err error) {
	if ctx.Err() != nil {
		return // Watch is ending anyway
	}
	if w.updated.Load() && inf.ctrl != nil && inf.ctrl.HasSynced() && !refused(err) {
		return // the informer retries
	}
	w.mu.Lock()
	if w.err == nil {
		w.err = err
	}
	w.mu.Unlock()
	w.signal()
}

// refused reports whether err is the API server's refusal, which asking
// again does not change.
func refused(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) || apierrors.IsNotFound(err) ||
		apierrors.IsMethodNotSupported(err) || apierrors.IsBadRequest(err) || apierrors.IsInvalid(err)
}

func (w *watcher) failure() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
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

// snapshot collects the informers' stores into an Inventory.
func (w *watcher) snapshot() *Inventory {
	w.mu.Lock()
	defer w.mu.Unlock()
	srcs := make([]source, 0, len(w.sources))
	for s := range w.sources {
		srcs = append(srcs, s)
	}
	// In a steady order, so that equal snapshots pair equally.
	slices.SortFunc(srcs, func(a, b source) int {
		return cmp.Or(cmp.Compare(a.role, b.role), cmp.Compare(a.namespace, b.namespace), cmp.Compare(a.name, b.name))
	})
	b := newBuilder(w.q)
	for _, src := range srcs {
		for _, obj := range w.sources[src].store.List() {
			b.add(src.role, obj)
		}
	}
	return b.inv
}

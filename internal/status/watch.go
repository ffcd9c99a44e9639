package status

import (
	"cmp"
	"context"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/revision"
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
// sources Load reads, one kube.Follower set each (see needs):
// label-selected for agent Pods, derived VMs and their instances, narrowed
// to one name for the Pods and prototypes derived VMs record, and follows
// more as the Inventory comes to need them (the agents' Warning Events
// once an agent Pod lacks its VM: thenNeeds). It takes a prototype's
// revision (Inventory.Revisions) again only when the prototype changed.
//
// Watch returns the error Load would give when a source's LIST or WATCH
// fails before its first list is in, and later when the API server refuses
// one for good (kube.Refused): a set that cannot be listed would otherwise
// be waited for without end. Other failures later are retried, with
// backoff.
func Watch(ctx context.Context, c kube.Clients, q Query, opts WatchOptions, update func(*Inventory) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the Reflectors
	w := &watcher{c: c, q: q, f: kube.NewFollower(ctx), sources: map[source]cache.Store{}, revisions: newReviser(c.Expand)}
	w.ensure(needs(q, &Inventory{Query: q}))

	ticker := time.NewTicker(opts.Refresh)
	defer ticker.Stop()
	var last time.Time
	var later <-chan time.Time // an update held back by MinInterval
	for {
		select {
		case <-ctx.Done():
		case err := <-w.f.Errors():
			return err
		case <-w.f.Changed():
		case <-ticker.C:
		case <-later:
			later = nil
		}
		if ctx.Err() != nil {
			return nil
		}
		if !w.f.Synced() {
			continue
		}
		if wait := opts.MinInterval - time.Since(last); wait > 0 {
			if later == nil {
				later = time.After(wait)
			}
			continue
		}
		inv := w.snapshot()
		if w.ensure(needs(q, inv)) || w.ensure(thenNeeds(q, inv)) {
			continue // wait for the new sources' first list
		}
		w.kubeVirt(ctx, inv)
		last = time.Now()
		w.revisions.revise(ctx, inv, last)
		if err := update(inv); err != nil {
			return err
		}
	}
}

type watcher struct {
	c       kube.Clients
	q       Query
	f       *kube.Follower
	sources map[source]cache.Store
	// revisions keeps the prototypes' revisions from one update to the
	// next: it asks KubeVirt again only when a prototype changed.
	revisions *reviser
	// kv and kvRead are the KubeVirt CR, read once when an Inventory first
	// needs it (readKubeVirt), and whether that read worked.
	kv             *kubevirtv1.KubeVirt
	kvRead, kvDone bool
}

// kubeVirt gives inv the KubeVirt CR, read the first time an Inventory
// needs it and kept after: its configuration rarely changes.
func (w *watcher) kubeVirt(ctx context.Context, inv *Inventory) {
	if !w.kvDone && needsKubeVirt(inv) {
		w.kvDone = true
		readKubeVirt(ctx, w.c, inv)
		w.kv, w.kvRead = inv.KubeVirt, inv.KubeVirtRead
	}
	inv.KubeVirt, inv.KubeVirtRead = w.kv, w.kvRead
}

// ensure follows each of want that no source covers yet, and reports
// whether it followed one.
func (w *watcher) ensure(want []source) bool {
	have := make(map[source]bool, len(w.sources))
	for s := range w.sources {
		have[s] = true
	}
	fresh := pending(want, have)
	for _, src := range fresh {
		w.sources[src] = w.follow(src)
	}
	return len(fresh) > 0
}

// follow starts following src, its objects slimmed (see Slim).
func (w *watcher) follow(src source) cache.Store {
	o := src.listOptions(w.q)
	sel := kube.Selector{Label: o.LabelSelector, Field: o.FieldSelector}
	opts := kube.FollowOptions{Client: w.c.KubeVirt, What: src.String(), Transform: src.slim, FailUntilSynced: true}
	switch src.resource() {
	case "pods":
		opts.Client = w.c.Kube
		return w.f.Follow(kube.ListWatch(w.c.Kube.CoreV1().Pods(src.namespace), sel), &corev1.Pod{}, opts)
	case "persistentvolumeclaims":
		opts.Client = w.c.Kube
		return w.f.Follow(kube.ListWatch(w.c.Kube.CoreV1().PersistentVolumeClaims(src.namespace), sel), &corev1.PersistentVolumeClaim{}, opts)
	case "events":
		opts.Client = w.c.Kube
		return w.f.Follow(kube.ListWatch(w.c.Kube.CoreV1().Events(src.namespace), sel), &corev1.Event{}, opts)
	case "virtualmachineinstances":
		vmis := w.c.KubeVirt.KubevirtV1().VirtualMachineInstances(src.namespace)
		return w.f.Follow(kube.ListWatch(vmis, sel), &kubevirtv1.VirtualMachineInstance{}, opts)
	case revision.StoreResource:
		opts.Client = w.c.Dynamic
		stores := w.c.Dynamic.Resource(revision.StoreGVR).Namespace(src.namespace)
		return w.f.Follow(kube.ListWatch(stores, sel), &unstructured.Unstructured{}, opts)
	}
	vms := w.c.KubeVirt.KubevirtV1().VirtualMachines(src.namespace)
	return w.f.Follow(kube.ListWatch(vms, sel), &kubevirtv1.VirtualMachine{}, opts)
}

// snapshot collects the sources' stores into an Inventory.
func (w *watcher) snapshot() *Inventory {
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
		for _, obj := range w.sources[src].List() {
			b.add(src.role, obj)
		}
	}
	return b.inv
}

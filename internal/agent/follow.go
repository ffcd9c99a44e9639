package agent

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// watchVM follows the one VM namespace/name with the agent's API, backoff
// and metrics: see watchVM.
func (a *Agent) watchVM(ctx context.Context, namespace, name string,
	onDenied func(error) (stop bool), check func(*kubevirtv1.VirtualMachine) (done bool)) error {
	return watchVM(ctx, a.vms, namespace, name, watchBackoff(a.cfg.backoff()), a.metrics.watchRestarts.Inc, onDenied, check)
}

// watchVM follows the one VM namespace/name until check reports done or ctx
// ends; see watchOne.
func watchVM(ctx context.Context, api vmAPI, namespace, name string, b wait.Backoff, restarted func(),
	onDenied func(error) (stop bool), check func(*kubevirtv1.VirtualMachine) (done bool)) error {
	return watchOne(ctx, namespace, name, &kubevirtv1.VirtualMachine{}, b, restarted, onDenied, check,
		func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return api.list(ctx, namespace, name, opts)
		},
		func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return api.watch(ctx, namespace, name, opts)
		})
}

// watchOne follows the one object namespace/name of expected's type until
// check reports done or ctx ends. check sees the object as it is now (the
// zero T, nil, when it does not exist) once the first list is in and again
// after every change, always from this goroutine.
//
// The watching is client-go's: a Reflector narrowed to the one object by a
// field selector on metadata.name (list and watch apply it), filling a
// Store. It opens with a consistent streaming list (or a LIST where the
// server has none), resumes from bookmarks, and after 410 Gone, a restarted
// API server or a compacted etcd it lists again from a current
// resourceVersion, waiting b (jittered) between attempts. restarted hears
// every WATCH request after the first. A hand-written loop got exactly that
// wrong: resuming from the object's own resourceVersion after 410 is
// resuming from a version just as old. A bare Reflector rather than an
// informer, because the agent needs no event queue and wants its own
// backoff.
//
// onDenied hears every list or watch the API server refused in a way that
// retrying will not fix (RBAC forbids it; the credentials were refused).
// When it returns true, watchOne stops and returns that error; otherwise the
// reflector keeps retrying. watchOne returns nil when check said done and
// ctx's cause when ctx ended.
func watchOne[T runtime.Object](ctx context.Context, namespace, name string, expected T, b wait.Backoff, restarted func(),
	onDenied func(error) (stop bool), check func(T) (done bool),
	list func(context.Context, metav1.ListOptions) (runtime.Object, error),
	watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var watches atomic.Int32
	denied := make(chan error, 1)
	report := func(err error) error {
		if isDenied(err) {
			select {
			case denied <- err:
			default: // one is waiting to be heard already
			}
		}
		return err
	}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			// The first LIST asks for "0", any cached state. The agent acts
			// on absence ("the VM is gone"), so it reads a consistent one.
			if opts.ResourceVersion == "0" {
				opts.ResourceVersion = ""
			}
			obj, err := list(ctx, opts)
			if err != nil {
				return nil, report(err)
			}
			return obj, nil
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			w, err := watchFn(ctx, opts)
			if watches.Add(1) > 1 {
				restarted()
			}
			for apierrors.IsTooManyRequests(err) {
				// The API server's watch cache is filling, after its restart
				// or after etcd's history was compacted under it; at 1,000
				// agents that took it 10 to 20 s. Handed to the reflector,
				// the retry would wait its backoff's first steps (from
				// 200 ms: about seven tries in 20 s). A whole cap between
				// tries asks at most twice, and the watch is back within a
				// cap of the cache being in. The VM runs on meanwhile; the
				// agent is only blind.
				select {
				case <-ctx.Done():
					return nil, context.Cause(ctx)
				case <-time.After(wait.Jitter(b.Cap, b.Jitter)):
				}
				w, err = watchFn(ctx, opts)
				restarted()
			}
			if utilnet.IsConnectionRefused(err) {
				// The API server is down. The reflector would retry this
				// watch from opts.ResourceVersion, which a restarted API
				// server's watch cache no longer holds: 410, then one more
				// backoff step before it lists again. For one object a list
				// costs what a watch does, so hide the refusal (retriable
				// to the reflector): its next attempt, after the same
				// backoff, lists from a current version.
				err = fmt.Errorf("API server unreachable: %s", err.Error())
			}
			return w, report(err)
		},
	}
	store := newNotifyingStore()
	r := cache.NewReflectorWithOptions(lw, expected, store, cache.ReflectorOptions{
		Name:            "agent",
		TypeDescription: fmt.Sprintf("%T %s/%s", expected, namespace, name),
		Backoff:         &b,
	})
	go r.RunWithContext(ctx)

	synced := store.synced
	for synced != nil {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case err := <-denied:
			if onDenied(err) {
				return err
			}
		case <-synced:
			synced = nil
		}
	}
	key := namespace + "/" + name
	for {
		var current T
		if obj, exists, _ := store.GetByKey(key); exists {
			current = obj.(T)
		}
		if check(current) {
			return nil
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case err := <-denied:
			if onDenied(err) {
				return err
			}
		case <-store.changed:
		}
	}
}

// notifyingStore is a Store that says when it changed and when the first
// list filled it.
type notifyingStore struct {
	cache.Store
	changed chan struct{} // has a value after a write not yet looked at
	synced  chan struct{} // closed by the first Replace
	once    sync.Once
}

func newNotifyingStore() *notifyingStore {
	return &notifyingStore{
		Store:   cache.NewStore(cache.MetaNamespaceKeyFunc),
		changed: make(chan struct{}, 1),
		synced:  make(chan struct{}),
	}
}

func (s *notifyingStore) poke() {
	select {
	case s.changed <- struct{}{}:
	default: // a look is due already; it will see the latest state
	}
}

func (s *notifyingStore) Add(obj any) error {
	defer s.poke()
	return s.Store.Add(obj)
}

func (s *notifyingStore) Update(obj any) error {
	defer s.poke()
	return s.Store.Update(obj)
}

func (s *notifyingStore) Delete(obj any) error {
	defer s.poke()
	return s.Store.Delete(obj)
}

func (s *notifyingStore) Replace(list []any, resourceVersion string) error {
	defer s.once.Do(func() { close(s.synced) })
	defer s.poke()
	return s.Store.Replace(list, resourceVersion)
}

// isDenied reports whether err is one that retrying will not fix.
func isDenied(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err)
}

// giveUp is an onDenied for watches with a fallback.
func giveUp(error) bool { return true }

// watchBackoff paces a watch's retries: b, capped at 10 s. An agent whose
// watch is down is blind, so it tries again sooner than a failed step; a
// thousand agents retrying every 10 to 15 s after an API server restart are
// a hundred requests a second, which an API server takes in its stride.
func watchBackoff(b wait.Backoff) wait.Backoff {
	if b.Cap == 0 || b.Cap > 10*time.Second {
		b.Cap = 10 * time.Second
	}
	return b
}

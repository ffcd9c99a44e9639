package agent

import (
	"context"
	"fmt"
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

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
)

// watchVM follows the one VM namespace/name: see watchOne.
func (a *Agent) watchVM(ctx context.Context, namespace, name string,
	onDenied func(error) (stop bool), check func(*kubevirtv1.VirtualMachine) (done bool)) error {
	list, watchFn := a.vmsOf(namespace, kube.ByName(name))
	return watchOne(ctx, a, namespace, name, &kubevirtv1.VirtualMachine{}, onDenied, check, list, watchFn)
}

// watchVMI follows the one VMI namespace/name: see watchOne.
func (a *Agent) watchVMI(ctx context.Context, namespace, name string,
	onDenied func(error) (stop bool), check func(*kubevirtv1.VirtualMachineInstance) (done bool)) error {
	list, watchFn := a.vmiOf(namespace, name)
	return watchOne(ctx, a, namespace, name, &kubevirtv1.VirtualMachineInstance{}, onDenied, check, list, watchFn)
}

// vmsOf lists and watches, for a Reflector, the VMs of namespace that sel
// selects.
func (a *Agent) vmsOf(namespace string, sel kube.Selector) (
	func(context.Context, metav1.ListOptions) (runtime.Object, error),
	func(context.Context, metav1.ListOptions) (watch.Interface, error)) {
	return func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return a.vms.list(ctx, namespace, sel, opts)
		},
		func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return a.vms.watch(ctx, namespace, sel, opts)
		}
}

// vmiOf lists and watches, for a Reflector, the one VMI namespace/name.
func (a *Agent) vmiOf(namespace, name string) (
	func(context.Context, metav1.ListOptions) (runtime.Object, error),
	func(context.Context, metav1.ListOptions) (watch.Interface, error)) {
	return func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return a.vmis.listVMI(ctx, namespace, name, opts)
		},
		func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return a.vmis.watchVMI(ctx, namespace, name, opts)
		}
}

// watchOne follows the one object namespace/name of expected's type until
// check reports done or ctx ends. check sees the object as it is now (the
// zero T, nil, when it does not exist) once the first list is in and again
// after every change, always from this goroutine.
//
// It follows with followSet, through list and watch, which the agent's API
// narrows to the name (kube.ByName). watchOne returns nil when check said
// done and ctx's cause when ctx ended, or the refusal onDenied stopped on
// (see waitFollowed).
func watchOne[T runtime.Object](ctx context.Context, a *Agent, namespace, name string, expected T,
	onDenied func(error) (stop bool), check func(T) (done bool),
	list func(context.Context, metav1.ListOptions) (runtime.Object, error),
	watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	f, store := a.followSet(ctx, expected, list, watchFn)
	key := namespace + "/" + name
	return waitFollowed(ctx, f, onDenied, func() bool {
		var current T
		if obj, exists, _ := store.GetByKey(key); exists {
			current = obj.(T)
		}
		return check(current)
	})
}

// followSet starts a kube.Follower on what list and watchFn serve, objects of
// expected's type, with the agent's own policy around them (see listWatch),
// retried after the agent's backoff capped at 10 s. It follows until ctx
// ends.
func (a *Agent) followSet(ctx context.Context, expected runtime.Object,
	list func(context.Context, metav1.ListOptions) (runtime.Object, error),
	watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error)) (*kube.Follower, *kube.Store) {
	f := kube.NewFollower(ctx)
	return f, a.followOn(f, expected, list, watchFn, kube.FollowOptions{})
}

// watchTimeout is how long an agent's watch lasts at least before its
// Reflector opens the next one (up to twice as long): what the API server
// gives a watch that names no timeout (its --min-request-timeout), not
// client-go's 5 minutes. An agent keeps one watch for its Pod's life, and a
// thousand agents each opened a second within a ten-minute ramp.
const watchTimeout = 30 * time.Minute

// followOn has f follow what list and watchFn serve, as followSet does, with
// opts but for their Backoff, which is the agent's, and their
// MinWatchTimeout, watchTimeout.
func (a *Agent) followOn(f *kube.Follower, expected runtime.Object,
	list func(context.Context, metav1.ListOptions) (runtime.Object, error),
	watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error), opts kube.FollowOptions) *kube.Store {
	b := watchBackoff(a.cfg.backoff())
	opts.Backoff, opts.MinWatchTimeout = &b, watchTimeout
	return f.Follow(listWatch(b, a.metrics.watchRestarts.Inc, list, watchFn), expected, opts)
}

// waitFollowed calls check once f's first list is in and again after every
// change, always from this goroutine, until check reports done (it returns
// nil) or ctx ends (ctx's cause). onDenied hears every list or watch the
// API server refused (kube.Refused): when it returns true, waitFollowed
// stops and returns that error; otherwise the Reflector keeps retrying.
func waitFollowed(ctx context.Context, f *kube.Follower, onDenied func(error) (stop bool), check func() (done bool)) error {
	for {
		if f.Synced() && check() {
			return nil
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case err := <-f.Errors():
			if onDenied(err) {
				return err
			}
		case <-f.Changed():
		}
	}
}

// listWatch is the agent's own part of following one object: its answer to
// 429 and to a refused connection, and restarted, which hears every WATCH
// request after the first. The agent acts on absence ("the VM is gone"), so
// its first lists are consistent ones, as kube.Follower makes them.
func listWatch(b wait.Backoff, restarted func(),
	list func(context.Context, metav1.ListOptions) (runtime.Object, error),
	watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error)) *cache.ListWatch {
	var watches atomic.Int32
	return &cache.ListWatch{
		ListWithContextFunc: list,
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
			if utilnet.IsConnectionRefused(err) && opts.SendInitialEvents == nil {
				// The API server is down. The reflector would retry this
				// watch from opts.ResourceVersion, which a restarted API
				// server's watch cache no longer holds: 410, then one more
				// backoff step before it lists again. For one object a list
				// costs what a watch does, so hide the refusal (retriable
				// to the reflector): its next attempt, after the same
				// backoff, lists from a current version. A streaming list
				// keeps it: the reflector asks again after its backoff,
				// where hidden it would fall back to a LIST at once.
				err = fmt.Errorf("API server unreachable: %s", err.Error())
			}
			return w, err
		},
	}
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

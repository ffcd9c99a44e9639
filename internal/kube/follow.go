package kube

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// Selector narrows a list or watch as the API server's labelSelector and
// fieldSelector do; an empty part selects everything.
type Selector struct {
	Label string
	Field string
}

// ByName selects the one object name. A list or watch so narrowed costs the
// API server what a GET does, and RBAC sees the name: a Role's
// resourceNames can allow list and watch of just that object.
func ByName(name string) Selector {
	return Selector{Field: fields.OneTermEqualSelector("metadata.name", name).String()}
}

// ListerWatcher is a typed client's List and Watch of one resource, such as
// clientset.CoreV1().Pods(namespace).
type ListerWatcher[L runtime.Object] interface {
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// ListWatch is client-go's ListWatch of the objects of c that sel selects,
// as cache.NewFilteredListWatchFromClient makes one, but asking through the
// typed client's List and Watch rather than its RESTClient: the requests
// are the same, and the fake clientsets of unit tests serve typed calls but
// no REST requests.
func ListWatch[L runtime.Object](c ListerWatcher[L], sel Selector) *cache.ListWatch {
	narrow := func(opts metav1.ListOptions) metav1.ListOptions {
		opts.LabelSelector, opts.FieldSelector = sel.Label, sel.Field
		return opts
	}
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return c.List(ctx, narrow(opts))
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return c.Watch(ctx, narrow(opts))
		},
	}
}

// Refused reports whether the API server refused a request for good: it
// judged the request and will judge it the same way however often it is
// asked, until a person changes something. That is the credentials or RBAC
// (401 Unauthorized, 403 Forbidden), which a person can fix, and the
// request itself (400 Bad Request, 422 Invalid, 405 Method Not Allowed: a
// selector the resource does not take, a verb it does not serve), which
// only the caller can.
//
// Anything else is the cluster in motion, and asking again fixes it: 429,
// 5xx, 410 Gone, timeouts, refused connections, and 404 Not Found too, as a
// list or watch of a resource that is not served yet (KubeVirt being
// installed, or an API server that restarted and has not yet set up its
// CRDs) answers 404. What a caller does with a refusal is its own: a
// command with a person at the keyboard ends and says it; the agent, which
// nobody watches, says it on /readyz and as an Event, and keeps trying
// where a Role applied later lets it on.
func Refused(err error) bool {
	return apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err) ||
		apierrors.IsBadRequest(err) || apierrors.IsInvalid(err) || apierrors.IsMethodNotSupported(err)
}

// FollowOptions tune one set a Follower follows.
type FollowOptions struct {
	// Client is the clientset behind the ListWatch: client-go asks it
	// whether it can stream the first list (a fake clientset cannot).
	Client any
	// What names the set in the Reflector's logs and in its errors, as
	// "list <What>: <error>" or "watch <What>: <error>". Unset, errors are
	// the API server's as they came.
	What string
	// Backoff paces the Reflector's retries; nil is client-go's own
	// (800 ms, doubling to 30 s).
	Backoff *wait.Backoff
	// Transform, when set, is applied to every object before it is stored,
	// as an informer's is; like an informer's it must take its own output.
	Transform cache.TransformFunc
	// FailUntilSynced makes any failed list or watch before the set's first
	// list is in an error (see Follower.Errors), as a one-off LIST would
	// fail, rather than something the Reflector retries.
	FailUntilSynced bool
	// MinWatchTimeout, when longer than client-go's 5 minutes, is how
	// long the Reflector's watches last at least (up to twice as long, at
	// random) before it opens the next one.
	MinWatchTimeout time.Duration
	// FromCache lets the set's first list come from the API server's watch
	// cache as it stands, however far behind etcd: for a caller that acts
	// on what arrives and never on what is missing. Otherwise the first
	// list is consistent, as a quorum read from etcd would be, unless the
	// watch cache lags (see Follower).
	FromCache bool
}

// Follower keeps what narrowed ListWatches list and watch in Stores, one
// client-go Reflector each, and says on one channel when any of them
// changed. The Reflectors list again after a 410 Gone, an API server
// restart or a compacted etcd, from a current resourceVersion, and resume
// from bookmarks; with client-go's WatchListClient (on by default) the
// first list is a streaming one, consistent unless FromCache.
//
// A consistent streaming list waits for the API server's watch cache to
// catch up with etcd, for 3 s at most, and then fails with "Too large
// resource version". client-go's Reflector asks again at once, with no
// backoff; an API server too busy to keep its cache fresh so hears every
// follower ask again every 3 s (1,000 agents asked 56,079 times in 8
// minutes). A consistent LIST instead would wait as long and then read
// etcd, the dearest read there is, when the API server is busiest: 1,000
// agents so listing got 14,047 answers of 429 and 3,583 of 500 in 9
// minutes. So after such a failure a Follower lists from the cache as it
// stands, which never waits, and follows on from there (see listInstead):
// its caller may find an object missing that etcd has, for as long as the
// cache lags.
//
// A Reflector rather than an informer: an informer is a Reflector feeding a
// queue that feeds handlers, and a Follower's callers need no queue, only
// word that something changed, after which they read the Stores. And
// client-go's informers take no backoff (its TODO #136943), which the agent
// sets its own.
type Follower struct {
	ctx     context.Context
	changed chan struct{}
	errs    chan error

	mu   sync.Mutex
	sets []*Store
}

// NewFollower returns a Follower whose Reflectors run until ctx ends.
func NewFollower(ctx context.Context) *Follower {
	return &Follower{ctx: ctx, changed: make(chan struct{}, 1), errs: make(chan error, 1)}
}

// Changed has a value after any set changed or had its first list, not yet
// looked at: one value stands for any number of changes, so read the
// Stores after receiving it.
func (f *Follower) Changed() <-chan struct{} { return f.changed }

// Errors hears the failed lists and watches that retrying does not get
// past: those the API server refused (see Refused), and, with
// FailUntilSynced, any before the set's first list. The Reflectors retry
// them all the same; ending is the caller's choice. One error waits at a
// time: others that come meanwhile are dropped.
func (f *Follower) Errors() <-chan error { return f.errs }

// Synced reports whether every set followed so far has had its first list.
func (f *Follower) Synced() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.sets {
		if !s.synced.Load() {
			return false
		}
	}
	return true
}

// Follow starts following what lw lists and watches, objects of obj's
// type, and returns the Store that keeps them. Read the Store; only its
// Reflector writes it.
func (f *Follower) Follow(lw *cache.ListWatch, obj runtime.Object, opts FollowOptions) *Store {
	s := &Store{
		Store:     cache.NewStore(cache.DeletionHandlingMetaNamespaceKeyFunc, cache.WithTransformer(opts.Transform)),
		transform: opts.Transform,
		changed:   f.signal,
	}
	fail := func(verb string, err error) error {
		ends := Refused(err) || (opts.FailUntilSynced && err != nil && !s.synced.Load())
		if !ends || f.ctx.Err() != nil {
			return err
		}
		heard := err
		if opts.What != "" {
			heard = fmt.Errorf("%s %s: %w", verb, opts.What, err)
		}
		select {
		case f.errs <- heard:
		default: // one is waiting to be heard already
		}
		return err
	}
	// lagging hears a consistent streaming list fail for the cache's lag.
	var lagging atomic.Bool
	heard := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			if o.ResourceVersion == "0" && !opts.FromCache && !lagging.Swap(false) {
				// The Reflector's first LIST asks for "0", any cached state.
				o.ResourceVersion = ""
			}
			out, err := lw.ListWithContext(ctx, o)
			return out, fail("list", err)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			if o.SendInitialEvents == nil {
				w, err := lw.WatchWithContext(ctx, o)
				return w, fail("watch", err)
			}
			// A streaming list: when it fails, the Reflector lists instead,
			// which tells.
			if o.ResourceVersion == "" && opts.FromCache {
				o.ResourceVersion = "0"
			}
			w, err := lw.WatchWithContext(ctx, o)
			if err != nil || o.ResourceVersion != "" {
				return w, err
			}
			return watch.Filter(w, func(ev watch.Event) (watch.Event, bool) {
				ev, lags := listInstead(ev)
				if lags {
					lagging.Store(true)
				}
				return ev, true
			}), nil
		},
	}
	r := cache.NewReflectorWithOptions(cache.ToListWatcherWithWatchListSemantics(heard, opts.Client), obj, s, cache.ReflectorOptions{
		Name:            "vmctl",
		TypeDescription: opts.What,
		Backoff:         opts.Backoff,
		MinWatchTimeout: opts.MinWatchTimeout,
	})
	f.mu.Lock()
	f.sets = append(f.sets, s)
	f.mu.Unlock()
	go r.RunWithContext(f.ctx)
	return s
}

// listInstead turns the "Too large resource version" that ends a consistent
// streaming list, the API server's watch cache behind etcd for longer than
// it waits, into a timeout the Reflector does not ask again at once after:
// it lists instead, and then watches from that list. It reports whether it
// did.
func listInstead(ev watch.Event) (watch.Event, bool) {
	if ev.Type != watch.Error {
		return ev, false
	}
	err := apierrors.FromObject(ev.Object)
	if !apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge) {
		return ev, false
	}
	// Not its message either: client-go knows this error by its words too.
	status := apierrors.NewTimeoutError("the API server's watch cache lags behind etcd; listing from it instead", 0).Status()
	return watch.Event{Type: watch.Error, Object: &status}, true
}

// signal notes a change without blocking: one pending note is enough.
func (f *Follower) signal() {
	select {
	case f.changed <- struct{}{}:
	default:
	}
}

// Store keeps what a Follower follows of one set: a client-go Store that
// signals every write, notes its first Replace (which the Reflector makes
// once the first list is in), and knows how far the set's watch has come.
type Store struct {
	cache.Store
	transform cache.TransformFunc
	changed   func()
	synced    atomic.Bool

	mu sync.Mutex
	// rv is the resourceVersion of the newest write or bookmark seen.
	rv string
}

// Reached reports whether the Store holds the set as of resourceVersion rv
// or later, so that an object written at rv and absent from it is gone.
// resourceVersions compare as apimachinery's CompareResourceVersion says;
// one that does not parse counts as reached, so a caller acts on what the
// Store holds rather than waiting for a version it cannot tell.
func (s *Store) Reached(rv string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rv == "" {
		// Nothing seen yet, or a server (a fake clientset) that sets no
		// resourceVersions: once synced, the Store is all there is to go by.
		return rv == "" || s.synced.Load()
	}
	c, err := resourceversion.CompareResourceVersion(s.rv, rv)
	return err != nil || c >= 0
}

// Add stores obj and notes its resourceVersion, as the Reflector writes it.
func (s *Store) Add(obj any) error {
	defer s.wrote(obj)
	return s.Store.Add(obj)
}

// Update stores obj and notes its resourceVersion.
func (s *Store) Update(obj any) error {
	defer s.wrote(obj)
	return s.Store.Update(obj)
}

// Delete removes obj and notes the resourceVersion of its deletion.
func (s *Store) Delete(obj any) error {
	defer s.wrote(obj)
	return s.Store.Delete(obj)
}

// Replace stores the Reflector's list, made at resourceVersion, and marks
// the set synced.
func (s *Store) Replace(list []any, resourceVersion string) error {
	defer s.changed()
	defer s.synced.Store(true)
	defer s.UpdateResourceVersion(resourceVersion)
	return s.Store.Replace(list, resourceVersion)
}

// UpdateResourceVersion hears the Reflector's bookmarks
// (cache.ResourceVersionUpdater).
func (s *Store) UpdateResourceVersion(rv string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rv != "" {
		s.rv = rv
	}
}

// wrote notes obj's resourceVersion and signals the change.
func (s *Store) wrote(obj any) {
	if m, err := meta.Accessor(obj); err == nil {
		s.UpdateResourceVersion(m.GetResourceVersion())
	}
	s.changed()
}

// Transformer has the Reflector transform a streaming list's objects as
// they come (cache.TransformingStore), not only once the list is whole.
func (s *Store) Transformer() cache.TransformFunc { return s.transform }

package kube

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
)

var pods = schema.GroupResource{Resource: "pods"}

func TestRefused(t *testing.T) {
	refused := connRefused()
	for _, tt := range []struct {
		name string
		err  error
		want bool
	}{
		{"unauthorized", apierrors.NewUnauthorized("token expired"), true},
		{"forbidden", apierrors.NewForbidden(pods, "", errors.New("RBAC")), true},
		{"forbidden, wrapped", fmt.Errorf("list pods: %w", apierrors.NewForbidden(pods, "", errors.New("RBAC"))), true},
		{"bad request", apierrors.NewBadRequest("unable to parse requirement"), true},
		{"invalid", apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "a", nil), true},
		{"method not supported", apierrors.NewMethodNotSupported(pods, "watch"), true},
		// The cluster in motion: asking again fixes these.
		{"not found", apierrors.NewNotFound(pods, ""), false},
		{"gone", apierrors.NewResourceExpired("too old resource version"), false},
		{"too many requests", apierrors.NewTooManyRequests("storage is (re)initializing", 1), false},
		{"internal error", apierrors.NewInternalError(errors.New("etcd")), false},
		{"unavailable", apierrors.NewServiceUnavailable("starting"), false},
		{"timeout", apierrors.NewTimeoutError("timed out", 1), false},
		{"connection refused", refused, false},
		{"none", nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Refused(tt.err); got != tt.want {
				t.Errorf("Refused(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

func connRefused() error {
	return &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}
}

// until waits for changes of f until ok.
func until(t *testing.T, f *Follower, what string, ok func() bool) {
	t.Helper()
	for !ok() {
		select {
		case <-f.Changed():
		case err := <-f.Errors():
			t.Fatalf("waiting for %s: %v", what, err)
		case <-time.After(10 * time.Second):
			t.Fatalf("no change: %s", what)
		}
	}
}

func pod(name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: labels,
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}}}
}

// names returns the keys of the objects in s, sorted.
func names(s cache.Store) []string {
	return slices.Sorted(slices.Values(s.ListKeys()))
}

// TestFollowNarrowsAndSignals follows the web Pods of a fake clientset:
// every list and watch carries both selectors, the Store holds what they
// select, transformed, and every change is signalled.
func TestFollowNarrowsAndSignals(t *testing.T) {
	kc := kubefake.NewClientset(pod("web-a", map[string]string{"app": "web"}), pod("db", map[string]string{"app": "db"}))
	f := NewFollower(t.Context())
	sel := Selector{Label: "app=web", Field: "status.phase!=Failed"}
	dropManagedFields := func(obj any) (any, error) {
		if p, ok := obj.(*corev1.Pod); ok {
			p = p.DeepCopy()
			p.ManagedFields = nil
			return p, nil
		}
		return obj, nil
	}
	s := f.Follow(ListWatch(kc.CoreV1().Pods("ns"), sel), &corev1.Pod{}, FollowOptions{Client: kc, Transform: dropManagedFields})
	until(t, f, "the first list", f.Synced)
	if diff := cmp.Diff([]string{"ns/web-a"}, names(s)); diff != "" {
		t.Errorf("after the first list (-want +got):\n%s", diff)
	}
	// The fake replays nothing from before its watch opened.
	for !watching(kc) {
		time.Sleep(10 * time.Millisecond)
	}

	if _, err := kc.CoreV1().Pods("ns").Create(t.Context(), pod("web-b", map[string]string{"app": "web"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	until(t, f, "web-b added", func() bool { return len(names(s)) == 2 })
	if obj, _, _ := s.GetByKey("ns/web-b"); obj.(*corev1.Pod).ManagedFields != nil {
		t.Errorf("web-b stored with managedFields %v, want none", obj.(*corev1.Pod).ManagedFields)
	}
	if err := kc.CoreV1().Pods("ns").Delete(t.Context(), "web-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	until(t, f, "web-a deleted", func() bool { return len(names(s)) == 1 })
	if diff := cmp.Diff([]string{"ns/web-b"}, names(s)); diff != "" {
		t.Errorf("after the delete (-want +got):\n%s", diff)
	}

	for _, a := range kc.Actions() {
		var r k8stesting.ListRestrictions
		switch a := a.(type) {
		case k8stesting.WatchAction:
			w := a.GetWatchRestrictions()
			r = k8stesting.ListRestrictions{Labels: w.Labels, Fields: w.Fields}
		case k8stesting.ListAction:
			r = a.GetListRestrictions()
		default:
			continue
		}
		if r.Labels.String() != sel.Label || r.Fields.String() != sel.Field {
			t.Errorf("%s narrowed to labels %q, fields %q; want %q, %q", a.GetVerb(), r.Labels, r.Fields, sel.Label, sel.Field)
		}
	}
}

func watching(kc *kubefake.Clientset) bool {
	for _, a := range kc.Actions() {
		if a.GetVerb() == "watch" {
			return true
		}
	}
	return false
}

// api is an API server for one Follow: each list and watch takes the next
// answer of its verb, and once they run out lists an empty set and opens a
// watch that stays quiet.
type api struct {
	mu      sync.Mutex
	answers map[string][]error
	// ends are the errors that end the next streaming lists, in place of
	// the bookmark that ends their initial events.
	ends     []*apierrors.StatusError
	requests []string
}

func (a *api) answer(verb string, opts metav1.ListOptions) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.requests = append(a.requests, verb+" rv="+opts.ResourceVersion)
	if len(a.answers[verb]) == 0 {
		return nil
	}
	err := a.answers[verb][0]
	a.answers[verb] = a.answers[verb][1:]
	return err
}

func (a *api) listWatch() *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(_ context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			if err := a.answer("list", opts); err != nil {
				return nil, err
			}
			return &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}, nil
		},
		WatchFuncWithContext: func(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			verb := "watch"
			if opts.SendInitialEvents != nil {
				verb = "streaming list"
			}
			if err := a.answer(verb, opts); err != nil {
				return nil, err
			}
			w := watch.NewFake()
			if opts.SendInitialEvents == nil {
				return w, nil
			}
			a.mu.Lock()
			defer a.mu.Unlock()
			if len(a.ends) > 0 {
				status := a.ends[0].Status()
				a.ends = a.ends[1:]
				go w.Error(&status)
				return w, nil
			}
			go w.Action(watch.Bookmark, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "1",
				Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}})
			return w, nil
		},
	}
}

func (a *api) log() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.requests...)
}

// TestFollowErrors: which failures a Follower passes on, and that it
// follows on after those it does not.
func TestFollowErrors(t *testing.T) {
	forbidden := apierrors.NewForbidden(pods, "", errors.New(`User "u" cannot list resource "pods"`))
	unsupported := apierrors.NewBadRequest("sendInitialEvents is not supported")
	notServed := apierrors.NewNotFound(pods, "")
	for _, tt := range []struct {
		name    string
		answers map[string][]error
		opts    FollowOptions
		want    string // the error heard; none: the set is listed
	}{
		{
			name:    "a refused list",
			answers: map[string][]error{"streaming list": {forbidden}, "list": {forbidden}},
			want:    forbidden.Error(),
		},
		{
			name:    "a refused list, named",
			answers: map[string][]error{"streaming list": {forbidden}, "list": {forbidden}},
			opts:    FollowOptions{What: `pods in namespace "ns"`},
			want:    `list pods in namespace "ns": ` + forbidden.Error(),
		},
		{
			name:    "a refused watch after the list",
			answers: map[string][]error{"streaming list": {unsupported}, "watch": {forbidden}},
			opts:    FollowOptions{What: "pods"},
			want:    "watch pods: " + forbidden.Error(),
		},
		{
			// An API server without streaming lists: the LIST that follows
			// tells, and it answers.
			name:    "a streaming list refused",
			answers: map[string][]error{"streaming list": {unsupported}},
		},
		{
			// A resource not served yet, or an API server that restarted:
			// retried until it is.
			name:    "not found, then found",
			answers: map[string][]error{"streaming list": {notServed, notServed}, "list": {notServed}},
		},
		{
			name:    "not found until synced",
			answers: map[string][]error{"streaming list": {notServed}, "list": {notServed}},
			opts:    FollowOptions{FailUntilSynced: true, What: "pods"},
			want:    "list pods: " + notServed.Error(),
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := &api{answers: tt.answers}
			f := NewFollower(t.Context())
			tt.opts.Backoff = &wait.Backoff{Duration: time.Millisecond, Cap: 10 * time.Millisecond, Factor: 2, Steps: 10}
			f.Follow(a.listWatch(), &corev1.Pod{}, tt.opts)
			for {
				select {
				case err := <-f.Errors():
					if err.Error() != tt.want {
						t.Errorf("heard %q, want %q; requests %q", err, tt.want, a.log())
					}
					return
				case <-f.Changed():
					if f.Synced() && tt.want == "" {
						return
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("neither an error nor the first list; requests %q", a.log())
				}
			}
		})
	}
}

// TestFollowListsWhenTheCacheLags: which first requests a Follower makes,
// consistent or from the cache, and that a consistent streaming list the
// API server's lagging watch cache could not serve is followed by one LIST
// from the cache and a WATCH, not asked again at once as client-go's
// Reflector would, nor read from etcd.
func TestFollowListsWhenTheCacheLags(t *testing.T) {
	// As the API server says it (k8s.io/apiserver's storage package).
	tooLarge := apierrors.NewTimeoutError("Too large resource version: 12, current: 9", 1)
	tooLarge.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}
	unsupported := apierrors.NewBadRequest("sendInitialEvents is not supported")
	for _, tt := range []struct {
		name      string
		fromCache bool
		answers   map[string][]error
		ends      []*apierrors.StatusError
		want      []string
	}{
		{
			name: "consistent",
			want: []string{"streaming list rv="},
		},
		{
			name: "consistent, the cache lagging",
			ends: []*apierrors.StatusError{tooLarge, tooLarge},
			want: []string{"streaming list rv=", "list rv=0", "watch rv=1"},
		},
		{
			name:    "consistent, no streaming lists",
			answers: map[string][]error{"streaming list": {unsupported}},
			want:    []string{"streaming list rv=", "list rv=", "watch rv=1"},
		},
		{
			name:      "from the cache",
			fromCache: true,
			want:      []string{"streaming list rv=0"},
		},
		{
			name:      "from the cache, no streaming lists",
			fromCache: true,
			answers:   map[string][]error{"streaming list": {unsupported}},
			want:      []string{"streaming list rv=0", "list rv=0", "watch rv=1"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := &api{answers: tt.answers, ends: tt.ends}
			f := NewFollower(t.Context())
			f.Follow(a.listWatch(), &corev1.Pod{}, FollowOptions{
				FromCache: tt.fromCache,
				Backoff:   &wait.Backoff{Duration: time.Millisecond, Cap: 10 * time.Millisecond, Factor: 2, Steps: 10},
			})
			deadline := time.After(10 * time.Second)
			for !f.Synced() || len(a.log()) < len(tt.want) {
				select {
				case <-f.Changed():
				case <-time.After(10 * time.Millisecond):
				case <-deadline:
					t.Fatalf("not synced; requests %q", a.log())
				}
			}
			// Whatever a Reflector would ask again at once, it has by now.
			time.Sleep(100 * time.Millisecond)
			if diff := cmp.Diff(tt.want, a.log()); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStoreReached(t *testing.T) {
	s := &Store{Store: cache.NewStore(cache.MetaNamespaceKeyFunc), changed: func() {}}
	at := func(name, rv string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
	}
	check := func(when, rv string, want bool) {
		t.Helper()
		if got := s.Reached(rv); got != want {
			t.Errorf("%s: Reached(%q) = %v, want %v", when, rv, got, want)
		}
	}
	check("before the first list", "7", false)
	check("before the first list", "", true)
	if err := s.Replace([]any{at("a", "3")}, "7"); err != nil {
		t.Fatal(err)
	}
	check("after a list at 7", "7", true)
	check("after a list at 7", "8", false)
	check("after a list at 7", "10", false) // compared as numbers, not strings
	if err := s.Add(at("b", "12")); err != nil {
		t.Fatal(err)
	}
	check("after an add at 12", "10", true)
	check("after an add at 12", "13", false)
	if err := s.Delete(at("b", "13")); err != nil {
		t.Fatal(err)
	}
	check("after the delete at 13", "13", true)
	s.UpdateResourceVersion("20")
	check("after a bookmark at 20", "19", true)
	check("after a bookmark at 20", "21", false)
	check("a version that does not parse", "x", true)
}

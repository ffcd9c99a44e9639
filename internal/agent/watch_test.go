package agent

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"
	kubevirtv1 "kubevirt.io/api/core/v1"
	kvfake "kubevirt.io/client-go/kubevirt/fake"
)

var vmResource = schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachines"}

// testBackoff retries at once, so tests wait on events, not on time.
func testBackoff() wait.Backoff {
	return wait.Backoff{Duration: time.Millisecond, Factor: 2, Cap: 20 * time.Millisecond, Steps: 1 << 30}
}

type openedWatch struct {
	rv, fieldSelector string
	w                 *watch.FakeWatcher
}

// scriptedWatches makes every VM watch a FakeWatcher the test drives.
func scriptedWatches(cs *kvfake.Clientset) <-chan openedWatch {
	opened := make(chan openedWatch, 10)
	cs.PrependWatchReactor("virtualmachines", func(action k8stesting.Action) (bool, watch.Interface, error) {
		r := action.(k8stesting.WatchAction).GetWatchRestrictions()
		w := watch.NewFake()
		opened <- openedWatch{rv: r.ResourceVersion, fieldSelector: r.Fields.String(), w: w}
		return true, w, nil
	})
	return opened
}

func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		var zero T
		return zero
	}
}

type step struct {
	Type watch.EventType
	RV   string // of the VM returned; "<nil>" for none
}

func vmAt(name, rv string) *kubevirtv1.VirtualMachine {
	return &kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace, ResourceVersion: rv, UID: "vm-uid"}}
}

func TestVMWatchResumes(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	cs := kvfake.NewSimpleClientset(vmAt(testVM, "9"))
	opened := scriptedWatches(cs)
	vw := newVMWatch(ctx, kubevirtVMs{cs}, testNamespace, testVM, "1", testBackoff())
	defer vw.stop()
	steps := make(chan step)
	go func() {
		for {
			typ, vm, ok := vw.next(ctx)
			if !ok {
				close(steps)
				return
			}
			s := step{Type: typ, RV: "<nil>"}
			if vm != nil {
				s.RV = vm.ResourceVersion
			}
			steps <- s
		}
	}()

	w := receive(t, opened, "the first watch")
	if diff := cmp.Diff(openedWatch{rv: "1", fieldSelector: "metadata.name=" + testVM}, w, cmp.AllowUnexported(openedWatch{}), cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".w" }, cmp.Ignore())); diff != "" {
		t.Errorf("first watch (-want +got):\n%s", diff)
	}
	w.w.Modify(vmAt(testVM, "5"))
	if diff := cmp.Diff(step{watch.Modified, "5"}, receive(t, steps, "Modified")); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	// A dropped watch resumes from the last resourceVersion seen.
	w.w.Stop()
	w = receive(t, opened, "the watch after a drop")
	if w.rv != "5" {
		t.Errorf("resumed at resourceVersion %q, want 5", w.rv)
	}

	// Bookmarks move the resourceVersion on without an event; other names are ignored.
	w.w.Action(watch.Bookmark, vmAt(testVM, "7"))
	w.w.Add(vmAt("someone-else", "8"))
	w.w.Stop()
	w = receive(t, opened, "the watch after a bookmark")
	if w.rv != "7" {
		t.Errorf("resumed at resourceVersion %q, want 7 from the bookmark", w.rv)
	}

	// 410 Gone: GET the VM and carry on from its resourceVersion.
	w.w.Error(&apierrors.NewResourceExpired("too old resource version: 7 (8)").ErrStatus)
	if diff := cmp.Diff(step{watch.Modified, "9"}, receive(t, steps, "the re-GET VM")); diff != "" {
		t.Errorf("after 410 (-want +got):\n%s", diff)
	}
	w = receive(t, opened, "the watch after 410")
	if w.rv != "9" {
		t.Errorf("resumed at resourceVersion %q, want 9 from the GET", w.rv)
	}

	w.w.Delete(vmAt(testVM, "11"))
	if diff := cmp.Diff(step{watch.Deleted, "11"}, receive(t, steps, "Deleted")); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	var verbs []string
	for _, a := range cs.Actions() {
		verbs = append(verbs, a.GetVerb())
	}
	if diff := cmp.Diff([]string{"watch", "watch", "watch", "get", "watch"}, verbs); diff != "" {
		t.Errorf("API requests (-want +got):\n%s", diff)
	}
	cancel()
	if _, open := <-steps; open {
		t.Error("next returned a step after ctx was canceled")
	}
}

func TestVMWatchGoneAndNotFound(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	cs := kvfake.NewSimpleClientset() // the VM does not exist
	calls := 0
	cs.PrependWatchReactor("virtualmachines", func(k8stesting.Action) (bool, watch.Interface, error) {
		calls++
		return true, nil, apierrors.NewResourceExpired("too old resource version")
	})
	vw := newVMWatch(ctx, kubevirtVMs{cs}, testNamespace, testVM, "3", testBackoff())
	typ, vm, ok := vw.next(ctx)
	if !ok || typ != watch.Deleted || vm != nil {
		t.Errorf("next() = %v, %v, %v; want Deleted, nil, true", typ, vm, ok)
	}
	if calls != 1 {
		t.Errorf("%d watch calls, want 1", calls)
	}
	if vw.rv != "" {
		t.Errorf("resourceVersion after NotFound = %q, want empty to start afresh", vw.rv)
	}
}

func TestVMWatchRetriesFailedWatch(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	cs := kvfake.NewSimpleClientset()
	fw := watch.NewFake()
	calls := 0
	cs.PrependWatchReactor("virtualmachines", func(k8stesting.Action) (bool, watch.Interface, error) {
		calls++
		if calls < 3 {
			return true, nil, apierrors.NewServiceUnavailable("etcd leader changed")
		}
		go fw.Modify(vmAt(testVM, "4"))
		return true, fw, nil
	})
	vw := newVMWatch(ctx, kubevirtVMs{cs}, testNamespace, testVM, "3", testBackoff())
	defer vw.stop()
	typ, vm, ok := vw.next(ctx)
	if !ok || typ != watch.Modified || vm.ResourceVersion != "4" {
		t.Errorf("next() = %v, %v, %v; want Modified at 4", typ, vm, ok)
	}
	if calls != 3 {
		t.Errorf("%d watch calls, want 3 (two failures, one success)", calls)
	}
}

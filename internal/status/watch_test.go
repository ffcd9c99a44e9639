package status

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	k8stesting "k8s.io/client-go/testing"
	kubevirtfake "kubevirt.io/client-go/kubevirt/fake"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
)

// noWatchList is KubeVirt's fake clientset, told to say what its tracker
// cannot do: stream the initial list as watch events.
type noWatchList struct{ *kubevirtfake.Clientset }

func (noWatchList) IsWatchListSemanticsUnSupported() bool { return true }

func TestWatch(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	pod := agentPod("ns", "a", "uid-a", "n1", "web", time.Hour)
	proto := protoVM("ns", "web", 1)
	kc, virt := fakes([]runtime.Object{&pod}, []runtime.Object{&proto})

	updates := make(chan *Inventory, 100)
	done := make(chan error, 1)
	go func() {
		done <- Watch(ctx, kube.Clients{Kube: kc, KubeVirt: noWatchList{virt}, Dynamic: stores()}, Query{Namespace: "ns"}, WatchOptions{Refresh: time.Hour}, func(inv *Inventory) error {
			updates <- inv
			return nil
		})
	}()

	next := func(what string, ok func(*Inventory) bool) {
		t.Helper()
		for {
			select {
			case inv := <-updates:
				if ok(inv) {
					return
				}
			case <-ctx.Done():
				t.Fatalf("no update with %s before the deadline", what)
			}
		}
	}
	next("the initial objects", func(inv *Inventory) bool { return len(inv.Pods) == 1 && len(inv.VMs) == 0 })

	// The fake tracker does not replay what happened between list and
	// watch: wait until all three watches are open.
	watching := func(acts []k8stesting.Action, resource string) bool {
		return slices.ContainsFunc(acts, func(a k8stesting.Action) bool {
			return a.GetVerb() == "watch" && a.GetResource().Resource == resource
		})
	}
	for !watching(kc.Actions(), "pods") || !watching(virt.Actions(), "virtualmachines") || !watching(virt.Actions(), "virtualmachineinstances") {
		select {
		case <-ctx.Done():
			t.Fatal("watches not opened before the deadline")
		case <-time.After(10 * time.Millisecond):
		}
	}

	vm := derivedVM("ns", "web", 1, "ns", "a", "uid-a", "n1", time.Hour)
	if _, err := virt.KubevirtV1().VirtualMachines("ns").Create(ctx, &vm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	next("the new VM paired", func(inv *Inventory) bool {
		rows := Pair(inv, t0, NotReadyGrace)
		return len(rows) == 1 && rows[0].VM == "web-a"
	})

	cancel()
	if err := <-done; err != nil {
		t.Errorf("Watch returned %v after cancel, want nil", err)
	}
	// No GETs, and never all VMs: informers list and watch derived VMs by
	// label, the prototype by name.
	for _, a := range append(kc.Actions(), virt.Actions()...) {
		switch a.GetVerb() {
		case "create":
		case "list", "watch":
			r := restrictions(a)
			if a.GetResource().Resource == "virtualmachines" && r.Labels.Empty() && r.Fields.Empty() {
				t.Errorf("%s of every VM in %q", a.GetVerb(), a.GetNamespace())
			}
		default:
			t.Errorf("unexpected %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
}

func restrictions(a k8stesting.Action) k8stesting.ListRestrictions {
	if w, ok := a.(k8stesting.WatchAction); ok {
		r := w.GetWatchRestrictions()
		return k8stesting.ListRestrictions{Labels: r.Labels, Fields: r.Fields}
	}
	return a.(k8stesting.ListAction).GetListRestrictions()
}

func TestWatchFollowsAgentsIntoOtherNamespaces(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	pod := agentPod("ns", "a", "uid-a", "n1", "web", time.Hour, func(p *corev1.Pod) {
		p.Spec.Containers[0].Args = []string{"web", "--namespace=vms"}
	})
	proto := protoVM("vms", "web", 1)
	vm := derivedVM("vms", "web", 1, "ns", "a", "uid-a", "n1", time.Hour)
	kc, virt := fakes([]runtime.Object{&pod}, []runtime.Object{&proto, &vm})

	found := make(chan struct{})
	var once sync.Once
	err := Watch(ctx, kube.Clients{Kube: kc, KubeVirt: noWatchList{virt}, Dynamic: stores()}, Query{Namespace: "ns"}, WatchOptions{Refresh: time.Hour}, func(inv *Inventory) error {
		if rows := Pair(inv, t0, NotReadyGrace); len(rows) == 1 && rows[0].VMNamespace == "vms" && len(rows[0].Problems) == 0 {
			once.Do(func() { close(found) })
			cancel()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-found:
	default:
		t.Fatal("Watch never paired the Pod with its VM in namespace vms")
	}
}

func TestWatchFindsAVMsPodByItsIdentity(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	pod := agentPod("ns", "manual", "uid-m", "n1", "", time.Hour, func(p *corev1.Pod) { p.Labels = nil })
	proto := protoVM("ns", "web", 1)
	vm := derivedVM("ns", "web", 1, "ns", "manual", "uid-m", "n1", time.Hour)
	kc, virt := fakes([]runtime.Object{&pod}, []runtime.Object{&proto, &vm})

	var rows []Row
	err := Watch(ctx, kube.Clients{Kube: kc, KubeVirt: noWatchList{virt}, Dynamic: stores()}, Query{Namespace: "ns"}, WatchOptions{Refresh: time.Hour}, func(inv *Inventory) error {
		rows = Pair(inv, t0, NotReadyGrace)
		cancel()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []brief{{Namespace: "ns", Pod: "manual", VM: "web-manual"}}; !slices.EqualFunc(want, briefs(rows), func(a, b brief) bool {
		return fmt.Sprint(a) == fmt.Sprint(b)
	}) {
		t.Errorf("first update: %+v, want %+v", briefs(rows), want)
	}
}

// TestWatchStopsWhenRefused: a VM that records a Pod in a namespace where
// the user may not list Pods. Load fails with "pods is forbidden"; Watch
// must give the same error, not wait for a list that never comes.
func TestWatchStopsWhenRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	proto := protoVM("ns", "web", 1)
	vm := derivedVM("ns", "web", 1, "secret", "a", "uid-a", "n1", time.Hour)
	kc, virt := fakes(nil, []runtime.Object{&proto, &vm})
	kc.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetNamespace() == "secret" {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New(`User "u" cannot list resource "pods" in API group "" in the namespace "secret"`))
		}
		return false, nil, nil
	})
	q := Query{Namespace: "ns"}
	_, loadErr := Load(ctx, kube.Clients{Kube: kc, KubeVirt: virt, Dynamic: stores()}, q)
	if loadErr == nil {
		t.Fatal("Load: no error")
	}
	err := Watch(ctx, kube.Clients{Kube: kc, KubeVirt: noWatchList{virt}, Dynamic: stores()}, q, WatchOptions{Refresh: time.Hour}, func(*Inventory) error {
		t.Error("update without the Pods of namespace secret")
		return nil
	})
	if err == nil || err.Error() != loadErr.Error() {
		t.Errorf("Watch: %v\nwant Load's error: %v", err, loadErr)
	}
	if ctx.Err() != nil {
		t.Error("Watch returned only at the test's deadline")
	}
}

// TestWatchStopsWhenAWatchIsRefused: a user who may list but not watch
// Pods is told so, not shown a table that silently never changes.
func TestWatchStopsWhenAWatchIsRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	pod := agentPod("ns", "a", "uid-a", "n1", "web", time.Hour)
	kc, virt := fakes([]runtime.Object{&pod}, nil)
	kc.PrependWatchReactor("pods", func(a k8stesting.Action) (bool, watch.Interface, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New(`User "u" cannot watch resource "pods"`))
	})
	err := Watch(ctx, kube.Clients{Kube: kc, KubeVirt: noWatchList{virt}, Dynamic: stores()}, Query{Namespace: "ns"}, WatchOptions{Refresh: time.Hour}, func(*Inventory) error { return nil })
	if err == nil || !apierrors.IsForbidden(err) || ctx.Err() != nil {
		t.Errorf("Watch: %v (deadline passed: %v), want the forbidden watch", err, ctx.Err() != nil)
	}
}

// TestWatchUpdatesAtMostEveryMinInterval creates VMs one after another for
// a while: each is an event, but updates come at most every MinInterval.
func TestWatchUpdatesAtMostEveryMinInterval(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	proto := protoVM("ns", "web", 1)
	kc, virt := fakes(nil, []runtime.Object{&proto})
	const minInterval = 200 * time.Millisecond
	var mu sync.Mutex
	var updates []time.Time
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- Watch(ctx, kube.Clients{Kube: kc, KubeVirt: noWatchList{virt}, Dynamic: stores()}, Query{Namespace: "ns"}, WatchOptions{Refresh: time.Hour, MinInterval: minInterval}, func(*Inventory) error {
			mu.Lock()
			defer mu.Unlock()
			if len(updates) == 0 {
				close(started)
			}
			updates = append(updates, time.Now())
			return nil
		})
	}()
	<-started
	for !slices.ContainsFunc(virt.Actions(), func(a k8stesting.Action) bool { return a.GetVerb() == "watch" }) {
		time.Sleep(10 * time.Millisecond) // the fake replays nothing from before its watch
	}
	t0 := time.Now()
	for i := 0; time.Since(t0) < time.Second; i++ {
		vm := derivedVM("ns", "web", 1, "ns", fmt.Sprintf("p-%04d", i), fmt.Sprintf("uid-%04d", i), "n1", time.Hour)
		if _, err := virt.KubevirtV1().VirtualMachines("ns").Create(ctx, &vm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(2 * minInterval) // the last burst's update
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for i := 1; i < len(updates); i++ {
		if gap := updates[i].Sub(updates[i-1]); gap < minInterval {
			t.Errorf("update %d came %v after the one before, want at least %v", i, gap, minInterval)
		}
	}
	if len(updates) < 3 {
		t.Errorf("%d updates while VMs were created for a second, want some", len(updates))
	}
}

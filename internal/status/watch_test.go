package status

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	kubevirtfake "kubevirt.io/client-go/kubevirt/fake"
)

// noWatchList is KubeVirt's fake clientset, told to say what its tracker
// cannot do: stream the initial list as watch events.
type noWatchList struct{ *kubevirtfake.Clientset }

func (noWatchList) IsWatchListSemanticsUnSupported() bool { return true }

func TestWatch(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	pod := agentPod("ns", "a", "uid-a", "n1", "web", time.Hour)
	proto := prototype("ns", "web", 1)
	kube := kubefake.NewClientset(&pod)
	virt := kubevirtfake.NewSimpleClientset(&proto)

	updates := make(chan *Inventory, 100)
	done := make(chan error, 1)
	go func() {
		done <- Watch(ctx, Clients{Kube: kube, KubeVirt: noWatchList{virt}}, Query{Namespace: "ns"}, time.Hour, func(inv *Inventory) error {
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
	next("the initial objects", func(inv *Inventory) bool { return len(inv.Pods) == 1 && len(inv.VMs) == 1 })

	// The fake tracker does not replay what happened between list and
	// watch: wait until all three watches are open.
	watching := func(acts []k8stesting.Action, resource string) bool {
		return slices.ContainsFunc(acts, func(a k8stesting.Action) bool {
			return a.GetVerb() == "watch" && a.GetResource().Resource == resource
		})
	}
	for !watching(kube.Actions(), "pods") || !watching(virt.Actions(), "virtualmachines") || !watching(virt.Actions(), "virtualmachineinstances") {
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
		rows := Pair(inv, t0)
		return len(rows) == 1 && rows[0].VM == "web-a"
	})

	cancel()
	if err := <-done; err != nil {
		t.Errorf("Watch returned %v after cancel, want nil", err)
	}
	// No GETs: informers list and watch only.
	for _, a := range append(kube.Actions(), virt.Actions()...) {
		if a.GetVerb() != "list" && a.GetVerb() != "watch" && a.GetVerb() != "create" {
			t.Errorf("unexpected %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
}

func TestWatchFollowsAgentsIntoOtherNamespaces(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	pod := agentPod("ns", "a", "uid-a", "n1", "web", time.Hour, func(p *corev1.Pod) {
		p.Spec.Containers[0].Args = []string{"web", "--namespace=vms"}
	})
	proto := prototype("vms", "web", 1)
	vm := derivedVM("vms", "web", 1, "ns", "a", "uid-a", "n1", time.Hour)
	kube := kubefake.NewClientset(&pod)
	virt := kubevirtfake.NewSimpleClientset(&proto, &vm)

	found := make(chan struct{})
	var once sync.Once
	err := Watch(ctx, Clients{Kube: kube, KubeVirt: noWatchList{virt}}, Query{Namespace: "ns"}, time.Hour, func(inv *Inventory) error {
		if rows := Pair(inv, t0); len(rows) == 1 && rows[0].VMNamespace == "vms" && len(rows[0].Problems) == 0 {
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

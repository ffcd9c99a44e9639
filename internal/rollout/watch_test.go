package rollout

import (
	"context"
	"errors"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	kubevirtv1 "kubevirt.io/api/core/v1"
	kubevirtfake "kubevirt.io/client-go/kubevirt/fake"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
)

// virtFake is KubeVirt's fake clientset saying, as client-go's fakes do,
// that it cannot stream a first list; an informer would wait for good for
// the stream's end otherwise.
type virtFake struct{ *kubevirtfake.Clientset }

func (virtFake) IsWatchListSemanticsUnSupported() bool { return true }

// watchScene is testWorkload rolled out with two Pods, the prototype at
// generation 2, and the Pods' VMs at vmGen.
func watchScene(vmGen int64) (Workload, *kubefake.Clientset, virtFake) {
	w := rolledOut()
	d := w.Object.(*appsv1.Deployment)
	a, b := pod("web-a", "uid-a"), pod("web-b", "uid-b")
	a.Labels, b.Labels = d.Spec.Selector.MatchLabels, d.Spec.Selector.MatchLabels
	va, vb := vm(a, vmGen, true), vm(b, vmGen, true)
	proto := &kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "testvm", Namespace: ns, Generation: 2}}
	return w, kubefake.NewClientset(d, &a, &b), virtFake{kubevirtfake.NewSimpleClientset(proto, &va, &vb)}
}

func TestWatchFollowsUntilDone(t *testing.T) {
	w, kc, virt := watchScene(1)
	// A fake clientset's watch sees only what happens after it is made,
	// which is after its informer's list: the VMs change once both VM
	// watches (the derived VMs', the prototype's) are made.
	vmsWatched := make(chan struct{}, 2)
	virt.PrependWatchReactor("virtualmachines", func(action k8stesting.Action) (bool, watch.Interface, error) {
		wi, err := virt.Tracker().Watch(action.GetResource(), action.GetNamespace())
		select {
		case vmsWatched <- struct{}{}:
		default: // a watch made again later
		}
		return true, wi, err
	})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	reports := make(chan string, 100)
	done := make(chan error, 1)
	go func() {
		done <- Watch(ctx, kube.Clients{Kube: kc, KubeVirt: virt}, []Workload{w}, func(p []Progress) bool {
			reports <- p[0].Message
			return p[0].Done
		})
	}()
	first := `Waiting for the VMs of deployment "web": 0 of 2 ready and derived from prototype vms/testvm generation 2 (2 from generation 1: run kubectl vmctl rollout restart testvm)...`
	select {
	case got := <-reports:
		if got != first {
			t.Fatalf("first report %q, want %q", got, first)
		}
	case err := <-done:
		t.Fatalf("Watch() = %v before its first report", err)
	}
	for range 2 {
		select {
		case <-vmsWatched:
		case <-ctx.Done():
			t.Fatal("Watch() never watched the VMs")
		}
	}
	// The rollout happens: each Pod's VM is made again at generation 2.
	for _, p := range []corev1.Pod{pod("web-a", "uid-a"), pod("web-b", "uid-b")} {
		v := vm(p, 2, true)
		if _, err := virt.KubevirtV1().VirtualMachines(ns).Update(ctx, &v, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		t.Fatalf("Watch() = %v", err)
	}
	close(reports)
	var last string
	for m := range reports {
		last = m
	}
	if want := `deployment "web" successfully rolled out: 2 VMs ready and derived from prototype vms/testvm generation 2`; last != want {
		t.Errorf("last report %q, want %q", last, want)
	}
}

func TestWatchStopsWhenForbidden(t *testing.T) {
	w, kc, virt := watchScene(2)
	kc.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no list"))
	})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	err := Watch(ctx, kube.Clients{Kube: kc, KubeVirt: virt}, []Workload{w}, func([]Progress) bool {
		t.Error("reported progress without the Pods")
		return true
	})
	if !apierrors.IsForbidden(err) {
		t.Errorf("Watch() = %v, want the API server's Forbidden at once", err)
	}
}

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
	kubevirtfake "kubevirt.io/client-go/kubevirt/fake"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
)

// virtFake is KubeVirt's fake clientset saying, as client-go's fakes do,
// that it cannot stream a first list; an informer would wait for good for
// the stream's end otherwise.
type virtFake struct{ *kubevirtfake.Clientset }

func (virtFake) IsWatchListSemanticsUnSupported() bool { return true }

// watchScene is testWorkload rolled out with two Pods of its template,
// which pins VM revision h2, and the Pods' VMs of revision vmRev.
func watchScene(vmRev string) (Workload, *kubefake.Clientset, virtFake) {
	w := rolledOut()
	d := w.Object.(*appsv1.Deployment)
	a, b := pod("web-a", "uid-a", "h2"), pod("web-b", "uid-b", "h2")
	a.Labels, b.Labels = d.Spec.Selector.MatchLabels, d.Spec.Selector.MatchLabels
	va, vb := vm(a, vmRev, true), vm(b, vmRev, true)
	return w, kubefake.NewClientset(d, &a, &b), virtFake{kubevirtfake.NewSimpleClientset(&va, &vb)}
}

func TestWatchFollowsUntilDone(t *testing.T) {
	w, kc, virt := watchScene("h1")
	// A fake clientset's watch sees only what happens after it is made,
	// which is after its informer's list: the VMs change once their watch
	// is made.
	vmsWatched := make(chan struct{}, 1)
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
	first := `Waiting for the VMs of deployment "web": 0 of 2 ready of VM revision h2 (2 of revision h1, which their Pods do not pin)...`
	select {
	case got := <-reports:
		if got != first {
			t.Fatalf("first report %q, want %q", got, first)
		}
	case err := <-done:
		t.Fatalf("Watch() = %v before its first report", err)
	}
	select {
	case <-vmsWatched:
	case <-ctx.Done():
		t.Fatal("Watch() never watched the VMs")
	}
	// The rollout happens: each Pod's VM is made again of revision h2.
	for _, p := range []corev1.Pod{pod("web-a", "uid-a", "h2"), pod("web-b", "uid-b", "h2")} {
		v := vm(p, "h2", true)
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
	if want := `deployment "web" successfully rolled out: 2 VMs ready of VM revision h2`; last != want {
		t.Errorf("last report %q, want %q", last, want)
	}
}

func TestWatchStopsWhenForbidden(t *testing.T) {
	w, kc, virt := watchScene("h2")
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

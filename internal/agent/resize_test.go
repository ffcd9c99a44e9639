package agent

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// The agent's own share and what its Pod asks for with a VM's room held.
func ownRequests() corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")}
}

func ownLimits() corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")}
}

func reservedRequests() corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1110m"), corev1.ResourceMemory: resource.MustParse("12320Mi")}
}

// reservingConfig is an agent whose Pod holds its VM's room: requests now
// are reservedRequests, or own when it gave them back before a restart.
func reservingConfig(now corev1.ResourceList) Config {
	cfg := testConfig()
	cfg.OwnRequests, cfg.OwnLimits, cfg.Requests = ownRequests(), ownLimits(), now
	return cfg
}

// agentPod is the agent's Pod as the API server holds it, with requests.
func agentPod(requests corev1.ResourceList) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: testPod, Namespace: testNamespace, UID: testPodUID},
		Spec: corev1.PodSpec{NodeName: testNode, Containers: []corev1.Container{{
			Name: ContainerName, Resources: corev1.ResourceRequirements{Requests: requests},
		}}},
	}
}

// resizes counts the agent's PATCHes of pods/resize and, while fail says
// so, refuses them; at each it records how many VMs the agent had created.
type resizes struct {
	n             atomic.Int32
	createsBefore atomic.Int32
	fail          atomic.Bool
}

func (r *resizes) watch(h *harness) {
	h.kube.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "resize" {
			return false, nil, nil
		}
		r.n.Add(1)
		r.createsBefore.Add(int32(h.api.count("create")))
		if r.fail.Load() {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods/resize"}, testPod, nil)
		}
		return false, nil, nil
	})
}

// TestGiveBackBeforeTheVM: an agent whose Pod holds its VM's room resizes
// it to its own requests, once, before it creates the VM.
func TestGiveBackBeforeTheVM(t *testing.T) {
	h := newHarness(t, reservingConfig(reservedRequests()), []*kubevirtv1.VirtualMachine{prototype(testProto)}, agentPod(reservedRequests()))
	var r resizes
	r.watch(h)
	h.start()
	h.watchFollowed()
	if n := r.n.Load(); n != 1 {
		t.Errorf("%d resizes, want 1", n)
	}
	if n := r.createsBefore.Load(); n != 0 {
		t.Errorf("%d VM creates before the resize, want none", n)
	}
	pod, err := h.kube.CoreV1().Pods(testNamespace).Get(t.Context(), testPod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := corev1.ResourceRequirements{Requests: ownRequests(), Limits: ownLimits()}
	if diff := cmp.Diff(want, pod.Spec.Containers[0].Resources, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
		t.Errorf("Pod's resources after the resize (-want +got):\n%s", diff)
	}
}

// TestGiveBackFails: while the resize is refused, the agent makes no VM,
// says why on /readyz and in one Warning Event, and retries; once it goes
// through, the VM is made.
func TestGiveBackFails(t *testing.T) {
	h := newHarness(t, reservingConfig(reservedRequests()), []*kubevirtv1.VirtualMachine{prototype(testProto)}, agentPod(reservedRequests()))
	var r resizes
	r.fail.Store(true)
	r.watch(h)
	h.start()
	h.waitReadyz(http.StatusServiceUnavailable, ReasonResizeFailed)
	e := h.waitEvent(corev1.EventTypeWarning, ReasonResizeFailed)
	h.eventually("the resize is retried", func() bool { return r.n.Load() >= 3 })
	if n := h.api.count("create"); n != 0 {
		t.Fatalf("%d VM creates while the Pod holds the room, want none", n)
	}
	for _, want := range []string{"to give back the room it holds for its VM", "grant the Pod's service account patch on pods/resize"} {
		if !strings.Contains(e.Message, want) {
			t.Errorf("Event %q does not say %q", e.Message, want)
		}
	}
	r.fail.Store(false)
	h.watchFollowed()
	if n := h.api.count("create"); n != 1 {
		t.Errorf("%d VM creates, want 1", n)
	}
}

// TestGiveBackOnlyOnce: an agent restarted after its resize (its requests
// are its own now) asks nothing more; one restarted before it resizes and
// adopts the VM it made.
func TestGiveBackOnlyOnce(t *testing.T) {
	for _, tt := range []struct {
		name    string
		now     corev1.ResourceList
		vm      bool
		resizes int32
	}{
		{name: "resized before the restart", now: ownRequests(), vm: true},
		{name: "VM made, Pod still holds the room", now: reservedRequests(), vm: true, resizes: 1},
		{name: "no reservation", resizes: 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := reservingConfig(tt.now)
			if tt.now == nil {
				cfg = testConfig()
			}
			vms := []*kubevirtv1.VirtualMachine{prototype(testProto)}
			if tt.vm {
				vms = append(vms, derived(t, testIdentity, "vm-uid"))
			}
			h := newHarness(t, cfg, vms, agentPod(tt.now))
			var r resizes
			r.watch(h)
			h.start()
			h.watchFollowed()
			if n := r.n.Load(); n != tt.resizes {
				t.Errorf("%d resizes, want %d", n, tt.resizes)
			}
		})
	}
}

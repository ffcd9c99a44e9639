package agent

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"
	kubevirtv1 "kubevirt.io/api/core/v1"
	kvfake "kubevirt.io/client-go/kubevirt/fake"
)

// harness runs an Agent against fake clientsets. The fakes stand in for the
// API server: a reactor gives created VMs a UID and resourceVersion, and
// every watch is reported on watches once it is registered, so tests change
// objects only after the agent can see the change.
type harness struct {
	t       *testing.T
	kv      *kvfake.Clientset
	kube    *k8sfake.Clientset
	agent   *Agent
	watches chan k8stesting.WatchActionImpl
	seq     atomic.Int64
	cancel  context.CancelCauseFunc
	done    chan struct{} // closed when Run returns
	err     error         // what Run returned
}

func newHarness(t *testing.T, cfg Config, vms []runtime.Object, kubeObjs ...runtime.Object) *harness {
	t.Helper()
	h := &harness{
		t:       t,
		kv:      kvfake.NewSimpleClientset(vms...),
		kube:    k8sfake.NewClientset(kubeObjs...),
		watches: make(chan k8stesting.WatchActionImpl, 100),
	}
	h.kv.PrependReactor("create", "virtualmachines", func(action k8stesting.Action) (bool, runtime.Object, error) {
		vm := action.(k8stesting.CreateAction).GetObject().(*kubevirtv1.VirtualMachine)
		n := h.seq.Add(1)
		vm.UID, vm.ResourceVersion = types.UID(fmt.Sprintf("created-uid-%d", n)), fmt.Sprint(100+n)
		return false, nil, nil // the tracker stores it
	})
	h.kv.PrependWatchReactor("virtualmachines", func(action k8stesting.Action) (bool, watch.Interface, error) {
		w, err := h.kv.Tracker().Watch(vmResource, action.GetNamespace())
		h.watches <- action.(k8stesting.WatchActionImpl)
		return true, w, err
	})
	if cfg.Prototype == "" {
		cfg = testConfig()
	}
	h.agent = New(cfg, h.kv, h.kube)
	return h
}

func testConfig() Config {
	return Config{
		Prototype: testProto, PrototypeNamespace: testNamespace, Namespace: testNamespace,
		Pod: testIdentity, ProbeAddress: "127.0.0.1:0", DeleteTimeout: 10 * time.Second,
		Backoff: testBackoff(),
	}
}

func (h *harness) start() {
	_, ctx := ktesting.NewTestContext(h.t)
	ctx, h.cancel = context.WithCancelCause(ctx)
	h.done = make(chan struct{})
	go func() {
		defer close(h.done)
		h.err = h.agent.Run(ctx)
	}()
	h.t.Cleanup(func() {
		h.cancel(errors.New("test over"))
		<-h.done
	})
}

// sigterm asks the agent to stop, as the signal handler would, and waits for Run.
func (h *harness) sigterm() error {
	h.t.Helper()
	h.cancel(errors.New("received terminated"))
	receive(h.t, h.done, "Run to return")
	return h.err
}

// nextWatch returns the next watch the agent opened.
func (h *harness) nextWatch() k8stesting.WatchActionImpl {
	h.t.Helper()
	return receive(h.t, h.watches, "a watch")
}

func (h *harness) eventually(what string, cond func() bool) {
	h.t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 2*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		h.t.Fatalf("timed out waiting until %s", what)
	}
}

func (h *harness) readyz() (int, string) {
	rec := httptest.NewRecorder()
	h.agent.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	return rec.Code, strings.TrimSpace(rec.Body.String())
}

func (h *harness) waitReadyz(code int, bodyContains string) {
	h.t.Helper()
	h.eventually(fmt.Sprintf("/readyz is %d %q", code, bodyContains), func() bool {
		c, body := h.readyz()
		return c == code && strings.Contains(body, bodyContains)
	})
}

// vm returns the VM the fake API server holds, or nil.
func (h *harness) vm(name string) *kubevirtv1.VirtualMachine {
	obj, err := h.kv.Tracker().Get(vmResource, testNamespace, name)
	if err != nil {
		return nil
	}
	return obj.(*kubevirtv1.VirtualMachine)
}

// update changes a VM in the fake API server; the agent's watch sees it.
func (h *harness) update(vm *kubevirtv1.VirtualMachine) {
	h.t.Helper()
	if err := h.kv.Tracker().Update(vmResource, vm, vm.Namespace); err != nil {
		h.t.Fatalf("updating VM %s: %v", vm.Name, err)
	}
}

// requests summarizes the KubeVirt API requests the agent made, in order.
func (h *harness) requests() []string {
	var out []string
	for _, a := range h.kv.Actions() {
		out = append(out, describe(a))
	}
	return out
}

func (h *harness) countRequests(prefix string) int {
	n := 0
	for _, r := range h.requests() {
		if strings.HasPrefix(r, prefix) {
			n++
		}
	}
	return n
}

func describe(a k8stesting.Action) string {
	ns := a.GetNamespace()
	switch a := a.(type) {
	// A DeleteAction is a GetAction too (both have GetName), so it goes first.
	case k8stesting.DeleteAction:
		return fmt.Sprintf("delete %s %s/%s", a.GetResource().Resource, ns, a.GetName())
	case k8stesting.GetAction:
		return fmt.Sprintf("get %s %s/%s", a.GetResource().Resource, ns, a.GetName())
	case k8stesting.CreateAction:
		m, _ := a.GetObject().(metav1.Object)
		return fmt.Sprintf("create %s %s/%s", a.GetResource().Resource, ns, m.GetName())
	case k8stesting.WatchAction:
		r := a.GetWatchRestrictions()
		return fmt.Sprintf("watch %s %s %s rv=%s", a.GetResource().Resource, ns, r.Fields, r.ResourceVersion)
	}
	return a.GetVerb() + " " + a.GetResource().Resource
}

// events returns the Events the agent posted, as "Type Reason: message".
func (h *harness) events() []*corev1.Event {
	var out []*corev1.Event
	for _, a := range h.kube.Actions() {
		if c, ok := a.(k8stesting.CreateAction); ok && a.GetResource().Resource == "events" {
			out = append(out, c.GetObject().(*corev1.Event))
		}
	}
	return out
}

func (h *harness) eventStrings() []string {
	var out []string
	for _, e := range h.events() {
		out = append(out, e.Type+" "+e.Reason)
	}
	return out
}

// waitEvent waits for an Event of typ and reason and returns it.
func (h *harness) waitEvent(typ, reason string) *corev1.Event {
	h.t.Helper()
	var found *corev1.Event
	h.eventually("Event "+typ+" "+reason+" is posted", func() bool {
		for _, e := range h.events() {
			if e.Type == typ && e.Reason == reason {
				found = e
				return true
			}
		}
		return false
	})
	return found
}

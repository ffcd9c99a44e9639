package agent

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

var vmResource = schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachines"}

// testBackoff retries at once, so tests wait on events, not on time.
func testBackoff() wait.Backoff {
	return wait.Backoff{Duration: time.Millisecond, Factor: 2, Cap: 20 * time.Millisecond, Steps: 1 << 30}
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

// harness runs an Agent against fakeAPI for KubeVirt and a fake clientset
// for the core API (Events, the Pod's GET).
type harness struct {
	t      *testing.T
	api    *fakeAPI
	kube   *k8sfake.Clientset
	agent  *Agent
	cancel context.CancelCauseFunc
	done   chan struct{} // closed when Run returns
	err    error         // what Run returned
	logs   ktesting.Buffer
	// clock is the agent's clock where a test advances it (the handover's
	// grace), or nil.
	clock *clocktesting.FakeClock
}

// newHarness runs an agent of cfg (the zero Config: testConfig()) among
// vms. Unless cfg pins a VM revision already, its Pod pins the revision of
// the prototype among vms, which the workload's revision store holds, as
// scaffold and rollout restart write them; without the prototype among
// vms, it pins the test prototype's revision, which no store holds.
func newHarness(t *testing.T, cfg Config, vms []*kubevirtv1.VirtualMachine, kubeObjs ...runtime.Object) *harness {
	t.Helper()
	if cfg.Prototype == "" {
		cfg = testConfig()
	}
	h := newUnpinnedHarness(t, cfg, vms, kubeObjs...)
	if cfg.VMRevisionHash == "" {
		proto := prototype(cfg.Prototype)
		i := slices.IndexFunc(vms, func(vm *kubevirtv1.VirtualMachine) bool {
			return vm.Name == cfg.Prototype && vm.Namespace == cfg.PrototypeNamespace
		})
		if i >= 0 {
			proto = vms[i]
		}
		cr, hashes := revisionStore(t, proto)
		if i >= 0 {
			h.api.putRevisions(cr)
		}
		h.agent = newAgent(pinned(cfg, hashes[0]), h.api, h.api, h.api, h.kube)
	}
	return h
}

// newUnpinnedHarness runs an agent of cfg as it is among vms.
func newUnpinnedHarness(t *testing.T, cfg Config, vms []*kubevirtv1.VirtualMachine, kubeObjs ...runtime.Object) *harness {
	t.Helper()
	h := &harness{t: t, api: newFakeAPI(t, vms...), kube: k8sfake.NewClientset(kubeObjs...)}
	h.agent = newAgent(cfg, h.api, h.api, h.api, h.kube)
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
	logger := ktesting.NewLogger(h.t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	h.logs = logger.GetSink().(ktesting.Underlier).GetBuffer()
	ctx, cancel := context.WithCancelCause(klog.NewContext(context.Background(), logger))
	h.cancel = cancel
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

// watchFollowed waits until the agent's watch of its VM, by name, is open
// and the VM it follows exists.
func (h *harness) watchFollowed() {
	h.t.Helper()
	h.eventually("the agent follows its VM", func() bool {
		followed := h.agent.latest.Load()
		if followed == nil || !h.api.watching(followed.Name) {
			return false
		}
		cur := h.api.object(followed.Name)
		return cur != nil && cur.UID == followed.UID
	})
}

// sigterm asks the agent to stop, as the signal handler would, and waits for Run.
func (h *harness) sigterm() error {
	h.t.Helper()
	h.cancel(errors.New("received terminated"))
	receive(h.t, h.done, "Run to return")
	return h.err
}

func (h *harness) eventually(what string, cond func() bool) {
	h.t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 2*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		h.t.Fatalf("timed out waiting until %s", what)
	}
}

// logged waits until the agent logged msg of the object at resourceVersion
// rv: the V(4) lines that say the agent is done with a state of its VM or
// VMI. A test that checks that a state changed nothing waits for them
// first, rather than for a while: on a slow machine a while may pass before
// the agent looked.
func (h *harness) logged(msg, rv string) {
	h.t.Helper()
	want := `resourceVersion="` + rv + `"`
	h.eventually(fmt.Sprintf("the agent logs %q at resourceVersion %s", msg, rv), func() bool {
		for line := range strings.SplitSeq(h.logs.String(), "\n") {
			if strings.Contains(line, msg) && strings.Contains(line, want) {
				return true
			}
		}
		return false
	})
}

// observed waits until the agent observed its VM at resourceVersion rv.
func (h *harness) observed(rv string) {
	h.t.Helper()
	h.logged("Observed the VM", rv)
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

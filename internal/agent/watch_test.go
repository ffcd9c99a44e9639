package agent

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// These tests run every watch of the agent against an API server whose
// watch cache has moved past the resourceVersion the watch knows, as after a
// kube-apiserver restart or in a busy namespace, including when the watched
// object itself has not changed since. Each asserts a request budget, and
// that nothing more is asked over a quiet spell far longer than the test
// backoff's retry delays (at most 20 ms): a hot loop fails them.

// quietSpell is a hundred times the test backoff's cap.
const quietSpell = 2 * time.Second

// requestsAfter returns the requests made after the first n.
func (h *harness) requestsAfter(n int) []string {
	return h.api.requestLog()[n:]
}

// expectQuiet fails t if any request arrives during quietSpell.
func (h *harness) expectQuiet(what string) {
	h.t.Helper()
	n := len(h.api.requestLog())
	time.Sleep(quietSpell)
	if after := h.requestsAfter(n); len(after) > 0 {
		h.t.Errorf("%s: %d requests in a quiet %v, want none: %q", what, len(after), quietSpell, after)
	}
}

// readyVM starts the agent and makes its VM ready.
func (h *harness) readyVM() *kubevirtv1.VirtualMachine {
	h.t.Helper()
	h.start()
	h.watchFollowed()
	vm := h.api.object(testVM)
	vm.Status.Ready = true
	h.api.put(vm)
	h.waitReadyz(200, "ok")
	return vm
}

// watchesBack waits until a watch of name is open again.
func (h *harness) watchesBack(name string) {
	h.t.Helper()
	h.eventually("a watch of "+name+" is open", func() bool { return h.api.watching(name) })
}

func TestFollowSurvivesAPIServerRestart(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		bookmark bool // the last bookmark came after the churn
		budget   int
	}{
		// A watch refused while the server is down ends the reflector's
		// ListAndWatch, so it comes back with one streaming list, not
		// a watch from its last version (410 Gone without a bookmark
		// since) and then the list.
		{name: "bookmark after the churn", bookmark: true, budget: 1},
		{name: "no bookmark since", budget: 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, Config{}, []*kubevirtv1.VirtualMachine{prototype(testProto)})
			vm := h.readyVM()
			// Unchanged since, while the rest of the namespace moved on.
			h.api.churn(500)
			if tt.bookmark {
				h.api.bookmark()
			}
			time.Sleep(100 * time.Millisecond)
			n := len(h.api.requestLog())

			h.api.restart(300*time.Millisecond, nil)
			h.watchesBack(testVM)
			h.expectQuiet("after the restart")
			after := h.requestsAfter(n)
			if len(after) > tt.budget {
				t.Errorf("%d requests to recover, want at most %d: %q", len(after), tt.budget, after)
			}
			for _, r := range after {
				if !strings.HasPrefix(r, "watch "+testVM+" ") {
					t.Errorf("request %q after the restart; want only watches of the VM", r)
				}
			}
			if got := h.api.object(testVM); got.UID != vm.UID {
				t.Errorf("VM UID %s after the restart, want %s: no VM replaced", got.UID, vm.UID)
			}
			if code, _ := h.readyz(); code != 200 {
				t.Errorf("/readyz %d after the restart, want 200", code)
			}
		})
	}
}

func TestDeletedWhileAPIServerDownIsRecreatedOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{}, []*kubevirtv1.VirtualMachine{prototype(testProto)})
	vm := h.readyVM()
	n := len(h.api.requestLog())

	h.api.restart(300*time.Millisecond, func() { h.api.removeVM(testVM) })

	h.eventually("the VM is recreated and followed", func() bool {
		again, followed := h.api.object(testVM), h.agent.latest.Load()
		return again != nil && again.UID != vm.UID && followed != nil && followed.UID == again.UID && h.api.watching(testVM)
	})
	h.expectQuiet("after the recreate")
	if again := h.api.object(testVM); again == nil || again.UID == vm.UID {
		t.Errorf("VM %v after the restart, want a new one", again)
	}
	if got := h.api.count("create "); got != 2 {
		t.Errorf("%d creates in all, want 2: the first, and one after the restart", got)
	}
	h.waitEvent(corev1.EventTypeWarning, ReasonVMDeleted)
	if after := h.requestsAfter(n); len(after) > 3 {
		t.Errorf("%d requests to notice and recreate, want at most 3 (streaming list, GET prototype, POST): %q", len(after), after)
	}
}

func TestAdoptAfterChurnOpensFromNow(t *testing.T) {
	t.Parallel()
	existing := derived(t, testIdentity, "existing-uid")
	h := newHarness(t, Config{}, []*kubevirtv1.VirtualMachine{prototype(testProto), existing})
	// The agent's container restarts in a busy namespace: its VM has not
	// changed since long before the watch cache's window.
	h.api.churn(5000)
	h.start()
	h.watchFollowed()
	h.expectQuiet("after adopting")
	want := []string{
		"get revisions " + testStore,
		"watch " + testPodVMs + " rv= initial",
		"watch " + testVM + " rv= initial",
	}
	if diff := cmp.Diff(want, h.api.requestLog()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	h.waitEvent(corev1.EventTypeNormal, ReasonAdopted)
}

func TestReplaceWaitsOnTerminatingVMAfterChurn(t *testing.T) {
	t.Parallel()
	earlier := testIdentity
	earlier.PodUID = "dead-pod-uid"
	existing := derived(t, earlier, "old-vm-uid")
	existing.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	existing.Finalizers = []string{metav1.FinalizerDeleteDependents}
	h := newHarness(t, Config{}, []*kubevirtv1.VirtualMachine{prototype(testProto), existing})
	h.api.holdDeletes = true
	h.api.churn(500)
	h.start()
	// The old VM has the Pod's label: the Pod's VM watch follows it.
	h.api.next("delete " + testVM)
	h.expectQuiet("waiting for the old VM to go")

	h.api.setHoldDeletes(false) // for the shutdown at the test's end
	h.api.finishDelete(testVM)
	h.watchFollowed()
	if vm := h.api.object(testVM); vm == nil || vm.UID == "old-vm-uid" {
		t.Fatalf("VM %v, want a new one once the old one went", vm)
	}
	want := []string{
		"get revisions " + testStore,
		"watch " + testPodVMs + " rv= initial",
		"watch " + testVM + " rv= initial",
		"create testvm-vmctl-abc",
		"get testvm-vmctl-abc",
		"delete testvm-vmctl-abc",
		"create testvm-vmctl-abc",
	}
	if diff := cmp.Diff(want, h.api.requestLog()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

func TestShutdownWaitAfterChurn(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{}, []*kubevirtv1.VirtualMachine{prototype(testProto)})
	h.readyVM()
	h.api.holdDeletes = true
	done := make(chan error, 1)
	go func() { done <- h.sigterm() }()
	h.api.next("delete " + testVM)

	n := len(h.api.requestLog())
	h.api.churn(500)
	h.api.restart(300*time.Millisecond, nil)
	h.watchesBack(testVM)
	h.expectQuiet("waiting for the deletion after a restart")
	if after := h.requestsAfter(n); len(after) > 2 {
		t.Errorf("%d requests to resume the shutdown's watch, want at most 2: %q", len(after), after)
	}
	h.api.finishDelete(testVM)
	if err := receive(t, done, "Run to return once the VM is gone"); err != nil {
		t.Errorf("Run() = %v", err)
	}
}

// TestWatchRefusedWhileCacheFillsWaitsACap: while the API server answers
// every watch 429 (its watch cache filling), the agent asks again only after
// a whole backoff cap, not on the backoff's first steps.
func TestWatchRefusedWhileCacheFillsWaitsACap(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.Backoff.Cap = 100 * time.Millisecond
	h := newHarness(t, cfg, []*kubevirtv1.VirtualMachine{prototype(testProto)})
	vm := h.readyVM()
	const window = 400 * time.Millisecond
	until := time.Now().Add(window)
	h.api.mu.Lock()
	h.api.fail = func(req string) error {
		if strings.HasPrefix(req, "watch ") && time.Now().Before(until) {
			return apierrors.NewTooManyRequests("storage is (re)initializing", 1)
		}
		return nil
	}
	h.api.mu.Unlock()
	n := len(h.api.requestLog())
	h.api.closeWatches()
	h.watchesBack(testVM)
	h.expectQuiet("after the cache filled")
	// Without the wait: 1, 2, 4, ... 64 ms, then 100 ms apart, about 9
	// tries in 400 ms. With it: at most one per cap, and the one that opens.
	if after := h.requestsAfter(n); len(after) > int(window/cfg.Backoff.Cap)+1 {
		t.Errorf("%d requests while the cache filled for %v, want at most %d: %q", len(after), window, int(window/cfg.Backoff.Cap)+1, after)
	}
	if got := h.api.object(testVM); got.UID != vm.UID {
		t.Errorf("VM UID %s, want %s", got.UID, vm.UID)
	}
}

// TestWatchNotFoundIsRetried: until a restarted API server has set up
// KubeVirt's CRDs, lists and watches of VMs answer 404. That is no refusal
// (kube.Refused): the agent reports nothing and watches again once VMs are
// served.
func TestWatchNotFoundIsRetried(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{}, []*kubevirtv1.VirtualMachine{prototype(testProto)})
	vm := h.readyVM()
	until := time.Now().Add(300 * time.Millisecond)
	h.api.mu.Lock()
	h.api.fail = func(req string) error {
		if (strings.HasPrefix(req, "watch ") || strings.HasPrefix(req, "list ")) && time.Now().Before(until) {
			return apierrors.NewNotFound(vmResource.GroupResource(), "")
		}
		return nil
	}
	h.api.mu.Unlock()
	h.api.closeWatches()
	h.watchesBack(testVM)
	h.expectQuiet("once VMs are served again")
	for _, e := range h.events() {
		if e.Reason == ReasonWatchDenied {
			t.Errorf("Event %s %q for a 404, which retrying fixes", e.Reason, e.Message)
		}
	}
	if code, reason := h.readyz(); code != 200 {
		t.Errorf("/readyz %d %q, want 200", code, reason)
	}
	if got := h.api.object(testVM); got.UID != vm.UID {
		t.Errorf("VM UID %s, want %s: no VM replaced", got.UID, vm.UID)
	}
}

// TestWatchLastsAsTheAPIServerWouldHaveIt: the agent's watch of its VM,
// kept for the Pod's life, asks to last 30 to 60 minutes, as the API
// server gives a watch that names no timeout, not client-go's 5 to 10: a
// thousand agents would otherwise each open a second within a ramp.
func TestWatchLastsAsTheAPIServerWouldHaveIt(t *testing.T) {
	h := newHarness(t, testConfig(), []*kubevirtv1.VirtualMachine{prototype(testProto)})
	h.start()
	h.watchFollowed()
	h.api.mu.Lock()
	timeouts := slices.Clone(h.api.timeouts)
	h.api.mu.Unlock()
	if len(timeouts) == 0 {
		t.Fatal("no watch")
	}
	for _, s := range timeouts {
		if d := time.Duration(s) * time.Second; d < watchTimeout || d > 2*watchTimeout {
			t.Errorf("a watch asked to last %v, want %v to %v", d, watchTimeout, 2*watchTimeout)
		}
	}
}

package agent

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/revision"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/stuck"
)

// testWorkload is the workload of the tests' pinned agents; testStore its
// revision store.
const (
	testWorkload = "web"
	testStore    = "web-vm-revisions"
)

// revisionStore is the revision store that holds a revision of each of
// protos, and their hashes, in order.
func revisionStore(t *testing.T, protos ...*kubevirtv1.VirtualMachine) (*unstructured.Unstructured, []string) {
	t.Helper()
	s := revision.NewStore(testNamespace, testWorkload)
	var hashes []string
	for _, p := range protos {
		r := revision.Snapshot(p)
		h, err := revision.Hash(r)
		if err != nil {
			t.Fatal(err)
		}
		s.Revisions[h] = r
		hashes = append(hashes, h)
	}
	cr, err := s.Object()
	if err != nil {
		t.Fatal(err)
	}
	if cr.GetName() != testStore {
		t.Fatalf("revision.StoreName(%q) = %q; these tests assume %q", testWorkload, cr.GetName(), testStore)
	}
	return cr, hashes
}

// pinned is cfg for a Pod whose template pins revision hash.
func pinned(cfg Config, hash string) Config {
	cfg.VMRevisionHash, cfg.StoreName = hash, testStore
	return cfg
}

// edited is the test prototype as someone changed it since its revision
// was pinned: another size, a label, a new generation.
func edited() *kubevirtv1.VirtualMachine {
	p := prototype(testProto)
	p.Generation = 2
	p.Labels = map[string]string{"release": "v2"}
	p.Spec.Template.Spec.Domain.CPU = &kubevirtv1.CPU{Cores: 4}
	return p
}

// TestPinnedDerivesFromTheRevision: an agent whose Pod pins a revision
// makes its VM from that revision, never reads the live prototype, and
// the VM names its revision; an edited prototype changes nothing, and its
// placement is not compared with the template's.
func TestPinnedDerivesFromTheRevision(t *testing.T) {
	cr, hashes := revisionStore(t, prototype(testProto))
	cfg := pinned(testConfig(), hashes[0])
	live := edited()
	live.Spec.Template.Spec.NodeSelector = map[string]string{"pool": "gpu"}
	h := newHarness(t, cfg, []*kubevirtv1.VirtualMachine{live})
	h.api.putRevisions(cr)
	h.start()
	h.watchFollowed()

	want, err := derive.VM(revision.Snapshot(prototype(testProto)),
		derive.Pod{Name: testPod, Namespace: testNamespace, UID: testPodUID, Node: testNode}, derive.Options{VMRevisionHash: hashes[0]})
	if err != nil {
		t.Fatal(err)
	}
	got := h.api.object(testVM)
	if got.Annotations[contract.AnnotationVMRevision] != hashes[0] {
		t.Errorf("VM annotation %s = %q, want the pinned %q", contract.AnnotationVMRevision, got.Annotations[contract.AnnotationVMRevision], hashes[0])
	}
	if diff := cmp.Diff(want.ObjectMeta, got.ObjectMeta, ignoreServerFields); diff != "" {
		t.Errorf("VM metadata is not the revision's derivation (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want.Spec, got.Spec); diff != "" {
		t.Errorf("VM spec is not the revision's derivation (-want +got):\n%s", diff)
	}
	ev := h.waitEvent(corev1.EventTypeNormal, ReasonCreated)
	if want := "Created VM default/testvm-vmctl-abc from VM revision " + hashes[0] + " of prototype default/testvm on node node-1"; ev.Message != want {
		t.Errorf("Event message %q, want %q", ev.Message, want)
	}
	// Events go out in order: a placement warning would be in by now.
	if diff := cmp.Diff([]string{"Normal Created"}, h.eventStrings()); diff != "" {
		t.Errorf("Events (-want +got):\n%s", diff)
	}
	wantRequests := []string{"get revisions " + testStore, "watch " + testPodVMs + " rv= initial", "watch " + testVM + " rv= initial", "create " + testVM}
	if diff := cmp.Diff(wantRequests, h.api.requestLog()); diff != "" {
		t.Errorf("API requests (-want +got):\n%s", diff)
	}
}

// ignoreServerFields leaves out what the API server sets on a VM.
var ignoreServerFields = cmp.FilterPath(func(p cmp.Path) bool {
	s := p.String()
	return s == "UID" || s == "ResourceVersion"
}, cmp.Ignore())

// TestPinnedWithoutThePrototype: with the prototype deleted, a pinned agent
// makes its VM, and makes it again when someone deletes it.
func TestPinnedWithoutThePrototype(t *testing.T) {
	cr, hashes := revisionStore(t, prototype(testProto))
	h := newHarness(t, pinned(testConfig(), hashes[0]), nil)
	h.api.putRevisions(cr)
	h.start()
	h.watchFollowed()
	first := h.api.object(testVM)
	h.api.removeVM(testVM)
	h.eventually("the VM made again", func() bool {
		vm := h.api.object(testVM)
		return vm != nil && vm.UID != first.UID
	})
	if n := h.api.count("get " + testProto); n != 0 {
		t.Errorf("%d GETs of the prototype, want none: %q", n, h.api.requestLog())
	}
}

// TestRevisionMissingWaitsForTheStore: a store that does not exist, lacks
// the pinned revision or cannot be read stops the agent: /readyz names
// the state, one Event says what to do, and the agent watches the store
// rather than reading it again, until a rollout puts the revision in it.
func TestRevisionMissingWaitsForTheStore(t *testing.T) {
	withRevision, hashes := revisionStore(t, prototype(testProto), edited())
	pin := hashes[0]
	without, _ := revisionStore(t, edited())
	unreadable, _ := revisionStore(t)
	unreadable.Object["spec"] = map[string]any{"revisions": []any{pin}}
	for _, tt := range []struct {
		name  string
		store *unstructured.Unstructured // nil: none
		want  string
	}{
		{name: "no store", want: "VM revision missing: revision " + pin + " is not in VMRevisionStore default/web-vm-revisions, which does not exist: " +
			"it was deleted or never rolled out; `kubectl vmctl rollout restart testvm -n default` pins a new one, " +
			"or `kubectl rollout undo` to a template whose revision is retained"},
		{name: "pruned", store: without, want: "VM revision missing: revision " + pin + " is not in VMRevisionStore default/web-vm-revisions: " +
			"it was pruned or never rolled out; `kubectl vmctl rollout restart testvm -n default` pins a new one, " +
			"or `kubectl rollout undo` to a template whose revision is retained"},
		{name: "unreadable", store: unreadable, want: "VM revision missing: revision " + pin + " cannot be read: " +
			"the revision store default/web-vm-revisions holds no revisions vmctl can read"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, pinned(testConfig(), pin), []*kubevirtv1.VirtualMachine{prototype(testProto)})
			if tt.store != nil {
				h.api.putRevisions(tt.store)
			}
			h.start()
			h.waitReadyz(503, stuck.ReasonRevisionMissing)
			ev := h.waitEvent(corev1.EventTypeWarning, stuck.ReasonRevisionMissing)
			if !strings.HasPrefix(ev.Message, tt.want) {
				t.Errorf("Event message\n%q, want one that starts\n%q", ev.Message, tt.want)
			}
			h.eventually("the agent watches the store", func() bool { return h.api.watching(testStore) })
			if n := h.api.count("get revisions "); n != 1 {
				t.Errorf("%d GETs of the store before its watch, want 1: %q", n, h.api.requestLog())
			}

			h.api.putRevisions(withRevision)
			h.watchFollowed()
			if got := h.api.object(testVM).Annotations[contract.AnnotationVMRevision]; got != pin {
				t.Errorf("VM of revision %q, want %q", got, pin)
			}
			if n := h.api.count("get revisions "); n != 2 {
				t.Errorf("%d GETs of the store, want 2: before and after it changed: %q", n, h.api.requestLog())
			}
			if n := h.api.count("watch revisions " + testStore); n != 1 {
				t.Errorf("%d watches of the store, want 1: %q", n, h.api.requestLog())
			}
			if n := h.api.count("get " + testProto); n != 0 {
				t.Errorf("%d GETs of the prototype, want none", n)
			}
			h.waitEvent(corev1.EventTypeNormal, ReasonCreated)
			if diff := cmp.Diff([]string{"Warning " + stuck.ReasonRevisionMissing, "Normal Created"}, h.eventStrings()); diff != "" {
				t.Errorf("Events (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRevisionRewrittenWaitsForTheStore: a store that holds the pinned
// revision under its hash with other content (pruned, then added again
// with, say, other userData) stops the agent as a missing one does: no VM
// of content no rollout pinned, /readyz and one Event naming the state,
// and a watch of the store until a rollout writes the revision anew.
func TestRevisionRewrittenWaitsForTheStore(t *testing.T) {
	honest, hashes := revisionStore(t, prototype(testProto))
	pin := hashes[0]
	rewritten := honest.DeepCopy()
	if err := unstructured.SetNestedField(rewritten.Object, int64(8), "spec", "revisions", pin, "spec", "template", "spec", "domain", "cpu", "cores"); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, pinned(testConfig(), pin), []*kubevirtv1.VirtualMachine{prototype(testProto)})
	h.api.putRevisions(rewritten)
	h.start()
	h.waitReadyz(503, stuck.ReasonRevisionRewritten)
	ev := h.waitEvent(corev1.EventTypeWarning, stuck.ReasonRevisionRewritten)
	want := "VM revision rewritten: VM revision " + pin + " in VMRevisionStore default/web-vm-revisions was rewritten after it was rolled out"
	if !strings.HasPrefix(ev.Message, want) || !strings.Contains(ev.Message, "kubectl vmctl rollout restart testvm") {
		t.Errorf("Event message\n%q, want one that starts\n%q and says what to run", ev.Message, want)
	}
	h.eventually("the agent watches the store", func() bool { return h.api.watching(testStore) })
	if n := h.api.count("create "); n != 0 {
		t.Fatalf("%d creates of the VM of a rewritten revision: %q", n, h.api.requestLog())
	}

	h.api.putRevisions(honest)
	h.watchFollowed()
	h.waitEvent(corev1.EventTypeNormal, ReasonCreated)
	if cpu := h.api.object(testVM).Spec.Template.Spec.Domain.CPU; cpu != nil && cpu.Cores == 8 {
		t.Errorf("VM of the rewritten revision's 8 cores, want the pinned revision's")
	}
	if diff := cmp.Diff([]string{"Warning " + stuck.ReasonRevisionRewritten, "Normal Created"}, h.eventStrings()); diff != "" {
		t.Errorf("Events (-want +got):\n%s", diff)
	}
}

// TestRevisionStoreForbidden: a store the agent may not read is a problem
// that says what to grant, once, and is retried after the backoff.
func TestRevisionStoreForbidden(t *testing.T) {
	cr, hashes := revisionStore(t, prototype(testProto))
	h := newHarness(t, pinned(testConfig(), hashes[0]), nil)
	h.api.putRevisions(cr)
	var denied atomic.Bool
	denied.Store(true)
	h.api.fail = func(req string) error {
		if denied.Load() && strings.HasPrefix(req, "get revisions ") {
			return apierrors.NewForbidden(revision.StoreGVR.GroupResource(), testStore, errors.New("no get"))
		}
		return nil
	}
	h.start()
	h.waitReadyz(503, ReasonRevisionUnavailable)
	ev := h.waitEvent(corev1.EventTypeWarning, ReasonRevisionUnavailable)
	if want := "grant the Pod's service account get, list and watch on vmrevisionstores.vmctl.kubevirt.io named web-vm-revisions in namespace default"; !strings.Contains(ev.Message, want) {
		t.Errorf("Event message %q does not say %q", ev.Message, want)
	}
	h.eventually("the agent retries", func() bool { return h.api.count("get revisions ") >= 3 })
	denied.Store(false)
	h.watchFollowed()
	h.waitEvent(corev1.EventTypeNormal, ReasonCreated)
	if diff := cmp.Diff([]string{"Warning " + ReasonRevisionUnavailable, "Normal Created"}, h.eventStrings()); diff != "" {
		t.Errorf("Events (-want +got):\n%s", diff)
	}
}

// TestRevisionMissingPollsWithoutWatchPermission: without leave to watch
// the store, the agent reads it again after the backoff, and says the
// state once.
func TestRevisionMissingPollsWithoutWatchPermission(t *testing.T) {
	withRevision, hashes := revisionStore(t, prototype(testProto))
	h := newHarness(t, pinned(testConfig(), hashes[0]), nil)
	h.api.fail = func(req string) error {
		if strings.HasPrefix(req, "list revisions ") || strings.HasPrefix(req, "watch revisions ") {
			return apierrors.NewForbidden(revision.StoreGVR.GroupResource(), testStore, errors.New("get only"))
		}
		return nil
	}
	h.start()
	h.waitEvent(corev1.EventTypeWarning, stuck.ReasonRevisionMissing)
	h.eventually("the agent polls the store", func() bool { return h.api.count("get revisions ") >= 3 })
	h.api.putRevisions(withRevision)
	h.watchFollowed()
	h.waitEvent(corev1.EventTypeNormal, ReasonCreated)
	if diff := cmp.Diff([]string{"Warning " + stuck.ReasonRevisionMissing, "Normal Created"}, h.eventStrings()); diff != "" {
		t.Errorf("Events (-want +got):\n%s", diff)
	}
}

// TestPinnedRevisionThatCannotBeDerived: a revision derive refuses, or one
// of another prototype, is said once with what to do, and the agent waits
// on the store, not on the prototype: only a new revision helps.
func TestPinnedRevisionThatCannotBeDerived(t *testing.T) {
	other := prototype("othervm")
	for _, tt := range []struct {
		name   string
		proto  *kubevirtv1.VirtualMachine
		reason string
		want   []string
	}{
		{name: "shared volumes", proto: withSharedPVC(prototype(testProto)), reason: ReasonSharedVolumes,
			want: []string{`volume "data"`, "the Pod pins VM revision", "fix the prototype, then `kubectl vmctl rollout restart testvm -n default`"}},
		{name: "another prototype's", proto: other, reason: ReasonInvalidPrototype,
			want: []string{"is a snapshot of prototype default/othervm, not of default/testvm", "`kubectl vmctl rollout restart testvm -n default`"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cr, hashes := revisionStore(t, tt.proto)
			h := newHarness(t, pinned(testConfig(), hashes[0]), []*kubevirtv1.VirtualMachine{prototype(testProto)})
			h.api.putRevisions(cr)
			h.start()
			h.waitReadyz(503, tt.reason)
			ev := h.waitEvent(corev1.EventTypeWarning, tt.reason)
			for _, w := range tt.want {
				if !strings.Contains(ev.Message, w) {
					t.Errorf("Event message %q lacks %q", ev.Message, w)
				}
			}
			h.eventually("the agent watches the store", func() bool { return h.api.watching(testStore) })
			if n := h.api.count("create ") + h.api.count("get "+testProto) + h.api.count("watch "+testProto); n != 0 {
				t.Errorf("requests of the VM or the prototype: %q", h.api.requestLog())
			}
		})
	}
}

// TestPinnedRequestBudget: a pinned agent whose Pod holds its VM's room and
// keeps a record asks the API server five things until its VM runs: GET
// the store, WATCH its VM, CREATE it, one Event, and its Pod's resize.
func TestPinnedRequestBudget(t *testing.T) {
	cr, hashes := revisionStore(t, prototype(testProto))
	cfg := pinned(reservingConfig(reservedRequests()), hashes[0])
	cfg.StateDir = t.TempDir()
	h := newHarness(t, cfg, nil, agentPod(reservedRequests()))
	h.api.putRevisions(cr)
	w := &podWrites{}
	w.watch(h)
	bound := launcherPod(launcherNeeds())
	bound.Spec.NodeName = testNode
	h.api.created = func(vm *kubevirtv1.VirtualMachine) {
		if err := h.kube.Tracker().Add(bound); err != nil {
			t.Error(err)
		}
		h.playVirtController()
	}
	h.start()
	h.watchFollowed()
	vm := h.api.object(testVM)
	vm.Status.Conditions, vm.Status.Ready, vm.Status.PrintableStatus = nil, true, kubevirtv1.VirtualMachineStatusRunning
	h.api.put(vm)
	h.waitReadyz(200, "ok")
	h.eventually("the handover over", func() bool { return w.count("resize") == 1 && !h.agent.handover.inProgress() })
	h.waitEvent(corev1.EventTypeNormal, ReasonCreated)

	requests := h.api.requestLog()
	for _, a := range h.kube.Actions() {
		// The test's own reads of the launcher Pod (playVirtController)
		// are not the agent's.
		if a.GetVerb() == "get" && a.GetResource().Resource == "pods" {
			continue
		}
		requests = append(requests, a.GetVerb()+" "+a.GetResource().Resource+" "+a.GetSubresource())
	}
	want := []string{"get revisions " + testStore, "watch " + testVM + " rv= initial", "create " + testVM, "create events ", "patch pods resize"}
	if diff := cmp.Diff(want, requests); diff != "" {
		t.Errorf("%d requests, want %d (-want +got):\n%s", len(requests), len(want), diff)
	}
}

// TestUnpinnedRefuses: a Pod whose template pins no VM revision (written
// or edited by hand) gets no VM, not even one of the live prototype: its
// agent reads neither the prototype nor a store, and says, as a stuck
// state, on /readyz and in one Event, how to pin it.
func TestUnpinnedRefuses(t *testing.T) {
	h := newUnpinnedHarness(t, testConfig(), []*kubevirtv1.VirtualMachine{prototype(testProto)})
	h.start()
	h.waitReadyz(503, stuck.ReasonNotPinned)
	ev := h.waitEvent(corev1.EventTypeWarning, stuck.ReasonNotPinned)
	for _, want := range []string{stuck.NotPinned, "kubectl vmctl rollout restart testvm -n default", "kubectl vmctl scaffold"} {
		if !strings.Contains(ev.Message, want) {
			t.Errorf("Event message %q does not say %q", ev.Message, want)
		}
	}
	if diff := cmp.Diff([]string(nil), h.api.requestLog()); diff != "" {
		t.Errorf("API requests (-want +got):\n%s", diff)
	}
	if h.api.object(testVM) != nil {
		t.Errorf("a VM was made of a Pod that pins no revision")
	}
	// Nothing but a new Pod pins a revision: the agent tries once, then
	// waits for its end, rather than failing again and again.
	h.eventually("the agent waits for its Pod to be replaced", func() bool {
		return strings.Contains(h.logs.String(), "Waiting for the Pod to be replaced")
	})
	if err := h.sigterm(); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(h.logs.String(), "INFO Not ready "); n != 1 {
		t.Errorf("the agent failed %d times on a Pod that pins no revision, want once:\n%s", n, h.logs.String())
	}
}

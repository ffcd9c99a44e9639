package agent

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/stuck"
)

// launcherPod is the launcher Pod KubeVirt makes for the agent's VM,
// unbound, asking for requests.
func launcherPod(requests corev1.ResourceList) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "virt-launcher-" + testVM + "-x7k2p", Namespace: testNamespace, UID: "launcher-uid",
			Labels: map[string]string{
				kubevirtv1.AppLabel: "virt-launcher", contract.LabelPrototype: testProto, contract.LabelPod: testPod,
			},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstance", Name: testVM, UID: "vmi-uid", Controller: ptrTrue()}},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "compute", Resources: corev1.ResourceRequirements{Requests: requests}}}},
	}
}

func ptrTrue() *bool { t := true; return &t }

var podsResource = corev1.SchemeGroupVersion.WithResource("pods")

// launcherNeeds is what the launcher Pod of a VM whose room the agent's
// Pod holds (reservedRequests less ownRequests) asks for.
func launcherNeeds() corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1100m"), corev1.ResourceMemory: resource.MustParse("12Gi")}
}

// podWrites records, in order, the agent's writes to Pods ("nominate" of
// the launcher Pod's status, "resize" of its own), and what it had done
// when it first listed Pods. It refuses a kind of write while told to.
type podWrites struct {
	mu            sync.Mutex
	log           []string
	createsAtList int
	resizesAtList int
	listed        bool
	refuse        map[string]bool
	// watches are the watches of Pods the agent opened.
	watches []*watch.RaceFreeFakeWatcher
}

func (w *podWrites) watch(h *harness) {
	h.kube.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.refuse["list"] {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", nil)
		}
		if !w.listed {
			w.listed = true
			w.createsAtList, w.resizesAtList = h.api.count("create"), w.countLocked("resize")
		}
		return false, nil, nil
	})
	h.kube.PrependWatchReactor("pods", func(a k8stesting.Action) (bool, watch.Interface, error) {
		var opts metav1.ListOptions
		if wa, ok := a.(k8stesting.WatchActionImpl); ok {
			opts = wa.ListOptions
		}
		wi, err := h.kube.Tracker().Watch(a.GetResource(), a.GetNamespace(), opts)
		if err != nil {
			return true, nil, err
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		w.watches = append(w.watches, wi.(*watch.RaceFreeFakeWatcher))
		return true, wi, nil
	})
	h.kube.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		w.log = append(w.log, "evict")
		return true, nil, nil
	})
	h.kube.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		kind := map[string]string{"status": "nominate", "resize": "resize"}[a.GetSubresource()]
		if kind == "" {
			return false, nil, nil
		}
		if kind == "nominate" && strings.Contains(string(a.(k8stesting.PatchAction).GetPatch()), `"nominatedNodeName":""`) {
			kind = "withdraw"
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		w.log = append(w.log, kind)
		if w.refuse[kind] {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods/" + a.GetSubresource()}, a.(k8stesting.PatchAction).GetName(), nil)
		}
		return false, nil, nil
	})
}

func (w *podWrites) setRefused(kind string, refused bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.refuse == nil {
		w.refuse = map[string]bool{}
	}
	w.refuse[kind] = refused
}

func (w *podWrites) countLocked(kind string) int {
	n := 0
	for _, k := range w.log {
		if k == kind {
			n++
		}
	}
	return n
}

func (w *podWrites) count(kind string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.countLocked(kind)
}

func (w *podWrites) writes() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.log)
}

// wasListed reports whether the agent listed Pods.
func (w *podWrites) wasListed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.listed
}

// unwatched waits until the agent stopped every watch of Pods it opened:
// no change of the launcher Pod reaches it then.
func (w *podWrites) unwatched(h *harness) {
	h.t.Helper()
	h.eventually("the launcher Pod no longer watched", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, wi := range w.watches {
			if !wi.IsStopped() {
				return false
			}
		}
		return len(w.watches) > 0
	})
}

// noMove is the MoveAfter of tests that mean no move: the agent's mover
// starts its clock on a VM unschedulable with nothing to excuse it, and no
// test lasts long enough for it to evict. A test that means a move gives
// a MoveAfter of a millisecond, and waits for the eviction.
const noMove = time.Hour

// reservingHarness runs an agent whose Pod holds its VM's room (or, with
// own requests now, gave it back before a restart), with vms, and the
// launcher Pod made with the VM, or at once when vms hold the VM (none
// when launcher is nil). The agent moves after moveAfter; its handover's
// grace runs on a fake clock, and ends only when the test ends it
// (endGrace).
func reservingHarness(t *testing.T, moveAfter time.Duration, now corev1.ResourceList, launcher *corev1.Pod, vms ...*kubevirtv1.VirtualMachine) (*harness, *podWrites) {
	cfg := reservingConfig(now)
	cfg.MoveAfter = moveAfter
	h := newHarness(t, cfg, append([]*kubevirtv1.VirtualMachine{prototype(testProto)}, vms...), agentPod(now))
	h.clock = clocktesting.NewFakeClock(time.Now())
	h.agent.clock = h.clock
	w := &podWrites{}
	w.watch(h)
	if launcher != nil {
		launch := func() {
			if err := h.kube.Tracker().Add(launcher); err != nil {
				h.t.Error(err)
			}
			h.playVirtController()
		}
		if h.api.object(testVM) != nil {
			launch()
		} else {
			h.api.created = func(vm *kubevirtv1.VirtualMachine) {
				if vm.Name == testVM {
					launch()
				}
			}
		}
	}
	return h, w
}

// playVirtController writes onto the VM what KubeVirt's virt-controller
// copies there from the VM's launcher Pod: unbound, the scheduler found no
// room for it (its PodScheduled condition, printableStatus
// ErrorUnschedulable), as the tests' launcher Pods never fit beside the
// room the Pod holds; bound, Starting, until setRunning says it runs.
func (h *harness) playVirtController() {
	h.t.Helper()
	if h.launcher().Spec.NodeName == "" {
		h.setUnschedulable()
		return
	}
	vm := h.api.object(testVM)
	vm.Status.Conditions, vm.Status.Ready, vm.Status.PrintableStatus = nil, false, kubevirtv1.VirtualMachineStatusStarting
	h.api.put(vm)
}

// endGrace ends the handover's grace: it waits until the grace runs (the
// room was given back) and advances the agent's clock past it.
func (h *harness) endGrace() {
	h.t.Helper()
	h.eventually("the handover's grace running", h.clock.HasWaiters)
	h.clock.Step(handoverGrace)
}

// handoverLooked waits until the handover acted on the VM at
// resourceVersion rv.
func (h *harness) handoverLooked(rv string) {
	h.t.Helper()
	h.logged("Handover looked at the VM", rv)
}

// launcher is the launcher Pod as the fake API server holds it now.
func (h *harness) launcher() *corev1.Pod {
	h.t.Helper()
	p, err := h.kube.CoreV1().Pods(testNamespace).Get(context.Background(), launcherPod(nil).Name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return p
}

// schedule plays the scheduler on the launcher Pod: change edits it, then
// it is written back whole, as the scheduler's status patch and binding
// change it; and virt-controller, which syncs the VMI.
func (h *harness) schedule(change func(*corev1.Pod)) {
	h.t.Helper()
	p := h.launcher()
	change(p)
	if err := h.kube.Tracker().Update(podsResource, p, testNamespace); err != nil {
		h.t.Fatal(err)
	}
	h.playVirtController()
}

// TestHandOverNominatesThenGivesBack: an agent whose Pod holds its VM's
// room makes the VM first, waits for the VM's launcher Pod, nominates it to
// its node, and only then resizes its Pod to its own requests, once. When
// the scheduler clears the nomination (the launcher Pod failed an attempt
// before the room was free), the agent nominates it again; once the
// launcher Pod is bound, it stops watching it and does nothing more, nor
// when its grace ends.
func TestHandOverNominatesThenGivesBack(t *testing.T) {
	h, w := reservingHarness(t, noMove, reservedRequests(), launcherPod(launcherNeeds()))
	h.start()
	h.eventually("the room is given back", func() bool { return w.count("resize") == 1 })
	if w.createsAtList != 1 || w.resizesAtList != 0 {
		t.Errorf("when the agent first looked for its launcher Pod: %d VM creates and %d resizes, want 1 and 0", w.createsAtList, w.resizesAtList)
	}
	if diff := cmp.Diff([]string{"nominate", "resize"}, w.writes()); diff != "" {
		t.Errorf("writes to Pods (-want +got):\n%s", diff)
	}
	if got := h.launcher().Status.NominatedNodeName; got != testNode {
		t.Errorf("launcher Pod nominated to %q, want %q", got, testNode)
	}
	pod, err := h.kube.CoreV1().Pods(testNamespace).Get(t.Context(), testPod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := corev1.ResourceRequirements{Requests: ownRequests(), Limits: ownLimits()}
	if diff := cmp.Diff(want, pod.Spec.Containers[0].Resources, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
		t.Errorf("Pod's resources after the resize (-want +got):\n%s", diff)
	}

	h.launcherWatched()
	h.schedule(func(p *corev1.Pod) { p.Status.NominatedNodeName = "" })
	h.eventually("the launcher Pod nominated again", func() bool { return w.count("nominate") == 2 })
	h.schedule(func(p *corev1.Pod) { p.Spec.NodeName, p.Status.NominatedNodeName = testNode, "" })
	w.unwatched(h)
	writes := w.writes()
	h.schedule(func(p *corev1.Pod) { p.Status.NominatedNodeName = "" })
	h.handoverLooked(h.api.object(testVM).ResourceVersion)
	if diff := cmp.Diff(writes, w.writes()); diff != "" {
		t.Errorf("writes to Pods after the launcher Pod was bound (-before +after):\n%s", diff)
	}
	h.endGrace()
	h.eventually("the handover over", func() bool { return !h.agent.handover.inProgress() })
	if diff := cmp.Diff(writes, w.writes()); diff != "" {
		t.Errorf("writes to Pods at the end of the grace, the launcher Pod bound (-before +after):\n%s", diff)
	}
	if n := w.count("resize"); n != 1 || len(writes) < 3 || len(writes) > 1+maxNominations || writes[0] != "nominate" || writes[1] != "resize" {
		t.Errorf("writes to Pods %q: want a nomination, the resize, then a nomination each time the scheduler cleared it (at most %d)", writes, maxNominations)
	}
	if n := h.api.count("create"); n != 1 {
		t.Errorf("%d VM creates, want 1", n)
	}
}

// launcherWatched waits until the agent watches the launcher Pod by name:
// the fake clientset's watch hears only the changes made after it opens.
func (h *harness) launcherWatched() {
	h.t.Helper()
	h.eventually("the launcher Pod watched", func() bool {
		return slices.ContainsFunc(podReads(h, "watch"), func(r k8stesting.ListRestrictions) bool {
			return r.Fields.String() == "metadata.name="+launcherPod(nil).Name
		})
	})
}

// podReads returns how the agent narrowed each of its lists or watches
// (verb) of Pods.
func podReads(h *harness, verb string) []k8stesting.ListRestrictions {
	var out []k8stesting.ListRestrictions
	for _, a := range h.kube.Actions() {
		if a.GetResource().Resource != "pods" || a.GetSubresource() != "" || a.GetVerb() != verb {
			continue
		}
		switch a := a.(type) {
		case k8stesting.ListAction:
			out = append(out, a.GetListRestrictions())
		case k8stesting.WatchAction:
			r := a.GetWatchRestrictions()
			out = append(out, k8stesting.ListRestrictions{Labels: r.Labels, Fields: r.Fields})
		}
	}
	return out
}

// TestHandOverReadsByName: the handover learns from the VM that the
// launcher Pod waits, lists the launcher Pods once by label, and watches
// the launcher Pod itself only by name, and only where it preempts (the
// scheduler may clear its nomination): the API server's watch cache hands
// a watch narrowed by label every Pod event of the namespace. It reads no
// VMI. One that never preempts costs the LIST and the nomination.
func TestHandOverReadsByName(t *testing.T) {
	for _, tt := range []struct {
		name    string
		policy  *corev1.PreemptionPolicy
		watches int
	}{
		{name: "launcher preempts", watches: 1},
		{name: "launcher never preempts", policy: ptr.To(corev1.PreemptNever)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			launcher := launcherPod(launcherNeeds())
			launcher.Spec.PreemptionPolicy = tt.policy
			h, w := reservingHarness(t, noMove, reservedRequests(), launcher)
			h.start()
			h.eventually("the room is given back", func() bool { return w.count("resize") == 1 })
			if tt.watches > 0 {
				h.launcherWatched()
			}
			h.schedule(func(p *corev1.Pod) { p.Spec.NodeName = testNode })
			h.setRunning()
			h.eventually("the handover over", func() bool { return !h.agent.handover.inProgress() })
			byName := "metadata.name=" + launcher.Name
			lists, watches := podReads(h, "list"), podReads(h, "watch")
			if len(lists) == 0 || lists[0].Labels.String() != h.agent.launcherSelector() || !lists[0].Fields.Empty() {
				t.Errorf("first list of Pods narrowed to %+v, want the launcher selector %q", lists, h.agent.launcherSelector())
			}
			for _, r := range lists[1:] {
				if r.Fields.String() != byName || !r.Labels.Empty() {
					t.Errorf("list of Pods narrowed to labels %q, fields %q, want %s", r.Labels, r.Fields, byName)
				}
			}
			for _, r := range watches {
				if r.Fields.String() != byName || !r.Labels.Empty() {
					t.Errorf("watch of Pods narrowed to labels %q, fields %q, want %s", r.Labels, r.Fields, byName)
				}
			}
			if len(watches) != tt.watches {
				t.Errorf("%d watches of the launcher Pod, want %d", len(watches), tt.watches)
			}
			for _, r := range h.api.requestLog() {
				if strings.Contains(r, "vmi") {
					t.Errorf("the handover read the VMI: %q", r)
				}
			}
			if diff := cmp.Diff([]string{"nominate", "resize"}, w.writes()); diff != "" {
				t.Errorf("writes to Pods (-want +got):\n%s", diff)
			}
		})
	}
}

// TestHandOverToALauncherThatFits: a launcher Pod bound beside the room
// the Pod holds costs the handover only the resize, once the VM runs: no
// read of Pods or VMIs, no nomination.
func TestHandOverToALauncherThatFits(t *testing.T) {
	bound := launcherPod(launcherNeeds())
	bound.Spec.NodeName = testNode
	h, w := reservingHarness(t, noMove, reservedRequests(), bound)
	h.start()
	h.watchFollowed()
	starting := h.api.object(testVM)
	if starting.Status.PrintableStatus != kubevirtv1.VirtualMachineStatusStarting {
		t.Fatalf("VM %s, want it Starting, its launcher Pod bound", starting.Status.PrintableStatus)
	}
	h.handoverLooked(starting.ResourceVersion)
	if n := w.count("resize"); n != 0 {
		t.Errorf("%d resizes before the VM runs, want none: the launcher Pod may still need the room", n)
	}
	h.setRunning()
	h.eventually("the handover over", func() bool { return w.count("resize") == 1 && !h.agent.handover.inProgress() })
	if diff := cmp.Diff([]string{"resize"}, w.writes()); diff != "" {
		t.Errorf("writes to Pods (-want +got):\n%s", diff)
	}
	if w.wasListed() {
		t.Error("the agent listed Pods")
	}
	want := []string{"get revisions " + testStore, "watch " + testPodVMs + " rv= initial", "watch " + testVM + " rv= initial", "create " + testVM}
	if diff := cmp.Diff(want, h.api.requestLog()); diff != "" {
		t.Errorf("KubeVirt API requests (-want +got):\n%s", diff)
	}
}

// TestHandOverKeepsUnschedulableToItself: while the Pod holds the room or
// gave it back moments ago, the VM's launcher Pod cannot be scheduled, or
// is refused by a quota that counts the room twice, by design: /readyz
// says the agent is handing over, and no Event is posted nor a move begun.
// A refused launcher Pod makes the agent give the room back without
// reading Pods. Once the handover is over and the VM still cannot be
// scheduled, the agent says so, and moves.
func TestHandOverKeepsUnschedulableToItself(t *testing.T) {
	h, w := reservingHarness(t, time.Millisecond, reservedRequests(), nil)
	h.start()
	h.watchFollowed()
	vm := h.api.object(testVM)
	vm.Status.Conditions = []kubevirtv1.VirtualMachineCondition{{
		Type: kubevirtv1.VirtualMachineConditionType(kubevirtv1.VirtualMachineInstanceSynchronized), Status: corev1.ConditionFalse,
		Reason: "FailedCreate", Message: `failed to create virtual machine pod: pods "virt-launcher-x" is forbidden: exceeded quota: vms`,
	}}
	h.api.put(vm)
	h.handoverLooked(h.api.object(testVM).ResourceVersion)
	if n := w.count("resize"); n != 1 {
		t.Errorf("%d resizes once the launcher Pod was refused, want 1", n)
	}
	if w.wasListed() {
		t.Error("the agent listed Pods for a launcher Pod the API server refused")
	}
	duringHandover := func(when string) {
		t.Helper()
		if code, body := h.readyz(); code != http.StatusServiceUnavailable || body != ReadyzHandingOver {
			t.Errorf("%s: /readyz %d %q, want %d %s", when, code, body, http.StatusServiceUnavailable, ReadyzHandingOver)
		}
		if h.agent.move.armed() || w.count("evict") != 0 {
			t.Errorf("%s: a move begun (evictions %d)", when, w.count("evict"))
		}
		for _, e := range h.events() {
			if e.Reason == stuck.ReasonLauncherRefused || e.Reason == stuck.ReasonUnschedulable {
				t.Errorf("%s: Event %s %s: %s", when, e.Type, e.Reason, e.Message)
			}
		}
	}
	duringHandover("launcher Pod refused")
	h.setUnschedulable()
	h.handoverLooked(h.api.object(testVM).ResourceVersion)
	duringHandover("launcher Pod unschedulable")

	h.endGrace()
	h.eventually("a move once the handover is over", func() bool { return w.count("evict") == 1 })
	h.waitEvent(corev1.EventTypeWarning, stuck.ReasonUnschedulable)
	for _, e := range h.events() {
		if e.Reason == stuck.ReasonLauncherRefused {
			t.Errorf("Event %s %s: %s, of a refusal during the handover", e.Type, e.Reason, e.Message)
		}
	}
	if diff := cmp.Diff([]string{"resize", "evict"}, w.writes()); diff != "" {
		t.Errorf("writes to Pods (-want +got):\n%s", diff)
	}
}

// TestHandOverWithoutRights: an agent whose Role predates the handover
// gives the room back all the same: at once after making its VM where it
// cannot read Pods, its handover over then; and without a nomination
// where it cannot patch pods/status, having tried once.
func TestHandOverWithoutRights(t *testing.T) {
	for _, tt := range []struct {
		refused string
		writes  []string
		// atOnce: the handover ends without waiting out its grace.
		atOnce bool
	}{
		{refused: "list", writes: []string{"resize"}, atOnce: true},
		{refused: "nominate", writes: []string{"nominate", "resize"}},
	} {
		t.Run("refused "+tt.refused, func(t *testing.T) {
			h, w := reservingHarness(t, noMove, reservedRequests(), launcherPod(launcherNeeds()))
			w.setRefused(tt.refused, true)
			h.start()
			h.eventually("the room is given back", func() bool { return w.count("resize") == 1 })
			if !tt.atOnce {
				h.endGrace()
			}
			h.eventually("the handover over", func() bool { return !h.agent.handover.inProgress() })
			if diff := cmp.Diff(tt.writes, w.writes()); diff != "" {
				t.Errorf("writes to Pods (-want +got):\n%s", diff)
			}
		})
	}
}

// TestGiveBackFails: while the resize is refused, the VM's launcher Pod
// waits; the agent says why on /readyz and in one Warning Event, and
// retries. Once it goes through, the grace begins, and the handover ends
// with it.
func TestGiveBackFails(t *testing.T) {
	h, w := reservingHarness(t, noMove, reservedRequests(), launcherPod(launcherNeeds()))
	w.setRefused("resize", true)
	h.start()
	h.waitReadyz(http.StatusServiceUnavailable, ReasonResizeFailed)
	e := h.waitEvent(corev1.EventTypeWarning, ReasonResizeFailed)
	h.eventually("the resize is retried", func() bool { return w.count("resize") >= 3 })
	for _, want := range []string{"to give back the room it holds for its VM", "grant the Pod's service account patch on pods/resize"} {
		if !strings.Contains(e.Message, want) {
			t.Errorf("Event %q does not say %q", e.Message, want)
		}
	}
	if n := len(h.eventStrings()); n != 2 {
		t.Errorf("Events %q, want Created and one ResizeFailed", h.eventStrings())
	}
	if h.clock.HasWaiters() {
		t.Error("the handover's grace began before the room was given back")
	}
	w.setRefused("resize", false)
	h.schedule(func(p *corev1.Pod) { p.Spec.NodeName = testNode })
	h.endGrace()
	h.eventually("the handover over", func() bool { return !h.agent.handover.inProgress() })
	if n := h.api.count("create"); n != 1 {
		t.Errorf("%d VM creates, want 1", n)
	}
}

// TestGiveBackOnlyOnce: an agent restarted after its resize (its requests
// are its own now) asks nothing more: it neither hands over nor reads
// Pods, and says its VM cannot be scheduled; one restarted before it
// resized adopts the VM it made and hands the room over.
func TestGiveBackOnlyOnce(t *testing.T) {
	for _, tt := range []struct {
		name   string
		now    corev1.ResourceList
		writes []string
	}{
		{name: "resized before the restart", now: ownRequests()},
		{name: "VM made, Pod still holds the room", now: reservedRequests(), writes: []string{"nominate", "resize", "withdraw"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h, w := reservingHarness(t, noMove, tt.now, launcherPod(launcherNeeds()), derived(t, testIdentity, "vm-uid"))
			h.start()
			h.watchFollowed()
			if tt.writes == nil {
				// The agent decides on a handover before it looks at the VM.
				h.waitReadyz(http.StatusServiceUnavailable, stuck.ReasonUnschedulable)
				if h.agent.handover.inProgress() || w.wasListed() {
					t.Errorf("an agent that gave the room back before its restart hands over (listed Pods: %v)", w.wasListed())
				}
			} else {
				h.endGrace()
				h.eventually("the handover over", func() bool { return !h.agent.handover.inProgress() })
			}
			if diff := cmp.Diff(tt.writes, w.writes(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("writes to Pods (-want +got):\n%s", diff)
			}
			if uid := h.api.object(testVM).UID; uid != "vm-uid" {
				t.Errorf("VM %s has UID %s, want the adopted vm-uid", testVM, uid)
			}
		})
	}
	t.Run("no reservation", func(t *testing.T) {
		h := newHarness(t, testConfig(), []*kubevirtv1.VirtualMachine{prototype(testProto)})
		w := &podWrites{}
		w.watch(h)
		h.start()
		h.watchFollowed()
		if h.agent.needsLauncher() || w.wasListed() || len(w.writes()) > 0 {
			t.Errorf("an agent without a reservation follows its launcher Pod (listed %v) or writes Pods: %q", w.wasListed(), w.writes())
		}
	})
}

// TestReservationStale: a launcher Pod that asks for more than the Pod's
// template holds (the template was rolled back) makes the agent say so
// once, with both sizes and the fix, and as a warning on /readyz while the
// VM is ready; a VM that then cannot be scheduled does not move, since its
// Pod's replacement would hold as little: the agent does not even start
// the clock of a move that would be due at once. One that asks for what
// the template holds says nothing.
func TestReservationStale(t *testing.T) {
	t.Run("template holds less", func(t *testing.T) {
		bigger := launcherNeeds()
		bigger[corev1.ResourceMemory] = resource.MustParse("12544Mi")
		h, w := reservingHarness(t, time.Millisecond, reservedRequests(), launcherPod(bigger))
		h.agent.cfg.Reservation = "cpu=1100m,memory=12Gi"
		h.start()
		e := h.waitEvent(corev1.EventTypeWarning, ReasonReservationStale)
		for _, want := range []string{"holds cpu=1100m,memory=12Gi", "asks for cpu=1100m,memory=12544Mi", "kubectl vmctl rollout restart " + testProto + " -n " + testNamespace} {
			if !strings.Contains(e.Message, want) {
				t.Errorf("Event %q does not say %q", e.Message, want)
			}
		}
		h.schedule(func(p *corev1.Pod) { p.Spec.NodeName = testNode })
		h.setRunning()
		h.waitReadyz(http.StatusOK, "ok\nwarning: "+ReasonReservationStale)
		h.eventually("the handover over", func() bool { return !h.agent.handover.inProgress() })
		h.setUnschedulable()
		// Said once the agent looked at the unschedulable VM, after it
		// decided on the move.
		h.waitReadyz(http.StatusServiceUnavailable, ReasonReservationStale)
		if h.agent.move.armed() || w.count("evict") != 0 {
			t.Errorf("a move begun (evictions %d) of a Pod whose template holds too little: its replacement would too", w.count("evict"))
		}
	})
	t.Run("template holds what the launcher asks", func(t *testing.T) {
		h, w := reservingHarness(t, noMove, reservedRequests(), launcherPod(launcherNeeds()))
		h.start()
		h.eventually("the room is given back", func() bool { return w.count("resize") == 1 })
		h.schedule(func(p *corev1.Pod) { p.Spec.NodeName = testNode })
		h.setRunning()
		h.waitReadyz(http.StatusOK, "ok")
		if _, body := h.readyz(); body != "ok" {
			t.Errorf("/readyz = %q, want ok", body)
		}
		for _, e := range h.events() {
			if e.Reason == ReasonReservationStale {
				t.Errorf("Event %s: %s", e.Reason, e.Message)
			}
		}
	})
}

// TestHandOverWithdrawsAnUnusedNomination: a launcher Pod still not bound
// when the handover is over loses the nomination the agent gave it, which
// a launcher Pod that never preempts would otherwise keep, and with it the
// room, from every Pod of its priority.
func TestHandOverWithdrawsAnUnusedNomination(t *testing.T) {
	h, w := reservingHarness(t, noMove, reservedRequests(), launcherPod(launcherNeeds()))
	h.start()
	h.endGrace()
	h.eventually("the handover over", func() bool { return !h.agent.handover.inProgress() })
	if diff := cmp.Diff([]string{"nominate", "resize", "withdraw"}, w.writes()); diff != "" {
		t.Errorf("writes to Pods (-want +got):\n%s", diff)
	}
	if got := h.launcher().Status.NominatedNodeName; got != "" {
		t.Errorf("launcher Pod still nominated to %q", got)
	}
}

// TestLauncherOf: where the VM's launcher Pod stands, as virt-controller
// writes it onto the VM.
func TestLauncherOf(t *testing.T) {
	unschedulable := []kubevirtv1.VirtualMachineCondition{{Type: "PodScheduled", Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/3 nodes are available"}}
	refused := []kubevirtv1.VirtualMachineCondition{{
		Type: kubevirtv1.VirtualMachineConditionType(kubevirtv1.VirtualMachineInstanceSynchronized), Status: corev1.ConditionFalse,
		Reason: "FailedCreate", Message: "failed to create virtual machine pod: exceeded quota",
	}}
	for _, tt := range []struct {
		name   string
		status kubevirtv1.VirtualMachineStatus
		want   launcherState
	}{
		{name: "no status yet", want: launcherUnknown},
		{name: "starting: not tried, or bound and not running", status: kubevirtv1.VirtualMachineStatus{PrintableStatus: kubevirtv1.VirtualMachineStatusStarting}, want: launcherUnknown},
		{name: "no room", status: kubevirtv1.VirtualMachineStatus{PrintableStatus: kubevirtv1.VirtualMachineStatusUnschedulable, Conditions: unschedulable}, want: launcherWaits},
		{name: "refused", status: kubevirtv1.VirtualMachineStatus{Conditions: refused}, want: launcherRefused},
		{name: "running", status: kubevirtv1.VirtualMachineStatus{PrintableStatus: kubevirtv1.VirtualMachineStatusRunning}, want: launcherPlaced},
		{name: "ready", status: kubevirtv1.VirtualMachineStatus{Ready: true}, want: launcherPlaced},
		{name: "image pull on its node", status: kubevirtv1.VirtualMachineStatus{PrintableStatus: kubevirtv1.VirtualMachineStatusErrImagePull}, want: launcherPlaced},
		{name: "a missing PVC: no launcher Pod", status: kubevirtv1.VirtualMachineStatus{PrintableStatus: kubevirtv1.VirtualMachineStatusPvcNotFound}, want: launcherUnknown},
	} {
		t.Run(tt.name, func(t *testing.T) {
			vm := &kubevirtv1.VirtualMachine{Spec: kubevirtv1.VirtualMachineSpec{RunStrategy: ptr.To(kubevirtv1.RunStrategyAlways)}, Status: tt.status}
			if got := launcherOf(vm); got != tt.want {
				t.Errorf("launcherOf() = %d, want %d", got, tt.want)
			}
		})
	}
}

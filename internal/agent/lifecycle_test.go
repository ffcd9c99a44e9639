package agent

import (
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/stuck"
)

func TestCreatesVMAndMirrorsReadiness(t *testing.T) {
	h := newHarness(t, Config{}, []*kubevirtv1.VirtualMachine{prototype(testProto)})
	if got := h.agent.VMName(); got != testVM {
		t.Fatalf("VMName() = %q; these tests assume derive.Name gives %q", got, testVM)
	}
	h.start()

	h.watchFollowed()
	vm := h.api.object(testVM)
	if vm == nil {
		t.Fatalf("VM %s not created", testVM)
	}
	a := vm.Annotations
	if a[contract.AnnotationPodUID] != string(testPodUID) || a[contract.AnnotationNode] != testNode || a[contract.AnnotationPodName] != testPod {
		t.Errorf("VM annotations = %v, want this Pod's name, UID and node", a)
	}
	if vm.Spec.RunStrategy == nil || *vm.Spec.RunStrategy != kubevirtv1.RunStrategyAlways {
		t.Errorf("VM runStrategy = %v, want Always", vm.Spec.RunStrategy)
	}
	h.waitReadyz(503, "VMNotReady")

	vm.Status.PrintableStatus = kubevirtv1.VirtualMachineStatusStarting
	h.api.put(vm)
	h.waitReadyz(503, "VMNotReady: Starting")
	vm.Status.Ready, vm.Status.PrintableStatus = true, kubevirtv1.VirtualMachineStatusRunning
	h.api.put(vm)
	h.waitReadyz(200, "ok")
	vm.Status.Ready, vm.Status.PrintableStatus = false, kubevirtv1.VirtualMachineStatusStopping
	h.api.put(vm)
	h.waitReadyz(503, "VMNotReady: Stopping")

	// Request budget before steady state: GET the revision store, one streaming
	// list of the VMs labelled for the Pod, closed once in, one streaming
	// list of the VM by name that stays open as the watch, CREATE, one
	// Event.
	want := []string{
		"get revisions " + testStore,
		"watch " + testPodVMs + " rv= initial",
		"watch " + testVM + " rv= initial",
		"create testvm-vmctl-abc",
	}
	if diff := cmp.Diff(want, h.api.requestLog()); diff != "" {
		t.Errorf("KubeVirt API requests (-want +got):\n%s", diff)
	}
	// The API server hands a watch by labels every event of the namespace
	// to filter: none stays open.
	h.eventually("the watch by labels closed", func() bool { return !h.api.watching(testPodVMs) })
	ev := h.waitEvent(corev1.EventTypeNormal, ReasonCreated)
	wantRef := corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Name: testPod, Namespace: testNamespace, UID: testPodUID}
	if diff := cmp.Diff(wantRef, ev.InvolvedObject); diff != "" {
		t.Errorf("Event involvedObject (-want +got):\n%s", diff)
	}
	if ev.Namespace != testNamespace || ev.Source.Component != EventComponent || !strings.Contains(ev.Message, "Created VM default/testvm-vmctl-abc from VM revision "+h.agent.cfg.VMRevisionHash+" of prototype default/testvm on node node-1") {
		t.Errorf("Event = %s/%s %+v %q", ev.Namespace, ev.Name, ev.Source, ev.Message)
	}
	var kubeRequests []string
	for _, a := range h.kube.Actions() {
		kubeRequests = append(kubeRequests, a.GetVerb()+" "+a.GetResource().Resource)
	}
	if diff := cmp.Diff([]string{"create events"}, kubeRequests); diff != "" {
		t.Errorf("core API requests (-want +got); NODE_NAME and POD_UID are set, so no Pod GET:\n%s", diff)
	}
}

func TestShutdownDeletesVMInBackground(t *testing.T) {
	h := newHarness(t, Config{}, []*kubevirtv1.VirtualMachine{prototype(testProto)})
	var deletes []metav1.DeleteOptions
	h.api.onDelete = func(opts metav1.DeleteOptions) { deletes = append(deletes, opts) }
	h.start()
	h.watchFollowed()
	uid := h.api.object(testVM).UID

	if err := h.sigterm(); err != nil {
		t.Fatalf("Run() = %v, want nil after a clean shutdown", err)
	}
	if h.api.object(testVM) != nil {
		t.Errorf("VM %s still exists after shutdown", testVM)
	}
	background := metav1.DeletePropagationBackground
	want := []metav1.DeleteOptions{{Preconditions: &metav1.Preconditions{UID: &uid}, PropagationPolicy: &background}}
	if diff := cmp.Diff(want, deletes); diff != "" {
		t.Errorf("DELETE options (-want +got):\n%s", diff)
	}
	if code, body := h.readyz(); code != 503 || body != ReadyzShuttingDown {
		t.Errorf("/readyz after shutdown = %d %q, want 503 ShuttingDown", code, body)
	}
}

func TestShutdownWaitsForTheVMToGo(t *testing.T) {
	h := newHarness(t, Config{}, []*kubevirtv1.VirtualMachine{prototype(testProto)})
	// As KubeVirt's finalizer does: the VM only gets a deletionTimestamp; it
	// goes when its VMI is gone.
	h.api.holdDeletes = true
	h.start()
	h.watchFollowed()

	done := make(chan error, 1)
	go func() { done <- h.sigterm() }()
	h.api.next("delete " + testVM)
	select {
	case err := <-done:
		t.Fatalf("Run() = %v before the VM was gone", err)
	case <-time.After(100 * time.Millisecond):
	}
	h.api.finishDelete(testVM)
	if err := receive(t, done, "Run to return once the VM is gone"); err != nil {
		t.Errorf("Run() = %v", err)
	}
	// The Pod's VM watch, open since the start, saw the VM go.
	if n := h.api.count("watch " + testVM); n != 1 {
		t.Errorf("%d watches of %s by name, want the one open since the start: %q", n, testVM, h.api.requestLog())
	}
}

func TestShutdownGivesUpAfterDeleteTimeout(t *testing.T) {
	cfg := testConfig()
	cfg.DeleteTimeout = 50 * time.Millisecond
	h := newHarness(t, cfg, []*kubevirtv1.VirtualMachine{prototype(testProto)})
	h.api.holdDeletes = true // accepted, but the VM never goes
	h.start()
	h.watchFollowed()
	start := time.Now()
	// The VM may outlive the Pod: say so with the exit code and the
	// termination message (Run's error), not only in the log.
	err := h.sigterm()
	if err == nil || !strings.Contains(err.Error(), "may outlive the Pod") || !strings.Contains(err.Error(), "shutdown deadline") {
		t.Fatalf("Run() = %v, want an error saying the VM may outlive the Pod", err)
	}
	if h.api.object(testVM) == nil {
		t.Error("VM vanished, but the fake never deletes it")
	}
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("shutdown took %v with a 50ms delete timeout", elapsed)
	}
}

// TestShutdownDeadlineCoversCreateInFlight: a create still going on at the
// signal may run on, but only until the one shutdown deadline; the delete
// gets no new clock of its own after it.
func TestShutdownDeadlineCoversCreateInFlight(t *testing.T) {
	cfg := testConfig()
	cfg.DeleteTimeout = 300 * time.Millisecond
	h := newHarness(t, cfg, []*kubevirtv1.VirtualMachine{prototype(testProto)})
	h.api.stallCreates = true // the API server takes its time
	h.start()
	h.api.next("create " + testVM)
	start := time.Now()
	err := h.sigterm()
	if elapsed := time.Since(start); elapsed > 3*time.Second {
		t.Errorf("shutdown took %v with a 300ms deadline", elapsed)
	}
	if err == nil || !strings.Contains(err.Error(), "its create was still going on") {
		t.Errorf("Run() = %v, want an error saying the cut-short create may have made the VM", err)
	}
}

// TestLogsWhenGuestGracePeriodDoesNotFit: the agent logs, once, that its
// VM may outlive the Pod, but records no Event: the warning holds for the
// whole prototype, and scaffold and status say it.
func TestLogsWhenGuestGracePeriodDoesNotFit(t *testing.T) {
	proto := prototype(testProto)
	proto.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr.To[int64](600)
	h := newHarness(t, Config{}, []*kubevirtv1.VirtualMachine{proto})
	h.start()
	h.watchFollowed()
	// The check runs before the create, so its Event would come first.
	h.waitEvent(corev1.EventTypeNormal, ReasonCreated)
	if diff := cmp.Diff([]string{"Normal Created"}, h.eventStrings()); diff != "" {
		t.Errorf("Events (-want +got):\n%s", diff)
	}
	logs := h.logs.String()
	if n := strings.Count(logs, "Grace period too short"); n != 1 {
		t.Errorf("logged the grace period %d times, want once:\n%s", n, logs)
	}
	for _, want := range []string{"10m0s", "10s", "--grace-period 620", "may outlive its Pod"} {
		if !strings.Contains(logs, want) {
			t.Errorf("log does not say %q:\n%s", want, logs)
		}
	}
	if h.api.object(testVM) == nil {
		t.Error("no VM: the warning must not stop the agent")
	}
}

func TestShutdownWithoutVM(t *testing.T) {
	h := newHarness(t, Config{}, nil) // no revision store: nothing is ever created
	h.start()
	h.waitReadyz(503, stuck.ReasonRevisionMissing)
	if err := h.sigterm(); err != nil {
		t.Fatalf("Run() = %v", err)
	}
	for _, r := range h.api.requestLog() {
		if r != "get revisions "+testStore && !strings.HasPrefix(r, "watch revisions "+testStore+" ") {
			t.Errorf("unexpected request %q; want only the revision store's GET and watch", r)
		}
	}
}

func TestGetsPodOnceWithoutDownwardAPI(t *testing.T) {
	cfg := testConfig()
	cfg.Pod = Identity{PodName: testPod, PodNamespace: testNamespace}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: testPod, Namespace: testNamespace, UID: "uid-from-get"},
		Spec:       corev1.PodSpec{NodeName: "node-from-get"},
	}
	h := newHarness(t, cfg, []*kubevirtv1.VirtualMachine{prototype(testProto)}, pod)
	h.start()
	h.watchFollowed()

	a := h.api.object(testVM).Annotations
	if a[contract.AnnotationPodUID] != "uid-from-get" || a[contract.AnnotationNode] != "node-from-get" {
		t.Errorf("VM annotations = %v, want the Pod's UID and node from its GET", a)
	}
	ev := h.waitEvent(corev1.EventTypeNormal, ReasonCreated)
	if ev.InvolvedObject.UID != "uid-from-get" || ev.Source.Host != "node-from-get" {
		t.Errorf("Event involvedObject %+v source %+v, want the Pod's UID and node", ev.InvolvedObject, ev.Source)
	}
	var gets int
	for _, a := range h.kube.Actions() {
		if a.GetVerb() == "get" && a.GetResource().Resource == "pods" {
			gets++
		}
	}
	if gets != 1 {
		t.Errorf("%d Pod GETs, want 1", gets)
	}
}

func TestPodLookupRetries(t *testing.T) {
	cfg := testConfig()
	cfg.Pod = Identity{PodName: testPod, PodNamespace: testNamespace, Node: testNode} // no UID
	h := newHarness(t, cfg, []*kubevirtv1.VirtualMachine{prototype(testProto)})       // and no Pod yet
	h.start()
	h.waitReadyz(503, ReasonPodUnknown)
	if err := h.kube.Tracker().Add(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: testPod, Namespace: testNamespace, UID: "late-uid"},
		Spec:       corev1.PodSpec{NodeName: "elsewhere"},
	}); err != nil {
		t.Fatal(err)
	}
	h.watchFollowed()
	a := h.api.object(testVM).Annotations
	if a[contract.AnnotationPodUID] != "late-uid" || a[contract.AnnotationNode] != testNode {
		t.Errorf("VM annotations = %v, want UID from the Pod and node from NODE_NAME", a)
	}
}

func TestAdoptsVMOfThisPod(t *testing.T) {
	existing := derived(t, testIdentity, "existing-uid")
	h := newHarness(t, Config{}, []*kubevirtv1.VirtualMachine{prototype(testProto), existing})
	h.start()
	h.watchFollowed()

	// The first list finds the VM: no CREATE, no GET of it.
	want := []string{
		"get revisions " + testStore,
		"watch " + testPodVMs + " rv= initial",
		"watch " + testVM + " rv= initial",
	}
	if diff := cmp.Diff(want, h.api.requestLog()); diff != "" {
		t.Errorf("KubeVirt API requests (-want +got):\n%s", diff)
	}
	if got := h.api.object(testVM).UID; got != "existing-uid" {
		t.Errorf("VM UID = %q, want the adopted existing-uid", got)
	}
	h.waitEvent(corev1.EventTypeNormal, ReasonAdopted)

	// It is ours: shutdown deletes it.
	if err := h.sigterm(); err != nil {
		t.Fatal(err)
	}
	if h.api.object(testVM) != nil {
		t.Error("adopted VM not deleted on shutdown")
	}
}

// TestAdoptsVMNamedByAnOlderRule: an agent recognises its Pod's VM by the
// Pod it records, whatever its name, so a restarted agent container whose
// image names VMs otherwise takes the VM it had, makes no second one, and
// leaves alone a VM of an earlier Pod of the same name.
func TestAdoptsVMNamedByAnOlderRule(t *testing.T) {
	const olderName = "vm-of-an-older-rule"
	mine := derived(t, testIdentity, "mine-uid")
	mine.Name = olderName
	earlier := testIdentity
	earlier.PodUID = "dead-pod-uid"
	theirs := derived(t, earlier, "theirs-uid")
	theirs.Name = "vm-of-an-earlier-pod"
	h := newHarness(t, Config{}, []*kubevirtv1.VirtualMachine{prototype(testProto), mine, theirs})
	h.start()
	h.watchFollowed()

	// It follows the VM under the name it has.
	want := []string{
		"get revisions " + testStore,
		"watch " + testPodVMs + " rv= initial",
		"watch " + olderName + " rv= initial",
	}
	if diff := cmp.Diff(want, h.api.requestLog()); diff != "" {
		t.Errorf("KubeVirt API requests (-want +got):\n%s", diff)
	}
	if h.api.object(testVM) != nil {
		t.Errorf("VM %s made beside %s, which is this Pod's already", testVM, olderName)
	}
	ev := h.waitEvent(corev1.EventTypeNormal, ReasonAdopted)
	if !strings.Contains(ev.Message, olderName) {
		t.Errorf("Adopted Event %q does not name %s", ev.Message, olderName)
	}
	vm := h.api.object(olderName)
	vm.Status.Ready = true
	h.api.put(vm)
	h.waitReadyz(200, "ok")

	if err := h.sigterm(); err != nil {
		t.Fatal(err)
	}
	if h.api.object(olderName) != nil {
		t.Errorf("adopted VM %s not deleted on shutdown", olderName)
	}
	if h.api.object(theirs.Name) == nil {
		t.Errorf("VM %s of an earlier Pod deleted; only gc judges it", theirs.Name)
	}
}

func TestReplacesVMOfEarlierPod(t *testing.T) {
	earlier := testIdentity
	earlier.PodUID = "dead-pod-uid"
	existing := derived(t, earlier, "old-vm-uid")
	h := newHarness(t, Config{}, []*kubevirtv1.VirtualMachine{prototype(testProto), existing})
	var deletes []metav1.DeleteOptions
	h.api.onDelete = func(opts metav1.DeleteOptions) { deletes = append(deletes, opts) }
	h.start()
	h.watchFollowed() // waiting for the old VM to go
	h.watchFollowed() // following the new one

	vm := h.api.object(testVM)
	if vm.UID == "old-vm-uid" || vm.Annotations[contract.AnnotationPodUID] != string(testPodUID) {
		t.Errorf("VM uid %s pod-uid %s, want a new VM for this Pod", vm.UID, vm.Annotations[contract.AnnotationPodUID])
	}
	if len(deletes) != 1 {
		t.Fatalf("%d DELETEs, want 1 of the old VM", len(deletes))
	}
	if p := deletes[0].Preconditions; p == nil || p.UID == nil || *p.UID != "old-vm-uid" {
		t.Errorf("DELETE preconditions = %+v, want UID old-vm-uid", p)
	}
	if pp := deletes[0].PropagationPolicy; pp == nil || *pp != metav1.DeletePropagationBackground {
		t.Errorf("DELETE propagationPolicy = %v, want Background", pp)
	}
	ev := h.waitEvent(corev1.EventTypeNormal, ReasonReplaced)
	if !strings.Contains(ev.Message, "dead-pod-uid") {
		t.Errorf("Replaced event %q does not name the earlier Pod's UID", ev.Message)
	}
}

func TestRefusesVMItDidNotMake(t *testing.T) {
	otherPod := testIdentity
	otherPod.PodName = "vmctl-xyz"
	tests := []struct {
		name     string
		existing func(t *testing.T) *kubevirtv1.VirtualMachine
		event    string
	}{{
		name: "not made by vmctl",
		existing: func(*testing.T) *kubevirtv1.VirtualMachine {
			vm := prototype(testVM)
			vm.UID = "foreign-uid"
			return vm
		},
		event: "VM default/testvm-vmctl-abc exists and was not made by vmctl",
	}, {
		name: "made for another Pod",
		existing: func(t *testing.T) *kubevirtv1.VirtualMachine {
			vm := derived(t, otherPod, "foreign-uid")
			vm.Name = testVM
			return vm
		},
		event: "VM default/testvm-vmctl-abc belongs to Pod default/vmctl-xyz",
	}, {
		name: "derived from another prototype",
		existing: func(t *testing.T) *kubevirtv1.VirtualMachine {
			vm := derived(t, testIdentity, "foreign-uid")
			vm.Annotations[contract.AnnotationPrototypeName] = "other"
			return vm
		},
		event: "was derived from prototype default/other, not default/testvm",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			existing := tt.existing(t)
			h := newHarness(t, Config{}, []*kubevirtv1.VirtualMachine{prototype(testProto), existing})
			before := h.api.object(testVM)
			h.start()
			h.waitReadyz(503, ReasonVMConflict)
			if ev := h.waitEvent(corev1.EventTypeWarning, ReasonVMConflict); !strings.Contains(ev.Message, tt.event) {
				t.Errorf("VMConflict Event %q, want it to say %q", ev.Message, tt.event)
			}
			// It keeps trying rather than exiting.
			h.eventually("the agent retries", func() bool { return h.api.count("create ") >= 3 })

			if err := h.sigterm(); err != nil {
				t.Fatal(err)
			}
			for _, r := range h.api.requestLog() {
				if strings.HasPrefix(r, "delete") {
					t.Errorf("touched a VM it did not make: %s", r)
				}
			}
			if diff := cmp.Diff(before, h.api.object(testVM)); diff != "" {
				t.Errorf("foreign VM changed (-want +got):\n%s", diff)
			}
			// One Event write, though the agent retried: no creates or
			// count-bumping patches per retry.
			var writes []string
			for _, a := range h.kube.Actions() {
				if a.GetResource().Resource == "events" {
					writes = append(writes, a.GetVerb())
				}
			}
			if diff := cmp.Diff([]string{"create"}, writes); diff != "" {
				t.Errorf("Event writes over several retries (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRecreatesDeletedVM(t *testing.T) {
	h := newHarness(t, Config{}, []*kubevirtv1.VirtualMachine{prototype(testProto)})
	h.start()
	h.watchFollowed()
	vm := h.api.object(testVM)
	vm.Status.Ready = true
	h.api.put(vm)
	h.waitReadyz(200, "ok")

	h.api.removeVM(testVM)
	h.watchFollowed()
	again := h.api.object(testVM)
	if again == nil || again.UID == vm.UID {
		t.Fatalf("VM not recreated after an external delete: %v", again)
	}
	h.waitEvent(corev1.EventTypeWarning, ReasonVMDeleted)
	h.waitReadyz(503, "VMNotReady")
	if got := h.api.count("create "); got != 2 {
		t.Errorf("%d creates, want 2", got)
	}
}

func TestSharedVolumesCreateNothing(t *testing.T) {
	h := newHarness(t, Config{}, []*kubevirtv1.VirtualMachine{withSharedPVC(prototype(testProto))})
	h.start()
	ev := h.waitEvent(corev1.EventTypeWarning, ReasonSharedVolumes)
	if !strings.Contains(ev.Message, `volume "data"`) || !strings.Contains(ev.Message, "--allow-shared-volumes") {
		t.Errorf("Event message %q does not name the volume and the way out", ev.Message)
	}
	h.waitReadyz(503, ReasonSharedVolumes)
	// Rather than polling, it watches the revision store for a change.
	if got := h.api.next("watch revisions " + testStore); got != "watch revisions "+testStore+" rv= initial" {
		t.Errorf("revision store watch %q, want a streaming list of it", got)
	}
	if n := h.api.count("create "); n != 0 {
		t.Fatalf("%d creates with a shared volume, want none", n)
	}
}

func TestWatchDeniedIsReported(t *testing.T) {
	h := newHarness(t, Config{}, []*kubevirtv1.VirtualMachine{prototype(testProto)})
	var denied atomic.Bool
	denied.Store(true)
	h.api.fail = func(req string) error {
		if denied.Load() && (strings.HasPrefix(req, "watch "+testPodVMs+" ") || strings.HasPrefix(req, "list "+testPodVMs+" ")) {
			return apierrors.NewForbidden(vmResource.GroupResource(), "", errors.New("cannot list"))
		}
		return nil
	}
	h.start()
	h.waitReadyz(503, ReasonWatchDenied)
	ev := h.waitEvent(corev1.EventTypeWarning, ReasonWatchDenied)
	if !strings.Contains(ev.Message, "grant the Pod's service account list and watch on virtualmachines.kubevirt.io") {
		t.Errorf("Event %q does not say what to grant", ev.Message)
	}
	// A VM the agent could not follow would be made blind: none yet.
	if n := h.api.count("create "); n != 0 {
		t.Errorf("%d creates while the watch is denied, want 0", n)
	}
	// Once RBAC is fixed, the reflector's own retry lists, and the agent
	// makes its VM.
	denied.Store(false)
	h.eventually("the VM made", func() bool { return h.api.object(testVM) != nil })
	vm := h.api.object(testVM)
	vm.Status.Ready = true
	h.api.put(vm)
	h.waitReadyz(200, "ok")
	if n := h.api.count("create "); n != 1 {
		t.Errorf("%d creates, want 1: a denied watch is no reason to make the VM again", n)
	}
}

func TestAllowSharedVolumes(t *testing.T) {
	cfg := testConfig()
	cfg.AllowSharedVolumes = true
	h := newHarness(t, cfg, []*kubevirtv1.VirtualMachine{withSharedPVC(prototype(testProto))})
	h.start()
	h.watchFollowed()
	if h.api.object(testVM) == nil {
		t.Fatal("VM not created with --allow-shared-volumes")
	}
}

func TestProbeAddressInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	cfg := testConfig()
	cfg.ProbeAddress = ln.Addr().String()
	h := newHarness(t, cfg, []*kubevirtv1.VirtualMachine{prototype(testProto)})
	err = h.agent.Run(t.Context())
	if err == nil || !strings.Contains(err.Error(), "choose another --probe-address") {
		t.Errorf("Run() = %v, want a probe address error", err)
	}
	if reqs := h.api.requestLog(); len(reqs) != 0 {
		t.Errorf("requests %v before the probes were up; want none", reqs)
	}
}

func TestRefusesPrototypeCopiedFromDerivedVM(t *testing.T) {
	// Someone copied a derived VM (get -o yaml, renamed, owner references
	// stripped) to make the prototype: it still carries vmctl's markers.
	copied := derived(t, testIdentity, "proto-uid")
	copied.Name, copied.OwnerReferences = testProto, nil
	h := newHarness(t, Config{}, []*kubevirtv1.VirtualMachine{copied})
	h.start()
	h.waitReadyz(503, ReasonInvalidPrototype)
	ev := h.waitEvent(corev1.EventTypeWarning, ReasonInvalidPrototype)
	if !strings.Contains(ev.Message, contract.LabelPod) || !strings.Contains(ev.Message, "kubectl label vm testvm") {
		t.Errorf("Event %q does not name the markers and how to remove them", ev.Message)
	}
	// Like any revision that cannot be derived, its store is watched for
	// a rollout.
	h.api.next("watch revisions " + testStore)
	if n := h.api.count("create "); n != 0 {
		t.Errorf("%d creates from a prototype with derived-VM markers, want none", n)
	}
	h.expectQuiet("waiting on the refused revision")
}

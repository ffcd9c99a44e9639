package agent

import (
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	k8stesting "k8s.io/client-go/testing"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
)

const vmSelector = "metadata.name=" + testVM

func TestCreatesVMAndMirrorsReadiness(t *testing.T) {
	h := newHarness(t, Config{}, []runtime.Object{prototype(testProto)})
	if got := h.agent.VMName(); got != testVM {
		t.Fatalf("VMName() = %q; these tests assume derive.Name gives %q", got, testVM)
	}
	h.start()

	w := h.nextWatch()
	if got := w.GetWatchRestrictions(); got.Fields.String() != vmSelector || got.ResourceVersion != "101" {
		t.Errorf("watch %s from %q, want %s from the create's resourceVersion 101", got.Fields, got.ResourceVersion, vmSelector)
	}
	vm := h.vm(testVM)
	if vm == nil {
		t.Fatalf("VM %s not created", testVM)
	}
	a := vm.Annotations
	if a[derive.AnnotationPodUID] != string(testPodUID) || a[derive.AnnotationNode] != testNode || a[derive.AnnotationPodName] != testPod {
		t.Errorf("VM annotations = %v, want this Pod's name, UID and node", a)
	}
	if vm.Spec.RunStrategy == nil || *vm.Spec.RunStrategy != kubevirtv1.RunStrategyAlways {
		t.Errorf("VM runStrategy = %v, want Always", vm.Spec.RunStrategy)
	}
	h.waitReadyz(503, "VM default/testvm-vmctl-abc not ready")

	vm.Status.PrintableStatus = kubevirtv1.VirtualMachineStatusStarting
	h.update(vm)
	h.waitReadyz(503, "VM default/testvm-vmctl-abc not ready: Starting")
	vm.Status.Ready, vm.Status.PrintableStatus = true, kubevirtv1.VirtualMachineStatusRunning
	h.update(vm)
	h.waitReadyz(200, "ok")
	// The fake's watch ignores the field selector, so the agent sees the
	// prototype change too; it must not take it for its VM. The watch is
	// ordered, so once the next VM change shows, this one was handled.
	proto := prototype(testProto)
	proto.Labels = map[string]string{"changed": "yes"}
	h.update(proto)
	vm.Status.Ready, vm.Status.PrintableStatus = false, kubevirtv1.VirtualMachineStatusStopping
	h.update(vm)
	h.waitReadyz(503, "VM default/testvm-vmctl-abc not ready: Stopping")

	// Request budget before steady state: GET prototype, CREATE, WATCH, one Event.
	want := []string{
		"get virtualmachines default/testvm",
		"create virtualmachines default/testvm-vmctl-abc",
		"watch virtualmachines default " + vmSelector + " rv=101",
	}
	if diff := cmp.Diff(want, h.requests()); diff != "" {
		t.Errorf("KubeVirt API requests (-want +got):\n%s", diff)
	}
	ev := h.waitEvent(corev1.EventTypeNormal, ReasonCreated)
	wantRef := corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Name: testPod, Namespace: testNamespace, UID: testPodUID}
	if diff := cmp.Diff(wantRef, ev.InvolvedObject); diff != "" {
		t.Errorf("Event involvedObject (-want +got):\n%s", diff)
	}
	if ev.Namespace != testNamespace || ev.Source.Component != EventComponent || !strings.Contains(ev.Message, "Created VM default/testvm-vmctl-abc from prototype default/testvm on node node-1") {
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

func TestShutdownDeletesVMInForeground(t *testing.T) {
	h := newHarness(t, Config{}, []runtime.Object{prototype(testProto)})
	h.start()
	h.nextWatch()
	uid := h.vm(testVM).UID

	if err := h.sigterm(); err != nil {
		t.Fatalf("Run() = %v, want nil after a clean shutdown", err)
	}
	if h.vm(testVM) != nil {
		t.Errorf("VM %s still exists after shutdown", testVM)
	}
	var deletes []metav1.DeleteOptions
	for _, a := range h.kv.Actions() {
		if d, ok := a.(k8stesting.DeleteActionImpl); ok {
			deletes = append(deletes, d.DeleteOptions)
		}
	}
	foreground := metav1.DeletePropagationForeground
	want := []metav1.DeleteOptions{{Preconditions: &metav1.Preconditions{UID: &uid}, PropagationPolicy: &foreground}}
	if diff := cmp.Diff(want, deletes); diff != "" {
		t.Errorf("DELETE options (-want +got):\n%s", diff)
	}
	if code, body := h.readyz(); code != 503 || body != "shutting down" {
		t.Errorf("/readyz after shutdown = %d %q, want 503 shutting down", code, body)
	}
}

func TestShutdownWaitsForForegroundDeletion(t *testing.T) {
	h := newHarness(t, Config{}, []runtime.Object{prototype(testProto)})
	// Like the API server with foreground deletion: the VM only gets a
	// deletionTimestamp; it goes when its VMI is gone.
	h.kv.PrependReactor("delete", "virtualmachines", func(k8stesting.Action) (bool, runtime.Object, error) {
		vm := h.vm(testVM)
		now := metav1.Now()
		vm.DeletionTimestamp = &now
		vm.Finalizers = []string{metav1.FinalizerDeleteDependents}
		h.update(vm)
		return true, nil, nil
	})
	h.start()
	h.nextWatch()

	done := make(chan error, 1)
	go func() { done <- h.sigterm() }()
	h.nextWatch() // the shutdown's own watch, opened before the DELETE
	h.eventually("the VM is marked for deletion", func() bool { vm := h.vm(testVM); return vm != nil && vm.DeletionTimestamp != nil })
	select {
	case err := <-done:
		t.Fatalf("Run() = %v before the VM was gone", err)
	default:
	}
	if err := h.kv.Tracker().Delete(vmResource, testNamespace, testVM); err != nil {
		t.Fatal(err)
	}
	if err := receive(t, done, "Run to return once the VM is gone"); err != nil {
		t.Errorf("Run() = %v", err)
	}
}

func TestShutdownGivesUpAfterDeleteTimeout(t *testing.T) {
	cfg := testConfig()
	cfg.DeleteTimeout = 50 * time.Millisecond
	h := newHarness(t, cfg, []runtime.Object{prototype(testProto)})
	h.kv.PrependReactor("delete", "virtualmachines", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, nil // accepted, but the VM never goes
	})
	h.start()
	h.nextWatch()
	start := time.Now()
	if err := h.sigterm(); err != nil {
		t.Fatalf("Run() = %v, want nil: the Pod is going anyway", err)
	}
	if h.vm(testVM) == nil {
		t.Error("VM vanished, but the fake never deletes it")
	}
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("shutdown took %v with a 50ms delete timeout", elapsed)
	}
}

func TestShutdownWithoutVM(t *testing.T) {
	h := newHarness(t, Config{}, nil) // no prototype: nothing is ever created
	h.start()
	h.waitReadyz(503, "waiting for prototype default/testvm: not found")
	if err := h.sigterm(); err != nil {
		t.Fatalf("Run() = %v", err)
	}
	for _, r := range h.requests() {
		if !strings.HasPrefix(r, "get virtualmachines default/testvm") {
			t.Errorf("unexpected request %q; want only prototype GETs", r)
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
	h := newHarness(t, cfg, []runtime.Object{prototype(testProto)}, pod)
	h.start()
	h.nextWatch()

	a := h.vm(testVM).Annotations
	if a[derive.AnnotationPodUID] != "uid-from-get" || a[derive.AnnotationNode] != "node-from-get" {
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
	h := newHarness(t, cfg, []runtime.Object{prototype(testProto)})                   // and no Pod yet
	h.start()
	h.waitReadyz(503, "looking up Pod default/vmctl-abc for its node and UID: not found")
	if err := h.kube.Tracker().Add(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: testPod, Namespace: testNamespace, UID: "late-uid"},
		Spec:       corev1.PodSpec{NodeName: "elsewhere"},
	}); err != nil {
		t.Fatal(err)
	}
	h.nextWatch()
	a := h.vm(testVM).Annotations
	if a[derive.AnnotationPodUID] != "late-uid" || a[derive.AnnotationNode] != testNode {
		t.Errorf("VM annotations = %v, want UID from the Pod and node from NODE_NAME", a)
	}
}

func TestAdoptsVMOfThisPod(t *testing.T) {
	existing := derived(t, testIdentity, "existing-uid", "42")
	h := newHarness(t, Config{}, []runtime.Object{prototype(testProto), existing})
	h.start()
	h.nextWatch()

	want := []string{
		"get virtualmachines default/testvm",
		"create virtualmachines default/testvm-vmctl-abc",
		"get virtualmachines default/testvm-vmctl-abc",
		"watch virtualmachines default " + vmSelector + " rv=42",
	}
	if diff := cmp.Diff(want, h.requests()); diff != "" {
		t.Errorf("KubeVirt API requests (-want +got):\n%s", diff)
	}
	if got := h.vm(testVM).UID; got != "existing-uid" {
		t.Errorf("VM UID = %q, want the adopted existing-uid", got)
	}
	h.waitEvent(corev1.EventTypeNormal, ReasonAdopted)

	// It is ours: shutdown deletes it.
	if err := h.sigterm(); err != nil {
		t.Fatal(err)
	}
	if h.vm(testVM) != nil {
		t.Error("adopted VM not deleted on shutdown")
	}
}

func TestReplacesVMOfEarlierPod(t *testing.T) {
	earlier := testIdentity
	earlier.PodUID = "dead-pod-uid"
	existing := derived(t, earlier, "old-vm-uid", "42")
	h := newHarness(t, Config{}, []runtime.Object{prototype(testProto), existing})
	h.start()
	deleteWatch := h.nextWatch()
	if rv := deleteWatch.GetWatchRestrictions().ResourceVersion; rv != "42" {
		t.Errorf("waited for the old VM from resourceVersion %q, want 42", rv)
	}
	h.nextWatch()

	vm := h.vm(testVM)
	if vm.UID == "old-vm-uid" || vm.Annotations[derive.AnnotationPodUID] != string(testPodUID) {
		t.Errorf("VM uid %s pod-uid %s, want a new VM for this Pod", vm.UID, vm.Annotations[derive.AnnotationPodUID])
	}
	var del *k8stesting.DeleteActionImpl
	for _, a := range h.kv.Actions() {
		if d, ok := a.(k8stesting.DeleteActionImpl); ok {
			del = &d
		}
	}
	if del == nil {
		t.Fatal("old VM not deleted")
	}
	if p := del.DeleteOptions.Preconditions; p == nil || p.UID == nil || *p.UID != "old-vm-uid" {
		t.Errorf("DELETE preconditions = %+v, want UID old-vm-uid", p)
	}
	if pp := del.DeleteOptions.PropagationPolicy; pp == nil || *pp != metav1.DeletePropagationForeground {
		t.Errorf("DELETE propagationPolicy = %v, want Foreground", pp)
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
		readyz   string
	}{{
		name: "not made by vmctl",
		existing: func(*testing.T) *kubevirtv1.VirtualMachine {
			vm := prototype(testVM)
			vm.UID, vm.ResourceVersion = "foreign-uid", "42"
			return vm
		},
		readyz: "VM default/testvm-vmctl-abc exists and was not made by vmctl",
	}, {
		name: "made for another Pod",
		existing: func(t *testing.T) *kubevirtv1.VirtualMachine {
			vm := derived(t, otherPod, "foreign-uid", "42")
			vm.Name = testVM
			return vm
		},
		readyz: "VM default/testvm-vmctl-abc belongs to Pod default/vmctl-xyz",
	}, {
		name: "derived from another prototype",
		existing: func(t *testing.T) *kubevirtv1.VirtualMachine {
			vm := derived(t, testIdentity, "foreign-uid", "42")
			vm.Annotations[derive.AnnotationPrototypeName] = "other"
			return vm
		},
		readyz: "was derived from prototype default/other, not default/testvm",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			existing := tt.existing(t)
			before := existing.DeepCopy()
			h := newHarness(t, Config{}, []runtime.Object{prototype(testProto), existing})
			h.start()
			h.waitReadyz(503, tt.readyz)
			h.waitEvent(corev1.EventTypeWarning, ReasonVMConflict)
			// It keeps trying rather than exiting.
			h.eventually("the agent retries", func() bool { return h.countRequests("create ") >= 3 })

			if err := h.sigterm(); err != nil {
				t.Fatal(err)
			}
			for _, r := range h.requests() {
				if strings.HasPrefix(r, "delete") || strings.HasPrefix(r, "update") || strings.HasPrefix(r, "patch") {
					t.Errorf("touched a VM it did not make: %s", r)
				}
			}
			if diff := cmp.Diff(before, h.vm(testVM)); diff != "" {
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

func TestWaitsForPrototype(t *testing.T) {
	h := newHarness(t, Config{}, nil)
	h.start()
	h.waitReadyz(503, "waiting for prototype default/testvm: not found")
	ev := h.waitEvent(corev1.EventTypeWarning, ReasonPrototypeUnavailable)
	if ev.Message != "waiting for prototype default/testvm: not found" {
		t.Errorf("Event message %q", ev.Message)
	}
	h.eventually("the agent retries", func() bool { return h.countRequests("get virtualmachines default/testvm") >= 3 })

	if err := h.kv.Tracker().Add(prototype(testProto)); err != nil {
		t.Fatal(err)
	}
	h.nextWatch()
	if h.vm(testVM) == nil {
		t.Fatal("VM not created once the prototype appeared")
	}
	h.waitEvent(corev1.EventTypeNormal, ReasonCreated)
	if diff := cmp.Diff([]string{"Warning PrototypeUnavailable", "Normal Created"}, h.eventStrings()); diff != "" {
		t.Errorf("Events (-want +got):\n%s", diff)
	}
}

func TestRecreatesDeletedVM(t *testing.T) {
	h := newHarness(t, Config{}, []runtime.Object{prototype(testProto)})
	h.start()
	h.nextWatch()
	vm := h.vm(testVM)
	vm.Status.Ready = true
	h.update(vm)
	h.waitReadyz(200, "ok")

	if err := h.kv.Tracker().Delete(vmResource, testNamespace, testVM); err != nil {
		t.Fatal(err)
	}
	w := h.nextWatch()
	again := h.vm(testVM)
	if again == nil || again.UID == vm.UID {
		t.Fatalf("VM not recreated after an external delete: %v", again)
	}
	if rv := w.GetWatchRestrictions().ResourceVersion; rv != again.ResourceVersion {
		t.Errorf("new watch from %q, want the new VM's %q", rv, again.ResourceVersion)
	}
	h.waitEvent(corev1.EventTypeWarning, ReasonVMDeleted)
	h.waitReadyz(503, "VM default/testvm-vmctl-abc not ready")
	if got := h.countRequests("create "); got != 2 {
		t.Errorf("%d creates, want 2", got)
	}
}

func TestSharedVolumesCreateNothing(t *testing.T) {
	h := newHarness(t, Config{}, []runtime.Object{withSharedPVC(prototype(testProto))})
	h.start()
	ev := h.waitEvent(corev1.EventTypeWarning, ReasonSharedVolumes)
	if !strings.Contains(ev.Message, `volume "data"`) || !strings.Contains(ev.Message, "--allow-shared-volumes") {
		t.Errorf("Event message %q does not name the volume and the way out", ev.Message)
	}
	h.waitReadyz(503, "prototype default/testvm")
	// Rather than polling, it waits for the prototype to change.
	w := h.nextWatch()
	if got := w.GetWatchRestrictions(); got.Fields.String() != "metadata.name="+testProto || got.ResourceVersion != "10" {
		t.Errorf("watch %s from %q, want the prototype from its resourceVersion 10", got.Fields, got.ResourceVersion)
	}
	if n := h.countRequests("create "); n != 0 {
		t.Fatalf("%d creates with a shared volume, want none", n)
	}

	fixed := prototype(testProto)
	fixed.Generation = 2
	h.update(fixed)
	h.nextWatch()
	if h.vm(testVM) == nil {
		t.Fatal("VM not created after the prototype was fixed")
	}
}

func TestSharedVolumesPollWithoutWatchPermission(t *testing.T) {
	h := newHarness(t, Config{}, []runtime.Object{withSharedPVC(prototype(testProto))})
	// RBAC granting only get on the prototype (as across namespaces).
	h.kv.PrependWatchReactor("virtualmachines", func(action k8stesting.Action) (bool, watch.Interface, error) {
		if action.(k8stesting.WatchAction).GetWatchRestrictions().Fields.String() == "metadata.name="+testProto {
			return true, nil, apierrors.NewForbidden(vmResource.GroupResource(), testProto, errors.New("no watch"))
		}
		return false, nil, nil
	})
	h.start()
	h.waitEvent(corev1.EventTypeWarning, ReasonSharedVolumes)
	h.eventually("the agent polls the prototype", func() bool { return h.countRequests("get virtualmachines default/testvm") >= 3 })
	h.update(prototype(testProto))
	h.nextWatch()
	if h.vm(testVM) == nil {
		t.Fatal("VM not created after the prototype was fixed")
	}
	var warnings int
	for _, e := range h.events() {
		if e.Reason == ReasonSharedVolumes {
			warnings++
		}
	}
	if warnings != 1 {
		t.Errorf("%d SharedVolumes Events while polling, want 1", warnings)
	}
}

func TestAllowSharedVolumes(t *testing.T) {
	cfg := testConfig()
	cfg.AllowSharedVolumes = true
	h := newHarness(t, cfg, []runtime.Object{withSharedPVC(prototype(testProto))})
	h.start()
	h.nextWatch()
	if h.vm(testVM) == nil {
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
	h := newHarness(t, cfg, []runtime.Object{prototype(testProto)})
	err = h.agent.Run(t.Context())
	if err == nil || !strings.Contains(err.Error(), "choose another --probe-address") {
		t.Errorf("Run() = %v, want a probe address error", err)
	}
	if len(h.kv.Actions()) != 0 {
		t.Errorf("requests %v before the probes were up; want none", h.requests())
	}
}

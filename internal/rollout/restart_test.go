package rollout

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
)

func TestPlanRestart(t *testing.T) {
	a, b := pod("web-a", "uid-a"), pod("web-b", "uid-b")
	restarted := testWorkload()
	restarted.Template().Annotations = map[string]string{AnnotationGeneration: "3"}
	for _, tt := range []struct {
		name    string
		w       Workload
		pods    []corev1.Pod
		vms     []kubevirtv1.VirtualMachine
		restart bool
		why     string
	}{
		{name: "every VM current", w: testWorkload(), pods: []corev1.Pod{a, b}, vms: []kubevirtv1.VirtualMachine{vm(a, 3, true), vm(b, 3, true)},
			why: "all 2 VMs derive from prototype vms/testvm generation 3"},
		{name: "one VM older", w: testWorkload(), pods: []corev1.Pod{a, b}, vms: []kubevirtv1.VirtualMachine{vm(a, 3, true), vm(b, 2, true)},
			restart: true, why: "1 of 2 VMs derive from an older generation of prototype vms/testvm than 3"},
		{name: "already restarted for this generation, its rollout under way", w: restarted, pods: []corev1.Pod{a}, vms: []kubevirtv1.VirtualMachine{vm(a, 2, true)},
			why: "already restarted for prototype vms/testvm generation 3"},
		{name: "a VM of an earlier Pod of the name does not count", w: testWorkload(), pods: []corev1.Pod{a}, vms: []kubevirtv1.VirtualMachine{vm(pod("web-a", "dead"), 1, true)},
			why: "no VMs of prototype vms/testvm to replace"},
		{name: "VMs named by an older rule", w: testWorkload(), pods: []corev1.Pod{a, b}, vms: []kubevirtv1.VirtualMachine{oldRule(vm(a, 3, true)), oldRule(vm(b, 2, true))},
			restart: true, why: "1 of 2 VMs derive from an older generation of prototype vms/testvm than 3"},
		{name: "no Pods", w: testWorkload(), why: "no VMs of prototype vms/testvm to replace"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := PlanRestart(tt.w, Version{Generation: 3}, tt.pods, tt.vms)
			if diff := cmp.Diff(Plan{Restart: tt.restart, Why: tt.why}, got); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRestartPatchIsApplyRestart: the patch sent to the API server and the
// change a client-side dry run makes are the same, and leave the rest of
// the template alone.
func TestRestartPatchIsApplyRestart(t *testing.T) {
	now := time.Date(2026, 11, 23, 13, 0, 0, 0, time.UTC)
	w := testWorkload()
	w.Template().Annotations = map[string]string{"keep": "me", AnnotationGeneration: "1"}
	patch, err := restartPatch(w.Template(), now, Version{Generation: 2})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":"2026-11-23T13:00:00Z","vmctl.kubevirt.io/restarted-for-generation":"2"}}}}}`; string(patch) != want {
		t.Errorf("patch %s, want %s", patch, want)
	}
	restarted := patchIsApplyRestart(t, w, patch, now, Version{Generation: 2})
	if restarted.Spec.Template.Annotations["keep"] != "me" || !RestartedFor(Workload{Object: restarted}, Version{Generation: 2}) {
		t.Errorf("annotations after the restart: %v", restarted.Spec.Template.Annotations)
	}
}

// TestPrototypeMadeAgain: a prototype deleted and made again starts again
// at generation 1, so a VM, or a restart, of the old prototype's same
// generation number is not current; the chaos soak found rollout restart
// leaving such a workload "already restarted".
func TestPrototypeMadeAgain(t *testing.T) {
	a := pod("web-a", "uid-a")
	now := Version{UID: "new", Generation: 2}
	old := vm(a, 2, true)
	old.Annotations[contract.AnnotationPrototypeUID] = "old"
	if now.DerivesFrom(&old) {
		t.Error("a VM of the old prototype's generation 2 derives from the new prototype's generation 2")
	}
	if got := PlanRestart(testWorkload(), now, []corev1.Pod{a}, []kubevirtv1.VirtualMachine{old}); !got.Restart {
		t.Errorf("plan = %+v, want a restart", got)
	}
	restarted := testWorkload()
	ApplyRestart(restarted.Template(), time.Now(), Version{UID: "old", Generation: 2})
	if RestartedFor(restarted, now) {
		t.Error("a workload restarted for the old prototype's generation 2 counts as restarted for the new one's")
	}
	if !RestartedFor(restarted, Version{UID: "old", Generation: 2}) {
		t.Error("a workload restarted for a version does not count as restarted for it")
	}
	if p := Observe(rolledOut(), now, []corev1.Pod{a}, []kubevirtv1.VirtualMachine{old}); p.Done {
		t.Errorf("rollout status done with a VM of the old prototype: %s", p.Message)
	}
	// VMs and restarts from before the UID was recorded: by generation.
	legacy := vm(a, 2, true)
	if !now.DerivesFrom(&legacy) {
		t.Error("a VM that records no prototype UID is judged by more than its generation")
	}
	current := vm(a, 2, true)
	current.Annotations[contract.AnnotationPrototypeUID] = "new"
	if !now.DerivesFrom(&current) {
		t.Error("a VM of the new prototype's generation 2 does not derive from it")
	}
}

// TestNotes: each distinct note once, sorted, whichever prototypes share it.
func TestNotes(t *testing.T) {
	got := Notes(map[types.NamespacedName]Version{
		{Namespace: "a", Name: "x"}: {ReservationNote: "newer"},
		{Namespace: "b", Name: "y"}: {ReservationNote: "newer"},
		{Namespace: "c", Name: "z"}: {ReservationNote: "older"},
		{Namespace: "d", Name: "w"}: {},
	})
	if diff := cmp.Diff([]string{"newer", "older"}, got); diff != "" {
		t.Errorf("Notes() (-want +got):\n%s", diff)
	}
}

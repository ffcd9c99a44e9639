package rollout

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
)

// TestRestartRollsTheReservation: a template that holds room for an older
// size of its prototype's VMs is restarted even when every VM is current,
// and the restart gives the agent container the new room; a template that
// holds none, or a size that could not be computed, is left alone.
func TestRestartRollsTheReservation(t *testing.T) {
	old := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("110m"), corev1.ResourceMemory: resource.MustParse("12Gi")}
	newer := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("110m"), corev1.ResourceMemory: resource.MustParse("16Gi")}
	w := testWorkload()
	tmpl := w.Template()
	tmpl.Spec.Containers = []corev1.Container{{Name: "agent", Resources: scaffold.AgentResources(old)}}
	tmpl.Annotations = map[string]string{contract.AnnotationReservation: contract.FormatResources(old)}
	a := pod("web-a", "uid-a")
	current := []kubevirtv1.VirtualMachine{vm(a, 2, true)}

	v := Version{Generation: 2, Reservation: newer}
	if got := PlanRestart(w, v, []corev1.Pod{a}, current); !got.Restart ||
		got.Why != "its Pod template holds room for cpu=110m,memory=12Gi a VM, prototype vms/testvm's VMs need cpu=110m,memory=16Gi" {
		t.Errorf("plan = %+v, want a restart for the reservation", got)
	}
	now := time.Date(2026, 11, 23, 13, 0, 0, 0, time.UTC)
	patch, err := restartPatch(tmpl, now, v)
	if err != nil {
		t.Fatal(err)
	}
	viaPatch := patchIsApplyRestart(t, w, patch, now, v)
	q := cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })
	if diff := cmp.Diff(scaffold.AgentResources(newer), viaPatch.Spec.Template.Spec.Containers[0].Resources, q); diff != "" {
		t.Errorf("resources after the restart (-want +got):\n%s", diff)
	}
	if got := PlanRestart(Workload{Object: viaPatch, Agent: w.Agent}, v, nil, nil); got.Restart {
		t.Errorf("plan after the restart = %+v, want none", got)
	}

	for name, v := range map[string]Version{
		"same size":    {Generation: 2, Reservation: old},
		"size unknown": {Generation: 2},
	} {
		if got := PlanRestart(w, v, []corev1.Pod{a}, current); got.Restart {
			t.Errorf("%s: plan = %+v, want none", name, got)
		}
	}
	unreserved := testWorkload()
	if got := PlanRestart(unreserved, v, []corev1.Pod{a}, current); got.Restart {
		t.Errorf("a template without reservation: plan = %+v, want none", got)
	}
}

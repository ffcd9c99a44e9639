package rollout

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/podtemplate"
)

// TestRestartRollsTheReservation: a template that pins the prototype's
// revision but holds room for another size of its VMs (KubeVirt's
// configuration changed) is restarted, and the restart gives the agent
// container the new room; a template that holds none, or a size that
// could not be computed, is left alone.
func TestRestartRollsTheReservation(t *testing.T) {
	old := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("110m"), corev1.ResourceMemory: resource.MustParse("12Gi")}
	newer := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("110m"), corev1.ResourceMemory: resource.MustParse("16Gi")}
	w := testWorkload()
	tmpl := w.Template()
	tmpl.Spec.Containers = []corev1.Container{{Name: "agent", Resources: podtemplate.AgentResources(old)}}
	tmpl.Annotations[contract.AnnotationReservation] = contract.FormatResources(old)

	tg := target("h2")
	tg.Reservation = newer
	if got := PlanRestart(w, tg); !got.Restart ||
		got.Why != "its Pod template holds room for cpu=110m,memory=12Gi a VM, VM revision h2's VMs need cpu=110m,memory=16Gi" {
		t.Errorf("plan = %+v, want a restart for the reservation", got)
	}
	now := time.Date(2026, 11, 23, 13, 0, 0, 0, time.UTC)
	viaPatch := patchIsRestarted(t, w, now, tg)
	q := cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })
	if diff := cmp.Diff(podtemplate.AgentResources(newer), viaPatch.Spec.Template.Spec.Containers[0].Resources, q); diff != "" {
		t.Errorf("resources after the restart (-want +got):\n%s", diff)
	}
	if got := PlanRestart(Workload{Object: viaPatch, Agent: w.Agent}, tg); got.Restart {
		t.Errorf("plan after the restart = %+v, want none", got)
	}

	same := target("h2")
	same.Reservation = old
	for name, tg := range map[string]Target{"same size": same, "size unknown": target("h2")} {
		if got := PlanRestart(w, tg); got.Restart {
			t.Errorf("%s: plan = %+v, want none", name, got)
		}
	}
	if got := PlanRestart(testWorkload(), tg); got.Restart {
		t.Errorf("a template without reservation: plan = %+v, want none", got)
	}
}

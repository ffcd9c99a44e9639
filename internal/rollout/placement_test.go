package rollout

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/placement"
)

// TestRestartRollsThePlacement: a template that carries an older placement
// of its prototype is restarted even when every VM is current, and the
// restart, by patch or by a client-side dry run alike, replaces the old
// placement with the prototype's as a whole.
func TestRestartRollsThePlacement(t *testing.T) {
	w := testWorkload()
	tmpl := w.Template()
	tmpl.Annotations = map[string]string{contract.AnnotationPlacement: "old", "keep": "me"}
	tmpl.Spec.NodeSelector = map[string]string{"pool": "old"}
	tmpl.Spec.Tolerations = []corev1.Toleration{{Key: "old", Operator: corev1.TolerationOpExists}}
	tmpl.Spec.PriorityClassName = "old"
	want := placement.Placement{
		NodeSelector: map[string]string{"pool": "gpu"},
		Tolerations:  []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpEqual, Value: "yes", Effect: corev1.TaintEffectNoSchedule}},
	}
	v := Version{Generation: 2, PlacementKey: "new", Placement: &want}

	a := pod("web-a", "uid-a")
	if got := PlanRestart(w, v, []corev1.Pod{a}, []kubevirtv1.VirtualMachine{vm(a, 2, true)}); !got.Restart ||
		got.Why != "its Pod template carries an older placement of prototype vms/testvm" {
		t.Errorf("plan = %+v, want a restart for the placement", got)
	}

	now := time.Date(2026, 11, 23, 13, 0, 0, 0, time.UTC)
	patch, err := restartPatch(tmpl, now, v)
	if err != nil {
		t.Fatal(err)
	}
	viaPatch := patchIsApplyRestart(t, w, patch, now, v)
	if got := placement.FromPodSpec(&viaPatch.Spec.Template.Spec); !got.Equal(want) {
		t.Errorf("placement after the restart (-want +got):\n%s", cmp.Diff(want, got))
	}
	if a := viaPatch.Spec.Template.Annotations; a[contract.AnnotationPlacement] != "new" || a["keep"] != "me" {
		t.Errorf("annotations after the restart: %v", a)
	}
	if got := PlanRestart(Workload{Object: viaPatch, Agent: w.Agent}, v, nil, nil); got.Restart {
		t.Errorf("plan after the restart = %+v, want none", got)
	}
}

// TestRestartLeavesAnUnknownPlacementAlone: a template scaffold wrote no key
// on, or a prototype whose placement could not be read, keeps its
// placement through a restart.
func TestRestartLeavesAnUnknownPlacementAlone(t *testing.T) {
	newer := placement.Placement{NodeSelector: map[string]string{"pool": "gpu"}}
	for name, tt := range map[string]struct {
		key string
		v   Version
	}{
		"template without key":   {key: "", v: Version{Generation: 2, PlacementKey: "new", Placement: &newer}},
		"placement not readable": {key: "old", v: Version{Generation: 2, PlacementKey: "new"}},
	} {
		t.Run(name, func(t *testing.T) {
			w := testWorkload()
			w.Template().Annotations = map[string]string{contract.AnnotationPlacement: tt.key}
			w.Template().Spec.NodeSelector = map[string]string{"pool": "old"}
			ApplyRestart(w.Template(), time.Now(), tt.v)
			if got := w.Template().Spec.NodeSelector["pool"]; got != "old" || w.Template().Annotations[contract.AnnotationPlacement] != tt.key {
				t.Errorf("after the restart: nodeSelector pool=%q, key %q", got, w.Template().Annotations[contract.AnnotationPlacement])
			}
		})
	}
}

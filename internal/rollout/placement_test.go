package rollout

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/placement"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/placement/placementtest"
)

// TestRestartRollsThePlacement: a restart to another revision replaces
// the template's placement with the revision's as a whole, by patch or by
// a client-side dry run alike.
func TestRestartRollsThePlacement(t *testing.T) {
	w := testWorkload()
	tmpl := w.Template()
	tmpl.Annotations[contract.AnnotationPlacement] = "old"
	tmpl.Annotations["keep"] = "me"
	tmpl.Spec.NodeSelector = map[string]string{"pool": "old"}
	tmpl.Spec.Tolerations = []corev1.Toleration{{Key: "old", Operator: corev1.TolerationOpExists}}
	tmpl.Spec.PriorityClassName = "old"
	want := placement.Placement{
		NodeSelector: map[string]string{"pool": "gpu"},
		Tolerations:  []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpEqual, Value: "yes", Effect: corev1.TaintEffectNoSchedule}},
	}
	tg := target("h3")
	tg.PlacementKey, tg.Placement = "new", want

	now := time.Date(2026, 11, 23, 13, 0, 0, 0, time.UTC)
	viaPatch := patchIsRestarted(t, w, now, tg)
	if got := placementtest.FromPodSpec(&viaPatch.Spec.Template.Spec); !got.Equal(want) {
		t.Errorf("placement after the restart (-want +got):\n%s", cmp.Diff(want, got))
	}
	if a := viaPatch.Spec.Template.Annotations; a[contract.AnnotationPlacement] != "new" || a["keep"] != "me" {
		t.Errorf("annotations after the restart: %v", a)
	}
}

// TestRestartLeavesAnUnknownPlacementAlone: a template scaffold wrote no
// placement on (a hand-written one), or a revision whose placement could
// not be read, keeps its placement through a restart.
func TestRestartLeavesAnUnknownPlacementAlone(t *testing.T) {
	newer := placement.Placement{NodeSelector: map[string]string{"pool": "gpu"}}
	known, unreadable := target("h3"), target("h3")
	known.PlacementKey, known.Placement = "new", newer
	unreadable.PlacementKey, unreadable.PlacementErr = "new", errors.New("instancetype not found")
	for name, tt := range map[string]struct {
		key string
		tg  Target
	}{
		"template without key":   {key: "", tg: known},
		"placement not readable": {key: "old", tg: unreadable},
	} {
		t.Run(name, func(t *testing.T) {
			w := testWorkload()
			w.Template().Annotations[contract.AnnotationPlacement] = tt.key
			w.Template().Spec.NodeSelector = map[string]string{"pool": "old"}
			ApplyRestart(w.Template(), "web", time.Now(), tt.tg)
			if got := w.Template().Spec.NodeSelector["pool"]; got != "old" || w.Template().Annotations[contract.AnnotationPlacement] != tt.key {
				t.Errorf("after the restart: nodeSelector pool=%q, key %q", got, w.Template().Annotations[contract.AnnotationPlacement])
			}
		})
	}
}

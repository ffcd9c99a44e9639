package rollout

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/podtemplate"
)

func TestPlanRestart(t *testing.T) {
	for _, tt := range []struct {
		name    string
		w       Workload
		t       Target
		restart bool
		why     string
	}{
		{name: "pins the prototype's revision", w: testWorkload(), t: target("h2"),
			why: "pins VM revision h2 of prototype vms/testvm already"},
		{name: "pins another revision", w: testWorkload(), t: target("h3"), restart: true,
			why: "its template pins VM revision h2; prototype vms/testvm is now h3"},
		{name: "pins none", w: unpinned(), t: target("h2"), restart: true,
			why: "its template pins no VM revision of prototype vms/testvm: its agents make no VM"},
		{name: "the prototype gone", w: testWorkload(), t: Target{Missing: true},
			why: "prototype vms/testvm not found; nothing to pin"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(Plan{Restart: tt.restart, Why: tt.why}, PlanRestart(tt.w, tt.t)); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRestartPatchIsRestarted: the patch sent to the API server and the
// change a client-side dry run makes are the same: the template pins the
// revision, its restart is stamped, the records of the restarts before
// templates pinned revisions go, the workload's change-cause names the
// revision, and the rest of the template stays. Pinned again, the workload
// needs no restart.
func TestRestartPatchIsRestarted(t *testing.T) {
	now := time.Date(2026, 11, 23, 13, 0, 0, 0, time.UTC)
	w := testWorkload()
	w.Template().Annotations["keep"] = "me"
	w.Template().Annotations[annotationGeneration] = "1"
	restarted := patchIsRestarted(t, w, now, target("h3"))
	want := map[string]string{"keep": "me", contract.AnnotationVMRevision: "h3", AnnotationRestartedAt: "2026-11-23T13:00:00Z"}
	if diff := cmp.Diff(want, restarted.Spec.Template.Annotations); diff != "" {
		t.Errorf("template annotations (-want +got):\n%s", diff)
	}
	if got, want := restarted.Annotations[podtemplate.AnnotationChangeCause], "vmctl: VM revision h3 of prototype vms/testvm (generation 3)"; got != want {
		t.Errorf("change-cause %q, want %q", got, want)
	}
	if got := PlanRestart(Workload{Object: restarted, Agent: w.Agent}, target("h3")); got.Restart {
		t.Errorf("plan after the restart = %+v, want none", got)
	}
}

// TestRestartPinsAnAgentThatFollowedThePrototype: a template scaffolded
// before templates pinned revisions gets what a scaffolded one has, once:
// the store in the agent's arguments, the revision in its environment.
func TestRestartPinsAnAgentThatFollowedThePrototype(t *testing.T) {
	w := unpinned()
	for range 2 {
		w = Restarted(w, time.Now(), target("h2"))
	}
	agent := w.Template().Spec.Containers[0]
	if want := []string{"testvm", "--vm-revisions=web-vm-revisions"}; !slices.Equal(want, agent.Args) {
		t.Errorf("args %q, want %q", agent.Args, want)
	}
	pinned := template(nil)
	podtemplate.Pin(&pinned, "h2")
	if diff := cmp.Diff(pinned.Spec.Containers[0].Env, agent.Env); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
}

// TestNotes: each distinct note once, sorted, whichever prototypes share it.
func TestNotes(t *testing.T) {
	note := func(n string) Target {
		t := target("h1")
		t.ReservationNote = n
		return t
	}
	got := Notes(map[types.NamespacedName]Target{
		{Namespace: "a", Name: "x"}: note("newer"),
		{Namespace: "b", Name: "y"}: note("newer"),
		{Namespace: "c", Name: "z"}: note("older"),
		{Namespace: "d", Name: "w"}: note(""),
	})
	if diff := cmp.Diff([]string{"newer", "older"}, got); diff != "" {
		t.Errorf("Notes() (-want +got):\n%s", diff)
	}
}

// TestPlanRewrite: a workload that pins its prototype's revision already
// needs a restart all the same when its store holds that revision
// rewritten; not when the store holds it as its hash says, lacks it, or
// when the workload pins another.
func TestPlanRewrite(t *testing.T) {
	t2 := stored(t, "v2")
	w := testWorkload()
	w.Template().Annotations[contract.AnnotationVMRevision] = t2.Hash
	s, _, err := WithRevision(nil, w, t2)
	if err != nil {
		t.Fatal(err)
	}
	honest, err := s.Object()
	if err != nil {
		t.Fatal(err)
	}
	bad := s.Revisions[t2.Hash].DeepCopy()
	bad.Labels["release"] = "evil"
	s.Revisions[t2.Hash] = bad
	rewritten, err := s.Object()
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := PlanRewrite(w, t2, rewritten); !ok || !p.Restart || !strings.Contains(p.Why, "rewritten") {
		t.Errorf("PlanRewrite of a rewritten pin = %+v, %v; want a restart that says why", p, ok)
	}
	for name, tc := range map[string]struct {
		tg  Target
		cur *unstructured.Unstructured
	}{
		"held as its hash says": {t2, honest},
		"no store":              {t2, nil},
		"another pin":           {stored(t, "v3"), rewritten},
	} {
		if p, ok := PlanRewrite(w, tc.tg, tc.cur); ok {
			t.Errorf("%s: PlanRewrite = %+v, want nothing to do", name, p)
		}
	}
}

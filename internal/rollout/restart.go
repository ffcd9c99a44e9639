package rollout

import (
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/podtemplate"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/prototype"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/reserve"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/revision"
)

// Annotations rollout restart writes into a workload's Pod template.
const (
	// AnnotationRestartedAt is kubectl rollout restart's own: a change to it
	// is what makes the controller replace the Pods, also when only the
	// reservation changed.
	AnnotationRestartedAt = "kubectl.kubernetes.io/restartedAt"
	// annotationGeneration and annotationPrototypeUID recorded, before
	// templates pinned a VM revision, the prototype generation a template
	// was restarted for. A restart removes them.
	annotationGeneration   = "vmctl.kubevirt.io/restarted-for-generation"
	annotationPrototypeUID = "vmctl.kubevirt.io/restarted-for-prototype-uid"
)

// Target is what a rollout pins a prototype's workloads to: the VM revision
// taken of the prototype now (prototype.Pin), with the placement and the
// room of its VMs; Missing for a prototype that does not exist.
type Target struct {
	Missing bool
	// Refused says why no workload may pin the revision: the prototype
	// carries vmctl's markers (a copy of a derived VM), which every agent
	// refuses, as scaffold does.
	Refused error
	prototype.Pinned
}

// Notes returns the distinct ReservationNotes of targets, sorted: what a
// command that writes reservations says once.
func Notes(targets map[types.NamespacedName]Target) []string {
	var out []string
	for _, t := range targets {
		if t.ReservationNote != "" && !slices.Contains(out, t.ReservationNote) {
			out = append(out, t.ReservationNote)
		}
	}
	slices.Sort(out)
	return out
}

// Plan is what rollout restart does with one workload.
type Plan struct {
	Restart bool
	// Why says why not, or why.
	Why string
}

// PinnedRevision is the VM revision w's template pins, or "" when it pins
// none (written or edited by hand: its agents make no VM).
func PinnedRevision(w Workload) string {
	if t := w.Template(); t != nil {
		return t.Annotations[contract.AnnotationVMRevision]
	}
	return ""
}

// PlanRestart decides whether w needs a restart to run t: when its template
// pins another revision, or none, or holds another room for the VMs than
// t's (KubeVirt's configuration changed). A template that pins t already
// is left alone, whether or not its rollout is over: `rollout status`
// follows that.
func PlanRestart(w Workload, t Target) Plan {
	proto := w.Prototype()
	if _, err := kindOf(w.Object); err != nil {
		return Plan{Why: err.Error()}
	}
	if t.Missing {
		return Plan{Why: fmt.Sprintf("prototype %s not found; nothing to pin", proto)}
	}
	switch pinned := PinnedRevision(w); {
	case pinned == "":
		return Plan{Restart: true, Why: fmt.Sprintf("its template pins no VM revision of prototype %s: its agents make no VM", proto)}
	case pinned != t.Hash:
		return Plan{Restart: true, Why: fmt.Sprintf("its template pins VM revision %s; prototype %s is now %s", pinned, proto, t.Hash)}
	case reservationStale(w.Template(), t):
		return Plan{Restart: true, Why: fmt.Sprintf("its Pod template holds room for %s a VM, VM revision %s's VMs need %s",
			w.Template().Annotations[contract.AnnotationReservation], t.Hash, contract.FormatResources(t.Reservation))}
	}
	return Plan{Why: fmt.Sprintf("pins VM revision %s of prototype %s already", t.Hash, proto)}
}

// PlanRewrite decides whether w, whose template pins t's revision already
// (PlanRestart leaves it alone), needs a restart all the same: when its
// revision store cur (nil: none) holds that revision rewritten
// (revision.Store.Verify), the agents make no VM of it until a rollout
// writes it anew, and the Pods made meanwhile wait.
func PlanRewrite(w Workload, t Target, cur *unstructured.Unstructured) (Plan, bool) {
	if cur == nil || t.Missing || PinnedRevision(w) != t.Hash {
		return Plan{}, false
	}
	s, err := revision.FromObject(cur)
	if err != nil {
		return Plan{}, false
	}
	var rerr *revision.RewrittenError
	if !errors.As(s.Verify(t.Hash), &rerr) {
		return Plan{}, false
	}
	return Plan{Restart: true, Why: fmt.Sprintf("VMRevisionStore %s holds VM revision %s, which its template pins, rewritten (its content hashes to %s): it is written anew",
		rerr.Store, t.Hash, rerr.Actual)}, true
}

// placementStale reports whether tmpl carries a placement scaffold wrote
// (contract.AnnotationPlacement) other than t's, which is known. A
// template without one (written by hand) keeps its own.
func placementStale(tmpl *corev1.PodTemplateSpec, t Target) bool {
	key := tmpl.Annotations[contract.AnnotationPlacement]
	return key != "" && t.PlacementErr == nil && t.PlacementKey != "" && key != t.PlacementKey
}

// reservationStale reports whether tmpl holds room for its VMs
// (contract.AnnotationReservation) other than t's, which is known. A
// template that holds none (scaffolded with --reserve=false, or on a
// server without in-place resize) is left so.
func reservationStale(tmpl *corev1.PodTemplateSpec, t Target) bool {
	return t.Reservation != nil && reserve.Stale(tmpl.Annotations[contract.AnnotationReservation], t.Reservation)
}

// ApplyRestart makes tmpl, the template of the workload called workload,
// pin t: it names t's revision, its agent reads that revision from the
// workload's revision store, it carries t's placement (the placement
// fields scaffold writes, nodeSelector, affinity, tolerations, topology
// spread constraints, priorityClassName and schedulerName, replaced as a
// whole) and room where those are known, and the restart is stamped at
// now.
func ApplyRestart(tmpl *corev1.PodTemplateSpec, workload string, now time.Time, t Target) {
	if placementStale(tmpl, t) {
		t.Placement.Apply(&tmpl.Spec)
		metav1.SetMetaDataAnnotation(&tmpl.ObjectMeta, contract.AnnotationPlacement, t.PlacementKey)
	}
	if reservationStale(tmpl, t) {
		podtemplate.Hold(tmpl, t.Reservation)
	}
	podtemplate.Repin(tmpl, t.Hash, revision.StoreName(workload))
	metav1.SetMetaDataAnnotation(&tmpl.ObjectMeta, AnnotationRestartedAt, now.Format(time.RFC3339))
	delete(tmpl.Annotations, annotationGeneration)
	delete(tmpl.Annotations, annotationPrototypeUID)
}

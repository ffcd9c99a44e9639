package rollout

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/placement"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/reserve"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
)

// Annotations rollout restart writes into a workload's Pod template.
const (
	// AnnotationRestartedAt is kubectl rollout restart's own: a change to it
	// is what makes the controller replace the Pods.
	AnnotationRestartedAt = "kubectl.kubernetes.io/restartedAt"
	// AnnotationGeneration records the prototype generation the template
	// was restarted for, so that a second restart finds nothing to do.
	AnnotationGeneration = "vmctl.kubevirt.io/restarted-for-generation"
	// AnnotationPrototypeUID records the UID of that prototype: one deleted
	// and made again starts again at generation 1.
	AnnotationPrototypeUID = "vmctl.kubevirt.io/restarted-for-prototype-uid"
)

// Version is the prototype a rollout rolls to: its UID and generation
// (Generation -1 when it does not exist), and where its VMs may run.
type Version struct {
	UID        types.UID
	Generation int64
	// PlacementKey is the prototype's placement.Key, and Placement its
	// placement with its instancetype's and preference's; nil when they
	// could not be read, and then a restart leaves the template's alone.
	PlacementKey string
	Placement    *placement.Placement
	// Reservation is what scaffold would reserve for the prototype's VMs
	// now (reserve.Round of reserve.Launcher); nil when it
	// could not be computed, and then a restart leaves the template's
	// alone.
	Reservation corev1.ResourceList
	// ReservationNote says, when vmctl does not know the cluster's KubeVirt
	// release, whose rules Reservation follows (reserve.Note).
	ReservationNote string
}

// Notes returns the distinct ReservationNotes of versions, sorted: what
// a command that writes or compares reservations says once.
func Notes(versions map[types.NamespacedName]Version) []string {
	var out []string
	for _, v := range versions {
		if v.ReservationNote != "" && !slices.Contains(out, v.ReservationNote) {
			out = append(out, v.ReservationNote)
		}
	}
	slices.Sort(out)
	return out
}

// Missing is the Version of a prototype that does not exist.
var Missing = Version{Generation: -1}

// DerivesFrom reports whether vm was derived from v: the same generation of
// the same prototype. A VM derived before vmctl recorded the prototype's
// UID is judged by its generation alone.
func (v Version) DerivesFrom(vm *kubevirtv1.VirtualMachine) bool {
	o := derive.OriginOf(vm)
	return o.HasGeneration && o.PrototypeGeneration == v.Generation &&
		(o.PrototypeUID == "" || v.UID == "" || o.PrototypeUID == v.UID)
}

// Plan is what rollout restart does with one workload.
type Plan struct {
	Restart bool
	// Why says why not, or why.
	Why string
}

// PlanRestart decides whether w needs a restart to bring its VMs to the
// prototype's generation. pods are w's Pods and vms the VMs derived from w's
// prototype in w's VM namespace (others are ignored).
//
// It does not restart a workload whose template was already restarted for
// this generation (its rollout may still be going on: `rollout status`
// follows it), nor one none of whose Pods has a VM from an older generation
// (a Pod without a VM yet will derive from the current one).
func PlanRestart(w Workload, v Version, pods []corev1.Pod, vms []kubevirtv1.VirtualMachine) Plan {
	generation := v.Generation
	proto := w.Prototype()
	if _, err := kindOf(w.Object); err != nil {
		return Plan{Why: err.Error()}
	}
	if RestartedFor(w, v) {
		return Plan{Why: fmt.Sprintf("already restarted for prototype %s generation %d", proto, generation)}
	}
	if placementStale(w.Template(), v) {
		// The VMs may all be current (the Pods were replaced one by one),
		// but the template still places new agents by the old rules.
		return Plan{Restart: true, Why: fmt.Sprintf("its Pod template carries an older placement of prototype %s", proto)}
	}
	if reservationStale(w.Template(), v) {
		return Plan{Restart: true, Why: fmt.Sprintf("its Pod template holds room for %s a VM, prototype %s's VMs need %s",
			w.Template().Annotations[contract.AnnotationReservation], proto, contract.FormatResources(v.Reservation))}
	}
	byPod := vmsByPod(vms, w)
	var stale, current int
	for i := range pods {
		vm := byPod[keyOf(&pods[i])]
		if vm == nil {
			continue
		}
		if v.DerivesFrom(vm) {
			current++
		} else {
			stale++
		}
	}
	if stale == 0 && current == 0 {
		return Plan{Why: fmt.Sprintf("no VMs of prototype %s to replace", proto)}
	}
	if stale == 0 {
		return Plan{Why: fmt.Sprintf("all %d VMs derive from prototype %s generation %d", current, proto, generation)}
	}
	return Plan{Restart: true, Why: fmt.Sprintf("%d of %d VMs derive from an older generation of prototype %s than %d", stale, stale+current, proto, generation)}
}

// RestartedFor reports whether w's template was restarted for v: then
// PlanRestart needs neither its Pods nor its VMs. A template restarted
// before vmctl recorded the prototype's UID is judged by its generation.
func RestartedFor(w Workload, v Version) bool {
	tmpl := w.Template()
	if tmpl == nil {
		return false
	}
	a := tmpl.Annotations
	uid := a[AnnotationPrototypeUID]
	return a[AnnotationGeneration] == strconv.FormatInt(v.Generation, 10) && (uid == "" || v.UID == "" || types.UID(uid) == v.UID)
}

// vmsByPod indexes the agents' VMs (derive.IsAgentVM) derived from w's
// prototype in w's VM namespace by the Pod they record: namespace, name and
// UID. It never recomputes the VM's name, which an older rule may have
// given.
func vmsByPod(vms []kubevirtv1.VirtualMachine, w Workload) map[podKey]*kubevirtv1.VirtualMachine {
	proto := w.Prototype()
	out := map[podKey]*kubevirtv1.VirtualMachine{}
	for i := range vms {
		vm := &vms[i]
		if vm.Namespace == w.Agent.Namespace && derive.IsAgentVM(vm) && derive.IsDerivedFrom(vm, proto.Namespace, proto.Name) {
			o := derive.OriginOf(vm)
			out[podKey{o.Pod(), o.PodUID}] = vm
		}
	}
	return out
}

// podKey is a Pod as a derived VM records it.
type podKey struct {
	types.NamespacedName
	UID types.UID
}

// keyOf is pod's podKey.
func keyOf(pod *corev1.Pod) podKey {
	return podKey{types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}, pod.UID}
}

// placementStale reports whether tmpl carries a placement of its prototype
// (contract.AnnotationPlacement) other than v's, which is known.
func placementStale(tmpl *corev1.PodTemplateSpec, v Version) bool {
	key := tmpl.Annotations[contract.AnnotationPlacement]
	return key != "" && v.Placement != nil && v.PlacementKey != "" && key != v.PlacementKey
}

// reservationStale reports whether tmpl holds room for its prototype's VMs
// (contract.AnnotationReservation) other than v's, which is known. A
// template that holds none (scaffolded with --reserve=false, or on a
// server without in-place resize) is left so.
func reservationStale(tmpl *corev1.PodTemplateSpec, v Version) bool {
	return v.Reservation != nil && reserve.Stale(tmpl.Annotations[contract.AnnotationReservation], v.Reservation)
}

// RestartAnnotations are what a restart at now for v sets on the Pod
// template.
func RestartAnnotations(now time.Time, v Version) map[string]string {
	a := map[string]string{
		AnnotationRestartedAt: now.Format(time.RFC3339),
		AnnotationGeneration:  strconv.FormatInt(v.Generation, 10),
	}
	if v.UID != "" {
		a[AnnotationPrototypeUID] = string(v.UID)
	}
	return a
}

// ApplyRestart sets the restart's annotations on tmpl and, when tmpl
// carries an older placement of the prototype than v's, the prototype's
// current placement and its key, and when it holds room for the
// prototype's VMs other than v's, v's (scaffold.ApplyReservation): the
// placement fields scaffold wrote
// (nodeSelector, affinity, tolerations, topology spread constraints,
// priorityClassName, schedulerName) are replaced as a whole.
func ApplyRestart(tmpl *corev1.PodTemplateSpec, now time.Time, v Version) {
	applyPrototype(tmpl, v)
	for k, val := range RestartAnnotations(now, v) {
		tmpl.Annotations[k] = val
	}
}

// applyPrototype makes tmpl carry v's placement and reservation where it
// carries others (see ApplyRestart).
func applyPrototype(tmpl *corev1.PodTemplateSpec, v Version) {
	if tmpl.Annotations == nil {
		tmpl.Annotations = map[string]string{}
	}
	if placementStale(tmpl, v) {
		v.Placement.Apply(&tmpl.Spec)
		tmpl.Annotations[contract.AnnotationPlacement] = v.PlacementKey
	}
	if reservationStale(tmpl, v) {
		scaffold.ApplyReservation(tmpl, v.Reservation)
	}
}

package rollout

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
)

// Annotations rollout restart writes into a workload's Pod template.
const (
	// AnnotationRestartedAt is kubectl rollout restart's own: a change to it
	// is what makes the controller replace the Pods.
	AnnotationRestartedAt = "kubectl.kubernetes.io/restartedAt"
	// AnnotationGeneration records the prototype generation the template
	// was restarted for, so that a second restart finds nothing to do.
	AnnotationGeneration = "vmctl.kubevirt.io/restarted-for-generation"
)

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
func PlanRestart(w Workload, generation int64, pods []corev1.Pod, vms []kubevirtv1.VirtualMachine) Plan {
	gen := strconv.FormatInt(generation, 10)
	proto := w.Prototype()
	if RestartedFor(w, generation) {
		return Plan{Why: fmt.Sprintf("already restarted for prototype %s generation %d", proto, generation)}
	}
	byName := vmsByName(vms, w)
	var stale, current int
	for i := range pods {
		vm := byName[derive.Name(proto.Name, pods[i].Name)]
		if vm == nil || vm.Annotations[derive.AnnotationPodUID] != string(pods[i].UID) {
			continue
		}
		if vm.Annotations[derive.AnnotationPrototypeGeneration] == gen {
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

// RestartedFor reports whether w's template was restarted for generation:
// then PlanRestart needs neither its Pods nor its VMs.
func RestartedFor(w Workload, generation int64) bool {
	return w.Template().Annotations[AnnotationGeneration] == strconv.FormatInt(generation, 10)
}

// vmsByName indexes the VMs derived from w's prototype in w's VM namespace.
func vmsByName(vms []kubevirtv1.VirtualMachine, w Workload) map[string]*kubevirtv1.VirtualMachine {
	proto := w.Prototype()
	out := map[string]*kubevirtv1.VirtualMachine{}
	for i := range vms {
		vm := &vms[i]
		if vm.Namespace == w.Agent.Namespace && derive.IsDerivedFrom(vm, proto.Namespace, proto.Name) {
			out[vm.Name] = vm
		}
	}
	return out
}

// RestartAnnotations are what a restart at now for generation sets on the
// Pod template.
func RestartAnnotations(now time.Time, generation int64) map[string]string {
	return map[string]string{
		AnnotationRestartedAt: now.Format(time.RFC3339),
		AnnotationGeneration:  strconv.FormatInt(generation, 10),
	}
}

// RestartPatch is the strategic merge patch that restarts a workload, as
// kubectl rollout restart's does, with the generation recorded beside it.
func RestartPatch(now time.Time, generation int64) ([]byte, error) {
	return json.Marshal(map[string]any{"spec": map[string]any{"template": map[string]any{
		"metadata": map[string]any{"annotations": RestartAnnotations(now, generation)},
	}}})
}

// ApplyRestart sets the restart's annotations on tmpl, as the patch would:
// for a client-side dry run.
func ApplyRestart(tmpl *corev1.PodTemplateSpec, now time.Time, generation int64) {
	if tmpl.Annotations == nil {
		tmpl.Annotations = map[string]string{}
	}
	for k, v := range RestartAnnotations(now, generation) {
		tmpl.Annotations[k] = v
	}
}

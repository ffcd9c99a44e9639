package rollout

import (
	"fmt"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
)

// Progress is how far one workload's rollout has come.
type Progress struct {
	// Message says it in one line, as kubectl rollout status does.
	Message string
	Done    bool
	// Err is a rollout that cannot finish (a deployment past its progress
	// deadline, a workload that does not roll out on its own).
	Err error
}

// Observe reports w's progress: first the workload's own, as `kubectl
// rollout status` reports it, then its VMs'. The rollout is done when the
// workload's is and every Pod of the current revision that is not going
// away is paired with a ready VM derived from generation, the prototype's
// current one (a negative generation: the prototype is missing). pods are
// w's Pods; vms the VMs derived from w's prototype.
func Observe(w Workload, v Version, pods []corev1.Pod, vms []kubevirtv1.VirtualMachine) Progress {
	generation := v.Generation
	k, err := kindOf(w.Object)
	if err != nil {
		return Progress{Err: err}
	}
	if own := k.status(w.Object); own.Err != nil || !own.Done {
		return Progress{Message: own.Message, Err: own.Err}
	}
	proto := w.Prototype()
	if generation < 0 {
		return Progress{Message: fmt.Sprintf("Waiting for prototype %s: not found", proto)}
	}
	byPod := vmsByPod(vms, w)
	var want, ok int
	var older []string
	for i := range pods {
		pod := &pods[i]
		if pod.DeletionTimestamp != nil || !expectsUpdate(k.partition(w.Object), pod) {
			continue
		}
		want++
		vm := byPod[keyOf(pod)]
		switch {
		case vm == nil || vm.DeletionTimestamp != nil:
		case !v.DerivesFrom(vm):
			older = append(older, strconv.FormatInt(derive.OriginOf(vm).PrototypeGeneration, 10))
		case vm.Status.Ready:
			ok++
		}
	}
	kind := k.singular()
	if ok < want {
		m := fmt.Sprintf("Waiting for the VMs of %s %q: %d of %d ready and derived from prototype %s generation %d",
			kind, w.Meta().GetName(), ok, want, proto, generation)
		if len(older) > 0 {
			m += fmt.Sprintf(" (%d from generation %s: run kubectl vmctl rollout restart %s)", len(older), strings.Join(dedupe(older), ", "), proto.Name)
		}
		return Progress{Message: m + "..."}
	}
	return Progress{Message: fmt.Sprintf("%s %q successfully rolled out: %d VMs ready and derived from prototype %s generation %d",
		kind, w.Meta().GetName(), ok, proto, generation), Done: true}
}

// expectsUpdate reports whether the rollout replaces pod: every Pod, but
// with a partition (a StatefulSet's) only those at or above it.
func expectsUpdate(partition *int32, pod *corev1.Pod) bool {
	if partition == nil {
		return true
	}
	ordinal, err := strconv.Atoi(pod.Labels[appsv1.PodIndexLabel])
	if err != nil {
		i := strings.LastIndexByte(pod.Name, '-')
		if ordinal, err = strconv.Atoi(pod.Name[i+1:]); err != nil {
			return true
		}
	}
	return int32(ordinal) >= *partition
}

func dedupe(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range s {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

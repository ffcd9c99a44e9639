package rollout

import (
	"fmt"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
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
// away is paired with a ready VM of the VM revision the Pod pins. A
// workload whose template pins none (written by hand) has agents that make
// no VM: it waits, saying that rollout restart pins one. pods are w's
// Pods; vms the VMs derived from w's prototype.
func Observe(w Workload, pods []corev1.Pod, vms []kubevirtv1.VirtualMachine) Progress {
	k, err := kindOf(w.Object)
	if err != nil {
		return Progress{Err: err}
	}
	if own := k.status(w.Object); own.Err != nil || !own.Done {
		return Progress{Message: own.Message, Err: own.Err}
	}
	pinned := PinnedRevision(w)
	byPod := vmsByPod(vms, w)
	var want, ok int
	var other []string
	for i := range pods {
		pod := &pods[i]
		if pod.DeletionTimestamp != nil || !expectsUpdate(k.partition(w.Object), pod) {
			continue
		}
		want++
		vm := byPod[keyOf(pod)]
		switch {
		case vm == nil || vm.DeletionTimestamp != nil:
		case pinned != "" && vm.Annotations[contract.AnnotationVMRevision] != pod.Annotations[contract.AnnotationVMRevision]:
			other = append(other, vm.Annotations[contract.AnnotationVMRevision])
		case vm.Status.Ready:
			ok++
		}
	}
	kind, name := k.singular(), w.Meta().GetName()
	of := fmt.Sprintf("of VM revision %s", pinned)
	if pinned == "" {
		of = fmt.Sprintf("(its template pins no VM revision: kubectl vmctl rollout restart %s pins one)", w.Prototype().Name)
	}
	if ok < want {
		m := fmt.Sprintf("Waiting for the VMs of %s %q: %d of %d ready %s", kind, name, ok, want, of)
		if len(other) > 0 {
			m += fmt.Sprintf(" (%d of revision %s, which their Pods do not pin)", len(other), strings.Join(dedupe(other), ", "))
		}
		return Progress{Message: m + "..."}
	}
	return Progress{Message: fmt.Sprintf("%s %q successfully rolled out: %d VMs ready %s", kind, name, ok, of), Done: true}
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

package reserve

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
)

// Counted returns the CPU and memory the scheduler counts for pod: the
// larger of the sum of its containers (restartable init containers
// included) and of its largest init container, plus the Pod's overhead,
// as resourcehelper.PodRequests computes it for a Pod that is not being
// resized.
func Counted(pod *corev1.Pod) corev1.ResourceList {
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	return corev1.ResourceList{
		corev1.ResourceCPU:    reqs[corev1.ResourceCPU],
		corev1.ResourceMemory: reqs[corev1.ResourceMemory],
	}
}

// Round keeps r's CPU and memory, rounded up to whole millicores and
// mebibytes: what an agent Pod holds for a VM whose launcher Pod counts r.
// It reads better in the manifests and holds a little more, never less.
func Round(r corev1.ResourceList) corev1.ResourceList {
	const mi = 1 << 20
	out := corev1.ResourceList{}
	if q, ok := r[corev1.ResourceCPU]; ok {
		out[corev1.ResourceCPU] = *resource.NewMilliQuantity(q.MilliValue(), resource.DecimalSI)
	}
	if q, ok := r[corev1.ResourceMemory]; ok {
		out[corev1.ResourceMemory] = *resource.NewQuantity((q.Value()+mi-1)/mi*mi, resource.BinarySI)
	}
	return out
}

// Stale reports whether held, a reservation as contract.FormatResources
// writes it (the vmctl.kubevirt.io/reservation annotation of an agent
// Pod's template), is not the CPU and memory that a VM whose launcher Pod
// counts need takes: Round(need). Either way it is wrong: too little lets
// the scheduler place agents where their VMs do not fit, too much leaves
// room unused. A Pod that holds nothing ("": scaffolded with
// --reserve=false) is never stale; one whose held cannot be read is.
func Stale(held string, need corev1.ResourceList) bool {
	return compare(held, need, func(c int) bool { return c != 0 })
}

// Short reports whether held, as Stale takes it, is less CPU or memory
// than a VM whose launcher Pod counts need takes: the scheduler may then
// place the Pod where its VM does not fit. A Pod that holds nothing is
// never short; one whose held cannot be read is.
func Short(held string, need corev1.ResourceList) bool {
	return compare(held, need, func(c int) bool { return c < 0 })
}

// compare reports whether held's CPU or memory, compared with Round(need)
// (-1 less, 0 equal, 1 more), is off; held "" never is, and held that
// cannot be read always is.
func compare(held string, need corev1.ResourceList, off func(int) bool) bool {
	if held == "" {
		return false
	}
	h, err := contract.ParseResources(held)
	if err != nil {
		return true
	}
	want := Round(need)
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if q := h[name]; off(q.Cmp(want[name])) {
			return true
		}
	}
	return false
}

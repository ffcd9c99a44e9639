package reserve

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// computeRequests mirrors the CPU and memory requests that
// TemplateService.newResourceRenderer gives the compute container
// (pkg/virt-controller/services/template.go, renderresources.go): the rules
// of VMIResourcePredicates, in its order, over the VMI's own requests.
// Limits are left out: none turns into a request here, since every rule
// that sets a CPU or memory limit sets its request too. Auto limits
// (WithAutoMemoryLimits, autoCPULimitNamespaceLabelSelector) only set
// limits; device plugins, GPUs and DRA claims are not CPU or memory.
func computeRequests(vmi *kubevirtv1.VirtualMachineInstance, c config) corev1.ResourceList {
	spec := vmi.Spec.Domain
	requests := spec.Resources.Requests.DeepCopy()
	if requests == nil {
		requests = corev1.ResourceList{}
	}
	limits := spec.Resources.Limits
	calculated := corev1.ResourceList{}
	overhead := memoryOverhead(vmi, c)

	// WithMemoryRequests, when the VMI requests no memory: the limit, else
	// the guest memory (or a hugepage) over the cluster's overcommit.
	if spec.Resources.Requests.Memory().IsZero() {
		limit, hasLimit := limits[corev1.ResourceMemory]
		request, hasRequest := requests[corev1.ResourceMemory]
		if hasLimit && !limit.IsZero() && (!hasRequest || request.IsZero()) {
			requests[corev1.ResourceMemory] = limit
		}
		if _, ok := requests[corev1.ResourceMemory]; !ok {
			if m := guestOrPage(spec.Memory); m != nil && m.Value() > 0 {
				if c.memoryOvercommit == 100 {
					requests[corev1.ResourceMemory] = *m
				} else {
					requests[corev1.ResourceMemory] = *resource.NewQuantity(m.Value()*100/int64(c.memoryOvercommit), m.Format)
				}
			}
		}
	}

	ioThreads := int64(0)
	if t := spec.IOThreads; t != nil && t.SupplementalPoolThreadCount != nil {
		ioThreads = int64(*t.SupplementalPoolThreadCount)
	}
	if isDedicated(vmi) {
		cpuPinning(vmi, requests, ioThreads)
	} else if total := numberOfVCPUs(spec.CPU) + ioThreads; total != 0 && c.cpuAllocationRatio > 0 {
		// WithoutDedicatedCPU: vCPUs over cpuAllocationRatio, formatted and
		// parsed as KubeVirt does, which rounds the same way.
		val := float64(total) / float64(c.cpuAllocationRatio)
		s := fmt.Sprintf("%g", val)
		if val < 1 {
			s = fmt.Sprintf("%gm", val*1000)
		}
		calculated[corev1.ResourceCPU] = resource.MustParse(s)
	}

	if spec.Memory != nil && spec.Memory.Hugepages != nil {
		// WithHugePages: the guest's memory is hugepages, counted apart;
		// memory is the overhead, and what the request exceeds the guest by.
		diff := resource.NewScaledQuantity(0, resource.Kilo)
		if g := spec.Memory.Guest; g != nil && requests.Memory().Value() > g.Value() {
			diff.Add(*requests.Memory())
			diff.Sub(*g)
		}
		diff.Add(overhead)
		requests[corev1.ResourceMemory] = *diff
	} else {
		// WithMemoryOverhead, unless the VMI overcommits it.
		m := requests[corev1.ResourceMemory]
		if !spec.Resources.OvercommitGuestOverhead {
			m.Add(overhead)
		}
		requests[corev1.ResourceMemory] = m
	}

	// ResourceRenderer.Requests: the VMI's requests win over calculated ones.
	out := corev1.ResourceList{}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if q, ok := calculated[name]; ok {
			out[name] = q
		}
		if q, ok := requests[name]; ok {
			out[name] = q
		}
	}
	return out
}

// guestOrPage is the memory WithMemoryRequests starts from: the guest's,
// else one hugepage.
func guestOrPage(m *kubevirtv1.Memory) *resource.Quantity {
	switch {
	case m == nil:
		return nil
	case m.Guest != nil:
		return m.Guest
	case m.Hugepages != nil:
		if size, err := resource.ParseQuantity(m.Hugepages.PageSize); err == nil {
			return &size
		}
	}
	return nil
}

// cpuPinning mirrors the requests WithCPUPinning sets for dedicated CPUs:
// one whole CPU per vCPU and supplemental IOThread, and one or two more for
// an isolated emulator thread.
func cpuPinning(vmi *kubevirtv1.VirtualMachineInstance, requests corev1.ResourceList, ioThreads int64) {
	cpu := vmi.Spec.Domain.CPU
	limit, hasLimit := vmi.Spec.Domain.Resources.Limits[corev1.ResourceCPU]
	if vcpus := numberOfVCPUs(cpu); vcpus != 0 {
		limit, hasLimit = *resource.NewQuantity(vcpus+ioThreads, resource.BinarySI), true
		requests[corev1.ResourceCPU] = limit
	} else if request, ok := requests[corev1.ResourceCPU]; ok {
		request.Add(*resource.NewQuantity(ioThreads, resource.BinarySI))
		requests[corev1.ResourceCPU] = request
		limit.Add(*resource.NewQuantity(ioThreads, resource.BinarySI))
	}
	if !cpu.IsolateEmulatorThread {
		return
	}
	emulator := int64(1)
	if _, parity := vmi.Annotations[kubevirtv1.EmulatorThreadCompleteToEvenParity]; parity {
		additional := int64(0)
		if p := vmi.Spec.Domain.IOThreadsPolicy; p != nil && *p == kubevirtv1.IOThreadsPolicySupplementalPool {
			additional = ioThreads
		}
		if !hasLimit {
			limit = resource.Quantity{}
		}
		if (limit.Value()+additional)%2 == 0 {
			emulator = 2
		}
	}
	if request, ok := requests[corev1.ResourceCPU]; ok {
		request.Add(*resource.NewQuantity(emulator, resource.BinarySI))
		requests[corev1.ResourceCPU] = request
	}
}

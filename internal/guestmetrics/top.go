package guestmetrics

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
)

// TopRow is what `kubectl vmctl top` shows of one agent Pod: its VM, and
// what the VM's launcher used by metrics-server's last measure.
type TopRow struct {
	Namespace, Pod string
	// VM is the name of the Pod's VMI; empty when it has none.
	VM    string
	VCPUs int64
	// Sampled is whether metrics-server measured the VM's launcher: the
	// figures below are zero when it has not.
	Sampled bool
	// CPU is the guest's (the compute container's); Memory the whole
	// launcher Pod's, as kubectl top pod adds its containers up.
	CPU, Memory resource.Quantity
}

// Percent is r's CPU as a percentage of its vCPUs (MetricVMCPUUtilization).
func (r TopRow) Percent() resource.Quantity {
	return Value(MetricVMCPUUtilization, Sample{CPU: r.CPU}, r.VCPUs)
}

// Top is a row for each of pods, in their order, from the VMIs and the
// launchers' PodMetrics of their namespaces, matched as Values matches
// them.
func Top(pods []corev1.Pod, vmis []kubevirtv1.VirtualMachineInstance, launchers []metricsv1beta1.PodMetrics) []TopRow {
	byVMI := map[string]*metricsv1beta1.PodMetrics{}
	for i := range launchers {
		byVMI[launchers[i].Namespace+"/"+launchers[i].Labels[createdBy]] = &launchers[i]
	}
	byPod := map[string]*kubevirtv1.VirtualMachineInstance{}
	for i := range vmis {
		if vmis[i].DeletionTimestamp == nil {
			byPod[vmis[i].Namespace+"/"+vmis[i].Labels[contract.LabelPod]] = &vmis[i]
		}
	}
	rows := make([]TopRow, 0, len(pods))
	for _, pod := range pods {
		row := TopRow{Namespace: pod.Namespace, Pod: pod.Name}
		if vmi := byPod[pod.Namespace+"/"+derive.LabelValue(pod.Name)]; vmi != nil {
			row.VM, row.VCPUs = vmi.Name, VCPUs(vmi)
			if m := byVMI[vmi.Namespace+"/"+string(vmi.UID)]; m != nil {
				if s, ok := LauncherSample(m); ok {
					row.Sampled, row.CPU = true, s.CPU
					for _, c := range m.Containers {
						row.Memory.Add(c.Usage[corev1.ResourceMemory])
					}
				}
			}
		}
		rows = append(rows, row)
	}
	return rows
}

package guestmetrics

import (
	"math"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/metrics/pkg/apis/custom_metrics"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
)

// The metrics served, of Pods. An HPA names them in a Pods metric.
const (
	MetricVMCPUUsage       = contract.MetricVMCPUUsage
	MetricVMCPUUtilization = contract.MetricVMCPUUtilization
)

// Metrics are the names served, in the order ListAllMetrics gives them.
var Metrics = []string{MetricVMCPUUsage, MetricVMCPUUtilization}

// computeContainer is the launcher Pod's container that runs qemu, and so
// the guest.
const computeContainer = "compute"

// Sample is what metrics-server measured of one launcher Pod.
type Sample struct {
	CPU       resource.Quantity
	Timestamp metav1.Time
	Window    metav1.Duration
}

// LauncherSample is the guest's CPU in m, metrics-server's measure of a
// launcher Pod: its compute container's, or false when m has none (a
// launcher not yet sampled, or not a launcher).
func LauncherSample(m *metricsv1beta1.PodMetrics) (Sample, bool) {
	for _, c := range m.Containers {
		if c.Name == computeContainer {
			cpu, ok := c.Usage[corev1.ResourceCPU]
			if !ok {
				return Sample{}, false
			}
			return Sample{CPU: cpu, Timestamp: m.Timestamp, Window: m.Window}, true
		}
	}
	return Sample{}, false
}

// VCPUs is how many vCPUs vmi's guest has: its current CPU topology where
// KubeVirt reports one (it does once the VMI runs), else the topology its
// spec asks for, else what KubeVirt makes of a CPU limit or request alone
// (one vCPU per started core), else 1.
func VCPUs(vmi *kubevirtv1.VirtualMachineInstance) int64 {
	if t := vmi.Status.CurrentCPUTopology; t != nil {
		if n := topology(int64(t.Sockets), int64(t.Cores), int64(t.Threads)); n > 0 {
			return n
		}
	}
	if c := vmi.Spec.Domain.CPU; c != nil && (c.Sockets > 0 || c.Cores > 0 || c.Threads > 0) {
		return topology(int64(c.Sockets), int64(c.Cores), int64(c.Threads))
	}
	r := vmi.Spec.Domain.Resources
	for _, list := range []corev1.ResourceList{r.Limits, r.Requests} {
		if q, ok := list[corev1.ResourceCPU]; ok && q.MilliValue() > 0 {
			return int64(math.Ceil(float64(q.MilliValue()) / 1000))
		}
	}
	return 1
}

// topology multiplies sockets, cores and threads, each at least 1, as
// KubeVirt does.
func topology(sockets, cores, threads int64) int64 {
	return max(sockets, 1) * max(cores, 1) * max(threads, 1)
}

// Value is metric's value for a guest that used s with vcpus vCPUs:
// MetricVMCPUUsage in cores, MetricVMCPUUtilization in percent.
func Value(metric string, s Sample, vcpus int64) resource.Quantity {
	if metric == MetricVMCPUUtilization {
		return *resource.NewMilliQuantity(s.CPU.MilliValue()*100/max(vcpus, 1), resource.DecimalSI)
	}
	return s.CPU
}

// MetricValue is metric's value for the agent Pod pod, as the custom
// metrics API serves it.
func MetricValue(metric string, pod metav1.ObjectMeta, s Sample, vcpus int64) custom_metrics.MetricValue {
	window := int64(s.Window.Seconds())
	return custom_metrics.MetricValue{
		DescribedObject: custom_metrics.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Metric:          custom_metrics.MetricIdentifier{Name: metric},
		Timestamp:       s.Timestamp,
		WindowSeconds:   &window,
		Value:           Value(metric, s, vcpus),
	}
}

// LauncherSelector selects, among a namespace's PodMetrics, those of
// derived VMs' launcher Pods: KubeVirt labels each kubevirt.io=virt-launcher
// and copies the VMI's labels, vmctl.kubevirt.io/pod among them.
var LauncherSelector = labels.SelectorFromSet(labels.Set{kubevirtv1.AppLabel: "virt-launcher"}).String() + "," + contract.LabelPod

// createdBy is KubeVirt's label on a launcher Pod naming its VMI's UID.
const createdBy = kubevirtv1.CreatedByLabel

// Values is metric for each of pods that has a VMI among vmis and a sample
// of its launcher among launchers, in pods' order.
func Values(metric string, pods []*corev1.Pod, vmis []*kubevirtv1.VirtualMachineInstance, launchers []metricsv1beta1.PodMetrics) []custom_metrics.MetricValue {
	samples := map[string]Sample{} // by VMI UID
	for i := range launchers {
		if s, ok := LauncherSample(&launchers[i]); ok {
			samples[launchers[i].Labels[createdBy]] = s
		}
	}
	byPod := map[string]*kubevirtv1.VirtualMachineInstance{}
	for _, vmi := range vmis {
		if vmi.DeletionTimestamp == nil {
			byPod[vmi.Labels[contract.LabelPod]] = vmi
		}
	}
	values := []custom_metrics.MetricValue{}
	for _, pod := range pods {
		vmi, ok := byPod[derive.LabelValue(pod.Name)]
		if !ok {
			continue
		}
		s, ok := samples[string(vmi.UID)]
		if !ok {
			continue
		}
		values = append(values, MetricValue(metric, pod.ObjectMeta, s, VCPUs(vmi)))
	}
	return values
}

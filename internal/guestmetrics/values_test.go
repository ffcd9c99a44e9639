package guestmetrics

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
)

func TestVCPUs(t *testing.T) {
	cpu := func(q string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)}
	}
	for _, tc := range []struct {
		name string
		vmi  kubevirtv1.VirtualMachineInstance
		want int64
	}{
		{"nothing said: one", kubevirtv1.VirtualMachineInstance{}, 1},
		{"the running topology first", kubevirtv1.VirtualMachineInstance{
			Spec:   kubevirtv1.VirtualMachineInstanceSpec{Domain: kubevirtv1.DomainSpec{CPU: &kubevirtv1.CPU{Cores: 8}}},
			Status: kubevirtv1.VirtualMachineInstanceStatus{CurrentCPUTopology: &kubevirtv1.CPUTopology{Sockets: 2, Cores: 1, Threads: 1}}}, 2},
		{"the spec's topology, zeros as one", kubevirtv1.VirtualMachineInstance{
			Spec: kubevirtv1.VirtualMachineInstanceSpec{Domain: kubevirtv1.DomainSpec{CPU: &kubevirtv1.CPU{Sockets: 2, Cores: 3}}}}, 6},
		{"a limit alone: one per started core", kubevirtv1.VirtualMachineInstance{
			Spec: kubevirtv1.VirtualMachineInstanceSpec{Domain: kubevirtv1.DomainSpec{Resources: kubevirtv1.ResourceRequirements{Limits: cpu("1500m"), Requests: cpu("4")}}}}, 2},
		{"a request alone", kubevirtv1.VirtualMachineInstance{
			Spec: kubevirtv1.VirtualMachineInstanceSpec{Domain: kubevirtv1.DomainSpec{Resources: kubevirtv1.ResourceRequirements{Requests: cpu("3")}}}}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := VCPUs(&tc.vmi); got != tc.want {
				t.Errorf("VCPUs = %d, want %d", got, tc.want)
			}
		})
	}
}

// launcher is metrics-server's PodMetrics of the launcher Pod of the VMI
// with UID vmi, its compute container using cpu (none if empty).
func launcher(name, vmi, cpu string) metricsv1beta1.PodMetrics {
	m := metricsv1beta1.PodMetrics{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{kubevirtv1.AppLabel: "virt-launcher", createdBy: vmi}},
		Timestamp:  metav1.NewTime(time.Date(2026, 12, 7, 5, 0, 0, 0, time.UTC)),
		Window:     metav1.Duration{Duration: 15 * time.Second},
		Containers: []metricsv1beta1.ContainerMetrics{{Name: "guest-console-log", Usage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("5m")}}},
	}
	if cpu != "" {
		m.Containers = append(m.Containers, metricsv1beta1.ContainerMetrics{Name: "compute", Usage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}})
	}
	return m
}

func agentPod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), Labels: map[string]string{"app": "web"}}}
}

func derivedVMI(pod, uid string, vcpus uint32) *kubevirtv1.VirtualMachineInstance {
	return &kubevirtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Name: "testvm-" + pod, Namespace: "ns", UID: types.UID(uid), Labels: map[string]string{contract.LabelPod: pod}},
		Status:     kubevirtv1.VirtualMachineInstanceStatus{CurrentCPUTopology: &kubevirtv1.CPUTopology{Sockets: vcpus, Cores: 1, Threads: 1}},
	}
}

// TestValues: each agent Pod gets its own VM's compute container's CPU,
// in cores and as a share of its vCPUs; a Pod without a VMI, whose
// launcher has no sample, or whose VMI is going, gets no value at all,
// never a zero; a launcher of another VMI of the same Pod name (a
// StatefulSet's Pod made again) is not its.
func TestValues(t *testing.T) {
	pods := []*corev1.Pod{agentPod("web-a"), agentPod("web-b"), agentPod("web-c"), agentPod("web-d"), agentPod("web-e")}
	going := derivedVMI("web-e", "vmi-e", 1)
	going.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	vmis := []*kubevirtv1.VirtualMachineInstance{
		derivedVMI("web-a", "vmi-a", 2),
		derivedVMI("web-b", "vmi-b", 1),
		derivedVMI("web-c", "vmi-c", 4),
		going,
		// web-d has no VMI.
	}
	launchers := []metricsv1beta1.PodMetrics{
		launcher("virt-launcher-a", "vmi-a", "1500m"),
		launcher("virt-launcher-b", "vmi-b", "250m"),
		launcher("virt-launcher-b-old", "vmi-b-before", "900m"),
		launcher("virt-launcher-c", "vmi-c", ""), // not sampled yet
		launcher("virt-launcher-e", "vmi-e", "1"),
	}
	got := map[string]string{}
	for _, metric := range Metrics {
		for _, v := range Values(metric, pods, vmis, launchers) {
			if v.DescribedObject.Kind != "Pod" || v.DescribedObject.Namespace != "ns" || v.DescribedObject.UID != types.UID("uid-"+v.DescribedObject.Name) {
				t.Errorf("%s describes %+v, want the agent Pod", metric, v.DescribedObject)
			}
			if v.WindowSeconds == nil || *v.WindowSeconds != 15 || !v.Timestamp.Equal(&launchers[0].Timestamp) {
				t.Errorf("%s of %s: window %v, timestamp %v; want metrics-server's 15 s and its time", metric, v.DescribedObject.Name, v.WindowSeconds, v.Timestamp)
			}
			got[metric+" "+v.DescribedObject.Name] = v.Value.String()
		}
	}
	want := map[string]string{
		"vm_cpu_usage web-a":       "1500m",
		"vm_cpu_usage web-b":       "250m",
		"vm_cpu_utilization web-a": "75",
		"vm_cpu_utilization web-b": "25",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
}

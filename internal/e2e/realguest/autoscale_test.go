//go:build e2e

package realguest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/metricsadapter"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/metricsserver"
)

// guestCPULimit caps each guest's launcher, whose compute container holds
// qemu: a busy guest under TCG would take a whole core of the 2-core
// machine, and two of them all of it. Its one vCPU (KubeVirt rounds the
// limit up) makes a busy guest's vm_cpu_utilization about 50.
const guestCPULimit = "500m"

// targetPercent is the HPA's target of vm_cpu_utilization: half what a
// busy guest shows, so one busy guest asks for 2 replicas, and far above
// an idle guest's few percent, so an idle fleet shrinks to 1.
const targetPercent = 25

// TestBusyGuestScalesOut holds the autoscaling on guests' CPU to the real
// node: a Deployment of 1 real guest under the HPA kubectl vmctl autoscale
// writes stays at 1 while its guest idles; once the guest runs a busy loop
// the HPA adds a replica, whose guest boots and answers HTTP. Meanwhile
// vmctl-metrics-adapter's vm_cpu_usage of the busy guest (metrics-server's
// figure of its launcher's compute container, from the kubelet's cgroups)
// agrees with virt-handler's kubevirt_vmi_cpu_usage_seconds_total (libvirt's
// figure of qemu) within 20 %. Idle again, the fleet shrinks back to 1.
func TestBusyGuestScalesOut(t *testing.T) {
	ns := namespace(t)
	ms, err := metricsserver.Start(t.Context(), e.cluster, metricsserver.Options{Log: logWriter{t}, RealNodes: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("metrics-server's log ends with:\n%s", testcluster.Tail(e.cluster.LogFile(metricsserver.Name), 20))
		}
		if err := ms.Stop(); err != nil {
			t.Error(err)
		}
	})
	deployMetricsAdapter(t, ns)
	createPrototype(t, ns)
	mustKubectl(t, nil, "patch", "vm", "guest", "-n", ns, "--type=merge",
		"-p", fmt.Sprintf(`{"spec":{"template":{"spec":{"domain":{"resources":{"limits":{"cpu":%q}}}}}}}`, guestCPULimit))
	manifests, stderr, code := runCode(t, nil, e.binary, "scaffold", "deployment", "guest", "-n", ns, "--image", e.image, "--replicas", "1")
	if code != 0 {
		t.Fatalf("kubectl vmctl scaffold: exit %d: %s", code, stderr)
	}
	mustKubectl(t, []byte(manifests), "apply", "-f", "-")
	first := readyAgents(t, ns, 1)[0]
	vmi := bootedGuest(t, ns, first)
	launcher := launcherOf(t, vmi)
	capped(t, launcher)

	// The boot's CPU must leave the figure first: an HPA made now would
	// scale on it. A Pods metric has no start-up grace, as CPU has.
	start := time.Now()
	eventually(t, metricsWait, "the booted guest's figure to fall below half the target", func(ctx context.Context) (bool, string, error) {
		v, err := guestFigure(ctx, ns, first.Name, contract.MetricVMCPUUtilization)
		if err != nil {
			return false, err.Error(), nil
		}
		return v.value < targetPercent/2, v.String(), nil
	})
	t.Logf("the idle guest's figure below %d%% %s after its Pod was Ready", targetPercent/2, time.Since(start).Round(time.Second))

	const name = "vmctl-guest"
	runVmctl(t, "autoscale", "deployment", name, "-n", ns, "--min=1", "--max=2", fmt.Sprintf("--vm-cpu-percent=%d", targetPercent))
	// Scale in as soon as the guest idles again: the default window is 5 minutes.
	mustKubectl(t, nil, "patch", "hpa", name, "-n", ns, "--type=merge", "-p", `{"spec":{"behavior":{"scaleDown":{"stabilizationWindowSeconds":0}}}}`)
	hpa := waitHPA(t, ns, name, "to read the idle guest's CPU and keep 1 replica", func(h *autoscalingv2.HorizontalPodAutoscaler) bool {
		return hpaReads(h) && h.Status.DesiredReplicas == 1
	})
	t.Logf("the HPA reads the idle guest: %s", metricsadapter.DescribeHPA(hpa))

	ip := launcher.Status.PodIP
	t.Cleanup(func() { _, _ = guestGet(ip, "/cgi-bin/idle") })
	if body := mustGuestGet(t, ip, "/cgi-bin/busy"); !strings.HasPrefix(body, "busy ") {
		t.Fatalf("GET /cgi-bin/busy on guest %s answered %q, want \"busy <PID>\"", vmi.Name, body)
	}
	busyAt := time.Now()

	figuresAgree(t, ns, first, vmi)

	hpa = waitHPA(t, ns, name, "to scale out to 2", func(h *autoscalingv2.HorizontalPodAutoscaler) bool {
		return h.Status.DesiredReplicas == 2 && h.Status.LastScaleTime != nil && h.Status.LastScaleTime.After(busyAt.Add(-time.Second))
	})
	scaledAt := hpa.Status.LastScaleTime.Time
	t.Logf("the HPA scaled out to 2 %s after the guest turned busy (%s)", scaledAt.Sub(busyAt).Round(time.Second), metricsadapter.DescribeHPA(hpa))

	var second corev1.Pod
	for _, p := range readyAgents(t, ns, 2) {
		if p.UID != first.UID {
			second = p
		}
	}
	vmi2 := bootedGuest(t, ns, second)
	ip2 := launcherOf(t, vmi2).Status.PodIP
	if body := mustGuestGet(t, ip2, "/"); strings.TrimSpace(body) != vmi2.Name {
		t.Errorf("the new guest at %s answered %q, want its hostname %s", ip2, body, vmi2.Name)
	}
	t.Logf("the second guest: Pod Ready %s and answering HTTP %s after the HPA scaled out",
		podCondition(&second, corev1.PodReady).LastTransitionTime.Sub(scaledAt).Round(time.Second), time.Since(scaledAt).Round(time.Second))

	if body := mustGuestGet(t, ip, "/cgi-bin/idle"); body != "idle\n" {
		t.Errorf("GET /cgi-bin/idle answered %q, want \"idle\\n\"", body)
	}
	idleAt := time.Now()
	hpa = waitHPA(t, ns, name, "to scale back in to 1", func(h *autoscalingv2.HorizontalPodAutoscaler) bool {
		return h.Status.DesiredReplicas == 1
	})
	eventually(t, guestBoot, "1 agent Pod and 1 VMI left", func(ctx context.Context) (bool, string, error) {
		pods, err := e.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: contract.LabelComponent + "=" + contract.ComponentAgent})
		if err != nil {
			return false, err.Error(), nil
		}
		vmis, err := e.virt.KubevirtV1().VirtualMachineInstances(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		return len(pods.Items) == 1 && len(vmis.Items) == 1, fmt.Sprintf("%d agent Pods, %d VMIs", len(pods.Items), len(vmis.Items)), nil
	})
	t.Logf("the HPA scaled in to 1 %s after the guest idled; 1 agent Pod and its VMI left %s after (%s)",
		hpa.Status.LastScaleTime.Sub(idleAt).Round(time.Second), time.Since(idleAt).Round(time.Second), metricsadapter.DescribeHPA(hpa))
}

// metricsWait bounds the wait for a figure to follow the guest: the
// adapter's is metrics-server's, the rate between two scrapes
// metricsserver.Resolution apart, of the kubelet's figures, which cAdvisor
// refreshes every 10 to 15 s.
const metricsWait = 9 * metricsserver.Resolution

// capped checks that KubeVirt gave the launcher's compute container the
// guest's CPU limit, so the busy guest takes no more.
func capped(t *testing.T, launcher corev1.Pod) {
	t.Helper()
	want := resource.MustParse(guestCPULimit)
	for _, c := range launcher.Spec.Containers {
		if c.Name == "compute" {
			if got := c.Resources.Limits.Cpu(); got.Cmp(want) != 0 {
				t.Fatalf("launcher %s's compute container is limited to %s CPU, want %s", launcher.Name, got, guestCPULimit)
			}
			return
		}
	}
	t.Fatalf("launcher %s has no compute container", launcher.Name)
}

// waitHPA waits until HPA name satisfies ok, and returns it.
func waitHPA(t *testing.T, ns, name, what string, ok func(*autoscalingv2.HorizontalPodAutoscaler) bool) *autoscalingv2.HorizontalPodAutoscaler {
	t.Helper()
	var hpa *autoscalingv2.HorizontalPodAutoscaler
	eventually(t, 3*metricsWait, "the HPA "+what, func(ctx context.Context) (bool, string, error) {
		h, err := e.kube.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		hpa = h
		return ok(h), metricsadapter.DescribeHPA(h), nil
	})
	return hpa
}

// hpaReads reports whether hpa's last sync read its Pods metric.
func hpaReads(hpa *autoscalingv2.HorizontalPodAutoscaler) bool {
	for _, c := range hpa.Status.Conditions {
		if c.Type == autoscalingv2.ScalingActive && c.Status != corev1.ConditionTrue {
			return false
		}
	}
	for _, m := range hpa.Status.CurrentMetrics {
		if m.Pods != nil && m.Pods.Current.AverageValue != nil {
			return true
		}
	}
	return false
}

// runVmctl runs kubectl vmctl and fails t unless it exits 0.
func runVmctl(t *testing.T, args ...string) string {
	t.Helper()
	out, stderr, code := runCode(t, nil, e.binary, args...)
	if code != 0 {
		t.Fatalf("kubectl vmctl %s: exit %d: %s", strings.Join(args, " "), code, stderr)
	}
	return out
}

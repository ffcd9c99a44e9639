//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/metrics/pkg/apis/custom_metrics/v1beta2"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/metricsadapter"
)

// testHPAScalesVMs: a Deployment or StatefulSet of VMs under the HPA kubectl vmctl
// autoscale writes scales out to its maximum while its guests are busy
// (kwok's simulated CPU of their launcher Pods, which KubeVirt annotates
// as the VMI is), every VM Ready; once they idle it scales back in, and
// the removed Pods' VMs go with them; then it holds still for a minute.
// The HPA sees the guests' CPU through vmctl-metrics-adapter, never the
// agents'.
func testHPAScalesVMs(t *testing.T, kind scaffold.Kind) {
	ns := namespace(t)
	// Every guest busy: 900m of its one vCPU. KubeVirt copies the VMI's
	// annotations onto its launcher Pod, whose CPU kwok then reports.
	createPrototypeWith(t, ns, "testvm.yaml", func(vm *kubevirtv1.VirtualMachine) {
		vm.Spec.Template.ObjectMeta.Annotations = map[string]string{usageCPU: "900m"}
	})
	deploy(t, ns, kind, "testvm", "--replicas", "1")
	waitPaired(t, ns, "testvm", 1, settle)

	const name, maxReplicas = "vmctl-testvm", 3
	workload := strings.ToLower(string(kind))
	vmctl(t, "autoscale", workload, name, "-n", ns, "--min=1", fmt.Sprintf("--max=%d", maxReplicas), "--vm-cpu-percent=50")
	// Scale in as soon as the guests idle: the default window is 5 minutes.
	kubectl(t, nil, "patch", "hpa", name, "-n", ns, "--type=merge", "-p", `{"spec":{"behavior":{"scaleDown":{"stabilizationWindowSeconds":0}}}}`)

	start := time.Now()
	waitHPAReplicas(t, ns, kind, name, maxReplicas)
	t.Logf("the HPA scaled the %s's VMs out to %d %s after it was made", kind, maxReplicas, time.Since(start).Round(time.Second))
	vms := waitPaired(t, ns, "testvm", maxReplicas, settle)
	// A new Pod's value comes with its launcher's second scrape.
	eventually(t, metricsWait, fmt.Sprintf("the adapter's %s of each Pod to be 90 (900m of one vCPU)", contract.MetricVMCPUUtilization), func(ctx context.Context) (bool, string, error) {
		got := adapterValues(t, ns)
		return len(got) == maxReplicas && allNear(got, 90), fmt.Sprint(got), nil
	})

	// kubectl vmctl top shows the figures the HPA used.
	top := vmctl(t, "top", "-n", ns)
	if n := topGuestsNear(t, top, 900, 90); n != maxReplicas {
		t.Errorf("kubectl vmctl top shows %d guests at about 900m and 90%%, want %d:\n%s", n, maxReplicas, top)
	}

	// The guests idle: 50m each, 5%.
	launchers, err := e.kube.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: kubevirtv1.AppLabel + "=virt-launcher"})
	if err != nil {
		t.Fatal(err)
	}
	idle := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:"50m"}}}`, usageCPU)
	for _, p := range launchers.Items {
		if _, err := e.kube.CoreV1().Pods(ns).Patch(t.Context(), p.Name, types.MergePatchType, idle, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	start = time.Now()
	waitHPAReplicas(t, ns, kind, name, 1)
	t.Logf("the HPA scaled the %s's VMs in to 1 %s after the guests idled", kind, time.Since(start).Round(time.Second))
	left := waitPaired(t, ns, "testvm", 1, settle)
	for vm := range left {
		if _, ok := vms[vm]; !ok {
			t.Errorf("VM %s is new: scaling in made a VM", vm)
		}
	}

	// Settled: no flapping.
	throughout(t, time.Minute, "the fleet stays at 1 replica", func(ctx context.Context) (string, error) {
		r, err := replicasOf(ctx, ns, kind, name)
		if err != nil || r == 1 {
			return "", err
		}
		return fmt.Sprintf("replicas %d", r), nil
	})
}

// replicasOf is the replicas the spec of workload kind/name asks for.
func replicasOf(ctx context.Context, ns string, kind scaffold.Kind, name string) (int32, error) {
	if kind == scaffold.KindStatefulSet {
		s, err := e.kube.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return 0, err
		}
		return ptr.Deref(s.Spec.Replicas, 0), nil
	}
	d, err := e.kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return 0, err
	}
	return ptr.Deref(d.Spec.Replicas, 0), nil
}

// waitHPAReplicas waits until the HPA has set its workload's replicas to
// want, and says what the HPA saw meanwhile.
func waitHPAReplicas(t *testing.T, ns string, kind scaffold.Kind, name string, want int32) {
	t.Helper()
	eventually(t, 4*metricsWait, fmt.Sprintf("the HPA to set %s's replicas to %d", name, want), func(ctx context.Context) (bool, string, error) {
		hpa, err := e.kube.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		r, err := replicasOf(ctx, ns, kind, name)
		if err != nil {
			return false, err.Error(), nil
		}
		return r == want, metricsadapter.DescribeHPA(hpa), nil
	})
}

// adapterValues is the adapter's vm_cpu_utilization of each agent Pod of
// ns, as the HPA controller asks for it.
func adapterValues(t *testing.T, ns string) map[string]float64 {
	t.Helper()
	raw, err := customMetric(t.Context(), e.kube, ns, contract.LabelAgentPrototype+"=testvm", contract.MetricVMCPUUtilization)
	if err != nil {
		t.Fatal(err)
	}
	var list v1beta2.MetricValueList
	if err := json.Unmarshal(raw, &list); err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, v := range list.Items {
		got[v.DescribedObject.Name] = v.Value.AsApproximateFloat64()
	}
	return got
}

// allNear reports whether every value of m is within 5% of want.
func allNear(m map[string]float64, want float64) bool {
	return !slices.ContainsFunc(slices.Collect(maps.Values(m)), func(v float64) bool { return math.Abs(v-want) > want/20 })
}

// steadyHPAFleet makes a Deployment of two VMs whose guests use 400m of
// their one vCPU each, under an HPA that targets 50 % and so keeps them at
// two, and returns its namespace.
func steadyHPAFleet(t *testing.T) string {
	ns := namespace(t)
	createPrototypeWith(t, ns, "testvm.yaml", func(vm *kubevirtv1.VirtualMachine) {
		vm.Spec.Template.ObjectMeta.Annotations = map[string]string{usageCPU: "400m"}
	})
	deploy(t, ns, scaffold.KindDeployment, "testvm", "--replicas", "2")
	vmctl(t, "autoscale", "deployment", scaffold.DefaultName("testvm"), "-n", ns, "--min=1", "--max=4", "--vm-cpu-percent=50")
	return ns
}

// hpaSyncPeriod is kube-controller-manager's default
// --horizontal-pod-autoscaler-sync-period; the harness's is 2 s.
const hpaSyncPeriod = 15 * time.Second

// testAdapterRestart: the adapter, restarted under an HPA that reads it,
// answers again within one sync of the HPA controller's default period; at
// the harness's 2 s period the HPA records at most one failed read of the
// metric, and the fleet keeps its size.
func testAdapterRestart(t *testing.T, adapter *metricsadapter.Adapter, ns string) {
	name := scaffold.DefaultName("testvm")
	waitPaired(t, ns, "testvm", 2, settle)
	eventually(t, 4*metricsWait, "the HPA to read the guests' CPU", func(ctx context.Context) (bool, string, error) {
		hpa, err := e.kube.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		return hpaReads(hpa), metricsadapter.DescribeHPA(hpa), nil
	})
	before := failedMetricReads(t, ns, name)

	start := time.Now()
	if err := adapter.Restart(); err != nil {
		t.Fatal(err)
	}
	eventually(t, hpaSyncPeriod, "the restarted adapter to answer through the aggregator", func(ctx context.Context) (bool, string, error) {
		raw, err := customMetric(ctx, e.kube, ns, contract.LabelAgentPrototype+"=testvm", contract.MetricVMCPUUtilization)
		if err != nil {
			return false, err.Error(), nil
		}
		return strings.Count(string(raw), `"describedObject"`) == 2, string(raw), nil
	})
	gap := time.Since(start)
	// Three syncs at the harness's period for the HPA to read it again.
	eventually(t, 3*2*time.Second+gap, "the HPA to read the guests' CPU again", func(ctx context.Context) (bool, string, error) {
		hpa, err := e.kube.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		return hpaReads(hpa) && time.Since(start) > gap+2*time.Second, metricsadapter.DescribeHPA(hpa), nil
	})
	failed := failedMetricReads(t, ns, name) - before
	t.Logf("the adapter answered again %s after its restart began; the HPA failed to read its metric %d times meanwhile", gap.Round(time.Millisecond), failed)
	if failed > 1 {
		t.Errorf("the HPA failed to read its metric %d times over the adapter's restart, want at most 1", failed)
	}
	if r, err := replicasOf(t.Context(), ns, scaffold.KindDeployment, name); err != nil || r != 2 {
		t.Errorf("the fleet has %d replicas after the adapter's restart (%v), want 2", r, err)
	}
}

// hpaReads reports whether hpa's last sync read its Pods metric.
func hpaReads(hpa *autoscalingv2.HorizontalPodAutoscaler) bool {
	for _, c := range hpa.Status.Conditions {
		if c.Type == autoscalingv2.ScalingActive && c.Status != "True" {
			return false
		}
	}
	return slices.ContainsFunc(hpa.Status.CurrentMetrics, func(m autoscalingv2.MetricStatus) bool {
		return m.Pods != nil && m.Pods.Current.AverageValue != nil
	})
}

// failedMetricReads counts the HPA controller's FailedGetPodsMetric Events
// of HPA name, one a failed sync, repeats included.
func failedMetricReads(t *testing.T, ns, name string) int32 {
	t.Helper()
	events, err := e.kube.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{
		FieldSelector: "involvedObject.kind=HorizontalPodAutoscaler,involvedObject.name=" + name + ",reason=FailedGetPodsMetric"})
	if err != nil {
		t.Fatal(err)
	}
	var n int32
	for _, ev := range events.Items {
		n += max(ev.Count, 1)
	}
	return n
}

// topGuestsNear counts the rows of kubectl vmctl top's table whose
// CPU(cores) is within 5 % of milli millicores and whose CPU(%) is within
// 5 % of pct: metrics-server's rate of kwok's simulated use wanders by a
// millicore or two.
func topGuestsNear(t *testing.T, top string, milli, pct float64) int {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(top), "\n")
	header := strings.Fields(lines[0])
	cores, share := slices.Index(header, "CPU(cores)"), slices.Index(header, "CPU(%)")
	if cores < 0 || share < 0 {
		t.Fatalf("kubectl vmctl top has no CPU(cores) or CPU(%%) column:\n%s", top)
	}
	near := func(v, want float64) bool { return math.Abs(v-want) <= want/20 }
	n := 0
	for _, line := range lines[1:] {
		f := strings.Fields(line)
		if len(f) != len(header) {
			continue
		}
		m, err1 := strconv.ParseFloat(strings.TrimSuffix(f[cores], "m"), 64)
		p, err2 := strconv.ParseFloat(strings.TrimSuffix(f[share], "%"), 64)
		if err1 == nil && err2 == nil && near(m, milli) && near(p, pct) {
			n++
		}
	}
	return n
}

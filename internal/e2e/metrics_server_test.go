//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"
	"k8s.io/utils/ptr"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/metricsserver"
)

// usageCPU is the annotation from which kwok serves a container's CPU usage
// (testcluster's kwokConfig): each container of the Pod uses that much.
const usageCPU = "kwok.x-k8s.io/usage-cpu"

// metricsWait bounds the wait for a figure. metrics-server reports a Pod's
// CPU as the rate between two scrapes, metricsserver.Resolution apart, and
// kwok's server first counts a Pod's usage some seconds after the Pod runs:
// the first figure took 40 s to show on the 2-core machine, a change 10 s.
const metricsWait = 6 * metricsserver.Resolution

// TestMetricsServer runs the real metrics-server against kwok's simulated
// CPU: the resource metrics API reports what a Pod's annotation says, and a
// HorizontalPodAutoscaler acts on it through kube-controller-manager's
// controller. metrics-server runs only for this test.
func TestMetricsServer(t *testing.T) {
	ms, err := metricsserver.Start(t.Context(), e.cluster, metricsserver.Options{Log: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("metrics-server up in %s", ms.StartupTime.Round(time.Millisecond))
	t.Cleanup(func() {
		if err := ms.Stop(); err != nil {
			t.Error(err)
		}
	})
	metrics, err := metricsclient.NewForConfig(e.cluster.RESTConfig)
	if err != nil {
		t.Fatal(err)
	}
	// The subtests wait on scrapes, not on the CPU: side by side they take
	// as long as one. The Cleanup above runs once both are done.
	t.Run("PodMetrics follow the usage annotation", func(t *testing.T) {
		t.Parallel()
		testPodMetricsFollowUsage(t, metrics)
	})
	t.Run("HPA scales out above its target", func(t *testing.T) {
		t.Parallel()
		testHPAScalesOut(t)
	})
	// One adapter serves custom.metrics.k8s.io for every namespace.
	adapter := startMetricsAdapter(t, namespace(t))
	t.Run("HPAs on the guests' CPU", func(t *testing.T) {
		t.Parallel()
		// A fleet whose HPA reads its metric by the time the two below are
		// done, to restart the adapter under.
		steady := steadyHPAFleet(t)
		t.Run("scale", func(t *testing.T) {
			for _, kind := range []scaffold.Kind{scaffold.KindDeployment, scaffold.KindStatefulSet} {
				t.Run("HPA scales a "+string(kind)+"'s VMs on their guests' CPU", func(t *testing.T) {
					t.Parallel()
					testHPAScalesVMs(t, kind)
				})
			}
		})
		t.Run("an adapter restart costs at most one HPA sync", func(t *testing.T) {
			testAdapterRestart(t, adapter, steady)
		})
	})
}

func testPodMetricsFollowUsage(t *testing.T, metrics metricsclient.Interface) {
	ns := namespace(t)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "burn", Labels: map[string]string{"app": "burn"},
			Annotations: map[string]string{usageCPU: "250m"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "burn", Image: "registry.k8s.io/pause:3.10"}}},
	}
	if _, err := e.kube.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			logKwokMetrics(t, ns, pod.Name)
		}
	})
	start := time.Now()
	waitPodCPU(t, metrics, ns, pod.Name, apiresource.MustParse("250m"))
	t.Logf("PodMetrics reported 250m %s after the Pod was created", time.Since(start).Round(time.Second))

	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:"600m"}}}`, usageCPU)
	if _, err := e.kube.CoreV1().Pods(ns).Patch(t.Context(), pod.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	waitPodCPU(t, metrics, ns, pod.Name, apiresource.MustParse("600m"))
	t.Logf("PodMetrics reported 600m %s after the annotation changed", time.Since(start).Round(time.Second))
}

// waitPodCPU waits until the resource metrics API reports the Pod's CPU
// within 5% of want.
func waitPodCPU(t *testing.T, metrics metricsclient.Interface, ns, name string, want apiresource.Quantity) {
	t.Helper()
	eventually(t, metricsWait, fmt.Sprintf("PodMetrics %s/%s to report %s CPU", ns, name, want.String()), func(ctx context.Context) (bool, string, error) {
		pm, err := metrics.MetricsV1beta1().PodMetricses(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil && strings.Contains(err.Error(), "context deadline") {
			return false, "", nil // keep what the last full answer said
		}
		if err != nil {
			return false, err.Error(), nil
		}
		var sum int64
		for _, c := range pm.Containers {
			sum += c.Usage.Cpu().MilliValue()
		}
		w := want.MilliValue()
		return sum*100 >= w*95 && sum*100 <= w*105, fmt.Sprintf("%dm over a %s window at %s", sum, pm.Window.Duration, pm.Timestamp.Format(time.TimeOnly)), nil
	})
}

func testHPAScalesOut(t *testing.T) {
	ns := namespace(t)
	labels := map[string]string{"app": "burn"}
	// Each Pod uses 200m of the 100m it asks for: 200% against a target of
	// 50% wants four times the replicas, more than maxReplicas.
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "burn"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{usageCPU: "200m"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "burn", Image: "registry.k8s.io/pause:3.10",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: apiresource.MustParse("100m")}},
				}}},
			},
		},
	}
	if _, err := e.kube.AppsV1().Deployments(ns).Create(t.Context(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const maxReplicas = 3
	hpa := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "burn"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: d.Name},
			MinReplicas:    ptr.To[int32](1),
			MaxReplicas:    maxReplicas,
			Metrics: []autoscalingv2.MetricSpec{{
				Type: autoscalingv2.ResourceMetricSourceType,
				Resource: &autoscalingv2.ResourceMetricSource{
					Name:   corev1.ResourceCPU,
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](50)},
				},
			}},
		},
	}
	if _, err := e.kube.AutoscalingV2().HorizontalPodAutoscalers(ns).Create(t.Context(), hpa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	eventually(t, metricsWait, "the HPA to scale the Deployment to maxReplicas", func(ctx context.Context) (bool, string, error) {
		got, err := e.kube.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, hpa.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		seen := fmt.Sprintf("replicas %d desired %d", got.Status.CurrentReplicas, got.Status.DesiredReplicas)
		for _, m := range got.Status.CurrentMetrics {
			if m.Resource != nil && m.Resource.Current.AverageUtilization != nil {
				seen += fmt.Sprintf(", CPU at %d%%", *m.Resource.Current.AverageUtilization)
			}
		}
		for _, c := range got.Status.Conditions {
			if c.Status != corev1.ConditionTrue {
				seen += fmt.Sprintf(", %s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message)
			}
		}
		dep, err := e.kube.AppsV1().Deployments(ns).Get(ctx, d.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		return ptr.Deref(dep.Spec.Replicas, 0) == maxReplicas, seen, nil
	})
	t.Logf("the HPA scaled the Deployment to %d replicas %s after it was created", maxReplicas, time.Since(start).Round(time.Second))
}

// logKwokMetrics logs the lines of the Pod's node's resource metrics, as
// kwok serves them to metrics-server, that name the Pod, and the tail of
// metrics-server's log.
func logKwokMetrics(t *testing.T, ns, name string) {
	t.Logf("metrics-server's log ends with:\n%s", testcluster.Tail(e.cluster.LogFile(metricsserver.Name), 20))
	ctx := context.Background()
	pod, err := e.kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil || pod.Spec.NodeName == "" {
		t.Logf("Pod %s/%s not on a node: %v", ns, name, err)
		return
	}
	node, err := e.kube.CoreV1().Nodes().Get(ctx, pod.Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Log(err)
		return
	}
	url := fmt.Sprintf("http://127.0.0.1:%d/metrics/nodes/%s/metrics/resource", node.Status.DaemonEndpoints.KubeletEndpoint.Port, node.Name)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Log(err)
		return
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Log(err)
		return
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	var lines []string
	for l := range strings.SplitSeq(string(body), "\n") {
		if strings.Contains(l, name) {
			lines = append(lines, l)
		}
	}
	t.Logf("kwok's %s (%s), the lines of Pod %s (phase %s):\n%s", url, resp.Status, name, pod.Status.Phase, strings.Join(lines, "\n"))
}

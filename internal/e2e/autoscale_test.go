//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/metricsadapter"
)

// adapterBinary is vmctl-metrics-adapter: $VMCTL_ADAPTER_BINARY, or built
// once for the tests that need it.
var adapterBinary = sync.OnceValues(func() (string, error) { return built("VMCTL_ADAPTER_BINARY", "vmctl-metrics-adapter") })

// startMetricsAdapter runs vmctl-metrics-adapter for namespace ns until t
// ends (package metricsadapter: scaffold's objects, its process on
// loopback), and waits until the aggregator finds both versions Available.
func startMetricsAdapter(t testing.TB, ns string) *metricsadapter.Adapter {
	t.Helper()
	binary, err := adapterBinary()
	if err != nil {
		t.Fatal(err)
	}
	a, err := metricsadapter.Start(t.Context(), e.cluster, metricsadapter.Options{Binary: binary, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := a.Stop(); err != nil {
			t.Errorf("stop the adapter: %v", err)
		}
		if t.Failed() {
			log, _ := os.ReadFile(a.LogFile())
			t.Logf("vmctl-metrics-adapter's log:\n%s", log)
		}
	})
	return a
}

// customMetric asks the custom metrics API, through kube-apiserver's
// aggregator, for metric of the Pods of ns that selector picks, as the HPA
// controller asks, with c's credentials.
func customMetric(ctx context.Context, c kubernetes.Interface, ns, selector, metric string) ([]byte, error) {
	raw, err := c.Discovery().RESTClient().Get().
		AbsPath("/apis/custom.metrics.k8s.io/v1beta2/namespaces", ns, "pods", "*", metric).
		Param("labelSelector", selector).DoRaw(ctx)
	if err != nil {
		return raw, fmt.Errorf("%w (%s)", err, raw)
	}
	return raw, nil
}

// TestMetricsAdapterWithoutMetricsServer: with no metrics-server (no
// metrics.k8s.io), the adapter, reached through the aggregator as the HPA
// controller reaches it, answers 503 and says to install metrics-server,
// never a value, and an HPA on the fleet says so and scales nothing; a
// user without rights gets 403 from its delegated authorization.
func TestMetricsAdapterWithoutMetricsServer(t *testing.T) {
	ns := namespace(t)
	createPrototype(t, ns, "testvm.yaml")
	deploy(t, ns, scaffold.KindDeployment, "testvm", "--replicas", "2")
	waitPaired(t, ns, "testvm", 2, settle)
	startMetricsAdapter(t, ns)

	selector := contract.LabelAgentPrototype + "=testvm"
	_, err := customMetric(t.Context(), e.kube, ns, selector, contract.MetricVMCPUUtilization)
	if !apierrors.IsServiceUnavailable(err) || !strings.Contains(err.Error(), "install it") {
		t.Errorf("without metrics-server the adapter answered %v; want 503 saying to install metrics-server", err)
	}

	// The HPA says why it cannot scale, in the adapter's words, and
	// scales nothing.
	const name = "vmctl-testvm"
	vmctl(t, "autoscale", "deployment", name, "-n", ns, "--min=1", "--max=4", "--vm-cpu-percent=50")
	eventually(t, time.Minute, "the HPA to say it cannot read the metric", func(ctx context.Context) (bool, string, error) {
		hpa, err := e.kube.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		for _, c := range hpa.Status.Conditions {
			if c.Type == autoscalingv2.ScalingActive && c.Status == corev1.ConditionFalse && c.Reason == "FailedGetPodsMetric" &&
				strings.Contains(c.Message, "metrics-server") {
				return true, "", nil
			}
		}
		return false, metricsadapter.DescribeHPA(hpa), nil
	})
	if d, err := e.kube.AppsV1().Deployments(ns).Get(t.Context(), name, metav1.GetOptions{}); err != nil || ptr.Deref(d.Spec.Replicas, 0) != 2 {
		t.Errorf("the Deployment's replicas changed without a metric: %v", err)
	}

	nobody := rest.CopyConfig(e.cluster.RESTConfig)
	nobody.Impersonate = rest.ImpersonationConfig{UserName: "nobody"}
	c, err := kubernetes.NewForConfig(nobody)
	if err != nil {
		t.Fatal(err)
	}
	_, err = customMetric(t.Context(), c, ns, selector, contract.MetricVMCPUUtilization)
	if !apierrors.IsForbidden(err) {
		t.Errorf("a user without rights got %v; want 403", err)
	}
}

//go:build e2e

package realguest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/metrics/pkg/apis/custom_metrics/v1beta2"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	kvharness "github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/kubevirt"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/metricsserver"
)

// figuresAgree reads virt-handler's kubevirt_vmi_cpu_usage_seconds_total
// of the busy guest's VMI twice, 2 scrapes of metrics-server apart, and the
// adapter's vm_cpu_usage of its agent Pod p meanwhile, and fails t unless
// the counter's rate and the adapter's figures' mean agree within 20 %.
// Both count qemu's CPU: libvirt's domain stats the process's, the
// kubelet the compute container's, which holds virt-launcher's own few
// millicores besides.
func figuresAgree(t *testing.T, ns string, p corev1.Pod, vmi *kubevirtv1.VirtualMachineInstance) {
	t.Helper()
	// Busy, the guest takes most of its limit; its figure shows it one
	// to two scrapes after the loop starts.
	limit := resource.MustParse(guestCPULimit)
	busy := limit.AsApproximateFloat64() * 0.7
	start := time.Now()
	eventually(t, metricsWait, fmt.Sprintf("the adapter's %s of Pod %s to pass %.2f cores", contract.MetricVMCPUUsage, p.Name, busy), func(ctx context.Context) (bool, string, error) {
		v, err := guestFigure(ctx, ns, p.Name, contract.MetricVMCPUUsage)
		if err != nil {
			return false, err.Error(), nil
		}
		return v.value >= busy, v.String(), nil
	})
	t.Logf("the adapter showed the busy guest %s after its loop began", time.Since(start).Round(time.Second))

	handler := handlerPod(t)
	c1, t1 := handlerCPUSeconds(t, handler, vmi)
	seen := map[time.Time]figure{}
	eventually(t, 2*metricsWait, "two of metrics-server's scrapes of the busy guest", func(ctx context.Context) (bool, string, error) {
		v, err := guestFigure(ctx, ns, p.Name, contract.MetricVMCPUUsage)
		if err != nil {
			return false, err.Error(), nil
		}
		if v.at.After(t1) {
			seen[v.at] = v
		}
		return len(seen) >= 2 && time.Since(t1) >= 2*metricsserver.Resolution, fmt.Sprint(len(seen), " figures"), nil
	})
	c2, t2 := handlerCPUSeconds(t, handler, vmi)
	rate := (c2 - c1) / t2.Sub(t1).Seconds()
	var sum float64
	var figures []string
	for _, v := range seen {
		sum += v.value
		figures = append(figures, v.String())
	}
	adapter := sum / float64(len(seen))
	t.Logf("busy guest %s: virt-handler's kubevirt_vmi_cpu_usage_seconds_total rose %.2f s in %s, %.3f cores; the adapter's %s %.3f cores on average (%s)",
		vmi.Name, c2-c1, t2.Sub(t1).Round(100*time.Millisecond), rate, contract.MetricVMCPUUsage, adapter, strings.Join(figures, "; "))
	if math.Abs(adapter-rate) > 0.2*rate {
		t.Errorf("the adapter's %.3f cores and virt-handler's %.3f differ by more than 20 %%", adapter, rate)
	}
}

// figure is one value of the adapter for one Pod.
type figure struct {
	value  float64
	at     time.Time
	window time.Duration
}

func (f figure) String() string {
	return fmt.Sprintf("%.3f at %s over %s", f.value, f.at.Format(time.TimeOnly), f.window)
}

// guestFigure asks the custom metrics API, through the aggregator, as the
// HPA controller does, for metric of agent Pod pod.
func guestFigure(ctx context.Context, ns, pod, metric string) (figure, error) {
	raw, err := e.kube.Discovery().RESTClient().Get().
		AbsPath("/apis/custom.metrics.k8s.io/v1beta2/namespaces", ns, "pods", "*", metric).
		Param("labelSelector", contract.LabelAgentPrototype+"=guest").DoRaw(ctx)
	if err != nil {
		return figure{}, fmt.Errorf("%w (%s)", err, raw)
	}
	var list v1beta2.MetricValueList
	if err := json.Unmarshal(raw, &list); err != nil {
		return figure{}, err
	}
	for _, v := range list.Items {
		if v.DescribedObject.Name == pod {
			var w time.Duration
			if v.WindowSeconds != nil {
				w = time.Duration(*v.WindowSeconds) * time.Second
			}
			return figure{value: v.Value.AsApproximateFloat64(), at: v.Timestamp.Time, window: w}, nil
		}
	}
	return figure{}, fmt.Errorf("no %s of Pod %s yet: %s", metric, pod, raw)
}

// handlerPod is the node's virt-handler Pod.
func handlerPod(t *testing.T) corev1.Pod {
	t.Helper()
	pods, err := e.kube.CoreV1().Pods(kvharness.Namespace).List(t.Context(), metav1.ListOptions{LabelSelector: "kubevirt.io=virt-handler"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 || pods.Items[0].Status.PodIP == "" {
		t.Fatalf("%d virt-handler Pods, want 1 with an IP", len(pods.Items))
	}
	return pods.Items[0]
}

// handlerCPUSeconds reads kubevirt_vmi_cpu_usage_seconds_total of vmi where
// Prometheus would: virt-handler's metrics port (8443, HTTPS, named
// "metrics"), at its Pod's IP, which the machine routes to the node's
// bridge. Its certificate is checked against the kubevirt-ca ConfigMap, as
// KubeVirt's components check each other's.
func handlerCPUSeconds(t *testing.T, handler corev1.Pod, vmi *kubevirtv1.VirtualMachineInstance) (float64, time.Time) {
	t.Helper()
	cm, err := e.kube.CoreV1().ConfigMaps(kvharness.Namespace).Get(t.Context(), "kubevirt-ca", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM([]byte(cm.Data["ca-bundle"]))
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: pool, ServerName: "virt-handler." + kvharness.Namespace + ".pod.cluster.local", MinVersion: tls.VersionTLS12,
	}}}
	url := "https://" + net.JoinHostPort(handler.Status.PodIP, "8443") + "/metrics"
	at := time.Now()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %v", url, resp.Status, err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("parse %s: %v", url, err)
	}
	const name = "kubevirt_vmi_cpu_usage_seconds_total"
	for _, m := range families[name].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["namespace"] == vmi.Namespace && labels["name"] == vmi.Name {
			return m.GetCounter().GetValue(), at
		}
	}
	t.Fatalf("%s has no %s of VMI %s/%s (%d samples of it)", url, name, vmi.Namespace, vmi.Name, len(families[name].GetMetric()))
	return 0, at
}

// guestGet GETs path from the guest behind launcher Pod IP ip, from the
// node's client namespace.
func guestGet(ip, path string) (string, error) {
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: e.node.DialFromClient, DisableKeepAlives: true}}
	resp, err := client.Get("http://" + ip + path)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return string(body), err
}

// mustGuestGet is guestGet, retried for a minute, as a busy guest under
// TCG may be slow to answer.
func mustGuestGet(t *testing.T, ip, path string) string {
	t.Helper()
	var body string
	eventually(t, time.Minute, "GET http://"+ip+path, func(context.Context) (bool, string, error) {
		b, err := guestGet(ip, path)
		body = b
		if err != nil {
			return false, err.Error(), nil
		}
		return true, "", nil
	})
	return body
}

// logWriter sends progress lines to t's log.
type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

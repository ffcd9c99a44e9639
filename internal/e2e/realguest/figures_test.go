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
	"sync"
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
)

// figuresAgree samples virt-handler's kubevirt_vmi_cpu_usage_seconds_total
// of the busy guest's VMI every second while it collects the adapter's
// vm_cpu_usage of its agent Pod p over three of metrics-server's scrapes,
// and fails t unless the two agree within 20 % over the same time: the CPU
// seconds the adapter's figures say the guest used in their windows (each
// is a rate over [timestamp-window, timestamp], the kubelet's two samples)
// against the counter's rise over those windows, read between its
// samples. On a loaded machine a guest's CPU varies from one window to
// the next, so only the same windows compare. Both count qemu's CPU:
// libvirt's domain stats the process's, the kubelet the compute
// container's, which holds virt-launcher's own few millicores besides.
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

	counter := sampleHandler(t, handlerPod(t), vmi)
	seen := map[time.Time]figure{}
	eventually(t, 3*metricsWait, "three of metrics-server's scrapes of the busy guest within virt-handler's samples", func(ctx context.Context) (bool, string, error) {
		v, err := guestFigure(ctx, ns, p.Name, contract.MetricVMCPUUsage)
		if err != nil {
			return false, err.Error(), nil
		}
		if counter.covers(v.at.Add(-v.window), v.at) {
			seen[v.at] = v
		}
		return len(seen) >= 3, fmt.Sprintf("%d figures; virt-handler: %s", len(seen), counter), nil
	})
	samples := counter.stop()
	var adapter, handler float64 // CPU seconds over the figures' windows
	var figures []string
	for _, v := range seen {
		from, _ := samples.at(v.at.Add(-v.window))
		to, _ := samples.at(v.at)
		adapter += v.value * v.window.Seconds()
		handler += to - from
		figures = append(figures, fmt.Sprintf("%s; virt-handler %.3f", v, (to-from)/v.window.Seconds()))
	}
	t.Logf("busy guest %s over %d of the adapter's windows: the adapter's %s says %.2f CPU seconds, virt-handler's kubevirt_vmi_cpu_usage_seconds_total rose %.2f (%d samples; %s)",
		vmi.Name, len(seen), contract.MetricVMCPUUsage, adapter, handler, len(samples), strings.Join(figures, "; "))
	if math.Abs(adapter-handler) > 0.2*handler {
		t.Errorf("the adapter's %.2f CPU seconds and virt-handler's %.2f differ by more than 20 %%", adapter, handler)
	}
}

// counterSample is kubevirt_vmi_cpu_usage_seconds_total read at a time.
type counterSample struct {
	at      time.Time
	seconds float64
}

// counterSamples are samples in time order.
type counterSamples []counterSample

// at is the counter at time x, linearly between the samples around it,
// and false when x is outside them.
func (s counterSamples) at(x time.Time) (float64, bool) {
	for i := 1; i < len(s); i++ {
		a, b := s[i-1], s[i]
		if x.Before(a.at) || x.After(b.at) {
			continue
		}
		f := float64(x.Sub(a.at)) / float64(b.at.Sub(a.at))
		return a.seconds + f*(b.seconds-a.seconds), true
	}
	return 0, false
}

// handlerSampler reads virt-handler's counter of a VMI every second until
// stop.
type handlerSampler struct {
	mu      sync.Mutex
	samples counterSamples
	err     error
	cancel  context.CancelFunc
	done    chan struct{}
}

// sampleHandler starts a handlerSampler of vmi's counter at handler, and
// stops it when t ends.
func sampleHandler(t *testing.T, handler corev1.Pod, vmi *kubevirtv1.VirtualMachineInstance) *handlerSampler {
	t.Helper()
	client, url := handlerClient(t, handler)
	ctx, cancel := context.WithCancel(t.Context())
	h := &handlerSampler{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(h.done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			v, at, err := handlerCPUSeconds(ctx, client, url, vmi)
			h.mu.Lock()
			if err == nil {
				h.samples = append(h.samples, counterSample{at, v})
			} else if ctx.Err() == nil {
				h.err = err
			}
			h.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() { h.cancel(); <-h.done })
	return h
}

// String says how many samples there are, and the last failed read.
func (h *handlerSampler) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err != nil {
		return fmt.Sprintf("%d samples, last error %v", len(h.samples), h.err)
	}
	return fmt.Sprintf("%d samples", len(h.samples))
}

// covers tells whether the samples so far span from to to.
func (h *handlerSampler) covers(from, to time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, okFrom := h.samples.at(from)
	_, okTo := h.samples.at(to)
	return okFrom && okTo
}

// stop ends the sampling and returns the samples.
func (h *handlerSampler) stop() counterSamples {
	h.cancel()
	<-h.done
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.samples
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

// handlerClient is a client of virt-handler's metrics port (8443, HTTPS,
// named "metrics") at its Pod's IP, which the machine routes to the node's
// bridge, where Prometheus would read it, and that URL. Its certificate is
// checked against the kubevirt-ca ConfigMap, as KubeVirt's components
// check each other's.
func handlerClient(t *testing.T, handler corev1.Pod) (*http.Client, string) {
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
	return client, "https://" + net.JoinHostPort(handler.Status.PodIP, "8443") + "/metrics"
}

// handlerCPUSeconds reads kubevirt_vmi_cpu_usage_seconds_total of vmi
// from virt-handler's metrics at url, and when: halfway through the
// request, as virt-handler reads libvirt's stats when asked.
func handlerCPUSeconds(ctx context.Context, client *http.Client, url string, vmi *kubevirtv1.VirtualMachineInstance) (float64, time.Time, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, time.Time{}, err
	}
	begin := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return 0, time.Time{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	at := begin.Add(time.Since(begin) / 2)
	if err != nil {
		return 0, at, fmt.Errorf("GET %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return 0, at, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		return 0, at, fmt.Errorf("parse %s: %w", url, err)
	}
	const name = "kubevirt_vmi_cpu_usage_seconds_total"
	for _, m := range families[name].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["namespace"] == vmi.Namespace && labels["name"] == vmi.Name {
			return m.GetCounter().GetValue(), at, nil
		}
	}
	return 0, at, fmt.Errorf("%s has no %s of VMI %s/%s (%d samples of it)", url, name, vmi.Namespace, vmi.Name, len(families[name].GetMetric()))
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

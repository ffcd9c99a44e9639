//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
)

// TestAgentMetricsFollowWhatItDoes runs the agent binary for a real Pod,
// scrapes its /metrics in Prometheus' text format as Prometheus would, and
// checks the values move as the agent acts: the VM created and ready, then
// deleted by someone else and recreated.
func TestAgentMetricsFollowWhatItDoes(t *testing.T) {
	ns := namespace(t)
	createPrototype(t, ns, "testvm.yaml")
	// Not an agent Pod: the kubelet double leaves it alone, kwok runs it.
	pod, err := e.kube.CoreV1().Pods(ns).Create(t.Context(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "scraped"},
		Spec:       corev1.PodSpec{NodeName: e.cluster.Nodes[0], Containers: []corev1.Container{{Name: "c", Image: "none"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Gone before the next test: a Pod of no controller on a node stops
	// kubectl drain there, and the namespace goes in the background.
	t.Cleanup(func() {
		kubectl(t, nil, "delete", "pod", pod.Name, "-n", ns, "--grace-period=0", "--force", "--wait", "--timeout=1m")
	})
	logPath := filepath.Join(t.TempDir(), "agent.log")
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = log.Close() }()
	pin := pinnedAgent(t, ns)
	cmd := exec.Command(e.binary, "agent", "testvm", "--hostname-override", pod.Name,
		"--kubeconfig", e.cluster.Kubeconfig, "-n", ns, "--probe-address", "127.0.0.1:0", pin[0])
	cmd.Env = append(os.Environ(), "POD_NAMESPACE="+ns, "POD_UID="+string(pod.UID), "NODE_NAME="+pod.Spec.NodeName, pin[1])
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("agent log:\n%s", b)
		}
	})

	var url string
	eventually(t, settle, "the agent serving its probes", func(context.Context) (bool, string, error) {
		b, _ := os.ReadFile(logPath)
		m := regexp.MustCompile(`"Serving probes".* address="([^"]+)"`).FindSubmatch(b)
		if m == nil {
			return false, string(b), nil
		}
		url = "http://" + string(m[1]) + "/metrics"
		return true, "", nil
	})
	waitSample := func(key string, want float64) map[string]float64 {
		t.Helper()
		var got map[string]float64
		eventually(t, settle, fmt.Sprintf("%s = %v", key, want), func(ctx context.Context) (bool, string, error) {
			got = scrapeAgent(ctx, t, url)
			return got[key] == want, fmt.Sprintf("%s = %v", key, got[key]), nil
		})
		return got
	}

	m := waitSample("vmctl_agent_vm_ready", 1)
	for key, want := range map[string]float64{
		`vmctl_agent_vms_total{reason="Created"}`:       1,
		`vmctl_agent_vms_total{reason="Recreated"}`:     0,
		"vmctl_agent_start_to_vm_created_seconds_count": 1,
		"vmctl_agent_start_to_vm_ready_seconds_count":   1,
		"vmctl_agent_watch_restarts_total":              0,
	} {
		if m[key] != want {
			t.Errorf("with its VM ready: %s = %v, want %v", key, m[key], want)
		}
	}
	if s := m["vmctl_agent_start_to_vm_ready_seconds_sum"]; s <= 0 || s > settle.Seconds() {
		t.Errorf("start to VM ready took %vs by the histogram", s)
	}
	if m["go_goroutines"] <= 0 || m["go_memstats_heap_alloc_bytes"] <= 0 {
		t.Errorf("Go runtime metrics missing: goroutines %v, heap %v", m["go_goroutines"], m["go_memstats_heap_alloc_bytes"])
	}

	// Someone deletes the VM: the agent recreates it, and says so.
	vm := derive.Name("testvm", pod.Name, pod.UID)
	if err := e.virt.KubevirtV1().VirtualMachines(ns).Delete(t.Context(), vm, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitSample(`vmctl_agent_vms_total{reason="Recreated"}`, 1)
	m = waitSample("vmctl_agent_vm_ready", 1)
	if m[`vmctl_agent_vms_total{reason="Created"}`] != 1 || m["vmctl_agent_start_to_vm_ready_seconds_count"] != 1 {
		t.Errorf("after the recreation: Created %v, start-to-ready count %v; want 1 and 1 (a recreation is no start)",
			m[`vmctl_agent_vms_total{reason="Created"}`], m["vmctl_agent_start_to_vm_ready_seconds_count"])
	}
}

// scrapeAgent GETs url and parses Prometheus' text format into
// `name{label="value",...}` → value; histograms give _count and _sum.
func scrapeAgent(ctx context.Context, t *testing.T, url string) map[string]float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v: %s", url, resp.StatusCode, err, body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("Content-Type %q, want Prometheus' text format", ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("parse %s: %v\n%s", url, err, body)
	}
	out := map[string]float64{}
	for name, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			suffix := ""
			if len(labels) > 0 {
				suffix = "{" + strings.Join(labels, ",") + "}"
			}
			switch {
			case m.GetCounter() != nil:
				out[name+suffix] = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				out[name+suffix] = m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				out[name+"_count"+suffix] = float64(m.GetHistogram().GetSampleCount())
				out[name+"_sum"+suffix] = m.GetHistogram().GetSampleSum()
			}
		}
	}
	return out
}

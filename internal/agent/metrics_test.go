package agent

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/revision"
)

// scrape reads the agent's /metrics as Prometheus would and returns each
// sample as "name{labels}" → value; a histogram gives its _count and _sum.
func (h *harness) scrape() map[string]float64 {
	h.t.Helper()
	rec := httptest.NewRecorder()
	h.agent.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		h.t.Fatalf("/metrics: %d %s", rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		h.t.Errorf("/metrics Content-Type %q, want Prometheus' text format", ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		h.t.Fatalf("parse /metrics: %v", err)
	}
	out := map[string]float64{}
	for name, f := range families {
		for _, m := range f.GetMetric() {
			key := name + labelString(m.GetLabel())
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				out[key] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[key] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				out[name+"_count"+labelString(m.GetLabel())] = float64(m.GetHistogram().GetSampleCount())
				out[name+"_sum"+labelString(m.GetLabel())] = m.GetHistogram().GetSampleSum()
			}
		}
	}
	return out
}

func labelString(labels []*dto.LabelPair) string {
	if len(labels) == 0 {
		return ""
	}
	var s []string
	for _, l := range labels {
		s = append(s, l.GetName()+"="+l.GetValue())
	}
	return "{" + strings.Join(s, ",") + "}"
}

// waitMetric waits until the sample key has value want.
func (h *harness) waitMetric(key string, want float64) {
	h.t.Helper()
	var got float64
	h.eventually(key+" is "+strconv.FormatFloat(want, 'g', -1, 64), func() bool {
		got = h.scrape()[key]
		return got == want
	})
}

func TestMetricsFollowTheAgent(t *testing.T) {
	h := newHarness(t, Config{}, []*kubevirtv1.VirtualMachine{prototype(testProto)})
	first := h.scrape()
	for key, want := range map[string]float64{
		"vmctl_agent_vm_ready":                          0,
		"vmctl_agent_vms_total{reason=Created}":         0,
		"vmctl_agent_vms_total{reason=Recreated}":       0,
		"vmctl_agent_start_to_vm_created_seconds_count": 0,
		"vmctl_agent_watch_restarts_total":              0,
	} {
		if got, ok := first[key]; !ok || got != want {
			t.Errorf("before the start: %s = %v (present %v), want %v", key, got, ok, want)
		}
	}
	if _, ok := first["go_goroutines"]; !ok {
		t.Error("no go_goroutines: the Go runtime collector is missing")
	}

	vm := h.readyVM()
	m := h.scrape()
	for key, want := range map[string]float64{
		"vmctl_agent_vm_ready":                          1,
		"vmctl_agent_vms_total{reason=Created}":         1,
		"vmctl_agent_start_to_vm_created_seconds_count": 1,
		"vmctl_agent_start_to_vm_ready_seconds_count":   1,
	} {
		if m[key] != want {
			t.Errorf("VM ready: %s = %v, want %v", key, m[key], want)
		}
	}
	if created, ready := m["vmctl_agent_start_to_vm_created_seconds_sum"], m["vmctl_agent_start_to_vm_ready_seconds_sum"]; created <= 0 || ready < created {
		t.Errorf("start to created %vs, to ready %vs: want 0 < created <= ready", created, ready)
	}

	// Someone deletes the VM: a recreation, not a second creation; the
	// start-to histograms measure the start only.
	h.api.removeVM(testVM)
	h.waitMetric("vmctl_agent_vms_total{reason=Recreated}", 1)
	h.waitMetric("vmctl_agent_vm_ready", 0)
	again := h.api.object(testVM)
	again.Status.Ready = true
	h.api.put(again)
	h.waitMetric("vmctl_agent_vm_ready", 1)
	m = h.scrape()
	if m["vmctl_agent_vms_total{reason=Created}"] != 1 || m["vmctl_agent_start_to_vm_ready_seconds_count"] != 1 {
		t.Errorf("after the recreation: created %v, start-to-ready count %v; want 1 and 1", m["vmctl_agent_vms_total{reason=Created}"], m["vmctl_agent_start_to_vm_ready_seconds_count"])
	}
	if again.UID == vm.UID {
		t.Fatal("the VM was not recreated")
	}

	// The server ends the watch: the reflector opens it again.
	h.api.closeWatches()
	h.watchesBack(testVM)
	h.waitMetric("vmctl_agent_watch_restarts_total", 1)

	// Failed requests count by verb: the watch, refused while the server
	// is down. It stays down until the agent has counted one, however
	// slowly the agent's reflector comes back to it.
	h.api.restart(0, func() {
		h.eventually("a refused watch counted", func() bool {
			return h.scrape()["vmctl_agent_api_errors_total{verb=watch}"] >= 1
		})
	})
	h.watchesBack(testVM)

	if err := h.sigterm(); err != nil {
		t.Fatal(err)
	}
	m = h.scrape()
	if m["vmctl_agent_shutdown_vm_deletion_seconds_count"] != 1 || m["vmctl_agent_vm_ready"] != 0 {
		t.Errorf("after shutdown: deletions observed %v, ready %v; want 1 and 0", m["vmctl_agent_shutdown_vm_deletion_seconds_count"], m["vmctl_agent_vm_ready"])
	}
}

func TestMetricsCountAdoptionsReplacementsAndErrors(t *testing.T) {
	t.Run("adopted", func(t *testing.T) {
		h := newHarness(t, Config{}, []*kubevirtv1.VirtualMachine{prototype(testProto), derived(t, testIdentity, "existing-uid")})
		h.start()
		h.waitMetric("vmctl_agent_vms_total{reason=Adopted}", 1)
		m := h.scrape()
		if m["vmctl_agent_vms_total{reason=Created}"] != 0 || m["vmctl_agent_start_to_vm_created_seconds_count"] != 0 {
			t.Errorf("an adoption counted as a creation: %v", m)
		}
		// The watch's first list found it: no POST was refused.
		if m["vmctl_agent_api_errors_total{verb=create}"] != 0 {
			t.Errorf("create errors %v, want 0", m["vmctl_agent_api_errors_total{verb=create}"])
		}
	})
	t.Run("replaced", func(t *testing.T) {
		earlier := testIdentity
		earlier.PodUID = "dead-pod-uid"
		h := newHarness(t, Config{}, []*kubevirtv1.VirtualMachine{prototype(testProto), derived(t, earlier, "old-vm-uid")})
		h.start()
		h.waitMetric("vmctl_agent_vms_total{reason=Replaced}", 1)
		m := h.scrape()
		if m["vmctl_agent_start_to_vm_created_seconds_count"] != 1 {
			t.Errorf("a replacement makes a VM: start-to-created count %v, want 1", m["vmctl_agent_start_to_vm_created_seconds_count"])
		}
		// The POST that found the name taken is an API error.
		if m["vmctl_agent_api_errors_total{verb=create}"] != 1 {
			t.Errorf("create errors %v, want 1 (409 AlreadyExists)", m["vmctl_agent_api_errors_total{verb=create}"])
		}
	})
	t.Run("revision store forbidden", func(t *testing.T) {
		h := newHarness(t, Config{}, []*kubevirtv1.VirtualMachine{prototype(testProto)})
		var failed int
		h.api.fail = func(req string) error {
			if req == "get revisions "+testStore && failed < 3 {
				failed++
				return apierrors.NewForbidden(revision.StoreGVR.GroupResource(), testStore, errors.New("no"))
			}
			return nil
		}
		h.start()
		h.waitMetric("vmctl_agent_api_errors_total{verb=get}", 3)
		h.waitMetric("vmctl_agent_vms_total{reason=Created}", 1)
	})
}

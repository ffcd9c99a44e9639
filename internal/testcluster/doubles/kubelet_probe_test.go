package doubles

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestReadinessProbeFor(t *testing.T) {
	httpGet := func(path string) corev1.ProbeHandler {
		return corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString("probes")}}
	}
	defaults := readinessProbe{
		URL: "http://127.0.0.1:5000/readyz", Period: time.Second, Timeout: time.Second,
		SuccessThreshold: 1, FailureThreshold: 1,
	}
	tests := []struct {
		name        string
		probe       *corev1.Probe
		asSpecified bool
		want        readinessProbe
	}{
		{name: "no probe: /readyz every second", want: defaults},
		{name: "exec probe: /readyz anyway", probe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}, want: defaults},
		{
			name: "httpGet as scaffolded, period capped",
			probe: &corev1.Probe{
				ProbeHandler: httpGet("/readyz"), PeriodSeconds: 5, TimeoutSeconds: 1,
				SuccessThreshold: 1, FailureThreshold: 3,
			},
			want: readinessProbe{
				URL: "http://127.0.0.1:5000/readyz", Period: time.Second, Timeout: time.Second,
				SuccessThreshold: 1, FailureThreshold: 3,
			},
		},
		{
			name: "httpGet as scaffolded, probed as specified",
			probe: &corev1.Probe{
				ProbeHandler: httpGet("/readyz"), PeriodSeconds: 5, TimeoutSeconds: 1,
				SuccessThreshold: 1, FailureThreshold: 3,
			},
			asSpecified: true,
			want: readinessProbe{
				URL: "http://127.0.0.1:5000/readyz", Period: 5 * time.Second, Timeout: time.Second,
				SuccessThreshold: 1, FailureThreshold: 3,
			},
		},
		{
			name: "every setting honoured",
			probe: &corev1.Probe{
				ProbeHandler: httpGet("/custom"), PeriodSeconds: 1, TimeoutSeconds: 3,
				InitialDelaySeconds: 2, SuccessThreshold: 2, FailureThreshold: 4,
			},
			want: readinessProbe{
				URL: "http://127.0.0.1:5000/custom", Period: time.Second, Timeout: 3 * time.Second,
				InitialDelay: 2 * time.Second, SuccessThreshold: 2, FailureThreshold: 4,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := readinessProbeFor(&corev1.Container{ReadinessProbe: tt.probe}, "127.0.0.1:5000", tt.asSpecified)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("readinessProbeFor() (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReadinessProbeRun drives a probe against a server whose answer the test
// flips, and checks that verdicts change only after the thresholds.
func TestReadinessProbeRun(t *testing.T) {
	var healthy atomic.Bool
	var probes atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		probes.Add(1)
		if r.URL.Path != "/readyz" || !strings.HasPrefix(r.UserAgent(), "kube-probe/") || !healthy.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()

	p := readinessProbe{
		URL: srv.URL + "/readyz", Period: 5 * time.Millisecond, Timeout: time.Second,
		SuccessThreshold: 2, FailureThreshold: 3,
	}
	verdicts := make(chan bool, 10)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.run(ctx, func(ready bool) { verdicts <- ready })
	}()

	next := func(want bool, minProbes int64) {
		t.Helper()
		select {
		case got := <-verdicts:
			if got != want {
				t.Fatalf("verdict %v, want %v", got, want)
			}
			if n := probes.Load(); n < minProbes {
				t.Fatalf("verdict after %d probes, want at least %d", n, minProbes)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no verdict %v within 10s", want)
		}
	}

	healthy.Store(true)
	next(true, 2) // SuccessThreshold 2
	healthy.Store(false)
	before := probes.Load()
	// FailureThreshold 3; one probe may have straddled the flip.
	next(false, before+2)
	healthy.Store(true)
	next(true, 0)

	cancel()
	<-done
	if len(verdicts) != 0 {
		t.Errorf("extra verdicts after the last flip: %d", len(verdicts))
	}
}

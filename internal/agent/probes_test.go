package agent

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestProbeHandler(t *testing.T) {
	type response struct {
		Code int
		Body string
	}
	get := func(h http.Handler, path string) response {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return response{rec.Code, rec.Body.String()}
	}

	r := newReadiness("starting")
	h := probeHandler(r)
	steps := []struct {
		name    string
		set     func()
		healthz response
		readyz  response
	}{
		{"starting", func() {}, response{200, "ok\n"}, response{503, "starting\n"}},
		{"multi-line reason is flattened", func() { r.set(false, "waiting for prototype default/testvm:\n  connection refused") },
			response{200, "ok\n"}, response{503, "waiting for prototype default/testvm: connection refused\n"}},
		{"ready", func() { r.set(true, "") }, response{200, "ok\n"}, response{200, "ok\n"}},
		{"not ready again", func() { r.set(false, "VM default/testvm-vmctl-abc not ready: Stopping") },
			response{200, "ok\n"}, response{503, "VM default/testvm-vmctl-abc not ready: Stopping\n"}},
	}
	for _, s := range steps {
		s.set()
		if diff := cmp.Diff(s.healthz, get(h, "/healthz")); diff != "" {
			t.Errorf("%s: /healthz (-want +got):\n%s", s.name, diff)
		}
		if diff := cmp.Diff(s.readyz, get(h, "/readyz")); diff != "" {
			t.Errorf("%s: /readyz (-want +got):\n%s", s.name, diff)
		}
	}
	if got := get(h, "/metrics").Code; got != http.StatusNotFound {
		t.Errorf("/metrics: code %d, want 404", got)
	}
}

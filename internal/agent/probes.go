package agent

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
)

// readiness is what /readyz reports: ready, or the one-line reason why not.
type readiness struct {
	mu     sync.Mutex
	ready  bool
	reason string
}

func newReadiness(reason string) *readiness {
	return &readiness{reason: reason}
}

func (r *readiness) set(ready bool, reason string) {
	// A reason may quote an API error; /readyz promises one line.
	reason = strings.Join(strings.Fields(reason), " ")
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ready, r.reason = ready, reason
}

func (r *readiness) get() (bool, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ready, r.reason
}

// probeHandler serves /healthz (200 while the process runs) and /readyz (200
// only while the derived VM is ready, else 503 with the reason).
func probeHandler(r *readiness) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		ready, reason := r.get()
		if !ready {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = fmt.Fprintln(w, reason)
			return
		}
		_, _ = fmt.Fprintln(w, "ok")
	})
	return mux
}

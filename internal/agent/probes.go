package agent

import (
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/netutil"
)

// What /readyz says besides an Event reason, when the agent is not ready.
// Each is a word, not a sentence: the probe port answers anyone who can reach
// the Pod, so the details go to the log and the Pod's Events.
const (
	ReadyzStarting     = "Starting"
	ReadyzReplacing    = "ReplacingVM"
	ReadyzVMDeleting   = "VMDeleting"
	ReadyzVMNotReady   = "VMNotReady" // followed by ": " and KubeVirt's printableStatus when known
	ReadyzShuttingDown = "ShuttingDown"
	ReadyzEvacuated    = "Evacuated" // followed by ": " and KubeVirt's printableStatus
)

// readiness is what /readyz reports: ready, or a short reason why not, and
// the words of standing warnings, which hold whether the VM is ready or not.
type readiness struct {
	mu       sync.Mutex
	ready    bool
	reason   string
	warnings []string
	// observe, when set, hears every readiness set, for the metrics.
	observe func(ready bool)
}

func newReadiness(reason string, observe func(ready bool)) *readiness {
	return &readiness{reason: reason, observe: observe}
}

func (r *readiness) set(ready bool, reason string) {
	// A reason may quote an API error; /readyz promises one line.
	reason = strings.Join(strings.Fields(reason), " ")
	r.mu.Lock()
	r.ready, r.reason = ready, reason
	r.mu.Unlock()
	if r.observe != nil {
		r.observe(ready)
	}
}

// warn adds a standing warning, once.
func (r *readiness) warn(word string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !slices.Contains(r.warnings, word) {
		r.warnings = append(r.warnings, word)
	}
}

// body is what /readyz answers: "ok" or the reason, then a line
// "warning: <word>" for each standing warning.
func (r *readiness) body() (bool, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := "ok"
	if !r.ready {
		out = r.reason
	}
	for _, w := range r.warnings {
		out += "\nwarning: " + w
	}
	return r.ready, out
}

// probeHandler serves /healthz (200 while the process runs), /readyz (200
// only while the derived VM is ready, else 503 with the reason; then the
// standing warnings) and, when metrics is not nil, /metrics.
func probeHandler(r *readiness, metrics http.Handler) http.Handler {
	mux := http.NewServeMux()
	if metrics != nil {
		mux.Handle("GET /metrics", metrics)
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		ready, body := r.body()
		if !ready {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_, _ = fmt.Fprintln(w, body)
	})
	return mux
}

// probeLimits bound what the probe server spends on clients. The kubelet
// needs one short request at a time, but anything that can reach the Pod can
// connect; without limits, idle keep-alive connections each hold a goroutine
// and buffers for good, and a few hundred push the agent out of its memory
// limit.
type probeLimits struct {
	// conns is how many connections are served at once; more wait in the
	// kernel's accept queue, costing the agent nothing.
	conns int
	// header, read and write bound one request; idle bounds a keep-alive
	// connection between requests.
	header, read, write, idle time.Duration
}

var defaultProbeLimits = probeLimits{
	conns:  16,
	header: 5 * time.Second, read: 5 * time.Second, write: 5 * time.Second,
	idle: 15 * time.Second,
}

// limit caps how many of ln's connections are open at once.
func (l probeLimits) limit(ln net.Listener) net.Listener {
	return netutil.LimitListener(ln, l.conns)
}

// probeServer serves h within l, on a listener wrapped by l.limit.
func probeServer(h http.Handler, l probeLimits) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: l.header,
		ReadTimeout:       l.read,
		WriteTimeout:      l.write,
		IdleTimeout:       l.idle,
		MaxHeaderBytes:    4 << 10,
	}
}

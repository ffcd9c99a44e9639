package agent

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

	r := newReadiness(ReadyzStarting)
	h := probeHandler(r)
	steps := []struct {
		name    string
		set     func()
		healthz response
		readyz  response
	}{
		{"starting", func() {}, response{200, "ok\n"}, response{503, "Starting\n"}},
		{"ready", func() { r.set(true, "") }, response{200, "ok\n"}, response{200, "ok\n"}},
		{"not ready again", func() { r.set(false, ReadyzVMNotReady+": Stopping") },
			response{200, "ok\n"}, response{503, "VMNotReady: Stopping\n"}},
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

// TestReadyzHidesAPIErrors: anyone who reaches the Pod can ask /readyz, so it
// names the reason and keeps what the API server said for the log and Events.
func TestReadyzHidesAPIErrors(t *testing.T) {
	r := newReadiness(ReadyzStarting)
	rep := reporter{status: r}
	secret := `admission webhook "virtualmachine-validator.kubevirt.io" denied the request: spec.template.spec.volumes[0] references secret db-password`
	rep.fail(context.Background(), createProblem("default/testvm-vmctl-abc", apierrors.NewBadRequest(secret)))
	rec := httptest.NewRecorder()
	probeHandler(r).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	if got, want := rec.Body.String(), ReasonCreateFailed+"\n"; got != want {
		t.Errorf("/readyz body %q, want %q", got, want)
	}
}

// startProbeServer serves the probes as Run does, within l, and returns the
// address and the most connections it ever had open at once.
func startProbeServer(t *testing.T, l probeLimits) (addr string, peak func() int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := probeServer(probeHandler(newReadiness(ReadyzStarting)), l)
	counted := &countingListener{Listener: ln}
	go func() { _ = srv.Serve(l.limit(counted)) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String(), counted.peak
}

// countingListener counts the connections it accepted that are not closed.
type countingListener struct {
	net.Listener
	mu         sync.Mutex
	open, most int
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open++
	l.most = max(l.most, l.open)
	return &countedConn{Conn: c, l: l}, nil
}

func (l *countingListener) peak() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.most
}

type countedConn struct {
	net.Conn
	l    *countingListener
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.open--
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
}

func TestProbeServerClosesIdleConnections(t *testing.T) {
	l := probeLimits{conns: 4, header: 200 * time.Millisecond, read: 200 * time.Millisecond, write: 200 * time.Millisecond, idle: 300 * time.Millisecond}
	addr, _ := startProbeServer(t, l)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	// One request, then the connection idles, kept alive.
	if _, err := fmt.Fprintf(conn, "GET /healthz HTTP/1.1\r\nHost: agent\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	_, err = br.ReadByte()
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("idle keep-alive connection still open after %v; the server must close it after %v", time.Since(start), l.idle)
	}
	if !errors.Is(err, io.EOF) {
		t.Fatalf("read on the idle connection: %v, want EOF", err)
	}
}

func TestProbeServerBoundsConnections(t *testing.T) {
	l := probeLimits{conns: 4, header: 200 * time.Millisecond, read: 200 * time.Millisecond, write: 200 * time.Millisecond, idle: 300 * time.Millisecond}
	addr, peak := startProbeServer(t, l)
	// A crowd of clients that connect and say nothing.
	var conns []net.Conn
	for range 40 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	// The kubelet's probe still gets its answer once the silent ones time out.
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatalf("probe behind 40 silent connections: %v", err)
	}
	_ = resp.Body.Close()
	if got := peak(); got > l.conns {
		t.Errorf("%d connections open at once, want at most %d", got, l.conns)
	}
	if !strings.HasPrefix(resp.Status, "200") {
		t.Errorf("probe status %s", resp.Status)
	}
}

package metricsserver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/cert"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
)

// Options configure Start.
type Options struct {
	// Binary is metrics-server's command; "" means EnsureBinary(ctx, "", Log).
	Binary string
	// Log receives progress lines; nil discards them.
	Log io.Writer
	// Timeout bounds Start once the binary is there. Zero means a minute.
	Timeout time.Duration
	// RealNodes makes metrics-server scrape the cluster's real nodes
	// (package node) and only those, as on a real cluster: each kubelet's
	// /metrics/resource at its InternalIP and port, its serving certificate
	// checked against the cluster's CA, which signed it. Otherwise it
	// scrapes every node, kwok's among them, and checks no certificate:
	// kwok's server, where each kwok node leads, presents one for no name.
	RealNodes bool
}

// Server is metrics-server running against a testcluster.Cluster.
type Server struct {
	// StartupTime is how long Start took, not counting the build.
	StartupTime time.Duration

	kube  kubernetes.Interface
	dyn   dynamic.Interface
	dir   string
	log   io.Writer
	begin time.Time

	mu       sync.Mutex // guards proc, undo and stopped
	proc     *testcluster.Process
	undo     []func(context.Context) error // removes what Start made, in order made
	stopped  bool
	stopOnce sync.Once
	stopErr  error
}

// errStopped is what Start returns when Stop (the cluster's, a Ctrl-C) came first.
var errStopped = errors.New("metrics-server was stopped while starting")

// Resolution is how often metrics-server scrapes the nodes: the least it
// accepts. A CPU figure is the rate between two scrapes, so a Pod's first
// one comes one to two resolutions after the Pod starts.
const Resolution = 10 * time.Second

// tokenLifetime bounds metrics-server's ServiceAccount token; a cluster kept
// up longer would see it expire.
const tokenLifetime = 24 * time.Hour

// Start runs metrics-server as its own ServiceAccount with upstream's RBAC,
// scraping the nodes at kwok's server (see testcluster's kwokConfig) or the
// real nodes' kubelets (Options.RealNodes), and registers it with the aggregator as APIService v1beta1.metrics.k8s.io. It
// returns once the aggregator finds the API available. Stop, or the
// cluster's Stop, removes what Start made and stops the process; so does a
// failed Start.
func Start(ctx context.Context, c *testcluster.Cluster, opts Options) (_ *Server, err error) {
	logw := opts.Log
	if logw == nil {
		logw = io.Discard
	}
	bin := opts.Binary
	if bin == "" {
		if bin, err = EnsureBinary(ctx, "", logw); err != nil {
			return nil, err
		}
	}
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	s := &Server{dir: filepath.Join(c.Dir, Name), log: logw, begin: time.Now()}
	if s.kube, err = kubernetes.NewForConfig(c.RESTConfig); err != nil {
		return nil, fmt.Errorf("create a client: %w", err)
	}
	if s.dyn, err = dynamic.NewForConfig(c.RESTConfig); err != nil {
		return nil, fmt.Errorf("create a client: %w", err)
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return nil, fmt.Errorf("create metrics-server's directory: %w", err)
	}
	c.OnStop(func() { _ = s.Stop() })
	defer func() {
		if err != nil {
			_ = s.Stop()
		}
	}()

	if err := s.installRBAC(ctx); err != nil {
		return nil, err
	}
	kubeconfig, err := s.identity(ctx, c)
	if err != nil {
		return nil, err
	}
	certFile, keyFile, caBundle, err := servingCert(s.dir)
	if err != nil {
		return nil, err
	}
	clientArgs := append([]string{"--kubeconfig=" + kubeconfig, "--authentication-kubeconfig=" + kubeconfig, "--authorization-kubeconfig=" + kubeconfig},
		kubeletArgs(c, opts.RealNodes)...)
	port, err := s.run(ctx, c.Dir, bin, clientArgs, certFile, keyFile, caBundle)
	if err != nil {
		return nil, err
	}
	s.logf("serving at https://127.0.0.1:%d", port)
	if err := s.register(ctx, port, caBundle); err != nil {
		return nil, err
	}
	if err := s.waitAvailable(ctx); err != nil {
		return nil, err
	}
	s.StartupTime = time.Since(s.begin)
	s.logf("APIService %s available", APIServiceName)
	return s, nil
}

// Process is metrics-server's process.
func (s *Server) Process() *testcluster.Process {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc
}

func (s *Server) logf(format string, args ...any) {
	_, _ = fmt.Fprintf(s.log, "metrics-server: %5.1fs "+format+"\n", append([]any{time.Since(s.begin).Seconds()}, args...)...)
}

// kubeletArgs say which nodes metrics-server scrapes and how it trusts them
// (Options.RealNodes). Either way it reaches each node at its InternalIP
// and the port in its status: the kubelet's, or kwok's server.
func kubeletArgs(c *testcluster.Cluster, realNodes bool) []string {
	if !realNodes {
		return []string{"--kubelet-insecure-tls"}
	}
	ca, _ := c.CA()
	return []string{"--kubelet-certificate-authority=" + ca, "--node-selector=" + testcluster.KwokLabel + "!=" + testcluster.KwokLabelValue}
}

// run starts metrics-server on a free loopback port, picking another while
// another process takes the one it picked, and waits until it serves. How
// it reaches the API server and the nodes is in clientArgs.
func (s *Server) run(ctx context.Context, clusterDir, bin string, clientArgs []string, certFile, keyFile string, caBundle []byte) (int, error) {
	for range 3 {
		ports, err := testcluster.FreePorts(1)
		if err != nil {
			return 0, err
		}
		args := append([]string{
			"--secure-port=" + strconv.Itoa(ports[0]),
			"--bind-address=127.0.0.1",
			"--tls-cert-file=" + certFile,
			"--tls-private-key-file=" + keyFile,
			"--kubelet-preferred-address-types=InternalIP",
			"--kubelet-use-node-status-port",
			"--metric-resolution=" + Resolution.String(),
			// It must be under 90% of the resolution; kwok answers at
			// once, a kubelet from the stats it keeps.
			"--kubelet-request-timeout=5s",
		}, clientArgs...)
		s.mu.Lock()
		if s.stopped {
			s.mu.Unlock()
			return 0, errStopped
		}
		p, err := testcluster.StartProcess(Name, clusterDir, bin, args, nil)
		if err != nil {
			s.mu.Unlock()
			return 0, err
		}
		s.proc = p
		s.mu.Unlock()
		err = testcluster.WaitFor(ctx, "metrics-server to serve", []*testcluster.Process{p}, func(ctx context.Context) (bool, error) {
			return serving(ctx, ports[0], caBundle)
		})
		if err == nil {
			return ports[0], nil
		}
		if !p.Exited() || !strings.Contains(err.Error(), "address already in use") {
			return 0, err
		}
	}
	return 0, errors.New("metrics-server found no free port three times")
}

// serving asks metrics-server's /livez, which needs no credentials, over
// TLS for the Service's name, as the aggregator will.
func serving(ctx context.Context, port int, caBundle []byte) (bool, error) {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caBundle)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: serviceHost, MinVersion: tls.VersionTLS12}}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/livez", nil)
	if err != nil {
		return false, err
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return false, err
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("metrics-server /livez: %s %s", resp.Status, body)
	}
	return true, nil
}

// servingCert writes metrics-server's certificate for its Service's name,
// signed by a CA made for it, and returns the files and the CA bundle the
// APIService trusts.
func servingCert(dir string) (certFile, keyFile string, caBundle []byte, err error) {
	certPEM, keyPEM, err := cert.GenerateSelfSignedCertKey(serviceHost, nil, nil)
	if err != nil {
		return "", "", nil, fmt.Errorf("generate metrics-server's certificate: %w", err)
	}
	// The file holds the serving certificate, then its CA.
	certs, err := cert.ParseCertsPEM(certPEM)
	if err != nil || len(certs) < 2 {
		return "", "", nil, fmt.Errorf("parse metrics-server's certificate chain (%d certificates): %w", len(certs), err)
	}
	if caBundle, err = cert.EncodeCertificates(certs[len(certs)-1]); err != nil {
		return "", "", nil, err
	}
	certFile, keyFile = filepath.Join(dir, "serving.crt"), filepath.Join(dir, "serving.key")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		return "", "", nil, fmt.Errorf("write metrics-server's certificate: %w", err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		return "", "", nil, fmt.Errorf("write metrics-server's key: %w", err)
	}
	return certFile, keyFile, caBundle, nil
}

// waitAvailable waits until the aggregator reports the APIService
// Available: it reached metrics-server and read its discovery.
func (s *Server) waitAvailable(ctx context.Context) error {
	s.mu.Lock()
	procs := []*testcluster.Process{s.proc}
	s.mu.Unlock()
	return testcluster.WaitFor(ctx, "APIService "+APIServiceName+" to be Available", procs, func(ctx context.Context) (bool, error) {
		obj, err := s.dyn.Resource(apiServicesResource).Get(ctx, APIServiceName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == "Available" {
				if m["status"] == "True" {
					return true, nil
				}
				return false, fmt.Errorf("%v: %v", m["reason"], m["message"])
			}
		}
		return false, errors.New("no Available condition yet")
	})
}

// Stop removes the APIService first (a group whose server is gone fails
// every client's discovery), then the rest Start made, newest first, stops
// metrics-server and removes its directory. The cluster's Stop calls it
// too; it is safe to call more than once and from several goroutines.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		s.mu.Lock()
		s.stopped = true
		undo, proc := s.undo, s.proc
		s.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var errs []error
		for i := len(undo) - 1; i >= 0; i-- {
			errs = append(errs, undo[i](ctx))
		}
		if proc != nil {
			proc.Stop()
		}
		if err := os.RemoveAll(s.dir); err != nil {
			errs = append(errs, fmt.Errorf("remove metrics-server's directory: %w", err))
		}
		s.stopErr = errors.Join(errs...)
	})
	return s.stopErr
}

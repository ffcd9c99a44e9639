package metricsadapter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
)

// Name is the adapter's command, and the name of its log in the cluster's
// Dir (testcluster.Cluster.LogFile).
const Name = scaffold.AdapterName

// tokenLifetime bounds the adapter's ServiceAccount token; a demo cluster
// kept up longer would see it expire.
const tokenLifetime = 24 * time.Hour

// Options configure Start.
type Options struct {
	// Binary is vmctl-metrics-adapter, as `make build` builds it.
	Binary string
	// Namespace holds scaffold's namespaced objects: the ServiceAccount
	// the adapter runs as, and its Service. It must exist.
	Namespace string
	// Log receives progress lines; nil discards them.
	Log io.Writer
	// Timeout bounds Start. Zero means a minute.
	Timeout time.Duration
}

// Adapter is vmctl-metrics-adapter running against a testcluster.Cluster.
type Adapter struct {
	// StartupTime is how long Start took.
	StartupTime time.Duration

	kube    kubernetes.Interface
	dyn     dynamic.Interface
	mapper  *restmapper.DeferredDiscoveryRESTMapper
	dir     string // its certificate, key and kubeconfig; Stop removes it
	logPath string
	url     string // where it serves, https://127.0.0.1:port
	log     io.Writer
	begin   time.Time

	mu       sync.Mutex // guards proc, applied and stopped
	proc     *testcluster.Process
	applied  []applied // what Start applied, in order
	stopped  bool
	stopOnce sync.Once
	stopErr  error
}

// errStopped is what Start and Restart return once Stop (the cluster's, a
// Ctrl-C) came first.
var errStopped = errors.New("vmctl-metrics-adapter was stopped")

// Start applies scaffold's objects for the adapter in opts.Namespace, runs
// the adapter on a free loopback port as their ServiceAccount, and returns
// once its /readyz passes, as the readiness probe of scaffold's Pod gates
// its Service, and the aggregator finds custom.metrics.k8s.io Available. Stop, or the
// cluster's Stop, removes what Start made and stops the process; so does a
// failed Start.
func Start(ctx context.Context, c *testcluster.Cluster, opts Options) (_ *Adapter, err error) {
	if opts.Binary == "" {
		return nil, errors.New("no vmctl-metrics-adapter binary: run `make build`")
	}
	logw := opts.Log
	if logw == nil {
		logw = io.Discard
	}
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	a := &Adapter{dir: filepath.Join(c.Dir, Name), logPath: c.LogFile(Name), log: logw, begin: time.Now()}
	if a.kube, err = kubernetes.NewForConfig(c.RESTConfig); err != nil {
		return nil, fmt.Errorf("create a client: %w", err)
	}
	if a.dyn, err = dynamic.NewForConfig(c.RESTConfig); err != nil {
		return nil, fmt.Errorf("create a client: %w", err)
	}
	a.mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(a.kube.Discovery()))
	if err := os.MkdirAll(a.dir, 0o700); err != nil {
		return nil, fmt.Errorf("create the adapter's directory: %w", err)
	}
	c.OnStop(func() { _ = a.Stop() })
	defer func() {
		if err != nil {
			_ = a.Stop()
		}
	}()

	ports, err := testcluster.FreePorts(1)
	if err != nil {
		return nil, err
	}
	port := ports[0]
	certFile, keyFile, caBundle, err := servingCert(a.dir, opts.Namespace)
	if err != nil {
		return nil, err
	}
	m := scaffold.MetricsAdapter{Namespace: opts.Namespace, CABundle: caBundle}
	if err := a.register(ctx, m, port); err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(a.dir, Name+".kubeconfig")
	if _, err := c.ServiceAccountKubeconfig(ctx, a.kube, opts.Namespace, scaffold.AdapterName, kubeconfig, tokenLifetime); err != nil {
		return nil, err
	}
	// Later flags win: these put scaffold's Pod on loopback.
	args := append(m.Args(),
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", port),
		"--cert-dir="+a.dir, "--tls-cert-file="+certFile, "--tls-private-key-file="+keyFile,
		"--lister-kubeconfig="+kubeconfig, "--authentication-kubeconfig="+kubeconfig, "--authorization-kubeconfig="+kubeconfig,
		"-v=2")
	if err := a.run(c.Dir, opts.Binary, args); err != nil {
		return nil, err
	}
	a.url = fmt.Sprintf("https://127.0.0.1:%d", port)
	a.logf("serving at %s; log: %s", a.url, a.logPath)
	if err := a.waitReady(ctx, caBundle); err != nil {
		return nil, err
	}
	if err := a.waitAvailable(ctx); err != nil {
		return nil, err
	}
	a.StartupTime = time.Since(a.begin)
	a.logf("custom.metrics.k8s.io available")
	return a, nil
}

func (a *Adapter) logf(format string, args ...any) {
	_, _ = fmt.Fprintf(a.log, "%s: %5.1fs "+format+"\n", append([]any{Name, time.Since(a.begin).Seconds()}, args...)...)
}

// run starts the process unless Stop began.
func (a *Adapter) run(dir, binary string, args []string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stopped {
		return errStopped
	}
	p, err := testcluster.StartProcess(Name, dir, binary, args, nil)
	if err != nil {
		return err
	}
	a.proc = p
	return nil
}

// Process is the adapter's process, the latest since a Restart.
func (a *Adapter) Process() *testcluster.Process {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.proc
}

// URL is where the adapter serves, on loopback, with a certificate of its
// own: its /debug/pprof for one, which the cluster's admin may read.
func (a *Adapter) URL() string { return a.url }

// LogFile is the adapter's log; it outlives Stop.
func (a *Adapter) LogFile() string { return a.logPath }

// Restart stops the adapter and starts it again as it was started, as a
// rollout of scaffold's Deployment replaces its Pod, and returns once the
// new process runs, before it serves.
func (a *Adapter) Restart() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stopped {
		return errStopped
	}
	p, err := a.proc.Restart()
	if err != nil {
		return err
	}
	a.proc = p
	return nil
}

// Stop removes the APIServices first, then the rest Start applied, newest
// first, stops the adapter and removes its directory. The cluster's Stop
// calls it too; it is safe to call more than once and from several
// goroutines.
func (a *Adapter) Stop() error {
	a.stopOnce.Do(func() {
		a.mu.Lock()
		a.stopped = true
		objs, proc := a.applied, a.proc
		a.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		errs := []error{a.remove(ctx, objs)}
		if proc != nil {
			proc.Stop()
		}
		if err := os.RemoveAll(a.dir); err != nil {
			errs = append(errs, fmt.Errorf("remove the adapter's directory: %w", err))
		}
		a.stopErr = errors.Join(errs...)
	})
	return a.stopErr
}

package testcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Options configure Start.
type Options struct {
	// Nodes is how many fake nodes to create, named NodeName(0..Nodes-1).
	// Zero means one.
	Nodes int
	// Dir holds etcd's data, certificates, kubeconfigs and one log per
	// component (<Dir>/<component>.log). Empty means a new temporary directory,
	// which Stop removes; a Dir you pass is left in place.
	Dir string
	// Binaries to run. The zero value means EnsureBinaries(ctx, "", Log).
	Binaries Binaries
	// Log receives progress lines; nil discards them.
	Log io.Writer
	// CRDs are YAML files of CustomResourceDefinitions to install before Start
	// returns, such as the KubeVirt CRDs of package kubevirt's Binaries.
	CRDs []string
	// Timeout bounds startup once the binaries are there. Zero means 2 minutes.
	Timeout time.Duration
	// BindAddress is where the API server listens; empty means 127.0.0.1.
	// The Pods of a real node (package node) reach it through the kubernetes
	// Service at the node's address, so a cluster for one needs 0.0.0.0.
	BindAddress string
}

// Cluster is a running control plane. Its exported fields are set by Start and
// must not be changed.
type Cluster struct {
	// Dir is the working directory (see Options.Dir).
	Dir string
	// Kubeconfig is the path of an admin kubeconfig (group system:masters).
	Kubeconfig string
	// EtcdURL is etcd's client URL (plain HTTP on loopback). Its JSON
	// gateway (/v3/kv/...) lets a test change what the API server stores
	// while the API server is down.
	EtcdURL string
	// RESTConfig is the same admin identity for clients in the test process
	// (QPS 200, burst 400). Copy it with rest.CopyConfig before changing it.
	RESTConfig *rest.Config
	// DoublesConfig is the identity of the stand-ins that run in the test
	// process (package doubles' kubelet), with the admin's rights but a name
	// of its own, vmctl-testcluster-doubles, so that the audit log records
	// their requests apart from the tests' own (see AuditLog).
	DoublesConfig *rest.Config
	// Nodes are the fake nodes' names, all Ready when Start returns.
	Nodes []string
	// Binaries are the commands the cluster runs.
	Binaries Binaries
	// StartupTime is how long Start took, not counting building binaries.
	StartupTime time.Duration

	log       io.Writer
	begin     time.Time
	removeDir bool
	mu        sync.Mutex
	procs     []*Process
	onStop    []func()
	stopping  bool // Stop has begun: start nothing more
	restarts  map[string]*wait.Backoff
	stopOnce  sync.Once
	stopErr   error

	bindAddress string // Options.BindAddress, else 127.0.0.1
}

// The components a Cluster runs; also the names of their logs (see LogFile).
const (
	Etcd                  = "etcd"
	KubeAPIServer         = "kube-apiserver"
	KubeControllerManager = "kube-controller-manager"
	KubeScheduler         = "kube-scheduler"
	Kwok                  = "kwok"
)

// Start runs a control plane on loopback and returns once the API server is
// ready, the CRDs of Options.CRDs are established, the default ServiceAccount
// exists and every node is Ready. On error everything started is stopped again.
func Start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	logw := opts.Log
	if logw == nil {
		logw = io.Discard
	}
	bins := opts.Binaries
	if bins.Etcd == "" {
		if bins, err = EnsureBinaries(ctx, "", logw); err != nil {
			return nil, err
		}
	}
	begin := time.Now()
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	c := &Cluster{Dir: opts.Dir, Binaries: bins, log: logw, begin: begin, bindAddress: opts.BindAddress}
	if c.bindAddress == "" {
		c.bindAddress = "127.0.0.1"
	}
	if c.Dir == "" {
		if c.Dir, err = os.MkdirTemp("", "vmctl-testcluster-"); err != nil {
			return nil, fmt.Errorf("create the cluster directory: %w", err)
		}
		c.removeDir = true
	} else if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("create the cluster directory: %w", err)
	}
	defer func() {
		if err != nil {
			_ = c.Stop()
		}
	}()

	p, err := writePKI(filepath.Join(c.Dir, "pki"))
	if err != nil {
		return nil, err
	}
	if c.EtcdURL, err = c.startEtcd(ctx); err != nil {
		return nil, err
	}
	c.logf("etcd ready at %s", c.EtcdURL)
	if err := c.startAPIServer(ctx, c.EtcdURL, p); err != nil {
		return nil, err
	}
	c.logf("kube-apiserver serving at %s", c.RESTConfig.Host)
	if err := c.writeComponentKubeconfigs(p); err != nil {
		return nil, err
	}

	cs, err := kubernetes.NewForConfig(c.RESTConfig)
	if err != nil {
		return nil, fmt.Errorf("create a client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(c.RESTConfig)
	if err != nil {
		return nil, fmt.Errorf("create a client: %w", err)
	}
	nodes := opts.Nodes
	if nodes <= 0 {
		nodes = 1
	}
	// Validating KubeVirt's large CRDs costs the API server seconds, so they go
	// in while it finishes starting. The garbage collector watches only the
	// resources it found when it started (it rescans every 30s), so the
	// controller manager starts after them.
	startCtx, cancelStart := context.WithCancel(ctx)
	defer cancelStart()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	wg.Go(func() {
		if len(opts.CRDs) > 0 {
			if errs[0] = installCRDs(startCtx, dyn, opts.CRDs); errs[0] != nil {
				cancelStart()
				return
			}
			c.logf("CRDs established (from %s)", strings.Join(opts.CRDs, ", "))
		}
		errs[0] = c.startControllerManager(p)
	})
	if errs[1] = c.waitAPIServerReady(startCtx); errs[1] == nil {
		c.logf("kube-apiserver ready")
		wg.Go(func() { errs[2] = c.startScheduler() })
		wg.Go(func() {
			if errs[3] = c.startKwok(startCtx); errs[3] != nil {
				return
			}
			c.Nodes, errs[3] = createNodes(startCtx, cs, nodes)
			c.logf("%d nodes created", nodes)
		})
	} else {
		cancelStart()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}

	err = WaitFor(ctx, "the nodes to be Ready", c.processes(), func(ctx context.Context) (bool, error) {
		return nodesReady(ctx, cs, c.Nodes)
	})
	if err != nil {
		return nil, err
	}
	c.logf("nodes Ready")
	// Pods need their namespace's default ServiceAccount (ServiceAccount
	// admission) and projected tokens need kube-root-ca.crt.
	err = WaitFor(ctx, "the default ServiceAccount and kube-root-ca.crt", c.processes(), func(ctx context.Context) (bool, error) {
		if _, err := cs.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{}); err != nil {
			return false, err
		}
		if _, err := cs.CoreV1().ConfigMaps(metav1.NamespaceDefault).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{}); err != nil {
			return false, err
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	c.StartupTime = time.Since(begin)
	c.logf("cluster up: %d Ready nodes, kubeconfig %s", len(c.Nodes), c.Kubeconfig)
	return c, nil
}

func (c *Cluster) logf(format string, args ...any) {
	_, _ = fmt.Fprintf(c.log, "testcluster: %5.1fs "+format+"\n", append([]any{time.Since(c.begin).Seconds()}, args...)...)
}

// start runs a component and records it for Stop.
func (c *Cluster) start(name, binary string, args []string, env []string) (*Process, error) {
	if env == nil {
		env = os.Environ()
	}
	p, err := StartProcess(name, c.Dir, binary, args, env)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.stopping {
		c.mu.Unlock()
		p.Stop()
		return nil, fmt.Errorf("start %s: the cluster is stopping", name)
	}
	c.procs = append(c.procs, p)
	c.mu.Unlock()
	if restartsOnExit[name] {
		go c.restartOnExit(p)
	}
	return p, nil
}

func (c *Cluster) processes() []*Process {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*Process(nil), c.procs...)
}

// Pid returns the process id of the component called name while it runs,
// else 0.
func (c *Cluster) Pid(name string) int {
	for _, p := range c.processes() {
		if p.name == name && !p.Exited() {
			return p.cmd.Process.Pid
		}
	}
	return 0
}

// Pids returns the process ids of the components still running.
func (c *Cluster) Pids() []int {
	var pids []int
	for _, p := range c.processes() {
		if !p.Exited() {
			pids = append(pids, p.cmd.Process.Pid)
		}
	}
	return pids
}

// LogFile returns the path of a component's log, e.g. LogFile(KubeAPIServer).
func (c *Cluster) LogFile(component string) string {
	return filepath.Join(c.Dir, component+".log")
}

// OnStop registers f to run at the start of Stop, while the API server still
// serves, last registered first: what a harness adds to the cluster (package
// kubevirt's components and webhooks) goes before the cluster does, also when
// StopOnSignal stops it.
func (c *Cluster) OnStop(f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.onStop = append(c.onStop, f)
}

// Stop runs the OnStop functions, ends every component (SIGTERM, SIGKILL after
// a few seconds), newest first, and removes Dir if Start created it. It is
// safe to call more than once and from several goroutines.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		c.mu.Lock()
		onStop := slices.Clone(c.onStop)
		c.mu.Unlock()

		for i := len(onStop) - 1; i >= 0; i-- {
			onStop[i]()
		}
		c.mu.Lock()
		c.stopping = true
		c.mu.Unlock()
		procs := c.processes()
		for i := len(procs) - 1; i >= 0; i-- {
			procs[i].Stop()
		}
		if c.removeDir {
			if err := os.RemoveAll(c.Dir); err != nil {
				c.stopErr = fmt.Errorf("remove the cluster directory: %w", err)
			}
		}
	})
	return c.stopErr
}

// retryPortConflict runs attempt up to three times while it fails because
// another process took one of the ports it picked.
func (c *Cluster) retryPortConflict(attempt func() (*Process, error)) error {
	var err error
	for range 3 {
		var p *Process
		p, err = attempt()
		if err == nil {
			return nil
		}
		if p == nil || !p.Exited() || !strings.Contains(Tail(p.logPath, 30), "address already in use") {
			return err
		}
		c.forget(p)
	}
	return err
}

// forget drops an exited process, so later waits do not take its exit for
// a failure.
func (c *Cluster) forget(p *Process) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.procs = slices.DeleteFunc(c.procs, func(q *Process) bool { return q == p })
}

func (c *Cluster) startEtcd(ctx context.Context) (string, error) {
	var clientURL string
	err := c.retryPortConflict(func() (*Process, error) {
		ports, err := FreePorts(2)
		if err != nil {
			return nil, err
		}
		clientURL = "http://127.0.0.1:" + strconv.Itoa(ports[0])
		peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
		dataDir := filepath.Join(c.Dir, "etcd")
		_ = os.RemoveAll(dataDir) // from a failed attempt
		p, err := c.start(Etcd, c.Binaries.Etcd, []string{
			"--name=default",
			"--data-dir=" + dataDir,
			"--listen-client-urls=" + clientURL,
			"--advertise-client-urls=" + clientURL,
			"--listen-peer-urls=" + peerURL,
			"--initial-advertise-peer-urls=" + peerURL,
			"--initial-cluster=default=" + peerURL,
			"--unsafe-no-fsync=true",
			"--log-level=warn",
		}, nil)
		if err != nil {
			return nil, err
		}
		return p, WaitFor(ctx, "etcd", []*Process{p}, func(ctx context.Context) (bool, error) {
			return etcdHealthy(ctx, clientURL)
		})
	})
	return clientURL, err
}

func (c *Cluster) startAPIServer(ctx context.Context, etcdURL string, p *pki) error {
	c.Kubeconfig = filepath.Join(c.Dir, "admin.kubeconfig")
	auditPolicy, err := c.writeAuditPolicy()
	if err != nil {
		return err
	}
	return c.retryPortConflict(func() (*Process, error) {
		ports, err := FreePorts(1)
		if err != nil {
			return nil, err
		}
		server := "https://127.0.0.1:" + strconv.Itoa(ports[0])
		if c.RESTConfig, err = writeKubeconfig(c.Kubeconfig, server, p); err != nil {
			return nil, err
		}
		proc, err := c.start(KubeAPIServer, c.Binaries.KubeAPIServer, []string{
			"--etcd-servers=" + etcdURL,
			"--bind-address=" + c.bindAddress,
			"--advertise-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(ports[0]),
			"--cert-dir=" + filepath.Join(c.Dir, "pki"),
			"--tls-cert-file=" + p.ServingCert,
			"--tls-private-key-file=" + p.ServingKey,
			"--client-ca-file=" + p.CACert,
			// The front-proxy CA and headers, published in
			// kube-system/extension-apiserver-authentication for extension
			// API servers; KubeVirt's virt-api will not start without them.
			"--requestheader-client-ca-file=" + p.FrontProxyCACert,
			"--requestheader-allowed-names=" + frontProxyClientName,
			"--requestheader-username-headers=X-Remote-User",
			"--requestheader-group-headers=X-Remote-Group",
			"--requestheader-extra-headers-prefix=X-Remote-Extra-",
			"--proxy-client-cert-file=" + p.ProxyClientCert,
			"--proxy-client-key-file=" + p.ProxyClientKey,
			"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
			"--service-account-key-file=" + p.SAPub,
			"--service-account-signing-key-file=" + p.SAKey,
			"--service-cluster-ip-range=10.96.0.0/16",
			"--authorization-mode=Node,RBAC",
			"--kubelet-client-certificate=" + p.KubeletClientCert,
			"--kubelet-client-key=" + p.KubeletClientKey,
			// A real node's hostname does not resolve; its InternalIP does.
			"--kubelet-preferred-address-types=InternalIP,Hostname",
			"--allow-privileged=true",
			// 127.0.0.1 is not a valid endpoint for the kubernetes Service.
			"--endpoint-reconciler-type=none",
			// /debug/pprof, for the benchmarks' profiles (the admin's only).
			"--profiling=true",
			"--audit-policy-file=" + auditPolicy,
			"--audit-log-path=" + c.AuditLog(),
			"--audit-log-format=json",
			"--audit-log-maxsize=0",
			// Skips creating the default FlowSchemas at start; tests send little traffic.
			"--enable-priority-and-fairness=false",
		}, nil)
		if err != nil {
			return nil, err
		}
		rc, err := rest.RESTClientFor(restConfigForRaw(c.RESTConfig))
		if err != nil {
			return proc, fmt.Errorf("create a client: %w", err)
		}
		// Serving is enough here: a port conflict shows before that.
		return proc, WaitFor(ctx, "kube-apiserver to serve", []*Process{proc}, func(ctx context.Context) (bool, error) {
			body, err := rc.Get().AbsPath("/livez/ping").Timeout(2 * time.Second).DoRaw(ctx)
			if err != nil {
				return false, fmt.Errorf("%w: %s", err, body)
			}
			return true, nil
		})
	})
}

// waitAPIServerReady waits for /readyz: post-start hooks done (RBAC bootstrap
// roles, system namespaces) and informers synced.
func (c *Cluster) waitAPIServerReady(ctx context.Context) error {
	rc, err := rest.RESTClientFor(restConfigForRaw(c.RESTConfig))
	if err != nil {
		return fmt.Errorf("create a client: %w", err)
	}
	return WaitFor(ctx, "kube-apiserver /readyz", c.processes(), func(ctx context.Context) (bool, error) {
		body, err := rc.Get().AbsPath("/readyz").Timeout(2 * time.Second).DoRaw(ctx)
		if err != nil {
			return false, fmt.Errorf("%w: %s", err, body)
		}
		return true, nil
	})
}

func (c *Cluster) startControllerManager(p *pki) error {
	_, err := c.start(KubeControllerManager, c.Binaries.KubeControllerManager, []string{
		"--kubeconfig=" + c.componentKubeconfig(KubeControllerManager),
		"--controllers=" + strings.Join([]string{
			"deployment-controller",
			"replicaset-controller",
			"daemonset-controller",
			"statefulset-controller",
			"endpointslice-controller",
			"job-controller",
			// Gives PodDisruptionBudgets their status; without it every eviction
			// a PDB covers is refused.
			"disruption-controller",
			// Gives ResourceQuotas their status, which their admission
			// needs to count anything.
			"resourcequota-controller",
			"garbage-collector-controller",
			// Deletes the Pods of a deleted Node (after 40 s), as in a real
			// cluster; without it they would run on, bound to no node.
			"pod-garbage-collector-controller",
			"namespace-controller",
			"serviceaccount-controller",
			"serviceaccount-token-controller",
			"root-ca-certificate-publisher-controller",
			// Adds the rules of ClusterRoles labelled aggregate-to-view,
			// -edit or -admin to those roles, as scaffold's for the revision
			// stores are.
			"clusterrole-aggregation-controller",
			// Bind claims to volumes (the scheduler binds those of
			// WaitForFirstConsumer classes, which this completes), and keep
			// a claim, and its volume, while a Pod uses it: a StatefulSet's
			// per-replica claims stay Pending without the first, and one
			// the StatefulSet deletes on scale-in would go from under its
			// VM's launcher Pod without the others.
			"persistentvolume-binder-controller",
			"persistentvolumeclaim-protection-controller",
			"persistentvolume-protection-controller",
			// Scales by the metrics APIs (package metricsserver serves
			// metrics.k8s.io), as its ServiceAccount
			// horizontal-pod-autoscaler, which the API server's bootstrap
			// policy grants what it reads (system:controller:horizontal-pod-autoscaler).
			"horizontal-pod-autoscaler-controller",
		}, ","),
		// A test waits seconds, not the default 15 s, for each decision,
		// and counts a Pod's CPU once the Pod is Ready rather than after
		// the default 5 minutes' initialization (kwok's Pods start Ready).
		"--horizontal-pod-autoscaler-sync-period=2s",
		"--horizontal-pod-autoscaler-cpu-initialization-period=1s",
		"--use-service-account-credentials=true",
		"--service-account-private-key-file=" + p.SAKey,
		"--root-ca-file=" + p.CACert,
		"--leader-elect=false",
		"--secure-port=0",
	}, nil)
	return err
}

func (c *Cluster) startScheduler() error {
	_, err := c.start(KubeScheduler, c.Binaries.KubeScheduler, []string{
		"--kubeconfig=" + c.componentKubeconfig(KubeScheduler),
		"--leader-elect=false",
		"--secure-port=0",
	}, nil)
	return err
}

func (c *Cluster) startKwok(ctx context.Context) error {
	cfg, err := kwokConfig(c.Binaries)
	if err != nil {
		return err
	}
	cfgPath := filepath.Join(c.Dir, "kwok.yaml")
	if err := os.WriteFile(cfgPath, cfg, 0o644); err != nil {
		return fmt.Errorf("write the kwok config: %w", err)
	}
	// kwok also reads ~/.kwok/kwok.yaml; a private HOME keeps a developer's out.
	home := filepath.Join(c.Dir, "kwok-home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		return fmt.Errorf("create kwok's home: %w", err)
	}
	return c.retryPortConflict(func() (*Process, error) {
		ports, err := FreePorts(1)
		if err != nil {
			return nil, err
		}
		port := strconv.Itoa(ports[0])
		p, err := c.start(Kwok, c.Binaries.Kwok, []string{
			"--config=" + cfgPath,
			"--kubeconfig=" + c.componentKubeconfig(Kwok),
			"--manage-all-nodes=false",
			"--manage-nodes-with-annotation-selector=" + NodeAnnotation + "=fake",
			"--cidr=10.244.0.0/16",
			// Each node's InternalIP and kubelet port lead to kwok's
			// server, which answers HTTP and HTTPS (a certificate of its
			// own) on one port: metrics-server scrapes the nodes there.
			"--node-ip=127.0.0.1",
			"--node-port=" + port,
			"--server-address=127.0.0.1:" + port,
		}, append(os.Environ(), "HOME="+home))
		if err != nil {
			return nil, err
		}
		return p, WaitFor(ctx, "kwok's server", []*Process{p}, func(ctx context.Context) (bool, error) {
			return kwokHealthy(ctx, "http://127.0.0.1:"+port+"/healthz")
		})
	})
}

package kubevirt

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
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/util/cert"
	"k8s.io/utils/ptr"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
)

// Namespace is where KubeVirt's components run and keep their objects, as in
// a default install; virt-controller takes its Lease here.
const Namespace = "kubevirt"

// The components Start runs; also the names of their logs (Cluster.LogFile).
const (
	VirtAPI        = "virt-api"
	VirtController = "virt-controller"
)

// The ServiceAccounts KubeVirt's RBAC defines. virt-api accepts VMI status
// changes only from KubeVirt's own ServiceAccounts, so each component (and
// the virt-handler stand-in) runs as its own.
const (
	apiServiceAccount        = "kubevirt-apiserver"
	controllerServiceAccount = "kubevirt-controller"
	handlerServiceAccount    = "kubevirt-handler"
)

// The users KubeVirt's components authenticate as, their ServiceAccounts'
// as the API server's audit log names them; HandlerUser is the virt-handler
// stand-in's, with HandlerConfig.
const (
	APIUser        = "system:serviceaccount:" + Namespace + ":" + apiServiceAccount
	ControllerUser = "system:serviceaccount:" + Namespace + ":" + controllerServiceAccount
	HandlerUser    = "system:serviceaccount:" + Namespace + ":" + handlerServiceAccount
)

// tokenLifetime bounds the ServiceAccount tokens the components use; a
// cluster kept up longer (vmctl-cluster up) would see them expire.
const tokenLifetime = 7 * 24 * time.Hour

// Options configure Start.
type Options struct {
	// Binaries to run. The zero value means EnsureBinaries(ctx, "", Log).
	Binaries Binaries
	// LauncherImage is virt-controller's --launcher-image. Empty means
	// Binaries.LauncherImage: kwok's nodes never pull it; a real node would
	// need one it can run.
	LauncherImage string
	// Emulation gives the KubeVirt CR developerConfiguration's
	// useEmulation, as on a node whose /dev/kvm cannot run guests: launchers
	// run qemu under TCG and ask for no KVM device.
	Emulation bool
	// Log receives progress lines; nil discards them.
	Log io.Writer
	// Timeout bounds startup once the binaries are there. Zero means 2 minutes.
	Timeout time.Duration
}

// KubeVirt is KubeVirt's virt-api and virt-controller running against a
// testcluster.Cluster, with virt-api's webhooks registered in front of every
// KubeVirt write. Its exported fields are set by Start and must not be changed.
type KubeVirt struct {
	// HandlerConfig authenticates as KubeVirt's kubevirt-handler
	// ServiceAccount, with the RBAC KubeVirt gives virt-handler: the identity
	// for a virt-handler stand-in (see package doubles).
	HandlerConfig *rest.Config
	// APIURL is virt-api's loopback address, where the webhooks point.
	APIURL string
	// Binaries are what runs.
	Binaries Binaries
	// StartupTime is how long Start took, not counting building binaries.
	StartupTime time.Duration

	cluster *testcluster.Cluster
	admin   kubernetes.Interface
	// What Upgrade starts the next release's components with: each
	// component's kubeconfig, by ServiceAccount, virt-api's certificate
	// and key and the CA bundle that trusts them, and virt-controller's
	// --launcher-image when Options gave one.
	kubeconfigs           map[string]string
	certFile, keyFile     string
	caBundle              []byte
	launcherImageOverride string
	dyn                   dynamic.Interface
	log                   io.Writer
	begin                 time.Time
	mu                    sync.Mutex // guards webhooks, apis, procs and stopped
	webhooks              webhooks
	apis                  apiServices
	procs                 []*supervised
	stopped               bool
	stopOnce              sync.Once
	stopErr               error
}

// Start runs virt-api, registers its webhooks (KubeVirt's own configurations,
// pointed at virt-api on 127.0.0.1 and trusted through a CA of its own), and
// runs virt-controller, each as its own KubeVirt ServiceAccount. It returns
// once virt-api's validating webhook answers through the API server and
// virt-controller holds its leader Lease. The cluster must have KubeVirt's
// CRDs (testcluster.Options.CRDs = Binaries.CRDs).
//
// c.Stop stops KubeVirt first (see Stop); so does a failed Start.
func Start(ctx context.Context, c *testcluster.Cluster, opts Options) (_ *KubeVirt, err error) {
	logw := opts.Log
	if logw == nil {
		logw = io.Discard
	}
	bins := opts.Binaries
	if bins.VirtAPI == "" {
		if bins, err = EnsureBinaries(ctx, "", logw); err != nil {
			return nil, err
		}
	}
	launcherImage := opts.LauncherImage
	if launcherImage == "" {
		launcherImage = bins.LauncherImage()
	}
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	k := &KubeVirt{Binaries: bins, cluster: c, log: logw, begin: time.Now(), launcherImageOverride: opts.LauncherImage}
	if k.admin, err = kubernetes.NewForConfig(c.RESTConfig); err != nil {
		return nil, fmt.Errorf("create a client: %w", err)
	}
	if k.dyn, err = dynamic.NewForConfig(c.RESTConfig); err != nil {
		return nil, fmt.Errorf("create a client: %w", err)
	}
	dir := filepath.Join(c.Dir, "kubevirt")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create KubeVirt's directory: %w", err)
	}
	c.OnStop(func() { _ = k.Stop() })
	defer func() {
		if err != nil {
			_ = k.Stop()
		}
	}()

	if err := k.installRBAC(ctx); err != nil {
		return nil, err
	}
	if err := k.createKubeVirtCR(ctx, opts.Emulation); err != nil {
		return nil, err
	}
	kubeconfigs := map[string]string{}
	for _, sa := range []string{apiServiceAccount, controllerServiceAccount, handlerServiceAccount} {
		cfg, path, err := k.identity(ctx, dir, sa)
		if err != nil {
			return nil, err
		}
		kubeconfigs[sa] = path
		if sa == handlerServiceAccount {
			k.HandlerConfig = cfg
		}
	}
	ports, err := testcluster.FreePorts(2)
	if err != nil {
		return nil, err
	}

	// virt-api first: its webhooks fail closed, so they go in once it serves.
	certFile, keyFile, caBundle, err := servingCert(dir)
	if err != nil {
		return nil, err
	}
	k.kubeconfigs, k.certFile, k.keyFile, k.caBundle = kubeconfigs, certFile, keyFile, caBundle
	k.APIURL = "https://127.0.0.1:" + strconv.Itoa(ports[0])
	api, err := k.supervise(VirtAPI, bins.VirtAPI,
		"--kubeconfig="+kubeconfigs[apiServiceAccount],
		"--listen=127.0.0.1", "--port="+strconv.Itoa(ports[0]),
		"--tls-cert-file="+certFile, "--tls-key-file="+keyFile)
	if err != nil {
		return nil, err
	}
	if err := waitAPIHealthy(ctx, api, k.APIURL, caBundle); err != nil {
		return nil, err
	}
	k.logf("virt-api serving at %s", k.APIURL)

	hooks, err := loadWebhooks(bins.Webhooks, k.APIURL, caBundle)
	if err != nil {
		return nil, err
	}
	if err := k.installWebhooks(ctx, hooks); err != nil {
		return nil, err
	}
	if err := waitWebhookServes(ctx, api, k.admin); err != nil {
		return nil, err
	}
	k.logf("virt-api's webhooks registered and answering")
	if err := k.installAPIServices(ctx, ports[0], caBundle); err != nil {
		return nil, err
	}
	k.logf("virt-api's subresource API registered and available")

	ctrl, err := k.supervise(VirtController, bins.VirtController,
		"--kubeconfig="+kubeconfigs[controllerServiceAccount],
		"--listen=127.0.0.1", "--port="+strconv.Itoa(ports[1]),
		"--launcher-image="+launcherImage)
	if err != nil {
		return nil, err
	}
	if err := waitLeader(ctx, ctrl, k.admin); err != nil {
		return nil, err
	}
	k.StartupTime = time.Since(k.begin)
	k.logf("virt-controller leading; KubeVirt %s up (launcher image %s)", bins.Version, launcherImage)
	return k, nil
}

func (k *KubeVirt) logf(format string, args ...any) {
	_, _ = fmt.Fprintf(k.log, "kubevirt: %5.1fs "+format+"\n", append([]any{time.Since(k.begin).Seconds()}, args...)...)
}

// installRBAC creates namespace kubevirt and what KubeVirt's RBAC holds.
func (k *KubeVirt) installRBAC(ctx context.Context) error {
	_, err := k.admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", Namespace, err)
	}
	if err := k.applyRBAC(ctx, k.Binaries.RBAC, createIfMissing); err != nil {
		return fmt.Errorf("install KubeVirt's RBAC: %w", err)
	}
	return nil
}

// applyRBAC hands each object of the RBAC manifest at path to apply, with
// the resource discovery maps it to.
func (k *KubeVirt) applyRBAC(ctx context.Context, path string,
	apply func(context.Context, dynamic.ResourceInterface, *unstructured.Unstructured) error) error {
	objs, err := readManifest(path)
	if err != nil {
		return err
	}
	disco, err := discovery.NewDiscoveryClientForConfig(k.cluster.RESTConfig)
	if err != nil {
		return fmt.Errorf("create a client: %w", err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))
	return applyAll(ctx, k.dyn, mapper, objs, apply)
}

// CRName is the KubeVirt CR Start creates in Namespace, the one whose
// spec.configuration virt-api and virt-controller run with: a test may
// change its configuration as a user would.
const CRName = "kubevirt"

// createKubeVirtCR creates the KubeVirt CR that virt-operator's users write,
// configuring nothing but, with emulation, useEmulation, and gives it the
// status virt-operator would. The components read their configuration from
// it; no virt-operator runs to act on the rest.
func (k *KubeVirt) createKubeVirtCR(ctx context.Context, emulation bool) error {
	spec := `{}`
	if emulation {
		spec = `{"configuration":{"developerConfiguration":{"useEmulation":true}}}`
	}
	cr := []byte(`{"apiVersion":"kubevirt.io/v1","kind":"KubeVirt","metadata":{"name":"` + CRName + `","namespace":"` + Namespace + `"},` +
		`"spec":` + spec + `}`)
	err := k.admin.CoreV1().RESTClient().Post().AbsPath("/apis/kubevirt.io/v1/namespaces", Namespace, "kubevirts").
		SetHeader("Content-Type", "application/json").Body(cr).Do(ctx).Error()
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create the KubeVirt CR: %w", err)
	}
	return k.markDeployed(ctx, k.Binaries.Version)
}

// markDeployed gives the KubeVirt CR the status virt-operator gives it once
// it deployed release version. The components read a KubeVirt CR only once
// virt-operator gave it a phase (virtconfig's GetConfigFromKubeVirtCR), and
// take the VMs' default architecture from its status; virt-operator
// records the release it deployed as observedKubeVirtVersion, which vmctl
// reads.
func (k *KubeVirt) markDeployed(ctx context.Context, version string) error {
	status := fmt.Sprintf(`{"status":{"phase":"Deployed","defaultArchitecture":%q,"observedKubeVirtVersion":%q}}`, runtime.GOARCH, version)
	err := k.admin.CoreV1().RESTClient().Patch(types.MergePatchType).AbsPath("/apis/kubevirt.io/v1/namespaces", Namespace, "kubevirts", CRName, "status").
		Body([]byte(status)).Do(ctx).Error()
	if err != nil {
		return fmt.Errorf("mark the KubeVirt CR deployed: %w", err)
	}
	return nil
}

// Config is the virt-handler stand-in's identity on no node
// (doubles.HandlerIdentity): HandlerConfig.
func (k *KubeVirt) Config() *rest.Config { return k.HandlerConfig }

// ConfigOn is virt-handler's identity on node (doubles.HandlerIdentity): a
// token of the kubevirt-handler ServiceAccount bound to the Node, whose
// name the API server then passes on (authentication.kubernetes.io/node-name),
// as it does for virt-handler's Pod on that node.
func (k *KubeVirt) ConfigOn(ctx context.Context, node string) (*rest.Config, error) {
	n, err := k.admin.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("bind virt-handler's token to node %s: %w", node, err)
	}
	tr, err := k.admin.CoreV1().ServiceAccounts(Namespace).CreateToken(ctx, handlerServiceAccount, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{
			ExpirationSeconds: ptr.To(int64(tokenLifetime.Seconds())),
			BoundObjectRef:    &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Node", Name: node, UID: n.UID},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("issue virt-handler's token on node %s: %w", node, err)
	}
	rc := rest.AnonymousClientConfig(k.cluster.RESTConfig)
	rc.BearerToken = tr.Status.Token
	return rc, nil
}

// identity issues a token of ServiceAccount sa and writes a kubeconfig with
// it, returning both the config and the kubeconfig's path.
func (k *KubeVirt) identity(ctx context.Context, dir, sa string) (*rest.Config, string, error) {
	path := filepath.Join(dir, sa+".kubeconfig")
	rc, err := k.cluster.ServiceAccountKubeconfig(ctx, k.admin, Namespace, sa, path, tokenLifetime)
	return rc, path, err
}

// servingCert writes virt-api's certificate for 127.0.0.1, signed by a CA made
// for it, and returns the files and the CA bundle the API server trusts.
func servingCert(dir string) (certFile, keyFile string, caBundle []byte, err error) {
	// The certificate file holds the serving certificate and then its CA.
	// The aggregator checks the name of virt-api's Service (see
	// installAPIServices), the webhooks the address.
	certPEM, keyPEM, err := cert.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.IPv4(127, 0, 0, 1)}, []string{apiServiceName + "." + Namespace + ".svc"})
	if err != nil {
		return "", "", nil, fmt.Errorf("generate virt-api's certificate: %w", err)
	}
	certs, err := cert.ParseCertsPEM(certPEM)
	if err != nil {
		return "", "", nil, fmt.Errorf("parse virt-api's certificate chain: %w", err)
	}
	if len(certs) < 2 {
		return "", "", nil, fmt.Errorf("virt-api's certificate chain has %d certificates, want the certificate and its CA", len(certs))
	}
	caBundle, err = cert.EncodeCertificates(certs[len(certs)-1])
	if err != nil {
		return "", "", nil, err
	}
	certFile, keyFile = filepath.Join(dir, "virt-api.crt"), filepath.Join(dir, "virt-api.key")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		return "", "", nil, fmt.Errorf("write virt-api's certificate: %w", err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		return "", "", nil, fmt.Errorf("write virt-api's key: %w", err)
	}
	return certFile, keyFile, caBundle, nil
}

// TempDir is the component's TMPDIR, under the cluster's Dir.
func (k *KubeVirt) TempDir(component string) string {
	return filepath.Join(k.cluster.Dir, "tmp", component)
}

// errStopped is what Start returns when Stop (a Ctrl-C) came first.
var errStopped = errors.New("KubeVirt was stopped while starting")

// supervise starts a component unless Stop was called: the cluster's Stop can
// run while Start is still going. Its TMPDIR is TempDir(name), inside the
// cluster's directory: every run of virt-api makes a "certsdir" in TMPDIR
// and never removes it.
func (k *KubeVirt) supervise(name, binary string, args ...string) (*supervised, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stopped {
		return nil, errStopped
	}
	tmp := k.TempDir(name)
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return nil, err
	}
	s, err := supervise(name, binary, k.cluster.LogFile(name), args, append(os.Environ(), "TMPDIR="+tmp), k.logf)
	if err != nil {
		return nil, err
	}
	k.procs = append(k.procs, s)
	return s, nil
}

// installAPIServices registers virt-api's subresource API unless Stop was
// called; Stop removes it (see installAPIServices).
func (k *KubeVirt) installAPIServices(ctx context.Context, port int, caBundle []byte) error {
	k.mu.Lock()
	if k.stopped {
		k.mu.Unlock()
		return errStopped
	}
	apis, err := installAPIServices(ctx, k.admin, k.dyn, k.Binaries.APIServices, port, caBundle)
	k.apis = apis
	k.mu.Unlock()
	if err != nil {
		return err
	}
	return apis.waitAvailable(ctx, k.dyn)
}

// installWebhooks registers hooks unless Stop was called; Stop removes them.
func (k *KubeVirt) installWebhooks(ctx context.Context, hooks webhooks) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stopped {
		return errStopped
	}
	k.webhooks = hooks
	return hooks.install(ctx, k.admin)
}

// waitAPIHealthy waits for virt-api's health endpoint, the one KubeVirt's
// readiness probe asks.
func waitAPIHealthy(ctx context.Context, api *supervised, apiURL string, caBundle []byte) error {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caBundle)
	client := &http.Client{
		Timeout:   2 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}},
	}
	defer client.CloseIdleConnections()
	return waitFor(ctx, "virt-api to be healthy", api, func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, apiURL+"/apis/subresources.kubevirt.io/v1/healthz", nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("virt-api healthz: %s %s", resp.Status, body)
		}
		return nil
	})
}

// waitWebhookServes waits until the API server sends VirtualMachines through
// virt-api's validating webhook: a dry run of a VM that KubeVirt rejects (a
// disk without a volume) must come back denied by it.
func waitWebhookServes(ctx context.Context, api *supervised, cs kubernetes.Interface) error {
	vm := []byte(`{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachine",` +
		`"metadata":{"name":"webhook-probe"},` +
		`"spec":{"runStrategy":"Halted","template":{"spec":{"domain":{"devices":{"disks":[{"name":"no-such-volume"}]}}}}}}`)
	return waitFor(ctx, "virt-api's validating webhook to answer", api, func(ctx context.Context) error {
		err := cs.CoreV1().RESTClient().Post().AbsPath("/apis/kubevirt.io/v1/namespaces", Namespace, "virtualmachines").
			Param("dryRun", metav1.DryRunAll).SetHeader("Content-Type", "application/json").Body(vm).Do(ctx).Error()
		switch {
		case err == nil:
			return errors.New("a VM KubeVirt rejects was accepted")
		case strings.Contains(err.Error(), `admission webhook "virtualmachine-validator.kubevirt.io" denied`):
			return nil
		}
		return fmt.Errorf("a VM KubeVirt rejects was answered with: %w", err)
	})
}

// waitLeader waits until virt-controller holds its Lease, after which it
// starts its controllers.
func waitLeader(ctx context.Context, ctrl *supervised, cs kubernetes.Interface) error {
	return waitFor(ctx, "virt-controller to take its Lease", ctrl, func(ctx context.Context) error {
		lease, err := cs.CoordinationV1().Leases(Namespace).Get(ctx, VirtController, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if ptr.Deref(lease.Spec.HolderIdentity, "") == "" {
			return errors.New("the Lease has no holder yet")
		}
		return nil
	})
}

// waitFor polls check until it passes, proc exits, or ctx ends.
func waitFor(ctx context.Context, what string, proc *supervised, check func(context.Context) error) error {
	var last error
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if err := proc.exitedOnce(); err != nil {
			return false, err
		}
		last = check(ctx)
		return last == nil, nil
	})
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil && last != nil:
		return fmt.Errorf("wait for %s: %w (last error: %w); %s's log %s ends with:\n%s", what, err, last, proc.name, proc.logPath, testcluster.Tail(proc.logPath, 20))
	default:
		return fmt.Errorf("wait for %s: %w", what, err)
	}
}

// Pids returns the process ids of KubeVirt's components now running, by
// component (VirtAPI, VirtController).
func (k *KubeVirt) Pids() map[string]int {
	k.mu.Lock()
	defer k.mu.Unlock()
	pids := map[string]int{}
	for _, p := range k.procs {
		if pid := p.pid(); pid != 0 {
			pids[p.name] = pid
		}
	}
	return pids
}

// Stop removes virt-api's webhooks (they fail closed, so nothing KubeVirt
// owns could be written without virt-api), then stops virt-controller and
// virt-api. The cluster's Stop calls it first; it is safe to call more than
// once and from several goroutines.
func (k *KubeVirt) Stop() error {
	k.stopOnce.Do(func() {
		k.mu.Lock()
		k.stopped = true
		hooks, apis, procs := k.webhooks, k.apis, k.procs
		k.mu.Unlock()
		var errs []error
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if hooks.validating != nil {
			errs = append(errs, hooks.remove(ctx, k.admin))
		}
		if len(apis.names) > 0 {
			errs = append(errs, apis.remove(ctx, k.dyn))
		}
		cancel()
		for i := len(procs) - 1; i >= 0; i-- {
			procs[i].stop()
		}
		k.stopErr = errors.Join(errs...)
	})
	return k.stopErr
}

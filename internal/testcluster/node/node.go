package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
)

// Options configure Start.
type Options struct {
	// Name is the Node's name; empty means "real-node".
	Name string
	// Images are image tarballs to import before the node is Ready, e.g. the
	// agent image `make image` wrote. ImportImage adds more later.
	Images []string
	// Labels go on the Node (kubelet --node-labels).
	Labels map[string]string
	// ExtendedResources are added to the Node's capacity once it registers,
	// as a device plugin would advertise them (e.g. devices.kubevirt.io/kvm).
	ExtendedResources corev1.ResourceList
	// OwnPIDNamespace runs containerd, and so its containers, in a PID
	// namespace of their own, where containerd is PID 1. A hostPID Pod then
	// reaches the node's mount namespace and root through /proc/1, as
	// KubeVirt's virt-handler does; the machine's own PID 1 here is the
	// sandbox's, which refuses every process access to its namespaces.
	OwnPIDNamespace bool
	// Binaries are the node's runtime; the zero value means EnsureBinaries.
	Binaries Binaries
	// Log receives progress lines; nil discards them.
	Log io.Writer
	// Timeout bounds startup once the binaries are built; zero means 2 minutes.
	Timeout time.Duration
}

// Node is a running real node. Its exported fields are set by Start.
type Node struct {
	// Name is the Node's name.
	Name string
	// Dir holds the node's configs, logs (<Dir>/<daemon>.log), containerd's
	// root and the kubelet's root: <cluster Dir>/node.
	Dir string

	cluster *testcluster.Cluster
	client  kubernetes.Interface
	bins    Binaries
	log     io.Writer
	begin   time.Time

	mu       sync.Mutex
	daemons  []*testcluster.Process
	state    *hostState
	unlock   func()
	stopOnce sync.Once
	stopErr  error

	ownPIDNamespace bool

	clientOnce sync.Once
	clientErr  error
}

// The daemons a Node runs; also their logs' names (see LogFile).
const (
	Containerd = "containerd"
	Kubelet    = "kubelet"
	KubeProxy  = "kube-proxy"
)

// Start runs a real node for cluster c, which must have been started with
// BindAddress "0.0.0.0" (its Pods reach the API server at the node's address).
// It returns once the Node is Ready and untainted. It waits while another
// real node runs on the machine. On error, everything it made is removed
// again.
func Start(ctx context.Context, c *testcluster.Cluster, opts Options) (_ *Node, err error) {
	logw := opts.Log
	if logw == nil {
		logw = io.Discard
	}
	if b := c.BindAddress(); b != "0.0.0.0" && b != Address {
		return nil, fmt.Errorf("the API server listens on %s, where the node's Pods cannot reach it; start the cluster with BindAddress 0.0.0.0", b)
	}
	bins := opts.Binaries
	if bins.Containerd == "" {
		if bins, err = EnsureBinaries(ctx, "", logw); err != nil {
			return nil, err
		}
	}
	if bins.Kubelet == "" || bins.KubeProxy == "" {
		return nil, errors.New("the node's binaries have no kubelet or kube-proxy; build them with node.EnsureBinaries")
	}
	client, err := kubernetes.NewForConfig(c.RESTConfig)
	if err != nil {
		return nil, err
	}
	n := &Node{Name: opts.Name, cluster: c, client: client, bins: bins, log: logw, begin: time.Now(), ownPIDNamespace: opts.OwnPIDNamespace}
	if n.Name == "" {
		n.Name = "real-node"
	}
	if err := os.MkdirAll(filepath.Dir(LockFile), 0o755); err != nil {
		return nil, err
	}
	if n.unlock, err = flock(ctx, LockFile, func() { n.logf("waiting for another real node on this machine to stop (%s)", LockFile) }); err != nil {
		return nil, err
	}
	if old, err := readState(); err != nil {
		n.unlock()
		return nil, err
	} else if old != nil {
		n.logf("sweeping what a killed node left on the machine (%s)", StateFile)
		if err := cleanup(old); err != nil {
			n.unlock()
			return nil, fmt.Errorf("sweep the node a killed process left: %w", err)
		}
	}
	if err := preflight(); err != nil {
		n.unlock()
		return nil, err
	}

	timeout := opts.Timeout
	if timeout == 0 {
		timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	n.Dir = filepath.Join(c.Dir, "node")
	if n.state, err = recordState(n.Dir, bins.Shim); err != nil {
		n.unlock()
		return nil, err
	}
	defer func() {
		if err != nil {
			if stopErr := n.Stop(); stopErr != nil {
				err = fmt.Errorf("%w; and removing the node: %w", err, stopErr)
			}
		}
	}()
	if err := os.MkdirAll(n.Dir, 0o755); err != nil {
		return nil, err
	}
	if err := shareMounts(n.Dir); err != nil {
		return nil, err
	}
	if err := createCgroupRoot(); err != nil {
		return nil, err
	}
	if err := n.setupNetwork(); err != nil {
		return nil, err
	}
	if err := n.startContainerd(ctx); err != nil {
		return nil, err
	}
	n.logf("containerd ready")
	for _, img := range append([]string{bins.PauseImage}, opts.Images...) {
		if err := n.ImportImage(ctx, img); err != nil {
			return nil, err
		}
	}
	if err := n.routeKubernetesService(ctx); err != nil {
		return nil, err
	}
	ca, err := loadCA(c.CA())
	if err != nil {
		return nil, err
	}
	// The kubelet first: kube-proxy waits for its Node to learn its address.
	if err := n.startKubelet(ca, opts.Labels); err != nil {
		return nil, err
	}
	if err := n.startProxy(ctx, ca); err != nil {
		return nil, err
	}
	n.logf("kube-proxy synced")
	if err := n.waitReady(ctx, opts.ExtendedResources); err != nil {
		return nil, err
	}
	n.logf("node %s Ready at %s", n.Name, Address)
	return n, nil
}

func (n *Node) logf(format string, args ...any) {
	_, _ = fmt.Fprintf(n.log, "node: %5.1fs "+format+"\n", append([]any{time.Since(n.begin).Seconds()}, args...)...)
}

// daemonStopGrace is how long a daemon gets after SIGTERM before SIGKILL.
const daemonStopGrace = 10 * time.Second

// start runs one of the node's daemons and records it for Stop.
func (n *Node) start(name, binary string, args ...string) (*testcluster.Process, error) {
	d, err := testcluster.StartProcess(name, n.Dir, binary, args, os.Environ())
	if err != nil {
		return nil, err
	}
	d.StopGrace = daemonStopGrace
	n.mu.Lock()
	n.daemons = append(n.daemons, d)
	n.mu.Unlock()
	return d, nil
}

func (n *Node) running() []*testcluster.Process {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.daemons)
}

// LogFile is the path of a daemon's log, e.g. LogFile(Kubelet).
func (n *Node) LogFile(daemon string) string { return filepath.Join(n.Dir, daemon+".log") }

// routeKubernetesService points the kubernetes Service at the API server on
// the node's address, where the API server listens (BindAddress 0.0.0.0):
// the cluster runs no endpoint reconciler, as its advertised address is
// loopback, which is no valid endpoint. Pods then reach it through
// kube-proxy as in any cluster, KUBERNETES_SERVICE_HOST being the Service's
// ClusterIP.
func (n *Node) routeKubernetesService(ctx context.Context) error {
	port, err := n.cluster.APIServerPort()
	if err != nil {
		return err
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name:      "kubernetes",
			Namespace: metav1.NamespaceDefault,
			Labels: map[string]string{
				discoveryv1.LabelServiceName: "kubernetes",
				discoveryv1.LabelManagedBy:   "vmctl-testcluster-node",
			},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{Address}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(int32(port)), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	eps := n.client.DiscoveryV1().EndpointSlices(metav1.NamespaceDefault)
	_, err = eps.Create(ctx, slice, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := eps.Get(ctx, slice.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			slice.ResourceVersion = cur.ResourceVersion
			_, err = eps.Update(ctx, slice, metav1.UpdateOptions{})
			return err
		})
	}
	if err != nil {
		return fmt.Errorf("point the kubernetes Service at %s:%d: %w", Address, port, err)
	}
	return nil
}

// waitReady waits for the kubelet to register the Node Ready, then removes the
// not-ready taint (no node lifecycle controller runs to do it) and adds the
// extended resources.
func (n *Node) waitReady(ctx context.Context, extended corev1.ResourceList) error {
	err := testcluster.WaitFor(ctx, "node "+n.Name+" to be Ready", n.running(), func(ctx context.Context) (bool, error) {
		node, err := n.client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if !testcluster.NodeReady(node) {
			return false, fmt.Errorf("node %s not Ready yet", n.Name)
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := n.client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		kept := slices.DeleteFunc(slices.Clone(node.Spec.Taints), func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeNotReady })
		if len(kept) == len(node.Spec.Taints) {
			return nil
		}
		node.Spec.Taints = kept
		_, err = n.client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("untaint node %s: %w", n.Name, err)
	}
	if len(extended) == 0 {
		return nil
	}
	capacity := map[corev1.ResourceName]resource.Quantity(extended)
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"capacity": capacity}})
	if err != nil {
		return err
	}
	if _, err := n.client.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		return fmt.Errorf("add extended resources to node %s: %w", n.Name, err)
	}
	return nil
}

// Stop stops the kubelet, kube-proxy and containerd, then removes everything
// the node made on the machine (see the package doc), and the Node object if
// the API server still answers. It is safe to call more than once.
func (n *Node) Stop() error {
	n.stopOnce.Do(func() {
		n.drain()
		ds := n.running()
		for i := len(ds) - 1; i >= 0; i-- {
			ds[i].Stop()
		}
		var errs []error
		if n.state != nil {
			errs = append(errs, cleanup(n.state))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := n.client.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			n.logf("delete node %s: %v (ignored: the cluster may be gone)", n.Name, err)
		}
		if n.unlock != nil {
			n.unlock()
		}
		n.stopErr = errors.Join(errs...)
	})
	return n.stopErr
}

// drain has the kubelet stop the node's Pods, while it runs and the API
// server answers, so the runtime tears down each sandbox properly (the CNI
// plugin releases its address and cache). Stop's sweep handles what is left.
func (n *Node) drain() {
	kubelet := slices.IndexFunc(n.running(), func(d *testcluster.Process) bool { return d.Name() == Kubelet && !d.Exited() })
	if kubelet < 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pods := n.client.CoreV1().Pods(metav1.NamespaceAll)
	onNode := metav1.ListOptions{FieldSelector: "spec.nodeName=" + n.Name}
	list, err := pods.List(ctx, onNode)
	if err != nil {
		return
	}
	for _, p := range list.Items {
		_ = n.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(1))})
	}
	start := time.Now()
	var left string
	err = testcluster.WaitFor(ctx, "the node's Pods to stop", nil, func(ctx context.Context) (bool, error) {
		list, err := pods.List(ctx, onNode)
		if err != nil {
			return false, err
		}
		if len(list.Items) > 0 {
			left = fmt.Sprintf("%d Pods", len(list.Items))
			return false, nil
		}
		out, err := n.ctr(ctx, "tasks", "ls", "-q")
		left = "tasks: " + strings.Join(strings.Fields(out), " ")
		return err == nil && strings.TrimSpace(out) == "", err
	})
	if err != nil {
		n.logf("drain: %v (left: %s); sweeping instead", err, left)
		return
	}
	n.logf("drained %d Pods in %s", len(list.Items), time.Since(start).Round(time.Millisecond))
}

// StopOnSignal stops the node, then calls then (e.g. the cluster's Stop),
// when the process gets SIGINT or SIGTERM, and lets the signal end the
// process. Use it instead of the cluster's own StopOnSignal, which would not
// wait for the node. Call the returned function to stop listening.
func (n *Node) StopOnSignal(then func()) (cancel func()) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	var once sync.Once
	go func() {
		select {
		case sig := <-sigs:
			_ = n.Stop()
			if then != nil {
				then()
			}
			signal.Stop(sigs)
			if s, ok := sig.(syscall.Signal); ok {
				_ = syscall.Kill(os.Getpid(), s)
			}
		case <-done:
			signal.Stop(sigs)
		}
	}()
	return func() { once.Do(func() { close(done) }) }
}

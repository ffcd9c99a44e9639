package doubles

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
)

// KubeletOptions configure the kubelet double.
type KubeletOptions struct {
	// Binary is the kubectl-vmctl binary; each agent Pod runs `Binary agent
	// ARGS`, unless AgentBinary is set.
	Binary string
	// AgentBinary is vmctl-agent, the agent image's entrypoint: each agent
	// Pod whose container names no command runs `AgentBinary ARGS`, as the
	// image runs it, and so starts as lightly as in a cluster.
	AgentBinary string
	// Dir holds one directory per Pod, <Dir>/<namespace>/<pod>, with the
	// agent's kubeconfig and its log (see LogPath).
	Dir string
	// Env is added to every agent's environment, after a minimal base (PATH,
	// HOME, HOSTNAME) and before the container's own env, e.g. GOCOVERDIR.
	Env []string
	// Args are added to every agent's command line, e.g. --profile=cpu,
	// whose --profile-output, relative, lands in the Pod's directory.
	Args []string
	// Log receives the double's own progress; nil discards it.
	Log *slog.Logger
}

// Kubelet is a test double of the kubelet for vmctl agent Pods on kwok's
// simulated nodes, which kwok leaves alone. A real kubelet runs here too
// (package node), but only one per machine: the double is what lets the
// end-to-end tests run agents on many nodes at once (a DaemonSet on every
// node, Deployments scaled up). What only a real kubelet shows (the image,
// the securityContext, probes, logs, exec, restarts, deletion within the grace
// period) is tested on the real node in internal/e2e/realnode.
//
// For each agent Pod bound to a node it runs the real agent binary as a local
// process with a token of the Pod's ServiceAccount bound to the Pod, reports
// the Pod's status (Running, readiness from the agent's /readyz, restarts) and
// handles deletion the kubelet's way: SIGTERM, wait for the process to exit
// (SIGKILL after the grace period), then remove the Pod. Only the Pod's first
// container runs; its emptyDir volumes are directories the arguments point
// to (emptyDirs); probes other than readiness, other volumes and security
// contexts are ignored. Resources are reported in the status as running,
// and a resize is actuated at once.
type Kubelet struct {
	cfg    *rest.Config
	opts   KubeletOptions
	log    *slog.Logger
	client kubernetes.Interface
	pods   cache.Indexer
	queue  workqueue.TypedInterface[string]
	wg     sync.WaitGroup

	mu      sync.Mutex
	workers map[string]*podWorker // by namespace/name
	nextIP  uint32

	// probeAsSpecified: see ProbeAsSpecified.
	probeAsSpecified atomic.Bool
}

// ProbeAsSpecified makes the double probe the agents it starts from now on
// at their readiness probe's own period, as a kubelet does, instead of at
// most a second apart (maxProbePeriod, which keeps tests quick). A
// benchmark that counts the agents' CPU turns it on: a thousand agents
// probed every second, where a kubelet would probe every 5 s as scaffolded,
// spend most of theirs answering the double.
func (k *Kubelet) ProbeAsSpecified(on bool) { k.probeAsSpecified.Store(on) }

// NewKubelet returns a kubelet double that talks to the API server as cfg (an
// identity with the admin's rights, such as testcluster.Cluster's
// DoublesConfig) and gives agents the same server URL and CA.
func NewKubelet(cfg *rest.Config, opts KubeletOptions) *Kubelet {
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Kubelet{
		cfg:     rest.CopyConfig(cfg),
		opts:    opts,
		log:     log.With("component", "kubelet-double"),
		workers: map[string]*podWorker{},
	}
}

// agentSelector selects vmctl agent Pods.
func agentSelector() string {
	return labels.Set{testcluster.AgentNameLabel: testcluster.AgentNameValue, testcluster.AgentComponentLabel: testcluster.AgentComponentValue}.String()
}

// Run runs agent Pods until ctx is done, then kills every agent (SIGKILL,
// leaving their Pods and VMs behind, as a node that dies would) and returns
// nil once they have exited. It returns an error only when it cannot start.
func (k *Kubelet) Run(ctx context.Context) error {
	// Absolute, since each agent runs in its Pod's directory.
	binary, err := filepath.Abs(k.opts.Binary)
	if err == nil {
		_, err = os.Stat(binary)
	}
	if err != nil {
		return fmt.Errorf("kubelet double: agent binary: %w; build kubectl-vmctl and set KubeletOptions.Binary", err)
	}
	k.opts.Binary = binary
	if k.opts.AgentBinary != "" {
		if k.opts.AgentBinary, err = filepath.Abs(k.opts.AgentBinary); err == nil {
			_, err = os.Stat(k.opts.AgentBinary)
		}
		if err != nil {
			return fmt.Errorf("kubelet double: vmctl-agent: %w; build ./cmd/vmctl-agent", err)
		}
	}
	if err := os.MkdirAll(k.opts.Dir, 0o755); err != nil {
		return fmt.Errorf("kubelet double: %w", err)
	}
	client, err := kubernetes.NewForConfig(k.cfg)
	if err != nil {
		return fmt.Errorf("kubelet double: build a client: %w", err)
	}
	k.client = client
	k.queue = workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[string]{Name: "kubelet-double"})

	factory := informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = agentSelector() }))
	informer := factory.Core().V1().Pods().Informer()
	k.pods = informer.GetIndexer()
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			k.queue.Add(key)
		}
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: enqueue,
	}); err != nil {
		return fmt.Errorf("kubelet double: register an event handler: %w", err)
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return nil
	}
	k.log.Info("started", "binary", k.opts.Binary, "dir", k.opts.Dir)

	go func() {
		<-ctx.Done()
		k.queue.ShutDown()
	}()
	for {
		key, shutdown := k.queue.Get()
		if shutdown {
			break
		}
		k.sync(ctx, key)
		k.queue.Done(key)
	}
	// Every worker's context derives from ctx: they kill their agents now.
	k.wg.Wait()
	return nil
}

// sync brings the worker for the Pod at key in line with the Pod.
func (k *Kubelet) sync(ctx context.Context, key string) {
	var pod *corev1.Pod
	if obj, exists, err := k.pods.GetByKey(key); err == nil && exists {
		pod = obj.(*corev1.Pod)
	}
	k.mu.Lock()
	w := k.workers[key]
	k.mu.Unlock()

	if w != nil && (pod == nil || pod.UID != w.uid) {
		// The Pod went (or was replaced by one of the same name) without the
		// double removing it: a force delete. The agent gets no signal.
		if w.running() {
			k.log.Info("Pod gone, killing its agent", "pod", key)
		}
		w.kill()
		<-w.done
		k.mu.Lock()
		delete(k.workers, key)
		k.mu.Unlock()
		w = nil
	}
	if pod == nil || pod.Spec.NodeName == "" || len(pod.Spec.Containers) == 0 {
		return
	}
	if w == nil {
		w = k.newWorker(ctx, pod)
		k.mu.Lock()
		k.workers[key] = w
		k.mu.Unlock()
		k.wg.Go(func() {
			w.run()
			// Let sync see the end, e.g. to start a replacement Pod.
			k.queue.Add(key)
		})
	}
	w.resize(pod.Spec.Containers[0].Resources)
	if pod.DeletionTimestamp != nil {
		w.terminate(gracePeriod(pod))
	}
}

// gracePeriod is how long a deleted Pod's agent gets between SIGTERM and
// SIGKILL.
func gracePeriod(pod *corev1.Pod) time.Duration {
	switch {
	case pod.DeletionGracePeriodSeconds != nil:
		return time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
	case pod.Spec.TerminationGracePeriodSeconds != nil:
		return time.Duration(*pod.Spec.TerminationGracePeriodSeconds) * time.Second
	default:
		return corev1.DefaultTerminationGracePeriodSeconds * time.Second
	}
}

// allocatePodIP hands out addresses from 10.250.0.0/16. They route nowhere;
// a loopback address would be truthful but EndpointSlices reject it.
func (k *Kubelet) allocatePodIP() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.nextIP++
	n := k.nextIP % (1 << 16)
	return netip.AddrFrom4([4]byte{10, 250, byte(n >> 8), byte(n)}).String()
}

func (k *Kubelet) worker(namespace, pod string) (*podWorker, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	w, ok := k.workers[namespace+"/"+pod]
	if !ok {
		return nil, fmt.Errorf("the kubelet double runs no Pod %s/%s", namespace, pod)
	}
	return w, nil
}

// Signal sends sig to the agent process of a Pod. After SIGKILL the agent
// restarts as a crashed container would, and restartCount goes up.
func (k *Kubelet) Signal(namespace, pod string, sig os.Signal) error {
	w, err := k.worker(namespace, pod)
	if err != nil {
		return err
	}
	return w.signal(sig)
}

// LogPath is the file that collects the stdout and stderr of a Pod's agent,
// across restarts.
func (k *Kubelet) LogPath(namespace, pod string) string {
	return filepath.Join(k.podDir(namespace, pod), "agent.log")
}

// Restarts returns how often a Pod's agent was restarted; the Pod's
// status.containerStatuses[0].restartCount says the same. It is 0 for a Pod
// the double does not run.
func (k *Kubelet) Restarts(namespace, pod string) int {
	w, err := k.worker(namespace, pod)
	if err != nil {
		return 0
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return int(w.state.Restarts)
}

func (k *Kubelet) podDir(namespace, pod string) string {
	return filepath.Join(k.opts.Dir, namespace, pod)
}

// Package kube is how vmctl reads and writes the API server: the
// clientsets, built once from kubectl's flags (Factory); paged lists,
// trimmed to what the commands read (Slim); narrowed watches (Follower);
// and lookups by name (VMFinder).
package kube

import (
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"
	"kubevirt.io/client-go/kubevirt"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/version"
)

// Clients are the typed clientsets vmctl reads and writes through, and
// the one request they do not serve: KubeVirt's expansion of a VM's
// instancetype and preference.
type Clients struct {
	Kube     kubernetes.Interface
	KubeVirt kubevirt.Interface
	// Dynamic serves vmctl's own custom resource, the revision stores
	// (package revision).
	Dynamic dynamic.Interface
	// Expand is ExpandSpec of KubeVirt.
	Expand Expander
	// Metrics reads metrics-server's resource metrics (metrics.k8s.io);
	// nil in the agent's Clients, which never reads them.
	Metrics metricsclient.Interface
}

// Factory gives a command what it needs of the cluster, in the manner of
// kubectl's cmdutil.Factory: kubectl's flags, bound once to the root
// command (ToRawKubeConfigLoader for the namespace, -n and --context), and
// the clientsets made from them.
type Factory interface {
	KubeconfigLoader
	// Clients returns the clientsets, made on the first call.
	Clients() (Clients, error)
}

// KubeconfigLoader is the kubeconfig as kubectl's flags amend it: the part
// of cli-runtime's RESTClientGetter vmctl uses, so that both cli-runtime's
// ConfigFlags (kubectl-vmctl) and ConfigFlags (vmctl-agent, which links no
// cli-runtime) serve.
type KubeconfigLoader interface {
	// ToRawKubeConfigLoader returns the loader; call it once the flags are
	// parsed.
	ToRawKubeConfigLoader() clientcmd.ClientConfig
}

// NewFactory returns the operator commands' Factory over flags. Its
// clients introduce themselves as kubectl-vmctl/<version>, may send 50
// requests a second (burst 100) where flags set no rate, and read core
// types as protobuf.
func NewFactory(flags KubeconfigLoader) Factory {
	return &factory{KubeconfigLoader: flags, agent: false}
}

// NewAgentFactory returns the agent's Factory over flags. Its clients
// introduce themselves as kubectl-vmctl-agent/<version> and otherwise keep
// client-go's defaults (5 requests a second, burst 10): one agent sends a
// few requests a minute, and a fleet of them shares the API server.
func NewAgentFactory(flags KubeconfigLoader) Factory {
	return &factory{KubeconfigLoader: flags, agent: true}
}

type factory struct {
	KubeconfigLoader
	agent bool

	once    sync.Once
	clients Clients
	err     error
}

func (f *factory) Clients() (Clients, error) {
	f.once.Do(func() { f.clients, f.err = f.newClients() })
	return f.clients, f.err
}

func (f *factory) newClients() (Clients, error) {
	// What cli-runtime's ToRESTConfig returns, without its WrapConfigFn,
	// which vmctl does not set.
	rc, err := f.ToRawKubeConfigLoader().ClientConfig()
	if err != nil {
		hint := "pass --kubeconfig or --context"
		if f.agent {
			hint = "run in a Pod with a service account or pass --kubeconfig"
		}
		return Clients{}, fmt.Errorf("load the client configuration: %w; %s", err, hint)
	}
	rc = rest.CopyConfig(rc)
	kubeRC := rc
	if f.agent {
		rc.UserAgent = "kubectl-vmctl-agent/" + version.Get().Version
	} else {
		rc.UserAgent = "kubectl-vmctl/" + version.Get().Version
		// client-go's default of 5 requests/s made gc of 1,000 orphans take
		// 3m25s in the benchmark; LISTs are paged, so only deletes need this.
		if rc.QPS == 0 {
			rc.QPS, rc.Burst = 50, 100
		}
		// Pods in protobuf, as Kubernetes' own controllers read them: fewer
		// bytes to send and decode than JSON (on the loopback bench, where
		// the API server shares the CPU, no gain was measurable). KubeVirt's
		// types are custom resources, which the API server serves as JSON.
		kubeRC = rest.CopyConfig(rc)
		kubeRC.ContentType = runtime.ContentTypeProtobuf
		kubeRC.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	}
	kc, err := kubernetes.NewForConfig(kubeRC)
	if err != nil {
		return Clients{}, fmt.Errorf("make the Kubernetes client: %w", err)
	}
	virt, err := kubevirt.NewForConfig(rc)
	if err != nil {
		return Clients{}, fmt.Errorf("make the KubeVirt client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return Clients{}, fmt.Errorf("make the dynamic client: %w", err)
	}
	c := Clients{Kube: kc, KubeVirt: virt, Dynamic: dyn, Expand: ExpandSpec(virt)}
	if !f.agent {
		if c.Metrics, err = metricsclient.NewForConfig(rc); err != nil {
			return Clients{}, fmt.Errorf("make the metrics client: %w", err)
		}
	}
	return c, nil
}

//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"testing"

	"k8s.io/client-go/kubernetes"
	"kubevirt.io/client-go/kubevirt"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
	kvharness "github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/kubevirt"
)

// kubeVirtEnv is a cluster running one KubeVirt release: for the tests that
// check vmctl against KubeVirt's own rules (the launcher Pod's requests, the
// schema and webhooks) on every release the harness builds.
type kubeVirtEnv struct {
	version string
	// kubeconfig is the cluster's admin kubeconfig.
	kubeconfig string
	kube       kubernetes.Interface
	virt       kubevirt.Interface
	nodes      []string
}

// eachKubeVirt runs f in a subtest per release of kvharness.Releases: on the
// shared cluster for the release it runs (kvharness.Newest unless
// VMCTL_KUBEVIRT says otherwise), and on a cluster of its own for each other
// release, with that release's virt-api and virt-controller, started on
// first use and stopped when TestMain ends. Those clusters run no kubelet or
// virt-handler: what these tests read, virt-api's answers and the launcher
// Pods virt-controller makes, needs neither.
//
// The test is parallel, so it runs once the package's other tests are done:
// by then `make e2e`'s background build (vmctl-prebuild releases) has built
// or is building the other releases, instead of this test waiting for it
// early in the run; with cold caches it may build one itself.
func eachKubeVirt(t *testing.T, f func(t *testing.T, k kubeVirtEnv)) {
	t.Helper()
	t.Parallel()
	for _, r := range kvharness.Releases {
		v, err := r.Version()
		if err != nil {
			t.Fatal(err)
		}
		if v == e.kv.Binaries.Version {
			shared := kubeVirtEnv{version: v, kubeconfig: e.cluster.Kubeconfig, kube: e.kube, virt: e.virt, nodes: e.cluster.Nodes}
			t.Run("KubeVirt "+v, func(t *testing.T) { f(t, shared) })
			continue
		}
		k, err := releaseCluster(r)
		if err != nil {
			t.Fatalf("start a cluster of KubeVirt %s: %v", v, err)
		}
		t.Run("KubeVirt "+v, func(t *testing.T) { f(t, k) })
	}
}

// kubeVirtConfig keeps the tests of the parallel tail that change a
// cluster's KubeVirt CR (configure) apart from those that make VMs or
// reservations there and count on its defaults: the former hold it for
// writing, the latter for reading. A launcher Pod made while
// TestLauncherReservationMatchesKubeVirt disables ImageVolume asks for
// more than one made with the defaults.
var kubeVirtConfig sync.RWMutex

// releaseClusters are the clusters of the releases the shared cluster does
// not run, each started once.
var releaseClusters = struct {
	sync.Mutex
	started map[kvharness.Release]*releaseStart
	stops   []func()
}{started: map[kvharness.Release]*releaseStart{}}

type releaseStart struct {
	once sync.Once
	env  kubeVirtEnv
	err  error
}

// releaseCluster is the cluster of release r, started on first use.
func releaseCluster(r kvharness.Release) (kubeVirtEnv, error) {
	releaseClusters.Lock()
	s := releaseClusters.started[r]
	if s == nil {
		s = &releaseStart{}
		releaseClusters.started[r] = s
	}
	releaseClusters.Unlock()
	s.once.Do(func() { s.env, s.err = startRelease(r) })
	return s.env, s.err
}

// stopReleaseClusters stops the clusters releaseCluster started.
func stopReleaseClusters() {
	releaseClusters.Lock()
	defer releaseClusters.Unlock()
	for _, stop := range releaseClusters.stops {
		stop()
	}
	releaseClusters.stops = nil
}

func startRelease(r kvharness.Release) (kubeVirtEnv, error) {
	ctx := context.Background()
	bins, err := kvharness.EnsureRelease(ctx, r, "", os.Stderr)
	if err != nil {
		return kubeVirtEnv{}, err
	}
	c, err := testcluster.Start(ctx, testcluster.Options{Nodes: 1, Binaries: e.cluster.Binaries, CRDs: []string{bins.CRDs}, Log: io.Discard})
	if err != nil {
		return kubeVirtEnv{}, err
	}
	unwatch := c.StopOnSignal()
	releaseClusters.Lock()
	releaseClusters.stops = append(releaseClusters.stops, func() {
		unwatch()
		if err := c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop the cluster of KubeVirt "+bins.Version+":", err)
		}
	})
	releaseClusters.Unlock()
	kv, err := kvharness.Start(ctx, c, kvharness.Options{Binaries: bins, Log: io.Discard})
	if err != nil {
		return kubeVirtEnv{}, err
	}
	fmt.Fprintf(os.Stderr, "e2e: a control plane with KubeVirt %s up in %s, for the tests of every release\n",
		bins.Version, (c.StartupTime + kv.StartupTime).Round(1e6))
	k := kubeVirtEnv{version: bins.Version, kubeconfig: c.Kubeconfig, nodes: c.Nodes}
	if k.kube, err = kubernetes.NewForConfig(c.RESTConfig); err != nil {
		return kubeVirtEnv{}, err
	}
	if k.virt, err = kubevirt.NewForConfig(c.RESTConfig); err != nil {
		return kubeVirtEnv{}, err
	}
	return k, nil
}

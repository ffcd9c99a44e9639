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
	kube    kubernetes.Interface
	virt    kubevirt.Interface
	nodes   []string
}

// eachKubeVirt runs f in a subtest per release: on the shared cluster, which
// runs kvharness.Newest unless VMCTL_KUBEVIRT says otherwise, and on a cluster of kvharness.Oldest's virt-api and
// virt-controller, started on first use and stopped when TestMain ends. That
// cluster runs no kubelet or virt-handler: what these tests read, virt-api's
// answers and the launcher Pods virt-controller makes, needs neither.
func eachKubeVirt(t *testing.T, f func(t *testing.T, k kubeVirtEnv)) {
	t.Helper()
	newest := kubeVirtEnv{version: e.kv.Binaries.Version, kube: e.kube, virt: e.virt, nodes: e.cluster.Nodes}
	t.Run("KubeVirt "+newest.version, func(t *testing.T) { f(t, newest) })
	v, err := kvharness.Oldest.Version()
	if err != nil {
		t.Fatal(err)
	}
	if v == newest.version {
		return // VMCTL_KUBEVIRT made the shared cluster the oldest
	}
	oldest, err := oldestKubeVirt()
	if err != nil {
		t.Fatalf("start a cluster of the oldest KubeVirt the harness builds: %v", err)
	}
	t.Run("KubeVirt "+oldest.version, func(t *testing.T) { f(t, oldest) })
}

var (
	oldestOnce sync.Once
	oldestEnv  kubeVirtEnv
	oldestErr  error
	// stopOldest stops the oldest release's cluster, if it started.
	stopOldest = func() {}
)

func oldestKubeVirt() (kubeVirtEnv, error) {
	oldestOnce.Do(func() { oldestEnv, oldestErr = startOldest() })
	return oldestEnv, oldestErr
}

func startOldest() (kubeVirtEnv, error) {
	ctx := context.Background()
	bins, err := kvharness.EnsureRelease(ctx, kvharness.Oldest, "", os.Stderr)
	if err != nil {
		return kubeVirtEnv{}, err
	}
	c, err := testcluster.Start(ctx, testcluster.Options{Nodes: 1, Binaries: e.cluster.Binaries, CRDs: []string{bins.CRDs}, Log: io.Discard})
	if err != nil {
		return kubeVirtEnv{}, err
	}
	unwatch := c.StopOnSignal()
	stopOldest = func() {
		unwatch()
		if err := c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop the cluster of KubeVirt "+bins.Version+":", err)
		}
	}
	kv, err := kvharness.Start(ctx, c, kvharness.Options{Binaries: bins, Log: io.Discard})
	if err != nil {
		return kubeVirtEnv{}, err
	}
	fmt.Fprintf(os.Stderr, "e2e: a second control plane with KubeVirt %s up in %s, for the tests of every release\n",
		bins.Version, (c.StartupTime + kv.StartupTime).Round(1e6))
	k := kubeVirtEnv{version: bins.Version, nodes: c.Nodes}
	if k.kube, err = kubernetes.NewForConfig(c.RESTConfig); err != nil {
		return kubeVirtEnv{}, err
	}
	if k.virt, err = kubevirt.NewForConfig(c.RESTConfig); err != nil {
		return kubeVirtEnv{}, err
	}
	return k, nil
}

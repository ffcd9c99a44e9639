//go:build e2e

package realguest

import (
	"os"
	"testing"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/ci"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/metricsadapter"
)

// startMetricsAdapter runs $VMCTL_ADAPTER_BINARY on the machine, in
// namespace ns, until t ends, as scaffold's Deployment runs it in a
// cluster (package metricsadapter), and returns once custom.metrics.k8s.io
// is Available.
func startMetricsAdapter(t *testing.T, ns string) {
	t.Helper()
	binary := os.Getenv("VMCTL_ADAPTER_BINARY")
	if binary == "" {
		ci.Skip(t, "needs VMCTL_ADAPTER_BINARY: run `make e2e`, which builds vmctl-metrics-adapter")
	}
	a, err := metricsadapter.Start(t.Context(), e.cluster, metricsadapter.Options{Binary: binary, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := a.Stop(); err != nil {
			t.Errorf("stop the adapter: %v", err)
		}
		if t.Failed() {
			t.Logf("%s's log ends with:\n%s", scaffold.AdapterName, testcluster.Tail(a.LogFile(), 30))
		}
	})
}

package kubevirt

import (
	"os"
	"testing"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
)

// ForTest starts KubeVirt on c for t, building it first if needed (progress
// goes to stderr), and stops it in t.Cleanup, before the cluster stops when c
// came from testcluster.ForTest. When the test failed, the cleanup logs the
// tail of virt-api's and virt-controller's logs.
func ForTest(t testing.TB, c *testcluster.Cluster, opts Options) *KubeVirt {
	t.Helper()
	if opts.Binaries.VirtAPI == "" {
		b, err := EnsureBinaries(t.Context(), "", os.Stderr)
		if err != nil {
			t.Fatalf("build KubeVirt: %v", err)
		}
		opts.Binaries = b
	}
	k, err := Start(t.Context(), c, opts)
	if err != nil {
		t.Fatalf("start KubeVirt: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, name := range []string{VirtAPI, VirtController} {
				t.Logf("%s log (last lines):\n%s", name, testcluster.Tail(c.LogFile(name), 15))
			}
		}
		if err := k.Stop(); err != nil {
			t.Errorf("stop KubeVirt: %v", err)
		}
	})
	return k
}

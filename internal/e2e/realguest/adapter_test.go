//go:build e2e

package realguest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/ci"
)

// startMetricsAdapter runs $VMCTL_ADAPTER_BINARY on the machine, in
// namespace ns, until t ends, as scaffold's Deployment runs it in a
// cluster: as its ServiceAccount, with scaffold's RBAC, behind scaffold's
// APIServices, whose certificate check it skips as scaffold's default
// does. Their Service is an ExternalName of localhost: the API server's
// aggregator cannot reach the node's Service range (package node routes it
// away from the machine). It returns once both versions are Available.
func startMetricsAdapter(t *testing.T, ns string) {
	t.Helper()
	binary := os.Getenv("VMCTL_ADAPTER_BINARY")
	if binary == "" {
		ci.Skip(t, "needs VMCTL_ADAPTER_BINARY: run `make e2e`, which builds vmctl-metrics-adapter")
	}
	dir := t.TempDir()
	ports, err := testcluster.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	m := scaffold.MetricsAdapter{Namespace: ns}
	var objs []runtime.Object
	for _, obj := range m.Objects() {
		switch o := obj.(type) {
		case *apiregistrationv1.APIService:
			o.Spec.Service.Port = ptr.To(int32(ports[0]))
		case *corev1.Service:
			o.Spec = corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost",
				Ports: []corev1.ServicePort{{Name: "https", Port: int32(ports[0])}}}
		case *appsv1.Deployment:
			continue // the process below stands in for its Pod
		}
		objs = append(objs, obj)
	}
	var manifests bytes.Buffer
	if err := scaffold.WriteYAML(&manifests, objs); err != nil {
		t.Fatal(err)
	}
	mustKubectl(t, manifests.Bytes(), "apply", "-f", "-")
	t.Cleanup(func() {
		// A group whose server is gone fails every client's discovery.
		if _, stderr, code := kubectl(t, manifests.Bytes(), "delete", "--ignore-not-found", "-f", "-"); code != 0 {
			t.Errorf("remove the adapter's objects: exit %d: %s", code, stderr)
		}
	})

	kubeconfig := filepath.Join(dir, scaffold.AdapterName+".kubeconfig")
	if _, err := e.cluster.ServiceAccountKubeconfig(t.Context(), e.kube, ns, scaffold.AdapterName, kubeconfig, time.Hour); err != nil {
		t.Fatal(err)
	}
	args := append(m.Args(), "--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", ports[0]), "--cert-dir="+dir,
		"--lister-kubeconfig="+kubeconfig, "--authentication-kubeconfig="+kubeconfig, "--authorization-kubeconfig="+kubeconfig, "-v=2")
	proc, err := testcluster.StartProcess(scaffold.AdapterName, dir, binary, args, nil)
	if err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, scaffold.AdapterName+".log")
	t.Cleanup(func() {
		proc.Stop()
		if t.Failed() {
			t.Logf("%s's log ends with:\n%s", scaffold.AdapterName, testcluster.Tail(log, 30))
		}
	})
	eventually(t, time.Minute, "custom.metrics.k8s.io Available", func(ctx context.Context) (bool, string, error) {
		if proc.Exited() {
			return false, "", fmt.Errorf("the adapter exited: %w", proc.ExitError())
		}
		out, _, _ := kubectl(t, nil, "get", "apiservice", "v1beta2.custom.metrics.k8s.io", "v1beta1.custom.metrics.k8s.io",
			"-o", `jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Available")].status} {end}`)
		return strings.Count(out, "=True") == 2, out, nil
	})
}

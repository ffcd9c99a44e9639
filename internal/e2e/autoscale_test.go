//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/cert"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
)

// adapterBinary is vmctl-metrics-adapter: $VMCTL_ADAPTER_BINARY, or built
// once for the tests that need it.
var adapterBinary = sync.OnceValues(func() (string, error) { return built("VMCTL_ADAPTER_BINARY", "vmctl-metrics-adapter") })

// metricsAdapter is vmctl-metrics-adapter running on loopback as
// scaffold's Deployment would run it in the cluster: as its ServiceAccount,
// with scaffold's RBAC, behind scaffold's APIServices (their Service an
// ExternalName of localhost, as virt-api's in the harness), its serving
// certificate checked by the aggregator (MetricsAdapter.CABundle).
type metricsAdapter struct {
	proc *testcluster.Process
}

// startMetricsAdapter runs the adapter in namespace ns until t ends, and
// waits until the aggregator finds both versions Available.
func startMetricsAdapter(t testing.TB, ns string) *metricsAdapter {
	t.Helper()
	binary, err := adapterBinary()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ports, err := testcluster.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := cert.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.IPv4(127, 0, 0, 1)}, []string{scaffold.AdapterName + "." + ns + ".svc"})
	if err != nil {
		t.Fatal(err)
	}
	certs, err := cert.ParseCertsPEM(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := cert.EncodeCertificates(certs[len(certs)-1])
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	for f, b := range map[string][]byte{certFile: certPEM, keyFile: keyPEM} {
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	m := scaffold.MetricsAdapter{Namespace: ns, CABundle: ca}
	var objs []runtime.Object
	for _, obj := range m.Objects() {
		switch o := obj.(type) {
		case *apiregistrationv1.APIService:
			o.Spec.Service.Port = ptr.To(int32(ports[0]))
			objs = append(objs, o)
		case *corev1.Service:
			// No kube-proxy here: the aggregator resolves an ExternalName.
			o.Spec = corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost",
				Ports: []corev1.ServicePort{{Name: "https", Port: int32(ports[0])}}}
			objs = append(objs, o)
		case *appsv1.Deployment:
			// The process below stands in for its Pod.
		default:
			objs = append(objs, obj)
		}
	}
	var manifests bytes.Buffer
	if err := scaffold.WriteYAML(&manifests, objs); err != nil {
		t.Fatal(err)
	}
	kubectl(t, manifests.Bytes(), "apply", "-f", "-")
	t.Cleanup(func() {
		// A group whose server is gone fails every client's discovery.
		cmd := exec.Command("kubectl", "--kubeconfig", e.cluster.Kubeconfig, "delete", "--ignore-not-found", "-f", "-")
		cmd.Stdin = bytes.NewReader(manifests.Bytes())
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("remove the adapter's objects: %v: %s", err, out)
		}
	})

	kubeconfig := filepath.Join(dir, scaffold.AdapterName+".kubeconfig")
	if _, err := e.cluster.ServiceAccountKubeconfig(t.Context(), e.kube, ns, scaffold.AdapterName, kubeconfig, time.Hour); err != nil {
		t.Fatal(err)
	}
	args := append(m.Args(),
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", ports[0]),
		"--cert-dir="+dir, "--tls-cert-file="+certFile, "--tls-private-key-file="+keyFile,
		"--lister-kubeconfig="+kubeconfig, "--authentication-kubeconfig="+kubeconfig, "--authorization-kubeconfig="+kubeconfig,
		"-v=2")
	proc, err := testcluster.StartProcess("vmctl-metrics-adapter", dir, binary, args, nil)
	if err != nil {
		t.Fatal(err)
	}
	a := &metricsAdapter{proc: proc}
	t.Cleanup(func() {
		a.proc.Stop()
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(dir, "vmctl-metrics-adapter.log"))
			t.Logf("vmctl-metrics-adapter's log:\n%s", log)
		}
	})
	eventually(t, time.Minute, "custom.metrics.k8s.io Available", func(ctx context.Context) (bool, string, error) {
		if a.proc.Exited() {
			return false, "", fmt.Errorf("the adapter exited: %w; see %s", a.proc.ExitError(), filepath.Join(dir, "vmctl-metrics-adapter.log"))
		}
		out, _, _ := runCode(t, nil, "kubectl", "--kubeconfig", e.cluster.Kubeconfig, "get", "apiservice", "v1beta2.custom.metrics.k8s.io", "v1beta1.custom.metrics.k8s.io",
			"-o", `jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Available")].status} {end}`)
		return strings.Count(out, "=True") == 2, out, nil
	})
	return a
}

// customMetric asks the custom metrics API, through kube-apiserver's
// aggregator, for metric of the Pods of ns that selector picks, as the HPA
// controller asks, with c's credentials.
func customMetric(ctx context.Context, c kubernetes.Interface, ns, selector, metric string) ([]byte, error) {
	raw, err := c.Discovery().RESTClient().Get().
		AbsPath("/apis/custom.metrics.k8s.io/v1beta2/namespaces", ns, "pods", "*", metric).
		Param("labelSelector", selector).DoRaw(ctx)
	if err != nil {
		return raw, fmt.Errorf("%w (%s)", err, raw)
	}
	return raw, nil
}

// TestMetricsAdapterWithoutMetricsServer: with no metrics-server (no
// metrics.k8s.io), the adapter, reached through the aggregator as the HPA
// controller reaches it, answers 503 and says to install metrics-server,
// never a value, and an HPA on the fleet says so and scales nothing; a
// user without rights gets 403 from its delegated authorization.
func TestMetricsAdapterWithoutMetricsServer(t *testing.T) {
	ns := namespace(t)
	createPrototype(t, ns, "testvm.yaml")
	deploy(t, ns, scaffold.KindDeployment, "testvm", "--replicas", "2")
	waitPaired(t, ns, "testvm", 2, settle)
	startMetricsAdapter(t, ns)

	selector := contract.LabelAgentPrototype + "=testvm"
	_, err := customMetric(t.Context(), e.kube, ns, selector, contract.MetricVMCPUUtilization)
	if !apierrors.IsServiceUnavailable(err) || !strings.Contains(err.Error(), "install it") {
		t.Errorf("without metrics-server the adapter answered %v; want 503 saying to install metrics-server", err)
	}

	// The HPA says why it cannot scale, in the adapter's words, and
	// scales nothing.
	const name = "vmctl-testvm"
	vmctl(t, "autoscale", "deployment", name, "-n", ns, "--min=1", "--max=4", "--vm-cpu-percent=50")
	eventually(t, time.Minute, "the HPA to say it cannot read the metric", func(ctx context.Context) (bool, string, error) {
		hpa, err := e.kube.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		for _, c := range hpa.Status.Conditions {
			if c.Type == autoscalingv2.ScalingActive && c.Status == corev1.ConditionFalse && c.Reason == "FailedGetPodsMetric" &&
				strings.Contains(c.Message, "metrics-server") {
				return true, "", nil
			}
		}
		return false, hpaSays(hpa), nil
	})
	if d, err := e.kube.AppsV1().Deployments(ns).Get(t.Context(), name, metav1.GetOptions{}); err != nil || ptr.Deref(d.Spec.Replicas, 0) != 2 {
		t.Errorf("the Deployment's replicas changed without a metric: %v", err)
	}

	nobody := rest.CopyConfig(e.cluster.RESTConfig)
	nobody.Impersonate = rest.ImpersonationConfig{UserName: "nobody"}
	c, err := kubernetes.NewForConfig(nobody)
	if err != nil {
		t.Fatal(err)
	}
	_, err = customMetric(t.Context(), c, ns, selector, contract.MetricVMCPUUtilization)
	if !apierrors.IsForbidden(err) {
		t.Errorf("a user without rights got %v; want 403", err)
	}
}

//go:build e2e

package realguest

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/metricsadapter"
)

// deployMetricsAdapter applies what `kubectl vmctl scaffold
// metrics-adapter` prints for namespace ns, with the image under test, as
// a cluster's admin does: the adapter runs as a real Pod of its Deployment
// on the real node, from the vmctl image, with the RBAC, probes and
// security context scaffold writes. One thing is the harness's: its
// kube-apiserver runs outside the node's network, where no kube-proxy
// routes the Service range (package node), so once the Pod is Ready the
// Service becomes an ExternalName of the Pod's address and the
// APIServices name its port, as the aggregator then dials them. It returns
// once both APIServices are Available, and deletes the cluster-wide
// objects (the APIServices, the ClusterRole and the bindings) when t ends;
// the namespace's go with it.
func deployMetricsAdapter(t *testing.T, ns string) {
	t.Helper()
	manifests, stderr, code := runCode(t, nil, e.binary, "scaffold", "metrics-adapter", "-n", ns, "--image", e.image)
	if code != 0 {
		t.Fatalf("kubectl vmctl scaffold metrics-adapter: exit %d: %s", code, stderr)
	}
	t.Cleanup(func() {
		if _, stderr, code := kubectl(t, []byte(manifests), "delete", "-f", "-", "--ignore-not-found", "--wait=false"); code != 0 {
			t.Errorf("kubectl delete the adapter's objects: exit %d: %s", code, stderr)
		}
	})
	start := time.Now()
	mustKubectl(t, []byte(manifests), "apply", "-f", "-")
	mustKubectl(t, nil, "rollout", "status", "deployment/"+scaffold.AdapterName, "-n", ns, "--timeout=3m")
	pods, err := e.kube.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: contract.LabelName + "=" + scaffold.AdapterName})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("the adapter's Pod: %v (%d Pods)", err, len(pods.Items))
	}
	p := pods.Items[0]
	if p.Spec.NodeName != e.node.Name || p.Status.PodIP == "" {
		t.Fatalf("the adapter's Pod %s runs on %q at %q, want the real node %s", p.Name, p.Spec.NodeName, p.Status.PodIP, e.node.Name)
	}
	port := p.Spec.Containers[0].Ports[0].ContainerPort
	mustKubectl(t, nil, "patch", "service", scaffold.AdapterName, "-n", ns, "--type=merge", "-p", fmt.Sprintf(
		`{"spec":{"type":"ExternalName","externalName":%q,"clusterIP":null,"clusterIPs":null,"ipFamilies":null,"ipFamilyPolicy":null,"selector":null}}`, p.Status.PodIP))
	apiServices := metricsadapter.APIServices
	for _, name := range apiServices {
		mustKubectl(t, nil, "patch", "apiservice", name, "--type=merge", "-p", fmt.Sprintf(`{"spec":{"service":{"port":%d}}}`, port))
	}
	wait := []string{"wait", "--for=condition=Available", "--timeout=2m"}
	for _, name := range apiServices {
		wait = append(wait, "apiservice/"+name)
	}
	mustKubectl(t, nil, wait...)
	t.Logf("%s's Pod %s at %s: Ready, and custom.metrics.k8s.io Available, %s after kubectl apply",
		scaffold.AdapterName, p.Name, p.Status.PodIP, time.Since(start).Round(time.Second))
}

//go:build e2e

package realnode

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
)

// originalDesign is the original vmctl design's Deployment, unchanged but
// for the image, with what its PodPreset added (the downward-API volume at
// /etc/podinfo) written in, since PodPresets are gone. The Pod's hostname is
// set apart from its name, so only /etc/podinfo/name tells the agent who it
// is; the default ServiceAccount gets what the agent needs, the Pod GET
// included (no NODE_NAME or POD_UID here).
const originalDesign = `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: vmctl
rules:
- apiGroups: [kubevirt.io]
  resources: [virtualmachines]
  verbs: [get, list, watch, create, delete]
- apiGroups: [""]
  resources: [pods]
  verbs: [get]
- apiGroups: [""]
  resources: [events]
  verbs: [create, patch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: vmctl
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: vmctl}
subjects:
- {kind: ServiceAccount, name: default}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vmctl
  labels:
    app: vmctl
spec:
  replicas: 1
  selector:
    matchLabels:
      app: vmctl
  template:
    metadata:
      labels:
        app: vmctl
    spec:
      hostname: not-the-pod-name
      containers:
      - name: vmctl
        image: %s
        imagePullPolicy: IfNotPresent
        args:
        - "testvm"
        volumeMounts:
        - name: podinfo
          mountPath: /etc/podinfo
      serviceAccountName: default
      volumes:
      - name: podinfo
        downwardAPI:
          items:
          - path: "name"
            fieldRef:
              fieldPath: metadata.name
`

// TestOriginalDesignManifestOnTheRealNode runs the original design's
// Deployment on the real kubelet: the agent learns its Pod's name from
// /etc/podinfo/name (its hostname is something else), its namespace from the
// ServiceAccount, its node and UID from one GET of its Pod, and makes the
// Pod's VM.
func TestOriginalDesignManifestOnTheRealNode(t *testing.T) {
	ns := namespace(t)
	createPrototype(t, ns, "testvm.yaml")
	if _, stderr, code := kubectl(t, []byte(fmt.Sprintf(originalDesign, e.image)), "apply", "-n", ns, "-f", "-"); code != 0 {
		t.Fatalf("kubectl apply: exit %d: %s", code, stderr)
	}
	var pod *corev1.Pod
	eventually(t, settle, "the Pod's VM, named for the Pod", func(ctx context.Context) (bool, string, error) {
		pods, err := e.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=vmctl"})
		if err != nil || len(pods.Items) != 1 {
			return false, fmt.Sprintf("%d pods", len(pods.Items)), err
		}
		pod = &pods.Items[0]
		vm, err := e.virt.KubevirtV1().VirtualMachines(ns).Get(ctx, derive.Name("testvm", pod.Name, pod.UID), metav1.GetOptions{})
		if err != nil {
			return false, fmt.Sprintf("pod %s phase %s: %v", pod.Name, pod.Status.Phase, err), nil
		}
		return vm.Annotations[contract.AnnotationPodUID] == string(pod.UID) && testcluster.PinnedNode(vm.Spec.Template.Spec.Affinity) == e.node.Name,
			fmt.Sprintf("VM %s pod-uid %s node %s", vm.Name, vm.Annotations[contract.AnnotationPodUID], testcluster.PinnedNode(vm.Spec.Template.Spec.Affinity)), nil
	})
	// No VM named for the hostname: the name came from the file.
	if _, err := e.virt.KubevirtV1().VirtualMachines(ns).Get(t.Context(), derive.Name("testvm", "not-the-pod-name", ""), metav1.GetOptions{}); err == nil {
		t.Error("a VM named for the Pod's hostname exists: the agent did not read /etc/podinfo/name")
	}
	logs, _, _ := kubectl(t, nil, "logs", "-n", ns, pod.Name)
	if !strings.Contains(logs, `"Found the Pod"`) {
		t.Errorf("the agent's log does not show the GET of its Pod (no NODE_NAME or POD_UID here):\n%s", logs)
	}
}

// TestScaffoldedAgentServesMetricsOnItsAnnotatedPort scrapes a scaffolded
// agent the way Prometheus' annotation-based discovery does: at the Pod's IP,
// on the port and path its prometheus.io/ annotations name.
func TestScaffoldedAgentServesMetricsOnItsAnnotatedPort(t *testing.T) {
	ns := namespace(t)
	createPrototype(t, ns, "testvm.yaml")
	deploy(t, ns, scaffold.KindDeployment, "testvm")
	pod := readyAgentPod(t, ns)
	a := pod.Annotations
	if a["prometheus.io/scrape"] != "true" || a["prometheus.io/port"] == "" || a["prometheus.io/path"] == "" {
		t.Fatalf("pod annotations %v lack Prometheus' scrape annotations", a)
	}
	url := "http://" + net.JoinHostPort(pod.Status.PodIP, a["prometheus.io/port"]) + a["prometheus.io/path"]
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape %s: %d %s", url, resp.StatusCode, body)
	}
	lines := strings.Split(string(body), "\n")
	for _, want := range []string{"vmctl_agent_vm_ready 1", `vmctl_agent_vms_total{reason="Created"} 1`, "vmctl_agent_start_to_vm_ready_seconds_count 1"} {
		if !contains(lines, want) {
			t.Errorf("scrape of %s lacks the line %q:\n%s", url, want, body)
		}
	}
}

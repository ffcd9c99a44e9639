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
	"k8s.io/apimachinery/pkg/fields"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/stuck"
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
// Deployment on the real kubelet. The agent learns its Pod's name from
// /etc/podinfo/name (its hostname is something else), its namespace from the
// ServiceAccount, and its node and UID from one GET of its Pod. Its template
// pins no VM revision, and the agent derives only from a pinned one, so it
// makes no VM and says why, once, in a VMRevisionNotPinned Event about its
// Pod by that name and UID.
func TestOriginalDesignManifestOnTheRealNode(t *testing.T) {
	ns := namespace(t)
	createPrototype(t, ns, "testvm.yaml")
	if _, stderr, code := kubectl(t, []byte(fmt.Sprintf(originalDesign, e.image)), "apply", "-n", ns, "-f", "-"); code != 0 {
		t.Fatalf("kubectl apply: exit %d: %s", code, stderr)
	}
	var pod *corev1.Pod
	eventually(t, settle, "the agent's "+stuck.ReasonNotPinned+" Event about its Pod", func(ctx context.Context) (bool, string, error) {
		pods, err := e.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=vmctl"})
		if err != nil || len(pods.Items) != 1 {
			return false, fmt.Sprintf("%d pods", len(pods.Items)), err
		}
		pod = &pods.Items[0]
		events, err := e.kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("reason", stuck.ReasonNotPinned).String(),
		})
		if err != nil {
			return false, "", err
		}
		for _, ev := range events.Items {
			o := ev.InvolvedObject
			if o.Kind == "Pod" && o.Name == pod.Name && o.UID == pod.UID && strings.HasPrefix(ev.Message, stuck.NotPinned) {
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("pod %s phase %s, %d such Events, none about it", pod.Name, pod.Status.Phase, len(events.Items)), nil
	})
	vms, err := e.virt.KubevirtV1().VirtualMachines(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(vms.Items) != 1 || vms.Items[0].Name != "testvm" {
		t.Errorf("VMs in %s: %d, want only the prototype: a Pod that pins no revision gets no VM", ns, len(vms.Items))
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

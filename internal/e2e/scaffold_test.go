//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"kubevirt.io/client-go/kubevirt"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
)

// TestScaffoldDryRun has the API server itself validate every scaffold variant.
func TestScaffoldDryRun(t *testing.T) {
	ns := namespace(t)
	createPrototype(t, ns, "testvm.yaml")
	other := namespace(t)
	createPrototype(t, other, "testvm.yaml")

	kinds := []scaffold.Kind{scaffold.KindDeployment, scaffold.KindDaemonSet, scaffold.KindStatefulSet}
	variants := map[string][]string{
		"plain":           nil,
		"service":         {"--service", "80:8080"},
		"pdb":             {"--pdb", "1"},
		"admissionPolicy": {"--admission-policy"},
		"protoNamespace":  {"--proto-namespace", other},
		"everything":      {"--service", "80:8080", "--pdb", "1", "--admission-policy", "--proto-namespace", other},
	}
	for _, kind := range kinds {
		for name, flags := range variants {
			t.Run(string(kind)+"/"+name, func(t *testing.T) {
				args := append([]string{"scaffold", strings.ToLower(string(kind)), "testvm", "-n", ns}, flags...)
				manifests := vmctl(t, args...)
				out := kubectl(t, []byte(manifests), "apply", "--dry-run=server", "-f", "-")
				if !strings.Contains(out, "(server dry run)") {
					t.Errorf("kubectl apply --dry-run=server printed no server dry run:\n%s", out)
				}
				if want := strings.ToLower(string(kind)) + ".apps/vmctl-testvm"; !strings.Contains(out, want) {
					t.Errorf("dry run did not apply %s:\n%s", want, out)
				}
			})
		}
	}
}

// agentClients are clients that authenticate as the scaffolded ServiceAccount
// with a token bound to pod, as the agent in that pod does.
func agentClients(t *testing.T, ns, serviceAccount string, pod corev1.Pod) (kubernetes.Interface, kubevirt.Interface) {
	t.Helper()
	tr, err := e.kube.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), serviceAccount, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{
			ExpirationSeconds: ptr.To[int64](3600),
			BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for %s bound to pod %s: %v", serviceAccount, pod.Name, err)
	}
	cfg := &rest.Config{
		Host:            e.cluster.RESTConfig.Host,
		APIPath:         e.cluster.RESTConfig.APIPath,
		TLSClientConfig: rest.TLSClientConfig{CAData: e.cluster.RESTConfig.CAData, CAFile: e.cluster.RESTConfig.CAFile, ServerName: e.cluster.RESTConfig.ServerName},
		BearerToken:     tr.Status.Token,
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	virt, err := kubevirt.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return kube, virt
}

// plainVM is a VM vmctl did not make: a copy of the prototype without its labels.
func plainVM(proto *kubevirtv1.VirtualMachine, name string) *kubevirtv1.VirtualMachine {
	vm := proto.DeepCopy()
	vm.ObjectMeta = metav1.ObjectMeta{Name: name, Namespace: proto.Namespace, Labels: map[string]string{"app": "other"}}
	return vm
}

// TestScaffoldWarnsAboutGuestGracePeriod: with a cluster at hand, scaffold
// reads the prototype and warns when its guest may take longer to shut down
// than the agent waits; status says so once for the prototype, and the
// agent logs it but records no Event.
func TestScaffoldWarnsAboutGuestGracePeriod(t *testing.T) {
	ns := namespace(t)
	createPrototype(t, ns, "testvm.yaml") // its guest gets 30s
	args := []string{"scaffold", "deployment", "testvm", "-n", ns, "--grace-period", "40", "--replicas", "2"}
	manifests, stderr, code := vmctlCode(t, args...)
	if code != 0 {
		t.Fatalf("scaffold: exit %d", code)
	}
	want := "Warning: prototype " + ns + "/testvm: its guest gets 30s to shut down"
	if !strings.Contains(stderr, want) || !strings.Contains(stderr, "--grace-period 50)") {
		t.Errorf("scaffold stderr %q, want %q and the grace period to use", stderr, want)
	}
	kubectl(t, []byte(manifests), "apply", "-f", "-")
	waitPaired(t, ns, "testvm", 2, settle) // the agents checked before they made their VMs
	if _, stderr, code := vmctlCode(t, "status", "-n", ns); code != 0 || strings.Count(stderr, want) != 1 || !strings.Contains(stderr, "--grace-period 50)") {
		t.Errorf("status: exit %d, stderr %q; want 0 and %q once, for both agents", code, stderr, want)
	}
	events, err := e.kube.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{FieldSelector: "reason=GracePeriodTooShort"})
	if err != nil {
		t.Fatal(err)
	}
	if len(events.Items) != 0 {
		t.Errorf("%d GracePeriodTooShort Events, want none: the agents only log it", len(events.Items))
	}
	pods, err := e.kube.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: contract.AgentSelector})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 2 {
		t.Fatalf("%d agent Pods, want 2", len(pods.Items))
	}
	for _, p := range pods.Items {
		if log := agentLog(t, ns, p.Name); strings.Count(log, "Grace period too short") != 1 {
			t.Errorf("agent %s logged the grace period %d times, want once:\n%s", p.Name, strings.Count(log, "Grace period too short"), log)
		}
	}
	if _, stderr, _ := vmctlCode(t, "scaffold", "deployment", "testvm", "-n", ns, "--grace-period", "50"); stderr != "" {
		t.Errorf("scaffold --grace-period 50 stderr %q, want nothing", stderr)
	}
}

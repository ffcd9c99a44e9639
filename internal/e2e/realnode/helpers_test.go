//go:build e2e

package realnode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/ci"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/node"
)

// namespace creates a namespace for t and deletes it when t ends; a failed
// test logs the kubelet's and the agents' last lines first.
func namespace(t *testing.T) string {
	t.Helper()
	if skipReason != "" {
		ci.Skip(t, skipReason)
	}
	return testcluster.Namespace(t, e.kube, func(ns string) {
		t.Logf("kubelet log (last lines):\n%s", testcluster.Tail(e.node.LogFile(node.Kubelet), 25))
		pods, _ := e.kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
		for _, p := range pods.Items {
			out, _, _ := kubectl(t, nil, "logs", "-n", ns, p.Name, "--tail=20")
			t.Logf("agent log of %s (status %+v):\n%s", p.Name, p.Status, out)
		}
	})
}

// repoFile is the path of a file in the repository.
func repoFile(rel string) string {
	root, err := testcluster.RepoRoot()
	if err != nil {
		panic(err) // the tests run in the checkout, where RepoRoot finds it
	}
	return filepath.Join(root, rel)
}

// createPrototype creates the prototype VM of testdata/<file> in ns.
func createPrototype(t *testing.T, ns, file string) {
	t.Helper()
	createPrototypeWith(t, ns, file, nil)
}

// createPrototypeWith creates the prototype VM of testdata/<file> in ns,
// changed by change first (when not nil).
func createPrototypeWith(t *testing.T, ns, file string, change func(*kubevirtv1.VirtualMachine)) {
	t.Helper()
	b, err := os.ReadFile(repoFile(filepath.Join("testdata", file)))
	if err != nil {
		t.Fatal(err)
	}
	var vm kubevirtv1.VirtualMachine
	if err := yaml.UnmarshalStrict(b, &vm); err != nil {
		t.Fatal(err)
	}
	if change != nil {
		change(&vm)
	}
	if _, err := e.virt.KubevirtV1().VirtualMachines(ns).Create(context.Background(), &vm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create the prototype: %v", err)
	}
}

// kubectl runs kubectl against the cluster; it returns stdout, stderr and
// the exit code.
func kubectl(t *testing.T, stdin []byte, args ...string) (string, string, int) {
	t.Helper()
	return runCode(t, stdin, "kubectl", args...)
}

func runCode(t *testing.T, stdin []byte, name string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+e.cluster.Kubeconfig, "NO_COLOR=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return stdout.String(), stderr.String(), 0
	case errors.As(err, &exit):
		return stdout.String(), stderr.String(), exit.ExitCode()
	default:
		t.Fatalf("run %s: %v", name, err)
		return "", "", -1
	}
}

// deploy applies what `kubectl vmctl scaffold KIND PROTOTYPE --image IMAGE`
// writes, as a user would: nothing but the image is set.
func deploy(t *testing.T, ns string, kind scaffold.Kind, prototype string) {
	t.Helper()
	manifests, stderr, code := runCode(t, nil, e.binary, "scaffold", strings.ToLower(string(kind)), prototype, "-n", ns, "--image", e.image)
	if code != 0 {
		t.Fatalf("kubectl vmctl scaffold: exit %d: %s", code, stderr)
	}
	if _, stderr, code := kubectl(t, []byte(manifests), "apply", "-f", "-"); code != 0 {
		t.Fatalf("kubectl apply: exit %d: %s", code, stderr)
	}
}

// eventually polls cond until it holds or timeout passes, then fails t with
// what it last saw.
func eventually(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, string, error)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		ok, seen, err := cond(ctx)
		last = seen
		return ok, err
	})
	if err != nil {
		t.Fatalf("%s: not within %s: %v; last seen: %s", what, timeout, err, last)
	}
}

// readyAgentPod waits for the one agent Pod in ns that is not being deleted
// (other than the ones in skip) to be Ready, and returns it.
func readyAgentPod(t *testing.T, ns string, skip ...string) *corev1.Pod {
	t.Helper()
	var ready *corev1.Pod
	eventually(t, settle, "an agent Pod Ready in "+ns, func(ctx context.Context) (bool, string, error) {
		list, err := e.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: contract.LabelComponent + "=" + contract.ComponentAgent})
		if err != nil {
			return false, "", err
		}
		var seen []string
		for i := range list.Items {
			p := &list.Items[i]
			seen = append(seen, fmt.Sprintf("%s node=%s phase=%s ready=%v", p.Name, p.Spec.NodeName, p.Status.Phase, podReady(p)))
			if p.DeletionTimestamp == nil && podReady(p) && !contains(skip, p.Name) {
				ready = p
				return true, "", nil
			}
		}
		return false, strings.Join(seen, "; "), nil
	})
	return ready
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func podReady(p *corev1.Pod) bool {
	return readyCondition(p) != nil && readyCondition(p).Status == corev1.ConditionTrue
}

func readyCondition(p *corev1.Pod) *corev1.PodCondition {
	for i, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

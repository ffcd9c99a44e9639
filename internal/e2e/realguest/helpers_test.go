//go:build e2e

package realguest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/ci"
	kvharness "github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/kubevirt"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/node"
)

// namespace creates a namespace for t and deletes it when t ends; a failed
// test logs the kubelet's, virt-handler's and the Pods' last lines first.
func namespace(t *testing.T) string {
	t.Helper()
	if skipReason != "" {
		ci.Skip(t, skipReason)
	}
	return testcluster.Namespace(t, e.kube, func(ns string) {
		t.Logf("kubelet log (last lines):\n%s", testcluster.Tail(e.node.LogFile(node.Kubelet), 25))
		out, _, _ := kubectl(t, nil, "logs", "-n", kvharness.Namespace, "daemonset/virt-handler", "--tail=40")
		t.Logf("virt-handler log (last lines):\n%s", out)
		pods, _ := e.kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
		for _, p := range pods.Items {
			out, _, _ := kubectl(t, nil, "logs", "-n", ns, p.Name, "--all-containers", "--tail=20")
			t.Logf("Pod %s (phase %s):\n%s", p.Name, p.Status.Phase, out)
		}
	})
}

// kubectl runs kubectl against the cluster; it returns stdout, stderr and
// the exit code.
func kubectl(t *testing.T, stdin []byte, args ...string) (string, string, int) {
	t.Helper()
	return runCode(t, stdin, "kubectl", args...)
}

func runCode(t *testing.T, stdin []byte, name string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
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

// mustKubectl runs kubectl and fails t unless it exits 0.
func mustKubectl(t *testing.T, stdin []byte, args ...string) string {
	t.Helper()
	out, stderr, code := kubectl(t, stdin, args...)
	if code != 0 {
		t.Fatalf("kubectl %s: exit %d: %s", strings.Join(args, " "), code, stderr)
	}
	return out
}

// eventually polls cond until it holds or timeout passes, then fails t with
// what it last saw.
func eventually(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, string, error)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		ok, seen, err := cond(ctx)
		last = seen
		return ok, err
	})
	if err != nil {
		t.Fatalf("%s: not within %s: %v; last seen: %s", what, timeout, err, last)
	}
}

func podReady(p *corev1.Pod) bool {
	c := podCondition(p, corev1.PodReady)
	return c != nil && c.Status == corev1.ConditionTrue
}

func podCondition(p *corev1.Pod, typ corev1.PodConditionType) *corev1.PodCondition {
	for i, c := range p.Status.Conditions {
		if c.Type == typ {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// podGone reports whether Pod p is gone: the API server answers NotFound
// for its name, or holds another Pod of that name. Any other error says
// nothing of p, and is returned.
func podGone(ctx context.Context, ns string, p corev1.Pod) (bool, error) {
	cur, err := e.kube.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return cur.UID != p.UID, nil
}

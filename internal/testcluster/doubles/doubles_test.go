//go:build e2e

package doubles

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
)

// TestDoubles runs the kubelet double on a real control plane, with
// testdata/fakeagent instead of kubectl-vmctl. The virt-handler stand-in is
// tested with KubeVirt's real virt-controller, in package kubevirt.
func TestDoubles(t *testing.T) {
	c := testcluster.ForTest(t, testcluster.Options{Nodes: 2, Log: tLogWriter{t}})
	cs := kubernetes.NewForConfigOrDie(c.RESTConfig)
	log := slog.New(slog.NewTextHandler(tLogWriter{t}, nil))
	agent := buildFakeAgent(t)
	dir := t.TempDir()

	kCtx, stopKubelet := context.WithCancel(context.Background())
	kDone := make(chan error, 1)
	k := NewKubelet(c.DoublesConfig, KubeletOptions{Binary: agent, Dir: dir, Log: log})
	go func() { kDone <- k.Run(kCtx) }()
	// Registered after ForTest, so it runs before the cluster stops.
	t.Cleanup(func() {
		stopKubelet()
		if err := <-kDone; err != nil {
			t.Errorf("the kubelet double returned %v", err)
		}
	})

	t.Run("kubelet", func(t *testing.T) { testKubelet(t, c, cs, k, dir) })
	t.Run("kubelet stop kills agents", func(t *testing.T) {
		ns := testcluster.Namespace(t, cs, nil)
		pod := createAgentPod(t, cs, agentPodSpec(ns, "agent-stop", c.Nodes[0], 30))
		pid := agentPid(t, waitPod(t, cs, ns, pod.Name, "Running", podRunning))
		stopKubelet()
		select {
		case err := <-kDone:
			kDone <- err // for the cleanup
		case <-time.After(30 * time.Second):
			t.Fatal("Kubelet.Run did not return within 30s of its context ending")
		}
		if alive(pid) {
			t.Errorf("agent %d still runs after Kubelet.Run returned", pid)
		}
		if got, _ := os.ReadFile(k.LogPath(ns, pod.Name)); strings.Contains(string(got), "got SIGTERM") {
			t.Errorf("agent got SIGTERM on kubelet stop, want SIGKILL; log:\n%s", got)
		}
	})
}

func testKubelet(t *testing.T, c *testcluster.Cluster, cs kubernetes.Interface, k *Kubelet, dir string) {
	ns := testcluster.Namespace(t, cs, nil)
	pods := cs.CoreV1().Pods(ns)
	node := c.Nodes[0]

	pod := createAgentPod(t, cs, agentPodSpec(ns, "agent-a", node, 30))
	podDir := filepath.Join(dir, ns, pod.Name)
	got := waitPod(t, cs, ns, pod.Name, "Running and Ready", func(p *corev1.Pod) bool { return podRunning(p) && podReady(p) })
	st := got.Status
	if st.PodIP == "" || st.HostIP == "" || st.StartTime == nil || st.ContainerStatuses[0].State.Running == nil ||
		!st.ContainerStatuses[0].Ready || st.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("status of a Running Pod: %+v", st)
	}
	for _, want := range []string{
		"whoami system:serviceaccount:" + ns + ":default",
		"extra authentication.kubernetes.io/pod-name=[agent-a]",
		"extra authentication.kubernetes.io/pod-uid=[" + string(pod.UID) + "]",
		"env POD_NAME=agent-a",
		"env POD_NAMESPACE=" + ns,
		"env POD_UID=" + string(pod.UID),
		"env NODE_NAME=" + node,
		"env GREETING=hello-agent-a",
		"env KUBECONFIG=\n",
		`positional ["proto"]`,
		`"--hostname-override=agent-a"`,
	} {
		if log := readFile(t, k.LogPath(ns, pod.Name)); !strings.Contains(log, want) {
			t.Errorf("agent log lacks %q:\n%s", want, log)
		}
	}

	t.Run("readiness follows /readyz", func(t *testing.T) {
		touch(t, filepath.Join(podDir, "unready"))
		waitPod(t, cs, ns, pod.Name, "not Ready", func(p *corev1.Pod) bool {
			return !podReady(p) && !p.Status.ContainerStatuses[0].Ready && podRunning(p)
		})
		if err := os.Remove(filepath.Join(podDir, "unready")); err != nil {
			t.Fatal(err)
		}
		waitPod(t, cs, ns, pod.Name, "Ready again", podReady)
	})

	t.Run("SIGKILL restarts the agent", func(t *testing.T) {
		before := agentPid(t, waitPod(t, cs, ns, pod.Name, "Ready", podReady))
		if err := k.Signal(ns, pod.Name, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		got := waitPod(t, cs, ns, pod.Name, "restarted and Ready", func(p *corev1.Pod) bool {
			return podReady(p) && p.Status.ContainerStatuses[0].RestartCount == 1
		})
		cst := got.Status.ContainerStatuses[0]
		if term := cst.LastTerminationState.Terminated; term == nil || term.ExitCode != 137 {
			t.Errorf("lastState %+v, want terminated with exit code 137", cst.LastTerminationState)
		}
		if after := agentPid(t, got); after == before || alive(before) {
			t.Errorf("agent pid %d before, %d after; the old one alive: %v", before, after, alive(before))
		}
		if n := k.Restarts(ns, pod.Name); n != 1 {
			t.Errorf("Restarts() = %d, want 1", n)
		}
	})

	t.Run("delete: SIGTERM, Pod removed after the agent exits", func(t *testing.T) {
		pid := agentPid(t, waitPod(t, cs, ns, pod.Name, "Running", podRunning))
		if err := pods.Delete(t.Context(), pod.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		testcluster.Eventually(t, 30*time.Second, "the agent to get SIGTERM", func(context.Context) (bool, error) {
			return strings.Contains(readFile(t, k.LogPath(ns, pod.Name)), "got SIGTERM"), nil
		})
		// The agent holds on until "release" exists, so the Pod must still be there.
		p, err := pods.Get(t.Context(), pod.Name, metav1.GetOptions{})
		if err != nil || p.DeletionTimestamp == nil || p.UID != pod.UID {
			t.Fatalf("Pod while its agent still runs: %v (err %v), want it terminating", p.ObjectMeta, err)
		}
		if !alive(pid) {
			t.Fatalf("agent %d is gone before it was released", pid)
		}
		touch(t, filepath.Join(podDir, "release"))
		testcluster.WaitGone(t, "the deleted Pod", func(ctx context.Context) error {
			_, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
			return err
		})
		if alive(pid) {
			t.Errorf("agent %d still runs after its Pod was removed", pid)
		}
		if log := readFile(t, k.LogPath(ns, pod.Name)); !strings.Contains(log, "fakeagent: exiting") {
			t.Errorf("agent did not exit on its own:\n%s", log)
		}
	})

	t.Run("delete: SIGKILL after the grace period", func(t *testing.T) {
		// Scheduled by kube-scheduler rather than pinned.
		p := createAgentPod(t, cs, agentPodSpec(ns, "agent-grace", "", 2))
		// Ready, not just Running: a SIGTERM before the fake agent set its
		// handler would end it at once.
		pid := agentPid(t, waitPod(t, cs, ns, p.Name, "Ready", podReady))
		start := time.Now()
		if err := pods.Delete(t.Context(), p.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		testcluster.WaitGone(t, "the deleted Pod", func(ctx context.Context) error {
			_, err := pods.Get(ctx, p.Name, metav1.GetOptions{})
			return err
		})
		if took := time.Since(start); took < 2*time.Second {
			t.Errorf("Pod went after %s, before its 2s grace period", took)
		}
		log := readFile(t, k.LogPath(ns, p.Name))
		if !strings.Contains(log, "got SIGTERM") || strings.Contains(log, "fakeagent: exiting") || alive(pid) {
			t.Errorf("want SIGTERM, then SIGKILL (no clean exit); alive %v; log:\n%s", alive(pid), log)
		}
	})

	t.Run("force delete kills the agent without SIGTERM", func(t *testing.T) {
		p := createAgentPod(t, cs, agentPodSpec(ns, "agent-force", node, 30))
		pid := agentPid(t, waitPod(t, cs, ns, p.Name, "Running", podRunning))
		if err := pods.Delete(t.Context(), p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
			t.Fatal(err)
		}
		testcluster.Eventually(t, 30*time.Second, "the agent to be killed", func(context.Context) (bool, error) {
			return !alive(pid), nil
		})
		if log := readFile(t, k.LogPath(ns, p.Name)); strings.Contains(log, "got SIGTERM") {
			t.Errorf("agent got SIGTERM on a force delete:\n%s", log)
		}
	})
}

// agentPodSpec is a vmctl agent Pod running the fake agent, which holds on
// after SIGTERM until a "release" file exists.
func agentPodSpec(ns, name, node string, grace int64) *corev1.Pod {
	field := func(name, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: ns,
			Labels: map[string]string{testcluster.AgentNameLabel: testcluster.AgentNameValue, testcluster.AgentComponentLabel: testcluster.AgentComponentValue},
		},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			TerminationGracePeriodSeconds: ptr.To(grace),
			Containers: []corev1.Container{{
				Name:  "agent",
				Image: "example.com/kubectl-vmctl:test",
				Args:  []string{"proto", "--hold-on-term"},
				Env: []corev1.EnvVar{
					field("POD_NAME", "metadata.name"),
					field("POD_NAMESPACE", "metadata.namespace"),
					field("POD_UID", "metadata.uid"),
					field("NODE_NAME", "spec.nodeName"),
					{Name: "GREETING", Value: "hello-$(POD_NAME)"},
				},
				Ports: []corev1.ContainerPort{{Name: "probes", ContainerPort: 8080}},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString("probes")}},
					PeriodSeconds:    1,
					FailureThreshold: 1,
				},
			}},
		},
	}
}

func createAgentPod(t *testing.T, cs kubernetes.Interface, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	created, err := cs.CoreV1().Pods(pod.Namespace).Create(t.Context(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return created
}

func podRunning(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodRunning && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running != nil
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func waitPod(t *testing.T, cs kubernetes.Interface, ns, name, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	testcluster.Eventually(t, 30*time.Second, "Pod "+name+" "+what, func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		pod = p
		if !cond(p) {
			return false, fmt.Errorf("status %+v", p.Status)
		}
		return true, nil
	})
	return pod
}

// agentPid reads the agent's pid from the container ID, process://<pid>.
func agentPid(t *testing.T, p *corev1.Pod) int {
	t.Helper()
	id := p.Status.ContainerStatuses[0].ContainerID
	pid, err := strconv.Atoi(strings.TrimPrefix(id, "process://"))
	if err != nil {
		t.Fatalf("container ID %q: %v", id, err)
	}
	return pid
}

// alive reports whether pid is a process (the kubelet double reaps its
// agents, so an exited one does not linger as a zombie).
func alive(pid int) bool {
	return syscall.Kill(pid, 0) == nil
}

func buildFakeAgent(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "fakeagent")
	out, err := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "./testdata/fakeagent").CombinedOutput()
	if err != nil {
		t.Fatalf("build the fake agent: %v\n%s", err, out)
	}
	return bin
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return string(data)
}

func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// tLogWriter sends lines to the test log.
type tLogWriter struct{ t testing.TB }

func (w tLogWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

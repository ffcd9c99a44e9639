//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/revision"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
)

// BenchmarkAgentLifecycle runs the agent binary outside a Pod (acting for a
// real Pod object, as --hostname-override allows) and measures, over 20 runs:
// process start → derived VM created, SIGTERM → VM gone, and the agent's
// memory once its VM is ready. Run it with `make bench`.
func BenchmarkAgentLifecycle(b *testing.B) {
	const runs = 20
	ctx := context.Background()
	ns := namespace(b)
	createPrototype(b, ns, "testvm.yaml")
	// Not an agent Pod: the kubelet double leaves it alone, kwok runs it.
	pod, err := e.kube.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "bench"},
		Spec:       corev1.PodSpec{NodeName: e.cluster.Nodes[0], Containers: []corev1.Container{{Name: "c", Image: "none"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	vmName := derive.Name("testvm", pod.Name, pod.UID)
	// What the Pod's emptyDir would be: it outlives every run.
	stateDir := b.TempDir()
	var started, stopped []time.Duration
	var rssAnon, rss, scrapedAnon []int
	for range b.N {
		for i := range runs {
			w := watchVM(b, ns, vmName)
			cmd, logPath, closeLog := agentCmd(b, e.cluster.Kubeconfig, ns, pod, stateDir)
			t0 := time.Now()
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			waitEvent(b, w, watch.Added, 30*time.Second, logPath)
			started = append(started, time.Since(t0))
			if i == runs-1 {
				// Steady state: the VM is ready (KubeVirt's virt-controller
				// marks it), the agent holds only its watch.
				waitReady(b, w, 30*time.Second, logPath)
				anon, total := memory(b, cmd.Process.Pid)
				rssAnon, rss = append(rssAnon, anon), append(rss, total)
				// What ten Prometheus scrapes of /metrics leave behind.
				scrapeTimes(b, logPath, 10)
				anon, _ = memory(b, cmd.Process.Pid)
				scrapedAnon = append(scrapedAnon, anon)
			}
			t1 := time.Now()
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				b.Fatal(err)
			}
			waitEvent(b, w, watch.Deleted, 60*time.Second, logPath)
			stopped = append(stopped, time.Since(t1))
			if err := cmd.Wait(); err != nil {
				b.Fatalf("agent exited with %v; log %s", err, logPath)
			}
			w.Stop()
			closeLog()
		}
	}
	toReady, lifetime := agentRequests(b, ns, pod, vmName, stateDir)
	b.ReportMetric(float64(lifetime), "requests/lifetime")
	fmt.Printf("agent following the prototype: API requests to a ready VM %v; whole lifetime %d\n", toReady, lifetime)
	toReady, lifetime = agentRequests(b, ns, pod, vmName, stateDir, pinnedAgent(b, ns)...)
	b.ReportMetric(float64(lifetime), "requests/lifetime-pinned")
	fmt.Printf("agent of a pinned VM revision: API requests to a ready VM %v; whole lifetime %d\n", toReady, lifetime)
	report(b, "start→created", started)
	report(b, "SIGTERM→gone", stopped)
	b.ReportMetric(float64(rssAnon[len(rssAnon)-1])/1024, "RssAnon-MiB")
	b.ReportMetric(float64(rss[len(rss)-1])/1024, "RSS-MiB")
	b.ReportMetric(float64(scrapedAnon[len(scrapedAnon)-1])/1024, "RssAnon-after-scrapes-MiB")
	fmt.Printf("agent: start→created p50 %s p95 %s; SIGTERM→gone p50 %s p95 %s (n=%d); steady state RssAnon %.1f MiB, RSS %.1f MiB; RssAnon after 10 scrapes of /metrics %.1f MiB\n",
		pct(started, 50), pct(started, 95), pct(stopped, 50), pct(stopped, 95), len(started),
		float64(rssAnon[len(rssAnon)-1])/1024, float64(rss[len(rss)-1])/1024, float64(scrapedAnon[len(scrapedAnon)-1])/1024)
}

// scrapeTimes GETs the agent's /metrics n times, at the probe address its
// log names. (An agent without /metrics answers 404, which costs it as
// little.)
func scrapeTimes(b *testing.B, logPath string, n int) {
	b.Helper()
	log, err := os.ReadFile(logPath)
	if err != nil {
		b.Fatal(err)
	}
	m := regexp.MustCompile(`"Serving probes".* address="([^"]+)"`).FindSubmatch(log)
	if m == nil {
		b.Fatalf("no probe address in the agent's log:\n%s", log)
	}
	for range n {
		resp, err := http.Get("http://" + string(m[1]) + "/metrics")
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
}

func waitEvent(b *testing.B, w watch.Interface, want watch.EventType, timeout time.Duration, log string) {
	b.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				b.Fatalf("watch closed waiting for %s", want)
			}
			if ev.Type == want {
				return
			}
		case <-deadline:
			out, _ := os.ReadFile(log)
			b.Fatalf("no %s event within %s; agent log:\n%s", want, timeout, out)
		}
	}
}

func waitReady(b *testing.B, w watch.Interface, timeout time.Duration, log string) {
	b.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case ev := <-w.ResultChan():
			if vm, ok := ev.Object.(*kubevirtv1.VirtualMachine); ok && vm.Status.Ready {
				return
			}
		case <-deadline:
			out, _ := os.ReadFile(log)
			b.Fatalf("VM not ready within %s; agent log:\n%s", timeout, out)
		}
	}
}

// memory reads RssAnon (private memory) and VmRSS in KiB from /proc.
func memory(b *testing.B, pid int) (anon, total int) {
	b.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 2 {
			continue
		}
		v, _ := strconv.Atoi(fields[1])
		switch fields[0] {
		case "RssAnon:":
			anon = v
		case "VmRSS:":
			total = v
		}
	}
	return anon, total
}

func pct(d []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[(len(s)-1)*p/100].Round(time.Millisecond)
}

func report(b *testing.B, name string, d []time.Duration) {
	b.ReportMetric(float64(pct(d, 50).Milliseconds()), name+"-p50-ms")
	b.ReportMetric(float64(pct(d, 95).Milliseconds()), name+"-p95-ms")
}

// agentRequests runs one more agent through a counting proxy and returns the
// requests it made until its VM was ready, and over its whole lifetime.
func agentRequests(b *testing.B, ns string, pod *corev1.Pod, vmName, stateDir string, pin ...string) (map[string]int, int) {
	b.Helper()
	srv, counts := countingProxy(b)
	kubeconfig := filepath.Join(b.TempDir(), "proxy.kubeconfig")
	writeProxyKubeconfig(b, kubeconfig, srv.URL, ns)
	w := watchVM(b, ns, vmName)
	defer w.Stop()
	cmd, logPath, closeLog := agentCmd(b, kubeconfig, ns, pod, stateDir, pin...)
	defer closeLog()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	waitReady(b, w, 30*time.Second, logPath)
	toReady, _ := counts.snapshot()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		b.Fatal(err)
	}
	waitEvent(b, w, watch.Deleted, 60*time.Second, logPath)
	if err := cmd.Wait(); err != nil {
		b.Fatalf("agent exited with %v; log %s", err, logPath)
	}
	_, lifetime := counts.snapshot()
	return toReady, lifetime
}

// watchVM watches the one VM name in ns.
func watchVM(b *testing.B, ns, name string) watch.Interface {
	b.Helper()
	w, err := e.virt.KubevirtV1().VirtualMachines(ns).Watch(context.Background(), metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		b.Fatal(err)
	}
	return w
}

// agentCmd is the agent binary for prototype testvm outside a Pod, acting
// for pod, with the state directory stateDir, talking to the API server of
// kubeconfig, not yet started, with its output going to the returned log
// path; closeLog closes that file.
func agentCmd(b *testing.B, kubeconfig, ns string, pod *corev1.Pod, stateDir string, pin ...string) (cmd *exec.Cmd, logPath string, closeLog func()) {
	b.Helper()
	logPath = filepath.Join(b.TempDir(), "agent.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		b.Fatal(err)
	}
	cmd = exec.Command(e.binary, "agent", "testvm", "--hostname-override", pod.Name,
		"--kubeconfig", kubeconfig, "-n", ns, "--probe-address", "127.0.0.1:0", "--state-dir", stateDir)
	cmd.Env = append(os.Environ(), "POD_NAMESPACE="+ns, "POD_UID="+string(pod.UID), "NODE_NAME="+pod.Spec.NodeName)
	if len(pin) == 2 {
		cmd.Args = append(cmd.Args, pin[0])
		cmd.Env = append(cmd.Env, pin[1])
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	return cmd, logPath, func() { _ = logFile.Close() }
}

// pinnedAgent scaffolds a Deployment of no Pods for prototype testvm, which
// writes its revision store, and returns the agent's flag and environment
// variable that pin the revision its template names, as the downward API
// passes it to the agents of that template.
func pinnedAgent(b testing.TB, ns string) []string {
	b.Helper()
	deploy(b, ns, scaffold.KindDeployment, "testvm", "--replicas", "0", "--admission-policy=false")
	name := scaffold.DefaultName("testvm")
	d, err := e.kube.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	hash := d.Spec.Template.Annotations[contract.AnnotationVMRevision]
	if hash == "" {
		b.Fatalf("scaffold's template pins no VM revision: %v", d.Spec.Template.Annotations)
	}
	return []string{"--" + contract.FlagVMRevisions + "=" + revision.StoreName(name), contract.EnvVMRevision + "=" + hash}
}

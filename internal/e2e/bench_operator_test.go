//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"kubevirt.io/client-go/kubevirt"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
)

// BenchmarkStatusAndGC measures the operator commands at scale: it creates
// VMCTL_BENCH_VMS (default 10000) agent Pods and their derived VMs straight
// through the API, times `kubectl get vm` against `kubectl vmctl status`,
// counts the requests status makes, then deletes a tenth of the Pods and times
// and counts `kubectl vmctl gc`, which must delete exactly those VMs.
// VMCTL_BENCH_BASELINE=old/kubectl-vmctl[:other/kubectl-vmctl] also times those builds' status.
func BenchmarkStatusAndGC(b *testing.B) {
	n := 10000
	if s := os.Getenv("VMCTL_BENCH_VMS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 10 {
			b.Fatalf("VMCTL_BENCH_VMS=%q: want a number ≥ 10", s)
		}
		n = v
	}
	orphans := n / 10
	ctx := context.Background()
	ns := namespace(b)
	proto := createPrototype(b, ns, "testvm.yaml")

	cfg := rest.CopyConfig(e.cluster.RESTConfig)
	cfg.QPS, cfg.Burst = 2000, 4000
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	virt, err := kubevirt.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}

	t0 := time.Now()
	parallel(b, n, func(i int) error {
		// Agent-labelled, so status shows them, but held by a scheduling
		// gate: never bound to a node, so neither the scheduler, kwok nor the
		// kubelet double (which runs only bound agent Pods) acts on them.
		pod, err := kube.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name:   fmt.Sprintf("p-%05d", i),
				Labels: map[string]string{scaffold.LabelName: scaffold.AppName, scaffold.LabelComponent: scaffold.ComponentAgent},
			},
			Spec: corev1.PodSpec{
				SchedulingGates: []corev1.PodSchedulingGate{{Name: "vmctl.bench/hold"}},
				Containers:      []corev1.Container{{Name: "agent", Image: "none"}},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create pod %d: %w", i, err)
		}
		vm, err := derive.VM(proto, derive.Pod{Name: pod.Name, Namespace: ns, UID: pod.UID, Node: e.cluster.Nodes[i%len(e.cluster.Nodes)]}, derive.Options{})
		if err != nil {
			return err
		}
		// No ownerReference: the garbage collector would otherwise delete
		// the VMs of the Pods this benchmark deletes, leaving gc nothing.
		vm.OwnerReferences = nil
		if _, err := virt.KubevirtV1().VirtualMachines(ns).Create(ctx, vm, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create vm %d: %w", i, err)
		}
		return nil
	})
	created := time.Since(t0)
	fmt.Printf("status/gc: created %d pods + %d VMs in %s\n", n, n, created.Round(time.Millisecond))

	// KubeVirt's virt-controller starts a VMI per VM; measure the settled
	// state, but accept an unsettled one rather than fail on a slow machine.
	t1 := time.Now()
	var vmis int
	err = wait.PollUntilContextTimeout(ctx, time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := virt.KubevirtV1().VirtualMachineInstances(ns).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return false, err
		}
		vmis = len(list.Items)
		return vmis >= n, nil
	})
	fmt.Printf("status/gc: %d VMIs after %s more (settled: %v)\n", vmis, time.Since(t1).Round(time.Millisecond), err == nil)

	proxy, counts := countingProxy(b)
	proxyKubeconfig := filepath.Join(b.TempDir(), "proxy.kubeconfig")
	writeProxyKubeconfig(b, proxyKubeconfig, proxy.URL, ns)

	get := timeRuns(b, 3, e.cluster.Kubeconfig, "kubectl", "get", "vm", "-n", ns)
	status := timeRuns(b, 3, e.cluster.Kubeconfig, e.binary, "status", "-n", ns)
	// VMCTL_BENCH_BASELINE names other kubectl-vmctl builds (say, of main),
	// separated like PATH, to time on the same VMs, interleaved with this
	// one, for an A/B comparison.
	if list := os.Getenv("VMCTL_BENCH_BASELINE"); list != "" {
		bases := filepath.SplitList(list)
		baseRuns := make([][]time.Duration, len(bases))
		for range 3 {
			for i, base := range bases {
				baseRuns[i] = append(baseRuns[i], timeRuns(b, 1, e.cluster.Kubeconfig, base, "status", "-n", ns)...)
			}
			status = append(status, timeRuns(b, 1, e.cluster.Kubeconfig, e.binary, "status", "-n", ns)...)
		}
		for i, base := range bases {
			fmt.Printf("status/gc: baseline %s: status min %s p50 %s (%d runs)\n", base, minDur(baseRuns[i]), median(baseRuns[i]), len(baseRuns[i]))
		}
		fmt.Printf("status/gc: this build: status min %s p50 %s (%d runs)\n", minDur(status), median(status), len(status))
	}
	counts.reset()
	out := mustRun(b, proxyKubeconfig, e.binary, "status", "-n", ns)
	statusReqs, statusTotal := counts.snapshot()
	if rows := strings.Count(out, "\n") - 1; rows < n {
		b.Errorf("status printed %d rows, want at least %d", rows, n)
	}

	// Orphan the first tenth of the VMs.
	parallel(b, orphans, func(i int) error {
		return kube.CoreV1().Pods(ns).Delete(ctx, fmt.Sprintf("p-%05d", i), metav1.DeleteOptions{})
	})
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(list.Items) == n-orphans, err
	})
	if err != nil {
		b.Fatalf("%d pods gone: %v", orphans, err)
	}

	counts.reset()
	t2 := time.Now()
	mustRun(b, proxyKubeconfig, e.binary, "gc", "-n", ns, "--min-age", "0s")
	gcTime := time.Since(t2)
	gcReqs, gcTotal := counts.snapshot()
	if got := gcReqs["DELETE virtualmachines"]; got != orphans {
		b.Errorf("gc sent %d VM deletions, want %d", got, orphans)
	}
	remaining := map[string]bool{}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		vms, err := derivedVMs(ctx, ns)
		if err != nil {
			return false, err
		}
		remaining = map[string]bool{}
		for name := range vms {
			remaining[name] = true
		}
		return len(vms) == n-orphans, nil
	})
	if err != nil {
		b.Errorf("%d derived VMs remain after gc, want %d: %v", len(remaining), n-orphans, err)
	}
	for i := range n {
		name := derive.Name(proto.Name, fmt.Sprintf("p-%05d", i))
		if orphan := i < orphans; orphan == remaining[name] {
			b.Errorf("VM %s: orphan %v, remains %v", name, orphan, remaining[name])
			break
		}
	}

	getMed, statusMed := median(get), median(status)
	ratio := statusMed.Seconds() / getMed.Seconds()
	b.ReportMetric(float64(n), "vms")
	b.ReportMetric(float64(getMed.Milliseconds()), "get-p50-ms")
	b.ReportMetric(float64(statusMed.Milliseconds()), "status-p50-ms")
	b.ReportMetric(ratio, "status/get")
	b.ReportMetric(float64(statusTotal), "status-requests")
	b.ReportMetric(float64(gcTime.Milliseconds()), "gc-ms")
	b.ReportMetric(float64(gcTotal), "gc-requests")
	fmt.Printf("status/gc: n=%d: kubectl get vm min %s p50 %s; vmctl status min %s p50 %s; status/get %.2fx (target ≤ 1.5x); "+
		"status requests %d %v; gc of %d orphans %s, requests %d %v\n",
		n, minDur(get), getMed, minDur(status), statusMed, ratio, statusTotal, statusReqs,
		orphans, gcTime.Round(time.Millisecond), gcTotal, gcReqs)
}

// parallel runs f(0..n-1) on 16 workers and fails b on the first error.
func parallel(b *testing.B, n int, f func(i int) error) {
	b.Helper()
	next := make(chan int)
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := range next {
				if err := f(i); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
}

// requestCounts counts API requests by method and resource.
type requestCounts struct {
	mu sync.Mutex
	m  map[string]int
}

func (c *requestCounts) add(r *http.Request) {
	key := r.Method + " " + resource(r.URL.Path)
	if r.URL.Query().Get("watch") == "true" {
		key = "WATCH " + resource(r.URL.Path)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[key]++
}

func (c *requestCounts) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m = map[string]int{}
}

func (c *requestCounts) snapshot() (map[string]int, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m, total := map[string]int{}, 0
	for k, v := range c.m {
		m[k] = v
		total += v
	}
	return m, total
}

// resource is the resource of an API path (the segment after the namespace
// name, else the last segment), or the path itself for discovery.
func resource(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for i, p := range parts {
		if p == "namespaces" && i+2 < len(parts) {
			return parts[i+2]
		}
	}
	if parts[0] == "api" && len(parts) >= 3 || parts[0] == "apis" && len(parts) >= 4 {
		return parts[len(parts)-1]
	}
	return path
}

// countingProxy is a TLS reverse proxy on loopback in front of the API server
// that forwards as the cluster admin and counts what it forwards.
func countingProxy(b *testing.B) (*httptest.Server, *requestCounts) {
	b.Helper()
	target, err := url.Parse(e.cluster.RESTConfig.Host)
	if err != nil {
		b.Fatal(err)
	}
	transport, err := rest.TransportFor(e.cluster.RESTConfig)
	if err != nil {
		b.Fatal(err)
	}
	counts := &requestCounts{m: map[string]int{}}
	proxy := &httputil.ReverseProxy{
		Rewrite:   func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport: transport,
	}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		counts.add(r)
		proxy.ServeHTTP(w, r)
	}))
	b.Cleanup(srv.Close)
	return srv, counts
}

func writeProxyKubeconfig(b *testing.B, path, server, ns string) {
	b.Helper()
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: proxy
  cluster:
    server: %s
    insecure-skip-tls-verify: true
users:
- name: anyone
  user: {}
contexts:
- name: proxy
  context: {cluster: proxy, user: anyone, namespace: %s}
current-context: proxy
`, server, ns)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		b.Fatal(err)
	}
}

// timeRuns runs name args runs times and returns each wall time.
func timeRuns(b *testing.B, runs int, kubeconfig, name string, args ...string) []time.Duration {
	b.Helper()
	var d []time.Duration
	for range runs {
		t0 := time.Now()
		mustRun(b, kubeconfig, name, args...)
		d = append(d, time.Since(t0))
	}
	return d
}

// mustRun runs name args with kubeconfig and returns stdout; failure fails b.
func mustRun(b *testing.B, kubeconfig, name string, args ...string) string {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "NO_COLOR=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		b.Fatalf("%s %s: %v: %s", filepath.Base(name), strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2].Round(time.Millisecond)
}

func minDur(d []time.Duration) time.Duration {
	m := d[0]
	for _, x := range d[1:] {
		m = min(m, x)
	}
	return m.Round(time.Millisecond)
}

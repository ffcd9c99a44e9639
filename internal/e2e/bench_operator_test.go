//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/pager"
	"k8s.io/client-go/util/workqueue"
	"kubevirt.io/client-go/kubevirt"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	vmkube "github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/status"
)

// BenchmarkStatusAndGC measures the operator commands at scale: it creates
// VMCTL_BENCH_VMS (default 10000) agent Pods and their derived VMs straight
// through the API, plus nine tenths as many VMs vmctl does not manage, times
// `kubectl get vm` and measures wall time and peak memory (max RSS) of
// `kubectl vmctl status`, `diff` and `status --watch` (to its first table),
// counts the requests status and diff make, then deletes a tenth of the Pods
// while `status --watch` follows (counting its tables and CPU time), times
// status over those orphans, and times and counts `kubectl vmctl gc`, which
// must delete exactly those VMs.
// VMCTL_BENCH_BASELINE=old/kubectl-vmctl[:other/kubectl-vmctl] measures those
// builds the same way, interleaved with this one.
func BenchmarkStatusAndGC(b *testing.B) {
	n := 10000
	if s := os.Getenv("VMCTL_BENCH_VMS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 10 {
			b.Fatalf("VMCTL_BENCH_VMS=%q: want a number ≥ 10", s)
		}
		n = v
	}
	orphans, unmanaged := n/10, n*9/10
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
				Labels: map[string]string{contract.LabelName: contract.AppName, contract.LabelComponent: contract.ComponentAgent},
			},
			Spec: corev1.PodSpec{
				SchedulingGates: []corev1.PodSchedulingGate{{Name: "vmctl.bench/hold"}},
				Containers:      []corev1.Container{{Name: "agent", Image: "none", Args: []string{proto.Name}}},
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
	// VMs vmctl does not manage, in the same namespace: halted copies of the
	// prototype under other names, as a team's own VMs would be.
	parallel(b, unmanaged, func(i int) error {
		vm := proto.DeepCopy()
		vm.ObjectMeta = metav1.ObjectMeta{Name: fmt.Sprintf("other-%05d", i), Labels: map[string]string{"app": "other"}}
		if _, err := virt.KubevirtV1().VirtualMachines(ns).Create(ctx, vm, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create unmanaged vm %d: %w", i, err)
		}
		return nil
	})
	created := time.Since(t0)
	fmt.Printf("status/gc: created %d pods + %d derived VMs + %d other VMs in %s\n", n, n, unmanaged, created.Round(time.Millisecond))

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

	// This build first, then VMCTL_BENCH_BASELINE's (say, of main),
	// separated like PATH, measured on the same VMs, interleaved.
	builds := append([]string{e.binary}, filepath.SplitList(os.Getenv("VMCTL_BENCH_BASELINE"))...)
	type figures struct{ status, diff, watch, orphaned runs }
	got := make([]figures, len(builds))
	var get runs
	for range 3 {
		get.add(measure(b, e.cluster.Kubeconfig, []int{0}, "kubectl", "get", "vm", "-n", ns))
		for i, bin := range builds {
			got[i].status.add(measure(b, e.cluster.Kubeconfig, []int{0}, bin, "status", "-n", ns))
			got[i].diff.add(measure(b, e.cluster.Kubeconfig, []int{0, 1}, bin, "diff", "-n", ns))
			got[i].watch.add(firstTable(b, bin, n, "status", "-n", ns, "--watch"))
		}
	}

	counts.reset()
	out := mustRun(b, proxyKubeconfig, e.binary, "status", "-n", ns)
	statusReqs, statusTotal := counts.snapshot()
	if rows := strings.Count(out, "\n") - 1; rows != n {
		b.Errorf("status printed %d rows, want %d", rows, n)
	}
	counts.reset()
	measure(b, proxyKubeconfig, []int{0, 1}, e.binary, "diff", "-n", ns)
	diffReqs, diffTotal := counts.snapshot()

	// What MaxByName weighs: Pods read by name, as many at once as Load
	// reads, against one LIST of the namespace's every Pod.
	byName, whole, wholePods := timeLookups(b, kube, ns, vmkube.MaxByName)

	// Orphan the first tenth of the VMs while each build's status --watch
	// follows, counting the tables it prints.
	watchers := make([]*watcher, len(builds))
	for i, bin := range builds {
		watchers[i] = startWatcher(b, bin, n, "status", "-n", ns, "--watch")
	}
	t3 := time.Now()
	for _, w := range watchers {
		w.mark()
	}
	parallel(b, orphans, func(i int) error {
		return kube.CoreV1().Pods(ns).Delete(ctx, fmt.Sprintf("p-%05d", i), metav1.DeleteOptions{})
	})
	// Agent Pods only: virt-controller runs a launcher Pod per VMI here too.
	var left []corev1.Pod
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: agentSelector})
		if err != nil {
			return false, err
		}
		left = list.Items
		return len(left) == n-orphans, nil
	})
	if err != nil {
		b.Fatalf("%d of %d agent Pods gone, want %d (first left: %s, deleting since %v, finalizers %v): %v",
			n-len(left), n, orphans, left[0].Name, left[0].DeletionTimestamp, left[0].Finalizers, err)
	}
	churn := time.Since(t3)
	watched := make([]watchFigures, len(builds))
	for i, w := range watchers {
		watched[i] = w.stopWhen(b, func(last string) bool { return strings.Count(last, status.ProblemPodGone) == orphans }, time.Minute)
	}
	for range 3 {
		for i, bin := range builds {
			got[i].orphaned.add(measure(b, e.cluster.Kubeconfig, []int{0}, bin, "status", "-n", ns))
		}
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
		name := shortVMName(proto.Name, fmt.Sprintf("p-%05d", i))
		if orphan := i < orphans; orphan == remaining[name] {
			b.Errorf("VM %s: orphan %v, remains %v", name, orphan, remaining[name])
			break
		}
	}

	this := got[0]
	ratio := this.status.p50().Seconds() / get.p50().Seconds()
	b.ReportMetric(float64(n), "vms")
	b.ReportMetric(float64(get.p50().Milliseconds()), "get-p50-ms")
	b.ReportMetric(float64(this.status.p50().Milliseconds()), "status-p50-ms")
	b.ReportMetric(float64(this.status.maxRSS()>>10), "status-maxrss-MiB")
	b.ReportMetric(float64(this.diff.p50().Milliseconds()), "diff-p50-ms")
	b.ReportMetric(float64(this.diff.maxRSS()>>10), "diff-maxrss-MiB")
	b.ReportMetric(ratio, "status/get")
	b.ReportMetric(float64(statusTotal), "status-requests")
	b.ReportMetric(float64(gcTime.Milliseconds()), "gc-ms")
	b.ReportMetric(float64(gcTotal), "gc-requests")
	fmt.Printf("status/gc: n=%d (+%d other VMs): kubectl get vm %s\n", n, unmanaged, get)
	for i, bin := range builds {
		name := "this build"
		if i > 0 {
			name = "baseline " + bin
		}
		f := got[i]
		fmt.Printf("status/gc: %s: status %s; diff %s; status --watch to its first table %s; status with %d orphans %s; "+
			"status --watch while %d Pods went (%s): %s\n",
			name, f.status, f.diff, f.watch, orphans, f.orphaned, orphans, churn.Round(time.Millisecond), watched[i])
	}
	fmt.Printf("status/gc: this build: status/get %.2fx; status requests %d %v; diff requests %d %v\n",
		ratio, statusTotal, statusReqs, diffTotal, diffReqs)
	fmt.Printf("status/gc: %d Pods read by name, 8 at a time: %s; one LIST of the namespace's %d Pods: %s\n",
		vmkube.MaxByName, byName.Round(time.Millisecond), wholePods, whole.Round(time.Millisecond))
	fmt.Printf("status/gc: gc of %d orphans %s, requests %d %v\n", orphans, gcTime.Round(time.Millisecond), gcTotal, gcReqs)
}

// timing is one measured run of a command: its wall time and peak memory.
type timing struct {
	wall   time.Duration
	maxRSS int64 // KiB
}

// runs are the timings of one command.
type runs []timing

func (r *runs) add(x timing) { *r = append(*r, x) }

func (r runs) p50() time.Duration {
	d := make([]time.Duration, len(r))
	for i, x := range r {
		d[i] = x.wall
	}
	return median(d)
}

func (r runs) min() time.Duration {
	d := make([]time.Duration, len(r))
	for i, x := range r {
		d[i] = x.wall
	}
	return minDur(d)
}

// maxRSS is the largest peak memory of the runs, in KiB.
func (r runs) maxRSS() int64 {
	var m int64
	for _, x := range r {
		m = max(m, x.maxRSS)
	}
	return m
}

func (r runs) String() string {
	return fmt.Sprintf("min %s p50 %s max RSS %d MiB (%d runs)", r.min(), r.p50(), r.maxRSS()>>10, len(r))
}

// timed is name args prepared to run under GNU time (Debian's time
// package), in a process group of its own. Go's own rusage of a child is of
// no use here: a child started with vfork, as os/exec starts it, counts the
// parent's memory as its own; GNU time forks a small process of its own.
// usage reads the command's peak memory (KiB) and CPU time once it ended.
func timed(b *testing.B, kubeconfig, name string, args ...string) (cmd *exec.Cmd, usage func() (int64, time.Duration)) {
	b.Helper()
	gnuTime, err := exec.LookPath("time")
	if err != nil {
		b.Fatalf("GNU time measures memory: apt-get install time (%v)", err)
	}
	report := filepath.Join(b.TempDir(), "usage")
	cmd = exec.Command(gnuTime, append([]string{"-q", "-f", "%M %U %S", "-o", report, name}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "NO_COLOR=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd, func() (int64, time.Duration) {
		raw, err := os.ReadFile(report)
		if err != nil {
			b.Fatal(err)
		}
		var kib int64
		var user, sys float64
		if _, err := fmt.Sscan(string(raw), &kib, &user, &sys); err != nil {
			b.Fatalf("GNU time's report %q: %v", raw, err)
		}
		return kib, time.Duration((user + sys) * float64(time.Second))
	}
}

// measure runs name args with kubeconfig and returns its wall time and peak
// memory; an exit code not in codes fails b.
func measure(b *testing.B, kubeconfig string, codes []int, name string, args ...string) timing {
	b.Helper()
	cmd, usage := timed(b, kubeconfig, name, args...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	t0 := time.Now()
	err := cmd.Run()
	wall := time.Since(t0)
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) || !slices.Contains(codes, cmd.ProcessState.ExitCode()) {
		b.Fatalf("%s %s: %v: %s", filepath.Base(name), strings.Join(args, " "), err, stderr.String())
	}
	rss, _ := usage()
	return timing{wall: wall, maxRSS: rss}
}

// watcher is a running `status --watch` whose tables are counted.
type watcher struct {
	cmd    *exec.Cmd
	usage  func() (int64, time.Duration)
	out    *syncBuffer
	stderr bytes.Buffer
	rows   int
	start  time.Time
	done   chan struct{}

	// from and before are when counting began and how many tables were
	// printed by then (see mark).
	from   time.Time
	before int
}

// watchFigures are what a watcher printed since mark, and its whole cost.
type watchFigures struct {
	tables  int
	elapsed time.Duration
	cpu     time.Duration // whole run
	maxRSS  int64         // KiB, whole run
	settled bool
}

func (w watchFigures) String() string {
	return fmt.Sprintf("%d more tables in %s (settled: %v), CPU %s and max RSS %d MiB in all",
		w.tables, w.elapsed.Round(time.Millisecond), w.settled, w.cpu.Round(time.Millisecond), w.maxRSS>>10)
}

// tables counts the tables printed so far.
func (w *watcher) tables() int { return strings.Count(w.out.String(), "POD ") }

// mark starts counting tables and time from now.
func (w *watcher) mark() { w.from, w.before = time.Now(), w.tables() }

// startWatcher starts name args (a status --watch, piped) and waits for its
// first table of at least rows rows.
func startWatcher(b *testing.B, name string, rows int, args ...string) *watcher {
	b.Helper()
	w := &watcher{out: &syncBuffer{}, rows: rows, done: make(chan struct{})}
	w.cmd, w.usage = timed(b, e.cluster.Kubeconfig, name, args...)
	w.cmd.Stdout, w.cmd.Stderr = w.out, &w.stderr
	w.start = time.Now()
	if err := w.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	go func() {
		_ = w.cmd.Wait()
		close(w.done)
	}()
	b.Cleanup(func() {
		_ = syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
		<-w.done
	})
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 5*time.Minute, true, func(context.Context) (bool, error) {
		select {
		case <-w.done:
			return false, fmt.Errorf("exited: %s", w.stderr.String())
		default:
		}
		return strings.Count(w.out.String(), "\n") > rows, nil
	})
	if err != nil {
		b.Fatalf("%s %s: no first table: %v", filepath.Base(name), strings.Join(args, " "), err)
	}
	w.mark()
	return w
}

// stopWhen waits until the last table, printed in full, satisfies settled,
// or timeout, then stops the watcher and returns its figures since mark.
func (w *watcher) stopWhen(b *testing.B, settled func(last string) bool, timeout time.Duration) watchFigures {
	b.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		s := w.out.String()
		last := s[max(0, strings.LastIndex(s, "POD ")):]
		return strings.Count(last, "\n") > w.rows && settled(last), nil
	})
	f := watchFigures{tables: w.tables() - w.before, elapsed: time.Since(w.from), settled: err == nil}
	// SIGINT to the process group: the command stops, and GNU time, which
	// ignores SIGINT while it waits, writes its report.
	_ = syscall.Kill(-w.cmd.Process.Pid, syscall.SIGINT)
	<-w.done
	f.maxRSS, f.cpu = w.usage()
	return f
}

// firstTable measures a status --watch until its first table of rows rows:
// wall time and peak memory.
func firstTable(b *testing.B, name string, rows int, args ...string) timing {
	b.Helper()
	w := startWatcher(b, name, rows, args...)
	wall := time.Since(w.start)
	f := w.stopWhen(b, func(string) bool { return true }, 0)
	return timing{wall: wall, maxRSS: f.maxRSS}
}

// timeLookups times what kube.MaxByName weighs: reading n Pods of ns by
// name (one LIST narrowed to metadata.name each, 8 at a time, as Load
// does) against one paged LIST of every Pod of ns, agents' or not, of which
// it returns the count.
func timeLookups(b *testing.B, kube kubernetes.Interface, ns string, n int) (byName, whole time.Duration, pods int) {
	b.Helper()
	ctx := context.Background()
	t0 := time.Now()
	errs := make([]error, n)
	workqueue.ParallelizeUntil(ctx, 8, n, func(i int) {
		_, errs[i] = kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + fmt.Sprintf("p-%05d", i)})
	})
	byName = time.Since(t0)
	if err := errors.Join(errs...); err != nil {
		b.Fatal(err)
	}
	t0 = time.Now()
	p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return kube.CoreV1().Pods(ns).List(ctx, opts)
	})
	if err := p.EachListItem(ctx, metav1.ListOptions{}, func(runtime.Object) error { pods++; return nil }); err != nil {
		b.Fatal(err)
	}
	return byName, time.Since(t0), pods
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

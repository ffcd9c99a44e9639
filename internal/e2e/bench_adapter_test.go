//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/metrics/pkg/apis/custom_metrics/v1beta2"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"kubevirt.io/client-go/kubevirt"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/metricsadapter"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/metricsserver"
)

// adapterAsks is how many times BenchmarkMetricsAdapter asks for the
// metric of every Pod, as an HPA's sync does.
const adapterAsks = 30

// BenchmarkMetricsAdapter measures vmctl-metrics-adapter at VMCTL_FLEET
// (default 1000) agent Pods: the time of the question an HPA's sync asks,
// the guests' CPU of every Pod of the fleet, through kube-apiserver's
// aggregator as the HPA controller asks it, p50 and p95 over adapterAsks,
// each beside the LIST of metrics-server's PodMetrics it costs, asked the
// same way; the adapter's memory, and metrics-server's; and the API
// requests it makes per question, from the audit log (its ServiceAccount
// names it). It asks once the machine is quiet (waitQuiet). With
// VMCTL_BENCH_PROFILE set, it profiles the adapter (profileAdapter).
//
// The agent Pods are held by a scheduling gate, as in
// BenchmarkStatusAndGC: the adapter reads only their labels. Their VMIs
// are made straight through the API, each with the agent Pod's label and a
// simulated CPU use, so that KubeVirt's virt-controller makes their
// launcher Pods, kwok runs them and reports their CPU, and metrics-server
// scrapes it: everything the adapter reads is what a fleet's would be.
func BenchmarkMetricsAdapter(b *testing.B) {
	n := envInt(b, "VMCTL_FLEET", 1000)
	for range b.N {
		benchMetricsAdapter(b, n)
	}
}

func benchMetricsAdapter(b *testing.B, n int) {
	ctx := context.Background()
	addFleetNodes(b)
	ms, err := metricsserver.Start(ctx, e.cluster, metricsserver.Options{Log: os.Stderr})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := ms.Stop(); err != nil {
			b.Error(err)
		}
	})
	ns := namespace(b)
	proto := createPrototype(b, ns, "testvm.yaml")

	cfg := rest.CopyConfig(e.cluster.RESTConfig)
	cfg.QPS, cfg.Burst = 500, 1000
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
		pod, err := kube.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name:   fmt.Sprintf("p-%04d", i),
				Labels: map[string]string{contract.LabelName: contract.AppName, contract.LabelComponent: contract.ComponentAgent, contract.LabelAgentPrototype: proto.Name},
			},
			Spec: corev1.PodSpec{
				SchedulingGates: []corev1.PodSchedulingGate{{Name: "vmctl.bench/hold"}},
				Containers:      []corev1.Container{{Name: "agent", Image: "none", Args: []string{proto.Name}}},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create pod %d: %w", i, err)
		}
		vmi := &kubevirtv1.VirtualMachineInstance{
			ObjectMeta: metav1.ObjectMeta{
				Name:        proto.Name + "-" + pod.Name,
				Labels:      map[string]string{contract.LabelPod: pod.Name},
				Annotations: map[string]string{usageCPU: fmt.Sprintf("%dm", 100+i%800)},
			},
			Spec: *proto.Spec.Template.Spec.DeepCopy(),
		}
		if _, err := virt.KubevirtV1().VirtualMachineInstances(ns).Create(ctx, vmi, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create vmi %d: %w", i, err)
		}
		return nil
	})
	fmt.Printf("metrics adapter: %d agent Pods and their VMIs made in %s\n", n, time.Since(t0).Round(time.Millisecond))

	adapter := startMetricsAdapter(b, ns)
	selector := contract.LabelAgentPrototype + "=" + proto.Name
	var values int
	eventually(b, 15*time.Minute, fmt.Sprintf("the adapter to have a value for each of %d Pods", n), func(ctx context.Context) (bool, string, error) {
		raw, err := customMetric(ctx, e.kube, ns, selector, contract.MetricVMCPUUsage)
		if err != nil {
			return false, err.Error(), nil
		}
		var list v1beta2.MetricValueList
		if err := json.Unmarshal(raw, &list); err != nil {
			return false, "", err
		}
		values = len(list.Items)
		return values == n, fmt.Sprintf("%d values", values), nil
	})
	fmt.Printf("metrics adapter: a value for each of %d Pods %s after they were made\n", n, time.Since(t0).Round(time.Second))
	anon0, rss0 := memory(b, adapter.Process().Pid())

	// Asked as the HPA controller asks: not as an admin, whom the
	// adapter's delegated authorization lets through unasked.
	hpaCfg := rest.CopyConfig(e.cluster.RESTConfig)
	hpaCfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:kube-system:horizontal-pod-autoscaler"}
	hpaController, err := kubernetes.NewForConfig(hpaCfg)
	if err != nil {
		b.Fatal(err)
	}
	waitQuiet(b, quietLoad, 5*time.Minute)
	fmt.Printf("metrics adapter: load average before the questions: %s\n", loadAverage())
	stopProfile := profileAdapter(b, adapter)
	mark := auditMark(b)
	// Each question is asked beside the LIST it costs the adapter, of
	// every launcher's PodMetrics, asked of metrics-server the same way:
	// what the adapter adds is the difference.
	podMetrics := "/apis/metrics.k8s.io/v1beta1/namespaces/" + ns + "/pods"
	var took, bare []time.Duration
	for range adapterAsks {
		start := time.Now()
		raw, err := customMetric(ctx, hpaController, ns, selector, contract.MetricVMCPUUtilization)
		took = append(took, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
		if got := strings.Count(string(raw), `"describedObject"`); got != n {
			b.Fatalf("the adapter answered %d values, want %d", got, n)
		}
		start = time.Now()
		raw, err = hpaController.Discovery().RESTClient().Get().AbsPath(podMetrics).DoRaw(ctx)
		bare = append(bare, time.Since(start))
		if err != nil {
			b.Fatalf("list the launchers' PodMetrics: %v", err)
		}
		if got := strings.Count(string(raw), `"containers"`); got != n {
			b.Fatalf("metrics-server answered %d PodMetrics, want %d", got, n)
		}
	}
	stopProfile()
	anon1, rss1 := memory(b, adapter.Process().Pid())
	msAnon, msRSS := memory(b, ms.Process().Pid())
	report(b, "adapter-metric-of-fleet", took)
	report(b, "metrics-server-podmetrics-of-fleet", bare)
	fmt.Printf("metrics adapter: the metric of %d Pods through the aggregator, %d questions: min %s p50 %s p95 %s max %s\n",
		n, adapterAsks, pct(took, 0), pct(took, 50), pct(took, 95), pct(took, 100))
	fmt.Printf("metrics adapter: beside each, metrics-server's %d PodMetrics through the aggregator: min %s p50 %s p95 %s max %s\n",
		n, pct(bare, 0), pct(bare, 50), pct(bare, 95), pct(bare, 100))
	fmt.Printf("metrics adapter: load average after the questions: %s\n", loadAverage())
	fmt.Printf("metrics adapter: memory with %d Pods: RssAnon %.1f MiB, VmRSS %.1f MiB before the questions; RssAnon %.1f MiB, VmRSS %.1f MiB after\n",
		n, mib(anon0), mib(rss0), mib(anon1), mib(rss1))
	fmt.Printf("metrics adapter: metrics-server's memory then: RssAnon %.1f MiB, VmRSS %.1f MiB\n", mib(msAnon), mib(msRSS))

	events, err := e.cluster.ReadAudit()
	if err != nil {
		b.Fatal(err)
	}
	user := "system:serviceaccount:" + ns + ":" + scaffold.AdapterName
	byRequest := map[string]int{}
	total := 0
	for _, ev := range events[mark:] {
		if ev.User.Username != user {
			continue
		}
		total++
		byRequest[auditRequest(ev)]++
	}
	fmt.Printf("metrics adapter: its API requests over %d questions: %d (%.2f a question): %v\n",
		adapterAsks, total, float64(total)/adapterAsks, byRequest)
	if p50 := pct(took, 50); p50 > 100*time.Millisecond {
		b.Errorf("the metric of %d Pods took p50 %s, more than 100 ms", n, p50)
	}
	if mib(rss1) > 64 {
		b.Errorf("the adapter's VmRSS is %.1f MiB with %d Pods, more than 64 MiB", mib(rss1), n)
	}
}

// quietLoad is the load average BenchmarkMetricsAdapter waits for before
// it asks: making 1,000 VMIs keeps virt-controller, kwok and the API
// server busy for minutes after every value is in, and the questions
// would time that.
const quietLoad = 2.5

// waitQuiet waits until the machine's one-minute load average is at most
// load, or for at most limit, and says which came first.
func waitQuiet(b *testing.B, load float64, limit time.Duration) {
	b.Helper()
	start := time.Now()
	for {
		var now float64
		if _, err := fmt.Sscan(loadAverage(), &now); err != nil {
			b.Fatalf("read the load average: %v", err)
		}
		if now <= load {
			fmt.Printf("metrics adapter: load average %.2f after %s of waiting for it to fall to %.1f\n", now, time.Since(start).Round(time.Second), load)
			return
		}
		if time.Since(start) > limit {
			fmt.Printf("metrics adapter: load average still %.2f after %s; asking anyway\n", now, limit)
			return
		}
		time.Sleep(5 * time.Second)
	}
}

// profileAdapter records a CPU profile of the adapter from now on, for
// profileSeconds, and once the returned func is called its heap, into the
// directory $VMCTL_BENCH_PROFILE (cpu.pprof, heap.pprof; go tool pprof
// reads them), when that is set.
func profileAdapter(b *testing.B, a *metricsadapter.Adapter) (stop func()) {
	b.Helper()
	dir := os.Getenv("VMCTL_BENCH_PROFILE")
	if dir == "" {
		return func() {}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	cfg := rest.CopyConfig(e.cluster.RESTConfig)
	cfg.Host = a.URL()
	// The adapter's serving certificate is its own; the admin's client
	// certificate is what it checks.
	cfg.CAData, cfg.CAFile, cfg.Insecure = nil, "", true
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		b.Fatal(err)
	}
	fetch := func(path, file string) error {
		resp, err := client.Get(a.URL() + path)
		if err != nil {
			return err
		}
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("GET %s: %s: %s", path, resp.Status, body)
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, file), body, 0o644)
		}
		return err
	}
	const profileSeconds = 8
	done := make(chan error, 1)
	go func() { done <- fetch(fmt.Sprintf("/debug/pprof/profile?seconds=%d", profileSeconds), "cpu.pprof") }()
	return func() {
		if err := errors.Join(<-done, fetch("/debug/pprof/heap", "heap.pprof")); err != nil {
			b.Errorf("profile the adapter: %v", err)
			return
		}
		fmt.Printf("metrics adapter: a CPU profile of its first %d s of questions, and its heap after, in %s\n", profileSeconds, dir)
	}
}

// auditRequest names what an audited request asked: its verb, the
// resource and, for a resource of another group than the core, the group
// from its URI.
func auditRequest(ev testcluster.AuditEvent) string {
	what := ev.ObjectRef.Resource
	if ev.ObjectRef.Subresource != "" {
		what += "/" + ev.ObjectRef.Subresource
	}
	if rest, ok := strings.CutPrefix(ev.RequestURI, "/apis/"); ok {
		what += "." + strings.SplitN(rest, "/", 2)[0]
	}
	return ev.Verb + " " + what
}

// mib is kibibytes, as /proc says, in mebibytes.
func mib(kib int) float64 { return float64(kib) / 1024 }

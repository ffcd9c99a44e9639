//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
)

// rampBudget is the most requests one agent may make from its start to
// steady state: GET its prototype, POST its VM, POST the Event, one WATCH,
// and room for a reflector's watch renewal (every 5 to 10 minutes) and a
// few retries of a failed step. Requests answered 429 are not counted: an
// overloaded API server paces those itself (up to ten 429s on one create
// were seen at 1,000 agents on a loaded machine). A loop blows it.
const rampBudget = 10

// fleetNodes is the least number of simulated nodes BenchmarkFleet spreads
// its agents over.
const fleetNodes = 50

// BenchmarkFleet runs a fleet of VMCTL_FLEET (default 1000) agent Pods of a
// scaffolded Deployment over at least 50 simulated nodes, each agent a real
// process (the kubelet double), with KubeVirt's real virt-controller
// starting their VMs, and measures:
//   - from `kubectl scale --replicas=N` to N derived VMs and to N Pods Ready,
//     and each agent's start (its first log line) → VM created (its log line
//     for the Created Event), p50 and p99;
//   - the agents' API requests to steady state and over a quiet minute at
//     steady state, from the API server's audit log (a bound token names the
//     Pod that asked), and all the API server's requests meanwhile;
//   - the agents' private memory (RssAnon) and CPU, and the CPU and peak
//     memory of the API server, etcd, the controllers and this test process
//     (the doubles) during the ramp;
//   - a kube-apiserver restart (SIGTERM, 10 s down), then etcd restarted with
//     its history compacted (every watch then gets 410 Gone), each: the
//     agents' requests in the minute after it, the time until every agent's
//     watch is open and every Pod Ready again, and that no VM was created
//     again or lost;
//   - `kubectl scale --replicas=0`: the time until every VM is gone.
//
// Run it with `make bench`, or alone with -bench Fleet; VMCTL_FLEET sizes it.
func BenchmarkFleet(b *testing.B) {
	n := envInt(b, "VMCTL_FLEET", 1000)
	timeout := time.Duration(envInt(b, "VMCTL_FLEET_TIMEOUT_MINUTES", 30)) * time.Minute
	for range b.N {
		addFleetNodes(b)
		ns := namespace(b)
		createPrototype(b, ns, "testvm.yaml")
		deploy(b, ns, scaffold.KindDeployment, "testvm", "--replicas", "0")
		obs := observe(b, ns)
		runFleet(b, ns, n, timeout, obs)
	}
}

func runFleet(b *testing.B, ns string, n int, timeout time.Duration, obs *fleetObserver) {
	ctx := context.Background()
	fmt.Printf("fleet: %d agents over %d nodes; load average before the ramp: %s\n", n, countNodes(b), loadAverage())

	// The ramp.
	mark := auditMark(b)
	procs := clusterProcesses()
	cpu0, _ := procs.usage(b)
	sampler := procs.sample(time.Second)
	reqs0 := countAPIRequests(b)
	t0 := time.Now()
	kubectl(b, nil, "scale", "-n", ns, "deployment/vmctl-testvm", fmt.Sprintf("--replicas=%d", n))
	derivedAfter := obs.waitFor(b, timeout, "derived VMs created", func(s fleetState) (bool, string) {
		return s.created >= n, s.String()
	}).Sub(t0)
	vmisAfter := obs.waitFor(b, timeout, "VMIs created", func(s fleetState) (bool, string) {
		return s.vmis >= n, s.String()
	}).Sub(t0)
	runningAfter := obs.waitFor(b, timeout, "VMIs Running", func(s fleetState) (bool, string) {
		return s.running >= n, s.String()
	}).Sub(t0)
	readyAfter := obs.waitFor(b, timeout, "agent Pods Ready", func(s fleetState) (bool, string) {
		return s.ready >= n, s.String()
	}).Sub(t0)
	ramp := time.Since(t0)
	peaks := sampler.stop(b)
	cpu1, _ := procs.usage(b)
	reqs1 := countAPIRequests(b)
	fmt.Printf("fleet: scale to %d: %d derived VMs created after %s; KubeVirt's virt-controller made their VMIs by %s, Running (the virt-handler stand-in) by %s; %d Pods Ready after %s\n",
		n, n, derivedAfter.Round(time.Millisecond), vmisAfter.Round(time.Millisecond), runningAfter.Round(time.Millisecond), n, readyAfter.Round(time.Millisecond))

	agents := agentProcesses(b, ns)
	starts, restarted := startToCreated(b, ns, agents.started)
	fmt.Printf("fleet: each agent's process start → VM created (its Created log line): p50 %s p99 %s max %s (n=%d; %d agents restarted since, left out)\n",
		pct(starts, 50), pct(starts, 99), pct(starts, 100), len(starts), restarted)
	ramped := agentRequestsSince(b, ns, mark)
	fmt.Printf("fleet: agents' API requests to steady state: %s\n", ramped)
	if most := ramped.unpaced().most(""); most > rampBudget {
		b.Errorf("an agent made %d requests to steady state, more than the budget of %d: a loop", most, rampBudget)
	}
	fmt.Printf("fleet: all API requests during the ramp (apiserver_request_total): %s\n", reqs1.since(reqs0))
	fmt.Printf("fleet: CPU and peak memory during the %s ramp: %s\n", ramp.Round(time.Second), procs.report(cpu0, cpu1, peaks, ramp))

	fmt.Printf("fleet: agents at steady state: %s\n", agents)

	// A quiet minute at steady state.
	mark = auditMark(b)
	reqs0 = countAPIRequests(b)
	time.Sleep(time.Minute)
	quiet := agentRequestsSince(b, ns, mark)
	fmt.Printf("fleet: agents' API requests in a quiet minute: %s; watches on one VM open at its end: %d; all API requests in it: %s\n",
		quiet, openAgentWatches(b), countAPIRequests(b).since(reqs0))
	if other := quiet.total() - quiet.byVerb("virtualmachines")["watch"]; other > 0 {
		b.Errorf("in a quiet minute the agents made %d requests other than watches of their VMs", other)
	}

	// A kube-apiserver restart, then etcd restarted with its history
	// compacted: every agent's watch ends, and opened again from its last
	// version it gets 410 Gone.
	fleetRecovers(b, ns, n, timeout, obs, "kube-apiserver stopped (SIGTERM) and ready again", func() error {
		return e.cluster.RestartAPIServer(ctx, syscall.SIGTERM, apiDown, nil)
	})
	fleetRecovers(b, ns, n, timeout, obs, "etcd restarted with its history compacted", func() error {
		_, err := e.cluster.RestartEtcdCompacted(ctx)
		return err
	})

	// Scale to 0.
	t2 := time.Now()
	kubectl(b, nil, "scale", "-n", ns, "deployment/vmctl-testvm", "--replicas=0")
	// Pods and VMs go in either order: note when each did.
	var gone, podsGone time.Duration
	obs.waitFor(b, timeout, "derived VMs and agent Pods gone", func(s fleetState) (bool, string) {
		if s.vms == 0 && gone == 0 {
			gone = time.Since(t2)
		}
		if s.pods == 0 && podsGone == 0 {
			podsGone = time.Since(t2)
		}
		return gone > 0 && podsGone > 0, s.String()
	})
	left := listVMUIDs(b, ns)
	vmis := countVMIs(b, ns, timeout)
	fmt.Printf("fleet: scale to 0: every VM gone after %s (left: %d), every agent Pod gone after %s, every VMI gone after %s\n",
		gone.Round(time.Millisecond), len(left), podsGone.Round(time.Millisecond), time.Since(t2).Round(time.Millisecond))
	took, failed := shutdowns(b, ns)
	if len(took) > 0 {
		fmt.Printf("fleet: each agent's SIGTERM → VM gone (its Deleted VM line): p50 %s p99 %s max %s (n=%d)\n",
			pct(took, 50), pct(took, 99), pct(took, 100), len(took))
	}
	fmt.Printf("fleet: agents that saw their VM gone: %d; that gave up on it at their shutdown deadline: %d\n", len(took), failed)
	if len(left) > 0 || vmis > 0 {
		b.Errorf("%d derived VMs and %d VMIs left after scaling to 0", len(left), vmis)
	}

	b.ReportMetric(float64(n), "agents")
	b.ReportMetric(derivedAfter.Seconds(), "to-VMs-s")
	b.ReportMetric(readyAfter.Seconds(), "to-Ready-s")
	b.ReportMetric(float64(pct(starts, 50).Milliseconds()), "start→created-p50-ms")
	b.ReportMetric(float64(pct(starts, 99).Milliseconds()), "start→created-p99-ms")
	b.ReportMetric(float64(ramped.total())/float64(n), "requests/agent")
	b.ReportMetric(float64(agents.anonP50)/1024, "agent-RssAnon-MiB")
	b.ReportMetric(gone.Seconds(), "to-0-VMs-s")
}

// fleetRecovers disrupts the fleet's cluster and measures its recovery: the
// time until every agent's watch is open and every Pod Ready again, the
// agents' requests in the budgetWindow after it (issue 15's budget), and
// that no VM was created again, replaced or lost.
func fleetRecovers(b *testing.B, ns string, n int, timeout time.Duration, obs *fleetObserver, what string, disrupt func() error) {
	before := obs.vmUIDs()
	mark := auditMark(b)
	t1 := time.Now()
	if err := disrupt(); err != nil {
		b.Fatalf("%s: %v", what, err)
	}
	up := time.Now()
	watches := waitAgentWatches(b, n, timeout)
	allReady := waitPodsReady(b, ns, n, timeout)
	fmt.Printf("fleet: %s after %s; every agent's watch open again %s later, every Pod Ready %s later (%d Pods went unready meanwhile)\n",
		what, up.Sub(t1).Round(100*time.Millisecond), watches.Round(100*time.Millisecond), max(0, allReady.Sub(up)).Round(100*time.Millisecond), obs.unreadyAfter(t1))
	time.Sleep(time.Until(up.Add(budgetWindow)))
	recovery := agentRequestsSince(b, ns, mark)
	fmt.Printf("fleet: agents' API requests in the %s after it: %s\n", budgetWindow, recovery)
	if back := recovery.watchesOpened(up); len(back) > 0 {
		fmt.Printf("fleet: each agent's last watch (the one that stays open) opened after the API server was ready: p50 %s p99 %s max %s (n=%d; audit log)\n",
			pct(back, 50), pct(back, 99), pct(back, 100), len(back))
	}
	if vms := recovery.byVerb("virtualmachines"); vms["create"] > 0 || vms["delete"] > 0 {
		b.Errorf("%s: agents created %d and deleted %d VMs", what, vms["create"], vms["delete"])
	}
	// What a starting API server answers before it is ready (403 before
	// its RBAC caches are in, 503 before the CRDs' paths are) is its
	// doing: at 1,000 agents some reach it then. The budget counts the
	// rest, 429s included.
	unready := func(ev testcluster.AuditEvent) bool {
		code := ev.ResponseStatus.Code
		return ev.Received.Time.Before(up) && (code == http.StatusForbidden || code == http.StatusServiceUnavailable)
	}
	if early := recovery.filter(unready); early.total() > 0 {
		fmt.Printf("fleet: of those, answered 403 or 503 before the API server was ready: %s\n", early)
	}
	counted := recovery.filter(func(ev testcluster.AuditEvent) bool { return !unready(ev) })
	if most := counted.most("virtualmachines"); most > 1+requestBudget {
		b.Errorf("%s: an agent made %d requests on VMs to recover, beyond its watch %d more than the budget of %d", what, most, most-1, requestBudget)
	}
	after := listVMUIDs(b, ns)
	lost, replaced := compareUIDs(before, after)
	fmt.Printf("fleet: VMs after it: %d, lost %d, replaced %d; names ever seen with more than one UID: %d\n",
		len(after), lost, replaced, obs.twice())
	if lost+replaced > 0 || obs.twice() > 0 {
		b.Errorf("%s: VMs lost %d, replaced %d, derived twice %d", what, lost, replaced, obs.twice())
	}
}

// addFleetNodes adds simulated nodes until there are fleetNodes, until b ends.
func addFleetNodes(b *testing.B) {
	have := len(e.cluster.Nodes)
	if have >= fleetNodes {
		return
	}
	added, err := e.cluster.AddNodes(context.Background(), have, fleetNodes-have)
	b.Cleanup(func() {
		for _, name := range added {
			_ = e.kube.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{})
		}
	})
	if err != nil {
		b.Fatal(err)
	}
}

// envInt reads a positive number from the environment, or def.
func envInt(b *testing.B, name string, def int) int {
	b.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 1 {
		b.Fatalf("%s=%q: want a positive number", name, s)
	}
	return v
}

func countNodes(b *testing.B) int {
	b.Helper()
	nodes, err := e.kube.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	return len(nodes.Items)
}

// loadAverage is the machine's load average over 1, 5 and 15 minutes.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

// apiRequests is the API server's count of the requests it served so far,
// by "VERB resource[/subresource]".
type apiRequests map[string]float64

func countAPIRequests(b *testing.B) apiRequests {
	b.Helper()
	m, err := scrapeAPIServer(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	r := apiRequests{}
	for _, s := range m["apiserver_request_total"] {
		key := s.labels["verb"] + " " + s.labels["resource"]
		if sub := s.labels["subresource"]; sub != "" {
			key += "/" + sub
		}
		r[key] += s.value
	}
	return r
}

// since says how many requests were served after before, in all and the
// kinds most asked for.
func (r apiRequests) since(before apiRequests) string {
	type kind struct {
		key string
		n   float64
	}
	var kinds []kind
	total := 0.0
	for k, v := range r {
		if d := v - before[k]; d > 0 {
			kinds = append(kinds, kind{k, d})
			total += d
		}
	}
	sort.Slice(kinds, func(i, j int) bool { return kinds[i].n > kinds[j].n })
	var top []string
	for _, k := range kinds[:min(len(kinds), 10)] {
		top = append(top, fmt.Sprintf("%s=%.0f", k.key, k.n))
	}
	return fmt.Sprintf("%.0f (most: %s)", total, strings.Join(top, " "))
}

// openAgentWatches is how many agents' watches on their Pods' VMs
// (agentVMWatches) are open now, by the API server's own count.
func openAgentWatches(b *testing.B) int {
	b.Helper()
	m, err := scrapeAPIServer(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	return int(m.sum("apiserver_longrunning_requests", agentVMWatches))
}

// waitAgentWatches waits until want agents' watches on their VMs are open,
// by the API server's own count, and returns how long that took.
func waitAgentWatches(b *testing.B, want int, timeout time.Duration) time.Duration {
	b.Helper()
	start := time.Now()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		m, err := scrapeAPIServer(ctx)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		open := int(m.sum("apiserver_longrunning_requests", agentVMWatches))
		last = fmt.Sprintf("%d open", open)
		return open >= want, nil
	})
	if err != nil {
		b.Fatalf("%d agent watches open: not within %s; last seen: %s", want, timeout, last)
	}
	return time.Since(start)
}

// waitPodsReady waits until n of ns's agent Pods are Ready, by a fresh list
// every half second (what an informer saw before a restart may be stale),
// and returns when it saw that.
func waitPodsReady(b *testing.B, ns string, n int, timeout time.Duration) time.Time {
	b.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		pods, err := agentPods(ctx, ns)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		ready := 0
		for _, p := range pods {
			if podReady(&p) {
				ready++
			}
		}
		last = fmt.Sprintf("%d of %d Ready", ready, len(pods))
		return ready >= n, nil
	})
	if err != nil {
		b.Fatalf("agent Pods Ready: not within %s; last seen: %s", timeout, last)
	}
	return time.Now()
}

// listVMUIDs lists ns's derived VMs: UID by name.
func listVMUIDs(b *testing.B, ns string) map[string]string {
	b.Helper()
	vms, err := derivedVMs(context.Background(), ns)
	if err != nil {
		b.Fatal(err)
	}
	uids := map[string]string{}
	for name, vm := range vms {
		uids[name] = string(vm.UID)
	}
	return uids
}

// compareUIDs counts the VMs of before missing from after, and those with
// another UID.
func compareUIDs(before, after map[string]string) (lost, replaced int) {
	for name, uid := range before {
		switch now, ok := after[name]; {
		case !ok:
			lost++
		case now != uid:
			replaced++
		}
	}
	return lost, replaced
}

// countVMIs waits until ns holds no VMI, or timeout, and returns how many
// are left.
func countVMIs(b *testing.B, ns string, timeout time.Duration) int {
	b.Helper()
	left := 0
	_ = wait.PollUntilContextTimeout(context.Background(), time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		list, err := e.virt.KubevirtV1().VirtualMachineInstances(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		left = len(list.Items)
		return left == 0, nil
	})
	return left
}

// fleetAgentRequests are the requests a namespace's agents made, from the audit
// log: by Pod, each as "verb resource".
type fleetAgentRequests struct {
	byPod map[string][]string
	// failed counts the answers of 400 and above, by code (409 included: an
	// agent that finds its VM there gets it).
	failed map[int]int
	events []testcluster.AuditEvent // the same requests, as logged
}

// filter keeps the requests keep says yes to.
func (r fleetAgentRequests) filter(keep func(testcluster.AuditEvent) bool) fleetAgentRequests {
	out := fleetAgentRequests{byPod: map[string][]string{}, failed: map[int]int{}}
	for _, ev := range r.events {
		if keep(ev) {
			out.add(ev)
		}
	}
	return out
}

// watchesOpened says, for each agent, how long after t its last watch of
// its VM that the server took (200) was asked for: the one that stays open.
func (r fleetAgentRequests) watchesOpened(t time.Time) []time.Duration {
	last := map[string]time.Time{}
	for _, ev := range r.events {
		if ev.Verb == "watch" && ev.ObjectRef.Resource == "virtualmachines" && ev.ResponseStatus.Code == http.StatusOK && ev.Received.After(last[ev.Pod()]) {
			last[ev.Pod()] = ev.Received.Time
		}
	}
	var d []time.Duration
	for _, at := range last {
		d = append(d, max(0, at.Sub(t)))
	}
	return d
}

// unpaced drops the requests answered 429: the server paces those (API
// Priority and Fairness's Retry-After, which client-go waits out).
func (r fleetAgentRequests) unpaced() fleetAgentRequests {
	return r.filter(func(ev testcluster.AuditEvent) bool { return ev.ResponseStatus.Code != 429 })
}

func (r *fleetAgentRequests) add(ev testcluster.AuditEvent) {
	res := ev.ObjectRef.Resource
	if ev.ObjectRef.Subresource != "" {
		res += "/" + ev.ObjectRef.Subresource
	}
	r.byPod[ev.Pod()] = append(r.byPod[ev.Pod()], ev.Verb+" "+res)
	if ev.ResponseStatus.Code >= 400 {
		r.failed[ev.ResponseStatus.Code]++
	}
	r.events = append(r.events, ev)
}

// agentRequestsSince reads the audit log's requests after its first mark
// entries that ns's agents made.
func agentRequestsSince(b *testing.B, ns string, mark int) fleetAgentRequests {
	b.Helper()
	events, err := e.cluster.ReadAudit()
	if err != nil {
		b.Fatal(err)
	}
	r := fleetAgentRequests{byPod: map[string][]string{}, failed: map[int]int{}}
	for _, ev := range events[mark:] {
		if ev.Pod() == "" || !strings.HasPrefix(ev.User.Username, "system:serviceaccount:"+ns+":") {
			continue
		}
		r.add(ev)
	}
	return r
}

func (r fleetAgentRequests) total() int {
	n := 0
	for _, reqs := range r.byPod {
		n += len(reqs)
	}
	return n
}

// byVerb counts the requests on resource by verb.
func (r fleetAgentRequests) byVerb(resource string) map[string]int {
	n := map[string]int{}
	for _, reqs := range r.byPod {
		for _, req := range reqs {
			if verb, res, _ := strings.Cut(req, " "); res == resource {
				n[verb]++
			}
		}
	}
	return n
}

// most is the largest number of requests one agent made on resource (on
// any, when resource is "").
func (r fleetAgentRequests) most(resource string) int {
	m := 0
	for _, reqs := range r.byPod {
		k := 0
		for _, req := range reqs {
			if resource == "" || strings.HasSuffix(req, " "+resource) {
				k++
			}
		}
		m = max(m, k)
	}
	return m
}

func (r fleetAgentRequests) String() string {
	kinds := map[string]int{}
	var per []int
	for _, reqs := range r.byPod {
		per = append(per, len(reqs))
		for _, req := range reqs {
			kinds[req]++
		}
	}
	if len(per) == 0 {
		return "none"
	}
	sort.Ints(per)
	var parts []string
	for _, k := range sortedKeys(kinds) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, kinds[k]))
	}
	failed := "none"
	if len(r.failed) > 0 {
		var codes []string
		for code, n := range r.failed {
			codes = append(codes, fmt.Sprintf("%d×%d", n, code))
		}
		sort.Strings(codes)
		failed = strings.Join(codes, " ")
	}
	return fmt.Sprintf("%d from %d agents, per agent p50 %d max %d (%s); answered with an error: %s",
		r.total(), len(per), per[len(per)/2], per[len(per)-1], strings.Join(parts, " "), failed)
}

//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/agent"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/revision"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
)

// The fleet and the windows of TestAgentsSurviveAPIServerRestart.
const (
	fleet = 20
	// apiDown is how long kube-apiserver stays down.
	apiDown = 10 * time.Second
	// budgetWindow is how long after a disruption requests are counted.
	budgetWindow = 60 * time.Second
	// requestBudget is what one agent may ask of VirtualMachines to recover,
	// beyond the watch that then stays open (which apiserver_request_total
	// counts only once it ends).
	requestBudget = 2
)

// TestAgentsSurviveAPIServerRestart runs a fleet of agents through
// kube-apiserver restarts and an agent restart in a busy cluster, and holds
// them to a request budget counted by the API server itself: after a
// restart its watch cache starts at the current resourceVersion, so every
// watch that resumes from an older one gets 410 Gone, and an agent that
// answers that with a GET and a watch from the VM's own, just as old,
// resourceVersion asks again without end.
func TestAgentsSurviveAPIServerRestart(t *testing.T) {
	ns := namespace(t)
	proto := createPrototype(t, ns, "testvm.yaml")
	deploy(t, ns, scaffold.KindDeployment, "testvm", "--replicas", fmt.Sprint(fleet))
	waitPaired(t, ns, "testvm", fleet, 3*time.Minute)
	waitOthersGone(t, ns)

	t.Run("SIGKILL", func(t *testing.T) {
		before := waitPaired(t, ns, "testvm", fleet, settle)
		mark := auditMark(t)
		ready := restartAPIServer(t, syscall.SIGKILL, nil)
		// Until the restarted API server resolves the agents' policy's
		// paramKind (up to 30 s) it refuses what the policy matches: only
		// creates of the prototype's derived VMs, so other VM writes go
		// through at once (found by the chaos soak).
		if _, err := e.virt.KubevirtV1().VirtualMachines(ns).Create(t.Context(), plainVM(proto, "after-restart"), metav1.CreateOptions{}); err != nil {
			t.Errorf("create a VM that is not the agents' right after the restart: %v", err)
		}
		// And so do changes and deletes of the derived VMs (dry runs),
		// as KubeVirt's status updates and the agents' deletes must: only
		// creates are judged by the policy with the parameter. A derived
		// VM's create by this test's admin, refused only while the policy
		// is not set up, tells whether the window was open.
		vm := before[firstKey(before)]
		probe := plainVM(proto, vm.Name+"-probe")
		probe.Labels = vm.Labels
		_, err := e.virt.KubevirtV1().VirtualMachines(ns).Create(t.Context(), probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		open := err != nil && strings.Contains(err.Error(), "paramKind")
		if _, err := e.virt.KubevirtV1().VirtualMachines(ns).Patch(t.Context(), vm.Name, types.MergePatchType, []byte(`{"metadata":{"labels":{"touched":"yes"}}}`),
			metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Errorf("change a derived VM right after the restart (policy not yet set up: %v): %v", open, err)
		}
		if err := e.virt.KubevirtV1().VirtualMachines(ns).Delete(t.Context(), vm.Name, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Errorf("delete a derived VM right after the restart (policy not yet set up: %v): %v", open, err)
		}
		t.Logf("right after the restart, the create policy was not yet set up: %v (%v)", open, err)
		recovered := waitWatches(t, fleet)
		t.Logf("every agent's watch open again %v after the API server was ready", recovered.Round(100*time.Millisecond))
		reqs := fleetRequestsSince(t, ns, mark, ready)
		t.Logf("agent requests on VirtualMachines from the restart to %v after it: %s", budgetWindow, reqs)
		reqs.check(t, 1+requestBudget, nil)
		if n := reqs.verbs()["create"] + reqs.verbs()["delete"]; n > 0 {
			t.Errorf("agents created or deleted %d VMs after the restart", n)
		}
		sameVMs(t, ns, before, "")
	})

	t.Run("SIGTERM, one VM deleted while down", func(t *testing.T) {
		before := waitPaired(t, ns, "testvm", fleet, settle)
		victim := sortedKeys(before)[0]
		vm := before[victim]
		mark := auditMark(t)
		ready := restartAPIServer(t, syscall.SIGTERM, func() error {
			// The API server is down, so through etcd, as a restore from
			// a backup taken before the VM existed would: the VM and
			// what runs it. (Left behind, a VMI that names a deleted
			// owner blocks the new VM: the garbage collector never saw
			// the old VM go.)
			for _, key := range []string{
				"/registry/kubevirt.io/virtualmachines/" + ns + "/" + vm.Name,
				"/registry/kubevirt.io/virtualmachineinstances/" + ns + "/" + vm.Name,
			} {
				if err := e.cluster.EtcdDelete(t.Context(), key); err != nil {
					return err
				}
			}
			return nil
		})
		recovered := waitWatches(t, fleet)
		t.Logf("every agent's watch open again %v after the API server was ready", recovered.Round(100*time.Millisecond))
		reqs := fleetRequestsSince(t, ns, mark, ready)
		t.Logf("agent requests on VirtualMachines from the restart to %v after it: %s", budgetWindow, reqs)
		// The victim's agent also GETs the prototype and POSTs the VM,
		// which the watch of its VM's name then follows; it reads the
		// prototype again before each retry of a refused create.
		refused := reqs.checkRefusals(t)
		t.Logf("creates refused while the API server rediscovered the CRDs: %d", refused)
		reqs.check(t, 1+requestBudget, map[string]int{victim: 1 + requestBudget + 2 + refused})
		after := sameVMs(t, ns, before, victim)
		// Counted once the VM is back, not in the budget's window: the
		// refusals last up to 30 s, and the retry after the last one
		// waits its backoff step (up to 38 s by then), so the create may
		// land past the window.
		if got := fleetRequestsSince(t, ns, mark, ready).verbs()["create"]; got != 1 {
			t.Errorf("%d VM creates, want exactly 1, for the deleted VM", got)
		}
		if after[victim].UID == vm.UID {
			t.Errorf("VM %s has its old UID %s; it was deleted and must be new", vm.Name, vm.UID)
		}
	})

	t.Run("agent restarted after its VM fell out of the watch cache", func(t *testing.T) {
		before := waitPaired(t, ns, "testvm", fleet, settle)
		pod := quietest(before)
		vm := before[pod]
		// The watch cache keeps 75 s of history at least; past that, enough
		// writes elsewhere push a quiet VM's last change out of it.
		quietFor := time.Since(lastChange(&vm))
		if wait := 80*time.Second - quietFor; wait > 0 {
			t.Logf("waiting %v until VM %s has been quiet for 80s", wait.Round(time.Second), vm.Name)
			time.Sleep(wait)
		}
		if !churnUntilExpired(t, ns, vm, 3000) {
			t.Fatalf("a watch of VM %s from its resourceVersion %s still works; the scenario needs it out of the watch cache", vm.Name, vm.ResourceVersion)
		}

		mark, killed := auditMark(t), time.Now()
		if err := e.kubelet.Signal(ns, pod, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		eventually(t, settle, "agent restarted and ready again", func(ctx context.Context) (bool, string, error) {
			p, err := e.kube.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
			if err != nil || len(p.Status.ContainerStatuses) == 0 {
				return false, "no container status", err
			}
			cs := p.Status.ContainerStatuses[0]
			return cs.RestartCount >= 1 && cs.Ready, fmt.Sprintf("restarts=%d ready=%v", cs.RestartCount, cs.Ready), nil
		})
		waitWatches(t, fleet)
		reqs := fleetRequestsSince(t, ns, mark, killed)
		t.Logf("agent requests on VirtualMachines in the %v after the agent's restart: %s", budgetWindow, reqs)
		// Adopting costs the GET of the revision store its template names
		// and the watch of the VM its Pod's record names, by name, which
		// stays open; nothing more, and nothing from the others.
		want := []string{"get " + revision.StoreName(scaffold.DefaultName("testvm")), "watch " + vm.Name}
		sort.Strings(want)
		if diff := cmp.Diff(map[string][]string{pod: want}, reqs.byPod); diff != "" {
			t.Errorf("requests by Pod (-want +got):\n%s", diff)
		}
		sameVMs(t, ns, before, "")
	})
}

// restartAPIServer kills kube-apiserver with sig, keeps it down for apiDown
// while meanwhile runs, starts it again and returns when it was ready.
func restartAPIServer(t *testing.T, sig syscall.Signal, meanwhile func() error) time.Time {
	t.Helper()
	start := time.Now()
	if err := e.cluster.RestartAPIServer(t.Context(), sig, apiDown, meanwhile); err != nil {
		t.Fatalf("restart kube-apiserver: %v", err)
	}
	t.Logf("kube-apiserver stopped with %v and ready again after %v", sig, time.Since(start).Round(100*time.Millisecond))
	return time.Now()
}

// waitWatches waits until want agent watches on VMs are open, by the API
// server's own count, and returns how long that took. It fails t but goes on
// when they are not, so the test still counts the requests.
func waitWatches(t *testing.T, want int) time.Duration {
	t.Helper()
	start := time.Now()
	var last string
	err := wait.PollUntilContextTimeout(t.Context(), 500*time.Millisecond, budgetWindow, true, func(ctx context.Context) (bool, error) {
		m, err := scrapeAPIServer(ctx)
		if err != nil {
			last = err.Error()
			return false, nil // the next scrape may get through
		}
		open := int(m.sum("apiserver_longrunning_requests", agentVMWatches))
		last = fmt.Sprintf("%d open", open)
		return open == want, nil
	})
	if err != nil {
		t.Errorf("%d agent watches open: not within %v; last seen: %s", want, budgetWindow, last)
	}
	return time.Since(start)
}

// auditMark is how many requests the audit log holds now.
func auditMark(t testing.TB) int {
	t.Helper()
	events, err := e.cluster.ReadAudit()
	if err != nil {
		t.Fatal(err)
	}
	return len(events)
}

// fleetRequests are the requests on VirtualMachines that agent Pods made,
// as "verb name", sorted, by Pod.
type fleetRequests struct {
	byPod map[string][]string
	// refused are the VM creates the API server refused, by Pod: when
	// they came and why.
	refused map[string][]testcluster.AuditEvent
}

// fleetRequestsSince waits until budgetWindow after from and returns the
// requests on VirtualMachines and revision stores that ns's agents made
// after the audit log's first mark entries.
// The audit log says who asked (a bound token names its Pod), which the API
// server's metrics cannot: the garbage collector and virt-controller read
// VMs too.
func fleetRequestsSince(t *testing.T, ns string, mark int, from time.Time) fleetRequests {
	t.Helper()
	time.Sleep(time.Until(from.Add(budgetWindow)))
	events, err := e.cluster.ReadAudit()
	if err != nil {
		t.Fatal(err)
	}
	r := fleetRequests{byPod: map[string][]string{}, refused: map[string][]testcluster.AuditEvent{}}
	for _, ev := range events[mark:] {
		pod := ev.Pod()
		switch {
		case pod == "" || !strings.HasPrefix(ev.User.Username, "system:serviceaccount:"+ns+":") ||
			ev.ObjectRef.Resource != "virtualmachines" && ev.ObjectRef.Resource != revision.StoreResource:
		case ev.Verb == "create" && ev.ResponseStatus.Code >= 300 && ev.ResponseStatus.Code != http.StatusConflict:
			// Refused, not "already exists" (which is how an agent finds
			// the VM it adopts).
			r.refused[pod] = append(r.refused[pod], ev)
		default:
			r.byPod[pod] = append(r.byPod[pod], ev.Verb+" "+ev.ObjectRef.Name)
		}
	}
	for _, reqs := range r.byPod {
		sort.Strings(reqs)
	}
	return r
}

// checkRefusals fails t unless every refused create is the admission
// policy's refusal while the restarted API server has not yet rediscovered
// the custom resources (the policy's paramKind, VMRevisionStore, or
// VirtualMachine for a workload that pins no revision, the API server's
// policy plugin finds through discovery), and unless the agent
// retried those refusals no sooner than its backoff allows: the k-th retry
// at least the sum of k un-jittered backoff steps after the first try
// (latency only adds to that). It returns the count.
func (r fleetRequests) checkRefusals(t *testing.T) int {
	t.Helper()
	n := 0
	for pod, evs := range r.refused {
		n += len(evs)
		b, least := agent.DefaultBackoff(), time.Duration(0)
		b.Jitter = 0
		for i, ev := range evs {
			if !strings.Contains(ev.ResponseStatus.Message, "paramKind") {
				t.Errorf("agent %s: create refused with %d %q, want only the policy's refusals before discovery", pod, ev.ResponseStatus.Code, ev.ResponseStatus.Message)
			}
			if i > 0 {
				least += b.Step()
			}
			if after := ev.Received.Sub(evs[0].Received.Time); after < least {
				t.Errorf("agent %s: retry %d of a refused create %v after the first, sooner than its backoff allows (%v)", pod, i, after, least)
			}
		}
	}
	return n
}

// verbs counts the requests by verb.
func (r fleetRequests) verbs() map[string]int {
	n := map[string]int{}
	for _, reqs := range r.byPod {
		for _, req := range reqs {
			verb, _, _ := strings.Cut(req, " ")
			n[verb]++
		}
	}
	return n
}

func (r fleetRequests) String() string {
	total, most, who := 0, 0, ""
	for pod, reqs := range r.byPod {
		total += len(reqs)
		if len(reqs) > most {
			most, who = len(reqs), pod
		}
	}
	var verbs []string
	for verb, n := range r.verbs() {
		verbs = append(verbs, fmt.Sprintf("%s=%d", verb, n))
	}
	sort.Strings(verbs)
	return fmt.Sprintf("%d from %d agents (%s), most from one agent %d (%s)", total, len(r.byPod), strings.Join(verbs, " "), most, who)
}

// check fails t for every Pod with more than budget requests (or its own
// entry in budgets).
func (r fleetRequests) check(t *testing.T, budget int, budgets map[string]int) {
	t.Helper()
	for pod, reqs := range r.byPod {
		b, ok := budgets[pod]
		if !ok {
			b = budget
		}
		if len(reqs) > b {
			t.Errorf("agent %s made %d requests, want at most %d: %q", pod, len(reqs), b, reqs[:min(len(reqs), 8)])
		}
	}
}

// sameVMs checks that ns still has every Pod of before paired with the same
// VM (except changed, whose VM may be new) and every Pod Ready.
func sameVMs(t *testing.T, ns string, before map[string]kubevirtv1.VirtualMachine, changed string) map[string]kubevirtv1.VirtualMachine {
	t.Helper()
	after := waitPaired(t, ns, "testvm", len(before), settle)
	for pod, vm := range before {
		if pod != changed && after[pod].UID != vm.UID {
			t.Errorf("VM of pod %s replaced: uid %s -> %s", pod, vm.UID, after[pod].UID)
		}
	}
	// A Pod's readiness follows its VM's at the kubelet's next probe.
	eventually(t, settle, "every Pod Ready", func(ctx context.Context) (bool, string, error) {
		pods, err := e.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		var unready []string
		for _, p := range pods.Items {
			if !podReady(&p) {
				unready = append(unready, p.Name)
			}
		}
		return len(unready) == 0, fmt.Sprintf("not Ready: %v", unready), nil
	})
	return after
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// waitOthersGone waits until no agent Pod and no VM's launcher Pod outside
// ns is left from earlier tests, so that only ns's agents talk to the API
// server and a drain meets only ns's Pods.
func waitOthersGone(t *testing.T, ns string) {
	t.Helper()
	eventually(t, 3*time.Minute, "agent and launcher Pods of other tests gone", func(ctx context.Context) (bool, string, error) {
		var left []string
		for _, selector := range []string{contract.LabelName + "=" + contract.AppName, "kubevirt.io=virt-launcher"} {
			pods, err := e.kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
				LabelSelector: selector,
				FieldSelector: fields.OneTermNotEqualSelector("metadata.namespace", ns).String(),
			})
			if err != nil {
				return false, "", err
			}
			for _, p := range pods.Items {
				left = append(left, p.Namespace+"/"+p.Name)
			}
		}
		return len(left) == 0, strings.Join(left, " "), nil
	})
}

// quietest returns the Pod whose VM changed longest ago.
func quietest(pairs map[string]kubevirtv1.VirtualMachine) string {
	pods := sortedKeys(pairs)
	sort.SliceStable(pods, func(i, j int) bool {
		a, b := pairs[pods[i]], pairs[pods[j]]
		return lastChange(&a).Before(lastChange(&b))
	})
	return pods[0]
}

// lastChange is when a VM was last written, from its managedFields.
func lastChange(vm *kubevirtv1.VirtualMachine) time.Time {
	last := vm.CreationTimestamp.Time
	for _, f := range vm.ManagedFields {
		if f.Time != nil && f.Time.After(last) {
			last = f.Time.Time
		}
	}
	return last
}

// churnUntilExpired creates a VM that is not vmctl's and writes it, as a
// busy namespace would, from a few clients at once, in batches, until a
// watch of vm from its own resourceVersion gets 410 Gone (the watch cache's
// window moved past it), or limit writes.
func churnUntilExpired(t *testing.T, ns string, vm kubevirtv1.VirtualMachine, limit int) bool {
	t.Helper()
	vms := e.virt.KubevirtV1().VirtualMachines(ns)
	busy := &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: "busy"},
		Spec: kubevirtv1.VirtualMachineSpec{
			RunStrategy: ptr.To(kubevirtv1.RunStrategyHalted),
			Template:    &kubevirtv1.VirtualMachineInstanceTemplateSpec{},
		},
	}
	if _, err := vms.Create(t.Context(), busy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const batch = 250
	start := time.Now()
	for n := 0; n < limit; n += batch {
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for w := range 8 {
			wg.Go(func() {
				for i := n + w; i < n+batch; i += 8 {
					patch := fmt.Sprintf(`{"metadata":{"labels":{"w%d":"%d"}}}`, w, i)
					if _, err := vms.Patch(t.Context(), "busy", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if watchExpired(t, ns, vm) {
			t.Logf("%d writes to VM %s/busy in %v pushed VM %s out of the watch cache", n+batch, ns, time.Since(start).Round(100*time.Millisecond), vm.Name)
			return true
		}
	}
	return false
}

// watchExpired reports whether a watch of vm from its own resourceVersion
// gets 410 Gone, as the agent's watch did before it listed afresh.
func watchExpired(t *testing.T, ns string, vm kubevirtv1.VirtualMachine) bool {
	t.Helper()
	// A 410 comes at once; a watch still open after a few seconds is one
	// the cache can serve.
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	w, err := e.virt.KubevirtV1().VirtualMachines(ns).Watch(ctx, metav1.ListOptions{
		FieldSelector:   fields.OneTermEqualSelector("metadata.name", vm.Name).String(),
		ResourceVersion: vm.ResourceVersion,
	})
	if err != nil {
		return apierrors.IsResourceExpired(err) || apierrors.IsGone(err)
	}
	defer w.Stop()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok || ev.Type != watch.Error {
			return false
		}
		err := apierrors.FromObject(ev.Object)
		return apierrors.IsResourceExpired(err) || apierrors.IsGone(err)
	case <-ctx.Done():
		return false // the watch is open: the version is in the cache
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

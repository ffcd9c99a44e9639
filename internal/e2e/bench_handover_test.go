//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
)

// handoverCandidate is one way for an agent to give its Pod's room to its
// VM's launcher Pod, as the agent behaves with the rights its Role grants.
type handoverCandidate struct {
	name string
	// prepare changes the fleet, scaled to 0, into the candidate.
	prepare func(t testing.TB, f roomFleet)
	// moveAfter is the agents' --move-after; 0 is scaffold's 5m.
	moveAfter time.Duration
}

// withoutRule drops from the fleet's Role the rule on resource: the agent
// then does without it, as one scaffolded before it was granted does.
func withoutRule(resource string) func(testing.TB, roomFleet) {
	return func(t testing.TB, f roomFleet) {
		t.Helper()
		roles := e.kube.RbacV1().Roles(f.ns)
		role, err := roles.Get(context.Background(), f.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		role.Rules = slices.DeleteFunc(role.Rules, func(r rbacv1.PolicyRule) bool { return slices.Contains(r.Resources, resource) })
		if _, err := roles.Update(context.Background(), role, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// agentsBelowLaunchers gives the fleet's agent Pods a priority below their
// VMs' launcher Pods' (0, no class), in a class that never preempts.
func agentsBelowLaunchers(t testing.TB, f roomFleet) {
	t.Helper()
	class := &schedulingv1.PriorityClass{
		ObjectMeta:       metav1.ObjectMeta{Name: "agents-" + f.ns},
		Value:            -1,
		PreemptionPolicy: ptr.To(corev1.PreemptNever),
		Description:      "vmctl agents, below their VMs' launcher Pods",
	}
	if _, err := e.kube.SchedulingV1().PriorityClasses().Create(context.Background(), class, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.kube.SchedulingV1().PriorityClasses().Delete(context.Background(), class.Name, metav1.DeleteOptions{})
	})
	patch := fmt.Sprintf(`{"spec":{"template":{"spec":{"priorityClassName":%q}}}}`, class.Name)
	if _, err := e.kube.AppsV1().Deployments(f.ns).Patch(context.Background(), f.name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// withoutLauncherClass takes the fleet's launcher priority class from its
// Pod template: the VMs keep the prototype's class, whose launcher Pods
// preempt.
func withoutLauncherClass(t testing.TB, f roomFleet) {
	t.Helper()
	patch := `[{"op": "remove", "path": "/spec/template/metadata/annotations/vmctl.kubevirt.io~1launcher-priority-class"}]`
	if _, err := e.kube.AppsV1().Deployments(f.ns).Patch(context.Background(), f.name, types.JSONPatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// all applies each of prepares.
func all(prepares ...func(testing.TB, roomFleet)) func(testing.TB, roomFleet) {
	return func(t testing.TB, f roomFleet) {
		for _, p := range prepares {
			p(t, f)
		}
	}
}

// handoverCandidates are the ways measured side by side: hold the room
// until the launcher Pod waits for it and give it back without a
// nomination (a Role that may not patch pods/status), and move what lost
// it; (b) the same, agents ranked below their launcher Pods; (a) hold it
// and nominate the launcher Pod, which either preempts (the prototype's
// class) or never does (the workload's launcher class, what scaffold
// writes).
var handoverCandidates = []handoverCandidate{
	{name: "hold until the launcher Pod waits", prepare: all(withoutRule("pods/status"), withoutLauncherClass)},
	{name: "hold until the launcher Pod waits, move in 10s", prepare: all(withoutRule("pods/status"), withoutLauncherClass), moveAfter: 10 * time.Second},
	{name: "hold, agents below launchers that preempt", prepare: all(withoutRule("pods/status"), withoutLauncherClass, agentsBelowLaunchers)},
	{name: "hold, agents below launchers that never preempt", prepare: all(withoutRule("pods/status"), agentsBelowLaunchers)},
	{name: "hold and nominate, launchers preempt", prepare: withoutLauncherClass},
	{name: "hold and nominate, launchers never preempt", prepare: func(testing.TB, roomFleet) {}},
}

// handoverResult is what a candidate left: quietPeriod after it settled,
// or burstWindow after the burst where it did not settle.
type handoverResult struct {
	state roomState
	costs roomCosts
	// preempted counts the Pods kube-scheduler preempted in the fleet's
	// namespace.
	preempted int
	// settled is how long the fleet took to settle, 0 where it did not
	// within burstWindow; held whether it stayed settled for quietPeriod.
	settled time.Duration
	held    bool
}

// settledIn says when the fleet settled, for the table.
func (r handoverResult) settledIn() string {
	switch {
	case r.settled == 0:
		return fmt.Sprintf("not in %v", burstWindow)
	case !r.held:
		return fmt.Sprintf("%v, not for %v", r.settled.Round(time.Second), quietPeriod)
	}
	return r.settled.Round(time.Second).String()
}

// sampleHandover waits until the fleet settles at fit of replicas, within
// burstWindow of start, and watches it for quietPeriod more; one that does
// not settle is sampled at the window's end, as it stands then. It reads
// the state and the costs since mark.
func sampleHandover(b *testing.B, f roomFleet, fit, replicas, mark int, start time.Time) handoverResult {
	b.Helper()
	var r handoverResult
	err := wait.PollUntilContextTimeout(context.Background(), time.Second, time.Until(start.Add(burstWindow)), true, func(ctx context.Context) (bool, error) {
		s, err := f.state(ctx)
		return err == nil && s.settledAt(fit, replicas), err
	})
	switch {
	case err == nil:
		r.settled = time.Since(start)
		r.held, _ = f.staysSettled(b, fit, replicas)
	case !wait.Interrupted(err):
		b.Fatalf("cannot read the fleet's state: %v", err)
	}
	s, err := f.state(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	r.state, r.costs, r.preempted = s, f.costsSince(b, mark), preemptionsSince(b, f.ns, mark)
	return r
}

// BenchmarkHandover runs each way of handing over the room through the same
// burst on the real kube-scheduler, one after the other in one run: a
// Deployment scaled from 0 to 100 in one step on ten nodes of 8 CPU and
// 32Gi, with a prototype of 4Gi (room for 70). It reports when the fleet
// settled (every VM that fits ready, every other agent Pending), and then,
// quietPeriod after it settled or burstWindow after the burst where it did
// not, how many VMs are ready and unschedulable, how many agents wait
// Pending for want of room, and what the agents did: VMs made, evictions,
// Pods preempted. A candidate that could not be measured fails the
// benchmark, and its row says so. `make bench-handover` runs it; the table
// it prints is in docs/reservation.md.
func BenchmarkHandover(b *testing.B) {
	c := burstCase{nodes: 10, cpu: "8", memory: "32Gi", guest: "4Gi", replicas: 100}
	results, failed := map[string]handoverResult{}, map[string]bool{}
	fit := 0
	for _, cand := range handoverCandidates {
		failed[cand.name] = !b.Run(cand.name, func(b *testing.B) {
			for range b.N {
				c := c
				c.prepare, c.moveAfter = cand.prepare, cand.moveAfter
				f, fits := c.start(b)
				fit = fits
				start := time.Now()
				mark := c.scaleUp(b, f)
				r := sampleHandover(b, f, fit, c.replicas, mark, start)
				s := r.state
				results[cand.name] = r
				if r.settled > 0 {
					b.ReportMetric(r.settled.Seconds(), "settled-s")
				}
				b.ReportMetric(float64(s.ready), "ready")
				b.ReportMetric(float64(s.unschedulable), "unschedulable")
				b.ReportMetric(float64(s.insufficient), "pending")
				b.ReportMetric(float64(r.costs.creates), "creates")
				b.ReportMetric(float64(r.costs.evictions), "evictions")
				b.ReportMetric(float64(r.preempted), "preempted")
				kubectl(b, nil, "scale", "deployment", f.name, "-n", f.ns, "--replicas=0")
				f.waitSettled(b, 0, 0, 3*time.Minute)
			}
		})
	}
	var out strings.Builder
	fmt.Fprintf(&out, "\n| %d agents, room for %d | settled in | ready | unschedulable | Pending | VMs made | evictions | preempted |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n",
		c.replicas, fit)
	for _, cand := range handoverCandidates {
		r, ok := results[cand.name]
		if !ok || failed[cand.name] {
			fmt.Fprintf(&out, "| %s | failed: not measured, see its log above | | | | | | |\n", cand.name)
			continue
		}
		fmt.Fprintf(&out, "| %s | %s | %d | %d | %d | %d | %d | %d |\n",
			cand.name, r.settledIn(), r.state.ready, r.state.unschedulable, r.state.insufficient, r.costs.creates, r.costs.evictions, r.preempted)
	}
	fmt.Print(out.String())
}

// preemptionsSince counts the Pods of ns kube-scheduler deleted to make
// room for others, after the audit log's first mark requests.
func preemptionsSince(t testing.TB, ns string, mark int) int {
	t.Helper()
	events, err := e.cluster.ReadAudit()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ev := range events[mark:] {
		if ev.User.Username == testcluster.ComponentUser(testcluster.KubeScheduler) && ev.Verb == "delete" &&
			ev.ObjectRef.Resource == "pods" && ev.ObjectRef.Namespace == ns && ev.ResponseStatus.Code < 300 {
			n++
		}
	}
	return n
}

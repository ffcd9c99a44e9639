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

// handoverResult is what a candidate left burstWindow after the burst.
type handoverResult struct {
	fit   int
	state roomState
	costs roomCosts
	// preempted counts the Pods kube-scheduler preempted in the fleet's
	// namespace.
	preempted int
}

// BenchmarkHandover runs each way of handing over the room through the same
// burst on the real kube-scheduler, one after the other in one run: a
// Deployment scaled from 0 to 100 in one step on ten nodes of 8 CPU and
// 32Gi, with a prototype of 4Gi (room for 70). It reports, burstWindow
// after the burst, how many VMs are ready and unschedulable, how many
// agents wait Pending for want of room, and what the agents did: VMs made,
// evictions, Pods preempted. `make bench-handover` runs it; the table it
// prints is in docs/reservation.md.
func BenchmarkHandover(b *testing.B) {
	c := burstCase{nodes: 10, cpu: "8", memory: "32Gi", guest: "4Gi", replicas: 100}
	results := map[string]handoverResult{}
	for _, cand := range handoverCandidates {
		b.Run(cand.name, func(b *testing.B) {
			for range b.N {
				c := c
				c.prepare, c.moveAfter = cand.prepare, cand.moveAfter
				f, fit := c.start(b)
				mark := c.scaleUp(b, f)
				time.Sleep(burstWindow)
				s, err := f.state(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				r := handoverResult{fit: fit, state: s, costs: f.costsSince(b, mark), preempted: preemptionsSince(b, f.ns, mark)}
				results[cand.name] = r
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
	fmt.Fprintf(&out, "\n| %d agents, room for %d | ready | unschedulable | Pending | VMs made | evictions | preempted |\n| --- | --- | --- | --- | --- | --- | --- |\n",
		c.replicas, results[handoverCandidates[0].name].fit)
	for _, cand := range handoverCandidates {
		r, ok := results[cand.name]
		if !ok {
			continue
		}
		fmt.Fprintf(&out, "| %s | %d | %d | %d | %d | %d | %d |\n",
			cand.name, r.state.ready, r.state.unschedulable, r.state.insufficient, r.costs.creates, r.costs.evictions, r.preempted)
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

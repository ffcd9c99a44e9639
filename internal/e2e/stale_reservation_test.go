//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/agent"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/stuck"
)

// templateReservation is the reservation Deployment name's Pod template
// holds now.
func templateReservation(t *testing.T, ns, name string) string {
	t.Helper()
	d, err := e.kube.AppsV1().Deployments(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d.Spec.Template.Annotations[contract.AnnotationReservation]
}

// staleProblems are the PROBLEMs status shows for Pods that reserve
// another size than their VMs need, by Pod; flags go to status (a
// --kubeconfig for another cluster than the shared one).
func staleProblems(t *testing.T, ns string, flags ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, r := range statusRows(t, ns, flags...) {
		for _, p := range r.Problems {
			if strings.HasPrefix(p, "Pod reserves ") {
				out[r.Pod] = p
			}
		}
	}
	return out
}

// TestRolloutUndoLeavesAStaleReservation: the prototype grows, `vmctl
// rollout restart` rolls the new size out, and `kubectl rollout undo`
// brings back the old template, whose revision is of the old size too, so
// its Pods' reservations match their VMs again. A template edited by hand
// to hold the old size for VMs of the new one is stale: status's PROBLEM
// says so for each Pod. The agents, whose launcher Pods fit, read no launcher Pod and say nothing
// (checked in the audit log and the namespace's Events once their VMs are
// ready, which ends their handover): a warning that holds for the whole
// template is not said by every agent (the agent's own ReservationStale,
// where the launcher Pod waits for the room, is
// TestTooSmallReservationDoesNotMove's). `vmctl rollout restart` clears
// them.
func TestRolloutUndoLeavesAStaleReservation(t *testing.T) {
	ns := namespace(t)
	createPrototype(t, ns, "testvm.yaml")
	deploy(t, ns, scaffold.KindDeployment, "testvm", "--name", "web", "--replicas", "2")
	waitPaired(t, ns, "testvm", 2, settle)
	small := templateReservation(t, ns, "web")

	kubectl(t, nil, "patch", "vm", "testvm", "-n", ns, "--type", "merge", "-p", `{"spec":{"template":{"spec":{"domain":{"memory":{"guest":"512Mi"}}}}}}`)
	vmctl(t, "rollout", "restart", "testvm", "-n", ns)
	vmctl(t, "rollout", "status", "testvm", "-n", ns, "--timeout", "2m")
	big := templateReservation(t, ns, "web")
	if big == small {
		t.Fatalf("rollout restart left the reservation at %s for a prototype of twice the memory", small)
	}

	kubectl(t, nil, "rollout", "undo", "deployment/web", "-n", ns)
	kubectl(t, nil, "rollout", "status", "deployment/web", "-n", ns, "--timeout=2m")
	if got := templateReservation(t, ns, "web"); got != small {
		t.Fatalf("after the undo the template reserves %s, want %s", got, small)
	}
	waitRevision(t, ns, "deployment/web", 2, "")
	checkReservationsHeld(t, ns)
	if got := staleProblems(t, ns); len(got) != 0 {
		t.Errorf("after the undo status says %v, want no stale reservation", got)
	}

	// Back to the new revision, its template edited to hold the old size.
	kubectl(t, nil, "rollout", "undo", "deployment/web", "-n", ns)
	kubectl(t, nil, "rollout", "status", "deployment/web", "-n", ns, "--timeout=2m")
	mark := auditMark(t)
	kubectl(t, nil, "patch", "deployment", "web", "-n", ns, "--type", "merge", "-p",
		fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{%q:%q}}}}}`, contract.AnnotationReservation, small))
	kubectl(t, nil, "rollout", "status", "deployment/web", "-n", ns, "--timeout=2m")
	pairs := waitPaired(t, ns, "testvm", 2, settle)
	want := fmt.Sprintf("Pod reserves %s, its VM needs %s", small, big)
	eventually(t, settle, "status to show the stale reservation of both Pods", func(context.Context) (bool, string, error) {
		got := staleProblems(t, ns)
		for pod := range pairs {
			if got[pod] != want {
				return false, fmt.Sprint(got), nil
			}
		}
		return true, "", nil
	})
	checkReadNoLauncherPod(t, ns, "web", mark, len(pairs))

	// rollout restart writes the revision's reservation back, though the
	// template pins the prototype's revision already.
	if out := vmctl(t, "rollout", "restart", "testvm", "-n", ns); !strings.Contains(out, "restarted") {
		t.Errorf("rollout restart of a template holding another reservation than its revision's printed %q", out)
	}
	vmctl(t, "rollout", "status", "testvm", "-n", ns, "--timeout", "2m")
	waitPaired(t, ns, "testvm", 2, settle)
	eventually(t, settle, "status without a stale reservation", func(context.Context) (bool, string, error) {
		got := staleProblems(t, ns)
		return len(got) == 0, fmt.Sprint(got), nil
	})
	checkNoProblems(t, ns)
	if out, errOut, code := vmctlCode(t, "diff", "-n", ns); code != 0 {
		t.Errorf("vmctl diff after rollout restart exited %d, want 0:\n%s%s", code, out, errOut)
	}
}

// TestTooSmallReservationDoesNotMove: a template edited by hand to hold
// less than its VM needs places its agent where the VM does not fit. The
// VM cannot be scheduled and the agent says why (ReservationStale on
// /readyz, in its Event and in status), but it does not move its VM: its
// replacement, of the same template, would hold as little, and so on
// without end. Nor does the VM's launcher Pod preempt the Pod of lower
// priority that holds the room: launcher Pods never preempt.
func TestTooSmallReservationDoesNotMove(t *testing.T) {
	ns := namespace(t)
	nodes := addSizedNodes(t, ns, 1)
	bigPrototype(t, ns)
	mark := auditMark(t)
	hog(t, ns, nodes[0], lowPriority(t, ns))
	deploy(t, ns, scaffold.KindDeployment, "testvm", "--replicas", "0", "--move-after", moveAfter.String())
	// By hand: the template holds 4Gi for a VM of 12Gi.
	const edited = "cpu=106m,memory=4Gi"
	kubectl(t, nil, "patch", "deployment", scaffold.DefaultName("testvm"), "-n", ns, "--type", "json", "-p", `[
		{"op": "replace", "path": "/spec/template/metadata/annotations/vmctl.kubevirt.io~1reservation", "value": "`+edited+`"},
		{"op": "replace", "path": "/spec/template/spec/containers/0/resources/requests", "value": {"cpu": "116m", "memory": "4128Mi"}},
		{"op": "replace", "path": "/spec/template/spec/containers/0/resources/limits", "value": {"cpu": "206m", "memory": "4160Mi"}}]`)
	scale(t, ns, scaffold.DefaultName("testvm"), 1)

	var pod string
	eventually(t, settle+handoverGrace, "the VM unschedulable on the full node", func(ctx context.Context) (bool, string, error) {
		pods, err := agentPods(ctx, ns)
		if err != nil || len(pods) != 1 {
			return false, fmt.Sprintf("%d agents", len(pods)), err
		}
		for name := range pods {
			pod = name
		}
		vms, err := derivedVMs(ctx, ns)
		if err != nil {
			return false, "", err
		}
		vm, ok := vms[shortVMName("testvm", pod)]
		if !ok {
			return false, "no VM", nil
		}
		s, stuckNow := stuck.Of(&vm)
		return stuckNow && s.Reason == stuck.ReasonUnschedulable, string(vm.Status.PrintableStatus), nil
	})
	waitPodWarningEvent(t, ns, pod, "the agent's "+agent.ReasonReservationStale+" Event", func(msg string) bool {
		return strings.Contains(msg, "holds "+edited) && strings.Contains(msg, "does not move")
	})
	eventually(t, settle, "/readyz to say ReservationStale", func(context.Context) (bool, string, error) {
		r := agentReadyz(t, ns, pod)
		return r.code == 503 && strings.HasPrefix(r.body, agent.ReasonReservationStale+"\n"), fmt.Sprintf("%d %q", r.code, r.body), nil
	})
	if got := staleProblems(t, ns)[pod]; !strings.HasPrefix(got, "Pod reserves "+edited+", its VM needs ") {
		t.Errorf("status PROBLEM %q, want the Pod's reservation against its VM's need", got)
	}
	// /readyz said ReservationStale once the agent observed its VM
	// unschedulable, the state that starts the mover's clock of
	// --move-after: from then on only time can tell that it never runs out.
	throughout(t, 3*moveAfter, "no eviction, no preemption", func(context.Context) (string, error) {
		var problems []string
		if got := evictionsOf(t, ns); got.asked != 0 {
			problems = append(problems, fmt.Sprintf("the agent asked to evict its Pod %d times; a replacement would hold as little", got.asked))
		}
		if n := preemptionsSince(t, ns, mark); n != 0 {
			problems = append(problems, fmt.Sprintf("kube-scheduler preempted %d Pods; the VM's launcher Pod never preempts", n))
		}
		return strings.Join(problems, "; "), nil
	})
	pods, err := e.kube.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: agentSelector})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 || pods.Items[0].Name != pod {
		t.Errorf("agent Pods %v, want %s alone", podNames(pods.Items), pod)
	}
}

// checkReadNoLauncherPod checks that the agents of ns's workload name, n
// of them made their VMs after the audit log's first mark requests, read
// no Pod but their own (no list, no watch, no GET of another, no change of
// a Pod's status), and that no agent recorded a ReservationStale Event.
func checkReadNoLauncherPod(t *testing.T, ns, name string, mark, n int) {
	t.Helper()
	events, err := e.cluster.ReadAudit()
	if err != nil {
		t.Fatal(err)
	}
	creates := 0
	for _, ev := range events[mark:] {
		if ev.User.Username != "system:serviceaccount:"+ns+":"+name {
			continue
		}
		r := ev.ObjectRef
		if ev.Verb == "create" && r.Resource == "virtualmachines" && r.Subresource == "" {
			creates++
		}
		if r.Resource == "pods" && (r.Name != ev.Pod() || r.Subresource == "status") {
			t.Errorf("agent Pod %s: %s pods %s/%s (%s): an agent whose launcher Pod fits reads none", ev.Pod(), ev.Verb, r.Name, r.Subresource, ev.RequestURI)
		}
	}
	if creates < n {
		t.Errorf("%d VM creates by the agents of %s in the audit log, want %d at least: the audit log's count is broken", creates, name, n)
	}
	list, err := e.kube.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range list.Items {
		if ev.Reason == agent.ReasonReservationStale {
			t.Errorf("Event %s on %s: %s; an agent whose launcher Pod fits says nothing", ev.Reason, ev.InvolvedObject.Name, ev.Message)
		}
	}
}

// handoverGrace is how long an agent keeps an unschedulable VM to itself
// after giving back its Pod's room (the agent's handoverGrace).
const handoverGrace = 30 * time.Second

func podNames(pods []corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

// lowPriority makes a PriorityClass below the default's, for ns's test.
func lowPriority(t *testing.T, ns string) string {
	t.Helper()
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "low-" + ns}, Value: -10}
	if _, err := e.kube.SchedulingV1().PriorityClasses().Create(t.Context(), pc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.kube.SchedulingV1().PriorityClasses().Delete(context.Background(), pc.Name, metav1.DeleteOptions{})
	})
	return pc.Name
}

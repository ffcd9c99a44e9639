//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/agent"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
)

// moveAfter is the agents' --move-after in the move test: short, so the
// test waits seconds, not scaffold's minutes.
const moveAfter = 10 * time.Second

// TestUnschedulableVMMovesUnderItsBudget: on two nodes of 32Gi, two agents
// of a 12Gi prototype run one VM each, under a PodDisruptionBudget. A Pod
// that takes most of one node's memory makes that node's VM unschedulable
// when it starts again. Its agent waits --move-after, then asks to evict its
// own Pod; the budget refuses while the other VM is the only ready one, and
// the agent says so and asks again; once the budget allows it, the Pod goes
// with its VM, and the Deployment's new Pod and VM run on the other node.
// Then that node fills too: the next VM that cannot start there moves once
// more, and its new Pod, with no room anywhere, stays Pending. The audit log
// shows the evictions the agents asked for: two that went through, and none
// after, over three --move-after.
func TestUnschedulableVMMovesUnderItsBudget(t *testing.T) {
	ns := namespace(t)
	nodes := addSizedNodes(t, ns, 2)
	bigPrototype(t, ns)
	deploy(t, ns, scaffold.KindDeployment, "testvm", "--replicas", "2", "--pdb", "2", "--move-after", moveAfter.String())
	pairs := waitPaired(t, ns, "testvm", 2, settle)
	waitDerived(t, ns, "testvm", 2, settle, true)

	// The first move: the budget holds it until it allows one disruption.
	pod, vm, from := pairOn(pairs, nodes[0])
	to := otherNode(nodes, from)
	hog(t, ns, from)
	kubectl(t, nil, "delete", "vmi", vm, "-n", ns, "--wait=false")
	waitPodWarningEvent(t, ns, pod, "the agent's "+agent.ReasonMoveBlocked+" Event", func(msg string) bool {
		return strings.Contains(msg, "a PodDisruptionBudget allows no disruption now")
	})
	if after := evictionsOf(t, ns); after.allowed != 0 {
		t.Fatalf("%d evictions went through while the budget allowed none", after.allowed)
	}
	kubectl(t, nil, "patch", "pdb", "vmctl-testvm", "-n", ns, "--type", "merge", "-p", `{"spec":{"minAvailable":1}}`)
	pairs = waitMoved(t, ns, pod, to)

	// The second move: from the node every VM runs on now, to nowhere.
	pod, vm, _ = pairOn(pairs, to)
	hog(t, ns, to)
	kubectl(t, nil, "delete", "vmi", vm, "-n", ns, "--wait=false")
	eventually(t, settle+3*moveAfter, "Pod "+pod+" evicted and its replacement Pending", func(ctx context.Context) (bool, string, error) {
		pods, err := agentPods(ctx, ns)
		if err != nil {
			return false, "", err
		}
		pending, err := pendingAgents(ctx, ns, "vmctl-testvm")
		if _, still := pods[pod]; still || len(pending) != 1 {
			return false, fmt.Sprintf("Pod %s there: %v; Pending: %v", pod, still, pending), err
		}
		for _, msg := range pending {
			if !strings.Contains(msg, "Insufficient memory") {
				return false, "Pending for another reason: " + msg, nil
			}
		}
		return true, "", nil
	})
	time.Sleep(3 * moveAfter)
	got := evictionsOf(t, ns)
	t.Logf("evictions asked for: %d, refused: %d, went through: %d", got.asked, got.asked-got.allowed, got.allowed)
	if got.allowed != 2 {
		t.Errorf("%d evictions went through, want 2: one per VM that could not start on its node", got.allowed)
	}
	if got.asked-got.allowed < 1 {
		t.Errorf("no eviction was refused; want the budget to have refused the first at least once")
	}
	if got.others > 0 {
		t.Errorf("%d eviction requests of Pods that were not the asking agent's own", got.others)
	}
}

// pairOn returns the agent Pod of pairs whose VM is pinned to node (or,
// when none is, any), its VM's name and the VM's node.
func pairOn(pairs map[string]kubevirtv1.VirtualMachine, node string) (pod, vm, on string) {
	for p, v := range pairs {
		n := testcluster.PinnedNode(v.Spec.Template.Spec.Affinity)
		if pod == "" || n == node {
			pod, vm, on = p, v.Name, n
		}
	}
	return pod, vm, on
}

func otherNode(nodes []string, node string) string {
	if nodes[0] == node {
		return nodes[1]
	}
	return nodes[0]
}

// hog puts a Pod on node, past the scheduler (spec.nodeName), that takes
// 20Gi of its 32Gi: what is left holds no 12Gi VM's launcher Pod. It has
// the priority class given, if any.
func hog(t *testing.T, ns, node string, priorityClass ...string) {
	t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "hog-" + node, Namespace: ns},
		Spec: corev1.PodSpec{
			PriorityClassName: strings.Join(priorityClass, ""),
			NodeName:          node,
			Tolerations:       []corev1.Toleration{{Key: sizedKey, Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{Name: "hog", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceMemory: apiresource.MustParse("20Gi")},
			}}},
			TerminationGracePeriodSeconds: ptr.To[int64](0),
		},
	}
	if _, err := e.kube.CoreV1().Pods(ns).Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitMoved waits until Pod pod is gone and ns's two VMs, the new one ready,
// run on node to; it returns the pairs then.
func waitMoved(t *testing.T, ns, pod, to string) map[string]kubevirtv1.VirtualMachine {
	t.Helper()
	var pairs map[string]kubevirtv1.VirtualMachine
	eventually(t, settle+3*moveAfter, "Pod "+pod+" to move its VM to "+to, func(ctx context.Context) (bool, string, error) {
		vms, err := derivedVMs(ctx, ns)
		if err != nil {
			return false, "", err
		}
		pods, err := agentPods(ctx, ns)
		if err != nil {
			return false, "", err
		}
		pairs = map[string]kubevirtv1.VirtualMachine{}
		var where []string
		for _, vm := range vms {
			p := derive.OriginOf(&vm).PodName
			n := testcluster.PinnedNode(vm.Spec.Template.Spec.Affinity)
			where = append(where, fmt.Sprintf("%s on %s ready %v", vm.Name, n, vm.Status.Ready))
			if _, ok := pods[p]; ok && p != pod && n == to && vm.Status.Ready {
				pairs[p] = vm
			}
		}
		_, still := pods[pod]
		return !still && len(pairs) == 2, fmt.Sprintf("Pod %s there: %v; VMs: %s", pod, still, strings.Join(where, ", ")), nil
	})
	return pairs
}

// evictions counts the eviction requests of ns's agents in the audit log.
type evictions struct{ asked, allowed, others int }

func evictionsOf(t *testing.T, ns string) evictions {
	t.Helper()
	events, err := e.cluster.ReadAudit()
	if err != nil {
		t.Fatal(err)
	}
	var out evictions
	for _, ev := range events {
		if ev.User.Username != "system:serviceaccount:"+ns+":vmctl-testvm" || ev.ObjectRef.Subresource != "eviction" {
			continue
		}
		out.asked++
		if ev.ObjectRef.Name != ev.Pod() {
			out.others++
		}
		if ev.ResponseStatus.Code < 300 {
			out.allowed++
		}
	}
	return out
}

//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
)

// Labels and taints the placement tests put on the shared cluster's nodes,
// each with the test's namespace as value, and take off again.
const (
	poolLabel     = "e2e.vmctl.kubevirt.io/pool"
	dedicatedKey  = "e2e.vmctl.kubevirt.io/dedicated"
	placementWait = settle
)

// TestPlacementNodeSelector: the agents of a prototype with a nodeSelector
// land only on the nodes it selects, and so do their VMs.
func TestPlacementNodeSelector(t *testing.T) {
	ns := namespace(t)
	pool := e.cluster.Nodes[:2]
	for _, n := range pool {
		labelNode(t, n, poolLabel, ns)
	}
	createPrototypeWith(t, ns, "testvm.yaml", func(vm *kubevirtv1.VirtualMachine) {
		vm.Spec.Template.Spec.NodeSelector = map[string]string{poolLabel: ns}
	})
	deploy(t, ns, scaffold.KindDeployment, "testvm", "--replicas", "4")
	pairs := waitPaired(t, ns, "testvm", 4, placementWait)
	for pod, vm := range pairs {
		if node := testcluster.PinnedNode(vm.Spec.Template.Spec.Affinity); !slices.Contains(pool, node) {
			t.Errorf("Pod %s and its VM run on %s, outside the prototype's nodes %v", pod, node, pool)
		}
	}
	checkNoProblems(t, ns)
}

// TestPlacementTaintedDedicatedNodes: a prototype for a dedicated node,
// tainted so that nothing else runs there, selects it and tolerates its
// taint; its agents go there, where nothing else may, and its VMs run.
func TestPlacementTaintedDedicatedNodes(t *testing.T) {
	ns := namespace(t)
	dedicated := e.cluster.Nodes[len(e.cluster.Nodes)-1]
	labelNode(t, dedicated, dedicatedKey, ns)
	taintNode(t, dedicated, corev1.Taint{Key: dedicatedKey, Value: ns, Effect: corev1.TaintEffectNoSchedule})
	createPrototypeWith(t, ns, "testvm.yaml", func(vm *kubevirtv1.VirtualMachine) {
		spec := &vm.Spec.Template.Spec
		spec.NodeSelector = map[string]string{dedicatedKey: ns}
		spec.Tolerations = []corev1.Toleration{{Key: dedicatedKey, Operator: corev1.TolerationOpEqual, Value: ns, Effect: corev1.TaintEffectNoSchedule}}
	})
	deploy(t, ns, scaffold.KindDeployment, "testvm", "--replicas", "2")
	pairs := waitPaired(t, ns, "testvm", 2, placementWait)
	for pod, vm := range pairs {
		if node := testcluster.PinnedNode(vm.Spec.Template.Spec.Affinity); node != dedicated {
			t.Errorf("Pod %s and its VM run on %s, not on the dedicated node %s", pod, node, dedicated)
		}
	}
	checkNoProblems(t, ns)
}

// TestPlacementChangedAfterScaffold: the prototype moves to a pool of one
// node after its Deployment was scaffolded. The template pins the revision
// of before, placement included, so a VM made again stays by its Pod, of
// that revision, with no problem, and status says once that the prototype
// has changes to roll out; rollout restart carries the new placement into
// the template, and the new Pod and its VM run in the pool.
func TestPlacementChangedAfterScaffold(t *testing.T) {
	ns := namespace(t)
	createPrototype(t, ns, "testvm.yaml")
	deploy(t, ns, scaffold.KindDeployment, "testvm", "--replicas", "1")
	pairs := waitPaired(t, ns, "testvm", 1, placementWait)
	pod := firstKey(pairs)
	podNode := testcluster.PinnedNode(pairs[pod].Spec.Template.Spec.Affinity)
	poolNode := e.cluster.Nodes[0]
	if poolNode == podNode {
		poolNode = e.cluster.Nodes[1]
	}
	labelNode(t, poolNode, poolLabel, ns)
	kubectl(t, nil, "patch", "vm", "testvm", "-n", ns, "--type", "merge",
		"-p", fmt.Sprintf(`{"spec":{"template":{"spec":{"nodeSelector":{%q:%q}}}}}`, poolLabel, ns))

	// The agent makes its VM again from the pinned revision, not from the
	// prototype as it is now.
	old := pairs[pod].UID
	kubectl(t, nil, "delete", "vm", pairs[pod].Name, "-n", ns, "--wait=false")
	eventually(t, placementWait, "the VM made again", func(ctx context.Context) (bool, string, error) {
		vms, err := derivedVMs(ctx, ns)
		if err != nil || len(vms) != 1 {
			return false, fmt.Sprintf("%d VMs", len(vms)), err
		}
		vm := vms[firstKey(vms)]
		return vm.UID != old && vm.Status.Ready, fmt.Sprintf("VM %s ready %t", vm.UID, vm.Status.Ready), nil
	})
	for _, vm := range waitPaired(t, ns, "testvm", 1, placementWait) {
		if sel := vm.Spec.Template.Spec.NodeSelector; sel[poolLabel] != "" {
			t.Errorf("VM %s made again has the prototype's new nodeSelector %v, want the pinned revision's", vm.Name, sel)
		}
	}
	checkNoProblems(t, ns)
	if _, stderr, code := vmctlCode(t, "status", "-n", ns, "--exit-code"); code != 0 || !strings.Contains(stderr, "rollout restart testvm") {
		t.Errorf("status --exit-code: exit %d, stderr %q; want 0 and a note that the prototype has changes to roll out", code, stderr)
	}

	// The rollout.
	out := vmctl(t, "rollout", "restart", "testvm", "-n", ns)
	if !strings.Contains(out, "restarted") {
		t.Errorf("rollout restart printed %q", out)
	}
	vmctl(t, "rollout", "status", "testvm", "-n", ns, "--timeout", "3m")
	pairs = waitPaired(t, ns, "testvm", 1, placementWait)
	for p, vm := range pairs {
		if node := testcluster.PinnedNode(vm.Spec.Template.Spec.Affinity); p == pod || node != poolNode {
			t.Errorf("after the rollout Pod %s (was %s) and its VM run on %s, want a new Pod on %s", p, pod, node, poolNode)
		}
	}
	checkNoProblems(t, ns)
}

// checkNoProblems fails t when status names a problem in ns.
func checkNoProblems(t *testing.T, ns string) {
	t.Helper()
	for _, r := range statusRows(t, ns) {
		if len(r.Problems) > 0 {
			t.Errorf("status: %s/%s has problems %q", r.Pod, r.VM, r.Problems)
		}
	}
}

// labelNode sets node's label key to value until t ends.
func labelNode(t *testing.T, node, key, value string) {
	t.Helper()
	patchNodeLabel(t, node, fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, key, value))
	t.Cleanup(func() { patchNodeLabel(t, node, fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, key)) })
}

func patchNodeLabel(t *testing.T, node, patch string) {
	t.Helper()
	if _, err := e.kube.CoreV1().Nodes().Patch(context.Background(), node, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("label node %s: %v", node, err)
	}
}

// taintNode adds taint to node until t ends.
func taintNode(t testing.TB, node string, taint corev1.Taint) {
	t.Helper()
	updateTaints(t, node, func(taints []corev1.Taint) []corev1.Taint { return append(taints, taint) })
	t.Cleanup(func() {
		updateTaints(t, node, func(taints []corev1.Taint) []corev1.Taint {
			return slices.DeleteFunc(taints, func(x corev1.Taint) bool { return x.MatchTaint(&taint) })
		})
	})
}

func updateTaints(t testing.TB, node string, change func([]corev1.Taint) []corev1.Taint) {
	t.Helper()
	nodes := e.kube.CoreV1().Nodes()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := nodes.Get(context.Background(), node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Spec.Taints = change(n.Spec.Taints)
		_, err = nodes.Update(context.Background(), n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("taint node %s: %v", node, err)
	}
}

//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/status"
)

// orphanDelete deletes the VM namespace/name as `kubectl delete vm
// --cascade=orphan` does: the garbage collector then removes the VM's
// reference from its VMI, which runs on.
func orphanDelete(t *testing.T, namespace, name string) {
	t.Helper()
	err := e.virt.KubevirtV1().VirtualMachines(namespace).Delete(context.Background(), name,
		metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationOrphan)})
	if err != nil {
		t.Fatal(err)
	}
}

// waitVMI waits until the VMI namespace/name is as ok says, and returns it.
func waitVMI(t *testing.T, namespace, name, what string, ok func(*kubevirtv1.VirtualMachineInstance) bool) *kubevirtv1.VirtualMachineInstance {
	t.Helper()
	var vmi *kubevirtv1.VirtualMachineInstance
	eventually(t, settle, what, func(ctx context.Context) (bool, string, error) {
		got, err := e.virt.KubevirtV1().VirtualMachineInstances(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		vmi = got
		return ok(got), fmt.Sprintf("phase %s, owners %v", got.Status.Phase, got.OwnerReferences), nil
	})
	return vmi
}

// TestOrphanedVMI: a VM deleted with propagationPolicy Orphan leaves its
// instance, and the guest in it, running with no VM (the agents' policy
// refuses such a delete from their tokens: TestStolenAgentToken; a person
// can still do it). Where its Pod is gone, status names it and gc deletes
// it; where its Pod lives, that Pod's agent makes its VM again, which
// KubeVirt adopts the instance into, and gc leaves it meanwhile.
func TestOrphanedVMI(t *testing.T) {
	ns := namespace(t)
	proto := createPrototype(t, ns, "testvm.yaml")
	deploy(t, ns, scaffold.KindDeployment, "testvm", "--replicas", "1")
	pairs := waitPaired(t, ns, "testvm", 1, settle)

	// A Pod that is gone: its VM made by hand, as its agent would have.
	ghost := createOrphan(t, proto, "ghost")
	waitVMI(t, ns, ghost.Name, "the ghost's VMI running, owned by its VM", func(v *kubevirtv1.VirtualMachineInstance) bool {
		return v.Status.Phase == kubevirtv1.Running && metav1.GetControllerOfNoCopy(v) != nil
	})
	orphanDelete(t, ns, ghost.Name)
	waitVMI(t, ns, ghost.Name, "the ghost's VMI without owner", func(v *kubevirtv1.VirtualMachineInstance) bool {
		return metav1.GetControllerOfNoCopy(v) == nil
	})
	eventually(t, settle, "status names the orphaned VMI", func(ctx context.Context) (bool, string, error) {
		for _, r := range statusRows(t, ns) {
			if r.VM == ghost.Name && slices.Equal(r.Problems, []string{status.ProblemOrphanedVMI}) {
				return true, "", nil
			}
		}
		return false, "no row of it", nil
	})
	_, _, code := vmctlCode(t, "status", "-n", ns, "--exit-code")
	if code != 1 {
		t.Errorf("status --exit-code with an orphaned VMI: exit %d, want 1", code)
	}

	// The live Pod's VM deleted so: its agent makes it again.
	var live string
	var liveVM kubevirtv1.VirtualMachine
	for pod, vm := range pairs {
		live, liveVM = pod, vm
	}
	orphanDelete(t, ns, liveVM.Name)
	out := vmctl(t, "gc", "-n", ns, "--min-age=0s", "--dry-run=server")
	if !strings.Contains(out, "virtualmachineinstance.kubevirt.io/"+ghost.Name+" deleted from "+ns+" namespace (server dry run) (orphaned: no VM, and its Pod \"ghost\"") {
		t.Errorf("gc --dry-run=server does not delete the ghost's VMI:\n%s", out)
	}
	if strings.Contains(out, liveVM.Name) {
		t.Errorf("gc --dry-run=server deletes %s, whose Pod %s lives:\n%s", liveVM.Name, live, out)
	}
	waitVMI(t, ns, liveVM.Name, "the live Pod's VMI adopted by its new VM", func(v *kubevirtv1.VirtualMachineInstance) bool {
		owner := metav1.GetControllerOfNoCopy(v)
		return owner != nil && owner.UID != liveVM.UID
	})
	waitPaired(t, ns, "testvm", 1, settle)

	out = vmctl(t, "gc", "-n", ns, "--min-age=0s")
	if !strings.Contains(out, "virtualmachineinstance.kubevirt.io/"+ghost.Name+" deleted") {
		t.Errorf("gc does not delete the ghost's VMI:\n%s", out)
	}
	eventually(t, settle, "the ghost's VMI gone", func(ctx context.Context) (bool, string, error) {
		_, err := e.virt.KubevirtV1().VirtualMachineInstances(ns).Get(ctx, ghost.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err), nil
	})
	for _, r := range statusRows(t, ns) {
		if len(r.Problems) > 0 {
			t.Errorf("status after gc: %s/%s has problems %q", r.Pod, r.VM, r.Problems)
		}
	}
}

// TestGCSparesAnotherNamespacesPrototype: prototype P/pq-gone is a copy of
// a VM derived from pq for a Pod, gone, in another namespace, so it has no
// ownerReference and bears the name an agent gives; a fleet in namespace C
// uses it (--proto-namespace P). gc -n P reads the Pods of every
// namespace before it deletes such a VM, and leaves this one, saying which
// Pod names it; a user who may list Pods in P but not everywhere is told
// why gc leaves it. gc -A leaves it too.
func TestGCSparesAnotherNamespacesPrototype(t *testing.T) {
	p, c, q := namespace(t), namespace(t), namespace(t)
	pq := readPrototype(t, "testvm.yaml", func(vm *kubevirtv1.VirtualMachine) { vm.Name, vm.Namespace = "pq", p })
	copied, err := derive.VM(pq, derive.Pod{Name: "gone", Namespace: q, UID: "00000000-0000-0000-0000-00000000000f", Node: e.cluster.Nodes[0]},
		derive.Options{Namespace: p})
	if err != nil {
		t.Fatal(err)
	}
	copied.Spec.RunStrategy = ptr.To(kubevirtv1.RunStrategyHalted)
	if _, err := e.virt.KubevirtV1().VirtualMachines(p).Create(context.Background(), copied, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	unmarkedWhile(t, p, copied.Name, func() {
		kubectl(t, []byte(vmctl(t, "scaffold", "deployment", copied.Name, "-n", c, "--proto-namespace", p, "--replicas", "1")), "apply", "-f", "-")
	})
	t.Cleanup(func() { deleteScaffolded(c) })
	eventually(t, settle, "the fleet's Pod in "+c, func(ctx context.Context) (bool, string, error) {
		pods, err := agentPods(ctx, c)
		return err == nil && len(pods) == 1, fmt.Sprintf("%d agent Pods", len(pods)), err
	})

	for _, args := range [][]string{{"-n", p}, {"-A"}} {
		out, stderr, code := vmctlCode(t, append([]string{"gc", "--min-age=0s", "--dry-run=server"}, args...)...)
		if code != 0 || strings.Contains(out, copied.Name) {
			t.Errorf("gc %v: exit %d, would delete:\n%s", args, code, out)
		}
		if !strings.Contains(stderr, "virtualmachine.kubevirt.io/"+copied.Name+" in "+p+" namespace left alone: pod "+c+"/") {
			t.Errorf("gc %v does not say why it leaves %s alone:\n%s", args, copied.Name, stderr)
		}
	}
	// gc reads the namespace's revision stores too: the ClusterRole that
	// scaffold crd aggregates to view lets it.
	kubectl(t, nil, "create", "rolebinding", "p-admin-stores", "-n", p, "--clusterrole=vmctl-vmrevisionstores-view", "--user=p-admin")
	grantOperator(t, p, "p-admin", "list", "delete")
	grantOperator(t, q, "p-admin", "list") // where the copy records its Pod
	out, stderr, code := vmctlCode(t, "gc", "-n", p, "--min-age=0s", "--dry-run=server", "--as=p-admin")
	if code != 0 || strings.Contains(out, copied.Name) || !strings.Contains(stderr, "may not list Pods in all namespaces") {
		t.Errorf("gc as a user who may not list Pods everywhere: exit %d, stdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	if _, err := e.virt.KubevirtV1().VirtualMachines(p).Get(context.Background(), copied.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("prototype %s/%s: %v", p, copied.Name, err)
	}
}

// TestStatusPairsWhereTheAgentMakesVMs: a VM made by hand in one namespace,
// recording a live agent Pod of another (its name, namespace and UID), is
// not that Pod's VM: status -A shows it apart, saying so, and pairs the
// Pod with the VM its agent made; gc leaves both.
func TestStatusPairsWhereTheAgentMakesVMs(t *testing.T) {
	ns, elsewhere := namespace(t), namespace(t)
	proto := createPrototype(t, ns, "testvm.yaml")
	deploy(t, ns, scaffold.KindDeployment, "testvm", "--replicas", "1")
	pairs := waitPaired(t, ns, "testvm", 1, settle)
	pods, err := agentPods(t.Context(), ns)
	if err != nil {
		t.Fatal(err)
	}
	var pod string
	for name := range pods {
		pod = name
	}
	p := pods[pod]
	handMade, err := derive.VM(proto, derive.Pod{Name: p.Name, Namespace: ns, UID: p.UID, Node: p.Spec.NodeName}, derive.Options{Namespace: elsewhere})
	if err != nil {
		t.Fatal(err)
	}
	handMade.Spec.RunStrategy = ptr.To(kubevirtv1.RunStrategyHalted)
	if _, err := e.virt.KubevirtV1().VirtualMachines(elsewhere).Create(context.Background(), handMade, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var rows []status.Row
	for _, r := range allNamespacesRows(t) {
		if r.Namespace == ns || r.Namespace == elsewhere {
			rows = append(rows, r)
		}
	}
	want := map[types.NamespacedName][]string{
		{Namespace: ns, Name: pairs[pod].Name}:      nil,
		{Namespace: elsewhere, Name: handMade.Name}: {"not its Pod's: the Pod's agent makes its VMs in namespace " + ns},
	}
	if len(rows) != len(want) {
		t.Fatalf("status -A shows %d rows of %s and %s, want 2: %+v", len(rows), ns, elsewhere, rows)
	}
	for _, r := range rows {
		problems, ok := want[types.NamespacedName{Namespace: r.VMNamespace, Name: r.VM}]
		if !ok || !slices.Equal(problems, r.Problems) {
			t.Errorf("status -A: %s/%s (Pod %s) has problems %q, want %q", r.VMNamespace, r.VM, r.Pod, r.Problems, problems)
		}
	}
	if out := vmctl(t, "gc", "-n", elsewhere, "--min-age=0s", "--dry-run=server"); out != "" {
		t.Errorf("gc deletes:\n%s", out)
	}
}

// allNamespacesRows runs `vmctl status -A -o json` and returns its rows.
func allNamespacesRows(t *testing.T) []status.Row {
	t.Helper()
	var list struct {
		Items []status.Row `json:"items"`
	}
	if err := json.Unmarshal([]byte(vmctl(t, "status", "-A", "-o", "json")), &list); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

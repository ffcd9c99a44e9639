//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/status"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
)

// drainTimeout is what a drain of a node with two VMs may take.
const drainTimeout = 2 * time.Minute

// TestDrainFollowsTheWorkload drains a node under Deployments of 4 agents
// over 3 nodes, with KubeVirt's real eviction webhook in the loop: the
// launcher Pods' evictions are held (evictionStrategy External), the agent
// Pods' are paced by the PodDisruptionBudget, and a watch over the VMs shows
// that no more than one VM was ever down.
func TestDrainFollowsTheWorkload(t *testing.T) {
	for _, tc := range []struct {
		name  string
		pdb   policyv1.PodDisruptionBudgetSpec
		proto func(*kubevirtv1.VirtualMachine)
	}{
		{name: "minAvailable 3", pdb: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(3))}},
		{name: "maxUnavailable 1", pdb: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(1))}},
		// A prototype that asks to migrate on eviction: a pinned VM cannot,
		// and the agent's override keeps the drain from hanging on it.
		{name: "prototype with LiveMigrate", pdb: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(3))},
			proto: func(vm *kubevirtv1.VirtualMachine) {
				vm.Spec.Template.Spec.EvictionStrategy = ptr.To(kubevirtv1.EvictionStrategyLiveMigrate)
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := namespace(t)
			// Earlier tests' Pods would be evicted by the drain too.
			waitOthersGone(t, ns)
			createPrototypeWith(t, ns, "testvm.yaml", tc.proto)
			// Four agents over three nodes: one node holds two.
			spare := e.cluster.Nodes[len(e.cluster.Nodes)-1]
			cordon(t, spare)
			deploy(t, ns, scaffold.KindDeployment, "testvm", "--replicas", "4")
			pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "agents"}, Spec: tc.pdb}
			pdb.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{
				contract.LabelName: contract.AppName, contract.LabelInstance: scaffold.DefaultName("testvm")}}
			if _, err := e.kube.PolicyV1().PodDisruptionBudgets(ns).Create(t.Context(), pdb, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			before := waitPaired(t, ns, "testvm", 4, settle)
			uncordon(t, spare)
			waitPDBAllows(t, ns, "agents", 1)
			node := busiestNode(before)

			lowest := watchReadyVMs(t, ns)
			start := time.Now()
			t.Cleanup(func() { uncordon(t, node) }) // also when the drain fails: a cordoned node fails the tests after
			kubectl(t, nil, "drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout="+drainTimeout.String())
			took := time.Since(start)
			t.Logf("drained %s (2 of 4 VMs) in %v", node, took.Round(100*time.Millisecond))

			after := waitPaired(t, ns, "testvm", 4, settle)
			if got := lowest(); got < 3 {
				t.Errorf("at one moment only %d of 4 derived VMs were ready; the budget allows one down", got)
			}
			for pod, vm := range after {
				if n := testcluster.PinnedNode(vm.Spec.Template.Spec.Affinity); n == node {
					t.Errorf("pod %s's VM is still pinned to the drained node %s", pod, node)
				}
			}
			for pod, vm := range before {
				if testcluster.PinnedNode(vm.Spec.Template.Spec.Affinity) != node {
					if after[pod].UID != vm.UID {
						t.Errorf("VM of pod %s on an undrained node was replaced", pod)
					}
				}
			}
			if tc.proto != nil {
				// The override holds for the whole prototype: status says it
				// once, and no agent records it as an Event.
				_, stderr, code := vmctlCode(t, "status", "-n", ns)
				want := "Warning: prototype " + ns + "/testvm: it asks for evictionStrategy LiveMigrate, but its VMs run with External"
				if code != 0 || strings.Count(stderr, want) != 1 {
					t.Errorf("status: exit %d, stderr %q; want 0 and %q once", code, stderr, want)
				}
				events, err := e.kube.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{FieldSelector: "reason=EvictionStrategyOverridden"})
				if err != nil {
					t.Fatal(err)
				}
				if len(events.Items) != 0 {
					t.Errorf("%d EvictionStrategyOverridden Events, want none: the agents only log it", len(events.Items))
				}
			}
		})
	}
}

// TestDrainStopsDaemonSetVM drains a node under a DaemonSet with
// --ignore-daemonsets: the agent Pod stays, so the agent stops its VM when
// KubeVirt marks it for evacuation; after uncordon the same Pod's VM runs
// again.
func TestDrainStopsDaemonSetVM(t *testing.T) {
	ns, node := namespace(t), e.cluster.Nodes[0]
	before, pod := daemonSetOn(t, ns, node)
	podBefore, err := e.kube.CoreV1().Pods(ns).Get(t.Context(), pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	t.Cleanup(func() { uncordon(t, node) }) // also when the drain fails
	kubectl(t, nil, "drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout="+drainTimeout.String())
	t.Logf("drained %s with a DaemonSet agent on it in %v", node, time.Since(start).Round(100*time.Millisecond))
	vmName := shortVMName("testvm", pod)
	eventually(t, settle, "no VMI running on the drained node, the agent unready", func(ctx context.Context) (bool, string, error) {
		vmis, err := e.virt.KubevirtV1().VirtualMachineInstances(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		var on []string
		for _, vmi := range vmis.Items {
			if vmi.Status.NodeName == node && vmi.DeletionTimestamp == nil {
				on = append(on, vmi.Name+" "+string(vmi.Status.Phase))
			}
		}
		p, err := e.kube.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		return len(on) == 0 && !podReady(p), fmt.Sprintf("VMIs on %s: %v; pod ready %v", node, on, podReady(p)), nil
	})
	if readyz := agentReadyz(t, ns, pod); !strings.HasPrefix(readyz.body, "Evacuated") {
		t.Errorf("agent /readyz %q, want Evacuated", readyz.body)
	}

	// status names the drain: the VM's new VMI waits for its cordoned node.
	eventually(t, settle, "status says the VM is held by the drain", func(context.Context) (bool, string, error) {
		out, _, _ := vmctlCode(t, "status", "-n", ns)
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, pod+" ") {
				return strings.Contains(line, status.ProblemHeldByDrain), line, nil
			}
		}
		return false, out, nil
	})

	uncordoned := time.Now()
	uncordon(t, node)
	after := waitPaired(t, ns, "testvm", len(e.cluster.Nodes), settle)
	t.Logf("VM of pod %s ready again %v after uncordon", pod, time.Since(uncordoned).Round(100*time.Millisecond))
	podAfter, err := e.kube.CoreV1().Pods(ns).Get(t.Context(), pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if podAfter.UID != podBefore.UID || podAfter.Status.ContainerStatuses[0].RestartCount != podBefore.Status.ContainerStatuses[0].RestartCount {
		t.Errorf("the agent Pod was replaced or restarted: uid %s -> %s", podBefore.UID, podAfter.UID)
	}
	if after[pod].UID != before[pod].UID {
		t.Errorf("VM %s was replaced (uid %s -> %s); it should only have stopped and started", vmName, before[pod].UID, after[pod].UID)
	}
	events, err := e.kube.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{
		FieldSelector: fields.Set{"involvedObject.name": pod, "reason": "Evacuated"}.String()})
	if err != nil || len(events.Items) != 1 {
		t.Errorf("Evacuated Events on pod %s: %d (%v), want 1", pod, len(events.Items), err)
	}
}

// TestDrainInterrupted interrupts a drain under a DaemonSet: the agent is
// killed as KubeVirt marks its VMI, the drain is stopped and the node
// uncordoned midway. Nothing may leak or double: the same Pod keeps the same
// VM, which runs again with one VMI.
func TestDrainInterrupted(t *testing.T) {
	ns, node := namespace(t), e.cluster.Nodes[0]
	before, pod := daemonSetOn(t, ns, node)
	vmName := shortVMName("testvm", pod)
	restarts := e.kubelet.Restarts(ns, pod)
	running, err := e.virt.KubevirtV1().VirtualMachineInstances(ns).Get(t.Context(), vmName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	ctx, stopDrain := context.WithCancel(t.Context())
	drain := exec.CommandContext(ctx, "kubectl", "drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout="+drainTimeout.String())
	drain.Env = append(os.Environ(), "KUBECONFIG="+e.cluster.Kubeconfig)
	if err := drain.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { uncordon(t, node) })
	// Stopped already: the VMI being deleted, gone, or KubeVirt's next one
	// in its place.
	eventually(t, settle, "KubeVirt marks the VMI for evacuation, or the agent already stopped it", func(ctx context.Context) (bool, string, error) {
		vmi, err := e.virt.KubevirtV1().VirtualMachineInstances(ns).Get(ctx, vmName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		if err != nil {
			return false, "", err
		}
		return vmi.Status.EvacuationNodeName != "" || vmi.DeletionTimestamp != nil || vmi.UID != running.UID, string(vmi.Status.Phase), nil
	})
	if err := e.kubelet.Signal(ns, pod, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	stopDrain()
	_ = drain.Wait()
	uncordon(t, node)

	after := waitPaired(t, ns, "testvm", len(e.cluster.Nodes), settle)
	for p, vm := range before {
		if after[p].UID != vm.UID {
			t.Errorf("VM of pod %s replaced: uid %s -> %s", p, vm.UID, after[p].UID)
		}
	}
	// The kubelet double restarts the killed agent at its own pace.
	eventually(t, settle, "the killed agent restarted once", func(context.Context) (bool, string, error) {
		got := e.kubelet.Restarts(ns, pod) - restarts
		return got == 1, fmt.Sprintf("%d restarts", got), nil
	})
	eventually(t, settle, "one VMI per VM, none being deleted", func(ctx context.Context) (bool, string, error) {
		vmis, err := e.virt.KubevirtV1().VirtualMachineInstances(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		var names []string
		ok := len(vmis.Items) == len(e.cluster.Nodes)
		for _, vmi := range vmis.Items {
			names = append(names, vmi.Name+" "+string(vmi.Status.Phase))
			ok = ok && vmi.DeletionTimestamp == nil && vmi.Status.Phase == kubevirtv1.Running
		}
		return ok, strings.Join(names, ", "), nil
	})
}

// daemonSetOn runs a scaffolded DaemonSet of testvm agents in ns and
// returns its pairs once every node has a ready VM, and the Pod on node.
func daemonSetOn(t *testing.T, ns, node string) (before map[string]kubevirtv1.VirtualMachine, pod string) {
	t.Helper()
	createPrototype(t, ns, "testvm.yaml")
	deploy(t, ns, scaffold.KindDaemonSet, "testvm")
	before = waitPaired(t, ns, "testvm", len(e.cluster.Nodes), settle)
	for p, vm := range before {
		if testcluster.PinnedNode(vm.Spec.Template.Spec.Affinity) == node {
			pod = p
		}
	}
	return before, pod
}

// watchReadyVMs watches ns's derived VMs from now until t ends and returns
// a function reporting the fewest that were ready at once after the first
// event.
func watchReadyVMs(t *testing.T, ns string) func() int {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	list, err := e.virt.KubevirtV1().VirtualMachines(ns).List(ctx, metav1.ListOptions{LabelSelector: derive.DerivedSelector})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	vms := map[string]bool{}
	ready := func() int {
		n := 0
		for _, r := range vms {
			if r {
				n++
			}
		}
		return n
	}
	isReady := func(vm *kubevirtv1.VirtualMachine) bool { return vm.Status.Ready && vm.DeletionTimestamp == nil }
	for i := range list.Items {
		vms[list.Items[i].Name] = isReady(&list.Items[i])
	}
	lowest := ready()
	w, err := e.virt.KubevirtV1().VirtualMachines(ns).Watch(ctx, metav1.ListOptions{
		LabelSelector: derive.DerivedSelector, ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			vm, ok := ev.Object.(*kubevirtv1.VirtualMachine)
			if !ok {
				continue
			}
			mu.Lock()
			vms[vm.Name] = ev.Type != watch.Deleted && isReady(vm)
			lowest = min(lowest, ready())
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cancel()
		w.Stop()
		<-done
	})
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return lowest
	}
}

// busiestNode is the node most VMs of pairs are pinned to.
func busiestNode(pairs map[string]kubevirtv1.VirtualMachine) string {
	count := map[string]int{}
	for _, vm := range pairs {
		count[testcluster.PinnedNode(vm.Spec.Template.Spec.Affinity)]++
	}
	nodes := make([]string, 0, len(count))
	for n := range count {
		nodes = append(nodes, n)
	}
	sort.Slice(nodes, func(i, j int) bool { return count[nodes[i]] > count[nodes[j]] })
	return nodes[0]
}

// waitPDBAllows waits until the disruption controller lets name allow want
// disruptions.
func waitPDBAllows(t *testing.T, ns, name string, want int32) {
	t.Helper()
	eventually(t, settle, "PodDisruptionBudget "+name+" computed", func(ctx context.Context) (bool, string, error) {
		pdb, err := e.kube.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		s := pdb.Status
		return s.DisruptionsAllowed == want, fmt.Sprintf("allowed %d healthy %d/%d", s.DisruptionsAllowed, s.CurrentHealthy, s.DesiredHealthy), nil
	})
}

func cordon(t *testing.T, node string) {
	t.Helper()
	kubectl(t, nil, "cordon", node)
	t.Cleanup(func() { uncordon(t, node) })
}

func uncordon(t testing.TB, node string) {
	t.Helper()
	kubectl(t, nil, "uncordon", node)
}

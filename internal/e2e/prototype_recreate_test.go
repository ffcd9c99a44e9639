//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
)

// TestPrototypeDeletedAndMadeAgain deletes the prototype of a scaffolded
// Deployment (admission policy on) and makes it again, as `kubectl replace
// --force` or a delete and apply would. The API server looks the policy's
// parameter (the prototype) up before it evaluates the policy's
// matchConditions, so while the binding matched every VM in the namespace
// it refused everyone's VM writes there, the prototype's re-creation and
// KubeVirt's own included, until the prototype was back: which could then
// never happen. Found by the chaos soak (TestSoak's recreate-prototype).
func TestPrototypeDeletedAndMadeAgain(t *testing.T) {
	ns := namespace(t)
	proto := createPrototype(t, ns, "testvm.yaml")
	deploy(t, ns, scaffold.KindDeployment, "testvm", "--replicas", "1")
	before := waitPaired(t, ns, "testvm", 1, settle)
	waitPrototypePolicy(t, ns, before)

	vms := e.virt.KubevirtV1().VirtualMachines(ns)
	if err := vms.Delete(t.Context(), proto.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, settle, "the prototype gone", func(ctx context.Context) (bool, string, error) {
		_, err := vms.Get(ctx, proto.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err), nil
	})
	// Meanwhile another VM of the namespace, not the agents', can be made.
	if _, err := vms.Create(t.Context(), plainVM(proto, "unrelated"), metav1.CreateOptions{}); err != nil {
		t.Errorf("create an unrelated VM while the prototype is missing: %v", err)
	}
	// And the derived VMs can be changed and deleted meanwhile (dry runs:
	// admission judges them as the real thing), as KubeVirt's status
	// updates and an agent's delete must: the prototype-bound policy
	// judges creates only, and a policy without its parameter refuses
	// whatever it matches.
	for pod, vm := range before {
		if _, err := vms.Patch(t.Context(), vm.Name, types.MergePatchType, []byte(`{"metadata":{"labels":{"touched":"yes"}}}`),
			metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Errorf("change pod %s's VM while the prototype is missing: %v", pod, err)
		}
		if err := vms.Delete(t.Context(), vm.Name, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Errorf("delete pod %s's VM while the prototype is missing: %v", pod, err)
		}
	}
	again := &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: proto.Name, Labels: proto.Labels},
		Spec:       proto.Spec,
	}
	if _, err := vms.Create(t.Context(), again, metav1.CreateOptions{}); err != nil {
		t.Fatalf("make the prototype again: %v", err)
	}
	after := waitPaired(t, ns, "testvm", 1, settle)
	for pod, vm := range before {
		if after[pod].UID != vm.UID {
			t.Errorf("VM of pod %s replaced: uid %s -> %s", pod, vm.UID, after[pod].UID)
		}
	}

	// Its manifests applied again: the prototype made again is alike, so
	// its revision has the same hash, which the store holds already, made
	// from the prototype with its old UID. kubectl apply refused to change
	// it (a retained revision never changes) until scaffold printed the
	// revisions the store holds as stored.
	deploy(t, ns, scaffold.KindDeployment, "testvm", "--replicas", "1")
	for pod, vm := range waitPaired(t, ns, "testvm", 1, settle) {
		if before[pod].UID != vm.UID {
			t.Errorf("VM of pod %s replaced by the apply: uid %s -> %s", pod, before[pod].UID, vm.UID)
		}
	}
}

// waitPrototypePolicy waits until the API server enforces the policy bound
// to the prototype (it does once its informers have the policy): until
// then the bug this test is for cannot show. The agent's token asking to
// create its own VM under another name is refused by it.
func waitPrototypePolicy(t *testing.T, ns string, pairs map[string]kubevirtv1.VirtualMachine) {
	t.Helper()
	pods, err := agentPods(t.Context(), ns)
	if err != nil {
		t.Fatal(err)
	}
	pod := firstKey(pairs)
	_, virt := agentClients(t, ns, scaffold.DefaultName("testvm"), pods[pod])
	vm := pairs[pod]
	// The agent's own VM but for its name, which only the prototype-bound
	// policy checks.
	other := &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: vm.Name + "-x", Labels: vm.Labels, Annotations: maps.Clone(vm.Annotations)},
		Spec:       vm.Spec,
	}
	eventually(t, settle, "the prototype's admission policy in force", func(ctx context.Context) (bool, string, error) {
		_, err := virt.KubevirtV1().VirtualMachines(ns).Create(ctx, other, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "name is not testvm-<pod>"), fmt.Sprint(err), nil
	})
}

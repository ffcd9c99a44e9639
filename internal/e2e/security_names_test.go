//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
)

// longPrototype is a prototype name of 63 characters: with any Pod's name
// the VM's name is cut, and ends in the Pod's UID's last characters.
var longPrototype = strings.Repeat("p", contract.MaxNameLength-len("-long")) + "-long"

// stolenTokenLongNames tries, with the bound token of a Pod of a fleet
// whose VM names are cut (a prototype of 63 characters, `scaffold
// deployment <it> --name ld`), to create more VMs for its Pod than the one
// it may, under the cut name ended in other characters: the row of
// docs/security.md's table of names past 63 characters. Each is a real
// create, not a dry run, so that a VM it admits is seen running, as the
// review that found this saw three.
func stolenTokenLongNames(t *testing.T) {
	ns := namespace(t)
	createPrototypeWith(t, ns, "testvm.yaml", func(vm *kubevirtv1.VirtualMachine) { vm.Name = longPrototype })
	deploy(t, ns, scaffold.KindDeployment, longPrototype, "--name", "ld", "--replicas", "2")
	pairs := waitPaired(t, ns, longPrototype, 2, settle)
	pods, err := agentPods(t.Context(), ns)
	if err != nil {
		t.Fatal(err)
	}
	names := sortedKeys(pairs)
	pod, other := pods[names[0]], pods[names[1]]
	_, virt := agentClients(t, ns, "ld", pod)
	own := derivedFromRevision(t, "ld", pod, derive.Options{Namespace: ns})
	if own.Name != pairs[pod.Name].Name || !strings.HasSuffix(own.Name, "-"+contract.UIDSuffix(string(pod.UID))) {
		t.Fatalf("the agent of %s made %s; derive names it %s, ending in its UID's last characters", pod.Name, pairs[pod.Name].Name, own.Name)
	}
	eventually(t, 2*time.Minute, "the admission policy in force", func(ctx context.Context) (bool, string, error) {
		vm := own.DeepCopy()
		vm.Name = vm.Name[:len(vm.Name)-contract.UIDSuffixLength] + "zzzzzzzzzz"
		_, err := virt.KubevirtV1().VirtualMachines(ns).Create(ctx, vm, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "ValidatingAdmissionPolicy"), fmt.Sprint(err), nil
	})
	createEnding := func(suffix string) func() error {
		return func() error {
			vm := own.DeepCopy()
			vm.Name = vm.Name[:len(vm.Name)-contract.UIDSuffixLength] + suffix
			_, err := virt.KubevirtV1().VirtualMachines(ns).Create(t.Context(), vm, metav1.CreateOptions{})
			if err == nil {
				t.Cleanup(func() {
					_ = e.virt.KubevirtV1().VirtualMachines(ns).Delete(context.Background(), vm.Name, metav1.DeleteOptions{})
				})
			}
			return err
		}
	}
	const name = "name is not"
	rows := []claimRow{
		{"create its own VM, its name cut and ended in its Pod's UID", true, createEnding(contract.UIDSuffix(string(pod.UID))), ""},
		{"create a second VM, its name cut and ended in aaaaaaaaaa", false, createEnding("aaaaaaaaaa"), name},
		{"create a third VM, its name cut and ended in another agent Pod's UID", false, createEnding(contract.UIDSuffix(string(other.UID))), name},
	}
	checkTokenTable(t, "| with the stolen token of a Pod of `ld` |", rows)
	checkClaimRows(t, ns, "ld", rows)
	// status names no Pod with more than its VM.
	for _, row := range statusRows(t, ns) {
		if len(row.Problems) > 0 {
			t.Errorf("status: %s/%s has problems %q", row.Pod, row.VM, row.Problems)
		}
	}
}

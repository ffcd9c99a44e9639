//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/revision"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
)

// fixSeenWithin is how soon after a fixed prototype is rolled out its new
// agents must make their VMs.
const fixSeenWithin = 10 * time.Second

// TestFixedPrototypeIsRolledOut refuses a prototype each way the agent
// refuses one, fixes it each way a user would, rolls the fix out as the
// agent's Event says (the Pod pins a revision of the prototype: a fix
// reaches it only through `kubectl vmctl rollout restart`), and checks that
// a VM appears within fixSeenWithin of that: a fix of labels and
// annotations only (which leaves the prototype's generation alone), of its
// spec, and by making it again. The fix for a copy of a derived VM is the
// command the agent's Event prints, run as printed: it must work and print
// no error.
func TestFixedPrototypeIsRolledOut(t *testing.T) {
	t.Run("labels and annotations, by the Event's command", func(t *testing.T) {
		ns := namespace(t)
		deployMarked(t, ns)
		var fix string
		waitWarningEvent(t, ns, "the InvalidPrototype Event with its fix", func(msg string) bool {
			_, fix, _ = strings.Cut(msg, "take it for a derived VM: ")
			return fix != ""
		})
		t.Logf("the Event's fix: %s", fix)
		cmd := exec.Command("sh", "-c", fix)
		cmd.Env = append(cmd.Environ(), "KUBECONFIG="+e.cluster.Kubeconfig)
		out, err := cmd.CombinedOutput()
		if err != nil || strings.Contains(strings.ToLower(string(out)), "error") || strings.Contains(string(out), "not found") {
			t.Fatalf("the Event's fix %q: %v\n%s", fix, err, out)
		}
		rollOutFix(t, ns, "testvm")
	})
	t.Run("spec", func(t *testing.T) {
		ns := namespace(t)
		createPrototype(t, ns, "shared-pvc-vm.yaml")
		// scaffold sees the refusal coming, and --strict makes it an error.
		out, stderr, code := vmctlCode(t, "scaffold", "deployment", "pvcvm", "-n", ns, "--strict")
		if code != 1 || out != "" || !strings.Contains(stderr, `volume "data" (persistentVolumeClaim "shared-data")`) {
			t.Errorf("scaffold --strict: exit %d, stdout %d bytes, stderr %q; want exit 1, nothing printed, the agents' words", code, len(out), stderr)
		}
		deploy(t, ns, scaffold.KindDeployment, "pvcvm", "--replicas", "1")
		waitWarningEvent(t, ns, "the SharedVolumes Event", func(msg string) bool { return strings.Contains(msg, "shared-data") })
		kubectl(t, nil, "patch", "vm", "pvcvm", "-n", ns, "--type", "json", "-p",
			`[{"op":"add","path":"/spec/template/spec/volumes/0/persistentVolumeClaim/readOnly","value":true}]`)
		rollOutFix(t, ns, "pvcvm")
	})
	t.Run("made again", func(t *testing.T) {
		ns := namespace(t)
		proto := deployMarked(t, ns)
		waitWarningEvent(t, ns, "the InvalidPrototype Event", func(msg string) bool { return strings.Contains(msg, "derived-VM markers") })
		vms := e.virt.KubevirtV1().VirtualMachines(ns)
		if err := vms.Delete(t.Context(), proto.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, settle, "the refused prototype gone", func(ctx context.Context) (bool, string, error) {
			_, err := vms.Get(ctx, proto.Name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), fmt.Sprint(err), nil
		})
		createPrototype(t, ns, "testvm.yaml")
		rollOutFix(t, ns, "testvm")
	})
}

// copiedFromDerived makes a prototype a copy of a derived VM of a
// Deployment: its markers, but no subdomain label, which only a
// StatefulSet's VMs carry.
func copiedFromDerived(vm *kubevirtv1.VirtualMachine) {
	vm.Labels[contract.LabelPrototype] = "testvm"
	vm.Labels[contract.LabelPod] = "web-7d9f-abcde"
	vm.Annotations = map[string]string{
		contract.AnnotationPodName: "web-7d9f-abcde", contract.AnnotationPodUID: "0b1c",
		contract.AnnotationNode: "node-1", contract.AnnotationPrototypeGeneration: "3",
	}
}

// deployMarked runs one agent Pod of prototype testvm in ns whose
// template pins a revision with vmctl's markers, and returns the marked
// prototype. scaffold and rollout restart refuse such a prototype, so it
// scaffolds the clean one with no replica, marks it, pins a snapshot of it
// by hand (pinByHand) and scales to one.
func deployMarked(t *testing.T, ns string) *kubevirtv1.VirtualMachine {
	t.Helper()
	createPrototype(t, ns, "testvm.yaml")
	deploy(t, ns, scaffold.KindDeployment, "testvm", "--replicas", "0")
	marked := updateVM(t, ns, "testvm", copiedFromDerived)
	workload := "deployment/" + scaffold.DefaultName("testvm")
	pinByHand(t, ns, workload, revision.Snapshot(marked))
	kubectl(t, nil, "scale", "-n", ns, workload, "--replicas=1")
	return marked
}

// rollOutFix rolls the fixed prototype out, as the agent's Event says, and
// waits for the new Pod's VM.
func rollOutFix(t *testing.T, ns, prototype string) {
	t.Helper()
	start := time.Now()
	vmctl(t, "rollout", "restart", prototype, "-n", ns)
	waitVMWithin(t, ns, start)
}

// waitVMWithin waits until ns holds one derived VM, and fails t unless it
// came within fixSeenWithin of fixed.
func waitVMWithin(t *testing.T, ns string, fixed time.Time) {
	t.Helper()
	eventually(t, settle, "a derived VM", func(ctx context.Context) (bool, string, error) {
		vms, err := derivedVMs(ctx, ns)
		return len(vms) == 1, fmt.Sprintf("%d derived VMs", len(vms)), err
	})
	took := time.Since(fixed)
	t.Logf("VM made %v after the fix", took.Round(100*time.Millisecond))
	if took > fixSeenWithin {
		t.Errorf("VM made %v after the fix, want within %v", took, fixSeenWithin)
	}
}

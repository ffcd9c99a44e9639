//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/stuck"
)

// stuckWithin is how soon after KubeVirt names a state that it does not
// leave by itself status, the agent's Event and /readyz must say so: at
// once, not after status's five-minute grace for a VM that is starting.
const stuckWithin = 60 * time.Second

// TestStuckVMsSayWhy puts derived VMs into each state KubeVirt's real
// virt-controller does not leave by itself that this cluster can bring
// about, and checks that status's PROBLEM (and --exit-code), the agent's
// Event and its /readyz all name it at once with KubeVirt's cause, and that
// the commands of the README's troubleshooting row for it work in that
// state. The image that cannot be pulled needs a real kubelet: it is in
// the real node's tests.
func TestStuckVMsSayWhy(t *testing.T) {
	for _, tt := range []struct {
		name      string
		prototype string
		change    func(*kubevirtv1.VirtualMachine)
		flags     []string
		reason    string
		// problem is the whole message, or its beginning when it ends in
		// "...".
		problem string
	}{{
		// A VM bigger than its node: every fake node has 1Ti of memory.
		// Agents that reserve their VM's size are Pending instead
		// (TestReservationPendingUntilRoom); these, which do not, land on
		// a node that cannot hold the VM.
		name:      "unschedulable on its node",
		prototype: "testvm.yaml",
		change: func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Template.Spec.Domain.Memory.Guest = ptrQuantity("2Ti")
		},
		flags:   []string{"--reserve=false"},
		reason:  stuck.ReasonUnschedulable,
		problem: "VM cannot be scheduled on its node: Insufficient memory",
	}, {
		// The cluster has no CDI: the API server has no DataVolumes.
		name:      "DataVolume without CDI",
		prototype: "datavolume-vm.yaml",
		reason:    stuck.ReasonDataVolume,
		problem:   "VM's DataVolume cannot be created: the server could not find the requested resource...",
	}, {
		name:      "missing PVC",
		prototype: "testvm.yaml",
		change: func(vm *kubevirtv1.VirtualMachine) {
			spec := &vm.Spec.Template.Spec
			spec.Domain.Devices.Disks = append(spec.Domain.Devices.Disks, kubevirtv1.Disk{
				Name: "data", DiskDevice: kubevirtv1.DiskDevice{Disk: &kubevirtv1.DiskTarget{Bus: kubevirtv1.DiskBusVirtio, ReadOnly: true}},
			})
			spec.Volumes = append(spec.Volumes, kubevirtv1.Volume{Name: "data", VolumeSource: kubevirtv1.VolumeSource{
				PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{
					PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: "nowhere", ReadOnly: true},
				},
			}})
		},
		reason:  stuck.ReasonPVCNotFound,
		problem: "VM's PVC is missing: PVC ...",
	}} {
		t.Run(tt.name, func(t *testing.T) {
			ns := namespace(t)
			proto := createPrototypeWith(t, ns, tt.prototype, tt.change)
			deploy(t, ns, scaffold.KindDeployment, proto.Name, append([]string{"--replicas", "1"}, tt.flags...)...)
			vm := waitDerived(t, ns, proto.Name, 1, settle, false)
			checkStuck(t, ns, vm[firstKey(vm)].Name, tt.reason, tt.problem)
		})
	}
}

// TestStoppedByHandSaysSoAndRecovers: stopping a derived VM through its
// runStrategy makes KubeVirt stop its VMI and the agent's Pod not ready; it
// is a problem at once, which the agent does not undo. Started again, the
// VM is ready and the problem goes.
func TestStoppedByHandSaysSoAndRecovers(t *testing.T) {
	ns := namespace(t)
	createPrototype(t, ns, "testvm.yaml")
	deploy(t, ns, scaffold.KindDeployment, "testvm", "--replicas", "1")
	pairs := waitPaired(t, ns, "testvm", 1, settle)
	pod := firstKey(pairs)
	vm := pairs[pod].Name
	waitPodReady(t, ns, pod, true)

	kubectl(t, nil, "patch", "vm", vm, "-n", ns, "--type", "merge", "-p", `{"spec":{"runStrategy":"Halted"}}`)
	waitPodReady(t, ns, pod, false)
	eventually(t, settle, "KubeVirt to stop the VMI", func(ctx context.Context) (bool, string, error) {
		got, err := e.virt.KubevirtV1().VirtualMachines(ns).Get(ctx, vm, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		vmis, err := e.virt.KubevirtV1().VirtualMachineInstances(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		return got.Status.PrintableStatus == kubevirtv1.VirtualMachineStatusStopped && len(vmis.Items) == 0,
			fmt.Sprintf("VM %s, %d VMIs", got.Status.PrintableStatus, len(vmis.Items)), nil
	})
	checkStuck(t, ns, vm, stuck.ReasonStopped, "VM stopped (runStrategy Halted): someone stopped it; `virtctl start "+vm+"` starts it again")

	// The fix the troubleshooting row gives, without virtctl.
	kubectl(t, nil, "patch", "vm", vm, "-n", ns, "--type", "merge", "-p", `{"spec":{"runStrategy":"Always"}}`)
	waitPaired(t, ns, "testvm", 1, settle)
	waitPodReady(t, ns, pod, true)
	if _, _, code := vmctlCode(t, "status", "-n", ns, "--exit-code"); code != 0 {
		t.Errorf("status --exit-code after the VM was started again: exit %d, want 0", code)
	}
}

// checkStuck waits until status names vm's problem (problem whole, or its
// beginning when it ends in "..."), then checks the rest at once: status
// --exit-code exits 1, the agent posted one Warning Event of reason with
// the same message, its /readyz names reason, and the README's
// troubleshooting row for the problem gives commands that work now.
func checkStuck(t *testing.T, ns, vm, reason, problem string) {
	t.Helper()
	matches := func(got string) bool {
		if prefix, ok := strings.CutSuffix(problem, "..."); ok {
			return strings.HasPrefix(got, prefix)
		}
		return got == problem
	}
	start := time.Now()
	var row string
	eventually(t, stuckWithin, "status to name the problem "+problem, func(context.Context) (bool, string, error) {
		rows := statusRows(t, ns)
		if len(rows) != 1 {
			return false, fmt.Sprintf("%d rows", len(rows)), nil
		}
		for _, p := range rows[0].Problems {
			if matches(p) {
				row = p
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("VM %s, problems %q; %s", rows[0].VMStatus, rows[0].Problems, kubevirtState(context.Background(), ns, vm)), nil
	})
	t.Logf("status named %q %v after the VM was seen", row, time.Since(start).Round(time.Second))
	if _, _, code := vmctlCode(t, "status", "-n", ns, "--exit-code"); code != 1 {
		t.Errorf("status --exit-code: exit %d, want 1", code)
	}

	pods, err := agentPods(t.Context(), ns)
	if err != nil || len(pods) != 1 {
		t.Fatalf("agent pods: %v, %v", pods, err)
	}
	pod := firstKey(pods)
	eventually(t, settle, "the agent's "+reason+" Event", func(ctx context.Context) (bool, string, error) {
		events, err := e.kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
			FieldSelector: fields.Set{"involvedObject.name": pod, "reason": reason}.String(),
		})
		if err != nil || len(events.Items) == 0 {
			return false, "none", err
		}
		var msgs []string
		for _, ev := range events.Items {
			msgs = append(msgs, ev.Message)
		}
		// One Event per distinct cause, and the cause here does not change.
		return len(events.Items) == 1 && events.Items[0].Message == row && events.Items[0].Type == corev1.EventTypeWarning,
			strings.Join(msgs, " | "), nil
	})
	if r := agentReadyz(t, ns, pod); r.code != http.StatusServiceUnavailable || r.body != reason+"\n" {
		t.Errorf("agent /readyz: %d %q, want 503 %q", r.code, r.body, reason)
	}
	runTroubleshooting(t, ns, vm, row)
}

// runTroubleshooting runs the read-only commands (kubectl describe and
// kubectl get) of the README's troubleshooting row for problem, with <vm>
// and <namespace> filled in, and fails t when one does not work.
func runTroubleshooting(t *testing.T, ns, vm, problem string) {
	t.Helper()
	readme, err := os.ReadFile(repoFile("README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var line string
	for _, s := range stuck.States() {
		if !strings.HasPrefix(problem, s.Prefix) {
			continue
		}
		for l := range strings.SplitSeq(string(readme), "\n") {
			if strings.HasPrefix(l, "| "+s.Prefix+" |") {
				line = l
			}
		}
	}
	if line == "" {
		t.Fatalf("README.md's troubleshooting table has no row for %q", problem)
	}
	var ran int
	for _, m := range inlineCode.FindAllStringSubmatch(line, -1) {
		fields := strings.Fields(strings.NewReplacer("<vm>", vm, "<namespace>", ns).Replace(m[1]))
		if len(fields) < 3 || fields[0] != "kubectl" || (fields[1] != "describe" && fields[1] != "get") {
			continue
		}
		if !strings.Contains(m[1], "-n ") {
			fields = append(fields, "-n", ns)
		}
		out := kubectl(t, nil, fields[1:]...)
		if strings.TrimSpace(out) == "" {
			t.Errorf("%s printed nothing", strings.Join(fields, " "))
		}
		ran++
	}
	if ran == 0 {
		t.Errorf("README.md's troubleshooting row for %q gives no kubectl describe or get to run:\n%s", problem, line)
	}
}

var inlineCode = regexp.MustCompile("`([^`]+)`")

func ptrQuantity(s string) *apiresource.Quantity {
	q := apiresource.MustParse(s)
	return &q
}

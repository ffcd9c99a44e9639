//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/reserve"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
)

// TestTemplatePinsTheRevision holds each kind of workload to the VM revision
// its template pins. After a prototype edit that is not rolled out, a new
// Pod's VM is of the pinned revision whatever made the Pod (a scale-up, a
// replaced StatefulSet Pod, a DaemonSet meeting a new node), and status
// shows no PROBLEM but says, once, that the prototype has changes not
// rolled out. rollout restart then rolls every VM to the new revision, and
// kubectl rollout undo brings the first back: the same spec and labels, a
// reservation equal to what the launcher Pods ask for, a clean diff, and a
// history that names both revisions.
func TestTemplatePinsTheRevision(t *testing.T) {
	for _, tt := range []struct {
		kind scaffold.Kind
		// grow makes a new Pod of the workload while the prototype edit is
		// not rolled out, and says how many Pods there are then.
		grow func(t *testing.T, ns string) int
	}{
		{kind: scaffold.KindDeployment, grow: func(t *testing.T, ns string) int {
			scale(t, ns, "vmctl-testvm", 3)
			return 3
		}},
		{kind: scaffold.KindStatefulSet, grow: func(t *testing.T, ns string) int {
			kubectl(t, nil, "delete", "pod", "-n", ns, "vmctl-testvm-0", "--wait=false")
			return 2
		}},
		{kind: scaffold.KindDaemonSet, grow: func(t *testing.T, ns string) int {
			addNodesOfSize(t, ns, sizedNodeNames(ns, 2, 1), "8", "16Gi")
			return 3
		}},
	} {
		t.Run(string(tt.kind), func(t *testing.T) {
			ns := namespace(t)
			addNodesOfSize(t, ns, sizedNodeNames(ns, 0, 2), "8", "16Gi")
			sizedPrototype(t, ns, "256Mi")
			flags := []string{"--pdb", "1"}
			if tt.kind != scaffold.KindDaemonSet {
				flags = append(flags, "--replicas", "2")
			}
			deploy(t, ns, tt.kind, "testvm", flags...)
			workload := strings.ToLower(string(tt.kind)) + "/vmctl-testvm"
			first := waitRevision(t, ns, workload, 2, "")
			firstSpec := vmSpecs(t, ns)

			// A prototype edit reaches no VM on its own.
			changePrototype(t, ns)
			kubectl(t, nil, "patch", "vm", "testvm", "-n", ns, "--type", "merge", "-p", `{"spec":{"template":{"metadata":{"labels":{"release":"v2"}}}}}`)
			n := tt.grow(t, ns)
			waitRevision(t, ns, workload, n, first)
			for name, spec := range vmSpecs(t, ns) {
				if spec.memory != "256Mi" || spec.labels["release"] != "" {
					t.Errorf("VM %s made after the edit, before a rollout: memory %s, labels %v; want the pinned revision's", name, spec.memory, spec.labels)
				}
			}
			out, stderr, code := vmctlCode(t, "status", "-n", ns, "--exit-code")
			if code != 0 || strings.Contains(out, "generation") {
				t.Errorf("status of a fleet of the pinned revision exited %d:\n%s", code, out)
			}
			if !strings.Contains(stderr, "rollout restart testvm") || strings.Count(stderr, "has changed") != 1 {
				t.Errorf("status says on stderr %q; want once that the prototype has changes to roll out", stderr)
			}

			// rollout restart rolls the edit out, at the workload's pace.
			out = vmctl(t, "rollout", "restart", "testvm", "-n", ns)
			if want := "vmrevisionstore.vmctl.kubevirt.io/vmctl-testvm-vm-revisions configured\n" + strings.Replace(workload, "/", ".apps/", 1) + " restarted\n"; out != want {
				t.Errorf("rollout restart printed %q, want %q", out, want)
			}
			vmctl(t, "rollout", "status", "testvm", "-n", ns, "--timeout", "3m")
			second := waitRevision(t, ns, workload, n, "")
			if second == first {
				t.Fatalf("rollout restart kept revision %s", first)
			}
			for name, spec := range vmSpecs(t, ns) {
				if spec.memory != "512Mi" || spec.labels["release"] != "v2" {
					t.Errorf("VM %s after the rollout: memory %s, labels %v; want the edited prototype's", name, spec.memory, spec.labels)
				}
			}

			// kubectl rollout undo brings the first revision back.
			kubectl(t, nil, "rollout", "undo", "-n", ns, workload)
			kubectl(t, nil, "rollout", "status", "-n", ns, workload, "--timeout", "3m")
			if got := waitRevision(t, ns, workload, n, ""); got != first {
				t.Fatalf("after the undo the template pins %s, want %s", got, first)
			}
			waitPaired(t, ns, "testvm", n, settle)
			for name, spec := range vmSpecs(t, ns) {
				if want, ok := firstSpec[name]; ok && (spec.memory != want.memory || fmt.Sprint(spec.labels) != fmt.Sprint(want.labels)) {
					t.Errorf("VM %s after the undo: memory %s, labels %v; want the first revision's %s, %v", name, spec.memory, spec.labels, want.memory, want.labels)
				}
				if spec.memory != "256Mi" || spec.labels["release"] != "" {
					t.Errorf("VM %s after the undo: memory %s, labels %v; want the first revision's", name, spec.memory, spec.labels)
				}
			}
			checkReservationsHeld(t, ns)
			if out, _, code := vmctlCode(t, "diff", "-n", ns, "testvm"); code != 1 || strings.Contains(out, "drift") {
				// The VMs are as derived; the workload pins an older
				// revision than the prototype's, which diff names.
				t.Errorf("diff after the undo exited %d:\n%s", code, out)
			}
			history := kubectl(t, nil, "rollout", "history", "-n", ns, workload)
			for _, rev := range []string{first, second} {
				if !strings.Contains(history, "vmctl: VM revision "+rev+" of prototype "+ns+"/testvm") {
					t.Errorf("kubectl rollout history lacks revision %s's change-cause:\n%s", rev, history)
				}
			}
		})
	}
}

// waitRevision waits until the workload's n Pods each have a ready VM of
// the revision their template pins, which is want unless want is "", and
// returns that revision.
func waitRevision(t *testing.T, ns, workload string, n int, want string) string {
	t.Helper()
	var pinned string
	eventually(t, settle, fmt.Sprintf("%s's %d Pods with ready VMs of its revision", workload, n), func(ctx context.Context) (bool, string, error) {
		pinned = podTemplateAnnotations(t, ns, workload)[contract.AnnotationVMRevision]
		if pinned == "" || want != "" && pinned != want {
			return false, "template pins " + pinned, nil
		}
		pods, err := agentPods(ctx, ns)
		if err != nil {
			return false, "", err
		}
		vms, err := derivedVMs(ctx, ns)
		if err != nil {
			return false, "", err
		}
		seen := describe(pods, vms)
		if len(pods) != n || len(vms) != n {
			return false, seen, nil
		}
		for _, vm := range vms {
			if vm.Annotations[contract.AnnotationVMRevision] != pinned || !vm.Status.Ready || vm.DeletionTimestamp != nil {
				return false, seen + fmt.Sprintf("; %s of revision %s", vm.Name, vm.Annotations[contract.AnnotationVMRevision]), nil
			}
		}
		return true, seen, nil
	})
	return pinned
}

// vmSpec is what of a derived VM a revision decides and the tests check.
type vmSpec struct {
	memory string
	labels map[string]string
}

// vmSpecs reads the derived VMs of ns by the Pod they belong to.
func vmSpecs(t *testing.T, ns string) map[string]vmSpec {
	t.Helper()
	vms, err := derivedVMs(t.Context(), ns)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]vmSpec{}
	for _, vm := range vms {
		labels := map[string]string{}
		for k, v := range vm.Spec.Template.ObjectMeta.Labels {
			if !strings.HasPrefix(k, "vmctl.kubevirt.io/") {
				labels[k] = v
			}
		}
		var memory string
		if m := vm.Spec.Template.Spec.Domain.Memory; m != nil && m.Guest != nil {
			memory = m.Guest.String()
		}
		out[vm.Annotations[contract.AnnotationPodName]] = vmSpec{memory: memory, labels: labels}
	}
	return out
}

// checkReservationsHeld checks that each agent Pod of ns holds what its
// VM's launcher Pod asks for: its template's reservation equals what the
// scheduler counts for the launcher Pod, rounded as scaffold rounds it.
func checkReservationsHeld(t *testing.T, ns string) {
	t.Helper()
	launchers, err := e.kube.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: kubevirtv1.AppLabel + "=virt-launcher"})
	if err != nil {
		t.Fatal(err)
	}
	byPod := map[string]*corev1.Pod{}
	for i := range launchers.Items {
		l := &launchers.Items[i]
		if l.DeletionTimestamp == nil {
			byPod[l.Labels[contract.LabelPod]] = l
		}
	}
	pods, err := agentPods(t.Context(), ns)
	if err != nil {
		t.Fatal(err)
	}
	for name, pod := range pods {
		held := pod.Annotations[contract.AnnotationReservation]
		launcher := byPod[name]
		if launcher == nil {
			t.Errorf("Pod %s's VM has no launcher Pod", name)
			continue
		}
		if need := reserve.Round(reserve.Counted(launcher)); held == "" || reserve.Stale(held, need) {
			t.Errorf("Pod %s holds %q, its VM's launcher Pod asks for %s", name, held, contract.FormatResources(need))
		}
	}
}

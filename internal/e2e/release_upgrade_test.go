//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
	kvharness "github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/kubevirt"
)

// TestFleetScaffoldedOnAnotherKubeVirt: fleets of each kind scaffolded
// while KubeVirt ran another release, run on the shared cluster's, as a
// fleet finds itself once KubeVirt upgrades under it (scaffolded on the
// previous release, v1.8.0, run on the newest, v1.9.0), or is rolled back
// (run with VMCTL_KUBEVIRT=v1.8.0: scaffolded on v1.9.0, run on v1.8.0). A
// fleet's VM revision is its prototype as the other release's virt-api
// stored it, and its reservation follows that release's rules. On the
// shared cluster's release, under the policies scaffold wrote, the agents
// make their VMs of that revision and the VMs run, and so does the VM of a
// Pod made afterwards (a scale-up, a replaced Pod, a DaemonSet's Pod on a
// new node); status names each Pod whose reservation is not what this
// release's launcher Pod asks; `rollout restart` pins the prototype and
// the reservation as this release has them, and status is clean.
//
// The other release's cluster runs no agents (no kubelet double or
// virt-handler stand-in): it stores the prototype and answers scaffold, as
// the cluster did before its upgrade. The Deployment's and DaemonSet's
// prototype is testvm, the StatefulSet's pvcvm with a claim per replica.
func TestFleetScaffoldedOnAnotherKubeVirt(t *testing.T) {
	t.Parallel() // runs once the package's other tests are done: see eachKubeVirt
	other := kvharness.Previous
	if v, err := other.Version(); err != nil || v == e.kv.Binaries.Version {
		other = kvharness.Newest
	}
	prev, err := releaseCluster(other)
	if err != nil {
		t.Fatalf("start a cluster of another KubeVirt release: %v", err)
	}
	kubeVirtConfig.RLock()
	defer kubeVirtConfig.RUnlock()
	for _, tt := range []struct {
		kind      scaffold.Kind
		prototype string
		// grow makes a new Pod of the workload while it pins the other
		// release's revision, and says how many Pods there are then.
		grow func(t *testing.T, ns string) int
	}{
		{kind: scaffold.KindDeployment, prototype: "testvm.yaml", grow: func(t *testing.T, ns string) int {
			scale(t, ns, "web", 3)
			return 3
		}},
		{kind: scaffold.KindStatefulSet, prototype: "shared-pvc-vm.yaml", grow: func(t *testing.T, ns string) int {
			kubectl(t, nil, "delete", "pod", "-n", ns, "web-0", "--wait=false")
			return 2
		}},
		{kind: scaffold.KindDaemonSet, prototype: "testvm.yaml", grow: func(t *testing.T, ns string) int {
			addNodesOfSize(t, ns, sizedNodeNames(ns, 2, 1), "8", "16Gi")
			return 3
		}},
	} {
		t.Run(string(tt.kind), func(t *testing.T) {
			ns := namespace(t)
			addNodesOfSize(t, ns, sizedNodeNames(ns, 0, 2), "8", "16Gi")
			onTheNodesOf := func(vm *kubevirtv1.VirtualMachine) {
				spec := &vm.Spec.Template.Spec
				spec.NodeSelector = map[string]string{sizedKey: ns}
				spec.Tolerations = []corev1.Toleration{{Key: sizedKey, Operator: corev1.TolerationOpEqual, Value: ns, Effect: corev1.TaintEffectNoSchedule}}
			}
			if _, err := prev.kube.CoreV1().Namespaces().Create(context.Background(),
				&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = prev.kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
			proto, err := prev.virt.KubevirtV1().VirtualMachines(ns).Create(context.Background(),
				readPrototype(t, tt.prototype, onTheNodesOf), metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("create the prototype on KubeVirt %s: %v", prev.version, err)
			}
			createPrototypeWith(t, ns, tt.prototype, onTheNodesOf)

			flags := []string{"--name", "web", "--pdb", "1"}
			if tt.kind != scaffold.KindDaemonSet {
				flags = append(flags, "--replicas", "2")
			}
			if tt.kind == scaffold.KindStatefulSet {
				flags = append(flags, "--replica-claim", "shared-data=1Gi,class="+networkStorage(t, ns, 3))
			}
			scaffoldOn := func(kubeconfig string) (manifests, revision, reservation string) {
				t.Helper()
				manifests = vmctl(t, append([]string{"scaffold", strings.ToLower(string(tt.kind)), proto.Name, "-n", ns,
					"--grace-period", "60", "--kubeconfig", kubeconfig}, flags...)...)
				annotations := map[string]string{}
				for _, key := range []string{contract.AnnotationVMRevision, contract.AnnotationReservation} {
					_, after, ok := strings.Cut(manifests, "        "+key+": ")
					if !ok {
						t.Fatalf("scaffold's %s has no %s:\n%s", tt.kind, key, manifests)
					}
					annotations[key], _, _ = strings.Cut(after, "\n")
				}
				return manifests, annotations[contract.AnnotationVMRevision], annotations[contract.AnnotationReservation]
			}
			old, oldRevision, oldReservation := scaffoldOn(prev.kubeconfig)
			_, newRevision, newReservation := scaffoldOn(e.cluster.Kubeconfig)
			t.Logf("scaffolded on KubeVirt %s: revision %s, reservation %s; on %s: revision %s, reservation %s",
				prev.version, oldRevision, oldReservation, e.kv.Binaries.Version, newRevision, newReservation)

			kubectl(t, []byte(old), "apply", "-f", "-")
			workload := strings.ToLower(string(tt.kind)) + "/web"
			n := 2
			waitRevision(t, ns, workload, n, oldRevision)
			n = tt.grow(t, ns)
			waitRevision(t, ns, workload, n, oldRevision)

			stale := staleProblems(t, ns)
			if oldReservation == newReservation {
				if len(stale) > 0 {
					t.Errorf("both releases reserve %s, yet status says: %v", oldReservation, stale)
				}
			} else if pods := slices.Sorted(maps.Keys(stale)); len(pods) != n {
				t.Errorf("the Pods reserve %s, KubeVirt %s's launcher Pods ask %s: status names %d of %d (%v)",
					oldReservation, e.kv.Binaries.Version, newReservation, len(pods), n, stale)
			}

			vmctl(t, "rollout", "restart", proto.Name, "-n", ns)
			vmctl(t, "rollout", "status", proto.Name, "-n", ns, "--timeout", "3m")
			waitRevision(t, ns, workload, n, newRevision)
			if got := podTemplateAnnotations(t, ns, workload)[contract.AnnotationReservation]; got != newReservation {
				t.Errorf("after rollout restart the template reserves %s, want KubeVirt %s's %s", got, e.kv.Binaries.Version, newReservation)
			}
			checkReservationsHeld(t, ns)
			if stale := staleProblems(t, ns); len(stale) > 0 {
				t.Errorf("after rollout restart status still says: %v", fmt.Sprint(stale))
			}
		})
	}
}

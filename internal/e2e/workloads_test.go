//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
)

// settle is the deadline for the cluster to converge after a change: pods
// scheduled, agents started, VMs created or deleted.
const settle = 90 * time.Second

func TestDeploymentScalesVMs(t *testing.T) {
	ns := namespace(t)
	createPrototype(t, ns, "testvm.yaml")
	deploy(t, ns, scaffold.KindDeployment, "testvm", "--replicas", "3")
	waitPaired(t, ns, "testvm", 3, settle)

	kubectl(t, nil, "scale", "-n", ns, "deployment/vmctl-testvm", "--replicas=5")
	waitPaired(t, ns, "testvm", 5, settle)

	kubectl(t, nil, "scale", "-n", ns, "deployment/vmctl-testvm", "--replicas=1")
	waitPaired(t, ns, "testvm", 1, settle)
}

func TestDaemonSetOneVMPerNode(t *testing.T) {
	ns := namespace(t)
	createPrototype(t, ns, "testvm.yaml")
	deploy(t, ns, scaffold.KindDaemonSet, "testvm")
	pairs := waitPaired(t, ns, "testvm", nodes, settle)
	onNode := map[string]string{}
	for pod, vm := range pairs {
		node := testcluster.PinnedNode(vm.Spec.Template.Spec.Affinity)
		if other, dup := onNode[node]; dup {
			t.Errorf("node %s has the VMs of pods %s and %s", node, other, pod)
		}
		onNode[node] = pod
	}
	for _, n := range e.cluster.Nodes {
		if _, ok := onNode[n]; !ok {
			t.Errorf("node %s has no VM; pinned: %v", n, onNode)
		}
	}
}

func TestDeletedPodsVMGoesAndReplacementGetsOne(t *testing.T) {
	ns := namespace(t)
	createPrototype(t, ns, "testvm.yaml")
	deploy(t, ns, scaffold.KindDeployment, "testvm", "--replicas", "2")
	before := waitPaired(t, ns, "testvm", 2, settle)

	victim := firstKey(before)
	if err := e.kube.CoreV1().Pods(ns).Delete(context.Background(), victim, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	after := waitPaired(t, ns, "testvm", 2, settle)
	if _, ok := after[victim]; ok {
		t.Fatalf("pod %s still paired after its deletion", victim)
	}
	for pod, vm := range after {
		if b, ok := before[pod]; ok && b.UID != vm.UID {
			t.Errorf("VM of surviving pod %s was replaced: uid %s -> %s", pod, b.UID, vm.UID)
		}
	}
}

func TestForceDeletedPodsVMIsGarbageCollected(t *testing.T) {
	ns, victim, vm := oneAgent(t)

	// Grace period 0: the pod is gone at once and the agent gets no signal;
	// only the VM's ownerReference to the pod can clean up.
	if err := e.kube.CoreV1().Pods(ns).Delete(context.Background(), victim, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	eventually(t, settle, "force-deleted pod's VM garbage-collected", func(ctx context.Context) (bool, string, error) {
		got, err := e.virt.KubevirtV1().VirtualMachines(ns).Get(ctx, vm.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "gone", nil
		}
		if err != nil {
			return false, "", err
		}
		if got.UID != vm.UID {
			return true, "replaced by a new VM", nil
		}
		return false, fmt.Sprintf("VM %s still there (deleting=%v)", vm.Name, got.DeletionTimestamp != nil), nil
	})
	waitPaired(t, ns, "testvm", 1, settle)
}

func TestKilledAgentAdoptsItsVM(t *testing.T) {
	ns, pod, vm := oneAgent(t)

	if err := e.kubelet.Signal(ns, pod, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, settle, "agent restarted and ready again", func(ctx context.Context) (bool, string, error) {
		p, err := e.kube.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		if len(p.Status.ContainerStatuses) == 0 {
			return false, "no container status", nil
		}
		cs := p.Status.ContainerStatuses[0]
		return cs.RestartCount >= 1 && cs.Ready, fmt.Sprintf("restarts=%d ready=%v", cs.RestartCount, cs.Ready), nil
	})
	after := waitPaired(t, ns, "testvm", 1, settle)
	if got, want := after[pod].UID, vm.UID; got != want {
		t.Errorf("restarted agent replaced its VM (uid %s -> %s) instead of adopting it", want, got)
	}
	log, err := os.ReadFile(e.kubelet.LogPath(ns, pod))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.ToLower(string(log)), "already exists") && !strings.Contains(strings.ToLower(string(log)), "adopt") {
		t.Errorf("restarted agent did not say it adopted the VM:\n%s", log)
	}
}

func TestDataVolumeTemplatesArePerVM(t *testing.T) {
	ns := namespace(t)
	createPrototype(t, ns, "datavolume-vm.yaml")
	deploy(t, ns, scaffold.KindDeployment, "dvvm", "--replicas", "3")
	// The cluster has no CDI, so KubeVirt cannot create the DataVolumes and
	// the VMs never run; KubeVirt's attempt, per VM, shows below.
	pairs := waitDerived(t, ns, "dvvm", 3, settle, false)
	seen := map[string]string{}
	for pod, vm := range pairs {
		if len(vm.Spec.DataVolumeTemplates) != 1 {
			t.Fatalf("VM %s has %d dataVolumeTemplates, want 1", vm.Name, len(vm.Spec.DataVolumeTemplates))
		}
		dv := vm.Spec.DataVolumeTemplates[0].Name
		if dv == "rootdisk" {
			t.Errorf("VM %s kept the prototype's DataVolume name %q", vm.Name, dv)
		}
		if other, dup := seen[dv]; dup {
			t.Errorf("pods %s and %s share DataVolume %s", other, pod, dv)
		}
		seen[dv] = pod
		var refs []string
		for _, v := range vm.Spec.Template.Spec.Volumes {
			if v.DataVolume != nil {
				refs = append(refs, v.DataVolume.Name)
			}
		}
		if len(refs) != 1 || refs[0] != dv {
			t.Errorf("VM %s: volumes refer to DataVolumes %v, want [%s]", vm.Name, refs, dv)
		}
		// KubeVirt's VM controller acts on the per-VM name.
		eventually(t, settle, "KubeVirt to try creating DataVolume "+dv, func(ctx context.Context) (bool, string, error) {
			events, err := e.kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
				FieldSelector: fields.Set{"involvedObject.name": vm.Name, "reason": "FailedDataVolumeCreate"}.String(),
			})
			if err != nil {
				return false, "", err
			}
			var msgs []string
			for _, ev := range events.Items {
				if strings.Contains(ev.Message, "Error creating DataVolume "+dv+":") {
					return true, "", nil
				}
				msgs = append(msgs, ev.Message)
			}
			return false, strings.Join(msgs, "; "), nil
		})
	}
	refusesForeignTemplates(t, ns, pairs)
}

// refusesForeignTemplates checks, with one agent Pod's token, that the
// scaffold's policy refuses the Pod's VM with a dataVolumeTemplate renamed
// to another claim's name, or marked for CDI to adopt one, and lets through
// the VM as derive makes it, to storage, where the name is taken. KubeVirt's
// defaulting must leave the templates' metadata as the prototype's was left.
// Server-side dry runs: nothing changes, and no CDI is needed.
func refusesForeignTemplates(t *testing.T, ns string, pairs map[string]kubevirtv1.VirtualMachine) {
	t.Helper()
	pods, err := agentPods(t.Context(), ns)
	if err != nil {
		t.Fatal(err)
	}
	pod := pods[firstKey(pairs)]
	_, virt := agentClients(t, ns, scaffold.DefaultName("dvvm"), pod)
	own := derivedFromRevision(t, scaffold.DefaultName("dvvm"), pod, derive.Options{})
	create := func(ctx context.Context, vm *kubevirtv1.VirtualMachine) error {
		_, err := virt.KubevirtV1().VirtualMachines(ns).Create(ctx, vm, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}
	renamed := own.DeepCopy()
	renamed.Spec.DataVolumeTemplates[0].Name = "secrets-of-another-app"
	renamed.Spec.Template.Spec.Volumes[0].DataVolume.Name = "secrets-of-another-app"
	adopting := own.DeepCopy()
	adopting.Spec.DataVolumeTemplates[0].Annotations = map[string]string{"cdi.kubevirt.io/allowClaimAdoption": "true"}
	for what, vm := range map[string]*kubevirtv1.VirtualMachine{"renamed": renamed, "marked for claim adoption": adopting} {
		// The policy takes effect once the API server's informers have it.
		eventually(t, 2*time.Minute, "its VM with a dataVolumeTemplate "+what+" refused", func(ctx context.Context) (bool, string, error) {
			err := create(ctx, vm)
			return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "dataVolumeTemplates are not the VM revision's"), fmt.Sprint(err), nil
		})
	}
	if err := create(t.Context(), own); !apierrors.IsAlreadyExists(err) {
		t.Errorf("its own VM as derived: %v, want AlreadyExists (admitted)", err)
	}
}

func TestSharedWritablePVCIsRefused(t *testing.T) {
	ns := namespace(t)
	createPrototype(t, ns, "shared-pvc-vm.yaml")
	deploy(t, ns, scaffold.KindDeployment, "pvcvm", "--replicas", "1")

	pod := waitWarningEvent(t, ns, "warning event that names the shared volume", func(msg string) bool {
		return strings.Contains(msg, "data") && strings.Contains(msg, "shared-data")
	})
	log, err := os.ReadFile(e.kubelet.LogPath(ns, pod.Name))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "shared-data") {
		t.Errorf("agent log does not name the shared claim:\n%s", log)
	}
	vms, err := derivedVMs(context.Background(), ns)
	if err != nil {
		t.Fatal(err)
	}
	if len(vms) != 0 {
		t.Errorf("derived VMs made from a prototype with a shared writable PVC: %v", firstKey(vms))
	}
	p, err := e.kube.CoreV1().Pods(ns).Get(context.Background(), pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ready := "missing"
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			ready = string(c.Status)
		}
	}
	if ready != string(corev1.ConditionFalse) {
		t.Errorf("pod %s: Ready condition is %s, want False (the agent has no VM)", pod.Name, ready)
	}
	if _, ok := vms[derive.Name("pvcvm", pod.Name, pod.UID)]; ok {
		t.Errorf("VM made for %s", pod.Name)
	}
}

// oneAgent deploys one agent of testvm.yaml's prototype in a namespace of
// its own and returns the namespace, the agent's Pod and its VM, once
// paired.
func oneAgent(t testing.TB) (ns, pod string, vm kubevirtv1.VirtualMachine) {
	t.Helper()
	ns = namespace(t)
	createPrototype(t, ns, "testvm.yaml")
	deploy(t, ns, scaffold.KindDeployment, "testvm", "--replicas", "1")
	paired := waitPaired(t, ns, "testvm", 1, settle)
	pod = firstKey(paired)
	return ns, pod, paired[pod]
}

func firstKey[V any](m map[string]V) string {
	for k := range m {
		return k
	}
	return ""
}

//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
)

func TestAgentRecreatesExternallyDeletedVM(t *testing.T) {
	ns, pod, vm := oneAgent(t)

	if err := e.virt.KubevirtV1().VirtualMachines(ns).Delete(context.Background(), vm.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// KubeVirt's finalizer keeps the old VM until its VMI is gone: wait for
	// the new one, then for it to be paired and ready.
	eventually(t, settle, "a new VM in place of the deleted one", func(ctx context.Context) (bool, string, error) {
		got, err := e.virt.KubevirtV1().VirtualMachines(ns).Get(ctx, vm.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, "gone", nil
		}
		if err != nil {
			return false, "", err
		}
		return got.UID != vm.UID, fmt.Sprintf("uid %s deleting=%v", got.UID, got.DeletionTimestamp != nil), nil
	})
	after := waitPaired(t, ns, "testvm", 1, settle)
	if after[pod].UID == vm.UID {
		t.Fatalf("VM %s was not recreated (same uid %s)", vm.Name, vm.UID)
	}
}

func TestAgentDeletesVMOnSIGTERMBeforePodGoes(t *testing.T) {
	ns, pod, vm := oneAgent(t)

	// The kubelet double removes the pod only after the agent exits, so a VM
	// gone while the pod still exists was deleted by the agent, not by the
	// garbage collector (which waits for the pod).
	w, err := e.virt.KubevirtV1().VirtualMachines(ns).Watch(context.Background(), metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", vm.Name).String(), ResourceVersion: vm.ResourceVersion,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := e.kube.CoreV1().Pods(ns).Delete(context.Background(), pod, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, settle, "VM deleted", func(ctx context.Context) (bool, string, error) {
		_, err := e.virt.KubevirtV1().VirtualMachines(ns).Get(ctx, vm.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		return false, "VM still there", err
	})
	p, err := e.kube.CoreV1().Pods(ns).Get(context.Background(), pod, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		// The pod may have gone in the same instant; the agent's log tells.
		log, _ := os.ReadFile(e.kubelet.LogPath(ns, pod))
		if !strings.Contains(strings.ToLower(string(log)), "delet") {
			t.Fatalf("pod gone and agent log does not mention deleting the VM:\n%s", log)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if p.DeletionTimestamp == nil {
		t.Fatalf("pod %s is not being deleted", pod)
	}
}

// TestAgentWaitsForTheVMIBeforeExiting: the agent deletes its VM in the
// background, and KubeVirt's own finalizer keeps the VM, and so the agent
// and its Pod, until virt-controller has stopped the VMI. A finalizer of
// the test's holds the VMI meanwhile, as a guest that takes its time to
// shut down would.
func TestAgentWaitsForTheVMIBeforeExiting(t *testing.T) {
	ns, pod, vm := oneAgent(t)
	const hold = "e2e.vmctl.kubevirt.io/hold"
	vmis := e.virt.KubevirtV1().VirtualMachineInstances(ns)
	addHold := `[{"op":"add","path":"/metadata/finalizers/-","value":"` + hold + `"}]`
	if _, err := vmis.Patch(context.Background(), vm.Name, types.JSONPatchType, []byte(addHold), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	released := false
	release := func() {
		if released {
			return
		}
		released = true
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			vmi, err := vmis.Get(context.Background(), vm.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			if err != nil {
				return err
			}
			vmi.Finalizers = slices.DeleteFunc(vmi.Finalizers, func(f string) bool { return f == hold })
			_, err = vmis.Update(context.Background(), vmi, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Errorf("release the VMI: %v", err)
		}
	}
	defer release()

	if err := e.kube.CoreV1().Pods(ns).Delete(context.Background(), pod, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, settle, "the VMI stopped by virt-controller, held by the test", func(ctx context.Context) (bool, string, error) {
		vmi, err := vmis.Get(ctx, vm.Name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		return vmi.DeletionTimestamp != nil, fmt.Sprintf("finalizers %v", vmi.Finalizers), nil
	})
	// virt-controller has stopped the VMI: while it is held, the VM, the
	// agent and its Pod stay.
	time.Sleep(3 * time.Second)
	got, err := e.virt.KubevirtV1().VirtualMachines(ns).Get(context.Background(), vm.Name, metav1.GetOptions{})
	if err != nil || got.UID != vm.UID || got.DeletionTimestamp == nil {
		t.Fatalf("the VM while its VMI is held: %v (err %v), want it there, being deleted", got.ObjectMeta, err)
	}
	if p, err := e.kube.CoreV1().Pods(ns).Get(context.Background(), pod, metav1.GetOptions{}); err != nil || p.DeletionTimestamp == nil {
		t.Fatalf("the agent's Pod while its VMI is held: err %v; want it there, being deleted", err)
	}

	release()
	eventually(t, settle, "the VM and the agent's Pod gone", func(ctx context.Context) (bool, string, error) {
		_, vmErr := e.virt.KubevirtV1().VirtualMachines(ns).Get(ctx, vm.Name, metav1.GetOptions{})
		_, podErr := e.kube.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
		return apierrors.IsNotFound(vmErr) && apierrors.IsNotFound(podErr), fmt.Sprintf("VM: %v; Pod: %v", vmErr, podErr), nil
	})
	log, _ := os.ReadFile(e.kubelet.LogPath(ns, pod))
	if !strings.Contains(string(log), "Deleted VM") {
		t.Errorf("the agent's log does not say it deleted the VM:\n%s", log)
	}
}

func TestAgentRefusesVMItDidNotMake(t *testing.T) {
	ns := namespace(t)
	proto := createPrototype(t, ns, "testvm.yaml")
	// A StatefulSet's pods have predictable names, so the VM the first pod
	// would make can be taken beforehand by someone else.
	name := shortVMName("testvm", "vmctl-testvm-0")
	foreign := &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"owner": "someone-else"}},
		Spec:       *proto.Spec.DeepCopy(),
	}
	foreign, err := e.virt.KubevirtV1().VirtualMachines(ns).Create(context.Background(), foreign, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deploy(t, ns, scaffold.KindStatefulSet, "testvm", "--replicas", "1")

	eventually(t, settle, "warning event about the foreign VM", func(ctx context.Context) (bool, string, error) {
		events, err := e.kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
			FieldSelector: fields.Set{"involvedObject.name": "vmctl-testvm-0", "type": corev1.EventTypeWarning}.String(),
		})
		if err != nil {
			return false, "", err
		}
		var msgs []string
		for _, ev := range events.Items {
			msgs = append(msgs, ev.Message)
			if strings.Contains(ev.Message, name) {
				return true, "", nil
			}
		}
		return false, strings.Join(msgs, " | "), nil
	})
	got, err := e.virt.KubevirtV1().VirtualMachines(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the foreign VM is gone: %v", err)
	}
	if got.UID != foreign.UID || got.Generation != foreign.Generation || derive.IsDerived(got) {
		t.Fatalf("the agent touched a VM it did not make: uid %s->%s generation %d->%d labels %v",
			foreign.UID, got.UID, foreign.Generation, got.Generation, got.Labels)
	}
	// Deleting the workload must leave the foreign VM alone too.
	kubectl(t, nil, "delete", "-n", ns, "statefulset/vmctl-testvm", "--wait=true")
	eventually(t, settle, "agent pods gone", func(ctx context.Context) (bool, string, error) {
		pods, err := e.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(pods.Items) == 0, fmt.Sprintf("%d pods", len(pods.Items)), err
	})
	if _, err := e.virt.KubevirtV1().VirtualMachines(ns).Get(context.Background(), name, metav1.GetOptions{}); err != nil {
		t.Fatalf("the foreign VM was deleted with the workload: %v", err)
	}
}

// TestDerivedVMsSurviveKubeVirtSchema creates the VM derived from every
// prototype in testdata through the API server with KubeVirt's real CRD and
// webhooks (a server-side dry run, so no controller acts on it) and checks
// that KubeVirt's validating webhook accepts it and that neither pruning nor
// KubeVirt's mutating webhook dropped or changed anything vmctl wrote. The
// mutating webhook may add its defaults; TestDiffIgnoresKubeVirtDefaults
// checks that diff does not take those for drift.
func TestDerivedVMsSurviveKubeVirtSchema(t *testing.T) {
	eachKubeVirt(t, derivedVMsSurviveKubeVirtSchema)
}

func derivedVMsSurviveKubeVirtSchema(t *testing.T, k kubeVirtEnv) {
	ns := testcluster.Namespace(t, k.kube, nil)
	for _, file := range []string{"testvm.yaml", "datavolume-vm.yaml", "shared-pvc-vm.yaml"} {
		t.Run(file, func(t *testing.T) {
			proto, err := k.virt.KubevirtV1().VirtualMachines(ns).Create(context.Background(), readPrototype(t, file, nil), metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("create prototype %s: %v", file, err)
			}
			pod := derive.Pod{Name: "vmctl-" + proto.Name + "-7d9f8b-x2x9z", Namespace: ns, UID: types.UID("0b5d5c4e-5c84-4bd6-9c3b-0f0e4d7b7d21"), Node: k.nodes[0]}
			want, err := derive.VM(proto, pod, derive.Options{AllowSharedVolumes: true})
			if err != nil {
				t.Fatal(err)
			}
			got, err := k.virt.KubevirtV1().VirtualMachines(ns).Create(context.Background(), want, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if err != nil {
				t.Fatalf("the API server rejects the derived VM: %v", err)
			}
			if lost := notKept(asJSON(t, want.Spec), asJSON(t, got.Spec), "spec"); len(lost) > 0 {
				t.Errorf("KubeVirt's CRD schema or webhooks dropped or changed what vmctl derived:\n%s\nstored spec: %s",
					strings.Join(lost, "\n"), mustJSON(t, got.Spec))
			}
			if diff := cmp.Diff(want.Labels, got.Labels); diff != "" {
				t.Errorf("labels changed (-derived +stored):\n%s", diff)
			}
			if diff := cmp.Diff(want.Annotations, got.Annotations); diff != "" {
				t.Errorf("annotations changed (-derived +stored):\n%s", diff)
			}
			if diff := cmp.Diff(want.OwnerReferences, got.OwnerReferences); diff != "" {
				t.Errorf("ownerReferences changed (-derived +stored):\n%s", diff)
			}
		})
	}
}

// notKept lists the paths below path where got lacks or changes a value of
// want; what got adds is fine.
func notKept(want, got any, path string) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: stored %v, derived %v", path, got, want)}
		}
		var lost []string
		for k, v := range w {
			lost = append(lost, notKept(v, g[k], path+"."+k)...)
		}
		return lost
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{fmt.Sprintf("%s: stored %v, derived %v", path, got, want)}
		}
		var lost []string
		for i := range w {
			lost = append(lost, notKept(w[i], g[i], fmt.Sprintf("%s[%d]", path, i))...)
		}
		return lost
	default:
		if !cmp.Equal(want, got) {
			return []string{fmt.Sprintf("%s: stored %v, derived %v", path, got, want)}
		}
		return nil
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// asJSON round-trips v through JSON into generic maps, so the comparison is of
// what would be stored, not of Go zero values.
func asJSON(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

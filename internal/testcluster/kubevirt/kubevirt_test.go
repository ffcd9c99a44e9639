//go:build e2e

package kubevirt_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	kvclient "kubevirt.io/client-go/kubevirt"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/doubles"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster/kubevirt"
)

type logWriter struct{ t testing.TB }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestKubeVirt runs KubeVirt's virt-api and virt-controller with the
// virt-handler stand-in and checks what they do to VMs, as a cluster with
// KubeVirt would.
func TestKubeVirt(t *testing.T) {
	bins, err := kubevirt.EnsureBinaries(t.Context(), "", os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	c := testcluster.ForTest(t, testcluster.Options{Nodes: 2, CRDs: []string{bins.CRDs}, Log: logWriter{t}})
	kv := kubevirt.ForTest(t, c, kubevirt.Options{Binaries: bins, Log: logWriter{t}})
	t.Logf("KubeVirt started in %s", kv.StartupTime)
	cs := kubernetes.NewForConfigOrDie(c.RESTConfig)
	virt := kvclient.NewForConfigOrDie(c.RESTConfig)

	ctx, stop := context.WithCancel(context.Background())
	handlerDone := make(chan error, 1)
	go func() {
		handlerDone <- doubles.RunVirtHandler(ctx, kv, slog.New(slog.NewTextHandler(logWriter{t}, nil)))
	}()
	t.Cleanup(func() {
		stop()
		if err := <-handlerDone; err != nil {
			t.Errorf("the virt-handler stand-in returned %v", err)
		}
	})
	ns := "default"
	vms := virt.KubevirtV1().VirtualMachines(ns)
	vmis := virt.KubevirtV1().VirtualMachineInstances(ns)
	node := c.Nodes[1]

	t.Run("a pinned VM runs on its node, with KubeVirt's status", func(t *testing.T) {
		if _, err := vms.Create(t.Context(), pinnedVM("pinned", node), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		vm := waitVM(t, vms, "pinned", "Running and ready", func(vm *kubevirtv1.VirtualMachine) bool {
			return vm.Status.Ready && vm.Status.PrintableStatus == kubevirtv1.VirtualMachineStatusRunning
		})
		vmi, err := vmis.Get(t.Context(), "pinned", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if vmi.Status.Phase != kubevirtv1.Running || vmi.Status.NodeName != node || !metav1.IsControlledBy(vmi, vm) {
			t.Errorf("VMI phase %q on node %q, owners %+v; want Running on %s, controlled by the VM", vmi.Status.Phase, vmi.Status.NodeName, vmi.OwnerReferences, node)
		}
		pod := launcherPod(t, cs, ns, vmi.UID)
		if !strings.HasPrefix(pod.Name, "virt-launcher-pinned-") || pod.Spec.NodeName != node || pod.Spec.Containers[0].Image != bins.LauncherImage() {
			t.Errorf("launcher Pod %s on node %q with image %q; want virt-launcher-pinned-* on %s with %s",
				pod.Name, pod.Spec.NodeName, pod.Spec.Containers[0].Image, node, bins.LauncherImage())
		}
	})

	t.Run("virt-api's temporary files stay in the cluster's directory", func(t *testing.T) {
		entries, err := os.ReadDir(kv.TempDir(kubevirt.VirtAPI))
		if err != nil || len(entries) == 0 {
			t.Errorf("virt-api's TMPDIR %s: %d entries, error %v; want the certsdir it makes at start", kv.TempDir(kubevirt.VirtAPI), len(entries), err)
		}
	})

	t.Run("the validating webhook rejects what KubeVirt rejects", func(t *testing.T) {
		bad := pinnedVM("twins", node)
		ifaces := &bad.Spec.Template.Spec.Domain.Devices.Interfaces
		*ifaces = append(*ifaces, (*ifaces)[0])
		_, err := vms.Create(t.Context(), bad, metav1.CreateOptions{})
		if err == nil || !strings.Contains(err.Error(), `admission webhook "virtualmachine-validator.kubevirt.io" denied`) {
			t.Fatalf("creating a VM with two interfaces named alike: got %v, want a denial by KubeVirt's validating webhook", err)
		}
	})

	t.Run("the mutating webhook fills in KubeVirt's defaults", func(t *testing.T) {
		got, err := vms.Create(t.Context(), pinnedVM("defaulted", node), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			t.Fatal(err)
		}
		if got.Spec.Template.Spec.Architecture == "" {
			t.Errorf("stored VM has no spec.template.spec.architecture: KubeVirt's mutating webhook did not run")
		}
	})

	t.Run("virt-api's subresource API answers through the API server", func(t *testing.T) {
		// expand-spec applies a VM's instancetype as KubeVirt does: the
		// aggregator reaches virt-api on loopback, through the ExternalName
		// Service, with the front proxy's certificate.
		it := []byte(`{"apiVersion":"instancetype.kubevirt.io/v1beta1","kind":"VirtualMachineInstancetype","metadata":{"name":"small"},` +
			`"spec":{"cpu":{"guest":2},"memory":{"guest":"1Gi"}}}`)
		if err := cs.CoreV1().RESTClient().Post().AbsPath("/apis/instancetype.kubevirt.io/v1beta1/namespaces", ns, "virtualmachineinstancetypes").
			SetHeader("Content-Type", "application/json").Body(it).Do(t.Context()).Error(); err != nil {
			t.Fatal(err)
		}
		vm := pinnedVM("typed", node)
		vm.Spec.Instancetype = &kubevirtv1.InstancetypeMatcher{Name: "small", Kind: "VirtualMachineInstancetype"}
		vm.Spec.Template.Spec.Domain.Resources = kubevirtv1.ResourceRequirements{}
		vm.Spec.Template.Spec.Domain.Memory, vm.Spec.Template.Spec.Domain.CPU = nil, nil
		vm.Spec.RunStrategy = ptr.To(kubevirtv1.RunStrategyHalted)
		if _, err := vms.Create(t.Context(), vm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		raw, err := virt.KubevirtV1().RESTClient().Get().
			AbsPath("/apis/subresources.kubevirt.io/v1/namespaces", ns, "virtualmachines", "typed", "expand-spec").DoRaw(t.Context())
		if err != nil {
			t.Fatalf("expand-spec: %v", err)
		}
		var expanded kubevirtv1.VirtualMachine
		if err := json.Unmarshal(raw, &expanded); err != nil {
			t.Fatal(err)
		}
		if expanded.Spec.Instancetype != nil || expanded.Spec.Template.Spec.Domain.CPU == nil || expanded.Spec.Template.Spec.Domain.CPU.Sockets != 2 {
			t.Errorf("expand-spec returned instancetype %v, CPU %+v; want the instancetype's 2 vCPUs applied", expanded.Spec.Instancetype, expanded.Spec.Template.Spec.Domain.CPU)
		}
	})

	t.Run("runStrategy Halted stops the VMI and its launcher Pod", func(t *testing.T) {
		vmi, err := vmis.Get(t.Context(), "pinned", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		patch := []byte(`{"spec":{"runStrategy":"Halted"}}`)
		if _, err := vms.Patch(t.Context(), "pinned", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		waitVM(t, vms, "pinned", "Stopped", func(vm *kubevirtv1.VirtualMachine) bool {
			return !vm.Status.Ready && vm.Status.PrintableStatus == kubevirtv1.VirtualMachineStatusStopped
		})
		testcluster.WaitGone(t, "the VMI", func(ctx context.Context) error {
			_, err := vmis.Get(ctx, "pinned", metav1.GetOptions{})
			return err
		})
		testcluster.WaitGone(t, "the launcher Pod", func(ctx context.Context) error {
			if pods := launcherPods(ctx, t, cs, ns, vmi.UID); len(pods) > 0 {
				return nil
			}
			return apierrors.NewNotFound(corev1.Resource("pods"), "virt-launcher")
		})
	})

	t.Run("virt-controller comes back when it exits", func(t *testing.T) {
		before := kv.Pids()[kubevirt.VirtController]
		if before == 0 {
			t.Fatal("virt-controller is not running")
		}
		if err := syscall.Kill(before, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		testcluster.Eventually(t, 30*time.Second, "virt-controller to run again", func(context.Context) (bool, error) {
			now := kv.Pids()[kubevirt.VirtController]
			return now != 0 && now != before, nil
		})
		// The new one takes over: a restarted VM runs again.
		patch := []byte(`{"spec":{"runStrategy":"Always"}}`)
		if _, err := vms.Patch(t.Context(), "pinned", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		waitVM(t, vms, "pinned", "Running and ready again", func(vm *kubevirtv1.VirtualMachine) bool {
			return vm.Status.Ready && vm.Status.PrintableStatus == kubevirtv1.VirtualMachineStatusRunning
		})
	})

	t.Run("deleting a VM deletes its VMI and launcher Pod", func(t *testing.T) {
		vmi, err := vmis.Get(t.Context(), "pinned", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := vms.Delete(t.Context(), "pinned", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}); err != nil {
			t.Fatal(err)
		}
		testcluster.WaitGone(t, "the VM", func(ctx context.Context) error {
			_, err := vms.Get(ctx, "pinned", metav1.GetOptions{})
			return err
		})
		testcluster.WaitGone(t, "the launcher Pod", func(ctx context.Context) error {
			if pods := launcherPods(ctx, t, cs, ns, vmi.UID); len(pods) > 0 {
				return nil
			}
			return apierrors.NewNotFound(corev1.Resource("pods"), "virt-launcher")
		})
	})

	t.Run("Stop removes the webhooks and ends both components", func(t *testing.T) {
		adm := cs.AdmissionregistrationV1()
		if _, err := adm.ValidatingWebhookConfigurations().Get(t.Context(), "virt-api-validator", metav1.GetOptions{}); err != nil {
			t.Fatalf("before Stop: %v", err)
		}
		if _, err := adm.MutatingWebhookConfigurations().Get(t.Context(), "virt-api-mutator", metav1.GetOptions{}); err != nil {
			t.Fatalf("before Stop: %v", err)
		}
		apiServices := cs.CoreV1().RESTClient().Get().AbsPath("/apis/apiregistration.k8s.io/v1/apiservices/v1.subresources.kubevirt.io")
		if err := apiServices.Do(t.Context()).Error(); err != nil {
			t.Fatalf("before Stop: %v", err)
		}
		pids := kv.Pids()
		if len(pids) != 2 {
			t.Fatalf("running components %v, want virt-api and virt-controller", pids)
		}
		if err := kv.Stop(); err != nil {
			t.Fatal(err)
		}
		for name, pid := range pids {
			if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
				t.Errorf("%s (%d) still exists after Stop (kill -0: %v)", name, pid, err)
			}
		}
		if _, err := adm.ValidatingWebhookConfigurations().Get(t.Context(), "virt-api-validator", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("ValidatingWebhookConfiguration virt-api-validator after Stop: %v, want NotFound", err)
		}
		if _, err := adm.MutatingWebhookConfigurations().Get(t.Context(), "virt-api-mutator", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("MutatingWebhookConfiguration virt-api-mutator after Stop: %v, want NotFound", err)
		}
		if err := apiServices.Do(t.Context()).Error(); !apierrors.IsNotFound(err) {
			t.Errorf("APIService v1.subresources.kubevirt.io after Stop: %v, want NotFound", err)
		}
		// Nothing fails closed: VMs can still be written without virt-api.
		if _, err := vms.Create(t.Context(), pinnedVM("after-stop", node), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Errorf("creating a VM after Stop: %v", err)
		}
	})
}

// pinnedVM is a running VM pinned to node as vmctl pins derived VMs.
func pinnedVM(name, node string) *kubevirtv1.VirtualMachine {
	return &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: kubevirtv1.VirtualMachineSpec{
			RunStrategy: ptr.To(kubevirtv1.RunStrategyAlways),
			Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
				Spec: kubevirtv1.VirtualMachineInstanceSpec{
					Domain: kubevirtv1.DomainSpec{
						Memory: &kubevirtv1.Memory{Guest: ptr.To(resourceQuantity("128Mi"))},
						Devices: kubevirtv1.Devices{
							Interfaces: []kubevirtv1.Interface{{Name: "default", InterfaceBindingMethod: kubevirtv1.InterfaceBindingMethod{Masquerade: &kubevirtv1.InterfaceMasquerade{}}}},
						},
					},
					Networks: []kubevirtv1.Network{{Name: "default", NetworkSource: kubevirtv1.NetworkSource{Pod: &kubevirtv1.PodNetwork{}}}},
					Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
						RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
							MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
						}}},
					}},
				},
			},
		},
	}
}

func launcherPods(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string, vmiUID types.UID) []corev1.Pod {
	t.Helper()
	list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: kubevirtv1.CreatedByLabel + "=" + string(vmiUID)})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

func launcherPod(t *testing.T, cs kubernetes.Interface, ns string, vmiUID types.UID) corev1.Pod {
	t.Helper()
	pods := launcherPods(t.Context(), t, cs, ns, vmiUID)
	if len(pods) != 1 {
		t.Fatalf("%d launcher Pods for VMI %s, want 1", len(pods), vmiUID)
	}
	return pods[0]
}

func waitVM(t *testing.T, vms interface {
	Get(context.Context, string, metav1.GetOptions) (*kubevirtv1.VirtualMachine, error)
}, name, what string, cond func(*kubevirtv1.VirtualMachine) bool) *kubevirtv1.VirtualMachine {
	t.Helper()
	var vm *kubevirtv1.VirtualMachine
	testcluster.Eventually(t, 60*time.Second, "VM "+name+" "+what, func(ctx context.Context) (bool, error) {
		var err error
		vm, err = vms.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return cond(vm), errors.New("status " + string(vm.Status.PrintableStatus))
	})
	return vm
}

func resourceQuantity(s string) resource.Quantity { return resource.MustParse(s) }

// Stopping the cluster, as StopOnSignal does on Ctrl-C, stops KubeVirt
// first.
func TestClusterStopStopsKubeVirt(t *testing.T) {
	bins, err := kubevirt.EnsureBinaries(t.Context(), "", os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	c := testcluster.ForTest(t, testcluster.Options{Nodes: 1, CRDs: []string{bins.CRDs}})
	kv, err := kubevirt.Start(t.Context(), c, kubevirt.Options{Binaries: bins})
	if err != nil {
		t.Fatal(err)
	}
	pids := kv.Pids()
	if len(pids) != 2 {
		t.Fatalf("running components %v, want virt-api and virt-controller", pids)
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	for name, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("%s (%d) still exists after the cluster's Stop (kill -0: %v)", name, pid, err)
		}
	}
	// The cluster ran KubeVirt's Stop; its result says whether the webhooks
	// went while the API server still served.
	if err := kv.Stop(); err != nil {
		t.Errorf("KubeVirt's Stop, as the cluster's Stop ran it: %v", err)
	}
}

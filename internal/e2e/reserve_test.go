//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	instancetypev1beta1 "kubevirt.io/api/instancetype/v1beta1"
	"kubevirt.io/client-go/kubevirt"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/reserve"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/testcluster"
)

// TestLauncherReservationMatchesKubeVirt holds reserve.Launcher to KubeVirt:
// for each VM of a matrix, the CPU and memory the scheduler counts for the
// virt-launcher Pod that KubeVirt's own virt-controller renders equal, to
// the byte and the millicore, what reserve.Launcher computes from the VM
// and the Inputs reserve.Load reads.
//
// No case isolates the emulator thread: with no KubeVirt CR, as here,
// v1.7.0's virt-api panics on such a VMI (ApplyNewVMIMutations reads the
// annotations of GetConfigFromKubeVirtCR(), which is nil) and the VM
// controller never gets it created. Nor does one set v1.8's
// memory.reservedOverhead: virt-api refuses it without the alpha feature gate
// ReservedOverheadMemlock, which needs a KubeVirt CR. The unit tests cover
// both rules.
func TestLauncherReservationMatchesKubeVirt(t *testing.T) {
	eachKubeVirt(t, launcherReservationMatches)
}

func launcherReservationMatches(t *testing.T, k kubeVirtEnv) {
	ns := testcluster.Namespace(t, k.kube, nil)
	ctx := context.Background()
	createSizes(t, k.virt, ns)

	cases := []struct {
		name   string
		change func(vm *kubevirtv1.VirtualMachine)
	}{
		{"default", func(*kubevirtv1.VirtualMachine) {}},
		{"cores-3", func(vm *kubevirtv1.VirtualMachine) { cpuOf(vm).Cores = 3 }},
		{"topology-2x2x2", func(vm *kubevirtv1.VirtualMachine) {
			cpuOf(vm).Sockets, cpuOf(vm).Cores, cpuOf(vm).Threads = 2, 2, 2
		}},
		{"sockets-16", func(vm *kubevirtv1.VirtualMachine) { cpuOf(vm).Cores, cpuOf(vm).Sockets = 0, 16 }},
		{"guest-600gi", func(vm *kubevirtv1.VirtualMachine) { memOf(vm).Guest = ptr.To(apiresource.MustParse("600Gi")) }},
		{"request-2ti", func(vm *kubevirtv1.VirtualMachine) {
			memOf(vm).Guest = nil
			domainOf(vm).Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: apiresource.MustParse("2Ti")}
		}},
		{"requests-limits", func(vm *kubevirtv1.VirtualMachine) {
			memOf(vm).Guest = nil
			cpuOf(vm).Cores = 0
			domainOf(vm).Resources = kubevirtv1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: apiresource.MustParse("1500m"), corev1.ResourceMemory: apiresource.MustParse("1G")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: apiresource.MustParse("3"), corev1.ResourceMemory: apiresource.MustParse("2Gi")},
			}
		}},
		{"guaranteed", func(vm *kubevirtv1.VirtualMachine) {
			memOf(vm).Guest = nil
			both := corev1.ResourceList{corev1.ResourceCPU: apiresource.MustParse("2"), corev1.ResourceMemory: apiresource.MustParse("1Gi")}
			domainOf(vm).Resources = kubevirtv1.ResourceRequirements{Requests: both, Limits: both.DeepCopy()}
		}},
		{"limits-only", func(vm *kubevirtv1.VirtualMachine) {
			memOf(vm).Guest = nil
			cpuOf(vm).Cores = 0
			domainOf(vm).Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: apiresource.MustParse("2"), corev1.ResourceMemory: apiresource.MustParse("768Mi")}
		}},
		{"overcommit-guest-overhead", func(vm *kubevirtv1.VirtualMachine) {
			memOf(vm).Guest = nil
			domainOf(vm).Resources = kubevirtv1.ResourceRequirements{
				Requests:                corev1.ResourceList{corev1.ResourceMemory: apiresource.MustParse("1Gi")},
				OvercommitGuestOverhead: true,
			}
		}},
		{"dedicated", func(vm *kubevirtv1.VirtualMachine) {
			cpuOf(vm).Cores, cpuOf(vm).DedicatedCPUPlacement = 2, true
		}},
		{"iothreads", func(vm *kubevirtv1.VirtualMachine) {
			cpuOf(vm).Cores = 2
			domainOf(vm).IOThreadsPolicy = ptr.To(kubevirtv1.IOThreadsPolicySupplementalPool)
			domainOf(vm).IOThreads = &kubevirtv1.DiskIOThreads{SupplementalPoolThreadCount: ptr.To(uint32(3))}
		}},
		{"iothreads-dedicated", func(vm *kubevirtv1.VirtualMachine) {
			cpuOf(vm).Cores, cpuOf(vm).DedicatedCPUPlacement = 2, true
			domainOf(vm).IOThreadsPolicy = ptr.To(kubevirtv1.IOThreadsPolicySupplementalPool)
			domainOf(vm).IOThreads = &kubevirtv1.DiskIOThreads{SupplementalPoolThreadCount: ptr.To(uint32(2))}
		}},
		{"hugepages", func(vm *kubevirtv1.VirtualMachine) {
			memOf(vm).Guest = ptr.To(apiresource.MustParse("1Gi"))
			memOf(vm).Hugepages = &kubevirtv1.Hugepages{PageSize: "2Mi"}
		}},
		{"probes-no-console-no-vga", func(vm *kubevirtv1.VirtualMachine) {
			d := &domainOf(vm).Devices
			d.AutoattachSerialConsole, d.AutoattachGraphicsDevice = ptr.To(false), ptr.To(false)
			exec := kubevirtv1.Handler{Exec: &corev1.ExecAction{Command: []string{"true"}}}
			vm.Spec.Template.Spec.ReadinessProbe = &kubevirtv1.Probe{Handler: exec}
			vm.Spec.Template.Spec.LivenessProbe = &kubevirtv1.Probe{Handler: exec}
		}},
		{"cluster-instancetype", func(vm *kubevirtv1.VirtualMachine) {
			withSize(vm, "VirtualMachineClusterInstancetype", ns, "VirtualMachineClusterPreference", ns)
		}},
		{"instancetype", func(vm *kubevirtv1.VirtualMachine) {
			withSize(vm, "VirtualMachineInstancetype", "overcommit", "VirtualMachinePreference", "spread")
		}},
		{"instancetype-dedicated", func(vm *kubevirtv1.VirtualMachine) {
			withSize(vm, "VirtualMachineInstancetype", "dedicated", "", "")
		}},
		{"preference-only", func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Preference = &kubevirtv1.PreferenceMatcher{Kind: "VirtualMachinePreference", Name: "spread"}
		}},
	}

	vms := k.virt.KubevirtV1().VirtualMachines(ns)
	for _, c := range cases {
		vm := reserveVM(c.name)
		c.change(vm)
		if _, err := vms.Create(ctx, vm, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create VM %s: %v", c.name, err)
		}
	}
	t.Cleanup(func() {
		for _, c := range cases {
			_ = vms.Delete(context.Background(), c.name, metav1.DeleteOptions{})
		}
	})

	pods := waitLaunchers(t, k, ns, len(cases), 2*time.Minute)
	clients := kube.Clients{Kube: k.kube, KubeVirt: k.virt}
	var table strings.Builder
	fmt.Fprintf(&table, "%-26s %12s %12s %16s %16s\n", "case", "kubevirt cpu", "ours cpu", "kubevirt memory", "ours memory")
	for _, c := range cases {
		pod, ok := pods[c.name]
		if !ok {
			t.Errorf("%s: no virt-launcher Pod", c.name)
			continue
		}
		vm, err := vms.Get(ctx, c.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		in, err := reserve.Load(ctx, clients, vm)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		ours, err := reserve.Launcher(vm, in)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		theirs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
		fmt.Fprintf(&table, "%-26s %12s %12s %16d %16d\n", c.name,
			theirs.Cpu(), ours.Cpu(), theirs.Memory().Value(), ours.Memory().Value())
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			want, got := theirs[name], ours[name]
			if want.Cmp(got) != 0 {
				t.Errorf("%s: %s: KubeVirt's launcher Pod %s requests %s (%d), reserve.Launcher says %s (%d)",
					c.name, name, pod.Name, &want, want.MilliValue(), &got, got.MilliValue())
			}
		}
	}
	t.Logf("requests of the launcher Pods (memory in bytes):\n%s", table.String())
}

// createSizes makes the instancetypes and preferences the cases refer to:
// a cluster-wide pair named after ns, and namespaced ones in ns.
func createSizes(t *testing.T, virt kubevirt.Interface, ns string) {
	t.Helper()
	ctx := context.Background()
	it := virt.InstancetypeV1beta1()
	cit, err := it.VirtualMachineClusterInstancetypes().Create(ctx, &instancetypev1beta1.VirtualMachineClusterInstancetype{
		ObjectMeta: metav1.ObjectMeta{Name: ns},
		Spec: instancetypev1beta1.VirtualMachineInstancetypeSpec{
			CPU:    instancetypev1beta1.CPUInstancetype{Guest: 4},
			Memory: instancetypev1beta1.MemoryInstancetype{Guest: apiresource.MustParse("3Gi")},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = it.VirtualMachineClusterInstancetypes().Delete(context.Background(), cit.Name, metav1.DeleteOptions{})
	})
	cp, err := it.VirtualMachineClusterPreferences().Create(ctx, &instancetypev1beta1.VirtualMachineClusterPreference{
		ObjectMeta: metav1.ObjectMeta{Name: ns},
		Spec: instancetypev1beta1.VirtualMachinePreferenceSpec{
			CPU: &instancetypev1beta1.CPUPreferences{PreferredCPUTopology: ptr.To(instancetypev1beta1.Cores)},
			Devices: &instancetypev1beta1.DevicePreferences{
				PreferredAutoattachGraphicsDevice: ptr.To(false),
				PreferredTPM:                      &kubevirtv1.TPMDevice{},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = it.VirtualMachineClusterPreferences().Delete(context.Background(), cp.Name, metav1.DeleteOptions{})
	})
	for _, spec := range []instancetypev1beta1.VirtualMachineInstancetype{
		{ObjectMeta: metav1.ObjectMeta{Name: "overcommit"}, Spec: instancetypev1beta1.VirtualMachineInstancetypeSpec{
			CPU:    instancetypev1beta1.CPUInstancetype{Guest: 6},
			Memory: instancetypev1beta1.MemoryInstancetype{Guest: apiresource.MustParse("8Gi"), OvercommitPercent: 15},
		}},
		{ObjectMeta: metav1.ObjectMeta{Name: "dedicated"}, Spec: instancetypev1beta1.VirtualMachineInstancetypeSpec{
			CPU:    instancetypev1beta1.CPUInstancetype{Guest: 3, DedicatedCPUPlacement: ptr.To(true)},
			Memory: instancetypev1beta1.MemoryInstancetype{Guest: apiresource.MustParse("2Gi")},
		}},
	} {
		if _, err := it.VirtualMachineInstancetypes(ns).Create(ctx, &spec, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = it.VirtualMachinePreferences(ns).Create(ctx, &instancetypev1beta1.VirtualMachinePreference{
		ObjectMeta: metav1.ObjectMeta{Name: "spread"},
		Spec: instancetypev1beta1.VirtualMachinePreferenceSpec{
			CPU: &instancetypev1beta1.CPUPreferences{PreferredCPUTopology: ptr.To(instancetypev1beta1.Spread)},
			Devices: &instancetypev1beta1.DevicePreferences{
				PreferredAutoattachSerialConsole: ptr.To(false),
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// reserveVM is the matrix's base: the README's testvm (1 core, 256Mi, a
// container disk), running.
func reserveVM(name string) *kubevirtv1.VirtualMachine {
	return &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: kubevirtv1.VirtualMachineSpec{
			RunStrategy: ptr.To(kubevirtv1.RunStrategyAlways),
			Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
				Spec: kubevirtv1.VirtualMachineInstanceSpec{
					Domain: kubevirtv1.DomainSpec{
						CPU:    &kubevirtv1.CPU{Cores: 1},
						Memory: &kubevirtv1.Memory{Guest: ptr.To(apiresource.MustParse("256Mi"))},
						Devices: kubevirtv1.Devices{
							Disks:      []kubevirtv1.Disk{{Name: "containerdisk", DiskDevice: kubevirtv1.DiskDevice{Disk: &kubevirtv1.DiskTarget{Bus: kubevirtv1.DiskBusVirtio}}}},
							Interfaces: []kubevirtv1.Interface{{Name: "default", InterfaceBindingMethod: kubevirtv1.InterfaceBindingMethod{Masquerade: &kubevirtv1.InterfaceMasquerade{}}}},
						},
					},
					Networks: []kubevirtv1.Network{{Name: "default", NetworkSource: kubevirtv1.NetworkSource{Pod: &kubevirtv1.PodNetwork{}}}},
					Volumes: []kubevirtv1.Volume{{Name: "containerdisk", VolumeSource: kubevirtv1.VolumeSource{
						ContainerDisk: &kubevirtv1.ContainerDiskSource{Image: "quay.io/kubevirt/cirros-container-disk-demo:v1.6.0"},
					}}},
				},
			},
		},
	}
}

func domainOf(vm *kubevirtv1.VirtualMachine) *kubevirtv1.DomainSpec {
	return &vm.Spec.Template.Spec.Domain
}
func cpuOf(vm *kubevirtv1.VirtualMachine) *kubevirtv1.CPU { return vm.Spec.Template.Spec.Domain.CPU }
func memOf(vm *kubevirtv1.VirtualMachine) *kubevirtv1.Memory {
	return vm.Spec.Template.Spec.Domain.Memory
}

// withSize has vm take its size from an instancetype (and a preference,
// when prefKind is set) instead of its own CPU and memory.
func withSize(vm *kubevirtv1.VirtualMachine, itKind, itName, prefKind, prefName string) {
	domainOf(vm).CPU, domainOf(vm).Memory = nil, nil
	vm.Spec.Instancetype = &kubevirtv1.InstancetypeMatcher{Kind: itKind, Name: itName}
	if prefKind != "" {
		vm.Spec.Preference = &kubevirtv1.PreferenceMatcher{Kind: prefKind, Name: prefName}
	}
}

// waitLaunchers watches the virt-launcher Pods of ns until there are want of
// them, and returns them by VM name.
func waitLaunchers(t *testing.T, k kubeVirtEnv, ns string, want int, timeout time.Duration) map[string]*corev1.Pod {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	selector := kubevirtv1.AppLabel + "=virt-launcher"
	lw := cache.NewFilteredListWatchFromClient(k.kube.CoreV1().RESTClient(), "pods", ns,
		func(opts *metav1.ListOptions) { opts.LabelSelector = selector })
	pods := map[string]*corev1.Pod{}
	_, err := watchtools.UntilWithSync(ctx, lw, &corev1.Pod{}, nil, func(ev watch.Event) (bool, error) {
		if pod, ok := ev.Object.(*corev1.Pod); ok && ev.Type != watch.Deleted {
			pods[pod.Labels[kubevirtv1.DeprecatedVirtualMachineNameLabel]] = pod
		}
		return len(pods) >= want, nil
	})
	if err != nil {
		t.Fatalf("virt-launcher Pods in %s: %d of %d within %s: %v; VMs' states: %s", ns, len(pods), want, timeout, err, vmStates(k.virt, ns))
	}
	return pods
}

// vmStates says, for a failure message, what each VM of ns reports.
func vmStates(virt kubevirt.Interface, ns string) string {
	list, err := virt.KubevirtV1().VirtualMachines(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, vm := range list.Items {
		fmt.Fprintf(&b, "\n%s: %s", vm.Name, vm.Status.PrintableStatus)
		for _, c := range vm.Status.Conditions {
			if c.Message != "" {
				fmt.Fprintf(&b, "; %s: %s", c.Type, c.Message)
			}
		}
	}
	return b.String()
}

//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
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
// and the Inputs reserve.Load reads, and the launcher Pod has the
// containers reserve.LauncherPod names. Where KubeVirt reports the VMI's
// memory overhead (VmiMemoryOverheadReport), it equals what
// reserve.MemoryOverheadOf computes from what status keeps of the VMI
// (reserve.KeepOverheadInputs); where it does not, the launcher Pod carries
// no report.
//
// The matrix runs on each KubeVirt CR setting (settings): KubeVirt's
// defaults, feature gates listed, Beta gates listed as disabled. A case
// that KubeVirt refuses on a release or setting asserts the refusal, and
// one whose field a release's CRD prunes asserts that the field is gone
// and counts for nothing.
func TestLauncherReservationMatchesKubeVirt(t *testing.T) {
	eachKubeVirt(t, launcherReservationMatches)
}

// reserveCase is a VM of the matrix.
type reserveCase struct {
	name   string
	change func(vm *kubevirtv1.VirtualMachine)
	// in names the settings the case runs on; none means all.
	in []string
	// refused is the message virt-api refuses the VM with on KubeVirt
	// version v with setting s, "" when it admits it.
	refused func(t testing.TB, v string, s setting) string
	// field, when set, reports whether the VM as KubeVirt stored it has the
	// case's field, which the CRDs of releases before v1.<since> prune; the
	// VM's launcher Pod then holds extra more memory than the "default"
	// case's on the same setting, and none without it.
	field func(stored *kubevirtv1.VirtualMachine) bool
	since uint
	extra int64
}

func reserveCases(ns string) []reserveCase {
	return []reserveCase{
		{name: "default", change: func(*kubevirtv1.VirtualMachine) {}},
		{name: "cores-3", in: []string{settingDefaults}, change: func(vm *kubevirtv1.VirtualMachine) { cpuOf(vm).Cores = 3 }},
		{name: "topology-2x2x2", in: []string{settingDefaults}, change: func(vm *kubevirtv1.VirtualMachine) {
			cpuOf(vm).Sockets, cpuOf(vm).Cores, cpuOf(vm).Threads = 2, 2, 2
		}},
		{name: "sockets-16", in: []string{settingDefaults}, change: func(vm *kubevirtv1.VirtualMachine) { cpuOf(vm).Cores, cpuOf(vm).Sockets = 0, 16 }},
		{name: "guest-600gi", in: []string{settingDefaults}, change: func(vm *kubevirtv1.VirtualMachine) {
			memOf(vm).Guest = ptr.To(apiresource.MustParse("600Gi"))
		}},
		{name: "request-2ti", in: []string{settingDefaults}, change: func(vm *kubevirtv1.VirtualMachine) {
			memOf(vm).Guest = nil
			domainOf(vm).Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: apiresource.MustParse("2Ti")}
		}},
		{name: "requests-limits", in: []string{settingDefaults}, change: func(vm *kubevirtv1.VirtualMachine) {
			memOf(vm).Guest = nil
			cpuOf(vm).Cores = 0
			domainOf(vm).Resources = kubevirtv1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: apiresource.MustParse("1500m"), corev1.ResourceMemory: apiresource.MustParse("1G")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: apiresource.MustParse("3"), corev1.ResourceMemory: apiresource.MustParse("2Gi")},
			}
		}},
		{name: "guaranteed", in: []string{settingDefaults}, change: func(vm *kubevirtv1.VirtualMachine) {
			memOf(vm).Guest = nil
			both := corev1.ResourceList{corev1.ResourceCPU: apiresource.MustParse("2"), corev1.ResourceMemory: apiresource.MustParse("1Gi")}
			domainOf(vm).Resources = kubevirtv1.ResourceRequirements{Requests: both, Limits: both.DeepCopy()}
		}},
		{name: "limits-only", in: []string{settingDefaults}, change: func(vm *kubevirtv1.VirtualMachine) {
			memOf(vm).Guest = nil
			cpuOf(vm).Cores = 0
			domainOf(vm).Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: apiresource.MustParse("2"), corev1.ResourceMemory: apiresource.MustParse("768Mi")}
		}},
		{name: "overcommit-guest-overhead", in: []string{settingDefaults}, change: func(vm *kubevirtv1.VirtualMachine) {
			memOf(vm).Guest = nil
			domainOf(vm).Resources = kubevirtv1.ResourceRequirements{
				Requests:                corev1.ResourceList{corev1.ResourceMemory: apiresource.MustParse("1Gi")},
				OvercommitGuestOverhead: true,
			}
		}},
		{name: "dedicated", in: []string{settingDefaults}, change: func(vm *kubevirtv1.VirtualMachine) {
			cpuOf(vm).Cores, cpuOf(vm).DedicatedCPUPlacement = 2, true
		}},
		{name: "dedicated-isolated", in: []string{settingDefaults}, change: func(vm *kubevirtv1.VirtualMachine) {
			cpuOf(vm).Cores, cpuOf(vm).DedicatedCPUPlacement, cpuOf(vm).IsolateEmulatorThread = 2, true, true
		}},
		{name: "iothreads", in: []string{settingDefaults}, change: func(vm *kubevirtv1.VirtualMachine) {
			cpuOf(vm).Cores = 2
			domainOf(vm).IOThreadsPolicy = ptr.To(kubevirtv1.IOThreadsPolicySupplementalPool)
			domainOf(vm).IOThreads = &kubevirtv1.DiskIOThreads{SupplementalPoolThreadCount: ptr.To(uint32(3))}
		}},
		{name: "iothreads-dedicated", in: []string{settingDefaults}, change: func(vm *kubevirtv1.VirtualMachine) {
			cpuOf(vm).Cores, cpuOf(vm).DedicatedCPUPlacement = 2, true
			domainOf(vm).IOThreadsPolicy = ptr.To(kubevirtv1.IOThreadsPolicySupplementalPool)
			domainOf(vm).IOThreads = &kubevirtv1.DiskIOThreads{SupplementalPoolThreadCount: ptr.To(uint32(2))}
		}},
		{name: "hugepages", in: []string{settingDefaults}, change: func(vm *kubevirtv1.VirtualMachine) {
			memOf(vm).Guest = ptr.To(apiresource.MustParse("1Gi"))
			memOf(vm).Hugepages = &kubevirtv1.Hugepages{PageSize: "2Mi"}
		}},
		{name: "probes-no-console-no-vga", in: []string{settingDefaults}, change: func(vm *kubevirtv1.VirtualMachine) {
			d := &domainOf(vm).Devices
			d.AutoattachSerialConsole, d.AutoattachGraphicsDevice = ptr.To(false), ptr.To(false)
			exec := kubevirtv1.Handler{Exec: &corev1.ExecAction{Command: []string{"true"}}}
			vm.Spec.Template.Spec.ReadinessProbe = &kubevirtv1.Probe{Handler: exec}
			vm.Spec.Template.Spec.LivenessProbe = &kubevirtv1.Probe{Handler: exec}
		}},
		{name: "cluster-instancetype", in: []string{settingDefaults}, change: func(vm *kubevirtv1.VirtualMachine) {
			withSize(vm, "VirtualMachineClusterInstancetype", ns, "VirtualMachineClusterPreference", ns)
		}},
		{name: "instancetype", in: []string{settingDefaults}, change: func(vm *kubevirtv1.VirtualMachine) {
			withSize(vm, "VirtualMachineInstancetype", "overcommit", "VirtualMachinePreference", "spread")
		}},
		{name: "instancetype-dedicated", in: []string{settingDefaults}, change: func(vm *kubevirtv1.VirtualMachine) {
			withSize(vm, "VirtualMachineInstancetype", "dedicated", "", "")
		}},
		{name: "preference-only", in: []string{settingDefaults}, change: func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Preference = &kubevirtv1.PreferenceMatcher{Kind: "VirtualMachinePreference", Name: "spread"}
		}},
		// Two containerDisks, and a kernel boot container, as containers
		// or, with ImageVolume (Beta; on by default from v1.9), as image
		// volumes.
		{name: "containerdisks-2", change: withSecondDisk},
		{name: "kernel-boot", change: withKernelBoot},
		// The core passt binding (v1.8, behind the Beta gate PasstBinding,
		// on by default from v1.9): 250Mi more. v1.7's CRD prunes the
		// field, and the interface is left without a binding method.
		{name: "passt", change: withPasst, refused: passtRefused, since: 8, extra: 250 << 20, field: func(vm *kubevirtv1.VirtualMachine) bool {
			for _, iface := range vm.Spec.Template.Spec.Domain.Devices.Interfaces {
				if iface.PasstBinding != nil {
					return true
				}
			}
			return false
		}},
		// memory.reservedOverhead (v1.8, behind the Alpha gate
		// ReservedOverheadMemlock): its addedOverhead more. v1.7's CRD
		// prunes it.
		{name: "reserved-overhead", in: []string{settingDefaults, settingListed}, change: withReservedOverhead,
			refused: func(t testing.TB, v string, s setting) string {
				if minor(t, v) >= 8 && !slices.Contains(s.gates, "ReservedOverheadMemlock") {
					return "Reserved overhead memlock feature gate is not enabled in kubevirt-config"
				}
				return ""
			},
			since: 8, extra: 300 << 20, field: func(vm *kubevirtv1.VirtualMachine) bool {
				m := vm.Spec.Template.Spec.Domain.Memory
				return m != nil && m.ReservedOverhead != nil && m.ReservedOverhead.AddedOverhead != nil
			}},
	}
}

// passtRefused: v1.8 admits passtBinding only with the PasstBinding gate
// listed; v1.9 turns that Beta gate on by default.
func passtRefused(t testing.TB, v string, s setting) string {
	switch m := minor(t, v); {
	case m == 8 && !slices.Contains(s.gates, "PasstBinding"):
		return "PasstBinding feature gate is not enabled"
	case m >= 8 && slices.Contains(s.disabled, "PasstBinding"):
		return "PasstBinding feature gate is not enabled"
	}
	return ""
}

func launcherReservationMatches(t *testing.T, k kubeVirtEnv) {
	kubeVirtConfig.Lock()
	t.Cleanup(kubeVirtConfig.Unlock) // after restoreKubeVirtCR's cleanup
	restoreKubeVirtCR(t, k)
	for _, s := range settings {
		t.Run(s.name, func(t *testing.T) {
			ns := testcluster.Namespace(t, k.kube, nil)
			createSizes(t, k.virt, ns)
			configure(t, k, ns, s)
			var cases []reserveCase
			for _, c := range reserveCases(ns) {
				if len(c.in) == 0 || slices.Contains(c.in, s.name) {
					cases = append(cases, c)
				}
			}
			matchLaunchers(t, k, ns, s, cases)
		})
	}
}

// matchLaunchers creates the cases' VMs in ns, with the KubeVirt CR
// configured as s, and holds each launcher Pod virt-controller makes to
// vmctl's rule.
func matchLaunchers(t *testing.T, k kubeVirtEnv, ns string, s setting, cases []reserveCase) {
	ctx := context.Background()
	vms := k.virt.KubevirtV1().VirtualMachines(ns)
	var made []reserveCase
	for _, c := range cases {
		vm := reserveVM(c.name)
		c.change(vm)
		_, err := vms.Create(ctx, vm, metav1.CreateOptions{})
		want := ""
		if c.refused != nil {
			want = c.refused(t, k.version, s)
		}
		switch {
		case want == "" && err != nil:
			t.Errorf("create VM %s: %v", c.name, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("create VM %s: error %v, want KubeVirt %s to refuse it with %q", c.name, err, k.version, want)
		case want != "":
			t.Logf("%s: refused, as KubeVirt %s does with this setting: %v", c.name, k.version, err)
		default:
			made = append(made, c)
		}
	}
	t.Cleanup(func() {
		for _, c := range made {
			_ = vms.Delete(context.Background(), c.name, metav1.DeleteOptions{})
		}
	})
	names := make([]string, len(made))
	for i, c := range made {
		names[i] = c.name
	}
	pods := waitLaunchers(t, k, ns, names, 2*time.Minute)

	clients := kube.Clients{Kube: k.kube, KubeVirt: k.virt}
	reports := reportsOverhead(t, k.version, s)
	var table strings.Builder
	fmt.Fprintf(&table, "%-26s %12s %12s %16s %16s %16s\n", "case", "kubevirt cpu", "ours cpu", "kubevirt memory", "ours memory", "ours overhead")
	theirsDefault := int64(-1)
	for _, c := range made {
		pod := pods[c.name]
		if got := marker(pod); got != fmt.Sprint(s.marker) {
			t.Errorf("%s: launcher Pod %s rendered with verbosity %q, not with setting %s (%d)", c.name, pod.Name, got, s.name, s.marker)
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
		if note := reserve.Note(in); note != "" {
			t.Errorf("%s: reserve.Note = %q on KubeVirt %s, a release vmctl knows", c.name, note, k.version)
		}
		ours, err := reserve.Launcher(vm, in)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		vmi, err := k.virt.KubevirtV1().VirtualMachineInstances(ns).Get(ctx, c.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// What status computes: from what it keeps of the VMI.
		kept := &kubevirtv1.VirtualMachineInstance{Spec: reserve.KeepOverheadInputs(&vmi.Spec)}
		overhead := reserve.MemoryOverheadOf(kept, in.KubeVirt)
		theirs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
		fmt.Fprintf(&table, "%-26s %12s %12s %16d %16d %16d\n", c.name,
			theirs.Cpu(), ours.Cpu(), theirs.Memory().Value(), ours.Memory().Value(), overhead.Value())
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			want, got := theirs[name], ours[name]
			if want.Cmp(got) != 0 {
				t.Errorf("%s: %s: KubeVirt's launcher Pod %s requests %s (%d), reserve.Launcher says %s (%d)",
					c.name, name, pod.Name, &want, want.MilliValue(), &got, got.MilliValue())
			}
		}
		if c.name == "default" {
			theirsDefault = theirs.Memory().Value()
		}
		if c.field != nil {
			if theirsDefault < 0 {
				t.Fatalf("%s: the default case must come first", c.name)
			}
			has, want := c.field(vm), int64(0)
			if kept := minor(t, k.version) >= c.since; has != kept {
				t.Errorf("%s: KubeVirt %s stored the VM with the case's field: %v, want %v (pruned before v1.%d)", c.name, k.version, has, kept, c.since)
			}
			if has {
				want = c.extra
			}
			if got := theirs.Memory().Value() - theirsDefault; got != want {
				t.Errorf("%s: KubeVirt's launcher Pod holds %d more memory than the default VM's, want %d", c.name, got, want)
			}
		}
		checkContainers(t, c.name, pod, vm, in)
		checkOverheadReport(t, k, ns, c.name, pod, reports, overhead)
	}
	t.Logf("KubeVirt %s, setting %s: requests of the launcher Pods (memory in bytes):\n%s", k.version, s.name, table.String())
}

// checkContainers: the launcher Pod has the containers and init
// containers reserve.LauncherPod names, in its order.
func checkContainers(t *testing.T, name string, pod *corev1.Pod, vm *kubevirtv1.VirtualMachine, in reserve.Inputs) {
	t.Helper()
	ours, err := reserve.LauncherPod(vm, in)
	if err != nil {
		t.Errorf("%s: %v", name, err)
		return
	}
	names := func(cs []corev1.Container) []string {
		out := make([]string, len(cs))
		for i, c := range cs {
			out[i] = c.Name
		}
		return out
	}
	for _, l := range []struct {
		what         string
		kubevirt, us []corev1.Container
	}{{"containers", pod.Spec.Containers, ours.Spec.Containers}, {"init containers", pod.Spec.InitContainers, ours.Spec.InitContainers}} {
		if diff := cmp.Diff(names(l.kubevirt), names(l.us)); diff != "" {
			t.Errorf("%s: %s of launcher Pod %s (-KubeVirt +reserve.LauncherPod):\n%s", name, l.what, pod.Name, diff)
		}
	}
}

// checkOverheadReport: where KubeVirt reports the memory overhead, the
// launcher Pod's kubevirt.io/memory-overhead-bytes and, once
// virt-controller copied it, the VMI's status.memory.memoryOverhead equal
// ours (reserve.MemoryOverheadOf); where it does not, the launcher Pod has
// no report.
func checkOverheadReport(t *testing.T, k kubeVirtEnv, ns, name string, pod *corev1.Pod, reports bool, ours apiresource.Quantity) {
	t.Helper()
	raw, annotated := pod.Annotations[kubevirtv1.MemoryOverheadAnnotationBytes]
	if !reports {
		if annotated {
			t.Errorf("%s: launcher Pod %s reports a memory overhead (%s), which KubeVirt %s does not with this setting", name, pod.Name, raw, k.version)
		}
		return
	}
	if raw != fmt.Sprint(ours.Value()) {
		t.Errorf("%s: launcher Pod %s reports a memory overhead of %q, reserve.MemoryOverheadOf %d", name, pod.Name, raw, ours.Value())
	}
	eventually(t, time.Minute, name+"'s VMI to report its memory overhead", func(ctx context.Context) (bool, string, error) {
		vmi, err := k.virt.KubevirtV1().VirtualMachineInstances(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		if vmi.Status.Memory == nil || vmi.Status.Memory.MemoryOverhead == nil {
			return false, "no status.memory.memoryOverhead", nil
		}
		if got := vmi.Status.Memory.MemoryOverhead; got.Cmp(ours) != 0 {
			t.Errorf("%s: the VMI's status.memory.memoryOverhead is %s (%d), reserve.MemoryOverheadOf %s (%d)", name, got, got.Value(), &ours, ours.Value())
		}
		return true, "", nil
	})
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

func withSecondDisk(vm *kubevirtv1.VirtualMachine) {
	spec := &vm.Spec.Template.Spec
	spec.Domain.Devices.Disks = append(spec.Domain.Devices.Disks, kubevirtv1.Disk{Name: "second", DiskDevice: kubevirtv1.DiskDevice{Disk: &kubevirtv1.DiskTarget{Bus: kubevirtv1.DiskBusVirtio}}})
	spec.Volumes = append(spec.Volumes, kubevirtv1.Volume{Name: "second", VolumeSource: kubevirtv1.VolumeSource{
		ContainerDisk: &kubevirtv1.ContainerDiskSource{Image: "quay.io/kubevirt/alpine-container-disk-demo:v1.6.0"},
	}})
}

func withKernelBoot(vm *kubevirtv1.VirtualMachine) {
	domainOf(vm).Firmware = &kubevirtv1.Firmware{KernelBoot: &kubevirtv1.KernelBoot{
		KernelArgs: "console=ttyS0",
		Container: &kubevirtv1.KernelBootContainer{
			Image: "quay.io/kubevirt/alpine-ext-kernel-boot-demo:v1.6.0", KernelPath: "/boot/vmlinuz-virt", InitrdPath: "/boot/initramfs-virt",
		},
	}}
}

func withPasst(vm *kubevirtv1.VirtualMachine) {
	domainOf(vm).Devices.Interfaces = []kubevirtv1.Interface{{
		Name: "default", InterfaceBindingMethod: kubevirtv1.InterfaceBindingMethod{PasstBinding: &kubevirtv1.InterfacePasstBinding{}},
	}}
}

func withReservedOverhead(vm *kubevirtv1.VirtualMachine) {
	memOf(vm).ReservedOverhead = &kubevirtv1.ReservedOverhead{AddedOverhead: ptr.To(apiresource.MustParse("300Mi"))}
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

// waitLaunchers watches the virt-launcher Pods of ns until each VM of names
// has one, and returns them by VM name.
func waitLaunchers(t *testing.T, k kubeVirtEnv, ns string, names []string, timeout time.Duration) map[string]*corev1.Pod {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	selector := kubevirtv1.AppLabel + "=virt-launcher"
	lw := cache.NewFilteredListWatchFromClient(k.kube.CoreV1().RESTClient(), "pods", ns,
		func(opts *metav1.ListOptions) { opts.LabelSelector = selector })
	pods := map[string]*corev1.Pod{}
	have := func() bool {
		for _, n := range names {
			if pods[n] == nil {
				return false
			}
		}
		return true
	}
	_, err := watchtools.UntilWithSync(ctx, lw, &corev1.Pod{}, nil, func(ev watch.Event) (bool, error) {
		if pod, ok := ev.Object.(*corev1.Pod); ok && ev.Type != watch.Deleted {
			pods[pod.Labels[kubevirtv1.DeprecatedVirtualMachineNameLabel]] = pod
		}
		return have(), nil
	})
	if err != nil {
		t.Fatalf("virt-launcher Pods in %s: %d of %d within %s: %v; VMs' states: %s", ns, len(pods), len(names), timeout, err, vmStates(k.virt, ns))
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

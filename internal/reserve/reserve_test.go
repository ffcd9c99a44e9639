package reserve

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	instancetypev1beta1 "kubevirt.io/api/instancetype/v1beta1"
)

// Units for the expected figures: KubeVirt's overheads are in Mi, its
// support containers' memory in M.
const (
	Mi = int64(1) << 20
	M  = int64(1_000_000)
	Gi = Mi << 10
)

// Memory that recurs in the expected figures (KubeVirt v1.7.0 and v1.8.0,
// amd64, a KubeVirt CR that configures nothing):
//   - fixed: virt-launcher-monitor 25Mi + virt-launcher 100Mi + virtlogd
//     25Mi + virtqemud 40Mi + QEMU 30Mi = 220Mi, plus 8Mi for the IOThread
//     (GetMemoryOverhead);
//   - 8Mi per vCPU; 32Mi of video RAM unless the graphics device is off;
//     100Mi with dedicated CPUs or guaranteed QoS; 53Mi for a TPM;
//     10Mi per exec probe and 100Mi once;
//   - page tables: the VMI's *requested* memory (zero when only
//     memory.guest is set), in kilo rounded up, over 512;
//   - the support containers of one container disk with the serial console
//     log on, burstable: the disk's container (1m, 1M) beside compute, the
//     console log sidecar (5m, 35M), and the init containers
//     container-disk-binary (10m, 1M) and the disk's -init (1m, 1M), which
//     run one at a time after the sidecar: 1m+5m and 1M+35M = 36M on top of
//     compute (the init containers' 10m+5m never exceed it);
//   - the same with guaranteed QoS or dedicated CPUs, where each request is
//     its limit: disk container 10m/40M, console log 15m/60M: 25m and 100M.
const (
	fixed     = (220 + 8) * Mi
	vga       = 32 * Mi
	supportM  = 36 * M
	supportC  = 6 // millicores
	guarantM  = 100 * M
	guarantC  = 25
	qosExtra  = 100 * Mi
	perVCPU   = 8 * Mi
	oneVCPUOH = fixed + perVCPU + vga // 268Mi, the default VM's overhead
)

func TestLauncher(t *testing.T) {
	tests := []struct {
		name string
		vm   func(*kubevirtv1.VirtualMachine)
		in   Inputs
		// cpu in millicores, memory in bytes
		cpu, mem int64
	}{{
		// 1 vCPU / cpuAllocationRatio 10 = 100m; 256Mi + 268Mi.
		name: "default", vm: func(*kubevirtv1.VirtualMachine) {},
		cpu: 100 + supportC, mem: 256*Mi + oneVCPUOH + supportM,
	}, {
		// 3/10 = 300m; 256Mi + 228Mi + 3×8Mi + 32Mi.
		name: "three cores", vm: func(vm *kubevirtv1.VirtualMachine) { vm.Spec.Template.Spec.Domain.CPU.Cores = 3 },
		cpu: 300 + supportC, mem: 256*Mi + fixed + 3*perVCPU + vga + supportM,
	}, {
		// 2×2×2 = 8 vCPUs: 800m, 8×8Mi.
		name: "sockets cores threads", vm: func(vm *kubevirtv1.VirtualMachine) {
			cpu := vm.Spec.Template.Spec.Domain.CPU
			cpu.Sockets, cpu.Cores, cpu.Threads = 2, 2, 2
		},
		cpu: 800 + supportC, mem: 256*Mi + fixed + 8*perVCPU + vga + supportM,
	}, {
		// 16/10 renders as "1.6".
		name: "sixteen sockets", vm: func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Template.Spec.Domain.CPU.Cores, vm.Spec.Template.Spec.Domain.CPU.Sockets = 0, 16
		},
		cpu: 1600 + supportC, mem: 256*Mi + fixed + 16*perVCPU + vga + supportM,
	}, {
		// A requested 2Ti is the guest and the request; its page tables:
		// ceil(2Ti/1000) = 2199023256 kilo, ×1000/512 = 4294967296 (4Gi).
		name: "2Ti requested", vm: func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Template.Spec.Domain.Memory.Guest = nil
			vm.Spec.Template.Spec.Domain.Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Ti")}
		},
		cpu: 100 + supportC, mem: 2048*Gi + 4*Gi + oneVCPUOH + supportM,
	}, {
		// Only memory.guest: no page tables counted.
		name: "600Gi guest", vm: func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Template.Spec.Domain.Memory.Guest = ptr.To(resource.MustParse("600Gi"))
		},
		cpu: 100 + supportC, mem: 600*Gi + oneVCPUOH + supportM,
	}, {
		// The VM's requests win: 1500m, and 1G + overhead; page tables
		// ceil(1e9/1000)×1000/512 = 1953125; topology from the 3 CPU
		// limit: 3 sockets.
		name: "requests and limits", vm: func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Template.Spec.Domain.Memory.Guest = nil
			vm.Spec.Template.Spec.Domain.CPU.Cores = 0
			vm.Spec.Template.Spec.Domain.Resources = kubevirtv1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourceMemory: resource.MustParse("1G")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3"), corev1.ResourceMemory: resource.MustParse("2Gi")},
			}
		},
		cpu: 1500 + supportC, mem: 1_000_000_000 + 1953125 + fixed + 3*perVCPU + vga + supportM,
	}, {
		// Requests equal limits (2, 1Gi): guaranteed QoS, +100Mi, and the
		// support containers request their limits. Page tables of 1Gi:
		// ceil(1073741.824) = 1073742 kilo ×1000/512 = 2097152.
		name: "guaranteed", vm: func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Template.Spec.Domain.Memory.Guest = nil
			vm.Spec.Template.Spec.Domain.CPU.Cores = 0
			both := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi")}
			vm.Spec.Template.Spec.Domain.Resources = kubevirtv1.ResourceRequirements{Requests: both, Limits: both.DeepCopy()}
		},
		cpu: 2000 + guarantC, mem: Gi + 2*Mi + fixed + 2*perVCPU + vga + qosExtra + guarantM,
	}, {
		// Limits only: virt-api copies the CPU limit to the request, the
		// memory limit becomes the request in the renderer: guaranteed.
		// The VMI requests no memory, so no page tables.
		name: "limits only", vm: func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Template.Spec.Domain.Memory.Guest = nil
			vm.Spec.Template.Spec.Domain.CPU.Cores = 0
			vm.Spec.Template.Spec.Domain.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("768Mi")}
		},
		cpu: 2000 + guarantC, mem: 768*Mi + fixed + 2*perVCPU + vga + qosExtra + guarantM,
	}, {
		// memory.reservedOverhead.addedOverhead (KubeVirt v1.8) joins the
		// overhead.
		name: "reserved overhead", vm: func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Template.Spec.Domain.Memory.ReservedOverhead = &kubevirtv1.ReservedOverhead{AddedOverhead: ptr.To(resource.MustParse("300Mi"))}
		},
		cpu: 100 + supportC, mem: 256*Mi + oneVCPUOH + 300*Mi + supportM,
	}, {
		// overcommitGuestOverhead: the request alone.
		name: "overcommit guest overhead", vm: func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Template.Spec.Domain.Memory.Guest = nil
			vm.Spec.Template.Spec.Domain.Resources = kubevirtv1.ResourceRequirements{
				Requests:                corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
				OvercommitGuestOverhead: true,
			}
		},
		cpu: 100 + supportC, mem: Gi + supportM,
	}, {
		// Dedicated CPUs: one whole CPU per vCPU, +100Mi, guaranteed
		// support containers.
		name: "dedicated", vm: func(vm *kubevirtv1.VirtualMachine) {
			cpu := vm.Spec.Template.Spec.Domain.CPU
			cpu.Cores, cpu.DedicatedCPUPlacement = 2, true
		},
		cpu: 2000 + guarantC, mem: 256*Mi + fixed + 2*perVCPU + vga + qosExtra + guarantM,
	}, {
		// An isolated emulator thread: one CPU more.
		name: "dedicated isolated", vm: func(vm *kubevirtv1.VirtualMachine) {
			cpu := vm.Spec.Template.Spec.Domain.CPU
			cpu.Cores, cpu.DedicatedCPUPlacement, cpu.IsolateEmulatorThread = 4, true, true
		},
		cpu: 5000 + guarantC, mem: 256*Mi + fixed + 4*perVCPU + vga + qosExtra + guarantM,
	}, {
		// With the CR's even-parity annotation and AlignCPUs: 2 vCPUs + 2
		// IOThreads + 2 (the pool, again) is even, so two emulator CPUs.
		name: "dedicated isolated even parity", vm: func(vm *kubevirtv1.VirtualMachine) {
			cpu := vm.Spec.Template.Spec.Domain.CPU
			cpu.Cores, cpu.DedicatedCPUPlacement, cpu.IsolateEmulatorThread = 2, true, true
			ioThreads(vm, 2)
		},
		in: Inputs{KubeVirt: &kubevirtv1.KubeVirt{
			ObjectMeta: metaAnnotated(kubevirtv1.EmulatorThreadCompleteToEvenParity),
			Spec: kubevirtv1.KubeVirtSpec{Configuration: kubevirtv1.KubeVirtConfiguration{
				DeveloperConfiguration: &kubevirtv1.DeveloperConfiguration{FeatureGates: []string{"AlignCPUs"}},
			}},
		}},
		cpu: 6000 + guarantC, mem: 256*Mi + fixed + 2*perVCPU + vga + qosExtra + guarantM,
	}, {
		// Without the gate the annotation is not copied: one.
		name: "dedicated isolated parity without gate", vm: func(vm *kubevirtv1.VirtualMachine) {
			cpu := vm.Spec.Template.Spec.Domain.CPU
			cpu.Cores, cpu.DedicatedCPUPlacement, cpu.IsolateEmulatorThread = 2, true, true
			ioThreads(vm, 2)
		},
		in:  Inputs{KubeVirt: &kubevirtv1.KubeVirt{ObjectMeta: metaAnnotated(kubevirtv1.EmulatorThreadCompleteToEvenParity)}},
		cpu: 5000 + guarantC, mem: 256*Mi + fixed + 2*perVCPU + vga + qosExtra + guarantM,
	}, {
		// 2 vCPUs + 3 supplemental IOThreads = 5, over 10: 500m.
		name: "io threads", vm: func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Template.Spec.Domain.CPU.Cores = 2
			ioThreads(vm, 3)
		},
		cpu: 500 + supportC, mem: 256*Mi + fixed + 2*perVCPU + vga + supportM,
	}, {
		// Hugepages: the guest is hugepages-2Mi, not memory; memory is
		// the overhead alone.
		name: "hugepages", vm: func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Template.Spec.Domain.Memory = &kubevirtv1.Memory{Guest: ptr.To(resource.MustParse("1Gi")), Hugepages: &kubevirtv1.Hugepages{PageSize: "2Mi"}}
		},
		cpu: 100 + supportC, mem: oneVCPUOH + supportM,
	}, {
		// Two exec probes: 10Mi each and 100Mi; no VGA; no console log
		// sidecar, so only the disk container's 1m and 1M on top.
		name: "probes no console no vga", vm: func(vm *kubevirtv1.VirtualMachine) {
			d := &vm.Spec.Template.Spec.Domain.Devices
			d.AutoattachSerialConsole, d.AutoattachGraphicsDevice = ptr.To(false), ptr.To(false)
			exec := kubevirtv1.Handler{Exec: &corev1.ExecAction{Command: []string{"true"}}}
			vm.Spec.Template.Spec.ReadinessProbe = &kubevirtv1.Probe{Handler: exec}
			vm.Spec.Template.Spec.LivenessProbe = &kubevirtv1.Probe{Handler: exec}
		},
		cpu: 100 + 1, mem: 256*Mi + fixed + perVCPU + 120*Mi + M,
	}, {
		// Instancetype 4 vCPUs, 3Gi; the preference lays them out as
		// cores, turns VGA off and adds a TPM (53Mi).
		name: "instancetype and preference", vm: func(vm *kubevirtv1.VirtualMachine) {
			sized(vm, "VirtualMachineClusterInstancetype", "VirtualMachineClusterPreference")
		},
		in: Inputs{
			Instancetype: &instancetypev1beta1.VirtualMachineInstancetypeSpec{
				CPU:    instancetypev1beta1.CPUInstancetype{Guest: 4},
				Memory: instancetypev1beta1.MemoryInstancetype{Guest: resource.MustParse("3Gi")},
			},
			Preference: &instancetypev1beta1.VirtualMachinePreferenceSpec{
				CPU: &instancetypev1beta1.CPUPreferences{PreferredCPUTopology: ptr.To(instancetypev1beta1.Cores)},
				Devices: &instancetypev1beta1.DevicePreferences{
					PreferredAutoattachGraphicsDevice: ptr.To(false),
					PreferredTPM:                      &kubevirtv1.TPMDevice{},
				},
			},
		},
		cpu: 400 + supportC, mem: 3*Gi + fixed + 4*perVCPU + 53*Mi + supportM,
	}, {
		// overcommitPercent 15 of 8Gi: int64(float32(8Gi)×float32(0.85))
		// = 7301444608 requested, so page tables: ceil(7301444.608) =
		// 7301445 kilo ×1000/512 = 14260634. Spread over 6 vCPUs (3
		// sockets of 2 cores): 600m. No console log: + 1m and 1M.
		name: "instancetype overcommit spread", vm: func(vm *kubevirtv1.VirtualMachine) {
			sized(vm, "VirtualMachineInstancetype", "VirtualMachinePreference")
		},
		in: Inputs{
			Instancetype: &instancetypev1beta1.VirtualMachineInstancetypeSpec{
				CPU:    instancetypev1beta1.CPUInstancetype{Guest: 6},
				Memory: instancetypev1beta1.MemoryInstancetype{Guest: resource.MustParse("8Gi"), OvercommitPercent: 15},
			},
			Preference: &instancetypev1beta1.VirtualMachinePreferenceSpec{
				CPU:     &instancetypev1beta1.CPUPreferences{PreferredCPUTopology: ptr.To(instancetypev1beta1.Spread)},
				Devices: &instancetypev1beta1.DevicePreferences{PreferredAutoattachSerialConsole: ptr.To(false)},
			},
		},
		cpu: 600 + 1, mem: 7301444608 + 14260634 + fixed + 6*perVCPU + vga + M,
	}, {
		// The instancetype's dedicated CPUs and isolated emulator thread.
		name: "instancetype dedicated", vm: func(vm *kubevirtv1.VirtualMachine) {
			sized(vm, "VirtualMachineInstancetype", "")
		},
		in: Inputs{Instancetype: &instancetypev1beta1.VirtualMachineInstancetypeSpec{
			CPU:    instancetypev1beta1.CPUInstancetype{Guest: 3, DedicatedCPUPlacement: ptr.To(true), IsolateEmulatorThread: ptr.To(true)},
			Memory: instancetypev1beta1.MemoryInstancetype{Guest: resource.MustParse("2Gi")},
		}},
		cpu: 4000 + guarantC, mem: 2*Gi + fixed + 3*perVCPU + vga + qosExtra + guarantM,
	}, {
		// An instancetype given but not referenced is ignored.
		name: "unreferenced instancetype", vm: func(*kubevirtv1.VirtualMachine) {},
		in: Inputs{Instancetype: &instancetypev1beta1.VirtualMachineInstancetypeSpec{
			CPU: instancetypev1beta1.CPUInstancetype{Guest: 8}, Memory: instancetypev1beta1.MemoryInstancetype{Guest: resource.MustParse("8Gi")},
		}},
		cpu: 100 + supportC, mem: 256*Mi + oneVCPUOH + supportM,
	}, {
		// memoryOvercommit 150: the request is 3Gi×100/150 = 2Gi.
		name: "cluster memory overcommit", vm: func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Template.Spec.Domain.Memory.Guest = ptr.To(resource.MustParse("3Gi"))
		},
		in:  Inputs{KubeVirt: kubeVirtWith(func(c *kubevirtv1.KubeVirtConfiguration) { c.DeveloperConfiguration.MemoryOvercommit = 150 })},
		cpu: 100 + supportC, mem: 2*Gi + oneVCPUOH + supportM,
	}, {
		// cpuAllocationRatio 4: 3/4 = 750m.
		name: "cluster cpu allocation ratio", vm: func(vm *kubevirtv1.VirtualMachine) { vm.Spec.Template.Spec.Domain.CPU.Cores = 3 },
		in:  Inputs{KubeVirt: kubeVirtWith(func(c *kubevirtv1.KubeVirtConfiguration) { c.DeveloperConfiguration.CPUAllocationRatio = 4 })},
		cpu: 750 + supportC, mem: 256*Mi + fixed + 3*perVCPU + vga + supportM,
	}, {
		// cpuRequest 250m: virt-api makes it the VMI's CPU request.
		name: "cluster cpu request", vm: func(*kubevirtv1.VirtualMachine) {},
		in:  Inputs{KubeVirt: kubeVirtWith(func(c *kubevirtv1.KubeVirtConfiguration) { c.CPURequest = ptr.To(resource.MustParse("250m")) })},
		cpu: 250 + supportC, mem: 256*Mi + oneVCPUOH + supportM,
	}, {
		// additionalGuestMemoryOverheadRatio 2: the overhead doubled, in
		// kilo: 268Mi = 281018.368k, scaled up to 281019k; + 281019k.
		name: "overhead ratio", vm: func(*kubevirtv1.VirtualMachine) {},
		in: Inputs{KubeVirt: kubeVirtWith(func(c *kubevirtv1.KubeVirtConfiguration) {
			c.AdditionalGuestMemoryOverheadRatio = ptr.To("2")
		})},
		cpu: 100 + supportC, mem: 256*Mi + oneVCPUOH + 281019000 + supportM,
	}, {
		// The console log's configured request (20m, 50M) replaces 5m and
		// 35M.
		name: "support container resources", vm: func(*kubevirtv1.VirtualMachine) {},
		in: Inputs{KubeVirt: kubeVirtWith(func(c *kubevirtv1.KubeVirtConfiguration) {
			c.SupportContainerResources = []kubevirtv1.SupportContainerResources{{
				Type: kubevirtv1.GuestConsoleLog,
				Resources: kubevirtv1.ResourceRequirementsWithoutClaims{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("20m"), corev1.ResourceMemory: resource.MustParse("50M"),
				}},
			}}
		})},
		cpu: 100 + 1 + 20, mem: 256*Mi + oneVCPUOH + M + 50*M,
	}, {
		// The serial console log off cluster-wide.
		name: "serial console log disabled", vm: func(*kubevirtv1.VirtualMachine) {},
		in: Inputs{KubeVirt: kubeVirtWith(func(c *kubevirtv1.KubeVirtConfiguration) {
			c.VirtualMachineOptions = &kubevirtv1.VirtualMachineOptions{DisableSerialConsoleLog: &kubevirtv1.DisableSerialConsoleLog{}}
		})},
		cpu: 100 + 1, mem: 256*Mi + oneVCPUOH + M,
	}, {
		// A binding plugin: its 500Mi overhead, and a sidecar that
		// requests nothing when burstable.
		name: "network binding plugin", vm: func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Template.Spec.Domain.Devices.Interfaces = []kubevirtv1.Interface{{Name: "default", Binding: &kubevirtv1.PluginBinding{Name: "passt"}}}
		},
		in: Inputs{KubeVirt: kubeVirtWith(func(c *kubevirtv1.KubeVirtConfiguration) {
			c.NetworkConfiguration = &kubevirtv1.NetworkConfiguration{Binding: map[string]kubevirtv1.InterfaceBindingPlugin{"passt": {
				SidecarImage:            "passt:latest",
				ComputeResourceOverhead: &kubevirtv1.ResourceRequirementsWithoutClaims{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("500Mi")}},
			}}}
		})},
		cpu: 100 + supportC, mem: 256*Mi + oneVCPUOH + 500*Mi + supportM,
	}, {
		// The RuntimeClass's pod overhead is added as it is.
		name: "runtime class overhead", vm: func(*kubevirtv1.VirtualMachine) {},
		in: Inputs{PodOverhead: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("120Mi"),
		}},
		cpu: 100 + supportC + 250, mem: 256*Mi + oneVCPUOH + supportM + 120*Mi,
	}, {
		// arm64, from the CR's status: 128Mi of UEFI pflash.
		name: "arm64", vm: func(*kubevirtv1.VirtualMachine) {},
		in:  Inputs{KubeVirt: &kubevirtv1.KubeVirt{Status: kubevirtv1.KubeVirtStatus{DefaultArchitecture: "arm64"}}},
		cpu: 100 + supportC, mem: 256*Mi + oneVCPUOH + 128*Mi + supportM,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vm := baseVM()
			tt.vm(vm)
			got, err := Launcher(vm, onRelease(tt.in, "v1.8.0"))
			if err != nil {
				t.Fatal(err)
			}
			if c := got.Cpu().MilliValue(); c != tt.cpu {
				t.Errorf("cpu: got %dm (%s), want %dm", c, got.Cpu(), tt.cpu)
			}
			if m := got.Memory().Value(); m != tt.mem {
				t.Errorf("memory: got %d (%s), want %d; off by %d", m, got.Memory(), tt.mem, m-tt.mem)
			}
		})
	}
}

func TestLauncherRefuses(t *testing.T) {
	it := &instancetypev1beta1.VirtualMachineInstancetypeSpec{
		CPU: instancetypev1beta1.CPUInstancetype{Guest: 2}, Memory: instancetypev1beta1.MemoryInstancetype{Guest: resource.MustParse("1Gi")},
	}
	tests := []struct {
		name string
		vm   func(*kubevirtv1.VirtualMachine)
		in   Inputs
		want string
	}{
		{"no template", func(vm *kubevirtv1.VirtualMachine) { vm.Spec.Template = nil }, Inputs{}, "no spec.template"},
		{"instancetype not read", func(vm *kubevirtv1.VirtualMachine) { sized(vm, "", "") }, Inputs{},
			`VirtualMachineClusterInstancetype "size": read it into Inputs.Instancetype`},
		{"preference not read", func(vm *kubevirtv1.VirtualMachine) {
			sized(vm, "VirtualMachineInstancetype", "VirtualMachinePreference")
		}, Inputs{Instancetype: it},
			`preference VirtualMachinePreference "prefs": read it into Inputs.Preference`},
		{"conflict with the instancetype", func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Instancetype = &kubevirtv1.InstancetypeMatcher{Name: "size"}
		}, Inputs{Instancetype: it}, "spec.template.spec.domain.cpu.cores, spec.template.spec.domain.memory.guest, which its instancetype sets"},
		{"binding not configured", func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Template.Spec.Domain.Devices.Interfaces[0].Binding = &kubevirtv1.PluginBinding{Name: "passt"}
		}, Inputs{}, `network binding "passt", which the KubeVirt CR does not configure`},
		{"bad hook sidecar list", func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Template.ObjectMeta.Annotations = map[string]string{hookSidecarsAnnotation: "{"}
		}, Inputs{}, "annotation hooks.kubevirt.io/hookSidecars"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vm := baseVM()
			tt.vm(vm)
			got, err := Launcher(vm, tt.in)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, %v; want an error with %q", got, err, tt.want)
			}
		})
	}
	if _, err := Launcher(nil, Inputs{}); err == nil {
		t.Error("a nil VM: no error")
	}
}

// A hook sidecar, burstable, requests nothing; with dedicated CPUs it
// requests its 200m and 64M limits.
func TestLauncherHookSidecar(t *testing.T) {
	vm := baseVM()
	vm.Spec.Template.ObjectMeta.Annotations = map[string]string{hookSidecarsAnnotation: `[{"image": "hook:1"}]`}
	got, err := Launcher(vm, onRelease(Inputs{}, "v1.8.0"))
	if err != nil {
		t.Fatal(err)
	}
	if c, m := got.Cpu().MilliValue(), got.Memory().Value(); c != 100+supportC || m != 256*Mi+oneVCPUOH+supportM {
		t.Errorf("burstable: got %dm, %d", c, m)
	}
	vm.Spec.Template.Spec.Domain.CPU.DedicatedCPUPlacement = true
	got, err = Launcher(vm, onRelease(Inputs{}, "v1.8.0"))
	if err != nil {
		t.Fatal(err)
	}
	if c, m := got.Cpu().MilliValue(), got.Memory().Value(); c != 1000+guarantC+200 || m != 256*Mi+oneVCPUOH+qosExtra+guarantM+64*M {
		t.Errorf("dedicated: got %dm, %d", c, m)
	}
}

// onRelease returns in with a KubeVirt CR that reports KubeVirt version v
// (status.observedKubeVirtVersion), an empty one when in has none.
func onRelease(in Inputs, v string) Inputs {
	kv := &kubevirtv1.KubeVirt{}
	if in.KubeVirt != nil {
		kv = in.KubeVirt.DeepCopy()
	}
	kv.Status.ObservedKubeVirtVersion = v
	in.KubeVirt = kv
	return in
}

// baseVM is the README's testvm: 1 core, 256Mi, one container disk, the
// pod network.
func baseVM() *kubevirtv1.VirtualMachine {
	vm := &kubevirtv1.VirtualMachine{Spec: kubevirtv1.VirtualMachineSpec{Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
		Spec: kubevirtv1.VirtualMachineInstanceSpec{
			Domain: kubevirtv1.DomainSpec{
				CPU:    &kubevirtv1.CPU{Cores: 1},
				Memory: &kubevirtv1.Memory{Guest: ptr.To(resource.MustParse("256Mi"))},
				Devices: kubevirtv1.Devices{
					Disks:      []kubevirtv1.Disk{{Name: "containerdisk"}},
					Interfaces: []kubevirtv1.Interface{{Name: "default", InterfaceBindingMethod: kubevirtv1.InterfaceBindingMethod{Masquerade: &kubevirtv1.InterfaceMasquerade{}}}},
				},
			},
			Networks: []kubevirtv1.Network{{Name: "default", NetworkSource: kubevirtv1.NetworkSource{Pod: &kubevirtv1.PodNetwork{}}}},
			Volumes: []kubevirtv1.Volume{{Name: "containerdisk", VolumeSource: kubevirtv1.VolumeSource{
				ContainerDisk: &kubevirtv1.ContainerDiskSource{Image: "quay.io/kubevirt/cirros-container-disk-demo:v1.6.0"},
			}}},
		},
	}}}
	vm.Name, vm.Namespace = "testvm", "default"
	return vm
}

// sized has vm take its size from instancetype "size" (and preference
// "prefs" when prefKind is set).
func sized(vm *kubevirtv1.VirtualMachine, itKind, prefKind string) {
	vm.Spec.Template.Spec.Domain.CPU, vm.Spec.Template.Spec.Domain.Memory = nil, nil
	vm.Spec.Instancetype = &kubevirtv1.InstancetypeMatcher{Kind: itKind, Name: "size"}
	if prefKind != "" {
		vm.Spec.Preference = &kubevirtv1.PreferenceMatcher{Kind: prefKind, Name: "prefs"}
	}
}

func ioThreads(vm *kubevirtv1.VirtualMachine, n uint32) {
	vm.Spec.Template.Spec.Domain.IOThreadsPolicy = ptr.To(kubevirtv1.IOThreadsPolicySupplementalPool)
	vm.Spec.Template.Spec.Domain.IOThreads = &kubevirtv1.DiskIOThreads{SupplementalPoolThreadCount: ptr.To(n)}
}

func kubeVirtWith(change func(*kubevirtv1.KubeVirtConfiguration)) *kubevirtv1.KubeVirt {
	kv := &kubevirtv1.KubeVirt{}
	kv.Spec.Configuration.DeveloperConfiguration = &kubevirtv1.DeveloperConfiguration{}
	change(&kv.Spec.Configuration)
	return kv
}

func metaAnnotated(key string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Annotations: map[string]string{key: ""}}
}

// TestStale: a Pod's reservation matches a launcher Pod's count once
// rounded up to whole millicores and mebibytes, and only then; a Pod that
// holds nothing is never stale.
func TestStale(t *testing.T) {
	need := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("105500u"), corev1.ResourceMemory: resource.MustParse("585453824")}
	for _, tt := range []struct {
		held         string
		stale, short bool
	}{
		{held: "cpu=106m,memory=559Mi"},
		{held: "memory=559Mi,cpu=106m"},
		{held: "cpu=106m,memory=586153984"},
		{held: ""},
		{held: "cpu=106m,memory=815Mi", stale: true},
		{held: "cpu=105m,memory=559Mi", stale: true, short: true},
		{held: "cpu=106m,memory=558Mi", stale: true, short: true},
		{held: "cpu=200m,memory=558Mi", stale: true, short: true},
		{held: "cpu=106m,memory=560Mi", stale: true},
		{held: "memory=559Mi", stale: true, short: true},
		{held: "cpu=lots", stale: true, short: true},
	} {
		if got := Stale(tt.held, need); got != tt.stale {
			t.Errorf("Stale(%q, %v) = %v, want %v", tt.held, need, got, tt.stale)
		}
		if got := Short(tt.held, need); got != tt.short {
			t.Errorf("Short(%q, %v) = %v, want %v", tt.held, need, got, tt.short)
		}
	}
}

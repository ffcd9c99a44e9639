package drift

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	k8sv1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
)

var testPod = derive.Pod{Name: "web-0", Namespace: "vms", UID: "pod-uid-0", Node: "node-a"}

func loadPrototype(t *testing.T) *kubevirtv1.VirtualMachine {
	t.Helper()
	b, err := os.ReadFile("testdata/prototype.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var vm kubevirtv1.VirtualMachine
	if err := yaml.UnmarshalStrict(b, &vm); err != nil {
		t.Fatal(err)
	}
	return &vm
}

func mustDerive(t *testing.T, proto *kubevirtv1.VirtualMachine) *kubevirtv1.VirtualMachine {
	t.Helper()
	vm, err := derive.VM(proto, testPod, derive.Options{AllowSharedVolumes: true})
	if err != nil {
		t.Fatal(err)
	}
	return vm
}

// asStored is vm as the API server returns it after KubeVirt's webhook and
// controllers had their way: the fields and bookkeeping the cluster writes,
// which diff must not report.
func asStored(vm *kubevirtv1.VirtualMachine) *kubevirtv1.VirtualMachine {
	vm = vm.DeepCopy()
	vm.UID, vm.ResourceVersion, vm.Generation = "vm-uid", "777", 2
	vm.CreationTimestamp = metav1.Now()
	vm.Finalizers = []string{"kubevirt.io/virtualMachineControllerFinalize"}
	vm.Annotations[kubevirtv1.ControllerAPILatestVersionObservedAnnotation] = "v1"
	vm.Annotations[kubevirtv1.ControllerAPIStorageVersionObservedAnnotation] = "v1"
	vm.Annotations[k8sv1.LastAppliedConfigAnnotation] = "{}"
	// What KubeVirt writes into a VM's spec (derive.ClusterFields): v1.8's
	// webhook a PCI topology the prototype, made by v1.7, lacks, and
	// virt-controller the rest.
	vm.Spec.Template.ObjectMeta.Annotations[kubevirtv1.PciTopologyVersionAnnotation] = kubevirtv1.PciTopologyVersionV3
	vm.Spec.Template.ObjectMeta.Annotations[kubevirtv1.PciInterfaceSlotCountAnnotation] = "4"
	if vm.Spec.Instancetype != nil {
		vm.Spec.Instancetype.RevisionName = vm.Name + "-u1.small-1"
		vm.Spec.Preference.RevisionName = vm.Name + "-fedora-1"
	}
	vm.Status = kubevirtv1.VirtualMachineStatus{Ready: true, PrintableStatus: kubevirtv1.VirtualMachineStatusRunning}
	return vm
}

func TestCompareIgnoresClusterFields(t *testing.T) {
	for name, proto := range map[string]*kubevirtv1.VirtualMachine{"sized": loadPrototype(t), "of an instancetype": withInstancetype(loadPrototype(t))} {
		t.Run(name, func(t *testing.T) {
			live := asStored(mustDerive(t, proto))
			r, err := Compare(live, mustDerive(t, proto), "vms/fedora")
			if err != nil {
				t.Fatal(err)
			}
			if r.Drifted() {
				t.Errorf("a freshly derived VM as stored drifted:\n%s", r.Diff)
			}
		})
	}
}

// withInstancetype sizes proto by an instancetype and a preference, whose
// revisions KubeVirt names, as it names them on the prototype.
func withInstancetype(proto *kubevirtv1.VirtualMachine) *kubevirtv1.VirtualMachine {
	proto.Spec.Instancetype = &kubevirtv1.InstancetypeMatcher{Name: "u1.small", RevisionName: "fedora-u1.small-1"}
	proto.Spec.Preference = &kubevirtv1.PreferenceMatcher{Name: "fedora", RevisionName: "fedora-fedora-1"}
	proto.Spec.Template.Spec.Domain.CPU, proto.Spec.Template.Spec.Domain.Memory = nil, nil
	return proto
}

func TestCompareIgnoresPrototypeGenerationAlone(t *testing.T) {
	proto := loadPrototype(t)
	live := asStored(mustDerive(t, proto))
	proto.Generation++ // e.g. the prototype's runStrategy changed, which derived VMs override
	proto.Spec.RunStrategy = ptr(kubevirtv1.RunStrategyManual)
	r, err := Compare(live, mustDerive(t, proto), "vms/fedora")
	if err != nil {
		t.Fatal(err)
	}
	if r.Drifted() {
		t.Errorf("a generation bump that changes nothing derived drifted:\n%s", r.Diff)
	}
}

func ptr[T any](v T) *T { return &v }

func TestCompareReportsDrift(t *testing.T) {
	tests := []struct {
		name string
		// editLive changes the live VM, editProto the prototype.
		editLive  func(*kubevirtv1.VirtualMachine)
		editProto func(*kubevirtv1.VirtualMachine)
		// wantLines must all appear in the diff.
		wantLines []string
	}{{
		name:      "image changed on the VM",
		editLive:  func(vm *kubevirtv1.VirtualMachine) { vm.Spec.Template.Spec.Volumes[0].ContainerDisk.Image = "evil:1" },
		wantLines: []string{"-          image: evil:1", "+          image: quay.io/containerdisks/fedora:41"},
	}, {
		name:      "prototype gained CPU cores",
		editProto: func(p *kubevirtv1.VirtualMachine) { p.Spec.Template.Spec.Domain.CPU.Cores = 4 },
		wantLines: []string{"-          cores: 2", "+          cores: 4"},
	}, {
		name: "disk removed from the VM",
		editLive: func(vm *kubevirtv1.VirtualMachine) {
			d := &vm.Spec.Template.Spec.Domain.Devices
			d.Disks = d.Disks[:2]
		},
		wantLines: []string{"+            name: cloudinitdisk"},
	}, {
		name: "binding changed from masquerade to bridge",
		editLive: func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Template.Spec.Domain.Devices.Interfaces[0].InterfaceBindingMethod = kubevirtv1.InterfaceBindingMethod{Bridge: &kubevirtv1.InterfaceBridge{}}
		},
		wantLines: []string{"-          - bridge: {}", "+          - masquerade: {}"},
	}, {
		name: "a kernel booted from another image",
		editLive: func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Template.Spec.Domain.Firmware.KernelBoot = &kubevirtv1.KernelBoot{
				Container: &kubevirtv1.KernelBootContainer{Image: "attacker.example/evil-kernel", KernelPath: "/boot/vmlinuz"}}
		},
		wantLines: []string{"-          kernelBoot:", "-              image: attacker.example/evil-kernel"},
	}, {
		name: "a MAC address chosen",
		editLive: func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Template.Spec.Domain.Devices.Interfaces[0].MacAddress = "02:11:22:33:44:55"
		},
		wantLines: []string{`-          - macAddress: "02:11:22:33:44:55"`},
	}, {
		name: "a toleration added",
		editLive: func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Template.Spec.Tolerations = []k8sv1.Toleration{{Operator: k8sv1.TolerationOpExists}}
		},
		wantLines: []string{"-      tolerations:", "-      - operator: Exists"},
	}, {
		name:      "a template label added",
		editLive:  func(vm *kubevirtv1.VirtualMachine) { vm.Spec.Template.ObjectMeta.Labels["app"] = "payments" },
		wantLines: []string{"-        app: payments", "+        app: fedora"},
	}, {
		name: "a requirement added to an unnamed list's element",
		editLive: func(vm *kubevirtv1.VirtualMachine) {
			terms := vm.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
			terms[0].MatchFields[0].Values = append(terms[0].MatchFields[0].Values, "node-b")
		},
		wantLines: []string{"-                - node-b"},
	}, {
		name:      "runStrategy halted by hand",
		editLive:  func(vm *kubevirtv1.VirtualMachine) { vm.Spec.RunStrategy = ptr(kubevirtv1.RunStrategyHalted) },
		wantLines: []string{"-  runStrategy: Halted", "+  runStrategy: Always"},
	}, {
		name:      "label edited",
		editLive:  func(vm *kubevirtv1.VirtualMachine) { vm.Labels["tier"] = "frontend" },
		wantLines: []string{"-    tier: frontend", "+    tier: workers"},
	}, {
		name:      "annotation added by a user",
		editLive:  func(vm *kubevirtv1.VirtualMachine) { vm.Annotations["owner"] = "bob" },
		wantLines: []string{"-    owner: bob"},
	}, {
		name: "a KubeVirt annotation added by hand",
		editLive: func(vm *kubevirtv1.VirtualMachine) {
			vm.Annotations["kubevirt.io/immediate-data-volume-creation"] = "false"
		},
		wantLines: []string{`-    kubevirt.io/immediate-data-volume-creation: "false"`},
	}, {
		name:      "vmctl annotation tampered with",
		editLive:  func(vm *kubevirtv1.VirtualMachine) { vm.Annotations[contract.AnnotationNode] = "node-b" },
		wantLines: []string{"-    vmctl.kubevirt.io/node: node-b", "+    vmctl.kubevirt.io/node: node-a"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			proto := loadPrototype(t)
			live := asStored(mustDerive(t, proto))
			if tt.editLive != nil {
				tt.editLive(live)
			}
			if tt.editProto != nil {
				tt.editProto(proto)
			}
			r, err := Compare(live, mustDerive(t, proto), "vms/fedora, generation 3")
			if err != nil {
				t.Fatal(err)
			}
			if !r.Drifted() {
				t.Fatalf("no drift reported; live:\n%s", r.Live)
			}
			lines := strings.Split(r.Diff, "\n")
			for _, want := range tt.wantLines {
				found := false
				for _, l := range lines {
					if l == want {
						found = true
					}
				}
				if !found {
					t.Errorf("diff lacks line %q:\n%s", want, r.Diff)
				}
			}
		})
	}
}

func TestCompareDiffText(t *testing.T) {
	proto := loadPrototype(t)
	live := asStored(mustDerive(t, proto))
	live.Spec.Template.Spec.Domain.CPU.Cores = 8
	r, err := Compare(live, mustDerive(t, proto), "vms/fedora, generation 3")
	if err != nil {
		t.Fatal(err)
	}
	want := `--- vms/fedora-web-0 (live)
+++ vms/fedora-web-0 (derived from vms/fedora, generation 3)
@@ -77,7 +77,7 @@
       architecture: amd64
       domain:
         cpu:
-          cores: 8
+          cores: 2
         devices:
           disks:
           - disk:
`
	if diff := cmp.Diff(want, r.Diff); diff != "" {
		t.Errorf("diff text (-want +got):\n%s", diff)
	}
}

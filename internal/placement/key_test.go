package placement

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

func TestKey(t *testing.T) {
	proto := stored(nil)
	proto.Spec.Instancetype = &kubevirtv1.InstancetypeMatcher{Name: "u1.small"}
	key := Key(proto)
	if len(key) != 16 {
		t.Fatalf("Key = %q, want 16 hex digits", key)
	}
	for _, tt := range []struct {
		name    string
		edit    func(*kubevirtv1.VirtualMachine)
		changes bool
	}{
		{name: "memory is no placement", edit: func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Template.Spec.Domain.Memory = &kubevirtv1.Memory{Guest: resource.NewQuantity(1<<30, resource.BinarySI)}
		}},
		{name: "an empty nodeSelector is none", edit: func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Template.Spec.NodeSelector = map[string]string{}
		}},
		{name: "the instancetype's kind as KubeVirt defaults it", edit: func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Instancetype.Kind = "VirtualMachineClusterInstancetype"
		}},
		{name: "the instancetype's revision", edit: func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Instancetype.RevisionName = "u1.small-abc-1"
		}},
		{name: "a nodeSelector", changes: true, edit: func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Template.Spec.NodeSelector = map[string]string{"pool": "gpu"}
		}},
		{name: "a toleration", changes: true, edit: func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
		}},
		{name: "the priority class", changes: true, edit: func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Template.Spec.PriorityClassName = "vms"
		}},
		{name: "the CPU model", changes: true, edit: func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Template.Spec.Domain.CPU.Model = "EPYC"
		}},
		{name: "another instancetype", changes: true, edit: func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Instancetype.Name = "u1.large"
		}},
		{name: "a namespaced instancetype", changes: true, edit: func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Instancetype.Kind = "VirtualMachineInstancetype"
		}},
		{name: "a preference", changes: true, edit: func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Preference = &kubevirtv1.PreferenceMatcher{Name: "fedora"}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			vm := proto.DeepCopy()
			tt.edit(vm)
			if got := Key(vm); (got != key) != tt.changes {
				t.Errorf("Key %q, before %q: changed %v, want %v", got, key, got != key, tt.changes)
			}
		})
	}
	if got := Key(&kubevirtv1.VirtualMachine{}); got != "" {
		t.Errorf("Key of a VM without template = %q, want \"\"", got)
	}
}

// TestKeepInputs: what status keeps of a prototype keys and places as the
// prototype does.
func TestKeepInputs(t *testing.T) {
	vm := stored(func(s *kubevirtv1.VirtualMachineInstanceSpec) {
		s.NodeSelector = map[string]string{"pool": "gpu"}
		s.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
		s.Domain.CPU.Features = []kubevirtv1.CPUFeature{{Name: "mpx", Policy: "forbid"}}
		s.Volumes = []kubevirtv1.Volume{{Name: "disk"}}
	})
	vm.Spec.Preference = &kubevirtv1.PreferenceMatcher{Name: "fedora"}
	kept := KeepInputs(vm)
	if Key(kept) != Key(vm) {
		t.Errorf("Key of the kept inputs %q, of the VM %q", Key(kept), Key(vm))
	}
	if diff := cmp.Diff(Of(vm, Sources{}), Of(kept, Sources{})); diff != "" {
		t.Errorf("Of (-VM +kept):\n%s", diff)
	}
	if len(kept.Spec.Template.Spec.Volumes) != 0 {
		t.Errorf("kept volumes %v", kept.Spec.Template.Spec.Volumes)
	}
}

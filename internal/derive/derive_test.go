package derive

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.yaml from the current output")

func TestVMGolden(t *testing.T) {
	for _, tc := range []struct {
		prototype, golden string
		pod               Pod
	}{
		{prototype: "fedora-prototype.yaml", golden: "fedora-derived.golden.yaml", pod: testPod()},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			vm := mustVM(t, loadPrototype(t, tc.prototype), tc.pod, Options{})
			got, err := yaml.Marshal(vm)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", tc.golden)
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v; run go test ./internal/derive -run TestVMGolden -update to create it", err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("derived VM differs from %s (-want +got):\n%s", path, diff)
			}
		})
	}
}

func TestVMDoesNotModifyPrototype(t *testing.T) {
	proto := loadPrototype(t, "fedora-prototype.yaml")
	before := proto.DeepCopy()

	vm := mustVM(t, proto, testPod(), Options{})
	if diff := cmp.Diff(before, proto); diff != "" {
		t.Fatalf("VM() changed the prototype (-before +after):\n%s", diff)
	}

	// The result must share no memory with the prototype: changing it
	// everywhere must leave the prototype as it was.
	vm.Labels["app"] = "changed"
	vm.Annotations["description"] = "changed"
	vm.Spec.DataVolumeTemplates[0].Spec.Storage.AccessModes[0] = "ReadWriteMany"
	vm.Spec.Template.ObjectMeta.Labels["app"] = "changed"
	vm.Spec.Template.ObjectMeta.Annotations["vm.kubevirt.io/flavor"] = "changed"
	spec := &vm.Spec.Template.Spec
	spec.Domain.Devices.Interfaces[0].Name = "changed"
	spec.Domain.Firmware.Bootloader.EFI = nil
	spec.Volumes[0].ContainerDisk.Image = "changed"
	spec.Volumes[2].CloudInitNoCloud.UserData = "changed"
	spec.NodeSelector["kubevirt.io/schedulable"] = "false"
	na := spec.Affinity.NodeAffinity
	na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0].Values[0] = "arm64"
	na.PreferredDuringSchedulingIgnoredDuringExecution[0].Weight = 1
	spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].Weight = 1
	if diff := cmp.Diff(before, proto); diff != "" {
		t.Errorf("changing the derived VM changed the prototype (-before +after):\n%s", diff)
	}
}

func TestVMErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		proto   func(*kubevirtv1.VirtualMachine) *kubevirtv1.VirtualMachine
		pod     func(*Pod)
		wantErr string
	}{
		{name: "no prototype", proto: func(*kubevirtv1.VirtualMachine) *kubevirtv1.VirtualMachine { return nil }, wantErr: "no prototype"},
		{
			name:    "unnamed prototype",
			proto:   func(p *kubevirtv1.VirtualMachine) *kubevirtv1.VirtualMachine { p.Name = ""; return p },
			wantErr: "prototype VirtualMachine has no name",
		},
		{
			name:    "no template",
			proto:   func(p *kubevirtv1.VirtualMachine) *kubevirtv1.VirtualMachine { p.Spec.Template = nil; return p },
			wantErr: "prototype vms/fedora has no spec.template",
		},
		{name: "no pod name", pod: func(p *Pod) { p.Name = "" }, wantErr: "agent Pod's name unknown"},
		{name: "no pod namespace", pod: func(p *Pod) { p.Namespace = "" }, wantErr: "agent Pod's namespace unknown"},
		{name: "no pod uid", pod: func(p *Pod) { p.UID = "" }, wantErr: "agent Pod's uid unknown"},
		{name: "no node", pod: func(p *Pod) { p.Node = "" }, wantErr: "agent Pod's node unknown"},
		{name: "all missing", pod: func(p *Pod) { *p = Pod{} }, wantErr: "agent Pod's name, namespace, uid, node unknown"},
		{name: "a pod name longer than a label value", pod: func(p *Pod) { p.Name = strings.Repeat("p", 64) }, wantErr: "is 64 characters long, more than a label value's 63"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proto, pod := testPrototype(), testPod()
			if tc.proto != nil {
				proto = tc.proto(proto)
			}
			if tc.pod != nil {
				tc.pod(&pod)
			}
			vm, err := VM(proto, pod, Options{})
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("VM() error = %v, want one containing %q", err, tc.wantErr)
			}
			if vm != nil {
				t.Errorf("VM() returned a VM with an error")
			}
		})
	}
}

// TestVMEvictionStrategyIsExternal: whatever the prototype asks, a drain must
// leave a derived VM's fate to its agent Pod and the workload's
// PodDisruptionBudget; a pinned VM cannot live-migrate.
func TestVMEvictionStrategyIsExternal(t *testing.T) {
	for _, proto := range []*kubevirtv1.EvictionStrategy{nil,
		ptr.To(kubevirtv1.EvictionStrategyNone), ptr.To(kubevirtv1.EvictionStrategyLiveMigrate),
		ptr.To(kubevirtv1.EvictionStrategyLiveMigrateIfPossible), ptr.To(kubevirtv1.EvictionStrategyExternal)} {
		p := testPrototype()
		p.Spec.Template.Spec.EvictionStrategy = proto
		got := mustVM(t, p, testPod(), Options{}).Spec.Template.Spec.EvictionStrategy
		if got == nil || *got != kubevirtv1.EvictionStrategyExternal {
			t.Errorf("prototype evictionStrategy %v: derived %v, want External", ptrString(proto), ptrString(got))
		}
		if p.Spec.Template.Spec.EvictionStrategy != proto {
			t.Errorf("the prototype was changed")
		}
	}
}

func ptrString[T any](p *T) string {
	if p == nil {
		return "<nil>"
	}
	return fmt.Sprint(*p)
}

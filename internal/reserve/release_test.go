package reserve

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// With the ImageVolume feature gate on, a containerDisk is an image volume
// and its only container is an init container of 1m and 1M
// (CreateImageVolumeInitContainer), which runs after the console log
// sidecar: beside compute only the sidecar's 5m and 35M count.
const (
	imageVolumeC = 5
	imageVolumeM = 35 * M
)

// TestLauncherByRelease holds the rule to what differs between the
// releases: v1.9 turns the Beta gate ImageVolume on unless
// disabledFeatureGates lists it (v1.7 and v1.8 only when featureGates
// does); the core passt binding's 250Mi and memory.reservedOverhead count
// from v1.8.
func TestLauncherByRelease(t *testing.T) {
	type want struct{ cpu, mem int64 }
	base := 256*Mi + oneVCPUOH
	legacy := want{100 + supportC, base + supportM} // one containerDisk as a container
	image := want{100 + imageVolumeC, base + imageVolumeM}
	tests := []struct {
		name string
		vm   func(*kubevirtv1.VirtualMachine)
		dev  *kubevirtv1.DeveloperConfiguration
		// by release: v1.7.0, v1.8.0, v1.9.0
		want [3]want
	}{{
		name: "defaults",
		want: [3]want{legacy, legacy, image},
	}, {
		// Two disks: a container and an init container each, 1m and 1M,
		// without image volumes; one init container each with them.
		name: "two container disks", vm: twoDisks,
		want: [3]want{{100 + supportC + 1, base + supportM + M}, {100 + supportC + 1, base + supportM + M}, image},
	}, {
		name: "kernel boot", vm: kernelBoot,
		want: [3]want{{100 + supportC + 1, base + supportM + M}, {100 + supportC + 1, base + supportM + M}, image},
	}, {
		name: "image volume listed", dev: &kubevirtv1.DeveloperConfiguration{FeatureGates: []string{"ImageVolume"}},
		want: [3]want{image, image, image},
	}, {
		name: "image volume disabled", dev: &kubevirtv1.DeveloperConfiguration{DisabledFeatureGates: []string{"ImageVolume"}},
		want: [3]want{legacy, legacy, legacy},
	}, {
		// featuregate.IsEnabled: a listed gate wins over a disabled one.
		name: "image volume listed and disabled", dev: &kubevirtv1.DeveloperConfiguration{
			FeatureGates: []string{"ImageVolume"}, DisabledFeatureGates: []string{"ImageVolume"},
		},
		want: [3]want{image, image, image},
	}, {
		name: "two container disks, image volume disabled", vm: twoDisks,
		dev:  &kubevirtv1.DeveloperConfiguration{DisabledFeatureGates: []string{"ImageVolume"}},
		want: [3]want{{100 + supportC + 1, base + supportM + M}, {100 + supportC + 1, base + supportM + M}, {100 + supportC + 1, base + supportM + M}},
	}, {
		name: "passt", vm: passt,
		want: [3]want{legacy, {legacy.cpu, legacy.mem + 250*Mi}, {image.cpu, image.mem + 250*Mi}},
	}, {
		name: "reserved overhead", vm: func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Template.Spec.Domain.Memory.ReservedOverhead = &kubevirtv1.ReservedOverhead{AddedOverhead: ptr.To(resource.MustParse("300Mi"))}
		},
		want: [3]want{legacy, {legacy.cpu, legacy.mem + 300*Mi}, {image.cpu, image.mem + 300*Mi}},
	}}
	for _, tt := range tests {
		for i, v := range []string{"v1.7.0", "v1.8.0", "v1.9.0"} {
			t.Run(tt.name+"/"+v, func(t *testing.T) {
				vm := baseVM()
				if tt.vm != nil {
					tt.vm(vm)
				}
				kv := &kubevirtv1.KubeVirt{}
				kv.Spec.Configuration.DeveloperConfiguration = tt.dev
				in := onRelease(Inputs{KubeVirt: kv}, v)
				got, err := Launcher(vm, in)
				if err != nil {
					t.Fatal(err)
				}
				w := tt.want[i]
				if c, m := got.Cpu().MilliValue(), got.Memory().Value(); c != w.cpu || m != w.mem {
					t.Errorf("got %dm, %d; want %dm, %d (off by %dm, %d)", c, m, w.cpu, w.mem, c-w.cpu, m-w.mem)
				}
				if note := Note(in); note != "" {
					t.Errorf("Note() = %q for a release vmctl knows", note)
				}
			})
		}
	}
}

// TestReleaseOf: a release vmctl does not know follows the nearest one it
// knows, and Note says so.
func TestReleaseOf(t *testing.T) {
	for _, tt := range []struct {
		observed string
		noCR     bool
		want     release
		note     string
	}{
		{observed: "v1.7.0", want: v1_7},
		{observed: "v1.8.2", want: v1_8},
		{observed: "v1.9.0", want: v1_9},
		{observed: "v1.9.0-rc.1", want: v1_9},
		{observed: "1.8.0", want: v1_8},
		{observed: "v1.10.0", want: v1_9, note: "KubeVirt v1.10.0 is newer than the releases vmctl knows (v1.7 to v1.9): the reservation follows v1.9's rules"},
		{observed: "v2.0.0", want: v1_9, note: `status.observedKubeVirtVersion "v2.0.0", which vmctl cannot read as a release`},
		{observed: "v1.6.3", want: v1_7, note: "KubeVirt v1.6.3 is older than the releases vmctl knows (v1.7 to v1.9): the reservation follows v1.7's rules"},
		{observed: "", want: v1_9, note: `has status.observedKubeVirtVersion "", which vmctl cannot read as a release: the reservation follows KubeVirt v1.9's rules`},
		{noCR: true, want: v1_9, note: "no KubeVirt CR has a status.phase, so vmctl cannot tell KubeVirt's release: the reservation follows KubeVirt v1.9's defaults"},
	} {
		kv := &kubevirtv1.KubeVirt{Status: kubevirtv1.KubeVirtStatus{ObservedKubeVirtVersion: tt.observed}}
		if tt.noCR {
			kv = nil
		}
		got, note := releaseOf(kv)
		if got != tt.want || (tt.note == "") != (note == "") || !strings.Contains(note, tt.note) {
			t.Errorf("releaseOf(%q) = %v, %q; want %v and a note with %q", tt.observed, got, note, tt.want, tt.note)
		}
	}
}

// TestNoKubeVirtCR: with no KubeVirt CR the rule follows the newest
// release's defaults, image volumes among them.
func TestNoKubeVirtCR(t *testing.T) {
	got, err := Launcher(baseVM(), Inputs{})
	if err != nil {
		t.Fatal(err)
	}
	if c, m := got.Cpu().MilliValue(), got.Memory().Value(); c != 100+imageVolumeC || m != 256*Mi+oneVCPUOH+imageVolumeM {
		t.Errorf("got %dm, %d; want v1.9's defaults", c, m)
	}
}

// TestMemoryOverhead: what KubeVirt reports as the VMI's memory overhead
// is the compute container's overhead, network included, and the same
// from the VMI as from what KeepOverheadInputs keeps of it.
func TestMemoryOverhead(t *testing.T) {
	vm := baseVM()
	passt(vm)
	d := &vm.Spec.Template.Spec.Domain
	d.Memory.ReservedOverhead = &kubevirtv1.ReservedOverhead{AddedOverhead: ptr.To(resource.MustParse("100Mi"))}
	d.Devices.TPM = &kubevirtv1.TPMDevice{}
	in := onRelease(Inputs{}, "v1.9.0")
	vmi, err := instance(vm, in, newConfig(in.KubeVirt))
	if err != nil {
		t.Fatal(err)
	}
	got := MemoryOverheadOf(vmi, in.KubeVirt)
	if want := oneVCPUOH + 250*Mi + 100*Mi + 53*Mi; got.Value() != want {
		t.Errorf("MemoryOverheadOf() = %d, want %d", got.Value(), want)
	}
	kept := &kubevirtv1.VirtualMachineInstance{Spec: KeepOverheadInputs(&vmi.Spec)}
	if of := MemoryOverheadOf(kept, in.KubeVirt); of.Cmp(got) != 0 {
		t.Errorf("MemoryOverheadOf(the kept VMI) = %s, of the VMI %s", &of, &got)
	}
}

func twoDisks(vm *kubevirtv1.VirtualMachine) {
	s := &vm.Spec.Template.Spec
	s.Domain.Devices.Disks = append(s.Domain.Devices.Disks, kubevirtv1.Disk{Name: "second"})
	s.Volumes = append(s.Volumes, kubevirtv1.Volume{Name: "second", VolumeSource: kubevirtv1.VolumeSource{
		ContainerDisk: &kubevirtv1.ContainerDiskSource{Image: "quay.io/kubevirt/alpine-container-disk-demo:v1.6.0"},
	}})
}

func kernelBoot(vm *kubevirtv1.VirtualMachine) {
	vm.Spec.Template.Spec.Domain.Firmware = &kubevirtv1.Firmware{KernelBoot: &kubevirtv1.KernelBoot{
		Container: &kubevirtv1.KernelBootContainer{Image: "quay.io/kubevirt/alpine-ext-kernel-boot-demo:v1.6.0", KernelPath: "/boot/vmlinuz-virt"},
	}}
}

func passt(vm *kubevirtv1.VirtualMachine) {
	vm.Spec.Template.Spec.Domain.Devices.Interfaces = []kubevirtv1.Interface{{
		Name: "default", InterfaceBindingMethod: kubevirtv1.InterfaceBindingMethod{PasstBinding: &kubevirtv1.InterfacePasstBinding{}},
	}}
}

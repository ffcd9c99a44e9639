package guest

import (
	"os"
	"path/filepath"
	"testing"

	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// TestPrototypeBootsThisGuest: testdata/guest.yaml names this image, its
// files and its kernel arguments.
func TestPrototypeBootsThisGuest(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "guest.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var vm kubevirtv1.VirtualMachine
	if err := yaml.UnmarshalStrict(data, &vm); err != nil {
		t.Fatal(err)
	}
	kb := vm.Spec.Template.Spec.Domain.Firmware.KernelBoot
	if kb.KernelArgs != KernelArgs || kb.Container.Image != Name || kb.Container.KernelPath != KernelPath || kb.Container.InitrdPath != InitrdPath {
		t.Errorf("testdata/guest.yaml boots %q %s %s %s, want %q %s %s %s", kb.KernelArgs, kb.Container.Image, kb.Container.KernelPath,
			kb.Container.InitrdPath, KernelArgs, Name, KernelPath, InitrdPath)
	}
}

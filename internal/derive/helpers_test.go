package derive

import (
	"os"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// testPod is the agent Pod most tests derive for.
func testPod() Pod {
	return Pod{Name: "web-7c9d", Namespace: "vms", UID: "pod-uid-1", Node: "node-a"}
}

// testPrototype returns a minimal valid prototype; tests change what they
// exercise.
func testPrototype() *kubevirtv1.VirtualMachine {
	return &kubevirtv1.VirtualMachine{
		TypeMeta:   metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine"},
		ObjectMeta: metav1.ObjectMeta{Name: "fedora", Namespace: "vms", Generation: 1},
		Spec: kubevirtv1.VirtualMachineSpec{
			Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
				Spec: kubevirtv1.VirtualMachineInstanceSpec{
					Volumes: []kubevirtv1.Volume{{
						Name: "containerdisk",
						VolumeSource: kubevirtv1.VolumeSource{
							ContainerDisk: &kubevirtv1.ContainerDiskSource{Image: "quay.io/containerdisks/fedora:41"},
						},
					}},
				},
			},
		},
	}
}

// loadPrototype reads a VirtualMachine from testdata.
func loadPrototype(t *testing.T, name string) *kubevirtv1.VirtualMachine {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var vm kubevirtv1.VirtualMachine
	if err := yaml.UnmarshalStrict(data, &vm); err != nil {
		t.Fatalf("parse %s: %v", name, err)
	}
	return &vm
}

// mustVM derives a VM and fails the test on error.
func mustVM(t *testing.T, proto *kubevirtv1.VirtualMachine, pod Pod, opts Options) *kubevirtv1.VirtualMachine {
	t.Helper()
	vm, err := VM(proto, pod, opts)
	if err != nil {
		t.Fatalf("VM() error: %v", err)
	}
	return vm
}

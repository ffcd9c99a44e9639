package agent

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
)

// Names shared by the tests.
const (
	testNamespace = "default"
	testProto     = "testvm"
	testPod       = "vmctl-abc"
	testNode      = "node-1"
	testPodUID    = types.UID("pod-uid-1")
	testVM        = "testvm-vmctl-abc"
	// testPodVMs selects the VMs labelled for testPod: what the agent
	// first looks for a VM made for its Pod by.
	testPodVMs = contract.LabelPod + "=" + testPod
)

var testIdentity = Identity{PodName: testPod, PodNamespace: testNamespace, Node: testNode, PodUID: testPodUID}

// prototype returns a prototype VM with a containerDisk, which any number of
// derived VMs may share.
func prototype(name string) *kubevirtv1.VirtualMachine {
	return &kubevirtv1.VirtualMachine{
		TypeMeta:   metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace, UID: "proto-uid", Generation: 1, ResourceVersion: "10"},
		Spec: kubevirtv1.VirtualMachineSpec{
			Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
				Spec: kubevirtv1.VirtualMachineInstanceSpec{
					// A guest that stops at once fits any test's delete timeout.
					TerminationGracePeriodSeconds: ptr.To[int64](0),
					Volumes: []kubevirtv1.Volume{{
						Name:         "root",
						VolumeSource: kubevirtv1.VolumeSource{ContainerDisk: &kubevirtv1.ContainerDiskSource{Image: "quay.io/containerdisks/fedora"}},
					}},
				},
			},
		},
	}
}

// withSharedPVC adds a writable PVC volume, which derived VMs must not share.
func withSharedPVC(vm *kubevirtv1.VirtualMachine) *kubevirtv1.VirtualMachine {
	vm.Spec.Template.Spec.Volumes = append(vm.Spec.Template.Spec.Volumes, kubevirtv1.Volume{
		Name: "data",
		VolumeSource: kubevirtv1.VolumeSource{PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{
			PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"},
		}},
	})
	return vm
}

// derived returns the VM derive makes for pod from the test prototype, as
// the API server would hold it, with uid.
func derived(t *testing.T, pod Identity, uid types.UID) *kubevirtv1.VirtualMachine {
	t.Helper()
	vm, err := derive.VM(prototype(testProto), derive.Pod{Name: pod.PodName, Namespace: pod.PodNamespace, UID: pod.PodUID, Node: pod.Node}, derive.Options{})
	if err != nil {
		t.Fatalf("derive.VM() = %v", err)
	}
	vm.UID = uid
	return vm
}

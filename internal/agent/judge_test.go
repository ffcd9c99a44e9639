package agent

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
)

func TestJudge(t *testing.T) {
	earlierPod := testIdentity
	earlierPod.PodUID = "earlier-pod-uid"
	otherPod := testIdentity
	otherPod.PodName = "vmctl-xyz"

	tests := []struct {
		name     string
		existing func() *kubevirtv1.VirtualMachine
		want     verdict
		why      string
	}{{
		name:     "made for this Pod",
		existing: func() *kubevirtv1.VirtualMachine { return derived(t, testIdentity, "vm-1") },
		want:     adopt,
		why:      "Adopted VM default/testvm-vmctl-abc",
	}, {
		name:     "made for an earlier Pod of the same name",
		existing: func() *kubevirtv1.VirtualMachine { return derived(t, earlierPod, "vm-1") },
		want:     replace,
		why:      "made for an earlier Pod default/vmctl-abc (uid earlier-pod-uid)",
	}, {
		name: "not made by vmctl",
		existing: func() *kubevirtv1.VirtualMachine {
			return &kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: testVM, Namespace: testNamespace}}
		},
		want: refuse,
		why:  "VM default/testvm-vmctl-abc exists and was not made by vmctl",
	}, {
		name: "vmctl labels copied without the Pod UID",
		existing: func() *kubevirtv1.VirtualMachine {
			vm := derived(t, testIdentity, "vm-1")
			delete(vm.Annotations, contract.AnnotationPodUID)
			return vm
		},
		want: refuse,
		why:  "was not made by vmctl",
	}, {
		name: "made for another Pod",
		existing: func() *kubevirtv1.VirtualMachine {
			vm := derived(t, otherPod, "vm-1")
			vm.Name = testVM
			return vm
		},
		want: refuse,
		why:  "VM default/testvm-vmctl-abc belongs to Pod default/vmctl-xyz",
	}, {
		name: "made for a Pod of the same name in another namespace",
		existing: func() *kubevirtv1.VirtualMachine {
			vm := derived(t, testIdentity, "vm-1")
			vm.Annotations[contract.AnnotationPodNamespace] = "elsewhere"
			return vm
		},
		want: refuse,
		why:  "belongs to Pod elsewhere/vmctl-abc",
	}, {
		name: "derived from another prototype",
		existing: func() *kubevirtv1.VirtualMachine {
			vm := derived(t, testIdentity, "vm-1")
			vm.Annotations[contract.AnnotationPrototypeName] = "testvm-vmctl"
			return vm
		},
		want: refuse,
		why:  "was derived from prototype default/testvm-vmctl, not default/testvm",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, why := judge(tt.existing(), testIdentity, testNamespace, testProto)
			if got != tt.want {
				t.Errorf("judge() = %v, want %v (%s)", got, tt.want, why)
			}
			if !strings.Contains(why, tt.why) {
				t.Errorf("judge() reason = %q, want it to contain %q", why, tt.why)
			}
		})
	}
}

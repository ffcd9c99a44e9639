package status

import (
	"strings"
	"testing"
	"time"

	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
)

func TestIsDerived(t *testing.T) {
	long := strings.Repeat("p", 40)
	tests := []struct {
		name string
		mod  func(*kubevirtv1.VirtualMachine)
		want bool
	}{
		{name: "as an agent makes it", want: true},
		{name: "long names, cut with a hash", mod: func(vm *kubevirtv1.VirtualMachine) {
			vm.Annotations[derive.AnnotationPrototypeName] = long
			vm.Annotations[derive.AnnotationPodName] = long
			vm.Name = derive.Name(long, long)
		}, want: true},
		{name: "copied and renamed", mod: func(vm *kubevirtv1.VirtualMachine) { vm.Name = "golden" }},
		{name: "no prototype recorded", mod: func(vm *kubevirtv1.VirtualMachine) { delete(vm.Annotations, derive.AnnotationPrototypeName) }},
		{name: "no pod namespace recorded", mod: func(vm *kubevirtv1.VirtualMachine) { delete(vm.Annotations, derive.AnnotationPodNamespace) }},
		{name: "no vmctl labels", mod: func(vm *kubevirtv1.VirtualMachine) { vm.Labels = nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vm := derivedVM("ns", "web", 1, "ns", "a", "uid-a", "n1", time.Hour)
			if tt.mod != nil {
				tt.mod(&vm)
			}
			if got := IsDerived(&vm); got != tt.want {
				t.Errorf("IsDerived = %v, want %v", got, tt.want)
			}
		})
	}
}

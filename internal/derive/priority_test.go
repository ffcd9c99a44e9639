package derive

import (
	"testing"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
)

// TestVMLauncherPriorityClass: with a launcher priority class the VMI
// takes it in place of the prototype's, and the VM records it for diff;
// without, the prototype's stays and nothing is recorded.
func TestVMLauncherPriorityClass(t *testing.T) {
	for _, tc := range []struct {
		name, proto, option, want string
	}{
		{name: "none", proto: "", option: "", want: ""},
		{name: "the prototype's", proto: "vms", option: "", want: "vms"},
		{name: "the launcher class in place of none", proto: "", option: "vmctl-launcher-0", want: "vmctl-launcher-0"},
		{name: "the launcher class in place of the prototype's", proto: "vms", option: "vmctl-launcher-1000", want: "vmctl-launcher-1000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proto := testPrototype()
			proto.Spec.Template.Spec.PriorityClassName = tc.proto
			vm := mustVM(t, proto, testPod(), Options{LauncherPriorityClass: tc.option})
			if got := vm.Spec.Template.Spec.PriorityClassName; got != tc.want {
				t.Errorf("priorityClassName = %q, want %q", got, tc.want)
			}
			if got := vm.Annotations[contract.AnnotationLauncherPriorityClass]; got != tc.option {
				t.Errorf("annotation %s = %q, want %q", contract.AnnotationLauncherPriorityClass, got, tc.option)
			}
			if proto.Spec.Template.Spec.PriorityClassName != tc.proto {
				t.Errorf("the prototype changed")
			}
		})
	}
}

package contract

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestVMRevisionStore(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{args: []string{"testvm", "--state-dir=/run/vmctl", "--vm-revisions=web-vm-revisions"}, want: "web-vm-revisions"},
		{args: []string{"testvm", "--vm-revisions", "web-vm-revisions", "-n", "vms"}, want: "web-vm-revisions"},
		{args: []string{"testvm", "--proto-namespace=protos"}, want: ""},
		{args: []string{"testvm", "--vm-revisions"}, want: ""},
		{args: nil, want: ""},
	} {
		spec := &corev1.PodSpec{Containers: []corev1.Container{{Name: ContainerName, Args: tt.args}}}
		if got := VMRevisionStore(spec); got != tt.want {
			t.Errorf("VMRevisionStore(%q) = %q, want %q", tt.args, got, tt.want)
		}
	}
	if got := VMRevisionStore(&corev1.PodSpec{}); got != "" {
		t.Errorf("VMRevisionStore of a Pod without containers = %q, want none", got)
	}
}

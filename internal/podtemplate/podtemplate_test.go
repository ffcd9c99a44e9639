package podtemplate

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
)

// TestRepinKeepsTheOrder: Repin writes the store argument and the revision
// variable in the place of those the template holds, once, so that a
// template scaffold wrote and one rollout restart rewrote are equal; it
// adds them last where the template holds none.
func TestRepinKeepsTheOrder(t *testing.T) {
	store := contract.VMRevisionStoreArg("web-vm-revisions")
	for _, tc := range []struct {
		name     string
		args     []string
		wantArgs []string
	}{
		{"the store named already", []string{"testvm", store, "--x"}, []string{"testvm", store, "--x"}},
		{"another store", []string{"testvm", contract.VMRevisionStoreArg("old"), "--x"}, []string{"testvm", store, "--x"}},
		{"named twice", []string{contract.VMRevisionStoreArg("a"), "testvm", contract.VMRevisionStoreArg("b")}, []string{store, "testvm"}},
		{"none", []string{"testvm", "--x"}, []string{"testvm", "--x", store}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmpl := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: contract.ContainerName, Args: tc.args,
				Env: []corev1.EnvVar{{Name: "A"}, {Name: contract.EnvVMRevision, Value: "stale"}, {Name: "B"}}}}}}
			Repin(tmpl, "0c9ba969df", "web-vm-revisions")
			c := tmpl.Spec.Containers[0]
			if diff := cmp.Diff(tc.wantArgs, c.Args); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
			var names []string
			for _, e := range c.Env {
				names = append(names, e.Name)
			}
			if diff := cmp.Diff([]string{"A", contract.EnvVMRevision, "B"}, names); diff != "" || c.Env[1].ValueFrom == nil {
				t.Errorf("env (-want +got):\n%s; the revision's %+v", diff, c.Env[1])
			}
			if got := tmpl.Annotations[contract.AnnotationVMRevision]; got != "0c9ba969df" {
				t.Errorf("annotation %q, want the hash", got)
			}
		})
	}
}

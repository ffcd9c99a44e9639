package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestShellLine(t *testing.T) {
	for _, tc := range []struct {
		argv []string
		want string
	}{
		{[]string{"kubectl", "scale", "deployment/web", "--replicas", "4"}, "kubectl scale deployment/web --replicas 4"},
		{[]string{"kubectl", "annotate", "pods", "-l", "kubevirt.io=virt-launcher", "kwok.x-k8s.io/usage-cpu=900m", "--overwrite"},
			"kubectl annotate pods -l kubevirt.io=virt-launcher kwok.x-k8s.io/usage-cpu=900m --overwrite"},
		{[]string{"kubectl", "patch", "hpa", "web", "--type=merge", "-p", `{"spec":{"behavior":{}}}`},
			`kubectl patch hpa web --type=merge -p '{"spec":{"behavior":{}}}'`},
		{[]string{"echo", "it's", ""}, `echo 'it'\''s' ''`},
	} {
		if diff := cmp.Diff(tc.want, shellLine(tc.argv)); diff != "" {
			t.Errorf("shellLine(%q) (-want +got):\n%s", tc.argv, diff)
		}
	}
}

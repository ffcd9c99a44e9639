package scaffold

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
)

// TestReservation checks what a reservation adds to the manifests: the
// agent container asks for its own and the VM's room, limits likewise; the
// template records the reservation; the agent is told its own share and its
// requests now; its Role may resize Pods, and the pod policy comes with
// the other policies. Without one, none of it. Either way its agents watch
// their VMIs, never delete them, and may evict their own Pod, under the
// pod policy, when KubeVirt evacuates their VM.
func TestReservation(t *testing.T) {
	reservation := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1100m"), corev1.ResourceMemory: resource.MustParse("12Gi")}
	q := resource.MustParse
	tests := []struct {
		name        string
		reservation corev1.ResourceList
		policy      bool
		want        corev1.ResourceRequirements
		annotation  string
		args        []string
		env         []string
		podRule     bool
		podPolicy   bool
	}{
		{
			name: "none", policy: true,
			want: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: q("10m"), corev1.ResourceMemory: q("32Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: q("100m"), corev1.ResourceMemory: q("64Mi")},
			},
			args:      []string{"testvm", "--state-dir=/run/vmctl", "--vm-revisions=vmctl-testvm-vm-revisions", "--evict-on-evacuation"},
			podPolicy: true,
		},
		{
			name: "reserved", reservation: reservation, policy: true,
			want: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: q("1110m"), corev1.ResourceMemory: q("12320Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: q("1200m"), corev1.ResourceMemory: q("12352Mi")},
			},
			annotation: "cpu=1100m,memory=12Gi",
			args:       []string{"testvm", "--state-dir=/run/vmctl", "--vm-revisions=vmctl-testvm-vm-revisions", "--evict-on-evacuation", "--own-requests=cpu=10m,memory=32Mi", "--own-limits=cpu=100m,memory=64Mi"},
			env:        []string{"VMCTL_REQUESTS_CPU", "VMCTL_REQUESTS_MEMORY"},
			podRule:    true, podPolicy: true,
		},
		{
			name: "reserved without admission policy", reservation: reservation,
			want: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: q("1110m"), corev1.ResourceMemory: q("12320Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: q("1200m"), corev1.ResourceMemory: q("12352Mi")},
			},
			annotation: "cpu=1100m,memory=12Gi",
			args:       []string{"testvm", "--state-dir=/run/vmctl", "--vm-revisions=vmctl-testvm-vm-revisions", "--evict-on-evacuation", "--own-requests=cpu=10m,memory=32Mi", "--own-limits=cpu=100m,memory=64Mi"},
			env:        []string{"VMCTL_REQUESTS_CPU", "VMCTL_REQUESTS_MEMORY"},
			podRule:    true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := validParams(KindDeployment)
			p.Reservation, p.AdmissionPolicy = tt.reservation, tt.policy
			objs := mustBuild(t, p)
			tmpl := find[*appsv1.Deployment](t, objs, "vms", "vmctl-testvm").Spec.Template
			c := tmpl.Spec.Containers[0]
			if diff := cmp.Diff(tt.want, c.Resources, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
				t.Errorf("resources (-want +got):\n%s", diff)
			}
			if got := tmpl.Annotations[contract.AnnotationReservation]; got != tt.annotation {
				t.Errorf("annotation %s = %q, want %q", contract.AnnotationReservation, got, tt.annotation)
			}
			if diff := cmp.Diff(tt.args, c.Args); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
			var env []string
			for _, e := range c.Env {
				if e.ValueFrom != nil && e.ValueFrom.ResourceFieldRef != nil {
					env = append(env, e.Name)
				}
			}
			if diff := cmp.Diff(tt.env, env); diff != "" {
				t.Errorf("resource env (-want +got):\n%s", diff)
			}
			role := find[*rbacv1.Role](t, objs, "vms", "vmctl-testvm")
			podRule, evicts := false, false
			for _, r := range role.Rules {
				if cmp.Equal(r.Resources, []string{"pods/resize"}) && cmp.Equal(r.Verbs, []string{"patch"}) {
					podRule = true
				}
				if slices.Contains(r.Resources, "virtualmachineinstances") && !cmp.Equal(r.Verbs, []string{"get", "list", "watch"}) {
					t.Errorf("Role may %v virtualmachineinstances; a Deployment's agent only watches them", r.Verbs)
				}
				if slices.Contains(r.Resources, "pods/eviction") {
					evicts = true
				}
			}
			if !evicts {
				t.Error("Role may not evict Pods: the agent cannot leave with its evacuated VM")
			}
			if podRule != tt.podRule {
				t.Errorf("Role may patch pods/resize: %v, want %v", podRule, tt.podRule)
			}
			if got := has(objs, p.podPolicyName()); got != tt.podPolicy {
				t.Errorf("pod policy present: %v, want %v", got, tt.podPolicy)
			}
		})
	}
}

// has reports whether objs hold an object named name.
func has(objs []runtime.Object, name string) bool {
	for _, obj := range objs {
		if m, err := meta.Accessor(obj); err == nil && m.GetName() == name {
			return true
		}
	}
	return false
}

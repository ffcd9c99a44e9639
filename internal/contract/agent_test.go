package contract

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestParseAgent(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		want   Agent
		wantOK bool
	}{
		{name: "prototype only", args: []string{"web"}, want: Agent{Prototype: "web", Namespace: "pods", PrototypeNamespace: "pods"}, wantOK: true},
		{name: "scaffold flags", args: []string{"web", "--proto-namespace=protos", "--allow-shared-volumes", "--delete-timeout=60s"},
			want: Agent{Prototype: "web", Namespace: "pods", PrototypeNamespace: "protos"}, wantOK: true},
		{name: "separate values", args: []string{"web", "-n", "vms", "--proto-namespace", "protos"},
			want: Agent{Prototype: "web", Namespace: "vms", PrototypeNamespace: "protos"}, wantOK: true},
		{name: "prototype namespace defaults to the VM namespace", args: []string{"web", "--namespace=vms"},
			want: Agent{Prototype: "web", Namespace: "vms", PrototypeNamespace: "vms"}, wantOK: true},
		{name: "dangling flag", args: []string{"web", "-n"}, want: Agent{Prototype: "web", Namespace: "pods", PrototypeNamespace: "pods"}, wantOK: true},
		{name: "a StatefulSet's claims", args: []string{"db", "--subdomain=vmctl-db", "--replica-claims=data,logs"},
			want: Agent{Prototype: "db", Namespace: "pods", PrototypeNamespace: "pods", ReplicaClaims: []string{"data", "logs"}}, wantOK: true},
		{name: "no args", args: nil, want: Agent{Namespace: "pods"}},
		{name: "flag first", args: []string{"--namespace=x", "web"}, want: Agent{Namespace: "pods"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: "pods", Name: "p"},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Args: tt.args}}},
			}
			got, ok := ParseAgent(pod)
			if ok != tt.wantOK {
				t.Errorf("ok = %v, want %v", ok, tt.wantOK)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseAgent (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDeleteTimeout(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want time.Duration
	}{
		{name: "default", args: []string{"web", "--proto-namespace=protos"}, want: DefaultDeleteTimeout},
		{name: "scaffold's form", args: []string{"web", "--delete-timeout=50s"}, want: 50 * time.Second},
		{name: "the last one counts", args: []string{"web", "--delete-timeout=50s", "--delete-timeout=2m"}, want: 2 * time.Minute},
		{name: "unparsable", args: []string{"web", "--delete-timeout=soon"}, want: DefaultDeleteTimeout},
		{name: "another flag's value", args: []string{"web", "--move-after=5s"}, want: DefaultDeleteTimeout},
		{name: "no args", want: DefaultDeleteTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Args: tt.args}}}}
			if got := DeleteTimeout(pod); got != tt.want {
				t.Errorf("DeleteTimeout(%q) = %v, want %v", tt.args, got, tt.want)
			}
		})
	}
	if got := DeleteTimeout(&corev1.Pod{}); got != DefaultDeleteTimeout {
		t.Errorf("DeleteTimeout of a Pod without containers = %v, want %v", got, DefaultDeleteTimeout)
	}
}

package scaffold

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
)

// TestParseAgentReadsAgentArgs holds contract.ParseAgent to AgentArgs: the arguments
// Build writes into each kind's Pod template read back as the prototype and
// namespaces scaffold was given, and as its delete timeout
// (contract.DeleteTimeout), whatever flags AgentArgs adds.
func TestParseAgentReadsAgentArgs(t *testing.T) {
	for _, tt := range []struct {
		name   string
		change func(*Params)
	}{
		{name: "defaults", change: func(*Params) {}},
		{name: "the prototype named in its own namespace", change: func(p *Params) { p.ProtoNamespace = "vms" }},
		{name: "the prototype in another namespace", change: func(p *Params) { p.ProtoNamespace = "protos" }},
		{name: "every deployment flag", change: func(p *Params) {
			p.ProtoNamespace, p.AllowSharedVolumes, p.GracePeriodSeconds = "protos", true, 300
		}},
		{name: "a statefulset's subdomain", change: func(p *Params) { p.Kind, p.Name, p.ProtoNamespace = KindStatefulSet, "web", "protos" }},
		{name: "a daemonset's stop on evacuation", change: func(p *Params) { p.Kind, p.GracePeriodSeconds = KindDaemonSet, 60 }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := validParams(KindDeployment)
			tt.change(&p)
			var pod *corev1.Pod
			for _, obj := range mustBuild(t, p) {
				var tmpl *corev1.PodTemplateSpec
				switch w := obj.(type) {
				case *appsv1.Deployment:
					tmpl = &w.Spec.Template
				case *appsv1.StatefulSet:
					tmpl = &w.Spec.Template
				case *appsv1.DaemonSet:
					tmpl = &w.Spec.Template
				default:
					continue
				}
				m, _ := meta.Accessor(obj)
				pod = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: m.GetNamespace()}, Spec: tmpl.Spec}
			}
			if pod == nil {
				t.Fatal("Build made no workload")
			}
			if diff := cmp.Diff(p.AgentArgs(), pod.Spec.Containers[0].Args); diff != "" {
				t.Fatalf("the Pod's args are not AgentArgs (-want +got):\n%s", diff)
			}
			got, ok := contract.ParseAgent(pod)
			want := contract.Agent{Prototype: "testvm", Namespace: "vms", PrototypeNamespace: "vms"}
			if p.ProtoNamespace != "" {
				want.PrototypeNamespace = p.ProtoNamespace
			}
			if diff := cmp.Diff(want, got); !ok || diff != "" {
				t.Errorf("ParseAgent(%q) = %v (-want +got):\n%s", pod.Spec.Containers[0].Args, ok, diff)
			}
			// status judges the guest's grace period by it.
			if got, want := contract.DeleteTimeout(pod), p.DeleteTimeout(); got != want {
				t.Errorf("DeleteTimeout(%q) = %v, want the %v scaffold gives the agent", pod.Spec.Containers[0].Args, got, want)
			}
		})
	}
}

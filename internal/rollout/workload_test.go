package rollout

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
)

func TestMatch(t *testing.T) {
	long := strings.Repeat("p", 80)
	for _, tt := range []struct {
		name      string
		tmpl      corev1.PodTemplateSpec
		prototype string
		want      contract.Agent
		match     bool
	}{
		{name: "scaffold's args", tmpl: template(nil, "testvm", "--delete-timeout=50s"), prototype: "testvm",
			want: contract.Agent{Prototype: "testvm", PrototypeNamespace: ns, Namespace: ns}, match: true},
		{name: "another prototype's args", tmpl: template(nil, "other"), prototype: "testvm"},
		{name: "the args win over a label that disagrees",
			tmpl: template(map[string]string{contract.LabelAgentPrototype: "testvm"}, "other"), prototype: "testvm"},
		{name: "a prototype elsewhere", tmpl: template(nil, "testvm", "--proto-namespace=protos"), prototype: "testvm",
			want: contract.Agent{Prototype: "testvm", PrototypeNamespace: "protos", Namespace: ns}, match: true},
		{name: "the original design's args", tmpl: template(map[string]string{"app": "vmctl"}, "testvm"), prototype: "testvm",
			want: contract.Agent{Prototype: "testvm", PrototypeNamespace: ns, Namespace: ns}, match: true},
		{name: "no args, the label", tmpl: template(map[string]string{contract.LabelAgentPrototype: "testvm"}), prototype: "testvm",
			want: contract.Agent{Prototype: "testvm", PrototypeNamespace: ns, Namespace: ns}, match: true},
		{name: "no args, a long name's hashed label", tmpl: template(map[string]string{contract.LabelAgentPrototype: derive.LabelValue(long)}), prototype: long,
			want: contract.Agent{Prototype: long, PrototypeNamespace: ns, Namespace: ns}, match: true},
		{name: "no args, no label", tmpl: template(nil), prototype: "testvm"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := match(ns, &tt.tmpl, tt.prototype)
			if ok != tt.match {
				t.Fatalf("Match() = %v, want %v", ok, tt.match)
			}
			if diff := cmp.Diff(tt.want, got); ok && diff != "" {
				t.Errorf("agent (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSelectAndNames(t *testing.T) {
	web := deployment("web", template(nil, "testvm"))
	other := deployment("other", template(nil, "othervm"))
	db := appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns}, Spec: appsv1.StatefulSetSpec{Template: template(nil, "testvm")}}
	ds := appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "all", Namespace: ns}, Spec: appsv1.DaemonSetSpec{Template: template(nil, "testvm")}}
	got, err := selectWorkloads([]runtime.Object{&web, &other, &db, &ds}, "testvm")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, w := range got {
		names = append(names, w.Name())
		if w.Template() == nil || w.Template().Spec.Containers[0].Args[0] != "testvm" {
			t.Errorf("%s: template %v", w.Name(), w.Template())
		}
	}
	want := []string{"deployment.apps/web", "statefulset.apps/db", "daemonset.apps/all"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("workloads (-want +got):\n%s", diff)
	}
}

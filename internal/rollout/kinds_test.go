package rollout

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
)

var agent = contract.Agent{Prototype: "testvm", PrototypeNamespace: ns, Namespace: ns}

// TestUnknownKind: an object of no workload kind is refused with an error
// at every verb, never taken for a Deployment.
func TestUnknownKind(t *testing.T) {
	rc := &corev1.ReplicationController{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: corev1.ReplicationControllerSpec{Template: &corev1.PodTemplateSpec{Spec: template(nil, "testvm").Spec}}}
	w := Workload{Object: rc, Agent: agent}
	const want = "*v1.ReplicationController is not a Deployment, StatefulSet or DaemonSet"
	kc := kubefake.NewClientset()
	if name := w.Name(); strings.Contains(name, "deployment") {
		t.Errorf("Name() = %q, named as a Deployment", name)
	}
	if w.Template() != nil {
		t.Errorf("Template() = %v, want nil", w.Template())
	}
	if p := Observe(w, nil, nil); p.Err == nil || !strings.HasPrefix(p.Err.Error(), want) || p.Done {
		t.Errorf("Observe() = %+v, want error %q", p, want)
	}
	if err := Restartable(w); err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Restartable() = %v, want %q", err, want)
	}
	if _, err := Restart(t.Context(), kc, w, time.Now(), target("h1"), metav1.PatchOptions{}); err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Restart() = %v, want %q", err, want)
	}
	if p := PlanRestart(w, target("h1")); p.Restart || !strings.HasPrefix(p.Why, want) {
		t.Errorf("PlanRestart() = %+v, want no restart because %q", p, want)
	}
	if PinnedRevision(w) != "" {
		t.Errorf("PinnedRevision() = %q", PinnedRevision(w))
	}
	if _, err := Pods(t.Context(), kube.Clients{Kube: kc}, w); err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Pods() = %v, want %q", err, want)
	}
	if err := Watch(t.Context(), kube.Clients{Kube: kc}, []Workload{w}, func([]Progress) bool { return true }); err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Watch() = %v, want %q", err, want)
	}
	if _, err := selectWorkloads([]runtime.Object{rc}, "testvm"); err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("selectWorkloads() = %v, want %q", err, want)
	}
	if len(kc.Actions()) != 0 {
		t.Errorf("sent %v for an object of no workload kind", kc.Actions())
	}
}

// kindScene is one workload of each kind, "web" in ns, of agents of
// testvm, with a Pod template annotation "before".
func kindScene() []runtime.Object {
	tmpl := template(map[string]string{"app": "web"}, "testvm")
	tmpl.Annotations = map[string]string{"before": "yes"}
	meta := metav1.ObjectMeta{Name: "web", Namespace: ns, Generation: 1}
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	return []runtime.Object{
		&appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{Template: tmpl, Selector: sel, Paused: true}},
		&appsv1.StatefulSet{ObjectMeta: meta, Spec: appsv1.StatefulSetSpec{Template: tmpl, Selector: sel,
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}}},
		&appsv1.DaemonSet{ObjectMeta: meta, Spec: appsv1.DaemonSetSpec{Template: tmpl, Selector: sel,
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}}},
	}
}

// TestKinds: each kind is named, found, patched and judged as its own.
func TestKinds(t *testing.T) {
	objs := kindScene()
	kc := kubefake.NewClientset(objs...)
	found, err := Find(t.Context(), kube.Clients{Kube: kc}, ns, "testvm")
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != len(objs) {
		t.Fatalf("Find() found %d workloads, want %d", len(found), len(objs))
	}
	for i, tt := range []struct {
		name, resource string
		restartable    string // Restartable's error
		status         string // Observe's error
	}{
		{name: "deployment.apps/web", resource: "deployments",
			restartable: "deployment.apps/web in vms namespace is paused: run kubectl rollout resume deployment/web -n vms first"},
		{name: "statefulset.apps/web", resource: "statefulsets",
			status: `rollout status is only available for RollingUpdate strategy type, and statefulset "web" is OnDelete`},
		{name: "daemonset.apps/web", resource: "daemonsets",
			status: `rollout status is only available for RollingUpdate strategy type, and daemon set "web" is OnDelete`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := found[i]
			if w.Name() != tt.name {
				t.Errorf("Find()[%d] is %s, want %s", i, w.Name(), tt.name)
			}
			if err := Restartable(w); errString(err) != tt.restartable {
				t.Errorf("Restartable() = %v, want %q", err, tt.restartable)
			}
			if p := Observe(w, nil, nil); tt.status != "" && errString(p.Err) != tt.status {
				t.Errorf("Observe() error = %v, want %q", p.Err, tt.status)
			}
			kc.ClearActions()
			got, err := Restart(t.Context(), kc, w, time.Now(), target("h2"), metav1.PatchOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if a := kc.Actions(); len(a) != 1 || a[0].GetVerb() != "patch" || a[0].GetResource().Resource != tt.resource {
				t.Fatalf("Restart() sent %v, want one patch of %s", a, tt.resource)
			}
			restarted := Workload{Object: got, Agent: agent}
			if PinnedRevision(restarted) != "h2" || restarted.Template().Annotations["before"] != "yes" {
				t.Errorf("after Restart() the template's annotations are %v", restarted.Template().Annotations)
			}
		})
	}
}

// TestKindsPartition: only a StatefulSet's partition spares Pods below it.
func TestKindsPartition(t *testing.T) {
	objs := kindScene()
	objs[1].(*appsv1.StatefulSet).Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](1)}
	low := pod("web-0", "u0", "h1")
	for i, want := range []bool{true, false, true} {
		k, err := kindOf(objs[i])
		if err != nil {
			t.Fatal(err)
		}
		if got := expectsUpdate(k.partition(objs[i]), &low); got != want {
			t.Errorf("%s: expectsUpdate(web-0) = %v, want %v", k.resource, got, want)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

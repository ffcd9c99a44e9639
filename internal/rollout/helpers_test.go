package rollout

import (
	"encoding/json"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/google/go-cmp/cmp"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/prototype"
)

const ns = "vms"

// template is an agent Pod template with args.
func template(labels map[string]string, args ...string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Args: args}}},
	}
}

func deployment(name string, tmpl corev1.PodTemplateSpec) appsv1.Deployment {
	return appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Generation: 1},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Template: tmpl,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}},
	}
}

// testWorkload is a Deployment "web" of agents of testvm in ns, whose
// template pins VM revision "h2".
func testWorkload() Workload {
	tmpl := template(nil, "testvm")
	tmpl.Annotations = map[string]string{contract.AnnotationVMRevision: "h2"}
	d := deployment("web", tmpl)
	return Workload{Object: &d, Agent: contract.Agent{Prototype: "testvm", PrototypeNamespace: ns, Namespace: ns}}
}

// unpinned is testWorkload as scaffolded before templates pinned a VM
// revision.
func unpinned() Workload {
	w := testWorkload()
	delete(w.Template().Annotations, contract.AnnotationVMRevision)
	return w
}

// target pins testvm at the revision named hash.
func target(hash string) Target {
	rev := &kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "testvm", Namespace: ns, Generation: 3}}
	return Target{Pinned: prototype.Pinned{Snapshot: rev, Hash: hash}}
}

// pod is an agent Pod of a template pinning VM revision rev.
func pod(name string, uid types.UID, rev string) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: uid,
		Annotations: map[string]string{contract.AnnotationVMRevision: rev}}}
}

// vm is the VM derived from testvm's revision rev for p, owned by the Pod
// as an agent makes it.
func vm(p corev1.Pod, rev string, ready bool) kubevirtv1.VirtualMachine {
	return kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{
			Name: derive.Name("testvm", p.Name, p.UID), Namespace: ns,
			Labels: map[string]string{contract.LabelPrototype: "testvm", contract.LabelPod: p.Name},
			Annotations: map[string]string{
				contract.AnnotationPodName: p.Name, contract.AnnotationPodNamespace: ns, contract.AnnotationPodUID: string(p.UID),
				contract.AnnotationPrototypeName: "testvm", contract.AnnotationPrototypeNamespace: ns,
				contract.AnnotationVMRevision: rev,
			},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: p.Name, UID: p.UID, Controller: ptr.To(true)}},
		},
		Status: kubevirtv1.VirtualMachineStatus{Ready: ready},
	}
}

// oldRule names v as an older rule than derive.Name would have:
// "<pod>-<prototype>".
func oldRule(v kubevirtv1.VirtualMachine) kubevirtv1.VirtualMachine {
	o := derive.OriginOf(&v)
	v.Name = o.PodName + "-" + o.PrototypeName
	return v
}

// patchIsRestarted checks that the restart's patch, applied to w's
// Deployment as the API server applies it, gives what Restarted gives as a
// client dry run, and returns the patched Deployment.
func patchIsRestarted(t *testing.T, w Workload, now time.Time, tg Target) *appsv1.Deployment {
	t.Helper()
	patch, err := restartPatch(w, now, tg)
	if err != nil {
		t.Fatal(err)
	}
	orig, err := json.Marshal(w.Object)
	if err != nil {
		t.Fatal(err)
	}
	patched, err := strategicpatch.StrategicMergePatch(orig, patch, &appsv1.Deployment{})
	if err != nil {
		t.Fatal(err)
	}
	var viaPatch appsv1.Deployment
	if err := json.Unmarshal(patched, &viaPatch); err != nil {
		t.Fatal(err)
	}
	local := Restarted(w, now, tg).Object.(*appsv1.Deployment)
	if diff := cmp.Diff(local, &viaPatch); diff != "" {
		t.Errorf("client dry run and patch differ (-dry run +patch):\n%s", diff)
	}
	return &viaPatch
}

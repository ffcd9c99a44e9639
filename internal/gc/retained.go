package gc

import (
	"encoding/json"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
)

// Templates are what may still make agent Pods of a namespace (or of
// all), and so name the VM revisions they pin: the live Pods themselves,
// the Deployments, StatefulSets and DaemonSets, the ReplicaSets (a
// Deployment's history, as far as its revisionHistoryLimit keeps it), and
// the ControllerRevisions (a StatefulSet's or DaemonSet's history); and
// the revision stores (VMRevisionStores) whose revisions they name.
type Templates struct {
	Pods                []corev1.Pod
	Deployments         []appsv1.Deployment
	StatefulSets        []appsv1.StatefulSet
	DaemonSets          []appsv1.DaemonSet
	ReplicaSets         []appsv1.ReplicaSet
	ControllerRevisions []appsv1.ControllerRevision
	Stores              []unstructured.Unstructured
}

// Retained returns, by revision store (namespace and name), the VM
// revisions that t names: a Pod or template pins the revision of its
// contract.AnnotationVMRevision, in the store its agent's arguments name
// (contract.VMRevisionStore) in its namespace. A StatefulSet's or
// DaemonSet's ControllerRevision holds its template in its data, a patch
// of spec.template.
func Retained(t Templates) map[types.NamespacedName]map[string]bool {
	out := map[types.NamespacedName]map[string]bool{}
	name := func(namespace string, annotations map[string]string, spec *corev1.PodSpec) {
		hash, store := annotations[contract.AnnotationVMRevision], contract.VMRevisionStore(spec)
		if hash == "" || store == "" {
			return
		}
		k := types.NamespacedName{Namespace: namespace, Name: store}
		if out[k] == nil {
			out[k] = map[string]bool{}
		}
		out[k][hash] = true
	}
	for i := range t.Pods {
		p := &t.Pods[i]
		name(p.Namespace, p.Annotations, &p.Spec)
	}
	for i := range t.Deployments {
		d := &t.Deployments[i]
		name(d.Namespace, d.Spec.Template.Annotations, &d.Spec.Template.Spec)
	}
	for i := range t.StatefulSets {
		s := &t.StatefulSets[i]
		name(s.Namespace, s.Spec.Template.Annotations, &s.Spec.Template.Spec)
	}
	for i := range t.DaemonSets {
		d := &t.DaemonSets[i]
		name(d.Namespace, d.Spec.Template.Annotations, &d.Spec.Template.Spec)
	}
	for i := range t.ReplicaSets {
		r := &t.ReplicaSets[i]
		name(r.Namespace, r.Spec.Template.Annotations, &r.Spec.Template.Spec)
	}
	for i := range t.ControllerRevisions {
		cr := &t.ControllerRevisions[i]
		if tmpl, ok := historyTemplate(cr); ok {
			name(cr.Namespace, tmpl.Annotations, &tmpl.Spec)
		}
	}
	return out
}

// historyTemplate is the Pod template a StatefulSet's or DaemonSet's
// ControllerRevision holds: its data is the patch
// {"spec":{"template":{...}}} that the controller applies to roll back. A
// revision store, or a ControllerRevision of another shape (KubeVirt's
// instancetypes), holds none.
func historyTemplate(cr *appsv1.ControllerRevision) (*corev1.PodTemplateSpec, bool) {
	if len(cr.Data.Raw) == 0 {
		return nil, false
	}
	var patch struct {
		Spec struct {
			Template *corev1.PodTemplateSpec `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(cr.Data.Raw, &patch); err != nil || patch.Spec.Template == nil {
		return nil, false
	}
	return patch.Spec.Template, true
}

func isStore(u *unstructured.Unstructured) bool {
	return u.GetLabels()[contract.LabelComponent] == contract.ComponentVMRevisions
}

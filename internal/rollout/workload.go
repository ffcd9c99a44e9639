package rollout

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
)

// Kinds of workloads that run agents, as kubectl names their resources.
var (
	Deployments  = schema.GroupResource{Group: "apps", Resource: "deployments"}
	StatefulSets = schema.GroupResource{Group: "apps", Resource: "statefulsets"}
	DaemonSets   = schema.GroupResource{Group: "apps", Resource: "daemonsets"}
)

// Workload is a Deployment, StatefulSet or DaemonSet whose Pods run agents
// of one prototype.
type Workload struct {
	// Object is the *appsv1.Deployment, *appsv1.StatefulSet or
	// *appsv1.DaemonSet.
	Object runtime.Object
	// Agent is what the agent container's arguments say: the prototype, its
	// namespace, and where the VMs are made.
	Agent scaffold.Agent
}

// Meta is the workload's object metadata.
func (w Workload) Meta() metav1.Object {
	m, _ := w.Object.(metav1.Object) // every kind Workload holds is one
	return m
}

// Resource is the workload's group and resource, for kubectl's
// "deployment.apps/web" names.
func (w Workload) Resource() schema.GroupResource {
	switch w.Object.(type) {
	case *appsv1.StatefulSet:
		return StatefulSets
	case *appsv1.DaemonSet:
		return DaemonSets
	}
	return Deployments
}

// Name is the workload as kubectl names it: "deployment.apps/web".
func (w Workload) Name() string {
	r := w.Resource()
	return strings.TrimSuffix(r.Resource, "s") + "." + r.Group + "/" + w.Meta().GetName()
}

// Template is the workload's Pod template.
func (w Workload) Template() *corev1.PodTemplateSpec {
	switch o := w.Object.(type) {
	case *appsv1.Deployment:
		return &o.Spec.Template
	case *appsv1.StatefulSet:
		return &o.Spec.Template
	case *appsv1.DaemonSet:
		return &o.Spec.Template
	}
	return nil
}

// Selector is the workload's Pod selector.
func (w Workload) Selector() *metav1.LabelSelector {
	switch o := w.Object.(type) {
	case *appsv1.Deployment:
		return o.Spec.Selector
	case *appsv1.StatefulSet:
		return o.Spec.Selector
	case *appsv1.DaemonSet:
		return o.Spec.Selector
	}
	return nil
}

// Prototype is the prototype's namespace and name.
func (w Workload) Prototype() types.NamespacedName {
	return types.NamespacedName{Namespace: w.Agent.PrototypeNamespace, Name: w.Agent.Prototype}
}

// String names the workload with its namespace, for errors.
func (w Workload) String() string {
	return fmt.Sprintf("%s in %s namespace", w.Name(), w.Meta().GetNamespace())
}

// AnyPrototype is the prototype name that, given to Match or Select,
// matches the workloads that scaffold wrote for any prototype (by its
// label).
const AnyPrototype = ""

// Match reports whether a workload in namespace with Pod template tmpl runs
// agents of the prototype named prototype (AnyPrototype: scaffold's
// workloads of any), and what they derive from. The
// agent container's arguments decide (scaffold's, and the original design's
// hand-written manifests alike: the prototype is the first argument);
// scaffold's label scaffold.LabelPrototype serves where the arguments cannot
// be read (an agent started through command rather than args).
func Match(namespace string, tmpl *corev1.PodTemplateSpec, prototype string) (scaffold.Agent, bool) {
	a, ok := scaffold.ParseAgent(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace}, Spec: tmpl.Spec})
	if prototype == AnyPrototype {
		_, labelled := tmpl.Labels[scaffold.LabelPrototype]
		return a, ok && labelled
	}
	if ok {
		return a, a.Prototype == prototype
	}
	if tmpl.Labels[scaffold.LabelPrototype] != derive.LabelValue(prototype) {
		return scaffold.Agent{}, false
	}
	return scaffold.Agent{Prototype: prototype, PrototypeNamespace: namespace, Namespace: namespace}, true
}

// Select returns the workloads among deployments, statefulSets and
// daemonSets that run agents of prototype, in that order of kinds and by
// namespace and name within each (as the API server lists them).
func Select(deployments []appsv1.Deployment, statefulSets []appsv1.StatefulSet, daemonSets []appsv1.DaemonSet, prototype string) []Workload {
	var out []Workload
	add := func(obj runtime.Object, namespace string, tmpl *corev1.PodTemplateSpec) {
		if a, ok := Match(namespace, tmpl, prototype); ok {
			out = append(out, Workload{Object: obj, Agent: a})
		}
	}
	for i := range deployments {
		d := &deployments[i]
		add(d, d.Namespace, &d.Spec.Template)
	}
	for i := range statefulSets {
		s := &statefulSets[i]
		add(s, s.Namespace, &s.Spec.Template)
	}
	for i := range daemonSets {
		d := &daemonSets[i]
		add(d, d.Namespace, &d.Spec.Template)
	}
	return out
}

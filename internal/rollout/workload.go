package rollout

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
)

// Workload is a Deployment, StatefulSet or DaemonSet whose Pods run agents
// of one prototype.
type Workload struct {
	// Object is the *appsv1.Deployment, *appsv1.StatefulSet or
	// *appsv1.DaemonSet.
	Object runtime.Object
	// Agent is what the agent container's arguments say: the prototype, its
	// namespace, and where the VMs are made.
	Agent contract.Agent
}

// Meta is the workload's object metadata.
func (w Workload) Meta() metav1.Object {
	m, _ := w.Object.(metav1.Object) // every kind Workload holds is one
	return m
}

// Name is the workload as kubectl names it: "deployment.apps/web". An
// object of no workload kind is named by its Go type.
func (w Workload) Name() string {
	k, err := kindOf(w.Object)
	if err != nil {
		return fmt.Sprintf("%T/%s", w.Object, w.Meta().GetName())
	}
	return k.singular() + "." + k.resource.Group + "/" + w.Meta().GetName()
}

// Template is the workload's Pod template: nil for an object of no
// workload kind.
func (w Workload) Template() *corev1.PodTemplateSpec {
	k, err := kindOf(w.Object)
	if err != nil {
		return nil
	}
	return k.spec(w.Object).template
}

// selector is the workload's Pod selector.
func (w Workload) selector() (labels.Selector, error) {
	k, err := kindOf(w.Object)
	if err != nil {
		return nil, err
	}
	sel, err := metav1.LabelSelectorAsSelector(k.spec(w.Object).selector)
	if err != nil {
		return nil, fmt.Errorf("%s has an invalid selector: %w", w, err)
	}
	return sel, nil
}

// Prototype is the prototype's namespace and name.
func (w Workload) Prototype() types.NamespacedName {
	return types.NamespacedName{Namespace: w.Agent.PrototypeNamespace, Name: w.Agent.Prototype}
}

// String names the workload with its namespace, for errors.
func (w Workload) String() string {
	return fmt.Sprintf("%s in %s namespace", w.Name(), w.Meta().GetNamespace())
}

// AnyPrototype is the prototype name that, given to Find,
// matches the workloads that scaffold wrote for any prototype (by its
// label).
const AnyPrototype = ""

// match reports whether a workload in namespace with Pod template tmpl runs
// agents of the prototype named prototype (AnyPrototype: scaffold's
// workloads of any), and what they derive from. The
// agent container's arguments decide (scaffold's, and the original design's
// hand-written manifests alike: the prototype is the first argument);
// scaffold's label contract.LabelAgentPrototype serves where the arguments cannot
// be read (an agent started through command rather than args).
func match(namespace string, tmpl *corev1.PodTemplateSpec, prototype string) (contract.Agent, bool) {
	a, ok := contract.ParseAgent(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace}, Spec: tmpl.Spec})
	if prototype == AnyPrototype {
		_, labelled := tmpl.Labels[contract.LabelAgentPrototype]
		return a, ok && labelled
	}
	if ok {
		return a, a.Prototype == prototype
	}
	if tmpl.Labels[contract.LabelAgentPrototype] != derive.LabelValue(prototype) {
		return contract.Agent{}, false
	}
	return contract.Agent{Prototype: prototype, PrototypeNamespace: namespace, Namespace: namespace}, true
}

// selectWorkloads returns the workloads among objs that run agents of
// prototype, in the order of objs.
func selectWorkloads(objs []runtime.Object, prototype string) ([]Workload, error) {
	var out []Workload
	for _, obj := range objs {
		k, err := kindOf(obj)
		if err != nil {
			return nil, err
		}
		if a, ok := match(obj.(metav1.Object).GetNamespace(), k.spec(obj).template, prototype); ok {
			out = append(out, Workload{Object: obj, Agent: a})
		}
	}
	return out, nil
}

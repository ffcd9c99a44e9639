package scaffold

import (
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
)

// Recommended labels (app.kubernetes.io/...) that scaffold puts on every object.
const (
	LabelName      = "app.kubernetes.io/name"
	LabelInstance  = "app.kubernetes.io/instance"
	LabelComponent = "app.kubernetes.io/component"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	LabelVersion   = "app.kubernetes.io/version"

	// LabelPrototype, on a workload and its Pod template, names the
	// prototype its agents derive their VMs from (derive.LabelValue of the
	// name; the agent's arguments say its namespace), so that `kubectl vmctl
	// rollout` and `kubectl get -l` find the workloads of a prototype. It is
	// not derive.LabelPrototype: Services select VMs' launcher Pods by that,
	// and must not select the agents.
	LabelPrototype = "vmctl.kubevirt.io/agent-prototype"

	// AppName is the value of LabelName.
	AppName = "vmctl"
	// ManagedBy is the value of LabelManagedBy.
	ManagedBy = "kubectl-vmctl"
	// ComponentAgent is the LabelComponent of the agent Pods and what serves them.
	ComponentAgent = "agent"
	// ComponentVMs is the LabelComponent of the Service in front of the VMs.
	ComponentVMs = "vms"
	// ComponentAdmission is the LabelComponent of the admission policy.
	ComponentAdmission = "admission-policy"
)

// Build returns the objects that run p's agents, in the order
// `kubectl apply -f -` should create them: ServiceAccount, RBAC, admission
// policy, the launcher priority class, workload, Services,
// PodDisruptionBudget, PodMonitor. Every object
// has its apiVersion and kind set.
func Build(p Params) ([]runtime.Object, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	objs := []runtime.Object{p.serviceAccount()}
	objs = append(objs, p.rbac()...)
	if p.AdmissionPolicy {
		objs = append(objs, p.admissionPolicy(), p.admissionPolicyBinding(), p.guardPolicy(), p.guardPolicyBinding())
	}
	if p.hasPodPolicy() {
		objs = append(objs, p.podPolicy(), p.podPolicyBinding())
	}
	if p.hasLauncherPriorityClass() {
		objs = append(objs, p.launcherPriorityClass())
	}
	switch p.Kind {
	case KindDeployment:
		objs = append(objs, p.deployment())
	case KindDaemonSet:
		objs = append(objs, p.daemonSet())
	case KindStatefulSet:
		objs = append(objs, p.headlessService(), p.statefulSet())
	}
	if p.Service != nil {
		objs = append(objs, p.vmService())
	}
	if p.PDBMinAvailable != nil {
		objs = append(objs, p.podDisruptionBudget())
	}
	if p.PodMonitor {
		objs = append(objs, p.podMonitor())
	}
	return objs, nil
}

// selectorLabels select the agent Pods. Selectors are immutable, so they hold
// only what never changes for a scaffolded workload.
func (p Params) selectorLabels() map[string]string {
	return map[string]string{LabelName: AppName, LabelInstance: p.Name}
}

// labels are put on the objects of a component.
func (p Params) labels(component string) map[string]string {
	l := p.selectorLabels()
	l[LabelComponent] = component
	l[LabelManagedBy] = ManagedBy
	if v := sanitize(p.Version, 63); v != "" {
		l[LabelVersion] = v
	}
	return l
}

// workloadLabels are the labels of the workload and its Pod template: the
// agent's, and the prototype's name.
func (p Params) workloadLabels() map[string]string {
	l := p.labels(ComponentAgent)
	l[LabelPrototype] = derive.LabelValue(p.Prototype)
	return l
}

// qualifiedName names an object outside Namespace: the workload's name and
// namespace, which cannot contain dots, so no two scaffolds share it.
func (p Params) qualifiedName() string { return p.Name + "." + p.Namespace }

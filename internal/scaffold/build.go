package scaffold

import (
	"errors"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/revision"
)

// Values of contract.LabelComponent on what serves other than the agents.
const (
	// ComponentVMs is the LabelComponent of the Service in front of the VMs.
	ComponentVMs = "vms"
	// ComponentAdmission is the LabelComponent of the admission policy.
	ComponentAdmission = "admission-policy"
)

// ClusterObjects are what every fleet of a cluster shares, which a cluster
// admin applies once before the first (`scaffold crd`): the revision
// stores' CRD and the ClusterRoles that add the stores to view, edit and
// admin. They are no fleet's, so that deleting one fleet's manifests
// (kubectl delete -f) leaves every other fleet's stores.
func ClusterObjects() []runtime.Object {
	return append([]runtime.Object{revision.StoreCRD()}, storeClusterRoles()...)
}

// Build returns the objects that run p's agents, in the order
// `kubectl apply -f -` should create them: ServiceAccount, RBAC, the
// revision store (whose CRD is among ClusterObjects), admission policy, the launcher priority class, workload, Services,
// PodDisruptionBudget, PodMonitor, HorizontalPodAutoscaler. Every object
// has its apiVersion and kind set. It refuses p that Validate refuses, or
// that pins no VM revision.
func Build(p Params) ([]runtime.Object, error) {
	if err := errors.Join(p.Validate(), p.validatePin()); err != nil {
		return nil, err
	}
	objs := []runtime.Object{p.serviceAccount()}
	objs = append(objs, p.rbac()...)
	store, err := p.store()
	if err != nil {
		return nil, err
	}
	objs = append(objs, store)
	if p.AdmissionPolicy {
		objs = append(objs, p.admissionPolicy(), p.admissionPolicyBinding(), p.guardPolicy(), p.guardPolicyBinding(),
			p.eventPolicy(), p.eventPolicyBinding())
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
	if a := p.autoscale(); a != nil {
		objs = append(objs, a.HPA())
	}
	return objs, nil
}

// autoscale is p.Autoscale for p's workload, or nil.
func (p Params) autoscale() *Autoscale {
	if p.Autoscale == nil {
		return nil
	}
	a := *p.Autoscale
	a.Kind, a.Name, a.Namespace = p.Kind, p.Name, p.Namespace
	return &a
}

// replicas is the workload's spec.replicas: none where an HPA sets them,
// so that applying the manifests again does not undo its scaling.
func (p Params) replicas() *int32 {
	if p.Autoscale != nil {
		return nil
	}
	return ptr.To(p.Replicas)
}

// selectorLabels select the agent Pods. Selectors are immutable, so they hold
// only what never changes for a scaffolded workload.
func (p Params) selectorLabels() map[string]string {
	return map[string]string{contract.LabelName: contract.AppName, contract.LabelInstance: p.Name}
}

// labels are put on the objects of a component.
func (p Params) labels(component string) map[string]string {
	l := p.selectorLabels()
	l[contract.LabelComponent] = component
	l[contract.LabelManagedBy] = contract.ManagedBy
	if v := sanitize(p.Version, 63); v != "" {
		l[contract.LabelVersion] = v
	}
	return l
}

// workloadLabels are the labels of the workload and its Pod template: the
// agent's, and the prototype's name.
func (p Params) workloadLabels() map[string]string {
	l := p.labels(contract.ComponentAgent)
	l[contract.LabelAgentPrototype] = derive.LabelValue(p.Prototype)
	return l
}

// qualifiedName names an object outside Namespace: the workload's name and
// namespace, which cannot contain dots, so no two scaffolds share it.
func (p Params) qualifiedName() string { return CreatePolicyName(p.Name, p.Namespace) }

// CreatePolicyName names the create policy, and its binding, of the
// workload called workload in namespace: cluster-scoped, so qualified by
// the namespace.
func CreatePolicyName(workload, namespace string) string { return workload + "." + namespace }

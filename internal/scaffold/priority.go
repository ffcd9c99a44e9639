package scaffold

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
)

// HighestUserPriority is the highest value a PriorityClass other than the
// system's may have (scheduling.HighestUserDefinablePriority).
const HighestUserPriority int32 = 1_000_000_000

// launcherPriorityClassName names the workload's launcher priority class:
// one per scaffold, so that deleting one scaffold's manifests leaves the
// others' launcher Pods their class.
func (p Params) launcherPriorityClassName() string { return p.Name + "-launcher." + p.Namespace }

// hasLauncherPriorityClass reports whether p's VMs get the workload's own
// launcher priority class: agents that hold their VM's room hand it to the
// VM's launcher Pod by nominating it, which a class that never preempts
// keeps through the launcher Pod's failed attempts.
func (p Params) hasLauncherPriorityClass() bool { return p.Reserves() && p.LauncherPriority != nil }

// launcherPriorityClass is the priority class of p's VMs' launcher Pods:
// the prototype's priority value, so that the scheduler counts a launcher
// Pod nominated to a node against the Pending agents of the same
// priority, and a preemptionPolicy of Never, so that the scheduler does
// not clear that nomination when an attempt to place the launcher Pod
// fails and it finds nothing to preempt (which it never does: the launcher
// Pod goes where its agent held the room).
func (p Params) launcherPriorityClass() *schedulingv1.PriorityClass {
	return &schedulingv1.PriorityClass{
		TypeMeta:         metav1.TypeMeta{APIVersion: schedulingv1.SchemeGroupVersion.String(), Kind: "PriorityClass"},
		ObjectMeta:       metav1.ObjectMeta{Name: p.launcherPriorityClassName(), Labels: p.labels(ComponentVMs)},
		Value:            *p.LauncherPriority,
		PreemptionPolicy: ptr.To(corev1.PreemptNever),
		Description: fmt.Sprintf("The launcher Pods of the VMs of %s/%s's vmctl agents: the priority of prototype %s/%s's VMs, never preempting",
			p.Namespace, p.Name, p.protoNamespace(), p.Prototype),
	}
}

// launcherPriorityEnv tells the agent its VMs' priority class, through
// the downward API from the template's annotation, which rollout restart
// could rewrite.
func (p Params) launcherPriorityEnv() []corev1.EnvVar {
	if !p.hasLauncherPriorityClass() {
		return nil
	}
	return []corev1.EnvVar{{Name: contract.EnvLauncherPriorityClass, ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['" + contract.AnnotationLauncherPriorityClass + "']"},
	}}}
}

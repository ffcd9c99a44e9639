// Package podtemplate writes what an agent's Pod template carries for its
// VM, the VM revision it pins and the room it holds, alike for the
// templates scaffold makes and those rollout restart rewrites.
package podtemplate

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
)

// AnnotationChangeCause is what `kubectl rollout history` shows for a
// revision of a workload: the Deployment controller copies it to the
// ReplicaSet, the StatefulSet and DaemonSet controllers to their
// ControllerRevisions.
const AnnotationChangeCause = "kubernetes.io/change-cause"

// ChangeCause is the change-cause of a workload whose template pins
// revision hash of rev: which prototype, at which generation.
func ChangeCause(rev *kubevirtv1.VirtualMachine, hash string) string {
	return fmt.Sprintf("vmctl: VM revision %s of prototype %s/%s (generation %d)", hash, rev.Namespace, rev.Name, rev.Generation)
}

// Pin makes tmpl pin VM revision hash: the annotation names it, and the
// downward API passes it to the agent container, once. The agent reads it
// from the store its arguments name (contract.VMRevisionStoreArg).
func Pin(tmpl *corev1.PodTemplateSpec, hash string) {
	metav1.SetMetaDataAnnotation(&tmpl.ObjectMeta, contract.AnnotationVMRevision, hash)
	if c := agent(tmpl); c != nil {
		c.Env = once(c.Env, corev1.EnvVar{Name: contract.EnvVMRevision, ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['" + contract.AnnotationVMRevision + "']"},
		}}, func(e corev1.EnvVar) bool { return e.Name == contract.EnvVMRevision })
	}
}

// Repin makes tmpl, a template that exists, pin revision hash as Pin
// does, and its agent's arguments name store, once, in place of any store
// they named.
func Repin(tmpl *corev1.PodTemplateSpec, hash, store string) {
	if c := agent(tmpl); c != nil {
		c.Args = once(c.Args, contract.VMRevisionStoreArg(store),
			func(a string) bool { return strings.HasPrefix(a, contract.VMRevisionStoreArg("")) })
	}
	Pin(tmpl, hash)
}

// once is list with v in place of the first element that same matches,
// and without the others; v last where none does. A template scaffold
// wrote and one rollout restart rewrote then hold their elements in the
// same order: applying scaffold's output again changes no template, which
// would roll every Pod, and so every VM, out again.
func once[T any](list []T, v T, same func(T) bool) []T {
	i := slices.IndexFunc(list, same)
	if i < 0 {
		return append(list, v)
	}
	list[i] = v
	return append(list[:i+1], slices.DeleteFunc(list[i+1:], same)...)
}

// The agent's own share of its Pod, and the room it holds for its VM.
//
// With a reservation, the agent container asks for its own requests plus
// the VM's launcher Pod's, so the scheduler (and the cluster autoscaler,
// ResourceQuota and preemption, which count Pods the same way) places the
// agent only where its VM fits. The agent gives that room back by resizing
// its own container to its own requests (pods/resize, Kubernetes 1.35 and
// later) once its VM's launcher Pod waits for it, nominated to the node,
// and the scheduler counts the room free once the kubelet has actuated the
// resize: it counts a Pod being resized at the largest of its spec, its
// allocated and its actual resources (k8s.io/component-helpers/resource
// PodRequests with UseStatusResources).
//
// Limits carry the reservation too, so requests stay below limits before
// and after the resize: the Pod is Burstable both times, as an in-place
// resize requires (the API server refuses a resize that changes the QoS
// class). Only CPU and memory can be resized in place, so only they are
// reserved.

// OwnRequests and OwnLimits are what the agent itself needs.
func OwnRequests() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("10m"),
		corev1.ResourceMemory: resource.MustParse("32Mi"),
	}
}

// OwnLimits are the agent's own limits; see OwnRequests.
func OwnLimits() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("100m"),
		corev1.ResourceMemory: resource.MustParse("64Mi"),
	}
}

// Hold makes tmpl hold reservation for its VM: its annotation, and the
// agent container's requests and limits, in place of any it held before.
func Hold(tmpl *corev1.PodTemplateSpec, reservation corev1.ResourceList) {
	metav1.SetMetaDataAnnotation(&tmpl.ObjectMeta, contract.AnnotationReservation, contract.FormatResources(reservation))
	if c := agent(tmpl); c != nil {
		c.Resources = AgentResources(reservation)
	}
}

// resizable are the resources an in-place resize can change.
func resizable() []corev1.ResourceName {
	return []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}
}

// Reserves reports whether reservation holds any CPU or memory: whether
// agents that hold it hold room for their VMs.
func Reserves(reservation corev1.ResourceList) bool {
	return slices.ContainsFunc(resizable(), func(name corev1.ResourceName) bool { return reservation.Name(name, resource.DecimalSI).Sign() > 0 })
}

// AgentResources are the agent container's requests and limits: its own,
// plus reservation's CPU and memory.
func AgentResources(reservation corev1.ResourceList) corev1.ResourceRequirements {
	r := corev1.ResourceRequirements{Requests: OwnRequests(), Limits: OwnLimits()}
	for _, name := range resizable() {
		if q := reservation[name]; q.Sign() > 0 {
			for _, list := range []corev1.ResourceList{r.Requests, r.Limits} {
				sum := list[name]
				sum.Add(q)
				list[name] = sum
			}
		}
	}
	return r
}

// agent is tmpl's agent container, the one contract.ContainerName names;
// nil in a template without one.
func agent(tmpl *corev1.PodTemplateSpec) *corev1.Container {
	i := slices.IndexFunc(tmpl.Spec.Containers, func(c corev1.Container) bool { return c.Name == contract.ContainerName })
	if i < 0 {
		return nil
	}
	return &tmpl.Spec.Containers[i]
}

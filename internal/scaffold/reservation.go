package scaffold

import (
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The agent's own share of its Pod, and the room it holds for its VM.
//
// With a Reservation, the agent container asks for its own requests plus
// the VM's launcher Pod's, so the scheduler (and the cluster autoscaler,
// ResourceQuota and preemption, which count Pods the same way) places the
// agent only where its VM fits. The agent gives that room back by resizing
// its own container to its own requests (pods/resize, Kubernetes 1.35 and
// later) once its VM's launcher Pod waits for it, nominated to the node,
// and the scheduler counts the room free once the kubelet has actuated the
// resize: it counts a Pod being
// resized at the largest of its spec, its allocated and its actual
// resources (k8s.io/component-helpers/resource PodRequests with
// UseStatusResources).
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

// ApplyReservation makes tmpl, a template Build wrote with a reservation,
// hold reservation instead: its annotation, and the agent container's
// requests and limits.
func ApplyReservation(tmpl *corev1.PodTemplateSpec, reservation corev1.ResourceList) {
	if tmpl.Annotations == nil {
		tmpl.Annotations = map[string]string{}
	}
	tmpl.Annotations[contract.AnnotationReservation] = contract.FormatResources(reservation)
	for i := range tmpl.Spec.Containers {
		if tmpl.Spec.Containers[i].Name == contract.ContainerName {
			tmpl.Spec.Containers[i].Resources = AgentResources(reservation)
		}
	}
}

// resizable are the resources an in-place resize can change.
func resizable() []corev1.ResourceName {
	return []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}
}

// Reserves reports whether p's agents hold room for their VMs: whether
// there is a reservation of CPU or memory.
func (p Params) Reserves() bool { return Reserves(p.Reservation) }

// Reserves reports whether reservation holds any CPU or memory.
func Reserves(reservation corev1.ResourceList) bool {
	for _, name := range resizable() {
		if q, ok := reservation[name]; ok && q.Sign() > 0 {
			return true
		}
	}
	return false
}

// AgentResources are the agent container's requests and limits: its own,
// plus reservation's CPU and memory.
func AgentResources(reservation corev1.ResourceList) corev1.ResourceRequirements {
	r := corev1.ResourceRequirements{Requests: OwnRequests(), Limits: OwnLimits()}
	for _, name := range resizable() {
		q, ok := reservation[name]
		if !ok || q.Sign() <= 0 {
			continue
		}
		for _, list := range []corev1.ResourceList{r.Requests, r.Limits} {
			sum := list[name]
			sum.Add(q)
			list[name] = sum
		}
	}
	return r
}

// requestsEnv tells a reserving agent its container's requests now, through
// the downward API: after a restart that follows the resize they are its
// own, and it asks nothing more. It also tells the agent the room its
// template holds.
func (p Params) requestsEnv() []corev1.EnvVar {
	if !p.Reserves() {
		return nil
	}
	env := func(name, res, divisor string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
			ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: res, Divisor: resource.MustParse(divisor)},
		}}
	}
	return []corev1.EnvVar{
		env(contract.EnvRequestsCPU, "requests.cpu", "1m"),
		env(contract.EnvRequestsMemory, "requests.memory", "1"),
		// The room the template holds, which the agent compares with what
		// its VM's launcher Pod asks for.
		{Name: contract.EnvReservation, ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['" + contract.AnnotationReservation + "']"},
		}},
	}
}

// Moves reports whether p's agents give up a node their VM cannot be
// scheduled on: a Deployment's or a StatefulSet's, whose controller makes a
// new Pod, and only with a reservation, so that the scheduler places the
// new Pod where the VM fits, never again on the node it left. A DaemonSet's
// Pod cannot move; its agent only reports.
func (p Params) Moves() bool {
	return p.Reserves() && p.MoveAfter > 0 && p.Kind != KindDaemonSet
}

// reserveArgs are the agent's flags that make it give the reservation back,
// and give the node up where it moves.
func (p Params) reserveArgs() []string {
	if !p.Reserves() {
		return nil
	}
	args := []string{"--" + contract.FlagOwnRequests + "=" + contract.FormatResources(OwnRequests()), "--" + contract.FlagOwnLimits + "=" + contract.FormatResources(OwnLimits())}
	if p.Moves() {
		args = append(args, "--"+contract.FlagMoveAfter+"="+p.MoveAfter.String())
	}
	return args
}

package scaffold

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/podtemplate"
)

// Reserves reports whether p's agents hold room for their VMs (podtemplate.Hold).
func (p Params) Reserves() bool { return podtemplate.Reserves(p.Reservation) }

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
	args := []string{"--" + contract.FlagOwnRequests + "=" + contract.FormatResources(podtemplate.OwnRequests()), "--" + contract.FlagOwnLimits + "=" + contract.FormatResources(podtemplate.OwnLimits())}
	if p.Moves() {
		args = append(args, "--"+contract.FlagMoveAfter+"="+p.MoveAfter.String())
	}
	return args
}

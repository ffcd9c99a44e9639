package plugin

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/version"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/prototype"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/reserve"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/scaffold"
)

// minResizeVersion is the first Kubernetes whose Pods resize in place by
// default (InPlacePodVerticalScaling GA): the agent gives its VM's room
// back so.
var minResizeVersion = version.MajorMinor(1, 35)

// notCounted says what an agent Pod without a reservation means.
const notCounted = "the agent Pods ask for their own 10m CPU and 32Mi only, so the scheduler, quotas and the " +
	"cluster autoscaler do not see their VMs' size: a node may get more agents than it has room for VMs, " +
	"and those VMs then stay unschedulable (ErrorUnschedulable) beside a Running Pod"

// reservation sets the parameters' reservation to needs', what the
// scheduler counts for proto's VMs' launcher Pods, when --reserve and the
// server allow it; otherwise it says, in a note, what that means. It errs
// when the reservation cannot be computed.
func (o *ScaffoldOptions) reservation(ctx context.Context, proto *kubevirtv1.VirtualMachine, needs prototype.PodNeeds) ([]string, error) {
	if !o.Reserve {
		return []string{"--reserve=false: " + notCounted + "; drop --reserve=false to have each agent hold its VM's room until it makes it"}, nil
	}
	info, err := o.clients.Kube.Discovery().ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("reading the server's version, to tell whether Pods resize in place (Kubernetes 1.35 and later): %w; "+
			"retry, or pass --reserve=false", err)
	}
	v, err := version.ParseGeneric(info.GitVersion)
	if err != nil || !v.AtLeast(minResizeVersion) {
		return []string{fmt.Sprintf("the server runs Kubernetes %s, older than 1.35, whose Pods cannot resize in place: %s; "+
			"upgrade the cluster to 1.35 or later and scaffold again", info.GitVersion, notCounted)}, nil
	}
	if needs.ReservationErr != nil {
		return nil, fmt.Errorf("cannot size the VMs of prototype %s/%s, which each agent Pod holds room for: %w; "+
			"or pass --reserve=false to scaffold agents that do not hold it (the scheduler then does not see the VMs' size)",
			proto.Namespace, proto.Name, needs.ReservationErr)
	}
	o.params.Reservation = needs.Reservation
	notes := o.launcherPriority(ctx, proto)
	if needs.ReservationNote != "" {
		notes = append(notes, needs.ReservationNote)
	}
	return notes, nil
}

// launcherPriority sets the parameters' launcher priority to the priority
// of proto's VMs, so that their launcher Pods get a class of it that never
// preempts; when that cannot be read, or is the system's, it says in a
// note that the VMs keep the prototype's class.
func (o *ScaffoldOptions) launcherPriority(ctx context.Context, proto *kubevirtv1.VirtualMachine) []string {
	keep := "the VMs keep the prototype's priority class, whose launcher Pods preempt: in a burst past the room there is, " +
		"the scheduler may take a launcher Pod's nomination back, and a Pending agent Pod the room its agent handed over"
	v, err := reserve.PriorityOf(ctx, o.clients, proto)
	switch {
	case apierrors.IsNotFound(err):
		return []string{fmt.Sprintf("%v: %s; the VMs cannot start either until it exists", err, keep)}
	case err != nil:
		return []string{fmt.Sprintf("%v: %s; grant get and list on priorityclasses.scheduling.k8s.io and scaffold again", err, keep)}
	case v > scaffold.HighestUserPriority:
		return []string{fmt.Sprintf("the VMs' priority %d is the system's: %s", v, keep)}
	}
	o.params.LauncherPriority = &v
	return nil
}

// Package prototype reads what the agent Pods of a prototype VirtualMachine
// take from it: where its VMs may run and the room each holds for its VM.
// scaffold writes both into the Pod template, and rollout restart writes
// them again when the prototype changed, so both read them here.
package prototype

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/kube"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/placement"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/reserve"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/revision"
)

// PodNeeds is what a prototype's agent Pods take from it.
type PodNeeds struct {
	// Placement is the prototype's placement, with its instancetype's and
	// preference's; without those when PlacementErr says they could not be
	// read. PlacementKey is placement.Key of the prototype.
	Placement    placement.Placement
	PlacementKey string
	PlacementErr error
	// Reservation is what each agent Pod holds for its VM: the CPU and
	// memory the scheduler counts for the VM's launcher Pod, rounded up
	// (reserve.Round). Nil when ReservationErr says why it cannot be
	// computed.
	Reservation    corev1.ResourceList
	ReservationErr error
	// ReservationNote says, when vmctl does not know the cluster's KubeVirt
	// release, whose rules Reservation follows (reserve.Note); else "".
	ReservationNote string
}

// Read reads proto's PodNeeds with c: its instancetype and preference, and
// what reserve.Load needs. Each caller decides what an error means: scaffold
// says it, rollout restart leaves the template's value as it is.
func Read(ctx context.Context, c kube.Clients, proto *kubevirtv1.VirtualMachine) PodNeeds {
	var n PodNeeds
	n.Placement, n.PlacementErr = placement.Resolve(ctx, c.KubeVirt, proto)
	n.PlacementKey = placement.Key(proto)
	in, err := reserve.Load(ctx, c, proto)
	if err != nil {
		n.ReservationErr = err
		return n
	}
	if r, err := reserve.Launcher(proto, in); err != nil {
		n.ReservationErr = err
	} else {
		n.Reservation, n.ReservationNote = reserve.Round(r), reserve.Note(in)
	}
	return n
}

// Pinned is the VM revision a workload's template pins for a prototype
// now, and what its agent Pods need of that revision.
type Pinned struct {
	// Snapshot is the VM revision itself (revision.Snapshot), named by Hash.
	Snapshot *kubevirtv1.VirtualMachine
	Hash     string
	PodNeeds
}

// Pin takes proto's revision: its snapshot, with its instancetype and
// preference applied by c.Expand (kube.ExpandSpec: as KubeVirt stores them
// for the prototype), named by its hash, and the placement and reservation of
// that snapshot, which then match the VMs the agents derive from it by
// construction. It fails only when the prototype cannot be expanded or
// hashed; PodNeeds says what it could not read.
func Pin(ctx context.Context, c kube.Clients, proto *kubevirtv1.VirtualMachine) (Pinned, error) {
	rev, hash, err := Revise(ctx, c.Expand, proto)
	if err != nil {
		return Pinned{}, err
	}
	return Pinned{Snapshot: rev, Hash: hash, PodNeeds: Read(ctx, c, rev)}, nil
}

// Revise is the revision Pin takes of proto, and its hash, without what
// its agent Pods need: the one request of expand (none for a prototype
// without instancetype or preference), for those that only compare a
// pinned hash with the prototype's now (status, diff).
func Revise(ctx context.Context, expand kube.Expander, proto *kubevirtv1.VirtualMachine) (*kubevirtv1.VirtualMachine, string, error) {
	expanded, err := expand(ctx, proto)
	if err != nil {
		return nil, "", err
	}
	snap := proto.DeepCopy()
	snap.Spec = expanded.Spec
	rev := revision.Snapshot(snap)
	hash, err := revision.Hash(rev)
	if err != nil {
		return nil, "", err
	}
	return rev, hash, nil
}

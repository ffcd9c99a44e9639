package drift

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
)

// Check is the outcome for one derived VM: a Result, or Err when it could
// not be compared (no revision recorded, revision gone, derivation failed).
type Check struct {
	Result
	// Prototype is the prototype the VM records, as namespace/name.
	Prototype types.NamespacedName
	// Generation is the prototype's metadata.generation when the revision
	// it was compared with was taken.
	Generation int64
	// Revision is the VM revision it was compared with.
	Revision string
	Err      error
}

// ErrNoRevision is the Err of a Check of a VM with vmctl's markers that
// records no VM revision: no agent made it so, and there is nothing to
// compare it with. diff warns of it rather than fail: a copy of a derived
// VM (a prototype made from one) carries the same markers.
var ErrNoRevision = errors.New("no VM revision recorded")

// CheckPinned re-derives live, a derived VM that records VM revision hash
// (its Pod's), from rev, that revision as its workload's revision store
// holds it (nil when none does), as the agent derives it, and compares. A
// VM that records none ("") is not compared: every agent derives from a
// revision its Pod pins, and makes no VM without one, so only a hand
// edit makes such a VM.
func CheckPinned(live *kubevirtv1.VirtualMachine, rev *kubevirtv1.VirtualMachine, hash string) Check {
	c := Check{Result: Result{Namespace: live.Namespace, Name: live.Name}, Prototype: derive.OriginOf(live).Prototype(), Revision: hash}
	switch {
	case hash == "":
		c.Err = fmt.Errorf("%w, so no agent of this vmctl made the VM as it is (a copy, or edited by hand?); "+
			"where a Pod owns it, `kubectl vmctl rollout restart %s` replaces that Pod, and the VM with one of a pinned revision", ErrNoRevision, c.Prototype.Name)
		return c
	case rev == nil:
		c.Err = fmt.Errorf("VM revision %s of prototype %s is in no revision store of the Pod's namespace (pruned?); "+
			"`kubectl vmctl rollout restart %s` pins a new one", hash, c.Prototype, c.Prototype.Name)
		return c
	case rev.Name != c.Prototype.Name || rev.Namespace != c.Prototype.Namespace:
		c.Err = fmt.Errorf("VM revision %s is a snapshot of prototype %s/%s, not of %s, which the VM records", hash, rev.Namespace, rev.Name, c.Prototype)
		return c
	}
	return c.compare(live, rev)
}

// compare derives live again from rev, the revision it records, and
// compares.
func (c Check) compare(live, rev *kubevirtv1.VirtualMachine) Check {
	o := derive.OriginOf(live)
	c.Generation = rev.Generation
	derived, err := derive.VM(rev, derive.Pod{
		Name: o.PodName, Namespace: o.PodNamespace, UID: o.PodUID, Node: o.Node,
	}, derive.Options{
		Namespace: live.Namespace,
		// The VM may be named by an older rule than Name's: its data
		// volumes and hostname follow its own name.
		Name: live.Name,
		// The agent already decided about shared volumes when it made the
		// VM; diff compares, it does not judge again.
		AllowSharedVolumes: true,
		Subdomain:          live.Labels[contract.LabelSubdomain],
		ReplicaClaims:      replicaClaims(live, rev, o.PodName),
		// The agent's choice, as the VM records it.
		LauncherPriorityClass: live.Annotations[contract.AnnotationLauncherPriorityClass],
		VMRevisionHash:        c.Revision,
	})
	if err != nil {
		c.Err = fmt.Errorf("derive from VM revision %s of prototype %s: %w", c.Revision, c.Prototype, err)
		return c
	}
	if c.Result, err = Compare(live, derived, fmt.Sprintf("VM revision %s of %s", c.Revision, c.Prototype)); err != nil {
		c.Err = err
	}
	return c
}

// replicaClaims are the claims of rev's persistentVolumeClaim volumes
// that live uses its Pod's own of, as the agent does with the claims its
// StatefulSet makes per replica (derive.Options.ReplicaClaims): the agent's
// arguments list them, which a VM does not record, and the create policy
// admits no other renaming.
func replicaClaims(live, rev *kubevirtv1.VirtualMachine, pod string) []string {
	if live.Spec.Template == nil || rev.Spec.Template == nil {
		return nil
	}
	liveClaims := map[string]string{}
	for i, v := range live.Spec.Template.Spec.Volumes {
		if c := derive.VolumeClaim(&live.Spec.Template.Spec.Volumes[i]); c != nil {
			liveClaims[v.Name] = *c
		}
	}
	var claims []string
	for i, v := range rev.Spec.Template.Spec.Volumes {
		if c := derive.VolumeClaim(&rev.Spec.Template.Spec.Volumes[i]); c != nil && liveClaims[v.Name] == derive.ReplicaClaimName(*c, pod) {
			claims = append(claims, *c)
		}
	}
	return claims
}

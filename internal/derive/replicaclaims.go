package derive

import (
	"fmt"
	"slices"
	"strings"

	kubevirtv1 "kubevirt.io/api/core/v1"
)

// ReplicaClaimName is the claim a StatefulSet makes for Pod pod from its
// volumeClaimTemplate claim, and keeps across the Pod's replacements: the
// StatefulSet controller names it so (getPersistentVolumeClaimName).
func ReplicaClaimName(claim, pod string) string { return claim + "-" + pod }

// ReplicaClaimError says that a claim the workload makes per replica is
// none of the prototype's persistentVolumeClaim volumes. It will not fix
// itself: the prototype or the workload must change.
type ReplicaClaimError struct {
	// Prototype is the prototype's "namespace/name".
	Prototype string
	// Missing are the claims no persistentVolumeClaim volume names.
	Missing []string
	// Claims are the claims the prototype's persistentVolumeClaim volumes
	// name.
	Claims []string
}

// Error names the claims and what the prototype offers instead.
func (e *ReplicaClaimError) Error() string {
	have := "it has no persistentVolumeClaim volume"
	if len(e.Claims) > 0 {
		have = "its persistentVolumeClaim volumes name " + strings.Join(e.Claims, ", ")
	}
	return fmt.Sprintf("prototype %s: no persistentVolumeClaim volume names claim %s, which the workload makes per replica (--%s); %s: "+
		"give the prototype a volume with persistentVolumeClaim.claimName %s, or scaffold again naming one of its claims",
		e.Prototype, strings.Join(e.Missing, ", "), "replica-claim", have, e.Missing[0])
}

// useReplicaClaims points every persistentVolumeClaim volume (plain or
// under an ephemeral one) that names one of claims at the Pod's own claim
// of it, ReplicaClaimName(claim, pod). It returns the claims no such
// volume names, the claims the volumes name, and the Pod's claims it put
// in their place, which no other VM shares.
func useReplicaClaims(spec *kubevirtv1.VirtualMachineSpec, claims []string, pod string) (missing, have []string, own map[string]bool) {
	own = map[string]bool{}
	used := map[string]bool{}
	for i := range spec.Template.Spec.Volumes {
		name := VolumeClaim(&spec.Template.Spec.Volumes[i])
		if name == nil {
			continue
		}
		have = append(have, *name)
		if slices.Contains(claims, *name) {
			used[*name] = true
			*name = ReplicaClaimName(*name, pod)
			own[*name] = true
		}
	}
	for _, c := range claims {
		if !used[c] {
			missing = append(missing, c)
		}
	}
	return missing, have, own
}

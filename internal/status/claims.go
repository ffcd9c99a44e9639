package status

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
)

// Claim is one of the claims a Pod's VM keeps its disk on: the Pod's own
// claim of one the StatefulSet makes per replica.
type Claim struct {
	Name string `json:"name"`
	// Phase is the claim's status.phase; "Missing" when there is none.
	Phase string `json:"phase"`
}

// ClaimMissing is the Phase of a claim that does not exist.
const ClaimMissing = "Missing"

// Problems of a Pod's claims.
const (
	// problemClaimPendingFmt: the Pod is on a node, so the scheduler has
	// bound its claims there (WaitForFirstConsumer) or they were bound
	// before: a claim still Pending will not bind by itself.
	problemClaimPendingFmt = "claim %s Pending on a scheduled Pod: no volume binds it"
	// problemClaimLostFmt: the claim's volume is gone, and with it the
	// VM's disk.
	problemClaimLostFmt = "claim %s Lost: its volume is gone"
	// problemClaimMissingFmt: the claim does not exist on a scheduled
	// Pod: the StatefulSet makes it before the Pod, so someone deleted it.
	problemClaimMissingFmt = "claim %s missing"
)

// usesReplicaClaims reports whether pod's agent uses its Pod's own claims.
func usesReplicaClaims(pod *corev1.Pod) bool {
	a, ok := contract.ParseAgent(pod)
	return ok && len(a.ReplicaClaims) > 0
}

// addClaims puts pod's own claims, as its agent names them, in r, and
// the problems they have among r's.
func addClaims(r *Row, pod *corev1.Pod, claims map[types.NamespacedName]*corev1.PersistentVolumeClaim) {
	a, ok := contract.ParseAgent(pod)
	if !ok {
		return
	}
	scheduled := pod.Spec.NodeName != ""
	for _, c := range a.ReplicaClaims {
		name := derive.ReplicaClaimName(c, pod.Name)
		claim := Claim{Name: name, Phase: ClaimMissing}
		if pvc := claims[types.NamespacedName{Namespace: pod.Namespace, Name: name}]; pvc != nil {
			claim.Phase = string(pvc.Status.Phase)
		}
		r.Claims = append(r.Claims, claim)
		switch {
		case claim.Phase == string(corev1.ClaimLost):
			r.Problems = append(r.Problems, fmt.Sprintf(problemClaimLostFmt, name))
		case !scheduled || pod.DeletionTimestamp != nil:
		case claim.Phase == string(corev1.ClaimPending):
			r.Problems = append(r.Problems, fmt.Sprintf(problemClaimPendingFmt, name))
		case claim.Phase == ClaimMissing:
			r.Problems = append(r.Problems, fmt.Sprintf(problemClaimMissingFmt, name))
		}
	}
}

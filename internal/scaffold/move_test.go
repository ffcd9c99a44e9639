package scaffold

import (
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
)

// TestOnlyMovableReservingAgentsMove: a Deployment's and a StatefulSet's
// reserving agents get --move-after; a DaemonSet's, an agent that reserves
// nothing, and --move-after=0 do not. Every Deployment's and StatefulSet's
// agent may evict its own Pod (as the pod policy says), to leave with its
// VM when KubeVirt evacuates it; a DaemonSet's may not.
func TestOnlyMovableReservingAgentsMove(t *testing.T) {
	for _, tc := range []struct {
		name    string
		kind    Kind
		reserve bool
		after   time.Duration
		want    bool
		evicts  bool
	}{
		{"Deployment", KindDeployment, true, DefaultMoveAfter, true, true},
		{"StatefulSet", KindStatefulSet, true, time.Minute, true, true},
		{"DaemonSet", KindDaemonSet, true, DefaultMoveAfter, false, false},
		{"no reservation", KindDeployment, false, DefaultMoveAfter, false, true},
		{"--move-after=0", KindDeployment, true, 0, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := validParams(tc.kind)
			p.MoveAfter = tc.after
			if tc.reserve {
				reserving(&p)
				p.MoveAfter = tc.after
			}
			if got := p.Moves(); got != tc.want {
				t.Errorf("Moves() = %v, want %v", got, tc.want)
			}
			flag := "--" + contract.FlagMoveAfter + "=" + tc.after.String()
			if got := slices.Contains(p.AgentArgs(), flag); got != tc.want {
				t.Errorf("agent args %q contain %s: %v, want %v", p.AgentArgs(), flag, got, tc.want)
			}
			evicts := slices.ContainsFunc(p.PodRules(), func(r rbacv1.PolicyRule) bool {
				return slices.Contains(r.Resources, "pods/eviction") && slices.Equal(r.Verbs, []string{"create"})
			})
			if evicts != tc.evicts {
				t.Errorf("PodRules %+v allow create pods/eviction: %v, want %v", p.PodRules(), evicts, tc.evicts)
			}
			var matched []string
			for _, r := range p.podPolicy().Spec.MatchConstraints.ResourceRules {
				matched = append(matched, r.Resources...)
			}
			if got := slices.Contains(matched, "pods/eviction"); got != tc.evicts {
				t.Errorf("pod policy matches %s; pods/eviction among them: %v, want %v", strings.Join(matched, ", "), got, tc.evicts)
			}
		})
	}
}

package scaffold

import (
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
)

// TestOnlyMovableReservingAgentsMayEvict: a Deployment's and a StatefulSet's
// reserving agents get --move-after and the right to evict (their own Pod,
// as the pod policy says); a DaemonSet's, an agent that reserves nothing,
// and --move-after=0 get neither.
func TestOnlyMovableReservingAgentsMayEvict(t *testing.T) {
	for _, tc := range []struct {
		name    string
		kind    Kind
		reserve bool
		after   time.Duration
		want    bool
	}{
		{"Deployment", KindDeployment, true, DefaultMoveAfter, true},
		{"StatefulSet", KindStatefulSet, true, time.Minute, true},
		{"DaemonSet", KindDaemonSet, true, DefaultMoveAfter, false},
		{"no reservation", KindDeployment, false, DefaultMoveAfter, false},
		{"--move-after=0", KindDeployment, true, 0, false},
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
			if evicts != tc.want {
				t.Errorf("PodRules %+v allow create pods/eviction: %v, want %v", p.PodRules(), evicts, tc.want)
			}
			if !p.Reserves() {
				return
			}
			var matched []string
			for _, r := range p.podPolicy().Spec.MatchConstraints.ResourceRules {
				matched = append(matched, r.Resources...)
			}
			if got := slices.Contains(matched, "pods/eviction"); got != tc.want {
				t.Errorf("pod policy matches %s; pods/eviction among them: %v, want %v", strings.Join(matched, ", "), got, tc.want)
			}
		})
	}
}

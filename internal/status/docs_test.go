package status

import (
	"strings"
	"testing"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/stuck"
)

// TestDocsNameEveryProblem: each problem status reports has a Doc (README.md's
// troubleshooting table and status --help are made from Docs), and each Doc
// says what it means.
func TestDocsNameEveryProblem(t *testing.T) {
	problems := []string{
		ProblemVMMissing, ProblemOtherNode, ProblemPodGone, ProblemPodReplaced, ProblemProtoMissing,
		ProblemEvacuating, ProblemHeldByDrain, ProblemOrphanedVMI,
		strings.TrimSuffix(problemAgentSaysFmt, "%s: %s"),
		strings.TrimSuffix(problemManyVMsFmt, "%d VMs of its Pod"),
		strings.TrimSuffix(problemElsewhereFmt, "%s"),
		strings.TrimSuffix(problemNotReadyFmt, "%s"),
		strings.TrimSuffix(problemRevisionFmt, "%s, its Pod pins %s"),
		strings.TrimSuffix(problemReservationFmt, "%s, its VM needs %s"),
		"claim ",
	}
	for _, s := range stuck.States() {
		problems = append(problems, s.Prefix)
	}
	docs := Docs()
	for _, p := range problems {
		found := false
		for _, d := range docs {
			found = found || strings.HasPrefix(d.Problem, p)
		}
		if !found {
			t.Errorf("Docs() has no problem that starts with %q", p)
		}
	}
	for _, f := range []string{problemClaimPendingFmt, problemClaimLostFmt, problemClaimMissingFmt} {
		if !strings.HasPrefix(f, "claim %s ") {
			t.Errorf("%q does not start as the claims' Doc does", f)
		}
	}
	if len(docs) != len(problems) {
		t.Errorf("Docs() has %d problems; want %d, one for each", len(docs), len(problems))
	}
	for _, d := range docs {
		if d.Short == "" || d.Help == "" || strings.ContainsAny(d.Help, "\n|") {
			t.Errorf("%q wants a Short and a one-line Help without |: %+v", d.Problem, d)
		}
	}
}

func TestFill(t *testing.T) {
	if got, want := fill(problemRevisionFmt, "X", "Y"), "VM of revision X, its Pod pins Y"; got != want {
		t.Errorf("fill() = %q; want %q", got, want)
	}
	if got, want := fill(problemReservationFmt, "X", "Y"), "Pod reserves X, its VM needs Y"; got != want {
		t.Errorf("fill() = %q; want %q", got, want)
	}
}

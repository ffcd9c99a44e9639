package status

import (
	"os"
	"strings"
	"testing"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/stuck"
)

// TestREADMETroubleshooting keeps README.md's troubleshooting table in step
// with the problems status reports: each has a row that starts with it.
func TestREADMETroubleshooting(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "## Troubleshooting")
	if !ok {
		t.Fatal("README.md has no Troubleshooting section")
	}
	table, _, _ = strings.Cut(table, "\n## ")
	problems := []string{
		ProblemVMMissing, ProblemOtherNode, ProblemPodGone, ProblemPodReplaced, ProblemProtoMissing,
		ProblemEvacuating, ProblemHeldByDrain, ProblemPlacementChanged,
		strings.TrimSuffix(problemNotReadyFmt, "%s"),
		strings.TrimSuffix(problemOlderProtoFmt, "(%d < %d)"),
		strings.TrimSuffix(problemReservationFmt, "%s, its VM needs %s"),
	}
	for _, s := range stuck.States() {
		problems = append(problems, s.Prefix)
	}
	for _, p := range problems {
		if !strings.Contains(table, "\n| "+p) {
			t.Errorf("README.md's troubleshooting table has no row for %q", p)
		}
	}
}

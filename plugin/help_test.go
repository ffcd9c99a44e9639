package plugin

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/status"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/stuck"
)

// troubleshootingIntro is the line above README.md's troubleshooting table.
const troubleshootingIntro = "What the PROBLEM column of `kubectl vmctl status` says, and what to do:\n\n"

// TestREADMETroubleshooting holds README.md's troubleshooting table to
// status.Docs, stuck's states among them, row for row.
// VMCTL_UPDATE_README=1 writes the table from status.Docs instead.
func TestREADMETroubleshooting(t *testing.T) {
	const path = "../README.md"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	before, rest, ok := strings.Cut(string(b), troubleshootingIntro)
	if !ok {
		t.Fatalf("README.md lacks the line %q", strings.TrimSpace(troubleshootingIntro))
	}
	table, after, _ := strings.Cut(rest, "\n\n")
	want := troubleshootingTable(status.Docs())
	if os.Getenv("VMCTL_UPDATE_README") != "" {
		if err := os.WriteFile(path, []byte(before+troubleshootingIntro+want+"\n\n"+after), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote the troubleshooting table of %s", path)
		return
	}
	if diff := cmp.Diff(strings.Split(want, "\n"), strings.Split(table, "\n")); diff != "" {
		t.Errorf("README.md's troubleshooting table is not status.Docs (-want +got); "+
			"edit the Docs (internal/status/docs.go, internal/stuck/states.go), then "+
			"VMCTL_UPDATE_README=1 go test ./plugin/ -run TestREADMETroubleshooting:\n%s", diff)
	}
}

// troubleshootingTable is the Markdown table of docs, without a final
// newline.
func troubleshootingTable(docs []status.Doc) string {
	rows := []string{"| PROBLEM | meaning and what to do |", "| --- | --- |"}
	for _, d := range docs {
		rows = append(rows, "| "+d.Problem+" | "+d.Help+" |")
	}
	return strings.Join(rows, "\n")
}

// TestAgentDocNamesStuckReasons: docs/agent.md names each word the agent's
// /readyz says for a VM KubeVirt cannot start.
func TestAgentDocNamesStuckReasons(t *testing.T) {
	b, err := os.ReadFile("../docs/agent.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range stuck.Reasons() {
		if !strings.Contains(string(b), "`"+r+"`") {
			t.Errorf("docs/agent.md does not name /readyz's %s", r)
		}
	}
}

func TestProblemHelp(t *testing.T) {
	got := problemHelp([]status.Doc{
		{Problem: "VM missing", Short: "the Pod runs (for 15s or more) but has no VM"},
		{Problem: "a problem too long to leave a gap", Short: "short"},
		{Problem: "wraps", Short: "the Pod's template holds an older size for its VM: kubectl vmctl rollout restart PROTOTYPE"},
	})
	want := `  VM missing                     the Pod runs (for 15s or more) but has no VM
  a problem too long to leave a gap
                                 short
  wraps                          the Pod's template holds an older size for its
                                 VM: kubectl vmctl rollout restart PROTOTYPE
`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problemHelp() (-want +got):\n%s", diff)
	}
}

// TestHelpListsEveryState: status --help lists each problem of status.Docs,
// and agent --help each /readyz word of stuck.
func TestHelpListsEveryState(t *testing.T) {
	for cmd, want := range map[string][]string{
		"status": {problemHelp(status.Docs())},
		"agent":  stuck.Reasons(),
	} {
		streams, _, out, _ := genericiooptions.NewTestIOStreams()
		root := NewCmdVmctl(streams)
		root.SetArgs([]string{cmd, "--help"})
		if code := Execute(root, streams); code != 0 {
			t.Fatalf("%s --help: exit code %d", cmd, code)
		}
		help := strings.Join(strings.Fields(out.String()), " ")
		for _, w := range want {
			if !strings.Contains(help, strings.Join(strings.Fields(w), " ")) {
				t.Errorf("%s --help lacks %q:\n%s", cmd, w, out.String())
			}
		}
	}
}

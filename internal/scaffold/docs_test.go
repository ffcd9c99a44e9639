package scaffold

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
)

// TestDocsListDerivedFields: docs/security.md's tables of the fields derive
// sets and of those the cluster writes are derive.Fields and
// derive.ClusterFields, each with how the create policy checks it.
func TestDocsListDerivedFields(t *testing.T) {
	b, err := os.ReadFile("../../docs/security.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## What derive sets\n")
	if !ok {
		t.Fatal(`docs/security.md has no section "What derive sets"`)
	}
	for i, fields := range [][]derive.Field{derive.Fields(), derive.ClusterFields()} {
		var want []string
		for _, f := range fields {
			want = append(want, "| `"+f.Path+"` | "+f.Value+" | "+f.Check+" |")
		}
		got := tables(section)
		if len(got) <= i {
			t.Fatalf("docs/security.md's section What derive sets has %d tables, want 2", len(got))
		}
		if diff := cmp.Diff(want, got[i]); diff != "" {
			t.Errorf("docs/security.md's table %d of What derive sets (-want +got):\n%s\nwant:\n%s", i+1, diff, strings.Join(want, "\n"))
		}
	}
}

// tables are the rows of the Markdown tables in text, but their header and
// separator.
func tables(text string) [][]string {
	var out [][]string
	var rows []string
	for _, line := range append(strings.Split(text, "\n"), "") {
		if strings.HasPrefix(line, "|") {
			rows = append(rows, line)
			continue
		}
		if len(rows) > 2 {
			out = append(out, rows[2:])
		}
		rows = nil
	}
	return out
}

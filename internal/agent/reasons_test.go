package agent

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/stuck"
)

// TestEventReasonsListed holds contract.AgentEventReasons, which the event
// policy admits, to the reasons this package declares (its Reason...
// constants, read from its source) but those of package stuck: an agent
// reason missing from the list would have its Events refused, and one
// listed that the agent never records would be one more a stolen token
// could use.
func TestEventReasonsListed(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var declared []string
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			spec, ok := n.(*ast.ValueSpec)
			if !ok {
				return true
			}
			for i, id := range spec.Names {
				lit, ok := valueAt(spec, i).(*ast.BasicLit)
				if !strings.HasPrefix(id.Name, "Reason") || !ok || lit.Kind != token.STRING {
					continue
				}
				v, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				declared = append(declared, v)
			}
			return true
		})
	}
	if len(declared) < 10 {
		t.Fatalf("found %d Reason constants in internal/agent: %v; the test no longer reads them", len(declared), declared)
	}
	slices.Sort(declared)
	want := slices.Sorted(slices.Values(contract.AgentEventReasons()))
	if diff := cmp.Diff(want, declared); diff != "" {
		t.Errorf("contract.AgentEventReasons and internal/agent's Reason constants differ (-listed +declared):\n%s", diff)
	}
	for _, r := range declared {
		if slices.Contains(stuck.Reasons(), r) {
			t.Errorf("agent reason %q is also a stuck state's: list it once", r)
		}
	}
}

func valueAt(spec *ast.ValueSpec, i int) ast.Expr {
	if i < len(spec.Values) {
		return spec.Values[i]
	}
	return nil
}

// TestEventMessage cuts messages so that they fit the event policy's bound
// even once the recorder combined them, on a character's boundary.
func TestEventMessage(t *testing.T) {
	prefix := len(record.EventAggregatorByReasonMessageFunc(&corev1.Event{}))
	for _, msg := range []string{
		"Created VM default/testvm-web-0",
		strings.Repeat("x", contract.MaxEventMessage-prefix),
		strings.Repeat("x", contract.MaxEventMessage-prefix+1),
		strings.Repeat("é", contract.MaxEventMessage),
		strings.Repeat("y", 1<<20),
	} {
		got := eventMessage(msg)
		if n := len(got) + prefix; n > contract.MaxEventMessage {
			t.Errorf("eventMessage of %d bytes gave %d, %d once combined: more than %d", len(msg), len(got), n, contract.MaxEventMessage)
		}
		if !utf8.ValidString(got) {
			t.Errorf("eventMessage of %d bytes cut a character in two", len(msg))
		}
		if fits := len(msg)+prefix <= contract.MaxEventMessage; fits != (got == msg) {
			t.Errorf("eventMessage of %d bytes changed=%v, want changed only when it does not fit", len(msg), got != msg)
		}
		if got != msg && !strings.HasPrefix(msg, strings.TrimSuffix(got, " ...")) {
			t.Errorf("eventMessage of %d bytes is not its start", len(msg))
		}
	}
}

package scaffold

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
)

func TestCharClass(t *testing.T) {
	for alphabet, want := range map[string]string{
		contract.HashAlphabet: "[a-z2-7]",
		"a":                   "[a]",
		"ab":                  "[ab]",
		"abc":                 "[a-c]",
		"ace":                 "[ace]",
		"abdefx":              "[abd-fx]",
	} {
		if got := charClass(alphabet); got != want {
			t.Errorf("charClass(%q) = %q, want %q", alphabet, got, want)
		}
	}
}

// TestNameRule evaluates nameRule as kube-apiserver would against the names
// derive.Name makes, around the length where it starts to cut and where the
// cut ends in what it trims, and against names that are not its.
func TestNameRule(t *testing.T) {
	env, err := environment.MustBaseEnvSet(version.MajorMinor(1, 30)).Env(environment.NewExpressions)
	if err != nil {
		t.Fatal(err)
	}
	holds := func(t *testing.T, name, full string) bool {
		t.Helper()
		ast, iss := env.Compile(nameRule(literal(name), literal(full), ""))
		if iss.Err() != nil {
			t.Fatalf("nameRule does not compile: %v", iss.Err())
		}
		prg, err := env.Program(ast)
		if err != nil {
			t.Fatal(err)
		}
		out, _, err := prg.Eval(map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		return out.Value() == true
	}
	for _, pod := range []string{"web-0", "web-7c9d-x2", strings.Repeat("p", 40) + "-.-_x"} {
		for n := 1; n <= contract.MaxNameLength; n++ {
			prototype := strings.Repeat("a", n)
			full := prototype + "-" + pod
			name := derive.Name(prototype, pod)
			if !holds(t, name, full) {
				t.Fatalf("nameRule refuses derive.Name(%q, %q) = %q", prototype, pod, name)
			}
			wrong := []string{name + "x", "x" + name}
			if len(full) > contract.MaxNameLength {
				hashAt := len(name) - contract.HashLength
				wrong = append(wrong,
					name[:len(name)-1]+"1",                    // not the hash's alphabet
					name[:len(name)-1],                        // the hash one short
					name[:hashAt-1]+"x"+name[hashAt:],         // no "-" before the hash
					full[:contract.CutLength]+name[hashAt-1:]) // the cut not trimmed
			}
			for _, w := range wrong {
				if w != name && holds(t, w, full) {
					t.Errorf("nameRule accepts %q for %q, which derive.Name names %q", w, full, name)
				}
			}
		}
	}
}

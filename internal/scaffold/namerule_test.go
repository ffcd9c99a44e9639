package scaffold

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/kubectl-vmctl/kubectl-vmctl/internal/contract"
	"github.com/kubectl-vmctl/kubectl-vmctl/internal/derive"
)

// TestNameRule evaluates nameRule as kube-apiserver would against the names
// derive.Name makes, around the length where it starts to cut and where the
// cut ends in what it trims, and against every name that differs from
// derive's in one character, or in length: a token may make one name only.
func TestNameRule(t *testing.T) {
	env, err := environment.MustBaseEnvSet(version.MajorMinor(1, 30)).Env(environment.NewExpressions)
	if err != nil {
		t.Fatal(err)
	}
	holds := func(t *testing.T, name, full string, uid types.UID) bool {
		t.Helper()
		expr := strings.ReplaceAll(nameRule(literal(name), literal(full), ""), "variables.uidSuffix",
			"("+strings.ReplaceAll(uidSuffix(), "variables.podUID", literal(string(uid)))+")")
		ast, iss := env.Compile(expr)
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
	const uid = types.UID("6fa459ea-ee8a-4ca4-894e-db77e160355e")
	for _, pod := range []string{"web-0", "web-7c9d-x2", strings.Repeat("p", 40) + "-.-_x"} {
		for n := 1; n <= contract.MaxNameLength; n++ {
			prototype := strings.Repeat("a", n)
			full := prototype + "-" + pod
			name := derive.Name(prototype, pod, uid)
			if !holds(t, name, full, uid) {
				t.Fatalf("nameRule refuses derive.Name(%q, %q, %q) = %q", prototype, pod, uid, name)
			}
			if len(full) <= contract.MaxNameLength {
				continue
			}
			if !strings.HasSuffix(name, "-"+string(uid)[len(uid)-contract.UIDSuffixLength:]) {
				t.Errorf("derive.Name(%q, %q, %q) = %q, want it to end in the UID's last %d characters", prototype, pod, uid, name, contract.UIDSuffixLength)
			}
			if holds(t, name, full, "another-pod-uid-00000000") {
				t.Errorf("nameRule accepts %q, derive's name for Pod UID %s, from another Pod", name, uid)
			}
			wrong := []string{name + "x", "x" + name, name[:len(name)-1], full[:contract.CutLength] + name[len(name)-contract.UIDSuffixLength-1:]}
			for i := range len(name) {
				for _, c := range []byte{'a', '0', '-'} {
					if name[i] != c {
						wrong = append(wrong, name[:i]+string(c)+name[i+1:])
					}
				}
			}
			for _, w := range wrong {
				if w != name && holds(t, w, full, uid) {
					t.Errorf("nameRule accepts %q for %q, which derive.Name names %q", w, full, name)
				}
			}
		}
	}
}

// TestUIDSuffix holds the CEL of the UID's suffix to contract.UIDSuffix, for
// UIDs shorter than it, as long and longer.
func TestUIDSuffix(t *testing.T) {
	env, err := environment.MustBaseEnvSet(version.MajorMinor(1, 30)).Env(environment.NewExpressions)
	if err != nil {
		t.Fatal(err)
	}
	for _, uid := range []string{"", "uid-own", "0123456789", "6fa459ea-ee8a-4ca4-894e-db77e160355e"} {
		ast, iss := env.Compile(strings.ReplaceAll(uidSuffix(), "variables.podUID", literal(uid)))
		if iss.Err() != nil {
			t.Fatal(iss.Err())
		}
		prg, err := env.Program(ast)
		if err != nil {
			t.Fatal(err)
		}
		out, _, err := prg.Eval(map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := out.Value(), contract.UIDSuffix(uid); got != want {
			t.Errorf("CEL suffix of UID %q = %q, contract.UIDSuffix %q", uid, got, want)
		}
	}
}

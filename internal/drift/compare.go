package drift

import (
	"fmt"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// Result is the comparison of one live derived VM with its re-derivation.
type Result struct {
	Namespace, Name string
	// Live and Derived are the compared YAML documents.
	Live, Derived string
	// Diff is a unified diff from Live to Derived ("-" lines are what the
	// VM holds, "+" lines what its revision derives to today), empty when
	// they agree.
	Diff string
}

// Drifted reports whether the live VM differs from its re-derivation.
func (r Result) Drifted() bool { return r.Diff != "" }

// Compare compares live with derived (what derive.VM makes for live's Pod
// today from the revision live records). Both are reduced to labels, annotations and spec
// with empty values pruned; then live loses the fields the cluster writes
// into a derived VM that derived lacks (derive.ClusterFields, see
// dropClusterFields) and the bookkeeping annotations (ignoredAnnotations).
// Every other difference is
// reported: a changed or removed value, an added or removed list element,
// and a field the VM holds and derived lacks, which derive would not have
// made.
func Compare(live, derived *kubevirtv1.VirtualMachine, derivedFrom string) (Result, error) {
	r := Result{Namespace: live.Namespace, Name: live.Name}
	l, err := controlled(live)
	if err != nil {
		return r, err
	}
	d, err := controlled(derived)
	if err != nil {
		return r, err
	}
	if ls, ok := l["spec"]; ok {
		l["spec"] = dropClusterFields(ls, d["spec"], "", clusterPaths())
	}
	lb, err := yaml.Marshal(l)
	if err != nil {
		return r, fmt.Errorf("encode virtualmachine %s/%s: %w", live.Namespace, live.Name, err)
	}
	db, err := yaml.Marshal(d)
	if err != nil {
		return r, fmt.Errorf("encode derivation of %s/%s: %w", live.Namespace, live.Name, err)
	}
	r.Live, r.Derived = string(lb), string(db)
	if r.Live == r.Derived {
		return r, nil
	}
	name := live.Namespace + "/" + live.Name
	r.Diff, err = unified(r.Live, r.Derived, name+" (live)", name+" (derived from "+derivedFrom+")")
	return r, err
}

// unified is the unified diff from a to b, YAML documents, with 3 lines of
// context, headed "--- from" and "+++ to"; "" when they are equal.
func unified(a, b, from, to string) (string, error) {
	if a == b {
		return "", nil
	}
	return difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		// SplitLines would add an empty last line for the final newline.
		A:        difflib.SplitLines(strings.TrimSuffix(a, "\n")),
		B:        difflib.SplitLines(strings.TrimSuffix(b, "\n")),
		FromFile: from,
		ToFile:   to,
		Context:  3,
	})
}
